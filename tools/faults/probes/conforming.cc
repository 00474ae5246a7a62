// Probes of the conforming variations (catalogue/conforming.cc): one call per behaviour a
// variation may change, in one process (shim_client variations).
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

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

}  // namespace

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
  return Ranges() || Pins() || PoolAndHints() || PlatformVariations() ? 1 : 0;
}

}  // namespace probes
