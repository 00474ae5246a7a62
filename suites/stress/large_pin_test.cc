// Large single allocations and registrations: one call of 2 GiB + 4 KiB (past the 2 GiB limit
// some kernels had), 4 GiB, 64 GiB, the most RAM allows, and 110% of the device's memory
// (oversubscription; NotSupported where RAM is smaller), through cudaHostAlloc and
// cudaHostRegister, each in a contained scenario child. The device reads the host's bytes in the
// first and last pages and writes back what the host then checks; a failure must be clean
// (cudaErrorMemoryAllocation, not sticky). A size the host cannot hold above the memory floor
// is NotSupported with the numbers.
// Budgets (environment, recorded): PAGELOCK_STRESS_LARGE_MAX_GIB (96: cap of every single call,
// and so of the "most RAM allows" size), PAGELOCK_STRESS_FLOOR_GIB (containment.h). Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <signal.h>

#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/containment.h"
#include "fixtures/gpu_test.h"
#include "fixtures/kernel_accounting.h"
#include "fixtures/storm.h"
#include "kernels/stress/stress_kernels.h"
#include "suites/stress/pin_paths.h"

namespace pagelock {
namespace {

constexpr int64_t kHeadroom = 4 * kGiB;  // the child's own memory (context, binary) in its cgroup

enum class Size { k2GiBPlus4KiB, k4GiB, k64GiB, kRamAllows, kGpuMemoryPlus10Percent };

const char* SizeName(Size s) {
  switch (s) {
    case Size::k2GiBPlus4KiB: return "2GiB_plus_4KiB";
    case Size::k4GiB: return "4GiB";
    case Size::k64GiB: return "64GiB";
    case Size::kRamAllows: return "RamAllows";
    case Size::kGpuMemoryPlus10Percent: return "GpuMemoryPlus10Percent";
  }
  return "?";
}

// The most one call may pin here: MemAvailable less the floor and a margin, capped by the knob,
// in whole GiB.
int64_t RamAllowsBytes() {
  const int64_t avail = ReadMemInfo().mem_available - DefaultFloorBytes() - 2 * kHeadroom;
  const int64_t cap = static_cast<int64_t>(EnvKnob("PAGELOCK_STRESS_LARGE_MAX_GIB", 96) * kGiB);
  return std::min(avail, cap) / kGiB * kGiB;
}

int64_t Bytes(Size s) {
  switch (s) {
    case Size::k2GiBPlus4KiB: return 2 * kGiB + 4096;
    case Size::k4GiB: return 4 * kGiB;
    case Size::k64GiB: return 64 * kGiB;
    case Size::kRamAllows: return RamAllowsBytes();
    // More than the device holds: pinned memory is not limited by device memory (peer case 25).
    case Size::kGpuMemoryPlus10Percent:
      return static_cast<int64_t>(Probe().devices[0].total_memory_bytes) / 10 * 11 / 4096 * 4096;
  }
  return 0;
}

// Arg "path:bytes".
PAGELOCK_SCENARIO(LargeSinglePin) {
  const std::string arg = ScenarioArg();
  Path path;
  const size_t colon = arg.find(':');
  if (colon == std::string::npos || !ParsePath(arg.substr(0, colon), &path)) {
    report.Set("bad_arg", arg);
    return;
  }
  const size_t n = std::strtoull(arg.c_str() + colon + 1, nullptr, 10);
  const ChildContainment cc = EnterContainment();
  report.Set("containment", cc.ok ? cc.mode : "none: " + cc.error);
  if (!cc.ok) return;
  report.Error("init", cudaFree(nullptr));
  if (!cc.Allows(static_cast<int64_t>(n))) {
    report.Set("pin", "skipped: below the floor");
    return;
  }
  void* host = nullptr;
  void* dev = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string pin = Pin(path, n, &host, &dev);
  report.Set("pin_ms", static_cast<long long>(Seconds(t0) * 1e3));
  report.Set("pin", pin);
  if (pin != "ok") {
    if (host) (void)Release(path, host, n);
    report.Error("last_error", cudaGetLastError());  // the failure itself (runtime path)
    report.Error("last_error_cleared", cudaGetLastError());
    void* h = nullptr;
    void* d = nullptr;
    const std::string probe = Pin(path, size_t{1} << 20, &h, &d);
    report.Set("probe_pin", probe);
    if (probe == "ok") (void)Release(path, h, size_t{1} << 20);
    report.Error("sync_after_failure", cudaDeviceSynchronize());
    return;
  }
  // First and last page: the host writes, the device checks, the device writes, the host checks.
  const size_t page = 4096;
  char* const ends[2] = {static_cast<char*>(host), static_cast<char*>(host) + n - page};
  char* const dev_ends[2] = {static_cast<char*>(dev), static_cast<char*>(dev) + n - page};
  unsigned long long* bad = nullptr;
  cudaError_t e = cudaMalloc(&bad, sizeof *bad);
  if (e == cudaSuccess) e = cudaMemset(bad, 0, sizeof *bad);
  for (int k = 0; k < 2 && e == cudaSuccess; ++k) {
    HostFillWords(ends[k], 0, page / 8, 7 + k);
    e = LaunchCountWordMismatches(dev_ends[k], page, 7 + k, bad);
  }
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  unsigned long long device_bad = ~0ull;
  if (e == cudaSuccess) e = cudaMemcpy(&device_bad, bad, sizeof device_bad, cudaMemcpyDefault);
  for (int k = 0; k < 2 && e == cudaSuccess; ++k) e = LaunchFillWords(dev_ends[k], page, 70 + k);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  long long host_bad = 0;
  for (int k = 0; k < 2 && e == cudaSuccess; ++k) host_bad += HostCountWordMismatches(ends[k], 0, page / 8, 70 + k);
  (void)cudaFree(bad);
  report.Error("ends", e);
  report.Set("device_bad_words", static_cast<long long>(device_bad));
  report.Set("host_bad_words", host_bad);
  const auto t1 = std::chrono::steady_clock::now();
  report.Set("release", Release(path, host, n));
  report.Set("release_ms", static_cast<long long>(Seconds(t1) * 1e3));
}

class LargeSinglePinTest : public ::testing::TestWithParam<std::tuple<Path, Size>> {};

TEST_P(LargeSinglePinTest, OneCallOfThisSizePinsAndTheDeviceReachesTheLastPage) {
  PAGELOCK_RULE("R06,R87,C07");
  PAGELOCK_REQUIRE(RequireUsableDevice());
  const auto [path, size] = GetParam();
  if (IsRegisterPath(path)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  const int64_t n = Bytes(size);
  const MemInfo mem = ReadMemInfo();
  const int64_t floor = DefaultFloorBytes();
  if (size == Size::kRamAllows && n <= 64 * kGiB) {
    PAGELOCK_NOT_SUPPORTED("the most RAM allows in one call (" + std::to_string(n / kGiB) +
                           " GiB: MemAvailable - floor - margin, capped by PAGELOCK_STRESS_LARGE_MAX_GIB) "
                           "is not above the 64 GiB case");
  }
  // One cap for every size (the tier's time budget: pinning runs at about 1.4 GiB/s here, so
  // 157 GiB is two minutes a path); raise the knob to run larger sizes.
  const double cap_gib = EnvKnob("PAGELOCK_STRESS_LARGE_MAX_GIB", 96);
  if (n > static_cast<int64_t>(cap_gib * kGiB)) {
    PAGELOCK_NOT_SUPPORTED(std::to_string(n >> 20) + " MiB in one call is above PAGELOCK_STRESS_LARGE_MAX_GIB=" +
                           std::to_string(cap_gib) + " GiB (the stress tier's size cap)");
  }
  if (mem.mem_available - n - kHeadroom < floor) {
    PAGELOCK_NOT_SUPPORTED("MemAvailable " + std::to_string(mem.mem_available >> 20) + " MiB - " +
                           std::to_string(n >> 20) + " MiB - headroom is below the memory floor of " +
                           std::to_string(floor >> 20) + " MiB");
  }
  Budget("single_pin_GiB", static_cast<double>(n) / kGiB, "GiB");
  auto box = Containment::Create(std::string("large-") + SizeName(size), n + kHeadroom, floor);
  box->RecordBudgets();
  const bool pins_quiet_before = PinBalanceIsQuiet();
  const PinCounters pins_before = ReadPinCounters();
  KernelLogCursor klog;
  ChildResult r = RunScenario("LargeSinglePin", 300,
                              [&] {
                                std::vector<std::string> env = box->ChildEnv();
                                env.push_back(ScenarioArgEnv(std::string(PathName(path)) + ":" + std::to_string(n)));
                                return env;
                              }());
  const CgroupEvents ev = box->Events();
  const std::vector<std::string> log = klog.Lines(PinningFailureLogNeedles());
  box.reset();
  Observe("child_containment", r.Get("containment"));
  Observe("pin", r.Get("pin"));
  if (ev.available) Observe("cgroup_oom_kill", static_cast<long long>(ev.oom_kill));
  std::string log_text;
  for (const std::string& l : log) log_text += (log_text.empty() ? "" : " | ") + l;
  if (!log_text.empty()) Observe("kernel_log", log_text);
  if (r.term_signal == SIGKILL && ((ev.available && ev.oom_kill > 0) || !log.empty())) {
    FAIL() << PathName(path) << " of " << n << " bytes in one call: the kernel OOM-killed the child "
           << "instead of the call failing cleanly (deviation, docs/platforms/nvidia-h200.md#c06); log: " << log_text;
  }
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("init"), "cudaSuccess");
  const std::string pin = r.Get("pin");
  if (pin == "ok") {
    Metric("pin_s", std::atof(r.Get("pin_ms").c_str()) / 1e3, "s");
    Metric("release_s", std::atof(r.Get("release_ms").c_str()) / 1e3, "s");
    EXPECT_EQ(r.Get("ends"), "cudaSuccess");
    EXPECT_EQ(r.Get("device_bad_words"), "0") << "the device read other bytes than the host wrote at the ends";
    EXPECT_EQ(r.Get("host_bad_words"), "0") << "the host does not see the device's writes at the ends";
    EXPECT_EQ(r.Get("release"), "ok");
  } else {
    ASSERT_TRUE(IsOutOfMemory(pin)) << PathName(path) << " of " << n << " bytes failed with " << pin
                                    << " instead of cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY";
    Observe("last_error", r.Get("last_error"));
    EXPECT_EQ(r.Get("last_error_cleared"), "cudaSuccess") << "cudaGetLastError did not clear the failure";
    EXPECT_EQ(r.Get("probe_pin"), "ok") << "the failure is sticky: a 1 MiB pin failed after it";
    EXPECT_EQ(r.Get("sync_after_failure"), "cudaSuccess");
    Warn(std::string(PathName(path)) + " of " + std::to_string(n >> 20) + " MiB in one call failed cleanly (" +
         pin + ") although RAM above the floor allowed it");
  }
  // Exact (folded counters): the child's context and memory pins all come back; a foreign
  // process pinning around the case or a failed fold is a WARN with the reason.
  const PinReturn pins = ExpectPinBalanceReturned(pins_before, pins_quiet_before, "the pinning child exited", 20);
  Observe("pin_balance_delta_pages", static_cast<long long>(pins.excess));
}

INSTANTIATE_TEST_SUITE_P(
    PathsAndSizes, LargeSinglePinTest,
    ::testing::Combine(::testing::Values(Path::kHostAlloc, Path::kHostRegister),
                       ::testing::Values(Size::k2GiBPlus4KiB, Size::k4GiB, Size::k64GiB, Size::kRamAllows,
                                         Size::kGpuMemoryPlus10Percent)),
    [](const ::testing::TestParamInfo<std::tuple<Path, Size>>& i) {
      return std::string(PathName(std::get<0>(i.param))) + "_" + SizeName(std::get<1>(i.param));
    });

}  // namespace
}  // namespace pagelock
