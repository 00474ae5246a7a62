// Pointer-linked lists in mapped host memory between the host and every GPU (peer gap J11, after
// hip-tests' hipSVMTestSharedAddressSpaceFineGrain): for every creator and verifier pair among
// the host and the GPUs, the creator links the nodes of one Portable|Mapped buffer in an order
// drawn from the case seed and the verifier follows the links, checking the order, the values
// and the end. The host's links are what each GPU follows (its own device pointer plus the
// node's offset); a GPU's list is followed by the host (translated by its offset) and by every
// other GPU, where the two GPUs' pointers to the buffer are the same address, which they are
// for cudaHostAlloc'd memory that is not write-combined under unified addressing (R14) and for
// registered memory where every device has cudaDevAttrCanUseHostPointerForRegisteredMem=1 (R45);
// where they differ, that pair is recorded as not walkable. NotSupported with one GPU
// (cudaGetDeviceCount=1 (need 2)). Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/resources.h"
#include "kernels/mapped/linked_list.h"
#include "kernels/mapped/mapped_kernels.h"
#include "suites/mapped/mapped_memory.h"

namespace pagelock {
namespace {

constexpr size_t kNodes = 2048;

class PointerStructuresEveryGpuTest : public GpuTest, public ::testing::WithParamInterface<HostKind> {
 protected:
  PointerStructuresEveryGpuTest() : GpuTest(/*devices=*/2) {}
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    gpus_ = static_cast<int>(Probe().devices.size());
    for (int d = 0; d < gpus_; ++d) {
      PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrCanMapHostMemory, 1, d));
      if (GetParam() == HostKind::kRegisteredMmap) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1, d));
    }
    const size_t bytes = kNodes * sizeof(ListNode);
    // Portable: every GPU reaches the buffer through its own device pointer.
    if (GetParam() == HostKind::kRegisteredMmap) {
      std::string why;
      reg_ = HostRegistration::Make(HostKind::kRegisteredMmap, bytes,
                                    cudaHostRegisterMapped | cudaHostRegisterPortable, &why);
      if (!reg_.region()) PAGELOCK_NOT_SUPPORTED(why);
      ASSERT_CUDA_OK(reg_.status());
      host_ = reg_.host();
    } else {
      const unsigned flags = cudaHostAllocMapped | cudaHostAllocPortable |
                             (GetParam() == HostKind::kHostAllocMappedWriteCombined ? cudaHostAllocWriteCombined : 0);
      pinned_ = PinnedBuffer(bytes, flags);
      ASSERT_CUDA_OK(pinned_.status());
      host_ = pinned_.host();
    }
    // Each GPU's pointer to the list buffer, and its own scratch (mapped Portable) for the walk.
    scratch_ = PinnedBuffer::Mapped((kNodes + 1) * sizeof(uint64_t) + sizeof(ListWalk) + kNodes * sizeof(uint32_t),
                                    cudaHostAllocMapped | cudaHostAllocPortable);
    ASSERT_CUDA_OK(scratch_.status());
    for (int d = 0; d < gpus_; ++d) {
      ASSERT_CUDA_OK(cudaSetDevice(d));
      void* alias = nullptr;
      ASSERT_CUDA_OK(cudaHostGetDevicePointer(&alias, host_, 0));
      base_.push_back(reinterpret_cast<uintptr_t>(alias));
      void* s = nullptr;
      ASSERT_CUDA_OK(cudaHostGetDevicePointer(&s, scratch_.host(), 0));
      scratch_dev_.push_back(static_cast<unsigned char*>(s));
      streams_.emplace_back(cudaStreamNonBlocking);
      ASSERT_CUDA_OK(streams_.back().status());
    }
    ASSERT_CUDA_OK(cudaSetDevice(0));
    order_.resize(kNodes);
    std::iota(order_.begin(), order_.end(), 0u);
  }
  void TearDown() override {
    for (int d = 0; d < static_cast<int>(streams_.size()); ++d) {
      EXPECT_CUDA_OK(cudaSetDevice(d));
      EXPECT_CUDA_OK(streams_[d].Free());
    }
    (void)cudaSetDevice(0);
    // Pinned and registered memory made after the kit's snapshot goes before its leak check.
    EXPECT_CUDA_OK(reg_.Free());
    EXPECT_CUDA_OK(pinned_.Free());
    EXPECT_CUDA_OK(scratch_.Free());
    GpuTest::TearDown();
  }

  uint64_t* Visited(int d) const { return reinterpret_cast<uint64_t*>(scratch_dev_[d]); }
  ListWalk* Walk(int d) const {
    return reinterpret_cast<ListWalk*>(scratch_dev_[d] + (kNodes + 1) * sizeof(uint64_t));
  }
  const ListWalk& WalkHost() const {
    return *reinterpret_cast<const ListWalk*>(scratch_.host() + (kNodes + 1) * sizeof(uint64_t));
  }
  uint32_t* OrderDev(int d) const {
    return reinterpret_cast<uint32_t*>(scratch_dev_[d] + (kNodes + 1) * sizeof(uint64_t) + sizeof(ListWalk));
  }
  uint32_t* OrderHost() const {
    return reinterpret_cast<uint32_t*>(scratch_.host() + (kNodes + 1) * sizeof(uint64_t) + sizeof(ListWalk));
  }
  const uint64_t* VisitedHost() const { return reinterpret_cast<const uint64_t*>(scratch_.host()); }

  // A fresh order and seed for the next list.
  uint64_t Shuffle() {
    std::shuffle(order_.begin(), order_.end(), CaseRng());
    return CaseRng()();
  }

  // The host links the list for GPU `d` (its pointer base).
  uint64_t HostBuilds(int d, uint64_t seed) {
    auto* nodes = static_cast<ListNode*>(host_);
    uint64_t sum = 0;
    for (size_t k = 0; k < kNodes; ++k) {
      ListNode& n = nodes[order_[k]];
      n.index = order_[k];
      n.value = ListValue(order_[k], seed);
      n.next = k + 1 < kNodes ? base_[d] + uint64_t{order_[k + 1]} * sizeof(ListNode) : 0;
      sum += n.value;
    }
    std::atomic_thread_fence(std::memory_order_seq_cst);  // out of write-combining buffers
    return sum;
  }
  // GPU `d` links the list through its own pointer.
  void GpuBuilds(int d, uint64_t seed) {
    std::copy(order_.begin(), order_.end(), OrderHost());
    ASSERT_CUDA_OK(cudaSetDevice(d));
    ASSERT_CUDA_OK(LaunchBuildList(reinterpret_cast<ListNode*>(base_[d]), OrderDev(d), kNodes, seed, streams_[d].get()));
    ASSERT_CUDA_OK(cudaStreamSynchronize(streams_[d].get()));
    ASSERT_CUDA_OK(cudaSetDevice(0));
  }
  // GPU `d` follows the list from its head (linked for pointer base `base`); the order it
  // visited, the values' sum and the end are checked.
  void GpuWalks(int d, uint64_t base, uint64_t seed, const std::string& pair) {
    uint64_t want = 0;
    for (uint32_t i : order_) want += ListValue(i, seed);
    ASSERT_CUDA_OK(cudaSetDevice(d));
    const auto* head = reinterpret_cast<const ListNode*>(base + uint64_t{order_[0]} * sizeof(ListNode));
    ASSERT_CUDA_OK(LaunchWalkList(head, kNodes + 1, Visited(d), Walk(d), streams_[d].get()));
    ASSERT_CUDA_OK(cudaStreamSynchronize(streams_[d].get()));
    ASSERT_CUDA_OK(cudaSetDevice(0));
    const ListWalk w = WalkHost();
    EXPECT_EQ(w.ended, 1u) << pair << ": the walk did not reach the end within " << kNodes + 1 << " steps";
    ASSERT_EQ(w.steps, kNodes) << pair << ": nodes visited";
    const uint64_t* got = VisitedHost();
    const auto bad = std::mismatch(order_.begin(), order_.end(), got,
                                   [](uint32_t a, uint64_t b) { return uint64_t{a} == b; });
    EXPECT_TRUE(bad.first == order_.end()) << pair << ", step " << (bad.first - order_.begin()) << ": visited node "
                                           << *bad.second << ", the list links node " << *bad.first;
    EXPECT_EQ(w.sum, want) << pair << ": the sum of the values read";
  }
  // The host follows a list GPU `d` linked (translating each link by its offset from d's base).
  void HostWalks(int d, uint64_t seed, const std::string& pair) {
    const uint64_t base = base_[d], end = base + kNodes * sizeof(ListNode);
    const auto* bytes = static_cast<const unsigned char*>(host_);
    uint64_t link = base + uint64_t{order_[0]} * sizeof(ListNode);
    size_t steps = 0;
    for (; link != 0 && steps <= kNodes; ++steps) {
      ASSERT_TRUE(link >= base && link + sizeof(ListNode) <= end && (link - base) % sizeof(ListNode) == 0)
          << pair << ", step " << steps << ": link 0x" << std::hex << link << " is not a node of the buffer";
      ASSERT_LT(steps, kNodes) << pair << ": the list does not end after " << kNodes << " nodes";
      const auto* n = reinterpret_cast<const volatile ListNode*>(bytes + (link - base));
      ASSERT_EQ(n->index, order_[steps]) << pair << ", step " << steps << ": node index";
      ASSERT_EQ(n->value, ListValue(order_[steps], seed)) << pair << ", step " << steps << ": node value";
      link = n->next;
    }
    EXPECT_EQ(steps, kNodes) << pair << ": nodes the host visited";
  }

  int gpus_ = 0;
  PinnedBuffer pinned_, scratch_;
  HostRegistration reg_;
  void* host_ = nullptr;
  std::vector<uint64_t> base_;
  std::vector<unsigned char*> scratch_dev_;
  std::vector<OwnedStream> streams_;
  std::vector<uint32_t> order_;
};

// A GPU whose pointer to shared host memory is not linear over it, or that reads another GPU's
// (or the host's) stores stale, or whose stores land elsewhere, fails this for the pairs it is
// in: the walk visits other nodes, reads other values or misses the end.
TEST_P(PointerStructuresEveryGpuTest, EveryCreatorAndVerifierPairAgreesOnTheList) {
  PAGELOCK_RULE("R141,R142");
  Observe("gpus", gpus_);
  int unwalkable = 0;
  for (int d = 0; d < gpus_ && !HasFatalFailure(); ++d) {
    // The host links, GPU d follows.
    uint64_t seed = Shuffle();
    HostBuilds(d, seed);
    GpuWalks(d, base_[d], seed, "host -> GPU " + std::to_string(d));
    // GPU d links; the host follows, then every other GPU where the pointers agree.
    seed = Shuffle();
    GpuBuilds(d, seed);
    HostWalks(d, seed, "GPU " + std::to_string(d) + " -> host");
    for (int v = 0; v < gpus_ && !HasFatalFailure(); ++v) {
      if (v == d) continue;
      if (base_[v] != base_[d]) {
        ++unwalkable;  // each GPU would follow another address: the links mean nothing to it
        continue;
      }
      GpuWalks(v, base_[d], seed, "GPU " + std::to_string(d) + " -> GPU " + std::to_string(v));
    }
  }
  Observe("gpu_pairs_with_different_pointers", unwalkable);
}

INSTANTIATE_TEST_SUITE_P(EveryKind, PointerStructuresEveryGpuTest,
                         ::testing::Values(HostKind::kHostAllocMapped, HostKind::kHostAllocMappedWriteCombined,
                                           HostKind::kRegisteredMmap),
                         [](const auto& info) { return HostKindName(info.param); });

}  // namespace
}  // namespace pagelock
