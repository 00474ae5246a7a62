// Graphs: stream capture and graph launches.
#include <pthread.h>

#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// S11: an asynchronous 1D copy queued on a stream that is being captured becomes a
// graph memcpy node one byte short (the node's extent is computed as the last byte's offset):
// every launch of the graph leaves the destination's last byte as it was. The same copies run
// eagerly, outside a capture, are exact.
template <typename R>
size_t CapturedSize(R real, CUstream st, const char* name, size_t n) {
  return n > 1 && BeingCaptured(real, st, name) ? n - 1 : n;
}
void InstallCapturedCopyNodeShort() {
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    return real(d, s, CapturedSize(real, st, "cuMemcpyAsync", n), st);
  });
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    return real(d, s, CapturedSize(real, st, "cuMemcpyHtoDAsync", n), st);
  });
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    return real(d, s, CapturedSize(real, st, "cuMemcpyDtoHAsync", n), st);
  });
  HookMemcpyDtoDAsync([](Real_MemcpyDtoDAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    return real(d, s, CapturedSize(real, st, "cuMemcpyDtoDAsync", n), st);
  });
}

// S11: from the second cuGraphLaunch of one executable graph on, the launch is not
// ordered in the stream it is launched into: it runs on an idle stream of the shim's (still
// after the graph's own earlier launches, which the driver orders), so it neither waits for the
// work queued before it nor holds back the work, events and synchronisations queued after it.
// The first launch of each executable graph (a handle counts afresh after cuGraphExecDestroy)
// and launches into a stream being captured are right.
struct GraphLaunchCount {
  CUgraphExec exec;
  unsigned launches;
};
GraphLaunchCount g_graph_launches[256];
pthread_mutex_t g_graph_mu = PTHREAD_MUTEX_INITIALIZER;
// The launches of `exec` so far (adding `more` to them).
unsigned GraphLaunches(CUgraphExec exec, unsigned more) {
  unsigned before = 0;
  pthread_mutex_lock(&g_graph_mu);
  GraphLaunchCount* slot = SlotFor(g_graph_launches, &GraphLaunchCount::exec, exec);
  if (slot) {
    if (slot->exec != exec) *slot = {exec, 0};
    before = slot->launches;
    slot->launches += more;
  }
  pthread_mutex_unlock(&g_graph_mu);
  return before;
}
void InstallGraphRelaunchSkipsStreamOrder() {
  HookGraphLaunch([](Real_GraphLaunch real, CUgraphExec g, CUstream s) -> CUresult {
    if (!g || BeingCaptured(real, s, "cuGraphLaunch")) return real(g, s);
    if (GraphLaunches(g, 0) > 0 && SideStream() && real(g, SideStream()) == CUDA_SUCCESS) {
      GraphLaunches(g, 1);
      return CUDA_SUCCESS;
    }
    CUresult r = real(g, s);
    if (r == CUDA_SUCCESS) GraphLaunches(g, 1);
    return r;
  });
  HookGraphExecDestroy([](Real_GraphExecDestroy real, CUgraphExec g) -> CUresult {
    CUresult r = real(g);
    if (r == CUDA_SUCCESS && g) {
      pthread_mutex_lock(&g_graph_mu);
      for (GraphLaunchCount& x : g_graph_launches)
        if (x.exec == g) x = {nullptr, 0};
      pthread_mutex_unlock(&g_graph_mu);
    }
    return r;
  });
}

const Fault kFaults[] = {
    PL_FAULT(109, "captured_copy_node_short", "S11", "streams", "data", "variant", "blind-10",
             "An asynchronous copy captured into a graph becomes a memcpy node one byte short.",
             InstallCapturedCopyNodeShort),
    PL_FAULT(133, "graph_relaunch_skips_stream_order", "S11", "streams", "sync",
             "stateful", "blind-11",
             "From its second launch on, an executable graph runs outside the order of the stream "
             "it is launched into.", InstallGraphRelaunchSkipsStreamOrder),
};

}  // namespace

extern const Area kGraphsArea = FaultArea("graphs", kFaults);

}  // namespace pagelock_faults
