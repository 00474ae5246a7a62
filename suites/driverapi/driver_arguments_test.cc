// Argument checks of the driver API's allocation and registration entry points. Each case names
// the fault of the fault-injecting driver layer (tools/faults) it catches. Rule ids refer to
// suites/rules.tsv.
#include <cuda.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "fixtures/driver_api.h"
#include "fixtures/gpu_test.h"
#include "fixtures/outcome.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{4} << 20;

// The runtime checks some arguments itself before it calls the driver, so a driver that skips
// those checks is invisible to runtime-API cases. These ask the driver directly.
class DriverArgumentsTest : public DriverApiGpuTest {};

// Fault: hostalloc_accepts_unknown_flags.
TEST_F(DriverArgumentsTest, HostAllocRejectsUnknownFlagBits) {
  PAGELOCK_RULE("R09");
  for (unsigned flags : {0x8u, 0x80000000u}) {
    void* p = nullptr;
    // An inference (13.0 cuMemHostAlloc defines three flags, names no code for another bit):
    // any failure passes, the code is recorded.
    const CUresult r = d.cuMemHostAlloc(&p, kSize, flags);
    Observe("unknown_bit_code_" + std::to_string(flags), CuName(r));
    EXPECT_NE(r, CUDA_SUCCESS) << "cuMemHostAlloc accepted undefined flag bits 0x" << std::hex << flags
                               << " (inference: the flags parameter defines no such bit)";
    if (p && r == CUDA_SUCCESS) {
      EXPECT_CU_OK(d.cuMemFreeHost(p));
    }
  }
}

// Fault: register_accepts_unknown_flags.
TEST_F(DriverArgumentsTest, HostRegisterRejectsUnknownFlagBits) {
  PAGELOCK_RULE("R26");
  std::vector<char> buf(kSize);
  for (unsigned flags : {0x10u, 0x80000000u}) {
    const CUresult r = d.cuMemHostRegister(buf.data(), buf.size(), flags);
    // An inference (no code is documented for an undefined bit): any failure passes, recorded.
    Observe("unknown_bit_code_" + std::to_string(flags), CuName(r));
    EXPECT_NE(r, CUDA_SUCCESS) << "cuMemHostRegister accepted undefined flag bits 0x" << std::hex << flags
                               << " (inference: the flags parameter defines no such bit)";
    if (r == CUDA_SUCCESS) {
      EXPECT_CU_OK(d.cuMemHostUnregister(buf.data()));
    }
  }
}

// Fault: register_accepts_empty.
TEST_F(DriverArgumentsTest, HostRegisterRejectsNullAndZeroSize) {
  PAGELOCK_RULE("R39");
  // cudaHostRegister is "supported only on ... non-zero cudaDevAttrHostRegisterSupported".
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  std::vector<char> buf(kSize);
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, d.cuMemHostRegister(nullptr, kSize, 0));
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, d.cuMemHostRegister(buf.data(), 0, 0));
}

}  // namespace
}  // namespace pagelock
