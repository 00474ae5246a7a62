// Copy bandwidth between host and device for pageable, pinned and write-combined memory, and host
// read bandwidth of write-combined versus cached pinned memory. Figures are recorded as metrics
// (median of timed repetitions after warm-up, CUDA events); the only gate is that pinned copies
// reach a fair share of the negotiated PCIe link, else the case is a WARN, never a FAIL.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/timing.h"

namespace pagelock {
namespace {

constexpr size_t kBytes = size_t{64} << 20;
constexpr int kWarmup = 2, kReps = 10;

// Theoretical one-direction bandwidth of a PCIe link in GB/s (after line coding), 0 if unknown.
double LinkGBps(int gen, int width) {
  static const double per_lane[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
  if (gen < 1 || gen > 6 || width < 1) return 0;
  return per_lane[gen] * width;
}

class BandwidthTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_CUDA_OK(cudaMalloc(&device_, kBytes));
    ASSERT_CUDA_OK(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
    if (device_) cudaFree(device_);
    GpuTest::TearDown();
  }

  // Median GB/s of copies in one direction; records "<name>_GBps" and the samples.
  double Measure(const std::string& name, void* host, bool to_device) {
    Timing t = TimeOnStream(stream_, kWarmup, kReps, [&] {
      return to_device ? cudaMemcpyAsync(device_, host, kBytes, cudaMemcpyHostToDevice, stream_)
                       : cudaMemcpyAsync(host, device_, kBytes, cudaMemcpyDeviceToHost, stream_);
    });
    EXPECT_CUDA_OK(t.error);
    if (t.error != cudaSuccess || t.median_ms <= 0) return 0;
    const double gbps = kBytes / (t.median_ms * 1e-3) / 1e9;
    RecordProperty(name + "_GBps", std::to_string(gbps));
    std::ostringstream samples;
    for (float s : t.samples_ms) samples << s << " ";
    RecordProperty(name + "_samples_ms", samples.str());
    return gbps;
  }

  void* device_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

TEST_F(BandwidthTest, PinnedCopiesReachAFairShareOfThePcieLink) {
  PAGELOCK_RULE("P03,R04");
  void* pinned = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&pinned, kBytes, 0));
  std::memset(pinned, 1, kBytes);
  const double h2d = Measure("h2d_pinned", pinned, true);
  const double d2h = Measure("d2h_pinned", pinned, false);
  EXPECT_CUDA_OK(cudaFreeHost(pinned));
  EXPECT_GT(h2d, 0);
  EXPECT_GT(d2h, 0);
  const double link = LinkGBps(device().pcie_gen, device().pcie_width);
  RecordProperty("pcie_link_theoretical_GBps", std::to_string(link));
  if (link > 0 && std::min(h2d, d2h) < 0.4 * link) {
    RecordProperty("status_detail", "QualityWarning");
    RecordProperty("warning", "pinned copies below 40% of the negotiated PCIe link");
  }
}

TEST_F(BandwidthTest, PageableCopiesWork) {
  PAGELOCK_RULE("R76");
  std::vector<unsigned char> pageable(kBytes, 2);
  EXPECT_GT(Measure("h2d_pageable", pageable.data(), true), 0);
  EXPECT_GT(Measure("d2h_pageable", pageable.data(), false), 0);
}

TEST_F(BandwidthTest, WriteCombinedUploadAndSlowHostReads) {
  PAGELOCK_RULE("R16");
  void* wc = nullptr;
  void* cached = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&wc, kBytes, cudaHostAllocWriteCombined));
  ASSERT_CUDA_OK(cudaHostAlloc(&cached, kBytes, 0));
  std::memset(wc, 3, kBytes);
  std::memset(cached, 3, kBytes);
  EXPECT_GT(Measure("h2d_writecombined", wc, true), 0);
  // Host reads: informational; WC reads are expected to be much slower (R16).
  for (auto [name, p] : {std::make_pair("host_read_writecombined", wc),
                         std::make_pair("host_read_cached_pinned", cached)}) {
    const auto* v = static_cast<const volatile unsigned long long*>(p);
    const size_t n = (size_t{8} << 20) / sizeof(unsigned long long);
    unsigned long long sum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i) sum += v[i];
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(sum, n * 0x0303030303030303ull) << name;
    RecordProperty(std::string(name) + "_GBps", std::to_string((n * 8) / s / 1e9));
  }
  EXPECT_CUDA_OK(cudaFreeHost(wc));
  EXPECT_CUDA_OK(cudaFreeHost(cached));
}

}  // namespace
}  // namespace pagelock
