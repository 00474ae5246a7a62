// s26: cuMemcpyBatchAsync as CUDA 12.8 declared it (reached at version 12080, with failIdx):
// "failIdx - Pointer to a location to return the index of the copy where a failure was
// encountered. The value will be SIZE_MAX if the error doesn't pertain to any specific copy."
// A batch on the legacy NULL stream is refused; on driver 580 failIdx is then left as it was.
// The driver API is reached through the runtime, so plain nvcc.
//   nvcc s26.cu -o s26 && ./s26     exit 0: as documented; 1: the deviation; 2: no test
// docs/platforms/driver-r580.md#s26
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>

// The 12.8 form: dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, stream.
typedef CUresult (*Batch12080)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*, size_t*, size_t,
                               size_t*, CUstream);

int main() {
  cudaFree(0);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
#if CUDART_VERSION >= 12050
  const cudaError_t e = cudaGetDriverEntryPointByVersion("cuMemcpyBatchAsync", &fn, 12080, cudaEnableDefault, &q);
#else
  const cudaError_t e = cudaErrorNotSupported;
#endif
  if (e != cudaSuccess || !fn) {
    printf("cuMemcpyBatchAsync (12080) not found\n");
    return 2;
  }
  void *host = nullptr, *dev = nullptr;
  if (cudaMallocHost(&host, 4096) != cudaSuccess || cudaMalloc(&dev, 4096) != cudaSuccess) {
    printf("no memory to copy\n");
    return 2;
  }
  CUdeviceptr dsts[] = {reinterpret_cast<CUdeviceptr>(dev)}, srcs[] = {reinterpret_cast<CUdeviceptr>(host)};
  size_t sizes[] = {4096}, idxs[] = {0};
  CUmemcpyAttributes attr = {};
  attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  size_t fail = SIZE_MAX - 1;  // a value the driver must overwrite
  const CUresult r = reinterpret_cast<Batch12080>(fn)(dsts, srcs, sizes, 1, &attr, idxs, 1, &fail, nullptr);
  printf("NULL stream: result %d, failIdx %s\n", r, fail == SIZE_MAX ? "SIZE_MAX" : fail == SIZE_MAX - 1 ? "unwritten" : "a copy index");
  cudaFreeHost(host);
  cudaFree(dev);
  if (r == CUDA_SUCCESS) {
    printf("the NULL stream was accepted: nothing to judge\n");
    return 2;
  }
  if (fail != SIZE_MAX) {
    printf("DEVIATION s26: an error of no specific copy left failIdx %s\n", fail == SIZE_MAX - 1 ? "unwritten" : "naming a copy");
    return 1;
  }
  printf("as documented\n");
  return 0;
}
