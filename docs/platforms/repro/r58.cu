// r58: cudaHostGetFlags on memory from cudaHostRegister. The CUDA reference: it "will fail if
// the input pointer does not reside in an address range allocated by cudaHostAlloc()" (the error
// is cudaErrorInvalidValue). Driver 580 returns cudaSuccess and flags 0x2 (Mapped).
//   nvcc r58.cu -o r58 && ./r58     exit 0: as documented; 1: the deviation; 2: could not test
// docs/platforms/driver-r580.md#r58
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

int main() {
  const size_t n = 1 << 20;
  void* p = aligned_alloc(4096, n);
  cudaError_t e = cudaHostRegister(p, n, cudaHostRegisterMapped);
  if (e != cudaSuccess) { printf("cudaHostRegister: %s\n", cudaGetErrorName(e)); return 2; }
  unsigned int flags = 0;
  e = cudaHostGetFlags(&flags, p);
  printf("cudaHostGetFlags on registered memory: %s, flags 0x%x\n", cudaGetErrorName(e), flags);
  cudaHostUnregister(p);
  free(p);
  if (e == cudaSuccess) { printf("DEVIATION r58: succeeded; the reference says it fails\n"); return 1; }
  printf("as documented\n");
  return 0;
}
