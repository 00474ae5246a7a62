// A fork()ed child (no exec) that calls CUDA after its parent initialised it (peer row G3). NVIDIA's
// CUDA C++ Guidelines for robust and safety-critical programming (rule 1.6, "A call to fork must be
// immediately followed to a call to exec"): "CUDA does not duplicate any of its internal data
// structures or threads to other processes upon a call to fork. Any use of CUDA after a call to
// fork and before a subsequent call to exec has undefined behavior." So what the child's calls
// return (or whether they return: it is killed after a bounded wait) is recorded, never asserted.
// What is asserted is the parent's side, which the documentation does not give up: after the
// child is gone, the parent's page-locked memory (allocated and registered) holds its bytes, the
// device reads them and writes through the aliases, new pinned memory can be made and released,
// and no error is left behind. Runs in a scenario child (a fresh process, the "parent" here).
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/mapping.h"
#include "fixtures/resources.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{1} << 20;
constexpr uint32_t kSeedAlloc = 0x6a11c0deu, kSeedRegistered = 0x6e615e11u;

// The child's calls, in order; each result is written to the pipe as soon as it is known, so a
// call that never returns is the one after the last line.
const char* const kChildCalls[] = {"get_device_count", "pointer_attributes", "host_get_device_pointer",
                                   "free_null",        "malloc",             "memcpy_round_trip",
                                   "host_alloc",       "free_host",          "device_synchronize"};

void Line(int fd, const char* key, const char* value) {
  char buf[160];
  const int n = std::snprintf(buf, sizeof buf, "%s=%s\n", key, value);
  if (n > 0) (void)!write(fd, buf, static_cast<size_t>(n));
}
void Line(int fd, const char* key, cudaError_t e) { Line(fd, key, cudaGetErrorName(e)); }

[[noreturn]] void Child(int fd, void* pinned) {
  int count = -1;
  Line(fd, "get_device_count", cudaGetDeviceCount(&count));
  cudaPointerAttributes a{};
  Line(fd, "pointer_attributes", cudaPointerGetAttributes(&a, pinned));
  void* dev = nullptr;
  Line(fd, "host_get_device_pointer", cudaHostGetDevicePointer(&dev, pinned, 0));
  Line(fd, "free_null", cudaFree(nullptr));
  void* x = nullptr;
  const cudaError_t m = cudaMalloc(&x, 4096);
  Line(fd, "malloc", m);
  if (m == cudaSuccess) {
    std::vector<unsigned char> back(4096, 0);
    cudaError_t e = cudaMemcpy(x, pinned, 4096, cudaMemcpyHostToDevice);
    // copy-check: the round trip's bytes are compared with the parent's pattern just below
    if (e == cudaSuccess) e = cudaMemcpy(back.data(), x, 4096, cudaMemcpyDeviceToHost);
    const bool same = e == cudaSuccess && HostCountPatternMismatches(back.data(), 4096, kSeedAlloc) == 0;
    Line(fd, "memcpy_round_trip", e == cudaSuccess ? (same ? "cudaSuccess (bytes ok)" : "cudaSuccess (bytes differ)")
                                                   : cudaGetErrorName(e));
  } else {
    Line(fd, "memcpy_round_trip", "not tried");
  }
  void* h = nullptr;
  const cudaError_t ha = cudaHostAlloc(&h, 65536, 0);
  Line(fd, "host_alloc", ha);
  if (ha == cudaSuccess) Line(fd, "free_host", cudaFreeHost(h));
  else Line(fd, "free_host", "not tried");
  Line(fd, "device_synchronize", cudaDeviceSynchronize());
  _exit(0);  // no atexit handlers: they belong to the parent's CUDA
}

// The GPU counts the mismatches of `dev` against `seed`, then inverts every byte; the host must
// see the inversion. Returns the first failing call, or "" with *bad set.
std::string DeviceRoundTrip(void* dev, void* host, uint32_t seed, unsigned long long* counter, long long* bad) {
  unsigned long long device_bad = ~0ull;
  cudaError_t e = cudaMemset(counter, 0, sizeof *counter);
  if (e == cudaSuccess) e = LaunchCountPatternMismatches(dev, kSize, seed, counter);
  if (e == cudaSuccess) e = LaunchInvertBytes(dev, kSize);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  // copy-check: the count read back is judged by the caller; the memset's zero is its start
  if (e == cudaSuccess) e = cudaMemcpy(&device_bad, counter, sizeof device_bad, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return cudaGetErrorName(e);
  *bad = static_cast<long long>(device_bad + HostCountPatternMismatches(host, kSize, seed, 0xff));
  return "";
}

PAGELOCK_SCENARIO(ForkedChildCallsCuda) {
  report.Error("init", cudaFree(nullptr));
  void* pinned = nullptr;
  report.Error("host_alloc", cudaHostAlloc(&pinned, kSize, cudaHostAllocMapped));
  int can_register = 0;
  (void)cudaDeviceGetAttribute(&can_register, cudaDevAttrHostRegisterSupported, 0);
  void* region = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  // The child leaves by _exit: these owners release in this process only.
  Mapping region_map = Mapping::Adopt(region, kSize);
  if (!pinned || region == MAP_FAILED) return report.Set("setup", "allocation failed");
  cudaError_t reg = can_register == 1 ? cudaHostRegister(region, kSize, cudaHostRegisterMapped) : cudaErrorNotSupported;
  report.Error("register", reg);
  (void)cudaGetLastError();
  HostFillPattern(pinned, kSize, kSeedAlloc);
  HostFillPattern(region, kSize, kSeedRegistered);
  void* dev_pinned = nullptr;
  void* dev_region = nullptr;
  report.Error("device_pointer", cudaHostGetDevicePointer(&dev_pinned, pinned, 0));
  if (reg == cudaSuccess) report.Error("device_pointer_registered", cudaHostGetDevicePointer(&dev_region, region, 0));
  unsigned long long* counter = nullptr;
  report.Error("counter", cudaMalloc(&counter, sizeof *counter));
  DeviceBuffer own_counter = DeviceBuffer::Adopt(counter);

  int fds[2];
  if (pipe(fds) != 0) return report.Set("fork", "pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return report.Set("fork", "fork failed");
  if (pid == 0) {
    close(fds[0]);
    Child(fds[1], pinned);
  }
  close(fds[1]);
  report.Set("fork", "ok");

  // The child's lines, until it closes the pipe or the bounded wait ends; then it is reaped
  // (killed if it still runs).
  const double wait_s = 5 * TimeScale();
  report.Set("child_wait_budget_s", static_cast<long long>(wait_s));
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  bool eof = false;
  while (!eof && std::chrono::steady_clock::now() < deadline) {
    struct pollfd pfd = {fds[0], POLLIN, 0};
    if (poll(&pfd, 1, 50) == 1) {
      char buf[256];
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) eof = true;
      else text.append(buf, static_cast<size_t>(n));
    }
  }
  close(fds[0]);
  int status = 0;
  pid_t w = 0;
  for (int i = 0; i < 100 && (w = waitpid(pid, &status, WNOHANG)) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (w == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    report.Set("child_exit", "killed after the bounded wait");
  } else {
    report.Set("child_exit", WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                               : "signal " + SignalName(WTERMSIG(status)));
  }
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) break;
    const std::string line = text.substr(start, end - start);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) report.Set("child_" + line.substr(0, eq), line.substr(eq + 1));
    start = end + 1;
  }

  // The parent's side, after the child is gone.
  report.Error("last_error_after", cudaGetLastError());
  report.Set("host_bad_pinned", static_cast<long long>(HostCountPatternMismatches(pinned, kSize, kSeedAlloc)));
  if (reg == cudaSuccess) {
    report.Set("host_bad_registered", static_cast<long long>(HostCountPatternMismatches(region, kSize, kSeedRegistered)));
  }
  long long bad = -1;
  std::string e = dev_pinned && counter ? DeviceRoundTrip(dev_pinned, pinned, kSeedAlloc, counter, &bad) : "no alias";
  report.Set("device_pinned", e.empty() ? "ok" : e);
  report.Set("device_bad_pinned", bad);
  if (reg == cudaSuccess) {
    bad = -1;
    e = dev_region && counter ? DeviceRoundTrip(dev_region, region, kSeedRegistered, counter, &bad) : "no alias";
    report.Set("device_registered", e.empty() ? "ok" : e);
    report.Set("device_bad_registered", bad);
  }
  // New page-locked memory after the child, written by the device and read back.
  void* later = nullptr;
  cudaError_t l = cudaHostAlloc(&later, kSize, cudaHostAllocMapped);
  if (l == cudaSuccess) {
    l = LaunchFillPattern(later, kSize, 0x1a7e);
    if (l == cudaSuccess) l = cudaDeviceSynchronize();
    report.Set("later_bad", static_cast<long long>(HostCountPatternMismatches(later, kSize, 0x1a7e)));
    const cudaError_t f = cudaFreeHost(later);
    if (l == cudaSuccess) l = f;
  }
  report.Error("later", l);
  own_counter = DeviceBuffer();  // the releases in the order they were written
  if (reg == cudaSuccess) report.Error("unregister", cudaHostUnregister(region));
  report.Error("free_host", cudaFreeHost(pinned));
  region_map = Mapping();
  report.Error("last_error_end", cudaGetLastError());
}

// A driver whose forked child, calling CUDA, reaches into the parent's context or pages (its
// frees or its DMA touching the parent's pinned memory, its teardown destroying the parent's
// mappings or leaving a sticky error in the parent) fails this.
TEST(ForkChildTest, AChildCallingCudaAfterForkLeavesTheParentsPinnedMemoryAndDeviceWorkIntact) {
  PAGELOCK_RULE("C17,C18");
  PAGELOCK_REQUIRE(RequireUsableDevice());
  // From Linux 5.9 fork() copies pinned anonymous pages for the child at once, so the parent keeps
  // its pinned pages (C05); before that, copy-on-write could move them.
  if (!KernelAtLeast(5, 9)) PAGELOCK_NOT_SUPPORTED("Linux < 5.9: fork() does not copy pinned pages early");
  ChildResult r = RunScenario("ForkedChildCallsCuda", 60);
  Observe("child_exit", r.Get("child_exit"));
  for (const char* call : kChildCalls) Observe(std::string("child_") + call, r.Get(std::string("child_") + call));
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("init"), "cudaSuccess");
  ASSERT_EQ(r.Get("host_alloc"), "cudaSuccess");
  ASSERT_EQ(r.Get("setup"), "<missing>") << r.Get("setup");
  ASSERT_EQ(r.Get("device_pointer"), "cudaSuccess");
  ASSERT_EQ(r.Get("counter"), "cudaSuccess");
  ASSERT_EQ(r.Get("fork"), "ok");
  const bool registered = r.Get("register") == "cudaSuccess";
  Observe("registered_buffer", registered);
  EXPECT_EQ(r.Get("last_error_after"), "cudaSuccess") << "the child's calls left an error in the parent";
  EXPECT_EQ(r.Get("host_bad_pinned"), "0") << "the parent's allocated pinned bytes changed while the child ran";
  EXPECT_EQ(r.Get("device_pinned"), "ok");
  EXPECT_EQ(r.Get("device_bad_pinned"), "0") << "the device's read and inversion through the alias were not exact";
  if (registered) {
    EXPECT_EQ(r.Get("host_bad_registered"), "0") << "the parent's registered bytes changed while the child ran";
    EXPECT_EQ(r.Get("device_registered"), "ok");
    EXPECT_EQ(r.Get("device_bad_registered"), "0");
    EXPECT_EQ(r.Get("unregister"), "cudaSuccess");
  }
  EXPECT_EQ(r.Get("later"), "cudaSuccess") << "new pinned memory after the child";
  EXPECT_EQ(r.Get("later_bad"), "0");
  EXPECT_EQ(r.Get("free_host"), "cudaSuccess");
  EXPECT_EQ(r.Get("last_error_end"), "cudaSuccess");
}

}  // namespace
}  // namespace pagelock
