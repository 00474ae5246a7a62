"""The bundle runner against a real GoogleTest binary that passes, fails, crashes and hangs."""

import contextlib
import io
import json
import os
import tempfile
import time
import unittest

from reports import results as model
from tools.runner import runner


def fake_binary():
    base = os.environ.get("TEST_SRCDIR", "")
    for cand in [os.path.join(base, "pagelock", "tools", "runner", "fake_gtest"),
                 os.path.join(os.path.dirname(__file__), "fake_gtest")]:
        if os.path.exists(cand):
            return cand
    raise unittest.SkipTest("fake_gtest binary not found (run under bazel test)")


class RunnerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.bundle = os.path.join(self.tmp, "bundle")
        os.makedirs(self.bundle)
        self.write_manifest(timeout_s=30)
        os.environ.pop("PAGELOCK_FAKE_MODE", None)

    def write_manifest(self, timeout_s, manifest=None):
        manifest = manifest or {"info": {"commit": "test"}, "targets": [{
            "label": "//selftest:fake_gtest", "path": fake_binary(), "timeout_s": timeout_s,
            "tags": ["selftest"]}]}
        with open(os.path.join(self.bundle, "manifest.json"), "w") as f:
            f.write(manifest if isinstance(manifest, str) else json.dumps(manifest))

    def run_runner(self, mode, *extra):
        os.environ["PAGELOCK_FAKE_MODE"] = mode
        out = os.path.join(self.tmp, "out_" + (mode.replace(",", "_") or "clean"))
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = runner.main(["--bundle", self.bundle, "--out", out, "--tags", "", *extra])
        self.output = buf.getvalue()
        run = model.load_testlogs(out)
        return rc, {c.gtest_name: c for c in run.cases}, out

    def test_clean_run_reports_every_case_and_exits_zero(self):
        rc, cases, out = self.run_runner("")
        self.assertEqual(rc, 0, self.output)
        self.assertEqual(len(cases), 8)
        self.assertEqual(cases["FakeTest.SkipsAsNotSupported"].status, "NOT_SUPPORTED")
        self.assertEqual(cases["FakeTest.SkipsAsNotSupported"].reason, "cudaDevAttrFake=0 (need 1)")
        self.assertEqual(cases["FakeTest.PassesAfterTheOthers"].status, "PASS")
        self.assertTrue(os.path.exists(os.path.join(out, "selftest", "fake_gtest", "test.log")))
        self.assertIn("7 passed, 0 failed, 1 skipped", self.output)

    def test_crash_is_blamed_on_the_running_case_and_no_other_case_is_lost(self):
        rc, cases, _ = self.run_runner("crash")
        self.assertEqual(rc, 1)
        self.assertEqual(len(cases), 8)
        crashed = cases["FakeTest.CrashesWhenAsked"]
        self.assertEqual(crashed.status, "CRASH")
        self.assertIn("SIGSEGV", crashed.message)
        self.assertEqual(cases["FakeTest.Passes"].status, "PASS")
        self.assertEqual(cases["FakeTest.HangsWhenAsked"].status, "PASS")
        self.assertEqual(cases["FakeTest.PassesAfterTheOthers"].status, "PASS")

    def test_hang_is_killed_at_the_limit_and_reported_as_timeout(self):
        self.write_manifest(timeout_s=3)
        start = time.monotonic()
        rc, cases, _ = self.run_runner("hang")
        self.assertLess(time.monotonic() - start, 60)
        self.assertEqual(rc, 1)
        self.assertEqual(cases["FakeTest.HangsWhenAsked"].status, "TIMEOUT")
        self.assertEqual(cases["FakeTest.PassesAfterTheOthers"].status, "PASS")
        self.assertEqual(cases["FakeTest.ChildScenarioCompletes"].status, "PASS")
        self.assertEqual(len(cases), 8)

    def test_crash_and_hang_in_one_binary_both_attributed(self):
        self.write_manifest(timeout_s=3)
        rc, cases, _ = self.run_runner("crash,hang")
        self.assertEqual(cases["FakeTest.CrashesWhenAsked"].status, "CRASH")
        self.assertEqual(cases["FakeTest.HangsWhenAsked"].status, "TIMEOUT")
        self.assertEqual(cases["FakeTest.PassesAfterTheOthers"].status, "PASS")

    def test_crashing_child_scenario_is_a_crash_of_its_case(self):
        rc, cases, _ = self.run_runner("crash_child")
        self.assertEqual(rc, 1)
        c = cases["FakeTest.ChildScenarioCompletes"]
        self.assertEqual(c.status, "CRASH")
        self.assertIn("SIGABRT", c.message)
        self.assertEqual(cases["FakeTest.PassesAfterTheOthers"].status, "PASS")

    def test_failure_message_is_kept(self):
        rc, cases, _ = self.run_runner("fail")
        self.assertEqual(rc, 1)
        self.assertEqual(cases["FakeTest.FailsWhenAsked"].status, "FAIL")
        self.assertIn('deliberate failure <with> "markup" & such', cases["FakeTest.FailsWhenAsked"].message)

    def test_restart_budget_exhausted_leaves_missing_cases(self):
        rc, cases, _ = self.run_runner("crash", "--max-restarts", "0")
        self.assertEqual(cases["FakeTest.CrashesWhenAsked"].status, "CRASH")
        self.assertEqual(cases["FakeTest.PassesAfterTheOthers"].status, "MISSING")

    def test_malformed_manifest_exits_two_naming_the_file(self):
        self.write_manifest(0, manifest='{"targets": [')
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf):
            rc = runner.main(["--bundle", self.bundle, "--out", os.path.join(self.tmp, "x")])
        self.assertEqual(rc, 2)
        self.assertIn("manifest.json:1: malformed JSON", buf.getvalue())

    def test_empty_selection_exits_four(self):
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf):
            rc = runner.main(["--bundle", self.bundle, "--out", os.path.join(self.tmp, "y"),
                              "--tags", "no_such_tag"])
        self.assertEqual(rc, 4)
        self.assertIn("no target matches", buf.getvalue())


if __name__ == "__main__":
    unittest.main()
