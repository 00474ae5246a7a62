// Byte transforms of the random stream/event DAG property (suites/streams/dag_prop_test.cc),
// behind host-callable launchers that return the launch error. The host model applies the same
// functions (DagTwist is shared), so a kernel's bytes are predicted exactly.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/pattern.h"  // PAGELOCK_HD

namespace pagelock {

// The byte "copy with a twist" writes for source byte v at window index i.
PAGELOCK_HD inline unsigned char DagTwist(unsigned char v, size_t i, uint32_t key) {
  const unsigned char r = static_cast<unsigned char>((v << 3) | (v >> 5));
  return static_cast<unsigned char>(r ^ static_cast<unsigned char>(key + 31u * static_cast<uint32_t>(i)));
}

// p[i] += add for i < n (p: device memory or the device alias of mapped host memory).
cudaError_t LaunchDagAdd(unsigned char* p, size_t n, unsigned char add, cudaStream_t stream);

// dst[i] = DagTwist(src[i], i, key) for i < n; the windows must not overlap.
cudaError_t LaunchDagTwistCopy(unsigned char* dst, const unsigned char* src, size_t n, uint32_t key,
                               cudaStream_t stream);

}  // namespace pagelock
