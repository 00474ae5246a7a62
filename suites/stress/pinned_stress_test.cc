// Stress: thousands of registrations, and stream/event ordering on shared mapped memory repeated
// for a time budget. (Pinning until failure is exhaustion_test.cc, contained.) Every budget
// comes from the environment and is recorded in the results:
//   PAGELOCK_STRESS_REGISTRATIONS   (default 4096)  concurrent registrations
//   PAGELOCK_STRESS_REGISTRATION_CEILING (70000)    cap of the registration-count ceiling case
//   PAGELOCK_STRESS_SECONDS         (default 10)    time budget of the ordering loop (x time scale)
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/link_health.h"
#include "fixtures/mapping.h"
#include "fixtures/outcome.h"
#include "fixtures/resources.h"
#include "fixtures/settings.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

std::string ReadSmallFile(const char* path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// Every case is judged on device 0's PCIe AER and replay counters, read before and after (P06).
class PinnedStressTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (!IsSkipped() && !HasFatalFailure()) link_watch_.Start(device().pci_bus_id);
  }
  void TearDown() override {
    if (!IsSkipped()) link_watch_.Finish();
    GpuTest::TearDown();
  }
  LinkHealthWatch link_watch_;
};

TEST_F(PinnedStressTest, ThousandsOfRegistrationsAreIndependent) {
  PAGELOCK_RULE("P06,R26,R33,R53");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  const size_t n = static_cast<size_t>(settings::PositiveNumber("PAGELOCK_STRESS_REGISTRATIONS"));
  const size_t page = PageSize(), region = 16 * page, stride = region + page;  // a gap between
  Budget("registrations_count", n, "count");
  const Mapping map = Mapping::Adopt(mmap(nullptr, n * stride, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), n * stride);
  ASSERT_TRUE(map) << "mmap failed";
  char* base = reinterpret_cast<char*>(map.data());
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
  std::mt19937_64 rng(CaseSeed());
  const bool no_pageable_access = RequireNoPageableMemoryAccess().met;
  Observe("gap_device_pointer_checked", no_pageable_access);
  for (int k = 0; k < 64 && registered; ++k) {
    const size_t i = rng() % registered, off = rng() % region;
    char* dev = nullptr;
    EXPECT_CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), base + i * stride + off, 0));
    void* gap = nullptr;
    if (no_pageable_access) {  // R52's gate (attr 88 = 0 on every device)
      EXPECT_CUDA_ERROR(cudaErrorInvalidValue, cudaHostGetDevicePointer(&gap, base + i * stride + region, 0))
          << "the page between registrations " << i << " and " << i + 1 << " is not registered";
    }
  }
  for (size_t i = 0; i < registered; ++i) {
    EXPECT_CUDA_OK(cudaHostUnregister(base + i * stride));
  }
}

// Counts lines of a /proc file (VMAs in /proc/self/maps).
long CountLines(const char* path) {
  std::ifstream in(path);
  std::string line;
  long n = 0;
  while (std::getline(in, line)) ++n;
  return n;
}

TEST_F(PinnedStressTest, RegistrationsUpToTheCountCeilingFailOnlyCleanly) {
  PAGELOCK_RULE("P06,R48,R87");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  // One page each, a page apart: many registrations, little memory (4 KiB x the cap).
  const size_t cap = static_cast<size_t>(settings::PositiveNumber("PAGELOCK_STRESS_REGISTRATION_CEILING"));
  const double budget_s = settings::PositiveNumber("PAGELOCK_STRESS_SECONDS") * TimeScale();
  const size_t page = PageSize();
  Budget("registrations_cap_count", static_cast<double>(cap), "count");
  Budget("time_s", budget_s, "s");
  Observe("vm_max_map_count", static_cast<long long>(std::atoll(ReadSmallFile("/proc/sys/vm/max_map_count").c_str())));
  Observe("vmas_before", static_cast<long long>(CountLines("/proc/self/maps")));
  const Mapping map = Mapping::Adopt(
      mmap(nullptr, 2 * cap * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0),
      2 * cap * page);
  ASSERT_TRUE(map) << "mmap failed";
  char* base = reinterpret_cast<char*>(map.data());
  size_t registered = 0;
  cudaError_t stop = cudaSuccess;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(budget_s);
  while (registered < cap && std::chrono::steady_clock::now() < deadline) {
    stop = cudaHostRegister(base + 2 * registered * page, page, 0);
    if (stop != cudaSuccess) break;
    ++registered;
  }
  Metric("live_registrations_count", static_cast<double>(registered), "count");
  Observe("vmas_at_stop", static_cast<long long>(CountLines("/proc/self/maps")));
  Observe("stopped_by", stop != cudaSuccess ? cudaGetErrorName(stop) : registered == cap ? "cap" : "time");
  if (stop != cudaSuccess) {
    EXPECT_EQ(cudaGetLastError(), stop);  // R87: the failure is in the slot once
    EXPECT_CUDA_ERROR(cudaErrorMemoryAllocation, stop)
        << "registration " << registered << " failed with another error than the documented one";
    // Not sticky: one registration given back, one more works.
    if (registered > 0) {
      EXPECT_CUDA_OK(cudaHostUnregister(base + 2 * (registered - 1) * page));
      EXPECT_CUDA_OK(cudaHostRegister(base + 2 * (registered - 1) * page, page, 0))
          << "after the ceiling, a freed slot cannot be registered again";
    }
  }
  size_t failures = 0;
  for (size_t i = 0; i < registered; ++i) failures += cudaHostUnregister(base + 2 * i * page) != cudaSuccess;
  EXPECT_EQ(failures, 0u) << "unregistering failed " << failures << " times";
  EXPECT_CUDA_OK(cudaDeviceSynchronize());
}

TEST_F(PinnedStressTest, EventOrderedStreamsNeverSeeStaleMappedData) {
  PAGELOCK_RULE("P06,R77");
  const double budget_s = settings::PositiveNumber("PAGELOCK_STRESS_SECONDS") * TimeScale();
  Budget("time_s", budget_s, "s");
  const size_t max_bytes = size_t{8} << 20;
  void* host = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&host, max_bytes, cudaHostAllocMapped));
  auto own_host = PinnedBuffer::Adopt(host);
  unsigned long long* bad = nullptr;
  ASSERT_CUDA_OK(cudaMalloc(&bad, sizeof *bad));
  auto own_bad = DeviceBuffer::Adopt(bad);
  cudaStream_t producer = nullptr, consumer = nullptr;
  cudaEvent_t written = nullptr;
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  auto own_producer = OwnedStream::Adopt(producer);
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  auto own_consumer = OwnedStream::Adopt(consumer);
  // On the consumer: a legacy-stream cudaMemset of device memory (async, S02) could land after its counts.
  ASSERT_CUDA_OK(cudaMemsetAsync(bad, 0, sizeof *bad, consumer));
  ASSERT_CUDA_OK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
  auto own_written = OwnedEvent::Adopt(written);
  std::mt19937_64 rng(CaseSeed());
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
  ASSERT_CUDA_OK(cudaStreamSynchronize(consumer));  // the legacy-stream read below does not wait for it (0 iterations)
  ASSERT_CUDA_OK(cudaMemcpy(&mismatches, bad, sizeof mismatches, cudaMemcpyDefault));
  Metric("iterations_count", static_cast<double>(iterations), "count");
  EXPECT_GT(iterations, 0);
  EXPECT_EQ(mismatches, 0u) << "a consumer ordered by an event read stale bytes";
  EXPECT_CUDA_OK(own_written.Free());
  EXPECT_CUDA_OK(own_producer.Free());
  EXPECT_CUDA_OK(own_consumer.Free());
  EXPECT_CUDA_OK(own_bad.Free());
  EXPECT_CUDA_OK(own_host.Free());
}

}  // namespace
}  // namespace pagelock
