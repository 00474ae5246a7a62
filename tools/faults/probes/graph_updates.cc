// Probes of the graph update faults (catalogue/graph_updates.cc). The fake driver keeps graphs of
// memcpy and memset nodes and runs an executable graph's nodes at cuGraphLaunch.
#include <string.h>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

struct Graphs {
  CUresult (*create)(CUgraph*, unsigned);
  CUresult (*add_copy)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const CUDA_MEMCPY3D*,
                       CUcontext);
  CUresult (*add_memset)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                         const CUDA_MEMSET_NODE_PARAMS*, CUcontext);
  CUresult (*instantiate)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*instantiate_params)(CUgraphExec*, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS*);
  CUresult (*set_copy)(CUgraphExec, CUgraphNode, const CUDA_MEMCPY3D*, CUcontext);
  CUresult (*set_memset)(CUgraphExec, CUgraphNode, const CUDA_MEMSET_NODE_PARAMS*, CUcontext);
  CUresult (*set_node)(CUgraphExec, CUgraphNode, CUgraphNodeParams*);
  CUresult (*update)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*);
  CUresult (*node_copy)(CUgraphNode, CUDA_MEMCPY3D*);
  CUresult (*launch)(CUgraphExec, CUstream);
  bool Complete() const {
    return create && add_copy && add_memset && instantiate && instantiate_params && set_copy &&
           set_memset && set_node && update && node_copy && launch;
  }
};

Graphs GetGraphs() {
  Graphs g;
  g.create = Get<decltype(g.create)>("cuGraphCreate");
  g.add_copy = Get<decltype(g.add_copy)>("cuGraphAddMemcpyNode");
  g.add_memset = Get<decltype(g.add_memset)>("cuGraphAddMemsetNode");
  g.instantiate = Get<decltype(g.instantiate)>("cuGraphInstantiateWithFlags");
  g.instantiate_params = Get<decltype(g.instantiate_params)>("cuGraphInstantiateWithParams");
  g.set_copy = Get<decltype(g.set_copy)>("cuGraphExecMemcpyNodeSetParams");
  g.set_memset = Get<decltype(g.set_memset)>("cuGraphExecMemsetNodeSetParams");
  g.set_node = Get<decltype(g.set_node)>("cuGraphExecNodeSetParams");
  g.update = Get<decltype(g.update)>("cuGraphExecUpdate");
  g.node_copy = Get<decltype(g.node_copy)>("cuGraphMemcpyNodeGetParams");
  g.launch = Get<decltype(g.launch)>("cuGraphLaunch");
  return g;
}

// Four pairs of 64-byte host buffers; a copy node copies one pair's source into its destination.
constexpr int kPairs = 4;
unsigned char g_src[kPairs][64], g_dst[kPairs][64];

CUDA_MEMCPY3D PairCopy(int k, size_t width = 64) {
  CUDA_MEMCPY3D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = g_src[k];
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = g_dst[k];
  c.srcPitch = c.dstPitch = 64;
  c.WidthInBytes = width;
  c.Height = c.Depth = 1;
  return c;
}

// Launches `exec` with every destination cleared: the pairs whose destination then holds the
// source ("-" for none).
std::string PairsCopied(const Graphs& g, CUgraphExec exec) {
  for (int k = 0; k < kPairs; ++k) {
    for (int i = 0; i < 64; ++i) g_src[k][i] = static_cast<unsigned char>(k * 64 + i + 1);
    memset(g_dst[k], 0, 64);
  }
  if (g.launch(exec, kBlocking) != CUDA_SUCCESS) return "launch failed";
  std::string out;
  for (int k = 0; k < kPairs; ++k)
    if (memcmp(g_src[k], g_dst[k], 64) == 0) out += std::to_string(k);
  return out.empty() ? "-" : out;
}

// A graph of one copy node (pair k) and, with `memset_into`, a 1-byte memset node after it.
CUgraph CopyGraph(const Graphs& g, int k, CUgraphNode* node, unsigned char* memset_into = nullptr,
                  unsigned value = 0) {
  CUgraph graph = nullptr;
  const CUDA_MEMCPY3D c = PairCopy(k);
  if (g.create(&graph, 0) != CUDA_SUCCESS || g.add_copy(node, graph, nullptr, 0, &c, nullptr))
    return nullptr;
  if (memset_into) {
    CUDA_MEMSET_NODE_PARAMS m;
    memset(&m, 0, sizeof(m));
    m.dst = reinterpret_cast<CUdeviceptr>(memset_into);
    m.value = value;
    m.elementSize = 1;
    m.width = 16;
    m.height = 1;
    CUgraphNode set_node = nullptr;
    if (g.add_memset(&set_node, graph, nullptr, 0, &m, nullptr) != CUDA_SUCCESS) return nullptr;
  }
  return graph;
}

// exec_memcpy_update_ignored_after_launch: "update rc,pairs the next launch copies" for updates
// of the copy node before the first launch and after it (both entry points), and the rc of a
// zero-length update after it.
int MemcpyUpdateAfterLaunch() {
  const Graphs g = GetGraphs();
  if (!g.Complete()) return 1;
  CUgraphNode node = nullptr;
  CUgraphExec exec = nullptr;
  CUgraph graph = CopyGraph(g, 0, &node);
  if (!graph || g.instantiate(&exec, graph, 0) != CUDA_SUCCESS) return 1;
  CUDA_MEMCPY3D c = PairCopy(1);
  CUresult rc = g.set_copy(exec, node, &c, nullptr);
  printf("memcpy_update_before_launch=%d,%s", rc, PairsCopied(g, exec).c_str());
  c = PairCopy(2);
  rc = g.set_copy(exec, node, &c, nullptr);
  printf(" memcpy_update_after_launch=%d,%s", rc, PairsCopied(g, exec).c_str());
  CUgraphNodeParams p;
  memset(&p, 0, sizeof(p));
  p.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  p.memcpy.copyParams = PairCopy(3);
  rc = g.set_node(exec, node, &p);
  printf(" memcpy_node_update_after_launch=%d,%s", rc, PairsCopied(g, exec).c_str());
  c = PairCopy(0, 0);
  printf(" memcpy_zero_length_update=%d\n", g.set_copy(exec, node, &c, nullptr));
  return 0;
}

// whole_graph_update_keeps_memcpy_buffers: "update rc,result,pairs the next launch copies,the
// new memset's first byte" for an identical topology (executable graphs instantiated both
// ways), "rc,result,pairs" for a changed one, and which pair the update's own graph copies
// afterwards.
int WholeGraphUpdate() {
  const Graphs g = GetGraphs();
  if (!g.Complete()) return 1;
  static unsigned char old_set[16], new_set[16];
  auto updated = [&](bool with_params, int from, int to) {
    CUgraphNode node = nullptr, other = nullptr;
    CUgraphExec exec = nullptr;
    CUgraph first = CopyGraph(g, from, &node, old_set, 0x11);
    CUgraph second = CopyGraph(g, to, &other, new_set, 0x22);
    CUDA_GRAPH_INSTANTIATE_PARAMS ip;
    memset(&ip, 0, sizeof(ip));
    if (!first || !second ||
        (with_params ? g.instantiate_params(&exec, first, &ip) : g.instantiate(&exec, first, 0)))
      return std::string("instantiate failed");
    memset(new_set, 0, sizeof(new_set));
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof(info));
    CUresult rc = g.update(exec, second, &info);
    const std::string pairs = PairsCopied(g, exec);
    CUDA_MEMCPY3D own;
    g.node_copy(other, &own);
    return std::to_string(rc) + "," + std::to_string(info.result) + "," + pairs + "," +
           std::to_string(new_set[0]) + "," + (own.srcHost == g_src[to] ? "own" : "other");
  };
  printf("whole_update=%s whole_update_with_params=%s", updated(false, 0, 1).c_str(),
         updated(true, 2, 3).c_str());
  // One copy node, updated with a graph of a copy and a memset node.
  CUgraphNode node = nullptr, other = nullptr;
  CUgraphExec exec = nullptr;
  CUgraph first = CopyGraph(g, 0, &node);
  CUgraph bigger = CopyGraph(g, 1, &other, new_set, 0x33);
  if (!first || !bigger || g.instantiate(&exec, first, 0) != CUDA_SUCCESS) return 1;
  CUgraphExecUpdateResultInfo info;
  memset(&info, 0, sizeof(info));
  CUresult rc = g.update(exec, bigger, &info);
  printf(" whole_update_topology_changed=%d,%d,%s\n", rc, info.result, PairsCopied(g, exec).c_str());
  return 0;
}

// exec_memset_update_keeps_old_value: the first element a memset node writes after an update to
// another buffer and value, per element size and entry point.
int MemsetUpdateValue() {
  const Graphs g = GetGraphs();
  if (!g.Complete()) return 1;
  static unsigned char before[64], after[64];
  auto updated = [&](unsigned size, unsigned old_value, unsigned new_value, bool generic) {
    CUgraph graph = nullptr;
    CUgraphNode node = nullptr;
    CUgraphExec exec = nullptr;
    CUDA_MEMSET_NODE_PARAMS m;
    memset(&m, 0, sizeof(m));
    m.dst = reinterpret_cast<CUdeviceptr>(before);
    m.value = old_value;
    m.elementSize = size;
    m.width = 16 / size;
    m.height = 1;
    if (g.create(&graph, 0) != CUDA_SUCCESS ||
        g.add_memset(&node, graph, nullptr, 0, &m, nullptr) != CUDA_SUCCESS ||
        g.instantiate(&exec, graph, 0) != CUDA_SUCCESS)
      return std::string("instantiate failed");
    m.dst = reinterpret_cast<CUdeviceptr>(after);
    m.value = new_value;
    CUresult rc;
    if (generic) {
      CUgraphNodeParams p;
      memset(&p, 0, sizeof(p));
      p.type = CU_GRAPH_NODE_TYPE_MEMSET;
      p.memset.dst = m.dst;
      p.memset.value = m.value;
      p.memset.elementSize = m.elementSize;
      p.memset.width = m.width;
      p.memset.height = 1;
      rc = g.set_node(exec, node, &p);
    } else {
      rc = g.set_memset(exec, node, &m, nullptr);
    }
    memset(before, 0, sizeof(before));
    memset(after, 0, sizeof(after));
    if (g.launch(exec, kBlocking) != CUDA_SUCCESS) return std::string("launch failed");
    unsigned first = 0;
    memcpy(&first, after, size);
    char out[64];
    snprintf(out, sizeof(out), "%d,%x,%d", rc, first, before[0]);
    return std::string(out);
  };
  printf("memset_update_4=%s memset_update_2=%s memset_update_1=%s memset_node_update_4=%s\n",
         updated(4, 0x11111111, 0x22222222, false).c_str(), updated(2, 0x1111, 0x2222, false).c_str(),
         updated(1, 0x11, 0x22, false).c_str(), updated(4, 0x11111111, 0x33333333, true).c_str());
  return 0;
}

const Probe kProbes[] = {
    {"exec_memcpy_update_ignored_after_launch", MemcpyUpdateAfterLaunch},
    {"whole_graph_update_keeps_memcpy_buffers", WholeGraphUpdate},
    {"exec_memset_update_keeps_old_value", MemsetUpdateValue},
};

}  // namespace

extern const ProbeArea kGraphUpdatesProbes = Probes("graph_updates", kProbes);

}  // namespace probes
