// fork() without exec while pins are live. In a scenario child (a fresh process): pin one
// buffer of each host-memory kind, fork a grandchild that makes no CUDA calls, then the parent
// rewrites every buffer and the GPU reads and inverts it through its device pointer. The parent
// must see exactly what it and the GPU wrote (Linux >= 5.9 copies pinned anonymous pages for
// the child at fork, so the parent keeps the pinned page). CUDA leaves fork-without-exec
// undefined for the grandchild, so what the grandchild sees is recorded, never asserted.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{1} << 20;

struct Buffer {
  std::string name;
  void* host = nullptr;
  size_t size = 0;
  void* dev = nullptr;
  bool allocated = false;  // cudaHostAlloc/cudaMallocHost (else registered)
  uint32_t seed_before = 0, seed_after = 0;
  std::unique_ptr<HostRegion> region;
  // The kit's owners; the scenario releases through them and reports the result.
  PinnedBuffer pinned;
  HostRegistration registration;
};

// The grandchild: async-signal-safe code only (the parent is multi-threaded). A fault while
// reading a buffer (a mapping the driver kept from the child) is caught and reported as 'F'.
sigjmp_buf g_fault_jump;
void OnFault(int) { siglongjmp(g_fault_jump, 1); }

char Classify(const Buffer& b) {
  if (sigsetjmp(g_fault_jump, 1) != 0) return 'F';
  const auto* p = static_cast<const volatile unsigned char*>(b.host);
  size_t before = 0, parent_final = 0, parent_written = 0, zero = 0;
  for (size_t i = 0; i < b.size; ++i) {
    const unsigned char c = p[i];
    before += c == PatternByte(i, b.seed_before);
    parent_written += c == PatternByte(i, b.seed_after);
    parent_final += c == static_cast<unsigned char>(~PatternByte(i, b.seed_after));
    zero += c == 0;
  }
  if (before == b.size) return 'A';          // its own copy from fork time
  if (parent_final == b.size) return 'P';    // shares the parent's page (after the GPU's write)
  if (parent_written == b.size) return 'W';  // the parent's rewrite, not the GPU's
  if (zero == b.size) return 'Z';
  return '?';
}

[[noreturn]] void Grandchild(const std::vector<Buffer>& buffers, int go_fd, int result_fd) {
  struct sigaction sa {};
  sa.sa_handler = OnFault;
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
  struct pollfd pfd = {go_fd, POLLIN, 0};
  char go = 0;
  if (poll(&pfd, 1, 30000) != 1 || read(go_fd, &go, 1) != 1) _exit(3);
  for (const Buffer& b : buffers) {
    char c = Classify(b);
    if (write(result_fd, &c, 1) != 1) _exit(4);
  }
  _exit(0);
}

std::string KindsLetters() { return "A=fork-time copy, P=parent's final bytes, W=parent's rewrite, Z=zeros, F=fault, ?=mixed"; }

PAGELOCK_SCENARIO(ForkWithLivePins) {
  report.Error("init", cudaFree(nullptr));
  std::vector<Buffer> buffers;
  uint32_t seed = 0x5eed0000u;
  for (const char* name : {"cudaHostAlloc", "cudaMallocHost"}) {
    Buffer b;
    b.name = name;
    b.size = kSize;
    b.allocated = true;
    cudaError_t e = b.name == "cudaHostAlloc" ? cudaHostAlloc(&b.host, kSize, cudaHostAllocMapped)
                                              : cudaMallocHost(&b.host, kSize);
    report.Error("pin_" + b.name, e);
    if (e == cudaSuccess) b.pinned = PinnedBuffer::Adopt(b.host, kSize);
    if (e == cudaSuccess) buffers.push_back(std::move(b));
  }
  for (HostKind kind : RegistrableKinds()) {
    Buffer b;
    b.name = SourceName(kind);
    b.region = HostRegion::Make(kind, kSize);
    if (!b.region->data()) {
      report.Set("unavailable_" + b.name, b.region->unavailable());
      continue;
    }
    b.host = b.region->data();
    b.size = b.region->size();
    b.registration = HostRegistration(b.host, b.size, cudaHostRegisterMapped);
    const cudaError_t e = b.registration.status();
    report.Error("pin_" + b.name, e);
    if (e == cudaSuccess) buffers.push_back(std::move(b));
  }
  std::string names;
  for (Buffer& b : buffers) {
    b.seed_before = ++seed;
    b.seed_after = ++seed;
    HostFillPattern(b.host, b.size, b.seed_before);
    report.Error("devptr_" + b.name, cudaHostGetDevicePointer(&b.dev, b.host, 0));
    names += (names.empty() ? "" : " ") + b.name;
  }
  report.Set("buffers", names);

  int go[2], result[2];
  if (pipe(go) != 0 || pipe(result) != 0) {
    report.Set("fork", "pipe failed");
    return;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    report.Set("fork", "fork failed");
    return;
  }
  if (pid == 0) {
    close(go[1]);
    close(result[0]);
    Grandchild(buffers, go[0], result[1]);
  }
  close(go[0]);
  close(result[1]);
  report.Set("fork", "ok");

  // The parent rewrites every buffer after the fork; the GPU must read those bytes and its
  // inversion must reach the parent.
  unsigned long long* bad = nullptr;
  report.Error("malloc_counter", cudaMalloc(&bad, sizeof *bad));
  DeviceBuffer own_bad = DeviceBuffer::Adopt(bad);
  for (Buffer& b : buffers) {
    HostFillPattern(b.host, b.size, b.seed_after);
    unsigned long long device_bad = ~0ull;
    cudaError_t e = cudaMemset(bad, 0, sizeof *bad);
    if (e == cudaSuccess && b.dev) e = LaunchCountPatternMismatches(b.dev, b.size, b.seed_after, bad);
    if (e == cudaSuccess && b.dev) e = LaunchInvertBytes(b.dev, b.size);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaMemcpy(&device_bad, bad, sizeof device_bad, cudaMemcpyDefault);
    report.Error("gpu_" + b.name, e);
    report.Set("gpu_sees_parent_bad_" + b.name, static_cast<long long>(device_bad));
    report.Set("parent_sees_gpu_bad_" + b.name,
               static_cast<long long>(HostCountPatternMismatches(b.host, b.size, b.seed_after, 0xff)));
  }
  own_bad = DeviceBuffer();  // freed before the grandchild looks, as it was

  // Now the grandchild looks at its view of every buffer.
  char g = 'g';
  (void)!write(go[1], &g, 1);
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (seen.size() < buffers.size() && std::chrono::steady_clock::now() < deadline) {
    struct pollfd pfd = {result[0], POLLIN, 0};
    if (poll(&pfd, 1, 100) == 1) {
      char c;
      if (read(result[0], &c, 1) != 1) break;
      seen += c;
    }
  }
  int status = 0;
  pid_t w = 0;
  for (int i = 0; i < 200 && (w = waitpid(pid, &status, WNOHANG)) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (w == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    report.Set("grandchild_exit", "killed after 2 s");
  } else {
    report.Set("grandchild_exit", WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                                    : "signal " + SignalName(WTERMSIG(status)));
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    report.Set("grandchild_sees_" + buffers[i].name, i < seen.size() ? std::string(1, seen[i]) : "-");
  }
  close(go[1]);
  close(result[0]);

  // Registrations made after the fork still work.
  auto later = HostRegion::Make(HostKind::kRegisteredMmap, kSize);
  cudaError_t e = later->data() ? cudaHostRegister(later->data(), kSize, cudaHostRegisterMapped)
                                : cudaErrorMemoryAllocation;
  void* dev = nullptr;
  if (e == cudaSuccess) {
    HostFillPattern(later->data(), kSize, 77);
    e = cudaHostGetDevicePointer(&dev, later->data(), 0);
    if (e == cudaSuccess) e = LaunchInvertBytes(dev, kSize);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    report.Set("later_bad", static_cast<long long>(HostCountPatternMismatches(later->data(), kSize, 77, 0xff)));
    cudaError_t u = cudaHostUnregister(later->data());
    if (e == cudaSuccess) e = u;
  }
  report.Error("later_registration", e);
  for (Buffer& b : buffers) {
    report.Error("release_" + b.name, b.allocated ? b.pinned.Free() : b.registration.Free());

  }
}

TEST(ForkTest, ParentAndGpuAgreeOnEveryPinnedBufferWhileAForkedChildLives) {
  PAGELOCK_RULE("C05");
  PAGELOCK_REQUIRE(RequireUsableDevice());
  // C05 holds from Linux 5.9 on, where fork() copies pinned pages early (page_maybe_dma_pinned);
  // before it the parent could lose its pinned pages to copy-on-write.
  if (!KernelAtLeast(5, 9)) PAGELOCK_NOT_SUPPORTED("Linux < 5.9: fork() does not copy pinned pages early");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  ChildResult r = RunScenario("ForkWithLivePins", 60);
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("init"), "cudaSuccess");
  ASSERT_EQ(r.Get("fork"), "ok");
  const std::string names = r.Get("buffers");
  Observe("buffers", names);
  Observe("grandchild_exit", r.Get("grandchild_exit"));
  Observe("grandchild_legend", KindsLetters());
  std::istringstream in(names);
  std::string name;
  int checked = 0;
  while (in >> name) {
    ++checked;
    Observe("grandchild_sees_" + name, r.Get("grandchild_sees_" + name));
    EXPECT_EQ(r.Get("gpu_" + name), "cudaSuccess") << name;
    EXPECT_EQ(r.Get("gpu_sees_parent_bad_" + name), "0")
        << name << ": the GPU read bytes other than the parent's post-fork writes";
    EXPECT_EQ(r.Get("parent_sees_gpu_bad_" + name), "0")
        << name << ": the parent does not see the GPU's writes after the fork";
    EXPECT_EQ(r.Get("release_" + name), "cudaSuccess") << name;
  }
  EXPECT_GE(checked, 4) << "too few kinds could be pinned: " << names;
  EXPECT_EQ(r.Get("pin_cudaHostAlloc"), "cudaSuccess");
  EXPECT_EQ(r.Get("pin_anonymous_mmap"), "cudaSuccess");
  EXPECT_EQ(r.Get("later_registration"), "cudaSuccess") << "registering after the fork";
  EXPECT_EQ(r.Get("later_bad"), "0") << "a registration made after the fork round-trips";
}

}  // namespace
}  // namespace pagelock
