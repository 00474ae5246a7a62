// Pointer queries: cuPointerGetAttribute, cuPointerGetAttributes and cuMemGetAddressRange.
#include <pthread.h>

#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// Rewrites one attribute in a cuPointerGetAttributes answer.
template <typename Fix>
CUresult PatchAttributes(Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* attrs,
                         void** data, CUdeviceptr p, Fix fix) {
  CUresult r = real(n, attrs, data, p);
  if (r == CUDA_SUCCESS && attrs && data)
    for (unsigned i = 0; i < n; ++i)
      if (data[i]) fix(attrs[i], data[i]);
  return r;
}

// R72: pinned host memory is reported as device memory.
void InstallAttributesHostAsDevice() {
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    return PatchAttributes(real, n, a, d, p, [](CUpointer_attribute a, void* v) {
      if (a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE && *static_cast<unsigned*>(v) == CU_MEMORYTYPE_HOST)
        *static_cast<unsigned*>(v) = CU_MEMORYTYPE_DEVICE;
    });
  });
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE &&
        *static_cast<unsigned*>(v) == CU_MEMORYTYPE_HOST)
      *static_cast<unsigned*>(v) = CU_MEMORYTYPE_DEVICE;
    return r;
  });
}

// R72: the device pointer attribute of pinned memory is off by 64 bytes.
void InstallAttributesWrongDevicePointer() {
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    return PatchAttributes(real, n, a, d, p, [](CUpointer_attribute a, void* v) {
      if (a == CU_POINTER_ATTRIBUTE_DEVICE_POINTER && *static_cast<CUdeviceptr*>(v))
        *static_cast<CUdeviceptr*>(v) += 64;
    });
  });
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_DEVICE_POINTER)
      *static_cast<CUdeviceptr*>(v) += 64;
    return r;
  });
}

// R72: the host pointer attribute of pinned memory is NULL.
void InstallAttributesNoHostPointer() {
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    return PatchAttributes(real, n, a, d, p, [](CUpointer_attribute a, void* v) {
      if (a == CU_POINTER_ATTRIBUTE_HOST_POINTER) *static_cast<void**>(v) = nullptr;
    });
  });
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_HOST_POINTER)
      *static_cast<void**>(v) = nullptr;
    return r;
  });
}

// R72: the device ordinal of pinned memory is reported as device 1.
void InstallAttributesWrongDevice() {
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    return PatchAttributes(real, n, a, d, p, [](CUpointer_attribute a, void* v) {
      if (a == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) *static_cast<int*>(v) += 1;
    });
  });
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
      *static_cast<int*>(v) += 1;
    return r;
  });
}

// R73: the memory type of memory no context knows is answered (host) instead of INVALID_VALUE.
void InstallAttributeOfUnknownSucceeds() {
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_ERROR_INVALID_VALUE && v && p && a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
      *static_cast<unsigned*>(v) = CU_MEMORYTYPE_HOST;
      return CUDA_SUCCESS;
    }
    return r;
  });
}

// C11: CU_POINTER_ATTRIBUTE_BUFFER_ID of an allocation at a freed one's address repeats the
// freed one's id (the id is derived from the address).
void FirstBufferIdAtStart(CUdeviceptr p, unsigned long long* id) {
  static const auto attr = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  CUdeviceptr start = 0;
  if (attr && attr(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) == CUDA_SUCCESS && start)
    *id = static_cast<unsigned long long>(FirstAnswer(start, static_cast<long long>(*id)));
}
void InstallReusedAddressRepeatsBufferId() {
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_BUFFER_ID)
      FirstBufferIdAtStart(p, static_cast<unsigned long long*>(v));
    return r;
  });
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    CUresult r = real(n, a, d, p);
    if (r == CUDA_SUCCESS && a && d)
      for (unsigned i = 0; i < n; ++i)
        if (d[i] && a[i] == CU_POINTER_ATTRIBUTE_BUFFER_ID)
          FirstBufferIdAtStart(p, static_cast<unsigned long long*>(d[i]));
    return r;
  });
}

// R94: cuMemGetAddressRange of a block at a freed one's address reports the freed block's size
// (the first size seen at that base); a first block at an address is right.
void InstallReusedAddressStaleRangeSize() {
  HookMemGetAddressRange([](Real_MemGetAddressRange real, CUdeviceptr* base, size_t* size,
                            CUdeviceptr p) -> CUresult {
    CUdeviceptr b = 0;
    size_t s = 0;
    CUresult r = real(&b, &s, p);
    if (r == CUDA_SUCCESS && b) s = static_cast<size_t>(FirstAnswer(b, static_cast<long long>(s)));
    if (base) *base = b;
    if (size) *size = s;
    return r;
  });
}

// R96: cuPointerGetAttributes (what cudaPointerGetAttributes uses) reports the device pointer of
// page-locked memory one page off; cuPointerGetAttribute and cuMemHostGetDevicePointer are right.
void InstallAttributesDevicePointerDisagrees() {
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    CUresult r = real(n, a, d, p);
    if (r == CUDA_SUCCESS && a && d && IsPinnedHost(reinterpret_cast<void*>(p)))
      for (unsigned i = 0; i < n; ++i)
        if (d[i] && a[i] == CU_POINTER_ATTRIBUTE_DEVICE_POINTER && *static_cast<CUdeviceptr*>(d[i]))
          *static_cast<CUdeviceptr*>(d[i]) += kPage;
    return r;
  });
}

// R72: cuPointerGetAttribute's DEVICE_POINTER of an interior byte of page-locked memory is the
// alias of the block's start (offset dropped); cuPointerGetAttributes and
// cuMemHostGetDevicePointer answer base plus offset.
void InstallAttributeDevicePointerIgnoresOffset() {
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r != CUDA_SUCCESS || !v || a != CU_POINTER_ATTRIBUTE_DEVICE_POINTER ||
        !IsPinnedHost(reinterpret_cast<void*>(p)))
      return r;
    CUdeviceptr start = RangeStart(reinterpret_cast<void*>(p)), alias = 0;
    if (start && start != p && real(&alias, a, start) == CUDA_SUCCESS)
      *static_cast<CUdeviceptr*>(v) = alias;
    return r;
  });
}

// R94: cuMemGetAddressRange of an interior pointer names the pointer itself as the base (and the
// rest of the block as the size); RANGE_START_ADDR and queries of the base are right.
void InstallAddressRangeInteriorBaseWrong() {
  HookMemGetAddressRange([](Real_MemGetAddressRange real, CUdeviceptr* base, size_t* size,
                            CUdeviceptr p) -> CUresult {
    CUdeviceptr b = 0;
    size_t s = 0;
    CUresult r = real(&b, &s, p);
    if (r == CUDA_SUCCESS && b && p > b && p < b + s) {
      s -= static_cast<size_t>(p - b);
      b = p;
    }
    if (base) *base = b;
    if (size) *size = s;
    return r;
  });
}

// R95: CU_POINTER_ATTRIBUTE_RANGE_SIZE of page-locked host memory is one byte short
// (cuMemGetAddressRange reports the right size).
void InstallRangeSizeAttributeShort() {
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_RANGE_SIZE &&
        *static_cast<size_t*>(v) > 1 && IsPinnedHost(reinterpret_cast<void*>(p)))
      *static_cast<size_t*>(v) -= 1;
    return r;
  });
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    CUresult r = real(n, a, d, p);
    if (r == CUDA_SUCCESS && a && d && IsPinnedHost(reinterpret_cast<void*>(p)))
      for (unsigned i = 0; i < n; ++i)
        if (d[i] && a[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE && *static_cast<size_t*>(d[i]) > 1)
          *static_cast<size_t*>(d[i]) -= 1;
    return r;
  });
}

// R72: the pointer attributes of registered memory say CU_POINTER_ATTRIBUTE_IS_MANAGED = 1
// while MEMORY_TYPE says host (cudaPointerGetAttributes then answers cudaMemoryTypeManaged);
// allocated pinned memory answers 0.
void SetTrue(void* v) { *static_cast<unsigned char*>(v) = 1; }  // a boolean the driver zeroed
void InstallRegisteredReportedManaged() {
  TrackRegistrations();
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_IS_MANAGED &&
        IsRegistered(reinterpret_cast<void*>(p)))
      SetTrue(v);
    return r;
  });
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    CUresult r = real(n, a, d, p);
    if (r == CUDA_SUCCESS && a && d && IsRegistered(reinterpret_cast<void*>(p)))
      for (unsigned i = 0; i < n; ++i)
        if (d[i] && a[i] == CU_POINTER_ATTRIBUTE_IS_MANAGED) SetTrue(d[i]);
    return r;
  });
}

// R71: cuPointerGetAttributes (what cudaPointerGetAttributes uses) of a byte no
// context knows that lies on a 4 KiB page of a live registration (beside a registration that
// does not start or end on a page boundary) answers as for that registration (a page-granular
// lookup): memory type host and the registration's device ordinal, context, range and buffer
// id, with the byte's own address as its host and device pointer. cuPointerGetAttribute still
// answers INVALID_VALUE for the byte, and bytes on pages no registration touches answer as
// unregistered memory.
bool RegistrationOnPageOf(CUdeviceptr p, Block* out) {
  const Block byte = {p, p + 1, 0, 0, false, 0};
  bool found = false;
  pthread_mutex_lock(&g_blocks_mu);
  for (const Block& b : g_blocks)
    if (b.start != b.end && b.live && b.tag == kTagRegistered && SharePage(byte, b)) {
      *out = b;
      found = true;
      break;
    }
  pthread_mutex_unlock(&g_blocks_mu);
  return found;
}
void InstallAttributesPageGranularForSubpageRegistration() {
  TrackRegistrations();
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    static const auto single = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
    CUresult r = real(n, a, d, p);
    unsigned type = 0;
    Block b;
    if (r != CUDA_SUCCESS || !a || !d || !single ||
        single(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == CUDA_SUCCESS ||
        !RegistrationOnPageOf(p, &b))
      return r;
    if (real(n, a, d, b.start) != CUDA_SUCCESS) return real(n, a, d, p);
    for (unsigned i = 0; i < n; ++i) {
      if (!d[i]) continue;
      if (a[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER)
        *static_cast<void**>(d[i]) = reinterpret_cast<void*>(p);
      if (a[i] == CU_POINTER_ATTRIBUTE_DEVICE_POINTER) *static_cast<CUdeviceptr*>(d[i]) = p;
    }
    return CUDA_SUCCESS;
  });
}

const Fault kFaults[] = {
    PL_FAULT(53, "attr_host_as_device", "R72", "devptr", "data", "baseline", "catalogue-1",
             "Pointer attributes report pinned host memory as device memory.",
             InstallAttributesHostAsDevice),
    PL_FAULT(54, "attr_wrong_device_pointer", "R72", "devptr", "data", "baseline", "catalogue-1",
             "The device-pointer attribute is off by 64 bytes.",
             InstallAttributesWrongDevicePointer),
    PL_FAULT(55, "attr_no_host_pointer", "R72", "devptr", "data", "baseline", "catalogue-1",
             "The host-pointer attribute of pinned memory is NULL.",
             InstallAttributesNoHostPointer),
    PL_FAULT(56, "attr_wrong_device", "R72", "devptr", "data", "baseline", "catalogue-1",
             "The device ordinal attribute of pinned memory is one too high.",
             InstallAttributesWrongDevice),
    PL_FAULT(57, "attr_of_unknown_succeeds", "R73", "driverapi", "error", "baseline", "catalogue-1",
             "cuPointerGetAttribute answers a memory type for memory no context knows.",
             InstallAttributeOfUnknownSucceeds),
    PL_FAULT(121, "reused_address_repeats_buffer_id", "C11", "concurrency", "data",
             "stateful", "shapes",
             "An allocation at a freed one's address gets the freed one's buffer id.",
             InstallReusedAddressRepeatsBufferId),
    PL_FAULT(122, "reused_address_stale_range_size", "R94", "interior", "data",
             "stateful", "shapes",
             "cuMemGetAddressRange of a block at a freed block's base reports the freed block's "
             "size.", InstallReusedAddressStaleRangeSize),
    PL_FAULT(147, "attributes_device_pointer_disagrees", "R96", "interior", "data",
             "crossapi", "shapes",
             "cuPointerGetAttributes reports the device pointer of pinned memory one page off; "
             "cuPointerGetAttribute is right.", InstallAttributesDevicePointerDisagrees),
    PL_FAULT(148, "attribute_device_pointer_ignores_offset", "R72", "devptr", "data",
             "crossapi", "shapes",
             "cuPointerGetAttribute's device pointer of an interior byte of pinned memory is the "
             "block start's alias.", InstallAttributeDevicePointerIgnoresOffset),
    PL_FAULT(149, "address_range_interior_base_wrong", "R94", "interior", "data",
             "crossapi", "shapes",
             "cuMemGetAddressRange of an interior pointer names the pointer itself as the base.",
             InstallAddressRangeInteriorBaseWrong),
    PL_FAULT(150, "range_size_attribute_short", "R95", "interior", "data", "crossapi", "shapes",
             "The RANGE_SIZE attribute of pinned memory is one byte short of "
             "cuMemGetAddressRange's size.", InstallRangeSizeAttributeShort),
    PL_FAULT(156, "registered_reported_managed", "R72", "devptr", "data", "crossapi", "blind-9",
             "Pointer attributes of registered memory report IS_MANAGED = 1 beside memory type "
             "host.", InstallRegisteredReportedManaged),
    PL_FAULT(159, "attributes_page_granular_for_subpage_registration", "R71", "devptr", "data",
             "crossapi", "blind-11",
             "cuPointerGetAttributes of an unregistered byte on a page of a sub-page registration "
             "describes the registration; cuPointerGetAttribute does not know the byte.",
             InstallAttributesPageGranularForSubpageRegistration),
};

}  // namespace

extern const Area kPointerAttributesArea = FaultArea("pointer_attributes", kFaults);

}  // namespace pagelock_faults
