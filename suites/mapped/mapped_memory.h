// The mapped host memory the suite's cases run over, one owner whatever the kind: cudaHostAlloc
// Mapped, Mapped|WriteCombined, or an anonymous mmap registered Mapped; with the device alias
// from cudaHostGetDevicePointer.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "fixtures/device_caps.h"
#include "fixtures/resources.h"

namespace pagelock {

enum class MappedKind { kHostAllocMapped, kHostAllocMappedWriteCombined, kRegisteredMmap };

inline const char* MappedKindName(MappedKind k) {
  switch (k) {
    case MappedKind::kHostAllocMapped: return "HostAllocMapped";
    case MappedKind::kHostAllocMappedWriteCombined: return "HostAllocMappedWriteCombined";
    case MappedKind::kRegisteredMmap: return "RegisteredMmap";
  }
  return "?";
}

struct MappedMemory {
  PinnedBuffer pinned;
  HostRegistration registered;
  void* host = nullptr;
  void* dev = nullptr;
  size_t size = 0;
  cudaError_t status = cudaSuccess;  // the first failing call's result
  std::string call;                  // ...and its name
  std::string unavailable;           // set when the kind cannot be had here (NotSupported)

  cudaError_t Free() { return pinned ? pinned.Free() : registered.Free(); }
};

// What the kind needs of device 0: NotSupported with the attribute and its value otherwise.
inline Requirement RequireMappedKind(MappedKind k) {
  Requirement r = RequireAttr(cudaDevAttrCanMapHostMemory, 1);
  if (r.met && k == MappedKind::kRegisteredMmap) r = RequireAttr(cudaDevAttrHostRegisterSupported, 1);
  return r;
}

inline MappedMemory MakeMapped(MappedKind k, size_t bytes) {
  MappedMemory m;
  m.size = bytes;
  if (k == MappedKind::kRegisteredMmap) {
    m.registered = HostRegistration::Make(HostMemoryKind::kAnonymousMmap, bytes, cudaHostRegisterMapped,
                                          &m.unavailable);
    if (!m.unavailable.empty()) return m;
    m.call = "cudaHostRegister(Mapped)";
    m.status = m.registered.status();
    if (m.status != cudaSuccess) return m;
    m.host = m.registered.host();
  } else {
    const unsigned flags = k == MappedKind::kHostAllocMapped
                               ? cudaHostAllocMapped
                               : cudaHostAllocMapped | cudaHostAllocWriteCombined;
    void* p = nullptr;
    m.call = "cudaHostAlloc";
    m.status = cudaHostAlloc(&p, bytes, flags);
    if (m.status != cudaSuccess) return m;
    m.pinned = PinnedBuffer::Adopt(p, bytes);
    m.host = p;
  }
  m.call = "cudaHostGetDevicePointer";
  m.status = cudaHostGetDevicePointer(&m.dev, m.host, 0);
  if (m.status == cudaSuccess) m.call.clear();
  return m;
}

}  // namespace pagelock

// Makes `m` of `kind` and `bytes` or ends the case: NotSupported when the kind cannot be had,
// a fatal failure naming the call that failed.
#define PAGELOCK_MAKE_MAPPED(m, kind, bytes)                                             \
  ::pagelock::MappedMemory m = ::pagelock::MakeMapped(kind, bytes);                      \
  if (!m.unavailable.empty()) PAGELOCK_NOT_SUPPORTED(m.unavailable);                     \
  ASSERT_EQ(m.status, cudaSuccess) << m.call << " returned " << ::pagelock::DescribeCuda(m.status)
