// Probes of the asynchronous copy faults (catalogue/async_copies.cc).
#include <stdint.h>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

// unified_async_copy_drops_partial_word: "rc,mismatches" of cuMemcpyAsync at counts that are
// and are not multiples of 4, and of cuMemcpyHtoDAsync beside them.
int UnifiedAsyncPartialWord() {
  auto copy_async = Get<CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream)>("cuMemcpyAsync");
  auto htod_async = Get<CUresult (*)(CUdeviceptr, const void*, size_t, CUstream)>("cuMemcpyHtoDAsync");
  if (!copy_async || !htod_async) return 1;
  const CUdeviceptr dp = reinterpret_cast<CUdeviceptr>(CopyDevice());
  const CUdeviceptr hp = reinterpret_cast<CUdeviceptr>(CopyHost());
  printf("unified_htod_6=%s", Copied(6, [&] { return copy_async(dp, hp, 6, kBlocking); }).c_str());
  printf(" unified_dtoh_7=%s", Copied(7, [&] { return copy_async(hp, dp, 7, kBlocking); }).c_str());
  printf(" unified_htod_8=%s", Copied(8, [&] { return copy_async(dp, hp, 8, kBlocking); }).c_str());
  printf(" unified_htod_3=%s", Copied(3, [&] { return copy_async(dp, hp, 3, kBlocking); }).c_str());
  printf(" explicit_htod_async_6=%s\n",
         Copied(6, [&] { return htod_async(dp, CopyHost(), 6, kBlocking); }).c_str());
  return 0;
}

// pageable_async_htod_reads_source_late: "rc,where the copy that reached the driver read from
// (own: the caller's source; other),host functions queued,mismatches".
int PageableAsyncHtodLate() {
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto htod_async = Get<CUresult (*)(CUdeviceptr, const void*, size_t, CUstream)>("cuMemcpyHtoDAsync");
  auto copy_async = Get<CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream)>("cuMemcpyAsync");
  auto mark_device = reinterpret_cast<void (*)(uintptr_t, size_t)>(FakeSymbol("fake_mark_device"));
  auto host_funcs = static_cast<int*>(FakeSymbol("fake_host_funcs"));
  auto copy_src = static_cast<uintptr_t*>(FakeSymbol("fake_last_copy_src"));
  if (!alloc || !free_host || !htod_async || !copy_async || !mark_device || !host_funcs || !copy_src)
    return 1;
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
         late(pageable, 256, [&] { return htod_async(dp, pageable, 256, kBlocking); }).c_str());
  printf(" pageable_unified_async=%s", late(pageable, 256, [&] {
           return copy_async(dp, reinterpret_cast<CUdeviceptr>(pageable), 256, kBlocking);
         }).c_str());
  printf(" pageable_htod_async_again=%s",
         late(pageable, 200, [&] { return htod_async(dp, pageable, 200, kBlocking); }).c_str());
  printf(" pinned_htod_async=%s",
         late(pinned, 256, [&] { return htod_async(dp, pinned, 256, kBlocking); }).c_str());
  printf(" pageable_htod_captured=%s\n",
         late(pageable, 256, [&] { return htod_async(dp, pageable, 256, kCapturing); }).c_str());
  free_host(pinned);
  return 0;
}

// copies_beside_running_kernel_throttled: "rc,host functions queued ahead of the copy" of
// pinned copies beside a kernel still running on kBlocking (each entry point), on its own
// stream, into pageable memory, and beside it once it has completed.
int CopiesBesideRunningKernel() {
  auto launch = Get<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, unsigned, CUstream, void**, void**)>("cuLaunchKernel");
  auto alloc = Get<CUresult (*)(void**, size_t, unsigned)>("cuMemHostAlloc");
  auto free_host = Get<CUresult (*)(void*)>("cuMemFreeHost");
  auto htod_async = Get<CUresult (*)(CUdeviceptr, const void*, size_t, CUstream)>("cuMemcpyHtoDAsync");
  auto dtoh_async = Get<CUresult (*)(void*, CUdeviceptr, size_t, CUstream)>("cuMemcpyDtoHAsync");
  auto copy_async = Get<CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream)>("cuMemcpyAsync");
  auto set_current = Get<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  auto host_funcs = static_cast<int*>(FakeSymbol("fake_host_funcs"));
  auto pending = static_cast<void**>(FakeSymbol("fake_pending_event"));
  auto recorded = static_cast<void**>(FakeSymbol("fake_last_recorded_event"));
  if (!launch || !alloc || !free_host || !htod_async || !dtoh_async || !copy_async ||
      !set_current || !host_funcs || !pending || !recorded)
    return 1;
  void* pinned = nullptr;
  if (alloc(&pinned, 256, 0) != CUDA_SUCCESS) return 1;
  const CUdeviceptr dev = reinterpret_cast<CUdeviceptr>(CopyDevice());
  const CUdeviceptr host = reinterpret_cast<CUdeviceptr>(pinned);
  auto held = [&](auto&& copy) {
    const int funcs = *host_funcs;
    CUresult rc = copy();
    return std::to_string(rc) + "," + std::to_string(*host_funcs - funcs);
  };
  set_current(kContextA);
  *recorded = nullptr;
  launch(reinterpret_cast<CUfunction>(0xF00), 4, 1, 1, 32, 1, 1, 0, kBlocking, nullptr, nullptr);
  *pending = *recorded;  // that kernel is still running (the shim's event, if any)
  printf("beside_kernel_htod=%s", held([&] { return htod_async(dev, pinned, 256, kNonBlocking); }).c_str());
  printf(" beside_kernel_dtoh=%s", held([&] { return dtoh_async(pinned, dev, 256, kNonBlocking); }).c_str());
  printf(" beside_kernel_unified=%s", held([&] { return copy_async(dev, host, 256, kNonBlocking); }).c_str());
  printf(" behind_kernel_same_stream=%s", held([&] { return htod_async(dev, pinned, 256, kBlocking); }).c_str());
  printf(" beside_kernel_pageable=%s",
         held([&] { return dtoh_async(CopyHost(), dev, 256, kNonBlocking); }).c_str());
  *pending = nullptr;
  printf(" after_kernel_htod=%s\n", held([&] { return htod_async(dev, pinned, 256, kNonBlocking); }).c_str());
  set_current(nullptr);
  free_host(pinned);
  return 0;
}

const Probe kProbes[] = {
    {"unified_async_copy_drops_partial_word", UnifiedAsyncPartialWord},
    {"pageable_async_htod_reads_source_late", PageableAsyncHtodLate},
    {"copies_beside_running_kernel_throttled", CopiesBesideRunningKernel},
};

}  // namespace

extern const ProbeArea kAsyncCopiesProbes = Probes("async_copies", kProbes);

}  // namespace probes
