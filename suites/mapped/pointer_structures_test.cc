// Pointer-linked structures in mapped host memory, built by one agent and walked by another: the
// host links the nodes of a buffer into a list in an order drawn from the case seed, storing in
// each node the address of the next as the device is to follow it, and one device thread follows
// the links; and a kernel builds the list (storing the addresses it writes through) that the host
// then follows. The links are host pointers where the documentation says a kernel may use them:
// under unified addressing for cudaHostAlloc'd memory that is not write-combined (R14), and for
// registered memory where every device has cudaDevAttrCanUseHostPointerForRegisteredMem=1 (R45);
// elsewhere they are the cudaHostGetDevicePointer alias plus the node's offset, which the host
// translates back. Which kind of link was used is recorded. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <numeric>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/resources.h"
#include "kernels/mapped/linked_list.h"
#include "kernels/mapped/mapped_kernels.h"
#include "suites/mapped/mapped_memory.h"

namespace pagelock {
namespace {

// 4096 nodes: one device thread's walk over PCIe is latency bound (about 1-2 us a hop), so a few
// milliseconds.
constexpr size_t kNodes = 4096;

class PointerStructuresTest : public GpuTest, public ::testing::WithParamInterface<HostKind> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireMappedKind(GetParam()));
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrManagedMemory, 1));  // the walk's and the order's buffers
    stream_ = OwnedStream(cudaStreamNonBlocking);
    ASSERT_CUDA_OK(stream_.status());
  }
  cudaStream_t stream() const { return stream_.get(); }

  // The order the list links the nodes in: a permutation of [0, kNodes) from the case seed.
  static std::vector<uint32_t> Permutation() {
    std::vector<uint32_t> order(kNodes);
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin(), order.end(), CaseRng());
    return order;
  }

  // The address the device follows to reach the buffer: the host pointer itself where the
  // documentation says a kernel may use it (unified addressing: cudaHostAlloc'd memory that is
  // not write-combined, R14; registered memory where every device has
  // cudaDevAttrCanUseHostPointerForRegisteredMem=1, R45), else the cudaHostGetDevicePointer
  // alias. Which one it was is recorded.
  uint64_t LinkBase(const KindBuffer& m) const {
    bool host_usable = Probe().devices[0].Attr(cudaDevAttrUnifiedAddressing) == 1;
    if (GetParam() == HostKind::kHostAllocMappedWriteCombined) host_usable = false;  // R15
    if (GetParam() == HostKind::kRegisteredMmap) {
      for (const DeviceInfo& d : Probe().devices) {
        host_usable = host_usable && d.Attr(cudaDevAttrCanUseHostPointerForRegisteredMem) == 1;
      }
    }
    Observe("list_links", host_usable ? "host pointers" : "device aliases");
    Observe("device_alias_is_host_pointer", m.dev() == m.host());
    return reinterpret_cast<uintptr_t>(host_usable ? m.host() : m.dev());
  }

 private:
  OwnedStream stream_;
};

std::string Name(const ::testing::TestParamInfo<HostKind>& info) { return HostKindName(info.param); }

// A device alias that is not linear over the buffer (a node's offset from the alias lands on
// another page), a host pointer that the device cannot follow where the documentation says it
// can, or device loads through the mapping that return stale or other bytes fail this: the walk
// visits other nodes, loops to its step limit, or sums other values.
TEST_P(PointerStructuresTest, AListTheHostLinkedIsWalkedByTheDevice) {
  PAGELOCK_RULE("R141");
  PAGELOCK_MAKE_MAPPED(m, GetParam(), kNodes * sizeof(ListNode));
  const uint64_t link_base = LinkBase(m);
  const uint64_t seed = CaseSeed();
  const std::vector<uint32_t> order = Permutation();
  auto* nodes = reinterpret_cast<ListNode*>(m.host());
  uint64_t want_sum = 0;
  for (size_t k = 0; k < kNodes; ++k) {
    ListNode& n = nodes[order[k]];
    n.index = order[k];
    n.value = ListValue(order[k], seed);
    n.next = k + 1 < kNodes ? link_base + uint64_t{order[k + 1]} * sizeof(ListNode) : 0;
    want_sum += n.value;
  }
  // The host's stores leave the CPU's (write-combining) buffers before the launch that reads them.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  DeviceBuffer visited = DeviceBuffer::Managed((kNodes + 1) * sizeof(uint64_t));
  ASSERT_CUDA_OK(visited.status());
  DeviceBuffer walk = DeviceBuffer::Managed(sizeof(ListWalk));
  ASSERT_CUDA_OK(walk.status());
  const auto* head = reinterpret_cast<const ListNode*>(link_base + uint64_t{order[0]} * sizeof(ListNode));
  // One step more than the list has: a walk that misses the end shows as a list too long.
  ASSERT_CUDA_OK(LaunchWalkList(head, kNodes + 1, visited.as<uint64_t>(), walk.as<ListWalk>(), stream()));
  ASSERT_CUDA_OK(cudaStreamSynchronize(stream()));
  const ListWalk w = *walk.as<ListWalk>();
  EXPECT_EQ(w.ended, 1u) << "the device walked " << w.steps << " nodes without reaching the end";
  ASSERT_EQ(w.steps, kNodes) << "nodes the device visited";
  const uint64_t* got = visited.as<uint64_t>();
  const auto bad = std::mismatch(order.begin(), order.end(), got,
                                 [](uint32_t a, uint64_t b) { return uint64_t{a} == b; });
  EXPECT_TRUE(bad.first == order.end())
      << "step " << (bad.first - order.begin()) << ": the device visited node " << *bad.second
      << ", the list links node " << *bad.first;
  EXPECT_EQ(w.sum, want_sum) << "sum of the values the device read";
  EXPECT_CUDA_OK(m.Free());
}

// A device whose stores through the alias land elsewhere, or addresses it computes for the alias
// that do not correspond to the host's view of the buffer, fail this: the host, following the
// stored links (translated by their offset from the alias), visits other nodes or reads other
// values.
TEST_P(PointerStructuresTest, AListTheDeviceLinkedIsWalkedByTheHost) {
  PAGELOCK_RULE("R142");
  PAGELOCK_MAKE_MAPPED(m, GetParam(), kNodes * sizeof(ListNode));
  const uint64_t link_base = LinkBase(m);
  const uint64_t seed = CaseSeed();
  const std::vector<uint32_t> order = Permutation();
  DeviceBuffer dev_order = DeviceBuffer::Managed(kNodes * sizeof(uint32_t));
  ASSERT_CUDA_OK(dev_order.status());
  std::copy(order.begin(), order.end(), dev_order.as<uint32_t>());
  // The kernel stores through, and links by, the same address the device follows.
  ASSERT_CUDA_OK(LaunchBuildList(reinterpret_cast<ListNode*>(link_base), dev_order.as<uint32_t>(), kNodes, seed,
                                 stream()));
  ASSERT_CUDA_OK(cudaStreamSynchronize(stream()));
  const uint64_t dev_end = link_base + m.size();
  const unsigned char* host = m.host();
  uint64_t link = link_base + uint64_t{order[0]} * sizeof(ListNode);
  size_t steps = 0;
  // Bounded: at most one step more than the list has.
  for (; link != 0 && steps <= kNodes; ++steps) {
    ASSERT_TRUE(link >= link_base && link + sizeof(ListNode) <= dev_end && (link - link_base) % sizeof(ListNode) == 0)
        << "step " << steps << ": link 0x" << std::hex << link << " is not a node of the buffer (device address 0x"
        << link_base << ", " << std::dec << m.size() << " bytes)";
    const auto* n = reinterpret_cast<const volatile ListNode*>(host + (link - link_base));
    ASSERT_LT(steps, kNodes) << "the list the device built does not end after " << kNodes << " nodes";
    ASSERT_EQ(n->index, order[steps]) << "step " << steps << ": node index";
    ASSERT_EQ(n->value, ListValue(order[steps], seed)) << "step " << steps << ": node value";
    link = n->next;
  }
  EXPECT_EQ(steps, kNodes) << "nodes the host visited";
  EXPECT_CUDA_OK(m.Free());
}

INSTANTIATE_TEST_SUITE_P(EveryKind, PointerStructuresTest,
                         ::testing::Values(HostKind::kHostAllocMapped,
                                           HostKind::kHostAllocMappedWriteCombined,
                                           HostKind::kRegisteredMmap),
                         Name);

}  // namespace
}  // namespace pagelock
