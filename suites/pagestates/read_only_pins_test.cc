// Read-only registrations (cudaHostRegisterReadOnly) follow the pages the process maps (V01).
// A R/O long-term pin of a page the process does not own exclusively -- the shared zero page,
// the huge zero page, a page shared copy-on-write with a forked child -- must first give the
// process a page of its own (the kernel's FAULT_FLAG_UNSHARE): otherwise the device keeps
// reading the old page while the host's next write lands in a new one, and the device reads
// stale bytes with no error. The kernel's cow.c selftest checks exactly this for its own pins
// ("Longterm R/O pin is reliable": RO_PIN_TEST, _SHARED, _PREVIOUSLY_SHARED, _RO_EXCLUSIVE,
// run_with_zeropage, run_with_huge_zeropage); these cases check it through the CUDA driver's
// pin and the device's reads. Faults that fail them: a driver pinning with get_user_pages
// without FOLL_LONGTERM (no unshare) or FOLL_FORCE-reading the zero page, a driver that caches
// the page list of an earlier registration of the same range, a driver that maps the pages it
// pinned and then re-walks the page table later. The full tier runs the zero pages and the
// shared copy-on-write page; the stress build adds the rest. Rule ids refer to suites/rules.tsv.
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/mapping.h"
#include "fixtures/page_state.h"
#include "fixtures/resources.h"
#include "fixtures/time_scale.h"
#include "kernels/pattern.h"
#include "suites/pagestates/pagestates.h"

namespace pagelock {
namespace pagestates {
namespace {

using pages::PageState;
using pages::PageStateRegion;

constexpr unsigned kReadOnly = cudaHostRegisterMapped | cudaHostRegisterReadOnly;

// Registers `r` read-only, checks the device reads its bytes and then the host's later write,
// unregisters, and checks the pins came back. "cudaHostRegister: Page-locks the memory range
// specified by ptr and size and maps it for the device(s)"; "cudaHostRegisterReadOnly: The
// passed memory pointer is treated as pointing to memory that is considered read-only by the
// device" -- read-only for the device, still the memory the process maps.
void ExpectReadOnlyPinFollowsHostWrites(PageStateRegion& r, uint32_t seed) {
  ObserveState(r);
  PinWatch pins;
  ASSERT_CUDA_OK(cudaHostRegister(r.data(), r.size(), kReadOnly))
      << "a ReadOnly registration of private anonymous memory (" << pages::PageStateName(r.state()) << ")";
  auto reg = HostRegistration::Adopt(r.data(), r.size());
  std::vector<pages::PageMapEntry> pm;
  std::vector<uint64_t> kf;
  std::string why;
  if (pages::ReadPageMap(r.data(), r.size(), &pm, &why) && pages::ReadKPageFlags(pm, &kf, &why)) {
    // What the kernel did to the pages at the pin (it unshares them on Linux >= 6.2): recorded.
    Observe("zero_pages_while_pinned", static_cast<unsigned long>(pages::CountFlag(kf, pages::kKpfZeroPage)));
  }
  ExpectCoherent(CheckBothWays(r.data(), r.size(), r.content(), seed, false), pages::PageStateName(r.state()));
  EXPECT_CUDA_OK(reg.Free());
  EXPECT_EQ(HostCountPatternMismatches(r.data(), r.size(), FinalSeed(seed)), 0u)
      << "the host's bytes changed when the registration ended";
  pins.ExpectReturned("a read-only registration of " + pages::PageStateName(r.state()) + " ended");
}

// The shared zero page: a driver whose R/O pin takes the zero page itself (no unshare) reads
// zeros after the host's write.
TEST_F(ReadOnlyPinTest, ReadOnlyPinOfTheZeroPageSeesTheHostsLaterWrites) {
  PAGELOCK_RULE("V01,R42");
  auto r = PageStateRegion::Make(PageState::kZeroPage, size_t{1} << 20, 0);
  if (!r->data()) PAGELOCK_NOT_SUPPORTED(r->unavailable());
  ExpectReadOnlyPinFollowsHostWrites(*r, static_cast<uint32_t>(CaseSeed()));
}

// The huge zero page (one PMD mapping of a 2 MiB zero folio): the same at huge-page granularity.
TEST_F(ReadOnlyPinTest, ReadOnlyPinOfTheHugeZeroPageSeesTheHostsLaterWrites) {
  PAGELOCK_RULE("V01,R42");
  auto r = PageStateRegion::Make(PageState::kHugeZeroPage, size_t{2} << 20, 0);
  if (!r->data()) PAGELOCK_NOT_SUPPORTED(r->unavailable());
  ExpectReadOnlyPinFollowsHostWrites(*r, static_cast<uint32_t>(CaseSeed()));
}

#ifdef PAGELOCK_STRESS_TIER

// A page the process owns but maps read-only (PROT_READ) at the pin, made writable and written
// afterwards (gup_longterm's R/O case maps the page R/O "to cover more cases regarding unsharing
// decisions"). R43: a PROT_READ mapping needs the ReadOnly flag. A driver that pins a copy of a
// read-only page, or re-resolves the range at mprotect time, reads the old bytes.
TEST_F(ReadOnlyPinTest, ReadOnlyPinOfAPageMappedReadOnlySeesItsWritesOnceWritable) {
  PAGELOCK_RULE("V01,R43");
  const size_t n = size_t{1} << 20;
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  const Mapping own = Mapping::Adopt(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), n);
  ASSERT_TRUE(own) << strerror(errno);
  unsigned char* p = own.data();
  HostFillPattern(p, n, seed);
  ASSERT_EQ(mprotect(p, n, PROT_READ), 0) << strerror(errno);
  PinWatch pins;
  ASSERT_CUDA_OK(cudaHostRegister(p, n, kReadOnly));
  auto reg = HostRegistration::Adopt(p, n);
  cudaError_t e = cudaSuccess;
  void* dev = DeviceAlias(p, &e);
  ASSERT_CUDA_OK(e);
  unsigned long long bad = 0;
  ASSERT_CUDA_OK(DeviceCount(dev, n, Pattern(seed), &bad));
  EXPECT_EQ(bad, 0u) << "bytes the device read that differ from the read-only mapping's";
  ASSERT_EQ(mprotect(p, n, PROT_READ | PROT_WRITE), 0) << strerror(errno);
  HostFillPattern(p, n, seed ^ 0x77777777u);
  ASSERT_CUDA_OK(DeviceCount(dev, n, Pattern(seed ^ 0x77777777u), &bad));
  EXPECT_EQ(bad, 0u) << "bytes the host wrote after mprotect(PROT_READ|PROT_WRITE) that the device does not see";
  EXPECT_CUDA_OK(reg.Free());
  pins.ExpectReturned("a read-only registration of a page mapped read-only ended");
}

// R/O-mapped, exclusive pages in a writable mapping (soft-dirty cleared, so mprotect left them
// R/O: cow.c RO_PIN_TEST_RO_EXCLUSIVE). clear_refs touches the whole process's page tables, so
// the state is made in a child.
PAGELOCK_SCENARIO(ReadOnlyPinOfReadOnlyExclusivePages) {
  report.Error("init", cudaFree(nullptr));
  report.Error("warmup", WarmUpOnce());
  const uint32_t seed = static_cast<uint32_t>(std::strtoul(ScenarioArg().c_str(), nullptr, 10));
  ChildPinWatch pins;
  auto r = PageStateRegion::Make(PageState::kReadOnlyExclusive, size_t{1} << 20, seed);
  report.Set("state", r->data() ? "made" : r->unavailable());
  if (!r->data()) return;
  report.Set("evidence", r->evidence());
  const cudaError_t e = cudaHostRegister(r->data(), r->size(), kReadOnly);
  report.Error("register", e);
  if (e != cudaSuccess) return;
  ReportCoherence(report, CheckBothWays(r->data(), r->size(), r->content(), seed ^ 0x1111u, false));
  report.Error("unregister", cudaHostUnregister(r->data()));
  pins.Report(report);
}

TEST(ReadOnlyExclusivePinTest, ReadOnlyPinOfAReadOnlyMappedExclusivePageSeesTheHostsLaterWrites) {
  PAGELOCK_RULE("V01,R42");
  PAGELOCK_REQUIRE(RequireUsableDevice());
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterReadOnlySupported, 1));
  // The kernel's support first, here (one page of its own, no clear_refs), so a host without
  // soft-dirty tracking costs no child.
  const std::string no_soft_dirty = pages::SoftDirtyProblem();
  if (!no_soft_dirty.empty()) PAGELOCK_NOT_SUPPORTED(no_soft_dirty);
  ChildResult r = RunScenario("ReadOnlyPinOfReadOnlyExclusivePages", 60,
                              {ScenarioArgEnv(std::to_string(static_cast<uint32_t>(CaseSeed())))});
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("init"), "cudaSuccess");
  ASSERT_EQ(r.Get("warmup"), "cudaSuccess");
  if (r.Get("state") != "made") PAGELOCK_NOT_SUPPORTED(r.Get("state"));
  Observe("page_state_evidence", r.Get("evidence"));
  ASSERT_EQ(r.Get("register"), "cudaSuccess");
  ExpectChildCoherent(r, "read-only-mapped exclusive pages", false);
  EXPECT_EQ(r.Get("unregister"), "cudaSuccess");
  ExpectChildPinsReturned(r, "the registration of read-only-mapped exclusive pages ended");
}

#endif  // PAGELOCK_STRESS_TIER

// fork() with a registration pending: the child of this scenario forks a grandchild that shares
// the pages copy-on-write, registers them read-only, and writes them. `previously`: the
// grandchild exits before the registration (the pages are mapped R/O but no longer shared).
// The grandchild answers with one byte: 'A' it still holds the pre-fork bytes, 'B' the parent's
// new bytes, '?' neither.
[[noreturn]] void Grandchild(const unsigned char* p, size_t n, uint32_t before, uint32_t after, int go_fd,
                             int answer_fd) {
  struct pollfd pfd = {go_fd, POLLIN, 0};
  char go = 0;
  if (poll(&pfd, 1, 30000) != 1 || read(go_fd, &go, 1) != 1) _exit(3);
  const char c = HostCountPatternMismatches(p, n, before) == 0  ? 'A'
                 : HostCountPatternMismatches(p, n, after) == 0 ? 'B'
                                                                : '?';
  _exit(write(answer_fd, &c, 1) == 1 ? 0 : 4);
}

// Waits (bounded) for the grandchild's answer byte and its exit.
std::string AskGrandchild(pid_t pid, int go_fd, int answer_fd, std::string* exit_text) {
  char g = 'g', seen = '-';
  (void)!write(go_fd, &g, 1);
  struct pollfd pfd = {answer_fd, POLLIN, 0};
  if (poll(&pfd, 1, static_cast<int>(20000 * TimeScale())) != 1 || read(answer_fd, &seen, 1) != 1) seen = '-';
  int status = 0;
  pid_t w = 0;
  for (int i = 0; i < 200 && (w = waitpid(pid, &status, WNOHANG)) == 0; ++i) usleep(10000);
  if (w == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    *exit_text = "killed";
  } else {
    *exit_text = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : "signal";
  }
  return std::string(1, seen);
}

PAGELOCK_SCENARIO(ReadOnlyPinAfterFork) {
  report.Error("init", cudaFree(nullptr));
  report.Error("warmup", WarmUpOnce());
  const std::string arg = ScenarioArg();  // "shared:<seed>" or "previously:<seed>"
  const bool previously = arg.rfind("previously:", 0) == 0;
  const uint32_t before = static_cast<uint32_t>(std::strtoul(arg.substr(arg.find(':') + 1).c_str(), nullptr, 10));
  const uint32_t after = FinalSeed(before);
  const size_t n = size_t{1} << 20;
  ChildPinWatch pins;
  void* m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return report.Set("fork", "mmap failed");
  Mapping own = Mapping::Adopt(m, n);  // the grandchild leaves by _exit: never unmapped there
  auto* p = static_cast<unsigned char*>(m);
  madvise(p, n, MADV_NOHUGEPAGE);
  HostFillPattern(p, n, before);
  int go[2], answer[2];
  if (pipe(go) != 0 || pipe(answer) != 0) return report.Set("fork", "pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return report.Set("fork", "fork failed");
  if (pid == 0) Grandchild(p, n, before, after, go[0], answer[1]);
  close(go[0]);
  close(answer[1]);
  report.Set("fork", "ok");
  std::vector<pages::PageMapEntry> pm;
  std::string why;
  size_t exclusive = 0;
  if (pages::ReadPageMap(p, n, &pm, &why)) {
    for (const auto& e : pm) exclusive += e.exclusive;
  }
  // The premise: right after fork() no page is exclusive to this process (pagemap bit 56).
  report.Set("exclusive_after_fork", static_cast<long long>(exclusive));
  report.Set("pages", static_cast<long long>(pm.size()));
  std::string grandchild_exit;
  if (previously) report.Set("grandchild_sees", AskGrandchild(pid, go[1], answer[0], &grandchild_exit));
  const cudaError_t e = cudaHostRegister(p, n, kReadOnly);
  report.Error("register", e);
  if (e == cudaSuccess) {
    // The device reads the pre-fork bytes, then the parent writes (a COW fault, unless the pin
    // already gave it the page) and the device must read the parent's new bytes.
    ReportCoherence(report, CheckBothWays(p, n, Pattern(before), before, false));
    report.Error("unregister", cudaHostUnregister(p));
  }
  if (!previously) report.Set("grandchild_sees", AskGrandchild(pid, go[1], answer[0], &grandchild_exit));
  report.Set("grandchild_exit", grandchild_exit);
  close(go[1]);
  close(answer[0]);
  own = Mapping();  // unmapped before the pins are counted, as it was
  pins.Report(report);
}

void ExpectReadOnlyPinAfterFork(const std::string& how) {
  PAGELOCK_REQUIRE(RequireUsableDevice());
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterReadOnlySupported, 1));
  ChildResult r = RunScenario("ReadOnlyPinAfterFork", 60,
                              {ScenarioArgEnv(how + ":" + std::to_string(static_cast<uint32_t>(CaseSeed())))});
  Observe("grandchild_exit", r.Get("grandchild_exit"));
  Observe("exclusive_pages_after_fork", r.Get("exclusive_after_fork"));
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("init"), "cudaSuccess");
  ASSERT_EQ(r.Get("warmup"), "cudaSuccess");
  ASSERT_EQ(r.Get("fork"), "ok");
  if (r.Get("exclusive_after_fork") != "0") {
    PAGELOCK_NOT_SUPPORTED("after fork() " + r.Get("exclusive_after_fork") + " of " + r.Get("pages") +
                           " pages were still exclusive to the parent (pagemap bit 56): not shared");
  }
  ASSERT_EQ(r.Get("register"), "cudaSuccess") << "a ReadOnly registration of copy-on-write pages (" << how << ")";
  ExpectChildCoherent(r, how + " copy-on-write pages", false);
  EXPECT_EQ(r.Get("unregister"), "cudaSuccess");
  // The grandchild's copy is its own: the parent's write (through its pinned page) never reaches
  // it. 'A' the pre-fork bytes; 'B' the parent's; '?' mixed; '-' no answer.
  EXPECT_EQ(r.Get("grandchild_sees"), "A") << "what the forked child saw";
  ExpectChildPinsReturned(r, "a read-only registration of copy-on-write pages ended");
}

// RO_PIN_TEST_SHARED: the pages are still shared with the forked child at the pin. Without the
// unshare the device reads the child's page, and the parent's write goes elsewhere.
TEST(ReadOnlyPinAfterForkTest, ReadOnlyPinOfACowSharedPageSeesTheParentsLaterWrites) {
  PAGELOCK_RULE("V01,R42");
  ExpectReadOnlyPinAfterFork("shared");
}

#ifdef PAGELOCK_STRESS_TIER
// RO_PIN_TEST_PREVIOUSLY_SHARED: the child exited before the pin; the pages are the parent's
// alone but still mapped R/O from the fork.
TEST(ReadOnlyPinAfterForkTest, ReadOnlyPinOfAPreviouslySharedPageSeesTheParentsLaterWrites) {
  PAGELOCK_RULE("V01,R42");
  ExpectReadOnlyPinAfterFork("previously");
}
#endif  // PAGELOCK_STRESS_TIER

}  // namespace
}  // namespace pagestates
}  // namespace pagelock
