// Shared by the breadth suites (copies3d, memset, interior, streammemops): every kind of
// page-locked host memory (each cudaHostAlloc flag combination, registered heap, anonymous mmap
// and memfd), RAII owners for the device objects they copy to (linear and pitched device memory,
// CUDA arrays, streams), and a byte model of boxes in pitched memory, so that after every copy or
// memset each byte of the destination is compared with what the documentation says it must hold:
// the source's byte inside the box, the byte it held before outside it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/host_memory.h"

namespace pagelock {
namespace kinds {

enum class HostKind {
  kHostAllocDefault,                // cudaHostAlloc flags 0..7
  kHostAllocPortable,
  kHostAllocMapped,
  kHostAllocPortableMapped,
  kHostAllocWriteCombined,
  kHostAllocPortableWriteCombined,
  kHostAllocMappedWriteCombined,
  kHostAllocAllFlags,
  kRegisteredMalloc,  // page-aligned heap + cudaHostRegister(Mapped | Portable)
  kRegisteredMmap,    // anonymous mmap + cudaHostRegister(Mapped | Portable)
  kRegisteredMemfd,   // MAP_SHARED memfd + cudaHostRegister(Mapped | Portable)
};

std::string HostKindName(HostKind k);
bool IsRegistered(HostKind k);
bool IsWriteCombined(HostKind k);
const std::vector<HostKind>& AllHostKinds();
// gtest parameter names: "HostAllocMapped", never "/0".
struct HostKindParamName {
  template <class P>
  std::string operator()(const P& info) const { return HostKindName(info.param); }
};

// One page-locked host buffer of a kind, with its device alias (cudaHostGetDevicePointer).
// Released in the destructor; a failing release is a test failure.
class HostBuffer {
 public:
  // Null with *why set (the error name, or the host's reason) when the kind cannot be made.
  static std::unique_ptr<HostBuffer> Make(HostKind kind, size_t bytes, std::string* why);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  HostKind kind() const { return kind_; }
  size_t size() const { return size_; }
  unsigned char* host() const { return host_; }
  unsigned char* dev() const { return dev_; }
  // Releases the memory now (cudaFreeHost or cudaHostUnregister) and returns the result, for
  // code that reports errors itself (a child scenario); the destructor then does nothing.
  cudaError_t Free();

 private:
  HostBuffer() = default;
  HostKind kind_ = HostKind::kHostAllocDefault;
  size_t size_ = 0;
  unsigned char* host_ = nullptr;
  unsigned char* dev_ = nullptr;
  std::unique_ptr<HostRegion> region_;  // registered kinds only
};

// cudaMalloc'ed bytes; status() is the allocation's result.
class DeviceBytes {
 public:
  explicit DeviceBytes(size_t bytes);
  ~DeviceBytes();
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  cudaError_t status() const { return status_; }
  unsigned char* get() const { return p_; }
  size_t size() const { return size_; }

 private:
  unsigned char* p_ = nullptr;
  size_t size_ = 0;
  cudaError_t status_ = cudaSuccess;
};

// cudaMalloc3D'ed pitched memory (width in bytes, height rows, depth slices).
class DevicePitched {
 public:
  explicit DevicePitched(cudaExtent bytes_extent);
  ~DevicePitched();
  DevicePitched(const DevicePitched&) = delete;
  DevicePitched& operator=(const DevicePitched&) = delete;
  cudaError_t status() const { return status_; }
  const cudaPitchedPtr& get() const { return p_; }
  size_t bytes() const { return p_.pitch * p_.ysize * depth_; }

 private:
  cudaPitchedPtr p_{};
  size_t depth_ = 0;
  cudaError_t status_ = cudaSuccess;
};

// A CUDA array of 32-bit unsigned elements: 2D (cudaMallocArray) when depth is 0, else 3D
// (cudaMalloc3DArray). Extents in elements.
class Array32 {
 public:
  Array32(size_t width, size_t height, size_t depth);
  ~Array32();
  Array32(const Array32&) = delete;
  Array32& operator=(const Array32&) = delete;
  cudaError_t status() const { return status_; }
  cudaArray_t get() const { return a_; }

 private:
  cudaArray_t a_ = nullptr;
  cudaError_t status_ = cudaSuccess;
};

// A non-blocking stream, destroyed at the end of scope.
class OwnedStream {
 public:
  OwnedStream();
  ~OwnedStream();
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  cudaError_t status() const { return status_; }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
  cudaError_t status_ = cudaSuccess;
};

// ---- The byte model of pitched memory -------------------------------------------------------
// A pitched object: `pitch` bytes per row, `rows` rows per slice, `slices` slices.
struct Layout {
  size_t pitch = 0, rows = 0, slices = 1;
  size_t bytes() const { return pitch * rows * slices; }
  size_t At(size_t x, size_t y, size_t z) const { return (z * rows + y) * pitch + x; }
};
struct Pos {
  size_t x = 0, y = 0, z = 0;  // x in bytes
};
struct Box {
  size_t w = 0, h = 1, d = 1;  // w in bytes
};

// The pattern the case's seed puts at every byte: PatternByte(i, seed).
std::vector<unsigned char> PatternBytes(size_t n, uint32_t seed);
// What a copy of box `b` from (src, sl, sp) to (dst, dl, dp) must leave in dst.
void ModelCopy(std::vector<unsigned char>* dst, const Layout& dl, Pos dp, const std::vector<unsigned char>& src,
               const Layout& sl, Pos sp, Box b);
// What a fill of box `b` (width a multiple of elem_size) with the element's bytes must leave.
void ModelFill(std::vector<unsigned char>* dst, const Layout& dl, Pos dp, Box b, const void* elem, size_t elem_size);

// Bytes of `actual` that differ from `expected` (read through volatile, so mapped memory is read
// as it is). `where` describes the first difference: "offset o (slice z, row y, byte x): got 0x.., want 0x..".
size_t CountModelMismatches(const void* actual, const std::vector<unsigned char>& expected, const Layout& l,
                            std::string* where);

// A byte other than the guard, from the case's generator.
unsigned char ByteOtherThan(unsigned char avoid, uint64_t random);

}  // namespace kinds
}  // namespace pagelock
