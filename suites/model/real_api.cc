#include <cuda_runtime.h>

#include <vector>

#include "kernels/access_kernels.h"
#include "kernels/pattern.h"
#include "suites/model/pinned_api.h"

namespace pagelock {
namespace {

// The model compares every returned error with its expectation, so a returned error has been
// checked: clear it from the thread's last-error slot (as EXPECT_CUDA_ERROR does). Left there,
// the next kernel launcher's cudaGetLastError() would return it as its own, and the property's
// health check would call it unchecked.
cudaError_t Returned(cudaError_t e) {
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e;
}

class RealPinnedApi : public PinnedApi {
 public:
  cudaError_t HostAlloc(void** p, size_t n, unsigned flags) override { return Returned(cudaHostAlloc(p, n, flags)); }
  cudaError_t FreeHost(void* p) override { return Returned(cudaFreeHost(p)); }
  cudaError_t HostRegister(void* p, size_t n, unsigned flags) override {
    return Returned(cudaHostRegister(p, n, flags));
  }
  cudaError_t HostUnregister(void* p) override { return Returned(cudaHostUnregister(p)); }
  cudaError_t HostGetDevicePointer(void** dev, void* p) override {
    return Returned(cudaHostGetDevicePointer(dev, p, 0));
  }
  cudaError_t HostGetFlags(unsigned* flags, void* p) override { return Returned(cudaHostGetFlags(flags, p)); }
  cudaError_t PointerGetAttributes(cudaPointerAttributes* a, const void* p) override {
    return Returned(cudaPointerGetAttributes(a, p));
  }
  cudaError_t DeviceRoundTrip(void* dev, size_t n, uint32_t seed, unsigned long long* bad) override {
    return Returned(DeviceRoundTripImpl(dev, n, seed, bad));
  }
  cudaError_t AsyncCopyRoundTrip(void* host, size_t n, uint32_t seed, size_t* bad) override {
    return Returned(AsyncCopyRoundTripImpl(host, n, seed, bad));
  }

 private:
  static cudaError_t DeviceRoundTripImpl(void* dev, size_t n, uint32_t seed, unsigned long long* bad) {
    unsigned long long* counter = nullptr;
    cudaError_t e = cudaMalloc(&counter, sizeof *counter);
    if (e != cudaSuccess) return e;
    if ((e = cudaMemset(counter, 0, sizeof *counter)) == cudaSuccess &&
        (e = LaunchCountPatternMismatches(dev, n, seed, counter)) == cudaSuccess &&
        (e = LaunchFillPattern(dev, n, ~seed)) == cudaSuccess &&
        (e = cudaDeviceSynchronize()) == cudaSuccess) {
      // copy-check: the mismatch count read back is the check; the model compares it
      e = cudaMemcpy(bad, counter, sizeof *bad, cudaMemcpyDeviceToHost);
    }
    const cudaError_t f = cudaFree(counter);
    return e != cudaSuccess ? e : f;
  }
  static cudaError_t AsyncCopyRoundTripImpl(void* host, size_t n, uint32_t seed, size_t* bad) {
    void* scratch = nullptr;
    cudaStream_t s = nullptr;
    cudaError_t e = cudaMalloc(&scratch, n);
    if (e != cudaSuccess) return e;
    if ((e = cudaStreamCreate(&s)) == cudaSuccess) {
      HostFillPattern(host, n, seed);
      if ((e = cudaMemcpyAsync(scratch, host, n, cudaMemcpyHostToDevice, s)) == cudaSuccess &&
          (e = cudaStreamSynchronize(s)) == cudaSuccess) {
        HostFillPattern(host, n, ~seed);
        if ((e = cudaMemcpyAsync(host, scratch, n, cudaMemcpyDeviceToHost, s)) == cudaSuccess &&
            (e = cudaStreamSynchronize(s)) == cudaSuccess) {
          *bad = HostCountPatternMismatches(host, n, seed);
        }
      }
      const cudaError_t d = cudaStreamDestroy(s);
      if (e == cudaSuccess) e = d;
    }
    const cudaError_t f = cudaFree(scratch);
    return e != cudaSuccess ? e : f;
  }
};

}  // namespace

std::unique_ptr<PinnedApi> MakeRealPinnedApi() { return std::make_unique<RealPinnedApi>(); }

}  // namespace pagelock
