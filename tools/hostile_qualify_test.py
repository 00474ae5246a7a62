"""qualify and the mutation tool against hostile moments and inputs (reliability review 3), on
bundles of tools/testdata/fakegt.py (a scriptable fake GoogleTest binary, no GPU needed):

- a signal at every moment (comparing, rendering, storing the history, a second signal while
  finishing, SIGHUP) leaves a run folder whose results.json says INTERRUPTED, exit 7, and a
  history row never links a page that is not there;
- SIGINT, SIGTERM and SIGHUP to mutation.py, or SIGTERM to qualify --mutation, stop every runner
  and every test binary under the shim (they run in sessions of their own): exit 7, nothing left;
- a run in which nothing passed never qualifies;
- fingerprint values never steer where a run folder goes;
- wrong-typed baselines, /dev/zero, links to it and FIFOs are exit 2 before any test runs;
- --baseline auto takes the run stored last, and the one before when the newest folder is gone;
- tools/qualify says "no usable GPU" in seconds before installing or building anything, and
  install_deps.sh installs the fleet's servers and Chromium only when asked.
"""

import argparse
import contextlib
import datetime
import glob
import io
import json
import os
import resource
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import uuid
from unittest import mock

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.hostile_qualify_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import compare as cmp
from reports import history
from reports import htmlreport
from reports import model
from tools import qualify
from tools.qualification import plan as qualify_plan
from tools.qualification import preflight, running


def repo_root():
    srcdir = os.environ.get("TEST_SRCDIR")
    if srcdir:
        return os.path.join(srcdir, os.environ.get("TEST_WORKSPACE", "pagelock"))
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


ROOT = repo_root()
if __name__ == "__main__":  # the shared PostgreSQL history case needs Debian's psycopg2
    from reports import interpreter
    interpreter.reexec_if_missing("psycopg2", __file__, ROOT)
FAKEGT = os.path.join(ROOT, "tools", "testdata", "fakegt.py")
FAKE_SUITE = os.path.join(ROOT, "tools", "testdata", "fake_suite.py")
SLEEP_UNDER_FAULT = {"cases": ["S.A", {"id": "S.B", "act": ["sleepif:PAGELOCK_FAULT:60"]}]}


def marked(mark):
    """Live processes whose environment holds FAKE_MARK=mark."""
    needle = f"FAKE_MARK={mark}".encode()
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{p}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in env and state != "Z":
            found.append((int(p), cmd))
    return found


def make_bundle(dest, targets, timeout_s=20, with_tools=False):
    """A bundle of fakegt.py copies, one per {name: spec}, labels //fake:<name>. with_tools: the
    runner and reports/ inside (as tools/bundle.py ships them), a stand-in shim file and a
    one-fault catalogue, enough for the mutation tool to start its runs."""
    os.makedirs(os.path.join(dest, "bin"))
    entries = []
    for name, spec in targets.items():
        path = os.path.join("bin", name)
        shutil.copy(FAKEGT, os.path.join(dest, path))
        os.chmod(os.path.join(dest, path), 0o755)
        with open(os.path.join(dest, path + ".spec.json"), "w") as f:
            json.dump(spec, f)
        entries.append({"label": f"//fake:{name}", "path": path, "timeout_s": timeout_s,
                        "tags": ["gpu", "tier_bat"]})
    with open(os.path.join(dest, "manifest.json"), "w") as f:
        json.dump({"info": {"commit": "fake"}, "targets": entries}, f)
    if with_tools:
        for pkg in ("tools/runner", "reports"):
            os.makedirs(os.path.join(dest, pkg))
            for n in os.listdir(os.path.join(ROOT, pkg)):
                if n.endswith(".py") and not n.endswith("_test.py"):
                    shutil.copy(os.path.join(ROOT, pkg, n), os.path.join(dest, pkg, n))
        open(os.path.join(dest, "tools", "__init__.py"), "w").close()
        os.makedirs(os.path.join(dest, "faults"))
        # The fakes never load libcuda: any file stands in for the shim.
        with open(os.path.join(dest, "faults", "libcuda.so.1"), "w") as f:
            f.write("not a library\n")
        with open(os.path.join(dest, "faults", "catalogue.tsv"), "w") as f:
            f.write("name\trule\tfamily\tkind\tentries\tdescription\n"
                    "htod_corrupts_last_byte\tR76\thostalloc\tdata\t\ta wrong last byte\n")
    return dest


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.out = os.path.join(self.tmp, "runs")
        self.exp = os.path.join(self.tmp, "expectations")
        os.makedirs(self.exp)
        self.mark = uuid.uuid4().hex
        self.saved_env = dict(os.environ)
        os.environ["FAKE_MARK"] = self.mark

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved_env)
        for pid, _ in marked(self.mark):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def bundle(self, targets=None, name="bundle", **kw):
        return make_bundle(os.path.join(self.tmp, name), targets or {"x": {"cases": ["S.A", "S.B"]}}, **kw)

    def qualify(self, bundle, *extra, out=None):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = qualify.main(["--bundle", bundle, "--out", out or self.out, "--expectations", self.exp,
                               "--tier", "bat", "--retries", "0", *extra])
        self.output = buf.getvalue()
        return rc

    def run_dirs(self, out=None):
        return sorted(d for d in glob.glob(os.path.join(out or self.out, "2*")) if os.path.isdir(d))

    def results(self, run_dir=None):
        run_dir = run_dir or self.run_dirs()[-1]
        with open(os.path.join(run_dir, "results.json")) as f:
            return json.load(f)

    def assert_history_links_only_pages_that_exist(self):
        path = os.path.join(self.out, "history.sqlite")
        if not os.path.exists(path):
            return
        db = sqlite3.connect(path)
        rows = db.execute("SELECT run_key, report FROM runs").fetchall()
        db.close()
        for key, report in rows:
            self.assertTrue(report is None or os.path.exists(report),
                            f"history row {key} links {report}, which does not exist")

    def assert_nothing_left(self):
        deadline = time.monotonic() + 5
        while marked(self.mark) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(marked(self.mark), [], "processes of the run were left behind")


def signal_self_during(target, attribute, sig=signal.SIGTERM, every_call=False):
    """Patches target.attribute so that calling it first sends sig to this process (the handler
    runs inside the call): a signal at exactly that moment of qualify."""
    original = getattr(target, attribute)
    sent = []

    def wrapper(*args, **kwargs):
        if every_call or not sent:
            sent.append(1)
            os.kill(os.getpid(), sig)
        return original(*args, **kwargs)
    return mock.patch.object(target, attribute, wrapper)


class SignalAtEveryMoment(Base):
    """Row #4: a signal after the tests finished, or a second one, still marks the run."""

    def assert_interrupted(self, rc, during):
        self.assertEqual(rc, cmp.EXIT_INTERRUPTED, self.output)
        self.assertNotIn("Traceback", self.output)
        res = self.results()
        self.assertEqual((res["info"]["verdict"], res["info"]["exit_code"]), ("INTERRUPTED", 7))
        self.assertEqual(res["info"]["interrupted_during"], during)
        self.assertEqual(len(res["run"]["cases"]), 2, "the finished cases are kept")
        self.assert_history_links_only_pages_that_exist()
        return res

    def test_sigterm_while_comparing(self):
        b = self.bundle()
        with signal_self_during(cmp, "compare"):
            rc = self.qualify(b, "--baseline", "none")
        self.assert_interrupted(rc, "comparing")

    def test_sigterm_while_rendering_leaves_no_history_row_to_a_missing_page(self):
        b = self.bundle()
        with signal_self_during(htmlreport, "render_qualification"):
            rc = self.qualify(b, "--baseline", "none")
        self.assert_interrupted(rc, "rendering")
        self.assertFalse(os.path.exists(os.path.join(self.run_dirs()[-1], "index.html.part")))

    def test_sigterm_while_storing_the_history(self):
        b = self.bundle({"x": {"cases": ["S.A", "S.B=fail"]}})
        with signal_self_during(history, "store_new"):
            rc = self.qualify(b, "--baseline", "none")
        res = self.assert_interrupted(rc, "storing the history")
        self.assertEqual(res["info"]["verdict_reached"], "REGRESSIONS")
        with open(os.path.join(self.run_dirs()[-1], "index.html")) as f:
            self.assertIn("INTERRUPTED", f.read(), "the page agrees with results.json")

    def test_a_second_signal_while_finishing_is_ignored(self):
        b = self.bundle()
        with signal_self_during(cmp, "compare"), \
                signal_self_during(model, "write_results", every_call=True):
            rc = self.qualify(b, "--baseline", "none")
        self.assert_interrupted(rc, "comparing")

    def test_sighup_outside_the_runner_is_handled(self):
        b = self.bundle()
        handled = []
        original = cmp.compare

        def compare(*args, **kwargs):
            # Only send SIGHUP when qualify handles it: the default action would kill the test.
            if signal.getsignal(signal.SIGHUP) not in (signal.SIG_DFL, signal.SIG_IGN, None):
                handled.append(1)
                os.kill(os.getpid(), signal.SIGHUP)
            return original(*args, **kwargs)
        with mock.patch.object(cmp, "compare", compare):
            rc = self.qualify(b, "--baseline", "none")
        self.assertEqual(handled, [1], "qualify has no SIGHUP handler while it compares")
        self.assert_interrupted(rc, "comparing")

    def test_two_sigterms_50_ms_apart_during_the_run(self):
        b = self.bundle({"x": {"cases": ["S.A", {"id": "S.B", "act": ["sleep:30"]}]}}, timeout_s=60)
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tools", "qualify.py"), "--bundle", b,
                                 "--out", self.out, "--expectations", self.exp, "--tier", "bat",
                                 "--baseline", "none"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not [p for p in marked(self.mark) if "--gtest_output" in p[1]]:
            time.sleep(0.05)
        time.sleep(0.5)  # S.A has ended, S.B sleeps
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        self.output = proc.communicate(timeout=60)[0].decode(errors="replace")
        self.assertEqual(proc.returncode, 7, self.output)
        res = self.results()
        self.assertEqual(res["info"]["verdict"], "INTERRUPTED", self.output)
        self.assertIn("S.A", [f"{c['suite']}.{c['name']}" for c in res["run"]["cases"]])
        self.assert_nothing_left()


class MutationSignals(Base):
    """Row #1: mutation.py and qualify --mutation stop on a signal, and nothing is left."""

    def start_mutation(self, bundle):
        shim = os.path.join(bundle, "faults")
        return subprocess.Popen([sys.executable, os.path.join(ROOT, "tools", "mutation", "mutation.py"), bundle,
                                 "--out", os.path.join(self.tmp, "mut"), "--shim", shim, "--jobs", "2",
                                 "--budget", "100"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def wait_for_binaries_under_the_shim(self, proc, n=2):
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            if len([p for p in marked(self.mark) if "/view/bin/" in p[1]]) >= n:
                return
            time.sleep(0.05)
        self.fail("the mutation run never started its test binaries")

    def check_signal(self, sig):
        b = self.bundle({"m1": SLEEP_UNDER_FAULT, "m2": SLEEP_UNDER_FAULT}, timeout_s=120, with_tools=True)
        proc = self.start_mutation(b)
        self.wait_for_binaries_under_the_shim(proc)
        proc.send_signal(sig)
        try:
            out = proc.communicate(timeout=60)[0].decode(errors="replace")
        except subprocess.TimeoutExpired:
            proc.kill()
            self.fail(f"mutation.py did not stop on {sig.name}")
        self.assertEqual(proc.returncode, 7, out)
        self.assertIn(f"interrupted by {sig.name}", out)
        self.assertNotIn("Traceback", out)
        self.assert_nothing_left()

    def test_sigint_stops_mutation_py_and_its_runners(self):
        self.check_signal(signal.SIGINT)

    def test_sigterm_stops_mutation_py_and_its_runners(self):
        self.check_signal(signal.SIGTERM)

    def test_sighup_stops_mutation_py_and_its_runners(self):
        self.check_signal(signal.SIGHUP)

    def test_done_check_sigterm_to_qualify_mutation(self):
        from tools.runner import done_check
        b = self.bundle({"m1": SLEEP_UNDER_FAULT, "m2": SLEEP_UNDER_FAULT}, timeout_s=120, with_tools=True)
        done_check.FAILED.clear()
        with contextlib.redirect_stdout(io.StringIO()) as buf:
            done_check.mutation_signal_check(argparse.Namespace(
                bundle=b, out=os.path.join(self.tmp, "dc"), mutation_wait_s=90),
                extra=("--expectations", self.exp))
        self.assertEqual(done_check.FAILED, [], buf.getvalue())
        self.assert_nothing_left()


class KilledWithSigkill(Base):
    """Reliability review 4, #3: SIGKILL cannot be handled, yet no process of the run survives
    it past the next run's start. Every test binary dies with the thread that started it
    (PR_SET_PDEATHSIG), and what the binaries forked (their group, a session of their own) is
    ended by the next qualify on the same --out from the record the killed run kept there
    (tools/runner/leftovers.py). Killed while a binary lists its cases, while cases with
    grandchildren run, and under --mutation."""

    QUALIFY = os.path.join(ROOT, "tools", "qualify.py")

    def start(self, bundle, mark, *extra):
        env = dict(os.environ, FAKE_MARK=mark, PAGELOCK_NO_REEXEC="1")
        return subprocess.Popen([sys.executable, self.QUALIFY, "--bundle", bundle, "--out", self.out,
                                 "--expectations", self.exp, "--tier", "bat", "--retries", "0",
                                 "--baseline", "none", *extra], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)

    def wait_for(self, proc, what, ready):
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.fail(f"qualify ended (exit {proc.returncode}) before {what}: "
                          f"{proc.stdout.read().decode(errors='replace')[-2000:]}")
            procs = [p for p in marked(self.mark) if p[0] != proc.pid]
            if ready(procs):
                return
            time.sleep(0.05)
        self.fail(f"never saw {what}")

    def kill_then_rerun(self, bundle, what, ready, *extra):
        first = self.start(bundle, self.mark, *extra)
        self.wait_for(first, what, ready)
        first.kill()  # SIGKILL to the qualify process itself
        first.communicate(timeout=30)
        # Its binaries died with it (parent-death signal); the next run on the same --out ends
        # what they forked, as it starts.
        ok = self.bundle({"ok": {"cases": ["S.A"]}}, name="ok")
        second = self.start(ok, uuid.uuid4().hex)
        out = second.communicate(timeout=120)[0].decode(errors="replace")
        self.assertEqual(second.returncode, 0, out)
        left = marked(self.mark)
        self.assertEqual(left, [], f"processes of the killed run left after the next run:\n{out}")
        return out

    def test_killed_while_a_binary_lists_its_cases(self):
        b = self.bundle({"lists": {"list": "hang"}})
        self.kill_then_rerun(b, "the listing", lambda procs: any("--gtest_list_tests" in c for _, c in procs))

    def test_killed_while_cases_with_grandchildren_run(self):
        # S.B forks a child into a process group of its own and a daemon (double fork, setsid),
        # both sleeping ~1000 s, then hangs; another binary hangs beside it (--jobs 2).
        b = self.bundle({"kids": {"cases": ["S.A", {"id": "S.B", "act": ["pgrp", "daemon", "hang"]}]},
                         "hangs": {"cases": [{"id": "S.H", "act": ["hang"]}]}}, timeout_s=600)
        out = self.kill_then_rerun(
            b, "the grandchildren", lambda procs: len([c for _, c in procs if "bin/kids" in c]) >= 3
            and any("bin/hangs" in c for _, c in procs), "--jobs", "2")
        self.assertIn("that a killed run left in", out)

    def test_killed_under_mutation(self):
        b = self.bundle({"m1": SLEEP_UNDER_FAULT, "m2": SLEEP_UNDER_FAULT}, timeout_s=120, with_tools=True)
        self.kill_then_rerun(b, "binaries under the shim", lambda procs: any("/view/bin/" in c for _, c in procs),
                             "--mutation", "--mutation-budget", "100", "--mutation-jobs", "2")


XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid={pid}, name={comm}, GPU has fallen off the bus."
XID_SAID = "GPU has fallen off the bus."
AER = "pcieport 0000:00:01.0: AER: Corrected error received: 0000:3b:00.0"


class KernelWordInTheVerdict(Base):
    """The kernel's word fails the case (tools/runner/kmsg.py, docs/qualification.md): a fake
    kernel log ($PAGELOCK_KERNEL_LOG) that the fake binaries write while a case runs or between
    cases, and `kernel` expectation entries that excuse a known benign line."""

    def setUp(self):
        super().setUp()
        self.kmsg = os.path.join(self.tmp, "kmsg")
        open(self.kmsg, "w").close()
        os.environ.update(PAGELOCK_KERNEL_LOG=self.kmsg, FAKE_KMSG=self.kmsg)

    def expect(self, text):
        with open(os.path.join(self.exp, "common.txt"), "w", encoding="utf-8") as f:
            f.write(text)

    def case(self, name):
        return next(c for c in self.results()["run"]["cases"] if f"{c['suite']}.{c['name']}" == name)

    def test_an_xid_while_a_case_runs_fails_it_without_retries(self):
        b = self.bundle({"x": {"cases": ["S.A", {"id": "S.B", "act": ["kmsg:" + XID]}]}})
        rc = self.qualify(b, "--baseline", "none", "--retries", "2")
        self.assertEqual(rc, cmp.EXIT_REGRESSION, self.output)
        c = self.case("S.B")
        self.assertEqual((c["status"], c["attempts"]), ("FAIL", ["FAIL"]))
        self.assertIn("the kernel log reports a fault while the case ran", c["conflicts"][0])
        self.assertIn(XID_SAID, c["logs"]["kernel_log"])
        self.assertEqual(self.results()["comparison"]["fake:x/S.B"], "REGRESSION")
        with open(os.path.join(self.run_dirs()[-1], "index.html"), encoding="utf-8") as f:
            self.assertIn("GPU has fallen off the bus", f.read())

    def test_a_fault_line_outside_any_case_fails_the_runs_health(self):
        b = self.bundle({"x": {"cases": [{"id": "S.A", "act": ["kmsg_between:" + XID]}, "S.B"]}})
        rc = self.qualify(b, "--baseline", "none")
        self.assertEqual(rc, cmp.EXIT_REGRESSION, self.output)
        res = self.results()
        self.assertEqual({c["status"] for c in res["run"]["cases"]}, {"PASS"})
        machine = {m["id"]: m for m in res["machine_coverage"]}
        self.assertEqual(machine["kernel_log:outside_cases"]["status"], "REGRESSION")
        self.assertIn(XID_SAID, machine["kernel_log:outside_cases"]["why"])
        self.assertEqual(res["run"]["kernel_log"][0]["kind"], "Xid")
        self.assertIn("kernel log line(s) reporting a fault while no case ran", self.output)
        with open(os.path.join(self.run_dirs()[-1], "junit.xml"), encoding="utf-8") as f:
            self.assertIn("kernel_log:outside_cases", f.read())

    def test_kernel_entries_excuse_a_known_benign_line_in_a_case_and_outside(self):
        self.expect("kernel fake:x/* pattern=*AER:_Corrected_error* bug=https://example.org/aer  # benign\n"
                    "kernel (run) pattern=*Xid_(PCI:0000:3b:00):_79,_pid=*,_name=*_fallen_off* "
                    "bug=https://example.org/xid\n")
        b = self.bundle({"x": {"cases": [{"id": "S.A", "act": ["kmsg:" + AER, "kmsg_between:" + XID]}, "S.B"]}})
        rc = self.qualify(b, "--baseline", "none")
        self.assertEqual(rc, cmp.EXIT_QUALIFIED, self.output)
        c = self.case("S.A")
        self.assertEqual((c["status"], c.get("conflicts")), ("PASS", None))
        self.assertIn("[PCIe AER: excused by", c["logs"]["kernel_log"])
        self.assertIn("common.txt:1 https://example.org/aer", c["logs"]["kernel_log"])
        outside = self.results()["run"]["kernel_log"]
        self.assertEqual([(k["kind"], bool(k["excused"])) for k in outside], [("Xid", True)])


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


class HistoryOnAFullDisk(Base):
    """Review row #19 / B23: a full disk while the history is opened is exit 1 (README: a full
    disk is infrastructure, as history.py alone says), a bad history file stays exit 2."""

    def assert_code(self, rc, code, needle):
        self.assertEqual(rc, code, self.output)
        self.assertIn(needle, self.output)
        self.assertNotIn("Traceback", self.output)
        self.assertEqual(self.run_dirs(), [], "a run folder was created")

    def test_sqlite_full_while_opening_is_an_infrastructure_error(self):
        full = sqlite3.OperationalError("database or disk is full")
        full.sqlite_errorcode = 13  # SQLITE_FULL
        b = self.bundle()
        with mock.patch("sqlite3.connect", side_effect=full):
            self.assert_code(self.qualify(b, "--baseline", "none"), cmp.EXIT_INFRA, "database or disk is full")

    def test_enospc_while_opening_is_an_infrastructure_error(self):
        b = self.bundle()
        with mock.patch.object(history, "connect", side_effect=OSError(28, "No space left on device")):
            self.assert_code(self.qualify(b, "--baseline", "none"), cmp.EXIT_INFRA, "No space left on device")

    def test_an_unreachable_history_server_is_an_infrastructure_error(self):
        # The server being down is the lab's fault, not the command line's: exit 1, as history.py
        # and fleet say; the password in the URL is never printed.
        b = self.bundle()
        down = history.HistoryUnavailable("postgresql://u:***@db/h: cannot connect: connection refused")
        with mock.patch.object(history, "connect", side_effect=down):
            self.assert_code(self.qualify(b, "--baseline", "none", "--history", "postgresql://u:secret@db/h"),
                             cmp.EXIT_INFRA, "unavailable")
        self.assertNotIn("secret", self.output)

    def test_a_malformed_or_newer_history_is_still_bad_configuration(self):
        b = self.bundle()
        os.makedirs(self.out)
        path = os.path.join(self.out, "history.sqlite")
        with open(path, "wb") as f:
            f.write(b"this is not a database" * 100)
        self.assert_code(self.qualify(b, "--baseline", "none"), cmp.EXIT_CONFIG, "history")
        os.remove(path)
        history.connect(path).close()
        db = sqlite3.connect(path)
        db.execute("PRAGMA user_version = 999")
        db.close()
        self.assert_code(self.qualify(b, "--baseline", "none"), cmp.EXIT_CONFIG, "newer than this pagelock")


@contextlib.contextmanager
def read_only_copy(src_files, where):
    """A folder holding copies of src_files that nobody may write: a small tmpfs remounted
    read-only (as root, whom file modes do not stop), else a folder and files without write
    permission. Yields the folder; the test is skipped where neither can be made."""
    os.makedirs(where)
    mounted = False
    if os.geteuid() == 0:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", where], capture_output=True)
        if r.returncode != 0:
            raise unittest.SkipTest(f"cannot mount a tmpfs here: {r.stderr.decode(errors='replace')}")
        mounted = True
    try:
        for f in src_files:
            shutil.copy(f, where)
        if mounted:
            r = subprocess.run(["mount", "-o", "remount,ro", where], capture_output=True)
            if r.returncode != 0:
                raise unittest.SkipTest("cannot remount the tmpfs read-only")
        else:
            for f in os.listdir(where):
                os.chmod(os.path.join(where, f), 0o444)
            os.chmod(where, 0o555)
        yield where
    finally:
        if mounted:
            subprocess.run(["umount", "-l", where], capture_output=True)
        else:
            os.chmod(where, 0o755)


class HistoryTakesTheRun(Base):
    """Reliability review 4, 4b and 10c: a run is stored or the verdict says it was not. Runs of
    one host that start together with their own --out and one history all go in (their keys
    carry the millisecond and a random part, and the store's answer is checked); a history that
    cannot take the run makes the exit code 1; a read-only history is read by every history.py
    query and qualify says "read-only: run not stored"."""

    QUALIFY = os.path.join(ROOT, "tools", "qualify.py")

    def start_qualify(self, bundle, out, history_target, python=None):
        env = dict(os.environ, PAGELOCK_NO_REEXEC="1")
        return subprocess.Popen([python or sys.executable, self.QUALIFY, "--bundle", bundle, "--out", out,
                                 "--history", history_target, "--expectations", self.exp, "--tier", "bat",
                                 "--retries", "0", "--baseline", "none", "--jobs", "1"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                encoding="utf-8", errors="replace")

    def concurrent_runs(self, n, history_target, python=None):
        """n qualify runs of one host, started together, each with its own --out; returns their
        run keys (from results.json) after checking that each exited 0 and said no warning."""
        bundle = os.path.join(self.tmp, "bundle")
        if not os.path.isdir(bundle):
            self.bundle()
        procs = [self.start_qualify(bundle, os.path.join(self.tmp, f"n{n}", f"o{i}"), history_target, python)
                 for i in range(n)]
        keys = []
        for i, p in enumerate(procs):
            out, _ = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0, out)
            self.assertNotIn("warning", out)
            keys.append(self.results(self.run_dirs(os.path.join(self.tmp, f"n{n}", f"o{i}"))[-1])["info"]["run_key"])
        self.assertEqual(len(set(keys)), n, keys)
        return keys

    def stored(self, history_target):
        db = history.connect(history_target)
        try:
            return [r[0] for r in db.execute("SELECT run_key FROM runs")]
        finally:
            db.close()

    def test_two_three_and_ten_runs_sharing_one_sqlite_history_are_all_stored(self):
        target = os.path.join(self.tmp, "shared.sqlite")
        keys = []
        for n in (2, 3, 10):
            keys += self.concurrent_runs(n, target)
        self.assertEqual(sorted(self.stored(target)), sorted(keys))

    def test_two_three_and_ten_runs_sharing_one_postgresql_history_are_all_stored(self):
        try:
            import psycopg2  # noqa: F401
        except ImportError:
            raise unittest.SkipTest(f"{sys.executable} cannot import psycopg2 (Debian python3-psycopg2)")
        try:
            from tools.fleet import daemons
        except ImportError as e:  # under Bazel without the fleet's files in the runfiles
            raise unittest.SkipTest(f"tools/fleet/daemons.py is not here: {e}")
        try:
            server = daemons.PostgresServer().start()
        except daemons.Unavailable as e:
            raise unittest.SkipTest(f"PostgreSQL cannot start here: {e}")
        try:
            keys = []
            for n in (2, 3, 10):
                keys += self.concurrent_runs(n, server.url)
            self.assertEqual(sorted(self.stored(server.url)), sorted(keys))
        finally:
            server.stop()

    def test_one_key_stored_by_many_writers_at_once_loses_no_run(self):
        # The worst case the random part makes unlikely: every writer has the same key. Each run
        # (its own folder) is stored, under <key>-2, -3, ...; none is taken for another.
        import multiprocessing
        from tools.qualification import publish
        target = os.path.join(self.tmp, "same-key.sqlite")
        history.connect(target).close()
        ctx = multiprocessing.get_context("fork")
        results = ctx.Queue()
        procs = [ctx.Process(target=_store_one, args=(target, os.path.join(self.tmp, f"run{i}"), results))
                 for i in range(6)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        outcomes = [results.get(timeout=5) for _ in procs]
        self.assertEqual([o for o in outcomes if o[1] is not None], [], outcomes)
        keys = self.stored(target)
        self.assertEqual(len(keys), 6, keys)
        self.assertEqual(sorted(keys), sorted(["K"] + [f"K-{n}" for n in range(2, 7)]))
        db = history.connect(target)
        dirs = [r[0] for r in db.execute("SELECT run_dir FROM runs")]
        db.close()
        self.assertEqual(len(set(dirs)), 6)
        del publish

    def test_a_history_that_cannot_take_the_run_makes_the_exit_code_say_so(self):
        b = self.bundle()
        broken = history.HistoryError("x.sqlite: storing run K failed, nothing was stored: disk I/O error")
        with mock.patch.object(history, "store_new", side_effect=broken):
            rc = self.qualify(b, "--baseline", "none")
        self.assertEqual(rc, cmp.EXIT_INFRA, self.output)
        self.assertIn("run not stored", self.output)
        self.assertIn("the verdict would have been QUALIFIED", self.output)
        info = self.results()["info"]
        self.assertEqual((info["verdict"], info["exit_code"], info["verdict_reached"]),
                         ("INFRASTRUCTURE ERROR", 1, "QUALIFIED"))
        with open(os.path.join(self.run_dirs()[-1], "index.html"), encoding="utf-8") as f:
            page = f.read()
        self.assertIn("INFRASTRUCTURE ERROR", page)
        self.assertIn("run not stored", page)

    def test_a_read_only_history_is_read_by_every_query_and_qualify_says_so(self):
        b = self.bundle()
        self.assertEqual(self.qualify(b, "--baseline", "none"), 0, self.output)
        path = os.path.join(self.out, "history.sqlite")
        db = sqlite3.connect(path)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the log merged: the file is the history
        db.close()
        ro = os.path.join(self.tmp, "ro")
        with read_only_copy([path], ro):
            ro_db = os.path.join(ro, "history.sqlite")
            key = self.results()["info"]["run_key"]
            for query in (["runs"], ["version"], ["metrics"], ["--run", key, "runs"]):
                buf = io.StringIO()
                with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
                    rc = history.main(["--db", ro_db] + query)
                self.assertIn(rc, (0, 4) if query == ["metrics"] else (0,), (query, buf.getvalue()))
                self.assertNotIn("unusable", buf.getvalue())
            self.assertIn(key, _history_out(["--db", ro_db, "runs"]))
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
                rc = history.main(["--db", ro_db, "import", self.run_dirs()[-1]])
            self.assertEqual(rc, 2)
            self.assertIn("read-only", buf.getvalue())
            rc = self.qualify(b, "--baseline", "none", "--history", ro_db, out=os.path.join(self.tmp, "o2"))
            self.assertEqual(rc, cmp.EXIT_CONFIG, self.output)
            self.assertIn("read-only", self.output)
            self.assertIn("run not stored; use --no-history or another --history", self.output)
            self.assertNotIn("repair or move it", self.output)


def _history_out(argv):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        history.main(argv)
    return buf.getvalue()


def _store_one(target, run_dir, results):
    """One writer of test_one_key_stored_by_many_writers_at_once_loses_no_run (a child process)."""
    from tools.qualification import publish
    try:
        os.makedirs(run_dir, exist_ok=True)
        plan = argparse.Namespace(db=history.connect(target), run_dir=run_dir, sku="nvidia-h200")
        info = {"run_key": "K", "started_at": "2026-12-07T06:37:11+00:00", "bundle": {"commit": "c"},
                "verdict": "QUALIFIED"}
        run = model.Run({"host": "vm"}, [model.Case(model.CaseId("//a:b", "S", "A"), model.Status.PASS)])
        comp = cmp.compare(run)
        with contextlib.redirect_stdout(io.StringIO()):
            why = publish.store_history(plan, run, comp, info, os.path.join(run_dir, "index.html"))
        results.put((info.get("history_key", "K"), why))
    except Exception as e:  # noqa: BLE001 -- reported to the test
        results.put(("", f"{type(e).__name__}: {e}"))


@contextlib.contextmanager
def nearly_full_tmpfs(where, size_kb=2048, free_kb=0):
    """A small tmpfs at `where` filled to leave about free_kb (root only; skipped otherwise).
    Yields (folder, fill): fill() takes what is left."""
    os.makedirs(where)
    if os.geteuid() != 0:
        raise unittest.SkipTest("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", where], capture_output=True)
    if r.returncode != 0:
        raise unittest.SkipTest(f"cannot mount a tmpfs here: {r.stderr.decode(errors='replace')}")

    def fill(name="filler", leave_kb=0):
        with open(os.path.join(where, name), "wb") as f:
            try:
                while shutil.disk_usage(where).free > leave_kb * 1024:
                    f.write(b"\0" * min(65536, max(4096, shutil.disk_usage(where).free - leave_kb * 1024)))
                    f.flush()
            except OSError:
                pass
    try:
        if free_kb:
            fill(leave_kb=free_kb)
        yield where, fill
    finally:
        subprocess.run(["umount", "-l", where], capture_output=True)


class FullDiskSaysWhere(Base):
    """Reliability review 4, #8 and item 7: a full disk says "no space left on <path>" wherever
    it happens: the run folder, the history, the mutation tool's shim build."""

    def test_a_full_run_folder_says_no_space_left_on_it(self):
        b = self.bundle()
        with nearly_full_tmpfs(os.path.join(self.tmp, "full"), free_kb=8) as (mnt, _):
            rc = self.qualify(b, "--baseline", "none", "--no-history", out=os.path.join(mnt, "runs"))
        self.assertEqual(rc, cmp.EXIT_INFRA, self.output)
        self.assertIn("no space left on", self.output)
        self.assertNotIn("Traceback", self.output)

    def test_a_history_that_fills_up_says_no_space_left_on_it(self):
        b = self.bundle({"x": {"cases": ["S.A"], "count": 3000, "pad": 200}})
        with nearly_full_tmpfs(os.path.join(self.tmp, "full")) as (mnt, fill):
            db = os.path.join(mnt, "history.sqlite")
            history.connect(db).close()  # made while there was room
            fill(leave_kb=0)
            rc = self.qualify(b, "--baseline", "none", "--history", db)  # full when it is opened
            self.assertEqual(rc, cmp.EXIT_INFRA, self.output)
            self.assertIn(f"no space left on {db}", self.output)
            os.remove(os.path.join(mnt, "filler"))
            fill(leave_kb=200)  # room to open it, none for the run's 3000 cases
            rc = self.qualify(b, "--baseline", "none", "--history", db)
        self.assertEqual(rc, cmp.EXIT_INFRA, self.output)
        self.assertIn(f"no space left on {db}: run not stored", self.output)
        info = self.results()["info"]
        self.assertEqual((info["exit_code"], info["verdict_reached"]), (1, "QUALIFIED"))

    def test_a_shim_build_on_a_full_disk_says_no_space_left(self):
        if not shutil.which("g++") or not os.path.exists("/usr/local/cuda/include/cuda.h") or \
                not os.path.exists(os.path.join(ROOT, "tools", "faults", "build_shim.sh")):
            raise unittest.SkipTest("the shim build needs g++, the CUDA headers and tools/faults/build_shim.sh")
        b = self.bundle({"m": SLEEP_UNDER_FAULT}, with_tools=True)
        with nearly_full_tmpfs(os.path.join(self.tmp, "full"), size_kb=4096, free_kb=600) as (mnt, _):
            out = os.path.join(mnt, "runs")
            rc = self.qualify(b, "--baseline", "none", "--no-history", "--mutation", "--mutation-budget", "60",
                              out=out)
        self.assertEqual(rc, cmp.EXIT_QUALIFIED, self.output)  # the mutation score never changes it
        note = next(l for l in self.output.splitlines() if "mutation score:" in l)
        self.assertIn("no space left on", note)
        self.assertNotIn("Traceback", self.output)


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
            if n.endswith(".py") and not n.endswith("_test.py") and os.path.isfile(src):
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
