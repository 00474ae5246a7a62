// Completion through pinned and mapped memory: a copy, a wait or a query that says the work is
// done must mean the host sees all of it. Each case names the faults of the fault-injecting driver
// layer (tools/faults) it catches. Queued host work (cudaLaunchHostFunc) that waits on the test
// makes "the stream is busy" certain instead of a race with a short kernel. Rule ids refer to
// suites/rules.tsv.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "fixtures/gpu_test.h"
#include "fixtures/outcome.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{4} << 20;
// Large enough that a copy takes about a millisecond: a copy that returns early is caught.
constexpr size_t kLargeSize = size_t{64} << 20;

class CompletionTest : public GpuTest {
 protected:
  uint32_t seed() const { return static_cast<uint32_t>(CaseSeed()); }
};

// Queued host work that holds a stream until the test releases it (bounded: it gives up after
// the limit, so a lost release never hangs the binary).
struct Gate {
  std::atomic<bool> open{false};
  std::atomic<bool> passed{false};
  double limit_s = 10.0 * TimeScale();

  static void CUDART_CB Hold(void* self) {
    auto* g = static_cast<Gate*>(self);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(g->limit_s);
    while (!g->open.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    g->passed.store(true);
  }
  // Queued host work that sleeps, so work queued behind it starts late.
  static void CUDART_CB Delay(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(100)); }
};

// Faults: htod_async_corrupts, dtoh_async_corrupts, async_copy_truncated.
TEST_F(CompletionTest, AsyncCopiesThroughPinnedMemoryDeliverEveryByte) {
  PAGELOCK_RULE("R76");
  unsigned char *src = nullptr, *dst = nullptr;
  void* d = nullptr;
  cudaStream_t s = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(reinterpret_cast<void**>(&src), kSize, cudaHostAllocDefault));
  ASSERT_CUDA_OK(cudaHostAlloc(reinterpret_cast<void**>(&dst), kSize, cudaHostAllocDefault));
  ASSERT_CUDA_OK(cudaMalloc(&d, kSize));
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  HostFillPattern(src, kSize, seed());
  // Start every destination byte different from what the copy must deliver, the last one too.
  for (size_t i = 0; i < kSize; ++i) dst[i] = static_cast<unsigned char>(~src[i]);
  ASSERT_CUDA_OK(cudaMemsetAsync(d, static_cast<unsigned char>(~src[kSize - 1]), kSize, s));
  ASSERT_CUDA_OK(cudaMemcpyAsync(d, src, kSize, cudaMemcpyHostToDevice, s));
  ASSERT_CUDA_OK(cudaMemcpyAsync(dst, d, kSize, cudaMemcpyDeviceToHost, s));
  ASSERT_CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(dst[kSize - 1], src[kSize - 1]) << "the last byte of the round trip";
  EXPECT_EQ(HostCountPatternMismatches(dst, kSize, seed()), 0u);
  EXPECT_CUDA_OK(cudaStreamDestroy(s));
  EXPECT_CUDA_OK(cudaFree(d));
  EXPECT_CUDA_OK(cudaFreeHost(dst));
  EXPECT_CUDA_OK(cudaFreeHost(src));
}

// Faults: dtoh_returns_early, dtoh_corrupts_last_byte, dtoh_truncated, htod_truncated.
TEST_F(CompletionTest, SynchronousCopyToPinnedMemoryIsCompleteOnReturn) {
  PAGELOCK_RULE("R76");
  unsigned char* host = nullptr;
  void* d = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(reinterpret_cast<void**>(&host), kLargeSize, cudaHostAllocDefault));
  ASSERT_CUDA_OK(cudaMalloc(&d, kLargeSize));
  HostFillPattern(host, kLargeSize, seed());
  const unsigned char last = host[kLargeSize - 1];
  ASSERT_CUDA_OK(cudaMemcpy(d, host, kLargeSize, cudaMemcpyHostToDevice));
  for (size_t i = 0; i < kLargeSize; ++i) host[i] = static_cast<unsigned char>(~host[i]);
  ASSERT_CUDA_OK(cudaMemcpy(host, d, kLargeSize, cudaMemcpyDeviceToHost));
  // Read the byte a DMA writes last before anything else: a copy still in flight shows here.
  const unsigned char seen_last = *static_cast<volatile unsigned char*>(host + kLargeSize - 1);
  EXPECT_EQ(seen_last, last) << "the last byte was not there when cudaMemcpy returned";
  EXPECT_EQ(HostCountPatternMismatches(host, kLargeSize, seed()), 0u);
  EXPECT_CUDA_OK(cudaFree(d));
  EXPECT_CUDA_OK(cudaFreeHost(host));
}

// Queues a delay, then a kernel that writes the pattern into mapped memory, on stream s.
void QueueLateKernelWrite(void* mapped, cudaStream_t s, uint32_t seed, cudaError_t* launch) {
  *launch = cudaLaunchHostFunc(s, &Gate::Delay, nullptr);
  if (*launch == cudaSuccess) *launch = LaunchFillPattern(mapped, kSize, seed, s);
}

enum class Waiter { kStream, kEvent, kDevice };

// Faults: stream_sync_returns_early, event_sync_returns_early, event_record_early,
// ctx_sync_returns_early. The kernel starts 100 ms late, so a wait that returns early sees
// none of its writes.
class SynchronizeTest : public CompletionTest, public ::testing::WithParamInterface<Waiter> {};

TEST_P(SynchronizeTest, HostSeesKernelWritesToMappedMemoryOnceTheWaitReturns) {
  PAGELOCK_RULE("R77");
  unsigned char* host = nullptr;
  cudaStream_t s = nullptr;
  cudaEvent_t done = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(reinterpret_cast<void**>(&host), kSize, cudaHostAllocMapped));
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ASSERT_CUDA_OK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  void* dev = nullptr;
  ASSERT_CUDA_OK(cudaHostGetDevicePointer(&dev, host, 0));
  memset(host, 0, kSize);
  cudaError_t launch = cudaSuccess;
  QueueLateKernelWrite(dev, s, seed(), &launch);
  ASSERT_CUDA_OK(launch);
  ASSERT_CUDA_OK(cudaEventRecord(done, s));
  switch (GetParam()) {
    case Waiter::kStream: ASSERT_CUDA_OK(cudaStreamSynchronize(s)); break;
    case Waiter::kEvent: ASSERT_CUDA_OK(cudaEventSynchronize(done)); break;
    case Waiter::kDevice: ASSERT_CUDA_OK(cudaDeviceSynchronize()); break;
  }
  EXPECT_EQ(HostCountPatternMismatches(host, kSize, seed()), 0u)
      << "bytes the kernel had not written when the wait returned";
  EXPECT_CUDA_OK(cudaStreamSynchronize(s));  // never leave work behind on failure
  EXPECT_CUDA_OK(cudaEventDestroy(done));
  EXPECT_CUDA_OK(cudaStreamDestroy(s));
  EXPECT_CUDA_OK(cudaFreeHost(host));
}

INSTANTIATE_TEST_SUITE_P(Waits, SynchronizeTest,
                         ::testing::Values(Waiter::kStream, Waiter::kEvent, Waiter::kDevice),
                         [](const auto& info) {
                           switch (info.param) {
                             case Waiter::kStream: return "stream_synchronize";
                             case Waiter::kEvent: return "event_synchronize";
                             default: return "device_synchronize";
                           }
                         });

// Faults: stream_query_lies, event_query_lies, event_record_early.
TEST_F(CompletionTest, QueriesReportNotReadyWhileQueuedWorkIsHeld) {
  PAGELOCK_RULE("R77");
  cudaStream_t s = nullptr;
  cudaEvent_t after = nullptr;
  Gate gate;
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ASSERT_CUDA_OK(cudaEventCreateWithFlags(&after, cudaEventDisableTiming));
  ASSERT_CUDA_OK(cudaLaunchHostFunc(s, &Gate::Hold, &gate));
  // No ASSERT until the gate is open and the stream drained: the held work points at `gate`.
  EXPECT_CUDA_OK(cudaEventRecord(after, s));
  EXPECT_CUDA_ERROR(cudaErrorNotReady, cudaStreamQuery(s));
  EXPECT_CUDA_ERROR(cudaErrorNotReady, cudaEventQuery(after));
  gate.open.store(true);
  ASSERT_CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_TRUE(gate.passed.load());
  EXPECT_CUDA_OK(cudaStreamQuery(s));
  EXPECT_CUDA_OK(cudaEventQuery(after));
  (void)cudaGetLastError();  // NotReady above was expected
  EXPECT_CUDA_OK(cudaEventDestroy(after));
  EXPECT_CUDA_OK(cudaStreamDestroy(s));
}

// Fault: stream_wait_ignored. A kernel on stream b that waits for an event of stream a must
// not read mapped memory before stream a's kernel has written it (which starts 100 ms late).
TEST_F(CompletionTest, StreamWaitingOnAnEventSeesTheOtherStreamsWrites) {
  PAGELOCK_RULE("R77");
  unsigned char* host = nullptr;
  unsigned long long* mismatches = nullptr;
  cudaStream_t a = nullptr, b = nullptr;
  cudaEvent_t written = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(reinterpret_cast<void**>(&host), kSize, cudaHostAllocMapped));
  ASSERT_CUDA_OK(cudaMalloc(&mismatches, sizeof *mismatches));
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  ASSERT_CUDA_OK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
  void* dev = nullptr;
  ASSERT_CUDA_OK(cudaHostGetDevicePointer(&dev, host, 0));
  memset(host, 0, kSize);
  ASSERT_CUDA_OK(cudaMemsetAsync(mismatches, 0, sizeof *mismatches, b));
  cudaError_t launch = cudaSuccess;
  QueueLateKernelWrite(dev, a, seed(), &launch);
  ASSERT_CUDA_OK(launch);
  ASSERT_CUDA_OK(cudaEventRecord(written, a));
  ASSERT_CUDA_OK(cudaStreamWaitEvent(b, written, 0));
  ASSERT_CUDA_OK(LaunchCountPatternMismatches(dev, kSize, seed(), mismatches, b));
  ASSERT_CUDA_OK(cudaStreamSynchronize(b));
  ASSERT_CUDA_OK(cudaStreamSynchronize(a));
  unsigned long long seen = ~0ull;
  ASSERT_CUDA_OK(cudaMemcpy(&seen, mismatches, sizeof seen, cudaMemcpyDeviceToHost));
  EXPECT_EQ(seen, 0u) << "stream b read bytes stream a had not written yet";
  EXPECT_CUDA_OK(cudaEventDestroy(written));
  EXPECT_CUDA_OK(cudaStreamDestroy(b));
  EXPECT_CUDA_OK(cudaStreamDestroy(a));
  EXPECT_CUDA_OK(cudaFree(mismatches));
  EXPECT_CUDA_OK(cudaFreeHost(host));
}

}  // namespace
}  // namespace pagelock
