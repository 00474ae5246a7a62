// The byte pattern that host and device write and check, identical on both sides, so either can
// verify what the other wrote. Header-only: host code uses it without the kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define PAGELOCK_HD __host__ __device__
#else
#define PAGELOCK_HD
#endif

namespace pagelock {

// The byte the pattern puts at index i for a given seed; identical on host and device, so either
// side can check what the other wrote.
PAGELOCK_HD inline unsigned char PatternByte(size_t i, uint32_t seed) {
  uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed ^ static_cast<uint32_t>(i >> 32);
  x ^= x >> 15;
  x *= 2246822519u;
  x ^= x >> 13;
  return static_cast<unsigned char>(x);
}

// Host-side twins of the kernels, for checking what the device wrote and preparing what it reads.
inline void HostFillPattern(void* dst, size_t n, uint32_t seed) {
  auto* p = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < n; ++i) p[i] = PatternByte(i, seed);
}

// Number of i with p[i] != (PatternByte(i, seed) ^ xor_mask); xor_mask 0xff checks an inversion.
inline size_t HostCountPatternMismatches(const void* src, size_t n, uint32_t seed,
                                         unsigned char xor_mask = 0) {
  const auto* p = static_cast<const volatile unsigned char*>(src);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += p[i] != static_cast<unsigned char>(PatternByte(i, seed) ^ xor_mask);
  return bad;
}

#if defined(__CUDACC__)
// Threads per block of every grid-stride fill and count kernel: a multiple of 32, which
// WarpAddCount relies on.
constexpr int kGridThreads = 256;
static_assert(kGridThreads % 32 == 0, "WarpAddCount needs whole warps");

// Blocks for a grid-stride kernel over n items, kGridThreads each: at least 1, at most max_blocks.
inline unsigned GridBlocks(size_t n, size_t max_blocks) {
  const size_t b = (n + kGridThreads - 1) / kGridThreads;
  return static_cast<unsigned>(b == 0 ? 1 : b < max_blocks ? b : max_blocks);
}

// Adds a thread's mismatch count to a counter that usually lives in mapped host memory: one
// atomic per warp, not per thread. Counting a buffer that is expected to differ (the other seed
// of a call-time/execution-time check, a stale pageable copy) made every thread's atomic cross
// PCIe: 262,144 of them took about 140 ms on an H200. Every thread of the warp must call it
// (after the grid-stride loop, where all of them are); blockDim is a multiple of 32.
__device__ __forceinline__ void WarpAddCount(unsigned long long* counter, unsigned long long local) {
  for (int offset = 16; offset > 0; offset >>= 1) local += __shfl_down_sync(0xffffffffu, local, offset);
  if ((threadIdx.x & 31) == 0 && local) atomicAdd(counter, local);
}
#endif

}  // namespace pagelock
