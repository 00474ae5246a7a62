#include "suites/hostkinds/host_kinds.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "fixtures/cuda_check.h"
#include "kernels/pattern.h"

namespace pagelock {
namespace kinds {

std::string HostKindName(HostKind k) {
  switch (k) {
    case HostKind::kHostAllocDefault: return "HostAllocDefault";
    case HostKind::kHostAllocPortable: return "HostAllocPortable";
    case HostKind::kHostAllocMapped: return "HostAllocMapped";
    case HostKind::kHostAllocPortableMapped: return "HostAllocPortableMapped";
    case HostKind::kHostAllocWriteCombined: return "HostAllocWriteCombined";
    case HostKind::kHostAllocPortableWriteCombined: return "HostAllocPortableWriteCombined";
    case HostKind::kHostAllocMappedWriteCombined: return "HostAllocMappedWriteCombined";
    case HostKind::kHostAllocAllFlags: return "HostAllocPortableMappedWriteCombined";
    case HostKind::kRegisteredMalloc: return "RegisteredMalloc";
    case HostKind::kRegisteredMmap: return "RegisteredMmap";
    case HostKind::kRegisteredMemfd: return "RegisteredMemfd";
  }
  return "Unknown";
}

bool IsRegistered(HostKind k) {
  return k == HostKind::kRegisteredMalloc || k == HostKind::kRegisteredMmap || k == HostKind::kRegisteredMemfd;
}

// The cudaHostAlloc flags of an allocated kind: the enum order is the flag value (0..7).
static unsigned AllocFlags(HostKind k) { return static_cast<unsigned>(k); }

bool IsWriteCombined(HostKind k) { return !IsRegistered(k) && (AllocFlags(k) & cudaHostAllocWriteCombined) != 0; }

const std::vector<HostKind>& AllHostKinds() {
  static const std::vector<HostKind> v = {
      HostKind::kHostAllocDefault,        HostKind::kHostAllocPortable,
      HostKind::kHostAllocMapped,         HostKind::kHostAllocPortableMapped,
      HostKind::kHostAllocWriteCombined,  HostKind::kHostAllocPortableWriteCombined,
      HostKind::kHostAllocMappedWriteCombined, HostKind::kHostAllocAllFlags,
      HostKind::kRegisteredMalloc,        HostKind::kRegisteredMmap,
      HostKind::kRegisteredMemfd};
  return v;
}

std::unique_ptr<HostBuffer> HostBuffer::Make(HostKind kind, size_t bytes, std::string* why) {
  std::unique_ptr<HostBuffer> b(new HostBuffer());
  b->kind_ = kind;
  b->size_ = bytes;
  cudaError_t e = cudaSuccess;
  if (!IsRegistered(kind)) {
    b->pinned_ = PinnedBuffer(bytes, AllocFlags(kind));
    if ((e = b->pinned_.status()) != cudaSuccess) {
      *why = "cudaHostAlloc: " + ErrName(e);
      (void)cudaGetLastError();  // the reason is reported; the slot must not fail the case twice
      return nullptr;
    }
  } else {
    const HostMemoryKind hk = kind == HostKind::kRegisteredMalloc ? HostMemoryKind::kHeapPageAligned
                              : kind == HostKind::kRegisteredMmap ? HostMemoryKind::kAnonymousMmap
                                                                  : HostMemoryKind::kShmemFileMmap;
    b->registered_ = HostRegistration::Make(hk, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable, why);
    if (!b->registered_.region()) return nullptr;  // *why names the host's reason
    if ((e = b->registered_.status()) != cudaSuccess) {
      *why = "cudaHostRegister: " + ErrName(e);
      (void)cudaGetLastError();
      return nullptr;
    }
  }
  void* d = nullptr;
  e = cudaHostGetDevicePointer(&d, b->host(), 0);
  if (e != cudaSuccess) {
    *why = "cudaHostGetDevicePointer: " + ErrName(e);
    (void)cudaGetLastError();
    return nullptr;  // the owners release the memory
  }
  b->dev_ = static_cast<unsigned char*>(d);
  return b;
}

cudaError_t HostBuffer::Free() {
  const cudaError_t e = IsRegistered(kind_) ? registered_.Free() : pinned_.Free();
  registered_ = HostRegistration();  // the region goes with the registration
  return e;
}

std::vector<unsigned char> PatternBytes(size_t n, uint32_t seed) {
  std::vector<unsigned char> v(n);
  HostFillPattern(v.data(), n, seed);
  return v;
}

void ModelCopy(std::vector<unsigned char>* dst, const Layout& dl, Pos dp, const std::vector<unsigned char>& src,
               const Layout& sl, Pos sp, Box b) {
  for (size_t z = 0; z < b.d; ++z)
    for (size_t y = 0; y < b.h; ++y)
      for (size_t x = 0; x < b.w; ++x)
        (*dst)[dl.At(dp.x + x, dp.y + y, dp.z + z)] = src[sl.At(sp.x + x, sp.y + y, sp.z + z)];
}

void ModelFill(std::vector<unsigned char>* dst, const Layout& dl, Pos dp, Box b, const void* elem, size_t elem_size) {
  const auto* e = static_cast<const unsigned char*>(elem);
  for (size_t z = 0; z < b.d; ++z)
    for (size_t y = 0; y < b.h; ++y)
      for (size_t x = 0; x < b.w; ++x) (*dst)[dl.At(dp.x + x, dp.y + y, dp.z + z)] = e[x % elem_size];
}

size_t CountModelMismatches(const void* actual, const std::vector<unsigned char>& expected, const Layout& l,
                            std::string* where) {
  const auto* a = static_cast<const volatile unsigned char*>(actual);
  size_t bad = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char got = a[i];
    if (got == expected[i]) continue;
    if (bad++ == 0 && where) {
      const size_t slice = l.pitch * l.rows;
      char text[160];
      std::snprintf(text, sizeof text, "offset %zu (slice %zu, row %zu, byte %zu): got 0x%02x, want 0x%02x", i,
                    i / slice, (i % slice) / l.pitch, i % l.pitch, got, expected[i]);
      *where = text;
    }
  }
  return bad;
}

unsigned char ByteOtherThan(unsigned char avoid, uint64_t random) {
  const auto b = static_cast<unsigned char>(random);
  return b == avoid ? static_cast<unsigned char>(b ^ 0x5a) : b;
}

uint32_t ElementValue(uint64_t random, unsigned char avoid) {
  unsigned char bytes[4];
  for (int i = 0; i < 4; ++i) {
    unsigned char b = static_cast<unsigned char>(random >> (8 * i));
    while (b == avoid || std::find(bytes, bytes + i, b) != bytes + i) ++b;
    bytes[i] = b;
  }
  uint32_t v;
  std::memcpy(&v, bytes, 4);
  return v;
}

}  // namespace kinds
}  // namespace pagelock
