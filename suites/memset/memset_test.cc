// Memsets of every width and shape (issue 22 item 1; peer-gap J9): cudaMemset2D(Async),
// cudaMemset3D(Async), driver cuMemsetD16 / cuMemsetD32 and cuMemsetD2D8 / D2D16 / D2D32, into
// device memory and through the device alias of every kind of page-locked host memory. Every
// pitch is wider than the row, every box sits at an offset inside a larger object, and after each
// memset every byte of the object is compared with a model: the element's bytes inside the box,
// the guard byte outside it (row padding, rows above and below, other slices).
//
// What the CUDA 13.0 references promise, and what is checked:
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
// - cuMemsetD16 / cuMemsetD32: "Sets the memory range of N 16-bit (32-bit) values to the
//   specified value"; the pointer must be two (four) byte aligned.
// - cuMemsetD2D8/16/32: "Sets the 2D memory range of Width 8-bit (16-bit, 32-bit) values to the
//   specified value. Height specifies the number of rows to set, and dstPitch specifies the
//   number of bytes between each row"; pointer and pitch two (four) byte aligned for 16 (32) bits.
// The device alias of page-locked host memory is device memory to these calls (UVA; the streams
// suite already memsets through it with cudaMemset). Rule ids refer to suites/rules.tsv (R92, R93).
#include <cuda_runtime.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/resources.h"
#include "suites/hostkinds/host_kinds.h"

namespace pagelock {
namespace {

using kinds::Box;
using kinds::CountModelMismatches;
using kinds::HostBuffer;
using kinds::HostKind;
using kinds::HostKindName;
using kinds::Layout;
using kinds::ModelFill;
using kinds::Pos;

constexpr unsigned char kGuard = 0xA5;

enum class Api {
  kMemset2D, kMemset2DAsync, kMemset3D, kMemset3DAsync,
  kMemsetD16, kMemsetD32, kMemsetD2D8, kMemsetD2D16, kMemsetD2D32,
};

std::string ApiName(Api a) {
  switch (a) {
    case Api::kMemset2D: return "Memset2D";
    case Api::kMemset2DAsync: return "Memset2DAsync";
    case Api::kMemset3D: return "Memset3D";
    case Api::kMemset3DAsync: return "Memset3DAsync";
    case Api::kMemsetD16: return "MemsetD16";
    case Api::kMemsetD32: return "MemsetD32";
    case Api::kMemsetD2D8: return "MemsetD2D8";
    case Api::kMemsetD2D16: return "MemsetD2D16";
    case Api::kMemsetD2D32: return "MemsetD2D32";
  }
  return "Unknown";
}

size_t ElemSize(Api a) {
  switch (a) {
    case Api::kMemsetD16: case Api::kMemsetD2D16: return 2;
    case Api::kMemsetD32: case Api::kMemsetD2D32: return 4;
    default: return 1;
  }
}
bool IsDriver(Api a) { return a >= Api::kMemsetD16; }
bool IsLinear(Api a) { return a == Api::kMemsetD16 || a == Api::kMemsetD32; }
bool Is3D(Api a) { return a == Api::kMemset3D || a == Api::kMemset3DAsync; }

// Where the memset writes: device memory, or the device alias of a host-memory kind.
struct Target {
  bool device = true;
  HostKind kind = HostKind::kHostAllocDefault;
};
std::string TargetName(const Target& t) { return t.device ? "DeviceMemory" : "Mapped" + HostKindName(t.kind); }
std::vector<Target> Targets() {
  std::vector<Target> v = {Target{}};
  for (HostKind k : kinds::AllHostKinds()) v.push_back(Target{false, k});
  return v;
}

// Boxes in bytes (multiples of 4, so every element width fits): one 32-bit element, a small box,
// and rows of 4100 bytes that cross page boundaries; byte-wide memsets add odd widths.
std::vector<Box> Shapes(Api a) {
  std::vector<Box> v = {{4, 1, 1}, {24, 3, 2}, {4100, 3, 2}};
  if (ElemSize(a) == 1) {
    v.insert(v.begin(), Box{1, 1, 1});
    v.push_back(Box{13, 5, 2});
  }
  for (Box& b : v) {
    if (!Is3D(a)) b.d = 1;
    if (IsLinear(a)) b.h = 1;
  }
  return v;
}

// The object around a box: a pitch wider than the row (odd for byte-wide memsets, a multiple of
// the element otherwise), spare rows and slices, the box 4 bytes, 1 row and 1 slice in.
Layout LayoutFor(Api a, const Box& b) {
  const size_t pad = ElemSize(a) == 1 ? 27 : 20;
  return {b.w + pad, IsLinear(a) ? 1 : b.h + 2, Is3D(a) ? b.d + 2 : 1};
}
Pos PosFor(Api a) { return {4, IsLinear(a) ? 0u : 1u, Is3D(a) ? 1u : 0u}; }

// The element value from the case's generator, none of whose bytes is the guard.
uint32_t ElementValue(uint64_t random) {
  uint32_t v = static_cast<uint32_t>(random);
  unsigned char bytes[4];
  std::memcpy(bytes, &v, 4);
  for (unsigned char& c : bytes) c = kinds::ByteOtherThan(kGuard, c);
  std::memcpy(&v, bytes, 4);
  return v;
}

class MemsetTest : public DriverApiGpuTest, public ::testing::WithParamInterface<std::tuple<Api, Target>> {
 protected:
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!target().device && kinds::IsRegistered(target().kind))
      PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  }
  Api api() const { return std::get<0>(GetParam()); }
  const Target& target() const { return std::get<1>(GetParam()); }

  // Runs the memset under test on `p` (the box's first byte) and waits for it.
  cudaError_t RunRuntime(unsigned char* p, const Layout& l, const Box& b, uint32_t value, cudaStream_t s) {
    const int byte = static_cast<int>(value & 0xff);
    const cudaPitchedPtr pp = make_cudaPitchedPtr(p, l.pitch, b.w, l.rows);
    const cudaExtent e = make_cudaExtent(b.w, b.h, b.d);
    cudaError_t r = cudaSuccess;
    switch (api()) {
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
  // Fills the box of every shape, then compares every byte of the object with the model.
  void CheckEveryByte();
  CUresult RunDriver(unsigned char* p, const Layout& l, const Box& b, uint32_t value) {
    const auto dp = reinterpret_cast<CUdeviceptr>(p);
    const size_t elems = b.w / ElemSize(api());
    const auto v16 = static_cast<unsigned short>(value);
    switch (api()) {
      case Api::kMemsetD16: return d.cuMemsetD16(dp, v16, elems);  // copy-check: compared by the caller
      case Api::kMemsetD32: return d.cuMemsetD32(dp, value, elems);  // copy-check: compared by the caller
      case Api::kMemsetD2D8: return d.cuMemsetD2D8(dp, l.pitch, static_cast<unsigned char>(value), elems, b.h);  // copy-check: compared by the caller
      case Api::kMemsetD2D16: return d.cuMemsetD2D16(dp, l.pitch, v16, elems, b.h);  // copy-check: compared by the caller
      case Api::kMemsetD2D32: return d.cuMemsetD2D32(dp, l.pitch, value, elems, b.h);  // copy-check: compared by the caller
      default: return CUDA_ERROR_INVALID_VALUE;
    }
  }
};

void MemsetTest::CheckEveryByte() {
  const uint32_t value = ElementValue(CaseRng()());
  Observe("value", static_cast<unsigned long long>(value));
  OwnedStream stream(cudaStreamNonBlocking);
  ASSERT_CUDA_OK(stream.status());
  for (const Box& b : Shapes(api())) {
    SCOPED_TRACE(std::to_string(b.w) + " bytes x " + std::to_string(b.h) + " rows x " + std::to_string(b.d) + " slices");
    const Layout l = LayoutFor(api(), b);
    const Pos at = PosFor(api());
    std::unique_ptr<HostBuffer> host;
    std::unique_ptr<DeviceBuffer> device;
    unsigned char* base = nullptr;  // what the memset is given
    if (target().device) {
      device.reset(new DeviceBuffer(l.bytes()));
      ASSERT_CUDA_OK(device->status());
      base = device->get();
      ASSERT_CUDA_OK(cudaMemset(base, kGuard, l.bytes()));  // copy-check: compared with the model below
      // A legacy-stream memset or pageable copy of device memory can still be running when it
      // returns, and the non-blocking stream below does not wait for it.
      ASSERT_CUDA_OK(cudaDeviceSynchronize());
    } else {
      std::string why;
      host = HostBuffer::Make(target().kind, l.bytes(), &why);
      ASSERT_NE(host, nullptr) << why;
      base = host->dev();
      std::memset(host->host(), kGuard, l.bytes());
    }
    unsigned char* box = base + l.At(at.x, at.y, at.z);
    if (IsDriver(api())) {
      ASSERT_CU_OK(RunDriver(box, l, b, value));
      ASSERT_CUDA_OK(cudaDeviceSynchronize());
    } else {
      ASSERT_CUDA_OK(RunRuntime(box, l, b, value, stream.get()));
    }

    std::vector<unsigned char> want(l.bytes(), kGuard);
    ModelFill(&want, l, at, b, &value, ElemSize(api()));
    std::vector<unsigned char> got;
    const void* actual = host ? static_cast<const void*>(host->host()) : nullptr;
    if (!host) {
      got.resize(l.bytes());
      ASSERT_CUDA_OK(cudaMemcpy(got.data(), base, l.bytes(), cudaMemcpyDeviceToHost));  // copy-check: next line
      actual = got.data();
    }
    std::string where;
    EXPECT_EQ(CountModelMismatches(actual, want, l, &where), 0u)
        << "pitch " << l.pitch << ", first difference at " << where;
  }
}

// The runtime's byte-wide memsets, 2D and 3D, synchronous and on a stream.
class RuntimeMemsetTest : public MemsetTest {};
TEST_P(RuntimeMemsetTest, WritesTheValueIntoEveryByteOfTheBoxAndNothingElse) {
  PAGELOCK_RULE("R92");
  CheckEveryByte();
}

// The driver's element-wide memsets: 16- and 32-bit ranges, 8-, 16- and 32-bit 2D ranges.
class DriverMemsetTest : public MemsetTest {};
TEST_P(DriverMemsetTest, WritesTheElementIntoEveryByteOfTheBoxAndNothingElse) {
  PAGELOCK_RULE("R93");
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

INSTANTIATE_TEST_SUITE_P(EveryTarget, DriverMemsetTest,
                         ::testing::Combine(::testing::Values(Api::kMemsetD16, Api::kMemsetD32, Api::kMemsetD2D8,
                                                              Api::kMemsetD2D16, Api::kMemsetD2D32),
                                            ::testing::ValuesIn(Targets())),
                         MemsetName);

}  // namespace
}  // namespace pagelock
