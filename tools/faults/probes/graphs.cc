// Probes of the graph faults (catalogue/graphs.cc).
#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

// captured_copy_node_short: "rc,mismatches" of 64-byte copies on a captured stream and not.
int CapturedCopyNode() {
  auto htod_async = Get<CUresult (*)(CUdeviceptr, const void*, size_t, CUstream)>("cuMemcpyHtoDAsync");
  auto dtoh_async = Get<CUresult (*)(void*, CUdeviceptr, size_t, CUstream)>("cuMemcpyDtoHAsync");
  auto copy_async = Get<CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream)>("cuMemcpyAsync");
  if (!htod_async || !dtoh_async || !copy_async) return 1;
  unsigned char* host = CopyHost();
  const CUdeviceptr dp = reinterpret_cast<CUdeviceptr>(CopyDevice());
  const CUdeviceptr hp = reinterpret_cast<CUdeviceptr>(host);
  printf("captured_htod=%s", Copied(64, [&] { return htod_async(dp, host, 64, kCapturing); }).c_str());
  printf(" captured_dtoh=%s", Copied(64, [&] { return dtoh_async(host, dp, 64, kCapturing); }).c_str());
  printf(" captured_unified=%s", Copied(64, [&] { return copy_async(dp, hp, 64, kCapturing); }).c_str());
  printf(" eager_htod=%s\n", Copied(64, [&] { return htod_async(dp, host, 64, kBlocking); }).c_str());
  return 0;
}

// graph_relaunch_skips_stream_order: "rc,stream the launch reached the driver on (own: the
// caller's; other)".
int GraphRelaunch() {
  auto graph_launch = Get<CUresult (*)(CUgraphExec, CUstream)>("cuGraphLaunch");
  auto graph_destroy = Get<CUresult (*)(CUgraphExec)>("cuGraphExecDestroy");
  auto graph_stream = static_cast<void**>(FakeSymbol("fake_last_graph_stream"));
  if (!graph_launch || !graph_destroy || !graph_stream) return 1;
  auto launched = [&](CUgraphExec g, CUstream s) {
    *graph_stream = nullptr;
    CUresult rc = graph_launch(g, s);
    return std::to_string(rc) + "," + (*graph_stream == s ? "own" : "other");
  };
  const CUgraphExec exec_a = reinterpret_cast<CUgraphExec>(0x6A), exec_b = reinterpret_cast<CUgraphExec>(0x6B);
  printf("graph_first=%s", launched(exec_a, kBlocking).c_str());
  printf(" graph_second=%s", launched(exec_a, kBlocking).c_str());
  printf(" graph_third=%s", launched(exec_a, kBlocking).c_str());
  printf(" graph_other_first=%s", launched(exec_b, kBlocking).c_str());
  printf(" graph_relaunch_captured=%s", launched(exec_a, kCapturing).c_str());
  graph_destroy(exec_a);
  printf(" graph_handle_reused_first=%s\n", launched(exec_a, kBlocking).c_str());
  graph_destroy(exec_a);
  graph_destroy(exec_b);
  return 0;
}

const Probe kProbes[] = {
    {"captured_copy_node_short", CapturedCopyNode},
    {"graph_relaunch_skips_stream_order", GraphRelaunch},
};

}  // namespace

extern const ProbeArea kGraphsProbes = Probes("graphs", kProbes);

}  // namespace probes
