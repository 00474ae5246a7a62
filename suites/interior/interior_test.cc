// Interior pointers (issue 22 item 1; peer-gap J10): registration caches (NCCL, UCX, MPI) take
// a user's pointer anywhere inside a buffer and ask the driver for the allocation it belongs to.
// From the first, a middle and the last byte of a cudaHostAlloc allocation (every flag
// combination), of a cudaHostRegister registration (heap, anonymous mmap, memfd; the registered
// range lies inside a larger mapping) and of device memory:
// - cuMemGetAddressRange and cuPointerGetAttribute(RANGE_START_ADDR, RANGE_SIZE) give one base
//   and size, the same from every interior byte, and the range holds the whole buffer;
// - cudaPointerGetAttributes names host memory of device 0 with the interior byte's own host
//   pointer and device alias;
// - the byte one past the end (and one before the start of a registration) is not inside it.
//
// CUDA 13.0 Driver API reference: cuMemGetAddressRange "Returns the base address in *pbase and
// size in *psize of the allocation ... that contains the input pointer dptr"; cuPointerGetAttribute
// RANGE_START_ADDR "Returns in *data the starting address for the allocation referenced by the
// device pointer ptr", RANGE_SIZE "the size for the allocation referenced by the device pointer
// ptr". With unified addressing a page-locked host pointer is a device pointer ("host memory
// allocated ... can be accessed from the device at the same address", CUDA_UNIFIED).
// Rule ids refer to suites/rules.tsv (R94, R95, R96).
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/resources.h"
#include "suites/hostkinds/host_kinds.h"

namespace pagelock {
namespace {

using kinds::HostKind;
using kinds::HostKindName;

// What a case queries: a cudaHostAlloc allocation, a registration inside a larger mapping, or
// device memory.
struct Subject {
  bool device = false;
  HostKind kind = HostKind::kHostAllocDefault;
};
std::string SubjectName(const Subject& s) { return s.device ? "DeviceMemory" : HostKindName(s.kind); }
std::vector<Subject> Subjects() {
  std::vector<Subject> v;
  for (HostKind k : kinds::AllHostKinds()) v.push_back(Subject{false, k});
  v.push_back(Subject{true});
  return v;
}

// Three pages and a bit, so first, middle and last byte are on different pages and the size is
// not a page multiple.
size_t BufferBytes() { return 3 * PageSize() + 100; }

// The buffer under test; released at the end of scope (a failing release fails the case).
class Subjected {
 public:
  static std::unique_ptr<Subjected> Make(const Subject& s, size_t bytes, std::string* why) {
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
      // A page of unregistered memory of the same mapping on each side.
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
    if (!s.device) {
      void* d = nullptr;
      e = cudaHostGetDevicePointer(&d, p, 0);
      if (e != cudaSuccess) {
        *why = "cudaHostGetDevicePointer: " + ErrName(e);
        (void)cudaGetLastError();
        return nullptr;
      }
      b->dev_ = static_cast<unsigned char*>(d);
    } else {
      b->dev_ = b->p_;
    }
    return b;
  }
  unsigned char* ptr() const { return p_; }
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


// The interior bytes a cache looks up: first, middle (a random one, not page aligned) and last.
std::vector<size_t> InteriorOffsets(size_t bytes) {
  const size_t middle = 1 + CaseRng()() % (bytes - 2);
  return {0, middle, bytes - 1};
}

CUdeviceptr Dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// The range must hold the whole buffer and nothing beyond the units the buffer occupies (pages
// of host memory; 2 MiB granules of device memory). The documentation says "the allocation ...
// that contains the input pointer" without saying whether that is the bytes asked for or the
// pages behind them, so an exact range and a rounded one both pass, and which came is recorded
// (r580 answers exact). A driver that names a previous, larger block at the address, or another
// block's range, fails the bound.
void ExpectRangeOfBuffer(const char* key, CUdeviceptr base, size_t size, CUdeviceptr ptr, size_t bytes,
                         size_t unit) {
  const CUdeviceptr lo = ptr / unit * unit;
  const CUdeviceptr hi = (ptr + bytes + unit - 1) / unit * unit;
  EXPECT_LE(base, ptr) << "the range starts after the buffer";
  EXPECT_GE(base + size, ptr + bytes) << "the range ends inside the buffer";
  EXPECT_GE(base, lo) << "the range starts before the buffer's first " << unit << "-byte unit";
  EXPECT_LE(base + size, hi) << "the range reaches past the buffer's last " << unit << "-byte unit (size "
                             << size << " for " << bytes << " bytes)";
  const std::string start = base == ptr ? "start exact" : "start rounded down";
  const std::string end = base + size == ptr + bytes ? "end exact" : "end rounded up";
  Observe(key, start + ", " + end);
}

class InteriorPointerTest : public DriverApiGpuTest, public ::testing::WithParamInterface<Subject> {
 protected:
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
  void ExpectRangeHoldsOnlyTheBuffer(const char* key, CUdeviceptr base, size_t size) {
    ExpectRangeOfBuffer(key, base, size, Dptr(buf_->ptr()), buf_->bytes(),
                        GetParam().device ? size_t{2} << 20 : PageSize());
  }
  std::unique_ptr<Subjected> buf_;
};

TEST_P(InteriorPointerTest, AddressRangeFromTheFirstAMiddleAndTheLastByteIsOneRangeHoldingTheBuffer) {
  PAGELOCK_RULE("R94");
  CUdeviceptr base0 = 0;
  size_t size0 = 0;
  for (size_t off : InteriorOffsets(buf_->bytes())) {
    SCOPED_TRACE("byte " + std::to_string(off));
    CUdeviceptr base = 0;
    size_t size = 0;
    ASSERT_CU_OK(d.cuMemGetAddressRange(&base, &size, Dptr(buf_->ptr() + off)));
    if (off == 0) {
      base0 = base;
      size0 = size;
      Observe("base_offset", static_cast<long long>(Dptr(buf_->ptr()) - base));
      Observe("range_size", static_cast<unsigned long long>(size));
    }
    EXPECT_EQ(base, base0) << "another base than the first byte's";
    EXPECT_EQ(size, size0) << "another size than the first byte's";
  }
  ExpectRangeHoldsOnlyTheBuffer("address_range_shape", base0, size0);
}

TEST_P(InteriorPointerTest, RangeAttributesFromTheFirstAMiddleAndTheLastByteAreOneRangeHoldingTheBuffer) {
  PAGELOCK_RULE("R95");
  CUdeviceptr start0 = 0;
  size_t size0 = 0;
  for (size_t off : InteriorOffsets(buf_->bytes())) {
    SCOPED_TRACE("byte " + std::to_string(off));
    CUdeviceptr start = 0;
    size_t size = 0;
    ASSERT_CU_OK(d.cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, Dptr(buf_->ptr() + off)));
    ASSERT_CU_OK(d.cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, Dptr(buf_->ptr() + off)));
    if (off == 0) {
      start0 = start;
      size0 = size;
      Observe("range_start_offset", static_cast<long long>(Dptr(buf_->ptr()) - start));
      Observe("range_size", static_cast<unsigned long long>(size));
    }
    EXPECT_EQ(start, start0) << "another start than the first byte's";
    EXPECT_EQ(size, size0) << "another size than the first byte's";
  }
  ExpectRangeHoldsOnlyTheBuffer("range_attribute_shape", start0, size0);
}

TEST_P(InteriorPointerTest, PointerAttributesOfAnyInteriorByteNameItsOwnHostAndDeviceAddress) {
  PAGELOCK_RULE("R96");
  for (size_t off : InteriorOffsets(buf_->bytes())) {
    SCOPED_TRACE("byte " + std::to_string(off));
    cudaPointerAttributes a{};
    ASSERT_CUDA_OK(cudaPointerGetAttributes(&a, buf_->ptr() + off));
    EXPECT_EQ(a.device, 0);
    if (GetParam().device) {
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
  for (size_t off : InteriorOffsets(buf_->bytes())) {
    SCOPED_TRACE("byte " + std::to_string(off));
    CUdeviceptr dev = 0;
    ASSERT_CU_OK(d.cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, Dptr(buf_->ptr() + off)));
    if (GetParam().device) {
      EXPECT_EQ(dev, Dptr(buf_->ptr() + off)) << "the device pointer of a device byte is itself";
      continue;
    }
    EXPECT_EQ(dev, Dptr(buf_->dev() + off)) << "the device alias of this byte";
    void* host = nullptr;
    ASSERT_CU_OK(d.cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, Dptr(buf_->ptr() + off)));
    EXPECT_EQ(host, static_cast<void*>(buf_->ptr() + off)) << "the host alias of this byte";
  }
}

// One past the end (and, for a registration, one before the start: unregistered bytes of the
// same mapping) is not inside: the query fails, or names a range that does not start at the
// buffer (another allocation may follow it).
TEST_P(InteriorPointerTest, TheBytesJustOutsideAreNotInsideTheBuffer) {
  PAGELOCK_RULE("R94");
  std::vector<unsigned char*> outside = {buf_->ptr() + buf_->bytes()};
  if (buf_->registered()) outside.push_back(buf_->ptr() - 1);
  CUdeviceptr own_base = 0;
  size_t own_size = 0;
  ASSERT_CU_OK(d.cuMemGetAddressRange(&own_base, &own_size, Dptr(buf_->ptr())));
  for (unsigned char* q : outside) {
    SCOPED_TRACE(q < buf_->ptr() ? "one before the start" : "one past the end");
    CUdeviceptr base = 0;
    size_t size = 0;
    const CUresult r = d.cuMemGetAddressRange(&base, &size, Dptr(q));
    Observe(q < buf_->ptr() ? "before_start" : "past_end", DescribeCu(r));
    if (r != CUDA_SUCCESS) {
      // Of the reference's error list, the two that can mean "in no allocation".
      EXPECT_TRUE(r == CUDA_ERROR_NOT_FOUND || r == CUDA_ERROR_INVALID_VALUE) << DescribeCu(r);
      continue;
    }
    EXPECT_NE(base, own_base) << "a byte outside the buffer is reported inside it (range of " << size << " bytes)";
    if (buf_->registered()) {
      ADD_FAILURE() << "unregistered host memory next to a registration reported as an allocation at 0x" << std::hex
                    << base << std::dec << " of " << size << " bytes";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKind, InteriorPointerTest, ::testing::ValuesIn(Subjects()),
                         [](const ::testing::TestParamInfo<Subject>& info) { return SubjectName(info.param); });

}  // namespace
}  // namespace pagelock
