// Host memory pinned through the virtual memory management API (peer gap K4): cuMemCreate at
// CU_MEM_LOCATION_TYPE_HOST and HOST_NUMA (every node), cuMemAddressReserve, cuMemMap,
// cuMemSetAccess for the device and the host.
//   - device kernels write every byte and the host reads them; the host writes and kernels read;
//     copy-engine copies in and out of the mapping deliver every byte; at 1, 3 and 17 times the
//     minimum granularity;
//   - a new mapping grants no access until cuMemSetAccess, then exactly what was set; a device
//     access before it faults (in a child: the fault is sticky);
//   - the handle can be released before the mapping goes, the mapping stays usable until
//     cuMemUnmap, which leaves a reservation a new allocation maps again;
//   - the documented argument errors (granularity, a shareable handle type on a HOST allocation,
//     HOST_NUMA_CURRENT, flags, a second map of a mapped range, a partial unmap).
// Gated on the attributes that say VMM host allocations exist (NotSupported with the attribute
// and its value); built against headers older than CUDA 13.0, NotSupported naming CUDA_VERSION.
// Rule ids refer to suites/rules.tsv.
#include <setjmp.h>
#include <signal.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include <string>
#include <tuple>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/gpu_test.h"
#include "fixtures/numa.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"
#include "suites/streams/stream_util.h"
#include "suites/vmm/vmm_util.h"

namespace pagelock {
namespace {

// The largest mapping a full-tier case makes (17 granules of a 2 MiB granularity is 34 MiB).
constexpr size_t kMaxBytes = size_t{256} << 20;

class VmmHostTest : public DriverApiGpuTest {
 protected:
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const std::string header = vmm::HeaderUnsupported();
    if (!header.empty()) PAGELOCK_NOT_SUPPORTED(header);
    counter_ = PinnedBuffer::Mapped(sizeof(unsigned long long));
    ASSERT_CUDA_OK(counter_.status());
    stream_ = OwnedStream(cudaStreamNonBlocking);
    ASSERT_CUDA_OK(stream_.status());
  }
  void TearDown() override {
    EXPECT_CUDA_OK(counter_.Free());  // before the kit's check for leaked pinned memory
    DriverApiGpuTest::TearDown();
  }

  // Mismatches of n bytes at device-accessible p against PatternByte(i, seed), counted by a kernel.
  size_t DeviceCount(const void* p, size_t n, uint32_t seed) {
    *counter_.as<unsigned long long>() = 0;
    EXPECT_CUDA_OK(LaunchCountPatternMismatches(p, n, seed, counter_.as<unsigned long long>(), stream_.get()));
    EXPECT_CUDA_OK(cudaStreamSynchronize(stream_.get()));
    return static_cast<size_t>(*counter_.as<unsigned long long>());
  }
  cudaError_t DeviceFill(void* p, size_t n, uint32_t seed) {
    const cudaError_t e = LaunchFillPattern(p, n, seed, stream_.get());
    return e != cudaSuccess ? e : cudaStreamSynchronize(stream_.get());
  }
  uint32_t Seed() { return static_cast<uint32_t>(CaseRng()()); }

#ifdef PAGELOCK_HOST_VMM
  // NotSupported (and false) unless device 0 holds VMM allocations at `type` (and exports POSIX
  // fds); the caller returns on false.
  bool RequireLocation(CUmemLocationType type, bool posix_fd = false) {
    const std::string why = vmm::DeviceUnsupported(d, type, posix_fd);
    if (why.empty()) return true;
    [&] { PAGELOCK_NOT_SUPPORTED(why); }();  // a skip returns from the lambda only: hence the bool
    return false;
  }
  size_t Granularity(const CUmemAllocationProp& prop) {
    CUresult r = CUDA_SUCCESS;
    const size_t g = vmm::Granularity(d, prop, &r);
    EXPECT_CU_OK(r);
    EXPECT_GT(g, 0u) << "cuMemGetAllocationGranularity(MINIMUM) gave 0";
    return g;
  }

  // Every byte through every path the mapping offers: kernels write, the host reads (where it
  // has access) and a kernel counts; the host writes and a kernel counts; copy-engine copies out
  // of and into the mapping, counted on the device and by the host.
  void CheckEveryByte(const vmm::Mapping& m, bool host_access, const std::string& what) {
    unsigned char* p = m.ptr();
    const size_t n = m.size();
    uint32_t seed = Seed();
    ASSERT_CUDA_OK(DeviceFill(p, n, seed));
    if (host_access) {
      EXPECT_EQ(streams::HostCountPattern(p, n, 0, seed), 0u) << what << ": the host read other bytes than kernels wrote";
      seed = Seed();
      streams::HostFillPatternFrom(p, n, 0, seed);
    }
    EXPECT_EQ(DeviceCount(p, n, seed), 0u) << what << ": a kernel read other bytes than were written";
    DeviceBuffer dev(n);
    ASSERT_CUDA_OK(dev.status());
    ASSERT_CUDA_OK(cudaMemcpyAsync(dev.get(), p, n, cudaMemcpyDefault, stream_.get()));
    EXPECT_EQ(DeviceCount(dev.get(), n, seed), 0u) << what << ": a copy out of the mapping delivered other bytes";
    const uint32_t back = Seed();
    ASSERT_CUDA_OK(DeviceFill(dev.get(), n, back));
    ASSERT_CUDA_OK(cudaMemcpyAsync(p, dev.get(), n, cudaMemcpyDefault, stream_.get()));
    EXPECT_EQ(DeviceCount(p, n, back), 0u) << what << ": a copy into the mapping delivered other bytes";
    if (host_access) {
      EXPECT_EQ(streams::HostCountPattern(p, n, 0, back), 0u) << what << ": the host did not see a copy into the mapping";
    }
    EXPECT_CUDA_OK(dev.Free());
  }
#endif

  PinnedBuffer counter_;
  OwnedStream stream_;
};

#ifdef PAGELOCK_HOST_VMM

class VmmMappingTest : public VmmHostTest,
                       public ::testing::WithParamInterface<std::tuple<CUmemLocationType, int>> {};

// A host allocation that is not what the device maps (pages the driver never pinned, a mapping
// of the wrong pages, an access grant that covers only the first granule, a copy engine that
// cannot translate the VMM range) fails this. cuMemCreate: "To create a CPU allocation that
// doesn't target any specific NUMA nodes, applications must set ... CU_MEM_LOCATION_TYPE_HOST";
// "targeting a specific host NUMA node ... CU_MEM_LOCATION_TYPE_HOST_NUMA"; cuMemMap: "the
// caller needs to update accessibility ... by calling cuMemSetAccess"; cuMemSetAccess: "Users
// cannot specify CU_MEM_LOCATION_TYPE_HOST_NUMA accessibility for allocations created on with
// other location types", so the host is granted access to HOST_NUMA allocations (asserted) and,
// with CU_MEM_LOCATION_TYPE_HOST, to HOST ones where the driver accepts it (recorded).
TEST_P(VmmMappingTest, DeviceAndHostReadAndWriteEveryByte) {
  PAGELOCK_RULE("R171");
  const CUmemLocationType type = std::get<0>(GetParam());
  const size_t granules = static_cast<size_t>(std::get<1>(GetParam()));
  if (!RequireLocation(type)) return;
  const int id = type == CU_MEM_LOCATION_TYPE_HOST_NUMA ? vmm::HostNumaIdOrZero(d) : 0;
  const CUmemAllocationProp prop = vmm::HostProp(type, id);
  const size_t gran = Granularity(prop);
  ASSERT_GT(gran, 0u);
  Observe("granularity_minimum_bytes", static_cast<unsigned long long>(gran));
  size_t recommended = 0;
  EXPECT_CU_OK(d.cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  Observe("granularity_recommended_bytes", static_cast<unsigned long long>(recommended));
  const size_t size = granules * gran;
  Budget("mapping_bytes_cap", static_cast<double>(kMaxBytes), "bytes");
  if (size > kMaxBytes) {
    PAGELOCK_NOT_SUPPORTED(std::to_string(granules) + " granules of " + std::to_string(gran) + " bytes exceed the " +
                           std::to_string(kMaxBytes >> 20) + " MiB cap of the full tier");
  }
  vmm::Mapping m(d);
  std::string step;
  ASSERT_CU_OK(m.Create(prop, size, &step)) << step;
  ASSERT_CU_OK(m.SetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  bool host_access = false;
  if (type == CU_MEM_LOCATION_TYPE_HOST_NUMA) {
    const CUresult r = m.SetAccess(CU_MEM_LOCATION_TYPE_HOST_NUMA, id, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    EXPECT_CU_OK(r) << "host access to a HOST_NUMA allocation";
    host_access = r == CUDA_SUCCESS;
  } else {
    const CUresult r = m.SetAccess(CU_MEM_LOCATION_TYPE_HOST, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    Observe("host_access_to_a_host_allocation", CuName(r));
    host_access = r == CUDA_SUCCESS;
  }
  unsigned type_attr = 0;
  Observe("pointer_memory_type",
          CuName(d.cuPointerGetAttribute(&type_attr, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, m.va())) + " " +
              std::to_string(type_attr));
  CheckEveryByte(m, host_access, vmm::LocationName(type) + " x" + std::to_string(granules));
  EXPECT_CU_OK(m.Release());
}

INSTANTIATE_TEST_SUITE_P(
    LocationsAndSizes, VmmMappingTest,
    ::testing::Combine(::testing::Values(CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA),
                       ::testing::Values(1, 3, 17)),
    [](const auto& info) {
      return vmm::LocationName(std::get<0>(info.param)) + "_" + std::to_string(std::get<1>(info.param)) + "Granules";
    });

// A driver that ignores the node it was asked for, or cannot allocate on a node other than the
// GPU's, fails the bytes or the creation. cuMemCreate: "CUmemLocation::id must specify the NUMA
// ID of the CPU". Where move_pages can see the mapping's pages, their nodes are recorded (the
// driver maps them; the kernel may report them as not ordinary pages).
TEST_F(VmmHostTest, HostNumaAllocationOnEveryNodeHoldsEveryByte) {
  PAGELOCK_RULE("R171");
  if (!RequireLocation(CU_MEM_LOCATION_TYPE_HOST_NUMA)) return;
  std::string why;
  std::vector<int> nodes = numa::NodesWithMemory(&why);
  const std::vector<int> allowed = numa::MemsAllowed(&why);
  std::vector<int> usable;
  for (int n : nodes) {
    for (int a : allowed) {
      if (a == n) usable.push_back(n);
    }
  }
  // Without NUMA (no sysfs list): the one id the documentation gives, 0.
  if (usable.empty()) usable.push_back(vmm::HostNumaIdOrZero(d));
  Observe("numa_nodes", static_cast<unsigned long long>(usable.size()));
  for (int node : usable) {
    const std::string key = "node" + std::to_string(node);
    const CUmemAllocationProp prop = vmm::HostProp(CU_MEM_LOCATION_TYPE_HOST_NUMA, node);
    const size_t gran = Granularity(prop);
    ASSERT_GT(gran, 0u);
    vmm::Mapping m(d);
    std::string step;
    ASSERT_CU_OK(m.Create(prop, 2 * gran, &step)) << key << ": " << step;
    ASSERT_CU_OK(m.SetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)) << key;
    ASSERT_CU_OK(m.SetAccess(CU_MEM_LOCATION_TYPE_HOST_NUMA, node, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)) << key;
    CheckEveryByte(m, true, key);
    std::vector<int> pages;
    Observe(key + "_pages", numa::PageNodes(m.ptr(), m.size(), &pages, &why) ? numa::Histogram(pages) : why);
    EXPECT_CU_OK(m.Release()) << key;
  }
}

// A driver that maps with access already granted (or grants more than was asked) fails this.
// cuMemMap: "calling cuMemMap does not make the address accessible"; cuMemUnmap: "all mappings
// start with no accessibility setup". cuMemGetAccess then reports what cuMemSetAccess set: no
// access (or a documented refusal to answer, recorded), then read-only, under which kernels read
// the host's bytes, then read-write, under which they write.
TEST_F(VmmHostTest, ANewMappingHasNoAccessUntilSetAndThenExactlyWhatWasSet) {
  PAGELOCK_RULE("R173");
  if (!RequireLocation(CU_MEM_LOCATION_TYPE_HOST_NUMA)) return;
  const int id = vmm::HostNumaIdOrZero(d);
  const CUmemAllocationProp prop = vmm::HostProp(CU_MEM_LOCATION_TYPE_HOST_NUMA, id);
  const size_t gran = Granularity(prop);
  ASSERT_GT(gran, 0u);
  vmm::Mapping m(d);
  std::string step;
  ASSERT_CU_OK(m.Create(prop, gran, &step)) << step;
  unsigned long long flags = ~0ull;
  const CUresult before = m.GetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, &flags);
  EXPECT_DOCUMENTED_ONE_OF("device_access_query_before_set", before,
                           (std::vector<CUresult>{CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE}),
                           "cuMemGetAccess's documented results");
  if (before == CUDA_SUCCESS) {
    EXPECT_EQ(flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_NONE))
        << "a new mapping reports device access before cuMemSetAccess";
  }
  ASSERT_CU_OK(m.SetAccess(CU_MEM_LOCATION_TYPE_HOST_NUMA, id, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  ASSERT_CU_OK(m.SetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READ));
  flags = ~0ull;
  ASSERT_CU_OK(m.GetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, &flags));
  EXPECT_EQ(flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_READ));
  const uint32_t seed = Seed();
  streams::HostFillPatternFrom(m.ptr(), m.size(), 0, seed);
  EXPECT_EQ(DeviceCount(m.ptr(), m.size(), seed), 0u) << "a read-only device mapping read other bytes than the host's";
  ASSERT_CU_OK(m.SetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  flags = ~0ull;
  ASSERT_CU_OK(m.GetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, &flags));
  EXPECT_EQ(flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  const uint32_t seed2 = Seed();
  ASSERT_CUDA_OK(DeviceFill(m.ptr(), m.size(), seed2));
  EXPECT_EQ(streams::HostCountPattern(m.ptr(), m.size(), 0, seed2), 0u) << "the host did not see the kernel's writes";
  EXPECT_CU_OK(m.Release());
}

// The host's and the device's first touch of a mapping no one granted access to. The host's
// read runs under a SIGSEGV/SIGBUS handler, so a fault is an answer, not a crash.
sigjmp_buf g_probe_jump;
volatile sig_atomic_t g_probe_signal = 0;
void ProbeHandler(int sig) {
  g_probe_signal = sig;
  siglongjmp(g_probe_jump, 1);
}

PAGELOCK_SCENARIO(VmmAccessBeforeSetAccess) {
  report.Error("init", cudaFree(nullptr));
  const DriverApi& d = Driver();
  report.Set("driver_api", d.loaded ? "loaded" : d.error);
  if (!d.loaded) return;
  const CUmemAllocationProp prop = vmm::HostProp(CU_MEM_LOCATION_TYPE_HOST_NUMA, vmm::HostNumaIdOrZero(d));
  CUresult r = CUDA_SUCCESS;
  const size_t gran = vmm::Granularity(d, prop, &r);
  report.Cu("granularity", r);
  vmm::Mapping m(d);
  std::string step;
  r = m.Create(prop, gran, &step);
  report.Cu("create", r);
  if (r != CUDA_SUCCESS) return;
  struct sigaction sa {}, old_segv{}, old_bus{};
  sa.sa_handler = ProbeHandler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGBUS, &sa, &old_bus);
  if (sigsetjmp(g_probe_jump, 1) == 0) {
    const unsigned char v = *reinterpret_cast<volatile unsigned char*>(m.ptr());
    report.Set("host_read", "read " + std::to_string(v));
  } else {
    report.Set("host_read", SignalName(g_probe_signal));
  }
  sigaction(SIGSEGV, &old_segv, nullptr);
  sigaction(SIGBUS, &old_bus, nullptr);
  PinnedBuffer counter = PinnedBuffer::Mapped(sizeof(unsigned long long));
  report.Error("counter", counter.status());
  if (!counter) return;
  report.Error("launch", LaunchCountPatternMismatches(m.ptr(), m.size(), 1, counter.as<unsigned long long>(), 0));
  report.Error("synchronize", cudaDeviceSynchronize());
  counter.release();  // the context is poisoned: nothing more is asked of it
  m.Release();
}

// A driver that makes a mapping usable before cuMemSetAccess fails this: cuMemMap "does not
// make the address accessible", so the device's first access faults (no code is documented;
// r580's is recorded). The host's first read is recorded too (a fault, or what it read).
TEST_F(VmmHostTest, ADeviceAccessBeforeSetAccessFaults) {
  PAGELOCK_RULE("R173");
  if (!RequireLocation(CU_MEM_LOCATION_TYPE_HOST_NUMA)) return;
  ChildResult r = RunScenario("VmmAccessBeforeSetAccess");
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("create"), CuName(CUDA_SUCCESS)) << r.Describe();
  Observe("host_read_before_set_access", r.Get("host_read"));
  EXPECT_EQ(r.Get("launch"), ErrName(cudaSuccess));
  Observe("device_access_fault_code", r.Get("synchronize"));
  EXPECT_NE(r.Get("synchronize"), ErrName(cudaSuccess)) << "a kernel read a mapping no one had granted access to";
  EXPECT_NE(r.Get("synchronize"), "<missing>");
}

// A driver that frees the memory with the handle while a mapping still uses it, keeps the range
// mapped after cuMemUnmap, or cannot map the freed reservation again fails this. cuMemRelease:
// "The generic memory handle can be freed when there are still outstanding mappings made with
// this handle"; "The memory allocation will be freed when all outstanding mappings to the
// memory are unmapped"; cuMemUnmap: "the address range is converted to an address reservation
// and can be used for a future calls to cuMemMap ... as all mappings start with no
// accessibility setup".
TEST_F(VmmHostTest, AReleasedHandleKeepsItsMappingUntilUnmapWhichLeavesAReservation) {
  PAGELOCK_RULE("R174");
  if (!RequireLocation(CU_MEM_LOCATION_TYPE_HOST_NUMA)) return;
  const int id = vmm::HostNumaIdOrZero(d);
  const CUmemAllocationProp prop = vmm::HostProp(CU_MEM_LOCATION_TYPE_HOST_NUMA, id);
  const size_t gran = Granularity(prop);
  ASSERT_GT(gran, 0u);
  vmm::Mapping m(d);
  std::string step;
  ASSERT_CU_OK(m.Create(prop, 2 * gran, &step)) << step;
  ASSERT_CU_OK(m.SetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  ASSERT_CU_OK(m.SetAccess(CU_MEM_LOCATION_TYPE_HOST_NUMA, id, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  ASSERT_CU_OK(m.ReleaseHandle());
  // The mapping outlives its handle: every byte still goes both ways.
  CheckEveryByte(m, true, "after cuMemRelease of the mapped handle");
  ASSERT_CU_OK(m.Unmap());
  // The reservation takes a new allocation, which starts without access.
  CUmemGenericAllocationHandle h2 = 0;
  ASSERT_CU_OK(d.cuMemCreate(&h2, m.size(), &prop, 0));
  const CUresult remap = m.Remap(h2);
  EXPECT_CU_OK(remap) << "cuMemMap of a new allocation at the unmapped reservation";
  EXPECT_CU_OK(d.cuMemRelease(h2));  // the mapping holds the memory from here on
  if (remap != CUDA_SUCCESS) return;
  unsigned long long flags = ~0ull;
  const CUresult q = m.GetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, &flags);
  EXPECT_DOCUMENTED_ONE_OF("device_access_query_after_remap", q,
                           (std::vector<CUresult>{CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE}),
                           "cuMemGetAccess's documented results");
  if (q == CUDA_SUCCESS) {
    EXPECT_EQ(flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_NONE))
        << "a mapping made at an unmapped reservation kept the old mapping's access";
  }
  ASSERT_CU_OK(m.SetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  ASSERT_CU_OK(m.SetAccess(CU_MEM_LOCATION_TYPE_HOST_NUMA, id, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  CheckEveryByte(m, true, "a new allocation at the old reservation");
  EXPECT_CU_OK(m.Release());
}

// A driver that loses track of what it mapped fails this: cuMemRetainAllocationHandle of an
// address inside the mapping "is guaranteed to be the same handle value used to map the memory",
// its properties (cuMemGetAllocationPropertiesFromHandle) are the ones the allocation was made
// with, and "The returned handle must be released with corresponding number of calls to
// cuMemRelease".
TEST_F(VmmHostTest, TheRetainedHandleOfAMappedAddressDescribesTheHostAllocation) {
  PAGELOCK_RULE("R174");
  for (const CUmemLocationType type : {CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA}) {
    if (!vmm::DeviceUnsupported(d, type, false).empty()) continue;
    const int id = type == CU_MEM_LOCATION_TYPE_HOST_NUMA ? vmm::HostNumaIdOrZero(d) : 0;
    const CUmemAllocationProp prop = vmm::HostProp(type, id);
    const size_t gran = Granularity(prop);
    ASSERT_GT(gran, 0u);
    vmm::Mapping m(d);
    std::string step;
    ASSERT_CU_OK(m.Create(prop, gran, &step)) << step;
    CUmemGenericAllocationHandle h = 0;
    ASSERT_CU_OK(d.cuMemRetainAllocationHandle(&h, m.ptr() + gran / 2));
    EXPECT_EQ(h, m.handle()) << "the retained handle is not the one the memory was mapped with";
    CUmemAllocationProp got{};
    EXPECT_CU_OK(d.cuMemGetAllocationPropertiesFromHandle(&got, h));
    // A HOST allocation lives on some host node, and the driver may name it so: r580 answers
    // HOST_NUMA for HOST. Either is the allocation's location; which came is recorded.
    Observe("retained_location", vmm::LocationName(got.location.type) + " id " + std::to_string(got.location.id));
    if (type == CU_MEM_LOCATION_TYPE_HOST && got.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA) {
      EXPECT_GE(got.location.id, 0) << "HOST answered as HOST_NUMA with no node";
    } else {
      EXPECT_EQ(got.location.type, type) << vmm::LocationName(type);
    }
    if (type == CU_MEM_LOCATION_TYPE_HOST_NUMA) {
      EXPECT_EQ(got.location.id, id);
    }
    EXPECT_EQ(got.type, CU_MEM_ALLOCATION_TYPE_PINNED) << vmm::LocationName(type);
    EXPECT_CU_OK(d.cuMemRelease(h));
    EXPECT_CU_OK(m.Release());
    return;  // one location is enough; the first the device supports
  }
  PAGELOCK_NOT_SUPPORTED(vmm::DeviceUnsupported(d, CU_MEM_LOCATION_TYPE_HOST_NUMA, false));
}

// The documented argument errors, each by name; each failed call leaves no error behind.
class VmmErrorsTest : public VmmHostTest {
 protected:
  void SetUp() override {
    VmmHostTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!RequireLocation(CU_MEM_LOCATION_TYPE_HOST_NUMA)) return;
    id_ = vmm::HostNumaIdOrZero(d);
    prop_ = vmm::HostProp(CU_MEM_LOCATION_TYPE_HOST_NUMA, id_);
    gran_ = Granularity(prop_);
    ASSERT_GT(gran_, 0u);
  }
  // A mapped, accessible allocation of `granules` granules holding a pattern the host wrote.
  void MakeMapped(vmm::Mapping* m, size_t granules, uint32_t* seed) {
    std::string step;
    ASSERT_CU_OK(m->Create(prop_, granules * gran_, &step)) << step;
    ASSERT_CU_OK(m->SetAccess(CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    ASSERT_CU_OK(m->SetAccess(CU_MEM_LOCATION_TYPE_HOST_NUMA, id_, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    *seed = Seed();
    streams::HostFillPatternFrom(m->ptr(), m->size(), 0, *seed);
  }
  int id_ = 0;
  CUmemAllocationProp prop_{};
  size_t gran_ = 0;
};

// cuMemCreate: "The size of this allocation must be a multiple of the the value given via
// cuMemGetAllocationGranularity with the CU_MEM_ALLOC_GRANULARITY_MINIMUM flag." A driver that
// rounds the size up silently, or accepts half a granule, fails this.
TEST_F(VmmErrorsTest, CreatingASizeThatIsNotAGranularityMultipleIsInvalidValue) {
  PAGELOCK_RULE("R172");
  for (const size_t size : {gran_ / 2, gran_ + 4096, 3 * gran_ - 1}) {
    CUmemGenericAllocationHandle h = 0;
    const CUresult r = d.cuMemCreate(&h, size, &prop_, 0);
    EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, r) << size << " bytes, granularity " << gran_;
    if (r == CUDA_SUCCESS) {
      EXPECT_CU_OK(d.cuMemRelease(h));
    }
  }
}

// cuMemCreate: "HOST allocations are not IPC capable and CUmemAllocationProp::requestedHandleTypes
// must be 0, any other value will result in CUDA_ERROR_INVALID_VALUE"; "Specifying
// CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT as the CUmemLocation::type will result in
// CUDA_ERROR_INVALID_VALUE"; flags: "for future use, must be zero now".
TEST_F(VmmErrorsTest, HostWithAHandleTypeHostNumaCurrentAndFlagsAreInvalidValue) {
  PAGELOCK_RULE("R172");
  CUmemGenericAllocationHandle h = 0;
  CUmemAllocationProp host_fd = vmm::HostProp(CU_MEM_LOCATION_TYPE_HOST, 0, /*posix_fd=*/true);
  CUresult r = d.cuMemCreate(&h, gran_, &host_fd, 0);
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, r) << "a HOST allocation with a POSIX fd handle type";
  if (r == CUDA_SUCCESS) {
    EXPECT_CU_OK(d.cuMemRelease(h));
  }
  CUmemAllocationProp current = vmm::HostProp(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0);
  r = d.cuMemCreate(&h, gran_, &current, 0);
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, r) << "a HOST_NUMA_CURRENT allocation";
  if (r == CUDA_SUCCESS) {
    EXPECT_CU_OK(d.cuMemRelease(h));
  }
  r = d.cuMemCreate(&h, gran_, &prop_, 1);
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, r) << "cuMemCreate with flags 1";
  if (r == CUDA_SUCCESS) {
    EXPECT_CU_OK(d.cuMemRelease(h));
  }
  // Nothing was left behind: a valid allocation still maps and holds every byte.
  vmm::Mapping m(d);
  uint32_t seed = 0;
  MakeMapped(&m, 1, &seed);
  if (HasFatalFailure()) return;
  EXPECT_EQ(DeviceCount(m.ptr(), m.size(), seed), 0u);
}

// cuMemMap: "can only create mappings on VA range reservations that are not currently mapped".
// A driver that maps a second allocation over the first (silently swapping the pages under a
// live mapping) fails this: the second cuMemMap fails with a documented code (recorded), and
// the first mapping keeps its bytes for the device and the host.
TEST_F(VmmErrorsTest, MappingAnAlreadyMappedRangeFailsAndKeepsTheFirstMapping) {
  PAGELOCK_RULE("R172");
  vmm::Mapping m(d);
  uint32_t seed = 0;
  MakeMapped(&m, 1, &seed);
  if (HasFatalFailure()) return;
  CUmemGenericAllocationHandle h2 = 0;
  ASSERT_CU_OK(d.cuMemCreate(&h2, m.size(), &prop_, 0));
  const CUresult r = d.cuMemMap(m.va(), m.size(), 0, h2, 0);
  EXPECT_DOCUMENTED_ONE_OF("second_map_of_a_mapped_range", r,
                           (std::vector<CUresult>{CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_PERMITTED,
                                                  CUDA_ERROR_NOT_SUPPORTED}),
                           "cuMemMap's documented failures for a range that is not a free reservation");
  if (r == CUDA_SUCCESS) {
    EXPECT_CU_OK(d.cuMemUnmap(m.va(), m.size()));
  }
  EXPECT_CU_OK(d.cuMemRelease(h2));
  EXPECT_EQ(streams::HostCountPattern(m.ptr(), m.size(), 0, seed), 0u) << "the host's bytes changed";
  EXPECT_EQ(DeviceCount(m.ptr(), m.size(), seed), 0u) << "the device reads other bytes than the first mapping's";
}

// cuMemUnmap: "The range must be the entire contiguous address range that was mapped to. In
// other words, cuMemUnmap cannot unmap a sub-range". A driver that unmaps half a mapping fails
// this: the partial unmap is CUDA_ERROR_INVALID_VALUE and every byte stays reachable.
TEST_F(VmmErrorsTest, UnmappingASubRangeIsInvalidValueAndKeepsTheMapping) {
  PAGELOCK_RULE("R172");
  vmm::Mapping m(d);
  uint32_t seed = 0;
  MakeMapped(&m, 2, &seed);
  if (HasFatalFailure()) return;
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, d.cuMemUnmap(m.va(), gran_)) << "the first granule of two";
  EXPECT_CU_ERROR(CUDA_ERROR_INVALID_VALUE, d.cuMemUnmap(m.va() + gran_, gran_)) << "the second granule of two";
  EXPECT_EQ(DeviceCount(m.ptr(), m.size(), seed), 0u) << "the device lost bytes of the mapping";
  EXPECT_EQ(streams::HostCountPattern(m.ptr(), m.size(), 0, seed), 0u) << "the host lost bytes of the mapping";
}

// cuMemMap: "Both ptr, size, and offset must be a multiple of the value given via
// cuMemGetAllocationGranularity with the CU_MEM_ALLOC_GRANULARITY_MINIMUM flag." A driver that
// maps at an unaligned address or for a partial granule fails this.
TEST_F(VmmErrorsTest, MappingAtAnUnalignedAddressOrSizeIsRefused) {
  PAGELOCK_RULE("R172");
  if (gran_ <= 4096) PAGELOCK_NOT_SUPPORTED("granularity " + std::to_string(gran_) + " (no unaligned page inside it)");
  CUmemGenericAllocationHandle h = 0;
  ASSERT_CU_OK(d.cuMemCreate(&h, 2 * gran_, &prop_, 0));
  CUdeviceptr va = 0;
  const CUresult reserve = d.cuMemAddressReserve(&va, 3 * gran_, gran_, 0, 0);
  EXPECT_CU_OK(reserve);
  if (reserve == CUDA_SUCCESS) {
    // The page names no code for misalignment; of cuMemMap's documented codes INVALID_VALUE
    // and NOT_SUPPORTED (r580's answer for host memory) both say "refused"; which came is recorded.
    const auto refused = [&](CUresult r, const std::string& key) {
      EXPECT_DOCUMENTED_ONE_OF(key, r, (std::vector<CUresult>{CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_SUPPORTED}),
                               "cuMemMap's error list (no code named for misalignment)");
    };
    CUresult r = d.cuMemMap(va + 4096, gran_, 0, h, 0);
    refused(r, "unaligned_map_address");
    if (r == CUDA_SUCCESS) {
      EXPECT_CU_OK(d.cuMemUnmap(va + 4096, gran_));
    }
    r = d.cuMemMap(va, gran_ + 4096, 0, h, 0);
    refused(r, "unaligned_map_size");
    if (r == CUDA_SUCCESS) {
      EXPECT_CU_OK(d.cuMemUnmap(va, gran_ + 4096));
    }
    EXPECT_CU_OK(d.cuMemAddressFree(va, 3 * gran_));
  }
  EXPECT_CU_OK(d.cuMemRelease(h));
}

#else  // !PAGELOCK_HOST_VMM: every case says why.

TEST_F(VmmHostTest, HostVmmNeedsCuda13Headers) {
  PAGELOCK_RULE("R171");
  PAGELOCK_NOT_SUPPORTED(vmm::HeaderUnsupported());
}

#endif  // PAGELOCK_HOST_VMM

}  // namespace
}  // namespace pagelock
