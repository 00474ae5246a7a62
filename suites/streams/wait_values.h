// The values the 64-bit wait cases use, and the documented comparisons they are judged by, in a
// header of their own so a host test can show that each case separates a correct 64-bit wait
// from one that compares only the low 32 bits.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

namespace pagelock {
namespace memops64 {

enum class Op { kGeq, kEq, kAnd, kNor };
inline constexpr Op kOps[] = {Op::kGeq, Op::kEq, Op::kAnd, Op::kNor};

inline std::string OpName(Op o) {
  switch (o) {
    case Op::kGeq: return "GEQ";
    case Op::kEq: return "EQ";
    case Op::kAnd: return "AND";
    case Op::kNor: return "NOR";
  }
  return "Unknown";
}

inline unsigned OpFlag(Op o) {
  switch (o) {
    case Op::kGeq: return CU_STREAM_WAIT_VALUE_GEQ;
    case Op::kEq: return CU_STREAM_WAIT_VALUE_EQ;
    case Op::kAnd: return CU_STREAM_WAIT_VALUE_AND;
    case Op::kNor: return CU_STREAM_WAIT_VALUE_NOR;
  }
  return CU_STREAM_WAIT_VALUE_GEQ;
}

// cuda.h, CUstreamWaitValue_flags: GEQ "(int32_t)(*addr - value) >= 0 (or int64_t for 64 bit
// values)", EQ "*addr == value", AND "(*addr & value) != 0", NOR "~(*addr | value) != 0";
// `bits` 64 is the documented 64-bit wait, 32 a wrong one that compares the low halves only.
inline bool Satisfies(Op op, uint64_t word, uint64_t value, int bits) {
  if (bits == 32) {
    word &= 0xFFFFFFFFull;
    value &= 0xFFFFFFFFull;
  }
  switch (op) {
    case Op::kGeq:
      return bits == 32 ? static_cast<int32_t>(static_cast<uint32_t>(word - value)) >= 0
                        : static_cast<int64_t>(word - value) >= 0;
    case Op::kEq: return word == value;
    case Op::kAnd: return (word & value) != 0;
    case Op::kNor: {
      const uint64_t mask = bits == 32 ? 0xFFFFFFFFull : ~uint64_t{0};
      return (~(word | value) & mask) != 0;
    }
  }
  return false;
}

// The awaited value, the word's value before (the wait must hold), the value the host thread
// stores (it must pass), and a value that passes any correct comparison (the rescue). Chosen so
// that a wait on the low 32 bits decides differently: GEQ and EQ start with the low halves equal
// (a 32-bit wait passes at once), AND and NOR can only pass on a high-half bit (a 32-bit wait
// never passes).
struct WaitValues {
  uint64_t value, initial, release, rescue;
};
inline WaitValues ValuesFor(Op op, uint64_t r) {
  constexpr uint64_t kHigh = 0xFFFFFFFF00000000ull;
  switch (op) {
    case Op::kGeq:
      return {r, r - (uint64_t{1} << 33), r + 1 + (r >> 56), r};
    case Op::kEq:
      return {r, r ^ (uint64_t{1} << 40), r, r};
    case Op::kAnd: {
      const uint64_t v = (r | (uint64_t{1} << 45)) & kHigh;
      return {v, ~v, ~v | (uint64_t{1} << 45), ~uint64_t{0}};
    }
    case Op::kNor: {
      const uint64_t v = ((r & kHigh) & ~(uint64_t{1} << 50)) | 0xFFFFFFFFull;
      return {v, ~v, ~v & ~(uint64_t{1} << 50), 0};
    }
  }
  return {};
}

}  // namespace memops64
}  // namespace pagelock
