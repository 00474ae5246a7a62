// The atomics matrix on one GPU: every CUDA atomic op x type (where defined) x memory kind x
// scope x address pattern, and the same ops at system scope racing host threads that use
// __atomic builtins. One case per (op, type, memory); its scopes and patterns are launches
// inside the case, so GPU time stays small. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <cstring>

#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "fixtures/gpu_test.h"
#include "kernels/atomics/byte_granularity.h"
#include "suites/atomics/atomic_matrix_check.h"

namespace pagelock {
namespace {

using Param = std::tuple<OpType, HostKind>;

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
      ASSERT_EQ(ShapeCasRun(run), "");
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
    for (HostKind m : {HostKind::kHostAllocPortableMapped, HostKind::kRegisteredMalloc,
                           HostKind::kRegisteredMmap, HostKind::kDevice})
      out.emplace_back(ot, m);
  return out;
}
INSTANTIATE_TEST_SUITE_P(Matrix, OneGpuAtomicsTest, ::testing::ValuesIn(OneGpuParams()), ParamName);

class HostRaceAtomicsTest : public GpuTest, public ::testing::WithParamInterface<Param> {};

// System-scope atomics from the GPU racing host __atomic builtins on the same words. Exact where
// the device promises native host atomics for the op and type (R80-R82); elsewhere the lost or
// torn updates are measured and the case is NotSupported with that count as the reason (A03).
TEST_P(HostRaceAtomicsTest, SystemScopeRacingHostThreadsIsExactWhereNative) {
  PAGELOCK_RULE("R78,R80,R81,R82,A03");
  const auto [ot, memory] = GetParam();
  const AtomicPromise promise = HostAtomicPromise(ot, 0);
  ASSERT_EQ(promise.query, cudaSuccess) << promise.why;
  Observe("native_host_atomics", promise.native);
  Observe("capability", promise.why);
  AtomicWords words(memory, AtomicBytes(kBlocks));
  if (!words.unsupported().empty()) PAGELOCK_NOT_SUPPORTED(words.unsupported());
  ASSERT_TRUE(words.error().empty()) << words.error();
  AtomicRun run;
  run.ot = ot;
  run.blocks = kBlocks;
  run.seed = CaseSeed();
  run.host_threads = kHostThreads;
  run.host_iters = kHostIters;
  const RacingTally t = RunRacingPatterns(words, run);
  ASSERT_TRUE(t.error.empty()) << t.error;
  // R78 holds whatever attr 86 says: without native host atomics an atomic may be split into a
  // load and a store, and may lose updates, but each access stays whole, so no value is torn.
  if (t.torn) {
    ADD_FAILURE() << "R78: " << t.torn << " value(s) seen that no agent wrote (torn, not lost): " << t.first;
    return;
  }
  if (!promise.native) {
    PAGELOCK_NOT_SUPPORTED("host atomics not native for " + OpTypeName(ot) + " (" + promise.why +
                           "); measured " + std::to_string(t.lost) + " lost update(s) (" + std::to_string(t.torn) + " torn) and " +
                           std::to_string(t.wrong) + " wrong word(s) in " +
                           std::to_string(t.contributions) + " racing atomics");
  }
  EXPECT_EQ(t.lost + t.wrong, 0u) << "native host atomics promised (" << promise.why << ") but " << t.first;
}

std::vector<Param> HostRaceParams() {
  std::vector<Param> out;
  for (const OpType& ot : DefinedOpTypes())
    for (HostKind m : {HostKind::kHostAllocPortableMapped, HostKind::kRegisteredMalloc,
                           HostKind::kRegisteredMmap})
      out.emplace_back(ot, m);
  return out;
}
INSTANTIATE_TEST_SUITE_P(Matrix, HostRaceAtomicsTest, ::testing::ValuesIn(HostRaceParams()), ParamName);

class ByteGranularityTest : public GpuTest, public ::testing::WithParamInterface<HostKind> {};

// The host and every GPU store interleaved bytes of one buffer at once (owner = i mod agents),
// 20 rounds each; afterwards every byte holds its owner's last value: single-byte stores stay
// single accesses over the link, never a widened read-modify-write (R78, A05).
TEST_P(ByteGranularityTest, InterleavedByteStoresFromTheHostAndEveryGpuAllLand) {
  PAGELOCK_RULE("R78,A05");
  constexpr size_t kBytes = size_t{4} << 20;
  constexpr int kRounds = 20;
  const int gpus = static_cast<int>(Probe().devices.size());
  const unsigned owners = static_cast<unsigned>(gpus) + 1;  // owner 0 is the host
  Observe("agents", static_cast<int>(owners));
  Budget("bytes", kBytes, "B");
  Budget("rounds", kRounds, "count");
  AtomicWords words(GetParam(), kBytes);
  if (!words.unsupported().empty()) PAGELOCK_NOT_SUPPORTED(words.unsupported());
  ASSERT_TRUE(words.error().empty()) << words.error();
  auto* host = static_cast<unsigned char*>(words.host());
  auto* dev = static_cast<unsigned char*>(words.device());
  std::memset(host, 0, kBytes);
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  for (int d = 0; d < gpus; ++d) {
    ASSERT_CUDA_OK(cudaSetDevice(d));
    ASSERT_CUDA_OK(LaunchOwnedByteStores(dev, kBytes, owners, static_cast<unsigned>(d) + 1, kRounds, seed));
  }
  volatile unsigned char* v = host;
  for (int r = 0; r < kRounds; ++r)
    for (size_t i = 0; i < kBytes; i += owners) v[i] = OwnedByte(i, r, seed);
  for (int d = 0; d < gpus; ++d) {
    ASSERT_CUDA_OK(cudaSetDevice(d));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
  }
  ASSERT_CUDA_OK(cudaSetDevice(0));
  std::vector<size_t> wrong(owners, 0);
  for (size_t i = 0; i < kBytes; ++i) wrong[i % owners] += host[i] != OwnedByte(i, kRounds - 1, seed);
  size_t total = 0;
  for (unsigned o = 0; o < owners; ++o) {
    total += wrong[o];
    EXPECT_EQ(wrong[o], 0u) << "bytes of " << (o == 0 ? std::string("the host") : "GPU " + std::to_string(o - 1))
                            << " that do not hold its last value";
  }
  Metric("wrong_bytes_count", static_cast<double>(total), "count");
}

INSTANTIATE_TEST_SUITE_P(Memory, ByteGranularityTest,
                         ::testing::Values(HostKind::kHostAllocPortableMapped, HostKind::kRegisteredMalloc),
                         [](const ::testing::TestParamInfo<HostKind>& info) { return MemoryName(info.param); });

}  // namespace
}  // namespace pagelock
