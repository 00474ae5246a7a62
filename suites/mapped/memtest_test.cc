// Memory-test bit patterns over mapped host memory, as DCGM's memtest runs them over device
// memory: walking ones and zeros (word i holds one bit, or all bits but one, at position
// (i + shift) % 32), moving inversions (write p; read-verify p and write ~p ascending; read-verify
// ~p and write p descending; verify p) and address-in-address (each 64-bit pair holds its own
// address). The writer and the checker are different agents: a kernel writes through the device
// pointer and the host checks, and the host writes and a kernel checks; moving inversions pass
// the buffer back and forth at every step. Over cudaHostAlloc Mapped (4 MiB), Mapped|
// WriteCombined (1 MiB: host reads of WC memory are uncached and slow) and a registered
// anonymous mmap (4 MiB). A failure names the first mismatching word's byte offset, the word
// expected and the word got. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>

#include "fixtures/gpu_test.h"
#include "fixtures/resources.h"
#include "kernels/mapped/mapped_kernels.h"
#include "kernels/mapped/memtest_pattern.h"
#include "suites/mapped/mapped_memory.h"

namespace pagelock {
namespace {

size_t BytesFor(HostKind k) {
  return k == HostKind::kHostAllocMappedWriteCombined ? size_t{1} << 20 : size_t{4} << 20;
}

std::string Hex(uint32_t v) { return ::pagelock::Hex(v, 8); }

// The failure message of a check of `pattern`: count, first offset, expected and got.
::testing::AssertionResult Matches(const char* who, const MemtestResult& r, MemtestPattern pattern,
                                   uint32_t param, uint64_t address_base) {
  if (r.mismatches == 0 && r.first == kNoMismatch) return ::testing::AssertionSuccess();
  const uint64_t i = MemtestFirstIndex(r);
  return ::testing::AssertionFailure()
         << who << ": " << r.mismatches << " words differ; first at byte offset " << i * 4
         << ": expected " << Hex(MemtestWord(pattern, i, param, address_base)) << ", got "
         << Hex(MemtestFirstGot(r));
}

// Host writes must leave the CPU's (write-combining) buffers before the kernel that reads them is
// launched: a full fence drains them.
void DrainHostWrites() { std::atomic_thread_fence(std::memory_order_seq_cst); }

class MemtestTest : public GpuTest, public ::testing::WithParamInterface<HostKind> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireMappedKind(GetParam()));
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrManagedMemory, 1));  // the device checks' result word
    stream_ = OwnedStream(cudaStreamNonBlocking);
    ASSERT_CUDA_OK(stream_.status());
    result_ = DeviceBuffer::Managed(sizeof(MemtestResult));
    ASSERT_CUDA_OK(result_.status());
  }

  // Runs a device check or inversion and returns what it found (after the stream synchronises).
  template <class Launch>
  MemtestResult OnDevice(Launch launch) {
    auto* r = result_.as<MemtestResult>();
    r->mismatches = 0;
    r->first = kNoMismatch;
    DrainHostWrites();
    EXPECT_CUDA_OK(launch(r));
    EXPECT_CUDA_OK(cudaStreamSynchronize(stream_.get()));
    return *r;
  }

  cudaStream_t stream() const { return stream_.get(); }
  static size_t Words(const KindBuffer& m) { return m.size() / 4; }

 private:
  OwnedStream stream_;
  DeviceBuffer result_;
};

std::string Name(const ::testing::TestParamInfo<HostKind>& info) { return HostKindName(info.param); }

constexpr MemtestPattern kWalking[] = {MemtestPattern::kWalkingOnes, MemtestPattern::kWalkingZeros};
const char* WalkingName(MemtestPattern p) {
  return p == MemtestPattern::kWalkingOnes ? "walking ones" : "walking zeros";
}

// A driver (or mapping) that drops, reorders or corrupts device stores to host memory, maps the
// device pointer to other pages than the host's, or leaves a stuck bit in the path fails this:
// the host reads another word than the kernel wrote.
TEST_P(MemtestTest, WalkingBitsWrittenByTheDeviceAreReadByTheHost) {
  PAGELOCK_RULE("R140");
  PAGELOCK_MAKE_MAPPED(m, GetParam(), BytesFor(GetParam()));
  const uint32_t shift = static_cast<uint32_t>(CaseSeed() % 32);
  for (MemtestPattern p : kWalking) {
    ASSERT_CUDA_OK(LaunchMemtestFill(m.dev(), Words(m), p, shift, 0, stream()));
    ASSERT_CUDA_OK(cudaStreamSynchronize(stream()));
    EXPECT_TRUE(Matches(WalkingName(p), HostMemtestCheck(m.host(), Words(m), p, shift, 0), p, shift, 0));
  }
  EXPECT_CUDA_OK(m.Free());
}

// A driver whose device alias reads stale or other pages, or a path that loses host stores
// (write-combining buffers never drained), fails this: the kernel counts the words that differ.
TEST_P(MemtestTest, WalkingBitsWrittenByTheHostAreReadByTheDevice) {
  PAGELOCK_RULE("R140");
  PAGELOCK_MAKE_MAPPED(m, GetParam(), BytesFor(GetParam()));
  const uint32_t shift = static_cast<uint32_t>(CaseSeed() % 32);
  for (MemtestPattern p : kWalking) {
    HostMemtestFill(m.host(), Words(m), p, shift, 0);
    const MemtestResult r = OnDevice([&](MemtestResult* out) {
      return LaunchMemtestCheck(m.dev(), Words(m), p, shift, 0, out, stream());
    });
    EXPECT_TRUE(Matches(WalkingName(p), r, p, shift, 0));
  }
  EXPECT_CUDA_OK(m.Free());
}

// The two words of a moving-inversions run: all zeros (complement all ones) and one from the
// case seed.
uint32_t InversionWord(int k) { return k == 0 ? 0u : static_cast<uint32_t>(CaseSeed() >> 7) | 1u; }

// A read-modify-write path that loses either agent's writes, applies them out of order across
// the launch boundary, or serves stale cached lines fails this: each step checks the word the
// other agent wrote last.
TEST_P(MemtestTest, MovingInversionsStartedByTheDevicePassEveryStep) {
  PAGELOCK_RULE("R140");
  PAGELOCK_MAKE_MAPPED(m, GetParam(), BytesFor(GetParam()));
  const MemtestPattern c = MemtestPattern::kConstant;
  for (int k = 0; k < 2; ++k) {
    const uint32_t p = InversionWord(k);
    SCOPED_TRACE("pattern " + Hex(p));
    ASSERT_CUDA_OK(LaunchMemtestFill(m.dev(), Words(m), c, p, 0, stream()));
    ASSERT_CUDA_OK(cudaStreamSynchronize(stream()));
    EXPECT_TRUE(Matches("host, ascending, after the device wrote p",
                        HostMemtestInvert(m.host(), Words(m), p, /*descending=*/false), c, p, 0));
    const MemtestResult down = OnDevice([&](MemtestResult* out) {
      return LaunchMemtestInvert(m.dev(), Words(m), ~p, /*descending=*/true, out, stream());
    });
    EXPECT_TRUE(Matches("device, descending, after the host wrote ~p", down, c, ~p, 0));
    EXPECT_TRUE(Matches("host, final check, after the device wrote p",
                        HostMemtestCheck(m.host(), Words(m), c, p, 0), c, p, 0));
  }
  EXPECT_CUDA_OK(m.Free());
}

// The same, the host first: every step again checks the other agent's last writes.
TEST_P(MemtestTest, MovingInversionsStartedByTheHostPassEveryStep) {
  PAGELOCK_RULE("R140");
  PAGELOCK_MAKE_MAPPED(m, GetParam(), BytesFor(GetParam()));
  const MemtestPattern c = MemtestPattern::kConstant;
  for (int k = 0; k < 2; ++k) {
    const uint32_t p = InversionWord(k);
    SCOPED_TRACE("pattern " + Hex(p));
    HostMemtestFill(m.host(), Words(m), c, p, 0);
    const MemtestResult up = OnDevice([&](MemtestResult* out) {
      return LaunchMemtestInvert(m.dev(), Words(m), p, /*descending=*/false, out, stream());
    });
    EXPECT_TRUE(Matches("device, ascending, after the host wrote p", up, c, p, 0));
    EXPECT_TRUE(Matches("host, descending, after the device wrote ~p",
                        HostMemtestInvert(m.host(), Words(m), ~p, /*descending=*/true), c, ~p, 0));
    const MemtestResult last = OnDevice([&](MemtestResult* out) {
      return LaunchMemtestCheck(m.dev(), Words(m), c, p, 0, out, stream());
    });
    EXPECT_TRUE(Matches("device, final check, after the host wrote p", last, c, p, 0));
  }
  EXPECT_CUDA_OK(m.Free());
}

// A device alias that maps a page of the buffer to the wrong host page (offsets shifted,
// pages swapped or aliased) fails this: each pair holds the device address the kernel stored at,
// so a misplaced page shows as a word holding another page's address.
TEST_P(MemtestTest, AddressInAddressWrittenByTheDeviceIsReadByTheHost) {
  PAGELOCK_RULE("R140");
  PAGELOCK_MAKE_MAPPED(m, GetParam(), BytesFor(GetParam()));
  const MemtestPattern a = MemtestPattern::kAddress;
  const uint64_t base = reinterpret_cast<uintptr_t>(m.dev());
  ASSERT_CUDA_OK(LaunchMemtestFill(m.dev(), Words(m), a, 0, base, stream()));
  ASSERT_CUDA_OK(cudaStreamSynchronize(stream()));
  EXPECT_TRUE(Matches("host check of device addresses", HostMemtestCheck(m.host(), Words(m), a, 0, base),
                      a, 0, base));
  EXPECT_CUDA_OK(m.Free());
}

// The other direction: each pair holds the host address the host stored at; the kernel reads
// them through the device alias, so a misplaced page shows as another page's host address.
TEST_P(MemtestTest, AddressInAddressWrittenByTheHostIsReadByTheDevice) {
  PAGELOCK_RULE("R140");
  PAGELOCK_MAKE_MAPPED(m, GetParam(), BytesFor(GetParam()));
  const MemtestPattern a = MemtestPattern::kAddress;
  const uint64_t base = reinterpret_cast<uintptr_t>(m.host());
  HostMemtestFill(m.host(), Words(m), a, 0, base);
  const MemtestResult r = OnDevice([&](MemtestResult* out) {
    return LaunchMemtestCheck(m.dev(), Words(m), a, 0, base, out, stream());
  });
  EXPECT_TRUE(Matches("device check of host addresses", r, a, 0, base));
  EXPECT_CUDA_OK(m.Free());
}

INSTANTIATE_TEST_SUITE_P(EveryKind, MemtestTest,
                         ::testing::Values(HostKind::kHostAllocMapped,
                                           HostKind::kHostAllocMappedWriteCombined,
                                           HostKind::kRegisteredMmap),
                         Name);

}  // namespace
}  // namespace pagelock
