#include "kernels/streams/stream_kernels.h"

#include <cuda/atomic>

namespace pagelock {
namespace {

unsigned Blocks(size_t n) { return GridBlocks(n, 1024); }

__device__ __forceinline__ unsigned long long GlobalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void Delay(unsigned long long ns) {
  const unsigned long long start = GlobalNs();
  while (GlobalNs() - start < ns) {
  }
}

__global__ void DelayThenFill(unsigned char* dst, size_t n, uint32_t seed, unsigned long long ns) {
  const unsigned long long start = GlobalNs();
  while (GlobalNs() - start < ns) {
  }
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    dst[i] = PatternByte(i, seed);
  }
}

__global__ void AwaitFlag(const volatile unsigned* flag, unsigned want, unsigned long long timeout_ns,
                          unsigned* status) {
  const unsigned long long start = GlobalNs();
  while (*flag != want) {
    if (GlobalNs() - start > timeout_ns) {
      if (status) *reinterpret_cast<volatile unsigned*>(status) = kKernelTimedOut;
      break;
    }
  }
  __threadfence_system();
}

template <int kForm>
__global__ void AwaitFlagForm(const unsigned* flag, unsigned want, unsigned long long timeout_ns,
                              unsigned* status) {
  const unsigned long long start = GlobalNs();
  for (;;) {
    unsigned v;
    if (kForm == 0) {
      v = *reinterpret_cast<const volatile unsigned*>(flag);
    } else if (kForm == 1) {
      cuda::atomic_ref<unsigned, cuda::thread_scope_system> ref(*const_cast<unsigned*>(flag));
      v = ref.load(cuda::memory_order_acquire);
    } else if (kForm == 2) {
      asm volatile("ld.relaxed.sys.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    } else if (kForm == 3) {
      v = *flag;
      __threadfence_system();
    } else {
      v = *flag;
    }
    if (v == want) break;
    if (GlobalNs() - start > timeout_ns) {
      *reinterpret_cast<volatile unsigned*>(status) = kKernelTimedOut;
      break;
    }
  }
}

__global__ void CountByteMismatches(const unsigned char* p, size_t n, unsigned char value,
                                    unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    local += p[i] != value;
  }
  WarpAddCount(mismatches, local);
}

__global__ void CountPatternFrom(const unsigned char* p, size_t n, size_t base, uint32_t seed,
                                 unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    local += p[i] != PatternByte(i + base, seed);
  }
  WarpAddCount(mismatches, local);
}

__global__ void FillPatternFrom(unsigned char* p, size_t n, size_t base, uint32_t seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    p[i] = PatternByte(i + base, seed);
  }
}

__global__ void CopyVec16(uint4* dst, const uint4* src, size_t n16) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += size_t(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

__global__ void CopyBytes(unsigned char* dst, const unsigned char* src, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

__global__ void PointerChase(const volatile unsigned long long* chain, unsigned steps,
                             unsigned long long* elapsed_ns, unsigned long long* last) {
  unsigned long long i = 0;
  const unsigned long long start = GlobalNs();
  for (unsigned s = 0; s < steps; ++s) i = chain[i];
  const unsigned long long end = GlobalNs();
  *elapsed_ns = end - start;
  *last = i;
}

__global__ void PingPong(const volatile unsigned* to_device, volatile unsigned* to_host,
                         const volatile unsigned* payload, volatile unsigned* reply, unsigned words,
                         unsigned rounds, unsigned long long timeout_ns, unsigned* bad,
                         volatile unsigned* status) {
  __shared__ int give_up;
  for (unsigned r = 1; r <= rounds; ++r) {
    if (threadIdx.x == 0) {
      give_up = 0;
      const unsigned long long start = GlobalNs();
      while (*to_device != r) {
        if (GlobalNs() - start > timeout_ns) {
          *status = kKernelTimedOut;
          give_up = 1;
          break;
        }
      }
      __threadfence_system();  // acquire: payload reads after the flag
    }
    __syncthreads();
    if (give_up) return;
    unsigned local_bad = 0;
    for (unsigned k = threadIdx.x; k < words; k += blockDim.x) {
      const unsigned v = payload[k];
      local_bad += v != r * 2654435761u + k;
      reply[k] = ~v;
    }
    if (local_bad) atomicAdd(bad, local_bad);
    __threadfence_system();  // release: replies before the flag
    __syncthreads();
    if (threadIdx.x == 0) *to_host = r;
  }
}

__global__ void TokenRing(volatile unsigned* token, unsigned me, unsigned members, unsigned laps,
                          unsigned long long timeout_ns, volatile unsigned* status) {
  for (unsigned lap = 0; lap < laps; ++lap) {
    const unsigned long long start = GlobalNs();
    unsigned t;
    while ((t = *token) % members != me) {
      if (GlobalNs() - start > timeout_ns) {
        *status = kKernelTimedOut;
        return;
      }
    }
    __threadfence_system();
    *token = t + 1;
    __threadfence_system();
  }
}

__global__ void OwnerBytes(volatile unsigned char* p, size_t n, unsigned stride, unsigned owner,
                           unsigned rounds) {
  for (unsigned r = 0; r < rounds; ++r) {
    const unsigned char v = static_cast<unsigned char>((r & 0xff) ^ owner);
    for (size_t i = (blockIdx.x * blockDim.x + threadIdx.x) * size_t(stride) + owner; i < n;
         i += size_t(gridDim.x) * blockDim.x * stride) {
      p[i] = v;
    }
  }
}

}  // namespace

cudaError_t LaunchDelay(uint64_t ns, cudaStream_t stream) {
  Delay<<<1, 1, 0, stream>>>(ns);
  return cudaGetLastError();
}

cudaError_t LaunchDelayThenFill(void* dst, size_t n, uint32_t seed, uint64_t ns, cudaStream_t stream) {
  DelayThenFill<<<Blocks(n), kGridThreads, 0, stream>>>(static_cast<unsigned char*>(dst), n, seed, ns);
  return cudaGetLastError();
}

cudaError_t LaunchAwaitFlag(const unsigned* flag, unsigned want, uint64_t timeout_ns,
                            unsigned* status, cudaStream_t stream) {
  AwaitFlag<<<1, 1, 0, stream>>>(flag, want, timeout_ns, status);
  return cudaGetLastError();
}

cudaError_t LaunchAwaitFlagForm(const unsigned* flag, unsigned want, PollForm form, uint64_t timeout_ns,
                                unsigned* status, cudaStream_t stream) {
  switch (form) {
    case PollForm::kVolatile: AwaitFlagForm<0><<<1, 1, 0, stream>>>(flag, want, timeout_ns, status); break;
    case PollForm::kAtomicRefAcquire: AwaitFlagForm<1><<<1, 1, 0, stream>>>(flag, want, timeout_ns, status); break;
    case PollForm::kRelaxedSysAsm: AwaitFlagForm<2><<<1, 1, 0, stream>>>(flag, want, timeout_ns, status); break;
    case PollForm::kPlainWithFence: AwaitFlagForm<3><<<1, 1, 0, stream>>>(flag, want, timeout_ns, status); break;
    case PollForm::kPlain: AwaitFlagForm<4><<<1, 1, 0, stream>>>(flag, want, timeout_ns, status); break;
  }
  return cudaGetLastError();
}

cudaError_t LaunchCountByteMismatches(const void* p, size_t n, unsigned char value,
                                      unsigned long long* mismatches, cudaStream_t stream) {
  CountByteMismatches<<<Blocks(n), kGridThreads, 0, stream>>>(static_cast<const unsigned char*>(p), n,
                                                           value, mismatches);
  return cudaGetLastError();
}

cudaError_t LaunchCountPatternMismatchesFrom(const void* p, size_t n, size_t base, uint32_t seed,
                                             unsigned long long* mismatches, cudaStream_t stream) {
  CountPatternFrom<<<Blocks(n), kGridThreads, 0, stream>>>(static_cast<const unsigned char*>(p), n, base,
                                                        seed, mismatches);
  return cudaGetLastError();
}

cudaError_t LaunchFillPatternFrom(void* dst, size_t n, size_t base, uint32_t seed, cudaStream_t stream) {
  FillPatternFrom<<<Blocks(n), kGridThreads, 0, stream>>>(static_cast<unsigned char*>(dst), n, base, seed);
  return cudaGetLastError();
}

cudaError_t LaunchCopyKernel(void* dst, const void* src, size_t n, unsigned blocks, cudaStream_t stream) {
  if (blocks == 0) blocks = 1;
  const bool vec = (reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | n) % 16 == 0;
  if (vec) {
    CopyVec16<<<blocks, 512, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), n / 16);
  } else {
    CopyBytes<<<blocks, 512, 0, stream>>>(static_cast<unsigned char*>(dst),
                                          static_cast<const unsigned char*>(src), n);
  }
  return cudaGetLastError();
}

cudaError_t LaunchPointerChase(const unsigned long long* chain, unsigned steps,
                               unsigned long long* elapsed_ns, unsigned long long* last,
                               cudaStream_t stream) {
  PointerChase<<<1, 1, 0, stream>>>(chain, steps, elapsed_ns, last);
  return cudaGetLastError();
}

cudaError_t LaunchPingPong(const unsigned* to_device, unsigned* to_host, const unsigned* payload,
                           unsigned* reply, unsigned words, unsigned rounds, uint64_t timeout_ns,
                           unsigned* bad, unsigned* status, cudaStream_t stream) {
  PingPong<<<1, 256, 0, stream>>>(to_device, to_host, payload, reply, words, rounds, timeout_ns, bad,
                                  status);
  return cudaGetLastError();
}

cudaError_t LaunchTokenRing(unsigned* token, unsigned me, unsigned members, unsigned laps,
                            uint64_t timeout_ns, unsigned* status, cudaStream_t stream) {
  TokenRing<<<1, 1, 0, stream>>>(token, me, members, laps, timeout_ns, status);
  return cudaGetLastError();
}

cudaError_t LaunchOwnerBytes(unsigned char* p, size_t n, unsigned stride, unsigned owner,
                             unsigned rounds, cudaStream_t stream) {
  OwnerBytes<<<64, 256, 0, stream>>>(p, n, stride, owner, rounds);
  return cudaGetLastError();
}

}  // namespace pagelock
