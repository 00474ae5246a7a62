// The conforming variations (conforming.tsv): driver behaviours the CUDA 13.0 documentation
// allows but r580 does not show. A case that FAILs under one is a false alarm of the suite, not
// a driver fault. Each hook calls NoteChanged() when it really changed an answer, so a variation
// that never did is reported as not exercised instead of as passed. Each is narrow: it changes
// only the calls the documentation leaves open and forwards everything else untouched.
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include <tuple>

#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

constexpr unsigned kRegisterKnownFlags = 0xfu;   // PORTABLE|DEVICEMAP|IOMEMORY|READ_ONLY
constexpr unsigned kHostAllocKnownFlags = 0x7u;  // PORTABLE|DEVICEMAP|WRITECOMBINED

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
constexpr char kWaitLate[] = "wait returned 5 ms late";
void InstallWaitsReturnLate() {
  HookCtxSynchronize(&ThenSleep<5000, kWaitLate, Real_CtxSynchronize>);
  HookCtxSynchronize13(&ThenSleep<5000, kWaitLate, Real_CtxSynchronize13, CUcontext>);
  HookStreamSynchronize(&ThenSleep<5000, kWaitLate, Real_StreamSynchronize, CUstream>);
  HookEventSynchronize(&ThenSleep<5000, kWaitLate, Real_EventSynchronize, CUevent>);
}

// R76: synchronous copies and memsets return 1 ms after they completed (a synchronous call is
// bounded below, by its completion, never above).
constexpr char kCopyLate[] = "synchronous copy returned 1 ms late";
void InstallSyncCopiesReturnLate() {
  HookMemcpy(&ThenSleep<1000, kCopyLate, Real_Memcpy, CUdeviceptr, CUdeviceptr, size_t>);
  HookMemcpyHtoD(&ThenSleep<1000, kCopyLate, Real_MemcpyHtoD, CUdeviceptr, const void*, size_t>);
  HookMemcpyDtoH(&ThenSleep<1000, kCopyLate, Real_MemcpyDtoH, void*, CUdeviceptr, size_t>);
  HookMemcpyDtoD(&ThenSleep<1000, kCopyLate, Real_MemcpyDtoD, CUdeviceptr, CUdeviceptr, size_t>);
  HookMemsetD8(&ThenSleep<1000, kCopyLate, Real_MemsetD8, CUdeviceptr, unsigned char, size_t>);
  HookMemsetD32(&ThenSleep<1000, kCopyLate, Real_MemsetD32, CUdeviceptr, unsigned int, size_t>);
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

// Device memory that is not managed (cuMemAlloc and the like).
bool IsPlainDevice(CUdeviceptr p) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  unsigned managed = 1;
  return fn && IsDevice(p) && fn(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p) == CUDA_SUCCESS &&
         !managed;
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

const Fault kVariations[] = {
    PL_VARIATION(1, "iomemory_on_ram_not_permitted", "R44", "hostregister", "code",
                 "IoMemory on ordinary memory fails with NOT_PERMITTED (r580: INVALID_VALUE).",
                 InstallIoMemoryNotPermitted,
                 "13.0 CU_MEMHOSTREGISTER_IOMEMORY: \"It may return CUDA_ERROR_NOT_PERMITTED if "
                 "run as an unprivileged user, CUDA_ERROR_NOT_SUPPORTED on older Linux kernel "
                 "versions\"; semantics review 4"),
    PL_VARIATION(2, "iomemory_on_ram_not_supported", "R44", "hostregister", "code",
                 "IoMemory on ordinary memory fails with NOT_SUPPORTED (r580: INVALID_VALUE).",
                 InstallIoMemoryNotSupported,
                 "13.0 CU_MEMHOSTREGISTER_IOMEMORY: \"... CUDA_ERROR_NOT_SUPPORTED on older Linux "
                 "kernel versions\"; semantics review 4"),
    PL_VARIATION(3, "register_pinned_already_registered", "R41", "hostregister", "code",
                 "Registering cuMemHostAlloc memory fails with HOST_MEMORY_ALREADY_REGISTERED "
                 "(r580: INVALID_VALUE).",
                 InstallRegisterPinnedAlreadyRegistered,
                 "712 enum text: \"the memory range passed to cudaHostRegister() has already been "
                 "registered\"; cuda-semantics R41 \"expect 1 or 712\"; semantics review 6"),
    PL_VARIATION(4, "unregister_pinned_not_registered", "R38", "hostregister", "code",
                 "Unregistering cuMemHostAlloc memory fails with HOST_MEMORY_NOT_REGISTERED (r580: "
                 "INVALID_VALUE).",
                 InstallUnregisterPinnedNotRegistered,
                 "713 enum text: \"does not correspond to any currently registered memory "
                 "region\"; semantics review 6 (R38: {1, 713})"),
    PL_VARIATION(5, "read_only_mapping_not_permitted", "R43", "hostregister", "code",
                 "Registering a PROT_READ mapping without ReadOnly fails with NOT_PERMITTED.",
                 InstallReadOnlyMappingOtherCode,
                 "13.0 cudaHostRegister: ReadOnly \"is required in order to register memory mapped "
                 "to the CPU as read-only\" (no code given; NOT_PERMITTED is in "
                 "cuMemHostRegister's return list); semantics review 6"),
    PL_VARIATION(6, "fault_code_launch_failed", "R42", "hostregister", "code",
                 "A kernel's invalid access is reported as LAUNCH_FAILED (r580: ILLEGAL_ADDRESS).",
                 InstallFaultCodeLaunchFailed,
                 "CU_MEMHOSTREGISTER_READ_ONLY: writes \"are considered invalid accesses and thus "
                 "return error\" (no code); 719 enum text: \"An exception occurred on the device "
                 "while executing a kernel\"; semantics review 6"),
    PL_VARIATION(7, "hostalloc_unknown_flags_not_supported", "R09", "hostalloc", "code",
                 "cuMemHostAlloc rejects undefined flag bits with NOT_SUPPORTED (r580: "
                 "INVALID_VALUE).",
                 InstallHostAllocUnknownFlagsNotSupported,
                 "13.0 cuMemHostAlloc/cudaHostAlloc define bits 0x1-0x4 and name no code for "
                 "others (rules.tsv R09: any failure); semantics review 6"),
    PL_VARIATION(8, "register_unknown_flags_not_supported", "R26", "hostregister", "code",
                 "cuMemHostRegister rejects undefined flag bits with NOT_SUPPORTED (r580: "
                 "INVALID_VALUE).",
                 InstallRegisterUnknownFlagsNotSupported,
                 "13.0 cuMemHostRegister defines bits 0x1-0x8, names no code for others and lists "
                 "CUDA_ERROR_NOT_SUPPORTED among its returns (rules.tsv R26); semantics review 6"),
    PL_VARIATION(9, "zero_size_allocates", "R11", "hostalloc", "layout",
                 "A zero-size pinned allocation succeeds with a real, freeable block (r580: null).",
                 InstallZeroSizeAllocates,
                 "No documentation of size 0; cuda-semantics R11: \"pointer value differs by "
                 "version ... expect success, and expect cudaFreeHost(ptr) to succeed\"; semantics "
                 "review 6"),
    PL_VARIATION(10, "allocation_64k_granular", "P01,R52", "hostalloc", "layout",
                 "Pinned allocations are made in 64 KiB units: larger alignment than r580's 512 B, "
                 "and one past the end is the block's own pinned padding.",
                 InstallAllocation64kGranular,
                 "13.0 cuMemHostAlloc: \"Allocates bytesize bytes of host memory that is "
                 "page-locked\" (at least, no layout promised); P01 asks alignof(max_align_t) "
                 "only; semantics review 6 (one past the end is undocumented)"),
    PL_VARIATION(11, "no_read_only_register", "R42", "hostregister", "capability",
                 "HostRegisterReadOnlySupported is 0 and the ReadOnly flag then fails with "
                 "NOT_SUPPORTED.",
                 InstallNoReadOnlyRegister,
                 "13.0 CU_MEMHOSTREGISTER_READ_ONLY: \"Using this flag with a current context "
                 "associated with a device that does not have this attribute set will cause "
                 "cuMemHostRegister to error with CUDA_ERROR_NOT_SUPPORTED\""),
    PL_VARIATION(12, "no_host_register", "R27,R26,R29,R30,R33,R45", "hostregister", "capability",
                 "HostRegisterSupported is 0 and cuMemHostRegister then fails with NOT_SUPPORTED.",
                 InstallNoHostRegister,
                 "13.0 cudaHostRegister: \"supported only on I/O coherent devices that have a "
                 "non-zero value for the device attribute cudaDevAttrHostRegisterSupported\"; "
                 "cuMemHostRegister lists CUDA_ERROR_NOT_SUPPORTED (rules.tsv R27)"),
    PL_VARIATION(13, "completion_delayed", "R77,S03", "streams", "timing",
                 "Work on explicit streams completes 2 ms later (stream-ordered host delay after "
                 "each copy, memset and launch, before each event record); answers stay truthful.",
                 InstallCompletionDelayed,
                 "13.0 cuStreamQuery/cuEventQuery report completion when the work is done and "
                 "promise no time; asynchronous calls \"may return before the ... is complete\" "
                 "(API synchronization behavior): nothing bounds how long the work takes"),
    PL_VARIATION(14, "waits_return_late", "R77,S03", "streams", "timing",
                 "cuCtxSynchronize, cuStreamSynchronize and cuEventSynchronize return 5 ms after "
                 "the work completed.",
                 InstallWaitsReturnLate,
                 "13.0 cuStreamSynchronize: \"Waits until the device has completed all operations "
                 "in the stream\"; a wait is bounded below (never before completion), not above"),
    PL_VARIATION(15, "sync_copies_return_late", "R76", "streams", "timing",
                 "Synchronous copies and memsets (cuMemcpy*, cuMemsetD8/D32) return 1 ms after "
                 "they completed.",
                 InstallSyncCopiesReturnLate,
                 "13.0 API synchronization behavior: a synchronous copy returns once the copy has "
                 "completed (for pageable memory: once staged); no text bounds how soon (rules.tsv "
                 "R76: \"it may be synchronous\")"),
    PL_VARIATION(16, "register_overlap_per_page", "R32,R30", "hostregister", "overlap",
                 "A registration that shares a page but no byte with an existing one fails with "
                 "HOST_MEMORY_ALREADY_REGISTERED (overlap judged per page).",
                 InstallOverlapPerPage,
                 "Undocumented (semantics review 6: \"The docs do not say whether overlap is "
                 "judged per byte or per page\"); rules.tsv R32 is an observation"),
    PL_VARIATION(17, "set_flags_beside_driver_context_708", "R66", "deviceflags", "code",
                 "With a non-primary driver context current, cuDevicePrimaryCtxSetFlags fails with "
                 "708 (the runtime's cudaErrorSetOnActiveProcess; r580's runtime answers 49).",
                 InstallSetFlagsBesideDriverContext,
                 "708 enum text: \"This error can also be returned if using runtime/driver "
                 "interoperability and there is an existing CUcontext active on the host thread\"; "
                 "semantics review 3"),
    PL_VARIATION(18, "address_range_host_not_found", "R94", "interior", "code",
                 "cuMemGetAddressRange of page-locked host memory (allocated or registered) fails "
                 "with NOT_FOUND (r580: the block's range).",
                 InstallAddressRangeHostNotFound,
                 "13.0 cuMemGetAddressRange: \"Returns the base address in *pbase and size in "
                 "*psize of the allocation by ::cuMemAlloc() or ::cuMemAllocPitch() that contains "
                 "the input pointer\" (host memory not named) and lists CUDA_ERROR_NOT_FOUND"),
    PL_VARIATION(19, "address_range_rounded_to_2mib", "R94,R95", "interior", "layout",
                 "cuMemGetAddressRange and RANGE_START_ADDR / RANGE_SIZE of device memory name the "
                 "range rounded out to 2 MiB boundaries (the same from every byte, padding "
                 "included) where no other allocation lies in the padding.",
                 InstallAddressRangeRoundedTo2MiB,
                 "13.0 CU_POINTER_ATTRIBUTE_RANGE_SIZE: \"this is not necessarily the size of the "
                 "mapped region, but the size of the mappable address range ptr references (e.g. "
                 "from ::cuMemAddressReserve)\"; cuMemGetAddressRange names \"the allocation ... "
                 "that contains the input pointer\" and documents no granularity"),
    PL_VARIATION(20, "pool_trim_keeps_reserved", "R145", "mempools", "resource",
                 "cuMemPoolTrimTo succeeds and releases nothing: the pool keeps its reserved "
                 "memory.",
                 InstallPoolTrimKeepsReserved,
                 "13.0 cuMemPoolTrimTo: \"Releases memory back to the OS until the pool contains "
                 "fewer than minBytesToKeep reserved bytes, or there is no more memory that the "
                 "allocator can safely release.\""),
    PL_VARIATION(21, "large_pin_refused", "R06,R47,R111,R113", "sizes", "code",
                 "cuMemHostAlloc, cuMemAllocHost and cuMemHostRegister of 1 GiB or more fail with "
                 "OUT_OF_MEMORY (cudaErrorMemoryAllocation), not sticky, nothing pinned.",
                 InstallLargePinRefused,
                 "13.0 cuMemHostAlloc / cuMemAllocHost / cuMemHostRegister list "
                 "CUDA_ERROR_OUT_OF_MEMORY (cudaHostAlloc / cudaHostRegister: "
                 "cudaErrorMemoryAllocation); no per-call minimum is documented (rules.tsv R111, "
                 "R113)"),
    PL_VARIATION(22, "no_host_register_invalid_value", "R27,R105", "hostregister", "capability",
                 "HostRegisterSupported is 0 and cuMemHostRegister then fails with INVALID_VALUE.",
                 InstallNoHostRegisterInvalidValue,
                 "13.0 cudaHostRegister: \"supported only on I/O coherent devices that have a "
                 "non-zero value for the device attribute cudaDevAttrHostRegisterSupported\" names "
                 "no code; cudaErrorInvalidValue is in its list (rules.tsv R27)"),
    PL_VARIATION(23, "advise_on_pinned_succeeds", "R143", "mapped", "code",
                 "cuMemAdvise and cuMemPrefetchAsync on page-locked host memory succeed and do "
                 "nothing (r580: INVALID_VALUE).",
                 InstallAdviseOnPinnedSucceeds,
                 "13.0 cudaMemAdvise / cudaMemPrefetchAsync: the return lists begin with "
                 "cudaSuccess (\"must refer to managed memory\" names no code); prefetch: \"this "
                 "API is not required for functionality and only serves to improve performance\""),
};

}  // namespace

extern const Area kConformingArea = VariationArea("conforming", kVariations);

}  // namespace pagelock_faults
