// Copies at the sizes where a driver changes its path on purpose: around 64 KiB and 1 MiB and
// beyond (where pageable copies are staged through bounce buffers, in pieces), and windows that
// start 1 byte before a 4 KiB page boundary or a 2 MiB huge-page boundary and end 1 byte after
// it (or after the whole page), between device memory and pinned (cudaMallocHost), pageable
// (2 MiB aligned mmap, transparent huge pages asked for) and registered (the same, registered)
// host memory, through cudaMemcpy and through cudaMemcpyAsync on a non-blocking stream. Every
// byte of each window and 64 guard bytes on either side are checked. Full tier, small (about
// 20 MiB copied per case). Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/host_kinds.h"
#include "fixtures/host_memory.h"
#include "fixtures/resources.h"
#include "kernels/sizes/size_kernels.h"
#include "kernels/sizes/size_pattern.h"
#include "suites/sizes/size_util.h"

namespace pagelock {
namespace {

using sizes::Counters;
using sizes::kHugePage;
using sizes::kMiB;

constexpr size_t kBuffer = 8 * kMiB;
constexpr size_t kGuard = 64;
constexpr unsigned char kGuardByte = 0xA5;

// The sources (fixtures/host_kinds.h): cudaMallocHost, and a 2 MiB aligned anonymous mapping with
// transparent huge pages asked for, pageable or registered (cudaHostRegisterDefault).
enum class Api { kMemcpy, kMemcpyAsyncNonBlocking };

// The sources' names in this family's case ids, which predate the kit's names.
std::string SourceCaseName(HostKind s) {
  static const Spelling<HostKind> kCaseName(HostKindName, {{HostKind::kMallocHost, "Pinned"},
                                                           {HostKind::kRegisteredMmap, "Registered"}});
  return kCaseName(s);
}const char* ApiName(Api a) { return a == Api::kMemcpy ? "Memcpy" : "MemcpyAsyncNonBlocking"; }

// Where a window sits: `delta` bytes from the start of the buffer's usable part, or from the
// first 4 KiB or 2 MiB boundary of the host address after it.
enum class Anchor { kStart, kPage, kHugePage };
struct Window {
  const char* name;
  Anchor anchor;
  long delta;
  size_t n;
};

std::vector<Window> Windows() {
  const size_t page = PageSize();
  return {
      {"64KiB_minus_1", Anchor::kStart, 1, 64 * 1024 - 1},
      {"64KiB", Anchor::kStart, 0, 64 * 1024},
      {"64KiB_plus_1", Anchor::kStart, 1, 64 * 1024 + 1},
      {"1MiB_minus_1", Anchor::kStart, 3, kMiB - 1},
      {"1MiB", Anchor::kStart, 0, kMiB},
      {"1MiB_plus_1", Anchor::kStart, 3, kMiB + 1},
      {"2MiB_plus_1", Anchor::kStart, 5, 2 * kMiB + 1},
      {"4MiB_plus_1", Anchor::kStart, 7, 4 * kMiB + 1},
      {"page_boundary_1_byte_either_side", Anchor::kPage, -1, 2},
      {"page_from_1_before_to_1_after", Anchor::kPage, -1, page + 2},
      {"huge_page_boundary_1_byte_either_side", Anchor::kHugePage, -1, 2},
      {"huge_page_from_1_before_to_1_after", Anchor::kHugePage, -1, kHugePage + 2},
  };
}

// The window's offset in a buffer whose host address is `host`.
size_t Offset(const Window& w, const unsigned char* host) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(host) + 2 * kGuard;
  uintptr_t at = start;
  if (w.anchor == Anchor::kPage) at = (start + PageSize() - 1) & ~uintptr_t(PageSize() - 1);
  if (w.anchor == Anchor::kHugePage) at = (start + kHugePage - 1) & ~uintptr_t(kHugePage - 1);
  return static_cast<size_t>(at - reinterpret_cast<uintptr_t>(host)) + w.delta;
}

class SizePathsTest : public GpuTest, public ::testing::WithParamInterface<std::tuple<HostKind, Api>> {
 protected:
  HostKind source() const { return std::get<0>(GetParam()); }
  Api api() const { return std::get<1>(GetParam()); }

  // The copy under test, completed before it returns.
  cudaError_t Copy(void* to, const void* from, size_t n, cudaMemcpyKind kind, cudaStream_t stream) {
    // copy-check: every caller counts the window and its guards after the call
    cudaError_t e = api() == Api::kMemcpy ? cudaMemcpy(to, from, n, kind) : cudaMemcpyAsync(to, from, n, kind, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    return e;
  }
};

// A driver whose staged (pageable) path drops, repeats or shifts a chunk at a bounce-buffer
// boundary, whose path switch at 64 KiB or 1 MiB copies one byte too few or too many, or that
// splits a copy at a page or huge-page boundary and loses the byte before or after it, fails
// this: every byte of the window arrives and the 64 bytes either side keep their guard.
TEST_P(SizePathsTest, CopiesAtPathThresholdsAndPageBoundariesDeliverEveryByteAndNothingElse) {
  PAGELOCK_RULE("R112,R76,S01");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrCanMapHostMemory, 1));  // the mismatch counters are mapped
  if (source() == HostKind::kRegisteredMmap) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  PinnedBuffer pinned;
  std::unique_ptr<Mapping> map;
  HostRegistration reg;
  unsigned char* host = nullptr;
  if (source() == HostKind::kMallocHost) {
    pinned = PinnedBuffer::MallocHost(kBuffer);
    ASSERT_CUDA_OK(pinned.status());
    host = pinned.host();
  } else {
    map = std::make_unique<Mapping>(kBuffer, Mapping::kHugeAligned);
    if (*map) (void)map->Advise(MADV_HUGEPAGE);  // a hint; where THP is off the pages stay 4 KiB
    ASSERT_NE(map->data(), nullptr) << "mmap failed";
    host = map->data();
    if (source() == HostKind::kRegisteredMmap) {
      reg = HostRegistration(host, kBuffer, cudaHostRegisterDefault);
      ASSERT_CUDA_OK(reg.status());
    }
  }
  DeviceBuffer dev_buf(kBuffer);
  ASSERT_CUDA_OK(dev_buf.status());
  unsigned char* dev = dev_buf.as<unsigned char>();
  Counters counters;
  ASSERT_CUDA_OK(counters.status());
  OwnedStream stream(cudaStreamNonBlocking);
  ASSERT_CUDA_OK(stream.status());
  cudaError_t e = cudaSuccess;

  for (const Window& w : Windows()) {
    const size_t off = Offset(w, host);
    ASSERT_LE(off + w.n + kGuard, kBuffer) << w.name;
    ASSERT_GE(off, kGuard) << w.name;
    const std::string what = std::string(w.name) + " (offset " + std::to_string(off) + ", " + std::to_string(w.n) +
                             " bytes, " + SourceCaseName(source()) + ", " + ApiName(api()) + ")";
    const uint64_t seed = CaseRng()();

    // Host to device: the host fills the window, the device's window and guards start as guards.
    HostFillSizePattern(host + off, w.n, off, seed);
    ASSERT_CUDA_OK(LaunchFillBytes(dev + off - kGuard, kGuard + w.n + kGuard, kGuardByte)) << what;
    ASSERT_CUDA_OK(cudaDeviceSynchronize()) << what;  // the non-blocking stream does not wait for stream 0
    ASSERT_CUDA_OK(Copy(dev + off, host + off, w.n, cudaMemcpyHostToDevice, stream.get())) << what;
    EXPECT_EQ(sizes::DeviceCountPatternMismatches(counters, dev + off, w.n, off, seed, &e), 0u)
        << what << ": host to device: bytes of the window differ from the source";
    ASSERT_CUDA_OK(e);
    EXPECT_EQ(sizes::DeviceCountGuardMismatches(counters, dev + off - kGuard, kGuard, kGuardByte, &e), 0u)
        << what << ": host to device: bytes before the window were written";
    ASSERT_CUDA_OK(e);
    EXPECT_EQ(sizes::DeviceCountGuardMismatches(counters, dev + off + w.n, kGuard, kGuardByte, &e), 0u)
        << what << ": host to device: bytes after the window were written";
    ASSERT_CUDA_OK(e);

    // Device to host: the device fills its window, the host's window and guards start as guards.
    std::memset(host + off - kGuard, kGuardByte, kGuard + w.n + kGuard);
    ASSERT_CUDA_OK(LaunchFillSizePattern(dev + off, w.n, off, ~seed)) << what;
    ASSERT_CUDA_OK(cudaDeviceSynchronize()) << what;
    ASSERT_CUDA_OK(Copy(host + off, dev + off, w.n, cudaMemcpyDeviceToHost, stream.get())) << what;
    EXPECT_EQ(HostCountSizePatternMismatches(host + off, w.n, off, ~seed), 0u)
        << what << ": device to host: bytes of the window differ from the source";
    EXPECT_EQ(HostCountBytesNot(host + off - kGuard, kGuard, kGuardByte), 0u)
        << what << ": device to host: bytes before the window were written";
    EXPECT_EQ(HostCountBytesNot(host + off + w.n, kGuard, kGuardByte), 0u)
        << what << ": device to host: bytes after the window were written";
  }
}

INSTANTIATE_TEST_SUITE_P(
    SourcesAndApis, SizePathsTest,
    ::testing::Combine(::testing::Values(HostKind::kMallocHost, HostKind::kPageable, HostKind::kRegisteredMmap),
                       ::testing::Values(Api::kMemcpy, Api::kMemcpyAsyncNonBlocking)),
    [](const ::testing::TestParamInfo<std::tuple<HostKind, Api>>& i) {
      return SourceCaseName(std::get<0>(i.param)) + "_" + ApiName(std::get<1>(i.param));
    });

}  // namespace
}  // namespace pagelock
