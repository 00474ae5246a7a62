// Stress-tier property: for any size from 1 byte to 4 GiB (log-uniform), any way of having the
// memory (cudaHostAlloc with any flags, cudaMallocHost, a registered anonymous mmap) and any
// window inside it, a host-to-device copy of the window delivers every byte into device memory,
// a device-to-host cudaMemcpyAsync on a non-blocking stream delivers every byte back, the bytes
// either side of the window stay, and with a Mapped route the device reads the same bytes
// through the mapped pointer. RapidCheck draws the inputs from the run's seed (replayed with
// PAGELOCK_SEED) and shrinks a failure towards 1 byte. Bounded: cases above 64 MiB together
// pin at most PAGELOCK_SIZES_PROP_GIB (default 48) GiB; past the cap (or where MemAvailable
// cannot hold a case) a large case does not run, and the number skipped is recorded.
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>
#include <memory>

#include "fixtures/generators.h"
#include "fixtures/gpu_property.h"
#include "fixtures/kernel_accounting.h"
#include "fixtures/resources.h"
#include "fixtures/settings.h"
#include "kernels/sizes/size_kernels.h"
#include "kernels/sizes/size_pattern.h"
#include "suites/sizes/size_generators.h"
#include "suites/sizes/size_util.h"

namespace pagelock {
namespace {

using sizes::LogSize;
using sizes::SizeRoute;

constexpr size_t kGuard = 64;
constexpr unsigned char kGuardByte = 0xC3;
constexpr size_t kLarge = size_t{64} << 20;  // cases above this count against the byte cap

// The cap on the bytes large cases pin in one run, recorded once.
double CapBytes() {
  static const double cap = [] {
    const double gib = settings::PositiveNumber("PAGELOCK_SIZES_PROP_GIB");
    Budget("large_case_pinned_bytes_cap_GiB", gib, "GiB");
    return gib * double(size_t{1} << 30);
  }();
  return cap;
}

// True when a case of n bytes may run: small ones always (so shrinking always runs), large ones
// while the cap and MemAvailable allow; a large case that may not is counted.
bool MayRun(size_t n) {
  static double spent = 0;
  static unsigned long long skipped = 0;
  const double cap = CapBytes();
  if (n <= kLarge) return true;
  const MemInfo m = ReadMemInfo();
  const bool fits = m.available && m.mem_available > 0 &&
                    static_cast<double>(m.mem_available) > 2.0 * static_cast<double>(n) + double(size_t{8} << 30);
  if (spent + static_cast<double>(n) > cap || !fits) {
    Observe("large_cases_skipped_at_byte_cap_or_memory", ++skipped);
    return false;
  }
  spent += static_cast<double>(n);
  Observe("large_case_pinned_bytes", spent);
  return true;
}

class SizesProperty : public GpuProperty {};

// A driver that mishandles some size class (a path switch at 64 KiB or 1 MiB, a 2 GiB or 4 GiB
// length or offset truncated, a staging chunk dropped at an odd window) for some route fails
// this, and RapidCheck shrinks the size, route and window to the smallest it finds.
RC_GTEST_FIXTURE_PROP(SizesProperty, AnySizeAndRouteCarriesEveryByteOfAnyWindowBothWays,
                      (LogSize size, SizeRoute route)) {
  if (!ready()) return;
  PAGELOCK_RULE("R115,R08,R76");
  const size_t n = size.bytes;
  const Window w = *gen::WindowIn(n);
  RC_CLASSIFY(n < 4096, "sub-page");
  RC_CLASSIFY(n > (size_t{1} << 30), "over 1 GiB");
  RC_CLASSIFY(route.mapped(), "mapped");
  if (!Require(RequireAttr(cudaDevAttrCanMapHostMemory, 1))) return;  // the mismatch counters are mapped
  if (route.route == PinRoute::kHostRegister && !Require(RequireAttr(cudaDevAttrHostRegisterSupported, 1))) return;
  if (!MayRun(n)) return;

  // The memory, by the route; released (unregistered first) when an RC_ASSERT throws, too.
  PinnedBuffer pinned;
  std::unique_ptr<Mapping> map;
  HostRegistration reg;
  unsigned char* host = nullptr;
  if (!Require(RequireAttr(cudaDevAttrCanMapHostMemory, 1))) return;  // the mismatch counters are mapped
  if (route.route == PinRoute::kHostRegister) {
    map = std::make_unique<Mapping>(n);
    RC_ASSERT(map->data() != nullptr);
    RC_ASSERT(cudaHostRegister(map->data(), n, route.flags) == cudaSuccess);
    reg = HostRegistration::Adopt(map->data(), n);
    host = map->data();
  } else {
    void* p = nullptr;
    RC_ASSERT((route.route == PinRoute::kMallocHost ? cudaMallocHost(&p, n) : cudaHostAlloc(&p, n, route.flags)) ==
              cudaSuccess);
    pinned = PinnedBuffer::Adopt(p, n);
    host = static_cast<unsigned char*>(p);
  }
  DeviceBuffer dbuf(w.length + 2 * kGuard);
  RC_ASSERT(dbuf.status() == cudaSuccess);
  unsigned char* dev = dbuf.as<unsigned char>() + kGuard;
  sizes::Counters counters;
  RC_ASSERT(counters.status() == cudaSuccess);
  OwnedStream stream(cudaStreamNonBlocking);
  RC_ASSERT(stream.status() == cudaSuccess);
  const uint64_t seed = CaseSeed() ^ (uint64_t(n) << 20) ^ w.offset;
  const size_t before = std::min(kGuard, w.offset), after = std::min(kGuard, n - w.offset - w.length);
  cudaError_t e = cudaSuccess;

  // Host to device: the host's window, pattern indices of the host buffer.
  HostFillSizePattern(host + w.offset - before, before + w.length + after, w.offset - before, seed);
  RC_ASSERT(LaunchFillBytes(dev - kGuard, w.length + 2 * kGuard, kGuardByte) == cudaSuccess);
  RC_ASSERT(cudaDeviceSynchronize() == cudaSuccess);
  RC_ASSERT(cudaMemcpy(dev, host + w.offset, w.length, cudaMemcpyHostToDevice) == cudaSuccess);
  RC_ASSERT(sizes::DeviceCountPatternMismatches(counters, dev, w.length, w.offset, seed, &e) == 0u);
  RC_ASSERT(sizes::DeviceCountGuardMismatches(counters, dev - kGuard, kGuard, kGuardByte, &e) +
                sizes::DeviceCountGuardMismatches(counters, dev + w.length, kGuard, kGuardByte, &e) ==
            0u);
  RC_ASSERT(e == cudaSuccess);

  // Device to host, asynchronous on a non-blocking stream.
  RC_ASSERT(LaunchFillSizePattern(dev, w.length, w.offset, ~seed) == cudaSuccess);
  RC_ASSERT(cudaDeviceSynchronize() == cudaSuccess);
  RC_ASSERT(cudaMemcpyAsync(host + w.offset, dev, w.length, cudaMemcpyDeviceToHost, stream.get()) == cudaSuccess);
  RC_ASSERT(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  if (route.write_combined()) {
    // Host reads of write-combined memory are uncached (R16): the window is read back by DMA.
    RC_ASSERT(cudaMemcpy(dev, host + w.offset, w.length, cudaMemcpyHostToDevice) == cudaSuccess);
    RC_ASSERT(sizes::DeviceCountPatternMismatches(counters, dev, w.length, w.offset, ~seed, &e) == 0u);
  } else {
    RC_ASSERT(HostCountSizePatternMismatches(host + w.offset, w.length, w.offset, ~seed) == 0u);
  }
  // The bytes either side keep the host's pattern (seed).
  RC_ASSERT(HostCountSizePatternMismatches(host + w.offset - before, before, w.offset - before, seed) +
                HostCountSizePatternMismatches(host + w.offset + w.length, after, w.offset + w.length, seed) ==
            0u);

  // Mapped: the device reads the window through the mapped pointer.
  if (route.mapped()) {
    void* alias = nullptr;
    RC_ASSERT(cudaHostGetDevicePointer(&alias, host, 0) == cudaSuccess);
    RC_ASSERT(sizes::DeviceCountPatternMismatches(counters, static_cast<unsigned char*>(alias) + w.offset, w.length,
                                                  w.offset, ~seed, &e) == 0u);
    RC_ASSERT(e == cudaSuccess);
  }
}

}  // namespace
}  // namespace pagelock
