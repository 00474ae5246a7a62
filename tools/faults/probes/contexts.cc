// Probes of the context faults (catalogue/contexts.cc).
#include <sys/mman.h>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

// ctx_destroy_keeps_context_with_pins: "rc,destroys that reached the driver,the current context
// afterwards" of contexts holding a pinned block, one freed first, none, and a registration.
int DestroyWithPins() {
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto set_current = Get<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  auto get_current = Get<CUresult (*)(CUcontext*)>("cuCtxGetCurrent");
  auto ctx_destroy = Get<CUresult (*)(CUcontext)>("cuCtxDestroy");
  auto destroys = static_cast<int*>(FakeSymbol("fake_ctx_destroys"));
  if (!alloc || !free_host || !reg || !unreg || !set_current || !get_current || !ctx_destroy ||
      !destroys)
    return 1;
  auto destroyed = [&](CUcontext c, bool pinned, bool freed_first) {
    set_current(c);
    void* p = nullptr;
    if (pinned && alloc(&p, 64, 0) != CUDA_SUCCESS) return std::string("alloc failed");
    if (pinned && freed_first) free_host(p);
    const int n = *destroys;
    CUresult rc = ctx_destroy(c);
    CUcontext now = reinterpret_cast<CUcontext>(0x1);
    get_current(&now);
    if (pinned && !freed_first) free_host(p);
    set_current(nullptr);
    return std::to_string(rc) + "," + std::to_string(*destroys - n) + "," + (now ? "current" : "none");
  };
  printf("destroy_with_pins=%s", destroyed(reinterpret_cast<CUcontext>(0x2345), true, false).c_str());
  printf(" destroy_pins_freed=%s", destroyed(reinterpret_cast<CUcontext>(0x3456), true, true).c_str());
  printf(" destroy_without_pins=%s", destroyed(reinterpret_cast<CUcontext>(0x4567), false, false).c_str());
  // A registration in the context, still live at its destroy.
  void* page = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return 1;
  set_current(kContextB);
  reg(page, kPage, 0);
  int n = *destroys;
  CUresult r = ctx_destroy(kContextB);
  printf(" destroy_with_registration=%d,%d\n", r, *destroys - n);
  unreg(page);
  set_current(nullptr);
  return 0;
}

// rejected_ctx_flags_applied_anyway: "rc,flags read back" after each call.
int RejectedFlags() {
  auto primary_set = Get<CUresult (*)(CUdevice, unsigned)>("cuDevicePrimaryCtxSetFlags");
  auto primary_state = Get<CUresult (*)(CUdevice, unsigned*, int*)>("cuDevicePrimaryCtxGetState");
  auto ctx_set_flags = Get<CUresult (*)(unsigned)>("cuCtxSetFlags");
  auto ctx_get_flags = Get<CUresult (*)(unsigned*)>("cuCtxGetFlags");
  if (!primary_set || !primary_state || !ctx_set_flags || !ctx_get_flags) return 1;
  auto primary_flags = [&](unsigned f) {
    CUresult rc = primary_set(0, f);
    unsigned now = 0;
    int active = 0;
    primary_state(0, &now, &active);
    return std::to_string(rc) + "," + std::to_string(now);
  };
  auto ctx_flags = [&](unsigned f) {
    CUresult rc = ctx_set_flags(f);
    unsigned now = 0;
    ctx_get_flags(&now);
    return std::to_string(rc) + "," + std::to_string(now);
  };
  printf("primary_flags_rejected=%s", primary_flags(0x100 | CU_CTX_SCHED_BLOCKING_SYNC).c_str());
  printf(" primary_flags_valid=%s", primary_flags(CU_CTX_SCHED_YIELD).c_str());
  printf(" primary_flags_rejected_after_valid=%s", primary_flags(0x200 | CU_CTX_SCHED_SPIN).c_str());
  printf(" ctx_flags_rejected=%s", ctx_flags(0x100 | CU_CTX_SYNC_MEMOPS).c_str());
  printf(" ctx_flags_valid=%s\n", ctx_flags(CU_CTX_SCHED_SPIN).c_str());
  primary_set(0, 0);
  ctx_set_flags(0);
  return 0;
}

const Probe kProbes[] = {
    {"ctx_destroy_keeps_context_with_pins", DestroyWithPins},
    {"rejected_ctx_flags_applied_anyway", RejectedFlags},
};

}  // namespace

extern const ProbeArea kContextsProbes = Probes("contexts", kProbes);

}  // namespace probes
