#include "kernels/sizes/size_kernels.h"

#include "kernels/pattern.h"

namespace pagelock {
namespace {

// Slots of 8 pattern indices covering [first, first + n): slot k holds indices
// [base + 8k, base + 8k + 8), base = first rounded down to 8.
__host__ __device__ inline uint64_t Slots(size_t n, uint64_t first) {
  const uint64_t base = first & ~uint64_t{7};
  return n == 0 ? 0 : (first + n - base + 7) / 8;
}

unsigned Blocks(uint64_t slots) { return GridBlocks(static_cast<size_t>(slots), 8192); }

bool Aligned(const void* p, uint64_t first) { return ((reinterpret_cast<uintptr_t>(p) ^ first) & 7) == 0; }

__global__ void FillSizePattern(unsigned char* p, size_t n, uint64_t first, uint64_t seed, bool aligned) {
  const uint64_t base = first & ~uint64_t{7}, end = first + n, slots = Slots(n, first);
  for (uint64_t k = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; k < slots; k += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t idx = base + 8 * k;
    const uint64_t w = SizeWord(idx >> 3, seed);
    if (aligned && idx >= first && idx + 8 <= end) {
      *reinterpret_cast<uint64_t*>(p + (idx - first)) = w;
    } else {
      for (int b = 0; b < 8; ++b) {
        if (idx + b >= first && idx + b < end) p[idx + b - first] = static_cast<unsigned char>(w >> (8 * b));
      }
    }
  }
}

__global__ void CountSizePattern(const unsigned char* p, size_t n, uint64_t first, uint64_t seed, bool aligned,
                                 unsigned long long* mismatches) {
  const uint64_t base = first & ~uint64_t{7}, end = first + n, slots = Slots(n, first);
  unsigned long long local = 0;
  for (uint64_t k = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; k < slots; k += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t idx = base + 8 * k;
    const uint64_t w = SizeWord(idx >> 3, seed);
    if (aligned && idx >= first && idx + 8 <= end) {
      const uint64_t x = *reinterpret_cast<const uint64_t*>(p + (idx - first)) ^ w;
      for (int b = 0; b < 8; ++b) local += ((x >> (8 * b)) & 0xff) != 0;
    } else {
      for (int b = 0; b < 8; ++b) {
        if (idx + b >= first && idx + b < end) {
          local += p[idx + b - first] != static_cast<unsigned char>(w >> (8 * b));
        }
      }
    }
  }
  WarpAddCount(mismatches, local);
}

__global__ void FillBytes(unsigned char* p, size_t n, unsigned char value) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) p[i] = value;
}

__global__ void CountBytesNot(const unsigned char* p, size_t n, unsigned char value, unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    local += p[i] != value;
  }
  WarpAddCount(mismatches, local);
}

}  // namespace

cudaError_t LaunchFillSizePattern(void* p, size_t n, uint64_t first, uint64_t seed, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  FillSizePattern<<<Blocks(Slots(n, first)), kGridThreads, 0, stream>>>(static_cast<unsigned char*>(p), n, first,
                                                                        seed, Aligned(p, first));
  return cudaGetLastError();
}

cudaError_t LaunchCountSizePatternMismatches(const void* p, size_t n, uint64_t first, uint64_t seed,
                                             unsigned long long* mismatches, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  CountSizePattern<<<Blocks(Slots(n, first)), kGridThreads, 0, stream>>>(
      static_cast<const unsigned char*>(p), n, first, seed, Aligned(p, first), mismatches);
  return cudaGetLastError();
}

cudaError_t LaunchFillBytes(void* p, size_t n, unsigned char value, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  FillBytes<<<GridBlocks(n, 4096), kGridThreads, 0, stream>>>(static_cast<unsigned char*>(p), n, value);
  return cudaGetLastError();
}

cudaError_t LaunchCountBytesNot(const void* p, size_t n, unsigned char value, unsigned long long* mismatches,
                                cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  CountBytesNot<<<GridBlocks(n, 4096), kGridThreads, 0, stream>>>(static_cast<const unsigned char*>(p), n, value,
                                                                  mismatches);
  return cudaGetLastError();
}

}  // namespace pagelock
