// What every page-state case does around the state it makes: the device's and the host's view of
// a registered range checked byte by byte in both directions, the kernel's pin balance back at
// its start after the release, and the runtime's first-use pins taken before any case measures.
// Helpers that return facts (for child scenarios) and gtest wrappers that assert them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fixtures/child_process.h"
#include "fixtures/gpu_test.h"
#include "fixtures/kernel_accounting.h"
#include "fixtures/page_state.h"

namespace pagelock {
namespace pagestates {

// The window of each quiet check around a pin-balance check: the cases run in an exclusive
// binary, so a short window suffices and keeps the full tier fast.
constexpr double kQuietS = 0.03;
// cudaHostRegister's documented results.
const char* const kRegisterDoc = "cudaHostRegister's error list (CUDA 13.0 runtime API)";

// Whatever the runtime and the driver pin for themselves on first use (the context, a first
// registration, a first kernel, managed memory for the counters): done once per process, before
// any case reads the pin balance.
cudaError_t WarmUpOnce();

// The device counts the bytes of [dev, dev + n) that differ from `c` (kernels, then a device
// synchronisation); the count in *bad.
cudaError_t DeviceCount(const void* dev, size_t n, const pages::PageContent& c, unsigned long long* bad);
// The device writes PatternByte(i, seed) over [dev, dev + n), then synchronises.
cudaError_t DeviceFill(void* dev, size_t n, uint32_t seed);
inline pages::PageContent Pattern(uint32_t seed) { return {pages::PageContent::kPattern, 0, seed}; }

// Both directions through a registration of [host, host + n):
//   1. the device reads what the range holds now (`now`);
//   2. if `device_writes`: the device writes the pattern of seed ^ 0x5a5a5a5a and the host reads it;
//   3. the host writes the pattern of seed ^ 0xa5a5a5a5 and the device reads it.
// After it the range holds Pattern(FinalSeed(seed)). The first failing call stops it.
struct Coherence {
  cudaError_t error = cudaSuccess;
  std::string failed_step;                // the call that failed
  long long device_read_bad = -1;         // 1.
  long long host_read_bad = -1;           // 2. (-1: not run)
  long long device_reread_bad = -1;       // 3.
};
Coherence CheckBothWays(unsigned char* host, size_t n, const pages::PageContent& now, uint32_t seed,
                        bool device_writes);
inline uint32_t FinalSeed(uint32_t seed) { return seed ^ 0xa5a5a5a5u; }
// gtest: every step succeeded and every count is 0 (`what` names the range in messages).
void ExpectCoherent(const Coherence& c, const std::string& what);
// Child scenarios: the same facts as report keys prefix + "error", "device_read_bad", ...
void ReportCoherence(ScenarioReport& report, const Coherence& c, const std::string& prefix = "");
void ExpectChildCoherent(const ChildResult& r, const std::string& what, bool device_writes,
                         const std::string& prefix = "");

// The host-wide pin balance at construction (folded, after a quiet check); ExpectReturned()
// after everything the case pinned is released: FAIL when exact reads on a quiet host show it
// moved, WARN when the check is inconclusive.
class PinWatch {
 public:
  PinWatch();
  void ExpectReturned(const std::string& after_what, const std::string& key = "");
  const PinCounters& before() const { return before_; }

 private:
  PinCounters before_;
  bool quiet_ = false;
};
// The same inside a child scenario: Start() reads the baseline, Report() waits (bounded) for the
// balance and writes pin_balance_before/after, pin_exact, pin_quiet_before/after.
class ChildPinWatch {
 public:
  ChildPinWatch();
  void Report(ScenarioReport& report);

 private:
  PinCounters before_;
  bool quiet_ = false;
};
// The parent's verdict on a ChildPinWatch report (as ExpectPinBalanceReturned judges).
void ExpectChildPinsReturned(const ChildResult& r, const std::string& after_what);

// Records the state's evidence (what was measured to confirm it) on the case.
void ObserveState(const pages::PageStateRegion& r);

// cudaHostRegister(p, n, flags) adopted into an owner; a failure is ASSERTed by the caller.
class PageStatesTest : public GpuTest {
 protected:
  void SetUp() override;
};

// Cases of cudaHostRegisterReadOnly: the device must have cudaDevAttrHostRegisterReadOnlySupported.
class ReadOnlyPinTest : public PageStatesTest {
 protected:
  void SetUp() override;
};

// The device alias of registered or mapped memory; null and *e set when the call fails.
void* DeviceAlias(void* host, cudaError_t* e);

}  // namespace pagestates
}  // namespace pagelock
