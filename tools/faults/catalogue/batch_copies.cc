// Batches of copies: cuMemcpyBatchAsync, its 13.0 entry point and the 12.8 one with failIdx
// (cudaMemcpyBatchAsync reaches the driver there).
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "tools/faults/fault.h"
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

// What the documentation asks of a batch's arguments ("the first entry in attrsIdxs must always
// be 0 ... each entry must be greater than the previous entry and the last entry should be less
// than count ... numAttrs must be lesser than or equal to count", a valid srcAccessOrder, and
// every copy with a destination and a source). Faults that reshape a batch leave the others
// alone, so that every refusal stays the driver's.
bool WellFormed(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                const CUmemcpyAttributes* attrs, const size_t* idxs, size_t num) {
  if (!count || !num || num > count || !dsts || !srcs || !sizes || !attrs || !idxs || idxs[0])
    return false;
  for (size_t k = 0; k < num; ++k) {
    if (k && idxs[k] <= idxs[k - 1]) return false;
    if (attrs[k].srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
        attrs[k].srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
      return false;
  }
  if (idxs[num - 1] >= count) return false;
  for (size_t i = 0; i < count; ++i)
    if (!dsts[i] || !srcs[i]) return false;
  return true;
}

// The arguments of one batch, for both entry points (failIdx only through the 12.8 one).
struct CopyBatch {
  CUdeviceptr* dsts;
  CUdeviceptr* srcs;
  size_t* sizes;
  size_t count;
  CUmemcpyAttributes* attrs;
  size_t* idxs;
  size_t num;
  size_t* fail;
  CUstream stream;
};
// Installs Body on both entry points: Body()(batch, forward, stream, captured) answers the call,
// where `forward(b)` calls the entry point the caller came through (Body may change the
// arguments), `stream` is the one to queue host functions on for the caller's stream, and
// `captured` says whether that stream is being captured.
constexpr const char* kName = "cuMemcpyBatchAsync";
template <typename Body>
void HookBothBatchEntries(Body) {
  HookMemcpyBatchAsync12([](Real_MemcpyBatchAsync12 real, CUdeviceptr* d, CUdeviceptr* s,
                            size_t* n, size_t count, CUmemcpyAttributes* a, size_t* idx,
                            size_t num, size_t* fail, CUstream st) -> CUresult {
    auto forward = [real](const CopyBatch& b) {
      return real(b.dsts, b.srcs, b.sizes, b.count, b.attrs, b.idxs, b.num, b.fail, b.stream);
    };
    return Body()(CopyBatch{d, s, n, count, a, idx, num, fail, st}, forward,
                  RealStream(real, st, kName), BeingCaptured(real, st, kName));
  });
  HookMemcpyBatchAsync13([](Real_MemcpyBatchAsync13 real, CUdeviceptr* d, CUdeviceptr* s,
                            size_t* n, size_t count, CUmemcpyAttributes* a, size_t* idx,
                            size_t num, CUstream st) -> CUresult {
    auto forward = [real](const CopyBatch& b) {
      return real(b.dsts, b.srcs, b.sizes, b.count, b.attrs, b.idxs, b.num, b.stream);
    };
    return Body()(CopyBatch{d, s, n, count, a, idx, num, nullptr, st}, forward,
                  RealStream(real, st, kName), BeingCaptured(real, st, kName));
  });
}

// S24: a well-formed batch with two or more attribute entries loses its last copy (the last
// entry's range is taken to end one copy early): the batch succeeds and that copy's destination
// keeps its old bytes. Batches with one attribute entry are exact.
struct DropLastCopy {
  template <typename Forward>
  CUresult operator()(CopyBatch b, Forward forward, CUstream, bool) const {
    if (b.num < 2 || b.count < 2 ||
        !WellFormed(b.dsts, b.srcs, b.sizes, b.count, b.attrs, b.idxs, b.num))
      return forward(b);
    b.count -= 1;
    if (b.idxs[b.num - 1] >= b.count) b.num -= 1;  // keep the shortened batch well-formed
    return forward(b);
  }
};
void InstallBatchLastCopyDroppedWithSeveralAttrs() { HookBothBatchEntries(DropLastCopy()); }

// S24: a batch copy of 1 MiB or more whose size is not a multiple of 4 moves whole 4-byte words
// only: its last 1-3 bytes keep their old value. Smaller copies and multiples of 4 are exact.
struct DropPartialWord {
  template <typename Forward>
  CUresult operator()(CopyBatch b, Forward forward, CUstream, bool) const {
    size_t sizes[256];
    bool changed = false;
    if (!b.sizes || b.count > 256) return forward(b);
    for (size_t i = 0; i < b.count; ++i) {
      sizes[i] = b.sizes[i];
      if (sizes[i] >= kMiB && sizes[i] % 4) {
        sizes[i] &= ~size_t{3};
        changed = true;
      }
    }
    if (!changed) return forward(b);
    b.sizes = sizes;
    return forward(b);
  }
};
void InstallBatchLargeEntryDropsPartialWord() { HookBothBatchEntries(DropPartialWord()); }

// S25: copies whose attribute says CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL and whose source
// is host memory are read in stream order instead of before the call returns: a host function
// queued ahead of the batch copies each such source into a pinned buffer of the shim's when the
// stream reaches it, and the copy goes from there (its attribute made STREAM). So bytes the host
// writes after the call, before the stream gets there, arrive, and a stack source whose frame
// is gone is read after it is gone. Device sources, other orders, batches of more than 64 MiB of
// such sources and batches into a capture are right.
struct LateSources {
  struct Part {
    const void* src;
    size_t copy, offset, n;
  } parts[64];
  size_t count;
  unsigned char* staging;  // pinned, the shim's
  int done;                // set in stream order once the batch has read `staging`
};
LateSources* g_late[64];
pthread_mutex_t g_late_mu = PTHREAD_MUTEX_INITIALIZER;
void CUDA_CB ReadSourcesNow(void* arg) {
  auto* job = static_cast<LateSources*>(arg);
  for (size_t i = 0; i < job->count; ++i)
    memcpy(job->staging + job->parts[i].offset, job->parts[i].src, job->parts[i].n);
}
void CUDA_CB SourcesRead(void* arg) {
  __atomic_store_n(&static_cast<LateSources*>(arg)->done, 1, __ATOMIC_RELEASE);
}
// The attribute entry that applies to copy i.
size_t AttrOf(const CopyBatch& b, size_t i) {
  size_t k = 0;
  while (k + 1 < b.num && b.idxs[k + 1] <= i) ++k;
  return k;
}
// A slot of g_late for a new job, freeing the staging of finished ones (the mutex is held).
LateSources** FreeLateSlot() {
  static const auto free_host = Real<Real_MemFreeHost>("cuMemFreeHost");
  LateSources** slot = nullptr;
  for (LateSources*& job : g_late) {
    if (job && __atomic_load_n(&job->done, __ATOMIC_ACQUIRE) && free_host) {
      free_host(job->staging);
      delete job;
      job = nullptr;
    }
    if (!job && !slot) slot = &job;
  }
  return slot;
}
struct ReadDuringCallSourcesLate {
  template <typename Forward>
  CUresult operator()(CopyBatch b, Forward forward, CUstream hostfn_stream, bool captured) const {
    static const auto alloc = Real<Real_MemHostAlloc>("cuMemHostAlloc");
    static const auto free_host = Real<Real_MemFreeHost>("cuMemFreeHost");
    static const auto host_fn = Real<Real_LaunchHostFunc>("cuLaunchHostFunc");
    if (captured || !alloc || !free_host || !host_fn || b.count > 64 || b.num > 64 ||
        !hostfn_stream || hostfn_stream == CU_STREAM_LEGACY ||
        !WellFormed(b.dsts, b.srcs, b.sizes, b.count, b.attrs, b.idxs, b.num))
      return forward(b);
    auto* job = new LateSources();
    CUmemcpyAttributes attrs[64];
    CUdeviceptr srcs[64];
    memcpy(attrs, b.attrs, b.num * sizeof(attrs[0]));
    memcpy(srcs, b.srcs, b.count * sizeof(srcs[0]));
    size_t total = 0;
    for (size_t i = 0; i < b.count; ++i) {
      const size_t k = AttrOf(b, i);
      if (b.attrs[k].srcAccessOrder != CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL || !b.sizes[i] ||
          IsDevice(b.srcs[i]))
        continue;
      job->parts[job->count++] = {reinterpret_cast<const void*>(b.srcs[i]), i, total, b.sizes[i]};
      total += (b.sizes[i] + 15) & ~size_t{15};
      attrs[k].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    }
    pthread_mutex_lock(&g_late_mu);
    LateSources** slot = FreeLateSlot();
    void* staging = nullptr;
    if (!job->count || total > 64 * kMiB || !slot || alloc(&staging, total, 0) != CUDA_SUCCESS) {
      pthread_mutex_unlock(&g_late_mu);
      delete job;
      return forward(b);
    }
    job->staging = static_cast<unsigned char*>(staging);
    if (host_fn(hostfn_stream, &ReadSourcesNow, job) != CUDA_SUCCESS) {
      pthread_mutex_unlock(&g_late_mu);
      free_host(staging);
      delete job;
      return forward(b);
    }
    for (size_t i = 0; i < job->count; ++i)
      srcs[job->parts[i].copy] = Ptr(job->staging + job->parts[i].offset);
    b.attrs = attrs;
    b.srcs = srcs;
    CUresult r = forward(b);
    // Until SourcesRead has run the staging buffer may still be read: kept until then.
    host_fn(hostfn_stream, &SourcesRead, job);
    *slot = job;
    pthread_mutex_unlock(&g_late_mu);
    return r;
  }
};
void InstallBatchDuringApiCallSourceReadLate() {
  HookBothBatchEntries(ReadDuringCallSourcesLate());
}

// S26: through the 12.8 entry point, a refused batch whose error pertains to one copy reports
// the index after that copy in failIdx (counted after the increment); SIZE_MAX, for errors that
// pertain to no copy, is right, and so is everything through the 13.0 entry point.
void InstallBatchFailIdxOffByOne() {
  HookMemcpyBatchAsync12([](Real_MemcpyBatchAsync12 real, CUdeviceptr* d, CUdeviceptr* s,
                            size_t* n, size_t count, CUmemcpyAttributes* a, size_t* idx,
                            size_t num, size_t* fail, CUstream st) -> CUresult {
    CUresult r = real(d, s, n, count, a, idx, num, fail, st);
    if (r != CUDA_SUCCESS && fail && *fail != SIZE_MAX) *fail += 1;
    return r;
  });
}

const Fault kFaults[] = {
    PL_FAULT(166, "batch_last_copy_dropped_with_several_attrs", "S24", "streams", "data",
             "variant", "blind-12",
             "A batch of copies with two or more attribute entries succeeds without performing "
             "its last copy.", InstallBatchLastCopyDroppedWithSeveralAttrs),
    PL_FAULT(167, "batch_large_entry_drops_partial_word", "S24", "streams", "data", "size",
             "blind-12",
             "A batch copy of 1 MiB or more whose size is not a multiple of 4 leaves its last 1-3 "
             "bytes unwritten.", InstallBatchLargeEntryDropsPartialWord),
    PL_FAULT(168, "batch_during_api_call_source_read_late", "S25", "streams", "data", "timing",
             "blind-12",
             "Batch copies from host memory with the DuringApiCall source order read their "
             "sources in stream order, after the call returned.",
             InstallBatchDuringApiCallSourceReadLate),
    PL_FAULT(169, "batch_fail_idx_off_by_one", "S26", "streams", "error", "variant", "blind-12",
             "Through the 12.8 entry point, a batch refused for one copy reports the next copy's "
             "index in failIdx.", InstallBatchFailIdxOffByOne),
};

}  // namespace

extern const Area kBatchCopiesArea = FaultArea("batch_copies", kFaults);

}  // namespace pagelock_faults
