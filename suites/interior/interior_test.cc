// Interior pointers (peer-gap J10): registration caches (NCCL, UCX, MPI) take
// a user's pointer anywhere inside a buffer and ask the driver for the allocation it belongs to.
// From the first, a middle and the last byte of a cudaHostAlloc allocation (every flag
// combination), of a cudaHostRegister registration (heap, anonymous mmap, memfd; the registered
// range lies inside a larger mapping) and of device memory:
// - cuMemGetAddressRange gives one answer from every interior byte; where it names a range (device
//   memory must; host memory may answer CUDA_ERROR_NOT_FOUND or CUDA_ERROR_INVALID_VALUE), the
//   range holds the whole buffer and its own last byte names the same range;
// - cuPointerGetAttribute(RANGE_START_ADDR, RANGE_SIZE) gives one answer from every interior byte:
//   a range holding the buffer and the range cuMemGetAddressRange names (an allocation and device
//   memory must name one; a registration may refuse with CUDA_ERROR_INVALID_VALUE, recorded);
// - cudaPointerGetAttributes names host memory of device 0 with the interior byte's own host
//   pointer and device alias;
// - the bytes just outside the range the driver reports for the buffer are not reported inside
//   it, and the unregistered pages just before and after a registration are in no allocation.
// How far a range reaches past the buffer (exact, rounded to some unit, a whole reservation) is
// not documented: it is recorded, never bounded by a unit of the suite's choosing.
//
// CUDA 13.0 cuda.h: cuMemGetAddressRange "Returns the base address in *pbase and size in *psize of
// the allocation by ::cuMemAlloc() or ::cuMemAllocPitch() that contains the input pointer dptr"
// and lists CUDA_ERROR_NOT_FOUND and CUDA_ERROR_INVALID_VALUE; cuPointerGetAttribute
// RANGE_START_ADDR "Returns in *data the starting address for the allocation referenced by the
// device pointer ptr.  Note that this is not necessarily the address of the mapped region, but
// the address of the mappable address range ptr references (e.g. from ::cuMemAddressReserve)",
// RANGE_SIZE the same for the size, "To retrieve the size of the mapped region, see
// ::cuMemGetAddressRange". With unified addressing a page-locked host pointer is a device pointer
// ("host memory allocated ... can be accessed from the device at the same address", CUDA_UNIFIED).
// Rule ids refer to suites/rules.tsv (R94, R95, R96).
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/platform_gates.h"
#include "fixtures/resources.h"
#include "suites/interior/subjects.h"

namespace pagelock {
namespace {

using interior::SubjectName;
using interior::Subjects;

// The interior bytes a cache looks up: first, middle (a random one, not page aligned) and last.
std::vector<size_t> InteriorOffsets(size_t bytes) {
  const size_t middle = 1 + CaseRng()() % (bytes - 2);
  return {0, middle, bytes - 1};
}

CUdeviceptr Dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// [base, base + size) holds address a (no wrap-around arithmetic).
bool Holds(CUdeviceptr base, size_t size, CUdeviceptr a) { return a >= base && a - base < size; }
// [a, a + n) and [b, b + m) share a byte.
bool Overlap(CUdeviceptr a, size_t n, CUdeviceptr b, size_t m) {
  return n > 0 && m > 0 && (a <= b ? b - a < n : a - b < m);
}
// The range's last byte; false where the range is empty or wraps past the top of the address space.
bool LastByte(CUdeviceptr base, size_t size, CUdeviceptr* last) {
  if (size == 0 || size - 1 > ~base) return false;
  *last = base + (size - 1);
  return true;
}

// cuMemGetAddressRange is documented for "the allocation by ::cuMemAlloc() or ::cuMemAllocPitch()
// that contains the input pointer" (cuda.h 13.0), and lists CUDA_ERROR_NOT_FOUND and
// CUDA_ERROR_INVALID_VALUE: nothing promises an answer for cudaHostAlloc or registered memory, so
// host memory may answer either (recorded); device memory is the allocation it describes.
constexpr char kAddressRangeDoc[] =
    "cuMemGetAddressRange: 'the allocation by ::cuMemAlloc() or ::cuMemAllocPitch() that contains "
    "the input pointer'; host memory is not named, CUDA_ERROR_NOT_FOUND and CUDA_ERROR_INVALID_VALUE "
    "are listed";

// The range must hold the whole buffer; how far it reaches beyond it is recorded, not bounded. No
// granularity is documented: cuMemGetAddressRange names "the allocation ... that contains the input
// pointer" without saying whether that is the bytes asked for or some unit behind them, and
// RANGE_START_ADDR / RANGE_SIZE name "the mappable address range ptr references (e.g. from
// ::cuMemAddressReserve)", "not necessarily ... the mapped region". A range that misses a byte of
// the buffer (a wrong base from an interior byte, a short or stale size) fails; one that reaches
// too far is caught where it contradicts the driver's own answers (the range's last byte, the
// bytes just past it: see the tests).
void ExpectRangeHolds(const char* key, CUdeviceptr base, size_t size, CUdeviceptr ptr, size_t bytes) {
  const bool starts = base <= ptr;
  const bool ends = starts && ptr - base <= size && size - (ptr - base) >= bytes;
  EXPECT_TRUE(starts) << "the range starts after the buffer: base 0x" << std::hex << base << ", buffer 0x" << ptr;
  EXPECT_TRUE(!starts || ends) << "the range ends inside the buffer: base 0x" << std::hex << base << std::dec
                               << ", size " << size << " for " << bytes << " bytes at offset " << ptr - base;
  if (!starts || !ends) return;
  const std::string start = base == ptr ? "start exact" : "start rounded down";
  const std::string end = size - (ptr - base) == bytes ? "end exact" : "end rounded up";
  Observe(key, start + ", " + end);
}

class InteriorPointerTest : public interior::SubjectTest {
 protected:
  // Three pages and a bit, so first, middle and last byte are on different pages and the size is
  // not a page multiple.
  size_t BufferBytes() const override { return 3 * PageSize() + 100; }
  // The answers cuMemGetAddressRange may give for the buffer's own bytes (kAddressRangeDoc).
  std::vector<CUresult> AddressRangeAnswers() const {
    if (GetParam() == HostKind::kDevice) return {CUDA_SUCCESS};
    return {CUDA_SUCCESS, CUDA_ERROR_NOT_FOUND, CUDA_ERROR_INVALID_VALUE};
  }
  void ExpectRangeHoldsTheBuffer(const char* key, CUdeviceptr base, size_t size) {
    ExpectRangeHolds(key, base, size, Dptr(buf_->ptr()), buf_->size());
  }
};

TEST_P(InteriorPointerTest, AddressRangeFromTheFirstAMiddleAndTheLastByteIsOneRangeHoldingTheBuffer) {
  PAGELOCK_RULE("R94");
  CUresult r0 = CUDA_SUCCESS;
  CUdeviceptr base0 = 0;
  size_t size0 = 0;
  for (size_t off : InteriorOffsets(buf_->size())) {
    SCOPED_TRACE("byte " + std::to_string(off));
    CUdeviceptr base = 0;
    size_t size = 0;
    const CUresult r = d.cuMemGetAddressRange(&base, &size, Dptr(buf_->ptr() + off));
    if (off == 0) {
      ASSERT_TRUE(CheckDocumentedOneOf("address_range_result", r, AddressRangeAnswers(), kAddressRangeDoc));
      r0 = r;
      base0 = base;
      size0 = size;
      if (r == CUDA_SUCCESS) {
        Observe("base_offset", static_cast<long long>(Dptr(buf_->ptr()) - base));
        Observe("range_size", static_cast<unsigned long long>(size));
      }
      continue;
    }
    // One allocation holds every byte of the buffer: every byte gets the first byte's answer.
    EXPECT_EQ(CuName(r), CuName(r0)) << "another answer than the first byte's";
    if (r != CUDA_SUCCESS || r0 != CUDA_SUCCESS) continue;
    EXPECT_EQ(base, base0) << "another base than the first byte's";
    EXPECT_EQ(size, size0) << "another size than the first byte's";
  }
  if (r0 != CUDA_SUCCESS) return;  // host memory in no allocation: recorded, nothing to hold
  ExpectRangeHoldsTheBuffer("address_range_shape", base0, size0);
  // The range's own first and last byte are in the allocation the driver just named, so they name
  // the same range: a range that reaches past the allocation (another block's size, an earlier
  // block's at this address) names bytes the driver then places elsewhere or nowhere.
  auto expect_same_range_from = [&](const char* which, CUdeviceptr at) {
    CUdeviceptr base = 0;
    size_t size = 0;
    const CUresult r = d.cuMemGetAddressRange(&base, &size, at);
    EXPECT_TRUE(r == CUDA_SUCCESS && base == base0 && size == size0)
        << "the " << which << " byte of the range named for the buffer (0x" << std::hex << base0 << std::dec << ", "
        << size0 << " bytes) answers " << DescribeCu(r) << ", 0x" << std::hex << base << std::dec << ", " << size;
  };
  if (base0 != Dptr(buf_->ptr())) expect_same_range_from("first", base0);
  CUdeviceptr last = 0;
  if (LastByte(base0, size0, &last) && last != Dptr(buf_->ptr() + buf_->size() - 1)) {
    expect_same_range_from("last", last);
  }
}

// RANGE_START_ADDR is "the starting address for the allocation referenced by the device pointer
// ptr": an allocation and device memory must answer. Nothing is said of registrations, so an
// older driver's (r535, r550) CUDA_ERROR_INVALID_VALUE for one is recorded (range_refused), as
// AddressReuseTest and PointerQueriesTest do (gates::RangeAttributeVerdict); every interior byte
// must still give the first byte's answer, and any other code fails. Fails: range_size_attribute_short
// (RANGE_SIZE a byte short of the region cuMemGetAddressRange names), a start that moves with the
// interior byte, one byte refusing where another answers, an allocation refusing the attribute.
TEST_P(InteriorPointerTest, RangeAttributesFromTheFirstAMiddleAndTheLastByteAreOneRangeHoldingTheBuffer) {
  PAGELOCK_RULE("R95");
  CUresult r0 = CUDA_SUCCESS;
  CUdeviceptr start0 = 0;
  size_t size0 = 0;
  for (size_t off : InteriorOffsets(buf_->size())) {
    SCOPED_TRACE("byte " + std::to_string(off));
    CUdeviceptr start = 0;
    size_t size = 0;
    CUresult r = d.cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, Dptr(buf_->ptr() + off));
    const CUresult size_r = d.cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, Dptr(buf_->ptr() + off));
    if (r == CUDA_SUCCESS) r = size_r;
    ASSERT_NE(gates::RangeAttributeVerdict(IsRegistered(buf_->kind()), r), gates::Verdict::kFail)
        << "RANGE_START_ADDR / RANGE_SIZE: " << DescribeCu(r)
        << (IsRegistered(buf_->kind()) ? " (a registration may answer CUDA_ERROR_INVALID_VALUE)" : " for an allocation");
    if (off == 0) {
      r0 = r;
      start0 = start;
      size0 = size;
      if (r != CUDA_SUCCESS) {
        Observe("range_refused", CuName(r));
      } else {
        Observe("range_start_offset", static_cast<long long>(Dptr(buf_->ptr()) - start));
        Observe("range_size", static_cast<unsigned long long>(size));
      }
      continue;
    }
    // One allocation or registration holds every byte: every byte gets the first byte's answer.
    EXPECT_EQ(CuName(r), CuName(r0)) << "another answer than the first byte's";
    if (r != CUDA_SUCCESS || r0 != CUDA_SUCCESS) continue;
    EXPECT_EQ(start, start0) << "another start than the first byte's";
    EXPECT_EQ(size, size0) << "another size than the first byte's";
  }
  if (r0 != CUDA_SUCCESS) return;  // a registration's range refused: recorded, nothing to hold
  // "the mappable address range ptr references", "not necessarily ... the mapped region": it holds
  // the buffer, and its start and size are recorded, never bounded.
  ExpectRangeHoldsTheBuffer("range_attribute_shape", start0, size0);
  // "To retrieve the size of the mapped region, see ::cuMemGetAddressRange": the mapped region
  // lies in the mappable range that holds it. Where cuMemGetAddressRange names a range (its own
  // answer is judged by the case above), RANGE_START_ADDR / RANGE_SIZE hold all of it.
  CUdeviceptr base = 0;
  size_t size = 0;
  const CUresult r = d.cuMemGetAddressRange(&base, &size, Dptr(buf_->ptr()));
  if (r != CUDA_SUCCESS) {
    Observe("range_attribute_vs_address_range", "no address range: " + CuName(r));
    return;
  }
  const bool holds = Holds(start0, size0, base) && size <= size0 - (base - start0);
  EXPECT_TRUE(holds) << "RANGE_START_ADDR / RANGE_SIZE (0x" << std::hex << start0 << std::dec << ", " << size0
                     << " bytes) do not hold the mapped region cuMemGetAddressRange names (0x" << std::hex << base
                     << std::dec << ", " << size << " bytes)";
  Observe("range_attribute_vs_address_range",
          start0 == base && size0 == size ? "the same range" : holds ? "a larger range" : "not holding it");
}

TEST_P(InteriorPointerTest, PointerAttributesOfAnyInteriorByteNameItsOwnHostAndDeviceAddress) {
  PAGELOCK_RULE("R96");
  for (size_t off : InteriorOffsets(buf_->size())) {
    SCOPED_TRACE("byte " + std::to_string(off));
    cudaPointerAttributes a{};
    ASSERT_CUDA_OK(cudaPointerGetAttributes(&a, buf_->ptr() + off));
    EXPECT_EQ(a.device, 0);
    if (GetParam() == HostKind::kDevice) {
      EXPECT_EQ(a.type, cudaMemoryTypeDevice);
      EXPECT_EQ(a.devicePointer, buf_->ptr() + off);
    } else {
      EXPECT_EQ(a.type, cudaMemoryTypeHost);
      EXPECT_EQ(a.hostPointer, buf_->ptr() + off);
      EXPECT_EQ(a.devicePointer, buf_->dev() + off);
    }
  }
}

// The driver's singular queries agree with the runtime's, byte by byte: "the device pointer value
// through which ptr may be accessed by kernels" and "the host pointer value through which ptr may
// be accessed" of an interior byte are that byte's own aliases, not the block's start. Fault
// caught: attribute_device_pointer_ignores_offset (the block start's alias for every byte).
TEST_P(InteriorPointerTest, DriverPointerAttributesOfAnyInteriorByteNameItsOwnAliases) {
  PAGELOCK_RULE("R96");
  for (size_t off : InteriorOffsets(buf_->size())) {
    SCOPED_TRACE("byte " + std::to_string(off));
    CUdeviceptr dev = 0;
    ASSERT_CU_OK(d.cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, Dptr(buf_->ptr() + off)));
    if (GetParam() == HostKind::kDevice) {
      EXPECT_EQ(dev, Dptr(buf_->ptr() + off)) << "the device pointer of a device byte is itself";
      continue;
    }
    EXPECT_EQ(dev, Dptr(buf_->dev() + off)) << "the device alias of this byte";
    void* host = nullptr;
    ASSERT_CU_OK(d.cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, Dptr(buf_->ptr() + off)));
    EXPECT_EQ(host, static_cast<void*>(buf_->ptr() + off)) << "the host alias of this byte";
  }
}

// The bytes just outside the buffer's range. How far the range reaches is not documented (a
// driver may round an allocation up to any unit, and the case above records how far it does),
// so "outside" is judged against the range the driver names for the buffer itself: the first byte
// past it is in no allocation (CUDA_ERROR_NOT_FOUND or CUDA_ERROR_INVALID_VALUE, the two of the
// reference's error list that can mean it) or in another allocation's range, one that holds that
// byte ("the allocation ... that contains the input pointer") and shares none with the buffer's.
// One past the buffer's end may lie in a rounded range: it then names that range (recorded). For
// a registration, cudaHostRegister "Page-locks the memory range specified by ptr and size": the
// unregistered pages of the same mapping just before and after the pages it is on are no one's
// allocation, and any range named there fails. Where host memory is in no allocation (the
// documentation does not promise an answer for it), no byte outside may name a range holding a
// byte of the buffer.
TEST_P(InteriorPointerTest, TheBytesJustOutsideTheReportedRangeAreNotReportedInsideIt) {
  PAGELOCK_RULE("R94");
  const CUdeviceptr ptr = Dptr(buf_->ptr());
  const CUdeviceptr end = ptr + buf_->size();
  CUdeviceptr own_base = 0;
  size_t own_size = 0;
  const CUresult own = d.cuMemGetAddressRange(&own_base, &own_size, ptr);
  ASSERT_TRUE(CheckDocumentedOneOf("address_range_result", own, AddressRangeAnswers(), kAddressRangeDoc));
  const bool known = own == CUDA_SUCCESS;
  // What a byte outside may not name: the buffer's range, or, where it has none, its bytes.
  const CUdeviceptr keep_base = known ? own_base : ptr;
  const size_t keep_size = known ? own_size : buf_->size();

  struct Probe {
    const char* key;
    CUdeviceptr at;
    bool unregistered;  // a page of the mapping no registration covers
  };
  std::vector<Probe> probes;
  auto add = [&probes](const char* key, CUdeviceptr at, bool unregistered) {
    for (Probe& p : probes) {
      if (p.at == at) {
        p.unregistered = p.unregistered || unregistered;
        return;
      }
    }
    probes.push_back(Probe{key, at, unregistered});
  };
  add("past_end", end, false);
  CUdeviceptr last = 0;
  if (known && LastByte(own_base, own_size, &last) && last + 1 != 0) add("past_reported_range", last + 1, false);
  if (IsRegistered(buf_->kind())) {
    const CUdeviceptr page = PageSize();
    add("before_start", ptr - 1, true);
    add("past_last_page", (end + page - 1) / page * page, true);
  }

  for (const Probe& probe : probes) {
    SCOPED_TRACE(std::string(probe.key) + " (offset " + std::to_string(static_cast<long long>(probe.at - ptr)) +
                 " from the buffer)");
    CUdeviceptr base = 0;
    size_t size = 0;
    const CUresult r = d.cuMemGetAddressRange(&base, &size, probe.at);
    const bool in_own = known && Holds(own_base, own_size, probe.at);
    if (r != CUDA_SUCCESS) {
      Observe(probe.key, DescribeCu(r));
      EXPECT_TRUE(r == CUDA_ERROR_NOT_FOUND || r == CUDA_ERROR_INVALID_VALUE) << DescribeCu(r);
      EXPECT_FALSE(in_own) << "a byte of the range named for the buffer is in no allocation: " << DescribeCu(r);
      continue;
    }
    const bool same = known && base == own_base && size == own_size;
    Observe(probe.key, same ? "CUDA_SUCCESS: the buffer's own range" : "CUDA_SUCCESS: another range");
    if (probe.unregistered) {
      ADD_FAILURE() << "unregistered host memory next to a registration reported as an allocation at 0x" << std::hex
                    << base << std::dec << " of " << size << " bytes"
                    << (same ? " (the range named for the registration reaches a page it does not cover)" : "");
      continue;
    }
    if (in_own) {
      EXPECT_TRUE(same) << "a byte of the range named for the buffer names another range: 0x" << std::hex << base
                        << std::dec << " of " << size << " bytes";
      continue;
    }
    EXPECT_TRUE(Holds(base, size, probe.at)) << "the range named does not contain the byte asked about: 0x" << std::hex
                                             << base << std::dec << " of " << size << " bytes";
    EXPECT_FALSE(Overlap(base, size, keep_base, keep_size))
        << "a byte outside the buffer's range names a range holding bytes of "
        << (known ? "the buffer's range" : "the buffer") << ": 0x" << std::hex << base << std::dec << " of " << size
        << " bytes";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKind, InteriorPointerTest, ::testing::ValuesIn(Subjects()),
                         [](const ::testing::TestParamInfo<HostKind>& info) { return SubjectName(info.param); });

}  // namespace
}  // namespace pagelock
