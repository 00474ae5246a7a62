"""Expectations parsing, the comparison statuses, the verdict, and the history database."""

import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.compare_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import ciout
from reports import compare as cmp
from reports import expectations as expect
from reports import history
from reports import model
from reports import testsupport

T = "//suites/a:a_test"


def case(name, status, **props):
    return model.Case.from_raw(T, "S", name, status, 0.1, "boom" if status in model.FAILING else "", "", props)


def run(*cases, driver="580.159.04", **fp):
    return model.Run(dict({"nvidia_driver": driver, "gpu0_name": "NVIDIA H200", "seed": "7",
                           "device_status": "usable", "gpu_count": "1"}, **fp), list(cases))


class ExpectationsCheckTest(unittest.TestCase):
    """python3 -m reports.expectations --check FILE... (ux review finding 9: the docs pointed to
    reports/expectations.py, which did not run, and a drafted bug=TODO went in unchecked)."""

    ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def check(self, *argv, by_path=False):
        cmd = ([sys.executable, os.path.join(self.ROOT, "reports", "expectations.py")] if by_path
               else [sys.executable, "-m", "reports.expectations"])
        with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as cwd:
            p = subprocess.run(cmd + ["--check", *argv], capture_output=True, text=True, timeout=60,
                               env=testsupport.package_env(), cwd=cwd)
        return p.returncode, p.stdout, p.stderr

    def test_the_committed_files_are_sound(self):
        files = [os.path.join(self.ROOT, "expectations", n) for n in ("common.txt", "nvidia-h200.txt")]
        for by_path in (False, True):
            code, out, err = self.check(*files, by_path=by_path)
            self.assertEqual(code, 0, err)
            self.assertIn("common.txt: ", out)
            self.assertIn(", sound", out)

    def test_a_drafted_update_is_refused_with_file_and_line_until_its_bugs_are_filled_in(self):
        r = run(case("B", "FAIL"))
        d = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        path = os.path.join(d, "nvidia-h200.txt")
        text = ciout.expectations_update(r, cmp.compare(r, None, None))
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        line = 1 + text.splitlines().index(next(l for l in text.splitlines() if l.startswith("fail ")))
        code, _, err = self.check(path, by_path=True)
        self.assertEqual(code, 2)
        self.assertIn(f"{path}:{line}", err)
        self.assertIn("TODO", err)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace("bug=TODO", "bug=https://tracker/1"))
        self.assertEqual(self.check(path)[0], 0)


class ExpectationsTest(unittest.TestCase):
    def test_entries_parse_with_statuses_driver_ranges_and_reasons(self):
        e = expect.parse("fail suites/a:a_test/S.X status=FAIL,CRASH driver=>=580,<590 bug=http://b/1  # known\n"
                         "flake suites/a:a_test/S.F* bug=http://b/2\nskip suites/a:a_test/S.Hang  # hangs\n", "f.txt")
        self.assertEqual([x.kind for x in e], ["fail", "flake", "skip"])
        self.assertEqual(e[0].statuses, {"FAIL", "CRASH"})
        self.assertEqual(e[0].reason, "known")
        self.assertTrue(e[0].matches("suites/a:a_test/S.X", "580.159.04"))
        self.assertFalse(e[0].matches("suites/a:a_test/S.X", "590.1"))
        self.assertFalse(e[0].matches("suites/a:a_test/S.X", ""))
        self.assertTrue(e[1].matches("suites/a:a_test/S.Foo", "1"))
        u = expect.parse("fail x bug=docs/DEVIATIONS.md#r58  # why", "f.txt")[0]
        self.assertEqual((u.bug, u.reason), ("docs/DEVIATIONS.md#r58", "why"))

    def test_parse_errors_name_file_and_line(self):
        for text, needle in [("fial x bug=u", "f.txt:1: unknown kind 'fial'"),
                             ("\nfail x status=PASS bug=u", "f.txt:2: status PASS is not a failing status"),
                             ("fail x", "f.txt:1: every fail entry needs bug="),
                             ("flake x bug=u driver=5x8", "f.txt:1: bad driver bound '5x8'"),
                             ("fail x bug=TODO", "f.txt:1: bug=TODO is a placeholder"),
                             ("fail x bug=u runtime=>=15.0", "f.txt:1: runtime=>=15.0 admits no CUDA runtime"),
                             ("fail x bug=u runtime=13.0 runtime=12.0", "f.txt:1: runtime= given twice"),
                             ("fail x bug=u host=hugepages", "f.txt:1: unknown host fact 'hugepages'"),
                             ("fail x bug=u colour=red", "f.txt:1: unknown key 'colour'"),
                             ("fail", "f.txt:1: 'fail' needs a case pattern"),
                             ("fail x nokey", "f.txt:1: expected key=value"),
                             # once "status  is not a failing status"
                             ("\n\nfail x status=FAIL, bug=u", "f.txt:3: status= is empty in 'status=FAIL,'"),
                             ("fail x status=,, bug=u", "f.txt:1: status= is empty in 'status=,,'")]:
            with self.assertRaises(expect.ExpectationError) as ctx:
                expect.parse(text, "f.txt")
            self.assertIn(needle, str(ctx.exception))

    def test_sku_names(self):
        self.assertEqual(expect.sku_of("NVIDIA H200"), "nvidia-h200")
        self.assertEqual(expect.sku_of("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3")


class CompareTest(unittest.TestCase):
    def exps(self, text):
        return expect.Expectations(expect.parse(text, "e.txt"))

    def test_unexpected_failure_is_a_regression(self):
        c = cmp.compare(run(case("A", "PASS"), case("B", "FAIL")), self.exps(""), run(case("A", "PASS"), case("B", "PASS")))
        self.assertEqual(c.status, {"suites/a:a_test/S.B": "REGRESSION"})
        self.assertEqual(c.exit_code, cmp.EXIT_REGRESSION)

    def test_expected_failure_qualifies_and_unexpected_pass_asks_for_an_update(self):
        e = self.exps("fail suites/a:a_test/S.B status=CRASH bug=u")
        c = cmp.compare(run(case("B", "CRASH")), e, None)
        self.assertEqual(c.status["suites/a:a_test/S.B"], "EXPECTED_FAIL")
        self.assertEqual(c.exit_code, cmp.EXIT_QUALIFIED)
        c = cmp.compare(run(case("B", "PASS")), e, None)
        self.assertEqual(c.status["suites/a:a_test/S.B"], "UNEXPECTED_PASS")
        self.assertEqual(len(c.stale), 1)
        self.assertEqual(c.exit_code, cmp.EXIT_UPDATE)

    def test_an_entry_for_cases_the_run_does_not_hold_is_not_stale(self):
        e = self.exps("fail suites/stress:x_test/* status=FAIL bug=u  # another tier")
        c = cmp.compare(run(case("A", "PASS")), e, None)
        self.assertEqual(c.stale, [])
        self.assertEqual(c.exit_code, cmp.EXIT_QUALIFIED)

    def test_a_fail_entry_whose_case_is_not_supported_here_is_not_stale(self):
        # The case exists but did not run (a capability, or an API this CUDA runtime lacks):
        # the entry says nothing about this run, e.g. a 13.0-layout rule under runtime 11.8.
        e = self.exps("fail suites/a:a_test/S.B status=FAIL bug=u")
        c = cmp.compare(run(case("A", "PASS"), case("B", "NOT_SUPPORTED")), e, None)
        self.assertEqual(c.stale, [])
        self.assertEqual(c.exit_code, cmp.EXIT_QUALIFIED)

    def test_expected_status_must_match(self):
        e = self.exps("fail suites/a:a_test/S.B status=FAIL bug=u")
        c = cmp.compare(run(case("B", "CRASH")), e, None)
        self.assertEqual(c.status["suites/a:a_test/S.B"], "REGRESSION")

    def test_a_known_failure_with_a_message_glob_excuses_only_that_reason(self):
        e = self.exps("fail suites/a:a_test/S.B message=*OOM-killed_the* bug=u  # c06")
        oom = model.Case.from_raw(T, "S", "B", "FAIL", 0.1, "the kernel OOM-killed the child", "", {})
        other = model.Case.from_raw(T, "S", "B", "FAIL", 0.1, "42 bytes differ", "", {})
        self.assertEqual(cmp.compare(run(oom), e, None).status["suites/a:a_test/S.B"], "EXPECTED_FAIL")
        c = cmp.compare(run(other), e, None)
        self.assertEqual(c.status["suites/a:a_test/S.B"], "REGRESSION")
        self.assertIn("only with a message like", c.notes["suites/a:a_test/S.B"])
        with self.assertRaises(expect.ExpectationError):
            expect.parse("flake suites/a:a_test/S.B message=*x* bug=u\n", "f.txt")

    def test_retried_pass_is_a_flake_known_or_not(self):
        flaky = case("F", "PASS", attempts="FAIL PASS")
        self.assertEqual(cmp.compare(run(flaky), self.exps(""), None).status["suites/a:a_test/S.F"], "FLAKE")
        self.assertEqual(cmp.compare(run(flaky), self.exps(""), None).exit_code, cmp.EXIT_UPDATE)
        c = cmp.compare(run(flaky), self.exps("flake suites/a:a_test/S.F bug=u"), None)
        self.assertEqual(c.status["suites/a:a_test/S.F"], "KNOWN_FLAKE")
        self.assertEqual(c.exit_code, cmp.EXIT_QUALIFIED)

    def test_fixed_and_new_against_the_baseline(self):
        c = cmp.compare(run(case("A", "PASS"), case("N", "PASS")), self.exps(""),
                        run(case("A", "FAIL"), case("D", "NOT_SUPPORTED")))
        self.assertEqual(c.status, {"suites/a:a_test/S.A": "FIXED", "suites/a:a_test/S.N": "NEW"})
        self.assertEqual(c.dropped, ["suites/a:a_test/S.D"])
        self.assertEqual(c.dropped_covered, ["suites/a:a_test/S.D"])  # it never ran there either
        self.assertEqual(c.exit_code, cmp.EXIT_QUALIFIED)

    def test_a_dropped_case_that_ran_in_the_baseline_is_lost_coverage(self):
        c = cmp.compare(run(case("A", "PASS")), self.exps(""), run(case("A", "PASS"), case("D", "PASS")))
        self.assertEqual(c.summary["DROPPED"], 1)
        self.assertEqual(c.exit_code, cmp.EXIT_COVERAGE_LOST)
        self.assertEqual(c.verdict[0], "COVERAGE LOST")
        c = cmp.compare(run(case("A", "PASS")), self.exps("coverage suites/a:a_test/S.D bug=u"),
                        run(case("A", "PASS"), case("D", "PASS")))
        self.assertEqual((c.summary["DROPPED"], c.summary["KNOWN_COVERAGE_LOSS"]), (0, 1))
        self.assertEqual(c.exit_code, cmp.EXIT_QUALIFIED)

    def test_not_supported_after_a_pass_is_lost_coverage_not_a_regression(self):
        c = cmp.compare(run(case("A", "NOT_SUPPORTED")), self.exps(""), run(case("A", "PASS")))
        self.assertEqual(c.status, {"suites/a:a_test/S.A": "COVERAGE_LOST"})
        self.assertEqual(c.exit_code, cmp.EXIT_COVERAGE_LOST)
        c = cmp.compare(run(case("A", "NOT_SUPPORTED")), self.exps("coverage suites/a:a_test/S.* bug=u"),
                        run(case("A", "PASS")))
        self.assertEqual(c.status, {"suites/a:a_test/S.A": "KNOWN_COVERAGE_LOSS"})
        self.assertEqual(c.exit_code, cmp.EXIT_QUALIFIED)
        c = cmp.compare(run(case("A", "NOT_SUPPORTED")), self.exps(""), run(case("A", "NOT_SUPPORTED")))
        self.assertEqual(c.exit_code, cmp.EXIT_QUALIFIED)

    def test_the_machine_losing_gpus_or_a_capability_is_lost_coverage(self):
        base = run(case("A", "PASS"), gpu_count="2", gpu0_cudaDevAttrCanMapHostMemory="1")
        for fp, key in [({"gpu_count": "1"}, "fingerprint:gpu_count"),
                        ({"gpu_count": "2", "gpu0_cudaDevAttrCanMapHostMemory": "0"},
                         "fingerprint:gpu0_cudaDevAttrCanMapHostMemory")]:
            now = run(case("A", "PASS"), **dict({"gpu_count": "2", "gpu0_cudaDevAttrCanMapHostMemory": "1"}, **fp))
            c = cmp.compare(now, self.exps(""), base)
            self.assertEqual([m[0] for m in c.machine], [key])
            self.assertEqual(c.exit_code, cmp.EXIT_COVERAGE_LOST, key)
            c = cmp.compare(now, self.exps(f"coverage {key} bug=u"), base)
            self.assertEqual(c.exit_code, cmp.EXIT_QUALIFIED, key)

    def test_no_gpu_never_qualifies_against_a_gpu_baseline_whatever_the_expectations(self):
        now = run(case("A", "NOT_SUPPORTED"), device_status="cudaGetDeviceCount=35")
        e = self.exps("coverage fingerprint:* bug=u\ncoverage suites/* bug=u")
        c = cmp.compare(now, e, run(case("A", "PASS")))
        self.assertEqual(c.exit_code, cmp.EXIT_COVERAGE_LOST)
        self.assertEqual(c.machine[0][0], "fingerprint:device_status")

    def test_a_flake_entry_does_not_cover_a_case_that_failed_every_attempt(self):
        c = cmp.compare(run(case("F", "FAIL", attempts="FAIL FAIL FAIL FAIL")),
                        self.exps("flake suites/a:a_test/S.F bug=u"), None)
        self.assertEqual(c.status["suites/a:a_test/S.F"], "REGRESSION")
        self.assertIn("every attempt failed", c.notes["suites/a:a_test/S.F"])
        self.assertEqual(c.exit_code, cmp.EXIT_REGRESSION)

    def test_an_unknown_status_is_an_infrastructure_error(self):
        c = cmp.compare(run(case("A", "SHINY")), None, None)
        self.assertEqual(c.exit_code, cmp.EXIT_INFRA)

    def test_infra_error_and_empty_runs(self):
        self.assertEqual(cmp.compare(run(case("A", "INFRA_ERROR")), None, None).exit_code, cmp.EXIT_INFRA)
        self.assertEqual(cmp.compare(run(), None, None).exit_code, cmp.EXIT_NOTHING_RAN)

    def test_expectations_update_is_expectations_syntax(self):
        r = run(case("B", "FAIL"))
        text = ciout.expectations_update(r, cmp.compare(r, None, None))
        parsed = expect.parse(text.replace("bug=TODO", "bug=http://x"), "failures.csv")
        self.assertEqual(parsed[0].pattern, "suites/a:a_test/S.B")

    def test_missing_expectations_directory_is_an_error(self):
        with self.assertRaises(expect.ExpectationError):
            expect.load("/nonexistent/expectations", "sku")


def _writer(path, n):
    db = history.connect(path)
    for i in range(5):
        r = run(case("A", "PASS", h2d_pinned_GBps="50.0"))
        history.store(db, f"w{n}-{i}", "t", r, cmp.compare(r, None, None), "sku", "c", 0, "QUALIFIED")


class HistoryTest(unittest.TestCase):
    def setUp(self):
        self.path = os.path.join(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")), "h.sqlite")
        self.db = history.connect(self.path)

    def put(self, key, status, driver, metric=None):
        props = {"h2d_pinned_GBps": str(metric)} if metric is not None else {}
        r = run(case("A", status, **props), driver=driver)
        history.store(self.db, key, key, r, cmp.compare(r, None, None), "nvidia-h200", "abc", 0, "v")

    def test_bracket_is_last_pass_then_first_fail(self):
        for key, st, drv in [("r1", "PASS", "570"), ("r2", "PASS", "575"), ("r3", "FAIL", "580"), ("r4", "FAIL", "581")]:
            self.put(key, st, drv)
        last_pass, first_fail = history.bracket(self.db, "suites/a:a_test/S.A", "nvidia-h200")
        self.assertEqual((last_pass["run_key"], last_pass["nvidia_driver"]), ("r2", "575"))
        self.assertEqual((first_fail["run_key"], first_fail["nvidia_driver"]), ("r3", "580"))

    def test_trend_is_oldest_first(self):
        for i, v in enumerate([50.0, 51.0, 40.0]):
            self.put(f"r{i}", "PASS", "580", metric=v)
        self.assertEqual([t[2] for t in history.trend(self.db, "h2d_pinned_GBps", "nvidia-h200")], [50.0, 51.0, 40.0])

    def test_a_run_that_fails_half_way_leaves_nothing(self):
        bad = run(case("A", "PASS"))
        bad.cases.append(None)  # the second case breaks the insert, after the run row was written
        with self.assertRaises(Exception):
            history.store(self.db, "half", "t", bad, None, "nvidia-h200", "c", 0, "v")
        self.assertEqual(self.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0], 0)
        self.assertEqual(self.db.execute("SELECT COUNT(*) FROM cases").fetchone()[0], 0)
        self.put("after", "PASS", "580")
        self.assertEqual(self.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0], 1)

    def test_concurrent_writers_all_land(self):
        procs = [multiprocessing.Process(target=_writer, args=(self.path, n)) for n in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
            self.assertEqual(p.exitcode, 0)
        db = sqlite3.connect(self.path)
        self.assertEqual(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0], 20)
        self.assertEqual(db.execute("SELECT COUNT(*) FROM metrics").fetchone()[0], 20)


if __name__ == "__main__":
    unittest.main()
