// Synchronisation primitives really wait: a kernel that spins for a measurable time and only
// then writes a pattern into host memory runs first; after each primitive says "done" the host
// must see every byte of the pattern. Primitives: cudaStreamSynchronize, cudaEventSynchronize,
// polling cudaEventQuery, polling cudaStreamQuery, cudaStreamWaitEvent (a second stream copies
// the bytes once the event fired), cudaDeviceSynchronize, a cudaLaunchHostFunc callback, an
// event with cudaEventBlockingSync, and each device scheduling flag (in a fresh child process).
// Each primitive also waits for the last operation queued before it, whatever it is (a kernel, a
// runtime or driver memset, 1D or 2D, a device-to-host copy), and for the work ahead of it
// (LastOperationTest): a driver that takes a wait's dependency from the stream's kernels and
// copies only, as one whose host function ran at once after a memset did, passed the kernel-only
// matrix. Across devices: the same on every device, and an event of one device waited for by a
// stream of every other. Every wait is bounded. Rule ids refer to suites/rules.tsv.
#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>
#include <thread>
#include <tuple>

#include "fixtures/byte_model.h"
#include "fixtures/child_process.h"
#include "fixtures/driver_api.h"
#include "fixtures/gpu_test.h"
#include "fixtures/time_scale.h"
#include "kernels/streams/stream_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

using streams::Checker;
using streams::MemName;

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

// Every primitive, in the order the case names have always had.
const std::vector<Primitive>& AllPrimitives() {
  static const std::vector<Primitive> all = {
      Primitive::kStreamSynchronize, Primitive::kEventSynchronize, Primitive::kEventQueryPolling,
      Primitive::kStreamQueryPolling, Primitive::kStreamWaitEvent, Primitive::kDeviceSynchronize,
      Primitive::kHostFunc, Primitive::kBlockingSyncEvent};
  return all;
}

// What the buffer must hold once a primitive says done, region by region: `sizes` bytes each
// (SyncPrimitiveTest: the whole buffer; LastOperationTest: its two halves).
//   on_host     counts the wrong bytes of each region in kBytes of host-readable memory. The host
//               callback runs it too: it makes no CUDA call (R89) and captures values only (a
//               callback that runs after the limit may outlive the case's locals).
//   on_scratch  the same for the waiting stream's copy in device memory (kStreamWaitEvent).
using HostCount = std::function<std::vector<size_t>(const unsigned char* p)>;
struct Expectation {
  std::vector<size_t> sizes;
  HostCount on_host;
  std::function<cudaError_t(const KindBuffer& scratch, Checker& check, std::vector<size_t>* bad)> on_scratch;
};

// What the host callback found: it counts the bytes itself (no CUDA call inside, R89).
struct CallbackState {
  const unsigned char* p = nullptr;
  HostCount count;
  std::vector<size_t> bad;
  std::atomic<bool> done{false};
};

void CUDART_CB CountInCallback(void* arg) {
  auto* st = static_cast<CallbackState*>(arg);
  st->bad = st->count(st->p);
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

// Zeroes buf, lets `queue` put the work on `s` (its ASSERTs end the run), records an event after
// it, waits with primitive p and sets *bad to the wrong bytes of each region of `want` that the
// host (or, for kStreamWaitEvent, the waiting stream) saw when the primitive said done.
// `scratch` is device memory of kBytes for the waiting stream's copy.
void WaitAndCount(Primitive p, cudaStream_t s, const KindBuffer& buf, KindBuffer& scratch, Checker& check,
                  const std::function<void(cudaStream_t)>& queue, const Expectation& want,
                  std::vector<size_t>* bad) {
  *bad = want.sizes;
  std::memset(buf.host(), 0, kBytes);
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  queue(s);
  if (::testing::Test::HasFatalFailure()) return;
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
      cb->count = want.on_host;
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
      // copy-check: counted by want.on_scratch below
      ASSERT_CUDA_OK(cudaMemcpyAsync(scratch.dev(), buf.dev(), kBytes, cudaMemcpyDeviceToDevice, waiter));
      ASSERT_CUDA_OK(cudaStreamSynchronize(waiter));
      EXPECT_CUDA_OK(own_waiter.Free());
      // What the waiting stream copied after the event; the count's own sync comes later.
      ASSERT_CUDA_OK(want.on_scratch(scratch, check, bad));
      break;
    }
  }
  if (p != Primitive::kHostFunc && p != Primitive::kStreamWaitEvent) *bad = want.on_host(buf.host());
  EXPECT_CUDA_OK(own_ev.Free());
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
}

// SyncPrimitiveTest's expectation: the delayed kernel's pattern (seed) in every byte, the waiting
// stream's copy counted on the device.
Expectation WholePattern(uint32_t seed) {
  return {{kBytes},
          [seed](const unsigned char* p) { return std::vector<size_t>{streams::HostCountPattern(p, kBytes, 0, seed)}; },
          [seed](const KindBuffer& scratch, Checker& check, std::vector<size_t>* bad) {
            return check.CountPattern(scratch, 0, kBytes, 0, seed, &(*bad)[0]);
          }};
}

class SyncPrimitiveTest : public GpuTest, public ::testing::WithParamInterface<std::tuple<Primitive, HostKind>> {};

TEST_P(SyncPrimitiveTest, HostSeesEveryByteOfLongRunningWorkOnEveryStreamKind) {
  const Primitive p = std::get<0>(GetParam());
  const HostKind m = std::get<1>(GetParam());
  PAGELOCK_RULE("R77,S03,S04");  // S04: the StreamWaitEvent cells
  if (IsRegistered(m)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  std::string why;
  auto buf = KindBuffer::Make(m, kBytes, &why);
  ASSERT_NE(buf, nullptr) << why;
  auto scratch = KindBuffer::Make(HostKind::kDevice, kBytes, &why);
  ASSERT_NE(scratch, nullptr) << why;
  Checker check;
  ASSERT_CUDA_OK(check.status());
  for (StreamKind k : {StreamKind::kLegacyDefault, StreamKind::kPerThreadDefault, StreamKind::kNonBlocking}) {
    KindStream s(k);
    ASSERT_CUDA_OK(s.status());
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    std::vector<size_t> bad;
    WaitAndCount(
        p, s.get(), *buf, *scratch, check,
        [&](cudaStream_t st) {
          ASSERT_CUDA_OK(LaunchDelayThenFill(buf->dev(), kBytes, seed, streams::DelayNs(kDelayMs), st));
        },
        WholePattern(seed), &bad);
    if (HasFatalFailure()) return;
    EXPECT_EQ(bad[0], 0u) << PrimitiveName(p) << " on a " << StreamKindName(k) << " stream, " << MemName(m)
                          << " memory: " << bad[0] << " of " << kBytes
                          << " bytes written by the kernel were not visible when the primitive said done";
  }
}

INSTANTIATE_TEST_SUITE_P(
    PrimitivesAndMemory, SyncPrimitiveTest,
    ::testing::Combine(::testing::ValuesIn(AllPrimitives()),
                       ::testing::Values(HostKind::kHostAllocMapped, HostKind::kHostAllocMappedWriteCombined, HostKind::kRegisteredMalloc)),
    [](const auto& info) {
      return PrimitiveName(std::get<0>(info.param)) + "_" + MemName(std::get<1>(info.param));
    });

// The last operation queued before the wait, behind the delayed kernel that fills the first half:
// it writes the second half. A primitive must wait for it whatever engine runs it, and for the
// kernel ahead of it (S03: "after ... says the work is done"; cudaLaunchHostFunc: "The host
// function will be called after currently enqueued work").
enum class LastOp {
  kKernel,                  // a second kernel, another seed
  kMemsetAsync,             // cudaMemsetAsync
  kMemset2DAsync,           // cudaMemset2DAsync, pitch wider than the rows
  kDriverMemsetD16Async,    // cuMemsetD16Async
  kDriverMemsetD32Async,    // cuMemsetD32Async
  kDriverMemsetD2D8Async,   // cuMemsetD2D8Async, pitch wider than the rows
  kCopyDeviceToHostAsync,   // cudaMemcpyAsync from device memory into the host pointer
};

std::string LastOpName(LastOp o) {
  switch (o) {
    case LastOp::kKernel: return "Kernel";
    case LastOp::kMemsetAsync: return "MemsetAsync";
    case LastOp::kMemset2DAsync: return "Memset2DAsync";
    case LastOp::kDriverMemsetD16Async: return "DriverMemsetD16Async";
    case LastOp::kDriverMemsetD32Async: return "DriverMemsetD32Async";
    case LastOp::kDriverMemsetD2D8Async: return "DriverMemsetD2D8Async";
    case LastOp::kCopyDeviceToHostAsync: return "CopyDeviceToHostAsync";
  }
  return "Unknown";
}

bool IsDriver(LastOp o) {
  return o == LastOp::kDriverMemsetD16Async || o == LastOp::kDriverMemsetD32Async ||
         o == LastOp::kDriverMemsetD2D8Async;
}

// The halves; the 2D memsets see the second as kRows rows kPitch bytes apart, kWidth bytes of
// each written and the rest a gap that keeps the zero fill.
constexpr size_t kHalf = kBytes / 2;
constexpr size_t kPitch = 1024;
constexpr size_t kWidth = kPitch - 64;
constexpr size_t kRows = kHalf / kPitch;
static_assert(kHalf % kPitch == 0, "the second half is whole rows");

// The pitched byte model (fixtures/byte_model.h) of the second half after a memset of `elem` (`size`
// bytes) into `box` over the zero fill, and a count of the bytes at p that differ from it (read
// through volatile, no CUDA call: the host callback runs it too).
std::function<size_t(const unsigned char*)> ModelCount(const pitched::Layout& l, const pitched::Box& box, const void* elem,
                                                       size_t size) {
  std::vector<unsigned char> want(l.bytes(), 0);
  pitched::ModelFill(&want, l, pitched::Pos{}, box, elem, size);
  return [l, want](const unsigned char* p) {
    std::string where;
    return pitched::CountModelMismatches(p, want, l, &where);
  };
}

// The second half as one row, and as kRows rows of kPitch bytes with kWidth written (2D).
const pitched::Layout kLinear{kHalf, 1, 1};
const pitched::Box kLinearBox{kHalf, 1, 1};
const pitched::Layout kRowsLayout{kPitch, kRows, 1};
const pitched::Box kRowsBox{kWidth, kRows, 1};

// The last operation of one stream kind's run: what it queues (ASSERTs inside) and how its half,
// at p, is counted (no CUDA call, values captured).
struct SecondHalf {
  std::function<void(cudaStream_t)> queue;
  std::function<size_t(const unsigned char* p)> count;
};

// Every value from `draw` (the case seed's generator); `source` is the copy's device memory,
// filled here with its pattern and synchronised before anything is queued.
void MakeSecondHalf(LastOp op, uint32_t kernel_seed, uint64_t draw, const KindBuffer& buf, const KindBuffer* source,
                    Checker& check, SecondHalf* out) {
  unsigned char* const dst = buf.dev() + kHalf;
  const auto dp = reinterpret_cast<CUdeviceptr>(dst);
  // Four different bytes, none 0 (the zero fill would pass for it): a 16- or 32-bit element
  // written in the wrong byte order shows.
  const uint32_t elem = pitched::ElementValue(draw, 0);
  const unsigned char v8 = static_cast<unsigned char>(elem);
  uint32_t seed = static_cast<uint32_t>(draw >> 32);
  if (seed == kernel_seed) seed ^= 1;  // another pattern than the first half's
  const DriverApi* d = &Driver();
  // cudaStreamLegacy and cudaStreamPerThread are CU_STREAM_LEGACY and CU_STREAM_PER_THREAD.
  switch (op) {
    case LastOp::kKernel:
      out->queue = [=](cudaStream_t s) { ASSERT_CUDA_OK(LaunchFillPatternFrom(dst, kHalf, kHalf, seed, s)); };
      out->count = [=](const unsigned char* p) { return streams::HostCountPattern(p, kHalf, kHalf, seed); };
      return;
    case LastOp::kMemsetAsync:
      out->queue = [=](cudaStream_t s) {
        ASSERT_CUDA_OK(cudaMemsetAsync(dst, v8, kHalf, s));  // copy-check: counted by out->count
      };
      out->count = ModelCount(kLinear, kLinearBox, &v8, 1);
      return;
    case LastOp::kMemset2DAsync:
      out->queue = [=](cudaStream_t s) {
        ASSERT_CUDA_OK(cudaMemset2DAsync(dst, kPitch, v8, kWidth, kRows, s));  // copy-check: counted by out->count
      };
      out->count = ModelCount(kRowsLayout, kRowsBox, &v8, 1);
      return;
    case LastOp::kDriverMemsetD16Async: {
      const auto v16 = static_cast<uint16_t>(elem);
      out->queue = [=](cudaStream_t s) {
        // copy-check: counted by out->count
        ASSERT_CU_OK(d->cuMemsetD16Async(dp, v16, kHalf / sizeof v16, static_cast<CUstream>(s)));
      };
      out->count = ModelCount(kLinear, kLinearBox, &v16, sizeof v16);
      return;
    }
    case LastOp::kDriverMemsetD32Async:
      out->queue = [=](cudaStream_t s) {
        // copy-check: counted by out->count
        ASSERT_CU_OK(d->cuMemsetD32Async(dp, elem, kHalf / sizeof elem, static_cast<CUstream>(s)));
      };
      out->count = ModelCount(kLinear, kLinearBox, &elem, sizeof elem);
      return;
    case LastOp::kDriverMemsetD2D8Async:
      out->queue = [=](cudaStream_t s) {
        // copy-check: counted by out->count
        ASSERT_CU_OK(d->cuMemsetD2D8Async(dp, kPitch, v8, kWidth, kRows, static_cast<CUstream>(s)));
      };
      out->count = ModelCount(kRowsLayout, kRowsBox, &v8, 1);
      return;
    case LastOp::kCopyDeviceToHostAsync: {
      ASSERT_NE(source, nullptr);
      ASSERT_CUDA_OK(check.FillPattern(*source, 0, kHalf, 0, seed));  // synchronises the device
      unsigned char* const host = buf.host() + kHalf;
      const unsigned char* const src = source->dev();
      out->queue = [=](cudaStream_t s) {
        // copy-check: counted by out->count
        ASSERT_CUDA_OK(cudaMemcpyAsync(host, src, kHalf, cudaMemcpyDeviceToHost, s));
      };
      out->count = [=](const unsigned char* p) { return streams::HostCountPattern(p, kHalf, 0, seed); };
      return;
    }
  }
  FAIL() << "unknown last operation";
}

// LastOperationTest's expectation: the kernel's pattern in the first half, the last operation's
// bytes in the second; the waiting stream's copy is read back and counted the same way.
Expectation TwoHalves(uint32_t kernel_seed, const std::function<size_t(const unsigned char*)>& second) {
  HostCount on_host = [kernel_seed, second](const unsigned char* p) {
    return std::vector<size_t>{streams::HostCountPattern(p, kHalf, 0, kernel_seed), second(p + kHalf)};
  };
  return {{kHalf, kHalf}, on_host,
          [on_host](const KindBuffer& scratch, Checker&, std::vector<size_t>* bad) {
            cudaError_t e = cudaDeviceSynchronize();
            if (e != cudaSuccess) return e;
            std::vector<unsigned char> back(kBytes);
            // copy-check: counted by on_host next
            e = cudaMemcpy(back.data(), scratch.dev(), kBytes, cudaMemcpyDeviceToHost);
            if (e == cudaSuccess) *bad = on_host(back.data());
            return e;
          }};
}

class LastOperationTest : public GpuTest,
                          public ::testing::WithParamInterface<std::tuple<Primitive, LastOp>> {};

// Pinned mapped memory only (SyncPrimitiveTest varies the memory). Faults (tools/faults) that fail
// it: a host function after a memset that runs at once (host_func_after_memset_runs_early) the
// LaunchHostFunc_After*Memset* cases, one that always runs at once (host_func_runs_early) every
// LaunchHostFunc_*; a device-to-host copy whose bytes land after completion
// (dtoh_async_bytes_arrive_late) every *_AfterCopyDeviceToHostAsync; a stream or event wait that
// gives up after 2 ms (stream_sync_times_out, event_sync_times_out) the StreamSynchronize_*,
// EventSynchronize_* and BlockingSyncEvent_* cases: the kernel ahead spins 5 ms.
TEST_P(LastOperationTest, EveryPrimitiveWaitsForTheLastOperationQueuedAndTheWorkAheadOfIt) {
  const Primitive p = std::get<0>(GetParam());
  const LastOp op = std::get<1>(GetParam());
  PAGELOCK_RULE("R77,S03,S04");  // S04: the StreamWaitEvent cells
  if (IsDriver(op)) PAGELOCK_REQUIRE(RequireDriverApi());
  std::string why;
  auto buf = KindBuffer::Make(HostKind::kHostAllocMapped, kBytes, &why);  // the runtime's context is current for cu* calls
  ASSERT_NE(buf, nullptr) << why;
  auto scratch = KindBuffer::Make(HostKind::kDevice, kBytes, &why);
  ASSERT_NE(scratch, nullptr) << why;
  std::unique_ptr<KindBuffer> source;
  if (op == LastOp::kCopyDeviceToHostAsync) {
    source = KindBuffer::Make(HostKind::kDevice, kHalf, &why);
    ASSERT_NE(source, nullptr) << why;
  }
  Checker check;
  ASSERT_CUDA_OK(check.status());
  for (StreamKind k : {StreamKind::kLegacyDefault, StreamKind::kPerThreadDefault, StreamKind::kNonBlocking}) {
    KindStream s(k);
    ASSERT_CUDA_OK(s.status());
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    SecondHalf second;
    MakeSecondHalf(op, seed, CaseRng()(), *buf, source.get(), check, &second);
    if (HasFatalFailure()) return;
    std::vector<size_t> bad;
    WaitAndCount(
        p, s.get(), *buf, *scratch, check,
        [&](cudaStream_t st) {
          ASSERT_CUDA_OK(LaunchDelayThenFill(buf->dev(), kHalf, seed, streams::DelayNs(kDelayMs), st));
          second.queue(st);
        },
        TwoHalves(seed, second.count), &bad);
    if (HasFatalFailure()) return;
    const std::string where = PrimitiveName(p) + " after " + LastOpName(op) + " on a " + StreamKindName(k) +
                              " stream: ";
    EXPECT_EQ(bad[0], 0u) << where << bad[0] << " of " << kHalf
                          << " bytes of the first half (the delayed kernel queued ahead of the last operation) "
                             "were wrong when the primitive said done";
    EXPECT_EQ(bad[1], 0u) << where << bad[1] << " of " << kHalf << " bytes of the second half (what "
                          << LastOpName(op) << ", the last operation queued, wrote"
                          << (op == LastOp::kMemset2DAsync || op == LastOp::kDriverMemsetD2D8Async
                                  ? ", and the zero gaps between its rows"
                                  : "")
                          << ") were wrong when the primitive said done";
  }
}

INSTANTIATE_TEST_SUITE_P(
    PrimitivesAndLastOperations, LastOperationTest,
    ::testing::Combine(::testing::ValuesIn(AllPrimitives()),
                       ::testing::Values(LastOp::kKernel, LastOp::kMemsetAsync, LastOp::kMemset2DAsync,
                                         LastOp::kDriverMemsetD16Async, LastOp::kDriverMemsetD32Async,
                                         LastOp::kDriverMemsetD2D8Async, LastOp::kCopyDeviceToHostAsync)),
    [](const auto& info) {
      return PrimitiveName(std::get<0>(info.param)) + "_After" + LastOpName(std::get<1>(info.param));
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
  auto buf = KindBuffer::Make(HostKind::kHostAllocPortable, kBytes, &why);
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
  auto buf = KindBuffer::Make(HostKind::kHostAllocPortable, kBytes, &why);
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
