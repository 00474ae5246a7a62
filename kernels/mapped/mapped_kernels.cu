#include "kernels/mapped/mapped_kernels.h"

namespace pagelock {
namespace {

constexpr int kThreads = 256;

unsigned Blocks(size_t n) {
  const size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 1024 ? 1024 : b));
}

__global__ void MemtestFillKernel(uint32_t* w, size_t words, MemtestPattern pattern, uint32_t param,
                                  uint64_t address_base) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < words; i += stride) {
    w[i] = MemtestWord(pattern, i, param, address_base);
  }
}

__device__ void NoteMismatch(MemtestResult* out, size_t i, uint32_t got) {
  atomicAdd(&out->mismatches, 1ull);
  atomicMin(&out->first, (static_cast<unsigned long long>(i) << 32) | got);
}

__global__ void MemtestCheckKernel(const volatile uint32_t* w, size_t words, MemtestPattern pattern,
                                   uint32_t param, uint64_t address_base, MemtestResult* out) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < words; i += stride) {
    const uint32_t got = w[i];
    if (got != MemtestWord(pattern, i, param, address_base)) NoteMismatch(out, i, got);
  }
}

__global__ void MemtestInvertKernel(volatile uint32_t* w, size_t words, uint32_t expect,
                                    bool descending, MemtestResult* out) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t k = size_t{blockIdx.x} * blockDim.x + threadIdx.x; k < words; k += stride) {
    const size_t i = descending ? words - 1 - k : k;
    const uint32_t got = w[i];
    if (got != expect) NoteMismatch(out, i, got);
    w[i] = ~expect;
  }
}

__global__ void WalkListKernel(const ListNode* head, size_t max_steps, uint64_t* order, ListWalk* out) {
  const volatile ListNode* node = head;
  unsigned long long steps = 0, sum = 0;
  while (node != nullptr && steps < max_steps) {
    order[steps] = node->index;
    sum += node->value;
    node = reinterpret_cast<const volatile ListNode*>(static_cast<uintptr_t>(node->next));
    ++steps;
  }
  out->steps = steps;
  out->sum = sum;
  out->ended = node == nullptr ? 1 : 0;
}

__global__ void BuildListKernel(ListNode* nodes, const uint32_t* order, size_t n, uint64_t seed) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t k = size_t{blockIdx.x} * blockDim.x + threadIdx.x; k < n; k += stride) {
    ListNode* node = &nodes[order[k]];
    node->index = order[k];
    node->value = ListValue(order[k], seed);
    node->next = k + 1 < n ? static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&nodes[order[k + 1]])) : 0;
  }
}

}  // namespace

cudaError_t LaunchMemtestFill(void* w, size_t words, MemtestPattern pattern, uint32_t param,
                              uint64_t address_base, cudaStream_t stream) {
  MemtestFillKernel<<<Blocks(words), kThreads, 0, stream>>>(static_cast<uint32_t*>(w), words, pattern,
                                                             param, address_base);
  return cudaGetLastError();
}

cudaError_t LaunchMemtestCheck(const void* w, size_t words, MemtestPattern pattern, uint32_t param,
                               uint64_t address_base, MemtestResult* out, cudaStream_t stream) {
  MemtestCheckKernel<<<Blocks(words), kThreads, 0, stream>>>(static_cast<const volatile uint32_t*>(w),
                                                              words, pattern, param, address_base, out);
  return cudaGetLastError();
}

cudaError_t LaunchMemtestInvert(void* w, size_t words, uint32_t expect, bool descending,
                                MemtestResult* out, cudaStream_t stream) {
  MemtestInvertKernel<<<Blocks(words), kThreads, 0, stream>>>(static_cast<volatile uint32_t*>(w), words,
                                                               expect, descending, out);
  return cudaGetLastError();
}

cudaError_t LaunchWalkList(const ListNode* head, size_t max_steps, uint64_t* order, ListWalk* out,
                           cudaStream_t stream) {
  WalkListKernel<<<1, 1, 0, stream>>>(head, max_steps, order, out);
  return cudaGetLastError();
}

cudaError_t LaunchBuildList(ListNode* nodes, const uint32_t* order, size_t n, uint64_t seed,
                            cudaStream_t stream) {
  BuildListKernel<<<Blocks(n), kThreads, 0, stream>>>(nodes, order, n, seed);
  return cudaGetLastError();
}

}  // namespace pagelock
