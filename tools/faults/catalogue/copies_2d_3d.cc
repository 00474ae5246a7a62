// Pitched 2D and 3D copies (cuMemcpy2D*, cuMemcpy3D*): rows, slices and positions mishandled.
#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

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

// R90: a 3D copy (cuMemcpy3D, sync or async) of two slices or more whose host side (a
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

const Fault kFaults[] = {
    PL_FAULT(91, "copy2d_padded_corrupts", "S01", "streams", "data", "variant", "shapes",
             "A 2D copy with padded rows (pitch > width) delivers a wrong last byte of its last "
             "row.", InstallCopy2DPaddedCorrupts),
    PL_FAULT(92, "copy2d_async_padded_loses_last_row", "S01", "streams", "data",
             "variant", "shapes",
             "An asynchronous 2D copy with padded rows copies one row too few.",
             InstallCopy2DAsyncPaddedLosesLastRow),
    PL_FAULT(93, "copy3d_last_slice_lost", "R90", "copies3d", "data", "variant", "shapes",
             "A 3D copy of several slices copies one slice too few.", InstallCopy3DLastSliceLost),
    PL_FAULT(94, "copy3d_source_position_ignored", "R90", "copies3d", "data", "variant", "shapes",
             "A 3D copy with a source position other than the origin reads from the origin.",
             InstallCopy3DSourcePositionIgnored),
    PL_FAULT(111, "copy3d_padded_slices_read_packed", "R90", "copies3d", "data",
             "variant", "blind-11",
             "A 3D copy of several slices whose host side has padded slices (slice height above "
             "the extent's) steps through that side's slices as if they were packed.",
             InstallCopy3DPaddedSlicesReadPacked),
};

}  // namespace

extern const Area kCopies2D3DArea = FaultArea("copies_2d_3d", kFaults);

}  // namespace pagelock_faults
