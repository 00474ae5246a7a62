// Synchronous and unified 1D copies (cuMemcpy, cuMemcpyHtoD, cuMemcpyDtoH; a few faults also
// hook the asynchronous entries where their trigger is a size or a kind of memory): bytes
// corrupted or cut short for real, through the real driver, or a copy that returns early.
#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// After a completed copy of n bytes: makes dst's last byte differ from src's (any memory kinds).
void CorruptLastByte(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (n == 0) return;
  unsigned char b = 0;
  if (RealCopy(Ptr(&b), src + n - 1, 1) != CUDA_SUCCESS) return;
  b ^= 0xff;
  RealCopy(dst + n - 1, Ptr(&b), 1);
}

// R76: a synchronous host-to-device copy delivers a wrong last byte.
void InstallHtodCorruptsLastByte() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    return ThenCorrupt(real(d, s, n), n, [&] { SetWrongByte(d, s, n - 1); });
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = IsHtoD(d, s);
    return ThenCorrupt(real(d, s, n), hit, [&] { CorruptLastByte(d, s, n); });
  });
}

// R76: a synchronous device-to-host copy delivers a wrong last byte.
void InstallDtohCorruptsLastByte() {
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    return ThenCorrupt(real(d, s, n), n, [&] { static_cast<unsigned char*>(d)[n - 1] ^= 0xff; });
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = IsDtoH(d, s);
    return ThenCorrupt(real(d, s, n), hit, [&] { CorruptLastByte(d, s, n); });
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

// R76: a synchronous device-to-host copy stops one byte short.
void InstallDtohTruncated() {
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    return real(d, s, n ? n - 1 : 0);
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    return real(d, s, n && IsDtoH(d, s) ? n - 1 : n);
  });
}

// R76: synchronous copies whose host side is page-locked memory (the direct DMA path, not the
// staged pageable one) deliver a wrong last byte, in either direction.
void InstallPinnedCopyCorrupts() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    const bool hit = n && IsPinnedHost(s);
    return ThenCorrupt(real(d, s, n), hit, [&] { SetWrongByte(d, s, n - 1); });
  });
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = n && IsPinnedHost(d);
    return ThenCorrupt(real(d, s, n), hit, [&] { static_cast<unsigned char*>(d)[n - 1] ^= 0xff; });
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = n && (IsPinnedHost(reinterpret_cast<void*>(d)) ||
                           IsPinnedHost(reinterpret_cast<void*>(s)));
    CUresult r = real(d, s, n);
    if (r == CUDA_SUCCESS && hit) CorruptLastByte(d, s, n);
    return r;
  });
}

CUresult RealCopyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  static const auto fn = Real<Real_MemcpyAsync>("cuMemcpyAsync");
  return fn ? fn(dst, src, n, s) : CUDA_ERROR_NOT_FOUND;
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

// S07: a host-to-device copy of 64 MiB or more (the size where a driver switches to another DMA
// path or splits the copy into chunks) delivers a wrong last byte; smaller copies are exact.
void InstallHtodLargeCorrupts() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    return ThenCorrupt(real(d, s, n), n >= 64 * kMiB, [&] { CorruptByteAt(d, Ptr(s), n - 1); });
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = n >= 64 * kMiB && IsHtoD(d, s);
    return ThenCorrupt(real(d, s, n), hit, [&] { CorruptByteAt(d, s, n - 1); });
  });
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    return ThenCorrupt(real(d, s, n, st), n >= 64 * kMiB, [&] {
      CorruptByteAtAsync(d, Ptr(s), n - 1, st);
    });
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const bool hit = n >= 64 * kMiB && IsHtoD(d, s);
    return ThenCorrupt(real(d, s, n, st), hit, [&] { CorruptByteAtAsync(d, s, n - 1, st); });
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

// S01: a synchronous copy of an odd number of bytes delivers a wrong last byte (the tail after
// the last whole word is mishandled); copies of even sizes are exact.
void InstallOddSizeCopyCorrupts() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    return ThenCorrupt(real(d, s, n), n % 2, [&] { CorruptByteAt(d, Ptr(s), n - 1); });
  });
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    return ThenCorrupt(real(d, s, n), n % 2, [&] {
      static_cast<unsigned char*>(d)[n - 1] ^= 0xff;
    });
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    return ThenCorrupt(real(d, s, n), n % 2, [&] { CorruptByteAt(d, s, n - 1); });
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
    return ThenCorrupt(real(d, s, n), hit, [&] { CorruptByteAt(d, Ptr(s), k); });
  });
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = n > k && IsPageable(d);
    return ThenCorrupt(real(d, s, n), hit, [&] { static_cast<unsigned char*>(d)[k] ^= 0xff; });
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    const bool hit = n > k && PageableCopy(d, s);
    return ThenCorrupt(real(d, s, n), hit, [&] { CorruptByteAt(d, s, k); });
  });
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    const bool hit = n > k && IsPageable(s);
    return ThenCorrupt(real(d, s, n, st), hit, [&] { CorruptByteAtAsync(d, Ptr(s), k, st); });
  });
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    const bool hit = n > k && IsPageable(d);
    return ThenCorrupt(real(d, s, n, st), hit, [&] { CorruptByteAtAsync(Ptr(d), s, k, st); });
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const bool hit = n > k && PageableCopy(d, s);
    return ThenCorrupt(real(d, s, n, st), hit, [&] { CorruptByteAtAsync(d, s, k, st); });
  });
}

// R114: a copy (synchronous or asynchronous, any host-device entry) whose host address
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
    return ThenCorrupt(real(d, s, n), hit, [&] { CorruptByteAt(d, s, n - 1); });
  });
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
    return ThenCorrupt(real(d, s, n), hit, [&] { CorruptByteAt(d, s, n - 1); });
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const bool hit = n && IsHtoD(d, s) && IsWriteCombined(HostView(s));
    return ThenCorrupt(real(d, s, n, st), hit, [&] { CorruptByteAtAsync(d, s, n - 1, st); });
  });
}

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
    return ThenCorrupt(real(d, s, n), hit, [&] { CorruptByteAt(d, s, n - 1); });
  });
}

// V11: a copy whose host range starts in page-locked memory and ends outside it (a registration
// seam) is refused as the seam-aware copy APIs document, but only after its first byte moved.
bool StartsPinnedEndsNot(const void* host, size_t n) {
  return n > 1 && IsPinnedHost(host) && !IsPinnedHost(static_cast<const unsigned char*>(host) + n - 1);
}

void InstallSeamCopyRefusedAfterPartialWrite() {
  HookMemcpyHtoD([](Real_MemcpyHtoD real, CUdeviceptr d, const void* s, size_t n) -> CUresult {
    if (!StartsPinnedEndsNot(s, n)) return real(d, s, n);
    real(d, s, 1);
    return CUDA_ERROR_INVALID_VALUE;
  });
  HookMemcpyDtoH([](Real_MemcpyDtoH real, void* d, CUdeviceptr s, size_t n) -> CUresult {
    if (!StartsPinnedEndsNot(d, n)) return real(d, s, n);
    real(d, s, 1);
    return CUDA_ERROR_INVALID_VALUE;
  });
  HookMemcpy([](Real_Memcpy real, CUdeviceptr d, CUdeviceptr s, size_t n) -> CUresult {
    const CUdeviceptr host = IsHtoD(d, s) ? s : IsDtoH(d, s) ? d : 0;
    if (!host || !StartsPinnedEndsNot(reinterpret_cast<const void*>(host), n)) return real(d, s, n);
    real(d, s, 1);
    return CUDA_ERROR_INVALID_VALUE;
  });
  HookMemcpyHtoDAsync([](Real_MemcpyHtoDAsync real, CUdeviceptr d, const void* s, size_t n,
                         CUstream st) -> CUresult {
    if (!StartsPinnedEndsNot(s, n)) return real(d, s, n, st);
    real(d, s, 1, st);
    return CUDA_ERROR_INVALID_VALUE;
  });
  HookMemcpyDtoHAsync([](Real_MemcpyDtoHAsync real, void* d, CUdeviceptr s, size_t n,
                         CUstream st) -> CUresult {
    if (!StartsPinnedEndsNot(d, n)) return real(d, s, n, st);
    real(d, s, 1, st);
    return CUDA_ERROR_INVALID_VALUE;
  });
  HookMemcpyAsync([](Real_MemcpyAsync real, CUdeviceptr d, CUdeviceptr s, size_t n,
                     CUstream st) -> CUresult {
    const CUdeviceptr host = IsHtoD(d, s) ? s : IsDtoH(d, s) ? d : 0;
    if (!host || !StartsPinnedEndsNot(reinterpret_cast<const void*>(host), n)) return real(d, s, n, st);
    real(d, s, 1, st);
    return CUDA_ERROR_INVALID_VALUE;
  });
}

const Fault kFaults[] = {
    PL_FAULT(1, "htod_corrupts_last_byte", "R76", "hostalloc", "data", "baseline", "catalogue-1",
             "A synchronous host-to-device copy delivers a wrong last byte.",
             InstallHtodCorruptsLastByte),
    PL_FAULT(2, "dtoh_corrupts_last_byte", "R76", "hostalloc", "data", "baseline", "catalogue-1",
             "A synchronous device-to-host copy delivers a wrong last byte.",
             InstallDtohCorruptsLastByte),
    PL_FAULT(3, "htod_truncated", "R76", "hostalloc", "data", "baseline", "catalogue-1",
             "A synchronous host-to-device copy stops one byte short.", InstallHtodTruncated),
    PL_FAULT(4, "dtoh_truncated", "R76", "hostalloc", "data", "baseline", "catalogue-1",
             "A synchronous device-to-host copy stops one byte short.", InstallDtohTruncated),
    PL_FAULT(5, "pinned_copy_corrupts", "R76", "hostalloc", "data", "baseline", "catalogue-1",
             "Synchronous copies to or from page-locked memory deliver a wrong last byte.",
             InstallPinnedCopyCorrupts),
    PL_FAULT(9, "dtoh_returns_early", "R77", "hostalloc", "sync", "baseline", "catalogue-1",
             "A synchronous device-to-host copy only queues the copy and returns.",
             InstallDtohReturnsEarly),
    PL_FAULT(73, "htod_large_corrupts", "S07", "bandwidth", "data", "size", "shapes",
             "A host-to-device copy of 64 MiB or more (sync or async) delivers a wrong last byte.",
             InstallHtodLargeCorrupts),
    PL_FAULT(74, "dtoh_gib_truncated", "C07", "stress", "data", "size", "shapes",
             "A device-to-host copy of 1 GiB or more stops one page short.",
             InstallDtohGibTruncated),
    PL_FAULT(75, "copy_crossing_2mib_corrupts", "S01", "streams", "data", "size", "shapes",
             "A synchronous copy whose destination crosses a 2 MiB-aligned address delivers a "
             "wrong byte at the boundary.", InstallCopyCrossing2MiBCorrupts),
    PL_FAULT(76, "copy_crossing_4gib_corrupts", "S01", "streams", "data", "size", "shapes",
             "A synchronous copy whose destination crosses a 4 GiB-aligned address delivers a "
             "wrong byte at the boundary.", InstallCopyCrossing4GiBCorrupts),
    PL_FAULT(79, "odd_size_copy_corrupts", "S01", "streams", "data", "size", "shapes",
             "A synchronous copy of an odd number of bytes delivers a wrong last byte.",
             InstallOddSizeCopyCorrupts),
    PL_FAULT(85, "pageable_copy_second_chunk_corrupts", "R112", "sizes", "data", "size", "blind-9",
             "A copy between the device and pageable host memory of more than 1 MiB delivers a "
             "wrong byte at offset 1 MiB.", InstallPageableCopySecondChunkCorrupts),
    PL_FAULT(88, "copy_past_4gib_host_offset_wraps", "R114", "sizes", "data", "size", "blind-10",
             "A copy whose host address lies 4 GiB or more into its page-locked block reads or "
             "writes the host bytes 4 GiB lower in the block.", InstallCopyPast4GiBHostOffsetWraps),
    PL_FAULT(100, "registered_copy_corrupts", "S01", "streams", "data", "variant", "shapes",
             "Synchronous copies to or from registered (not allocated) pinned memory deliver a "
             "wrong last byte.", InstallRegisteredCopyCorrupts),
    PL_FAULT(101, "write_combined_htod_corrupts", "S01", "streams", "data", "variant", "shapes",
             "Host-to-device copies from write-combined memory deliver a wrong last byte.",
             InstallWriteCombinedHtodCorrupts),
    PL_FAULT(115, "every_16th_htod_corrupts", "S01", "streams", "data", "stateful", "shapes",
             "Every 16th synchronous host-to-device copy delivers a wrong last byte.",
             InstallEvery16thHtodCorrupts),
    PL_FAULT(176, "seam_copy_refused_after_partial_write", "V11", "pagestates", "data", "variant",
             "refusals",
             "A copy whose host range starts in page-locked memory and ends outside it returns "
             "CUDA_ERROR_INVALID_VALUE after moving its first byte.",
             InstallSeamCopyRefusedAfterPartialWrite),
};

}  // namespace

extern const Area kCopiesArea = FaultArea("copies", kFaults);

}  // namespace pagelock_faults
