// The catalogue of injected driver faults (issue 12). Each entry is one plausible driver bug: its
// PAGELOCK_FAULT name, the rule of suites/rules.tsv it violates, a one-line description, and the
// hooks that make the real driver misbehave that way (shim.h: a hook gets the real function and
// the caller's arguments).
//
// Data faults corrupt data for real: after the real copy or memset, one byte of the destination
// is overwritten through the real driver (in stream order for asynchronous calls), or the size is
// cut short. Synchronisation faults really return before the work is done. Capability faults
// report an attribute wrongly; one reported as 0 is "handled" when the affected cases turn
// NotSupported (tools/mutation).
//
// tools/faults/catalogue.tsv lists the catalogue (shim_test checks that it matches this file).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tuple>

#include "tools/faults/shim.h"

namespace pagelock_faults {
namespace {

// ---------------------------------------------------------------------------------------------
// Helpers: real driver calls the faults make besides the one they wrap.

CUresult RealCopy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  static const auto fn = Real<Real_Memcpy>("cuMemcpy");
  return fn ? fn(dst, src, n) : CUDA_ERROR_NOT_FOUND;
}

CUresult RealCopyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  static const auto fn = Real<Real_MemcpyAsync>("cuMemcpyAsync");
  return fn ? fn(dst, src, n, s) : CUDA_ERROR_NOT_FOUND;
}

CUresult RealSetByte(CUdeviceptr dst, unsigned char v) {
  static const auto fn = Real<Real_MemsetD8>("cuMemsetD8");
  return fn ? fn(dst, v, 1) : CUDA_ERROR_NOT_FOUND;
}

CUresult RealSetByteAsync(CUdeviceptr dst, unsigned char v, CUstream s) {
  static const auto fn = Real<Real_MemsetD8Async>("cuMemsetD8Async");
  return fn ? fn(dst, v, 1, s) : CUDA_ERROR_NOT_FOUND;
}

CUdeviceptr Ptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// Whether an address is device memory (else host: pinned, registered or pageable).
bool IsDevice(CUdeviceptr p) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  unsigned int type = 0;
  return fn && fn(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == CUDA_SUCCESS &&
         type == CU_MEMORYTYPE_DEVICE;
}

// After a completed copy of n bytes: makes dst's last byte differ from src's (any memory kinds).
void CorruptLastByte(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (n == 0) return;
  unsigned char b = 0;
  if (RealCopy(Ptr(&b), src + n - 1, 1) != CUDA_SUCCESS) return;
  b ^= 0xff;
  RealCopy(dst + n - 1, Ptr(&b), 1);
}

// Flips a host byte when the stream reaches this point (for asynchronous device-to-host copies).
void CUDA_CB FlipHostByte(void* p) { *static_cast<volatile unsigned char*>(p) ^= 0xff; }
void FlipHostByteInStream(void* p, CUstream s) {
  static const auto fn =
      Real<CUresult(CUDAAPI*)(CUstream, CUhostFn, void*)>("cuLaunchHostFunc");
  if (fn) fn(s, &FlipHostByte, p);
}

// Where the host can read or write a host-memory address that may be a device alias.
unsigned char* HostView(CUdeviceptr p) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  void* host = nullptr;
  if (fn && fn(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p) == CUDA_SUCCESS && host)
    return static_cast<unsigned char*>(host);
  return reinterpret_cast<unsigned char*>(p);  // pageable memory: the address itself
}

// Direction of a unified copy (cuMemcpy / cuMemcpyAsync).
bool IsHtoD(CUdeviceptr dst, CUdeviceptr src) { return IsDevice(dst) && !IsDevice(src); }
bool IsDtoH(CUdeviceptr dst, CUdeviceptr src) { return !IsDevice(dst) && IsDevice(src); }

// ---------------------------------------------------------------------------------------------
// Data faults on copies and memsets. Each hooks every entry point that copies in its direction.

// R76: a synchronous host-to-device copy delivers a wrong last byte.
void InstallHtodCorruptsLastByte() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && n) RealSetByte(d + n - 1, static_cast<const unsigned char*>(s)[n - 1] ^ 0xff);
    return r;
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    bool hit = IsHtoD(d, s);
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && hit) CorruptLastByte(d, s, n);
    return r;
  });
}

// R76: a synchronous device-to-host copy delivers a wrong last byte.
void InstallDtohCorruptsLastByte() {
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && n) static_cast<unsigned char*>(d)[n - 1] ^= 0xff;
    return r;
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    bool hit = IsDtoH(d, s);
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && hit) CorruptLastByte(d, s, n);
    return r;
  });
}

// R76: a synchronous device-to-host copy stops one byte short.
void InstallDtohTruncated() {
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    return real(d, s, n ? n - 1 : 0);
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    return real(d, s, n && IsDtoH(d, s) ? n - 1 : n);
  });
}

// R76: a synchronous host-to-device copy stops one byte short.
void InstallHtodTruncated() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    return real(d, s, n ? n - 1 : 0);
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    return real(d, s, n && IsHtoD(d, s) ? n - 1 : n);
  });
}

// Whether a host address is page-locked (pinned or registered) memory.
bool IsPinnedHost(const void* p) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  unsigned int type = 0;
  return fn && fn(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, Ptr(p)) == CUDA_SUCCESS &&
         type == CU_MEMORYTYPE_HOST;
}

// R76: synchronous copies whose host side is page-locked memory (the direct DMA path, not the
// staged pageable one) deliver a wrong last byte, in either direction.
void InstallPinnedCopyCorrupts() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    const bool hit = n && IsPinnedHost(s);
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && hit) RealSetByte(d + n - 1, static_cast<const unsigned char*>(s)[n - 1] ^ 0xff);
    return r;
  });
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = n && IsPinnedHost(d);
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && hit) static_cast<unsigned char*>(d)[n - 1] ^= 0xff;
    return r;
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = n && (IsPinnedHost(reinterpret_cast<void*>(d)) ||
                           IsPinnedHost(reinterpret_cast<void*>(s)));
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && hit) CorruptLastByte(d, s, n);
    return r;
  });
}

// R76: an asynchronous host-to-device copy delivers a wrong last byte (in stream order).
void InstallHtodAsyncCorrupts() {
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && n)
      RealSetByteAsync(d + n - 1, static_cast<const unsigned char*>(s)[n - 1] ^ 0xff, st);
    return r;
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    bool hit = n && IsHtoD(d, s);
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && hit)
      RealSetByteAsync(d + n - 1, HostView(s + n - 1)[0] ^ 0xff, st);
    return r;
  });
}

// R76: an asynchronous device-to-host copy delivers a wrong last byte (in stream order).
void InstallDtohAsyncCorrupts() {
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && n) FlipHostByteInStream(static_cast<unsigned char*>(d) + n - 1, st);
    return r;
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    bool hit = n && IsDtoH(d, s);
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && hit) FlipHostByteInStream(HostView(d + n - 1), st);
    return r;
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

// R77: a synchronous device-to-host copy returns before the data has landed (it is only queued).
void InstallDtohReturnsEarly() {
  HookMemcpyDtoH([](Real_MemcpyDtoH, void* d, CUdeviceptr s, size_t n) -> CUresult {
    return RealCopyAsync(Ptr(d), s, n, nullptr);
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    return IsDtoH(d, s) ? RealCopyAsync(d, s, n, nullptr) : real(d, s, n);
  });
}

// R77: memset writes the value everywhere but in the last byte (synchronous, 8- and 32-bit).
void InstallMemsetWrongLastByte() {
  HookMemsetD8([](Real_MemsetD8 real, CUdeviceptr d, unsigned char v, size_t n) -> CUresult {
    CUresult r = real(d, v, n);
    if (r == CUDA_SUCCESS && n) RealSetByte(d + n - 1, v ^ 0xff);
    return r;
  });
  HookMemsetD32([](Real_MemsetD32 real, CUdeviceptr d, unsigned int v, size_t n) -> CUresult {
    CUresult r = real(d, v, n);
    if (r == CUDA_SUCCESS && n) RealSetByte(d + 4 * n - 1, static_cast<unsigned char>(v >> 24) ^ 0xff);
    return r;
  });
  HookMemsetD2D8([](Real_MemsetD2D8 real, CUdeviceptr d, size_t pitch, unsigned char v, size_t w,
                    size_t h) -> CUresult {
    CUresult r = real(d, pitch, v, w, h);
    if (r == CUDA_SUCCESS && w && h) RealSetByte(d + (h - 1) * pitch + w - 1, v ^ 0xff);
    return r;
  });
}

// R77: memset stops one element short (synchronous).
void InstallMemsetTruncated() {
  HookMemsetD8([](Real_MemsetD8 real, CUdeviceptr d, unsigned char v, size_t n) -> CUresult {
    return real(d, v, n ? n - 1 : 0);
  });
  HookMemsetD32([](Real_MemsetD32 real, CUdeviceptr d, unsigned int v, size_t n) -> CUresult {
    return real(d, v, n ? n - 1 : 0);
  });
  HookMemsetD2D8([](Real_MemsetD2D8 real, CUdeviceptr d, size_t pitch, unsigned char v, size_t w,
                    size_t h) -> CUresult { return real(d, pitch, v, w ? w - 1 : 0, h); });
}

// R77: an asynchronous memset writes a wrong last byte (in stream order).
void InstallMemsetAsyncWrongLastByte() {
  HookMemsetD8Async([](Real_MemsetD8Async real, CUdeviceptr d, unsigned char v, size_t n,
                       CUstream st) -> CUresult {
    CUresult r = real(d, v, n, st);
    if (r == CUDA_SUCCESS && n) RealSetByteAsync(d + n - 1, v ^ 0xff, st);
    return r;
  });
  HookMemsetD32Async([](Real_MemsetD32Async real, CUdeviceptr d, unsigned int v, size_t n,
                        CUstream st) -> CUresult {
    CUresult r = real(d, v, n, st);
    if (r == CUDA_SUCCESS && n)
      RealSetByteAsync(d + 4 * n - 1, static_cast<unsigned char>(v >> 24) ^ 0xff, st);
    return r;
  });
  HookMemsetD2D8Async([](Real_MemsetD2D8Async real, CUdeviceptr d, size_t pitch, unsigned char v,
                         size_t w, size_t h, CUstream st) -> CUresult {
    CUresult r = real(d, pitch, v, w, h, st);
    if (r == CUDA_SUCCESS && w && h) RealSetByteAsync(d + (h - 1) * pitch + w - 1, v ^ 0xff, st);
    return r;
  });
}

// ---------------------------------------------------------------------------------------------
// Kernel launches.

// R77: a launch is acknowledged but never runs.
void InstallLaunchDropped() {
  HookLaunchKernel([](Real_LaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned,
                      unsigned, unsigned, unsigned, CUstream, void**, void**) -> CUresult {
    return CUDA_SUCCESS;
  });
  HookLaunchKernelEx([](Real_LaunchKernelEx, const CUlaunchConfig*, CUfunction, void**,
                        void**) -> CUresult { return CUDA_SUCCESS; });
}

// R77: a retried submission runs every kernel twice.
void InstallLaunchReplayed() {
  HookLaunchKernel([](Real_LaunchKernel real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream st, void** p,
                      void** e) -> CUresult {
    CUresult r = real(f, gx, gy, gz, bx, by, bz, sh, st, p, e);
    if (r == CUDA_SUCCESS) r = real(f, gx, gy, gz, bx, by, bz, sh, st, p, e);
    return r;
  });
  HookLaunchKernelEx([](Real_LaunchKernelEx real, const CUlaunchConfig* c, CUfunction f, void** p,
                        void** e) -> CUresult {
    CUresult r = real(c, f, p, e);
    if (r == CUDA_SUCCESS) r = real(c, f, p, e);
    return r;
  });
}

// R77: the last block of a multi-block grid is never scheduled (off by one in the grid size).
void InstallLaunchLastBlockLost() {
  HookLaunchKernel([](Real_LaunchKernel real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream st, void** p,
                      void** e) -> CUresult {
    return real(f, gx > 1 ? gx - 1 : gx, gy, gz, bx, by, bz, sh, st, p, e);
  });
  HookLaunchKernelEx([](Real_LaunchKernelEx real, const CUlaunchConfig* c, CUfunction f, void** p,
                        void** e) -> CUresult {
    if (!c || c->gridDimX <= 1) return real(c, f, p, e);
    CUlaunchConfig shorter = *c;
    shorter.gridDimX -= 1;
    return real(&shorter, f, p, e);
  });
}

// ---------------------------------------------------------------------------------------------
// Synchronisation and events.

// R77: cuCtxSynchronize (cudaDeviceSynchronize) returns without waiting.
void InstallCtxSyncReturnsEarly() {
  HookCtxSynchronize([](Real_CtxSynchronize) -> CUresult { return CUDA_SUCCESS; });
  HookCtxSynchronize13([](Real_CtxSynchronize13, CUcontext) -> CUresult { return CUDA_SUCCESS; });
}

// R77: cuStreamSynchronize returns without waiting.
void InstallStreamSyncReturnsEarly() {
  HookStreamSynchronize([](Real_StreamSynchronize, CUstream) -> CUresult { return CUDA_SUCCESS; });
}

// R77: cuEventSynchronize returns without waiting.
void InstallEventSyncReturnsEarly() {
  HookEventSynchronize([](Real_EventSynchronize, CUevent) -> CUresult { return CUDA_SUCCESS; });
}

// R77: cuStreamQuery reports idle while work is pending.
void InstallStreamQueryLies() {
  HookStreamQuery([](Real_StreamQuery, CUstream) -> CUresult { return CUDA_SUCCESS; });
}

// R77: cuEventQuery reports complete while work is pending.
void InstallEventQueryLies() {
  HookEventQuery([](Real_EventQuery, CUevent) -> CUresult { return CUDA_SUCCESS; });
}

// R77: cuStreamWaitEvent is ignored: a stream does not wait for another's event.
void InstallStreamWaitIgnored() {
  HookStreamWaitEvent([](Real_StreamWaitEvent, CUstream, CUevent, unsigned) -> CUresult {
    return CUDA_SUCCESS;
  });
}

// P03: cuEventRecord records the event at once instead of in stream order, so elapsed times
// measure nothing (the event is recorded on the legacy stream, before the queued work).
void InstallEventRecordEarly() {
  HookEventRecord([](Real_EventRecord real, CUevent e, CUstream) -> CUresult {
    static const auto create = Real<CUresult(CUDAAPI*)(CUstream*, unsigned)>("cuStreamCreate");
    static CUstream side = nullptr;  // an idle stream: its record completes at once
    if (!side && create) create(&side, CU_STREAM_NON_BLOCKING);
    return real(e, side);
  });
  HookEventRecordWithFlags([](Real_EventRecordWithFlags real, CUevent e, CUstream,
                              unsigned f) -> CUresult {
    static const auto create = Real<CUresult(CUDAAPI*)(CUstream*, unsigned)>("cuStreamCreate");
    static CUstream side = nullptr;
    if (!side && create) create(&side, CU_STREAM_NON_BLOCKING);
    return real(e, side, f);
  });
}

// P03: elapsed times come back 10x too long (a timer-unit bug: bandwidth looks 10x lower).
void InstallElapsedTimeWrongUnit() {
  HookEventElapsedTime([](Real_EventElapsedTime real, float* ms, CUevent a, CUevent b) -> CUresult {
    CUresult r = real(ms, a, b);
    if (r == CUDA_SUCCESS && ms) *ms *= 10.0f;
    return r;
  });
}

// ---------------------------------------------------------------------------------------------
// Pinned allocation (cuMemHostAlloc / cuMemAllocHost / cuMemFreeHost).

// R07: every pinned allocation fails with CUDA_ERROR_OUT_OF_MEMORY.
void InstallHostAllocOutOfMemory() {
  HookMemHostAlloc([](Real_MemHostAlloc, void**, size_t, unsigned) -> CUresult {
    return CUDA_ERROR_OUT_OF_MEMORY;
  });
  HookMemAllocHost([](Real_MemAllocHost, void**, size_t) -> CUresult {
    return CUDA_ERROR_OUT_OF_MEMORY;
  });
}

// R09: unknown flag bits are silently accepted (masked off) instead of rejected.
void InstallHostAllocAcceptsUnknownFlags() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    return real(p, n, f & 0x7u);
  });
}

// R08: the WriteCombined flag is dropped (memory is cached, flags do not report it).
void InstallHostAllocDropsWriteCombined() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    return real(p, n, f & ~static_cast<unsigned>(CU_MEMHOSTALLOC_WRITECOMBINED));
  });
}

// P01: pinned allocations are returned 8 bytes past the block start (misaligned for max_align_t;
// freeing them hits the interior-pointer path).
void InstallHostAllocMisaligned() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n + 8, f);
    if (r == CUDA_SUCCESS && p && *p) *p = static_cast<char*>(*p) + 8;
    return r;
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    CUresult r = real(p, n + 8);
    if (r == CUDA_SUCCESS && p && *p) *p = static_cast<char*>(*p) + 8;
    return r;
  });
}

// R06: an allocation too large to pin reports CUDA_ERROR_INVALID_VALUE instead of OUT_OF_MEMORY.
void InstallHostAllocWrongOomCode() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? CUDA_ERROR_INVALID_VALUE : r;
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    CUresult r = real(p, n);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? CUDA_ERROR_INVALID_VALUE : r;
  });
}

// R11: a zero-size allocation fails instead of succeeding.
void InstallHostAllocZeroSizeFails() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    return n == 0 ? CUDA_ERROR_INVALID_VALUE : real(p, n, f);
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    return n == 0 ? CUDA_ERROR_INVALID_VALUE : real(p, n);
  });
}

// R19: cuMemFreeHost reports success but keeps the memory pinned (a leak).
void InstallFreeHostLeaks() {
  HookMemFreeHost([](Real_MemFreeHost, void*) -> CUresult { return CUDA_SUCCESS; });
}

// R22/R23/R24: cuMemFreeHost accepts pointers it did not allocate (reports success).
void InstallFreeHostAcceptsForeignPointers() {
  HookMemFreeHost([](Real_MemFreeHost real, void* p) -> CUresult {
    CUresult r = real(p);
    return r == CUDA_ERROR_INVALID_VALUE ? CUDA_SUCCESS : r;
  });
}

// R20: cuMemFreeHost(NULL) fails instead of succeeding like free(NULL).
void InstallFreeHostNullFails() {
  HookMemFreeHost([](Real_MemFreeHost real, void* p) -> CUresult {
    return p ? real(p) : CUDA_ERROR_INVALID_VALUE;
  });
}

// R56: cuMemHostGetFlags loses the Portable bit of an allocation.
void InstallGetFlagsDropsPortable() {
  HookMemHostGetFlags([](Real_MemHostGetFlags real, unsigned* f, void* p) -> CUresult {
    CUresult r = real(f, p);
    if (r == CUDA_SUCCESS && f) *f &= ~static_cast<unsigned>(CU_MEMHOSTALLOC_PORTABLE);
    return r;
  });
}

// R56: cuMemHostGetFlags loses the WriteCombined bit of an allocation.
void InstallGetFlagsDropsWriteCombined() {
  HookMemHostGetFlags([](Real_MemHostGetFlags real, unsigned* f, void* p) -> CUresult {
    CUresult r = real(f, p);
    if (r == CUDA_SUCCESS && f) *f &= ~static_cast<unsigned>(CU_MEMHOSTALLOC_WRITECOMBINED);
    return r;
  });
}

// R56: cuMemHostGetFlags answers for unpinned memory (flags 0) instead of INVALID_VALUE. (For
// registered memory, R58, the r580 driver already answers: the control fails that case.)
void InstallGetFlagsOfUnallocatedSucceeds() {
  HookMemHostGetFlags([](Real_MemHostGetFlags real, unsigned* f, void* p) -> CUresult {
    CUresult r = real(f, p);
    if (r == CUDA_ERROR_INVALID_VALUE && f && p) {
      *f = 0;
      return CUDA_SUCCESS;
    }
    return r;
  });
}

// ---------------------------------------------------------------------------------------------
// Registration (cuMemHostRegister / cuMemHostUnregister).

// R30/R31: overlapping registrations succeed instead of HOST_MEMORY_ALREADY_REGISTERED.
void InstallRegisterOverlapAccepted() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    return r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED ? CUDA_SUCCESS : r;
  });
}

// R30: an overlap is reported as INVALID_VALUE (swapped error code).
void InstallRegisterOverlapWrongCode() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    return r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED ? CUDA_ERROR_INVALID_VALUE : r;
  });
}

// R26: unknown registration flag bits are masked off instead of rejected.
void InstallRegisterAcceptsUnknownFlags() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    return real(p, n, f & 0xfu);
  });
}

// R39: registering NULL or size 0 succeeds (and registers nothing).
void InstallRegisterAcceptsEmpty() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    return p == nullptr || n == 0 ? CUDA_SUCCESS : real(p, n, f);
  });
}

// R29: the last page of a multi-page registration is not pinned (range rounded down).
void InstallRegisterDropsLastPage() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    const uintptr_t page = 4096, start = reinterpret_cast<uintptr_t>(p);
    const uintptr_t end = start + n, last_page = (end - 1) & ~(page - 1);
    if (n == 0 || last_page <= start) return real(p, n, f);
    return real(p, last_page - start, f);
  });
}

// R42: the ReadOnly flag is ignored: the range is pinned writable for the device.
void InstallRegisterIgnoresReadOnly() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    return real(p, n, f & ~static_cast<unsigned>(CU_MEMHOSTREGISTER_READ_ONLY));
  });
}

// R40: registering device memory (or cuMemHostAlloc memory) reports ALREADY_REGISTERED instead
// of INVALID_VALUE. For cuMemHostAlloc memory 712 is in R41's documented set (the conforming
// variation register_pinned_already_registered), so the device-memory case (R40) is the catch.
void InstallRegisterPinnedWrongCode() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    return r == CUDA_ERROR_INVALID_VALUE && p && n ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED : r;
  });
}

// R26: cuMemHostRegister reports success but registers nothing (a lost registration).
void InstallRegisterLost() {
  HookMemHostRegister([](Real_MemHostRegister, void* p, size_t n, unsigned) -> CUresult {
    return p && n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

// R33: cuMemHostUnregister reports success but leaves the range pinned and mapped.
void InstallUnregisterLost() {
  HookMemHostUnregister([](Real_MemHostUnregister, void*) -> CUresult { return CUDA_SUCCESS; });
}

// R35/R36: unregistering memory that is not registered reports INVALID_VALUE instead of
// HOST_MEMORY_NOT_REGISTERED.
void InstallUnregisterWrongCode() {
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    CUresult r = real(p);
    return r == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED ? CUDA_ERROR_INVALID_VALUE : r;
  });
}

// R34: an interior pointer (or cuMemHostAlloc memory) is reported NOT_REGISTERED instead of
// INVALID_VALUE. For cuMemHostAlloc memory 713 is in R38's documented set (the conforming
// variation unregister_pinned_not_registered), so the interior pointer (R34) is the catch.
void InstallUnregisterInteriorWrongCode() {
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    CUresult r = real(p);
    return r == CUDA_ERROR_INVALID_VALUE && p ? CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED : r;
  });
}

// R37: cuMemHostUnregister(NULL) succeeds.
void InstallUnregisterNullSucceeds() {
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    return p ? real(p) : CUDA_SUCCESS;
  });
}

// ---------------------------------------------------------------------------------------------
// Device pointers and pointer attributes.

// R51/R53: the device alias is off by one byte.
void InstallDevicePointerOffByOne() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    if (r == CUDA_SUCCESS && d) *d += 1;
    return r;
  });
}

// R53: interior pointers map to the alias of the base, not base plus offset.
void InstallDevicePointerIgnoresOffset() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    if (r != CUDA_SUCCESS || !d) return r;
    static const auto attr = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
    CUdeviceptr base = 0, dbase = 0;
    if (attr && attr(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, Ptr(p)) == CUDA_SUCCESS &&
        base && base != Ptr(p) && real(&dbase, reinterpret_cast<void*>(base), f) == CUDA_SUCCESS)
      *d = dbase;
    return r;
  });
}

// R50: non-zero flags are accepted instead of INVALID_VALUE.
void InstallDevicePointerAcceptsFlags() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned) -> CUresult { return real(d, p, 0); });
}

// R52: one past the end of a pinned block still gets a device pointer.
void InstallDevicePointerOnePastTheEnd() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    if (r == CUDA_ERROR_INVALID_VALUE && d && p &&
        real(d, static_cast<char*>(p) - 1, f) == CUDA_SUCCESS) {
      *d += 1;
      return CUDA_SUCCESS;
    }
    return r;
  });
}

// R52: unpinned memory gets a device pointer (its own address) instead of INVALID_VALUE.
void InstallDevicePointerForUnpinned() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    if (r == CUDA_ERROR_INVALID_VALUE && d && p && f == 0) {
      *d = Ptr(p);
      return CUDA_SUCCESS;
    }
    return r;
  });
}

// Rewrites one attribute in a cuPointerGetAttributes answer.
template <typename Fix>
CUresult PatchAttributes(Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* attrs,
                         void** data, CUdeviceptr p, Fix fix) {
  CUresult r = real(n, attrs, data, p);
  if (r == CUDA_SUCCESS && attrs && data)
    for (unsigned i = 0; i < n; ++i)
      if (data[i]) fix(attrs[i], data[i]);
  return r;
}

// R72: pinned host memory is reported as device memory.
void InstallAttributesHostAsDevice() {
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    return PatchAttributes(real, n, a, d, p, [](CUpointer_attribute a, void* v) {
      if (a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE && *static_cast<unsigned*>(v) == CU_MEMORYTYPE_HOST)
        *static_cast<unsigned*>(v) = CU_MEMORYTYPE_DEVICE;
    });
  });
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE &&
        *static_cast<unsigned*>(v) == CU_MEMORYTYPE_HOST)
      *static_cast<unsigned*>(v) = CU_MEMORYTYPE_DEVICE;
    return r;
  });
}

// R72: the device pointer attribute of pinned memory is off by 64 bytes.
void InstallAttributesWrongDevicePointer() {
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    return PatchAttributes(real, n, a, d, p, [](CUpointer_attribute a, void* v) {
      if (a == CU_POINTER_ATTRIBUTE_DEVICE_POINTER && *static_cast<CUdeviceptr*>(v))
        *static_cast<CUdeviceptr*>(v) += 64;
    });
  });
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_DEVICE_POINTER)
      *static_cast<CUdeviceptr*>(v) += 64;
    return r;
  });
}

// R72: the host pointer attribute of pinned memory is NULL.
void InstallAttributesNoHostPointer() {
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    return PatchAttributes(real, n, a, d, p, [](CUpointer_attribute a, void* v) {
      if (a == CU_POINTER_ATTRIBUTE_HOST_POINTER) *static_cast<void**>(v) = nullptr;
    });
  });
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_HOST_POINTER)
      *static_cast<void**>(v) = nullptr;
    return r;
  });
}

// R72: the device ordinal of pinned memory is reported as device 1.
void InstallAttributesWrongDevice() {
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    return PatchAttributes(real, n, a, d, p, [](CUpointer_attribute a, void* v) {
      if (a == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) *static_cast<int*>(v) += 1;
    });
  });
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
      *static_cast<int*>(v) += 1;
    return r;
  });
}

// R73: the memory type of memory no context knows is answered (host) instead of INVALID_VALUE.
void InstallAttributeOfUnknownSucceeds() {
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_ERROR_INVALID_VALUE && v && p && a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
      *static_cast<unsigned*>(v) = CU_MEMORYTYPE_HOST;
      return CUDA_SUCCESS;
    }
    return r;
  });
}

// ---------------------------------------------------------------------------------------------
// Device flags and contexts.

// R62/R68: the scheduling flags of the primary context are dropped when set.
void InstallPrimaryCtxDropsSchedFlags() {
  HookDevicePrimaryCtxSetFlags([](Real_DevicePrimaryCtxSetFlags real, CUdevice d,
                                  unsigned f) -> CUresult {
    return real(d, f & ~static_cast<unsigned>(CU_CTX_SCHED_MASK));
  });
  HookCtxSetFlags([](Real_CtxSetFlags real, unsigned f) -> CUresult {
    return real(f & ~static_cast<unsigned>(CU_CTX_SCHED_MASK));
  });
}

// R64: unknown primary-context flag bits are accepted (masked off) instead of INVALID_VALUE.
void InstallPrimaryCtxAcceptsUnknownFlags() {
  HookDevicePrimaryCtxSetFlags([](Real_DevicePrimaryCtxSetFlags real, CUdevice d,
                                  unsigned f) -> CUresult { return real(d, f & 0xffu); });
  HookCtxSetFlags([](Real_CtxSetFlags real, unsigned f) -> CUresult { return real(f & 0xffu); });
}

// R65/R62: the flags read back lose their scheduling bits.
void InstallFlagsReadBackWrong() {
  HookDevicePrimaryCtxGetState([](Real_DevicePrimaryCtxGetState real, CUdevice d, unsigned* f,
                                  int* active) -> CUresult {
    CUresult r = real(d, f, active);
    if (r == CUDA_SUCCESS && f) *f &= ~static_cast<unsigned>(CU_CTX_SCHED_MASK);
    return r;
  });
  HookCtxGetFlags([](Real_CtxGetFlags real, unsigned* f) -> CUresult {
    CUresult r = real(f);
    if (r == CUDA_SUCCESS && f) *f &= ~static_cast<unsigned>(CU_CTX_SCHED_MASK);
    return r;
  });
}

// R62: the flags read back carry BlockingSync although it was never set (an invented flag).
void InstallFlagsInventBlockingSync() {
  HookDevicePrimaryCtxGetState([](Real_DevicePrimaryCtxGetState real, CUdevice d, unsigned* f,
                                  int* active) -> CUresult {
    CUresult r = real(d, f, active);
    if (r == CUDA_SUCCESS && f) *f |= CU_CTX_SCHED_BLOCKING_SYNC;
    return r;
  });
  HookCtxGetFlags([](Real_CtxGetFlags real, unsigned* f) -> CUresult {
    CUresult r = real(f);
    if (r == CUDA_SUCCESS && f) *f |= CU_CTX_SCHED_BLOCKING_SYNC;
    return r;
  });
}

// R59/R68: setting the flags of an active primary context fails (the pre-11 behaviour).
void InstallPrimaryCtxSetFlagsWhileActiveFails() {
  HookDevicePrimaryCtxSetFlags([](Real_DevicePrimaryCtxSetFlags real, CUdevice d,
                                  unsigned f) -> CUresult {
    static const auto state = Real<Real_DevicePrimaryCtxGetState>("cuDevicePrimaryCtxGetState");
    unsigned flags = 0;
    int active = 0;
    if (state && state(d, &flags, &active) == CUDA_SUCCESS && active)
      return CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE;
    return real(d, f);
  });
}

// ---------------------------------------------------------------------------------------------
// Capabilities (cuDeviceGetAttribute) and atomics.

template <CUdevice_attribute kAttr, int kValue>
CUresult ForceAttribute(Real_DeviceGetAttribute real, int* v, CUdevice_attribute a, CUdevice d) {
  CUresult r = real(v, a, d);
  if (r == CUDA_SUCCESS && v && a == kAttr) *v = kValue;
  return r;
}

// R85: a discrete GPU reports CanMapHostMemory=0.
void InstallCapCannotMapHost() {
  HookDeviceGetAttribute(&ForceAttribute<CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 0>);
}
// R27: HostRegisterSupported reported as 0.
void InstallCapNoHostRegister() {
  HookDeviceGetAttribute(&ForceAttribute<CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 0>);
}
// R70: UnifiedAddressing reported as 0 in a 64-bit process.
void InstallCapNoUnifiedAddressing() {
  HookDeviceGetAttribute(&ForceAttribute<CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0>);
}
// R86: a discrete GPU reports Integrated=1.
void InstallCapClaimsIntegrated() {
  HookDeviceGetAttribute(&ForceAttribute<CU_DEVICE_ATTRIBUTE_INTEGRATED, 1>);
}
// R45: CanUseHostPointerForRegisteredMem reported the opposite of what the device does.
void InstallCapHostPointerForRegisteredFlipped() {
  HookDeviceGetAttribute([](Real_DeviceGetAttribute real, int* v, CUdevice_attribute a,
                            CUdevice d) -> CUresult {
    CUresult r = real(v, a, d);
    if (r == CUDA_SUCCESS && v && a == CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM)
      *v = !*v;
    return r;
  });
}
// R80/R81: HostNativeAtomicSupported reported the opposite of what the link does.
void InstallCapHostNativeAtomicsFlipped() {
  HookDeviceGetAttribute([](Real_DeviceGetAttribute real, int* v, CUdevice_attribute a,
                            CUdevice d) -> CUresult {
    CUresult r = real(v, a, d);
    if (r == CUDA_SUCCESS && v && a == CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED) *v = !*v;
    return r;
  });
}
// R42: HostRegisterReadOnlySupported reported as 0.
void InstallCapNoReadOnlyRegister() {
  HookDeviceGetAttribute(
      &ForceAttribute<CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, 0>);
}
// R12/R83: PageableMemoryAccessUsesHostPageTables reported as 1 on a PCIe system (claims ATS).
void InstallCapClaimsAts() {
  HookDeviceGetAttribute(
      &ForceAttribute<CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 1>);
}

// R82: cuDeviceGetHostAtomicCapabilities claims every operation is supported.
void InstallAtomicCapsOverclaimed() {
  HookDeviceGetHostAtomicCapabilities([](Real_DeviceGetHostAtomicCapabilities real, unsigned* c,
                                         const CUatomicOperation* ops, unsigned n,
                                         CUdevice d) -> CUresult {
    CUresult r = real(c, ops, n, d);
    if (r == CUDA_SUCCESS && c)
      for (unsigned i = 0; i < n; ++i) c[i] = ~0u;
    return r;
  });
}

// R82: a count of 0 is accepted instead of INVALID_VALUE.
void InstallAtomicCapsAcceptsZeroCount() {
  HookDeviceGetHostAtomicCapabilities([](Real_DeviceGetHostAtomicCapabilities real, unsigned* c,
                                         const CUatomicOperation* ops, unsigned n,
                                         CUdevice d) -> CUresult {
    return n == 0 ? CUDA_SUCCESS : real(c, ops, n, d);
  });
}

#define PL_FAULT(name, rule, family, kind, text, install) {name, rule, family, kind, text, install, ""}

const Fault kFaults[] = {
    // Data path: copies and memsets.
    PL_FAULT("htod_corrupts_last_byte", "R76", "hostalloc", "data",
             "A synchronous host-to-device copy delivers a wrong last byte.",
             InstallHtodCorruptsLastByte),
    PL_FAULT("dtoh_corrupts_last_byte", "R76", "hostalloc", "data",
             "A synchronous device-to-host copy delivers a wrong last byte.",
             InstallDtohCorruptsLastByte),
    PL_FAULT("htod_truncated", "R76", "hostalloc", "data",
             "A synchronous host-to-device copy stops one byte short.", InstallHtodTruncated),
    PL_FAULT("dtoh_truncated", "R76", "hostalloc", "data",
             "A synchronous device-to-host copy stops one byte short.", InstallDtohTruncated),
    PL_FAULT("pinned_copy_corrupts", "R76", "hostalloc", "data",
             "Synchronous copies to or from page-locked memory deliver a wrong last byte.",
             InstallPinnedCopyCorrupts),
    PL_FAULT("htod_async_corrupts", "R76", "bandwidth", "data",
             "An asynchronous host-to-device copy delivers a wrong last byte (in stream order).",
             InstallHtodAsyncCorrupts),
    PL_FAULT("dtoh_async_corrupts", "R76", "bandwidth", "data",
             "An asynchronous device-to-host copy delivers a wrong last byte (in stream order).",
             InstallDtohAsyncCorrupts),
    PL_FAULT("async_copy_truncated", "R76", "bandwidth", "data",
             "An asynchronous copy in either direction stops one byte short.",
             InstallAsyncCopyTruncated),
    PL_FAULT("dtoh_returns_early", "R77", "hostalloc", "sync",
             "A synchronous device-to-host copy only queues the copy and returns.",
             InstallDtohReturnsEarly),
    PL_FAULT("memset_wrong_last_byte", "R77", "hostalloc", "data",
             "A synchronous memset (8/32-bit, 1D or 2D) writes a wrong last byte.",
             InstallMemsetWrongLastByte),
    PL_FAULT("memset_truncated", "R77", "hostalloc", "data",
             "A synchronous memset (8/32-bit, 1D or 2D) stops one element short of each row.", InstallMemsetTruncated),
    PL_FAULT("memset_async_wrong_last_byte", "R77", "hostalloc", "data",
             "An asynchronous memset writes a wrong last byte (in stream order).",
             InstallMemsetAsyncWrongLastByte),
    // Kernel launches.
    PL_FAULT("launch_dropped", "R77", "hostalloc", "data",
             "A kernel launch is acknowledged but never runs.", InstallLaunchDropped),
    PL_FAULT("launch_replayed", "R79", "atomics", "data",
             "A retried submission runs every kernel twice.", InstallLaunchReplayed),
    PL_FAULT("launch_last_block_lost", "R77", "hostalloc", "data",
             "The last block of a multi-block grid is never scheduled (off by one).",
             InstallLaunchLastBlockLost),
    // Synchronisation and events.
    PL_FAULT("ctx_sync_returns_early", "R77", "hostalloc", "sync",
             "cuCtxSynchronize (cudaDeviceSynchronize) returns without waiting.",
             InstallCtxSyncReturnsEarly),
    PL_FAULT("stream_sync_returns_early", "R77", "atomics", "sync",
             "cuStreamSynchronize returns without waiting.", InstallStreamSyncReturnsEarly),
    PL_FAULT("event_sync_returns_early", "P03", "bandwidth", "sync",
             "cuEventSynchronize returns without waiting.", InstallEventSyncReturnsEarly),
    PL_FAULT("stream_query_lies", "R77", "atomics", "sync",
             "cuStreamQuery reports idle while work is pending.", InstallStreamQueryLies),
    PL_FAULT("event_query_lies", "R77", "atomics", "sync",
             "cuEventQuery reports complete while work is pending.", InstallEventQueryLies),
    PL_FAULT("stream_wait_ignored", "R77", "atomics", "sync",
             "cuStreamWaitEvent is ignored: streams do not wait for each other's events.",
             InstallStreamWaitIgnored),
    PL_FAULT("event_record_early", "P03", "bandwidth", "sync",
             "cuEventRecord records at once instead of in stream order.", InstallEventRecordEarly),
    PL_FAULT("elapsed_time_wrong_unit", "P03", "bandwidth", "perf",
             "cuEventElapsedTime reports times 10x too long.", InstallElapsedTimeWrongUnit),
    // Pinned allocation.
    PL_FAULT("hostalloc_out_of_memory", "R07", "hostalloc", "error",
             "Every pinned allocation fails with CUDA_ERROR_OUT_OF_MEMORY.",
             InstallHostAllocOutOfMemory),
    PL_FAULT("hostalloc_accepts_unknown_flags", "R09", "hostalloc", "error",
             "cuMemHostAlloc masks off unknown flag bits instead of rejecting them.",
             InstallHostAllocAcceptsUnknownFlags),
    PL_FAULT("hostalloc_drops_write_combined", "R08", "hostalloc", "flag",
             "cuMemHostAlloc drops the WriteCombined flag.", InstallHostAllocDropsWriteCombined),
    PL_FAULT("hostalloc_misaligned", "P01", "hostalloc", "data",
             "Pinned allocations are returned 8 bytes past the block start.",
             InstallHostAllocMisaligned),
    PL_FAULT("hostalloc_wrong_oom_code", "R06", "hostalloc", "error",
             "An allocation too large to pin fails with INVALID_VALUE, not OUT_OF_MEMORY.",
             InstallHostAllocWrongOomCode),
    PL_FAULT("hostalloc_zero_size_fails", "R11", "hostalloc", "error",
             "A zero-size pinned allocation fails.", InstallHostAllocZeroSizeFails),
    PL_FAULT("freehost_leaks", "R19", "hostalloc", "resource",
             "cuMemFreeHost reports success but keeps the memory pinned.", InstallFreeHostLeaks),
    PL_FAULT("freehost_accepts_foreign", "R22", "hostalloc", "error",
             "cuMemFreeHost reports success for interior, freed or foreign pointers.",
             InstallFreeHostAcceptsForeignPointers),
    PL_FAULT("freehost_null_fails", "R20", "hostalloc", "error",
             "cuMemFreeHost(NULL) fails with INVALID_VALUE.", InstallFreeHostNullFails),
    PL_FAULT("getflags_drops_portable", "R56", "hostalloc", "flag",
             "cuMemHostGetFlags loses the Portable bit.", InstallGetFlagsDropsPortable),
    PL_FAULT("getflags_drops_write_combined", "R56", "hostalloc", "flag",
             "cuMemHostGetFlags loses the WriteCombined bit.", InstallGetFlagsDropsWriteCombined),
    PL_FAULT("getflags_of_unallocated_succeeds", "R56", "hostalloc", "error",
             "cuMemHostGetFlags answers flags 0 for unpinned (and registered) memory.",
             InstallGetFlagsOfUnallocatedSucceeds),
    // Registration.
    PL_FAULT("register_overlap_accepted", "R30", "hostregister", "error",
             "Overlapping registrations succeed instead of ALREADY_REGISTERED.",
             InstallRegisterOverlapAccepted),
    PL_FAULT("register_overlap_wrong_code", "R30", "hostregister", "error",
             "An overlapping registration fails with INVALID_VALUE, not ALREADY_REGISTERED.",
             InstallRegisterOverlapWrongCode),
    PL_FAULT("register_accepts_unknown_flags", "R26", "hostregister", "error",
             "cuMemHostRegister masks off unknown flag bits instead of rejecting them.",
             InstallRegisterAcceptsUnknownFlags),
    PL_FAULT("register_accepts_empty", "R39", "hostregister", "error",
             "Registering NULL or size 0 succeeds.", InstallRegisterAcceptsEmpty),
    PL_FAULT("register_drops_last_page", "R29", "hostregister", "data",
             "The last page of a multi-page registration is not pinned.",
             InstallRegisterDropsLastPage),
    PL_FAULT("register_ignores_read_only", "R42", "hostregister", "flag",
             "The ReadOnly registration flag is dropped (pinned writable).",
             InstallRegisterIgnoresReadOnly),
    PL_FAULT("register_pinned_wrong_code", "R40", "hostregister", "error",
             "Registering device (or pinned) memory fails with ALREADY_REGISTERED, not "
             "INVALID_VALUE.",
             InstallRegisterPinnedWrongCode),
    PL_FAULT("register_lost", "R26", "hostregister", "resource",
             "cuMemHostRegister reports success but registers nothing.", InstallRegisterLost),
    PL_FAULT("unregister_lost", "R33", "hostregister", "resource",
             "cuMemHostUnregister reports success but leaves the range pinned.",
             InstallUnregisterLost),
    PL_FAULT("unregister_wrong_code", "R35", "hostregister", "error",
             "Unregistering unregistered memory fails with INVALID_VALUE, not NOT_REGISTERED.",
             InstallUnregisterWrongCode),
    PL_FAULT("unregister_interior_wrong_code", "R34", "hostregister", "error",
             "Unregistering an interior pointer or cuMemHostAlloc memory fails with "
             "NOT_REGISTERED, not INVALID_VALUE.",
             InstallUnregisterInteriorWrongCode),
    PL_FAULT("unregister_null_succeeds", "R37", "hostregister", "error",
             "cuMemHostUnregister(NULL) succeeds.", InstallUnregisterNullSucceeds),
    // Device pointers and attributes.
    PL_FAULT("devptr_off_by_one", "R51", "devptr", "data",
             "cuMemHostGetDevicePointer returns the alias plus one byte.",
             InstallDevicePointerOffByOne),
    PL_FAULT("devptr_ignores_offset", "R53", "devptr", "data",
             "Interior pointers map to the alias of the block base, not base plus offset.",
             InstallDevicePointerIgnoresOffset),
    PL_FAULT("devptr_accepts_flags", "R50", "devptr", "error",
             "cuMemHostGetDevicePointer accepts non-zero flags.", InstallDevicePointerAcceptsFlags),
    PL_FAULT("devptr_one_past_the_end", "R52", "devptr", "error",
             "One past the end of a pinned block still gets a device pointer.",
             InstallDevicePointerOnePastTheEnd),
    PL_FAULT("devptr_for_unpinned", "R52", "devptr", "error",
             "Unpinned memory gets a device pointer (its own address).",
             InstallDevicePointerForUnpinned),
    PL_FAULT("attr_host_as_device", "R72", "devptr", "data",
             "Pointer attributes report pinned host memory as device memory.",
             InstallAttributesHostAsDevice),
    PL_FAULT("attr_wrong_device_pointer", "R72", "devptr", "data",
             "The device-pointer attribute is off by 64 bytes.",
             InstallAttributesWrongDevicePointer),
    PL_FAULT("attr_no_host_pointer", "R72", "devptr", "data",
             "The host-pointer attribute of pinned memory is NULL.", InstallAttributesNoHostPointer),
    PL_FAULT("attr_wrong_device", "R72", "devptr", "data",
             "The device ordinal attribute of pinned memory is one too high.",
             InstallAttributesWrongDevice),
    PL_FAULT("attr_of_unknown_succeeds", "R73", "driverapi", "error",
             "cuPointerGetAttribute answers a memory type for memory no context knows.",
             InstallAttributeOfUnknownSucceeds),
    // Device flags.
    PL_FAULT("ctxflags_drop_sched", "R62", "deviceflags", "flag",
             "Setting primary-context flags drops the scheduling bits.",
             InstallPrimaryCtxDropsSchedFlags),
    PL_FAULT("ctxflags_accept_unknown", "R64", "deviceflags", "error",
             "Unknown primary-context flag bits are masked off instead of rejected.",
             InstallPrimaryCtxAcceptsUnknownFlags),
    PL_FAULT("ctxflags_read_back_wrong", "R65", "deviceflags", "flag",
             "Context flags read back without their scheduling bits.", InstallFlagsReadBackWrong),
    PL_FAULT("ctxflags_invent_blocking_sync", "R62", "deviceflags", "flag",
             "Context flags read back with BlockingSync although it was never set.",
             InstallFlagsInventBlockingSync),
    PL_FAULT("ctxflags_set_while_active_fails", "R68", "deviceflags", "error",
             "Setting the flags of an active primary context fails with PRIMARY_CONTEXT_ACTIVE.",
             InstallPrimaryCtxSetFlagsWhileActiveFails),
    // Capabilities and atomics.
    PL_FAULT("cap_cannot_map_host", "R85", "platform", "capability",
             "CanMapHostMemory reported as 0.", InstallCapCannotMapHost),
    PL_FAULT("cap_no_host_register", "R27", "hostregister", "capability",
             "HostRegisterSupported reported as 0.", InstallCapNoHostRegister),
    PL_FAULT("cap_no_unified_addressing", "R70", "platform", "capability",
             "UnifiedAddressing reported as 0.", InstallCapNoUnifiedAddressing),
    PL_FAULT("cap_claims_integrated", "R86", "platform", "capability",
             "A discrete GPU reports Integrated=1.", InstallCapClaimsIntegrated),
    PL_FAULT("cap_host_pointer_for_registered_flipped", "R45", "devptr", "capability",
             "CanUseHostPointerForRegisteredMem reported inverted.",
             InstallCapHostPointerForRegisteredFlipped),
    PL_FAULT("cap_host_native_atomics_flipped", "R81", "atomics", "capability",
             "HostNativeAtomicSupported reported inverted.", InstallCapHostNativeAtomicsFlipped),
    PL_FAULT("cap_no_read_only_register", "R42", "hostregister", "capability",
             "HostRegisterReadOnlySupported reported as 0.", InstallCapNoReadOnlyRegister),
    PL_FAULT("cap_claims_ats", "R12", "hostregister", "capability",
             "PageableMemoryAccessUsesHostPageTables reported as 1 on a PCIe system.",
             InstallCapClaimsAts),
    PL_FAULT("atomic_caps_overclaimed", "R82", "atomics", "capability",
             "cuDeviceGetHostAtomicCapabilities claims every operation.",
             InstallAtomicCapsOverclaimed),
    PL_FAULT("atomic_caps_accept_zero_count", "R82", "atomics", "error",
             "cuDeviceGetHostAtomicCapabilities accepts a count of 0.",
             InstallAtomicCapsAcceptsZeroCount),
};

// =============================================================================================
// Conforming variations (tools/faults/conforming.tsv, issue 20): driver behaviours the CUDA 13.0
// documentation allows but r580 does not show. Selected like faults (PAGELOCK_FAULT=<name>);
// a case that FAILs under one is a false alarm of the suite, not a driver fault. Each hook
// calls NoteChanged() when it really changed an answer, so a variation that never did is
// reported as not exercised instead of as passed. Each is narrow: it changes only the calls the
// documentation leaves open and forwards everything else untouched.

constexpr unsigned kRegisterKnownFlags = 0xfu;   // PORTABLE|DEVICEMAP|IOMEMORY|READ_ONLY
constexpr unsigned kHostAllocKnownFlags = 0x7u;  // PORTABLE|DEVICEMAP|WRITECOMBINED

// The start of the allocation or registration that holds p (0 when none is known).
CUdeviceptr RangeStart(const void* p) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  CUdeviceptr base = 0;
  if (!fn || fn(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, Ptr(p)) != CUDA_SUCCESS) return 0;
  return base;
}

// Whether the process maps p without write permission (/proc/self/maps; false when unknown).
bool MappedReadOnly(const void* p) {
  FILE* f = fopen("/proc/self/maps", "re");
  if (!f) return false;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  char line[512];
  bool read_only = false;
  while (fgets(line, sizeof(line), f)) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = "";
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
    if (a >= lo && a < hi) {
      read_only = perms[0] == 'r' && perms[1] == '-';
      break;
    }
  }
  fclose(f);
  return read_only;
}

// R44: IoMemory on ordinary memory (r580: INVALID_VALUE) answered with another member of the
// flag's documented set. Only a call r580 rejects for that reason alone changes: valid flags,
// a non-null range that is not already pinned.
template <CUresult kCode>
CUresult IoMemoryOnRam(Real_MemHostRegister real, void* p, size_t n, unsigned f) {
  CUresult r = real(p, n, f);
  if (r == CUDA_ERROR_INVALID_VALUE && p && n && (f & CU_MEMHOSTREGISTER_IOMEMORY) &&
      (f & ~kRegisterKnownFlags) == 0 && !IsPinnedHost(p)) {
    NoteChanged("cuMemHostRegister IOMEMORY on ordinary memory");
    return kCode;
  }
  return r;
}
void InstallIoMemoryNotPermitted() { HookMemHostRegister(&IoMemoryOnRam<CUDA_ERROR_NOT_PERMITTED>); }
void InstallIoMemoryNotSupported() { HookMemHostRegister(&IoMemoryOnRam<CUDA_ERROR_NOT_SUPPORTED>); }

// R41: registering memory cuMemHostAlloc already pinned (r580: INVALID_VALUE) reports
// HOST_MEMORY_ALREADY_REGISTERED. Device memory (R40) and bad flags are left alone.
void InstallRegisterPinnedAlreadyRegistered() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    if (r == CUDA_ERROR_INVALID_VALUE && p && n && (f & ~kRegisterKnownFlags) == 0 &&
        IsPinnedHost(p)) {
      NoteChanged("cuMemHostRegister of pinned memory");
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    return r;
  });
}

// R38: unregistering the base of a cuMemHostAlloc block (r580: INVALID_VALUE) reports
// HOST_MEMORY_NOT_REGISTERED. Interior pointers of registrations (R34) keep INVALID_VALUE: the
// change applies only where the pointer is the start of its pinned block.
void InstallUnregisterPinnedNotRegistered() {
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    CUresult r = real(p);
    if (r == CUDA_ERROR_INVALID_VALUE && p && IsPinnedHost(p) && RangeStart(p) == Ptr(p)) {
      NoteChanged("cuMemHostUnregister of cuMemHostAlloc memory");
      return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    }
    return r;
  });
}

// R43: a PROT_READ mapping registered without READ_ONLY fails, but with NOT_PERMITTED (or, if
// r580 said NOT_PERMITTED, INVALID_VALUE): the text requires the flag and names no code.
void InstallReadOnlyMappingOtherCode() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    if (r != CUDA_SUCCESS && p && n && (f & ~kRegisterKnownFlags) == 0 &&
        !(f & (CU_MEMHOSTREGISTER_READ_ONLY | CU_MEMHOSTREGISTER_IOMEMORY)) && MappedReadOnly(p)) {
      NoteChanged("cuMemHostRegister of a read-only mapping without READ_ONLY");
      return r == CUDA_ERROR_NOT_PERMITTED ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_PERMITTED;
    }
    return r;
  });
}

// R42: the sticky error of a faulting kernel (r580: ILLEGAL_ADDRESS for a GPU write into a
// read-only registration) is LAUNCH_FAILED, on every entry that reports it.
template <typename Real, typename... A>
CUresult LaunchFailedForIllegalAddress(Real real, A... a) {
  CUresult r = real(a...);
  if (r != CUDA_ERROR_ILLEGAL_ADDRESS) return r;
  NoteChanged("ILLEGAL_ADDRESS reported as LAUNCH_FAILED");
  return CUDA_ERROR_LAUNCH_FAILED;
}
void InstallFaultCodeLaunchFailed() {
  HookCtxSynchronize(&LaunchFailedForIllegalAddress<Real_CtxSynchronize>);
  HookCtxSynchronize13(&LaunchFailedForIllegalAddress<Real_CtxSynchronize13, CUcontext>);
  HookStreamSynchronize(&LaunchFailedForIllegalAddress<Real_StreamSynchronize, CUstream>);
  HookStreamQuery(&LaunchFailedForIllegalAddress<Real_StreamQuery, CUstream>);
  HookEventSynchronize(&LaunchFailedForIllegalAddress<Real_EventSynchronize, CUevent>);
  HookEventQuery(&LaunchFailedForIllegalAddress<Real_EventQuery, CUevent>);
  HookMemcpy(&LaunchFailedForIllegalAddress<Real_Memcpy, CUdeviceptr, CUdeviceptr, size_t>);
  HookMemcpyDtoH(&LaunchFailedForIllegalAddress<Real_MemcpyDtoH, void*, CUdeviceptr, size_t>);
  HookMemcpyHtoD(&LaunchFailedForIllegalAddress<Real_MemcpyHtoD, CUdeviceptr, const void*, size_t>);
  HookMemFree(&LaunchFailedForIllegalAddress<Real_MemFree, CUdeviceptr>);
  HookMemFreeHost(&LaunchFailedForIllegalAddress<Real_MemFreeHost, void*>);
  HookMemHostUnregister(&LaunchFailedForIllegalAddress<Real_MemHostUnregister, void*>);
}

// R09 / R26: undefined flag bits are still rejected, but with NOT_SUPPORTED (r580:
// INVALID_VALUE); the 13.0 texts name no code for a bit they do not define.
void InstallHostAllocUnknownFlagsNotSupported() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    if (r == CUDA_ERROR_INVALID_VALUE && (f & ~kHostAllocKnownFlags)) {
      NoteChanged("cuMemHostAlloc undefined flag bits");
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    return r;
  });
}
void InstallRegisterUnknownFlagsNotSupported() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    if (r == CUDA_ERROR_INVALID_VALUE && (f & ~kRegisterKnownFlags)) {
      NoteChanged("cuMemHostRegister undefined flag bits");
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    return r;
  });
}

// R11: a zero-size pinned allocation succeeds with a real (freeable) one-byte block instead of
// a null pointer.
void InstallZeroSizeAllocates() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    if (n != 0 || (f & ~kHostAllocKnownFlags)) return real(p, n, f);
    NoteChanged("zero-size cuMemHostAlloc allocates");
    return real(p, 1, f);
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    if (n != 0) return real(p, n);
    NoteChanged("zero-size cuMemAllocHost allocates");
    return real(p, 1);
  });
}

// P01 / R52: pinned allocations are made in 64 KiB units (the size rounded up): every block is
// at least as large as asked, aligned more than r580's 512 B, and one past its end is pinned
// padding rather than the next allocation or unpinned memory.
constexpr size_t kGranule = 64 * 1024;
// The size to ask the real driver for: n rounded up to the granule (n itself where rounding
// would overflow, e.g. R06's impossible sizes, or n is 0: R11's case is left alone).
size_t Granular(size_t n) {
  const size_t up = n ? (n + kGranule - 1) / kGranule * kGranule : 0;
  return up > n ? up : n;
}
void InstallAllocation64kGranular() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    if (Granular(n) != n) NoteChanged("cuMemHostAlloc padded to 64 KiB");
    return real(p, Granular(n), f);
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    if (Granular(n) != n) NoteChanged("cuMemAllocHost padded to 64 KiB");
    return real(p, Granular(n));
  });
}

// A capability answered 0 with the feature really absent: the attribute reads 0 and the API
// then fails with the documented NOT_SUPPORTED.
template <CUdevice_attribute kAttr>
CUresult AttributeAbsent(Real_DeviceGetAttribute real, int* v, CUdevice_attribute a, CUdevice d) {
  CUresult r = real(v, a, d);
  if (r == CUDA_SUCCESS && v && a == kAttr && *v != 0) {
    NoteChanged("capability attribute answered 0");
    *v = 0;
  }
  return r;
}

// R42: no ReadOnly registration (attribute 113 = 0); the flag is then NOT_SUPPORTED.
void InstallNoReadOnlyRegister() {
  HookDeviceGetAttribute(&AttributeAbsent<CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED>);
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    if (!(f & CU_MEMHOSTREGISTER_READ_ONLY) || (f & ~kRegisterKnownFlags)) return real(p, n, f);
    NoteChanged("cuMemHostRegister READ_ONLY not supported");
    return CUDA_ERROR_NOT_SUPPORTED;
  });
}

// R27: no host registration at all (attribute 99 = 0); cuMemHostRegister is NOT_SUPPORTED.
void InstallNoHostRegister() {
  HookDeviceGetAttribute(&AttributeAbsent<CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED>);
  HookMemHostRegister([](Real_MemHostRegister, void*, size_t, unsigned) -> CUresult {
    NoteChanged("cuMemHostRegister not supported");
    return CUDA_ERROR_NOT_SUPPORTED;
  });
}

// R77: completion is later but correct: every asynchronous copy, memset and kernel launch on an
// explicit stream is followed, and every event record on one preceded, by 2 ms of stream-ordered
// host work, so the stream really finishes later and every query and wait stays truthful. The
// default stream (handle 0, legacy or per-thread depending on the caller's ABI) is left alone:
// work queued there through another ABI would add synchronisation the caller did not ask for.
void CUDA_CB SleepTwoMs(void*) { usleep(2000); }
void DelayStream(CUstream s) {
  static const auto fn = Real<CUresult(CUDAAPI*)(CUstream, CUhostFn, void*)>("cuLaunchHostFunc");
  if (!s || !fn) return;
  if (fn(s, &SleepTwoMs, nullptr) == CUDA_SUCCESS) NoteChanged("stream work delayed by 2 ms");
}
template <typename Real, typename... A>
CUresult ThenDelay(Real real, A... a) {
  CUresult r = real(a...);
  if (r == CUDA_SUCCESS) DelayStream(std::get<sizeof...(A) - 1>(std::tuple<A...>(a...)));
  return r;
}
void InstallCompletionDelayed() {
  HookMemcpyHtoDAsync(&ThenDelay<Real_MemcpyHtoDAsync, CUdeviceptr, const void*, size_t, CUstream>);
  HookMemcpyDtoHAsync(&ThenDelay<Real_MemcpyDtoHAsync, void*, CUdeviceptr, size_t, CUstream>);
  HookMemcpyDtoDAsync(&ThenDelay<Real_MemcpyDtoDAsync, CUdeviceptr, CUdeviceptr, size_t, CUstream>);
  HookMemcpyAsync(&ThenDelay<Real_MemcpyAsync, CUdeviceptr, CUdeviceptr, size_t, CUstream>);
  HookMemsetD8Async(&ThenDelay<Real_MemsetD8Async, CUdeviceptr, unsigned char, size_t, CUstream>);
  HookMemsetD32Async(&ThenDelay<Real_MemsetD32Async, CUdeviceptr, unsigned int, size_t, CUstream>);
  HookLaunchKernel([](Real_LaunchKernel real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream st, void** p,
                      void** e) -> CUresult {
    CUresult r = real(f, gx, gy, gz, bx, by, bz, sh, st, p, e);
    if (r == CUDA_SUCCESS) DelayStream(st);
    return r;
  });
  HookLaunchKernelEx([](Real_LaunchKernelEx real, const CUlaunchConfig* c, CUfunction f, void** p,
                        void** e) -> CUresult {
    CUresult r = real(c, f, p, e);
    if (r == CUDA_SUCCESS && c) DelayStream(c->hStream);
    return r;
  });
  HookEventRecord([](Real_EventRecord real, CUevent e, CUstream s) -> CUresult {
    DelayStream(s);
    return real(e, s);
  });
  HookEventRecordWithFlags([](Real_EventRecordWithFlags real, CUevent e, CUstream s,
                              unsigned f) -> CUresult {
    DelayStream(s);
    return real(e, s, f);
  });
}

// R77: waits return 5 ms after the work completed (the documentation bounds when a wait may
// return early, never how late).
template <typename Real, typename... A>
CUresult ThenSleep(Real real, A... a) {
  CUresult r = real(a...);
  NoteChanged("wait returned 5 ms late");
  usleep(5000);
  return r;
}
void InstallWaitsReturnLate() {
  HookCtxSynchronize(&ThenSleep<Real_CtxSynchronize>);
  HookCtxSynchronize13(&ThenSleep<Real_CtxSynchronize13, CUcontext>);
  HookStreamSynchronize(&ThenSleep<Real_StreamSynchronize, CUstream>);
  HookEventSynchronize(&ThenSleep<Real_EventSynchronize, CUevent>);
}

// R76: synchronous copies and memsets return 1 ms after they completed (a synchronous call is
// bounded below, by its completion, never above).
template <typename Real, typename... A>
CUresult ThenSleepOneMs(Real real, A... a) {
  CUresult r = real(a...);
  NoteChanged("synchronous copy returned 1 ms late");
  usleep(1000);
  return r;
}
void InstallSyncCopiesReturnLate() {
  HookMemcpy(&ThenSleepOneMs<Real_Memcpy, CUdeviceptr, CUdeviceptr, size_t>);
  HookMemcpyHtoD(&ThenSleepOneMs<Real_MemcpyHtoD, CUdeviceptr, const void*, size_t>);
  HookMemcpyDtoH(&ThenSleepOneMs<Real_MemcpyDtoH, void*, CUdeviceptr, size_t>);
  HookMemcpyDtoD(&ThenSleepOneMs<Real_MemcpyDtoD, CUdeviceptr, CUdeviceptr, size_t>);
  HookMemsetD8(&ThenSleepOneMs<Real_MemsetD8, CUdeviceptr, unsigned char, size_t>);
  HookMemsetD32(&ThenSleepOneMs<Real_MemsetD32, CUdeviceptr, unsigned int, size_t>);
}

// R32: overlap is judged per page: a registration that shares a page (but no byte) with an
// existing one fails with HOST_MEMORY_ALREADY_REGISTERED. The shim keeps the ranges it saw
// registered (a fixed table; when full, it stops varying).
struct Range {
  uintptr_t start, end;
};
Range g_ranges[4096];
pthread_mutex_t g_ranges_mu = PTHREAD_MUTEX_INITIALIZER;
uintptr_t PageDown(uintptr_t a) { return a & ~uintptr_t{4095}; }
uintptr_t PageUp(uintptr_t a) { return (a + 4095) & ~uintptr_t{4095}; }

bool SharesAPageButNoByte(uintptr_t s, uintptr_t e) {
  bool hit = false;
  pthread_mutex_lock(&g_ranges_mu);
  for (const Range& r : g_ranges) {
    if (r.start == r.end) continue;
    const bool bytes = s < r.end && r.start < e;
    const bool pages = PageDown(s) < PageUp(r.end) && PageDown(r.start) < PageUp(e);
    if (pages && !bytes) hit = true;
  }
  pthread_mutex_unlock(&g_ranges_mu);
  return hit;
}
void Remember(uintptr_t s, uintptr_t e) {
  pthread_mutex_lock(&g_ranges_mu);
  for (Range& r : g_ranges)
    if (r.start == r.end) {
      r = {s, e};
      break;
    }
  pthread_mutex_unlock(&g_ranges_mu);
}
void Forget(uintptr_t s) {
  pthread_mutex_lock(&g_ranges_mu);
  for (Range& r : g_ranges)
    if (r.start != r.end && r.start == s) r = {0, 0};
  pthread_mutex_unlock(&g_ranges_mu);
}
void InstallOverlapPerPage() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    const uintptr_t s = reinterpret_cast<uintptr_t>(p), e = s + n;
    if (p && n && SharesAPageButNoByte(s, e)) {
      NoteChanged("registration sharing a page refused");
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    CUresult r = real(p, n, f);
    if (r == CUDA_SUCCESS && p && n) Remember(s, e);
    return r;
  });
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    CUresult r = real(p);
    if (r == CUDA_SUCCESS) Forget(reinterpret_cast<uintptr_t>(p));
    return r;
  });
}

// R66: with a non-primary driver context current (the device's primary context not yet active),
// setting the primary context's flags fails with 708, which the runtime passes on as
// cudaErrorSetOnActiveProcess. Exercised only if the runtime asks the driver before deciding
// itself (the "changed" line says).
void InstallSetFlagsBesideDriverContext() {
  HookDevicePrimaryCtxSetFlags([](Real_DevicePrimaryCtxSetFlags real, CUdevice d,
                                  unsigned f) -> CUresult {
    static const auto current = Real<CUresult(CUDAAPI*)(CUcontext*)>("cuCtxGetCurrent");
    // The one-argument ABI (3.2): asked at 13.0 the driver gives cuCtxGetDevice_v2(dev, ctx),
    // which read a garbage context and crashed every cudaSetDeviceFlags caller.
    static const auto device = Real<CUresult(CUDAAPI*)(CUdevice*)>("cuCtxGetDevice", 3020);
    static const auto state = Real<Real_DevicePrimaryCtxGetState>("cuDevicePrimaryCtxGetState");
    CUcontext ctx = nullptr;
    CUdevice dev = -1;
    unsigned flags = 0;
    int active = 1;
    if (current && device && state && current(&ctx) == CUDA_SUCCESS && ctx &&
        device(&dev) == CUDA_SUCCESS && dev == d && state(d, &flags, &active) == CUDA_SUCCESS &&
        !active) {
      NoteChanged("cuDevicePrimaryCtxSetFlags beside a non-primary context");
      return CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE;
    }
    return real(d, f);
  });
}

#define PL_VARIATION(name, rule, family, kind, text, install, doc) \
  {name, rule, family, kind, text, install, doc}

const Fault kVariations[] = {
    PL_VARIATION("iomemory_on_ram_not_permitted", "R44", "hostregister", "code",
                 "IoMemory on ordinary memory fails with NOT_PERMITTED (r580: INVALID_VALUE).",
                 InstallIoMemoryNotPermitted,
                 "13.0 CU_MEMHOSTREGISTER_IOMEMORY: \"It may return CUDA_ERROR_NOT_PERMITTED if "
                 "run as an unprivileged user, CUDA_ERROR_NOT_SUPPORTED on older Linux kernel "
                 "versions\"; semantics review 4"),
    PL_VARIATION("iomemory_on_ram_not_supported", "R44", "hostregister", "code",
                 "IoMemory on ordinary memory fails with NOT_SUPPORTED (r580: INVALID_VALUE).",
                 InstallIoMemoryNotSupported,
                 "13.0 CU_MEMHOSTREGISTER_IOMEMORY: \"... CUDA_ERROR_NOT_SUPPORTED on older Linux "
                 "kernel versions\"; semantics review 4"),
    PL_VARIATION("register_pinned_already_registered", "R41", "hostregister", "code",
                 "Registering cuMemHostAlloc memory fails with HOST_MEMORY_ALREADY_REGISTERED "
                 "(r580: INVALID_VALUE).",
                 InstallRegisterPinnedAlreadyRegistered,
                 "712 enum text: \"the memory range passed to cudaHostRegister() has already "
                 "been registered\"; cuda-semantics R41 \"expect 1 or 712\"; semantics review 6"),
    PL_VARIATION("unregister_pinned_not_registered", "R38", "hostregister", "code",
                 "Unregistering cuMemHostAlloc memory fails with HOST_MEMORY_NOT_REGISTERED "
                 "(r580: INVALID_VALUE).",
                 InstallUnregisterPinnedNotRegistered,
                 "713 enum text: \"does not correspond to any currently registered memory "
                 "region\"; semantics review 6 (R38: {1, 713})"),
    PL_VARIATION("read_only_mapping_not_permitted", "R43", "hostregister", "code",
                 "Registering a PROT_READ mapping without ReadOnly fails with NOT_PERMITTED.",
                 InstallReadOnlyMappingOtherCode,
                 "13.0 cudaHostRegister: ReadOnly \"is required in order to register memory "
                 "mapped to the CPU as read-only\" (no code given; NOT_PERMITTED is in "
                 "cuMemHostRegister's return list); semantics review 6"),
    PL_VARIATION("fault_code_launch_failed", "R42", "hostregister", "code",
                 "A kernel's invalid access is reported as LAUNCH_FAILED (r580: ILLEGAL_ADDRESS).",
                 InstallFaultCodeLaunchFailed,
                 "CU_MEMHOSTREGISTER_READ_ONLY: writes \"are considered invalid accesses and thus "
                 "return error\" (no code); 719 enum text: \"An exception occurred on the device "
                 "while executing a kernel\"; semantics review 6"),
    PL_VARIATION("hostalloc_unknown_flags_not_supported", "R09", "hostalloc", "code",
                 "cuMemHostAlloc rejects undefined flag bits with NOT_SUPPORTED (r580: "
                 "INVALID_VALUE).",
                 InstallHostAllocUnknownFlagsNotSupported,
                 "13.0 cuMemHostAlloc/cudaHostAlloc define bits 0x1-0x4 and name no code for "
                 "others (rules.tsv R09: any failure); semantics review 6"),
    PL_VARIATION("register_unknown_flags_not_supported", "R26", "hostregister", "code",
                 "cuMemHostRegister rejects undefined flag bits with NOT_SUPPORTED (r580: "
                 "INVALID_VALUE).",
                 InstallRegisterUnknownFlagsNotSupported,
                 "13.0 cuMemHostRegister defines bits 0x1-0x8, names no code for others and lists "
                 "CUDA_ERROR_NOT_SUPPORTED among its returns (rules.tsv R26); semantics review 6"),
    PL_VARIATION("zero_size_allocates", "R11", "hostalloc", "layout",
                 "A zero-size pinned allocation succeeds with a real, freeable block (r580: "
                 "null).",
                 InstallZeroSizeAllocates,
                 "No documentation of size 0; cuda-semantics R11: \"pointer value differs by "
                 "version ... expect success, and expect cudaFreeHost(ptr) to succeed\"; "
                 "semantics review 6"),
    PL_VARIATION("allocation_64k_granular", "P01,R52", "hostalloc", "layout",
                 "Pinned allocations are made in 64 KiB units: larger alignment than r580's "
                 "512 B, and one past the end is the block's own pinned padding.",
                 InstallAllocation64kGranular,
                 "13.0 cuMemHostAlloc: \"Allocates bytesize bytes of host memory that is "
                 "page-locked\" (at least, no layout promised); P01 asks alignof(max_align_t) "
                 "only; semantics review 6 (one past the end is undocumented)"),
    PL_VARIATION("no_read_only_register", "R42", "hostregister", "capability",
                 "HostRegisterReadOnlySupported is 0 and the ReadOnly flag then fails with "
                 "NOT_SUPPORTED.",
                 InstallNoReadOnlyRegister,
                 "13.0 CU_MEMHOSTREGISTER_READ_ONLY: \"Using this flag with a current context "
                 "associated with a device that does not have this attribute set will cause "
                 "cuMemHostRegister to error with CUDA_ERROR_NOT_SUPPORTED\""),
    PL_VARIATION("no_host_register", "R27,R26,R29,R30,R33,R45", "hostregister", "capability",
                 "HostRegisterSupported is 0 and cuMemHostRegister then fails with "
                 "NOT_SUPPORTED.",
                 InstallNoHostRegister,
                 "13.0 cudaHostRegister: \"supported only on I/O coherent devices that have a "
                 "non-zero value for the device attribute cudaDevAttrHostRegisterSupported\"; "
                 "cuMemHostRegister lists CUDA_ERROR_NOT_SUPPORTED (rules.tsv R27)"),
    PL_VARIATION("completion_delayed", "R77,S03", "streams", "timing",
                 "Work on explicit streams completes 2 ms later (stream-ordered host delay after "
                 "each copy, memset and launch, before each event record); answers stay "
                 "truthful.",
                 InstallCompletionDelayed,
                 "13.0 cuStreamQuery/cuEventQuery report completion when the work is done and "
                 "promise no time; asynchronous calls \"may return before the ... is complete\" "
                 "(API synchronization behavior): nothing bounds how long the work takes"),
    PL_VARIATION("waits_return_late", "R77,S03", "streams", "timing",
                 "cuCtxSynchronize, cuStreamSynchronize and cuEventSynchronize return 5 ms after "
                 "the work completed.",
                 InstallWaitsReturnLate,
                 "13.0 cuStreamSynchronize: \"Waits until the device has completed all operations "
                 "in the stream\"; a wait is bounded below (never before completion), not above"),
    PL_VARIATION("sync_copies_return_late", "R76", "streams", "timing",
                 "Synchronous copies and memsets (cuMemcpy*, cuMemsetD8/D32) return 1 ms after "
                 "they completed.",
                 InstallSyncCopiesReturnLate,
                 "13.0 API synchronization behavior: a synchronous copy returns once the copy "
                 "has completed (for pageable memory: once staged); no text bounds how soon "
                 "(rules.tsv R76: \"it may be synchronous\")"),
    PL_VARIATION("register_overlap_per_page", "R32,R30", "hostregister", "overlap",
                 "A registration that shares a page but no byte with an existing one fails with "
                 "HOST_MEMORY_ALREADY_REGISTERED (overlap judged per page).",
                 InstallOverlapPerPage,
                 "Undocumented (semantics review 6: \"The docs do not say whether overlap is "
                 "judged per byte or per page\"); rules.tsv R32 is an observation"),
    PL_VARIATION("set_flags_beside_driver_context_708", "R66", "deviceflags", "code",
                 "With a non-primary driver context current, cuDevicePrimaryCtxSetFlags fails with "
                 "708 (the runtime's cudaErrorSetOnActiveProcess; r580's runtime answers 49).",
                 InstallSetFlagsBesideDriverContext,
                 "708 enum text: \"This error can also be returned if using runtime/driver "
                 "interoperability and there is an existing CUcontext active on the host "
                 "thread\"; semantics review 3"),
};

}  // namespace

const Fault* Catalogue(size_t* count) {
  *count = sizeof(kFaults) / sizeof(kFaults[0]);
  return kFaults;
}

const Fault* Conforming(size_t* count) {
  *count = sizeof(kVariations) / sizeof(kVariations[0]);
  return kVariations;
}

const Fault* FindFault(const char* name) {
  for (const Fault& f : kFaults)
    if (strcmp(f.name, name) == 0) return &f;
  for (const Fault& f : kVariations)
    if (strcmp(f.name, name) == 0) return &f;
  return nullptr;
}

}  // namespace pagelock_faults
