#include "kernels/sizes/size_kernels.h"

#include "kernels/pattern.h"

namespace pagelock {
namespace {

unsigned Blocks(uint64_t slots) { return GridBlocks(static_cast<size_t>(slots), 8192); }

__global__ void FillSizePattern(unsigned char* p, size_t n, uint64_t first, uint64_t seed, bool aligned) {
  const uint64_t slots = SizeSlots(n, first);
  for (uint64_t k = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; k < slots; k += uint64_t(gridDim.x) * blockDim.x) {
    FillSizeSlot(p, n, first, seed, aligned, k);
  }
}

__global__ void CountSizePattern(const unsigned char* p, size_t n, uint64_t first, uint64_t seed, bool aligned,
                                 unsigned long long* mismatches) {
  const uint64_t slots = SizeSlots(n, first);
  unsigned long long local = 0;
  for (uint64_t k = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; k < slots; k += uint64_t(gridDim.x) * blockDim.x) {
    local += CountSizeSlot(p, n, first, seed, aligned, k);
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
  FillSizePattern<<<Blocks(SizeSlots(n, first)), kGridThreads, 0, stream>>>(static_cast<unsigned char*>(p), n, first,
                                                                        seed, SizeAligned(p, first));
  return cudaGetLastError();
}

cudaError_t LaunchCountSizePatternMismatches(const void* p, size_t n, uint64_t first, uint64_t seed,
                                             unsigned long long* mismatches, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  CountSizePattern<<<Blocks(SizeSlots(n, first)), kGridThreads, 0, stream>>>(
      static_cast<const unsigned char*>(p), n, first, seed, SizeAligned(p, first), mismatches);
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
