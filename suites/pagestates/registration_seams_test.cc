// One copy whose host range crosses a seam between two registrations, or between a registration
// and unregistered memory (V11). The driver looks the host range up among its pinned ranges to
// pick the copy's path (DMA from page-locked memory, or staging for pageable memory); a lookup
// that takes the first range's registration for the whole copy reads or writes past its pages,
// one that splits the copy wrongly drops or doubles bytes at the seam (UCX's registration cache
// merges adjacent regions for the same reason: test_rcache.cc). Every byte arrives, H2D and D2H,
// synchronous and asynchronous, in a window that starts and ends at odd offsets around the
// seam, and the bytes beside the window are untouched. The synchronisation follows the
// documented class ("API synchronization behavior", S02): cudaMemcpy D2H has finished when it
// returns, whatever the memory; a cudaMemcpyAsync over two adjacent registrations (page-locked
// throughout) returns while a kernel ahead of it still runs; over a registration and pageable
// memory the copy may be either (recorded). The copy APIs that speak of seams (the batch and
// WithAttributes copies of CUDA 12.8+) say "Memory regions spanning over allocations that are
// both registered and not registered with CUDA are not supported and will return
// CUDA_ERROR_INVALID_VALUE"; cudaMemcpy's page is silent. So each copy may also be refused with
// cudaErrorInvalidValue, and then must have written nothing and left no sticky error; which
// answer came is recorded (r580 refuses a copy that starts in a registration and runs past it).
// Rule ids refer to suites/rules.tsv.
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/cuda_check.h"
#include "fixtures/mapping.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"
#include "kernels/streams/stream_kernels.h"
#include "kernels/pattern.h"
#include "suites/pagestates/pagestates.h"

namespace pagelock {
namespace pagestates {
namespace {

constexpr size_t kHalf = size_t{1} << 20;
constexpr size_t kBefore = 100003, kAfter = 200009;  // the window: odd offsets around the seam
constexpr size_t kWindow = kBefore + kAfter;

enum class Seam { kTwoRegistrations, kRegistrationThenPageable, kPageableThenRegistration };

std::string SeamName(Seam s) {
  switch (s) {
    case Seam::kTwoRegistrations: return "two_registrations";
    case Seam::kRegistrationThenPageable: return "registration_then_pageable";
    case Seam::kPageableThenRegistration: return "pageable_then_registration";
  }
  return "?";
}

// Two adjacent 1 MiB halves of one mapping, registered as seam() says (each registration owned).
class SeamFixture : public PageStatesTest {
 protected:
  virtual Seam seam() const = 0;
  void SetUp() override {
    PageStatesTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    map_ = Mapping::Adopt(mmap(nullptr, 2 * kHalf, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), 2 * kHalf);
    ASSERT_TRUE(map_) << strerror(errno);
    base_ = map_.data();
    std::memset(base_, 0, 2 * kHalf);
    pins_ = std::make_unique<PinWatch>();
    if (seam() != Seam::kPageableThenRegistration) {
      ASSERT_CUDA_OK(cudaHostRegister(base_, kHalf, cudaHostRegisterMapped));
      first_ = HostRegistration::Adopt(base_, kHalf);
    }
    if (seam() != Seam::kRegistrationThenPageable) {
      ASSERT_CUDA_OK(cudaHostRegister(base_ + kHalf, kHalf, cudaHostRegisterMapped));
      second_ = HostRegistration::Adopt(base_ + kHalf, kHalf);
    }
  }
  void TearDown() override {
    if (base_) {
      EXPECT_CUDA_OK(first_.Free());
      EXPECT_CUDA_OK(second_.Free());
      if (pins_) pins_->ExpectReturned("the registrations around the seam ended");
      map_ = Mapping();  // unmapped before the base class's checks, as it was
    }
    PageStatesTest::TearDown();
  }
  unsigned char* window() const { return base_ + kHalf - kBefore; }

  Mapping map_;
  unsigned char* base_ = nullptr;
  std::unique_ptr<PinWatch> pins_;
  HostRegistration first_, second_;
};

class SeamTest : public SeamFixture, public ::testing::WithParamInterface<Seam> {
 protected:
  Seam seam() const override { return GetParam(); }
};

class AdjacentRegistrationsTest : public SeamFixture {
 protected:
  Seam seam() const override { return Seam::kTwoRegistrations; }
};

// Bytes of the whole mapping outside the window that differ from the pattern of `seed` over the
// mapping (the window's neighbours must keep it).
size_t OutsideMismatches(const unsigned char* base, uint32_t seed) {
  size_t bad = 0;
  for (size_t i = 0; i < 2 * kHalf; ++i) {
    if (i >= kHalf - kBefore && i < kHalf + kAfter) continue;
    bad += base[i] != PatternByte(i, seed);
  }
  return bad;
}

// One copy over the window: cudaSuccess, or cudaErrorInvalidValue (the refusal the seam-aware
// copy APIs document; the kit clears the last-error slot); any other answer fails the case.
cudaError_t CopyOrRefuse(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t stream, bool async,
                         const std::string& key) {
  // copy-check: every caller counts both sides after it, whichever answer came
  const cudaError_t e = async ? cudaMemcpyAsync(dst, src, n, kind, stream) : cudaMemcpy(dst, src, n, kind);
  EXPECT_DOCUMENTED_ONE_OF(key, e, (std::vector<cudaError_t>{cudaSuccess, cudaErrorInvalidValue}),
                           "the seam note of the batch and WithAttributes copies");
  return e;
}

TEST_P(SeamTest, ACopyAcrossTheSeamDeliversEveryByteBothWays) {
  PAGELOCK_RULE("V11,S01");
  DeviceBuffer dev(kWindow);
  ASSERT_CUDA_OK(dev.status());
  OwnedStream stream(cudaStreamNonBlocking);
  ASSERT_CUDA_OK(stream.status());
  for (const bool async : {false, true}) {
    const std::string how = async ? "cudaMemcpyAsync" : "cudaMemcpy";
    // H2D: the window's bytes reach the device, or (refused) the device keeps its own.
    const uint32_t h = static_cast<uint32_t>(CaseRng()()), kept = h ^ 0x5a5a5a5au;
    HostFillPattern(window(), kWindow, h);
    ASSERT_CUDA_OK(DeviceFill(dev.get(), kWindow, kept));
    // copy-check: the device counts its bytes below, whichever answer came
    const cudaError_t up = CopyOrRefuse(dev.get(), window(), kWindow, cudaMemcpyHostToDevice, stream.get(), async,
                                        (async ? "async" : "sync") + std::string("_h2d_answer"));
    ASSERT_CUDA_OK(cudaStreamSynchronize(stream.get()));
    unsigned long long bad = 0;
    ASSERT_CUDA_OK(DeviceCount(dev.get(), kWindow, Pattern(up == cudaSuccess ? h : kept), &bad));
    EXPECT_EQ(bad, 0u) << how << " H2D across the seam ("
                       << (up == cudaSuccess ? "succeeded): bytes the device did not receive"
                                             : "refused): device bytes it changed anyway");
    // D2H: the device's bytes reach the window and nothing beside it, or (refused) nothing moves.
    const uint32_t d = static_cast<uint32_t>(CaseRng()()), around = d ^ 0x0f0f0f0fu;
    HostFillPattern(base_, 2 * kHalf, around);
    ASSERT_CUDA_OK(DeviceFill(dev.get(), kWindow, d));
    // copy-check: the window and its neighbours are counted below, whichever answer came
    const cudaError_t down = CopyOrRefuse(window(), dev.get(), kWindow, cudaMemcpyDeviceToHost, stream.get(), async,
                                          (async ? "async" : "sync") + std::string("_d2h_answer"));
    if (async && down == cudaSuccess) {
      Observe("async_d2h_complete_on_return", HostCountPatternMismatches(window(), kWindow, d) == 0);
    }
    ASSERT_CUDA_OK(cudaStreamSynchronize(stream.get()));
    if (down == cudaSuccess) {
      // cudaMemcpy D2H: "the function returns only once the copy has completed" (counted with
      // no synchronisation after the synchronous call: the stream sync above is the async form's).
      EXPECT_EQ(HostCountPatternMismatches(window(), kWindow, d), 0u)
          << how << " D2H across the seam: bytes the host does not hold";
      EXPECT_EQ(OutsideMismatches(base_, around), 0u) << how << " D2H across the seam wrote outside its window";
    } else {
      EXPECT_EQ(HostCountPatternMismatches(base_, 2 * kHalf, around), 0u)
          << how << " D2H across the seam was refused but changed host bytes";
    }
  }
}

// Over two adjacent registrations the whole range is page-locked: cudaMemcpyAsync must not wait
// for a kernel ahead of it on its stream ("For transfers between device memory and pageable
// host memory, the function might be synchronous ... For all other transfers, the function
// should be fully asynchronous"). A driver whose lookup fails at the seam stages the copy like
// pageable memory, synchronously. One attempt in three must show it (preemption may delay one).
// A driver that refuses the copy (cudaErrorInvalidValue, as SeamTest records) has no timing to
// judge: the refusal is recorded, nothing may have moved, and the stream must still work.
TEST_F(AdjacentRegistrationsTest, AnAsyncCopyOverTwoAdjacentRegistrationsReturnsBeforeTheKernelAheadOfIt) {
  PAGELOCK_RULE("V11,S02");
  DeviceBuffer dev(kWindow);
  ASSERT_CUDA_OK(dev.status());
  OwnedStream stream(cudaStreamNonBlocking);
  ASSERT_CUDA_OK(stream.status());
  for (const cudaMemcpyKind kind : {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost}) {
    bool asynchronous = false, refused = false;
    for (int attempt = 0; attempt < 3 && !asynchronous; ++attempt) {
      // The host holds one pattern and the device another: the copy's answer says which each
      // side must hold afterwards (the source's on both, or each its own when refused).
      const uint32_t host_seed = static_cast<uint32_t>(CaseRng()()), dev_seed = host_seed ^ 0x3c3c3c3cu;
      HostFillPattern(window(), kWindow, host_seed);
      ASSERT_CUDA_OK(DeviceFill(dev.get(), kWindow, dev_seed));
      ASSERT_CUDA_OK(LaunchDelay(uint64_t{20} * 1000 * 1000, stream.get()));
      // copy-check: both sides are counted after the stream is idle
      const cudaError_t e = kind == cudaMemcpyHostToDevice
                                ? CopyOrRefuse(dev.get(), window(), kWindow, kind, stream.get(), true, "adjacent_async_h2d_answer")
                                : CopyOrRefuse(window(), dev.get(), kWindow, kind, stream.get(), true, "adjacent_async_d2h_answer");
      refused = e != cudaSuccess;
      if (!refused) asynchronous = cudaStreamQuery(stream.get()) == cudaErrorNotReady;
      ASSERT_CUDA_OK(cudaStreamSynchronize(stream.get()));
      const uint32_t source = kind == cudaMemcpyHostToDevice ? host_seed : dev_seed;
      unsigned long long bad = 0;
      ASSERT_CUDA_OK(DeviceCount(dev.get(), kWindow, Pattern(refused ? dev_seed : source), &bad));
      EXPECT_EQ(bad, 0u) << (refused ? "a refused copy changed device bytes" : "device bytes after the copy");
      EXPECT_EQ(HostCountPatternMismatches(window(), kWindow, refused ? host_seed : source), 0u)
          << (refused ? "a refused copy changed host bytes" : "host bytes after the copy");
      if (refused) break;
    }
    if (refused) continue;
    EXPECT_TRUE(asynchronous) << (kind == cudaMemcpyHostToDevice ? "H2D" : "D2H")
                              << " cudaMemcpyAsync over two adjacent registrations waited for the kernel "
                                 "ahead of it in 3 of 3 attempts: the driver treated it as pageable memory";
  }
}

INSTANTIATE_TEST_SUITE_P(EachSeam, SeamTest,
                         ::testing::Values(Seam::kTwoRegistrations, Seam::kRegistrationThenPageable,
                                           Seam::kPageableThenRegistration),
                         [](const ::testing::TestParamInfo<Seam>& i) { return SeamName(i.param); });

}  // namespace
}  // namespace pagestates
}  // namespace pagelock
