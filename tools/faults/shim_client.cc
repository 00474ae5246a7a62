// Drives a libcuda.so.1 (the shim or the fake driver) for the shim's CPU tests, the way the CUDA
// runtime does: dlopen("libcuda.so.1"), then cuGetProcAddress_v2 for every function.
//   shim_client run        prints key=value lines: what each call returned and what it did
//   shim_client catalogue  prints the shim's fault catalogue as TSV (name rule family kind text)
// Exit codes: 0 done; 1 the library or a symbol is missing; 2 bad usage.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int Catalogue() {
  using Cat = const pagelock_faults::Fault* (*)(size_t*);
  auto cat = reinterpret_cast<Cat>(dlsym(g_lib, "pagelock_fault_catalogue"));
  if (!cat) {
    fprintf(stderr, "shim_client: the library has no pagelock_fault_catalogue (not the shim?)\n");
    return 1;
  }
  size_t n = 0;
  const pagelock_faults::Fault* f = cat(&n);
  printf("name\trule\tfamily\tkind\tdescription\n");
  for (size_t i = 0; i < n; ++i)
    printf("%s\t%s\t%s\t%s\t%s\n", f[i].name, f[i].rule, f[i].family, f[i].kind,
           f[i].description);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || (strcmp(argv[1], "run") != 0 && strcmp(argv[1], "catalogue") != 0)) {
    fprintf(stderr, "usage: shim_client run|catalogue\n");
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
  int rc = strcmp(argv[1], "run") == 0 ? Run() : Catalogue();
  fflush(stdout);
  return rc;
}
