// The handful of runtime calls the reference model drives, behind an interface: RealPinnedApi
// calls the CUDA runtime (and kernels), FakePinnedApi (fake_api.h) is an in-process fake of the
// documented behaviour, so the state machine itself can be tested without a GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace pagelock {

class PinnedApi {
 public:
  virtual ~PinnedApi() = default;
  virtual cudaError_t HostAlloc(void** p, size_t n, unsigned flags) = 0;
  virtual cudaError_t FreeHost(void* p) = 0;
  virtual cudaError_t HostRegister(void* p, size_t n, unsigned flags) = 0;
  virtual cudaError_t HostUnregister(void* p) = 0;
  virtual cudaError_t HostGetDevicePointer(void** dev, void* p) = 0;
  virtual cudaError_t HostGetFlags(unsigned* flags, void* p) = 0;
  virtual cudaError_t PointerGetAttributes(cudaPointerAttributes* a, const void* p) = 0;
  // A kernel reads n bytes through `dev`, counting bytes that differ from PatternByte(i, seed)
  // into *bad, then writes PatternByte(i, ~seed) there.
  virtual cudaError_t DeviceRoundTrip(void* dev, size_t n, uint32_t seed, unsigned long long* bad) = 0;
  // cudaMemcpyAsync host -> device scratch -> back to the host bytes (after the host overwrote
  // them) on a created stream; *bad counts bytes that did not come back.
  virtual cudaError_t AsyncCopyRoundTrip(void* host, size_t n, uint32_t seed, size_t* bad) = 0;
};

std::unique_ptr<PinnedApi> MakeRealPinnedApi();

}  // namespace pagelock
