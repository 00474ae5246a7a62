// Every GPU at once on one page-locked host buffer: each device's kernels write their own stripes
// of the buffer through that device's pointer, all devices concurrently (one non-blocking stream
// per device, every launch queued before any wait), disjoint halves and interleaved 64 KiB
// stripes, over allocated and registered memory; the host then checks every byte. And a buffer
// freed while another device's context is alive leaves that device working. NotSupported with
// fewer than two GPUs (`cudaGetDeviceCount=1 (need 2)`). Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/host_kinds.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"
#include "kernels/pattern.h"
#include "kernels/streams/stream_kernels.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{8} << 20;
constexpr size_t kStripe = size_t{64} << 10;

// The kinds: cudaHostAlloc Portable|Mapped (with and without WriteCombined) and a page-aligned
// heap registered Portable|Mapped.
enum class Layout { kHalves, kInterleaved };
struct Param {
  HostKind kind;
  Layout layout;
};

std::string Name(const ::testing::TestParamInfo<Param>& info) {
  // The kinds' names in this family's case ids, which predate the kit's names.
  static const Spelling<HostKind> kCaseName(HostKindName, {{HostKind::kHostAllocPortableMapped, "PortableMapped"},
                                                           {HostKind::kHostAllocAllFlags, "PortableMappedWriteCombined"}});
  return kCaseName(info.param.kind) + (info.param.layout == Layout::kHalves ? "_Halves" : "_Interleaved");
}

class ConcurrentPortableTest : public GpuTest, public ::testing::WithParamInterface<Param> {
 protected:
  ConcurrentPortableTest() : GpuTest(/*devices=*/2) {}
  static int devices() { return static_cast<int>(Probe().devices.size()); }
  // Which device writes the stripe that starts at `off`.
  int Owner(size_t off, int n) const {
    if (GetParam().layout == Layout::kHalves) return static_cast<int>(off * n / kSize);
    return static_cast<int>((off / kStripe) % n);
  }
};

// Faults caught: a device pointer valid on device 0 only (the other devices' writes fault or land
// elsewhere), a registration not made portable, a copy engine or kernel dropping one device's
// work; the bytes say which device's stripes are wrong.
TEST_P(ConcurrentPortableTest, EveryDeviceWritesItsStripesAtOnceAndTheHostSeesEveryByte) {
  PAGELOCK_RULE("R18,R14");
  const int n = devices();
  void* host = nullptr;
  PinnedBuffer pinned;
  HostRegistration registered;
  std::unique_ptr<void, decltype(&std::free)> heap(nullptr, &std::free);
  if (GetParam().kind == HostKind::kRegisteredMalloc) {
    heap.reset(std::aligned_alloc(4096, kSize));
    ASSERT_NE(heap.get(), nullptr);
    ASSERT_CUDA_OK(cudaHostRegister(heap.get(), kSize, cudaHostRegisterMapped | cudaHostRegisterPortable));
    registered = HostRegistration::Adopt(heap.get(), kSize);
    host = heap.get();
  } else {
    ASSERT_CUDA_OK(cudaHostAlloc(&host, kSize, HostAllocFlagsOf(GetParam().kind)));
    pinned = PinnedBuffer::Adopt(host, kSize);
  }
  std::memset(host, 0, kSize);
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  std::vector<OwnedStream> streams;
  for (int d = 0; d < n; ++d) {
    ASSERT_CUDA_OK(cudaSetDevice(d));
    streams.emplace_back(cudaStreamNonBlocking);
    ASSERT_CUDA_OK(streams.back().status());
  }
  // Every launch of every device first, then the waits: the devices' kernels overlap.
  for (size_t off = 0; off < kSize; off += kStripe) {
    const int d = Owner(off, n);
    ASSERT_CUDA_OK(cudaSetDevice(d));
    void* alias = nullptr;
    ASSERT_CUDA_OK(cudaHostGetDevicePointer(&alias, host, 0));
    ASSERT_CUDA_OK(LaunchFillPatternFrom(static_cast<unsigned char*>(alias) + off, kStripe, off, seed,
                                         streams[d].get()));
  }
  for (int d = 0; d < n; ++d) {
    ASSERT_CUDA_OK(cudaSetDevice(d));
    EXPECT_CUDA_OK(cudaStreamSynchronize(streams[d].get())) << "device " << d;
  }
  std::vector<size_t> bad(n, 0);
  const auto* p = static_cast<const unsigned char*>(host);
  for (size_t i = 0; i < kSize; ++i) {
    if (p[i] != PatternByte(i, seed)) ++bad[Owner(i - i % kStripe, n)];
  }
  for (int d = 0; d < n; ++d) EXPECT_EQ(bad[d], 0u) << "bytes of device " << d << "'s stripes";
  for (int d = 0; d < n; ++d) {
    ASSERT_CUDA_OK(cudaSetDevice(d));
    EXPECT_CUDA_OK(streams[d].Free());
  }
  ASSERT_CUDA_OK(cudaSetDevice(0));
  EXPECT_CUDA_OK(GetParam().kind == HostKind::kRegisteredMalloc ? registered.Free() : pinned.Free());
}

INSTANTIATE_TEST_SUITE_P(
    EveryKind, ConcurrentPortableTest,
    ::testing::Values(Param{HostKind::kHostAllocPortableMapped, Layout::kHalves},
                      Param{HostKind::kHostAllocPortableMapped, Layout::kInterleaved},
                      Param{HostKind::kHostAllocAllFlags, Layout::kInterleaved},
                      Param{HostKind::kRegisteredMalloc, Layout::kHalves},
                      Param{HostKind::kRegisteredMalloc, Layout::kInterleaved}),
    Name);

class FreeBesideAnotherContextTest : public GpuTest {
 protected:
  FreeBesideAnotherContextTest() : GpuTest(/*devices=*/2) {}
};

// Faults caught: a free that tears down state device 1 still needs (its next launch fails or
// its bytes are wrong), a free that fails because another device used the buffer.
TEST_F(FreeBesideAnotherContextTest, FreeingWhileAnotherDeviceIsAliveLeavesThatDeviceWorking) {
  PAGELOCK_RULE("R18,R19");
  void* host = nullptr;
  ASSERT_CUDA_OK(cudaSetDevice(0));
  ASSERT_CUDA_OK(cudaHostAlloc(&host, kSize, cudaHostAllocPortable | cudaHostAllocMapped));
  auto own = PinnedBuffer::Adopt(host, kSize);
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  ASSERT_CUDA_OK(cudaSetDevice(1));
  void* alias = nullptr;
  ASSERT_CUDA_OK(cudaHostGetDevicePointer(&alias, host, 0));
  ASSERT_CUDA_OK(LaunchFillPattern(alias, kSize, seed));
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(HostCountPatternMismatches(host, kSize, seed), 0u) << "device 1's writes";
  ASSERT_CUDA_OK(cudaSetDevice(0));
  EXPECT_CUDA_OK(own.Free());  // device 1's context is alive and has used the buffer
  ASSERT_CUDA_OK(cudaSetDevice(1));
  void* dev = nullptr;
  ASSERT_CUDA_OK(cudaMalloc(&dev, kSize));
  auto own_dev = DeviceBuffer::Adopt(dev);
  ASSERT_CUDA_OK(LaunchFillPattern(dev, kSize, seed ^ 1u));
  unsigned long long* bad = nullptr;
  ASSERT_CUDA_OK(cudaMallocManaged(&bad, sizeof *bad));
  auto own_bad = DeviceBuffer::Adopt(bad);
  *bad = 0;
  ASSERT_CUDA_OK(LaunchCountPatternMismatches(dev, kSize, seed ^ 1u, bad));
  EXPECT_CUDA_OK(cudaDeviceSynchronize()) << "device 1 after the free on device 0";
  EXPECT_EQ(*bad, 0u) << "device 1's own memory after the free";
  EXPECT_CUDA_OK(own_bad.Free());
  EXPECT_CUDA_OK(own_dev.Free());
  ASSERT_CUDA_OK(cudaSetDevice(0));
}

}  // namespace
}  // namespace pagelock
