// A 64-bit word pattern for the stress kernels: multi-GiB fills and checks over PCIe run with
// 16-byte accesses instead of bytes. Identical on host and device, so the host can spot-check
// what the device wrote.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define PAGELOCK_WORD_HD __host__ __device__
#else
#define PAGELOCK_WORD_HD
#endif

namespace pagelock {

// The word the pattern puts at word index i (byte offset 8 * i) for a seed (splitmix64).
PAGELOCK_WORD_HD inline uint64_t PatternWord(uint64_t i, uint64_t seed) {
  uint64_t z = i + seed * 0x9e3779b97f4a7c15ull + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Number of words in [first_word, first_word + n_words) of `base` that differ from the pattern.
inline size_t HostCountWordMismatches(const void* base, size_t first_word, size_t n_words,
                                      uint64_t seed) {
  const auto* p = static_cast<const volatile uint64_t*>(base);
  size_t bad = 0;
  for (size_t i = first_word; i < first_word + n_words; ++i) bad += p[i] != PatternWord(i, seed);
  return bad;
}

inline void HostFillWords(void* base, size_t first_word, size_t n_words, uint64_t seed) {
  auto* p = static_cast<uint64_t*>(base);
  for (size_t i = first_word; i < first_word + n_words; ++i) p[i] = PatternWord(i, seed);
}

}  // namespace pagelock
