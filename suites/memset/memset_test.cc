// Memsets of every width, shape and count (peer-gap J9): cudaMemset(Async),
// cudaMemset2D(Async), cudaMemset3D(Async), driver cuMemsetD8 / cuMemsetD16 / cuMemsetD32 and
// cuMemsetD2D8 / D2D16 / D2D32 with their Async forms on a non-blocking stream, into device
// memory and through the device alias of every kind of page-locked host memory. Every pitch is
// wider than the row, every box sits at an offset inside a larger object, and after each memset
// every byte of the object is compared with a model: the element's bytes inside the box, the
// guard byte outside it (row padding, rows above and below, other slices, the bytes just before
// the first element and after the last). Element counts (row widths in elements) 1, 2, 3, odd
// (37), even (64), one page and an element (every row crosses a page boundary) and 1 MiB and
// three elements; each count's value is drawn from the case seed, with bytes that differ from
// each other and from the guard, so an element written byte-swapped, truncated or shifted shows.
//
// What the CUDA 13.0 references promise, and what is checked:
// - cudaMemset(Async): "Fills the first count bytes of the memory area pointed to by devPtr with
//   the constant byte value value."
// - cudaMemset2D: "Sets to the specified value value a matrix (height rows of width bytes each)
//   pointed to by dstPtr. pitch is the width in bytes of the 2D array pointed to by dstPtr,
//   including any padding added to the end of each row."
// - cudaMemset3D: "Initializes each element of a 3D array to the specified value value. The
//   object to initialize is defined by pitchedDevPtr. The pitch field of pitchedDevPtr is the
//   width in memory in bytes of the 3D array pointed to by pitchedDevPtr, including any padding
//   added to the end of each row. The xsize field specifies the logical width of each row in
//   bytes, while the ysize field specifies the height of each 2D slice in rows." "The extents of
//   the initialized region are specified as a width in bytes, a height in rows, and a depth in
//   slices."
// - cuMemsetD8 / D16 / D32 (and Async): "Sets the memory range of N 8-bit (16-bit, 32-bit) values
//   to the specified value"; the pointer must be two (four) byte aligned.
// - cuMemsetD2D8/16/32 (and Async): "Sets the 2D memory range of Width 8-bit (16-bit, 32-bit)
//   values to the specified value. Height specifies the number of rows to set, and dstPitch
//   specifies the number of bytes between each row"; pointer and pitch two (four) byte aligned
//   for 16 (32) bits.
// Every driver memset takes a "Destination device pointer" (CUdeviceptr). The device alias of
// mapped page-locked host memory is one: cuMemHostGetDevicePointer / cudaHostGetDevicePointer
// "passes back the device pointer" of the mapped buffer, and with UVA it is a device address
// like any other (cuda-semantics R14, R51, R45); the runtime memsets take it the same way (the
// streams suite memsets through it with cudaMemset). So a memset through it is documented to
// write the host memory, which is what is asserted. Rule ids refer to suites/rules.tsv (R92, R93,
// R120-R122).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures/byte_model.h"
#include "fixtures/gpu_test.h"
#include "fixtures/host_kinds.h"
#include "fixtures/host_memory.h"
#include "fixtures/kind_buffer.h"
#include "fixtures/resources.h"

namespace pagelock {
namespace {

using pitched::Box;
using pitched::CountModelMismatches;
using pitched::Layout;
using pitched::ModelFill;
using pitched::Pos;

constexpr unsigned char kGuard = 0xA5;
// Bytes after the object that are filled with the guard and checked too.
constexpr size_t kTail = 64;

enum class Api {
  kMemset, kMemsetAsync,
  kMemset2D, kMemset2DAsync, kMemset3D, kMemset3DAsync,
  kMemsetD8, kMemsetD16, kMemsetD32, kMemsetD2D8, kMemsetD2D16, kMemsetD2D32,
  kMemsetD8Async, kMemsetD16Async, kMemsetD32Async, kMemsetD2D8Async, kMemsetD2D16Async, kMemsetD2D32Async,
};

std::string ApiName(Api a) {
  switch (a) {
    case Api::kMemset: return "Memset";
    case Api::kMemsetAsync: return "MemsetAsync";
    case Api::kMemset2D: return "Memset2D";
    case Api::kMemset2DAsync: return "Memset2DAsync";
    case Api::kMemset3D: return "Memset3D";
    case Api::kMemset3DAsync: return "Memset3DAsync";
    case Api::kMemsetD8: return "MemsetD8";
    case Api::kMemsetD16: return "MemsetD16";
    case Api::kMemsetD32: return "MemsetD32";
    case Api::kMemsetD2D8: return "MemsetD2D8";
    case Api::kMemsetD2D16: return "MemsetD2D16";
    case Api::kMemsetD2D32: return "MemsetD2D32";
    case Api::kMemsetD8Async: return "MemsetD8Async";
    case Api::kMemsetD16Async: return "MemsetD16Async";
    case Api::kMemsetD32Async: return "MemsetD32Async";
    case Api::kMemsetD2D8Async: return "MemsetD2D8Async";
    case Api::kMemsetD2D16Async: return "MemsetD2D16Async";
    case Api::kMemsetD2D32Async: return "MemsetD2D32Async";
  }
  return "Unknown";
}

size_t ElemSize(Api a) {
  switch (a) {
    case Api::kMemsetD16: case Api::kMemsetD2D16: case Api::kMemsetD16Async: case Api::kMemsetD2D16Async: return 2;
    case Api::kMemsetD32: case Api::kMemsetD2D32: case Api::kMemsetD32Async: case Api::kMemsetD2D32Async: return 4;
    default: return 1;
  }
}
bool IsDriver(Api a) { return a >= Api::kMemsetD8; }
bool IsLinear(Api a) {
  switch (a) {
    case Api::kMemset: case Api::kMemsetAsync: case Api::kMemsetD8: case Api::kMemsetD16: case Api::kMemsetD32:
    case Api::kMemsetD8Async: case Api::kMemsetD16Async: case Api::kMemsetD32Async: return true;
    default: return false;
  }
}
bool Is3D(Api a) { return a == Api::kMemset3D || a == Api::kMemset3DAsync; }

// Where the memset writes: device memory, or the device alias of a host-memory kind.
struct Target {
  bool device = true;
  HostKind kind = HostKind::kHostAllocDefault;
};
std::string TargetName(const Target& t) { return t.device ? "DeviceMemory" : "Mapped" + HostKindName(t.kind); }
std::vector<Target> Targets() {
  std::vector<Target> v = {Target{}};
  for (HostKind k : AllocatedAndRegisteredKinds()) v.push_back(Target{false, k});
  return v;
}

// One memset of the case: its box in bytes, and whether it is the big one (> 1 MiB), whose
// object has no spare rows or slices (its pitch padding and the bytes around it are the guards;
// the small boxes check the rows and slices around them).
struct Shape {
  Box box;
  size_t count = 0;  // elements per row
  bool big = false;
};

// Counts in elements per row: 1, 2, 3, odd, even, a page and an element (so that every row
// crosses a page boundary), and 1 MiB and 3 elements. Rows (2D) and slices (3D): one for the
// single element, else 3 rows and 2 slices; the big box has 2 rows (2D) or 2 one-row slices (3D).
std::vector<Shape> Shapes(Api a) {
  const size_t e = ElemSize(a);
  std::vector<Shape> v;
  for (size_t n : {size_t{1}, size_t{2}, size_t{3}, size_t{37}, size_t{64}, PageSize() / e + 1}) {
    Shape s;
    s.count = n;
    s.box = n == 1 ? Box{e, 1, 1} : Box{n * e, 3, 2};
    v.push_back(s);
  }
  Shape big;
  big.count = (size_t{1} << 20) / e + 3;
  big.box = Is3D(a) ? Box{big.count * e, 1, 2} : Box{big.count * e, 2, 1};
  big.big = true;
  v.push_back(big);
  for (Shape& s : v) {
    if (!Is3D(a)) s.box.d = 1;
    if (IsLinear(a)) s.box.h = 1;
  }
  return v;
}

// The object around a box: a pitch wider than the row (odd for byte-wide memsets, a multiple of
// the element otherwise), spare rows and slices for the small boxes, the box 4 bytes, 1 row and
// 1 slice in (the big box: 4 bytes in, no spare rows or slices).
Layout LayoutFor(Api a, const Shape& s) {
  const size_t pad = ElemSize(a) == 1 ? 27 : 20;
  const Box& b = s.box;
  if (s.big) return {b.w + pad, b.h, Is3D(a) ? b.d : 1};
  return {b.w + pad, IsLinear(a) ? 1 : b.h + 2, Is3D(a) ? b.d + 2 : 1};
}
Pos PosFor(Api a, const Shape& s) {
  if (s.big) return {4, 0, 0};
  return {4, IsLinear(a) ? 0u : 1u, Is3D(a) ? 1u : 0u};
}

// ModelFill's result for the big box, by whole rows: one row of the element's bytes, doubled by
// memcpy, then copied into every row (ModelFill computes each byte's offset, about 3 ms per MiB,
// which the small boxes can afford and 216 cases of a 2 MiB box cannot).
void ModelFillRows(std::vector<unsigned char>* dst, const Layout& l, Pos p, const Box& b, const void* elem,
                   size_t elem_size) {
  std::vector<unsigned char> row(b.w);
  std::memcpy(row.data(), elem, std::min(elem_size, b.w));
  for (size_t k = elem_size; k < b.w; k *= 2) std::memcpy(row.data() + k, row.data(), std::min(k, b.w - k));
  for (size_t z = 0; z < b.d; ++z)
    for (size_t y = 0; y < b.h; ++y) std::memcpy(dst->data() + l.At(p.x, p.y + y, p.z + z), row.data(), b.w);
}

class MemsetTest : public DriverApiGpuTest, public ::testing::WithParamInterface<std::tuple<Api, Target>> {
 protected:
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!target().device && IsRegistered(target().kind))
      PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  }
  Api api() const { return std::get<0>(GetParam()); }
  const Target& target() const { return std::get<1>(GetParam()); }

  // Runs the runtime memset under test on `p` (the box's first byte) and waits for it.
  cudaError_t RunRuntime(unsigned char* p, const Layout& l, const Box& b, uint32_t value, cudaStream_t s) {
    const int byte = static_cast<int>(value & 0xff);
    const cudaPitchedPtr pp = make_cudaPitchedPtr(p, l.pitch, b.w, l.rows);
    const cudaExtent e = make_cudaExtent(b.w, b.h, b.d);
    cudaError_t r = cudaSuccess;
    switch (api()) {
      case Api::kMemset: r = cudaMemset(p, byte, b.w); break;  // copy-check: compared by the caller
      case Api::kMemsetAsync: r = cudaMemsetAsync(p, byte, b.w, s); break;  // copy-check: compared by the caller
      case Api::kMemset2D: r = cudaMemset2D(p, l.pitch, byte, b.w, b.h); break;  // copy-check: compared by the caller
      case Api::kMemset2DAsync: r = cudaMemset2DAsync(p, l.pitch, byte, b.w, b.h, s); break;  // copy-check: compared by the caller
      case Api::kMemset3D: r = cudaMemset3D(pp, byte, e); break;  // copy-check: compared by the caller
      case Api::kMemset3DAsync: r = cudaMemset3DAsync(pp, byte, e, s); break;  // copy-check: compared by the caller
      default: return cudaErrorInvalidValue;
    }
    if (r != cudaSuccess) return r;
    r = cudaStreamSynchronize(s);
    return r != cudaSuccess ? r : cudaDeviceSynchronize();
  }
  // Runs the driver memset under test; the Async forms on `s` (a non-blocking stream).
  CUresult RunDriver(unsigned char* p, const Layout& l, const Box& b, uint32_t value, cudaStream_t s) {
    const auto dp = reinterpret_cast<CUdeviceptr>(p);
    const size_t elems = b.w / ElemSize(api());
    const auto v8 = static_cast<unsigned char>(value);
    const auto v16 = static_cast<unsigned short>(value);
    const auto cs = static_cast<CUstream>(s);
    switch (api()) {
      case Api::kMemsetD8: return d.cuMemsetD8(dp, v8, elems);  // copy-check: compared by the caller
      case Api::kMemsetD16: return d.cuMemsetD16(dp, v16, elems);  // copy-check: compared by the caller
      case Api::kMemsetD32: return d.cuMemsetD32(dp, value, elems);  // copy-check: compared by the caller
      case Api::kMemsetD2D8: return d.cuMemsetD2D8(dp, l.pitch, v8, elems, b.h);  // copy-check: compared by the caller
      case Api::kMemsetD2D16: return d.cuMemsetD2D16(dp, l.pitch, v16, elems, b.h);  // copy-check: compared by the caller
      case Api::kMemsetD2D32: return d.cuMemsetD2D32(dp, l.pitch, value, elems, b.h);  // copy-check: compared by the caller
      case Api::kMemsetD8Async: return d.cuMemsetD8Async(dp, v8, elems, cs);  // copy-check: compared by the caller
      case Api::kMemsetD16Async: return d.cuMemsetD16Async(dp, v16, elems, cs);  // copy-check: compared by the caller
      case Api::kMemsetD32Async: return d.cuMemsetD32Async(dp, value, elems, cs);  // copy-check: compared by the caller
      case Api::kMemsetD2D8Async: return d.cuMemsetD2D8Async(dp, l.pitch, v8, elems, b.h, cs);  // copy-check: compared by the caller
      case Api::kMemsetD2D16Async: return d.cuMemsetD2D16Async(dp, l.pitch, v16, elems, b.h, cs);  // copy-check: compared by the caller
      case Api::kMemsetD2D32Async: return d.cuMemsetD2D32Async(dp, l.pitch, value, elems, b.h, cs);  // copy-check: compared by the caller
      default: return CUDA_ERROR_INVALID_VALUE;
    }
  }
  // Fills the box of every shape, then compares every byte of the object with the model.
  void CheckEveryByte();
};

void MemsetTest::CheckEveryByte() {
  OwnedStream stream(cudaStreamNonBlocking);
  ASSERT_CUDA_OK(stream.status());
  const std::vector<Shape> shapes = Shapes(api());
  size_t capacity = 0;
  for (const Shape& s : shapes) capacity = std::max(capacity, LayoutFor(api(), s).bytes() + kTail);
  // One object per case, big enough for every shape; each shape starts from a fresh guard fill.
  std::unique_ptr<KindBuffer> host;
  DeviceBuffer device;
  unsigned char* base = nullptr;  // what the memset is given
  if (target().device) {
    device = DeviceBuffer(capacity);
    ASSERT_CUDA_OK(device.status());
    base = device.get();
  } else {
    std::string why;
    host = KindBuffer::Make(target().kind, capacity, &why);
    ASSERT_NE(host, nullptr) << why;
    base = host->dev();
  }
  std::vector<unsigned char> want, got;
  for (const Shape& s : shapes) {
    const Box& b = s.box;
    SCOPED_TRACE(std::to_string(s.count) + " elements (" + std::to_string(b.w) + " bytes) x " + std::to_string(b.h) +
                 " rows x " + std::to_string(b.d) + " slices");
    const uint32_t value = pitched::ElementValue(CaseRng()(), kGuard);
    const Layout l = LayoutFor(api(), s);
    const Pos at = PosFor(api(), s);
    const size_t n = l.bytes() + kTail;
    if (host) {
      std::memset(host->host(), kGuard, n);
    } else {
      ASSERT_CUDA_OK(cudaMemset(base, kGuard, n));  // copy-check: compared with the model below
      // A legacy-stream memset of device memory can still be running when it returns, and the
      // non-blocking stream below does not wait for it.
      ASSERT_CUDA_OK(cudaDeviceSynchronize());
    }
    unsigned char* box = base + l.At(at.x, at.y, at.z);
    if (IsDriver(api())) {
      ASSERT_CU_OK(RunDriver(box, l, b, value, stream.get())) << "value 0x" << std::hex << value;
      ASSERT_CUDA_OK(cudaStreamSynchronize(stream.get()));
      ASSERT_CUDA_OK(cudaDeviceSynchronize());
    } else {
      ASSERT_CUDA_OK(RunRuntime(box, l, b, value, stream.get())) << "value 0x" << std::hex << value;
    }

    want.assign(n, kGuard);
    if (s.big) {
      ModelFillRows(&want, l, at, b, &value, ElemSize(api()));
    } else {
      ModelFill(&want, l, at, b, &value, ElemSize(api()));
    }
    // The host reads mapped memory where it is cached; device memory, and write-combined memory
    // beyond 64 KiB (uncached host reads, R16), are read back by a copy whose bytes are compared.
    const void* actual = host ? static_cast<const void*>(host->host()) : nullptr;
    if (!host || (IsWriteCombined(target().kind) && n > (size_t{64} << 10))) {
      got.assign(n, 0);
      ASSERT_CUDA_OK(cudaMemcpy(got.data(), base, n, cudaMemcpyDefault));  // copy-check: next lines
      actual = got.data();
    }
    size_t bad = 0;
    std::string where;
    if (std::memcmp(actual, want.data(), n) != 0) bad = CountModelMismatches(actual, want, l, &where);
    EXPECT_EQ(bad, 0u) << "value 0x" << std::hex << value << std::dec << ", pitch " << l.pitch
                       << ", first difference at " << where;
  }
}

// The runtime's byte-wide memsets, 2D and 3D, synchronous and on a stream. A driver that writes
// a row too many or too few, ignores the pitch, or stops short of the last byte fails this.
class RuntimeMemsetTest : public MemsetTest {};
TEST_P(RuntimeMemsetTest, WritesTheValueIntoEveryByteOfTheBoxAndNothingElse) {
  PAGELOCK_RULE("R92,R122");
  CheckEveryByte();
}

// cudaMemset and cudaMemsetAsync of 1 byte to 1 MiB + 3. A driver that rounds the count to a word
// (writing the bytes after the last, or leaving the last 1-3 unset) fails this.
class RuntimeLinearMemsetTest : public MemsetTest {};
TEST_P(RuntimeLinearMemsetTest, WritesTheValueIntoExactlyCountBytes) {
  PAGELOCK_RULE("R120,R122");
  CheckEveryByte();
}

// The driver's element-wide memsets: 8-, 16- and 32-bit ranges, 8-, 16- and 32-bit 2D ranges. A
// driver that takes N as bytes, writes the element's bytes in the wrong order, or a row past the
// height fails this.
class DriverMemsetTest : public MemsetTest {};
TEST_P(DriverMemsetTest, WritesTheElementIntoEveryByteOfTheBoxAndNothingElse) {
  PAGELOCK_RULE("R93,R120,R122");
  CheckEveryByte();
}

// The driver's Async memsets on a non-blocking stream: once the stream is synchronised they leave
// what their synchronous forms leave. A driver whose Async form drops the tail, ignores the
// pitch, or is not ordered in the stream it is given fails this.
class DriverAsyncMemsetTest : public MemsetTest {};
TEST_P(DriverAsyncMemsetTest, WritesTheElementIntoEveryByteOfTheBoxOnceTheStreamIsSynchronised) {
  PAGELOCK_RULE("R121,R122");
  CheckEveryByte();
}

std::string MemsetName(const ::testing::TestParamInfo<std::tuple<Api, Target>>& info) {
  return ApiName(std::get<0>(info.param)) + "_Into" + TargetName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(EveryTarget, RuntimeMemsetTest,
                         ::testing::Combine(::testing::Values(Api::kMemset2D, Api::kMemset2DAsync, Api::kMemset3D,
                                                              Api::kMemset3DAsync),
                                            ::testing::ValuesIn(Targets())),
                         MemsetName);

INSTANTIATE_TEST_SUITE_P(EveryTarget, RuntimeLinearMemsetTest,
                         ::testing::Combine(::testing::Values(Api::kMemset, Api::kMemsetAsync),
                                            ::testing::ValuesIn(Targets())),
                         MemsetName);

INSTANTIATE_TEST_SUITE_P(EveryTarget, DriverMemsetTest,
                         ::testing::Combine(::testing::Values(Api::kMemsetD8, Api::kMemsetD16, Api::kMemsetD32,
                                                              Api::kMemsetD2D8, Api::kMemsetD2D16, Api::kMemsetD2D32),
                                            ::testing::ValuesIn(Targets())),
                         MemsetName);

INSTANTIATE_TEST_SUITE_P(EveryTarget, DriverAsyncMemsetTest,
                         ::testing::Combine(::testing::Values(Api::kMemsetD8Async, Api::kMemsetD16Async,
                                                              Api::kMemsetD32Async, Api::kMemsetD2D8Async,
                                                              Api::kMemsetD2D16Async, Api::kMemsetD2D32Async),
                                            ::testing::ValuesIn(Targets())),
                         MemsetName);

}  // namespace
}  // namespace pagelock
