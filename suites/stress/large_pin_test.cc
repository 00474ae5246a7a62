// Large single allocations and registrations: one call of 2 GiB + 4 KiB (past the 2 GiB limit
// some kernels had), 4 GiB, 16 GiB, the most RAM allows, 110% of the device's memory
// (oversubscription; NotSupported where RAM is smaller) and 512 GiB (R47: the per-call limit
// r580 has; NotSupported with MemTotal and MemAvailable where the host cannot hold it), through
// cudaHostAlloc and cudaHostRegister (Portable | Mapped, so every device may use them), each in
// a contained scenario child. The host writes every byte (a word pattern, a seed per 1 GiB
// chunk), every device reads every byte through its own device pointer (a kernel counting
// mismatches, one launch per chunk), each chunk is then rewritten by one device (chunk k by
// device k mod count) and the host checks every byte; a failure must be clean
// (cudaErrorMemoryAllocation, not sticky). A size the host cannot hold above the memory floor
// is NotSupported with the numbers.
// Budgets (environment, recorded): PAGELOCK_STRESS_LARGE_MAX_GIB (64: cap of every single call,
// and so of the "most RAM allows" size; pinning and checking run at about 1.3 GiB/s here, so the
// cap is what keeps the stress tier within its ten minutes), PAGELOCK_STRESS_FLOOR_GIB (containment.h). Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <signal.h>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/containment.h"
#include "fixtures/gpu_test.h"
#include "fixtures/kernel_accounting.h"
#include "fixtures/mapping.h"
#include "fixtures/resources.h"
#include "fixtures/settings.h"
#include "kernels/stress/stress_kernels.h"
#include "suites/stress/pin_paths.h"

namespace pagelock {
namespace {

constexpr int64_t kHeadroom = 4 * kGiB;  // the child's own memory (context, binary) in its cgroup

constexpr size_t kChunk = size_t{1} << 30;  // one kernel launch of the every-byte check (~20 ms over PCIe)

enum class Size { k2GiBPlus4KiB, k4GiB, k16GiB, kRamAllows, kGpuMemoryPlus10Percent, k512GiB };

const char* SizeName(Size s) {
  switch (s) {
    case Size::k2GiBPlus4KiB: return "2GiB_plus_4KiB";
    case Size::k4GiB: return "4GiB";
    case Size::k16GiB: return "16GiB";
    case Size::kRamAllows: return "RamAllows";
    case Size::kGpuMemoryPlus10Percent: return "GpuMemoryPlus10Percent";
    case Size::k512GiB: return "512GiB";
  }
  return "?";
}

// The most one call may pin here: MemAvailable less the floor and a margin, capped by the knob,
// in whole GiB.
int64_t RamAllowsBytes() {
  const int64_t avail = ReadMemInfo().mem_available - DefaultFloorBytes() - 2 * kHeadroom;
  const int64_t cap = static_cast<int64_t>(settings::PositiveNumber("PAGELOCK_STRESS_LARGE_MAX_GIB") * kGiB);
  return std::min(avail, cap) / kGiB * kGiB;
}

int64_t Bytes(Size s) {
  switch (s) {
    case Size::k2GiBPlus4KiB: return 2 * kGiB + 4096;
    case Size::k4GiB: return 4 * kGiB;
    case Size::k16GiB: return 16 * kGiB;
    case Size::kRamAllows: return RamAllowsBytes();
    // More than the device holds: pinned memory is not limited by device memory (peer case 25).
    case Size::kGpuMemoryPlus10Percent:
      return static_cast<int64_t>(Probe().devices[0].total_memory_bytes) / 10 * 11 / 4096 * 4096;
    // R47: a single registration of 2^39 bytes or more fails on r580+ whatever RAM is free.
    case Size::k512GiB: return int64_t{512} * kGiB;
  }
  return 0;
}

// Portable | Mapped, so every device's context may use the memory (a Mapped-only pin is pinned
// for the allocating context alone); "ok" or the failing call's name. Released by Release().
std::string PinPortable(PinRoute path, size_t n, void** host) {
  *host = nullptr;
  if (path == PinRoute::kHostAlloc) {
    const cudaError_t e = cudaHostAlloc(host, n, cudaHostAllocPortable | cudaHostAllocMapped);
    if (e != cudaSuccess) *host = nullptr;
    return e == cudaSuccess ? "ok" : cudaGetErrorName(e);
  }
  // Not touched first: the registration faults the pages in (and is charged for them).
  Mapping map(n);  // unmapped here if the registration fails, else Release()'s
  if (!map) return "mmap failed";
  const cudaError_t e = cudaHostRegister(map.data(), n, cudaHostRegisterPortable | cudaHostRegisterMapped);
  if (e != cudaSuccess) return cudaGetErrorName(e);
  *host = map.release();
  return "ok";
}

// Runs f(k, offset, bytes) for every 1 GiB chunk of n bytes (the last one shorter), on up to
// 8 host threads.
template <class F>
void ForEachChunkOnHost(size_t n, F f) {
  const size_t chunks = (n + kChunk - 1) / kChunk;
  const unsigned threads = static_cast<unsigned>(
      std::min<size_t>({chunks, 8, std::max(1u, std::thread::hardware_concurrency())}));
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t k; (k = next++) < chunks;) f(k, k * kChunk, std::min(kChunk, n - k * kChunk));
    });
  }
  for (auto& th : pool) th.join();
}

// The seed of chunk k: a chunk delivered to another chunk's place reads as mismatches.
uint64_t ChunkSeed(uint64_t base, size_t k) { return base + 0x100000001b3ull * (k + 1); }

// Every device reads every byte through its own device pointer: the words of each chunk that
// differ from the host's fill, per device; the first failing call's error in *e.
std::vector<long long> EveryDeviceCountsEveryByte(char* host, size_t n, int devices, uint64_t seed, cudaError_t* e) {
  std::vector<long long> bad(devices, -1);
  void* counter_host = nullptr;
  *e = cudaHostAlloc(&counter_host, sizeof(unsigned long long), cudaHostAllocPortable | cudaHostAllocMapped);
  if (*e != cudaSuccess) return bad;
  const PinnedBuffer own_counter = PinnedBuffer::Adopt(counter_host);  // freed on return, after cudaSetDevice(0)
  auto* counter = static_cast<volatile unsigned long long*>(counter_host);
  for (int d = 0; d < devices && *e == cudaSuccess; ++d) {
    void* dev = nullptr;
    void* counter_dev = nullptr;
    *e = cudaSetDevice(d);
    if (*e == cudaSuccess) *e = cudaHostGetDevicePointer(&dev, host, 0);
    if (*e == cudaSuccess) *e = cudaHostGetDevicePointer(&counter_dev, counter_host, 0);
    *counter = 0;
    for (size_t k = 0, off = 0; off < n && *e == cudaSuccess; ++k, off += kChunk) {
      *e = LaunchCountWordMismatches(static_cast<char*>(dev) + off, std::min(kChunk, n - off), ChunkSeed(seed, k),
                                     static_cast<unsigned long long*>(counter_dev));
      if (*e == cudaSuccess) *e = cudaDeviceSynchronize();  // one short launch at a time
    }
    if (*e == cudaSuccess) bad[d] = static_cast<long long>(*counter);
  }
  (void)cudaSetDevice(0);
  return bad;
}

// Chunk k is rewritten by device k mod devices (with seed `seed`), so every chunk is written
// by some device and every device writes; the first failing call's error.
cudaError_t DevicesRewriteEveryChunk(char* host, size_t n, int devices, uint64_t seed) {
  cudaError_t e = cudaSuccess;
  for (int d = 0; d < devices && e == cudaSuccess; ++d) {
    void* dev = nullptr;
    e = cudaSetDevice(d);
    if (e == cudaSuccess) e = cudaHostGetDevicePointer(&dev, host, 0);
    for (size_t k = d, off = k * kChunk; off < n && e == cudaSuccess; k += devices, off = k * kChunk) {
      e = LaunchFillWords(static_cast<char*>(dev) + off, std::min(kChunk, n - off), ChunkSeed(seed, k));
      if (e == cudaSuccess) e = cudaDeviceSynchronize();
    }
  }
  (void)cudaSetDevice(0);
  return e;
}

// Arg "path:bytes".
PAGELOCK_SCENARIO(LargeSinglePin) {
  const std::string arg = ScenarioArg();
  PinRoute path;
  const size_t colon = arg.find(':');
  if (colon == std::string::npos || !ParseStressRoute(arg.substr(0, colon), &path)) {
    report.Set("bad_arg", arg);
    return;
  }
  const size_t n = std::strtoull(arg.c_str() + colon + 1, nullptr, 10);
  const ChildContainment cc = EnterContainment();
  report.Set("containment", cc.ok ? cc.mode : "none: " + cc.error);
  if (!cc.ok) return;
  report.Error("init", cudaFree(nullptr));
  if (!cc.Allows(static_cast<int64_t>(n))) {
    report.Set("pin", "skipped: below the floor");
    return;
  }
  int devices = 0;
  report.Error("device_count", cudaGetDeviceCount(&devices));
  report.Set("devices", static_cast<long long>(devices));
  void* host = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string pin = PinPortable(path, n, &host);
  report.Set("pin_ms", static_cast<long long>(Seconds(t0) * 1e3));
  report.Set("pin", pin);
  if (pin != "ok") {
    if (host) (void)Release(path, host, n);
    report.Error("last_error", cudaGetLastError());  // the failure itself (runtime path)
    report.Error("last_error_cleared", cudaGetLastError());
    void* h = nullptr;
    void* d = nullptr;
    const std::string probe = Pin(path, size_t{1} << 20, &h, &d);
    report.Set("probe_pin", probe);
    if (probe == "ok") (void)Release(path, h, size_t{1} << 20);
    report.Error("sync_after_failure", cudaDeviceSynchronize());
    return;
  }
  // Every byte: the host fills every chunk, every device reads every byte, each chunk is
  // rewritten by one device, the host reads every byte again.
  char* const base = static_cast<char*>(host);
  const uint64_t seed = 7, device_seed = 70;
  const auto t_fill = std::chrono::steady_clock::now();
  ForEachChunkOnHost(n, [&](size_t k, size_t off, size_t len) { HostFillWords(base + off, 0, len / 8, ChunkSeed(seed, k)); });
  report.Set("host_fill_ms", static_cast<long long>(Seconds(t_fill) * 1e3));
  cudaError_t e = devices > 0 ? cudaSuccess : cudaErrorNoDevice;
  const auto t_read = std::chrono::steady_clock::now();
  std::vector<long long> device_bad;
  if (e == cudaSuccess) device_bad = EveryDeviceCountsEveryByte(base, n, devices, seed, &e);
  report.Set("device_read_ms", static_cast<long long>(Seconds(t_read) * 1e3));
  long long device_bad_total = 0;
  std::string per_device;
  for (size_t d = 0; d < device_bad.size(); ++d) {
    device_bad_total += device_bad[d] < 0 ? 0 : device_bad[d];
    per_device += (d ? "," : "") + std::to_string(device_bad[d]);
  }
  report.Set("device_bad_words_per_device", per_device);
  if (e == cudaSuccess) e = DevicesRewriteEveryChunk(base, n, devices, device_seed);
  std::atomic<long long> host_bad{0};
  if (e == cudaSuccess) {
    ForEachChunkOnHost(n, [&](size_t k, size_t off, size_t len) {
      host_bad += static_cast<long long>(HostCountWordMismatches(base + off, 0, len / 8, ChunkSeed(device_seed, k)));
    });
  }
  report.Error("every_byte", e);
  report.Set("chunks", static_cast<long long>((n + kChunk - 1) / kChunk));
  report.Set("device_bad_words", e == cudaSuccess ? device_bad_total : -1);
  report.Set("host_bad_words", e == cudaSuccess ? host_bad.load() : -1);
  const auto t1 = std::chrono::steady_clock::now();
  report.Set("release", Release(path, host, n));
  report.Set("release_ms", static_cast<long long>(Seconds(t1) * 1e3));
}

// The case for one path and size (both tests below): NotSupported where the host cannot hold
// it, else one contained child pins, checks every byte on every device and releases.
void CheckLargeSinglePin(PinRoute path, Size size) {
  PAGELOCK_REQUIRE(RequireUsableDevice());
  if (IsRegisterRoute(path)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  const int64_t n = Bytes(size);
  const MemInfo mem = ReadMemInfo();
  const int64_t floor = DefaultFloorBytes();
  if (size == Size::kRamAllows && n <= Bytes(Size::k16GiB)) {
    PAGELOCK_NOT_SUPPORTED("the most RAM allows in one call (" + std::to_string(n / kGiB) +
                           " GiB: MemAvailable - floor - margin, capped by PAGELOCK_STRESS_LARGE_MAX_GIB) "
                           "is not above the 16 GiB case");
  }
  // R47's size first: the reason names the host's RAM, the fact that decides it.
  if (size == Size::k512GiB && mem.mem_available - n - kHeadroom < floor) {
    PAGELOCK_NOT_SUPPORTED("the host cannot hold " + std::to_string(n >> 30) + " GiB in one call: MemTotal " +
                           std::to_string(mem.total >> 20) + " MiB, MemAvailable " +
                           std::to_string(mem.mem_available >> 20) + " MiB, memory floor " +
                           std::to_string(floor >> 20) + " MiB, headroom " + std::to_string(kHeadroom >> 20) + " MiB");
  }
  // One cap for every size (the tier's time budget: pinning and checking run at about 1.3 GiB/s
  // on the H200 host, so 64 GiB is most of a minute a path); raise the knob for larger sizes.
  const double cap_gib = settings::PositiveNumber("PAGELOCK_STRESS_LARGE_MAX_GIB");
  if (n > static_cast<int64_t>(cap_gib * kGiB)) {
    PAGELOCK_NOT_SUPPORTED(std::to_string(n >> 20) + " MiB in one call is above PAGELOCK_STRESS_LARGE_MAX_GIB=" +
                           std::to_string(cap_gib) + " GiB (the stress tier's size cap)");
  }
  if (mem.mem_available - n - kHeadroom < floor) {
    PAGELOCK_NOT_SUPPORTED("MemAvailable " + std::to_string(mem.mem_available >> 20) + " MiB - " +
                           std::to_string(n >> 20) + " MiB - headroom is below the memory floor of " +
                           std::to_string(floor >> 20) + " MiB");
  }
  Budget("single_pin_GiB", static_cast<double>(n) / kGiB, "GiB");
  // Pinning (~1.4 GiB/s), the host fill and check and each device's read of every byte.
  const double limit_s = 300 + 1.5 * static_cast<double>(n) / kGiB;
  Budget("child_limit_s", limit_s, "s");
  auto box = Containment::Create(std::string("large-") + SizeName(size), n + kHeadroom, floor);
  box->RecordBudgets();
  const bool pins_quiet_before = PinBalanceIsQuiet();
  const PinCounters pins_before = ReadPinCounters();
  KernelLogCursor klog;
  ChildResult r = RunScenario("LargeSinglePin", limit_s,
                              [&] {
                                std::vector<std::string> env = box->ChildEnv();
                                env.push_back(ScenarioArgEnv(std::string(PinRouteName(path)) + ":" + std::to_string(n)));
                                return env;
                              }());
  const CgroupEvents ev = box->Events();
  const std::vector<std::string> log = klog.Lines(PinningFailureLogNeedles());
  box.reset();
  Observe("child_containment", r.Get("containment"));
  Observe("pin", r.Get("pin"));
  if (ev.available) Observe("cgroup_oom_kill", static_cast<long long>(ev.oom_kill));
  std::string log_text;
  for (const std::string& l : log) log_text += (log_text.empty() ? "" : " | ") + l;
  if (!log_text.empty()) Observe("kernel_log", log_text);
  if (r.term_signal == SIGKILL && ((ev.available && ev.oom_kill > 0) || !log.empty())) {
    FAIL() << PinRouteName(path) << " of " << n << " bytes in one call: the kernel OOM-killed the child "
           << "instead of the call failing cleanly (deviation, docs/platforms/driver-r580.md#c06); log: " << log_text;
  }
  ASSERT_CHILD_COMPLETED(r);
  ASSERT_EQ(r.Get("init"), "cudaSuccess");
  ASSERT_EQ(r.Get("device_count"), "cudaSuccess");
  const std::string pin = r.Get("pin");
  if (pin == "ok") {
    Observe("devices_checked", r.Get("devices"));
    Observe("chunks_checked", r.Get("chunks"));
    Metric("pin_s", std::atof(r.Get("pin_ms").c_str()) / 1e3, "s");
    Metric("host_fill_s", std::atof(r.Get("host_fill_ms").c_str()) / 1e3, "s");
    Metric("every_device_read_s", std::atof(r.Get("device_read_ms").c_str()) / 1e3, "s");
    Metric("release_s", std::atof(r.Get("release_ms").c_str()) / 1e3, "s");
    EXPECT_EQ(r.Get("every_byte"), "cudaSuccess");
    EXPECT_EQ(r.Get("device_bad_words"), "0")
        << "a device read other words than the host wrote (per device: " << r.Get("device_bad_words_per_device") << ")";
    EXPECT_EQ(r.Get("host_bad_words"), "0") << "the host does not see every word the devices wrote";
    EXPECT_EQ(r.Get("release"), "ok");
  } else {
    ASSERT_TRUE(IsOutOfMemory(pin)) << PinRouteName(path) << " of " << n << " bytes failed with " << pin
                                    << " instead of cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY";
    Observe("last_error", r.Get("last_error"));
    EXPECT_EQ(r.Get("last_error_cleared"), "cudaSuccess") << "cudaGetLastError did not clear the failure";
    EXPECT_EQ(r.Get("probe_pin"), "ok") << "the failure is sticky: a 1 MiB pin failed after it";
    EXPECT_EQ(r.Get("sync_after_failure"), "cudaSuccess");
    if (size == Size::k512GiB) {
      // R47: r580+ refuses one call of 2^39 bytes whatever RAM is free (undocumented): recorded.
      Observe("per_call_limit_512GiB", pin);
    } else {
      Warn(std::string(PinRouteName(path)) + " of " + std::to_string(n >> 20) + " MiB in one call failed cleanly (" +
           pin + ") although RAM above the floor allowed it");
    }
  }
  // Exact (folded counters): the child's context and memory pins all come back; a foreign
  // process pinning around the case or a failed fold is a WARN with the reason.
  const PinReturn pins = ExpectPinBalanceReturned(pins_before, pins_quiet_before, "the pinning child exited", 20);
  Observe("pin_balance_delta_pages", static_cast<long long>(pins.excess));
}

class LargeSinglePinTest : public ::testing::TestWithParam<std::tuple<PinRoute, Size>> {};

// A driver that pins or maps only part of a large range (a page table truncated at 2 or 4 GiB,
// a chunk of a registration left unmapped), that maps it for one device only, or that routes
// some device's access to another chunk fails this: every device reads every word the host
// wrote, each chunk takes its device's writes, and the host reads every word back.
TEST_P(LargeSinglePinTest, OneCallOfThisSizePinsAndTheDeviceReachesTheLastPage) {
  PAGELOCK_RULE("R06,R87,C07,R116");
  const auto [path, size] = GetParam();
  CheckLargeSinglePin(path, size);
}

INSTANTIATE_TEST_SUITE_P(
    PathsAndSizes, LargeSinglePinTest,
    ::testing::Combine(::testing::Values(PinRoute::kHostAlloc, PinRoute::kHostRegister),
                       ::testing::Values(Size::k2GiBPlus4KiB, Size::k4GiB, Size::k16GiB, Size::kRamAllows,
                                         Size::kGpuMemoryPlus10Percent)),
    [](const ::testing::TestParamInfo<std::tuple<PinRoute, Size>>& i) {
      return std::string(PinRouteName(std::get<0>(i.param))) + "_" + SizeName(std::get<1>(i.param));
    });

class PerCallLimitTest : public ::testing::TestWithParam<PinRoute> {};

// R47: one call of 512 GiB (2^39 bytes). The documentation sets no per-call limit, so a
// success must hold every byte on every device like any other size; r580+ refuses it with
// cudaErrorMemoryAllocation whatever RAM is free, which is recorded (R47 is an observation).
// A driver whose refusal is another code, is sticky, or OOM-kills the process instead fails it.
// NotSupported with MemTotal and MemAvailable where the host cannot hold 512 GiB.
TEST_P(PerCallLimitTest, OneCallOf512GiBHoldsEveryByteOrFailsCleanly) {
  PAGELOCK_RULE("R47,R117,R06,R87");
  CheckLargeSinglePin(GetParam(), Size::k512GiB);
}

INSTANTIATE_TEST_SUITE_P(Paths, PerCallLimitTest, ::testing::Values(PinRoute::kHostAlloc, PinRoute::kHostRegister),
                         [](const ::testing::TestParamInfo<PinRoute>& i) { return std::string(PinRouteName(i.param)); });

}  // namespace
}  // namespace pagelock
