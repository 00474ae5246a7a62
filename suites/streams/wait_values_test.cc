// The 64-bit wait cases can fail: for every comparison and many random values, the word before
// the release does not satisfy the documented 64-bit wait, the host thread's value and the rescue
// do, and a wait that compared only the low 32 bits would decide differently (pass before the
// release, or never pass), which the held / released checks of memops64_test then report.
#include <gtest/gtest.h>

#include <random>

#include "fixtures/outcome.h"
#include "suites/streams/wait_values.h"

namespace pagelock {
namespace memops64 {
namespace {

TEST(WaitValuesTest, EveryComparisonHoldsThenPassesAndA32BitWaitDecidesDifferently) {
  PAGELOCK_RULE("R97");
  std::mt19937_64 rng(CaseSeed());
  for (Op op : kOps) {
    SCOPED_TRACE(OpName(op));
    for (int i = 0; i < 1000; ++i) {
      const uint64_t r = rng();
      const WaitValues v = ValuesFor(op, r);
      ASSERT_FALSE(Satisfies(op, v.initial, v.value, 64)) << std::hex << r;
      ASSERT_TRUE(Satisfies(op, v.release, v.value, 64)) << std::hex << r;
      ASSERT_TRUE(Satisfies(op, v.rescue, v.value, 64)) << std::hex << r;
      const bool early32 = Satisfies(op, v.initial, v.value, 32);
      const bool never32 = !Satisfies(op, v.release, v.value, 32) && !Satisfies(op, v.rescue, v.value, 32);
      ASSERT_TRUE(early32 || never32) << "a 32-bit wait would behave like the 64-bit one for " << std::hex << r;
    }
  }
}

}  // namespace
}  // namespace memops64
}  // namespace pagelock
