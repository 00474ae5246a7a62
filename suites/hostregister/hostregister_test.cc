// cudaHostRegister / cudaHostUnregister: every valid flag combination on every kind of host
// memory, overlap and misuse errors, read-only registrations and IoMemory.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/flags.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/mapping.h"
#include "fixtures/outcome.h"
#include "fixtures/resources.h"
#include "fixtures/settings.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{1} << 20;
constexpr unsigned kP = cudaHostRegisterPortable, kM = cudaHostRegisterMapped,
                   kRO = cudaHostRegisterReadOnly;

// Device reads of the host's bytes, then (unless read-only) a device write the host must see.
void ExpectRoundTrip(void* host, size_t n, bool device_may_write, uint32_t seed) {
  void* dev = nullptr;
  ASSERT_CUDA_OK(cudaHostGetDevicePointer(&dev, host, 0));
  unsigned long long* bad = nullptr;
  ASSERT_CUDA_OK(cudaMalloc(&bad, sizeof *bad));
  auto own_bad = DeviceBuffer::Adopt(bad);
  ASSERT_CUDA_OK(cudaMemset(bad, 0, sizeof *bad));
  ASSERT_CUDA_OK(LaunchCountPatternMismatches(dev, n, seed, bad));
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  unsigned long long device_bad = ~0ull;
  ASSERT_CUDA_OK(cudaMemcpy(&device_bad, bad, sizeof device_bad, cudaMemcpyDefault));
  EXPECT_EQ(device_bad, 0u) << "bytes the device read differently from what the host wrote";
  EXPECT_CUDA_OK(own_bad.Free());
  if (device_may_write) {

    ASSERT_CUDA_OK(LaunchInvertBytes(dev, n));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(HostCountPatternMismatches(host, n, seed, 0xff), 0u);
  }
}

class HostRegisterTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  }
};

// The support gate itself (R27): only meaningful where the device says registration is unsupported.
class HostRegisterGateTest : public GpuTest {};

// R27: without the attribute a registration fails with one of cudaHostRegister's listed codes
// (ExpectRegistrationRefusedWithoutSupport says which and why).
TEST_F(HostRegisterGateTest, RegistrationWithoutSupportFails) {
  PAGELOCK_RULE("R27");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 0));
  std::vector<char> buf(kSize);
  ExpectRegistrationRefusedWithoutSupport(cudaHostRegister(buf.data(), buf.size(), 0), buf.data());
}

// On ATS systems (attr 100 = 1) registration only populates pages and pinned allocations may not
// pin (R12, R46): both still succeed and the memory is device-accessible.
TEST_F(HostRegisterGateTest, AtsSystemsRegisterAndAllocateWithoutPinning) {
  PAGELOCK_RULE("R12,R46,R84");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrPageableMemoryAccessUsesHostPageTables, 1));
  EXPECT_EQ(device().Attr(cudaDevAttrHostNativeAtomicSupported), 1) << "R84";
  std::vector<unsigned char> buf(kSize);
  HostFillPattern(buf.data(), buf.size(), 3);
  ASSERT_CUDA_OK(cudaHostRegister(buf.data(), buf.size(), 0));
  ExpectRoundTrip(buf.data(), buf.size(), true, 3);
  EXPECT_CUDA_OK(cudaHostUnregister(buf.data()));
  // The allocation half of the rule: a pinned allocation succeeds and is device-accessible too.
  void* alloc = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&alloc, kSize, cudaHostAllocMapped));
  HostFillPattern(alloc, kSize, 4);
  ExpectRoundTrip(alloc, kSize, true, 4);
  EXPECT_CUDA_OK(cudaFreeHost(alloc));
}

class HostRegisterMatrixTest
    : public HostRegisterTest,
      public ::testing::WithParamInterface<std::tuple<HostKind, unsigned>> {};

TEST_P(HostRegisterMatrixTest, RegisteredMemoryRoundTripsThroughTheDevicePointer) {
  PAGELOCK_RULE("R26,R28,R29,R33,R42,R45");
  const auto [kind, flags] = GetParam();
  if (flags & kRO) {
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterReadOnlySupported, 1));
  }
  auto region = HostRegion::Make(kind, kSize);
  if (!region->data()) {
    PAGELOCK_NOT_SUPPORTED(region->unavailable());
  }
  const uint32_t seed = static_cast<uint32_t>(CaseSeed()) ^ flags;
  HostFillPattern(region->data(), region->size(), seed);
  ASSERT_CUDA_OK(cudaHostRegister(region->data(), region->size(), flags));
  cudaPointerAttributes a{};
  EXPECT_CUDA_OK(cudaPointerGetAttributes(&a, region->data()));
  EXPECT_EQ(a.type, cudaMemoryTypeHost);
  void* dev = nullptr;
  EXPECT_CUDA_OK(cudaHostGetDevicePointer(&dev, region->data(), 0));
  if (RequireAttrOnEveryDevice(cudaDevAttrCanUseHostPointerForRegisteredMem, 1).met) {
    EXPECT_EQ(dev, region->data()) << "R45: attr 91 = 1 on every visible device means one address for host and device";
  } else if (RequireAttrOnSomeDevice(cudaDevAttrCanUseHostPointerForRegisteredMem, 0).met) {
    EXPECT_NE(dev, region->data()) << "R45: a visible device with attr 91 = 0 means a distinct device address";
  }
  ExpectRoundTrip(region->data(), region->size(), (flags & kRO) == 0, seed);
  EXPECT_CUDA_OK(cudaHostUnregister(region->data()));
  a = cudaPointerAttributes{};
  EXPECT_CUDA_OK(cudaPointerGetAttributes(&a, region->data()));
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered) << "R33: unregistered memory is pageable again";
  if (RequireNoPageableMemoryAccess().met) {  // R52's gate: on an HMM/ATS host it is undocumented
    EXPECT_CUDA_ERROR(cudaErrorInvalidValue, cudaHostGetDevicePointer(&dev, region->data(), 0));
  } else {
    Observe("device_pointer_after_unregister", ErrName(cudaHostGetDevicePointer(&dev, region->data(), 0)));
    (void)cudaGetLastError();
  }
}

INSTANTIATE_TEST_SUITE_P(
    KindsAndFlags, HostRegisterMatrixTest,
    ::testing::Combine(::testing::ValuesIn(RegistrableKinds()),
                       ::testing::Values(0u, kP, kM, kP | kM, kRO, kP | kRO, kM | kRO, kP | kM | kRO)),
    [](const auto& info) {
      return SourceName(std::get<0>(info.param)) + "_" + HostRegisterFlagsName(std::get<1>(info.param));
    });

TEST_F(HostRegisterTest, StackMemoryRoundTrips) {
  PAGELOCK_RULE("R26,R29");
  alignas(64) unsigned char stack[3 * 4096 + 123];
  HostFillPattern(stack, sizeof stack, 77);
  ASSERT_CUDA_OK(cudaHostRegister(stack, sizeof stack, 0));
  ExpectRoundTrip(stack, sizeof stack, true, 77);
  EXPECT_CUDA_OK(cudaHostUnregister(stack));
}

// R110. A driver that gives an unaligned registration the alias of the page it starts in, or the
// alias plus a byte (fault devptr_off_by_one), puts the device's bytes over the neighbours.
TEST_F(HostRegisterTest, DeviceWritesToAnUnalignedSubRangeLeaveTheBytesAroundItUnchanged) {
  PAGELOCK_RULE("R110");
  // cudaHostRegisterMapped: "The device pointer to the memory may be obtained by calling
  // cudaHostGetDevicePointer()", which needs a device that can map host memory (R55).
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrCanMapHostMemory, 1));
  const size_t page = PageSize(), span = 4 * page;
  auto region = HostRegion::Make(HostKind::kRegisteredMalloc, span);
  if (!region->data()) {
    PAGELOCK_NOT_SUPPORTED(region->unavailable());
  }
  auto* base = static_cast<unsigned char*>(region->data());
  // One byte into the second page to three bytes into the fourth: both end pages hold bytes
  // outside the range.
  const size_t offset = page + 1, length = 2 * page + 2;
  const uint32_t seed = static_cast<uint32_t>(CaseSeed()), guard = seed ^ 0x5a5a5a5au;
  // Every byte of the span, the guard bytes checked after the device write.
  HostFillPattern(base, span, guard);
  // "Page-locks the memory range specified by ptr and size and maps it for the device(s)".
  ASSERT_CUDA_OK(cudaHostRegister(base + offset, length, cudaHostRegisterMapped));
  auto own_reg = HostRegistration::Adopt(base + offset, length);
  void* dev = nullptr;
  ASSERT_CUDA_OK(cudaHostGetDevicePointer(&dev, base + offset, 0));
  ASSERT_CUDA_OK(LaunchFillPattern(dev, length, seed));
  ASSERT_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(HostCountPatternMismatches(base + offset, length, seed), 0u)
      << "bytes of the range the device did not write at their own offset";
  size_t outside = HostCountPatternMismatches(base, offset, guard);
  for (size_t i = offset + length; i < span; ++i) outside += base[i] != PatternByte(i, guard);
  EXPECT_EQ(outside, 0u) << "bytes outside the range, on its first and last pages, changed";
  EXPECT_CUDA_OK(own_reg.Free());
}

TEST_F(HostRegisterTest, ReadOnlyMappingRegistersWithTheReadOnlyFlag) {
  PAGELOCK_RULE("R42");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterReadOnlySupported, 1));
  auto region = HostRegion::Make(HostKind::kRegisteredReadOnlyMmap, kSize);
  ASSERT_NE(region->data(), nullptr) << region->unavailable();
  ASSERT_CUDA_OK(cudaHostRegister(region->data(), region->size(), kRO));
  ExpectRoundTrip(region->data(), region->size(), false, kReadOnlyPatternSeed);
  EXPECT_CUDA_OK(cudaHostUnregister(region->data()));
}

TEST_F(HostRegisterTest, ReadOnlyMappingWithoutTheReadOnlyFlagFails) {
  PAGELOCK_RULE("R43");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrPageableMemoryAccessUsesHostPageTables, 0));
  auto region = HostRegion::Make(HostKind::kRegisteredReadOnlyMmap, kSize);
  ASSERT_NE(region->data(), nullptr) << region->unavailable();
  // 13.0 cudaHostRegister: ReadOnly "is required in order to register memory mapped to the CPU
  // as read-only"; no code is given, so any failure passes and the code is recorded.
  const cudaError_t e = cudaHostRegister(region->data(), region->size(), 0);
  (void)cudaGetLastError();
  Observe("register_read_only_mapping_code", ErrName(e));
  EXPECT_NE(e, cudaSuccess) << "a read-only mapping registered without cudaHostRegisterReadOnly";
  if (e == cudaSuccess) {
    EXPECT_CUDA_OK(cudaHostUnregister(region->data()));
  }
}

TEST_F(HostRegisterTest, ReadOnlyFlagWithoutSupportReturnsNotSupported) {
  PAGELOCK_RULE("R42");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterReadOnlySupported, 0));
  std::vector<char> buf(kSize);
  EXPECT_CUDA_ERROR(cudaErrorNotSupported, cudaHostRegister(buf.data(), buf.size(), kRO));
}

// Exact re-registration and every kind of overlap with an existing registration (R30, R31).
class HostRegisterOverlapTest : public HostRegisterTest,
                                public ::testing::WithParamInterface<std::tuple<const char*, long, long>> {};

TEST_P(HostRegisterOverlapTest, OverlappingRegistrationReturnsAlreadyRegistered) {
  PAGELOCK_RULE("R30,R31");
  const auto [name, start_pages, end_pages] = GetParam();
  const size_t page = PageSize();
  auto region = HostRegion::Make(HostKind::kRegisteredMmap, 16 * page);
  char* base = static_cast<char*>(region->data());
  char* first = base + 4 * page;  // the existing registration covers pages [4, 12)
  ASSERT_CUDA_OK(cudaHostRegister(first, 8 * page, 0));
  char* second = first + start_pages * static_cast<long>(page);
  const size_t len = static_cast<size_t>(end_pages - start_pages) * page;
  EXPECT_CUDA_ERROR(cudaErrorHostMemoryAlreadyRegistered, cudaHostRegister(second, len, 0))
      << name;
  EXPECT_CUDA_OK(cudaHostUnregister(first));
}

INSTANTIATE_TEST_SUITE_P(
    Overlaps, HostRegisterOverlapTest,
    ::testing::Values(std::make_tuple("exact", 0L, 8L), std::make_tuple("head", -2L, 2L),
                      std::make_tuple("tail", 6L, 10L), std::make_tuple("interior", 2L, 4L),
                      std::make_tuple("enclosing", -2L, 10L), std::make_tuple("first_page", 0L, 1L),
                      std::make_tuple("last_page", 7L, 8L)),
    [](const auto& info) { return std::string(std::get<0>(info.param)); });

TEST_F(HostRegisterTest, DisjointBytesOfOnePageCanBeRegisteredTwice) {
  PAGELOCK_RULE("R32");
  // Whether overlap is judged per byte or per page is not documented (R32 was seen on one
  // driver): the second registration's answer is recorded, either is accepted, and only what
  // follows from it is asserted (a registration that succeeded unregisters).
  auto region = HostRegion::Make(HostKind::kRegisteredMmap, PageSize());
  char* p = static_cast<char*>(region->data());
  ASSERT_CUDA_OK(cudaHostRegister(p, 256, 0));
  const cudaError_t second = cudaHostRegister(p + 1024, 256, 0);
  EXPECT_DOCUMENTED_ONE_OF("second_registration_on_the_page", second,
                           (std::vector<cudaError_t>{cudaSuccess, cudaErrorHostMemoryAlreadyRegistered}),
                           "per-byte or per-page overlap: undocumented");
  if (second == cudaSuccess) {
    EXPECT_CUDA_OK(cudaHostUnregister(p + 1024));
  }
  EXPECT_CUDA_OK(cudaHostUnregister(p));
}

// Linux >= 6.5 refuses writable long-term pins of file-backed pages that need dirty tracking
// (files on disk filesystems; tmpfs/shmem are exempt), so the driver cannot pin them.
TEST_F(HostRegisterTest, WritableDiskFileMappingFollowsTheKernelPinningRule) {
  PAGELOCK_RULE("P02");
  auto region = HostRegion::Make(HostKind::kRegisteredDiskFile, kSize);
  if (!region->data()) {
    PAGELOCK_NOT_SUPPORTED(region->unavailable());
  }
  const bool refused = KernelRefusesWritableFilePins();
  Observe("kernel_refuses_writable_file_pins", refused);
  EXPECT_CUDA_ERROR(refused ? cudaErrorInvalidValue : cudaSuccess,
                    cudaHostRegister(region->data(), region->size(), 0));
  if (!refused) {
    EXPECT_CUDA_OK(cudaHostUnregister(region->data()));
  }
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterReadOnlySupported, 1));
  EXPECT_CUDA_OK(cudaHostRegister(region->data(), region->size(), kRO))
      << "read-only pins of file pages are allowed";
  EXPECT_CUDA_OK(cudaHostUnregister(region->data()));
}

TEST_F(HostRegisterTest, UnregisteringAnInteriorPointerReturnsInvalidValue) {
  PAGELOCK_RULE("R34");
  std::vector<char> buf(kSize);
  ASSERT_CUDA_OK(cudaHostRegister(buf.data(), buf.size(), 0));
  EXPECT_CUDA_ERROR(cudaErrorInvalidValue, cudaHostUnregister(buf.data() + 4096));
  EXPECT_CUDA_OK(cudaHostUnregister(buf.data())) << "the rejected call must not unregister";
}

TEST_F(HostRegisterTest, UnregisteringNeverRegisteredMemoryReturnsNotRegistered) {
  PAGELOCK_RULE("R35");
  std::vector<char> buf(kSize);
  EXPECT_CUDA_ERROR(cudaErrorHostMemoryNotRegistered, cudaHostUnregister(buf.data()));
}

TEST_F(HostRegisterTest, UnregisteringTwiceReturnsNotRegistered) {
  PAGELOCK_RULE("R36");
  std::vector<char> buf(kSize);
  ASSERT_CUDA_OK(cudaHostRegister(buf.data(), buf.size(), 0));
  EXPECT_CUDA_OK(cudaHostUnregister(buf.data()));
  EXPECT_CUDA_ERROR(cudaErrorHostMemoryNotRegistered, cudaHostUnregister(buf.data()));
}

TEST_F(HostRegisterTest, UnregisteringNullReturnsInvalidValue) {
  PAGELOCK_RULE("R37");
  EXPECT_CUDA_ERROR(cudaErrorInvalidValue, cudaHostUnregister(nullptr));
}

TEST_F(HostRegisterTest, UnregisteringHostAllocMemoryReturnsInvalidValue) {
  PAGELOCK_RULE("R38");
  void* p = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&p, kSize, 0));
  // 713 is documented as "does not correspond to any currently registered memory region", which
  // cudaHostAlloc memory does not; r580 answers 1. Either passes; the answer is recorded.
  EXPECT_DOCUMENTED_ONE_OF("unregister_host_alloc_code", cudaHostUnregister(p),
                           (std::vector<cudaError_t>{cudaErrorInvalidValue, cudaErrorHostMemoryNotRegistered}),
                           "13.0 cudaHostUnregister and the 713 enum text");
  EXPECT_CUDA_OK(cudaFreeHost(p));
}

TEST_F(HostRegisterTest, RegisteringHostAllocMemoryReturnsInvalidValue) {
  PAGELOCK_RULE("R41");
  void* p = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&p, kSize, 0));
  // 712 is documented as "the memory range passed to cudaHostRegister() has already been
  // registered", which page-locked memory arguably is; r580 answers 1. Either passes, recorded.
  const cudaError_t e = cudaHostRegister(p, kSize, 0);
  EXPECT_DOCUMENTED_ONE_OF("register_host_alloc_code", e,
                           (std::vector<cudaError_t>{cudaErrorInvalidValue, cudaErrorHostMemoryAlreadyRegistered}),
                           "13.0 cudaHostRegister and the 712 enum text");
  if (e == cudaSuccess) {
    EXPECT_CUDA_OK(cudaHostUnregister(p));
  }
  EXPECT_CUDA_OK(cudaFreeHost(p));
}

// The documentation says cudaHostGetFlags fails outside cudaHostAlloc memory; r580 succeeds on
// registered memory (expectations/nvidia-h200.txt, docs/platforms/nvidia-h200.md). What it returns is
// recorded so the deviation can be followed across drivers.
TEST_F(HostRegisterTest, GetFlagsOfRegisteredMemoryReturnsInvalidValue) {
  PAGELOCK_RULE("R58");
  std::vector<char> buf(kSize);
  ASSERT_CUDA_OK(cudaHostRegister(buf.data(), buf.size(), cudaHostRegisterMapped));
  unsigned flags = 0xdeadbeef;
  const cudaError_t e = cudaHostGetFlags(&flags, buf.data());
  Observe("host_get_flags_result", cudaGetErrorName(e));
  Observe("host_get_flags_value", flags);
  EXPECT_CUDA_ERROR(cudaErrorInvalidValue, e) << "cudaHostGetFlags on memory from cudaHostRegister";
  EXPECT_CUDA_OK(cudaHostUnregister(buf.data()));
}

// Freeing with the wrong deallocator can corrupt allocator state: each runs in a fresh process.
PAGELOCK_SCENARIO(WrongDeallocators) {
  std::vector<char> buf(kSize);
  report.Error("register", cudaHostRegister(buf.data(), buf.size(), 0));
  report.Error("free_host_registered", cudaFreeHost(buf.data()));
  report.Error("unregister_after", cudaHostUnregister(buf.data()));
  void* d = nullptr;
  report.Error("malloc", cudaMalloc(&d, kSize));
  report.Error("free_host_device", cudaFreeHost(d));
  report.Error("free_device", cudaFree(d));
  void* p = nullptr;
  report.Error("host_alloc", cudaHostAlloc(&p, kSize, 0));
  report.Error("cuda_free_pinned", cudaFree(p));
  report.Error("free_host_after", cudaFreeHost(p));
}

TEST_F(HostRegisterTest, FreeHostOfRegisteredOrDeviceMemoryReturnsInvalidValue) {
  PAGELOCK_RULE("R24");
  const ChildResult& r = SharedScenario("WrongDeallocators");
  ASSERT_CHILD_COMPLETED(r);
  EXPECT_EQ(r.Get("free_host_registered"), ErrName(cudaErrorInvalidValue));
  EXPECT_EQ(r.Get("unregister_after"), ErrName(cudaSuccess)) << "the rejected free must not unregister";
  EXPECT_EQ(r.Get("free_host_device"), ErrName(cudaErrorInvalidValue));
  EXPECT_EQ(r.Get("free_device"), ErrName(cudaSuccess));
}

TEST_F(HostRegisterTest, CudaFreeOfPinnedMemoryReturnsInvalidValue) {
  PAGELOCK_RULE("R25,R88");
  const ChildResult& r = SharedScenario("WrongDeallocators");
  ASSERT_CHILD_COMPLETED(r);
  EXPECT_EQ(r.Get("cuda_free_pinned"), ErrName(cudaErrorInvalidValue))
      << "R88: not the deprecated cudaErrorInvalidDevicePointer";
  EXPECT_EQ(r.Get("free_host_after"), ErrName(cudaSuccess));
}

TEST_F(HostRegisterTest, RegisteringDeviceMemoryReturnsInvalidValue) {
  PAGELOCK_RULE("R40");
  void* d = nullptr;
  ASSERT_CUDA_OK(cudaMalloc(&d, kSize));
  EXPECT_CUDA_ERROR(cudaErrorInvalidValue, cudaHostRegister(d, kSize, 0));
  EXPECT_CUDA_OK(cudaFree(d));
}

TEST_F(HostRegisterTest, NullOrZeroSizeReturnsInvalidValue) {
  PAGELOCK_RULE("R39");
  std::vector<char> buf(kSize);
  EXPECT_CUDA_ERROR(cudaErrorInvalidValue, cudaHostRegister(nullptr, kSize, 0));
  EXPECT_CUDA_ERROR(cudaErrorInvalidValue, cudaHostRegister(buf.data(), 0, 0));
}

class HostRegisterUnknownFlagTest : public HostRegisterTest,
                                    public ::testing::WithParamInterface<unsigned> {};

TEST_P(HostRegisterUnknownFlagTest, UnknownFlagBitsReturnInvalidValue) {
  PAGELOCK_RULE("R26");
  std::vector<char> buf(kSize);
  // An inference, not a quote: 13.0 cudaHostRegister names no code for an undefined bit. Any
  // failure passes; the code is recorded.
  const cudaError_t e = cudaHostRegister(buf.data(), buf.size(), GetParam());
  (void)cudaGetLastError();
  Observe("unknown_bit_code", ErrName(e));
  EXPECT_NE(e, cudaSuccess) << "cudaHostRegister accepted undefined flag bits " << GetParam()
                            << " (inference: the flags parameter defines no such bit)";
  if (e == cudaSuccess) {
    EXPECT_CUDA_OK(cudaHostUnregister(buf.data()));
  }
}

INSTANTIATE_TEST_SUITE_P(Bits, HostRegisterUnknownFlagTest,
                         ::testing::Values(0x10u, 0x80000000u, 0x10u | kM),
                         [](const auto& info) { return HostRegisterFlagsName(info.param); });

TEST_F(HostRegisterTest, IoMemoryFlagOnOrdinaryMemoryIsRejected) {
  PAGELOCK_RULE("R44");
  auto region = HostRegion::Make(HostKind::kRegisteredMmap, kSize);
  // The flag's text (13.0 CU_MEMHOSTREGISTER_IOMEMORY): "It may return CUDA_ERROR_NOT_PERMITTED
  // if run as an unprivileged user, CUDA_ERROR_NOT_SUPPORTED on older Linux kernel versions";
  // r580 answers InvalidValue for ordinary RAM, as root and not. Any of the three passes.
  const cudaError_t e = cudaHostRegister(region->data(), region->size(), cudaHostRegisterIoMemory);
  EXPECT_DOCUMENTED_ONE_OF("io_memory_on_ram_code", e,
                           (std::vector<cudaError_t>{cudaErrorInvalidValue, cudaErrorNotPermitted,
                                                     cudaErrorNotSupported}),
                           "13.0 CU_MEMHOSTREGISTER_IOMEMORY");
  if (e == cudaSuccess) {
    EXPECT_CUDA_OK(cudaHostUnregister(region->data()));
  }
}

PAGELOCK_SCENARIO(RegisterPciBar) {
  const std::string path = ScenarioArg();
  int fd = open(path.c_str(), O_RDWR | O_SYNC);
  const off_t len = fd >= 0 ? lseek(fd, 0, SEEK_END) : 0;
  void* p = fd >= 0 && len > 0
                ? mmap(nullptr, static_cast<size_t>(len), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                : MAP_FAILED;
  report.Set("mmap", p == MAP_FAILED ? "failed" : "ok");
  if (p == MAP_FAILED) return;
  Mapping bar = Mapping::Adopt(p, static_cast<size_t>(len));
  report.Error("register", cudaHostRegister(p, static_cast<size_t>(len),
                                            cudaHostRegisterIoMemory | cudaHostRegisterMapped));
  report.Error("unregister", cudaHostUnregister(p));
  bar = Mapping();  // unmapped before the file is closed, as it was
  close(fd);
}

// Registering a real MMIO range (a PCI BAR) touches another device, so it only runs on a range
// the operator designates: PAGELOCK_IOMEMORY_RESOURCE=/sys/bus/pci/devices/<bdf>/resource<N>.
TEST_F(HostRegisterTest, IoMemoryFlagOnADesignatedPciBarSucceeds) {
  PAGELOCK_RULE("R44");
  const char* resource = settings::Text("PAGELOCK_IOMEMORY_RESOURCE");
  if (!resource || !*resource) {
    PAGELOCK_NOT_SUPPORTED("PAGELOCK_IOMEMORY_RESOURCE unset (no MMIO range designated)");
  }
  ChildResult r = RunScenario("RegisterPciBar", 60, {ScenarioArgEnv(resource)});
  ASSERT_CHILD_COMPLETED(r);
  if (r.Get("mmap") != "ok") {
    PAGELOCK_NOT_SUPPORTED("mmap " + std::string(resource) + ": " + r.Get("mmap"));
  }
  EXPECT_EQ(r.Get("register"), ErrName(cudaSuccess));
  EXPECT_EQ(r.Get("unregister"), ErrName(cudaSuccess));
}


// A GPU write into a read-only registration must fault; the fault is sticky, so a child runs it.
PAGELOCK_SCENARIO(WriteToReadOnlyRegistration) {
  auto region = HostRegion::Make(HostKind::kRegisteredMmap, kSize);
  report.Error("register", cudaHostRegister(region->data(), region->size(), kRO));
  void* dev = nullptr;
  report.Error("device_pointer", cudaHostGetDevicePointer(&dev, region->data(), 0));
  report.Error("launch", LaunchInvertBytes(dev, region->size()));
  report.Error("synchronize", cudaDeviceSynchronize());
  const auto* bytes = static_cast<const unsigned char*>(region->data());
  long long changed = 0;
  for (size_t i = 0; i < region->size(); ++i) changed += bytes[i] != 0;  // mmap starts zeroed
  report.Set("host_bytes_changed", changed);
}

TEST_F(HostRegisterTest, GpuWriteToReadOnlyRegistrationFaults) {
  PAGELOCK_RULE("R42");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterReadOnlySupported, 1));
  ChildResult r = RunScenario("WriteToReadOnlyRegistration");
  ASSERT_CHILD_COMPLETED(r);
  EXPECT_EQ(r.Get("register"), ErrName(cudaSuccess));
  EXPECT_EQ(r.Get("launch"), ErrName(cudaSuccess));
  // The driver enum says such writes "are considered invalid accesses and thus return error";
  // no code is given (r580: cudaErrorIllegalAddress). Any error passes; the code is recorded.
  Observe("write_fault_code", r.Get("synchronize"));
  EXPECT_NE(r.Get("synchronize"), ErrName(cudaSuccess)) << "a GPU write into a read-only registration completed";
  EXPECT_NE(r.Get("synchronize"), "<missing>");
  EXPECT_EQ(r.Get("host_bytes_changed"), "0");
}

}  // namespace
}  // namespace pagelock
