// Kernels for stream, synchronisation and bandwidth tests, behind host-callable launchers that
// return the launch error (cudaError_t). Every wait on the device is bounded by a timeout read
// from %globaltimer, and a kernel that gives up says so in a status word the host can read, so
// a broken driver turns into a failed case, never a hung GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/pattern.h"

namespace pagelock {

// Status words written by the bounded kernels (host-visible memory, zero-initialised by the
// caller): kKernelOk stays when the wait ended normally.
constexpr unsigned kKernelOk = 0;
constexpr unsigned kKernelTimedOut = 1;

// One thread spins for `ns` nanoseconds of %globaltimer, then ends.
cudaError_t LaunchDelay(uint64_t ns, cudaStream_t stream);

// Every thread spins for `ns` nanoseconds, then dst[i] = PatternByte(i, seed) for i < n.
// Long-running work whose result the host can check byte by byte.
cudaError_t LaunchDelayThenFill(void* dst, size_t n, uint32_t seed, uint64_t ns, cudaStream_t stream);

// One thread waits until *flag == want (volatile reads of host-visible memory), at most
// timeout_ns; on timeout it stores kKernelTimedOut into *status (if status is not null).
cudaError_t LaunchAwaitFlag(const unsigned* flag, unsigned want, uint64_t timeout_ns,
                            unsigned* status, cudaStream_t stream);

// How a polling kernel reads a host-written flag (LaunchAwaitFlagForm).
enum class PollForm {
  kVolatile = 0,         // volatile load
  kAtomicRefAcquire = 1, // cuda::atomic_ref<unsigned, cuda::thread_scope_system>::load(acquire)
  kRelaxedSysAsm = 2,    // PTX ld.relaxed.sys
  kPlainWithFence = 3,   // plain load followed by __threadfence_system() (no liveness promise)
  kPlain = 4,            // plain load (the compiler may hoist it: no liveness promise)
};

// One thread polls *flag with `form` until it equals want or timeout_ns passes; stores
// kKernelTimedOut into *status on timeout.
cudaError_t LaunchAwaitFlagForm(const unsigned* flag, unsigned want, PollForm form, uint64_t timeout_ns,
                                unsigned* status, cudaStream_t stream);

// Adds to *mismatches the number of i < n with p[i] != value (device-side check of a memset).
cudaError_t LaunchCountByteMismatches(const void* p, size_t n, unsigned char value,
                                      unsigned long long* mismatches, cudaStream_t stream);

// Adds to *mismatches the number of i < n with p[i] != PatternByte(i + base, seed): the check of
// a window that starts `base` bytes into a patterned source.
cudaError_t LaunchCountPatternMismatchesFrom(const void* p, size_t n, size_t base, uint32_t seed,
                                             unsigned long long* mismatches, cudaStream_t stream);

// dst[i] = PatternByte(i + base, seed) for i < n.
cudaError_t LaunchFillPatternFrom(void* dst, size_t n, size_t base, uint32_t seed,
                                  cudaStream_t stream);

// Copies n bytes with SM loads and stores (16-byte vectors when both pointers and n allow),
// `blocks` x 512 threads: the SM-copy path of the bandwidth suite (nvbandwidth's "SM" copies).
cudaError_t LaunchCopyKernel(void* dst, const void* src, size_t n, unsigned blocks,
                             cudaStream_t stream);

// A single thread follows `steps` links of a chain of 64-bit indices in `chain` (host-mapped
// memory: chain[i] is the index of the next element) and stores the elapsed %globaltimer ns in
// *elapsed_ns and the last index in *last: the host<->device latency of nvbandwidth.
cudaError_t LaunchPointerChase(const unsigned long long* chain, unsigned steps,
                               unsigned long long* elapsed_ns, unsigned long long* last,
                               cudaStream_t stream);

// Ping-pong with the host over mapped memory, `rounds` rounds: in round r (from 1) the device
// waits for *to_device == r (volatile + __threadfence_system), checks payload[0..words) ==
// r * 2654435761u + k, then writes reply[k] = ~payload[k], fences, and stores *to_host = r.
// Mismatching words are added to *bad; a wait longer than timeout_ns stores kKernelTimedOut in
// *status and ends the kernel. One block of 256 threads.
cudaError_t LaunchPingPong(const unsigned* to_device, unsigned* to_host, const unsigned* payload,
                           unsigned* reply, unsigned words, unsigned rounds, uint64_t timeout_ns,
                           unsigned* bad, unsigned* status, cudaStream_t stream);

// Token ring: participant `me` of `members` waits until *token % members == me, then increments
// it (plain volatile store after __threadfence_system, no read-modify-write), `laps` times.
cudaError_t LaunchTokenRing(unsigned* token, unsigned me, unsigned members, unsigned laps,
                            uint64_t timeout_ns, unsigned* status, cudaStream_t stream);

// Byte-granularity writes: for `rounds` rounds, every byte i with i % stride == owner gets
// (round & 0xff) ^ owner via single-byte stores; last round value is rounds - 1.
cudaError_t LaunchOwnerBytes(unsigned char* p, size_t n, unsigned stride, unsigned owner,
                             unsigned rounds, cudaStream_t stream);

}  // namespace pagelock
