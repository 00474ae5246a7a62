// Per-GPU pin accounting and exhaustion beside a working GPU (stress tier, two or more GPUs):
//   - each GPU in turn pins PAGELOCK_MULTIGPU_PIN_CHUNKS (default 64) chunks of 64 MiB from its
//     own context, alternately cudaHostAlloc(Mapped) and cudaHostRegister(Mapped) of anonymous
//     memory, writes both ends of each through its own pointer (checked by the host), and frees
//     them; after each GPU the kernel's pin balance (/proc/vmstat, folded: fixtures/
//     kernel_accounting.h) is exactly back and MemAvailable within PAGELOCK_ACCOUNTING_SLACK_MIB
//     (default 256);
//   - a scenario child exhausts pinned memory from GPU 0's context inside the containment of
//     suites/stress/exhaustion_test.cc (a cgroup-v2 child cgroup with memory.max, always above a
//     MemAvailable floor: fixtures/containment.h) and holds it for 2 s, while this process runs
//     a copy/verify loop on GPU 1 (64 MiB H2D and D2H through its own memory, every byte counted
//     each round): every round completes without error and with every byte right, and rounds
//     complete while the child pins. How the child's exhaustion ends (cudaErrorMemoryAllocation,
//     or the OOM kill of docs/platforms/driver-r580.md#c06) is recorded; ExhaustionTest judges
//     it. GPU 1's loop runs in another process than the pinning so that an OOM kill of the
//     pinning process cannot take the loop's evidence with it.
// Budgets (environment, recorded): PAGELOCK_MULTIGPU_PIN_CHUNKS, PAGELOCK_ACCOUNTING_SLACK_MIB,
// PAGELOCK_STRESS_CHUNK_MIB (256), PAGELOCK_STRESS_EXHAUST_SECONDS (15), and containment's own.
// NotSupported with fewer than two GPUs (cudaGetDeviceCount=1 (need 2)), without the pin
// counters, or when the memory asked for would cross the floor. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/containment.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/kernel_accounting.h"
#include "fixtures/resources.h"
#include "fixtures/settings.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"
#include "kernels/pattern.h"
#include "kernels/streams/stream_kernels.h"

namespace pagelock {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr size_t kChunk = size_t{64} << 20;
constexpr size_t kEdge = size_t{64} << 10;  // bytes written and checked at each end of a chunk

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Bytes i in [begin, end) of p with p[i] != PatternByte(i, seed).
size_t CountPatternMismatchesIn(const unsigned char* p, size_t begin, size_t end, uint32_t seed) {
  const auto* b = reinterpret_cast<const volatile unsigned char*>(p);
  size_t bad = 0;
  for (size_t i = begin; i < end; ++i) bad += b[i] != PatternByte(i, seed);
  return bad;
}

class MultiGpuAccountingTest : public GpuTest {
 protected:
  MultiGpuAccountingTest() : GpuTest(/*devices=*/2) {}
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const PinCounters c = ReadPinCounters();
    if (!c.available) PAGELOCK_NOT_SUPPORTED(c.why_not);
    if (!ReadMemInfo().available) PAGELOCK_NOT_SUPPORTED("/proc/meminfo has no MemAvailable");
    n_ = static_cast<int>(Probe().devices.size());
    // Every context, and whatever each pins once on first use, exists before any baseline.
    for (int d = 0; d < n_; ++d) {
      ASSERT_CUDA_OK(cudaSetDevice(d));
      ASSERT_CUDA_OK(cudaFree(nullptr));
      void* p = nullptr;
      ASSERT_CUDA_OK(cudaHostAlloc(&p, 1 << 20, cudaHostAllocMapped));
      ASSERT_CUDA_OK(cudaFreeHost(p));
      if (RequireAttr(cudaDevAttrHostRegisterSupported, 1, d).met) {
        auto warm = HostRegion::Make(HostKind::kRegisteredMmap, 1 << 20);
        ASSERT_NE(warm->data(), nullptr) << warm->unavailable();
        ASSERT_CUDA_OK(cudaHostRegister(warm->data(), warm->size(), cudaHostRegisterMapped));
        ASSERT_CUDA_OK(cudaHostUnregister(warm->data()));
      }
    }
    ASSERT_CUDA_OK(cudaSetDevice(0));
  }
  void TearDown() override {
    for (int d = 1; d < n_; ++d) {  // the health check covers device 0
      EXPECT_CUDA_OK(cudaSetDevice(d));
      EXPECT_CUDA_OK(cudaDeviceSynchronize()) << "device " << d;
    }
    if (n_ > 0) {
      EXPECT_CUDA_OK(cudaSetDevice(0));
    }
    GpuTest::TearDown();
  }
  int n_ = 0;
};

// Faults caught: a driver that keeps a GPU's pins (or its allocations' pages) after the frees
// made from that GPU's context, one that pins through one device's context but releases through
// device 0's accounting only, a device pointer of another GPU's context that reaches other pages.
TEST_F(MultiGpuAccountingTest, EachGpusPinningStressReturnsThePinBalanceAndMemAvailable) {
  PAGELOCK_RULE("C21,C04,R19,R33");
  const int chunks = static_cast<int>(settings::PositiveNumber("PAGELOCK_MULTIGPU_PIN_CHUNKS"));
  const int64_t hold = static_cast<int64_t>(chunks) * static_cast<int64_t>(kChunk);
  const int64_t slack = static_cast<int64_t>(settings::PositiveNumber("PAGELOCK_ACCOUNTING_SLACK_MIB")) * kMiB;
  Budget("chunks_per_gpu_count", chunks, "count");
  Budget("chunk_MiB", static_cast<double>(kChunk >> 20), "MiB");
  Budget("memavailable_slack_MiB", static_cast<double>(slack / kMiB), "MiB");
  if (ReadMemInfo().mem_available - hold < DefaultFloorBytes()) {
    PAGELOCK_NOT_SUPPORTED("MemAvailable - " + std::to_string(hold / kMiB) + " MiB < the memory floor (" +
                           std::to_string(DefaultFloorBytes() / kMiB) + " MiB)");
  }
  for (int d = 0; d < n_ && !HasFatalFailure(); ++d) {
    const std::string gpu = "gpu" + std::to_string(d) + "_";
    const bool can_register = RequireAttr(cudaDevAttrHostRegisterSupported, 1, d).met;
    const bool quiet = PinBalanceIsQuiet(0.1);
    const PinCounters pins_before = ReadPinCounters();
    const MemInfo mem_before = ReadMemInfo();
    ASSERT_CUDA_OK(cudaSetDevice(d));
    std::vector<PinnedBuffer> allocated;
    std::vector<HostRegistration> registered;
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    std::vector<unsigned char*> hosts;
    for (int i = 0; i < chunks; ++i) {
      unsigned char* host = nullptr;
      if (i % 2 == 1 && can_register) {
        std::string why;
        registered.push_back(HostRegistration::Make(HostKind::kRegisteredMmap, kChunk, cudaHostRegisterMapped, &why));
        ASSERT_CUDA_OK(registered.back().status()) << gpu << "chunk " << i;
        ASSERT_NE(registered.back().host(), nullptr) << why;
        host = registered.back().host();
      } else {
        allocated.emplace_back(kChunk, cudaHostAllocMapped);
        ASSERT_CUDA_OK(allocated.back().status()) << gpu << "chunk " << i;
        host = allocated.back().host();
      }
      void* alias = nullptr;
      ASSERT_CUDA_OK(cudaHostGetDevicePointer(&alias, host, 0));
      auto* a = static_cast<unsigned char*>(alias);
      ASSERT_CUDA_OK(LaunchFillPatternFrom(a, kEdge, 0, seed + i, 0));
      ASSERT_CUDA_OK(LaunchFillPatternFrom(a + kChunk - kEdge, kEdge, kChunk - kEdge, seed + i, 0));
      hosts.push_back(host);
    }
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    size_t bad = 0;
    for (int i = 0; i < chunks; ++i) {
      bad += CountPatternMismatchesIn(hosts[i], 0, kEdge, seed + i);
      bad += CountPatternMismatchesIn(hosts[i], kChunk - kEdge, kChunk, seed + i);
    }
    EXPECT_EQ(bad, 0u) << gpu << "the device's writes through its pointers to both ends of every chunk";
    const MemInfo holding = ReadMemInfo();
    const int64_t seen_pages = ReadPinCounters().balance() - pins_before.balance();
    Observe(gpu + "pins_seen_while_holding_pages", static_cast<long long>(seen_pages));
    const int64_t drop = mem_before.mem_available - holding.mem_available;
    Metric(gpu + "memavailable_drop_while_holding_MiB", static_cast<double>(drop / kMiB), "MiB");
    EXPECT_GE(drop, hold / 2) << gpu << "holding " << hold / kMiB << " MiB lowered MemAvailable by only "
                              << drop / kMiB << " MiB (the check below could not fail)";
    for (HostRegistration& r : registered) EXPECT_CUDA_OK(r.Free()) << gpu << "cudaHostUnregister";
    for (PinnedBuffer& p : allocated) EXPECT_CUDA_OK(p.Free()) << gpu << "cudaFreeHost";
    registered.clear();  // the anonymous regions go too
    allocated.clear();
    ASSERT_CUDA_OK(cudaSetDevice(0));

    const PinReturn back = ExpectPinBalanceReturned(pins_before, quiet, "GPU " + std::to_string(d) + "'s pinning stress",
                                                    10, gpu);
    if (back.kind == PinReturn::kReturned && can_register && seen_pages <= 0) {
      Warn(gpu + "the balance returned, but the FOLL_PIN counters never saw the registrations, so a "
           "leak would not show");
    }
    MemInfo after = ReadMemInfo();
    for (int i = 0; i < 100 && mem_before.mem_available - after.mem_available > slack; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      after = ReadMemInfo();
    }
    Observe(gpu + "memavailable_delta_MiB", static_cast<double>((after.mem_available - mem_before.mem_available) / kMiB));
    EXPECT_LE(mem_before.mem_available - after.mem_available, slack)
        << gpu << "MemAvailable did not return after the frees: "
        << (mem_before.mem_available - after.mem_available) / kMiB << " MiB missing";
  }
}

// ---- Exhaustion on GPU 0 beside GPU 1's copy/verify loop ---------------------------------------

// Pins from GPU 0's context, in containment, until a call fails, the floor or the budget; holds
// what it got for 2 s; frees it. Reports the steady-clock times of each phase (CLOCK_MONOTONIC,
// the parent's clock too) as it goes, so an OOM kill leaves the times it reached.
PAGELOCK_SCENARIO(ExhaustOnGpuZero) {
  const ChildContainment cc = EnterContainment();
  report.Set("containment", cc.ok ? cc.mode : "none: " + cc.error);
  if (!cc.ok) return;  // never pin without containment
  const size_t chunk = static_cast<size_t>(settings::PositiveNumber("PAGELOCK_STRESS_CHUNK_MIB")) << 20;
  const double budget_s = settings::PositiveNumber("PAGELOCK_STRESS_EXHAUST_SECONDS") * TimeScale();
  report.Error("init", cudaSetDevice(0));
  report.Error("context", cudaFree(nullptr));
  const int64_t start = NowNs();
  report.Set("start_ns", static_cast<long long>(start));
  std::vector<void*> chunks;
  std::string stop = "time";
  cudaError_t error = cudaSuccess;
  while ((NowNs() - start) * 1e-9 < budget_s) {
    if (!cc.Allows(static_cast<int64_t>(chunk))) {
      stop = "floor";
      break;
    }
    void* p = nullptr;
    error = cudaHostAlloc(&p, chunk, cudaHostAllocDefault);
    if (error != cudaSuccess) {
      stop = "error";
      break;
    }
    chunks.push_back(p);
    report.Set("pinned_chunks", static_cast<long long>(chunks.size()));
    report.Set("last_pin_ns", static_cast<long long>(NowNs()));
  }
  (void)cudaGetLastError();
  report.Set("stop", stop);
  report.Error("error", error);
  report.Set("stop_ns", static_cast<long long>(NowNs()));
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(2000 * TimeScale())));
  report.Set("release_ns", static_cast<long long>(NowNs()));
  long long failures = 0;
  for (void* p : chunks) failures += cudaFreeHost(p) != cudaSuccess;
  report.Set("release_failures", failures);
  report.Error("sync_end", cudaDeviceSynchronize());
}

// What GPU 1's loop saw (written by its thread, read after the join).
struct LoopResult {
  long long rounds = 0;
  unsigned long long bad = 0;
  cudaError_t error = cudaSuccess;
  std::string failed_call;
  std::vector<int64_t> round_end_ns;
};

// Faults caught: a driver whose failing (or OOM-killed) pinning in one process breaks DMA or
// mappings of another process's work on another GPU (a copy that errors, hangs, or delivers
// other bytes), global driver state (page tables, the pinned-memory pool) left unusable after a
// neighbour's exhaustion; the keys say which round and which call.
TEST_F(MultiGpuAccountingTest, ExhaustionOnGpuZeroLeavesGpuOnesCopyLoopCorrect) {
  PAGELOCK_RULE("C22,R06");
  constexpr size_t kLoopBytes = size_t{64} << 20;
  const double budget_s = settings::PositiveNumber("PAGELOCK_STRESS_EXHAUST_SECONDS") * TimeScale();
  const double limit_s = 2 * budget_s + 180 * TimeScale();
  Budget("loop_copy_MiB", static_cast<double>(kLoopBytes >> 20), "MiB");
  Budget("loop_limit_s", limit_s, "s");
  auto box = Containment::Create("multigpu_exhaust_gpu0", DefaultCgroupCapBytes());
  box->RecordBudgets();
  const bool quiet = PinBalanceIsQuiet();
  const PinCounters pins_before = ReadPinCounters();
  const MemInfo mem_before = ReadMemInfo();
  KernelLogCursor klog;

  // GPU 1's loop: its buffers pinned from its own context, before the child starts.
  ASSERT_CUDA_OK(cudaSetDevice(1));
  PinnedBuffer src = PinnedBuffer::Mapped(kLoopBytes, cudaHostAllocPortable | cudaHostAllocMapped);
  ASSERT_CUDA_OK(src.status());
  PinnedBuffer dst = PinnedBuffer::Mapped(kLoopBytes, cudaHostAllocPortable | cudaHostAllocMapped);
  ASSERT_CUDA_OK(dst.status());
  PinnedBuffer counter = PinnedBuffer::Mapped(sizeof(unsigned long long), cudaHostAllocPortable | cudaHostAllocMapped);
  ASSERT_CUDA_OK(counter.status());
  DeviceBuffer dev(kLoopBytes);
  ASSERT_CUDA_OK(dev.status());
  OwnedStream stream(cudaStreamNonBlocking);
  ASSERT_CUDA_OK(stream.status());
  ASSERT_CUDA_OK(cudaSetDevice(0));

  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  std::atomic<bool> child_done{false};
  std::atomic<long long> rounds_done{0};
  std::atomic<bool> worker_exited{false};
  LoopResult loop;
  auto body = [&] {
    const auto start = std::chrono::steady_clock::now();
    long long after_child = 0;
    auto* bad = counter.as<unsigned long long>();
    auto fail = [&](const char* call, cudaError_t e) {
      loop.error = e;
      loop.failed_call = std::string(call) + " in round " + std::to_string(loop.rounds);
    };
    cudaError_t e = cudaSetDevice(1);
    if (e != cudaSuccess) return fail("cudaSetDevice(1)", e);
    // Until the child is gone and three more rounds are done, bounded.
    while (after_child < 3 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < limit_s) {
      const uint32_t s = seed + static_cast<uint32_t>(loop.rounds);
      *bad = 0;
      if ((e = LaunchFillPattern(src.dev(), kLoopBytes, s, stream.get())) != cudaSuccess) return fail("fill", e);
      // copy-check: the round trip is counted in dst below
      if ((e = cudaMemcpyAsync(dev.get(), src.host(), kLoopBytes, cudaMemcpyHostToDevice, stream.get())) != cudaSuccess)
        return fail("cudaMemcpyAsync H2D", e);
      if ((e = LaunchFillPattern(dst.dev(), kLoopBytes, ~s, stream.get())) != cudaSuccess) return fail("poison", e);
      // copy-check: the round trip is counted in dst below
      if ((e = cudaMemcpyAsync(dst.host(), dev.get(), kLoopBytes, cudaMemcpyDeviceToHost, stream.get())) != cudaSuccess)
        return fail("cudaMemcpyAsync D2H", e);
      if ((e = LaunchCountPatternMismatches(dst.dev(), kLoopBytes, s, reinterpret_cast<unsigned long long*>(counter.dev()),
                                            stream.get())) != cudaSuccess)
        return fail("count", e);
      if ((e = cudaStreamSynchronize(stream.get())) != cudaSuccess) return fail("cudaStreamSynchronize", e);
      loop.bad += *bad;
      loop.round_end_ns.push_back(NowNs());
      ++loop.rounds;
      rounds_done.store(loop.rounds);
      if (child_done.load()) ++after_child;
    }
  };
  std::thread worker([&] {
    body();
    worker_exited.store(true);
  });
  // The loop is running before the child starts (bounded wait).
  for (int i = 0; i < 1000 && rounds_done.load() == 0 && !worker_exited.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ChildResult r = RunScenario("ExhaustOnGpuZero", 2 * budget_s + 120, box->ChildEnv());
  const int64_t child_end = NowNs();
  child_done.store(true);
  worker.join();
  const CgroupEvents ev = box->Events();
  const std::vector<std::string> log = klog.Lines(PinningFailureLogNeedles());
  box.reset();  // the cgroup goes before the balance checks below
  bool oom = ev.available && ev.oom_kill > 0;
  for (const std::string& line : log) oom = oom || line.find("oom") != std::string::npos ||
                                            line.find("Out of memory") != std::string::npos;

  // How the child's exhaustion ended: recorded (ExhaustionTest judges it, C06).
  std::string outcome;
  if (r.timed_out) outcome = "hang";
  else if (r.term_signal == SIGKILL && oom) outcome = "oom_killed";
  else if (r.term_signal != 0) outcome = "crash " + SignalName(r.term_signal);
  else if (!r.completed()) outcome = "error";
  else if (r.Get("stop") == "error") outcome = r.Get("error") == "cudaErrorMemoryAllocation" ? "memory_allocation" : "other_error";
  else outcome = "stopped_by_" + r.Get("stop");
  Observe("gpu0_exhaustion_outcome", outcome);
  Observe("gpu0_containment", r.Get("containment"));
  std::string lines;
  for (const std::string& line : log) lines += (lines.empty() ? "" : " | ") + line;
  Observe("kernel_log", klog.why_not().empty() ? lines : "unavailable: " + klog.why_not());
  Metric("gpu0_pinned_GiB", std::atoll(r.Get("pinned_chunks").c_str()) * settings::PositiveNumber("PAGELOCK_STRESS_CHUNK_MIB") / 1024,
         "GiB");
  if (r.Get("containment").rfind("none", 0) == 0 || r.Get("containment") == "<missing>") {
    ADD_FAILURE() << "the child did not pin (no containment): " << r.Describe();
  }
  if (outcome == "hang" || outcome.rfind("crash", 0) == 0 || outcome == "error") NoteChildOutcome(r);
  if (outcome != "memory_allocation" && outcome != "oom_killed") {
    Warn("exhaustion on GPU 0 not reached: " + outcome + " (containment " + r.Get("containment") + ")");
  }

  // GPU 1's loop: every round without error and with every byte, and rounds while GPU 0 pinned.
  EXPECT_EQ(loop.error, cudaSuccess) << "GPU 1's loop: " << loop.failed_call << " returned " << DescribeCuda(loop.error);
  EXPECT_EQ(loop.bad, 0u) << "GPU 1's loop delivered other bytes over " << loop.rounds << " rounds";
  const int64_t pin_start = std::atoll(r.Get("start_ns").c_str());
  const int64_t pin_end = r.Get("release_ns") != "<missing>" ? std::atoll(r.Get("release_ns").c_str()) : child_end;
  const int64_t exhausted_from = r.Get("stop_ns") != "<missing>" ? std::atoll(r.Get("stop_ns").c_str())
                                                                  : std::atoll(r.Get("last_pin_ns").c_str());
  long long while_pinning = 0, while_exhausted = 0;
  for (int64_t t : loop.round_end_ns) {
    while_pinning += pin_start > 0 && t >= pin_start && t <= pin_end;
    while_exhausted += exhausted_from > 0 && t >= exhausted_from && t <= pin_end;
  }
  Metric("gpu1_rounds_count", static_cast<double>(loop.rounds), "count");
  Metric("gpu1_rounds_while_gpu0_pinned_count", static_cast<double>(while_pinning), "count");
  Metric("gpu1_rounds_while_gpu0_exhausted_count", static_cast<double>(while_exhausted), "count");
  if (pin_start > 0) {
    EXPECT_GT(while_pinning, 0) << "no round of GPU 1's loop completed while GPU 0's context pinned";
  }

  ASSERT_CUDA_OK(cudaSetDevice(1));
  EXPECT_CUDA_OK(stream.Free());
  EXPECT_CUDA_OK(dev.Free());
  EXPECT_CUDA_OK(counter.Free());
  EXPECT_CUDA_OK(dst.Free());
  EXPECT_CUDA_OK(src.Free());
  ASSERT_CUDA_OK(cudaSetDevice(0));
  // The machine is left as found: the child's pins and the loop's are back (bounded waits).
  ExpectPinBalanceReturned(pins_before, quiet, "the exhausting child exited and GPU 1's loop freed", 20);
  MemInfo mem_after = ReadMemInfo();
  for (int i = 0; i < 200 && mem_before.mem_available - mem_after.mem_available > 2 * kGiB; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    mem_after = ReadMemInfo();
  }
  EXPECT_LE(mem_before.mem_available - mem_after.mem_available, 2 * kGiB) << "MemAvailable did not come back";
}

}  // namespace
}  // namespace pagelock
