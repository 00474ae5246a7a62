// Kernels for tearing and host/device publication on mapped host memory. Every device
// spin is bounded by a cycle budget; launchers return the launch error.
#pragma once

#include <cuda_runtime_api.h>

namespace pagelock {

// For `iters` rounds, every thread stores all-zero then all-one words to its 8-byte slot
// slots8[i] and 4-byte slot slots4[i] (n slots each, naturally aligned).
cudaError_t LaunchAlternatingStores(unsigned long long* slots8, unsigned* slots4, int n, int iters,
                                    cudaStream_t stream = 0);

// One thread: data[i] = value for i < n, __threadfence_system(), then *flag = 1.
cudaError_t LaunchPublish(unsigned* data, int n, unsigned value, unsigned* flag,
                          cudaStream_t stream = 0);

// One thread spins on *flag (volatile) for at most timeout_cycles; then *status = 1 if it saw the
// flag (and *sum = sum of data[0..n)), 2 if it timed out.
cudaError_t LaunchAwaitFlag(const unsigned* flag, const unsigned* data, int n,
                            unsigned long long timeout_cycles, unsigned long long* sum,
                            unsigned* status, cudaStream_t stream = 0);

}  // namespace pagelock
