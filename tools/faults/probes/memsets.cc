// Probes of the memset faults (catalogue/memsets.cc).
#include <string.h>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

// memset2d32_narrow_padding_overwritten: "rc,elements set,padding bytes written" of 32-bit 2D
// memsets whose row padding is narrower than the row (sync and async), wider, one row, none.
int Memset2D32NarrowPadding() {
  auto set2d = Get<CUresult (*)(CUdeviceptr, size_t, unsigned, size_t, size_t)>("cuMemsetD2D32");
  auto set2d_async =
      Get<CUresult (*)(CUdeviceptr, size_t, unsigned, size_t, size_t, CUstream)>("cuMemsetD2D32Async");
  if (!set2d || !set2d_async) return 1;
  static uint32_t grid[128];
  auto set_2d = [&](size_t pitch, size_t w, size_t h, bool async) {
    memset(grid, 0, sizeof(grid));
    const unsigned v = 0xa1b2c3d4u;
    const CUdeviceptr d = reinterpret_cast<CUdeviceptr>(grid);
    CUresult r = async ? set2d_async(d, pitch, v, w, h, kBlocking) : set2d(d, pitch, v, w, h);
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(grid);
    int set = 0, padding = 0;
    for (size_t y = 0; y < h; ++y) {
      for (size_t x = 0; x < w; ++x) set += memcmp(bytes + y * pitch + 4 * x, &v, 4) == 0;
      for (size_t b = 4 * w; b < pitch; ++b) padding += bytes[y * pitch + b] != 0;
    }
    return std::to_string(r) + "," + std::to_string(set) + "," + std::to_string(padding);
  };
  printf("memset2d32_narrow=%s memset2d32_narrow_async=%s memset2d32_wide=%s "
         "memset2d32_one_row=%s memset2d32_unpadded=%s\n",
         set_2d(24, 4, 3, false).c_str(), set_2d(24, 4, 3, true).c_str(),
         set_2d(40, 4, 3, false).c_str(), set_2d(24, 4, 1, false).c_str(),
         set_2d(16, 4, 3, false).c_str());
  return 0;
}

// memset2d16_page_crossing_row_skips_element: "rc,elements set,bytes written outside the rows".
int Memset2D16PageCrossing() {
  auto set2d16 = Get<CUresult (*)(CUdeviceptr, size_t, unsigned short, size_t, size_t)>("cuMemsetD2D16");
  auto set2d16_async = Get<CUresult (*)(CUdeviceptr, size_t, unsigned short, size_t, size_t, CUstream)>(
      "cuMemsetD2D16Async");
  if (!set2d16 || !set2d16_async) return 1;
  static unsigned char area[3 * 4096] __attribute__((aligned(4096)));
  auto set_16 = [&](size_t offset, size_t pitch, size_t w, size_t h, bool async) {
    memset(area, 0, sizeof(area));
    const unsigned short v = 0xa1b2;
    const CUdeviceptr d = reinterpret_cast<CUdeviceptr>(area + offset);
    CUresult rc = async ? set2d16_async(d, pitch, v, w, h, kBlocking) : set2d16(d, pitch, v, w, h);
    int set = 0, outside = 0;
    for (size_t b = 0; b < sizeof(area); ++b) {
      const bool in_row = b >= offset && (b - offset) / pitch < h && (b - offset) % pitch < 2 * w;
      if (in_row && (b - offset) % 2 == 0) set += memcmp(area + b, &v, 2) == 0;
      if (!in_row) outside += area[b] != 0;
    }
    return std::to_string(rc) + "," + std::to_string(set) + "," + std::to_string(outside);
  };
  // Rows of 100 values 256 bytes apart from 100 bytes before the first page's end: the first
  // row crosses into the second page; rows inside the first page do not cross.
  printf("memset2d16_crossing=%s memset2d16_crossing_async=%s memset2d16_inside=%s\n",
         set_16(kPage - 100, 256, 100, 3, false).c_str(),
         set_16(kPage - 100, 256, 100, 3, true).c_str(), set_16(0, 256, 100, 3, false).c_str());
  return 0;
}

const Probe kProbes[] = {
    {"memset2d32_narrow_padding_overwritten", Memset2D32NarrowPadding},
    {"memset2d16_page_crossing_row_skips_element", Memset2D16PageCrossing},
};

}  // namespace

extern const ProbeArea kMemsetsProbes = Probes("memsets", kProbes);

}  // namespace probes
