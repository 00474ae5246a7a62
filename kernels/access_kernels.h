// Kernels that touch host memory through a device pointer, behind host-callable launchers that
// return cudaError_t (the launch error; completion is the caller's stream synchronisation).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/pattern.h"

namespace pagelock {

// dst[i] = PatternByte(i, seed) for i in [0, n).
cudaError_t LaunchFillPattern(void* dst, size_t n, uint32_t seed, cudaStream_t stream = 0);

// Adds to *mismatches (device-accessible) the number of i with src[i] != PatternByte(i, seed).
cudaError_t LaunchCountPatternMismatches(const void* src, size_t n, uint32_t seed,
                                         unsigned long long* mismatches, cudaStream_t stream = 0);

// p[i] = ~p[i]: a read and a write of every byte.
cudaError_t LaunchInvertBytes(void* p, size_t n, cudaStream_t stream = 0);

}  // namespace pagelock

