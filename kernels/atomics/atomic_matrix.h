// The atomics matrix kernel: every thread applies one CUDA atomic (op x type x scope) `iters`
// times to a word picked by the address pattern, and stores each returned old value, so the host
// can check the whole history (final value, unique old values, chain of updates). Operands and
// initial values are functions of a contribution id shared by host and device code, so host
// threads and other GPUs can join the same words with ids of their own.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#ifdef __CUDACC__
#define PAGELOCK_HD __host__ __device__
#else
#define PAGELOCK_HD
#endif

namespace pagelock {

enum class AtomicOp { kAdd, kSub, kExch, kMin, kMax, kInc, kDec, kCas, kAnd, kOr, kXor };
enum class AtomicType { kI32, kU32, kI64, kU64, kF32, kF64 };
enum class AtomicScope { kBlock, kDevice, kSystem };
enum class AddressPattern { kOneAddress, kAdjacentWords, kScattered };

// Every group of words spans 4 KiB: one address uses word 0, adjacent words 0..31, scattered
// words 128 bytes apart. Block scope gives every block a group of its own (block-scope atomics
// are only promised among one block's threads); device and system scope share group 0.
constexpr unsigned kGroupBytes = 4096;
constexpr unsigned kPatternWords = 32;
// A CAS loop gives up after this many failed attempts (every device spin is bounded).
constexpr unsigned kMaxCasAttempts = 1u << 20;

PAGELOCK_HD inline unsigned AtomicTypeBytes(AtomicType t) {
  return (t == AtomicType::kI64 || t == AtomicType::kU64 || t == AtomicType::kF64) ? 8 : 4;
}
PAGELOCK_HD inline bool AtomicTypeIsFloat(AtomicType t) {
  return t == AtomicType::kF32 || t == AtomicType::kF64;
}
PAGELOCK_HD inline bool AtomicTypeIsSigned(AtomicType t) {
  return t == AtomicType::kI32 || t == AtomicType::kI64;
}

// Word index (in units of the type) of contribution `slot` in `group`.
PAGELOCK_HD inline uint64_t AtomicWordIndex(AddressPattern p, AtomicType t, uint64_t group,
                                            uint64_t slot) {
  const unsigned bytes = AtomicTypeBytes(t);
  const uint64_t base = group * (kGroupBytes / bytes);
  switch (p) {
    case AddressPattern::kOneAddress: return base;
    case AddressPattern::kAdjacentWords: return base + slot % kPatternWords;
    default: return base + (slot % kPatternWords) * (128 / bytes);
  }
}

// A 64-bit bijection (odd multiply, xor, shift-xor are each invertible): distinct ids give
// distinct operands, which keeps min/max/exch histories checkable.
PAGELOCK_HD inline uint64_t AtomicMix(uint64_t id, uint64_t seed) {
  uint64_t x = (id ^ seed) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return x * 0xBF58476D1CE4E5B9ull;
}
PAGELOCK_HD inline uint64_t AtomicMix32(uint64_t id, uint64_t seed) {
  uint32_t x = static_cast<uint32_t>(id ^ seed) * 0x9E3779B1u;
  x ^= x >> 15;
  return static_cast<uint32_t>(x * 0x85EBCA6Bu);
}

// The operand of contribution `id`, as an integer; float types convert it with (T)(int64_t).
// inc/dec take the wrap limit; CAS ignores it (each CAS loop adds 1).
PAGELOCK_HD inline uint64_t AtomicOperand(AtomicOp op, AtomicType t, uint64_t id, uint64_t seed,
                                          uint32_t wrap) {
  const bool wide = AtomicTypeBytes(t) == 8;
  const uint64_t mix = wide ? AtomicMix(id, seed) : AtomicMix32(id, seed);
  const unsigned bit = static_cast<unsigned>(mix % (wide ? 64 : 32));
  switch (op) {
    case AtomicOp::kAdd:
    case AtomicOp::kSub:
    case AtomicOp::kCas: return 1;
    case AtomicOp::kExch: return id + 1;  // unique, and exact as a float below 2^24
    case AtomicOp::kMin:
    case AtomicOp::kMax:
    case AtomicOp::kXor: return mix;
    case AtomicOp::kInc:
    case AtomicOp::kDec: return wrap;
    case AtomicOp::kAnd: return ~(uint64_t{1} << bit);
    case AtomicOp::kOr: return uint64_t{1} << bit;
  }
  return 0;
}

struct AtomicLaunch {
  AtomicOp op = AtomicOp::kAdd;
  AtomicType type = AtomicType::kU32;
  AtomicScope scope = AtomicScope::kDevice;
  AddressPattern pattern = AddressPattern::kOneAddress;
  int blocks = 8;
  int threads = 128;
  int iters = 2;
  uint64_t id_base = 0;  // contribution ids of this launch: id_base + (block*threads+thread)*iters+k
  uint64_t seed = 0;
  uint32_t wrap = 0;  // inc/dec limit
  // When set, every thread first spins (at most timeout_cycles) until *go != 0, so several
  // agents start together. A thread that gives up counts in *failures and does no atomics.
  const unsigned* go = nullptr;
  unsigned long long timeout_cycles = 0;
};

// Slot and group of thread (block, thread) at iteration k: what AtomicWordIndex takes.
PAGELOCK_HD inline uint64_t AtomicLocalIndex(const AtomicLaunch& l, int block, int thread, int k) {
  return (static_cast<uint64_t>(block) * l.threads + thread) * l.iters + k;
}
PAGELOCK_HD inline uint64_t AtomicGroup(const AtomicLaunch& l, int block) {
  return l.scope == AtomicScope::kBlock ? static_cast<uint64_t>(block) : 0;
}
PAGELOCK_HD inline uint64_t AtomicSlot(int thread, int k) {
  return static_cast<uint64_t>(thread) + static_cast<uint64_t>(k) * 7;
}

// True where CUDA defines the op for the type (atomicAdd has no signed 64-bit overload, sub/inc/
// dec only 32-bit, min/max/and/or/xor no floats, exch/CAS no signed 64-bit).
bool AtomicDefined(AtomicOp op, AtomicType t);

// Runs the launch on `words` (a device-accessible pointer of the type's width). olds[local] gets
// the raw bits of each returned old value (zero-extended); failures (device memory, one counter)
// counts CAS loops that gave up and threads that never saw *go. Returns the launch error, or
// cudaErrorInvalidValue for an op the type does not define.
cudaError_t LaunchAtomicMatrix(const AtomicLaunch& l, void* words, unsigned long long* olds,
                               unsigned long long* failures, cudaStream_t stream = 0);

}  // namespace pagelock
