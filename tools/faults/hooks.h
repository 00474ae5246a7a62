// What the areas of the catalogue (tools/faults/catalogue/*.cc) share: the real driver calls a
// fault makes besides the one it wraps, questions about memory and streams, the blocks the shim
// has seen allocated or registered, and hook bodies that several faults repeat. A helper that
// one area alone uses stays in that area's file.
#ifndef PAGELOCK_TOOLS_FAULTS_HOOKS_H_
#define PAGELOCK_TOOLS_FAULTS_HOOKS_H_

#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "tools/faults/shim.h"

namespace pagelock_faults {

constexpr size_t kMiB = size_t{1} << 20;
constexpr uintptr_t kPage = 4096;

inline CUdeviceptr Ptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// ---------------------------------------------------------------------------------------------
// Real driver calls besides the wrapped one (CUDA_ERROR_NOT_FOUND when the driver lacks them).

CUresult RealCopy(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult RealSetByte(CUdeviceptr dst, unsigned char v);
CUresult RealSetByteAsync(CUdeviceptr dst, unsigned char v, CUstream s);

// ---------------------------------------------------------------------------------------------
// Memory.

// Whether an address is device memory (else host: pinned, registered or pageable).
bool IsDevice(CUdeviceptr p);
// Direction of a unified copy (cuMemcpy / cuMemcpyAsync).
bool IsHtoD(CUdeviceptr dst, CUdeviceptr src);
bool IsDtoH(CUdeviceptr dst, CUdeviceptr src);
// Where the host can read or write a host-memory address that may be a device alias.
unsigned char* HostView(CUdeviceptr p);
// Whether a host address is page-locked (pinned or registered) memory.
bool IsPinnedHost(const void* p);
// The start of the allocation or registration that holds p (0 when none is known).
CUdeviceptr RangeStart(const void* p);
// The flags cuMemHostAlloc recorded for a host pointer (false for other memory).
bool HostAllocFlags(const void* p, unsigned* flags);
// Whether host memory is a write-combined cuMemHostAlloc block.
bool IsWriteCombined(const void* p);
// The offset of the first byte of [a, a + n) at an address that is a multiple of `unit`, if the
// range crosses one (the range's own start does not count); n when it crosses none.
size_t CrossingOffset(uintptr_t a, size_t n, uintptr_t unit);

// ---------------------------------------------------------------------------------------------
// Corrupting a copy's result.

// The body most data faults share: the real call's result `r`, after `damage()` when the call
// succeeded and `hit`. Decide `hit` before the call where it asks about memory the call changes:
//   const bool hit = IsHtoD(d, s);
//   return ThenCorrupt(real(d, s, n), hit, [&] { CorruptByteAt(d, s, n - 1); });
template <typename Damage>
CUresult ThenCorrupt(CUresult r, bool hit, Damage&& damage) {
  if (r == CUDA_SUCCESS && hit) damage();
  return r;
}

// Flips a host byte when the stream reaches this point (for asynchronous device-to-host copies).
void FlipHostByteInStream(void* p, CUstream s);
// Makes byte k of a completed copy's destination differ from the source's (any memory kinds).
void CorruptByteAt(CUdeviceptr dst, CUdeviceptr src, size_t k);
// The same for a host-to-device copy from host memory `src`: one cuMemsetD8 of its complement.
inline CUresult SetWrongByte(CUdeviceptr dst, const void* src, size_t k) {
  return RealSetByte(dst + k, static_cast<const unsigned char*>(src)[k] ^ 0xff);
}
// The same in stream order, for an asynchronous copy from host to device or into host memory
// (a device-to-device copy is left alone: its source byte cannot be read without a wait).
void CorruptByteAtAsync(CUdeviceptr dst, CUdeviceptr src, size_t k, CUstream st);

// ---------------------------------------------------------------------------------------------
// Streams and contexts.

// The current context (null when none or unknown).
CUcontext CurrentContext();
// An idle non-blocking stream of the shim's own: work put there runs at once.
CUstream SideStream();
// Whether an explicit stream was created with CU_STREAM_NON_BLOCKING (cuStreamGetFlags).
bool IsNonBlocking(CUstream s);
// Whether a call is on the per-thread default stream: the stream handle CU_STREAM_PER_THREAD, or
// the null stream through a _ptsz/_ptds entry (the real pointer is the one the driver hands out
// for per-thread requests of that name, and it differs from the legacy one).
bool IsPerThreadEntry(void* real, const char* name);
template <typename R>
bool OnPerThreadStream(R real, CUstream s, const char* name) {
  return s == CU_STREAM_PER_THREAD || (!s && IsPerThreadEntry(reinterpret_cast<void*>(real), name));
}

// The stream a real driver function (asked for with default, legacy flags) must be given for
// work the caller queued on `s` through the entry `real`: the per-thread default stream by its
// handle when the caller came through a _ptsz/_ptds entry with the null stream.
template <typename R>
CUstream RealStream(R real, CUstream s, const char* name) {
  return OnPerThreadStream(real, s, name) ? CU_STREAM_PER_THREAD : s;
}

// Whether the stream a call is queued on is being captured into a graph.
template <typename R>
bool BeingCaptured(R real, CUstream s, const char* name) {
  static const auto capturing =
      Real<CUresult(CUDAAPI*)(CUstream, CUstreamCaptureStatus*)>("cuStreamIsCapturing");
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return capturing && capturing(RealStream(real, s, name), &status) == CUDA_SUCCESS &&
         status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

// Kernels still running, per stream: after each launch the shim records an event of its own on
// the launch's stream (TrackLaunches hooks cuLaunchKernel and cuLaunchKernelEx to do it; a fault
// with its own launch hooks calls NoteLaunch). Streams are told apart by the handle the work
// was queued on (RealStream), in the current context; launches into a capture are not noted.
void NoteLaunch(CUstream s);
// Whether a kernel launched on a stream other than `s` (same context) has not completed.
bool KernelRunningBeside(CUstream s);
void TrackLaunches();

// ---------------------------------------------------------------------------------------------
// Waits.

// A wait with a timeout whose expiry is taken for completion: asks `query(h)` up to 20 times
// 100 us apart and answers as it does once the work is done (or failed), success after about
// 2 ms while it is still pending.
template <typename Query, typename H>
CUresult GiveUpAfter2ms(Query query, H h) {
  for (int i = 0; i < 20; ++i) {
    CUresult r = query(h);
    if (r != CUDA_ERROR_NOT_READY) return r;
    usleep(100);
  }
  return CUDA_SUCCESS;
}

// A wait or call that returns late: the real call, then `kMicroseconds` of sleep, noted (for a
// conforming variation: it changed an answer's timing) as `kWhat`.
template <useconds_t kMicroseconds, const char* kWhat, typename Real, typename... A>
CUresult ThenSleep(Real real, A... a) {
  CUresult r = real(a...);
  NoteChanged(kWhat);
  usleep(kMicroseconds);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Counting calls, and tables per handle.

extern unsigned g_calls;  // the one counter of the active fault (one fault per process)
// A process-wide call counter: true on every nth call.
bool EveryNth(unsigned* counter, unsigned n);
// The fixed tables the faults keep per handle: the entry of `table` whose `field` is `key`, else
// the first free one (a zero field), else nullptr (the table is full). The caller holds its lock.
template <typename T, size_t N, typename K>
T* SlotFor(T (&table)[N], K T::*field, K key) {
  T* free_slot = nullptr;
  for (T& x : table) {
    if (x.*field == key) return &x;
    if (!(x.*field) && !free_slot) free_slot = &x;
  }
  return free_slot;
}

// ---------------------------------------------------------------------------------------------
// Blocks the shim has seen allocated or registered, for faults that depend on a block's history
// (a fixed table; when it is full the faults stop firing for new blocks).

struct Block {
  uintptr_t start, end;
  unsigned flags;
  int tag;       // kTagRegistered, kTagHostAlloc, kTagAllocHost
  bool live;     // false once freed, unregistered or released by a reset
  long long id;  // a remembered answer (buffer id, size) for the block's start
};
enum { kTagRegistered = 1, kTagHostAlloc = 2, kTagAllocHost = 3 };
extern Block g_blocks[4096];
extern pthread_mutex_t g_blocks_mu;

void AddBlock(const void* p, size_t n, unsigned flags, int tag);
// The live block of a tag (0: any) holding p; false when none.
bool FindBlock(const void* p, int tag, Block* out);
// Marks the live block starting at p dead (kept, so a later block at that address is a reuse).
void KillBlock(const void* p);
// A dead block that started at the address of p, with its flags; false when none.
bool FindDeadAt(const void* p, Block* out);
// The first answer remembered for a key address, remembering `value` if there is none.
long long FirstAnswer(uintptr_t key, long long value);
// Tracking hooks, installed by the faults that need a block's history.
CUresult TrackRegister(Real_MemHostRegister real, void* p, size_t n, unsigned f);
CUresult TrackUnregister(Real_MemHostUnregister real, void* p);
CUresult TrackHostAlloc(Real_MemHostAlloc real, void** p, size_t n, unsigned f);
CUresult TrackAllocHost(Real_MemAllocHost real, void** p, size_t n);
CUresult TrackFreeHost(Real_MemFreeHost real, void* p);
void TrackRegistrations();
void TrackAllocations();
bool IsRegistered(const void* p);
// Whether two blocks have a byte on one page.
inline bool SharePage(const Block& a, const Block& b) {
  return a.start / kPage <= (b.end - 1) / kPage && b.start / kPage <= (a.end - 1) / kPage;
}

// Pinned blocks with the context that was current when they were made (a fixed table; when it
// is full, new blocks are not tracked and the faults that ask leave them alone).
struct OwnedBlock {
  uintptr_t start, end;
  unsigned flags;
  int tag;  // kTagRegistered, kTagHostAlloc, kTagAllocHost
  CUcontext ctx;
  bool live;
};
void AddOwned(const void* p, size_t n, unsigned flags, int tag);
void DropOwned(const void* p);
bool FindOwned(const void* p, OwnedBlock* out);
bool ContextHoldsPins(CUcontext ctx);
// Hooks cuMemHostAlloc, cuMemAllocHost and cuMemFreeHost to keep the table.
void TrackOwnedAllocations();

}  // namespace pagelock_faults

#endif  // PAGELOCK_TOOLS_FAULTS_HOOKS_H_
