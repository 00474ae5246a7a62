// Interleaved single-byte stores (peer-gap case 9, R78): byte i belongs to agent i % owners; each
// agent stores its bytes `rounds` times, with a different value per round, while the others do the
// same. A byte store must stay a byte store over the link: if it were widened into a
// read-modify-write of a word, a neighbour's byte would be overwritten with a stale value.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/pattern.h"

namespace pagelock {

// The value agent-owned byte i holds after round r.
PAGELOCK_HD inline unsigned char OwnedByte(size_t i, int round, uint32_t seed) {
  return PatternByte(i, seed ^ (static_cast<uint32_t>(round) * 0x9E3779B9u));
}

// Device agent `owner` of `owners`: volatile byte stores of OwnedByte(i, r, seed) to every byte
// i with i % owners == owner, for r = 0..rounds-1.
cudaError_t LaunchOwnedByteStores(unsigned char* p, size_t n, unsigned owners, unsigned owner,
                                  int rounds, uint32_t seed, cudaStream_t stream = 0);

}  // namespace pagelock
