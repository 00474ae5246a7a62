// The helpers the areas of the catalogue share (hooks.h).
#include "tools/faults/hooks.h"

namespace pagelock_faults {
namespace {

void CUDA_CB FlipHostByte(void* p) { *static_cast<volatile unsigned char*>(p) ^= 0xff; }

OwnedBlock g_owned[1024];
pthread_mutex_t g_owned_mu = PTHREAD_MUTEX_INITIALIZER;

}  // namespace

unsigned g_calls = 0;
Block g_blocks[4096];
pthread_mutex_t g_blocks_mu = PTHREAD_MUTEX_INITIALIZER;

CUresult RealCopy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  static const auto fn = Real<Real_Memcpy>("cuMemcpy");
  return fn ? fn(dst, src, n) : CUDA_ERROR_NOT_FOUND;
}

CUresult RealSetByte(CUdeviceptr dst, unsigned char v) {
  static const auto fn = Real<Real_MemsetD8>("cuMemsetD8");
  return fn ? fn(dst, v, 1) : CUDA_ERROR_NOT_FOUND;
}

CUresult RealSetByteAsync(CUdeviceptr dst, unsigned char v, CUstream s) {
  static const auto fn = Real<Real_MemsetD8Async>("cuMemsetD8Async");
  return fn ? fn(dst, v, 1, s) : CUDA_ERROR_NOT_FOUND;
}

bool IsDevice(CUdeviceptr p) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  unsigned int type = 0;
  return fn && fn(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == CUDA_SUCCESS &&
         type == CU_MEMORYTYPE_DEVICE;
}

void FlipHostByteInStream(void* p, CUstream s) {
  static const auto fn =
      Real<CUresult(CUDAAPI*)(CUstream, CUhostFn, void*)>("cuLaunchHostFunc");
  if (fn) fn(s, &FlipHostByte, p);
}

unsigned char* HostView(CUdeviceptr p) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  void* host = nullptr;
  if (fn && fn(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p) == CUDA_SUCCESS && host)
    return static_cast<unsigned char*>(host);
  return reinterpret_cast<unsigned char*>(p);  // pageable memory: the address itself
}

bool IsHtoD(CUdeviceptr dst, CUdeviceptr src) { return IsDevice(dst) && !IsDevice(src); }
bool IsDtoH(CUdeviceptr dst, CUdeviceptr src) { return !IsDevice(dst) && IsDevice(src); }

bool IsPinnedHost(const void* p) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  unsigned int type = 0;
  return fn && fn(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, Ptr(p)) == CUDA_SUCCESS &&
         type == CU_MEMORYTYPE_HOST;
}

void CorruptByteAt(CUdeviceptr dst, CUdeviceptr src, size_t k) {
  unsigned char b = 0;
  if (RealCopy(Ptr(&b), src + k, 1) != CUDA_SUCCESS) return;
  b ^= 0xff;
  RealCopy(dst + k, Ptr(&b), 1);
}

void CorruptByteAtAsync(CUdeviceptr dst, CUdeviceptr src, size_t k, CUstream st) {
  if (!IsDevice(dst))
    FlipHostByteInStream(HostView(dst + k), st);
  else if (!IsDevice(src))
    RealSetByteAsync(dst + k, HostView(src + k)[0] ^ 0xff, st);
}

size_t CrossingOffset(uintptr_t a, size_t n, uintptr_t unit) {
  const uintptr_t next = (a / unit + 1) * unit;
  return n && next < a + n ? static_cast<size_t>(next - a) : n;
}

bool EveryNth(unsigned* counter, unsigned n) {
  return __atomic_add_fetch(counter, 1u, __ATOMIC_RELAXED) % n == 0;
}

bool IsPerThreadEntry(void* real, const char* name) {
  using Gpa = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t,
                                 CUdriverProcAddressQueryResult*);
  static const auto gpa = Real<Gpa>("cuGetProcAddress", 12000);
  void* per_thread = nullptr;
  void* legacy = nullptr;
  CUdriverProcAddressQueryResult st;
  if (!gpa ||
      gpa(name, &per_thread, CUDA_VERSION, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) !=
          CUDA_SUCCESS ||
      gpa(name, &legacy, CUDA_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st) != CUDA_SUCCESS)
    return false;
  return per_thread && per_thread != legacy && real == per_thread;
}

bool IsNonBlocking(CUstream s) {
  static const auto fn = Real<CUresult(CUDAAPI*)(CUstream, unsigned*)>("cuStreamGetFlags");
  unsigned f = 0;
  return s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD && fn &&
         fn(s, &f) == CUDA_SUCCESS && (f & CU_STREAM_NON_BLOCKING);
}

bool HostAllocFlags(const void* p, unsigned* flags) {
  static const auto fn = Real<Real_MemHostGetFlags>("cuMemHostGetFlags");
  return fn && fn(flags, const_cast<void*>(p)) == CUDA_SUCCESS;
}

CUstream SideStream() {
  static const auto create = Real<CUresult(CUDAAPI*)(CUstream*, unsigned)>("cuStreamCreate");
  static CUstream side = nullptr;
  if (!side && create) create(&side, CU_STREAM_NON_BLOCKING);
  return side;
}

void AddBlock(const void* p, size_t n, unsigned flags, int tag) {
  pthread_mutex_lock(&g_blocks_mu);
  for (Block& b : g_blocks)
    if (b.start == b.end) {
      b = {reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(p) + n, flags, tag, true, 0};
      break;
    }
  pthread_mutex_unlock(&g_blocks_mu);
}
bool FindBlock(const void* p, int tag, Block* out) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  bool found = false;
  pthread_mutex_lock(&g_blocks_mu);
  for (const Block& b : g_blocks)
    if (b.start != b.end && b.live && (!tag || b.tag == tag) && a >= b.start && a < b.end) {
      *out = b;
      found = true;
      break;
    }
  pthread_mutex_unlock(&g_blocks_mu);
  return found;
}
void KillBlock(const void* p) {
  pthread_mutex_lock(&g_blocks_mu);
  for (Block& b : g_blocks)
    if (b.start != b.end && b.live && b.start == reinterpret_cast<uintptr_t>(p)) b.live = false;
  pthread_mutex_unlock(&g_blocks_mu);
}
bool FindDeadAt(const void* p, Block* out) {
  bool found = false;
  pthread_mutex_lock(&g_blocks_mu);
  for (const Block& b : g_blocks)
    if (b.start != b.end && !b.live && b.start == reinterpret_cast<uintptr_t>(p)) {
      *out = b;
      found = true;
    }
  pthread_mutex_unlock(&g_blocks_mu);
  return found;
}
long long FirstAnswer(uintptr_t key, long long value) {
  static struct { uintptr_t key; long long value; } seen[4096];
  long long out = value;
  pthread_mutex_lock(&g_blocks_mu);
  for (auto& s : seen) {
    if (s.key == key) { out = s.value; break; }
    if (!s.key) { s = {key, value}; break; }
  }
  pthread_mutex_unlock(&g_blocks_mu);
  return out;
}

CUresult TrackRegister(Real_MemHostRegister real, void* p, size_t n, unsigned f) {
  CUresult r = real(p, n, f);
  if (r == CUDA_SUCCESS && p && n) AddBlock(p, n, f, kTagRegistered);
  return r;
}
CUresult TrackUnregister(Real_MemHostUnregister real, void* p) {
  CUresult r = real(p);
  if (r == CUDA_SUCCESS) KillBlock(p);
  return r;
}
CUresult TrackHostAlloc(Real_MemHostAlloc real, void** p, size_t n, unsigned f) {
  CUresult r = real(p, n, f);
  if (r == CUDA_SUCCESS && p && *p) AddBlock(*p, n ? n : 1, f, kTagHostAlloc);
  return r;
}
CUresult TrackAllocHost(Real_MemAllocHost real, void** p, size_t n) {
  CUresult r = real(p, n);
  if (r == CUDA_SUCCESS && p && *p) AddBlock(*p, n ? n : 1, 0, kTagAllocHost);
  return r;
}
CUresult TrackFreeHost(Real_MemFreeHost real, void* p) {
  CUresult r = real(p);
  if (r == CUDA_SUCCESS && p) KillBlock(p);
  return r;
}
void TrackRegistrations() {
  HookMemHostRegister(&TrackRegister);
  HookMemHostUnregister(&TrackUnregister);
}
void TrackAllocations() {
  HookMemHostAlloc(&TrackHostAlloc);
  HookMemAllocHost(&TrackAllocHost);
  HookMemFreeHost(&TrackFreeHost);
}
bool IsRegistered(const void* p) {
  Block b;
  return FindBlock(p, kTagRegistered, &b);
}

bool IsWriteCombined(const void* p) {
  unsigned f = 0;
  return HostAllocFlags(p, &f) && (f & CU_MEMHOSTALLOC_WRITECOMBINED);
}

CUcontext CurrentContext() {
  static const auto get = Real<CUresult(CUDAAPI*)(CUcontext*)>("cuCtxGetCurrent");
  CUcontext c = nullptr;
  return get && get(&c) == CUDA_SUCCESS ? c : nullptr;
}

void AddOwned(const void* p, size_t n, unsigned flags, int tag) {
  const CUcontext ctx = CurrentContext();
  pthread_mutex_lock(&g_owned_mu);
  for (OwnedBlock& b : g_owned)
    if (!b.live) {
      const uintptr_t s = reinterpret_cast<uintptr_t>(p);
      b = {s, s + (n ? n : 1), flags, tag, ctx, true};
      break;
    }
  pthread_mutex_unlock(&g_owned_mu);
}
void DropOwned(const void* p) {
  pthread_mutex_lock(&g_owned_mu);
  for (OwnedBlock& b : g_owned)
    if (b.live && b.start == reinterpret_cast<uintptr_t>(p)) b.live = false;
  pthread_mutex_unlock(&g_owned_mu);
}
bool FindOwned(const void* p, OwnedBlock* out) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  bool found = false;
  pthread_mutex_lock(&g_owned_mu);
  for (const OwnedBlock& b : g_owned)
    if (b.live && a >= b.start && a < b.end) {
      *out = b;
      found = true;
      break;
    }
  pthread_mutex_unlock(&g_owned_mu);
  return found;
}
bool ContextHoldsPins(CUcontext ctx) {
  bool found = false;
  pthread_mutex_lock(&g_owned_mu);
  for (const OwnedBlock& b : g_owned) found = found || (b.live && b.ctx == ctx);
  pthread_mutex_unlock(&g_owned_mu);
  return found;
}
void TrackOwnedAllocations() {
  HookMemHostAlloc([](Real_MemHostAlloc real, void** p, size_t n, unsigned f) -> CUresult {
    CUresult r = real(p, n, f);
    if (r == CUDA_SUCCESS && p && *p) AddOwned(*p, n, f, kTagHostAlloc);
    return r;
  });
  HookMemAllocHost([](Real_MemAllocHost real, void** p, size_t n) -> CUresult {
    CUresult r = real(p, n);
    if (r == CUDA_SUCCESS && p && *p) AddOwned(*p, n, 0, kTagAllocHost);
    return r;
  });
  HookMemFreeHost([](Real_MemFreeHost real, void* p) -> CUresult {
    CUresult r = real(p);
    if (r == CUDA_SUCCESS && p) DropOwned(p);
    return r;
  });
}

namespace {
struct LaunchMark {
  CUcontext ctx;
  CUstream stream;
  CUevent done;  // recorded after the stream's last launch
};
LaunchMark g_launch_marks[64];
pthread_mutex_t g_launch_mu = PTHREAD_MUTEX_INITIALIZER;
}  // namespace

void NoteLaunch(CUstream s) {
  static const auto create = Real<Real_EventCreate>("cuEventCreate");
  static const auto record = Real<Real_EventRecord>("cuEventRecord");
  const CUcontext ctx = CurrentContext();
  if (!create || !record || !ctx) return;
  pthread_mutex_lock(&g_launch_mu);
  LaunchMark* mark = nullptr;
  for (LaunchMark& m : g_launch_marks) {
    if (m.ctx == ctx && m.stream == s && m.done) {
      mark = &m;
      break;
    }
    if (!m.ctx && !mark) mark = &m;
  }
  if (mark && !mark->ctx) {
    CUevent e = nullptr;
    if (create(&e, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS && e)
      *mark = {ctx, s, e};
    else
      mark = nullptr;
  }
  if (mark) record(mark->done, s);
  pthread_mutex_unlock(&g_launch_mu);
}

bool KernelRunningBeside(CUstream s) {
  static const auto query = Real<Real_EventQuery>("cuEventQuery");
  const CUcontext ctx = CurrentContext();
  if (!query || !ctx) return false;
  bool running = false;
  pthread_mutex_lock(&g_launch_mu);
  for (const LaunchMark& m : g_launch_marks)
    if (!running && m.ctx == ctx && m.stream != s && m.done)
      running = query(m.done) == CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&g_launch_mu);
  return running;
}

void TrackLaunches() {
  HookLaunchKernel([](Real_LaunchKernel real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream st, void** p,
                      void** e) -> CUresult {
    CUresult r = real(f, gx, gy, gz, bx, by, bz, sh, st, p, e);
    if (r == CUDA_SUCCESS && !BeingCaptured(real, st, "cuLaunchKernel"))
      NoteLaunch(RealStream(real, st, "cuLaunchKernel"));
    return r;
  });
  HookLaunchKernelEx([](Real_LaunchKernelEx real, const CUlaunchConfig* c, CUfunction f, void** p,
                        void** e) -> CUresult {
    CUresult r = real(c, f, p, e);
    if (r == CUDA_SUCCESS && c && !BeingCaptured(real, c->hStream, "cuLaunchKernelEx"))
      NoteLaunch(RealStream(real, c->hStream, "cuLaunchKernelEx"));
    return r;
  });
}

CUdeviceptr RangeStart(const void* p) {
  static const auto fn = Real<Real_PointerGetAttribute>("cuPointerGetAttribute");
  CUdeviceptr base = 0;
  if (!fn || fn(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, Ptr(p)) != CUDA_SUCCESS) return 0;
  return base;
}

}  // namespace pagelock_faults
