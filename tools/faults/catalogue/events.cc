// Events: records, queries, synchronisation and elapsed times.
#include <math.h>
#include <pthread.h>
#include <time.h>

#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// R77: cuEventSynchronize returns without waiting.
void InstallEventSyncReturnsEarly() {
  HookEventSynchronize([](Real_EventSynchronize, CUevent) -> CUresult { return CUDA_SUCCESS; });
}

// R77: cuEventQuery reports complete while work is pending.
void InstallEventQueryLies() {
  HookEventQuery([](Real_EventQuery, CUevent) -> CUresult { return CUDA_SUCCESS; });
}

// P03: cuEventRecord records the event at once instead of in stream order, so elapsed times
// measure nothing (the event is recorded on the legacy stream, before the queued work).
void InstallEventRecordEarly() {
  HookEventRecord([](Real_EventRecord real, CUevent e, CUstream) -> CUresult {
    static const auto create = Real<CUresult(CUDAAPI*)(CUstream*, unsigned)>("cuStreamCreate");
    static CUstream side = nullptr;  // an idle stream: its record completes at once
    if (!side && create) create(&side, CU_STREAM_NON_BLOCKING);
    return real(e, side);
  });
  HookEventRecordWithFlags([](Real_EventRecordWithFlags real, CUevent e, CUstream,
                              unsigned f) -> CUresult {
    static const auto create = Real<CUresult(CUDAAPI*)(CUstream*, unsigned)>("cuStreamCreate");
    static CUstream side = nullptr;
    if (!side && create) create(&side, CU_STREAM_NON_BLOCKING);
    return real(e, side, f);
  });
}

// P03: elapsed times come back 10x too long (a timer-unit bug: bandwidth looks 10x lower).
void InstallElapsedTimeWrongUnit() {
  HookEventElapsedTime([](Real_EventElapsedTime real, float* ms, CUevent a, CUevent b) -> CUresult {
    CUresult r = real(ms, a, b);
    if (r == CUDA_SUCCESS && ms) *ms *= 10.0f;
    return r;
  });
}

// S06: an event recorded on a non-blocking stream is recorded at once (on an idle stream), not
// behind the stream's work; records on other streams are in stream order.
void InstallNonBlockingEventRecordEarly() {
  HookEventRecord([](Real_EventRecord real, CUevent e, CUstream s) -> CUresult {
    return real(e, IsNonBlocking(s) && SideStream() ? SideStream() : s);
  });
  HookEventRecordWithFlags([](Real_EventRecordWithFlags real, CUevent e, CUstream s,
                              unsigned f) -> CUresult {
    return real(e, IsNonBlocking(s) && SideStream() ? SideStream() : s, f);
  });
}

// S06: every 3rd cuEventQuery reports complete while the event's work is pending.
void InstallEvery3rdEventQueryLies() {
  HookEventQuery([](Real_EventQuery real, CUevent e) -> CUresult {
    return EveryNth(&g_calls, 3) ? CUDA_SUCCESS : real(e);
  });
}

// S16: cuEventRecord (and cuEventRecordWithFlags) of an event whose previous record
// has not completed yet is dropped (the event is re-armed only once its last capture has
// signalled): the event keeps its earlier captured state, so a later wait or query follows the
// earlier work, not the re-recorded one. Records of an event whose last record completed, or
// that was never recorded, and records into a stream capture are right.
template <typename R>
bool RecordDropped(R real, CUevent e, CUstream s, const char* name) {
  static const auto query = Real<Real_EventQuery>("cuEventQuery");
  return e && query && !BeingCaptured(real, s, name) && query(e) == CUDA_ERROR_NOT_READY;
}
void InstallEventRerecordWhilePendingDropped() {
  HookEventRecord([](Real_EventRecord real, CUevent e, CUstream s) -> CUresult {
    return RecordDropped(real, e, s, "cuEventRecord") ? CUDA_SUCCESS : real(e, s);
  });
  HookEventRecordWithFlags([](Real_EventRecordWithFlags real, CUevent e, CUstream s,
                              unsigned f) -> CUresult {
    return RecordDropped(real, e, s, "cuEventRecordWithFlags") ? CUDA_SUCCESS : real(e, s, f);
  });
}

// S03: cuEventSynchronize gives up after about 2 ms and reports success (a wait with a timeout
// whose expiry is taken for completion); short work is waited for correctly.
void InstallEventSyncTimesOut() {
  HookEventSynchronize([](Real_EventSynchronize real, CUevent e) -> CUresult {
    static const auto query = Real<Real_EventQuery>("cuEventQuery");
    return query ? GiveUpAfter2ms(query, e) : real(e);
  });
}

// P03: intervals of 1 ms or more are reported 3x too long (short ones are right): the latency
// of small copies looks fine, the bandwidth of large ones a third of what it is.
void InstallElapsedTimeLongIntervalsTripled() {
  HookEventElapsedTime([](Real_EventElapsedTime real, float* ms, CUevent a, CUevent b) -> CUresult {
    CUresult r = real(ms, a, b);
    if (r == CUDA_SUCCESS && ms && *ms >= 1.0f) *ms *= 3.0f;
    return r;
  });
}

// P03: elapsed times are reported half as long as they were (bandwidth twice what the link can
// carry).
void InstallElapsedTimeHalved() {
  HookEventElapsedTime([](Real_EventElapsedTime real, float* ms, CUevent a, CUevent b) -> CUresult {
    CUresult r = real(ms, a, b);
    if (r == CUDA_SUCCESS && ms) *ms *= 0.5f;
    return r;
  });
}

// S15: events recorded on a non-blocking stream (CU_STREAM_NON_BLOCKING) are
// timestamped when the record is submitted (the host's clock at the cuEventRecord call), not
// when the stream reaches them: cuEventElapsedTime between events of which one was last recorded
// on a non-blocking stream reports the host time between the two record calls, about 0 for work
// queued between them. Completion (NOT_READY until both are done) is truthful; events recorded on
// blocking, default and per-thread streams time right.
struct EventStamp {
  CUevent event;
  double host_ms;  // the host's clock at the record call
  bool non_blocking;
};
EventStamp g_stamps[1024];
pthread_mutex_t g_stamps_mu = PTHREAD_MUTEX_INITIALIZER;
double HostMs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
void Stamp(CUevent e, CUstream s) {
  const EventStamp stamp = {e, HostMs(), IsNonBlocking(s)};
  pthread_mutex_lock(&g_stamps_mu);
  EventStamp* slot = SlotFor(g_stamps, &EventStamp::event, e);
  if (slot) *slot = stamp;
  pthread_mutex_unlock(&g_stamps_mu);
}
bool FindStamp(CUevent e, EventStamp* out) {
  bool found = false;
  pthread_mutex_lock(&g_stamps_mu);
  for (const EventStamp& x : g_stamps)
    if (e && x.event == e) {
      *out = x;
      found = true;
      break;
    }
  pthread_mutex_unlock(&g_stamps_mu);
  return found;
}
void InstallNonBlockingElapsedTimeFromSubmission() {
  HookEventRecord([](Real_EventRecord real, CUevent e, CUstream s) -> CUresult {
    CUresult r = real(e, s);
    if (r == CUDA_SUCCESS && e) Stamp(e, s);
    return r;
  });
  HookEventRecordWithFlags([](Real_EventRecordWithFlags real, CUevent e, CUstream s,
                              unsigned f) -> CUresult {
    CUresult r = real(e, s, f);
    if (r == CUDA_SUCCESS && e) Stamp(e, s);
    return r;
  });
  HookEventElapsedTime([](Real_EventElapsedTime real, float* ms, CUevent a, CUevent b) -> CUresult {
    CUresult r = real(ms, a, b);
    EventStamp x, y;
    if (r == CUDA_SUCCESS && ms && FindStamp(a, &x) && FindStamp(b, &y) &&
        (x.non_blocking || y.non_blocking))
      *ms = static_cast<float>(y.host_ms - x.host_ms);
    return r;
  });
}

// S15: cuEventElapsedTime between events either of which was created with
// CU_EVENT_BLOCKING_SYNC reports the interval truncated to whole milliseconds (the blocking-sync
// path timestamps with a millisecond clock): 0 for an interval under 1 ms, 2 for 2.9 ms. Events
// created without the flag time right.
struct EventCreated {
  CUevent event;
  unsigned flags;
};
EventCreated g_created_events[1024];
pthread_mutex_t g_created_mu = PTHREAD_MUTEX_INITIALIZER;
bool CreatedBlockingSync(CUevent e) {
  bool blocking = false;
  pthread_mutex_lock(&g_created_mu);
  for (const EventCreated& x : g_created_events)
    if (e && x.event == e) {
      blocking = x.flags & CU_EVENT_BLOCKING_SYNC;
      break;
    }
  pthread_mutex_unlock(&g_created_mu);
  return blocking;
}
void InstallBlockingSyncEventElapsedWholeMs() {
  HookEventCreate([](Real_EventCreate real, CUevent* e, unsigned f) -> CUresult {
    CUresult r = real(e, f);
    if (r != CUDA_SUCCESS || !e || !*e) return r;
    pthread_mutex_lock(&g_created_mu);
    EventCreated* slot = SlotFor(g_created_events, &EventCreated::event, *e);
    if (slot) *slot = {*e, f};  // a handle created again takes its new flags
    pthread_mutex_unlock(&g_created_mu);
    return r;
  });
  HookEventElapsedTime([](Real_EventElapsedTime real, float* ms, CUevent a, CUevent b) -> CUresult {
    CUresult r = real(ms, a, b);
    if (r == CUDA_SUCCESS && ms && (CreatedBlockingSync(a) || CreatedBlockingSync(b)))
      *ms = floorf(*ms);
    return r;
  });
}

const Fault kFaults[] = {
    PL_FAULT(18, "event_sync_returns_early", "P03", "bandwidth", "sync", "baseline", "catalogue-1",
             "cuEventSynchronize returns without waiting.", InstallEventSyncReturnsEarly),
    PL_FAULT(20, "event_query_lies", "R77", "atomics", "sync", "baseline", "catalogue-1",
             "cuEventQuery reports complete while work is pending.", InstallEventQueryLies),
    PL_FAULT(22, "event_record_early", "P03", "bandwidth", "sync", "baseline", "catalogue-1",
             "cuEventRecord records at once instead of in stream order.", InstallEventRecordEarly),
    PL_FAULT(23, "elapsed_time_wrong_unit", "P03", "bandwidth", "perf", "baseline", "catalogue-1",
             "cuEventElapsedTime reports times 10x too long.", InstallElapsedTimeWrongUnit),
    PL_FAULT(98, "non_blocking_event_record_early", "S06", "streams", "sync", "variant", "shapes",
             "An event recorded on a non-blocking stream is recorded at once, not behind the "
             "stream's work.", InstallNonBlockingEventRecordEarly),
    PL_FAULT(119, "every_3rd_event_query_lies", "S06", "streams", "sync", "stateful", "shapes",
             "Every 3rd cuEventQuery reports complete while work is pending.",
             InstallEvery3rdEventQueryLies),
    PL_FAULT(130, "event_rerecord_while_pending_dropped", "S16", "streams", "sync",
             "stateful", "blind-10",
             "Re-recording an event whose previous record has not completed is dropped: the event "
             "keeps its earlier state.", InstallEventRerecordWhilePendingDropped),
    PL_FAULT(137, "event_sync_times_out", "S03", "streams", "sync", "timing", "shapes",
             "cuEventSynchronize gives up after about 2 ms and reports success.",
             InstallEventSyncTimesOut),
    PL_FAULT(140, "elapsed_time_long_intervals_tripled", "P03", "bandwidth", "perf",
             "timing", "shapes",
             "cuEventElapsedTime reports intervals of 1 ms or more 3x too long.",
             InstallElapsedTimeLongIntervalsTripled),
    PL_FAULT(141, "elapsed_time_halved", "P03", "bandwidth", "perf", "timing", "shapes",
             "cuEventElapsedTime reports half the elapsed time.", InstallElapsedTimeHalved),
    PL_FAULT(144, "non_blocking_elapsed_time_from_submission", "S15", "streams", "perf",
             "timing", "blind-10",
             "cuEventElapsedTime of events recorded on a non-blocking stream reports the host time "
             "between the record calls, not the time the stream took.",
             InstallNonBlockingElapsedTimeFromSubmission),
    PL_FAULT(146, "blocking_sync_event_elapsed_whole_ms", "S15", "streams", "perf",
             "timing", "blind-11",
             "cuEventElapsedTime with a BlockingSync event reports the interval truncated to whole "
             "milliseconds.", InstallBlockingSyncEventElapsedWholeMs),
};

}  // namespace

extern const Area kEventsArea = FaultArea("events", kFaults);

}  // namespace pagelock_faults
