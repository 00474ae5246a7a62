// Contexts and their flags (cuDevicePrimaryCtxSetFlags, cuCtxGetFlags / cuCtxSetFlags,
// cuCtxDestroy).
#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// R62/R68: the scheduling flags of the primary context are dropped when set.
void InstallPrimaryCtxDropsSchedFlags() {
  HookDevicePrimaryCtxSetFlags([](Real_DevicePrimaryCtxSetFlags real, CUdevice d,
                                  unsigned f) -> CUresult {
    return real(d, f & ~static_cast<unsigned>(CU_CTX_SCHED_MASK));
  });
  HookCtxSetFlags([](Real_CtxSetFlags real, unsigned f) -> CUresult {
    return real(f & ~static_cast<unsigned>(CU_CTX_SCHED_MASK));
  });
}

// R64: unknown primary-context flag bits are accepted (masked off) instead of INVALID_VALUE.
void InstallPrimaryCtxAcceptsUnknownFlags() {
  HookDevicePrimaryCtxSetFlags([](Real_DevicePrimaryCtxSetFlags real, CUdevice d,
                                  unsigned f) -> CUresult { return real(d, f & 0xffu); });
  HookCtxSetFlags([](Real_CtxSetFlags real, unsigned f) -> CUresult { return real(f & 0xffu); });
}

// R65/R62: the flags read back lose their scheduling bits.
void InstallFlagsReadBackWrong() {
  HookDevicePrimaryCtxGetState([](Real_DevicePrimaryCtxGetState real, CUdevice d, unsigned* f,
                                  int* active) -> CUresult {
    CUresult r = real(d, f, active);
    if (r == CUDA_SUCCESS && f) *f &= ~static_cast<unsigned>(CU_CTX_SCHED_MASK);
    return r;
  });
  HookCtxGetFlags([](Real_CtxGetFlags real, unsigned* f) -> CUresult {
    CUresult r = real(f);
    if (r == CUDA_SUCCESS && f) *f &= ~static_cast<unsigned>(CU_CTX_SCHED_MASK);
    return r;
  });
}

// R62: the flags read back carry BlockingSync although it was never set (an invented flag).
void InstallFlagsInventBlockingSync() {
  HookDevicePrimaryCtxGetState([](Real_DevicePrimaryCtxGetState real, CUdevice d, unsigned* f,
                                  int* active) -> CUresult {
    CUresult r = real(d, f, active);
    if (r == CUDA_SUCCESS && f) *f |= CU_CTX_SCHED_BLOCKING_SYNC;
    return r;
  });
  HookCtxGetFlags([](Real_CtxGetFlags real, unsigned* f) -> CUresult {
    CUresult r = real(f);
    if (r == CUDA_SUCCESS && f) *f |= CU_CTX_SCHED_BLOCKING_SYNC;
    return r;
  });
}

// R59/R68: setting the flags of an active primary context fails (the pre-11 behaviour).
void InstallPrimaryCtxSetFlagsWhileActiveFails() {
  HookDevicePrimaryCtxSetFlags([](Real_DevicePrimaryCtxSetFlags real, CUdevice d,
                                  unsigned f) -> CUresult {
    static const auto state = Real<Real_DevicePrimaryCtxGetState>("cuDevicePrimaryCtxGetState");
    unsigned flags = 0;
    int active = 0;
    if (state && state(d, &flags, &active) == CUDA_SUCCESS && active)
      return CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE;
    return real(d, f);
  });
}

// R13: cuCtxDestroy of a context that still holds pinned memory (cuMemHostAlloc,
// cuMemAllocHost or cuMemHostRegister made while it was current, not yet freed or unregistered)
// reports success but leaves the context alive (the pinned blocks hold a reference to it): it
// is popped from the calling thread if current, and its pinned memory stays pinned and known.
// Contexts holding no pinned memory are destroyed.
void InstallCtxDestroyKeepsContextWithPins() {
  TrackOwnedAllocations();
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    if (r == CUDA_SUCCESS && p && n) AddOwned(p, n, f, kTagRegistered);
    return r;
  });
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    CUresult r = real(p);
    if (r == CUDA_SUCCESS && p) DropOwned(p);
    return r;
  });
  HookCtxDestroy([](Real_CtxDestroy real, CUcontext c) -> CUresult {
    static const auto pop = Real<CUresult(CUDAAPI*)(CUcontext*)>("cuCtxPopCurrent");
    if (!c || !pop || !ContextHoldsPins(c)) return real(c);
    CUcontext popped = nullptr;
    if (CurrentContext() == c) pop(&popped);
    return CUDA_SUCCESS;
  });
}

// R64: cuDevicePrimaryCtxSetFlags (and cuCtxSetFlags) given flag bits outside
// CU_CTX_FLAGS_MASK fails with INVALID_VALUE, as documented, but only after applying the valid
// bits it was given: the context's flags are changed by a call that was rejected. Calls with
// valid flags only are right.
constexpr unsigned kCtxFlagsMask = CU_CTX_FLAGS_MASK;
void InstallRejectedCtxFlagsAppliedAnyway() {
  HookDevicePrimaryCtxSetFlags([](Real_DevicePrimaryCtxSetFlags real, CUdevice d,
                                  unsigned f) -> CUresult {
    if (!(f & ~kCtxFlagsMask)) return real(d, f);
    CUresult r = real(d, f & kCtxFlagsMask);
    return r == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : r;
  });
  HookCtxSetFlags([](Real_CtxSetFlags real, unsigned f) -> CUresult {
    if (!(f & ~kCtxFlagsMask)) return real(f);
    CUresult r = real(f & kCtxFlagsMask);
    return r == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : r;
  });
}

// R150: cuCtxGetFlags leaves out CU_CTX_SYNC_MEMOPS although it is set (the current context's
// cached flags word is refreshed for the scheduling bits only); cuDevicePrimaryCtxGetState
// reports it, and the scheduling bits read back right.
void InstallCtxGetFlagsDropsSyncMemops() {
  HookCtxGetFlags([](Real_CtxGetFlags real, unsigned* f) -> CUresult {
    CUresult r = real(f);
    if (r == CUDA_SUCCESS && f) *f &= ~static_cast<unsigned>(CU_CTX_SYNC_MEMOPS);
    return r;
  });
}

const Fault kFaults[] = {
    PL_FAULT(58, "ctxflags_drop_sched", "R62", "deviceflags", "flag", "baseline", "catalogue-1",
             "Setting primary-context flags drops the scheduling bits.",
             InstallPrimaryCtxDropsSchedFlags),
    PL_FAULT(59, "ctxflags_accept_unknown", "R64", "deviceflags", "error",
             "baseline", "catalogue-1",
             "Unknown primary-context flag bits are masked off instead of rejected.",
             InstallPrimaryCtxAcceptsUnknownFlags),
    PL_FAULT(60, "ctxflags_read_back_wrong", "R65", "deviceflags", "flag",
             "baseline", "catalogue-1",
             "Context flags read back without their scheduling bits.", InstallFlagsReadBackWrong),
    PL_FAULT(61, "ctxflags_invent_blocking_sync", "R62", "deviceflags", "flag",
             "baseline", "catalogue-1",
             "Context flags read back with BlockingSync although it was never set.",
             InstallFlagsInventBlockingSync),
    PL_FAULT(62, "ctxflags_set_while_active_fails", "R68", "deviceflags", "error",
             "baseline", "catalogue-1",
             "Setting the flags of an active primary context fails with PRIMARY_CONTEXT_ACTIVE.",
             InstallPrimaryCtxSetFlagsWhileActiveFails),
    PL_FAULT(129, "ctx_destroy_keeps_context_with_pins", "R13", "driverapi", "resource",
             "stateful", "blind-10",
             "cuCtxDestroy of a context that still holds pinned memory reports success but keeps "
             "the context and its pinned memory alive.", InstallCtxDestroyKeepsContextWithPins),
    PL_FAULT(132, "rejected_ctx_flags_applied_anyway", "R64", "deviceflags", "error",
             "stateful", "blind-11",
             "cuDevicePrimaryCtxSetFlags or cuCtxSetFlags with unknown flag bits fails with "
             "INVALID_VALUE but applies the valid bits it was given.",
             InstallRejectedCtxFlagsAppliedAnyway),
    PL_FAULT(155, "ctx_get_flags_drops_sync_memops", "R150", "deviceflags", "flag",
             "crossapi", "blind-9",
             "cuCtxGetFlags leaves out CU_CTX_SYNC_MEMOPS while cuDevicePrimaryCtxGetState reports "
             "it.", InstallCtxGetFlagsDropsSyncMemops),
};

}  // namespace

extern const Area kContextsArea = FaultArea("contexts", kFaults);

}  // namespace pagelock_faults
