// r03: CUDA 13.0's cudaPointerAttributes ends in "long reserved[8]; /**< Must be zero */". The
// 13.0 runtime writes process addresses into it (an uninitialised buffer copied into the
// caller's value-initialised struct).
//   nvcc r03.cu -o r03 && ./r03     exit 0: as documented; 1: the deviation; 2: no test
// docs/platforms/cuda-runtime.md#r03
#include <cuda_runtime.h>
#include <cstdio>

int main() {
#if CUDART_VERSION >= 13000
  void* p = nullptr;
  if (cudaHostAlloc(&p, 4096, cudaHostAllocMapped) != cudaSuccess) return 2;
  cudaPointerAttributes a{};
  cudaError_t e = cudaPointerGetAttributes(&a, p);
  int written = 0;
  for (long w : a.reserved) written += w != 0;
  printf("cudaPointerGetAttributes: %s, type %d; reserved words written: %d", cudaGetErrorName(e), a.type, written);
  for (long w : a.reserved) printf(" 0x%lx", static_cast<unsigned long>(w));
  printf("\n");
  cudaFreeHost(p);
  if (e != cudaSuccess) return 2;
  if (written) {
    printf("DEVIATION r03: the reserved tail that must be zero holds values\n");
    return 1;
  }
  printf("as documented\n");
  return 0;
#else
  printf("cudaPointerAttributes has no reserved tail before CUDA 13.0 (built with %d)\n", CUDART_VERSION);
  return 2;
#endif
}
