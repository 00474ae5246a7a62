// Kernels that load the SMs for the bandwidth suite, behind host-callable launchers that return
// the launch error (completion is the caller's stream synchronisation).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace pagelock {

// Threads per block of the SM copy in nvbandwidth's layout (its numThreadPerBlock).
constexpr unsigned kSmCopyThreads = 512;

// Copies n bytes from src to dst with SM loads and stores: `blocks` blocks of kSmCopyThreads
// threads, each thread moving 16-byte vectors one grid apart with 12 loads in flight before their
// stores (the memory-level parallelism a copy over PCIe needs), then the vectors left over and
// the bytes after the last whole vector, so every byte of [0, n) is copied. Both pointers must be
// 16-byte aligned (cudaErrorInvalidValue otherwise, nothing launched).
cudaError_t LaunchStridedCopy(void* dst, const void* src, size_t n, unsigned blocks, cudaStream_t stream);

// Status words of the compute load (host-visible memory, zeroed by the caller).
struct ComputeLoadStatus {
  unsigned started;              // 1 once the first block runs
  unsigned timed_out;            // 1 when the load ended on its timeout, not on the stop flag
  unsigned long long rounds;     // rounds of FMA chains, summed over the blocks
};

// Keeps every SM busy: `blocks` blocks of `threads` threads run dependent FMA chains (four per
// thread) until the host stores a non-zero *stop (mapped host memory, read by one thread of block
// 0 only, so the load adds no PCIe traffic of its own) or timeout_ns pass. Block 0 passes the stop
// on through *relay (device memory, zeroed by the caller), which the other blocks poll. `sink`
// (device memory, one float per block) keeps the chains from being optimised away.
cudaError_t LaunchComputeLoad(const unsigned* stop, unsigned* relay, ComputeLoadStatus* status, float* sink,
                              uint64_t timeout_ns, unsigned blocks, unsigned threads, cudaStream_t stream);

}  // namespace pagelock
