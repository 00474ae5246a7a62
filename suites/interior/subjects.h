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
#include "fixtures/host_kinds.h"
#include "fixtures/kind_buffer.h"

namespace pagelock {
namespace interior {

// The kind's name in the case ids ("HostAllocMapped"...; device memory: "DeviceMemory").
std::string SubjectName(HostKind k);
// Every cudaHostAlloc and registered kind of the breadth matrix, then device memory.
std::vector<HostKind> Subjects();
// The subject's memory: registered kinds with a guard page of the same mapping on each side.
std::unique_ptr<KindBuffer> MakeSubject(HostKind k, size_t bytes, std::string* why);

// A case over one subject: requires unified addressing (without it a host pointer is no device
// pointer, and the driver's pointer queries may answer CUDA_ERROR_INVALID_CONTEXT) and, for a
// registered kind, cudaDevAttrHostRegisterSupported; buf_ holds BufferBytes() of the subject.
class SubjectTest : public DriverApiGpuTest, public ::testing::WithParamInterface<HostKind> {
 protected:
  virtual size_t BufferBytes() const = 0;
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrUnifiedAddressing, 1));
    if (IsRegistered(GetParam())) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
    std::string why;
    buf_ = MakeSubject(GetParam(), BufferBytes(), &why);
    ASSERT_NE(buf_, nullptr) << SubjectName(GetParam()) << ": " << why;
  }
  void TearDown() override {
    buf_.reset();
    DriverApiGpuTest::TearDown();
  }
  std::unique_ptr<KindBuffer> buf_;
};

}  // namespace interior
}  // namespace pagelock

#endif  // PAGELOCK_SUITES_INTERIOR_SUBJECTS_H_
