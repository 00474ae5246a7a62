// Kernels for the stress suites: word-wide fills and checks of multi-GiB pinned ranges through
// their device pointers. Launchers return the launch error; completion is the caller's
// synchronisation. `n_bytes` must be a multiple of 16 and `p` 16-byte aligned.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/stress/word_pattern.h"

namespace pagelock {

// p[i] = PatternWord(i, seed) for every 8-byte word i of [0, n_bytes).
cudaError_t LaunchFillWords(void* p, size_t n_bytes, uint64_t seed, cudaStream_t stream = 0);

// Adds to *mismatches the number of words with p[i] != PatternWord(i, seed).
cudaError_t LaunchCountWordMismatches(const void* p, size_t n_bytes, uint64_t seed,
                                      unsigned long long* mismatches, cudaStream_t stream = 0);

}  // namespace pagelock
