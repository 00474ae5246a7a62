// Events as clocks and as dependencies: cudaEventElapsedTime (every timing event kind, every
// stream kind) against host clocks and against device work that provably took time,
// cudaStreamWaitEvent on an event that is recorded again,
// an event re-recorded while its previous record is pending (read by query, synchronize, wait and
// elapsed time, the newest record on each stream kind), and cudaEventQuery / cudaEventSynchronize
// of default and BlockingSync events. Held work waits on a host-written flag (a bounded kernel),
// so "the stream is busy" is certain, not a race.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/bounded_wait.h"
#include "fixtures/gpu_test.h"
#include "fixtures/outcome.h"
#include "fixtures/resources.h"
#include "fixtures/stream_kinds.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"
#include "kernels/streams/stream_kernels.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{1} << 20;
// "in milliseconds with a resolution of around 0.5 microseconds" (cudaEventElapsedTime).
constexpr double kResolutionMs = 0.0005;
// One %globaltimer tick: 1 us on older GPUs.
constexpr double kGlobaltimerTickMs = 0.001;
// How far the rates of two clocks may differ. The documentation relates neither the events'
// clock to %globaltimer ("a 64-bit global nanosecond timer", PTX) nor either of them to the
// host's steady_clock, and one clock may run a little fast against another: 0.01 % (100 ppm)
// over 50 ms is already 5 us, more than an absolute slack of a few resolutions. 0.1 % (1000 ppm)
// is twice the largest rate correction Linux applies to CLOCK_MONOTONIC (NTP's 500 ppm, MAXFREQ)
// and far above a quartz oscillator's tolerance (tens of ppm), yet hundreds of times smaller than
// the errors a broken timer shows (half, triple or ten times the time, or ~0 for an early record).
constexpr double kClockRateSlack = 0.001;

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

class EventTimingTest : public GpuTest {
 protected:
  // Mapped pinned memory (UVA: the device uses the host pointer), zeroed, freed after the case.
  template <typename T>
  T* Mapped(size_t bytes) {
    void* p = nullptr;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocMapped) != cudaSuccess) return nullptr;
    owned_.push_back(PinnedBuffer::Adopt(p, bytes));
    std::memset(p, 0, bytes);
    return static_cast<T*>(p);
  }
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    flag_ = Mapped<unsigned>(sizeof(unsigned));
    status_ = Mapped<unsigned>(sizeof(unsigned));
    ASSERT_TRUE(flag_ && status_);
    LoadKernels();
  }
  // Every kernel this file launches runs once before any case holds a stream: with lazy module
  // loading (the default) a kernel's first launch may wait for the context to go idle, that is
  // for a held kernel to time out. On the H200 S16's first run in a process stalled its fill
  // launch for the hold's 10 s, so "the producer is held" was false when it was asserted.
  void LoadKernels() {
    unsigned char* tmp = Mapped<unsigned char>(256);
    auto* bad = Mapped<unsigned long long>(sizeof(unsigned long long));
    ASSERT_TRUE(tmp && bad);
    ASSERT_CUDA_OK(LaunchFillPattern(tmp, 256, 7, nullptr));
    ASSERT_CUDA_OK(LaunchCountPatternMismatchesFrom(tmp, 256, 0, 7, bad, nullptr));
    ASSERT_CUDA_OK(LaunchDelayThenFill(tmp, 256, 7, 0, nullptr));
    ASSERT_CUDA_OK(LaunchAwaitFlag(flag_, 0, 1000000, status_, nullptr));  // *flag_ is 0: returns at once
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    ASSERT_EQ(*bad, 0u) << "the warm-up fill's bytes";
    ASSERT_EQ(HostCountPatternMismatches(tmp, 256, 7), 0u) << "the warm-up delayed fill's bytes";
    ASSERT_EQ(*status_, kKernelOk) << "the warm-up wait";
  }
  void TearDown() override {
    if (flag_) Release();  // a case that failed early must not leave a kernel waiting
    if (!IsSkipped()) {
      EXPECT_CUDA_OK(cudaDeviceSynchronize());
    }
    for (PinnedBuffer& b : owned_) EXPECT_CUDA_OK(b.Free());
    GpuTest::TearDown();
  }
  // A kernel on `s` that waits (at most 10 s) until Release().
  cudaError_t Hold(cudaStream_t s) {
    return LaunchAwaitFlag(flag_, 1, static_cast<uint64_t>(10e9 * TimeScale()), status_, s);
  }
  void Release() {
    *static_cast<volatile unsigned*>(flag_) = 1;
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  unsigned* flag_ = nullptr;
  unsigned* status_ = nullptr;
  std::vector<PinnedBuffer> owned_;
};

// The stream kinds events are recorded on (S15, S16): the legacy default stream, the per-thread
// default stream, and a created non-blocking one. Their names in this family's case ids, which
// predate the kit's names:
std::string RecordOnName(StreamKind k) {
  static const Spelling<StreamKind> kCaseName(StreamKindName, {{StreamKind::kLegacyDefault, "LegacyDefaultStream"},
                                                               {StreamKind::kPerThreadDefault, "PerThreadStream"},
                                                               {StreamKind::kNonBlocking, "NonBlockingStream"}});
  return kCaseName(k);
}
// The stream a kind names; `created` is the case's own non-blocking stream.
cudaStream_t StreamOn(StreamKind on, cudaStream_t created) {
  return on == StreamKind::kLegacyDefault     ? cudaStreamLegacy
         : on == StreamKind::kPerThreadDefault ? cudaStreamPerThread
                                               : created;
}

struct TimedCase {
  unsigned event_flags;
  StreamKind on;
};
std::string TimedName(const TimedCase& c) {
  return std::string(c.event_flags == cudaEventBlockingSync ? "BlockingSyncEvents" : "DefaultEvents") + "_On" +
         RecordOnName(c.on);
}
void PrintTo(const TimedCase& c, std::ostream* os) { *os << TimedName(c); }
std::vector<TimedCase> TimedCases() {
  std::vector<TimedCase> cases;
  for (unsigned f : {unsigned{cudaEventDefault}, unsigned{cudaEventBlockingSync}}) {
    for (StreamKind on : {StreamKind::kLegacyDefault, StreamKind::kPerThreadDefault, StreamKind::kNonBlocking}) {
      cases.push_back({f, on});
    }
  }
  return cases;
}

class ElapsedTimeTest : public EventTimingTest, public ::testing::WithParamInterface<TimedCase> {};

// Every event kind that can time (default and BlockingSync: how the host waits must not change
// what the clock says) on every stream kind, and delays that are not whole milliseconds, from a
// third of one to fifty: a driver whose clock or arithmetic differs by event flag, by stream or
// below some interval (whole-millisecond truncation, a coarse tick) fails like one whose clock is
// wrong everywhere. Faults caught: elapsed_time_wrong_unit and elapsed_time_long_intervals_tripled
// (more than twice the host's wall time), event_record_early (the end event timestamped before
// the delay ran is below half of it), elapsed_time_halved (just above half the delay: below the
// lower bound), launch_dropped (the bytes).
//
// cudaEventElapsedTime (cuda_runtime_api.h): "Computes the elapsed time between two events (in
// milliseconds with a resolution of around 0.5 microseconds)"; "the resulting time may be
// greater than expected", which only the host's bracket around both records bounds. Two tiers:
// gross violations that no clock disagreement explains (a negative or non-finite time, less
// than half the delay, more than twice the host's wall time) FAIL with their own message; the
// tighter bounds allow the documented resolution, a %globaltimer tick and kClockRateSlack
// between the clocks on both sides, and FAIL too. Both bounds' margins are metrics.
TEST_P(ElapsedTimeTest, ElapsedTimeLiesBetweenTheDeviceDelayAndTheHostWallTime) {
  PAGELOCK_RULE("S15");
  const TimedCase p = GetParam();
  unsigned char* dst = Mapped<unsigned char>(kSize);
  ASSERT_NE(dst, nullptr);
  OwnedStream created(cudaStreamNonBlocking);
  OwnedEvent start(p.event_flags), stop(p.event_flags);
  ASSERT_CUDA_OK(created.status());
  ASSERT_CUDA_OK(start.status());
  ASSERT_CUDA_OK(stop.status());
  const cudaStream_t s = StreamOn(p.on, created.get());
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  for (double delay_ms : {0.35, 5.5, 50.0}) {
    const auto t0 = Clock::now();
    ASSERT_CUDA_OK(cudaEventRecord(start.get(), s));
    // Every thread spins delay_ms of %globaltimer ("a 64-bit global nanosecond timer") between
    // the two records, so at least that much time passed between them.
    ASSERT_CUDA_OK(LaunchDelayThenFill(dst, kSize, seed, static_cast<uint64_t>(delay_ms * 1e6), s));
    ASSERT_CUDA_OK(cudaEventRecord(stop.get(), s));
    ASSERT_CUDA_OK(PollStream(s, 10));
    const double host_ms = MsSince(t0);
    float ms = -1;
    ASSERT_CUDA_OK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    EXPECT_EQ(HostCountPatternMismatches(dst, kSize, seed), 0u) << "the delayed fill's bytes";
    const std::string at = std::to_string(static_cast<int>(delay_ms * 1000)) + "us";
    // Lower: at least the delay spun between the records, less the resolution twice, a tick and
    // kClockRateSlack of the delay (%globaltimer against the events' clock).
    const double lower = delay_ms * (1 - kClockRateSlack) - 2 * kResolutionMs - kGlobaltimerTickMs;
    // Upper: both records happened inside the host's bracket; slack: twice the resolution and
    // kClockRateSlack of the host's time (the events' clock against steady_clock).
    const double upper = host_ms * (1 + kClockRateSlack) + 2 * kResolutionMs;
    Metric("elapsed_minus_delay_" + at + "_ms", ms - delay_ms, "ms");
    Metric("host_minus_elapsed_" + at + "_ms", host_ms - ms, "ms");
    Metric("elapsed_over_delay_" + at, ms / delay_ms, "ratio");
    Metric("elapsed_over_host_" + at, ms / host_ms, "ratio");
    const std::string what = "elapsed " + std::to_string(ms) + " ms between events around a " +
                             std::to_string(delay_ms) + " ms device delay that the host timed at " +
                             std::to_string(host_ms) + " ms";
    if (!std::isfinite(ms) || ms < 0) {
      ADD_FAILURE() << what << ": not a time";
    } else if (ms < delay_ms / 2) {
      ADD_FAILURE() << what << ": less than half the delay (a clock at half speed or a record made early)";
    } else if (ms > 2 * host_ms) {
      ADD_FAILURE() << what << ": more than twice the host's wall time (a wrong unit or rate)";
    } else {
      EXPECT_GE(ms, lower) << what << ": below the delay by more than the resolution, a tick and "
                           << kClockRateSlack * 100 << " % for the clocks' rates";
      EXPECT_LE(ms, upper) << what << ": above the host's wall time by more than the resolution and "
                           << kClockRateSlack * 100 << " % for the clocks' rates";
    }
    std::memset(dst, 0, kSize);  // the next delay's fill is checked from zeros
  }
}

INSTANTIATE_TEST_SUITE_P(EventKindsAndStreams, ElapsedTimeTest, ::testing::ValuesIn(TimedCases()),
                         [](const ::testing::TestParamInfo<TimedCase>& i) { return TimedName(i.param); });

// Faults caught: stream_wait_ignored and event_record_early (the consumer runs while the
// producer is held: Query says done, or the count sees unwritten bytes); a driver that waits on
// the first record only fails the same checks.
TEST_F(EventTimingTest, StreamWaitEventWaitsForTheMostRecentRecordAtCallTime) {
  PAGELOCK_RULE("S16");
  unsigned char* y = Mapped<unsigned char>(kSize);
  auto* bad = Mapped<unsigned long long>(sizeof(unsigned long long));
  ASSERT_TRUE(y && bad);
  OwnedStream a(cudaStreamNonBlocking), b(cudaStreamNonBlocking);
  OwnedEvent e(cudaEventDisableTiming);
  ASSERT_CUDA_OK(a.status());
  ASSERT_CUDA_OK(b.status());
  ASSERT_CUDA_OK(e.status());
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  ASSERT_CUDA_OK(cudaEventRecord(e.get(), a.get()));  // the first record: nothing to wait for
  ASSERT_CUDA_OK(Hold(a.get()));
  ASSERT_CUDA_OK(LaunchFillPattern(y, kSize, seed, a.get()));
  // "cudaEventRecord() can be called multiple times on the same event and will overwrite the
  // previously captured state. Other APIs such as cudaStreamWaitEvent() use the most recently
  // captured state at the time of the API call".
  ASSERT_CUDA_OK(cudaEventRecord(e.get(), a.get()));
  ASSERT_CUDA_OK(cudaStreamWaitEvent(b.get(), e.get(), 0));
  ASSERT_CUDA_OK(LaunchCountPatternMismatchesFrom(y, kSize, 0, seed, bad, b.get()));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // The premise first: the producer is still held (else the hold itself failed, and the wait's
  // answer below says nothing about the re-record).
  const cudaError_t producer = cudaStreamQuery(a.get());
  Observe("producer_stream_while_held", ErrName(producer));
  Observe("hold_status_while_held", static_cast<long long>(*static_cast<volatile unsigned*>(status_)));
  EXPECT_CUDA_ERROR(cudaErrorNotReady, producer) << "the producer's hold ended before the release";
  EXPECT_CUDA_ERROR(cudaErrorNotReady, cudaStreamQuery(b.get()))
      << "the waiting stream finished while the re-recorded event's work was held";
  Release();
  ASSERT_CUDA_OK(PollStream(a.get(), 10));
  ASSERT_CUDA_OK(PollStream(b.get(), 10));
  EXPECT_EQ(*status_, kKernelOk) << "the held kernel timed out";
  EXPECT_EQ(*bad, 0u) << "bytes the consumer read before the producer's fill completed";
  EXPECT_EQ(HostCountPatternMismatches(y, kSize, seed), 0u) << "the producer's fill";
}

// Faults caught: a driver that resolves the wait at execution time (the later record) holds the
// consumer until the release: the bounded wait times out. launch_dropped fails the bytes.
TEST_F(EventTimingTest, AWaitIsNotHeldByARecordMadeAfterIt) {
  PAGELOCK_RULE("S16");
  unsigned char* x = Mapped<unsigned char>(kSize);
  unsigned char* z = Mapped<unsigned char>(kSize);
  ASSERT_TRUE(x && z);
  OwnedStream a(cudaStreamNonBlocking), b(cudaStreamNonBlocking);
  OwnedEvent e(cudaEventDisableTiming);
  ASSERT_CUDA_OK(a.status());
  ASSERT_CUDA_OK(b.status());
  ASSERT_CUDA_OK(e.status());
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  ASSERT_CUDA_OK(LaunchFillPattern(x, kSize, seed, a.get()));
  ASSERT_CUDA_OK(cudaEventRecord(e.get(), a.get()));
  ASSERT_CUDA_OK(cudaStreamWaitEvent(b.get(), e.get(), 0));
  ASSERT_CUDA_OK(LaunchFillPattern(z, kSize, seed ^ 0x77777777u, b.get()));
  ASSERT_CUDA_OK(Hold(a.get()));
  // "... and are not affected by later calls to cudaEventRecord()".
  ASSERT_CUDA_OK(cudaEventRecord(e.get(), a.get()));
  EXPECT_CUDA_OK(PollStream(b.get(), 5)) << "the wait followed a record made after the call";
  EXPECT_CUDA_ERROR(cudaErrorNotReady, cudaStreamQuery(a.get())) << "the producer is still held";
  EXPECT_EQ(HostCountPatternMismatches(x, kSize, seed), 0u) << "the fill the wait covered";
  EXPECT_EQ(HostCountPatternMismatches(z, kSize, seed ^ 0x77777777u), 0u) << "the consumer's fill";
  Release();
  ASSERT_CUDA_OK(PollStream(a.get(), 10));
  EXPECT_EQ(*status_, kKernelOk) << "the held kernel timed out";
}

// S16 with the previous record still pending. The docs: "cudaEventRecord() can be called multiple
// times on the same event and will overwrite the previously captured state. Other APIs such as
// cudaStreamWaitEvent() use the most recently captured state at the time of the API call". The
// two cases above re-record only after the previous record completed, so a driver that drops a
// re-record made while the previous one is pending (the event keeps its earlier state) passes
// them. Here the previous record waits behind a hold on stream a, the newest follows a short fill
// on stream b, and each primitive that reads an event must follow the newest record while a is
// still held.
enum class Reader { kEventQuery, kEventSynchronize, kStreamWaitEvent, kElapsedTime };
// The stream of the newest record. a (the held one) and c (the waiting one) are non-blocking, so
// none of these waits for the hold: the legacy default stream synchronises only with blocking
// streams, cudaStreamPerThread (a blocking stream) only with the legacy one. With a blocking a,
// the legacy stream's re-record would wait for the hold itself and the case would say nothing.
// (The stream kinds and their names are above, with the elapsed-time cases.)

struct RerecordCase {
  Reader reader;
  StreamKind on;
};

std::string RerecordName(const RerecordCase& c) {
  static const char* const kReaders[] = {"EventQuery", "EventSynchronize", "StreamWaitEvent", "ElapsedTime"};
  return std::string(kReaders[static_cast<int>(c.reader)]) + "_On" + RecordOnName(c.on);
}
void PrintTo(const RerecordCase& c, std::ostream* os) { *os << RerecordName(c); }

std::vector<RerecordCase> RerecordCases() {
  std::vector<RerecordCase> cases;
  for (Reader r : {Reader::kEventQuery, Reader::kEventSynchronize, Reader::kStreamWaitEvent, Reader::kElapsedTime}) {
    for (StreamKind on : {StreamKind::kLegacyDefault, StreamKind::kPerThreadDefault, StreamKind::kNonBlocking}) {
      cases.push_back({r, on});
    }
  }
  return cases;
}

class EventRerecordTest : public EventTimingTest, public ::testing::WithParamInterface<RerecordCase> {};

// Faults caught: event_rerecord_while_pending_dropped (the event still refers to a's pending
// record: the query stays NotReady, c's wait stays held, elapsed time is cudaErrorNotReady, each
// within a 2 s bound while a is held); stream_wait_ignored and event_record_early (the consumer
// or the event synchronisation sees the fill's bytes missing); launch_dropped (the bytes).
TEST_P(EventRerecordTest, ARecordMadeWhileThePreviousIsPendingReplacesIt) {
  PAGELOCK_RULE("S16");
  const RerecordCase p = GetParam();
  SCOPED_TRACE(RerecordName(p));
  unsigned char* y = Mapped<unsigned char>(kSize);
  auto* bad = Mapped<unsigned long long>(sizeof(unsigned long long));
  ASSERT_TRUE(y && bad);
  OwnedStream a(cudaStreamNonBlocking), created(cudaStreamNonBlocking), c(cudaStreamNonBlocking);
  OwnedEvent e(cudaEventDefault), start(cudaEventDefault);  // timing enabled: ElapsedTime reads e
  ASSERT_CUDA_OK(a.status());
  ASSERT_CUDA_OK(created.status());
  ASSERT_CUDA_OK(c.status());
  ASSERT_CUDA_OK(e.status());
  ASSERT_CUDA_OK(start.status());
  const cudaStream_t b = StreamOn(p.on, created.get());
  const std::string on = p.on == StreamKind::kLegacyDefault ? "the legacy default stream"
                         : p.on == StreamKind::kPerThreadDefault   ? "cudaStreamPerThread"
                                                          : "a non-blocking stream";
  // cudaStreamPerThread is made on its first use: that happens here, not while a is held.
  ASSERT_CUDA_OK(cudaStreamSynchronize(b));
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  // Everything that holds a and reads e; whatever it finds (or an ASSERT that ends it early), the
  // release and the bounded drains below follow.
  const auto read_while_held = [&] {
    ASSERT_CUDA_OK(Hold(a.get()));
    ASSERT_CUDA_OK(cudaEventRecord(e.get(), a.get()));  // the previous record: pending until Release()
    if (p.reader == Reader::kElapsedTime) {
      ASSERT_CUDA_OK(cudaEventRecord(start.get(), b));
    }
    ASSERT_CUDA_OK(LaunchFillPattern(y, kSize, seed, b));
    ASSERT_CUDA_OK(cudaEventRecord(e.get(), b));  // the newest record, made while a's is pending
    if (p.reader == Reader::kStreamWaitEvent) {
      // Issued before b drains, so the consumer's count also shows the wait covered b's fill.
      ASSERT_CUDA_OK(cudaStreamWaitEvent(c.get(), e.get(), 0));
      ASSERT_CUDA_OK(LaunchCountPatternMismatchesFrom(y, kSize, 0, seed, bad, c.get()));
    }
    // The premise: a (and so its record of e, behind the hold) had not completed at the
    // re-record; else nothing below tells the two records apart.
    const cudaError_t held = cudaStreamQuery(a.get());
    Observe("held_stream_after_rerecord", ErrName(held));
    ASSERT_CUDA_ERROR(cudaErrorNotReady, held) << "the hold on a ended before the re-record was read";
    const auto t0 = Clock::now();
    switch (p.reader) {
      case Reader::kEventQuery: {
        const cudaError_t q = PollEvent(e.get(), 2);
        EXPECT_CUDA_OK(q) << "cudaEventQuery did not report the newest record (on " << on
                          << ") complete within 2 s while a was held: it still reads the pending record on a";
        if (q == cudaSuccess) {
          EXPECT_EQ(HostCountPatternMismatches(y, kSize, seed), 0u)
              << "the fill's bytes when cudaEventQuery said complete (newest record on " << on << ")";
        }
        break;
      }
      case Reader::kEventSynchronize: {
        // Called only once a bounded poll says e completed: a driver that kept the pending record
        // would block it until the hold gives up (10 s). A synchronisation that alone follows the
        // old record still returns within the hold's bound, and a's state below shows it waited.
        const cudaError_t q = PollEvent(e.get(), 2);
        if (q != cudaSuccess) {
          ADD_FAILURE() << "cudaEventSynchronize: e (newest record on " << on << ") did not complete within 2 s"
                        << " while a was held (cudaEventQuery: " << ErrName(q)
                        << "), so synchronising would wait for the pending record on a";
          break;
        }
        const auto t_sync = Clock::now();
        EXPECT_CUDA_OK(cudaEventSynchronize(e.get())) << "cudaEventSynchronize after the newest record on " << on;
        Metric("synchronize_ms", MsSince(t_sync), "ms");
        EXPECT_EQ(HostCountPatternMismatches(y, kSize, seed), 0u)
            << "the fill's bytes when cudaEventSynchronize returned (newest record on " << on << ")";
        break;
      }
      case Reader::kStreamWaitEvent: {
        const cudaError_t drained = PollStream(c.get(), 2);
        EXPECT_CUDA_OK(drained) << "cudaStreamWaitEvent: the waiting stream c did not drain within 2 s while a was"
                                << " held: the wait followed the pending record on a, not the newest on " << on;
        if (drained == cudaSuccess) {
          EXPECT_EQ(*bad, 0u) << "cudaStreamWaitEvent: bytes the consumer on c read before the fill on " << on
                              << " completed";
        }
        break;
      }
      case Reader::kElapsedTime: {
        // b's work does not depend on a: once b drained, both of its records completed.
        ASSERT_CUDA_OK(PollStream(b, 2)) << on << " (the newest record's stream) did not drain while a was held";
        float ms = -1;
        const cudaError_t r = cudaEventElapsedTime(&ms, start.get(), e.get());
        EXPECT_CUDA_OK(r) << "cudaEventElapsedTime(start, e) with both recorded on " << on
                          << ", which drained while a was held (cudaErrorNotReady: e still reads the pending"
                          << " record on a)";
        if (r == cudaSuccess) {
          EXPECT_TRUE(std::isfinite(ms) && ms >= 0) << "cudaEventElapsedTime: " << ms << " ms is not a time";
          if (std::isfinite(ms)) Metric("elapsed_ms", ms, "ms");
        }
        EXPECT_EQ(HostCountPatternMismatches(y, kSize, seed), 0u) << "the fill's bytes once " << on << " drained";
        break;
      }
    }
    Metric("answered_after_ms", MsSince(t0), "ms");
    // The answer came while a was held: a is still busy and its kernel did not give up.
    EXPECT_CUDA_ERROR(cudaErrorNotReady, cudaStreamQuery(a.get()))
        << "a's hold ended before the answer: it may have followed the pending record on a";
    EXPECT_EQ(*static_cast<volatile unsigned*>(status_), kKernelOk) << "the held kernel timed out before the answer";
  };
  read_while_held();
  Release();
  EXPECT_CUDA_OK(PollStream(a.get(), 10)) << "the held stream after the release";
  EXPECT_CUDA_OK(PollStream(b, 10)) << on << " after the release";
  EXPECT_CUDA_OK(PollStream(c.get(), 10)) << "the waiting stream after the release";
  EXPECT_EQ(*status_, kKernelOk) << "the held kernel timed out";
  EXPECT_EQ(HostCountPatternMismatches(y, kSize, seed), 0u) << "the fill on " << on;
  EXPECT_EQ(*bad, 0u) << "bytes the consumer counted (0 where none ran)";
}

INSTANTIATE_TEST_SUITE_P(ReadersAndStreams, EventRerecordTest, ::testing::ValuesIn(RerecordCases()),
                         [](const ::testing::TestParamInfo<RerecordCase>& i) { return RerecordName(i.param); });

class EventFlagsTest : public EventTimingTest, public ::testing::WithParamInterface<unsigned> {};

// Faults caught: event_query_lies (Success while held), event_sync_returns_early (bytes not there
// at return), event_record_early.
TEST_P(EventFlagsTest, QueryAndSynchronizeReportHeldWorkAndItsBytes) {
  PAGELOCK_RULE("S17");
  unsigned char* y = Mapped<unsigned char>(kSize);
  ASSERT_NE(y, nullptr);
  OwnedStream s(cudaStreamNonBlocking);
  OwnedEvent start(GetParam()), stop(GetParam());
  ASSERT_CUDA_OK(s.status());
  ASSERT_CUDA_OK(start.status());
  ASSERT_CUDA_OK(stop.status());
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  ASSERT_CUDA_OK(cudaEventRecord(start.get(), s.get()));
  ASSERT_CUDA_OK(Hold(s.get()));
  ASSERT_CUDA_OK(LaunchFillPattern(y, kSize, seed, s.get()));
  ASSERT_CUDA_OK(cudaEventRecord(stop.get(), s.get()));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_CUDA_ERROR(cudaErrorNotReady, cudaEventQuery(stop.get())) << "the work is held";
  float ms = -1;
  // "If cudaEventRecord() has been called on both events but one or both of them has not yet
  // been completed ... cudaErrorNotReady is returned."
  EXPECT_CUDA_ERROR(cudaErrorNotReady, cudaEventElapsedTime(&ms, start.get(), stop.get()));
  Release();
  // Bounded: the held kernel gives up after 10 s.
  ASSERT_CUDA_OK(cudaEventSynchronize(stop.get()));
  EXPECT_EQ(HostCountPatternMismatches(y, kSize, seed), 0u) << "bytes missing when the event synchronised";
  EXPECT_CUDA_OK(cudaEventQuery(stop.get()));
  EXPECT_EQ(*status_, kKernelOk) << "the held kernel timed out";
  EXPECT_CUDA_OK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  EXPECT_GE(ms, 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Flags, EventFlagsTest,
                         ::testing::Values(unsigned{cudaEventDefault}, unsigned{cudaEventBlockingSync}),
                         [](const ::testing::TestParamInfo<unsigned>& i) {
                           return std::string(i.param == cudaEventBlockingSync ? "BlockingSync" : "Default");
                         });

}  // namespace
}  // namespace pagelock
