// The atomics matrix with every GPU as an agent: system-scope atomics from all devices at once on
// one pinned host word set. Exact where every device promises native host atomics for the op
// and type; elsewhere the loss is measured and the case is NotSupported with it (A04).
// Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <string>
#include <tuple>
#include <vector>

#include "fixtures/gpu_test.h"
#include "suites/atomics/atomic_matrix_check.h"

namespace pagelock {
namespace {

using Param = std::tuple<OpType, HostKind>;

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return OpTypeName(std::get<0>(info.param)) + "On" + MemoryName(std::get<1>(info.param));
}

constexpr int kBlocks = 8;

class MultiGpuAtomicsTest : public GpuTest, public ::testing::WithParamInterface<Param> {
 protected:
  MultiGpuAtomicsTest() : GpuTest(/*devices=*/2) {}
};

TEST_P(MultiGpuAtomicsTest, SystemScopeFromEveryGpuIsExactWhereNative) {
  PAGELOCK_RULE("R78,R80,R82,A04");
  const auto [ot, memory] = GetParam();
  const int count = static_cast<int>(Probe().devices.size());
  bool native = true;
  std::string why;
  std::vector<int> devices;
  for (int d = 0; d < count; ++d) {
    const AtomicPromise p = HostAtomicPromise(ot, d);
    ASSERT_EQ(p.query, cudaSuccess) << p.why;
    native = native && p.native;
    why += (why.empty() ? "" : "; ") + p.why;
    devices.push_back(d);
  }
  Observe("native_host_atomics", native);
  Observe("capability", why);
  Observe("devices", count);
  AtomicWords words(memory, AtomicBytes(kBlocks));
  if (!words.unsupported().empty()) PAGELOCK_NOT_SUPPORTED(words.unsupported());
  ASSERT_TRUE(words.error().empty()) << words.error();
  AtomicRun run;
  run.ot = ot;
  run.blocks = kBlocks;
  run.seed = CaseSeed();
  run.devices = devices;
  const RacingTally t = RunRacingPatterns(words, run);
  ASSERT_TRUE(t.error.empty()) << t.error;
  // R78 holds whatever attr 86 says: without native host atomics an atomic may be split into a
  // load and a store, and may lose updates, but each access stays whole, so no value is torn.
  if (t.torn) {
    ADD_FAILURE() << "R78: " << t.torn << " value(s) seen that no agent wrote (torn, not lost): " << t.first;
    return;
  }
  if (!native) {
    PAGELOCK_NOT_SUPPORTED("host atomics not native on every device for " + OpTypeName(ot) +
                           " (" + why + "); measured " + std::to_string(t.lost) +
                           " lost update(s) (" + std::to_string(t.torn) + " torn) and " + std::to_string(t.wrong) +
                           " wrong word(s) in " + std::to_string(t.contributions) +
                           " atomics from " + std::to_string(count) + " GPUs");
  }
  EXPECT_EQ(t.lost + t.wrong, 0u) << "native host atomics promised on every device but " << t.first;
}

std::vector<Param> Params() {
  std::vector<Param> out;
  for (const OpType& ot : DefinedOpTypes())
    for (HostKind m : {HostKind::kHostAllocPortableMapped, HostKind::kRegisteredMalloc})
      out.emplace_back(ot, m);
  return out;
}
INSTANTIATE_TEST_SUITE_P(Matrix, MultiGpuAtomicsTest, ::testing::ValuesIn(Params()), ParamName);

}  // namespace
}  // namespace pagelock
