"""qualify end to end against a bundle of the deliberately failing fake binary: every exit
code, retries and flakes, the run directory, history, and the report in headless Chromium."""

import contextlib
import glob
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.qualify_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import compare as cmp
from reports import compare_runs
from reports import history
from reports import model
from reports import settings
from reports import testsupport
from tools import qualify
from tools.qualification import baselines, common, verdict
from tools.runner import runner_test


# The first run into an empty --out, with no committed baseline: its first night (exit 8) where a
# run with a baseline would qualify.
FIRST = cmp.EXIT_FIRST_NIGHT


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
        runs = sorted((d for d in glob.glob(os.path.join(self.out, "*")) if os.path.isdir(d)),
                      key=lambda d: (os.path.getmtime(d), d))
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
        self.assertIn("The tests of the harness need no GPU: tools/test.sh", buf.getvalue())
        self.assertNotIn("self-tests", buf.getvalue())
        self.assertFalse(os.path.exists(self.out) and os.listdir(self.out))

    def test_clean_run_qualifies_and_writes_the_run_directory(self):
        self.assertEqual(self.qualify("--label", "nightly-1130", "--tier", "bat", "--baseline", "none"), 0,
                         self.output)
        run_dir, res = self.last_run()
        # The history row holds what the fleet report shows: label, tier, run folder, its report.
        db = history.connect(os.path.join(self.out, "history.sqlite"))
        row = db.execute("SELECT run_key, label, tier, run_dir, report, verdict FROM runs").fetchall()
        db.close()
        self.assertEqual([tuple(r) for r in row], [(res["info"]["run_key"], "nightly-1130", "bat", os.path.abspath(run_dir),
                                                    os.path.join(os.path.abspath(run_dir), "index.html"), "QUALIFIED")])
        for name in ("results.json", "index.html", "failures.csv", "results.csv", "junit.xml",
                     "expectations-update.txt", "testlogs/selftest/fake_gtest/test.xml"):
            self.assertTrue(os.path.exists(os.path.join(run_dir, name)), name)
        self.assertEqual(res["info"]["verdict"], "QUALIFIED")
        self.assertIn("verdict: QUALIFIED (exit 0)", self.output)
        self.assertTrue(os.path.exists(os.path.join(self.out, "history.sqlite")))
        # The settings it ran with: the knobs' defaults, what qualify set, what the environment set.
        s = res["info"]["settings"]
        self.assertEqual(s["PAGELOCK_TIME_SCALE"], {"value": "1.0", "source": "--time-scale", "default": "1"})
        self.assertEqual(s["PAGELOCK_SEED"]["value"], model.run_seed_of(res["run"]["fingerprint"]))
        self.assertEqual(s["PAGELOCK_BANDWIDTH_FLOOR"]["source"], "default")
        self.assertEqual(s["PAGELOCK_FAKE_MODE"]["source"], "environment")
        # Where the wall time went: results.json has the phases up to the writing, the last
        # line before the report the writing too.
        self.assertEqual(list(res["info"]["seconds"]), ["preparing", "running", "retrying", "comparing"])
        self.assertTrue(all(v >= 0 for v in res["info"]["seconds"].values()), res["info"]["seconds"])
        self.assertRegex(self.output, r"time: preparing \d+\.\d s, running \d+\.\d s, retrying \d+\.\d s, "
                                      r"comparing \d+\.\d s, writing \d+\.\d s")

    def test_settings_prints_every_setting_and_runs_nothing(self):
        saved = dict(os.environ)
        self.addCleanup(lambda: (os.environ.clear(), os.environ.update(saved)))
        typo = "PAGELOCK_BANDWITH_FLOOR"  # a misspelt knob; settings_check: undeclared on purpose
        os.environ.update({"PAGELOCK_BANDWIDTH_FLOOR": "0.6", typo: "0.3"})
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            self.assertEqual(qualify.main(["--settings", "--out", self.out]), 0)
        text = buf.getvalue()
        for d in settings.declarations():
            if d.kind != "retired":
                self.assertIn(d.name, text)
        self.assertRegex(text, r"PAGELOCK_BANDWIDTH_FLOOR +0\.6 \(set\) +0\.4")
        self.assertIn("set but declared nowhere (nothing reads them): " + typo, text)
        self.assertFalse(os.path.exists(self.out))
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            self.assertEqual(qualify.main(["--settings", "--json", "--time-scale", "3"]), 0)
        doc = json.loads(buf.getvalue())
        row = {r["name"]: r for r in doc["settings"]}
        self.assertEqual((row["PAGELOCK_TIME_SCALE"]["value"], row["PAGELOCK_TIME_SCALE"]["source"]),
                         ("3.0", "--time-scale"))
        self.assertEqual(doc["not_declared"], [typo])

    def test_failures_are_retried_and_regressions_exit_three(self):
        self.assertEqual(self.qualify("--retries", "2", mode="fail,crash"), 3, self.output)
        _, res = self.last_run()
        by = {c["name"]: c for c in res["run"]["cases"]}
        # The crash reproduced word for word on the first re-run: no third run of the same seed.
        self.assertEqual(by["CrashesWhenAsked"]["attempts"], ["CRASH", "CRASH"])
        # the log tail of every attempt is kept, not only the first one's
        self.assertEqual(sorted(k for k in by["CrashesWhenAsked"]["logs"] if k.startswith("log_tail")),
                         ["log_tail", "log_tail (attempt 2)"])
        self.assertEqual(res["comparison"]["selftest:fake_gtest/FakeTest.FailsWhenAsked"], "REGRESSION")
        # The documented CI glob finds one JUnit file per run, each case once, final verdicts:
        # the crash retried three times is one <error>, never three.
        files = glob.glob(os.path.join(self.out, "*", "junit.xml"))
        self.assertEqual(len(files), 1)
        with open(files[0]) as f:
            junit = f.read()
        self.assertEqual(junit.count('name="CrashesWhenAsked"'), 1)
        self.assertEqual(len(re.findall(r"<testcase ", junit)), len(res["run"]["cases"]))
        self.assertIn('<error message="[REGRESSION] CRASH', junit)
        # The end of the run lists each unexpected result on one line, with its log.
        self.assertIn("unexpected result(s):", self.output)
        line = next(l for l in self.output.splitlines() if "FakeTest.FailsWhenAsked:" in l)
        self.assertIn("REGRESSION", line)
        self.assertIn("[log: ", line)

    def test_json_prints_one_object_on_stdout_and_the_rest_on_stderr(self):
        os.environ["PAGELOCK_FAKE_MODE"] = "fail"
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = qualify.main(["--bundle", self.bundle, "--out", self.out, "--expectations", self.exp,
                               "--allow-no-gpu", "--json", "--retries", "0"])
        self.assertEqual(rc, 3, err.getvalue())
        doc = json.loads(out.getvalue())
        self.assertEqual((doc["exit_code"], doc["verdict"]), (3, "REGRESSIONS"))
        self.assertEqual(doc["comparison"]["REGRESSION"], 1)
        self.assertTrue(os.path.isfile(doc["outputs"]["junit.xml"]))
        self.assertIn("[1/1]", err.getvalue())  # the runner's progress
        self.assertIn("verdict: REGRESSIONS", err.getvalue())

    def test_a_flake_is_visible_and_asks_for_an_update(self):
        self.assertEqual(self.qualify(mode="flaky"), 5, self.output)
        _, res = self.last_run()
        by = {c["name"]: c for c in res["run"]["cases"]}
        self.assertEqual(by["FlakyWhenAsked"]["status"], "PASS")
        self.assertEqual(by["FlakyWhenAsked"]["attempts"], ["FAIL", "PASS"])
        self.assertEqual(res["comparison"]["selftest:fake_gtest/FakeTest.FlakyWhenAsked"], "FLAKE")

    def test_a_failure_that_changes_between_attempts_keeps_being_retried(self):
        # Two failures with different messages (not a reproduction), then a pass: a flake.
        self.assertEqual(self.qualify("--retries", "2", mode="flaky_late"), 5, self.output)
        _, res = self.last_run()
        by = {c["name"]: c for c in res["run"]["cases"]}
        self.assertEqual(by["FlakyWhenAsked"]["attempts"], ["FAIL", "FAIL", "PASS"])
        self.assertEqual(res["comparison"]["selftest:fake_gtest/FakeTest.FlakyWhenAsked"], "FLAKE")

    def test_a_failure_an_expectation_excuses_is_not_retried(self):
        self.expect("fail selftest:fake_gtest/FakeTest.FailsWhenAsked status=FAIL bug=https://bugs/1  # known\n")
        self.assertEqual(self.qualify("--retries", "2", mode="fail"), FIRST, self.output)
        _, res = self.last_run()
        by = {c["name"]: c for c in res["run"]["cases"]}
        self.assertEqual(by["FailsWhenAsked"]["attempts"], ["FAIL"])
        self.assertNotIn("retry 1", self.output)
        # The same failure with a message the entry does not excuse is unexpected: retried.
        self.expect("fail selftest:fake_gtest/FakeTest.FailsWhenAsked status=FAIL message=*no_such_text* "
                    "bug=https://bugs/1  # known\n")
        self.assertEqual(self.qualify("--retries", "2", mode="fail"), 3, self.output)
        self.assertIn("retry 1", self.output)

    def test_known_failure_qualifies_and_goes_stale_when_fixed(self):
        self.expect("fail selftest:fake_gtest/FakeTest.FailsWhenAsked status=FAIL bug=https://bugs/1  # known\n")
        self.assertEqual(self.qualify(mode="fail"), FIRST, self.output)
        self.assertEqual(self.qualify(), 5, self.output)
        self.assertIn("stale expectation", self.output)
        _, res = self.last_run()
        self.assertEqual(res["comparison"]["selftest:fake_gtest/FakeTest.FailsWhenAsked"], "UNEXPECTED_PASS")

    def test_paths_in_the_checkout_are_recorded_relative_to_it(self):
        # results.json (and so a committed baseline) names no absolute path of the checkout;
        # here the test's folder stands for the checkout. Paths outside it stay absolute.
        self.expect("fail selftest:fake_gtest/FakeTest.FailsWhenAsked status=FAIL bug=https://bugs/1\n")
        saved, common.ROOT = common.ROOT, self.tmp
        try:
            self.assertEqual(self.qualify(mode="fail"), FIRST, self.output)
            first, _ = self.last_run()
            time.sleep(0.05)
            self.assertEqual(self.qualify(f"--history={self.tmp}/h.sqlite"), 5, self.output)
        finally:
            common.ROOT = saved
        run_dir, res = self.last_run()
        info = res["info"]
        self.assertEqual(list(info["expectations"]), ["expectations/none.txt"])
        self.assertEqual(info["baseline"], os.path.relpath(os.path.join(first, "results.json"), self.tmp))
        self.assertEqual(info["command"], "tools/qualify --bundle bundle --out runs --expectations "
                                          "expectations --allow-no-gpu --history=h.sqlite")
        self.assertEqual(res["stale_expectations"],
                         ["expectations/none.txt:1: fail selftest:fake_gtest/FakeTest.FailsWhenAsked"])
        with open(os.path.join(run_dir, "results.json")) as f:
            self.assertNotIn(self.tmp, f.read())
        # Outside the checkout: as before, the absolute path.
        self.assertEqual(self.qualify(), 5, self.output)
        _, res = self.last_run()
        self.assertEqual(res["info"]["baseline"], os.path.join(run_dir, "results.json"))
        self.assertEqual(list(res["info"]["expectations"]), [os.path.join(self.exp, "none.txt")])
        self.assertEqual(res["stale_expectations"],
                         [f"{self.exp}/none.txt:1: fail selftest:fake_gtest/FakeTest.FailsWhenAsked"])

    def test_baseline_comparison_shows_fixed_cases(self):
        self.assertEqual(self.qualify(mode="fail"), 3)
        self.assertEqual(self.qualify(), 0, self.output)
        _, res = self.last_run()
        self.assertEqual(res["comparison"]["selftest:fake_gtest/FakeTest.FailsWhenAsked"], "FIXED")

    def test_skip_expectation_keeps_a_hanging_case_from_running(self):
        self.expect("skip selftest:fake_gtest/FakeTest.HangsWhenAsked  # hangs this machine\n")
        self.assertEqual(self.qualify(mode="hang"), FIRST, self.output)
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
        self.assertFalse(glob.glob(os.path.join(self.out, "2*")), "no run folder for nothing")

    def test_two_runs_side_by_side(self):
        self.qualify(mode="fail")
        self.qualify()
        runs = sorted(d for d in glob.glob(os.path.join(self.out, "*")) if os.path.isdir(d))
        html = os.path.join(self.tmp, "cmp.html")
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertEqual(compare_runs.main(runs[-2:] + ["--html", html]), 3)
        self.assertIn("1 case(s) differ", out.getvalue())
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(compare_runs.main(runs[-2:] + ["--html", html, "--json"]), 3)
        doc = json.loads(out.getvalue())
        self.assertEqual([d["statuses"] for d in doc["differing"]], [["FAIL", "PASS"]])
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(compare_runs.main([runs[-1], runs[-1], "--html", html]), 0)
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(compare_runs.main([runs[-1], "--html", html]), 2)


FAKE_SUITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "fake_suite.py")
FAKE_ENV = ("FAKE_DEVICE_STATUS", "FAKE_GPU_COUNT", "FAKE_CAN_MAP", "FAKE_EXTRA_CASES", "FAKE_NAN",
            "FAKE_HANG", "FAKE_PID_FILE", "FAKE_BAD_SEED", "FAKE_GPU_NAME", "FAKE_DRIVER",
            "FAKE_RUNTIME")
NO_GPU = "cudaGetDeviceCount=35 (cudaErrorInsufficientDriver)"


class UnexpectedLinesTest(unittest.TestCase):
    """The end of a run in the terminal (tools/qualification/verdict.py), as the ux review found
    it: the test.log path of a target in a nested package, and a long reason cut visibly."""

    def lines(self, case):
        comp = cmp.Comparison(status={case.id: model.Change.REGRESSION})
        return verdict.unexpected_lines(model.Run({}, [case]), comp, "/runs/r1")

    def test_the_log_path_keeps_every_folder_of_the_package(self):
        c = testsupport.case("ReportsPointers", "FAIL", "x.cc:1\nwrong base", suite="PointerQueries",
                             target="//suites/interior:pointer_queries_test")
        line = self.lines(c)[1]
        # It was testlogs/suites/test.log: the id cut at its first "/".
        self.assertIn("[log: /runs/r1/testlogs/suites/interior/pointer_queries_test/test.log]", line)

    def test_a_long_reason_is_cut_with_an_ellipsis(self):
        c = testsupport.case("Long", "FAIL", "x.cc:1\n" + "word " * 100)
        line = self.lines(c)[1]
        reason = line.split(": ", 1)[1].split("  [log: ")[0]
        self.assertEqual(len(reason), verdict.REASON_PRINTED)
        self.assertTrue(reason.endswith("…"), reason)
        short = testsupport.case("Short", "FAIL", "x.cc:1\nbroke")
        self.assertNotIn("…", self.lines(short)[1])


class RunKeyTest(unittest.TestCase):
    def test_a_key_already_in_the_history_is_not_reused(self):
        # Two fleet nights back to back on one host, each with its own --out, in one second: the
        # second run must get its own key, or the history keeps the first and loses it.
        from tools.qualification import plan as plan_mod
        import datetime
        with tempfile.TemporaryDirectory() as out:
            t = datetime.datetime(2026, 12, 2, 5, 14, 49)
            fp = {"host": "n1"}
            first = plan_mod.new_run_dir(out, fp, "nvidia-h200", "580", t, token="a1b2c3")
            again = plan_mod.new_run_dir(out, fp, "nvidia-h200", "580", t, stored=lambda k: k == first,
                                         token="a1b2c3")
            self.assertEqual(first, "20261202-051449.000-a1b2c3_n1_nvidia-h200_580")
            self.assertEqual(again, first + "-2")
            # Two runs of one host in one second each draw their own random part.
            keys = {plan_mod.new_run_dir(out, fp, "nvidia-h200", "580", t) for _ in range(100)}
            self.assertEqual(len(keys), 100)


class FakeSuiteCase(unittest.TestCase):
    """Qualify over a bundle of tools/testdata/fake_suite.py (a scriptable stand-in for a suite
    binary; needs no GPU)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.bundle = os.path.join(self.tmp, "bundle")
        self.exp = os.path.join(self.tmp, "expectations")
        self.out = os.path.join(self.tmp, "runs")
        os.makedirs(self.exp)
        self.make_bundle([("//selftest:fake_suite", ["gpu", "tier_bat"])])
        for k in FAKE_ENV:
            os.environ.pop(k, None)

    def tearDown(self):
        for k in FAKE_ENV:
            os.environ.pop(k, None)

    def make_bundle(self, targets):
        shutil.rmtree(self.bundle, ignore_errors=True)
        entries = []
        for label, tags in targets:
            pkg, name = label[2:].split(":")
            path = f"bin/{pkg}/{name}"
            os.makedirs(os.path.dirname(os.path.join(self.bundle, path)), exist_ok=True)
            shutil.copy(FAKE_SUITE, os.path.join(self.bundle, path))
            os.chmod(os.path.join(self.bundle, path), 0o755)
            entries.append({"label": label, "path": path, "timeout_s": 60, "tags": tags})
        with open(os.path.join(self.bundle, "manifest.json"), "w") as f:
            json.dump({"info": {"commit": "test"}, "targets": entries}, f)

    def qualify(self, *extra, **env):
        for k in FAKE_ENV:
            os.environ.pop(k, None)
        os.environ.update({k: str(v) for k, v in env.items()})
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = qualify.main(["--bundle", self.bundle, "--out", self.out, "--expectations", self.exp,
                               *extra])
        self.output = buf.getvalue()
        return rc

    def runs(self):
        # By the time results.json was written, not by name: two runs in one second on machines
        # with different SKUs sort by host/SKU, not by order ("..._none_..." < "..._nvidia-...").
        dirs = [d for d in glob.glob(os.path.join(self.out, "2*")) if os.path.isdir(d)]
        return sorted(dirs, key=lambda d: (os.path.getmtime(os.path.join(d, "results.json"))
                                           if os.path.exists(os.path.join(d, "results.json")) else 0, d))

    def last(self):
        with open(os.path.join(self.runs()[-1], "results.json")) as f:
            return json.load(f)

    def expect(self, text):
        with open(os.path.join(self.exp, "nvidia-h200.txt"), "w") as f:
            f.write(text)


class VerdictTest(FakeSuiteCase):
    """The verdict with coverage, seeds that replay, and bad input."""

    # --- coverage: no GPU, another GPU, a lost capability ---------------------------------------

    def test_no_gpu_against_a_gpu_baseline_is_not_qualified(self):
        self.assertEqual(self.qualify("--baseline", "none"), 0, self.output)
        base = self.runs()[-1]
        self.expect("coverage fingerprint:* bug=u\ncoverage selftest:* bug=u\n")
        rc = self.qualify("--allow-no-gpu", "--baseline", base, FAKE_DEVICE_STATUS=NO_GPU)
        self.assertEqual(rc, cmp.EXIT_COVERAGE_LOST, self.output)
        self.assertIn("verdict: COVERAGE LOST (exit 6)", self.output)
        self.assertIn("fingerprint:device_status", self.output)
        res = self.last()
        self.assertEqual(res["info"]["verdict"], "COVERAGE LOST")
        self.assertEqual(res["machine_coverage"][0]["status"], "COVERAGE_LOST")

    def test_dropping_88_cases_is_not_qualified(self):
        self.assertEqual(self.qualify("--baseline", "none", FAKE_EXTRA_CASES=88), 0, self.output)
        self.assertEqual(self.qualify(), cmp.EXIT_COVERAGE_LOST, self.output)
        res = self.last()
        self.assertEqual(len(res["dropped"]), 88)
        self.assertEqual(res["summary"]["DROPPED"], 88)
        self.assertIn("DROPPED=88", self.output)
        with open(os.path.join(self.runs()[-1], "index.html")) as f:
            self.assertIn("DROPPED 88", f.read())

    def test_can_map_host_memory_zero_is_not_qualified(self):
        self.assertEqual(self.qualify("--baseline", "none"), 0, self.output)
        self.assertEqual(self.qualify(FAKE_CAN_MAP=0), cmp.EXIT_COVERAGE_LOST, self.output)
        res = self.last()
        self.assertEqual(res["comparison"]["selftest:fake_suite/Mapped.KernelReadsHostMemory"], "COVERAGE_LOST")
        self.assertEqual(res["comparison"]["selftest:fake_suite/Flags/Alloc.Maps/mapped"], "COVERAGE_LOST")
        self.assertEqual([m["id"] for m in res["machine_coverage"]],
                         ["fingerprint:gpu0_cudaDevAttrCanMapHostMemory"])
        # A loss the expectations name (with a bug) qualifies.
        self.expect("coverage fingerprint:gpu0_cudaDevAttrCanMapHostMemory bug=u\n"
                    "coverage selftest:fake_suite/*Map* bug=u\n")
        self.assertEqual(self.qualify(FAKE_CAN_MAP=0), 0, self.output)

    # --- seeds ------------------------------------------------------------------------------

    def test_a_seed_dependent_failure_is_a_regression_and_its_replay_reproduces_it(self):
        self.assertEqual(self.qualify("--seed", "4242", "--retries", "2", "--baseline", "none"),
                         cmp.EXIT_REGRESSION, self.output)
        res = self.last()
        case = next(c for c in res["run"]["cases"] if c["name"] == "FailsForOneSeed")
        # The same seed on the re-run reproduced the failure word for word: no third run.
        self.assertEqual(case["attempts"], ["FAIL", "FAIL"])
        self.assertEqual(res["comparison"][case["id"]], "REGRESSION")
        self.assertEqual(case["run_seed"], "4242")
        self.assertIsNotNone(case["seed"])
        self.assertTrue(model.Case.from_json(case).seed_replays)  # the replay gives the case its seed
        c = model.Case.from_json(case)
        bazel, bundle = c.replay_command(self.bundle).splitlines()
        self.assertIn("--test_env=PAGELOCK_SEED=4242", bazel)
        replay = subprocess.run(bundle, shell=True, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(replay.returncode, 0)
        self.assertIn("bytes differ for run seed 4242", replay.stdout)
        self.assertIn("FailsForOneSeed", replay.stdout)
        self.assertNotIn("CopyRoundTrips", replay.stdout)  # exactly this case
        # Another seed passes: the failure belongs to the seed, not to the machine.
        self.assertEqual(self.qualify("--seed", "4243", "--baseline", "none"), 0, self.output)

    def test_the_run_seed_has_one_name_that_every_reader_shows(self):
        # The binaries record pagelock.run_seed; qualify neither copies it under a second name
        # nor overwrites what a binary recorded.
        self.assertEqual(self.qualify("--seed", "4243", "--baseline", "none"), 0, self.output)
        res = self.last()
        fp = res["run"]["fingerprint"]
        self.assertEqual(fp[model.PROP_RUN_SEED], "4243")
        self.assertNotIn("seed", fp)
        self.assertNotIn("seed", res["info"])
        self.assertEqual({c["run_seed"] for c in res["run"]["cases"]}, {"4243"})
        run_dir = self.runs()[-1]
        with open(os.path.join(run_dir, "junit.xml"), encoding="utf-8") as f:
            self.assertIn('<property name="seed" value="4243"', f.read())
        with open(os.path.join(run_dir, "index.html"), encoding="utf-8") as f:
            self.assertIn("seed <span class='mono'>4243</span>", f.read())
        db = history.connect(os.path.join(self.out, "history.sqlite"))
        self.assertEqual(db.execute("SELECT seed FROM runs").fetchall(), [("4243",)])

    def test_auto_baseline_is_the_last_run_of_the_same_tier(self):
        # A nightly full tier after a weekly stress run compares with the last full run, not
        # with the stress run (whose stress cases it would call dropped), and the other way round.
        self.make_bundle([("//selftest:fake_suite", ["gpu", "tier_bat"]),
                          ("//suites/stress:pinned_stress_test", ["gpu", "tier_stress", "stress"])])
        saved, common.ROOT = common.ROOT, self.tmp  # no reference baselines
        self.addCleanup(setattr, common, "ROOT", saved)
        # The first run of each tier has no baseline: its first night (exit 8).
        self.assertEqual(self.qualify("--tier", "full", "--seed", "4243"), cmp.EXIT_FIRST_NIGHT, self.output)
        full = os.path.basename(self.runs()[-1])
        self.assertEqual(self.qualify("--tier", "stress", "--seed", "4243"), cmp.EXIT_FIRST_NIGHT, self.output)
        self.assertIn("none (no earlier stress run", self.last()["info"]["baseline"])
        stress = os.path.basename(self.runs()[-1])
        self.assertEqual(self.qualify("--tier", "full", "--seed", "4243"), 0, self.output)
        self.assertIn(full, self.last()["info"]["baseline"])
        self.qualify("--tier", "stress", "--seed", "4243")
        self.assertIn(stress, self.last()["info"]["baseline"])

    def test_skip_with_a_two_segment_package_skips_exactly_that_case(self):
        self.make_bundle([("//suites/stress:pinned_stress_test", ["gpu", "tier_stress", "stress"]),
                          ("//suites/other:other_test", ["gpu", "tier_stress"])])
        self.expect("skip suites/stress:pinned_stress_test/Pinned.FailsForOneSeed  # hangs\n")
        self.assertEqual(self.qualify("--tier", "stress", "--seed", "4242", "--baseline", "none"),
                         cmp.EXIT_REGRESSION, self.output)
        res = self.last()
        ids = [c["id"] for c in res["run"]["cases"]]
        self.assertNotIn("suites/stress:pinned_stress_test/Pinned.FailsForOneSeed", ids)
        self.assertIn("suites/stress:pinned_stress_test/Pinned.CopyRoundTrips", ids)
        self.assertIn("suites/other:other_test/Pinned.FailsForOneSeed", ids)  # other target runs it
        self.assertEqual(res["info"]["skipped_by_expectations"],
                         ["suites/stress:pinned_stress_test/Pinned.FailsForOneSeed"])
        self.assertEqual(len(ids), 11)
        # Stress targets replay with --config=stress.
        self.expect("")
        self.qualify("--tier", "stress", "--seed", "4242", "--baseline", "none")
        case = next(c for c in self.last()["run"]["cases"]
                    if c["id"] == "suites/stress:pinned_stress_test/Pinned.FailsForOneSeed")
        self.assertIn("--config=stress", model.Case.from_json(case).replay_command())

    # --- bad input: a message, a documented code, no run folder ------------------------------

    def assert_refused(self, rc, needle, code=cmp.EXIT_CONFIG):
        self.assertEqual(rc, code, self.output)
        self.assertIn(needle, self.output)
        self.assertNotIn("Traceback", self.output)
        self.assertEqual(self.runs(), [], "a run folder was created for bad input")

    def test_a_baseline_that_is_a_json_list(self):
        path = os.path.join(self.tmp, "list.json")
        with open(path, "w") as f:
            f.write("[1, 2]")
        self.assert_refused(self.qualify("--baseline", path), "expected a JSON object")

    def test_a_missing_expectations_path(self):
        self.assert_refused(self.qualify("--expectations", os.path.join(self.tmp, "nope")),
                            "no such expectations directory")

    def test_a_corrupt_history(self):
        os.makedirs(self.out)
        with open(os.path.join(self.out, "history.sqlite"), "wb") as f:
            f.write(b"this is not a database" * 100)
        self.assert_refused(self.qualify(), "history")

    def test_an_out_that_cannot_be_written(self):
        blocker = os.path.join(self.tmp, "file")
        with open(blocker, "w") as f:
            f.write("x")
        rc = self.qualify("--out", os.path.join(blocker, "runs"))
        self.assertEqual(rc, cmp.EXIT_CONFIG, self.output)
        self.assertIn("--out", self.output)

    def test_a_nan_metric_is_stored_and_shown(self):
        self.assertEqual(self.qualify("--baseline", "none", FAKE_NAN=1), 0, self.output)
        res = self.last()
        case = next(c for c in res["run"]["cases"] if c["name"] == "CopyRoundTrips")
        self.assertEqual(case["metrics"]["h2d_pinned_GBps"], {"value": "nan", "unit": "GB/s"})
        with open(os.path.join(self.runs()[-1], "index.html")) as f:
            self.assertIn("nan", f.read())

    def test_compare_runs_bad_input(self):
        path = os.path.join(self.tmp, "list.json")
        with open(path, "w") as f:
            f.write("[]")
        self.assertEqual(self.qualify("--baseline", "none"), 0, self.output)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(compare_runs.main([self.runs()[-1], path, "--html", os.path.join(self.tmp, "c.html")]), 2)
            self.assertEqual(compare_runs.main([self.runs()[-1], self.runs()[-1], "--html",
                                                os.path.join(path, "c.html")]), 2)
        self.assertIn("expected a JSON object", err.getvalue())

    def test_a_postgresql_history_reexecutes_under_a_python_that_has_psycopg2(self):
        # Started by a python3 that has jinja2 but not psycopg2 (pyenv, a venv): a postgresql://
        # --history re-executes qualify, before any work, under $PAGELOCK_PYTHON, which has both
        # (its stand-in psycopg2 cannot connect, and says so); a SQLite history looks for no other.
        env, log = testsupport.python_with_fake_psycopg2(self.tmp)
        cmd = [sys.executable, qualify.__file__, "--bundle", self.bundle, "--out", self.out, "--expectations",
               self.exp, "--baseline", "none"]
        p = subprocess.run(cmd + ["--history", "postgresql:///postgres?host=/nonexistent"], capture_output=True,
                           text=True, env=env, timeout=300)
        self.assertIn("cannot connect: fake psycopg2 of the test", p.stdout + p.stderr)
        self.assertNotIn("Traceback", p.stdout + p.stderr)
        with open(log) as f:
            self.assertEqual(len([l for l in f.read().splitlines() if not l.startswith("-c ")]), 1)
        os.remove(log)
        p = subprocess.run(cmd + ["--history", os.path.join(self.tmp, "h.sqlite"), "--preflight"],
                           capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertFalse(os.path.exists(log), "a SQLite history probed or started $PAGELOCK_PYTHON")

    def test_sigterm_stops_the_test_and_marks_the_run_interrupted(self):
        pid_file = os.path.join(self.tmp, "pid")
        env = dict(os.environ, FAKE_HANG="1", FAKE_PID_FILE=pid_file,
                   PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        proc = subprocess.Popen([sys.executable, qualify.__file__, "--bundle", self.bundle, "--out", self.out,
                                 "--expectations", self.exp], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        def read_pid():
            try:
                with open(pid_file) as f:
                    return f.read()
            except FileNotFoundError:
                return ""
        for _ in range(300):
            if read_pid():
                break
            time.sleep(0.1)
        hung = int(read_pid())
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, cmp.EXIT_INTERRUPTED, out)
        self.assertNotIn("Traceback", out)
        self.assertEqual(self.last()["info"]["verdict"], "INTERRUPTED")
        time.sleep(0.5)
        try:
            with open(f"/proc/{hung}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            self.assertEqual(state, "Z", "the running test binary survived qualify's SIGTERM")
        except FileNotFoundError:
            pass

    def test_the_exit_code_table_is_the_one_in_the_docstring(self):
        for code, (text, _, _) in cmp.EXIT_CODES.items():
            self.assertRegex(qualify.__doc__, rf"\n  {code}  {re.escape(text)} ")



class RuntimeBaselineTest(unittest.TestCase):
    """One baseline per CUDA runtime: a run never compares with another runtime's."""

    def setUp(self):
        self.root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.out = os.path.join(self.root, "runs")
        os.makedirs(self.out)
        self.saved_root, common.ROOT = common.ROOT, self.root

    def tearDown(self):
        common.ROOT = self.saved_root
        shutil.rmtree(self.root, ignore_errors=True)

    def write(self, rel, runtime):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        run = model.Run({"cuda_runtime_version": str(runtime), "gpu0_name": "NVIDIA H200"}, [])
        with open(path, "w") as f:
            json.dump({"format_version": model.FORMAT_VERSION, "info": {"sku": "nvidia-h200"},
                       "run": run.to_json()}, f)
        return path

    def test_the_default_baseline_of_another_runtime_is_no_baseline(self):
        self.write("baselines/nvidia-h200/results.json", 13000)
        run, name = baselines.load_baseline("auto", self.out, "nvidia-h200", 11080)
        self.assertIsNone(run)
        self.assertIn("is for CUDA runtime 13.0, this run's is 11.8", name)
        run, _ = baselines.load_baseline("auto", self.out, "nvidia-h200", 13000)
        self.assertIsNotNone(run)

    def test_a_runtime_with_its_own_folder_takes_it(self):
        self.write("baselines/nvidia-h200/results.json", 13000)
        own = self.write("baselines/nvidia-h200/cuda-11.8/results.json", 11080)
        run, name = baselines.load_baseline("auto", self.out, "nvidia-h200", 11080)
        # Relative to the checkout (here the test's root), as results.json records it.
        self.assertEqual(name, "baselines/nvidia-h200/cuda-11.8/results.json")
        self.assertEqual(os.path.join(self.root, name), own)
        self.assertEqual(baselines.runtime_of(run.fingerprint), 11080)

    def test_an_earlier_run_of_another_runtime_is_passed_over(self):
        older = self.write("runs/20261201-100000_h_nvidia-h200_580/results.json", 13000)
        self.write("runs/20261201-110000_h_nvidia-h200_580/results.json", 11080)
        os.utime(older, (1, 1))
        path, run = baselines.latest_baseline(self.out, "nvidia-h200", 13000)
        self.assertEqual(path, older)

    def test_each_tier_has_its_own_reference_file(self):
        self.write("baselines/nvidia-h200/results.json", 13000)
        stress = self.write("baselines/nvidia-h200/stress.json", 13000)
        run, name = baselines.load_baseline("auto", self.out, "nvidia-h200", 13000, "stress")
        self.assertEqual(name, "baselines/nvidia-h200/stress.json")
        run, name = baselines.load_baseline("auto", self.out, "nvidia-h200", 13000, "bat")
        self.assertIsNone(run)
        self.assertIn("no baselines/nvidia-h200/bat.json", name)
        # A runtime with its own folder never falls back to another runtime's stress reference.
        self.write("baselines/nvidia-h200/cuda-11.8/results.json", 11080)
        run, name = baselines.load_baseline("auto", self.out, "nvidia-h200", 11080, "stress")
        self.assertIsNone(run)
        self.assertIn("cuda-11.8/stress.json", name)
        os.remove(stress)

    def test_write_baseline_keeps_the_other_runtime_s_reference(self):
        self.write("baselines/nvidia-h200/results.json", 13000)
        self.assertEqual(baselines.baseline_dest("nvidia-h200", 11080),
                         os.path.join(self.root, "baselines", "nvidia-h200", "cuda-11.8"))
        self.assertEqual(baselines.baseline_dest("nvidia-h200", 13000),
                         os.path.join(self.root, "baselines", "nvidia-h200"))

class NewPlatformTest(FakeSuiteCase):
    """A GPU pagelock has never seen: its first night inherits the driver's known deviations, has
    its own verdict, and one command drafts its files; another driver branch is judged as the rule."""
    H100 = {"FAKE_GPU_NAME": "NVIDIA H100 80GB HBM3", "FAKE_BAD_SEED": "4242"}
    KNOWN = ("fail selftest:fake_suite/Pinned.FailsForOneSeed driver=580 message=*bytes_differ_for_run_seed* "
             "bug=docs/platforms/driver-r580.md#rtest  # a driver deviation\n")

    def setUp(self):
        super().setUp()
        saved, common.ROOT = common.ROOT, self.tmp  # no reference baselines; drafts go here
        self.addCleanup(setattr, common, "ROOT", saved)
        with open(os.path.join(self.exp, "common.txt"), "w") as f:
            f.write(self.KNOWN)

    def test_a_new_sku_inherits_the_driver_deviations_on_its_first_night(self):
        self.assertEqual(self.qualify("--seed", "4242", **self.H100), cmp.EXIT_FIRST_NIGHT, self.output)
        res = self.last()
        night = res["info"]["first_night"]
        self.assertEqual([(i["anchor"], i["cases"]) for i in night["inherited"]], [("rtest", 1)])
        self.assertEqual(night["new_count"], 0)
        self.assertTrue(night["may_become_baseline"])
        self.assertIn("first night of nvidia-h100-80gb-hbm3", self.output)
        with open(os.path.join(self.runs()[-1], "index.html"), encoding="utf-8") as f:
            page = f.read()
        self.assertIn("First night of nvidia-h100-80gb-hbm3", page)
        self.assertIn(">FIRST NIGHT<", page)

    def test_a_real_failure_on_a_first_night_is_still_a_regression(self):
        with open(os.path.join(self.exp, "common.txt"), "w") as f:
            f.write("")
        self.assertEqual(self.qualify("--seed", "4242", **self.H100), cmp.EXIT_REGRESSION, self.output)
        self.assertEqual(self.last()["info"]["first_night"]["new_count"], 1)

    def test_another_driver_branch_is_judged_as_the_rule_and_told_so(self):
        rc = self.qualify("--seed", "4242", "--baseline", "none", FAKE_DRIVER="550.54.15", **self.H100)
        self.assertEqual(rc, cmp.EXIT_REGRESSION, self.output)
        self.assertIn("rtest known on driver 580", self.output)
        self.assertIn("this driver 550.54.15: judged as the rule", self.output)
        self.assertEqual(self.last()["expectations_elsewhere"][0]["why_not_here"], "this driver 550.54.15")

    def test_bringing_up_the_sku_is_one_command_and_the_next_night_qualifies(self):
        self.assertEqual(self.qualify("--seed", "4242", **self.H100), cmp.EXIT_FIRST_NIGHT, self.output)
        first = self.runs()[-1]
        self.assertEqual(self.qualify("--draft-expectations", first), 0, self.output)
        sku = "nvidia-h100-80gb-hbm3"
        for path in (os.path.join(self.exp, f"{sku}.txt"), os.path.join(self.tmp, "baselines", sku, "results.json"),
                     os.path.join(self.tmp, "baselines", sku, "README.md"),
                     os.path.join(self.tmp, "docs", "platforms", f"{sku}.md")):
            self.assertTrue(os.path.isfile(path), path)
        with open(os.path.join(self.tmp, "baselines", sku, "results.json"), encoding="utf-8") as f:
            self.assertNotIn(self.tmp, f.read())  # committable: no path of the machine that ran it
        self.assertEqual(self.qualify("--draft-expectations", first), 2, self.output)  # never overwrites
        self.assertIn("--force", self.output)
        # A later night in a fresh --out compares with the drafted reference baseline.
        self.out = os.path.join(self.tmp, "runs2")
        self.assertEqual(self.qualify("--seed", "4242", **self.H100), 0, self.output)
        self.assertIn(f"baselines/{sku}/results.json", self.last()["info"]["baseline"])

    def test_a_known_sku_on_another_runtime_says_why_it_has_no_baseline_and_gets_one_of_its_own(self):
        sku = "nvidia-h100-80gb-hbm3"
        self.assertEqual(self.qualify("--seed", "4242", **self.H100), cmp.EXIT_FIRST_NIGHT, self.output)
        self.assertEqual(self.qualify("--draft-expectations", self.runs()[-1]), 0, self.output)
        reviewed = [os.path.join(self.exp, f"{sku}.txt"), os.path.join(self.tmp, "baselines", sku, "README.md"),
                    os.path.join(self.tmp, "docs", "platforms", f"{sku}.md")]
        before = [open(p, encoding="utf-8").read() for p in reviewed]
        # The same GPU, binaries built with CUDA 11.8: the 13.0 baseline is not this run's.
        self.out = os.path.join(self.tmp, "runs-11.8")
        rc = self.qualify("--seed", "4242", FAKE_RUNTIME="11080", **self.H100)
        self.assertEqual(rc, cmp.EXIT_FIRST_NIGHT, self.output)
        self.assertIn("is for CUDA runtime 13.0, this run's is 11.8", self.output)
        self.assertIn("its expectations:", self.output)
        self.assertIn("write this runtime's baseline: tools/qualify --draft-expectations", self.output)
        self.assertIn("this run's is 11.8", self.last()["info"]["first_night"]["baseline_note"])
        with open(os.path.join(self.runs()[-1], "index.html"), encoding="utf-8") as f:
            self.assertIn("is for CUDA runtime 13.0", f.read())
        self.assertEqual(self.qualify("--draft-expectations", self.runs()[-1]), 0, self.output)
        self.assertTrue(os.path.isfile(os.path.join(self.tmp, "baselines", sku, "cuda-11.8", "results.json")))
        self.assertEqual([open(p, encoding="utf-8").read() for p in reviewed], before)  # kept as reviewed
        self.out = os.path.join(self.tmp, "runs-11.8-next")
        self.assertEqual(self.qualify("--seed", "4242", FAKE_RUNTIME="11080", **self.H100), 0, self.output)
        self.assertIn(f"baselines/{sku}/cuda-11.8/results.json", self.last()["info"]["baseline"])

    def test_a_known_sku_on_another_runtime_with_an_unexplained_failure_is_not_drafted(self):
        with open(os.path.join(self.exp, "common.txt"), "w") as f:
            f.write("")
        self.assertEqual(self.qualify("--seed", "7", **self.H100), cmp.EXIT_FIRST_NIGHT, self.output)
        self.assertEqual(self.qualify("--draft-expectations", self.runs()[-1]), 0, self.output)
        self.out = os.path.join(self.tmp, "runs-11.8")
        rc = self.qualify("--seed", "4242", FAKE_RUNTIME="11080", **self.H100)
        self.assertEqual(rc, cmp.EXIT_REGRESSION, self.output)
        self.assertEqual(self.qualify("--draft-expectations", self.runs()[-1]), 2, self.output)
        self.assertIn("1 failure(s) of this run nothing explains", self.output)
        self.assertFalse(os.path.lexists(os.path.join(self.tmp, "baselines", "nvidia-h100-80gb-hbm3", "cuda-11.8")))

    def test_committed_files_name_no_path_of_the_machine_that_ran_it(self):
        # An --out outside the checkout (a lab's scratch disk): the drafted baseline and one
        # written by --write-baseline say runs/ for it, never its absolute path.
        scratch = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, scratch, True)
        self.out = os.path.join(scratch, "nightly")
        self.assertEqual(self.qualify("--seed", "4242", **self.H100), cmp.EXIT_FIRST_NIGHT, self.output)
        self.assertEqual(self.qualify("--draft-expectations", self.runs()[-1]), 0, self.output)
        baseline = os.path.join(self.tmp, "baselines", "nvidia-h100-80gb-hbm3", "results.json")
        for qualify_args, rc in ((None, None), (("--seed", "4242", "--write-baseline"), 0)):
            if qualify_args:
                self.assertEqual(self.qualify(*qualify_args, **self.H100), rc, self.output)
            with open(baseline, encoding="utf-8") as f:
                text = f.read()
            self.assertNotIn(scratch, text)
            self.assertIn("--out runs", json.loads(text)["info"]["command"])

    def test_the_draft_says_where_a_failing_case_passes_on_another_sku(self):
        with open(os.path.join(self.exp, "common.txt"), "w") as f:
            f.write("")
        # Another SKU's reference run, where the case passes (its seed is not the bad one).
        self.assertEqual(self.qualify("--seed", "7", "--write-baseline"), cmp.EXIT_FIRST_NIGHT, self.output)
        other = glob.glob(os.path.join(self.tmp, "baselines", "*", "results.json"))
        self.assertEqual(len(other), 1, other)
        self.assertEqual(self.qualify("--seed", "4242", **self.H100), cmp.EXIT_REGRESSION, self.output)
        self.assertEqual(self.qualify("--draft-expectations", self.runs()[-1]), 0, self.output)
        with open(os.path.join(self.exp, "nvidia-h100-80gb-hbm3.txt")) as f:
            drafted = f.read()
        rel = os.path.relpath(other[0], self.tmp)
        self.assertRegex(drafted, r"# passes in " + re.escape(rel) + r" \(driver [^)]+\) \(look at this GPU")
        self.assertNotIn("# new:", drafted)

    def test_a_drafted_entry_must_be_explained_before_it_loads(self):
        with open(os.path.join(self.exp, "common.txt"), "w") as f:
            f.write("")
        self.assertEqual(self.qualify("--seed", "4242", **self.H100), cmp.EXIT_REGRESSION, self.output)
        self.assertEqual(self.qualify("--draft-expectations", self.runs()[-1]), 0, self.output)
        with open(os.path.join(self.exp, "nvidia-h100-80gb-hbm3.txt")) as f:
            drafted = f.read()
        self.assertIn("driver=580", drafted)
        self.assertIn("bug=TODO", drafted)
        # No other SKU has a committed baseline here: the case never ran elsewhere.
        self.assertIn("# new: no other SKU's committed baseline has this case", drafted)
        self.assertIn("# 1 of these 1 are cases no other SKU's committed baseline has", drafted)
        self.assertEqual(self.qualify("--seed", "4242", **self.H100), 2, self.output)
        self.assertRegex(self.output, r"nvidia-h100-80gb-hbm3\.txt:\d+: bug=TODO is a placeholder")


class BrowserTest(unittest.TestCase):
    """Opens a generated report in headless Chromium: no console errors, the filters work."""

    def test_report_filters_work_without_console_errors(self):
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            if settings.raw("PAGELOCK_BROWSER_TEST") == "0":
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
        seen = json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                          .replace("&amp;", "&"))
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
