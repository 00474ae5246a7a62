#include "fixtures/mapping.h"
#include "suites/pagestates/pagestates.h"

#include <sys/mman.h>

#include <cstdlib>

#include "kernels/access_kernels.h"
#include "kernels/streams/stream_kernels.h"

namespace pagelock {
namespace pagestates {
namespace {

cudaError_t WarmUp() {
  cudaError_t e = cudaFree(nullptr);
  if (e != cudaSuccess) return e;
  const size_t n = size_t{1} << 20;
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return cudaErrorMemoryAllocation;
  Mapping own = Mapping::Adopt(p, n);
  auto* h = static_cast<unsigned char*>(p);
  HostFillPattern(h, n, 1);
  e = cudaHostRegister(h, n, cudaHostRegisterMapped);
  if (e == cudaSuccess) {
    const Coherence c = CheckBothWays(h, n, Pattern(1), 2, true);
    e = cudaHostUnregister(h);
    if (c.error != cudaSuccess) e = c.error;
  }
  int ro = 0;
  if (e == cudaSuccess && cudaDeviceGetAttribute(&ro, cudaDevAttrHostRegisterReadOnlySupported, 0) == cudaSuccess &&
      ro == 1) {
    e = cudaHostRegister(h, n, cudaHostRegisterMapped | cudaHostRegisterReadOnly);
    if (e == cudaSuccess) e = cudaHostUnregister(h);
  }
  own = Mapping();  // unmapped before the cudaHostAlloc, as it was
  void* a = nullptr;
  if (e == cudaSuccess) e = cudaHostAlloc(&a, n, cudaHostAllocMapped);
  if (e == cudaSuccess) e = cudaFreeHost(a);
  return e;
}

}  // namespace

cudaError_t WarmUpOnce() {
  static const cudaError_t result = WarmUp();
  return result;
}

void* DeviceAlias(void* host, cudaError_t* e) {
  void* dev = nullptr;
  *e = cudaHostGetDevicePointer(&dev, host, 0);
  return *e == cudaSuccess ? dev : nullptr;
}

cudaError_t DeviceCount(const void* dev, size_t n, const pages::PageContent& c, unsigned long long* bad) {
  unsigned long long* counter = nullptr;
  cudaError_t e = cudaMallocManaged(&counter, sizeof *counter);
  if (e != cudaSuccess) return e;
  *counter = 0;
  e = c.kind == pages::PageContent::kPattern ? LaunchCountPatternMismatches(dev, n, c.seed, counter)
                                             : LaunchCountByteMismatches(dev, n, c.At(0), counter, 0);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  *bad = e == cudaSuccess ? *counter : ~0ull;
  const cudaError_t f = cudaFree(counter);
  return e != cudaSuccess ? e : f;
}

cudaError_t DeviceFill(void* dev, size_t n, uint32_t seed) {
  cudaError_t e = LaunchFillPattern(dev, n, seed);
  return e == cudaSuccess ? cudaDeviceSynchronize() : e;
}

Coherence CheckBothWays(unsigned char* host, size_t n, const pages::PageContent& now, uint32_t seed,
                        bool device_writes) {
  Coherence c;
  void* dev = DeviceAlias(host, &c.error);
  if (!dev) {
    c.failed_step = "cudaHostGetDevicePointer";
    return c;
  }
  unsigned long long bad = 0;
  if ((c.error = DeviceCount(dev, n, now, &bad)) != cudaSuccess) {
    c.failed_step = "the device's read of the registered bytes";
    return c;
  }
  c.device_read_bad = static_cast<long long>(bad);
  if (device_writes) {
    const uint32_t s = seed ^ 0x5a5a5a5au;
    if ((c.error = DeviceFill(dev, n, s)) != cudaSuccess) {
      c.failed_step = "the device's write";
      return c;
    }
    c.host_read_bad = static_cast<long long>(HostCountPatternMismatches(host, n, s));
  }
  HostFillPattern(host, n, FinalSeed(seed));
  if ((c.error = DeviceCount(dev, n, Pattern(FinalSeed(seed)), &bad)) != cudaSuccess) {
    c.failed_step = "the device's read of the host's new bytes";
    return c;
  }
  c.device_reread_bad = static_cast<long long>(bad);
  return c;
}

void ExpectCoherent(const Coherence& c, const std::string& what) {
  EXPECT_EQ(c.error, cudaSuccess) << what << ": " << c.failed_step << " returned " << DescribeCuda(c.error);
  if (c.error != cudaSuccess) return;
  EXPECT_EQ(c.device_read_bad, 0) << what << ": bytes the device read that differ from what the host holds";
  if (c.host_read_bad >= 0) {
    EXPECT_EQ(c.host_read_bad, 0) << what << ": bytes of the device's write the host does not see";
  }
  EXPECT_EQ(c.device_reread_bad, 0) << what << ": bytes of the host's later write the device does not see";
}

void ReportCoherence(ScenarioReport& report, const Coherence& c, const std::string& prefix) {
  report.Error(prefix + "error", c.error);
  report.Set(prefix + "failed_step", c.failed_step.empty() ? "-" : c.failed_step);
  report.Set(prefix + "device_read_bad", c.device_read_bad);
  report.Set(prefix + "host_read_bad", c.host_read_bad);
  report.Set(prefix + "device_reread_bad", c.device_reread_bad);
}

void ExpectChildCoherent(const ChildResult& r, const std::string& what, bool device_writes,
                         const std::string& prefix) {
  EXPECT_EQ(r.Get(prefix + "error"), "cudaSuccess") << what << ": " << r.Get(prefix + "failed_step");
  EXPECT_EQ(r.Get(prefix + "device_read_bad"), "0") << what << ": bytes the device read that differ from the host's";
  if (device_writes) {
    EXPECT_EQ(r.Get(prefix + "host_read_bad"), "0") << what << ": bytes of the device's write the host does not see";
  }
  EXPECT_EQ(r.Get(prefix + "device_reread_bad"), "0")
      << what << ": bytes of the host's later write the device does not see";
}

PinWatch::PinWatch() {
  quiet_ = PinBalanceIsQuiet(kQuietS);
  before_ = ReadPinCounters();
}

void PinWatch::ExpectReturned(const std::string& after_what, const std::string& key) {
  ExpectPinBalanceReturned(before_, quiet_, after_what, 5, key, kQuietS);
}

ChildPinWatch::ChildPinWatch() {
  quiet_ = PinBalanceIsQuiet(kQuietS);
  before_ = ReadPinCounters();
}

void ChildPinWatch::Report(ScenarioReport& report) {
  PinCounters after = ReadPinCounters();
  if (PinExactnessProblem(before_, after).empty() && after.balance() != before_.balance()) {
    after = WaitForPinBalance(before_.balance(), 5);
  }
  const std::string problem = PinExactnessProblem(before_, after);
  report.Set("pin_exact", problem.empty() ? "1" : problem);
  report.Set("pin_balance_before", static_cast<long long>(before_.balance()));
  report.Set("pin_balance_after", static_cast<long long>(after.balance()));
  report.Set("pin_quiet_before", quiet_ ? "1" : "0");
  report.Set("pin_quiet_after", PinBalanceIsQuiet(kQuietS) ? "1" : "0");
}

void ExpectChildPinsReturned(const ChildResult& r, const std::string& after_what) {
  Observe("child_pin_balance_before_pages", r.Get("pin_balance_before"));
  Observe("child_pin_balance_after_pages", r.Get("pin_balance_after"));
  PinCounters a, b;
  a.available = b.available = r.Get("pin_exact") != "<missing>";
  a.exact = b.exact = r.Get("pin_exact") == "1";
  a.why_inexact = b.why_inexact = r.Get("pin_exact");
  a.why_not = b.why_not = "the child reported no pin balance";
  a.acquired = std::atoll(r.Get("pin_balance_before").c_str());
  b.acquired = std::atoll(r.Get("pin_balance_after").c_str());
  const PinReturn j = JudgePinReturn(a, b, r.Get("pin_quiet_before") == "1", r.Get("pin_quiet_after") == "1");
  if (j.kind == PinReturn::kMoved) {
    ADD_FAILURE() << "the pin balance did not return after " << after_what << " (in the child): " << j.text;
  } else if (j.kind == PinReturn::kInconclusive) {
    Warn(after_what + " (in the child): " + j.text);
  }
}

void ObserveState(const pages::PageStateRegion& r) {
  Observe("page_state", pages::PageStateName(r.state()));
  Observe("page_state_evidence", r.evidence());
}

void PageStatesTest::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  ASSERT_CUDA_OK(WarmUpOnce()) << "the first-use warm-up (a registration, kernels, managed memory, a pinned allocation)";
}

void ReadOnlyPinTest::SetUp() {
  PageStatesTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterReadOnlySupported, 1));
}

}  // namespace pagestates
}  // namespace pagelock
