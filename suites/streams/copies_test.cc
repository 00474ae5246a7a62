// Every copy and memset API over every kind of host memory, in every direction, at sizes from
// one byte to 64 MiB and odd offsets: each call is followed by a check of every byte of its
// window (on the device, through the device alias, when the window is big) and of the bytes on
// either side of it, which must be untouched. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <cstring>
#include <sstream>
#include <tuple>
#include <vector>

#include "fixtures/gpu_test.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

using streams::Buffer;
using streams::Checker;
using streams::Mem;

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

// Odd offsets and lengths around the page and the host/device check limit; 64 MiB for the
// async copy, the call the bandwidth suite times.
std::vector<Window> Windows(Api api) {
  std::vector<Window> w = {{0, 1}, {1, 1}, {3, 2}, {7, 4095}, {4093, 4097}, {5, 65537}, {13, (size_t{1} << 20) + 13}};
  if (api == Api::kMemcpyAsync) w.push_back({0, kBig});
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

class CopyMatrixTest : public GpuTest, public ::testing::WithParamInterface<std::tuple<Mem, Api>> {
 protected:
  Mem mem() const { return std::get<0>(GetParam()); }
  Api api() const { return std::get<1>(GetParam()); }
  bool IsMemset() const { return api() == Api::kMemset || api() == Api::kMemsetAsync; }

  std::vector<Dir> Dirs() const {
    if (IsMemset()) return {Dir::kMemsetHostAlias, Dir::kMemsetDeviceAlias};
    std::vector<Dir> d = {Dir::kH2D, Dir::kD2H, Dir::kH2H};
    if (mem() != Mem::kPageable) {
      d.push_back(Dir::kAliasToDevice);
      d.push_back(Dir::kDeviceToAlias);
    }
    return d;
  }

  // Runs one copy or memset of window w in direction d and checks every byte of the window and
  // the guard bytes on both sides. `what` names the cell in failure messages.
  void RunCell(Dir d, Window w, Buffer& host, Buffer& host2, Buffer& dev, Checker& check,
               cudaStream_t stream, const std::string& what) {
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    Buffer* src = nullptr;
    Buffer* dst = nullptr;
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
    ASSERT_CUDA_OK(cudaDeviceSynchronize()) << what;

    size_t bad = 0;
    if (api() == Api::kMemcpy2DAsync) {
      // Each row holds the source's row; each gap and the bytes after the last row keep their
      // guard. The span is read once (device memory and write-combined memory through a
      // readback copy whose bytes are the ones compared), then checked row by row on the host.
      const size_t span = (rows - 1) * pitch + width + kGuardBytes;
      std::vector<unsigned char> copy(span);
      const unsigned char* view = dst->host() + w.off;
      if (dst->dev() && (!dst->host() || dst->kind() == Mem::kWriteCombined)) {
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

TEST_P(CopyMatrixTest, EveryByteOfEveryWindowArrivesAndNeighboursStayUntouched) {
  PAGELOCK_RULE("R75,R76,S01");
  if (streams::IsRegistered(mem())) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  size_t capacity = 0;
  for (Window w : Windows(api())) capacity = std::max(capacity, w.off + w.n + kGuardBytes);
  std::string why;
  auto host = Buffer::Make(mem(), capacity, &why);
  ASSERT_NE(host, nullptr) << why;
  auto host2 = Buffer::Make(mem(), capacity, &why);
  ASSERT_NE(host2, nullptr) << why;
  auto dev = Buffer::Make(Mem::kDevice, capacity, &why);
  ASSERT_NE(dev, nullptr) << why;
  Checker check;
  ASSERT_CUDA_OK(check.status());
  cudaStream_t stream = nullptr;
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const auto own_stream = OwnedStream::Adopt(stream);
  int cells = 0;
  for (Dir d : Dirs()) {
    // R15: a write-combined allocation's device address may differ from its host address; the
    // host pointer is then no device address and a memset through it is not valid.
    if (d == Dir::kMemsetHostAlias && host->host() != host->dev()) {
      Observe("memset_host_alias_skipped", "device alias differs from the host pointer (R15)");
      continue;
    }
    for (Window w : Windows(api())) {
      // Host reads of write-combined memory are uncached (R16): the CPU-side host-to-host copy
      // of 64 MiB would take seconds, so that one window is left to the other directions.
      if (mem() == Mem::kWriteCombined && d == Dir::kH2H && w.n > kBig / 2) continue;
      std::ostringstream what;
      what << MemName(mem()) << " " << ApiName(api()) << " " << DirName(d) << " offset " << w.off
           << " length " << w.n;
      RunCell(d, w, *host, *host2, *dev, check, stream, what.str());
      ++cells;
      if (HasFatalFailure()) break;
    }
    if (HasFatalFailure()) break;
  }
  Observe("cells_checked", cells);
}

std::vector<std::tuple<Mem, Api>> MatrixParams() {
  std::vector<std::tuple<Mem, Api>> v;
  for (Mem m : streams::HostMems()) {
    for (Api a : {Api::kMemcpy, Api::kMemcpyAsync, Api::kMemcpy2DAsync, Api::kMemset, Api::kMemsetAsync}) {
      // Pageable memory has no device alias: cudaMemset cannot reach it where attr 88 = 0.
      if (m == Mem::kPageable && (a == Api::kMemset || a == Api::kMemsetAsync)) continue;
      v.emplace_back(m, a);
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(KindsAndApis, CopyMatrixTest, ::testing::ValuesIn(MatrixParams()),
                         [](const auto& info) {
                           return MemName(std::get<0>(info.param)) + "_" + ApiName(std::get<1>(info.param));
                         });

class CopiesTest : public GpuTest {};

TEST_F(CopiesTest, AsyncCopiesOnEveryDeviceDeliverEveryByte) {
  PAGELOCK_RULE("R14,R76,S01");
  PAGELOCK_REQUIRE(RequireDeviceCount(2));
  constexpr size_t kBytes = (size_t{4} << 20) + 7;
  std::string why;
  auto host = Buffer::Make(Mem::kPinnedPortable, kBytes, &why);  // allocated with device 0 current
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
