// Batch copies (peer gap K10; cuda-python's test_copy_batch.py and test_copy_batch_options.py):
// cudaMemcpyBatchAsync and cuMemcpyBatchAsync (13.0's form, and 12.8's with failIdx through the
// driver's 12.8 entry point) over every host-memory kind (pinned, mapped, portable,
// write-combined, registered heap, mmap and memfd, pageable) and device memory, in every
// direction, at sizes from 1 byte to 1 MiB + 13 at odd offsets, with each srcAccessOrder:
//   - a mixed batch (device sources in stream order, host sources in the order under test, two
//     attribute groups) on the per-thread, a created blocking and a created non-blocking stream
//     delivers every byte of every copy and leaves 64 guard bytes either side alone;
//   - on a stream held by a kernel, sources rewritten by the host right after the call returns:
//     cudaMemcpySrcAccessOrderDuringApiCall copies hold the bytes of the call (a stack array among
//     the sources), cudaMemcpySrcAccessOrderStream copies of page-locked sources hold the bytes
//     the host wrote before the stream reached them;
//   - the location hints and cudaMemcpyFlagPreferOverlapWithCompute change no byte (managed
//     memory too, where the hints apply);
//   - the documented errors by name (an invalid srcAccessOrder, attrsIdxs breaking its rules,
//     numAttrs above count, the legacy stream, a null destination with failIdx naming it) leave
//     no error behind; an empty batch and size-0 copies give a documented result.
// Built against a runtime older than 12.8, every case is NotSupported naming CUDART_VERSION; a
// driver entry point the driver lacks is NotSupported naming it. Rule ids refer to
// suites/rules.tsv.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
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

#if CUDART_VERSION >= 12080 && CUDA_VERSION >= 12080
#define PAGELOCK_BATCH_COPY 1
#endif

namespace pagelock {
namespace {

using streams::MemName;

enum class Api { kRuntime, kDriver, kDriverFailIdx };
enum class Order { kStream = 1, kDuringApiCall = 2, kAny = 3 };  // the enums' documented values

constexpr size_t kGuard = 64;
constexpr unsigned char kPoison = 0xa5;
// failIdx before the call: a value no answer can have (SIZE_MAX is the documented "no copy").
constexpr size_t kFailUnset = SIZE_MAX - 1;

// One copy of a batch: where it reads and writes, and the seed of its source's bytes.
struct Copy {
  KindBuffer* src = nullptr;
  KindBuffer* dst = nullptr;
  size_t src_off = 0, dst_off = 0, size = 0;
  uint32_t seed = 0;
};

// A batch as the APIs take it; the counts passed are explicit so the error cases can lie.
struct Batch {
  std::vector<void*> dsts, srcs;
  std::vector<size_t> sizes;
  std::vector<int> orders;  // one srcAccessOrder per attribute entry (raw, so invalid ones fit)
  std::vector<size_t> idxs;
  std::vector<unsigned> flags;
  bool hints = false;  // srcLocHint device 0, dstLocHint host
  void Add(void* dst, const void* src, size_t n) {
    dsts.push_back(dst);
    srcs.push_back(const_cast<void*>(src));
    sizes.push_back(n);
  }
  void Group(size_t first, int order, unsigned f = 0) {
    idxs.push_back(first);
    orders.push_back(order);
    flags.push_back(f);
  }
};

class BatchCopyTest : public DriverApiGpuTest {
 protected:
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireRuntimeApi(12080, "cudaMemcpyBatchAsync"));
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));  // the registered kinds
    ASSERT_CUDA_OK(checker_.status());
  }

#ifdef PAGELOCK_BATCH_COPY
  using DriverV2 = CUresult (*)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*, size_t*, size_t,
                                CUstream);
  using DriverV1 = CUresult (*)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*, size_t*, size_t,
                                size_t*, CUstream);

  // NotSupported (and false) when the driver lacks the entry point `api` needs: cuMemcpyBatchAsync
  // at 13000 (no failIdx) or at 12080 (with failIdx). The caller returns on false.
  bool Usable(Api api) {
    std::string why;
    if (api == Api::kDriver && !v2_) v2_ = reinterpret_cast<DriverV2>(DriverEntryPoint("cuMemcpyBatchAsync", 13000, &why));
    if (api == Api::kDriverFailIdx && !v1_) {
      v1_ = reinterpret_cast<DriverV1>(DriverEntryPoint("cuMemcpyBatchAsync", 12080, &why));
    }
    if (api == Api::kRuntime || (api == Api::kDriver ? v2_ != nullptr : v1_ != nullptr)) return true;
    [&] { PAGELOCK_NOT_SUPPORTED(why + " (cuMemcpyBatchAsync at " + (api == Api::kDriver ? "13000" : "12080") + ")"); }();
    return false;
  }

  // Issues the batch with `count` copies and `num_attrs` attribute entries. A driver result is
  // returned as the runtime code of the same number (equal since CUDA 10.1, R02). *fail_idx gets
  // the driver's failIdx where the API has one, and stays kFailUnset where it has none.
  cudaError_t Issue(Api api, Batch& b, size_t count, size_t num_attrs, cudaStream_t s, size_t* fail_idx) {
    *fail_idx = kFailUnset;
    if (api == Api::kRuntime) {
      std::vector<cudaMemcpyAttributes> attrs(b.orders.size());
      for (size_t i = 0; i < attrs.size(); ++i) {
        attrs[i] = cudaMemcpyAttributes{};
        attrs[i].srcAccessOrder = static_cast<cudaMemcpySrcAccessOrder>(b.orders[i]);
        attrs[i].flags = b.flags[i];
        if (b.hints) {
          attrs[i].srcLocHint.type = cudaMemLocationTypeDevice;
          attrs[i].srcLocHint.id = 0;
          attrs[i].dstLocHint.type = cudaMemLocationTypeHost;
        }
      }
#if CUDART_VERSION >= 13000
      // copy-check: every caller counts each copy's destination (ExpectDelivered)
      return cudaMemcpyBatchAsync(b.dsts.data(), b.srcs.data(), b.sizes.data(), count, attrs.data(), b.idxs.data(),
                                  num_attrs, s);
#else  // 12.8 and 12.9: failIdx before the stream
      // copy-check: every caller counts each copy's destination (ExpectDelivered)
      return cudaMemcpyBatchAsync(b.dsts.data(), b.srcs.data(), b.sizes.data(), count, attrs.data(), b.idxs.data(),
                                  num_attrs, fail_idx, s);
#endif
    }
    std::vector<CUmemcpyAttributes> attrs(b.orders.size());
    for (size_t i = 0; i < attrs.size(); ++i) {
      attrs[i] = CUmemcpyAttributes{};
      attrs[i].srcAccessOrder = static_cast<CUmemcpySrcAccessOrder>(b.orders[i]);
      attrs[i].flags = b.flags[i];
      if (b.hints) {
        attrs[i].srcLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
        attrs[i].srcLocHint.id = 0;
        attrs[i].dstLocHint.type = CU_MEM_LOCATION_TYPE_HOST;
      }
    }
    std::vector<CUdeviceptr> dsts, srcs;
    for (void* p : b.dsts) dsts.push_back(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)));
    for (void* p : b.srcs) srcs.push_back(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)));
    const CUresult r = api == Api::kDriver
                           ? v2_(dsts.data(), srcs.data(), b.sizes.data(), count, attrs.data(), b.idxs.data(), num_attrs, s)
                           : v1_(dsts.data(), srcs.data(), b.sizes.data(), count, attrs.data(), b.idxs.data(), num_attrs,
                                 fail_idx, s);
    return static_cast<cudaError_t>(r);
  }
  cudaError_t Issue(Api api, Batch& b, cudaStream_t s, size_t* fail_idx) {
    return Issue(api, b, b.sizes.size(), b.orders.size(), s, fail_idx);
  }
#endif  // PAGELOCK_BATCH_COPY

  // Pools are made in the order of streams::HostMems(), device memory last.
  struct InMatrixOrder {
    static size_t Rank(HostKind k) {
      const auto& v = streams::HostMems();
      return static_cast<size_t>(std::find(v.begin(), v.end(), k) - v.begin());
    }
    bool operator()(HostKind a, HostKind b) const { return Rank(a) < Rank(b); }
  };
  // A buffer of `kind` holding every window planned in it: Plan() the windows first, then Make().
  struct Pool {
    HostKind kind;
    size_t used = 0;
    std::unique_ptr<KindBuffer> buf;
  };
  // Reserves `n` bytes (with guards either side, at an odd offset) in the pool of `kind`.
  size_t Plan(std::map<HostKind, Pool, InMatrixOrder>* pools, HostKind kind, size_t n) {
    Pool& p = (*pools)[kind];
    p.kind = kind;
    const size_t off = p.used + kGuard + 1 + (p.used / 7) % 13;
    p.used = off + n + kGuard;
    return off;
  }
  void Make(std::map<HostKind, Pool, InMatrixOrder>* pools) {
    for (auto& [kind, p] : *pools) {
      std::string why;
      p.buf = KindBuffer::Make(kind, p.used, &why);
      ASSERT_NE(p.buf, nullptr) << why;
      ASSERT_CUDA_OK(checker_.FillByte(*p.buf, 0, p.used, kPoison));
    }
  }

  // The copy's destination holds its source's bytes, and the guards either side the poison.
  void ExpectDelivered(const Copy& c, const std::string& what) {
    size_t bad = 0;
    ASSERT_CUDA_OK(checker_.CountPattern(*c.dst, c.dst_off, c.size, 0, c.seed, &bad));
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << c.size << " bytes differ (" << MemName(c.src->kind())
                       << " -> " << MemName(c.dst->kind()) << ")";
    ExpectGuards(c, what);
  }
  void ExpectGuards(const Copy& c, const std::string& what) {
    size_t before = 0, after = 0;
    ASSERT_CUDA_OK(checker_.CountByte(*c.dst, c.dst_off - kGuard, kGuard, kPoison, &before));
    ASSERT_CUDA_OK(checker_.CountByte(*c.dst, c.dst_off + c.size, kGuard, kPoison, &after));
    EXPECT_EQ(before + after, 0u) << what << ": bytes next to the window changed (" << before << " before, " << after
                                  << " after)";
  }
  void FillSource(Copy* c) {
    c->seed = static_cast<uint32_t>(CaseRng()());
    ASSERT_CUDA_OK(checker_.FillPattern(*c->src, c->src_off, c->size, 0, c->seed));
  }

  streams::Checker checker_;
#ifdef PAGELOCK_BATCH_COPY
  DriverV2 v2_ = nullptr;
  DriverV1 v1_ = nullptr;
#endif
};

#ifdef PAGELOCK_BATCH_COPY

std::string ApiName(Api a) {
  return a == Api::kRuntime ? "Runtime" : a == Api::kDriver ? "Driver" : "Driver12080FailIdx";
}
std::string OrderName(Order o) {
  return o == Order::kStream ? "Stream" : o == Order::kDuringApiCall ? "DuringApiCall" : "Any";
}

// Sizes where copies change path (a byte, a page and around it, 64 KiB and 1 MiB past).
const std::vector<size_t> kSizes = {1, 3, 4095, 4097, 65537, (size_t{1} << 20) + 13};

// Every host kind and device memory both ways, device to device, and host to host.
std::vector<std::pair<HostKind, HostKind>> Pairs() {
  std::vector<std::pair<HostKind, HostKind>> v;
  for (HostKind m : streams::HostMems()) {
    v.push_back({m, HostKind::kDevice});
    v.push_back({HostKind::kDevice, m});
  }
  v.push_back({HostKind::kDevice, HostKind::kDevice});
  v.push_back({HostKind::kHostAllocDefault, HostKind::kPageable});
  v.push_back({HostKind::kPageable, HostKind::kHostAllocDefault});
  v.push_back({HostKind::kRegisteredMmap, HostKind::kHostAllocMapped});
  return v;
}

class MixedBatchTest : public BatchCopyTest,
                       public ::testing::WithParamInterface<std::tuple<Api, Order, StreamKind>> {};

// A driver that drops, truncates, reorders onto the wrong destination or overruns any copy of a
// batch, that applies one attribute entry to the wrong copies, or that mishandles one memory kind
// or stream kind fails this. cudaMemcpyBatchAsync: "Performs memory copies from source buffers
// specified in srcs to destination buffers specified in dsts. The size of each copy is specified
// in sizes"; "The attributes specified in attrs[k] will be applied to copies starting from
// attrsIdxs[k] through attrsIdxs[k+1] - 1"; "The batch as a whole executes in stream order".
// Device sources take stream order; host sources the order under test (DuringApiCall and Any
// are described for host sources: "stack variables", "host pointers allocated outside CUDA").
TEST_P(MixedBatchTest, EveryCopyOfAMixedBatchDeliversItsBytes) {
  PAGELOCK_RULE("S24");
  const Api api = std::get<0>(GetParam());
  const Order order = std::get<1>(GetParam());
  if (!Usable(api)) return;
  KindStream stream(std::get<2>(GetParam()));
  ASSERT_CUDA_OK(stream.status());
  std::map<HostKind, Pool, InMatrixOrder> src_pools, dst_pools;
  std::vector<std::pair<HostKind, HostKind>> pairs = Pairs();
  // Group 0: device sources; group 1: host sources (contiguous, as attrsIdxs requires).
  std::stable_partition(pairs.begin(), pairs.end(), [](const auto& p) { return p.first == HostKind::kDevice; });
  std::vector<Copy> copies(pairs.size());
  const size_t shift = CaseRng()() % kSizes.size();
  for (size_t i = 0; i < pairs.size(); ++i) {
    copies[i].size = kSizes[(i + shift) % kSizes.size()];
    copies[i].src_off = Plan(&src_pools, pairs[i].first, copies[i].size);
    copies[i].dst_off = Plan(&dst_pools, pairs[i].second, copies[i].size);
  }
  Make(&src_pools);
  Make(&dst_pools);
  if (HasFatalFailure()) return;
  Batch b;
  size_t first_host = pairs.size();
  for (size_t i = 0; i < pairs.size(); ++i) {
    Copy& c = copies[i];
    c.src = src_pools[pairs[i].first].buf.get();
    c.dst = dst_pools[pairs[i].second].buf.get();
    FillSource(&c);
    b.Add(c.dst->ptr() + c.dst_off, c.src->ptr() + c.src_off, c.size);
    if (pairs[i].first != HostKind::kDevice && first_host == pairs.size()) first_host = i;
  }
  if (HasFatalFailure()) return;
  b.Group(0, static_cast<int>(Order::kStream));
  b.Group(first_host, static_cast<int>(order));
  Budget("copies_in_batch", static_cast<double>(copies.size()), "count");
  size_t fail_idx = kFailUnset;
  ASSERT_CUDA_OK(Issue(api, b, stream.get(), &fail_idx));
  ASSERT_CUDA_OK(streams::PollStream(stream.get(), 30));
  for (size_t i = 0; i < copies.size(); ++i) ExpectDelivered(copies[i], "copy " + std::to_string(i));
}

INSTANTIATE_TEST_SUITE_P(
    RuntimeOnEveryStreamKind, MixedBatchTest,
    ::testing::Combine(::testing::Values(Api::kRuntime),
                       ::testing::Values(Order::kStream, Order::kDuringApiCall, Order::kAny),
                       ::testing::Values(StreamKind::kPerThreadDefault, StreamKind::kBlocking, StreamKind::kNonBlocking)),
    [](const auto& info) {
      return ApiName(std::get<0>(info.param)) + "_" + OrderName(std::get<1>(info.param)) + "_" +
             StreamKindName(std::get<2>(info.param));
    });
INSTANTIATE_TEST_SUITE_P(
    Driver, MixedBatchTest,
    ::testing::Combine(::testing::Values(Api::kDriver, Api::kDriverFailIdx),
                       ::testing::Values(Order::kStream, Order::kDuringApiCall, Order::kAny),
                       ::testing::Values(StreamKind::kNonBlocking)),
    [](const auto& info) {
      return ApiName(std::get<0>(info.param)) + "_" + OrderName(std::get<1>(info.param)) + "_" +
             StreamKindName(std::get<2>(info.param));
    });

// Overwrites the stack below the caller's frame, where a returned function's locals were.
__attribute__((noinline)) void ScribbleStack() {
  volatile unsigned char junk[64 << 10];
  for (size_t i = 0; i < sizeof junk; ++i) junk[i] = static_cast<unsigned char>(i * 7 + 1);
}

class HeldStreamBatchTest : public BatchCopyTest, public ::testing::WithParamInterface<std::tuple<Api, Order>> {
 protected:
  // Issues `b` plus one copy from a stack array (DuringApiCall: "suited for ephemeral sources
  // (ex., stack variables)") into `stack_dst`; the array dies when this returns.
  __attribute__((noinline)) cudaError_t IssueWithStackSource(Api api, Batch b, void* stack_dst, size_t n,
                                                             uint32_t seed, cudaStream_t s, size_t* fail_idx) {
    unsigned char stack_src[(4 << 10) + 13];
    HostFillPattern(stack_src, n, seed);
    b.Add(stack_dst, stack_src, n);
    const cudaError_t e = Issue(api, b, s, fail_idx);
    std::memset(stack_src, 0, sizeof stack_src);  // the caller may reuse its sources now
    return e;
  }
};

// The order promises when the source is read. A driver that reads a DuringApiCall source after
// the call returned (in stream order, behind the held work) delivers the host's later bytes and
// fails; so does one that reads a Stream-order source at the call, before the stream reached the
// copy. cudaMemcpySrcAccessOrderDuringApiCall: "all accesses must be complete before the API
// call returns ... removes the need for the user to synchronize the stream after the API call";
// cudaMemcpySrcAccessOrderStream: "the source will be accessed in stream order". Stream order is
// checked on page-locked sources only: a pageable source in stream order would make the call
// wait for the held stream. Whether the DuringApiCall call waited for the held stream is a WARN
// (its note says the call is asynchronous "for most use cases", no more).
TEST_P(HeldStreamBatchTest, SourcesRewrittenAfterTheCallHoldTheBytesTheOrderPromises) {
  PAGELOCK_RULE("S25");
  const Api api = std::get<0>(GetParam());
  const Order order = std::get<1>(GetParam());
  if (!Usable(api)) return;
  OwnedStream stream(cudaStreamNonBlocking);
  ASSERT_CUDA_OK(stream.status());
  const bool during = order == Order::kDuringApiCall;
  std::vector<HostKind> kinds;
  for (HostKind m : streams::HostMems()) {
    if (during || IsPinned(m)) kinds.push_back(m);
  }
  std::map<HostKind, Pool, InMatrixOrder> src_pools, dst_pools;
  std::vector<Copy> copies(kinds.size());
  const size_t shift = CaseRng()() % kSizes.size();
  for (size_t i = 0; i < kinds.size(); ++i) {
    copies[i].size = kSizes[(i + shift) % kSizes.size()];
    copies[i].src_off = Plan(&src_pools, kinds[i], copies[i].size);
    copies[i].dst_off = Plan(&dst_pools, HostKind::kDevice, copies[i].size);
  }
  constexpr size_t kStackBytes = (4 << 10) + 13;
  const size_t stack_dst_off = during ? Plan(&dst_pools, HostKind::kDevice, kStackBytes) : 0;
  Make(&src_pools);
  Make(&dst_pools);
  if (HasFatalFailure()) return;
  Batch b;
  for (size_t i = 0; i < kinds.size(); ++i) {
    copies[i].src = src_pools[kinds[i]].buf.get();
    copies[i].dst = dst_pools[HostKind::kDevice].buf.get();
    FillSource(&copies[i]);
    b.Add(copies[i].dst->ptr() + copies[i].dst_off, copies[i].src->ptr() + copies[i].src_off, copies[i].size);
  }
  if (HasFatalFailure()) return;
  b.Group(0, static_cast<int>(order));
  // The stream is held until the call has returned and the host has rewritten every source.
  PinnedBuffer hold = PinnedBuffer::Mapped(2 * sizeof(unsigned));
  ASSERT_CUDA_OK(hold.status());
  auto* flag = hold.as<unsigned>();
  flag[0] = 0;
  flag[1] = kKernelOk;
  // Outlasts the host's rewrite of the sources (milliseconds) by far; it bounds, and so costs, a
  // call that waits for the held stream (the three DuringApiCall cases, whose sources include
  // pageable memory, waited on r580).
  const double hold_s = 2;
  Budget("hold_timeout_s", hold_s * TimeScale(), "s");
  ASSERT_CUDA_OK(LaunchAwaitFlag(reinterpret_cast<unsigned*>(hold.dev()), 1,
                                 static_cast<uint64_t>(hold_s * TimeScale() * 1e9),
                                 reinterpret_cast<unsigned*>(hold.dev()) + 1, stream.get()));
  const uint32_t stack_seed = static_cast<uint32_t>(CaseRng()());
  size_t fail_idx = kFailUnset;
  const auto start = std::chrono::steady_clock::now();
  const cudaError_t e =
      during ? IssueWithStackSource(api, b, dst_pools[HostKind::kDevice].buf->ptr() + stack_dst_off, kStackBytes, stack_seed,
                                    stream.get(), &fail_idx)
             : Issue(api, b, stream.get(), &fail_idx);
  const double call_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ScribbleStack();
  // Every source gets other bytes before the held stream reaches the copies.
  std::vector<uint32_t> later(copies.size());
  for (size_t i = 0; i < copies.size(); ++i) {
    later[i] = copies[i].seed ^ 0x3c3c3c3cu;
    streams::HostFillPatternFrom(copies[i].src->host() + copies[i].src_off, copies[i].size, 0, later[i]);
  }
  __atomic_thread_fence(__ATOMIC_SEQ_CST);  // drain write-combining buffers before the release
  __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
  ASSERT_CUDA_OK(e);
  ASSERT_CUDA_OK(streams::PollStream(stream.get(), 30));
  Observe("batch_call_ms", call_s * 1e3);
  if (flag[1] == kKernelTimedOut) {
    Warn("the batch call returned only after the held stream's kernel gave up (" + std::to_string(call_s) +
         " s): it waited for work queued before it");
  }
  for (size_t i = 0; i < copies.size(); ++i) {
    Copy expect = copies[i];
    if (!during) expect.seed = later[i];  // read when the stream reached it: the later bytes
    ExpectDelivered(expect, OrderName(order) + " copy " + std::to_string(i) + " from " + MemName(kinds[i]) +
                                (flag[1] == kKernelTimedOut ? " (the call waited for the held stream)" : ""));
  }
  if (during) {
    Copy stack;
    stack.src = copies[0].src;  // for the message only
    stack.dst = dst_pools[HostKind::kDevice].buf.get();
    stack.dst_off = stack_dst_off;
    stack.size = kStackBytes;
    stack.seed = stack_seed;
    ExpectDelivered(stack, "the copy from a stack array whose frame was gone when the stream ran");
  }
}

INSTANTIATE_TEST_SUITE_P(EveryApi, HeldStreamBatchTest,
                         ::testing::Combine(::testing::Values(Api::kRuntime, Api::kDriver, Api::kDriverFailIdx),
                                            ::testing::Values(Order::kDuringApiCall, Order::kStream)),
                         [](const auto& info) {
                           return ApiName(std::get<0>(info.param)) + "_" + OrderName(std::get<1>(info.param));
                         });

class BatchApiTest : public BatchCopyTest, public ::testing::WithParamInterface<Api> {
 protected:
  // One pinned-to-device copy, checked: the stream works after a rejected call.
  void ExpectAValidBatchStillWorks(cudaStream_t s, const std::string& after) {
    std::map<HostKind, Pool, InMatrixOrder> pools;
    Copy c;
    c.size = 4097;
    c.src_off = Plan(&pools, HostKind::kHostAllocDefault, c.size);
    c.dst_off = Plan(&pools, HostKind::kDevice, c.size);
    Make(&pools);
    if (HasFatalFailure()) return;
    c.src = pools[HostKind::kHostAllocDefault].buf.get();
    c.dst = pools[HostKind::kDevice].buf.get();
    FillSource(&c);
    Batch b;
    b.Add(c.dst->ptr() + c.dst_off, c.src->ptr() + c.src_off, c.size);
    b.Group(0, static_cast<int>(Order::kStream));
    size_t fail_idx = kFailUnset;
    ASSERT_CUDA_OK(Issue(GetParam(), b, s, &fail_idx)) << "a valid batch after " << after;
    ASSERT_CUDA_OK(streams::PollStream(s, 30));
    ExpectDelivered(c, "a valid batch after " + after);
  }
};

// A driver that accepts a batch the documentation forbids (and then copies with a default or
// garbage order), or rejects it with another code, fails this. cudaMemcpyBatchAsync: "Each memcpy
// operation in the batch must have a valid cudaMemcpyAttributes corresponding to it including
// the appropriate srcAccessOrder setting, otherwise the API will return cudaErrorInvalidValue";
// "the first entry in attrsIdxs must always be 0. Also, each entry must be greater than the
// previous entry and the last entry should be less than count. Furthermore, numAttrs must be
// lesser than or equal to count"; hStream "Must not be legacy NULL stream"; the only error listed
// is cudaErrorInvalidValue. Where the API returns failIdx (12.8's entry point), an error that
// "doesn't pertain to any specific copy" gives SIZE_MAX, and an attribute's error a copy it
// applies to or SIZE_MAX (recorded). Whether a rejected batch wrote any byte is recorded.
TEST_P(BatchApiTest, MisusedAttributesAndTheLegacyStreamAreInvalidValue) {
  PAGELOCK_RULE("S26");
  const Api api = GetParam();
  if (!Usable(api)) return;
  OwnedStream stream(cudaStreamNonBlocking);
  ASSERT_CUDA_OK(stream.status());
  std::map<HostKind, Pool, InMatrixOrder> pools;
  std::vector<Copy> copies(4);
  for (Copy& c : copies) {
    c.size = 4097;
    c.src_off = Plan(&pools, HostKind::kHostAllocDefault, c.size);
    c.dst_off = Plan(&pools, HostKind::kDevice, c.size);
  }
  Make(&pools);
  if (HasFatalFailure()) return;
  for (Copy& c : copies) {
    c.src = pools[HostKind::kHostAllocDefault].buf.get();
    c.dst = pools[HostKind::kDevice].buf.get();
    FillSource(&c);
  }
  auto base = [&] {
    Batch b;
    for (const Copy& c : copies) b.Add(c.dst->ptr() + c.dst_off, c.src->ptr() + c.src_off, c.size);
    return b;
  };
  struct Misuse {
    std::string name;
    Batch batch;
    size_t count, num_attrs;
    cudaStream_t stream;
    // The copies the error pertains to: failIdx is one of them or SIZE_MAX. kNoCopy: SIZE_MAX
    // only; kAnyCopy: whatever it is, recorded (an attrsIdxs error may be charged to the copy
    // left without an attribute).
    size_t first, last;
  };
  constexpr size_t kNoCopy = SIZE_MAX, kAnyCopy = SIZE_MAX - 1;
  std::vector<Misuse> cases;
  const cudaStream_t s = stream.get();
  {
    Batch b = base();
    b.Group(0, static_cast<int>(Order::kStream));
    b.Group(2, 0);  // cudaMemcpySrcAccessOrderInvalid for copies 2 and 3
    cases.push_back({"srcAccessOrder Invalid (0) for copies 2-3", b, 4, 2, s, 2, 3});
  }
  {
    Batch b = base();
    b.Group(0, 4);  // past cudaMemcpySrcAccessOrderAny
    cases.push_back({"srcAccessOrder 4", b, 4, 1, s, 0, 3});
  }
  {
    Batch b = base();
    b.Group(1, static_cast<int>(Order::kStream));
    cases.push_back({"attrsIdxs[0] = 1", b, 4, 1, s, kAnyCopy, kAnyCopy});
  }
  {
    Batch b = base();
    b.Group(0, static_cast<int>(Order::kStream));
    b.Group(2, static_cast<int>(Order::kStream));
    b.Group(2, static_cast<int>(Order::kStream));
    cases.push_back({"attrsIdxs {0, 2, 2} (not increasing)", b, 4, 3, s, kAnyCopy, kAnyCopy});
  }
  {
    Batch b = base();
    b.Group(0, static_cast<int>(Order::kStream));
    b.Group(4, static_cast<int>(Order::kStream));
    cases.push_back({"attrsIdxs {0, 4} with count 4 (last entry not below count)", b, 4, 2, s, kAnyCopy, kAnyCopy});
  }
  {
    Batch b = base();
    for (size_t i = 0; i < 4; ++i) b.Group(i, static_cast<int>(Order::kStream));
    b.Group(4, static_cast<int>(Order::kStream));
    cases.push_back({"numAttrs 5 with count 4", b, 4, 5, s, kAnyCopy, kAnyCopy});
  }
  for (const cudaStream_t legacy : {static_cast<cudaStream_t>(nullptr), cudaStreamLegacy}) {
    Batch b = base();
    b.Group(0, static_cast<int>(Order::kStream));
    cases.push_back({legacy ? "cudaStreamLegacy" : "the NULL stream", b, 4, 1, legacy, kNoCopy, kNoCopy});
  }
  bool wrote = false;
  for (Misuse& m : cases) {
    for (const Copy& c : copies) ASSERT_CUDA_OK(checker_.FillByte(*c.dst, c.dst_off, c.size, kPoison));
    size_t fail_idx = kFailUnset;
    EXPECT_CUDA_ERROR(cudaErrorInvalidValue, Issue(api, m.batch, m.count, m.num_attrs, m.stream, &fail_idx)) << m.name;
    ASSERT_CUDA_OK(cudaDeviceSynchronize()) << "after " << m.name;
    if (api == Api::kDriverFailIdx) {
      Observe("fail_idx " + m.name, fail_idx == SIZE_MAX ? std::string("SIZE_MAX") : std::to_string(fail_idx));
      if (m.first == kNoCopy) {
        EXPECT_EQ(fail_idx, SIZE_MAX) << m.name << ": an error of no specific copy";
      } else if (m.first != kAnyCopy) {
        EXPECT_TRUE(fail_idx == SIZE_MAX || (fail_idx >= m.first && fail_idx <= m.last))
            << m.name << ": failIdx " << fail_idx << " names a copy the error does not pertain to";
      }
    }
    for (const Copy& c : copies) {
      size_t untouched = 0;
      ASSERT_CUDA_OK(checker_.CountByte(*c.dst, c.dst_off, c.size, kPoison, &untouched));
      wrote = wrote || untouched != 0;
    }
  }
  Observe("a_rejected_batch_wrote_bytes", wrote);
  ExpectAValidBatchStillWorks(s, "the rejected batches");
}

// A null destination is invalid for any copy (cudaErrorInvalidValue, the only error listed);
// where the API returns failIdx it names the copy: "the index of the copy where a failure was
// encountered". A driver that copies the rest anyway and reports success, or blames another
// copy, fails this.
TEST_P(BatchApiTest, ACopyWithANullDestinationIsInvalidValue) {
  PAGELOCK_RULE("S26");
  const Api api = GetParam();
  if (!Usable(api)) return;
  OwnedStream stream(cudaStreamNonBlocking);
  ASSERT_CUDA_OK(stream.status());
  std::map<HostKind, Pool, InMatrixOrder> pools;
  std::vector<Copy> copies(3);
  for (Copy& c : copies) {
    c.size = 4097;
    c.src_off = Plan(&pools, HostKind::kHostAllocDefault, c.size);
    c.dst_off = Plan(&pools, HostKind::kDevice, c.size);
  }
  Make(&pools);
  if (HasFatalFailure()) return;
  Batch b;
  for (Copy& c : copies) {
    c.src = pools[HostKind::kHostAllocDefault].buf.get();
    c.dst = pools[HostKind::kDevice].buf.get();
    FillSource(&c);
    b.Add(c.dst->ptr() + c.dst_off, c.src->ptr() + c.src_off, c.size);
  }
  b.dsts[1] = nullptr;
  b.Group(0, static_cast<int>(Order::kStream));
  size_t fail_idx = kFailUnset;
  EXPECT_CUDA_ERROR(cudaErrorInvalidValue, Issue(api, b, stream.get(), &fail_idx));
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  if (api == Api::kDriverFailIdx) {
    EXPECT_EQ(fail_idx, 1u) << "failIdx of the copy with the null destination";
  }
  ExpectAValidBatchStillWorks(stream.get(), "a batch with a null destination");
}

// The documentation is silent on an empty batch and on a copy of 0 bytes: each is accepted or
// rejected with cudaErrorInvalidValue (the only error listed), the outcome recorded; an accepted
// batch delivers its other copies and writes nothing for the empty ones, and nothing is left
// sticky. An empty batch with an attribute entry breaks "numAttrs must be lesser than or equal
// to count" and is cudaErrorInvalidValue.
TEST_P(BatchApiTest, EmptyBatchesAndZeroSizedCopies) {
  PAGELOCK_RULE("S26,S24");
  const Api api = GetParam();
  if (!Usable(api)) return;
  OwnedStream stream(cudaStreamNonBlocking);
  ASSERT_CUDA_OK(stream.status());
  std::map<HostKind, Pool, InMatrixOrder> pools;
  std::vector<Copy> copies(5);
  for (size_t i = 0; i < copies.size(); ++i) {
    copies[i].size = i % 2 ? 0 : 65537;
    copies[i].src_off = Plan(&pools, HostKind::kHostAllocDefault, 65537);
    copies[i].dst_off = Plan(&pools, HostKind::kDevice, 65537);
  }
  Make(&pools);
  if (HasFatalFailure()) return;
  Batch b;
  for (Copy& c : copies) {
    c.src = pools[HostKind::kHostAllocDefault].buf.get();
    c.dst = pools[HostKind::kDevice].buf.get();
    if (c.size) FillSource(&c);
    b.Add(c.dst->ptr() + c.dst_off, c.src->ptr() + c.src_off, c.size);
  }
  b.Group(0, static_cast<int>(Order::kStream));
  size_t fail_idx = kFailUnset;
  Batch empty;
  empty.Group(0, static_cast<int>(Order::kStream));
  empty.dsts.push_back(nullptr);  // storage only: count is 0
  empty.srcs.push_back(nullptr);
  empty.sizes.push_back(0);
  EXPECT_CUDA_ERROR(cudaErrorInvalidValue, Issue(api, empty, 0, 1, stream.get(), &fail_idx))
      << "count 0 with one attribute entry";
  const cudaError_t none = Issue(api, empty, 0, 0, stream.get(), &fail_idx);
  EXPECT_DOCUMENTED_ONE_OF("empty_batch", none, (std::vector<cudaError_t>{cudaSuccess, cudaErrorInvalidValue}),
                           "cudaMemcpyBatchAsync's results");
  const cudaError_t zero = Issue(api, b, stream.get(), &fail_idx);
  EXPECT_DOCUMENTED_ONE_OF("batch_with_zero_sized_copies", zero,
                           (std::vector<cudaError_t>{cudaSuccess, cudaErrorInvalidValue}),
                           "cudaMemcpyBatchAsync's results");
  ASSERT_CUDA_OK(streams::PollStream(stream.get(), 30));
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  for (size_t i = 0; i < copies.size(); ++i) {
    const Copy& c = copies[i];
    if (c.size == 0) {
      size_t bad = 0;  // a 0-byte copy writes nothing: its whole window stays poison
      ASSERT_CUDA_OK(checker_.CountByte(*c.dst, c.dst_off, 65537, kPoison, &bad));
      EXPECT_EQ(bad, 0u) << "the 0-byte copy " << i << " wrote bytes";
    } else if (zero == cudaSuccess) {
      ExpectDelivered(c, "copy " + std::to_string(i) + " of a batch with 0-byte copies");
    }
  }
  ExpectAValidBatchStillWorks(stream.get(), "the empty and zero-sized batches");
}

// The hints steer staging only ("only applicable for managed memory ... For other cases, these
// hints are ignored"; the overlap flag "is a hint and can be ignored"). A driver that applies a
// location hint to unmanaged memory as a destination, or lets the overlap flag reorder or drop
// a copy, fails this: every byte of pinned, pageable, device and managed copies with device and
// host location hints and cudaMemcpyFlagPreferOverlapWithCompute arrives.
TEST_P(BatchApiTest, HintsAndFlagsLeaveEveryByteAsCopied) {
  PAGELOCK_RULE("S24");
  const Api api = GetParam();
  if (!Usable(api)) return;
  OwnedStream stream(cudaStreamNonBlocking);
  ASSERT_CUDA_OK(stream.status());
  const std::vector<std::pair<HostKind, HostKind>> pairs = {{HostKind::kHostAllocDefault, HostKind::kDevice},
                                                  {HostKind::kDevice, HostKind::kHostAllocMapped},
                                                  {HostKind::kPageable, HostKind::kDevice},
                                                  {HostKind::kDevice, HostKind::kPageable},
                                                  {HostKind::kRegisteredMalloc, HostKind::kDevice}};
  std::map<HostKind, Pool, InMatrixOrder> src_pools, dst_pools;
  std::vector<Copy> copies(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    copies[i].size = kSizes[(i + 2) % kSizes.size()];
    copies[i].src_off = Plan(&src_pools, pairs[i].first, copies[i].size);
    copies[i].dst_off = Plan(&dst_pools, pairs[i].second, copies[i].size);
  }
  Make(&src_pools);
  Make(&dst_pools);
  if (HasFatalFailure()) return;
  Batch b;
  for (size_t i = 0; i < pairs.size(); ++i) {
    copies[i].src = src_pools[pairs[i].first].buf.get();
    copies[i].dst = dst_pools[pairs[i].second].buf.get();
    FillSource(&copies[i]);
    b.Add(copies[i].dst->ptr() + copies[i].dst_off, copies[i].src->ptr() + copies[i].src_off, copies[i].size);
  }
  // Managed memory, where the hints apply (cudaDevAttrConcurrentManagedAccess = 1): a host-written
  // managed source into a managed destination the host then reads.
  constexpr size_t kManaged = (size_t{1} << 20) + 13;
  DeviceBuffer msrc = DeviceBuffer::Managed(kManaged), mdst = DeviceBuffer::Managed(kManaged);
  ASSERT_CUDA_OK(msrc.status());
  ASSERT_CUDA_OK(mdst.status());
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  const uint32_t mseed = static_cast<uint32_t>(CaseRng()());
  streams::HostFillPatternFrom(msrc.get(), kManaged, 0, mseed);
  std::memset(mdst.get(), kPoison, kManaged);
  b.Add(mdst.get(), msrc.get(), kManaged);
  b.hints = true;
  b.Group(0, static_cast<int>(Order::kStream), cudaMemcpyFlagPreferOverlapWithCompute);
  size_t fail_idx = kFailUnset;
  ASSERT_CUDA_OK(Issue(api, b, stream.get(), &fail_idx));
  ASSERT_CUDA_OK(streams::PollStream(stream.get(), 30));
  for (size_t i = 0; i < copies.size(); ++i) ExpectDelivered(copies[i], "hinted copy " + std::to_string(i));
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(streams::HostCountPattern(mdst.get(), kManaged, 0, mseed), 0u) << "the hinted managed copy";
}

INSTANTIATE_TEST_SUITE_P(EveryApi, BatchApiTest,
                         ::testing::Values(Api::kRuntime, Api::kDriver, Api::kDriverFailIdx),
                         [](const auto& info) { return ApiName(info.param); });

#else  // !PAGELOCK_BATCH_COPY: every case says why.

TEST_F(BatchCopyTest, BatchCopiesNeedCuda128) {
  PAGELOCK_RULE("S24");
  PAGELOCK_NOT_SUPPORTED(RequireRuntimeApi(12080, "cudaMemcpyBatchAsync").reason);
}

#endif  // PAGELOCK_BATCH_COPY

}  // namespace
}  // namespace pagelock
