"""qualify and the mutation tool at hostile moments (reliability reviews 3 and 4), on bundles of
tools/testdata/fakegt.py (tools/hostile_qualify_support.py):

- a signal at every moment (comparing, rendering, storing the history, a second signal while
  finishing, SIGHUP) leaves a run folder whose results.json says INTERRUPTED, exit 7, and a
  history row never links a page that is not there;
- SIGINT, SIGTERM and SIGHUP to mutation.py, or SIGTERM to qualify --mutation, stop every runner
  and every test binary under the shim (they run in sessions of their own): exit 7, nothing left;
- SIGKILL leaves nothing past the next run's start;
- the kernel's word (an Xid while a case runs or between cases) fails the case or the run;
- histories that are full, unreachable, read-only or shared by many runs at once, and full disks
  wherever they happen.
The hostile inputs are tools/hostile_qualify_inputs_test.py's.
"""

import argparse
import contextlib
import io
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import unittest
import uuid
from unittest import mock

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.hostile_qualify_moments_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import compare as cmp
from reports import history
from reports import htmlreport
from reports import model
from tools.hostile_qualify_support import ROOT, SLEEP_UNDER_FAULT, Base, marked, signal_self_during

if __name__ == "__main__":  # the shared PostgreSQL history case needs Debian's psycopg2
    from reports import interpreter
    interpreter.reexec_if_missing("psycopg2", __file__, ROOT)


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


if __name__ == "__main__":
    unittest.main()
