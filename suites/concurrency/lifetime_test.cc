// Lifetime and identity of pinned memory (peer case 18):
//  - a registered mapping unmapped without cudaHostUnregister, and a new mapping at the same
//    address: what the runtime and the device then see is undocumented and recorded; the host
//    survives (it runs in a scenario child), and an unregister that succeeds still gives the
//    pins back (a failed one is recorded, the balance with it);
//  - CU_POINTER_ATTRIBUTE_BUFFER_ID is unique over the process's lifetime: an allocation at the
//    address of a freed one gets a new ID (documented in cuda.h);
//  - a registered range moved away with mremap, or discarded with madvise(MADV_DONTNEED), without
//    cudaHostUnregister (peer row F7): what the runtime, the host and the device then see is
//    undocumented and recorded; the host survives, the later cudaHostUnregister returns one of its
//    documented results (by name), unrelated pinned memory keeps its bytes and the pins are given
//    back (exact on a quiet host).
// Rule ids refer to suites/rules.tsv.
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/driver_api.h"
#include "fixtures/gpu_test.h"
#include "fixtures/mapping.h"
#include "fixtures/resources.h"
#include "fixtures/kernel_accounting.h"
#include "kernels/access_kernels.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{1} << 20;

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

PAGELOCK_SCENARIO(StaleRegistration) {
  // A fresh process: its primary context's own pins are measured (folded counters), so what the
  // registration pinned is told apart from what the context pinned.
  const PinCounters before_init = ReadPinCounters();
  report.Error("init", cudaFree(nullptr));
  const PinCounters after_init = ReadPinCounters();
  if (PinExactnessProblem(before_init, after_init).empty()) {
    report.Set("context_pinned_pages", static_cast<long long>(after_init.balance() - before_init.balance()));
  }
  // Warm-up: what the context pins on first use of a kernel, cudaMalloc and a small pageable
  // copy (the driver's staging buffers) belongs to the process, not to the registration.
  {
    unsigned long long* warm = nullptr;  // [0]: 8 bytes to scan, [1]: the kernel's count
    unsigned long long host[2] = {~0ull, ~0ull};
    cudaError_t e = cudaMalloc(&warm, sizeof host);
    const DeviceBuffer own_warm = DeviceBuffer::Adopt(warm);  // freed at the end of the warm-up
    if (e == cudaSuccess) e = cudaMemset(warm, 0, sizeof host);
    if (e == cudaSuccess) e = LaunchCountPatternMismatches(warm, sizeof *warm, 0, warm + 1);
    // copy-check: both words read back are judged next (warmup_bytes_ok)
    if (e == cudaSuccess) e = cudaMemcpy(host, warm, sizeof host, cudaMemcpyDeviceToHost);
    // The memset's zeros arrived and the kernel's count is a count of at most 8 bytes.
    report.Set("warmup_bytes_ok", host[0] == 0 && host[1] <= sizeof *warm ? "1" : "0");
    report.Error("warmup", e);
  }
  report.Set("quiet_before", PinBalanceIsQuiet() ? "1" : "0");
  const PinCounters base = ReadPinCounters();
  report.Set("counters", base.available ? "1" : base.why_not);
  report.Set("counters_exact", base.exact ? "1" : base.why_inexact);
  void* a = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (a == MAP_FAILED) {
    report.Set("mmap", "failed");
    return;
  }
  HostFillPattern(a, kSize, 1);
  report.Error("register", cudaHostRegister(a, kSize, cudaHostRegisterMapped));
  void* dev = nullptr;
  report.Error("devptr", cudaHostGetDevicePointer(&dev, a, 0));
  report.Set("pinned_pages", static_cast<long long>(ReadPinCounters().balance() - base.balance()));
  report.Set("munmap", munmap(a, kSize) == 0 ? "ok" : std::strerror(errno));
  void* b = mmap(a, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  Mapping b_map = b == a ? Mapping::Adopt(b, kSize) : Mapping();
  report.Set("same_address", b == a ? "1" : "0");
  if (b == a) {
    HostFillPattern(b, kSize, 2);
    cudaPointerAttributes attr{};
    cudaError_t e = cudaPointerGetAttributes(&attr, b);
    report.Error("attributes_new", e);
    report.Set("type_new", static_cast<long long>(attr.type));
    void* dev_new = nullptr;
    report.Error("devptr_new", cudaHostGetDevicePointer(&dev_new, b, 0));
    (void)cudaGetLastError();
    // The device reads through the old device pointer: the old pages (still pinned) or the new?
    unsigned long long* bad = nullptr;
    e = cudaMalloc(&bad, 2 * sizeof *bad);
    const DeviceBuffer own_bad = DeviceBuffer::Adopt(bad);  // freed at the end of the block
    if (e == cudaSuccess) e = cudaMemset(bad, 0, 2 * sizeof *bad);
    if (e == cudaSuccess && dev) e = LaunchCountPatternMismatches(dev, kSize, 1, bad);
    if (e == cudaSuccess && dev) e = LaunchCountPatternMismatches(dev, kSize, 2, bad + 1);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    unsigned long long counts[2] = {~0ull, ~0ull};
    if (e == cudaSuccess) e = cudaMemcpy(counts, bad, sizeof counts, cudaMemcpyDefault);
    report.Error("device_read", e);
    report.Set("device_sees", counts[0] == 0 ? "old pages" : counts[1] == 0 ? "new pages" : "neither");
  }
  report.Error("unregister", cudaHostUnregister(a));
  (void)cudaGetLastError();
  const PinCounters left = WaitForPinBalance(base.balance(), 5);
  report.Set("pins_left_pages", static_cast<long long>(left.balance() - base.balance()));
  report.Set("quiet_after", PinBalanceIsQuiet() ? "1" : "0");
  report.Set("counters_exact_after", left.exact ? "1" : left.why_inexact);
  b_map = Mapping();  // unmapped before the last synchronisation, as it was
  report.Error("sync_end", cudaDeviceSynchronize());
}

TEST(LifetimeTest, UnmappingARegisteredRangeIsSurvivedAndTheUnregisterReleasesItsPins) {
  PAGELOCK_RULE("R33,C10");  // R33: the unregister gives the pins back (fault unregister_lost)
  PAGELOCK_REQUIRE(RequireUsableDevice());
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  if (!ReadPinCounters().available) PAGELOCK_NOT_SUPPORTED(ReadPinCounters().why_not);
  ChildResult r = RunScenario("StaleRegistration", 60);
  for (const char* key : {"munmap", "same_address", "attributes_new", "type_new", "devptr_new", "device_read",
                          "device_sees", "unregister", "pinned_pages", "pins_left_pages", "sync_end",
                          "quiet_before", "quiet_after", "context_pinned_pages", "counters_exact"}) {
    Observe(key, r.Get(key));
  }
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("register"), "cudaSuccess");
  ASSERT_EQ(r.Get("munmap"), "ok");
  // Reading through the stale device pointer may fault the child's context (undocumented): only
  // recorded. What must hold: the pins do not outlive a successful unregister.
  ASSERT_EQ(r.Get("warmup"), "cudaSuccess");
  EXPECT_EQ(r.Get("warmup_bytes_ok"), "1");
  // Folded counters (stat_refresh) make this exact: the balance is back to the page, or pages
  // stayed pinned (a leak: FAIL). Inconclusive only when a fold failed or something else on the
  // host pinned around the case (a WARN naming the reason and the pages). Earlier readings of
  // 35 or 60 pages "left" were lagging per-CPU counters (docs/platforms/linux-host.md#c10).
  const long long left = std::atoll(r.Get("pins_left_pages").c_str());
  // Only a successful unregister promises the pins back: cudaHostUnregister "Unmaps the memory
  // range ... and makes it pageable again", and it lists failures (cudaErrorInvalidValue,
  // cudaErrorHostMemoryNotRegistered) whose effect on a range the process already unmapped is
  // not documented; such a registration may keep its pages pinned until the process ends (the
  // child's exit). As R137's UnrelatedPinnedMemoryKeepsItsBytesAndThePinsAreGivenBack does, the
  // balance is then recorded (pins_left_pages), not judged. A driver whose unregister reports
  // success and keeps the pages (fault unregister_lost) still fails below.
  if (r.Get("unregister") != "cudaSuccess") {
    // Still one of the listed results, unless the read through the stale device pointer failed
    // (a sticky fault every later call returns; undocumented, recorded above).
    const std::string read = r.Get("device_read");
    if (read == "cudaSuccess" || read == "<missing>") {
      EXPECT_DOCUMENTED_ONE_OF("unregister_documented", r.Get("unregister"),
                               (std::vector<std::string>{"cudaSuccess", "cudaErrorInvalidValue",
                                                         "cudaErrorHostMemoryNotRegistered"}),
                               "13.0 cudaHostUnregister return list");
    }
    Observe("pins_not_judged_because", "unregister: " + r.Get("unregister"));
    return;
  }
  if (r.Get("counters_exact") != "1" || r.Get("counters_exact_after") != "1") {
    Warn("the pin balance after the unregister cannot be checked exactly (" + std::to_string(left) +
         " page(s) from the baseline): " + (r.Get("counters_exact") != "1" ? r.Get("counters_exact")
                                                                       : r.Get("counters_exact_after")));
    return;
  }
  if (left != 0 && (r.Get("quiet_before") != "1" || r.Get("quiet_after") != "1")) {
    Warn("the host-wide pin balance moved around the case (another process pins): " + std::to_string(left) +
         " page(s) from the baseline after the unregister is inconclusive");
    return;
  }
  EXPECT_EQ(left, 0) << "the pin balance after the successful unregister of an unmapped range is "
                     << left << " page(s) off its baseline (folded "
                     << "counters, quiet host): " << (left > 0 ? "pages stayed pinned" : "pages pinned before were released");
}

// A small warm-up, so the context's own first-use pins (kernel, cudaMalloc, staging buffers) are
// not counted against the registrations.
void WarmUp(ScenarioReport& report) {
  unsigned long long* warm = nullptr;
  unsigned long long host[2] = {~0ull, ~0ull};
  cudaError_t e = cudaMalloc(&warm, sizeof host);
  const DeviceBuffer own_warm = DeviceBuffer::Adopt(warm);  // freed on return
  if (e == cudaSuccess) e = cudaMemset(warm, 0, sizeof host);
  if (e == cudaSuccess) e = LaunchCountPatternMismatches(warm, sizeof *warm, 0, warm + 1);
  // copy-check: both words read back are judged next (warmup_bytes_ok)
  if (e == cudaSuccess) e = cudaMemcpy(host, warm, sizeof host, cudaMemcpyDeviceToHost);
  report.Set("warmup_bytes_ok", host[0] == 0 && host[1] <= sizeof *warm ? "1" : "0");
  report.Error("warmup", e);
}

// What the device reads through `dev` (kSize bytes): the pattern of `old_seed`, of `new_seed`, or
// neither; a failing call is reported by name.
std::string DeviceSees(void* dev, uint32_t old_seed, uint32_t new_seed, unsigned long long* counts) {
  cudaError_t e = cudaMemset(counts, 0, 2 * sizeof *counts);
  if (e == cudaSuccess) e = LaunchCountPatternMismatches(dev, kSize, old_seed, counts);
  if (e == cudaSuccess) e = LaunchCountPatternMismatches(dev, kSize, new_seed, counts + 1);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  unsigned long long c[2] = {~0ull, ~0ull};
  // copy-check: the two mismatch counts read back are the result, judged just below
  if (e == cudaSuccess) e = cudaMemcpy(c, counts, sizeof c, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return cudaGetErrorName(e);
  }
  return c[0] == 0 ? "old pages" : c[1] == 0 ? "new pages" : "neither";
}

std::string HostSees(const void* p, uint32_t old_seed) {
  if (HostCountPatternMismatches(p, kSize, old_seed) == 0) return "old bytes";
  const auto* b = static_cast<const unsigned char*>(p);
  return std::all_of(b, b + kSize, [](unsigned char c) { return c == 0; }) ? "zeros" : "other bytes";
}

#ifndef MREMAP_FIXED
#define MREMAP_FIXED 2
#endif

// One fresh process, two registered ranges pulled out from under their registrations: one moved
// with mremap, one discarded with MADV_DONTNEED. The pin balance is taken around both; an
// unrelated mapped allocation is checked last.
PAGELOCK_SCENARIO(ReshapedRegistrations) {
  report.Error("init", cudaFree(nullptr));
  WarmUp(report);
  unsigned long long* counts = nullptr;
  report.Error("counts", cudaMalloc(&counts, 2 * sizeof *counts));
  DeviceBuffer own_counts = DeviceBuffer::Adopt(counts);
  void* unrelated = nullptr;
  report.Error("unrelated_alloc", cudaHostAlloc(&unrelated, kSize, cudaHostAllocMapped));
  if (!unrelated || !counts) return;
  HostFillPattern(unrelated, kSize, 9);
  report.Set("quiet_before", PinBalanceIsQuiet(0.1) ? "1" : "0");
  const PinCounters base = ReadPinCounters();
  report.Set("counters_exact", base.exact ? "1" : (base.available ? base.why_inexact : base.why_not));

  // mremap: the registered pages move to another address; the old one is left unmapped.
  void* a = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* dest = mmap(nullptr, kSize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  // The owners unmap what is mapped at the end: dest, and a where it did not move.
  Mapping a_map = Mapping::Adopt(a, kSize), dest_map = Mapping::Adopt(dest, kSize);
  if (a == MAP_FAILED || dest == MAP_FAILED) return report.Set("mmap", "failed");
  HostFillPattern(a, kSize, 3);
  report.Error("mremap_register", cudaHostRegister(a, kSize, cudaHostRegisterMapped));
  void* dev_a = nullptr;
  report.Error("mremap_devptr", cudaHostGetDevicePointer(&dev_a, a, 0));
  void* moved = mremap(a, kSize, kSize, MREMAP_MAYMOVE | MREMAP_FIXED, dest);
  report.Set("mremap", moved == dest ? "ok" : std::strerror(errno));
  if (moved == dest) a_map.release();  // the pages moved over dest: nothing is left at a
  if (moved == dest) {
    report.Set("mremap_host_at_new_address", HostSees(dest, 3));
    HostFillPattern(dest, kSize, 4);
    cudaPointerAttributes at{};
    report.Error("mremap_attributes_old", cudaPointerGetAttributes(&at, a));
    report.Set("mremap_type_old", static_cast<long long>(at.type));
    cudaPointerAttributes an{};
    report.Error("mremap_attributes_new", cudaPointerGetAttributes(&an, dest));
    report.Set("mremap_type_new", static_cast<long long>(an.type));
    (void)cudaGetLastError();
    if (dev_a) report.Set("mremap_device_sees", DeviceSees(dev_a, 3, 4, counts));
  }
  report.Error("mremap_unregister", cudaHostUnregister(a));
  (void)cudaGetLastError();
  a_map = Mapping();
  dest_map = Mapping();

  // MADV_DONTNEED: a private anonymous range's pages are dropped from the process; the host's next
  // touch gets new (zero) pages.
  void* c = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (c == MAP_FAILED) return report.Set("mmap", "failed");
  Mapping c_map = Mapping::Adopt(c, kSize);
  HostFillPattern(c, kSize, 5);
  report.Error("dontneed_register", cudaHostRegister(c, kSize, cudaHostRegisterMapped));
  void* dev_c = nullptr;
  report.Error("dontneed_devptr", cudaHostGetDevicePointer(&dev_c, c, 0));
  report.Set("dontneed", madvise(c, kSize, MADV_DONTNEED) == 0 ? "ok" : std::strerror(errno));
  report.Set("dontneed_host_sees", HostSees(c, 5));
  HostFillPattern(c, kSize, 6);
  cudaPointerAttributes ac{};
  report.Error("dontneed_attributes", cudaPointerGetAttributes(&ac, c));
  report.Set("dontneed_type", static_cast<long long>(ac.type));
  (void)cudaGetLastError();
  if (dev_c) report.Set("dontneed_device_sees", DeviceSees(dev_c, 5, 6, counts));
  report.Error("dontneed_unregister", cudaHostUnregister(c));
  (void)cudaGetLastError();
  c_map = Mapping();  // unmapped before the pin balance is read, as it was

  const PinCounters left = WaitForPinBalance(base.balance(), 5);
  report.Set("pins_left_pages", static_cast<long long>(left.balance() - base.balance()));
  report.Set("quiet_after", PinBalanceIsQuiet(0.1) ? "1" : "0");
  report.Set("counters_exact_after", left.exact ? "1" : (left.available ? left.why_inexact : left.why_not));

  // The unrelated allocation: its bytes, to the host and to the device.
  report.Set("unrelated_host_bad", static_cast<long long>(HostCountPatternMismatches(unrelated, kSize, 9)));
  void* dev_u = nullptr;
  cudaError_t e = cudaHostGetDevicePointer(&dev_u, unrelated, 0);
  report.Set("unrelated_device_sees", e == cudaSuccess ? DeviceSees(dev_u, 9, 10, counts) : cudaGetErrorName(e));
  report.Error("unrelated_free", cudaFreeHost(unrelated));
  own_counts = DeviceBuffer();  // freed before the last synchronisation, as it was
  report.Error("sync_end", cudaDeviceSynchronize());
}

const ChildResult& Reshaped() {
  return SharedScenario("ReshapedRegistrations", 60);
}

// cudaHostUnregister's documented results (13.0): cudaSuccess, cudaErrorInvalidValue,
// cudaErrorHostMemoryNotRegistered. A device read that failed (a fault is undocumented too) may
// leave a sticky error, which any later call returns: then the unregister is only recorded.
void ExpectDocumentedUnregister(const ChildResult& r, const std::string& what) {
  const std::string got = r.Get(what + "_unregister");
  const std::string read = r.Get(what + "_device_sees");
  if (read != "old pages" && read != "new pages" && read != "neither" && read != "<missing>") {
    Observe(what + "_unregister_after_failed_read", got);
    return;
  }
  EXPECT_DOCUMENTED_ONE_OF(what + "_unregister", got,
                           (std::vector<std::string>{"cudaSuccess", "cudaErrorInvalidValue",
                                                     "cudaErrorHostMemoryNotRegistered"}),
                           "13.0 cudaHostUnregister return list");
}

class ReshapedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PAGELOCK_REQUIRE(RequireUsableDevice());
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
    r_ = &Reshaped();
    ASSERT_CHILD_COMPLETED(*r_);
    ASSERT_EQ(r_->Get("init"), "cudaSuccess");
    ASSERT_EQ(r_->Get("unrelated_alloc"), "cudaSuccess");
    ASSERT_EQ(r_->Get("mmap"), "<missing>");
  }
  const ChildResult* r_ = nullptr;
};

// A driver that crashes the process, returns an undocumented code from the unregister, or keeps
// (or loses) the registration so that the unregister misbehaves, fails this; what the runtime and
// the device see after the move is recorded (R138).
TEST_F(ReshapedTest, MovingARegisteredRangeWithMremapIsSurvivedAndItsUnregisterIsDocumented) {
  PAGELOCK_RULE("R137,R138");
  const ChildResult& r = *r_;
  ASSERT_EQ(r.Get("mremap_register"), "cudaSuccess");
  for (const char* key : {"mremap", "mremap_host_at_new_address", "mremap_attributes_old", "mremap_type_old",
                          "mremap_attributes_new", "mremap_type_new", "mremap_device_sees", "mremap_unregister"}) {
    Observe(key, r.Get(key));
  }
  ExpectDocumentedUnregister(r, "mremap");
}

TEST_F(ReshapedTest, DiscardingARegisteredRangeWithMadvDontneedIsSurvivedAndItsUnregisterIsDocumented) {
  PAGELOCK_RULE("R137,R138");
  const ChildResult& r = *r_;
  ASSERT_EQ(r.Get("dontneed_register"), "cudaSuccess");
  for (const char* key : {"dontneed", "dontneed_host_sees", "dontneed_attributes", "dontneed_type",
                          "dontneed_device_sees", "dontneed_unregister"}) {
    Observe(key, r.Get(key));
  }
  ExpectDocumentedUnregister(r, "dontneed");
}

// A driver whose unregister of a moved or discarded range frees or overwrites pages it does not
// own (another allocation's), or leaves the pages pinned, fails this.
TEST_F(ReshapedTest, UnrelatedPinnedMemoryKeepsItsBytesAndThePinsAreGivenBack) {
  PAGELOCK_RULE("R137");
  const ChildResult& r = *r_;
  EXPECT_EQ(r.Get("unrelated_host_bad"), "0") << "an unrelated pinned allocation's bytes changed (host)";
  // A read through a stale alias that faulted (undocumented) leaves a sticky error every later
  // device call returns: the device's view of the unrelated allocation is then only recorded.
  auto faulted = [&](const std::string& key) {
    const std::string v = r.Get(key);
    return v != "old pages" && v != "new pages" && v != "neither" && v != "<missing>";
  };
  if (faulted("mremap_device_sees") || faulted("dontneed_device_sees")) {
    Observe("unrelated_device_sees_after_a_fault", r.Get("unrelated_device_sees"));
    Observe("sync_end_after_a_fault", r.Get("sync_end"));
  } else {
    EXPECT_EQ(r.Get("unrelated_device_sees"), "old pages") << "what the device read of the unrelated allocation";
    EXPECT_EQ(r.Get("unrelated_free"), "cudaSuccess");
    EXPECT_EQ(r.Get("sync_end"), "cudaSuccess");
  }
  ASSERT_EQ(r.Get("warmup"), "cudaSuccess");
  EXPECT_EQ(r.Get("warmup_bytes_ok"), "1");
  const long long left = std::atoll(r.Get("pins_left_pages").c_str());
  Observe("pins_left_pages", left);
  // An unregister that failed (a documented result) may keep its pages pinned until the process
  // ends: the balance is only asserted when both succeeded.
  if (r.Get("mremap_unregister") != "cudaSuccess" || r.Get("dontneed_unregister") != "cudaSuccess") {
    Observe("pins_not_judged_because", "unregister: " + r.Get("mremap_unregister") + " / " + r.Get("dontneed_unregister"));
    return;
  }
  if (r.Get("counters_exact") != "1" || r.Get("counters_exact_after") != "1") {
    Warn("the pin balance after the unregisters cannot be checked exactly (" + std::to_string(left) +
         " page(s) from the baseline): " + (r.Get("counters_exact") != "1" ? r.Get("counters_exact")
                                                                       : r.Get("counters_exact_after")));
    return;
  }
  if (left != 0 && (r.Get("quiet_before") != "1" || r.Get("quiet_after") != "1")) {
    Warn("the host-wide pin balance moved around the case (another process pins): " + std::to_string(left) +
         " page(s) from the baseline after the unregisters is inconclusive");
    return;
  }
  EXPECT_EQ(left, 0) << "the pin balance after unregistering a moved and a discarded range is " << left
                     << " page(s) off its baseline (folded counters, quiet host)";
}

TEST(LifetimeTest, ABufferIdIsNeverReusedAfterAFree) {
  PAGELOCK_RULE("C11");
  PAGELOCK_REQUIRE(RequireUsableDevice());
  PAGELOCK_REQUIRE(RequireDriverApi());
  ASSERT_CUDA_OK(cudaSetDevice(0));
  const DriverApi& d = Driver();
  auto id_of = [&](void* p, unsigned long long* id) {
    return d.cuPointerGetAttribute(id, CU_POINTER_ATTRIBUTE_BUFFER_ID, reinterpret_cast<CUdeviceptr>(p));
  };
  void* first = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&first, kSize, 0));
  auto own_first = PinnedBuffer::Adopt(first);
  unsigned long long first_id = 0;
  ASSERT_CU_OK(id_of(first, &first_id));
  own_first.release();  // the free is part of the case
  ASSERT_CUDA_OK(cudaFreeHost(first));
  // Allocate until the address comes back (bounded), keeping every ID seen.
  std::vector<PinnedBuffer> own_held;
  std::vector<unsigned long long> ids;
  bool reused = false;
  for (int i = 0; i < 32 && !reused; ++i) {
    void* p = nullptr;
    ASSERT_CUDA_OK(cudaHostAlloc(&p, kSize, 0));
    own_held.push_back(PinnedBuffer::Adopt(p));
    unsigned long long id = 0;
    EXPECT_CU_OK(id_of(p, &id));
    EXPECT_NE(id, first_id) << "allocation " << i << " got the ID of a freed allocation";
    for (unsigned long long other : ids) EXPECT_NE(id, other) << "two live allocations share an ID";
    ids.push_back(id);
    reused = p == first;
  }
  Observe("address_reused", reused);
  for (PinnedBuffer& p : own_held) EXPECT_CUDA_OK(p.Free());

}

}  // namespace
}  // namespace pagelock
