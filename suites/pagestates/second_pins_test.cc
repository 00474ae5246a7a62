// Memory CUDA pinned, pinned a second time by another kernel subsystem (V06): O_DIRECT reads and
// writes (the block layer pins the user buffer for the transfer: pin_user_pages.rst "CASE 1:
// Direct IO (DIO) ... FOLL_PIN") and io_uring fixed buffers (IORING_REGISTER_BUFFERS pins them
// FOLL_WRITE | FOLL_PIN | FOLL_LONGTERM until unregistered: "CASE 2 ... FOLL_PIN |
// FOLL_LONGTERM"), into cudaHostAlloc'd memory of each flag and into cudaHostRegister'ed
// anonymous memory. "Multiple threads and call sites are free to pin the same struct pages"
// (Documentation/core-api/pin_user_pages.rst): on registered anonymous memory both pins must
// work. cudaHostAlloc memory is the driver's own mapping (a device-file VMA): the kernel may
// refuse to pin it -- O_DIRECT with EFAULT (read(2)/write(2): "buf is outside your accessible
// address space"), io_uring with EFAULT or EOPNOTSUPP (io_uring_register(2): the buffers
// "point to file-backed memory") -- and which one came is recorded. Wherever both pins work the
// bytes are exact through every path (device -> buffer -> file -> buffer -> device), releasing
// one pin leaves the other working, and releasing both, in either order, returns the pin
// balance. Faults that fail these: a driver whose VMA makes anonymous registered pages
// unpinnable (VM_IO/VM_PFNMAP set on the user's VMA), one that pins with FOLL_LONGTERM and
// drops the pages' other references on unregister (the io_uring pin then reads freed pages),
// one whose unregister releases pins it did not take. Rule ids refer to suites/rules.tsv.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures/host_kinds.h"
#include "fixtures/io_uring.h"
#include "fixtures/mapping.h"
#include "fixtures/page_sources.h"
#include "fixtures/resources.h"
#include "kernels/pattern.h"
#include "suites/pagestates/pagestates.h"

namespace pagelock {
namespace pagestates {
namespace {

constexpr size_t kBytes = size_t{1} << 20;

// The kinds: cudaHostAlloc Default, Mapped and Mapped|WriteCombined, and an anonymous mmap
// registered Mapped. Their names in this family's case ids, which predate the kit's names:
std::string KindName(HostKind k) {
  static const Spelling<HostKind> kCaseName(HostKindName, {{HostKind::kHostAllocDefault, "hostalloc_default"},
                                                           {HostKind::kHostAllocMapped, "hostalloc_mapped"},
                                                           {HostKind::kHostAllocMappedWriteCombined, "hostalloc_write_combined"},
                                                           {HostKind::kRegisteredMmap, "registered"}});
  return kCaseName(k);
}

// The CUDA-pinned buffer of one kind; Release() ends CUDA's pin (cudaFreeHost: the memory goes;
// cudaHostUnregister: the anonymous mapping stays until the end of the case).
class CudaPinned {
 public:
  explicit CudaPinned(HostKind k) : kind_(k) {}
  ~CudaPinned() { Release(); }  // then the mapping goes (map_ is declared first)
  cudaError_t Make() {
    if (IsRegistered(kind_)) {
      map_ = Mapping(kBytes);
      if (!map_) return cudaErrorMemoryAllocation;
      std::memset(map_.data(), 0, kBytes);
      const cudaError_t e = cudaHostRegister(map_.data(), kBytes, cudaHostRegisterMapped);
      if (e == cudaSuccess) reg_ = HostRegistration::Adopt(map_.data(), kBytes);
      return e;
    }
    void* p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, kBytes, HostAllocFlagsOf(kind_));
    if (e == cudaSuccess) alloc_ = PinnedBuffer::Adopt(p, kBytes);
    return e;
  }
  unsigned char* host() const { return map_ ? map_.data() : alloc_.host(); }
  // Ends CUDA's pin; the result of the call.
  cudaError_t Release() {
    return map_ ? reg_.Free() : alloc_.Free();
  }
  // After Release(), cudaFreeHost'd memory is gone; registered memory is still the process's.
  bool MemoryOutlivesRelease() const { return static_cast<bool>(map_); }

 private:
  HostKind kind_;
  Mapping map_;
  HostRegistration reg_;
  PinnedBuffer alloc_;
};

// A page-aligned plain buffer for reading a file back (owned).
struct Aligned {
  unsigned char* p = nullptr;
  explicit Aligned(size_t n) {
    void* m = nullptr;
    if (posix_memalign(&m, 4096, n) == 0) p = static_cast<unsigned char*>(m);
  }
  ~Aligned() { std::free(p); }
};

std::string ErrnoName(int e) {
  switch (e) {
    case EFAULT: return "EFAULT";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case EPERM: return "EPERM";
    case EIO: return "EIO";
    default: return "errno " + std::to_string(e);
  }
}

class SecondPinTest : public PageStatesTest, public ::testing::WithParamInterface<HostKind> {
 protected:
  // The device writes the pattern of `seed` into the buffer through its alias.
  void DeviceWrites(unsigned char* host, uint32_t seed) {
    cudaError_t e = cudaSuccess;
    void* dev = DeviceAlias(host, &e);
    ASSERT_CUDA_OK(e);
    ASSERT_CUDA_OK(DeviceFill(dev, kBytes, seed));
  }
  // The device's count of bytes that differ from the pattern of `seed`.
  void ExpectDeviceReads(unsigned char* host, uint32_t seed, const char* what) {
    cudaError_t e = cudaSuccess;
    void* dev = DeviceAlias(host, &e);
    ASSERT_CUDA_OK(e);
    unsigned long long bad = 0;
    ASSERT_CUDA_OK(DeviceCount(dev, kBytes, Pattern(seed), &bad));
    EXPECT_EQ(bad, 0u) << what;
  }
};

// O_DIRECT: the device writes the buffer, O_DIRECT writes the buffer to the file (the block
// layer pins it), a plain read of the file shows the device's bytes; O_DIRECT reads the file
// into the cleared buffer and the device and the host see the file's bytes.
TEST_P(SecondPinTest, ODirectReadsAndWritesThroughCudaPinnedMemoryAreExact) {
  PAGELOCK_RULE("V06");
  auto file = pages::DirectIoFile::Make(kBytes);
  if (file->fd() < 0) PAGELOCK_NOT_SUPPORTED(file->unavailable());
  Observe("filesystem", file->filesystem());
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  PinWatch pins;
  {
    CudaPinned buf(GetParam());
    ASSERT_CUDA_OK(buf.Make()) << KindName(GetParam());
    ASSERT_NO_FATAL_FAILURE(DeviceWrites(buf.host(), seed));
    const PinCounters before = ReadPinCounters();
    const ssize_t w = pwrite(file->fd(), buf.host(), kBytes, 0);
    const int werr = errno;
    const PinCounters after = ReadPinCounters();
    if (PinExactnessProblem(before, after).empty()) {
      Observe("odirect_write_pins_acquired_pages", static_cast<long long>(after.acquired - before.acquired));
    }
    if (w < 0 && GetParam() != HostKind::kRegisteredMmap) {
      // The kernel refused to pin the driver's mapping: the documented answer for memory outside
      // any pinnable VMA; recorded, and the buffer must be untouched and CUDA's pin intact.
      EXPECT_DOCUMENTED_ONE_OF("odirect_write", ErrnoName(werr), (std::vector<std::string>{"EFAULT", "EOPNOTSUPP"}),
                               "write(2) on an O_DIRECT file");
      ExpectDeviceReads(buf.host(), seed, "bytes of the buffer changed by a refused O_DIRECT write");
      EXPECT_CUDA_OK(buf.Release());
      pins.ExpectReturned("a refused O_DIRECT write and the release of " + KindName(GetParam()));
      return;
    }
    ASSERT_EQ(w, static_cast<ssize_t>(kBytes)) << "O_DIRECT write from " << KindName(GetParam()) << ": "
                                               << (w < 0 ? strerror(werr) : "short write");
    Aligned check(kBytes);
    ASSERT_NE(check.p, nullptr);
    ASSERT_EQ(pread(file->fd(), check.p, kBytes, 0), static_cast<ssize_t>(kBytes)) << strerror(errno);
    EXPECT_EQ(HostCountPatternMismatches(check.p, kBytes, seed), 0u)
        << "bytes of the file that differ from what the device wrote into the pinned buffer";
    // The file holds the device's bytes; clear the buffer and read the file back into it.
    HostFillPattern(buf.host(), kBytes, seed ^ 0x0f0f0f0fu);
    const ssize_t r = pread(file->fd(), buf.host(), kBytes, 0);
    ASSERT_EQ(r, static_cast<ssize_t>(kBytes)) << "O_DIRECT read into " << KindName(GetParam()) << ": "
                                               << (r < 0 ? strerror(errno) : "short read");
    ExpectDeviceReads(buf.host(), seed, "bytes an O_DIRECT read put in the pinned buffer that the device does not see");
    EXPECT_EQ(HostCountPatternMismatches(buf.host(), kBytes, seed), 0u) << "the host's view after the O_DIRECT read";
    EXPECT_CUDA_OK(buf.Release());
  }
  pins.ExpectReturned("O_DIRECT I/O through " + KindName(GetParam()) + " and its release");
}

enum class Order { kCudaFirst, kRingFirst };

class FixedBufferTest : public PageStatesTest, public ::testing::WithParamInterface<std::tuple<HostKind, Order>> {};

// io_uring fixed buffers over CUDA-pinned memory: both pins at once, I/O through the ring in
// both directions, then one pin released (CUDA's or the ring's) while the other still works,
// then the other: the pin balance returns.
TEST_P(FixedBufferTest, IoUringFixedBuffersOverCudaPinnedMemoryWorkAndReleaseInEitherOrder) {
  PAGELOCK_RULE("V06");
  const HostKind kind = std::get<0>(GetParam());
  const Order order = std::get<1>(GetParam());
  std::string why;
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  const int fd = memfd_create("pagelock_fixed", MFD_CLOEXEC);
  ASSERT_GE(fd, 0) << strerror(errno);
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } own_fd{fd};
  PinWatch pins;
  {
    std::unique_ptr<IoUring> ring = IoUring::Make(4, &why);
    if (!ring) PAGELOCK_NOT_SUPPORTED(why);
    CudaPinned buf(kind);
    ASSERT_CUDA_OK(buf.Make()) << KindName(kind);
    cudaError_t e = cudaSuccess;
    void* dev = DeviceAlias(buf.host(), &e);
    ASSERT_CUDA_OK(e);
    ASSERT_CUDA_OK(DeviceFill(dev, kBytes, seed));
    const int reg = ring->RegisterBuffers({iovec{buf.host(), kBytes}});
    if (reg != 0 && kind != HostKind::kRegisteredMmap) {
      EXPECT_DOCUMENTED_ONE_OF("io_uring_register_buffers", ErrnoName(-reg),
                               (std::vector<std::string>{"EFAULT", "EOPNOTSUPP"}),
                               "io_uring_register(2) IORING_REGISTER_BUFFERS");
      unsigned long long bad = 0;
      ASSERT_CUDA_OK(DeviceCount(dev, kBytes, Pattern(seed), &bad));
      EXPECT_EQ(bad, 0u) << "a refused io_uring registration changed the pinned buffer";
      ring->Close();
      EXPECT_CUDA_OK(buf.Release());
      pins.ExpectReturned("a refused io_uring registration of " + KindName(kind));
      return;
    }
    ASSERT_EQ(reg, 0) << "IORING_REGISTER_BUFFERS of " << KindName(kind) << ": " << strerror(-reg);
    // Through the ring: the pinned buffer (the device's bytes) into the file, then back into it.
    ASSERT_EQ(ring->RwFixed(true, fd, buf.host(), kBytes, 0, 0, 10), static_cast<int>(kBytes));
    std::vector<unsigned char> file(kBytes);
    ASSERT_EQ(pread(fd, file.data(), kBytes, 0), static_cast<ssize_t>(kBytes));
    EXPECT_EQ(HostCountPatternMismatches(file.data(), kBytes, seed), 0u)
        << "bytes WRITE_FIXED took from the pinned buffer that differ from the device's";
    HostFillPattern(buf.host(), kBytes, seed ^ 0x3c3c3c3cu);
    ASSERT_EQ(ring->RwFixed(false, fd, buf.host(), kBytes, 0, 0, 10), static_cast<int>(kBytes));
    unsigned long long bad = 0;
    ASSERT_CUDA_OK(DeviceCount(dev, kBytes, Pattern(seed), &bad));
    EXPECT_EQ(bad, 0u) << "bytes READ_FIXED put in the pinned buffer that the device does not see";
    // One pin released; the other must still work.
    if (order == Order::kCudaFirst) {
      EXPECT_CUDA_OK(buf.Release());
      if (buf.MemoryOutlivesRelease()) {
        HostFillPattern(buf.host(), kBytes, seed ^ 0x12345678u);
        EXPECT_EQ(ring->RwFixed(true, fd, buf.host(), kBytes, 0, 0, 10), static_cast<int>(kBytes));
        ASSERT_EQ(pread(fd, file.data(), kBytes, 0), static_cast<ssize_t>(kBytes));
        EXPECT_EQ(HostCountPatternMismatches(file.data(), kBytes, seed ^ 0x12345678u), 0u)
            << "the ring's pin no longer reaches the buffer once CUDA's pin was released";
      }
      EXPECT_EQ(ring->UnregisterBuffers(), 0);
      ring->Close();
    } else {
      EXPECT_EQ(ring->UnregisterBuffers(), 0);
      ring->Close();
      HostFillPattern(buf.host(), kBytes, seed ^ 0x12345678u);
      ASSERT_CUDA_OK(DeviceCount(dev, kBytes, Pattern(seed ^ 0x12345678u), &bad));
      EXPECT_EQ(bad, 0u) << "CUDA's pin no longer reaches the buffer once the ring's pin was released";
      EXPECT_CUDA_OK(buf.Release());
    }
  }
  pins.ExpectReturned("both pins of " + KindName(kind) + " released (" +
                      (order == Order::kCudaFirst ? "CUDA's first" : "the ring's first") + ")");
}

#ifdef PAGELOCK_STRESS_TIER
const auto kKinds = ::testing::Values(HostKind::kRegisteredMmap, HostKind::kHostAllocDefault, HostKind::kHostAllocMapped,
                                      HostKind::kHostAllocMappedWriteCombined);
#else
const auto kKinds = ::testing::Values(HostKind::kRegisteredMmap);
#endif

INSTANTIATE_TEST_SUITE_P(EachKind, SecondPinTest, kKinds,
                         [](const ::testing::TestParamInfo<HostKind>& i) { return KindName(i.param); });

INSTANTIATE_TEST_SUITE_P(EachKindAndOrder, FixedBufferTest,
                         ::testing::Combine(kKinds, ::testing::Values(Order::kCudaFirst, Order::kRingFirst)),
                         [](const ::testing::TestParamInfo<std::tuple<HostKind, Order>>& i) {
                           return KindName(std::get<0>(i.param)) +
                                  (std::get<1>(i.param) == Order::kCudaFirst ? "_cuda_first" : "_ring_first");
                         });

}  // namespace
}  // namespace pagestates
}  // namespace pagelock
