// Execution-time versus call-time reads. A kernel that waits on a mapped flag holds a stream;
// a copy is queued behind it; the host then changes the source (or reads the destination)
// before it releases the flag.
//   - H2D from page-locked memory is read when the copy executes: the device gets the new bytes.
//   - H2D from pageable memory (attr 88 = 0) is staged when the call returns (or the call waits
//     for the stream): the device gets the bytes the source held at the call. What the call did
//     is recorded.
//   - D2H into page-locked memory is not done, and neither its stream nor an event after it
//     reports completion, until the kernel in front of it has finished ("complete" is never
//     reported early); afterwards every byte is there.
// Every wait is bounded: the kernel gives up after kFlagTimeoutS and says so.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>
#include <cstring>

#include "fixtures/gpu_test.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"
#include "kernels/streams/stream_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

using streams::Checker;
using streams::MemName;

constexpr size_t kBytes = size_t{256} << 10;
constexpr double kFlagTimeoutS = 5;
constexpr double kCallReturnS = 0.5;  // a call still running after this waited for the stream

class OrderingTest : public GpuTest, public ::testing::WithParamInterface<HostKind> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    void* p = nullptr;
    ASSERT_CUDA_OK(cudaHostAlloc(&p, 2 * sizeof(unsigned), cudaHostAllocMapped));
    flag_ = static_cast<unsigned*>(p);
    status_ = flag_ + 1;
    flag_[0] = 0;
    status_[0] = kKernelOk;
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (flag_) __atomic_store_n(flag_, 1u, __ATOMIC_RELEASE);  // never leave a kernel waiting
    if (stream_) {
      EXPECT_CUDA_OK(cudaStreamSynchronize(stream_));
    }
    if (stream_) {
      EXPECT_CUDA_OK(cudaStreamDestroy(stream_));
    }
    if (flag_) {
      EXPECT_CUDA_OK(cudaFreeHost(flag_));
    }
    GpuTest::TearDown();
  }
  cudaError_t HoldStream() {
    return LaunchAwaitFlag(flag_, 1, static_cast<uint64_t>(kFlagTimeoutS * TimeScale() * 1e9), status_, stream_);
  }
  // A full fence first: the host's stores to write-combined memory sit in WC buffers that a
  // release store alone (a plain mov on x86) does not drain.
  void Release() {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(flag_, 1u, __ATOMIC_RELEASE);
  }
  bool KernelTimedOut() const { return __atomic_load_n(status_, __ATOMIC_ACQUIRE) == kKernelTimedOut; }

  unsigned* flag_ = nullptr;
  unsigned* status_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

using ExecutionTimeReadTest = OrderingTest;

TEST_P(ExecutionTimeReadTest, AsyncHostToDeviceCopyReadsItsSourceWhenTheDocumentationSays) {
  PAGELOCK_RULE("R76,S05");
  const HostKind m = GetParam();
  if (IsRegistered(m)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  std::string why;
  auto src = KindBuffer::Make(m, kBytes, &why);
  ASSERT_NE(src, nullptr) << why;
  auto dst = KindBuffer::Make(HostKind::kDevice, kBytes, &why);
  ASSERT_NE(dst, nullptr) << why;
  Checker check;
  ASSERT_CUDA_OK(check.status());
  const uint32_t old_seed = static_cast<uint32_t>(CaseRng()());
  const uint32_t new_seed = old_seed ^ 0x9e3779b9u;
  ASSERT_CUDA_OK(check.FillByte(*dst, 0, kBytes, 0));
  streams::HostFillPatternFrom(src->host(), kBytes, 0, old_seed);
  ASSERT_CUDA_OK(HoldStream());

  // The call runs on a helper thread: a pageable copy may wait for the held stream.
  auto call = std::async(std::launch::async, [&] {
    return cudaMemcpyAsync(dst->dev(), src->host(), kBytes, cudaMemcpyHostToDevice, stream_);
  });
  const bool returned =
      call.wait_for(std::chrono::duration<double>(kCallReturnS * TimeScale())) == std::future_status::ready;
  Observe("call_returned_while_stream_held", returned);
  if (returned) {
    EXPECT_EQ(cudaStreamQuery(stream_), cudaErrorNotReady) << "the held stream reported complete";
    streams::HostFillPatternFrom(src->host(), kBytes, 0, new_seed);  // after the call, before execution
  }
  Release();
  ASSERT_CUDA_OK(call.get());
  ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
  ASSERT_FALSE(KernelTimedOut()) << "the device never saw the host's flag within " << kFlagTimeoutS << " s";
  size_t bad_old = 0, bad_new = 0;
  ASSERT_CUDA_OK(check.CountPattern(*dst, 0, kBytes, 0, old_seed, &bad_old));
  ASSERT_CUDA_OK(check.CountPattern(*dst, 0, kBytes, 0, new_seed, &bad_new));
  const char* got = bad_old == 0 ? "call_time_bytes" : bad_new == 0 ? "execution_time_bytes" : "mixed_bytes";
  Observe("delivered", got);
  if (IsPinned(m)) {
    Observe("rule_applied", "page-locked source: read when the copy executes");
    ASSERT_TRUE(returned) << "cudaMemcpyAsync from page-locked memory waited for the stream (documented "
                          << "as fully asynchronous)";
    EXPECT_EQ(bad_new, 0u) << MemName(m) << ": the device did not receive the bytes the source held when the "
                           << "copy executed (" << got << ")";
    return;
  }
  if (!returned) {
    Observe("rule_applied", "pageable source: the call waited for the stream, so the source never changed");
    EXPECT_EQ(bad_old, 0u) << "the device did not receive the source's bytes";
    return;
  }
  if (device().Attr(cudaDevAttrPageableMemoryAccess) == 1) {
    Observe("rule_applied", "pageable source with cudaDevAttrPageableMemoryAccess=1: recorded only");
    return;
  }
  Observe("rule_applied", "pageable source, cudaDevAttrPageableMemoryAccess=0: staged at the call");
  EXPECT_EQ(bad_old, 0u) << "cudaMemcpyAsync from pageable memory returned while its stream was held, so it "
                         << "must have staged the source; the device got " << got
                         << " instead of the bytes the source held at the call";
}

INSTANTIATE_TEST_SUITE_P(Sources, ExecutionTimeReadTest,
                         ::testing::Values(HostKind::kHostAllocDefault, HostKind::kHostAllocMappedWriteCombined, HostKind::kRegisteredMalloc,
                                           HostKind::kRegisteredMmap, HostKind::kPageable),
                         [](const auto& info) { return MemName(info.param); });

using EarlyCompletionTest = OrderingTest;

TEST_P(EarlyCompletionTest, DeviceToHostCopyIsNotReportedCompleteBeforeItRuns) {
  PAGELOCK_RULE("R76,R77,S06");
  const HostKind m = GetParam();
  if (IsRegistered(m)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  std::string why;
  auto dst = KindBuffer::Make(m, kBytes, &why);
  ASSERT_NE(dst, nullptr) << why;
  auto src = KindBuffer::Make(HostKind::kDevice, kBytes, &why);
  ASSERT_NE(src, nullptr) << why;
  Checker check;
  ASSERT_CUDA_OK(check.status());
  const uint32_t seed = static_cast<uint32_t>(CaseRng()());
  ASSERT_CUDA_OK(check.FillPattern(*src, 0, kBytes, 0, seed));
  ASSERT_CUDA_OK(check.FillByte(*dst, 0, kBytes, 0xEE));
  ASSERT_CUDA_OK(HoldStream());
  ASSERT_CUDA_OK(cudaMemcpyAsync(dst->host(), src->dev(), kBytes, cudaMemcpyDeviceToHost, stream_));
  cudaEvent_t ev = nullptr;
  ASSERT_CUDA_OK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  auto own_ev = OwnedEvent::Adopt(ev);
  ASSERT_CUDA_OK(cudaEventRecord(ev, stream_));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // Nothing may look finished while the kernel in front holds the stream.
  const cudaError_t ev_q = cudaEventQuery(ev);
  const cudaError_t st_q = cudaStreamQuery(stream_);
  // Bytes still holding the 0xEE fill (the helper counts mismatches).
  const size_t untouched = kBytes - streams::HostCountByteMismatches(dst->host(), kBytes, 0xEE);
  Release();
  EXPECT_EQ(ev_q, cudaErrorNotReady) << "an event behind the held copy reported complete";
  EXPECT_EQ(st_q, cudaErrorNotReady) << "the held stream reported complete";
  EXPECT_EQ(untouched, kBytes) << (kBytes - untouched)
                               << " destination bytes changed before the kernel in front of the copy ended";
  ASSERT_CUDA_OK(cudaEventSynchronize(ev));
  EXPECT_CUDA_OK(own_ev.Free());
  ASSERT_FALSE(KernelTimedOut()) << "the device never saw the host's flag within " << kFlagTimeoutS << " s";
  // Straight after the event: the host reads without any further synchronisation.
  EXPECT_EQ(streams::HostCountPattern(dst->host(), kBytes, 0, seed), 0u)
      << "bytes of the copy missing after its event completed";
}

INSTANTIATE_TEST_SUITE_P(Destinations, EarlyCompletionTest,
                         ::testing::Values(HostKind::kHostAllocDefault, HostKind::kHostAllocMappedWriteCombined, HostKind::kRegisteredMalloc,
                                           HostKind::kRegisteredMemfd),
                         [](const auto& info) { return MemName(info.param); });

// A synchronous H2D copy followed at once by a kernel on a non-blocking stream, which does not
// wait for the legacy stream: from page-locked memory cudaMemcpy is synchronous, so the kernel
// always sees the bytes; from pageable memory the call "returns once the pageable buffer has been
// copied to the staging memory ... the DMA to final destination may not have completed", so
// stale reads are allowed and their rate is recorded.
class SyncCopyThenOtherStreamTest : public GpuTest, public ::testing::WithParamInterface<HostKind> {};

TEST_P(SyncCopyThenOtherStreamTest, KernelOnANonBlockingStreamSeesTheCopiedBytes) {
  PAGELOCK_RULE("R76,S02");
  const HostKind m = GetParam();
  constexpr size_t kCopy = size_t{1} << 20;
  // A pageable 1 MiB copy costs about 70 ms on an H200 (staging), and its stale rate is only
  // recorded: fewer iterations there keep the full tier short.
  const int kIterations = IsPinned(m) ? 50 : 10;
  Budget("iterations", kIterations, "count");
  std::string why;
  auto src = KindBuffer::Make(m, kCopy, &why);
  ASSERT_NE(src, nullptr) << why;
  auto dst = KindBuffer::Make(HostKind::kDevice, kCopy, &why);
  ASSERT_NE(dst, nullptr) << why;
  void* p = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&p, kIterations * sizeof(unsigned long long), cudaHostAllocMapped));
  auto own_p = PinnedBuffer::Adopt(p);
  auto* counts = static_cast<unsigned long long*>(p);
  std::memset(p, 0, kIterations * sizeof(unsigned long long));
  cudaStream_t s = nullptr;
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto own_s = OwnedStream::Adopt(s);
  std::vector<uint32_t> seeds;
  for (int i = 0; i < kIterations; ++i) {
    seeds.push_back(static_cast<uint32_t>(CaseRng()()));
    streams::HostFillPatternFrom(src->host(), kCopy, 0, seeds.back());
    ASSERT_CUDA_OK(cudaMemcpy(dst->dev(), src->host(), kCopy, cudaMemcpyHostToDevice));  // copy-check: counted next
    ASSERT_CUDA_OK(LaunchCountPatternMismatches(dst->dev(), kCopy, seeds.back(), counts + i, s));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s));  // the next copy must not overwrite what is being checked
  }
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  int stale = 0;
  for (int i = 0; i < kIterations; ++i) stale += counts[i] != 0;
  // The device holds the last copy in full once everything is idle, whatever the memory.
  Checker check;
  ASSERT_CUDA_OK(check.status());
  size_t bad = 0;
  ASSERT_CUDA_OK(check.CountPattern(*dst, 0, kCopy, 0, seeds.back(), &bad));
  EXPECT_EQ(bad, 0u) << "bytes of the last copy missing after the device went idle";
  EXPECT_CUDA_OK(own_s.Free());
  EXPECT_CUDA_OK(own_p.Free());

  Metric("stale_iterations_count", stale, "count");
  if (IsPinned(m)) {
    EXPECT_EQ(stale, 0) << stale << " of " << kIterations << " kernels on a non-blocking stream saw bytes of an "
                        << "earlier copy after cudaMemcpy from page-locked memory had returned";
  }
}

INSTANTIATE_TEST_SUITE_P(Sources, SyncCopyThenOtherStreamTest,
                         ::testing::Values(HostKind::kHostAllocDefault, HostKind::kRegisteredMalloc, HostKind::kPageable),
                         [](const auto& info) { return MemName(info.param); });

}  // namespace
}  // namespace pagelock
