#include "suites/streams/stream_util.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "fixtures/time_scale.h"
#include "kernels/access_kernels.h"
#include "kernels/streams/stream_kernels.h"

namespace pagelock {
namespace streams {

std::string MemName(HostKind m) {
  static const Spelling<HostKind> kCaseName(HostKindName, {{HostKind::kHostAllocDefault, "Pinned"},
                                                           {HostKind::kHostAllocMapped, "PinnedMapped"},
                                                           {HostKind::kHostAllocPortable, "PinnedPortable"},
                                                           {HostKind::kHostAllocMappedWriteCombined, "WriteCombined"}});
  return kCaseName(m);
}

const std::vector<HostKind>& HostMems() {
  static const std::vector<HostKind> v = {
      HostKind::kHostAllocDefault,  HostKind::kHostAllocMapped, HostKind::kHostAllocPortable,
      HostKind::kHostAllocMappedWriteCombined, HostKind::kRegisteredMalloc, HostKind::kRegisteredMmap,
      HostKind::kRegisteredMemfd,   HostKind::kPageable};
  return v;
}

// The host checks run over up to 64 MiB per call: the pattern is computed with 32-bit
// arithmetic per 4 GiB chunk (where PatternByte's i >> 32 term is constant), vectorised (O3, and
// an AVX2 clone picked at run time), identical in value to PatternByte(base + i, seed).
namespace {
__attribute__((target_clones("avx2", "default"), optimize("O3")))
size_t CountChunk(const unsigned char* c, size_t n, uint32_t lo, uint32_t s) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t x = (lo + static_cast<uint32_t>(i)) * 2654435761u ^ s;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    bad += c[i] != static_cast<unsigned char>(x);
  }
  return bad;
}

__attribute__((target_clones("avx2", "default"), optimize("O3")))
void FillChunk(unsigned char* c, size_t n, uint32_t lo, uint32_t s) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t x = (lo + static_cast<uint32_t>(i)) * 2654435761u ^ s;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    c[i] = static_cast<unsigned char>(x);
  }
}

template <typename F>
void ForChunks(size_t n, size_t base, F f) {
  for (size_t i = 0; i < n;) {
    const size_t idx = base + i;
    const size_t len = std::min(n - i, (size_t{1} << 32) - (idx & 0xffffffffu));
    f(i, len, static_cast<uint32_t>(idx), static_cast<uint32_t>(idx >> 32));
    i += len;
  }
}

__attribute__((target_clones("avx2", "default"), optimize("O3")))
size_t CountByteFast(const unsigned char* c, size_t n, unsigned char value) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += c[i] != value;
  return bad;
}
}  // namespace

size_t HostCountPattern(const void* p, size_t n, size_t base, uint32_t seed) {
  const auto* c = static_cast<const unsigned char*>(p);
  size_t bad = 0;
  ForChunks(n, base, [&](size_t i, size_t len, uint32_t lo, uint32_t hi) { bad += CountChunk(c + i, len, lo, seed ^ hi); });
  return bad;
}

size_t HostCountByteMismatches(const void* p, size_t n, unsigned char value) {
  return CountByteFast(static_cast<const unsigned char*>(p), n, value);
}

void HostFillPatternFrom(void* p, size_t n, size_t base, uint32_t seed) {
  auto* c = static_cast<unsigned char*>(p);
  ForChunks(n, base, [&](size_t i, size_t len, uint32_t lo, uint32_t hi) { FillChunk(c + i, len, lo, seed ^ hi); });
}

Checker::Checker() : counter_mem_(sizeof(unsigned long long), cudaHostAllocMapped) {
  status_ = counter_mem_.status();
  counter_ = counter_mem_.as<unsigned long long>();
}

namespace {
// The host does the work when it can read the window cheaply; else the device through its alias.
bool OnDevice(const KindBuffer& b, size_t n) {
  if (!b.dev()) return false;
  if (!b.host() || IsWriteCombined(b.kind())) return true;
  return n > kHostCheckLimit;
}
}  // namespace

cudaError_t Checker::CountPattern(const KindBuffer& b, size_t off, size_t n, size_t base, uint32_t seed,
                                  size_t* bad) {
  *bad = n;
  if (status_ != cudaSuccess) return status_;
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return e;
  if (!OnDevice(b, n)) {
    *bad = HostCountPattern(b.host() + off, n, base, seed);
    return cudaSuccess;
  }
  *counter_ = 0;
  if ((e = LaunchCountPatternMismatchesFrom(b.dev() + off, n, base, seed, counter_, 0)) != cudaSuccess) return e;
  if ((e = cudaDeviceSynchronize()) != cudaSuccess) return e;
  *bad = static_cast<size_t>(*counter_);
  return cudaSuccess;
}

cudaError_t Checker::CountByte(const KindBuffer& b, size_t off, size_t n, unsigned char value, size_t* bad) {
  *bad = n;
  if (status_ != cudaSuccess) return status_;
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return e;
  if (!OnDevice(b, n)) {
    *bad = HostCountByteMismatches(b.host() + off, n, value);
    return cudaSuccess;
  }
  *counter_ = 0;
  if ((e = LaunchCountByteMismatches(b.dev() + off, n, value, counter_, 0)) != cudaSuccess) return e;
  if ((e = cudaDeviceSynchronize()) != cudaSuccess) return e;
  *bad = static_cast<size_t>(*counter_);
  return cudaSuccess;
}

cudaError_t Checker::FillPattern(const KindBuffer& b, size_t off, size_t n, size_t base, uint32_t seed) {
  if (!OnDevice(b, n)) {
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return e;
    HostFillPatternFrom(b.host() + off, n, base, seed);
    return cudaSuccess;
  }
  cudaError_t e = LaunchFillPatternFrom(b.dev() + off, n, base, seed, 0);
  return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

cudaError_t Checker::FillByte(const KindBuffer& b, size_t off, size_t n, unsigned char value) {
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return e;
  if (b.host()) {
    // The host writes even write-combined memory well; device memory gets a memset whose bytes
    // are then counted by the tests that use it as a guard.
    std::memset(b.host() + off, value, n);
    return cudaSuccess;
  }
  e = cudaMemset(b.dev() + off, value, n);  // copy-check: guard fill; callers count the guard bytes
  return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

uint64_t DelayNs(double ms) { return static_cast<uint64_t>(ms * 1e6 * TimeScale()); }

}  // namespace streams
}  // namespace pagelock
