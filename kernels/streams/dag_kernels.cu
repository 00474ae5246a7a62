#include "kernels/streams/dag_kernels.h"

#include "kernels/pattern.h"

namespace pagelock {
namespace {

__global__ void DagAdd(unsigned char* p, size_t n, unsigned char add) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    p[i] = static_cast<unsigned char>(p[i] + add);
  }
}

__global__ void DagTwistCopy(unsigned char* dst, const unsigned char* src, size_t n, uint32_t key) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    dst[i] = DagTwist(src[i], i, key);
  }
}

}  // namespace

cudaError_t LaunchDagAdd(unsigned char* p, size_t n, unsigned char add, cudaStream_t stream) {
  DagAdd<<<GridBlocks(n, 256), kGridThreads, 0, stream>>>(p, n, add);
  return cudaGetLastError();
}

cudaError_t LaunchDagTwistCopy(unsigned char* dst, const unsigned char* src, size_t n, uint32_t key,
                               cudaStream_t stream) {
  DagTwistCopy<<<GridBlocks(n, 256), kGridThreads, 0, stream>>>(dst, src, n, key);
  return cudaGetLastError();
}

}  // namespace pagelock
