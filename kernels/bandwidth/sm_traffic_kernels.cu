#include "kernels/bandwidth/sm_traffic_kernels.h"

namespace pagelock {
namespace {

__device__ __forceinline__ unsigned long long GlobalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Vectors each thread holds in registers before storing them: PCIe reads take about a
// microsecond, so one load at a time per thread would leave the link idle.
constexpr int kInFlight = 12;

__global__ void StridedCopy(unsigned char* dst, const unsigned char* src, size_t n) {
  const size_t threads = size_t(gridDim.x) * blockDim.x;
  const size_t id = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t vecs = n / 16;
  auto* d = reinterpret_cast<uint4*>(dst);
  const auto* s = reinterpret_cast<const uint4*>(src);
  // Whole rounds, in which every thread moves kInFlight vectors `threads` apart.
  const size_t round = threads * kInFlight;
  const size_t whole = vecs / round * round;
  size_t i = id;
  for (; i < whole; i += round) {
    uint4 v[kInFlight];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) v[k] = s[i + k * threads];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) d[i + k * threads] = v[k];
  }
  for (; i < vecs; i += threads) d[i] = s[i];
  // The bytes after the last whole vector.
  if (id < n % 16) dst[vecs * 16 + id] = src[vecs * 16 + id];
}

__global__ void ComputeLoad(const volatile unsigned* stop, volatile unsigned* relay, ComputeLoadStatus* status,
                            float* sink, unsigned long long timeout_ns) {
  __shared__ int done;
  const unsigned long long start = GlobalNs();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *reinterpret_cast<volatile unsigned*>(&status->started) = 1;
    __threadfence_system();
  }
  // Four independent chains per thread keep the FMA pipes full; the values converge to 10.
  float x0 = 1.f + threadIdx.x, x1 = 2.f, x2 = 3.f, x3 = 4.f;
  unsigned long long rounds = 0;
  for (;;) {
#pragma unroll 16
    for (int k = 0; k < 1024; ++k) {
      x0 = fmaf(x0, 0.9999f, 1e-3f);
      x1 = fmaf(x1, 0.9999f, 1e-3f);
      x2 = fmaf(x2, 0.9999f, 1e-3f);
      x3 = fmaf(x3, 0.9999f, 1e-3f);
    }
    ++rounds;
    if (threadIdx.x == 0) {
      // Only block 0 reads host memory; it relays the stop through device memory.
      bool end = blockIdx.x == 0 ? *stop != 0 : *relay != 0;
      if (end && blockIdx.x == 0) {
        *relay = 1;
        __threadfence();
      }
      if (!end && GlobalNs() - start > timeout_ns) {
        end = true;
        *reinterpret_cast<volatile unsigned*>(&status->timed_out) = 1;
      }
      done = end;
    }
    __syncthreads();
    const bool d = done;
    __syncthreads();
    if (d) break;
  }
  // Never true for these chains; it keeps every thread's work observable.
  if (x0 + x1 + x2 + x3 == -1.f) sink[blockIdx.x] = x0;
  if (threadIdx.x == 0) {
    atomicAdd(&status->rounds, rounds);
    __threadfence_system();
  }
}

}  // namespace

cudaError_t LaunchStridedCopy(void* dst, const void* src, size_t n, unsigned blocks, cudaStream_t stream) {
  if ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % 16 != 0) return cudaErrorInvalidValue;
  StridedCopy<<<blocks ? blocks : 1, kSmCopyThreads, 0, stream>>>(static_cast<unsigned char*>(dst),
                                                                  static_cast<const unsigned char*>(src), n);
  return cudaGetLastError();
}

cudaError_t LaunchComputeLoad(const unsigned* stop, unsigned* relay, ComputeLoadStatus* status, float* sink,
                              uint64_t timeout_ns, unsigned blocks, unsigned threads, cudaStream_t stream) {
  ComputeLoad<<<blocks ? blocks : 1, threads ? threads : 256, 0, stream>>>(stop, relay, status, sink, timeout_ns);
  return cudaGetLastError();
}

}  // namespace pagelock
