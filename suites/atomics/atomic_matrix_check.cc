#include "suites/atomics/atomic_matrix_check.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include "fixtures/device_caps.h"
#include "fixtures/outcome.h"
#include "fixtures/resources.h"
#include "fixtures/settings.h"

namespace pagelock {
namespace {

template <typename T>
using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <typename T>
T FromBits(uint64_t b) {
  Bits<T> u = static_cast<Bits<T>>(b);
  T v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
template <typename T>
uint64_t ToBits(T v) {
  Bits<T> u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
// The operand as the kernel converts it (atomic_matrix.cu FromOperand).
template <typename T>
T FromOperand(uint64_t v) {
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(static_cast<int64_t>(v));
  else return static_cast<T>(static_cast<Bits<T>>(v));
}

// The value an op writes, given the old value: CUDA's documented semantics.
template <typename T>
T NewValue(AtomicOp op, T old, T v) {
  using U = Bits<T>;
  if constexpr (std::is_floating_point_v<T>) {
    return op == AtomicOp::kAdd ? old + v : v;  // add, exch
  } else {
    const U o = static_cast<U>(old), w = static_cast<U>(v);
    switch (op) {
      case AtomicOp::kAdd: return static_cast<T>(o + w);
      case AtomicOp::kSub: return static_cast<T>(o - w);
      case AtomicOp::kExch: return v;
      case AtomicOp::kMin: return std::min(old, v);
      case AtomicOp::kMax: return std::max(old, v);
      case AtomicOp::kInc: return static_cast<T>(o >= w ? 0 : o + 1);
      case AtomicOp::kDec: return static_cast<T>((o == 0 || o > w) ? w : o - 1);
      case AtomicOp::kCas: return static_cast<T>(o + 1);
      case AtomicOp::kAnd: return static_cast<T>(o & w);
      case AtomicOp::kOr: return static_cast<T>(o | w);
      case AtomicOp::kXor: return static_cast<T>(o ^ w);
    }
    return old;
  }
}

template <typename T>
uint64_t Initial(AtomicOp op, uint64_t n, uint64_t seed) {
  if constexpr (std::is_floating_point_v<T>) {
    return ToBits<T>(T(0));
  } else {
    using U = Bits<T>;
    const U half = static_cast<U>(n / 2);
    switch (op) {
      case AtomicOp::kAdd:
      case AtomicOp::kCas:
        // Signed: from -n/2 through zero. Unsigned: across the 32-bit wrap (the carry into the
        // high half for 64-bit words).
        if (std::is_signed_v<T>) return static_cast<U>(U(0) - half);
        return static_cast<U>(uint64_t{0xFFFFFFFFu} - half);
      case AtomicOp::kSub: return half;
      case AtomicOp::kMin: return ToBits<T>(std::numeric_limits<T>::max());
      case AtomicOp::kMax: return ToBits<T>(std::numeric_limits<T>::lowest());
      case AtomicOp::kAnd: return static_cast<U>(~U(0));
      case AtomicOp::kXor: return static_cast<U>(AtomicMix(~uint64_t{0}, seed));
      default: return 0;  // exch, inc, dec, or
    }
  }
}

template <typename T>
uint64_t Host(AtomicOp op, void* vp, uint64_t operand) {
  using U = Bits<T>;
  const T v = FromOperand<T>(operand);
  if constexpr (!std::is_floating_point_v<T>) {
    T* p = static_cast<T*>(vp);
    switch (op) {
      case AtomicOp::kAdd: return ToBits<T>(__atomic_fetch_add(p, v, __ATOMIC_SEQ_CST));
      case AtomicOp::kSub: return ToBits<T>(__atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST));
      case AtomicOp::kExch: return ToBits<T>(__atomic_exchange_n(p, v, __ATOMIC_SEQ_CST));
      case AtomicOp::kAnd: return ToBits<T>(__atomic_fetch_and(p, v, __ATOMIC_SEQ_CST));
      case AtomicOp::kOr: return ToBits<T>(__atomic_fetch_or(p, v, __ATOMIC_SEQ_CST));
      case AtomicOp::kXor: return ToBits<T>(__atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST));
      default: break;
    }
  }
  // min, max, inc, dec, CAS and float ops: a CAS loop on the raw bits (bounded like the kernel's).
  U* bits = static_cast<U*>(vp);
  U expected = __atomic_load_n(bits, __ATOMIC_SEQ_CST);
  for (unsigned attempt = 0; attempt < kMaxCasAttempts; ++attempt) {
    const U desired = static_cast<U>(ToBits<T>(NewValue<T>(op, FromBits<T>(expected), v)));
    if (__atomic_compare_exchange_n(bits, &expected, desired, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST)) {
      return expected;
    }
  }
  return expected;  // gave up: the history check reports it
}

template <typename T>
WordVerdict Judge(AtomicOp op, uint64_t initial, uint64_t final_bits,
                  const std::vector<Contribution>& history, uint64_t seed, uint32_t wrap,
                  AtomicType type) {
  WordVerdict v;
  std::map<uint64_t, int64_t> balance;  // +1 for produced values, -1 for consumed ones
  balance[initial] += 1;
  T fold = FromBits<T>(initial);
  std::vector<uint64_t> olds;
  olds.reserve(history.size());
  std::map<uint64_t, int64_t> written = {{initial, 1}};  // values some agent stored whole
  std::vector<uint64_t> stored;
  stored.reserve(history.size());
  for (const Contribution& c : history) {
    const T operand = FromOperand<T>(AtomicOperand(op, type, c.id, seed, wrap));
    stored.push_back(ToBits<T>(NewValue<T>(op, FromBits<T>(c.old_bits), operand)));
    balance[stored.back()] += 1;
    written[stored.back()] += 1;
    balance[c.old_bits] -= 1;
    fold = NewValue<T>(op, fold, operand);
    olds.push_back(c.old_bits);
  }
  balance[final_bits] -= 1;
  // A lost update still reads a whole value; a torn one reads a value nobody wrote (R78). An
  // agent's own store does not count for its own read (it came after).
  auto note_torn = [&](uint64_t value) {
    if (v.torn++ == 0) {
      std::ostringstream os;
      os << "value 0x" << std::hex << value << std::dec << " was seen but no agent wrote it (torn)";
      v.detail = os.str();
    }
  };
  for (size_t i = 0; i < olds.size(); ++i) {
    const auto it = written.find(olds[i]);
    const int64_t by_others = it == written.end() ? 0 : it->second - (stored[i] == olds[i] ? 1 : 0);
    if (by_others <= 0) note_torn(olds[i]);
  }
  if (!written.count(final_bits)) note_torn(final_bits);
  for (const auto& [value, count] : balance) {
    if (count > 0) {
      v.lost += static_cast<uint64_t>(count);
      if (v.detail.empty()) {
        std::ostringstream os;
        os << "value 0x" << std::hex << value << std::dec << " was written " << count
           << " more time(s) than it was seen (a lost or torn update)";
        v.detail = os.str();
      }
    }
  }
  if (op != AtomicOp::kExch) {
    v.final_ok = ToBits<T>(fold) == final_bits;
    if (!v.final_ok) {
      std::ostringstream os;
      os << "final 0x" << std::hex << final_bits << ", expected 0x" << ToBits<T>(fold) << std::dec;
      v.detail = os.str() + (v.detail.empty() ? "" : "; " + v.detail);
    }
  }
  if (op == AtomicOp::kAdd || op == AtomicOp::kSub || op == AtomicOp::kExch || op == AtomicOp::kCas) {
    std::sort(olds.begin(), olds.end());
    v.olds_unique = std::adjacent_find(olds.begin(), olds.end()) == olds.end();
    if (!v.olds_unique) v.detail += (v.detail.empty() ? "" : "; ") + std::string("an old value was returned twice");
  }
  return v;
}

template <template <typename> class F, typename... A>
auto Dispatch(AtomicType t, A&&... a) {
  switch (t) {
    case AtomicType::kI32: return F<int32_t>::Run(a...);
    case AtomicType::kU32: return F<uint32_t>::Run(a...);
    case AtomicType::kI64: return F<int64_t>::Run(a...);
    case AtomicType::kU64: return F<uint64_t>::Run(a...);
    case AtomicType::kF32: return F<float>::Run(a...);
    default: return F<double>::Run(a...);
  }
}
template <typename T>
struct InitialF {
  static uint64_t Run(AtomicOp op, uint64_t n, uint64_t seed) { return Initial<T>(op, n, seed); }
};
template <typename T>
struct HostF {
  static uint64_t Run(AtomicOp op, void* p, uint64_t operand) { return Host<T>(op, p, operand); }
};
template <typename T>
struct JudgeF {
  static WordVerdict Run(AtomicOp op, uint64_t i, uint64_t f, const std::vector<Contribution>& h,
                         uint64_t seed, uint32_t wrap, AtomicType t) {
    return Judge<T>(op, i, f, h, seed, wrap, t);
  }
};

}  // namespace

std::vector<OpType> DefinedOpTypes() {
  std::vector<OpType> out;
  for (AtomicOp op : {AtomicOp::kAdd, AtomicOp::kSub, AtomicOp::kExch, AtomicOp::kMin,
                      AtomicOp::kMax, AtomicOp::kInc, AtomicOp::kDec, AtomicOp::kCas,
                      AtomicOp::kAnd, AtomicOp::kOr, AtomicOp::kXor}) {
    for (AtomicType t : {AtomicType::kI32, AtomicType::kU32, AtomicType::kI64, AtomicType::kU64,
                         AtomicType::kF32, AtomicType::kF64}) {
      if (AtomicDefined(op, t)) out.push_back({op, t});
    }
  }
  return out;
}

std::string OpName(AtomicOp op) {
  static const char* const kNames[] = {"Add", "Sub", "Exch", "Min", "Max", "Inc",
                                       "Dec", "Cas", "And", "Or",  "Xor"};
  return kNames[static_cast<int>(op)];
}
std::string TypeName(AtomicType t) {
  static const char* const kNames[] = {"I32", "U32", "I64", "U64", "F32", "F64"};
  return kNames[static_cast<int>(t)];
}
std::string OpTypeName(OpType o) { return OpName(o.op) + TypeName(o.type); }
std::string ScopeName(AtomicScope s) {
  static const char* const kNames[] = {"block", "device", "system"};
  return kNames[static_cast<int>(s)];
}
std::string PatternName(AddressPattern p) {
  static const char* const kNames[] = {"one_address", "adjacent_words", "scattered"};
  return kNames[static_cast<int>(p)];
}
std::string MemoryName(HostKind m) {
  static const Spelling<HostKind> kCaseName(
      HostKindName, {{HostKind::kHostAllocPortableMapped, "HostAllocMapped"}, {HostKind::kDevice, "DeviceMemory"}});
  return kCaseName(m);
}

uint64_t AtomicInitialBits(AtomicOp op, AtomicType t, uint64_t n, uint64_t seed) {
  return Dispatch<InitialF>(t, op, n, seed);
}
uint64_t HostAtomic(AtomicOp op, AtomicType t, void* p, uint64_t operand) {
  return Dispatch<HostF>(t, op, p, operand);
}
uint64_t LoadBits(AtomicType t, const void* p) {
  if (AtomicTypeBytes(t) == 4) return __atomic_load_n(static_cast<const uint32_t*>(p), __ATOMIC_SEQ_CST);
  return __atomic_load_n(static_cast<const uint64_t*>(p), __ATOMIC_SEQ_CST);
}
void StoreBits(AtomicType t, void* p, uint64_t bits) {
  if (AtomicTypeBytes(t) == 4) {
    __atomic_store_n(static_cast<uint32_t*>(p), static_cast<uint32_t>(bits), __ATOMIC_SEQ_CST);
  } else {
    __atomic_store_n(static_cast<uint64_t*>(p), bits, __ATOMIC_SEQ_CST);
  }
}

WordVerdict JudgeWord(AtomicOp op, AtomicType t, uint64_t initial, uint64_t final_bits,
                      const std::vector<Contribution>& history, uint64_t seed, uint32_t wrap) {
  return Dispatch<JudgeF>(t, op, initial, final_bits, history, seed, wrap, t);
}

AtomicWords::AtomicWords(HostKind m, size_t bytes, int device) : bytes_(bytes) {
  if (IsRegistered(m)) {
    const Requirement r = RequireAttr(cudaDevAttrHostRegisterSupported, 1, device);
    if (!r.met) {
      unsupported_ = r.reason;
      return;
    }
  }
  KindFailure failure;
  buf_ = KindBuffer::Make(m, bytes, &failure);  // registered kinds: Mapped | Portable
  if (buf_) return;
  if (failure.unavailable) {
    unsupported_ = failure.why;
  } else {
    error_ = std::string("allocating ") + MemoryName(m) + ": " + cudaGetErrorName(failure.error);
  }
}

cudaError_t AtomicWords::Write(AtomicType t, const std::vector<uint64_t>& words) {
  const unsigned b = AtomicTypeBytes(t);
  std::vector<unsigned char> raw(words.size() * b);
  for (size_t i = 0; i < words.size(); ++i) std::memcpy(raw.data() + i * b, &words[i], b);
  if (host()) {
    std::memcpy(host(), raw.data(), raw.size());
    return cudaSuccess;
  }
  // copy-check: the words written here are the initial values the history check of every word starts from
  cudaError_t e = cudaMemcpy(device(), raw.data(), raw.size(), cudaMemcpyHostToDevice);
  // From a pageable source cudaMemcpy may return once the bytes are staged, before the DMA lands
  // (R76, S02), and the kernels run on non-blocking streams, which do not wait for the legacy
  // stream. Without this wait the DMA could land after the atomics and overwrite their results:
  // on a time-sliced H200 it did (whole blocks of words back at their initial values; found
  // 2026-11-30 as "lost updates" of block-scope CAS, docs/platforms/nvidia-h200.md#atomics).
  if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamLegacy);
  return e;
}

cudaError_t AtomicWords::Read(AtomicType t, std::vector<uint64_t>* words) const {
  const unsigned b = AtomicTypeBytes(t);
  const size_t n = bytes_ / b;
  words->assign(n, 0);
  if (host()) {
    for (size_t i = 0; i < n; ++i) (*words)[i] = LoadBits(t, static_cast<char*>(host()) + i * b);
    return cudaSuccess;
  }
  std::vector<unsigned char> raw(bytes_);
  // copy-check: every word read back is judged by the history check (JudgeWord)
  const cudaError_t e = cudaMemcpy(raw.data(), device(), bytes_, cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < n; ++i) std::memcpy(&(*words)[i], raw.data() + i * b, b);
  return e;
}

#if CUDART_VERSION >= 13000
cudaAtomicOperation CapabilityOperation(OpType o) {
  switch (o.op) {
    case AtomicOp::kAdd:
      return AtomicTypeIsFloat(o.type) ? cudaAtomicOperationFloatAdd : cudaAtomicOperationIntegerAdd;
    case AtomicOp::kSub: return cudaAtomicOperationIntegerAdd;  // no separate sub operation
    case AtomicOp::kExch: return cudaAtomicOperationExchange;
    case AtomicOp::kMin: return cudaAtomicOperationIntegerMin;
    case AtomicOp::kMax: return cudaAtomicOperationIntegerMax;
    case AtomicOp::kInc: return cudaAtomicOperationIntegerIncrement;
    case AtomicOp::kDec: return cudaAtomicOperationIntegerDecrement;
    case AtomicOp::kCas: return cudaAtomicOperationCAS;
    case AtomicOp::kAnd: return cudaAtomicOperationAnd;
    case AtomicOp::kOr: return cudaAtomicOperationOr;
    default: return cudaAtomicOperationXOR;
  }
}

#endif

#if CUDART_VERSION < 13000
// An 11.x/12.x runtime has attr 86 only: 1 promises every op native, 0 none (the 13.0 partial
// attribute and per-operation query do not exist there).
AtomicPromise HostAtomicPromise(OpType, int device) {
  AtomicPromise p;
  const int all = Probe().devices.at(device).Attr(cudaDevAttrHostNativeAtomicSupported);
  p.native = all == 1;
  p.why = "device " + std::to_string(device) + ": cudaDevAttrHostNativeAtomicSupported=" +
          std::to_string(all) + " (CUDART_VERSION=" + std::to_string(CUDART_VERSION) +
          ": no per-operation capability query before 13.0)";
  return p;
}
#else
AtomicPromise HostAtomicPromise(OpType o, int device) {
  AtomicPromise p;
  const DeviceInfo& d = Probe().devices.at(device);
  const int all = d.Attr(cudaDevAttrHostNativeAtomicSupported);
  const int partial = d.Attr(cudaDevAttrOnlyPartialHostNativeAtomicSupported);
  const cudaAtomicOperation op = CapabilityOperation(o);
  unsigned caps = 0;
  p.query = cudaDeviceGetHostAtomicCapabilities(&caps, &op, 1, device);
  if (p.query != cudaSuccess) (void)cudaGetLastError();
  const unsigned width = AtomicTypeBytes(o.type) == 8 ? cudaAtomicCapabilityScalar64
                                                      : cudaAtomicCapabilityScalar32;
  const unsigned sign = AtomicTypeIsFloat(o.type) ? 0u
                        : AtomicTypeIsSigned(o.type) ? unsigned{cudaAtomicCapabilitySigned}
                                                     : unsigned{cudaAtomicCapabilityUnsigned};
  const bool op_native = p.query == cudaSuccess && (caps & width) && (caps & sign) == sign;
  p.native = (all == 1 && partial == 0) || op_native;
  std::ostringstream why;
  why << "device " << device << ": cudaDevAttrHostNativeAtomicSupported=" << all
      << ", cudaDevAttrOnlyPartialHostNativeAtomicSupported=" << partial
      << ", cudaDeviceGetHostAtomicCapabilities(op " << static_cast<int>(op) << ")=";
  if (p.query == cudaSuccess) {
    why << "0x" << std::hex << caps << std::dec << " (need 0x" << std::hex << (width | sign)
        << std::dec << ")";
  } else {
    why << cudaGetErrorName(p.query);
  }
  p.why = why.str();
  return p;
}
#endif

}  // namespace pagelock

#include <atomic>
#include <thread>

#include "fixtures/time_scale.h"

namespace pagelock {

std::string AtomicOutcome::Describe() const {
  std::ostringstream os;
  if (!error.empty()) return error;
  os << contributions << " atomics on " << words << " word(s): " << lost << " lost/torn, " << torn << " torn, "
     << wrong_finals << " wrong final value(s), " << repeated_olds << " repeated old value(s), "
     << gave_up << " gave up, " << clobbered << " untouched word(s) changed";
  if (!detail.empty()) os << "; first: " << detail;
  return os.str();
}

namespace {

struct DeviceLaunch {
  int device;
  AtomicLaunch launch;
  unsigned long long* olds = nullptr;      // device memory
  unsigned long long* failures = nullptr;  // device memory
  cudaStream_t stream = nullptr;
};

uint64_t Canary(uint64_t index, uint64_t seed) { return AtomicMix(index + 0x1000000, seed); }

// A launch's stream and old-value slots, one set per device for the process, grown when a launch
// needs more and never freed. A cudaMalloc, cudaFree, cudaStreamCreate and cudaStreamDestroy per
// launch (2,286 launches in the matrix) are driver calls that queue behind every other process's
// context creation: the matrix took 4.4 s alone and 11 s beside two neighbours on an H200. The
// slots are zeroed before every launch, so no launch sees another's values.
struct DeviceScratch {
  cudaStream_t stream = nullptr;
  unsigned long long* slots = nullptr;
  size_t capacity = 0;  // slots
};

// The device must be current. On an error nothing is kept, and the next call tries again.
cudaError_t Scratch(int device, size_t slots, DeviceScratch** out) {
  static std::map<int, DeviceScratch> per_device;
  DeviceScratch& s = per_device[device];
  cudaError_t e = cudaSuccess;
  if (!s.stream && (e = cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking)) != cudaSuccess) {
    s.stream = nullptr;
    return e;
  }
  if (s.capacity < slots) {
    // frees_check: a per-process cache no owner can hold (a static one would free after the runtime's teardown)
    if (s.slots) (void)cudaFree(s.slots);
    s.slots = nullptr;
    s.capacity = 0;
    if ((e = cudaMalloc(&s.slots, slots * sizeof(unsigned long long))) != cudaSuccess) {
      s.slots = nullptr;
      return e;
    }
    s.capacity = slots;
  }
  *out = &s;
  return cudaSuccess;
}

// The steps of RunAtomics, in its order. A step that fails returns the CUDA error and says in
// `what` which step it was; RunAtomics then cleans up and reports it.

// The word host thread h touches in its k-th atomic.
uint64_t HostWord(const AtomicRun& run, AtomicType t, int h, int k) {
  return AtomicWordIndex(run.pattern, t, 0, static_cast<uint64_t>(h) * run.host_iters + k);
}

// Who touches which word, with which id: one launch per device, ids numbered device after
// device; the host threads' ids follow from *host_base.
std::vector<DeviceLaunch> PlanLaunches(const AtomicRun& run, uint64_t* host_base) {
  std::vector<DeviceLaunch> launches;
  uint64_t next_id = 0;
  for (int d : run.devices) {
    DeviceLaunch dl{d, {}};
    AtomicLaunch& l = dl.launch;
    l.op = run.ot.op;
    l.type = run.ot.type;
    l.scope = run.scope;
    l.pattern = run.pattern;
    l.blocks = run.blocks;
    l.threads = run.threads;
    l.iters = run.iters;
    l.id_base = next_id;
    l.seed = run.seed;
    l.wrap = kAtomicWrap;
    next_id += static_cast<uint64_t>(l.blocks) * l.threads * l.iters;
    launches.push_back(dl);
  }
  *host_base = next_id;
  return launches;
}

// The initial value of every word: what the op starts from where agents touch it, a canary
// where none does.
std::vector<uint64_t> InitialWords(const AtomicRun& run, const std::vector<DeviceLaunch>& launches,
                                   size_t nwords) {
  const AtomicType t = run.ot.type;
  const unsigned bytes = AtomicTypeBytes(t);
  std::vector<size_t> touched_count(nwords, 0);
  for (const DeviceLaunch& dl : launches) {
    const AtomicLaunch& l = dl.launch;
    for (int b = 0; b < l.blocks; ++b)
      for (int th = 0; th < l.threads; ++th)
        for (int k = 0; k < l.iters; ++k)
          ++touched_count[AtomicWordIndex(l.pattern, t, AtomicGroup(l, b), AtomicSlot(th, k))];
  }
  for (int h = 0; h < run.host_threads; ++h)
    for (int k = 0; k < run.host_iters; ++k) ++touched_count[HostWord(run, t, h, k)];

  std::vector<uint64_t> initial(nwords);
  for (size_t i = 0; i < nwords; ++i) {
    initial[i] = touched_count[i] ? AtomicInitialBits(run.ot.op, t, touched_count[i], run.seed)
                                  : Canary(i, run.seed) & (bytes == 4 ? 0xFFFFFFFFull : ~0ull);
  }
  return initial;
}

// Each device's stream and zeroed slots (old values, then the failure counter), and the start
// flag's device pointer when there is one (go).
cudaError_t PrepareDevices(std::vector<DeviceLaunch>& launches, unsigned* go,
                           unsigned long long timeout_cycles, std::string* what) {
  cudaError_t e = cudaSuccess;
  for (DeviceLaunch& dl : launches) {
    const size_t n = static_cast<size_t>(dl.launch.blocks) * dl.launch.threads * dl.launch.iters;
    // One set of slots: the old values, then the failure counter.
    DeviceScratch* scratch = nullptr;
    if ((e = cudaSetDevice(dl.device)) != cudaSuccess || (e = Scratch(dl.device, n + 1, &scratch)) != cudaSuccess ||
        // copy-check: zeroed slots are read back below and every old value is judged
        (e = cudaMemsetAsync(scratch->slots, 0, (n + 1) * sizeof(unsigned long long), scratch->stream)) != cudaSuccess) {
      *what = "preparing device " + std::to_string(dl.device);
      return e;
    }
    dl.stream = scratch->stream;
    dl.olds = scratch->slots;
    dl.failures = dl.olds + n;
    if (go) {
      void* dev_go = nullptr;
      if ((e = cudaHostGetDevicePointer(&dev_go, go, 0)) != cudaSuccess) {
        *what = "device pointer of the start flag";
        return e;
      }
      dl.launch.go = static_cast<const unsigned*>(dev_go);
      dl.launch.timeout_cycles = timeout_cycles;
    }
  }
  return cudaSuccess;
}

// Queues every launch. On a failure the launches already queued are released (go) and waited for.
cudaError_t LaunchAll(std::vector<DeviceLaunch>& launches, AtomicWords& words, unsigned* go, std::string* what) {
  cudaError_t e = cudaSuccess;
  for (DeviceLaunch& dl : launches) {
    (void)cudaSetDevice(dl.device);
    if ((e = LaunchAtomicMatrix(dl.launch, words.device(), dl.olds, dl.failures, dl.stream)) != cudaSuccess) {
      if (go) __atomic_store_n(go, 1u, __ATOMIC_SEQ_CST);  // release launches already queued
      for (DeviceLaunch& other : launches) (void)cudaStreamSynchronize(other.stream);
      *what = "launching on device " + std::to_string(dl.device);
      return e;
    }
  }
  return cudaSuccess;
}

// Host agents start with the devices: the host threads and the start flag (go) are released
// together. Returns each host thread's old values.
std::vector<std::vector<uint64_t>> RaceHostThreads(AtomicWords& words, const AtomicRun& run, uint64_t host_base,
                                                   unsigned* go) {
  const AtomicType t = run.ot.type;
  const unsigned bytes = AtomicTypeBytes(t);
  std::atomic<bool> host_go{false};
  std::vector<std::vector<uint64_t>> host_olds(run.host_threads, std::vector<uint64_t>(run.host_iters));
  std::vector<std::thread> threads;
  for (int h = 0; h < run.host_threads; ++h) {
    threads.emplace_back([&, h] {
      while (!host_go.load()) {
      }
      for (int k = 0; k < run.host_iters; ++k) {
        const uint64_t id = host_base + static_cast<uint64_t>(h) * run.host_iters + k;
        void* p = static_cast<char*>(words.host()) + HostWord(run, t, h, k) * bytes;
        host_olds[h][k] = HostAtomic(run.ot.op, t, p, AtomicOperand(run.ot.op, t, id, run.seed, kAtomicWrap));
      }
    });
  }
  host_go.store(true);
  if (go) __atomic_store_n(go, 1u, __ATOMIC_SEQ_CST);
  for (std::thread& th : threads) th.join();
  return host_olds;
}

// Waits for each device, reads its old values and failure counter back, and files every old
// value under its word (history); the failures add to out->gave_up.
cudaError_t CollectDevices(const std::vector<DeviceLaunch>& launches, AtomicType t,
                           std::vector<std::vector<Contribution>>* history, AtomicOutcome* out, std::string* what) {
  cudaError_t e = cudaSuccess;
  for (const DeviceLaunch& dl : launches) {
    (void)cudaSetDevice(dl.device);
    const DeviceLaunch& l = dl;
    const size_t n = static_cast<size_t>(l.launch.blocks) * l.launch.threads * l.launch.iters;
    std::vector<unsigned long long> olds(n);
    unsigned long long failures = 0;
    if ((e = cudaStreamSynchronize(dl.stream)) != cudaSuccess ||
        // copy-check: every old value is judged by the history check below
        (e = cudaMemcpy(olds.data(), dl.olds, n * sizeof(unsigned long long), cudaMemcpyDeviceToHost)) != cudaSuccess ||
        // copy-check: the failure counter read back is itself checked (gave_up)
        (e = cudaMemcpy(&failures, dl.failures, sizeof failures, cudaMemcpyDeviceToHost)) != cudaSuccess) {
      *what = "running on device " + std::to_string(dl.device);
      return e;
    }
    out->gave_up += failures;
    for (int b = 0; b < l.launch.blocks; ++b)
      for (int th = 0; th < l.launch.threads; ++th)
        for (int k = 0; k < l.launch.iters; ++k) {
          const uint64_t local = AtomicLocalIndex(l.launch, b, th, k);
          (*history)[AtomicWordIndex(l.launch.pattern, t, AtomicGroup(l.launch, b), AtomicSlot(th, k))]
              .push_back({l.launch.id_base + local, olds[local]});
        }
  }
  return cudaSuccess;
}

// Judges every word against what each agent got back: the tallies and the first bad word go
// into *out.
void JudgeWords(const AtomicRun& run, const std::vector<uint64_t>& initial, const std::vector<uint64_t>& final_words,
                const std::vector<std::vector<Contribution>>& history, AtomicOutcome* out) {
  const AtomicType t = run.ot.type;
  for (size_t i = 0; i < history.size(); ++i) {
    if (history[i].empty()) {
      if (final_words[i] != initial[i]) {
        ++out->clobbered;
        if (out->detail.empty()) out->detail = "untouched word " + std::to_string(i) + " changed";
      }
      continue;
    }
    ++out->words;
    out->contributions += history[i].size();
    const WordVerdict v = JudgeWord(run.ot.op, t, initial[i], final_words[i], history[i], run.seed, kAtomicWrap);
    out->lost += v.lost;
    out->torn += v.torn;
    out->wrong_finals += !v.final_ok;
    out->repeated_olds += !v.olds_unique;
    if (!v.exact() && out->detail.empty()) out->detail = "word " + std::to_string(i) + ": " + v.detail;
  }
}

}  // namespace

AtomicOutcome RunAtomics(AtomicWords& words, const AtomicRun& run) {
  AtomicOutcome out;
  const AtomicType t = run.ot.type;
  const unsigned bytes = AtomicTypeBytes(t);
  const size_t nwords = words.bytes() / bytes;
  const bool several = run.devices.size() + (run.host_threads > 0 ? 1 : 0) > 1;
  auto fail = [&](const std::string& what, cudaError_t e) {
    out.error = what + ": " + cudaGetErrorName(e);
    return out;
  };

  std::vector<std::vector<Contribution>> history(nwords);
  uint64_t host_base = 0;
  std::vector<DeviceLaunch> launches = PlanLaunches(run, &host_base);
  const std::vector<uint64_t> initial = InitialWords(run, launches, nwords);
  cudaError_t e = words.Write(t, initial);
  if (e != cudaSuccess) return fail("writing the initial words", e);

  // The start flag: mapped host memory every agent can read.
  unsigned* go = nullptr;
  PinnedBuffer own_go;
  if (several) {
    e = cudaHostAlloc(reinterpret_cast<void**>(&go), sizeof *go, cudaHostAllocMapped | cudaHostAllocPortable);
    if (e != cudaSuccess) return fail("allocating the start flag", e);
    own_go = PinnedBuffer::Adopt(go, sizeof *go);
    __atomic_store_n(go, 0u, __ATOMIC_SEQ_CST);
  }
  auto cleanup = [&] {
    own_go = PinnedBuffer();  // freed before the device is reset to 0, as it was
    (void)cudaSetDevice(0);
  };

  const unsigned long long timeout_cycles =
      static_cast<unsigned long long>(run.go_timeout_s * 2e9 * TimeScale());
  std::string what;
  if ((e = PrepareDevices(launches, go, timeout_cycles, &what)) != cudaSuccess ||
      (e = LaunchAll(launches, words, go, &what)) != cudaSuccess) {
    cleanup();
    return fail(what, e);
  }
  const std::vector<std::vector<uint64_t>> host_olds = RaceHostThreads(words, run, host_base, go);
  if ((e = CollectDevices(launches, t, &history, &out, &what)) != cudaSuccess) {
    cleanup();
    return fail(what, e);
  }
  cleanup();
  for (int h = 0; h < run.host_threads; ++h)
    for (int k = 0; k < run.host_iters; ++k)
      history[HostWord(run, t, h, k)].push_back({host_base + static_cast<uint64_t>(h) * run.host_iters + k, host_olds[h][k]});

  std::vector<uint64_t> final_words;
  if ((e = words.Read(t, &final_words)) != cudaSuccess) return fail("reading the words back", e);
  JudgeWords(run, initial, final_words, history, &out);
  return out;
}

RacingTally RunRacingPatterns(AtomicWords& words, AtomicRun run) {
  RacingTally t;
  run.scope = AtomicScope::kSystem;
  t.error = ShapeCasRun(run);
  if (!t.error.empty()) return t;
  for (AddressPattern pattern : {AddressPattern::kOneAddress, AddressPattern::kAdjacentWords,
                                 AddressPattern::kScattered}) {
    run.pattern = pattern;
    const AtomicOutcome out = RunAtomics(words, run);
    if (!out.error.empty()) t.error = PatternName(pattern) + ": " + out.error;
    else if (out.gave_up || out.clobbered) t.error = PatternName(pattern) + ": " + out.Describe();
    if (!t.error.empty()) return t;
    t.lost += out.lost;
    t.torn += out.torn;
    t.wrong += out.wrong_finals + out.repeated_olds;
    t.contributions += out.contributions;
    if (!out.exact() && t.first.empty()) t.first = PatternName(pattern) + ": " + out.Describe();
  }
  Metric("lost_or_torn_updates_count", static_cast<double>(t.lost), "count");
  Metric("wrong_words_count", static_cast<double>(t.wrong), "count");
  Metric("torn_values_count", static_cast<double>(t.torn), "count");
  Metric("atomics_checked_count", static_cast<double>(t.contributions), "count");
  return t;
}

int CasThreadsPerBlock() {
  const char* s = settings::Text("PAGELOCK_ATOMICS_CAS_THREADS");
  if (s == nullptr || *s == '\0') return kCasThreadsDefault;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  return (*end == '\0' && v >= 1 && v <= 1024) ? static_cast<int>(v) : 0;
}

std::string ShapeCasRun(AtomicRun& run) {
  if (run.ot.op != AtomicOp::kCas) return "";
  const int threads = CasThreadsPerBlock();
  if (threads == 0) {
    return "PAGELOCK_ATOMICS_CAS_THREADS=" + std::string(settings::Text("PAGELOCK_ATOMICS_CAS_THREADS")) +
           " is not a thread count in 1..1024";
  }
  Budget("cas_threads_per_block", threads, "count");
  Budget("cas_iterations_per_thread", 1, "count");
  run.threads = threads;
  run.iters = 1;
  return "";
}

}  // namespace pagelock
