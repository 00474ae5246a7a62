// Probes of the device pointer faults (catalogue/device_pointers.cc).
#include <sys/mman.h>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

// mapped_unportable_devptr_refused_elsewhere: the result of cuMemHostGetDevicePointer.
int MappedUnportableElsewhere() {
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto devptr = Get<CUresult (*)(CUdeviceptr*, void*, unsigned)>("cuMemHostGetDevicePointer");
  auto set_current = Get<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  if (!alloc || !free_host || !devptr || !set_current) return 1;
  set_current(kContextA);
  void *mapped = nullptr, *portable = nullptr, *plain = nullptr;
  if (alloc(&mapped, 64, CU_MEMHOSTALLOC_DEVICEMAP) != CUDA_SUCCESS ||
      alloc(&portable, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS ||
      alloc(&plain, 64, 0) != CUDA_SUCCESS)
    return 1;
  CUdeviceptr out = 0;
  printf("devptr_mapped_own_context=%d", devptr(&out, mapped, 0));
  set_current(kContextB);
  printf(" devptr_mapped_other_context=%d", devptr(&out, static_cast<char*>(mapped) + 8, 0));
  printf(" devptr_portable_other_context=%d", devptr(&out, portable, 0));
  printf(" devptr_unmapped_other_context=%d\n", devptr(&out, plain, 0));
  set_current(nullptr);
  free_host(mapped);
  free_host(portable);
  free_host(plain);
  return 0;
}

// registered_devptr_offset_wraps_at_2mib: "rc,offset of the device pointer from the start".
int RegisteredPast2MiB() {
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto devptr = Get<CUresult (*)(CUdeviceptr*, void*, unsigned)>("cuMemHostGetDevicePointer");
  if (!alloc || !free_host || !reg || !unreg || !devptr) return 1;
  const size_t mib = size_t{1} << 20, span = 3 * mib;
  char* reg_area = static_cast<char*>(mmap(nullptr, span, PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  void* block = nullptr;
  if (reg_area == MAP_FAILED || reg(reg_area, span, 0) != CUDA_SUCCESS ||
      alloc(&block, span, 0) != CUDA_SUCCESS)
    return 1;
  auto alias = [&](void* start, size_t offset) {
    CUdeviceptr d = 0;
    CUresult rc = devptr(&d, static_cast<char*>(start) + offset, 0);
    return std::to_string(rc) + "," +
           std::to_string(static_cast<long long>(d - reinterpret_cast<CUdeviceptr>(start)));
  };
  printf("devptr_registered_past_2mib=%s devptr_registered_below_2mib=%s "
         "devptr_allocated_past_2mib=%s\n",
         alias(reg_area, 2 * mib + 100).c_str(), alias(reg_area, 1000).c_str(),
         alias(block, 2 * mib + 100).c_str());
  unreg(reg_area);
  free_host(block);
  munmap(reg_area, span);
  return 0;
}

const Probe kProbes[] = {
    {"mapped_unportable_devptr_refused_elsewhere", MappedUnportableElsewhere},
    {"registered_devptr_offset_wraps_at_2mib", RegisteredPast2MiB},
};

}  // namespace

extern const ProbeArea kDevicePointersProbes = Probes("device_pointers", kProbes);

}  // namespace probes
