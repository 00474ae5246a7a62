// Property: for any flag combination, allocation size and window inside the allocation, what the
// host writes is what a kernel reads through the device pointer, what the kernel writes is what
// the host reads, and no byte outside the window changes. RapidCheck draws the inputs from the
// run's seed (fixtures/seed.h: printed, recorded per case, replayed with PAGELOCK_SEED); a failure
// prints the shrunk counterexample (flags, size, window) in the test's failure message.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "fixtures/generators.h"
#include "fixtures/gpu_property.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"
#include "kernels/pattern.h"

namespace pagelock {
namespace {

class HostAllocProperty : public GpuProperty {};

RC_GTEST_FIXTURE_PROP(HostAllocProperty, HostAndDeviceSeeTheSameBytesInAnyWindow,
                      (HostAllocFlags flags, ByteSize size, uint32_t seed)) {
  if (!ready()) return;
  PAGELOCK_RULE("R14,R77,R08");
  const Window w = *gen::WindowIn(size.bytes);
  RC_CLASSIFY((flags.value & cudaHostAllocWriteCombined) != 0, "writecombined");
  RC_CLASSIFY(size.bytes < 4096, "sub-page");
  RC_CLASSIFY(w.offset % 4096 != 0, "unaligned offset");

  void* raw = nullptr;
  RC_ASSERT(cudaHostAlloc(&raw, size.bytes, flags.value) == cudaSuccess);
  const auto host = PinnedBuffer::Adopt(raw, size.bytes);  // released when RC_ASSERT throws, too
  auto* p = static_cast<unsigned char*>(raw);
  unsigned char* dev = nullptr;
  RC_ASSERT(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), p, 0) == cudaSuccess);
  void* counter_raw = nullptr;
  RC_ASSERT(cudaMalloc(&counter_raw, sizeof(unsigned long long)) == cudaSuccess);
  const auto counter = DeviceBuffer::Adopt(counter_raw);
  auto* mismatches = static_cast<unsigned long long*>(counter_raw);

  const uint32_t guard = seed ^ 0x5a5a5a5au;
  HostFillPattern(p, size.bytes, guard);

  // Host writes the window, the device reads it.
  HostFillPattern(p + w.offset, w.length, seed);
  RC_ASSERT(cudaMemset(mismatches, 0, sizeof *mismatches) == cudaSuccess);
  RC_ASSERT(LaunchCountPatternMismatches(dev + w.offset, w.length, seed, mismatches) == cudaSuccess);
  RC_ASSERT(cudaDeviceSynchronize() == cudaSuccess);
  unsigned long long device_bad = ~0ull;
  RC_ASSERT(cudaMemcpy(&device_bad, mismatches, sizeof device_bad, cudaMemcpyDefault) == cudaSuccess);
  RC_ASSERT(device_bad == 0u);

  // The device writes the window, the host reads it and everything around it.
  const uint32_t device_seed = ~seed;
  RC_ASSERT(LaunchFillPattern(dev + w.offset, w.length, device_seed) == cudaSuccess);
  RC_ASSERT(cudaDeviceSynchronize() == cudaSuccess);
  RC_ASSERT(HostCountPatternMismatches(p + w.offset, w.length, device_seed) == 0u);
  size_t outside_bad = HostCountPatternMismatches(p, w.offset, guard);
  for (size_t i = w.offset + w.length; i < size.bytes; ++i) outside_bad += p[i] != PatternByte(i, guard);
  RC_ASSERT(outside_bad == 0u);
}

}  // namespace
}  // namespace pagelock
