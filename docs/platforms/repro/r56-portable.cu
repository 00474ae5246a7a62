// r56-portable: cudaHostGetFlags returns "the flags that were specified when allocating"
// (cudaHostAlloc). On driver 580 a small Portable allocation made right after another one
// (they share a pinned chunk) reports the flags of the chunk's first allocation: 0x2, no Portable.
//   nvcc r56-portable.cu -o r56 && ./r56     exit 0: as documented; 1: the deviation; 2: no test
// docs/platforms/driver-r580.md#r56-portable
#include <cuda_runtime.h>
#include <cstdio>

int main() {
  void *a = nullptr, *b = nullptr;
  if (cudaHostAlloc(&a, 1, cudaHostAllocDefault) != cudaSuccess ||
      cudaHostAlloc(&b, 4097, cudaHostAllocPortable) != cudaSuccess) {
    printf("cudaHostAlloc failed\n");
    return 2;
  }
  unsigned int fa = 0, fb = 0;
  cudaError_t ea = cudaHostGetFlags(&fa, a), eb = cudaHostGetFlags(&fb, b);
  printf("1 B default: %s 0x%x; then 4097 B Portable: %s 0x%x\n", cudaGetErrorName(ea), fa, cudaGetErrorName(eb), fb);
  cudaFreeHost(b);
  cudaFreeHost(a);
  if (eb != cudaSuccess) return 2;
  if (!(fb & cudaHostAllocPortable)) {
    printf("DEVIATION r56-portable: the Portable allocation reports no Portable bit\n");
    return 1;
  }
  printf("as documented\n");
  return 0;
}
