#include "kernels/atomics/atomic_matrix.h"

namespace pagelock {
namespace {

// Picks the scoped variant of a CUDA atomic at run time.
#define PAGELOCK_SCOPED(fn, ...)                                            \
  (scope == AtomicScope::kBlock    ? fn##_block(__VA_ARGS__)                \
   : scope == AtomicScope::kDevice ? fn(__VA_ARGS__)                        \
                                   : fn##_system(__VA_ARGS__))

template <typename T>
__device__ T FromOperand(uint64_t v) {
  if constexpr (sizeof(T) == 4 && !(T(0.5) > T(0))) return static_cast<T>(static_cast<uint32_t>(v));
  else if constexpr (T(0.5) > T(0)) return static_cast<T>(static_cast<int64_t>(v));
  else return static_cast<T>(v);
}

template <typename T>
__device__ unsigned long long ToBits(T v) {
  if constexpr (sizeof(T) == 4) {
    unsigned u;
    memcpy(&u, &v, 4);
    return u;
  } else {
    unsigned long long u;
    memcpy(&u, &v, 8);
    return u;
  }
}

template <typename T>
__device__ T CasIncrement(T* p, AtomicScope scope, unsigned long long* failures) {
  T expected = *reinterpret_cast<volatile T*>(p);
  for (unsigned attempt = 0; attempt < kMaxCasAttempts; ++attempt) {
    const T seen = PAGELOCK_SCOPED(atomicCAS, p, expected, static_cast<T>(expected + 1));
    if (seen == expected) return seen;
    expected = seen;
  }
  atomicAdd(failures, 1ull);
  return expected;
}

template <typename T, AtomicOp OP>
__device__ T Apply(T* p, T v, AtomicScope scope, unsigned long long* failures) {
  if constexpr (OP == AtomicOp::kAdd) return PAGELOCK_SCOPED(atomicAdd, p, v);
  else if constexpr (OP == AtomicOp::kSub) return PAGELOCK_SCOPED(atomicSub, p, v);
  else if constexpr (OP == AtomicOp::kExch) return PAGELOCK_SCOPED(atomicExch, p, v);
  else if constexpr (OP == AtomicOp::kMin) return PAGELOCK_SCOPED(atomicMin, p, v);
  else if constexpr (OP == AtomicOp::kMax) return PAGELOCK_SCOPED(atomicMax, p, v);
  else if constexpr (OP == AtomicOp::kInc) return PAGELOCK_SCOPED(atomicInc, p, v);
  else if constexpr (OP == AtomicOp::kDec) return PAGELOCK_SCOPED(atomicDec, p, v);
  else if constexpr (OP == AtomicOp::kCas) return CasIncrement(p, scope, failures);
  else if constexpr (OP == AtomicOp::kAnd) return PAGELOCK_SCOPED(atomicAnd, p, v);
  else if constexpr (OP == AtomicOp::kOr) return PAGELOCK_SCOPED(atomicOr, p, v);
  else return PAGELOCK_SCOPED(atomicXor, p, v);
}

template <typename T, AtomicOp OP>
__global__ void AtomicMatrixKernel(AtomicLaunch l, T* words, unsigned long long* olds,
                                   unsigned long long* failures) {
  const int block = blockIdx.x, thread = threadIdx.x;
  if (l.go != nullptr) {
    const long long start = clock64();
    const volatile unsigned* go = l.go;
    while (*go == 0u) {
      if (static_cast<unsigned long long>(clock64() - start) > l.timeout_cycles) {
        atomicAdd(failures, 1ull);
        return;
      }
    }
  }
  const uint64_t group = AtomicGroup(l, block);
  for (int k = 0; k < l.iters; ++k) {
    const uint64_t local = AtomicLocalIndex(l, block, thread, k);
    const uint64_t id = l.id_base + local;
    T* p = words + AtomicWordIndex(l.pattern, l.type, group, AtomicSlot(thread, k));
    const T v = FromOperand<T>(AtomicOperand(l.op, l.type, id, l.seed, l.wrap));
    olds[local] = ToBits<T>(Apply<T, OP>(p, v, l.scope, failures));
  }
}

template <typename T, AtomicOp OP>
cudaError_t Run(const AtomicLaunch& l, void* words, unsigned long long* olds,
                unsigned long long* failures, cudaStream_t stream) {
  AtomicMatrixKernel<T, OP><<<l.blocks, l.threads, 0, stream>>>(l, static_cast<T*>(words), olds,
                                                                failures);
  return cudaGetLastError();
}

#define PAGELOCK_CASE(OPNAME, T)            \
  case AtomicOp::OPNAME:                     \
    return Run<T, AtomicOp::OPNAME>(l, words, olds, failures, stream)

template <typename T>
cudaError_t RunIntegerOp(const AtomicLaunch& l, void* words, unsigned long long* olds,
                         unsigned long long* failures, cudaStream_t stream) {
  switch (l.op) {
    PAGELOCK_CASE(kMin, T);
    PAGELOCK_CASE(kMax, T);
    PAGELOCK_CASE(kAnd, T);
    PAGELOCK_CASE(kOr, T);
    PAGELOCK_CASE(kXor, T);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

bool AtomicDefined(AtomicOp op, AtomicType t) {
  switch (op) {
    case AtomicOp::kAdd: return t != AtomicType::kI64;
    case AtomicOp::kSub: return t == AtomicType::kI32 || t == AtomicType::kU32;
    case AtomicOp::kExch: return t != AtomicType::kI64 && t != AtomicType::kF64;
    case AtomicOp::kInc:
    case AtomicOp::kDec: return t == AtomicType::kU32;
    case AtomicOp::kCas: return t == AtomicType::kI32 || t == AtomicType::kU32 || t == AtomicType::kU64;
    default: return !AtomicTypeIsFloat(t);  // min, max, and, or, xor
  }
}

cudaError_t LaunchAtomicMatrix(const AtomicLaunch& l, void* words, unsigned long long* olds,
                               unsigned long long* failures, cudaStream_t stream) {
  if (!AtomicDefined(l.op, l.type) || l.blocks <= 0 || l.threads <= 0 || l.iters <= 0) {
    return cudaErrorInvalidValue;
  }
  switch (l.type) {
    case AtomicType::kI32:
      switch (l.op) {
        PAGELOCK_CASE(kAdd, int);
        PAGELOCK_CASE(kSub, int);
        PAGELOCK_CASE(kExch, int);
        PAGELOCK_CASE(kCas, int);
        default: return RunIntegerOp<int>(l, words, olds, failures, stream);
      }
    case AtomicType::kU32:
      switch (l.op) {
        PAGELOCK_CASE(kAdd, unsigned);
        PAGELOCK_CASE(kSub, unsigned);
        PAGELOCK_CASE(kExch, unsigned);
        PAGELOCK_CASE(kInc, unsigned);
        PAGELOCK_CASE(kDec, unsigned);
        PAGELOCK_CASE(kCas, unsigned);
        default: return RunIntegerOp<unsigned>(l, words, olds, failures, stream);
      }
    case AtomicType::kI64: return RunIntegerOp<long long>(l, words, olds, failures, stream);
    case AtomicType::kU64:
      switch (l.op) {
        PAGELOCK_CASE(kAdd, unsigned long long);
        PAGELOCK_CASE(kExch, unsigned long long);
        PAGELOCK_CASE(kCas, unsigned long long);
        default: return RunIntegerOp<unsigned long long>(l, words, olds, failures, stream);
      }
    case AtomicType::kF32:
      switch (l.op) {
        PAGELOCK_CASE(kAdd, float);
        PAGELOCK_CASE(kExch, float);
        default: return cudaErrorInvalidValue;
      }
    case AtomicType::kF64:
      if (l.op == AtomicOp::kAdd) return Run<double, AtomicOp::kAdd>(l, words, olds, failures, stream);
      return cudaErrorInvalidValue;
  }
  return cudaErrorInvalidValue;
}

}  // namespace pagelock
