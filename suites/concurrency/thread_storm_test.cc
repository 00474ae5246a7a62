// Host-thread storms: many threads calling the pinning API at once. Every call succeeds or
// fails as documented, every round trip through a device pointer is exact, nothing deadlocks
// (each storm has a watchdog), the pinned tracker ends where it started, and the kernel's pin
// balance (folded /proc/vmstat counters, fixtures/kernel_accounting.h) is back exactly: the
// tracker sees only the harness's own successful calls, the kernel sees what the driver pinned.
// Budgets (environment; recorded in the results; the stress build has larger defaults):
//   PAGELOCK_STORM_THREADS   worker threads of the round-trip storm (full 8, stress 16)
//   PAGELOCK_STORM_SECONDS   time budget of the round-trip storm    (full 0.5, stress 10)
//   PAGELOCK_STORM_ROUNDS    rounds of the registration races       (full 20, stress 200)
// On a machine with several GPUs the round-trip workers use them in turn (worker i: device
// i mod count). Rule ids refer to suites/rules.tsv.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/deviations.h"
#include "fixtures/driver_api.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/kernel_accounting.h"
#include "fixtures/mapping.h"
#include "fixtures/resources.h"
#include "fixtures/settings.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"
#include "fixtures/storm.h"

namespace pagelock {
namespace {

#ifdef PAGELOCK_STRESS_TIER
constexpr double kThreads = 16, kSeconds = 10, kRounds = 200;
#else
constexpr double kThreads = 8, kSeconds = 0.5, kRounds = 20;
#endif
constexpr double kGraceS = 30;  // after the budget, before a worker counts as stuck

int StormThreads() { return static_cast<int>(settings::PositiveNumber("PAGELOCK_STORM_THREADS", kThreads)); }
double StormSeconds() { return settings::PositiveNumber("PAGELOCK_STORM_SECONDS", kSeconds); }
int StormRounds() { return static_cast<int>(settings::PositiveNumber("PAGELOCK_STORM_ROUNDS", kRounds)); }

// Waits for a stream without risking a hang: polls with a limit (scaled).
cudaError_t BoundedSync(cudaStream_t s, double limit_s = 20) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(limit_s * TimeScale());
  for (;;) {
    cudaError_t e = cudaStreamQuery(s);
    if (e != cudaErrorNotReady) return e;
    if (std::chrono::steady_clock::now() > deadline) return cudaErrorNotReady;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// Fails the case when a storm hung (and stops the binary after it: a stuck driver thread makes
// every later case suspect), or when a worker found a problem.
void ExpectCleanStorm(const StormResult& r) {
  Observe("storm_seconds", r.seconds);
  if (!r.finished) {
    MarkPoisoned();
    ADD_FAILURE() << "storm did not finish within its budget + " << kGraceS
                  << " s (deadlock?):\n" << r.Summary();
    return;
  }
  EXPECT_TRUE(r.problems.empty()) << r.problems.size() << " problem(s):\n" << r.Summary();
}

class ThreadStormTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
    ASSERT_CUDA_OK(cudaFree(nullptr));  // the context exists before the threads race
  }
};

TEST_F(ThreadStormTest, RacingRegistrationsOfOneRangeHaveExactlyOneWinner) {
  PAGELOCK_RULE("R31,R36,C01");
  const int threads = 8, rounds = StormRounds();
  Budget("threads_count", threads, "count");
  Budget("rounds_count", rounds, "count");
  Mapping m(16 * PageSize());
  ASSERT_NE(m.data(), nullptr);
  for (int round = 0; round < rounds && !HasFailure(); ++round) {
    std::vector<cudaError_t> got(threads, cudaErrorUnknown);
    StormResult r = RunStorm(threads, 0, kGraceS, [&](StormWorker& w) {
      (void)cudaSetDevice(0);
      w.Doing("cudaHostRegister");
      got[w.index()] = cudaHostRegister(m.data(), m.size(), 0);
      (void)cudaGetLastError();  // the losers' error is the result, not a leftover
    });
    ExpectCleanStorm(r);
    if (!r.finished) return;
    const int winners = static_cast<int>(std::count(got.begin(), got.end(), cudaSuccess));
    const int already = static_cast<int>(
        std::count(got.begin(), got.end(), cudaErrorHostMemoryAlreadyRegistered));
    EXPECT_EQ(winners, 1) << "round " << round << ": racing registrations of one range";
    EXPECT_EQ(already, threads - winners)
        << "round " << round << ": every loser must get cudaErrorHostMemoryAlreadyRegistered";
    for (int i = 0; i < threads; ++i) {
      if (got[i] != cudaSuccess && got[i] != cudaErrorHostMemoryAlreadyRegistered) {
        ADD_FAILURE() << "round " << round << " worker " << i << ": " << DescribeCuda(got[i]);
      }
    }
    if (winners < 1) continue;
    // Another thread than the winner unregisters; then a second unregister finds nothing.
    cudaError_t unregister = cudaErrorUnknown;
    std::thread([&] { unregister = cudaHostUnregister(m.data()); }).join();
    EXPECT_CUDA_OK(unregister) << "round " << round << ": unregister from another thread";
    EXPECT_CUDA_ERROR(cudaErrorHostMemoryNotRegistered, cudaHostUnregister(m.data()))
        << "round " << round;
  }
}

TEST_F(ThreadStormTest, RacingOverlappingRegistrationsLeaveDisjointWinners) {
  PAGELOCK_RULE("R30,C01");
  // Worker i registers pages [4i, 4i + 6): each range overlaps both neighbours by two pages.
  const int threads = 8, rounds = StormRounds();
  const size_t page = PageSize(), stride = 4 * page, length = 6 * page;
  Budget("threads_count", threads, "count");
  Budget("rounds_count", rounds, "count");
  Mapping m(stride * threads + length);
  ASSERT_NE(m.data(), nullptr);
  for (int round = 0; round < rounds && !HasFailure(); ++round) {
    std::vector<cudaError_t> got(threads, cudaErrorUnknown);
    StormResult r = RunStorm(threads, 0, kGraceS, [&](StormWorker& w) {
      (void)cudaSetDevice(0);
      w.Doing("cudaHostRegister");
      got[w.index()] = cudaHostRegister(m.data() + w.index() * stride, length, 0);
      (void)cudaGetLastError();
    });
    ExpectCleanStorm(r);
    if (!r.finished) return;
    std::vector<int> winners;
    for (int i = 0; i < threads; ++i) {
      if (got[i] == cudaSuccess) {
        winners.push_back(i);
      } else {
        EXPECT_CUDA_ERROR(cudaErrorHostMemoryAlreadyRegistered, got[i]) << "round " << round << " worker " << i;
      }
    }
    EXPECT_FALSE(winners.empty()) << "round " << round << ": nobody could register";
    for (size_t k = 1; k < winners.size(); ++k) {
      EXPECT_GE(winners[k] - winners[k - 1], 2)
          << "round " << round << ": overlapping ranges " << winners[k - 1] << " and " << winners[k]
          << " were both registered";
    }
    for (int i = 0; i < threads; ++i) {
      // A loser failed because of a registration that existed when it called: a winner's.
      const bool overlaps_winner = std::any_of(winners.begin(), winners.end(),
                                               [&](int w) { return std::abs(w - i) <= 1; });
      if (got[i] != cudaSuccess) {
        EXPECT_TRUE(overlaps_winner) << "round " << round << ": worker " << i
                                     << " was refused but overlaps no registration";
      }
    }
    for (int w : winners) EXPECT_CUDA_OK(cudaHostUnregister(m.data() + w * stride));
  }
}

// Brings every device the storm uses to the state the storm leaves it in: context, stream,
// kernel, registration and mapped allocation each used once, so what the driver pins once per
// device (the primary context's own pins, 2,048 pages on the H200) is in the pin baseline.
void WarmEveryDevice(int devices) {
  for (int dev = 0; dev < std::max(devices, 1); ++dev) {
    ASSERT_CUDA_OK(cudaSetDevice(dev));
    ASSERT_CUDA_OK(cudaFree(nullptr));
    cudaStream_t s = nullptr;
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void* host = nullptr;
    ASSERT_CUDA_OK(cudaHostAlloc(&host, 4096, cudaHostAllocMapped | cudaHostAllocPortable));
    void* dev_ptr = nullptr;
    ASSERT_CUDA_OK(cudaHostGetDevicePointer(&dev_ptr, host, 0));
    ASSERT_CUDA_OK(LaunchInvertBytes(dev_ptr, 4096, s));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s));
    ASSERT_CUDA_OK(cudaFreeHost(host));
    Mapping m(64 << 10);
    ASSERT_NE(m.data(), nullptr);
    ASSERT_CUDA_OK(cudaHostRegister(m.data(), m.size(), cudaHostRegisterMapped | cudaHostRegisterPortable));
    ASSERT_CUDA_OK(cudaHostUnregister(m.data()));
    ASSERT_CUDA_OK(cudaStreamDestroy(s));
  }
  ASSERT_CUDA_OK(cudaSetDevice(0));
}

// One pinned buffer handed from one thread to another for flags and free (cross-thread use).
struct Handoff {
  void* p;
  unsigned flags;
};

TEST_F(ThreadStormTest, RoundTripsOnManyThreadsAreExactAndLeaveNothingPinned) {
  PAGELOCK_RULE("R19,R26,R33,R51,R56,R57,C02");
  const int threads = StormThreads();
  const double seconds = StormSeconds();
  const int devices = static_cast<int>(Probe().devices.size());
  Budget("threads_count", threads, "count");
  Budget("time_s", seconds * TimeScale(), "s");
  Observe("devices_used", devices);
  WarmEveryDevice(devices);
  if (HasFatalFailure()) return;
  const PinnedSnapshot before = LivePinned();
  const bool pins_quiet_before = PinBalanceIsQuiet();
  const PinCounters pins_before = ReadPinCounters();
  const uint64_t seed = CaseSeed();
  std::mutex mailbox_mu;
  std::deque<Handoff> mailbox;
  std::atomic<long long> flag_checks{0}, portable_excused{0};
  // Where the expectations name r56-portable for this SKU and driver (recorded), a Portable bit
  // that differs is excused and counted; elsewhere it is a problem like any other flag.
  const bool excuse_portable = DeviationApplies("r56-portable");
  StormResult r = RunStorm(threads, seconds, kGraceS, [&](StormWorker& w) {
    std::mt19937_64 rng(seed + static_cast<uint64_t>(w.index()));
    const int dev = w.index() % std::max(devices, 1);
    cudaStream_t stream = nullptr;
    w.Doing("cudaSetDevice");
    cudaError_t e = cudaSetDevice(dev);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
      w.Problem("setup on device " + std::to_string(dev) + ": " + DescribeCuda(e));
      return;
    }
    auto check = [&](const char* call, cudaError_t got) {
      if (got != cudaSuccess) w.Problem(std::string(call) + ": " + DescribeCuda(got));
      return got == cudaSuccess;
    };
    while (w.TimeLeft() && w.problems().empty()) {
      const size_t n = 1 + rng() % (256 << 10);
      const int path = static_cast<int>(rng() % 3);  // 0 HostAlloc, 1 MallocHost, 2 Register
      const uint32_t pattern = static_cast<uint32_t>(rng());
      void* host = nullptr;
      void* plain = nullptr;  // the malloc'ed block behind a registration
      // Mapped always (the round trip needs the device pointer); Portable and WriteCombined
      // drawn, so the flag check below compares bits that differ between allocations.
      unsigned flags = cudaHostAllocMapped;
      if (rng() % 2) flags |= cudaHostAllocPortable;
      if (rng() % 3 == 0) flags |= cudaHostAllocWriteCombined;
      if (path == 0) {
        w.Doing("cudaHostAlloc");
        if (!check("cudaHostAlloc", cudaHostAlloc(&host, n, flags))) break;
      } else if (path == 1) {
        w.Doing("cudaMallocHost");
        if (!check("cudaMallocHost", cudaMallocHost(&host, n))) break;
      } else {
        // Whole pages of its own, so no two workers' registrations share a page (R32 is
        // version-dependent).
        const size_t page = PageSize();
        plain = std::aligned_alloc(page, (n + page - 1) / page * page);
        host = plain;
        w.Doing("cudaHostRegister");
        if (!check("cudaHostRegister",
                   cudaHostRegister(host, n, cudaHostRegisterMapped | cudaHostRegisterPortable))) {
          std::free(plain);
          break;
        }
      }
      HostFillPattern(host, n, pattern);
      void* dev_ptr = nullptr;
      w.Doing("cudaHostGetDevicePointer");
      bool ok = check("cudaHostGetDevicePointer", cudaHostGetDevicePointer(&dev_ptr, host, 0));
      if (ok) {
        w.Doing("LaunchInvertBytes");
        ok = check("LaunchInvertBytes", LaunchInvertBytes(dev_ptr, n, stream));
      }
      if (ok) {
        w.Doing("cudaStreamQuery (bounded wait)");
        ok = check("kernel completion", BoundedSync(stream));
      }
      if (ok) {
        const size_t bad = HostCountPatternMismatches(host, n, pattern, 0xff);
        if (bad) w.Problem(std::to_string(bad) + " of " + std::to_string(n) + " bytes not inverted (path " +
                           std::to_string(path) + ", device " + std::to_string(dev) + ")");
      }
      if (path == 2) {
        w.Doing("cudaHostUnregister");
        check("cudaHostUnregister", cudaHostUnregister(host));
        std::free(plain);
      } else if (path == 0 && rng() % 2) {
        // Someone else queries its flags and frees it.
        std::lock_guard<std::mutex> lock(mailbox_mu);
        mailbox.push_back({host, flags});
      } else {
        w.Doing("cudaFreeHost");
        check("cudaFreeHost", cudaFreeHost(host));
      }
      Handoff other{nullptr, 0};
      {
        std::lock_guard<std::mutex> lock(mailbox_mu);
        if (!mailbox.empty() && rng() % 2) {
          other = mailbox.front();
          mailbox.pop_front();
        }
      }
      if (other.p) {
        unsigned got = 0;
        w.Doing("cudaHostGetFlags (another thread's allocation)");
        // R56/R57: Mapped, WriteCombined and Portable as requested (WriteCombined and Portable
        // both ways: neither is reported for an allocation that did not ask for it). r580
        // reports the Portable bit of whichever allocation opened the shared pinned chunk
        // (docs/platforms/driver-r580.md#r56-portable, asserted by
        // HostAllocTest.GetFlagsOfASmallAllocationAfterAnotherKeepsItsPortableBit).
        const unsigned wc = cudaHostAllocWriteCombined, portable = cudaHostAllocPortable;
        if (check("cudaHostGetFlags", cudaHostGetFlags(&got, other.p))) {
          ++flag_checks;
          if ((got & cudaHostAllocMapped) == 0 || (got & wc) != (other.flags & wc)) {
            w.Problem("cudaHostGetFlags from another thread returned " + std::to_string(got) +
                      " for an allocation made with " + std::to_string(other.flags) +
                      ": Mapped missing or WriteCombined differs");
          }
          if ((got & portable) != (other.flags & portable)) {
            if (excuse_portable) {
              ++portable_excused;
            } else {
              w.Problem("cudaHostGetFlags from another thread returned " + std::to_string(got) +
                        " for an allocation made with " + std::to_string(other.flags) +
                        ": Portable differs (R56)");
            }
          }
        }
        w.Doing("cudaFreeHost (another thread's allocation)");
        check("cudaFreeHost of another thread's allocation", cudaFreeHost(other.p));
      }
      ++w.iterations;
    }
    w.Doing("cudaStreamDestroy");
    check("cudaStreamDestroy", cudaStreamDestroy(stream));
  });
  ExpectCleanStorm(r);
  if (!r.finished) return;
  for (const Handoff& h : mailbox) EXPECT_CUDA_OK(cudaFreeHost(h.p));
  Metric("round_trips_count", static_cast<double>(r.iterations), "count");
  Observe("cross_thread_flag_checks", flag_checks.load());
  if (excuse_portable) RecordExcused("r56-portable", static_cast<uint64_t>(portable_excused.load()));
  // What the driver pinned comes back, to the page (the tracker above sees only our own calls).
  ExpectPinBalanceReturned(pins_before, pins_quiet_before, "the round-trip storm", 10);
  Metric("round_trips_per_s", r.iterations / std::max(r.seconds, 1e-9), "1/s");
  EXPECT_EQ(r.workers_without_iterations, 0) << "some workers never completed a round trip";
  const PinnedSnapshot after = LivePinned();
  EXPECT_EQ(after.allocations.size(), before.allocations.size()) << "pinned allocations left behind";
  EXPECT_EQ(after.registrations.size(), before.registrations.size()) << "registrations left behind";
}

TEST_F(ThreadStormTest, FlagsAndFreeFromAnotherThreadSeeTheAllocation) {
  PAGELOCK_RULE("R19,R56,R57,C02");
  const unsigned combos[] = {cudaHostAllocDefault, cudaHostAllocMapped, cudaHostAllocPortable,
                             cudaHostAllocWriteCombined, cudaHostAllocMapped | cudaHostAllocPortable};
  for (unsigned flags : combos) {
    void* p = nullptr;
    cudaError_t alloc = cudaErrorUnknown;
    std::thread([&] {
      alloc = cudaSetDevice(0);
      if (alloc == cudaSuccess) alloc = cudaHostAlloc(&p, 1 << 20, flags);
    }).join();
    ASSERT_CUDA_OK(alloc) << "flags " << flags;
    unsigned got = 0;
    EXPECT_CUDA_OK(cudaHostGetFlags(&got, p));
    EXPECT_EQ(got & flags, flags) << "requested flags " << flags << ", reported " << got;
    cudaError_t freed = cudaErrorUnknown;
    std::thread([&] { freed = cudaFreeHost(p); }).join();
    EXPECT_CUDA_OK(freed) << "cudaFreeHost from a third thread, flags " << flags;
    unsigned after = 0;
    EXPECT_CUDA_ERROR(cudaErrorInvalidValue, cudaHostGetFlags(&after, p))
        << "the freed block still has flags";
  }
}

// A worker of the flag storms: pinned H2D copy, a kernel, D2H copy, every byte checked, until
// the budget ends. synchronous: cudaMemcpy and the legacy stream (the memory operations
// CU_CTX_SYNC_MEMOPS is about); else cudaMemcpyAsync on a non-blocking stream, waited for with
// a bound.
void RoundTrips(StormWorker& w, bool synchronous) {
  const size_t n = 1 << 20;
  void *src = nullptr, *dst = nullptr, *dev = nullptr;
  cudaStream_t stream = nullptr;
  cudaError_t e = cudaHostAlloc(&src, n, 0);
  if (e == cudaSuccess) e = cudaHostAlloc(&dst, n, 0);
  if (e == cudaSuccess) e = cudaMalloc(&dev, n);
  // Released by the owners at the end, after the stream: dev, src, then dst (reverse declaration).
  PinnedBuffer own_dst = PinnedBuffer::Adopt(dst, n), own_src = PinnedBuffer::Adopt(src, n);
  DeviceBuffer own_dev = DeviceBuffer::Adopt(dev, n);
  if (e == cudaSuccess && !synchronous) e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  uint32_t seed = static_cast<uint32_t>(w.index()) << 24;
  while (e == cudaSuccess && w.TimeLeft()) {
    ++seed;
    HostFillPattern(src, n, seed);
    if (synchronous) {
      // The legacy stream orders the kernel between the copies; the D2H copy returns when done.
      w.Doing("cudaMemcpy / LaunchInvertBytes (legacy stream)");
      e = cudaMemcpy(dev, src, n, cudaMemcpyHostToDevice);
      if (e == cudaSuccess) e = LaunchInvertBytes(dev, n, cudaStreamLegacy);
      if (e == cudaSuccess) e = cudaMemcpy(dst, dev, n, cudaMemcpyDeviceToHost);
    } else {
      w.Doing("cudaMemcpyAsync / LaunchInvertBytes");
      e = cudaMemcpyAsync(dev, src, n, cudaMemcpyHostToDevice, stream);
      if (e == cudaSuccess) e = LaunchInvertBytes(dev, n, stream);
      if (e == cudaSuccess) e = cudaMemcpyAsync(dst, dev, n, cudaMemcpyDeviceToHost, stream);
      w.Doing("cudaStreamQuery (bounded wait)");
      if (e == cudaSuccess) e = BoundedSync(stream);
    }
    if (e == cudaSuccess) {
      const size_t bad = HostCountPatternMismatches(dst, n, seed, 0xff);
      if (bad) w.Problem(std::to_string(bad) + " bytes wrong after a round trip");
    }
    ++w.iterations;
  }
  if (e != cudaSuccess) w.Problem(DescribeCuda(e));
  w.Doing("cleanup");
  if (stream) (void)cudaStreamDestroy(stream);
}

// Second phase of the DeviceFlags child: one thread keeps changing the scheduling flag while the
// others run pinned copies and kernels (peer case 22). Nothing deadlocks, every round trip is
// exact, and the flag set last is the one reported. Keys are prefixed "work_".
bool FlagChangesDuringWork(ScenarioReport& report, double seconds) {
  const unsigned schedules[] = {cudaDeviceScheduleSpin, cudaDeviceScheduleYield,
                                cudaDeviceScheduleBlockingSync, cudaDeviceScheduleAuto};
  StormResult r = RunStorm(4, seconds, 30, [&](StormWorker& w) {
    if (w.index() == 0) {
      while (w.TimeLeft()) {
        const unsigned f = schedules[w.iterations % 4];
        w.Doing("cudaSetDeviceFlags");
        cudaError_t e = cudaSetDeviceFlags(f);
        unsigned got = 0;
        w.Doing("cudaGetDeviceFlags");
        if (e == cudaSuccess) e = cudaGetDeviceFlags(&got);
        if (e != cudaSuccess) {
          w.Problem("flags " + std::to_string(f) + ": " + DescribeCuda(e));
          return;
        }
        ++w.iterations;
      }
      return;
    }
    RoundTrips(w, /*synchronous=*/false);
  });
  report.Set("work_finished", r.finished ? "1" : "0");
  report.Set("work_problems", r.Summary());
  report.Set("work_workers_without_iterations", r.workers_without_iterations);
  report.Set("work_iterations", r.iterations);
  if (!r.finished) return false;
  report.Error("work_final_set", cudaSetDeviceFlags(cudaDeviceScheduleYield));
  unsigned final_flags = 0;
  report.Error("work_final_get", cudaGetDeviceFlags(&final_flags));
  report.Set("work_final_flags", static_cast<long long>(final_flags));
  return true;
}

#if CUDA_VERSION >= 12010
using CtxSetFlagsFn = CUresult (*)(unsigned);

// cuCtxSetFlags (CUDA 12.1) stays outside the kit's table (fixtures/driver_api.h): a 12.1 build
// may run on a 12.0 driver, which lacks it, and the table must still load there.
CtxSetFlagsFn LookupCtxSetFlags(std::string* why) {
  return reinterpret_cast<CtxSetFlagsFn>(DriverEntryPoint("cuCtxSetFlags", 12010, why));
}

// The bits cuCtxSetFlags was given, as cuCtxGetFlags must report them: CU_CTX_SYNC_MEMOPS, and
// the scheduling bits unless they were CU_CTX_SCHED_AUTO (the driver may report its choice).
bool CtxFlagsMatch(unsigned got, unsigned set) {
  const unsigned sched = set & CU_CTX_SCHED_MASK;
  return (got & CU_CTX_SYNC_MEMOPS) == (set & CU_CTX_SYNC_MEMOPS) &&
         (sched == CU_CTX_SCHED_AUTO || (got & CU_CTX_SCHED_MASK) == sched);
}
#endif

// Third phase of the DeviceFlags child (C6, the driver path): one thread keeps changing the
// primary context's flags with cuCtxSetFlags (CU_CTX_SYNC_MEMOPS on and off, every scheduling
// flag) and reads them back with cuCtxGetFlags, while the others run pinned async copies and
// kernels, and synchronous copies on the legacy stream. Keys are prefixed "ctx_";
// "ctx_unsupported" says why the phase could not run.
void CtxFlagChangesDuringWork(ScenarioReport& report, double seconds) {
#if CUDA_VERSION < 12010
  (void)seconds;
  report.Set("ctx_unsupported", "cuCtxSetFlags is CUDA 12.1 API; built with CUDA_VERSION=" +
                                    std::to_string(CUDA_VERSION));
#else
  int driver = 0;
  report.Error("ctx_driver_version_call", cudaDriverGetVersion(&driver));
  if (driver < 12010) {
    return report.Set("ctx_unsupported", "cudaDriverGetVersion=" + std::to_string(driver) +
                                             " (cuCtxSetFlags needs 12010)");
  }
  const DriverApi& d = Driver();
  if (!d.loaded) return report.Set("ctx_unsupported", d.error);
  std::string why;
  const CtxSetFlagsFn set_flags = LookupCtxSetFlags(&why);
  if (!set_flags) return report.Set("ctx_unsupported", why);
  // The primary context current in this thread too (the earlier phases made their runtime
  // calls on worker threads): the final cuCtxGetFlags reads it.
  report.Error("ctx_main_init", cudaFree(nullptr));
  const unsigned schedules[] = {CU_CTX_SCHED_AUTO, CU_CTX_SCHED_SPIN, CU_CTX_SCHED_YIELD, CU_CTX_SCHED_BLOCKING_SYNC};
  std::atomic<unsigned> last_set{0};
  StormResult r = RunStorm(4, seconds, 30, [&](StormWorker& w) {
    if (w.index() != 0) return RoundTrips(w, /*synchronous=*/w.index() == 3);
    // The runtime makes its primary context current in this thread: cuCtx* act on it.
    w.Doing("cudaFree(0)");
    const cudaError_t init = cudaFree(nullptr);
    if (init != cudaSuccess) return w.Problem("cudaFree(0): " + DescribeCuda(init));
    while (w.TimeLeft()) {
      // The first one is cuCtxSetFlags(CU_CTX_SYNC_MEMOPS) alone (CU_CTX_SCHED_AUTO is 0).
      const unsigned i = static_cast<unsigned>(w.iterations);
      const unsigned f = schedules[i % 4] | ((i / 4) % 2 == 0 ? unsigned{CU_CTX_SYNC_MEMOPS} : 0u);
      w.Doing("cuCtxSetFlags");
      CUresult e = set_flags(f);
      if (e == CUDA_SUCCESS) last_set = f;
      unsigned got = 0;
      w.Doing("cuCtxGetFlags");
      if (e == CUDA_SUCCESS) e = d.cuCtxGetFlags(&got);
      if (e != CUDA_SUCCESS) return w.Problem("flags " + std::to_string(f) + ": " + DescribeCu(e));
      if (!CtxFlagsMatch(got, f)) {
        return w.Problem("cuCtxSetFlags(" + std::to_string(f) + ") then cuCtxGetFlags = " + std::to_string(got));
      }
      ++w.iterations;
    }
  });
  report.Set("ctx_finished", r.finished ? "1" : "0");
  report.Set("ctx_problems", r.Summary());
  report.Set("ctx_workers_without_iterations", r.workers_without_iterations);
  report.Set("ctx_iterations", r.iterations);
  if (!r.finished) return;
  unsigned final_flags = 0;
  report.Cu("ctx_final_get", d.cuCtxGetFlags(&final_flags));
  report.Set("ctx_final_flags", static_cast<long long>(final_flags));
  report.Set("ctx_last_set", static_cast<long long>(last_set.load()));
  report.Set("ctx_final_matches", CtxFlagsMatch(final_flags, last_set.load()) ? "1" : "0");
#endif
}

// Fresh process: threads race cudaGetDeviceFlags, first calls that create the context, pinned
// allocations and one cudaSetDeviceFlags, all released together.
PAGELOCK_SCENARIO(DeviceFlags) {
  constexpr int kThreadsHere = 10;
  std::vector<cudaError_t> got(kThreadsHere, cudaErrorUnknown);
  std::vector<unsigned> flags(kThreadsHere, 0);
  StormResult r = RunStorm(kThreadsHere, 0, 30, [&](StormWorker& w) {
    const int i = w.index();
    if (i < 4) {
      w.Doing("cudaGetDeviceFlags");
      got[i] = cudaGetDeviceFlags(&flags[i]);
    } else if (i < 7) {
      w.Doing("cudaFree(0)");
      got[i] = cudaFree(nullptr);
    } else if (i < 9) {
      void* p = nullptr;
      w.Doing("cudaHostAlloc");
      got[i] = cudaHostAlloc(&p, 1 << 20, cudaHostAllocMapped);
      if (got[i] == cudaSuccess) got[i] = cudaFreeHost(p);
    } else {
      w.Doing("cudaSetDeviceFlags");
      got[i] = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
    }
  });
  report.Set("finished", r.finished ? "1" : "0");
  report.Set("stuck", r.Summary());
  if (!r.finished) return;  // the parent fails on finished=0 (the exit may hang: a timeout)
  for (int i = 0; i < kThreadsHere; ++i) {
    report.Error("call_" + std::to_string(i), got[i]);
    if (i < 4) report.Set("flags_" + std::to_string(i), static_cast<long long>(flags[i]));
  }
  unsigned final_flags = 0;
  report.Error("final_get", cudaGetDeviceFlags(&final_flags));
  report.Set("final_flags", static_cast<long long>(final_flags));
  const double seconds = std::atof(ScenarioArg().c_str());
  if (FlagChangesDuringWork(report, seconds)) CtxFlagChangesDuringWork(report, seconds / 2);
}

// One child runs both phases (a fresh process per phase would double the context start-up).
const ChildResult& DeviceFlagsChild() {
  return SharedScenario("DeviceFlags", StormSeconds() + 120, {ScenarioArgEnv(std::to_string(StormSeconds()))});
}

TEST(DeviceFlagsRaceTest, FlagQueriesRacingFirstCallsAllSucceedAndTheSetFlagSticks) {
  PAGELOCK_RULE("R59,R62,R65,C03");
  PAGELOCK_REQUIRE(RequireUsableDevice());
  const ChildResult& r = DeviceFlagsChild();
  Observe("child_stuck", r.Get("stuck"));
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("finished"), "1") << "threads stuck (deadlock?): " << r.Get("stuck");
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(r.Get("call_" + std::to_string(i)), "cudaSuccess") << "racing call " << i
        << (i < 4 ? " (cudaGetDeviceFlags)" : i < 7 ? " (cudaFree(0))" : i < 9 ? " (cudaHostAlloc)" : " (cudaSetDeviceFlags)");
  }
  for (int i = 0; i < 4; ++i) {
    const unsigned f = static_cast<unsigned>(std::atoll(r.Get("flags_" + std::to_string(i)).c_str()));
    EXPECT_EQ(f & ~static_cast<unsigned>(cudaDeviceMask), 0u) << "bits outside cudaDeviceMask: " << f;
  }
  EXPECT_EQ(r.Get("final_get"), "cudaSuccess");
  const unsigned final_flags = static_cast<unsigned>(std::atoll(r.Get("final_flags").c_str()));
  Observe("final_flags", static_cast<unsigned long long>(final_flags));
  EXPECT_EQ(final_flags & cudaDeviceScheduleMask, static_cast<unsigned>(cudaDeviceScheduleBlockingSync))
      << "the scheduling flag set during the race is not what the device reports afterwards";
}

TEST(DeviceFlagsRaceTest, SchedulingFlagChangesDuringCopiesAndKernelsNeitherDeadlockNorCorrupt) {
  PAGELOCK_RULE("R59,R62,C03");
  PAGELOCK_REQUIRE(RequireUsableDevice());
  const double seconds = StormSeconds();
  Budget("time_s", seconds * TimeScale(), "s");
  Budget("threads_count", 4, "count");
  const ChildResult& r = DeviceFlagsChild();
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("finished"), "1") << "the first phase (racing first calls) got stuck: " << r.Get("stuck");
  ASSERT_EQ(r.Get("work_finished"), "1") << "threads stuck (deadlock?): " << r.Get("work_problems");
  EXPECT_EQ(r.Get("work_problems"), "") << "problems: " << r.Get("work_problems");
  EXPECT_EQ(r.Get("work_workers_without_iterations"), "0");
  Metric("iterations_count", std::atof(r.Get("work_iterations").c_str()), "count");
  EXPECT_EQ(r.Get("work_final_set"), "cudaSuccess");
  EXPECT_EQ(r.Get("work_final_get"), "cudaSuccess");
  const unsigned final_flags = static_cast<unsigned>(std::atoll(r.Get("work_final_flags").c_str()));
  EXPECT_EQ(final_flags & cudaDeviceScheduleMask, static_cast<unsigned>(cudaDeviceScheduleYield))
      << "flags reported after the storm: " << final_flags;
}

// C6, the driver path (CUDA >= 12.1): cuCtxSetFlags "Sets the flags for the current context
// overwriting previously set ones" (CU_CTX_SYNC_MEMOPS and the scheduling flags), and
// cuCtxGetFlags "Returns the flags for the current context". Changed over and over while three
// threads run pinned copies and kernels: nothing deadlocks (bounded), every round trip is exact,
// every read-back and the final one report the flags set. A driver that deadlocks a copy or a
// synchronous memcpy against a flag change, corrupts a transfer, or drops (or only half applies)
// a flag change fails this.
TEST(DeviceFlagsRaceTest, ContextFlagChangesDuringCopiesAndKernelsNeitherDeadlockNorCorrupt) {
  PAGELOCK_RULE("R150,C03");
  PAGELOCK_REQUIRE(RequireUsableDevice());
#if CUDA_VERSION < 12010
  int runtime = 0, driver = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaDriverGetVersion(&driver);
  PAGELOCK_NOT_SUPPORTED("cuCtxSetFlags is CUDA 12.1 API: built with CUDA_VERSION=" + std::to_string(CUDA_VERSION) +
                         ", cudaRuntimeGetVersion=" + std::to_string(runtime) +
                         ", cudaDriverGetVersion=" + std::to_string(driver));
#endif
  const double seconds = StormSeconds() / 2;
  Budget("time_s", seconds * TimeScale(), "s");
  Budget("threads_count", 4, "count");
  const ChildResult& r = DeviceFlagsChild();
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("finished"), "1") << "the first phase (racing first calls) got stuck: " << r.Get("stuck");
  ASSERT_EQ(r.Get("work_finished"), "1") << "the second phase (cudaSetDeviceFlags) got stuck: "
                                         << r.Get("work_problems");
  if (r.Get("ctx_unsupported") != "<missing>") PAGELOCK_NOT_SUPPORTED(r.Get("ctx_unsupported"));
  ASSERT_EQ(r.Get("ctx_finished"), "1") << "threads stuck (deadlock?): " << r.Get("ctx_problems");
  EXPECT_EQ(r.Get("ctx_problems"), "") << "problems: " << r.Get("ctx_problems");
  EXPECT_EQ(r.Get("ctx_workers_without_iterations"), "0");
  Metric("iterations_count", std::atof(r.Get("ctx_iterations").c_str()), "count");
  EXPECT_EQ(r.Get("ctx_main_init"), "cudaSuccess");
  EXPECT_EQ(r.Get("ctx_final_get"), "CUDA_SUCCESS");
  Observe("final_flags", r.Get("ctx_final_flags"));
  EXPECT_EQ(r.Get("ctx_final_matches"), "1") << "cuCtxGetFlags after the storm = " << r.Get("ctx_final_flags")
                                              << ", the last cuCtxSetFlags was " << r.Get("ctx_last_set");
}

}  // namespace
}  // namespace pagelock
