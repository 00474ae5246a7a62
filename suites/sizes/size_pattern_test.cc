// Host test of the size suites' pattern: the host fill and count agree byte for byte with
// SizeByte at every alignment of pointer and index, the threaded path included, a flipped byte
// is counted once, nothing outside the range is written, and the kernels' slot functions
// (FillSizeSlot / CountSizeSlot, the code the device runs) agree with the host twins.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "fixtures/outcome.h"
#include "kernels/sizes/size_pattern.h"

namespace pagelock {
namespace {

constexpr unsigned char kUntouched = 0xEE;

// The kernels' loops, one thread.
void SlotFill(unsigned char* p, size_t n, uint64_t first, uint64_t seed) {
  for (uint64_t k = 0; k < SizeSlots(n, first); ++k) FillSizeSlot(p, n, first, seed, SizeAligned(p, first), k);
}
size_t SlotCount(const unsigned char* p, size_t n, uint64_t first, uint64_t seed) {
  size_t bad = 0;
  for (uint64_t k = 0; k < SizeSlots(n, first); ++k) bad += CountSizeSlot(p, n, first, seed, SizeAligned(p, first), k);
  return bad;
}

TEST(SizePatternTest, HostAndSlotFillsAndCountsAgreeAtEveryAlignment) {
  PAGELOCK_RULE("R111,R114");
  std::vector<unsigned char> buf(4096 + 64);
  for (size_t shift = 0; shift < 9; ++shift) {
    for (uint64_t first : {0ull, 1ull, 3ull, 7ull, 8ull, 9ull, (4ull << 30) + 5}) {
      for (size_t n : {0, 1, 2, 7, 8, 9, 15, 16, 17, 100, 4095}) {
        SCOPED_TRACE("shift " + std::to_string(shift) + " first " + std::to_string(first) + " n " + std::to_string(n));
        unsigned char* p = buf.data() + 16 + shift;
        for (int side = 0; side < 2; ++side) {
          std::fill(buf.begin(), buf.end(), kUntouched);
          if (side == 0) HostFillSizePattern(p, n, first, 42);
          else SlotFill(p, n, first, 42);
          size_t wrong = 0;
          for (size_t i = 0; i < n; ++i) wrong += p[i] != SizeByte(first + i, 42);
          EXPECT_EQ(wrong, 0u) << (side ? "slot fill" : "host fill");
          EXPECT_EQ(p[-1], kUntouched);
          EXPECT_EQ(p[n], kUntouched);
          EXPECT_EQ(HostCountSizePatternMismatches(p, n, first, 42), 0u);
          EXPECT_EQ(SlotCount(p, n, first, 42), 0u);
          if (n) {
            p[n - 1] ^= 1;
            p[0] ^= 0x80;
            const size_t flipped = n == 1 ? 1 : 2;
            EXPECT_EQ(HostCountSizePatternMismatches(p, n, first, 42), flipped);
            EXPECT_EQ(SlotCount(p, n, first, 42), flipped);
          }
        }
      }
    }
  }
}

TEST(SizePatternTest, ThreadedFillAndCountCoverEveryByte) {
  PAGELOCK_RULE("R111,R114");
  const size_t n = (size_t{96} << 20) + 13;  // above the threaded threshold, odd
  std::vector<unsigned char> buf(n + 16, kUntouched);
  unsigned char* p = buf.data() + 3;
  HostFillSizePattern(p, n, 5, 99);
  EXPECT_EQ(HostCountSizePatternMismatches(p, n, 5, 99), 0u);
  size_t wrong = 0;
  for (size_t i = 0; i < n; i += 4093) wrong += p[i] != SizeByte(5 + i, 99);
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(p[-1], kUntouched);
  EXPECT_EQ(p[n], kUntouched);
  p[n / 3] ^= 0xff;
  p[n - 1] ^= 1;
  EXPECT_EQ(HostCountSizePatternMismatches(p, n, 5, 99), 2u);
  EXPECT_GT(HostCountSizePatternMismatches(p, n, 5, 98), n / 2) << "another seed differs almost everywhere";
}

TEST(SizePatternTest, AnotherSeedOrIndexDiffers) {
  PAGELOCK_RULE("R111,R114");
  std::vector<unsigned char> buf(4096);
  HostFillSizePattern(buf.data(), buf.size(), 0, 1);
  EXPECT_GT(HostCountSizePatternMismatches(buf.data(), buf.size(), 0, 2), 4000u);
  EXPECT_GT(HostCountSizePatternMismatches(buf.data(), buf.size(), 8, 1), 4000u);
  EXPECT_GT(HostCountSizePatternMismatches(buf.data(), buf.size(), uint64_t{1} << 32, 1), 4000u)
      << "an index truncated to 32 bits would read as the same pattern";
}

}  // namespace
}  // namespace pagelock
