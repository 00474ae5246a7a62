// A shared-memory segment registered by two processes at once (peer case 24): a POSIX shm_open
// segment and a SysV shmget segment, each mapped and registered here and in a scenario child.
// Each process's GPU writes its half through its own device pointer; each process sees the
// other's bytes; the child's unregister (and exit) leaves this process's registration working.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fixtures/child_process.h"
#include "fixtures/gpu_test.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{2} << 20, kHalf = kSize / 2;
constexpr uint32_t kParentSeed = 0x11, kChildSeed = 0x22, kAgainSeed = 0x33;

// Maps the segment named by "posix:/name" or "sysv:<id>"; nullptr on failure.
void* MapSegment(const std::string& spec) {
  if (spec.rfind("posix:", 0) == 0) {
    int fd = shm_open(spec.c_str() + 6, O_RDWR, 0600);
    if (fd < 0) return nullptr;
    void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? nullptr : p;
  }
  if (spec.rfind("sysv:", 0) == 0) {
    void* p = shmat(std::atoi(spec.c_str() + 5), nullptr, 0);
    return p == reinterpret_cast<void*>(-1) ? nullptr : p;
  }
  return nullptr;
}

void UnmapSegment(const std::string& spec, void* p) {
  // frees_check: the scenario child's last step, undoing its own attach (shmdt for SysV alike)
  if (spec.rfind("posix:", 0) == 0) munmap(p, kSize);
  else shmdt(p);
}

// Device check of n bytes at dev against the pattern; returns the mismatches, ~0 on error.
unsigned long long DeviceMismatches(const void* dev, size_t n, uint32_t seed, cudaError_t* e) {
  unsigned long long* bad = nullptr;
  unsigned long long result = ~0ull;
  *e = cudaMalloc(&bad, sizeof *bad);
  const DeviceBuffer own_bad = DeviceBuffer::Adopt(bad);  // freed on return
  if (*e == cudaSuccess) *e = cudaMemset(bad, 0, sizeof *bad);
  if (*e == cudaSuccess) *e = LaunchCountPatternMismatches(dev, n, seed, bad);
  if (*e == cudaSuccess) *e = cudaDeviceSynchronize();
  // copy-check: the mismatch count read back is itself the check of the device bytes
  if (*e == cudaSuccess) *e = cudaMemcpy(&result, bad, sizeof result, cudaMemcpyDefault);
  return result;
}

PAGELOCK_SCENARIO(RegisterSharedSegment) {
  const std::string spec = ScenarioArg();
  void* p = MapSegment(spec);
  report.Set("map", p ? "ok" : std::string("failed: ") + std::strerror(errno));
  if (!p) return;
  report.Error("register", cudaHostRegister(p, kSize, cudaHostRegisterMapped));
  void* dev = nullptr;
  report.Error("devptr", cudaHostGetDevicePointer(&dev, p, 0));
  if (!dev) return;
  cudaError_t e;
  // The parent's half, through this process's GPU mapping and its host mapping.
  report.Set("child_device_bad_parent_half", static_cast<long long>(DeviceMismatches(dev, kHalf, kParentSeed, &e)));
  report.Error("child_device_read", e);
  report.Set("child_host_bad_parent_half", static_cast<long long>(HostCountPatternMismatches(p, kHalf, kParentSeed)));
  // Its own half, written by its GPU.
  e = LaunchFillPattern(static_cast<char*>(dev) + kHalf, kHalf, kChildSeed);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  report.Error("child_device_write", e);
  report.Error("unregister", cudaHostUnregister(p));
  UnmapSegment(spec, p);
}

class SharedSegmentTest : public GpuTest, public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  }
};

TEST_P(SharedSegmentTest, TwoProcessesRegisterOneSegmentAndSeeEachOthersDeviceWrites) {
  PAGELOCK_RULE("C12");
  const std::string kind = GetParam();
  std::string spec;
  void* p = nullptr;
  int sysv_id = -1;
  const std::string name = "/pagelock-" + std::to_string(getpid());
  if (kind == "posix") {
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) PAGELOCK_NOT_SUPPORTED(std::string("shm_open: ") + std::strerror(errno));
    const bool sized = ftruncate(fd, kSize) == 0;
    void* m = sized ? mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (m == MAP_FAILED) {
      shm_unlink(name.c_str());
      FAIL() << "mapping the POSIX segment: " << std::strerror(errno);
    }
    p = m;
    spec = "posix:" + name;
  } else {
    sysv_id = shmget(IPC_PRIVATE, kSize, IPC_CREAT | 0600);
    if (sysv_id < 0) PAGELOCK_NOT_SUPPORTED(std::string("shmget: ") + std::strerror(errno));
    void* m = shmat(sysv_id, nullptr, 0);
    shmctl(sysv_id, IPC_RMID, nullptr);  // removed when the last process detaches
    ASSERT_NE(m, reinterpret_cast<void*>(-1)) << "shmat: " << std::strerror(errno);
    p = m;
    spec = "sysv:" + std::to_string(sysv_id);
  }
  std::memset(p, 0, kSize);
  ASSERT_CUDA_OK(cudaHostRegister(p, kSize, cudaHostRegisterMapped));
  void* dev = nullptr;
  EXPECT_CUDA_OK(cudaHostGetDevicePointer(&dev, p, 0));
  if (dev) {
    EXPECT_CUDA_OK(LaunchFillPattern(dev, kHalf, kParentSeed));
    EXPECT_CUDA_OK(cudaDeviceSynchronize());
  }
  ChildResult r = RunScenario("RegisterSharedSegment", 60, {ScenarioArgEnv(spec)});
  if (dev && NoteChildOutcome(r)) {
    EXPECT_EQ(r.Get("register"), "cudaSuccess") << "the second process could not register the segment";
    EXPECT_EQ(r.Get("child_device_read"), "cudaSuccess");
    EXPECT_EQ(r.Get("child_device_bad_parent_half"), "0") << "the child's GPU does not see this GPU's writes";
    EXPECT_EQ(r.Get("child_host_bad_parent_half"), "0") << "the child's host mapping does not see this GPU's writes";
    EXPECT_EQ(r.Get("child_device_write"), "cudaSuccess");
    EXPECT_EQ(r.Get("unregister"), "cudaSuccess");
    EXPECT_EQ(HostCountPatternMismatches(static_cast<char*>(p) + kHalf, kHalf, kChildSeed), 0u)
        << "this process does not see the child's GPU writes";
    cudaError_t e;
    EXPECT_EQ(DeviceMismatches(static_cast<char*>(dev) + kHalf, kHalf, kChildSeed, &e), 0u)
        << "this GPU does not see the child's GPU writes";
    EXPECT_CUDA_OK(e);
    // The child's unregister and exit left this registration intact.
    EXPECT_CUDA_OK(LaunchFillPattern(dev, kSize, kAgainSeed));
    EXPECT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(HostCountPatternMismatches(p, kSize, kAgainSeed), 0u)
        << "after the other process unregistered, this registration no longer round-trips";
  } else if (dev) {
    ADD_FAILURE() << r.Describe();
  }
  EXPECT_CUDA_OK(cudaHostUnregister(p));
  if (kind == "posix") {
    EXPECT_EQ(munmap(p, kSize), 0) << std::strerror(errno);
    shm_unlink(name.c_str());
  } else {
    shmdt(p);
  }
}

INSTANTIATE_TEST_SUITE_P(Segments, SharedSegmentTest, ::testing::Values("posix", "sysv"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

}  // namespace
}  // namespace pagelock
