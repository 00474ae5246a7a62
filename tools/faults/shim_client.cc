// Drives a libcuda.so.1 (the shim or the fake driver) for the shim's CPU tests, the way the CUDA
// runtime does: dlopen("libcuda.so.1"), then cuGetProcAddress_v2 for every function.
//   shim_client run         prints key=value lines: what each call returned and what it did
//   shim_client catalogue   prints the built fault catalogue as TSV, every field of every row
//                           (order name rule family kind shape batch blind entries description)
//   shim_client conforming  prints the conforming variations as TSV (order name rule family kind
//                           entries description justification targets excluded env)
//   shim_client batches     prints the batches the faults came in as TSV (batch blind how)
//   shim_client variations  prints key=value lines for the calls the conforming variations change
//   shim_client probe [AREA...]  prints key=value lines for calls inside and beside the triggers
//                           of the faults that have probes (probes/<area>.cc), every area or those
//                           named
// SHIM_CLIENT_LIB names the library (default: libcuda.so.1 through LD_LIBRARY_PATH).
// Exit codes: 0 done; 1 the library or a symbol is missing; 2 bad usage.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <string>

#include "tools/faults/fault.h"
#include "tools/faults/probes/probes.h"
#include "tools/faults/shim.h"

namespace probes {

void* g_lib = nullptr;
GetProc g_gpa = nullptr;

void* FakeSymbol(const char* name) {
  if (void* p = dlsym(g_lib, name)) return p;
  const char* real = getenv("PAGELOCK_REAL_LIBCUDA");
  void* h = real ? dlopen(real, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  return h ? dlsym(h, name) : nullptr;
}

double NowMs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

unsigned char* CopyDevice() {
  static unsigned char dev[256];
  static const bool marked = [] {
    auto mark = reinterpret_cast<void (*)(uintptr_t, size_t)>(FakeSymbol("fake_mark_device"));
    if (mark) mark(reinterpret_cast<uintptr_t>(dev), sizeof(dev));
    return mark != nullptr;
  }();
  (void)marked;
  return dev;
}

unsigned char* CopyHost() {
  static unsigned char host[256];
  return host;
}

// The areas with probes, in the catalogue's order (catalogue.cc): one line each.
#define PL_PROBE_AREAS(PL_AREA)    \
  PL_AREA(kCopiesProbes)           \
  PL_AREA(kAsyncCopiesProbes)      \
  PL_AREA(kCopies2D3DProbes)       \
  PL_AREA(kMemsetsProbes)          \
  PL_AREA(kStreamsProbes)          \
  PL_AREA(kEventsProbes)           \
  PL_AREA(kGraphsProbes)           \
  PL_AREA(kHostAllocationProbes)   \
  PL_AREA(kRegistrationProbes)     \
  PL_AREA(kDevicePointersProbes)   \
  PL_AREA(kPointerAttributesProbes) \
  PL_AREA(kContextsProbes)         \
  PL_AREA(kCapabilitiesProbes)     \
  PL_AREA(kVmmHostProbes)          \
  PL_AREA(kBatchCopiesProbes)      \
  PL_AREA(kGraphUpdatesProbes)

#define PL_DECLARE_PROBES(area) extern const ProbeArea area;
PL_PROBE_AREAS(PL_DECLARE_PROBES)
#undef PL_DECLARE_PROBES

}  // namespace probes

namespace {

using probes::Get;
using probes::g_gpa;
using probes::g_lib;

const probes::ProbeArea* const kProbeAreas[] = {
#define PL_LIST_PROBES(area) &probes::area,
    PL_PROBE_AREAS(PL_LIST_PROBES)
#undef PL_LIST_PROBES
};

int Run() {
  using Info = const char* (*)();
  if (auto info = reinterpret_cast<Info>(dlsym(g_lib, "pagelock_fault_shim_info")))
    printf("info=%s\n", info());
  // A direct export (not through cuGetProcAddress) must forward too.
  auto direct_version = reinterpret_cast<CUresult (*)(int*)>(dlsym(g_lib, "cuDriverGetVersion"));
  int v = -1;
  CUresult rv = direct_version ? direct_version(&v) : CUDA_ERROR_NOT_FOUND;
  printf("direct_version_rc=%d version=%d\n", rv, v);
  // A function the driver lacks: the shim's forwarder answers NOT_FOUND.
  if (auto absent = reinterpret_cast<CUresult (*)()>(dlsym(g_lib, "cuMemAllocPitch_v2")))
    printf("absent_rc=%d\n", absent());
  // As the runtime asks: the version the current ABI appeared in (3020), and an older one.
  using HtoD = CUresult (*)(CUdeviceptr, const void*, size_t);
  printf("htod_3020_differs=%d\n", Get<HtoD>("cuMemcpyHtoD", 3020) != Get<HtoD>("cuMemcpyHtoD", 2000));
  auto init = Get<CUresult (*)(unsigned)>("cuInit");
  auto count = Get<CUresult (*)(int*)>("cuDeviceGetCount");
  auto attr = Get<CUresult (*)(int*, int, int)>("cuDeviceGetAttribute");
  auto host_alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto htod = Get<CUresult (*)(CUdeviceptr, const void*, size_t)>("cuMemcpyHtoD");
  auto dtoh = Get<CUresult (*)(void*, CUdeviceptr, size_t)>("cuMemcpyDtoH");
  auto sync = Get<CUresult (*)()>("cuCtxSynchronize");
  if (!init || !count || !attr || !host_alloc || !free_host || !htod || !dtoh || !sync) return 1;
  printf("init_rc=%d\n", init(0));
  int n = -1;
  CUresult rc = count(&n);
  printf("count_rc=%d count=%d\n", rc, n);
  int value = -1;
  rc = attr(&value, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 0);
  printf("attr_rc=%d attr%d=%d\n", rc, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, value);
  void* src = nullptr;
  void* dst = nullptr;
  CUresult a = host_alloc(&src, 64, 0), b = host_alloc(&dst, 64, 0);
  printf("hostalloc_rc=%d,%d\n", a, b);
  if (a == CUDA_SUCCESS && b == CUDA_SUCCESS) {
    unsigned char* s = static_cast<unsigned char*>(src);
    unsigned char* d = static_cast<unsigned char*>(dst);
    for (int i = 0; i < 64; ++i) s[i] = static_cast<unsigned char>(i * 7 + 1);
    memset(d, 0, 64);
    rc = htod(reinterpret_cast<CUdeviceptr>(d), s, 64);
    printf("htod_rc=%d\n", rc);
    int bad = 0;
    for (int i = 0; i < 64; ++i) bad += d[i] != s[i];
    printf("htod_mismatches=%d\n", bad);
    // The same function requested by its versioned name.
    if (auto htod_v2 = Get<CUresult (*)(CUdeviceptr, const void*, size_t)>("cuMemcpyHtoD_v2")) {
      memset(d, 0, 64);
      rc = htod_v2(reinterpret_cast<CUdeviceptr>(d), s, 64);
      bad = 0;
      for (int i = 0; i < 64; ++i) bad += d[i] != s[i];
      printf("htod_v2_rc=%d htod_v2_mismatches=%d\n", rc, bad);
    }
    memset(s, 0, 64);
    rc = dtoh(s, reinterpret_cast<CUdeviceptr>(d), 64);
    printf("dtoh_rc=%d\n", rc);
    bad = 0;
    for (int i = 0; i < 64; ++i) bad += d[i] != s[i];
    printf("dtoh_mismatches=%d\n", bad);
    a = free_host(src);
    b = free_host(dst);
    printf("free_rc=%d,%d\n", a, b);
  }
  rc = sync();
  printf("sync_rc=%d\n", rc);
  // The fake driver counts the synchronisations that reached it.
  if (auto calls = static_cast<int*>(dlsym(g_lib, "fake_ctx_sync_calls")))
    printf("sync_calls=%d\n", *calls);
  else if (const char* real = getenv("PAGELOCK_REAL_LIBCUDA"))
    if (void* h = dlopen(real, RTLD_NOW | RTLD_NOLOAD))
      if (auto calls2 = static_cast<int*>(dlsym(h, "fake_ctx_sync_calls")))
        printf("sync_calls=%d\n", *calls2);
  return 0;
}

// The built catalogue as TSV, every field of every row (tables.py writes catalogue.tsv,
// split.tsv and conforming.tsv from it): faults with their shape, batch and whether the batch is
// blind; variations with their justification. A catalogue whose tables are inconsistent (a name
// or order used twice, an unknown shape or batch) is refused with the reason.
int PrintCatalogue(const char* symbol, bool conforming) {
  using Cat = const pagelock_faults::Fault* (*)(size_t*);
  using Batches = const pagelock_faults::Batch* (*)(size_t*);
  using Problem = const char* (*)();
  using Entries = const char* (*)(const char*);
  auto cat = reinterpret_cast<Cat>(dlsym(g_lib, symbol));
  auto batches = reinterpret_cast<Batches>(dlsym(g_lib, "pagelock_fault_batches"));
  auto problem = reinterpret_cast<Problem>(dlsym(g_lib, "pagelock_fault_catalogue_problem"));
  auto entries = reinterpret_cast<Entries>(dlsym(g_lib, "pagelock_fault_entries"));
  if (!cat || !batches || !problem || !entries) {
    fprintf(stderr, "shim_client: the library has no %s (not the shim?)\n", symbol);
    return 1;
  }
  if (const char* why = problem()) {
    fprintf(stderr, "shim_client: the catalogue is inconsistent: %s\n", why);
    return 1;
  }
  size_t n = 0, nb = 0;
  const pagelock_faults::Fault* f = cat(&n);
  const pagelock_faults::Batch* b = batches(&nb);
  if (conforming) {
    printf("order\tname\trule\tfamily\tkind\tentries\tdescription\tjustification\ttargets\t"
           "excluded\tenv\n");
    for (size_t i = 0; i < n; ++i)
      printf("%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f[i].order, f[i].name, f[i].rule,
             f[i].family, f[i].kind, entries(f[i].name), f[i].description, f[i].doc, f[i].targets,
             f[i].excluded, f[i].env);
    return 0;
  }
  printf("order\tname\trule\tfamily\tkind\tshape\tbatch\tblind\tentries\tdescription\n");
  for (size_t i = 0; i < n; ++i) {
    const char* blind = "?";
    for (size_t k = 0; k < nb; ++k)
      if (strcmp(b[k].name, f[i].batch) == 0) blind = b[k].blind ? "yes" : "no";
    printf("%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f[i].order, f[i].name, f[i].rule,
           f[i].family, f[i].kind, f[i].shape, f[i].batch, blind, entries(f[i].name),
           f[i].description);
  }
  return 0;
}

// The batches of the catalogue as TSV (tables.py writes batches.tsv from it).
int PrintBatches() {
  using Batches = const pagelock_faults::Batch* (*)(size_t*);
  auto batches = reinterpret_cast<Batches>(dlsym(g_lib, "pagelock_fault_batches"));
  if (!batches) {
    fprintf(stderr, "shim_client: the library has no pagelock_fault_batches (not the shim?)\n");
    return 1;
  }
  size_t n = 0;
  const pagelock_faults::Batch* b = batches(&n);
  printf("batch\tblind\thow\n");
  for (size_t i = 0; i < n; ++i) printf("%s\t%s\t%s\n", b[i].name, b[i].blind ? "yes" : "no", b[i].how);
  return 0;
}

// The probes of the areas named (all when none is), in the catalogue's order, in this process.
// Exit 2 for an area with no probes; 1 when a probe lacked an entry it needs (after the others).
int RunProbes(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    bool known = false;
    for (const probes::ProbeArea* a : kProbeAreas) known = known || strcmp(a->name, argv[i]) == 0;
    if (!known) {
      fprintf(stderr, "shim_client: no probes for area %s\n", argv[i]);
      return 2;
    }
  }
  int rc = 0;
  for (const probes::ProbeArea* a : kProbeAreas) {
    bool wanted = argc == 0;
    for (int i = 0; i < argc; ++i) wanted = wanted || strcmp(a->name, argv[i]) == 0;
    for (size_t i = 0; wanted && i < a->count; ++i) rc |= a->probes[i].run();
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  const char* const kModes[] = {"run", "catalogue", "conforming", "batches", "variations", "probe"};
  bool known = false;
  for (const char* m : kModes) known = known || (argc >= 2 && strcmp(argv[1], m) == 0);
  if (!known || (argc > 2 && strcmp(argv[1], "probe") != 0)) {
    fprintf(stderr,
            "usage: shim_client run|catalogue|conforming|batches|variations|probe [AREA...]\n");
    return 2;
  }
  const char* lib = getenv("SHIM_CLIENT_LIB");  // default: the LD_LIBRARY_PATH search
  g_lib = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!g_lib) {
    fprintf(stderr, "shim_client: dlopen failed: %s\n", dlerror());
    return 1;
  }
  g_gpa = reinterpret_cast<probes::GetProc>(dlsym(g_lib, "cuGetProcAddress_v2"));
  if (!g_gpa) {
    fprintf(stderr, "shim_client: no cuGetProcAddress_v2\n");
    return 1;
  }
  const std::string mode = argv[1];
  int rc = mode == "run"          ? Run()
           : mode == "catalogue"  ? PrintCatalogue("pagelock_fault_catalogue", false)
           : mode == "conforming" ? PrintCatalogue("pagelock_fault_conforming", true)
           : mode == "batches"    ? PrintBatches()
           : mode == "probe"      ? RunProbes(argc - 2, argv + 2)
                                  : probes::Variations();
  fflush(stdout);
  return rc;
}
