/* A tiny fake driver for the shim's CPU tests: a few entry points over host memory, reachable
   directly and through cuGetProcAddress_v2 ("device" pointers are host addresses here). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
#define OK 0

CUresult cuInit(unsigned int flags) { return flags == 0 ? OK : 1; }
CUresult cuDriverGetVersion(int* v) { *v = 13000; return OK; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return OK; }
CUresult cuDeviceGetAttribute(int* v, int attr, int dev) { *v = 1000 + attr; return OK; }
CUresult cuMemHostAlloc(void** p, size_t n, unsigned int flags) {
  *p = malloc(n ? n : 1);
  return *p ? OK : 2;
}
CUresult cuMemFreeHost(void* p) { free(p); return OK; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) { memcpy((void*)(uintptr_t)d, s, n); return OK; }
CUresult cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) { memcpy(d, (const void*)(uintptr_t)s, n); return OK; }
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { memset((void*)(uintptr_t)d, v, n); return OK; }
CUresult cuCtxSynchronize(void) { return OK; }
/* Counts calls, so a test sees whether a "synchronise" really reached the driver. */
int fake_ctx_sync_calls = 0;
CUresult cuCtxSynchronize_counted(void) { ++fake_ctx_sync_calls; return OK; }

typedef struct { const char* name; void* fn; } Entry;
static const Entry kTable[] = {
    {"cuInit", (void*)cuInit},
    {"cuDriverGetVersion", (void*)cuDriverGetVersion},
    {"cuDeviceGetCount", (void*)cuDeviceGetCount},
    {"cuDeviceGetAttribute", (void*)cuDeviceGetAttribute},
    {"cuMemHostAlloc", (void*)cuMemHostAlloc},
    {"cuMemFreeHost", (void*)cuMemFreeHost},
    {"cuMemcpyHtoD", (void*)cuMemcpyHtoD_v2},
    {"cuMemcpyHtoD_v2", (void*)cuMemcpyHtoD_v2},
    {"cuMemcpyDtoH", (void*)cuMemcpyDtoH_v2},
    {"cuMemsetD8", (void*)cuMemsetD8_v2},
    {"cuCtxSynchronize", (void*)cuCtxSynchronize_counted},
};

CUresult cuGetProcAddress_v2(const char* sym, void** pfn, int version, unsigned long long flags,
                             int* status) {
  for (size_t i = 0; i < sizeof(kTable) / sizeof(kTable[0]); ++i) {
    if (strcmp(kTable[i].name, sym) == 0) {
      *pfn = kTable[i].fn;
      if (status) *status = 0;
      return OK;
    }
  }
  *pfn = 0;
  if (status) *status = 1;
  return 500; /* CUDA_ERROR_NOT_FOUND */
}
