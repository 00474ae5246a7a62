#include "suites/model/model.h"

#include <algorithm>
#include <cstring>

#include "fixtures/host_memory.h"
#include "kernels/pattern.h"

namespace pagelock {

int ApiModel::RegAt(int buffer, size_t offset) const {
  for (size_t i = 0; i < regs.size(); ++i) {
    const ModelReg& r = regs[i];
    if (r.buffer == buffer && offset >= r.offset && offset < r.offset + r.length) return static_cast<int>(i);
  }
  return -1;
}

bool ApiModel::Ambiguous(int buffer, size_t offset) const {
  if (RegAt(buffer, offset) >= 0) return false;
  const size_t page = PageSize(), p = offset / page;
  for (const ModelReg& r : regs) {
    if (r.buffer == buffer && p >= r.offset / page && p <= (r.offset + r.length - 1) / page) return true;
  }
  return false;
}

bool ApiModel::SharesAPageOnly(int buffer, size_t offset, size_t length) const {
  const size_t page = PageSize(), first = offset / page, last = (offset + length - 1) / page;
  for (const ModelReg& r : regs) {
    if (r.buffer != buffer) continue;
    if (offset < r.offset + r.length && r.offset < offset + length) return false;  // bytes overlap
    if (first <= (r.offset + r.length - 1) / page && r.offset / page <= last) return true;
  }
  return false;
}

cudaError_t ApiModel::ExpectRegister(int buffer, size_t offset, size_t length) const {
  for (const ModelReg& r : regs) {
    if (r.buffer == buffer && offset < r.offset + r.length && r.offset < offset + length) {
      return rules.overlapping_register_fails ? cudaErrorHostMemoryAlreadyRegistered : cudaSuccess;
    }
  }
  return cudaSuccess;
}

cudaError_t ApiModel::ExpectUnregister(int buffer, size_t offset) const {
  const int r = RegAt(buffer, offset);
  if (r < 0) return cudaErrorHostMemoryNotRegistered;  // R35/R36
  if (regs[r].offset == offset) return cudaSuccess;    // R33
  return rules.interior_unregister_is_invalid ? cudaErrorInvalidValue : cudaErrorHostMemoryNotRegistered;
}

bool ApiModel::AnyLiveAlloc() const {
  return std::any_of(allocs.begin(), allocs.end(), [](const ModelAlloc& a) { return a.live; });
}

PinnedSut::~PinnedSut() {
  for (void* p : registered) (void)api->HostUnregister(p);
  for (void* p : allocs)
    if (p) (void)api->FreeHost(p);
  for (unsigned char* b : bufs) std::free(b);
}

namespace {

const char* Err(cudaError_t e) { return cudaGetErrorName(e); }

// The failure message names the step, what the model expected and what the API answered.
#define MODEL_EXPECT_EQ(what, expected, actual)                                                  \
  do {                                                                                           \
    const auto model_expected_ = (expected);                                                     \
    const auto model_actual_ = (actual);                                                         \
    if (!(model_expected_ == model_actual_)) {                                                   \
      RC_FAIL(std::string(what) + ": model expects " + Describe(model_expected_) + ", API gave " + \
              Describe(model_actual_));                                                          \
    }                                                                                            \
  } while (0)

std::string Describe(cudaError_t e) { return Err(e); }
std::string Describe(uint64_t v) { return std::to_string(v); }
std::string Describe(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}
std::string Describe(int v) { return std::to_string(v); }
std::string Describe(unsigned v) { return std::to_string(v); }

bool AllocLive(const ApiModel& m, int i) { return i >= 0 && i < static_cast<int>(m.allocs.size()) && m.allocs[i].live; }
bool BufferExists(const ApiModel& m, int i) { return i >= 0 && i < static_cast<int>(m.buffers.size()); }

// Picks a live allocation (RC_PRE discards the command when there is none).
int PickLiveAlloc(const ApiModel& m) {
  std::vector<int> live;
  for (size_t i = 0; i < m.allocs.size(); ++i)
    if (m.allocs[i].live) live.push_back(static_cast<int>(i));
  RC_PRE(!live.empty());
  return *rc::gen::elementOf(live);
}
int PickBuffer(const ApiModel& m) {
  RC_PRE(!m.buffers.empty());
  return *rc::gen::inRange<int>(0, static_cast<int>(m.buffers.size()));
}
size_t SmallSize() {
  return *rc::gen::oneOf(rc::gen::just(size_t(1)), rc::gen::inRange<size_t>(1, 4097),
                         rc::gen::element(size_t(4095), size_t(4096), size_t(4097), size_t(8192),
                                          size_t(65536) + 1),
                         rc::gen::inRange<size_t>(1, 256 * 1024 + 1));
}

struct NewBuffer : PinnedCommand {
  size_t size = PageSize() * *rc::gen::inRange<size_t>(1, 9);
  explicit NewBuffer(const ApiModel& m) { RC_PRE(m.buffers.size() < 6); }
  void apply(ApiModel& m) const override { m.buffers.push_back({size}); }
  void run(const ApiModel&, PinnedSut& s) const override {
    auto* b = static_cast<unsigned char*>(std::aligned_alloc(PageSize(), size));
    RC_ASSERT(b != nullptr);
    std::memset(b, 0, size);
    s.bufs.push_back(b);
    ++s.run.steps;
  }
  void show(std::ostream& os) const override {
    os << "buf.push_back(static_cast<unsigned char*>(std::aligned_alloc(" << PageSize() << ", " << size << ")));";
  }
};

struct HostAlloc : PinnedCommand {
  size_t size = SmallSize();
  unsigned flags = *rc::gen::inRange(0u, 8u);
  explicit HostAlloc(const ApiModel& m) { RC_PRE(m.allocs.size() < 24); }
  void apply(ApiModel& m) const override { m.allocs.push_back({size, flags, true}); }
  void run(const ApiModel&, PinnedSut& s) const override {
    void* p = nullptr;
    const cudaError_t e = s.api->HostAlloc(&p, size, flags);
    s.allocs.push_back(e == cudaSuccess ? p : nullptr);
    ++s.run.steps;
    MODEL_EXPECT_EQ("HostAlloc (R08)", cudaSuccess, e);
    RC_ASSERT(static_cast<bool>(e != cudaSuccess || p != nullptr));
  }
  void show(std::ostream& os) const override {
    os << "alloc.push_back(nullptr); r = cudaHostAlloc(&alloc.back(), " << size << ", " << flags << ");";
  }
};

struct FreeHost : PinnedCommand {
  int alloc;
  size_t offset;
  explicit FreeHost(const ApiModel& m)
      : alloc(PickLiveAlloc(m)),
        offset(*rc::gen::oneOf(rc::gen::just(size_t(0)), rc::gen::inRange<size_t>(0, m.allocs[alloc].size))) {}
  void checkPreconditions(const ApiModel& m) const override {
    RC_PRE(static_cast<bool>(AllocLive(m, alloc) && offset < m.allocs[alloc].size));
  }
  void apply(ApiModel& m) const override {
    if (offset == 0) m.allocs[alloc].live = false;
  }
  void run(const ApiModel&, PinnedSut& s) const override {
    ++s.run.steps;
    const cudaError_t e = s.api->FreeHost(static_cast<char*>(s.allocs[alloc]) + offset);
    if (offset == 0 && e == cudaSuccess) s.allocs[alloc] = nullptr;
    MODEL_EXPECT_EQ(offset == 0 ? "FreeHost of the base (R19)" : "FreeHost of an interior pointer (R22)",
                    offset == 0 ? cudaSuccess : cudaErrorInvalidValue, e);
  }
  void show(std::ostream& os) const override {
    os << "r = cudaFreeHost(static_cast<char*>(alloc[" << alloc << "]) + " << offset << ");";
  }
};

// Register strategies: anywhere, adjacent to a registration, overlapping one, sub-page.
struct Register : PinnedCommand {
  int buffer;
  size_t offset = 0, length = 1;
  unsigned flags = *rc::gen::inRange(0u, 4u);  // Portable | Mapped
  explicit Register(const ApiModel& m) : buffer(PickBuffer(m)) {
    const size_t size = m.buffers[buffer].size;
    std::vector<const ModelReg*> same;
    for (const ModelReg& r : m.regs)
      if (r.buffer == buffer) same.push_back(&r);
    const int strategy = *rc::gen::inRange(0, same.empty() ? 2 : 4);
    if (strategy == 0) {  // anywhere
      offset = *rc::gen::inRange<size_t>(0, size);
      length = *rc::gen::inRange<size_t>(1, size - offset + 1);
    } else if (strategy == 1) {  // sub-page
      offset = *rc::gen::inRange<size_t>(0, size);
      length = *rc::gen::inRange<size_t>(1, std::min<size_t>(4096, size - offset) + 1);
    } else {
      const ModelReg& r = **rc::gen::elementOf(same);
      const size_t page = PageSize(), end = r.offset + r.length;
      offset = strategy == 2 ? (end + page - 1) / page * page  // adjacent: on the next page
                             : *rc::gen::inRange<size_t>(r.offset, r.offset + r.length);  // overlap
      RC_PRE(offset < size);
      length = *rc::gen::inRange<size_t>(1, size - offset + 1);
    }
  }
  void checkPreconditions(const ApiModel& m) const override {
    RC_PRE(static_cast<bool>(BufferExists(m, buffer) && offset + length <= m.buffers[buffer].size));
    RC_PRE(!m.SharesAPageOnly(buffer, offset, length));
  }
  void apply(ApiModel& m) const override {
    if (m.ExpectRegister(buffer, offset, length) == cudaSuccess) m.regs.push_back({buffer, offset, length, flags});
  }
  void run(const ApiModel& m, PinnedSut& s) const override {
    ++s.run.steps;
    void* p = s.bufs[buffer] + offset;
    const cudaError_t e = s.api->HostRegister(p, length, flags);
    if (e == cudaSuccess) s.registered.push_back(p);
    MODEL_EXPECT_EQ("HostRegister (R26, R29-R32)", m.ExpectRegister(buffer, offset, length), e);
  }
  void show(std::ostream& os) const override {
    os << "r = cudaHostRegister(buf[" << buffer << "] + " << offset << ", " << length << ", " << flags << ");";
  }
};

struct Unregister : PinnedCommand {
  int buffer;
  size_t offset;
  explicit Unregister(const ApiModel& m) : buffer(PickBuffer(m)) {
    std::vector<const ModelReg*> same;
    for (const ModelReg& r : m.regs)
      if (r.buffer == buffer) same.push_back(&r);
    if (!same.empty() && *rc::gen::inRange(0, 3) != 0) {
      const ModelReg& r = **rc::gen::elementOf(same);
      offset = *rc::gen::oneOf(rc::gen::just(r.offset), rc::gen::inRange<size_t>(r.offset, r.offset + r.length));
    } else {
      offset = *rc::gen::inRange<size_t>(0, m.buffers[buffer].size);
    }
    RC_PRE(!m.Ambiguous(buffer, offset));
  }
  void checkPreconditions(const ApiModel& m) const override {
    RC_PRE(static_cast<bool>(BufferExists(m, buffer) && offset < m.buffers[buffer].size &&
                             !m.Ambiguous(buffer, offset)));
  }
  void apply(ApiModel& m) const override {
    const int r = m.RegAt(buffer, offset);
    if (r >= 0 && m.regs[r].offset == offset) m.regs.erase(m.regs.begin() + r);
  }
  void run(const ApiModel& m, PinnedSut& s) const override {
    ++s.run.steps;
    void* p = s.bufs[buffer] + offset;
    const cudaError_t e = s.api->HostUnregister(p);
    if (e == cudaSuccess) s.registered.erase(std::remove(s.registered.begin(), s.registered.end(), p), s.registered.end());
    MODEL_EXPECT_EQ("HostUnregister (R33-R36)", m.ExpectUnregister(buffer, offset), e);
  }
  void show(std::ostream& os) const override {
    os << "r = cudaHostUnregister(buf[" << buffer << "] + " << offset << ");";
  }
};

// What a pointer is, according to the model: a live allocation, a registered buffer byte, or
// plain pageable memory.
struct Target {
  bool is_alloc;
  int index;
  size_t offset;
};
Target PickTarget(const ApiModel& m) {
  const bool alloc = m.AnyLiveAlloc() && (m.buffers.empty() || *rc::gen::arbitrary<bool>());
  if (alloc) {
    const int i = PickLiveAlloc(m);
    return {true, i, *rc::gen::oneOf(rc::gen::just(size_t(0)), rc::gen::inRange<size_t>(0, m.allocs[i].size))};
  }
  const int b = PickBuffer(m);
  const size_t offset = *rc::gen::inRange<size_t>(0, m.buffers[b].size);
  RC_PRE(!m.Ambiguous(b, offset));
  return {false, b, offset};
}
bool TargetValid(const ApiModel& m, const Target& t) {
  return t.is_alloc ? AllocLive(m, t.index) && t.offset < m.allocs[t.index].size
                    : BufferExists(m, t.index) && t.offset < m.buffers[t.index].size &&
                          !m.Ambiguous(t.index, t.offset);
}
std::string TargetText(const Target& t) {
  return std::string(t.is_alloc ? "static_cast<char*>(alloc[" : "(buf[") + std::to_string(t.index) + "]) + " +
         std::to_string(t.offset);
}
unsigned char* TargetPtr(const PinnedSut& s, const Target& t) {
  return (t.is_alloc ? static_cast<unsigned char*>(s.allocs[t.index]) : s.bufs[t.index]) + t.offset;
}
// The base a pointer's device alias is relative to: the allocation or registration base.
unsigned char* AliasBase(const ApiModel& m, const PinnedSut& s, const Target& t, size_t* delta) {
  if (t.is_alloc) {
    *delta = t.offset;
    return static_cast<unsigned char*>(s.allocs[t.index]);
  }
  const ModelReg& r = m.regs[m.RegAt(t.index, t.offset)];
  *delta = t.offset - r.offset;
  return s.bufs[t.index] + r.offset;
}

struct DevicePointer : PinnedCommand {
  Target t;
  explicit DevicePointer(const ApiModel& m) : t(PickTarget(m)) {}
  void checkPreconditions(const ApiModel& m) const override { RC_PRE(TargetValid(m, t)); }
  void apply(ApiModel&) const override {}
  void run(const ApiModel& m, PinnedSut& s) const override {
    ++s.run.steps;
    void* dev = nullptr;
    const cudaError_t e = s.api->HostGetDevicePointer(&dev, TargetPtr(s, t));
    const bool pinned = t.is_alloc || m.RegAt(t.index, t.offset) >= 0;
    if (!pinned && !m.rules.pageable_has_no_device_pointer) return;
    MODEL_EXPECT_EQ("HostGetDevicePointer (R51-R53)", pinned ? cudaSuccess : cudaErrorInvalidValue, e);
    if (!pinned) return;
    size_t delta = 0;
    unsigned char* base = AliasBase(m, s, t, &delta);
    void* base_dev = nullptr;
    MODEL_EXPECT_EQ("HostGetDevicePointer of the base", cudaSuccess, s.api->HostGetDevicePointer(&base_dev, base));
    MODEL_EXPECT_EQ("device alias of an interior pointer is base alias + offset (R53)",
                    static_cast<const void*>(static_cast<unsigned char*>(base_dev) + delta), static_cast<const void*>(dev));
    if (t.is_alloc && !(m.allocs[t.index].flags & cudaHostAllocWriteCombined)) {
      MODEL_EXPECT_EQ("non-WC pinned memory: device alias = host pointer (R14, R51)",
                      static_cast<const void*>(TargetPtr(s, t)), static_cast<const void*>(dev));
    }
  }
  void show(std::ostream& os) const override {
    os << "r = cudaHostGetDevicePointer(&d, " << TargetText(t) << ", 0);";
  }
};

struct GetFlags : PinnedCommand {
  Target t;
  explicit GetFlags(const ApiModel& m) : t(PickTarget(m)) {
    if (t.is_alloc) t.offset = 0;
  }
  void checkPreconditions(const ApiModel& m) const override { RC_PRE(TargetValid(m, t)); }
  void apply(ApiModel&) const override {}
  void run(const ApiModel& m, PinnedSut& s) const override {
    ++s.run.steps;
    unsigned flags = 0xdeadbeef;
    const cudaError_t e = s.api->HostGetFlags(&flags, TargetPtr(s, t));
    if (!t.is_alloc && m.RegAt(t.index, t.offset) >= 0) {
      // R58: registered memory has no cudaHostAlloc flags. r580 answers cudaSuccess
      // (docs/platforms/driver-r580.md#r58): excused and counted where the expectations name it.
      if (e == cudaSuccess && m.rules.excuse_r58) {
        ++s.run.excused_r58;
        return;
      }
      MODEL_EXPECT_EQ("HostGetFlags on registered memory fails (R58)", cudaErrorInvalidValue, e);
      return;
    }
    MODEL_EXPECT_EQ("HostGetFlags (R56)", t.is_alloc ? cudaSuccess : cudaErrorInvalidValue, e);
    if (!t.is_alloc) return;
    // R56/R57: every requested bit, and Portable exactly (the implicit extra bit is Mapped; a
    // Portable bit that was not asked for is another allocation's). r580 reports the Portable bit
    // of the allocation that opened a shared pinned chunk (docs/platforms/driver-r580.md#r56-portable):
    // where the expectations name it, that bit is left out of the check and counted.
    const unsigned asked = m.allocs[t.index].flags, portable = cudaHostAllocPortable;
    if (m.rules.excuse_r56_portable) {
      if ((flags & portable) != (asked & portable)) ++s.run.excused_r56_portable;
      const unsigned want = asked & ~portable;
      MODEL_EXPECT_EQ("HostGetFlags returns at least the requested bits (R56)", want, flags & want);
      return;
    }
    MODEL_EXPECT_EQ("HostGetFlags returns at least the requested bits (R56)", asked, flags & asked);
    MODEL_EXPECT_EQ("HostGetFlags reports Portable exactly as requested (R56)", asked & portable, flags & portable);
  }
  void show(std::ostream& os) const override {
    os << "r = cudaHostGetFlags(&f, " << TargetText(t) << ");";
  }
};

struct Attributes : PinnedCommand {
  Target t;
  explicit Attributes(const ApiModel& m) : t(PickTarget(m)) {}
  void checkPreconditions(const ApiModel& m) const override { RC_PRE(TargetValid(m, t)); }
  void apply(ApiModel&) const override {}
  void run(const ApiModel& m, PinnedSut& s) const override {
    ++s.run.steps;
    cudaPointerAttributes a{};
    unsigned char* p = TargetPtr(s, t);
    MODEL_EXPECT_EQ("PointerGetAttributes (R71, R72)", cudaSuccess, s.api->PointerGetAttributes(&a, p));
    const bool pinned = t.is_alloc || m.RegAt(t.index, t.offset) >= 0;
    MODEL_EXPECT_EQ("attribute type is Host for pinned memory, Unregistered otherwise (R71, R72)",
                    static_cast<int>(pinned ? cudaMemoryTypeHost : cudaMemoryTypeUnregistered),
                    static_cast<int>(a.type));
    if (!pinned) return;
    void* dev = nullptr;
    MODEL_EXPECT_EQ("HostGetDevicePointer", cudaSuccess, s.api->HostGetDevicePointer(&dev, p));
    MODEL_EXPECT_EQ("attributes' devicePointer = cudaHostGetDevicePointer (R72)",
                    static_cast<const void*>(dev), static_cast<const void*>(a.devicePointer));
    if (t.is_alloc) {
      MODEL_EXPECT_EQ("attributes' hostPointer (R72)", static_cast<const void*>(p),
                      static_cast<const void*>(a.hostPointer));
      MODEL_EXPECT_EQ("attributes' device (R72)", 0, a.device);
    }
  }
  void show(std::ostream& os) const override {
    os << "r = cudaPointerGetAttributes(&a, " << TargetText(t) << ");";
  }
};

// A window of pinned memory (an allocation or a registration) and a pattern seed.
struct PinnedWindow {
  Target t;
  size_t length;
  uint32_t seed;
};
PinnedWindow PickPinnedWindow(const ApiModel& m) {
  const bool alloc = m.AnyLiveAlloc() && (m.regs.empty() || *rc::gen::arbitrary<bool>());
  if (alloc) {
    const int i = PickLiveAlloc(m);
    const size_t off = *rc::gen::inRange<size_t>(0, m.allocs[i].size);
    return {{true, i, off}, *rc::gen::inRange<size_t>(1, std::min<size_t>(m.allocs[i].size - off, 65536) + 1),
            *rc::gen::arbitrary<uint32_t>()};
  }
  RC_PRE(!m.regs.empty());
  const ModelReg& r = *rc::gen::elementOf(m.regs);
  const size_t off = *rc::gen::inRange<size_t>(r.offset, r.offset + r.length);
  return {{false, r.buffer, off}, *rc::gen::inRange<size_t>(1, r.offset + r.length - off + 1),
          *rc::gen::arbitrary<uint32_t>()};
}
bool WindowValid(const ApiModel& m, const PinnedWindow& w) {
  if (!TargetValid(m, w.t)) return false;
  if (w.t.is_alloc) return w.t.offset + w.length <= m.allocs[w.t.index].size;
  const int r = m.RegAt(w.t.index, w.t.offset);
  return r >= 0 && w.t.offset + w.length <= m.regs[r].offset + m.regs[r].length;
}

struct KernelRoundTrip : PinnedCommand {
  PinnedWindow w;
  explicit KernelRoundTrip(const ApiModel& m) : w(PickPinnedWindow(m)) {}
  void checkPreconditions(const ApiModel& m) const override { RC_PRE(WindowValid(m, w)); }
  void apply(ApiModel&) const override {}
  void run(const ApiModel&, PinnedSut& s) const override {
    ++s.run.steps;
    unsigned char* p = TargetPtr(s, w.t);
    void* dev = nullptr;
    MODEL_EXPECT_EQ("HostGetDevicePointer", cudaSuccess, s.api->HostGetDevicePointer(&dev, p));
    HostFillPattern(p, w.length, w.seed);
    unsigned long long bad = ~0ull;
    MODEL_EXPECT_EQ("kernel round trip", cudaSuccess, s.api->DeviceRoundTrip(dev, w.length, w.seed, &bad));
    MODEL_EXPECT_EQ("bytes the kernel read differently from the host's (R77)", uint64_t{0}, uint64_t{bad});
    MODEL_EXPECT_EQ("bytes the host read differently from the kernel's (R77)", uint64_t{0},
                    uint64_t{HostCountPatternMismatches(p, w.length, ~w.seed)});
  }
  void show(std::ostream& os) const override {
    os << "RoundTripThroughDevicePointer(" << TargetText(w.t) << ", " << w.length << ", " << w.seed << "u);";
  }
};

struct AsyncCopy : PinnedCommand {
  PinnedWindow w;
  explicit AsyncCopy(const ApiModel& m) : w(PickPinnedWindow(m)) {}
  void checkPreconditions(const ApiModel& m) const override { RC_PRE(WindowValid(m, w)); }
  void apply(ApiModel&) const override {}
  void run(const ApiModel&, PinnedSut& s) const override {
    ++s.run.steps;
    size_t bad = ~size_t{0};
    MODEL_EXPECT_EQ("async copy round trip", cudaSuccess,
                    s.api->AsyncCopyRoundTrip(TargetPtr(s, w.t), w.length, w.seed, &bad));
    MODEL_EXPECT_EQ("bytes an async copy did not bring back (R76)", uint64_t{0}, uint64_t{bad});
  }
  void show(std::ostream& os) const override {
    os << "AsyncCopyRoundTrip(" << TargetText(w.t) << ", " << w.length << ", " << w.seed << "u);";
  }
};

}  // namespace

ModelRun RunPinnedApiStateMachine(PinnedApi& api, const ModelRules& rules) {
  PinnedSut sut(&api);
  ApiModel initial;
  initial.rules = rules;
  rc::state::check(initial, sut,
                   rc::state::gen::execOneOfWithArgs<NewBuffer, HostAlloc, FreeHost, Register, Register,
                                                     Unregister, DevicePointer, GetFlags, Attributes,
                                                     KernelRoundTrip, AsyncCopy>());
  return sut.run;
}

}  // namespace pagelock
