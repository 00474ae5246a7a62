// r90: cudaMemcpy3D between a host pointer and a CUDA array. The reference: srcPos and dstPos
// "are defined in units of each object's elements. The element for a host or device pointer is
// assumed to be unsigned char." So a host srcPos.x of 4 starts the copy 4 bytes into the host row.
// Runtimes 11.8 and 13.0 count it in array elements (16 bytes for a float array); the driver's
// cuMemcpy3D (srcXInBytes) counts bytes.
//   nvcc r90.cu -o r90 && ./r90     exit 0: as documented; 1: the deviation; 2: no test
// docs/platforms/cuda-runtime.md#r90
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>

int main() {
  const size_t width = 16, copied = 8, offset = 4;  // floats, floats, bytes
  cudaArray_t arr;
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
  if (cudaMalloc3DArray(&arr, &f, make_cudaExtent(width, 1, 1)) != cudaSuccess) return 2;
  unsigned char src[width * 4 + 32], back[width * 4] = {};
  for (size_t i = 0; i < sizeof src; ++i) src[i] = static_cast<unsigned char>(i);
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(back, sizeof back, width, 1);  // zero the array first
  p.dstArray = arr;
  p.extent = make_cudaExtent(width, 1, 1);
  p.kind = cudaMemcpyHostToDevice;
  cudaError_t e1 = cudaMemcpy3D(&p);
  p.srcPtr = make_cudaPitchedPtr(src, sizeof src, width, 1);
  p.srcPos = make_cudaPos(offset, 0, 0);
  p.extent = make_cudaExtent(copied, 1, 1);
  cudaError_t e2 = cudaMemcpy3D(&p);
  p = cudaMemcpy3DParms{};
  p.srcArray = arr;
  p.dstPtr = make_cudaPitchedPtr(back, sizeof back, width, 1);
  p.extent = make_cudaExtent(width, 1, 1);
  p.kind = cudaMemcpyDeviceToHost;
  cudaError_t e3 = cudaMemcpy3D(&p);
  cudaFreeArray(arr);
  if (e1 || e2 || e3) { printf("cudaMemcpy3D: %s %s %s\n", cudaGetErrorName(e1), cudaGetErrorName(e2), cudaGetErrorName(e3)); return 2; }
  printf("the array's first byte came from host byte %u (bytes: %zu, array elements: %zu)\n", back[0], offset, offset * 4);
  if (back[0] == offset * 4 && memcmp(back, src + offset * 4, copied * 4) == 0) {
    printf("DEVIATION r90: the host x offset was counted in array elements\n");
    return 1;
  }
  if (back[0] == offset && memcmp(back, src + offset, copied * 4) == 0) { printf("as documented\n"); return 0; }
  printf("the copied bytes came from neither offset\n");
  return 1;
}
