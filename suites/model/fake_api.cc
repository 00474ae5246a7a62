#include "suites/model/fake_api.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/pattern.h"

namespace pagelock {

FakePinnedApi::~FakePinnedApi() {
  for (auto& [base, r] : allocs_) std::free(reinterpret_cast<void*>(base));
}

const std::pair<const uintptr_t, FakePinnedApi::Range>* FakePinnedApi::Find(
    const std::map<uintptr_t, Range>& m, const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = m.upper_bound(a);
  if (it == m.begin()) return nullptr;
  --it;
  return a < it->first + it->second.size ? &*it : nullptr;
}

cudaError_t FakePinnedApi::HostAlloc(void** p, size_t n, unsigned flags) {
  if (!p || flags > 7) return cudaErrorInvalidValue;
  *p = std::aligned_alloc(4096, (n + 4095) / 4096 * 4096);
  allocs_[reinterpret_cast<uintptr_t>(*p)] = {n, flags};
  return cudaSuccess;
}

cudaError_t FakePinnedApi::FreeHost(void* p) {
  auto it = allocs_.find(reinterpret_cast<uintptr_t>(p));
  if (it == allocs_.end()) return cudaErrorInvalidValue;
  std::free(p);
  allocs_.erase(it);
  return cudaSuccess;
}

cudaError_t FakePinnedApi::HostRegister(void* p, size_t n, unsigned flags) {
  if (!p || n == 0 || flags > 3) return cudaErrorInvalidValue;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  for (const auto& [base, r] : regs_) {
    if (a < base + r.size && base < a + n) return cudaErrorHostMemoryAlreadyRegistered;
  }
  regs_[a] = {n, flags};
  return cudaSuccess;
}

cudaError_t FakePinnedApi::HostUnregister(void* p) {
  if (!p) return cudaErrorInvalidValue;
  auto it = regs_.find(reinterpret_cast<uintptr_t>(p));
  if (it != regs_.end()) {
    regs_.erase(it);
    return cudaSuccess;
  }
  return Find(regs_, p) ? cudaErrorInvalidValue : cudaErrorHostMemoryNotRegistered;
}

cudaError_t FakePinnedApi::HostGetDevicePointer(void** dev, void* p) {
  if (Find(allocs_, p) || Find(regs_, p)) {
    *dev = p;
    return cudaSuccess;
  }
  return cudaErrorInvalidValue;
}

cudaError_t FakePinnedApi::HostGetFlags(unsigned* flags, void* p) {
  const auto* a = Find(allocs_, p);
  if (!a) return cudaErrorInvalidValue;
  *flags = a->second.flags;
  return cudaSuccess;
}

cudaError_t FakePinnedApi::PointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  *a = cudaPointerAttributes{};
  if (Find(allocs_, p) || Find(regs_, p)) {
    a->type = cudaMemoryTypeHost;
    a->device = 0;
    a->hostPointer = const_cast<void*>(p);
    a->devicePointer = const_cast<void*>(p);
  } else {
    a->type = cudaMemoryTypeUnregistered;
  }
  return cudaSuccess;
}

cudaError_t FakePinnedApi::DeviceRoundTrip(void* dev, size_t n, uint32_t seed, unsigned long long* bad) {
  *bad = HostCountPatternMismatches(dev, n, seed);
  HostFillPattern(dev, n, ~seed);
  return cudaSuccess;
}

cudaError_t FakePinnedApi::AsyncCopyRoundTrip(void* host, size_t n, uint32_t seed, size_t* bad) {
  HostFillPattern(host, n, seed);
  std::vector<unsigned char> scratch(static_cast<unsigned char*>(host), static_cast<unsigned char*>(host) + n);
  HostFillPattern(host, n, ~seed);
  std::memcpy(host, scratch.data(), n);
  *bad = HostCountPatternMismatches(host, n, seed);
  return cudaSuccess;
}

}  // namespace pagelock
