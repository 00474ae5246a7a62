// Shared by the streams suite: the memory kinds a copy can touch (the kit's HostKind, each
// buffer a KindBuffer with its host pointer and device alias), the stream kinds, and the byte
// checks every copy and memset is followed by.
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
#include "fixtures/host_kinds.h"
#include "fixtures/kind_buffer.h"
#include "fixtures/resources.h"
#include "fixtures/stream_kinds.h"

namespace pagelock {
namespace streams {

// The memory kinds a copy can touch are the kit's (fixtures/host_kinds.h). The suite's case ids
// name them as they did before the kit's names: "Pinned" (cudaHostAlloc Default), "PinnedMapped",
// "PinnedPortable", "WriteCombined" (Mapped|WriteCombined), "RegisteredMalloc",
// "RegisteredMmap", "RegisteredMemfd", "Pageable", "Device".
std::string MemName(HostKind m);
// The host kinds of the copy matrix: cudaHostAlloc Default, Mapped, Portable, Mapped|
// WriteCombined, the registered heap, mmap and memfd (Mapped | Portable: the multi-device cases
// use the registration from every device), and pageable memory. A buffer of one:
// KindBuffer::Make(kind, bytes, &why) (fixtures/kind_buffer.h).
const std::vector<HostKind>& HostMems();

// Checks and fills. Each returns cudaSuccess or the first CUDA error; *bad is the number of
// bytes that differ. They synchronise the device before they read.
class Checker {
 public:
  Checker();
  cudaError_t status() const { return status_; }
  // p[off + i] == PatternByte(base + i, seed) for i < n.
  cudaError_t CountPattern(const KindBuffer& b, size_t off, size_t n, size_t base, uint32_t seed, size_t* bad);
  // p[off + i] == value for i < n.
  cudaError_t CountByte(const KindBuffer& b, size_t off, size_t n, unsigned char value, size_t* bad);
  cudaError_t FillPattern(const KindBuffer& b, size_t off, size_t n, size_t base, uint32_t seed);
  cudaError_t FillByte(const KindBuffer& b, size_t off, size_t n, unsigned char value);

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

// The stream kinds of the synchronisation table are the kit's (fixtures/stream_kinds.h):
// StreamKind, StreamKindName, AllStreamKinds and KindStream.

// The kit's bounded waits (fixtures/bounded_wait.h), by their short names here.
using ::pagelock::PollEvent;
using ::pagelock::PollStream;

// Nanoseconds for a delay kernel: `ms` scaled by PAGELOCK_TIME_SCALE.
uint64_t DelayNs(double ms);

}  // namespace streams
}  // namespace pagelock
