// Peer paths that touch page-locked host memory, on two GPUs:
//   - cudaMemcpyPeer and cudaMemcpyPeerAsync between the devices, fed from and drained to pinned
//     Portable memory, with peer access off (the runtime stages the copy through host memory)
//     and, in a child, with it enabled and then disabled again; every byte checked both ways;
//   - host mappings across a peer-access change (peer-gap E5): a Portable|Mapped allocation made
//     on GPU 0 and a registered Portable|Mapped heap buffer, each used by kernels on both GPUs
//     through each device's own pointer, taken once before any change: before enabling, while
//     enabled, and after disabling, each device writes its half and reads the host's bytes;
//   - cudaMemset and cudaMemsetAsync through each device's own pointer to registered and to
//     allocated Portable|Mapped memory (E3), each checked by the host.
// Peer access is per-context state that outlives a case, so enabling it happens in a scenario
// child. NotSupported with fewer than two GPUs (cudaGetDeviceCount=1 (need 2)) and, for the
// enabled cases, with cudaDeviceCanAccessPeer=0. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_kinds.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"
#include "kernels/pattern.h"
#include "kernels/streams/stream_kernels.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{4} << 20;

size_t CountByteMismatches(const void* p, size_t n, unsigned char value) {
  const auto* b = static_cast<const volatile unsigned char*>(p);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += b[i] != value;
  return bad;
}

// Bytes i in [begin, end) of p with p[i] != PatternByte(i, seed).
size_t CountPatternMismatchesIn(const unsigned char* p, size_t begin, size_t end, uint32_t seed) {
  const auto* b = reinterpret_cast<const volatile unsigned char*>(p);
  size_t bad = 0;
  for (size_t i = begin; i < end; ++i) bad += b[i] != PatternByte(i, seed);
  return bad;
}

// One peer copy through pinned memory: host `in` -> device `from` -> peer copy ->
// device `to` -> host `out`, then every byte of `out` checked against `in`'s pattern. The kit's
// owners release in the order written (a failed release fails the case; in a scenario child it is
// printed to the child's log). Returns the first failing call's error; *bad gets the mismatching
// bytes.
cudaError_t PeerCopyThroughPinned(int from, int to, bool async, uint32_t seed, size_t* bad) {
  *bad = ~size_t{0};
  void* in = nullptr;
  void* out = nullptr;
  void* a = nullptr;
  void* b = nullptr;
  cudaStream_t s = nullptr;
  cudaError_t e = cudaSetDevice(from);
  if (e == cudaSuccess) e = cudaHostAlloc(&in, kSize, cudaHostAllocPortable);
  if (e == cudaSuccess) e = cudaHostAlloc(&out, kSize, cudaHostAllocPortable);
  if (e == cudaSuccess) e = cudaMalloc(&a, kSize);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaSetDevice(to);
  if (e == cudaSuccess) e = cudaMalloc(&b, kSize);
  DeviceBuffer own_a = DeviceBuffer::Adopt(a), own_b = DeviceBuffer::Adopt(b);
  PinnedBuffer own_in = PinnedBuffer::Adopt(in), own_out = PinnedBuffer::Adopt(out);
  if (e == cudaSuccess) {
    HostFillPattern(in, kSize, seed);
    std::memset(out, 0, kSize);
    e = cudaSetDevice(from);
  }
  // copy-check: the chain is checked end to end in `out` below
  if (e == cudaSuccess) e = cudaMemcpy(a, in, kSize, cudaMemcpyHostToDevice);
  if (e == cudaSuccess && async) {
    // copy-check: the chain is checked end to end in `out` below
    e = cudaMemcpyPeerAsync(b, to, a, from, kSize, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  } else if (e == cudaSuccess) {
    // copy-check: the chain is checked end to end in `out` below
    e = cudaMemcpyPeer(b, to, a, from, kSize);
  }
  if (e == cudaSuccess) e = cudaSetDevice(to);
  if (e == cudaSuccess) e = cudaMemcpy(out, b, kSize, cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) *bad = HostCountPatternMismatches(out, kSize, seed);
  const cudaError_t f = cudaSetDevice(from);
  if (s) (void)cudaStreamDestroy(s);
  own_a = DeviceBuffer();
  own_b = DeviceBuffer();
  own_in = PinnedBuffer();
  own_out = PinnedBuffer();
  (void)cudaSetDevice(0);
  return e != cudaSuccess ? e : f;
}

class PeerHostTest : public GpuTest {
 protected:
  PeerHostTest() : GpuTest(/*devices=*/2) {}
  void TearDown() override {
    if (!IsSkipped()) {  // the health check covers device 0; device 1 must be healthy too
      EXPECT_CUDA_OK(cudaSetDevice(1));
      EXPECT_CUDA_OK(cudaDeviceSynchronize());
      EXPECT_CUDA_OK(cudaSetDevice(0));
    }
    GpuTest::TearDown();
  }
  // NotSupported unless both devices can access each other.
  void RequirePeerAccess() {
    int a = 0, b = 0;
    ASSERT_CUDA_OK(cudaDeviceCanAccessPeer(&a, 0, 1));
    ASSERT_CUDA_OK(cudaDeviceCanAccessPeer(&b, 1, 0));
    Observe("can_access_peer_0_1", a);
    Observe("can_access_peer_1_0", b);
    if (!a || !b) {
      PAGELOCK_NOT_SUPPORTED("cudaDeviceCanAccessPeer(0, 1)=" + std::to_string(a) +
                             ", cudaDeviceCanAccessPeer(1, 0)=" + std::to_string(b) + " (need 1)");
    }
  }
};

// Faults caught: a staged peer copy that drops or reorders a chunk of its bounce buffer, an
// async peer copy whose stream completes before its bytes land, a peer copy that needs peer
// access although the documentation says it works without.
TEST_F(PeerHostTest, PeerCopiesThroughPinnedMemoryDeliverEveryByteWithPeerAccessOff) {
  PAGELOCK_RULE("R161");
  // Off, as the process starts: disabling what was never enabled says so.
  // "cudaErrorPeerAccessNotEnabled is returned if direct access to memory on peerDevice has not
  // yet been enabled from the current device" (cudaDeviceDisablePeerAccess).
  EXPECT_CUDA_ERROR(cudaErrorPeerAccessNotEnabled, cudaDeviceDisablePeerAccess(1));
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  for (const bool async : {false, true}) {
    for (const int from : {0, 1}) {
      size_t bad = 0;
      EXPECT_CUDA_OK(PeerCopyThroughPinned(from, 1 - from, async, seed + from + 2 * async, &bad));
      EXPECT_EQ(bad, 0u) << (async ? "cudaMemcpyPeerAsync" : "cudaMemcpyPeer") << " from device " << from
                         << " with peer access off";
    }
  }
}

// ---- With peer access enabled, then disabled (a child: the state outlives the case) ----------

// Both directions on, or both off; the second call of each says the state really changed.
void SetPeerAccess(bool on, const std::string& key, ScenarioReport& report) {
  for (const int d : {0, 1}) {
    const std::string k = key + "_" + std::to_string(d);
    report.Error(k + "_set_device", cudaSetDevice(d));
    report.Error(k, on ? cudaDeviceEnablePeerAccess(1 - d, 0) : cudaDeviceDisablePeerAccess(1 - d));
    report.Error(k + "_again", on ? cudaDeviceEnablePeerAccess(1 - d, 0) : cudaDeviceDisablePeerAccess(1 - d));
    (void)cudaGetLastError();  // the second call's error is expected and reported
  }
  report.Error(key + "_back_to_0", cudaSetDevice(0));
}

void ReportPeerCopies(const std::string& phase, uint32_t seed, ScenarioReport& report) {
  for (const bool async : {false, true}) {
    for (const int from : {0, 1}) {
      size_t bad = 0;
      const std::string k = phase + (async ? "_async" : "_sync") + "_from" + std::to_string(from);
      report.Error(k, PeerCopyThroughPinned(from, 1 - from, async, seed + from + 2 * async, &bad));
      report.Set(k + "_bad", static_cast<long long>(bad));
    }
  }
}

// Each device writes its half of `host` through its own pointer `alias[d]`, then reads the whole
// buffer as the host wrote it; the host checks the writes. Keys: <phase>_<kind>_dev<d>_...
void ReportMappingUse(const std::string& phase, const std::string& kind, unsigned char* host,
                      void* const alias[2], unsigned long long* counters, void* const counter_alias[2],
                      uint32_t seed, ScenarioReport& report) {
  const size_t half = kSize / 2;
  const std::string p = phase + "_" + kind;
  cudaError_t e = cudaSuccess;
  std::memset(host, 0, kSize);
  for (int d = 0; d < 2 && e == cudaSuccess; ++d) {
    e = cudaSetDevice(d);
    if (e == cudaSuccess) e = LaunchFillPatternFrom(static_cast<unsigned char*>(alias[d]) + d * half, half, d * half, seed, 0);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    report.Error(p + "_dev" + std::to_string(d) + "_write", e);
    report.Set(p + "_dev" + std::to_string(d) + "_write_bad",
               static_cast<long long>(CountPatternMismatchesIn(host, d * half, (d + 1) * half, seed)));
  }
  HostFillPattern(host, kSize, seed ^ 0xffu);
  for (int d = 0; d < 2; ++d) {
    counters[d] = 0;
    e = cudaSetDevice(d);
    if (e == cudaSuccess) e = LaunchCountPatternMismatches(alias[d], kSize, seed ^ 0xffu,
                                                           static_cast<unsigned long long*>(counter_alias[d]), 0);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    report.Error(p + "_dev" + std::to_string(d) + "_read", e);
    report.Set(p + "_dev" + std::to_string(d) + "_read_bad", static_cast<long long>(counters[d]));
    // Whether a fresh query returns the pointer taken before (not promised either way).
    void* now = nullptr;
    const cudaError_t q = cudaHostGetDevicePointer(&now, host, 0);
    report.Set(p + "_dev" + std::to_string(d) + "_alias_unchanged", q == cudaSuccess && now == alias[d] ? "yes" : "no");
  }
  (void)cudaSetDevice(0);
}

PAGELOCK_SCENARIO(PeerAccessCycle) {
  // "<copies|mappings>:<seed>", the seed from the parent's CaseSeed().
  const std::string arg = ScenarioArg();
  const bool copies = arg.rfind("copies:", 0) == 0;
  const uint32_t seed = static_cast<uint32_t>(std::strtoul(arg.substr(arg.find(':') + 1).c_str(), nullptr, 10));
  report.Error("init", cudaSetDevice(0));
  if (copies) {
    SetPeerAccess(true, "enable", report);
    ReportPeerCopies("during", seed, report);
    SetPeerAccess(false, "disable", report);
    ReportPeerCopies("after", seed ^ 0x77u, report);
    return;
  }
  // Both buffers and the counters are made, and every device pointer taken, before any change.
  void* alloc = nullptr;
  report.Error("alloc", cudaHostAlloc(&alloc, kSize, cudaHostAllocPortable | cudaHostAllocMapped));
  std::unique_ptr<void, decltype(&std::free)> heap(std::aligned_alloc(4096, kSize), &std::free);
  report.Error("register", heap ? cudaHostRegister(heap.get(), kSize, cudaHostRegisterPortable | cudaHostRegisterMapped)
                                : cudaErrorMemoryAllocation);
  void* counters = nullptr;
  report.Error("counters", cudaHostAlloc(&counters, 2 * sizeof(unsigned long long),
                                         cudaHostAllocPortable | cudaHostAllocMapped));
  void* alloc_alias[2] = {nullptr, nullptr};
  void* heap_alias[2] = {nullptr, nullptr};
  void* counter_alias[2] = {nullptr, nullptr};
  for (int d = 0; d < 2; ++d) {
    report.Error("aliases_dev" + std::to_string(d), [&] {
      cudaError_t e = cudaSetDevice(d);
      if (e == cudaSuccess) e = cudaHostGetDevicePointer(&alloc_alias[d], alloc, 0);
      if (e == cudaSuccess) e = cudaHostGetDevicePointer(&heap_alias[d], heap.get(), 0);
      if (e == cudaSuccess) e = cudaHostGetDevicePointer(&counter_alias[d], counters, 0);
      return e;
    }());
  }
  if (!alloc || !counters || !alloc_alias[1] || !heap_alias[1] || !counter_alias[1]) return;
  auto* c = static_cast<unsigned long long*>(counters);
  auto use = [&](const std::string& phase, uint32_t seed) {
    ReportMappingUse(phase, "alloc", static_cast<unsigned char*>(alloc), alloc_alias, c, counter_alias, seed, report);
    ReportMappingUse(phase, "registered", static_cast<unsigned char*>(heap.get()), heap_alias, c, counter_alias,
                     seed ^ 0x5au, report);
  };
  use("before", seed);
  SetPeerAccess(true, "enable", report);
  use("during", seed + 1);
  SetPeerAccess(false, "disable", report);
  use("after", seed + 2);
  report.Error("unregister", cudaHostUnregister(heap.get()));
  report.Error("free_alloc", cudaFreeHost(alloc));
  report.Error("free_counters", cudaFreeHost(counters));
}

// The state changes the two children go through, asserted by name (cudaDeviceEnablePeerAccess:
// "cudaErrorPeerAccessAlreadyEnabled is returned if direct access ... has already been enabled";
// cudaDeviceDisablePeerAccess: cudaErrorPeerAccessNotEnabled when not enabled).
void ExpectPeerAccessCycled(const ChildResult& r) {
  for (const char* d : {"0", "1"}) {
    EXPECT_EQ(r.Get(std::string("enable_") + d), "cudaSuccess") << "enabling from device " << d;
    EXPECT_EQ(r.Get(std::string("enable_") + d + "_again"), "cudaErrorPeerAccessAlreadyEnabled") << d;
    EXPECT_EQ(r.Get(std::string("disable_") + d), "cudaSuccess") << "disabling from device " << d;
    EXPECT_EQ(r.Get(std::string("disable_") + d + "_again"), "cudaErrorPeerAccessNotEnabled") << d;
  }
}

// Faults caught: a peer copy that, once peer access is on, takes a direct path that loses bytes,
// or that after a disable still takes the direct path (fault) or leaves the staging path broken.
TEST_F(PeerHostTest, PeerCopiesThroughPinnedMemoryDeliverEveryByteWithPeerAccessOnAndAfterItIsOff) {
  PAGELOCK_RULE("R161,R162");
  RequirePeerAccess();
  if (IsSkipped() || HasFatalFailure()) return;
  ChildResult r = RunScenario("PeerAccessCycle", 60,
                              {ScenarioArgEnv("copies:" + std::to_string(static_cast<uint32_t>(CaseSeed())))});
  ASSERT_CHILD_COMPLETED(r);
  ExpectPeerAccessCycled(r);
  for (const char* phase : {"during", "after"}) {
    for (const char* mode : {"_sync", "_async"}) {
      for (const char* from : {"_from0", "_from1"}) {
        const std::string k = std::string(phase) + mode + from;
        EXPECT_EQ(r.Get(k), "cudaSuccess") << k;
        EXPECT_EQ(r.Get(k + "_bad"), "0") << k << ": the peer copy did not deliver every byte";
      }
    }
  }
}

// Faults caught (E5): a driver that rebuilds a device's mappings when peer access changes and
// drops host mappings (the pointer taken before faults or reaches other pages), one that maps a
// Portable allocation on the allocating device only, or a registration whose other-device
// mapping dies with the peer change; the keys say which phase, buffer, device and direction.
TEST_F(PeerHostTest, HostMappingsOfEachDeviceSurvivePeerAccessEnableAndDisable) {
  PAGELOCK_RULE("R162,R14,R18");
  RequirePeerAccess();
  if (IsSkipped() || HasFatalFailure()) return;
  ChildResult r = RunScenario("PeerAccessCycle", 60,
                              {ScenarioArgEnv("mappings:" + std::to_string(static_cast<uint32_t>(CaseSeed())))});
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("alloc"), "cudaSuccess");
  ASSERT_EQ(r.Get("register"), "cudaSuccess");
  ASSERT_EQ(r.Get("aliases_dev0"), "cudaSuccess");
  ASSERT_EQ(r.Get("aliases_dev1"), "cudaSuccess");
  ExpectPeerAccessCycled(r);
  for (const char* phase : {"before", "during", "after"}) {
    for (const char* kind : {"alloc", "registered"}) {
      for (const char* d : {"0", "1"}) {
        const std::string k = std::string(phase) + "_" + kind + "_dev" + d;
        EXPECT_EQ(r.Get(k + "_write"), "cudaSuccess") << k;
        EXPECT_EQ(r.Get(k + "_write_bad"), "0") << k << ": the device's writes through its pointer";
        EXPECT_EQ(r.Get(k + "_read"), "cudaSuccess") << k;
        EXPECT_EQ(r.Get(k + "_read_bad"), "0") << k << ": the device's reads through its pointer";
        Observe(k + "_alias_unchanged", r.Get(k + "_alias_unchanged"));
      }
    }
  }
  EXPECT_EQ(r.Get("unregister"), "cudaSuccess");
  EXPECT_EQ(r.Get("free_alloc"), "cudaSuccess");
}

// ---- Memsets through each device's pointer (E3) ----------------------------------------------

// The kinds: a page-aligned heap registered Portable|Mapped, and cudaHostAlloc Portable|Mapped.
class PeerMemsetTest : public PeerHostTest, public ::testing::WithParamInterface<HostKind> {};

// Faults caught: a memset through device 1's pointer that lands on device 0's mapping of other
// pages or is dropped, a memset that sets more or fewer bytes than asked (the neighbouring
// parts are checked), an async memset whose stream completes before the bytes land.
TEST_P(PeerMemsetTest, MemsetsThroughEachDevicesPointerSetExactlyTheirBytes) {
  PAGELOCK_RULE("R163,R14,R18");
  ASSERT_CUDA_OK(cudaSetDevice(0));
  std::unique_ptr<void, decltype(&std::free)> heap(nullptr, &std::free);
  PinnedBuffer pinned;
  HostRegistration registered;
  unsigned char* host = nullptr;
  if (GetParam() == HostKind::kRegisteredMalloc) {
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
    heap.reset(std::aligned_alloc(4096, kSize));
    ASSERT_NE(heap.get(), nullptr);
    ASSERT_CUDA_OK(cudaHostRegister(heap.get(), kSize, cudaHostRegisterPortable | cudaHostRegisterMapped));
    registered = HostRegistration::Adopt(heap.get(), kSize);
    host = static_cast<unsigned char*>(heap.get());
  } else {
    void* p = nullptr;
    ASSERT_CUDA_OK(cudaHostAlloc(&p, kSize, cudaHostAllocPortable | cudaHostAllocMapped));
    pinned = PinnedBuffer::Adopt(p, kSize);
    host = static_cast<unsigned char*>(p);
  }
  // Four parts: device d sets part 2d with cudaMemset and part 2d + 1 with cudaMemsetAsync.
  const size_t part = kSize / 4;
  std::memset(host, 0xee, kSize);
  for (int d = 0; d < 2; ++d) {
    ASSERT_CUDA_OK(cudaSetDevice(d));
    void* alias = nullptr;
    ASSERT_CUDA_OK(cudaHostGetDevicePointer(&alias, host, 0));
    auto* a = static_cast<unsigned char*>(alias);
    const unsigned char v = static_cast<unsigned char>(0x10 + 2 * d), w = static_cast<unsigned char>(0x11 + 2 * d);
    ASSERT_CUDA_OK(cudaMemset(a + 2 * d * part, v, part));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(CountByteMismatches(host + 2 * d * part, part, v), 0u) << "cudaMemset through device " << d;
    OwnedStream s(cudaStreamNonBlocking);
    ASSERT_CUDA_OK(s.status());
    ASSERT_CUDA_OK(cudaMemsetAsync(a + (2 * d + 1) * part, w, part, s.get()));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s.get()));
    EXPECT_EQ(CountByteMismatches(host + (2 * d + 1) * part, part, w), 0u) << "cudaMemsetAsync through device " << d;
    // The parts not yet set are untouched.
    EXPECT_EQ(CountByteMismatches(host + (2 * d + 2) * part, kSize - (2 * d + 2) * part, 0xee), 0u)
        << "bytes beyond device " << d << "'s parts";
    EXPECT_CUDA_OK(s.Free());
  }
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(CountByteMismatches(host + 2 * d * part, part, static_cast<unsigned char>(0x10 + 2 * d)), 0u);
    EXPECT_EQ(CountByteMismatches(host + (2 * d + 1) * part, part, static_cast<unsigned char>(0x11 + 2 * d)), 0u);
  }
  ASSERT_CUDA_OK(cudaSetDevice(0));
  EXPECT_CUDA_OK(GetParam() == HostKind::kRegisteredMalloc ? registered.Free() : pinned.Free());
}

INSTANTIATE_TEST_SUITE_P(EveryKind, PeerMemsetTest,
                         ::testing::Values(HostKind::kRegisteredMalloc, HostKind::kHostAllocPortableMapped),
                         [](const ::testing::TestParamInfo<HostKind>& i) {
                           // The kinds' names in this family's case ids, which predate the kit's names.
                           static const Spelling<HostKind> kCaseName(
                               HostKindName, {{HostKind::kRegisteredMalloc, "RegisteredPortableMapped"},
                                              {HostKind::kHostAllocPortableMapped, "AllocatedPortableMapped"}});
                           return kCaseName(i.param);
                         });

}  // namespace
}  // namespace pagelock
