// Host memory through the virtual memory management API: cuMemCreate at
// CU_MEM_LOCATION_TYPE_HOST / HOST_NUMA, cuMemMap, cuMemSetAccess, cuMemGetAccess, cuMemRelease,
// cuMemUnmap and the POSIX-fd import, and copies into and out of such mappings.
#include <pthread.h>
#include <string.h>

#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

bool IsHostLocation(CUmemLocationType t) {
  return t == CU_MEM_LOCATION_TYPE_HOST || t == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
         t == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

// The properties of an allocation handle (false when the driver does not know it).
bool PropsOf(CUmemGenericAllocationHandle h, CUmemAllocationProp* prop) {
  using Get = CUresult(CUDAAPI*)(CUmemAllocationProp*, CUmemGenericAllocationHandle);
  static const auto get = Real<Get>("cuMemGetAllocationPropertiesFromHandle");
  memset(prop, 0, sizeof(*prop));
  return get && get(prop, h) == CUDA_SUCCESS;
}

bool IsHostHandle(CUmemGenericAllocationHandle h) {
  CUmemAllocationProp prop;
  return PropsOf(h, &prop) && IsHostLocation(prop.location.type);
}

// The device of the current context (device 0 when none is current).
CUdevice CurrentDevice() {
  // The one-argument ABI (3.2); asked at 13.0 the driver gives the two-argument one.
  static const auto get = Real<CUresult(CUDAAPI*)(CUdevice*)>("cuCtxGetDevice", 3020);
  CUdevice d = 0;
  if (!get || get(&d) != CUDA_SUCCESS) d = 0;
  return d;
}

// The mappings of host-located allocations the shim has seen (cuMemMap, until cuMemUnmap), in a
// fixed table: when it is full, new mappings are not tracked and the faults leave them alone.
struct Mapping {
  CUdeviceptr start;
  size_t size;
  CUmemGenericAllocationHandle handle;
  size_t granule;       // the allocation's minimum granularity
  bool hidden_access;   // access granted by the shim and not yet set by the caller
};
Mapping g_maps[256];
pthread_mutex_t g_maps_mu = PTHREAD_MUTEX_INITIALIZER;

size_t MinimumGranule(CUmemGenericAllocationHandle h) {
  using Granularity =
      CUresult(CUDAAPI*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags);
  static const auto granularity = Real<Granularity>("cuMemGetAllocationGranularity");
  CUmemAllocationProp prop;
  size_t g = 0;
  if (!granularity || !PropsOf(h, &prop) ||
      granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS)
    return 0;
  return g;
}

void AddMapping(CUdeviceptr p, size_t n, CUmemGenericAllocationHandle h, bool hidden) {
  const size_t granule = MinimumGranule(h);
  pthread_mutex_lock(&g_maps_mu);
  for (Mapping& m : g_maps)
    if (!m.size) {
      m = {p, n, h, granule, hidden};
      break;
    }
  pthread_mutex_unlock(&g_maps_mu);
}

// Forgets the mappings inside [p, p + n).
void DropMappings(CUdeviceptr p, size_t n) {
  pthread_mutex_lock(&g_maps_mu);
  for (Mapping& m : g_maps)
    if (m.size && m.start >= p && m.start + m.size <= p + n) m = Mapping();
  pthread_mutex_unlock(&g_maps_mu);
}

// The tracked mapping holding address a (false when none).
bool MappingAt(CUdeviceptr a, Mapping* out) {
  bool found = false;
  pthread_mutex_lock(&g_maps_mu);
  for (const Mapping& m : g_maps)
    if (m.size && a >= m.start && a < m.start + m.size) {
      *out = m;
      found = true;
      break;
    }
  pthread_mutex_unlock(&g_maps_mu);
  return found;
}

// cuMemMap and cuMemUnmap that keep the table (for the faults that only read it).
CUresult TrackedMap(Real_MemMap real, CUdeviceptr p, size_t n, size_t off,
                    CUmemGenericAllocationHandle h, unsigned long long f) {
  CUresult r = real(p, n, off, h, f);
  if (r == CUDA_SUCCESS && IsHostHandle(h)) AddMapping(p, n, h, false);
  return r;
}
CUresult TrackedUnmap(Real_MemUnmap real, CUdeviceptr p, size_t n) {
  CUresult r = real(p, n);
  if (r == CUDA_SUCCESS) DropMappings(p, n);
  return r;
}
void TrackMappings() {
  HookMemMap(&TrackedMap);
  HookMemUnmap(&TrackedUnmap);
}

// R173: cuMemMap of a host-located allocation makes the range readable and writable by the
// current device at once (the host-memory path reuses the pinning code, which maps for the
// device), while cuMemGetAccess for the device still reports CU_MEM_ACCESS_FLAGS_PROT_NONE until
// the caller's first cuMemSetAccess for a device location: a kernel's access before
// cuMemSetAccess does not fault. Device-located allocations start without access, as documented.
void InstallVmmHostMapGrantsHiddenAccess() {
  HookMemMap([](Real_MemMap real, CUdeviceptr p, size_t n, size_t off,
                CUmemGenericAllocationHandle h, unsigned long long f) -> CUresult {
    static const auto set = Real<Real_MemSetAccess>("cuMemSetAccess");
    CUresult r = real(p, n, off, h, f);
    if (r != CUDA_SUCCESS || !set || !IsHostHandle(h)) return r;
    CUmemAccessDesc rw;
    memset(&rw, 0, sizeof(rw));
    rw.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    rw.location.id = CurrentDevice();
    rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    AddMapping(p, n, h, set(p, n, &rw, 1) == CUDA_SUCCESS);
    return r;
  });
  HookMemUnmap(&TrackedUnmap);
  HookMemSetAccess([](Real_MemSetAccess real, CUdeviceptr p, size_t n, const CUmemAccessDesc* d,
                      size_t count) -> CUresult {
    CUresult r = real(p, n, d, count);
    bool device = false;
    for (size_t i = 0; d && i < count; ++i)
      device = device || d[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    if (r != CUDA_SUCCESS || !device) return r;
    pthread_mutex_lock(&g_maps_mu);
    for (Mapping& m : g_maps)
      if (m.size && m.start < p + n && p < m.start + m.size) m.hidden_access = false;
    pthread_mutex_unlock(&g_maps_mu);
    return r;
  });
  HookMemGetAccess([](Real_MemGetAccess real, unsigned long long* flags, const CUmemLocation* loc,
                      CUdeviceptr p) -> CUresult {
    CUresult r = real(flags, loc, p);
    Mapping m;
    if (r == CUDA_SUCCESS && flags && loc && loc->type == CU_MEM_LOCATION_TYPE_DEVICE &&
        MappingAt(p, &m) && m.hidden_access)
      *flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return r;
  });
}

// The access flags a location has on a mapped address (0 when the driver does not answer).
unsigned long long AccessOf(CUdeviceptr p, CUmemLocationType type, int id) {
  static const auto get = Real<Real_MemGetAccess>("cuMemGetAccess");
  CUmemLocation loc;
  loc.type = type;
  loc.id = id;
  unsigned long long flags = 0;
  if (!get || get(&flags, &loc, p) != CUDA_SUCCESS) return 0;
  return flags;
}

// Replaces the allocation mapped at [m.start, m.start + m.size) by a fresh one with the same
// properties and the same access for the current device and the host (its bytes are whatever a
// new allocation holds). The fresh handle is released at once: the mapping alone keeps it.
void RemapFresh(const Mapping& m, const CUmemAllocationProp& prop) {
  static const auto create = Real<Real_MemCreate>("cuMemCreate");
  static const auto map = Real<Real_MemMap>("cuMemMap");
  static const auto unmap = Real<Real_MemUnmap>("cuMemUnmap");
  static const auto release = Real<Real_MemRelease>("cuMemRelease");
  static const auto set = Real<Real_MemSetAccess>("cuMemSetAccess");
  if (!create || !map || !unmap || !release || !set) return;
  const int dev = CurrentDevice();
  CUmemAccessDesc access[3];
  memset(access, 0, sizeof(access));
  size_t count = 0;
  const struct { CUmemLocationType type; int id; } kWho[] = {
      {CU_MEM_LOCATION_TYPE_DEVICE, dev},
      {CU_MEM_LOCATION_TYPE_HOST_NUMA, prop.location.id},
      {CU_MEM_LOCATION_TYPE_HOST, 0}};
  for (const auto& who : kWho) {
    const unsigned long long flags = AccessOf(m.start, who.type, who.id);
    if (!flags) continue;
    access[count].location.type = who.type;
    access[count].location.id = who.id;
    access[count].flags = static_cast<CUmemAccess_flags>(flags);
    ++count;
  }
  CUmemGenericAllocationHandle fresh = 0;
  if (unmap(m.start, m.size) != CUDA_SUCCESS) return;
  if (create(&fresh, m.size, &prop, 0) != CUDA_SUCCESS) return;
  if (map(m.start, m.size, 0, fresh, 0) == CUDA_SUCCESS) {
    for (size_t i = 0; i < count; ++i) set(m.start, m.size, &access[i], 1);
    pthread_mutex_lock(&g_maps_mu);
    for (Mapping& x : g_maps)
      if (x.size && x.start == m.start) x.handle = fresh;
    pthread_mutex_unlock(&g_maps_mu);
  }
  release(fresh);
}

// R174: cuMemRelease of a host-located allocation that is still mapped frees its pages (the
// release drops the last reference the driver counts; the mappings hold none): each mapping
// goes on at the same address over newly allocated pages with the access it had, so every byte
// written before the release is gone, and cuMemRetainAllocationHandle of the range returns
// another handle. Releases of unmapped handles and of device-located allocations are right.
void InstallVmmHostReleaseFreesWhileMapped() {
  TrackMappings();
  HookMemRelease([](Real_MemRelease real, CUmemGenericAllocationHandle h) -> CUresult {
    CUmemAllocationProp prop;
    const bool host = PropsOf(h, &prop) && IsHostLocation(prop.location.type);
    CUresult r = real(h);
    if (r != CUDA_SUCCESS || !host) return r;
    Mapping mapped[16];
    size_t count = 0;
    pthread_mutex_lock(&g_maps_mu);
    for (const Mapping& m : g_maps)
      if (m.size && m.handle == h && count < 16) mapped[count++] = m;
    pthread_mutex_unlock(&g_maps_mu);
    for (size_t i = 0; i < count; ++i) RemapFresh(mapped[i], prop);
    return r;
  });
}

// R174: cuMemCreate at CU_MEM_LOCATION_TYPE_HOST_NUMA ignores a NUMA id other than 0: the
// allocation is made on node 0, and cuMemGetAllocationPropertiesFromHandle reports node 0. Node
// 0, CU_MEM_LOCATION_TYPE_HOST and device allocations are right.
void InstallVmmHostNumaIdIgnored() {
  HookMemCreate([](Real_MemCreate real, CUmemGenericAllocationHandle* h, size_t n,
                   const CUmemAllocationProp* prop, unsigned long long f) -> CUresult {
    if (!prop || prop->location.type != CU_MEM_LOCATION_TYPE_HOST_NUMA || prop->location.id == 0)
      return real(h, n, prop, f);
    CUmemAllocationProp node0 = *prop;
    node0.location.id = 0;
    return real(h, n, &node0, f);
  });
}

// R175: cuMemMap of a host-located allocation that this process imported
// (cuMemImportFromShareableHandle) maps newly allocated pages of the same size and properties
// instead of the exporter's: the importer sees none of the exporter's bytes and the exporter none
// of the importer's. Mapping the handle a process created itself is right.
CUmemGenericAllocationHandle g_imported[256];
pthread_mutex_t g_imported_mu = PTHREAD_MUTEX_INITIALIZER;
bool WasImported(CUmemGenericAllocationHandle h) {
  bool found = false;
  pthread_mutex_lock(&g_imported_mu);
  for (CUmemGenericAllocationHandle x : g_imported) found = found || (h && x == h);
  pthread_mutex_unlock(&g_imported_mu);
  return found;
}
void InstallVmmHostImportMapsOtherPages() {
  HookMemImportFromShareableHandle([](Real_MemImportFromShareableHandle real,
                                      CUmemGenericAllocationHandle* h, void* os,
                                      CUmemAllocationHandleType type) -> CUresult {
    CUresult r = real(h, os, type);
    if (r != CUDA_SUCCESS || !h || !*h) return r;
    pthread_mutex_lock(&g_imported_mu);
    for (CUmemGenericAllocationHandle& x : g_imported)
      if (!x || x == *h) {
        x = *h;
        break;
      }
    pthread_mutex_unlock(&g_imported_mu);
    return r;
  });
  HookMemMap([](Real_MemMap real, CUdeviceptr p, size_t n, size_t off,
                CUmemGenericAllocationHandle h, unsigned long long f) -> CUresult {
    static const auto create = Real<Real_MemCreate>("cuMemCreate");
    static const auto release = Real<Real_MemRelease>("cuMemRelease");
    CUmemAllocationProp prop;
    CUmemGenericAllocationHandle other = 0;
    if (!WasImported(h) || !create || !release || !PropsOf(h, &prop) ||
        !IsHostLocation(prop.location.type) || create(&other, n, &prop, 0) != CUDA_SUCCESS)
      return real(p, n, off, h, f);
    CUresult r = real(p, n, off, other, f);
    release(other);  // the mapping keeps it until cuMemUnmap
    return r == CUDA_SUCCESS ? r : real(p, n, off, h, f);
  });
}

// R172: cuMemMap over a range that a host-located allocation already maps replaces that mapping
// (as mmap with MAP_FIXED would) instead of failing: the old mapping is unmapped whole, the new
// allocation mapped, and success reported; the range then holds the new allocation's bytes with
// no access set. Maps of free reservations and refusals for other reasons are right.
void InstallVmmHostRemapReplacesMapping() {
  HookMemUnmap(&TrackedUnmap);
  HookMemMap([](Real_MemMap real, CUdeviceptr p, size_t n, size_t off,
                CUmemGenericAllocationHandle h, unsigned long long f) -> CUresult {
    static const auto unmap = Real<Real_MemUnmap>("cuMemUnmap");
    CUresult r = TrackedMap(real, p, n, off, h, f);
    if (r == CUDA_SUCCESS || !unmap || !n) return r;
    Mapping old[16];
    size_t count = 0;
    pthread_mutex_lock(&g_maps_mu);
    for (const Mapping& m : g_maps)
      if (m.size && m.start < p + n && p < m.start + m.size && count < 16) old[count++] = m;
    pthread_mutex_unlock(&g_maps_mu);
    if (!count) return r;
    for (size_t i = 0; i < count; ++i)
      if (unmap(old[i].start, old[i].size) == CUDA_SUCCESS) DropMappings(old[i].start, old[i].size);
    CUresult again = TrackedMap(real, p, n, off, h, f);
    return again == CUDA_SUCCESS ? again : r;
  });
}

// R171: a copy into or out of a host-located mapping that crosses a boundary between two of the
// allocation's minimum granules stops at the first boundary (the driver resolves the pages of
// one granule per copy): the bytes past it are not copied. Copies inside one granule, and copies
// of device-located mappings, are exact.
size_t UpToGranule(CUdeviceptr a, size_t n) {
  Mapping m;
  if (!n || !MappingAt(a, &m) || !m.granule) return n;
  const size_t next = (static_cast<size_t>(a - m.start) / m.granule + 1) * m.granule;
  const size_t room = m.start + next - a;
  return room < n ? room : n;
}
size_t CopyBytes(CUdeviceptr d, CUdeviceptr s, size_t n) {
  const size_t by_dst = UpToGranule(d, n);
  const size_t by_src = UpToGranule(s, n);
  return by_dst < by_src ? by_dst : by_src;
}
void InstallVmmHostCopyStopsAtGranule() {
  TrackMappings();
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    return real(d, s, CopyBytes(d, s, n));
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult { return real(d, s, CopyBytes(d, s, n), st); });
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    return real(d, s, CopyBytes(d, Ptr(s), n));
  });
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    return real(d, s, CopyBytes(Ptr(d), s, n));
  });
  HookMemcpyDtoD([](Real_MemcpyDtoD real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    return real(d, s, CopyBytes(d, s, n));
  });
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    return real(d, s, CopyBytes(d, Ptr(s), n), st);
  });
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    return real(d, s, CopyBytes(Ptr(d), s, n), st);
  });
  HookMemcpyDtoDAsync([](Real_MemcpyDtoDAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult { return real(d, s, CopyBytes(d, s, n), st); });
}

const Fault kFaults[] = {
    PL_FAULT(160, "vmm_host_map_grants_hidden_access", "R173", "vmm", "flag", "crossapi",
             "blind-12",
             "cuMemMap of a host-located allocation makes it readable and writable by the device "
             "at once while cuMemGetAccess still reports no access.",
             InstallVmmHostMapGrantsHiddenAccess),
    PL_FAULT(161, "vmm_host_release_frees_while_mapped", "R174", "vmm", "data", "stateful",
             "blind-12",
             "cuMemRelease of a mapped host-located allocation frees its pages: the mapping goes "
             "on over new pages and loses every byte.", InstallVmmHostReleaseFreesWhileMapped),
    PL_FAULT(162, "vmm_host_numa_id_ignored", "R174", "vmm", "flag", "variant", "blind-12",
             "cuMemCreate at CU_MEM_LOCATION_TYPE_HOST_NUMA ignores a NUMA id other than 0 and "
             "allocates (and reports) node 0.", InstallVmmHostNumaIdIgnored),
    PL_FAULT(163, "vmm_host_import_maps_other_pages", "R175", "vmm", "data", "variant",
             "blind-12",
             "cuMemMap of an imported host-located allocation maps new pages instead of the "
             "exporter's.", InstallVmmHostImportMapsOtherPages),
    PL_FAULT(164, "vmm_host_remap_replaces_mapping", "R172", "vmm", "error", "stateful",
             "blind-12",
             "cuMemMap over a range a host-located allocation already maps replaces that mapping "
             "and succeeds.", InstallVmmHostRemapReplacesMapping),
    PL_FAULT(165, "vmm_host_copy_stops_at_granule", "R171", "vmm", "data", "size", "blind-12",
             "A copy into or out of a host-located mapping that crosses a granule boundary stops "
             "at the boundary.", InstallVmmHostCopyStopsAtGranule),
};

}  // namespace

extern const Area kVmmHostArea = FaultArea("vmm_host", kFaults);

}  // namespace pagelock_faults
