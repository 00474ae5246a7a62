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
#include <stdlib.h>
#include <string.h>

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

// R40/R41: registering device memory or cuMemHostAlloc memory reports ALREADY_REGISTERED
// instead of INVALID_VALUE.
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

// R34/R38: an interior pointer or cuMemHostAlloc memory is reported NOT_REGISTERED instead of
// INVALID_VALUE.
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

#define PL_FAULT(name, rule, family, kind, text, install) {name, rule, family, kind, text, install}

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
    PL_FAULT("register_pinned_wrong_code", "R41", "hostregister", "error",
             "Registering pinned or device memory fails with ALREADY_REGISTERED, not "
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

}  // namespace

const Fault* Catalogue(size_t* count) {
  *count = sizeof(kFaults) / sizeof(kFaults[0]);
  return kFaults;
}

const Fault* FindFault(const char* name) {
  for (const Fault& f : kFaults)
    if (strcmp(f.name, name) == 0) return &f;
  return nullptr;
}

}  // namespace pagelock_faults
