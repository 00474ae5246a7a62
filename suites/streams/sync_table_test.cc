// The synchronisation behaviour table: a bounded delay kernel goes first on a stream of each kind
// (legacy default, per-thread default, blocking, non-blocking), then one copy or memset call;
// cudaStreamQuery right after the call returns tells whether it waited for the delay. The cells
// the CUDA documentation ("API synchronization behavior", R76) makes a "must" are asserted:
//   - cudaMemcpyAsync between device and page-locked memory, D2D, every *Async memset and the
//     synchronous cudaMemset of device memory ("The cudaMemset functions are asynchronous with
//     respect to the host except when the target memory is pinned host memory") are
//     asynchronous: the delay is still running when they return;
//   - cudaMemcpy H2D from pageable memory waits for the stream first ("For transfers from
//     pageable host memory to device memory, a stream sync is performed before the copy is
//     initiated"): on the legacy default stream, where both go, the call lasts at least the
//     delay ahead of it (when it returns the DMA may still be running, so the query is not
//     judged);
//   - cudaMemcpy D2H, any host-to-host copy (sync or async) and cudaMemset into page-locked host
//     memory have finished when they return: the host reads the final bytes without a sync;
//   - cudaMemcpy H2D lets the host reuse the source on return (pinned: synchronous; pageable:
//     returns once staged).
// Every other cell ("might") is recorded with pagelock::Observe, per stream kind. Every call is
// also checked byte by byte once the stream is idle. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <chrono>
#include <functional>
#include <sstream>
#include <tuple>

#include "fixtures/gpu_test.h"
#include "kernels/streams/stream_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

using streams::Checker;
using streams::MemName;

enum class Call {
  kMemcpyH2D, kMemcpyD2H, kMemcpyH2H, kMemcpyAsyncH2D, kMemcpyAsyncD2H, kMemcpyAsyncH2H,
  kMemsetHost, kMemsetAsyncHost, kMemsetDevice, kMemsetAsyncDevice, kMemcpyAsyncD2D,
};

std::string CallName(Call c) {
  switch (c) {
    case Call::kMemcpyH2D: return "MemcpyH2D";
    case Call::kMemcpyD2H: return "MemcpyD2H";
    case Call::kMemcpyH2H: return "MemcpyH2H";
    case Call::kMemcpyAsyncH2D: return "MemcpyAsyncH2D";
    case Call::kMemcpyAsyncD2H: return "MemcpyAsyncD2H";
    case Call::kMemcpyAsyncH2H: return "MemcpyAsyncH2H";
    case Call::kMemsetHost: return "MemsetHost";
    case Call::kMemsetAsyncHost: return "MemsetAsyncHost";
    case Call::kMemsetDevice: return "MemsetDevice";
    case Call::kMemsetAsyncDevice: return "MemsetAsyncDevice";
    case Call::kMemcpyAsyncD2D: return "MemcpyAsyncD2D";
  }
  return "Unknown";
}

constexpr size_t kBytes = size_t{256} << 10;
constexpr double kDelayMs = 5;
constexpr int kAttempts = 3;  // an asynchronous call must show it in one attempt (preemption)

bool MustBeAsynchronous(Call c, HostKind m) {
  if (c == Call::kMemsetAsyncHost || c == Call::kMemsetAsyncDevice || c == Call::kMemcpyAsyncD2D) return true;
  if (c == Call::kMemsetDevice) return true;  // the memset text: asynchronous unless pinned host memory
  return (c == Call::kMemcpyAsyncH2D || c == Call::kMemcpyAsyncD2H) && IsPinned(m);
}

// A pageable synchronous H2D copy performs a stream sync before it starts; judged on the legacy
// default stream only, the stream cudaMemcpy itself uses (how far the legacy stream's implicit
// ordering with other blocking streams reaches into that sync is not stated).
bool MustWaitForTheStream(Call c, HostKind m, StreamKind k) {
  return c == Call::kMemcpyH2D && m == HostKind::kPageable && k == StreamKind::kLegacyDefault;
}

// The destination holds its final bytes when the call returns.
bool MustBeCompleteOnReturn(Call c, HostKind m) {
  return c == Call::kMemcpyD2H || c == Call::kMemcpyH2H || c == Call::kMemcpyAsyncH2H ||
         (c == Call::kMemsetHost && IsPinned(m));
}

bool IsMemset(Call c) {
  return c == Call::kMemsetHost || c == Call::kMemsetAsyncHost || c == Call::kMemsetDevice ||
         c == Call::kMemsetAsyncDevice;
}

class SyncTableTest : public GpuTest, public ::testing::WithParamInterface<std::tuple<Call, HostKind>> {
 protected:
  Call call() const { return std::get<0>(GetParam()); }
  HostKind mem() const { return std::get<1>(GetParam()); }

  struct Cell {
    cudaError_t query = cudaSuccess;  // cudaStreamQuery right after the call returned
    double call_ms = 0;
    size_t bad_at_return = 0;  // destination bytes not yet final when the call returned
    size_t bad_at_end = 0;     // destination bytes wrong once everything finished
    bool host_readable = false;  // the destination is host memory, so bad_at_return was measured
  };

  // One attempt of one cell on stream kind k with a delay of delay_ms.
  void RunCell(StreamKind k, double delay_ms, KindBuffer& host, KindBuffer& host2, KindBuffer& dev, Checker& check,
               Cell* cell) {
    KindStream stream(k);
    ASSERT_CUDA_OK(stream.status());
    cudaStream_t s = stream.get();
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    const unsigned char value = static_cast<unsigned char>(0x10 + seed % 0xe0);
    KindBuffer* dst = nullptr;
    KindBuffer* src = nullptr;
    switch (call()) {
      case Call::kMemcpyH2D: case Call::kMemcpyAsyncH2D: src = &host; dst = &dev; break;
      case Call::kMemcpyD2H: case Call::kMemcpyAsyncD2H: src = &dev; dst = &host; break;
      case Call::kMemcpyH2H: case Call::kMemcpyAsyncH2H: src = &host; dst = &host2; break;
      case Call::kMemsetHost: case Call::kMemsetAsyncHost: dst = &host; break;
      case Call::kMemsetDevice: case Call::kMemsetAsyncDevice: dst = &dev; break;
      case Call::kMemcpyAsyncD2D: src = &host2; dst = &dev; break;  // host2 is device memory here
    }
    if (src) {
      ASSERT_CUDA_OK(check.FillPattern(*src, 0, kBytes, 0, seed));
    }
    ASSERT_CUDA_OK(check.FillByte(*dst, 0, kBytes, 0));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());

    ASSERT_CUDA_OK(LaunchDelay(streams::DelayNs(delay_ms), s));
    unsigned char* t = dst->ptr();
    const unsigned char* f = src ? src->ptr() : nullptr;
    const auto start = std::chrono::steady_clock::now();
    cudaError_t e = cudaSuccess;
    switch (call()) {  // copy-check: every byte is counted after the switch, at return and at the end
      case Call::kMemcpyH2D: e = cudaMemcpy(t, f, kBytes, cudaMemcpyHostToDevice); break;
      case Call::kMemcpyD2H: e = cudaMemcpy(t, f, kBytes, cudaMemcpyDeviceToHost); break;
      case Call::kMemcpyH2H: e = cudaMemcpy(t, f, kBytes, cudaMemcpyHostToHost); break;
      case Call::kMemcpyAsyncH2D: e = cudaMemcpyAsync(t, f, kBytes, cudaMemcpyHostToDevice, s); break;
      case Call::kMemcpyAsyncD2H: e = cudaMemcpyAsync(t, f, kBytes, cudaMemcpyDeviceToHost, s); break;
      case Call::kMemcpyAsyncH2H: e = cudaMemcpyAsync(t, f, kBytes, cudaMemcpyHostToHost, s); break;
      case Call::kMemcpyAsyncD2D: e = cudaMemcpyAsync(t, f, kBytes, cudaMemcpyDeviceToDevice, s); break;
      case Call::kMemsetHost: case Call::kMemsetDevice: e = cudaMemset(t, value, kBytes); break;
      case Call::kMemsetAsyncHost: case Call::kMemsetAsyncDevice: e = cudaMemsetAsync(t, value, kBytes, s); break;
    }
    cell->query = cudaStreamQuery(s);
    cell->call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_CUDA_OK(e) << CallName(call()) << " on " << MemName(mem());
    // What the host sees at once, without any synchronisation.
    cell->host_readable = dst->host() != nullptr;
    if (cell->host_readable) {
      cell->bad_at_return = IsMemset(call()) ? streams::HostCountByteMismatches(dst->host(), kBytes, value)
                                             : streams::HostCountPattern(dst->host(), kBytes, 0, seed);
    }
    // A synchronous H2D copy lets the host reuse its source at once: scribble over it now; the
    // device must still receive the bytes it had at the call.
    if (call() == Call::kMemcpyH2D) streams::HostFillPatternFrom(src->host(), kBytes, 0, seed ^ 0xffffffffu);
    ASSERT_CUDA_OK(streams::PollStream(s, 10)) << "the stream did not finish within 10 s";
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    if (IsMemset(call())) {
      ASSERT_CUDA_OK(check.CountByte(*dst, 0, kBytes, value, &cell->bad_at_end));
    } else {
      ASSERT_CUDA_OK(check.CountPattern(*dst, 0, kBytes, 0, seed, &cell->bad_at_end));
    }
  }
};

std::string QueryName(cudaError_t e) {
  return e == cudaErrorNotReady ? "not_ready" : e == cudaSuccess ? "complete" : cudaGetErrorName(e);
}

TEST_P(SyncTableTest, CallFollowsTheDocumentedSynchronisationOnEveryStreamKind) {
  PAGELOCK_RULE("R76,S02");
  if (IsRegistered(mem())) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  std::string why;
  const bool host_side = mem() != HostKind::kDevice;
  auto host = KindBuffer::Make(host_side ? mem() : HostKind::kDevice, kBytes, &why);
  ASSERT_NE(host, nullptr) << why;
  auto host2 = KindBuffer::Make(host_side ? mem() : HostKind::kDevice, kBytes, &why);
  ASSERT_NE(host2, nullptr) << why;
  auto dev = KindBuffer::Make(HostKind::kDevice, kBytes, &why);
  ASSERT_NE(dev, nullptr) << why;
  if ((call() == Call::kMemsetHost || call() == Call::kMemsetAsyncHost) && host->host() != host->dev()) {
    PAGELOCK_NOT_SUPPORTED(MemName(mem()) + ": cudaHostGetDevicePointer differs from the host pointer, so a "
                           "memset through the host pointer is not valid (R15)");
  }
  Checker check;
  ASSERT_CUDA_OK(check.status());
  const bool must_async = MustBeAsynchronous(call(), mem());
  const bool must_complete = MustBeCompleteOnReturn(call(), mem());
  Observe("expectation", must_async ? "asynchronous" : must_complete ? "complete_on_return"
                        : call() == Call::kMemcpyH2D && mem() == HostKind::kPageable ? "stream_sync_first_source_reusable"
                        : call() == Call::kMemcpyH2D ? "source_reusable_on_return"
                                                     : "recorded_only");
  for (StreamKind k : AllStreamKinds()) {
    const std::string name = StreamKindName(k);
    Cell cell;
    double delay = kDelayMs;
    int attempt = 0;
    for (; attempt < kAttempts; ++attempt, delay *= 4) {
      RunCell(k, delay, *host, *host2, *dev, check, &cell);
      if (HasFatalFailure()) return;
      if (!must_async || cell.query == cudaErrorNotReady) break;
    }
    Observe(name + "_query_after_return", QueryName(cell.query));
    Observe(name + "_call_ms", cell.call_ms);
    Observe(name + "_attempts", std::min(attempt + 1, kAttempts));
    if (cell.host_readable) {
      Observe(name + "_bytes_final_at_return", cell.bad_at_return == 0);
    }
    const std::string what = CallName(call()) + " on " + MemName(mem()) + " memory, " + name + " stream";
    if (must_async) {
      EXPECT_EQ(cell.query, cudaErrorNotReady)
          << what << ": cudaStreamQuery right after the call returned "
          << QueryName(cell.query) << " in " << kAttempts << " attempts (last call took " << cell.call_ms
          << " ms, delay " << delay / 4 << " ms): the call waited for earlier work, but it is documented as "
          << "asynchronous";
    }
    if (must_complete) {
      EXPECT_EQ(cell.bad_at_return, 0u)
          << what << ": " << cell.bad_at_return << " of " << kBytes
          << " destination bytes were not final when the call returned (documented as complete on return)";
    }
    if (MustWaitForTheStream(call(), mem(), k)) {
      // The delay kernel was launched before the clock started, so it has at most `delay` left.
      EXPECT_GE(cell.call_ms, 0.9 * delay)
          << what << ": the call returned after " << cell.call_ms << " ms, before the " << delay
          << " ms delay ahead of it in the stream ended: no stream sync was performed before the "
          << "pageable copy";
    }
    EXPECT_EQ(cell.bad_at_end, 0u) << what << ": " << cell.bad_at_end << " of " << kBytes
                                   << " destination bytes wrong after the stream finished";
  }
}

std::vector<std::tuple<Call, HostKind>> TableParams() {
  std::vector<std::tuple<Call, HostKind>> v;
  for (HostKind m : {HostKind::kHostAllocDefault, HostKind::kRegisteredMalloc, HostKind::kHostAllocMappedWriteCombined, HostKind::kPageable}) {
    for (Call c : {Call::kMemcpyH2D, Call::kMemcpyD2H, Call::kMemcpyH2H, Call::kMemcpyAsyncH2D,
                   Call::kMemcpyAsyncD2H, Call::kMemcpyAsyncH2H, Call::kMemsetHost, Call::kMemsetAsyncHost}) {
      if (m == HostKind::kPageable && IsMemset(c)) continue;  // no device alias (attr 88 = 0)
      v.emplace_back(c, m);
    }
  }
  for (Call c : {Call::kMemsetDevice, Call::kMemsetAsyncDevice, Call::kMemcpyAsyncD2D}) v.emplace_back(c, HostKind::kDevice);
  return v;
}

INSTANTIATE_TEST_SUITE_P(CallsAndMemory, SyncTableTest, ::testing::ValuesIn(TableParams()),
                         [](const auto& info) {
                           return MemName(std::get<1>(info.param)) + "_" + CallName(std::get<0>(info.param));
                         });

}  // namespace
}  // namespace pagelock
