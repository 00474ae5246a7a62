// Probes of the pinned allocation and host pool faults (catalogue/host_allocation.cc).
#include <string.h>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

using PoolCreate = CUresult (*)(CUmemoryPool*, const CUmemPoolProps*);
using PoolAlloc = CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);

// Creates a pinned pool located at `where`, with a maximum size (0: none).
CUresult MakePool(PoolCreate create, CUmemLocationType where, size_t max_size, CUmemoryPool* pool) {
  CUmemPoolProps props;
  memset(&props, 0, sizeof(props));
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = where;
  props.maxSize = max_size;
  return create(pool, &props);
}

// host_pool_poisoned_after_failed_alloc: results of an allocation above the maximum (the fake
// refuses above 1 MiB) and of a small one after it, per pool kind.
int HostPoolAfterFailure() {
  auto pool_create = Get<PoolCreate>("cuMemPoolCreate");
  auto pool_alloc = Get<PoolAlloc>("cuMemAllocFromPoolAsync");
  auto pool_allocs = static_cast<int*>(FakeSymbol("fake_pool_allocs"));
  if (!pool_create || !pool_alloc || !pool_allocs) return 1;
  auto pool_after_failure = [&](CUmemLocationType where, size_t max_size) {
    CUmemoryPool pool = nullptr;
    if (MakePool(pool_create, where, max_size, &pool) != CUDA_SUCCESS) return std::string("create failed");
    CUdeviceptr d = 0;
    const int k = *pool_allocs;
    CUresult big_rc = pool_alloc(&d, 4 << 20, pool, kBlocking);
    CUresult small_rc = pool_alloc(&d, 4096, pool, kBlocking);
    CUresult again_rc = pool_alloc(&d, 4096, pool, kBlocking);
    return std::to_string(big_rc) + "," + std::to_string(small_rc) + "," +
           std::to_string(again_rc) + "," + std::to_string(*pool_allocs - k);
  };
  printf("host_pool_max=%s", pool_after_failure(CU_MEM_LOCATION_TYPE_HOST, 2 << 20).c_str());
  printf(" host_numa_pool_max=%s", pool_after_failure(CU_MEM_LOCATION_TYPE_HOST_NUMA, 2 << 20).c_str());
  printf(" host_pool_no_max=%s", pool_after_failure(CU_MEM_LOCATION_TYPE_HOST, 0).c_str());
  printf(" device_pool_max=%s\n", pool_after_failure(CU_MEM_LOCATION_TYPE_DEVICE, 2 << 20).c_str());
  return 0;
}

// host_pool_async_free_leaks: "rc,frees that reached the driver" per pool kind.
int HostPoolAsyncFree() {
  auto pool_create = Get<PoolCreate>("cuMemPoolCreate");
  auto pool_alloc = Get<PoolAlloc>("cuMemAllocFromPoolAsync");
  auto free_async = Get<CUresult (*)(CUdeviceptr, CUstream)>("cuMemFreeAsync");
  auto pool_frees = static_cast<int*>(FakeSymbol("fake_pool_frees"));
  if (!pool_create || !pool_alloc || !free_async || !pool_frees) return 1;
  auto pool_free = [&](CUmemLocationType where) {
    CUmemoryPool pool = nullptr;
    CUdeviceptr d = 0;
    if (MakePool(pool_create, where, 0, &pool) != CUDA_SUCCESS ||
        pool_alloc(&d, 4096, pool, kBlocking) != CUDA_SUCCESS)
      return std::string("alloc failed");
    const int frees = *pool_frees;
    CUresult rc = free_async(d, kBlocking);
    return std::to_string(rc) + "," + std::to_string(*pool_frees - frees);
  };
  printf("free_async_host_pool=%s free_async_host_numa_pool=%s free_async_device_pool=%s\n",
         pool_free(CU_MEM_LOCATION_TYPE_HOST).c_str(), pool_free(CU_MEM_LOCATION_TYPE_HOST_NUMA).c_str(),
         pool_free(CU_MEM_LOCATION_TYPE_DEVICE).c_str());
  return 0;
}

// failed_pin_error_resurfaces_at_next_sync: "allocation rc,synchronisation rc".
int FailedPinThenSync() {
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto alloc_host = Get<CUresult (*)(void**, size_t)>("cuMemAllocHost");
  auto sync = Get<CUresult (*)()>("cuCtxSynchronize");
  auto stream_sync = Get<CUresult (*)(CUstream)>("cuStreamSynchronize");
  if (!alloc || !alloc_host || !sync || !stream_sync) return 1;
  void* nothing = nullptr;
  const size_t impossible = size_t{1} << 60;
  CUresult r = alloc(&nothing, 64, 0x10);  // bad flags: INVALID_VALUE
  printf("sync_after_bad_flags=%d,%d", r, sync());
  r = alloc(&nothing, impossible, 0);
  printf(" sync_after_failed_hostalloc=%d,%d", r, sync());
  printf(" sync_again=%d", sync());
  r = alloc_host(&nothing, impossible);
  printf(" stream_sync_after_failed_allochost=%d,%d", r, stream_sync(kBlocking));
  printf(" stream_sync_again=%d\n", stream_sync(kBlocking));
  return 0;
}

const Probe kProbes[] = {
    {"host_pool_poisoned_after_failed_alloc", HostPoolAfterFailure},
    {"host_pool_async_free_leaks", HostPoolAsyncFree},
    {"failed_pin_error_resurfaces_at_next_sync", FailedPinThenSync},
};

}  // namespace

extern const ProbeArea kHostAllocationProbes = Probes("host_allocation", kProbes);

}  // namespace probes
