// What pinning large ranges costs (peer gap K17): cudaHostRegister and cudaHostUnregister
// throughput of anonymous memory, in GiB/s, by size and page kind (4 KiB pages with
// MADV_NOHUGEPAGE; transparent huge pages with MADV_HUGEPAGE, which a field report found halves
// the registration time), recorded per kernel and driver as metrics for the baseline
// (the documentation promises no rate). Every registration is used before it is released: a
// kernel reads the first, a random middle and the last page through the device pointer, so a
// fast registration that pinned nothing fails. The calls are host-synchronous, so they are timed
// with the host's steady clock (no CUDA event can bracket them); the pages are faulted in before
// the first timed call, so the figures are the pinning's, not the page faults'. The median of
// the repetitions is the figure.
// Full tier: 64 MiB. Stress tier: 1, 4 and 10 GiB (PAGELOCK_REGISTRATION_COST_MAX_GIB, default
// 10, caps the largest; a size the host cannot hold above the memory floor is skipped with the
// figures recorded). Rule ids refer to suites/rules.tsv.
#include <sys/mman.h>
#include <sys/utsname.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "fixtures/containment.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_kinds.h"
#include "fixtures/kernel_accounting.h"
#include "fixtures/mapping.h"
#include "fixtures/resources.h"
#include "fixtures/settings.h"
#include "kernels/access_kernels.h"
#include "suites/bandwidth/lanes.h"

namespace pagelock {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;
#ifdef PAGELOCK_STRESS_TIER
const std::vector<size_t> kSizes = {kGiB, 4 * kGiB, 10 * kGiB};
#else
const std::vector<size_t> kSizes = {64 * kMiB};
#endif
constexpr int kReps = 3;

// The page kinds registered: an anonymous mmap advised MADV_NOHUGEPAGE (kRegisteredMmap, "4KiB"
// in the case ids and figures) or MADV_HUGEPAGE (kRegisteredTransparentHuge, "THP").
std::string PagesName(HostKind p) { return p == HostKind::kRegisteredMmap ? "4KiB" : "THP"; }

std::string SizeName(size_t n) {
  return n >= kGiB ? std::to_string(n / kGiB) + "GiB" : std::to_string(n / kMiB) + "MiB";
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line.empty() ? "unavailable: " + path : line;
}

// Readies the kit's 2 MiB aligned mapping for the page kind: advised, every page faulted in.
// "" or why it could not be.
std::string Prepare(const Mapping& m, size_t size, HostKind pages) {
  if (!m) return std::string("mmap of ") + SizeName(size) + ": " + m.error();
  if (m.Advise(pages == HostKind::kRegisteredMmap ? MADV_NOHUGEPAGE : MADV_HUGEPAGE) != 0) {
    return std::string("madvise(") + (pages == HostKind::kRegisteredMmap ? "MADV_NOHUGEPAGE" : "MADV_HUGEPAGE") +
           "): " + std::strerror(errno);
  }
  std::memset(m.data(), 0, size);  // fault every page in before anything is timed
  return "";
}

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

class RegistrationCostTest : public GpuTest, public ::testing::WithParamInterface<HostKind> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  }

  // Three pages of the registration (first, a random middle, last) hold a pattern the host
  // wrote; a kernel reads them through the device pointer. Returns the mismatches.
  size_t DeviceReadsProbePages(unsigned char* p, size_t size, uint32_t seed) {
    const size_t page = 4096;
    const size_t middle = (CaseRng()() % (size / page)) * page;
    size_t bad = 0;
    PinnedBuffer counter = PinnedBuffer::Mapped(sizeof(unsigned long long));
    EXPECT_CUDA_OK(counter.status());
    if (!counter) return page;
    void* alias = nullptr;
    EXPECT_CUDA_OK(cudaHostGetDevicePointer(&alias, p, 0));
    if (!alias) return page;
    for (const size_t off : {size_t{0}, middle, size - page}) {
      HostFillPattern(p + off, page, seed ^ static_cast<uint32_t>(off / page));
      auto* c = counter.as<unsigned long long>();
      *c = 0;
      EXPECT_CUDA_OK(LaunchCountPatternMismatches(static_cast<unsigned char*>(alias) + off, page,
                                                  seed ^ static_cast<uint32_t>(off / page), c, 0));
      EXPECT_CUDA_OK(cudaStreamSynchronize(0));
      bad += static_cast<size_t>(*c);
    }
    return bad;
  }
};

// A registration that does not pin (the device reads other bytes through its pointer) fails; a
// register or unregister call that stalls shows in the figures (and, stuck, as the case's
// TIMEOUT), as in the field report of a 10 GB unregister stuck in the kernel.
TEST_P(RegistrationCostTest, RegisterAndUnregisterThroughputIsRecordedBySize) {
  PAGELOCK_RULE("C23,R26");
  const HostKind pages = GetParam();
  double max_gib = settings::DefaultNumber("PAGELOCK_REGISTRATION_COST_MAX_GIB");
  if (const char* v = settings::Text("PAGELOCK_REGISTRATION_COST_MAX_GIB"); v && *v) {
    char* end = nullptr;
    max_gib = std::strtod(v, &end);
    ASSERT_TRUE(*end == '\0' && max_gib > 0) << "PAGELOCK_REGISTRATION_COST_MAX_GIB='" << v
                                             << "' is not a positive number of GiB";
  }
  Budget("registration_cost_max_GiB", max_gib, "GiB");
  Budget("registration_cost_repetitions", kReps, "count");
  struct utsname u {};
  uname(&u);
  Observe("kernel_release", std::string(u.release));
  Observe("nvidia_driver", Probe().nvidia_driver.empty() ? "unknown" : Probe().nvidia_driver);
  Observe("transparent_hugepage_enabled", FirstLine("/sys/kernel/mm/transparent_hugepage/enabled"));
  const std::string kind = PagesName(pages);
  int measured = 0;
  for (const size_t size : kSizes) {
    const std::string name = kind + "_" + SizeName(size);
    if (size > max_gib * kGiB) {
      Observe(name + "_skipped", "above PAGELOCK_REGISTRATION_COST_MAX_GIB");
      continue;
    }
    const MemInfo mem = ReadMemInfo();
    if (mem.available && mem.mem_available - static_cast<int64_t>(size) < DefaultFloorBytes()) {
      Observe(name + "_skipped", "MemAvailable " + std::to_string(mem.mem_available >> 20) + " MiB - " +
                                     SizeName(size) + " < the memory floor " +
                                     std::to_string(DefaultFloorBytes() >> 20) + " MiB");
      continue;
    }
    const Mapping m(size, Mapping::kHugeAligned, MAP_NORESERVE);
    const std::string error = Prepare(m, size, pages);
    if (!error.empty() && pages == HostKind::kRegisteredTransparentHuge) PAGELOCK_NOT_SUPPORTED(error);  // no THP here
    ASSERT_TRUE(error.empty()) << error;
    std::vector<double> reg_s, unreg_s;
    for (int r = 0; r < kReps && !HasFatalFailure(); ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const cudaError_t e = cudaHostRegister(m.data(), size, cudaHostRegisterDefault);
      const auto t1 = std::chrono::steady_clock::now();
      ASSERT_CUDA_OK(e) << name;
      HostRegistration own = HostRegistration::Adopt(m.data(), size);
      if (r == 0) {
        EXPECT_EQ(DeviceReadsProbePages(m.data(), size, static_cast<uint32_t>(CaseSeed()) ^ static_cast<uint32_t>(size >> 20)),
                  0u)
            << name << ": the device read other bytes than the host wrote through the registration's pointer";
      }
      const auto t2 = std::chrono::steady_clock::now();
      const cudaError_t u2 = own.Free();
      const auto t3 = std::chrono::steady_clock::now();
      EXPECT_CUDA_OK(u2) << name;
      reg_s.push_back(Seconds(t0, t1));
      unreg_s.push_back(Seconds(t2, t3));
    }
    const double gib = static_cast<double>(size) / kGiB;
    const double reg = bandwidth::Median(reg_s), unreg = bandwidth::Median(unreg_s);
    if (reg > 0) Metric("register_" + name + "_GiBps", gib / reg, "GiB/s");
    if (unreg > 0) Metric("unregister_" + name + "_GiBps", gib / unreg, "GiB/s");
    Metric("register_" + name + "_ms", reg * 1e3, "ms");
    Metric("unregister_" + name + "_ms", unreg * 1e3, "ms");
    Observe("register_" + name + "_samples_s", bandwidth::Samples(reg_s));
    Observe("unregister_" + name + "_samples_s", bandwidth::Samples(unreg_s));
    ++measured;
  }
  if (measured == 0) PAGELOCK_NOT_SUPPORTED("no size fits under the memory floor or the cap (see observed.*_skipped)");
}

INSTANTIATE_TEST_SUITE_P(PageKinds, RegistrationCostTest, ::testing::Values(HostKind::kRegisteredMmap, HostKind::kRegisteredTransparentHuge),
                         [](const auto& info) { return PagesName(info.param); });

}  // namespace
}  // namespace pagelock
