// A libcuda.so.1 that loads the real driver by path and forwards every call to it; with
// PAGELOCK_FAULT=<name> it hands out wrappers for the functions that fault changes (shim.h).
//
// Environment:
//   PAGELOCK_REAL_LIBCUDA  absolute path of the real driver (default: the usual install paths)
//   PAGELOCK_FAULT         a fault of the catalogue (catalogue/); unset or "none": no fault
//   PAGELOCK_FAULT_LOG     append one line per cuGetProcAddress request, fired fault and error
//   PAGELOCK_FAULT_LOG_REQUESTS=0  leave the request lines out (the mutation tool's runs)
//
// Exports: cuGetProcAddress and cuGetProcAddress_v2 (here), every other driver entry point as a
// jump to the real one (exports.S, symbols.inc), and pagelock_fault_shim_info() so a test can
// tell the shim is loaded, and pagelock_fault_catalogue().
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/faults/fault.h"
#include "tools/faults/shim.h"

// The real pointers the exported forwarders jump through; a missing one returns NOT_FOUND.
extern "C" {
__attribute__((visibility("hidden"))) CUresult pl_missing() { return CUDA_ERROR_NOT_FOUND; }
#define PL_SYM(n) __attribute__((visibility("hidden"))) void* pl_real_##n = (void*)&pl_missing;
#include "tools/faults/symbols.inc"
#undef PL_SYM
}

namespace pagelock_faults {

#define PL_DEFINE_ENTRY(n, name, lo, hi, args) \
  EntryBase e_##n = {name, lo, hi, nullptr, {}, &Wrap<CUresult args, &e_##n>::Get};
PL_ENTRIES(PL_DEFINE_ENTRY)
#undef PL_DEFINE_ENTRY

namespace {

using GetProcV2 = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t,
                                     CUdriverProcAddressQueryResult*);
using GetProcV1 = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t);

EntryBase* const kEntries[] = {
#define PL_LIST_ENTRY(n, name, lo, hi, args) &e_##n,
    PL_ENTRIES(PL_LIST_ENTRY)
#undef PL_LIST_ENTRY
};

struct Forwarder {
  const char* name;
  void** slot;
};
const Forwarder kForwarders[] = {
#define PL_SYM(n) {#n, &pl_real_##n},
#include "tools/faults/symbols.inc"
#undef PL_SYM
};

void* g_real = nullptr;
char g_real_path[PATH_MAX] = "";
GetProcV2 g_gpa_v2 = nullptr;
GetProcV1 g_gpa_v1 = nullptr;
const Fault* g_fault = nullptr;
bool g_census = false;  // PAGELOCK_FAULT=census: wrap every entry, change nothing, log calls
int g_log_fd = -1;
bool g_log_requests = true;  // PAGELOCK_FAULT_LOG_REQUESTS=0: only init, fired and error lines
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

bool SameFile(const char* a, const char* b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// Loads the real driver: $PAGELOCK_REAL_LIBCUDA, else the first usual path that is not this file.
void LoadReal() {
  Dl_info self;
  const char* self_path = dladdr(reinterpret_cast<void*>(&LoadReal), &self) ? self.dli_fname : "";
  const char* env = getenv("PAGELOCK_REAL_LIBCUDA");
  static const char* const kPaths[] = {
      "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1",
      "/usr/local/nvidia/lib64/libcuda.so.1",   "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
      "/usr/lib/wsl/lib/libcuda.so.1",          "/lib/x86_64-linux-gnu/libcuda.so.1",
      "/usr/lib/libcuda.so.1",                  "/lib64/libcuda.so.1",
  };
  const char* candidates[1 + sizeof(kPaths) / sizeof(kPaths[0])];
  size_t n = 0;
  if (env && *env) {
    candidates[n++] = env;
  } else {
    for (const char* p : kPaths) candidates[n++] = p;
  }
  for (size_t i = 0; i < n; ++i) {
    const char* p = candidates[i];
    if (access(p, R_OK) != 0) continue;
    if (SameFile(p, self_path)) continue;  // never load ourselves
    void* h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      Log("error\tdlopen(%s) failed: %s", p, dlerror());
      continue;
    }
    g_real = h;
    snprintf(g_real_path, sizeof(g_real_path), "%s", p);
    return;
  }
}

const char* const kErrorPrefix = "pagelock fault shim: ";

}  // namespace

void Log(const char* fmt, ...) {
  if (g_log_fd < 0) return;
  char line[1024];
  int len = snprintf(line, sizeof(line), "%d\t", static_cast<int>(getpid()));
  va_list ap;
  va_start(ap, fmt);
  int more = vsnprintf(line + len, sizeof(line) - len - 1, fmt, ap);
  va_end(ap);
  len += more < 0 ? 0 : (more >= static_cast<int>(sizeof(line)) - len - 1
                             ? static_cast<int>(sizeof(line)) - len - 2
                             : more);
  line[len++] = '\n';
  // One write per line on an O_APPEND file: lines of concurrent processes do not interleave.
  ssize_t ignored = write(g_log_fd, line, len);
  (void)ignored;
}

void NoteFired(EntryBase* e) {
  static thread_local EntryBase* last = nullptr;  // cheap filter; the log dedups per process
  if (last == e || g_log_fd < 0) return;
  last = e;
  static EntryBase* seen[sizeof(kEntries) / sizeof(kEntries[0])] = {};
  pthread_mutex_lock(&g_mu);
  bool fresh = true;
  size_t i = 0;
  for (; i < sizeof(seen) / sizeof(seen[0]) && seen[i]; ++i) fresh = fresh && seen[i] != e;
  if (fresh && i < sizeof(seen) / sizeof(seen[0])) seen[i] = e;
  pthread_mutex_unlock(&g_mu);
  if (fresh) Log("fired\t%s\t%s", g_fault ? g_fault->name : g_census ? "census" : "?", e->name);
}

void NoteChanged(const char* what) {
  if (g_log_fd < 0) return;
  static const char* seen[64] = {};
  pthread_mutex_lock(&g_mu);
  bool fresh = true;
  size_t i = 0;
  for (; i < sizeof(seen) / sizeof(seen[0]) && seen[i]; ++i) fresh = fresh && strcmp(seen[i], what) != 0;
  if (fresh && i < sizeof(seen) / sizeof(seen[0])) seen[i] = what;
  pthread_mutex_unlock(&g_mu);
  if (fresh) Log("changed\t%s\t%s", g_fault ? g_fault->name : "?", what);
}

void* RealFunction(const char* name, int version) {
  if (!g_gpa_v2) return nullptr;
  void* fn = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (g_gpa_v2(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS ||
      st != CU_GET_PROC_ADDRESS_SUCCESS)
    return nullptr;
  return fn;
}

namespace {

__attribute__((constructor)) void Init() {
  const char* log_path = getenv("PAGELOCK_FAULT_LOG");
  if (log_path && *log_path) {
    g_log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (g_log_fd < 0) fprintf(stderr, "%scannot open PAGELOCK_FAULT_LOG=%s\n", kErrorPrefix, log_path);
  }
  const char* requests = getenv("PAGELOCK_FAULT_LOG_REQUESTS");
  g_log_requests = !(requests && strcmp(requests, "0") == 0);
  LoadReal();
  const char* fault = getenv("PAGELOCK_FAULT");
  g_census = fault && strcmp(fault, "census") == 0;
  if (fault && *fault && strcmp(fault, "none") != 0 && !g_census) {
    g_fault = FindFault(fault);
    if (!g_fault) {
      // An unknown fault must not silently become a control run.
      fprintf(stderr, "%sunknown PAGELOCK_FAULT=%s (see tools/faults/catalogue.tsv and "
              "conforming.tsv)\n",
              kErrorPrefix, fault);
      Log("error\tunknown fault %s", fault);
      _exit(86);
    }
  }
  if (!g_real) {
    fprintf(stderr, "%sno real libcuda.so.1 found (set PAGELOCK_REAL_LIBCUDA)\n", kErrorPrefix);
    Log("init\treal=none\tfault=%s", g_fault ? g_fault->name : "none");
    return;  // every forwarder returns CUDA_ERROR_NOT_FOUND
  }
  for (const Forwarder& f : kForwarders) {
    if (void* p = dlsym(g_real, f.name)) *f.slot = p;
  }
  g_gpa_v2 = reinterpret_cast<GetProcV2>(dlsym(g_real, "cuGetProcAddress_v2"));
  g_gpa_v1 = reinterpret_cast<GetProcV1>(dlsym(g_real, "cuGetProcAddress"));
  if (g_fault) g_fault->install();
  Log("init\treal=%s\tfault=%s", g_real_path, g_fault ? g_fault->name : g_census ? "census" : "none");
}

// The entry for a request: the base name with per-thread suffixes stripped
// ("cuMemcpyHtoD_ptds" -> "cuMemcpyHtoD") whose version range holds the requested version. A
// name with an explicit version suffix ("cuMemcpyHtoD_v2") means the latest ABI of that name.
EntryBase* FindEntry(const char* symbol, int version) {
  char base[128];
  snprintf(base, sizeof(base), "%s", symbol);
  bool explicit_version = false;
  for (bool stripped = true; stripped;) {
    stripped = false;
    size_t n = strlen(base);
    if (n > 5 && (strcmp(base + n - 5, "_ptds") == 0 || strcmp(base + n - 5, "_ptsz") == 0)) {
      base[n - 5] = '\0';
      stripped = true;
      continue;
    }
    size_t i = n;
    while (i > 0 && base[i - 1] >= '0' && base[i - 1] <= '9') --i;
    if (i < n && i >= 2 && base[i - 1] == 'v' && base[i - 2] == '_') {
      base[i - 2] = '\0';
      stripped = explicit_version = true;
    }
  }
  for (EntryBase* e : kEntries) {
    if (strcmp(e->name, base) != 0) continue;
    if (explicit_version ? e->max_version == kNoMax
                         : version >= e->min_version && version < e->max_version)
      return e;
  }
  return nullptr;
}

CUresult CUDAAPI ShimGetProcAddressV1(const char* symbol, void** pfn, int version,
                                      cuuint64_t flags);
CUresult CUDAAPI ShimGetProcAddressV2(const char* symbol, void** pfn, int version,
                                      cuuint64_t flags, CUdriverProcAddressQueryResult* status);

// Replaces a real pointer by the hooked wrapper when the active fault targets the symbol.
const char* Interpose(const char* symbol, void** pfn, int version) {
  if (strncmp(symbol, "cuGetProcAddress", 16) == 0) {
    // Pointers obtained through a returned cuGetProcAddress must pass through the shim too.
    const bool v2 = strcmp(symbol + 16, "_v2") == 0 || (symbol[16] == '\0' && version >= 12000);
    *pfn = v2 ? reinterpret_cast<void*>(&ShimGetProcAddressV2)
              : reinterpret_cast<void*>(&ShimGetProcAddressV1);
    return "self";
  }
  EntryBase* e = FindEntry(symbol, version);
  if (!e || (!e->hook && !g_census)) return "real";
  pthread_mutex_lock(&g_mu);
  int slot = -1;
  for (int i = 0; i < kSlots && slot < 0; ++i) {
    if (e->real[i] == *pfn) slot = i;
    else if (!e->real[i]) { e->real[i] = *pfn; slot = i; }
  }
  pthread_mutex_unlock(&g_mu);
  if (slot < 0) return "real_no_slot";
  *pfn = e->wrapper(slot);
  return "wrapped";
}

CUresult CUDAAPI ShimGetProcAddressV2(const char* symbol, void** pfn, int version,
                                      cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  if (!g_gpa_v2) return CUDA_ERROR_NOT_FOUND;
  CUresult r = g_gpa_v2(symbol, pfn, version, flags, status);
  const char* how = "-";
  if (r == CUDA_SUCCESS && symbol && pfn && *pfn) how = Interpose(symbol, pfn, version);
  if (g_log_requests) Log("gpa\t%s\t%d\t%llu\t%d\t%d\t%s\tv2", symbol ? symbol : "(null)", version,
      static_cast<unsigned long long>(flags), static_cast<int>(r), status ? static_cast<int>(*status) : -1,
      how);
  return r;
}

CUresult CUDAAPI ShimGetProcAddressV1(const char* symbol, void** pfn, int version,
                                      cuuint64_t flags) {
  CUresult r;
  if (g_gpa_v1) {
    r = g_gpa_v1(symbol, pfn, version, flags);
  } else if (g_gpa_v2) {
    r = g_gpa_v2(symbol, pfn, version, flags, nullptr);
  } else {
    return CUDA_ERROR_NOT_FOUND;
  }
  const char* how = "-";
  if (r == CUDA_SUCCESS && symbol && pfn && *pfn) how = Interpose(symbol, pfn, version);
  if (g_log_requests) Log("gpa\t%s\t%d\t%llu\t%d\t-1\t%s\tv1", symbol ? symbol : "(null)", version,
      static_cast<unsigned long long>(flags), static_cast<int>(r), how);
  return r;
}

}  // namespace
}  // namespace pagelock_faults

extern "C" {
__attribute__((visibility("default"))) CUresult CUDAAPI pl_export_gpa_v2(
    const char* symbol, void** pfn, int version, cuuint64_t flags,
    CUdriverProcAddressQueryResult* status) __asm__("cuGetProcAddress_v2");
CUresult CUDAAPI pl_export_gpa_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult* status) {
  return pagelock_faults::ShimGetProcAddressV2(symbol, pfn, version, flags, status);
}
__attribute__((visibility("default"))) CUresult CUDAAPI pl_export_gpa_v1(
    const char* symbol, void** pfn, int version, cuuint64_t flags) __asm__("cuGetProcAddress");
CUresult CUDAAPI pl_export_gpa_v1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return pagelock_faults::ShimGetProcAddressV1(symbol, pfn, version, flags);
}
// The catalogue, for tools that print it (shim_client catalogue) and tests.
__attribute__((visibility("default"))) const pagelock_faults::Fault* pagelock_fault_catalogue(
    size_t* count) {
  return pagelock_faults::Catalogue(count);
}
// The conforming variations (conforming.tsv), for the same tools and tests.
__attribute__((visibility("default"))) const pagelock_faults::Fault* pagelock_fault_conforming(
    size_t* count) {
  return pagelock_faults::Conforming(count);
}
// The batches the faults came in (their blind flags), for the same tools.
__attribute__((visibility("default"))) const pagelock_faults::Batch* pagelock_fault_batches(
    size_t* count) {
  return pagelock_faults::Batches(count);
}
// What is wrong with the catalogue's tables, or null (the tools refuse to print a broken one).
__attribute__((visibility("default"))) const char* pagelock_fault_catalogue_problem() {
  return pagelock_faults::CatalogueProblem();
}
// The entries a fault hooks, space-separated ("" for an unknown fault). Installs the fault's hooks
// on a clean table and removes them again: only for tools, never in a process under test.
__attribute__((visibility("default"))) const char* pagelock_fault_entries(const char* name) {
  using namespace pagelock_faults;
  static char out[1024];
  out[0] = '\0';
  const Fault* f = FindFault(name);
  if (!f || g_fault) return out;
  f->install();
  size_t len = 0;
  for (EntryBase* e : kEntries) {
    if (!e->hook) continue;
    bool dup = strstr(out, e->name) != nullptr;  // two ABIs of one name
    if (!dup) len += snprintf(out + len, sizeof(out) - len, "%s%s", len ? " " : "", e->name);
    e->hook = nullptr;
  }
  return out;
}
// "pagelock-fault-shim <fault or none> <real driver path or none>": lets a test see the layer.
__attribute__((visibility("default"))) const char* pagelock_fault_shim_info() {
  static char info[PATH_MAX + 128];
  snprintf(info, sizeof(info), "pagelock-fault-shim %s %s",
           pagelock_faults::g_fault ? pagelock_faults::g_fault->name : "none",
           pagelock_faults::g_real_path[0] ? pagelock_faults::g_real_path : "none");
  return info;
}
}
