// Drives a libcuda.so.1 (the shim or the fake driver) for the shim's CPU tests, the way the CUDA
// runtime does: dlopen("libcuda.so.1"), then cuGetProcAddress_v2 for every function.
//   shim_client run        prints key=value lines: what each call returned and what it did
//   shim_client catalogue  prints the built fault catalogue as TSV, every field of every row
//                          (order name rule family kind shape batch blind entries description)
//   shim_client conforming prints the conforming variations as TSV (order name rule family kind
//                          entries description justification)
//   shim_client variations prints key=value lines for the calls the conforming variations change
//   shim_client blind10    prints key=value lines for calls inside and outside the triggers of
//                          batch blind-10's faults
//   shim_client blind11    the same for batch blind-11's faults
// Exit codes: 0 done; 1 the library or a symbol is missing; 2 bad usage.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include <initializer_list>
#include <string>

#include "tools/faults/fault.h"
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

// "rc,offset,size" of an address range answer, the base as an offset from `origin`.
std::string RangeText(CUresult r, CUdeviceptr base, size_t size, CUdeviceptr origin) {
  char text[96];
  if (r != CUDA_SUCCESS) snprintf(text, sizeof(text), "%d", r);
  else snprintf(text, sizeof(text), "%d,%lld,%zu", r, static_cast<long long>(base - origin), size);
  return text;
}

// Address ranges of device and host memory (address_range_*): the fake driver places device
// blocks where fake_next_device says, in a 2 MiB-aligned arena.
int Ranges() {
  using Range = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
  using Attr = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);
  using Attrs = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
  auto mem_alloc = Get<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc");
  auto mem_free = Get<CUresult (*)(CUdeviceptr)>("cuMemFree");
  auto range = Get<Range>("cuMemGetAddressRange");
  auto range_3020 = Get<Range>("cuMemGetAddressRange", 3020);  // as the runtime asks
  auto range_v2 = Get<Range>("cuMemGetAddressRange_v2");
  auto attr = Get<Attr>("cuPointerGetAttribute");
  auto attrs = Get<Attrs>("cuPointerGetAttributes");
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto arena = static_cast<CUdeviceptr*>(FakeSymbol("fake_device_arena"));
  auto next = static_cast<size_t*>(FakeSymbol("fake_next_device"));
  if (!mem_alloc || !mem_free || !range || !range_3020 || !range_v2 || !attr || !attrs || !alloc ||
      !free_host || !reg || !unreg || !arena || !*arena || !next)
    return 1;
  const CUdeviceptr a = *arena;
  const size_t kMiB = size_t{1} << 20;
  auto ask = [&](Range fn, CUdeviceptr at) {
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult r = fn(&base, &size, at);
    return RangeText(r, base, size, a);
  };
  auto ask_attr = [&](CUdeviceptr at) {
    CUdeviceptr start = 0;
    size_t size = 0;
    CUresult r = attr(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, at);
    if (r == CUDA_SUCCESS) r = attr(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, at);
    return RangeText(r, start, size, a);
  };
  auto ask_attrs = [&](CUdeviceptr at) {
    CUdeviceptr start = 0;
    size_t size = 0;
    unsigned type = 0;
    CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR};
    void* data[] = {&type, &size, &start};
    CUresult r = attrs(3, which, data, at);
    return RangeText(r, start, size, a) + ",type" + std::to_string(type);
  };
  // A block inside one 2 MiB window, 64 KiB from its start.
  *next = 64 * 1024;
  CUdeviceptr d1 = 0;
  if (mem_alloc(&d1, 100 * 1024) != CUDA_SUCCESS) return 1;
  printf("dev_range_first=%s", ask(range, d1).c_str());
  printf(" dev_range_middle_v2=%s", ask(range_v2, d1 + 50 * 1024).c_str());
  printf(" dev_range_last_3020=%s", ask(range_3020, d1 + 100 * 1024 - 1).c_str());
  printf(" dev_range_window_first=%s", ask(range, a).c_str());
  printf(" dev_range_window_last=%s", ask(range, a + 2 * kMiB - 1).c_str());
  printf(" dev_range_past_window=%s\n", ask(range, a + 2 * kMiB).c_str());
  printf("dev_attr_first=%s dev_attr_last=%s dev_attrs_middle=%s\n", ask_attr(d1).c_str(),
         ask_attr(d1 + 100 * 1024 - 1).c_str(), ask_attrs(d1 + 4096).c_str());
  // A second block in the same window: every answer is the driver's own.
  CUdeviceptr d2 = 0;
  if (mem_alloc(&d2, 1024) != CUDA_SUCCESS) return 1;
  printf("dev_range_beside_neighbour=%s dev_range_neighbour=%s dev_range_padding_beside=%s "
         "dev_attr_beside_neighbour=%s\n",
         ask(range, d1).c_str(), ask(range, d2).c_str(), ask(range, a).c_str(),
         ask_attr(d1).c_str());
  mem_free(d2);
  printf("dev_range_after_neighbour_freed=%s\n", ask(range, d1).c_str());
  // A block across windows (4 MiB + 4 KiB to 7 MiB + 4 KiB) and one exactly on 2 MiB boundaries.
  *next = 4 * kMiB + 4096;
  CUdeviceptr d3 = 0, d4 = 0;
  if (mem_alloc(&d3, 3 * kMiB) != CUDA_SUCCESS) return 1;
  *next = 8 * kMiB;
  if (mem_alloc(&d4, 2 * kMiB) != CUDA_SUCCESS) return 1;
  printf("dev_range_across=%s dev_range_across_window_last=%s dev_attr_across=%s "
         "dev_range_aligned=%s dev_attr_aligned=%s\n",
         ask(range, d3 + kMiB).c_str(), ask(range, a + 8 * kMiB - 1).c_str(), ask_attr(d3).c_str(),
         ask(range, d4 + 1).c_str(), ask_attr(d4).c_str());
  mem_free(d1);
  mem_free(d3);
  mem_free(d4);
  printf("dev_range_freed=%s\n", ask(range, d1).c_str());
  // Page-locked host memory: allocated and registered.
  void* h = nullptr;
  if (alloc(&h, 8192, 0) != CUDA_SUCCESS) return 1;
  const CUdeviceptr hp = reinterpret_cast<CUdeviceptr>(h);
  CUdeviceptr base = 0;
  size_t size = 0;
  CUresult r = range(&base, &size, hp + 100);
  printf("host_range=%s", RangeText(r, base, size, hp).c_str());
  base = 7;
  r = range(&base, nullptr, hp);
  printf(" host_range_base_only=%d,%s", r, base == hp ? "base" : base == 7 ? "untouched" : "other");
  r = attr(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, hp + 100);
  printf(" host_attr=%s\n", RangeText(r, base, 0, hp).c_str());
  free_host(h);
  char* region = static_cast<char*>(mmap(nullptr, 4 * 4096, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (region == MAP_FAILED) return 1;
  const CUdeviceptr rp = reinterpret_cast<CUdeviceptr>(region + 4096);
  r = reg(region + 4096, 2 * 4096, 0);  // refused under the no_host_register variations
  if (r == CUDA_SUCCESS) {
    r = range(&base, &size, rp + 4096);
    printf("registered_range=%s", RangeText(r, base, size, rp).c_str());
    unreg(region + 4096);
  } else {
    printf("registered_range=unregistered");
  }
  r = range(&base, &size, rp);
  printf(" unregistered_range=%s\n", RangeText(r, base, size, rp).c_str());
  munmap(region, 4 * 4096);
  return 0;
}

// Pins of 1 GiB and just below it (large_pin_refused): the result of each call and how many pins
// reached the fake driver.
int Pins() {
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto alloc_host = Get<CUresult (*)(void**, size_t)>("cuMemAllocHost");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto pins = static_cast<int*>(FakeSymbol("fake_pins"));
  if (!alloc || !alloc_host || !free_host || !reg || !unreg || !pins) return 1;
  const size_t gib = size_t{1} << 30;
  const int before = *pins;
  void* p = nullptr;
  CUresult r = alloc(&p, gib, CU_MEMHOSTALLOC_DEVICEMAP);
  printf("large_hostalloc_rc=%d", r);
  if (r == CUDA_SUCCESS) free_host(p);
  r = alloc(&p, gib, 0x10);
  printf(" large_hostalloc_bad_flags_rc=%d", r);
  r = alloc_host(&p, gib);
  printf(" large_allochost_rc=%d", r);
  if (r == CUDA_SUCCESS) free_host(p);
  r = alloc_host(&p, gib - 4096);
  printf(" below_limit_allochost_rc=%d", r);
  if (r == CUDA_SUCCESS) free_host(p);
  void* big = mmap(nullptr, gib, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (big == MAP_FAILED) return 1;
  r = reg(big, gib, CU_MEMHOSTREGISTER_DEVICEMAP);
  printf(" large_register_rc=%d", r);
  if (r == CUDA_SUCCESS) unreg(big);
  r = reg(big, gib - 4096, 0);
  printf(" below_limit_register_rc=%d", r);
  if (r == CUDA_SUCCESS) unreg(big);
  printf(" large_pins=%d\n", *pins - before);
  munmap(big, gib);
  return 0;
}

// cuMemPoolTrimTo (pool_trim_keeps_reserved) and the hints cuMemAdvise / cuMemPrefetchAsync on
// page-locked, pageable and device memory (advise_on_pinned_succeeds).
int PoolAndHints() {
  auto trim = Get<CUresult (*)(CUmemoryPool, size_t)>("cuMemPoolTrimTo");
  auto reserved = static_cast<unsigned long long*>(FakeSymbol("fake_pool_reserved"));
  using Advise = CUresult (*)(CUdeviceptr, size_t, CUmem_advise, CUmemLocation);
  using Advise8 = CUresult (*)(CUdeviceptr, size_t, CUmem_advise, CUdevice);
  using Prefetch = CUresult (*)(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream);
  using Prefetch8 = CUresult (*)(CUdeviceptr, size_t, CUdevice, CUstream);
  auto advise = Get<Advise>("cuMemAdvise");
  auto advise_v2 = Get<Advise>("cuMemAdvise_v2");
  auto advise8 = Get<Advise8>("cuMemAdvise", 8000);
  auto prefetch = Get<Prefetch>("cuMemPrefetchAsync");
  auto prefetch8 = Get<Prefetch8>("cuMemPrefetchAsync", 8000);
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto mem_alloc = Get<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc");
  auto mem_free = Get<CUresult (*)(CUdeviceptr)>("cuMemFree");
  if (!trim || !reserved || !advise || !advise_v2 || !advise8 || !prefetch || !prefetch8 ||
      !alloc || !free_host || !reg || !unreg || !mem_alloc || !mem_free)
    return 1;
  CUmemoryPool pool = reinterpret_cast<CUmemoryPool>(0x9000);
  *reserved = 4 << 20;
  printf("pool_trim_above_reserved_rc=%d", trim(pool, 8 << 20));
  printf(" pool_reserved_after_noop=%llu", *reserved);
  printf(" pool_trim_rc=%d", trim(pool, 0));
  printf(" pool_reserved_after_trim=%llu", *reserved);
  printf(" pool_trim_null_rc=%d\n", trim(nullptr, 0));
  void* h = nullptr;
  if (alloc(&h, 8192, 0) != CUDA_SUCCESS) return 1;
  const CUdeviceptr hp = reinterpret_cast<CUdeviceptr>(h);
  char* region = static_cast<char*>(mmap(nullptr, 4 * 4096, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (region == MAP_FAILED) return 1;
  const bool registered = reg(region, 2 * 4096, 0) == CUDA_SUCCESS;  // as above
  const CUdeviceptr rp = reinterpret_cast<CUdeviceptr>(region);
  CUdeviceptr d = 0;
  if (mem_alloc(&d, 8192) != CUDA_SUCCESS) return 1;
  const CUmemLocation dev0 = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  const CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
  const CUmemLocation dev7 = {CU_MEM_LOCATION_TYPE_DEVICE, 7};  // no such device
  const CUstream s = reinterpret_cast<CUstream>(0x1);
  printf("advise_pinned_rc=%d", advise(hp, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, dev0));
  printf(" advise_v2_registered_rc=%d",
         advise_v2(rp, 8192, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host));
  printf(" advise_8000_pinned_rc=%d", advise8(hp, 8192, CU_MEM_ADVISE_SET_ACCESSED_BY, 0));
  printf(" advise_bad_advice_rc=%d", advise(hp, 4096, static_cast<CUmem_advise>(99), dev0));
  printf(" advise_bad_device_rc=%d", advise(hp, 4096, CU_MEM_ADVISE_SET_ACCESSED_BY, dev7));
  printf(" advise_past_the_block_rc=%d", advise(hp, 3 * 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, dev0));
  printf(" advise_pageable_rc=%d",
         advise(rp + 2 * 4096, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, dev0));
  printf(" advise_device_rc=%d\n", advise(d, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, dev0));
  printf("prefetch_pinned_rc=%d", prefetch(hp, 4096, dev0, 0, s));
  printf(" prefetch_registered_to_host_rc=%d", prefetch(rp, 4096, host, 0, s));
  printf(" prefetch_8000_pinned_rc=%d", prefetch8(hp, 4096, CU_DEVICE_CPU, s));
  printf(" prefetch_bad_flags_rc=%d", prefetch(hp, 4096, dev0, 1, s));
  printf(" prefetch_pageable_rc=%d", prefetch(rp + 2 * 4096, 4096, dev0, 0, s));
  printf(" prefetch_device_rc=%d\n", prefetch(d, 4096, dev0, 0, s));
  mem_free(d);
  if (registered) unreg(region);
  munmap(region, 4 * 4096);
  free_host(h);
  return 0;
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
  return Ranges() || Pins() || PoolAndHints() ? 1 : 0;
}

// One call inside and one outside the trigger of each fault of batch blind-10, each printed as
// key=value; the fake driver answers as r580 would (testdata/fake_libcuda.c).
int Blind10() {
  using Stream = CUstream;
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto dev_attr = Get<CUresult (*)(int*, int, int)>("cuDeviceGetAttribute");
  auto ptr_attr = Get<CUresult (*)(void*, CUpointer_attribute, CUdeviceptr)>("cuPointerGetAttribute");
  auto set_current = Get<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  auto get_current = Get<CUresult (*)(CUcontext*)>("cuCtxGetCurrent");
  auto ctx_destroy = Get<CUresult (*)(CUcontext)>("cuCtxDestroy");
  auto devptr = Get<CUresult (*)(CUdeviceptr*, void*, unsigned)>("cuMemHostGetDevicePointer");
  auto htod = Get<CUresult (*)(CUdeviceptr, const void*, size_t)>("cuMemcpyHtoD");
  auto dtoh = Get<CUresult (*)(void*, CUdeviceptr, size_t)>("cuMemcpyDtoH");
  auto htod_async = Get<CUresult (*)(CUdeviceptr, const void*, size_t, Stream)>("cuMemcpyHtoDAsync");
  auto dtoh_async = Get<CUresult (*)(void*, CUdeviceptr, size_t, Stream)>("cuMemcpyDtoHAsync");
  auto copy_async = Get<CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, Stream)>("cuMemcpyAsync");
  auto set2d = Get<CUresult (*)(CUdeviceptr, size_t, unsigned, size_t, size_t)>("cuMemsetD2D32");
  auto set2d_async =
      Get<CUresult (*)(CUdeviceptr, size_t, unsigned, size_t, size_t, Stream)>("cuMemsetD2D32Async");
  auto wait64 = Get<CUresult (*)(Stream, CUdeviceptr, cuuint64_t, unsigned)>("cuStreamWaitValue64");
  auto record = Get<CUresult (*)(CUevent, Stream)>("cuEventRecord");
  auto record_flags = Get<CUresult (*)(CUevent, Stream, unsigned)>("cuEventRecordWithFlags");
  auto elapsed = Get<CUresult (*)(float*, CUevent, CUevent)>("cuEventElapsedTime");
  auto pool_create = Get<CUresult (*)(CUmemoryPool*, const CUmemPoolProps*)>("cuMemPoolCreate");
  auto pool_alloc =
      Get<CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, Stream)>("cuMemAllocFromPoolAsync");
  auto mark_device = reinterpret_cast<void (*)(uintptr_t, size_t)>(FakeSymbol("fake_mark_device"));
  auto pins = static_cast<int*>(FakeSymbol("fake_pins"));
  auto pending = static_cast<void**>(FakeSymbol("fake_pending_event"));
  auto records = static_cast<int*>(FakeSymbol("fake_event_records"));
  auto wait_bits = static_cast<int*>(FakeSymbol("fake_last_wait_bits"));
  auto wait_value = static_cast<unsigned long long*>(FakeSymbol("fake_last_wait_value"));
  auto destroys = static_cast<int*>(FakeSymbol("fake_ctx_destroys"));
  auto pool_allocs = static_cast<int*>(FakeSymbol("fake_pool_allocs"));
  auto no_native = static_cast<int*>(FakeSymbol("fake_no_native_atomics"));
  if (!alloc || !free_host || !reg || !unreg || !dev_attr || !ptr_attr || !set_current ||
      !get_current || !ctx_destroy || !devptr || !htod || !dtoh || !htod_async || !dtoh_async ||
      !copy_async || !set2d || !set2d_async || !wait64 || !record || !record_flags || !elapsed ||
      !pool_create || !pool_alloc || !mark_device || !pins || !pending || !records ||
      !wait_bits || !wait_value || !destroys || !pool_allocs || !no_native)
    return 1;
  // Created streams (not the special handles CU_STREAM_LEGACY = 0x1, CU_STREAM_PER_THREAD = 0x2).
  const Stream blocking = reinterpret_cast<Stream>(0x10);
  const Stream non_blocking = reinterpret_cast<Stream>(0x20);  // fake: CU_STREAM_NON_BLOCKING
  const Stream capturing = reinterpret_cast<Stream>(0xCA);    // fake: being captured
  const size_t page = 4096;
  CUresult r = CUDA_SUCCESS;

  // memset2d32_narrow_padding_overwritten: "elements set,padding bytes written".
  static uint32_t grid[128];
  auto set_2d = [&](size_t pitch, size_t w, size_t h, bool async) {
    memset(grid, 0, sizeof(grid));
    const unsigned v = 0xa1b2c3d4u;
    const CUdeviceptr d = reinterpret_cast<CUdeviceptr>(grid);
    CUresult r = async ? set2d_async(d, pitch, v, w, h, blocking) : set2d(d, pitch, v, w, h);
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(grid);
    int set = 0, padding = 0;
    for (size_t y = 0; y < h; ++y) {
      for (size_t x = 0; x < w; ++x) set += memcmp(bytes + y * pitch + 4 * x, &v, 4) == 0;
      for (size_t b = 4 * w; b < pitch; ++b) padding += bytes[y * pitch + b] != 0;
    }
    return std::to_string(r) + "," + std::to_string(set) + "," + std::to_string(padding);
  };
  printf("memset2d32_narrow=%s memset2d32_narrow_async=%s memset2d32_wide=%s "
         "memset2d32_one_row=%s memset2d32_unpadded=%s\n",
         set_2d(24, 4, 3, false).c_str(), set_2d(24, 4, 3, true).c_str(),
         set_2d(40, 4, 3, false).c_str(), set_2d(24, 4, 1, false).c_str(),
         set_2d(16, 4, 3, false).c_str());

  // "Device" buffers the fake copies into, and host buffers.
  static unsigned char dev[256], host[256];
  mark_device(reinterpret_cast<uintptr_t>(dev), sizeof(dev));
  const CUdeviceptr dp = reinterpret_cast<CUdeviceptr>(dev);
  const CUdeviceptr hp = reinterpret_cast<CUdeviceptr>(host);
  // Mismatches after one copy of n bytes between host and dev (each filled with its pattern).
  auto copied = [&](size_t n, auto&& copy) {
    for (int i = 0; i < 256; ++i) {
      host[i] = static_cast<unsigned char>(i * 7 + 1);
      dev[i] = static_cast<unsigned char>(0xff - i);
    }
    CUresult r = copy();
    int bad = 0;
    for (size_t i = 0; i < n; ++i) bad += dev[i] != host[i];
    return std::to_string(r) + "," + std::to_string(bad);
  };

  // unified_async_copy_drops_partial_word: "rc,mismatches".
  printf("unified_htod_6=%s", copied(6, [&] { return copy_async(dp, hp, 6, blocking); }).c_str());
  printf(" unified_dtoh_7=%s", copied(7, [&] { return copy_async(hp, dp, 7, blocking); }).c_str());
  printf(" unified_htod_8=%s", copied(8, [&] { return copy_async(dp, hp, 8, blocking); }).c_str());
  printf(" unified_htod_3=%s", copied(3, [&] { return copy_async(dp, hp, 3, blocking); }).c_str());
  printf(" explicit_htod_async_6=%s\n",
         copied(6, [&] { return htod_async(dp, host, 6, blocking); }).c_str());

  // captured_copy_node_short: "rc,mismatches" of 64-byte copies on a captured stream and not.
  printf("captured_htod=%s", copied(64, [&] { return htod_async(dp, host, 64, capturing); }).c_str());
  printf(" captured_dtoh=%s", copied(64, [&] { return dtoh_async(host, dp, 64, capturing); }).c_str());
  printf(" captured_unified=%s", copied(64, [&] { return copy_async(dp, hp, 64, capturing); }).c_str());
  printf(" eager_htod=%s\n", copied(64, [&] { return htod_async(dp, host, 64, blocking); }).c_str());

  // copy_past_4gib_host_offset_wraps: a registration of 4 GiB + 2 pages; which host bytes a copy
  // at an offset past 4 GiB read ("high": its own, "low": 4 GiB lower) or wrote.
  const size_t k4G = size_t{1} << 32;
  unsigned char* big = static_cast<unsigned char*>(mmap(nullptr, k4G + 2 * page, PROT_READ | PROT_WRITE,
                                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (big == MAP_FAILED || reg(big, k4G + 2 * page, 0) != CUDA_SUCCESS) return 1;
  auto source_read = [&](unsigned char* at, auto&& copy) {
    memset(at, 0x22, 64);
    memset(at - k4G, 0x11, 64);
    memset(dev, 0, 64);
    CUresult r = copy(at);
    return std::to_string(r) + "," + (dev[0] == 0x22 ? "high" : dev[0] == 0x11 ? "low" : "none");
  };
  auto dest_written = [&](unsigned char* at, auto&& copy) {
    memset(at, 0, 64);
    memset(at - k4G, 0, 64);
    memset(dev, 0x44, 64);
    CUresult r = copy(at);
    return std::to_string(r) + "," + (at[0] == 0x44 ? "high" : at[-k4G] == 0x44 ? "low" : "none");
  };
  unsigned char* past = big + k4G + 16;
  printf("past4g_htod=%s", source_read(past, [&](unsigned char* a) { return htod(dp, a, 64); }).c_str());
  printf(" past4g_htod_async=%s",
         source_read(past, [&](unsigned char* a) { return htod_async(dp, a, 64, blocking); }).c_str());
  printf(" past4g_unified_async=%s",
         source_read(past, [&](unsigned char* a) {
           return copy_async(dp, reinterpret_cast<CUdeviceptr>(a), 64, blocking);
         }).c_str());
  printf(" past4g_dtoh=%s",
         dest_written(past + page, [&](unsigned char* a) { return dtoh(a, dp, 64); }).c_str());
  printf(" past4g_dtoh_async=%s",
         dest_written(past + page, [&](unsigned char* a) { return dtoh_async(a, dp, 64, blocking); }).c_str());
  // Below 4 GiB into the block: the bytes at the address asked for ("own").
  unsigned char* below = big + k4G - page + 16;
  memset(below, 0x33, 64);
  memset(dev, 0, 64);
  r = htod(dp, below, 64);
  printf(" below4g_htod=%d,%s\n", r, dev[0] == 0x33 ? "own" : "other");
  unreg(big);
  munmap(big, k4G + 2 * page);

  // wait_value64_eq_compares_low_word: "width,value" of the wait that reached the driver.
  static unsigned long long word = 0;
  const CUdeviceptr wp = reinterpret_cast<CUdeviceptr>(&word);
  auto waited = [&](unsigned flags) {
    *wait_bits = 0;
    CUresult r = wait64(blocking, wp, 0x100000005ull, flags);
    return std::to_string(r) + "," + std::to_string(*wait_bits) + "," + std::to_string(*wait_value);
  };
  printf("wait64_eq=%s wait64_eq_flush=%s wait64_geq=%s wait64_and=%s\n",
         waited(CU_STREAM_WAIT_VALUE_EQ).c_str(),
         waited(CU_STREAM_WAIT_VALUE_EQ | CU_STREAM_WAIT_VALUE_FLUSH).c_str(),
         waited(CU_STREAM_WAIT_VALUE_GEQ).c_str(), waited(CU_STREAM_WAIT_VALUE_AND).c_str());

  // mapped_unportable_devptr_refused_elsewhere: the result of cuMemHostGetDevicePointer.
  const CUcontext ctx_a = reinterpret_cast<CUcontext>(0x1234), ctx_b = reinterpret_cast<CUcontext>(0x5678);
  set_current(ctx_a);
  void *mapped = nullptr, *portable = nullptr, *plain = nullptr;
  if (alloc(&mapped, 64, CU_MEMHOSTALLOC_DEVICEMAP) != CUDA_SUCCESS ||
      alloc(&portable, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS ||
      alloc(&plain, 64, 0) != CUDA_SUCCESS)
    return 1;
  CUdeviceptr out = 0;
  printf("devptr_mapped_own_context=%d", devptr(&out, mapped, 0));
  set_current(ctx_b);
  printf(" devptr_mapped_other_context=%d", devptr(&out, static_cast<char*>(mapped) + 8, 0));
  printf(" devptr_portable_other_context=%d", devptr(&out, portable, 0));
  printf(" devptr_unmapped_other_context=%d\n", devptr(&out, plain, 0));
  set_current(nullptr);
  free_host(mapped);
  free_host(portable);
  free_host(plain);

  // reregistered_range_not_pinned: results, pins that reached the driver, pointer type.
  char* rw = static_cast<char*>(mmap(nullptr, 8 * page, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (rw == MAP_FAILED) return 1;
  unsigned type = 0;
  r = reg(rw, page, 0);
  printf("first_register=%d,%d", r, unreg(rw));
  int before = *pins;
  r = reg(rw, page, 0);
  printf(" reregister=%d,%d", r, *pins - before);
  printf(" reregistered_type_rc=%d", ptr_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                              reinterpret_cast<CUdeviceptr>(rw)));
  printf(" reregistered_unregister=%d", unreg(rw));
  before = *pins;
  r = reg(rw + 4 * page, page, 0);
  const int other_pins = *pins - before;
  printf(" other_register=%d,%d,%d\n", r, other_pins, unreg(rw + 4 * page));

  // ctx_destroy_keeps_context_with_pins: destroys that reached the driver; the current context.
  auto destroyed = [&](CUcontext c, bool pinned, bool freed_first) {
    set_current(c);
    void* p = nullptr;
    if (pinned && alloc(&p, 64, 0) != CUDA_SUCCESS) return std::string("alloc failed");
    if (pinned && freed_first) free_host(p);
    const int n = *destroys;
    CUresult rc = ctx_destroy(c);
    CUcontext now = reinterpret_cast<CUcontext>(0x1);
    get_current(&now);
    if (pinned && !freed_first) free_host(p);
    set_current(nullptr);
    return std::to_string(rc) + "," + std::to_string(*destroys - n) + "," + (now ? "current" : "none");
  };
  printf("destroy_with_pins=%s", destroyed(reinterpret_cast<CUcontext>(0x2345), true, false).c_str());
  printf(" destroy_pins_freed=%s", destroyed(reinterpret_cast<CUcontext>(0x3456), true, true).c_str());
  printf(" destroy_without_pins=%s", destroyed(reinterpret_cast<CUcontext>(0x4567), false, false).c_str());
  // A registration in the context, still live at its destroy.
  set_current(reinterpret_cast<CUcontext>(0x5678));
  reg(rw + 6 * page, page, 0);
  int n = *destroys;
  r = ctx_destroy(reinterpret_cast<CUcontext>(0x5678));
  printf(" destroy_with_registration=%d,%d\n", r, *destroys - n);
  unreg(rw + 6 * page);
  set_current(nullptr);

  // event_rerecord_while_pending_dropped: records that reached the driver.
  const CUevent e_pending = reinterpret_cast<CUevent>(0xE1), e_done = reinterpret_cast<CUevent>(0xE2);
  *pending = e_pending;
  auto recorded = [&](auto&& call) {
    const int k = *records;
    CUresult rc = call();
    return std::to_string(rc) + "," + std::to_string(*records - k);
  };
  printf("rerecord_pending=%s", recorded([&] { return record(e_pending, blocking); }).c_str());
  printf(" rerecord_pending_with_flags=%s",
         recorded([&] { return record_flags(e_pending, blocking, 0); }).c_str());
  printf(" record_done=%s", recorded([&] { return record(e_done, blocking); }).c_str());
  printf(" rerecord_pending_captured=%s\n",
         recorded([&] { return record(e_pending, capturing); }).c_str());
  *pending = nullptr;

  // host_pool_poisoned_after_failed_alloc: results of an allocation above the maximum (the fake
  // refuses above 1 MiB) and of a small one after it, per pool kind.
  auto pool_after_failure = [&](CUmemLocationType where, size_t max_size) {
    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = where;
    props.maxSize = max_size;
    CUmemoryPool pool = nullptr;
    if (pool_create(&pool, &props) != CUDA_SUCCESS) return std::string("create failed");
    CUdeviceptr d = 0;
    const int k = *pool_allocs;
    CUresult big_rc = pool_alloc(&d, 4 << 20, pool, blocking);
    CUresult small_rc = pool_alloc(&d, 4096, pool, blocking);
    CUresult again_rc = pool_alloc(&d, 4096, pool, blocking);
    return std::to_string(big_rc) + "," + std::to_string(small_rc) + "," +
           std::to_string(again_rc) + "," + std::to_string(*pool_allocs - k);
  };
  printf("host_pool_max=%s", pool_after_failure(CU_MEM_LOCATION_TYPE_HOST, 2 << 20).c_str());
  printf(" host_numa_pool_max=%s", pool_after_failure(CU_MEM_LOCATION_TYPE_HOST_NUMA, 2 << 20).c_str());
  printf(" host_pool_no_max=%s", pool_after_failure(CU_MEM_LOCATION_TYPE_HOST, 0).c_str());
  printf(" device_pool_max=%s\n", pool_after_failure(CU_MEM_LOCATION_TYPE_DEVICE, 2 << 20).c_str());

  // non_blocking_elapsed_time_from_submission: the elapsed time (the fake's is always 5 ms).
  auto timed = [&](Stream first, Stream second) {
    const CUevent a = reinterpret_cast<CUevent>(0xE3), b = reinterpret_cast<CUevent>(0xE4);
    record(a, first);
    record_flags(b, second, 0);
    float ms = -1;
    CUresult rc = elapsed(&ms, a, b);
    char text[32];
    snprintf(text, sizeof(text), "%d,%.1f", rc, ms);
    return std::string(text);
  };
  printf("elapsed_non_blocking=%s elapsed_mixed=%s elapsed_blocking=%s\n",
         timed(non_blocking, non_blocking).c_str(), timed(blocking, non_blocking).c_str(),
         timed(blocking, blocking).c_str());

  // partial_host_atomics_claimed_without_ops: attributes 86 and 147, without and with native
  // host atomics.
  int a86 = -1, a147 = -1;
  *no_native = 1;
  dev_attr(&a86, CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, 0);
  dev_attr(&a147, CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED, 0);
  printf("atomics_none=%d,%d", a86, a147);
  *no_native = 0;
  dev_attr(&a86, CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, 0);
  dev_attr(&a147, CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED, 0);
  printf(" atomics_native=%d,%d\n", a86, a147);
  munmap(rw, 8 * page);
  return 0;
}

// One call inside and one beside the trigger of each fault of batch blind-11, each printed as
// key=value; the fake driver answers as r580 would (testdata/fake_libcuda.c).
int Blind11() {
  using Stream = CUstream;
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto alloc_host = Get<CUresult (*)(void**, size_t)>("cuMemAllocHost");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto ptr_attr = Get<CUresult (*)(void*, CUpointer_attribute, CUdeviceptr)>("cuPointerGetAttribute");
  auto ptr_attrs =
      Get<CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr)>("cuPointerGetAttributes");
  auto devptr = Get<CUresult (*)(CUdeviceptr*, void*, unsigned)>("cuMemHostGetDevicePointer");
  auto set_current = Get<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  auto sync = Get<CUresult (*)()>("cuCtxSynchronize");
  auto stream_sync = Get<CUresult (*)(Stream)>("cuStreamSynchronize");
  auto htod_async = Get<CUresult (*)(CUdeviceptr, const void*, size_t, Stream)>("cuMemcpyHtoDAsync");
  auto copy_async = Get<CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, Stream)>("cuMemcpyAsync");
  auto set2d16 = Get<CUresult (*)(CUdeviceptr, size_t, unsigned short, size_t, size_t)>("cuMemsetD2D16");
  auto set2d16_async = Get<CUresult (*)(CUdeviceptr, size_t, unsigned short, size_t, size_t, Stream)>(
      "cuMemsetD2D16Async");
  auto copy3d = Get<CUresult (*)(const CUDA_MEMCPY3D*)>("cuMemcpy3D");
  auto copy3d_async = Get<CUresult (*)(const CUDA_MEMCPY3D*, Stream)>("cuMemcpy3DAsync");
  auto batch =
      Get<CUresult (*)(Stream, unsigned, CUstreamBatchMemOpParams*, unsigned)>("cuStreamBatchMemOp");
  auto pool_create = Get<CUresult (*)(CUmemoryPool*, const CUmemPoolProps*)>("cuMemPoolCreate");
  auto pool_alloc =
      Get<CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, Stream)>("cuMemAllocFromPoolAsync");
  auto free_async = Get<CUresult (*)(CUdeviceptr, Stream)>("cuMemFreeAsync");
  auto primary_set = Get<CUresult (*)(CUdevice, unsigned)>("cuDevicePrimaryCtxSetFlags");
  auto primary_state = Get<CUresult (*)(CUdevice, unsigned*, int*)>("cuDevicePrimaryCtxGetState");
  auto ctx_set_flags = Get<CUresult (*)(unsigned)>("cuCtxSetFlags");
  auto ctx_get_flags = Get<CUresult (*)(unsigned*)>("cuCtxGetFlags");
  auto graph_launch = Get<CUresult (*)(CUgraphExec, Stream)>("cuGraphLaunch");
  auto graph_destroy = Get<CUresult (*)(CUgraphExec)>("cuGraphExecDestroy");
  auto event_create = Get<CUresult (*)(CUevent*, unsigned)>("cuEventCreate");
  auto elapsed = Get<CUresult (*)(float*, CUevent, CUevent)>("cuEventElapsedTime");
  auto mark_device = reinterpret_cast<void (*)(uintptr_t, size_t)>(FakeSymbol("fake_mark_device"));
  auto host_funcs = static_cast<int*>(FakeSymbol("fake_host_funcs"));
  auto copy_src = static_cast<uintptr_t*>(FakeSymbol("fake_last_copy_src"));
  auto batch_ops = static_cast<char*>(FakeSymbol("fake_batch_ops"));
  auto pool_frees = static_cast<int*>(FakeSymbol("fake_pool_frees"));
  auto graph_stream = static_cast<void**>(FakeSymbol("fake_last_graph_stream"));
  auto elapsed_ms = static_cast<float*>(FakeSymbol("fake_elapsed_ms"));
  if (!alloc || !alloc_host || !free_host || !reg || !unreg || !ptr_attr || !ptr_attrs || !devptr ||
      !set_current || !sync || !stream_sync || !htod_async || !copy_async || !set2d16 ||
      !set2d16_async || !copy3d || !copy3d_async || !batch || !pool_create || !pool_alloc ||
      !free_async || !primary_set || !primary_state || !ctx_set_flags || !ctx_get_flags ||
      !graph_launch || !graph_destroy || !event_create || !elapsed || !mark_device || !host_funcs ||
      !copy_src || !batch_ops || !pool_frees || !graph_stream || !elapsed_ms)
    return 1;
  const Stream blocking = reinterpret_cast<Stream>(0x10);
  const Stream capturing = reinterpret_cast<Stream>(0xCA);  // fake: being captured
  const size_t page = 4096, mib = size_t{1} << 20;
  CUresult r = CUDA_SUCCESS;

  // memset2d16_page_crossing_row_skips_element: "rc,elements set,bytes written outside the rows".
  static unsigned char area[3 * 4096] __attribute__((aligned(4096)));
  auto set_16 = [&](size_t offset, size_t pitch, size_t w, size_t h, bool async) {
    memset(area, 0, sizeof(area));
    const unsigned short v = 0xa1b2;
    const CUdeviceptr d = reinterpret_cast<CUdeviceptr>(area + offset);
    CUresult rc = async ? set2d16_async(d, pitch, v, w, h, blocking) : set2d16(d, pitch, v, w, h);
    int set = 0, outside = 0;
    for (size_t b = 0; b < sizeof(area); ++b) {
      const bool in_row = b >= offset && (b - offset) / pitch < h && (b - offset) % pitch < 2 * w;
      if (in_row && (b - offset) % 2 == 0) set += memcmp(area + b, &v, 2) == 0;
      if (!in_row) outside += area[b] != 0;
    }
    return std::to_string(rc) + "," + std::to_string(set) + "," + std::to_string(outside);
  };
  // Rows of 100 values 256 bytes apart from 100 bytes before the first page's end: the first
  // row crosses into the second page; rows inside the first page do not cross.
  printf("memset2d16_crossing=%s memset2d16_crossing_async=%s memset2d16_inside=%s\n",
         set_16(page - 100, 256, 100, 3, false).c_str(), set_16(page - 100, 256, 100, 3, true).c_str(),
         set_16(0, 256, 100, 3, false).c_str());

  // registered_devptr_offset_wraps_at_2mib: "rc,offset of the device pointer from the start".
  const size_t span = 3 * mib;
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

  // copy3d_padded_slices_read_packed: "rc,mismatches" of a 2x2-row, 8-byte-wide box.
  static unsigned char host3d[2 * 4 * 16], dev3d[2 * 4 * 16];
  mark_device(reinterpret_cast<uintptr_t>(dev3d), sizeof(dev3d));
  // src_rows/dst_rows: the slice heights (2 = packed, 4 = padded); depth: the slices copied.
  auto copied_3d = [&](bool host_to_device, size_t src_rows, size_t dst_rows, size_t depth, bool async) {
    for (size_t i = 0; i < sizeof(host3d); ++i) {
      host3d[i] = static_cast<unsigned char>(i * 7 + 3);
      dev3d[i] = static_cast<unsigned char>(0xf0 ^ i);
    }
    unsigned char* src = host_to_device ? host3d : dev3d;
    unsigned char* dst = host_to_device ? dev3d : host3d;
    unsigned char before[sizeof(host3d)];
    memcpy(before, src, sizeof(before));
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = host_to_device ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    c.srcHost = src;
    c.srcDevice = reinterpret_cast<CUdeviceptr>(src);
    c.srcPitch = 16;
    c.srcHeight = src_rows;
    c.dstMemoryType = host_to_device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    c.dstHost = dst;
    c.dstDevice = reinterpret_cast<CUdeviceptr>(dst);
    c.dstPitch = 16;
    c.dstHeight = dst_rows;
    c.WidthInBytes = 8;
    c.Height = 2;
    c.Depth = depth;
    CUresult rc = async ? copy3d_async(&c, blocking) : copy3d(&c);
    int bad = 0;
    for (size_t z = 0; z < depth; ++z)
      for (size_t y = 0; y < 2; ++y)
        for (size_t x = 0; x < 8; ++x)
          bad += dst[(z * dst_rows + y) * 16 + x] != before[(z * src_rows + y) * 16 + x];
    return std::to_string(rc) + "," + std::to_string(bad);
  };
  printf("copy3d_host_padded_src=%s copy3d_host_padded_src_async=%s copy3d_host_padded_dst=%s "
         "copy3d_host_packed=%s copy3d_host_padded_one_slice=%s copy3d_device_padded_src=%s\n",
         copied_3d(true, 4, 2, 2, false).c_str(), copied_3d(true, 4, 2, 2, true).c_str(),
         copied_3d(false, 2, 4, 2, false).c_str(), copied_3d(true, 2, 2, 2, false).c_str(),
         copied_3d(true, 4, 2, 1, false).c_str(), copied_3d(false, 4, 2, 2, false).c_str());

  // batch_memop_writes_hoisted_before_wait: "rc,operation kinds in the order the driver got them".
  static unsigned long long words[4];
  auto batched = [&](std::initializer_list<CUstreamBatchMemOpType> kinds) {
    CUstreamBatchMemOpParams ops[8];
    memset(ops, 0, sizeof(ops));
    unsigned n = 0;
    for (CUstreamBatchMemOpType k : kinds) {
      ops[n].operation = k;
      if (k == CU_STREAM_MEM_OP_WAIT_VALUE_32 || k == CU_STREAM_MEM_OP_WAIT_VALUE_64) {
        ops[n].waitValue.address = reinterpret_cast<CUdeviceptr>(&words[0]);
        ops[n].waitValue.value64 = 1;
        ops[n].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
      } else {
        ops[n].writeValue.address = reinterpret_cast<CUdeviceptr>(&words[1 + n % 3]);
        ops[n].writeValue.value64 = 7;
      }
      ++n;
    }
    CUresult rc = batch(blocking, n, ops, 0);
    return std::to_string(rc) + "," + batch_ops;
  };
  printf("batch_wait_then_writes=%s batch_write_wait_write=%s batch_writes_then_wait=%s "
         "batch_writes_only=%s\n",
         batched({CU_STREAM_MEM_OP_WAIT_VALUE_64, CU_STREAM_MEM_OP_WRITE_VALUE_64,
                  CU_STREAM_MEM_OP_WRITE_VALUE_32}).c_str(),
         batched({CU_STREAM_MEM_OP_WRITE_VALUE_32, CU_STREAM_MEM_OP_WAIT_VALUE_32,
                  CU_STREAM_MEM_OP_WRITE_VALUE_64}).c_str(),
         batched({CU_STREAM_MEM_OP_WRITE_VALUE_64, CU_STREAM_MEM_OP_WAIT_VALUE_64}).c_str(),
         batched({CU_STREAM_MEM_OP_WRITE_VALUE_64, CU_STREAM_MEM_OP_WRITE_VALUE_32}).c_str());

  // pageable_async_htod_reads_source_late: "rc,where the copy that reached the driver read from
  // (own: the caller's source; other),host functions queued,mismatches".
  static unsigned char dev[256], pageable[256];
  mark_device(reinterpret_cast<uintptr_t>(dev), sizeof(dev));
  void* pinned = nullptr;
  if (alloc(&pinned, 256, 0) != CUDA_SUCCESS) return 1;
  auto late = [&](const void* src, size_t n, auto&& copy) {
    unsigned char* s = static_cast<unsigned char*>(const_cast<void*>(src));
    for (int i = 0; i < 256; ++i) {
      s[i] = static_cast<unsigned char>(i * 5 + 1);
      dev[i] = 0;
    }
    const int funcs = *host_funcs;
    CUresult rc = copy();
    int bad = 0;
    for (size_t i = 0; i < n; ++i) bad += dev[i] != s[i];
    return std::to_string(rc) + "," + (*copy_src == reinterpret_cast<uintptr_t>(src) ? "own" : "other") +
           "," + std::to_string(*host_funcs - funcs) + "," + std::to_string(bad);
  };
  const CUdeviceptr dp = reinterpret_cast<CUdeviceptr>(dev);
  printf("pageable_htod_async=%s",
         late(pageable, 256, [&] { return htod_async(dp, pageable, 256, blocking); }).c_str());
  printf(" pageable_unified_async=%s", late(pageable, 256, [&] {
           return copy_async(dp, reinterpret_cast<CUdeviceptr>(pageable), 256, blocking);
         }).c_str());
  printf(" pageable_htod_async_again=%s",
         late(pageable, 200, [&] { return htod_async(dp, pageable, 200, blocking); }).c_str());
  printf(" pinned_htod_async=%s",
         late(pinned, 256, [&] { return htod_async(dp, pinned, 256, blocking); }).c_str());
  printf(" pageable_htod_captured=%s\n",
         late(pageable, 256, [&] { return htod_async(dp, pageable, 256, capturing); }).c_str());
  free_host(pinned);

  // host_pool_async_free_leaks: "rc,frees that reached the driver" per pool kind.
  auto pool_free = [&](CUmemLocationType where) {
    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = where;
    CUmemoryPool pool = nullptr;
    CUdeviceptr d = 0;
    if (pool_create(&pool, &props) != CUDA_SUCCESS || pool_alloc(&d, 4096, pool, blocking) != CUDA_SUCCESS)
      return std::string("alloc failed");
    const int frees = *pool_frees;
    CUresult rc = free_async(d, blocking);
    return std::to_string(rc) + "," + std::to_string(*pool_frees - frees);
  };
  printf("free_async_host_pool=%s free_async_host_numa_pool=%s free_async_device_pool=%s\n",
         pool_free(CU_MEM_LOCATION_TYPE_HOST).c_str(), pool_free(CU_MEM_LOCATION_TYPE_HOST_NUMA).c_str(),
         pool_free(CU_MEM_LOCATION_TYPE_DEVICE).c_str());

  // unregister_elsewhere_keeps_registration: "unregister rc,memory type rc afterwards,the
  // registering context's unregister rc".
  char* rw = static_cast<char*>(mmap(nullptr, 8 * page, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (rw == MAP_FAILED) return 1;
  const CUcontext ctx_a = reinterpret_cast<CUcontext>(0x1234), ctx_b = reinterpret_cast<CUcontext>(0x5678);
  auto unregistered = [&](char* p, CUcontext other) {
    set_current(ctx_a);
    if (reg(p, page, 0) != CUDA_SUCCESS) return std::string("register failed");
    set_current(other);
    CUresult first = unreg(p);
    unsigned type = 0;
    CUresult known = ptr_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(p));
    set_current(ctx_a);
    CUresult owner = unreg(p);
    set_current(nullptr);
    return std::to_string(first) + "," + std::to_string(known) + "," + std::to_string(owner);
  };
  printf("unregister_elsewhere=%s unregister_same_context=%s\n", unregistered(rw, ctx_b).c_str(),
         unregistered(rw + 2 * page, ctx_a).c_str());

  // rejected_ctx_flags_applied_anyway: "rc,flags read back" after each call.
  auto primary_flags = [&](unsigned f) {
    CUresult rc = primary_set(0, f);
    unsigned now = 0;
    int active = 0;
    primary_state(0, &now, &active);
    return std::to_string(rc) + "," + std::to_string(now);
  };
  auto ctx_flags = [&](unsigned f) {
    CUresult rc = ctx_set_flags(f);
    unsigned now = 0;
    ctx_get_flags(&now);
    return std::to_string(rc) + "," + std::to_string(now);
  };
  printf("primary_flags_rejected=%s", primary_flags(0x100 | CU_CTX_SCHED_BLOCKING_SYNC).c_str());
  printf(" primary_flags_valid=%s", primary_flags(CU_CTX_SCHED_YIELD).c_str());
  printf(" primary_flags_rejected_after_valid=%s", primary_flags(0x200 | CU_CTX_SCHED_SPIN).c_str());
  printf(" ctx_flags_rejected=%s", ctx_flags(0x100 | CU_CTX_SYNC_MEMOPS).c_str());
  printf(" ctx_flags_valid=%s\n", ctx_flags(CU_CTX_SCHED_SPIN).c_str());
  primary_set(0, 0);
  ctx_set_flags(0);

  // graph_relaunch_skips_stream_order: "rc,stream the launch reached the driver on (own: the
  // caller's; other)".
  auto launched = [&](CUgraphExec g, Stream s) {
    *graph_stream = nullptr;
    CUresult rc = graph_launch(g, s);
    return std::to_string(rc) + "," + (*graph_stream == s ? "own" : "other");
  };
  const CUgraphExec exec_a = reinterpret_cast<CUgraphExec>(0x6A), exec_b = reinterpret_cast<CUgraphExec>(0x6B);
  printf("graph_first=%s", launched(exec_a, blocking).c_str());
  printf(" graph_second=%s", launched(exec_a, blocking).c_str());
  printf(" graph_third=%s", launched(exec_a, blocking).c_str());
  printf(" graph_other_first=%s", launched(exec_b, blocking).c_str());
  printf(" graph_relaunch_captured=%s", launched(exec_a, capturing).c_str());
  graph_destroy(exec_a);
  printf(" graph_handle_reused_first=%s\n", launched(exec_a, blocking).c_str());
  graph_destroy(exec_a);
  graph_destroy(exec_b);

  // failed_pin_error_resurfaces_at_next_sync: "allocation rc,synchronisation rc".
  void* nothing = nullptr;
  const size_t impossible = size_t{1} << 60;
  r = alloc(&nothing, 64, 0x10);  // bad flags: INVALID_VALUE
  printf("sync_after_bad_flags=%d,%d", r, sync());
  r = alloc(&nothing, impossible, 0);
  printf(" sync_after_failed_hostalloc=%d,%d", r, sync());
  printf(" sync_again=%d", sync());
  r = alloc_host(&nothing, impossible);
  printf(" stream_sync_after_failed_allochost=%d,%d", r, stream_sync(blocking));
  printf(" stream_sync_again=%d\n", stream_sync(blocking));

  // blocking_sync_event_elapsed_whole_ms: "rc,elapsed ms" (the fake's is 2.75 here).
  CUevent e_blocking = nullptr, e_plain = nullptr, e_other = nullptr;
  if (event_create(&e_blocking, CU_EVENT_BLOCKING_SYNC) != CUDA_SUCCESS ||
      event_create(&e_plain, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
      event_create(&e_other, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
    return 1;
  *elapsed_ms = 2.75f;
  auto timed = [&](CUevent a, CUevent b) {
    float ms = -1;
    CUresult rc = elapsed(&ms, a, b);
    char text[32];
    snprintf(text, sizeof(text), "%d,%.2f", rc, ms);
    return std::string(text);
  };
  printf("elapsed_blocking_start=%s elapsed_blocking_end=%s elapsed_default=%s\n",
         timed(e_blocking, e_plain).c_str(), timed(e_plain, e_blocking).c_str(),
         timed(e_plain, e_other).c_str());
  *elapsed_ms = 5.0f;

  // attributes_page_granular_for_subpage_registration: "rc,type,host pointer,device pointer,
  // range start" (pointers as offsets from the page; the single-attribute rc beside).
  char* sub = rw + 4 * page;
  if (reg(sub + 100, 200, 0) != CUDA_SUCCESS) return 1;
  auto described = [&](char* p) {
    unsigned type = 7;
    void* host = reinterpret_cast<void*>(1);
    CUdeviceptr dev_ptr = 1, start = 1;
    CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                   CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR};
    void* data[] = {&type, &host, &dev_ptr, &start};
    CUresult rc = ptr_attrs(4, which, data, reinterpret_cast<CUdeviceptr>(p));
    const CUdeviceptr base = reinterpret_cast<CUdeviceptr>(sub);
    auto off = [&](CUdeviceptr x) {
      return x ? std::to_string(static_cast<long long>(x - base)) : std::string("null");
    };
    unsigned single_type = 0;
    CUresult single = ptr_attr(&single_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(p));
    return std::to_string(rc) + "," + std::to_string(type) + "," + off(reinterpret_cast<CUdeviceptr>(host)) +
           "," + off(dev_ptr) + "," + off(start) + "," + std::to_string(single);
  };
  printf("attrs_beside_subpage=%s attrs_inside_subpage=%s attrs_next_page=%s\n",
         described(sub + 1000).c_str(), described(sub + 150).c_str(), described(sub + page + 10).c_str());
  unreg(sub + 100);
  munmap(rw, 8 * page);
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
    printf("order\tname\trule\tfamily\tkind\tentries\tdescription\tjustification\n");
    for (size_t i = 0; i < n; ++i)
      printf("%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f[i].order, f[i].name, f[i].rule, f[i].family,
             f[i].kind, entries(f[i].name), f[i].description, f[i].doc);
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

}  // namespace

int main(int argc, char** argv) {
  const char* const kModes[] = {"run", "catalogue", "conforming", "variations", "blind10",
                                "blind11"};
  bool known = false;
  for (const char* m : kModes) known = known || (argc == 2 && strcmp(argv[1], m) == 0);
  if (!known) {
    fprintf(stderr, "usage: shim_client run|catalogue|conforming|variations|blind10|blind11\n");
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
           : mode == "blind10"    ? Blind10()
           : mode == "blind11"    ? Blind11()
                                  : Variations();
  fflush(stdout);
  return rc;
}
