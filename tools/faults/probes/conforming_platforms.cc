// Probes of the platform variations (catalogue/conforming_platforms.cc), run by shim_client
// variations after the others (Variations() in probes/conforming.cc): one call inside each
// answer a variation changes and calls beside it that it must leave alone. The fake driver
// answers as the H200 with r580 does; fake_r580_deviations turns on r580's known deviations
// (r58, r56-portable, r151) for the calls that need them.
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

using Attr = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);
using Attrs = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);

size_t Page() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Attributes 86, 88, 100 and 147, and the host atomic masks of every operation (and of a count of
// 0, which the driver refuses).
int AttributesAndAtomics() {
  auto attr = Get<CUresult (*)(int*, int, int)>("cuDeviceGetAttribute");
  using Caps = CUresult (*)(unsigned*, const CUatomicOperation*, unsigned, CUdevice);
  auto caps = Get<Caps>("cuDeviceGetHostAtomicCapabilities");
  if (!attr || !caps) return 1;
  int v[4] = {-1, -1, -1, -1};
  const int ids[4] = {CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED,
                      CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
                      CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
                      CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED};
  for (int i = 0; i < 4; ++i) attr(&v[i], ids[i], 0);
  printf("platform_attr86=%d platform_attr88=%d platform_attr100=%d platform_attr147=%d\n", v[0],
         v[1], v[2], v[3]);
  CUatomicOperation ops[CU_ATOMIC_OPERATION_MAX];
  unsigned masks[CU_ATOMIC_OPERATION_MAX];
  for (int i = 0; i < CU_ATOMIC_OPERATION_MAX; ++i) {
    ops[i] = static_cast<CUatomicOperation>(i);
    masks[i] = 0xdead;
  }
  const CUresult r = caps(masks, ops, CU_ATOMIC_OPERATION_MAX, 0);
  std::string text;
  for (int i = 0; i < CU_ATOMIC_OPERATION_MAX; ++i)
    text += (i ? "," : "") + std::to_string(masks[i]);
  printf("atomic_caps_rc=%d atomic_caps=%s", r, text.c_str());
  printf(" atomic_caps_zero_count_rc=%d\n", caps(masks, ops, 0, 0));
  return 0;
}

// A slot as the probe prints it, the same in every process: "unwritten" (still the 0xa5
// filler), "byte" (the byte's own address), "start" (the block's start, `origin`), "page" (the
// byte's page's start), else the number.
std::string SlotText(const unsigned char* slot, size_t width, CUdeviceptr byte,
                     CUdeviceptr origin) {
  bool unwritten = true;
  for (size_t i = 0; i < width; ++i) unwritten = unwritten && slot[i] == 0xa5;
  if (unwritten) return "unwritten";
  uint64_t v = 0;
  memcpy(&v, slot, width);
  if (v && v == byte) return "byte";
  if (v && v == origin) return "start";
  if (v && v == byte / Page() * Page()) return "page";
  return std::to_string(
      static_cast<long long>(width == 4 ? static_cast<int>(v) : static_cast<long long>(v)));
}

// What the single and the batch query say about one byte of a block starting at `origin` (0:
// none): "type/host/start/size" for each (single: "rc:value"), the batch's ordinal and device
// pointer after them.
std::string Story(Attr attr, Attrs attrs, CUdeviceptr at, CUdeviceptr origin) {
  const CUpointer_attribute ids[] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE,      CU_POINTER_ATTRIBUTE_HOST_POINTER,
      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,   CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
  const size_t width[] = {4, 8, 8, 8, 4, 8};
  std::string single, batch;
  unsigned char slots[6][8];
  void* data[6];
  for (int i = 0; i < 6; ++i) {
    unsigned char one[8];
    memset(one, 0xa5, sizeof(one));
    const CUresult r = attr(one, ids[i], at);
    if (i < 4)
      single +=
          (i ? "/" : "") + std::to_string(r) + (r ? "" : ":" + SlotText(one, width[i], at, origin));
    memset(slots[i], 0xa5, sizeof(slots[i]));
    data[i] = slots[i];
  }
  CUpointer_attribute asked[6];
  memcpy(asked, ids, sizeof(asked));
  const CUresult r = attrs(6, asked, data, at);
  for (int i = 0; i < 6; ++i) batch += (i ? "/" : "") + SlotText(slots[i], width[i], at, origin);
  return single + "|" + std::to_string(r) + ":" + batch;
}

// Bytes nobody registered (a heap page, a page mapped without access) and a pinned allocation's,
// as r580 answers them (r151 on). 64 KiB blocks, so that allocation_64k_granular pads none.
int UnknownBytes() {
  auto attr = Get<Attr>("cuPointerGetAttribute");
  auto attrs = Get<Attrs>("cuPointerGetAttributes");
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto r580 = static_cast<int*>(FakeSymbol("fake_r580_deviations"));
  if (!attr || !attrs || !alloc || !free_host || !r580) return 1;
  char* heap = static_cast<char*>(
      mmap(nullptr, 2 * Page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  char* none =
      static_cast<char*>(mmap(nullptr, Page(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  void* pinned = nullptr;
  if (heap == MAP_FAILED || none == MAP_FAILED || alloc(&pinned, 64 * 1024, 0) != CUDA_SUCCESS)
    return 1;
  *r580 = 1;
  printf("heap_byte=%s",
         Story(attr, attrs, reinterpret_cast<CUdeviceptr>(heap + Page() + 100), 0).c_str());
  printf(" no_access_byte=%s",
         Story(attr, attrs, reinterpret_cast<CUdeviceptr>(none + 7), 0).c_str());
  printf(" pinned_byte=%s\n", Story(attr, attrs, reinterpret_cast<CUdeviceptr>(pinned) + 5,
                                    reinterpret_cast<CUdeviceptr>(pinned))
                                  .c_str());
  *r580 = 0;
  free_host(pinned);
  munmap(heap, 2 * Page());
  munmap(none, Page());
  return 0;
}

// RANGE_START_ADDR / RANGE_SIZE of a registration (its first and a middle byte, single and
// batch) and of an allocation; "rc:start offset:size" or "rc".
std::string RangeOf(Attr attr, Attrs attrs, CUdeviceptr at, CUdeviceptr origin) {
  CUdeviceptr start = 0;
  size_t size = 0;
  CUresult r = attr(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, at);
  if (r == CUDA_SUCCESS) r = attr(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, at);
  std::string text = std::to_string(r);
  if (r == CUDA_SUCCESS)
    text +=
        ":" + std::to_string(static_cast<long long>(start - origin)) + ":" + std::to_string(size);
  CUpointer_attribute ids[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                               CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  CUdeviceptr b_start = 7;
  size_t b_size = 7;
  void* data[] = {&b_start, &b_size};
  r = attrs(2, ids, data, at);
  return text + "|" + std::to_string(r) + ":" +
         (b_start ? std::to_string(static_cast<long long>(b_start - origin))
                  : std::string("null")) +
         ":" + std::to_string(b_size);
}

// A registration's range (refused by register_range_attribute_invalid_value) beside an
// allocation's and a byte's after the unregistration.
int RegistrationRanges() {
  auto attr = Get<Attr>("cuPointerGetAttribute");
  auto attrs = Get<Attrs>("cuPointerGetAttributes");
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  if (!attr || !attrs || !reg || !unreg || !alloc || !free_host) return 1;
  char* region = static_cast<char*>(
      mmap(nullptr, 4 * Page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  void* block = nullptr;
  if (region == MAP_FAILED || alloc(&block, 64 * 1024, 0) != CUDA_SUCCESS) return 1;
  char* r = region + Page();
  const CUdeviceptr rp = reinterpret_cast<CUdeviceptr>(r),
                    bp = reinterpret_cast<CUdeviceptr>(block);
  const CUresult registered =
      reg(r, 2 * Page(), 0);  // refused under the no_host_register variations
  printf("platform_register_rc=%d", registered);
  printf(" registration_range_first=%s", RangeOf(attr, attrs, rp, rp).c_str());
  printf(" registration_range_middle=%s", RangeOf(attr, attrs, rp + Page() + 7, rp).c_str());
  printf(" allocation_range=%s", RangeOf(attr, attrs, bp + Page(), bp).c_str());
  if (registered == CUDA_SUCCESS) unreg(r);
  printf(" registration_range_after_unregister=%s\n", RangeOf(attr, attrs, rp, rp).c_str());
  free_host(block);
  munmap(region, 4 * Page());
  return 0;
}

// cuMemHostGetFlags as r580 answers it (r58 and r56-portable on): three allocations in one
// chunk, opened by one with flags 0, and a registration.
int HostFlags() {
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto get_flags = Get<CUresult (*)(unsigned*, void*)>("cuMemHostGetFlags");
  auto r580 = static_cast<int*>(FakeSymbol("fake_r580_deviations"));
  if (!alloc || !free_host || !reg || !unreg || !get_flags || !r580) return 1;
  void* opener = nullptr;
  void* portable = nullptr;
  void* wc = nullptr;
  if (alloc(&opener, 64, 0) || alloc(&portable, 64, CU_MEMHOSTALLOC_PORTABLE) ||
      alloc(&wc, 64, CU_MEMHOSTALLOC_WRITECOMBINED))
    return 1;
  char* region = static_cast<char*>(
      mmap(nullptr, 2 * Page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (region == MAP_FAILED) return 1;
  const CUresult registered = reg(region, Page(), 0);
  *r580 = 1;
  auto flags_of = [&](void* p) {
    unsigned f = 0xdead;
    const CUresult r = get_flags(&f, p);
    return std::to_string(r) + (r ? "" : ":" + std::to_string(f));
  };
  printf("flags_opener=%s flags_portable=%s flags_write_combined=%s flags_registered=%s\n",
         flags_of(opener).c_str(), flags_of(portable).c_str(), flags_of(wc).c_str(),
         flags_of(region).c_str());
  *r580 = 0;
  if (registered == CUDA_SUCCESS) unreg(region);
  munmap(region, 2 * Page());
  free_host(wc);
  free_host(portable);
  free_host(opener);
  return 0;
}

// Hints toward the host on page-locked memory (advise_invalid_device_for_host_location), beside
// hints the documentation lets ignore the location or refuse for the location's type.
int HostHints() {
  using Advise = CUresult (*)(CUdeviceptr, size_t, CUmem_advise, CUmemLocation);
  using Advise8 = CUresult (*)(CUdeviceptr, size_t, CUmem_advise, CUdevice);
  using Prefetch = CUresult (*)(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream);
  auto advise = Get<Advise>("cuMemAdvise");
  auto advise8 = Get<Advise8>("cuMemAdvise", 8000);
  auto prefetch = Get<Prefetch>("cuMemPrefetchAsync");
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  if (!advise || !advise8 || !prefetch || !alloc || !free_host) return 1;
  void* h = nullptr;
  char* pageable = static_cast<char*>(
      mmap(nullptr, Page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (pageable == MAP_FAILED || alloc(&h, 2 * Page(), 0) != CUDA_SUCCESS) return 1;
  const CUdeviceptr hp = reinterpret_cast<CUdeviceptr>(h),
                    pp = reinterpret_cast<CUdeviceptr>(pageable);
  const CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
  const CUmemLocation numa = {CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  const CUmemLocation current = {CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0};
  const CUstream s = reinterpret_cast<CUstream>(0x1);
  printf("hint_preferred_host_rc=%d",
         advise(hp, Page(), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host));
  printf(" hint_preferred_numa_rc=%d",
         advise(hp, Page(), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, numa));
  printf(" hint_8000_preferred_cpu_rc=%d",
         advise8(hp, Page(), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU));
  printf(" hint_accessed_by_numa_rc=%d", advise(hp, Page(), CU_MEM_ADVISE_SET_ACCESSED_BY, numa));
  printf(" hint_read_mostly_host_rc=%d", advise(hp, Page(), CU_MEM_ADVISE_SET_READ_MOSTLY, host));
  printf(" hint_preferred_host_pageable_rc=%d\n",
         advise(pp, Page(), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host));
  printf("hint_prefetch_numa_current_rc=%d", prefetch(hp, Page(), current, 0, s));
  printf(" hint_prefetch_host_bad_flags_rc=%d", prefetch(hp, Page(), host, 1, s));
  printf(" hint_prefetch_host_pageable_rc=%d\n", prefetch(pp, Page(), host, 0, s));
  free_host(h);
  munmap(pageable, Page());
  return 0;
}

}  // namespace

int PlatformVariations() {
  return AttributesAndAtomics() || UnknownBytes() || RegistrationRanges() || HostFlags() ||
                 HostHints()
             ? 1
             : 0;
}

}  // namespace probes
