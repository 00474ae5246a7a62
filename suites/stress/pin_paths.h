// The four ways to pin host memory, behind one interface for the stress scenarios:
// cudaHostAlloc, cudaHostRegister, cuMemHostAlloc, cuMemHostRegister (register paths pin a fresh
// anonymous mapping, untouched, so the registration faults the pages in). Each returns "ok" or
// the failing call's error name, and a device pointer.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <chrono>
#include <string>

#include "fixtures/driver_api.h"

namespace pagelock {

enum class Path { kHostAlloc, kHostRegister, kCuMemHostAlloc, kCuMemHostRegister };

inline const char* PathName(Path p) {
  switch (p) {
    case Path::kHostAlloc: return "cudaHostAlloc";
    case Path::kHostRegister: return "cudaHostRegister";
    case Path::kCuMemHostAlloc: return "cuMemHostAlloc";
    case Path::kCuMemHostRegister: return "cuMemHostRegister";
  }
  return "?";
}

inline bool ParsePath(const std::string& s, Path* p) {
  for (Path q : {Path::kHostAlloc, Path::kHostRegister, Path::kCuMemHostAlloc, Path::kCuMemHostRegister}) {
    if (s == PathName(q)) {
      *p = q;
      return true;
    }
  }
  return false;
}

inline bool IsDriverPath(Path p) { return p == Path::kCuMemHostAlloc || p == Path::kCuMemHostRegister; }
inline bool IsRegisterPath(Path p) { return p == Path::kHostRegister || p == Path::kCuMemHostRegister; }

inline std::string CuName(CUresult r) {
  const char* name = nullptr;
  if (Driver().cuGetErrorName && Driver().cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  return "CUresult " + std::to_string(static_cast<int>(r));
}

// "ok" or the error's name.
inline std::string Pin(Path path, size_t n, void** host, void** dev) {
  *host = nullptr;
  *dev = nullptr;
  void* map = nullptr;
  if (IsRegisterPath(path)) {
    // Not touched first: the registration faults the pages in (and is charged for them).
    map = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return "mmap failed";
  }
  switch (path) {
    case Path::kHostAlloc: {
      cudaError_t e = cudaHostAlloc(host, n, cudaHostAllocMapped);
      if (e != cudaSuccess) return cudaGetErrorName(e);
      e = cudaHostGetDevicePointer(dev, *host, 0);
      return e == cudaSuccess ? "ok" : std::string("devptr ") + cudaGetErrorName(e);
    }
    case Path::kHostRegister: {
      cudaError_t e = cudaHostRegister(map, n, cudaHostRegisterMapped);
      if (e != cudaSuccess) {
        munmap(map, n);
        return cudaGetErrorName(e);
      }
      *host = map;
      e = cudaHostGetDevicePointer(dev, *host, 0);
      return e == cudaSuccess ? "ok" : std::string("devptr ") + cudaGetErrorName(e);
    }
    case Path::kCuMemHostAlloc: {
      CUresult r = Driver().cuMemHostAlloc(host, n, CU_MEMHOSTALLOC_DEVICEMAP);
      if (r != CUDA_SUCCESS) return CuName(r);
      CUdeviceptr d = 0;
      r = Driver().cuMemHostGetDevicePointer(&d, *host, 0);
      *dev = reinterpret_cast<void*>(d);
      return r == CUDA_SUCCESS ? "ok" : "devptr " + CuName(r);
    }
    case Path::kCuMemHostRegister: {
      CUresult r = Driver().cuMemHostRegister(map, n, CU_MEMHOSTREGISTER_DEVICEMAP);
      if (r != CUDA_SUCCESS) {
        munmap(map, n);
        return CuName(r);
      }
      *host = map;
      CUdeviceptr d = 0;
      r = Driver().cuMemHostGetDevicePointer(&d, *host, 0);
      *dev = reinterpret_cast<void*>(d);
      return r == CUDA_SUCCESS ? "ok" : "devptr " + CuName(r);
    }
  }
  return "?";
}

inline std::string Release(Path path, void* host, size_t n) {
  std::string result = "ok";
  switch (path) {
    case Path::kHostAlloc: {
      cudaError_t e = cudaFreeHost(host);
      if (e != cudaSuccess) result = cudaGetErrorName(e);
      break;
    }
    case Path::kHostRegister: {
      cudaError_t e = cudaHostUnregister(host);
      if (e != cudaSuccess) result = cudaGetErrorName(e);
      munmap(host, n);
      break;
    }
    case Path::kCuMemHostAlloc: {
      CUresult r = Driver().cuMemFreeHost(host);
      if (r != CUDA_SUCCESS) result = CuName(r);
      break;
    }
    case Path::kCuMemHostRegister: {
      CUresult r = Driver().cuMemHostUnregister(host);
      if (r != CUDA_SUCCESS) result = CuName(r);
      munmap(host, n);
      break;
    }
  }
  return result;
}

inline bool IsOutOfMemory(const std::string& e) {
  return e == "cudaErrorMemoryAllocation" || e == "CUDA_ERROR_OUT_OF_MEMORY";
}

inline double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

constexpr Path kAllPaths[] = {Path::kHostAlloc, Path::kHostRegister, Path::kCuMemHostAlloc,
                             Path::kCuMemHostRegister};

}  // namespace pagelock
