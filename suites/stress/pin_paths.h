// Four of the kit's pin routes (fixtures/host_kinds.h) behind one interface for the stress
// scenarios: cudaHostAlloc, cudaHostRegister, cuMemHostAlloc, cuMemHostRegister (register routes
// pin a fresh anonymous mapping, untouched, so the registration faults the pages in). Each returns
// "ok" or the failing call's error name, and a device pointer.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "fixtures/driver_api.h"
#include "fixtures/host_kinds.h"
#include "fixtures/mapping.h"

namespace pagelock {

// The routes the stress scenarios pin by.
constexpr PinRoute kStressRoutes[] = {PinRoute::kHostAlloc, PinRoute::kHostRegister, PinRoute::kCuMemHostAlloc,
                                      PinRoute::kCuMemHostRegister};

// One of kStressRoutes by its name (PinRouteName), as a scenario's argument names it.
inline bool ParseStressRoute(const std::string& s, PinRoute* p) {
  for (PinRoute q : kStressRoutes) {
    if (s == PinRouteName(q)) {
      *p = q;
      return true;
    }
  }
  return false;
}

inline std::string CuName(CUresult r) {
  const char* name = nullptr;
  if (Driver().cuGetErrorName && Driver().cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  return "CUresult " + std::to_string(static_cast<int>(r));
}

// "ok" or the error's name.
inline std::string Pin(PinRoute path, size_t n, void** host, void** dev) {
  *host = nullptr;
  *dev = nullptr;
  // A registration's memory: unmapped here if the registration fails, else the caller's (Release).
  Mapping own;
  void* map = nullptr;
  if (IsRegisterRoute(path)) {
    // Not touched first: the registration faults the pages in (and is charged for them).
    own = Mapping(n);
    if (!own) return "mmap failed";
    map = own.data();
  }
  switch (path) {
    case PinRoute::kHostAlloc: {
      cudaError_t e = cudaHostAlloc(host, n, cudaHostAllocMapped);
      if (e != cudaSuccess) return cudaGetErrorName(e);
      e = cudaHostGetDevicePointer(dev, *host, 0);
      return e == cudaSuccess ? "ok" : std::string("devptr ") + cudaGetErrorName(e);
    }
    case PinRoute::kHostRegister: {
      cudaError_t e = cudaHostRegister(map, n, cudaHostRegisterMapped);
      if (e != cudaSuccess) return cudaGetErrorName(e);
      *host = own.release();
      e = cudaHostGetDevicePointer(dev, *host, 0);
      return e == cudaSuccess ? "ok" : std::string("devptr ") + cudaGetErrorName(e);
    }
    case PinRoute::kCuMemHostAlloc: {
      CUresult r = Driver().cuMemHostAlloc(host, n, CU_MEMHOSTALLOC_DEVICEMAP);
      if (r != CUDA_SUCCESS) return CuName(r);
      CUdeviceptr d = 0;
      r = Driver().cuMemHostGetDevicePointer(&d, *host, 0);
      *dev = reinterpret_cast<void*>(d);
      return r == CUDA_SUCCESS ? "ok" : "devptr " + CuName(r);
    }
    case PinRoute::kCuMemHostRegister: {
      CUresult r = Driver().cuMemHostRegister(map, n, CU_MEMHOSTREGISTER_DEVICEMAP);
      if (r != CUDA_SUCCESS) return CuName(r);
      *host = own.release();
      CUdeviceptr d = 0;
      r = Driver().cuMemHostGetDevicePointer(&d, *host, 0);
      *dev = reinterpret_cast<void*>(d);
      return r == CUDA_SUCCESS ? "ok" : "devptr " + CuName(r);
    }
    default:
      break;  // not a stress route
  }
  return "?";
}

inline std::string Release(PinRoute path, void* host, size_t n) {
  std::string result = "ok";
  switch (path) {
    case PinRoute::kHostAlloc: {
      cudaError_t e = cudaFreeHost(host);
      if (e != cudaSuccess) result = cudaGetErrorName(e);
      break;
    }
    case PinRoute::kHostRegister: {
      cudaError_t e = cudaHostUnregister(host);
      if (e != cudaSuccess) result = cudaGetErrorName(e);
      if (munmap(host, n) != 0 && result == "ok") result = std::string("munmap: ") + std::strerror(errno);
      break;
    }
    case PinRoute::kCuMemHostAlloc: {
      CUresult r = Driver().cuMemFreeHost(host);
      if (r != CUDA_SUCCESS) result = CuName(r);
      break;
    }
    case PinRoute::kCuMemHostRegister: {
      CUresult r = Driver().cuMemHostUnregister(host);
      if (r != CUDA_SUCCESS) result = CuName(r);
      if (munmap(host, n) != 0 && result == "ok") result = std::string("munmap: ") + std::strerror(errno);
      break;
    }
    default:
      result = "?";  // not a stress route
      break;
  }
  return result;
}

inline bool IsOutOfMemory(const std::string& e) {
  return e == "cudaErrorMemoryAllocation" || e == "CUDA_ERROR_OUT_OF_MEMORY";
}

inline double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}


}  // namespace pagelock
