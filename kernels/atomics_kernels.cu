#include "kernels/atomics_kernels.h"

namespace pagelock {
namespace {

__global__ void AlternatingStores(unsigned long long* slots8, unsigned* slots4, int n, int iters) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  volatile unsigned long long* s8 = slots8 + i;
  volatile unsigned* s4 = slots4 + i;
  for (int k = 0; k < iters; ++k) {
    *s8 = 0ull;
    *s4 = 0u;
    *s8 = ~0ull;
    *s4 = ~0u;
  }
}

__global__ void Publish(unsigned* data, int n, unsigned value, unsigned* flag) {
  for (int i = 0; i < n; ++i) data[i] = value;
  __threadfence_system();
  *reinterpret_cast<volatile unsigned*>(flag) = 1u;
}

__global__ void AwaitFlag(const unsigned* flag, const unsigned* data, int n,
                          unsigned long long timeout_cycles, unsigned long long* sum,
                          unsigned* status) {
  const long long start = clock64();
  const volatile unsigned* f = flag;
  while (*f == 0u) {
    if (static_cast<unsigned long long>(clock64() - start) > timeout_cycles) {
      *status = 2u;
      return;
    }
  }
  __threadfence_system();
  const volatile unsigned* d = data;
  unsigned long long s = 0;
  for (int i = 0; i < n; ++i) s += d[i];
  *sum = s;
  *status = 1u;
}

}  // namespace

cudaError_t LaunchAlternatingStores(unsigned long long* slots8, unsigned* slots4, int n, int iters,
                                    cudaStream_t stream) {
  AlternatingStores<<<(n + 255) / 256, 256, 0, stream>>>(slots8, slots4, n, iters);
  return cudaGetLastError();
}

cudaError_t LaunchPublish(unsigned* data, int n, unsigned value, unsigned* flag, cudaStream_t stream) {
  Publish<<<1, 1, 0, stream>>>(data, n, value, flag);
  return cudaGetLastError();
}

cudaError_t LaunchAwaitFlag(const unsigned* flag, const unsigned* data, int n,
                            unsigned long long timeout_cycles, unsigned long long* sum,
                            unsigned* status, cudaStream_t stream) {
  AwaitFlag<<<1, 1, 0, stream>>>(flag, data, n, timeout_cycles, sum, status);
  return cudaGetLastError();
}

}  // namespace pagelock
