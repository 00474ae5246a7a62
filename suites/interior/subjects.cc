#include "suites/interior/subjects.h"

#include <cuda_runtime.h>

#include "fixtures/cuda_check.h"

namespace pagelock {
namespace interior {

using kinds::HostKind;

std::string SubjectName(const Subject& s) { return s.device ? "DeviceMemory" : kinds::HostKindName(s.kind); }

std::vector<Subject> Subjects() {
  std::vector<Subject> v;
  for (HostKind k : kinds::AllHostKinds()) v.push_back(Subject{false, k});
  v.push_back(Subject{true});
  return v;
}

std::unique_ptr<Subjected> Subjected::Make(const Subject& s, size_t bytes, std::string* why) {
  std::unique_ptr<Subjected> b(new Subjected());
  b->s_ = s;
  b->bytes_ = bytes;
  void* p = nullptr;
  cudaError_t e = cudaSuccess;
  if (s.device) {
    e = cudaMalloc(&p, bytes);
  } else if (!kinds::IsRegistered(s.kind)) {
    e = cudaHostAlloc(&p, bytes, static_cast<unsigned>(s.kind));  // HostKind order is the flag value
  } else {
    const HostMemoryKind hk = s.kind == HostKind::kRegisteredMalloc ? HostMemoryKind::kHeapPageAligned
                              : s.kind == HostKind::kRegisteredMmap ? HostMemoryKind::kAnonymousMmap
                                                                    : HostMemoryKind::kShmemFileMmap;
    // Unregistered pages of the same mapping on each side, so probes outside read memory that
    // exists and is no one's registration.
    b->region_ = HostRegion::Make(hk, bytes + 3 * PageSize());
    if (!b->region_ || !b->region_->data()) {
      *why = KindName(hk) + " unavailable: " + (b->region_ ? b->region_->unavailable() : "no region");
      return nullptr;
    }
    p = static_cast<unsigned char*>(b->region_->data()) + PageSize();
    e = cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
  }
  if (e != cudaSuccess) {
    *why = ErrName(e);
    (void)cudaGetLastError();
    return nullptr;
  }
  b->p_ = static_cast<unsigned char*>(p);
  if (s.device) {
    b->device_ = DeviceBuffer::Adopt(p, bytes);
  } else if (kinds::IsRegistered(s.kind)) {
    b->registered_ = HostRegistration::Adopt(p, bytes);
  } else {
    b->pinned_ = PinnedBuffer::Adopt(p, bytes);
  }
  if (s.device) {
    b->dev_ = b->p_;
    return b;
  }
  void* d = nullptr;
  e = cudaHostGetDevicePointer(&d, p, 0);
  if (e != cudaSuccess) {
    *why = "cudaHostGetDevicePointer: " + ErrName(e);
    (void)cudaGetLastError();
    return nullptr;
  }
  b->dev_ = static_cast<unsigned char*>(d);
  return b;
}

}  // namespace interior
}  // namespace pagelock
