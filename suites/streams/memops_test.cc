// Stream memory operations on page-locked host memory (driver API, 32-bit forms, available on
// every device since CUDA 12.0): cuStreamWaitValue32 keeps the work behind it from running until
// the host writes the word (whether another stream's write releases it is recorded: the order is
// not visible to CUDA), and cuStreamWriteValue32's value is what the host reads once the stream's
// event completes. On registered memory and on cudaHostAlloc memory.
//
// Every wait is bounded, twice over:
// - Each case runs in a child scenario (fixtures/child_process.h) with a time limit, so a host
//   call that blocks behind a wait the driver never releases ends as TIMEOUT of that child, not as
//   a hung test binary. The first H200 run hung this way: with lazy module loading (the default
//   since CUDA 12.2) the first launch of a kernel loads its module, which may synchronise the
//   context, and a stream held by cuStreamWaitValue32 never drains, so the launch never returned.
//   Every kernel a case launches is therefore launched once (and synchronised) before any wait is
//   enqueued.
// - In the child the host only polls (cudaStreamQuery / cudaEventQuery) against a deadline; on
//   timeout it releases the wait itself (writes the awaited value) and polls again, and the case
//   fails naming what did not happen (or, where the documentation leaves it open, records it). Buffers are freed only once every stream has drained
//   (freeing pinned memory synchronises).
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <thread>

#include "fixtures/child_process.h"
#include "fixtures/driver_api.h"
#include "fixtures/gpu_test.h"
#include "kernels/access_kernels.h"
#include "kernels/streams/stream_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

using streams::MemName;


constexpr size_t kBytes = 4096;
constexpr double kChildLimitS = 90;  // scaled by PAGELOCK_TIME_SCALE in RunScenario

// Scenario argument "<mem kind> <seed>".
void ParseArg(HostKind* kind, uint32_t* seed) {
  std::istringstream in(ScenarioArg());
  int k = 0;
  unsigned long long s = 0;
  in >> k >> s;
  *kind = static_cast<HostKind>(k);
  *seed = static_cast<uint32_t>(s);
}

// The start of every scenario here: the driver API, the argument ("<kind> <seed>") and the
// buffer of that kind; "make" says "ok" or why not. Null when the scenario cannot run.
std::unique_ptr<KindBuffer> StartScenario(ScenarioReport& report, uint32_t* seed) {
  const DriverApi& d = Driver();
  if (!d.loaded) {
    report.Set("make", "driver api: " + d.error);
    return nullptr;
  }
  HostKind kind;
  ParseArg(&kind, seed);
  std::string why;
  auto buf = KindBuffer::Make(kind, kBytes, &why);
  report.Set("make", buf ? "ok" : why);
  return buf;
}

std::string Arg(HostKind kind, uint32_t seed) {
  return ScenarioArgEnv(std::to_string(static_cast<int>(kind)) + " " + std::to_string(seed));
}

// Destroys what it can without blocking: only when `drained` (every stream of the case is idle)
// are the streams destroyed and the buffer freed; otherwise the child leaves them to process exit.
void Cleanup(ScenarioReport& report, bool drained, std::unique_ptr<KindBuffer>* buf,
             std::initializer_list<cudaStream_t> ss, cudaEvent_t ev) {
  report.Set("drained", drained ? 1 : 0);
  if (!drained) {
    buf->release();  // leaked on purpose: cudaFreeHost / cudaHostUnregister would synchronise
    return;
  }
  if (ev) report.Error("event_destroy", cudaEventDestroy(ev));
  cudaError_t e = cudaSuccess;
  for (cudaStream_t s : ss) {
    cudaError_t d = cudaStreamDestroy(s);
    if (e == cudaSuccess) e = d;
  }
  report.Error("stream_destroy", e);
  buf->reset();
}

PAGELOCK_SCENARIO(MemOpsWaitHolds) {
  const DriverApi& d = Driver();
  uint32_t seed;
  // [0] the word waited for; data from byte 256.
  auto buf = StartScenario(report, &seed);
  if (!buf) return;
  auto* word = reinterpret_cast<unsigned*>(buf->host());
  const auto dword = reinterpret_cast<CUdeviceptr>(buf->dev());
  unsigned char* data = buf->host() + 256;
  cudaStream_t s = nullptr, other = nullptr;
  report.Error("stream_create", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  report.Error("other_create", cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  cudaEvent_t ev = nullptr;
  report.Error("event_create", cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  // Load the kernel before any wait exists (lazy loading may synchronise the context).
  report.Error("preload", LaunchFillPattern(buf->dev() + 256, 1024, seed, s));
  report.Error("preload_sync", cudaStreamSynchronize(s));
  std::memset(buf->host(), 0, kBytes);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);

  report.Cu("wait", d.cuStreamWaitValue32(reinterpret_cast<CUstream>(s), dword, 1, CU_STREAM_WAIT_VALUE_GEQ));
  report.Error("fill", LaunchFillPattern(buf->dev() + 256, 1024, seed, s));
  report.Error("record", cudaEventRecord(ev, s));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  report.Error("held", cudaEventQuery(ev));
  report.Set("early", static_cast<long long>(streams::HostCountByteMismatches(data, 1024, 0)));  // bytes no longer zero
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  __atomic_store_n(word, 1u, __ATOMIC_RELEASE);
  const cudaError_t done = streams::PollEvent(ev, 10);
  report.Error("done", done);
  cudaError_t drained = done == cudaErrorNotReady ? cudaErrorNotReady : streams::PollStream(s, 10);
  if (drained == cudaErrorNotReady) {
    // The driver never saw the host's write: write the word again, then from another stream.
    __atomic_store_n(word, 2u, __ATOMIC_RELEASE);
    report.Cu("device_release", d.cuStreamWriteValue32(reinterpret_cast<CUstream>(other), dword, 2, 0));
    drained = streams::PollStream(s, 10);
  }
  report.Error("drain", drained);
  const bool idle = drained != cudaErrorNotReady && streams::PollStream(other, 10) != cudaErrorNotReady;
  if (idle) report.Set("bad", static_cast<long long>(streams::HostCountPattern(data, 1024, 0, seed)));
  Cleanup(report, idle, &buf, {s, other}, ev);
}

PAGELOCK_SCENARIO(MemOpsWriterReleases) {
  const DriverApi& d = Driver();
  uint32_t seed;
  auto buf = StartScenario(report, &seed);
  if (!buf) return;
  std::memset(buf->host(), 0, kBytes);
  auto* words = reinterpret_cast<unsigned*>(buf->host());
  const auto base = reinterpret_cast<CUdeviceptr>(buf->dev());
  cudaStream_t waiter = nullptr, writer = nullptr;
  report.Error("waiter_create", cudaStreamCreateWithFlags(&waiter, cudaStreamNonBlocking));
  report.Error("writer_create", cudaStreamCreateWithFlags(&writer, cudaStreamNonBlocking));
  // Load the delay kernel before any wait exists (lazy loading may synchronise the context).
  report.Error("preload", LaunchDelay(0, writer));
  report.Error("preload_sync", cudaStreamSynchronize(writer));

  // The waiter waits for word 0 == 0xC0FFEE, then writes word 16 = 0xBEEF.
  report.Cu("wait", d.cuStreamWaitValue32(reinterpret_cast<CUstream>(waiter), base, 0xC0FFEEu, CU_STREAM_WAIT_VALUE_EQ));
  report.Cu("waiter_write", d.cuStreamWriteValue32(reinterpret_cast<CUstream>(waiter), base + 64, 0xBEEFu, 0));
  // The writer first spins a little, so the wait is really waiting when the value comes.
  report.Error("delay", LaunchDelay(streams::DelayNs(5), writer));
  report.Cu("writer_write", d.cuStreamWriteValue32(reinterpret_cast<CUstream>(writer), base, 0xC0FFEEu, 0));
  // A marker only the writer stores: after a host rescue the awaited word alone cannot show it.
  report.Cu("writer_marker_write", d.cuStreamWriteValue32(reinterpret_cast<CUstream>(writer), base + 128, 0xFACEu, 0));
  report.Error("writer_done", streams::PollStream(writer, 10));
  cudaError_t released = streams::PollStream(waiter, 10);
  report.Error("released", released);
  if (released == cudaErrorNotReady) {
    __atomic_store_n(words, 0xC0FFEEu, __ATOMIC_RELEASE);  // the same value, from the host
    report.Set("host_release", 1);
    released = streams::PollStream(waiter, 10);
  }
  report.Error("drain", released);
  const cudaError_t writer_end = released != cudaErrorNotReady ? streams::PollStream(writer, 10) : cudaErrorNotReady;
  report.Error("writer_end", writer_end);
  const bool idle = released != cudaErrorNotReady && writer_end != cudaErrorNotReady;
  report.Set("word0", static_cast<long long>(__atomic_load_n(words, __ATOMIC_ACQUIRE)));
  report.Set("word16", static_cast<long long>(__atomic_load_n(words + 16, __ATOMIC_ACQUIRE)));
  report.Set("word32", static_cast<long long>(__atomic_load_n(words + 32, __ATOMIC_ACQUIRE)));
  Cleanup(report, idle, &buf, {waiter, writer}, nullptr);
}

class MemOpsTest : public GpuTest, public ::testing::WithParamInterface<HostKind> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireDriverApi());
    if (IsRegistered(GetParam())) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  }
};

TEST_P(MemOpsTest, WaitValueHoldsLaterWorkUntilTheHostWritesTheWord) {
  PAGELOCK_RULE("R77,S13");
  const uint32_t seed = static_cast<uint32_t>(CaseRng()());
  ChildResult r = RunScenario("MemOpsWaitHolds", kChildLimitS, {Arg(GetParam(), seed)});
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("make"), "ok") << "buffer";
  EXPECT_EQ(r.Get("preload"), "cudaSuccess");
  EXPECT_EQ(r.Get("preload_sync"), "cudaSuccess");
  ASSERT_EQ(r.Get("wait"), "CUDA_SUCCESS") << "cuStreamWaitValue32";
  EXPECT_EQ(r.Get("fill"), "cudaSuccess");
  EXPECT_EQ(r.Get("record"), "cudaSuccess");
  EXPECT_EQ(r.Get("held"), "cudaErrorNotReady") << "work behind cuStreamWaitValue32 completed before the host wrote the word";
  EXPECT_EQ(r.Get("early"), "0") << "bytes behind the wait were written before the host wrote the word";
  EXPECT_EQ(r.Get("done"), "cudaSuccess") << "the wait did not end within 10 s of the host's write"
                                          << (r.Get("device_release") != "<missing>"
                                                  ? " (released by cuStreamWriteValue32 from another stream: " +
                                                        r.Get("device_release") + ", drain " + r.Get("drain") + ")"
                                                  : "");
  EXPECT_EQ(r.Get("drain"), "cudaSuccess");
  ASSERT_EQ(r.Get("drained"), "1") << "the stream could not be drained; buffers leaked in the child";
  EXPECT_EQ(r.Get("bad"), "0") << "bytes of the work behind the wait";
  EXPECT_EQ(r.Get("stream_destroy"), "cudaSuccess");
  EXPECT_EQ(r.Get("event_destroy"), "cudaSuccess");
}

// Whether the other stream's write releases the wait is left open: cuStreamWaitValue32 (cuda.h)
// warns "Synchronization ordering established through this API is not visible to CUDA. CUDA
// tasks that are (even indirectly) ordered by this API should also have that order expressed with
// CUDA-visible dependencies such as events. This ensures that the scheduler does not serialize
// them in an improper order." No event expresses it here, so the writer may be serialized behind
// the waiter; which ended the wait (the writer, or the host storing the same value after 10 s) is
// observation cross_stream_release. Asserted whichever ended it, and failing a broken driver: the
// calls succeed, the polls end in success or not-ready (never an error), the waiter drains once
// the value is stored and the writer finishes, and the host reads the writer's value and marker
// and the waiter's value.
TEST_P(MemOpsTest, WriteValueFromAnotherStreamLandsAndTheWaitEndsOnceTheWordMatches) {
  PAGELOCK_RULE("R77,S13");
  ChildResult r = RunScenario("MemOpsWriterReleases", kChildLimitS, {Arg(GetParam(), 0)});
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("make"), "ok") << "buffer";
  EXPECT_EQ(r.Get("preload"), "cudaSuccess");
  EXPECT_EQ(r.Get("preload_sync"), "cudaSuccess");
  ASSERT_EQ(r.Get("wait"), "CUDA_SUCCESS") << "cuStreamWaitValue32";
  EXPECT_EQ(r.Get("waiter_write"), "CUDA_SUCCESS");
  EXPECT_EQ(r.Get("delay"), "cudaSuccess");
  EXPECT_EQ(r.Get("writer_write"), "CUDA_SUCCESS");
  EXPECT_EQ(r.Get("writer_marker_write"), "CUDA_SUCCESS");
  const bool rescued = r.Get("host_release") == "1";
  Observe("cross_stream_release", rescued ? "rescued by the host" : "released by the other stream");
  Observe("writer_done_before_release", r.Get("writer_done"));
  const std::vector<std::string> poll = {"cudaSuccess", "cudaErrorNotReady"};
  const char* why = "cudaStreamQuery: done, or not ready within the bound (the order is not visible to CUDA)";
  EXPECT_DOCUMENTED_ONE_OF("writer_done", r.Get("writer_done"), poll, why);
  EXPECT_DOCUMENTED_ONE_OF("released", r.Get("released"), poll, why);
  EXPECT_EQ(rescued, r.Get("released") == "cudaErrorNotReady") << "the host rescues exactly a wait not released";
  EXPECT_EQ(r.Get("drain"), "cudaSuccess")
      << "the wait did not end within 10 s of its value being stored" << (rescued ? " by the host" : "");
  EXPECT_EQ(r.Get("writer_end"), "cudaSuccess") << "the writer stream did not finish once the wait ended";
  ASSERT_EQ(r.Get("drained"), "1") << "the streams could not be drained; buffers leaked in the child";
  EXPECT_EQ(r.Get("word0"), std::to_string(0xC0FFEEu)) << "the awaited value, as the host reads it";
  EXPECT_EQ(r.Get("word32"), std::to_string(0xFACEu)) << "the writer's marker, as the host reads it";
  EXPECT_EQ(r.Get("word16"), std::to_string(0xBEEFu)) << "the waiter's value, as the host reads it";
  EXPECT_EQ(r.Get("stream_destroy"), "cudaSuccess");
}

INSTANTIATE_TEST_SUITE_P(Memory, MemOpsTest, ::testing::Values(HostKind::kHostAllocMapped, HostKind::kRegisteredMalloc),
                         [](const auto& info) { return MemName(info.param); });

}  // namespace
}  // namespace pagelock
