// The atomics matrix on one GPU: every CUDA atomic op x type (where defined) x memory kind x
// scope x address pattern, and the same ops at system scope racing host threads that use
// __atomic builtins. One case per (op, type, memory); its scopes and patterns are launches
// inside the case, so GPU time stays small. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <string>
#include <tuple>
#include <vector>

#include "fixtures/gpu_test.h"
#include "suites/atomics/atomic_matrix_check.h"

namespace pagelock {
namespace {

using Param = std::tuple<OpType, AtomicMemory>;

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return OpTypeName(std::get<0>(info.param)) + "On" + MemoryName(std::get<1>(info.param));
}

constexpr AddressPattern kPatterns[] = {AddressPattern::kOneAddress, AddressPattern::kAdjacentWords,
                                        AddressPattern::kScattered};
constexpr int kBlocks = 8;
constexpr int kHostThreads = 4;
constexpr int kHostIters = 512;

class OneGpuAtomicsTest : public GpuTest, public ::testing::WithParamInterface<Param> {};

// Block scope among one block's threads, device and system scope among the whole grid: each
// exact from one GPU, with unique old values where the op returns distinct ones (R79, A01).
TEST_P(OneGpuAtomicsTest, EveryScopeAndPatternIsExact) {
  PAGELOCK_RULE("R79,A01,A02");
  const auto [ot, memory] = GetParam();
  AtomicWords words(memory, AtomicBytes(kBlocks));
  if (!words.unsupported().empty()) PAGELOCK_NOT_SUPPORTED(words.unsupported());
  ASSERT_TRUE(words.error().empty()) << words.error();
  uint64_t contributions = 0;
  for (AtomicScope scope : {AtomicScope::kBlock, AtomicScope::kDevice, AtomicScope::kSystem}) {
    for (AddressPattern pattern : kPatterns) {
      AtomicRun run;
      run.ot = ot;
      run.scope = scope;
      run.pattern = pattern;
      run.blocks = kBlocks;
      run.seed = CaseSeed();
      const AtomicOutcome out = RunAtomics(words, run);
      ASSERT_TRUE(out.error.empty()) << ScopeName(scope) << "/" << PatternName(pattern) << ": " << out.error;
      EXPECT_TRUE(out.exact()) << OpTypeName(ot) << " " << ScopeName(scope) << " scope, "
                               << PatternName(pattern) << ": " << out.Describe();
      contributions += out.contributions;
    }
  }
  Metric("atomics_checked_count", static_cast<double>(contributions), "count");
}

std::vector<Param> OneGpuParams() {
  std::vector<Param> out;
  for (const OpType& ot : DefinedOpTypes())
    for (AtomicMemory m : {AtomicMemory::kHostAllocMapped, AtomicMemory::kRegisteredMalloc,
                           AtomicMemory::kRegisteredMmap, AtomicMemory::kDeviceMemory})
      out.emplace_back(ot, m);
  return out;
}
INSTANTIATE_TEST_SUITE_P(Matrix, OneGpuAtomicsTest, ::testing::ValuesIn(OneGpuParams()), ParamName);

class HostRaceAtomicsTest : public GpuTest, public ::testing::WithParamInterface<Param> {};

// System-scope atomics from the GPU racing host __atomic builtins on the same words. Exact where
// the device promises native host atomics for the op and type (R80-R82); elsewhere the lost or
// torn updates are measured and the case is NotSupported with that count as the reason (A03).
TEST_P(HostRaceAtomicsTest, SystemScopeRacingHostThreadsIsExactWhereNative) {
  PAGELOCK_RULE("R80,R81,R82,A03");
  const auto [ot, memory] = GetParam();
  const AtomicPromise promise = HostAtomicPromise(ot, 0);
  ASSERT_EQ(promise.query, cudaSuccess) << promise.why;
  Observe("native_host_atomics", promise.native);
  Observe("capability", promise.why);
  AtomicWords words(memory, AtomicBytes(kBlocks));
  if (!words.unsupported().empty()) PAGELOCK_NOT_SUPPORTED(words.unsupported());
  ASSERT_TRUE(words.error().empty()) << words.error();
  uint64_t lost = 0, wrong = 0, contributions = 0;
  std::string first;
  for (AddressPattern pattern : kPatterns) {
    AtomicRun run;
    run.ot = ot;
    run.scope = AtomicScope::kSystem;
    run.pattern = pattern;
    run.blocks = kBlocks;
    run.seed = CaseSeed();
    run.host_threads = kHostThreads;
    run.host_iters = kHostIters;
    const AtomicOutcome out = RunAtomics(words, run);
    ASSERT_TRUE(out.error.empty()) << PatternName(pattern) << ": " << out.error;
    ASSERT_EQ(out.gave_up, 0u) << PatternName(pattern) << ": " << out.Describe();
    ASSERT_EQ(out.clobbered, 0u) << PatternName(pattern) << ": " << out.Describe();
    lost += out.lost;
    wrong += out.wrong_finals + out.repeated_olds;
    contributions += out.contributions;
    if (!out.exact() && first.empty()) first = PatternName(pattern) + ": " + out.Describe();
  }
  Metric("lost_or_torn_updates_count", static_cast<double>(lost), "count");
  Metric("wrong_words_count", static_cast<double>(wrong), "count");
  Metric("atomics_checked_count", static_cast<double>(contributions), "count");
  if (!promise.native) {
    PAGELOCK_NOT_SUPPORTED("host atomics not native for " + OpTypeName(ot) + " (" + promise.why +
                           "); measured " + std::to_string(lost) + " lost/torn update(s) and " +
                           std::to_string(wrong) + " wrong word(s) in " +
                           std::to_string(contributions) + " racing atomics");
  }
  EXPECT_EQ(lost + wrong, 0u) << "native host atomics promised (" << promise.why << ") but " << first;
}

std::vector<Param> HostRaceParams() {
  std::vector<Param> out;
  for (const OpType& ot : DefinedOpTypes())
    for (AtomicMemory m : {AtomicMemory::kHostAllocMapped, AtomicMemory::kRegisteredMalloc,
                           AtomicMemory::kRegisteredMmap})
      out.emplace_back(ot, m);
  return out;
}
INSTANTIATE_TEST_SUITE_P(Matrix, HostRaceAtomicsTest, ::testing::ValuesIn(HostRaceParams()), ParamName);

}  // namespace
}  // namespace pagelock
