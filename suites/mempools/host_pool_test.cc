// Stream-ordered page-locked pools: cudaMemPoolCreate with a host location
// (cudaMemLocationTypeHost, or cudaMemLocationTypeHostNuma on the host node closest to device 0),
// cudaMallocFromPoolAsync on a stream, a kernel writing the allocation through the access the
// pool grants device 0, the host reading the bytes directly after the stream synchronises (host
// pool memory is host accessible: "their default accessibility will be from the host CPU"),
// cudaFreeAsync; trimming the pool after every free leaves nothing in use and no more reserved
// (what it still reserves is recorded, a WARN when not 0); an allocation
// larger than the pool's maxSize fails with one of the documented codes (out of memory, invalid
// value). Host-located pools and their support attributes are in the CUDA
// 13.0 headers: built with an older runtime every case is NotSupported with CUDART_VERSION as the
// reason; on a device whose attribute says unsupported, NotSupported with the attribute and its
// value. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <string>

#include "fixtures/gpu_test.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"
#include "kernels/pattern.h"

namespace pagelock {
namespace {

constexpr size_t kBytes = size_t{4} << 20;
constexpr size_t kMaxPool = size_t{32} << 20;  // a multiple of the 2 MiB allocation granularity

enum class HostLocation { kHost, kHostNuma };

std::string Name(const ::testing::TestParamInfo<HostLocation>& info) {
  return info.param == HostLocation::kHost ? "Host" : "HostNuma";
}

#if CUDART_VERSION >= 13000

// A pool destroyed at the end of scope (the destroy's result a non-fatal failure there).
struct OwnedPool {
  cudaMemPool_t pool = nullptr;
  OwnedPool() = default;
  OwnedPool(const OwnedPool&) = delete;
  OwnedPool& operator=(const OwnedPool&) = delete;
  ~OwnedPool() {
    if (pool) ExpectReleased("cudaMemPoolDestroy", Free());
  }
  cudaError_t Free() {
    cudaMemPool_t p = pool;
    pool = nullptr;
    return p ? cudaMemPoolDestroy(p) : cudaSuccess;
  }
};

// Queries an attribute the probe does not record (the host-pool attributes are CUDA 13.0's).
Requirement RequireDeviceAttr(cudaDeviceAttr a, const char* name, int wanted) {
  int v = -1;
  const cudaError_t e = cudaDeviceGetAttribute(&v, a, 0);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return {false, std::string(name) + " query returned " + ErrName(e)};
  }
  if (v == wanted) return {};
  return {false, std::string(name) + "=" + std::to_string(v) + " (need " + std::to_string(wanted) + ") on device 0"};
}

#endif  // CUDART_VERSION >= 13000

class HostPoolTest : public GpuTest, public ::testing::WithParamInterface<HostLocation> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireRuntimeApi(13000, "cudaMemPoolCreate with a host location"));
#if CUDART_VERSION >= 13000
    PAGELOCK_REQUIRE(RequireDeviceAttr(cudaDevAttrMemoryPoolsSupported, "cudaDevAttrMemoryPoolsSupported", 1));
    if (GetParam() == HostLocation::kHost) {
      PAGELOCK_REQUIRE(
          RequireDeviceAttr(cudaDevAttrHostMemoryPoolsSupported, "cudaDevAttrHostMemoryPoolsSupported", 1));
    } else {
      PAGELOCK_REQUIRE(RequireDeviceAttr(cudaDevAttrHostNumaMemoryPoolsSupported,
                                         "cudaDevAttrHostNumaMemoryPoolsSupported", 1));
      ASSERT_CUDA_OK(cudaDeviceGetAttribute(&numa_id_, cudaDevAttrHostNumaId, 0));
      if (numa_id_ < 0) PAGELOCK_NOT_SUPPORTED("cudaDevAttrHostNumaId=" + std::to_string(numa_id_) + " on device 0");
    }
    stream_ = OwnedStream(cudaStreamNonBlocking);
    ASSERT_CUDA_OK(stream_.status());
#endif
  }
  cudaStream_t stream() const { return stream_.get(); }

#if CUDART_VERSION >= 13000
  // A pinned pool at the parameter's host location, device 0 granted read-write access.
  cudaError_t Create(OwnedPool* out, size_t max_size) const {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;  // host pools are not IPC capable
    props.location.type = GetParam() == HostLocation::kHost ? cudaMemLocationTypeHost : cudaMemLocationTypeHostNuma;
    props.location.id = GetParam() == HostLocation::kHost ? 0 : numa_id_;
    props.maxSize = max_size;
    cudaError_t e = cudaMemPoolCreate(&out->pool, &props);
    if (e != cudaSuccess) {
      out->pool = nullptr;
      return e;
    }
    cudaMemAccessDesc access{};
    access.location.type = cudaMemLocationTypeDevice;
    access.location.id = 0;
    access.flags = cudaMemAccessFlagsProtReadWrite;
    return cudaMemPoolSetAccess(out->pool, &access, 1);
  }
  static size_t PoolAttr(cudaMemPool_t pool, cudaMemPoolAttr a) {
    cuuint64_t v = ~cuuint64_t{0};
    EXPECT_CUDA_OK(cudaMemPoolGetAttribute(pool, a, &v));
    return static_cast<size_t>(v);
  }
#endif

 private:
  OwnedStream stream_;
  int numa_id_ = -1;
};

// A driver that backs a host pool with memory the host cannot read (device memory, or pages not
// mapped into the process), that ignores the access granted to the device (the kernel faults), or
// whose stream-ordered allocation is not complete when the stream's later work runs, fails this:
// the host reads other bytes than the kernel wrote.
TEST_P(HostPoolTest, AKernelWritesAHostPoolAllocationAndTheHostReadsItDirectly) {
  PAGELOCK_RULE("R144");
#if CUDART_VERSION >= 13000
  OwnedPool pool;
  ASSERT_CUDA_OK(Create(&pool, 0));
  cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;
  cudaMemLocation dev0{};
  dev0.type = cudaMemLocationTypeDevice;
  dev0.id = 0;
  EXPECT_CUDA_OK(cudaMemPoolGetAccess(&flags, pool.pool, &dev0));
  EXPECT_EQ(flags, cudaMemAccessFlagsProtReadWrite) << "the access granted to device 0";
  void* p = nullptr;
  ASSERT_CUDA_OK(cudaMallocFromPoolAsync(&p, kBytes, pool.pool, stream()));
  ASSERT_NE(p, nullptr);
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  ASSERT_CUDA_OK(LaunchFillPattern(p, kBytes, seed, stream()));
  ASSERT_CUDA_OK(cudaStreamSynchronize(stream()));
  EXPECT_EQ(HostCountPatternMismatches(p, kBytes, seed), 0u) << "bytes the host reads of the kernel's writes";
  EXPECT_CUDA_OK(cudaFreeAsync(p, stream()));
  EXPECT_CUDA_OK(cudaStreamSynchronize(stream()));
  EXPECT_CUDA_OK(pool.Free());
#endif
}

// A pool that counts a completed free as still in use, or whose trim reserves more than it held,
// fails this. The release threshold is raised first so that the synchronize keeps the freed
// memory reserved ("Amount of reserved memory in bytes to hold onto before trying to release
// memory back to the OS") and the trim has something to release: with the default of 0 the
// synchronize released it already and the trim was never exercised (r580: 0 bytes before it).
// How much a trim to 0 releases is the allocator's to decide (cudaMemPoolTrimTo: "Releases
// memory back to the OS until the pool contains fewer than minBytesToKeep reserved bytes, or
// there is no more memory that the allocator can safely release. ... The OS allocations may
// happen at different granularity from the user allocations."): the bytes still reserved after
// it are observation reserved_after_trim_bytes, and a WARN when not 0, never a FAIL. A pool that
// held nothing before the trim despite the threshold is a WARN too: the trim was not exercised.
// The name states the outcome a clean PASS means.
TEST_P(HostPoolTest, TrimmingAHostPoolAfterEveryFreeLeavesNothingReserved) {
  PAGELOCK_RULE("R145");
#if CUDART_VERSION >= 13000
  OwnedPool pool;
  ASSERT_CUDA_OK(Create(&pool, 0));
  cuuint64_t hold = ~cuuint64_t{0};
  ASSERT_CUDA_OK(cudaMemPoolSetAttribute(pool.pool, cudaMemPoolAttrReleaseThreshold, &hold));
  void* p = nullptr;
  ASSERT_CUDA_OK(cudaMallocFromPoolAsync(&p, kBytes, pool.pool, stream()));
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  ASSERT_CUDA_OK(LaunchFillPattern(p, kBytes, seed, stream()));
  ASSERT_CUDA_OK(cudaStreamSynchronize(stream()));
  EXPECT_EQ(HostCountPatternMismatches(p, kBytes, seed), 0u) << "bytes the host reads of the kernel's writes";
  EXPECT_GE(PoolAttr(pool.pool, cudaMemPoolAttrUsedMemCurrent), kBytes) << "used while allocated";
  EXPECT_GE(PoolAttr(pool.pool, cudaMemPoolAttrReservedMemCurrent), kBytes) << "reserved while allocated";
  ASSERT_CUDA_OK(cudaFreeAsync(p, stream()));
  // "Allocations that have been asynchronously freed but whose completion has not been observed
  // on the host (eg. by a synchronize) can count as outstanding": the synchronize observes it.
  ASSERT_CUDA_OK(cudaStreamSynchronize(stream()));
  const size_t reserved_before = PoolAttr(pool.pool, cudaMemPoolAttrReservedMemCurrent);
  Observe("reserved_before_trim_bytes", reserved_before);
  ASSERT_CUDA_OK(cudaMemPoolTrimTo(pool.pool, 0));
  // Documented: nothing is outstanding once every free was observed by the synchronize.
  EXPECT_EQ(PoolAttr(pool.pool, cudaMemPoolAttrUsedMemCurrent), 0u) << "used after every free";
  const size_t reserved_after = PoolAttr(pool.pool, cudaMemPoolAttrReservedMemCurrent);
  Observe("reserved_after_trim_bytes", reserved_after);
  // Documented: a trim "Releases memory back to the OS"; it never reserves more.
  EXPECT_LE(reserved_after, reserved_before) << "reserved after the trim to 0, against before it";
  if (reserved_before == 0) {
    Warn("the pool held nothing reserved before cudaMemPoolTrimTo although its release threshold "
         "was the maximum: the trim was not exercised");
  } else if (reserved_after != 0 && reserved_after <= reserved_before) {
    Warn("cudaMemPoolTrimTo(pool, 0) after every free left " + std::to_string(reserved_after) +
         " bytes reserved (of " + std::to_string(reserved_before) +
         " before it): the allocator judged them not safely releasable, which the documentation allows");
  }
  EXPECT_CUDA_OK(pool.Free());
#endif
}

// A pool that ignores its maxSize (the allocation succeeds), that fails it with another error,
// or that is left unusable by the refused request fails this.
TEST_P(HostPoolTest, AnAllocationLargerThanTheHostPoolsMaximumFailsWithADocumentedError) {
  PAGELOCK_RULE("R146");
#if CUDART_VERSION >= 13000
  OwnedPool pool;
  ASSERT_CUDA_OK(Create(&pool, kMaxPool));
  void* big = nullptr;
  // cudaMallocFromPoolAsync lists cudaErrorInvalidValue and "::cudaErrorOutOfMemory" (which the
  // runtime's enum spells cudaErrorMemoryAllocation) and does not say which a request above
  // maxSize gets: either is accepted, and which one came is recorded (r580: MemoryAllocation).
  EXPECT_DOCUMENTED_ONE_OF("above_max_size_error", cudaMallocFromPoolAsync(&big, 2 * kMaxPool, pool.pool, stream()),
                           (std::vector<cudaError_t>{cudaErrorMemoryAllocation, cudaErrorInvalidValue}),
                           "cudaMallocFromPoolAsync's error list");
  if (big != nullptr) {  // an allocation the driver should have refused: give it back
    EXPECT_CUDA_OK(cudaFreeAsync(big, stream()));
    EXPECT_CUDA_OK(cudaStreamSynchronize(stream()));
  }
  void* p = nullptr;
  ASSERT_CUDA_OK(cudaMallocFromPoolAsync(&p, kBytes, pool.pool, stream())) << "within the maximum, after the refusal";
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  ASSERT_CUDA_OK(LaunchFillPattern(p, kBytes, seed, stream()));
  ASSERT_CUDA_OK(cudaStreamSynchronize(stream()));
  EXPECT_EQ(HostCountPatternMismatches(p, kBytes, seed), 0u) << "bytes the host reads of the kernel's writes";
  EXPECT_CUDA_OK(cudaFreeAsync(p, stream()));
  EXPECT_CUDA_OK(cudaStreamSynchronize(stream()));
  EXPECT_CUDA_OK(pool.Free());
#endif
}

INSTANTIATE_TEST_SUITE_P(EveryHostLocation, HostPoolTest,
                         ::testing::Values(HostLocation::kHost, HostLocation::kHostNuma), Name);

}  // namespace
}  // namespace pagelock
