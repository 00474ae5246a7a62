// Freeing pinned memory: what cudaFreeHost releases is no longer known to the driver. The case
// names the fault of the fault-injecting driver layer (tools/faults) it catches. Rule ids refer
// to suites/rules.tsv.
#include <cuda_runtime.h>

#include "fixtures/gpu_test.h"
#include "fixtures/outcome.h"
#include "fixtures/profile.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{4} << 20;

class FreeHostTest : public GpuTest {};

// Fault: freehost_leaks. Freed pinned memory is no longer known to the driver: its attributes
// are those of unregistered host memory (R71), not of pinned memory.
TEST_F(FreeHostTest, FreedPinnedMemoryIsNoLongerPinned) {
  PAGELOCK_RULE("R19,R71");
  for (unsigned flags : {unsigned{cudaHostAllocDefault}, unsigned{cudaHostAllocMapped}}) {
    void* p = nullptr;
    ASSERT_CUDA_OK(cudaHostAlloc(&p, kSize, flags));
    cudaPointerAttributes a{};
    ASSERT_CUDA_OK(cudaPointerGetAttributes(&a, p));
    ASSERT_EQ(a.type, cudaMemoryTypeHost);
    ASSERT_CUDA_OK(cudaFreeHost(p));
    a = cudaPointerAttributes{};
    const cudaError_t expected = ByProfile(cudaErrorInvalidValue, cudaSuccess, cudaSuccess);
    EXPECT_CUDA_ERROR(expected, cudaPointerGetAttributes(&a, p)) << "flags " << flags;
    if (expected == cudaSuccess) {
      EXPECT_EQ(a.type, cudaMemoryTypeUnregistered) << "flags " << flags;
    }
  }
}

}  // namespace
}  // namespace pagelock
