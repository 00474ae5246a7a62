// Stress tier: sizes and offsets past 4 GiB. A cudaHostAlloc(Mapped) allocation and a
// cudaHostRegister(Mapped) registration of 4 GiB + 1 page (the last page starts at 2^32): the
// device reads and writes the first, a random middle and the last page through the mapped
// pointer; whole-size copies both ways; copies whose source or destination offset is past
// 4 GiB (cudaMemcpy and cudaMemcpyAsync on a non-blocking stream, H2D and D2H) and copies that
// straddle the 4 GiB offset, every byte of each window and 64 guard bytes either side checked.
// NotSupported with the numbers where MemAvailable (less the stress floor) or the device's free
// memory cannot hold the case. Where the host holds it, the driver may still refuse the pin:
// cudaHostAlloc and cudaHostRegister list cudaErrorMemoryAllocation and no size one call must pin
// is documented (R06, R47), so a clean refusal (not sticky) is recorded and WARNed and the case
// stops there; any other error, or a sticky refusal, fails (sizes::PinnedOrRefusedCleanly).
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/containment.h"
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
using sizes::kMiB;

constexpr size_t kFourGiB = size_t{4} << 30;
constexpr size_t kGuard = 64;
constexpr unsigned char kGuardByte = 0x5A;

// The routes: cudaHostAlloc(Mapped), or cudaHostRegister(Mapped) of an anonymous mmap. Their
// names in this family's case ids, which predate the kit's names:
std::string RouteName(PinRoute r) {
  static const Spelling<PinRoute> kCaseName(PinRouteName, {{PinRoute::kHostAlloc, "cudaHostAllocMapped"},
                                                           {PinRoute::kHostRegister, "cudaHostRegisterMapped"}});
  return kCaseName(r);
}

size_t Size() { return kFourGiB + PageSize(); }

class Past4GiBTest : public GpuTest, public ::testing::WithParamInterface<PinRoute> {
 protected:
  // Pins Size() bytes by the route (NotSupported where the host or device cannot hold the
  // case); host_ and dev_ are its two addresses. Where the driver refused the pin (cleanly: a
  // WARN; else a failure) not_pinned_ is set and the case stops.
  void Pin(size_t device_bytes) {
    if (GetParam() == PinRoute::kHostRegister) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrCanMapHostMemory, 1));
    const std::string host_short = sizes::HostMemoryShortfall(Size(), static_cast<size_t>(DefaultFloorBytes()));
    if (!host_short.empty()) PAGELOCK_NOT_SUPPORTED(host_short);
    if (device_bytes) {
      const std::string dev_short = sizes::DeviceMemoryShortfall(device_bytes + 256 * kMiB);
      if (!dev_short.empty()) PAGELOCK_NOT_SUPPORTED(dev_short);
    }
    Budget("pinned_host_bytes", static_cast<double>(Size()), "bytes");
    Budget("device_bytes", static_cast<double>(device_bytes), "bytes");
    // Success, or a clean cudaErrorMemoryAllocation (R06; no per-call minimum is documented):
    // the result is recorded as observation "pin".
    not_pinned_ = true;
    if (GetParam() == PinRoute::kHostAlloc) {
      alloc_ = PinnedBuffer(Size(), cudaHostAllocMapped);
      if (!sizes::PinnedOrRefusedCleanly("pin", alloc_.status(), PinRoute::kHostAlloc,
                                         "cudaHostAlloc(Mapped) of 4 GiB + 1 page")) {
        return;
      }
      host_ = alloc_.host();
    } else {
      map_ = std::make_unique<Mapping>(Size());
      ASSERT_NE(map_->data(), nullptr) << "mmap of 4 GiB + 1 page failed";
      reg_ = HostRegistration(map_->data(), Size(), cudaHostRegisterMapped);
      if (!sizes::PinnedOrRefusedCleanly("pin", reg_.status(), PinRoute::kHostRegister,
                                         "cudaHostRegister(Mapped) of 4 GiB + 1 page")) {
        return;
      }
      host_ = map_->data();
    }
    void* d = nullptr;
    ASSERT_CUDA_OK(cudaHostGetDevicePointer(&d, host_, 0));
    dev_ = static_cast<unsigned char*>(d);
    not_pinned_ = false;
    if (device_bytes) {
      device_ = DeviceBuffer(device_bytes);
      ASSERT_CUDA_OK(device_.status());
    }
    counters_ = std::make_unique<Counters>();
    ASSERT_CUDA_OK(counters_->status());
  }

  // Released before the health check, which would count a live pin as leaked.
  void TearDown() override {
    counters_.reset();
    EXPECT_CUDA_OK(device_.Free());
    EXPECT_CUDA_OK(reg_.Free());
    EXPECT_CUDA_OK(alloc_.Free());
    map_.reset();
    GpuTest::TearDown();
  }

  std::unique_ptr<Mapping> map_;  // declared before reg_: unregistered first
  HostRegistration reg_;
  PinnedBuffer alloc_;
  DeviceBuffer device_;
  std::unique_ptr<Counters> counters_;
  unsigned char* host_ = nullptr;
  unsigned char* dev_ = nullptr;
  bool not_pinned_ = true;  // Pin() did not complete: refused (a WARN) or failed
};

// A driver that truncates a mapped offset to 32 bits (the last page aliasing the first) or maps
// only the first 4 GiB of a range fails this: the device reads the host's bytes at each page
// and the host reads the device's writes there.
TEST_P(Past4GiBTest, MappedPointerReachesTheFirstAMiddleAndTheLastPagePast4GiB) {
  PAGELOCK_RULE("R113,R53");
  ASSERT_NO_FATAL_FAILURE(Pin(0));
  if (IsSkipped() || not_pinned_) return;
  const size_t page = PageSize(), n = Size();
  const size_t middle = page * (1 + CaseRng()() % (n / page - 2));
  Observe("middle_page_offset", static_cast<unsigned long long>(middle));
  const size_t pages[3] = {0, middle, n - page};
  const uint64_t seed = CaseRng()();
  for (size_t off : pages) HostFillSizePattern(host_ + off, page, off, seed);
  for (size_t off : pages) {
    cudaError_t e = cudaSuccess;
    EXPECT_EQ(sizes::DeviceCountPatternMismatches(*counters_, dev_ + off, page, off, seed, &e), 0u)
        << RouteName(GetParam()) << ": the device read other bytes than the host's at offset " << off;
    ASSERT_CUDA_OK(e);
  }
  cudaError_t e = cudaSuccess;
  EXPECT_EQ(sizes::DeviceCountPatternMismatches(*counters_, dev_ + n - 1, 1, n - 1, seed, &e), 0u) << "the last byte";
  ASSERT_CUDA_OK(e);
  for (size_t off : pages) ASSERT_CUDA_OK(LaunchFillSizePattern(dev_ + off, page, off, ~seed));
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  for (size_t off : pages) {
    EXPECT_EQ(HostCountSizePatternMismatches(host_ + off, page, off, ~seed), 0u)
        << RouteName(GetParam()) << ": the host does not read the device's writes at offset " << off;
  }
}

// A driver that copies at most 4 GiB (a 32-bit length), or splits a large copy and drops,
// repeats or reorders a piece, fails this: a copy of the whole 4 GiB + 1 page each way delivers
// every byte.
TEST_P(Past4GiBTest, WholeSizeCopiesBothWaysDeliverEveryByte) {
  PAGELOCK_RULE("R114");
  const size_t n = Size();
  ASSERT_NO_FATAL_FAILURE(Pin(n));
  if (IsSkipped() || not_pinned_) return;
  unsigned char* dev = device_.as<unsigned char>();
  const uint64_t seed = CaseRng()();
  HostFillSizePattern(host_, n, 0, seed);
  ASSERT_CUDA_OK(cudaMemcpy(dev, host_, n, cudaMemcpyHostToDevice));
  cudaError_t e = cudaSuccess;
  EXPECT_EQ(sizes::DeviceCountPatternMismatches(*counters_, dev, n, 0, seed, &e), 0u)
      << RouteName(GetParam()) << ": bytes of the whole host-to-device copy differ from the host's";
  ASSERT_CUDA_OK(e);
  ASSERT_CUDA_OK(LaunchFillSizePattern(dev, n, 0, ~seed));
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  ASSERT_CUDA_OK(cudaMemcpy(host_, dev, n, cudaMemcpyDeviceToHost));
  EXPECT_EQ(HostCountSizePatternMismatches(host_, n, 0, ~seed), 0u)
      << RouteName(GetParam()) << ": bytes of the whole device-to-host copy differ from the device's";
}

struct Window {
  const char* name;
  size_t off, n;
};

// Windows past and across 4 GiB, at the same offset in host and device memory.
std::vector<Window> Windows() {
  const size_t n = Size(), page = PageSize();
  return {
      {"1000_bytes_just_past_4GiB", kFourGiB + 1, 1000},
      {"past_4GiB_to_the_last_byte", kFourGiB + 77, n - kFourGiB - 77},
      {"straddling_4GiB_by_2MiB", kFourGiB - 2 * kMiB - 3, 2 * kMiB + 3 + page / 2},
      {"64MiB_across_4GiB_to_the_last_byte", kFourGiB - 64 * kMiB + 5, 64 * kMiB - 5 + page},
  };
}

// A driver that truncates a host or device offset past 4 GiB to 32 bits, or splits a copy at
// the 4 GiB offset and loses bytes there, fails this: each window's bytes arrive at its own
// offset and the guard bytes around it (inside the buffer) stay.
TEST_P(Past4GiBTest, CopiesAtOffsetsPast4GiBDeliverTheWindowAndNothingElse) {
  PAGELOCK_RULE("R114,R76");
  const size_t n = Size();
  ASSERT_NO_FATAL_FAILURE(Pin(n));
  if (IsSkipped() || not_pinned_) return;
  unsigned char* dev = device_.as<unsigned char>();
  OwnedStream stream(cudaStreamNonBlocking);
  ASSERT_CUDA_OK(stream.status());
  cudaError_t e = cudaSuccess;
  for (const Window& w : Windows()) {
    ASSERT_LE(w.off + w.n, n) << w.name;
    const size_t before = std::min(kGuard, w.off), after = std::min(kGuard, n - w.off - w.n);
    for (bool async : {false, true}) {
      const std::string what = std::string(w.name) + (async ? " (cudaMemcpyAsync, non-blocking stream)" : " (cudaMemcpy)");
      const uint64_t seed = CaseRng()();
      auto copy = [&](void* to, const void* from, cudaMemcpyKind kind) {
        // copy-check: each direction's window and guards are counted right after its copy
        cudaError_t r = async ? cudaMemcpyAsync(to, from, w.n, kind, stream.get()) : cudaMemcpy(to, from, w.n, kind);
        return r == cudaSuccess ? cudaStreamSynchronize(stream.get()) : r;
      };
      // Host to device: the source offset (host) and destination offset (device) are past 4 GiB.
      HostFillSizePattern(host_ + w.off, w.n, w.off, seed);
      ASSERT_CUDA_OK(LaunchFillBytes(dev + w.off - before, before + w.n + after, kGuardByte)) << what;
      ASSERT_CUDA_OK(cudaDeviceSynchronize()) << what;
      ASSERT_CUDA_OK(copy(dev + w.off, host_ + w.off, cudaMemcpyHostToDevice)) << what;
      EXPECT_EQ(sizes::DeviceCountPatternMismatches(*counters_, dev + w.off, w.n, w.off, seed, &e), 0u)
          << what << ": host to device: bytes of the window differ from the source";
      ASSERT_CUDA_OK(e);
      EXPECT_EQ(sizes::DeviceCountGuardMismatches(*counters_, dev + w.off - before, before, kGuardByte, &e) +
                    sizes::DeviceCountGuardMismatches(*counters_, dev + w.off + w.n, after, kGuardByte, &e),
                0u)
          << what << ": host to device: bytes next to the window were written";
      ASSERT_CUDA_OK(e);
      // Device to host.
      std::memset(host_ + w.off - before, kGuardByte, before + w.n + after);
      ASSERT_CUDA_OK(LaunchFillSizePattern(dev + w.off, w.n, w.off, ~seed)) << what;
      ASSERT_CUDA_OK(cudaDeviceSynchronize()) << what;
      ASSERT_CUDA_OK(copy(host_ + w.off, dev + w.off, cudaMemcpyDeviceToHost)) << what;
      EXPECT_EQ(HostCountSizePatternMismatches(host_ + w.off, w.n, w.off, ~seed), 0u)
          << what << ": device to host: bytes of the window differ from the source";
      EXPECT_EQ(HostCountBytesNot(host_ + w.off - before, before, kGuardByte) +
                    HostCountBytesNot(host_ + w.off + w.n, after, kGuardByte),
                0u)
          << what << ": device to host: bytes next to the window were written";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Routes, Past4GiBTest, ::testing::Values(PinRoute::kHostAlloc, PinRoute::kHostRegister),
                         [](const ::testing::TestParamInfo<PinRoute>& i) { return std::string(RouteName(i.param)); });

}  // namespace
}  // namespace pagelock
