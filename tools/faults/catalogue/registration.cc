// Registration of host memory (cuMemHostRegister, cuMemHostUnregister).
#include <pthread.h>

#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// R30/R31: overlapping registrations succeed instead of HOST_MEMORY_ALREADY_REGISTERED.
void InstallRegisterOverlapAccepted() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    return r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED ? CUDA_SUCCESS : r;
  });
}

// R30: an overlap is reported as INVALID_VALUE (swapped error code).
void InstallRegisterOverlapWrongCode() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    return r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED ? CUDA_ERROR_INVALID_VALUE : r;
  });
}

// R26: unknown registration flag bits are masked off instead of rejected.
void InstallRegisterAcceptsUnknownFlags() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    return real(p, n, f & 0xfu);
  });
}

// R39: registering NULL or size 0 succeeds (and registers nothing).
void InstallRegisterAcceptsEmpty() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    return p == nullptr || n == 0 ? CUDA_SUCCESS : real(p, n, f);
  });
}

// R29: the last page of a multi-page registration is not pinned (range rounded down).
void InstallRegisterDropsLastPage() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    const uintptr_t page = 4096, start = reinterpret_cast<uintptr_t>(p);
    const uintptr_t end = start + n, last_page = (end - 1) & ~(page - 1);
    if (n == 0 || last_page <= start) return real(p, n, f);
    return real(p, last_page - start, f);
  });
}

// R42: the ReadOnly flag is ignored: the range is pinned writable for the device.
void InstallRegisterIgnoresReadOnly() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    return real(p, n, f & ~static_cast<unsigned>(CU_MEMHOSTREGISTER_READ_ONLY));
  });
}

// R40: registering device memory (or cuMemHostAlloc memory) reports ALREADY_REGISTERED instead
// of INVALID_VALUE. For cuMemHostAlloc memory 712 is in R41's documented set (the conforming
// variation register_pinned_already_registered), so the device-memory case (R40) is the catch.
void InstallRegisterPinnedWrongCode() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    return r == CUDA_ERROR_INVALID_VALUE && p && n ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED : r;
  });
}

// R26: cuMemHostRegister reports success but registers nothing (a lost registration).
void InstallRegisterLost() {
  HookMemHostRegister([](Real_MemHostRegister, void* p, size_t n, unsigned) -> CUresult {
    return p && n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

// R33: cuMemHostUnregister reports success but leaves the range pinned and mapped.
void InstallUnregisterLost() {
  HookMemHostUnregister([](Real_MemHostUnregister, void*) -> CUresult { return CUDA_SUCCESS; });
}

// R35/R36: unregistering memory that is not registered reports INVALID_VALUE instead of
// HOST_MEMORY_NOT_REGISTERED.
void InstallUnregisterWrongCode() {
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    CUresult r = real(p);
    return r == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED ? CUDA_ERROR_INVALID_VALUE : r;
  });
}

// R34: an interior pointer (or cuMemHostAlloc memory) is reported NOT_REGISTERED instead of
// INVALID_VALUE. For cuMemHostAlloc memory 713 is in R38's documented set (the conforming
// variation unregister_pinned_not_registered), so the interior pointer (R34) is the catch.
void InstallUnregisterInteriorWrongCode() {
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    CUresult r = real(p);
    return r == CUDA_ERROR_INVALID_VALUE && p ? CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED : r;
  });
}

// R37: cuMemHostUnregister(NULL) succeeds.
void InstallUnregisterNullSucceeds() {
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    return p ? real(p) : CUDA_SUCCESS;
  });
}

// R132: cuMemHostUnregister of a registration's start while a context other than the
// one that was current at its cuMemHostRegister is current reports success but unregisters
// nothing: the range stays page-locked, pointer attributes still know it, and the registering
// context's own unregister then succeeds too (a leak of the pins where nobody does that).
// Unregisters in the registering context, and registrations made with no context current, are
// right.
void InstallUnregisterElsewhereKeepsRegistration() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    if (r == CUDA_SUCCESS && p && n) AddOwned(p, n, f, kTagRegistered);
    return r;
  });
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    OwnedBlock b;
    const CUcontext now = CurrentContext();
    if (p && FindOwned(p, &b) && b.tag == kTagRegistered &&
        b.start == reinterpret_cast<uintptr_t>(p) && b.ctx && now && now != b.ctx)
      return CUDA_SUCCESS;
    CUresult r = real(p);
    if (r == CUDA_SUCCESS && p) DropOwned(p);
    return r;
  });
}

// R13: after cuDevicePrimaryCtxReset (cudaDeviceReset), the registrations the reset released are
// still in the driver's table: registering any byte of one again fails with
// HOST_MEMORY_ALREADY_REGISTERED.
void InstallRegistrationsSurviveReset() {
  TrackRegistrations();
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    const uintptr_t s = reinterpret_cast<uintptr_t>(p);
    bool stale = false;
    pthread_mutex_lock(&g_blocks_mu);
    for (const Block& x : g_blocks)
      stale = stale || (x.start != x.end && !x.live && x.id == 1 && s < x.end && x.start < s + n);
    pthread_mutex_unlock(&g_blocks_mu);
    if (p && n && stale) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    return TrackRegister(real, p, n, f);
  });
  HookDevicePrimaryCtxReset([](Real_DevicePrimaryCtxReset real, CUdevice d) -> CUresult {
    CUresult r = real(d);
    if (r != CUDA_SUCCESS) return r;
    pthread_mutex_lock(&g_blocks_mu);
    for (Block& x : g_blocks)
      if (x.start != x.end && x.live && x.tag == kTagRegistered) {
        x.live = false;
        x.id = 1;  // released by the reset, not unregistered
      }
    pthread_mutex_unlock(&g_blocks_mu);
    return r;
  });
}

// R26: from the 33rd successful registration of the process on, cuMemHostRegister reports
// success but pins nothing (a fixed-size registration table that overflows silently).
void InstallRegistrationsPast32Lost() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    if (p && n && __atomic_load_n(&g_calls, __ATOMIC_RELAXED) >= 32) return CUDA_SUCCESS;
    CUresult r = real(p, n, f);
    if (r == CUDA_SUCCESS) __atomic_add_fetch(&g_calls, 1u, __ATOMIC_RELAXED);
    return r;
  });
}

// R33: unregistering a range also drops every live registration that shares a page with it (the
// per-page pin record of the shared page is released with the first range on it, and its other
// owner with it): that neighbour is no longer registered, and its own cuMemHostUnregister then
// fails with HOST_MEMORY_NOT_REGISTERED. Registrations that share no page are unaffected.
void InstallUnregisterDropsPageSharingNeighbour() {
  TrackRegistrations();
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    Block gone;
    const bool known =
        FindBlock(p, kTagRegistered, &gone) && gone.start == reinterpret_cast<uintptr_t>(p);
    CUresult r = TrackUnregister(real, p);
    if (r != CUDA_SUCCESS || !known) return r;
    uintptr_t neighbours[8];
    size_t count = 0;
    pthread_mutex_lock(&g_blocks_mu);
    for (const Block& b : g_blocks)
      if (count < 8 && b.start != b.end && b.live && b.tag == kTagRegistered && SharePage(gone, b))
        neighbours[count++] = b.start;
    pthread_mutex_unlock(&g_blocks_mu);
    for (size_t i = 0; i < count; ++i)
      TrackUnregister(real, reinterpret_cast<void*>(neighbours[i]));
    return r;
  });
}

// R26: registering a range that starts where an earlier registration of the process
// started, after that one was unregistered, reports success but pins nothing (a stale entry of a
// per-address cache short-circuits the pin): the range stays pageable (pointer attributes do
// not know it, it has no device pointer) and its unregister fails with NOT_REGISTERED. The
// first registration at each address is right.
void InstallReregisteredRangeNotPinned() {
  TrackRegistrations();
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    Block old, live;
    if (p && n && (f & ~0xfu) == 0 && FindDeadAt(p, &old) && old.tag == kTagRegistered &&
        !FindBlock(p, 0, &live))
      return CUDA_SUCCESS;
    return TrackRegister(real, p, n, f);
  });
}

// R42: cuMemHostRegister refuses the ReadOnly flag with NOT_SUPPORTED although the device
// reports HostRegisterReadOnlySupported = 1 (the support check reads another capability than
// the attribute does); registrations without ReadOnly, and undefined flag bits, are answered
// as before.
void InstallReadOnlyRegisterRefusedDespiteAttribute() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    constexpr unsigned kKnown = 0xfu;  // PORTABLE|DEVICEMAP|IOMEMORY|READ_ONLY
    if (p && n && (f & CU_MEMHOSTREGISTER_READ_ONLY) && !(f & ~kKnown))
      return CUDA_ERROR_NOT_SUPPORTED;
    return real(p, n, f);
  });
}

// C23: cuMemHostRegister of more than 4 GiB pins only the first 4 GiB (a 32-bit length in the
// pinning loop that saturates): the call succeeds, the bytes past 4 GiB stay pageable, unknown to
// pointer queries and unmapped for the device, and the unregister releases what was pinned.
// Registrations of up to 4 GiB are right.
void InstallLargeRegistrationPinsFirst4Gib() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    constexpr size_t k4GiB = size_t{4} << 30;
    return real(p, p && n > k4GiB ? k4GiB : n, f);
  });
}

const Fault kFaults[] = {
    PL_FAULT(36, "register_overlap_accepted", "R30", "hostregister", "error",
             "baseline", "catalogue-1",
             "Overlapping registrations succeed instead of ALREADY_REGISTERED.",
             InstallRegisterOverlapAccepted),
    PL_FAULT(37, "register_overlap_wrong_code", "R30", "hostregister", "error",
             "baseline", "catalogue-1",
             "An overlapping registration fails with INVALID_VALUE, not ALREADY_REGISTERED.",
             InstallRegisterOverlapWrongCode),
    PL_FAULT(38, "register_accepts_unknown_flags", "R26", "hostregister", "error",
             "baseline", "catalogue-1",
             "cuMemHostRegister masks off unknown flag bits instead of rejecting them.",
             InstallRegisterAcceptsUnknownFlags),
    PL_FAULT(39, "register_accepts_empty", "R39", "hostregister", "error",
             "baseline", "catalogue-1",
             "Registering NULL or size 0 succeeds.", InstallRegisterAcceptsEmpty),
    PL_FAULT(40, "register_drops_last_page", "R29", "hostregister", "data",
             "baseline", "catalogue-1",
             "The last page of a multi-page registration is not pinned.",
             InstallRegisterDropsLastPage),
    PL_FAULT(41, "register_ignores_read_only", "R42", "hostregister", "flag",
             "baseline", "catalogue-1",
             "The ReadOnly registration flag is dropped (pinned writable).",
             InstallRegisterIgnoresReadOnly),
    PL_FAULT(42, "register_pinned_wrong_code", "R40", "hostregister", "error",
             "baseline", "catalogue-1",
             "Registering device (or pinned) memory fails with ALREADY_REGISTERED, not "
             "INVALID_VALUE.", InstallRegisterPinnedWrongCode),
    PL_FAULT(43, "register_lost", "R26", "hostregister", "resource", "baseline", "catalogue-1",
             "cuMemHostRegister reports success but registers nothing.", InstallRegisterLost),
    PL_FAULT(44, "unregister_lost", "R33", "hostregister", "resource", "baseline", "catalogue-1",
             "cuMemHostUnregister reports success but leaves the range pinned.",
             InstallUnregisterLost),
    PL_FAULT(45, "unregister_wrong_code", "R35", "hostregister", "error", "baseline", "catalogue-1",
             "Unregistering unregistered memory fails with INVALID_VALUE, not NOT_REGISTERED.",
             InstallUnregisterWrongCode),
    PL_FAULT(46, "unregister_interior_wrong_code", "R34", "hostregister", "error",
             "baseline", "catalogue-1",
             "Unregistering an interior pointer or cuMemHostAlloc memory fails with "
             "NOT_REGISTERED, not INVALID_VALUE.", InstallUnregisterInteriorWrongCode),
    PL_FAULT(47, "unregister_null_succeeds", "R37", "hostregister", "error",
             "baseline", "catalogue-1",
             "cuMemHostUnregister(NULL) succeeds.", InstallUnregisterNullSucceeds),
    PL_FAULT(114, "unregister_elsewhere_keeps_registration", "R132", "driverapi", "resource",
             "variant", "blind-11",
             "cuMemHostUnregister with a context other than the registering one current reports "
             "success but leaves the range registered.",
             InstallUnregisterElsewhereKeepsRegistration),
    PL_FAULT(123, "registrations_survive_reset", "R13", "driverapi", "error", "stateful", "shapes",
             "After a device reset, registering a range the reset released fails with "
             "ALREADY_REGISTERED.", InstallRegistrationsSurviveReset),
    PL_FAULT(125, "registrations_past_32_lost", "R26", "hostregister", "resource",
             "stateful", "shapes",
             "From the 33rd registration of a process on, cuMemHostRegister succeeds but pins "
             "nothing.", InstallRegistrationsPast32Lost),
    PL_FAULT(126, "unregister_drops_page_sharing_neighbour", "R33", "hostregister", "resource",
             "stateful", "blind-9",
             "Unregistering a range also unregisters a live registration that shares a page with "
             "it; that one's own unregister then fails with NOT_REGISTERED.",
             InstallUnregisterDropsPageSharingNeighbour),
    PL_FAULT(128, "reregistered_range_not_pinned", "R26", "hostregister", "resource",
             "stateful", "blind-10",
             "Registering a range again at the start of an unregistered registration reports "
             "success but pins nothing.", InstallReregisteredRangeNotPinned),
    PL_FAULT(157, "read_only_register_refused_despite_attribute", "R42", "hostregister", "error",
             "crossapi", "blind-9",
             "cuMemHostRegister refuses the ReadOnly flag with NOT_SUPPORTED although "
             "HostRegisterReadOnlySupported is 1.", InstallReadOnlyRegisterRefusedDespiteAttribute),
    PL_FAULT(175, "large_registration_pins_first_4gib", "C23", "stress", "resource", "size",
             "blind-12",
             "cuMemHostRegister of more than 4 GiB succeeds but pins only the first 4 GiB.",
             InstallLargeRegistrationPinsFirst4Gib),
};

}  // namespace

extern const Area kRegistrationArea = FaultArea("registration", kFaults);

}  // namespace pagelock_faults
