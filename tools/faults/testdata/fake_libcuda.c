/* A tiny fake driver for the shim's CPU tests: a few entry points over host memory, reachable
   directly and through cuGetProcAddress_v2 ("device" pointers are host addresses here). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
#define OK 0

CUresult cuInit(unsigned int flags) { return flags == 0 ? OK : 1; }
CUresult cuDriverGetVersion(int* v) { *v = 13000; return OK; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return OK; }
/* Set by a client: the link has no native host atomics (attributes 86 and 147 read 0). */
int fake_no_native_atomics = 0;
CUresult cuDeviceGetAttribute(int* v, int attr, int dev) {
  *v = fake_no_native_atomics && (attr == 86 || attr == 147) ? 0 : 1000 + attr;
  return OK;
}
/* As the H200 (a PCIe link without native host atomics): every operation's mask is 0. */
CUresult cuDeviceGetHostAtomicCapabilities(unsigned* caps, const int* ops, unsigned n, int dev) {
  if (!caps || !ops || !n) return 1;  /* INVALID_VALUE */
  for (unsigned i = 0; i < n; ++i) {
    if (ops[i] < 0 || ops[i] > 12) return 1;  /* past CU_ATOMIC_OPERATION_FLOAT_MAX: INVALID_VALUE */
    caps[i] = 0;
  }
  return OK;
}
/* Set by a client: answer as r580 does where it deviates from the documentation
   (docs/platforms/driver-r580.md): cuMemHostGetFlags of registered memory succeeds with 0x2 (r58)
   and of an allocation gives the Portable and WriteCombined bits of the oldest live allocation,
   the one that opened the chunk (r56-portable); cuPointerGetAttributes of an unknown byte gives
   the byte's own address as HOST_POINTER and leaves the range slots unwritten (r151). */
int fake_r580_deviations = 0;
/* Pinned blocks and registrations, so that pointer attributes, unregister and the overlap
   check answer the way r580 does for the conforming variations' tests. */
#define INVALID 1
typedef struct { uintptr_t start, end; } Span;
static Span g_alloc[64], g_reg[64], g_dev[64];
static unsigned g_alloc_flags[64];              /* the flags each allocation was made with */
static unsigned long g_alloc_seq[64], g_seq;  /* and when, oldest first */
size_t fake_last_alloc_size = 0;
/* Successful pins (cuMemHostAlloc, cuMemAllocHost, cuMemHostRegister): a refused call adds none. */
int fake_pins = 0;
static Span* find(Span* t, uintptr_t a) {
  for (int i = 0; i < 64; ++i) if (t[i].start != t[i].end && a >= t[i].start && a < t[i].end) return &t[i];
  return 0;
}
static int add(Span* t, uintptr_t s, uintptr_t e) {
  for (int i = 0; i < 64; ++i) if (t[i].start == t[i].end) { t[i].start = s; t[i].end = e; return i; }
  return -1;
}
CUresult cuMemHostAlloc(void** p, size_t n, unsigned int flags) {
  if (flags & ~7u) return INVALID;
  fake_last_alloc_size = n;
  if (n == 0) { *p = 0; return OK; }  /* r580 on 13.x: success and a null pointer */
  *p = malloc(n);
  if (!*p) return 2;
  int slot = add(g_alloc, (uintptr_t)*p, (uintptr_t)*p + n);
  if (slot >= 0) { g_alloc_flags[slot] = flags; g_alloc_seq[slot] = ++g_seq; }
  ++fake_pins;
  return OK;
}
CUresult cuMemAllocHost_v2(void** p, size_t n) { return cuMemHostAlloc(p, n, 0); }
CUresult cuMemFreeHost(void* p) {
  Span* s = find(g_alloc, (uintptr_t)p);
  if (s) s->start = s->end = 0;
  free(p);
  return OK;
}
/* Whether the process maps a without write permission. */
static int read_only(uintptr_t a) {
  FILE* f = fopen("/proc/self/maps", "r");
  char line[512], perms[8];
  unsigned long lo, hi;
  int ro = 0;
  if (!f) return 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi) { ro = perms[1] == '-'; break; }
  fclose(f);
  return ro;
}
CUresult cuMemHostRegister(void* p, size_t n, unsigned int flags) {
  uintptr_t s = (uintptr_t)p, e = s + n;
  if ((flags & ~0xfu) || !p || !n || (flags & 4u) || find(g_alloc, s)) return INVALID;
  for (int i = 0; i < 64; ++i)
    if (g_reg[i].start != g_reg[i].end && s < g_reg[i].end && g_reg[i].start < e) return 712;
  if (!(flags & 8u) && read_only(s)) return INVALID;
  add(g_reg, s, e);
  ++fake_pins;
  return OK;
}
CUresult cuMemHostUnregister(void* p) {
  Span* r = find(g_reg, (uintptr_t)p);
  if (r && r->start == (uintptr_t)p) { r->start = r->end = 0; return OK; }
  if (r || find(g_alloc, (uintptr_t)p)) return INVALID;
  return 713;
}
/* Device memory: a 2 MiB-aligned arena of reserved addresses (never touched), handed out where
   the client says (fake_next_device, an offset into the arena), so that a test can place blocks
   inside, across and at 2 MiB boundaries. */
#define ARENA (16u << 20)
CUdeviceptr fake_device_arena = 0;
size_t fake_next_device = 0;
__attribute__((constructor)) static void make_arena(void) {
  void* raw = mmap(0, ARENA + (2u << 20), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw != MAP_FAILED) fake_device_arena = ((uintptr_t)raw + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1);
}
CUresult cuMemAlloc_v2(CUdeviceptr* d, size_t n) {
  if (!n || !fake_device_arena || fake_next_device + n > ARENA) return 2;
  *d = fake_device_arena + fake_next_device;
  add(g_dev, *d, *d + n);
  fake_next_device = (fake_next_device + n + 511) & ~(size_t)511;
  return OK;
}
CUresult cuMemFree_v2(CUdeviceptr d) {
  Span* s = find(g_dev, d);
  if (!s || s->start != d) return INVALID;
  s->start = s->end = 0;
  return OK;
}
/* Marks a span of host memory as "device" memory (pointer type 2) that the fake's copies and
   memsets, which work on addresses, can really write. */
void fake_mark_device(uintptr_t start, size_t n) { add(g_dev, start, start + n); }
static Span* find_any(uintptr_t a, unsigned* type) {
  Span* s = find(g_alloc, a);
  if (!s) s = find(g_reg, a);
  *type = 1; /* host */
  if (!s && (s = find(g_dev, a))) *type = 2; /* device */
  return s;
}
CUresult cuPointerGetAttribute(void* v, int attr, CUdeviceptr ptr) {
  unsigned type;
  Span* s = find_any((uintptr_t)ptr, &type);
  if (!s) return INVALID;
  if (attr == 2) { *(unsigned*)v = type; return OK; }     /* MEMORY_TYPE */
  if (attr == 3) { *(CUdeviceptr*)v = ptr; return OK; }   /* DEVICE_POINTER: the address (UVA) */
  if (attr == 4 && type == 1) { *(void**)v = (void*)(uintptr_t)ptr; return OK; }  /* HOST_POINTER */
  if (attr == 9) { *(int*)v = 0; return OK; }            /* DEVICE_ORDINAL */
  if (attr == 8) { *(unsigned*)v = 0; return OK; }        /* IS_MANAGED */
  if (attr == 11) { *(CUdeviceptr*)v = s->start; return OK; }  /* RANGE_START_ADDR */
  if (attr == 12) { *(size_t*)v = s->end - s->start; return OK; }  /* RANGE_SIZE */
  return INVALID;
}
CUresult cuPointerGetAttributes(unsigned n, int* attrs, void** data, CUdeviceptr ptr) {
  unsigned type;
  if (!find_any((uintptr_t)ptr, &type)) {
    /* As r580 (and the documentation): memory no context knows is no error, every attribute
       asked for gets its default (type 0, null pointers, ordinal -2). */
    for (unsigned i = 0; i < n; ++i) {
      if (!data[i]) continue;
      if (fake_r580_deviations && (attrs[i] == 11 || attrs[i] == 12)) continue;  /* unwritten */
      if (fake_r580_deviations && attrs[i] == 4) { *(CUdeviceptr*)data[i] = ptr; continue; }
      if (attrs[i] == 2 || attrs[i] == 8) *(unsigned*)data[i] = 0;
      else if (attrs[i] == 9) *(int*)data[i] = -2;
      else if (attrs[i] == 3 || attrs[i] == 4 || attrs[i] == 11 || attrs[i] == 12) *(CUdeviceptr*)data[i] = 0;
    }
    return OK;
  }
  for (unsigned i = 0; i < n; ++i) {
    CUresult r = data[i] ? cuPointerGetAttribute(data[i], attrs[i], ptr) : OK;
    if (r != OK) return r;
  }
  return OK;
}
/* As r580: the block's range for device and page-locked host memory, NOT_FOUND elsewhere. */
CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr ptr) {
  unsigned type;
  Span* s = find_any((uintptr_t)ptr, &type);
  if (!s) return 500;
  if (base) *base = s->start;
  if (size) *size = s->end - s->start;
  return OK;
}
/* One memory pool (any non-null handle) whose reserved bytes the client sets. */
unsigned long long fake_pool_reserved = 0;
CUresult cuMemPoolGetAttribute(void* pool, int attr, void* v) {
  if (!pool || attr != 5) return INVALID;  /* CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT */
  *(unsigned long long*)v = fake_pool_reserved;
  return OK;
}
CUresult cuMemPoolTrimTo(void* pool, size_t keep) {
  if (!pool) return INVALID;
  if (fake_pool_reserved > keep) fake_pool_reserved = keep;
  return OK;
}
/* Hints: fine on device memory (standing in for managed memory), INVALID_VALUE elsewhere, as
   r580 answers for page-locked host memory. */
typedef struct { int type; int id; } Location;
static CUresult hint(CUdeviceptr p, size_t n) {
  unsigned type;
  Span* s = find_any((uintptr_t)p, &type);
  return s && type == 2 && n ? OK : INVALID;
}
CUresult cuMemAdvise(CUdeviceptr p, size_t n, int advice, int device) {
  return advice < 1 || advice > 6 ? INVALID : hint(p, n);
}
CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, int advice, Location l) {
  return advice < 1 || advice > 6 ? INVALID : hint(p, n);
}
CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, int device, void* s) { return hint(p, n); }
CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, Location l, unsigned flags, void* s) {
  return flags ? INVALID : hint(p, n);
}
CUresult cuMemHostGetFlags(unsigned* f, void* p) {
  if (fake_r580_deviations && find(g_reg, (uintptr_t)p)) { *f = 2; return OK; }  /* r58 */
  if (!find(g_alloc, (uintptr_t)p)) return INVALID;
  *f = 2;  /* DeviceMap, implicit as on r580 */
  if (fake_r580_deviations) {  /* r56-portable: the bits of the chunk's opener */
    int oldest = -1;
    for (int i = 0; i < 64; ++i)
      if (g_alloc[i].start != g_alloc[i].end && (oldest < 0 || g_alloc_seq[i] < g_alloc_seq[oldest])) oldest = i;
    *f |= g_alloc_flags[oldest] & 5u;  /* PORTABLE | WRITECOMBINED */
  }
  return OK;
}
/* Stream 0x700 holds a faulted kernel: its wait reports ILLEGAL_ADDRESS. */
CUresult cuStreamSynchronize(void* s) { return (uintptr_t)s == 0x700 ? 700 : OK; }
int fake_host_funcs = 0;
CUresult cuLaunchHostFunc(void* s, void (*fn)(void*), void* data) { ++fake_host_funcs; fn(data); return OK; }
/* The source of the last host-to-device or unified copy that reached the driver. */
uintptr_t fake_last_copy_src = 0;
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, void* st) {
  fake_last_copy_src = (uintptr_t)s;
  memcpy((void*)(uintptr_t)d, s, n);
  return OK;
}
/* Events: fake_pending_event is one whose last record has not completed; every record that
   reaches the driver is counted; every elapsed time is 5 ms. */
void* fake_pending_event = 0;
int fake_event_records = 0;
/* The last event recorded (a client makes it pending through fake_pending_event). */
void* fake_last_recorded_event = 0;
CUresult cuEventRecord(void* e, void* s) { ++fake_event_records; fake_last_recorded_event = e; return OK; }
CUresult cuEventRecordWithFlags(void* e, void* s, unsigned f) { ++fake_event_records; return OK; }
CUresult cuEventQuery(void* e) { return e && e == fake_pending_event ? 600 : OK; }
float fake_elapsed_ms = 5.0f;  /* what every elapsed time is; a client may change it */
CUresult cuEventElapsedTime(float* ms, void* a, void* b) { *ms = fake_elapsed_ms; return OK; }
static uintptr_t g_next_event = 0xEE00;
CUresult cuEventCreate(void** e, unsigned f) { *e = (void*)g_next_event++; return OK; }
/* Streams: 0x20 is non-blocking, 0xCA is being captured. */
CUresult cuStreamGetFlags(void* s, unsigned* f) { *f = (uintptr_t)s == 0x20 ? 1 : 0; return OK; }
CUresult cuStreamIsCapturing(void* s, int* status) { *status = (uintptr_t)s == 0xCA ? 1 : 0; return OK; }
/* Stream memory operations: the last wait that reached the driver. */
int fake_last_wait_bits = 0;
unsigned long long fake_last_wait_value = 0;
unsigned fake_last_wait_flags = 0;
CUresult cuStreamWaitValue32_v2(void* s, CUdeviceptr a, unsigned v, unsigned f) {
  fake_last_wait_bits = 32; fake_last_wait_value = v; fake_last_wait_flags = f; return OK;
}
CUresult cuStreamWaitValue64_v2(void* s, CUdeviceptr a, unsigned long long v, unsigned f) {
  fake_last_wait_bits = 64; fake_last_wait_value = v; fake_last_wait_flags = f; return OK;
}
/* Copies and memsets work on the addresses they are given. */
CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { memcpy((void*)(uintptr_t)d, (const void*)(uintptr_t)s, n); return OK; }
CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, void* st) {
  fake_last_copy_src = (uintptr_t)s;
  return cuMemcpy(d, s, n);
}
CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, void* st) { return cuMemcpy((uintptr_t)d, s, n); }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void* st) { return cuMemcpy(d, s, n); }
CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h) {
  if (pitch < 4 * w || (pitch & 3) || (d & 3)) return INVALID;
  for (size_t y = 0; y < h; ++y)
    for (size_t x = 0; x < w; ++x) memcpy((char*)(uintptr_t)d + y * pitch + 4 * x, &v, 4);
  return OK;
}
CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h, void* s) {
  return cuMemsetD2D32_v2(d, pitch, v, w, h);
}
/* Contexts: destroys that reached the driver are counted; a destroyed current context is
   popped. */
int fake_ctx_destroys = 0;
static void* g_current = 0;
CUresult cuCtxDestroy_v2(void* c) { ++fake_ctx_destroys; if (g_current == c) g_current = 0; return OK; }
CUresult cuCtxPopCurrent_v2(void** c) { if (c) *c = g_current; g_current = 0; return OK; }
/* Device pointers of pinned memory: the host pointer (UVA). */
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* d, void* p, unsigned f) {
  if (f || !(find(g_alloc, (uintptr_t)p) || find(g_reg, (uintptr_t)p))) return INVALID;
  *d = (uintptr_t)p;
  return OK;
}
/* Memory pools: handles from 0x9100 on; an allocation above 1 MiB fails with OUT_OF_MEMORY;
   allocations that reached the driver are counted. */
int fake_pool_allocs = 0;
static uintptr_t g_next_pool = 0x9100;
CUresult cuMemPoolCreate(void** pool, const void* props) { *pool = (void*)g_next_pool++; return OK; }
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* d, size_t n, void* pool, void* s) {
  ++fake_pool_allocs;
  if (!pool || n > (1u << 20)) return 2;
  *d = 0x7000000 + 0x1000 * (CUdeviceptr)fake_pool_allocs;
  return OK;
}
/* Asynchronous frees that reached the driver. */
int fake_pool_frees = 0;
CUresult cuMemFreeAsync(CUdeviceptr d, void* s) { ++fake_pool_frees; return d ? OK : INVALID; }
CUresult cuCtxGetCurrent(void** c) { *c = g_current; return OK; }
CUresult cuCtxSetCurrent(void* c) { g_current = c; return OK; }
CUresult cuCtxGetDevice(int* d) { if (!g_current) return 201; *d = 0; return OK; }
/* Context flags: bits outside CU_CTX_FLAGS_MASK (0xff) are rejected and change nothing. */
unsigned fake_primary_flags = 0, fake_ctx_flags = 0;
CUresult cuDevicePrimaryCtxGetState(int d, unsigned* f, int* active) { *f = fake_primary_flags; *active = 0; return OK; }
CUresult cuDevicePrimaryCtxSetFlags(int d, unsigned f) {
  if (f & ~0xffu) return INVALID;
  fake_primary_flags = f;
  return OK;
}
CUresult cuCtxSetFlags(unsigned f) {
  if (f & ~0xffu) return INVALID;
  fake_ctx_flags = f;
  return OK;
}
CUresult cuCtxGetFlags(unsigned* f) { *f = fake_ctx_flags; return OK; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) { memcpy((void*)(uintptr_t)d, s, n); return OK; }
CUresult cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) { memcpy(d, (const void*)(uintptr_t)s, n); return OK; }
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { memset((void*)(uintptr_t)d, v, n); return OK; }
/* 16-bit memsets, 1D and 2D (pointer and pitch 2-byte aligned). */
CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) {
  if (d & 1) return INVALID;
  for (size_t i = 0; i < n; ++i) memcpy((char*)(uintptr_t)d + 2 * i, &v, 2);
  return OK;
}
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, void* s) { return cuMemsetD16_v2(d, v, n); }
CUresult cuMemsetD2D16_v2(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h) {
  if (pitch < 2 * w || (pitch & 1) || (d & 1)) return INVALID;
  for (size_t y = 0; y < h; ++y) cuMemsetD16_v2(d + y * pitch, v, w);
  return OK;
}
CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, void* s) {
  return cuMemsetD2D16_v2(d, pitch, v, w, h);
}
/* 3D copies between linear memory (host: memory type 1, srcHost; device 2 or unified 4:
   srcDevice), laid out as CUDA_MEMCPY3D. */
typedef struct {
  size_t xInBytes, y, z, lod;
  int memoryType;
  const void* host;
  CUdeviceptr device;
  void* array;
  void* reserved;
  size_t pitch, height;
} Side3D;
typedef struct { Side3D src, dst; size_t widthInBytes, height, depth; } Copy3D;
static char* side_at(const Side3D* s, size_t y, size_t z) {
  char* base = s->memoryType == 1 ? (char*)s->host : (char*)(uintptr_t)s->device;
  return base + ((s->z + z) * s->height + s->y + y) * s->pitch + s->xInBytes;
}
CUresult cuMemcpy3D_v2(const Copy3D* c) {
  if (!c || c->src.memoryType == 3 || c->dst.memoryType == 3) return INVALID;  /* no arrays */
  for (size_t z = 0; z < c->depth; ++z)
    for (size_t y = 0; y < c->height; ++y)
      memcpy(side_at(&c->dst, y, z), side_at(&c->src, y, z), c->widthInBytes);
  return OK;
}
CUresult cuMemcpy3DAsync_v2(const Copy3D* c, void* s) { return cuMemcpy3D_v2(c); }
/* Batches of stream memory operations: the operation kinds of the last batch, in the order the
   driver got them (digits of CUstreamBatchMemOpType; 48-byte operations). */
char fake_batch_ops[64] = "";
CUresult cuStreamBatchMemOp_v2(void* s, unsigned n, const unsigned long long* ops, unsigned f) {
  unsigned i;
  if (n >= sizeof fake_batch_ops) return INVALID;
  for (i = 0; i < n; ++i) fake_batch_ops[i] = (char)('0' + *(const int*)(ops + 6 * i));
  fake_batch_ops[n] = 0;
  return OK;
}
/* Graphs: the stream of the last launch; streams the client never created come from
   cuStreamCreate (handles from 0x5E0 on). */
void* fake_last_graph_stream = 0;
/* A graph holds up to 8 memcpy (linear memory, as cuMemcpy3D), memset and host nodes, without
   edges; an executable graph a copy of its nodes' parameters, run in order by cuGraphLaunch.
   Node handles point into the graph they were added to. */
typedef struct { CUdeviceptr dst; size_t pitch; unsigned value, elementSize; size_t width, height; } MemsetP;
typedef struct { void (*fn)(void*); void* data; } HostP;
typedef struct { int type; Copy3D copy; MemsetP memset; HostP host; } FNode;  /* 1 memcpy, 2 memset, 3 host */
typedef struct { int n; FNode nodes[8]; } FGraph;
typedef struct { FGraph* from; int n; FNode nodes[8]; } FExec;
static FGraph g_graphs[32];
static FExec g_execs[32];
static int g_graph_count = 0, g_exec_count = 0;
static FExec* exec_of(void* e) {
  FExec* x = (FExec*)e;
  return x >= g_execs && x < g_execs + g_exec_count ? x : 0;
}
static int node_index(FExec* x, FNode* n) {
  return x && n >= x->from->nodes && n < x->from->nodes + x->from->n ? (int)(n - x->from->nodes) : -1;
}
CUresult cuGraphCreate(FGraph** g, unsigned f) {
  if (f || g_graph_count >= 32) return INVALID;
  *g = &g_graphs[g_graph_count++];
  return OK;
}
CUresult cuGraphDestroy(FGraph* g) { return g ? OK : INVALID; }
static CUresult add_node(FNode** out, FGraph* g, const FNode* nd) {
  if (!g || g->n >= 8) return INVALID;
  g->nodes[g->n] = *nd;
  *out = &g->nodes[g->n++];
  return OK;
}
CUresult cuGraphAddMemcpyNode(FNode** out, FGraph* g, void* deps, size_t nd, const Copy3D* c, void* ctx) {
  FNode n; memset(&n, 0, sizeof n); n.type = 1; n.copy = *c;
  return add_node(out, g, &n);
}
CUresult cuGraphAddMemsetNode(FNode** out, FGraph* g, void* deps, size_t nd, const MemsetP* m, void* ctx) {
  FNode n; memset(&n, 0, sizeof n); n.type = 2; n.memset = *m;
  return add_node(out, g, &n);
}
CUresult cuGraphAddHostNode(FNode** out, FGraph* g, void* deps, size_t nd, const HostP* h) {
  FNode n; memset(&n, 0, sizeof n); n.type = 3; n.host = *h;
  return add_node(out, g, &n);
}
CUresult cuGraphGetNodes(FGraph* g, FNode** nodes, size_t* n) {
  size_t i;
  if (!g || !n) return INVALID;
  for (i = 0; nodes && i < *n; ++i) nodes[i] = i < (size_t)g->n ? &g->nodes[i] : 0;
  *n = g->n;
  return OK;
}
CUresult cuGraphNodeGetType(FNode* n, int* t) { if (!n) return INVALID; *t = n->type; return OK; }
CUresult cuGraphMemcpyNodeGetParams(FNode* n, Copy3D* c) { if (!n || n->type != 1) return INVALID; *c = n->copy; return OK; }
CUresult cuGraphMemcpyNodeSetParams(FNode* n, const Copy3D* c) { if (!n || n->type != 1) return INVALID; n->copy = *c; return OK; }
CUresult cuGraphMemsetNodeGetParams(FNode* n, MemsetP* m) { if (!n || n->type != 2) return INVALID; *m = n->memset; return OK; }
CUresult cuGraphInstantiateWithFlags(FExec** e, FGraph* g, unsigned long long f) {
  if (!g || g_exec_count >= 32) return INVALID;
  FExec* x = &g_execs[g_exec_count++];
  x->from = g;
  x->n = g->n;
  memcpy(x->nodes, g->nodes, sizeof x->nodes);
  *e = x;
  return OK;
}
CUresult cuGraphInstantiateWithParams(FExec** e, FGraph* g, void* params) { return cuGraphInstantiateWithFlags(e, g, 0); }
CUresult cuGraphExecMemcpyNodeSetParams(void* e, FNode* n, const Copy3D* c, void* ctx) {
  FExec* x = exec_of(e);
  int i = node_index(x, n);
  if (i < 0 || !c || x->nodes[i].type != 1 || !c->widthInBytes || !c->height || !c->depth) return INVALID;
  x->nodes[i].copy = *c;
  return OK;
}
CUresult cuGraphExecMemsetNodeSetParams(void* e, FNode* n, const MemsetP* m, void* ctx) {
  FExec* x = exec_of(e);
  int i = node_index(x, n);
  if (i < 0 || !m || x->nodes[i].type != 2 || !m->width) return INVALID;
  x->nodes[i].memset = *m;
  return OK;
}
/* CUgraphNodeParams: the type, then (at 16) the memset parameters, or the memcpy ones' 3D
   copy at 32 (after flags, reserved and the context). */
CUresult cuGraphExecNodeSetParams(void* e, FNode* n, const char* p) {
  if (!p) return INVALID;
  if (*(const int*)p == 1) return cuGraphExecMemcpyNodeSetParams(e, n, (const Copy3D*)(p + 32), 0);
  if (*(const int*)p == 2) return cuGraphExecMemsetNodeSetParams(e, n, (const MemsetP*)(p + 16), 0);
  return INVALID;
}
/* Topology (the node count) and node types must match, and memcpy nodes keep their memory
   types; otherwise GRAPH_EXEC_UPDATE_FAILURE (910) with TOPOLOGY_CHANGED (2),
   NODE_TYPE_CHANGED (3) or PARAMETERS_CHANGED (5). */
typedef struct { int result; void* errorNode; void* errorFromNode; } UpdateInfo;
CUresult cuGraphExecUpdate_v2(void* e, FGraph* g, UpdateInfo* info) {
  FExec* x = exec_of(e);
  int i;
  if (!x || !g || !info) return INVALID;
  info->result = g->n != x->n ? 2 : 0;
  for (i = 0; !info->result && i < g->n; ++i)
    if (g->nodes[i].type != x->nodes[i].type) info->result = 3;
    else if (g->nodes[i].type == 1 && (g->nodes[i].copy.src.memoryType != x->nodes[i].copy.src.memoryType ||
                                       g->nodes[i].copy.dst.memoryType != x->nodes[i].copy.dst.memoryType))
      info->result = 5;
  if (info->result) return 910;
  memcpy(x->nodes, g->nodes, sizeof x->nodes);
  return OK;
}
static void run_exec(FExec* x) {
  int i;
  size_t k;
  for (i = 0; i < x->n; ++i) {
    FNode* n = &x->nodes[i];
    if (n->type == 1) cuMemcpy3D_v2(&n->copy);
    if (n->type == 2)
      for (k = 0; k < n->memset.width * (n->memset.height ? n->memset.height : 1); ++k)
        memcpy((char*)(uintptr_t)n->memset.dst + k * n->memset.elementSize, &n->memset.value, n->memset.elementSize);
    if (n->type == 3) n->host.fn(n->host.data);
  }
}
CUresult cuGraphLaunch(void* g, void* s) {
  if (!g) return INVALID;
  fake_last_graph_stream = s;
  if (exec_of(g)) run_exec(exec_of(g));
  return OK;
}
CUresult cuGraphExecDestroy(void* g) { return g ? OK : INVALID; }
/* Kernels: the grid of the last launch that reached the driver. */
unsigned fake_last_launch_grid_x = 0;
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned sh, void* s, void** p, void** e) {
  fake_last_launch_grid_x = gx;
  return OK;
}
typedef struct { unsigned gx, gy, gz, bx, by, bz, sh; void* stream; void* attrs; unsigned n; } LaunchConfig;
CUresult cuLaunchKernelEx(const LaunchConfig* c, void* f, void** p, void** e) {
  if (!c) return INVALID;
  fake_last_launch_grid_x = c->gx;
  return OK;
}
/* Batches of copies (both ABIs): argument checks as documented, then each copy at once; the
   first copy's source and access order as the driver got them. */
typedef struct { int type, id; } Location2;
typedef struct { int order; Location2 srcHint, dstHint; unsigned flags; } CopyAttr;
uintptr_t fake_last_batch_src0 = 0;
int fake_last_batch_order0 = 0;
static CUresult batch(CUdeviceptr* d, CUdeviceptr* s, size_t* n, size_t count, CopyAttr* a,
                      size_t* idx, size_t num, size_t* fail, void* st) {
  size_t i;
  if (fail) *fail = ~(size_t)0;
  if ((uintptr_t)st <= 1 || !count || !num || num > count || !a || !idx || idx[0]) return INVALID;
  for (i = 0; i < num; ++i) {
    if (i && idx[i] <= idx[i - 1]) return INVALID;
    if (a[i].order < 1 || a[i].order > 3) { if (fail) *fail = idx[i]; return INVALID; }
  }
  if (idx[num - 1] >= count) return INVALID;
  for (i = 0; i < count; ++i)
    if (!d[i] || !s[i]) { if (fail) *fail = i; return INVALID; }
  fake_last_batch_src0 = s[0];
  fake_last_batch_order0 = a[0].order;
  for (i = 0; i < count; ++i) memcpy((void*)(uintptr_t)d[i], (const void*)(uintptr_t)s[i], n[i]);
  return OK;
}
CUresult cuMemcpyBatchAsync(CUdeviceptr* d, CUdeviceptr* s, size_t* n, size_t count, CopyAttr* a,
                            size_t* idx, size_t num, size_t* fail, void* st) {
  return batch(d, s, n, count, a, idx, num, fail, st);
}
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr* d, CUdeviceptr* s, size_t* n, size_t count, CopyAttr* a,
                               size_t* idx, size_t num, void* st) {
  return batch(d, s, n, count, a, idx, num, 0, st);
}
/* Virtual memory management over host memory: allocations are memfd files (granule 64 KiB),
   reservations PROT_NONE ranges, mappings shared views of the files. The access set per
   mapping is recorded, not enforced: fake_vmm_device_access tells what the device was given. */
#define VMM_GRANULE ((size_t)64 << 10)
typedef struct { int type; int handleTypes; Location2 loc; void* win32; unsigned char flags[8]; } Prop;
typedef struct { int fd; size_t size; Prop prop; int refs; } VAlloc;
typedef struct { uintptr_t start; size_t size; unsigned long long handle; unsigned long long device, host; } VMap;
static VAlloc g_valloc[64];
static int g_valloc_count = 0;
static VMap g_vmap[64];
static VAlloc* valloc_of(unsigned long long h) {
  return h >= 1 && h <= (unsigned long long)g_valloc_count && g_valloc[h - 1].refs > 0 ? &g_valloc[h - 1] : 0;
}
static VMap* vmap_at(uintptr_t a) {
  int i;
  for (i = 0; i < 64; ++i)
    if (g_vmap[i].size && a >= g_vmap[i].start && a < g_vmap[i].start + g_vmap[i].size) return &g_vmap[i];
  return 0;
}
CUresult cuMemGetAllocationGranularity(size_t* g, const Prop* p, int option) {
  if (!g || !p) return INVALID;
  *g = VMM_GRANULE;
  return OK;
}
CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t align, CUdeviceptr addr, unsigned long long f) {
  void* raw;
  if (!ptr || !size || size % VMM_GRANULE || f) return INVALID;
  raw = mmap(0, size + VMM_GRANULE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return 2;
  *ptr = ((uintptr_t)raw + VMM_GRANULE - 1) & ~(uintptr_t)(VMM_GRANULE - 1);
  return OK;
}
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) { return munmap((void*)(uintptr_t)ptr, size) ? INVALID : OK; }
CUresult cuMemCreate(unsigned long long* h, size_t size, const Prop* p, unsigned long long f) {
  int fd;
  if (!h || !p || f || !size || size % VMM_GRANULE || g_valloc_count >= 64) return INVALID;
  if (p->loc.type == 4 || (p->loc.type == 2 && p->handleTypes)) return INVALID;
  fd = (int)syscall(SYS_memfd_create, "fake_vmm", 0);
  if (fd < 0 || ftruncate(fd, (off_t)size)) return 2;
  g_valloc[g_valloc_count].fd = fd;
  g_valloc[g_valloc_count].size = size;
  g_valloc[g_valloc_count].prop = *p;
  g_valloc[g_valloc_count].refs = 1;
  *h = (unsigned long long)++g_valloc_count;
  return OK;
}
CUresult cuMemRelease(unsigned long long h) {
  VAlloc* a = valloc_of(h);
  if (!a) return INVALID;
  if (--a->refs == 0) close(a->fd);  /* its mappings keep the pages */
  return OK;
}
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t off, unsigned long long h, unsigned long long f) {
  VAlloc* a = valloc_of(h);
  size_t k;
  int i;
  if (!a || off || f || ptr % VMM_GRANULE || !size || size % VMM_GRANULE || size > a->size) return INVALID;
  for (k = 0; k < size; k += VMM_GRANULE)
    if (vmap_at(ptr + k)) return INVALID;  /* already mapped */
  for (i = 0; i < 64 && g_vmap[i].size; ++i) {}
  if (i == 64) return 2;
  if (mmap((void*)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, a->fd, 0) == MAP_FAILED) return 2;
  g_vmap[i].start = ptr;
  g_vmap[i].size = size;
  g_vmap[i].handle = h;
  g_vmap[i].device = g_vmap[i].host = 0;
  return OK;
}
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  int i, any = 0;
  for (i = 0; i < 64; ++i) {
    VMap* m = &g_vmap[i];
    if (!m->size || m->start >= ptr + size || ptr >= m->start + m->size) continue;
    if (m->start < ptr || m->start + m->size > ptr + size) return INVALID;  /* a sub-range */
    any = 1;
  }
  if (!any) return INVALID;
  for (i = 0; i < 64; ++i)
    if (g_vmap[i].size && g_vmap[i].start >= ptr && g_vmap[i].start < ptr + size) g_vmap[i].size = 0;
  mmap((void*)(uintptr_t)ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  return OK;
}
typedef struct { Location2 loc; int flags; } AccessDesc;
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const AccessDesc* d, size_t count) {
  uintptr_t pos;
  size_t i;
  VMap* m;
  if (!d || !count) return INVALID;
  for (pos = ptr; pos < ptr + size; pos = m->start + m->size)
    if (!(m = vmap_at(pos))) return INVALID;  /* not fully mapped */
  for (pos = ptr; pos < ptr + size; pos = m->start + m->size) {
    m = vmap_at(pos);
    for (i = 0; i < count; ++i)
      if (d[i].loc.type == 1) m->device = (unsigned)d[i].flags;
      else if (d[i].loc.type == 2 || d[i].loc.type == 3) m->host = (unsigned)d[i].flags;
      else return INVALID;
  }
  return OK;
}
CUresult cuMemGetAccess(unsigned long long* f, const Location2* loc, CUdeviceptr ptr) {
  VMap* m = vmap_at(ptr);
  if (!f || !loc || !m) return INVALID;
  *f = loc->type == 1 ? m->device : m->host;
  return OK;
}
unsigned long long fake_vmm_device_access(uintptr_t ptr) {
  VMap* m = vmap_at(ptr);
  return m ? m->device : 0;
}
CUresult cuMemRetainAllocationHandle(unsigned long long* h, void* addr) {
  VMap* m = vmap_at((uintptr_t)addr);
  if (!h || !m) return INVALID;
  ++g_valloc[m->handle - 1].refs;
  *h = m->handle;
  return OK;
}
CUresult cuMemGetAllocationPropertiesFromHandle(Prop* p, unsigned long long h) {
  VAlloc* a = valloc_of(h);
  if (!p || !a) return INVALID;
  *p = a->prop;
  return OK;
}
CUresult cuMemExportToShareableHandle(void* sh, unsigned long long h, int type, unsigned long long f) {
  VAlloc* a = valloc_of(h);
  if (!sh || !a || type != 1 || f || !(a->prop.handleTypes & 1)) return INVALID;
  *(int*)sh = dup(a->fd);
  return OK;
}
CUresult cuMemImportFromShareableHandle(unsigned long long* h, void* os, int type) {
  const int fd = (int)(intptr_t)os;
  struct stat st, other;
  int i;
  if (!h || type != 1 || fstat(fd, &st) || g_valloc_count >= 64) return INVALID;
  g_valloc[g_valloc_count].prop.type = 1;
  g_valloc[g_valloc_count].prop.handleTypes = 1;
  g_valloc[g_valloc_count].prop.loc.type = 3;
  for (i = 0; i < g_valloc_count; ++i)  /* the exporter's properties, when it is this process */
    if (g_valloc[i].refs > 0 && !fstat(g_valloc[i].fd, &other) && other.st_ino == st.st_ino)
      g_valloc[g_valloc_count].prop = g_valloc[i].prop;
  g_valloc[g_valloc_count].fd = dup(fd);
  g_valloc[g_valloc_count].size = (size_t)st.st_size;
  g_valloc[g_valloc_count].refs = 1;
  *h = (unsigned long long)++g_valloc_count;
  return OK;
}
static uintptr_t g_next_stream = 0x5E0;
CUresult cuStreamCreate(void** s, unsigned f) { *s = (void*)g_next_stream++; return OK; }
CUresult cuCtxSynchronize(void) { return OK; }
/* Counts calls, so a test sees whether a "synchronise" really reached the driver. */
int fake_ctx_sync_calls = 0;
CUresult cuCtxSynchronize_counted(void) { ++fake_ctx_sync_calls; return OK; }

typedef struct { const char* name; void* fn; } Entry;
static const Entry kTable[] = {
    {"cuInit", (void*)cuInit},
    {"cuDriverGetVersion", (void*)cuDriverGetVersion},
    {"cuDeviceGetCount", (void*)cuDeviceGetCount},
    {"cuDeviceGetAttribute", (void*)cuDeviceGetAttribute},
    {"cuDeviceGetHostAtomicCapabilities", (void*)cuDeviceGetHostAtomicCapabilities},
    {"cuMemHostAlloc", (void*)cuMemHostAlloc},
    {"cuMemFreeHost", (void*)cuMemFreeHost},
    {"cuMemcpyHtoD", (void*)cuMemcpyHtoD_v2},
    {"cuMemcpyHtoD_v2", (void*)cuMemcpyHtoD_v2},
    {"cuMemcpyDtoH", (void*)cuMemcpyDtoH_v2},
    {"cuMemsetD8", (void*)cuMemsetD8_v2},
    {"cuCtxSynchronize", (void*)cuCtxSynchronize_counted},
    {"cuMemHostRegister", (void*)cuMemHostRegister},
    {"cuMemHostUnregister", (void*)cuMemHostUnregister},
    {"cuPointerGetAttribute", (void*)cuPointerGetAttribute},
    {"cuMemHostGetFlags", (void*)cuMemHostGetFlags},
    {"cuStreamSynchronize", (void*)cuStreamSynchronize},
    {"cuLaunchHostFunc", (void*)cuLaunchHostFunc},
    {"cuMemcpyHtoDAsync", (void*)cuMemcpyHtoDAsync_v2},
    {"cuEventRecord", (void*)cuEventRecord},
    {"cuCtxGetCurrent", (void*)cuCtxGetCurrent},
    {"cuCtxSetCurrent", (void*)cuCtxSetCurrent},
    {"cuCtxGetDevice", (void*)cuCtxGetDevice},
    {"cuDevicePrimaryCtxGetState", (void*)cuDevicePrimaryCtxGetState},
    {"cuDevicePrimaryCtxSetFlags", (void*)cuDevicePrimaryCtxSetFlags},
    {"cuMemAllocHost", (void*)cuMemAllocHost_v2},
    {"cuMemAlloc", (void*)cuMemAlloc_v2},
    {"cuMemFree", (void*)cuMemFree_v2},
    {"cuPointerGetAttributes", (void*)cuPointerGetAttributes},
    {"cuMemGetAddressRange", (void*)cuMemGetAddressRange_v2},
    {"cuMemGetAddressRange_v2", (void*)cuMemGetAddressRange_v2},
    {"cuMemPoolGetAttribute", (void*)cuMemPoolGetAttribute},
    {"cuMemPoolTrimTo", (void*)cuMemPoolTrimTo},
    {"cuMemAdvise_v2", (void*)cuMemAdvise_v2},
    {"cuMemPrefetchAsync_v2", (void*)cuMemPrefetchAsync_v2},
    {"cuEventRecordWithFlags", (void*)cuEventRecordWithFlags},
    {"cuEventQuery", (void*)cuEventQuery},
    {"cuEventElapsedTime", (void*)cuEventElapsedTime},
    {"cuStreamGetFlags", (void*)cuStreamGetFlags},
    {"cuStreamIsCapturing", (void*)cuStreamIsCapturing},
    {"cuStreamWaitValue32", (void*)cuStreamWaitValue32_v2},
    {"cuStreamWaitValue64", (void*)cuStreamWaitValue64_v2},
    {"cuMemcpy", (void*)cuMemcpy},
    {"cuMemcpyAsync", (void*)cuMemcpyAsync},
    {"cuMemcpyDtoHAsync", (void*)cuMemcpyDtoHAsync_v2},
    {"cuMemcpyDtoDAsync", (void*)cuMemcpyDtoDAsync_v2},
    {"cuMemsetD2D32", (void*)cuMemsetD2D32_v2},
    {"cuMemsetD2D32Async", (void*)cuMemsetD2D32Async},
    {"cuCtxDestroy", (void*)cuCtxDestroy_v2},
    {"cuCtxPopCurrent", (void*)cuCtxPopCurrent_v2},
    {"cuMemHostGetDevicePointer", (void*)cuMemHostGetDevicePointer_v2},
    {"cuMemPoolCreate", (void*)cuMemPoolCreate},
    {"cuMemAllocFromPoolAsync", (void*)cuMemAllocFromPoolAsync},
    {"cuMemFreeAsync", (void*)cuMemFreeAsync},
    {"cuMemsetD16", (void*)cuMemsetD16_v2},
    {"cuMemsetD16Async", (void*)cuMemsetD16Async},
    {"cuMemsetD2D16", (void*)cuMemsetD2D16_v2},
    {"cuMemsetD2D16Async", (void*)cuMemsetD2D16Async},
    {"cuMemcpy3D", (void*)cuMemcpy3D_v2},
    {"cuMemcpy3DAsync", (void*)cuMemcpy3DAsync_v2},
    {"cuStreamBatchMemOp", (void*)cuStreamBatchMemOp_v2},
    {"cuGraphLaunch", (void*)cuGraphLaunch},
    {"cuGraphExecDestroy", (void*)cuGraphExecDestroy},
    {"cuStreamCreate", (void*)cuStreamCreate},
    {"cuEventCreate", (void*)cuEventCreate},
    {"cuCtxSetFlags", (void*)cuCtxSetFlags},
    {"cuCtxGetFlags", (void*)cuCtxGetFlags},
    {"cuGraphCreate", (void*)cuGraphCreate},
    {"cuGraphDestroy", (void*)cuGraphDestroy},
    {"cuGraphAddMemcpyNode", (void*)cuGraphAddMemcpyNode},
    {"cuGraphAddMemsetNode", (void*)cuGraphAddMemsetNode},
    {"cuGraphAddHostNode", (void*)cuGraphAddHostNode},
    {"cuGraphGetNodes", (void*)cuGraphGetNodes},
    {"cuGraphNodeGetType", (void*)cuGraphNodeGetType},
    {"cuGraphMemcpyNodeGetParams", (void*)cuGraphMemcpyNodeGetParams},
    {"cuGraphMemcpyNodeSetParams", (void*)cuGraphMemcpyNodeSetParams},
    {"cuGraphMemsetNodeGetParams", (void*)cuGraphMemsetNodeGetParams},
    {"cuGraphInstantiateWithFlags", (void*)cuGraphInstantiateWithFlags},
    {"cuGraphInstantiateWithParams", (void*)cuGraphInstantiateWithParams},
    {"cuGraphExecMemcpyNodeSetParams", (void*)cuGraphExecMemcpyNodeSetParams},
    {"cuGraphExecMemsetNodeSetParams", (void*)cuGraphExecMemsetNodeSetParams},
    {"cuGraphExecNodeSetParams", (void*)cuGraphExecNodeSetParams},
    {"cuGraphExecUpdate", (void*)cuGraphExecUpdate_v2},
    {"cuGraphExecUpdate_v2", (void*)cuGraphExecUpdate_v2},
    {"cuLaunchKernel", (void*)cuLaunchKernel},
    {"cuLaunchKernelEx", (void*)cuLaunchKernelEx},
    {"cuMemcpyBatchAsync_v2", (void*)cuMemcpyBatchAsync_v2},
    {"cuMemGetAllocationGranularity", (void*)cuMemGetAllocationGranularity},
    {"cuMemAddressReserve", (void*)cuMemAddressReserve},
    {"cuMemAddressFree", (void*)cuMemAddressFree},
    {"cuMemCreate", (void*)cuMemCreate},
    {"cuMemRelease", (void*)cuMemRelease},
    {"cuMemMap", (void*)cuMemMap},
    {"cuMemUnmap", (void*)cuMemUnmap},
    {"cuMemSetAccess", (void*)cuMemSetAccess},
    {"cuMemGetAccess", (void*)cuMemGetAccess},
    {"cuMemRetainAllocationHandle", (void*)cuMemRetainAllocationHandle},
    {"cuMemGetAllocationPropertiesFromHandle", (void*)cuMemGetAllocationPropertiesFromHandle},
    {"cuMemExportToShareableHandle", (void*)cuMemExportToShareableHandle},
    {"cuMemImportFromShareableHandle", (void*)cuMemImportFromShareableHandle},
};

CUresult cuGetProcAddress_v2(const char* sym, void** pfn, int version, unsigned long long flags,
                             int* status) {
  /* Two ABIs under one name, told apart by the version asked for (cudaTypedefs.h). */
  if (strcmp(sym, "cuMemcpyBatchAsync") == 0) {  /* 12.8: with failIdx; 13.0: without */
    *pfn = version < 13000 ? (void*)cuMemcpyBatchAsync : (void*)cuMemcpyBatchAsync_v2;
    if (status) *status = 0;
    return OK;
  }
  if (strcmp(sym, "cuMemAdvise") == 0 || strcmp(sym, "cuMemPrefetchAsync") == 0) {
    const int old = version < 12020;
    *pfn = sym[5] == 'A' ? (old ? (void*)cuMemAdvise : (void*)cuMemAdvise_v2)
                         : (old ? (void*)cuMemPrefetchAsync : (void*)cuMemPrefetchAsync_v2);
    if (status) *status = 0;
    return OK;
  }
  for (size_t i = 0; i < sizeof(kTable) / sizeof(kTable[0]); ++i) {
    if (strcmp(kTable[i].name, sym) == 0) {
      *pfn = kTable[i].fn;
      if (status) *status = 0;
      return OK;
    }
  }
  *pfn = 0;
  if (status) *status = 1;
  return 500; /* CUDA_ERROR_NOT_FOUND */
}
