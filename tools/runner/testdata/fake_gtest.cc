// A test binary for testing the runner and the report: it passes, fails, crashes, hangs or has
// a child scenario crash, as PAGELOCK_FAKE_MODE (a comma-separated list) asks.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "fixtures/child_process.h"

namespace {

bool Mode(const char* m) {
  const char* v = std::getenv("PAGELOCK_FAKE_MODE");
  return v && (std::string(",") + v + ",").find(std::string(",") + m + ",") != std::string::npos;
}

TEST(FakeTest, Passes) { SUCCEED(); }

TEST(FakeTest, FailsWhenAsked) {
  if (Mode("fail")) ADD_FAILURE() << "deliberate failure <with> \"markup\" & such";
}

TEST(FakeTest, SkipsAsNotSupported) { GTEST_SKIP() << "NotSupported: cudaDevAttrFake=0 (need 1)"; }

TEST(FakeTest, CrashesWhenAsked) {
  if (Mode("crash")) raise(SIGSEGV);
}

TEST(FakeTest, HangsWhenAsked) {
  if (Mode("hang")) {
    for (int i = 0; i < 600; ++i) sleep(1);
  }
}

PAGELOCK_SCENARIO(FakeChild) {
  report.Set("started", "1");
  if (Mode("crash_child")) raise(SIGABRT);
}

TEST(FakeTest, ChildScenarioCompletes) {
  pagelock::ChildResult r = pagelock::RunScenario("FakeChild", 30);
  ASSERT_CHILD_COMPLETED(r);
  EXPECT_EQ(r.Get("started"), "1");
}

// Fails the first time it runs with a given PAGELOCK_FAKE_FLAKY_FILE, passes after. With
// flaky_late: fails the first two times, each time with another message, passes the third.
TEST(FakeTest, FlakyWhenAsked) {
  const char* marker = std::getenv("PAGELOCK_FAKE_FLAKY_FILE");
  if (!(Mode("flaky") || Mode("flaky_late")) || !marker) return;
  long runs = 0;
  if (FILE* f = fopen(marker, "r")) {
    runs = std::fseek(f, 0, SEEK_END) == 0 ? std::ftell(f) : 0;
    fclose(f);
  }
  if (FILE* f = fopen(marker, "a")) {
    std::fputc('x', f);
    fclose(f);
  }
  if (runs < (Mode("flaky_late") ? 2 : 1)) ADD_FAILURE() << "attempt " << runs + 1 << " fails";
}

TEST(FakeTest, PassesAfterTheOthers) { SUCCEED(); }

}  // namespace
