// Tests of the test (no GPU): the model's state machine against the in-process fake driver agrees
// when the model is right, and finds and shrinks a disagreement when one rule is flipped. Also
// checks the generators' boundary bias, and that the known driver deviations are caught by the
// strict model and excused, narrowly and counted, where the rules say so. Runs in CI (.ci/run)
// through `bazel test`.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/generators.h"
#include "fixtures/outcome.h"
#include "fixtures/seed.h"
#include "kernels/pattern.h"
#include "suites/model/fake_api.h"
#include "suites/model/model.h"

namespace pagelock {
namespace {

uint64_t g_steps = 0;

// The fake with r580's deviations. r56: cudaHostGetFlags reports the Portable bit (all_bits:
// every bit) of the oldest live allocation, standing for the opener of a shared pinned chunk
// (docs/platforms/driver-r580.md#r56-portable). r58: it succeeds on registered memory with Mapped.
class DeviatingFakeApi : public PinnedApi {
 public:
  DeviatingFakeApi(bool r56, bool r58, bool all_bits = false) : r56_(r56), r58_(r58), all_bits_(all_bits) {}
  cudaError_t HostAlloc(void** p, size_t n, unsigned flags) override {
    const cudaError_t e = fake_.HostAlloc(p, n, flags);
    if (e == cudaSuccess) live_.push_back({*p, flags});
    return e;
  }
  cudaError_t FreeHost(void* p) override {
    const cudaError_t e = fake_.FreeHost(p);
    if (e == cudaSuccess) {
      live_.erase(std::remove_if(live_.begin(), live_.end(), [&](const auto& a) { return a.first == p; }), live_.end());
    }
    return e;
  }
  cudaError_t HostRegister(void* p, size_t n, unsigned flags) override {
    const cudaError_t e = fake_.HostRegister(p, n, flags);
    if (e == cudaSuccess) regs_[static_cast<unsigned char*>(p)] = n;
    return e;
  }
  cudaError_t HostUnregister(void* p) override {
    const cudaError_t e = fake_.HostUnregister(p);
    if (e == cudaSuccess) regs_.erase(static_cast<unsigned char*>(p));
    return e;
  }
  cudaError_t HostGetFlags(unsigned* flags, void* p) override {
    const cudaError_t e = fake_.HostGetFlags(flags, p);
    if (e == cudaSuccess && r56_) {
      const unsigned mask = all_bits_ ? 7u : static_cast<unsigned>(cudaHostAllocPortable);
      *flags = (*flags & ~mask) | (live_.front().second & mask);
    }
    if (e == cudaErrorInvalidValue && r58_ && Registered(static_cast<unsigned char*>(p))) {
      *flags = cudaHostAllocMapped;
      return cudaSuccess;
    }
    return e;
  }
  cudaError_t HostGetDevicePointer(void** dev, void* p) override { return fake_.HostGetDevicePointer(dev, p); }
  cudaError_t PointerGetAttributes(cudaPointerAttributes* a, const void* p) override {
    return fake_.PointerGetAttributes(a, p);
  }
  cudaError_t DeviceRoundTrip(void* dev, size_t n, uint32_t seed, unsigned long long* bad) override {
    return fake_.DeviceRoundTrip(dev, n, seed, bad);
  }
  cudaError_t AsyncCopyRoundTrip(void* host, size_t n, uint32_t seed, size_t* bad) override {
    return fake_.AsyncCopyRoundTrip(host, n, seed, bad);
  }

 private:
  bool Registered(unsigned char* p) const {
    auto it = regs_.upper_bound(p);
    return it != regs_.begin() && p < std::prev(it)->first + std::prev(it)->second;
  }
  bool r56_, r58_, all_bits_;
  FakePinnedApi fake_;
  std::vector<std::pair<void*, unsigned>> live_;  // in allocation order
  std::map<unsigned char*, size_t> regs_;
};

// Runs `cases` sequences, each against a fresh API from `make`; adds up what they ran.
rc::detail::TestResult RunAgainst(const std::function<std::unique_ptr<PinnedApi>()>& make, const ModelRules& rules,
                                  int cases, ModelRun* total = nullptr) {
  rc::detail::TestMetadata meta;
  meta.id = "PinnedModelFake";
  rc::detail::TestParams params;
  params.seed = CaseSeed();
  params.maxSuccess = cases;
  return rc::detail::checkTestable(
      [&] {
        auto api = make();
        const ModelRun run = RunPinnedApiStateMachine(*api, rules);
        g_steps += run.steps;
        if (total) {
          total->steps += run.steps;
          total->excused_r56_portable += run.excused_r56_portable;
          total->excused_r58 += run.excused_r58;
        }
      },
      meta, params);
}

rc::detail::TestResult RunAgainstFake(const ModelRules& rules, int cases) {
  return RunAgainst([] { return std::make_unique<FakePinnedApi>(); }, rules, cases);
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

// The strict model (no deviation excused) finds r56-portable and shrinks it to a few calls, as
// on the H200: allocations and the flags of one made after another (at best three calls; an
// allocation between them cannot always be shrunk away, the query names it by index).
TEST(PinnedModelFakeTest, StrictModelFindsThePortableDeviationAndShrinksIt) {
  PAGELOCK_RULE("M02");
  const auto r = RunAgainst([] { return std::make_unique<DeviatingFakeApi>(true, false); }, ModelRules{}, 500);
  ASSERT_TRUE(r.is<rc::detail::FailureResult>()) << "r56-portable was not caught: " << Show(r);
  const auto& f = r.get<rc::detail::FailureResult>();
  const std::string text = Show(r);
  EXPECT_GE(CommandCount(f), 5u) << text;  // a cudaHostAlloc shows as two statements
  EXPECT_LE(CommandCount(f), 9u) << text;
  EXPECT_EQ(text.find("cudaHostGetFlags(&f, static_cast<char*>(alloc[0])"), std::string::npos) << text;
  // Portable lost ("at least the requested bits") or gained ("Portable exactly"): both R56.
  EXPECT_NE(f.description.find("HostGetFlags"), std::string::npos) << f.description;
  EXPECT_NE(f.description.find("(R56): model expects"), std::string::npos) << f.description;
}

TEST(PinnedModelFakeTest, StrictModelFindsGetFlagsSucceedingOnRegisteredMemory) {
  PAGELOCK_RULE("M02");
  const auto r = RunAgainst([] { return std::make_unique<DeviatingFakeApi>(false, true); }, ModelRules{}, 500);
  ASSERT_TRUE(r.is<rc::detail::FailureResult>()) << "r58 was not caught: " << Show(r);
  const auto& f = r.get<rc::detail::FailureResult>();
  // A buffer, its registration, the flags query; a buffer before it cannot always be shrunk
  // away (the query names its buffer by index): 4 with some seeds.
  EXPECT_GE(CommandCount(f), 3u) << Show(r);
  EXPECT_LE(CommandCount(f), 4u) << Show(r);
  EXPECT_NE(f.description.find("registered memory fails (R58)"), std::string::npos) << f.description;
}

ModelRules Excusing() {
  ModelRules r;
  r.excuse_r56_portable = true;
  r.excuse_r58 = true;
  return r;
}

TEST(PinnedModelFakeTest, ExcusedDeviationsPassAndAreCounted) {
  PAGELOCK_RULE("M02");
  ModelRun total;
  const auto r = RunAgainst([] { return std::make_unique<DeviatingFakeApi>(true, true); }, Excusing(), 200, &total);
  EXPECT_TRUE(r.is<rc::detail::SuccessResult>()) << Show(r);
  EXPECT_GT(total.excused_r56_portable, 0u);
  EXPECT_GT(total.excused_r58, 0u);
  // Against the documented fake the excusing model agrees too, and excuses nothing.
  ModelRun clean;
  const auto c = RunAgainst([] { return std::make_unique<FakePinnedApi>(); }, Excusing(), 100, &clean);
  EXPECT_TRUE(c.is<rc::detail::SuccessResult>()) << Show(c);
  EXPECT_EQ(clean.excused_r56_portable, 0u);
  EXPECT_EQ(clean.excused_r58, 0u);
}

// The r56 excuse covers the Portable bit only: another allocation's Mapped or WriteCombined bit
// is still a failure.
TEST(PinnedModelFakeTest, ThePortableExcuseHidesNoOtherBit) {
  PAGELOCK_RULE("M02");
  const auto r = RunAgainst([] { return std::make_unique<DeviatingFakeApi>(true, false, true); }, Excusing(), 500);
  ASSERT_TRUE(r.is<rc::detail::FailureResult>()) << "a lost Mapped/WriteCombined bit was excused: " << Show(r);
  const auto& f = r.get<rc::detail::FailureResult>();
  EXPECT_NE(f.description.find("at least the requested bits (R56)"), std::string::npos) << f.description;
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
              (RegistrableKind kind, uint32_t seed)) {
  PAGELOCK_RULE("M03");
  const size_t want = *gen::BoundarySize(size_t{1} << 20);
  auto region = HostRegion::Make(kind.kind, want);
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
      rc::gen::container<std::vector<ByteSize>>(2000, rc::gen::arbitrary<ByteSize>())(rc::Random(CaseSeed()), 50).value();
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
