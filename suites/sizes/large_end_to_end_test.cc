// One 1 GiB cudaHostAlloc(Mapped) allocation and one 1 GiB cudaHostRegister(Mapped) registration
// of an anonymous mmap, end to end: the host fills both, a kernel reads the first, a random
// middle and the last page (and the last byte) through each mapped device pointer, each is
// copied whole into device memory (every byte counted there) and back whole into the other
// (every byte counted on the host), and the device writes the three pages through the mapped
// pointers for the host to read. Full tier, about a second on an H200 (two 1 GiB pins, four
// 1 GiB copies, threaded host fills and checks). The driver may refuse a pin the host holds:
// cudaHostAlloc and cudaHostRegister list cudaErrorMemoryAllocation and no size one call must pin
// is documented (R06, R47), so a clean refusal (not sticky) is recorded and WARNed and the case
// stops there; any other error, or a sticky refusal, fails (sizes::PinnedOrRefusedCleanly).
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/resources.h"
#include "kernels/sizes/size_kernels.h"
#include "kernels/sizes/size_pattern.h"
#include "suites/sizes/size_util.h"

namespace pagelock {
namespace {

using sizes::Counters;
using sizes::kGiBytes;

constexpr size_t kSize = kGiBytes;
constexpr size_t kNeighbour = 64;  // bytes checked on either side of a page the device wrote

// One of the two gibibytes: its name, host and device addresses and the seed the host fills.
struct Region {
  const char* name;
  unsigned char* host;
  unsigned char* dev;
  uint64_t seed;
};

class LargeEndToEndTest : public GpuTest {};

// A driver that maps only part of a large range (a page table truncated at 2^30 or at 2^32
// bits), that copies a large range in pieces and drops or repeats one, or that routes a mapped
// access to another page of a large range fails this: the device reads the host's bytes at the
// three pages, every byte arrives in device memory and back in the other region, and the
// device's writes land on their pages and nowhere next to them.
TEST_F(LargeEndToEndTest, AGibibyteAllocationAndRegistrationRoundTripEveryByteThroughTheDevice) {
  PAGELOCK_RULE("R111,R77,R53");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrCanMapHostMemory, 1));
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  const std::string host_short = sizes::HostMemoryShortfall(2 * kSize, 2 * kGiBytes);
  if (!host_short.empty()) PAGELOCK_NOT_SUPPORTED(host_short);
  const std::string dev_short = sizes::DeviceMemoryShortfall(2 * kSize + 256 * sizes::kMiB);
  if (!dev_short.empty()) PAGELOCK_NOT_SUPPORTED(dev_short);
  Budget("pinned_host_GiB", 2, "GiB");
  Budget("device_GiB", 2, "GiB");

  // Each pin: success, or a clean cudaErrorMemoryAllocation (R06; no per-call minimum is
  // documented), recorded as observation "pin_cudaHostAlloc" / "pin_cudaHostRegister".
  PinnedBuffer alloc(kSize, cudaHostAllocMapped);
  if (!sizes::PinnedOrRefusedCleanly("pin_cudaHostAlloc", alloc.status(), PinRoute::kHostAlloc,
                                     "cudaHostAlloc(Mapped) of 1 GiB")) {
    return;
  }
  void* alloc_dev = nullptr;
  ASSERT_CUDA_OK(cudaHostGetDevicePointer(&alloc_dev, alloc.host(), 0));
  // 2 MiB aligned with THP asked for: where THP is on, faulting and pinning the gibibyte take a
  // fraction of the time 4 KiB pages do (the full tier's budget).
  Mapping map(kSize, Mapping::kHugeAligned);
  if (map) (void)map.Advise(MADV_HUGEPAGE);  // a hint; where THP is off the pages stay 4 KiB
  ASSERT_NE(map.data(), nullptr) << "mmap of 1 GiB failed";
  HostRegistration reg(map.data(), kSize, cudaHostRegisterMapped);
  if (!sizes::PinnedOrRefusedCleanly("pin_cudaHostRegister", reg.status(), PinRoute::kHostRegister,
                                     "cudaHostRegister(Mapped) of a 1 GiB anonymous mmap")) {
    return;
  }
  void* reg_dev = nullptr;
  ASSERT_CUDA_OK(cudaHostGetDevicePointer(&reg_dev, map.data(), 0));
  DeviceBuffer d_alloc(kSize), d_reg(kSize);
  ASSERT_CUDA_OK(d_alloc.status());
  ASSERT_CUDA_OK(d_reg.status());
  Counters counters(8);
  ASSERT_CUDA_OK(counters.status());

  Region regions[2] = {{"cudaHostAlloc", alloc.host(), static_cast<unsigned char*>(alloc_dev), CaseRng()()},
                       {"cudaHostRegister", map.data(), static_cast<unsigned char*>(reg_dev), CaseRng()()}};
  const size_t page = PageSize();
  // Not next to the first or the last page: the bytes around each page are checked below.
  const size_t middle = page * (2 + CaseRng()() % (kSize / page - 4));
  const size_t pages[3] = {0, middle, kSize - page};
  const char* const page_names[3] = {"first page", "middle page", "last page"};
  Observe("middle_page_offset", static_cast<unsigned long long>(middle));

  // The host fills both gibibytes; the device reads the three pages and the last byte.
  for (const Region& r : regions) HostFillSizePattern(r.host, kSize, 0, r.seed);
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < 3; ++i) {
      ASSERT_CUDA_OK(LaunchCountSizePatternMismatches(regions[k].dev + pages[i], page, pages[i], regions[k].seed,
                                                      counters.dev(4 * k + i)));
    }
    ASSERT_CUDA_OK(LaunchCountSizePatternMismatches(regions[k].dev + kSize - 1, 1, kSize - 1, regions[k].seed,
                                                    counters.dev(4 * k + 3)));
  }
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(counters.value(4 * k + i), 0u)
          << regions[k].name << ": bytes of the " << page_names[i] << " (offset " << pages[i]
          << ") read through the mapped device pointer differ from what the host wrote";
    }
    EXPECT_EQ(counters.value(4 * k + 3), 0u) << regions[k].name << ": the last byte read through the mapped pointer";
  }

  // Whole copies: each gibibyte into device memory, counted there, then back into the other.
  unsigned char* const device[2] = {d_alloc.as<unsigned char>(), d_reg.as<unsigned char>()};
  cudaError_t e = cudaSuccess;
  for (int k = 0; k < 2; ++k) {
    ASSERT_CUDA_OK(cudaMemcpy(device[k], regions[k].host, kSize, cudaMemcpyHostToDevice)) << regions[k].name;
    EXPECT_EQ(sizes::DeviceCountPatternMismatches(counters, device[k], kSize, 0, regions[k].seed, &e), 0u)
        << regions[k].name << ": bytes of the 1 GiB host-to-device copy differ from the host's";
    ASSERT_CUDA_OK(e);
  }
  for (int k = 0; k < 2; ++k) {
    const Region& to = regions[1 - k];
    ASSERT_CUDA_OK(cudaMemcpy(to.host, device[k], kSize, cudaMemcpyDeviceToHost)) << to.name;
    EXPECT_EQ(HostCountSizePatternMismatches(to.host, kSize, 0, regions[k].seed), 0u)
        << "bytes of the 1 GiB device-to-host copy into the " << to.name << " memory differ from the device's";
  }

  // The device writes the three pages through the mapped pointers; the host reads them and the
  // bytes next to them, which keep what the copy back delivered (the other region's seed).
  for (int k = 0; k < 2; ++k) {
    for (size_t off : pages) {
      ASSERT_CUDA_OK(LaunchFillSizePattern(regions[k].dev + off, page, off, ~regions[k].seed));
    }
  }
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  for (int k = 0; k < 2; ++k) {
    const uint64_t around = regions[1 - k].seed;
    for (int i = 0; i < 3; ++i) {
      const size_t off = pages[i];
      EXPECT_EQ(HostCountSizePatternMismatches(regions[k].host + off, page, off, ~regions[k].seed), 0u)
          << regions[k].name << ": the host does not read the device's writes to the " << page_names[i];
      size_t outside = 0;
      if (off >= kNeighbour) {
        outside += HostCountSizePatternMismatches(regions[k].host + off - kNeighbour, kNeighbour, off - kNeighbour, around);
      }
      if (off + page + kNeighbour <= kSize) {
        outside += HostCountSizePatternMismatches(regions[k].host + off + page, kNeighbour, off + page, around);
      }
      EXPECT_EQ(outside, 0u) << regions[k].name << ": device writes to the " << page_names[i]
                             << " changed bytes next to it";
    }
  }
  EXPECT_CUDA_OK(reg.Free());
  EXPECT_CUDA_OK(alloc.Free());
}

}  // namespace
}  // namespace pagelock
