// Probes of the host VMM faults (catalogue/vmm_host.cc). The fake driver backs each allocation
// with a memfd file and maps it into reservations of its own (granule 64 KiB); the probe reads
// and writes the mappings directly, as the host does.
#include <string.h>
#include <unistd.h>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

constexpr size_t kGranule = size_t{64} << 10;  // the fake driver's
using Handle = CUmemGenericAllocationHandle;

struct Vmm {
  CUresult (*reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*create)(Handle*, size_t, const CUmemAllocationProp*, unsigned long long);
  CUresult (*release)(Handle);
  CUresult (*map)(CUdeviceptr, size_t, size_t, Handle, unsigned long long);
  CUresult (*unmap)(CUdeviceptr, size_t);
  CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
  CUresult (*get_access)(unsigned long long*, const CUmemLocation*, CUdeviceptr);
  CUresult (*retain)(Handle*, void*);
  CUresult (*props)(CUmemAllocationProp*, Handle);
  CUresult (*export_fd)(void*, Handle, CUmemAllocationHandleType, unsigned long long);
  CUresult (*import_fd)(Handle*, void*, CUmemAllocationHandleType);
  unsigned long long (*device_access)(uintptr_t);  // the fake's record: what the device was given
  bool Complete() const {
    return reserve && create && release && map && unmap && set_access && get_access && retain &&
           props && export_fd && import_fd && device_access;
  }
};

Vmm GetVmm() {
  Vmm v;
  v.reserve = Get<decltype(v.reserve)>("cuMemAddressReserve");
  v.create = Get<decltype(v.create)>("cuMemCreate");
  v.release = Get<decltype(v.release)>("cuMemRelease");
  v.map = Get<decltype(v.map)>("cuMemMap");
  v.unmap = Get<decltype(v.unmap)>("cuMemUnmap");
  v.set_access = Get<decltype(v.set_access)>("cuMemSetAccess");
  v.get_access = Get<decltype(v.get_access)>("cuMemGetAccess");
  v.retain = Get<decltype(v.retain)>("cuMemRetainAllocationHandle");
  v.props = Get<decltype(v.props)>("cuMemGetAllocationPropertiesFromHandle");
  v.export_fd = Get<decltype(v.export_fd)>("cuMemExportToShareableHandle");
  v.import_fd = Get<decltype(v.import_fd)>("cuMemImportFromShareableHandle");
  v.device_access = reinterpret_cast<decltype(v.device_access)>(FakeSymbol("fake_vmm_device_access"));
  return v;
}

CUmemAllocationProp Prop(CUmemLocationType where, int id, bool posix_fd) {
  CUmemAllocationProp p;
  memset(&p, 0, sizeof(p));
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = where;
  p.location.id = id;
  p.requestedHandleTypes = posix_fd ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
  return p;
}

// A new allocation of `granules` granules mapped into a reservation of its own (0 on failure).
CUdeviceptr MapNew(const Vmm& v, const CUmemAllocationProp& p, size_t granules, Handle* h) {
  CUdeviceptr at = 0;
  if (v.reserve(&at, granules * kGranule, 0, 0, 0) != CUDA_SUCCESS ||
      v.create(h, granules * kGranule, &p, 0) != CUDA_SUCCESS ||
      v.map(at, granules * kGranule, 0, *h, 0) != CUDA_SUCCESS)
    return 0;
  return at;
}

CUmemAccessDesc Access(CUmemLocationType who, int id, CUmemAccess_flags flags) {
  CUmemAccessDesc d;
  memset(&d, 0, sizeof(d));
  d.location.type = who;
  d.location.id = id;
  d.flags = flags;
  return d;
}

unsigned long long DeviceAccess(const Vmm& v, CUdeviceptr p) {
  CUmemLocation dev;
  dev.type = CU_MEM_LOCATION_TYPE_DEVICE;
  dev.id = 0;
  unsigned long long flags = 99;
  v.get_access(&flags, &dev, p);
  return flags;
}

unsigned char Pattern(size_t i, int salt) { return static_cast<unsigned char>((i + salt) % 251 + 1); }
void Fill(CUdeviceptr p, size_t n, int salt) {
  for (size_t i = 0; i < n; ++i) reinterpret_cast<unsigned char*>(p)[i] = Pattern(i, salt);
}
size_t Mismatches(CUdeviceptr p, size_t n, int salt) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += reinterpret_cast<unsigned char*>(p)[i] != Pattern(i, salt);
  return bad;
}

// vmm_host_map_grants_hidden_access: "access cuMemGetAccess reports for the device,access the
// device was given" right after cuMemMap, per location kind, and after a cuMemSetAccess.
int MapAccess() {
  const Vmm v = GetVmm();
  if (!v.Complete()) return 1;
  auto after_map = [&](CUmemLocationType where) {
    Handle h = 0;
    const CUdeviceptr p = MapNew(v, Prop(where, 0, false), 1, &h);
    if (!p) return std::string("map failed");
    return std::to_string(DeviceAccess(v, p)) + "," + std::to_string(v.device_access(p));
  };
  printf("vmm_map_access_host_numa=%s", after_map(CU_MEM_LOCATION_TYPE_HOST_NUMA).c_str());
  printf(" vmm_map_access_host=%s", after_map(CU_MEM_LOCATION_TYPE_HOST).c_str());
  printf(" vmm_map_access_device=%s", after_map(CU_MEM_LOCATION_TYPE_DEVICE).c_str());
  Handle h = 0;
  const CUdeviceptr p = MapNew(v, Prop(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0, false), 1, &h);
  const CUmemAccessDesc read = Access(CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READ);
  if (!p || v.set_access(p, kGranule, &read, 1) != CUDA_SUCCESS) return 1;
  printf(" vmm_map_access_after_set=%llu,%llu\n", DeviceAccess(v, p), v.device_access(p));
  return 0;
}

// vmm_host_release_frees_while_mapped: "release rc,bytes lost,handle the range retains (same or
// other),device access afterwards" for a mapped host allocation, a mapped device one, and the
// release of an unmapped one.
int ReleaseWhileMapped() {
  const Vmm v = GetVmm();
  if (!v.Complete()) return 1;
  auto released = [&](CUmemLocationType where) {
    Handle h = 0;
    const CUdeviceptr p = MapNew(v, Prop(where, 0, false), 2, &h);
    // The device, and the host through the allocation's own location kind.
    const CUmemLocationType host_kind =
        where == CU_MEM_LOCATION_TYPE_HOST ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_HOST_NUMA;
    const CUmemAccessDesc rw[] = {
        Access(CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE),
        Access(host_kind, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)};
    const size_t who = where == CU_MEM_LOCATION_TYPE_DEVICE ? 1 : 2;
    if (!p || v.set_access(p, 2 * kGranule, rw, who) != CUDA_SUCCESS) return std::string("map failed");
    Fill(p, 2 * kGranule, 1);
    const CUresult rc = v.release(h);
    const size_t lost = Mismatches(p, 2 * kGranule, 1);
    Handle again = 0;
    v.retain(&again, reinterpret_cast<void*>(p + kGranule));
    const unsigned long long access = DeviceAccess(v, p);
    v.unmap(p, 2 * kGranule);
    v.release(again);
    return std::to_string(rc) + "," + std::to_string(lost) + "," + (again == h ? "same" : "other") +
           "," + std::to_string(access);
  };
  printf("vmm_release_while_mapped=%s", released(CU_MEM_LOCATION_TYPE_HOST_NUMA).c_str());
  printf(" vmm_release_host_while_mapped=%s", released(CU_MEM_LOCATION_TYPE_HOST).c_str());
  printf(" vmm_release_device_while_mapped=%s", released(CU_MEM_LOCATION_TYPE_DEVICE).c_str());
  Handle h = 0;
  const CUmemAllocationProp host = Prop(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0, false);
  CUresult rc = v.create(&h, kGranule, &host, 0);
  printf(" vmm_release_unmapped=%d,%d\n", rc, v.release(h));
  return 0;
}

// vmm_host_numa_id_ignored: "create rc,location type,NUMA id" the handle's properties report.
int NumaId() {
  const Vmm v = GetVmm();
  if (!v.Complete()) return 1;
  auto created = [&](CUmemLocationType where, int id) {
    Handle h = 0;
    const CUmemAllocationProp p = Prop(where, id, false);
    CUmemAllocationProp got;
    memset(&got, 0, sizeof(got));
    CUresult rc = v.create(&h, kGranule, &p, 0);
    if (rc == CUDA_SUCCESS) v.props(&got, h);
    if (rc == CUDA_SUCCESS) v.release(h);
    return std::to_string(rc) + "," + std::to_string(got.location.type) + "," +
           std::to_string(got.location.id);
  };
  printf("vmm_numa_node1=%s vmm_numa_node0=%s vmm_host_node=%s\n",
         created(CU_MEM_LOCATION_TYPE_HOST_NUMA, 1).c_str(),
         created(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0).c_str(),
         created(CU_MEM_LOCATION_TYPE_HOST, 1).c_str());
  return 0;
}

// vmm_host_import_maps_other_pages: "import rc,map rc,exporter's bytes the importer misses,
// importer's bytes the exporter misses" through an exported POSIX fd (in one process); and the
// exporter's own handle (retained from its mapping) mapped a second time: "map rc,bytes missed
// each way between the two mappings".
int ImportMapsOtherPages() {
  const Vmm v = GetVmm();
  if (!v.Complete()) return 1;
  Handle h = 0, imported = 0, own = 0;
  const CUdeviceptr a = MapNew(v, Prop(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0, true), 1, &h);
  CUdeviceptr b = 0, c = 0;
  int fd = -1;
  if (!a || v.reserve(&b, kGranule, 0, 0, 0) != CUDA_SUCCESS ||
      v.reserve(&c, kGranule, 0, 0, 0) != CUDA_SUCCESS ||
      v.export_fd(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) != CUDA_SUCCESS)
    return 1;
  Fill(a, kGranule, 2);
  const CUresult import_rc = v.import_fd(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  close(fd);
  const CUresult map_rc = v.map(b, kGranule, 0, imported, 0);
  const size_t importer_misses = map_rc == CUDA_SUCCESS ? Mismatches(b, kGranule, 2) : kGranule;
  if (map_rc == CUDA_SUCCESS) Fill(b, kGranule, 3);
  printf("vmm_import=%d,%d,%zu,%zu", import_rc, map_rc, importer_misses, Mismatches(a, kGranule, 3));
  v.retain(&own, reinterpret_cast<void*>(a));
  Fill(a, kGranule, 4);
  const CUresult own_rc = v.map(c, kGranule, 0, own, 0);
  const size_t second_misses = own_rc == CUDA_SUCCESS ? Mismatches(c, kGranule, 4) : kGranule;
  if (own_rc == CUDA_SUCCESS) Fill(c, kGranule, 5);
  printf(" vmm_second_map_of_own=%d,%zu,%zu\n", own_rc, second_misses, Mismatches(a, kGranule, 5));
  return 0;
}

// vmm_host_remap_replaces_mapping: "map rc,bytes of the first mapping lost" for a map over a
// mapped host range; "map rc" into a free reservation.
int RemapOverMapping() {
  const Vmm v = GetVmm();
  if (!v.Complete()) return 1;
  Handle first = 0, second = 0;
  const CUmemAllocationProp host = Prop(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0, false);
  const CUdeviceptr a = MapNew(v, host, 1, &first);
  CUdeviceptr free_range = 0;
  if (!a || v.create(&second, kGranule, &host, 0) != CUDA_SUCCESS ||
      v.reserve(&free_range, kGranule, 0, 0, 0) != CUDA_SUCCESS)
    return 1;
  Fill(a, kGranule, 5);
  const CUresult rc = v.map(a, kGranule, 0, second, 0);
  printf("vmm_map_over_mapping=%d,%zu", rc, Mismatches(a, kGranule, 5));
  printf(" vmm_map_free_range=%d\n", v.map(free_range, kGranule, 0, second, 0));
  return 0;
}

// vmm_host_copy_stops_at_granule: "rc,mismatches" of copies into and out of a two-granule host
// mapping, inside one granule, and into a device-located mapping.
int CopyAcrossGranules() {
  auto copy = Get<CUresult (*)(CUdeviceptr, CUdeviceptr, size_t)>("cuMemcpy");
  auto copy_async = Get<CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream)>("cuMemcpyAsync");
  auto dtoh = Get<CUresult (*)(void*, CUdeviceptr, size_t)>("cuMemcpyDtoH");
  const Vmm v = GetVmm();
  if (!copy || !copy_async || !dtoh || !v.Complete()) return 1;
  static unsigned char src[2 * kGranule], out[2 * kGranule];
  const CUdeviceptr s = reinterpret_cast<CUdeviceptr>(src);
  Handle h = 0, hd = 0;
  const CUdeviceptr host = MapNew(v, Prop(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0, false), 2, &h);
  const CUdeviceptr dev = MapNew(v, Prop(CU_MEM_LOCATION_TYPE_DEVICE, 0, false), 2, &hd);
  if (!host || !dev) return 1;
  auto into = [&](CUdeviceptr dst, size_t off, size_t n, auto&& call) {
    Fill(s, sizeof(src), 6);
    memset(reinterpret_cast<void*>(dst), 0, 2 * kGranule);
    CUresult rc = call(dst + off, s + off, n);
    size_t bad = 0;
    for (size_t i = off; i < off + n; ++i) bad += reinterpret_cast<unsigned char*>(dst)[i] != src[i];
    return std::to_string(rc) + "," + std::to_string(bad);
  };
  auto async = [&](CUdeviceptr d, CUdeviceptr from, size_t n) { return copy_async(d, from, n, kBlocking); };
  printf("vmm_copy_in_async=%s", into(host, 0, 2 * kGranule, async).c_str());
  printf(" vmm_copy_in_sync=%s", into(host, 4096, kGranule, copy).c_str());
  printf(" vmm_copy_inside_granule=%s", into(host, 100, 1000, async).c_str());
  printf(" vmm_copy_device_mapping=%s", into(dev, 0, 2 * kGranule, async).c_str());
  Fill(host, 2 * kGranule, 7);
  memset(out, 0, sizeof(out));
  CUresult rc = dtoh(out, host, 2 * kGranule);
  printf(" vmm_copy_out=%d,%zu\n", rc, Mismatches(reinterpret_cast<CUdeviceptr>(out), 2 * kGranule, 7));
  return 0;
}

const Probe kProbes[] = {
    {"vmm_host_map_grants_hidden_access", MapAccess},
    {"vmm_host_release_frees_while_mapped", ReleaseWhileMapped},
    {"vmm_host_numa_id_ignored", NumaId},
    {"vmm_host_import_maps_other_pages", ImportMapsOtherPages},
    {"vmm_host_remap_replaces_mapping", RemapOverMapping},
    {"vmm_host_copy_stops_at_granule", CopyAcrossGranules},
};

}  // namespace

extern const ProbeArea kVmmHostProbes = Probes("vmm_host", kProbes);

}  // namespace probes
