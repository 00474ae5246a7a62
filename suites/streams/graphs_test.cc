// Pinned and mapped memory inside CUDA graphs, and pinning calls during stream capture.
//   - A captured graph (H2D copy from page-locked memory, a kernel on device memory, D2H copy,
//     then a kernel node on the destination's mapped alias) replayed many times, the host
//     rewriting the source between replays: every replay delivers the source's current bytes.
//   - cudaMalloc (the call the docs name unsafe during capture) in a global- or thread-local-mode
//     capture of the calling thread: cudaErrorStreamCaptureUnsupported, and the capture is
//     invalidated; in relaxed mode it succeeds. From another thread it is prohibited only by a
//     global-mode capture.
//   - cudaHostAlloc / cudaMallocHost / cudaHostRegister / cudaFreeHost / cudaHostUnregister (not
//     named unsafe) during a capture: the code is recorded; a call that fails must fail with a
//     capture error (cudaErrorStreamCaptureUnsupported or ...Implicit) and invalidate the
//     capture. In relaxed mode allocation and registration are not prohibited and must succeed.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

using streams::MemName;


constexpr size_t kBytes = (size_t{64} << 10) + 3;
constexpr int kReplays = 100;

class GraphReplayTest : public GpuTest, public ::testing::WithParamInterface<std::tuple<HostKind, bool>> {};

TEST_P(GraphReplayTest, EveryReplayDeliversTheSourcesCurrentBytes) {
  PAGELOCK_RULE("R14,R75,S11");
  const HostKind m = std::get<0>(GetParam());
  const bool device_alias = std::get<1>(GetParam());
  if (IsRegistered(m)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  Budget("graph_replays", kReplays, "count");
  std::string why;
  auto src = KindBuffer::Make(m, kBytes, &why);
  ASSERT_NE(src, nullptr) << why;
  // Write-combined memory is a source only (host reads of it are slow, R16).
  auto dst = KindBuffer::Make(m == HostKind::kHostAllocMappedWriteCombined ? HostKind::kHostAllocMapped : m, kBytes, &why);
  ASSERT_NE(dst, nullptr) << why;
  auto dev = KindBuffer::Make(HostKind::kDevice, kBytes, &why);
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
                         ::testing::Values(std::make_tuple(HostKind::kHostAllocDefault, false),
                                           std::make_tuple(HostKind::kRegisteredMalloc, false),
                                           std::make_tuple(HostKind::kRegisteredMalloc, true),
                                           std::make_tuple(HostKind::kHostAllocMappedWriteCombined, false)),
                         [](const auto& info) {
                           return MemName(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_DeviceAlias" : "_HostAlias");
                         });

// A call made during a capture: one that makes memory of a kind (cudaHostAlloc, cudaMallocHost,
// cudaHostRegister of a page of heap memory, cudaMalloc) or releases it (cudaFreeHost,
// cudaHostUnregister).
struct CaptureCall {
  HostKind kind;
  bool release = false;
  bool operator==(const CaptureCall& o) const { return kind == o.kind && release == o.release; }
};
constexpr CaptureCall kHostAlloc{HostKind::kHostAllocDefault};
constexpr CaptureCall kMallocHost{HostKind::kMallocHost};
constexpr CaptureCall kHostRegister{HostKind::kRegisteredMalloc};
constexpr CaptureCall kFreeHost{HostKind::kHostAllocDefault, true};
constexpr CaptureCall kHostUnregister{HostKind::kRegisteredMalloc, true};
constexpr CaptureCall kMalloc{HostKind::kDevice};

std::string CaptureCallName(CaptureCall c) {
  if (c.release) return IsRegistered(c.kind) ? "HostUnregister" : "FreeHost";
  if (c.kind == HostKind::kDevice) return "Malloc";
  return IsRegistered(c.kind) ? "HostRegister" : c.kind == HostKind::kMallocHost ? "MallocHost" : "HostAlloc";
}
void PrintTo(const CaptureCall& c, std::ostream* os) { *os << CaptureCallName(c); }

std::string ModeName(cudaStreamCaptureMode m) {
  return m == cudaStreamCaptureModeGlobal ? "Global" : m == cudaStreamCaptureModeThreadLocal ? "ThreadLocal" : "Relaxed";
}

// cudaThreadExchangeStreamCaptureMode: "During stream capture ..., some actions, such as a call to
// cudaMalloc, may be unsafe. ... stream capture places restrictions on API calls that can be made
// within or concurrently to a cudaStreamBeginCapture-cudaStreamEndCapture sequence." The modes:
//   Global: "If the local thread has an ongoing capture sequence that was not initiated with
//     cudaStreamCaptureModeRelaxed ..., or if any other thread has a concurrent capture sequence
//     initiated with cudaStreamCaptureModeGlobal, this thread is prohibited from potentially
//     unsafe API calls."
//   ThreadLocal: "... Concurrent capture sequences in other threads are ignored."
//   Relaxed: "The local thread is not prohibited from potentially unsafe API calls."
// Programming guide (Invalidation): "When an invalid operation is attempted during stream
// capture, any associated capture graphs are invalidated", and cudaStreamEndCapture then
// "will also return an error value and a NULL graph".
// cudaMalloc is the call the docs name as unsafe. They do not name cudaMallocHost, cudaHostAlloc,
// cudaHostRegister, cudaFreeHost or cudaHostUnregister: whether those are rejected stays an
// observation; only a rejection's form (a capture error that invalidates the capture) is a rule.
bool NamedUnsafe(CaptureCall c) { return c == kMalloc; }

// The thread's code for `c` on the prepared memory; what it made is handed to the owners.
struct CallTarget {
  std::vector<unsigned char> heap = std::vector<unsigned char>(2 * 4096);  // released last
  void* page = nullptr;    // a page of heap memory (register / unregister)
  void* pinned = nullptr;  // a page-locked page (free)
  PinnedBuffer own_pinned;
  HostRegistration own_page;
  DeviceBuffer own_device;

  cudaError_t Run(CaptureCall c) {
    void* made = nullptr;
    cudaError_t e = cudaSuccess;
    if (c == kHostAlloc) e = cudaHostAlloc(&made, 4096, 0);
    if (c == kMallocHost) e = cudaMallocHost(&made, 4096);
    if (c == kHostRegister) e = cudaHostRegister(page, 4096, 0);
    if (c == kFreeHost) e = cudaFreeHost(pinned);
    if (c == kHostUnregister) e = cudaHostUnregister(page);
    if (c == kMalloc) e = cudaMalloc(&made, 4096);
    if (e != cudaSuccess) return e;
    if (c == kHostAlloc || c == kMallocHost) own_pinned = PinnedBuffer::Adopt(made);
    if (c == kMalloc) own_device = DeviceBuffer::Adopt(made);
    if (c == kHostRegister) own_page = HostRegistration::Adopt(page);
    if (c == kFreeHost) own_pinned.release();
    if (c == kHostUnregister) own_page.release();
    return e;
  }
};

class CaptureTest : public GpuTest, public ::testing::WithParamInterface<std::tuple<CaptureCall, cudaStreamCaptureMode>> {
 protected:
  // Runs the call inside a capture of `mode` (one kernel captured first), in this thread or in
  // another one (whose own mode is the default, Global), and returns its code and the code of
  // cudaStreamEndCapture. Cleans up whatever the call left behind.
  void CallDuringCapture(CaptureCall c, cudaStreamCaptureMode mode, bool other_thread, cudaError_t* call,
                         cudaError_t* end) {
    // Shared with the other thread: a call that hangs there keeps what it uses alive.
    const auto target = std::make_shared<CallTarget>();
    CallTarget& t = *target;
    t.page = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(t.heap.data()) + 4095) & ~uintptr_t{4095});
    // The owners release on an early return; the undo below keeps its order and checks.
    if (c == kFreeHost) {
      ASSERT_CUDA_OK(cudaHostAlloc(&t.pinned, 4096, 0));
      t.own_pinned = PinnedBuffer::Adopt(t.pinned);
    }
    if (c == kHostUnregister) {
      ASSERT_CUDA_OK(cudaHostRegister(t.page, 4096, 0));
      t.own_page = HostRegistration::Adopt(t.page);
    }
    void* scratch = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&scratch, 4096));
    auto own_scratch = DeviceBuffer::Adopt(scratch);
    cudaStream_t s = nullptr;
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    auto own_s = OwnedStream::Adopt(s);
    ASSERT_CUDA_OK(cudaStreamBeginCapture(s, mode));
    ASSERT_CUDA_OK(LaunchInvertBytes(scratch, 4096, s));
    if (other_thread) {
      // The other thread's call is bounded: a hang fails the case (the thread is left behind).
      auto done = std::make_shared<std::promise<cudaError_t>>();
      std::future<cudaError_t> result = done->get_future();
      std::thread([done, target, c] {
        // No cudaSetDevice: a new thread's current device is device 0 already, and no other call
        // should stand between the capture and the call under test.
        const cudaError_t e = target->Run(c);
        (void)cudaGetLastError();  // that thread's last error, not the case's
        done->set_value(e);
      }).detach();
      if (result.wait_for(std::chrono::duration<double>(10 * TimeScale())) != std::future_status::ready) {
        cudaGraph_t g = nullptr;
        (void)cudaStreamEndCapture(s, &g);
        FAIL() << CaptureCallName(c) << " from another thread during a capture did not return within "
               << 10 * TimeScale() << " s";
      }
      *call = result.get();
    } else {
      *call = t.Run(c);
    }
    cudaGraph_t graph = nullptr;
    *end = cudaStreamEndCapture(s, &graph);
    (void)cudaGetLastError();  // a rejected call leaves its error behind (R87)
    if (*end != cudaSuccess) {
      EXPECT_EQ(graph, nullptr) << "a failed cudaStreamEndCapture returned a graph";
    }
    if (graph) {
      EXPECT_CUDA_OK(OwnedGraph::Adopt(graph).Free());
    }
    EXPECT_CUDA_OK(own_s.Free());
    EXPECT_CUDA_OK(own_scratch.Free());
    // Undo what the call did, or what it failed to undo.
    EXPECT_CUDA_OK(t.own_device.Free());
    EXPECT_CUDA_OK(t.own_pinned.Free());
    EXPECT_CUDA_OK(t.own_page.Free());
  }

  void RequireFor(CaptureCall c) {
    if (c == kHostRegister || c == kHostUnregister) {
      PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
    }
  }

  // Afterwards pinning works as usual.
  void PinningStillWorks() {
    void* p = nullptr;
    ASSERT_CUDA_OK(cudaHostAlloc(&p, 4096, 0));
    EXPECT_CUDA_OK(cudaFreeHost(p));  // the call under test: pinning works after the capture
  }
};

// In the capturing thread. A driver that rejects cudaMalloc in a relaxed capture, accepts it in
// a global or thread-local one, rejects a call with an error that is not a capture error, or
// lets a capture whose call it rejected end with a graph fails this.
TEST_P(CaptureTest, PinningCallDuringCaptureIsRejectedConsistentlyOrAllowed) {
  PAGELOCK_RULE("R87,S12,S23");
  const CaptureCall c = std::get<0>(GetParam());
  const cudaStreamCaptureMode mode = std::get<1>(GetParam());
  RequireFor(c);
  cudaError_t call = cudaSuccess, end = cudaSuccess;
  CallDuringCapture(c, mode, /*other_thread=*/false, &call, &end);
  if (HasFatalFailure()) return;
  Observe("end_capture", ErrName(end));
  const bool asserted = NamedUnsafe(c) || (mode == cudaStreamCaptureModeRelaxed &&
                                           (c == kHostAlloc || c == kMallocHost ||
                                            c == kHostRegister));
  if (asserted) Observe("call", ErrName(call));  // else recorded by EXPECT_DOCUMENTED_ONE_OF below
  if (mode != cudaStreamCaptureModeRelaxed && NamedUnsafe(c)) {
    // Prohibited in this thread: the capture error, and the capture is invalidated.
    EXPECT_EQ(ErrName(call), ErrName(cudaErrorStreamCaptureUnsupported))
        << CaptureCallName(c) << " in a " << ModeName(mode) << "-mode capture of this thread";
    EXPECT_EQ(ErrName(end), ErrName(cudaErrorStreamCaptureInvalidated))
        << "a call rejected during capture must invalidate the capture";
  } else if (asserted) {
    // Relaxed mode does not prohibit unsafe calls: allocating and registering must work.
    EXPECT_EQ(ErrName(call), ErrName(cudaSuccess)) << CaptureCallName(c) << " in a relaxed-mode capture";
    EXPECT_EQ(ErrName(end), ErrName(cudaSuccess)) << "the call was allowed, yet the capture failed";
  } else {
    // Not named unsafe: either outcome is allowed (recorded); a rejection must be the capture
    // error (cudaErrorStreamCaptureUnsupported, or ...Implicit for a call that would synchronise
    // implicitly with the capturing stream) and invalidate the capture.
    EXPECT_DOCUMENTED_ONE_OF("call", call,
                             (std::vector<cudaError_t>{cudaSuccess, cudaErrorStreamCaptureUnsupported,
                                                       cudaErrorStreamCaptureImplicit}),
                             "cudaThreadExchangeStreamCaptureMode names only cudaMalloc as unsafe");
    if (call != cudaSuccess) {
      EXPECT_EQ(ErrName(end), ErrName(cudaErrorStreamCaptureInvalidated))
          << "a call rejected during capture must invalidate the capture";
    } else {
      EXPECT_EQ(ErrName(end), ErrName(cudaSuccess)) << "the call was allowed, yet the capture failed";
    }
  }
  PinningStillWorks();
}

INSTANTIATE_TEST_SUITE_P(
    CallsAndModes, CaptureTest,
    ::testing::Combine(::testing::Values(kHostAlloc, kMallocHost, kHostRegister,
                                         kFreeHost, kHostUnregister, kMalloc),
                       ::testing::Values(cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal,
                                         cudaStreamCaptureModeRelaxed)),
    [](const auto& info) { return CaptureCallName(std::get<0>(info.param)) + "_" + ModeName(std::get<1>(info.param)); });

class CaptureOtherThreadTest : public CaptureTest {};

// From another thread (its own mode the default, Global) while this thread captures: under a
// global capture an unsafe call is prohibited there too; under a thread-local or relaxed one the
// other thread is not affected and the capture ends with its graph. A driver that lets another
// thread's cudaMalloc through a global capture, or rejects it (or breaks the capture) under a
// thread-local or relaxed one, fails this.
TEST_P(CaptureOtherThreadTest, CallFromAnotherThreadIsProhibitedOnlyByAGlobalCapture) {
  PAGELOCK_RULE("S12,S23");
  const CaptureCall c = std::get<0>(GetParam());
  const cudaStreamCaptureMode mode = std::get<1>(GetParam());
  RequireFor(c);
  cudaError_t call = cudaSuccess, end = cudaSuccess;
  CallDuringCapture(c, mode, /*other_thread=*/true, &call, &end);
  if (HasFatalFailure()) return;
  if (mode != cudaStreamCaptureModeGlobal || NamedUnsafe(c)) Observe("call", ErrName(call));
  if (mode != cudaStreamCaptureModeGlobal) {
    Observe("end_capture", ErrName(end));
    EXPECT_EQ(ErrName(call), ErrName(cudaSuccess))
        << CaptureCallName(c) << " from another thread during a " << ModeName(mode) << "-mode capture";
    EXPECT_EQ(ErrName(end), ErrName(cudaSuccess)) << "another thread's allowed call broke the capture";
  } else {
    if (NamedUnsafe(c)) {
      EXPECT_EQ(ErrName(call), ErrName(cudaErrorStreamCaptureUnsupported))
          << CaptureCallName(c) << " from another thread during a global-mode capture";
    } else {
      EXPECT_DOCUMENTED_ONE_OF("call", call,
                               (std::vector<cudaError_t>{cudaSuccess, cudaErrorStreamCaptureUnsupported,
                                                         cudaErrorStreamCaptureImplicit}),
                               "cudaThreadExchangeStreamCaptureMode names only cudaMalloc as unsafe");
    }
    // Whether another thread's rejected call is "associated" with (and invalidates) the capture
    // the docs do not say: recorded.
    EXPECT_DOCUMENTED_ONE_OF("end_capture", end, (std::vector<cudaError_t>{cudaSuccess, cudaErrorStreamCaptureInvalidated}),
                             "programming guide, stream capture: invalidation of associated captures");
    if (call == cudaSuccess) {
      EXPECT_EQ(ErrName(end), ErrName(cudaSuccess)) << "the call was allowed, yet the capture failed";
    }
  }
  PinningStillWorks();
}

INSTANTIATE_TEST_SUITE_P(
    CallsAndModes, CaptureOtherThreadTest,
    ::testing::Combine(::testing::Values(kMalloc, kHostAlloc, kHostRegister),
                       ::testing::Values(cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal,
                                         cudaStreamCaptureModeRelaxed)),
    [](const auto& info) { return CaptureCallName(std::get<0>(info.param)) + "_" + ModeName(std::get<1>(info.param)); });

}  // namespace
}  // namespace pagelock
