// Every GPU copying between pinned host memory and its own memory at once, data verified:
// nvbandwidth's host_to_all_memcpy_ce / all_to_host_memcpy_ce and their bidirectional forms
// (host_to_all_bidirectional_memcpy_ce / all_to_host_bidirectional_memcpy_ce), by its method so
// tools/bandwidth/nvbandwidth_compare.py pairs the figures per GPU. For each measured GPU d:
//   - one direction: d copies N bytes that way while every other GPU copies 2N the same way;
//   - bidirectional: d copies N bytes the measured way while d itself copies 2N the other way and
//     every other GPU copies 2N both ways (allHostBidirHelper's lanes, in its order).
// Each lane has its own non-blocking stream on its own device, held by a kernel until everything
// is queued; warm-up copies, then the measured lane's start event, which every other lane's
// stream waits on, then the timed copies and an end event per lane; bandwidth per sample from the
// lane's events, the median of the samples. Only the measured lane's median is nvbandwidth's
// figure; the interfering lanes' are recorded beside it. Before each sample every source is
// written again and every destination poisoned with other bytes; after it, every byte of every
// lane's destination is counted on its device, so each sample's copies are verified.
// Host buffers are pinned Portable|Mapped from their GPU's context (nvbandwidth: Portable), so
// each device reaches them through its own pointer. The stress build uses nvbandwidth v0.8's
// defaults (512 MiB, 4 warm-up and 16 timed copies, 3 samples) and names its metrics as the
// comparison expects (host_to_all_bidir_h2d_gpu0_GBps); the full build 32 MiB, 1 + 4 copies, 3
// samples, metrics prefixed quick_ (never paired with nvbandwidth). NotSupported with fewer than
// two GPUs (cudaGetDeviceCount=1 (need 2)). Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/containment.h"
#include "fixtures/gpu_test.h"
#include "fixtures/kernel_accounting.h"
#include "fixtures/resources.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"
#include "kernels/streams/stream_kernels.h"

namespace pagelock {
namespace {

#ifdef PAGELOCK_STRESS_TIER
// nvbandwidth v0.8: bufferSize 512 MiB, WARMUP_COUNT 4, loopCount 16, testSamples 3.
constexpr size_t kBytes = size_t{512} << 20;
constexpr int kWarmup = 4, kLoops = 16, kSamples = 3;
const char kPrefix[] = "";
#else
constexpr size_t kBytes = size_t{32} << 20;
constexpr int kWarmup = 1, kLoops = 4, kSamples = 3;
const char kPrefix[] = "quick_";
#endif
constexpr double kHoldTimeoutS = 10;

enum class Dir { kH2D, kD2H };
const char* DirName(Dir d) { return d == Dir::kH2D ? "h2d" : "d2h"; }

struct Lane {
  int device;
  Dir dir;
  size_t bytes;
  std::vector<double> gbps;  // one per sample
};

// What one device holds: the H2D pair (up_host -> up_dev) and the D2H pair (down_dev ->
// down_host), 2N bytes each (a measured lane uses the first N), a stream per direction, and its
// own pointers to the shared host words.
struct PerDevice {
  PinnedBuffer up_host, down_host;
  void* up_alias = nullptr;    // up_host through this device's pointer
  void* down_alias = nullptr;  // down_host through this device's pointer
  DeviceBuffer up_dev, down_dev;
  OwnedStream up, down;
  unsigned* flag = nullptr;                // [0] hold flag, [1] holding kernel status
  unsigned long long* counters = nullptr;  // one per lane
  uint32_t up_seed = 0, down_seed = 0;
};

// One lane's ends: where it copies from and to, the pointers its device fills and checks them
// through, the source's seed and the lane's stream.
struct Ends {
  void* src;
  void* dst;
  void* src_fill;
  void* dst_check;
  uint32_t seed;
  cudaStream_t stream;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

class AllGpusCopyTest : public GpuTest {
 protected:
  AllGpusCopyTest() : GpuTest(/*devices=*/2) {}

  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    n_ = static_cast<int>(Probe().devices.size());
    const int64_t host_bytes = static_cast<int64_t>(n_) * 4 * static_cast<int64_t>(kBytes);
    Budget("pinned_host_MiB", static_cast<double>(host_bytes >> 20), "MiB");
    Budget("copy_bytes_MiB", static_cast<double>(kBytes >> 20), "MiB");
    const MemInfo mem = ReadMemInfo();
    if (mem.available && mem.mem_available - host_bytes < DefaultFloorBytes()) {
      PAGELOCK_NOT_SUPPORTED("MemAvailable - " + std::to_string(host_bytes >> 20) + " MiB < the memory floor (" +
                             std::to_string(DefaultFloorBytes() >> 20) + " MiB)");
    }
    void* p = nullptr;
    ASSERT_CUDA_OK(cudaHostAlloc(&p, 2 * sizeof(unsigned), cudaHostAllocPortable | cudaHostAllocMapped));
    flag_ = PinnedBuffer::Adopt(p, 2 * sizeof(unsigned));
    ASSERT_CUDA_OK(cudaHostAlloc(&p, 4 * n_ * sizeof(unsigned long long), cudaHostAllocPortable | cudaHostAllocMapped));
    counters_ = PinnedBuffer::Adopt(p, 4 * n_ * sizeof(unsigned long long));
    dev_.resize(n_);
    for (int d = 0; d < n_; ++d) {
      PerDevice& g = dev_[d];
      ASSERT_CUDA_OK(cudaSetDevice(d));
      // Pinned from this GPU's context, as nvbandwidth's HostBuffer(size, deviceId) is.
      g.up_host = PinnedBuffer(2 * kBytes, cudaHostAllocPortable | cudaHostAllocMapped);
      ASSERT_CUDA_OK(g.up_host.status());
      g.down_host = PinnedBuffer(2 * kBytes, cudaHostAllocPortable | cudaHostAllocMapped);
      ASSERT_CUDA_OK(g.down_host.status());
      ASSERT_CUDA_OK(cudaHostGetDevicePointer(&g.up_alias, g.up_host.host(), 0));
      ASSERT_CUDA_OK(cudaHostGetDevicePointer(&g.down_alias, g.down_host.host(), 0));
      ASSERT_CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&g.flag), flag_.host(), 0));
      ASSERT_CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&g.counters), counters_.host(), 0));
      g.up_dev = DeviceBuffer(2 * kBytes);
      ASSERT_CUDA_OK(g.up_dev.status());
      g.down_dev = DeviceBuffer(2 * kBytes);
      ASSERT_CUDA_OK(g.down_dev.status());
      g.up = OwnedStream(cudaStreamNonBlocking);
      ASSERT_CUDA_OK(g.up.status());
      g.down = OwnedStream(cudaStreamNonBlocking);
      ASSERT_CUDA_OK(g.down.status());
      g.up_seed = static_cast<uint32_t>(CaseRng()());
      g.down_seed = static_cast<uint32_t>(CaseRng()());
    }
    ASSERT_CUDA_OK(cudaSetDevice(0));
  }

  void TearDown() override {
    if (flag_) __atomic_store_n(flag_.as<unsigned>(), 1u, __ATOMIC_RELEASE);  // never leave a held stream
    for (int d = 0; d < static_cast<int>(dev_.size()); ++d) {
      PerDevice& g = dev_[d];
      EXPECT_CUDA_OK(cudaSetDevice(d));
      EXPECT_CUDA_OK(cudaDeviceSynchronize()) << "device " << d;
      EXPECT_CUDA_OK(g.up.Free());
      EXPECT_CUDA_OK(g.down.Free());
      EXPECT_CUDA_OK(g.up_dev.Free());
      EXPECT_CUDA_OK(g.down_dev.Free());
      EXPECT_CUDA_OK(g.up_host.Free());
      EXPECT_CUDA_OK(g.down_host.Free());
    }
    dev_.clear();
    if (n_ > 0) {
      EXPECT_CUDA_OK(cudaSetDevice(0));
    }
    EXPECT_CUDA_OK(counters_.Free());
    EXPECT_CUDA_OK(flag_.Free());
    GpuTest::TearDown();
  }

  Ends EndsOf(const Lane& l) {
    PerDevice& g = dev_[l.device];
    if (l.dir == Dir::kH2D) return {g.up_host.host(), g.up_dev.get(), g.up_alias, g.up_dev.get(), g.up_seed, g.up.get()};
    return {g.down_dev.get(), g.down_host.host(), g.down_dev.get(), g.down_alias, g.down_seed, g.down.get()};
  }

  // nvbandwidth's one-direction lanes for measured device `d`.
  std::vector<Lane> OneDirection(int d, Dir dir) const {
    std::vector<Lane> lanes = {{d, dir, kBytes, {}}};
    for (int j = 0; j < n_; ++j) {
      if (j != d) lanes.push_back({j, dir, 2 * kBytes, {}});
    }
    return lanes;
  }
  // nvbandwidth's bidirectional lanes for measured device `d`: its own opposite copy, then each
  // other device's D2H and H2D.
  std::vector<Lane> Bidirectional(int d, Dir dir) const {
    const Dir other = dir == Dir::kH2D ? Dir::kD2H : Dir::kH2D;
    std::vector<Lane> lanes = {{d, dir, kBytes, {}}, {d, other, 2 * kBytes, {}}};
    for (int j = 0; j < n_; ++j) {
      if (j == d) continue;
      lanes.push_back({j, Dir::kD2H, 2 * kBytes, {}});
      lanes.push_back({j, Dir::kH2D, 2 * kBytes, {}});
    }
    return lanes;
  }

  // Times `lanes` (lanes[0] measured) for kSamples samples and checks every lane's bytes after
  // each. `label` names the case in failure messages.
  void Measure(const std::string& label, std::vector<Lane>* lanes_in) {
    std::vector<Lane>& lanes = *lanes_in;
    const size_t k = lanes.size();
    ASSERT_LE(k, 4u * n_);
    std::vector<OwnedEvent> start(k), stop(k);
    for (size_t i = 0; i < k; ++i) {
      ASSERT_CUDA_OK(cudaSetDevice(lanes[i].device));  // an event belongs to its stream's device
      ASSERT_CUDA_OK(cudaEventCreate(start[i].put()));
      ASSERT_CUDA_OK(cudaEventCreate(stop[i].put()));
    }
    unsigned* flag = flag_.as<unsigned>();
    auto* bad = counters_.as<unsigned long long>();
    const uint64_t hold_ns = static_cast<uint64_t>(kHoldTimeoutS * TimeScale() * 1e9);
    for (int s = 0; s < kSamples; ++s) {
      __atomic_store_n(flag, 0u, __ATOMIC_RELEASE);
      flag[1] = kKernelOk;
      for (size_t i = 0; i < k; ++i) {
        const Lane& l = lanes[i];
        const Ends e = EndsOf(l);
        ASSERT_CUDA_OK(cudaSetDevice(l.device));
        // The source written again (nvbandwidth does too), the destination poisoned: bytes left
        // from the previous sample cannot pass this sample's check.
        ASSERT_CUDA_OK(LaunchFillPattern(e.src_fill, l.bytes, e.seed, e.stream));
        ASSERT_CUDA_OK(LaunchFillPattern(e.dst_check, l.bytes, e.seed ^ (0x9e3779b9u + s), e.stream));
      }
      // The fills are done before any lane is timed (nvbandwidth synchronises its fills too).
      for (size_t i = 0; i < k; ++i) {
        ASSERT_CUDA_OK(cudaSetDevice(lanes[i].device));
        ASSERT_CUDA_OK(cudaStreamSynchronize(EndsOf(lanes[i]).stream));
      }
      for (size_t i = 0; i < k; ++i) {
        const Lane& l = lanes[i];
        const Ends e = EndsOf(l);
        ASSERT_CUDA_OK(cudaSetDevice(l.device));
        PerDevice& g = dev_[l.device];
        ASSERT_CUDA_OK(LaunchAwaitFlag(g.flag, 1, hold_ns, g.flag + 1, e.stream));
        for (int w = 0; w < kWarmup; ++w) {
          // copy-check: every lane's destination is counted after the sample
          ASSERT_CUDA_OK(cudaMemcpyAsync(e.dst, e.src, l.bytes, cudaMemcpyDefault, e.stream));
        }
      }
      for (size_t i = 0; i < k; ++i) {
        ASSERT_CUDA_OK(cudaSetDevice(lanes[i].device));
        const cudaStream_t st = EndsOf(lanes[i]).stream;
        if (i > 0) {
          ASSERT_CUDA_OK(cudaStreamWaitEvent(st, start[0].get(), 0));  // every lane starts with lane 0
        }
        ASSERT_CUDA_OK(cudaEventRecord(start[i].get(), st));
      }
      for (size_t i = 0; i < k; ++i) {
        const Ends e = EndsOf(lanes[i]);
        ASSERT_CUDA_OK(cudaSetDevice(lanes[i].device));
        for (int c = 0; c < kLoops; ++c) {
          // copy-check: every lane's destination is counted after the sample
          ASSERT_CUDA_OK(cudaMemcpyAsync(e.dst, e.src, lanes[i].bytes, cudaMemcpyDefault, e.stream));
        }
        ASSERT_CUDA_OK(cudaEventRecord(stop[i].get(), e.stream));
      }
      __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
      for (size_t i = 0; i < k; ++i) {
        ASSERT_CUDA_OK(cudaSetDevice(lanes[i].device));
        ASSERT_CUDA_OK(cudaEventSynchronize(stop[i].get()));
        float ms = 0;
        ASSERT_CUDA_OK(cudaEventElapsedTime(&ms, start[i].get(), stop[i].get()));
        ASSERT_GT(ms, 0.f) << label << ": zero time between the events of lane " << i;
        lanes[i].gbps.push_back(static_cast<double>(lanes[i].bytes) * kLoops / (ms * 1e-3) / 1e9);
      }
      ASSERT_NE(flag[1], kKernelTimedOut) << label << ": a holding kernel never saw the host's flag";
      // Every byte of every lane's destination, counted on the lane's own device.
      for (size_t i = 0; i < k; ++i) {
        const Ends e = EndsOf(lanes[i]);
        ASSERT_CUDA_OK(cudaSetDevice(lanes[i].device));
        bad[i] = 0;
        ASSERT_CUDA_OK(LaunchCountPatternMismatches(e.dst_check, lanes[i].bytes, e.seed,
                                                    dev_[lanes[i].device].counters + i, e.stream));
      }
      for (size_t i = 0; i < k; ++i) {
        ASSERT_CUDA_OK(cudaSetDevice(lanes[i].device));
        ASSERT_CUDA_OK(cudaStreamSynchronize(EndsOf(lanes[i]).stream));
        EXPECT_EQ(bad[i], 0u) << label << ", sample " << s << ": lane " << i << " (" << DirName(lanes[i].dir)
                              << " on GPU " << lanes[i].device << (i == 0 ? ", measured" : ", interfering")
                              << ") did not deliver every byte";
      }
    }
    for (size_t i = 0; i < k; ++i) {
      ASSERT_CUDA_OK(cudaSetDevice(lanes[i].device));
      EXPECT_CUDA_OK(start[i].Free());
      EXPECT_CUDA_OK(stop[i].Free());
    }
    ASSERT_CUDA_OK(cudaSetDevice(0));
  }

  // Every GPU measured in turn; `bidir` picks the lanes. Metrics: <name>_<dir>_gpu<d>_GBps (the
  // measured lane, nvbandwidth's cell), <name>_<dir>_sum_GBps (nvbandwidth's SUM line), and each
  // interfering lane's median as <name>_run<d>_<dir>_gpu<j>_interfering_GBps.
  void MeasureEveryGpu(const std::string& name, Dir dir, bool bidir) {
    double sum = 0;
    for (int d = 0; d < n_ && !HasFatalFailure(); ++d) {
      std::vector<Lane> lanes = bidir ? Bidirectional(d, dir) : OneDirection(d, dir);
      Measure(name + " measuring GPU " + std::to_string(d), &lanes);
      if (HasFatalFailure()) return;
      const std::string base = kPrefix + name + "_" + DirName(dir);
      const double med = Median(lanes[0].gbps);
      Metric(base + "_gpu" + std::to_string(d) + "_GBps", med, "GB/s");
      std::ostringstream samples;
      for (double g : lanes[0].gbps) samples << g << " ";
      Observe(base + "_gpu" + std::to_string(d) + "_samples_GBps", samples.str());
      for (size_t i = 1; i < lanes.size(); ++i) {
        Metric(kPrefix + name + "_run" + std::to_string(d) + "_" + DirName(lanes[i].dir) + "_gpu" +
                   std::to_string(lanes[i].device) + "_interfering_GBps",
               Median(lanes[i].gbps), "GB/s");
      }
      sum += med;
    }
    Metric(kPrefix + name + "_" + DirName(dir) + "_sum_GBps", sum, "GB/s");
  }

  int n_ = 0;
  PinnedBuffer flag_, counters_;
  std::vector<PerDevice> dev_;
};

// Faults caught (each names the GPU, lane and sample whose bytes are wrong): a copy engine that
// drops or reorders one device's copies while the others run, a Portable allocation usable only
// from the context that made it, a cross-device event wait that lets a lane start early and read
// a source being rewritten, a copy that completes its event before its bytes land.
TEST_F(AllGpusCopyTest, EveryGpuUploadingAtOnceDeliversEveryByte) {
  PAGELOCK_RULE("R160,R14,R18");
  MeasureEveryGpu("host_to_all", Dir::kH2D, /*bidir=*/false);
}

TEST_F(AllGpusCopyTest, EveryGpuDownloadingAtOnceDeliversEveryByte) {
  PAGELOCK_RULE("R160,R14,R18");
  MeasureEveryGpu("all_to_host", Dir::kD2H, /*bidir=*/false);
}

TEST_F(AllGpusCopyTest, EveryGpuCopyingBothWaysAtOnceDeliversEveryByteMeasuringUploads) {
  PAGELOCK_RULE("R160,R14,R18");
  MeasureEveryGpu("host_to_all_bidir", Dir::kH2D, /*bidir=*/true);
}

TEST_F(AllGpusCopyTest, EveryGpuCopyingBothWaysAtOnceDeliversEveryByteMeasuringDownloads) {
  PAGELOCK_RULE("R160,R14,R18");
  MeasureEveryGpu("all_to_host_bidir", Dir::kD2H, /*bidir=*/true);
}

}  // namespace
}  // namespace pagelock
