// Releasing pinned memory from another context than the one that pinned it (peer row C5): a
// registration made with context A current and unregistered with context B current (another
// cuCtxCreate context on the same device, or the primary context), and a cuMemHostAlloc block
// freed from another context. The 13.0 reference names no context for cuMemHostUnregister or
// cuMemFreeHost, so each documented result is accepted and recorded; what must hold either way:
// the memory is released exactly once (the home context's release then fails by name, or succeeds
// where the other one failed), the range registers again afterwards, once (a second registration
// of it is HOST_MEMORY_ALREADY_REGISTERED), and the device reads its bytes.
// Everything runs in one scenario child (contexts and their current state are per process),
// started once and read by every case. Rule ids refer to suites/rules.tsv.
#include <sys/mman.h>

#include <cstring>
#include <string>
#include <vector>

#include "fixtures/child_process.h"
#include "fixtures/driver_api.h"
#include "fixtures/gpu_test.h"
#include "kernels/pattern.h"

namespace pagelock {
namespace {

constexpr size_t kSize = size_t{1} << 20;

// Where the release happens: `home` pinned it, `other` releases it.
struct Pairing {
  const char* name;
  const char* home;   // "a" (a created context) or "primary"
  const char* other;  // "b" (another created context), "a" or "primary"
  unsigned flags;     // CU_MEMHOSTREGISTER_* / CU_MEMHOSTALLOC_*
};

const Pairing kRegisterPairings[] = {
    {"created_to_created", "a", "b", 0},
    {"created_to_created_portable", "a", "b", CU_MEMHOSTREGISTER_PORTABLE},
    {"created_to_primary", "a", "primary", 0},
    {"primary_to_created", "primary", "a", 0},
};
const Pairing kAllocPairings[] = {
    {"created_to_created", "a", "b", 0},
    {"created_to_created_portable", "a", "b", CU_MEMHOSTALLOC_PORTABLE},
    {"created_to_primary", "a", "primary", 0},
};

struct Contexts {
  CUcontext a = nullptr, b = nullptr, primary = nullptr;
  CUcontext Get(const std::string& name) const { return name == "a" ? a : name == "b" ? b : primary; }
};

// Register in `home`, unregister in `other`, then everything the aftermath must show.
void RegisterThenUnregisterElsewhere(const DriverApi& d, const Contexts& c, const Pairing& p, unsigned char* buf,
                                     ScenarioReport& report) {
  const std::string k = std::string("register_") + p.name + "_";
  const uint32_t seed = static_cast<uint32_t>(std::strlen(p.name)) * 977u + p.flags;
  HostFillPattern(buf, kSize, seed);
  report.Cu(k + "set_home", d.cuCtxSetCurrent(c.Get(p.home)));
  const CUresult reg = d.cuMemHostRegister(buf, kSize, p.flags);
  report.Cu(k + "register", reg);
  if (reg != CUDA_SUCCESS) return;
  report.Cu(k + "set_other", d.cuCtxSetCurrent(c.Get(p.other)));
  report.Cu(k + "unregister_in_other", d.cuMemHostUnregister(buf));
  unsigned type = 0;
  report.Cu(k + "type_in_other", d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                          reinterpret_cast<CUdeviceptr>(buf)));
  report.Cu(k + "set_home_again", d.cuCtxSetCurrent(c.Get(p.home)));
  report.Cu(k + "unregister_in_home", d.cuMemHostUnregister(buf));
  report.Cu(k + "type_in_home", d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                         reinterpret_cast<CUdeviceptr>(buf)));
  // Registered again (in the other context), once, and the device reads its bytes.
  report.Cu(k + "set_other_again", d.cuCtxSetCurrent(c.Get(p.other)));
  const CUresult again = d.cuMemHostRegister(buf, kSize, CU_MEMHOSTREGISTER_DEVICEMAP);
  report.Cu(k + "register_again", again);
  if (again != CUDA_SUCCESS) return;
  report.Cu(k + "register_twice", d.cuMemHostRegister(buf, kSize, CU_MEMHOSTREGISTER_DEVICEMAP));
  CUdeviceptr alias = 0;
  report.Cu(k + "device_pointer", d.cuMemHostGetDevicePointer(&alias, buf, 0));
  std::vector<unsigned char> back(kSize, 0);
  CUresult r = alias ? d.cuMemcpyDtoH(back.data(), alias, kSize) : CUDA_ERROR_INVALID_VALUE;
  report.Cu(k + "device_read", r);
  // copy-check: the bytes the device read through the alias are compared here
  report.Set(k + "device_read_bad", static_cast<long long>(HostCountPatternMismatches(back.data(), kSize, seed)));
  report.Cu(k + "unregister_last", d.cuMemHostUnregister(buf));
  report.Cu(k + "unregister_after_last", d.cuMemHostUnregister(buf));
}

// cuMemHostAlloc in `home`, cuMemFreeHost in `other`; where that failed, the home frees it.
void AllocThenFreeElsewhere(const DriverApi& d, const Contexts& c, const Pairing& p, ScenarioReport& report) {
  const std::string k = std::string("alloc_") + p.name + "_";
  report.Cu(k + "set_home", d.cuCtxSetCurrent(c.Get(p.home)));
  void* m = nullptr;
  const CUresult alloc = d.cuMemHostAlloc(&m, kSize, p.flags);
  report.Cu(k + "alloc", alloc);
  if (alloc != CUDA_SUCCESS) return;
  std::memset(m, 0x5a, kSize);
  report.Cu(k + "set_other", d.cuCtxSetCurrent(c.Get(p.other)));
  const CUresult freed = d.cuMemFreeHost(m);
  report.Cu(k + "free_in_other", freed);
  report.Cu(k + "set_home_again", d.cuCtxSetCurrent(c.Get(p.home)));
  if (freed == CUDA_SUCCESS) {
    unsigned type = 0;
    report.Cu(k + "type_in_home", d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                           reinterpret_cast<CUdeviceptr>(m)));
  } else {
    report.Cu(k + "free_in_home", d.cuMemFreeHost(m));
  }
}

PAGELOCK_SCENARIO(ReleaseFromAnotherContext) {
  const DriverApi& d = Driver();
  if (!d.loaded) return report.Set("driver", d.error);
  CUdevice dev = 0;
  Contexts c;
  report.Cu("init", d.cuInit(0));
  report.Cu("device", d.cuDeviceGet(&dev, 0));
  report.Cu("retain_primary", d.cuDevicePrimaryCtxRetain(&c.primary, dev));
  report.Cu("create_a", CreateContext(d, &c.a, 0, dev));
  report.Cu("create_b", CreateContext(d, &c.b, 0, dev));
  if (!c.a || !c.b || !c.primary) return;
  void* buf = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) return report.Set("mmap", "failed");
  for (const Pairing& p : kRegisterPairings) {
    RegisterThenUnregisterElsewhere(d, c, p, static_cast<unsigned char*>(buf), report);
  }
  for (const Pairing& p : kAllocPairings) AllocThenFreeElsewhere(d, c, p, report);
  report.Cu("destroy_b", d.cuCtxDestroy(c.b));
  report.Cu("destroy_a", d.cuCtxDestroy(c.a));
  report.Cu("release_primary", d.cuDevicePrimaryCtxRelease(dev));
  munmap(buf, kSize);  // frees_check: the scenario's last step, after every pin of it was released and reported
  report.Set("done", "1");
}

// One child for every case of the binary: three contexts cost most of its time.
const ChildResult& Released() {
  return SharedScenario("ReleaseFromAnotherContext", 60);
}

class ReleaseFromAnotherContextTest : public DriverApiGpuTest {
 protected:
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    r_ = &Released();
    ASSERT_CHILD_COMPLETED(*r_);
    ASSERT_EQ(r_->Get("driver"), "<missing>") << r_->Get("driver");
    for (const char* key : {"init", "retain_primary", "create_a", "create_b"}) {
      ASSERT_EQ(r_->Get(key), "CUDA_SUCCESS") << key;
    }
  }
  std::string Get(const std::string& key) const { return r_->Get(key); }
  const ChildResult* r_ = nullptr;
};

class UnregisterElsewhereTest : public ReleaseFromAnotherContextTest,
                                public ::testing::WithParamInterface<Pairing> {};

// A driver that unregisters from B but leaves A's record (A's unregister succeeds again, or the
// range cannot be registered again: ALREADY_REGISTERED), that fails from B but drops the
// registration anyway (A's unregister then NOT_REGISTERED), or that lets the range be registered
// twice, fails this.
TEST_P(UnregisterElsewhereTest, TheRegistrationIsReleasedExactlyOnceAndRegistersAgainOnce) {
  PAGELOCK_RULE("R132,R133");
  PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  const std::string k = std::string("register_") + GetParam().name + "_";
  ASSERT_EQ(Get("mmap"), "<missing>");
  ASSERT_EQ(Get(k + "set_home"), "CUDA_SUCCESS");
  ASSERT_EQ(Get(k + "register"), "CUDA_SUCCESS");
  ASSERT_EQ(Get(k + "set_other"), "CUDA_SUCCESS");
  ASSERT_EQ(Get(k + "set_home_again"), "CUDA_SUCCESS");
  // 13.0 cuMemHostUnregister: CUDA_SUCCESS, ..., CUDA_ERROR_INVALID_CONTEXT,
  // CUDA_ERROR_INVALID_VALUE, ..., CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED; no context is named.
  const std::string other = Get(k + "unregister_in_other");
  EXPECT_DOCUMENTED_ONE_OF("unregister_in_other_context", other,
                           (std::vector<std::string>{"CUDA_SUCCESS", "CUDA_ERROR_INVALID_CONTEXT",
                                                     "CUDA_ERROR_INVALID_VALUE",
                                                     "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"}),
                           "13.0 cuMemHostUnregister return list (no context requirement stated)");
  if (other == "CUDA_SUCCESS") {
    // Released: pageable again in both contexts ('makes it pageable again'; unknown memory is
    // CUDA_ERROR_INVALID_VALUE to cuPointerGetAttribute, R73), and nothing left for A to release.
    EXPECT_EQ(Get(k + "type_in_other"), "CUDA_ERROR_INVALID_VALUE") << "the range is still known after its unregister";
    EXPECT_EQ(Get(k + "unregister_in_home"), "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED")
        << "the home context unregistered a range the other context had already unregistered";
  } else {
    EXPECT_EQ(Get(k + "unregister_in_home"), "CUDA_SUCCESS")
        << "the other context's unregister failed (" << other << ") and the home context's did not succeed";
  }
  EXPECT_EQ(Get(k + "type_in_home"), "CUDA_ERROR_INVALID_VALUE") << "the range is still known after its unregister";
  EXPECT_EQ(Get(k + "register_again"), "CUDA_SUCCESS") << "the released range does not register again";
  EXPECT_EQ(Get(k + "register_twice"), "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED")
      << "the range registered a second time on top of the first";
  EXPECT_EQ(Get(k + "device_pointer"), "CUDA_SUCCESS");
  EXPECT_EQ(Get(k + "device_read"), "CUDA_SUCCESS");
  EXPECT_EQ(Get(k + "device_read_bad"), "0") << "the device read other bytes than the range's";
  EXPECT_EQ(Get(k + "unregister_last"), "CUDA_SUCCESS");
  EXPECT_EQ(Get(k + "unregister_after_last"), "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED")
      << "one registration needed two unregisters: it was pinned twice";
}

INSTANTIATE_TEST_SUITE_P(Pairings, UnregisterElsewhereTest, ::testing::ValuesIn(kRegisterPairings),
                         [](const ::testing::TestParamInfo<Pairing>& info) { return std::string(info.param.name); });

class FreeElsewhereTest : public ReleaseFromAnotherContextTest, public ::testing::WithParamInterface<Pairing> {};

// A driver that frees the block from B and still lists it (its type is still HOST), or that fails
// from B and leaves it unfreeable from A, fails this.
TEST_P(FreeElsewhereTest, TheBlockIsFreedExactlyOnce) {
  PAGELOCK_RULE("R134");
  const std::string k = std::string("alloc_") + GetParam().name + "_";
  ASSERT_EQ(Get(k + "set_home"), "CUDA_SUCCESS");
  ASSERT_EQ(Get(k + "alloc"), "CUDA_SUCCESS");
  ASSERT_EQ(Get(k + "set_other"), "CUDA_SUCCESS");
  ASSERT_EQ(Get(k + "set_home_again"), "CUDA_SUCCESS");
  // 13.0 cuMemFreeHost: CUDA_SUCCESS, ..., CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_VALUE.
  const std::string other = Get(k + "free_in_other");
  EXPECT_DOCUMENTED_ONE_OF("free_in_other_context", other,
                           (std::vector<std::string>{"CUDA_SUCCESS", "CUDA_ERROR_INVALID_CONTEXT",
                                                     "CUDA_ERROR_INVALID_VALUE"}),
                           "13.0 cuMemFreeHost return list (no context requirement stated)");
  if (other == "CUDA_SUCCESS") {
    EXPECT_EQ(Get(k + "type_in_home"), "CUDA_ERROR_INVALID_VALUE")
        << "the block freed from the other context is still known to the home context";
  } else {
    EXPECT_EQ(Get(k + "free_in_home"), "CUDA_SUCCESS")
        << "the other context's free failed (" << other << ") and the home context could not free it";
  }
}

INSTANTIATE_TEST_SUITE_P(Pairings, FreeElsewhereTest, ::testing::ValuesIn(kAllocPairings),
                         [](const ::testing::TestParamInfo<Pairing>& info) { return std::string(info.param.name); });

TEST_F(ReleaseFromAnotherContextTest, EveryContextIsDestroyedAfterwards) {
  PAGELOCK_RULE("R132");
  EXPECT_EQ(Get("destroy_b"), "CUDA_SUCCESS");
  EXPECT_EQ(Get("destroy_a"), "CUDA_SUCCESS");
  EXPECT_EQ(Get("release_primary"), "CUDA_SUCCESS");
  EXPECT_EQ(Get("done"), "1");
}

}  // namespace
}  // namespace pagelock
