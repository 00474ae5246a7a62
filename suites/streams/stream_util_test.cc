// The streams suite's host-side byte checks agree with kernels/pattern.h (the device's pattern),
// across the 4 GiB index boundary where PatternByte's high term changes.
#include <gtest/gtest.h>

#include <vector>

#include "fixtures/outcome.h"
#include "kernels/pattern.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

TEST(StreamUtilTest, HostPatternChecksMatchPatternByteAcrossTheFourGiBBoundary) {
  PAGELOCK_RULE("S01");
  const size_t base = (size_t{1} << 32) - 777;
  std::vector<unsigned char> v(3000);
  streams::HostFillPatternFrom(v.data(), v.size(), base, 0x1234u);
  size_t differ = 0;
  for (size_t i = 0; i < v.size(); ++i) differ += v[i] != PatternByte(base + i, 0x1234u);
  EXPECT_EQ(differ, 0u) << "HostFillPatternFrom differs from PatternByte";
  EXPECT_EQ(streams::HostCountPattern(v.data(), v.size(), base, 0x1234u), 0u);
  v[0] ^= 1;
  v[776] ^= 0x80;
  v[777] ^= 0xff;
  v[2999] ^= 2;
  EXPECT_EQ(streams::HostCountPattern(v.data(), v.size(), base, 0x1234u), 4u) << "flipped bytes not all counted";
  EXPECT_EQ(streams::HostCountPattern(v.data(), v.size(), base, 0x1235u) > 2900, true) << "another seed must differ";
  std::vector<unsigned char> z(1000, 7);
  z[999] = 8;
  EXPECT_EQ(streams::HostCountByteMismatches(z.data(), z.size(), 7), 1u);
}

}  // namespace
}  // namespace pagelock
