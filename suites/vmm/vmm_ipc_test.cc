// VMM host memory shared with a second process through a POSIX file descriptor (peer gap K4;
// cuda-python's test_vmm_ipc.py, NCCL's cuMem host buffers): a HOST_NUMA allocation created with
// CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, exported with cuMemExportToShareableHandle, and
// imported by a child process (cuMemImportFromShareableHandle, cuMemMap, cuMemSetAccess) that
// inherits the descriptor. Traffic goes both ways: the child's device and host read what the
// parent's host wrote, and the parent's host and device read what the child's kernel wrote. A
// second case releases everything in the exporter before the import: the descriptor alone keeps
// the allocation. Gated on CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED and the
// VMM host attributes (NotSupported with the attribute and its value). Rule ids refer to
// suites/rules.tsv.
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "fixtures/child_process.h"
#include "fixtures/gpu_test.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"
#include "suites/streams/stream_util.h"
#include "suites/vmm/vmm_util.h"

namespace pagelock {
namespace {

class VmmIpcTest : public DriverApiGpuTest {
 protected:
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const std::string header = vmm::HeaderUnsupported();
    if (!header.empty()) PAGELOCK_NOT_SUPPORTED(header);
#ifdef PAGELOCK_HOST_VMM
    const std::string why = vmm::DeviceUnsupported(d, CU_MEM_LOCATION_TYPE_HOST_NUMA, /*posix_fd=*/true);
    if (!why.empty()) PAGELOCK_NOT_SUPPORTED(why);
#endif
    counter_ = PinnedBuffer::Mapped(sizeof(unsigned long long));
    ASSERT_CUDA_OK(counter_.status());
  }
  void TearDown() override {
    EXPECT_CUDA_OK(counter_.Free());  // before the kit's check for leaked pinned memory
    DriverApiGpuTest::TearDown();
  }
  size_t DeviceCount(const void* p, size_t n, uint32_t seed) {
    *counter_.as<unsigned long long>() = 0;
    EXPECT_CUDA_OK(LaunchCountPatternMismatches(p, n, seed, counter_.as<unsigned long long>(), 0));
    EXPECT_CUDA_OK(cudaStreamSynchronize(0));
    return static_cast<size_t>(*counter_.as<unsigned long long>());
  }
  PinnedBuffer counter_;
};

#ifdef PAGELOCK_HOST_VMM

// The child's argument: "<fd> <size> <seed the parent wrote> <seed the child writes>".
struct ImportArg {
  int fd = -1;
  size_t size = 0;
  unsigned in = 0, out = 0;
  std::string Encode() const {
    return std::to_string(fd) + " " + std::to_string(size) + " " + std::to_string(in) + " " + std::to_string(out);
  }
  static ImportArg Decode(const std::string& s) {
    ImportArg a;
    unsigned long long size = 0;
    if (std::sscanf(s.c_str(), "%d %llu %u %u", &a.fd, &size, &a.in, &a.out) != 4) a.fd = -1;
    a.size = static_cast<size_t>(size);
    return a;
  }
};

// The importing process: maps the inherited descriptor's allocation, counts the parent's bytes
// on its device and its host, then overwrites every byte from its device.
PAGELOCK_SCENARIO(VmmImportPosixFd) {
  const ImportArg arg = ImportArg::Decode(ScenarioArg());
  report.Set("arg", arg.fd >= 0 ? "ok" : "unreadable: " + ScenarioArg());
  if (arg.fd < 0) return;
  report.Error("init", cudaFree(nullptr));
  const DriverApi& d = Driver();
  report.Set("driver_api", d.loaded ? "loaded" : d.error);
  if (!d.loaded) return;
  CUmemGenericAllocationHandle h = 0;
  CUresult r = d.cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<uintptr_t>(arg.fd)),
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  report.Cu("import", r);
  if (r != CUDA_SUCCESS) return;
  vmm::Mapping m(d);
  std::string step;
  r = m.MapHandle(h, arg.size, &step);
  report.Cu("map", r);
  if (r != CUDA_SUCCESS) {
    report.Set("map_step", step);
    report.Cu("release", m.Release());
    return;
  }
  report.Cu("device_access", m.SetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  report.Cu("host_access", m.SetAccess(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  PinnedBuffer counter = PinnedBuffer::Mapped(sizeof(unsigned long long));
  report.Error("counter", counter.status());
  if (counter) {
    auto* c = counter.as<unsigned long long>();
    *c = 0;
    report.Error("count_launch", LaunchCountPatternMismatches(m.ptr(), m.size(), arg.in, c, 0));
    report.Error("count_sync", cudaStreamSynchronize(0));
    report.Set("device_mismatches", static_cast<long long>(*c));
    report.Set("host_mismatches", static_cast<long long>(streams::HostCountPattern(m.ptr(), m.size(), 0, arg.in)));
    report.Error("fill_launch", LaunchFillPattern(m.ptr(), m.size(), arg.out, 0));
    report.Error("fill_sync", cudaStreamSynchronize(0));
    report.Error("counter_free", counter.Free());
  }
  report.Cu("release", m.Release());
  close(arg.fd);
}

// Runs the importer with a copy of `fd` it inherits (dup() leaves FD_CLOEXEC clear, so the copy
// survives the child's exec), and checks every step of its report.
void RunImporter(int fd, const ImportArg& base) {
  const int inherited = dup(fd);
  ASSERT_GE(inherited, 0) << "dup of the exported descriptor failed";
  ImportArg arg = base;
  arg.fd = inherited;
  const ChildResult r = RunScenario("VmmImportPosixFd", 60, {ScenarioArgEnv(arg.Encode())});
  close(inherited);
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("arg"), "ok");
  ASSERT_EQ(r.Get("import"), CuName(CUDA_SUCCESS)) << "cuMemImportFromShareableHandle of the exported descriptor";
  ASSERT_EQ(r.Get("map"), CuName(CUDA_SUCCESS)) << r.Get("map_step");
  EXPECT_EQ(r.Get("device_access"), CuName(CUDA_SUCCESS));
  EXPECT_EQ(r.Get("host_access"), CuName(CUDA_SUCCESS));
  EXPECT_EQ(r.Get("count_sync"), ErrName(cudaSuccess));
  EXPECT_EQ(r.Get("device_mismatches"), "0") << "the importer's device read other bytes than the exporter's host wrote";
  EXPECT_EQ(r.Get("host_mismatches"), "0") << "the importer's host read other bytes than the exporter's host wrote";
  EXPECT_EQ(r.Get("fill_sync"), ErrName(cudaSuccess));
  EXPECT_EQ(r.Get("release"), CuName(CUDA_SUCCESS));
}

// A driver whose exported descriptor names other pages (or none), whose import maps a copy,
// or whose importer's writes never reach the exporter fails this. cuMemExportToShareableHandle:
// "create a shareable memory allocation handle that can be used to share the memory with other
// processes. The recipient process can convert the shareable handle back into a CUDA memory
// handle using cuMemImportFromShareableHandle and map it with cuMemMap"; cuMemMap: the importer
// "must use cuMemMap to map the memory into its address ranges before setting accessibility
// with cuMemSetAccess". Both processes' host and device see the other's bytes.
TEST_F(VmmIpcTest, AnImportedPosixFdCarriesBytesBothWaysBetweenProcesses) {
  PAGELOCK_RULE("R175");
  const int id = vmm::HostNumaIdOrZero(d);
  const CUmemAllocationProp prop = vmm::HostProp(CU_MEM_LOCATION_TYPE_HOST_NUMA, id, /*posix_fd=*/true);
  CUresult r = CUDA_SUCCESS;
  const size_t gran = vmm::Granularity(d, prop, &r);
  ASSERT_CU_OK(r);
  ASSERT_GT(gran, 0u);
  vmm::Mapping m(d);
  std::string step;
  ASSERT_CU_OK(m.Create(prop, 3 * gran, &step)) << step;
  ASSERT_CU_OK(m.SetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  ASSERT_CU_OK(m.SetAccess(CU_MEM_LOCATION_TYPE_HOST_NUMA, id, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  ImportArg arg;
  arg.size = m.size();
  arg.in = static_cast<unsigned>(CaseRng()());
  arg.out = arg.in ^ 0x5a5a5a5au;
  streams::HostFillPatternFrom(m.ptr(), m.size(), 0, arg.in);
  int fd = -1;
  ASSERT_CU_OK(d.cuMemExportToShareableHandle(&fd, m.handle(), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  ASSERT_GE(fd, 0);
  RunImporter(fd, arg);
  close(fd);
  if (HasFatalFailure()) return;
  // The child's kernel wrote every byte; the exporter's host and device see them.
  EXPECT_EQ(streams::HostCountPattern(m.ptr(), m.size(), 0, arg.out), 0u)
      << "the exporter's host did not see the importer's device writes";
  EXPECT_EQ(DeviceCount(m.ptr(), m.size(), arg.out), 0u) << "the exporter's device did not see the importer's writes";
  EXPECT_CU_OK(m.Release());
}

// A driver that frees the allocation with the exporter's last handle while a descriptor is open
// fails this. cuMemExportToShareableHandle: "Once all shareable handles are closed and the
// allocation is released, the allocated memory referenced will be released back to the OS";
// cuMemRelease: freed "when all outstanding references to the handle (including it's shareable
// counterparts) are also released". The exporter unmaps and releases everything, the child
// imports the descriptor and finds the exporter's bytes, and the exporter imports its own
// descriptor again and finds the child's.
TEST_F(VmmIpcTest, AnExportedFdKeepsTheAllocationAfterTheExporterReleasedIt) {
  PAGELOCK_RULE("R175");
  const int id = vmm::HostNumaIdOrZero(d);
  const CUmemAllocationProp prop = vmm::HostProp(CU_MEM_LOCATION_TYPE_HOST_NUMA, id, /*posix_fd=*/true);
  CUresult r = CUDA_SUCCESS;
  const size_t gran = vmm::Granularity(d, prop, &r);
  ASSERT_CU_OK(r);
  ASSERT_GT(gran, 0u);
  ImportArg arg;
  arg.in = static_cast<unsigned>(CaseRng()());
  arg.out = arg.in ^ 0xa5a5a5a5u;
  int fd = -1;
  {
    vmm::Mapping m(d);
    std::string step;
    ASSERT_CU_OK(m.Create(prop, 2 * gran, &step)) << step;
    ASSERT_CU_OK(m.SetAccess(CU_MEM_LOCATION_TYPE_HOST_NUMA, id, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    arg.size = m.size();
    streams::HostFillPatternFrom(m.ptr(), m.size(), 0, arg.in);
    ASSERT_CU_OK(d.cuMemExportToShareableHandle(&fd, m.handle(), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    ASSERT_GE(fd, 0);
    EXPECT_CU_OK(m.Release());  // unmap, free the range, release the only handle
  }
  RunImporter(fd, arg);
  if (HasFatalFailure()) {
    close(fd);
    return;
  }
  CUmemGenericAllocationHandle h = 0;
  r = d.cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  close(fd);
  ASSERT_CU_OK(r) << "the exporter's import of its own descriptor";
  vmm::Mapping again(d);
  std::string step;
  ASSERT_CU_OK(again.MapHandle(h, arg.size, &step)) << step;
  ASSERT_CU_OK(again.SetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  ASSERT_CU_OK(again.SetAccess(CU_MEM_LOCATION_TYPE_HOST_NUMA, id, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  EXPECT_EQ(streams::HostCountPattern(again.ptr(), again.size(), 0, arg.out), 0u)
      << "the allocation the descriptor kept does not hold the importer's writes";
  EXPECT_EQ(DeviceCount(again.ptr(), again.size(), arg.out), 0u);
  EXPECT_CU_OK(again.Release());
}

#else  // !PAGELOCK_HOST_VMM

TEST_F(VmmIpcTest, HostVmmNeedsCuda13Headers) {
  PAGELOCK_RULE("R175");
  PAGELOCK_NOT_SUPPORTED(vmm::HeaderUnsupported());
}

#endif  // PAGELOCK_HOST_VMM

}  // namespace
}  // namespace pagelock
