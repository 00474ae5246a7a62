// ABI constants of the headers the harness was built with, and device facts every discrete
// GPU must report. Rule ids refer to suites/rules.tsv.
#include <cuda.h>
#include <cuda_runtime.h>

#include "fixtures/gpu_test.h"

namespace pagelock {
namespace {

// R01, R02: the values are ABI; a header that changes them breaks every compiled program.
static_assert(cudaHostAllocPortable == 0x1 && cudaHostAllocMapped == 0x2 &&
              cudaHostAllocWriteCombined == 0x4);
static_assert(cudaHostRegisterPortable == 0x1 && cudaHostRegisterMapped == 0x2 &&
              cudaHostRegisterIoMemory == 0x4 && cudaHostRegisterReadOnly == 0x8);
static_assert(cudaDeviceMapHost == 0x8 && cudaDeviceScheduleMask == 0x7 && cudaDeviceMask == 0xff);
static_assert(CU_MEMHOSTALLOC_PORTABLE == 0x1 && CU_MEMHOSTALLOC_DEVICEMAP == 0x2 &&
              CU_MEMHOSTALLOC_WRITECOMBINED == 0x4 && CU_MEMHOSTREGISTER_READ_ONLY == 0x8);
static_assert(static_cast<int>(cudaErrorInvalidValue) == static_cast<int>(CUDA_ERROR_INVALID_VALUE));
static_assert(static_cast<int>(cudaErrorHostMemoryAlreadyRegistered) ==
              static_cast<int>(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED));
static_assert(static_cast<int>(cudaErrorSetOnActiveProcess) == 708);

TEST(AbiTest, ErrorCodesUseTheUnifiedNumbering) {
  PAGELOCK_RULE("R01,R02");
  EXPECT_EQ(static_cast<int>(cudaErrorInvalidValue), 1);
  EXPECT_EQ(static_cast<int>(cudaErrorMemoryAllocation), 2);
  EXPECT_EQ(static_cast<int>(cudaErrorHostMemoryAlreadyRegistered), 712);
  EXPECT_EQ(static_cast<int>(cudaErrorHostMemoryNotRegistered), 713);
  EXPECT_STREQ(cudaGetErrorName(static_cast<cudaError_t>(712)), "cudaErrorHostMemoryAlreadyRegistered");
}

TEST(AbiTest, PointerAttributesHaveTheDocumentedLayout) {
  PAGELOCK_RULE("R03");
#if CUDART_VERSION >= 13000
  EXPECT_EQ(sizeof(cudaPointerAttributes), 88u) << "13.x adds long reserved[8]";
#else
  EXPECT_EQ(sizeof(cudaPointerAttributes), 24u);
#endif
  cudaPointerAttributes a{};
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
}

class DeviceFactsTest : public GpuTest {};

TEST_F(DeviceFactsTest, UnifiedAddressingIsOnInA64BitProcess) {
  PAGELOCK_RULE("R70");
  EXPECT_EQ(device().Attr(cudaDevAttrUnifiedAddressing), 1);
}

TEST_F(DeviceFactsTest, DiscreteGpuCanMapHostMemory) {
  PAGELOCK_RULE("R85,R86");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrIntegrated, 0));
  EXPECT_EQ(device().Attr(cudaDevAttrCanMapHostMemory), 1);
}

}  // namespace
}  // namespace pagelock
