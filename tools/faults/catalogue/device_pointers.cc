// Device pointers of page-locked host memory (cuMemHostGetDevicePointer).
#include <pthread.h>

#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// R51/R53: the device alias is off by one byte.
void InstallDevicePointerOffByOne() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    if (r == CUDA_SUCCESS && d) *d += 1;
    return r;
  });
}

// R53: interior pointers map to the alias of the base, not base plus offset.
void InstallDevicePointerIgnoresOffset() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    if (r != CUDA_SUCCESS || !d) return r;
    static const auto attr = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
    CUdeviceptr base = 0, dbase = 0;
    if (attr && attr(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, Ptr(p)) == CUDA_SUCCESS &&
        base && base != Ptr(p) && real(&dbase, reinterpret_cast<void*>(base), f) == CUDA_SUCCESS)
      *d = dbase;
    return r;
  });
}

// R50: non-zero flags are accepted instead of INVALID_VALUE.
void InstallDevicePointerAcceptsFlags() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned) -> CUresult { return real(d, p, 0); });
}

// R52: one past the end of a pinned block still gets a device pointer.
void InstallDevicePointerOnePastTheEnd() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    if (r == CUDA_ERROR_INVALID_VALUE && d && p &&
        real(d, static_cast<char*>(p) - 1, f) == CUDA_SUCCESS) {
      *d += 1;
      return CUDA_SUCCESS;
    }
    return r;
  });
}

// R52: unpinned memory gets a device pointer (its own address) instead of INVALID_VALUE.
void InstallDevicePointerForUnpinned() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    if (r == CUDA_ERROR_INVALID_VALUE && d && p && f == 0) {
      *d = Ptr(p);
      return CUDA_SUCCESS;
    }
    return r;
  });
}

// R53: cuMemHostGetDevicePointer of a byte 2 MiB or more into a registration
// (cuMemHostRegister) answers the alias of the same offset modulo 2 MiB (the registration is
// mapped in 2 MiB chunks and the interior lookup adds the offset within its chunk to the first
// chunk's alias): device accesses through it land in the registration's first 2 MiB. Bytes in
// a registration's first 2 MiB, and every byte of allocated pinned memory, are right.
constexpr uintptr_t k2MiB = uintptr_t{2} << 20;
void InstallRegisteredDevptrOffsetWrapsAt2MiB() {
  TrackRegistrations();
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    Block b;
    if (r == CUDA_SUCCESS && d && FindBlock(p, kTagRegistered, &b)) {
      const uintptr_t offset = reinterpret_cast<uintptr_t>(p) - b.start;
      if (offset >= k2MiB) *d -= offset / k2MiB * k2MiB;
    }
    return r;
  });
}

// R15: the device pointer of a write-combined allocation is one page past its alias (other
// allocations get the right one).
void InstallWriteCombinedDevicePointerOffByPage() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    if (r == CUDA_SUCCESS && d && IsWriteCombined(p)) *d += kPage;
    return r;
  });
}

// R110: the device pointer of a registration whose start is not page-aligned is short by the
// start's offset into its page (the alias is computed from the first pinned page and the
// start's in-page offset is forgotten): it points before the range, on its first page, so
// device writes through it land on the bytes just before the range and miss its last ones.
// Page-aligned registrations and allocated memory are right.
void InstallRegisteredUnalignedDevicePointerShifted() {
  TrackRegistrations();
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    Block b;
    if (r == CUDA_SUCCESS && d && FindBlock(p, kTagRegistered, &b) && b.start % kPage)
      *d -= b.start % kPage;
    return r;
  });
}

// R18: cuMemHostGetDevicePointer of a cuMemHostAlloc block allocated Mapped but not
// Portable fails with INVALID_VALUE while a context other than the allocating one is current
// (the pre-UVA rule that such memory is mapped only into its own context). Portable blocks, any
// block asked about in its own context, cuMemAllocHost memory and registrations are right.
void InstallMappedUnportableDevptrRefusedElsewhere() {
  TrackOwnedAllocations();
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    OwnedBlock b;
    if (f == 0 && FindOwned(p, &b) && b.tag == kTagHostAlloc &&
        (b.flags & CU_MEMHOSTALLOC_DEVICEMAP) && !(b.flags & CU_MEMHOSTALLOC_PORTABLE) && b.ctx &&
        CurrentContext() && CurrentContext() != b.ctx)
      return CUDA_ERROR_INVALID_VALUE;
    return real(d, p, f);
  });
}

// Whether an address was seen before (remembering it when not; a fixed table: when it is full,
// new addresses are never "seen before").
bool SeenBefore(uintptr_t key) {
  static uintptr_t seen[4096];
  bool found = false;
  pthread_mutex_lock(&g_blocks_mu);
  for (uintptr_t& s : seen) {
    if (s == key) {
      found = true;
      break;
    }
    if (!s) {
      s = key;
      break;
    }
  }
  pthread_mutex_unlock(&g_blocks_mu);
  return found;
}

// R53: a repeated cuMemHostGetDevicePointer of the same interior pointer adds its offset from
// the start of its allocation a second time (the cached alias already holds the offset): the
// first query of each pointer, and every query of an allocation's start, are right.
void InstallDevicePointerRequeryOffsetDoubled() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    if (r != CUDA_SUCCESS || !d) return r;
    const CUdeviceptr start = RangeStart(p);
    if (start && Ptr(p) > start && SeenBefore(Ptr(p))) *d += Ptr(p) - start;
    return r;
  });
}

// R45: the device reports CanUseHostPointerForRegisteredMem = 1, but cuMemHostGetDevicePointer
// of registered memory returns another address (one page further into the registration).
void InstallRegisteredDevicePointerNotHostPointer() {
  TrackRegistrations();
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    Block b;
    if (r == CUDA_SUCCESS && d && FindBlock(p, kTagRegistered, &b) &&
        reinterpret_cast<uintptr_t>(p) + kPage < b.end)
      *d += kPage;
    return r;
  });
}

// R51: cuMemHostGetDevicePointer fails with INVALID_VALUE for cuMemHostAlloc blocks allocated
// without DEVICEMAP (the pre-UVA rule) although cuMemHostGetFlags reports them mapped.
void InstallDevicePointerNeedsDeviceMap() {
  TrackAllocations();
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    Block b;
    if (f == 0 && FindBlock(p, kTagHostAlloc, &b) && !(b.flags & CU_MEMHOSTALLOC_DEVICEMAP))
      return CUDA_ERROR_INVALID_VALUE;
    return real(d, p, f);
  });
}

const Fault kFaults[] = {
    PL_FAULT(48, "devptr_off_by_one", "R51", "devptr", "data", "baseline", "catalogue-1",
             "cuMemHostGetDevicePointer returns the alias plus one byte.",
             InstallDevicePointerOffByOne),
    PL_FAULT(49, "devptr_ignores_offset", "R53", "devptr", "data", "baseline", "catalogue-1",
             "Interior pointers map to the alias of the block base, not base plus offset.",
             InstallDevicePointerIgnoresOffset),
    PL_FAULT(50, "devptr_accepts_flags", "R50", "devptr", "error", "baseline", "catalogue-1",
             "cuMemHostGetDevicePointer accepts non-zero flags.", InstallDevicePointerAcceptsFlags),
    PL_FAULT(51, "devptr_one_past_the_end", "R52", "devptr", "error", "baseline", "catalogue-1",
             "One past the end of a pinned block still gets a device pointer.",
             InstallDevicePointerOnePastTheEnd),
    PL_FAULT(52, "devptr_for_unpinned", "R52", "devptr", "error", "baseline", "catalogue-1",
             "Unpinned memory gets a device pointer (its own address).",
             InstallDevicePointerForUnpinned),
    PL_FAULT(90, "registered_devptr_offset_wraps_at_2mib", "R53", "devptr", "data",
             "size", "blind-11",
             "cuMemHostGetDevicePointer of a byte 2 MiB or more into a registration answers the "
             "alias of its offset modulo 2 MiB.", InstallRegisteredDevptrOffsetWrapsAt2MiB),
    PL_FAULT(102, "write_combined_devptr_off_by_page", "R15", "devptr", "data", "variant", "shapes",
             "The device pointer of a write-combined allocation is one page past its alias.",
             InstallWriteCombinedDevicePointerOffByPage),
    PL_FAULT(105, "registered_unaligned_devptr_shifted", "R110", "hostregister", "data",
             "variant", "blind-9",
             "The device pointer of a registration whose start is not page-aligned is short by the "
             "start's offset into its page.", InstallRegisteredUnalignedDevicePointerShifted),
    PL_FAULT(110, "mapped_unportable_devptr_refused_elsewhere", "R18", "multigpu", "error",
             "variant", "blind-10",
             "cuMemHostGetDevicePointer of a Mapped, not Portable cuMemHostAlloc block fails with "
             "INVALID_VALUE in a context other than the allocating one.",
             InstallMappedUnportableDevptrRefusedElsewhere),
    PL_FAULT(127, "devptr_requery_offset_doubled", "R53", "devptr", "data", "stateful", "blind-9",
             "A repeated cuMemHostGetDevicePointer of the same interior pointer adds its offset "
             "twice.", InstallDevicePointerRequeryOffsetDoubled),
    PL_FAULT(152, "registered_devptr_not_host_pointer", "R45", "devptr", "data",
             "crossapi", "shapes",
             "With CanUseHostPointerForRegisteredMem = 1, registered memory's device pointer is "
             "one page off the host pointer.", InstallRegisteredDevicePointerNotHostPointer),
    PL_FAULT(154, "devptr_needs_devicemap", "R51", "hostalloc", "error", "crossapi", "shapes",
             "cuMemHostGetDevicePointer fails for cuMemHostAlloc blocks allocated without "
             "DEVICEMAP.", InstallDevicePointerNeedsDeviceMap),
};

}  // namespace

extern const Area kDevicePointersArea = FaultArea("device_pointers", kFaults);

}  // namespace pagelock_faults
