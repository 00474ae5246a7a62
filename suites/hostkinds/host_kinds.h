// Shared by the breadth suites (copies3d, memset, interior, streammemops): every kind of
// page-locked host memory (each cudaHostAlloc flag combination, registered heap, anonymous mmap
// and memfd; the owners of the device objects they copy to are fixtures/resources.h), and a byte model of boxes in pitched memory, so that after every copy or
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
#include "fixtures/resources.h"

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
// Released in the destructor (the kit's owners); a failing release is a test failure.
class HostBuffer {
 public:
  // Null with *why set (the error name, or the host's reason) when the kind cannot be made.
  static std::unique_ptr<HostBuffer> Make(HostKind kind, size_t bytes, std::string* why);
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  HostKind kind() const { return kind_; }
  size_t size() const { return size_; }
  unsigned char* host() const { return IsRegistered(kind_) ? registered_.get() : pinned_.get(); }
  unsigned char* dev() const { return dev_; }
  // Releases the memory now (cudaFreeHost or cudaHostUnregister) and returns the result, for
  // code that reports errors itself (a child scenario); the destructor then does nothing.
  cudaError_t Free();

 private:
  HostBuffer() = default;
  HostKind kind_ = HostKind::kHostAllocDefault;
  size_t size_ = 0;
  unsigned char* dev_ = nullptr;
  PinnedBuffer pinned_;           // allocated kinds
  HostRegistration registered_;  // registered kinds (it owns the region)
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

// A 32-bit element value from the case's generator whose four bytes differ from each other and
// from `avoid` (the guard or the zero fill): a 16- or 32-bit memset that swaps, drops or repeats
// a byte of the element leaves a byte the model does not expect.
uint32_t ElementValue(uint64_t random, unsigned char avoid);

}  // namespace kinds
}  // namespace pagelock
