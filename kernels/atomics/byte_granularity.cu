#include "kernels/atomics/byte_granularity.h"

namespace pagelock {
namespace {

__global__ void OwnedByteStores(unsigned char* p, size_t n, unsigned owners, unsigned owner,
                                int rounds, uint32_t seed) {
  volatile unsigned char* v = p;  // every round's stores happen, none is merged away
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
         owner + k * owners < n; k += stride) {
      const size_t i = owner + k * owners;
      v[i] = OwnedByte(i, r, seed);
    }
  }
}

}  // namespace

cudaError_t LaunchOwnedByteStores(unsigned char* p, size_t n, unsigned owners, unsigned owner,
                                  int rounds, uint32_t seed, cudaStream_t stream) {
  OwnedByteStores<<<128, 256, 0, stream>>>(p, n, owners, owner, rounds, seed);
  return cudaGetLastError();
}

}  // namespace pagelock
