// Work on streams and its completion: kernel launches, context and stream synchronisation,
// stream queries and waits, host functions and stream memory operations.
#include <pthread.h>
#include <unistd.h>

#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// R77: a launch is acknowledged but never runs.
void InstallLaunchDropped() {
  HookLaunchKernel([](Real_LaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned,
                      unsigned, unsigned, unsigned, CUstream, void**, void**) -> CUresult {
    return CUDA_SUCCESS;
  });
  HookLaunchKernelEx([](Real_LaunchKernelEx, const CUlaunchConfig*, CUfunction, void**,
                        void**) -> CUresult { return CUDA_SUCCESS; });
}

// R77: a retried submission runs every kernel twice.
void InstallLaunchReplayed() {
  HookLaunchKernel([](Real_LaunchKernel real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream st, void** p,
                      void** e) -> CUresult {
    CUresult r = real(f, gx, gy, gz, bx, by, bz, sh, st, p, e);
    if (r == CUDA_SUCCESS) r = real(f, gx, gy, gz, bx, by, bz, sh, st, p, e);
    return r;
  });
  HookLaunchKernelEx([](Real_LaunchKernelEx real, const CUlaunchConfig* c, CUfunction f, void** p,
                        void** e) -> CUresult {
    CUresult r = real(c, f, p, e);
    if (r == CUDA_SUCCESS) r = real(c, f, p, e);
    return r;
  });
}

// R77: the last block of a multi-block grid is never scheduled (off by one in the grid size).
void InstallLaunchLastBlockLost() {
  HookLaunchKernel([](Real_LaunchKernel real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream st, void** p,
                      void** e) -> CUresult {
    return real(f, gx > 1 ? gx - 1 : gx, gy, gz, bx, by, bz, sh, st, p, e);
  });
  HookLaunchKernelEx([](Real_LaunchKernelEx real, const CUlaunchConfig* c, CUfunction f, void** p,
                        void** e) -> CUresult {
    if (!c || c->gridDimX <= 1) return real(c, f, p, e);
    CUlaunchConfig shorter = *c;
    shorter.gridDimX -= 1;
    return real(&shorter, f, p, e);
  });
}

// R77: cuCtxSynchronize (cudaDeviceSynchronize) returns without waiting.
void InstallCtxSyncReturnsEarly() {
  HookCtxSynchronize([](Real_CtxSynchronize) -> CUresult { return CUDA_SUCCESS; });
  HookCtxSynchronize13([](Real_CtxSynchronize13, CUcontext) -> CUresult { return CUDA_SUCCESS; });
}

// R77: cuStreamSynchronize returns without waiting.
void InstallStreamSyncReturnsEarly() {
  HookStreamSynchronize([](Real_StreamSynchronize, CUstream) -> CUresult { return CUDA_SUCCESS; });
}

// R77: cuStreamQuery reports idle while work is pending.
void InstallStreamQueryLies() {
  HookStreamQuery([](Real_StreamQuery, CUstream) -> CUresult { return CUDA_SUCCESS; });
}

// R77: cuStreamWaitEvent is ignored: a stream does not wait for another's event.
void InstallStreamWaitIgnored() {
  HookStreamWaitEvent([](Real_StreamWaitEvent, CUstream, CUevent, unsigned) -> CUresult {
    return CUDA_SUCCESS;
  });
}

// S03: cuStreamSynchronize of the per-thread default stream returns without waiting; other
// streams are waited for.
void InstallPerThreadStreamSyncReturnsEarly() {
  HookStreamSynchronize([](Real_StreamSynchronize real, CUstream s) -> CUresult {
    return OnPerThreadStream(real, s, "cuStreamSynchronize") ? CUDA_SUCCESS : real(s);
  });
}

// S06: cuStreamQuery of a non-blocking stream (CU_STREAM_NON_BLOCKING) reports idle while work
// is pending; blocking streams and the default streams answer truthfully.
void InstallNonBlockingStreamQueryLies() {
  HookStreamQuery([](Real_StreamQuery real, CUstream s) -> CUresult {
    return IsNonBlocking(s) ? CUDA_SUCCESS : real(s);
  });
}

// R98: cuStreamWaitValue64 with CU_STREAM_WAIT_VALUE_EQ compares the low 32 bits only
// (the 64-bit EQ wait is emitted as a 32-bit semaphore acquire on the word's low half): a wait
// whose low word already matches is released although the high word differs. It is queued as a
// real cuStreamWaitValue32 on the same stream. GEQ, AND and NOR 64-bit waits, the 32-bit waits
// and cuStreamBatchMemOp are exact.
void InstallWaitValue64EqComparesLowWord() {
  HookStreamWaitValue64([](Real_StreamWaitValue64 real, CUstream s, CUdeviceptr addr,
                           cuuint64_t value, unsigned flags) -> CUresult {
    using Wait32 = CUresult(CUDAAPI*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
    static const auto wait32 = Real<Wait32>("cuStreamWaitValue32");
    if ((flags & 0x3u) != CU_STREAM_WAIT_VALUE_EQ || !wait32) return real(s, addr, value, flags);
    return wait32(RealStream(real, s, "cuStreamWaitValue64"), addr,
                  static_cast<cuuint32_t>(value), flags);
  });
}

// R170: cuStreamBatchMemOp whose array has a write (WRITE_VALUE_32 / _64) after a wait
// (WAIT_VALUE_32 / _64) enqueues every write of the batch first, then the other operations in
// their order (the batch is split by operation kind): the writes land before the wait is
// satisfied. Batches whose writes all come before their waits, batches without a wait, and the
// single cuStreamWaitValue* / cuStreamWriteValue* calls are exact.
bool IsWriteOp(const CUstreamBatchMemOpParams& op) {
  return op.operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ||
         op.operation == CU_STREAM_MEM_OP_WRITE_VALUE_64;
}
bool IsWaitOp(const CUstreamBatchMemOpParams& op) {
  return op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ||
         op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
}
void InstallBatchMemOpWritesHoistedBeforeWait() {
  HookStreamBatchMemOp([](Real_StreamBatchMemOp real, CUstream s, unsigned n,
                          CUstreamBatchMemOpParams* ops, unsigned f) -> CUresult {
    bool waited = false, hoist = false;
    for (unsigned i = 0; ops && i < n; ++i) {
      hoist = hoist || (waited && IsWriteOp(ops[i]));
      waited = waited || IsWaitOp(ops[i]);
    }
    if (!hoist) return real(s, n, ops, f);
    CUstreamBatchMemOpParams* reordered = new CUstreamBatchMemOpParams[n];
    unsigned k = 0;
    for (unsigned i = 0; i < n; ++i)
      if (IsWriteOp(ops[i])) reordered[k++] = ops[i];
    for (unsigned i = 0; i < n; ++i)
      if (!IsWriteOp(ops[i])) reordered[k++] = ops[i];
    CUresult r = real(s, n, reordered, f);
    delete[] reordered;
    return r;
  });
}

// R77: every 32nd kernel launch of the process is acknowledged but never runs.
void InstallEvery32ndLaunchDropped() {
  HookLaunchKernel([](Real_LaunchKernel real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream st, void** p,
                      void** e) -> CUresult {
    if (EveryNth(&g_calls, 32)) return CUDA_SUCCESS;
    return real(f, gx, gy, gz, bx, by, bz, sh, st, p, e);
  });
  HookLaunchKernelEx([](Real_LaunchKernelEx real, const CUlaunchConfig* c, CUfunction f, void** p,
                        void** e) -> CUresult {
    return EveryNth(&g_calls, 32) ? CUDA_SUCCESS : real(c, f, p, e);
  });
}

// S03: cuStreamSynchronize gives up after about 2 ms and reports success.
void InstallStreamSyncTimesOut() {
  HookStreamSynchronize([](Real_StreamSynchronize real, CUstream s) -> CUresult {
    static const auto query = Real<Real_StreamQuery>("cuStreamQuery");
    return query ? GiveUpAfter2ms(query, s) : real(s);
  });
}

// S03: a host function (cuLaunchHostFunc, cudaLaunchHostFunc) runs at once, before the work
// queued ahead of it on its stream has completed.
void InstallHostFuncRunsEarly() {
  HookLaunchHostFunc([](Real_LaunchHostFunc real, CUstream s, CUhostFn fn, void* data) -> CUresult {
    return real(SideStream() ? SideStream() : s, fn, data);
  });
}

// S04: cuStreamWaitEvent on an event whose work is still pending holds the waiting stream for
// about 2 ms instead of until the event completes (a bounded device-side wait whose timeout is
// taken for the event): waits on short work are right, a stream waiting for longer work runs
// ahead of it. Waits on streams being captured are left alone (they are graph edges).
void CUDA_CB PauseTwoMs(void*) { usleep(2000); }
void InstallStreamWaitEventGivesUpAfter2ms() {
  HookStreamWaitEvent([](Real_StreamWaitEvent real, CUstream s, CUevent e, unsigned f) -> CUresult {
    static const auto query = Real<Real_EventQuery>("cuEventQuery");
    static const auto capturing =
        Real<CUresult(CUDAAPI*)(CUstream, CUstreamCaptureStatus*)>("cuStreamIsCapturing");
    static const auto host_fn = Real<Real_LaunchHostFunc>("cuLaunchHostFunc");
    // The shim's real functions take the legacy null stream: name the per-thread one.
    const CUstream target =
        OnPerThreadStream(real, s, "cuStreamWaitEvent") ? CU_STREAM_PER_THREAD : s;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (!query || !capturing || !host_fn || capturing(target, &status) != CUDA_SUCCESS ||
        status != CU_STREAM_CAPTURE_STATUS_NONE || query(e) != CUDA_ERROR_NOT_READY)
      return real(s, e, f);
    return host_fn(target, &PauseTwoMs, nullptr) == CUDA_SUCCESS ? CUDA_SUCCESS : real(s, e, f);
  });
}

// S03: a host function queued on a stream that has had an asynchronous memset since its last
// host function runs at once, not in stream order (memsets run on another engine and the host
// function's dependency is taken from the stream's last copy or kernel only): its callback runs
// before the memset, and the work ahead of it, are done. Host functions on streams with no
// memset since the last one are right.
thread_local bool t_memset_on_per_thread = false;  // the per-thread stream is one per thread
CUstream g_memset_streams[256];  // other streams (the legacy one as CU_STREAM_LEGACY) with one
pthread_mutex_t g_memset_mu = PTHREAD_MUTEX_INITIALIZER;
// The stream a call is on, with the null stream named as the legacy or the per-thread one.
template <typename R>
CUstream StreamKey(R real, CUstream s, const char* name) {
  if (s && s != CU_STREAM_LEGACY) return s;
  return OnPerThreadStream(real, s, name) ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
}
// Notes a memset on a stream (note) or takes the note (!note); returns whether one was noted.
bool MemsetNoted(CUstream key, bool note) {
  if (key == CU_STREAM_PER_THREAD) {
    const bool was = t_memset_on_per_thread;
    t_memset_on_per_thread = note;
    return was;
  }
  bool was = false;
  pthread_mutex_lock(&g_memset_mu);
  for (CUstream& x : g_memset_streams)
    if (x == key) {
      was = true;
      if (!note) x = nullptr;
      break;
    }
  if (note && !was)
    for (CUstream& x : g_memset_streams)
      if (!x) {
        x = key;
        break;
      }
  pthread_mutex_unlock(&g_memset_mu);
  return was;
}
void InstallHostFuncAfterMemsetRunsEarly() {
  HookMemsetD8Async([](Real_MemsetD8Async real, CUdeviceptr d, unsigned char v, size_t n,
                       CUstream st) -> CUresult {
    CUresult r = real(d, v, n, st);
    if (r == CUDA_SUCCESS) MemsetNoted(StreamKey(real, st, "cuMemsetD8Async"), true);
    return r;
  });
  HookMemsetD16Async([](Real_MemsetD16Async real, CUdeviceptr d, unsigned short v, size_t n,
                        CUstream st) -> CUresult {
    CUresult r = real(d, v, n, st);
    if (r == CUDA_SUCCESS) MemsetNoted(StreamKey(real, st, "cuMemsetD16Async"), true);
    return r;
  });
  HookMemsetD32Async([](Real_MemsetD32Async real, CUdeviceptr d, unsigned v, size_t n,
                        CUstream st) -> CUresult {
    CUresult r = real(d, v, n, st);
    if (r == CUDA_SUCCESS) MemsetNoted(StreamKey(real, st, "cuMemsetD32Async"), true);
    return r;
  });
  HookMemsetD2D8Async([](Real_MemsetD2D8Async real, CUdeviceptr d, size_t pitch, unsigned char v,
                         size_t w, size_t h, CUstream st) -> CUresult {
    CUresult r = real(d, pitch, v, w, h, st);
    if (r == CUDA_SUCCESS) MemsetNoted(StreamKey(real, st, "cuMemsetD2D8Async"), true);
    return r;
  });
  HookLaunchHostFunc([](Real_LaunchHostFunc real, CUstream s, CUhostFn fn, void* data) -> CUresult {
    // On the shim's idle stream it runs at once; where that stream cannot take it (another
    // context's), it stays in order rather than never running.
    if (MemsetNoted(StreamKey(real, s, "cuLaunchHostFunc"), false) && SideStream() &&
        real(SideStream(), fn, data) == CUDA_SUCCESS)
      return CUDA_SUCCESS;
    return real(s, fn, data);
  });
}

// P15: a kernel launched while a kernel launched on another stream of the context is still
// running is scheduled one block short (the grid is sized for the SMs left over and its last
// block dropped): its last block never runs. Launches onto an idle device, behind work of their
// own stream only, and launches into a capture are right.
void InstallLaunchBesideRunningKernelLosesLastBlock() {
  HookLaunchKernel([](Real_LaunchKernel real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream st, void** p,
                      void** e) -> CUresult {
    if (BeingCaptured(real, st, "cuLaunchKernel"))
      return real(f, gx, gy, gz, bx, by, bz, sh, st, p, e);
    const CUstream own = RealStream(real, st, "cuLaunchKernel");
    const bool beside = gx > 1 && KernelRunningBeside(own);
    CUresult r = real(f, beside ? gx - 1 : gx, gy, gz, bx, by, bz, sh, st, p, e);
    if (r == CUDA_SUCCESS) NoteLaunch(own);
    return r;
  });
  HookLaunchKernelEx([](Real_LaunchKernelEx real, const CUlaunchConfig* c, CUfunction f, void** p,
                        void** e) -> CUresult {
    if (!c || BeingCaptured(real, c->hStream, "cuLaunchKernelEx")) return real(c, f, p, e);
    const CUstream own = RealStream(real, c->hStream, "cuLaunchKernelEx");
    CUlaunchConfig shorter = *c;
    if (c->gridDimX > 1 && KernelRunningBeside(own)) shorter.gridDimX -= 1;
    CUresult r = real(&shorter, f, p, e);
    if (r == CUDA_SUCCESS) NoteLaunch(own);
    return r;
  });
}

const Fault kFaults[] = {
    PL_FAULT(13, "launch_dropped", "R77", "hostalloc", "data", "baseline", "catalogue-1",
             "A kernel launch is acknowledged but never runs.", InstallLaunchDropped),
    PL_FAULT(14, "launch_replayed", "R79", "atomics", "data", "baseline", "catalogue-1",
             "A retried submission runs every kernel twice.", InstallLaunchReplayed),
    PL_FAULT(15, "launch_last_block_lost", "R77", "hostalloc", "data", "baseline", "catalogue-1",
             "The last block of a multi-block grid is never scheduled (off by one).",
             InstallLaunchLastBlockLost),
    PL_FAULT(16, "ctx_sync_returns_early", "R77", "hostalloc", "sync", "baseline", "catalogue-1",
             "cuCtxSynchronize (cudaDeviceSynchronize) returns without waiting.",
             InstallCtxSyncReturnsEarly),
    PL_FAULT(17, "stream_sync_returns_early", "R77", "atomics", "sync", "baseline", "catalogue-1",
             "cuStreamSynchronize returns without waiting.", InstallStreamSyncReturnsEarly),
    PL_FAULT(19, "stream_query_lies", "R77", "atomics", "sync", "baseline", "catalogue-1",
             "cuStreamQuery reports idle while work is pending.", InstallStreamQueryLies),
    PL_FAULT(21, "stream_wait_ignored", "R77", "atomics", "sync", "baseline", "catalogue-1",
             "cuStreamWaitEvent is ignored: streams do not wait for each other's events.",
             InstallStreamWaitIgnored),
    PL_FAULT(96, "per_thread_stream_sync_returns_early", "S03", "streams", "sync",
             "variant", "shapes",
             "cuStreamSynchronize of the per-thread default stream returns without waiting.",
             InstallPerThreadStreamSyncReturnsEarly),
    PL_FAULT(97, "non_blocking_stream_query_lies", "S06", "streams", "sync", "variant", "shapes",
             "cuStreamQuery of a non-blocking stream reports idle while work is pending.",
             InstallNonBlockingStreamQueryLies),
    PL_FAULT(108, "wait_value64_eq_compares_low_word", "R98", "streams", "sync",
             "variant", "blind-10",
             "cuStreamWaitValue64 with EQ compares only the low 32 bits of the word.",
             InstallWaitValue64EqComparesLowWord),
    PL_FAULT(112, "batch_memop_writes_hoisted_before_wait", "R170", "streams", "sync",
             "variant", "blind-11",
             "cuStreamBatchMemOp with a write after a wait enqueues the batch's writes before its "
             "waits.", InstallBatchMemOpWritesHoistedBeforeWait),
    PL_FAULT(117, "every_32nd_launch_dropped", "R77", "hostalloc", "data", "stateful", "shapes",
             "Every 32nd kernel launch is acknowledged but never runs.",
             InstallEvery32ndLaunchDropped),
    PL_FAULT(138, "stream_sync_times_out", "S03", "streams", "sync", "timing", "shapes",
             "cuStreamSynchronize gives up after about 2 ms and reports success.",
             InstallStreamSyncTimesOut),
    PL_FAULT(139, "host_func_runs_early", "S03", "streams", "sync", "timing", "shapes",
             "A host function runs at once, before the work queued ahead of it completes.",
             InstallHostFuncRunsEarly),
    PL_FAULT(142, "stream_wait_event_gives_up_after_2ms", "S04", "streams", "sync",
             "timing", "blind-9",
             "cuStreamWaitEvent on a pending event holds the stream for about 2 ms instead of "
             "until the event completes.", InstallStreamWaitEventGivesUpAfter2ms),
    PL_FAULT(143, "host_func_after_memset_runs_early", "S03", "streams", "sync",
             "timing", "blind-9",
             "A host function queued after an asynchronous memset on its stream runs at once, "
             "before the memset and the work ahead of it complete.",
             InstallHostFuncAfterMemsetRunsEarly),
    PL_FAULT(173, "launch_beside_running_kernel_loses_last_block", "P15", "bandwidth", "data",
             "timing", "blind-12",
             "A kernel launched while a kernel of another stream is still running loses its last "
             "block.", InstallLaunchBesideRunningKernelLosesLastBlock),
};

}  // namespace

extern const Area kStreamsArea = FaultArea("streams", kFaults);

}  // namespace pagelock_faults
