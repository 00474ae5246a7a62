// Driver-API equivalents (cuMemHostAlloc, cuMemHostRegister, cuMemHostGetDevicePointer,
// cuMemHostGetFlags, cuPointerGetAttribute), reached without linking libcuda; portability of
// pinned memory across driver contexts and its lifetime when the context goes away.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/driver_api.h"
#include "fixtures/flags.h"
#include "fixtures/gpu_test.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{1} << 20;

class DriverApiTest : public DriverApiGpuTest {
 protected:
  template <typename T>
  CUresult Attr(T* out, CUpointer_attribute a, const void* p) {
    return d.cuPointerGetAttribute(out, a, reinterpret_cast<CUdeviceptr>(p));
  }
};

class DriverHostAllocTest : public DriverApiTest, public ::testing::WithParamInterface<unsigned> {};

TEST_P(DriverHostAllocTest, AllocationIsPinnedMappedAndDescribedByItsAttributes) {
  PAGELOCK_RULE("R08,R14,R51,R56,R57,R72");
  const unsigned flags = GetParam();
  void* p = nullptr;
  ASSERT_CU_OK(d.cuMemHostAlloc(&p, kSize, flags));
  unsigned got = 0;
  EXPECT_CU_OK(d.cuMemHostGetFlags(&got, p));
  EXPECT_EQ(got & flags, flags) << "got 0x" << std::hex << got;
  CUdeviceptr dev = 0;
  EXPECT_CU_OK(d.cuMemHostGetDevicePointer(&dev, p, 0));
  if (!(flags & CU_MEMHOSTALLOC_WRITECOMBINED)) {
    EXPECT_EQ(reinterpret_cast<void*>(dev), p);
  }
  unsigned type = 0;
  EXPECT_CU_OK(Attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
  EXPECT_EQ(type, unsigned{CU_MEMORYTYPE_HOST});
  void* host = nullptr;
  EXPECT_CU_OK(Attr(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p));
  EXPECT_EQ(host, p);
  CUdeviceptr attr_dev = 0;
  EXPECT_CU_OK(Attr(&attr_dev, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p));
  EXPECT_EQ(attr_dev, dev);
  EXPECT_CU_OK(d.cuMemFreeHost(p));
}

INSTANTIATE_TEST_SUITE_P(AllFlagCombinations, DriverHostAllocTest,
                         ::testing::ValuesIn(AllHostAllocFlagCombinations()),
                         [](const auto& info) { return HostAllocFlagsName(info.param); });

TEST_F(DriverApiTest, MemAllocHostReturnsPinnedMemory) {
  PAGELOCK_RULE("R04");
  void* p = nullptr;
  ASSERT_CU_OK(d.cuMemAllocHost(&p, kSize));
  unsigned type = 0;
  EXPECT_CU_OK(Attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
  EXPECT_EQ(type, unsigned{CU_MEMORYTYPE_HOST});
  EXPECT_CU_OK(d.cuMemFreeHost(p));
}

TEST_F(DriverApiTest, ZeroSizeHostAllocSucceedsAndWritesItsResult) {
  PAGELOCK_RULE("R11");
  // R11: cuMemHostAlloc(size 0) succeeds (observed with drivers 580 and 590) and writes its
  // out-parameter: nullptr, or an allocation that cuMemFreeHost accepts. A driver that leaves
  // the caller's pointer untouched hands back an address nobody allocated.
  void* const sentinel = reinterpret_cast<void*>(uintptr_t{0x10});
  void* p = sentinel;
  EXPECT_CU_OK(d.cuMemHostAlloc(&p, 0, 0));
  Observe("zero_size_pointer", p == nullptr ? "null" : (p == sentinel ? "unchanged" : "allocated"));
  EXPECT_NE(p, sentinel) << "cuMemHostAlloc(size 0) left its out-parameter unchanged";
  if (p && p != sentinel) {
    EXPECT_CU_OK(d.cuMemFreeHost(p));
  }
}

TEST_F(DriverApiTest, MemFreeHostOfNullSucceeds) {
  PAGELOCK_RULE("R20");
  EXPECT_CU_OK(d.cuMemFreeHost(nullptr));
}

TEST_F(DriverApiTest, GetDevicePointerRejectsNonZeroFlags) {
  PAGELOCK_RULE("R50");
  void* p = nullptr;
  ASSERT_CU_OK(d.cuMemHostAlloc(&p, kSize, CU_MEMHOSTALLOC_DEVICEMAP));
  CUdeviceptr dev = 0;
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, d.cuMemHostGetDevicePointer(&dev, p, 1));
  EXPECT_CU_OK(d.cuMemFreeHost(p));
}

class DriverRegisterTest : public DriverApiTest, public ::testing::WithParamInterface<unsigned> {};

TEST_P(DriverRegisterTest, RegisterMapsAndUnregisterReleases) {
  PAGELOCK_RULE("R26,R28,R33,R42");
  if (GetParam() & CU_MEMHOSTREGISTER_READ_ONLY) {
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterReadOnlySupported, 1));
  }
  std::vector<char> buf(kSize);
  ASSERT_CU_OK(d.cuMemHostRegister(buf.data(), buf.size(), GetParam()));
  CUdeviceptr dev = 0;
  EXPECT_CU_OK(d.cuMemHostGetDevicePointer(&dev, buf.data(), 0));
  int mapped = 0;
  EXPECT_CU_OK(Attr(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, buf.data()));
  EXPECT_EQ(mapped, 1);
  unsigned access = 0;
  EXPECT_CU_OK(Attr(&access, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, buf.data()));
  EXPECT_EQ(access, unsigned{(GetParam() & CU_MEMHOSTREGISTER_READ_ONLY)
                                 ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ
                                 : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE});
  EXPECT_CU_OK(d.cuMemHostUnregister(buf.data()));
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, d.cuMemHostGetDevicePointer(&dev, buf.data(), 0));
}

INSTANTIATE_TEST_SUITE_P(Flags, DriverRegisterTest,
                         ::testing::Values(0u, unsigned{CU_MEMHOSTREGISTER_PORTABLE},
                                           unsigned{CU_MEMHOSTREGISTER_DEVICEMAP},
                                           unsigned{CU_MEMHOSTREGISTER_READ_ONLY}),
                         [](const auto& info) { return HostRegisterFlagsName(info.param); });

TEST_F(DriverApiTest, RegisterMisuseReturnsTheDocumentedErrors) {
  PAGELOCK_RULE("R30,R34,R35,R37,R38");
  std::vector<char> buf(kSize);
  ASSERT_CU_OK(d.cuMemHostRegister(buf.data(), buf.size(), 0));
  EXPECT_CU_ERROR(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                  d.cuMemHostRegister(buf.data() + 8192, 4096, 0));
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, d.cuMemHostUnregister(buf.data() + 4096));
  EXPECT_CU_OK(d.cuMemHostUnregister(buf.data()));
  EXPECT_CU_ERROR(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, d.cuMemHostUnregister(buf.data()));
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, d.cuMemHostUnregister(nullptr));
  void* p = nullptr;
  ASSERT_CU_OK(d.cuMemHostAlloc(&p, kSize, 0));
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, d.cuMemHostUnregister(p));
  EXPECT_CU_OK(d.cuMemFreeHost(p));
}

TEST_F(DriverApiTest, PointerAttributeOfUnknownMemoryReturnsInvalidValue) {
  PAGELOCK_RULE("R73");
  std::vector<char> buf(kSize);
  unsigned type = 0;
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, Attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, buf.data()));
  void* p = nullptr;
  ASSERT_CU_OK(d.cuMemHostAlloc(&p, kSize, 0));
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, Attr(&type, static_cast<CUpointer_attribute>(9999), p));
  EXPECT_CU_OK(d.cuMemFreeHost(p));
}

// Two driver contexts on one device: memory pinned in the first is used from the second.
PAGELOCK_SCENARIO(PinnedMemoryAcrossContexts) {
  const DriverApi& d = Driver();
  if (!d.loaded) return report.Set("driver", d.error);
  const unsigned flags = ScenarioArg() == "portable" ? CU_MEMHOSTALLOC_PORTABLE : 0;
  CUdevice dev = 0;
  CUcontext a = nullptr, b = nullptr;
  report.Cu("init", d.cuInit(0));
  report.Cu("device", d.cuDeviceGet(&dev, 0));
  report.Cu("create_a", d.cuCtxCreate(&a, nullptr, 0, dev));
  void* p = nullptr;
  const CUresult alloc = d.cuMemHostAlloc(&p, kSize, flags);
  report.Cu("alloc_in_a", alloc);
  if (alloc != CUDA_SUCCESS) return;
  std::memset(p, 0x5a, kSize);
  report.Cu("create_b", d.cuCtxCreate(&b, nullptr, 0, dev));  // b is now current
  CUdeviceptr alias = 0, buf = 0;
  report.Cu("device_pointer_in_b", d.cuMemHostGetDevicePointer(&alias, p, 0));
  report.Cu("malloc_in_b", d.cuMemAlloc(&buf, kSize));
  // copy-check: the round trip's bytes are all counted below (bytes_ok)
  report.Cu("copy_in_b", d.cuMemcpyHtoD(buf, p, kSize));
  std::vector<unsigned char> back(kSize);
  report.Cu("copy_back_in_b", d.cuMemcpyDtoH(back.data(), buf, kSize));
  report.Set("bytes_ok", std::count(back.begin(), back.end(), 0x5a) == static_cast<long>(kSize) ? 1 : 0);
  d.cuMemFree(buf);
  // Lifetime: destroy the allocating context, then look at the memory from b.
  report.Cu("destroy_a", d.cuCtxDestroy(a));
  unsigned type = 0;
  report.Cu("type_after_destroy", d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                          reinterpret_cast<CUdeviceptr>(p)));
  report.Cu("free_after_destroy", d.cuMemFreeHost(p));
  d.cuCtxDestroy(b);
}

class PinnedAcrossContextsTest : public DriverApiTest,
                                 public ::testing::WithParamInterface<const char*> {};

TEST_P(PinnedAcrossContextsTest, MemoryPinnedInOneContextIsUsableFromAnother) {
  PAGELOCK_RULE("R18,R14");
  ChildResult r = RunScenario("PinnedMemoryAcrossContexts", 60, {ScenarioArgEnv(GetParam())});
  ASSERT_CHILD_COMPLETED(r);
  EXPECT_EQ(r.Get("alloc_in_a"), "CUDA_SUCCESS");
  EXPECT_EQ(r.Get("device_pointer_in_b"), "CUDA_SUCCESS") << "R18: UVA makes every allocation portable";
  EXPECT_EQ(r.Get("copy_in_b"), "CUDA_SUCCESS");
  EXPECT_EQ(r.Get("bytes_ok"), "1");
}

TEST_P(PinnedAcrossContextsTest, DestroyingTheAllocatingContextReleasesTheMemory) {
  PAGELOCK_RULE("R13");
  ChildResult r = RunScenario("PinnedMemoryAcrossContexts", 60, {ScenarioArgEnv(GetParam())});
  ASSERT_CHILD_COMPLETED(r);
  EXPECT_EQ(r.Get("destroy_a"), "CUDA_SUCCESS");
  Observe("type_after_destroy", r.Get("type_after_destroy"));
  EXPECT_EQ(r.Get("type_after_destroy"), "CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(r.Get("free_after_destroy"), "CUDA_ERROR_INVALID_VALUE");
}

INSTANTIATE_TEST_SUITE_P(Flags, PinnedAcrossContextsTest, ::testing::Values("default", "portable"),
                         [](const auto& info) { return std::string(info.param); });

// cudaDeviceReset destroys the primary context and, with it, the pinned memory it owns.
PAGELOCK_SCENARIO(PinnedMemoryAfterDeviceReset) {
  void* p = nullptr;
  report.Error("alloc", cudaHostAlloc(&p, kSize, 0));
  report.Error("reset", cudaDeviceReset());
  cudaPointerAttributes a{};
  report.Error("attributes_after_reset", cudaPointerGetAttributes(&a, p));
  report.Set("type_after_reset", static_cast<long long>(a.type));
  report.Error("free_after_reset", cudaFreeHost(p));
}

TEST_F(DriverApiTest, DeviceResetReleasesPinnedMemory) {
  PAGELOCK_RULE("R13");
  ChildResult r = RunScenario("PinnedMemoryAfterDeviceReset");
  ASSERT_CHILD_COMPLETED(r);
  EXPECT_EQ(r.Get("reset"), ErrName(cudaSuccess));
  EXPECT_EQ(r.Get("attributes_after_reset"), ErrName(cudaSuccess));
  EXPECT_EQ(r.Get("type_after_reset"), std::to_string(cudaMemoryTypeUnregistered));
  EXPECT_EQ(r.Get("free_after_reset"), ErrName(cudaErrorInvalidValue));
}

}  // namespace
}  // namespace pagelock
