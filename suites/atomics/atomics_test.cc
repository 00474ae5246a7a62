// Tearing, publication and the atomic capability query on mapped host memory: naturally aligned
// stores, data published behind a flag in either direction, cudaDeviceGetHostAtomicCapabilities.
// The atomics themselves (every op, type, scope, memory kind and agent) are in
// atomics_matrix_test.cc and atomics_multigpu_test.cc. Every wait is bounded.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <vector>
#include <chrono>
#include <thread>

#include "fixtures/gpu_test.h"
#include "fixtures/resources.h"
#include "fixtures/time_scale.h"
#include "kernels/atomics_kernels.h"

namespace pagelock {
namespace {

class MappedAtomicsTest : public GpuTest {
 protected:
  template <typename T>
  T* Mapped(size_t count) {
    void* p = nullptr;
    EXPECT_CUDA_OK(cudaHostAlloc(&p, count * sizeof(T), cudaHostAllocMapped));
    if (p) std::memset(p, 0, count * sizeof(T));
    allocations_.push_back(p);
    return static_cast<T*>(p);
  }
  void TearDown() override {
    for (void* p : allocations_) {
      if (p) {
        EXPECT_CUDA_OK(cudaFreeHost(p));
      }
    }
    GpuTest::TearDown();
  }
  // Waits for the stream while `poll` runs on the host, at most `seconds` (scaled).
  bool WhileRunning(cudaStream_t s, double seconds, const std::function<void()>& poll) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration<double>(seconds * TimeScale());
    while (cudaStreamQuery(s) == cudaErrorNotReady) {
      poll();
      if (std::chrono::steady_clock::now() > deadline) return false;
    }
    return true;
  }
  std::vector<void*> allocations_;
};

TEST_F(MappedAtomicsTest, HostAtomicCapabilitiesAreConsistentAndValidated) {
  PAGELOCK_RULE("R82");
  PAGELOCK_REQUIRE(RequireRuntimeApi(13000, "cudaDeviceGetHostAtomicCapabilities"));
#if CUDART_VERSION >= 13000
  const cudaAtomicOperation ops[] = {cudaAtomicOperationIntegerAdd, cudaAtomicOperationCAS,
                                     cudaAtomicOperationExchange, cudaAtomicOperationFloatAdd};
  unsigned caps[4] = {0xdead, 0xdead, 0xdead, 0xdead};
  ASSERT_CUDA_OK(cudaDeviceGetHostAtomicCapabilities(caps, ops, 4, 0));
  for (unsigned c : caps) {
    EXPECT_NE(c, 0xdeadu) << "every requested entry is written";
  }
  Observe("integer_add_capabilities", caps[0]);
  if (device().Attr(cudaDevAttrHostNativeAtomicSupported) == 1 &&
      device().Attr(cudaDevAttrOnlyPartialHostNativeAtomicSupported) == 0) {
    for (unsigned c : caps) {
      EXPECT_NE(c, 0u) << "attr 86 = 1 means all native";
    }
  }
  // Neither "all" (attr 86) nor "only some" (attr 147, 13.0 cuda.h) host-native atomics: no
  // operation may then claim a native capability (the H200: every mask 0).
  if (device().Attr(cudaDevAttrHostNativeAtomicSupported) == 0 &&
      device().Attr(cudaDevAttrOnlyPartialHostNativeAtomicSupported) == 0) {
    for (unsigned c : caps) {
      EXPECT_EQ(c, 0u) << "attr 86 = 0 and attr 147 = 0, yet an operation reports capabilities 0x" << std::hex << c;
    }
  }
  EXPECT_CUDA_ERROR(cudaErrorInvalidValue, cudaDeviceGetHostAtomicCapabilities(caps, ops, 0, 0));
  EXPECT_CUDA_ERROR(cudaErrorInvalidValue, cudaDeviceGetHostAtomicCapabilities(nullptr, ops, 4, 0));
  EXPECT_CUDA_ERROR(cudaErrorInvalidDevice, cudaDeviceGetHostAtomicCapabilities(caps, ops, 4, 1 << 20));
#endif
}

TEST_F(MappedAtomicsTest, AlignedDeviceStoresAreNeverTornForTheHost) {
  PAGELOCK_RULE("R78");
  constexpr int kSlots = 4096;
  auto* s8 = Mapped<unsigned long long>(kSlots);
  auto* s4 = Mapped<unsigned>(kSlots);
  ASSERT_TRUE(s8 && s4);
  cudaStream_t stream = nullptr;
  ASSERT_CUDA_OK(cudaStreamCreate(&stream));
  auto own_stream = OwnedStream::Adopt(stream);
  ASSERT_CUDA_OK(LaunchAlternatingStores(s8, s4, kSlots, 20000, stream));
  unsigned long long reads = 0, torn = 0;
  const bool finished = WhileRunning(stream, 60, [&] {
    for (int i = 0; i < kSlots; ++i) {
      const unsigned long long v8 = __atomic_load_n(s8 + i, __ATOMIC_RELAXED);
      const unsigned v4 = __atomic_load_n(s4 + i, __ATOMIC_RELAXED);
      torn += (v8 != 0 && v8 != ~0ull) + (v4 != 0 && v4 != ~0u);
      reads += 2;
    }
  });
  EXPECT_TRUE(finished) << "the store kernel did not finish within its time limit";
  EXPECT_CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT_CUDA_OK(own_stream.Free());
  Metric("host_reads_count", static_cast<double>(reads), "count");
  EXPECT_GT(reads, 0u);
  EXPECT_EQ(torn, 0u) << "torn values seen by the host";
}

TEST_F(MappedAtomicsTest, HostSeesDataPublishedBeforeTheDeviceFlag) {
  PAGELOCK_RULE("R77");
  constexpr int kWords = 1024;
  auto* data = Mapped<unsigned>(kWords);
  auto* flag = Mapped<unsigned>(1);
  ASSERT_TRUE(data && flag);
  ASSERT_CUDA_OK(LaunchPublish(data, kWords, 0xC0FFEEu, flag));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(30 * TimeScale());
  while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == 0u && std::chrono::steady_clock::now() < deadline) {
  }
  ASSERT_EQ(__atomic_load_n(flag, __ATOMIC_ACQUIRE), 1u) << "flag never seen within the limit";
  int bad = 0;
  for (int i = 0; i < kWords; ++i) bad += data[i] != 0xC0FFEEu;
  EXPECT_EQ(bad, 0) << "data behind the flag was not visible when the flag was";
  EXPECT_CUDA_OK(cudaDeviceSynchronize());
}

TEST_F(MappedAtomicsTest, DeviceSeesDataPublishedBeforeTheHostFlag) {
  PAGELOCK_RULE("R77");
  constexpr int kWords = 1024;
  auto* data = Mapped<unsigned>(kWords);
  auto* flag = Mapped<unsigned>(1);
  auto* result = Mapped<unsigned long long>(1);
  auto* status = Mapped<unsigned>(1);
  ASSERT_TRUE(data && flag && result && status);
  const unsigned long long budget = static_cast<unsigned long long>(20e9 * TimeScale());  // ~10 s
  ASSERT_CUDA_OK(LaunchAwaitFlag(flag, data, kWords, budget, result, status));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the kernel start spinning
  for (int i = 0; i < kWords; ++i) data[i] = 7u;
  __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  ASSERT_EQ(*status, 1u) << "the kernel timed out without seeing the host's flag";
  EXPECT_EQ(*result, 7ull * kWords) << "data behind the flag was not visible to the device";
}

}  // namespace
}  // namespace pagelock
