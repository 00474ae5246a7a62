// NUMA placement of pinned pages (peer gap F8), through the system calls themselves
// (fixtures/numa.h: set_mempolicy, get_mempolicy, move_pages via syscall(2)):
//   - memory first-touched by a thread bound to each node with memory, then registered: every
//     page stays resident while registered (a rule); whether a page changed node is recorded; on
//     a node with only movable memory (has_memory but not has_normal_memory: CXL, hot-plugged
//     memory, a GH200's GPU memory) the kernel will not pin in place, so a refused registration
//     there is recorded (numa::ClassifyNodes);
//   - cudaHostAlloc under a thread bound to each node: where its pages are is recorded, and,
//     with two nodes or more, whether that follows the policy;
//   - the GPU's NUMA node (sysfs numa_node of its PCI device) is recorded.
// 8 MiB per node and per path. A kernel or seccomp filter that refuses the calls is
// NotSupported with the call and its errno. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/numa.h"
#include "fixtures/resources.h"

namespace pagelock {
namespace {

constexpr size_t kBytes = size_t{8} << 20;

std::string List(const std::vector<int>& nodes) {
  std::string s;
  for (int n : nodes) s += (s.empty() ? "" : ",") + std::to_string(n);
  return s.empty() ? "none" : s;
}

class NumaTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    std::string why;
    with_memory_ = numa::NodesWithMemory(&why);
    if (with_memory_.empty()) PAGELOCK_NOT_SUPPORTED(why);
    const std::vector<int> allowed = numa::MemsAllowed(&why);
    if (allowed.empty()) PAGELOCK_NOT_SUPPORTED(why);
    for (int n : with_memory_) {
      for (int a : allowed) {
        if (a == n) nodes_.push_back(n);
      }
    }
    Observe("numa_nodes_with_memory", List(with_memory_));
    Observe("numa_nodes_allowed", List(allowed));
    const std::vector<int> normal = numa::NodesWithNormalMemory(&why);
    classes_ = numa::ClassifyNodes(with_memory_, normal.empty() ? nullptr : &normal);
    Observe("numa_nodes_movable_only", normal.empty() ? "unknown: " + why : List(classes_.movable_only));
    if (nodes_.empty()) {
      PAGELOCK_NOT_SUPPORTED("no node with memory (" + List(with_memory_) + ") is allowed to this thread (" +
                             List(allowed) + ")");
    }
    // move_pages must answer for this process's own pages (a seccomp filter may refuse it).
    const int probe = 0;
    std::vector<int> status;
    if (!numa::PageNodes(&probe, sizeof probe, &status, &why)) PAGELOCK_NOT_SUPPORTED(why);
  }

  // Where cudaHostAlloc's pages are when the calling thread is bound to `node`: a histogram, or
  // why it could not be seen. Bound to a movable-only node, a failed allocation is recorded (the
  // driver's pinned pages cannot stay there); elsewhere it fails.
  std::string HostAllocPlacement(int node, std::vector<int>* status) {
    void* p = nullptr;
    cudaError_t e = cudaSuccess;
    {
      numa::ThreadBind bind(node);
      EXPECT_EQ(bind.error(), "");
      if (!bind.error().empty()) return "unbound: " + bind.error();
      e = cudaHostAlloc(&p, kBytes, cudaHostAllocDefault);
    }
    if (e != cudaSuccess && numa::IsMovableOnly(classes_, node)) {
      (void)cudaGetLastError();
      return "cudaHostAlloc failed on a movable-only node: " + ErrName(e);
    }
    EXPECT_CUDA_OK(e);
    if (!p) return "cudaHostAlloc failed";
    PinnedBuffer own = PinnedBuffer::Adopt(p, kBytes);
    std::string why;
    const std::string placement = numa::PageNodes(p, kBytes, status, &why) ? numa::Histogram(*status) : why;
    EXPECT_CUDA_OK(own.Free());
    return placement;
  }

  std::vector<int> with_memory_, nodes_;  // nodes_: with memory and allowed to this thread
  numa::NodeClasses classes_;             // with_memory_ split by has_normal_memory
};

// Registered memory is page-locked: resident for as long as the registration lasts. A driver
// that registers a range without pinning it (pages left for the kernel to reclaim or move
// out, a shadow copy elsewhere) leaves pages move_pages reports absent, and fails this. Which
// node a pinned page ends on is the kernel's business, so it is recorded, not asserted: Linux
// migrates FOLL_LONGTERM pins out of ZONE_MOVABLE and CMA before pinning (mm/gup.c,
// Documentation/admin-guide/mm/memory-hotplug.rst), possibly to another node. That the pages
// first lie on the bound node is the kernel's promise (set_mempolicy(2), MPOL_BIND: "a strict
// policy that restricts memory allocation to the nodes specified"), checked as the premise. On a
// movable-only node the pin must migrate the pages off it ("we do not allow pinning long-term
// pages in ZONE_MOVABLE", include/linux/mmzone.h), which a bind to that node may leave nowhere to
// go: a refused registration there is recorded, never judged; a registration that succeeds is
// judged as on any node. A driver that refuses on a normal node still fails.
TEST_F(NumaTest, RegisteredPagesStayResidentOnEveryNodeTheyWereFirstTouchedOn) {
  PAGELOCK_RULE("P10,P11");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  Budget("bytes_per_node", static_cast<double>(kBytes), "bytes");
  for (int node : nodes_) {
    const std::string key = "node" + std::to_string(node);
    // Bound for the whole round, so nothing (NUMA balancing) may move the pages elsewhere
    // between the first touch and the registration.
    numa::ThreadBind bind(node);
    ASSERT_EQ(bind.error(), "");
    auto region = HostRegion::Make(HostKind::kRegisteredMmap, kBytes);  // the first touch
    ASSERT_NE(region->data(), nullptr) << region->unavailable();
    std::vector<int> before, after;
    std::string why;
    ASSERT_TRUE(numa::PageNodes(region->data(), kBytes, &before, &why)) << why;
    Observe(key + "_first_touch_pages", numa::Histogram(before));
    EXPECT_EQ(numa::CountOn(before, node), before.size())
        << key << ": a thread bound to the node first-touched pages elsewhere: " << numa::Histogram(before);
    const cudaError_t e = cudaHostRegister(region->data(), kBytes, cudaHostRegisterDefault);
    if (e != cudaSuccess && numa::IsMovableOnly(classes_, node)) {
      (void)cudaGetLastError();
      Observe(key + "_register_on_a_movable_only_node", ErrName(e));
      continue;
    }
    ASSERT_CUDA_OK(e) << key << (numa::IsMovableOnly(classes_, node) ? "" : " (a node with normal memory)");
    auto own = HostRegistration::Adopt(region->data());
    ASSERT_TRUE(numa::PageNodes(region->data(), kBytes, &after, &why)) << why;
    ASSERT_EQ(after.size(), before.size());
    size_t absent = 0, moved = 0;
    for (size_t i = 0; i < after.size(); ++i) {
      absent += after[i] < 0;
      moved += after[i] >= 0 && after[i] != before[i];
    }
    Observe(key + "_registered_pages", numa::Histogram(after));
    Observe(key + "_registered_pages_that_changed_node", static_cast<unsigned long long>(moved));
    EXPECT_EQ(absent, 0u) << key << ": pages of a registered range are not resident: " << numa::Histogram(after);
    EXPECT_CUDA_OK(own.Free());
  }
}

// The documentation says nothing of where cudaHostAlloc's pages are (the driver allocates them):
// with the calling thread bound to each node in turn, each answer is recorded and compared with
// the baseline, never judged. The GPU's own node is recorded with them: a driver may place
// pinned memory near the GPU rather than where the thread asked.
TEST_F(NumaTest, CudaHostAllocPlacementUnderAThreadBoundToEachNodeIsRecorded) {
  PAGELOCK_RULE("P12");
  Budget("bytes_per_node", static_cast<double>(kBytes), "bytes");
  std::string why;
  const int gpu_node = numa::DeviceNode(device().pci_bus_id, &why);
  Observe("gpu_numa_node", gpu_node >= -1 ? std::to_string(gpu_node) : "unavailable: " + why);
  for (int node : nodes_) {
    std::vector<int> status;
    Observe("node" + std::to_string(node) + "_hostalloc_pages", HostAllocPlacement(node, &status));
  }
}

// Only two nodes or more tell "follows the thread's policy" from "always one node": recorded as
// yes, or no with the node the pages went to (the GPU's, or another).
TEST_F(NumaTest, CudaHostAllocPlacementAcrossNodesIsComparedWithThePolicy) {
  PAGELOCK_RULE("P12");
  if (with_memory_.size() < 2) {
    PAGELOCK_NOT_SUPPORTED("numa nodes with memory=" + std::to_string(with_memory_.size()) + " (need 2)");
  }
  if (nodes_.size() < 2) {
    PAGELOCK_NOT_SUPPORTED("numa nodes with memory allowed to this thread=" + std::to_string(nodes_.size()) +
                           " of " + std::to_string(with_memory_.size()) + " (need 2)");
  }
  std::string why;
  const int gpu_node = numa::DeviceNode(device().pci_bus_id, &why);
  bool follows = true, on_gpu_node = gpu_node >= 0;
  std::string where;
  for (int node : nodes_) {
    std::vector<int> status;
    const std::string placement = HostAllocPlacement(node, &status);
    where += (where.empty() ? "" : "; ") + ("bound to node" + std::to_string(node) + ": " + placement);
    follows = follows && !status.empty() && numa::CountOn(status, node) == status.size();
    on_gpu_node = on_gpu_node && !status.empty() && numa::CountOn(status, gpu_node) == status.size();
  }
  Observe("hostalloc_follows_thread_policy", follows ? std::string("yes")
                                             : on_gpu_node ? "no: every allocation on the GPU's node" + std::to_string(gpu_node)
                                                           : "no: " + where);
}

}  // namespace
}  // namespace pagelock
