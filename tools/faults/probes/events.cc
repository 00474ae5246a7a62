// Probes of the event faults (catalogue/events.cc).
#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

// event_rerecord_while_pending_dropped: "rc,records that reached the driver".
int RerecordWhilePending() {
  auto record = Get<CUresult (*)(CUevent, CUstream)>("cuEventRecord");
  auto record_flags = Get<CUresult (*)(CUevent, CUstream, unsigned)>("cuEventRecordWithFlags");
  auto pending = static_cast<void**>(FakeSymbol("fake_pending_event"));
  auto records = static_cast<int*>(FakeSymbol("fake_event_records"));
  if (!record || !record_flags || !pending || !records) return 1;
  const CUevent e_pending = reinterpret_cast<CUevent>(0xE1), e_done = reinterpret_cast<CUevent>(0xE2);
  *pending = e_pending;
  auto recorded = [&](auto&& call) {
    const int k = *records;
    CUresult rc = call();
    return std::to_string(rc) + "," + std::to_string(*records - k);
  };
  printf("rerecord_pending=%s", recorded([&] { return record(e_pending, kBlocking); }).c_str());
  printf(" rerecord_pending_with_flags=%s",
         recorded([&] { return record_flags(e_pending, kBlocking, 0); }).c_str());
  printf(" record_done=%s", recorded([&] { return record(e_done, kBlocking); }).c_str());
  printf(" rerecord_pending_captured=%s\n",
         recorded([&] { return record(e_pending, kCapturing); }).c_str());
  *pending = nullptr;
  return 0;
}

// non_blocking_elapsed_time_from_submission: "rc,elapsed ms" (the fake's is always 5 ms).
int NonBlockingElapsed() {
  auto record = Get<CUresult (*)(CUevent, CUstream)>("cuEventRecord");
  auto record_flags = Get<CUresult (*)(CUevent, CUstream, unsigned)>("cuEventRecordWithFlags");
  auto elapsed = Get<CUresult (*)(float*, CUevent, CUevent)>("cuEventElapsedTime");
  if (!record || !record_flags || !elapsed) return 1;
  auto timed = [&](CUstream first, CUstream second) {
    const CUevent a = reinterpret_cast<CUevent>(0xE3), b = reinterpret_cast<CUevent>(0xE4);
    record(a, first);
    record_flags(b, second, 0);
    float ms = -1;
    CUresult rc = elapsed(&ms, a, b);
    char text[32];
    snprintf(text, sizeof(text), "%d,%.1f", rc, ms);
    return std::string(text);
  };
  printf("elapsed_non_blocking=%s elapsed_mixed=%s elapsed_blocking=%s\n",
         timed(kNonBlocking, kNonBlocking).c_str(), timed(kBlocking, kNonBlocking).c_str(),
         timed(kBlocking, kBlocking).c_str());
  return 0;
}

// blocking_sync_event_elapsed_whole_ms: "rc,elapsed ms" (the fake's is 2.75 here).
int BlockingSyncElapsed() {
  auto event_create = Get<CUresult (*)(CUevent*, unsigned)>("cuEventCreate");
  auto elapsed = Get<CUresult (*)(float*, CUevent, CUevent)>("cuEventElapsedTime");
  auto elapsed_ms = static_cast<float*>(FakeSymbol("fake_elapsed_ms"));
  if (!event_create || !elapsed || !elapsed_ms) return 1;
  CUevent e_blocking = nullptr, e_plain = nullptr, e_other = nullptr;
  if (event_create(&e_blocking, CU_EVENT_BLOCKING_SYNC) != CUDA_SUCCESS ||
      event_create(&e_plain, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
      event_create(&e_other, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
    return 1;
  *elapsed_ms = 2.75f;
  auto timed = [&](CUevent a, CUevent b) {
    float ms = -1;
    CUresult rc = elapsed(&ms, a, b);
    char text[32];
    snprintf(text, sizeof(text), "%d,%.2f", rc, ms);
    return std::string(text);
  };
  printf("elapsed_blocking_start=%s elapsed_blocking_end=%s elapsed_default=%s\n",
         timed(e_blocking, e_plain).c_str(), timed(e_plain, e_blocking).c_str(),
         timed(e_plain, e_other).c_str());
  *elapsed_ms = 5.0f;
  return 0;
}

const Probe kProbes[] = {
    {"event_rerecord_while_pending_dropped", RerecordWhilePending},
    {"non_blocking_elapsed_time_from_submission", NonBlockingElapsed},
    {"blocking_sync_event_elapsed_whole_ms", BlockingSyncElapsed},
};

}  // namespace

extern const ProbeArea kEventsProbes = Probes("events", kProbes);

}  // namespace probes
