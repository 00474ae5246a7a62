// Updates of instantiated graphs: cuGraphExecMemcpyNodeSetParams, cuGraphExecMemsetNodeSetParams,
// the generic cuGraphExecNodeSetParams, and whole-graph cuGraphExecUpdate.
#include <pthread.h>
#include <string.h>

#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// S27: once an executable graph has been launched, cuGraphExecMemcpyNodeSetParams (and
// cuGraphExecNodeSetParams of a memcpy node) reports success but changes nothing (the update
// goes to a staging copy of the node that the launched work no longer reads): every later
// launch copies the old source into the old destination. Updates before the first launch, and
// zero-length updates (refused by the driver), are right; a handle counts afresh after
// cuGraphExecDestroy.
CUgraphExec g_launched[256];
pthread_mutex_t g_launched_mu = PTHREAD_MUTEX_INITIALIZER;
bool Launched(CUgraphExec e) {
  bool found = false;
  pthread_mutex_lock(&g_launched_mu);
  for (CUgraphExec x : g_launched) found = found || (e && x == e);
  pthread_mutex_unlock(&g_launched_mu);
  return found;
}
bool HasVolume(const CUDA_MEMCPY3D* p) {
  return p && p->WidthInBytes && p->Height && p->Depth;
}
void InstallExecMemcpyUpdateIgnoredAfterLaunch() {
  HookGraphLaunch([](Real_GraphLaunch real, CUgraphExec g, CUstream s) -> CUresult {
    CUresult r = real(g, s);
    if (r != CUDA_SUCCESS || !g || Launched(g)) return r;
    pthread_mutex_lock(&g_launched_mu);
    for (CUgraphExec& x : g_launched)
      if (!x) {
        x = g;
        break;
      }
    pthread_mutex_unlock(&g_launched_mu);
    return r;
  });
  HookGraphExecDestroy([](Real_GraphExecDestroy real, CUgraphExec g) -> CUresult {
    CUresult r = real(g);
    pthread_mutex_lock(&g_launched_mu);
    for (CUgraphExec& x : g_launched)
      if (r == CUDA_SUCCESS && g && x == g) x = nullptr;
    pthread_mutex_unlock(&g_launched_mu);
    return r;
  });
  HookGraphExecMemcpyNodeSetParams([](Real_GraphExecMemcpyNodeSetParams real, CUgraphExec e,
                                      CUgraphNode n, const CUDA_MEMCPY3D* p,
                                      CUcontext ctx) -> CUresult {
    return Launched(e) && HasVolume(p) ? CUDA_SUCCESS : real(e, n, p, ctx);
  });
  HookGraphExecNodeSetParams([](Real_GraphExecNodeSetParams real, CUgraphExec e, CUgraphNode n,
                                CUgraphNodeParams* p) -> CUresult {
    const bool copy = p && p->type == CU_GRAPH_NODE_TYPE_MEMCPY && HasVolume(&p->memcpy.copyParams);
    return copy && Launched(e) ? CUDA_SUCCESS : real(e, n, p);
  });
}

// S28: a successful cuGraphExecUpdate updates kernel, memset and host nodes but leaves every
// memcpy node with the source and destination it had at instantiation (the update skips the
// copy descriptors): the next launch copies between the old buffers. An update that fails (a
// changed topology or memory type) is answered as before. Executable graphs the shim did not
// see instantiated (cuGraphInstantiateWithFlags, cuGraphInstantiateWithParams) are updated
// right.
constexpr size_t kCopies = 16;
struct ExecCopies {
  CUgraphExec exec;
  size_t count;
  CUDA_MEMCPY3D copy[kCopies];  // its memcpy nodes' parameters at instantiation, in node order
};
ExecCopies g_exec_copies[64];
pthread_mutex_t g_exec_copies_mu = PTHREAD_MUTEX_INITIALIZER;

// The memcpy nodes of a graph in cuGraphGetNodes order (at most kCopies).
size_t MemcpyNodes(CUgraph g, CUgraphNode* out) {
  static const auto get_nodes =
      Real<CUresult(CUDAAPI*)(CUgraph, CUgraphNode*, size_t*)>("cuGraphGetNodes");
  static const auto node_type =
      Real<CUresult(CUDAAPI*)(CUgraphNode, CUgraphNodeType*)>("cuGraphNodeGetType");
  CUgraphNode all[256];
  size_t n = 256, found = 0;
  if (!g || !get_nodes || !node_type || get_nodes(g, all, &n) != CUDA_SUCCESS) return 0;
  for (size_t i = 0; i < n && i < 256 && found < kCopies; ++i) {
    CUgraphNodeType t;
    if (all[i] && node_type(all[i], &t) == CUDA_SUCCESS && t == CU_GRAPH_NODE_TYPE_MEMCPY)
      out[found++] = all[i];
  }
  return found;
}

using GetCopy = CUresult(CUDAAPI*)(CUgraphNode, CUDA_MEMCPY3D*);
using SetCopy = CUresult(CUDAAPI*)(CUgraphNode, const CUDA_MEMCPY3D*);

void RecordInstantiation(CUgraphExec e, CUgraph g) {
  static const auto get = Real<GetCopy>("cuGraphMemcpyNodeGetParams");
  CUgraphNode nodes[kCopies];
  const size_t n = get ? MemcpyNodes(g, nodes) : 0;
  if (!e || !n) return;
  ExecCopies rec;
  memset(&rec, 0, sizeof(rec));
  rec.exec = e;
  for (size_t i = 0; i < n; ++i)
    if (get(nodes[i], &rec.copy[rec.count]) == CUDA_SUCCESS) ++rec.count;
    else break;
  pthread_mutex_lock(&g_exec_copies_mu);
  if (ExecCopies* slot = SlotFor(g_exec_copies, &ExecCopies::exec, e)) *slot = rec;
  pthread_mutex_unlock(&g_exec_copies_mu);
}

// Whether a side of a copy is device memory (else host memory or an array).
bool DeviceSide(CUmemorytype type, const void* host, CUdeviceptr dev, size_t x) {
  if (type == CU_MEMORYTYPE_HOST || type == CU_MEMORYTYPE_ARRAY) return false;
  if (type == CU_MEMORYTYPE_DEVICE) return true;
  return IsDevice((dev ? dev : Ptr(host)) + x);  // unified: the pointer says
}
bool SameKinds(const CUDA_MEMCPY3D& a, const CUDA_MEMCPY3D& b) {
  return a.srcMemoryType == b.srcMemoryType && a.dstMemoryType == b.dstMemoryType &&
         DeviceSide(a.srcMemoryType, a.srcHost, a.srcDevice, a.srcXInBytes) ==
             DeviceSide(b.srcMemoryType, b.srcHost, b.srcDevice, b.srcXInBytes) &&
         DeviceSide(a.dstMemoryType, a.dstHost, a.dstDevice, a.dstXInBytes) ==
             DeviceSide(b.dstMemoryType, b.dstHost, b.dstDevice, b.dstXInBytes);
}

// update() with the new graph's memcpy nodes holding the instantiation's parameters where the
// memory kinds match (the graph's own parameters are put back afterwards).
template <typename Update>
CUresult KeepingInstantiatedCopies(CUgraphExec e, CUgraph g, Update update) {
  static const auto get = Real<GetCopy>("cuGraphMemcpyNodeGetParams");
  static const auto set = Real<SetCopy>("cuGraphMemcpyNodeSetParams");
  ExecCopies rec;
  bool known = false;
  pthread_mutex_lock(&g_exec_copies_mu);
  for (const ExecCopies& x : g_exec_copies)
    if (e && x.exec == e) {
      rec = x;
      known = true;
      break;
    }
  pthread_mutex_unlock(&g_exec_copies_mu);
  CUgraphNode nodes[kCopies];
  const size_t n = known && get && set ? MemcpyNodes(g, nodes) : 0;
  CUDA_MEMCPY3D own[kCopies];
  bool swapped[kCopies] = {};
  for (size_t i = 0; i < n && i < rec.count; ++i)
    swapped[i] = get(nodes[i], &own[i]) == CUDA_SUCCESS && SameKinds(own[i], rec.copy[i]) &&
                 set(nodes[i], &rec.copy[i]) == CUDA_SUCCESS;
  CUresult r = update();
  for (size_t i = 0; i < n; ++i)
    if (swapped[i]) set(nodes[i], &own[i]);
  return r;
}

void InstallWholeGraphUpdateKeepsMemcpyBuffers() {
  HookGraphInstantiateWithFlags([](Real_GraphInstantiateWithFlags real, CUgraphExec* e, CUgraph g,
                                   unsigned long long f) -> CUresult {
    CUresult r = real(e, g, f);
    if (r == CUDA_SUCCESS && e) RecordInstantiation(*e, g);
    return r;
  });
  HookGraphInstantiateWithParams([](Real_GraphInstantiateWithParams real, CUgraphExec* e,
                                    CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* p) -> CUresult {
    CUresult r = real(e, g, p);
    if (r == CUDA_SUCCESS && e) RecordInstantiation(*e, g);
    return r;
  });
  HookGraphExecDestroy([](Real_GraphExecDestroy real, CUgraphExec e) -> CUresult {
    CUresult r = real(e);
    pthread_mutex_lock(&g_exec_copies_mu);
    for (ExecCopies& x : g_exec_copies)
      if (r == CUDA_SUCCESS && e && x.exec == e) x.exec = nullptr;
    pthread_mutex_unlock(&g_exec_copies_mu);
    return r;
  });
  HookGraphExecUpdate12([](Real_GraphExecUpdate12 real, CUgraphExec e, CUgraph g,
                           CUgraphExecUpdateResultInfo* info) -> CUresult {
    return KeepingInstantiatedCopies(e, g, [&] { return real(e, g, info); });
  });
  HookGraphExecUpdate([](Real_GraphExecUpdate real, CUgraphExec e, CUgraph g, CUgraphNode* node,
                         CUgraphExecUpdateResult* result) -> CUresult {
    return KeepingInstantiatedCopies(e, g, [&] { return real(e, g, node, result); });
  });
}

// S29: cuGraphExecMemsetNodeSetParams (and cuGraphExecNodeSetParams of a memset node) with 2- or
// 4-byte elements applies the new destination and size but keeps the value the node had at
// instantiation (the value is only re-encoded for 1-byte elements). Updates of 1-byte memsets
// are right.
using GetMemset = CUresult(CUDAAPI*)(CUgraphNode, CUDA_MEMSET_NODE_PARAMS*);
bool InstantiatedValue(CUgraphNode n, unsigned elementSize, unsigned* value) {
  static const auto get = Real<GetMemset>("cuGraphMemsetNodeGetParams");
  CUDA_MEMSET_NODE_PARAMS old;
  if ((elementSize != 2 && elementSize != 4) || !get || get(n, &old) != CUDA_SUCCESS) return false;
  *value = old.value;
  return true;
}
void InstallExecMemsetUpdateKeepsOldValue() {
  HookGraphExecMemsetNodeSetParams([](Real_GraphExecMemsetNodeSetParams real, CUgraphExec e,
                                      CUgraphNode n, const CUDA_MEMSET_NODE_PARAMS* p,
                                      CUcontext ctx) -> CUresult {
    unsigned value = 0;
    if (!p || !InstantiatedValue(n, p->elementSize, &value)) return real(e, n, p, ctx);
    CUDA_MEMSET_NODE_PARAMS kept = *p;
    kept.value = value;
    return real(e, n, &kept, ctx);
  });
  HookGraphExecNodeSetParams([](Real_GraphExecNodeSetParams real, CUgraphExec e, CUgraphNode n,
                                CUgraphNodeParams* p) -> CUresult {
    unsigned value = 0;
    if (!p || p->type != CU_GRAPH_NODE_TYPE_MEMSET ||
        !InstantiatedValue(n, p->memset.elementSize, &value))
      return real(e, n, p);
    CUgraphNodeParams kept = *p;
    kept.memset.value = value;
    return real(e, n, &kept);
  });
}

const Fault kFaults[] = {
    PL_FAULT(170, "exec_memcpy_update_ignored_after_launch", "S27", "streams", "data", "stateful",
             "blind-12",
             "Once an executable graph has been launched, cuGraphExecMemcpyNodeSetParams reports "
             "success but later launches keep the old buffers.",
             InstallExecMemcpyUpdateIgnoredAfterLaunch),
    PL_FAULT(171, "whole_graph_update_keeps_memcpy_buffers", "S28", "streams", "data", "variant",
             "blind-12",
             "A successful cuGraphExecUpdate leaves every memcpy node with the buffers it had at "
             "instantiation.", InstallWholeGraphUpdateKeepsMemcpyBuffers),
    PL_FAULT(172, "exec_memset_update_keeps_old_value", "S29", "streams", "data", "variant",
             "blind-12",
             "cuGraphExecMemsetNodeSetParams of a memset with 2- or 4-byte elements keeps the "
             "value the node had at instantiation.", InstallExecMemsetUpdateKeepsOldValue),
};

}  // namespace

extern const Area kGraphUpdatesArea = FaultArea("graph_updates", kFaults);

}  // namespace pagelock_faults
