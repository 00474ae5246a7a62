// Every copy and memset API over every kind of host memory, in every direction, at sizes from
// one byte to 64 MiB and odd offsets: each call is followed by a check of every byte of its
// window (on the device, through the device alias, when the window is big) and of the bytes on
// either side of it, which must be untouched. The async APIs run on every stream kind (the
// legacy default stream, cudaStreamPerThread, a created blocking and a created non-blocking
// stream), and every copy runs once with the explicit cudaMemcpyKind of its direction and once
// with cudaMemcpyDefault (UVA infers the direction from the pointers). Rule ids refer to
// suites/rules.tsv.
#include <cuda_runtime.h>

#include <cstring>
#include <sstream>
#include <ostream>
#include <vector>

#include "fixtures/gpu_test.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

using streams::Checker;
using streams::MemName;

enum class Api { kMemcpy, kMemcpyAsync, kMemcpy2DAsync, kMemset, kMemsetAsync };

std::string ApiName(Api a) {
  switch (a) {
    case Api::kMemcpy: return "Memcpy";
    case Api::kMemcpyAsync: return "MemcpyAsync";
    case Api::kMemcpy2DAsync: return "Memcpy2DAsync";
    case Api::kMemset: return "Memset";
    case Api::kMemsetAsync: return "MemsetAsync";
  }
  return "Unknown";
}

constexpr unsigned char kGuard = 0xA5;
constexpr size_t kGuardBytes = 64;
constexpr size_t kBig = size_t{64} << 20;

struct Window {
  size_t off, n;
};

bool IsAsync(Api a) { return a == Api::kMemcpyAsync || a == Api::kMemcpy2DAsync || a == Api::kMemsetAsync; }

// One case of the matrix: a host kind, an API and, for the async APIs, the stream kind it is
// given (the synchronous APIs take no stream: `stream` is unused for them).
struct MatrixCase {
  HostKind mem;
  Api api;
  StreamKind stream;
};
std::string StreamArgName(const MatrixCase& c) {
  return IsAsync(c.api) ? StreamKindName(c.stream) : "NoStreamArgument";
}
void PrintTo(const MatrixCase& c, std::ostream* os) {
  *os << MemName(c.mem) << " " << ApiName(c.api) << " " << StreamArgName(c);
}

// The cells the matrix had before the stream kinds and cudaMemcpyDefault were added (a created
// non-blocking stream, explicit kinds) keep every window, 64 MiB included; the added cells keep
// the windows up to 1 MiB + 13, which cost tens of microseconds each.
bool IsFirstCell(const MatrixCase& c, bool inferred) {
  return !inferred && (!IsAsync(c.api) || c.stream == StreamKind::kNonBlocking);
}

// Odd offsets and lengths around the page and the host/device check limit; 64 MiB for the
// async copy, the call the bandwidth suite times.
std::vector<Window> Windows(Api api, bool big = true) {
  std::vector<Window> w = {{0, 1}, {1, 1}, {3, 2}, {7, 4095}, {4093, 4097}, {5, 65537}, {13, (size_t{1} << 20) + 13}};
  if (api == Api::kMemcpyAsync && big) w.push_back({0, kBig});
  return w;
}

// Directions: host kind -> device, device -> host kind, host kind -> host kind, and device <->
// device through the kind's device alias.
enum class Dir { kH2D, kD2H, kH2H, kAliasToDevice, kDeviceToAlias, kMemsetHostAlias, kMemsetDeviceAlias };

std::string DirName(Dir d) {
  switch (d) {
    case Dir::kH2D: return "H2D";
    case Dir::kD2H: return "D2H";
    case Dir::kH2H: return "H2H";
    case Dir::kAliasToDevice: return "AliasToDevice";
    case Dir::kDeviceToAlias: return "DeviceToAlias";
    case Dir::kMemsetHostAlias: return "MemsetHostAlias";
    case Dir::kMemsetDeviceAlias: return "MemsetDeviceAlias";
  }
  return "Unknown";
}

class CopyMatrixTest : public GpuTest, public ::testing::WithParamInterface<MatrixCase> {
 protected:
  HostKind mem() const { return GetParam().mem; }
  Api api() const { return GetParam().api; }
  bool IsMemset() const { return api() == Api::kMemset || api() == Api::kMemsetAsync; }

  std::vector<Dir> Dirs() const {
    if (IsMemset()) return {Dir::kMemsetHostAlias, Dir::kMemsetDeviceAlias};
    std::vector<Dir> d = {Dir::kH2D, Dir::kD2H, Dir::kH2H};
    if (mem() != HostKind::kPageable) {
      d.push_back(Dir::kAliasToDevice);
      d.push_back(Dir::kDeviceToAlias);
    }
    return d;
  }

  // Runs one copy or memset of window w in direction d and checks every byte of the window and
  // the guard bytes on both sides. `inferred`: the copy is given cudaMemcpyDefault instead of
  // its direction's kind. `what` names the cell in failure messages.
  void RunCell(Dir d, bool inferred, Window w, KindBuffer& host, KindBuffer& host2, KindBuffer& dev, Checker& check,
               cudaStream_t stream, const std::string& what) {
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    KindBuffer* src = nullptr;
    KindBuffer* dst = nullptr;
    unsigned char* s = nullptr;
    unsigned char* t = nullptr;
    cudaMemcpyKind kind = cudaMemcpyDefault;
    switch (d) {
      case Dir::kH2D: src = &host; dst = &dev; s = host.host(); t = dev.dev(); kind = cudaMemcpyHostToDevice; break;
      case Dir::kD2H: src = &dev; dst = &host; s = dev.dev(); t = host.host(); kind = cudaMemcpyDeviceToHost; break;
      case Dir::kH2H: src = &host; dst = &host2; s = host.host(); t = host2.host(); kind = cudaMemcpyHostToHost; break;
      case Dir::kAliasToDevice: src = &host; dst = &dev; s = host.dev(); t = dev.dev(); kind = cudaMemcpyDeviceToDevice; break;
      case Dir::kDeviceToAlias: src = &dev; dst = &host; s = dev.dev(); t = host.dev(); kind = cudaMemcpyDeviceToDevice; break;
      case Dir::kMemsetHostAlias: dst = &host; t = host.host(); break;
      case Dir::kMemsetDeviceAlias: dst = &host; t = host.dev(); break;
    }
    // R75: with UVA the runtime infers the direction from the pointer values, for either alias.
    if (inferred) kind = cudaMemcpyDefault;
    const size_t before = std::min(w.off, kGuardBytes);
    ASSERT_CUDA_OK(check.FillByte(*dst, w.off - before, before + w.n + kGuardBytes, kGuard)) << what;
    const unsigned char value = static_cast<unsigned char>(seed % 255 == kGuard ? 0x11 : seed % 255);
    if (src) {
      ASSERT_CUDA_OK(check.FillPattern(*src, w.off, w.n, w.off, seed)) << what;
    }

    // 2D: rows of `width` bytes, pitch width + 3, so the gaps between rows must stay guards.
    const size_t width = std::min<size_t>(w.n, 1021), pitch = width + 3;
    const size_t rows = api() == Api::kMemcpy2DAsync ? std::max<size_t>(1, w.n / pitch) : 1;
    // Every byte of the window and its guards is counted after the switch.
    switch (api()) {
      case Api::kMemcpy:
        ASSERT_CUDA_OK(cudaMemcpy(t + w.off, s + w.off, w.n, kind)) << what;  // copy-check: counted below
        break;
      case Api::kMemcpyAsync:
        ASSERT_CUDA_OK(cudaMemcpyAsync(t + w.off, s + w.off, w.n, kind, stream)) << what;  // copy-check: counted below
        break;
      case Api::kMemcpy2DAsync:
        ASSERT_CUDA_OK(cudaMemcpy2DAsync(t + w.off, pitch, s + w.off, pitch, width, rows, kind, stream)) << what;  // copy-check: counted below
        break;
      case Api::kMemset:
        ASSERT_CUDA_OK(cudaMemset(t + w.off, value, w.n)) << what;  // copy-check: counted below
        break;
      case Api::kMemsetAsync:
        ASSERT_CUDA_OK(cudaMemsetAsync(t + w.off, value, w.n, stream)) << what;  // copy-check: counted below
        break;
    }
    ASSERT_CUDA_OK(cudaStreamSynchronize(stream)) << what;
    // S18: once cudaStreamSynchronize of the copy's stream returns, the host sees the whole
    // window; counted here, before anything else synchronises, where the host can read the
    // destination directly (write-combined memory is read on the device below, R16).
    if (IsAsync(api()) && api() != Api::kMemcpy2DAsync && dst->host() && dst->kind() != HostKind::kHostAllocMappedWriteCombined &&
        w.n <= 2 * (size_t{1} << 20)) {
      const size_t early = IsMemset() ? streams::HostCountByteMismatches(dst->host() + w.off, w.n, value)
                                      : streams::HostCountPattern(dst->host() + w.off, w.n, w.off, seed);
      EXPECT_EQ(early, 0u) << what << ": bytes of the window were not there when cudaStreamSynchronize returned";
    }
    ASSERT_CUDA_OK(cudaDeviceSynchronize()) << what;

    size_t bad = 0;
    if (api() == Api::kMemcpy2DAsync) {
      // Each row holds the source's row; each gap and the bytes after the last row keep their
      // guard. The span is read once (device memory and write-combined memory through a
      // readback copy whose bytes are the ones compared), then checked row by row on the host.
      const size_t span = (rows - 1) * pitch + width + kGuardBytes;
      std::vector<unsigned char> copy(span);
      const unsigned char* view = dst->host() + w.off;
      if (dst->dev() && (!dst->host() || dst->kind() == HostKind::kHostAllocMappedWriteCombined)) {
        ASSERT_CUDA_OK(cudaMemcpy(copy.data(), dst->dev() + w.off, span, cudaMemcpyDefault)) << what;
        view = copy.data();  // copy-check: the rows and gaps below are counted on this readback
      }
      size_t gaps = 0;
      for (size_t r = 0; r < rows; ++r) {
        bad += streams::HostCountPattern(view + r * pitch, width, w.off + r * pitch, seed);
        const size_t gap = r + 1 < rows ? pitch - width : kGuardBytes;
        gaps += streams::HostCountByteMismatches(view + r * pitch + width, gap, kGuard);
      }
      EXPECT_EQ(bad, 0u) << what << ": bytes of the 2D rows differ from the source";
      EXPECT_EQ(gaps, 0u) << what << ": bytes between or after the 2D rows were written";
    } else if (IsMemset()) {
      ASSERT_CUDA_OK(check.CountByte(*dst, w.off, w.n, value, &bad)) << what;
      EXPECT_EQ(bad, 0u) << what << ": bytes of the window do not hold the memset value";
    } else {
      ASSERT_CUDA_OK(check.CountPattern(*dst, w.off, w.n, w.off, seed, &bad)) << what;
      EXPECT_EQ(bad, 0u) << what << ": bytes of the window differ from the source";
    }
    size_t head = 0;
    ASSERT_CUDA_OK(check.CountByte(*dst, w.off - before, before, kGuard, &head)) << what;
    EXPECT_EQ(head, 0u) << what << ": bytes before the window were written";
    if (api() != Api::kMemcpy2DAsync) {
      size_t tail = 0;
      ASSERT_CUDA_OK(check.CountByte(*dst, w.off + w.n, kGuardBytes, kGuard, &tail)) << what;
      EXPECT_EQ(tail, 0u) << what << ": bytes after the window were written";
    }
  }
};

// A driver that drops or shortens a copy or memset on one stream kind (the legacy or per-thread
// default stream, a blocking or non-blocking created stream), that mistakes the direction it
// infers from cudaMemcpyDefault (a device alias taken for a host pointer, a host-to-host copy
// sent to the copy engine with the wrong source), that writes past the window, or whose
// cudaStreamSynchronize returns before the copy's bytes are visible fails this.
TEST_P(CopyMatrixTest, EveryByteOfEveryWindowArrivesAndNeighboursStayUntouched) {
  PAGELOCK_RULE("R75,R76,S01,S18");
  if (IsRegistered(mem())) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  size_t capacity = 0;
  // Only the first cells have the 64 MiB window: the other stream kinds pin no more than they use.
  for (Window w : Windows(api(), IsFirstCell(GetParam(), false)))
    capacity = std::max(capacity, w.off + w.n + kGuardBytes);
  std::string why;
  auto host = KindBuffer::Make(mem(), capacity, &why);
  ASSERT_NE(host, nullptr) << why;
  auto host2 = KindBuffer::Make(mem(), capacity, &why);
  ASSERT_NE(host2, nullptr) << why;
  auto dev = KindBuffer::Make(HostKind::kDevice, capacity, &why);
  ASSERT_NE(dev, nullptr) << why;
  Checker check;
  ASSERT_CUDA_OK(check.status());
  // The synchronous APIs take no stream; their cells are checked after a created non-blocking
  // stream and the device are synchronised, as before the stream kinds were added.
  KindStream stream_of_kind(IsAsync(api()) ? GetParam().stream : StreamKind::kNonBlocking);
  ASSERT_CUDA_OK(stream_of_kind.status());
  const cudaStream_t stream = stream_of_kind.get();
  int cells = 0;
  for (Dir d : Dirs()) {
    // R15: a write-combined allocation's device address may differ from its host address; the
    // host pointer is then no device address and a memset through it is not valid.
    if (d == Dir::kMemsetHostAlias && host->host() != host->dev()) {
      Observe("memset_host_alias_skipped", "device alias differs from the host pointer (R15)");
      continue;
    }
    // Memsets take no cudaMemcpyKind; every copy runs with its kind and with cudaMemcpyDefault.
    for (bool inferred : IsMemset() ? std::vector<bool>{false} : std::vector<bool>{false, true}) {
      const bool first = IsFirstCell(GetParam(), inferred);
      for (Window w : Windows(api(), first)) {
        // Host reads of write-combined memory are uncached (R16): the CPU-side host-to-host copy
        // of 64 MiB would take seconds, so that one window is left to the other directions; the
        // added cells keep their write-combined host-to-host copies to 64 KiB + 1 for the same
        // reason (the cells that have always been there keep the 1 MiB window).
        if (mem() == HostKind::kHostAllocMappedWriteCombined && d == Dir::kH2H && w.n > (first ? kBig / 2 : size_t{65537})) continue;
        std::ostringstream what;
        what << MemName(mem()) << " " << ApiName(api()) << " on " << StreamArgName(GetParam()) << " "
             << DirName(d) << (inferred ? " cudaMemcpyDefault" : "") << " offset " << w.off << " length "
             << w.n;
        RunCell(d, inferred, w, *host, *host2, *dev, check, stream, what.str());
        ++cells;
        if (HasFatalFailure()) break;
      }
      if (HasFatalFailure()) break;
    }
    if (HasFatalFailure()) break;
  }
  Observe("cells_checked", cells);
}

std::vector<MatrixCase> MatrixParams() {
  std::vector<MatrixCase> v;
  for (HostKind m : streams::HostMems()) {
    for (Api a : {Api::kMemcpy, Api::kMemcpyAsync, Api::kMemcpy2DAsync, Api::kMemset, Api::kMemsetAsync}) {
      // Pageable memory has no device alias: cudaMemset cannot reach it where attr 88 = 0.
      if (m == HostKind::kPageable && (a == Api::kMemset || a == Api::kMemsetAsync)) continue;
      if (!IsAsync(a)) {
        v.push_back({m, a, StreamKind::kNonBlocking});
        continue;
      }
      for (StreamKind k : AllStreamKinds()) v.push_back({m, a, k});
    }
  }
  return v;
}

// Names: host kind, API, stream kind ("Pinned_MemcpyAsync_PerThreadDefault",
// "RegisteredMmap_Memcpy_NoStreamArgument").
INSTANTIATE_TEST_SUITE_P(KindsAndApis, CopyMatrixTest, ::testing::ValuesIn(MatrixParams()),
                         [](const auto& info) {
                           return MemName(info.param.mem) + "_" + ApiName(info.param.api) + "_" +
                                  StreamArgName(info.param);
                         });

class CopiesTest : public GpuTest {};

TEST_F(CopiesTest, AsyncCopiesOnEveryDeviceDeliverEveryByte) {
  PAGELOCK_RULE("R14,R76,S01");
  PAGELOCK_REQUIRE(RequireDeviceCount(2));
  constexpr size_t kBytes = (size_t{4} << 20) + 7;
  std::string why;
  auto host = KindBuffer::Make(HostKind::kHostAllocPortable, kBytes, &why);  // allocated with device 0 current
  ASSERT_NE(host, nullptr) << why;
  const int count = static_cast<int>(Probe().devices.size());
  for (int d = 0; d < count; ++d) {
    ASSERT_CUDA_OK(cudaSetDevice(d));
    void* dev = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&dev, kBytes));
    const auto own_dev = DeviceBuffer::Adopt(dev);
    cudaStream_t s = nullptr;
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const auto own_s = OwnedStream::Adopt(s);
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    streams::HostFillPatternFrom(host->host(), kBytes, 0, seed);
    ASSERT_CUDA_OK(cudaMemcpyAsync(dev, host->host(), kBytes, cudaMemcpyHostToDevice, s));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s));
    std::memset(host->host(), 0, kBytes);
    ASSERT_CUDA_OK(cudaMemcpyAsync(host->host(), dev, kBytes, cudaMemcpyDeviceToHost, s));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_EQ(streams::HostCountPattern(host->host(), kBytes, 0, seed), 0u)
        << "device " << d << ": the round trip H2D then D2H changed bytes";
  }

  ASSERT_CUDA_OK(cudaSetDevice(0));
}

}  // namespace
}  // namespace pagelock
