// Memsets over a pattern: freshly allocated memory is often zero, which hides a memset that
// stops short. Each case names the faults of the fault-injecting driver layer (tools/faults) it
// catches. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include "fixtures/gpu_test.h"
#include "fixtures/outcome.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{4} << 20;

class MemsetOverPatternTest : public GpuTest {
 protected:
  uint32_t seed() const { return static_cast<uint32_t>(CaseSeed()); }
};

// Copies device memory into pinned memory and counts the bytes that are not `value`.
size_t CountNotEqual(const void* d, size_t n, unsigned char value, unsigned char* pinned) {
  // copy-check: the loop below compares every byte it copied
  if (cudaMemcpy(pinned, d, n, cudaMemcpyDeviceToHost) != cudaSuccess) return n + 1;
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += pinned[i] != value;
  return bad;
}

// Faults: memset_wrong_last_byte, memset_truncated. Odd and 4-byte multiple sizes, over a pattern
// (freshly allocated memory is often zero, which hides a memset that stops short).
TEST_F(MemsetOverPatternTest, MemsetWritesEveryByteOverAPattern) {
  PAGELOCK_RULE("R77");
  unsigned char* pinned = nullptr;
  void* d = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(reinterpret_cast<void**>(&pinned), kSize, cudaHostAllocDefault));
  ASSERT_CUDA_OK(cudaMalloc(&d, kSize));
  for (size_t n : {kSize, kSize - 3}) {
    ASSERT_CUDA_OK(LaunchFillPattern(d, kSize, seed()));
    ASSERT_CUDA_OK(cudaMemset(d, 0x5a, n));
    EXPECT_EQ(CountNotEqual(d, n, 0x5a, pinned), 0u) << "memset of " << n << " bytes";
  }
  EXPECT_CUDA_OK(cudaFree(d));
  EXPECT_CUDA_OK(cudaFreeHost(pinned));
}

// Fault: memset_async_wrong_last_byte.
TEST_F(MemsetOverPatternTest, MemsetAsyncWritesEveryByteOverAPattern) {
  PAGELOCK_RULE("R77");
  unsigned char* pinned = nullptr;
  void* d = nullptr;
  cudaStream_t s = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(reinterpret_cast<void**>(&pinned), kSize, cudaHostAllocDefault));
  ASSERT_CUDA_OK(cudaMalloc(&d, kSize));
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (size_t n : {kSize, kSize - 3}) {
    ASSERT_CUDA_OK(LaunchFillPattern(d, kSize, seed(), s));
    ASSERT_CUDA_OK(cudaMemsetAsync(d, 0xa5, n, s));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_EQ(CountNotEqual(d, n, 0xa5, pinned), 0u) << "memset of " << n << " bytes";
  }
  EXPECT_CUDA_OK(cudaStreamDestroy(s));
  EXPECT_CUDA_OK(cudaFree(d));
  EXPECT_CUDA_OK(cudaFreeHost(pinned));
}

}  // namespace
}  // namespace pagelock
