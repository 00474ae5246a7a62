// A stale device alias never reaches recycled pages (V07). After cudaHostUnregister ("Unmaps the
// memory range whose base address is specified by ptr, and makes it pageable again"),
// cudaFreeHost ("Frees the memory space pointed to by ptr") or an munmap of a registered range,
// the process maps a canary at the freed address and fresh pages around it, and a kernel writes
// through the old device alias. Whatever the device does with that write -- a fault (recorded,
// with whether the error is sticky) or a write into the pages the registration still holds (the
// munmap case) -- it must never land in the canary or in the fresh pages, which the kernel may
// have built from the very frames the registration released (gdrcopy's sanity test checks the
// same for its mappings: invalidation_access_after_gdr_close). The write runs in a child: it may
// poison the context. A crash or hang of the child fails the case; the pins come back when the
// child exits. Faults that fail it: a driver that leaves the device's page-table entries after
// the release (the DMA then writes freed frames), one that re-resolves a stale device address
// through the process's current page table (the canary), one whose release leaks the pins.
// These cases make the GPU fault on purpose: the kernel log shows an MMU fault (Xid 31) for
// them. Rule ids refer to suites/rules.tsv.
#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/kernel_accounting.h"
#include "fixtures/mapping.h"
#include "fixtures/page_state.h"
#include "kernels/access_kernels.h"
#include "kernels/pattern.h"
#include "suites/pagestates/pagestates.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace pagelock {
namespace pagestates {
namespace {

constexpr size_t kBytes = size_t{1} << 20;
constexpr size_t kPoolBytes = size_t{16} << 20;  // fresh pages after the release

// PFNs of [p, p + n); empty when not shown.
std::vector<uint64_t> Pfns(const void* p, size_t n) {
  std::vector<pages::PageMapEntry> pm;
  std::string why;
  std::vector<uint64_t> out;
  if (!pages::ReadPageMap(p, n, &pm, &why)) return out;
  for (const auto& e : pm) out.push_back(e.pfn);
  return out;
}

PAGELOCK_SCENARIO(StaleAliasWrite) {
  report.Error("init", cudaFree(nullptr));
  report.Error("warmup", WarmUpOnce());
  const std::string arg = ScenarioArg();  // "<how>:<seed>"
  const std::string how = arg.substr(0, arg.find(':'));
  const uint32_t seed = static_cast<uint32_t>(std::strtoul(arg.substr(arg.find(':') + 1).c_str(), nullptr, 10));
  unsigned char* p = nullptr;
  cudaError_t e = cudaSuccess;
  if (how == "free_host") {
    void* a = nullptr;
    e = cudaHostAlloc(&a, kBytes, cudaHostAllocMapped);
    p = static_cast<unsigned char*>(a);
  } else {
    void* m = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return report.Set("setup", "mmap failed");
    p = static_cast<unsigned char*>(m);
    e = cudaHostRegister(p, kBytes, cudaHostRegisterMapped);
  }
  report.Error("pin", e);
  if (e != cudaSuccess) return;
  HostFillPattern(p, kBytes, seed);
  void* dev = DeviceAlias(p, &e);
  report.Error("alias", e);
  if (!dev) return;
  // The alias works while the memory is pinned.
  const Coherence live = CheckBothWays(p, kBytes, Pattern(seed), seed, true);
  ReportCoherence(report, live, "live_");
  const std::vector<uint64_t> old_frames = Pfns(p, kBytes);
  // The release.
  if (how == "free_host") {
    report.Error("release", cudaFreeHost(p));
  } else if (how == "unregister") {
    report.Error("release", cudaHostUnregister(p));
    report.Set("munmap", munmap(p, kBytes) == 0 ? "ok" : std::strerror(errno));
  } else {  // munmap: the registration outlives the mapping
    report.Set("release", munmap(p, kBytes) == 0 ? "ok" : std::strerror(errno));
  }
  // A canary at the freed address, and fresh pages, all holding the canary pattern.
  const uint32_t canary_seed = seed ^ 0xc0ffee00u;
  void* c = mmap(p, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  const bool canary = c == p;
  report.Set("canary_at_address", canary ? "1" : (c == MAP_FAILED ? std::strerror(errno) : "placed elsewhere"));
  // The canary and the pool are unmapped last, the pool first (declared last).
  Mapping canary_map = Mapping::Adopt(c, kBytes);
  if (!canary) canary_map = Mapping();  // placed elsewhere: unmapped at once
  if (canary) HostFillPattern(p, kBytes, canary_seed);
  const Mapping pool_map(kPoolBytes);
  unsigned char* pool = pool_map.data();
  if (pool) HostFillPattern(pool, kPoolBytes, canary_seed);
  if (!old_frames.empty() && old_frames[0] != 0) {
    // How many released frames the process got back (root only): recorded.
    std::vector<uint64_t> now = Pfns(p, canary ? kBytes : 0);
    const std::vector<uint64_t> pool_frames = pool ? Pfns(pool, kPoolBytes) : std::vector<uint64_t>{};
    now.insert(now.end(), pool_frames.begin(), pool_frames.end());
    long long reused = 0;
    for (uint64_t f : now) {
      for (uint64_t o : old_frames) reused += f != 0 && f == o;
    }
    report.Set("frames_reused", reused);
  }
  // The write through the stale alias.
  const cudaError_t launch = LaunchFillPattern(dev, kBytes, seed ^ 0x5eed5eedu);
  report.Error("stale_launch", launch);
  report.Error("stale_sync", cudaDeviceSynchronize());
  (void)cudaGetLastError();
  report.Error("after_sync", cudaDeviceSynchronize());  // sticky if it fails again
  report.Set("canary_bad", canary ? static_cast<long long>(HostCountPatternMismatches(p, kBytes, canary_seed)) : -1);
  report.Set("pool_bad", pool ? static_cast<long long>(HostCountPatternMismatches(pool, kPoolBytes, canary_seed)) : -1);
  if (how == "munmap") report.Error("unregister", cudaHostUnregister(p));
}

class StaleAliasTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StaleAliasTest, AKernelWritingThroughAStaleAliasNeverReachesTheCanary) {
  PAGELOCK_RULE("V07");
  PAGELOCK_REQUIRE(RequireUsableDevice());
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  const std::string how = GetParam();
  Observe("deliberate_device_fault", "a kernel writes through a released alias (an MMU fault is expected)");
  const bool quiet = PinBalanceIsQuiet(kQuietS);
  const PinCounters before = ReadPinCounters();
  ChildResult r = RunScenario("StaleAliasWrite", 60,
                              {ScenarioArgEnv(how + ":" + std::to_string(static_cast<uint32_t>(CaseSeed())))});
  for (const char* key : {"release", "stale_launch", "stale_sync", "after_sync", "frames_reused", "unregister",
                          "canary_at_address"}) {
    Observe(key, r.Get(key));
  }
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("init"), "cudaSuccess");
  ASSERT_EQ(r.Get("warmup"), "cudaSuccess");
  ASSERT_EQ(r.Get("pin"), "cudaSuccess");
  ASSERT_EQ(r.Get("alias"), "cudaSuccess");
  ExpectChildCoherent(r, "the live alias before the release", true, "live_");
  EXPECT_TRUE(r.Get("release") == "cudaSuccess" || r.Get("release") == "ok") << "the release: " << r.Get("release");
  // The pages the process maps after the release keep their bytes, whatever the write did.
  EXPECT_EQ(r.Get("pool_bad"), "0") << "bytes of fresh pages changed by a write through a released alias";
  if (r.Get("canary_at_address") != "1") {
    PAGELOCK_NOT_SUPPORTED("no canary could be mapped at the released address (mmap MAP_FIXED_NOREPLACE: " +
                           r.Get("canary_at_address") + "): the driver keeps the range mapped");
  }
  EXPECT_EQ(r.Get("canary_bad"), "0") << "bytes of the canary at the released address changed by a write "
                                         "through the stale device alias";
  // The child's exit releases everything it held, the stale registration of the munmap case too.
  ExpectPinBalanceReturned(before, quiet, "the child that wrote through a stale alias exited", 10, "", kQuietS);
}

#ifdef PAGELOCK_STRESS_TIER
const auto kHows = ::testing::Values(std::string("unregister"), std::string("free_host"), std::string("munmap"));
#else
const auto kHows = ::testing::Values(std::string("unregister"));
#endif

INSTANTIATE_TEST_SUITE_P(AfterEachRelease, StaleAliasTest, kHows,
                         [](const ::testing::TestParamInfo<std::string>& i) { return "after_" + i.param; });

}  // namespace
}  // namespace pagestates
}  // namespace pagelock
