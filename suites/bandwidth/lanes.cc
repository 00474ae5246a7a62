#include "suites/bandwidth/lanes.h"

#include <algorithm>
#include <sstream>

#include "fixtures/cuda_check.h"
#include "fixtures/outcome.h"
#include "fixtures/pcie.h"
#include "fixtures/time_scale.h"
#include "kernels/streams/stream_kernels.h"

namespace pagelock {
namespace bandwidth {
namespace {

constexpr double kHoldTimeoutS = 10;

}  // namespace

cudaError_t LaneMeter::Init() {
  flag_ = PinnedBuffer(2 * sizeof(unsigned), cudaHostAllocMapped | cudaHostAllocPortable);
  return flag_.status();
}

void LaneMeter::Release() {
  if (flag_) __atomic_store_n(flag_.as<unsigned>(), 1u, __ATOMIC_RELEASE);
}

void LaneMeter::Measure(const std::vector<Lane*>& lanes, const Method& m, const std::function<void(int)>& before,
                        const std::function<void(int)>& after) {
  ASSERT_TRUE(flag_) << "LaneMeter::Init() did not run or failed";
  ASSERT_FALSE(lanes.empty());
  unsigned* flag = flag_.as<unsigned>();
  std::vector<OwnedEvent> start(lanes.size()), stop(lanes.size());
  for (size_t i = 0; i < lanes.size(); ++i) {
    start[i] = OwnedEvent(cudaEventDefault);
    ASSERT_CUDA_OK(start[i].status());
    stop[i] = OwnedEvent(cudaEventDefault);
    ASSERT_CUDA_OK(stop[i].status());
  }
  const auto hold_ns = static_cast<uint64_t>(kHoldTimeoutS * TimeScale() * 1e9);
  for (int s = 0; s < m.samples; ++s) {
    if (before) before(s);
    if (::testing::Test::HasFatalFailure()) return;
    __atomic_store_n(flag, 0u, __ATOMIC_RELEASE);
    flag[1] = kKernelOk;
    for (Lane* lane : lanes) {
      ASSERT_CUDA_OK(LaunchAwaitFlag(flag, 1, hold_ns, flag + 1, lane->stream));
      for (int w = 0; w < m.warmup; ++w) ASSERT_CUDA_OK(lane->op(lane->stream));
    }
    ASSERT_CUDA_OK(cudaEventRecord(start[0].get(), lanes[0]->stream));
    for (size_t i = 1; i < lanes.size(); ++i) {
      ASSERT_CUDA_OK(cudaStreamWaitEvent(lanes[i]->stream, start[0].get(), 0));
      ASSERT_CUDA_OK(cudaEventRecord(start[i].get(), lanes[i]->stream));
    }
    for (size_t i = 0; i < lanes.size(); ++i) {
      for (int l = 0; l < m.loops; ++l) ASSERT_CUDA_OK(lanes[i]->op(lanes[i]->stream));
      ASSERT_CUDA_OK(cudaEventRecord(stop[i].get(), lanes[i]->stream));
    }
    __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
    for (size_t i = 0; i < lanes.size(); ++i) {
      ASSERT_CUDA_OK(cudaEventSynchronize(stop[i].get()));
      float ms = 0;
      ASSERT_CUDA_OK(cudaEventElapsedTime(&ms, start[i].get(), stop[i].get()));
      ASSERT_GT(ms, 0.f) << "zero elapsed time between the events around " << m.loops << " copies";
      lanes[i]->gbps.push_back(static_cast<double>(lanes[i]->bytes) * m.loops / (ms * 1e-3) / 1e9);
    }
    ASSERT_NE(flag[1], kKernelTimedOut) << "the holding kernel never saw the host's flag";
    if (after) after(s);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (size_t i = 0; i < lanes.size(); ++i) {
    EXPECT_CUDA_OK(start[i].Free());
    EXPECT_CUDA_OK(stop[i].Free());
  }
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string Samples(const std::vector<double>& v) {
  std::ostringstream s;
  for (double x : v) s << FormatNumber(x) << " ";
  return s.str();
}

double LinkLimitGBps(const DeviceInfo& d, std::string* basis) {
  if (d.pcie_max_gen > 0 && d.pcie_max_width > 0) {
    *basis = "max gen" + std::to_string(d.pcie_max_gen) + " x" + std::to_string(d.pcie_max_width) + " (" +
             d.pcie_source + ")";
    return pcie::LinkGBps(d.pcie_max_gen, d.pcie_max_width);
  }
  *basis = "current gen" + std::to_string(d.pcie_gen) + " x" + std::to_string(d.pcie_width) + " (" + d.pcie_source + ")";
  return pcie::LinkGBps(d.pcie_gen, d.pcie_width);
}

}  // namespace bandwidth
}  // namespace pagelock
