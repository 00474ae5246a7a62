// The byte pattern of the size suites: byte o of a buffer holds byte (o % 8) of SizeWord(o / 8),
// a counter-based 64-bit hash of the word index. Host and device compute it alike, word by word
// where the memory is aligned (a 1 GiB host fill is one hash per 8 bytes, spread over threads),
// byte by byte at the edges, so a window at any offset (past 4 GiB too) can be filled on one side
// and checked on the other. Header-only: host code uses it without the kernels.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#if defined(__CUDACC__)
#define PAGELOCK_SIZE_HD __host__ __device__
#else
#define PAGELOCK_SIZE_HD
#endif

namespace pagelock {

// The pattern word at word index w (byte offset 8 * w) for a seed: xorshift-multiply of the index.
PAGELOCK_SIZE_HD inline uint64_t SizeWord(uint64_t w, uint64_t seed) {
  uint64_t x = (w + 1) * 0x9e3779b97f4a7c15ull ^ seed;
  x ^= x >> 31;
  x *= 0xd6e8feb86659fd93ull;
  x ^= x >> 29;
  return x;
}

// The pattern byte at index o (little-endian byte o % 8 of word o / 8).
PAGELOCK_SIZE_HD inline unsigned char SizeByte(uint64_t o, uint64_t seed) {
  return static_cast<unsigned char>(SizeWord(o >> 3, seed) >> ((o & 7) * 8));
}

// One slot of the kernels (size_kernels.cu), here so a host test runs the code the device runs:
// slot k holds the pattern indices [base + 8k, base + 8k + 8), base = first rounded down to 8;
// the bytes of the slot inside [first, first + n) are written or counted, with one 64-bit
// access when `aligned` (p and first agree modulo 8) and the slot is whole.
PAGELOCK_SIZE_HD inline uint64_t SizeSlots(size_t n, uint64_t first) {
  const uint64_t base = first & ~uint64_t{7};
  return n == 0 ? 0 : (first + n - base + 7) / 8;
}

PAGELOCK_SIZE_HD inline void FillSizeSlot(unsigned char* p, size_t n, uint64_t first, uint64_t seed, bool aligned,
                                          uint64_t k) {
  const uint64_t idx = (first & ~uint64_t{7}) + 8 * k, end = first + n;
  const uint64_t w = SizeWord(idx >> 3, seed);
  if (aligned && idx >= first && idx + 8 <= end) {
    *reinterpret_cast<uint64_t*>(p + (idx - first)) = w;
    return;
  }
  for (int b = 0; b < 8; ++b) {
    if (idx + b >= first && idx + b < end) p[idx + b - first] = static_cast<unsigned char>(w >> (8 * b));
  }
}

// The number of bytes of slot k that differ from the pattern.
PAGELOCK_SIZE_HD inline unsigned CountSizeSlot(const unsigned char* p, size_t n, uint64_t first, uint64_t seed,
                                               bool aligned, uint64_t k) {
  const uint64_t idx = (first & ~uint64_t{7}) + 8 * k, end = first + n;
  const uint64_t w = SizeWord(idx >> 3, seed);
  unsigned bad = 0;
  if (aligned && idx >= first && idx + 8 <= end) {
    const uint64_t x = *reinterpret_cast<const uint64_t*>(p + (idx - first)) ^ w;
    for (int b = 0; b < 8; ++b) bad += ((x >> (8 * b)) & 0xff) != 0;
    return bad;
  }
  for (int b = 0; b < 8; ++b) {
    if (idx + b >= first && idx + b < end) bad += p[idx + b - first] != static_cast<unsigned char>(w >> (8 * b));
  }
  return bad;
}

PAGELOCK_SIZE_HD inline bool SizeAligned(const void* p, uint64_t first) {
  return ((reinterpret_cast<uintptr_t>(p) ^ first) & 7) == 0;
}

namespace size_pattern_internal {

constexpr unsigned kMaxThreads = 8;

// Runs f(piece, begin, end) over [0, n) split at 8-byte multiples into at most kMaxThreads
// pieces, on threads when n is at least 64 MiB (a 1 GiB host fill or check then takes tens of
// milliseconds instead of a few hundred).
template <class F>
void Split(size_t n, F f) {
  constexpr size_t kMinParallel = size_t{64} << 20;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = n < kMinParallel ? 1u : std::min(kMaxThreads, hw);
  if (threads == 1) {
    f(0u, size_t{0}, n);
    return;
  }
  const size_t piece = (n / threads + 7) & ~size_t{7};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    const size_t b = std::min(n, t * piece), e = t + 1 == threads ? n : std::min(n, (t + 1) * piece);
    pool.emplace_back([=] { f(t, b, e); });
  }
  for (auto& th : pool) th.join();
}

inline void FillRange(unsigned char* p, size_t n, uint64_t first, uint64_t seed) {
  size_t i = 0;
  for (; i < n && ((first + i) & 7) != 0; ++i) p[i] = SizeByte(first + i, seed);
  for (; i + 8 <= n; i += 8) {
    const uint64_t w = SizeWord((first + i) >> 3, seed);
    std::memcpy(p + i, &w, 8);  // one hash per 8 bytes, at any alignment of p
  }
  for (; i < n; ++i) p[i] = SizeByte(first + i, seed);
}

inline size_t CountRange(const unsigned char* p, size_t n, uint64_t first, uint64_t seed) {
  size_t bad = 0, i = 0;
  for (; i < n && ((first + i) & 7) != 0; ++i) bad += p[i] != SizeByte(first + i, seed);
  for (; i + 8 <= n; i += 8) {
    uint64_t got;
    std::memcpy(&got, p + i, 8);
    const uint64_t x = got ^ SizeWord((first + i) >> 3, seed);
    if (x) {
      for (int b = 0; b < 8; ++b) bad += ((x >> (8 * b)) & 0xff) != 0;
    }
  }
  for (; i < n; ++i) bad += p[i] != SizeByte(first + i, seed);
  return bad;
}

}  // namespace size_pattern_internal

// p[i] = SizeByte(first + i, seed) for i in [0, n).
inline void HostFillSizePattern(void* p, size_t n, uint64_t first, uint64_t seed) {
  auto* c = static_cast<unsigned char*>(p);
  size_pattern_internal::Split(n, [=](unsigned, size_t b, size_t e) {
    size_pattern_internal::FillRange(c + b, e - b, first + b, seed);
  });
}

// The number of i in [0, n) with p[i] != SizeByte(first + i, seed).
inline size_t HostCountSizePatternMismatches(const void* p, size_t n, uint64_t first, uint64_t seed) {
  const auto* c = static_cast<const unsigned char*>(p);
  size_t bad[size_pattern_internal::kMaxThreads] = {};
  size_pattern_internal::Split(n, [&](unsigned t, size_t b, size_t e) {
    bad[t] = size_pattern_internal::CountRange(c + b, e - b, first + b, seed);
  });
  size_t total = 0;
  for (size_t v : bad) total += v;
  return total;
}

// The number of bytes of [p, p + n) that are not `value` (guard bytes).
inline size_t HostCountBytesNot(const void* p, size_t n, unsigned char value) {
  const auto* c = static_cast<const volatile unsigned char*>(p);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += c[i] != value;
  return bad;
}

}  // namespace pagelock
