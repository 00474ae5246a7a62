// R53 over sizes and boundaries: the device alias of an interior byte of mapped page-locked host
// memory is the alias of the base plus the same offset, for every kind of such memory
// (cudaHostAlloc Mapped, Mapped|Portable, Mapped|WriteCombined, cudaMallocHost, cudaHostRegister
// of heap, anonymous mmap, a memfd file mapping and a 2 MiB hugetlb mapping) and every size class
// (one page, 64 KiB + a page, 2 MiB + a page, 6 MiB + 12345 bytes), at offsets on both sides of
// the boundaries a driver's translation could depend on: a page, 64 KiB, 2 MiB (a huge page), and
// the 64 KiB and 2 MiB boundaries of the host address and of the alias themselves.
//
// 13.0 cudaHostGetDevicePointer: "Passes back the device pointer corresponding to the mapped,
// pinned host buffer allocated by cudaHostAlloc() or registered by cudaHostRegister()". A buffer
// is one range of bytes: the pointer "corresponding to" its byte at offset o is the base's alias
// plus o. cuMemHostGetDevicePointer ("Passes back the device pointer pdptr corresponding to the
// mapped, pinned host buffer p allocated by cuMemHostAlloc") answers the same of the driver's own
// base alias, and cudaPointerGetAttributes names "The address which may be dereferenced on the
// current device to access the memory" (R96: the byte's own device pointer).
//
// The equality alone is arithmetic; the device then proves the alias reaches that byte: a kernel
// reads a window at the alias returned for the interior byte and finds the bytes the host wrote
// there, and a kernel writing through it changes exactly those host bytes (a guard on each side
// unchanged).
//
// Wrong drivers this family fails that
// DevicePointerTest.RegisteredInteriorPointersAndLastByteMapToBasePlusOffset (one 1 MiB heap
// registration, offsets 1, 4095, size/3, size-1, no device access) lets pass:
// - the offset taken modulo 2 MiB (a huge-page granule): the alias of a byte 2 MiB or more in is
//   short by 2 MiB (fault registered_devptr_offset_wraps_at_2mib; offsets 2MiB, 2MiB+1,
//   4MiB+4097 and the last bytes of the two larger classes);
// - the offset rounded down to a page or a granule only past such a boundary, or the alias of the
//   base for interior bytes past the first 2 MiB (2MiB-1 and 2MiB answer one alias);
// - any of these only for the kinds the small case never makes: cudaHostAlloc (write-combined or
//   not), cudaMallocHost, anonymous mmap, a file mapping, huge pages;
// - translation in granules of the address rather than the offset (the next 64 KiB and 2 MiB
//   boundaries of the host address and the alias, both sides);
// - a repeat query of the same byte answered wrongly (the runtime's query, then the driver's:
//   fault devptr_requery_offset_doubled), and cudaPointerGetAttributes a page off (fault
//   attributes_device_pointer_disagrees);
// - arithmetic right but the device mapping past a boundary reaching another host page or none
//   (the kernel's read finds other bytes, its write lands elsewhere or faults).
// The alias of the base for every interior byte (fault devptr_ignores_offset) fails here too.
// Not reached: an offset taken modulo 1 GiB (buffers stay under 16 MiB for the full tier's time
// budget; the sizes suite's past-4-GiB cases go that far).
// Rule ids refer to suites/rules.tsv (R53, R96).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/host_kinds.h"
#include "fixtures/host_memory.h"
#include "fixtures/kind_buffer.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;

// The kinds of mapped page-locked host memory whose alias is queried: cudaHostAlloc Mapped,
// Mapped|Portable and Mapped|WriteCombined, cudaMallocHost (mapped through unified addressing,
// cudaDevAttrUnifiedAddressing=1), and cudaHostRegister(Mapped) of page-aligned heap, anonymous
// mmap and a MAP_SHARED memfd (shmem file) mapping, each with a page of it unregistered on each
// side, and of a MAP_HUGETLB mapping, registered from its (huge-page aligned) start.
const std::vector<HostKind>& AliasKinds() {
  static const std::vector<HostKind> v = {
      HostKind::kHostAllocMapped,    HostKind::kHostAllocPortableMapped, HostKind::kHostAllocMappedWriteCombined,
      HostKind::kMallocHost,         HostKind::kRegisteredMalloc,        HostKind::kRegisteredMmap,
      HostKind::kRegisteredMemfd,    HostKind::kRegisteredHugeTlb};
  return v;
}

// The kinds' names in this family's case ids, which predate the kit's names.
std::string AliasKindName(HostKind k) {
  static const Spelling<HostKind> kCaseName(HostKindName, {{HostKind::kHostAllocPortableMapped, "HostAllocMappedPortable"},
                                                           {HostKind::kRegisteredMalloc, "RegisteredHeap"},
                                                           {HostKind::kRegisteredMemfd, "RegisteredFileMapping"}});
  return kCaseName(k);
}

// Size classes: one page, a page past 64 KiB, a page past 2 MiB, and 6 MiB + 12345 (no page
// multiple). All well under 16 MiB, for the full tier's time budget; a hugetlb buffer of the
// largest class takes 4 huge pages.
enum class SizeClass { kOnePage, k64KiBPlusPage, k2MiBPlusPage, k6MiBPlus12345 };

const std::vector<SizeClass>& AllSizeClasses() {
  static const std::vector<SizeClass> v = {SizeClass::kOnePage, SizeClass::k64KiBPlusPage,
                                           SizeClass::k2MiBPlusPage, SizeClass::k6MiBPlus12345};
  return v;
}

std::string SizeClassName(SizeClass s) {
  switch (s) {
    case SizeClass::kOnePage: return "OnePage";
    case SizeClass::k64KiBPlusPage: return "64KiBPlusPage";
    case SizeClass::k2MiBPlusPage: return "2MiBPlusPage";
    case SizeClass::k6MiBPlus12345: return "6MiBPlus12345";
  }
  return "Unknown";
}

size_t SizeClassBytes(SizeClass s) {
  switch (s) {
    case SizeClass::kOnePage: return PageSize();
    case SizeClass::k64KiBPlusPage: return 64 * kKiB + PageSize();
    case SizeClass::k2MiBPlusPage: return 2 * kMiB + PageSize();
    case SizeClass::k6MiBPlus12345: return 6 * kMiB + 12345;
  }
  return PageSize();
}

struct Subject {
  HostKind kind;
  SizeClass size;
};

std::vector<Subject> Subjects() {
  std::vector<Subject> v;
  for (HostKind k : AliasKinds()) {
    for (SizeClass s : AllSizeClasses()) v.push_back(Subject{k, s});
  }
  return v;
}

std::string SubjectName(const Subject& s) { return AliasKindName(s.kind) + "_" + SizeClassName(s.size); }
void PrintTo(const Subject& s, std::ostream* os) { *os << SubjectName(s); }

// The buffer under test, released at the end of scope (a failing release fails the case):
// registered Mapped (only), with guard pages; no device alias asked (the case asks itself).
std::unique_ptr<KindBuffer> MakeAliased(HostKind kind, size_t bytes, KindFailure* failure) {
  KindOptions o;
  o.register_flags = cudaHostRegisterMapped;
  o.guard_pages = true;
  o.device_alias = false;
  return KindBuffer::Make(kind, bytes, failure, o);
}

struct Offset {
  std::string name;
  size_t at;
};

// The distance from address a to the next multiple of g strictly above it: in (0, g].
size_t ToNextBoundary(uintptr_t a, size_t g) { return g - static_cast<size_t>(a % g); }

// The interior bytes probed: both sides of a page, 64 KiB and 2 MiB from the base, one past the
// 2 MiB boundary, one well past it and not page aligned, a random middle, the last byte; and both
// sides of the next 64 KiB and 2 MiB boundaries of the host address and of the alias, where a
// driver translating in granules of the address (rather than of the offset) would break. Only
// offsets in [1, bytes) are kept, each once (under its first name).
std::vector<Offset> InteriorOffsets(size_t bytes, uintptr_t host, uintptr_t alias) {
  const size_t page = PageSize();
  std::vector<Offset> all = {
      {"1", 1},
      {"page-1", page - 1},
      {"page", page},
      {"64KiB-1", 64 * kKiB - 1},
      {"64KiB", 64 * kKiB},
      {"2MiB-1", 2 * kMiB - 1},
      {"2MiB", 2 * kMiB},
      {"2MiB+1", 2 * kMiB + 1},
      {"4MiB+4097", 4 * kMiB + 4097},
  };
  // Drawn whatever the size, so the case's generator is used alike in every case.
  const uint64_t r = CaseRng()();
  if (bytes > 2) all.push_back({"random middle", 1 + static_cast<size_t>(r % (bytes - 2))});
  all.push_back({"last byte", bytes - 1});
  struct Origin {
    const char* name;
    uintptr_t a;
  };
  std::vector<Origin> origins = {{"host", host}};
  if (alias != host) origins.push_back({"alias", alias});
  for (const Origin& o : origins) {
    for (size_t g : {64 * kKiB, 2 * kMiB}) {
      const size_t to = ToNextBoundary(o.a, g);
      const std::string gname = g == 64 * kKiB ? "64KiB" : "2MiB";
      all.push_back({std::string(o.name) + "'s next " + gname + " boundary-1", to - 1});
      all.push_back({std::string(o.name) + "'s next " + gname + " boundary", to});
    }
  }
  std::vector<Offset> kept;
  for (const Offset& o : all) {
    if (o.at < 1 || o.at >= bytes) continue;
    if (std::any_of(kept.begin(), kept.end(), [&](const Offset& k) { return k.at == o.at; })) continue;
    kept.push_back(o);
  }
  return kept;
}

std::string Addr(const void* p) { return Hex(reinterpret_cast<uintptr_t>(p)); }
std::string Addr(CUdeviceptr p) { return Hex(static_cast<uint64_t>(p)); }

// The window a kernel reads and writes at an interior byte, clipped at the buffer's end, and the
// guard bytes checked on each side of it.
constexpr size_t kWindow = 64;
constexpr size_t kGuard = 8;

class InteriorAliasTest : public DriverApiGpuTest, public ::testing::WithParamInterface<Subject> {
 protected:
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // cudaHostGetDevicePointer "will fail ... if called on a device that does not support mapped,
    // pinned memory" (13.0).
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrCanMapHostMemory, 1));
    // cudaHostRegister is "supported only on ... non-zero cudaDevAttrHostRegisterSupported".
    if (IsRegistered(GetParam().kind)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
    // cudaMallocHost has no Mapped flag: its memory is mapped only through unified addressing
    // ("All host memory allocated through all devices using cudaMallocHost() and cudaHostAlloc()
    // is always directly accessible from all devices that support unified addressing").
    if (GetParam().kind == HostKind::kMallocHost) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrUnifiedAddressing, 1));
  }
};

TEST_P(InteriorAliasTest, EveryInteriorByteMapsToTheBaseAliasPlusItsOffsetAndTheDeviceReachesIt) {
  PAGELOCK_RULE("R53,R96");
  const Subject s = GetParam();
  const size_t bytes = SizeClassBytes(s.size);
  KindFailure failure;
  auto buf = MakeAliased(s.kind, bytes, &failure);
  if (!buf && failure.unavailable) PAGELOCK_NOT_SUPPORTED(failure.why);
  ASSERT_NE(buf, nullptr) << AliasKindName(s.kind) << ", " << bytes << " bytes: " << failure.why;
  unsigned char* const host = buf->host();

  char* base = nullptr;  // the runtime's alias of the base
  ASSERT_CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&base), host, 0))
      << AliasKindName(s.kind) << ", " << bytes << " bytes, base " << Addr(host);
  ASSERT_NE(static_cast<void*>(base), nullptr);
  CUdeviceptr dbase = 0;  // the driver's alias of the base
  ASSERT_CU_OK(d.cuMemHostGetDevicePointer(&dbase, host, 0))
      << AliasKindName(s.kind) << ", " << bytes << " bytes, base " << Addr(host);
  ASSERT_NE(dbase, CUdeviceptr{0});

  // The background: the whole buffer holds the case's pattern; each window then gets a pattern of
  // its own seed, so a kernel that reads any other bytes (the base's, another window's, another
  // page's) finds mismatches. (LaunchCountPatternMismatches counts PatternByte(i, seed) from index
  // 0 of the pointer it is given, so a window is written with its own pattern from its first byte;
  // the launchers that take a window's index, in kernels/streams and kernels/sizes, are not
  // visible to this package.)
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  HostFillPattern(host, bytes, seed);

  DeviceBuffer counter = DeviceBuffer::Managed(sizeof(unsigned long long));
  ASSERT_CUDA_OK(counter.status());
  auto* mismatches = counter.as<unsigned long long>();

  const std::vector<Offset> offsets =
      InteriorOffsets(bytes, reinterpret_cast<uintptr_t>(host), reinterpret_cast<uintptr_t>(base));
  for (size_t k = 0; k < offsets.size(); ++k) {
    const Offset& off = offsets[k];
    const size_t o = off.at;
    const std::string where = AliasKindName(s.kind) + ", " + std::to_string(bytes) + " bytes, offset " + off.name +
                              " (" + std::to_string(o) + "), host byte " + Addr(host + o) + " of base " +
                              Addr(host);
    SCOPED_TRACE(where);

    // The runtime: the byte's alias is the base's alias plus the offset.
    char* rt = nullptr;
    EXPECT_CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&rt), host + o, 0));
    // (Compared as void*: gtest prints a char* it reports as a string, reading through it.)
    EXPECT_EQ(static_cast<void*>(rt), static_cast<void*>(base + o))
        << "cudaHostGetDevicePointer answered " << Addr(rt) << ", want base alias " << Addr(base) << " + " << o
        << " = " << Addr(base + o);
    // The driver, against its own base alias.
    CUdeviceptr dr = 0;
    EXPECT_CU_OK(d.cuMemHostGetDevicePointer(&dr, host + o, 0));
    EXPECT_EQ(dr, dbase + o) << "cuMemHostGetDevicePointer answered " << Addr(dr) << ", want base alias "
                             << Addr(dbase) << " + " << o << " = " << Addr(dbase + o);
    // R96: the attributes name the byte's own host pointer and device pointer.
    cudaPointerAttributes a{};
    EXPECT_CUDA_OK(cudaPointerGetAttributes(&a, host + o));
    EXPECT_EQ(a.type, cudaMemoryTypeHost);
    EXPECT_EQ(a.hostPointer, static_cast<void*>(host + o))
        << "cudaPointerGetAttributes hostPointer " << Addr(a.hostPointer) << ", want " << Addr(host + o);
    EXPECT_EQ(a.devicePointer, static_cast<void*>(base + o))
        << "cudaPointerGetAttributes devicePointer " << Addr(a.devicePointer) << ", want base alias " << Addr(base)
        << " + " << o << " = " << Addr(base + o);

    // The device is only sent through an alias the arithmetic above accepted: a kernel through a
    // wrong one may fault, and a fault is sticky, poisoning every later case of the process. The
    // failure is already reported.
    if (rt != base + o) continue;

    const size_t w = std::min(kWindow, bytes - o);
    const uint32_t wseed = seed ^ (0x9e3779b9u * static_cast<uint32_t>(k + 1));
    HostFillPattern(host + o, w, wseed);
    // The host's stores reach memory before the kernel reads (write-combined ones too).
    std::atomic_thread_fence(std::memory_order_seq_cst);

    // Read: a kernel through the alias returned for the byte finds the host's window.
    *mismatches = 0;
    EXPECT_CUDA_OK(LaunchCountPatternMismatches(rt, w, wseed, mismatches));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(*mismatches, 0u) << "a kernel reading " << w << " bytes at the alias " << Addr(rt)
                               << " found other bytes than the host wrote at " << Addr(host + o);
    // The driver's alias too, where it is another address (its arithmetic checked above).
    if (dr == dbase + o && dr != reinterpret_cast<CUdeviceptr>(rt)) {
      *mismatches = 0;
      EXPECT_CUDA_OK(LaunchCountPatternMismatches(reinterpret_cast<const void*>(dr), w, wseed, mismatches));
      ASSERT_CUDA_OK(cudaDeviceSynchronize());
      EXPECT_EQ(*mismatches, 0u) << "a kernel reading " << w << " bytes at the driver's alias " << Addr(dr)
                                 << " found other bytes than the host wrote at " << Addr(host + o);
    }

    // Write: a kernel inverting the window through the alias changes exactly the window's host
    // bytes. Every byte inverted differs, so a write that lands elsewhere leaves all w unchanged.
    const size_t lo = o >= kGuard ? o - kGuard : 0;
    const size_t hi = std::min(bytes, o + w + kGuard);
    std::vector<unsigned char> before(hi - lo);
    for (size_t i = lo; i < hi; ++i) before[i - lo] = static_cast<const volatile unsigned char*>(host)[i];
    EXPECT_CUDA_OK(LaunchInvertBytes(rt, w));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(HostCountPatternMismatches(host + o, w, wseed, 0xff), 0u)
        << "a kernel inverting " << w << " bytes at the alias " << Addr(rt) << " did not invert the host bytes at "
        << Addr(host + o);
    size_t guards_changed = 0;
    std::string first_changed;
    for (size_t i = lo; i < hi; ++i) {
      if (i >= o && i < o + w) continue;
      const unsigned char now = static_cast<const volatile unsigned char*>(host)[i];
      if (now == before[i - lo]) continue;
      if (guards_changed++ == 0) {
        first_changed = "offset " + std::to_string(i) + ": was " + Hex(before[i - lo], 2) + ", now " + Hex(now, 2);
      }
    }
    EXPECT_EQ(guards_changed, 0u) << "a kernel writing " << w << " bytes at the alias " << Addr(rt)
                                  << " changed guard bytes beside the window at " << Addr(host + o) << " (first "
                                  << first_changed << ")";
  }
  EXPECT_CUDA_OK(counter.Free());
}

INSTANTIATE_TEST_SUITE_P(EveryKindAndSize, InteriorAliasTest, ::testing::ValuesIn(Subjects()),
                         [](const ::testing::TestParamInfo<Subject>& info) { return SubjectName(info.param); });

}  // namespace
}  // namespace pagelock
