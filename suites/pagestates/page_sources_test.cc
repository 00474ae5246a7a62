// Pages from sources other than anonymous memory:
//   V08  a VM_PFNMAP mapping of ordinary RAM (a /dev/dma_heap/system buffer, which the heap maps
//        with remap_pfn_range) registered WITHOUT cudaHostRegisterIoMemory: it works with every
//        byte exact, or it is refused with a code from cudaHostRegister's list, not sticky. The
//        field saw this break between two driver builds (open-gpu-kernel-modules#732: success
//        up to 550.40.07, "invalid argument" from 550.54.14): the code that comes is recorded.
//   V09  cudaHostRegisterReadOnly of a PROT_READ file mapping, MAP_SHARED and MAP_PRIVATE, on a
//        memfd and on a disk file (zero-copy weight loading): the kernel always allows a R/O
//        long-term pin of file pages ("R/O pinning or pinning in a private mapping is always
//        expected to work", gup_longterm selftest), and CUDA requires the flag for memory
//        "mapped to the CPU as read-only"; so it registers and the device reads the file's
//        bytes; through a MAP_SHARED mapping it also reads a later write(2) to the file.
//   V10  hugetlb pages: a hugetlbfs file (MFD_HUGETLB memfd) mapped MAP_SHARED by two processes,
//        each registering it (each device write reaches the other's mapping), and anonymous
//        1 GiB pages where the host has a 1 GiB pool.
// Rule ids refer to suites/rules.tsv.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/mapping.h"
#include "fixtures/page_sources.h"
#include "fixtures/resources.h"
#include "kernels/pattern.h"
#include "suites/pagestates/pagestates.h"

namespace pagelock {
namespace pagestates {
namespace {

using pages::DmaHeapBuffer;
using pages::FileMapping;
using pages::HugeTlbPages;

// A driver that rejects PFNMAP RAM with an unlisted code, accepts it and maps the wrong frames
// (follow_pfn on the first page only), or leaves a sticky error after refusing it fails this.
TEST_F(PageStatesTest, APfnmapMappingOfRamRegistersWithExactBytesOrIsRefusedWithADocumentedCode) {
  PAGELOCK_RULE("V08");
  const size_t n = size_t{1} << 20;
  auto buf = DmaHeapBuffer::Make(n);
  if (!buf->data()) PAGELOCK_NOT_SUPPORTED(buf->unavailable());
  const std::string flags = buf->VmFlags();
  Observe("vm_flags", flags);
  if (flags.find(" pf") == std::string::npos) {
    PAGELOCK_NOT_SUPPORTED("the dma-heap mapping is not VM_PFNMAP (smaps VmFlags:" + flags + ")");
  }
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  EXPECT_EQ(buf->BeginCpuAccess(), "");
  HostFillPattern(buf->data(), n, seed);
  EXPECT_EQ(buf->EndCpuAccess(), "");
  PinWatch pins;
  const cudaError_t e = cudaHostRegister(buf->data(), n, cudaHostRegisterMapped);
  EXPECT_DOCUMENTED_ONE_OF("pfnmap_register", e,
                           (std::vector<cudaError_t>{cudaSuccess, cudaErrorInvalidValue, cudaErrorNotSupported,
                                                     cudaErrorNotPermitted, cudaErrorMemoryAllocation}),
                           kRegisterDoc);
  if (e == cudaSuccess) {
    auto reg = HostRegistration::Adopt(buf->data(), n);
    ExpectCoherent(CheckBothWays(buf->data(), n, Pattern(seed), seed, true), "a dma-heap (PFNMAP) buffer");
    EXPECT_CUDA_OK(reg.Free());
    EXPECT_EQ(HostCountPatternMismatches(buf->data(), n, FinalSeed(seed)), 0u);
  } else {
    // A refusal is an answer, not a poisoned context (R87): the next call works and the buffer
    // is untouched.
    EXPECT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(HostCountPatternMismatches(buf->data(), n, seed), 0u) << "a refused registration changed the buffer";
  }
  pins.ExpectReturned("the dma-heap registration ended");
}

struct FileCase {
  FileMapping::Backing backing;
  bool shared;
};

std::string FileCaseName(const FileCase& c) {
  return std::string(c.backing == FileMapping::Backing::kMemfd ? "memfd" : "disk_file") +
         (c.shared ? "_map_shared" : "_map_private");
}

class ReadOnlyFileTest : public ReadOnlyPinTest, public ::testing::WithParamInterface<FileCase> {};

// A driver that requests a writable pin for a ReadOnly registration (refused by the kernel for
// file pages since 6.5), pins a private copy instead of the page-cache page, or reads the file
// once at registration fails this.
TEST_P(ReadOnlyFileTest, AReadOnlyFileMappingRegisteredReadOnlyIsReadByTheDevice) {
  PAGELOCK_RULE("V09,R42");
  const size_t n = size_t{1} << 20;
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  auto m = FileMapping::Make(GetParam().backing, GetParam().shared, n, seed);
  if (!m->data()) PAGELOCK_NOT_SUPPORTED(m->unavailable());
  Observe("filesystem", m->filesystem());
  auto* p = const_cast<unsigned char*>(m->data());
  PinWatch pins;
  ASSERT_CUDA_OK(cudaHostRegister(p, n, cudaHostRegisterMapped | cudaHostRegisterReadOnly))
      << "a ReadOnly registration of a PROT_READ " << FileCaseName(GetParam()) << " mapping on " << m->filesystem();
  auto reg = HostRegistration::Adopt(p, n);
  cudaError_t e = cudaSuccess;
  void* dev = DeviceAlias(p, &e);
  ASSERT_CUDA_OK(e);
  unsigned long long bad = 0;
  ASSERT_CUDA_OK(DeviceCount(dev, n, Pattern(seed), &bad));
  EXPECT_EQ(bad, 0u) << "bytes the device read that differ from the file's";
  // The file changes under the mapping (write(2)).
  std::vector<unsigned char> next(n);
  HostFillPattern(next.data(), n, seed ^ 0x600d600du);
  ASSERT_EQ(pwrite(m->fd(), next.data(), n, 0), static_cast<ssize_t>(n)) << strerror(errno);
  const size_t host_bad = HostCountPatternMismatches(p, n, seed ^ 0x600d600du);
  ASSERT_CUDA_OK(DeviceCount(dev, n, Pattern(seed ^ 0x600d600du), &bad));
  Observe("host_sees_the_later_file_write", host_bad == 0);
  Observe("device_sees_the_later_file_write", bad == 0);
  if (GetParam().shared) {
    // A MAP_SHARED mapping is the file (mmap(2)); the device reads what the mapping shows.
    EXPECT_EQ(host_bad, 0u) << "a MAP_SHARED mapping does not show the file's new bytes";
    EXPECT_EQ(bad, 0u) << "bytes of the file's later write that the device does not see through the registration";
  }
  EXPECT_CUDA_OK(reg.Free());
  pins.ExpectReturned("the read-only registration of a file mapping ended");
}

INSTANTIATE_TEST_SUITE_P(EachFileMapping, ReadOnlyFileTest,
                         ::testing::Values(FileCase{FileMapping::Backing::kMemfd, true},
                                           FileCase{FileMapping::Backing::kDisk, false}
#ifdef PAGELOCK_STRESS_TIER
                                           , FileCase{FileMapping::Backing::kMemfd, false},
                                           FileCase{FileMapping::Backing::kDisk, true}
#endif
                                           ),
                         [](const ::testing::TestParamInfo<FileCase>& i) { return FileCaseName(i.param); });

#ifdef PAGELOCK_STRESS_TIER
constexpr size_t kHuge2M = size_t{2} << 20;

// The second process: maps the first one's hugetlb memfd (through /proc/<pid>/fd), registers
// it, reads the first process's bytes with its device, writes its own, unregisters.
PAGELOCK_SCENARIO(SharedHugetlbFile) {
  report.Error("init", cudaFree(nullptr));
  report.Error("warmup", WarmUpOnce());
  const std::string arg = ScenarioArg();  // "<pid>:<fd>:<bytes>:<seed>"
  unsigned long pid = 0, fd = 0, bytes = 0, seed = 0;
  if (std::sscanf(arg.c_str(), "%lu:%lu:%lu:%lu", &pid, &fd, &bytes, &seed) != 4) return report.Set("open", "bad arg");
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int f = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (f < 0) return report.Set("open", std::string(path) + ": " + std::strerror(errno));
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  close(f);
  if (m == MAP_FAILED) return report.Set("open", std::string("mmap: ") + std::strerror(errno));
  const Mapping own = Mapping::Adopt(m, bytes);  // unmapped last
  report.Set("open", "ok");
  auto* p = static_cast<unsigned char*>(m);
  const cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterMapped);
  report.Error("register", e);
  if (e == cudaSuccess) {
    // The first process's bytes, then this device's write (seed ^ 0x5a5a5a5a), then this host's.
    ReportCoherence(report, CheckBothWays(p, bytes, Pattern(static_cast<uint32_t>(seed)), static_cast<uint32_t>(seed), true));
    report.Error("unregister", cudaHostUnregister(p));
  }
}

// Two processes register the same hugetlbfs pages (KV-cache pools shared between processes do
// this). A driver that treats hugetlb file pages as private (a copy), or whose second
// registration disturbs the first, fails it.
TEST_F(PageStatesTest, AHugetlbFileSharedByTwoProcessesCarriesEachDevicesWrites) {
  PAGELOCK_RULE("V10");
  const size_t n = 2 * kHuge2M;
  auto h = HugeTlbPages::Make(HugeTlbPages::Kind::kMemfd, kHuge2M, n);
  if (!h->data()) PAGELOCK_NOT_SUPPORTED(h->unavailable());
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  HostFillPattern(h->data(), n, seed);
  PinWatch pins;
  ASSERT_CUDA_OK(cudaHostRegister(h->data(), n, cudaHostRegisterMapped));
  auto reg = HostRegistration::Adopt(h->data(), n);
  ChildResult r = RunScenario("SharedHugetlbFile", 60,
                              {ScenarioArgEnv(std::to_string(getpid()) + ":" + std::to_string(h->fd()) + ":" +
                                              std::to_string(n) + ":" + std::to_string(seed))});
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("init"), "cudaSuccess");
  ASSERT_EQ(r.Get("open"), "ok");
  ASSERT_EQ(r.Get("register"), "cudaSuccess") << "the second process's registration of the shared hugetlb file";
  ExpectChildCoherent(r, "the second process's registration", true);
  EXPECT_EQ(r.Get("unregister"), "cudaSuccess");
  // The second process left its host's last write (FinalSeed) in the shared pages: this process's
  // device reads it through its own registration, then writes back for this host.
  ExpectCoherent(CheckBothWays(h->data(), n, Pattern(FinalSeed(seed)), seed ^ 0x1234u, true),
                 "this process's registration after the other's");
  EXPECT_CUDA_OK(reg.Free());
  pins.ExpectReturned("both registrations of the shared hugetlb file ended");
}

// One anonymous 1 GiB page, registered, every byte both ways.
TEST_F(PageStatesTest, AOneGiBHugePageRegistersAndHoldsEveryByteBothWays) {
  PAGELOCK_RULE("V10");
  const size_t gib = size_t{1} << 30;
  auto h = HugeTlbPages::Make(HugeTlbPages::Kind::kAnonymous, gib, gib);
  if (!h->data()) PAGELOCK_NOT_SUPPORTED(h->unavailable());
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  HostFillPattern(h->data(), gib, seed);
  PinWatch pins;
  ASSERT_CUDA_OK(cudaHostRegister(h->data(), gib, cudaHostRegisterMapped));
  auto reg = HostRegistration::Adopt(h->data(), gib);
  ExpectCoherent(CheckBothWays(h->data(), gib, Pattern(seed), seed, true), "a 1 GiB huge page");
  EXPECT_CUDA_OK(reg.Free());
  pins.ExpectReturned("the registration of a 1 GiB page ended");
}
#endif

}  // namespace
}  // namespace pagestates
}  // namespace pagelock
