// Host side of the atomics matrix: names, initial values, the host agent (__atomic builtins),
// the memory kinds under test, the per-op capability promise, and the checker that judges one
// word's whole history. Shared by the one-GPU, GPU+host and multi-GPU suites.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/host_kinds.h"
#include "fixtures/kind_buffer.h"
#include "kernels/atomics/atomic_matrix.h"

namespace pagelock {

struct OpType {
  AtomicOp op;
  AtomicType type;
};
// Every (op, type) CUDA defines, in a fixed order.
std::vector<OpType> DefinedOpTypes();
std::string OpName(AtomicOp op);      // "Add"
std::string TypeName(AtomicType t);   // "U32"
std::string OpTypeName(OpType o);     // "AddU32"
std::string ScopeName(AtomicScope s);       // "block", "device", "system"
std::string PatternName(AddressPattern p);  // "one_address", "adjacent_words", "scattered"

// The wrap limit inc/dec use: values cycle through 0..kAtomicWrap, so the history wraps often.
constexpr uint32_t kAtomicWrap = 63;

// Initial raw bits of a word that `n` contributions will update. Add/CAS start just below a
// 32-bit wrap (carry into the high half for 64-bit), sub just above zero, so wrap-around and
// sign changes happen inside every history.
uint64_t AtomicInitialBits(AtomicOp op, AtomicType t, uint64_t n, uint64_t seed);

// One host-agent atomic on `p` (the host alias of the word) with __atomic builtins (a CAS loop
// for ops the builtins lack); returns the old value's raw bits. CAS increments like the kernel.
uint64_t HostAtomic(AtomicOp op, AtomicType t, void* p, uint64_t operand);
// Raw bits of a word read with an atomic load.
uint64_t LoadBits(AtomicType t, const void* p);
void StoreBits(AtomicType t, void* p, uint64_t bits);

// One contribution to a word: its id (operand source) and the old value it got back.
struct Contribution {
  uint64_t id;
  uint64_t old_bits;
};

struct WordVerdict {
  uint64_t lost = 0;        // updates missing from the chain of values (lost or torn)
  uint64_t torn = 0;        // values seen (old values, final) that no agent wrote: torn (R78)
  bool final_ok = true;     // final value equals the order-independent fold of every operand
  bool olds_unique = true;  // add/sub/exch/CAS: every returned old value distinct
  std::string detail;       // first mismatch, for the failure message
  bool exact() const { return lost == 0 && torn == 0 && final_ok && olds_unique; }
};

// Judges a word's history: {initial} + {op(old_i, operand_i)} must equal {old_i} + {final} as
// multisets (true for any linearizable sequence of read-modify-writes), the final value must be
// the fold of all operands (every op but exch is order-independent here), and ops whose old
// values are all distinct must return distinct ones. Torn values are told apart from lost
// updates: an atomic split into a load and a store (allowed without native host atomics, R78)
// can lose updates, but every value it reads was written whole by some agent (the initial value
// or op(old, operand) of a contribution); a value seen that nobody wrote is torn.
WordVerdict JudgeWord(AtomicOp op, AtomicType t, uint64_t initial, uint64_t final_bits,
                      const std::vector<Contribution>& history, uint64_t seed, uint32_t wrap);

// The memory kinds the matrix runs on (fixtures/host_kinds.h): cudaHostAlloc Mapped|Portable
// (kHostAllocPortableMapped: the multi-GPU cases use it from every device), page-aligned heap and
// anonymous mmap registered Mapped|Portable, and device memory.
// Their names in the case ids: "HostAllocMapped" (the Mapped|Portable allocation, named so before
// the kit's names), "RegisteredMalloc", "RegisteredMmap", "DeviceMemory".
std::string MemoryName(HostKind m);

// Words of one memory kind: host alias (null for device memory) and the device pointer, held by
// a KindBuffer (released by the kit's owners). For device memory the words live on the current
// device.
class AtomicWords {
 public:
  // Empty unsupported() and error() on success; unsupported() names a missing capability of
  // `device` or memory the host cannot provide.
  AtomicWords(HostKind m, size_t bytes, int device = 0);
  AtomicWords(const AtomicWords&) = delete;
  AtomicWords& operator=(const AtomicWords&) = delete;

  void* host() const { return buf_ ? buf_->host() : nullptr; }
  void* device() const { return buf_ ? buf_->dev() : nullptr; }
  size_t bytes() const { return bytes_; }
  const std::string& error() const { return error_; }
  const std::string& unsupported() const { return unsupported_; }
  // Copies `bits` words between the memory and a host vector (cudaMemcpy for device memory).
  cudaError_t Write(AtomicType t, const std::vector<uint64_t>& words);
  cudaError_t Read(AtomicType t, std::vector<uint64_t>* words) const;

 private:
  size_t bytes_;
  std::unique_ptr<KindBuffer> buf_;
  std::string error_, unsupported_;
};

// What the device promises for (op, type) racing the host: attr 86 = 1 with attr 147 = 0 means
// every op is native; otherwise cudaDeviceGetHostAtomicCapabilities must set the type's width
// bit (and, for integers, its signedness bit) for the op. `why` states the attributes and mask.
struct AtomicPromise {
  bool native = false;
  std::string why;
  cudaError_t query = cudaSuccess;  // the capability query's result
};
AtomicPromise HostAtomicPromise(OpType o, int device);
#if CUDART_VERSION >= 13000  // the per-operation capability query is a 13.0 runtime API
cudaAtomicOperation CapabilityOperation(OpType o);
#endif

}  // namespace pagelock

namespace pagelock {

// One configuration of the matrix: which agents apply (op, type) with which scope and pattern.
struct AtomicRun {
  OpType ot{AtomicOp::kAdd, AtomicType::kU32};
  AtomicScope scope = AtomicScope::kDevice;
  AddressPattern pattern = AddressPattern::kOneAddress;
  uint64_t seed = 0;
  std::vector<int> devices{0};  // one launch per device, on that device
  int blocks = 8, threads = 128, iters = 2;
  int host_threads = 0, host_iters = 0;  // host agents racing the launches
  double go_timeout_s = 2;  // how long agents wait for each other to start (scaled)
};

struct AtomicOutcome {
  std::string error;           // a CUDA call failed: the case fails with this
  uint64_t contributions = 0;  // atomics applied, all agents
  uint64_t words = 0;          // words touched
  uint64_t lost = 0;           // lost or torn updates (WordVerdict::lost summed)
  uint64_t torn = 0;           // values seen that no agent wrote (WordVerdict::torn summed)
  uint64_t wrong_finals = 0;   // words whose final value is wrong
  uint64_t repeated_olds = 0;  // words where an old value came back twice (add/sub/exch/CAS)
  uint64_t gave_up = 0;        // CAS loops out of attempts, threads that never saw the start
  uint64_t clobbered = 0;      // words no agent touched that changed
  std::string detail;          // first bad word, for the message
  bool exact() const {
    return error.empty() && lost == 0 && torn == 0 && wrong_finals == 0 && repeated_olds == 0 &&
           gave_up == 0 && clobbered == 0;
  }
  std::string Describe() const;
};

// CAS contending on one word costs O(contenders^2) attempts (one winner per round), over the
// link for host memory: 8 x 128 threads x 2 CAS took ~1.6 s a case on an H200. CAS launches use
// PAGELOCK_ATOMICS_CAS_THREADS threads per block (default 32, 1..1024) and one CAS each; with 8
// blocks on separate SMs a lost update is still possible and caught. Stress runs set it higher.
constexpr int kCasThreadsDefault = 32;
// Threads per block for CAS launches; 0 when PAGELOCK_ATOMICS_CAS_THREADS is not 1..1024.
int CasThreadsPerBlock();
// Gives a CAS run that load (other ops are left as they are) and records it as budgets. Returns
// "" or the error to report (a bad PAGELOCK_ATOMICS_CAS_THREADS).
std::string ShapeCasRun(AtomicRun& run);

// Bytes of AtomicWords every configuration with `blocks` blocks fits in.
inline size_t AtomicBytes(int blocks) { return static_cast<size_t>(blocks) * kGroupBytes; }

// Initialises the words, runs every agent (together, behind a start flag when there are
// several), and judges every word. Waits are bounded: kernels time out on the start flag, CAS
// loops on their attempt count.
AtomicOutcome RunAtomics(AtomicWords& words, const AtomicRun& run);

// A racing run (system scope; host threads or several GPUs as `run` says) over the three address
// patterns, summed, as the host-race and multi-GPU cases judge it against the device's promise.
// Records the metrics lost_or_torn_updates_count, wrong_words_count and atomics_checked_count.
struct RacingTally {
  std::string error;  // a CUDA call failed, a CAS loop gave up or an untouched word changed
  uint64_t lost = 0, wrong = 0, contributions = 0;
  uint64_t torn = 0;  // values seen that no agent wrote: R78 broken whatever attr 86 says
  std::string first;  // the first inexact pattern, described
};
RacingTally RunRacingPatterns(AtomicWords& words, AtomicRun run);

}  // namespace pagelock
