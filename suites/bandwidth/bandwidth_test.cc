// Copy bandwidth between host and device, measured the way NVIDIA's nvbandwidth measures it so
// the figures compare (tools/bandwidth/nvbandwidth_compare.py tables the ratios):
//   - copy-engine (CE) copies: cudaMemcpyAsync queued behind a kernel that holds the stream until
//     everything is queued, warm-up copies then CUDA events around the timed copies only, the
//     median of the samples. The figures compared with nvbandwidth use its method and defaults
//     (v0.8: 512 MiB buffers, 4 warm-up and 16 timed copies per sample, 3 samples, none
//     discarded); the others 64 MiB, no warm-up copy, one discarded sample, then 8 copies and 5;
//   - SM copies: a copy kernel reading or writing host memory through its device alias;
//   - bidirectional, as nvbandwidth does it: the measured direction's 512 MiB copies on one stream
//     while an interfering copy of twice the size runs the other way on a second stream, both held
//     behind the holding kernel, the second stream starting on the first one's start event; only
//     the measured stream's copies are timed (one case per direction);
//   - latency: a dependent pointer chase through mapped host memory by one GPU thread;
// plus what nvbandwidth does not measure: registered versus allocated memory, write-combined
// uploads and host reads, pageable copies and a size sweep (4 KiB to 256 MiB) as a curve. Every
// figure is also given as a fraction of the PCIe link limit read from the device. Every timed copy
// is then checked byte by byte (on the device where the data is big). Figures are metrics; the
// gates are: pinned copies reach PAGELOCK_BANDWIDTH_FLOOR (default 0.40) of the link's rate, else
// FAIL (fixtures/pcie.h); the link runs at its slot's maximum generation and width under load (the
// smallest of the GPU's, its upstream port's and NVML's system maximum, or the link the operator
// declares in PAGELOCK_PCIE_EXPECT), else FAIL "link degraded"; the median host<->device latency,
// a device->host mapped read and a host flag answered by a polling kernel, stays below
// PAGELOCK_LATENCY_CEILING_US per hop (default 5 us), else FAIL, as DCGM's DCGM_FR_HIGH_LATENCY;
// and every case is judged on the link's AER and replay counters (fixtures/link_health.h). The
// floors and the ceiling are operator policy (rules.tsv kind `policy`): each failure names where
// its figure came from. Where the GPU reaches the host over NVLink-C2C (attribute 100 = 1, or
// NVML's C2C mode) the PCIe gates are NotSupported with the reason (RequirePcieHostLink): their
// figures are PCIe's, and the copies do not cross a PCIe link there.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/link_health.h"
#include "fixtures/pcie.h"
#include "fixtures/resources.h"
#include "fixtures/settings.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"
#include "kernels/streams/stream_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

constexpr size_t kBytes = size_t{64} << 20;
constexpr int kLoops = 8;  // copies per sample (nvbandwidth's loopCount is 16 of 512 MiB)
constexpr int kSamples = 5;
constexpr double kHoldTimeoutS = 10;
// nvbandwidth's defaults (bufferSize 512 MiB, loopCount 16, testSamples 3) and WARMUP_COUNT (4
// copies queued before each sample's start event, memcpy.cpp); it discards no sample.
constexpr size_t kNvbwBytes = size_t{512} << 20;
constexpr int kNvbwLoops = 16;
constexpr int kNvbwSamples = 3;
constexpr int kNvbwWarmup = 4;
// The full tier times 8 copies per sample (a sample's figure is their mean: a steady copy engine
// gives the same with 8 as with 16, in half the time); the nvbandwidth comparison sets
// PAGELOCK_NVBW_LOOPS=16 to copy nvbandwidth's loop exactly. Recorded as budget nvbw_loops_count;
// a value that is not a count from 1 to 1000 fails the case.
int NvbwLoops() {
  const char* v = settings::Text("PAGELOCK_NVBW_LOOPS");
  int n = static_cast<int>(settings::DefaultNumber("PAGELOCK_NVBW_LOOPS"));
  if (v && *v) {
    char* end = nullptr;
    const long got = std::strtol(v, &end, 10);
    if (*end != '\0' || got < 1 || got > 1000) {
      ADD_FAILURE() << "PAGELOCK_NVBW_LOOPS='" << v << "' is not a count from 1 to 1000";
      return kNvbwLoops;
    }
    n = static_cast<int>(got);
  }
  Budget("nvbw_loops_count", n, "count");
  return n;
}

// The link limit of a device: its maximum generation and width (an idle link trains down, so the
// current values can read low between tests), else the current ones; 0 when unknown.
double LinkLimitGBps(const DeviceInfo& d, std::string* basis) {
  if (d.pcie_max_gen > 0 && d.pcie_max_width > 0) {
    *basis = "max gen" + std::to_string(d.pcie_max_gen) + " x" + std::to_string(d.pcie_max_width) + " (" +
             d.pcie_source + ")";
    return pcie::LinkGBps(d.pcie_max_gen, d.pcie_max_width);
  }
  *basis = "current gen" + std::to_string(d.pcie_gen) + " x" + std::to_string(d.pcie_width) + " (" + d.pcie_source + ")";
  return pcie::LinkGBps(d.pcie_gen, d.pcie_width);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One timed direction: `op(stream)` enqueues one copy of `bytes`.
struct Lane {
  cudaStream_t stream = nullptr;
  std::function<cudaError_t(cudaStream_t)> op;
  size_t bytes = 0;
  std::vector<double> gbps;  // one per sample
  int device = -1;           // the stream's device when it is not the current one
};

class BandwidthTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    void* p = nullptr;
    ASSERT_CUDA_OK(cudaHostAlloc(&p, 2 * sizeof(unsigned) + sizeof(unsigned long long), cudaHostAllocMapped));
    flag_ = static_cast<unsigned*>(p);
    counter_ = reinterpret_cast<unsigned long long*>(flag_ + 2);
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&stream2_, cudaStreamNonBlocking));
    ASSERT_CUDA_OK(cudaMalloc(&device_, kBytes));
    ASSERT_CUDA_OK(cudaMalloc(&device2_, kBytes));
    link_ = LinkLimitGBps(device(), &link_basis_);
    sms_ = std::max(1, device().Attr(cudaDevAttrMultiProcessorCount));
    link_watch_.Start(device().pci_bus_id);  // AER and replay counters before the case (P06)
  }
  void TearDown() override {
    during_ = nullptr;  // it may hold references into the case's frame
    if (flag_) __atomic_store_n(flag_, 1u, __ATOMIC_RELEASE);  // never leave a held stream
    for (cudaStream_t s : {stream_, stream2_}) {
      if (s) {
        EXPECT_CUDA_OK(cudaStreamSynchronize(s));
        EXPECT_CUDA_OK(cudaStreamDestroy(s));
      }
    }
    if (!IsSkipped()) link_watch_.Finish();  // the copies are done: judge the counters (P06)
    for (void* d : {device_, device2_}) {
      if (d) {
        EXPECT_CUDA_OK(cudaFree(d));
      }
    }
    if (flag_) {
      EXPECT_CUDA_OK(cudaFreeHost(flag_));
    }
    GpuTest::TearDown();
  }

  // nvbandwidth's method: each lane's stream is held by a kernel waiting on a host flag while
  // the start event, `loops` copies and the end event are queued; then the flag is released, so
  // the events time the copies alone. All lanes run at once (bidirectional). One warm-up.
  // `hold` false: no holding kernel (a pageable copy may wait for its stream, which would then
  // wait for the flag the host releases only after queueing: a stall until the kernel's timeout).
  // `warmup` untimed copies are queued behind the hold before the start event. `together`: the
  // other lanes' streams wait for lane 0's start event, so every lane starts at once. The first
  // `discard` samples are taken and dropped (a warm-up for cases without warm-up copies).
  void Measure(std::vector<Lane*> lanes, int loops = kLoops, int samples = kSamples, bool hold = true,
               int warmup = 0, bool together = false, int discard = 1) {
    int current = 0;
    ASSERT_CUDA_OK(cudaGetDevice(&current));
    // Events belong to the device of the stream they are recorded on.
    auto on = [&](size_t i) { return cudaSetDevice(lanes[i]->device >= 0 ? lanes[i]->device : current); };
    std::vector<cudaEvent_t> start(lanes.size()), stop(lanes.size());
    std::vector<OwnedEvent> own_start(lanes.size()), own_stop(lanes.size());
    for (size_t i = 0; i < lanes.size(); ++i) {
      ASSERT_CUDA_OK(on(i));
      ASSERT_CUDA_OK(cudaEventCreate(&start[i]));
      own_start[i] = OwnedEvent::Adopt(start[i]);
      ASSERT_CUDA_OK(cudaEventCreate(&stop[i]));
      own_stop[i] = OwnedEvent::Adopt(stop[i]);
    }
    for (int s = 0; s < samples + discard; ++s) {
      __atomic_store_n(flag_, 0u, __ATOMIC_RELEASE);
      flag_[1] = kKernelOk;
      for (size_t i = 0; i < lanes.size(); ++i) {
        cudaStream_t st = lanes[i]->stream;
        ASSERT_CUDA_OK(on(i));
        if (hold) {
          ASSERT_CUDA_OK(LaunchAwaitFlag(flag_, 1, static_cast<uint64_t>(kHoldTimeoutS * TimeScale() * 1e9), flag_ + 1, st));
        }
        for (int w = 0; w < warmup; ++w) {
          ASSERT_CUDA_OK(lanes[i]->op(st));
        }
      }
      for (size_t i = 0; i < lanes.size(); ++i) {
        ASSERT_CUDA_OK(on(i));
        if (together && i > 0) {
          ASSERT_CUDA_OK(cudaStreamWaitEvent(lanes[i]->stream, start[0], 0));
        }
        ASSERT_CUDA_OK(cudaEventRecord(start[i], lanes[i]->stream));
      }
      for (size_t i = 0; i < lanes.size(); ++i) {
        cudaStream_t st = lanes[i]->stream;
        ASSERT_CUDA_OK(on(i));
        for (int l = 0; l < loops; ++l) ASSERT_CUDA_OK(lanes[i]->op(st));
        ASSERT_CUDA_OK(cudaEventRecord(stop[i], st));
      }
      __atomic_store_n(flag_, 1u, __ATOMIC_RELEASE);
      if (during_) during_();  // the copies are running now
      for (size_t i = 0; i < lanes.size(); ++i) {
        ASSERT_CUDA_OK(cudaEventSynchronize(stop[i]));
        float ms = 0;
        ASSERT_CUDA_OK(cudaEventElapsedTime(&ms, start[i], stop[i]));
        ASSERT_GT(ms, 0.f) << "zero elapsed time between events around " << loops << " copies";
        if (s >= discard) lanes[i]->gbps.push_back(static_cast<double>(lanes[i]->bytes) * loops / (ms * 1e-3) / 1e9);
        link_watch_.Moved(static_cast<double>(lanes[i]->bytes) * (loops + warmup));  // beside the P06 deltas
      }
      ASSERT_NE(flag_[1], kKernelTimedOut) << "the holding kernel never saw the host's flag";
    }
    for (size_t i = 0; i < lanes.size(); ++i) {
      EXPECT_CUDA_OK(own_start[i].Free());
      EXPECT_CUDA_OK(own_stop[i].Free());
    }
    ASSERT_CUDA_OK(cudaSetDevice(current));
  }

  // Records "<name>_GBps", its samples and its fraction of the link; returns the median.
  double Record(const std::string& name, const Lane& lane) {
    const double med = Median(lane.gbps);
    Metric(name + "_GBps", med, "GB/s");
    std::ostringstream samples;
    for (double g : lane.gbps) samples << FormatNumber(g) << " ";
    Observe(name + "_samples_GBps", samples.str());
    if (link_ > 0) Metric(name + "_link_fraction", med / link_, "ratio");
    return med;
  }
  void NoteLink() {
    Observe("pcie_link_basis", link_basis_);
    if (link_ > 0) {
      Metric("pcie_link_limit_GBps", link_, "GB/s");
    }
  }

  // Mismatches of n bytes at device-accessible p against PatternByte(i, seed), counted on the
  // device (the data is big).
  size_t DeviceCount(const void* p, size_t n, uint32_t seed) {
    *counter_ = 0;
    EXPECT_CUDA_OK(LaunchCountPatternMismatches(p, n, seed, counter_, stream_));
    EXPECT_CUDA_OK(cudaStreamSynchronize(stream_));
    return static_cast<size_t>(*counter_);
  }
  cudaError_t DeviceFill(void* p, size_t n, uint32_t seed) {
    cudaError_t e = LaunchFillPattern(p, n, seed, stream_);
    return e != cudaSuccess ? e : cudaStreamSynchronize(stream_);
  }

  // Pinned H2D and D2H CE copies of `bytes` from/to `host` (device alias `alias`, or null for
  // pageable memory, which the host fills and checks) and device memory `dev` (null: device_,
  // kBytes): timed, then verified. `nvbw`: nvbandwidth's loop and sample counts and warm-up copy.
  void CopyEngineBothWays(const std::string& prefix, unsigned char* host, unsigned char* alias,
                          double* h2d = nullptr, double* d2h = nullptr, size_t bytes = kBytes, void* dev = nullptr,
                          bool nvbw = false) {
    void* const device = dev ? dev : device_;
    const size_t n = dev ? bytes : kBytes;
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    if (alias) {
      ASSERT_CUDA_OK(DeviceFill(alias, n, seed));
    } else {
      streams::HostFillPatternFrom(host, n, 0, seed);
    }
    // Pageable copies (no alias) are not held and take fewer samples: they are slow and may block.
    const int loops = nvbw ? NvbwLoops() : alias ? kLoops : 2, samples = nvbw ? kNvbwSamples : alias ? kSamples : 3;
    const int warmup = nvbw ? kNvbwWarmup : 0, discard = nvbw ? 0 : 1;
    Lane up{stream_, [&](cudaStream_t s) { return cudaMemcpyAsync(device, host, n, cudaMemcpyHostToDevice, s); }, n};
    Measure({&up}, loops, samples, alias != nullptr, warmup, false, discard);
    if (HasFatalFailure()) return;
    const double u = Record("h2d_" + prefix + "_ce", up);
    EXPECT_EQ(DeviceCount(device, n, seed), 0u) << prefix << ": the timed H2D copies did not deliver every byte";
    const uint32_t seed2 = seed ^ 0x5a5a5a5au;
    ASSERT_CUDA_OK(DeviceFill(device, n, seed2));
    Lane down{stream_, [&](cudaStream_t s) { return cudaMemcpyAsync(host, device, n, cudaMemcpyDeviceToHost, s); }, n};
    Measure({&down}, loops, samples, alias != nullptr, warmup, false, discard);
    if (HasFatalFailure()) return;
    const double d = Record("d2h_" + prefix + "_ce", down);
    const size_t bad = alias ? DeviceCount(alias, n, seed2) : streams::HostCountPattern(host, n, 0, seed2);
    EXPECT_EQ(bad, 0u) << prefix << ": the timed D2H copies did not deliver every byte";
    if (h2d) *h2d = u;
    if (d2h) *d2h = d;
  }

  unsigned* flag_ = nullptr;  // [0] hold flag, [1] holding kernel status
  unsigned long long* counter_ = nullptr;
  cudaStream_t stream_ = nullptr, stream2_ = nullptr;
  void* device_ = nullptr;
  void* device2_ = nullptr;
  double link_ = 0;
  std::string link_basis_;
  int sms_ = 1;
  std::function<void()> during_;  // called by Measure while each sample's copies run
  LinkHealthWatch link_watch_;
};

// A copy path (or a timer) 10x slower than the link fails this: at the default floor of 0.40 an
// H200 on gen5 x16 (63 GB/s) must reach 25.2 GB/s each way; it measures about 55. The link is the
// slot's (NVML's maximum for this device and system), so a gen5 GPU in a gen4 slot is held to
// 0.40 of gen4. Policy (P04): the failure names the floor's provenance.
TEST_F(BandwidthTest, PinnedCopiesReachAFairShareOfThePcieLink) {
  PAGELOCK_RULE("P03,P04,P06,R04");
  // A floor that is not a fraction is a configuration error: fail closed, before anything else.
  const pcie::Floor floor = pcie::BandwidthFloor();
  ASSERT_EQ(floor.error, "");
  Budget("bandwidth_floor_fraction", floor.fraction, "ratio");
  Observe("bandwidth_floor_source", floor.source);
  // A floor of a PCIe link's rate says nothing of copies over NVLink-C2C (about 400 GB/s against a
  // 25 GB/s floor could never fail): NotSupported there, before any work.
  PAGELOCK_REQUIRE(RequirePcieHostLink());
  // The gate needs the link: NotSupported before any work when it is unknown.
  if (link_ <= 0) {
    PAGELOCK_NOT_SUPPORTED("PCIe link unknown on device 0: " + link_basis_);
  }
  NoteLink();
  Budget("bandwidth_floor_GBps", floor.fraction * link_, "GB/s");
  // nvbandwidth's host_to_device_memcpy_ce / device_to_host_memcpy_ce: its sizes and counts.
  PinnedBuffer pinned = PinnedBuffer::Mapped(kNvbwBytes);
  ASSERT_CUDA_OK(pinned.status());
  DeviceBuffer dev(kNvbwBytes);
  ASSERT_CUDA_OK(dev.status());
  double h2d = 0, d2h = 0;
  CopyEngineBothWays("pinned", pinned.host(), pinned.dev(), &h2d, &d2h, kNvbwBytes, dev.get(), /*nvbw=*/true);
  if (HasFatalFailure()) return;
  const std::string below = pcie::JudgeFloor(h2d, d2h, link_, floor, link_basis_);
  if (!below.empty()) ADD_FAILURE() << below;
}

// Links train down at idle and back up under load, so the state is read while copies run: the
// best of five readings per sample, 10 ms apart (a sample's copies take about 150 ms on gen5 x16).
// A link trained below its slot's maximum FAILs "link degraded: gen X (max Y) width xA (max xB)":
// a failed retrain (a link stuck at gen1), a lane lost to a bad riser or slot. The slot's maximum
// is the smallest of the GPU's own (sysfs max_link_*), its upstream port's and NVML's "maximum
// ... possible with this device and system": a gen5 GPU in a gen4 slot trains to gen4 by design
// and passes at gen4, and still fails at gen3 (both maxima are in the message). DCGM judges
// against configured minimums (min_pci_gen, min_pci_width): here that is PAGELOCK_PCIE_EXPECT
// (gen4x8, recorded), and then only a link below it fails. A link that cannot be read is
// NotSupported (no sysfs files) or a WARN naming the value sysfs wrote ("Unknown"), never a
// verdict; over NVLink-C2C the PCIe link carries none of the copies, so it is NotSupported.
TEST_F(BandwidthTest, PcieLinkRunsAtItsMaximumGenerationAndWidthUnderLoad) {
  PAGELOCK_RULE("P05,P06,P09,R04,S07");
  // A declaration that is not a link is a configuration error: fail closed, before anything else.
  const pcie::ExpectedLink expect = pcie::ExpectedLinkFromEnv();
  ASSERT_EQ(expect.error, "");
  Observe("pcie_link_expected_source", expect.source);
  if (expect.declared()) {
    Budget("pcie_link_expected_gen", expect.gen, "gen");
    Budget("pcie_link_expected_width", expect.width, "lanes");
  }
  PAGELOCK_REQUIRE(RequirePcieHostLink());
  const std::string bus = device().pci_bus_id;
  const pcie::LinkState idle = pcie::ReadLink(bus);
  if (!idle.readable()) {
    PAGELOCK_NOT_SUPPORTED("PCIe link state not in sysfs: no " + idle.missing);
  }
  const pcie::UpstreamPort port = pcie::ReadUpstreamPort(bus);
  Observe("pcie_link_upstream_port", port.known() ? port.name + " max " + port.link.Max() : port.why);
  PinnedBuffer pinned = PinnedBuffer::Mapped(kNvbwBytes);
  ASSERT_CUDA_OK(pinned.status());
  DeviceBuffer dev(kNvbwBytes);
  ASSERT_CUDA_OK(dev.status());
  const uint32_t seed = static_cast<uint32_t>(CaseRng()());
  ASSERT_CUDA_OK(DeviceFill(pinned.dev(), kNvbwBytes, seed));
  pcie::LinkState loaded;
  int reads = 0;
  during_ = [&] {
    for (int i = 0; i < 5; ++i, ++reads) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      loaded = pcie::Best(loaded, pcie::ReadLink(bus));
    }
  };
  Lane up{stream_, [&](cudaStream_t s) { return cudaMemcpyAsync(dev.get(), pinned.host(), kNvbwBytes, cudaMemcpyHostToDevice, s); }, kNvbwBytes};
  Measure({&up}, NvbwLoops(), kNvbwSamples, true, kNvbwWarmup, false, 0);
  during_ = nullptr;
  if (HasFatalFailure()) return;
  Record("h2d_link_check_ce", up);
  EXPECT_EQ(DeviceCount(dev.get(), kNvbwBytes, seed), 0u) << "the H2D copies under the link check did not deliver every byte";
  Observe("pcie_link_reads_under_load", reads);
  if (!loaded.readable()) {
    PAGELOCK_NOT_SUPPORTED("PCIe link state vanished from sysfs under load: no " + loaded.missing);
  }
  Observe("pcie_link_under_load", loaded.Current());
  Observe("pcie_link_max", loaded.Max());
  const std::string unknown = loaded.Unknown();
  if (!unknown.empty()) {
    AddWarning("cannot read the PCIe link under load, so it is not judged: sysfs wrote " + unknown);
    return;
  }
  // NVML's maximum counts only where the probe's link came from NVML (else it is sysfs's own).
  const bool nvml = device().pcie_source == "nvml";
  const pcie::SlotMax slot = pcie::SlotMaximum(loaded, port, nvml ? device().pcie_max_gen : -1,
                                               nvml ? device().pcie_max_width : -1);
  Observe("pcie_link_slot_max", slot.basis);
  // A driver or platform that leaves the link below what the slot allows (a failed retrain, a
  // lost lane) still fails: the slot's maximum only ever lowers the GPU's own.
  const std::string degraded = pcie::JudgeLink(loaded, expect, slot);
  if (!degraded.empty()) ADD_FAILURE() << degraded;
}

TEST_F(BandwidthTest, BidirectionalCopyEngineCopiesDeliverEveryByte) {
  PAGELOCK_RULE("P06,R04,S07");
  NoteLink();
  // nvbandwidth's host_to_device_bidirectional_memcpy_ce and device_to_host_..._ce: the measured
  // direction copies 512 MiB buffers (host1 <-> dev1) while the opposite direction copies twice
  // that (host2 <-> dev2) on a second stream, so it interferes for the whole measurement; only
  // the measured stream's copies are timed.
  constexpr size_t kBig = 2 * kNvbwBytes;
  PinnedBuffer host1 = PinnedBuffer::Mapped(kNvbwBytes), host2 = PinnedBuffer::Mapped(kBig);
  ASSERT_CUDA_OK(host1.status());
  ASSERT_CUDA_OK(host2.status());
  DeviceBuffer dev1(kNvbwBytes), dev2(kBig);
  ASSERT_CUDA_OK(dev1.status());
  ASSERT_CUDA_OK(dev2.status());
  const uint32_t seed = static_cast<uint32_t>(CaseRng()()), seed2 = seed ^ 0x77u, seed3 = seed ^ 0x99u,
                 seed4 = seed ^ 0xaau;
  // H2D measured (host1 -> dev1), D2H interfering (dev2 -> host2).
  ASSERT_CUDA_OK(DeviceFill(host1.dev(), kNvbwBytes, seed));
  ASSERT_CUDA_OK(DeviceFill(dev2.get(), kBig, seed2));
  {
    Lane up{stream_, [&](cudaStream_t s) { return cudaMemcpyAsync(dev1.get(), host1.host(), kNvbwBytes, cudaMemcpyHostToDevice, s); }, kNvbwBytes};
    Lane against{stream2_, [&](cudaStream_t s) { return cudaMemcpyAsync(host2.host(), dev2.get(), kBig, cudaMemcpyDeviceToHost, s); }, kBig};
    Measure({&up, &against}, NvbwLoops(), kNvbwSamples, true, kNvbwWarmup, /*together=*/true, /*discard=*/0);
    if (HasFatalFailure()) return;
    Record("h2d_bidir_ce", up);
    Metric("h2d_bidir_ce_interfering_d2h_GBps", Median(against.gbps), "GB/s");
  }
  EXPECT_EQ(DeviceCount(dev1.get(), kNvbwBytes, seed), 0u) << "measured H2D copies of the bidirectional H2D case";
  EXPECT_EQ(DeviceCount(host2.dev(), kBig, seed2), 0u) << "interfering D2H copies of the bidirectional H2D case";
  // D2H measured (dev1 -> host1), H2D interfering (host2 -> dev2).
  ASSERT_CUDA_OK(DeviceFill(dev1.get(), kNvbwBytes, seed3));
  ASSERT_CUDA_OK(DeviceFill(dev2.get(), kBig, seed4));
  {
    Lane down{stream_, [&](cudaStream_t s) { return cudaMemcpyAsync(host1.host(), dev1.get(), kNvbwBytes, cudaMemcpyDeviceToHost, s); }, kNvbwBytes};
    Lane against{stream2_, [&](cudaStream_t s) { return cudaMemcpyAsync(dev2.get(), host2.host(), kBig, cudaMemcpyHostToDevice, s); }, kBig};
    Measure({&down, &against}, NvbwLoops(), kNvbwSamples, true, kNvbwWarmup, /*together=*/true, /*discard=*/0);
    if (HasFatalFailure()) return;
    Record("d2h_bidir_ce", down);
    Metric("d2h_bidir_ce_interfering_h2d_GBps", Median(against.gbps), "GB/s");
  }
  EXPECT_EQ(DeviceCount(host1.dev(), kNvbwBytes, seed3), 0u) << "measured D2H copies of the bidirectional D2H case";
  EXPECT_EQ(DeviceCount(dev2.get(), kBig, seed2), 0u) << "interfering H2D copies of the bidirectional D2H case";
}

TEST_F(BandwidthTest, SmCopiesThroughTheDeviceAliasDeliverEveryByte) {
  PAGELOCK_RULE("P06,R14,R51,S07");
  NoteLink();
  PinnedBuffer pinned = PinnedBuffer::Mapped(kBytes);
  ASSERT_CUDA_OK(pinned.status());
  const unsigned blocks = static_cast<unsigned>(sms_) * 4;
  Observe("sm_copy_blocks", blocks);
  const uint32_t seed = static_cast<uint32_t>(CaseRng()()), seed2 = seed ^ 0x33u;
  ASSERT_CUDA_OK(DeviceFill(pinned.dev(), kBytes, seed));
  Lane up{stream_, [&](cudaStream_t s) { return LaunchCopyKernel(device_, pinned.dev(), kBytes, blocks, s); }, kBytes};
  Measure({&up});
  if (HasFatalFailure()) return;
  Record("h2d_sm", up);
  EXPECT_EQ(DeviceCount(device_, kBytes, seed), 0u) << "the SM copies from host memory did not deliver every byte";
  ASSERT_CUDA_OK(DeviceFill(device_, kBytes, seed2));
  Lane down{stream_, [&](cudaStream_t s) { return LaunchCopyKernel(pinned.dev(), device_, kBytes, blocks, s); }, kBytes};
  Measure({&down});
  if (HasFatalFailure()) return;
  Record("d2h_sm", down);
  EXPECT_EQ(DeviceCount(pinned.dev(), kBytes, seed2), 0u) << "the SM copies to host memory did not deliver every byte";
}

// A device->host read through mapped memory that takes a slow path fails this (DCGM's
// DCGM_FR_HIGH_LATENCY): reads bounced through another buffer, an IOMMU walk on every access, a
// link trained to gen1 x1, a poll of a fault handler. Each hop of the chase is one dependent 8-byte
// load from host memory, a full PCIe read round trip (1.19 us on the H200 at gen5 x16, as
// nvbandwidth's host_device_latency_sm); the default ceiling of 5 us per hop leaves room for
// switches, retimers, a remote socket and an IOMMU on any PCIe system. Policy (P07): the failure
// names the ceiling's provenance. Over NVLink-C2C the walk is checked and the median recorded,
// but a PCIe hop's ceiling is not judged (NotSupported with the reason).
TEST_F(BandwidthTest, HostDeviceLatencyByAPointerChaseThroughMappedMemory) {
  PAGELOCK_RULE("P06,P07,R14,S07");
  // A ceiling that is not a time is a configuration error: fail closed, before anything else.
  const pcie::LatencyCeiling ceiling = pcie::LatencyCeilingFromEnv();
  ASSERT_EQ(ceiling.error, "");
  Budget("latency_ceiling_per_hop_us", ceiling.us, "us");
  Observe("latency_ceiling_source", ceiling.source);
  // 16384 slots of 64 bytes in one random cycle: every load depends on the one before.
  constexpr size_t kSlots = 16384, kStride = 8;  // in 8-byte words
  constexpr unsigned kSteps = 4096;
  PinnedBuffer chain = PinnedBuffer::Mapped(kSlots * kStride * sizeof(unsigned long long));
  ASSERT_CUDA_OK(chain.status());
  auto* words = reinterpret_cast<unsigned long long*>(chain.host());
  std::vector<size_t> order(kSlots);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin() + 1, order.end(), CaseRng());
  for (size_t i = 0; i < kSlots; ++i) words[order[i] * kStride] = order[(i + 1) % kSlots] * kStride;
  // The host walks the same chain: the device must end where the host does.
  unsigned long long want = 0;
  for (unsigned s = 0; s < kSteps; ++s) want = words[want];
  auto* out = counter_;  // reuse: [0] elapsed; the last index goes in a second word
  PinnedBuffer last = PinnedBuffer::Mapped(sizeof(unsigned long long));
  ASSERT_CUDA_OK(last.status());
  std::vector<double> ns;
  for (int r = 0; r < kSamples + 1; ++r) {
    ASSERT_CUDA_OK(LaunchPointerChase(reinterpret_cast<const unsigned long long*>(chain.dev()), kSteps, out,
                                      reinterpret_cast<unsigned long long*>(last.dev()), stream_));
    ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
    ASSERT_EQ(*reinterpret_cast<unsigned long long*>(last.host()), want)
        << "the device's walk through host memory ended at another element than the host's";
    if (r > 0) ns.push_back(static_cast<double>(*out) / kSteps);  // repetition 0 is the warm-up
  }
  const double median = Median(ns);
  Metric("host_device_latency_ns", median, "ns");
  std::ostringstream samples;
  for (double v : ns) samples << FormatNumber(v) << " ";
  Observe("host_device_latency_samples_ns", samples.str());
  if (HasFailure()) return;
  PAGELOCK_REQUIRE(RequirePcieHostLink());
  const std::string high = pcie::JudgeLatency(
      "device->host mapped read (pointer chase)", median, 1, ceiling,
      "median of " + std::to_string(kSamples) + " repetitions of " + std::to_string(kSteps) +
          " dependent loads, per load, after 1 warm-up repetition; samples " + samples.str());
  if (!high.empty()) ADD_FAILURE() << high;
}

// Waits (bounded) until *p == want; false on timeout.
bool HostAwait(const unsigned* p, unsigned want, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != want) {
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
  return true;
}

// The latency a host sees: it stores a flag (and a payload word) in mapped memory, a polling
// kernel sees the flag, checks the payload, answers with its complement and a flag of its own,
// and the host sees that answer. A platform or driver that delays either direction fails it: a
// device poll that reads a stale cached copy of the host's flag until an eviction, posted writes
// to host memory held back in a buffer, a mapping that traps. A round is three hops, so the
// ceiling is three times PAGELOCK_LATENCY_CEILING_US: the host's flag seen by the device's poll,
// the device's read of the payload, the device's answer seen by the host (the kernel fences at
// system scope around them). Every round must be answered with the right payload, on any host
// link; the ceiling (policy, P08) is judged on PCIe hosts only.
TEST_F(BandwidthTest, HostDeviceFlagRoundTripStaysBelowTheLatencyCeiling) {
  PAGELOCK_RULE("P06,P08,R14,R77,S07");
  const pcie::LatencyCeiling ceiling = pcie::LatencyCeilingFromEnv();
  ASSERT_EQ(ceiling.error, "");
  Budget("latency_ceiling_per_hop_us", ceiling.us, "us");
  Observe("latency_ceiling_source", ceiling.source);
  constexpr unsigned kRounds = 1000, kWarmup = 50;  // the first rounds include the kernel's launch
  Budget("round_trip_rounds", kRounds, "count");
  Budget("round_trip_warmup_rounds", kWarmup, "count");
  // Words, each on its own 64-byte line: [0] to_device, [16] to_host, [32] bad, [48] status,
  // [64] payload, [128] reply.
  constexpr size_t kWords = 256;
  PinnedBuffer buf = PinnedBuffer::Mapped(kWords * sizeof(unsigned));
  ASSERT_CUDA_OK(buf.status());
  auto* h = reinterpret_cast<unsigned*>(buf.host());
  auto* d = reinterpret_cast<unsigned*>(buf.dev());
  std::memset(h, 0, kWords * sizeof(unsigned));
  h[48] = kKernelOk;
  const double wait_s = kHoldTimeoutS * TimeScale();
  ASSERT_CUDA_OK(LaunchPingPong(d, d + 16, d + 64, d + 128, 1, kRounds, static_cast<uint64_t>(wait_s * 1e9), d + 32,
                                d + 48, stream_));
  std::vector<double> ns;
  ns.reserve(kRounds);
  unsigned answered = 0, wrong_replies = 0;
  for (unsigned r = 1; r <= kRounds; ++r) {
    const unsigned payload = r * 2654435761u;  // the kernel checks payload[0] == r * 2654435761u
    __atomic_store_n(h + 64, payload, __ATOMIC_RELAXED);
    const auto start = std::chrono::steady_clock::now();
    __atomic_store_n(h, r, __ATOMIC_RELEASE);  // the payload before the flag
    if (!HostAwait(h + 16, r, wait_s)) break;
    const double elapsed = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    wrong_replies += __atomic_load_n(h + 128, __ATOMIC_ACQUIRE) != ~payload;
    ++answered;
    if (r > kWarmup) ns.push_back(elapsed);
  }
  // A kernel left waiting (the host gave up) ends on its own timeout: the wait is bounded.
  ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
  EXPECT_EQ(answered, kRounds) << "the device stopped answering the host's flag after " << answered << " rounds";
  EXPECT_EQ(h[48], kKernelOk) << "the polling kernel timed out waiting for the host's flag";
  EXPECT_EQ(h[32], 0u) << "payload words the device read other than the host wrote before the flag";
  EXPECT_EQ(wrong_replies, 0u) << "rounds whose answer was not the complement of the payload";
  if (answered < kRounds) return;
  const double median = Median(ns);
  Metric("host_device_round_trip_ns", median, "ns");
  std::sort(ns.begin(), ns.end());
  Metric("host_device_round_trip_p99_ns", ns[ns.size() * 99 / 100], "ns");
  if (HasFailure()) return;
  PAGELOCK_REQUIRE(RequirePcieHostLink());
  const std::string high = pcie::JudgeLatency(
      "host flag -> polling kernel -> host round trip", median, 3, ceiling,
      "median of " + std::to_string(ns.size()) + " rounds after " + std::to_string(kWarmup) + " warm-up rounds");
  if (!high.empty()) ADD_FAILURE() << high;
}

// A registration copied through a slower path than an allocation (staged, split per page) fails:
// each direction must reach PAGELOCK_REGISTERED_RATIO_FLOOR (default 0.5) of allocated pinned
// memory's rate, measured the same way in the same case; the H200 measures 1.00. Policy (P14):
// the failure names the floor's provenance. A ratio, so it holds over any host link.
TEST_F(BandwidthTest, RegisteredMemoryCopiesLikeAllocatedMemory) {
  PAGELOCK_RULE("P06,P14,R04,R45,S07");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  const pcie::Floor floor = pcie::RegisteredRatioFloor();
  ASSERT_EQ(floor.error, "");
  Budget("registered_ratio_floor_fraction", floor.fraction, "ratio");
  Observe("registered_ratio_floor_source", floor.source);
  NoteLink();
  std::vector<unsigned char> heap(kBytes + 4096);
  auto* base = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(heap.data()) + 4095) & ~uintptr_t{4095});
  ASSERT_CUDA_OK(cudaHostRegister(base, kBytes, cudaHostRegisterMapped));
  auto own_base = HostRegistration::Adopt(base);
  void* alias = nullptr;
  EXPECT_CUDA_OK(cudaHostGetDevicePointer(&alias, base, 0));
  double h2d = 0, d2h = 0;
  if (alias) CopyEngineBothWays("registered", base, static_cast<unsigned char*>(alias), &h2d, &d2h);
  EXPECT_CUDA_OK(own_base.Free());
  PinnedBuffer pinned = PinnedBuffer::Mapped(kBytes);
  ASSERT_CUDA_OK(pinned.status());
  double ah2d = 0, ad2h = 0;
  CopyEngineBothWays("allocated", pinned.host(), pinned.dev(), &ah2d, &ad2h);
  if (HasFatalFailure() || !(ah2d > 0 && ad2h > 0)) return;
  Metric("h2d_registered_over_allocated", h2d / ah2d, "ratio");
  Metric("d2h_registered_over_allocated", d2h / ad2h, "ratio");
  for (const auto& [dir, ratio] : {std::pair<const char*, double>{"H2D", h2d / ah2d}, {"D2H", d2h / ad2h}}) {
    EXPECT_GE(ratio, floor.fraction)
        << dir << ": registered memory copied at " << ratio << " of allocated pinned memory's rate, below the floor of "
        << floor.fraction << " (" << floor.provenance << ")";
  }
}

// A pageable path that collapsed (staging serialised, a page fault per page, a bounce through
// a slow buffer) fails: at the default floor of 0.02 of the link (1.26 GB/s on gen5 x16), about
// 5x below what the H200 guest measures; labs set PAGELOCK_PAGEABLE_BANDWIDTH_FLOOR per SKU.
// Policy (P13): the failure names the floor's provenance. The bytes are checked on any host link;
// the floor, a share of a PCIe link, is judged on PCIe hosts only.
TEST_F(BandwidthTest, PageableCopiesDeliverEveryByteAboveTheirFloor) {
  PAGELOCK_RULE("P06,P13,R76,S07");
  const pcie::Floor floor = pcie::PageableBandwidthFloor();
  ASSERT_EQ(floor.error, "");
  Budget("pageable_bandwidth_floor_fraction", floor.fraction, "ratio");
  Observe("pageable_bandwidth_floor_source", floor.source);
  NoteLink();
  std::vector<unsigned char> pageable(kBytes);
  double h2d = 0, d2h = 0;
  CopyEngineBothWays("pageable", pageable.data(), nullptr, &h2d, &d2h);
  if (HasFatalFailure()) return;
  if (link_ <= 0 || HasFailure()) return;  // the bytes were checked; without the link there is no floor
  PAGELOCK_REQUIRE(RequirePcieHostLink());
  Budget("pageable_bandwidth_floor_GBps", floor.fraction * link_, "GB/s");
  const std::string below = pcie::JudgeFloor(h2d, d2h, link_, floor, link_basis_, "pageable copies");
  if (!below.empty()) ADD_FAILURE() << below;
}

TEST_F(BandwidthTest, WriteCombinedUploadAndSlowHostReads) {
  PAGELOCK_RULE("P06,R16,S07");
  NoteLink();
  PinnedBuffer wc = PinnedBuffer::Mapped(kBytes, cudaHostAllocWriteCombined | cudaHostAllocMapped);
  PinnedBuffer cached = PinnedBuffer::Mapped(kBytes);
  ASSERT_CUDA_OK(wc.status());
  ASSERT_CUDA_OK(cached.status());
  const uint32_t seed = static_cast<uint32_t>(CaseRng()());
  ASSERT_CUDA_OK(DeviceFill(wc.dev(), kBytes, seed));
  Lane up{stream_, [&](cudaStream_t s) { return cudaMemcpyAsync(device_, wc.host(), kBytes, cudaMemcpyHostToDevice, s); }, kBytes};
  Measure({&up});
  if (HasFatalFailure()) return;
  Record("h2d_writecombined_ce", up);
  EXPECT_EQ(DeviceCount(device_, kBytes, seed), 0u) << "the timed write-combined uploads did not deliver every byte";
  // Host reads: informational; write-combined reads are expected to be much slower (R16).
  std::memset(wc.host(), 3, kBytes);
  std::memset(cached.host(), 3, kBytes);
  for (auto [name, p] : {std::make_pair("host_read_writecombined", wc.host()),
                         std::make_pair("host_read_cached_pinned", cached.host())}) {
    const auto* v = reinterpret_cast<const volatile unsigned long long*>(p);
    const size_t n = (size_t{8} << 20) / sizeof(unsigned long long);
    unsigned long long sum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i) sum += v[i];
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(sum, n * 0x0303030303030303ull) << name << ": the host read other bytes than it wrote";
    Metric(std::string(name) + "_GBps", (n * 8) / s / 1e9, "GB/s");
  }
}

TEST_F(BandwidthTest, CopyBandwidthCurveFrom4KiBTo256MiB) {
  PAGELOCK_RULE("P06,R04,S07");
  NoteLink();
  constexpr size_t kMax = size_t{256} << 20;
  PinnedBuffer pinned = PinnedBuffer::Mapped(kMax);
  ASSERT_CUDA_OK(pinned.status());
  void* dev = nullptr;
  ASSERT_CUDA_OK(cudaMalloc(&dev, kMax));
  const auto own_dev = DeviceBuffer::Adopt(dev);
  for (size_t n = size_t{4} << 10; n <= kMax && !HasFatalFailure(); n *= 2) {
    // At least 64 MiB per sample for big sizes; at most 64 queued copies behind the hold.
    const int loops = static_cast<int>(std::clamp<size_t>(kBytes / n, 1, 64));
    const std::string size = n >= (size_t{1} << 20) ? std::to_string(n >> 20) + "MiB" : std::to_string(n >> 10) + "KiB";
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    ASSERT_CUDA_OK(DeviceFill(pinned.dev(), n, seed));
    Lane up{stream_, [&](cudaStream_t s) { return cudaMemcpyAsync(dev, pinned.host(), n, cudaMemcpyHostToDevice, s); }, n};
    Measure({&up}, loops, 3);
    if (HasFatalFailure()) break;
    Record("h2d_pinned_ce_" + size, up);
    EXPECT_EQ(DeviceCount(dev, n, seed), 0u) << size << " H2D copies did not deliver every byte";
    ASSERT_CUDA_OK(DeviceFill(dev, n, seed ^ 1));
    Lane down{stream_, [&](cudaStream_t s) { return cudaMemcpyAsync(pinned.host(), dev, n, cudaMemcpyDeviceToHost, s); }, n};
    Measure({&down}, loops, 3);
    if (HasFatalFailure()) break;
    Record("d2h_pinned_ce_" + size, down);
    EXPECT_EQ(DeviceCount(pinned.dev(), n, seed ^ 1), 0u) << size << " D2H copies did not deliver every byte";
  }
}

TEST_F(BandwidthTest, EveryDeviceCopiesAtItsOwnLinkRate) {
  PAGELOCK_RULE("P06,R14,R18,S07");
  PAGELOCK_REQUIRE(RequireDeviceCount(2));
  PinnedBuffer pinned = PinnedBuffer::Mapped(kBytes);
  ASSERT_CUDA_OK(pinned.status());
  const int count = static_cast<int>(Probe().devices.size());
  for (int d = 1; d < count && !HasFatalFailure(); ++d) {
    // Device 0's figures come from the other cases; each further device gets the same method.
    ASSERT_CUDA_OK(cudaSetDevice(d));
    void* dev = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&dev, kBytes));
    const auto own_dev = DeviceBuffer::Adopt(dev);
    cudaStream_t s = nullptr;
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const auto own_s = OwnedStream::Adopt(s);
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    streams::HostFillPatternFrom(pinned.host(), kBytes, 0, seed);
    Lane up{s, [&](cudaStream_t st) { return cudaMemcpyAsync(dev, pinned.host(), kBytes, cudaMemcpyHostToDevice, st); }, kBytes};
    Measure({&up});
    const std::string name = "h2d_pinned_ce_device" + std::to_string(d);
    if (!HasFatalFailure()) Metric(name + "_GBps", Median(up.gbps), "GB/s");
    std::memset(pinned.host(), 0, kBytes);
    ASSERT_CUDA_OK(cudaMemcpy(pinned.host(), dev, kBytes, cudaMemcpyDeviceToHost));
    EXPECT_EQ(streams::HostCountPattern(pinned.host(), kBytes, 0, seed), 0u)
        << "device " << d << ": the timed H2D copies did not deliver every byte";
  }
  ASSERT_CUDA_OK(cudaSetDevice(0));
}

TEST_F(BandwidthTest, AllDevicesCopyingAtOnceDeliverEveryByte) {
  PAGELOCK_RULE("P06,R14,R18,S07");
  // nvbandwidth's host_to_all / all_to_host CE cases: every device copies at the same time.
  PAGELOCK_REQUIRE(RequireDeviceCount(2));
  const int count = static_cast<int>(Probe().devices.size());
  std::vector<std::unique_ptr<PinnedBuffer>> host;
  std::vector<void*> dev(count, nullptr);
  std::vector<cudaStream_t> streams(count, nullptr);
  std::vector<DeviceBuffer> own_dev(count);
  std::vector<OwnedStream> own_streams(count);
  std::vector<uint32_t> seeds(count);
  for (int d = 0; d < count; ++d) {
    host.push_back(std::make_unique<PinnedBuffer>(PinnedBuffer::Mapped(kBytes, cudaHostAllocMapped | cudaHostAllocPortable)));
    ASSERT_CUDA_OK(host.back()->status());
    ASSERT_CUDA_OK(cudaSetDevice(d));
    ASSERT_CUDA_OK(cudaMalloc(&dev[d], kBytes));
    own_dev[d] = DeviceBuffer::Adopt(dev[d]);
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking));
    own_streams[d] = OwnedStream::Adopt(streams[d]);
    seeds[d] = static_cast<uint32_t>(CaseRng()());
    streams::HostFillPatternFrom(host[d]->host(), kBytes, 0, seeds[d]);
  }
  ASSERT_CUDA_OK(cudaSetDevice(0));
  for (const bool up : {true, false}) {
    std::vector<Lane> lanes(count);
    std::vector<Lane*> ptrs;
    for (int d = 0; d < count; ++d) {
      unsigned char* h = host[d]->host();
      void* g = dev[d];
      lanes[d] = Lane{streams[d], [h, g, up](cudaStream_t s) {
                        // copy-check: the H2D then D2H round trip is counted after the timing
                        return up ? cudaMemcpyAsync(g, h, kBytes, cudaMemcpyHostToDevice, s)
                                  : cudaMemcpyAsync(h, g, kBytes, cudaMemcpyDeviceToHost, s);  // copy-check: same
                      }, kBytes, {}, d};
      ptrs.push_back(&lanes[d]);
    }
    if (!up) {
      for (int d = 0; d < count; ++d) std::memset(host[d]->host(), 0, kBytes);
    }
    Measure(ptrs);
    if (HasFatalFailure()) break;
    double sum = 0;
    for (int d = 0; d < count; ++d) {
      sum += Record(std::string(up ? "h2d" : "d2h") + "_all_ce_device" + std::to_string(d), lanes[d]);
    }
    Metric(std::string(up ? "host_to_all" : "all_to_host") + "_ce_sum_GBps", sum, "GB/s");
    if (!up) {
      for (int d = 0; d < count; ++d) {
        EXPECT_EQ(streams::HostCountPattern(host[d]->host(), kBytes, 0, seeds[d]), 0u)
            << "device " << d << ": the timed all-devices copies did not deliver every byte";
      }
    }
  }
  for (int d = 0; d < count; ++d) {
    ASSERT_CUDA_OK(cudaSetDevice(d));
    EXPECT_CUDA_OK(own_streams[d].Free());
    EXPECT_CUDA_OK(own_dev[d].Free());

  }
  ASSERT_CUDA_OK(cudaSetDevice(0));
}

}  // namespace
}  // namespace pagelock
