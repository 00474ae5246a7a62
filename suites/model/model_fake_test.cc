// Tests of the test (no GPU): the model's state machine against the in-process fake driver agrees
// when the model is right, and finds and shrinks a disagreement when one rule is flipped. Also
// checks the generators' boundary bias. Runs in CI (.ci/run) through `bazel test`.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "fixtures/generators.h"
#include "fixtures/outcome.h"
#include "fixtures/seed.h"
#include "kernels/pattern.h"
#include "suites/model/fake_api.h"
#include "suites/model/model.h"

namespace pagelock {
namespace {

uint64_t g_steps = 0;

rc::detail::TestResult RunAgainstFake(const ModelRules& rules, int cases) {
  rc::detail::TestMetadata meta;
  meta.id = "PinnedModelFake";
  rc::detail::TestParams params;
  params.seed = RunSeed();
  params.maxSuccess = cases;
  return rc::detail::checkTestable(
      [&] {
        FakePinnedApi api;
        g_steps += RunPinnedApiStateMachine(api, rules);
      },
      meta, params);
}

std::string Show(const rc::detail::TestResult& r) {
  std::ostringstream os;
  rc::detail::printResultMessage(r, os);
  return os.str();
}

TEST(PinnedModelFakeTest, CorrectModelAgreesWithTheFakeDriver) {
  PAGELOCK_RULE("M01");
  g_steps = 0;
  const auto r = RunAgainstFake(ModelRules{}, 200);
  EXPECT_TRUE(r.is<rc::detail::SuccessResult>()) << Show(r);
  Metric("model_steps_count", static_cast<double>(g_steps), "count");
  EXPECT_GT(g_steps, 2000u) << "sequences too short to exercise the model";
}

// The shrunk counterexample: the shortest command list, one C++ statement per command.
size_t CommandCount(const rc::detail::FailureResult& f) {
  size_t n = 0;
  for (const auto& [type, value] : f.counterExample) n += std::count(value.begin(), value.end(), ';');
  return n;
}

TEST(PinnedModelFakeTest, WrongOverlapRuleIsFoundAndShrunkToAMinimalSequence) {
  PAGELOCK_RULE("M02");
  ModelRules wrong;
  wrong.overlapping_register_fails = false;  // the deliberate mistake
  const auto r = RunAgainstFake(wrong, 500);
  ASSERT_TRUE(r.is<rc::detail::FailureResult>()) << "the wrong rule was not caught: " << Show(r);
  const auto& f = r.get<rc::detail::FailureResult>();
  const std::string text = Show(r);
  // Minimal: one buffer, one registration, one overlapping registration.
  EXPECT_EQ(CommandCount(f), 3u) << text;
  EXPECT_NE(text.find("std::aligned_alloc"), std::string::npos) << text;
  EXPECT_NE(text.find("cudaHostRegister(buf[0]"), std::string::npos) << text;
  EXPECT_NE(f.description.find("cudaErrorHostMemoryAlreadyRegistered"), std::string::npos) << f.description;
  std::printf("shrunk counterexample of the deliberately wrong rule:\n%s\n", text.c_str());
}

TEST(PinnedModelFakeTest, WrongInteriorUnregisterRuleIsFoundAndShrunk) {
  PAGELOCK_RULE("M02");
  ModelRules wrong;
  wrong.interior_unregister_is_invalid = false;
  const auto r = RunAgainstFake(wrong, 500);
  ASSERT_TRUE(r.is<rc::detail::FailureResult>()) << "the wrong rule was not caught: " << Show(r);
  const auto& f = r.get<rc::detail::FailureResult>();
  EXPECT_EQ(CommandCount(f), 3u) << Show(r);
  EXPECT_NE(f.description.find("cudaErrorInvalidValue"), std::string::npos) << f.description;
}

// The size generator reaches the boundaries it promises, and stays in range.
RC_GTEST_PROP(GeneratorTest, SizesStayInRange, (ByteSize s)) {
  PAGELOCK_RULE("M03");
  RC_ASSERT(s.bytes >= 1u);
  RC_ASSERT(s.bytes <= (size_t{4} << 20) + 1);
  const Window w = *gen::WindowIn(s.bytes);
  RC_ASSERT(w.length >= 1u);
  RC_ASSERT(w.offset + w.length <= s.bytes);
  RC_TAG(s.bytes == 1 ? "one byte" : s.bytes % PageSize() == 0 ? "page multiple" : "other");
}

// The host side of PinnedProperty's sub-range property with the CUDA calls left out: every
// registrable kind built for every boundary size holds at most what was asked (sub-page: 100
// bytes), and its whole region and window can be written and read back. (heap_unaligned once
// wrapped sizes <= 20 to ~2^64 bytes: the fill ran off the heap, SIGSEGV on the H200 run.)
RC_GTEST_PROP(GeneratorTest, EveryRegionAndWindowOfEveryKindIsInsideItsMemory,
              (HostMemoryKind kind, uint32_t seed)) {
  PAGELOCK_RULE("M03");
  const size_t want = *gen::BoundarySize(size_t{1} << 20);
  auto region = HostRegion::Make(kind, want);
  RC_ASSERT(static_cast<bool>(region->data() != nullptr));
  RC_ASSERT(region->size() >= 1u);
  RC_ASSERT(region->size() <= std::max<size_t>(want, 100));
  auto* base = static_cast<unsigned char*>(region->data());
  const Window w = *gen::WindowIn(region->size());
  RC_ASSERT(w.offset + w.length <= region->size());
  HostFillPattern(base, region->size(), seed ^ 0x3c3c3c3cu);
  HostFillPattern(base + w.offset, w.length, seed);
  RC_ASSERT(HostCountPatternMismatches(base + w.offset, w.length, seed) == 0u);
  size_t outside = HostCountPatternMismatches(base, w.offset, seed ^ 0x3c3c3c3cu);
  for (size_t i = w.offset + w.length; i < region->size(); ++i) outside += base[i] != PatternByte(i, seed ^ 0x3c3c3c3cu);
  RC_ASSERT(outside == 0u);
}

TEST(GeneratorTest, SizesAreBiasedToPageAndTwoMebibyteBoundaries) {
  PAGELOCK_RULE("M03");
  const auto sizes =
      rc::gen::container<std::vector<ByteSize>>(2000, rc::gen::arbitrary<ByteSize>())(rc::Random(RunSeed()), 50).value();
  size_t one = 0, page_edge = 0, two_mib_edge = 0, odd = 0;
  for (const ByteSize& s : sizes) {
    one += s.bytes == 1;
    const size_t m = s.bytes % PageSize();
    page_edge += s.bytes > 1 && (m == 0 || m == 1 || m == PageSize() - 1);
    const size_t t = s.bytes % kTwoMiB;
    two_mib_edge += s.bytes >= kTwoMiB - 1 && (t == 0 || t == 1 || t == kTwoMiB - 1);
    odd += s.bytes % 2;
  }
  EXPECT_GT(one, 50u);
  EXPECT_GT(page_edge, 200u);
  EXPECT_GT(two_mib_edge, 100u);
  EXPECT_GT(odd, 400u);
}

}  // namespace
}  // namespace pagelock
