// Host self-test of the atomics checker (no GPU): histories made by real host atomics are judged
// exact, and a history with one lost update is caught. Keeps the matrix's verdicts honest on
// machines where the lead cannot look at every GPU run.
#include <gtest/gtest.h>

#include <cstdlib>

#include <thread>
#include <vector>

#include "fixtures/outcome.h"
#include "fixtures/settings.h"
#include "suites/atomics/atomic_matrix_check.h"

namespace pagelock {
namespace {

constexpr uint64_t kSeed = 12345;

struct alignas(8) Word {
  uint64_t bits = 0;
};

// Applies ids [first, first+n) to the word with the host agent, recording old values.
void Apply(OpType ot, Word* w, uint64_t first, uint64_t n, std::vector<Contribution>* out) {
  for (uint64_t id = first; id < first + n; ++id) {
    const uint64_t old = HostAtomic(ot.op, ot.type, &w->bits, AtomicOperand(ot.op, ot.type, id, kSeed, kAtomicWrap));
    out->push_back({id, old});
  }
}

TEST(AtomicMatrixCheckTest, SequentialHostHistoriesOfEveryOpAreJudgedExact) {
  PAGELOCK_RULE("A01");
  for (const OpType& ot : DefinedOpTypes()) {
    constexpr uint64_t n = 300;
    Word w;
    const uint64_t initial = AtomicInitialBits(ot.op, ot.type, n, kSeed);
    StoreBits(ot.type, &w.bits, initial);
    std::vector<Contribution> history;
    Apply(ot, &w, 0, n, &history);
    const WordVerdict v = JudgeWord(ot.op, ot.type, initial, LoadBits(ot.type, &w.bits), history, kSeed, kAtomicWrap);
    EXPECT_TRUE(v.exact()) << OpTypeName(ot) << ": " << v.detail;
  }
}

TEST(AtomicMatrixCheckTest, FourHostThreadsRacingWithBuiltinsAreJudgedExact) {
  PAGELOCK_RULE("A03");
  for (const OpType& ot : DefinedOpTypes()) {
    constexpr uint64_t per_thread = 2000;
    Word w;
    const uint64_t initial = AtomicInitialBits(ot.op, ot.type, 4 * per_thread, kSeed);
    StoreBits(ot.type, &w.bits, initial);
    std::vector<std::vector<Contribution>> parts(4);
    std::vector<std::thread> threads;
    for (int h = 0; h < 4; ++h) threads.emplace_back([&, h] { Apply(ot, &w, h * per_thread, per_thread, &parts[h]); });
    for (auto& t : threads) t.join();
    std::vector<Contribution> history;
    for (auto& p : parts) history.insert(history.end(), p.begin(), p.end());
    const WordVerdict v = JudgeWord(ot.op, ot.type, initial, LoadBits(ot.type, &w.bits), history, kSeed, kAtomicWrap);
    EXPECT_TRUE(v.exact()) << OpTypeName(ot) << ": " << v.detail;
  }
}

TEST(AtomicMatrixCheckTest, OneLostUpdateIsCaught) {
  PAGELOCK_RULE("A01");
  for (const OpType& ot : DefinedOpTypes()) {
    // Min, max, and, or can be idempotent for a given operand; the others always change the word.
    if (ot.op == AtomicOp::kMin || ot.op == AtomicOp::kMax || ot.op == AtomicOp::kAnd || ot.op == AtomicOp::kOr) continue;
    Word w;
    const uint64_t initial = AtomicInitialBits(ot.op, ot.type, 3, kSeed);
    StoreBits(ot.type, &w.bits, initial);
    std::vector<Contribution> history;
    Apply(ot, &w, 0, 2, &history);
    // A third agent read the same old value as the second and its write was overwritten: it
    // reports that old value, but the word does not reflect its update.
    const uint64_t final_bits = LoadBits(ot.type, &w.bits);
    history.push_back({2, history[1].old_bits});
    const WordVerdict v = JudgeWord(ot.op, ot.type, initial, final_bits, history, kSeed, kAtomicWrap);
    EXPECT_FALSE(v.exact()) << OpTypeName(ot) << " lost update not caught";
    EXPECT_EQ(v.torn, 0u) << OpTypeName(ot) << ": a lost update read a whole value, it is not torn";
  }
}

TEST(AtomicMatrixCheckTest, ATornValueIsToldApartFromALostUpdate) {
  PAGELOCK_RULE("R78");
  for (const OpType& ot : DefinedOpTypes()) {
    Word w;
    const uint64_t initial = AtomicInitialBits(ot.op, ot.type, 3, kSeed);
    StoreBits(ot.type, &w.bits, initial);
    std::vector<Contribution> history;
    Apply(ot, &w, 0, 2, &history);
    // A third agent read a value made of halves of two others: nobody wrote it.
    const uint64_t a = history[0].old_bits, b = LoadBits(ot.type, &w.bits);
    const uint64_t half = AtomicTypeBytes(ot.type) == 8 ? 0xffffffffull : 0xffffull;
    uint64_t torn = (a & half) | (b & ~half);
    if (AtomicTypeBytes(ot.type) == 4) torn &= 0xffffffffull;
    if (torn == a || torn == b || torn == history[1].old_bits) torn ^= half & 0x5a5a5a5aull;  // really new
    history.push_back({2, torn});
    const WordVerdict v = JudgeWord(ot.op, ot.type, initial, b, history, kSeed, kAtomicWrap);
    EXPECT_GE(v.torn, 1u) << OpTypeName(ot) << ": torn old value 0x" << std::hex << torn << " not told apart";
    EXPECT_NE(v.detail.find("torn"), std::string::npos) << v.detail;
  }
}

TEST(AtomicMatrixCheckTest, EveryDefinedOpTypeHasAReadableName) {
  PAGELOCK_RULE("A01");
  const auto all = DefinedOpTypes();
  EXPECT_EQ(all.size(), 36u);  // 5 add, 2 sub, 4 exch, 4 min, 4 max, inc, dec, 3 CAS, 4 and/or/xor each
  EXPECT_EQ(OpTypeName(all.front()), "AddI32");
  EXPECT_FALSE(AtomicDefined(AtomicOp::kAdd, AtomicType::kI64));
  EXPECT_FALSE(AtomicDefined(AtomicOp::kMin, AtomicType::kF32));
}

// CAS runs get the bounded contended load (default 32 threads x 1 CAS per block), other ops keep
// theirs, and a bad PAGELOCK_ATOMICS_CAS_THREADS is an error naming the value.
TEST(AtomicMatrixCheckTest, CasRunsAreBoundedAndABadThreadCountIsNamed) {
  PAGELOCK_RULE("A01");
  unsetenv("PAGELOCK_ATOMICS_CAS_THREADS");
  AtomicRun cas;
  cas.ot = {AtomicOp::kCas, AtomicType::kU32};
  EXPECT_EQ(ShapeCasRun(cas), "");
  EXPECT_EQ(cas.threads, kCasThreadsDefault);
  EXPECT_EQ(kCasThreadsDefault, settings::DefaultNumber("PAGELOCK_ATOMICS_CAS_THREADS"));  // the table's
  EXPECT_EQ(cas.iters, 1);
  AtomicRun add;
  add.ot = {AtomicOp::kAdd, AtomicType::kU32};
  EXPECT_EQ(ShapeCasRun(add), "");
  EXPECT_EQ(add.threads, 128);
  EXPECT_EQ(add.iters, 2);
  setenv("PAGELOCK_ATOMICS_CAS_THREADS", "256", 1);
  AtomicRun heavy;
  heavy.ot = {AtomicOp::kCas, AtomicType::kU64};
  EXPECT_EQ(ShapeCasRun(heavy), "");
  EXPECT_EQ(heavy.threads, 256);
  setenv("PAGELOCK_ATOMICS_CAS_THREADS", "4096", 1);
  AtomicRun bad;
  bad.ot = {AtomicOp::kCas, AtomicType::kI32};
  EXPECT_EQ(ShapeCasRun(bad), "PAGELOCK_ATOMICS_CAS_THREADS=4096 is not a thread count in 1..1024");
  unsetenv("PAGELOCK_ATOMICS_CAS_THREADS");
}

}  // namespace
}  // namespace pagelock
