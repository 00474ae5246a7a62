// Stream memory operations on page-locked host memory (driver API, 32-bit forms, available on
// every device since CUDA 12.0): cuStreamWaitValue32 keeps the work behind it from running until
// the host (or another stream) writes the word, and cuStreamWriteValue32's value is what the host
// reads once the stream's event completes. On registered memory and on cudaHostAlloc memory.
// Every wait is bounded: a wait the driver never releases is released by a write from another
// stream, and the case fails. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "fixtures/driver_api.h"
#include "fixtures/gpu_test.h"
#include "kernels/access_kernels.h"
#include "kernels/streams/stream_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

using streams::Buffer;
using streams::Mem;

constexpr size_t kBytes = 4096;

class MemOpsTest : public GpuTest, public ::testing::WithParamInterface<Mem> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireDriverApi());
    if (streams::IsRegistered(GetParam())) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  }
};

TEST_P(MemOpsTest, WaitValueHoldsLaterWorkUntilTheHostWritesTheWord) {
  PAGELOCK_RULE("R77,S13");
  const DriverApi& d = Driver();
  std::string why;
  // [0] the word waited for; data from byte 256.
  auto buf = Buffer::Make(GetParam(), kBytes, &why);
  ASSERT_NE(buf, nullptr) << why;
  std::memset(buf->host(), 0, kBytes);
  auto* word = reinterpret_cast<unsigned*>(buf->host());
  const auto dword = reinterpret_cast<CUdeviceptr>(buf->dev());
  unsigned char* data = buf->host() + 256;
  const uint32_t seed = static_cast<uint32_t>(CaseRng()());
  cudaStream_t s = nullptr, other = nullptr;
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  cudaEvent_t ev = nullptr;
  ASSERT_CUDA_OK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  ASSERT_CU_OK(d.cuStreamWaitValue32(reinterpret_cast<CUstream>(s), dword, 1, CU_STREAM_WAIT_VALUE_GEQ));
  ASSERT_CUDA_OK(LaunchFillPattern(buf->dev() + 256, 1024, seed, s));
  ASSERT_CUDA_OK(cudaEventRecord(ev, s));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const cudaError_t held = cudaEventQuery(ev);
  const size_t early = 1024 - streams::HostCountByte(data, 1024, 0);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  __atomic_store_n(word, 1u, __ATOMIC_RELEASE);
  cudaError_t done = streams::PollEvent(ev, 10);
  if (done == cudaErrorNotReady) {
    // The driver never saw the host's write: release the wait from the device side, then fail.
    EXPECT_CU_OK(d.cuStreamWriteValue32(reinterpret_cast<CUstream>(other), dword, 2, 0));
    EXPECT_CUDA_OK(cudaStreamSynchronize(s));
  }
  EXPECT_EQ(held, cudaErrorNotReady) << "work behind cuStreamWaitValue32 completed before the host wrote the word";
  EXPECT_EQ(early, 0u) << "bytes behind the wait were written before the host wrote the word";
  EXPECT_EQ(done, cudaSuccess) << "the wait did not end within 10 s of the host's write";
  ASSERT_CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(streams::HostCountPattern(data, 1024, 0, seed), 0u) << "bytes of the work behind the wait";
  EXPECT_CUDA_OK(cudaEventDestroy(ev));
  EXPECT_CUDA_OK(cudaStreamDestroy(s));
  EXPECT_CUDA_OK(cudaStreamDestroy(other));
}

TEST_P(MemOpsTest, WriteValueFromAnotherStreamReleasesAWaitAndTheHostSeesIt) {
  PAGELOCK_RULE("R77,S13");
  const DriverApi& d = Driver();
  std::string why;
  auto buf = Buffer::Make(GetParam(), kBytes, &why);
  ASSERT_NE(buf, nullptr) << why;
  std::memset(buf->host(), 0, kBytes);
  auto* words = reinterpret_cast<unsigned*>(buf->host());
  const auto base = reinterpret_cast<CUdeviceptr>(buf->dev());
  cudaStream_t waiter = nullptr, writer = nullptr;
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&waiter, cudaStreamNonBlocking));
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&writer, cudaStreamNonBlocking));
  // The waiter waits for word 0 == 0xC0FFEE, then writes word 16 = 0xBEEF.
  ASSERT_CU_OK(d.cuStreamWaitValue32(reinterpret_cast<CUstream>(waiter), base, 0xC0FFEEu, CU_STREAM_WAIT_VALUE_EQ));
  ASSERT_CU_OK(d.cuStreamWriteValue32(reinterpret_cast<CUstream>(waiter), base + 64, 0xBEEFu, 0));
  // The writer first spins a little, so the wait is really waiting when the value comes.
  ASSERT_CUDA_OK(LaunchDelay(streams::DelayNs(5), writer));
  ASSERT_CU_OK(d.cuStreamWriteValue32(reinterpret_cast<CUstream>(writer), base, 0xC0FFEEu, 0));
  ASSERT_CUDA_OK(streams::PollStream(writer, 10)) << "the writer stream did not finish";
  const cudaError_t released = streams::PollStream(waiter, 10);
  if (released == cudaErrorNotReady) __atomic_store_n(words, 0xC0FFEEu, __ATOMIC_RELEASE);  // unblock, then fail
  ASSERT_EQ(released, cudaSuccess) << "a value written by another stream did not release cuStreamWaitValue32";
  EXPECT_EQ(__atomic_load_n(words, __ATOMIC_ACQUIRE), 0xC0FFEEu) << "the writer's value, as the host reads it";
  EXPECT_EQ(__atomic_load_n(words + 16, __ATOMIC_ACQUIRE), 0xBEEFu) << "the waiter's value, as the host reads it";
  EXPECT_CUDA_OK(cudaStreamDestroy(waiter));
  EXPECT_CUDA_OK(cudaStreamDestroy(writer));
}

INSTANTIATE_TEST_SUITE_P(Memory, MemOpsTest, ::testing::Values(Mem::kPinnedMapped, Mem::kRegisteredMalloc),
                         [](const auto& info) { return MemName(info.param); });

}  // namespace
}  // namespace pagelock
