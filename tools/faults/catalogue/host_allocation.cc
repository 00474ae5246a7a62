// Pinned host allocation (cuMemHostAlloc, cuMemAllocHost, cuMemFreeHost, cuMemHostGetFlags)
// and host-located memory pools.
#include <pthread.h>

#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// R07: every pinned allocation fails with CUDA_ERROR_OUT_OF_MEMORY.
void InstallHostAllocOutOfMemory() {
  HookMemHostAlloc([](Real_MemHostAlloc, void**, size_t, unsigned) -> CUresult {
    return CUDA_ERROR_OUT_OF_MEMORY;
  });
  HookMemAllocHost([](Real_MemAllocHost, void**, size_t) -> CUresult {
    return CUDA_ERROR_OUT_OF_MEMORY;
  });
}

// R09: unknown flag bits are silently accepted (masked off) instead of rejected.
void InstallHostAllocAcceptsUnknownFlags() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    return real(p, n, f & 0x7u);
  });
}

// R08: the WriteCombined flag is dropped (memory is cached, flags do not report it).
void InstallHostAllocDropsWriteCombined() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    return real(p, n, f & ~static_cast<unsigned>(CU_MEMHOSTALLOC_WRITECOMBINED));
  });
}

// P01: pinned allocations are returned 8 bytes past the block start (misaligned for max_align_t;
// freeing them hits the interior-pointer path).
void InstallHostAllocMisaligned() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n + 8, f);
    if (r == CUDA_SUCCESS && p && *p) *p = static_cast<char*>(*p) + 8;
    return r;
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    CUresult r = real(p, n + 8);
    if (r == CUDA_SUCCESS && p && *p) *p = static_cast<char*>(*p) + 8;
    return r;
  });
}

// R06: an allocation too large to pin reports CUDA_ERROR_INVALID_VALUE instead of OUT_OF_MEMORY.
void InstallHostAllocWrongOomCode() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? CUDA_ERROR_INVALID_VALUE : r;
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    CUresult r = real(p, n);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? CUDA_ERROR_INVALID_VALUE : r;
  });
}

// R11: a zero-size allocation fails instead of succeeding.
void InstallHostAllocZeroSizeFails() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    return n == 0 ? CUDA_ERROR_INVALID_VALUE : real(p, n, f);
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    return n == 0 ? CUDA_ERROR_INVALID_VALUE : real(p, n);
  });
}

// R19: cuMemFreeHost reports success but keeps the memory pinned (a leak).
void InstallFreeHostLeaks() {
  HookMemFreeHost([](Real_MemFreeHost, void*) -> CUresult { return CUDA_SUCCESS; });
}

// R22/R23/R24: cuMemFreeHost accepts pointers it did not allocate (reports success).
void InstallFreeHostAcceptsForeignPointers() {
  HookMemFreeHost([](Real_MemFreeHost real, void* p) -> CUresult {
    CUresult r = real(p);
    return r == CUDA_ERROR_INVALID_VALUE ? CUDA_SUCCESS : r;
  });
}

// R20: cuMemFreeHost(NULL) fails instead of succeeding like free(NULL).
void InstallFreeHostNullFails() {
  HookMemFreeHost([](Real_MemFreeHost real, void* p) -> CUresult {
    return p ? real(p) : CUDA_ERROR_INVALID_VALUE;
  });
}

// R56: cuMemHostGetFlags loses the Portable bit of an allocation.
void InstallGetFlagsDropsPortable() {
  HookMemHostGetFlags([](Real_MemHostGetFlags real, unsigned* f, void* p) -> CUresult {
    CUresult r = real(f, p);
    if (r == CUDA_SUCCESS && f) *f &= ~static_cast<unsigned>(CU_MEMHOSTALLOC_PORTABLE);
    return r;
  });
}

// R56: cuMemHostGetFlags loses the WriteCombined bit of an allocation.
void InstallGetFlagsDropsWriteCombined() {
  HookMemHostGetFlags([](Real_MemHostGetFlags real, unsigned* f, void* p) -> CUresult {
    CUresult r = real(f, p);
    if (r == CUDA_SUCCESS && f) *f &= ~static_cast<unsigned>(CU_MEMHOSTALLOC_WRITECOMBINED);
    return r;
  });
}

// R56: cuMemHostGetFlags answers for unpinned memory (flags 0) instead of INVALID_VALUE. (For
// registered memory, R58, the r580 driver already answers: the control fails that case.)
void InstallGetFlagsOfUnallocatedSucceeds() {
  HookMemHostGetFlags([](Real_MemHostGetFlags real, unsigned* f, void* p) -> CUresult {
    CUresult r = real(f, p);
    if (r == CUDA_ERROR_INVALID_VALUE && f && p) {
      *f = 0;
      return CUDA_SUCCESS;
    }
    return r;
  });
}

// R08: cuMemHostAlloc with all three flags (Portable | DeviceMap | WriteCombined) drops
// WriteCombined (one wrong row in a table indexed by the flag combination): the block is cached
// and its flags lack the bit. The other seven combinations are right.
void InstallHostAllocAllFlagsDropsWriteCombined() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    constexpr unsigned kWc = CU_MEMHOSTALLOC_WRITECOMBINED;
    constexpr unsigned kAll = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | kWc;
    return real(p, n, f == kAll ? f & ~kWc : f);
  });
}

// R145: cuMemFreeAsync of an allocation made by cuMemAllocFromPoolAsync from a
// host-located pool (cuMemPoolCreate with a host or host-NUMA location) reports success but
// never returns the allocation to its pool: the pool's used memory keeps it after the stream
// synchronises and cuMemPoolTrimTo cannot release its reservation. Allocations from device
// pools are freed, and so is everything freed by other entries.
CUmemoryPool g_leaky_pools[64];
CUdeviceptr g_leaky_allocations[4096];
pthread_mutex_t g_leaky_mu = PTHREAD_MUTEX_INITIALIZER;
bool IsHostLocation(const CUmemPoolProps* props) {
  return props && (props->location.type == CU_MEM_LOCATION_TYPE_HOST ||
                   props->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
                   props->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
}
// Adds `value` to the first free (zero) slot of a table, unless it is there already.
template <typename T, size_t N>
void RememberIn(T (&table)[N], T value) {
  pthread_mutex_lock(&g_leaky_mu);
  T* slot = nullptr;
  for (T& x : table) {
    if (x == value) {
      slot = nullptr;
      break;
    }
    if (!x && !slot) slot = &x;
  }
  if (slot) *slot = value;
  pthread_mutex_unlock(&g_leaky_mu);
}
// Whether a table holds `value`, taking it out when `take`.
template <typename T, size_t N>
bool HeldIn(T (&table)[N], T value, bool take) {
  bool found = false;
  pthread_mutex_lock(&g_leaky_mu);
  for (T& x : table)
    if (value && x == value) {
      found = true;
      if (take) x = T();
      break;
    }
  pthread_mutex_unlock(&g_leaky_mu);
  return found;
}
void InstallHostPoolAsyncFreeLeaks() {
  HookMemPoolCreate([](Real_MemPoolCreate real, CUmemoryPool* pool,
                       const CUmemPoolProps* props) -> CUresult {
    CUresult r = real(pool, props);
    if (r == CUDA_SUCCESS && pool && *pool && IsHostLocation(props))
      RememberIn(g_leaky_pools, *pool);
    return r;
  });
  HookMemAllocFromPoolAsync([](Real_MemAllocFromPoolAsync real, CUdeviceptr* d, size_t n,
                               CUmemoryPool pool, CUstream st) -> CUresult {
    CUresult r = real(d, n, pool, st);
    if (r == CUDA_SUCCESS && d && *d && HeldIn(g_leaky_pools, pool, false))
      RememberIn(g_leaky_allocations, *d);
    return r;
  });
  HookMemFreeAsync([](Real_MemFreeAsync real, CUdeviceptr d, CUstream st) -> CUresult {
    return HeldIn(g_leaky_allocations, d, true) ? CUDA_SUCCESS : real(d, st);
  });
}

// R19: every 4th cuMemFreeHost reports success but keeps the block pinned (a leak that a single
// allocate-and-free never shows).
void InstallEvery4thFreeHostLeaks() {
  HookMemFreeHost([](Real_MemFreeHost real, void* p) -> CUresult {
    return p && EveryNth(&g_calls, 4) ? CUDA_SUCCESS : real(p);
  });
}

// R56: a pinned block allocated at the address of a freed one reports the freed block's flags
// (a stale lookup entry keyed by address); a first allocation at an address is right.
void InstallReusedAddressKeepsOldFlags() {
  TrackAllocations();
  HookMemHostGetFlags([](Real_MemHostGetFlags real, unsigned* f, void* p) -> CUresult {
    CUresult r = real(f, p);
    Block old;
    if (r == CUDA_SUCCESS && f && FindDeadAt(p, &old) && old.tag == kTagHostAlloc)
      *f = old.flags | CU_MEMHOSTALLOC_DEVICEMAP;
    return r;
  });
}

// M04: after cuDevicePrimaryCtxReset (cudaDeviceReset), cuMemHostAlloc ignores the Portable and
// WriteCombined flags (the fresh context lost its allocation defaults): allocations before the
// reset are right, later ones cached and flagged 0.
bool g_after_reset = false;
void InstallHostAllocAfterResetDropsFlags() {
  HookDevicePrimaryCtxReset([](Real_DevicePrimaryCtxReset real, CUdevice d) -> CUresult {
    CUresult r = real(d);
    if (r == CUDA_SUCCESS) __atomic_store_n(&g_after_reset, true, __ATOMIC_RELAXED);
    return r;
  });
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    const unsigned kept = f & ~static_cast<unsigned>(CU_MEMHOSTALLOC_PORTABLE |
                                                     CU_MEMHOSTALLOC_WRITECOMBINED);
    return real(p, n, __atomic_load_n(&g_after_reset, __ATOMIC_RELAXED) ? kept : f);
  });
}

// R146: after an allocation from a host-located pool that has a maximum size
// (cuMemPoolCreate with a host location and maxSize > 0) fails, for exceeding the maximum or
// otherwise, the pool keeps the failed request's reservation: every later cuMemAllocFromPoolAsync
// from that pool fails with OUT_OF_MEMORY before it reaches the driver. Pools without a maximum,
// device pools and host pools before their first failure are right.
struct HostPool {
  CUmemoryPool pool;
  bool poisoned;
};
HostPool g_host_pools[64];
pthread_mutex_t g_pools_mu = PTHREAD_MUTEX_INITIALIZER;
// The table entry of a tracked pool (nullptr when untracked); the mutex must be held.
HostPool* FindHostPool(CUmemoryPool p) {
  for (HostPool& h : g_host_pools)
    if (p && h.pool == p) return &h;
  return nullptr;
}
void InstallHostPoolPoisonedAfterFailedAlloc() {
  HookMemPoolCreate([](Real_MemPoolCreate real, CUmemoryPool* pool,
                       const CUmemPoolProps* props) -> CUresult {
    CUresult r = real(pool, props);
    const bool host = props && (props->location.type == CU_MEM_LOCATION_TYPE_HOST ||
                                props->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
                                props->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
    if (r != CUDA_SUCCESS || !pool || !*pool || !host || props->maxSize == 0) return r;
    pthread_mutex_lock(&g_pools_mu);
    for (HostPool& h : g_host_pools)
      if (!h.pool || h.pool == *pool) {
        h = {*pool, false};
        break;
      }
    pthread_mutex_unlock(&g_pools_mu);
    return r;
  });
  HookMemAllocFromPoolAsync([](Real_MemAllocFromPoolAsync real, CUdeviceptr* d, size_t n,
                               CUmemoryPool pool, CUstream st) -> CUresult {
    pthread_mutex_lock(&g_pools_mu);
    HostPool* h = FindHostPool(pool);
    const bool poisoned = h && h->poisoned;
    pthread_mutex_unlock(&g_pools_mu);
    if (poisoned) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = real(d, n, pool, st);
    if (r != CUDA_SUCCESS && n) {
      pthread_mutex_lock(&g_pools_mu);
      if (HostPool* x = FindHostPool(pool)) x->poisoned = true;
      pthread_mutex_unlock(&g_pools_mu);
    }
    return r;
  });
}

// R06: a pinned allocation (cuMemHostAlloc, cuMemAllocHost) that fails with
// OUT_OF_MEMORY leaves its error pending on the context: the next cuCtxSynchronize or
// cuStreamSynchronize of the process waits as usual and then reports CUDA_ERROR_OUT_OF_MEMORY
// once (the runtime passes it on as cudaErrorMemoryAllocation from cudaDeviceSynchronize or
// cudaStreamSynchronize, and as the thread's last error). Allocations that fail with another
// code (bad flags), and synchronisations with no failed allocation before them, are right.
int g_pending_oom = 0;
CUresult NotePinFailure(CUresult r) {
  if (r == CUDA_ERROR_OUT_OF_MEMORY) __atomic_store_n(&g_pending_oom, 1, __ATOMIC_RELAXED);
  return r;
}
template <typename Real, typename... A>
CUresult ThenPendingPinFailure(Real real, A... a) {
  CUresult r = real(a...);
  if (r == CUDA_SUCCESS && __atomic_exchange_n(&g_pending_oom, 0, __ATOMIC_RELAXED))
    return CUDA_ERROR_OUT_OF_MEMORY;
  return r;
}
void InstallFailedPinErrorResurfacesAtNextSync() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    return NotePinFailure(real(p, n, f));
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    return NotePinFailure(real(p, n));
  });
  HookCtxSynchronize(&ThenPendingPinFailure<Real_CtxSynchronize>);
  HookCtxSynchronize13(&ThenPendingPinFailure<Real_CtxSynchronize13, CUcontext>);
  HookStreamSynchronize(&ThenPendingPinFailure<Real_StreamSynchronize, CUstream>);
}

// R56: cuMemHostGetFlags of memory from cuMemAllocHost (not cuMemHostAlloc) reports
// WriteCombined, which that entry point never sets; cuMemHostAlloc blocks are right.
void InstallAllocHostFlagsInventWriteCombined() {
  TrackAllocations();
  HookMemHostGetFlags([](Real_MemHostGetFlags real, unsigned* f, void* p) -> CUresult {
    CUresult r = real(f, p);
    Block b;
    if (r == CUDA_SUCCESS && f && FindBlock(p, kTagAllocHost, &b))
      *f |= CU_MEMHOSTALLOC_WRITECOMBINED;
    return r;
  });
}

const Fault kFaults[] = {
    PL_FAULT(24, "hostalloc_out_of_memory", "R07", "hostalloc", "error", "baseline", "catalogue-1",
             "Every pinned allocation fails with CUDA_ERROR_OUT_OF_MEMORY.",
             InstallHostAllocOutOfMemory),
    PL_FAULT(25, "hostalloc_accepts_unknown_flags", "R09", "hostalloc", "error",
             "baseline", "catalogue-1",
             "cuMemHostAlloc masks off unknown flag bits instead of rejecting them.",
             InstallHostAllocAcceptsUnknownFlags),
    PL_FAULT(26, "hostalloc_drops_write_combined", "R08", "hostalloc", "flag",
             "baseline", "catalogue-1",
             "cuMemHostAlloc drops the WriteCombined flag.", InstallHostAllocDropsWriteCombined),
    PL_FAULT(27, "hostalloc_misaligned", "P01", "hostalloc", "data", "baseline", "catalogue-1",
             "Pinned allocations are returned 8 bytes past the block start.",
             InstallHostAllocMisaligned),
    PL_FAULT(28, "hostalloc_wrong_oom_code", "R06", "hostalloc", "error", "baseline", "catalogue-1",
             "An allocation too large to pin fails with INVALID_VALUE, not OUT_OF_MEMORY.",
             InstallHostAllocWrongOomCode),
    PL_FAULT(29, "hostalloc_zero_size_fails", "R11", "hostalloc", "error",
             "baseline", "catalogue-1",
             "A zero-size pinned allocation fails.", InstallHostAllocZeroSizeFails),
    PL_FAULT(30, "freehost_leaks", "R19", "hostalloc", "resource", "baseline", "catalogue-1",
             "cuMemFreeHost reports success but keeps the memory pinned.", InstallFreeHostLeaks),
    PL_FAULT(31, "freehost_accepts_foreign", "R22", "hostalloc", "error", "baseline", "catalogue-1",
             "cuMemFreeHost reports success for interior, freed or foreign pointers.",
             InstallFreeHostAcceptsForeignPointers),
    PL_FAULT(32, "freehost_null_fails", "R20", "hostalloc", "error", "baseline", "catalogue-1",
             "cuMemFreeHost(NULL) fails with INVALID_VALUE.", InstallFreeHostNullFails),
    PL_FAULT(33, "getflags_drops_portable", "R56", "hostalloc", "flag", "baseline", "catalogue-1",
             "cuMemHostGetFlags loses the Portable bit.", InstallGetFlagsDropsPortable),
    PL_FAULT(34, "getflags_drops_write_combined", "R56", "hostalloc", "flag",
             "baseline", "catalogue-1",
             "cuMemHostGetFlags loses the WriteCombined bit.", InstallGetFlagsDropsWriteCombined),
    PL_FAULT(35, "getflags_of_unallocated_succeeds", "R56", "hostalloc", "error",
             "baseline", "catalogue-1",
             "cuMemHostGetFlags answers flags 0 for unpinned (and registered) memory.",
             InstallGetFlagsOfUnallocatedSucceeds),
    PL_FAULT(107, "hostalloc_all_flags_drops_write_combined", "R08", "hostalloc", "flag",
             "variant", "blind-9",
             "cuMemHostAlloc with Portable, DeviceMap and WriteCombined together drops "
             "WriteCombined.", InstallHostAllocAllFlagsDropsWriteCombined),
    PL_FAULT(113, "host_pool_async_free_leaks", "R145", "mempools", "resource",
             "variant", "blind-11",
             "cuMemFreeAsync of an allocation from a host-located memory pool reports success but "
             "never returns it to the pool.", InstallHostPoolAsyncFreeLeaks),
    PL_FAULT(118, "every_4th_freehost_leaks", "R19", "hostalloc", "resource", "stateful", "shapes",
             "Every 4th cuMemFreeHost reports success but keeps the block pinned.",
             InstallEvery4thFreeHostLeaks),
    PL_FAULT(120, "reused_address_keeps_old_flags", "R56", "hostalloc", "flag",
             "stateful", "shapes",
             "A pinned block allocated at a freed block's address reports the freed block's flags.",
             InstallReusedAddressKeepsOldFlags),
    PL_FAULT(124, "hostalloc_after_reset_drops_flags", "M04", "model", "flag", "stateful", "shapes",
             "After a device reset, cuMemHostAlloc ignores the Portable and WriteCombined flags.",
             InstallHostAllocAfterResetDropsFlags),
    PL_FAULT(131, "host_pool_poisoned_after_failed_alloc", "R146", "mempools", "error",
             "stateful", "blind-10",
             "After an allocation from a host pool with a maximum size fails, every later "
             "allocation from that pool fails with OUT_OF_MEMORY.",
             InstallHostPoolPoisonedAfterFailedAlloc),
    PL_FAULT(134, "failed_pin_error_resurfaces_at_next_sync", "R06", "hostalloc", "error",
             "stateful", "blind-11",
             "After a pinned allocation fails with OUT_OF_MEMORY, the next cuCtxSynchronize or "
             "cuStreamSynchronize reports OUT_OF_MEMORY once.",
             InstallFailedPinErrorResurfacesAtNextSync),
    PL_FAULT(151, "allochost_flags_invent_write_combined", "R56", "hostalloc", "flag",
             "crossapi", "shapes",
             "cuMemHostGetFlags of cuMemAllocHost memory reports WriteCombined.",
             InstallAllocHostFlagsInventWriteCombined),
};

}  // namespace

extern const Area kHostAllocationArea = FaultArea("host_allocation", kFaults);

}  // namespace pagelock_faults
