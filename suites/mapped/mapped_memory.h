// The mapped host memory the suite's cases run over: cudaHostAlloc Mapped (HostKind::
// kHostAllocMapped), Mapped|WriteCombined (kHostAllocMappedWriteCombined), or an anonymous mmap
// registered Mapped (kRegisteredMmap); one KindBuffer whatever the kind, with the device alias
// from cudaHostGetDevicePointer.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "fixtures/cuda_check.h"
#include "fixtures/device_caps.h"
#include "fixtures/host_kinds.h"
#include "fixtures/kind_buffer.h"

namespace pagelock {

// What the kind needs of device 0: NotSupported with the attribute and its value otherwise.
inline Requirement RequireMappedKind(HostKind k) {
  Requirement r = RequireAttr(cudaDevAttrCanMapHostMemory, 1);
  if (r.met && IsRegistered(k)) r = RequireAttr(cudaDevAttrHostRegisterSupported, 1);
  return r;
}

// A buffer of `k`, registered kinds with cudaHostRegisterMapped only.
inline std::unique_ptr<KindBuffer> MakeMapped(HostKind k, size_t bytes, KindFailure* failure) {
  KindOptions o;
  o.register_flags = cudaHostRegisterMapped;
  return KindBuffer::Make(k, bytes, failure, o);
}

}  // namespace pagelock

// Makes `m` (a KindBuffer&) of `kind` and `bytes` or ends the case: NotSupported when the kind
// cannot be had, a fatal failure naming the call that failed.
#define PAGELOCK_MAKE_MAPPED(m, kind, bytes)                                                                \
  ::pagelock::KindFailure m##_failure;                                                                     \
  const std::unique_ptr<::pagelock::KindBuffer> m##_owner = ::pagelock::MakeMapped(kind, bytes, &m##_failure); \
  if (!m##_owner && m##_failure.unavailable) PAGELOCK_NOT_SUPPORTED(m##_failure.why);                       \
  ASSERT_NE(m##_owner, nullptr) << m##_failure.call << " returned " << ::pagelock::DescribeCuda(m##_failure.error); \
  ::pagelock::KindBuffer& m = *m##_owner
