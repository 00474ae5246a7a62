// ABI constants of the headers the harness was built with, and device facts every discrete
// GPU must report. Rule ids refer to suites/rules.tsv.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cctype>
#include <string>

#include "fixtures/driver_api.h"
#include "fixtures/gpu_test.h"

namespace pagelock {
namespace {

// R01, R02: the values are ABI; a header that changes them breaks every compiled program.
static_assert(cudaHostAllocPortable == 0x1 && cudaHostAllocMapped == 0x2 &&
              cudaHostAllocWriteCombined == 0x4);
static_assert(cudaHostRegisterPortable == 0x1 && cudaHostRegisterMapped == 0x2 &&
              cudaHostRegisterIoMemory == 0x4 && cudaHostRegisterReadOnly == 0x8);
#ifdef cudaDeviceSyncMemops  // 12.x adds flag 0x80, and the mask grows from 0x1f to 0xff
static_assert(cudaDeviceMapHost == 0x8 && cudaDeviceScheduleMask == 0x7 && cudaDeviceMask == 0xff);
#else
static_assert(cudaDeviceMapHost == 0x8 && cudaDeviceScheduleMask == 0x7 && cudaDeviceMask == 0x1f);
#endif
static_assert(CU_MEMHOSTALLOC_PORTABLE == 0x1 && CU_MEMHOSTALLOC_DEVICEMAP == 0x2 &&
              CU_MEMHOSTALLOC_WRITECOMBINED == 0x4 && CU_MEMHOSTREGISTER_READ_ONLY == 0x8);
static_assert(static_cast<int>(cudaErrorInvalidValue) == static_cast<int>(CUDA_ERROR_INVALID_VALUE));
static_assert(static_cast<int>(cudaErrorHostMemoryAlreadyRegistered) ==
              static_cast<int>(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED));
static_assert(static_cast<int>(cudaErrorSetOnActiveProcess) == 708);

// R01, R02, R03: compile-time facts of the headers, checked where they belong (a run-time test
// of a constant cannot fail on any machine).
static_assert(static_cast<int>(cudaErrorInvalidValue) == 1 &&
              static_cast<int>(cudaErrorMemoryAllocation) == 2 &&
              static_cast<int>(cudaErrorHostMemoryAlreadyRegistered) == 712 &&
              static_cast<int>(cudaErrorHostMemoryNotRegistered) == 713);
#if CUDART_VERSION >= 13000
static_assert(sizeof(cudaPointerAttributes) == 88, "13.x adds long reserved[8]");
#endif

// What the installed driver says about the codes the suites assert by name: runtime and driver
// share one numbering since 10.1 (R02), so the driver must name each code as the header does.
struct SharedCode {
  CUresult driver;
  cudaError_t runtime;
  const char* driver_name;
  const char* runtime_name;
};

class DriverErrorNamesTest : public GpuTest {};

TEST_F(DriverErrorNamesTest, InstalledDriverNamesTheSharedErrorCodesAsTheHeadersDo) {
  PAGELOCK_RULE("R01,R02");
  PAGELOCK_REQUIRE(RequireDriverApi());
  const SharedCode codes[] = {
      {CUDA_ERROR_INVALID_VALUE, cudaErrorInvalidValue, "CUDA_ERROR_INVALID_VALUE", "cudaErrorInvalidValue"},
      {CUDA_ERROR_OUT_OF_MEMORY, cudaErrorMemoryAllocation, "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation"},
      {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, cudaErrorHostMemoryAlreadyRegistered,
       "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "cudaErrorHostMemoryAlreadyRegistered"},
      {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cudaErrorHostMemoryNotRegistered,
       "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "cudaErrorHostMemoryNotRegistered"},
      {CUDA_ERROR_NOT_SUPPORTED, cudaErrorNotSupported, "CUDA_ERROR_NOT_SUPPORTED", "cudaErrorNotSupported"},
      {CUDA_ERROR_ILLEGAL_ADDRESS, cudaErrorIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS", "cudaErrorIllegalAddress"},
  };
  for (const SharedCode& c : codes) {
    EXPECT_EQ(static_cast<int>(c.driver), static_cast<int>(c.runtime)) << c.runtime_name;
    const char* name = nullptr;
    ASSERT_CU_OK(Driver().cuGetErrorName(c.driver, &name));
    ASSERT_NE(name, nullptr);
    EXPECT_STREQ(name, c.driver_name);
    EXPECT_STREQ(cudaGetErrorName(c.runtime), c.runtime_name);
  }
}

class DeviceFactsTest : public GpuTest {};

TEST_F(DeviceFactsTest, UnifiedAddressingIsOnInA64BitProcess) {
  PAGELOCK_RULE("R70");
  EXPECT_EQ(device().Attr(cudaDevAttrUnifiedAddressing), 1);
}

TEST_F(DeviceFactsTest, DiscreteGpuCanMapHostMemory) {
  PAGELOCK_RULE("R85");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrIntegrated, 0));
  EXPECT_EQ(device().Attr(cudaDevAttrCanMapHostMemory), 1);
}

// NVIDIA's discrete product lines, by the marketing name the driver reports: evidence that a
// GPU is discrete which does not come from the attribute under test. Integrated parts (Tegra,
// Jetson/Orin, Thor) carry none of these names.
bool NamedAsADiscreteProduct(const std::string& name) {
  for (const char* line : {"H100", "H200", "H800", "H20", "B100", "B200", "B300", "A100", "A800",
                           "A30", "A40", "A10", "A16", "A2", "L40", "L4", "L20", "V100", "T4",
                           "P100", "P40", "RTX", "GeForce", "Quadro", "TITAN", "Tesla"}) {
    const std::string l = line;
    const size_t at = name.find(l);
    // A whole word: "A2" must not match inside "A200" of an unknown future name.
    if (at != std::string::npos &&
        (at + l.size() == name.size() || !std::isalnum(static_cast<unsigned char>(name[at + l.size()])))) {
      return true;
    }
  }
  return false;
}

TEST_F(DeviceFactsTest, AGpuOfADiscreteProductLineReportsIntegratedZero) {
  PAGELOCK_RULE("R86");
  // The gate is the product name, not cudaDevAttrIntegrated itself (which made this check unable
  // to fail): an H200 that reported Integrated = 1 fails here.
  const std::string name = Probe().devices.at(0).name;
  Observe("device_name", name);
  if (!NamedAsADiscreteProduct(name)) {
    PAGELOCK_NOT_SUPPORTED("device 0 (" + name + ") is not of a known discrete product line, so "
                           "nothing independent of the attribute says it is discrete");
  }
  EXPECT_EQ(device().Attr(cudaDevAttrIntegrated), 0) << name << " is a discrete GPU";
}

}  // namespace
}  // namespace pagelock
