// r151: cuPointerGetAttributes (CUDA 13.0): "Unlike cuPointerGetAttribute, this function will
// not return an error when the ptr encountered is not a valid CUDA pointer. Instead, the
// attributes are assigned default NULL values and CUDA_SUCCESS is returned." On driver 580 a
// heap byte no context knows gets HOST_POINTER = its own address, and RANGE_START_ADDR and
// RANGE_SIZE are left unwritten. The driver API is reached through the runtime, so plain nvcc.
//   nvcc r151.cu -o r151 && ./r151     exit 0: as documented; 1: the deviation; 2: no test
// docs/platforms/driver-r580.md#r151
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

typedef CUresult (*GetAttributes)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);

int main() {
  cudaFree(0);  // a context, so the query has one to ask
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
#if CUDART_VERSION >= 12050
  const cudaError_t e = cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &fn, 7000, cudaEnableDefault, &q);
#else
  const cudaError_t e = cudaGetDriverEntryPoint("cuPointerGetAttributes", &fn, cudaEnableDefault, &q);
#endif
  if (e != cudaSuccess || !fn) {
    printf("cuPointerGetAttributes not found\n");
    return 2;
  }
  char* heap = static_cast<char*>(malloc(4096));
  uint64_t host_ptr, start, size;
  memset(&host_ptr, 0xa5, 8), memset(&start, 0xa5, 8), memset(&size, 0xa5, 8);
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_HOST_POINTER, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void* data[] = {&host_ptr, &start, &size};
  CUresult r = reinterpret_cast<GetAttributes>(fn)(3, attrs, data, reinterpret_cast<CUdeviceptr>(heap + 100));
  printf("result %d; HOST_POINTER 0x%llx (the byte is at %p), RANGE_START_ADDR 0x%llx, RANGE_SIZE 0x%llx\n", r,
         (unsigned long long)host_ptr, (void*)(heap + 100), (unsigned long long)start, (unsigned long long)size);
  free(heap);
  if (r != CUDA_SUCCESS) return 2;
  if (host_ptr || start || size) {
    printf("DEVIATION r151: not every attribute has its default NULL (0xa5a5... is a slot left unwritten)\n");
    return 1;
  }
  printf("as documented\n");
  return 0;
}
