// Probes of the copy faults (catalogue/copies.cc).
#include <string.h>
#include <sys/mman.h>

#include "tools/faults/probes/probes.h"

namespace probes {
namespace {

// copy_past_4gib_host_offset_wraps: a registration of 4 GiB + 2 pages; which host bytes a copy
// at an offset past 4 GiB read ("high": its own, "low": 4 GiB lower) or wrote.
int CopyPast4GiB() {
  auto reg = Get<CUresult (*)(void*, size_t, unsigned)>("cuMemHostRegister");
  auto unreg = Get<CUresult (*)(void*)>("cuMemHostUnregister");
  auto htod = Get<CUresult (*)(CUdeviceptr, const void*, size_t)>("cuMemcpyHtoD");
  auto dtoh = Get<CUresult (*)(void*, CUdeviceptr, size_t)>("cuMemcpyDtoH");
  auto htod_async = Get<CUresult (*)(CUdeviceptr, const void*, size_t, CUstream)>("cuMemcpyHtoDAsync");
  auto dtoh_async = Get<CUresult (*)(void*, CUdeviceptr, size_t, CUstream)>("cuMemcpyDtoHAsync");
  auto copy_async = Get<CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream)>("cuMemcpyAsync");
  if (!reg || !unreg || !htod || !dtoh || !htod_async || !dtoh_async || !copy_async) return 1;
  unsigned char* dev = CopyDevice();
  const CUdeviceptr dp = reinterpret_cast<CUdeviceptr>(dev);
  const size_t k4G = size_t{1} << 32;
  unsigned char* big = static_cast<unsigned char*>(mmap(nullptr, k4G + 2 * kPage, PROT_READ | PROT_WRITE,
                                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (big == MAP_FAILED || reg(big, k4G + 2 * kPage, 0) != CUDA_SUCCESS) return 1;
  auto source_read = [&](unsigned char* at, auto&& copy) {
    memset(at, 0x22, 64);
    memset(at - k4G, 0x11, 64);
    memset(dev, 0, 64);
    CUresult r = copy(at);
    return std::to_string(r) + "," + (dev[0] == 0x22 ? "high" : dev[0] == 0x11 ? "low" : "none");
  };
  auto dest_written = [&](unsigned char* at, auto&& copy) {
    memset(at, 0, 64);
    memset(at - k4G, 0, 64);
    memset(dev, 0x44, 64);
    CUresult r = copy(at);
    return std::to_string(r) + "," + (at[0] == 0x44 ? "high" : at[-k4G] == 0x44 ? "low" : "none");
  };
  unsigned char* past = big + k4G + 16;
  printf("past4g_htod=%s", source_read(past, [&](unsigned char* a) { return htod(dp, a, 64); }).c_str());
  printf(" past4g_htod_async=%s",
         source_read(past, [&](unsigned char* a) { return htod_async(dp, a, 64, kBlocking); }).c_str());
  printf(" past4g_unified_async=%s",
         source_read(past, [&](unsigned char* a) {
           return copy_async(dp, reinterpret_cast<CUdeviceptr>(a), 64, kBlocking);
         }).c_str());
  printf(" past4g_dtoh=%s",
         dest_written(past + kPage, [&](unsigned char* a) { return dtoh(a, dp, 64); }).c_str());
  printf(" past4g_dtoh_async=%s",
         dest_written(past + kPage, [&](unsigned char* a) { return dtoh_async(a, dp, 64, kBlocking); }).c_str());
  // Below 4 GiB into the block: the bytes at the address asked for ("own").
  unsigned char* below = big + k4G - kPage + 16;
  memset(below, 0x33, 64);
  memset(dev, 0, 64);
  CUresult r = htod(dp, below, 64);
  printf(" below4g_htod=%d,%s\n", r, dev[0] == 0x33 ? "own" : "other");
  unreg(big);
  munmap(big, k4G + 2 * kPage);
  return 0;
}

const Probe kProbes[] = {
    {"copy_past_4gib_host_offset_wraps", CopyPast4GiB},
};

}  // namespace

extern const ProbeArea kCopiesProbes = Probes("copies", kProbes);

}  // namespace probes
