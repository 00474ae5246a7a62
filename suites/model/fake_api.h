// An in-process fake of the documented pinned-memory behaviour (R21, R22, R30-R36, R51-R53, R56,
// R71, R72): "allocations" are page-aligned heap blocks, "registrations" are bookkeeping, the
// device alias is the host pointer, the kernel and copies are host loops. It lets host tests run
// the model's state machine without a GPU, and check that a wrong model rule is caught.
#pragma once

#include <map>
#include <utility>

#include "suites/model/pinned_api.h"

namespace pagelock {

class FakePinnedApi : public PinnedApi {
 public:
  ~FakePinnedApi() override;
  cudaError_t HostAlloc(void** p, size_t n, unsigned flags) override;
  cudaError_t FreeHost(void* p) override;
  cudaError_t HostRegister(void* p, size_t n, unsigned flags) override;
  cudaError_t HostUnregister(void* p) override;
  cudaError_t HostGetDevicePointer(void** dev, void* p) override;
  cudaError_t HostGetFlags(unsigned* flags, void* p) override;
  cudaError_t PointerGetAttributes(cudaPointerAttributes* a, const void* p) override;
  cudaError_t DeviceRoundTrip(void* dev, size_t n, uint32_t seed, unsigned long long* bad) override;
  cudaError_t AsyncCopyRoundTrip(void* host, size_t n, uint32_t seed, size_t* bad) override;

 private:
  struct Range {
    size_t size;
    unsigned flags;
  };
  // The range containing p, if any.
  static const std::pair<const uintptr_t, Range>* Find(const std::map<uintptr_t, Range>& m, const void* p);
  std::map<uintptr_t, Range> allocs_, regs_;
};

}  // namespace pagelock
