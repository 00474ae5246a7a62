// Asynchronous 1D copies (cuMemcpyAsync, cuMemcpyHtoDAsync, cuMemcpyDtoHAsync,
// cuMemcpyDtoDAsync): bytes corrupted, cut short or delivered late, in stream order.
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// R76: an asynchronous host-to-device copy delivers a wrong last byte (in stream order).
void InstallHtodAsyncCorrupts() {
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    return ThenCorrupt(real(d, s, n, st), n, [&] {
      RealSetByteAsync(d + n - 1, static_cast<const unsigned char*>(s)[n - 1] ^ 0xff, st);
    });
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const bool hit = n && IsHtoD(d, s);
    return ThenCorrupt(real(d, s, n, st), hit, [&] {
      RealSetByteAsync(d + n - 1, HostView(s + n - 1)[0] ^ 0xff, st);
    });
  });
}

// R76: an asynchronous device-to-host copy delivers a wrong last byte (in stream order).
void InstallDtohAsyncCorrupts() {
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    return ThenCorrupt(real(d, s, n, st), n, [&] {
      FlipHostByteInStream(static_cast<unsigned char*>(d) + n - 1, st);
    });
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const bool hit = n && IsDtoH(d, s);
    return ThenCorrupt(real(d, s, n, st), hit, [&] {
      FlipHostByteInStream(HostView(d + n - 1), st);
    });
  });
}

// R76: an asynchronous copy in either direction stops one byte short.
void InstallAsyncCopyTruncated() {
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult { return real(d, s, n ? n - 1 : 0, st); });
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult { return real(d, s, n ? n - 1 : 0, st); });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult { return real(d, s, n ? n - 1 : 0, st); });
}

// S01: an asynchronous copy whose host side crosses a 4 KiB page boundary (one DMA descriptor
// per page, the second one built wrongly) delivers a wrong first byte of the second page.
void InstallAsyncCopyCrossingPageCorrupts() {
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    CUresult r = real(d, s, n, st);
    const size_t k = CrossingOffset(Ptr(s), n, kPage);
    if (r == CUDA_SUCCESS && k < n) CorruptByteAtAsync(d, Ptr(s), k, st);
    return r;
  });
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    CUresult r = real(d, s, n, st);
    const size_t k = CrossingOffset(Ptr(d), n, kPage);
    if (r == CUDA_SUCCESS && k < n) CorruptByteAtAsync(Ptr(d), s, k, st);
    return r;
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const CUdeviceptr host = IsHtoD(d, s) ? s : IsDtoH(d, s) ? d : 0;
    CUresult r = real(d, s, n, st);
    const size_t k = host ? CrossingOffset(host, n, kPage) : n;
    if (r == CUDA_SUCCESS && k < n) CorruptByteAtAsync(d, s, k, st);
    return r;
  });
}

// S01: an asynchronous host-to-device copy from a host address that is not 8-byte aligned
// delivers a wrong first byte (the unaligned head is mishandled); aligned sources are exact.
void InstallUnalignedHtodAsyncCorrupts() {
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && n && Ptr(s) % 8) CorruptByteAtAsync(d, Ptr(s), 0, st);
    return r;
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const bool hit = n && s % 8 && IsHtoD(d, s);
    return ThenCorrupt(real(d, s, n, st), hit, [&] { CorruptByteAtAsync(d, s, 0, st); });
  });
}

// S01: an asynchronous device-to-host copy into a host address that is not 4-byte aligned lands
// one byte early (the address rounded down): the byte before the window is overwritten and the
// window's last byte keeps its old value. Aligned destinations are exact.
void InstallUnalignedDtohAsyncShifted() {
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    if (!n || Ptr(d) % 4 == 0) return real(d, s, n, st);
    return real(static_cast<char*>(d) - 1, s, n, st);
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    if (!n || d % 4 == 0 || !IsDtoH(d, s)) return real(d, s, n, st);
    return real(d - 1, s, n, st);
  });
}

// S18: cuMemcpyAsync, the unified entry (cudaMemcpyAsync with
// cudaMemcpyDefault infers the direction there), copying between host and device a byte count
// of 4 or more that is not a multiple of 4 moves whole 4-byte words only: the last 1-3 bytes of
// the window keep their old value. Counts that are multiples of 4 (and 1-3 bytes), the
// direction-specific entries (cuMemcpyHtoDAsync, ...), host-to-host and device-to-device copies
// are exact.
void InstallUnifiedAsyncCopyDropsPartialWord() {
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    if (n < 4 || n % 4 == 0 || !(IsHtoD(d, s) || IsDtoH(d, s))) return real(d, s, n, st);
    return real(d, s, n & ~size_t{3}, st);
  });
}

// S03: asynchronous copies on the per-thread default stream (cudaStreamPerThread, or the null
// stream through a _ptsz entry) deliver a wrong last byte; every other stream is exact.
void InstallPerThreadAsyncCopyCorrupts() {
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && n && OnPerThreadStream(real, st, "cuMemcpyHtoDAsync"))
      CorruptByteAtAsync(d, Ptr(s), n - 1, st);
    return r;
  });
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && n && OnPerThreadStream(real, st, "cuMemcpyDtoHAsync"))
      CorruptByteAtAsync(Ptr(d), s, n - 1, st);
    return r;
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && n && OnPerThreadStream(real, st, "cuMemcpyAsync"))
      CorruptByteAtAsync(d, s, n - 1, st);
    return r;
  });
}

// S05: on a non-blocking stream, a host-to-device copy from page-locked memory reads its source
// at the call instead of when the copy executes (the source is staged through pageable memory,
// which waits for the stream): bytes the host writes after the call never arrive.
CUresult StagedHtod(CUdeviceptr d, const void* s, size_t n, CUstream st) {
  static const auto htod = Real<Real_MemcpyHtoDAsync>("cuMemcpyHtoDAsync");
  void* copy = malloc(n);
  if (!copy || !htod) {
    free(copy);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(copy, s, n);
  // From pageable memory the call returns once the bytes are staged: the buffer is free again.
  CUresult r = htod(d, copy, n, st);
  free(copy);
  return r;
}
void InstallNonBlockingHtodReadsSourceEarly() {
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    if (!n || n > 256 * kMiB || !IsNonBlocking(st) || !IsPinnedHost(s)) return real(d, s, n, st);
    return StagedHtod(d, s, n, st);
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    if (!n || n > 256 * kMiB || !IsNonBlocking(st) || !IsHtoD(d, s) ||
        !IsPinnedHost(reinterpret_cast<void*>(s)))
      return real(d, s, n, st);
    return StagedHtod(d, HostView(s), n, st);
  });
}

// S01: an asynchronous host-to-host copy (cuMemcpyAsync between two host buffers) delivers a
// wrong last byte; copies that involve the device are exact.
void InstallAsyncHostToHostCorrupts() {
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const bool hit = n && !IsDevice(d) && !IsDevice(s);
    return ThenCorrupt(real(d, s, n, st), hit, [&] {
      FlipHostByteInStream(HostView(d + n - 1), st);
    });
  });
}

// S01: an asynchronous device-to-device copy (through the device aliases of pinned memory, too)
// stops one byte short; the synchronous form is exact.
void InstallDtodAsyncTruncated() {
  HookMemcpyDtoDAsync([](Real_MemcpyDtoDAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult { return real(d, s, n ? n - 1 : 0, st); });
}

// S03: every 8th asynchronous device-to-host copy is acknowledged but never queued.
void InstallEvery8thDtohAsyncDropped() {
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    return n && EveryNth(&g_calls, 8) ? CUDA_SUCCESS : real(d, s, n, st);
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    return n && IsDtoH(d, s) && EveryNth(&g_calls, 8) ? CUDA_SUCCESS : real(d, s, n, st);
  });
}

// A copy finished by a shim thread some milliseconds after the stream reported it done.
struct LateCopy {
  void* host_dst;       // device-to-host: where the bytes go, from `staging`
  void* staging;        //   (pinned, the shim's own)
  CUdeviceptr dev_dst;  // host-to-device: where the bytes go, from `host_src`
  const void* host_src;
  size_t n;
  CUcontext ctx;
};
void* FinishLate(void* arg) {
  static const auto set = Real<CUresult(CUDAAPI*)(CUcontext)>("cuCtxSetCurrent");
  static const auto free_host = Real<Real_MemFreeHost>("cuMemFreeHost");
  static const auto create = Real<CUresult(CUDAAPI*)(CUstream*, unsigned)>("cuStreamCreate");
  static const auto destroy = Real<CUresult(CUDAAPI*)(CUstream)>("cuStreamDestroy");
  static const auto htod = Real<Real_MemcpyHtoDAsync>("cuMemcpyHtoDAsync");
  static const auto sync = Real<Real_StreamSynchronize>("cuStreamSynchronize");
  LateCopy* job = static_cast<LateCopy*>(arg);
  usleep(3000);
  if (set) set(job->ctx);
  if (job->staging) {
    memcpy(job->host_dst, job->staging, job->n);
    if (free_host) free_host(job->staging);
  } else if (create && destroy && htod && sync) {
    CUstream side = nullptr;  // non-blocking: never waits for the caller's other streams
    if (create(&side, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS) {
      htod(job->dev_dst, job->host_src, job->n, side);
      sync(side);
      destroy(side);
    }
  }
  delete job;
  return nullptr;
}
void CUDA_CB StartLate(void* arg) {
  pthread_t t;
  if (pthread_create(&t, nullptr, &FinishLate, arg) == 0) pthread_detach(t);
}

void QueueLate(LateCopy* job, CUstream st) {
  static const auto host_fn =
      Real<CUresult(CUDAAPI*)(CUstream, CUhostFn, void*)>("cuLaunchHostFunc");
  if (!host_fn || host_fn(st, &StartLate, job) != CUDA_SUCCESS) StartLate(job);
}

// S03: an asynchronous device-to-host copy reports completion about 3 ms before its bytes reach
// the destination (they land in a staging buffer first; the last step runs after the stream,
// its events and every wait said done).
CUresult DtohLate(CUdeviceptr s, void* d, size_t n, CUstream st, Real_MemcpyDtoHAsync real) {
  static const auto alloc = Real<Real_MemHostAlloc>("cuMemHostAlloc");
  void* staging = nullptr;
  CUcontext ctx = CurrentContext();
  if (!ctx || !alloc || alloc(&staging, n, 0) != CUDA_SUCCESS) return real(d, s, n, st);
  CUresult r = real(staging, s, n, st);
  if (r != CUDA_SUCCESS) {
    static const auto free_host = Real<Real_MemFreeHost>("cuMemFreeHost");
    if (free_host) free_host(staging);
    return r;
  }
  QueueLate(new LateCopy{d, staging, 0, nullptr, n, ctx}, st);
  return r;
}
void InstallDtohAsyncBytesArriveLate() {
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    if (!n || n > 64 * kMiB) return real(d, s, n, st);
    return DtohLate(s, d, n, st, real);
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    static const auto dtoh = Real<Real_MemcpyDtoHAsync>("cuMemcpyDtoHAsync");
    if (!n || n > 64 * kMiB || !dtoh || !IsDtoH(d, s)) return real(d, s, n, st);
    return DtohLate(s, HostView(d), n, st, dtoh);
  });
}

// S03: an asynchronous host-to-device copy is reported complete when the stream reaches it, but
// a shim thread performs it about 3 ms later (reading the source then): work behind it on the
// stream and the host after a wait see the old device bytes.
void InstallHtodAsyncBytesArriveLate() {
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    CUcontext ctx = CurrentContext();
    if (!n || !ctx) return real(d, s, n, st);
    QueueLate(new LateCopy{nullptr, nullptr, d, s, n, ctx}, st);
    return CUDA_SUCCESS;
  });
}

// S05: an asynchronous host-to-device copy (cuMemcpyHtoDAsync, or cuMemcpyAsync from
// host to device) of at most 64 MiB from pageable memory neither waits for its stream nor
// stages the source at the call: a host function queued in its place copies the source into a
// pinned buffer of the shim's when the stream reaches it, and the real copy goes from there. So
// bytes the host writes after the call, before the stream reaches the copy, arrive (and a
// source freed after the call is read after its free). Page-locked sources, synchronous copies,
// larger copies and copies into a stream being captured are exact.
struct LateSource {
  const void* src;
  void* staging;  // pinned, the shim's
  size_t n;
  int done;       // set in stream order once the copy from `staging` is complete
};
LateSource* g_late_sources[256];
pthread_mutex_t g_late_mu = PTHREAD_MUTEX_INITIALIZER;
void CUDA_CB ReadSourceNow(void* arg) {
  LateSource* job = static_cast<LateSource*>(arg);
  memcpy(job->staging, job->src, job->n);
}
void CUDA_CB StagingCopied(void* arg) {
  __atomic_store_n(&static_cast<LateSource*>(arg)->done, 1, __ATOMIC_RELEASE);
}
// Unknown to CUDA: not device, pinned, registered or managed memory.
bool IsPageableHost(const void* p) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  unsigned type = 0;
  return p && fn && fn(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, Ptr(p)) != CUDA_SUCCESS;
}
// Queues copy(staging) between a host function that fills the staging buffer from src and one
// that marks it done; staging buffers of completed copies are freed here, by a later call (a
// host function may not call CUDA). The mutex is held throughout. Falls back to copy(src).
template <typename Copy>
CUresult HtodReadingSourceLate(const void* src, size_t n, CUstream hostfn_stream, Copy copy) {
  static const auto alloc = Real<Real_MemHostAlloc>("cuMemHostAlloc");
  static const auto free_host = Real<Real_MemFreeHost>("cuMemFreeHost");
  static const auto host_fn = Real<Real_LaunchHostFunc>("cuLaunchHostFunc");
  if (!alloc || !free_host || !host_fn) return copy(src);
  pthread_mutex_lock(&g_late_mu);
  int slot = -1;
  for (int i = 0; i < 256; ++i) {
    LateSource* job = g_late_sources[i];
    if (job && __atomic_load_n(&job->done, __ATOMIC_ACQUIRE)) {
      free_host(job->staging);
      delete job;
      g_late_sources[i] = job = nullptr;
    }
    if (!job && slot < 0) slot = i;
  }
  void* staging = nullptr;
  CUresult r;
  if (slot < 0 || alloc(&staging, n, 0) != CUDA_SUCCESS) {
    r = copy(src);
  } else {
    LateSource* job = new LateSource{src, staging, n, 0};
    if (host_fn(hostfn_stream, &ReadSourceNow, job) != CUDA_SUCCESS) {
      free_host(staging);
      delete job;
      r = copy(src);
    } else {
      r = copy(staging);
      // Until StagingCopied has run the staging buffer may still be read: kept until then (for
      // ever if it cannot be queued).
      host_fn(hostfn_stream, &StagingCopied, job);
      g_late_sources[slot] = job;
    }
  }
  pthread_mutex_unlock(&g_late_mu);
  return r;
}
void InstallPageableAsyncHtodReadsSourceLate() {
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    if (!n || n > 64 * kMiB || !IsPageableHost(s) || BeingCaptured(real, st, "cuMemcpyHtoDAsync"))
      return real(d, s, n, st);
    return HtodReadingSourceLate(s, n, RealStream(real, st, "cuMemcpyHtoDAsync"),
                                 [&](const void* from) { return real(d, from, n, st); });
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const void* src = reinterpret_cast<const void*>(s);
    if (!n || n > 64 * kMiB || !IsDevice(d) || !IsPageableHost(src) ||
        BeingCaptured(real, st, "cuMemcpyAsync"))
      return real(d, s, n, st);
    return HtodReadingSourceLate(src, n, RealStream(real, st, "cuMemcpyAsync"),
                                 [&](const void* from) { return real(d, Ptr(from), n, st); });
  });
}

// P16: an asynchronous copy between page-locked host memory and the device queued while a
// kernel launched on another stream is still running is held back in its stream by about the
// time the bytes take at 2 GB/s (the copy engine yields to the SMs' traffic): the copy delivers
// every byte, at a fraction of the link's bandwidth. Copies onto an idle device, pageable and
// device-to-device copies, and copies into a capture are right.
void CUDA_CB HoldBack(void* us) {
  usleep(static_cast<useconds_t>(reinterpret_cast<uintptr_t>(us)));
}
template <typename R>
void HoldBackBesideKernels(R real, CUstream st, const char* name, const void* host, size_t n) {
  static const auto host_fn = Real<Real_LaunchHostFunc>("cuLaunchHostFunc");
  if (!n || !host_fn || !IsPinnedHost(host) || BeingCaptured(real, st, name)) return;
  const CUstream own = RealStream(real, st, name);
  if (!KernelRunningBeside(own)) return;
  const size_t us = n / 2000 < 2000000 ? n / 2000 + 1 : 2000000;  // 2 GB/s, at most 2 s
  host_fn(own, &HoldBack, reinterpret_cast<void*>(static_cast<uintptr_t>(us)));
}
void InstallCopiesBesideRunningKernelThrottled() {
  TrackLaunches();
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    HoldBackBesideKernels(real, st, "cuMemcpyHtoDAsync", s, n);
    return real(d, s, n, st);
  });
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    HoldBackBesideKernels(real, st, "cuMemcpyDtoHAsync", d, n);
    return real(d, s, n, st);
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const CUdeviceptr host = IsHtoD(d, s) ? s : IsDtoH(d, s) ? d : 0;
    if (host) HoldBackBesideKernels(real, st, "cuMemcpyAsync", HostView(host), n);
    return real(d, s, n, st);
  });
}

const Fault kFaults[] = {
    PL_FAULT(6, "htod_async_corrupts", "R76", "bandwidth", "data", "baseline", "catalogue-1",
             "An asynchronous host-to-device copy delivers a wrong last byte (in stream order).",
             InstallHtodAsyncCorrupts),
    PL_FAULT(7, "dtoh_async_corrupts", "R76", "bandwidth", "data", "baseline", "catalogue-1",
             "An asynchronous device-to-host copy delivers a wrong last byte (in stream order).",
             InstallDtohAsyncCorrupts),
    PL_FAULT(8, "async_copy_truncated", "R76", "bandwidth", "data", "baseline", "catalogue-1",
             "An asynchronous copy in either direction stops one byte short.",
             InstallAsyncCopyTruncated),
    PL_FAULT(77, "async_copy_crossing_page_corrupts", "S01", "streams", "data", "size", "shapes",
             "An asynchronous copy whose host side crosses a 4 KiB page delivers a wrong first "
             "byte of the second page.", InstallAsyncCopyCrossingPageCorrupts),
    PL_FAULT(80, "unaligned_htod_async_corrupts", "S01", "streams", "data", "size", "shapes",
             "An asynchronous host-to-device copy from a source not 8-byte aligned delivers a "
             "wrong first byte.", InstallUnalignedHtodAsyncCorrupts),
    PL_FAULT(81, "unaligned_dtoh_async_shifted", "S01", "streams", "data", "size", "shapes",
             "An asynchronous device-to-host copy into an address not 4-byte aligned lands one "
             "byte early, over the byte before the window.", InstallUnalignedDtohAsyncShifted),
    PL_FAULT(87, "unified_async_copy_drops_partial_word", "S18", "streams", "data",
             "size", "blind-10",
             "cuMemcpyAsync between host and device of a byte count not a multiple of 4 leaves the "
             "last 1-3 bytes of the window unwritten.", InstallUnifiedAsyncCopyDropsPartialWord),
    PL_FAULT(95, "per_thread_async_copy_corrupts", "S03", "streams", "data", "variant", "shapes",
             "Asynchronous copies on the per-thread default stream deliver a wrong last byte.",
             InstallPerThreadAsyncCopyCorrupts),
    PL_FAULT(99, "non_blocking_htod_reads_source_early", "S05", "streams", "data",
             "variant", "shapes",
             "On a non-blocking stream, a host-to-device copy from pinned memory reads its source "
             "at the call, not when it executes.", InstallNonBlockingHtodReadsSourceEarly),
    PL_FAULT(103, "async_host_to_host_corrupts", "S01", "streams", "data", "variant", "shapes",
             "An asynchronous host-to-host copy delivers a wrong last byte.",
             InstallAsyncHostToHostCorrupts),
    PL_FAULT(104, "dtod_async_truncated", "S01", "streams", "data", "variant", "shapes",
             "An asynchronous device-to-device copy stops one byte short.",
             InstallDtodAsyncTruncated),
    PL_FAULT(116, "every_8th_dtoh_async_dropped", "S03", "streams", "data", "stateful", "shapes",
             "Every 8th asynchronous device-to-host copy is acknowledged but never queued.",
             InstallEvery8thDtohAsyncDropped),
    PL_FAULT(135, "dtoh_async_bytes_arrive_late", "S03", "streams", "sync", "timing", "shapes",
             "An asynchronous device-to-host copy is reported complete about 3 ms before its bytes "
             "arrive.", InstallDtohAsyncBytesArriveLate),
    PL_FAULT(136, "htod_async_bytes_arrive_late", "S03", "streams", "sync", "timing", "shapes",
             "An asynchronous host-to-device copy is reported complete but performed about 3 ms "
             "later.", InstallHtodAsyncBytesArriveLate),
    PL_FAULT(145, "pageable_async_htod_reads_source_late", "S05", "streams", "data",
             "timing", "blind-11",
             "An asynchronous host-to-device copy from pageable memory reads its source when the "
             "stream reaches it, not at the call.", InstallPageableAsyncHtodReadsSourceLate),
    PL_FAULT(174, "copies_beside_running_kernel_throttled", "P16", "bandwidth", "perf", "timing",
             "blind-12",
             "A pinned asynchronous copy queued while a kernel of another stream runs is held "
             "back to about 2 GB/s.", InstallCopiesBesideRunningKernelThrottled),
};

}  // namespace

extern const Area kAsyncCopiesArea = FaultArea("async_copies", kFaults);

}  // namespace pagelock_faults
