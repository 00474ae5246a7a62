// Where the host memory lives (peer gap K8, K7's data part): pinned copy-engine bandwidth from
// every host NUMA node with memory to every GPU, as DCGM's pcie plugin (per-node subtests) and
// rocm_bandwidth_test (every CPU agent to every GPU) measure it.
//   - For each node the thread may use, a range first-touched by a thread bound to it
//     (set_mempolicy MPOL_BIND: the pages lie on that node, checked with move_pages) is
//     registered Portable|Mapped; every GPU copies it host-to-device and device-to-host by
//     nvbandwidth's method, every byte checked after every sample, each figure a metric
//     (h2d_node0_gpu0_GBps) and held to P04's floor of that GPU's link. The IOMMU mode the
//     GPU's DMA runs through (sysfs iommu_group/type: identity, DMA, DMA-FQ) is recorded with it.
//   - The GPU's own node (sysfs numa_node of its PCI device) must not be slower than a remote
//     node, within PAGELOCK_NUMA_LOCAL_TOLERANCE (default 0.02: two runs of one figure move about
//     that much), else FAIL with both figures: an operator's policy, not a documented promise
//     (a host whose BIOS or hypervisor reports the wrong node, a driver that stages remote
//     memory). NotSupported with one node, or where the GPU reports none.
// The stress build uses nvbandwidth's sizes and counts (512 MiB, 4 + 16 copies, 3 samples),
// the full build 32 MiB, 1 + 4 copies, 3 samples (metrics prefixed quick_). Rule ids refer to
// suites/rules.tsv.
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/link_health.h"
#include "fixtures/numa.h"
#include "fixtures/pcie.h"
#include "fixtures/resources.h"
#include "fixtures/settings.h"
#include "kernels/access_kernels.h"
#include "suites/bandwidth/lanes.h"
#include "suites/streams/stream_util.h"

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
std::string List(const std::vector<int>& nodes) {
  std::string s;
  for (int n : nodes) s += (s.empty() ? "" : ",") + std::to_string(n);
  return s.empty() ? "none" : s;
}

// The IOMMU domain type of a PCI device (sysfs iommu_group/type), or why it cannot be read.
std::string IommuMode(const std::string& bus_id) {
  const std::string path = pcie::DeviceDir(bus_id) + "iommu_group/type";
  std::ifstream in(path);
  std::string type;
  if (!std::getline(in, type) || type.empty()) {
    return "unavailable: no " + path + " (no IOMMU group: IOMMU off, or not exposed to this host)";
  }
  return type;
}

// PAGELOCK_NUMA_LOCAL_TOLERANCE: how much slower than a remote node the local node may measure.
struct Tolerance {
  double fraction = settings::DefaultNumber("PAGELOCK_NUMA_LOCAL_TOLERANCE");
  std::string source = "default";
  std::string error;
};
Tolerance LocalTolerance() {
  Tolerance t;
  const char* v = settings::Text("PAGELOCK_NUMA_LOCAL_TOLERANCE");
  if (!v || !*v) return t;
  char* end = nullptr;
  errno = 0;
  const double got = std::strtod(v, &end);
  if (errno || *end != '\0' || !std::isfinite(got) || got < 0 || got >= 1) {
    t.error = std::string("PAGELOCK_NUMA_LOCAL_TOLERANCE='") + v + "' is not a fraction in [0, 1)";
    return t;
  }
  t.fraction = got;
  t.source = "PAGELOCK_NUMA_LOCAL_TOLERANCE";
  return t;
}

struct Rates {
  double h2d = 0, d2h = 0;
};

class NumaBandwidthTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
    std::string why;
    const std::vector<int> with_memory = numa::NodesWithMemory(&why);
    if (with_memory.empty()) PAGELOCK_NOT_SUPPORTED(why);
    const std::vector<int> allowed = numa::MemsAllowed(&why);
    if (allowed.empty()) PAGELOCK_NOT_SUPPORTED(why);
    for (int n : with_memory) {
      for (int a : allowed) {
        if (a == n) nodes_.push_back(n);
      }
    }
    Observe("numa_nodes_with_memory", List(with_memory));
    Observe("numa_nodes_allowed", List(allowed));
    if (nodes_.empty()) {
      PAGELOCK_NOT_SUPPORTED("no node with memory (" + List(with_memory) + ") is allowed to this thread (" +
                             List(allowed) + ")");
    }
    const int probe = 0;  // move_pages must answer for this process's pages (seccomp may refuse it)
    std::vector<int> status;
    if (!numa::PageNodes(&probe, sizeof probe, &status, &why)) PAGELOCK_NOT_SUPPORTED(why);
    ASSERT_CUDA_OK(meter_.Init());
    Budget("copy_bytes_MiB", static_cast<double>(kBytes >> 20), "MiB");
    Budget("timed_copies_per_sample", kMethod.loops, "count");
    Budget("samples", kMethod.samples, "count");
    watch_.Start(device().pci_bus_id);  // P06 on device 0's link
  }
  void TearDown() override {
    meter_.Release();
    if (!IsSkipped()) watch_.Finish();
    (void)cudaSetDevice(0);
    // Pinned memory made after the kit's snapshot is freed before its leak check.
    EXPECT_CUDA_OK(counter_.Free());
    EXPECT_CUDA_OK(meter_.Free());
    GpuTest::TearDown();
  }

  // Pinned memory on `node`: first-touched under MPOL_BIND, checked there with move_pages, then
  // registered Portable|Mapped (the binding lasts until the pages are pinned). Null on failure.
  struct NodePin {
    std::unique_ptr<HostRegion> region;  // declared first, so destroyed after the registration
    HostRegistration reg;
    unsigned char* data() const { return static_cast<unsigned char*>(region->data()); }
  };
  std::unique_ptr<NodePin> PinOnNode(int node) {
    numa::ThreadBind bind(node);
    EXPECT_EQ(bind.error(), "");
    if (!bind.error().empty()) return nullptr;
    auto pin = std::make_unique<NodePin>();
    pin->region = HostRegion::Make(HostKind::kRegisteredMmap, kBytes);
    EXPECT_NE(pin->region->data(), nullptr) << pin->region->unavailable();
    if (!pin->region->data()) return nullptr;
    std::vector<int> pages;
    std::string why;
    EXPECT_TRUE(numa::PageNodes(pin->data(), kBytes, &pages, &why)) << why;
    // set_mempolicy(2), MPOL_BIND: "restricts memory allocation to the nodes specified".
    EXPECT_EQ(numa::CountOn(pages, node), pages.size())
        << "node " << node << ": a thread bound to the node first-touched pages elsewhere: " << numa::Histogram(pages);
    const cudaError_t e = cudaHostRegister(pin->data(), kBytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
    EXPECT_CUDA_OK(e);
    if (e != cudaSuccess) return nullptr;
    pin->reg = HostRegistration::Adopt(pin->data(), kBytes);
    return pin;
  }

  // Host-to-device and device-to-host copies of `host` by device `dev`, every byte checked
  // after every sample; metrics named for the node and the GPU.
  Rates Measure(int node, int dev, unsigned char* host) {
    Rates r;
    EXPECT_CUDA_OK(cudaSetDevice(dev));
    DeviceBuffer device_mem(kBytes);
    EXPECT_CUDA_OK(device_mem.status());
    OwnedStream stream(cudaStreamNonBlocking);
    EXPECT_CUDA_OK(stream.status());
    if (HasFailure()) return r;
    const std::string pair = "node" + std::to_string(node) + "_gpu" + std::to_string(dev);
    for (const bool h2d : {true, false}) {
      uint32_t seed = 0;
      void* const to = h2d ? static_cast<void*>(device_mem.get()) : host;
      const void* const from = h2d ? static_cast<const void*>(host) : device_mem.get();
      const cudaMemcpyKind kind = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
      // copy-check: each sample's destination is counted by the after-sample hook
      Lane lane{stream.get(), [&](cudaStream_t s) { return cudaMemcpyAsync(to, from, kBytes, kind, s); }, kBytes};
      const std::string name = std::string(h2d ? "h2d_" : "d2h_") + pair;
      meter_.Measure(
          {&lane}, kMethod,
          [&](int s) {
            seed = static_cast<uint32_t>(CaseSeed()) ^ (static_cast<uint32_t>(s) * 0x9e3779b9u) ^ (h2d ? 1u : 2u) ^
                   (static_cast<uint32_t>(node) << 8) ^ (static_cast<uint32_t>(dev) << 16);
            // The source holds a fresh pattern, the destination another one.
            if (h2d) {
              streams::HostFillPatternFrom(host, kBytes, 0, seed);
              ASSERT_CUDA_OK(LaunchFill(device_mem.get(), ~seed, stream.get()));
            } else {
              ASSERT_CUDA_OK(LaunchFill(device_mem.get(), seed, stream.get()));
              streams::HostFillPatternFrom(host, kBytes, 0, ~seed);
            }
          },
          [&](int s) {
            const size_t bad = h2d ? DeviceCount(device_mem.get(), seed, stream.get())
                                   : streams::HostCountPattern(host, kBytes, 0, seed);
            EXPECT_EQ(bad, 0u) << name << ", sample " << s << ": bytes of the destination differ from the source's";
          });
      if (HasFatalFailure()) break;
      const double med = Median(lane.gbps);
      Metric(kPrefix + name + "_GBps", med, "GB/s");
      Observe(kPrefix + name + "_samples_GBps", bandwidth::Samples(lane.gbps));
      (h2d ? r.h2d : r.d2h) = med;
    }
    EXPECT_CUDA_OK(stream.Free());
    EXPECT_CUDA_OK(device_mem.Free());
    EXPECT_CUDA_OK(cudaSetDevice(0));
    return r;
  }

  cudaError_t LaunchFill(void* p, uint32_t seed, cudaStream_t s);
  size_t DeviceCount(const void* p, uint32_t seed, cudaStream_t s);

  std::vector<int> nodes_;  // with memory and allowed to this thread
  bandwidth::LaneMeter meter_;
  PinnedBuffer counter_;
  LinkHealthWatch watch_;
};

cudaError_t NumaBandwidthTest::LaunchFill(void* p, uint32_t seed, cudaStream_t s) {
  const cudaError_t e = LaunchFillPattern(p, kBytes, seed, s);
  return e != cudaSuccess ? e : cudaStreamSynchronize(s);
}

size_t NumaBandwidthTest::DeviceCount(const void* p, uint32_t seed, cudaStream_t s) {
  if (!counter_) counter_ = PinnedBuffer::Mapped(sizeof(unsigned long long), cudaHostAllocMapped | cudaHostAllocPortable);
  EXPECT_CUDA_OK(counter_.status());
  if (!counter_) return kBytes;
  auto* c = counter_.as<unsigned long long>();
  *c = 0;
  EXPECT_CUDA_OK(LaunchCountPatternMismatches(p, kBytes, seed, c, s));
  EXPECT_CUDA_OK(cudaStreamSynchronize(s));
  return static_cast<size_t>(*c);
}

// A node whose memory the GPU reads or writes wrongly (an IOMMU mapping of the wrong page, a
// remote socket's pages staged and lost) fails this: every byte of every sample from every node
// to every GPU is checked; and a pair below P04's floor of the GPU's link (a remote path that
// collapses, translated DMA thrashing the IOTLB) fails with its figures. The IOMMU mode of each
// GPU is recorded beside them.
TEST_F(NumaBandwidthTest, EveryHostNodeReachesEveryGpuWithEveryByteAboveTheFloor) {
  PAGELOCK_RULE("P04,P06,P17,R26");
  const pcie::Floor floor = pcie::BandwidthFloor();
  ASSERT_EQ(floor.error, "");  // a floor that is not a fraction fails closed
  Budget("bandwidth_floor_fraction", floor.fraction, "ratio");
  Observe("bandwidth_floor_source", floor.source);
  const int gpus = static_cast<int>(Probe().devices.size());
  for (int d = 0; d < gpus; ++d) {
    const DeviceInfo& info = Probe().devices[d];
    std::string why;
    const int gpu_node = numa::DeviceNode(info.pci_bus_id, &why);
    Observe("gpu" + std::to_string(d) + "_numa_node", gpu_node >= -1 ? std::to_string(gpu_node) : "unavailable: " + why);
    Observe("gpu" + std::to_string(d) + "_iommu_group_type", IommuMode(info.pci_bus_id));
  }
  std::vector<std::string> below;
  for (int node : nodes_) {
    auto pin = PinOnNode(node);
    if (!pin) return;
    for (int d = 0; d < gpus && !HasFatalFailure(); ++d) {
      const Rates r = Measure(node, d, pin->data());
      std::string basis;
      const double link = bandwidth::LinkLimitGBps(Probe().devices[d], &basis);
      if (link <= 0 || r.h2d <= 0 || r.d2h <= 0) continue;  // the bytes were checked; no link, no floor
      const std::string judged = pcie::JudgeFloor(r.h2d, r.d2h, link, floor, basis,
                                                  "node " + std::to_string(node) + " -> GPU " + std::to_string(d));
      if (!judged.empty()) below.push_back(judged);
    }
    EXPECT_CUDA_OK(pin->reg.Free());
  }
  for (const std::string& b : below) ADD_FAILURE() << b;
}

// The operator's policy (not a CUDA promise): pinned memory on the GPU's own node copies at
// least as fast as memory on any other node, within the tolerance. A host that reports the
// wrong node for the GPU, or a platform whose local path is slower than the remote one, fails
// with both figures.
TEST_F(NumaBandwidthTest, TheGpusLocalNodeIsNotSlowerThanARemoteOne) {
  PAGELOCK_RULE("P18,P06,R26");
  if (nodes_.size() < 2) {
    PAGELOCK_NOT_SUPPORTED("numa nodes with memory allowed to this thread=" + std::to_string(nodes_.size()) +
                           " (need 2)");
  }
  const Tolerance tol = LocalTolerance();
  ASSERT_EQ(tol.error, "");
  Budget("numa_local_tolerance_fraction", tol.fraction, "ratio");
  Observe("numa_local_tolerance_source", tol.source);
  std::string why;
  const int local = numa::DeviceNode(device().pci_bus_id, &why);
  if (local < 0) {
    PAGELOCK_NOT_SUPPORTED(local == -1 ? "sysfs numa_node of " + device().pci_bus_id + " = -1 (no node given)" : why);
  }
  if (std::find(nodes_.begin(), nodes_.end(), local) == nodes_.end()) {
    PAGELOCK_NOT_SUPPORTED("GPU 0's node " + std::to_string(local) + " is not among the nodes with memory allowed here (" +
                           List(nodes_) + ")");
  }
  Observe("gpu0_numa_node", local);
  std::map<int, Rates> rates;
  for (int node : nodes_) {
    auto pin = PinOnNode(node);
    if (!pin) return;
    rates[node] = Measure(node, 0, pin->data());
    EXPECT_CUDA_OK(pin->reg.Free());
    if (HasFatalFailure()) return;
  }
  const Rates mine = rates[local];
  for (const auto& [node, r] : rates) {
    if (node == local) continue;
    for (const auto& [dir, got, remote] :
         {std::tuple<const char*, double, double>{"H2D", mine.h2d, r.h2d}, {"D2H", mine.d2h, r.d2h}}) {
      EXPECT_GE(got, remote * (1 - tol.fraction))
          << dir << ": GPU 0's own node " << local << " copies at " << got << " GB/s, slower than remote node " << node
          << " at " << remote << " GB/s (tolerance " << tol.fraction << ", " << tol.source << ")";
    }
  }
}

}  // namespace
}  // namespace pagelock
