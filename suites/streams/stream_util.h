// Shared by the streams suite: the memory kinds a copy can touch (each with its host pointer and
// device alias), the stream kinds, and the byte checks every copy and memset is followed by.
// Big windows are checked on the device (a counting kernel through the device alias); host-only
// memory (pageable) and small windows are checked by the host.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/bounded_wait.h"
#include "fixtures/host_memory.h"
#include "fixtures/resources.h"

namespace pagelock {
namespace streams {

enum class Mem {
  kPinned,            // cudaHostAlloc(cudaHostAllocDefault)
  kPinnedMapped,      // cudaHostAllocMapped
  kPinnedPortable,    // cudaHostAllocPortable
  kWriteCombined,     // cudaHostAllocWriteCombined | cudaHostAllocMapped
  kRegisteredMalloc,  // page-aligned heap + cudaHostRegister(Mapped | Portable)
  kRegisteredMmap,    // anonymous mmap + cudaHostRegister(Mapped | Portable)
  kRegisteredMemfd,   // MAP_SHARED memfd + cudaHostRegister(Mapped | Portable)
  kPageable,          // plain heap, never registered
  kDevice,            // cudaMalloc
};

std::string MemName(Mem m);
bool IsRegistered(Mem m);
bool IsPinned(Mem m);  // page-locked host memory (allocated or registered)
const std::vector<Mem>& HostMems();  // every kind except kDevice

// One buffer of a kind. host: the host pointer (null for device memory); dev: the device alias
// (the device pointer for device memory; null for pageable memory). Released by the kit's
// owners (fixtures/resources.h): a failed release is a test failure.
class Buffer {
 public:
  // Null with *why set when the kind cannot be made (the error name, or the host's reason).
  static std::unique_ptr<Buffer> Make(Mem kind, size_t bytes, std::string* why);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  Mem kind() const { return kind_; }
  size_t size() const { return size_; }
  unsigned char* host() const { return host_; }
  unsigned char* dev() const { return dev_; }
  // The pointer a CUDA call uses for this buffer's "host side" (host alias, or device memory).
  unsigned char* ptr() const { return host_ ? host_ : dev_; }

 private:
  Buffer() = default;
  Mem kind_ = Mem::kPageable;
  size_t size_ = 0;
  unsigned char* host_ = nullptr;
  unsigned char* dev_ = nullptr;
  PinnedBuffer pinned_;           // the allocated kinds
  HostRegistration registered_;  // the registered kinds (it owns the region)
  DeviceBuffer device_;
  std::vector<unsigned char> heap_;
};

// Checks and fills. Each returns cudaSuccess or the first CUDA error; *bad is the number of
// bytes that differ. They synchronise the device before they read.
class Checker {
 public:
  Checker();
  cudaError_t status() const { return status_; }
  // p[off + i] == PatternByte(base + i, seed) for i < n.
  cudaError_t CountPattern(const Buffer& b, size_t off, size_t n, size_t base, uint32_t seed, size_t* bad);
  // p[off + i] == value for i < n.
  cudaError_t CountByte(const Buffer& b, size_t off, size_t n, unsigned char value, size_t* bad);
  cudaError_t FillPattern(const Buffer& b, size_t off, size_t n, size_t base, uint32_t seed);
  cudaError_t FillByte(const Buffer& b, size_t off, size_t n, unsigned char value);

 private:
  cudaError_t status_ = cudaSuccess;
  PinnedBuffer counter_mem_;
  unsigned long long* counter_ = nullptr;  // mapped, for the counting kernels
};

// Host-only checks that do not synchronise: for reading what a call left the moment it returned.
size_t HostCountPattern(const void* p, size_t n, size_t base, uint32_t seed);
size_t HostCountByteMismatches(const void* p, size_t n, unsigned char value);
void HostFillPatternFrom(void* p, size_t n, size_t base, uint32_t seed);

// Windows below this size are checked and filled by the host when the host can read them
// (write-combined memory is always checked on the device: host reads of it are slow, R16).
constexpr size_t kHostCheckLimit = size_t{256} << 10;

// Stream kinds of the synchronisation table.
enum class StreamKind { kLegacy, kPerThread, kBlocking, kNonBlocking };
std::string StreamName(StreamKind k);
const std::vector<StreamKind>& StreamKinds();

// A stream of a kind; the default streams are not created or destroyed.
class Stream {
 public:
  explicit Stream(StreamKind k);
  cudaStream_t get() const { return s_; }
  cudaError_t status() const { return status_; }

 private:
  cudaStream_t s_ = nullptr;
  cudaError_t status_ = cudaSuccess;
  OwnedStream owned_;  // the created kinds
};

// The kit's bounded waits (fixtures/bounded_wait.h), by their short names here.
using ::pagelock::PollEvent;
using ::pagelock::PollStream;

// Nanoseconds for a delay kernel: `ms` scaled by PAGELOCK_TIME_SCALE.
uint64_t DelayNs(double ms);

}  // namespace streams
}  // namespace pagelock
