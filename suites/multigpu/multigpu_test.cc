// Pinned and registered memory used from every device other than the one that allocated it:
// Portable and default allocations (UVA makes both portable, R18) and registrations, through
// kernels and copies on the second device. NotSupported with fewer than two GPUs.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <vector>

#include "fixtures/flags.h"
#include "fixtures/gpu_test.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{4} << 20;

class MultiGpuTest : public GpuTest {
 protected:
  MultiGpuTest() : GpuTest(/*devices=*/2) {}
  void TearDown() override {
    if (!IsSkipped()) {  // the health check covers device 0; the others must be healthy too
      for (int d = 1; d < devices(); ++d) {
        EXPECT_CUDA_OK(cudaSetDevice(d));
        EXPECT_CUDA_OK(cudaDeviceSynchronize());
      }
      EXPECT_CUDA_OK(cudaSetDevice(0));
    }
    GpuTest::TearDown();
  }
  static int devices() { return static_cast<int>(Probe().devices.size()); }

  // On `device`: the device reads what the host wrote, inverts it, copies it through its own
  // memory and back; the host checks every byte.
  void ExpectUsableFrom(int device, void* host, size_t n, uint32_t seed) {
    ASSERT_CUDA_OK(cudaSetDevice(device));
    void* alias = nullptr;
    ASSERT_CUDA_OK(cudaHostGetDevicePointer(&alias, host, 0));
    HostFillPattern(host, n, seed);
    unsigned long long* bad = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&bad, sizeof *bad));
    auto own_bad = DeviceBuffer::Adopt(bad);
    ASSERT_CUDA_OK(cudaMemset(bad, 0, sizeof *bad));
    ASSERT_CUDA_OK(LaunchCountPatternMismatches(alias, n, seed, bad));
    unsigned long long device_bad = ~0ull;
    ASSERT_CUDA_OK(cudaMemcpy(&device_bad, bad, sizeof device_bad, cudaMemcpyDefault));
    EXPECT_EQ(device_bad, 0u) << "device " << device << " read other bytes than the host wrote";
    ASSERT_CUDA_OK(LaunchInvertBytes(alias, n));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(HostCountPatternMismatches(host, n, seed, 0xff), 0u);
    void* d = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&d, n));
    auto own_d = DeviceBuffer::Adopt(d);
    EXPECT_CUDA_OK(cudaMemcpy(d, host, n, cudaMemcpyHostToDevice));
    EXPECT_CUDA_OK(LaunchInvertBytes(d, n));
    EXPECT_CUDA_OK(cudaMemcpy(host, d, n, cudaMemcpyDeviceToHost));
    EXPECT_EQ(HostCountPatternMismatches(host, n, seed), 0u);
    EXPECT_CUDA_OK(own_d.Free());
    EXPECT_CUDA_OK(own_bad.Free());
    ASSERT_CUDA_OK(cudaSetDevice(0));
  }
};

class MultiGpuHostAllocTest : public MultiGpuTest, public ::testing::WithParamInterface<unsigned> {};

TEST_P(MultiGpuHostAllocTest, AllocationOnDeviceZeroIsUsableFromEveryDevice) {
  PAGELOCK_RULE("R14,R18");
  ASSERT_CUDA_OK(cudaSetDevice(0));
  void* p = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&p, kSize, GetParam()));
  auto own_p = PinnedBuffer::Adopt(p);
  for (int d = devices() - 1; d >= 0; --d) {
    ExpectUsableFrom(d, p, kSize, 1234 + GetParam() + d);
  }
  EXPECT_CUDA_OK(own_p.Free());
}

INSTANTIATE_TEST_SUITE_P(Flags, MultiGpuHostAllocTest,
                         ::testing::Values(0u, unsigned{cudaHostAllocPortable},
                                           unsigned{cudaHostAllocMapped},
                                           unsigned{cudaHostAllocPortable | cudaHostAllocMapped}),
                         [](const auto& info) { return HostAllocFlagsName(info.param); });

TEST_F(MultiGpuTest, RegistrationIsVisibleOnEveryDevice) {
  PAGELOCK_RULE("R28,R45");
  ASSERT_CUDA_OK(cudaSetDevice(0));
  std::vector<unsigned char> buf(kSize);
  ASSERT_CUDA_OK(cudaHostRegister(buf.data(), buf.size(), cudaHostRegisterPortable | cudaHostRegisterMapped));
  auto own_buf = HostRegistration::Adopt(buf.data());
  for (int d = devices() - 1; d >= 0; --d) {
    ExpectUsableFrom(d, buf.data(), buf.size(), 77 + d);
  }
  EXPECT_CUDA_OK(own_buf.Free());
}

TEST_F(MultiGpuTest, AttributesNameTheAllocatingDeviceFromEveryDevice) {
  PAGELOCK_RULE("R72");
  ASSERT_CUDA_OK(cudaSetDevice(1));
  void* p = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&p, kSize, 0));
  auto own_p = PinnedBuffer::Adopt(p);
  for (int current = 0; current < devices(); ++current) {
    ASSERT_CUDA_OK(cudaSetDevice(current));
    cudaPointerAttributes a{};
    EXPECT_CUDA_OK(cudaPointerGetAttributes(&a, p));
    EXPECT_EQ(a.type, cudaMemoryTypeHost);
    EXPECT_EQ(a.device, 1) << "current device " << current;
    EXPECT_NE(a.devicePointer, nullptr) << "usable on the current device " << current;
  }
  ASSERT_CUDA_OK(cudaSetDevice(0));
  EXPECT_CUDA_OK(own_p.Free());
}

}  // namespace
}  // namespace pagelock
