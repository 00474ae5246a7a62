"""qualify against hostile inputs, and the newcomer path (reliability reviews 3 and 4), on bundles
of tools/testdata/fakegt.py (tools/hostile_qualify_support.py):

- a run in which nothing passed never qualifies;
- fingerprint values never steer where a run folder goes;
- wrong-typed baselines, /dev/zero, links to it and FIFOs are exit 2 before any test runs, and so
  is a baseline beyond the limits;
- hostile case names under C, C.UTF-8 and Latin-1 locales;
- --baseline auto takes the run stored last, and the one before when the newest folder is gone;
- tools/qualify says "no usable GPU" in seconds before installing or building anything, and
  install_deps.sh installs the fleet's servers and Chromium only when asked.
The hostile moments are tools/hostile_qualify_moments_test.py's.
"""

import datetime
import json
import os
import resource
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
import unittest
from unittest import mock

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.hostile_qualify_inputs_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import compare as cmp
from reports import model
from tools.hostile_qualify_support import FAKE_SUITE, ROOT, Base, signal_self_during
from tools.qualification import plan as qualify_plan
from tools.qualification import preflight, running


class NothingPassedNeverQualifies(Base):
    """Row #2 (verdict): no case passed, so nothing was exercised."""

    def test_every_case_not_supported_without_a_gpu_is_not_qualified(self):
        b = os.path.join(self.tmp, "suite")
        os.makedirs(os.path.join(b, "bin"))
        shutil.copy(FAKE_SUITE, os.path.join(b, "bin", "s"))
        os.chmod(os.path.join(b, "bin", "s"), 0o755)
        with open(os.path.join(b, "manifest.json"), "w") as f:
            json.dump({"info": {"commit": "t"}, "targets": [
                {"label": "//selftest:s", "path": "bin/s", "timeout_s": 30, "tags": ["gpu", "tier_bat"]}]}, f)
        os.environ["FAKE_DEVICE_STATUS"] = "cudaGetDeviceCount=35 (cudaErrorInsufficientDriver)"
        for baseline in ("none", "auto"):  # auto: the first run of a SKU with no baselines/<sku>
            rc = self.qualify(b, "--allow-no-gpu", "--baseline", baseline)
            self.assertEqual(rc, cmp.EXIT_NOTHING_RAN, self.output)
            self.assertIn("no case passed", self.output)
            self.assertEqual(self.results()["info"]["verdict"], "NOTHING RAN")

    def test_only_expected_failures_is_not_qualified(self):
        b = self.bundle({"x": {"cases": ["S.B=fail"]}})
        with open(os.path.join(self.exp, "nvidia-h200.txt"), "w") as f:
            f.write("fail fake:x/S.B status=FAIL bug=b1\n")
        self.assertEqual(self.qualify(b, "--baseline", "none"), cmp.EXIT_NOTHING_RAN, self.output)

    def test_an_infra_error_case_is_never_qualified(self):
        # A target whose listing is empty is an INFRA_ERROR case (the runner); beside a pass.
        b = self.bundle({"x": {"cases": ["S.A"]}})
        real = running.load_run

        def with_infra_error(plan, testlogs):
            run = real(plan, testlogs)
            broken = model.Case(model.CaseId("//fake:y", "(binary)", "y"),
                                model.Status.INFRA_ERROR, message="listed no case")
            run.cases.append(broken)
            return run
        with mock.patch.object(running, "load_run", with_infra_error):
            self.assertEqual(self.qualify(b, "--baseline", "none"), cmp.EXIT_INFRA, self.output)

    def test_a_run_with_a_pass_still_qualifies(self):
        self.assertEqual(self.qualify(self.bundle(), "--baseline", "none"), 0, self.output)


class PathsFromTheFingerprint(Base):
    """Row #5: a driver string with ../ never moves the run folder out of --out."""

    def test_driver_with_dot_dot_stays_inside_out(self):
        b = self.bundle({"x": {"cases": ["S.A"], "fp": {"nvidia_driver": "580/../../../escaped_run",
                                                       "host": "../../h/../x"}}})
        out = os.path.join(self.tmp, "q", "deep")
        self.assertEqual(self.qualify(b, "--baseline", "none", out=out), 0, self.output)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "escaped_run")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "q", "escaped_run")))
        dirs = self.run_dirs(out)
        self.assertEqual(len(dirs), 1)
        self.assertNotIn("/", os.path.relpath(dirs[0], out))
        for dirpath, _, files in os.walk(self.tmp):
            for f in files:
                path = os.path.realpath(os.path.join(dirpath, f))
                self.assertTrue(path.startswith(os.path.realpath(out) + os.sep) or
                                not path.startswith(os.path.realpath(os.path.join(self.tmp, "q"))), path)

    def test_path_part_leaves_one_safe_component(self):
        for text in ("580/../../x", "..", "/", "a_b", "\n", "x" * 500, ""):
            part = qualify_plan.path_part(text, "d")
            self.assertRegex(part, r"^[A-Za-z0-9-][A-Za-z0-9.-]{0,63}$", text)
            self.assertNotIn(part, (".", ".."))


class BadInputsBeforeAnyTest(Base):
    """Rows #13 and #19: exit 2 naming the field or the path, before any test runs."""

    def refused(self, rc, needle):
        self.assertEqual(rc, cmp.EXIT_CONFIG, self.output)
        self.assertIn(needle, self.output)
        self.assertNotIn("Traceback", self.output)
        self.assertEqual(self.run_dirs(), [], "a run folder was created: tests ran")

    def write(self, name, doc):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def test_wrong_typed_baseline_fields_are_named(self):
        b = self.bundle()
        for doc, needle in [
                ({"run": {"cases": [{"target": 5, "suite": "S", "name": "A", "status": "PASS"}]}},
                 "run.cases[0].target"),
                ({"run": {"fingerprint": {"nvidia_driver": 580}, "cases": []}}, "run.fingerprint.nvidia_driver"),
                ({"info": {"bundle": "x"}, "run": {"cases": []}}, "info.bundle")]:
            self.refused(self.qualify(b, "--baseline", self.write("bl.json", doc)), needle)

    def test_wrong_typed_earlier_run_is_passed_over_by_auto(self):
        # A SKU without a committed baselines/<sku>: passed over, the baseline is none.
        b = self.bundle({"x": {"cases": ["S.A", "S.B"], "fp": {"gpu0_name": "Fake GPU 9"}}})
        self.assertEqual(self.qualify(b, "--baseline", "none"), 0, self.output)
        first = self.run_dirs()[-1]
        res = self.results(first)
        res["run"]["cases"][0]["target"] = 5
        with open(os.path.join(first, "results.json"), "w") as f:
            json.dump(res, f)
        # Passed over, no baseline is left: the SKU's first night.
        self.assertEqual(self.qualify(b), cmp.EXIT_FIRST_NIGHT, self.output)
        self.assertIn("passes over", self.output)
        self.assertIn("run.cases[0].target", self.output)

    def test_a_time_scale_the_runner_refuses_is_refused_before_the_run_folder(self):
        # qualify checked only > 0: 1e-300 and 1e308 reached the runner, which said BAD_BUNDLE
        # (exit 1) and left an empty run folder.
        b = self.bundle()
        for scale in ("1e-300", "1e308", "inf", "nan", "0", "-1"):
            self.refused(self.qualify(b, "--baseline", "none", "--time-scale", scale), "--time-scale must be")
        self.assertFalse(os.path.exists(self.out), "an empty --out was left")

    def run_limited(self, *args):
        """qualify in a child with 2 GB of address space and 60 s: a reader of /dev/zero would
        die of MemoryError, one of a FIFO would hang."""
        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "qualify.py"), "--out", self.out,
                            "--tier", "bat", *args], capture_output=True, text=True, timeout=60,
                           preexec_fn=limit)
        self.output = p.stdout + p.stderr
        return p.returncode

    def test_dev_zero_as_the_baseline(self):
        b = self.bundle()
        self.refused(self.run_limited("--bundle", b, "--expectations", self.exp, "--baseline", "/dev/zero"),
                     "/dev/zero")
        self.assertIn("character device", self.output)

    def test_expectations_linked_to_dev_zero(self):
        b = self.bundle()
        os.symlink("/dev/zero", os.path.join(self.exp, "nvidia-h200.txt"))
        self.refused(self.run_limited("--bundle", b, "--expectations", self.exp, "--baseline", "none"),
                     os.path.join(self.exp, "nvidia-h200.txt"))

    def test_fifos_as_expectations_baseline_and_manifest(self):
        b = self.bundle()
        fifo = os.path.join(self.tmp, "fifo")
        os.mkfifo(fifo)
        self.refused(self.run_limited("--bundle", b, "--expectations", self.exp, "--baseline", fifo), fifo)
        os.symlink(fifo, os.path.join(self.exp, "common.txt"))
        self.refused(self.run_limited("--bundle", b, "--expectations", self.exp, "--baseline", "none"),
                     os.path.join(self.exp, "common.txt"))
        os.unlink(os.path.join(self.exp, "common.txt"))
        self.refused(self.run_limited("--bundle", b, "--expectations", self.exp, "--baseline", "none",
                                      "--history", fifo), fifo)
        os.unlink(os.path.join(b, "manifest.json"))
        os.mkfifo(os.path.join(b, "manifest.json"))
        self.refused(self.run_limited("--bundle", b, "--expectations", self.exp, "--baseline", "none"),
                     os.path.join(b, "manifest.json"))


class BaselineLimits(Base):
    """Reliability review 4, #7: a baseline beyond the stated limits (model.RESULTS_MAX_CASES,
    RESULTS_MAX_BYTES; docs/qualification.md, Limits) is exit 2 naming the limit, before any
    test runs; one within them is read case by case (tools/large_baseline_bench.py measures
    10^6 cases)."""

    def test_a_baseline_beyond_the_limit_is_refused_before_any_test_runs(self):
        b = self.bundle()
        self.assertEqual(self.qualify(b, "--baseline", "none"), 0, self.output)
        baseline = os.path.join(self.run_dirs()[-1], "results.json")
        with mock.patch.object(model, "RESULTS_MAX_CASES", 1):
            rc = self.qualify(b, "--baseline", baseline, out=os.path.join(self.tmp, "o2"))
        self.assertEqual(rc, cmp.EXIT_CONFIG, self.output)
        self.assertIn("more than 1 cases, the most a baseline or results file may hold", self.output)
        self.assertEqual(self.run_dirs(os.path.join(self.tmp, "o2")), [])
        # --baseline auto passes over an earlier run beyond the limit, saying so
        with mock.patch.object(model, "RESULTS_MAX_CASES", 1):
            rc = self.qualify(b, "--baseline", "auto")
        self.assertEqual(rc, cmp.EXIT_FIRST_NIGHT, self.output)  # passed over: no baseline is left
        self.assertIn("passes over", self.output)


HOSTILE_NAMES = {"cases": [{"id": "S.nul\u0000byte", "act": ["fail"]},
                           {"id": "S.esc\u001b[31mred\u0001\u2028x", "act": []},
                           {"id": "S.\u65e5\u672c\u00dcn\u00ef", "act": ["prop:k=v\u00e4rde"]},
                           "S.ok", "S.B=fail"], "xml": "badbytes"}


class HostileNamesInEveryLocale(Base):
    """Reliability review 4, 6b and 9b: names with a NUL, an ESC, \\x01, U+2028 and CJK, and a
    failure message with raw 0xff 0xfe (U+FFFD once read), under C (Python's UTF-8 mode off),
    C.UTF-8 and a Latin-1 locale: the verdict is REGRESSIONS every time, the page and the history
    row are written, every case is there once, and no output holds a raw control byte."""

    def latin1(self):
        loc = os.path.join(self.tmp, "locales")
        os.makedirs(loc)
        r = subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1", os.path.join(loc, "en_US.ISO-8859-1")],
                           capture_output=True)
        if r.returncode not in (0, 1) or not os.path.isdir(os.path.join(loc, "en_US.ISO-8859-1")):
            return None
        return {"LOCPATH": loc, "LANG": "en_US.ISO-8859-1", "LC_ALL": "en_US.ISO-8859-1", "PYTHONUTF8": "0"}

    def test_every_text_file_and_pipe_of_the_tools_is_utf8(self):
        # The Latin-1 failure (6b) was an open() without encoding=: none is left in tools/ or
        # reports/ (the files this test can see: all of them outside Bazel, its runfiles in it).
        import ast
        bad = []
        for top in ("tools", "reports"):
            for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
                for f in files:
                    if not f.endswith(".py") or f.endswith("_test.py"):
                        continue
                    path = os.path.join(dirpath, f)
                    with open(path, encoding="utf-8") as fh:
                        tree = ast.parse(fh.read())
                    for node in ast.walk(tree):
                        if not isinstance(node, ast.Call):
                            continue
                        fn = node.func
                        name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", None)
                        kws = {k.arg for k in node.keywords}
                        if name == "open" and (isinstance(fn, ast.Name) or getattr(fn.value, "id", "") == "io"):
                            mode = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                                else next((k.value.value for k in node.keywords if k.arg == "mode"
                                           and isinstance(k.value, ast.Constant)), "r")
                            if "b" not in str(mode) and "encoding" not in kws:
                                bad.append(f"{os.path.relpath(path, ROOT)}:{node.lineno} open()")
                        elif name in ("Popen", "run", "check_output") and ({"text", "universal_newlines"} & kws) \
                                and "encoding" not in kws:
                            bad.append(f"{os.path.relpath(path, ROOT)}:{node.lineno} {name}(text=True)")
        self.assertEqual(bad, [], "text I/O without encoding='utf-8' follows the locale")

    def test_hostile_names_under_c_c_utf8_and_latin1(self):
        b = self.bundle({"names": HOSTILE_NAMES})
        locales = {"C": {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""},
                   "C.UTF-8": {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}}
        latin1 = self.latin1()
        if latin1:
            locales["Latin-1"] = latin1
        for name, env in locales.items():
            out = os.path.join(self.tmp, "runs-" + name.replace(".", ""))
            p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "qualify.py"), "--bundle", b, "--out", out,
                                "--expectations", self.exp, "--tier", "bat", "--retries", "0", "--baseline", "none"],
                               env=dict(os.environ, PAGELOCK_NO_REEXEC="1", **env), capture_output=True, timeout=300)
            said = p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")
            self.assertEqual(p.returncode, cmp.EXIT_REGRESSION, f"{name}: {said}")
            self.assertNotIn("Traceback", said, name)
            run_dir = self.run_dirs(out)[-1]
            res = self.results(run_dir)
            ids = [f"{c['suite']}.{c['name']}" for c in res["run"]["cases"]]
            self.assertEqual(sorted(ids), sorted(["S.nul\\x00byte", "S.esc\\x1b[31mred\\x01\\u2028x",
                                                  "S.\u65e5\u672c\u00dcn\u00ef", "S.ok", "S.B"]), name)
            for f in ("index.html", "junit.xml", "results.csv", "failures.csv", "results.json",
                      "expectations-update.txt"):
                with open(os.path.join(run_dir, f), "rb") as fh:
                    data = fh.read()
                self.assertEqual([b for b in (b"\x00", b"\x01", b"\x1b") if b in data], [], f"{name}: {f}")
                data.decode("utf-8")  # UTF-8 whatever the locale
            self.assertIn("\ufffd", next(c for c in res["run"]["cases"] if c["name"] == "B")["message"])
            db = sqlite3.connect(os.path.join(out, "history.sqlite"))
            self.assertEqual(db.execute("SELECT n_cases FROM runs").fetchall(), [(5,)], name)
            db.close()


class BaselineAuto(Base):
    """Row #7 and §4c: the run stored last, whatever the clocks said; never silently none."""

    def test_a_run_from_a_clock_a_day_behind_is_still_the_latest(self):
        two = self.bundle({"x": {"cases": ["S.A", "S.B"]}}, name="two")
        four = self.bundle({"x": {"cases": ["S.A", "S.B", "S.C", "S.D"]}}, name="four")
        self.assertEqual(self.qualify(two, "--baseline", "none"), 0, self.output)
        real = datetime.datetime

        class DayBehind(real):
            @classmethod
            def now(cls, tz=None):
                return real.now(tz) - datetime.timedelta(days=1)
        time.sleep(0.05)
        with mock.patch.object(datetime, "datetime", DayBehind):
            self.assertEqual(self.qualify(four, "--baseline", "auto"), cmp.EXIT_QUALIFIED, self.output)
        time.sleep(0.05)
        # Against the four-case run stored last: two cases dropped.
        self.assertEqual(self.qualify(two, "--baseline", "auto"), cmp.EXIT_COVERAGE_LOST, self.output)
        self.assertEqual(self.results(max(self.run_dirs(), key=lambda d: os.path.getmtime(
            os.path.join(d, "results.json"))))["summary"]["DROPPED"], 2)

    def test_deleting_the_newest_run_folder_falls_back_to_the_one_before(self):
        b = self.bundle()
        self.assertEqual(self.qualify(b, "--baseline", "none"), 0, self.output)
        first = self.run_dirs()[-1]
        time.sleep(0.05)
        self.assertEqual(self.qualify(b), 0, self.output)
        newest = [d for d in self.run_dirs() if d != first][-1]
        shutil.rmtree(newest)
        self.assertEqual(self.qualify(b), 0, self.output)
        latest = max(self.run_dirs(), key=lambda d: os.path.getmtime(os.path.join(d, "results.json")))
        self.assertEqual(self.results(latest)["info"]["baseline"],
                         os.path.abspath(os.path.join(first, "results.json")))

    def test_an_interrupted_run_is_never_the_baseline(self):
        b = self.bundle()
        self.assertEqual(self.qualify(b, "--baseline", "none"), 0, self.output)
        first = self.run_dirs()[-1]
        time.sleep(0.05)
        with signal_self_during(cmp, "compare"):
            self.assertEqual(self.qualify(b, "--baseline", "none"), 7, self.output)
        self.assertEqual(self.qualify(b), 0, self.output)
        latest = max(self.run_dirs(), key=lambda d: os.path.getmtime(os.path.join(d, "results.json")))
        self.assertEqual(self.results(latest)["info"]["baseline"],
                         os.path.abspath(os.path.join(first, "results.json")))


def copy_tree_for_the_wrapper(dest):
    """tools/qualify with its Python, and install_deps.sh / bundle.py replaced by stand-ins that
    leave a marker file: what the wrapper ran before it gave up is visible."""
    for pkg in ("tools", "tools/qualification", "tools/runner", "reports"):
        os.makedirs(os.path.join(dest, pkg), exist_ok=True)
        for n in os.listdir(os.path.join(ROOT, pkg)):
            src = os.path.join(ROOT, pkg, n)
            if ((n.endswith(".py") and not n.endswith("_test.py")) or n == "settings.tsv") and os.path.isfile(src):
                shutil.copy(src, os.path.join(dest, pkg, n))
    shutil.copy(os.path.join(ROOT, "tools", "qualify"), os.path.join(dest, "tools", "qualify"))
    os.chmod(os.path.join(dest, "tools", "qualify"), 0o755)
    stand_ins = {"install_deps.sh": f"#!/bin/sh\necho ran > {dest}/install_deps.sh.ran\n",
                 "bundle.py": f"open({dest + '/bundle.py.ran'!r}, 'w').close()\nraise SystemExit(1)\n"}
    for name, text in stand_ins.items():
        path = os.path.join(dest, "tools", name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)


class Newcomer(Base):
    """No GPU is said first, in seconds; nothing is installed for bad input."""

    def wrapper(self, *args, env=None):
        root = os.path.join(self.tmp, "tree")
        if not os.path.isdir(root):
            copy_tree_for_the_wrapper(root)
        start = time.monotonic()
        p = subprocess.run([os.path.join(root, "tools", "qualify"), *args], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, **(env or {})))
        self.output = p.stdout + p.stderr
        self.ran = sorted(n for n in os.listdir(root) if n.endswith(".ran"))
        return p.returncode, time.monotonic() - start

    def test_no_gpu_is_said_in_seconds_before_any_install_or_build(self):
        ok, why = preflight.probe_gpu()
        if ok:
            self.skipTest(f"this machine has a GPU ({why})")
        rc, seconds = self.wrapper("--out", self.out)
        self.assertEqual(rc, cmp.EXIT_INFRA, self.output)
        self.assertIn("no usable GPU on this machine", self.output)
        # What to run instead: the harness's own tests (ux review finding 4: the hint said
        # --allow-no-gpu "runs the harness self-tests", which installs, builds and runs the GPU
        # suites into NOTHING RAN).
        self.assertIn("The tests of the harness need no GPU: tools/test.sh", self.output)
        self.assertIn("--allow-no-gpu runs the GPU suites anyway", self.output)
        self.assertNotIn("runs the harness self-tests", self.output)
        self.assertLess(seconds, 5.0)
        self.assertEqual(self.ran, [], "installed or built before saying there is no GPU")
        self.assertFalse(os.path.exists(self.out), "an empty --out was left")

    def test_reading_a_run_folder_needs_no_gpu_install_or_build(self):
        # --repro and --draft-expectations read a run folder: no GPU check, no install, no build.
        for args in (["--repro", "S.Case", "--out", self.out], ["--draft-expectations", self.out]):
            rc, seconds = self.wrapper(*args)
            self.assertEqual(rc, cmp.EXIT_CONFIG, (args, self.output))  # no such run
            self.assertNotIn("no usable GPU", self.output)
            self.assertEqual(self.ran, [], (args, "installed or built to read a run folder"))

    def test_allow_no_gpu_still_goes_on_to_install_and_build(self):
        rc, _ = self.wrapper("--out", self.out, "--allow-no-gpu")
        self.assertEqual(self.ran, ["bundle.py.ran", "install_deps.sh.ran"], self.output)

    def test_bad_arguments_fail_before_anything_is_installed(self):
        for args in (["--bogus"], ["--tier", "bogus"], ["--retries", "abc"], ["--retries", "-1"],
                     ["--baseline", os.path.join(self.tmp, "nope")]):
            rc, _ = self.wrapper("--allow-no-gpu", *args)
            self.assertEqual(rc, cmp.EXIT_CONFIG, (args, self.output))
            self.assertEqual(self.ran, [], (args, "installed before rejecting the arguments"))

    def test_usage_names_the_command_the_readme_runs(self):
        # It said "usage: qualify.py", a file the README never runs.
        rc, _ = self.wrapper("--allow-no-gpu", "--bogus")
        self.assertEqual(rc, cmp.EXIT_CONFIG, self.output)
        self.assertTrue(self.output.startswith("usage: tools/qualify "), self.output)
        self.assertIn("tools/qualify: error: unrecognized arguments: --bogus", self.output)

    def test_with_json_a_usage_error_is_one_json_object_on_stdout(self):
        # Through the wrapper, as the README runs it: stdout was empty for argparse's errors.
        root = os.path.join(self.tmp, "tree")
        if not os.path.isdir(root):
            copy_tree_for_the_wrapper(root)
        p = subprocess.run([os.path.join(root, "tools", "qualify"), "--allow-no-gpu", "--json", "--bogus"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, cmp.EXIT_CONFIG, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual((doc["tool"], doc["exit_code"], doc["verdict"]), ("qualify", 2, "BAD CONFIGURATION"))
        self.assertIn("unrecognized arguments: --bogus", doc["error"])
        self.assertIn("usage: tools/qualify", p.stderr)

    def test_tools_the_readme_runs_directly_are_executable(self):
        # Executable without '#!' is worse than not executable: the shell runs the Python file as
        # a script (history.py said "line 51: PRAGMA: command not found").
        for rel in ("tools/qualify", "tools/install_deps.sh", "tools/test.sh", ".ci/run",
                    "tools/mutation/mutation.py", "tools/runner/done_check.py", "tools/qualify.py",
                    "reports/history.py"):
            path = os.path.join(ROOT, rel)
            if os.path.exists(path):
                self.assertTrue(os.stat(path).st_mode & stat.S_IXUSR, f"{rel} is not executable")
                with open(path, "rb") as f:
                    self.assertEqual(f.read(2), b"#!", f"{rel} has no '#!' line")


class InstallDeps(Base):
    """A lab machine gets only what qualification needs; CI asks for the rest."""

    def packages(self, *args, env=None):
        fake = os.path.join(self.tmp, "fakebin")
        os.makedirs(fake, exist_ok=True)
        log = os.path.join(self.tmp, "apt.log")
        for name, body in (("dpkg-query", "exit 1"), ("apt-get", f'echo "$@" >> {log}'),
                           ("sudo", 'exec "$@"'), ("bazel", "echo bazel 4.2.3")):
            with open(os.path.join(fake, name), "w") as f:
                f.write(f"#!/bin/sh\n{body}\n")
            os.chmod(os.path.join(fake, name), 0o755)
        cuda = os.path.join(self.tmp, "cuda")
        os.makedirs(os.path.join(cuda, "bin"), exist_ok=True)
        with open(os.path.join(cuda, "bin", "nvcc"), "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(os.path.join(cuda, "bin", "nvcc"), 0o755)
        if os.path.exists(log):
            os.unlink(log)
        e = {k: v for k, v in os.environ.items() if not k.startswith("PAGELOCK_")}
        e.update(PATH=fake + os.pathsep + os.environ["PATH"], CUDA_PATH=cuda, **(env or {}))
        p = subprocess.run([os.path.join(ROOT, "tools", "install_deps.sh"), *args], env=e,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(log) as f:
            return " ".join(l for l in f if l.startswith("install")).split()

    def test_default_installs_no_fleet_server_and_no_browser(self):
        got = self.packages()
        self.assertIn("bazel-bootstrap", got)
        for p in ("postgresql", "slurmctld", "slurmd", "munge", "chromium"):
            self.assertNotIn(p, got)

    def test_fleet_and_browser_only_when_asked(self):
        self.assertIn("postgresql", self.packages("--with-fleet"))
        self.assertIn("munge", self.packages(env={"PAGELOCK_FLEET_TEST": "1"}))
        self.assertIn("chromium", self.packages("--with-browser"))
        self.assertNotIn("postgresql", self.packages("--with-browser"))

    def test_ci_asks_for_the_fleet_and_the_browser(self):
        if not os.path.exists(os.path.join(ROOT, ".ci", "run")):
            self.skipTest(".ci/run is not in this tree (Bazel's runfiles hold only tools/)")
        with open(os.path.join(ROOT, ".ci", "run")) as f:
            ci = f.read()
        self.assertIn("PAGELOCK_FLEET_TEST=1", ci)
        with open(os.path.join(ROOT, "tools", "test.sh")) as f:
            test_sh = f.read()
        self.assertIn("--with-browser", test_sh)
        self.assertIn("--with-fleet", test_sh)


if __name__ == "__main__":
    unittest.main()
