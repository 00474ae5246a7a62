// Conforming variations of another platform or driver branch (conforming.tsv): what a GH200 with
// NVLink-C2C and ATS, an HMM host, a link with native host atomics, an older driver (r535/r550)
// or a driver without r580's known deviations answers where the H200 with r580 answers otherwise,
// each as the documentation allows (docs/platform-gates.md argues every one). As in
// conforming.cc, a case that FAILs under one is a false alarm, and each hook calls NoteChanged()
// when it really changed an answer.
//
// The shim changes answers, not hardware: a GPU told that it reaches pageable memory still cannot.
// The cases that would then act on the answer against the real device are named in the row's
// `excluded` column (not judged); a variation whose answers would send a suite's work over a link
// that cannot carry it names the targets it may run (`targets`). The mutation tool reads both
// from conforming.tsv (tools/faults/README.md).
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// ---------------------------------------------------------------------------------------------
// Device attributes answered as the platform's (one variation per process: the installer names
// its table).

struct PlatformAttribute {
  CUdevice_attribute attr;
  int value;
  const char* what;  // the "changed" line
};
const PlatformAttribute* g_platform = nullptr;
size_t g_platform_count = 0;

CUresult PlatformAttributes(Real_DeviceGetAttribute real, int* v, CUdevice_attribute a,
                            CUdevice d) {
  const CUresult r = real(v, a, d);
  if (r != CUDA_SUCCESS || !v) return r;
  for (size_t i = 0; i < g_platform_count; ++i) {
    if (g_platform[i].attr != a || *v == g_platform[i].value) continue;
    NoteChanged(g_platform[i].what);
    *v = g_platform[i].value;
  }
  return r;
}
template <size_t N>
void AnswerAttributes(const PlatformAttribute (&table)[N]) {
  g_platform = table;
  g_platform_count = N;
  HookDeviceGetAttribute(&PlatformAttributes);
}

const PlatformAttribute kC2cAts[] = {
    {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 1,
     "attribute 100 (pageable access through the host's page tables) answered 1"},
    {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 1,
     "attribute 88 (pageable memory access) answered 1"},
};
const PlatformAttribute kPageableAccess[] = {
    {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 1,
     "attribute 88 (pageable memory access) answered 1"},
};
const PlatformAttribute kNativeAtomics[] = {
    {CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, 1,
     "attribute 86 (native host atomics) answered 1"},
    {CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED, 0,
     "attribute 147 (only some native host atomics) answered 0"},
};

// R106 / P04 / P07 / P08 / P09 / P13 / P14 / R43: a GPU reached over NVLink-C2C with ATS. The
// device accesses pageable memory through the host's page tables (attribute 100 = 1), and so
// accesses pageable memory (88 = 1: R106 requires both).
void InstallHostLinkC2cAts() { AnswerAttributes(kC2cAts); }

// ---------------------------------------------------------------------------------------------
// Pointer queries.

size_t Page() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// The real driver's MEMORY_TYPE answer for p: CUDA_ERROR_INVALID_VALUE for a byte no context
// knows ("If ptr was not allocated by, mapped by, or registered with a CUcontext which uses
// unified virtual addressing then CUDA_ERROR_INVALID_VALUE is returned").
CUresult RealMemoryType(CUdeviceptr p) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  unsigned type = 0;
  return fn ? fn(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) : CUDA_ERROR_NOT_FOUND;
}
bool UnknownByte(CUdeviceptr p) { return RealMemoryType(p) == CUDA_ERROR_INVALID_VALUE; }

// Whether the process maps p readable (/proc/self/maps; false when unknown): memory the CPU
// reaches, which a device with pageable memory access reaches too. The driver's reservations of
// device addresses are mapped without access and are not.
bool HostReadable(CUdeviceptr p) {
  FILE* f = fopen("/proc/self/maps", "re");
  if (!f) return false;
  char line[512];
  bool readable = false;
  while (fgets(line, sizeof(line), f)) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = "";
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
    if (p >= lo && p < hi) {
      readable = perms[0] == 'r';
      break;
    }
  }
  fclose(f);
  return readable;
}

bool IsRange(CUpointer_attribute a) {
  return a == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR || a == CU_POINTER_ATTRIBUTE_RANGE_SIZE;
}
// The slot widths cuda.h gives these attributes: "unsigned int" (MEMORY_TYPE), "void**"
// (HOST_POINTER), a CUdeviceptr and a size_t (the range).
void WriteSlot(void* slot, CUpointer_attribute a, uint64_t value) {
  if (a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
    const unsigned v = static_cast<unsigned>(value);
    memcpy(slot, &v, sizeof(v));
  } else {
    memcpy(slot, &value, sizeof(value));
  }
}
uint64_t ReadSlot(const void* slot, CUpointer_attribute a) {
  uint64_t v = 0;
  memcpy(&v, slot, a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE ? sizeof(unsigned) : sizeof(v));
  return v;
}

// How a device with pageable memory access (attribute 88 = 1) may describe a heap byte nobody
// registered: host memory, reached at its own address, in a range of its page. Only a byte the
// driver does not know that the process maps readable; every other attribute and byte keeps the
// driver's answer. True with *value for the attributes it describes.
bool PageableDescription(CUpointer_attribute a, CUdeviceptr p, uint64_t* value) {
  switch (a) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *value = CU_MEMORYTYPE_HOST; return true;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: *value = p; return true;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *value = p / Page() * Page(); return true;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *value = Page(); return true;
    default: return false;
  }
}
bool DescribedHeapByte(CUdeviceptr p) { return UnknownByte(p) && HostReadable(p); }

// R151: cuPointerGetAttribute and cuPointerGetAttributes describe an unregistered, readable heap
// byte as HOST memory with its page as the range, the same in both calls; attribute 88 reads 1.
// Its targets are the interior suites, whose cases judge the driver's queries against each other:
// elsewhere cases hold cudaPointerGetAttributes to "cudaMemoryTypeUnregistered for unregistered
// host memory" (R71), which would judge how the runtime reads these answers, not the suite.
void InstallHeapByteKnownWithPageableAccess() {
  AnswerAttributes(kPageableAccess);
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    const CUresult r = real(v, a, p);
    uint64_t value = 0;
    if (r != CUDA_ERROR_INVALID_VALUE || !v || !PageableDescription(a, p, &value) ||
        !DescribedHeapByte(p))
      return r;
    NoteChanged("cuPointerGetAttribute describes a heap byte as host memory");
    WriteSlot(v, a, value);
    return CUDA_SUCCESS;
  });
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    const CUresult r = real(n, a, d, p);
    if (r != CUDA_SUCCESS || !a || !d || !DescribedHeapByte(p)) return r;
    for (unsigned i = 0; i < n; ++i) {
      uint64_t value = 0;
      if (!d[i] || !PageableDescription(a[i], p, &value) || ReadSlot(d[i], a[i]) == value) continue;
      NoteChanged("cuPointerGetAttributes describes a heap byte as host memory");
      WriteSlot(d[i], a[i], value);
    }
    return r;
  });
}

// R151 (r580's deviation absent): for a byte no context knows, cuPointerGetAttributes assigns
// "default NULL values" to HOST_POINTER and the range too, where r580 gives the byte's own address
// and leaves the range slots unwritten (docs/platforms/driver-r580.md#r151). Every other slot
// keeps the driver's answer (r580: NULL, DEVICE_ORDINAL -2).
CUresult NullForUnknownByte(Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                            void** d, CUdeviceptr p) {
  const CUresult r = real(n, a, d, p);
  if (r != CUDA_SUCCESS || !a || !d || !UnknownByte(p)) return r;
  for (unsigned i = 0; i < n; ++i) {
    if (!d[i] || (a[i] != CU_POINTER_ATTRIBUTE_HOST_POINTER && !IsRange(a[i])) ||
        ReadSlot(d[i], a[i]) == 0)
      continue;
    NoteChanged("cuPointerGetAttributes of an unknown byte: NULL in every slot");
    WriteSlot(d[i], a[i], 0);
  }
  return r;
}
void InstallUnknownPointerAllNull() { HookPointerGetAttributes(&NullForUnknownByte); }

// ---------------------------------------------------------------------------------------------
// Page-locked blocks the process holds, as the shim saw them made (live ones only: a slot is
// reused once its block is freed or unregistered; when the table is full a new block is not
// held, and the variations leave its answers to the driver).

struct Held {
  uintptr_t start, end;
  unsigned flags;
  int tag;  // kTagRegistered, kTagHostAlloc, kTagAllocHost (hooks.h)
};
Held g_held[8192];
pthread_mutex_t g_held_mu = PTHREAD_MUTEX_INITIALIZER;

void Hold(const void* p, size_t n, unsigned flags, int tag) {
  const uintptr_t s = reinterpret_cast<uintptr_t>(p), e = s + (n ? n : 1);
  pthread_mutex_lock(&g_held_mu);
  Held* slot = nullptr;
  for (Held& h : g_held) {
    if (h.start != h.end && h.start < e && s < h.end) h = {0, 0, 0, 0};  // stale: memory reused
    if (h.start == h.end && !slot) slot = &h;
  }
  if (slot) *slot = {s, e, flags, tag};
  pthread_mutex_unlock(&g_held_mu);
}
void Release(const void* p) {
  pthread_mutex_lock(&g_held_mu);
  for (Held& h : g_held)
    if (h.start != h.end && h.start == reinterpret_cast<uintptr_t>(p)) h = {0, 0, 0, 0};
  pthread_mutex_unlock(&g_held_mu);
}
bool FindHeld(CUdeviceptr a, Held* out) {
  bool found = false;
  pthread_mutex_lock(&g_held_mu);
  for (const Held& h : g_held)
    if (h.start != h.end && a >= h.start && a < h.end) {
      *out = h;
      found = true;
      break;
    }
  pthread_mutex_unlock(&g_held_mu);
  return found;
}
bool InRegistration(CUdeviceptr a) {
  Held h;
  return FindHeld(a, &h) && h.tag == kTagRegistered;
}

void HoldRegistrations() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    const CUresult r = real(p, n, f);
    if (r == CUDA_SUCCESS && p && n) Hold(p, n, f, kTagRegistered);
    return r;
  });
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    const CUresult r = real(p);
    if (r == CUDA_SUCCESS) Release(p);
    return r;
  });
}
void HoldAllocations() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    const CUresult r = real(p, n, f);
    if (r == CUDA_SUCCESS && p && *p) Hold(*p, n, f, kTagHostAlloc);
    return r;
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    const CUresult r = real(p, n);
    if (r == CUDA_SUCCESS && p && *p) Hold(*p, n, 0, kTagAllocHost);
    return r;
  });
  HookMemFreeHost([](Real_MemFreeHost real, void* p) -> CUresult {
    const CUresult r = real(p);
    if (r == CUDA_SUCCESS && p) Release(p);
    return r;
  });
}

// R95 / R130 / R151: an older driver (r535, r550) refuses RANGE_START_ADDR and RANGE_SIZE for a
// byte of a registration: cuPointerGetAttribute answers CUDA_ERROR_INVALID_VALUE, and
// cuPointerGetAttributes, which "will not return an error", assigns those slots NULL.
// Allocations, device memory and every other attribute keep the driver's answers.
void InstallRegisterRangeAttributeInvalidValue() {
  HoldRegistrations();
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    if (!v || !IsRange(a) || !InRegistration(p)) return real(v, a, p);
    uint64_t answer = 0;  // the driver is still asked (its own errors come first); the caller's
    const CUresult r = real(&answer, a, p);  // output is left as it was
    if (r != CUDA_SUCCESS) return r;
    NoteChanged("RANGE_START_ADDR / RANGE_SIZE of a registration refused");
    return CUDA_ERROR_INVALID_VALUE;
  });
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    const CUresult r = real(n, a, d, p);
    if (r != CUDA_SUCCESS || !a || !d || !InRegistration(p)) return r;
    for (unsigned i = 0; i < n; ++i) {
      if (!d[i] || !IsRange(a[i]) || ReadSlot(d[i], a[i]) == 0) continue;
      NoteChanged("RANGE_START_ADDR / RANGE_SIZE of a registration NULL (cuPointerGetAttributes)");
      WriteSlot(d[i], a[i], 0);
    }
    return r;
  });
}

// ---------------------------------------------------------------------------------------------
// Host atomics and managed-memory hints.

// The operations a native host link carries (PCIe's FetchAdd, Swap and CAS): integer add,
// exchange and compare-and-swap, signed and unsigned, 32 and 64 bits. Every other operation: 0.
unsigned BasicAtomicMask(CUatomicOperation op) {
  const bool basic = op == CU_ATOMIC_OPERATION_INTEGER_ADD || op == CU_ATOMIC_OPERATION_EXCHANGE ||
                     op == CU_ATOMIC_OPERATION_CAS;
  return basic ? CU_ATOMIC_CAPABILITY_SIGNED | CU_ATOMIC_CAPABILITY_UNSIGNED |
                     CU_ATOMIC_CAPABILITY_SCALAR_32 | CU_ATOMIC_CAPABILITY_SCALAR_64
               : 0u;
}

// R109: a link with native host atomics (attribute 86 = 1, 147 = 0) that carries the basic
// operations only: cuDeviceGetHostAtomicCapabilities gives add, exchange and CAS a mask and every
// other operation none. Calls the driver refuses (a count of 0, an unknown operation) are left.
void InstallHostAtomicsNativeBasicOnly() {
  AnswerAttributes(kNativeAtomics);
  HookDeviceGetHostAtomicCapabilities([](Real_DeviceGetHostAtomicCapabilities real, unsigned* c,
                                         const CUatomicOperation* ops, unsigned n,
                                         CUdevice d) -> CUresult {
    const CUresult r = real(c, ops, n, d);
    if (r != CUDA_SUCCESS || !c || !ops) return r;
    for (unsigned i = 0; i < n; ++i) {
      if (c[i] == BasicAtomicMask(ops[i])) continue;
      NoteChanged("host atomic masks of a link carrying add, exchange and CAS");
      c[i] = BasicAtomicMask(ops[i]);
    }
    return r;
  });
}

// A non-empty range whose first and last byte are page-locked host memory.
bool PageLockedRange(CUdeviceptr p, size_t n) {
  return p && n && p + n > p && IsPinnedHost(reinterpret_cast<void*>(p)) &&
         IsPinnedHost(reinterpret_cast<void*>(p + n - 1));
}
// A host location as each call defines one: cuMemPrefetchAsync and SET_PREFERRED_LOCATION take
// HOST, HOST_NUMA (a node id) and HOST_NUMA_CURRENT; SET_ACCESSED_BY / UNSET_ACCESSED_BY HOST
// only ("All other location types are invalid"). The other advice ignores the location.
bool HostLocation(CUmemLocation l, bool numa) {
  return l.type == CU_MEM_LOCATION_TYPE_HOST ||
         (numa && (l.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT ||
                   (l.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && l.id >= 0)));
}
bool AdviceToHost(CUmem_advise a, CUmemLocation l) {
  if (a == CU_MEM_ADVISE_SET_PREFERRED_LOCATION) return HostLocation(l, true);
  if (a == CU_MEM_ADVISE_SET_ACCESSED_BY || a == CU_MEM_ADVISE_UNSET_ACCESSED_BY)
    return HostLocation(l, false);
  return false;
}
CUmemLocation Legacy(CUdevice d) {
  CUmemLocation l{};
  l.type = d == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
  l.id = d == CU_DEVICE_CPU ? 0 : d;
  return l;
}
// r580's INVALID_VALUE for a hint on page-locked memory toward the host becomes INVALID_DEVICE.
CUresult HostLocationRefused(CUresult r, bool to_host, CUdeviceptr p, size_t n, const char* what) {
  if (r != CUDA_ERROR_INVALID_VALUE || !to_host || !PageLockedRange(p, n)) return r;
  NoteChanged(what);
  return CUDA_ERROR_INVALID_DEVICE;
}

// R143: on an HMM or ATS host, page-locked memory is system-allocated memory the driver may
// refuse a hint on, and it says so for a host location with CUDA_ERROR_INVALID_DEVICE (r580:
// INVALID_VALUE). Both ABIs of cuMemAdvise (the advice that takes a location) and
// cuMemPrefetchAsync (flags 0); device locations, other advice and other memory are left.
void InstallAdviseInvalidDeviceForHostLocation() {
  HookMemAdvise([](Real_MemAdvise real, CUdeviceptr p, size_t n, CUmem_advise a,
                   CUdevice d) -> CUresult {
    return HostLocationRefused(real(p, n, a, d), AdviceToHost(a, Legacy(d)), p, n,
                               "cuMemAdvise toward the host: INVALID_DEVICE");
  });
  HookMemAdvise12([](Real_MemAdvise12 real, CUdeviceptr p, size_t n, CUmem_advise a,
                     CUmemLocation l) -> CUresult {
    return HostLocationRefused(real(p, n, a, l), AdviceToHost(a, l), p, n,
                               "cuMemAdvise toward the host: INVALID_DEVICE");
  });
  HookMemPrefetchAsync([](Real_MemPrefetchAsync real, CUdeviceptr p, size_t n, CUdevice d,
                          CUstream s) -> CUresult {
    return HostLocationRefused(real(p, n, d, s), HostLocation(Legacy(d), true), p, n,
                               "cuMemPrefetchAsync to the host: INVALID_DEVICE");
  });
  HookMemPrefetchAsync12([](Real_MemPrefetchAsync12 real, CUdeviceptr p, size_t n,
                            CUmemLocation l, unsigned f, CUstream s) -> CUresult {
    return HostLocationRefused(real(p, n, l, f, s), f == 0 && HostLocation(l, true), p, n,
                               "cuMemPrefetchAsync to the host: INVALID_DEVICE");
  });
}

// ---------------------------------------------------------------------------------------------
// A driver of another branch, without r580's known deviations.

constexpr unsigned kOwnBits = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_WRITECOMBINED;

// r58 and r56-portable absent, r151 absent (NullForUnknownByte): cuMemHostGetFlags fails with
// INVALID_VALUE on registered memory (r580: CUDA_SUCCESS, 0x2) and reports a pinned allocation's
// own Portable and WriteCombined bits (r580: those of the allocation that opened its chunk);
// the other bits are the driver's (Mapped, implied under unified addressing). The runs set
// PAGELOCK_DEVIATIONS=none (the row's env), so the suite excuses nothing.
void InstallWithoutR580Deviations() {
  HoldRegistrations();
  HoldAllocations();
  HookPointerGetAttributes(&NullForUnknownByte);
  HookMemHostGetFlags([](Real_MemHostGetFlags real, unsigned* f, void* p) -> CUresult {
    const CUresult r = real(f, p);
    Held h;
    if (r != CUDA_SUCCESS || !f || !FindHeld(Ptr(p), &h)) return r;
    if (h.tag == kTagRegistered) {
      NoteChanged("cuMemHostGetFlags of registered memory: INVALID_VALUE");
      return CUDA_ERROR_INVALID_VALUE;
    }
    const unsigned own = (*f & ~kOwnBits) | (h.flags & kOwnBits);
    if (own != *f) NoteChanged("cuMemHostGetFlags reports the allocation's own bits");
    *f = own;
    return r;
  });
}

const Fault kVariations[] = {
    PL_SCOPED_VARIATION(
        24, "host_link_c2c_ats", "R106,R43,P04,P07,P08,P09,P13,P14", "platform", "capability",
        "The device reaches the host over NVLink-C2C with ATS: attributes 100 "
        "(PageableMemoryAccessUsesHostPageTables) and 88 (PageableMemoryAccess) read 1 (H200: 0).",
        InstallHostLinkC2cAts,
        "CUDA Programming Guide 2.4: \"Address Translation Services (ATS) - A hardware feature, "
        "available when GPUs are connected to the CPU by the NVLink Chip-to-Chip (C2C) "
        "interconnect\"; attribute 100: \"Device accesses pageable memory via the host's page "
        "tables\" (rules.tsv R106: only beside 88 = 1); docs/platform-gates.md 3",
        "",
        "CapabilityConsistencyTest.PageableMemoryAccessAgreesWithAKernelReadingMallocMemory: R107, "
        "the H200 cannot read malloc memory whatever attribute 88 says; "
        "HostRegisterGateTest.AtsSystemsRegisterAndAllocateWithoutPinning: R84, attribute 86 stays "
        "the H200's 0 (answering 1 would send the atomics suite's host races over a link without "
        "native atomics)",
        ""),
    PL_SCOPED_VARIATION(
        25, "heap_byte_known_with_pageable_access", "R151", "interior", "capability",
        "Attribute 88 reads 1 and cuPointerGetAttribute(s) describe a heap byte nobody registered "
        "as host memory (MEMORY_TYPE HOST, HOST_POINTER itself, its page as the range), the same "
        "in both calls (r580: INVALID_VALUE, the batch's defaults).",
        InstallHeapByteKnownWithPageableAccess,
        "13.0 cuPointerGetAttribute: CUDA_ERROR_INVALID_VALUE \"If ptr was not allocated by, "
        "mapped by, or registered with a CUcontext which uses unified virtual addressing\"; "
        "nothing says how pageable memory is described where the device \"supports coherently "
        "accessing pageable memory without calling cudaHostRegister on it\" (attribute 88); "
        "docs/platform-gates.md 9",
        "^//suites/interior:", "", ""),
    PL_SCOPED_VARIATION(
        26, "host_atomics_native_basic_only", "R109", "platform", "capability",
        "Attribute 86 reads 1, 147 reads 0, and cuDeviceGetHostAtomicCapabilities gives integer "
        "add, exchange and CAS a mask (signed, unsigned, 32 and 64 bits) and every other "
        "operation none (H200: 86 = 0, every mask 0).",
        InstallHostAtomicsNativeBasicOnly,
        "13.0 attribute 86: \"Link between the device and the host supports native atomic "
        "operations\"; neither it, 147 nor cuDeviceGetHostAtomicCapabilities lists the operations "
        "(rules.tsv R109); docs/platform-gates.md 12",
        "^//suites/platform:capability_consistency_test$", "", ""),
    PL_SCOPED_VARIATION(
        27, "register_range_attribute_invalid_value", "R95,R130,R151", "interior", "code",
        "RANGE_START_ADDR and RANGE_SIZE of a byte of a registration: cuPointerGetAttribute "
        "answers INVALID_VALUE and cuPointerGetAttributes assigns NULL (an r535/r550-like driver; "
        "r580: the registration's range).",
        InstallRegisterRangeAttributeInvalidValue,
        "13.0 RANGE_START_ADDR: \"the starting address for the allocation referenced by the "
        "device pointer ptr\" (registrations are not named); cuPointerGetAttributes: \"the "
        "attributes are assigned default NULL values\"; docs/platform-gates.md 13",
        "", "", ""),
    PL_SCOPED_VARIATION(
        28, "advise_invalid_device_for_host_location", "R143", "mapped", "code",
        "cuMemAdvise (a location's advice) and cuMemPrefetchAsync on page-locked memory toward the "
        "host fail with INVALID_DEVICE (r580: INVALID_VALUE).",
        InstallAdviseInvalidDeviceForHostLocation,
        "13.0 cuMemAdvise / cuMemPrefetchAsync return CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE, "
        "CUDA_ERROR_INVALID_DEVICE with no condition; cuMemAdvise: \"Specifying an invalid "
        "system-allocated pageable memory range results in an error being returned\"; "
        "docs/platform-gates.md 8",
        "", "", ""),
    PL_SCOPED_VARIATION(
        29, "unknown_pointer_all_null", "R151", "interior", "code",
        "cuPointerGetAttributes of a byte no context knows assigns NULL to every slot, "
        "HOST_POINTER and the range included (r580: the byte's address, range slots unwritten).",
        InstallUnknownPointerAllNull,
        "13.0 cuPointerGetAttributes: \"Unlike ::cuPointerGetAttribute, this function will not "
        "return an error when the ptr encountered is not a valid CUDA pointer. Instead, the "
        "attributes are assigned default NULL values and CUDA_SUCCESS is returned.\"",
        "", "", ""),
    PL_SCOPED_VARIATION(
        30, "driver_without_r580_deviations", "R56,R58,R151,R130", "hostalloc", "code",
        "A driver of another branch, judged strictly: cuMemHostGetFlags fails on registered "
        "memory and reports each allocation's own Portable and WriteCombined bits, "
        "cuPointerGetAttributes gives an unknown byte NULL slots; its runs set "
        "PAGELOCK_DEVIATIONS=none (r580: the r58, r56-portable and r151 deviations, excused).",
        InstallWithoutR580Deviations,
        "13.0 cuMemHostGetFlags: \"the flags that were specified when allocating the pinned host "
        "buffer\" (rules.tsv R56, R58); cuPointerGetAttributes: \"default NULL values\" (R151); "
        "expectations/common.txt keys r58, r56-portable and r151 to driver=580, so on another "
        "branch they are judged as the rule",
        "", "", "PAGELOCK_DEVIATIONS=none"),
};

}  // namespace

extern const Area kConformingPlatformsArea = VariationArea("conforming_platforms", kVariations);

}  // namespace pagelock_faults
