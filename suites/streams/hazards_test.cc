// Hazards a user causes, reported as what they are. Each runs in a fresh child process (a fault
// it provokes must not poison this binary's context): freeing or unregistering host memory while
// a copy or kernel that uses it is still queued behind a delay, and rewriting a copy's source
// before the copy's event. Only what is documented is asserted: the call's return code, that the
// child survives and ends, that unrelated pinned memory keeps its bytes and that the next work in
// the child still runs. What happened to the data, whether the call waited for the work and the
// stream's final status are recorded, never asserted. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/gpu_test.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"
#include "kernels/streams/stream_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

constexpr size_t kBytes = size_t{4} << 20;
constexpr double kDelayMs = 100;

// Unrelated pinned memory and a small round trip after the hazard: the documented part.
void ReportAftermath(ScenarioReport& report, const unsigned char* unrelated, uint32_t seed) {
  report.Set("unrelated_bad_bytes", static_cast<long long>(streams::HostCountPattern(unrelated, 4096, 0, seed)));
  std::vector<unsigned char> out(4096), back(4096, 0);
  streams::HostFillPatternFrom(out.data(), out.size(), 0, seed ^ 1);
  void* d = nullptr;
  cudaError_t e = cudaMalloc(&d, out.size());
  const DeviceBuffer own_d = DeviceBuffer::Adopt(d);  // freed on return
  if (e == cudaSuccess) e = cudaMemcpy(d, out.data(), out.size(), cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(back.data(), d, back.size(), cudaMemcpyDeviceToHost);
  report.Error("next_work", e);
  report.Set("next_work_bad_bytes", static_cast<long long>(streams::HostCountPattern(back.data(), back.size(), 0, seed ^ 1)));
}

// ScenarioArg: "<free|unregister>_<copy|kernel>".
PAGELOCK_SCENARIO(ReleaseWhileInFlight) {
  const std::string arg = ScenarioArg();
  const bool unregister = arg.rfind("unregister", 0) == 0;
  const bool kernel = arg.size() > 6 && arg.substr(arg.size() - 6) == "kernel";
  const uint32_t seed = 0x4a2a7d00u;
  void* unrelated = nullptr;
  report.Error("unrelated_alloc", cudaHostAlloc(&unrelated, 4096, cudaHostAllocDefault));
  const PinnedBuffer own_unrelated = PinnedBuffer::Adopt(unrelated);  // freed last
  if (!unrelated) return;
  streams::HostFillPatternFrom(unrelated, 4096, 0, seed);
  void* x = nullptr;
  std::vector<unsigned char> heap;
  if (unregister) {
    heap.resize(kBytes + 4096);
    x = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(heap.data()) + 4095) & ~uintptr_t{4095});
    report.Error("pin", cudaHostRegister(x, kBytes, cudaHostRegisterMapped));
  } else {
    report.Error("pin", cudaHostAlloc(&x, kBytes, cudaHostAllocMapped));
  }
  void* alias = nullptr;
  report.Error("device_pointer", cudaHostGetDevicePointer(&alias, x, 0));
  void* dev = nullptr;
  report.Error("device_alloc", cudaMalloc(&dev, kBytes));
  const DeviceBuffer own_dev = DeviceBuffer::Adopt(dev);
  cudaStream_t s = nullptr;
  report.Error("stream", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (!alias || !dev || !s) return;
  streams::HostFillPatternFrom(x, kBytes, 0, seed ^ 2);
  report.Error("delay", LaunchDelay(streams::DelayNs(kDelayMs), s));
  report.Error("work", kernel ? LaunchInvertBytes(alias, kBytes, s)
                              : cudaMemcpyAsync(dev, x, kBytes, cudaMemcpyHostToDevice, s));  // copy-check: hazard; data recorded below
  const auto start = std::chrono::steady_clock::now();
  report.Error("release", unregister ? cudaHostUnregister(x) : cudaFreeHost(x));
  report.Set("release_ms", static_cast<long long>(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()));
  report.Error("query_after_release", cudaStreamQuery(s));  // cudaSuccess: the release waited for the work
  report.Error("stream_sync", cudaStreamSynchronize(s));
  if (!kernel) {
    std::vector<unsigned char> back(kBytes);
    report.Error("copy_back", cudaMemcpy(back.data(), dev, kBytes, cudaMemcpyDeviceToHost));
    report.Set("copied_bad_bytes", static_cast<long long>(streams::HostCountPattern(back.data(), kBytes, 0, seed ^ 2)));
  } else if (unregister) {
    // The heap stays mapped in the process: did the kernel's inversion land?
    report.Set("inverted_bad_bytes", static_cast<long long>(HostCountPatternMismatches(x, kBytes, seed ^ 2, 0xff)));
  }
  ReportAftermath(report, static_cast<unsigned char*>(unrelated), seed);
}

// A copy's source rewritten by the host before the copy's event: what arrives is recorded. The
// unrelated memory is a pinned buffer of its own (allocated just before the source, so a copy
// that ran past its source's bounds or a driver that mixed up the two would show), and the
// device bytes just past the copy's destination.
PAGELOCK_SCENARIO(ReuseBeforeEvent) {
  const uint32_t seed = 0x2e05e000u;
  void* unrelated = nullptr;
  report.Error("unrelated_alloc", cudaHostAlloc(&unrelated, 4096, cudaHostAllocDefault));
  const PinnedBuffer own_unrelated = PinnedBuffer::Adopt(unrelated);  // freed last
  if (!unrelated) return;
  streams::HostFillPatternFrom(unrelated, 4096, 0, seed ^ 5);
  void* x = nullptr;
  report.Error("pin", cudaHostAlloc(&x, kBytes, cudaHostAllocDefault));
  const PinnedBuffer own_x = PinnedBuffer::Adopt(x);
  void* dev = nullptr;
  report.Error("device_alloc", cudaMalloc(&dev, kBytes + 4096));
  const DeviceBuffer own_dev = DeviceBuffer::Adopt(dev);  // the owners free dev, x, then unrelated
  if (dev) report.Error("device_tail", cudaMemset(static_cast<char*>(dev) + kBytes, 0x5a, 4096));
  cudaStream_t s = nullptr;
  report.Error("stream", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t ev = nullptr;
  report.Error("event", cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  if (!x || !dev || !s || !ev) return;
  streams::HostFillPatternFrom(x, kBytes, 0, seed);
  report.Error("delay", LaunchDelay(streams::DelayNs(kDelayMs), s));
  report.Error("copy", cudaMemcpyAsync(dev, x, kBytes, cudaMemcpyHostToDevice, s));  // copy-check: counted below
  report.Error("record", cudaEventRecord(ev, s));
  streams::HostFillPatternFrom(x, kBytes, 0, seed ^ 3);  // the hazard: reuse before the event
  report.Error("event_sync", cudaEventSynchronize(ev));
  std::vector<unsigned char> back(kBytes);
  report.Error("copy_back", cudaMemcpy(back.data(), dev, kBytes, cudaMemcpyDeviceToHost));
  const size_t old_bad = streams::HostCountPattern(back.data(), kBytes, 0, seed);
  const size_t new_bad = streams::HostCountPattern(back.data(), kBytes, 0, seed ^ 3);
  report.Set("delivered", old_bad == 0 ? "old_bytes" : new_bad == 0 ? "new_bytes" : "mixed_bytes");
  std::vector<unsigned char> tail(4096, 0);
  report.Error("tail_back", cudaMemcpy(tail.data(), static_cast<char*>(dev) + kBytes, tail.size(),
                                       cudaMemcpyDeviceToHost));
  report.Set("device_tail_bad_bytes", static_cast<long long>(streams::HostCountByteMismatches(tail.data(), tail.size(), 0x5a)));
  ReportAftermath(report, static_cast<unsigned char*>(unrelated), seed ^ 5);
  cudaEventDestroy(ev);
  cudaStreamDestroy(s);
}

class HazardTest : public GpuTest, public ::testing::WithParamInterface<const char*> {
 protected:
  // What every hazard child must show: it ended normally, its set-up worked, unrelated memory
  // kept its bytes and later work in it still ran.
  void ExpectSurvived(const ChildResult& r) {
    for (const char* k : {"pin", "device_alloc", "stream"}) EXPECT_EQ(r.Get(k), ErrName(cudaSuccess)) << k;
    EXPECT_EQ(r.Get("unrelated_bad_bytes"), "0") << "unrelated pinned memory changed";
    Observe("next_work", r.Get("next_work"));
    // A hazard may leave a sticky error in its own (child) context; only where the context is
    // still healthy must the next work be exact.
    if (r.Get("next_work") == ErrName(cudaSuccess)) {
      EXPECT_EQ(r.Get("next_work_bad_bytes"), "0") << "a round trip after the hazard lost bytes";
    }
  }
};

TEST_P(HazardTest, ReleasingMemoryUnderQueuedWorkReturnsSuccessAndTheProcessSurvives) {
  PAGELOCK_RULE("R19,R33,R77,S10");
  const std::string arg = GetParam();
  if (arg.rfind("unregister", 0) == 0) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  ChildResult r = RunScenario("ReleaseWhileInFlight", 60, {ScenarioArgEnv(arg)});
  ASSERT_CHILD_COMPLETED(r);
  ExpectSurvived(r);
  EXPECT_EQ(r.Get("work"), ErrName(cudaSuccess));
  // cudaFreeHost / cudaHostUnregister of a valid pointer: success is the documented answer.
  EXPECT_EQ(r.Get("release"), ErrName(cudaSuccess)) << arg;
  Observe("release_ms", r.Get("release_ms"));
  Observe("release_waited_for_work", r.Get("query_after_release") == ErrName(cudaSuccess));
  Observe("stream_sync", r.Get("stream_sync"));
  for (const char* k : {"copied_bad_bytes", "inverted_bad_bytes"}) {
    if (r.Get(k) != "<missing>") Observe(k, r.Get(k));
  }
}

INSTANTIATE_TEST_SUITE_P(Releases, HazardTest,
                         ::testing::Values("free_copy", "free_kernel", "unregister_copy", "unregister_kernel"),
                         [](const auto& info) { return std::string(info.param); });

class ReuseHazardTest : public GpuTest {};

TEST_F(ReuseHazardTest, RewritingASourceBeforeItsEventIsRecordedAndHarmless) {
  PAGELOCK_RULE("R77,S10");
  ChildResult r = RunScenario("ReuseBeforeEvent", 60);
  ASSERT_CHILD_COMPLETED(r);
  for (const char* k : {"unrelated_alloc", "pin", "device_alloc", "device_tail", "stream", "copy", "record",
                        "event_sync", "copy_back", "tail_back", "next_work"}) {
    EXPECT_EQ(r.Get(k), ErrName(cudaSuccess)) << k << ": a data race on host memory is no CUDA error";
  }
  EXPECT_EQ(r.Get("next_work_bad_bytes"), "0");
  EXPECT_EQ(r.Get("unrelated_bad_bytes"), "0") << "a separate pinned buffer changed during the hazard";
  EXPECT_EQ(r.Get("device_tail_bad_bytes"), "0") << "the copy wrote past its destination's bounds";
  Observe("delivered", r.Get("delivered"));
}

}  // namespace
}  // namespace pagelock
