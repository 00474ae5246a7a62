// Probes of the 2D and 3D copy faults (catalogue/copies_2d_3d.cc).
#include <stdint.h>
#include <string.h>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

// copy3d_padded_slices_read_packed: "rc,mismatches" of a 2x2-row, 8-byte-wide box.
int Copy3DPaddedSlices() {
  auto copy3d = Get<CUresult (*)(const CUDA_MEMCPY3D*)>("cuMemcpy3D");
  auto copy3d_async = Get<CUresult (*)(const CUDA_MEMCPY3D*, CUstream)>("cuMemcpy3DAsync");
  auto mark_device = reinterpret_cast<void (*)(uintptr_t, size_t)>(FakeSymbol("fake_mark_device"));
  if (!copy3d || !copy3d_async || !mark_device) return 1;
  static unsigned char host3d[2 * 4 * 16], dev3d[2 * 4 * 16];
  mark_device(reinterpret_cast<uintptr_t>(dev3d), sizeof(dev3d));
  // src_rows/dst_rows: the slice heights (2 = packed, 4 = padded); depth: the slices copied.
  auto copied_3d = [&](bool host_to_device, size_t src_rows, size_t dst_rows, size_t depth, bool async) {
    for (size_t i = 0; i < sizeof(host3d); ++i) {
      host3d[i] = static_cast<unsigned char>(i * 7 + 3);
      dev3d[i] = static_cast<unsigned char>(0xf0 ^ i);
    }
    unsigned char* src = host_to_device ? host3d : dev3d;
    unsigned char* dst = host_to_device ? dev3d : host3d;
    unsigned char before[sizeof(host3d)];
    memcpy(before, src, sizeof(before));
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = host_to_device ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    c.srcHost = src;
    c.srcDevice = reinterpret_cast<CUdeviceptr>(src);
    c.srcPitch = 16;
    c.srcHeight = src_rows;
    c.dstMemoryType = host_to_device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    c.dstHost = dst;
    c.dstDevice = reinterpret_cast<CUdeviceptr>(dst);
    c.dstPitch = 16;
    c.dstHeight = dst_rows;
    c.WidthInBytes = 8;
    c.Height = 2;
    c.Depth = depth;
    CUresult rc = async ? copy3d_async(&c, kBlocking) : copy3d(&c);
    int bad = 0;
    for (size_t z = 0; z < depth; ++z)
      for (size_t y = 0; y < 2; ++y)
        for (size_t x = 0; x < 8; ++x)
          bad += dst[(z * dst_rows + y) * 16 + x] != before[(z * src_rows + y) * 16 + x];
    return std::to_string(rc) + "," + std::to_string(bad);
  };
  printf("copy3d_host_padded_src=%s copy3d_host_padded_src_async=%s copy3d_host_padded_dst=%s "
         "copy3d_host_packed=%s copy3d_host_padded_one_slice=%s copy3d_device_padded_src=%s\n",
         copied_3d(true, 4, 2, 2, false).c_str(), copied_3d(true, 4, 2, 2, true).c_str(),
         copied_3d(false, 2, 4, 2, false).c_str(), copied_3d(true, 2, 2, 2, false).c_str(),
         copied_3d(true, 4, 2, 1, false).c_str(), copied_3d(false, 4, 2, 2, false).c_str());
  return 0;
}

const Probe kProbes[] = {
    {"copy3d_padded_slices_read_packed", Copy3DPaddedSlices},
};

}  // namespace

extern const ProbeArea kCopies2D3DProbes = Probes("copies_2d_3d", kProbes);

}  // namespace probes
