// Kernels of the size suites, behind host-callable launchers that return the launch error
// (cudaError_t); completion is the caller's stream synchronisation. Every kernel takes the
// pattern index of its first byte (`first`), so a window at any offset of a buffer, past 4 GiB
// too, is filled and checked with the indices of the buffer (SizeByte, size_pattern.h). 64-bit
// loads and stores where the pointer and the index agree modulo 8, bytes elsewhere.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/sizes/size_pattern.h"

namespace pagelock {

// p[i] = SizeByte(first + i, seed) for i in [0, n).
cudaError_t LaunchFillSizePattern(void* p, size_t n, uint64_t first, uint64_t seed,
                                  cudaStream_t stream = 0);

// Adds to *mismatches (device-accessible) the number of i in [0, n) with
// p[i] != SizeByte(first + i, seed).
cudaError_t LaunchCountSizePatternMismatches(const void* p, size_t n, uint64_t first, uint64_t seed,
                                             unsigned long long* mismatches, cudaStream_t stream = 0);

// p[i] = value for i in [0, n) (guard bytes, written by a kernel so no memset needs a check).
cudaError_t LaunchFillBytes(void* p, size_t n, unsigned char value, cudaStream_t stream = 0);

// Adds to *mismatches the number of bytes of [p, p + n) that are not `value`.
cudaError_t LaunchCountBytesNot(const void* p, size_t n, unsigned char value,
                                unsigned long long* mismatches, cudaStream_t stream = 0);

}  // namespace pagelock
