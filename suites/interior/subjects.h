// What the interior suites query: a cudaHostAlloc allocation of any flag word, a registration
// (heap, anonymous mmap, memfd) inside a larger mapping with an unregistered page on each side,
// or device memory. Shared by interior_test and pointer_queries_test.
#ifndef PAGELOCK_SUITES_INTERIOR_SUBJECTS_H_
#define PAGELOCK_SUITES_INTERIOR_SUBJECTS_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fixtures/driver_api.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/resources.h"
#include "suites/hostkinds/host_kinds.h"

namespace pagelock {
namespace interior {

struct Subject {
  bool device = false;
  kinds::HostKind kind = kinds::HostKind::kHostAllocDefault;
};
std::string SubjectName(const Subject& s);
// Every host kind, then device memory.
std::vector<Subject> Subjects();

// The buffer under test; released at the end of scope (a failing release fails the case).
class Subjected {
 public:
  // Null with *why set when the memory cannot be had (the kind unavailable, an error named).
  static std::unique_ptr<Subjected> Make(const Subject& s, size_t bytes, std::string* why);
  unsigned char* ptr() const { return p_; }
  // The device alias (cudaHostGetDevicePointer of the start; device memory: itself).
  unsigned char* dev() const { return dev_; }
  size_t bytes() const { return bytes_; }
  bool registered() const { return !s_.device && kinds::IsRegistered(s_.kind); }

 private:
  Subjected() = default;
  Subject s_;
  size_t bytes_ = 0;
  unsigned char* p_ = nullptr;
  unsigned char* dev_ = nullptr;
  std::unique_ptr<HostRegion> region_;
  // The kit's owners, released before the region they may register.
  DeviceBuffer device_;
  HostRegistration registered_;
  PinnedBuffer pinned_;
};

// A case over one Subject: requires unified addressing (without it a host pointer is no device
// pointer, and the driver's pointer queries may answer CUDA_ERROR_INVALID_CONTEXT) and, for a
// registered kind, cudaDevAttrHostRegisterSupported; buf_ holds BufferBytes() of the subject.
class SubjectTest : public DriverApiGpuTest, public ::testing::WithParamInterface<Subject> {
 protected:
  virtual size_t BufferBytes() const = 0;
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrUnifiedAddressing, 1));
    if (!GetParam().device && kinds::IsRegistered(GetParam().kind))
      PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
    std::string why;
    buf_ = Subjected::Make(GetParam(), BufferBytes(), &why);
    ASSERT_NE(buf_, nullptr) << SubjectName(GetParam()) << ": " << why;
  }
  void TearDown() override {
    buf_.reset();
    DriverApiGpuTest::TearDown();
  }
  std::unique_ptr<Subjected> buf_;
};

}  // namespace interior
}  // namespace pagelock

#endif  // PAGELOCK_SUITES_INTERIOR_SUBJECTS_H_
