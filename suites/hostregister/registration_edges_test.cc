// cudaHostRegister at the edges of a process's mappings: a range running past its mapping, a
// writable MAP_PRIVATE file mapping, copy-on-write pages after fork(), and a mapping made
// writable with mprotect just before it is registered. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/kernel_accounting.h"
#include "fixtures/mapping.h"
#include "fixtures/outcome.h"
#include "fixtures/resources.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

// 1 MiB and more moves the kernel's pin counters on r580 (64 KiB does not): 1024 pages.
constexpr size_t kPages = 1024;

// True when [p, p + n) holds no mapping: msync of unmapped memory fails with ENOMEM.
bool IsHole(void* p, size_t n) { return msync(p, n, MS_ASYNC) != 0 && errno == ENOMEM; }

// The device writes PatternByte(i, seed) through the registration's device pointer; the number
// of host bytes that then differ, or ~0 with the error in *e.
size_t DeviceFillThenHostCount(void* host, size_t n, uint32_t seed, cudaError_t* e) {
  void* dev = nullptr;
  *e = cudaHostGetDevicePointer(&dev, host, 0);
  if (*e == cudaSuccess) *e = LaunchFillPattern(dev, n, seed);
  if (*e == cudaSuccess) *e = cudaDeviceSynchronize();
  return *e == cudaSuccess ? HostCountPatternMismatches(host, n, seed) : ~size_t{0};
}

class RegistrationEdgesTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  }
};

// Faults caught: a driver that accepts the range (pinning only its mapped part) fails the code
// check; one that pins the valid pages, then fails without unpinning them, fails the pin balance
// or the later registration of the valid part (cudaErrorHostMemoryAlreadyRegistered: a stale
// tracking entry); shim faults register_drops_last_page / register_lost fail the round trip.
TEST_F(RegistrationEdgesTest, ARangeRunningPastItsMappingFailsAndLeavesNothingPinned) {
  PAGELOCK_RULE("R99,R100");
  const size_t page = PageSize(), n = kPages * page;
  Mapping m = Mapping::Adopt(mmap(nullptr, n + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), n + page);
  ASSERT_NE(m.data(), nullptr) << "mmap: " << strerror(errno);
  ASSERT_EQ(munmap(m.data() + n, page), 0) << strerror(errno);
  m.Truncate(n);
  if (!IsHole(m.data() + n, page)) PAGELOCK_NOT_SUPPORTED("another thread mapped the page after the range");
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  HostFillPattern(m.data(), n, seed);  // every valid page is present before the call
  // The runtime pins buffers of its own around a process's first registration (on r580 under
  // CUDA 11.8: 2,048 pages that 13.0 pins at context creation): one page registered and
  // unregistered first, so the balance below counts only what the call under test pinned.
  ASSERT_CUDA_OK(cudaHostRegister(m.data(), page, cudaHostRegisterMapped));
  ASSERT_CUDA_OK(cudaHostUnregister(m.data()));
  const bool quiet = PinBalanceIsQuiet(0.1);
  const PinCounters before = ReadPinCounters();
  const cudaError_t e = cudaHostRegister(m.data(), n + page, cudaHostRegisterMapped);
  if (e == cudaSuccess) {
    ADD_FAILURE() << "a range whose last page is unmapped registered";
    EXPECT_CUDA_OK(cudaHostUnregister(m.data()));
  }
  // "cudaHostRegister ... Page-locks the memory range specified by ptr and size": a range that is
  // not all mapped memory is an invalid argument, or pinning it fails (MemoryAllocation).
  EXPECT_DOCUMENTED_ONE_OF("past_end_register", e,
                           (std::vector<cudaError_t>{cudaErrorInvalidValue, cudaErrorMemoryAllocation,
                                                     cudaErrorNotPermitted}),
                           "cudaHostRegister's error list");
  ExpectPinBalanceReturned(before, quiet, "a registration past the end of its mapping failed", 5,
                           "past_end_");
  EXPECT_EQ(HostCountPatternMismatches(m.data(), n, seed), 0u) << "the failed call changed the bytes";
  // The valid part registers (nothing of the failed call is still tracked) and works.
  ASSERT_CUDA_OK(cudaHostRegister(m.data(), n, cudaHostRegisterMapped));
  auto reg = HostRegistration::Adopt(m.data(), n);
  cudaError_t we = cudaSuccess;
  EXPECT_EQ(DeviceFillThenHostCount(m.data(), n, seed ^ 0x5a5a5a5au, &we), 0u);
  EXPECT_CUDA_OK(we);
  EXPECT_CUDA_OK(reg.Free());
}

// A file of n bytes holding PatternByte(i, seed) in TEST_TMPDIR (unlinked at once); -1 on error.
int PatternFile(size_t n, uint32_t seed, std::string* why) {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/pagelock_private_XXXXXX";
  int fd = mkstemp(&path[0]);
  if (fd < 0) {
    *why = "mkstemp: " + std::string(strerror(errno));
    return -1;
  }
  unlink(path.c_str());
  std::vector<unsigned char> bytes(n);
  HostFillPattern(bytes.data(), n, seed);
  if (pwrite(fd, bytes.data(), n, 0) != static_cast<ssize_t>(n)) {
    *why = "pwrite: " + std::string(strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

// Faults caught: a driver that pins the file's page-cache pages instead of breaking copy-on-write
// (no FOLL_WRITE) sends the device's writes into the file (pread sees them) or leaves the
// process's view unchanged (host count); shim faults register_lost and launch_dropped fail the
// host count.
TEST_F(RegistrationEdgesTest, DeviceWritesToAPrivateFileMappingStayOutOfTheFile) {
  PAGELOCK_RULE("R101");
  const size_t n = kPages * PageSize();
  const uint32_t seed = static_cast<uint32_t>(CaseSeed()), dev_seed = seed ^ 0xa5a5a5a5u;
  std::string why;
  const int fd = PatternFile(n, seed, &why);
  if (fd < 0) PAGELOCK_NOT_SUPPORTED(why);
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } own_fd{fd};
  Mapping m = Mapping::Adopt(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0), n);
  ASSERT_NE(m.data(), nullptr) << "mmap: " << strerror(errno);
  EXPECT_EQ(HostCountPatternMismatches(m.data(), n, seed), 0u) << "the mapping shows the file";
  const cudaError_t e = cudaHostRegister(m.data(), n, cudaHostRegisterMapped);
  // A private mapping's pinned pages are anonymous copies: no file dirty tracking is involved
  // (P02 is about shared file mappings), so success is expected; a failure from the documented
  // list is recorded and ends the case.
  EXPECT_DOCUMENTED_ONE_OF("private_file_register", e,
                           (std::vector<cudaError_t>{cudaSuccess, cudaErrorInvalidValue,
                                                     cudaErrorNotPermitted}),
                           "cudaHostRegister's error list");
  if (e == cudaSuccess) {
    auto reg = HostRegistration::Adopt(m.data(), n);
    cudaError_t we = cudaSuccess;
    EXPECT_EQ(DeviceFillThenHostCount(m.data(), n, dev_seed, &we), 0u)
        << "the process's private copy does not hold the device's bytes";
    EXPECT_CUDA_OK(we);
    EXPECT_CUDA_OK(reg.Free());
    EXPECT_EQ(HostCountPatternMismatches(m.data(), n, dev_seed), 0u) << "unregistering lost the bytes";
  }
  std::vector<unsigned char> file(n);
  ASSERT_EQ(pread(fd, file.data(), n, 0), static_cast<ssize_t>(n)) << strerror(errno);
  EXPECT_EQ(HostCountPatternMismatches(file.data(), n, seed), 0u)
      << "a device write through a MAP_PRIVATE mapping reached the file";
}

// The child of fork(): waits for the parent's go, then reports with one byte whether it still
// holds the pre-fork bytes ('A'), the device's ('D'), or something else ('?').
[[noreturn]] void CowChild(const unsigned char* p, size_t n, uint32_t before, uint32_t after,
                           int go_fd, int result_fd) {
  struct pollfd pfd = {go_fd, POLLIN, 0};
  char go = 0;
  if (poll(&pfd, 1, 30000) != 1 || read(go_fd, &go, 1) != 1) _exit(3);
  char c = HostCountPatternMismatches(p, n, before) == 0  ? 'A'
           : HostCountPatternMismatches(p, n, after) == 0 ? 'D'
                                                          : '?';
  _exit(write(result_fd, &c, 1) == 1 ? 0 : 4);
}

// Waits at most `s` seconds for the child; kills it after that. "exit N" / "signal X" / "killed".
std::string ReapChild(pid_t pid, double s) {
  int status = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
  pid_t w = 0;
  while ((w = waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (w == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return "killed";
  }
  return WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                           : "signal " + SignalName(WTERMSIG(status));
}

// In a fresh process (a fork of a process with a CUDA context): touch, fork, then register in
// the parent and write from the device. The seed comes from the parent case.
PAGELOCK_SCENARIO(RegisterAfterFork) {
  report.Error("init", cudaFree(nullptr));
  const size_t n = kPages * PageSize();
  const uint32_t before = static_cast<uint32_t>(std::strtoul(ScenarioArg().c_str(), nullptr, 10));
  const uint32_t after = before ^ 0x3c3c3c3cu;
  Mapping m = Mapping::Adopt(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), n);
  if (!m.data()) return report.Set("mmap", strerror(errno));
  HostFillPattern(m.data(), n, before);
  int go[2], result[2];
  if (pipe(go) != 0 || pipe(result) != 0) return report.Set("fork", "pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return report.Set("fork", "fork failed");
  if (pid == 0) CowChild(m.data(), n, before, after, go[0], result[1]);
  close(go[0]);
  close(result[1]);
  report.Set("fork", "ok");
  const cudaError_t e = cudaHostRegister(m.data(), n, cudaHostRegisterMapped);
  report.Error("register", e);
  if (e == cudaSuccess) {
    cudaError_t we = cudaSuccess;
    report.Set("parent_bad", static_cast<long long>(DeviceFillThenHostCount(m.data(), n, after, &we)));
    report.Error("device_write", we);
    report.Error("unregister", cudaHostUnregister(m.data()));
  }
  char g = 'g', seen = '-';
  (void)!write(go[1], &g, 1);
  struct pollfd pfd = {result[0], POLLIN, 0};
  if (poll(&pfd, 1, static_cast<int>(20000 * TimeScale())) == 1 && read(result[0], &seen, 1) != 1) {
    seen = '-';
  }
  report.Set("child_sees", std::string(1, seen));
  report.Set("child_exit", ReapChild(pid, 2 * TimeScale()));
  close(go[1]);
  close(result[0]);
}

// Faults caught: a driver that pins the pages shared with the child without write-faulting them
// (no FOLL_WRITE, so no copy-on-write break) writes the device's bytes into the page the child
// still shares ('D'); shim faults register_lost, devptr_off_by_one and launch_dropped fail
// parent_bad.
TEST(RegisterAfterForkTest, TheParentSeesTheDeviceWritesAndTheChildKeepsThePreForkBytes) {
  PAGELOCK_RULE("R102");
  PAGELOCK_REQUIRE(RequireUsableDevice());
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  ChildResult r = RunScenario("RegisterAfterFork", 60,
                              {ScenarioArgEnv(std::to_string(static_cast<uint32_t>(CaseSeed())))});
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("init"), "cudaSuccess");
  ASSERT_EQ(r.Get("fork"), "ok");
  Observe("child_exit", r.Get("child_exit"));
  ASSERT_EQ(r.Get("register"), "cudaSuccess") << "registering copy-on-write pages after fork()";
  EXPECT_EQ(r.Get("device_write"), "cudaSuccess");
  EXPECT_EQ(r.Get("parent_bad"), "0") << "bytes of the parent that do not hold the device's write";
  EXPECT_EQ(r.Get("unregister"), "cudaSuccess");
  EXPECT_EQ(r.Get("child_sees"), "A")
      << "the forked child must keep its pre-fork bytes (A); D = the device's bytes, "
         "? = mixed, - = no answer";
}

// Faults caught: a driver that caches the protection it saw first (or pins read-only) fails the
// registration or the device write (a launch error); shim fault register_ignores_read_only does
// not apply (no ReadOnly flag here), register_lost and launch_dropped fail the host count.
TEST_F(RegistrationEdgesTest, AMappingMadeWritableBeforeRegistrationTakesDeviceWrites) {
  PAGELOCK_RULE("R103");
  const size_t n = kPages * PageSize();
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  Mapping m = Mapping::Adopt(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), n);
  ASSERT_NE(m.data(), nullptr) << "mmap: " << strerror(errno);
  HostFillPattern(m.data(), n, seed);
  ASSERT_EQ(mprotect(m.data(), n, PROT_READ), 0) << strerror(errno);
  EXPECT_EQ(HostCountPatternMismatches(m.data(), n, seed), 0u);
  ASSERT_EQ(mprotect(m.data(), n, PROT_READ | PROT_WRITE), 0) << strerror(errno);
  ASSERT_CUDA_OK(cudaHostRegister(m.data(), n, cudaHostRegisterMapped));
  auto reg = HostRegistration::Adopt(m.data(), n);
  cudaError_t we = cudaSuccess;
  EXPECT_EQ(DeviceFillThenHostCount(m.data(), n, seed ^ 0xffff0000u, &we), 0u)
      << "the host does not see the device's bytes";
  EXPECT_CUDA_OK(we);
  EXPECT_CUDA_OK(reg.Free());
}

}  // namespace
}  // namespace pagelock
