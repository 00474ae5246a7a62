// Helpers of the size suites: device-side counts read back through a mapped counter (no copy or
// memset of their own), the host-memory gate of the big cases, and the judgement of a large pin
// that the driver may refuse (PinnedOrRefusedCleanly). The mmap a case owns is the kit's Mapping
// (fixtures/mapping.h; 2 MiB aligned when asked, so its 2 MiB boundaries are huge-page
// boundaries where THP backs it).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fixtures/cuda_check.h"
#include "fixtures/host_kinds.h"
#include "fixtures/kernel_accounting.h"
#include "fixtures/mapping.h"
#include "fixtures/outcome.h"
#include "fixtures/resources.h"
#include "kernels/sizes/size_kernels.h"

namespace pagelock {
namespace sizes {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiBytes = size_t{1} << 30;
constexpr size_t kHugePage = 2 * kMiB;

// Mismatch counters in mapped pinned memory: the host zeroes them, kernels add to them, the host
// reads them after a synchronisation.
class Counters {
 public:
  explicit Counters(size_t count = 1) : buf_(PinnedBuffer::Mapped(count * sizeof(unsigned long long))), n_(count) {
    if (buf_.status() == cudaSuccess) Zero();
  }
  cudaError_t status() const { return buf_.status(); }
  void Zero() {
    for (size_t i = 0; i < n_; ++i) host()[i] = 0;
  }
  volatile unsigned long long* host() const { return buf_.as<volatile unsigned long long>(); }
  unsigned long long* dev(size_t i = 0) const { return reinterpret_cast<unsigned long long*>(buf_.dev()) + i; }
  unsigned long long value(size_t i = 0) const { return host()[i]; }

 private:
  PinnedBuffer buf_;
  size_t n_;
};

// Bytes of [dev, dev + n) (a device address) that differ from SizeByte(first + i, seed),
// counted by a kernel on the legacy default stream; ~0 with *e set when a call failed.
inline unsigned long long DeviceCountPatternMismatches(Counters& c, const void* dev, size_t n, uint64_t first, uint64_t seed,
                                             cudaError_t* e) {
  c.Zero();
  *e = LaunchCountSizePatternMismatches(dev, n, first, seed, c.dev());
  if (*e == cudaSuccess) *e = cudaDeviceSynchronize();
  return *e == cudaSuccess ? c.value() : ~0ull;
}

// Bytes of [dev, dev + n) that are not `value`.
inline unsigned long long DeviceCountGuardMismatches(Counters& c, const void* dev, size_t n, unsigned char value,
                                              cudaError_t* e) {
  c.Zero();
  *e = LaunchCountBytesNot(dev, n, value, c.dev());
  if (*e == cudaSuccess) *e = cudaDeviceSynchronize();
  return *e == cudaSuccess ? c.value() : ~0ull;
}

// "" when MemAvailable holds `bytes` more and still keeps `reserve`; else the NotSupported
// reason with the numbers.
inline std::string HostMemoryShortfall(size_t bytes, size_t reserve) {
  const MemInfo m = ReadMemInfo();
  if (!m.available) return "/proc/meminfo unreadable: cannot tell whether " + std::to_string(bytes >> 20) + " MiB fit";
  if (m.mem_available >= 0 && static_cast<size_t>(m.mem_available) >= bytes + reserve) return "";
  return "MemAvailable " + std::to_string(m.mem_available >> 20) + " MiB (MemTotal " + std::to_string(m.total >> 20) +
         " MiB) is below the " + std::to_string(bytes >> 20) + " MiB this case pins plus a " +
         std::to_string(reserve >> 20) + " MiB reserve";
}

// "" when device 0 has `bytes` free (cudaMemGetInfo); else the reason with the numbers.
inline std::string DeviceMemoryShortfall(size_t bytes) {
  size_t free_b = 0, total_b = 0;
  const cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // reported as the reason, not left for the health check
    return std::string("cudaMemGetInfo=") + cudaGetErrorName(e);
  }
  if (free_b >= bytes) return "";
  return "device memory free " + std::to_string(free_b >> 20) + " MiB (total " + std::to_string(total_b >> 20) +
         " MiB) is below the " + std::to_string(bytes >> 20) + " MiB this case copies into";
}

// Judges one large pin (a size MemAvailable holds) as the documentation allows. The size suites
// pin by two routes (fixtures/host_kinds.h): PinRoute::kHostAlloc (cudaHostAlloc), or
// PinRoute::kHostRegister (cudaHostRegister of an anonymous mmap). cudaHostAlloc
// and cudaHostRegister (cuda_runtime_api.h, 13.0) both list "::cudaErrorMemoryAllocation" among
// their results, and no size that one call must pin is documented (R06: memory that cannot be
// pinned is an allocation error; R47: r580 refuses one call of 2^39 bytes whatever RAM is free).
// So success and cudaErrorMemoryAllocation both pass, the one that came recorded as observation
// `key`. A refusal must be clean, as suites/stress/large_pin_test.cc checks it: the last-error
// slot clears once read, a 1 MiB pin of the same route then succeeds and the device synchronises;
// it is then a WARN naming `what` (the case's byte checks cannot run). Any other error, or a
// refusal that leaves an error behind (sticky), fails the case. True where the pin succeeded.
inline bool PinnedOrRefusedCleanly(const std::string& key, cudaError_t e, PinRoute route, const std::string& what) {
  const std::string call = PinRouteName(route);
  // Records `key` and clears the thread's last error (read once: the refusal itself).
  const ::testing::AssertionResult documented = CheckDocumentedOneOf(
      key, e, {cudaSuccess, cudaErrorMemoryAllocation},
      call + " (13.0) returns cudaSuccess, cudaErrorInvalidValue, cudaErrorMemoryAllocation" +
          (route == PinRoute::kHostRegister ? ", cudaErrorHostMemoryAlreadyRegistered, cudaErrorNotSupported" : "") +
          "; no size one call must pin is documented: a valid request either pins or is refused with "
          "cudaErrorMemoryAllocation (R06)");
  EXPECT_TRUE(documented) << what;
  if (e == cudaSuccess) return true;
  if (!documented) return false;
  // Not sticky: nothing stays in the last-error slot, the next pin of the same route and a
  // device synchronisation succeed.
  const cudaError_t cleared = cudaGetLastError();
  EXPECT_CUDA_OK(cleared) << what << " was refused and the error stays in the last-error slot once read";
  constexpr size_t kProbe = size_t{1} << 20;
  cudaError_t probe = cudaSuccess;
  if (route == PinRoute::kHostAlloc) {
    PinnedBuffer small(kProbe, cudaHostAllocMapped);
    probe = small.status();
    if (probe == cudaSuccess) probe = small.Free();
  } else {
    Mapping map(kProbe);  // declared first: unregistered before it is unmapped
    if (map.data() == nullptr) {
      ADD_FAILURE() << "mmap of the 1 MiB probe after the refusal of " << what << " failed";
      return false;
    }
    HostRegistration small(map.data(), kProbe, cudaHostRegisterMapped);
    probe = small.status();
    if (probe == cudaSuccess) probe = small.Free();
  }
  Observe(key + "_then_1MiB_pin", ErrName(probe));
  EXPECT_CUDA_OK(probe) << "the refusal of " << what << " is sticky: a 1 MiB " << call << " after it failed";
  const cudaError_t sync = cudaDeviceSynchronize();
  EXPECT_CUDA_OK(sync) << "after the refusal of " << what;
  if (cleared == cudaSuccess && probe == cudaSuccess && sync == cudaSuccess) {
    Warn(what + " failed cleanly (" + ErrName(e) + ") although MemAvailable held it; the byte checks did not run");
  }
  return false;
}

}  // namespace sizes
}  // namespace pagelock
