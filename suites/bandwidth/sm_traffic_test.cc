// SM traffic through mapped host memory, and copies while the SMs are busy (peer gap K21, K20):
//   - bidirectional SM copies, as nvbandwidth's host_to_device_bidirectional_memcpy_sm and
//     device_to_host_bidirectional_memcpy_sm measure them: a copy kernel (one block of 512
//     threads per SM) moves N bytes the measured way through mapped host memory while a second
//     one moves 2N the other way on another stream, started on the measured stream's start
//     event; only the measured stream is timed. Every byte of both lanes is counted after every
//     sample, the sources rewritten and the destinations poisoned before it;
//   - pinned copy-engine copies and SM copies through mapped memory while a compute kernel keeps
//     every SM busy (DCGM's pcie plugin runs its bandwidth test beside a GEMM): every byte right,
//     and the copy-engine figures above PAGELOCK_BANDWIDTH_FLOOR of the link (P04's floor).
// The stress build uses nvbandwidth v0.8's sizes and counts (512 MiB, 4 warm-up and 16 timed
// copies, 3 samples) and names its metrics as tools/bandwidth/nvbandwidth_compare.py pairs them
// (h2d_bidir_sm_GBps); the full build 32 MiB, 1 + 4 copies, 3 samples, metrics prefixed quick_.
// Every case is judged on the link's AER and replay counters (P06). Rule ids refer to
// suites/rules.tsv.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "fixtures/gpu_test.h"
#include "fixtures/link_health.h"
#include "fixtures/pcie.h"
#include "fixtures/resources.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"
#include "kernels/bandwidth/sm_traffic_kernels.h"
#include "suites/bandwidth/lanes.h"

namespace pagelock {
namespace {

using bandwidth::Lane;
using bandwidth::Median;

#ifdef PAGELOCK_STRESS_TIER
constexpr size_t kBytes = size_t{512} << 20;
constexpr bandwidth::Method kMethod = bandwidth::kNvbandwidth;
const char kPrefix[] = "";
#else
constexpr size_t kBytes = size_t{32} << 20;
constexpr bandwidth::Method kMethod = bandwidth::kQuick;
const char kPrefix[] = "quick_";
#endif
// The compute load ends on the host's flag; this only bounds a load the host never stops.
constexpr double kLoadTimeoutS = 60;

class SmTrafficTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrCanMapHostMemory, 1));
    ASSERT_CUDA_OK(meter_.Init());
    measured_ = OwnedStream(cudaStreamNonBlocking);
    ASSERT_CUDA_OK(measured_.status());
    other_ = OwnedStream(cudaStreamNonBlocking);
    ASSERT_CUDA_OK(other_.status());
    counter_ = PinnedBuffer::Mapped(sizeof(unsigned long long));
    ASSERT_CUDA_OK(counter_.status());
    sms_ = static_cast<unsigned>(std::max(1, device().Attr(cudaDevAttrMultiProcessorCount)));
    link_ = bandwidth::LinkLimitGBps(device(), &link_basis_);
    Budget("copy_bytes_MiB", static_cast<double>(kBytes >> 20), "MiB");
    Budget("timed_copies_per_sample", kMethod.loops, "count");
    Budget("samples", kMethod.samples, "count");
    Observe("pcie_link_basis", link_basis_);
    watch_.Start(device().pci_bus_id);  // P06: AER and replay counters around the case
  }
  void TearDown() override {
    meter_.Release();  // never leave a stream held
    StopLoad();
    for (OwnedStream* s : {&measured_, &other_, &load_}) {
      if (*s) {
        EXPECT_CUDA_OK(cudaStreamSynchronize(s->get()));
      }
    }
    if (!IsSkipped()) watch_.Finish();
    // Pinned memory made after the kit's snapshot is freed before its leak check.
    EXPECT_CUDA_OK(counter_.Free());
    EXPECT_CUDA_OK(load_status_.Free());
    EXPECT_CUDA_OK(relay_.Free());
    EXPECT_CUDA_OK(meter_.Free());
    GpuTest::TearDown();
  }

  // Mismatches of n bytes at device-accessible p against PatternByte(i, seed), counted by a kernel.
  size_t DeviceCount(const void* p, size_t n, uint32_t seed) {
    *counter_.as<unsigned long long>() = 0;
    EXPECT_CUDA_OK(LaunchCountPatternMismatches(p, n, seed, counter_.as<unsigned long long>(), measured_.get()));
    EXPECT_CUDA_OK(cudaStreamSynchronize(measured_.get()));
    return static_cast<size_t>(*counter_.as<unsigned long long>());
  }
  cudaError_t DeviceFill(void* p, size_t n, uint32_t seed) {
    const cudaError_t e = LaunchFillPattern(p, n, seed, measured_.get());
    return e != cudaSuccess ? e : cudaStreamSynchronize(measured_.get());
  }

  // One lane's ends: fill the source with a fresh seed and poison the destination before each
  // sample, count the destination after it.
  struct Ends {
    void* src;
    void* dst;
    size_t bytes;
    uint32_t seed = 0;
  };
  void Prepare(Ends* e, int sample, uint32_t salt) {
    e->seed = static_cast<uint32_t>(CaseSeed()) ^ salt ^ (static_cast<uint32_t>(sample) * 0x9e3779b9u);
    ASSERT_CUDA_OK(DeviceFill(e->src, e->bytes, e->seed));
    ASSERT_CUDA_OK(DeviceFill(e->dst, e->bytes, ~e->seed));
  }
  void Verify(const Ends& e, const std::string& what, int sample) {
    EXPECT_EQ(DeviceCount(e.dst, e.bytes, e.seed), 0u)
        << what << ", sample " << sample << ": bytes of the destination differ from the source's";
  }

  // Starts the compute load on its own stream and waits (bounded) until it runs.
  void StartLoad() {
    load_ = OwnedStream(cudaStreamNonBlocking);
    ASSERT_CUDA_OK(load_.status());
    load_status_ = PinnedBuffer::Mapped(sizeof(ComputeLoadStatus) + sizeof(unsigned));
    ASSERT_CUDA_OK(load_status_.status());
    std::memset(load_status_.host(), 0, load_status_.size());
    relay_ = DeviceBuffer(sizeof(unsigned) + sms_ * sizeof(float));
    ASSERT_CUDA_OK(relay_.status());
    // The load's other blocks wait for this word to turn non-zero.
    // copy-check: a wrong value ends the load at once, which ExpectLoadStillRunning() reports
    ASSERT_CUDA_OK(cudaMemset(relay_.get(), 0, sizeof(unsigned)));
    auto* status = reinterpret_cast<ComputeLoadStatus*>(load_status_.dev());
    Budget("compute_load_blocks", sms_, "count");
    ASSERT_CUDA_OK(LaunchComputeLoad(Stop(), relay_.as<unsigned>(), status,
                                     reinterpret_cast<float*>(relay_.get() + sizeof(unsigned)),
                                     static_cast<uint64_t>(kLoadTimeoutS * TimeScale() * 1e9), sms_, 256,
                                     load_.get()));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(10 * TimeScale());
    while (__atomic_load_n(&LoadStatus()->started, __ATOMIC_ACQUIRE) == 0) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the compute load did not start within 10 s";
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    loading_ = true;
  }
  // The copies ran under the load only if it was still running when they finished.
  void ExpectLoadStillRunning() {
    EXPECT_EQ(cudaStreamQuery(load_.get()), cudaErrorNotReady)
        << "the compute load had ended before the measured copies did, so they did not run under load";
    (void)cudaGetLastError();
  }
  void StopLoad() {
    if (!loading_) return;
    loading_ = false;
    __atomic_store_n(load_status_.as<unsigned>() + sizeof(ComputeLoadStatus) / sizeof(unsigned), 1u,
                     __ATOMIC_RELEASE);
    EXPECT_CUDA_OK(cudaStreamSynchronize(load_.get()));
    const ComputeLoadStatus* st = LoadStatus();
    EXPECT_EQ(st->timed_out, 0u) << "the compute load ended on its timeout, not on the host's flag";
    Metric("compute_load_rounds_count", static_cast<double>(st->rounds), "count");
  }
  ComputeLoadStatus* LoadStatus() { return reinterpret_cast<ComputeLoadStatus*>(load_status_.host()); }
  // The stop word, after the status words, through the device alias.
  const unsigned* Stop() {
    return reinterpret_cast<const unsigned*>(load_status_.dev() + sizeof(ComputeLoadStatus));
  }

  // Records "<prefix><name>_GBps", its samples and its fraction of the link; returns the median.
  double Record(const std::string& name, const Lane& lane) {
    const double med = Median(lane.gbps);
    Metric(kPrefix + name + "_GBps", med, "GB/s");
    Observe(kPrefix + name + "_samples_GBps", bandwidth::Samples(lane.gbps));
    if (link_ > 0) Metric(kPrefix + name + "_link_fraction", med / link_, "ratio");
    return med;
  }

  bandwidth::LaneMeter meter_;
  OwnedStream measured_, other_, load_;
  PinnedBuffer counter_, load_status_;
  DeviceBuffer relay_;
  bool loading_ = false;
  unsigned sms_ = 1;
  double link_ = 0;
  std::string link_basis_;
  LinkHealthWatch watch_;
};

// A driver or platform that corrupts one direction of mapped traffic while the other runs
// (reordered or dropped posted writes under read load, a completion credited to the wrong
// request, a mapping that flips to a stale page) fails this: every byte of both lanes is
// counted after every sample. nvbandwidth's host_to_device_bidirectional_memcpy_sm (H2D measured,
// D2H interfering) and device_to_host_bidirectional_memcpy_sm (the reverse): pinned Portable
// host buffers used through their device pointers, N bytes measured, 2N interfering.
TEST_F(SmTrafficTest, BidirectionalSmCopiesThroughMappedMemoryDeliverEveryByte) {
  PAGELOCK_RULE("P06,P15,R14,R51");
  constexpr unsigned kFlags = cudaHostAllocPortable | cudaHostAllocMapped;
  PinnedBuffer host1 = PinnedBuffer::Mapped(kBytes, kFlags), host2 = PinnedBuffer::Mapped(2 * kBytes, kFlags);
  ASSERT_CUDA_OK(host1.status());
  ASSERT_CUDA_OK(host2.status());
  DeviceBuffer dev1(kBytes), dev2(2 * kBytes);
  ASSERT_CUDA_OK(dev1.status());
  ASSERT_CUDA_OK(dev2.status());
  Observe("sm_copy_blocks", sms_);
  for (const bool h2d : {true, false}) {
    // The measured lane copies N one way, the interfering lane 2N the other way.
    Ends measured = h2d ? Ends{host1.dev(), dev1.get(), kBytes} : Ends{dev1.get(), host1.dev(), kBytes};
    Ends against = h2d ? Ends{dev2.get(), host2.dev(), 2 * kBytes} : Ends{host2.dev(), dev2.get(), 2 * kBytes};
    const std::string name = h2d ? "h2d_bidir_sm" : "d2h_bidir_sm";
    Lane lane{measured_.get(), [&](cudaStream_t s) { return LaunchStridedCopy(measured.dst, measured.src, kBytes, sms_, s); },
              kBytes};
    Lane other{other_.get(), [&](cudaStream_t s) { return LaunchStridedCopy(against.dst, against.src, 2 * kBytes, sms_, s); },
               2 * kBytes};
    meter_.Measure(
        {&lane, &other}, kMethod,
        [&](int s) {
          Prepare(&measured, s, h2d ? 0x11u : 0x22u);
          Prepare(&against, s, h2d ? 0x33u : 0x44u);
        },
        [&](int s) {
          Verify(measured, name + " measured lane", s);
          Verify(against, name + " interfering lane", s);
        });
    if (HasFatalFailure()) return;
    Record(name, lane);
    Metric(std::string(kPrefix) + name + (h2d ? "_interfering_d2h_GBps" : "_interfering_h2d_GBps"), Median(other.gbps),
           "GB/s");
  }
}

// A copy path that the SMs' load starves or corrupts fails this: copy-engine copies between
// pinned memory and the device while a compute kernel keeps every SM busy, every byte counted
// after every sample, and each direction at or above P04's floor of the link (a link that drops
// to a lower rate under the GPU's power and thermal load, a DMA engine that shares the SMs'
// clock). The load must still run when the copies finish, else the case fails.
TEST_F(SmTrafficTest, PinnedCopiesUnderAFullComputeLoadDeliverEveryByteAboveTheFloor) {
  PAGELOCK_RULE("P04,P06,P16,R04");
  const pcie::Floor floor = pcie::BandwidthFloor();
  ASSERT_EQ(floor.error, "");  // a floor that is not a fraction fails closed
  Budget("bandwidth_floor_fraction", floor.fraction, "ratio");
  Observe("bandwidth_floor_source", floor.source);
  if (link_ <= 0) PAGELOCK_NOT_SUPPORTED("PCIe link unknown on device 0: " + link_basis_);
  Budget("bandwidth_floor_GBps", floor.fraction * link_, "GB/s");
  PinnedBuffer host = PinnedBuffer::Mapped(kBytes);
  ASSERT_CUDA_OK(host.status());
  DeviceBuffer dev(kBytes);
  ASSERT_CUDA_OK(dev.status());
  StartLoad();
  if (HasFatalFailure()) return;
  double rate[2] = {0, 0};
  for (const bool h2d : {true, false}) {
    Ends e = h2d ? Ends{host.dev(), dev.get(), kBytes} : Ends{dev.get(), host.dev(), kBytes};
    void* const to = h2d ? dev.get() : static_cast<void*>(host.host());
    const void* const from = h2d ? static_cast<const void*>(host.host()) : dev.get();
    const cudaMemcpyKind kind = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    // copy-check: each sample's destination is counted by Verify after it
    Lane lane{measured_.get(), [&](cudaStream_t s) { return cudaMemcpyAsync(to, from, kBytes, kind, s); }, kBytes};
    const std::string name = h2d ? "h2d_pinned_ce_under_compute_load" : "d2h_pinned_ce_under_compute_load";
    meter_.Measure({&lane}, kMethod, [&](int s) { Prepare(&e, s, h2d ? 0x55u : 0x66u); },
                   [&](int s) { Verify(e, name, s); });
    if (HasFatalFailure()) return;
    rate[h2d ? 0 : 1] = Record(name, lane);
  }
  ExpectLoadStillRunning();
  StopLoad();
  const std::string below =
      pcie::JudgeFloor(rate[0], rate[1], link_, floor, link_basis_, "pinned copies under a full compute load");
  if (!below.empty()) ADD_FAILURE() << below;
}

// The same SM copies through mapped memory, one direction at a time, while the compute load
// runs: every byte of every sample right (the documentation gives no rate for SM traffic beside
// other kernels, so the figures are metrics).
TEST_F(SmTrafficTest, MappedTrafficUnderAFullComputeLoadDeliversEveryByte) {
  PAGELOCK_RULE("P06,P16,R14,R51");
  PinnedBuffer host = PinnedBuffer::Mapped(kBytes, cudaHostAllocPortable | cudaHostAllocMapped);
  ASSERT_CUDA_OK(host.status());
  DeviceBuffer dev(kBytes);
  ASSERT_CUDA_OK(dev.status());
  StartLoad();
  if (HasFatalFailure()) return;
  for (const bool h2d : {true, false}) {
    Ends e = h2d ? Ends{host.dev(), dev.get(), kBytes} : Ends{dev.get(), host.dev(), kBytes};
    Lane lane{measured_.get(), [&](cudaStream_t s) { return LaunchStridedCopy(e.dst, e.src, kBytes, sms_, s); }, kBytes};
    const std::string name = h2d ? "h2d_sm_under_compute_load" : "d2h_sm_under_compute_load";
    meter_.Measure({&lane}, kMethod, [&](int s) { Prepare(&e, s, h2d ? 0x77u : 0x88u); },
                   [&](int s) { Verify(e, name, s); });
    if (HasFatalFailure()) return;
    Record(name, lane);
  }
  ExpectLoadStillRunning();
  StopLoad();
}

}  // namespace
}  // namespace pagelock
