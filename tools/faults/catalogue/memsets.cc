// Memsets of every width and shape (cuMemsetD8/D16/D32, 1D and 2D, sync and async).
#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// R77: memset writes the value everywhere but in the last byte (synchronous, 8- and 32-bit).
void InstallMemsetWrongLastByte() {
  HookMemsetD8([](Real_MemsetD8 real, CUdeviceptr d, unsigned char v, size_t n) -> CUresult {
    return ThenCorrupt(real(d, v, n), n, [&] { RealSetByte(d + n - 1, v ^ 0xff); });
  });
  HookMemsetD32([](Real_MemsetD32 real, CUdeviceptr d, unsigned int v, size_t n) -> CUresult {
    return ThenCorrupt(real(d, v, n), n, [&] {
      RealSetByte(d + 4 * n - 1, static_cast<unsigned char>(v >> 24) ^ 0xff);
    });
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
    return ThenCorrupt(real(d, v, n, st), n, [&] { RealSetByteAsync(d + n - 1, v ^ 0xff, st); });
  });
  HookMemsetD32Async([](Real_MemsetD32Async real, CUdeviceptr d, unsigned int v, size_t n,
                        CUstream st) -> CUresult {
    return ThenCorrupt(real(d, v, n, st), n, [&] {
      RealSetByteAsync(d + 4 * n - 1, static_cast<unsigned char>(v >> 24) ^ 0xff, st);
    });
  });
  HookMemsetD2D8Async([](Real_MemsetD2D8Async real, CUdeviceptr d, size_t pitch, unsigned char v,
                         size_t w, size_t h, CUstream st) -> CUresult {
    CUresult r = real(d, pitch, v, w, h, st);
    if (r == CUDA_SUCCESS && w && h) RealSetByteAsync(d + (h - 1) * pitch + w - 1, v ^ 0xff, st);
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

// R93: cuMemsetD16 with an odd count writes a wrong last element (the tail after the last
// 32-bit word is filled with the value's bytes swapped); even counts are exact.
void InstallMemsetD16OddCountWrongLast() {
  HookMemsetD16([](Real_MemsetD16 real, CUdeviceptr d, unsigned short v, size_t n) -> CUresult {
    return ThenCorrupt(real(d, v, n), n % 2, [&] {
      RealSetByte(d + 2 * n - 1, static_cast<unsigned char>(~(v >> 8)));
    });
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

// R93: a 32-bit 2D memset (cuMemsetD2D32, sync or async) of two rows or more whose row
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

// R122: a 16-bit 2D memset (cuMemsetD2D16, sync or async) any of whose rows crosses a
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

// R121: cuMemsetD16Async writes each 16-bit value with its two bytes swapped (the asynchronous
// path builds its fill pattern in the wrong byte order); cuMemsetD16, and values whose two
// bytes are equal, are right.
void InstallMemsetD16AsyncBytesSwapped() {
  HookMemsetD16Async([](Real_MemsetD16Async real, CUdeviceptr d, unsigned short v, size_t n,
                        CUstream st) -> CUresult {
    return real(d, static_cast<unsigned short>(v >> 8 | v << 8), n, st);
  });
}

const Fault kFaults[] = {
    PL_FAULT(10, "memset_wrong_last_byte", "R77", "hostalloc", "data", "baseline", "catalogue-1",
             "A synchronous memset (8/32-bit, 1D or 2D) writes a wrong last byte.",
             InstallMemsetWrongLastByte),
    PL_FAULT(11, "memset_truncated", "R77", "hostalloc", "data", "baseline", "catalogue-1",
             "A synchronous memset (8/32-bit, 1D or 2D) stops one element short of each row.",
             InstallMemsetTruncated),
    PL_FAULT(12, "memset_async_wrong_last_byte", "R77", "hostalloc", "data",
             "baseline", "catalogue-1",
             "An asynchronous memset writes a wrong last byte (in stream order).",
             InstallMemsetAsyncWrongLastByte),
    PL_FAULT(78, "memset_large_truncated", "S01", "streams", "data", "size", "shapes",
             "A memset of 64 MiB or more (8/32-bit, sync or async) leaves its last page unwritten.",
             InstallMemsetLargeTruncated),
    PL_FAULT(82, "memset_d16_odd_count_wrong_last", "R93", "memset", "data", "size", "shapes",
             "cuMemsetD16 with an odd count writes a wrong last element.",
             InstallMemsetD16OddCountWrongLast),
    PL_FAULT(83, "memset2d_padded_skips_last_row", "R92", "memset", "data", "size", "shapes",
             "A 2D memset whose pitch exceeds its width leaves the last row unwritten.",
             InstallMemset2DPaddedSkipsLastRow),
    PL_FAULT(84, "memset_unaligned_head_unwritten", "R120", "memset", "data", "size", "blind-9",
             "A byte memset of 16 bytes or more whose destination is not 8-byte aligned leaves its "
             "first byte unwritten.", InstallMemsetUnalignedHeadUnwritten),
    PL_FAULT(86, "memset2d32_narrow_padding_overwritten", "R93", "memset", "data",
             "size", "blind-10",
             "A 32-bit 2D memset of two rows or more whose row padding is narrower than the row "
             "writes its value into the padding between the rows.",
             InstallMemset2D32NarrowPaddingOverwritten),
    PL_FAULT(89, "memset2d16_page_crossing_row_skips_element", "R122", "memset", "data",
             "size", "blind-11",
             "A 16-bit 2D memset leaves unwritten, in each row that crosses a 4 KiB page boundary, "
             "the element that starts the new page.", InstallMemset2D16PageCrossingRowSkipsElement),
    PL_FAULT(106, "memset_d16_async_bytes_swapped", "R121", "memset", "data", "variant", "blind-9",
             "cuMemsetD16Async writes each 16-bit value with its two bytes swapped.",
             InstallMemsetD16AsyncBytesSwapped),
};

}  // namespace

extern const Area kMemsetsArea = FaultArea("memsets", kFaults);

}  // namespace pagelock_faults
