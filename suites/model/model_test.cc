// The model-based test against the real driver: RapidCheck generates command sequences over the
// whole pinned-memory API (suites/model/model.h) and every step compares the driver with the
// reference model. A disagreement fails with the shrunk sequence, printed as C++ statements.
// The number of sequences and their length come from RapidCheck's parameters (RC_PARAMS:
// max_success, max_size), recorded as budgets; the steps run are a metric.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <atomic>

#include "fixtures/gpu_property.h"
#include "suites/model/model.h"

namespace pagelock {
namespace {

std::atomic<uint64_t> g_steps{0};

class PinnedModel : public GpuProperty {};

RC_GTEST_FIXTURE_PROP(PinnedModel, DriverAgreesWithTheModelOnEveryStep, ()) {
  if (!ready()) return;
  PAGELOCK_RULE("M01,R19,R22,R30,R31,R32,R33,R34,R35,R36,R51,R53,R56,R71,R72,R77,R76");
  const auto& params = rc::detail::configuration().testParams;
  Budget("sequences", params.maxSuccess, "count");
  Budget("max_sequence_size", params.maxSize, "commands");
  auto api = MakeRealPinnedApi();
  g_steps += RunPinnedApiStateMachine(*api, ModelRules{});
  Metric("model_steps_count", static_cast<double>(g_steps.load()), "count");
}

}  // namespace
}  // namespace pagelock
