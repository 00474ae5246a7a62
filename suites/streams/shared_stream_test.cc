// Several host threads, one shared stream (peer-gap C2): eight threads, each
// with its own page-locked source and destination and its own device buffer, queue an H2D copy,
// a kernel (a short delay, then every byte inverted) and a D2H copy, round after round, on one
// stream they all share: a created blocking stream, a created non-blocking stream or the legacy
// default stream. cudaStreamPerThread is, by definition, a different stream in every host
// thread ("a per-thread default stream ... is local to both the thread and the CUDA context"),
// so in that case each thread uses its own and nothing is shared but the device. Each thread
// then waits, bounded, for an event it recorded after its copy back and checks every byte of
// its own destination. A variant records an event on the shared stream after the kernel and
// has each thread's own non-blocking stream wait for it (cudaStreamWaitEvent) before copying
// back, so the threads' records and waits interleave on the shared stream.
//
// The documented rules: work queued on one stream runs in issue order, from whichever host
// thread it is queued ("Operations within a stream are executed in order"); a CUDA stream and
// its events may be used from any host thread of the process; cudaStreamWaitEvent makes all
// later work of the waiting stream wait for the work captured by the event's most recent
// record; after cudaEventQuery returns cudaSuccess, that work (here the D2H copy into pinned
// memory) is complete and its bytes are visible to the host. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/resources.h"
#include "fixtures/storm.h"
#include "kernels/access_kernels.h"
#include "kernels/streams/stream_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {


constexpr int kThreads = 8;
constexpr int kRounds = 4;
constexpr size_t kBytes = (size_t{256} << 10) + 37;  // odd, and many pages
constexpr double kWaitS = 10;                         // per round, scaled (PollEvent)
constexpr double kGraceS = 30;                        // the storm's watchdog, scaled

// Everything a worker reads that the test thread made: kept alive by the workers' own copy of
// the pointer, so a worker the watchdog gives up on never touches freed memory.
struct Plan {
  explicit Plan(StreamKind k) : kind(k), shared(k) {}
  StreamKind kind;
  KindStream shared;  // the stream every thread queues on (unused for per-thread)
  std::vector<uint32_t> seeds;       // [thread * kRounds + round], drawn from the case seed
  uint64_t delay_ns = 0;
};

// One worker's rounds. `via_event`: the kernel's completion reaches the worker's own
// non-blocking stream through an event recorded on the shared stream, and the copy back runs
// there. Problems are collected for the test thread; nothing here calls gtest.
void Rounds(StormWorker& w, const Plan& plan, bool via_event) {
  auto bad = [&](cudaError_t e, const char* call, int round) {
    if (e == cudaSuccess) return false;
    w.Problem(std::string("round ") + std::to_string(round) + ": " + call + " = " + cudaGetErrorName(e));
    return true;
  };
  if (bad(cudaSetDevice(0), "cudaSetDevice", -1)) return;
  // Each thread's own cudaStreamPerThread; else the one stream of the plan.
  const cudaStream_t s = plan.kind == StreamKind::kPerThreadDefault ? cudaStreamPerThread : plan.shared.get();
  PinnedBuffer src(kBytes), dst(kBytes);
  DeviceBuffer dev(kBytes);
  OwnedEvent done(cudaEventDisableTiming), ready(cudaEventDisableTiming);
  OwnedStream own;
  if (via_event) own = OwnedStream(cudaStreamNonBlocking);
  if (bad(src.status(), "cudaHostAlloc", -1) || bad(dst.status(), "cudaHostAlloc", -1) ||
      bad(dev.status(), "cudaMalloc", -1) || bad(done.status(), "cudaEventCreateWithFlags", -1) ||
      bad(ready.status(), "cudaEventCreateWithFlags", -1) || bad(own.status(), "cudaStreamCreateWithFlags", -1))
    return;
  const cudaStream_t back = via_event ? own.get() : s;  // where the copy back runs
  for (int r = 0; r < kRounds; ++r) {
    const uint32_t seed = plan.seeds[w.index() * kRounds + r];
    streams::HostFillPatternFrom(src.get(), kBytes, 0, seed);
    // The destination holds the pattern itself, every byte of which differs from its inversion:
    // a byte the copy back does not deliver is counted.
    std::memcpy(dst.get(), src.get(), kBytes);
    w.Doing("queueing H2D copy, delay, invert");
    // copy-check: the H2D copy's bytes arrive inverted in dst, every byte counted below
    if (bad(cudaMemcpyAsync(dev.get(), src.get(), kBytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync H2D", r) ||
        bad(LaunchDelay(plan.delay_ns, s), "LaunchDelay", r) ||
        bad(LaunchInvertBytes(dev.get(), kBytes, s), "LaunchInvertBytes", r))
      return;
    if (via_event) {
      w.Doing("cudaEventRecord on the shared stream, cudaStreamWaitEvent");
      if (bad(cudaEventRecord(ready.get(), s), "cudaEventRecord", r) ||
          bad(cudaStreamWaitEvent(back, ready.get(), 0), "cudaStreamWaitEvent", r))
        return;
    }
    w.Doing("queueing D2H copy");
    // copy-check: every byte of dst is counted below, once `done` has completed
    if (bad(cudaMemcpyAsync(dst.get(), dev.get(), kBytes, cudaMemcpyDeviceToHost, back), "cudaMemcpyAsync D2H", r) ||
        bad(cudaEventRecord(done.get(), back), "cudaEventRecord", r))
      return;
    w.Doing("cudaEventQuery (bounded)");
    const cudaError_t waited = streams::PollEvent(done.get(), kWaitS);
    if (waited == cudaErrorNotReady) {
      w.Problem("round " + std::to_string(r) + ": the copy back was not done after " + std::to_string(kWaitS) +
                " s (scaled)");
      return;
    }
    if (bad(waited, "cudaEventQuery", r)) return;
    const size_t wrong = HostCountPatternMismatches(dst.get(), kBytes, seed, 0xff);
    if (wrong) {
      w.Problem("round " + std::to_string(r) + ": " + std::to_string(wrong) + " of " + std::to_string(kBytes) +
                " bytes of this thread's destination are not its own inverted source");
    }
    ++w.iterations;
  }
  w.Doing("releasing");
  bad(own.Free(), "cudaStreamDestroy", kRounds);
  bad(ready.Free(), "cudaEventDestroy", kRounds);
  bad(done.Free(), "cudaEventDestroy", kRounds);
  bad(dev.Free(), "cudaFree", kRounds);
  bad(dst.Free(), "cudaFreeHost", kRounds);
  bad(src.Free(), "cudaFreeHost", kRounds);
}

class SharedStreamTest : public GpuTest, public ::testing::WithParamInterface<StreamKind> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_CUDA_OK(cudaFree(nullptr));  // the context exists before the threads start
  }

  void RunThreads(bool via_event) {
    auto plan = std::make_shared<Plan>(GetParam());
    ASSERT_CUDA_OK(plan->shared.status());
    for (int i = 0; i < kThreads * kRounds; ++i) plan->seeds.push_back(static_cast<uint32_t>(CaseRng()()));
    // Long enough that a copy back that does not wait for the kernel finishes before it: 256 KiB
    // cross PCIe in about 5 us.
    plan->delay_ns = streams::DelayNs(0.2);
    Budget("threads_count", kThreads, "count");
    Budget("rounds_count", kRounds, "count");
    StormResult r = RunStorm(kThreads, 0, kGraceS, [plan, via_event](StormWorker& w) { Rounds(w, *plan, via_event); });
    EXPECT_TRUE(r.finished) << r.Summary();
    EXPECT_TRUE(r.problems.empty()) << r.Summary();
    EXPECT_EQ(r.iterations, kThreads * kRounds) << "rounds whose bytes were checked";
    Observe("stream", plan->kind == StreamKind::kPerThreadDefault ? "each thread's own cudaStreamPerThread"
                                                                   : "one " + StreamKindName(plan->kind) + " stream");
    if (r.finished) {
      ASSERT_CUDA_OK(cudaDeviceSynchronize());
    }
  }
};

// A driver that loses or reorders one thread's work on a stream other threads queue on too (a
// copy back that overtakes its kernel, an H2D copy given another thread's source, a per-stream
// queue that is not thread-safe) gives a thread bytes that are not its own inverted source.
TEST_P(SharedStreamTest, EveryThreadGetsItsOwnBytesBackFromTheStreamTheyShare) {
  PAGELOCK_RULE("S19,S03,C02");
  RunThreads(false);
}

// The event variant: each thread records an event on the shared stream after its kernel and its
// own non-blocking stream waits for it before copying back. A driver whose cudaStreamWaitEvent
// waits for another thread's record, for an older record of the event, or not at all, lets the
// copy back read the device buffer before the kernel inverted it.
class SharedStreamEventTest : public SharedStreamTest {};
TEST_P(SharedStreamEventTest, EventsRecordedOnTheSharedStreamOrderEachThreadsOwnCopyBack) {
  PAGELOCK_RULE("S20,S04");
  RunThreads(true);
}

std::string KindName(const ::testing::TestParamInfo<StreamKind>& info) {
  return info.param == StreamKind::kPerThreadDefault ? "EachThreadsOwnPerThreadDefault"
                                                     : "Shared" + StreamKindName(info.param);
}

INSTANTIATE_TEST_SUITE_P(StreamKinds, SharedStreamTest, ::testing::ValuesIn(AllStreamKinds()), KindName);
INSTANTIATE_TEST_SUITE_P(SharedKinds, SharedStreamEventTest,
                         ::testing::Values(StreamKind::kLegacyDefault, StreamKind::kBlocking, StreamKind::kNonBlocking),
                         KindName);

}  // namespace
}  // namespace pagelock
