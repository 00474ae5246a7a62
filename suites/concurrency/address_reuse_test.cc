// Address reuse and identity (peer rows I1, J10; what registration caches such as NCCL, UCX and
// MPI key on). A freed pinned allocation or an unregistered range is often followed by a new one
// at the same address; every identity query must then describe the new block, never the old:
//  - CU_POINTER_ATTRIBUTE_BUFFER_ID is new (collected over the whole process, every route);
//  - cuMemGetAddressRange and RANGE_START_ADDR / RANGE_SIZE (from the first, a middle and the last
//    byte) give one answer holding the new block, and the address range's own last byte names the
//    same range (an earlier, larger block's size reaches bytes the new block does not have);
//  - cudaHostGetFlags / cuMemHostGetFlags give the new flags;
//  - cudaHostGetDevicePointer and cudaPointerGetAttributes give the new aliases, type and device;
//  - the device reads the new bytes through the alias.
// Sizes (1 B .. 8 MiB) and flags come from the case seed; a cycle is "make, check, release", so
// the next block often lands where the last one was, smaller or larger. How many cycles reused an
// address is recorded; a case where no address ever came back is NotSupported with the counts.
// Rule ids refer to suites/rules.tsv.
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/deviations.h"
#include "fixtures/driver_api.h"
#include "fixtures/flags.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_kinds.h"
#include "fixtures/host_memory.h"
#include "fixtures/platform_gates.h"
#include "fixtures/resources.h"
#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

#ifdef PAGELOCK_STRESS_TIER
constexpr int kCycles = 64;
#else
constexpr int kCycles = 24;
#endif
constexpr int kSameSizeAttempts = 16;  // the "try harder" pass when no address came back
constexpr size_t kMaxBytes = size_t{8} << 20;

// A pin route and, for a registration, what it registers: malloc'd memory, or an anonymous mmap.
struct ReuseRoute {
  PinRoute route;
  bool mmap = false;
};

// "cudaHostAlloc", ...; a registration adds what it registers: "cudaHostRegister_malloc".
std::string RouteName(const ReuseRoute& r) {
  if (!IsRegisterRoute(r.route)) return PinRouteName(r.route);
  return std::string(PinRouteName(r.route)) + (r.mmap ? "_mmap" : "_malloc");
}
void PrintTo(const ReuseRoute& r, std::ostream* os) { *os << RouteName(r); }
bool Registered(const ReuseRoute& r) { return IsRegisterRoute(r.route); }
bool Runtime(const ReuseRoute& r) { return !IsDriverRoute(r.route); }

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }
CUdeviceptr Dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// Every buffer ID any block of this process was given, with the block that had it: the
// documentation's "unique ID over a process lifetime" spans routes and cases.
std::map<unsigned long long, std::string>& IdsSeen() {
  static auto* ids = new std::map<unsigned long long, std::string>();
  return *ids;
}

struct Block {
  void* p = nullptr;
  size_t n = 0;
  unsigned flags = 0;
  void* backing = nullptr;  // malloc'd or mmap'ed memory a registration covers
  size_t backing_len = 0;
};

// What one address held before: for messages that name a stale answer.
struct Previous {
  size_t n = 0;
  unsigned flags = 0;
  int cycle = 0;
};

class AddressReuseTest : public DriverApiGpuTest, public ::testing::WithParamInterface<ReuseRoute> {
 protected:
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (Registered(GetParam())) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
    excuse_portable_ = DeviationApplies("r56-portable");
    uva_ = RequireAttrOnEveryDevice(cudaDevAttrUnifiedAddressing, 1).met;
    same_pointer_registered_ = RequireAttrOnEveryDevice(cudaDevAttrCanUseHostPointerForRegisteredMem, 1).met;
    ASSERT_CUDA_OK(cudaMallocManaged(&bad_, sizeof *bad_));
    own_bad_ = DeviceBuffer::Adopt(bad_);
  }

  // Makes a block of `n` bytes by the route; "" or the failing call.
  std::string Make(size_t n, unsigned flags, Block* b) {
    *b = Block{};
    b->n = n;
    b->flags = flags;
    switch (GetParam().route) {
      case PinRoute::kHostAlloc: return Rt("cudaHostAlloc", cudaHostAlloc(&b->p, n, flags));
      case PinRoute::kMallocHost: return Rt("cudaMallocHost", cudaMallocHost(&b->p, n));
      case PinRoute::kCuMemHostAlloc: return Cu("cuMemHostAlloc", d.cuMemHostAlloc(&b->p, n, flags));
      case PinRoute::kCuMemAllocHost: return Cu("cuMemAllocHost", d.cuMemAllocHost(&b->p, n));
      case PinRoute::kHostRegister:
      case PinRoute::kCuMemHostRegister:
        if (GetParam().mmap) {
          b->backing_len = RoundUp(n, PageSize());
          b->backing = mmap(nullptr, b->backing_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
          if (b->backing == MAP_FAILED) {
            b->backing = nullptr;
            return "mmap failed";
          }
        } else {
          b->backing = std::malloc(n);
          if (!b->backing) return "malloc failed";
          b->backing_len = n;
        }
        b->p = b->backing;
        if (GetParam().route == PinRoute::kCuMemHostRegister) {
          return Cu("cuMemHostRegister", d.cuMemHostRegister(b->p, n, flags));
        }
        return Rt("cudaHostRegister", cudaHostRegister(b->p, n, flags));
    }
    return "unknown route";
  }

  // Frees or unregisters (then frees or unmaps the backing memory); "" or the first failing call.
  std::string Release(Block* b) {
    std::string e;
    switch (GetParam().route) {
      case PinRoute::kHostAlloc:
      case PinRoute::kMallocHost: e = Rt("cudaFreeHost", cudaFreeHost(b->p)); break;
      case PinRoute::kCuMemHostAlloc:
      case PinRoute::kCuMemAllocHost: e = Cu("cuMemFreeHost", d.cuMemFreeHost(b->p)); break;
      case PinRoute::kHostRegister: e = Rt("cudaHostUnregister", cudaHostUnregister(b->p)); break;
      case PinRoute::kCuMemHostRegister: e = Cu("cuMemHostUnregister", d.cuMemHostUnregister(b->p)); break;
    }
    const std::string backing = FreeBacking(b);
    return e.empty() ? backing : e;
  }
  // "" or why munmap failed.
  std::string FreeBacking(Block* b) {
    std::string e;
    if (b->backing && GetParam().mmap) {
      if (munmap(b->backing, b->backing_len) != 0) e = std::string("munmap: ") + std::strerror(errno);
    } else if (b->backing) {
      std::free(b->backing);
    }
    b->backing = nullptr;
    return e;
  }

  // How a range holds block `b` (asked at `at`, its host pointer or its alias), recorded: its base
  // and size ("exact"), its base and more ("rounded_up"), from below its start ("starts_below").
  // "" when it does not hold the block (a wrong base, a short or stale smaller size). How far a
  // range may reach past the block is not documented: cuMemGetAddressRange names "the allocation
  // ... that contains the input pointer" and no granularity; RANGE_START_ADDR / RANGE_SIZE name
  // "the mappable address range ptr references (e.g. from ::cuMemAddressReserve)", "not
  // necessarily ... the mapped region" (cuda.h 13.0). So no unit bounds it here; a stale larger
  // size is caught by the range's own last byte (Cycle).
  static std::string RangeShape(const Block& b, const void* at, CUdeviceptr base, size_t size) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(at);
    if (base > p || p - base > size || size - (p - base) < b.n) return "";
    if (base < p) return "starts_below";
    return size == b.n ? "exact" : "rounded_up";
  }

  // The flags word answers for block `b`: the requested bits, plus the ones the documentation
  // makes implicit under unified addressing (Mapped: 'host memory allocated ... can be accessed
  // from the device at the same address' (R14); Portable: portable across all UVA devices
  // (R18)); never WriteCombined unless requested. "" or what is wrong.
  std::string FlagsProblem(unsigned requested, unsigned got) {
    const unsigned implied = uva_ ? (cudaHostAllocMapped | cudaHostAllocPortable) : 0;
    unsigned missing = requested & ~got;
    if ((missing & cudaHostAllocPortable) && excuse_portable_) {  // r56-portable: a chunk's flags
      missing &= ~cudaHostAllocPortable;
      ++portable_excused_;
    }
    const unsigned extra = got & ~(requested | implied);
    std::ostringstream o;
    if (missing) o << "lacks requested bits 0x" << std::hex << missing << " ";
    if (extra) o << "has bits 0x" << std::hex << extra << " that were neither requested nor implied";
    return o.str();
  }

  // One block: made, every identity query judged, the device's read checked, released.
  void Cycle(int cycle, size_t n, unsigned flags) {
    Block b;
    const std::string made = Make(n, flags, &b);
    if (!made.empty()) {
      EXPECT_EQ(FreeBacking(&b), "");
    }
    ASSERT_EQ(made, "") << "cycle " << cycle << ": " << n << " bytes, flags 0x" << std::hex << flags;
    const auto prev_it = history_.find(b.p);
    const bool reused = prev_it != history_.end();
    std::ostringstream what;
    what << RouteName(GetParam()) << " cycle " << cycle << ": " << n << " bytes, flags 0x" << std::hex << flags << std::dec;
    if (reused) {
      const Previous& pv = prev_it->second;
      what << ", at the address cycle " << pv.cycle << " had (" << pv.n << " bytes, flags 0x" << std::hex << pv.flags
           << std::dec << ")";
      ++reused_;
      if (n < pv.n) ++reused_smaller_;
      if (n > pv.n) ++reused_larger_;
    }
    SCOPED_TRACE(what.str());
    unsigned char* const p = static_cast<unsigned char*>(b.p);
    const bool registered = Registered(GetParam());

    // Aliases and attributes. Non-WriteCombined allocations: the alias is the host pointer
    // (R51); registrations: where every device has attribute 91 (R45).
    void* dev = nullptr;
    EXPECT_CUDA_OK(cudaHostGetDevicePointer(&dev, p, 0));
    const bool wc = !registered && (b.flags & cudaHostAllocWriteCombined);
    if (uva_ && !wc && (!registered || same_pointer_registered_)) {
      EXPECT_EQ(dev, static_cast<void*>(p)) << "cudaHostGetDevicePointer";
    }
    // The driver's queries take a device pointer: the host pointer is one under unified
    // addressing, except perhaps for WriteCombined memory (R15), which is asked by its alias.
    const unsigned char* q = wc && dev && dev != static_cast<void*>(p) ? static_cast<unsigned char*>(dev) : p;

    // BUFFER_ID: 'guaranteed to be unique within the process ... Subsequent allocations do not
    // reuse IDs from previous freed allocations'. A registration is not from an allocation API:
    // whether it has an ID is recorded, an ID it has must be unique all the same.
    unsigned long long id = 0;
    const CUresult id_r = d.cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, Dptr(q));
    if (!registered) {
      EXPECT_CU_OK(id_r);
    }
    if (id_r == CUDA_SUCCESS) {
      ++ids_;
      auto [it, fresh] = IdsSeen().emplace(id, what.str());
      EXPECT_TRUE(fresh) << "buffer ID " << id << " was already given to: " << it->second;
    } else {
      id_error_ = CuName(id_r);
    }

    // cuMemGetAddressRange and RANGE_START_ADDR / RANGE_SIZE, from the first, a middle and the
    // last byte (J10): one answer from every byte, and a range that holds the block. cuda.h 13.0
    // documents cuMemGetAddressRange for "the allocation by ::cuMemAlloc() or ::cuMemAllocPitch()
    // that contains the input pointer" and lists CUDA_ERROR_NOT_FOUND and CUDA_ERROR_INVALID_VALUE:
    // nothing promises an answer for pinned or registered host memory, so either error is allowed
    // (counted) and the range is judged where there is one.
    // RANGE_START_ADDR: "the starting address for the allocation referenced by the device pointer
    // ptr": an allocation must answer. For a registration nothing is said, so an older driver's
    // CUDA_ERROR_INVALID_VALUE is recorded and the range judged only where one is given
    // (gates::RangeAttributeVerdict); any other code, and a range that does not hold the block,
    // still fail.
    CUresult range_r0 = CUDA_SUCCESS, attr_r0 = CUDA_SUCCESS;
    CUdeviceptr base0 = 0, start0 = 0;
    size_t size0 = 0, rsize0 = 0;
    bool first = true;
    for (size_t off : {size_t{0}, n / 2, n - 1}) {
      CUdeviceptr base = 0;
      size_t size = 0;
      const CUresult range_r = d.cuMemGetAddressRange(&base, &size, Dptr(q + off));
      CUdeviceptr start = 0;
      size_t rsize = 0;
      CUresult attr_r = d.cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, Dptr(q + off));
      const CUresult size_r = d.cuPointerGetAttribute(&rsize, CU_POINTER_ATTRIBUTE_RANGE_SIZE, Dptr(q + off));
      if (attr_r == CUDA_SUCCESS) attr_r = size_r;
      const gates::Verdict attr_v = gates::RangeAttributeVerdict(registered, attr_r);
      EXPECT_NE(attr_v, gates::Verdict::kFail)
          << "RANGE_START_ADDR / RANGE_SIZE from byte " << off << ": " << DescribeCu(attr_r)
          << (registered ? " (a registration may answer CUDA_ERROR_INVALID_VALUE)" : " for an allocation");
      if (first) {
        first = false;
        range_r0 = range_r;
        attr_r0 = attr_r;
        base0 = base;
        size0 = size;
        start0 = start;
        rsize0 = rsize;
        EXPECT_TRUE(range_r == CUDA_SUCCESS || range_r == CUDA_ERROR_NOT_FOUND || range_r == CUDA_ERROR_INVALID_VALUE)
            << "cuMemGetAddressRange: " << DescribeCu(range_r) << ", not one of the documented {CUDA_SUCCESS, "
            << "CUDA_ERROR_NOT_FOUND, CUDA_ERROR_INVALID_VALUE}";
      } else {
        // One block holds every byte: every byte gets the first byte's answer.
        EXPECT_EQ(CuName(range_r), CuName(range_r0)) << "cuMemGetAddressRange from byte " << off
                                                     << ": another answer than the first byte's";
        if (range_r == CUDA_SUCCESS && range_r0 == CUDA_SUCCESS) {
          EXPECT_TRUE(base == base0 && size == size0)
              << "cuMemGetAddressRange from byte " << off << ": 0x" << std::hex << base << std::dec << ", " << size
              << ", the first byte's: 0x" << std::hex << base0 << std::dec << ", " << size0;
        }
        EXPECT_EQ(CuName(attr_r), CuName(attr_r0)) << "RANGE_START_ADDR / RANGE_SIZE from byte " << off
                                                   << ": another answer than the first byte's";
        if (attr_r == CUDA_SUCCESS && attr_r0 == CUDA_SUCCESS) {
          EXPECT_TRUE(start == start0 && rsize == rsize0)
              << "RANGE_START_ADDR / RANGE_SIZE from byte " << off << ": 0x" << std::hex << start << std::dec << ", "
              << rsize << ", the first byte's: 0x" << std::hex << start0 << std::dec << ", " << rsize0;
        }
      }
      if (range_r == CUDA_SUCCESS) {
        const std::string kind = RangeShape(b, q, base, size);
        EXPECT_NE(kind, "") << "cuMemGetAddressRange from byte " << off << ": base 0x" << std::hex << base
                            << " (block 0x" << reinterpret_cast<uintptr_t>(q) << ")" << std::dec << ", size " << size
                            << " does not hold the block's " << n << " bytes";
        if (!kind.empty()) ++range_kinds_["address_range_" + kind];
      } else {
        ++range_kinds_["address_range_" + CuName(range_r)];
      }
      if (attr_v != gates::Verdict::kJudge) {
        ++range_kinds_["range_attribute_" + CuName(attr_r)];
        continue;
      }
      const std::string kind = RangeShape(b, q, start, rsize);
      EXPECT_NE(kind, "") << "RANGE_START_ADDR / RANGE_SIZE from byte " << off << ": 0x" << std::hex << start
                          << " (block 0x" << reinterpret_cast<uintptr_t>(q) << ")" << std::dec << ", " << rsize
                          << " does not hold the block's " << n << " bytes";
      if (!kind.empty()) ++range_kinds_["range_attribute_" + kind];
    }
    if (range_r0 == CUDA_SUCCESS && size0 > 0 && size0 - 1 <= ~base0) {
      // "To retrieve the size of the mapped region, see ::cuMemGetAddressRange": the mapped region
      // lies in the mappable range RANGE_START_ADDR / RANGE_SIZE name, where they name one.
      EXPECT_TRUE(attr_r0 != CUDA_SUCCESS ||
                  (base0 >= start0 && base0 - start0 <= rsize0 && size0 <= rsize0 - (base0 - start0)))
          << "RANGE_START_ADDR / RANGE_SIZE (0x" << std::hex << start0 << std::dec << ", " << rsize0
          << ") do not hold the mapped region cuMemGetAddressRange names (0x" << std::hex << base0 << std::dec
          << ", " << size0 << ")";
      // The range's own last byte is in the allocation the driver named, so it names the same
      // range. A size kept from an earlier, larger block at this address reaches bytes that are
      // no longer allocated, or another block's: the driver answers otherwise there.
      const CUdeviceptr last = base0 + (size0 - 1);
      if (last != Dptr(q + n - 1)) {
        CUdeviceptr base = 0;
        size_t size = 0;
        const CUresult r = d.cuMemGetAddressRange(&base, &size, last);
        EXPECT_TRUE(r == CUDA_SUCCESS && base == base0 && size == size0)
            << "cuMemGetAddressRange names 0x" << std::hex << base0 << std::dec << ", " << size0
            << " bytes for this block, but from that range's last byte answers " << DescribeCu(r) << ", 0x" << std::hex
            << base << std::dec << ", " << size << " (a size the block does not have?)";
      }
    }

    // The flags word (allocations only: for registered memory R58 says the query fails, and
    // flag_routes_test judges that).
    if (!registered) {
      unsigned got = 0;
      if (Runtime(GetParam())) {
        const cudaError_t e = cudaHostGetFlags(&got, p);
        if (GetParam().route == PinRoute::kMallocHost && e != cudaSuccess) {
          // 'will fail if the input pointer does not reside in an address range allocated by
          // cudaHostAlloc()': cudaMallocHost memory may or may not count as such.
          EXPECT_EQ(e, cudaErrorInvalidValue) << DescribeCuda(e);
          (void)cudaGetLastError();
        } else {
          EXPECT_CUDA_OK(e);
          EXPECT_EQ(FlagsProblem(b.flags, got), "") << "cudaHostGetFlags returned 0x" << std::hex << got;
        }
      } else {
        EXPECT_CU_OK(d.cuMemHostGetFlags(&got, p));
        EXPECT_EQ(FlagsProblem(b.flags, got), "") << "cuMemHostGetFlags returned 0x" << std::hex << got;
      }
    }

    cudaPointerAttributes a{};
    EXPECT_CUDA_OK(cudaPointerGetAttributes(&a, p));
    EXPECT_EQ(a.type, cudaMemoryTypeHost);
    EXPECT_EQ(a.device, 0);
    EXPECT_EQ(a.hostPointer, static_cast<void*>(p));
    EXPECT_EQ(a.devicePointer, dev) << "cudaPointerGetAttributes and cudaHostGetDevicePointer disagree";

    // The device reads this block's bytes (a pattern no other cycle wrote) through the alias.
    const uint32_t seed = seed_base_ + static_cast<uint32_t>(cycle) * 0x9e3779b9u;
    HostFillPattern(p, n, seed);
    if (dev) {
      *bad_ = 0;
      EXPECT_CUDA_OK(LaunchCountPatternMismatches(dev, n, seed, bad_));
      EXPECT_CUDA_OK(cudaDeviceSynchronize());
      EXPECT_EQ(*bad_, 0u) << "the device read bytes other than this block's through its alias";
    }
    history_[b.p] = Previous{n, b.flags, cycle};
    EXPECT_EQ(Release(&b), "");
  }

  std::string Rt(const char* call, cudaError_t e) {
    if (e == cudaSuccess) return "";
    (void)cudaGetLastError();
    return std::string(call) + ": " + DescribeCuda(e);
  }
  static std::string Cu(const char* call, CUresult r) {
    return r == CUDA_SUCCESS ? "" : std::string(call) + ": " + DescribeCu(r);
  }

  bool excuse_portable_ = false;
  bool uva_ = false;
  bool same_pointer_registered_ = false;
  unsigned long long* bad_ = nullptr;
  DeviceBuffer own_bad_;
  uint32_t seed_base_ = 0;
  std::map<void*, Previous> history_;
  int reused_ = 0, reused_smaller_ = 0, reused_larger_ = 0;
  long long ids_ = 0;
  std::string id_error_;
  uint64_t portable_excused_ = 0;
  std::map<std::string, long long> range_kinds_;
};

// A driver that keys any identity query on the address alone fails this at the first reused
// address: a buffer ID handed out again, a range of the old block's size, the old block's flags
// (Portable is excused where r56-portable applies, counted), or the device reading through a
// stale mapping (old bytes).
TEST_P(AddressReuseTest, EveryIdentityQueryDescribesTheBlockNowAtTheAddress) {
  PAGELOCK_RULE("R130,R131,C16");
  std::mt19937_64& rng = CaseRng();
  seed_base_ = static_cast<uint32_t>(CaseSeed());
  // Flags: every combination the route has, in an order from the seed, over and over, so a
  // reused address usually gets other flags than the block before it.
  std::vector<unsigned> flag_cycle = {0};
  if (GetParam().route == PinRoute::kHostAlloc || GetParam().route == PinRoute::kCuMemHostAlloc) flag_cycle = AllHostAllocFlagCombinations();
  if (Registered(GetParam())) flag_cycle = {0, cudaHostRegisterPortable, cudaHostRegisterMapped, cudaHostRegisterPortable | cudaHostRegisterMapped};
  std::shuffle(flag_cycle.begin(), flag_cycle.end(), rng);
  Budget("cycles", kCycles, "cycles");
  Budget("max_block", static_cast<double>(kMaxBytes), "bytes");
  size_t n = 1;
  for (int i = 0; i < kCycles && !HasFatalFailure(); ++i) {
    // Log-uniform over 1 B .. 8 MiB, and every third and fourth cycle smaller, then larger, than
    // the one before (the reused address then holds a block of another size).
    if (i % 3 == 0) {
      n = static_cast<size_t>(std::exp(std::uniform_real_distribution<double>(0, std::log(double(kMaxBytes)))(rng)));
    } else if (i % 3 == 1) {
      n = n / (2 + rng() % 7);
    } else {
      n = n * (2 + rng() % 7) + rng() % 4096;
    }
    n = std::clamp<size_t>(n, 1, kMaxBytes);
    Cycle(i, n, flag_cycle[static_cast<size_t>(i) % flag_cycle.size()]);
  }
  // Not one address came back: the same size again at once, a bounded number of times.
  for (int i = 0; reused_ == 0 && i < kSameSizeAttempts && !HasFatalFailure(); ++i) {
    Cycle(kCycles + i, n, flag_cycle[static_cast<size_t>(i) % flag_cycle.size()]);
  }
  Observe("cycles_reusing_an_address", reused_);
  Observe("reused_with_a_smaller_block", reused_smaller_);
  Observe("reused_with_a_larger_block", reused_larger_);
  Observe("buffer_ids_collected", ids_);
  if (!id_error_.empty()) Observe("buffer_id_of_a_registration", id_error_);
  for (const auto& [k, v] : range_kinds_) Observe(k, v);
  if (excuse_portable_) RecordExcused("r56-portable", portable_excused_);
  if (reused_ == 0 && !HasFailure()) {
    PAGELOCK_NOT_SUPPORTED("no address was reused in " + std::to_string(kCycles) + " cycles and " +
                           std::to_string(kSameSizeAttempts) + " same-size free-then-allocate attempts (" +
                           RouteName(GetParam()) + "): the identity at a reused address was not exercised");
  }
}

INSTANTIATE_TEST_SUITE_P(EveryRoute, AddressReuseTest,
                         ::testing::Values(ReuseRoute{PinRoute::kHostAlloc}, ReuseRoute{PinRoute::kMallocHost},
                                           ReuseRoute{PinRoute::kCuMemHostAlloc}, ReuseRoute{PinRoute::kCuMemAllocHost},
                                           ReuseRoute{PinRoute::kHostRegister, false},
                                           ReuseRoute{PinRoute::kHostRegister, true},
                                           ReuseRoute{PinRoute::kCuMemHostRegister, false}),
                         [](const ::testing::TestParamInfo<ReuseRoute>& info) { return RouteName(info.param); });

}  // namespace
}  // namespace pagelock
