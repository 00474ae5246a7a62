"""qualify end to end against a bundle of the deliberately failing fake binary: every exit
code, retries and flakes, the run directory, history, and the report in headless Chromium."""

import contextlib
import glob
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from reports import compare_runs
from tools import qualify
from tools.runner import runner_test


class QualifyTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.bundle = os.path.join(self.tmp, "bundle")
        os.makedirs(self.bundle)
        shutil.copy(runner_test.fake_binary(), os.path.join(self.bundle, "fake_gtest"))
        with open(os.path.join(self.bundle, "manifest.json"), "w") as f:
            json.dump({"info": {"commit": "test"}, "targets": [{
                "label": "//selftest:fake_gtest", "path": "fake_gtest", "timeout_s": 20,
                "tags": ["gpu", "tier_bat"]}]}, f)
        self.exp = os.path.join(self.tmp, "expectations")
        os.makedirs(self.exp)
        self.out = os.path.join(self.tmp, "runs")
        os.environ.pop("PAGELOCK_FAKE_MODE", None)

    def qualify(self, *extra, mode=""):
        os.environ["PAGELOCK_FAKE_MODE"] = mode
        os.environ["PAGELOCK_FAKE_FLAKY_FILE"] = os.path.join(self.tmp, "flaky_marker")
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = qualify.main(["--bundle", self.bundle, "--out", self.out, "--expectations", self.exp,
                               "--allow-no-gpu", *extra])
        self.output = buf.getvalue()
        return rc

    def last_run(self):
        runs = sorted(d for d in glob.glob(os.path.join(self.out, "*")) if os.path.isdir(d))
        with open(os.path.join(runs[-1], "results.json")) as f:
            return runs[-1], json.load(f)

    def expect(self, text):
        with open(os.path.join(self.exp, "none.txt"), "w") as f:
            f.write(text)

    def test_without_a_gpu_it_is_an_infrastructure_error(self):
        fp = json.loads(subprocess.run([os.path.join(self.bundle, "fake_gtest"), "--pagelock_fingerprint"],
                                       capture_output=True, text=True).stdout)
        if fp["device_status"] == "usable":
            self.skipTest("this machine has a GPU")
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = qualify.main(["--bundle", self.bundle, "--out", self.out])
        self.assertEqual(rc, 1)
        self.assertIn("no usable GPU on this machine (cudaGetDeviceCount=", buf.getvalue())
        self.assertFalse(os.path.exists(self.out) and os.listdir(self.out))

    def test_clean_run_qualifies_and_writes_the_run_directory(self):
        self.assertEqual(self.qualify(), 0, self.output)
        run_dir, res = self.last_run()
        for name in ("results.json", "index.html", "failures.csv", "testlogs/selftest/fake_gtest/test.xml"):
            self.assertTrue(os.path.exists(os.path.join(run_dir, name)), name)
        self.assertEqual(res["info"]["verdict"], "QUALIFIED")
        self.assertIn("verdict: QUALIFIED (exit 0)", self.output)
        self.assertTrue(os.path.exists(os.path.join(self.out, "history.sqlite")))

    def test_failures_are_retried_and_regressions_exit_three(self):
        self.assertEqual(self.qualify("--retries", "2", mode="fail,crash"), 3, self.output)
        _, res = self.last_run()
        by = {c["name"]: c for c in res["run"]["cases"]}
        self.assertEqual(by["CrashesWhenAsked"]["properties"]["attempts"], "CRASH CRASH CRASH")
        self.assertEqual(res["comparison"]["selftest:fake_gtest/FakeTest.FailsWhenAsked"], "REGRESSION")

    def test_a_flake_is_visible_and_asks_for_an_update(self):
        self.assertEqual(self.qualify(mode="flaky"), 5, self.output)
        _, res = self.last_run()
        by = {c["name"]: c for c in res["run"]["cases"]}
        self.assertEqual(by["FlakyWhenAsked"]["status"], "PASS")
        self.assertEqual(by["FlakyWhenAsked"]["properties"]["attempts"], "FAIL PASS")
        self.assertEqual(res["comparison"]["selftest:fake_gtest/FakeTest.FlakyWhenAsked"], "FLAKE")

    def test_known_failure_qualifies_and_goes_stale_when_fixed(self):
        self.expect("fail selftest:fake_gtest/FakeTest.FailsWhenAsked status=FAIL bug=https://bugs/1  # known\n")
        self.assertEqual(self.qualify(mode="fail"), 0, self.output)
        self.assertEqual(self.qualify(), 5, self.output)
        self.assertIn("stale expectation", self.output)
        _, res = self.last_run()
        self.assertEqual(res["comparison"]["selftest:fake_gtest/FakeTest.FailsWhenAsked"], "UNEXPECTED_PASS")

    def test_baseline_comparison_shows_fixed_cases(self):
        self.assertEqual(self.qualify(mode="fail"), 3)
        self.assertEqual(self.qualify(), 0, self.output)
        _, res = self.last_run()
        self.assertEqual(res["comparison"]["selftest:fake_gtest/FakeTest.FailsWhenAsked"], "FIXED")

    def test_skip_expectation_keeps_a_hanging_case_from_running(self):
        self.expect("skip selftest:fake_gtest/FakeTest.HangsWhenAsked  # hangs this machine\n")
        self.assertEqual(self.qualify(mode="hang"), 0, self.output)
        _, res = self.last_run()
        self.assertNotIn("HangsWhenAsked", [c["name"] for c in res["run"]["cases"]])

    def test_broken_expectations_exit_two_and_name_the_line(self):
        self.expect("fail ok bug=u\nflaky x bug=u\n")
        self.assertEqual(self.qualify(), 2)
        self.assertIn("none.txt:2: unknown kind 'flaky'", self.output)

    def test_bad_bundle_and_bad_arguments_exit_two(self):
        with open(os.path.join(self.bundle, "manifest.json"), "w") as f:
            f.write("{not json")
        self.assertEqual(self.qualify(), 2)
        self.assertEqual(self.qualify("--retries", "-1"), 2)

    def test_empty_tier_exits_four(self):
        with open(os.path.join(self.bundle, "manifest.json")) as f:
            m = json.load(f)
        m["targets"][0]["tags"] = ["gpu", "tier_stress", "stress"]
        with open(os.path.join(self.bundle, "manifest.json"), "w") as f:
            json.dump(m, f)
        self.assertEqual(self.qualify("--tier", "bat"), 4, self.output)

    def test_two_runs_side_by_side(self):
        self.qualify(mode="fail")
        self.qualify()
        runs = sorted(d for d in glob.glob(os.path.join(self.out, "*")) if os.path.isdir(d))
        html = os.path.join(self.tmp, "cmp.html")
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertEqual(compare_runs.main(runs[-2:] + ["--html", html]), 0)
        self.assertIn("1 case(s) differ", out.getvalue())
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(compare_runs.main([runs[-1], "--html", html]), 2)


class BrowserTest(unittest.TestCase):
    """Opens a generated report in headless Chromium: no console errors, the filters work."""

    def test_report_filters_work_without_console_errors(self):
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            if os.environ.get("PAGELOCK_BROWSER_TEST", "1") == "0":
                self.skipTest("PAGELOCK_BROWSER_TEST=0")
            self.fail("chromium not found: install Debian's chromium (tools/install_deps.sh does)")
        q = QualifyTest("test_clean_run_qualifies_and_writes_the_run_directory")
        q.setUp()
        q.expect("fail selftest:fake_gtest/FakeTest.CrashesWhenAsked status=CRASH bug=https://bugs/2\n")
        q.qualify(mode="fail,crash")
        run_dir, res = q.last_run()
        page = os.path.join(run_dir, "index.html")
        outdir = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", q.tmp)
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--enable-logging=stderr", "--v=0", f"--user-data-dir={q.tmp}/chrome-profile"]
        dom = subprocess.run([chromium, *flags, "--dump-dom", f"file://{page}#selftest"],
                             capture_output=True, text=True, timeout=120)
        console = [l for l in dom.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
        self.assertEqual(console, [], "console output from the report")
        m = re.search(r'<pre id="selftest">(.*?)</pre>', dom.stdout, re.S)
        self.assertIsNotNone(m, "the report's self-test did not run:\n" + dom.stdout[-2000:])
        seen = json.loads(m.group(1).replace("&quot;", '"'))
        cases = res["run"]["cases"]
        self.assertEqual(seen["total"], len(cases))
        self.assertEqual(seen["filters"]["FAIL"], sum(c["status"] == "FAIL" for c in cases))
        self.assertEqual(seen["filters"]["PASS"], sum(c["status"] == "PASS" for c in cases))
        self.assertEqual(seen["filters"]["EXPECTED_FAIL"], 1)
        self.assertGreaterEqual(seen["search"]["shown"], 1)
        self.assertLess(seen["search"]["shown"], len(cases))
        self.assertEqual(seen["after_clear"], len(cases))
        shot = os.path.join(outdir, "report.png")
        subprocess.run([chromium, *flags, "--window-size=1400,1600", f"--screenshot={shot}", f"file://{page}"],
                       capture_output=True, timeout=120)
        self.assertTrue(os.path.getsize(shot) > 10000, "screenshot missing")


if __name__ == "__main__":
    unittest.main()
