// Capabilities: device attributes (cuDeviceGetAttribute) and host atomic capabilities.
#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

template <CUdevice_attribute kAttr, int kValue>
CUresult ForceAttribute(Real_DeviceGetAttribute real, int* v, CUdevice_attribute a, CUdevice d) {
  CUresult r = real(v, a, d);
  if (r == CUDA_SUCCESS && v && a == kAttr) *v = kValue;
  return r;
}

// R85: a discrete GPU reports CanMapHostMemory=0.
void InstallCapCannotMapHost() {
  HookDeviceGetAttribute(&ForceAttribute<CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 0>);
}
// R27: HostRegisterSupported reported as 0.
void InstallCapNoHostRegister() {
  HookDeviceGetAttribute(&ForceAttribute<CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 0>);
}
// R70: UnifiedAddressing reported as 0 in a 64-bit process.
void InstallCapNoUnifiedAddressing() {
  HookDeviceGetAttribute(&ForceAttribute<CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0>);
}
// R86: a discrete GPU reports Integrated=1.
void InstallCapClaimsIntegrated() {
  HookDeviceGetAttribute(&ForceAttribute<CU_DEVICE_ATTRIBUTE_INTEGRATED, 1>);
}
// R45: CanUseHostPointerForRegisteredMem reported the opposite of what the device does.
void InstallCapHostPointerForRegisteredFlipped() {
  HookDeviceGetAttribute([](Real_DeviceGetAttribute real, int* v, CUdevice_attribute a,
                            CUdevice d) -> CUresult {
    CUresult r = real(v, a, d);
    if (r == CUDA_SUCCESS && v && a == CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM)
      *v = !*v;
    return r;
  });
}
// R80/R81: HostNativeAtomicSupported reported the opposite of what the link does.
void InstallCapHostNativeAtomicsFlipped() {
  HookDeviceGetAttribute([](Real_DeviceGetAttribute real, int* v, CUdevice_attribute a,
                            CUdevice d) -> CUresult {
    CUresult r = real(v, a, d);
    if (r == CUDA_SUCCESS && v && a == CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED) *v = !*v;
    return r;
  });
}
// R42: HostRegisterReadOnlySupported reported as 0.
void InstallCapNoReadOnlyRegister() {
  HookDeviceGetAttribute(
      &ForceAttribute<CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, 0>);
}
// R12/R83: PageableMemoryAccessUsesHostPageTables reported as 1 on a PCIe system (claims ATS).
void InstallCapClaimsAts() {
  HookDeviceGetAttribute(
      &ForceAttribute<CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 1>);
}

// R82: cuDeviceGetHostAtomicCapabilities claims every operation is supported.
void InstallAtomicCapsOverclaimed() {
  HookDeviceGetHostAtomicCapabilities([](Real_DeviceGetHostAtomicCapabilities real, unsigned* c,
                                         const CUatomicOperation* ops, unsigned n,
                                         CUdevice d) -> CUresult {
    CUresult r = real(c, ops, n, d);
    if (r == CUDA_SUCCESS && c)
      for (unsigned i = 0; i < n; ++i) c[i] = ~0u;
    return r;
  });
}

// R82: a count of 0 is accepted instead of INVALID_VALUE.
void InstallAtomicCapsAcceptsZeroCount() {
  HookDeviceGetHostAtomicCapabilities([](Real_DeviceGetHostAtomicCapabilities real, unsigned* c,
                                         const CUatomicOperation* ops, unsigned n,
                                         CUdevice d) -> CUresult {
    return n == 0 ? CUDA_SUCCESS : real(c, ops, n, d);
  });
}

// R83: PageableMemoryAccess (attribute 88) reported as 1 on a PCIe system where a kernel cannot
// touch pageable memory.
void InstallCapClaimsPageableAccess() {
  HookDeviceGetAttribute(&ForceAttribute<CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 1>);
}

// R109: on a device whose link has no native host atomics
// (CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED = 0),
// CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED (147) is reported as 1 ("only
// some native atomic operations"), while cuDeviceGetHostAtomicCapabilities, answered by the
// driver, gives no operation a capability. Devices with native host atomics answer as the
// driver does.
void InstallPartialHostAtomicsClaimedWithoutOps() {
  HookDeviceGetAttribute([](Real_DeviceGetAttribute real, int* v, CUdevice_attribute a,
                            CUdevice d) -> CUresult {
    CUresult r = real(v, a, d);
    int native = 1;
    if (r == CUDA_SUCCESS && v &&
        a == CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED &&
        real(&native, CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, d) == CUDA_SUCCESS &&
        native == 0)
      *v = 1;
    return r;
  });
}

const Fault kFaults[] = {
    PL_FAULT(63, "cap_cannot_map_host", "R85", "platform", "capability", "baseline", "catalogue-1",
             "CanMapHostMemory reported as 0.", InstallCapCannotMapHost),
    PL_FAULT(64, "cap_no_host_register", "R27", "hostregister", "capability",
             "baseline", "catalogue-1",
             "HostRegisterSupported reported as 0.", InstallCapNoHostRegister),
    PL_FAULT(65, "cap_no_unified_addressing", "R70", "platform", "capability",
             "baseline", "catalogue-1",
             "UnifiedAddressing reported as 0.", InstallCapNoUnifiedAddressing),
    PL_FAULT(66, "cap_claims_integrated", "R86", "platform", "capability",
             "baseline", "catalogue-1",
             "A discrete GPU reports Integrated=1.", InstallCapClaimsIntegrated),
    PL_FAULT(67, "cap_host_pointer_for_registered_flipped", "R45", "devptr", "capability",
             "baseline", "catalogue-1",
             "CanUseHostPointerForRegisteredMem reported inverted.",
             InstallCapHostPointerForRegisteredFlipped),
    PL_FAULT(68, "cap_host_native_atomics_flipped", "R81", "atomics", "capability",
             "baseline", "catalogue-1",
             "HostNativeAtomicSupported reported inverted.", InstallCapHostNativeAtomicsFlipped),
    PL_FAULT(69, "cap_no_read_only_register", "R42", "hostregister", "capability",
             "baseline", "catalogue-1",
             "HostRegisterReadOnlySupported reported as 0.", InstallCapNoReadOnlyRegister),
    PL_FAULT(70, "cap_claims_ats", "R12", "hostregister", "capability", "baseline", "catalogue-1",
             "PageableMemoryAccessUsesHostPageTables reported as 1 on a PCIe system.",
             InstallCapClaimsAts),
    PL_FAULT(71, "atomic_caps_overclaimed", "R82", "atomics", "capability",
             "baseline", "catalogue-1",
             "cuDeviceGetHostAtomicCapabilities claims every operation.",
             InstallAtomicCapsOverclaimed),
    PL_FAULT(72, "atomic_caps_accept_zero_count", "R82", "atomics", "error",
             "baseline", "catalogue-1",
             "cuDeviceGetHostAtomicCapabilities accepts a count of 0.",
             InstallAtomicCapsAcceptsZeroCount),
    PL_FAULT(153, "cap_claims_pageable_access", "R83", "devptr", "capability", "crossapi", "shapes",
             "PageableMemoryAccess reported as 1 on a PCIe system.",
             InstallCapClaimsPageableAccess),
    PL_FAULT(158, "partial_host_atomics_claimed_without_ops", "R109", "platform", "capability",
             "crossapi", "blind-10",
             "Without native host atomics, attribute 147 (only partial native host atomics) is "
             "reported 1 while cuDeviceGetHostAtomicCapabilities gives no operation.",
             InstallPartialHostAtomicsClaimedWithoutOps),
};

}  // namespace

extern const Area kCapabilitiesArea = FaultArea("capabilities", kFaults);

}  // namespace pagelock_faults
