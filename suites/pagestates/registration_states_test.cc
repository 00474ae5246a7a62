// cudaHostRegister of private anonymous memory whatever state its pages are in (V02): never
// touched, the zero page or the huge zero page, swapped out or in the swap cache, a PTE-mapped
// THP, a THP partly discarded (MADV_DONTNEED) or partly moved (mremap), and pages first-touched
// by other threads before the call (PyTorch's prefault-then-register) or during it. The range is
// ordinary private anonymous read-write memory, which the kernel can always long-term pin
// ("R/O pinning or pinning in a private mapping is always expected to work", the kernel's
// gup_longterm selftest), so the registration must succeed; then every page is resident, the
// device reads what the process holds, the host reads what the device writes, the device reads
// the host's later writes, and unregistering returns the pins. The kernel's cow.c selftest runs
// its pins over the same states (run_with_base_page_swap, run_with_pte_mapped_thp,
// run_with_partial_mremap_thp, ...). Faults that fail these: a driver that pins the swap-cache
// page without making it exclusive (a later COW gives the process another page), one that walks
// the page table itself and mishandles swap entries or PTE-mapped large folios (wrong page for
// a subpage), one that pins the zero page for a writable registration, one that returns an
// error for a state it does not expect. Rule ids refer to suites/rules.tsv.

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/mapping.h"
#include "fixtures/page_state.h"
#include "fixtures/resources.h"
#include "fixtures/time_scale.h"
#include "kernels/pattern.h"
#include "suites/pagestates/pagestates.h"

namespace pagelock {
namespace pagestates {
namespace {

using pages::PageState;
using pages::PageStateRegion;

#ifdef PAGELOCK_STRESS_TIER
constexpr int kRaceRounds = 24;
constexpr size_t kRaceBytes = size_t{64} << 20;
#else
constexpr int kRaceRounds = 2;
constexpr size_t kRaceBytes = size_t{8} << 20;
#endif
constexpr int kThreads = 4;

// Pages of [p, p + n) the page table maps (pagemap present bit), or -1 when it cannot be read.
long long PresentPages(const void* p, size_t n) {
  std::vector<pages::PageMapEntry> pm;
  std::string why;
  if (!pages::ReadPageMap(p, n, &pm, &why)) return -1;
  long long k = 0;
  for (const auto& e : pm) k += e.present;
  return k;
}

class RegistrationStateTest : public PageStatesTest, public ::testing::WithParamInterface<PageState> {};

TEST_P(RegistrationStateTest, RegisteringPagesInThisStateHoldsEveryByteBothWays) {
  PAGELOCK_RULE("V02");
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  auto r = PageStateRegion::Make(GetParam(), size_t{1} << 20, seed);
  if (!r->data()) PAGELOCK_NOT_SUPPORTED(r->unavailable());
  ObserveState(*r);
  const std::string what = pages::PageStateName(GetParam());
  PinWatch pins;
  // "cudaHostRegister: Page-locks the memory range specified by ptr and size": private
  // anonymous memory, pinnable in any of these states.
  ASSERT_CUDA_OK(cudaHostRegister(r->data(), r->size(), cudaHostRegisterMapped))
      << "registering " << r->size() << " bytes of " << what << " pages";
  auto reg = HostRegistration::Adopt(r->data(), r->size());
  // Page-locked memory is resident: every page mapped (a swap entry or a hole left behind means
  // the pin took pages the process does not map).
  const long long present = PresentPages(r->data(), r->size());
  if (present >= 0) {
    EXPECT_EQ(present, static_cast<long long>(r->size() / PageSize()))
        << "pages of the registered range the page table does not map (pagemap present bit)";
  }
  ExpectCoherent(CheckBothWays(r->data(), r->size(), r->content(), seed, true), what);
  EXPECT_CUDA_OK(reg.Free());
  EXPECT_EQ(HostCountPatternMismatches(r->data(), r->size(), FinalSeed(seed)), 0u)
      << "the host's bytes changed when the registration ended";
  pins.ExpectReturned("the registration of " + what + " pages ended");
}

// The R/W registrations of the zero pages are in the stress build (their R/O forms, the silent
// failure, are full-tier cases of read_only_pins_test).
INSTANTIATE_TEST_SUITE_P(
    EachState, RegistrationStateTest,
    ::testing::Values(PageState::kNeverTouched, PageState::kSwappedOut, PageState::kSwapCache,
                      PageState::kPteMappedThp, PageState::kPartiallyUnmappedThp,
                      PageState::kPartiallyMremappedThp
#ifdef PAGELOCK_STRESS_TIER
                      , PageState::kZeroPage, PageState::kHugeZeroPage
#endif
                      ),
    [](const ::testing::TestParamInfo<PageState>& i) { return pages::PageStateName(i.param); });

// Thread t's slice of [0, n): contiguous, page-aligned, as PyTorch's caching host allocator
// splits the prefault among pinned_num_register_threads.
void Slice(size_t n, int t, size_t* begin, size_t* end) {
  const size_t pages = n / PageSize();
  *begin = pages * t / kThreads * PageSize();
  *end = pages * (t + 1) / kThreads * PageSize();
}

#ifdef PAGELOCK_STRESS_TIER
// PyTorch's pinned_use_cuda_host_register path: threads first-touch (write) their slices, then
// one cudaHostRegister of the whole. The registration pins the pages the threads faulted in.
TEST_F(PageStatesTest, PagesPrefaultedByThreadsThenRegisteredHoldEveryThreadsBytes) {
  PAGELOCK_RULE("V02");
  const uint32_t seed = static_cast<uint32_t>(CaseSeed());
  Mapping m(kRaceBytes);
  ASSERT_NE(m.data(), nullptr) << m.error();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      size_t b, e;
      Slice(m.size(), t, &b, &e);
      for (size_t i = b; i < e; ++i) m.data()[i] = PatternByte(i, seed);
    });
  }
  for (auto& th : threads) th.join();
  PinWatch pins;
  ASSERT_CUDA_OK(cudaHostRegister(m.data(), m.size(), cudaHostRegisterMapped));
  auto reg = HostRegistration::Adopt(m.data(), m.size());
  ExpectCoherent(CheckBothWays(m.data(), m.size(), Pattern(seed), seed, true), "pages prefaulted by threads");
  EXPECT_CUDA_OK(reg.Free());
  pins.ExpectReturned("the registration of thread-prefaulted pages ended");
}
#endif  // PAGELOCK_STRESS_TIER

// The registration races the first touch: threads fault their slices in (writing the pattern,
// or only reading, which maps the zero page) while cudaHostRegister pins the same range. The
// kernel serialises each fault with the pin of that page; whichever comes first, the page the
// device reads must be the one the process maps. A driver that pins what a read fault mapped
// (the zero page) or a page a racing write fault then replaces reads stale bytes.
class FirstTouchRaceTest : public PageStatesTest, public ::testing::WithParamInterface<bool> {};

TEST_P(FirstTouchRaceTest, RegistrationRacingFirstTouchFaultsHoldsEveryByte) {
  PAGELOCK_RULE("V02");
  const bool threads_write = GetParam();
  Budget("race_rounds_count", kRaceRounds, "count");
  Budget("race_MiB", static_cast<double>(kRaceBytes >> 20), "MiB");
  for (int round = 0; round < kRaceRounds && !HasFailure(); ++round) {
    const uint32_t seed = static_cast<uint32_t>(CaseRng()());
    Mapping m(kRaceBytes);
    ASSERT_NE(m.data(), nullptr) << m.error();
    PinWatch pins;
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::atomic<unsigned long long> read_sum{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        size_t b, e;
        Slice(m.size(), t, &b, &e);
        ++ready;
        const auto limit = std::chrono::steady_clock::now() + std::chrono::duration<double>(10 * TimeScale());
        while (!go.load() && std::chrono::steady_clock::now() < limit) {
        }
        unsigned long long sum = 0;
        for (size_t i = b; i < e; i += (threads_write ? 1 : PageSize())) {
          if (threads_write) {
            m.data()[i] = PatternByte(i, seed);
          } else {
            sum += static_cast<const volatile unsigned char*>(m.data())[i];
          }
        }
        read_sum += sum;
      });
    }
    const auto limit = std::chrono::steady_clock::now() + std::chrono::duration<double>(10 * TimeScale());
    while (ready.load() < kThreads && std::chrono::steady_clock::now() < limit) {
    }
    go = true;
    const cudaError_t e = cudaHostRegister(m.data(), m.size(), cudaHostRegisterMapped);
    for (auto& th : threads) th.join();
    ASSERT_CUDA_OK(e) << "round " << round << ": registering a range other threads are first-touching";
    auto reg = HostRegistration::Adopt(m.data(), m.size());
    EXPECT_EQ(read_sum.load(), 0u) << "never-written memory read non-zero";
    const pages::PageContent now = threads_write ? Pattern(seed) : pages::PageContent{};
    ExpectCoherent(CheckBothWays(m.data(), m.size(), now, seed, true), "round " + std::to_string(round));
    EXPECT_CUDA_OK(reg.Free());
    pins.ExpectReturned("round " + std::to_string(round) + "'s registration ended");
  }
}

INSTANTIATE_TEST_SUITE_P(ThreadsWriteOrRead, FirstTouchRaceTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "threads_write" : "threads_read");
                         });

}  // namespace
}  // namespace pagestates
}  // namespace pagelock
