// The fault-injecting driver layer: shared declarations of shim.cc (loader, cuGetProcAddress
// interposition, log) and faults.cc (the catalogue).
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
// The ABI of a wrapped entry is the one current since CUDA 12.0; older requests pass through.
constexpr int kMinWrappedVersion = 12000;

struct EntryBase {
  const char* name;              // base name as requested, e.g. "cuMemcpyHtoD"
  void* hook;                    // set by the active fault; typed by Entry's signature
  void* real[kSlots];            // the real pointers handed out so far
  void* (*wrapper)(int slot);    // the wrapper function for a slot
};

// Called by every wrapper: notes (once per process, in the log) that the fault was reached.
void NoteFired(EntryBase* e);

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
    if (!hook) return real(a...);
    NoteFired(E);
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

// The wrappable entries: X(name without "cu", parameter list). Signatures are CUDA 12.0+ ABI.
#define PL_ENTRIES(X)                                                                        \
  X(Init, (unsigned int))                                                                    \
  X(DeviceGetCount, (int*))                                                                  \
  X(DeviceGetAttribute, (int*, CUdevice_attribute, CUdevice))                                \
  X(DeviceCanAccessPeer, (int*, CUdevice, CUdevice))                                         \
  X(DevicePrimaryCtxSetFlags, (CUdevice, unsigned int))                                      \
  X(DevicePrimaryCtxGetState, (CUdevice, unsigned int*, int*))                               \
  X(CtxGetFlags, (unsigned int*))                                                            \
  X(CtxSetFlags, (unsigned int))                                                             \
  X(CtxSynchronize, ())                                                                      \
  X(MemAlloc, (CUdeviceptr*, size_t))                                                        \
  X(MemFree, (CUdeviceptr))                                                                  \
  X(MemAllocHost, (void**, size_t))                                                          \
  X(MemHostAlloc, (void**, size_t, unsigned int))                                            \
  X(MemFreeHost, (void*))                                                                    \
  X(MemHostRegister, (void*, size_t, unsigned int))                                          \
  X(MemHostUnregister, (void*))                                                              \
  X(MemHostGetDevicePointer, (CUdeviceptr*, void*, unsigned int))                            \
  X(MemHostGetFlags, (unsigned int*, void*))                                                 \
  X(MemGetAddressRange, (CUdeviceptr*, size_t*, CUdeviceptr))                                \
  X(PointerGetAttribute, (void*, CUpointer_attribute, CUdeviceptr))                          \
  X(PointerGetAttributes, (unsigned int, CUpointer_attribute*, void**, CUdeviceptr))         \
  X(Memcpy, (CUdeviceptr, CUdeviceptr, size_t))                                              \
  X(MemcpyAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream))                               \
  X(MemcpyHtoD, (CUdeviceptr, const void*, size_t))                                          \
  X(MemcpyDtoH, (void*, CUdeviceptr, size_t))                                                \
  X(MemcpyDtoD, (CUdeviceptr, CUdeviceptr, size_t))                                          \
  X(MemcpyHtoDAsync, (CUdeviceptr, const void*, size_t, CUstream))                           \
  X(MemcpyDtoHAsync, (void*, CUdeviceptr, size_t, CUstream))                                 \
  X(MemcpyDtoDAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream))                           \
  X(MemsetD8, (CUdeviceptr, unsigned char, size_t))                                          \
  X(MemsetD32, (CUdeviceptr, unsigned int, size_t))                                          \
  X(MemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream))                           \
  X(MemsetD32Async, (CUdeviceptr, unsigned int, size_t, CUstream))                           \
  X(StreamSynchronize, (CUstream))                                                           \
  X(StreamQuery, (CUstream))                                                                 \
  X(StreamWaitEvent, (CUstream, CUevent, unsigned int))                                      \
  X(EventRecord, (CUevent, CUstream))                                                        \
  X(EventRecordWithFlags, (CUevent, CUstream, unsigned int))                                 \
  X(EventQuery, (CUevent))                                                                   \
  X(EventSynchronize, (CUevent))                                                             \
  X(EventElapsedTime, (float*, CUevent, CUevent))                                            \
  X(DeviceGetHostAtomicCapabilities,                                                         \
    (unsigned int*, const CUatomicOperation*, unsigned int, CUdevice))                       \
  X(LaunchKernel, (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,       \
                   unsigned int, unsigned int, unsigned int, CUstream, void**, void**))      \
  X(LaunchKernelEx, (const CUlaunchConfig*, CUfunction, void**, void**))

#define PL_DECLARE_ENTRY(n, args)                     \
  extern EntryBase e_##n;                             \
  using Real_##n = Wrap<CUresult args, &e_##n>::Real; \
  using Hook_##n = Wrap<CUresult args, &e_##n>::Hook;
PL_ENTRIES(PL_DECLARE_ENTRY)
#undef PL_DECLARE_ENTRY

// Hook<n>(fn) sets the hook of an entry, type-checked against the entry's signature:
// HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {...}).
#define PL_DECLARE_SETTER(n, args) \
  inline void Hook##n(Hook_##n h) { e_##n.hook = reinterpret_cast<void*>(h); }
PL_ENTRIES(PL_DECLARE_SETTER)
#undef PL_DECLARE_SETTER

// A real driver function (current ABI, default stream flags), for faults that need a second call
// (e.g. corrupting a destination after the real copy). Null when the driver lacks it.
void* RealFunction(const char* name);
template <typename Fn>
Fn Real(const char* name) {
  return reinterpret_cast<Fn>(RealFunction(name));
}

// One line in the log (PAGELOCK_FAULT_LOG), when logging is on.
void Log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// The catalogue (faults.cc).
struct Fault {
  const char* name;         // PAGELOCK_FAULT value
  const char* rule;         // the rule of suites/rules.tsv it violates
  const char* family;       // API family of the suites
  const char* kind;         // "error" | "data" | "sync" | "flag" | "capability" | "resource" | "perf"
  const char* description;  // what the buggy driver does
  void (*install)();        // sets the hooks
};
const Fault* Catalogue(size_t* count);
const Fault* FindFault(const char* name);

}  // namespace pagelock_faults

#endif  // PAGELOCK_TOOLS_FAULTS_SHIM_H_
