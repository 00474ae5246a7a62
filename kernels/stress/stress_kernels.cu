#include "kernels/stress/stress_kernels.h"

#include "kernels/pattern.h"

namespace pagelock {
namespace {

unsigned Blocks(size_t vectors) { return GridBlocks(vectors, 4096); }

// Each thread moves 16 bytes (two words) per step: fewer, wider PCIe requests.
__global__ void FillWords(ulonglong2* p, size_t vectors, uint64_t seed) {
  for (size_t v = blockIdx.x * blockDim.x + threadIdx.x; v < vectors; v += size_t(gridDim.x) * blockDim.x) {
    p[v] = make_ulonglong2(PatternWord(2 * v, seed), PatternWord(2 * v + 1, seed));
  }
}

__global__ void CountWordMismatches(const ulonglong2* p, size_t vectors, uint64_t seed,
                                    unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (size_t v = blockIdx.x * blockDim.x + threadIdx.x; v < vectors; v += size_t(gridDim.x) * blockDim.x) {
    const ulonglong2 w = p[v];
    local += (w.x != PatternWord(2 * v, seed)) + (w.y != PatternWord(2 * v + 1, seed));
  }
  WarpAddCount(mismatches, local);
}

}  // namespace

cudaError_t LaunchFillWords(void* p, size_t n_bytes, uint64_t seed, cudaStream_t stream) {
  if (n_bytes % 16 != 0 || reinterpret_cast<uintptr_t>(p) % 16 != 0) return cudaErrorInvalidValue;
  const size_t vectors = n_bytes / 16;
  FillWords<<<Blocks(vectors), kGridThreads, 0, stream>>>(static_cast<ulonglong2*>(p), vectors, seed);
  return cudaGetLastError();
}

cudaError_t LaunchCountWordMismatches(const void* p, size_t n_bytes, uint64_t seed,
                                      unsigned long long* mismatches, cudaStream_t stream) {
  if (n_bytes % 16 != 0 || reinterpret_cast<uintptr_t>(p) % 16 != 0) return cudaErrorInvalidValue;
  const size_t vectors = n_bytes / 16;
  CountWordMismatches<<<Blocks(vectors), kGridThreads, 0, stream>>>(
      static_cast<const ulonglong2*>(p), vectors, seed, mismatches);
  return cudaGetLastError();
}

}  // namespace pagelock
