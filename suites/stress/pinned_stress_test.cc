// Stress: heavy pinning up to an explicit cap, thousands of registrations, and stream/event
// ordering on shared mapped memory repeated for a time budget. Every cap and budget comes from
// the environment, is recorded in the results, and is bounded, so the host is never taken down:
//   PAGELOCK_STRESS_PIN_CAP_GIB     (default 16)    total pinned by the exhaustion test
//   PAGELOCK_STRESS_REGISTRATIONS   (default 4096)  concurrent registrations
//   PAGELOCK_STRESS_SECONDS         (default 20)    time budget of the ordering loop (x time scale)
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/seed.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

double EnvNumber(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : fallback;
}

class PinnedStressTest : public GpuTest {};

TEST_F(PinnedStressTest, PinningUpToTheCapFailsOnlyCleanly) {
  PAGELOCK_RULE("R06,R87");
  const double cap_gib = EnvNumber("PAGELOCK_STRESS_PIN_CAP_GIB", 16);
  const size_t chunk = size_t{256} << 20;
  const size_t max_chunks = static_cast<size_t>(cap_gib * (1 << 30) / chunk);
  Budget("pin_cap_GiB", cap_gib, "GiB");
  std::vector<void*> chunks;
  std::vector<double> ms;
  cudaError_t stop = cudaSuccess;
  while (chunks.size() < max_chunks) {
    void* p = nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    stop = cudaHostAlloc(&p, chunk, 0);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (stop != cudaSuccess) break;
    static_cast<char*>(p)[0] = 1;  // the memory is real: touch both ends
    static_cast<char*>(p)[chunk - 1] = 1;
    chunks.push_back(p);
  }
  (void)cudaGetLastError();
  std::sort(ms.begin(), ms.end());
  Metric("pinned_GiB", static_cast<double>(chunks.size() * chunk) / (1 << 30), "GiB");
  Metric("alloc_256MiB_median_ms", ms.empty() ? 0 : ms[ms.size() / 2], "ms");
  Observe("stopped_by", stop == cudaSuccess ? "cap" : cudaGetErrorName(stop));
  EXPECT_TRUE(stop == cudaSuccess || stop == cudaErrorMemoryAllocation)
      << "pinning failed with " << DescribeCuda(stop) << " instead of cudaErrorMemoryAllocation";
  if (!chunks.empty()) {
    EXPECT_CUDA_OK(cudaFreeHost(chunks.back()));
    chunks.pop_back();
  }
  void* probe = nullptr;
  EXPECT_CUDA_OK(cudaHostAlloc(&probe, size_t{1} << 20, 0)) << "an exhaustion failure must not be sticky";
  if (probe) {
    EXPECT_CUDA_OK(cudaFreeHost(probe));
  }
  for (void* p : chunks) {
    EXPECT_CUDA_OK(cudaFreeHost(p));
  }
  EXPECT_CUDA_OK(cudaDeviceSynchronize());
}

TEST_F(PinnedStressTest, ThousandsOfRegistrationsAreIndependent) {
  PAGELOCK_RULE("R26,R33,R53");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  const size_t n = static_cast<size_t>(EnvNumber("PAGELOCK_STRESS_REGISTRATIONS", 4096));
  const size_t page = PageSize(), region = 16 * page, stride = region + page;  // a gap between
  Budget("registrations_count", n, "count");
  void* map = mmap(nullptr, n * stride, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  char* base = static_cast<char*>(map);
  size_t registered = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (; registered < n; ++registered) {
    const cudaError_t e = cudaHostRegister(base + registered * stride, region, 0);
    if (e != cudaSuccess) {
      ADD_FAILURE() << "registration " << registered << " failed: " << DescribeCuda(e);
      break;
    }
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  Metric("register_mean_us", registered ? us / registered : 0, "us");
  std::mt19937_64 rng(RunSeed());
  for (int k = 0; k < 64 && registered; ++k) {
    const size_t i = rng() % registered, off = rng() % region;
    char* dev = nullptr;
    EXPECT_CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), base + i * stride + off, 0));
    void* gap = nullptr;
    EXPECT_CUDA_ERROR(cudaErrorInvalidValue, cudaHostGetDevicePointer(&gap, base + i * stride + region, 0))
        << "the page between registrations " << i << " and " << i + 1 << " is not registered";
  }
  for (size_t i = 0; i < registered; ++i) {
    EXPECT_CUDA_OK(cudaHostUnregister(base + i * stride));
  }
  munmap(map, n * stride);
}

TEST_F(PinnedStressTest, EventOrderedStreamsNeverSeeStaleMappedData) {
  PAGELOCK_RULE("R77");
  const double budget_s = EnvNumber("PAGELOCK_STRESS_SECONDS", 20) * TimeScale();
  Budget("time_s", budget_s, "s");
  const size_t max_bytes = size_t{8} << 20;
  void* host = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&host, max_bytes, cudaHostAllocMapped));
  unsigned long long* bad = nullptr;
  ASSERT_CUDA_OK(cudaMalloc(&bad, sizeof *bad));
  ASSERT_CUDA_OK(cudaMemset(bad, 0, sizeof *bad));
  cudaStream_t producer = nullptr, consumer = nullptr;
  cudaEvent_t written = nullptr;
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  ASSERT_CUDA_OK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
  std::mt19937_64 rng(RunSeed());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(budget_s);
  long long iterations = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const size_t n = 1 + rng() % max_bytes;
    const uint32_t seed = static_cast<uint32_t>(rng());
    ASSERT_CUDA_OK(LaunchFillPattern(host, n, seed, producer));
    ASSERT_CUDA_OK(cudaEventRecord(written, producer));
    ASSERT_CUDA_OK(cudaStreamWaitEvent(consumer, written, 0));
    ASSERT_CUDA_OK(LaunchCountPatternMismatches(host, n, seed, bad, consumer));
    // Reuse the buffer only after the consumer is done (write-after-read ordering).
    ASSERT_CUDA_OK(cudaStreamSynchronize(consumer));
    ++iterations;
  }
  unsigned long long mismatches = ~0ull;
  ASSERT_CUDA_OK(cudaMemcpy(&mismatches, bad, sizeof mismatches, cudaMemcpyDefault));
  Metric("iterations_count", static_cast<double>(iterations), "count");
  EXPECT_GT(iterations, 0);
  EXPECT_EQ(mismatches, 0u) << "a consumer ordered by an event read stale bytes";
  EXPECT_CUDA_OK(cudaEventDestroy(written));
  EXPECT_CUDA_OK(cudaStreamDestroy(producer));
  EXPECT_CUDA_OK(cudaStreamDestroy(consumer));
  EXPECT_CUDA_OK(cudaFree(bad));
  EXPECT_CUDA_OK(cudaFreeHost(host));
}

}  // namespace
}  // namespace pagelock
