// Exhaustion reached, contained. A scenario child pins chunk after chunk until something gives,
// through each path (cudaHostAlloc, cudaHostRegister, cuMemHostAlloc, cuMemHostRegister), inside
// a cgroup-v2 child cgroup with memory.max where the harness can create one, and always above a
// MemAvailable floor (fixtures/containment.h). The outcome is classified:
//   memory_allocation  cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY (documented, R06)
//   oom_killed         the kernel killed the child (cgroup memory.events oom_kill, kernel log)
//   stopped_by_floor   MemAvailable reached the floor first: exhaustion not reached (WARN)
//   stopped_by_time    the pin budget ran out first (WARN)
//   other_error, crash, hang
// After a clean stop: the device fills and checks every chunk, one pin still works (not
// sticky), everything frees, and the same total pins again; the host's pin balance and
// MemAvailable return to what they were.
// Budgets (environment, recorded): PAGELOCK_STRESS_CGROUP_MAX_GIB, PAGELOCK_STRESS_FLOOR_GIB
// (containment.h), PAGELOCK_STRESS_CHUNK_MIB (256), PAGELOCK_STRESS_EXHAUST_SECONDS (15: pin
// phase, and again for the re-pin), PAGELOCK_STRESS_MEMLOCK_KIB (64, the RLIMIT_MEMLOCK case).
// Rule ids refer to suites/rules.tsv.
#include <cuda.h>
#include <cuda_runtime.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <string>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/containment.h"
#include "fixtures/driver_api.h"
#include "fixtures/gpu_test.h"
#include "fixtures/kernel_accounting.h"
#include "fixtures/mapping.h"
#include "fixtures/resources.h"
#include "fixtures/settings.h"
#include "fixtures/time_scale.h"
#include "kernels/stress/stress_kernels.h"
#include "suites/stress/pin_paths.h"

namespace pagelock {
namespace {

struct Chunk {
  void* host;
  void* dev;
};

// Pins `max_chunks` chunks at most, within the floor and `budget_s`. Returns why it stopped:
// "error", "floor", "time" or "count"; `error` holds the failing call's error.
std::string PinChunks(PinRoute path, size_t chunk, size_t max_chunks, double budget_s,
                      const ChildContainment& cc, std::vector<Chunk>* chunks, std::string* error,
                      std::vector<double>* ms, ScenarioReport* progress) {
  const auto start = std::chrono::steady_clock::now();
  while (chunks->size() < max_chunks) {
    if (!cc.Allows(static_cast<int64_t>(chunk))) return "floor";
    if (Seconds(start) > budget_s) return "time";
    Chunk c{};
    const auto t0 = std::chrono::steady_clock::now();
    const std::string e = Pin(path, chunk, &c.host, &c.dev);
    if (ms) ms->push_back(Seconds(t0) * 1e3);
    if (e != "ok") {
      if (c.host) (void)Release(path, c.host, chunk);  // pinned but no device pointer
      *error = e;
      return "error";
    }
    chunks->push_back(c);
    // Written as it goes: if the kernel kills the child, the parent knows how far it got.
    if (progress) progress->Set("pinned_chunks", static_cast<long long>(chunks->size()));
  }
  return "count";
}

PAGELOCK_SCENARIO(Exhaust) {
  PinRoute path;
  if (!ParseStressRoute(ScenarioArg(), &path)) {
    report.Set("bad_arg", ScenarioArg());
    return;
  }
  const ChildContainment cc = EnterContainment();
  report.Set("containment", cc.ok ? cc.mode : "none: " + cc.error);
  if (!cc.ok) return;  // never pin without containment
  const size_t chunk = static_cast<size_t>(settings::PositiveNumber("PAGELOCK_STRESS_CHUNK_MIB")) << 20;
  const double budget_s = settings::PositiveNumber("PAGELOCK_STRESS_EXHAUST_SECONDS") * TimeScale();
  report.Error("init", cudaFree(nullptr));
  if (IsDriverRoute(path) && !Driver().loaded) {
    report.Set("driver_api", Driver().error);
    return;
  }
  report.Set("memavailable_start", static_cast<long long>(ReadMemInfo().mem_available));

  std::vector<Chunk> chunks;
  std::vector<double> ms;
  std::string error;
  const std::string stop = PinChunks(path, chunk, SIZE_MAX, budget_s, cc, &chunks, &error, &ms, &report);
  const size_t reached = chunks.size();
  report.Set("stop", stop);
  report.Set("error", error);
  report.Set("memavailable_at_stop", static_cast<long long>(ReadMemInfo().mem_available));
  std::sort(ms.begin(), ms.end());
  report.Set("pin_median_us", static_cast<long long>(ms.empty() ? 0 : ms[ms.size() / 2] * 1e3));
  // R87: the slot holds the failure once (runtime paths), then it is clear.
  report.Error("last_error_after_stop", cudaGetLastError());
  report.Error("last_error_cleared", cudaGetLastError());

  // Not sticky: with one chunk given back, a small pin works and the device is healthy.
  if (!chunks.empty()) {
    report.Set("release_one", Release(path, chunks.back().host, chunk));
    chunks.pop_back();
  }
  void* probe_host = nullptr;
  void* probe_dev = nullptr;
  const std::string probe = Pin(path, size_t{1} << 20, &probe_host, &probe_dev);
  report.Set("probe_pin", probe);
  if (probe == "ok") report.Set("probe_release", Release(path, probe_host, size_t{1} << 20));
  report.Error("sync_after_stop", cudaDeviceSynchronize());

  // The device fills and checks every chunk; the host spot-checks both ends of each.
  unsigned long long* bad = nullptr;
  cudaError_t e = cudaMalloc(&bad, sizeof *bad);
  DeviceBuffer own_bad = DeviceBuffer::Adopt(bad);
  if (e == cudaSuccess) e = cudaMemset(bad, 0, sizeof *bad);
  const auto check_start = std::chrono::steady_clock::now();
  long long host_bad = 0;
  for (size_t i = 0; i < chunks.size() && e == cudaSuccess; ++i) {
    e = LaunchFillWords(chunks[i].dev, chunk, 1000 + i);
    if (e == cudaSuccess) e = LaunchCountWordMismatches(chunks[i].dev, chunk, 1000 + i, bad);
  }
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  unsigned long long device_bad = ~0ull;
  if (e == cudaSuccess) e = cudaMemcpy(&device_bad, bad, sizeof device_bad, cudaMemcpyDefault);
  for (size_t i = 0; i < chunks.size() && e == cudaSuccess; ++i) {
    const size_t words = chunk / 8, edge = 512;
    host_bad += HostCountWordMismatches(chunks[i].host, 0, edge, 1000 + i);
    host_bad += HostCountWordMismatches(chunks[i].host, words - edge, edge, 1000 + i);
  }
  report.Error("checksum", e);
  report.Set("checksum_chunks", static_cast<long long>(chunks.size()));
  report.Set("device_bad_words", static_cast<long long>(device_bad));
  report.Set("host_bad_words", host_bad);
  report.Set("checksum_ms", static_cast<long long>(Seconds(check_start) * 1e3));
  own_bad = DeviceBuffer();  // freed before the chunks are

  // Everything frees, and the same total pins again.
  long long release_failures = 0;
  for (const Chunk& c : chunks) release_failures += Release(path, c.host, chunk) != "ok";
  report.Set("release_failures", release_failures);
  chunks.clear();
  std::string repin_error;
  const std::string repin_stop =
      PinChunks(path, chunk, reached, budget_s, cc, &chunks, &repin_error, nullptr, nullptr);
  report.Set("repin_stop", repin_stop);
  report.Set("repin_error", repin_error);
  report.Set("repinned_chunks", static_cast<long long>(chunks.size()));
  for (const Chunk& c : chunks) release_failures += Release(path, c.host, chunk) != "ok";
  report.Set("release_failures_total", release_failures);
  report.Error("sync_end", cudaDeviceSynchronize());
}

// ---- The parent: containment, classification, assertions ---------------------------------------

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += (s.empty() ? "" : " | ") + l;
  return s;
}

bool AnyContains(const std::vector<std::string>& lines, const char* needle) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

class ExhaustionTest : public ::testing::TestWithParam<PinRoute> {};

TEST_P(ExhaustionTest, PinningUntilFailureInContainmentFailsCleanlyAndRecovers) {
  PAGELOCK_RULE("R06,R87,C06");
  PAGELOCK_REQUIRE(RequireUsableDevice());
  const PinRoute path = GetParam();
  if (IsRegisterRoute(path)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  if (IsDriverRoute(path)) PAGELOCK_REQUIRE(RequireDriverApi());
  const double chunk_mib = settings::PositiveNumber("PAGELOCK_STRESS_CHUNK_MIB");
  const double budget_s = settings::PositiveNumber("PAGELOCK_STRESS_EXHAUST_SECONDS") * TimeScale();
  auto box = Containment::Create(PinRouteName(path), DefaultCgroupCapBytes());
  box->RecordBudgets();
  Budget("chunk_MiB", chunk_mib, "MiB");
  Budget("pin_phase_s", budget_s, "s");
  const bool pins_quiet_before = PinBalanceIsQuiet();
  const PinCounters pins_before = ReadPinCounters();
  const MemInfo mem_before = ReadMemInfo();
  KernelLogCursor klog;

  ChildResult r = RunScenario("Exhaust", 2 * budget_s + 240, [&] {
    std::vector<std::string> env = box->ChildEnv();
    env.push_back(ScenarioArgEnv(PinRouteName(path)));
    return env;
  }());
  const CgroupEvents ev = box->Events();
  const std::vector<std::string> log = klog.Lines(PinningFailureLogNeedles());
  box.reset();  // the cgroup goes before the balance checks below

  const double chunk_gib = chunk_mib / 1024;
  const long long pinned = std::atoll(r.Get("pinned_chunks").c_str());
  Metric("pinned_GiB", pinned * chunk_gib, "GiB");
  Metric("pin_256MiB_median_ms", std::atof(r.Get("pin_median_us").c_str()) / 1e3, "ms");
  Observe("child_containment", r.Get("containment"));
  Observe("stop", r.Get("stop"));
  Observe("first_error", r.Get("error"));
  if (ev.available) {
    Observe("cgroup_oom_kill", static_cast<long long>(ev.oom_kill));
    Observe("cgroup_max_events", static_cast<long long>(ev.max));
    if (ev.peak >= 0) Metric("cgroup_peak_GiB", static_cast<double>(ev.peak) / kGiB, "GiB");
  }
  Observe("kernel_log", klog.why_not().empty() ? Joined(log) : "unavailable: " + klog.why_not());

  // Classify.
  std::string outcome;
  const bool oom = (ev.available && ev.oom_kill > 0) || AnyContains(log, "oom") ||
                   AnyContains(log, "Out of memory");
  if (r.timed_out) outcome = "hang";
  else if (r.term_signal == SIGKILL && oom) outcome = "oom_killed";
  else if (r.term_signal != 0) outcome = "crash " + SignalName(r.term_signal);
  else if (!r.completed()) outcome = "error";
  else if (r.Get("stop") == "error") outcome = IsOutOfMemory(r.Get("error")) ? "memory_allocation" : "other_error";
  else outcome = "stopped_by_" + r.Get("stop");
  Observe("outcome", outcome);

  if (outcome == "oom_killed") {
    ADD_FAILURE() << PinRouteName(path) << ": the kernel OOM-killed the pinning child after " << pinned * chunk_gib
                  << " GiB instead of the call failing with cudaErrorMemoryAllocation (deviation, "
                  << "docs/platforms/driver-r580.md#c06); containment " << r.Get("containment") << "; kernel log: " << Joined(log);
  } else if (outcome == "hang" || outcome.rfind("crash", 0) == 0 || outcome == "error") {
    NoteChildOutcome(r);
    ADD_FAILURE() << PinRouteName(path) << ": " << outcome << " after " << pinned * chunk_gib << " GiB: " << r.Describe();
  } else if (r.Get("containment").rfind("none", 0) == 0) {
    ADD_FAILURE() << "the child refused to pin without containment: " << r.Get("containment");
  } else {
    if (outcome == "other_error") {
      ADD_FAILURE() << PinRouteName(path) << ": pinning failed with " << r.Get("error")
                    << " instead of cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY";
    } else if (outcome != "memory_allocation") {
      Warn(std::string(PinRouteName(path)) + ": exhaustion not reached: " + outcome + " at " +
           std::to_string(pinned * chunk_gib) + " GiB (containment " + r.Get("containment") + ")");
    }
    Observe("last_error_after_stop", r.Get("last_error_after_stop"));
    EXPECT_EQ(r.Get("last_error_cleared"), "cudaSuccess") << "cudaGetLastError did not clear the failure";
    EXPECT_EQ(r.Get("probe_pin"), "ok") << "after giving one chunk back, a 1 MiB pin failed: the failure is sticky";
    EXPECT_EQ(r.Get("sync_after_stop"), "cudaSuccess");
    EXPECT_EQ(r.Get("checksum"), "cudaSuccess");
    EXPECT_EQ(r.Get("device_bad_words"), "0") << "the device's fill and check of every pinned chunk disagree";
    EXPECT_EQ(r.Get("host_bad_words"), "0") << "the host does not see the device's fill";
    Metric("checksum_ms", std::atof(r.Get("checksum_ms").c_str()), "ms");
    EXPECT_EQ(r.Get("release_failures_total"), "0") << "freeing or unregistering a chunk failed";
    const long long repinned = std::atoll(r.Get("repinned_chunks").c_str());
    Metric("repinned_GiB", repinned * chunk_gib, "GiB");
    EXPECT_GE(repinned + 1, pinned) << "after freeing everything only " << repinned << " of " << pinned
                                    << " chunks pinned again (" << r.Get("repin_stop") << " " << r.Get("repin_error") << ")";
    EXPECT_EQ(r.Get("sync_end"), "cudaSuccess");
  }

  // The machine is left as found: pins released, memory back (bounded waits).
  // Exact (folded counters): the child's context and memory pins all come back; a foreign
  // process pinning around the case or a failed fold is a WARN with the reason.
  const PinReturn pins = ExpectPinBalanceReturned(pins_before, pins_quiet_before, "the pinning child exited", 20);
  Observe("pin_balance_delta_pages", static_cast<long long>(pins.excess));
  MemInfo mem_after = ReadMemInfo();
  for (int i = 0; i < 200 && mem_before.mem_available - mem_after.mem_available > 2 * kGiB; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    mem_after = ReadMemInfo();
  }
  Observe("memavailable_delta_MiB", static_cast<double>((mem_after.mem_available - mem_before.mem_available) >> 20));
  EXPECT_LE(mem_before.mem_available - mem_after.mem_available, 2 * kGiB) << "MemAvailable did not come back";
}

INSTANTIATE_TEST_SUITE_P(Paths, ExhaustionTest,
                         ::testing::Values(PinRoute::kHostAlloc, PinRoute::kHostRegister, PinRoute::kCuMemHostAlloc,
                                           PinRoute::kCuMemHostRegister),
                         [](const ::testing::TestParamInfo<PinRoute>& i) { return std::string(PinRouteName(i.param)); });

// ---- RLIMIT_MEMLOCK ------------------------------------------------------------------------------

bool HasCapIpcLock() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) == 0) return (std::strtoull(line.c_str() + 7, nullptr, 16) >> 14) & 1;
  }
  return false;
}

PAGELOCK_SCENARIO(MemlockLimit) {
  const ChildContainment cc = EnterContainment();
  report.Set("containment", cc.ok ? cc.mode : "none: " + cc.error);
  const size_t n = size_t{64} << 20;
  if (!cc.ok || !cc.Allows(4 * n)) return;
  report.Error("init", cudaFree(nullptr));
  const rlim_t limit = static_cast<rlim_t>(settings::PositiveNumber("PAGELOCK_STRESS_MEMLOCK_KIB")) << 10;
  struct rlimit rl = {limit, limit};
  report.Set("setrlimit", setrlimit(RLIMIT_MEMLOCK, &rl) == 0 ? "ok" : std::strerror(errno));
  report.Set("cap_ipc_lock", HasCapIpcLock() ? "1" : "0");
  {
    const Mapping m(n);
    report.Set("mlock", !m ? m.error() : mlock(m.data(), n) == 0 ? "ok" : std::strerror(errno));
  }
  for (PinRoute p : kStressRoutes) {
    if (IsDriverRoute(p) && !Driver().loaded) continue;
    void* host = nullptr;
    void* dev = nullptr;
    const std::string e = Pin(p, n, &host, &dev);
    report.Set(std::string("pin_") + PinRouteName(p), e);
    if (e == "ok") report.Set(std::string("release_") + PinRouteName(p), Release(p, host, n));
    report.Error(std::string("sync_") + PinRouteName(p), cudaDeviceSynchronize());
  }
}

TEST(MemlockLimitTest, EachPathUnderASmallMemlockLimitSucceedsOrFailsCleanly) {
  PAGELOCK_RULE("C08");
  PAGELOCK_REQUIRE(RequireUsableDevice());
  auto box = Containment::Create("memlock", DefaultCgroupCapBytes());
  box->RecordBudgets();
  Budget("memlock_limit_KiB", settings::PositiveNumber("PAGELOCK_STRESS_MEMLOCK_KIB"), "KiB");
  std::vector<std::string> env = box->ChildEnv();
  ChildResult r = RunScenario("MemlockLimit", 120, env);
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("init"), "cudaSuccess") << "containment: " << r.Get("containment");
  EXPECT_EQ(r.Get("setrlimit"), "ok");
  Observe("cap_ipc_lock", r.Get("cap_ipc_lock"));
  Observe("mlock_64MiB", r.Get("mlock"));
  for (PinRoute p : kStressRoutes) {
    const std::string e = r.Get(std::string("pin_") + PinRouteName(p));
    if (e == "<missing>") continue;  // driver API not loadable
    Observe(std::string("pin_64MiB_") + PinRouteName(p), e);
    EXPECT_TRUE(e == "ok" || IsOutOfMemory(e)) << PinRouteName(p) << " under RLIMIT_MEMLOCK: " << e;
    if (e == "ok") {
      EXPECT_EQ(r.Get(std::string("release_") + PinRouteName(p)), "ok") << PinRouteName(p);
    }
    EXPECT_EQ(r.Get(std::string("sync_") + PinRouteName(p)), "cudaSuccess") << PinRouteName(p) << ": sticky";
  }
}

}  // namespace
}  // namespace pagelock
