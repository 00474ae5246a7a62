// Synchronisation primitives really wait: a kernel that spins for a measurable time and only
// then writes a pattern into host memory runs first; after each primitive says "done" the host
// must see every byte of the pattern. Primitives: cudaStreamSynchronize, cudaEventSynchronize,
// polling cudaEventQuery, polling cudaStreamQuery, cudaStreamWaitEvent (a second stream copies
// the bytes once the event fired), cudaDeviceSynchronize, a cudaLaunchHostFunc callback, an
// event with cudaEventBlockingSync, and each device scheduling flag (in a fresh child process).
// Across devices: the same on every device, and an event of one device waited for by a stream
// of every other. Every wait is bounded. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <sstream>
#include <vector>
#include <thread>
#include <tuple>

#include "fixtures/child_process.h"
#include "fixtures/gpu_test.h"
#include "fixtures/time_scale.h"
#include "kernels/streams/stream_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

using streams::Buffer;
using streams::Checker;
using streams::Mem;
using streams::Stream;
using streams::StreamKind;

constexpr size_t kBytes = size_t{256} << 10;
constexpr double kDelayMs = 5;
constexpr double kLimitS = 10;  // every host-side wait gives up (and fails) after this

enum class Primitive {
  kStreamSynchronize, kEventSynchronize, kEventQueryPolling, kStreamQueryPolling,
  kStreamWaitEvent, kDeviceSynchronize, kHostFunc, kBlockingSyncEvent,
};

std::string PrimitiveName(Primitive p) {
  switch (p) {
    case Primitive::kStreamSynchronize: return "StreamSynchronize";
    case Primitive::kEventSynchronize: return "EventSynchronize";
    case Primitive::kEventQueryPolling: return "EventQueryPolling";
    case Primitive::kStreamQueryPolling: return "StreamQueryPolling";
    case Primitive::kStreamWaitEvent: return "StreamWaitEvent";
    case Primitive::kDeviceSynchronize: return "DeviceSynchronize";
    case Primitive::kHostFunc: return "LaunchHostFunc";
    case Primitive::kBlockingSyncEvent: return "BlockingSyncEvent";
  }
  return "Unknown";
}

// What the host callback found: it counts the bytes itself (no CUDA call inside, R89).
struct CallbackState {
  const unsigned char* p = nullptr;
  uint32_t seed = 0;
  size_t bad = 0;
  std::atomic<bool> done{false};
};

void CUDART_CB CountInCallback(void* arg) {
  auto* st = static_cast<CallbackState*>(arg);
  st->bad = streams::HostCountPattern(st->p, kBytes, 0, st->seed);
  st->done.store(true, std::memory_order_release);
}

// Waits for `done`, at most kLimitS (scaled).
bool AwaitFlag(const std::atomic<bool>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kLimitS * TimeScale());
  while (!done.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// Runs the delayed fill on `s` into buf, waits with primitive p and returns the number of
// pattern bytes the host (or, for kStreamWaitEvent, the waiting stream) did not see.
// `scratch` is device memory of kBytes for the waiting stream's copy.
void WaitAndCount(Primitive p, cudaStream_t s, const Buffer& buf, Buffer& scratch, Checker& check,
                  uint32_t seed, size_t* bad) {
  *bad = kBytes;
  std::memset(buf.host(), 0, kBytes);
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  ASSERT_CUDA_OK(LaunchDelayThenFill(buf.dev(), kBytes, seed, streams::DelayNs(kDelayMs), s));
  cudaEvent_t ev = nullptr;
  const unsigned ev_flags = p == Primitive::kBlockingSyncEvent ? cudaEventBlockingSync | cudaEventDisableTiming
                                                               : cudaEventDisableTiming;
  ASSERT_CUDA_OK(cudaEventCreateWithFlags(&ev, ev_flags));
  auto own_ev = OwnedEvent::Adopt(ev);
  ASSERT_CUDA_OK(cudaEventRecord(ev, s));
  switch (p) {
    case Primitive::kStreamSynchronize: ASSERT_CUDA_OK(cudaStreamSynchronize(s)); break;
    case Primitive::kEventSynchronize:
    case Primitive::kBlockingSyncEvent: ASSERT_CUDA_OK(cudaEventSynchronize(ev)); break;
    case Primitive::kEventQueryPolling:
      ASSERT_CUDA_OK(streams::PollEvent(ev, kLimitS)) << "the event did not complete within the limit";
      break;
    case Primitive::kStreamQueryPolling:
      ASSERT_CUDA_OK(streams::PollStream(s, kLimitS)) << "the stream did not complete within the limit";
      break;
    case Primitive::kDeviceSynchronize: ASSERT_CUDA_OK(cudaDeviceSynchronize()); break;
    case Primitive::kHostFunc: {
      // Heap state: if the callback never runs within the limit, it may still run later.
      auto* cb = new CallbackState;
      cb->p = buf.host();
      cb->seed = seed;
      ASSERT_CUDA_OK(cudaLaunchHostFunc(s, CountInCallback, cb));
      ASSERT_TRUE(AwaitFlag(cb->done)) << "the host callback did not run within the limit";
      *bad = cb->bad;
      delete cb;
      break;
    }
    case Primitive::kStreamWaitEvent: {
      cudaStream_t waiter = nullptr;
      ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&waiter, cudaStreamNonBlocking));
      auto own_waiter = OwnedStream::Adopt(waiter);
      ASSERT_CUDA_OK(cudaStreamWaitEvent(waiter, ev, 0));
      ASSERT_CUDA_OK(cudaMemcpyAsync(scratch.dev(), buf.dev(), kBytes, cudaMemcpyDeviceToDevice, waiter));
      ASSERT_CUDA_OK(cudaStreamSynchronize(waiter));
      EXPECT_CUDA_OK(own_waiter.Free());
      // What the waiting stream copied after the event; the checker's own sync comes later.
      ASSERT_CUDA_OK(check.CountPattern(scratch, 0, kBytes, 0, seed, bad));
      break;
    }
  }
  if (p != Primitive::kHostFunc && p != Primitive::kStreamWaitEvent) {
    *bad = streams::HostCountPattern(buf.host(), kBytes, 0, seed);
  }
  EXPECT_CUDA_OK(own_ev.Free());
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
}

class SyncPrimitiveTest : public GpuTest, public ::testing::WithParamInterface<std::tuple<Primitive, Mem>> {};

TEST_P(SyncPrimitiveTest, HostSeesEveryByteOfLongRunningWorkOnEveryStreamKind) {
  const Primitive p = std::get<0>(GetParam());
  const Mem m = std::get<1>(GetParam());
  PAGELOCK_RULE("R77,S03,S04");  // S04: the StreamWaitEvent cells
  if (streams::IsRegistered(m)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  std::string why;
  auto buf = Buffer::Make(m, kBytes, &why);
  ASSERT_NE(buf, nullptr) << why;
  auto scratch = Buffer::Make(Mem::kDevice, kBytes, &why);
  ASSERT_NE(scratch, nullptr) << why;
  Checker check;
  ASSERT_CUDA_OK(check.status());
  for (StreamKind k : {StreamKind::kLegacy, StreamKind::kPerThread, StreamKind::kNonBlocking}) {
    Stream s(k);
    ASSERT_CUDA_OK(s.status());
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    size_t bad = 0;
    WaitAndCount(p, s.get(), *buf, *scratch, check, seed, &bad);
    if (HasFatalFailure()) return;
    EXPECT_EQ(bad, 0u) << PrimitiveName(p) << " on a " << streams::StreamName(k) << " stream, " << MemName(m)
                       << " memory: " << bad << " of " << kBytes
                       << " bytes written by the kernel were not visible when the primitive said done";
  }
}

INSTANTIATE_TEST_SUITE_P(
    PrimitivesAndMemory, SyncPrimitiveTest,
    ::testing::Combine(::testing::Values(Primitive::kStreamSynchronize, Primitive::kEventSynchronize,
                                         Primitive::kEventQueryPolling, Primitive::kStreamQueryPolling,
                                         Primitive::kStreamWaitEvent, Primitive::kDeviceSynchronize,
                                         Primitive::kHostFunc, Primitive::kBlockingSyncEvent),
                       ::testing::Values(Mem::kPinnedMapped, Mem::kWriteCombined, Mem::kRegisteredMalloc)),
    [](const auto& info) {
      return PrimitiveName(std::get<0>(info.param)) + "_" + MemName(std::get<1>(info.param));
    });

// Device scheduling flags are process-global: each runs in a fresh child that sets the flag
// before its first CUDA call, runs the delayed fill and reports what each wait left visible.
PAGELOCK_SCENARIO(ScheduleFlagWait) {
  const unsigned flag = static_cast<unsigned>(std::stoul(ScenarioArg()));
  report.Error("set_device_flags", cudaSetDeviceFlags(flag | cudaDeviceMapHost));
  unsigned got = 0;
  report.Error("get_device_flags", cudaGetDeviceFlags(&got));
  report.Set("device_flags", static_cast<long long>(got));
  void* p = nullptr;
  report.Error("host_alloc", cudaHostAlloc(&p, kBytes, cudaHostAllocMapped));
  if (!p) return;
  const uint32_t seed = 0x5eed0000u ^ flag;
  const char* waits[] = {"stream_sync", "event_sync", "device_sync"};
  for (int w = 0; w < 3; ++w) {
    std::memset(p, 0, kBytes);
    cudaEvent_t ev = nullptr;
    report.Error(std::string(waits[w]) + "_event_create", cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    report.Error(std::string(waits[w]) + "_launch", LaunchDelayThenFill(p, kBytes, seed, streams::DelayNs(kDelayMs), 0));
    report.Error(std::string(waits[w]) + "_record", cudaEventRecord(ev, 0));
    cudaError_t e = w == 0 ? cudaStreamSynchronize(0) : w == 1 ? cudaEventSynchronize(ev) : cudaDeviceSynchronize();
    report.Error(waits[w], e);
    report.Set(std::string(waits[w]) + "_bad_bytes",
               static_cast<long long>(streams::HostCountPattern(p, kBytes, 0, seed)));
    cudaEventDestroy(ev);
  }
  report.Error("free_host", cudaFreeHost(p));
}

class ScheduleFlagTest : public GpuTest, public ::testing::WithParamInterface<unsigned> {};

TEST_P(ScheduleFlagTest, WaitsUnderTheSchedulingFlagSeeEveryByte) {
  PAGELOCK_RULE("R59,R77,S03");
  ChildResult r = RunScenario("ScheduleFlagWait", 60, {ScenarioArgEnv(std::to_string(GetParam()))});
  ASSERT_CHILD_COMPLETED(r);
  EXPECT_EQ(r.Get("set_device_flags"), ErrName(cudaSuccess));
  EXPECT_EQ(r.Get("host_alloc"), ErrName(cudaSuccess));
  const std::string flags = r.Get("device_flags");
  if (flags != "<missing>") {
    EXPECT_EQ(std::stoul(flags) & cudaDeviceScheduleMask, GetParam()) << "the scheduling flag did not stick";
  }
  for (const char* w : {"stream_sync", "event_sync", "device_sync"}) {
    EXPECT_EQ(r.Get(w), ErrName(cudaSuccess)) << w;
    EXPECT_EQ(r.Get(std::string(w) + "_bad_bytes"), "0")
        << w << " returned before the kernel's bytes were visible to the host";
  }
}

// Only the blocking-sync flag: the host sleeps in the wait, so a wake-up before the work ends is
// the failure to catch. Spin and Yield behave like the default the other cases run under, and a
// child costs a CUDA start-up (the suite's GPU-time budget).
INSTANTIATE_TEST_SUITE_P(Flags, ScheduleFlagTest,
                         ::testing::Values(cudaDeviceScheduleBlockingSync),
                         [](const auto& info) {
                           return info.param == cudaDeviceScheduleSpin    ? std::string("Spin")
                                  : info.param == cudaDeviceScheduleYield ? std::string("Yield")
                                                                           : std::string("BlockingSync");
                         });

class MultiDeviceSyncTest : public GpuTest {};

TEST_F(MultiDeviceSyncTest, WaitsOnEveryDeviceSeeEveryByteOfItsKernel) {
  PAGELOCK_RULE("R14,R77,S03");
  PAGELOCK_REQUIRE(RequireDeviceCount(2));
  std::string why;
  auto buf = Buffer::Make(Mem::kPinnedPortable, kBytes, &why);
  ASSERT_NE(buf, nullptr) << why;
  const int count = static_cast<int>(Probe().devices.size());
  for (int d = 0; d < count; ++d) {
    ASSERT_CUDA_OK(cudaSetDevice(d));
    cudaStream_t s = nullptr;
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    auto own_s = OwnedStream::Adopt(s);
    for (int w = 0; w < 3; ++w) {
      const uint32_t seed = static_cast<uint32_t>(CaseRng()());
      std::memset(buf->host(), 0, kBytes);
      cudaEvent_t ev = nullptr;
      ASSERT_CUDA_OK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
      auto own_ev = OwnedEvent::Adopt(ev);
      // Under UVA the host pointer is valid on every device (R14).
      ASSERT_CUDA_OK(LaunchDelayThenFill(buf->host(), kBytes, seed, streams::DelayNs(kDelayMs), s));
      ASSERT_CUDA_OK(cudaEventRecord(ev, s));
      ASSERT_CUDA_OK(w == 0 ? cudaStreamSynchronize(s) : w == 1 ? cudaEventSynchronize(ev) : cudaDeviceSynchronize());
      EXPECT_EQ(streams::HostCountPattern(buf->host(), kBytes, 0, seed), 0u)
          << "device " << d << ", wait " << (w == 0 ? "cudaStreamSynchronize" : w == 1 ? "cudaEventSynchronize"
                                                                                 : "cudaDeviceSynchronize")
          << ": bytes of the kernel not visible after the wait";
      EXPECT_CUDA_OK(own_ev.Free());
    }
    EXPECT_CUDA_OK(own_s.Free());
  }
  ASSERT_CUDA_OK(cudaSetDevice(0));
}

TEST_F(MultiDeviceSyncTest, AStreamOfEveryOtherDeviceWaitsForAnEventOfEachDevice) {
  PAGELOCK_RULE("R14,R77,S04");
  PAGELOCK_REQUIRE(RequireDeviceCount(2));
  std::string why;
  auto buf = Buffer::Make(Mem::kPinnedPortable, kBytes, &why);
  ASSERT_NE(buf, nullptr) << why;
  const int count = static_cast<int>(Probe().devices.size());
  for (int a = 0; a < count; ++a) {
    for (int b = 0; b < count; ++b) {
      if (a == b) continue;
      const uint32_t seed = static_cast<uint32_t>(CaseRng()());
      std::memset(buf->host(), 0, kBytes);
      ASSERT_CUDA_OK(cudaSetDevice(b));
      void* copy = nullptr;
      ASSERT_CUDA_OK(cudaMalloc(&copy, kBytes));
      auto own_copy = DeviceBuffer::Adopt(copy);
      cudaStream_t sb = nullptr;
      ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
      auto own_sb = OwnedStream::Adopt(sb);
      ASSERT_CUDA_OK(cudaSetDevice(a));
      cudaStream_t sa = nullptr;
      ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
      auto own_sa = OwnedStream::Adopt(sa);
      cudaEvent_t ev = nullptr;
      ASSERT_CUDA_OK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
      auto own_ev = OwnedEvent::Adopt(ev);
      ASSERT_CUDA_OK(LaunchDelayThenFill(buf->host(), kBytes, seed, streams::DelayNs(kDelayMs), sa));
      ASSERT_CUDA_OK(cudaEventRecord(ev, sa));
      ASSERT_CUDA_OK(cudaSetDevice(b));
      ASSERT_CUDA_OK(cudaStreamWaitEvent(sb, ev, 0));
      ASSERT_CUDA_OK(cudaMemcpyAsync(copy, buf->host(), kBytes, cudaMemcpyHostToDevice, sb));
      ASSERT_CUDA_OK(cudaStreamSynchronize(sb));
      std::vector<unsigned char> back(kBytes);
      ASSERT_CUDA_OK(cudaMemcpy(back.data(), copy, kBytes, cudaMemcpyDeviceToHost));
      EXPECT_EQ(streams::HostCountPattern(back.data(), kBytes, 0, seed), 0u)
          << "device " << b << " copied the buffer after waiting for an event of device " << a
          << " but did not get every byte the kernel wrote before the event";
      EXPECT_CUDA_OK(own_sb.Free());
      EXPECT_CUDA_OK(own_copy.Free());
      ASSERT_CUDA_OK(cudaSetDevice(a));
      EXPECT_CUDA_OK(cudaStreamSynchronize(sa));
      EXPECT_CUDA_OK(own_ev.Free());
      EXPECT_CUDA_OK(own_sa.Free());

    }
  }
  ASSERT_CUDA_OK(cudaSetDevice(0));
}

}  // namespace
}  // namespace pagelock
