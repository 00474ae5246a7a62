// A scriptable GoogleTest binary for the runner's hostile-input tests: it ends in every way a real
// test binary can end, as its environment asks.
//
//   FAKE_CASES   "Suite.name=action+action,..." (default "A.passes,A.fails=fail,B.passes")
//   FAKE_COUNT   N more passing cases Many.case_000000 ... (large case lists), each name
//                padded with FAKE_NAME_PAD x's
//   FAKE_AT_EXIT abort | exit:N | noxml:N (exit N after the last case, before the XML) |
//                truncate_xml | doctype_xml (replace the XML by an entity bomb)
//   FAKE_CRASH_AFTER_SUITE  SIGSEGV in that suite's TearDownTestSuite (between cases)
//   FAKE_NOISE_MIB  that much output without a newline before anything else (listings too)
//
// Actions: pass fail skip notsupported crash abort hang hang_ignore_term exit:N poison out:MiB
//          badbytes grandchild grandchild_setsid seed
// `poison` is a case that leaves a sticky CUDA error: it fails and marks the context poisoned
// (fixtures/outcome.h), so its end event reaches the journal and the binary exits 75.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fixtures/journal.h"
#include "fixtures/outcome.h"
#include "fixtures/seed.h"

namespace {

std::string Env(const char* name, const char* fallback = "") {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string g_xml_path;

void Hang() {
  for (int i = 0; i < 600; ++i) sleep(1);  // bounded: the runner's limit is far shorter
}

void Do(const std::string& action) {
  if (action == "pass" || action.empty()) return;
  if (action == "fail") {
    ADD_FAILURE() << "deliberate failure <with> \"markup\" & such";
  } else if (action == "skip") {
    GTEST_SKIP() << "skipped on purpose";
  } else if (action == "notsupported") {
    PAGELOCK_NOT_SUPPORTED("cudaDevAttrFake=0 (need 1)");
  } else if (action == "crash") {
    raise(SIGSEGV);
  } else if (action == "abort") {
    std::abort();
  } else if (action == "hang") {
    Hang();
  } else if (action == "hang_ignore_term") {
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    Hang();
  } else if (action.rfind("exit:", 0) == 0) {
    std::fflush(nullptr);
    _exit(std::atoi(action.c_str() + 5));
  } else if (action == "poison") {
    ADD_FAILURE() << "cudaErrorIllegalAddress left the context unusable";
    pagelock::MarkPoisoned();
  } else if (action.rfind("out:", 0) == 0) {
    std::string line(1023, 'x');
    line += '\n';
    long lines = std::atol(action.c_str() + 4) * 1024L;
    for (long i = 0; i < lines; ++i) std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  } else if (action == "badbytes") {
    // What the system GoogleTest does with non-UTF-8 text: raw bytes >= 0x80 in its XML.
    ::testing::Test::RecordProperty("fake.bytes", "caf\xe9 \xff\xfe end");
    ADD_FAILURE() << "bad bytes \xc3\x28 \xff in the message";
  } else if (action == "grandchild" || action == "grandchild_setsid") {
    pid_t pid = fork();
    if (pid == 0) {
      if (action == "grandchild_setsid") setsid();
      // Keeps stdout (the runner's pipe) open and outlives the test binary.
      for (int i = 0; i < 300; ++i) sleep(1);
      _exit(0);
    }
    ::testing::Test::RecordProperty("fake.grandchild_pid", std::to_string(pid));
  } else if (action == "seed") {
    ::testing::Test::RecordProperty("fake.seed", Env("PAGELOCK_SEED", "unset"));
  } else {
    ADD_FAILURE() << "hostile_gtest: unknown action " << action;
  }
}

class FakeCase : public ::testing::Test {
 public:
  explicit FakeCase(std::string actions) : actions_(std::move(actions)) {}
  void TestBody() override {
    for (const std::string& a : Split(actions_, '+')) Do(a);
  }
  static void TearDownTestSuite() {
    const ::testing::TestSuite* s = ::testing::UnitTest::GetInstance()->current_test_suite();
    if (s && Env("FAKE_CRASH_AFTER_SUITE") == s->name()) raise(SIGSEGV);
  }

 private:
  std::string actions_;
};

void Register(const std::string& suite, const std::string& name, const std::string& actions) {
  ::testing::RegisterTest(suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [actions]() -> FakeCase* { return new FakeCase(actions); });
}

class NoXmlEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    std::string a = Env("FAKE_AT_EXIT");
    if (a.rfind("noxml:", 0) == 0) {
      std::fflush(nullptr);
      _exit(std::atoi(a.c_str() + 6));
    }
  }
};

void AtExit() {
  std::string a = Env("FAKE_AT_EXIT");
  if (a == "abort") std::abort();
  if (a.rfind("exit:", 0) == 0) _exit(std::atoi(a.c_str() + 5));
  if (a == "truncate_xml" && !g_xml_path.empty()) {
    FILE* f = std::fopen(g_xml_path.c_str(), "r+");
    if (f) {
      std::fseek(f, 0, SEEK_END);
      long size = std::ftell(f);
      std::fclose(f);
      if (truncate(g_xml_path.c_str(), size / 2) != 0) std::perror("truncate");
    }
  }
  if (a == "doctype_xml" && !g_xml_path.empty()) {
    FILE* f = std::fopen(g_xml_path.c_str(), "w");
    if (f) {
      std::fputs("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [<!ENTITY lol \"lol\">"
                 "<!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">"
                 "<!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">]>\n"
                 "<testsuites name=\"AllTests\"><testsuite name=\"A\"><testcase name=\"passes\" "
                 "classname=\"A\"><failure message=\"&lol3;\"/></testcase></testsuite>"
                 "</testsuites>\n", f);
      std::fclose(f);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--gtest_output=xml:", 19) == 0) g_xml_path = argv[i] + 19;
  }
  ::testing::InitGoogleTest(&argc, argv);
  long noise = std::atol(Env("FAKE_NOISE_MIB", "0").c_str());
  if (noise > 0) {
    std::string chunk(1 << 20, 'n');
    for (long i = 0; i < noise; ++i) std::fwrite(chunk.data(), 1, chunk.size(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);
  }
  for (const std::string& spec : Split(Env("FAKE_CASES", "A.passes,A.fails=fail,B.passes"), ',')) {
    std::string id = spec.substr(0, spec.find('='));
    std::string actions = spec.find('=') == std::string::npos ? "" : spec.substr(spec.find('=') + 1);
    size_t dot = id.find('.');
    Register(id.substr(0, dot), id.substr(dot + 1), actions);
  }
  long count = std::atol(Env("FAKE_COUNT", "0").c_str());
  // Long names make a long case list without thousands of cases (gtest matches every case
  // against every pattern of a filter).
  std::string pad(std::atol(Env("FAKE_NAME_PAD", "0").c_str()), 'x');
  for (long i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "case_%06ld", i);
    Register("Many", name + pad, "");
  }
  pagelock::InitSeed();
  pagelock::InstallJournal();  // also the exit with kExitPoisoned after a poisoned case
  ::testing::AddGlobalTestEnvironment(new NoXmlEnvironment);
  std::atexit(AtExit);
  return RUN_ALL_TESTS();
}
