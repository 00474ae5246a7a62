// Managed-memory hints on page-locked memory: cudaMemAdvise (every advice) and
// cudaMemPrefetchAsync (to the device and to the host) over cudaHostAlloc'd and registered
// memory. The documentation (CUDA 13.0 runtime API) says the range "must refer to managed memory
// ... or it may also refer to system-allocated memory on systems with non-zero
// cudaDevAttrPageableMemoryAccess", and lists cudaSuccess, cudaErrorInvalidValue and
// cudaErrorInvalidDevice as the results. That sentence is a requirement on the caller: no code
// is stated for breaking it, and both calls are hints (cudaMemAdvise: "Advise the Unified Memory
// subsystem about the usage pattern"; cudaMemPrefetchAsync: "This API is not required for
// functionality and only serves to improve performance"). Both return lists name cudaSuccess,
// cudaErrorInvalidValue and cudaErrorInvalidDevice with no condition, and cudaMemAdvise adds that
// "The memory range could also refer to system-allocated pageable memory ... Specifying an invalid
// system-allocated pageable memory range results in an error being returned": on an HMM or ATS
// host (attribute 88 or 100 = 1) page-locked memory is system-allocated memory the driver may act
// on or refuse, for a host location too. So every hint accepts the whole list whatever the
// attributes; which came is recorded, with attributes 88 and 100 beside it. What is asserted is what a hint must not
// do: the bytes are intact afterwards (host and device read what the host wrote, the device's
// writes reach the host), no undocumented code comes, and no error stays behind. The signatures
// changed in CUDA 13.0 (a cudaMemLocation instead of a device ordinal); both compile. Rule ids
// refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/platform_gates.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"
#include "kernels/pattern.h"
#include "suites/mapped/mapped_memory.h"

namespace pagelock {
namespace {

constexpr size_t kBytes = size_t{2} << 20;

enum class Where { kDevice0, kHost };

struct Hint {
  const char* name;
  bool prefetch;              // cudaMemPrefetchAsync to `where`; else cudaMemAdvise(advice)
  cudaMemoryAdvise advice;
  Where where;
};

const Hint kHints[] = {
    {"SetReadMostly", false, cudaMemAdviseSetReadMostly, Where::kDevice0},
    {"UnsetReadMostly", false, cudaMemAdviseUnsetReadMostly, Where::kDevice0},
    {"SetPreferredLocationDevice", false, cudaMemAdviseSetPreferredLocation, Where::kDevice0},
    {"SetPreferredLocationHost", false, cudaMemAdviseSetPreferredLocation, Where::kHost},
    {"UnsetPreferredLocation", false, cudaMemAdviseUnsetPreferredLocation, Where::kDevice0},
    {"SetAccessedByDevice", false, cudaMemAdviseSetAccessedBy, Where::kDevice0},
    {"UnsetAccessedByDevice", false, cudaMemAdviseUnsetAccessedBy, Where::kDevice0},
    {"PrefetchToDevice", true, cudaMemAdviseSetReadMostly, Where::kDevice0},
    {"PrefetchToHost", true, cudaMemAdviseSetReadMostly, Where::kHost},
};

struct Param {
  HostKind kind;
  Hint hint;
};

std::string Name(const ::testing::TestParamInfo<Param>& info) {
  return HostKindName(info.param.kind) + "_" + info.param.hint.name;
}

std::vector<Param> Params() {
  std::vector<Param> v;
  for (HostKind k : {HostKind::kHostAllocMapped, HostKind::kRegisteredMmap}) {
    for (const Hint& h : kHints) v.push_back({k, h});
  }
  return v;
}

// The call, in the signature of the runtime the suite is built with.
cudaError_t Apply(const Hint& h, const void* p, size_t n, cudaStream_t stream) {
#if CUDART_VERSION >= 13000
  cudaMemLocation loc{};
  loc.type = h.where == Where::kHost ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  loc.id = 0;  // device 0; ignored for the host
  return h.prefetch ? cudaMemPrefetchAsync(p, n, loc, /*flags=*/0, stream) : cudaMemAdvise(p, n, h.advice, loc);
#else
  const int device = h.where == Where::kHost ? cudaCpuDeviceId : 0;
  return h.prefetch ? cudaMemPrefetchAsync(p, n, device, stream) : cudaMemAdvise(p, n, h.advice, device);
#endif
}

class AdviseTest : public GpuTest, public ::testing::WithParamInterface<Param> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireMappedKind(GetParam().kind));
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrManagedMemory, 1));  // the device check's counter
    stream_ = OwnedStream(cudaStreamNonBlocking);
    ASSERT_CUDA_OK(stream_.status());
  }
  cudaStream_t stream() const { return stream_.get(); }

  // The results the documentation allows for any hint on page-locked memory: the whole return
  // list (cuda_runtime_api.h 13.0), whatever attributes 88, 100 and 89 say. "The memory range must
  // refer to managed memory ..." binds the caller and names no code, and the calls are hints (a
  // prefetch "is not required for functionality"). A driver that ignores the hint, refuses it or
  // acts on it is conforming; the byte checks in the test catch one that acts on it wrongly, and
  // an unlisted code (cudaErrorNotSupported, cudaErrorMemoryAllocation) still fails.
  const std::vector<cudaError_t>& Documented() const { return gates::AdviseDocumentedResults(); }

 private:
  OwnedStream stream_;
};

// A driver that corrupts, migrates away or unmaps page-locked memory on a hint (host or device
// then reads other bytes, or the device alias stops working), that returns an undocumented
// error, or whose refusal leaves a sticky error behind fails this. Accepting or refusing the hint
// with a listed code does not, on any host: it is recorded (observation hint_..., with
// pageable_memory_access and uses_host_page_tables beside it).
TEST_P(AdviseTest, HintOnPinnedMemoryGivesADocumentedResultAndLeavesTheBytesIntact) {
  PAGELOCK_RULE("R143");
  const Hint& h = GetParam().hint;
  PAGELOCK_MAKE_MAPPED(m, GetParam().kind, kBytes);
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  HostFillPattern(m.host(), kBytes, seed);
  Observe("pageable_memory_access", device().Attr(cudaDevAttrPageableMemoryAccess));
  Observe("uses_host_page_tables", device().Attr(cudaDevAttrPageableMemoryAccessUsesHostPageTables));
  const std::string call = h.prefetch ? "cudaMemPrefetchAsync" : "cudaMemAdvise";
  const std::string doc =
      call + " (CUDA runtime API): the range must be managed memory, or system-allocated memory where "
             "cudaDevAttrPageableMemoryAccess=" + std::to_string(device().Attr(cudaDevAttrPageableMemoryAccess)) +
      " (a requirement on the caller, no code stated; the call is a performance hint)"
      "; returns cudaSuccess, cudaErrorInvalidValue, cudaErrorInvalidDevice, for any hint and location";
  EXPECT_DOCUMENTED_ONE_OF(std::string("hint_") + h.name + "_on_" + HostKindName(GetParam().kind),
                           Apply(h, m.host(), kBytes, stream()), Documented(), doc);
  EXPECT_CUDA_OK(cudaStreamSynchronize(stream()));  // a prefetch, if one was queued, is done
  EXPECT_EQ(HostCountPatternMismatches(m.host(), kBytes, seed), 0u) << "bytes the host reads after the hint";
  DeviceBuffer bad = DeviceBuffer::Managed(sizeof(unsigned long long));
  ASSERT_CUDA_OK(bad.status());
  *bad.as<unsigned long long>() = 0;
  ASSERT_CUDA_OK(LaunchCountPatternMismatches(m.dev(), kBytes, seed, bad.as<unsigned long long>(), stream()));
  ASSERT_CUDA_OK(cudaStreamSynchronize(stream()));
  EXPECT_EQ(*bad.as<unsigned long long>(), 0u) << "bytes the device reads through its alias after the hint";
  ASSERT_CUDA_OK(LaunchInvertBytes(m.dev(), kBytes, stream()));
  ASSERT_CUDA_OK(cudaStreamSynchronize(stream()));
  EXPECT_EQ(HostCountPatternMismatches(m.host(), kBytes, seed, 0xff), 0u)
      << "bytes the host reads after the device inverted them";
  // A refused hint is an ordinary error: the launches above ran, and nothing stays sticky.
  EXPECT_CUDA_OK(cudaDeviceSynchronize()) << "a sticky error after the hint";
  EXPECT_CUDA_OK(m.Free());
}

INSTANTIATE_TEST_SUITE_P(EveryHint, AdviseTest, ::testing::ValuesIn(Params()), Name);

}  // namespace
}  // namespace pagelock
