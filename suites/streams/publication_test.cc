// Publication over mapped host memory: a host<->device ping-pong with a payload check every round
// (volatile polling, __threadfence_system on the device, release/acquire on the host), a token
// ring of the host thread and one kernel per GPU (plain stores after fences, no read-modify-
// write), and the host and every GPU writing interleaved single bytes of one buffer at the same
// time (no byte may be lost to a widened read-modify-write). Every wait on either side is bounded
// and a kernel that gives up says so. Rule ids refer to suites/rules.tsv.
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/time_scale.h"
#include "kernels/streams/stream_kernels.h"
#include "suites/streams/stream_util.h"

namespace pagelock {
namespace {

using streams::MemName;


constexpr double kWaitS = 5;  // a single wait on either side gives up after this (scaled)

uint64_t WaitNs() { return static_cast<uint64_t>(kWaitS * TimeScale() * 1e9); }

// Waits until *p == want (acquire loads), at most kWaitS (scaled).
bool HostAwait(const unsigned* p, unsigned want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kWaitS * TimeScale());
  while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != want) {
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
  return true;
}

class PublicationTest : public GpuTest, public ::testing::WithParamInterface<HostKind> {};

TEST_P(PublicationTest, HostDevicePingPongDeliversEveryPayload) {
  PAGELOCK_RULE("R77,R78,S08");
  const HostKind m = GetParam();
  if (IsRegistered(m)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  constexpr unsigned kWords = 64, kRounds = 2000;
  Budget("ping_pong_rounds", kRounds, "count");
  // Layout (words): [0] to_device, [1] to_host, [2] bad, [3] status, [64..) payload, [128..) reply.
  std::string why;
  auto buf = KindBuffer::Make(m, 256 * sizeof(unsigned), &why);
  ASSERT_NE(buf, nullptr) << why;
  std::memset(buf->host(), 0, buf->size());
  auto* h = reinterpret_cast<unsigned*>(buf->host());
  auto* d = reinterpret_cast<unsigned*>(buf->dev());
  cudaStream_t s = nullptr;
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto own_s = OwnedStream::Adopt(s);
  ASSERT_CUDA_OK(LaunchPingPong(d, d + 1, d + 64, d + 128, kWords, kRounds, WaitNs(), d + 2, d + 3, s));
  unsigned host_bad = 0, r = 1;
  for (; r <= kRounds; ++r) {
    volatile unsigned* payload = h + 64;
    for (unsigned k = 0; k < kWords; ++k) payload[k] = r * 2654435761u + k;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);  // the payload before the flag
    __atomic_store_n(h, r, __ATOMIC_RELEASE);
    if (!HostAwait(h + 1, r)) break;
    const volatile unsigned* reply = h + 128;
    for (unsigned k = 0; k < kWords; ++k) host_bad += reply[k] != ~(r * 2654435761u + k);
  }
  ASSERT_CUDA_OK(streams::PollStream(s, 2 * kWaitS)) << "the ping-pong kernel did not end";
  EXPECT_CUDA_OK(own_s.Free());
  Metric("rounds_completed_count", r - 1, "count");
  EXPECT_EQ(r - 1, kRounds) << "round " << r << ": the device's reply never came (device status "
                            << __atomic_load_n(h + 3, __ATOMIC_ACQUIRE) << ", 1 = it timed out waiting for the host)";
  EXPECT_EQ(__atomic_load_n(h + 2, __ATOMIC_ACQUIRE), 0u) << "payload words the device read before the host's flag";
  EXPECT_EQ(host_bad, 0u) << "reply words the host read before the device's flag";
}

TEST_P(PublicationTest, HostAndEveryGpuWriteAdjacentBytesWithoutLosingAny) {
  PAGELOCK_RULE("R78,S09");
  const HostKind m = GetParam();
  if (IsRegistered(m)) PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  constexpr size_t kBytes = size_t{1} << 20;
  constexpr unsigned kRounds = 64;
  const int gpus = static_cast<int>(Probe().devices.size());
  const unsigned stride = 1 + gpus;  // byte i belongs to owner i % stride: 0 the host, d + 1 GPU d
  std::string why;
  auto buf = KindBuffer::Make(m, kBytes, &why);
  ASSERT_NE(buf, nullptr) << why;
  std::memset(buf->host(), 0xff, kBytes);
  std::vector<cudaStream_t> streams(gpus);
  std::vector<OwnedStream> own_streams(gpus);
  for (int g = 0; g < gpus; ++g) {
    ASSERT_CUDA_OK(cudaSetDevice(g));
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking));
    own_streams[g] = OwnedStream::Adopt(streams[g]);
    // Registered memory's alias is valid on every device (R45); allocated memory's host pointer too (R14).
    ASSERT_CUDA_OK(LaunchOwnerBytes(buf->dev(), kBytes, stride, g + 1, kRounds, streams[g]));
  }
  ASSERT_CUDA_OK(cudaSetDevice(0));
  volatile unsigned char* p = buf->host();
  for (unsigned r = 0; r < kRounds; ++r) {
    for (size_t i = 0; i < kBytes; i += stride) p[i] = static_cast<unsigned char>(r & 0xff);
  }
  for (int g = 0; g < gpus; ++g) {
    ASSERT_CUDA_OK(cudaSetDevice(g));
    ASSERT_CUDA_OK(streams::PollStream(streams[g], 30)) << "device " << g << ": the byte writer did not end";
    EXPECT_CUDA_OK(own_streams[g].Free());
  }
  ASSERT_CUDA_OK(cudaSetDevice(0));
  std::vector<size_t> lost(stride, 0);
  for (size_t i = 0; i < kBytes; ++i) {
    const unsigned owner = i % stride;
    lost[owner] += p[i] != static_cast<unsigned char>(((kRounds - 1) & 0xff) ^ owner);
  }
  for (unsigned o = 0; o < stride; ++o) {
    EXPECT_EQ(lost[o], 0u) << (o == 0 ? std::string("host") : "GPU " + std::to_string(o - 1))
                           << ": bytes that do not hold its last value (a neighbour's write overwrote them)";
  }
}

INSTANTIATE_TEST_SUITE_P(Memory, PublicationTest, ::testing::Values(HostKind::kHostAllocMapped, HostKind::kRegisteredMalloc),
                         [](const auto& info) { return MemName(info.param); });

class TokenRingTest : public GpuTest {};

TEST_F(TokenRingTest, HostAndOneKernelPerGpuPassTheTokenWithoutLosingIt) {
  PAGELOCK_RULE("R77,R78,S08");
  constexpr unsigned kLaps = 1000;
  Budget("token_ring_laps", kLaps, "count");
  const int gpus = static_cast<int>(Probe().devices.size());
  const unsigned members = 1 + gpus;
  void* p = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&p, 64 * sizeof(unsigned), cudaHostAllocMapped | cudaHostAllocPortable));
  auto own_p = PinnedBuffer::Adopt(p);
  auto* token = static_cast<unsigned*>(p);
  std::memset(p, 0, 64 * sizeof(unsigned));
  unsigned* status = token + 32;  // per GPU, in another cache line than the token
  std::vector<cudaStream_t> streams(gpus);
  std::vector<OwnedStream> own_streams(gpus);
  for (int g = 0; g < gpus; ++g) {
    ASSERT_CUDA_OK(cudaSetDevice(g));
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking));
    own_streams[g] = OwnedStream::Adopt(streams[g]);
    ASSERT_CUDA_OK(LaunchTokenRing(token, g + 1, members, kLaps, WaitNs(), status + g, streams[g]));
  }
  unsigned lap = 0;
  for (; lap < kLaps; ++lap) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kWaitS * TimeScale());
    unsigned t;
    while ((t = __atomic_load_n(token, __ATOMIC_ACQUIRE)) % members != 0) {
      if (std::chrono::steady_clock::now() > deadline) break;
    }
    if (t % members != 0) break;
    __atomic_store_n(token, t + 1, __ATOMIC_RELEASE);
  }
  for (int g = 0; g < gpus; ++g) {
    ASSERT_CUDA_OK(cudaSetDevice(g));
    ASSERT_CUDA_OK(streams::PollStream(streams[g], 2 * kWaitS)) << "device " << g << ": the ring kernel did not end";
    EXPECT_CUDA_OK(own_streams[g].Free());
    EXPECT_EQ(status[g], kKernelOk) << "device " << g << " timed out waiting for its turn";
  }
  ASSERT_CUDA_OK(cudaSetDevice(0));
  EXPECT_EQ(lap, kLaps) << "the host timed out waiting for its turn at lap " << lap;
  EXPECT_EQ(__atomic_load_n(token, __ATOMIC_ACQUIRE), members * kLaps) << "the token lost or gained passes";
}

// Liveness of the ways a kernel can poll a host-written flag. Volatile loads, system-scope
// acquire loads (libcu++ atomic_ref) and ld.relaxed.sys must see the host's store within the
// bound (the memory model promises it); a plain load, with or without a fence, promises nothing
// (the compiler may hoist it), so whether it saw the flag is recorded only, under a short bound.
class PollingFormTest : public GpuTest, public ::testing::WithParamInterface<PollForm> {};

TEST_P(PollingFormTest, KernelPollingAHostWrittenFlagSeesIt) {
  PAGELOCK_RULE("R77,S14");
  const PollForm form = GetParam();
  const bool promised = form == PollForm::kVolatile || form == PollForm::kAtomicRefAcquire ||
                        form == PollForm::kRelaxedSysAsm;
  const double bound_s = promised ? kWaitS : 0.2;
  void* p = nullptr;
  ASSERT_CUDA_OK(cudaHostAlloc(&p, 64 * sizeof(unsigned), cudaHostAllocMapped));
  const auto own_p = PinnedBuffer::Adopt(p);
  auto* flag = static_cast<unsigned*>(p);
  unsigned* status = flag + 32;  // another cache line
  std::memset(p, 0, 64 * sizeof(unsigned));
  cudaStream_t s = nullptr;
  ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const auto own_s = OwnedStream::Adopt(s);
  ASSERT_CUDA_OK(LaunchAwaitFlagForm(flag, 1, form, static_cast<uint64_t>(bound_s * TimeScale() * 1e9), status, s));
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the kernel is polling by now
  const auto start = std::chrono::steady_clock::now();
  __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
  ASSERT_CUDA_OK(streams::PollStream(s, 2 * bound_s)) << "the polling kernel did not end within its bound";
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const bool seen = __atomic_load_n(status, __ATOMIC_ACQUIRE) == kKernelOk;
  Observe("saw_flag", seen);
  Metric("release_to_kernel_end_ms", ms, "ms");
  if (promised) {
    EXPECT_TRUE(seen) << "the kernel never saw the host's flag within " << bound_s << " s";
  }
}


INSTANTIATE_TEST_SUITE_P(Forms, PollingFormTest,
                         ::testing::Values(PollForm::kVolatile, PollForm::kAtomicRefAcquire, PollForm::kRelaxedSysAsm,
                                           PollForm::kPlainWithFence, PollForm::kPlain),
                         [](const auto& info) {
                           switch (info.param) {
                             case PollForm::kVolatile: return std::string("Volatile");
                             case PollForm::kAtomicRefAcquire: return std::string("AtomicRefAcquire");
                             case PollForm::kRelaxedSysAsm: return std::string("LdRelaxedSys");
                             case PollForm::kPlainWithFence: return std::string("PlainWithFence");
                             case PollForm::kPlain: return std::string("Plain");
                           }
                           return std::string("Unknown");
                         });

}  // namespace
}  // namespace pagelock
