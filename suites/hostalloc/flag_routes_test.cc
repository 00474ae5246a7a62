// The flags word of pinned memory from every route (cudaMallocHost, cudaHostAlloc with each
// flag combination, cuMemAllocHost, cuMemHostAlloc with each CU_MEMHOSTALLOC combination,
// cudaHostRegister and cuMemHostRegister with each flag), here and again in a child after each
// lifecycle event a process can go through: cudaSetDeviceFlags(cudaDeviceMapHost) as the first
// call, cudaDeviceReset and re-initialisation, and a primary context reset
// (cuDevicePrimaryCtxReset).
//  - Allocations: cudaHostGetFlags / cuMemHostGetFlags return 'the flags ... that were specified
//    when allocating' (R56), which may carry the bits unified addressing makes implicit (Mapped,
//    R14/R57; Portable, R18) and never WriteCombined unless it was requested. Where the
//    expectations name r56-portable, a lost Portable bit is excused and counted.
//  - Registrations: both queries 'will fail if the pointer does not reside in' an allocation
//    (R58); where the expectations name r58 a success is excused, counted, and its word must not
//    hold WriteCombined (never requested: no registration flag is 0x4 here).
// Rule ids refer to suites/rules.tsv.
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/deviations.h"
#include "fixtures/driver_api.h"
#include "fixtures/flags.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_kinds.h"

namespace pagelock {
namespace {

// 64 KiB: small enough that allocations share the driver's pinned chunks (where r56-portable
// shows), large enough to be more than a page.
constexpr size_t kSize = size_t{64} << 10;

bool Registered(PinRoute r) { return IsRegisterRoute(r); }
bool Runtime(PinRoute r) { return !IsDriverRoute(r); }

struct FlagCase {
  PinRoute route;
  unsigned flags;  // runtime and driver flag values are equal (R01)
};
std::string CaseName(const FlagCase& c) {
  return std::string(PinRouteName(c.route)) + "_" +
         (Registered(c.route) ? HostRegisterFlagsName(c.flags) : HostAllocFlagsName(c.flags));
}

// Every route and flag word. ReadOnly registrations where the device supports them (attr 113);
// IoMemory is for device memory windows (R44), not host RAM: left out.
std::vector<FlagCase> Matrix(bool read_only) {
  std::vector<FlagCase> m;
  for (unsigned f : AllHostAllocFlagCombinations()) m.push_back({PinRoute::kHostAlloc, f});
  m.push_back({PinRoute::kMallocHost, 0});
  for (unsigned f : AllHostAllocFlagCombinations()) m.push_back({PinRoute::kCuMemHostAlloc, f});
  m.push_back({PinRoute::kCuMemAllocHost, 0});
  std::vector<unsigned> reg = {0, cudaHostRegisterPortable, cudaHostRegisterMapped,
                               cudaHostRegisterPortable | cudaHostRegisterMapped};
  if (read_only) reg.push_back(cudaHostRegisterReadOnly | cudaHostRegisterMapped);
  for (PinRoute r : {PinRoute::kHostRegister, PinRoute::kCuMemHostRegister}) {
    for (unsigned f : reg) m.push_back({r, f});
  }
  return m;
}

// What one route answered: the making call, the flags query and its word (names as
// ScenarioReport writes them).
struct Answer {
  std::string make;
  std::string query;
  unsigned word = 0;
  std::string release;
};

Answer Ask(const DriverApi& d, const FlagCase& c) {
  Answer a;
  void* p = nullptr;
  void* mem = nullptr;
  if (Registered(c.route)) {
    mem = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return Answer{"mmap failed", "", 0, ""};
    p = mem;
  }
  switch (c.route) {
    case PinRoute::kHostAlloc: a.make = ErrName(cudaHostAlloc(&p, kSize, c.flags)); break;
    case PinRoute::kMallocHost: a.make = ErrName(cudaMallocHost(&p, kSize)); break;
    case PinRoute::kCuMemHostAlloc: a.make = CuName(d.cuMemHostAlloc(&p, kSize, c.flags)); break;
    case PinRoute::kCuMemAllocHost: a.make = CuName(d.cuMemAllocHost(&p, kSize)); break;
    case PinRoute::kHostRegister: a.make = ErrName(cudaHostRegister(p, kSize, c.flags)); break;
    case PinRoute::kCuMemHostRegister: a.make = CuName(d.cuMemHostRegister(p, kSize, c.flags)); break;
  }
  (void)cudaGetLastError();
  if (a.make == "cudaSuccess" || a.make == "CUDA_SUCCESS") {
    a.word = 0xdeadbeef;
    a.query = Runtime(c.route) ? ErrName(cudaHostGetFlags(&a.word, p)) : CuName(d.cuMemHostGetFlags(&a.word, p));
    (void)cudaGetLastError();
    switch (c.route) {
      case PinRoute::kHostAlloc:
      case PinRoute::kMallocHost: a.release = ErrName(cudaFreeHost(p)); break;
      case PinRoute::kCuMemHostAlloc:
      case PinRoute::kCuMemAllocHost: a.release = CuName(d.cuMemFreeHost(p)); break;
      case PinRoute::kHostRegister: a.release = ErrName(cudaHostUnregister(p)); break;
      case PinRoute::kCuMemHostRegister: a.release = CuName(d.cuMemHostUnregister(p)); break;
    }
    (void)cudaGetLastError();
  }
  if (mem) munmap(mem, kSize);  // frees_check: a register route's backing, after its release is recorded in a.release
  return a;
}

bool Ok(const std::string& name) { return name == "cudaSuccess" || name == "CUDA_SUCCESS"; }

// The judge, for the parent's own matrix and a child's: asserts on `a` for case `c`, with the
// deviations that apply; `key` names what is recorded.
struct Judge {
  bool uva = true;
  bool excuse_portable = false;
  bool excuse_r58 = false;
  uint64_t portable_excused = 0;
  uint64_t r58_excused = 0;

  void operator()(const FlagCase& c, const Answer& a, const std::string& key) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(Ok(a.make)) << PinRouteName(c.route) << " with flags " << Hex(c.flags) << ": " << a.make;
    EXPECT_TRUE(Ok(a.release)) << a.release;
    if (Registered(c.route)) {
      if (Ok(a.query) && excuse_r58) {  // r58: the query succeeds on registered memory
        ++r58_excused;
        Observe(key + "_word", Hex(a.word));
        EXPECT_EQ(a.word & cudaHostAllocWriteCombined, 0u)
            << "the flags of a registration hold WriteCombined (" << Hex(a.word) << "), never requested";
        return;
      }
      Observe(key + "_query", a.query);
      if (c.route == PinRoute::kHostRegister) {
        EXPECT_EQ(a.query, "cudaErrorInvalidValue") << "cudaHostGetFlags of registered memory (R58)";
      } else {
        EXPECT_FALSE(Ok(a.query)) << "cuMemHostGetFlags succeeded on registered memory (R58), word " << Hex(a.word);
      }
      return;
    }
    if (c.route == PinRoute::kMallocHost && a.query == "cudaErrorInvalidValue") {
      // 'will fail if the input pointer does not reside in an address range allocated by
      // cudaHostAlloc()': whether cudaMallocHost's range counts is not said. Recorded.
      Observe(key + "_query", a.query);
      return;
    }
    ASSERT_TRUE(Ok(a.query)) << a.query;
    unsigned got = a.word;
    if (excuse_portable && (c.flags & cudaHostAllocPortable) && !(got & cudaHostAllocPortable)) {
      ++portable_excused;  // r56-portable: the chunk's first allocation's Portable bit
      got |= cudaHostAllocPortable;
    }
    // The documented answers: requested bits, plus any of the implicit ones.
    const unsigned implied = uva ? (cudaHostAllocMapped | cudaHostAllocPortable) : 0;
    std::vector<std::string> allowed;
    for (unsigned extra = 0; extra <= implied; ++extra) {
      if ((extra & ~implied) == 0) allowed.push_back(Hex(c.flags | extra));
    }
    EXPECT_DOCUMENTED_ONE_OF(key, Hex(got), allowed,
                             "R56 (the flags specified when allocating) with R14/R18/R57 (Mapped and "
                             "Portable implicit under unified addressing); WriteCombined only if requested");
  }

  void Record() const {
    if (excuse_portable) RecordExcused("r56-portable", portable_excused);
    if (excuse_r58) RecordExcused("r58", r58_excused);
  }
};

Judge MakeJudge() {
  Judge j;
  j.uva = RequireAttrOnEveryDevice(cudaDevAttrUnifiedAddressing, 1).met;
  j.excuse_portable = DeviationApplies("r56-portable");
  j.excuse_r58 = DeviationApplies("r58");
  return j;
}

bool ReadOnlySupported() { return RequireAttr(cudaDevAttrHostRegisterReadOnlySupported, 1).met; }

class FlagRoutesTest : public DriverApiGpuTest, public ::testing::WithParamInterface<FlagCase> {};

// A driver that reports another allocation's flags (a chunk's, a freed block's), adds
// WriteCombined to a block that did not ask for it, drops a requested bit, or answers a flags
// query for registered memory with a word holding WriteCombined, fails this.
TEST_P(FlagRoutesTest, TheFlagsWordHoldsTheRequestedBitsAndOnlyDocumentedExtras) {
  PAGELOCK_RULE("R56,R57,R58,R135");
  const FlagCase c = GetParam();
  if (Registered(c.route)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  if (c.flags & cudaHostRegisterReadOnly && Registered(c.route)) {
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterReadOnlySupported, 1));
  }
  Judge judge = MakeJudge();
  judge(c, Ask(d, c), "flags");
  judge.Record();
}

INSTANTIATE_TEST_SUITE_P(EveryRoute, FlagRoutesTest, ::testing::ValuesIn(Matrix(true)),
                         [](const ::testing::TestParamInfo<FlagCase>& info) { return CaseName(info.param); });

// The lifecycle events, in order, in one fresh process.
const char* const kStates[] = {"map_host_first", "after_device_reset", "after_primary_context_reset"};

void ReportMatrix(const std::string& state, const DriverApi& d, ScenarioReport& report) {
  int ro = 0;
  (void)cudaDeviceGetAttribute(&ro, cudaDevAttrHostRegisterReadOnlySupported, 0);
  int reg = 0;
  (void)cudaDeviceGetAttribute(&reg, cudaDevAttrHostRegisterSupported, 0);
  (void)cudaGetLastError();
  const std::vector<FlagCase> m = Matrix(ro == 1);
  for (size_t i = 0; i < m.size(); ++i) {
    if (Registered(m[i].route) && reg != 1) continue;
    const Answer a = Ask(d, m[i]);
    const std::string k = state + "_" + CaseName(m[i]);
    report.Set(k + "_make", a.make);
    report.Set(k + "_query", a.query);
    report.Set(k + "_word", static_cast<long long>(a.word));
    report.Set(k + "_release", a.release);
  }
  report.Set(state + "_done", "1");
}

PAGELOCK_SCENARIO(FlagsAcrossLifecycleEvents) {
  const DriverApi& d = Driver();
  if (!d.loaded) return report.Set("driver", d.error);
  // 1. cudaSetDeviceFlags(cudaDeviceMapHost) before any other call: a fresh device.
  report.Error("map_host_first_setup", cudaSetDeviceFlags(cudaDeviceMapHost));
  report.Error("map_host_first_init", cudaFree(nullptr));
  ReportMatrix("map_host_first", d, report);
  // 2. cudaDeviceReset, then the runtime initialises the device again.
  report.Error("after_device_reset_setup", cudaDeviceReset());
  report.Error("after_device_reset_init", cudaFree(nullptr));
  ReportMatrix("after_device_reset", d, report);
  // 3. The driver resets the primary context the runtime uses; the runtime then uses it again.
  CUdevice dev = 0;
  CUresult r = d.cuDeviceGet(&dev, 0);
  if (r == CUDA_SUCCESS) r = d.cuDevicePrimaryCtxReset(dev);
  report.Cu("after_primary_context_reset_setup", r);
  report.Error("after_primary_context_reset_init", cudaFree(nullptr));
  ReportMatrix("after_primary_context_reset", d, report);
}

const ChildResult& Lifecycle() {
  return SharedScenario("FlagsAcrossLifecycleEvents", 60);
}

class FlagsAfterLifecycleTest : public DriverApiGpuTest, public ::testing::WithParamInterface<const char*> {};

// A driver whose flags after a device reset, a primary context reset or a MapHost device come from
// the state before (a stale chunk's flags, WriteCombined appearing), or whose queries stop working
// after one, fails this; the matrix and the judge are those of FlagRoutesTest.
TEST_P(FlagsAfterLifecycleTest, EveryRouteReportsItsFlagsAsInAFreshProcess) {
  PAGELOCK_RULE("R56,R57,R58,R136");
  const std::string state = GetParam();
  const ChildResult& r = Lifecycle();
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("driver"), "<missing>") << r.Get("driver");
  // cudaSetDeviceFlags: 'If the current device has not been initialized ... initialized with the
  // flags'; cudaDeviceReset and cuDevicePrimaryCtxReset return CUDA_SUCCESS on an active device.
  const std::string setup = r.Get(state + "_setup");
  ASSERT_TRUE(Ok(setup)) << state << " setup: " << setup;
  ASSERT_EQ(r.Get(state + "_init"), "cudaSuccess") << "the runtime did not initialise again after " << state;
  ASSERT_EQ(r.Get(state + "_done"), "1");
  Judge judge = MakeJudge();
  int judged = 0;
  for (const FlagCase& c : Matrix(ReadOnlySupported())) {
    const std::string k = state + "_" + CaseName(c);
    if (r.Get(k + "_make") == "<missing>") continue;  // a registration where attr 99 = 0
    Answer a{r.Get(k + "_make"), r.Get(k + "_query"), static_cast<unsigned>(std::stoul(r.Get(k + "_word"))),
             r.Get(k + "_release")};
    judge(c, a, CaseName(c));
    ++judged;
  }
  EXPECT_GE(judged, 18) << "the allocation routes alone are 18 entries";
  judge.Record();
}

INSTANTIATE_TEST_SUITE_P(States, FlagsAfterLifecycleTest, ::testing::ValuesIn(kStates),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace pagelock
