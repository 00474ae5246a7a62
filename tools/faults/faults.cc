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
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

CUdeviceptr RangeStart(const void* p);  // below, beside the conforming variations

// =============================================================================================
// Faults of other shapes: a fault that fires only for some sizes, some variants of a call, some
// process states or some timings, or where two queries of one fact disagree. A suite that only
// exercises the common case (one size, one stream kind, the first call) misses these.

constexpr size_t kMiB = size_t{1} << 20;
constexpr uintptr_t kPage = 4096;

// Makes byte k of a completed copy's destination differ from the source's (any memory kinds).
void CorruptByteAt(CUdeviceptr dst, CUdeviceptr src, size_t k) {
  unsigned char b = 0;
  if (RealCopy(Ptr(&b), src + k, 1) != CUDA_SUCCESS) return;
  b ^= 0xff;
  RealCopy(dst + k, Ptr(&b), 1);
}

// The same in stream order, for an asynchronous copy from host to device or into host memory
// (a device-to-device copy is left alone: its source byte cannot be read without a wait).
void CorruptByteAtAsync(CUdeviceptr dst, CUdeviceptr src, size_t k, CUstream st) {
  if (!IsDevice(dst))
    FlipHostByteInStream(HostView(dst + k), st);
  else if (!IsDevice(src))
    RealSetByteAsync(dst + k, HostView(src + k)[0] ^ 0xff, st);
}

// The offset of the first byte of [a, a + n) at an address that is a multiple of `unit`, if the
// range crosses one (the range's own start does not count); n when it crosses none.
size_t CrossingOffset(uintptr_t a, size_t n, uintptr_t unit) {
  const uintptr_t next = (a / unit + 1) * unit;
  return n && next < a + n ? static_cast<size_t>(next - a) : n;
}

// A process-wide call counter: true on every nth call.
bool EveryNth(unsigned* counter, unsigned n) {
  return __atomic_add_fetch(counter, 1u, __ATOMIC_RELAXED) % n == 0;
}

// Whether a call is on the per-thread default stream: the stream handle CU_STREAM_PER_THREAD, or
// the null stream through a _ptsz/_ptds entry (the real pointer is the one the driver hands out
// for per-thread requests of that name, and it differs from the legacy one).
bool IsPerThreadEntry(void* real, const char* name) {
  using Gpa = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t,
                                 CUdriverProcAddressQueryResult*);
  static const auto gpa = Real<Gpa>("cuGetProcAddress", 12000);
  void* per_thread = nullptr;
  void* legacy = nullptr;
  CUdriverProcAddressQueryResult st;
  if (!gpa ||
      gpa(name, &per_thread, CUDA_VERSION, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) !=
          CUDA_SUCCESS ||
      gpa(name, &legacy, CUDA_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st) != CUDA_SUCCESS)
    return false;
  return per_thread && per_thread != legacy && real == per_thread;
}
template <typename R>
bool OnPerThreadStream(R real, CUstream s, const char* name) {
  return s == CU_STREAM_PER_THREAD || (!s && IsPerThreadEntry(reinterpret_cast<void*>(real), name));
}

// Whether an explicit stream was created with CU_STREAM_NON_BLOCKING (cuStreamGetFlags).
bool IsNonBlocking(CUstream s) {
  static const auto fn = Real<CUresult(CUDAAPI*)(CUstream, unsigned*)>("cuStreamGetFlags");
  unsigned f = 0;
  return s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD && fn &&
         fn(s, &f) == CUDA_SUCCESS && (f & CU_STREAM_NON_BLOCKING);
}

// The flags cuMemHostAlloc recorded for a host pointer (false for other memory).
bool HostAllocFlags(const void* p, unsigned* flags) {
  static const auto fn = Real<Real_MemHostGetFlags>("cuMemHostGetFlags");
  return fn && fn(flags, const_cast<void*>(p)) == CUDA_SUCCESS;
}

// An idle non-blocking stream of the shim's own: work put there runs at once.
CUstream SideStream() {
  static const auto create = Real<CUresult(CUDAAPI*)(CUstream*, unsigned)>("cuStreamCreate");
  static CUstream side = nullptr;
  if (!side && create) create(&side, CU_STREAM_NON_BLOCKING);
  return side;
}

// Blocks the shim has seen allocated or registered, for faults that depend on a block's history
// (a fixed table; when it is full the faults stop firing for new blocks).
struct Block {
  uintptr_t start, end;
  unsigned flags;
  int tag;       // kTagRegistered, kTagHostAlloc, kTagAllocHost
  bool live;     // false once freed, unregistered or released by a reset
  long long id;  // a remembered answer (buffer id, size) for the block's start
};
enum { kTagRegistered = 1, kTagHostAlloc = 2, kTagAllocHost = 3 };
Block g_blocks[4096];
pthread_mutex_t g_blocks_mu = PTHREAD_MUTEX_INITIALIZER;

void AddBlock(const void* p, size_t n, unsigned flags, int tag) {
  pthread_mutex_lock(&g_blocks_mu);
  for (Block& b : g_blocks)
    if (b.start == b.end) {
      b = {reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(p) + n, flags, tag, true, 0};
      break;
    }
  pthread_mutex_unlock(&g_blocks_mu);
}
// The live block of a tag (0: any) holding p; false when none.
bool FindBlock(const void* p, int tag, Block* out) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  bool found = false;
  pthread_mutex_lock(&g_blocks_mu);
  for (const Block& b : g_blocks)
    if (b.start != b.end && b.live && (!tag || b.tag == tag) && a >= b.start && a < b.end) {
      *out = b;
      found = true;
      break;
    }
  pthread_mutex_unlock(&g_blocks_mu);
  return found;
}
// Marks the live block starting at p dead (kept, so a later block at that address is a reuse).
void KillBlock(const void* p) {
  pthread_mutex_lock(&g_blocks_mu);
  for (Block& b : g_blocks)
    if (b.start != b.end && b.live && b.start == reinterpret_cast<uintptr_t>(p)) b.live = false;
  pthread_mutex_unlock(&g_blocks_mu);
}
// A dead block that started at the address of p, with its flags; false when none.
bool FindDeadAt(const void* p, Block* out) {
  bool found = false;
  pthread_mutex_lock(&g_blocks_mu);
  for (const Block& b : g_blocks)
    if (b.start != b.end && !b.live && b.start == reinterpret_cast<uintptr_t>(p)) {
      *out = b;
      found = true;
    }
  pthread_mutex_unlock(&g_blocks_mu);
  return found;
}
// The first answer remembered for a key address, remembering `value` if there is none.
long long FirstAnswer(uintptr_t key, long long value) {
  static struct { uintptr_t key; long long value; } seen[4096];
  long long out = value;
  pthread_mutex_lock(&g_blocks_mu);
  for (auto& s : seen) {
    if (s.key == key) { out = s.value; break; }
    if (!s.key) { s = {key, value}; break; }
  }
  pthread_mutex_unlock(&g_blocks_mu);
  return out;
}

// Tracking hooks, installed by the faults that need a block's history.
CUresult TrackRegister(Real_MemHostRegister real, void* p, size_t n, unsigned f) {
  CUresult r = real(p, n, f);
  if (r == CUDA_SUCCESS && p && n) AddBlock(p, n, f, kTagRegistered);
  return r;
}
CUresult TrackUnregister(Real_MemHostUnregister real, void* p) {
  CUresult r = real(p);
  if (r == CUDA_SUCCESS) KillBlock(p);
  return r;
}
CUresult TrackHostAlloc(Real_MemHostAlloc real, void** p, size_t n, unsigned f) {
  CUresult r = real(p, n, f);
  if (r == CUDA_SUCCESS && p && *p) AddBlock(*p, n ? n : 1, f, kTagHostAlloc);
  return r;
}
CUresult TrackAllocHost(Real_MemAllocHost real, void** p, size_t n) {
  CUresult r = real(p, n);
  if (r == CUDA_SUCCESS && p && *p) AddBlock(*p, n ? n : 1, 0, kTagAllocHost);
  return r;
}
CUresult TrackFreeHost(Real_MemFreeHost real, void* p) {
  CUresult r = real(p);
  if (r == CUDA_SUCCESS && p) KillBlock(p);
  return r;
}
void TrackRegistrations() {
  HookMemHostRegister(&TrackRegister);
  HookMemHostUnregister(&TrackUnregister);
}
void TrackAllocations() {
  HookMemHostAlloc(&TrackHostAlloc);
  HookMemAllocHost(&TrackAllocHost);
  HookMemFreeHost(&TrackFreeHost);
}
bool IsRegistered(const void* p) {
  Block b;
  return FindBlock(p, kTagRegistered, &b);
}

// ---------------------------------------------------------------------------------------------
// Size-dependent faults: the common sizes work, one size class does not.

// S07: a host-to-device copy of 64 MiB or more (the size where a driver switches to another DMA
// path or splits the copy into chunks) delivers a wrong last byte; smaller copies are exact.
void InstallHtodLargeCorrupts() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && n >= 64 * kMiB) CorruptByteAt(d, Ptr(s), n - 1);
    return r;
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = n >= 64 * kMiB && IsHtoD(d, s);
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && hit) CorruptByteAt(d, s, n - 1);
    return r;
  });
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && n >= 64 * kMiB) CorruptByteAtAsync(d, Ptr(s), n - 1, st);
    return r;
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const bool hit = n >= 64 * kMiB && IsHtoD(d, s);
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && hit) CorruptByteAtAsync(d, s, n - 1, st);
    return r;
  });
}

// C07: a device-to-host copy of 1 GiB or more stops one page short (a 32-bit page count
// computed from the size): the host's last page keeps its old bytes.
void InstallDtohGibTruncated() {
  constexpr size_t kGiB = size_t{1} << 30;
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    return real(d, s, n >= kGiB ? n - kPage : n);
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    return real(d, s, n >= kGiB && IsDtoH(d, s) ? n - kPage : n);
  });
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    return real(d, s, n >= kGiB ? n - kPage : n, st);
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    return real(d, s, n >= kGiB && IsDtoH(d, s) ? n - kPage : n, st);
  });
}

// S01: a synchronous copy whose destination crosses a 2 MiB-aligned address (a large-page
// boundary of the IOMMU or page-table walk) delivers a wrong byte at that boundary.
template <uintptr_t kUnit>
void CorruptAtCrossing(CUdeviceptr d, CUdeviceptr s, size_t n) {
  const size_t k = CrossingOffset(d, n, kUnit);
  if (k < n) CorruptByteAt(d, s, k);
}
template <uintptr_t kUnit>
void HookSyncCopiesCrossing() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS) CorruptAtCrossing<kUnit>(d, Ptr(s), n);
    return r;
  });
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS) CorruptAtCrossing<kUnit>(Ptr(d), s, n);
    return r;
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS) CorruptAtCrossing<kUnit>(d, s, n);
    return r;
  });
}
void InstallCopyCrossing2MiBCorrupts() { HookSyncCopiesCrossing<2 * kMiB>(); }

// S01: the same at a 4 GiB boundary of the address (a 32-bit offset that wraps): only copies
// whose destination straddles a multiple of 4 GiB, such as ones into large pinned blocks.
void InstallCopyCrossing4GiBCorrupts() { HookSyncCopiesCrossing<uintptr_t{4} << 30>(); }

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

// S01/R93: a memset of 64 MiB or more leaves its last page unwritten (8- and 32-bit, sync and
// async); smaller memsets are exact.
void InstallMemsetLargeTruncated() {
  HookMemsetD8([](Real_MemsetD8 real, CUdeviceptr d, unsigned char v, size_t n) -> CUresult {
    return real(d, v, n >= 64 * kMiB ? n - kPage : n);
  });
  HookMemsetD8Async([](Real_MemsetD8Async real, CUdeviceptr d, unsigned char v, size_t n,
                       CUstream st) -> CUresult {
    return real(d, v, n >= 64 * kMiB ? n - kPage : n, st);
  });
  HookMemsetD32([](Real_MemsetD32 real, CUdeviceptr d, unsigned v, size_t n) -> CUresult {
    return real(d, v, n >= 16 * kMiB ? n - kPage / 4 : n);
  });
  HookMemsetD32Async([](Real_MemsetD32Async real, CUdeviceptr d, unsigned v, size_t n,
                        CUstream st) -> CUresult {
    return real(d, v, n >= 16 * kMiB ? n - kPage / 4 : n, st);
  });
}

// S01: a synchronous copy of an odd number of bytes delivers a wrong last byte (the tail after
// the last whole word is mishandled); copies of even sizes are exact.
void InstallOddSizeCopyCorrupts() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && n % 2) CorruptByteAt(d, Ptr(s), n - 1);
    return r;
  });
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && n % 2) static_cast<unsigned char*>(d)[n - 1] ^= 0xff;
    return r;
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && n % 2) CorruptByteAt(d, s, n - 1);
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
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && hit) CorruptByteAtAsync(d, s, 0, st);
    return r;
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

// R93: cuMemsetD16 with an odd count writes a wrong last element (the tail after the last
// 32-bit word is filled with the value's bytes swapped); even counts are exact.
void InstallMemsetD16OddCountWrongLast() {
  HookMemsetD16([](Real_MemsetD16 real, CUdeviceptr d, unsigned short v, size_t n) -> CUresult {
    CUresult r = real(d, v, n);
    if (r == CUDA_SUCCESS && n % 2)
      RealSetByte(d + 2 * n - 1, static_cast<unsigned char>(~(v >> 8)));
    return r;
  });
}

// R92: a 2D memset whose pitch is larger than its width (padded rows) leaves the last row
// unwritten; 2D memsets of unpadded rows (pitch == width) are exact.
void InstallMemset2DPaddedSkipsLastRow() {
  HookMemsetD2D8([](Real_MemsetD2D8 real, CUdeviceptr d, size_t pitch, unsigned char v, size_t w,
                    size_t h) -> CUresult {
    return real(d, pitch, v, w, pitch > w && h > 1 ? h - 1 : h);
  });
  HookMemsetD2D8Async([](Real_MemsetD2D8Async real, CUdeviceptr d, size_t pitch, unsigned char v,
                         size_t w, size_t h, CUstream st) -> CUresult {
    return real(d, pitch, v, w, pitch > w && h > 1 ? h - 1 : h, st);
  });
}

// R120: a byte memset (sync or async) at least 16 bytes long whose destination is not 8-byte
// aligned leaves its first byte unwritten (the head loop before the first aligned word of the
// vectorised fill starts one byte late); aligned destinations and shorter memsets are exact.
bool HeadSkipped(CUdeviceptr d, size_t n) { return d % 8 && n >= 16; }
void InstallMemsetUnalignedHeadUnwritten() {
  HookMemsetD8([](Real_MemsetD8 real, CUdeviceptr d, unsigned char v, size_t n) -> CUresult {
    return HeadSkipped(d, n) ? real(d + 1, v, n - 1) : real(d, v, n);
  });
  HookMemsetD8Async([](Real_MemsetD8Async real, CUdeviceptr d, unsigned char v, size_t n,
                       CUstream st) -> CUresult {
    return HeadSkipped(d, n) ? real(d + 1, v, n - 1, st) : real(d, v, n, st);
  });
}

// R112: a copy between the device and pageable host memory (sync or async) of more than 1 MiB,
// one staging chunk, delivers a wrong first byte of the second chunk (offset 1 MiB): the chunk
// loop's second descriptor is built wrongly. Copies of 1 MiB or less, and copies with
// page-locked memory, are exact.
constexpr size_t kStagingChunk = kMiB;
bool IsPageable(const void* p) { return !IsPinnedHost(p); }
// Whether a unified copy runs between the device and pageable host memory.
bool PageableCopy(CUdeviceptr d, CUdeviceptr s) {
  return (IsHtoD(d, s) && IsPageable(reinterpret_cast<void*>(s))) ||
         (IsDtoH(d, s) && IsPageable(reinterpret_cast<void*>(d)));
}
void InstallPageableCopySecondChunkCorrupts() {
  constexpr size_t k = kStagingChunk;
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    const bool hit = n > k && IsPageable(s);
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && hit) CorruptByteAt(d, Ptr(s), k);
    return r;
  });
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = n > k && IsPageable(d);
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && hit) static_cast<unsigned char*>(d)[k] ^= 0xff;
    return r;
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = n > k && PageableCopy(d, s);
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && hit) CorruptByteAt(d, s, k);
    return r;
  });
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    const bool hit = n > k && IsPageable(s);
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && hit) CorruptByteAtAsync(d, Ptr(s), k, st);
    return r;
  });
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    const bool hit = n > k && IsPageable(d);
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && hit) CorruptByteAtAsync(Ptr(d), s, k, st);
    return r;
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const bool hit = n > k && PageableCopy(d, s);
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && hit) CorruptByteAtAsync(d, s, k, st);
    return r;
  });
}

// ---------------------------------------------------------------------------------------------
// Variant-dependent faults: one entry point, stream kind or memory kind goes wrong.

// Where byte (x, y) of one side of a 2D copy lies, as an address cuMemcpy takes (0: an array).
CUdeviceptr Side2D(CUmemorytype t, const void* host, CUdeviceptr dev, size_t x, size_t y,
                   size_t pitch) {
  if (t == CU_MEMORYTYPE_HOST) return Ptr(host) + y * pitch + x;
  if (t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED) return dev + y * pitch + x;
  return 0;
}
CUdeviceptr LastDst2D(const CUDA_MEMCPY2D* c) {
  return Side2D(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes + c->WidthInBytes - 1,
                c->dstY + c->Height - 1, c->dstPitch);
}
CUdeviceptr LastSrc2D(const CUDA_MEMCPY2D* c) {
  return Side2D(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes + c->WidthInBytes - 1,
                c->srcY + c->Height - 1, c->srcPitch);
}
// A 2D copy with padded rows on a linear side (pitch larger than the width copied).
bool Padded2D(const CUDA_MEMCPY2D* c) {
  return c && c->WidthInBytes && c->Height &&
         ((c->srcMemoryType != CU_MEMORYTYPE_ARRAY && c->srcPitch > c->WidthInBytes) ||
          (c->dstMemoryType != CU_MEMORYTYPE_ARRAY && c->dstPitch > c->WidthInBytes));
}
CUresult Copy2DCorrupted(Real_Memcpy2D real, const CUDA_MEMCPY2D* c) {
  CUresult r = real(c);
  if (r == CUDA_SUCCESS && Padded2D(c) && LastDst2D(c) && LastSrc2D(c))
    CorruptByteAt(LastDst2D(c), LastSrc2D(c), 0);
  return r;
}

// S01: a 2D copy with padded rows (pitch > width, the layout cudaMallocPitch gives) delivers a
// wrong last byte of its last row, synchronous or asynchronous; unpadded 2D copies are exact.
void InstallCopy2DPaddedCorrupts() {
  HookMemcpy2D(&Copy2DCorrupted);
  HookMemcpy2DUnaligned(&Copy2DCorrupted);
  HookMemcpy2DAsync([](Real_Memcpy2DAsync real, const CUDA_MEMCPY2D* c, CUstream st) -> CUresult {
    CUresult r = real(c, st);
    if (r == CUDA_SUCCESS && Padded2D(c) && LastDst2D(c) && LastSrc2D(c))
      CorruptByteAtAsync(LastDst2D(c), LastSrc2D(c), 0, st);
    return r;
  });
}

// S01: an asynchronous 2D copy with padded rows copies one row too few (the synchronous form is
// exact).
void InstallCopy2DAsyncPaddedLosesLastRow() {
  HookMemcpy2DAsync([](Real_Memcpy2DAsync real, const CUDA_MEMCPY2D* c, CUstream st) -> CUresult {
    if (!Padded2D(c) || c->Height < 2) return real(c, st);
    CUDA_MEMCPY2D shorter = *c;
    shorter.Height -= 1;
    return real(&shorter, st);
  });
}

// R90: a 3D copy of more than one slice copies one slice too few (sync and async).
void InstallCopy3DLastSliceLost() {
  HookMemcpy3D([](Real_Memcpy3D real, const CUDA_MEMCPY3D* c) -> CUresult {
    if (!c || c->Depth < 2) return real(c);
    CUDA_MEMCPY3D fewer = *c;
    fewer.Depth -= 1;
    return real(&fewer);
  });
  HookMemcpy3DAsync([](Real_Memcpy3DAsync real, const CUDA_MEMCPY3D* c, CUstream st) -> CUresult {
    if (!c || c->Depth < 2) return real(c, st);
    CUDA_MEMCPY3D fewer = *c;
    fewer.Depth -= 1;
    return real(&fewer, st);
  });
}

// R90: a 3D copy with a source position other than the origin reads from the origin (srcPos
// ignored); copies from the origin are exact.
void InstallCopy3DSourcePositionIgnored() {
  HookMemcpy3D([](Real_Memcpy3D real, const CUDA_MEMCPY3D* c) -> CUresult {
    if (!c || !(c->srcXInBytes || c->srcY || c->srcZ)) return real(c);
    CUDA_MEMCPY3D origin = *c;
    origin.srcXInBytes = origin.srcY = origin.srcZ = 0;
    return real(&origin);
  });
  HookMemcpy3DAsync([](Real_Memcpy3DAsync real, const CUDA_MEMCPY3D* c, CUstream st) -> CUresult {
    if (!c || !(c->srcXInBytes || c->srcY || c->srcZ)) return real(c, st);
    CUDA_MEMCPY3D origin = *c;
    origin.srcXInBytes = origin.srcY = origin.srcZ = 0;
    return real(&origin, st);
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

// S03: cuStreamSynchronize of the per-thread default stream returns without waiting; other
// streams are waited for.
void InstallPerThreadStreamSyncReturnsEarly() {
  HookStreamSynchronize([](Real_StreamSynchronize real, CUstream s) -> CUresult {
    return OnPerThreadStream(real, s, "cuStreamSynchronize") ? CUDA_SUCCESS : real(s);
  });
}

// S06: cuStreamQuery of a non-blocking stream (CU_STREAM_NON_BLOCKING) reports idle while work
// is pending; blocking streams and the default streams answer truthfully.
void InstallNonBlockingStreamQueryLies() {
  HookStreamQuery([](Real_StreamQuery real, CUstream s) -> CUresult {
    return IsNonBlocking(s) ? CUDA_SUCCESS : real(s);
  });
}

// S06: an event recorded on a non-blocking stream is recorded at once (on an idle stream), not
// behind the stream's work; records on other streams are in stream order.
void InstallNonBlockingEventRecordEarly() {
  HookEventRecord([](Real_EventRecord real, CUevent e, CUstream s) -> CUresult {
    return real(e, IsNonBlocking(s) && SideStream() ? SideStream() : s);
  });
  HookEventRecordWithFlags([](Real_EventRecordWithFlags real, CUevent e, CUstream s,
                              unsigned f) -> CUresult {
    return real(e, IsNonBlocking(s) && SideStream() ? SideStream() : s, f);
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

// S01: synchronous copies whose host side is registered memory (cuMemHostRegister, not
// cuMemHostAlloc) deliver a wrong last byte; allocated pinned and pageable memory are exact.
void InstallRegisteredCopyCorrupts() {
  TrackRegistrations();
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && n && IsRegistered(s)) CorruptByteAt(d, Ptr(s), n - 1);
    return r;
  });
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && n && IsRegistered(d)) static_cast<unsigned char*>(d)[n - 1] ^= 0xff;
    return r;
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = n && (IsRegistered(HostView(d)) || IsRegistered(HostView(s)));
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && hit) CorruptByteAt(d, s, n - 1);
    return r;
  });
}

// Whether host memory is a write-combined cuMemHostAlloc block.
bool IsWriteCombined(const void* p) {
  unsigned f = 0;
  return HostAllocFlags(p, &f) && (f & CU_MEMHOSTALLOC_WRITECOMBINED);
}

// S01/R16: copies from write-combined memory (sync and async host-to-device) deliver a wrong last
// byte; cached pinned memory is exact.
void InstallWriteCombinedHtodCorrupts() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && n && IsWriteCombined(s)) CorruptByteAt(d, Ptr(s), n - 1);
    return r;
  });
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && n && IsWriteCombined(s)) CorruptByteAtAsync(d, Ptr(s), n - 1, st);
    return r;
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = n && IsHtoD(d, s) && IsWriteCombined(HostView(s));
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && hit) CorruptByteAt(d, s, n - 1);
    return r;
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const bool hit = n && IsHtoD(d, s) && IsWriteCombined(HostView(s));
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && hit) CorruptByteAtAsync(d, s, n - 1, st);
    return r;
  });
}

// R15: the device pointer of a write-combined allocation is one page past its alias (other
// allocations get the right one).
void InstallWriteCombinedDevicePointerOffByPage() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    if (r == CUDA_SUCCESS && d && IsWriteCombined(p)) *d += kPage;
    return r;
  });
}

// S01: an asynchronous host-to-host copy (cuMemcpyAsync between two host buffers) delivers a
// wrong last byte; copies that involve the device are exact.
void InstallAsyncHostToHostCorrupts() {
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const bool hit = n && !IsDevice(d) && !IsDevice(s);
    CUresult r = real(d, s, n, st);
    if (r == CUDA_SUCCESS && hit) FlipHostByteInStream(HostView(d + n - 1), st);
    return r;
  });
}

// S01: an asynchronous device-to-device copy (through the device aliases of pinned memory, too)
// stops one byte short; the synchronous form is exact.
void InstallDtodAsyncTruncated() {
  HookMemcpyDtoDAsync([](Real_MemcpyDtoDAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult { return real(d, s, n ? n - 1 : 0, st); });
}

// R110: the device pointer of a registration whose start is not page-aligned is short by the
// start's offset into its page (the alias is computed from the first pinned page and the
// start's in-page offset is forgotten): it points before the range, on its first page, so
// device writes through it land on the bytes just before the range and miss its last ones.
// Page-aligned registrations and allocated memory are right.
void InstallRegisteredUnalignedDevicePointerShifted() {
  TrackRegistrations();
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    Block b;
    if (r == CUDA_SUCCESS && d && FindBlock(p, kTagRegistered, &b) && b.start % kPage)
      *d -= b.start % kPage;
    return r;
  });
}

// R121: cuMemsetD16Async writes each 16-bit value with its two bytes swapped (the asynchronous
// path builds its fill pattern in the wrong byte order); cuMemsetD16, and values whose two
// bytes are equal, are right.
void InstallMemsetD16AsyncBytesSwapped() {
  HookMemsetD16Async([](Real_MemsetD16Async real, CUdeviceptr d, unsigned short v, size_t n,
                        CUstream st) -> CUresult {
    return real(d, static_cast<unsigned short>(v >> 8 | v << 8), n, st);
  });
}

// R08: cuMemHostAlloc with all three flags (Portable | DeviceMap | WriteCombined) drops
// WriteCombined (one wrong row in a table indexed by the flag combination): the block is cached
// and its flags lack the bit. The other seven combinations are right.
void InstallHostAllocAllFlagsDropsWriteCombined() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    constexpr unsigned kWc = CU_MEMHOSTALLOC_WRITECOMBINED;
    constexpr unsigned kAll = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | kWc;
    return real(p, n, f == kAll ? f & ~kWc : f);
  });
}

// ---------------------------------------------------------------------------------------------
// Stateful faults: the first calls work; a count, a reused address or a reset breaks a later one.

unsigned g_calls = 0;  // the one counter of the active fault (one fault per process)

// S01: every 16th synchronous host-to-device copy of the process delivers a wrong last byte (a
// ring of 16 staging buffers, one of them bad).
void InstallEvery16thHtodCorrupts() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && n && EveryNth(&g_calls, 16)) CorruptByteAt(d, Ptr(s), n - 1);
    return r;
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = n && IsHtoD(d, s) && EveryNth(&g_calls, 16);
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && hit) CorruptByteAt(d, s, n - 1);
    return r;
  });
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

// R77: every 32nd kernel launch of the process is acknowledged but never runs.
void InstallEvery32ndLaunchDropped() {
  HookLaunchKernel([](Real_LaunchKernel real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream st, void** p,
                      void** e) -> CUresult {
    if (EveryNth(&g_calls, 32)) return CUDA_SUCCESS;
    return real(f, gx, gy, gz, bx, by, bz, sh, st, p, e);
  });
  HookLaunchKernelEx([](Real_LaunchKernelEx real, const CUlaunchConfig* c, CUfunction f, void** p,
                        void** e) -> CUresult {
    return EveryNth(&g_calls, 32) ? CUDA_SUCCESS : real(c, f, p, e);
  });
}

// R19: every 4th cuMemFreeHost reports success but keeps the block pinned (a leak that a single
// allocate-and-free never shows).
void InstallEvery4thFreeHostLeaks() {
  HookMemFreeHost([](Real_MemFreeHost real, void* p) -> CUresult {
    return p && EveryNth(&g_calls, 4) ? CUDA_SUCCESS : real(p);
  });
}

// S06: every 3rd cuEventQuery reports complete while the event's work is pending.
void InstallEvery3rdEventQueryLies() {
  HookEventQuery([](Real_EventQuery real, CUevent e) -> CUresult {
    return EveryNth(&g_calls, 3) ? CUDA_SUCCESS : real(e);
  });
}

// R56: a pinned block allocated at the address of a freed one reports the freed block's flags
// (a stale lookup entry keyed by address); a first allocation at an address is right.
void InstallReusedAddressKeepsOldFlags() {
  TrackAllocations();
  HookMemHostGetFlags([](Real_MemHostGetFlags real, unsigned* f, void* p) -> CUresult {
    CUresult r = real(f, p);
    Block old;
    if (r == CUDA_SUCCESS && f && FindDeadAt(p, &old) && old.tag == kTagHostAlloc)
      *f = old.flags | CU_MEMHOSTALLOC_DEVICEMAP;
    return r;
  });
}

// C11: CU_POINTER_ATTRIBUTE_BUFFER_ID of an allocation at a freed one's address repeats the
// freed one's id (the id is derived from the address).
void FirstBufferIdAtStart(CUdeviceptr p, unsigned long long* id) {
  static const auto attr = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  CUdeviceptr start = 0;
  if (attr && attr(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) == CUDA_SUCCESS && start)
    *id = static_cast<unsigned long long>(FirstAnswer(start, static_cast<long long>(*id)));
}
void InstallReusedAddressRepeatsBufferId() {
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_BUFFER_ID)
      FirstBufferIdAtStart(p, static_cast<unsigned long long*>(v));
    return r;
  });
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    CUresult r = real(n, a, d, p);
    if (r == CUDA_SUCCESS && a && d)
      for (unsigned i = 0; i < n; ++i)
        if (d[i] && a[i] == CU_POINTER_ATTRIBUTE_BUFFER_ID)
          FirstBufferIdAtStart(p, static_cast<unsigned long long*>(d[i]));
    return r;
  });
}

// R94: cuMemGetAddressRange of a block at a freed one's address reports the freed block's size
// (the first size seen at that base); a first block at an address is right.
void InstallReusedAddressStaleRangeSize() {
  HookMemGetAddressRange([](Real_MemGetAddressRange real, CUdeviceptr* base, size_t* size,
                            CUdeviceptr p) -> CUresult {
    CUdeviceptr b = 0;
    size_t s = 0;
    CUresult r = real(&b, &s, p);
    if (r == CUDA_SUCCESS && b) s = static_cast<size_t>(FirstAnswer(b, static_cast<long long>(s)));
    if (base) *base = b;
    if (size) *size = s;
    return r;
  });
}

// R13: after cuDevicePrimaryCtxReset (cudaDeviceReset), the registrations the reset released are
// still in the driver's table: registering any byte of one again fails with
// HOST_MEMORY_ALREADY_REGISTERED.
void InstallRegistrationsSurviveReset() {
  TrackRegistrations();
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    const uintptr_t s = reinterpret_cast<uintptr_t>(p);
    bool stale = false;
    pthread_mutex_lock(&g_blocks_mu);
    for (const Block& x : g_blocks)
      stale = stale || (x.start != x.end && !x.live && x.id == 1 && s < x.end && x.start < s + n);
    pthread_mutex_unlock(&g_blocks_mu);
    if (p && n && stale) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    return TrackRegister(real, p, n, f);
  });
  HookDevicePrimaryCtxReset([](Real_DevicePrimaryCtxReset real, CUdevice d) -> CUresult {
    CUresult r = real(d);
    if (r != CUDA_SUCCESS) return r;
    pthread_mutex_lock(&g_blocks_mu);
    for (Block& x : g_blocks)
      if (x.start != x.end && x.live && x.tag == kTagRegistered) {
        x.live = false;
        x.id = 1;  // released by the reset, not unregistered
      }
    pthread_mutex_unlock(&g_blocks_mu);
    return r;
  });
}

// M04: after cuDevicePrimaryCtxReset (cudaDeviceReset), cuMemHostAlloc ignores the Portable and
// WriteCombined flags (the fresh context lost its allocation defaults): allocations before the
// reset are right, later ones cached and flagged 0.
bool g_after_reset = false;
void InstallHostAllocAfterResetDropsFlags() {
  HookDevicePrimaryCtxReset([](Real_DevicePrimaryCtxReset real, CUdevice d) -> CUresult {
    CUresult r = real(d);
    if (r == CUDA_SUCCESS) __atomic_store_n(&g_after_reset, true, __ATOMIC_RELAXED);
    return r;
  });
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    const unsigned kept = f & ~static_cast<unsigned>(CU_MEMHOSTALLOC_PORTABLE |
                                                     CU_MEMHOSTALLOC_WRITECOMBINED);
    return real(p, n, __atomic_load_n(&g_after_reset, __ATOMIC_RELAXED) ? kept : f);
  });
}

// R26: from the 33rd successful registration of the process on, cuMemHostRegister reports
// success but pins nothing (a fixed-size registration table that overflows silently).
void InstallRegistrationsPast32Lost() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    if (p && n && __atomic_load_n(&g_calls, __ATOMIC_RELAXED) >= 32) return CUDA_SUCCESS;
    CUresult r = real(p, n, f);
    if (r == CUDA_SUCCESS) __atomic_add_fetch(&g_calls, 1u, __ATOMIC_RELAXED);
    return r;
  });
}

// R33: unregistering a range also drops every live registration that shares a page with it (the
// per-page pin record of the shared page is released with the first range on it, and its other
// owner with it): that neighbour is no longer registered, and its own cuMemHostUnregister then
// fails with HOST_MEMORY_NOT_REGISTERED. Registrations that share no page are unaffected.
bool SharePage(const Block& a, const Block& b) {
  return a.start / kPage <= (b.end - 1) / kPage && b.start / kPage <= (a.end - 1) / kPage;
}
void InstallUnregisterDropsPageSharingNeighbour() {
  TrackRegistrations();
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    Block gone;
    const bool known =
        FindBlock(p, kTagRegistered, &gone) && gone.start == reinterpret_cast<uintptr_t>(p);
    CUresult r = TrackUnregister(real, p);
    if (r != CUDA_SUCCESS || !known) return r;
    uintptr_t neighbours[8];
    size_t count = 0;
    pthread_mutex_lock(&g_blocks_mu);
    for (const Block& b : g_blocks)
      if (count < 8 && b.start != b.end && b.live && b.tag == kTagRegistered && SharePage(gone, b))
        neighbours[count++] = b.start;
    pthread_mutex_unlock(&g_blocks_mu);
    for (size_t i = 0; i < count; ++i)
      TrackUnregister(real, reinterpret_cast<void*>(neighbours[i]));
    return r;
  });
}

// Whether an address was seen before (remembering it when not; a fixed table: when it is full,
// new addresses are never "seen before").
bool SeenBefore(uintptr_t key) {
  static uintptr_t seen[4096];
  bool found = false;
  pthread_mutex_lock(&g_blocks_mu);
  for (uintptr_t& s : seen) {
    if (s == key) {
      found = true;
      break;
    }
    if (!s) {
      s = key;
      break;
    }
  }
  pthread_mutex_unlock(&g_blocks_mu);
  return found;
}

// R53: a repeated cuMemHostGetDevicePointer of the same interior pointer adds its offset from
// the start of its allocation a second time (the cached alias already holds the offset): the
// first query of each pointer, and every query of an allocation's start, are right.
void InstallDevicePointerRequeryOffsetDoubled() {
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    if (r != CUDA_SUCCESS || !d) return r;
    const CUdeviceptr start = RangeStart(p);
    if (start && Ptr(p) > start && SeenBefore(Ptr(p))) *d += Ptr(p) - start;
    return r;
  });
}

// ---------------------------------------------------------------------------------------------
// Timing faults: completion is reported before the bytes are where they belong.

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
CUcontext CurrentContext() {
  static const auto get = Real<CUresult(CUDAAPI*)(CUcontext*)>("cuCtxGetCurrent");
  CUcontext c = nullptr;
  return get && get(&c) == CUDA_SUCCESS ? c : nullptr;
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

// S03: cuEventSynchronize gives up after about 2 ms and reports success (a wait with a timeout
// whose expiry is taken for completion); short work is waited for correctly.
void InstallEventSyncTimesOut() {
  HookEventSynchronize([](Real_EventSynchronize real, CUevent e) -> CUresult {
    static const auto query = Real<Real_EventQuery>("cuEventQuery");
    if (!query) return real(e);
    for (int i = 0; i < 20; ++i) {
      CUresult r = query(e);
      if (r != CUDA_ERROR_NOT_READY) return r;
      usleep(100);
    }
    return CUDA_SUCCESS;
  });
}

// S03: cuStreamSynchronize gives up after about 2 ms and reports success.
void InstallStreamSyncTimesOut() {
  HookStreamSynchronize([](Real_StreamSynchronize real, CUstream s) -> CUresult {
    static const auto query = Real<Real_StreamQuery>("cuStreamQuery");
    if (!query) return real(s);
    for (int i = 0; i < 20; ++i) {
      CUresult r = query(s);
      if (r != CUDA_ERROR_NOT_READY) return r;
      usleep(100);
    }
    return CUDA_SUCCESS;
  });
}

// S03: a host function (cuLaunchHostFunc, cudaLaunchHostFunc) runs at once, before the work
// queued ahead of it on its stream has completed.
void InstallHostFuncRunsEarly() {
  HookLaunchHostFunc([](Real_LaunchHostFunc real, CUstream s, CUhostFn fn, void* data) -> CUresult {
    return real(SideStream() ? SideStream() : s, fn, data);
  });
}

// P03: intervals of 1 ms or more are reported 3x too long (short ones are right): the latency
// of small copies looks fine, the bandwidth of large ones a third of what it is.
void InstallElapsedTimeLongIntervalsTripled() {
  HookEventElapsedTime([](Real_EventElapsedTime real, float* ms, CUevent a, CUevent b) -> CUresult {
    CUresult r = real(ms, a, b);
    if (r == CUDA_SUCCESS && ms && *ms >= 1.0f) *ms *= 3.0f;
    return r;
  });
}

// P03: elapsed times are reported half as long as they were (bandwidth twice what the link can
// carry).
void InstallElapsedTimeHalved() {
  HookEventElapsedTime([](Real_EventElapsedTime real, float* ms, CUevent a, CUevent b) -> CUresult {
    CUresult r = real(ms, a, b);
    if (r == CUDA_SUCCESS && ms) *ms *= 0.5f;
    return r;
  });
}

// S04: cuStreamWaitEvent on an event whose work is still pending holds the waiting stream for
// about 2 ms instead of until the event completes (a bounded device-side wait whose timeout is
// taken for the event): waits on short work are right, a stream waiting for longer work runs
// ahead of it. Waits on streams being captured are left alone (they are graph edges).
void CUDA_CB PauseTwoMs(void*) { usleep(2000); }
void InstallStreamWaitEventGivesUpAfter2ms() {
  HookStreamWaitEvent([](Real_StreamWaitEvent real, CUstream s, CUevent e, unsigned f) -> CUresult {
    static const auto query = Real<Real_EventQuery>("cuEventQuery");
    static const auto capturing =
        Real<CUresult(CUDAAPI*)(CUstream, CUstreamCaptureStatus*)>("cuStreamIsCapturing");
    static const auto host_fn = Real<Real_LaunchHostFunc>("cuLaunchHostFunc");
    // The shim's real functions take the legacy null stream: name the per-thread one.
    const CUstream target =
        OnPerThreadStream(real, s, "cuStreamWaitEvent") ? CU_STREAM_PER_THREAD : s;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (!query || !capturing || !host_fn || capturing(target, &status) != CUDA_SUCCESS ||
        status != CU_STREAM_CAPTURE_STATUS_NONE || query(e) != CUDA_ERROR_NOT_READY)
      return real(s, e, f);
    return host_fn(target, &PauseTwoMs, nullptr) == CUDA_SUCCESS ? CUDA_SUCCESS : real(s, e, f);
  });
}

// S03: a host function queued on a stream that has had an asynchronous memset since its last
// host function runs at once, not in stream order (memsets run on another engine and the host
// function's dependency is taken from the stream's last copy or kernel only): its callback runs
// before the memset, and the work ahead of it, are done. Host functions on streams with no
// memset since the last one are right.
thread_local bool t_memset_on_per_thread = false;  // the per-thread stream is one per thread
CUstream g_memset_streams[256];  // other streams (the legacy one as CU_STREAM_LEGACY) with one
pthread_mutex_t g_memset_mu = PTHREAD_MUTEX_INITIALIZER;
// The stream a call is on, with the null stream named as the legacy or the per-thread one.
template <typename R>
CUstream StreamKey(R real, CUstream s, const char* name) {
  if (s && s != CU_STREAM_LEGACY) return s;
  return OnPerThreadStream(real, s, name) ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
}
// Notes a memset on a stream (note) or takes the note (!note); returns whether one was noted.
bool MemsetNoted(CUstream key, bool note) {
  if (key == CU_STREAM_PER_THREAD) {
    const bool was = t_memset_on_per_thread;
    t_memset_on_per_thread = note;
    return was;
  }
  bool was = false;
  pthread_mutex_lock(&g_memset_mu);
  for (CUstream& x : g_memset_streams)
    if (x == key) {
      was = true;
      if (!note) x = nullptr;
      break;
    }
  if (note && !was)
    for (CUstream& x : g_memset_streams)
      if (!x) {
        x = key;
        break;
      }
  pthread_mutex_unlock(&g_memset_mu);
  return was;
}
void InstallHostFuncAfterMemsetRunsEarly() {
  HookMemsetD8Async([](Real_MemsetD8Async real, CUdeviceptr d, unsigned char v, size_t n,
                       CUstream st) -> CUresult {
    CUresult r = real(d, v, n, st);
    if (r == CUDA_SUCCESS) MemsetNoted(StreamKey(real, st, "cuMemsetD8Async"), true);
    return r;
  });
  HookMemsetD16Async([](Real_MemsetD16Async real, CUdeviceptr d, unsigned short v, size_t n,
                        CUstream st) -> CUresult {
    CUresult r = real(d, v, n, st);
    if (r == CUDA_SUCCESS) MemsetNoted(StreamKey(real, st, "cuMemsetD16Async"), true);
    return r;
  });
  HookMemsetD32Async([](Real_MemsetD32Async real, CUdeviceptr d, unsigned v, size_t n,
                        CUstream st) -> CUresult {
    CUresult r = real(d, v, n, st);
    if (r == CUDA_SUCCESS) MemsetNoted(StreamKey(real, st, "cuMemsetD32Async"), true);
    return r;
  });
  HookMemsetD2D8Async([](Real_MemsetD2D8Async real, CUdeviceptr d, size_t pitch, unsigned char v,
                         size_t w, size_t h, CUstream st) -> CUresult {
    CUresult r = real(d, pitch, v, w, h, st);
    if (r == CUDA_SUCCESS) MemsetNoted(StreamKey(real, st, "cuMemsetD2D8Async"), true);
    return r;
  });
  HookLaunchHostFunc([](Real_LaunchHostFunc real, CUstream s, CUhostFn fn, void* data) -> CUresult {
    // On the shim's idle stream it runs at once; where that stream cannot take it (another
    // context's), it stays in order rather than never running.
    if (MemsetNoted(StreamKey(real, s, "cuLaunchHostFunc"), false) && SideStream() &&
        real(SideStream(), fn, data) == CUDA_SUCCESS)
      return CUDA_SUCCESS;
    return real(s, fn, data);
  });
}

// ---------------------------------------------------------------------------------------------
// Cross-API faults: two ways of asking one question get different answers.

// R96: cuPointerGetAttributes (what cudaPointerGetAttributes uses) reports the device pointer of
// page-locked memory one page off; cuPointerGetAttribute and cuMemHostGetDevicePointer are right.
void InstallAttributesDevicePointerDisagrees() {
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    CUresult r = real(n, a, d, p);
    if (r == CUDA_SUCCESS && a && d && IsPinnedHost(reinterpret_cast<void*>(p)))
      for (unsigned i = 0; i < n; ++i)
        if (d[i] && a[i] == CU_POINTER_ATTRIBUTE_DEVICE_POINTER && *static_cast<CUdeviceptr*>(d[i]))
          *static_cast<CUdeviceptr*>(d[i]) += kPage;
    return r;
  });
}

// R72: cuPointerGetAttribute's DEVICE_POINTER of an interior byte of page-locked memory is the
// alias of the block's start (offset dropped); cuPointerGetAttributes and
// cuMemHostGetDevicePointer answer base plus offset.
void InstallAttributeDevicePointerIgnoresOffset() {
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r != CUDA_SUCCESS || !v || a != CU_POINTER_ATTRIBUTE_DEVICE_POINTER ||
        !IsPinnedHost(reinterpret_cast<void*>(p)))
      return r;
    CUdeviceptr start = RangeStart(reinterpret_cast<void*>(p)), alias = 0;
    if (start && start != p && real(&alias, a, start) == CUDA_SUCCESS)
      *static_cast<CUdeviceptr*>(v) = alias;
    return r;
  });
}

// R94: cuMemGetAddressRange of an interior pointer names the pointer itself as the base (and the
// rest of the block as the size); RANGE_START_ADDR and queries of the base are right.
void InstallAddressRangeInteriorBaseWrong() {
  HookMemGetAddressRange([](Real_MemGetAddressRange real, CUdeviceptr* base, size_t* size,
                            CUdeviceptr p) -> CUresult {
    CUdeviceptr b = 0;
    size_t s = 0;
    CUresult r = real(&b, &s, p);
    if (r == CUDA_SUCCESS && b && p > b && p < b + s) {
      s -= static_cast<size_t>(p - b);
      b = p;
    }
    if (base) *base = b;
    if (size) *size = s;
    return r;
  });
}

// R95: CU_POINTER_ATTRIBUTE_RANGE_SIZE of page-locked host memory is one byte short
// (cuMemGetAddressRange reports the right size).
void InstallRangeSizeAttributeShort() {
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_RANGE_SIZE &&
        *static_cast<size_t*>(v) > 1 && IsPinnedHost(reinterpret_cast<void*>(p)))
      *static_cast<size_t*>(v) -= 1;
    return r;
  });
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    CUresult r = real(n, a, d, p);
    if (r == CUDA_SUCCESS && a && d && IsPinnedHost(reinterpret_cast<void*>(p)))
      for (unsigned i = 0; i < n; ++i)
        if (d[i] && a[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE && *static_cast<size_t*>(d[i]) > 1)
          *static_cast<size_t*>(d[i]) -= 1;
    return r;
  });
}

// R56: cuMemHostGetFlags of memory from cuMemAllocHost (not cuMemHostAlloc) reports
// WriteCombined, which that entry point never sets; cuMemHostAlloc blocks are right.
void InstallAllocHostFlagsInventWriteCombined() {
  TrackAllocations();
  HookMemHostGetFlags([](Real_MemHostGetFlags real, unsigned* f, void* p) -> CUresult {
    CUresult r = real(f, p);
    Block b;
    if (r == CUDA_SUCCESS && f && FindBlock(p, kTagAllocHost, &b))
      *f |= CU_MEMHOSTALLOC_WRITECOMBINED;
    return r;
  });
}

// R45: the device reports CanUseHostPointerForRegisteredMem = 1, but cuMemHostGetDevicePointer
// of registered memory returns another address (one page further into the registration).
void InstallRegisteredDevicePointerNotHostPointer() {
  TrackRegistrations();
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    Block b;
    if (r == CUDA_SUCCESS && d && FindBlock(p, kTagRegistered, &b) &&
        reinterpret_cast<uintptr_t>(p) + kPage < b.end)
      *d += kPage;
    return r;
  });
}

// R83: PageableMemoryAccess (attribute 88) reported as 1 on a PCIe system where a kernel cannot
// touch pageable memory.
void InstallCapClaimsPageableAccess() {
  HookDeviceGetAttribute(&ForceAttribute<CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 1>);
}

// R51: cuMemHostGetDevicePointer fails with INVALID_VALUE for cuMemHostAlloc blocks allocated
// without DEVICEMAP (the pre-UVA rule) although cuMemHostGetFlags reports them mapped.
void InstallDevicePointerNeedsDeviceMap() {
  TrackAllocations();
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    Block b;
    if (f == 0 && FindBlock(p, kTagHostAlloc, &b) && !(b.flags & CU_MEMHOSTALLOC_DEVICEMAP))
      return CUDA_ERROR_INVALID_VALUE;
    return real(d, p, f);
  });
}

// R150: cuCtxGetFlags leaves out CU_CTX_SYNC_MEMOPS although it is set (the current context's
// cached flags word is refreshed for the scheduling bits only); cuDevicePrimaryCtxGetState
// reports it, and the scheduling bits read back right.
void InstallCtxGetFlagsDropsSyncMemops() {
  HookCtxGetFlags([](Real_CtxGetFlags real, unsigned* f) -> CUresult {
    CUresult r = real(f);
    if (r == CUDA_SUCCESS && f) *f &= ~static_cast<unsigned>(CU_CTX_SYNC_MEMOPS);
    return r;
  });
}

// R72: the pointer attributes of registered memory say CU_POINTER_ATTRIBUTE_IS_MANAGED = 1
// while MEMORY_TYPE says host (cudaPointerGetAttributes then answers cudaMemoryTypeManaged);
// allocated pinned memory answers 0.
void SetTrue(void* v) { *static_cast<unsigned char*>(v) = 1; }  // a boolean the driver zeroed
void InstallRegisteredReportedManaged() {
  TrackRegistrations();
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    CUresult r = real(v, a, p);
    if (r == CUDA_SUCCESS && v && a == CU_POINTER_ATTRIBUTE_IS_MANAGED &&
        IsRegistered(reinterpret_cast<void*>(p)))
      SetTrue(v);
    return r;
  });
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    CUresult r = real(n, a, d, p);
    if (r == CUDA_SUCCESS && a && d && IsRegistered(reinterpret_cast<void*>(p)))
      for (unsigned i = 0; i < n; ++i)
        if (d[i] && a[i] == CU_POINTER_ATTRIBUTE_IS_MANAGED) SetTrue(d[i]);
    return r;
  });
}

// R42: cuMemHostRegister refuses the ReadOnly flag with NOT_SUPPORTED although the device
// reports HostRegisterReadOnlySupported = 1 (the support check reads another capability than
// the attribute does); registrations without ReadOnly, and undefined flag bits, are answered
// as before.
void InstallReadOnlyRegisterRefusedDespiteAttribute() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    constexpr unsigned kKnown = 0xfu;  // PORTABLE|DEVICEMAP|IOMEMORY|READ_ONLY
    if (p && n && (f & CU_MEMHOSTREGISTER_READ_ONLY) && !(f & ~kKnown))
      return CUDA_ERROR_NOT_SUPPORTED;
    return real(p, n, f);
  });
}

// ---------------------------------------------------------------------------------------------
// Batch blind-10 (issue 22, session 10): written from suites/rules.tsv and this folder alone,
// without sight of the tests. Each is listed in kFaults under the section of its shape.

// The stream a real driver function (asked for with default, legacy flags) must be given for
// work the caller queued on `s` through the entry `real`: the per-thread default stream by its
// handle when the caller came through a _ptsz/_ptds entry with the null stream.
template <typename R>
CUstream RealStream(R real, CUstream s, const char* name) {
  return OnPerThreadStream(real, s, name) ? CU_STREAM_PER_THREAD : s;
}

// Whether the stream a call is queued on is being captured into a graph.
template <typename R>
bool BeingCaptured(R real, CUstream s, const char* name) {
  static const auto capturing =
      Real<CUresult(CUDAAPI*)(CUstream, CUstreamCaptureStatus*)>("cuStreamIsCapturing");
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return capturing && capturing(RealStream(real, s, name), &status) == CUDA_SUCCESS &&
         status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

// Size: R93. A 32-bit 2D memset (cuMemsetD2D32, sync or async) of two rows or more whose row
// padding is narrower than the row (4 * Width < dstPitch < 8 * Width) is done as one linear fill
// of dstPitch * (Height - 1) + 4 * Width bytes (a "padding too small to skip" shortcut): the
// padding between the rows takes the value. Wider padding, one row, unpadded rows and the 8-bit
// 2D memsets are exact. Done through the real 2D entry, in stream order: full-pitch rows, then
// the last row.
bool NarrowPadding32(size_t pitch, size_t w, size_t h) {
  return h >= 2 && w && pitch % 4 == 0 && 4 * w < pitch && pitch < 8 * w;
}
void InstallMemset2D32NarrowPaddingOverwritten() {
  HookMemsetD2D32([](Real_MemsetD2D32 real, CUdeviceptr d, size_t pitch, unsigned v, size_t w,
                     size_t h) -> CUresult {
    if (!NarrowPadding32(pitch, w, h)) return real(d, pitch, v, w, h);
    CUresult r = real(d, pitch, v, pitch / 4, h - 1);
    return r == CUDA_SUCCESS ? real(d + (h - 1) * pitch, pitch, v, w, 1) : r;
  });
  HookMemsetD2D32Async([](Real_MemsetD2D32Async real, CUdeviceptr d, size_t pitch, unsigned v,
                          size_t w, size_t h, CUstream st) -> CUresult {
    if (!NarrowPadding32(pitch, w, h)) return real(d, pitch, v, w, h, st);
    CUresult r = real(d, pitch, v, pitch / 4, h - 1, st);
    return r == CUDA_SUCCESS ? real(d + (h - 1) * pitch, pitch, v, w, 1, st) : r;
  });
}

// Size and variant: S18. cuMemcpyAsync, the unified entry (cudaMemcpyAsync with
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

// Size: R114. A copy (synchronous or asynchronous, any host-device entry) whose host address
// lies 4 GiB or more into its page-locked block (allocated or registered) uses the offset modulo
// 4 GiB (a 32-bit offset field in the DMA descriptor): the bytes are read from, or written to,
// the same offset 4 GiB (or a multiple) lower in the block. Host addresses in the first 4 GiB
// of a block, pageable memory and device addresses are exact.
constexpr uint64_t k4GiB = uint64_t{1} << 32;
CUdeviceptr HostOffsetWrapped(CUdeviceptr a) {
  static const auto attr = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  unsigned type = 0;
  CUdeviceptr start = 0;
  size_t size = 0;
  if (!attr || attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a) != CUDA_SUCCESS ||
      type != CU_MEMORYTYPE_HOST ||
      attr(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a) != CUDA_SUCCESS ||
      attr(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, a) != CUDA_SUCCESS || a < start ||
      a - start < k4GiB || a - start >= size)
    return a;
  return start + (a - start) % k4GiB;
}
void InstallCopyPast4GiBHostOffsetWraps() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    return real(d, reinterpret_cast<const void*>(n ? HostOffsetWrapped(Ptr(s)) : Ptr(s)), n);
  });
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    return real(reinterpret_cast<void*>(n ? HostOffsetWrapped(Ptr(d)) : Ptr(d)), s, n);
  });
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    return real(d, reinterpret_cast<const void*>(n ? HostOffsetWrapped(Ptr(s)) : Ptr(s)), n, st);
  });
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    return real(reinterpret_cast<void*>(n ? HostOffsetWrapped(Ptr(d)) : Ptr(d)), s, n, st);
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    if (n && IsHtoD(d, s)) return real(d, HostOffsetWrapped(s), n);
    if (n && IsDtoH(d, s)) return real(HostOffsetWrapped(d), s, n);
    return real(d, s, n);
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    if (n && IsHtoD(d, s)) return real(d, HostOffsetWrapped(s), n, st);
    if (n && IsDtoH(d, s)) return real(HostOffsetWrapped(d), s, n, st);
    return real(d, s, n, st);
  });
}

// Variant: R98. cuStreamWaitValue64 with CU_STREAM_WAIT_VALUE_EQ compares the low 32 bits only
// (the 64-bit EQ wait is emitted as a 32-bit semaphore acquire on the word's low half): a wait
// whose low word already matches is released although the high word differs. It is queued as a
// real cuStreamWaitValue32 on the same stream. GEQ, AND and NOR 64-bit waits, the 32-bit waits
// and cuStreamBatchMemOp are exact.
void InstallWaitValue64EqComparesLowWord() {
  HookStreamWaitValue64([](Real_StreamWaitValue64 real, CUstream s, CUdeviceptr addr,
                           cuuint64_t value, unsigned flags) -> CUresult {
    using Wait32 = CUresult(CUDAAPI*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
    static const auto wait32 = Real<Wait32>("cuStreamWaitValue32");
    if ((flags & 0x3u) != CU_STREAM_WAIT_VALUE_EQ || !wait32) return real(s, addr, value, flags);
    return wait32(RealStream(real, s, "cuStreamWaitValue64"), addr,
                  static_cast<cuuint32_t>(value), flags);
  });
}

// Variant: S11. An asynchronous 1D copy queued on a stream that is being captured becomes a
// graph memcpy node one byte short (the node's extent is computed as the last byte's offset):
// every launch of the graph leaves the destination's last byte as it was. The same copies run
// eagerly, outside a capture, are exact.
template <typename R>
size_t CapturedSize(R real, CUstream st, const char* name, size_t n) {
  return n > 1 && BeingCaptured(real, st, name) ? n - 1 : n;
}
void InstallCapturedCopyNodeShort() {
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    return real(d, s, CapturedSize(real, st, "cuMemcpyAsync", n), st);
  });
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    return real(d, s, CapturedSize(real, st, "cuMemcpyHtoDAsync", n), st);
  });
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    return real(d, s, CapturedSize(real, st, "cuMemcpyDtoHAsync", n), st);
  });
  HookMemcpyDtoDAsync([](Real_MemcpyDtoDAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    return real(d, s, CapturedSize(real, st, "cuMemcpyDtoDAsync", n), st);
  });
}

// Pinned blocks with the context that was current when they were made (a fixed table; when it
// is full, new blocks are not tracked and the faults below leave them alone).
struct OwnedBlock {
  uintptr_t start, end;
  unsigned flags;
  int tag;  // kTagRegistered, kTagHostAlloc, kTagAllocHost
  CUcontext ctx;
  bool live;
};
OwnedBlock g_owned[1024];
pthread_mutex_t g_owned_mu = PTHREAD_MUTEX_INITIALIZER;
void AddOwned(const void* p, size_t n, unsigned flags, int tag) {
  const CUcontext ctx = CurrentContext();
  pthread_mutex_lock(&g_owned_mu);
  for (OwnedBlock& b : g_owned)
    if (!b.live) {
      const uintptr_t s = reinterpret_cast<uintptr_t>(p);
      b = {s, s + (n ? n : 1), flags, tag, ctx, true};
      break;
    }
  pthread_mutex_unlock(&g_owned_mu);
}
void DropOwned(const void* p) {
  pthread_mutex_lock(&g_owned_mu);
  for (OwnedBlock& b : g_owned)
    if (b.live && b.start == reinterpret_cast<uintptr_t>(p)) b.live = false;
  pthread_mutex_unlock(&g_owned_mu);
}
bool FindOwned(const void* p, OwnedBlock* out) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  bool found = false;
  pthread_mutex_lock(&g_owned_mu);
  for (const OwnedBlock& b : g_owned)
    if (b.live && a >= b.start && a < b.end) {
      *out = b;
      found = true;
      break;
    }
  pthread_mutex_unlock(&g_owned_mu);
  return found;
}
bool ContextHoldsPins(CUcontext ctx) {
  bool found = false;
  pthread_mutex_lock(&g_owned_mu);
  for (const OwnedBlock& b : g_owned) found = found || (b.live && b.ctx == ctx);
  pthread_mutex_unlock(&g_owned_mu);
  return found;
}
void TrackOwnedAllocations() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    if (r == CUDA_SUCCESS && p && *p) AddOwned(*p, n, f, kTagHostAlloc);
    return r;
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    CUresult r = real(p, n);
    if (r == CUDA_SUCCESS && p && *p) AddOwned(*p, n, 0, kTagAllocHost);
    return r;
  });
  HookMemFreeHost([](Real_MemFreeHost real, void* p) -> CUresult {
    CUresult r = real(p);
    if (r == CUDA_SUCCESS && p) DropOwned(p);
    return r;
  });
}

// Variant: R18. cuMemHostGetDevicePointer of a cuMemHostAlloc block allocated Mapped but not
// Portable fails with INVALID_VALUE while a context other than the allocating one is current
// (the pre-UVA rule that such memory is mapped only into its own context). Portable blocks, any
// block asked about in its own context, cuMemAllocHost memory and registrations are right.
void InstallMappedUnportableDevptrRefusedElsewhere() {
  TrackOwnedAllocations();
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    OwnedBlock b;
    if (f == 0 && FindOwned(p, &b) && b.tag == kTagHostAlloc &&
        (b.flags & CU_MEMHOSTALLOC_DEVICEMAP) && !(b.flags & CU_MEMHOSTALLOC_PORTABLE) && b.ctx &&
        CurrentContext() && CurrentContext() != b.ctx)
      return CUDA_ERROR_INVALID_VALUE;
    return real(d, p, f);
  });
}

// Stateful: R26. Registering a range that starts where an earlier registration of the process
// started, after that one was unregistered, reports success but pins nothing (a stale entry of a
// per-address cache short-circuits the pin): the range stays pageable (pointer attributes do
// not know it, it has no device pointer) and its unregister fails with NOT_REGISTERED. The
// first registration at each address is right.
void InstallReregisteredRangeNotPinned() {
  TrackRegistrations();
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    Block old, live;
    if (p && n && (f & ~0xfu) == 0 && FindDeadAt(p, &old) && old.tag == kTagRegistered &&
        !FindBlock(p, 0, &live))
      return CUDA_SUCCESS;
    return TrackRegister(real, p, n, f);
  });
}

// Stateful: R13. cuCtxDestroy of a context that still holds pinned memory (cuMemHostAlloc,
// cuMemAllocHost or cuMemHostRegister made while it was current, not yet freed or unregistered)
// reports success but leaves the context alive (the pinned blocks hold a reference to it): it
// is popped from the calling thread if current, and its pinned memory stays pinned and known.
// Contexts holding no pinned memory are destroyed.
void InstallCtxDestroyKeepsContextWithPins() {
  TrackOwnedAllocations();
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    if (r == CUDA_SUCCESS && p && n) AddOwned(p, n, f, kTagRegistered);
    return r;
  });
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    CUresult r = real(p);
    if (r == CUDA_SUCCESS && p) DropOwned(p);
    return r;
  });
  HookCtxDestroy([](Real_CtxDestroy real, CUcontext c) -> CUresult {
    static const auto pop = Real<CUresult(CUDAAPI*)(CUcontext*)>("cuCtxPopCurrent");
    if (!c || !pop || !ContextHoldsPins(c)) return real(c);
    CUcontext popped = nullptr;
    if (CurrentContext() == c) pop(&popped);
    return CUDA_SUCCESS;
  });
}

// Stateful: S16. cuEventRecord (and cuEventRecordWithFlags) of an event whose previous record
// has not completed yet is dropped (the event is re-armed only once its last capture has
// signalled): the event keeps its earlier captured state, so a later wait or query follows the
// earlier work, not the re-recorded one. Records of an event whose last record completed, or
// that was never recorded, and records into a stream capture are right.
template <typename R>
bool RecordDropped(R real, CUevent e, CUstream s, const char* name) {
  static const auto query = Real<Real_EventQuery>("cuEventQuery");
  return e && query && !BeingCaptured(real, s, name) && query(e) == CUDA_ERROR_NOT_READY;
}
void InstallEventRerecordWhilePendingDropped() {
  HookEventRecord([](Real_EventRecord real, CUevent e, CUstream s) -> CUresult {
    return RecordDropped(real, e, s, "cuEventRecord") ? CUDA_SUCCESS : real(e, s);
  });
  HookEventRecordWithFlags([](Real_EventRecordWithFlags real, CUevent e, CUstream s,
                              unsigned f) -> CUresult {
    return RecordDropped(real, e, s, "cuEventRecordWithFlags") ? CUDA_SUCCESS : real(e, s, f);
  });
}

// Stateful: R146. After an allocation from a host-located pool that has a maximum size
// (cuMemPoolCreate with a host location and maxSize > 0) fails, for exceeding the maximum or
// otherwise, the pool keeps the failed request's reservation: every later cuMemAllocFromPoolAsync
// from that pool fails with OUT_OF_MEMORY before it reaches the driver. Pools without a maximum,
// device pools and host pools before their first failure are right.
struct HostPool {
  CUmemoryPool pool;
  bool poisoned;
};
HostPool g_host_pools[64];
pthread_mutex_t g_pools_mu = PTHREAD_MUTEX_INITIALIZER;
// The table entry of a tracked pool (nullptr when untracked); the mutex must be held.
HostPool* FindHostPool(CUmemoryPool p) {
  for (HostPool& h : g_host_pools)
    if (p && h.pool == p) return &h;
  return nullptr;
}
void InstallHostPoolPoisonedAfterFailedAlloc() {
  HookMemPoolCreate([](Real_MemPoolCreate real, CUmemoryPool* pool,
                       const CUmemPoolProps* props) -> CUresult {
    CUresult r = real(pool, props);
    const bool host = props && (props->location.type == CU_MEM_LOCATION_TYPE_HOST ||
                                props->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
                                props->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
    if (r != CUDA_SUCCESS || !pool || !*pool || !host || props->maxSize == 0) return r;
    pthread_mutex_lock(&g_pools_mu);
    for (HostPool& h : g_host_pools)
      if (!h.pool || h.pool == *pool) {
        h = {*pool, false};
        break;
      }
    pthread_mutex_unlock(&g_pools_mu);
    return r;
  });
  HookMemAllocFromPoolAsync([](Real_MemAllocFromPoolAsync real, CUdeviceptr* d, size_t n,
                               CUmemoryPool pool, CUstream st) -> CUresult {
    pthread_mutex_lock(&g_pools_mu);
    HostPool* h = FindHostPool(pool);
    const bool poisoned = h && h->poisoned;
    pthread_mutex_unlock(&g_pools_mu);
    if (poisoned) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = real(d, n, pool, st);
    if (r != CUDA_SUCCESS && n) {
      pthread_mutex_lock(&g_pools_mu);
      if (HostPool* x = FindHostPool(pool)) x->poisoned = true;
      pthread_mutex_unlock(&g_pools_mu);
    }
    return r;
  });
}

// Timing: S15. Events recorded on a non-blocking stream (CU_STREAM_NON_BLOCKING) are
// timestamped when the record is submitted (the host's clock at the cuEventRecord call), not
// when the stream reaches them: cuEventElapsedTime between events of which one was last recorded
// on a non-blocking stream reports the host time between the two record calls, about 0 for work
// queued between them. Completion (NOT_READY until both are done) is truthful; events recorded on
// blocking, default and per-thread streams time right.
struct EventStamp {
  CUevent event;
  double host_ms;  // the host's clock at the record call
  bool non_blocking;
};
EventStamp g_stamps[1024];
pthread_mutex_t g_stamps_mu = PTHREAD_MUTEX_INITIALIZER;
double HostMs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
// The fixed tables the faults keep per handle: the entry of `table` whose `field` is `key`, else
// the first free one (a zero field), else nullptr (the table is full). The caller holds its lock.
template <typename T, size_t N, typename K>
T* SlotFor(T (&table)[N], K T::*field, K key) {
  T* free_slot = nullptr;
  for (T& x : table) {
    if (x.*field == key) return &x;
    if (!(x.*field) && !free_slot) free_slot = &x;
  }
  return free_slot;
}
void Stamp(CUevent e, CUstream s) {
  const EventStamp stamp = {e, HostMs(), IsNonBlocking(s)};
  pthread_mutex_lock(&g_stamps_mu);
  EventStamp* slot = SlotFor(g_stamps, &EventStamp::event, e);
  if (slot) *slot = stamp;
  pthread_mutex_unlock(&g_stamps_mu);
}
bool FindStamp(CUevent e, EventStamp* out) {
  bool found = false;
  pthread_mutex_lock(&g_stamps_mu);
  for (const EventStamp& x : g_stamps)
    if (e && x.event == e) {
      *out = x;
      found = true;
      break;
    }
  pthread_mutex_unlock(&g_stamps_mu);
  return found;
}
void InstallNonBlockingElapsedTimeFromSubmission() {
  HookEventRecord([](Real_EventRecord real, CUevent e, CUstream s) -> CUresult {
    CUresult r = real(e, s);
    if (r == CUDA_SUCCESS && e) Stamp(e, s);
    return r;
  });
  HookEventRecordWithFlags([](Real_EventRecordWithFlags real, CUevent e, CUstream s,
                              unsigned f) -> CUresult {
    CUresult r = real(e, s, f);
    if (r == CUDA_SUCCESS && e) Stamp(e, s);
    return r;
  });
  HookEventElapsedTime([](Real_EventElapsedTime real, float* ms, CUevent a, CUevent b) -> CUresult {
    CUresult r = real(ms, a, b);
    EventStamp x, y;
    if (r == CUDA_SUCCESS && ms && FindStamp(a, &x) && FindStamp(b, &y) &&
        (x.non_blocking || y.non_blocking))
      *ms = static_cast<float>(y.host_ms - x.host_ms);
    return r;
  });
}

// Cross-API: R109. On a device whose link has no native host atomics
// (CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED = 0),
// CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED (147) is reported as 1 ("only
// some native atomic operations"), while cuDeviceGetHostAtomicCapabilities, answered by the
// driver, gives no operation a capability. Devices with native host atomics answer as the
// driver does.
void InstallPartialHostAtomicsClaimedWithoutOps() {
  HookDeviceGetAttribute([](Real_DeviceGetAttribute real, int* v, CUdevice_attribute a,
                            CUdevice d) -> CUresult {
    CUresult r = real(v, a, d);
    int native = 1;
    if (r == CUDA_SUCCESS && v &&
        a == CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED &&
        real(&native, CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, d) == CUDA_SUCCESS &&
        native == 0)
      *v = 1;
    return r;
  });
}

// ---------------------------------------------------------------------------------------------
// Batch blind-11 (issue 22, session 11): written from suites/rules.tsv and this folder alone,
// without sight of the tests. Each is listed in kFaults under the section of its shape.

// Size: R122. A 16-bit 2D memset (cuMemsetD2D16, sync or async) any of whose rows crosses a
// 4 KiB page boundary of its address leaves, in each such row, the element that starts the new
// page unwritten (the row is filled one page at a time and the fill of the second page starts
// one element late). When no row crosses a page the call is forwarded as it is; the 8- and
// 32-bit 2D memsets and the 1D memsets are exact. Done through the real 1D entries, a row (or
// the two pieces of one) at a time, in stream order.
// The element of a row of w 16-bit values at `row` that starts a new page (w when none does).
size_t PageStartElement(CUdeviceptr row, size_t w) {
  const size_t k = CrossingOffset(row, 2 * w, kPage);
  return k < 2 * w ? k / 2 : w;
}
bool AnyRowCrossesAPage(CUdeviceptr d, size_t pitch, size_t w, size_t h) {
  if (!w || !h || d % 2 || pitch % 2 || pitch < 2 * w) return false;  // the driver's to reject
  for (size_t y = 0; y < h; ++y)
    if (PageStartElement(d + y * pitch, w) < w) return true;
  return false;
}
// Fills each row with fill(address, count), skipping the element that starts a new page.
template <typename Fill>
CUresult RowsSkippingPageStart(CUdeviceptr d, size_t pitch, size_t w, size_t h, Fill fill) {
  for (size_t y = 0; y < h; ++y) {
    const CUdeviceptr row = d + y * pitch;
    const size_t e = PageStartElement(row, w);
    CUresult r = e ? fill(row, e < w ? e : w) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS && e + 1 < w) r = fill(row + 2 * (e + 1), w - e - 1);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}
void InstallMemset2D16PageCrossingRowSkipsElement() {
  HookMemsetD2D16([](Real_MemsetD2D16 real, CUdeviceptr d, size_t pitch, unsigned short v,
                     size_t w, size_t h) -> CUresult {
    static const auto fill = Real<Real_MemsetD16>("cuMemsetD16");
    if (!fill || !AnyRowCrossesAPage(d, pitch, w, h)) return real(d, pitch, v, w, h);
    return RowsSkippingPageStart(d, pitch, w, h,
                                 [&](CUdeviceptr p, size_t n) { return fill(p, v, n); });
  });
  HookMemsetD2D16Async([](Real_MemsetD2D16Async real, CUdeviceptr d, size_t pitch,
                          unsigned short v, size_t w, size_t h, CUstream st) -> CUresult {
    static const auto fill = Real<Real_MemsetD16Async>("cuMemsetD16Async");
    if (!fill || !AnyRowCrossesAPage(d, pitch, w, h)) return real(d, pitch, v, w, h, st);
    const CUstream s = RealStream(real, st, "cuMemsetD2D16Async");
    return RowsSkippingPageStart(d, pitch, w, h,
                                 [&](CUdeviceptr p, size_t n) { return fill(p, v, n, s); });
  });
}

// Size: R53. cuMemHostGetDevicePointer of a byte 2 MiB or more into a registration
// (cuMemHostRegister) answers the alias of the same offset modulo 2 MiB (the registration is
// mapped in 2 MiB chunks and the interior lookup adds the offset within its chunk to the first
// chunk's alias): device accesses through it land in the registration's first 2 MiB. Bytes in
// a registration's first 2 MiB, and every byte of allocated pinned memory, are right.
constexpr uintptr_t k2MiB = uintptr_t{2} << 20;
void InstallRegisteredDevptrOffsetWrapsAt2MiB() {
  TrackRegistrations();
  HookMemHostGetDevicePointer([](Real_MemHostGetDevicePointer real, CUdeviceptr* d, void* p,
                                 unsigned f) -> CUresult {
    CUresult r = real(d, p, f);
    Block b;
    if (r == CUDA_SUCCESS && d && FindBlock(p, kTagRegistered, &b)) {
      const uintptr_t offset = reinterpret_cast<uintptr_t>(p) - b.start;
      if (offset >= k2MiB) *d -= offset / k2MiB * k2MiB;
    }
    return r;
  });
}

// Variant: R90. A 3D copy (cuMemcpy3D, sync or async) of two slices or more whose host side (a
// host memory type, or a unified address that is not device memory) has padded slices (its
// srcHeight / dstHeight larger than the extent's Height) and starts at row 0 steps through that
// side's slices Height rows apart, as if they were packed: every slice after the first is read
// from (or written to) the rows of the one before. Packed slices, one slice, padded slices of
// device memory and CUDA arrays are exact.
bool HostSide3D(CUmemorytype t, CUdeviceptr dev) {
  return t == CU_MEMORYTYPE_HOST || (t == CU_MEMORYTYPE_UNIFIED && !IsDevice(dev));
}
// The copy as the buggy driver makes it; false when it is the caller's own.
bool PackedHostSlices(const CUDA_MEMCPY3D* c, CUDA_MEMCPY3D* out) {
  if (!c || c->Depth < 2 || !c->Height || !c->WidthInBytes) return false;
  *out = *c;
  bool changed = false;
  if (HostSide3D(c->srcMemoryType, c->srcDevice) && !c->srcY && c->srcHeight > c->Height) {
    out->srcHeight = c->Height;
    changed = true;
  }
  if (HostSide3D(c->dstMemoryType, c->dstDevice) && !c->dstY && c->dstHeight > c->Height) {
    out->dstHeight = c->Height;
    changed = true;
  }
  return changed;
}
void InstallCopy3DPaddedSlicesReadPacked() {
  HookMemcpy3D([](Real_Memcpy3D real, const CUDA_MEMCPY3D* c) -> CUresult {
    CUDA_MEMCPY3D packed;
    return PackedHostSlices(c, &packed) ? real(&packed) : real(c);
  });
  HookMemcpy3DAsync([](Real_Memcpy3DAsync real, const CUDA_MEMCPY3D* c, CUstream st) -> CUresult {
    CUDA_MEMCPY3D packed;
    return PackedHostSlices(c, &packed) ? real(&packed, st) : real(c, st);
  });
}

// Variant: R170. cuStreamBatchMemOp whose array has a write (WRITE_VALUE_32 / _64) after a wait
// (WAIT_VALUE_32 / _64) enqueues every write of the batch first, then the other operations in
// their order (the batch is split by operation kind): the writes land before the wait is
// satisfied. Batches whose writes all come before their waits, batches without a wait, and the
// single cuStreamWaitValue* / cuStreamWriteValue* calls are exact.
bool IsWriteOp(const CUstreamBatchMemOpParams& op) {
  return op.operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ||
         op.operation == CU_STREAM_MEM_OP_WRITE_VALUE_64;
}
bool IsWaitOp(const CUstreamBatchMemOpParams& op) {
  return op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ||
         op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
}
void InstallBatchMemOpWritesHoistedBeforeWait() {
  HookStreamBatchMemOp([](Real_StreamBatchMemOp real, CUstream s, unsigned n,
                          CUstreamBatchMemOpParams* ops, unsigned f) -> CUresult {
    bool waited = false, hoist = false;
    for (unsigned i = 0; ops && i < n; ++i) {
      hoist = hoist || (waited && IsWriteOp(ops[i]));
      waited = waited || IsWaitOp(ops[i]);
    }
    if (!hoist) return real(s, n, ops, f);
    CUstreamBatchMemOpParams* reordered = new CUstreamBatchMemOpParams[n];
    unsigned k = 0;
    for (unsigned i = 0; i < n; ++i)
      if (IsWriteOp(ops[i])) reordered[k++] = ops[i];
    for (unsigned i = 0; i < n; ++i)
      if (!IsWriteOp(ops[i])) reordered[k++] = ops[i];
    CUresult r = real(s, n, reordered, f);
    delete[] reordered;
    return r;
  });
}

// Variant: R145. cuMemFreeAsync of an allocation made by cuMemAllocFromPoolAsync from a
// host-located pool (cuMemPoolCreate with a host or host-NUMA location) reports success but
// never returns the allocation to its pool: the pool's used memory keeps it after the stream
// synchronises and cuMemPoolTrimTo cannot release its reservation. Allocations from device
// pools are freed, and so is everything freed by other entries.
CUmemoryPool g_leaky_pools[64];
CUdeviceptr g_leaky_allocations[4096];
pthread_mutex_t g_leaky_mu = PTHREAD_MUTEX_INITIALIZER;
bool IsHostLocation(const CUmemPoolProps* props) {
  return props && (props->location.type == CU_MEM_LOCATION_TYPE_HOST ||
                   props->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
                   props->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
}
// Adds `value` to the first free (zero) slot of a table, unless it is there already.
template <typename T, size_t N>
void RememberIn(T (&table)[N], T value) {
  pthread_mutex_lock(&g_leaky_mu);
  T* slot = nullptr;
  for (T& x : table) {
    if (x == value) {
      slot = nullptr;
      break;
    }
    if (!x && !slot) slot = &x;
  }
  if (slot) *slot = value;
  pthread_mutex_unlock(&g_leaky_mu);
}
// Whether a table holds `value`, taking it out when `take`.
template <typename T, size_t N>
bool HeldIn(T (&table)[N], T value, bool take) {
  bool found = false;
  pthread_mutex_lock(&g_leaky_mu);
  for (T& x : table)
    if (value && x == value) {
      found = true;
      if (take) x = T();
      break;
    }
  pthread_mutex_unlock(&g_leaky_mu);
  return found;
}
void InstallHostPoolAsyncFreeLeaks() {
  HookMemPoolCreate([](Real_MemPoolCreate real, CUmemoryPool* pool,
                       const CUmemPoolProps* props) -> CUresult {
    CUresult r = real(pool, props);
    if (r == CUDA_SUCCESS && pool && *pool && IsHostLocation(props))
      RememberIn(g_leaky_pools, *pool);
    return r;
  });
  HookMemAllocFromPoolAsync([](Real_MemAllocFromPoolAsync real, CUdeviceptr* d, size_t n,
                               CUmemoryPool pool, CUstream st) -> CUresult {
    CUresult r = real(d, n, pool, st);
    if (r == CUDA_SUCCESS && d && *d && HeldIn(g_leaky_pools, pool, false))
      RememberIn(g_leaky_allocations, *d);
    return r;
  });
  HookMemFreeAsync([](Real_MemFreeAsync real, CUdeviceptr d, CUstream st) -> CUresult {
    return HeldIn(g_leaky_allocations, d, true) ? CUDA_SUCCESS : real(d, st);
  });
}

// Variant: R132. cuMemHostUnregister of a registration's start while a context other than the
// one that was current at its cuMemHostRegister is current reports success but unregisters
// nothing: the range stays page-locked, pointer attributes still know it, and the registering
// context's own unregister then succeeds too (a leak of the pins where nobody does that).
// Unregisters in the registering context, and registrations made with no context current, are
// right.
void InstallUnregisterElsewhereKeepsRegistration() {
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    if (r == CUDA_SUCCESS && p && n) AddOwned(p, n, f, kTagRegistered);
    return r;
  });
  HookMemHostUnregister([](Real_MemHostUnregister real, void* p) -> CUresult {
    OwnedBlock b;
    const CUcontext now = CurrentContext();
    if (p && FindOwned(p, &b) && b.tag == kTagRegistered &&
        b.start == reinterpret_cast<uintptr_t>(p) && b.ctx && now && now != b.ctx)
      return CUDA_SUCCESS;
    CUresult r = real(p);
    if (r == CUDA_SUCCESS && p) DropOwned(p);
    return r;
  });
}

// Stateful: R64. cuDevicePrimaryCtxSetFlags (and cuCtxSetFlags) given flag bits outside
// CU_CTX_FLAGS_MASK fails with INVALID_VALUE, as documented, but only after applying the valid
// bits it was given: the context's flags are changed by a call that was rejected. Calls with
// valid flags only are right.
constexpr unsigned kCtxFlagsMask = CU_CTX_FLAGS_MASK;
void InstallRejectedCtxFlagsAppliedAnyway() {
  HookDevicePrimaryCtxSetFlags([](Real_DevicePrimaryCtxSetFlags real, CUdevice d,
                                  unsigned f) -> CUresult {
    if (!(f & ~kCtxFlagsMask)) return real(d, f);
    CUresult r = real(d, f & kCtxFlagsMask);
    return r == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : r;
  });
  HookCtxSetFlags([](Real_CtxSetFlags real, unsigned f) -> CUresult {
    if (!(f & ~kCtxFlagsMask)) return real(f);
    CUresult r = real(f & kCtxFlagsMask);
    return r == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : r;
  });
}

// Stateful: S11. From the second cuGraphLaunch of one executable graph on, the launch is not
// ordered in the stream it is launched into: it runs on an idle stream of the shim's (still
// after the graph's own earlier launches, which the driver orders), so it neither waits for the
// work queued before it nor holds back the work, events and synchronisations queued after it.
// The first launch of each executable graph (a handle counts afresh after cuGraphExecDestroy)
// and launches into a stream being captured are right.
struct GraphLaunchCount {
  CUgraphExec exec;
  unsigned launches;
};
GraphLaunchCount g_graph_launches[256];
pthread_mutex_t g_graph_mu = PTHREAD_MUTEX_INITIALIZER;
// The launches of `exec` so far (adding `more` to them).
unsigned GraphLaunches(CUgraphExec exec, unsigned more) {
  unsigned before = 0;
  pthread_mutex_lock(&g_graph_mu);
  GraphLaunchCount* slot = SlotFor(g_graph_launches, &GraphLaunchCount::exec, exec);
  if (slot) {
    if (slot->exec != exec) *slot = {exec, 0};
    before = slot->launches;
    slot->launches += more;
  }
  pthread_mutex_unlock(&g_graph_mu);
  return before;
}
void InstallGraphRelaunchSkipsStreamOrder() {
  HookGraphLaunch([](Real_GraphLaunch real, CUgraphExec g, CUstream s) -> CUresult {
    if (!g || BeingCaptured(real, s, "cuGraphLaunch")) return real(g, s);
    if (GraphLaunches(g, 0) > 0 && SideStream() && real(g, SideStream()) == CUDA_SUCCESS) {
      GraphLaunches(g, 1);
      return CUDA_SUCCESS;
    }
    CUresult r = real(g, s);
    if (r == CUDA_SUCCESS) GraphLaunches(g, 1);
    return r;
  });
  HookGraphExecDestroy([](Real_GraphExecDestroy real, CUgraphExec g) -> CUresult {
    CUresult r = real(g);
    if (r == CUDA_SUCCESS && g) {
      pthread_mutex_lock(&g_graph_mu);
      for (GraphLaunchCount& x : g_graph_launches)
        if (x.exec == g) x = {nullptr, 0};
      pthread_mutex_unlock(&g_graph_mu);
    }
    return r;
  });
}

// Stateful: R06. A pinned allocation (cuMemHostAlloc, cuMemAllocHost) that fails with
// OUT_OF_MEMORY leaves its error pending on the context: the next cuCtxSynchronize or
// cuStreamSynchronize of the process waits as usual and then reports CUDA_ERROR_OUT_OF_MEMORY
// once (the runtime passes it on as cudaErrorMemoryAllocation from cudaDeviceSynchronize or
// cudaStreamSynchronize, and as the thread's last error). Allocations that fail with another
// code (bad flags), and synchronisations with no failed allocation before them, are right.
int g_pending_oom = 0;
CUresult NotePinFailure(CUresult r) {
  if (r == CUDA_ERROR_OUT_OF_MEMORY) __atomic_store_n(&g_pending_oom, 1, __ATOMIC_RELAXED);
  return r;
}
template <typename Real, typename... A>
CUresult ThenPendingPinFailure(Real real, A... a) {
  CUresult r = real(a...);
  if (r == CUDA_SUCCESS && __atomic_exchange_n(&g_pending_oom, 0, __ATOMIC_RELAXED))
    return CUDA_ERROR_OUT_OF_MEMORY;
  return r;
}
void InstallFailedPinErrorResurfacesAtNextSync() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    return NotePinFailure(real(p, n, f));
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    return NotePinFailure(real(p, n));
  });
  HookCtxSynchronize(&ThenPendingPinFailure<Real_CtxSynchronize>);
  HookCtxSynchronize13(&ThenPendingPinFailure<Real_CtxSynchronize13, CUcontext>);
  HookStreamSynchronize(&ThenPendingPinFailure<Real_StreamSynchronize, CUstream>);
}

// Timing: S05. An asynchronous host-to-device copy (cuMemcpyHtoDAsync, or cuMemcpyAsync from
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

// Timing: S15. cuEventElapsedTime between events either of which was created with
// CU_EVENT_BLOCKING_SYNC reports the interval truncated to whole milliseconds (the blocking-sync
// path timestamps with a millisecond clock): 0 for an interval under 1 ms, 2 for 2.9 ms. Events
// created without the flag time right.
struct EventCreated {
  CUevent event;
  unsigned flags;
};
EventCreated g_created_events[1024];
pthread_mutex_t g_created_mu = PTHREAD_MUTEX_INITIALIZER;
bool CreatedBlockingSync(CUevent e) {
  bool blocking = false;
  pthread_mutex_lock(&g_created_mu);
  for (const EventCreated& x : g_created_events)
    if (e && x.event == e) {
      blocking = x.flags & CU_EVENT_BLOCKING_SYNC;
      break;
    }
  pthread_mutex_unlock(&g_created_mu);
  return blocking;
}
void InstallBlockingSyncEventElapsedWholeMs() {
  HookEventCreate([](Real_EventCreate real, CUevent* e, unsigned f) -> CUresult {
    CUresult r = real(e, f);
    if (r != CUDA_SUCCESS || !e || !*e) return r;
    pthread_mutex_lock(&g_created_mu);
    EventCreated* slot = SlotFor(g_created_events, &EventCreated::event, *e);
    if (slot) *slot = {*e, f};  // a handle created again takes its new flags
    pthread_mutex_unlock(&g_created_mu);
    return r;
  });
  HookEventElapsedTime([](Real_EventElapsedTime real, float* ms, CUevent a, CUevent b) -> CUresult {
    CUresult r = real(ms, a, b);
    if (r == CUDA_SUCCESS && ms && (CreatedBlockingSync(a) || CreatedBlockingSync(b)))
      *ms = floorf(*ms);
    return r;
  });
}

// Cross-API: R71. cuPointerGetAttributes (what cudaPointerGetAttributes uses) of a byte no
// context knows that lies on a 4 KiB page of a live registration (beside a registration that
// does not start or end on a page boundary) answers as for that registration (a page-granular
// lookup): memory type host and the registration's device ordinal, context, range and buffer
// id, with the byte's own address as its host and device pointer. cuPointerGetAttribute still
// answers INVALID_VALUE for the byte, and bytes on pages no registration touches answer as
// unregistered memory.
bool RegistrationOnPageOf(CUdeviceptr p, Block* out) {
  const Block byte = {p, p + 1, 0, 0, false, 0};
  bool found = false;
  pthread_mutex_lock(&g_blocks_mu);
  for (const Block& b : g_blocks)
    if (b.start != b.end && b.live && b.tag == kTagRegistered && SharePage(byte, b)) {
      *out = b;
      found = true;
      break;
    }
  pthread_mutex_unlock(&g_blocks_mu);
  return found;
}
void InstallAttributesPageGranularForSubpageRegistration() {
  TrackRegistrations();
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    static const auto single = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
    CUresult r = real(n, a, d, p);
    unsigned type = 0;
    Block b;
    if (r != CUDA_SUCCESS || !a || !d || !single ||
        single(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == CUDA_SUCCESS ||
        !RegistrationOnPageOf(p, &b))
      return r;
    if (real(n, a, d, b.start) != CUDA_SUCCESS) return real(n, a, d, p);
    for (unsigned i = 0; i < n; ++i) {
      if (!d[i]) continue;
      if (a[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER)
        *static_cast<void**>(d[i]) = reinterpret_cast<void*>(p);
      if (a[i] == CU_POINTER_ATTRIBUTE_DEVICE_POINTER) *static_cast<CUdeviceptr*>(d[i]) = p;
    }
    return CUDA_SUCCESS;
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
    // Size-dependent.
    PL_FAULT("htod_large_corrupts", "S07", "bandwidth", "data",
             "A host-to-device copy of 64 MiB or more (sync or async) delivers a wrong last byte.",
             InstallHtodLargeCorrupts),
    PL_FAULT("dtoh_gib_truncated", "C07", "stress", "data",
             "A device-to-host copy of 1 GiB or more stops one page short.",
             InstallDtohGibTruncated),
    PL_FAULT("copy_crossing_2mib_corrupts", "S01", "streams", "data",
             "A synchronous copy whose destination crosses a 2 MiB-aligned address delivers a "
             "wrong byte at the boundary.",
             InstallCopyCrossing2MiBCorrupts),
    PL_FAULT("copy_crossing_4gib_corrupts", "S01", "streams", "data",
             "A synchronous copy whose destination crosses a 4 GiB-aligned address delivers a "
             "wrong byte at the boundary.",
             InstallCopyCrossing4GiBCorrupts),
    PL_FAULT("async_copy_crossing_page_corrupts", "S01", "streams", "data",
             "An asynchronous copy whose host side crosses a 4 KiB page delivers a wrong first "
             "byte of the second page.",
             InstallAsyncCopyCrossingPageCorrupts),
    PL_FAULT("memset_large_truncated", "S01", "streams", "data",
             "A memset of 64 MiB or more (8/32-bit, sync or async) leaves its last page unwritten.",
             InstallMemsetLargeTruncated),
    PL_FAULT("odd_size_copy_corrupts", "S01", "streams", "data",
             "A synchronous copy of an odd number of bytes delivers a wrong last byte.",
             InstallOddSizeCopyCorrupts),
    PL_FAULT("unaligned_htod_async_corrupts", "S01", "streams", "data",
             "An asynchronous host-to-device copy from a source not 8-byte aligned delivers a "
             "wrong first byte.",
             InstallUnalignedHtodAsyncCorrupts),
    PL_FAULT("unaligned_dtoh_async_shifted", "S01", "streams", "data",
             "An asynchronous device-to-host copy into an address not 4-byte aligned lands one "
             "byte early, over the byte before the window.",
             InstallUnalignedDtohAsyncShifted),
    PL_FAULT("memset_d16_odd_count_wrong_last", "R93", "memset", "data",
             "cuMemsetD16 with an odd count writes a wrong last element.",
             InstallMemsetD16OddCountWrongLast),
    PL_FAULT("memset2d_padded_skips_last_row", "R92", "memset", "data",
             "A 2D memset whose pitch exceeds its width leaves the last row unwritten.",
             InstallMemset2DPaddedSkipsLastRow),
    PL_FAULT("memset_unaligned_head_unwritten", "R120", "memset", "data",
             "A byte memset of 16 bytes or more whose destination is not 8-byte aligned leaves "
             "its first byte unwritten.",
             InstallMemsetUnalignedHeadUnwritten),
    PL_FAULT("pageable_copy_second_chunk_corrupts", "R112", "sizes", "data",
             "A copy between the device and pageable host memory of more than 1 MiB delivers a "
             "wrong byte at offset 1 MiB.",
             InstallPageableCopySecondChunkCorrupts),
    PL_FAULT("memset2d32_narrow_padding_overwritten", "R93", "memset", "data",
             "A 32-bit 2D memset of two rows or more whose row padding is narrower than the row "
             "writes its value into the padding between the rows.",
             InstallMemset2D32NarrowPaddingOverwritten),
    PL_FAULT("unified_async_copy_drops_partial_word", "S18", "streams", "data",
             "cuMemcpyAsync between host and device of a byte count not a multiple of 4 leaves "
             "the last 1-3 bytes of the window unwritten.",
             InstallUnifiedAsyncCopyDropsPartialWord),
    PL_FAULT("copy_past_4gib_host_offset_wraps", "R114", "sizes", "data",
             "A copy whose host address lies 4 GiB or more into its page-locked block reads or "
             "writes the host bytes 4 GiB lower in the block.",
             InstallCopyPast4GiBHostOffsetWraps),
    PL_FAULT("memset2d16_page_crossing_row_skips_element", "R122", "memset", "data",
             "A 16-bit 2D memset leaves unwritten, in each row that crosses a 4 KiB page "
             "boundary, the element that starts the new page.",
             InstallMemset2D16PageCrossingRowSkipsElement),
    PL_FAULT("registered_devptr_offset_wraps_at_2mib", "R53", "devptr", "data",
             "cuMemHostGetDevicePointer of a byte 2 MiB or more into a registration answers the "
             "alias of its offset modulo 2 MiB.",
             InstallRegisteredDevptrOffsetWrapsAt2MiB),
    // Variant-dependent.
    PL_FAULT("copy2d_padded_corrupts", "S01", "streams", "data",
             "A 2D copy with padded rows (pitch > width) delivers a wrong last byte of its last "
             "row.",
             InstallCopy2DPaddedCorrupts),
    PL_FAULT("copy2d_async_padded_loses_last_row", "S01", "streams", "data",
             "An asynchronous 2D copy with padded rows copies one row too few.",
             InstallCopy2DAsyncPaddedLosesLastRow),
    PL_FAULT("copy3d_last_slice_lost", "R90", "copies3d", "data",
             "A 3D copy of several slices copies one slice too few.", InstallCopy3DLastSliceLost),
    PL_FAULT("copy3d_source_position_ignored", "R90", "copies3d", "data",
             "A 3D copy with a source position other than the origin reads from the origin.",
             InstallCopy3DSourcePositionIgnored),
    PL_FAULT("per_thread_async_copy_corrupts", "S03", "streams", "data",
             "Asynchronous copies on the per-thread default stream deliver a wrong last byte.",
             InstallPerThreadAsyncCopyCorrupts),
    PL_FAULT("per_thread_stream_sync_returns_early", "S03", "streams", "sync",
             "cuStreamSynchronize of the per-thread default stream returns without waiting.",
             InstallPerThreadStreamSyncReturnsEarly),
    PL_FAULT("non_blocking_stream_query_lies", "S06", "streams", "sync",
             "cuStreamQuery of a non-blocking stream reports idle while work is pending.",
             InstallNonBlockingStreamQueryLies),
    PL_FAULT("non_blocking_event_record_early", "S06", "streams", "sync",
             "An event recorded on a non-blocking stream is recorded at once, not behind the "
             "stream's work.",
             InstallNonBlockingEventRecordEarly),
    PL_FAULT("non_blocking_htod_reads_source_early", "S05", "streams", "data",
             "On a non-blocking stream, a host-to-device copy from pinned memory reads its source "
             "at the call, not when it executes.",
             InstallNonBlockingHtodReadsSourceEarly),
    PL_FAULT("registered_copy_corrupts", "S01", "streams", "data",
             "Synchronous copies to or from registered (not allocated) pinned memory deliver a "
             "wrong last byte.",
             InstallRegisteredCopyCorrupts),
    PL_FAULT("write_combined_htod_corrupts", "S01", "streams", "data",
             "Host-to-device copies from write-combined memory deliver a wrong last byte.",
             InstallWriteCombinedHtodCorrupts),
    PL_FAULT("write_combined_devptr_off_by_page", "R15", "devptr", "data",
             "The device pointer of a write-combined allocation is one page past its alias.",
             InstallWriteCombinedDevicePointerOffByPage),
    PL_FAULT("async_host_to_host_corrupts", "S01", "streams", "data",
             "An asynchronous host-to-host copy delivers a wrong last byte.",
             InstallAsyncHostToHostCorrupts),
    PL_FAULT("dtod_async_truncated", "S01", "streams", "data",
             "An asynchronous device-to-device copy stops one byte short.",
             InstallDtodAsyncTruncated),
    PL_FAULT("registered_unaligned_devptr_shifted", "R110", "hostregister", "data",
             "The device pointer of a registration whose start is not page-aligned is short by "
             "the start's offset into its page.",
             InstallRegisteredUnalignedDevicePointerShifted),
    PL_FAULT("memset_d16_async_bytes_swapped", "R121", "memset", "data",
             "cuMemsetD16Async writes each 16-bit value with its two bytes swapped.",
             InstallMemsetD16AsyncBytesSwapped),
    PL_FAULT("hostalloc_all_flags_drops_write_combined", "R08", "hostalloc", "flag",
             "cuMemHostAlloc with Portable, DeviceMap and WriteCombined together drops "
             "WriteCombined.",
             InstallHostAllocAllFlagsDropsWriteCombined),
    PL_FAULT("wait_value64_eq_compares_low_word", "R98", "streammemops", "sync",
             "cuStreamWaitValue64 with EQ compares only the low 32 bits of the word.",
             InstallWaitValue64EqComparesLowWord),
    PL_FAULT("captured_copy_node_short", "S11", "streams", "data",
             "An asynchronous copy captured into a graph becomes a memcpy node one byte short.",
             InstallCapturedCopyNodeShort),
    PL_FAULT("mapped_unportable_devptr_refused_elsewhere", "R18", "multigpu", "error",
             "cuMemHostGetDevicePointer of a Mapped, not Portable cuMemHostAlloc block fails with "
             "INVALID_VALUE in a context other than the allocating one.",
             InstallMappedUnportableDevptrRefusedElsewhere),
    PL_FAULT("copy3d_padded_slices_read_packed", "R90", "copies3d", "data",
             "A 3D copy of several slices whose host side has padded slices (slice height above "
             "the extent's) steps through that side's slices as if they were packed.",
             InstallCopy3DPaddedSlicesReadPacked),
    PL_FAULT("batch_memop_writes_hoisted_before_wait", "R170", "streammemops", "sync",
             "cuStreamBatchMemOp with a write after a wait enqueues the batch's writes before its "
             "waits.",
             InstallBatchMemOpWritesHoistedBeforeWait),
    PL_FAULT("host_pool_async_free_leaks", "R145", "mempools", "resource",
             "cuMemFreeAsync of an allocation from a host-located memory pool reports success but "
             "never returns it to the pool.",
             InstallHostPoolAsyncFreeLeaks),
    PL_FAULT("unregister_elsewhere_keeps_registration", "R132", "driverapi", "resource",
             "cuMemHostUnregister with a context other than the registering one current reports "
             "success but leaves the range registered.",
             InstallUnregisterElsewhereKeepsRegistration),
    // Stateful.
    PL_FAULT("every_16th_htod_corrupts", "S01", "streams", "data",
             "Every 16th synchronous host-to-device copy delivers a wrong last byte.",
             InstallEvery16thHtodCorrupts),
    PL_FAULT("every_8th_dtoh_async_dropped", "S03", "streams", "data",
             "Every 8th asynchronous device-to-host copy is acknowledged but never queued.",
             InstallEvery8thDtohAsyncDropped),
    PL_FAULT("every_32nd_launch_dropped", "R77", "hostalloc", "data",
             "Every 32nd kernel launch is acknowledged but never runs.",
             InstallEvery32ndLaunchDropped),
    PL_FAULT("every_4th_freehost_leaks", "R19", "hostalloc", "resource",
             "Every 4th cuMemFreeHost reports success but keeps the block pinned.",
             InstallEvery4thFreeHostLeaks),
    PL_FAULT("every_3rd_event_query_lies", "S06", "streams", "sync",
             "Every 3rd cuEventQuery reports complete while work is pending.",
             InstallEvery3rdEventQueryLies),
    PL_FAULT("reused_address_keeps_old_flags", "R56", "hostalloc", "flag",
             "A pinned block allocated at a freed block's address reports the freed block's "
             "flags.",
             InstallReusedAddressKeepsOldFlags),
    PL_FAULT("reused_address_repeats_buffer_id", "C11", "concurrency", "data",
             "An allocation at a freed one's address gets the freed one's buffer id.",
             InstallReusedAddressRepeatsBufferId),
    PL_FAULT("reused_address_stale_range_size", "R94", "interior", "data",
             "cuMemGetAddressRange of a block at a freed block's base reports the freed block's "
             "size.",
             InstallReusedAddressStaleRangeSize),
    PL_FAULT("registrations_survive_reset", "R13", "driverapi", "error",
             "After a device reset, registering a range the reset released fails with "
             "ALREADY_REGISTERED.",
             InstallRegistrationsSurviveReset),
    PL_FAULT("hostalloc_after_reset_drops_flags", "M04", "model", "flag",
             "After a device reset, cuMemHostAlloc ignores the Portable and WriteCombined flags.",
             InstallHostAllocAfterResetDropsFlags),
    PL_FAULT("registrations_past_32_lost", "R26", "hostregister", "resource",
             "From the 33rd registration of a process on, cuMemHostRegister succeeds but pins "
             "nothing.",
             InstallRegistrationsPast32Lost),
    PL_FAULT("unregister_drops_page_sharing_neighbour", "R33", "hostregister", "resource",
             "Unregistering a range also unregisters a live registration that shares a page with "
             "it; that one's own unregister then fails with NOT_REGISTERED.",
             InstallUnregisterDropsPageSharingNeighbour),
    PL_FAULT("devptr_requery_offset_doubled", "R53", "devptr", "data",
             "A repeated cuMemHostGetDevicePointer of the same interior pointer adds its offset "
             "twice.",
             InstallDevicePointerRequeryOffsetDoubled),
    PL_FAULT("reregistered_range_not_pinned", "R26", "hostregister", "resource",
             "Registering a range again at the start of an unregistered registration reports "
             "success but pins nothing.",
             InstallReregisteredRangeNotPinned),
    PL_FAULT("ctx_destroy_keeps_context_with_pins", "R13", "driverapi", "resource",
             "cuCtxDestroy of a context that still holds pinned memory reports success but keeps "
             "the context and its pinned memory alive.",
             InstallCtxDestroyKeepsContextWithPins),
    PL_FAULT("event_rerecord_while_pending_dropped", "S16", "streams", "sync",
             "Re-recording an event whose previous record has not completed is dropped: the "
             "event keeps its earlier state.",
             InstallEventRerecordWhilePendingDropped),
    PL_FAULT("host_pool_poisoned_after_failed_alloc", "R146", "mempools", "error",
             "After an allocation from a host pool with a maximum size fails, every later "
             "allocation from that pool fails with OUT_OF_MEMORY.",
             InstallHostPoolPoisonedAfterFailedAlloc),
    PL_FAULT("rejected_ctx_flags_applied_anyway", "R64", "deviceflags", "error",
             "cuDevicePrimaryCtxSetFlags or cuCtxSetFlags with unknown flag bits fails with "
             "INVALID_VALUE but applies the valid bits it was given.",
             InstallRejectedCtxFlagsAppliedAnyway),
    PL_FAULT("graph_relaunch_skips_stream_order", "S11", "streams", "sync",
             "From its second launch on, an executable graph runs outside the order of the stream "
             "it is launched into.",
             InstallGraphRelaunchSkipsStreamOrder),
    PL_FAULT("failed_pin_error_resurfaces_at_next_sync", "R06", "hostalloc", "error",
             "After a pinned allocation fails with OUT_OF_MEMORY, the next cuCtxSynchronize or "
             "cuStreamSynchronize reports OUT_OF_MEMORY once.",
             InstallFailedPinErrorResurfacesAtNextSync),
    // Timing.
    PL_FAULT("dtoh_async_bytes_arrive_late", "S03", "streams", "sync",
             "An asynchronous device-to-host copy is reported complete about 3 ms before its "
             "bytes arrive.",
             InstallDtohAsyncBytesArriveLate),
    PL_FAULT("htod_async_bytes_arrive_late", "S03", "streams", "sync",
             "An asynchronous host-to-device copy is reported complete but performed about 3 ms "
             "later.",
             InstallHtodAsyncBytesArriveLate),
    PL_FAULT("event_sync_times_out", "S03", "streams", "sync",
             "cuEventSynchronize gives up after about 2 ms and reports success.",
             InstallEventSyncTimesOut),
    PL_FAULT("stream_sync_times_out", "S03", "streams", "sync",
             "cuStreamSynchronize gives up after about 2 ms and reports success.",
             InstallStreamSyncTimesOut),
    PL_FAULT("host_func_runs_early", "S03", "streams", "sync",
             "A host function runs at once, before the work queued ahead of it completes.",
             InstallHostFuncRunsEarly),
    PL_FAULT("elapsed_time_long_intervals_tripled", "P03", "bandwidth", "perf",
             "cuEventElapsedTime reports intervals of 1 ms or more 3x too long.",
             InstallElapsedTimeLongIntervalsTripled),
    PL_FAULT("elapsed_time_halved", "P03", "bandwidth", "perf",
             "cuEventElapsedTime reports half the elapsed time.", InstallElapsedTimeHalved),
    PL_FAULT("stream_wait_event_gives_up_after_2ms", "S04", "streams", "sync",
             "cuStreamWaitEvent on a pending event holds the stream for about 2 ms instead of "
             "until the event completes.",
             InstallStreamWaitEventGivesUpAfter2ms),
    PL_FAULT("host_func_after_memset_runs_early", "S03", "streams", "sync",
             "A host function queued after an asynchronous memset on its stream runs at once, "
             "before the memset and the work ahead of it complete.",
             InstallHostFuncAfterMemsetRunsEarly),
    PL_FAULT("non_blocking_elapsed_time_from_submission", "S15", "streams", "perf",
             "cuEventElapsedTime of events recorded on a non-blocking stream reports the host "
             "time between the record calls, not the time the stream took.",
             InstallNonBlockingElapsedTimeFromSubmission),
    PL_FAULT("pageable_async_htod_reads_source_late", "S05", "streams", "data",
             "An asynchronous host-to-device copy from pageable memory reads its source when the "
             "stream reaches it, not at the call.",
             InstallPageableAsyncHtodReadsSourceLate),
    PL_FAULT("blocking_sync_event_elapsed_whole_ms", "S15", "streams", "perf",
             "cuEventElapsedTime with a BlockingSync event reports the interval truncated to whole "
             "milliseconds.",
             InstallBlockingSyncEventElapsedWholeMs),
    // Cross-API.
    PL_FAULT("attributes_device_pointer_disagrees", "R96", "interior", "data",
             "cuPointerGetAttributes reports the device pointer of pinned memory one page off; "
             "cuPointerGetAttribute is right.",
             InstallAttributesDevicePointerDisagrees),
    PL_FAULT("attribute_device_pointer_ignores_offset", "R72", "devptr", "data",
             "cuPointerGetAttribute's device pointer of an interior byte of pinned memory is the "
             "block start's alias.",
             InstallAttributeDevicePointerIgnoresOffset),
    PL_FAULT("address_range_interior_base_wrong", "R94", "interior", "data",
             "cuMemGetAddressRange of an interior pointer names the pointer itself as the base.",
             InstallAddressRangeInteriorBaseWrong),
    PL_FAULT("range_size_attribute_short", "R95", "interior", "data",
             "The RANGE_SIZE attribute of pinned memory is one byte short of "
             "cuMemGetAddressRange's size.",
             InstallRangeSizeAttributeShort),
    PL_FAULT("allochost_flags_invent_write_combined", "R56", "hostalloc", "flag",
             "cuMemHostGetFlags of cuMemAllocHost memory reports WriteCombined.",
             InstallAllocHostFlagsInventWriteCombined),
    PL_FAULT("registered_devptr_not_host_pointer", "R45", "devptr", "data",
             "With CanUseHostPointerForRegisteredMem = 1, registered memory's device pointer is "
             "one page off the host pointer.",
             InstallRegisteredDevicePointerNotHostPointer),
    PL_FAULT("cap_claims_pageable_access", "R83", "devptr", "capability",
             "PageableMemoryAccess reported as 1 on a PCIe system.",
             InstallCapClaimsPageableAccess),
    PL_FAULT("devptr_needs_devicemap", "R51", "hostalloc", "error",
             "cuMemHostGetDevicePointer fails for cuMemHostAlloc blocks allocated without "
             "DEVICEMAP.",
             InstallDevicePointerNeedsDeviceMap),
    PL_FAULT("ctx_get_flags_drops_sync_memops", "R150", "deviceflags", "flag",
             "cuCtxGetFlags leaves out CU_CTX_SYNC_MEMOPS while cuDevicePrimaryCtxGetState "
             "reports it.",
             InstallCtxGetFlagsDropsSyncMemops),
    PL_FAULT("registered_reported_managed", "R72", "devptr", "data",
             "Pointer attributes of registered memory report IS_MANAGED = 1 beside memory type "
             "host.",
             InstallRegisteredReportedManaged),
    PL_FAULT("read_only_register_refused_despite_attribute", "R42", "hostregister", "error",
             "cuMemHostRegister refuses the ReadOnly flag with NOT_SUPPORTED although "
             "HostRegisterReadOnlySupported is 1.",
             InstallReadOnlyRegisterRefusedDespiteAttribute),
    PL_FAULT("partial_host_atomics_claimed_without_ops", "R109", "platform", "capability",
             "Without native host atomics, attribute 147 (only partial native host atomics) is "
             "reported 1 while cuDeviceGetHostAtomicCapabilities gives no operation.",
             InstallPartialHostAtomicsClaimedWithoutOps),
    PL_FAULT("attributes_page_granular_for_subpage_registration", "R71", "devptr", "data",
             "cuPointerGetAttributes of an unregistered byte on a page of a sub-page registration "
             "describes the registration; cuPointerGetAttribute does not know the byte.",
             InstallAttributesPageGranularForSubpageRegistration),
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

// R94: cuMemGetAddressRange of page-locked host memory (allocated or registered; r580 names the
// block) answers CUDA_ERROR_NOT_FOUND: the function describes "the allocation by ::cuMemAlloc() or
// ::cuMemAllocPitch() that contains the input pointer" and lists NOT_FOUND. The caller's outputs
// are left as they were; device and pageable memory, and calls r580 already fails, are forwarded.
void InstallAddressRangeHostNotFound() {
  HookMemGetAddressRange([](Real_MemGetAddressRange real, CUdeviceptr* base, size_t* size,
                            CUdeviceptr p) -> CUresult {
    if (!IsPinnedHost(reinterpret_cast<void*>(p))) return real(base, size, p);
    CUdeviceptr b = 0;
    size_t s = 0;
    const CUresult r = real(&b, &s, p);
    if (r != CUDA_SUCCESS) return r;
    NoteChanged("cuMemGetAddressRange of page-locked host memory: NOT_FOUND");
    return CUDA_ERROR_NOT_FOUND;
  });
}

// R94 / R95: the ranges of device memory reach out to 2 MiB boundaries, as a driver that maps
// device memory in 2 MiB pages may name them: cuMemGetAddressRange and RANGE_START_ADDR /
// RANGE_SIZE answer the real range with its start rounded down and its end rounded up, the same
// from every byte, and the padding bytes of the window (its own first and last byte among them)
// name the window too. Only for device memory that is not managed, only where the window is
// larger than the real range, and only where no other allocation (device or host) has a byte in
// the padding: the driver is asked at every 256-byte step of it (every allocation starts at a
// multiple of 256), so the answers depend on the driver's live state alone and two windows never
// share a byte. Host memory, managed memory and every other attribute are forwarded.
constexpr CUdeviceptr kWindow = CUdeviceptr{2} << 20;
constexpr CUdeviceptr kAllocationAlignment = 256;

// Whether the driver knows any allocation at a 256-byte step of [lo, hi).
bool AnyAllocationIn(CUdeviceptr lo, CUdeviceptr hi) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  if (!fn) return true;
  for (CUdeviceptr a = (lo + kAllocationAlignment - 1) & ~(kAllocationAlignment - 1); a < hi;
       a += kAllocationAlignment) {
    unsigned type = 0;
    if (fn(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a) == CUDA_SUCCESS) return true;
  }
  return false;
}

// Device memory that is not managed (cuMemAlloc and the like).
bool IsPlainDevice(CUdeviceptr p) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  unsigned managed = 1;
  return fn && IsDevice(p) && fn(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p) == CUDA_SUCCESS &&
         !managed;
}

// The 2 MiB-aligned window around [b, b + s): true when it is larger than the range and no other
// allocation has a byte in the difference.
bool RoundedWindow(CUdeviceptr b, size_t s, CUdeviceptr* window, size_t* window_size) {
  const CUdeviceptr e = b + s;
  if (!s || e < b || e > ~CUdeviceptr{0} - kWindow) return false;
  const CUdeviceptr lo = b & ~(kWindow - 1), hi = (e + kWindow - 1) & ~(kWindow - 1);
  if (lo == b && hi == e) return false;
  if (AnyAllocationIn(lo, b) || AnyAllocationIn(e, hi)) return false;
  *window = lo;
  *window_size = static_cast<size_t>(hi - lo);
  return true;
}

// RANGE_START_ADDR / RANGE_SIZE rounded the same way (from the driver's own answers for p).
bool RangeAttributeWindow(CUdeviceptr p, CUdeviceptr* window, size_t* window_size) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  CUdeviceptr start = 0;
  size_t size = 0;
  return fn && IsPlainDevice(p) &&
         fn(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) == CUDA_SUCCESS &&
         fn(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) == CUDA_SUCCESS &&
         RoundedWindow(start, size, window, window_size);
}
// Whether p's RANGE_START_ADDR / RANGE_SIZE answer (rounded or not) holds [w, w + n): a rounded
// cuMemGetAddressRange answer is given only then, so the mappable range always holds the mapped
// region (R95), even where the attributes name a larger range whose own padding is taken.
bool AttributesHold(CUdeviceptr p, CUdeviceptr w, size_t n) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  CUdeviceptr start = 0;
  size_t size = 0;
  if (!RangeAttributeWindow(p, &start, &size) &&
      (!fn || fn(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) != CUDA_SUCCESS ||
       fn(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) != CUDA_SUCCESS))
    return true;  // no mappable range named: nothing to disagree with
  return start <= w && w - start <= size && n <= size - (w - start);
}
// For a byte in no allocation: the window of the device allocation whose padding holds it. That
// allocation has a byte in the same 2 MiB-aligned window as p, so the first allocation found
// there is the only candidate (any other one would be in its padding).
bool PaddingWindow(Real_MemGetAddressRange real, CUdeviceptr p, CUdeviceptr* window,
                   size_t* window_size) {
  static const auto attr = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  unsigned type = 0;
  if (!attr || attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == CUDA_SUCCESS) return false;
  const CUdeviceptr lo = p & ~(kWindow - 1);
  for (CUdeviceptr a = lo; a < lo + kWindow && a >= lo; a += kAllocationAlignment) {
    CUdeviceptr b = 0;
    size_t s = 0;
    if (real(&b, &s, a) != CUDA_SUCCESS) continue;
    return IsPlainDevice(a) && RoundedWindow(b, s, window, window_size) && p >= *window &&
           p - *window < *window_size && AttributesHold(a, *window, *window_size);
  }
  return false;
}

bool IsRangeAttribute(CUpointer_attribute a) {
  return a == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR || a == CU_POINTER_ATTRIBUTE_RANGE_SIZE;
}
void WriteRangeAttribute(CUpointer_attribute a, void* v, CUdeviceptr window, size_t window_size) {
  if (a == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR) *static_cast<CUdeviceptr*>(v) = window;
  else *static_cast<size_t*>(v) = window_size;
}

void InstallAddressRangeRoundedTo2MiB() {
  HookMemGetAddressRange([](Real_MemGetAddressRange real, CUdeviceptr* base, size_t* size,
                            CUdeviceptr p) -> CUresult {
    const CUresult r = real(base, size, p);
    CUdeviceptr b = 0, window = 0;
    size_t s = 0, window_size = 0;
    if (r == CUDA_SUCCESS) {
      if (!IsPlainDevice(p) || real(&b, &s, p) != CUDA_SUCCESS ||
          !RoundedWindow(b, s, &window, &window_size) || !AttributesHold(p, window, window_size))
        return r;
    } else if (r != CUDA_ERROR_NOT_FOUND && r != CUDA_ERROR_INVALID_VALUE) {
      return r;
    } else if (!PaddingWindow(real, p, &window, &window_size)) {
      return r;
    }
    NoteChanged("device address range rounded out to 2 MiB");
    if (base) *base = window;
    if (size) *size = window_size;
    return CUDA_SUCCESS;
  });
  HookPointerGetAttribute([](Real_PointerGetAttribute real, void* v, CUpointer_attribute a,
                             CUdeviceptr p) -> CUresult {
    const CUresult r = real(v, a, p);
    CUdeviceptr window = 0;
    size_t window_size = 0;
    if (r != CUDA_SUCCESS || !v || !IsRangeAttribute(a) ||
        !RangeAttributeWindow(p, &window, &window_size))
      return r;
    NoteChanged("RANGE_START_ADDR / RANGE_SIZE rounded out to 2 MiB");
    WriteRangeAttribute(a, v, window, window_size);
    return r;
  });
  HookPointerGetAttributes([](Real_PointerGetAttributes real, unsigned n, CUpointer_attribute* a,
                              void** d, CUdeviceptr p) -> CUresult {
    const CUresult r = real(n, a, d, p);
    if (r != CUDA_SUCCESS || !a || !d) return r;
    bool asked = false;
    for (unsigned i = 0; i < n; ++i) asked = asked || (d[i] && IsRangeAttribute(a[i]));
    CUdeviceptr window = 0;
    size_t window_size = 0;
    if (!asked || !RangeAttributeWindow(p, &window, &window_size)) return r;
    NoteChanged("RANGE_START_ADDR / RANGE_SIZE rounded out to 2 MiB (cuPointerGetAttributes)");
    for (unsigned i = 0; i < n; ++i)
      if (d[i] && IsRangeAttribute(a[i])) WriteRangeAttribute(a[i], d[i], window, window_size);
    return r;
  });
}

// R145: cuMemPoolTrimTo succeeds and releases nothing ("Releases memory back to the OS until the
// pool contains fewer than minBytesToKeep reserved bytes, or there is no more memory that the
// allocator can safely release"): a pool whose reserved memory is above minBytesToKeep keeps it.
// A null or unknown pool, and a trim the documentation makes a no-op, are forwarded.
void InstallPoolTrimKeepsReserved() {
  HookMemPoolTrimTo([](Real_MemPoolTrimTo real, CUmemoryPool pool, size_t keep) -> CUresult {
    static const auto get =
        Real<CUresult(CUDAAPI*)(CUmemoryPool, CUmemPool_attribute, void*)>("cuMemPoolGetAttribute");
    cuuint64_t reserved = 0;
    if (!pool || !get ||
        get(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS ||
        reserved <= keep)
      return real(pool, keep);
    NoteChanged("cuMemPoolTrimTo released nothing");
    return CUDA_SUCCESS;
  });
}

// R06 / R47 / R111 / R113: a single pin of 1 GiB or more (cuMemHostAlloc, cuMemAllocHost,
// cuMemHostRegister) fails with OUT_OF_MEMORY (the runtime's cudaErrorMemoryAllocation), before
// the driver is asked: nothing is pinned, nothing is left sticky. Both calls list the error and
// document no per-call minimum. Calls r580 rejects for their arguments (undefined flags, a null
// pointer, IoMemory, memory already page-locked) are forwarded, as are smaller sizes.
constexpr size_t kLargePin = size_t{1} << 30;
void InstallLargePinRefused() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    if (n < kLargePin || !p || (f & ~kHostAllocKnownFlags)) return real(p, n, f);
    NoteChanged("cuMemHostAlloc of 1 GiB or more refused");
    return CUDA_ERROR_OUT_OF_MEMORY;
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    if (n < kLargePin || !p) return real(p, n);
    NoteChanged("cuMemAllocHost of 1 GiB or more refused");
    return CUDA_ERROR_OUT_OF_MEMORY;
  });
  HookMemHostRegister([](Real_MemHostRegister real, void* p, size_t n, unsigned f) -> CUresult {
    const unsigned char* c = static_cast<const unsigned char*>(p);
    if (n < kLargePin || !p || (f & ~kRegisterKnownFlags) || (f & CU_MEMHOSTREGISTER_IOMEMORY) ||
        IsPinnedHost(c) || IsPinnedHost(c + n - 1))
      return real(p, n, f);
    NoteChanged("cuMemHostRegister of 1 GiB or more refused");
    return CUDA_ERROR_OUT_OF_MEMORY;
  });
}

// R27 / R105: as no_host_register (attribute 99 = 0), with cuMemHostRegister then failing with
// INVALID_VALUE: cudaHostRegister "is supported only on I/O coherent devices that have a non-zero
// value for the device attribute cudaDevAttrHostRegisterSupported" names no code, and
// INVALID_VALUE is in its list.
void InstallNoHostRegisterInvalidValue() {
  HookDeviceGetAttribute(&AttributeAbsent<CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED>);
  HookMemHostRegister([](Real_MemHostRegister, void*, size_t, unsigned) -> CUresult {
    NoteChanged("cuMemHostRegister not supported: INVALID_VALUE");
    return CUDA_ERROR_INVALID_VALUE;
  });
}

// R143: cuMemAdvise and cuMemPrefetchAsync (both ABIs) on page-locked host memory succeed and do
// nothing where r580 rejects the memory with INVALID_VALUE: the calls' return lists begin with
// CUDA_SUCCESS, "The memory range must refer to managed memory" names no code, and a prefetch
// "is not required for functionality and only serves to improve performance". Only a call whose
// other arguments are valid changes (a defined advice, a valid location or device, flags 0, a
// non-empty range whose first and last byte are page-locked); any other answer is forwarded.
bool ValidDevice(CUdevice d) {
  static const auto count = Real<CUresult(CUDAAPI*)(int*)>("cuDeviceGetCount");
  static const auto attr = Real<Real_DeviceGetAttribute>("cuDeviceGetAttribute");
  int n = 0, concurrent = 0;
  return count && attr && count(&n) == CUDA_SUCCESS && d >= 0 && d < n &&
         attr(&concurrent, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, d) == CUDA_SUCCESS &&
         concurrent;
}
bool ValidLocation(CUmemLocation l, bool host_numa) {
  switch (l.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return ValidDevice(l.id);
    case CU_MEM_LOCATION_TYPE_HOST: return true;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA: return host_numa && l.id >= 0;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: return host_numa;
    default: return false;
  }
}
// Advice 1, 2 and 4 ignore the location; 3 takes any location; 5 and 6 a device or the host.
bool ValidAdvice(CUmem_advise a, CUmemLocation l) {
  switch (a) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: return true;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION: return ValidLocation(l, true);
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY: return ValidLocation(l, false);
    default: return false;
  }
}
CUmemLocation LocationOf(CUdevice d) {
  CUmemLocation l{};
  l.type = d == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
  l.id = d == CU_DEVICE_CPU ? 0 : d;
  return l;
}
bool PinnedRange(CUdeviceptr p, size_t n) {
  return p && n && p + n > p && IsPinnedHost(reinterpret_cast<void*>(p)) &&
         IsPinnedHost(reinterpret_cast<void*>(p + n - 1));
}
CUresult HintOnPinnedSucceeds(CUresult r, bool valid, CUdeviceptr p, size_t n, const char* what) {
  if (r != CUDA_ERROR_INVALID_VALUE || !valid || !PinnedRange(p, n)) return r;
  NoteChanged(what);
  return CUDA_SUCCESS;
}
void InstallAdviseOnPinnedSucceeds() {
  HookMemAdvise([](Real_MemAdvise real, CUdeviceptr p, size_t n, CUmem_advise a,
                   CUdevice d) -> CUresult {
    return HintOnPinnedSucceeds(real(p, n, a, d), ValidAdvice(a, LocationOf(d)), p, n,
                                "cuMemAdvise on page-locked memory succeeds");
  });
  HookMemAdvise12([](Real_MemAdvise12 real, CUdeviceptr p, size_t n, CUmem_advise a,
                     CUmemLocation l) -> CUresult {
    return HintOnPinnedSucceeds(real(p, n, a, l), ValidAdvice(a, l), p, n,
                                "cuMemAdvise on page-locked memory succeeds");
  });
  HookMemPrefetchAsync([](Real_MemPrefetchAsync real, CUdeviceptr p, size_t n, CUdevice d,
                          CUstream s) -> CUresult {
    return HintOnPinnedSucceeds(real(p, n, d, s), ValidLocation(LocationOf(d), false), p, n,
                                "cuMemPrefetchAsync on page-locked memory succeeds");
  });
  HookMemPrefetchAsync12([](Real_MemPrefetchAsync12 real, CUdeviceptr p, size_t n,
                            CUmemLocation l, unsigned f, CUstream s) -> CUresult {
    return HintOnPinnedSucceeds(real(p, n, l, f, s), f == 0 && ValidLocation(l, true), p, n,
                                "cuMemPrefetchAsync on page-locked memory succeeds");
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
    PL_VARIATION("address_range_host_not_found", "R94", "interior", "code",
                 "cuMemGetAddressRange of page-locked host memory (allocated or registered) fails "
                 "with NOT_FOUND (r580: the block's range).",
                 InstallAddressRangeHostNotFound,
                 "13.0 cuMemGetAddressRange: \"Returns the base address in *pbase and size in "
                 "*psize of the allocation by ::cuMemAlloc() or ::cuMemAllocPitch() that contains "
                 "the input pointer\" (host memory not named) and lists CUDA_ERROR_NOT_FOUND"),
    PL_VARIATION("address_range_rounded_to_2mib", "R94,R95", "interior", "layout",
                 "cuMemGetAddressRange and RANGE_START_ADDR / RANGE_SIZE of device memory name "
                 "the range rounded out to 2 MiB boundaries (the same from every byte, padding "
                 "included) where no other allocation lies in the padding.",
                 InstallAddressRangeRoundedTo2MiB,
                 "13.0 CU_POINTER_ATTRIBUTE_RANGE_SIZE: \"this is not necessarily the size of the "
                 "mapped region, but the size of the mappable address range ptr references (e.g. "
                 "from ::cuMemAddressReserve)\"; cuMemGetAddressRange names \"the allocation ... "
                 "that contains the input pointer\" and documents no granularity"),
    PL_VARIATION("pool_trim_keeps_reserved", "R145", "mempools", "resource",
                 "cuMemPoolTrimTo succeeds and releases nothing: the pool keeps its reserved "
                 "memory.",
                 InstallPoolTrimKeepsReserved,
                 "13.0 cuMemPoolTrimTo: \"Releases memory back to the OS until the pool contains "
                 "fewer than minBytesToKeep reserved bytes, or there is no more memory that the "
                 "allocator can safely release.\""),
    PL_VARIATION("large_pin_refused", "R06,R47,R111,R113", "sizes", "code",
                 "cuMemHostAlloc, cuMemAllocHost and cuMemHostRegister of 1 GiB or more fail with "
                 "OUT_OF_MEMORY (cudaErrorMemoryAllocation), not sticky, nothing pinned.",
                 InstallLargePinRefused,
                 "13.0 cuMemHostAlloc / cuMemAllocHost / cuMemHostRegister list "
                 "CUDA_ERROR_OUT_OF_MEMORY (cudaHostAlloc / cudaHostRegister: "
                 "cudaErrorMemoryAllocation); no per-call minimum is documented (rules.tsv R111, "
                 "R113)"),
    PL_VARIATION("no_host_register_invalid_value", "R27,R105", "hostregister", "capability",
                 "HostRegisterSupported is 0 and cuMemHostRegister then fails with "
                 "INVALID_VALUE.",
                 InstallNoHostRegisterInvalidValue,
                 "13.0 cudaHostRegister: \"supported only on I/O coherent devices that have a "
                 "non-zero value for the device attribute cudaDevAttrHostRegisterSupported\" "
                 "names no code; cudaErrorInvalidValue is in its list (rules.tsv R27)"),
    PL_VARIATION("advise_on_pinned_succeeds", "R143", "mapped", "code",
                 "cuMemAdvise and cuMemPrefetchAsync on page-locked host memory succeed and do "
                 "nothing (r580: INVALID_VALUE).",
                 InstallAdviseOnPinnedSucceeds,
                 "13.0 cudaMemAdvise / cudaMemPrefetchAsync: the return lists begin with "
                 "cudaSuccess (\"must refer to managed memory\" names no code); prefetch: \"this "
                 "API is not required for functionality and only serves to improve performance\""),
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
