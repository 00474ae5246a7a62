// The fault-injecting driver layer: what shim.cc (loader, cuGetProcAddress interposition, log)
// gives the catalogue (fault.h, catalogue.cc and the areas under catalogue/).
//
// The CUDA runtime reaches almost every driver function through cuGetProcAddress. For each
// function a fault may change (the "wrappable" entries below) the shim keeps the real function
// pointers it handed out and a hook: when the active fault set a hook, cuGetProcAddress returns a
// wrapper that calls hook(real, args...); otherwise the real pointer itself (no fault: nothing
// is wrapped, so the control run executes the real driver's code only).
#ifndef PAGELOCK_TOOLS_FAULTS_SHIM_H_
#define PAGELOCK_TOOLS_FAULTS_SHIM_H_

#include <cuda.h>  // types and enums only: the shim never calls a cu* name directly

#include <cstddef>
#include <cstdint>

namespace pagelock_faults {

// Wrappers per entry: one per distinct real pointer (default stream, per-thread stream, ...).
constexpr int kSlots = 4;
constexpr int kNoMax = 1 << 30;

struct EntryBase {
  const char* name;              // base name as requested, e.g. "cuMemcpyHtoD"
  int min_version;               // requests for versions in [min_version, max_version) get
  int max_version;               //   the ABI of this entry (cudaTypedefs.h: PFN_<name>_v<N>)
  void* hook;                    // set by the active fault; typed by Entry's signature
  void* real[kSlots];            // the real pointers handed out so far
  void* (*wrapper)(int slot);    // the wrapper function for a slot
};

// Called by every wrapper: notes (once per process, in the log) that the fault was reached.
void NoteFired(EntryBase* e);
// Called by a hook when it really changed an answer (conforming variations): one "changed" line
// per distinct `what` (a string literal) per process, so a variation that never changed
// anything reads as not exercised rather than as conforming.
void NoteChanged(const char* what);

template <typename Sig, EntryBase* E>
struct Wrap;
template <typename... A, EntryBase* E>
struct Wrap<CUresult(A...), E> {
  using Real = CUresult(CUDAAPI*)(A...);
  using Hook = CUresult (*)(Real, A...);
  template <int S>
  static CUresult CUDAAPI Fn(A... a) {
    Real real = reinterpret_cast<Real>(E->real[S]);
    Hook hook = reinterpret_cast<Hook>(E->hook);
    NoteFired(E);  // the census (PAGELOCK_FAULT=census) wraps every entry without a hook
    if (!hook) return real(a...);
    return hook(real, a...);
  }
  static void* Get(int s) {
    static void* const table[kSlots] = {reinterpret_cast<void*>(&Fn<0>),
                                        reinterpret_cast<void*>(&Fn<1>),
                                        reinterpret_cast<void*>(&Fn<2>),
                                        reinterpret_cast<void*>(&Fn<3>)};
    return table[s];
  }
};

// The wrappable entries: X(id, name, first version, end version, parameter list). The CUDA
// runtime asks cuGetProcAddress for each function with the version its ABI appeared in (e.g.
// cuMemcpyHtoD at 3020, the 64-bit one), the harness with CUDA_VERSION; a request outside an
// entry's range has another ABI and is passed through unwrapped.
#define PL_ENTRIES(X)                                                                        \
  X(Init, "cuInit", 2000, kNoMax, (unsigned int))                                            \
  X(DeviceGetCount, "cuDeviceGetCount", 2000, kNoMax, (int*))                                \
  X(DeviceGetAttribute, "cuDeviceGetAttribute", 2000, kNoMax,                                \
    (int*, CUdevice_attribute, CUdevice))                                                    \
  X(DeviceCanAccessPeer, "cuDeviceCanAccessPeer", 4000, kNoMax, (int*, CUdevice, CUdevice))  \
  X(DevicePrimaryCtxSetFlags, "cuDevicePrimaryCtxSetFlags", 7000, kNoMax,                    \
    (CUdevice, unsigned int))                                                                \
  X(DevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState", 7000, kNoMax,                    \
    (CUdevice, unsigned int*, int*))                                                         \
  X(CtxGetFlags, "cuCtxGetFlags", 7000, kNoMax, (unsigned int*))                             \
  X(CtxSetFlags, "cuCtxSetFlags", 12010, kNoMax, (unsigned int))                             \
  X(CtxSynchronize, "cuCtxSynchronize", 2000, 13000, ())                                     \
  X(CtxSynchronize13, "cuCtxSynchronize", 13000, kNoMax, (CUcontext))                        \
  X(MemAlloc, "cuMemAlloc", 3020, kNoMax, (CUdeviceptr*, size_t))                            \
  X(MemFree, "cuMemFree", 3020, kNoMax, (CUdeviceptr))                                       \
  X(MemAllocHost, "cuMemAllocHost", 3020, kNoMax, (void**, size_t))                          \
  X(MemHostAlloc, "cuMemHostAlloc", 2020, kNoMax, (void**, size_t, unsigned int))            \
  X(MemFreeHost, "cuMemFreeHost", 2000, kNoMax, (void*))                                     \
  X(MemHostRegister, "cuMemHostRegister", 4000, kNoMax, (void*, size_t, unsigned int))       \
  X(MemHostUnregister, "cuMemHostUnregister", 4000, kNoMax, (void*))                         \
  X(MemHostGetDevicePointer, "cuMemHostGetDevicePointer", 3020, kNoMax,                      \
    (CUdeviceptr*, void*, unsigned int))                                                     \
  X(MemHostGetFlags, "cuMemHostGetFlags", 2030, kNoMax, (unsigned int*, void*))              \
  X(MemGetAddressRange, "cuMemGetAddressRange", 3020, kNoMax,                                \
    (CUdeviceptr*, size_t*, CUdeviceptr))                                                    \
  X(PointerGetAttribute, "cuPointerGetAttribute", 4000, kNoMax,                              \
    (void*, CUpointer_attribute, CUdeviceptr))                                               \
  X(PointerGetAttributes, "cuPointerGetAttributes", 7000, kNoMax,                            \
    (unsigned int, CUpointer_attribute*, void**, CUdeviceptr))                               \
  X(Memcpy, "cuMemcpy", 4000, kNoMax, (CUdeviceptr, CUdeviceptr, size_t))                    \
  X(MemcpyAsync, "cuMemcpyAsync", 4000, kNoMax, (CUdeviceptr, CUdeviceptr, size_t, CUstream)) \
  X(MemcpyHtoD, "cuMemcpyHtoD", 3020, kNoMax, (CUdeviceptr, const void*, size_t))            \
  X(MemcpyDtoH, "cuMemcpyDtoH", 3020, kNoMax, (void*, CUdeviceptr, size_t))                  \
  X(MemcpyDtoD, "cuMemcpyDtoD", 3020, kNoMax, (CUdeviceptr, CUdeviceptr, size_t))            \
  X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync", 3020, kNoMax,                                      \
    (CUdeviceptr, const void*, size_t, CUstream))                                            \
  X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync", 3020, kNoMax, (void*, CUdeviceptr, size_t, CUstream)) \
  X(MemcpyDtoDAsync, "cuMemcpyDtoDAsync", 3020, kNoMax,                                      \
    (CUdeviceptr, CUdeviceptr, size_t, CUstream))                                            \
  X(MemsetD8, "cuMemsetD8", 3020, kNoMax, (CUdeviceptr, unsigned char, size_t))              \
  X(MemsetD32, "cuMemsetD32", 3020, kNoMax, (CUdeviceptr, unsigned int, size_t))             \
  X(MemsetD8Async, "cuMemsetD8Async", 3020, kNoMax,                                          \
    (CUdeviceptr, unsigned char, size_t, CUstream))                                          \
  X(MemsetD32Async, "cuMemsetD32Async", 3020, kNoMax,                                        \
    (CUdeviceptr, unsigned int, size_t, CUstream))                                           \
  X(MemsetD2D8, "cuMemsetD2D8", 3020, kNoMax,                                                \
    (CUdeviceptr, size_t, unsigned char, size_t, size_t))                                    \
  X(MemsetD2D8Async, "cuMemsetD2D8Async", 3020, kNoMax,                                      \
    (CUdeviceptr, size_t, unsigned char, size_t, size_t, CUstream))                          \
  X(StreamSynchronize, "cuStreamSynchronize", 2000, kNoMax, (CUstream))                      \
  X(StreamQuery, "cuStreamQuery", 2000, kNoMax, (CUstream))                                  \
  X(StreamWaitEvent, "cuStreamWaitEvent", 3020, kNoMax, (CUstream, CUevent, unsigned int))   \
  X(EventRecord, "cuEventRecord", 2000, kNoMax, (CUevent, CUstream))                         \
  X(EventRecordWithFlags, "cuEventRecordWithFlags", 11010, kNoMax,                           \
    (CUevent, CUstream, unsigned int))                                                       \
  X(EventQuery, "cuEventQuery", 2000, kNoMax, (CUevent))                                     \
  X(EventSynchronize, "cuEventSynchronize", 2000, kNoMax, (CUevent))                         \
  X(EventElapsedTime, "cuEventElapsedTime", 2000, kNoMax, (float*, CUevent, CUevent))        \
  X(DeviceGetHostAtomicCapabilities, "cuDeviceGetHostAtomicCapabilities", 13000, kNoMax,     \
    (unsigned int*, const CUatomicOperation*, unsigned int, CUdevice))                       \
  X(LaunchKernel, "cuLaunchKernel", 4000, kNoMax,                                            \
    (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,       \
     unsigned int, unsigned int, CUstream, void**, void**))                                  \
  X(LaunchKernelEx, "cuLaunchKernelEx", 11060, kNoMax,                                       \
    (const CUlaunchConfig*, CUfunction, void**, void**))                                     \
  X(Memcpy2D, "cuMemcpy2D", 3020, kNoMax, (const CUDA_MEMCPY2D*))                            \
  X(Memcpy2DUnaligned, "cuMemcpy2DUnaligned", 3020, kNoMax, (const CUDA_MEMCPY2D*))          \
  X(Memcpy2DAsync, "cuMemcpy2DAsync", 3020, kNoMax, (const CUDA_MEMCPY2D*, CUstream))        \
  X(Memcpy3D, "cuMemcpy3D", 3020, kNoMax, (const CUDA_MEMCPY3D*))                            \
  X(Memcpy3DAsync, "cuMemcpy3DAsync", 3020, kNoMax, (const CUDA_MEMCPY3D*, CUstream))        \
  X(MemsetD16, "cuMemsetD16", 3020, kNoMax, (CUdeviceptr, unsigned short, size_t))           \
  X(MemsetD16Async, "cuMemsetD16Async", 3020, kNoMax,                                        \
    (CUdeviceptr, unsigned short, size_t, CUstream))                                         \
  X(LaunchHostFunc, "cuLaunchHostFunc", 10000, kNoMax, (CUstream, CUhostFn, void*))          \
  X(DevicePrimaryCtxReset, "cuDevicePrimaryCtxReset", 7000, kNoMax, (CUdevice))              \
  X(MemPoolTrimTo, "cuMemPoolTrimTo", 11020, kNoMax, (CUmemoryPool, size_t))                 \
  X(MemAdvise, "cuMemAdvise", 8000, 12020, (CUdeviceptr, size_t, CUmem_advise, CUdevice))    \
  X(MemAdvise12, "cuMemAdvise", 12020, kNoMax,                                               \
    (CUdeviceptr, size_t, CUmem_advise, CUmemLocation))                                      \
  X(MemPrefetchAsync, "cuMemPrefetchAsync", 8000, 12020,                                     \
    (CUdeviceptr, size_t, CUdevice, CUstream))                                               \
  X(MemPrefetchAsync12, "cuMemPrefetchAsync", 12020, kNoMax,                                 \
    (CUdeviceptr, size_t, CUmemLocation, unsigned int, CUstream))                            \
  X(CtxDestroy, "cuCtxDestroy", 4000, kNoMax, (CUcontext))                                   \
  X(StreamWaitValue64, "cuStreamWaitValue64", 9000, kNoMax,                                  \
    (CUstream, CUdeviceptr, cuuint64_t, unsigned int))                                       \
  X(MemsetD2D32, "cuMemsetD2D32", 3020, kNoMax,                                              \
    (CUdeviceptr, size_t, unsigned int, size_t, size_t))                                     \
  X(MemsetD2D32Async, "cuMemsetD2D32Async", 3020, kNoMax,                                    \
    (CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream))                           \
  X(MemPoolCreate, "cuMemPoolCreate", 11020, kNoMax, (CUmemoryPool*, const CUmemPoolProps*)) \
  X(MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, kNoMax,                         \
    (CUdeviceptr*, size_t, CUmemoryPool, CUstream))                                          \
  X(MemsetD2D16, "cuMemsetD2D16", 3020, kNoMax,                                              \
    (CUdeviceptr, size_t, unsigned short, size_t, size_t))                                   \
  X(MemsetD2D16Async, "cuMemsetD2D16Async", 3020, kNoMax,                                    \
    (CUdeviceptr, size_t, unsigned short, size_t, size_t, CUstream))                         \
  X(StreamBatchMemOp, "cuStreamBatchMemOp", 8000, kNoMax,                                    \
    (CUstream, unsigned int, CUstreamBatchMemOpParams*, unsigned int))                       \
  X(MemFreeAsync, "cuMemFreeAsync", 11020, kNoMax, (CUdeviceptr, CUstream))                  \
  X(GraphLaunch, "cuGraphLaunch", 10000, kNoMax, (CUgraphExec, CUstream))                    \
  X(GraphExecDestroy, "cuGraphExecDestroy", 10000, kNoMax, (CUgraphExec))                    \
  X(EventCreate, "cuEventCreate", 2000, kNoMax, (CUevent*, unsigned int))                   \
  X(MemCreate, "cuMemCreate", 10020, kNoMax,                                                 \
    (CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long)) \
  X(MemRelease, "cuMemRelease", 10020, kNoMax, (CUmemGenericAllocationHandle))              \
  X(MemMap, "cuMemMap", 10020, kNoMax,                                                       \
    (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long))         \
  X(MemUnmap, "cuMemUnmap", 10020, kNoMax, (CUdeviceptr, size_t))                            \
  X(MemSetAccess, "cuMemSetAccess", 10020, kNoMax,                                           \
    (CUdeviceptr, size_t, const CUmemAccessDesc*, size_t))                                   \
  X(MemGetAccess, "cuMemGetAccess", 10020, kNoMax,                                           \
    (unsigned long long*, const CUmemLocation*, CUdeviceptr))                                \
  X(MemImportFromShareableHandle, "cuMemImportFromShareableHandle", 10020, kNoMax,           \
    (CUmemGenericAllocationHandle*, void*, CUmemAllocationHandleType))                       \
  X(MemcpyBatchAsync12, "cuMemcpyBatchAsync", 12080, 13000,                                  \
    (CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*, size_t*, size_t,      \
     size_t*, CUstream))                                                                     \
  X(MemcpyBatchAsync13, "cuMemcpyBatchAsync", 13000, kNoMax,                                 \
    (CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*, size_t*, size_t,      \
     CUstream))                                                                              \
  X(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 11040, kNoMax,                 \
    (CUgraphExec*, CUgraph, unsigned long long))                                             \
  X(GraphInstantiateWithParams, "cuGraphInstantiateWithParams", 12000, kNoMax,               \
    (CUgraphExec*, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS*))                                 \
  X(GraphExecMemcpyNodeSetParams, "cuGraphExecMemcpyNodeSetParams", 10020, kNoMax,           \
    (CUgraphExec, CUgraphNode, const CUDA_MEMCPY3D*, CUcontext))                             \
  X(GraphExecMemsetNodeSetParams, "cuGraphExecMemsetNodeSetParams", 10020, kNoMax,           \
    (CUgraphExec, CUgraphNode, const CUDA_MEMSET_NODE_PARAMS*, CUcontext))                   \
  X(GraphExecNodeSetParams, "cuGraphExecNodeSetParams", 12020, kNoMax,                       \
    (CUgraphExec, CUgraphNode, CUgraphNodeParams*))                                          \
  X(GraphExecUpdate, "cuGraphExecUpdate", 10020, 12000,                                      \
    (CUgraphExec, CUgraph, CUgraphNode*, CUgraphExecUpdateResult*))                          \
  X(GraphExecUpdate12, "cuGraphExecUpdate", 12000, kNoMax,                                   \
    (CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*))

#define PL_DECLARE_ENTRY(n, name, lo, hi, args)       \
  extern EntryBase e_##n;                             \
  using Real_##n = Wrap<CUresult args, &e_##n>::Real; \
  using Hook_##n = Wrap<CUresult args, &e_##n>::Hook;
PL_ENTRIES(PL_DECLARE_ENTRY)
#undef PL_DECLARE_ENTRY

// Hook<n>(fn) sets the hook of an entry, type-checked against the entry's signature:
// HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {...}).
#define PL_DECLARE_SETTER(n, name, lo, hi, args) \
  inline void Hook##n(Hook_##n h) { e_##n.hook = reinterpret_cast<void*>(h); }
PL_ENTRIES(PL_DECLARE_SETTER)
#undef PL_DECLARE_SETTER

// A real driver function (default stream flags), for faults that need a second call (e.g.
// corrupting a destination after the real copy). Null when the driver lacks it. The ABI is the
// one of CUDA `version` (default: these headers'): a name whose signature changed in a later
// version must ask for the version its Fn was written for (cuCtxGetDevice at 13.0 is the
// two-argument cuCtxGetDevice_v2).
void* RealFunction(const char* name, int version = CUDA_VERSION);
template <typename Fn>
Fn Real(const char* name, int version = CUDA_VERSION) {
  return reinterpret_cast<Fn>(RealFunction(name, version));
}

// One line in the log (PAGELOCK_FAULT_LOG), when logging is on.
void Log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace pagelock_faults

#endif  // PAGELOCK_TOOLS_FAULTS_SHIM_H_
