#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

unsigned Blocks(size_t n) { return GridBlocks(n, 1024); }

__global__ void FillPattern(unsigned char* dst, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    dst[i] = PatternByte(i, seed);
  }
}

__global__ void CountPatternMismatches(const unsigned char* src, size_t n, uint32_t seed,
                                       unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    local += src[i] != PatternByte(i, seed);
  }
  WarpAddCount(mismatches, local);
}

__global__ void InvertBytes(unsigned char* p, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    p[i] = static_cast<unsigned char>(~p[i]);
  }
}

}  // namespace

cudaError_t LaunchFillPattern(void* dst, size_t n, uint32_t seed, cudaStream_t stream) {
  FillPattern<<<Blocks(n), kGridThreads, 0, stream>>>(static_cast<unsigned char*>(dst), n, seed);
  return cudaGetLastError();
}

cudaError_t LaunchCountPatternMismatches(const void* src, size_t n, uint32_t seed,
                                         unsigned long long* mismatches, cudaStream_t stream) {
  CountPatternMismatches<<<Blocks(n), kGridThreads, 0, stream>>>(
      static_cast<const unsigned char*>(src), n, seed, mismatches);
  return cudaGetLastError();
}

cudaError_t LaunchInvertBytes(void* p, size_t n, cudaStream_t stream) {
  InvertBytes<<<Blocks(n), kGridThreads, 0, stream>>>(static_cast<unsigned char*>(p), n);
  return cudaGetLastError();
}

}  // namespace pagelock
