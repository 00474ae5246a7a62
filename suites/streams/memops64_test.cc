// 64-bit stream memory operations on page-locked host memory (peer-gap A15):
// cuStreamWaitValue64 with every comparison (GEQ, EQ, AND, NOR) with and without
// CU_STREAM_WAIT_VALUE_FLUSH holds the work queued behind it until a host thread stores a value
// that satisfies it; an EQ wait is held until cuStreamWriteValue64 from another stream (or, where
// that write did not release it, the host) stores the whole value, the host reading all 64 bits
// of every value either stream wrote (whether the other stream's write released the wait is
// recorded, not asserted: see WriteValue64Test); one cuStreamBatchMemOp holds its own writes
// behind its wait.
// On cudaHostAlloc(Mapped) memory and on registered heap memory.
//
// The values are chosen so that a 64-bit operation done on 32 bits decides differently: the
// GEQ and EQ waits start with the awaited value's low half already in the word (a 32-bit wait
// would pass at once), and the AND and NOR masks live in the high half (a 32-bit wait would never
// pass); wait_values_test shows it for every comparison.
//
// CUDA 13.0 Driver API reference (cuda.h, CUstreamWaitValue_flags): GEQ "Wait until
// (int32_t)(*addr - value) >= 0 (or int64_t for 64 bit values)", EQ "Wait until *addr == value",
// AND "Wait until (*addr & value) != 0", NOR "Wait until ~(*addr | value) != 0. Support for this
// operation can be queried with ... CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR", FLUSH
// "Follow the wait operation with a flush of outstanding remote writes ... queried with
// CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES"; cuStreamWaitValue64 / cuStreamWriteValue64:
// "Support for this can be queried with cuDeviceGetAttribute() and
// CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS". A capability the device lacks is
// NotSupported with the attribute and its value.
//
// Every wait is bounded: the waits run in a child scenario (fixtures/child_process.h) with a time
// limit; in the child the host only polls the event against a deadline, and a wait not released
// within it is released by the host with a value that satisfies any correct comparison (and the
// case fails, except where the other stream's write was to release it: that is recorded); a
// stream that still does not drain ends the child's work, its memory left to process exit
// (freeing it would synchronise). The cases of one memory kind share one child run
// (a context costs a child about 0.3 s), so its seed comes from the run seed and the kind.
// Rule ids refer to suites/rules.tsv (R97, R98, R170).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "fixtures/bounded_wait.h"
#include "fixtures/child_process.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_kinds.h"
#include "fixtures/kind_buffer.h"
#include "fixtures/seed.h"
#include "fixtures/time_scale.h"
#include "suites/streams/wait_values.h"

namespace pagelock {
namespace {


using memops64::kOps;
using memops64::Op;
using memops64::OpFlag;
using memops64::OpName;
using memops64::ValuesFor;
using memops64::WaitValues;

std::string VariantName(Op op, bool flush) { return OpName(op) + (flush ? "_Flush" : "_NoFlush"); }

constexpr size_t kBytes = 4096;
constexpr size_t kWordOff = 0, kDoneOff = 64, kWriterWordOff = 128, kWriterDoneOff = 192, kWriterMarkOff = 224;
constexpr size_t kBatchWordOff = 256, kBatchDoneOff = 320, kBatchDone32Off = 384;
constexpr double kChildLimitS = 60;  // scaled by PAGELOCK_TIME_SCALE in RunScenario
constexpr double kReleaseBoundS = 10;

std::string Hex(uint64_t v) { return ::pagelock::Hex(v, 16); }

uint64_t* HostWord(const KindBuffer& b, size_t off) { return reinterpret_cast<uint64_t*>(b.host() + off); }
CUdeviceptr DevWord(const KindBuffer& b, size_t off) { return reinterpret_cast<CUdeviceptr>(b.dev() + off); }

// Reports the first poll's answer `first`; a wait still held then is rescued (the host stores
// `rescue`, which satisfies any correct comparison) and polled again. False when the stream
// still does not drain (the caller then stops and leaks).
bool Drained(ScenarioReport& report, const std::string& k, cudaEvent_t ev, uint64_t* word, uint64_t rescue,
             cudaError_t first) {
  cudaError_t r = first;
  report.Error(k + "released", r);
  if (r == cudaErrorNotReady) {
    __atomic_store_n(word, rescue, __ATOMIC_RELEASE);
    report.Set(k + "rescued", 1);
    r = PollEvent(ev, kReleaseBoundS);
  }
  report.Set(k + "drained", r == cudaErrorNotReady ? 0 : 1);
  return r != cudaErrorNotReady;
}

// The wait, a 64-bit write behind it and an event; a host thread satisfies the wait after a
// delay. False when the stream could not be drained.
bool RunWait(ScenarioReport& report, const DriverApi& d, const KindBuffer& buf, cudaStream_t s, Op op, bool flush,
             uint64_t random) {
  const std::string k = VariantName(op, flush) + ".";
  uint64_t* word = HostWord(buf, kWordOff);
  uint64_t* done = HostWord(buf, kDoneOff);
  const WaitValues v = ValuesFor(op, random);
  const uint64_t marker = (random * 0x9E3779B97F4A7C15ull) | 1;
  __atomic_store_n(done, uint64_t{0}, __ATOMIC_RELEASE);
  __atomic_store_n(word, v.initial, __ATOMIC_RELEASE);
  cudaEvent_t ev = nullptr;
  report.Error(k + "event_create", cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  const auto cs = reinterpret_cast<CUstream>(s);
  const unsigned flags = OpFlag(op) | (flush ? static_cast<unsigned>(CU_STREAM_WAIT_VALUE_FLUSH) : 0u);
  report.Cu(k + "wait", d.cuStreamWaitValue64(cs, DevWord(buf, kWordOff), v.value, flags));
  report.Cu(k + "write", d.cuStreamWriteValue64(cs, DevWord(buf, kDoneOff), marker, CU_STREAM_WRITE_VALUE_DEFAULT));
  report.Error(k + "record", cudaEventRecord(ev, s));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  report.Error(k + "held", cudaEventQuery(ev));
  report.Set(k + "early", Hex(__atomic_load_n(done, __ATOMIC_ACQUIRE)));
  std::thread releaser([word, release = v.release] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    __atomic_store_n(word, release, __ATOMIC_RELEASE);
  });
  const cudaError_t first = PollEvent(ev, kReleaseBoundS);
  releaser.join();
  if (!Drained(report, k, ev, word, v.rescue, first)) return false;
  report.Set(k + "done_word", Hex(__atomic_load_n(done, __ATOMIC_ACQUIRE)));
  report.Set(k + "marker", Hex(marker));
  report.Error(k + "event_destroy", cudaEventDestroy(ev));
  return true;
}

// An EQ wait on `waiter` that cuStreamWriteValue64 on `writer` should release; the writer then
// writes a marker of its own, which lands whoever released the wait (the host's rescue stores
// the awaited value itself, so the word alone would not show the writer's 64-bit write).
bool RunWriter(ScenarioReport& report, const DriverApi& d, const KindBuffer& buf, cudaStream_t waiter,
               cudaStream_t writer, uint64_t random) {
  const std::string k = "Writer.";
  uint64_t* word = HostWord(buf, kWriterWordOff);
  uint64_t* done = HostWord(buf, kWriterDoneOff);
  uint64_t* mark = HostWord(buf, kWriterMarkOff);
  const uint64_t value = random | (uint64_t{1} << 63);
  const uint64_t marker = ~value | 1;
  const uint64_t writer_marker = (value * 0xBF58476D1CE4E5B9ull) | (uint64_t{1} << 62) | 1;
  __atomic_store_n(done, uint64_t{0}, __ATOMIC_RELEASE);
  __atomic_store_n(mark, uint64_t{0}, __ATOMIC_RELEASE);
  __atomic_store_n(word, value ^ (uint64_t{1} << 44), __ATOMIC_RELEASE);  // low half already equal
  cudaEvent_t ev = nullptr;
  report.Error(k + "event_create", cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  const auto ws = reinterpret_cast<CUstream>(waiter);
  report.Cu(k + "wait", d.cuStreamWaitValue64(ws, DevWord(buf, kWriterWordOff), value, CU_STREAM_WAIT_VALUE_EQ));
  report.Cu(k + "write", d.cuStreamWriteValue64(ws, DevWord(buf, kWriterDoneOff), marker, CU_STREAM_WRITE_VALUE_DEFAULT));
  report.Error(k + "record", cudaEventRecord(ev, waiter));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  report.Error(k + "held", cudaEventQuery(ev));
  report.Cu(k + "release", d.cuStreamWriteValue64(reinterpret_cast<CUstream>(writer), DevWord(buf, kWriterWordOff),
                                                  value, CU_STREAM_WRITE_VALUE_DEFAULT));
  report.Cu(k + "writer_write", d.cuStreamWriteValue64(reinterpret_cast<CUstream>(writer), DevWord(buf, kWriterMarkOff),
                                                       writer_marker, CU_STREAM_WRITE_VALUE_DEFAULT));
  if (!Drained(report, k, ev, word, value, PollEvent(ev, kReleaseBoundS))) return false;
  report.Error(k + "writer_sync", cudaStreamSynchronize(writer));
  report.Set(k + "word", Hex(__atomic_load_n(word, __ATOMIC_ACQUIRE)));
  report.Set(k + "value", Hex(value));
  report.Set(k + "done_word", Hex(__atomic_load_n(done, __ATOMIC_ACQUIRE)));
  report.Set(k + "marker", Hex(marker));
  report.Set(k + "writer_done_word", Hex(__atomic_load_n(mark, __ATOMIC_ACQUIRE)));
  report.Set(k + "writer_marker", Hex(writer_marker));
  report.Error(k + "event_destroy", cudaEventDestroy(ev));
  return true;
}

// One cuStreamBatchMemOp: a 64-bit GEQ wait, then a 64-bit and a 32-bit write behind it in the
// same batch ("The operations are enqueued in the order they appear in the array"). A driver
// that runs a batch's writes before its wait, or writes 64-bit values as 32-bit ones, fails.
bool RunBatch(ScenarioReport& report, const DriverApi& d, const KindBuffer& buf, cudaStream_t s, uint64_t random) {
  const std::string k = "Batch.";
  uint64_t* word = HostWord(buf, kBatchWordOff);
  uint64_t* done = HostWord(buf, kBatchDoneOff);
  auto* done32 = reinterpret_cast<uint32_t*>(buf.host() + kBatchDone32Off);
  const WaitValues v = ValuesFor(Op::kGeq, random);
  const uint64_t marker = (random * 0xD1B54A32D192ED03ull) | (uint64_t{1} << 63) | 1;
  const uint32_t marker32 = static_cast<uint32_t>(random >> 17) | 0x80000001u;
  __atomic_store_n(done, uint64_t{0}, __ATOMIC_RELEASE);
  __atomic_store_n(done32, uint32_t{0}, __ATOMIC_RELEASE);
  __atomic_store_n(word, v.initial, __ATOMIC_RELEASE);
  CUstreamBatchMemOpParams ops[3];
  std::memset(ops, 0, sizeof ops);
  ops[0].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
  ops[0].waitValue.address = DevWord(buf, kBatchWordOff);
  ops[0].waitValue.value64 = v.value;
  ops[0].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
  ops[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  ops[1].writeValue.address = DevWord(buf, kBatchDoneOff);
  ops[1].writeValue.value64 = marker;
  ops[1].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
  ops[2].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[2].writeValue.address = DevWord(buf, kBatchDone32Off);
  ops[2].writeValue.value = marker32;
  ops[2].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
  cudaEvent_t ev = nullptr;
  report.Error(k + "event_create", cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  report.Cu(k + "batch", d.cuStreamBatchMemOp(reinterpret_cast<CUstream>(s), 3, ops, 0));
  report.Error(k + "record", cudaEventRecord(ev, s));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  report.Error(k + "held", cudaEventQuery(ev));
  report.Set(k + "early", Hex(__atomic_load_n(done, __ATOMIC_ACQUIRE) | __atomic_load_n(done32, __ATOMIC_ACQUIRE)));
  __atomic_store_n(word, v.release, __ATOMIC_RELEASE);
  if (!Drained(report, k, ev, word, v.rescue, PollEvent(ev, kReleaseBoundS))) return false;
  report.Set(k + "done_word", Hex(__atomic_load_n(done, __ATOMIC_ACQUIRE)));
  report.Set(k + "marker", Hex(marker));
  report.Set(k + "done32", Hex(__atomic_load_n(done32, __ATOMIC_ACQUIRE)));
  report.Set(k + "marker32", Hex(marker32));
  report.Error(k + "event_destroy", cudaEventDestroy(ev));
  return true;
}

// Argument "<kind> <seed> <flush supported> <nor supported>".
PAGELOCK_SCENARIO(MemOps64) {
  const DriverApi& d = Driver();
  if (!d.loaded) {
    report.Set("make", "driver api: " + d.error);
    return;
  }
  std::istringstream in(ScenarioArg());
  int kind = 0, flush_ok = 0, nor_ok = 0;
  unsigned long long seed = 0;
  in >> kind >> seed >> flush_ok >> nor_ok;
  report.Error("init", cudaFree(nullptr));  // the primary context, current for the cu* calls
  std::string why;
  auto buf = KindBuffer::Make(static_cast<HostKind>(kind), kBytes, &why);
  report.Set("make", buf ? "ok" : why);
  if (!buf) return;
  cudaStream_t s = nullptr, other = nullptr;
  report.Error("stream_create", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  report.Error("other_create", cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  std::mt19937_64 rng(seed);
  bool drained = true;
  for (Op op : kOps) {
    if (op == Op::kNor && !nor_ok) continue;
    for (bool flush : {false, true}) {
      if (flush && !flush_ok) continue;
      if (drained) drained = RunWait(report, d, *buf, s, op, flush, rng());
    }
  }
  if (drained) drained = RunWriter(report, d, *buf, s, other, rng());
  if (drained) drained = RunBatch(report, d, *buf, s, rng());
  report.Set("drained", drained ? 1 : 0);
  if (!drained) {
    buf.release();  // leaked on purpose: freeing page-locked memory would synchronise
    return;
  }
  report.Error("stream_destroy", cudaStreamDestroy(s));
  report.Error("other_destroy", cudaStreamDestroy(other));
  report.Error("free", buf->Free());
}

// A driver attribute the case needs, as a requirement naming the attribute and its value.
Requirement RequireDriverAttr(const DriverApi& d, CUdevice_attribute a, const char* name) {
  CUdevice dev = 0;
  int v = -1;
  CUresult r = d.cuDeviceGet(&dev, 0);
  if (r == CUDA_SUCCESS) r = d.cuDeviceGetAttribute(&v, a, dev);
  if (r == CUDA_SUCCESS && v == 1) return {};
  std::ostringstream why;
  why << name << "=" << v << " (need 1) on device 0";
  if (r != CUDA_SUCCESS) why << " (cuDeviceGetAttribute: " << DescribeCu(r) << ")";
  return {false, why.str()};
}

bool HasDriverAttr(const DriverApi& d, CUdevice_attribute a) { return RequireDriverAttr(d, a, "").met; }

// One child run per memory kind, shared by that kind's cases.
const ChildResult& ChildFor(const DriverApi& d, HostKind kind) {
  const uint64_t seed = RunSeed() ^ (0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(kind) + 1));
  const int flush_ok = HasDriverAttr(d, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES) ? 1 : 0;
  const int nor_ok = HasDriverAttr(d, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR) ? 1 : 0;
  const std::string arg = std::to_string(static_cast<int>(kind)) + " " + std::to_string(seed) + " " +
                          std::to_string(flush_ok) + " " + std::to_string(nor_ok);
  return SharedScenario("MemOps64", kChildLimitS, {ScenarioArgEnv(arg)});
}

const HostKind kKinds[] = {HostKind::kHostAllocMapped, HostKind::kRegisteredMalloc};

class MemOps64Base : public DriverApiGpuTest {
 protected:
  void Require(HostKind kind) {
    if (IsRegistered(kind)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
    PAGELOCK_REQUIRE(RequireDriverAttr(d, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
                                       "CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS"));
  }
};

class WaitValue64Test : public MemOps64Base, public ::testing::WithParamInterface<std::tuple<Op, bool, HostKind>> {
 protected:
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    Require(std::get<2>(GetParam()));
    if (IsSkipped()) return;
    if (std::get<0>(GetParam()) == Op::kNor)
      PAGELOCK_REQUIRE(RequireDriverAttr(d, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR,
                                         "CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR"));
    if (IsSkipped()) return;
    if (std::get<1>(GetParam()))
      PAGELOCK_REQUIRE(RequireDriverAttr(d, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES,
                                         "CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES"));
  }
};

TEST_P(WaitValue64Test, HoldsLaterWorkUntilAHostThreadStoresASatisfyingValue) {
  PAGELOCK_RULE("R97");
  const ChildResult& r = ChildFor(d, std::get<2>(GetParam()));
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("make"), "ok") << "buffer";
  const std::string k = VariantName(std::get<0>(GetParam()), std::get<1>(GetParam())) + ".";
  ASSERT_EQ(r.Get(k + "wait"), "CUDA_SUCCESS") << "cuStreamWaitValue64";
  EXPECT_EQ(r.Get(k + "write"), "CUDA_SUCCESS") << "cuStreamWriteValue64 behind the wait";
  EXPECT_EQ(r.Get(k + "record"), "cudaSuccess");
  EXPECT_EQ(r.Get(k + "held"), "cudaErrorNotReady")
      << "work behind cuStreamWaitValue64 completed before the host thread stored a satisfying value";
  EXPECT_EQ(r.Get(k + "early"), Hex(0)) << "the write behind the wait landed before the wait was satisfied";
  EXPECT_EQ(r.Get(k + "released"), "cudaSuccess")
      << "the wait did not end within " << kReleaseBoundS << " s of the host thread's store"
      << (r.Get(k + "rescued") == "1" ? " (the host then stored a value any comparison passes)" : "");
  ASSERT_EQ(r.Get(k + "drained"), "1") << "the stream never drained; the child stopped here";
  EXPECT_EQ(r.Get(k + "done_word"), r.Get(k + "marker")) << "the 64-bit value written behind the wait, as the host reads it";
  EXPECT_EQ(r.Get(k + "event_destroy"), "cudaSuccess");
}

std::string WaitName(const ::testing::TestParamInfo<std::tuple<Op, bool, HostKind>>& info) {
  return VariantName(std::get<0>(info.param), std::get<1>(info.param)) + "_" + HostKindName(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(EveryComparison, WaitValue64Test,
                         ::testing::Combine(::testing::ValuesIn(kOps), ::testing::Bool(), ::testing::ValuesIn(kKinds)),
                         WaitName);

class WriteValue64Test : public MemOps64Base, public ::testing::WithParamInterface<HostKind> {
 protected:
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    Require(GetParam());
  }
};

// Whether the other stream's write releases the wait is left open. cuStreamWaitValue64 (cuda.h):
// "Improper use of this API may deadlock the application. Synchronization ordering established
// through this API is not visible to CUDA. CUDA tasks that are (even indirectly) ordered by this
// API should also have that order expressed with CUDA-visible dependencies such as events. This
// ensures that the scheduler does not serialize them in an improper order." Here only the wait
// orders the writer's store before the waiter's later work (no event expresses it), so a
// scheduler may serialize the writer behind the waiter: which of the two ended the wait (the
// writer, or the host storing the same value after 10 s) is observation cross_stream_release.
// What stays asserted is documented whichever ended it, and fails a broken driver: the EQ wait
// whose low 32 bits already match is held ("Wait until *addr == value"), a store of the value
// (the host's is R97's) releases it and the waiter drains, the poll ends in success or not-ready
// (never an error), and the host reads all 64 bits of the other stream's value, of the marker the
// other stream wrote after it (the word alone cannot show the writer's write after a rescue),
// and of the waiter's marker.
TEST_P(WriteValue64Test, FromAnotherStreamWritesAll64BitsAndAnEqualWaitHoldsUntilTheWholeWordMatches) {
  PAGELOCK_RULE("R98");
  const ChildResult& r = ChildFor(d, GetParam());
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("make"), "ok") << "buffer";
  ASSERT_EQ(r.Get("Writer.wait"), "CUDA_SUCCESS") << "cuStreamWaitValue64";
  EXPECT_EQ(r.Get("Writer.write"), "CUDA_SUCCESS");
  EXPECT_EQ(r.Get("Writer.held"), "cudaErrorNotReady")
      << "an EQ wait whose low 32 bits already matched passed before the value was written";
  EXPECT_EQ(r.Get("Writer.release"), "CUDA_SUCCESS") << "cuStreamWriteValue64 on the other stream";
  EXPECT_EQ(r.Get("Writer.writer_write"), "CUDA_SUCCESS") << "cuStreamWriteValue64 of the other stream's marker";
  const bool rescued = r.Get("Writer.rescued") == "1";
  Observe("cross_stream_release", rescued ? "rescued by the host" : "released by the other stream");
  EXPECT_DOCUMENTED_ONE_OF("cross_stream_release_poll", r.Get("Writer.released"),
                           (std::vector<std::string>{"cudaSuccess", "cudaErrorNotReady"}),
                           "cudaEventQuery: done, or not ready within the bound (the order is not visible to CUDA)");
  EXPECT_EQ(rescued, r.Get("Writer.released") == "cudaErrorNotReady") << "the host rescues exactly a wait not released";
  ASSERT_EQ(r.Get("Writer.drained"), "1")
      << "the waiter never drained" << (rescued ? " after the host stored the awaited value" : "");
  EXPECT_EQ(r.Get("Writer.writer_sync"), "cudaSuccess");
  EXPECT_EQ(r.Get("Writer.word"), r.Get("Writer.value")) << "the awaited 64-bit value, as the host reads it";
  EXPECT_EQ(r.Get("Writer.writer_done_word"), r.Get("Writer.writer_marker"))
      << "the other stream's 64-bit marker, as the host reads it";
  EXPECT_EQ(r.Get("Writer.done_word"), r.Get("Writer.marker")) << "the waiter's 64-bit value, as the host reads it";
  EXPECT_EQ(r.Get("stream_destroy"), "cudaSuccess");
  EXPECT_EQ(r.Get("free"), "cudaSuccess");
}

INSTANTIATE_TEST_SUITE_P(PinnedAndRegistered, WriteValue64Test, ::testing::ValuesIn(kKinds), HostKindParamName());

using BatchMemOpTest = WriteValue64Test;

TEST_P(BatchMemOpTest, WritesBehindAWaitInOneBatchLandOnlyOnceItIsSatisfiedAtTheirFullWidth) {
  PAGELOCK_RULE("R170");
  const ChildResult& r = ChildFor(d, GetParam());
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("make"), "ok") << "buffer";
  ASSERT_EQ(r.Get("Batch.batch"), "CUDA_SUCCESS") << "cuStreamBatchMemOp (wait 64, write 64, write 32)";
  EXPECT_EQ(r.Get("Batch.held"), "cudaErrorNotReady") << "work behind the batch's wait completed before the host's store";
  EXPECT_EQ(r.Get("Batch.early"), Hex(0)) << "a write of the batch landed before the batch's wait was satisfied";
  EXPECT_EQ(r.Get("Batch.released"), "cudaSuccess")
      << "the batch's wait did not end within " << kReleaseBoundS << " s of the host's store"
      << (r.Get("Batch.rescued") == "1" ? " (the host then stored a value any comparison passes)" : "");
  ASSERT_EQ(r.Get("Batch.drained"), "1") << "the stream never drained";
  EXPECT_EQ(r.Get("Batch.done_word"), r.Get("Batch.marker")) << "the batch's 64-bit write, as the host reads it";
  EXPECT_EQ(r.Get("Batch.done32"), r.Get("Batch.marker32")) << "the batch's 32-bit write, as the host reads it";
  EXPECT_EQ(r.Get("Batch.event_destroy"), "cudaSuccess");
}

INSTANTIATE_TEST_SUITE_P(PinnedAndRegistered, BatchMemOpTest, ::testing::ValuesIn(kKinds), HostKindParamName());

}  // namespace
}  // namespace pagelock
