// Memory-test patterns over 32-bit words (DCGM memtest's families, applied to mapped host
// memory): walking ones and zeros, a constant word for moving inversions, and address-in-address
// (each aligned 64-bit pair holds its own address, low half first). One definition for host and
// device, so either side can check what the other wrote.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define PAGELOCK_MEMTEST_HD __host__ __device__
#else
#define PAGELOCK_MEMTEST_HD
#endif

namespace pagelock {

enum class MemtestPattern : int {
  kWalkingOnes = 0,   // word i = 1 << ((i + param) % 32)
  kWalkingZeros = 1,  // word i = ~(1 << ((i + param) % 32))
  kConstant = 2,      // word i = param
  kAddress = 3,       // words 2k, 2k+1 = low, high half of (address_base + 8k)
};

// The word the pattern puts at 32-bit word index i.
PAGELOCK_MEMTEST_HD inline uint32_t MemtestWord(MemtestPattern p, uint64_t i, uint32_t param,
                                                uint64_t address_base) {
  switch (p) {
    case MemtestPattern::kWalkingOnes: return 1u << ((i + param) & 31u);
    case MemtestPattern::kWalkingZeros: return ~(1u << ((i + param) & 31u));
    case MemtestPattern::kConstant: return param;
    case MemtestPattern::kAddress: {
      const uint64_t a = address_base + (i & ~uint64_t{1}) * 4u;
      return static_cast<uint32_t>((i & 1u) ? a >> 32 : a);
    }
  }
  return 0;
}

// What a check found: the number of mismatching words and the first (lowest-index) one, packed
// as (index << 32 | got) so one atomicMin on the device keeps index and value together. The
// packing needs index < 2^32 (16 GiB of words); the memtest buffers are a few MiB.
struct MemtestResult {
  unsigned long long mismatches;
  unsigned long long first;  // kNoMismatch when none
};
constexpr unsigned long long kNoMismatch = ~0ull;

PAGELOCK_MEMTEST_HD inline uint64_t MemtestFirstIndex(const MemtestResult& r) { return r.first >> 32; }
PAGELOCK_MEMTEST_HD inline uint32_t MemtestFirstGot(const MemtestResult& r) {
  return static_cast<uint32_t>(r.first);
}

// Host twins of the kernels (kernels/mapped/memtest_kernels.h). Volatile: every word is really
// read and written through the mapping, once, in the stated order.
inline void HostMemtestFill(void* base, size_t words, MemtestPattern p, uint32_t param,
                            uint64_t address_base) {
  auto* w = static_cast<volatile uint32_t*>(base);
  for (size_t i = 0; i < words; ++i) w[i] = MemtestWord(p, i, param, address_base);
}

inline MemtestResult HostMemtestCheck(const void* base, size_t words, MemtestPattern p,
                                      uint32_t param, uint64_t address_base) {
  const auto* w = static_cast<const volatile uint32_t*>(base);
  MemtestResult r{0, kNoMismatch};
  for (size_t i = 0; i < words; ++i) {
    const uint32_t got = w[i];
    if (got != MemtestWord(p, i, param, address_base)) {
      if (r.mismatches++ == 0) r.first = (static_cast<unsigned long long>(i) << 32) | got;
    }
  }
  return r;
}

// One moving-inversions step: every word is read and checked against `expect`, then its
// complement is written, ascending (index 0 first) or descending.
inline MemtestResult HostMemtestInvert(void* base, size_t words, uint32_t expect, bool descending) {
  auto* w = static_cast<volatile uint32_t*>(base);
  MemtestResult r{0, kNoMismatch};
  for (size_t k = 0; k < words; ++k) {
    const size_t i = descending ? words - 1 - k : k;
    const uint32_t got = w[i];
    if (got != expect) {
      ++r.mismatches;
      const unsigned long long packed = (static_cast<unsigned long long>(i) << 32) | got;
      if (packed < r.first) r.first = packed;
    }
    w[i] = ~expect;
  }
  return r;
}

}  // namespace pagelock
