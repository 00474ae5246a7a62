// Properties of registration and copies (RapidCheck, public API): random sub-ranges of random
// host-memory kinds registered with random flags round-trip through the device pointer, and
// random copy sizes, offsets, directions and stream kinds deliver exact bytes and touch nothing
// else. A failure prints the shrunk counterexample (kind, flags, size, window, ...).
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <memory>
#include <vector>

#include "fixtures/generators.h"
#include "fixtures/gpu_property.h"
#include "fixtures/resources.h"
#include "kernels/access_kernels.h"
#include "kernels/pattern.h"

namespace pagelock {
namespace {

class PinnedProperty : public GpuProperty {};

size_t DeviceMismatches(const void* dev, size_t n, uint32_t seed) {
  void* c = nullptr;
  RC_ASSERT(cudaMalloc(&c, sizeof(unsigned long long)) == cudaSuccess);
  const DeviceBuffer counter = DeviceBuffer::Adopt(c);
  auto* count = static_cast<unsigned long long*>(c);
  RC_ASSERT(cudaMemset(count, 0, sizeof *count) == cudaSuccess);
  RC_ASSERT(LaunchCountPatternMismatches(dev, n, seed, count) == cudaSuccess);
  unsigned long long bad = ~0ull;
  // copy-check: the mismatch count read back is the check of the device bytes
  RC_ASSERT(cudaMemcpy(&bad, count, sizeof bad, cudaMemcpyDeviceToHost) == cudaSuccess);
  return static_cast<size_t>(bad);
}

RC_GTEST_FIXTURE_PROP(PinnedProperty, RegisteredSubRangesRoundTripThroughTheDevicePointer,
                      (RegistrableKind kind, HostRegisterFlags flags, uint32_t seed)) {
  if (!ready() || !Require(RequireAttr(cudaDevAttrHostRegisterSupported, 1))) return;
  PAGELOCK_RULE("R26,R28,R29,R53,R77");
  const size_t want = *gen::BoundarySize(size_t{1} << 20);
  auto region = HostRegion::Make(kind.kind, want);
  RC_ASSERT(static_cast<bool>(region->data() != nullptr));
  auto* base = static_cast<unsigned char*>(region->data());
  const Window w = *gen::WindowIn(region->size());
  RC_CLASSIFY(w.length < PageSize(), "sub-page");
  RC_CLASSIFY(reinterpret_cast<uintptr_t>(base + w.offset) % PageSize() != 0, "unaligned");
  const uint32_t guard = seed ^ 0x3c3c3c3cu;
  HostFillPattern(base, region->size(), guard);

  RC_ASSERT(cudaHostRegister(base + w.offset, w.length, flags.value) == cudaSuccess);
  HostRegistration registration = HostRegistration::Adopt(base + w.offset);
  void* dev = nullptr;
  RC_ASSERT(cudaHostGetDevicePointer(&dev, base + w.offset, 0) == cudaSuccess);
  HostFillPattern(base + w.offset, w.length, seed);
  RC_ASSERT(DeviceMismatches(dev, w.length, seed) == 0u);
  RC_ASSERT(LaunchFillPattern(dev, w.length, ~seed) == cudaSuccess);
  RC_ASSERT(cudaDeviceSynchronize() == cudaSuccess);
  RC_ASSERT(HostCountPatternMismatches(base + w.offset, w.length, ~seed) == 0u);
  size_t outside = HostCountPatternMismatches(base, w.offset, guard);
  for (size_t i = w.offset + w.length; i < region->size(); ++i) outside += base[i] != PatternByte(i, guard);
  RC_ASSERT(outside == 0u);
  RC_ASSERT(cudaHostUnregister(registration.release()) == cudaSuccess);
  // Unregistered again: the pointer has no device alias any more (R33, R52), unless pageable
  // memory is device-accessible anyway (attr 88, HMM/ATS).
  if (RequireNoPageableMemoryAccess().met) {  // attr 88 = 0 on every visible device
    void* after = nullptr;
    RC_ASSERT(cudaHostGetDevicePointer(&after, base + w.offset, 0) == cudaErrorInvalidValue);
    (void)cudaGetLastError();
  }
}

cudaStream_t MakeStream(StreamKind k, cudaStream_t* owned) {
  *owned = nullptr;
  switch (k) {
    case StreamKind::kLegacyDefault: return cudaStreamLegacy;
    case StreamKind::kPerThreadDefault: return cudaStreamPerThread;
    case StreamKind::kBlocking: RC_ASSERT(cudaStreamCreate(owned) == cudaSuccess); return *owned;
    default: RC_ASSERT(cudaStreamCreateWithFlags(owned, cudaStreamNonBlocking) == cudaSuccess); return *owned;
  }
}

// A pinned source and destination (each with 64 guard bytes either side), one async copy on the
// chosen stream, then every byte of the destination checked: the window holds the source's
// bytes, the guards are untouched.
RC_GTEST_FIXTURE_PROP(PinnedProperty, CopiesDeliverExactBytesAndNothingElse,
                      (ByteSize size, CopyDirection dir, StreamKind stream_kind, HostAllocFlags flags,
                       uint32_t seed)) {
  if (!ready()) return;
  PAGELOCK_RULE("R75,R76,R77");
  const size_t n = size.bytes;
  const size_t src_off = *rc::gen::inRange<size_t>(0, 64), dst_off = *rc::gen::inRange<size_t>(0, 64);
  const size_t total = n + 128;
  RC_CLASSIFY(n % PageSize() == 0, "page multiple");
  RC_CLASSIFY(src_off % 8 != 0 || dst_off % 8 != 0, "unaligned");

  void* raw = nullptr;
  RC_ASSERT(cudaHostAlloc(&raw, total, flags.value) == cudaSuccess);
  const PinnedBuffer host = PinnedBuffer::Adopt(raw);
  RC_ASSERT(cudaHostAlloc(&raw, total, cudaHostAllocDefault) == cudaSuccess);
  const PinnedBuffer host2 = PinnedBuffer::Adopt(raw);
  RC_ASSERT(cudaMalloc(&raw, total) == cudaSuccess);
  const DeviceBuffer device = DeviceBuffer::Adopt(raw);
  auto* h = static_cast<unsigned char*>(host.get());
  auto* h2 = static_cast<unsigned char*>(host2.get());
  auto* d = static_cast<unsigned char*>(device.get());
  const uint32_t guard = seed ^ 0x77777777u;

  // Source filled with the pattern, destination with the guard pattern.
  unsigned char *src = nullptr, *dst = nullptr;
  cudaMemcpyKind kind = cudaMemcpyDefault;
  bool dst_on_device = false;
  switch (dir) {
    case CopyDirection::kHostToDevice:
    case CopyDirection::kDefaultInferred:
      HostFillPattern(h, total, seed);
      RC_ASSERT(LaunchFillPattern(d, total, guard) == cudaSuccess);
      src = h;
      dst = d;
      dst_on_device = true;
      kind = dir == CopyDirection::kHostToDevice ? cudaMemcpyHostToDevice : cudaMemcpyDefault;
      break;
    case CopyDirection::kDeviceToHost:
      RC_ASSERT(LaunchFillPattern(d, total, seed) == cudaSuccess);
      HostFillPattern(h, total, guard);
      src = d;
      dst = h;
      kind = cudaMemcpyDeviceToHost;
      break;
    case CopyDirection::kHostToHost:
      HostFillPattern(h2, total, seed);
      HostFillPattern(h, total, guard);
      src = h2;
      dst = h;
      kind = cudaMemcpyHostToHost;
      break;
  }
  RC_ASSERT(cudaDeviceSynchronize() == cudaSuccess);
  cudaStream_t owned = nullptr;
  const cudaStream_t s = MakeStream(stream_kind, &owned);
  // copy-check: every destination byte and its guards are compared below
  RC_ASSERT(cudaMemcpyAsync(dst + dst_off, src + src_off, n, kind, s) == cudaSuccess);
  RC_ASSERT(cudaStreamSynchronize(s) == cudaSuccess);
  if (owned) RC_ASSERT(cudaStreamDestroy(owned) == cudaSuccess);

  std::vector<unsigned char> got(total);
  if (dst_on_device) {
    // copy-check: every byte copied back is compared below
    RC_ASSERT(cudaMemcpy(got.data(), d, total, cudaMemcpyDeviceToHost) == cudaSuccess);
  } else {
    std::copy(dst, dst + total, got.begin());
  }
  size_t wrong = 0, clobbered = 0;
  for (size_t i = 0; i < total; ++i) {
    const bool inside = i >= dst_off && i < dst_off + n;
    const unsigned char want = inside ? PatternByte(i - dst_off + src_off, seed) : PatternByte(i, guard);
    (inside ? wrong : clobbered) += got[i] != want;
  }
  RC_ASSERT(wrong == 0u);
  RC_ASSERT(clobbered == 0u);
}

}  // namespace
}  // namespace pagelock
