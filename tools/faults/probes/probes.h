// The probes of shim_client: calls inside and beside the trigger of a fault (or the answers a
// conforming variation changes), each printed as key=value against the fake driver
// (testdata/fake_libcuda.c, which answers as r580 does). shim_test.py runs them under the shim,
// clean and under each fault, and checks that a fault changes exactly the answers inside its
// trigger.
//
// One file per area of the catalogue (probes/<area>.cc, the area's name as in catalogue/), each
// ending with its table: `extern const ProbeArea k<Area>Probes = Probes("<area>", kProbes);`,
// listed once in shim_client.cc. A probe returns 0, or 1 when the driver lacks an entry it needs.
#ifndef PAGELOCK_TOOLS_FAULTS_PROBES_PROBES_H_
#define PAGELOCK_TOOLS_FAULTS_PROBES_PROBES_H_

#include <cuda.h>
#include <stdio.h>

#include <cstddef>
#include <string>

namespace probes {

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

extern void* g_lib;     // the library under test (the shim, or the fake driver itself)
extern GetProc g_gpa;   // its cuGetProcAddress_v2

// A driver function as the runtime asks for it (null, with a "missing=" line, when absent).
template <typename Fn>
Fn Get(const char* name, int version = 13000) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = g_gpa(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &st);
  if (r != CUDA_SUCCESS || !fn) {
    printf("missing=%s rc=%d status=%d\n", name, r, st);
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

// What the fake driver exposes about itself (through the real library the shim loaded).
void* FakeSymbol(const char* name);
double NowMs();

// Handles the fake driver knows: created streams (not the special handles CU_STREAM_LEGACY = 0x1,
// CU_STREAM_PER_THREAD = 0x2) and two contexts.
inline const CUstream kBlocking = reinterpret_cast<CUstream>(0x10);
inline const CUstream kNonBlocking = reinterpret_cast<CUstream>(0x20);  // CU_STREAM_NON_BLOCKING
inline const CUstream kCapturing = reinterpret_cast<CUstream>(0xCA);    // being captured
inline const CUcontext kContextA = reinterpret_cast<CUcontext>(0x1234);
inline const CUcontext kContextB = reinterpret_cast<CUcontext>(0x5678);
constexpr size_t kPage = 4096;

// Copies between a host buffer and a "device" one of 256 bytes each (the fake driver copies
// into memory marked as device): "rc,mismatches" of the first n bytes after `copy`, both
// buffers filled with their patterns first.
unsigned char* CopyDevice();
unsigned char* CopyHost();
template <typename F>
std::string Copied(size_t n, F&& copy) {
  unsigned char* dev = CopyDevice();
  unsigned char* host = CopyHost();
  for (int i = 0; i < 256; ++i) {
    host[i] = static_cast<unsigned char>(i * 7 + 1);
    dev[i] = static_cast<unsigned char>(0xff - i);
  }
  CUresult r = copy();
  int bad = 0;
  for (size_t i = 0; i < n; ++i) bad += dev[i] != host[i];
  return std::to_string(r) + "," + std::to_string(bad);
}

struct Probe {
  const char* fault;  // the fault (or variations) whose trigger it calls
  int (*run)();
};
struct ProbeArea {
  const char* name;
  const Probe* probes;
  size_t count;
};
template <size_t N>
constexpr ProbeArea Probes(const char* name, const Probe (&probes)[N]) {
  return {name, probes, N};
}

// The conforming variations' answers, one process (shim_client variations): those of
// probes/conforming.cc, then PlatformVariations() (probes/conforming_platforms.cc).
int Variations();
int PlatformVariations();

}  // namespace probes

#endif  // PAGELOCK_TOOLS_FAULTS_PROBES_PROBES_H_
