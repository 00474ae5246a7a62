// Pinned and mapped memory inside CUDA graphs, and pinning calls during stream capture.
//   - A captured graph (H2D copy from page-locked memory, a kernel on device memory, D2H copy,
//     then a kernel node on the destination's mapped alias) replayed many times, the host
//     rewriting the source between replays: every replay delivers the source's current bytes.
//   - cudaHostAlloc / cudaHostRegister / cudaFreeHost / cudaHostUnregister during a global-mode
//     capture: the code is recorded; a call that fails must fail with a capture error
//     (cudaErrorStreamCaptureUnsupported or ...Implicit) and invalidate the capture. In relaxed mode allocation
//     and registration are not prohibited and must succeed.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <cstring>
#include <tuple>
#include <vector>

#include "fixtures/gpu_test.h"
#include "kernels/access_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

using streams::Buffer;
using streams::Mem;

constexpr size_t kBytes = (size_t{64} << 10) + 3;
constexpr int kReplays = 100;

class GraphReplayTest : public GpuTest, public ::testing::WithParamInterface<std::tuple<Mem, bool>> {};

TEST_P(GraphReplayTest, EveryReplayDeliversTheSourcesCurrentBytes) {
  PAGELOCK_RULE("R14,R75,S11");
  const Mem m = std::get<0>(GetParam());
  const bool device_alias = std::get<1>(GetParam());
  if (streams::IsRegistered(m)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  Budget("graph_replays", kReplays, "count");
  std::string why;
  auto src = Buffer::Make(m, kBytes, &why);
  ASSERT_NE(src, nullptr) << why;
  // Write-combined memory is a source only (host reads of it are slow, R16).
  auto dst = Buffer::Make(m == Mem::kWriteCombined ? Mem::kPinnedMapped : m, kBytes, &why);
  ASSERT_NE(dst, nullptr) << why;
  auto dev = Buffer::Make(Mem::kDevice, kBytes, &why);
  ASSERT_NE(dev, nullptr) << why;
  cudaStream_t s = nullptr;
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const auto own_s = OwnedStream::Adopt(s);
  // The source through its host alias (explicit kind) or its device alias (cudaMemcpyDefault, R75).
  const void* from = device_alias ? static_cast<const void*>(src->dev()) : src->host();
  const cudaMemcpyKind kind = device_alias ? cudaMemcpyDefault : cudaMemcpyHostToDevice;
  ASSERT_CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  // copy-check: graph nodes; every replay's bytes are counted below
  EXPECT_CUDA_OK(cudaMemcpyAsync(dev->dev(), from, kBytes, kind, s));
  EXPECT_CUDA_OK(LaunchInvertBytes(dev->dev(), kBytes, s));
  // copy-check: graph node; every replay's bytes are counted below
  EXPECT_CUDA_OK(cudaMemcpyAsync(dst->host(), dev->dev(), kBytes, cudaMemcpyDeviceToHost, s));
  EXPECT_CUDA_OK(LaunchInvertBytes(dst->dev(), kBytes, s));  // a kernel node on mapped memory
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA_OK(cudaStreamEndCapture(s, &graph));
  const auto own_graph = OwnedGraph::Adopt(graph);
  cudaGraphExec_t exec = nullptr;
#if CUDART_VERSION >= 12000
  ASSERT_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
#else  // 11.x: (exec, graph, errorNode, logBuffer, bufferSize)
  ASSERT_CUDA_OK(cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
#endif
  const auto own_exec = OwnedGraphExec::Adopt(exec);
  int bad_replays = 0;
  size_t first_bad = 0;
  for (int i = 0; i < kReplays; ++i) {
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    streams::HostFillPatternFrom(src->host(), kBytes, 0, seed);
    std::memset(dst->host(), 0, kBytes);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);  // drain write-combining buffers before the launch
    ASSERT_CUDA_OK(cudaGraphLaunch(exec, s));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s));
    const size_t bad = streams::HostCountPattern(dst->host(), kBytes, 0, seed);
    if (bad && !bad_replays++) first_bad = i;
  }
  EXPECT_EQ(bad_replays, 0) << bad_replays << " of " << kReplays << " replays did not deliver the bytes the host "
                            << "wrote before them (first: replay " << first_bad << ")";
}

INSTANTIATE_TEST_SUITE_P(SourcesAndAliases, GraphReplayTest,
                         ::testing::Values(std::make_tuple(Mem::kPinned, false),
                                           std::make_tuple(Mem::kRegisteredMalloc, false),
                                           std::make_tuple(Mem::kRegisteredMalloc, true),
                                           std::make_tuple(Mem::kWriteCombined, false)),
                         [](const auto& info) {
                           return MemName(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_DeviceAlias" : "_HostAlias");
                         });

enum class PinCall { kHostAlloc, kHostRegister, kFreeHost, kHostUnregister };

std::string PinCallName(PinCall c) {
  switch (c) {
    case PinCall::kHostAlloc: return "HostAlloc";
    case PinCall::kHostRegister: return "HostRegister";
    case PinCall::kFreeHost: return "FreeHost";
    case PinCall::kHostUnregister: return "HostUnregister";
  }
  return "Unknown";
}

class CaptureTest : public GpuTest, public ::testing::WithParamInterface<std::tuple<PinCall, cudaStreamCaptureMode>> {
 protected:
  // Runs the call inside a capture of `mode` (one kernel captured first) and returns its code and
  // the code of cudaStreamEndCapture. Cleans up whatever the call left behind.
  void CallDuringCapture(PinCall c, cudaStreamCaptureMode mode, cudaError_t* call, cudaError_t* end) {
    std::vector<unsigned char> heap(2 * 4096);
    void* page = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(heap.data()) + 4095) & ~uintptr_t{4095});
    // The owners release on an early return; the undo below keeps its order and checks.
    void* pinned = nullptr;
    PinnedBuffer own_pinned;
    HostRegistration own_page;
    if (c == PinCall::kFreeHost) {
      ASSERT_CUDA_OK(cudaHostAlloc(&pinned, 4096, 0));
      own_pinned = PinnedBuffer::Adopt(pinned);
    }
    if (c == PinCall::kHostUnregister) {
      ASSERT_CUDA_OK(cudaHostRegister(page, 4096, 0));
      own_page = HostRegistration::Adopt(page);
    }
    void* scratch = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&scratch, 4096));
    auto own_scratch = DeviceBuffer::Adopt(scratch);
    cudaStream_t s = nullptr;
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    auto own_s = OwnedStream::Adopt(s);
    ASSERT_CUDA_OK(cudaStreamBeginCapture(s, mode));
    ASSERT_CUDA_OK(LaunchInvertBytes(scratch, 4096, s));
    void* allocated = nullptr;
    switch (c) {
      case PinCall::kHostAlloc: *call = cudaHostAlloc(&allocated, 4096, 0); break;
      case PinCall::kHostRegister: *call = cudaHostRegister(page, 4096, 0); break;
      case PinCall::kFreeHost: *call = cudaFreeHost(pinned); break;
      case PinCall::kHostUnregister: *call = cudaHostUnregister(page); break;
    }
    if (c == PinCall::kHostAlloc && *call == cudaSuccess) own_pinned = PinnedBuffer::Adopt(allocated);
    if (c == PinCall::kHostRegister && *call == cudaSuccess) own_page = HostRegistration::Adopt(page);
    if (c == PinCall::kFreeHost && *call == cudaSuccess) own_pinned.release();
    if (c == PinCall::kHostUnregister && *call == cudaSuccess) own_page.release();
    cudaGraph_t graph = nullptr;
    *end = cudaStreamEndCapture(s, &graph);
    (void)cudaGetLastError();  // a rejected call leaves its error behind (R87)
    if (graph) {
      EXPECT_CUDA_OK(OwnedGraph::Adopt(graph).Free());
    }
    EXPECT_CUDA_OK(own_s.Free());
    EXPECT_CUDA_OK(own_scratch.Free());
    // Undo what the call did, or what it failed to undo.
    EXPECT_CUDA_OK(own_pinned.Free());
    EXPECT_CUDA_OK(own_page.Free());
  }
};

TEST_P(CaptureTest, PinningCallDuringCaptureIsRejectedConsistentlyOrAllowed) {
  PAGELOCK_RULE("R87,S12");
  const PinCall c = std::get<0>(GetParam());
  const cudaStreamCaptureMode mode = std::get<1>(GetParam());
  if (c == PinCall::kHostRegister || c == PinCall::kHostUnregister) {
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  }
  cudaError_t call = cudaSuccess, end = cudaSuccess;
  CallDuringCapture(c, mode, &call, &end);
  if (HasFatalFailure()) return;
  Observe("call", ErrName(call));
  Observe("end_capture", ErrName(end));
  if (call != cudaSuccess) {
    // A prohibited call is cudaErrorStreamCaptureUnsupported; a call that would synchronise
    // implicitly with the capturing stream is cudaErrorStreamCaptureImplicit. Anything else is wrong.
    EXPECT_TRUE(call == cudaErrorStreamCaptureUnsupported || call == cudaErrorStreamCaptureImplicit)
        << PinCallName(c) << " during capture failed with " << ErrName(call)
        << ", not a capture error (cudaErrorStreamCaptureUnsupported or cudaErrorStreamCaptureImplicit)";
    EXPECT_EQ(ErrName(end), ErrName(cudaErrorStreamCaptureInvalidated))
        << "a call rejected during capture must invalidate the capture";
  } else {
    EXPECT_EQ(ErrName(end), ErrName(cudaSuccess)) << "the call was allowed, yet the capture failed";
  }
  // Relaxed mode does not prohibit unsafe calls: allocating and registering must work.
  if (mode == cudaStreamCaptureModeRelaxed && (c == PinCall::kHostAlloc || c == PinCall::kHostRegister)) {
    EXPECT_EQ(ErrName(call), ErrName(cudaSuccess)) << PinCallName(c) << " in a relaxed-mode capture";
  }
  // Afterwards pinning works as usual.
  void* p = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&p, 4096, 0));
  EXPECT_CUDA_OK(cudaFreeHost(p));  // the call under test: pinning works after the capture
}


INSTANTIATE_TEST_SUITE_P(
    CallsAndModes, CaptureTest,
    ::testing::Combine(::testing::Values(PinCall::kHostAlloc, PinCall::kHostRegister, PinCall::kFreeHost,
                                         PinCall::kHostUnregister),
                       ::testing::Values(cudaStreamCaptureModeGlobal, cudaStreamCaptureModeRelaxed)),
    [](const auto& info) {
      return PinCallName(std::get<0>(info.param)) +
             (std::get<1>(info.param) == cudaStreamCaptureModeGlobal ? "_Global" : "_Relaxed");
    });

}  // namespace
}  // namespace pagelock
