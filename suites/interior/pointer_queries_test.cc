// The three ways to ask about a pointer tell one story (R151). A registration cache (NCCL, UCX,
// MPI) or a framework asks about a user's pointer with whichever query it was written against:
// cuPointerGetAttribute, one attribute at a time; cuPointerGetAttributes, several in one call
// (what cudaPointerGetAttributes is built on); or cudaPointerGetAttributes. For every byte in and
// near page-locked host memory of every kind (each cudaHostAlloc flag combination, registered
// heap, anonymous mmap and memfd, registrations that start and end inside pages) and device
// memory, the answers must agree, attribute by attribute:
// - where cuPointerGetAttribute succeeds for an attribute, cuPointerGetAttributes returns the
//   same value for it;
// - where it fails (its error is recorded), cuPointerGetAttributes still succeeds and returns the
//   attribute's default NULL value;
// - a byte the driver knows (cuPointerGetAttribute(MEMORY_TYPE) succeeds) names a range
//   (RANGE_START_ADDR / RANGE_SIZE) that holds it;
// - cudaPointerGetAttributes says cudaMemoryTypeUnregistered (legacy profile: cudaErrorInvalidValue)
//   exactly where the driver does not know the byte, and otherwise the driver's type, aliases and
//   device.
// Which bytes the driver knows (a page-rounded registration, an allocation's rounded tail) is not
// documented: it is recorded per probe, never asserted. Only the agreement is.
//
// CUDA 13.0 cuda.h, cuPointerGetAttributes: "The supported attributes are (refer to
// ::cuPointerGetAttribute for attribute descriptions and restrictions): CU_POINTER_ATTRIBUTE_CONTEXT,
// MEMORY_TYPE, DEVICE_POINTER, HOST_POINTER, SYNC_MEMOPS, BUFFER_ID, IS_MANAGED, DEVICE_ORDINAL,
// RANGE_START_ADDR, RANGE_SIZE, MAPPED, IS_LEGACY_CUDA_IPC_CAPABLE, ALLOWED_HANDLE_TYPES,
// MEMPOOL_HANDLE, IS_HW_DECOMPRESS_CAPABLE" and "Unlike ::cuPointerGetAttribute, this function
// will not return an error when the ptr encountered is not a valid CUDA pointer. Instead, the
// attributes are assigned default NULL values and CUDA_SUCCESS is returned."
//
// Wrong drivers these cases fail (tools/faults/catalogue.tsv):
// - attributes_page_granular_for_subpage_registration: the batch query is page-granular (an
//   unregistered byte on a page of a sub-page registration is described as the registration)
//   while the single query is byte-granular (INVALID_VALUE for that byte);
// - attributes_device_pointer_disagrees: the batch query's device pointer is a page off;
// - a batch query that fills a stale value (the last pointer's answer) instead of NULL for an
//   unknown pointer, or leaves the caller's slot untouched (no catalogue fault yet).
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/gpu_test.h"
#include "fixtures/host_memory.h"
#include "fixtures/platform_gates.h"
#include "fixtures/profile.h"
#include "fixtures/resources.h"
#include "suites/interior/subjects.h"

namespace pagelock {
namespace {

using interior::SubjectName;
using interior::Subjects;
CUdeviceptr Dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// ---- What is asked -------------------------------------------------------------------------

// The attributes compared, with the width cuda.h gives their value ("The type of data must be
// unsigned int", "CUdeviceptr *", "void **", "an unsigned long long", "an integer"). IS_MANAGED
// and MAPPED are documented as "a boolean" with no width: their slots start zeroed and four bytes
// are compared, so a driver that writes one byte of them reads the same through both queries.
// Every other slot starts filled with kUnwritten, so a query that leaves it alone is seen.
struct Attr {
  CUpointer_attribute id;
  const char* name;
  size_t width;
  bool boolean;
};
const std::vector<Attr>& Attrs() {
  static const std::vector<Attr> attrs = {
      {CU_POINTER_ATTRIBUTE_CONTEXT, "CONTEXT", sizeof(CUcontext), false},
      {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, "MEMORY_TYPE", sizeof(unsigned), false},
      {CU_POINTER_ATTRIBUTE_DEVICE_POINTER, "DEVICE_POINTER", sizeof(CUdeviceptr), false},
      {CU_POINTER_ATTRIBUTE_HOST_POINTER, "HOST_POINTER", sizeof(void*), false},
      {CU_POINTER_ATTRIBUTE_BUFFER_ID, "BUFFER_ID", sizeof(unsigned long long), false},
      {CU_POINTER_ATTRIBUTE_IS_MANAGED, "IS_MANAGED", sizeof(unsigned), true},
      {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, "DEVICE_ORDINAL", sizeof(int), false},
      {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, "RANGE_START_ADDR", sizeof(CUdeviceptr), false},
      {CU_POINTER_ATTRIBUTE_RANGE_SIZE, "RANGE_SIZE", sizeof(size_t), false},
      {CU_POINTER_ATTRIBUTE_MAPPED, "MAPPED", sizeof(unsigned), true},
  };
  return attrs;
}
size_t AttrIndex(CUpointer_attribute id) {
  for (size_t i = 0; i < Attrs().size(); ++i)
    if (Attrs()[i].id == id) return i;
  return 0;
}

constexpr unsigned char kUnwritten = 0xa5;

// One attribute's value as the driver wrote it (8 bytes: the widest attribute compared).
struct Slot {
  unsigned char bytes[8];
  void Reset(const Attr& a) { std::memset(bytes, a.boolean ? 0 : kUnwritten, sizeof bytes); }
  uint64_t Value(const Attr& a) const {
    uint64_t v = 0;
    std::memcpy(&v, bytes, a.width);  // little-endian hosts: the low `width` bytes
    return v;
  }
  bool Same(const Slot& o, const Attr& a) const { return std::memcmp(bytes, o.bytes, a.width) == 0; }
  bool Unwritten(const Attr& a) const {
    for (size_t i = 0; i < a.width; ++i)
      if (bytes[i] != kUnwritten) return false;
    return !a.boolean;
  }
};

// Everything the three queries say about one byte.
struct Answers {
  std::vector<CUresult> single;  // cuPointerGetAttribute, one call per attribute
  std::vector<Slot> single_value;
  CUresult plural = CUDA_SUCCESS;  // cuPointerGetAttributes, all of them in one call
  std::vector<Slot> plural_value;
  cudaError_t runtime = cudaSuccess;  // cudaPointerGetAttributes
  cudaPointerAttributes rt{};
  // The driver knows the byte: its single MEMORY_TYPE query succeeds ("If ptr was not allocated
  // by, mapped by, or registered with a ::CUcontext which uses unified virtual addressing then
  // ::CUDA_ERROR_INVALID_VALUE is returned").
  bool known() const { return single[AttrIndex(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)] == CUDA_SUCCESS; }
  uint64_t Plural(CUpointer_attribute id) const {
    const size_t i = AttrIndex(id);
    return plural_value[i].Value(Attrs()[i]);
  }
};

Answers Ask(const DriverApi& d, CUdeviceptr at) {
  Answers a;
  const size_t n = Attrs().size();
  a.single.resize(n);
  a.single_value.resize(n);
  a.plural_value.resize(n);
  std::vector<CUpointer_attribute> ids(n);
  std::vector<void*> data(n);
  for (size_t i = 0; i < n; ++i) {
    const Attr& attr = Attrs()[i];
    a.single_value[i].Reset(attr);
    a.single[i] = d.cuPointerGetAttribute(a.single_value[i].bytes, attr.id, at);
    a.plural_value[i].Reset(attr);
    ids[i] = attr.id;
    data[i] = a.plural_value[i].bytes;
  }
  a.plural = d.cuPointerGetAttributes(static_cast<unsigned>(n), ids.data(), data.data(), at);
  a.runtime = cudaPointerGetAttributes(&a.rt, reinterpret_cast<const void*>(at));
  if (a.runtime != cudaSuccess) (void)cudaGetLastError();  // checked below, by name
  return a;
}

// ---- Where it is asked -----------------------------------------------------------------------

// A byte near a buffer, named for the failure message; bytes that coincide share one probe.
struct Probe {
  std::string name;
  CUdeviceptr at;
};

// The bytes a cache may be handed for a buffer of `bytes` at `start`: its first and last byte, a
// random middle one (from the case seed), one before the first and one past the last, the first
// and last byte of the pages it sits on that it does not cover, and the first byte of the next page.
std::vector<Probe> NearbyBytes(CUdeviceptr start, size_t bytes) {
  const CUdeviceptr page = PageSize();
  const CUdeviceptr end = start + bytes;
  const CUdeviceptr first_page = start / page * page;
  const CUdeviceptr past_pages = (end + page - 1) / page * page;
  std::vector<Probe> probes;
  auto add = [&probes](const std::string& name, CUdeviceptr at) {
    for (Probe& p : probes) {
      if (p.at == at) {
        p.name += "_and_" + name;
        return;
      }
    }
    probes.push_back(Probe{name, at});
  };
  add("first", start);
  add("last", end - 1);
  if (bytes > 2) add("middle", start + 1 + CaseRng()() % (bytes - 2));
  add("before_first", start - 1);
  add("past_last", end);
  if (first_page < start) add("page_first_uncovered", first_page);
  if (past_pages > end) add("page_last_uncovered", past_pages - 1);
  add("next_page", past_pages);
  return probes;
}

std::string Where(const Probe& p, CUdeviceptr start) {
  return "probe " + p.name + " (" + Hex(p.at) + ", offset " +
         std::to_string(static_cast<long long>(p.at - start)) + " from the buffer)";
}

// ---- The story -------------------------------------------------------------------------------

// The three answers about one byte agree. `start` is the buffer the probe was taken near, for
// the messages; what the driver knows is recorded under the probe's name.
void ExpectOneStory(const DriverApi& d, const Probe& probe, CUdeviceptr start) {
  const std::string where = Where(probe, start);
  SCOPED_TRACE(where);
  const Answers a = Ask(d, probe.at);

  // What the driver knows, and every single-attribute error, recorded (undocumented).
  std::string failed;
  for (size_t i = 0; i < Attrs().size(); ++i)
    if (a.single[i] != CUDA_SUCCESS)
      failed += (failed.empty() ? "" : ", ") + std::string(Attrs()[i].name) + "=" + CuName(a.single[i]);
  Observe("probe." + probe.name,
          std::string(a.known() ? "known" : "unknown") + (failed.empty() ? "" : "; single fails: " + failed));

  // "this function will not return an error when the ptr encountered is not a valid CUDA
  // pointer": the device has unified addressing (SetUp), so no other error applies.
  ASSERT_EQ(CuName(a.plural), CuName(CUDA_SUCCESS))
      << where << ": cuPointerGetAttributes failed (" << DescribeCu(a.plural)
      << "); the single query's MEMORY_TYPE answer was "
      << CuName(a.single[AttrIndex(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)]);

  for (size_t i = 0; i < Attrs().size(); ++i) {
    const Attr& attr = Attrs()[i];
    const uint64_t plural = a.plural_value[i].Value(attr);
    if (a.single[i] == CUDA_SUCCESS) {
      // Both describe the same attribute of the same byte ("refer to ::cuPointerGetAttribute for
      // attribute descriptions").
      EXPECT_TRUE(a.plural_value[i].Same(a.single_value[i], attr))
          << where << ", " << attr.name << ": cuPointerGetAttributes says " << Hex(plural)
          << ", cuPointerGetAttribute says " << Hex(a.single_value[i].Value(attr));
      continue;
    }
    // "the attributes are assigned default NULL values". A device ordinal is an int, where NULL
    // read as a number is device 0: 0 and the runtime's cudaCpuDeviceId -1 and cudaInvalidDeviceId
    // -2 say "no device", and which one is recorded. Any other ordinal (a device the single query
    // did not name, a stale value) fails. A slot left unwritten is recorded here, as the range
    // slots are (its filler reads as a negative int, so it is told apart first); the literal
    // text is asserted by UnknownPointerTest.
    if (attr.id == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) {
      const std::string bad = gates::NotDefaultNull(true, plural, a.plural_value[i].Unwritten(attr), probe.at);
      Observe("probe." + probe.name + ".default_device_ordinal",
              bad == "unwritten" ? bad : std::to_string(static_cast<int>(static_cast<uint32_t>(plural))));
      if (bad != "unwritten") {
        EXPECT_EQ(bad, "") << where << ", " << attr.name << ": cuPointerGetAttribute fails (" << CuName(a.single[i])
                           << ") but cuPointerGetAttributes names device " << bad << ", not 0, -1 or -2";
      }
      continue;
    }
    // Two answers break "assigned default NULL values" without telling another story: the byte's
    // own address as HOST_POINTER (the host does reach it there; r580 says so) and a range slot
    // left unwritten (r580). They claim no allocation, so here they are recorded; the header's
    // literal text is asserted once, by UnknownPointerTest.
    const bool own_host = attr.id == CU_POINTER_ATTRIBUTE_HOST_POINTER && plural == probe.at;
    const bool range_unwritten = (attr.id == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR ||
                                  attr.id == CU_POINTER_ATTRIBUTE_RANGE_SIZE) &&
                                 a.plural_value[i].Unwritten(attr);
    if (own_host || range_unwritten) {
      Observe("probe." + probe.name + ".default_" + attr.name, own_host ? "the byte's address" : "unwritten");
      continue;
    }
    EXPECT_EQ(plural, 0u) << where << ", " << attr.name << ": cuPointerGetAttribute fails (" << CuName(a.single[i])
                          << ") but cuPointerGetAttributes says " << Hex(plural) << ", not the default NULL"
                          << (a.plural_value[i].Unwritten(attr) ? " (it left the slot unwritten)" : "");
  }

  // A byte the driver knows is in some allocation's range ("the starting address for the
  // allocation referenced by the device pointer ptr", "the size for the allocation"); the two
  // queries' ranges were compared above. Where the single query refuses the range (an older
  // driver, for a registration: nothing is said of registrations) the batch's NULL was judged
  // above and the refusal is recorded; that allocations answer is R95's and R130's to judge.
  const CUresult range_r = a.single[AttrIndex(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)] != CUDA_SUCCESS
                               ? a.single[AttrIndex(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)]
                               : a.single[AttrIndex(CU_POINTER_ATTRIBUTE_RANGE_SIZE)];
  if (a.known() && range_r != CUDA_SUCCESS) Observe("probe." + probe.name + ".range_refused", CuName(range_r));
  if (a.known() && range_r == CUDA_SUCCESS) {
    const CUdeviceptr range_start = a.Plural(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR);
    const size_t range_size = a.Plural(CU_POINTER_ATTRIBUTE_RANGE_SIZE);
    EXPECT_TRUE(probe.at >= range_start && probe.at - range_start < range_size)
        << where << ": the driver knows the byte (MEMORY_TYPE " << a.Plural(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
        << ") but RANGE_START_ADDR / RANGE_SIZE from cuPointerGetAttributes (" << Hex(range_start) << ", "
        << range_size << " bytes) do not hold it; cuPointerGetAttribute: "
        << CuName(a.single[AttrIndex(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)]) << ", "
        << CuName(a.single[AttrIndex(CU_POINTER_ATTRIBUTE_RANGE_SIZE)]);
  }

  // cudaPointerGetAttributes (its \sa names ::cuPointerGetAttributes): "cudaMemoryTypeUnregistered
  // for unregistered host memory, cudaMemoryTypeHost for registered host memory,
  // cudaMemoryTypeDevice for device memory or cudaMemoryTypeManaged for managed memory";
  // "In CUDA 11.0 forward passing host pointer will return ::cudaMemoryTypeUnregistered ... and
  // call will return ::cudaSuccess", before that "cudaErrorInvalidValue is returned" (R71).
  if (!a.known()) {
    const cudaError_t expected = ByProfile(cudaErrorInvalidValue, cudaSuccess, cudaSuccess);
    EXPECT_EQ(ErrName(a.runtime), ErrName(expected))
        << where << ": the driver does not know the byte (cuPointerGetAttribute(MEMORY_TYPE) = "
        << CuName(a.single[AttrIndex(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)]) << ") and cudaPointerGetAttributes answers "
        << ErrName(a.runtime);
    if (a.runtime != cudaSuccess) return;
    EXPECT_EQ(a.rt.type, cudaMemoryTypeUnregistered)
        << where << ": the driver does not know the byte, cudaPointerGetAttributes says type " << a.rt.type;
    EXPECT_EQ(Dptr(a.rt.devicePointer), a.Plural(CU_POINTER_ATTRIBUTE_DEVICE_POINTER))
        << where << ", devicePointer: cudaPointerGetAttributes says " << a.rt.devicePointer
        << ", cuPointerGetAttributes DEVICE_POINTER says " << Hex(a.Plural(CU_POINTER_ATTRIBUTE_DEVICE_POINTER));
    // Unregistered host memory is reachable by the host at its own address, so the runtime's
    // hostPointer may be that address or the driver's NULL; which is recorded.
    const CUdeviceptr host = Dptr(a.rt.hostPointer);
    EXPECT_TRUE(host == a.Plural(CU_POINTER_ATTRIBUTE_HOST_POINTER) || host == probe.at)
        << where << ", hostPointer: cudaPointerGetAttributes says " << a.rt.hostPointer
        << ", cuPointerGetAttributes HOST_POINTER says " << Hex(a.Plural(CU_POINTER_ATTRIBUTE_HOST_POINTER));
    Observe("probe." + probe.name + ".runtime_unregistered",
            std::string("device ") + std::to_string(a.rt.device) + ", hostPointer " +
                (host == 0 ? "null" : host == probe.at ? "the byte" : "other"));
    return;
  }
  ASSERT_EQ(ErrName(a.runtime), ErrName(cudaSuccess))
      << where << ": the driver knows the byte (MEMORY_TYPE " << a.Plural(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
      << ") and cudaPointerGetAttributes fails";
  const uint64_t type = a.Plural(CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
  const bool managed = a.single[AttrIndex(CU_POINTER_ATTRIBUTE_IS_MANAGED)] == CUDA_SUCCESS &&
                       a.Plural(CU_POINTER_ATTRIBUTE_IS_MANAGED) != 0;
  const cudaMemoryType want = managed                         ? cudaMemoryTypeManaged
                              : type == CU_MEMORYTYPE_HOST   ? cudaMemoryTypeHost
                              : type == CU_MEMORYTYPE_DEVICE ? cudaMemoryTypeDevice
                                                             : cudaMemoryTypeUnregistered;
  EXPECT_EQ(a.rt.type, want) << where << ", type: cudaPointerGetAttributes says " << a.rt.type
                             << ", the driver's MEMORY_TYPE " << type << " and IS_MANAGED " << managed
                             << " say " << want;
  // "devicePointer ... If the memory referred to by ptr cannot be accessed directly by the current
  // device then this is NULL"; "hostPointer ... cannot be accessed directly by the host then this
  // is NULL": the driver's DEVICE_POINTER and HOST_POINTER (NULL where it has none).
  EXPECT_EQ(Dptr(a.rt.devicePointer), a.Plural(CU_POINTER_ATTRIBUTE_DEVICE_POINTER))
      << where << ", devicePointer: cudaPointerGetAttributes says " << a.rt.devicePointer
      << ", cuPointerGetAttributes DEVICE_POINTER says " << Hex(a.Plural(CU_POINTER_ATTRIBUTE_DEVICE_POINTER));
  EXPECT_EQ(Dptr(a.rt.hostPointer), a.Plural(CU_POINTER_ATTRIBUTE_HOST_POINTER))
      << where << ", hostPointer: cudaPointerGetAttributes says " << a.rt.hostPointer
      << ", cuPointerGetAttributes HOST_POINTER says " << Hex(a.Plural(CU_POINTER_ATTRIBUTE_HOST_POINTER));
  // "device is the device against which ptr was allocated"; DEVICE_ORDINAL "a device ordinal of a
  // device against which the memory was allocated or registered".
  if (a.single[AttrIndex(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)] == CUDA_SUCCESS) {
    const int ordinal = static_cast<int>(static_cast<uint32_t>(a.Plural(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)));
    EXPECT_EQ(a.rt.device, ordinal) << where << ", device: cudaPointerGetAttributes says " << a.rt.device
                                    << ", DEVICE_ORDINAL says " << ordinal;
  }
}

// ---- Every kind of memory --------------------------------------------------------------------


// Without unified addressing cuPointerGetAttributes may answer CUDA_ERROR_INVALID_CONTEXT ("If
// ptr was not allocated by, mapped by, or registered with a ::CUcontext which uses UVA"), so
// SubjectTest requires it.
class PointerQueriesTest : public interior::SubjectTest {
 protected:
  // Two pages and a bit: the size is not a page multiple, so the last page has bytes it does not
  // cover.
  size_t BufferBytes() const override { return 2 * PageSize() + 100; }
};

TEST_P(PointerQueriesTest, PluralSingularAndRuntimeQueriesTellTheSameStoryAboutEveryNearbyByte) {
  PAGELOCK_RULE("R151");
  const CUdeviceptr start = Dptr(buf_->ptr());
  for (const Probe& probe : NearbyBytes(start, buf_->size())) ExpectOneStory(d, probe, start);
}

INSTANTIATE_TEST_SUITE_P(EveryKind, PointerQueriesTest, ::testing::ValuesIn(Subjects()),
                         [](const ::testing::TestParamInfo<HostKind>& info) { return SubjectName(info.param); });

// The header's text, literally, for one byte no context knows (a heap byte nobody registered):
// "the attributes are assigned default NULL values and CUDA_SUCCESS is returned". Every slot of
// the batch, HOST_POINTER and the range included, is NULL (a device ordinal 0, -1 or -2, never an
// unwritten slot: gates::NotDefaultNull). r580 answers the byte's own address for HOST_POINTER and
// leaves RANGE_START_ADDR and RANGE_SIZE unwritten (expectations/nvidia-h200.txt,
// docs/platforms/driver-r580.md#r151). The premise that the byte is unknown holds where the device
// cannot address pageable memory (attribute 88 = 0): there a driver that describes a heap byte
// nobody registered fails. Where it can (HMM, ATS: 88 = 1) nothing says how pageable memory is
// described, so a known byte is NotSupported with the driver's answer recorded
// (gates::UnknownBytePremise).
class UnknownPointerTest : public DriverApiGpuTest {
 protected:
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrUnifiedAddressing, 1));
  }
};

TEST_F(UnknownPointerTest, BatchQueryOfAnUnknownByteAssignsTheDefaultNullToEverySlot) {
  PAGELOCK_RULE("R151");
  std::vector<unsigned char> heap(PageSize() + 100);
  const CUdeviceptr at = Dptr(heap.data() + 50);
  const Answers a = Ask(d, at);
  const int pageable = device().Attr(cudaDevAttrPageableMemoryAccess);
  Observe("pageable_memory_access", pageable);
  const gates::Verdict premise = gates::UnknownBytePremise(pageable, a.known());
  if (premise == gates::Verdict::kNotSupported) {
    Observe("heap_byte_memory_type", static_cast<unsigned long long>(a.Plural(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)));
    PAGELOCK_NOT_SUPPORTED("cudaDevAttrPageableMemoryAccess=1 and the driver describes a plain heap byte (MEMORY_TYPE " +
                           std::to_string(a.Plural(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)) +
                           "): no byte is unknown to it, and how it describes pageable memory is not documented");
  }
  ASSERT_EQ(premise, gates::Verdict::kJudge)
      << "the driver knows a heap byte nobody registered (MEMORY_TYPE " << a.Plural(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
      << ") on a device without pageable memory access (cudaDevAttrPageableMemoryAccess=" << pageable << ")";
  ASSERT_EQ(CuName(a.plural), CuName(CUDA_SUCCESS)) << "cuPointerGetAttributes of an unknown byte";
  std::string not_null;
  for (size_t i = 0; i < Attrs().size(); ++i) {
    const Attr& attr = Attrs()[i];
    const std::string bad = gates::NotDefaultNull(attr.id == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                                  a.plural_value[i].Value(attr), a.plural_value[i].Unwritten(attr), at);
    if (!bad.empty()) not_null += (not_null.empty() ? "" : ", ") + std::string(attr.name) + "=" + bad;
  }
  Observe("unknown_byte_not_null", not_null.empty() ? "none" : not_null);
  EXPECT_TRUE(not_null.empty()) << "cuPointerGetAttributes of an unknown heap byte: not the default NULL: " << not_null;
}

// ---- Registrations that start and end inside pages -------------------------------------------

// Where in its page a registration starts and how long it is. cudaHostRegister "Page-locks the
// memory range specified by ptr and size"; the driver pins whole pages, so the bytes of those
// pages outside the range are where a page-granular lookup and a byte-granular one part.
enum class Shape {
  kInsideOnePage,            // page offset 100, 200 bytes
  kAcrossAPageBoundary,      // page offset 1, a page + 5 bytes
  kEndingOneBeforeAPageEnd,  // page offset 7 to 1 byte before the end of the next page
};
struct SubPage {
  HostKind region;
  Shape shape;
};
size_t ShapeOffset(Shape s) { return s == Shape::kInsideOnePage ? 100 : s == Shape::kAcrossAPageBoundary ? 1 : 7; }
size_t ShapeBytes(Shape s) {
  const size_t page = PageSize();
  return s == Shape::kInsideOnePage ? 200 : s == Shape::kAcrossAPageBoundary ? page + 5 : 2 * page - 1 - 7;
}
std::string SubPageName(const SubPage& s) {
  const std::string region = s.region == HostKind::kRegisteredMalloc ? "Heap" : "Mmap";
  const std::string shape = s.shape == Shape::kInsideOnePage          ? "InsideOnePage"
                            : s.shape == Shape::kAcrossAPageBoundary ? "AcrossAPageBoundary"
                                                                      : "EndingOneByteBeforeAPageEnd";
  return region + shape;
}
std::vector<SubPage> SubPages() {
  std::vector<SubPage> v;
  for (HostKind k : {HostKind::kRegisteredMalloc, HostKind::kRegisteredMmap})
    for (Shape s : {Shape::kInsideOnePage, Shape::kAcrossAPageBoundary, Shape::kEndingOneBeforeAPageEnd})
      v.push_back(SubPage{k, s});
  return v;
}

class SubPageRegistrationQueriesTest : public DriverApiGpuTest, public ::testing::WithParamInterface<SubPage> {
 protected:
  void SetUp() override {
    DriverApiGpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrUnifiedAddressing, 1));
    PAGELOCK_REQUIRE(RequireAttr(cudaDevAttrHostRegisterSupported, 1));
  }
};

TEST_P(SubPageRegistrationQueriesTest, PluralSingularAndRuntimeQueriesTellTheSameStoryAboutEveryNearbyByte) {
  PAGELOCK_RULE("R151");
  const SubPage sp = GetParam();
  // Four pages: an unregistered page before, the one or two pages the registration sits on, and
  // the next page (the probes outside land in this mapping, on no one's registration).
  auto region = HostRegion::Make(sp.region, 4 * PageSize());
  if (!region || !region->data())
    PAGELOCK_NOT_SUPPORTED(SourceName(sp.region) + " unavailable: " + (region ? region->unavailable() : "no region"));
  unsigned char* p = static_cast<unsigned char*>(region->data()) + PageSize() + ShapeOffset(sp.shape);
  const size_t bytes = ShapeBytes(sp.shape);
  ASSERT_CUDA_OK(cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable));
  auto own = HostRegistration::Adopt(p, bytes);  // unregistered before the region is released
  for (const Probe& probe : NearbyBytes(Dptr(p), bytes)) ExpectOneStory(d, probe, Dptr(p));
  EXPECT_CUDA_OK(own.Free());
}

INSTANTIATE_TEST_SUITE_P(StartingAndEndingInsidePages, SubPageRegistrationQueriesTest, ::testing::ValuesIn(SubPages()),
                         [](const ::testing::TestParamInfo<SubPage>& info) { return SubPageName(info.param); });

}  // namespace
}  // namespace pagelock
