// Drives a libcuda.so.1 (the shim or the fake driver) for the shim's CPU tests, the way the CUDA
// runtime does: dlopen("libcuda.so.1"), then cuGetProcAddress_v2 for every function.
//   shim_client run        prints key=value lines: what each call returned and what it did
//   shim_client catalogue  prints the shim's fault catalogue as TSV (name rule family kind text)
//   shim_client conforming prints the conforming variations as TSV (... and their justification)
//   shim_client variations prints key=value lines for the calls the conforming variations change
// Exit codes: 0 done; 1 the library or a symbol is missing; 2 bad usage.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include <string>

#include "tools/faults/shim.h"

namespace {

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

void* g_lib = nullptr;
GetProc g_gpa = nullptr;

template <typename Fn>
Fn Get(const char* name, int version = 13000) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = g_gpa(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &st);
  if (r != CUDA_SUCCESS || !fn) {
    printf("missing=%s rc=%d status=%d\n", name, r, st);
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

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

// What the fake driver exposes about itself (through the real library the shim loaded).
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

// One call per behaviour a conforming variation may change, each printed as key=value; the
// fake driver answers as r580 does (testdata/fake_libcuda.c).
int Variations() {
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto attr = Get<CUresult (*)(int*, int, int)>("cuDeviceGetAttribute");
  auto get_flags = Get<CUresult (*)(unsigned*, void*)>("cuMemHostGetFlags");
  auto stream_sync = Get<CUresult (*)(CUstream)>("cuStreamSynchronize");
  auto htod_async = Get<CUresult (*)(CUdeviceptr, const void*, size_t, CUstream)>("cuMemcpyHtoDAsync");
  auto record = Get<CUresult (*)(CUevent, CUstream)>("cuEventRecord");
  auto set_current = Get<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  auto set_flags = Get<CUresult (*)(CUdevice, unsigned)>("cuDevicePrimaryCtxSetFlags");
  if (!alloc || !free_host || !reg || !unreg || !attr || !get_flags || !stream_sync ||
      !htod_async || !record || !set_current || !set_flags)
    return 1;
  const size_t page = 4096;
  char* rw = static_cast<char*>(mmap(nullptr, 16 * page, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  char* ro = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (rw == MAP_FAILED || ro == MAP_FAILED) return 1;
  printf("register_rc=%d", reg(rw, page, 0));
  printf(" unregister_rc=%d\n", unreg(rw));
  printf("iomemory_rc=%d\n", reg(rw, page, CU_MEMHOSTREGISTER_IOMEMORY));
  printf("unknown_register_flag_rc=%d\n", reg(rw, page, 0x10));
  CUresult r = reg(ro, 2 * page, 0);
  printf("read_only_mapping_rc=%d\n", r);
  if (r == CUDA_SUCCESS) unreg(ro);
  r = reg(ro, 2 * page, CU_MEMHOSTREGISTER_READ_ONLY);
  printf("read_only_flag_rc=%d\n", r);
  if (r == CUDA_SUCCESS) unreg(ro);
  void* p = nullptr;
  printf("hostalloc_rc=%d", alloc(&p, 100, 0));
  auto last_size = static_cast<size_t*>(FakeSymbol("fake_last_alloc_size"));
  printf(" hostalloc_size=%zu\n", last_size ? *last_size : 0);
  printf("register_hostalloc_rc=%d\n", reg(p, 100, 0));
  printf("unregister_hostalloc_rc=%d\n", unreg(p));
  unsigned flags = 0;
  r = get_flags(&flags, p);
  printf("get_flags_rc=%d flags=%u\n", r, flags);
  free_host(p);
  void* q = nullptr;
  printf("unknown_hostalloc_flag_rc=%d\n", alloc(&q, 64, 0x10));
  void* z = reinterpret_cast<void*>(0x1);
  r = alloc(&z, 0, 0);
  printf("zero_size_rc=%d zero_size_pointer=%s\n", r, z ? "allocated" : "null");
  if (z) free_host(z);
  int v99 = -1, v113 = -1;
  attr(&v99, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 0);
  attr(&v113, CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, 0);
  printf("attr99=%d attr113=%d\n", v99, v113);
  printf("fault_code=%d\n", stream_sync(reinterpret_cast<CUstream>(0x700)));
  auto host_funcs = static_cast<int*>(FakeSymbol("fake_host_funcs"));
  const int before = host_funcs ? *host_funcs : -1;
  htod_async(reinterpret_cast<CUdeviceptr>(rw), rw + page, 64, nullptr);
  record(nullptr, nullptr);
  const int after_default = host_funcs ? *host_funcs : -1;
  htod_async(reinterpret_cast<CUdeviceptr>(rw), rw + page, 64, reinterpret_cast<CUstream>(0x1));
  record(nullptr, reinterpret_cast<CUstream>(0x1));
  printf("delays_default_stream=%d delays_explicit_stream=%d\n", after_default - before,
         (host_funcs ? *host_funcs : -1) - after_default);
  auto htod = Get<CUresult (*)(CUdeviceptr, const void*, size_t)>("cuMemcpyHtoD");
  double t = NowMs();
  r = htod ? htod(reinterpret_cast<CUdeviceptr>(rw), rw + page, 64) : CUDA_ERROR_NOT_FOUND;
  printf("htod_rc=%d htod_late=%d\n", r, NowMs() - t >= 0.9);
  const double t0 = NowMs();
  r = stream_sync(reinterpret_cast<CUstream>(0x1));
  printf("stream_sync_rc=%d stream_sync_late=%d\n", r, NowMs() - t0 >= 4.5);
  printf("first_on_page_rc=%d", reg(rw + 2 * page, 256, 0));
  r = reg(rw + 2 * page + 1024, 256, 0);
  printf(" second_on_page_rc=%d", r);
  if (r == CUDA_SUCCESS) unreg(rw + 2 * page + 1024);
  printf(" next_page_rc=%d", reg(rw + 3 * page, 256, 0));
  unreg(rw + 3 * page);
  printf(" unregister_first_rc=%d", unreg(rw + 2 * page));
  printf(" again_after_unregister_rc=%d\n", reg(rw + 2 * page + 1024, 256, 0));
  unreg(rw + 2 * page + 1024);
  set_current(reinterpret_cast<CUcontext>(0x1234));  // a non-primary context is current
  printf("set_flags_beside_context_rc=%d", set_flags(0, 0));
  set_current(nullptr);
  printf(" set_flags_alone_rc=%d\n", set_flags(0, 0));
  return 0;
}

int PrintCatalogue(const char* symbol, bool conforming) {
  using Cat = const pagelock_faults::Fault* (*)(size_t*);
  auto cat = reinterpret_cast<Cat>(dlsym(g_lib, symbol));
  if (!cat) {
    fprintf(stderr, "shim_client: the library has no %s (not the shim?)\n", symbol);
    return 1;
  }
  using Entries = const char* (*)(const char*);
  auto entries = reinterpret_cast<Entries>(dlsym(g_lib, "pagelock_fault_entries"));
  size_t n = 0;
  const pagelock_faults::Fault* f = cat(&n);
  printf("name\trule\tfamily\tkind\tentries\tdescription%s\n", conforming ? "\tjustification" : "");
  for (size_t i = 0; i < n; ++i) {
    printf("%s\t%s\t%s\t%s\t%s\t%s", f[i].name, f[i].rule, f[i].family, f[i].kind,
           entries ? entries(f[i].name) : "", f[i].description);
    printf(conforming ? "\t%s\n" : "\n", f[i].doc);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* const kModes[] = {"run", "catalogue", "conforming", "variations"};
  bool known = false;
  for (const char* m : kModes) known = known || (argc == 2 && strcmp(argv[1], m) == 0);
  if (!known) {
    fprintf(stderr, "usage: shim_client run|catalogue|conforming|variations\n");
    return 2;
  }
  const char* lib = getenv("SHIM_CLIENT_LIB");  // default: the LD_LIBRARY_PATH search
  g_lib = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!g_lib) {
    fprintf(stderr, "shim_client: dlopen failed: %s\n", dlerror());
    return 1;
  }
  g_gpa = reinterpret_cast<GetProc>(dlsym(g_lib, "cuGetProcAddress_v2"));
  if (!g_gpa) {
    fprintf(stderr, "shim_client: no cuGetProcAddress_v2\n");
    return 1;
  }
  const std::string mode = argv[1];
  int rc = mode == "run"          ? Run()
           : mode == "catalogue"  ? PrintCatalogue("pagelock_fault_catalogue", false)
           : mode == "conforming" ? PrintCatalogue("pagelock_fault_conforming", true)
                                  : Variations();
  fflush(stdout);
  return rc;
}
