// Registered pages stay the pages the process maps while the kernel's page movers run over them
// (V03): MADV_COLLAPSE and khugepaged (collapse small pages into a THP by copying them),
// move_pages(2) and mbind(MPOL_MF_MOVE) (migrate them to another node), automatic NUMA
// balancing (unmaps them for hinting faults, migrates them). A long-term pin holds a page in
// place: migration and collapse refuse a page with references they cannot account for (the
// move_pages(2) manual: "-EBUSY The page is currently busy and cannot be moved ... another
// kernel subsystem is holding a reference to the page"). After each mover: every call returned
// within its bound, the pinned pages are where they were at the pin, and the device still sees
// the host's writes and the host the device's. A driver that maps the pages to the device
// without holding a reference (mlock-style, or pinning and unpinning at once) lets them move
// and keeps DMA to the old frames: the byte checks fail.
// KSM (V04): identical pages merged into one write-protected KSM page; a read-write pin must
// unshare the process's pages first, and a pinned page is never merged afterwards.
// ZONE_MOVABLE (V05): a long-term pin migrates pages out of ZONE_MOVABLE before pinning
// (Documentation/admin-guide/mm/memory-hotplug.rst: "Pinned pages cannot reside on
// ZONE_MOVABLE ... pages have to be migrated off that zone first"); register/unregister cycles
// over such pages return the pin balance (the NV-Kernels 6.11 leak). Cases that wait for a
// kernel thread (khugepaged, NUMA balancing, ksmd) are in the stress tier. Rule ids refer to
// suites/rules.tsv.
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/kernel_accounting.h"
#include "fixtures/mapping.h"
#include "fixtures/numa.h"
#include "fixtures/page_state.h"
#include "fixtures/resources.h"
#include "fixtures/settings.h"
#include "fixtures/time_scale.h"
#include "kernels/pattern.h"
#include "suites/pagestates/pagestates.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

namespace pagelock {
namespace pagestates {
namespace {

using pages::PageState;
using pages::PageStateRegion;

constexpr size_t kThp = size_t{2} << 20;

// `n` bytes of 4 KiB pages at a 2 MiB-aligned address, between PROT_NONE guards (its own smaps
// entry), written with the pattern of `seed`; MADV_HUGEPAGE after the write so that a collapse
// is allowed but nothing was faulted in as a THP.
struct SmallPages {
  unsigned char* p = nullptr;
  size_t n = 0;
  Mapping own;  // the range and its PROT_NONE guards
  std::string error;
  SmallPages(size_t bytes, uint32_t seed) : n(bytes) {
    const size_t total = bytes + 2 * kThp;
    void* base = mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
      error = std::string("mmap: ") + strerror(errno);
      return;
    }
    own = Mapping::Adopt(base, total);
    auto* a = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(base) + kThp) / kThp * kThp);
    if (mprotect(a, n, PROT_READ | PROT_WRITE) != 0 || madvise(a, n, MADV_NOHUGEPAGE) != 0) {
      error = std::string("mprotect/madvise: ") + strerror(errno);
      return;
    }
    HostFillPattern(a, n, seed);
    if (madvise(a, n, MADV_HUGEPAGE) != 0) {
      error = std::string("madvise(MADV_HUGEPAGE): ") + strerror(errno);
      return;
    }
    p = a;
  }
  long long AnonHugeKib() const {
    pages::Smaps s;
    std::string why;
    return pages::ReadSmaps(p, n, &s, &why) ? s.anon_huge_kib : -1;
  }
};

// PFNs of [p, p + n), or empty when not shown (no CAP_SYS_ADMIN).
std::vector<uint64_t> Pfns(const void* p, size_t n) {
  std::vector<pages::PageMapEntry> pm;
  std::string why;
  std::vector<uint64_t> out;
  if (!pages::ReadPageMap(p, n, &pm, &why)) return out;
  for (const auto& e : pm) {
    if (e.pfn == 0) return {};
    out.push_back(e.pfn);
  }
  return out;
}

size_t Changed(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  size_t k = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) k += a[i] != b[i];
  return k;
}

// One /proc/meminfo field in bytes, -1 when absent.
[[maybe_unused]] int64_t ReadMemInfoField(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::stringstream ss;
  ss << in.rdbuf();
  return MemInfoField(ss.str(), key);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// MADV_COLLAPSE (Linux >= 6.1) over a registered range of small pages. The kernel's collapse
// copies the small pages into a new huge page and frees them, unless a reference it cannot
// account for (a pin) holds one: then it fails for that range. A control range, unregistered,
// must collapse first: it shows the collapse works here. Whether the registered range collapsed
// is recorded; the rule is that the device and the host still share its bytes.
TEST_F(PageStatesTest, CollapsingARegisteredRangeLeavesItsPagesCoherent) {
  PAGELOCK_RULE("V03");
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  SmallPages control(kThp, seed ^ 1), reg_range(kThp, seed);
  ASSERT_NE(control.p, nullptr) << control.error;
  ASSERT_NE(reg_range.p, nullptr) << reg_range.error;
  errno = 0;
  if (madvise(control.p, control.n, MADV_COLLAPSE) != 0 || control.AnonHugeKib() < 2048) {
    PAGELOCK_NOT_SUPPORTED(std::string("MADV_COLLAPSE of an unregistered control range: ") +
                           (errno ? strerror(errno) : "no huge page") + " (needs Linux >= 6.1 and THP: " +
                           "transparent_hugepage/enabled=" +
                           pages::SelectedMode(pages::ReadSetting("/sys/kernel/mm/transparent_hugepage/enabled")) +
                           "; " + pages::LabhostHint("--thp madvise") + ")");
  }
  PinWatch pins;
  ASSERT_CUDA_OK(cudaHostRegister(reg_range.p, reg_range.n, cudaHostRegisterMapped));
  auto reg = HostRegistration::Adopt(reg_range.p, reg_range.n);
  const std::vector<uint64_t> pinned = Pfns(reg_range.p, reg_range.n);
  const auto start = std::chrono::steady_clock::now();
  errno = 0;
  const int rc = madvise(reg_range.p, reg_range.n, MADV_COLLAPSE);
  const int err = errno;
  Metric("collapse_call_s", Seconds(start), "s");
  EXPECT_LT(Seconds(start), 10 * TimeScale()) << "MADV_COLLAPSE of a registered range took longer than 10 s";
  Observe("registered_collapse", rc == 0 ? std::string("collapsed") : std::string(strerror(err)));
  Observe("registered_anon_huge_kib", reg_range.AnonHugeKib());
  if (!pinned.empty()) {
    EXPECT_EQ(Changed(pinned, Pfns(reg_range.p, reg_range.n)), 0u)
        << "pinned pages were replaced by the collapse (pagemap PFNs changed)";
  }
  ExpectCoherent(CheckBothWays(reg_range.p, reg_range.n, Pattern(seed), seed, true), "after MADV_COLLAPSE");
  EXPECT_CUDA_OK(reg.Free());
  pins.ExpectReturned("the collapsed registration ended");
}

// Nodes with memory this thread may use; fewer than two: NotSupported (the reason names them).
std::vector<int> TwoNodes(std::string* why) {
  std::vector<int> nodes = numa::NodesWithMemory(why);
  if (nodes.size() < 2) {
    *why = "migration needs two NUMA nodes with memory; this host has " + std::to_string(nodes.size()) +
           " (/sys/devices/system/node/has_memory" + (why->empty() ? "" : ": " + *why) +
           "): a host with two nodes (no labhost setting makes one)";
    return {};
  }
  return nodes;
}

enum class Mover { kMovePages, kMbind };

class MigrationTest : public PageStatesTest, public ::testing::WithParamInterface<Mover> {};

// The registered pages, placed on node A by first touch under a thread bound to A, are asked to
// move to node B (move_pages to B with MPOL_MF_MOVE, or mbind(MPOL_BIND B, MPOL_MF_MOVE |
// MPOL_MF_STRICT)); afterwards each is where it was at the pin, and host and device agree.
TEST_P(MigrationTest, MigratingARegisteredRangeLeavesItsPagesInPlace) {
  PAGELOCK_RULE("V03");
  std::string why;
  const std::vector<int> nodes = TwoNodes(&why);
  if (nodes.empty()) PAGELOCK_NOT_SUPPORTED(why);
  const int from = nodes[0], to = nodes[1];
  const size_t n = size_t{4} << 20, page = PageSize();
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  const Mapping own = Mapping::Adopt(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), n);
  ASSERT_TRUE(own) << strerror(errno);
  unsigned char* p = own.data();
  {
    numa::ThreadBind bind(from);
    if (!bind.error().empty()) PAGELOCK_NOT_SUPPORTED(bind.error());
    HostFillPattern(p, n, seed);
  }
  PinWatch pins;
  ASSERT_CUDA_OK(cudaHostRegister(p, n, cudaHostRegisterMapped));
  auto reg = HostRegistration::Adopt(p, n);
  std::vector<int> at_pin, after;
  if (!numa::PageNodes(p, n, &at_pin, &why)) PAGELOCK_NOT_SUPPORTED(why);
  Observe("nodes_at_pin", numa::Histogram(at_pin));
  const auto start = std::chrono::steady_clock::now();
  long rc = 0;
  int err = 0;
  if (GetParam() == Mover::kMovePages) {
    std::vector<void*> addrs;
    for (size_t i = 0; i < n; i += page) addrs.push_back(p + i);
    std::vector<int> target(addrs.size(), to), status(addrs.size(), -1);
    rc = syscall(SYS_move_pages, 0, addrs.size(), addrs.data(), target.data(), status.data(), MPOL_MF_MOVE);
    err = errno;
    Observe("move_pages_status", numa::Histogram(status));
  } else {
    std::vector<unsigned long> mask(16, 0);
    mask[to / 64] |= 1ul << (to % 64);
    rc = syscall(SYS_mbind, p, n, MPOL_BIND, mask.data(), mask.size() * 64 + 1, MPOL_MF_MOVE | MPOL_MF_STRICT);
    err = errno;
    (void)syscall(SYS_mbind, p, n, MPOL_DEFAULT, nullptr, 0, 0);
  }
  Metric("migration_call_s", Seconds(start), "s");
  EXPECT_LT(Seconds(start), 10 * TimeScale()) << "the migration call took longer than 10 s (an -EBUSY retry storm?)";
  Observe("migration_result", rc < 0 ? std::string(strerror(err)) : std::to_string(rc) + " not migrated");
  if (!numa::PageNodes(p, n, &after, &why)) PAGELOCK_NOT_SUPPORTED(why);
  Observe("nodes_after", numa::Histogram(after));
  EXPECT_EQ(at_pin, after) << "registered pages moved: " << numa::Histogram(at_pin) << " at the pin, "
                           << numa::Histogram(after) << " after the migration request";
  ExpectCoherent(CheckBothWays(p, n, Pattern(seed), seed, true), "after the migration request");
  EXPECT_CUDA_OK(reg.Free());
  pins.ExpectReturned("the registration asked to migrate ended");
}

INSTANTIATE_TEST_SUITE_P(EachMover, MigrationTest, ::testing::Values(Mover::kMovePages, Mover::kMbind),
                         [](const ::testing::TestParamInfo<Mover>& i) {
                           return std::string(i.param == Mover::kMovePages ? "move_pages" : "mbind_move");
                         });

#ifdef PAGELOCK_STRESS_TIER

// khugepaged collapses MADV_HUGEPAGE ranges in the background. A control range collapsing shows
// it scanned this process; the registered range beside it must stay coherent.
TEST_F(PageStatesTest, KhugepagedLeavesARegisteredRangeCoherent) {
  PAGELOCK_RULE("V03");
  const std::string thp = "/sys/kernel/mm/transparent_hugepage/";
  const std::string enabled = pages::SelectedMode(pages::ReadSetting(thp + "enabled"));
  if (enabled != "always" && enabled != "madvise") {
    PAGELOCK_NOT_SUPPORTED("transparent_hugepage/enabled=" + enabled + ": " + pages::LabhostHint("--thp madvise"));
  }
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  SmallPages control(kThp, seed ^ 1), reg_range(kThp, seed);
  ASSERT_NE(control.p, nullptr) << control.error;
  ASSERT_NE(reg_range.p, nullptr) << reg_range.error;
  PinWatch pins;
  ASSERT_CUDA_OK(cudaHostRegister(reg_range.p, reg_range.n, cudaHostRegisterMapped));
  auto reg = HostRegistration::Adopt(reg_range.p, reg_range.n);
  const std::vector<uint64_t> pinned = Pfns(reg_range.p, reg_range.n);
  const double limit = settings::PositiveNumber("PAGELOCK_KHUGEPAGED_WAIT_S");
  Budget("khugepaged_wait_s", limit, "s");
  const auto start = std::chrono::steady_clock::now();
  while (control.AnonHugeKib() < 2048 && Seconds(start) < limit * TimeScale()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  Metric("khugepaged_collapse_s", Seconds(start), "s");
  if (control.AnonHugeKib() < 2048) {
    EXPECT_CUDA_OK(reg.Free());
    PAGELOCK_NOT_SUPPORTED("khugepaged did not collapse an unregistered control range within " +
                           std::to_string(static_cast<int>(limit)) + " s (khugepaged/scan_sleep_millisecs=" +
                           pages::ReadSetting(thp + "khugepaged/scan_sleep_millisecs") + ", pages_to_scan=" +
                           pages::ReadSetting(thp + "khugepaged/pages_to_scan") + "): " +
                           pages::LabhostHint("--khugepaged-scan-ms 100"));
  }
  Observe("registered_anon_huge_kib", reg_range.AnonHugeKib());
  if (!pinned.empty()) {
    EXPECT_EQ(Changed(pinned, Pfns(reg_range.p, reg_range.n)), 0u) << "khugepaged replaced pinned pages";
  }
  ExpectCoherent(CheckBothWays(reg_range.p, reg_range.n, Pattern(seed), seed, true), "after khugepaged ran");
  EXPECT_CUDA_OK(reg.Free());
  pins.ExpectReturned("the registration khugepaged scanned ended");
}

// Automatic NUMA balancing unmaps a running task's pages (PROT_NONE hinting) and migrates them
// toward the node that touches them. The case touches its registered range from the CPU for a
// while; the scanner's PTE updates (vmstat numa_pte_updates) show it ran.
TEST_F(PageStatesTest, NumaBalancingLeavesARegisteredRangeCoherent) {
  PAGELOCK_RULE("V03");
  const std::string mode = pages::ReadSetting("/proc/sys/kernel/numa_balancing");
  if (mode.empty()) PAGELOCK_NOT_SUPPORTED("no /proc/sys/kernel/numa_balancing (CONFIG_NUMA_BALANCING off)");
  if (mode == "0") {
    PAGELOCK_NOT_SUPPORTED("kernel.numa_balancing=0: " + pages::LabhostHint("--numa-balancing"));
  }
  const size_t n = size_t{16} << 20;
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  SmallPages range(n, seed);
  ASSERT_NE(range.p, nullptr) << range.error;
  PinWatch pins;
  ASSERT_CUDA_OK(cudaHostRegister(range.p, n, cudaHostRegisterMapped));
  auto reg = HostRegistration::Adopt(range.p, n);
  const std::vector<uint64_t> pinned = Pfns(range.p, n);
  const int64_t updates0 = pages::VmstatNow("numa_pte_updates"), faults0 = pages::VmstatNow("numa_hint_faults");
  const double limit = settings::PositiveNumber("PAGELOCK_NUMA_BALANCING_S");
  Budget("numa_balancing_touch_s", limit, "s");
  const auto start = std::chrono::steady_clock::now();
  unsigned long long sum = 0;
  while (Seconds(start) < limit * TimeScale() && pages::VmstatNow("numa_pte_updates") - updates0 < 1) {
    for (size_t i = 0; i < n; i += PageSize()) sum += static_cast<const volatile unsigned char*>(range.p)[i];
  }
  // Touch once more after the scanner ran, so hinting faults happen on the range.
  for (size_t i = 0; i < n; i += PageSize()) sum += static_cast<const volatile unsigned char*>(range.p)[i];
  const int64_t updates = pages::VmstatNow("numa_pte_updates") - updates0;
  Observe("numa_pte_updates", static_cast<long long>(updates));
  Observe("numa_hint_faults", static_cast<long long>(pages::VmstatNow("numa_hint_faults") - faults0));
  Observe("touch_sum", sum);
  if (updates < 1) {
    EXPECT_CUDA_OK(reg.Free());
    PAGELOCK_NOT_SUPPORTED("NUMA balancing made no PTE updates in " + std::to_string(static_cast<int>(limit)) +
                           " s of touching the range (kernel.numa_balancing=" + mode + ", vmstat numa_pte_updates)");
  }
  if (!pinned.empty()) {
    EXPECT_EQ(Changed(pinned, Pfns(range.p, n)), 0u) << "NUMA balancing migrated pinned pages";
  }
  ExpectCoherent(CheckBothWays(range.p, n, Pattern(seed), seed, true), "after NUMA balancing ran");
  EXPECT_CUDA_OK(reg.Free());
  pins.ExpectReturned("the registration NUMA balancing scanned ended");
}

// KSM merged the range with its identical twin into one write-protected page. A read-write
// registration must give the process pages of its own (unshare): the device's writes then
// reach the range and never the twin. ("KSM ... merges identical pages ... into a single
// write-protected page, which is automatically copied if a process later wants to update its
// content", Documentation/admin-guide/mm/ksm.rst.)
TEST_F(PageStatesTest, KsmMergedPagesRegisteredReadWriteKeepTheDevicesWritesFromTheirTwin) {
  PAGELOCK_RULE("V04,V02");
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  auto r = PageStateRegion::Make(PageState::kKsmMerged, size_t{1} << 20, seed);
  if (!r->data()) PAGELOCK_NOT_SUPPORTED(r->unavailable());
  ObserveState(*r);
  PinWatch pins;
  ASSERT_CUDA_OK(cudaHostRegister(r->data(), r->size(), cudaHostRegisterMapped));
  auto reg = HostRegistration::Adopt(r->data(), r->size());
  ExpectCoherent(CheckBothWays(r->data(), r->size(), r->content(), seed, true), "KSM-merged pages");
  size_t twin_bad = 0;
  for (size_t i = 0; i < r->size(); ++i) twin_bad += r->twin()[i] != r->content().byte;
  EXPECT_EQ(twin_bad, 0u)
      << "bytes of the merged twin changed: the device wrote into the shared KSM page";
  EXPECT_CUDA_OK(reg.Free());
  pins.ExpectReturned("the registration of KSM-merged pages ended");
}

// The same pages registered read-only: the pin must unshare them too (KSM pages are never
// exclusive), so the host's later write is the device's next read.
TEST_F(ReadOnlyPinTest, ReadOnlyPinOfKsmMergedPagesSeesTheHostsLaterWrites) {
  PAGELOCK_RULE("V04,V01");
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  auto r = PageStateRegion::Make(PageState::kKsmMerged, size_t{1} << 20, seed);
  if (!r->data()) PAGELOCK_NOT_SUPPORTED(r->unavailable());
  ObserveState(*r);
  PinWatch pins;
  ASSERT_CUDA_OK(cudaHostRegister(r->data(), r->size(), cudaHostRegisterMapped | cudaHostRegisterReadOnly));
  auto reg = HostRegistration::Adopt(r->data(), r->size());
  ExpectCoherent(CheckBothWays(r->data(), r->size(), r->content(), seed, false), "KSM-merged pages, read-only");
  size_t twin_bad = 0;
  for (size_t i = 0; i < r->size(); ++i) twin_bad += r->twin()[i] != r->content().byte;
  EXPECT_EQ(twin_bad, 0u) << "the host's write reached the merged twin";
  EXPECT_CUDA_OK(reg.Free());
  pins.ExpectReturned("the read-only registration of KSM-merged pages ended");
}

// Registered first, then offered to KSM with an identical twin: ksmd must leave pinned pages
// alone (it cannot write-protect a page a device may write). After two full scans the device's
// writes reach the range and the twin keeps its bytes.
TEST_F(PageStatesTest, KsmLeavesARegisteredRangeItsOwnPages) {
  PAGELOCK_RULE("V04");
  const std::string run = pages::ReadSetting("/sys/kernel/mm/ksm/run");
  if (run != "1") {
    PAGELOCK_NOT_SUPPORTED("KSM is not running (/sys/kernel/mm/ksm/run=" + (run.empty() ? "<absent>" : run) +
                           "): " + pages::LabhostHint("--ksm"));
  }
  const size_t n = size_t{1} << 20;
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  const unsigned char byte = static_cast<unsigned char>(0x40 | (seed & 0x3f));
  SmallPages range(n, seed), twin(n, seed);
  ASSERT_NE(range.p, nullptr) << range.error;
  ASSERT_NE(twin.p, nullptr) << twin.error;
  ASSERT_EQ(madvise(range.p, n, MADV_NOHUGEPAGE), 0);
  ASSERT_EQ(madvise(twin.p, n, MADV_NOHUGEPAGE), 0);
  std::memset(range.p, byte, n);
  std::memset(twin.p, byte, n);
  PinWatch pins;
  ASSERT_CUDA_OK(cudaHostRegister(range.p, n, cudaHostRegisterMapped));
  auto reg = HostRegistration::Adopt(range.p, n);
  ASSERT_EQ(madvise(range.p, n, MADV_MERGEABLE), 0) << strerror(errno);
  ASSERT_EQ(madvise(twin.p, n, MADV_MERGEABLE), 0) << strerror(errno);
  const long scans0 = std::atol(pages::ReadSetting("/sys/kernel/mm/ksm/full_scans").c_str());
  const double limit = settings::PositiveNumber("PAGELOCK_KSM_WAIT_S");
  Budget("ksm_wait_s", limit, "s");
  const auto start = std::chrono::steady_clock::now();
  while (std::atol(pages::ReadSetting("/sys/kernel/mm/ksm/full_scans").c_str()) < scans0 + 2 &&
         Seconds(start) < limit * TimeScale()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const long scans = std::atol(pages::ReadSetting("/sys/kernel/mm/ksm/full_scans").c_str()) - scans0;
  Observe("ksm_full_scans", scans);
  Observe("ksm_merging_pages", pages::ReadSetting("/proc/self/ksm_merging_pages"));
  if (scans < 2) {
    EXPECT_CUDA_OK(reg.Free());
    PAGELOCK_NOT_SUPPORTED("ksmd made " + std::to_string(scans) + " full scans in " +
                           std::to_string(static_cast<int>(limit)) + " s (ksm/pages_to_scan=" +
                           pages::ReadSetting("/sys/kernel/mm/ksm/pages_to_scan") + ")");
  }
  const pages::PageContent now{pages::PageContent::kByte, byte, 0};
  ExpectCoherent(CheckBothWays(range.p, n, now, seed, true), "a registered range offered to KSM");
  size_t twin_bad = 0;
  for (size_t i = 0; i < n; ++i) twin_bad += twin.p[i] != byte;
  EXPECT_EQ(twin_bad, 0u) << "the device's or the host's writes reached the twin: the pinned pages were merged";
  EXPECT_CUDA_OK(reg.Free());
  pins.ExpectReturned("the registration offered to KSM ended");
}

// Pages that came from ZONE_MOVABLE are migrated out of it by the long-term pin, before it
// (memory-hotplug.rst), and register/unregister cycles over them return the pin balance.
TEST_F(PageStatesTest, MovableZonePagesLeaveTheZoneBeforeTheLongTermPin) {
  PAGELOCK_RULE("V05");
  uint64_t managed = 0;
  const std::vector<pages::PfnRange> zones = pages::MovableZones(&managed);
  Observe("cma_total_kib", static_cast<long long>(ReadMemInfoField("CmaTotal") / 1024));
  if (zones.empty()) {
    PAGELOCK_NOT_SUPPORTED("no populated ZONE_MOVABLE in /proc/zoneinfo: a host booted with movablecore= or "
                           "kernelcore= (a boot parameter; labhost cannot set it; `tools/labhost status` shows it)");
  }
  const size_t n = size_t{64} << 20;
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  const Mapping own = Mapping::Adopt(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), n);
  ASSERT_TRUE(own) << strerror(errno);
  unsigned char* p = own.data();
  HostFillPattern(p, n, seed);
  const std::vector<uint64_t> before = Pfns(p, n);
  if (before.empty()) PAGELOCK_NOT_SUPPORTED("/proc/self/pagemap shows no PFNs (it needs CAP_SYS_ADMIN)");
  size_t movable = 0;
  for (uint64_t f : before) movable += pages::InRanges(zones, f);
  Observe("pages_in_movable_before_pin", static_cast<unsigned long>(movable));
  if (movable == 0) {
    PAGELOCK_NOT_SUPPORTED("none of " + std::to_string(before.size()) +
                           " freshly faulted pages came from ZONE_MOVABLE (" + std::to_string(managed) +
                           " pages managed there)");
  }
  PinWatch pins;
  const int cycles = static_cast<int>(settings::PositiveNumber("PAGELOCK_MOVABLE_CYCLES"));
  Budget("register_cycles_count", cycles, "count");
  for (int c = 0; c < cycles && !HasFailure(); ++c) {
    ASSERT_CUDA_OK(cudaHostRegister(p, n, cudaHostRegisterMapped)) << "cycle " << c;
    auto reg = HostRegistration::Adopt(p, n);
    if (c == 0) {
      const std::vector<uint64_t> pinned = Pfns(p, n);
      size_t still = 0;
      for (uint64_t f : pinned) still += pages::InRanges(zones, f);
      Observe("pages_migrated_by_the_pin", static_cast<unsigned long>(Changed(before, pinned)));
      EXPECT_EQ(still, 0u) << "registered pages in ZONE_MOVABLE while pinned";
      ExpectCoherent(CheckBothWays(p, n, Pattern(seed), seed, true), "pages migrated out of ZONE_MOVABLE");
    }
    EXPECT_CUDA_OK(reg.Free());
  }
  pins.ExpectReturned(std::to_string(cycles) + " register/unregister cycles over ZONE_MOVABLE pages");
}

#endif  // PAGELOCK_STRESS_TIER

}  // namespace
}  // namespace pagestates
}  // namespace pagelock
