// Instantiated graphs whose nodes are re-pointed to other page-locked buffers (peer gap K11;
// cuda-python's test_graph_node_update.py): the next launch must use the new buffer and never
// the old one, a launch already queued keeps what it had, and a refused update changes nothing.
//   - a built graph (host-to-device and device-to-host memcpy nodes) over every page-locked kind
//     and device memory, its nodes re-pointed again and again with
//     cudaGraphExecMemcpyNodeSetParams1D and cudaGraphExecMemcpyNodeSetParams, each launch's
//     bytes and the other buffers checked; zero-length updates refused;
//   - a captured graph's memcpy nodes re-pointed the same way;
//   - whole-graph cudaGraphExecUpdate from a re-captured graph (copies and a kernel writing
//     mapped memory re-pointed), and updates that change the topology or a memory type refused
//     with the documented result, the executable graph unchanged;
//   - memset nodes re-pointed to another buffer of the same kind (1-, 2- and 4-byte elements) and
//     host nodes given other arguments.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/resources.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"
#include "kernels/streams/stream_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

using streams::MemName;


constexpr size_t kBytes = (size_t{64} << 10) + 3;
constexpr unsigned char kPoison = 0xa5;
constexpr int kRounds = 8;

cudaError_t Instantiate(cudaGraphExec_t* exec, cudaGraph_t graph) {
#if CUDART_VERSION >= 12000
  return cudaGraphInstantiate(exec, graph, 0);
#else  // 11.x: (exec, graph, errorNode, logBuffer, bufferSize)
  return cudaGraphInstantiate(exec, graph, nullptr, nullptr, 0);
#endif
}

// cudaGraphExecUpdate in the shape the headers declare (12.0 took a result-info struct).
cudaError_t ExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResult* result) {
#if CUDART_VERSION >= 12000
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t e = cudaGraphExecUpdate(exec, graph, &info);
  *result = info.result;
  return e;
#else
  cudaGraphNode_t error_node = nullptr;
  return cudaGraphExecUpdate(exec, graph, &error_node, result);
#endif
}

// A 1-dimensional copy in the 3D parameter form.
cudaMemcpy3DParms Params1D(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(const_cast<void*>(src), n, n, 1);
  p.dstPtr = make_cudaPitchedPtr(dst, n, n, 1);
  p.extent = make_cudaExtent(n, 1, 1);
  p.kind = kind;
  return p;
}

class GraphUpdateTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_CUDA_OK(checker_.status());
    stream_ = OwnedStream(cudaStreamNonBlocking);
    ASSERT_CUDA_OK(stream_.status());
  }
  std::unique_ptr<KindBuffer> Make(HostKind kind, size_t n = kBytes) {
    if (IsRegistered(kind) && device().Attr(cudaDevAttrHostRegisterSupported) != 1) {
      [&] { PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1)); }();
      return nullptr;
    }
    std::string why;
    auto b = KindBuffer::Make(kind, n, &why);
    EXPECT_NE(b, nullptr) << why;
    return b;
  }
  void Poison(const KindBuffer& b) { ASSERT_CUDA_OK(checker_.FillByte(b, 0, b.size(), kPoison)); }
  uint32_t Fill(const KindBuffer& b) {
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    EXPECT_CUDA_OK(checker_.FillPattern(b, 0, b.size(), 0, seed));
    return seed;
  }
  size_t CountPattern(const KindBuffer& b, uint32_t seed) {
    size_t bad = b.size();
    EXPECT_CUDA_OK(checker_.CountPattern(b, 0, b.size(), 0, seed, &bad));
    return bad;
  }
  size_t CountPoison(const KindBuffer& b) {
    size_t bad = b.size();
    EXPECT_CUDA_OK(checker_.CountByte(b, 0, b.size(), kPoison, &bad));
    return bad;
  }
  void Launch(cudaGraphExec_t exec) {
    ASSERT_CUDA_OK(cudaGraphLaunch(exec, stream_.get()));
    ASSERT_CUDA_OK(streams::PollStream(stream_.get(), 30));
  }

  streams::Checker checker_;
  OwnedStream stream_;
};

// ---- memcpy nodes of a built graph ----

enum class Form { k1D, k3D };
std::string FormName(Form f) { return f == Form::k1D ? "SetParams1D" : "SetParams3D"; }

cudaMemcpyKind KindOf(HostKind from, HostKind to) {
  const bool d_from = from == HostKind::kDevice, d_to = to == HostKind::kDevice;
  return d_from ? (d_to ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                : (d_to ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
}

cudaError_t SetCopy(Form f, cudaGraphExec_t exec, cudaGraphNode_t node, void* dst, const void* src, size_t n,
                    cudaMemcpyKind kind) {
  if (f == Form::k1D) return cudaGraphExecMemcpyNodeSetParams1D(exec, node, dst, src, n, kind);
  const cudaMemcpy3DParms p = Params1D(dst, src, n, kind);
  return cudaGraphExecMemcpyNodeSetParams(exec, node, &p);
}

class MemcpyNodeUpdateTest : public GraphUpdateTest, public ::testing::WithParamInterface<std::tuple<HostKind, Form>> {
 protected:
  // Sources A, B, C and destinations out0, out1 of the kind (write-combined memory is a source
  // only: host reads of it are slow, R16), device scratch D; a graph up: src[0] -> D,
  // down: D -> out[0].
  void Build() {
    kind_ = std::get<0>(GetParam());
    out_kind_ = kind_ == HostKind::kHostAllocMappedWriteCombined ? HostKind::kHostAllocMapped : kind_;
    for (auto& s : src_) {
      s = Make(kind_);
      if (!s) return;
    }
    for (auto& o : out_) {
      o = Make(out_kind_);
      if (!o) return;
    }
    scratch_ = Make(HostKind::kDevice);
    if (!scratch_) return;
    ASSERT_CUDA_OK(cudaGraphCreate(graph_.put(), 0));
    ASSERT_CUDA_OK(cudaGraphAddMemcpyNode1D(&up_, graph_.get(), nullptr, 0, scratch_->ptr(), src_[0]->ptr(), kBytes,
                                            KindOf(kind_, HostKind::kDevice)));
    ASSERT_CUDA_OK(cudaGraphAddMemcpyNode1D(&down_, graph_.get(), &up_, 1, out_[0]->ptr(), scratch_->ptr(), kBytes,
                                            KindOf(HostKind::kDevice, out_kind_)));
    ASSERT_CUDA_OK(Instantiate(exec_.put(), graph_.get()));
  }
  cudaError_t Point(int s, int o) {
    const Form f = std::get<1>(GetParam());
    cudaError_t e = SetCopy(f, exec_.get(), up_, scratch_->ptr(), src_[s]->ptr(), kBytes, KindOf(kind_, HostKind::kDevice));
    if (e != cudaSuccess) return e;
    return SetCopy(f, exec_.get(), down_, out_[o]->ptr(), scratch_->ptr(), kBytes, KindOf(HostKind::kDevice, out_kind_));
  }

  HostKind kind_ = HostKind::kHostAllocDefault, out_kind_ = HostKind::kHostAllocDefault;
  std::unique_ptr<KindBuffer> src_[3], out_[2], scratch_;
  OwnedGraph graph_;
  OwnedGraphExec exec_;
  cudaGraphNode_t up_ = nullptr, down_ = nullptr;
};

// A driver that keeps the instantiation-time pointers (or a translation cached for them) fails
// this: every launch after an update must copy the source it names, with the host's latest
// bytes, into the destination it names, and leave the other destination alone.
// cudaGraphExecMemcpyNodeSetParams(1D): "Updates the work represented by node in hGraphExec as
// though node had contained pNodeParams at instantiation"; "The modifications only affect future
// launches". The buffers are of one kind, so the memory type does not change (cudaGraphExecUpdate:
// "Changing either the source or destination memory type ... is not supported").
TEST_P(MemcpyNodeUpdateTest, EveryLaunchAfterAnUpdateDeliversTheNewBuffersBytes) {
  PAGELOCK_RULE("S27");
  Build();
  if (IsSkipped() || HasFatalFailure() || HasFailure()) return;
  Budget("launches", kRounds, "count");
  for (int r = 0; r < kRounds; ++r) {
    const int s = r == 0 ? 0 : static_cast<int>(CaseRng()() % 3);
    const int o = r == 0 ? 0 : static_cast<int>(CaseRng()() % 2);
    if (r > 0) {
      ASSERT_CUDA_OK(Point(s, o)) << "round " << r;
    }
    const uint32_t seed = Fill(*src_[s]);  // fresh bytes every round: no copy of old contents passes
    Poison(*out_[0]);
    Poison(*out_[1]);
    Launch(exec_.get());
    if (HasFatalFailure()) return;
    EXPECT_EQ(CountPattern(*out_[o], seed), 0u) << "round " << r << ": source " << s << " -> destination " << o
                                                << " did not arrive";
    EXPECT_EQ(CountPoison(*out_[1 - o]), 0u) << "round " << r << ": the destination the graph no longer names was written";
  }
}

// "Already enqueued or running launches of hGraphExec are not affected by this call": a launch
// queued behind a held stream before the update copies the old buffers, the launch after it the
// new ones. A driver that patches the queued launch in place fails this.
TEST_P(MemcpyNodeUpdateTest, AnUpdateLeavesALaunchAlreadyQueuedAlone) {
  PAGELOCK_RULE("S27");
  Build();
  if (IsSkipped() || HasFatalFailure() || HasFailure()) return;
  // The two launches read different sources and write different destinations, so they cannot
  // pass by reading each other's bytes.
  const uint32_t old_seed = Fill(*src_[0]), new_seed = Fill(*src_[1]);
  Poison(*out_[0]);
  Poison(*out_[1]);
  PinnedBuffer hold = PinnedBuffer::Mapped(2 * sizeof(unsigned));
  ASSERT_CUDA_OK(hold.status());
  auto* flag = hold.as<unsigned>();
  flag[0] = 0;
  flag[1] = kKernelOk;
  ASSERT_CUDA_OK(LaunchAwaitFlag(reinterpret_cast<unsigned*>(hold.dev()), 1,
                                 static_cast<uint64_t>(10 * TimeScale() * 1e9), reinterpret_cast<unsigned*>(hold.dev()) + 1,
                                 stream_.get()));
  ASSERT_CUDA_OK(cudaGraphLaunch(exec_.get(), stream_.get()));
  const cudaError_t update = Point(1, 1);
  const cudaError_t second = cudaGraphLaunch(exec_.get(), stream_.get());
  __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
  ASSERT_CUDA_OK(update);
  ASSERT_CUDA_OK(second);
  ASSERT_CUDA_OK(streams::PollStream(stream_.get(), 30));
  ASSERT_NE(flag[1], kKernelTimedOut) << "the holding kernel never saw the host's flag";
  EXPECT_EQ(CountPattern(*out_[0], old_seed), 0u) << "the launch queued before the update did not copy the old buffers";
  EXPECT_EQ(CountPattern(*out_[1], new_seed), 0u) << "the launch after the update did not copy the new buffers";
}

// "Zero-length operations are not supported" (cudaErrorInvalidValue, the only error listed);
// the refused update leaves the graph copying what it did.
TEST_P(MemcpyNodeUpdateTest, AZeroLengthUpdateIsRefusedAndChangesNothing) {
  PAGELOCK_RULE("S27");
  Build();
  if (IsSkipped() || HasFatalFailure() || HasFailure()) return;
  EXPECT_CUDA_ERROR(cudaErrorInvalidValue, SetCopy(std::get<1>(GetParam()), exec_.get(), up_, scratch_->ptr(),
                                                   src_[1]->ptr(), 0, KindOf(kind_, HostKind::kDevice)));
  const uint32_t seed = Fill(*src_[0]);
  Poison(*out_[0]);
  Launch(exec_.get());
  EXPECT_EQ(CountPattern(*out_[0], seed), 0u) << "after a refused zero-length update";
}

INSTANTIATE_TEST_SUITE_P(
    KindsAndForms, MemcpyNodeUpdateTest,
    ::testing::Combine(::testing::Values(HostKind::kHostAllocDefault, HostKind::kHostAllocMapped, HostKind::kHostAllocMappedWriteCombined, HostKind::kRegisteredMalloc,
                                         HostKind::kRegisteredMmap, HostKind::kRegisteredMemfd, HostKind::kDevice),
                       ::testing::Values(Form::k1D, Form::k3D)),
    [](const auto& info) { return MemName(std::get<0>(info.param)) + "_" + FormName(std::get<1>(info.param)); });

// Pinned to registered memory: both are host memory of the same context, but the documentation
// lets an update be refused where "the memory operands' mappings changed" (cudaErrorInvalidValue).
// Either outcome is allowed and recorded; after a success the next launch copies the registered
// buffer, after a refusal the pinned one.
TEST_F(GraphUpdateTest, RePointingPinnedToRegisteredMemoryCopiesWhatTheAnswerSays) {
  PAGELOCK_RULE("S27");
  auto pinned = Make(HostKind::kHostAllocDefault), registered = Make(HostKind::kRegisteredMalloc), dev = Make(HostKind::kDevice);
  if (!pinned || !registered || !dev) return;
  OwnedGraph graph;
  ASSERT_CUDA_OK(cudaGraphCreate(graph.put(), 0));
  cudaGraphNode_t up = nullptr;
  ASSERT_CUDA_OK(cudaGraphAddMemcpyNode1D(&up, graph.get(), nullptr, 0, dev->ptr(), pinned->ptr(), kBytes,
                                          cudaMemcpyHostToDevice));
  OwnedGraphExec exec;
  ASSERT_CUDA_OK(Instantiate(exec.put(), graph.get()));
  const uint32_t pinned_seed = Fill(*pinned), registered_seed = Fill(*registered);
  const cudaError_t e =
      cudaGraphExecMemcpyNodeSetParams1D(exec.get(), up, dev->ptr(), registered->ptr(), kBytes, cudaMemcpyHostToDevice);
  EXPECT_DOCUMENTED_ONE_OF("pinned_to_registered_update", e,
                           (std::vector<cudaError_t>{cudaSuccess, cudaErrorInvalidValue}),
                           "cudaGraphExecMemcpyNodeSetParams1D's results");
  Poison(*dev);
  Launch(exec.get());
  EXPECT_EQ(CountPattern(*dev, e == cudaSuccess ? registered_seed : pinned_seed), 0u)
      << "the launch did not copy the buffer the update's answer (" << ErrName(e) << ") names";
}

// ---- captured graphs ----

class CapturedUpdateTest : public GraphUpdateTest, public ::testing::WithParamInterface<HostKind> {};

// The memcpy nodes stream capture made are re-pointed like built ones: a captured H2D copy,
// kernel and D2H copy, its copy nodes found with cudaGraphGetNodes / cudaGraphMemcpyNodeGetParams
// and updated with cudaGraphExecMemcpyNodeSetParams, deliver the new source (inverted by the
// kernel) to the new destination and nothing to the old one.
TEST_P(CapturedUpdateTest, CapturedMemcpyNodesRePointedDeliverTheNewBuffersBytes) {
  PAGELOCK_RULE("S27");
  const HostKind kind = GetParam();
  auto a = Make(kind), b = Make(kind), out1 = Make(kind), out2 = Make(kind), dev = Make(HostKind::kDevice);
  if (!a || !b || !out1 || !out2 || !dev) return;
  ASSERT_CUDA_OK(cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeGlobal));
  // copy-check: graph nodes; each launch's bytes are counted below
  EXPECT_CUDA_OK(cudaMemcpyAsync(dev->ptr(), a->ptr(), kBytes, cudaMemcpyHostToDevice, stream_.get()));
  EXPECT_CUDA_OK(LaunchInvertBytes(dev->ptr(), kBytes, stream_.get()));
  // copy-check: graph node; each launch's bytes are counted below
  EXPECT_CUDA_OK(cudaMemcpyAsync(out1->ptr(), dev->ptr(), kBytes, cudaMemcpyDeviceToHost, stream_.get()));
  OwnedGraph graph;
  ASSERT_CUDA_OK(cudaStreamEndCapture(stream_.get(), graph.put()));
  size_t count = 0;
  ASSERT_CUDA_OK(cudaGraphGetNodes(graph.get(), nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  ASSERT_CUDA_OK(cudaGraphGetNodes(graph.get(), nodes.data(), &count));
  cudaGraphNode_t up = nullptr, down = nullptr;
  cudaMemcpy3DParms up_params{}, down_params{};
  for (cudaGraphNode_t n : nodes) {
    cudaGraphNodeType type;
    ASSERT_CUDA_OK(cudaGraphNodeGetType(n, &type));
    if (type != cudaGraphNodeTypeMemcpy) continue;
    cudaMemcpy3DParms p{};
    ASSERT_CUDA_OK(cudaGraphMemcpyNodeGetParams(n, &p));
    if (p.dstPtr.ptr == dev->ptr()) {
      up = n;
      up_params = p;
    } else {
      down = n;
      down_params = p;
    }
  }
  ASSERT_NE(up, nullptr) << "no captured memcpy node writes the device buffer";
  ASSERT_NE(down, nullptr) << "no captured memcpy node reads the device buffer";
  OwnedGraphExec exec;
  ASSERT_CUDA_OK(Instantiate(exec.put(), graph.get()));
  const uint32_t seed_a = Fill(*a);
  Poison(*out1);
  Launch(exec.get());
  EXPECT_EQ(HostCountPatternMismatches(out1->host(), kBytes, seed_a, 0xff), 0u) << "the captured graph as captured";
  up_params.srcPtr.ptr = b->ptr();
  down_params.dstPtr.ptr = out2->ptr();
  ASSERT_CUDA_OK(cudaGraphExecMemcpyNodeSetParams(exec.get(), up, &up_params));
  ASSERT_CUDA_OK(cudaGraphExecMemcpyNodeSetParams(exec.get(), down, &down_params));
  const uint32_t seed_b = Fill(*b);
  Fill(*a);  // the old source changes too: a launch reading it cannot pass by chance
  Poison(*out1);
  Poison(*out2);
  Launch(exec.get());
  EXPECT_EQ(HostCountPatternMismatches(out2->host(), kBytes, seed_b, 0xff), 0u)
      << "the re-pointed graph did not deliver the new source to the new destination";
  EXPECT_EQ(CountPoison(*out1), 0u) << "the old destination was written after the update";
}

INSTANTIATE_TEST_SUITE_P(HostKinds, CapturedUpdateTest,
                         ::testing::Values(HostKind::kHostAllocDefault, HostKind::kHostAllocMapped, HostKind::kRegisteredMalloc, HostKind::kRegisteredMmap),
                         [](const auto& info) { return MemName(info.param); });

// ---- whole-graph update ----

class WholeGraphUpdateTest : public GraphUpdateTest {
 protected:
  // Captures src -> dev, a kernel writing `seed`'s pattern into mapped memory `marks` through its
  // device pointer, dev -> out.
  void Capture(const KindBuffer& src, const KindBuffer& dev, const KindBuffer& marks, uint32_t seed, const KindBuffer& out,
               OwnedGraph* graph, bool extra_node = false, const KindBuffer* device_src = nullptr) {
    ASSERT_CUDA_OK(cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeGlobal));
    if (device_src) {
      // copy-check: graph node, launched only after the update is refused; never run
      EXPECT_CUDA_OK(cudaMemcpyAsync(dev.ptr(), device_src->ptr(), kBytes, cudaMemcpyDeviceToDevice, stream_.get()));
    } else {
      // copy-check: graph node; each launch's bytes are counted by the caller
      EXPECT_CUDA_OK(cudaMemcpyAsync(dev.ptr(), src.ptr(), kBytes, cudaMemcpyHostToDevice, stream_.get()));
    }
    EXPECT_CUDA_OK(LaunchFillPattern(marks.dev(), marks.size(), seed, stream_.get()));
    // copy-check: graph node; each launch's bytes are counted by the caller
    EXPECT_CUDA_OK(cudaMemcpyAsync(out.ptr(), dev.ptr(), kBytes, cudaMemcpyDeviceToHost, stream_.get()));
    if (extra_node) {
      EXPECT_CUDA_OK(LaunchInvertBytes(marks.dev(), marks.size(), stream_.get()));
    }
    ASSERT_CUDA_OK(cudaStreamEndCapture(stream_.get(), graph->put()));
  }
};

// A driver that applies a re-captured graph's parameters to some nodes only, or keeps a
// kernel's old pointer argument, fails this. cudaGraphExecUpdate: "Updates the node parameters
// in the instantiated graph specified by hGraphExec with the node parameters in a topologically
// identical graph"; success is cudaSuccess with cudaGraphExecUpdateSuccess. After the update the
// launch copies B to out2 and the kernel writes marks2; out1 and marks1 stay as they were.
TEST_F(WholeGraphUpdateTest, AReCapturedGraphsBuffersAreWhatTheNextLaunchUses) {
  PAGELOCK_RULE("S28");
  auto a = Make(HostKind::kHostAllocDefault), b = Make(HostKind::kHostAllocDefault), out1 = Make(HostKind::kHostAllocDefault), out2 = Make(HostKind::kHostAllocDefault);
  auto marks1 = Make(HostKind::kHostAllocMapped), marks2 = Make(HostKind::kHostAllocMapped), dev = Make(HostKind::kDevice);
  if (!a || !b || !out1 || !out2 || !marks1 || !marks2 || !dev) return;
  const uint32_t k1 = static_cast<uint32_t>(CaseRng()()), k2 = k1 ^ 0x77777777u;
  OwnedGraph g1, g2;
  Capture(*a, *dev, *marks1, k1, *out1, &g1);
  Capture(*b, *dev, *marks2, k2, *out2, &g2);
  if (HasFatalFailure()) return;
  OwnedGraphExec exec;
  ASSERT_CUDA_OK(Instantiate(exec.put(), g1.get()));
  cudaGraphExecUpdateResult result = cudaGraphExecUpdateError;
  ASSERT_CUDA_OK(ExecUpdate(exec.get(), g2.get(), &result));
  EXPECT_EQ(result, cudaGraphExecUpdateSuccess);
  const uint32_t seed_b = Fill(*b);
  Fill(*a);
  for (const auto* p : {out1.get(), out2.get(), marks1.get(), marks2.get()}) Poison(*p);
  Launch(exec.get());
  EXPECT_EQ(CountPattern(*out2, seed_b), 0u) << "the updated copies did not deliver B to out2";
  EXPECT_EQ(CountPattern(*marks2, k2), 0u) << "the updated kernel did not write its new mapped buffer";
  EXPECT_EQ(CountPoison(*out1), 0u) << "the old destination was written";
  EXPECT_EQ(CountPoison(*marks1), 0u) << "the kernel still wrote its old mapped buffer";
}

// A refused update must not half-apply. cudaGraphExecUpdate "returns
// cudaErrorGraphExecUpdateFailure if the graph update was not performed": with one more node the
// result is cudaGraphExecUpdateErrorTopologyChanged ("The count of nodes ... differ"); with a
// device source where the graph copied from host memory ("Changing either the source or
// destination memory type ... is not supported") a documented failure result (recorded). After
// each the graph still copies A to out1 and writes marks1.
TEST_F(WholeGraphUpdateTest, AnUpdateChangingTheTopologyOrAMemoryTypeIsRefusedAndChangesNothing) {
  PAGELOCK_RULE("S28");
  auto a = Make(HostKind::kHostAllocDefault), b = Make(HostKind::kHostAllocDefault), out1 = Make(HostKind::kHostAllocDefault), out2 = Make(HostKind::kHostAllocDefault);
  auto marks1 = Make(HostKind::kHostAllocMapped), marks2 = Make(HostKind::kHostAllocMapped), dev = Make(HostKind::kDevice);
  auto dev_src = Make(HostKind::kDevice);
  if (!a || !b || !out1 || !out2 || !marks1 || !marks2 || !dev || !dev_src) return;
  const uint32_t k1 = static_cast<uint32_t>(CaseRng()()), k2 = k1 ^ 0x55555555u;
  OwnedGraph g1, topology, memtype;
  Capture(*a, *dev, *marks1, k1, *out1, &g1);
  Capture(*b, *dev, *marks2, k2, *out2, &topology, /*extra_node=*/true);
  Capture(*b, *dev, *marks2, k2, *out2, &memtype, false, dev_src.get());
  if (HasFatalFailure()) return;
  OwnedGraphExec exec;
  ASSERT_CUDA_OK(Instantiate(exec.put(), g1.get()));
  cudaGraphExecUpdateResult result = cudaGraphExecUpdateSuccess;
  EXPECT_CUDA_ERROR(cudaErrorGraphExecUpdateFailure, ExecUpdate(exec.get(), topology.get(), &result))
      << "an update with one more node";
  EXPECT_EQ(result, cudaGraphExecUpdateErrorTopologyChanged)
      << "the result of an update with one more node (documented: TopologyChanged when the count of nodes differs)";
  result = cudaGraphExecUpdateSuccess;
  EXPECT_CUDA_ERROR(cudaErrorGraphExecUpdateFailure, ExecUpdate(exec.get(), memtype.get(), &result))
      << "an update copying from device memory where the graph copied from pinned memory";
  EXPECT_DOCUMENTED_ONE_OF("memory_type_change_result", std::to_string(static_cast<int>(result)),
                           (std::vector<std::string>{std::to_string(cudaGraphExecUpdateError),
                                                     std::to_string(cudaGraphExecUpdateErrorParametersChanged),
                                                     std::to_string(cudaGraphExecUpdateErrorNotSupported)}),
                           "cudaGraphExecUpdate's results for a parameter change it does not support");
  const uint32_t seed_a = Fill(*a);
  for (const auto* p : {out1.get(), out2.get(), marks1.get(), marks2.get()}) Poison(*p);
  Launch(exec.get());
  EXPECT_EQ(CountPattern(*out1, seed_a), 0u) << "after refused updates the graph no longer copies A to out1";
  EXPECT_EQ(CountPattern(*marks1, k1), 0u) << "after refused updates the kernel no longer writes marks1";
  EXPECT_EQ(CountPoison(*out2), 0u) << "a refused update's destination was written";
  EXPECT_EQ(CountPoison(*marks2), 0u) << "a refused update's kernel argument was used";
}

// ---- memset and host nodes ----

class MemsetNodeUpdateTest : public GraphUpdateTest, public ::testing::WithParamInterface<std::tuple<HostKind, int>> {};

// cudaGraphExecMemsetNodeSetParams: "The new destination pointer in pNodeParams must be to the
// same kind of allocation as the original destination pointer ... Both the value and pointer
// address may be updated". A driver that keeps setting the old buffer, or the old value, fails:
// after re-pointing to a second buffer of the same kind with another value, the launch sets every
// element of the second buffer and leaves the first alone; then a value-only update.
TEST_P(MemsetNodeUpdateTest, AMemsetRePointedToAnotherBufferSetsOnlyIt) {
  PAGELOCK_RULE("S29");
  const HostKind kind = std::get<0>(GetParam());
  const unsigned elem = static_cast<unsigned>(std::get<1>(GetParam()));
  auto first = Make(kind), second = Make(kind);
  if (!first || !second) return;
  const size_t width = (kBytes - 3) / elem;  // whole elements
  const size_t bytes = width * elem;
  // Values whose bytes are all equal, so every element width is checked byte by byte.
  auto value = [elem](unsigned char byte) {
    unsigned v = 0;
    for (unsigned i = 0; i < elem; ++i) v |= static_cast<unsigned>(byte) << (8 * i);
    return v;
  };
  cudaMemsetParams p{};
  p.dst = first->dev();
  p.value = value(0x3c);
  p.elementSize = elem;
  p.width = width;
  p.height = 1;
  OwnedGraph graph;
  ASSERT_CUDA_OK(cudaGraphCreate(graph.put(), 0));
  cudaGraphNode_t node = nullptr;
  ASSERT_CUDA_OK(cudaGraphAddMemsetNode(&node, graph.get(), nullptr, 0, &p));
  OwnedGraphExec exec;
  ASSERT_CUDA_OK(Instantiate(exec.put(), graph.get()));
  size_t bad = 0;
  for (const auto& [dst, byte] : {std::pair<KindBuffer*, unsigned char>{second.get(), 0xc3}, {second.get(), 0x5e}}) {
    p.dst = dst->dev();
    p.value = value(byte);
    ASSERT_CUDA_OK(cudaGraphExecMemsetNodeSetParams(exec.get(), node, &p));
    Poison(*first);
    Poison(*second);
    Launch(exec.get());
    ASSERT_CUDA_OK(checker_.CountByte(*dst, 0, bytes, byte, &bad));
    EXPECT_EQ(bad, 0u) << "the re-pointed memset (value byte " << Hex(byte) << ") did not set the new buffer";
    EXPECT_EQ(CountPoison(*first), 0u) << "the memset still wrote its first buffer";
  }
}

INSTANTIATE_TEST_SUITE_P(KindsAndWidths, MemsetNodeUpdateTest,
                         ::testing::Combine(::testing::Values(HostKind::kHostAllocMapped, HostKind::kRegisteredMalloc, HostKind::kDevice),
                                            ::testing::Values(1, 2, 4)),
                         [](const auto& info) {
                           return MemName(std::get<0>(info.param)) + "_" + std::to_string(std::get<1>(info.param)) +
                                  "ByteElements";
                         });

// What a host node writes: its arguments name the buffer and the pattern.
struct HostArgs {
  unsigned char* p;
  size_t n;
  uint32_t seed;
};
void CUDART_CB WritePattern(void* data) {
  const auto* a = static_cast<const HostArgs*>(data);
  streams::HostFillPatternFrom(a->p, a->n, 0, a->seed);
}

// cudaGraphExecHostNodeSetParams: the next launch calls the function with the new arguments. A
// driver that keeps the instantiation-time userData fails: after the update the host node writes
// the second pinned buffer with the second seed, and the first buffer keeps its poison; a
// following copy node carries the second buffer's bytes to the device, in graph order.
TEST_F(GraphUpdateTest, AHostNodeGivenOtherArgumentsWritesOnlyTheNewBuffer) {
  PAGELOCK_RULE("S29");
  auto first = Make(HostKind::kHostAllocDefault), second = Make(HostKind::kHostAllocDefault), dev = Make(HostKind::kDevice);
  if (!first || !second || !dev) return;
  HostArgs args1{first->host(), kBytes, static_cast<uint32_t>(CaseRng()())};
  HostArgs args2{second->host(), kBytes, args1.seed ^ 0x1234567u};
  cudaHostNodeParams hp{};
  hp.fn = WritePattern;
  hp.userData = &args1;
  OwnedGraph graph;
  ASSERT_CUDA_OK(cudaGraphCreate(graph.put(), 0));
  cudaGraphNode_t host = nullptr, copy = nullptr;
  ASSERT_CUDA_OK(cudaGraphAddHostNode(&host, graph.get(), nullptr, 0, &hp));
  ASSERT_CUDA_OK(cudaGraphAddMemcpyNode1D(&copy, graph.get(), &host, 1, dev->ptr(), second->ptr(), kBytes,
                                          cudaMemcpyHostToDevice));
  OwnedGraphExec exec;
  ASSERT_CUDA_OK(Instantiate(exec.put(), graph.get()));
  hp.userData = &args2;
  ASSERT_CUDA_OK(cudaGraphExecHostNodeSetParams(exec.get(), host, &hp));
  Poison(*first);
  Poison(*second);
  Launch(exec.get());
  EXPECT_EQ(CountPattern(*second, args2.seed), 0u) << "the host node did not get its new arguments";
  EXPECT_EQ(CountPoison(*first), 0u) << "the host node still wrote its first buffer";
  EXPECT_EQ(CountPattern(*dev, args2.seed), 0u) << "the copy after the host node did not carry its bytes";
}

}  // namespace
}  // namespace pagelock
