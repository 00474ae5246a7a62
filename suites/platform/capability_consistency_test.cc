// Capability answers cross-checked with each other and with what the device then does: mapping,
// registration, pageable access and host-native atomics. An answer the behaviour contradicts is
// a failure naming both. The answers come from the fixtures' probe (fixtures/device_caps.h).
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/outcome.h"
#include "fixtures/platform_gates.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{1} << 20;

class CapabilityConsistencyTest : public GpuTest {
 protected:
  uint32_t seed() const { return static_cast<uint32_t>(CaseSeed()); }
};

// Faults caught: cap_cannot_map_host (attr 19 reads 0 while the mapped pointer works: the
// "attr 0 but mapped" failure); devptr_off_by_one and launch_dropped fail the host count.
TEST_F(CapabilityConsistencyTest, CanMapHostMemoryAgreesWithAMappedAllocation) {
  PAGELOCK_RULE("R104");
  const int attr = device().Attr(cudaDevAttrCanMapHostMemory);
  Observe("can_map_host_memory", attr);
  void* p = nullptr;
  // "cudaHostAllocMapped: Maps the allocation into the CUDA address space" - the allocation
  // itself succeeds even where the device cannot map (the failure is deferred, R10).
  ASSERT_CUDA_OK(cudaHostAlloc(&p, kSize, cudaHostAllocMapped));
  auto own = PinnedBuffer::Adopt(p, kSize);
  void* dev = nullptr;
  const cudaError_t e = cudaHostGetDevicePointer(&dev, p, 0);
  if (attr == 1) {
    ASSERT_CUDA_OK(e) << "cudaDevAttrCanMapHostMemory=1 but cudaHostGetDevicePointer failed";
    ASSERT_CUDA_OK(LaunchFillPattern(dev, kSize, seed()));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(HostCountPatternMismatches(p, kSize, seed()), 0u)
        << "cudaDevAttrCanMapHostMemory=1 but device writes through the mapped pointer are lost";
  } else {
    (void)cudaGetLastError();
    EXPECT_NE(e, cudaSuccess) << "cudaDevAttrCanMapHostMemory=" << attr
                              << " but cudaHostGetDevicePointer of a mapped allocation=cudaSuccess";
    Observe("get_device_pointer_without_mapping", cudaGetErrorName(e));
  }
  EXPECT_CUDA_OK(own.Free());
}

// Faults caught: cap_no_host_register (attr 99 reads 0 while registration works);
// register_lost and launch_dropped fail the round trip.
TEST_F(CapabilityConsistencyTest, HostRegisterSupportedAgreesWithARegistration) {
  PAGELOCK_RULE("R105");
  const int attr = device().Attr(cudaDevAttrHostRegisterSupported);
  Observe("host_register_supported", attr);
  auto region = HostRegion::Make(HostKind::kRegisteredMalloc, kSize);
  ASSERT_NE(region->data(), nullptr) << region->unavailable();
  const cudaError_t e = cudaHostRegister(region->data(), kSize, cudaHostRegisterMapped);
  if (attr == 1) {
    ASSERT_CUDA_OK(e) << "cudaDevAttrHostRegisterSupported=1 but cudaHostRegister failed";
    auto reg = HostRegistration::Adopt(region->data(), kSize);
    void* dev = nullptr;
    ASSERT_CUDA_OK(cudaHostGetDevicePointer(&dev, region->data(), 0));
    ASSERT_CUDA_OK(LaunchFillPattern(dev, kSize, seed()));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(HostCountPatternMismatches(region->data(), kSize, seed()), 0u)
        << "cudaDevAttrHostRegisterSupported=1 but device writes to the registration are lost";
    EXPECT_CUDA_OK(reg.Free());
  } else {
    ExpectRegistrationRefusedWithoutSupport(e, region->data(), attr);  // R27's documented refusal
  }
}

// Faults caught: cap_claims_ats (attr 100 reported as 1 beside the PCIe host's attr 88 = 0).
// NotSupported where attr 100 = 0: nothing is then implied.
TEST_F(CapabilityConsistencyTest, PageableAccessThroughHostPageTablesImpliesPageableAccess) {
  PAGELOCK_RULE("R106");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrPageableMemoryAccessUsesHostPageTables, 1));
  const int pageable = device().Attr(cudaDevAttrPageableMemoryAccess);
  Observe("pageable_memory_access", pageable);
  // "Device accesses pageable memory via the host's page tables": only a device that accesses
  // pageable memory can do so through the host's page tables.
  EXPECT_EQ(pageable, 1) << "cudaDevAttrPageableMemoryAccessUsesHostPageTables=1 but "
                            "cudaDevAttrPageableMemoryAccess="
                         << pageable;
}

// A kernel reads plain malloc'd memory through its host pointer. In a child: an illegal access
// is sticky and ends the context.
PAGELOCK_SCENARIO(KernelReadsMallocMemory) {
  report.Error("init", cudaFree(nullptr));
  const uint32_t seed = static_cast<uint32_t>(std::strtoul(ScenarioArg().c_str(), nullptr, 10));
  std::vector<unsigned char> buf(kSize);
  HostFillPattern(buf.data(), kSize, seed);
  unsigned long long* bad = nullptr;
  cudaError_t e = cudaHostAlloc(reinterpret_cast<void**>(&bad), sizeof *bad, cudaHostAllocMapped);
  report.Error("counter", e);
  if (e != cudaSuccess) return;
  *bad = 0;
  e = LaunchCountPatternMismatches(buf.data(), kSize, seed, bad);
  report.Error("launch", e);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  report.Error("sync", e);
  if (e == cudaSuccess) report.Set("bad", static_cast<long long>(*bad));
}

// Faults caught: a probe reporting attr 88 = 1 where a kernel cannot read malloc memory (the read
// faults; the shim has no such fault yet); a driver that loses the page-table walk on an HMM/ATS
// host fails the count.
TEST_F(CapabilityConsistencyTest, PageableMemoryAccessAgreesWithAKernelReadingMallocMemory) {
  PAGELOCK_RULE("R107,R108");
  const int pageable = device().Attr(cudaDevAttrPageableMemoryAccess);
  Observe("pageable_memory_access", pageable);
  ChildResult r = RunScenario("KernelReadsMallocMemory", 60, {ScenarioArgEnv(std::to_string(seed()))});
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("init"), "cudaSuccess");
  ASSERT_EQ(r.Get("counter"), "cudaSuccess");
  const bool worked = r.Get("sync") == "cudaSuccess" && r.Get("bad") == "0";
  Observe("malloc_read_launch", r.Get("launch"));
  Observe("malloc_read_sync", r.Get("sync"));
  if (pageable == 1) {
    // "cudaDevAttrPageableMemoryAccess: Device supports coherently accessing pageable memory
    // without calling cudaHostRegister on it".
    EXPECT_TRUE(worked) << "cudaDevAttrPageableMemoryAccess=1 but a kernel reading malloc memory "
                           "ended with launch="
                        << r.Get("launch") << " sync=" << r.Get("sync") << " bad=" << r.Get("bad");
  } else {
    // The documentation promises no access without the attribute, not a fault: recorded.
    Observe("malloc_read_without_pageable_access", worked ? "worked" : "failed");
  }
}

// Faults caught: cap_host_native_atomics_flipped (attr 86 reads 1 while every mask is 0: no
// integer add, exchange or CAS), atomic_caps_overclaimed (a mask where attr 86 = 0 and attr
// 147 = 0). A C2C host with native atomics (86 = 1) whose link carries no float min/max natively
// passes: which operations have a zero mask is recorded (gates::JudgeHostAtomicMasks).
TEST_F(CapabilityConsistencyTest, HostNativeAtomicAnswersAgreeWithTheCapabilityMasks) {
  PAGELOCK_RULE("R109");
  PAGELOCK_REQUIRE(RequireRuntimeApi(13000, "cudaDeviceGetHostAtomicCapabilities"));
#if CUDART_VERSION >= 13000
  const int native = device().Attr(cudaDevAttrHostNativeAtomicSupported);
  const int partial = device().Attr(cudaDevAttrOnlyPartialHostNativeAtomicSupported);
  std::vector<cudaAtomicOperation> ops;
  for (int op = cudaAtomicOperationIntegerAdd; op <= cudaAtomicOperationFloatMax; ++op) {
    ops.push_back(static_cast<cudaAtomicOperation>(op));
  }
  std::vector<unsigned> caps(ops.size(), 0xdeadu);
  ASSERT_CUDA_OK(cudaDeviceGetHostAtomicCapabilities(caps.data(), ops.data(), static_cast<int>(ops.size()), 0));
  std::vector<std::pair<int, unsigned>> masks;
  std::string text;
  for (size_t i = 0; i < caps.size(); ++i) {
    EXPECT_NE(caps[i], 0xdeadu) << "operation " << i << " not written";
    masks.emplace_back(static_cast<int>(ops[i]), caps[i]);
    text += (i ? " " : "") + std::to_string(caps[i]);
  }
  Observe("host_atomic_masks", text);
  // attr 86: "Link between the device and the host supports native atomic operations"; attr
  // 147: "... supports only some native atomic operations". Neither text lists the operations.
  const gates::AtomicMaskVerdict v = gates::JudgeHostAtomicMasks(native, partial, masks);
  Observe("host_atomic_operations_with_a_zero_mask", v.zero_masks);
  for (const std::string& f : v.failures) ADD_FAILURE() << f;
#endif
}

}  // namespace
}  // namespace pagelock
