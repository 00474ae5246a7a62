"""The runner, the bundle builder and the testlogs reader against hostile binaries and trees.

A scriptable GoogleTest binary (testdata/hostile_gtest.cc) crashes at exit, between cases, in a
case; writes no XML, half an XML, an entity bomb or raw bytes >= 0x80; floods its output; hangs,
ignores SIGTERM, forks grandchildren; exits 75 after a poisoned case. Each test asserts what was
recorded, that nothing already finished was lost, and that no process is left behind.
"""

import argparse
import contextlib
import io
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.runner.hostile_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import model, testlogs
from tools import bundle
from tools.runner import runner
from tools.runner import target as target_run


def hostile_binary():
    base = os.environ.get("TEST_SRCDIR", "")
    for cand in [os.path.join(base, "pagelock", "tools", "runner", "hostile_gtest"),
                 os.path.join(os.path.dirname(os.path.abspath(__file__)), "hostile_gtest")]:
        if os.path.exists(cand):
            return cand
    raise unittest.SkipTest("hostile_gtest binary not found (run under bazel test)")


def processes_with(marker):
    """PIDs of live processes whose environment holds FAKE_MARK=marker."""
    needle = f"FAKE_MARK={marker}".encode()
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    with open(f"/proc/{p}/stat") as s:
                        if s.read().split(")")[-1].split()[0] != "Z":
                            found.append(int(p))
        except OSError:
            continue
    return found


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.bundle = os.path.join(self.tmp, "bundle")
        os.makedirs(self.bundle)
        self.binary = hostile_binary()
        self.mark = uuid.uuid4().hex
        self.write_manifest()

    def tearDown(self):
        for pid in processes_with(self.mark):
            os.kill(pid, signal.SIGKILL)

    def write_manifest(self, labels=("//selftest:hostile",), timeout_s=20, text=None):
        manifest = {"info": {"commit": "test"}, "targets": [
            {"label": label, "path": self.binary, "timeout_s": timeout_s, "tags": ["selftest"]}
            for label in labels]}
        with open(os.path.join(self.bundle, "manifest.json"), "w") as f:
            f.write(text if text is not None else json.dumps(manifest))

    def env(self, cases="", **extra):
        env = {"FAKE_MARK": self.mark, "FAKE_CASES": cases or "A.passes,A.fails=fail,B.passes",
               "FAKE_AT_EXIT": "", "FAKE_CRASH_AFTER_SUITE": "", "FAKE_COUNT": "0"}
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def run_runner(self, cases="", out="out", fake=None, **cfg):
        cfg.setdefault("kill_grace_s", 0.5)
        cfg.setdefault("quiet", True)
        self.out = os.path.join(self.tmp, out)
        config = runner.RunConfig(bundle=self.bundle, out=self.out,
                                  env=self.env(cases, **(fake or {})), **cfg)
        result = runner.run(config)
        cases = {}
        if os.path.isdir(self.out):
            for c in testlogs.load_testlogs(self.out).cases:
                cases[f"{c.suite}.{c.name}"] = c
        self.assertEqual(processes_with(self.mark), [], "a process of the test was left behind")
        return result, cases

    def statuses(self, cases):
        return {k: c.status for k, c in cases.items()}


class EndsOfABinary(Base):
    """Whatever way a binary ends, every finished case keeps its own result."""

    def test_clean_run_is_clean_and_every_launch_gets_a_fresh_journal(self):
        r, cases = self.run_runner("A.passes,B.passes")
        self.assertEqual(r.status, "CLEAN")
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(self.statuses(cases), {"A.passes": "PASS", "B.passes": "PASS"})
        journal = os.path.join(r.targets[0].testlogs_dir, "test.outputs", "attempt_1",
                               model.JOURNAL_NAME)
        self.assertTrue(os.path.isfile(journal))

    def test_abort_at_exit_keeps_every_result_and_fails_the_target(self):
        r, cases = self.run_runner(fake={"FAKE_AT_EXIT": "abort"})
        self.assertEqual(cases["A.passes"].status, "PASS")
        self.assertEqual(cases["A.fails"].status, "FAIL")
        self.assertIn('deliberate failure <with> "markup" & such', cases["A.fails"].message)
        self.assertEqual(cases["B.passes"].status, "PASS")
        binary = cases["(binary).hostile"]
        self.assertEqual(binary.status, "CRASH")
        self.assertIn("SIGABRT after its last case", binary.message)
        self.assertEqual(r.status, "FAILURES")

    def test_crash_between_cases_keeps_results_and_runs_the_later_cases(self):
        r, cases = self.run_runner("A.passes,A.fails=fail,B.passes,B.also",
                                   fake={"FAKE_CRASH_AFTER_SUITE": "A"})
        self.assertEqual(self.statuses(cases), {
            "A.passes": "PASS", "A.fails": "FAIL", "B.passes": "PASS", "B.also": "PASS",
            "(binary).hostile": "CRASH"})
        self.assertIn("between cases", cases["(binary).hostile"].message)
        self.assertEqual(r.targets[0].restarts, 1)

    def test_exit_zero_without_xml_keeps_results_from_the_journal(self):
        r, cases = self.run_runner(fake={"FAKE_AT_EXIT": "noxml:0"})
        self.assertEqual(self.statuses(cases),
                         {"A.passes": "PASS", "A.fails": "FAIL", "B.passes": "PASS"})
        self.assertIn("deliberate failure", cases["A.fails"].message)

    def test_truncated_xml_keeps_results_from_the_journal(self):
        r, cases = self.run_runner(fake={"FAKE_AT_EXIT": "truncate_xml"})
        self.assertEqual(self.statuses(cases),
                         {"A.passes": "PASS", "A.fails": "FAIL", "B.passes": "PASS"})

    def test_entity_bomb_in_xml_is_refused_and_the_journal_is_used(self):
        start = time.monotonic()
        r, cases = self.run_runner(fake={"FAKE_AT_EXIT": "doctype_xml"})
        self.assertLess(time.monotonic() - start, 30)
        self.assertEqual(self.statuses(cases),
                         {"A.passes": "PASS", "A.fails": "FAIL", "B.passes": "PASS"})

    def test_raw_bytes_above_0x7f_in_xml_do_not_lose_the_binary(self):
        r, cases = self.run_runner("A.passes,A.bad=badbytes,B.passes")
        self.assertEqual(self.statuses(cases),
                         {"A.passes": "PASS", "A.bad": "FAIL", "B.passes": "PASS"})
        self.assertIn("bad bytes", cases["A.bad"].message)
        self.assertIn("\ufffd", cases["A.bad"].properties["fake.bytes"])
        # Read from the binary's own XML, not recovered from the journal.
        self.assertNotIn("xml", r.targets[0].launches[0])

    def test_crash_in_a_case_blames_it_and_restarts_on_the_rest(self):
        r, cases = self.run_runner("A.passes,A.crash=crash,A.after,B.fails=fail")
        self.assertEqual(self.statuses(cases), {"A.passes": "PASS", "A.crash": "CRASH",
                                                "A.after": "PASS", "B.fails": "FAIL"})
        self.assertIn("SIGSEGV", cases["A.crash"].message)
        self.assertIn("deliberate failure", cases["B.fails"].message)

    def test_nonzero_exit_with_every_case_passed_is_a_failure_of_the_target(self):
        r, cases = self.run_runner("A.passes,B.passes", fake={"FAKE_AT_EXIT": "exit:3"})
        self.assertEqual(cases["A.passes"].status, "PASS")
        self.assertEqual(cases["(binary).hostile"].status, "FAIL")
        self.assertIn("exited with status 3", cases["(binary).hostile"].message)
        self.assertEqual(r.status, "FAILURES")
        self.assertEqual(r.exit_code, 3)

    def test_exit_mid_case_blames_that_case(self):
        r, cases = self.run_runner("A.passes,A.quits=exit:0,B.passes")
        self.assertEqual(self.statuses(cases),
                         {"A.passes": "PASS", "A.quits": "CRASH", "B.passes": "PASS"})
        self.assertIn("exited with status 0", cases["A.quits"].message)

    def test_poisoned_case_alone_fails_and_the_rest_run_without_using_the_budget(self):
        r, cases = self.run_runner("A.passes,A.poison=poison,A.after,B.poison=poison,B.after",
                                   max_restarts=0)
        self.assertEqual(self.statuses(cases), {
            "A.passes": "PASS", "A.poison": "FAIL", "A.after": "PASS", "B.poison": "FAIL",
            "B.after": "PASS"})
        self.assertEqual(cases["A.poison"].health, "sticky_error")
        self.assertIn("cudaErrorIllegalAddress", cases["A.poison"].message)
        self.assertEqual(r.targets[0].restarts, 0)
        self.assertEqual([x.get("poisoned") for x in r.targets[0].launches], [True, True, None])

    def test_hang_that_ignores_sigterm_is_killed_at_the_limit(self):
        self.write_manifest(timeout_s=2)
        start = time.monotonic()
        r, cases = self.run_runner("A.passes,A.hangs=hang_ignore_term,B.passes")
        self.assertLess(time.monotonic() - start, 20)
        self.assertEqual(self.statuses(cases),
                         {"A.passes": "PASS", "A.hangs": "TIMEOUT", "B.passes": "PASS"})

    def test_grandchildren_are_killed_even_when_they_leave_the_process_group(self):
        r, cases = self.run_runner("A.forks=grandchild,A.escapes=grandchild_setsid,B.passes")
        self.assertEqual(self.statuses(cases),
                         {"A.forks": "PASS", "A.escapes": "PASS", "B.passes": "PASS"})
        self.assertGreaterEqual(r.targets[0].launches[0].get("killed_leftovers", 0), 1)
        # run_runner asserted that no process carrying the test's marker is alive.

    def test_restart_budget_spent_leaves_the_rest_missing_with_the_reason(self):
        r, cases = self.run_runner("A.c1=crash,A.c2=crash,A.after", max_restarts=1)
        self.assertEqual(self.statuses(cases),
                         {"A.c1": "CRASH", "A.c2": "CRASH", "A.after": "MISSING"})
        self.assertIn("restart budget of 1 spent", cases["A.after"].message)

    def test_seed_is_the_same_in_every_launch(self):
        r, cases = self.run_runner("A.s1=seed,A.crash=crash,A.s2=seed", seed=1234)
        self.assertEqual(cases["A.s1"].properties["fake.seed"], "1234")
        self.assertEqual(cases["A.s2"].properties["fake.seed"], "1234")
        r, cases = self.run_runner("A.s1=seed,A.crash=crash,A.s2=seed", out="drawn")
        self.assertIsNotNone(r.seed)
        self.assertEqual(cases["A.s1"].properties["fake.seed"], str(r.seed))
        self.assertEqual(cases["A.s2"].properties["fake.seed"], str(r.seed))


class Bounds(Base):
    def test_huge_output_is_capped_with_head_tail_and_the_cut_stated(self):
        r, cases = self.run_runner("A.floods=out:24,B.passes", log_head_bytes=1 << 20,
                                   log_tail_bytes=1 << 20)
        self.assertEqual(self.statuses(cases), {"A.floods": "PASS", "B.passes": "PASS"})
        log = os.path.join(r.targets[0].testlogs_dir, "test.log")
        self.assertLess(os.path.getsize(log), (2 << 20) + 4096)
        with open(log, "rb") as f:
            text = f.read()
        self.assertIn(b"bytes of output cut here", text)
        self.assertIn(b"=== pagelock runner: attempt 1", text[:4096])  # the head
        self.assertIn(b"[  PASSED  ]", text[-4096:])  # the tail

    def test_a_long_list_of_remaining_cases_goes_to_the_binary_in_chunks(self):
        # 1000 names of 210 characters are ~210 KB: one --gtest_filter would exceed Linux's
        # 128 KiB limit on one argument ("Argument list too long").
        r, cases = self.run_runner("A.crash=crash", fake={"FAKE_COUNT": 1000,
                                                          "FAKE_NAME_PAD": 200})
        self.assertEqual(cases["A.crash"].status, "CRASH")
        many = [c for k, c in cases.items() if k.startswith("Many.")]
        self.assertEqual(len(many), 1000)
        self.assertTrue(all(c.status == "PASS" for c in many))
        self.assertGreater(len(r.targets[0].launches), 2)

    def test_listing_is_streamed_not_held_in_memory(self):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        r, cases = self.run_runner("A.passes,B.passes", fake={"FAKE_NOISE_MIB": 96})
        grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        self.assertEqual(self.statuses(cases), {"A.passes": "PASS", "B.passes": "PASS"})
        self.assertLess(grown_mib, 48, "96 MiB of output should not be held in memory")

    def test_labels_select_exactly_those_targets_and_filters_apply_per_target(self):
        self.write_manifest(labels=("//a:one", "//b:two", "//c:three"))
        r, cases = self.run_runner("A.passes,B.passes", labels=["//a:one", "//c:three"],
                                   filters={"//c:three": "B.*"})
        self.assertEqual([t.label for t in r.targets], ["//a:one", "//c:three"])
        by_target = {(c.target, f"{c.suite}.{c.name}") for c in
                     testlogs.load_testlogs(self.out).cases}
        self.assertEqual(by_target, {("//a:one", "A.passes"), ("//a:one", "B.passes"),
                                     ("//c:three", "B.passes")})

    def test_a_filter_longer_than_one_argument_selects_exactly_its_cases(self):
        names = [f"Many.case_{i:06d}" + "x" * 200 for i in range(0, 1200, 2)] + \
            [f"Many.case_{i:06d}" + "x" * 200 for i in range(1, 1200, 2)][:300]
        names.sort()
        self.assertGreater(len(":".join(names)), 128 << 10)
        r, cases = self.run_runner("A.passes", fake={"FAKE_COUNT": 1200, "FAKE_NAME_PAD": 200},
                                   filters={"//selftest:hostile": ":".join(names)})
        self.assertEqual(sorted(cases), names)
        self.assertEqual(r.status, "CLEAN")


class Interrupts(Base):
    def start_runner(self, cases, out="out", extra_env=None):
        env = dict(os.environ)
        env.update(self.env(cases))
        env.update(extra_env or {})
        self.out = os.path.join(self.tmp, out)
        proc = subprocess.Popen(
            [sys.executable, runner.__file__, "--bundle", self.bundle, "--out", self.out,
             "--tags", "", "--kill-grace-s", "0.5"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        journal = os.path.join(self.out, "selftest", "hostile", "test.outputs", "attempt_1",
                               model.JOURNAL_NAME)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with open(journal) as f:
                    if '"event":"start","case":"A.hangs"' in f.read():
                        break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            proc.kill()
            self.fail("the hanging case never started: " + proc.communicate()[1].decode())
        return proc

    def check_interrupted(self, sig, code):
        proc = self.start_runner("A.passes,A.fails=fail,A.hangs=grandchild_setsid+hang_ignore_term,"
                                 "B.never")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, code, err.decode())
        self.assertNotIn(b"Traceback", err)
        self.assertIn(b"interrupted by " + signal.Signals(sig).name.encode(), err)
        with open(os.path.join(self.out, "runner.json")) as f:
            self.assertEqual(json.load(f)["status"], "INTERRUPTED")
        cases = {f"{c.suite}.{c.name}": c for c in testlogs.load_testlogs(self.out).cases}
        self.assertEqual(cases["A.passes"].status, "PASS")
        self.assertEqual(cases["A.fails"].status, "FAIL")
        self.assertEqual(cases["A.hangs"].status, "MISSING")
        self.assertIn("INTERRUPTED", cases["A.hangs"].message)
        self.assertIn("while this case was running", cases["A.hangs"].message)
        self.assertEqual(cases["B.never"].status, "MISSING")
        self.assertEqual(processes_with(self.mark), [])

    def test_sigterm_stops_the_test_writes_what_finished_and_exits_7(self):
        self.check_interrupted(signal.SIGTERM, 7)

    def test_sigint_stops_the_test_writes_what_finished_and_exits_7(self):
        self.check_interrupted(signal.SIGINT, 7)

    def test_report_blames_the_running_case_when_the_runner_itself_is_killed(self):
        proc = self.start_runner("A.passes,A.fails=fail,A.hangs=hang,B.never")
        proc.kill()  # SIGKILL: nothing can be written, the journal must be enough
        proc.communicate()
        for pid in processes_with(self.mark):  # the orphaned binary (a kill -9 cannot be caught)
            os.kill(pid, signal.SIGKILL)
        cases = {f"{c.suite}.{c.name}": c for c in testlogs.load_testlogs(self.out).cases}
        self.assertEqual(cases["A.passes"].status, "PASS")
        self.assertEqual(cases["A.fails"].status, "FAIL")
        self.assertEqual(cases["A.hangs"].status, "CRASH")
        self.assertIn("while running this case", cases["A.hangs"].message)


class Jobs(Base):
    """--jobs N: targets run at once, `exclusive` ones alone, and every guarantee holds per
    target. Each target is a small script that sets its own FAKE_CASES (and may sleep before
    the run, never before a listing), then execs the hostile binary."""

    def target(self, label, cases, sleep=0, tags=(), timeout_s=20):
        path = os.path.join(self.bundle, label[2:].replace("/", "_").replace(":", "_"))
        with open(path, "w") as f:
            f.write("#!/bin/sh\n"
                    f"FAKE_CASES='{cases}'; export FAKE_CASES\n"
                    + (f'case " $* " in *--gtest_list_tests*) ;; *) sleep {sleep} ;; esac\n'
                       if sleep else "")
                    + f'exec "{self.binary}" "$@"\n')
        os.chmod(path, 0o755)
        return {"label": label, "path": path, "timeout_s": timeout_s,
                "tags": ["selftest"] + list(tags)}

    def bundle_of(self, *targets):
        self.write_manifest(text=json.dumps({"info": {"commit": "test"}, "targets": list(targets)}))

    def by_target(self, out=None):
        return {(c.target, f"{c.suite}.{c.name}"): c
                for c in testlogs.load_testlogs(out or self.out).cases}

    def runner_json(self):
        with open(os.path.join(self.out, "runner.json")) as f:
            return json.load(f)

    @staticmethod
    def overlap(a, b):
        return a["start_s"] < b["end_s"] and b["start_s"] < a["end_s"]

    def test_two_sleeping_targets_with_two_jobs_take_the_time_of_one(self):
        self.bundle_of(self.target("//p:one", "A.passes", sleep=4),
                       self.target("//p:two", "B.passes", sleep=4))
        start = time.monotonic()
        r, _ = self.run_runner(jobs=2)
        wall = time.monotonic() - start
        self.assertEqual(r.status, "CLEAN")
        self.assertLess(wall, 7, "two 4 s targets with --jobs 2 ran one after the other")
        doc = self.runner_json()
        self.assertEqual(doc["jobs"], 2)
        one, two = doc["targets"]
        self.assertTrue(self.overlap(one, two), (one, two))
        self.assertEqual((one["exclusive"], two["exclusive"]), (False, False))

    def test_an_exclusive_target_never_overlaps_another_and_the_exclusive_ones_go_first(self):
        self.bundle_of(self.target("//x:a", "A.passes", sleep=1),
                       self.target("//x:b", "B.passes", sleep=1),
                       self.target("//x:alone1", "C.passes", sleep=1, tags=["exclusive"]),
                       self.target("//x:c", "D.passes", sleep=1),
                       self.target("//x:alone2", "E.passes", sleep=1, tags=["exclusive"]),
                       self.target("//x:d", "F.passes", sleep=1))
        r, cases = self.run_runner(jobs=3)
        self.assertEqual(r.status, "CLEAN")
        self.assertEqual(len(cases), 6)
        doc = self.runner_json()
        t = {x["label"]: x for x in doc["targets"]}
        # Results keep the manifest's order, whatever order they ran in.
        self.assertEqual(list(t), ["//x:a", "//x:b", "//x:alone1", "//x:c", "//x:alone2", "//x:d"])
        for ex in ("//x:alone1", "//x:alone2"):
            self.assertTrue(t[ex]["exclusive"])
            for other in t:
                if other != ex:
                    self.assertFalse(self.overlap(t[ex], t[other]), (ex, t[ex], other, t[other]))
        self.assertLess(t["//x:alone1"]["end_s"], t["//x:alone2"]["start_s"] + 1e-9)
        self.assertLessEqual(t["//x:alone2"]["end_s"],
                             min(t[x]["start_s"] for x in ("//x:a", "//x:b", "//x:c", "//x:d")))
        self.assertTrue(self.overlap(t["//x:a"], t["//x:b"]), "the pool did not run in parallel")

    def test_results_are_the_same_with_one_job_and_with_four(self):
        targets = [self.target("//r:passes", "A.passes,A.skip=skip,A.ns=notsupported"),
                   self.target("//r:fails", "B.passes,B.fails=fail,B.bad=badbytes"),
                   self.target("//r:crashes", "C.first,C.crash=crash,C.after,C.abort=abort,C.last"),
                   self.target("//r:poisoned", "D.poison=poison,D.after", tags=["exclusive"]),
                   self.target("//r:exits", "E.passes,E.quits=exit:0,E.after")]
        self.bundle_of(*targets)
        seen = {}
        for jobs in (1, 4):
            r, _ = self.run_runner(out=f"jobs{jobs}", jobs=jobs, seed=99)
            seen[jobs] = (r.status, r.counts, [t.label for t in r.targets],
                          {k: (c.status, c.message) for k, c in self.by_target().items()})
        self.assertEqual(seen[1], seen[4])
        status, counts, _, cases = seen[4]
        self.assertEqual(status, "FAILURES")
        self.assertEqual(cases[("//r:crashes", "C.crash")][0], "CRASH")
        self.assertEqual(cases[("//r:crashes", "C.abort")][0], "CRASH")
        self.assertEqual(cases[("//r:poisoned", "D.after")][0], "PASS")
        self.assertEqual(cases[("//r:exits", "E.quits")][0], "CRASH")

    def test_a_crash_in_one_parallel_target_is_blamed_on_its_own_case(self):
        self.bundle_of(self.target("//c:crashes", "A.first,A.crash=crash,A.after", sleep=1),
                       self.target("//c:hangs", "B.before,B.hangs=hang,B.after", timeout_s=4),
                       self.target("//c:fine", "C.passes,C.also", sleep=1))
        r, _ = self.run_runner(jobs=3)
        cases = {k: c.status for k, c in self.by_target().items()}
        self.assertEqual(cases, {
            ("//c:crashes", "A.first"): "PASS", ("//c:crashes", "A.crash"): "CRASH",
            ("//c:crashes", "A.after"): "PASS", ("//c:hangs", "B.before"): "PASS",
            ("//c:hangs", "B.hangs"): "TIMEOUT", ("//c:hangs", "B.after"): "PASS",
            ("//c:fine", "C.passes"): "PASS", ("//c:fine", "C.also"): "PASS"})
        self.assertIn("SIGSEGV", self.by_target()[("//c:crashes", "A.crash")].message)
        blamed = {t.label: [a.get("blamed") for a in t.launches if a.get("blamed")]
                  for t in r.targets}
        self.assertEqual(blamed, {"//c:crashes": ["A.crash"], "//c:hangs": ["B.hangs"],
                                  "//c:fine": []})
        t = {x["label"]: x for x in self.runner_json()["targets"]}
        self.assertTrue(self.overlap(t["//c:crashes"], t["//c:hangs"]))

    def test_sigterm_with_three_running_targets_stops_them_all_and_keeps_what_finished(self):
        hang = "grandchild_setsid+hang_ignore_term"
        self.bundle_of(self.target("//s:quick", "Q.passes,Q.fails=fail"),
                       self.target("//s:h1", f"H1.passes,H1.hangs={hang},H1.never"),
                       self.target("//s:h2", "H2.passes,H2.hangs=hang,H2.never"),
                       self.target("//s:h3", f"H3.passes,H3.hangs={hang},H3.never"))
        self.out = os.path.join(self.tmp, "qualify", "run1", "testlogs")  # as qualify lays it out
        env = dict(os.environ)
        env.update(self.env())
        proc = subprocess.Popen(
            [sys.executable, runner.__file__, "--bundle", self.bundle, "--out", self.out,
             "--tags", "", "--kill-grace-s", "0.5", "--jobs", "3"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        journals = [os.path.join(self.out, "s", h, "test.outputs", "attempt_1",
                                 model.JOURNAL_NAME) for h in ("h1", "h2", "h3")]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            started = 0
            for n, j in enumerate(journals, 1):
                try:
                    with open(j) as f:
                        started += f'"event":"start","case":"H{n}.hangs"' in f.read()
                except OSError:
                    pass
            if started == 3:
                break
            time.sleep(0.05)
        else:
            proc.kill()
            self.fail("three hanging cases never ran at once: " + proc.communicate()[1].decode())
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 7, err.decode())
        self.assertNotIn(b"Traceback", err)
        self.assertIn(b"interrupted by SIGTERM", err)
        self.assertEqual(self.runner_json()["status"], "INTERRUPTED")
        cases = self.by_target()
        self.assertEqual(cases[("//s:quick", "Q.passes")].status, "PASS")
        self.assertEqual(cases[("//s:quick", "Q.fails")].status, "FAIL")
        for n in (1, 2, 3):
            label = f"//s:h{n}"
            self.assertEqual(cases[(label, f"H{n}.passes")].status, "PASS")
            hung = cases[(label, f"H{n}.hangs")]
            self.assertEqual(hung.status, "MISSING")
            self.assertIn("INTERRUPTED", hung.message)
            self.assertIn("while this case was running", hung.message)
            self.assertEqual(cases[(label, f"H{n}.never")].status, "MISSING")
        self.assertEqual(processes_with(self.mark), [], "a process of a stopped target is alive")
        from tools.runner import done_check  # its GPU-machine check of a stopped parallel run
        done_check.FAILED.clear()
        with contextlib.redirect_stdout(io.StringIO()) as buf:
            done_check.stopped_targets_check(os.path.join(self.tmp, "qualify"))
        self.assertEqual(done_check.FAILED, [], buf.getvalue())
        self.assertEqual(buf.getvalue().count("is named"), 3, buf.getvalue())

    def test_jobs_out_of_range_is_bad_usage(self):
        r = runner.run(runner.RunConfig(bundle=self.bundle, out=os.path.join(self.tmp, "j0"),
                                        quiet=True, jobs=0))
        self.assertEqual((r.status, r.exit_code), ("BAD_BUNDLE", 2))
        self.assertIn("jobs", r.message)


class DoneCheck(Base):
    """done_check.py (the GPU machine's "Done when" check) on a bundle of the hostile binary."""

    def test_sigkill_mid_run_check_passes_on_a_bundle(self):
        import shutil
        from tools.runner import done_check
        b = os.path.join(self.tmp, "fb")
        for src, dst in [(os.path.dirname(runner.__file__), "tools/runner"),
                         (os.path.dirname(testlogs.__file__), "reports")]:
            os.makedirs(os.path.join(b, dst))
            for n in os.listdir(src):
                if n.endswith(".py"):
                    shutil.copy(os.path.join(src, n), os.path.join(b, dst, n))
        open(os.path.join(b, "tools", "__init__.py"), "w").close()
        os.makedirs(os.path.join(b, "bin", "suites", "fake"))
        shutil.copy(self.binary, os.path.join(b, "bin", "suites", "fake", "fake_test"))
        with open(os.path.join(b, "manifest.json"), "w") as f:
            json.dump({"targets": [{"label": "//suites/fake:fake_test", "timeout_s": 60,
                                    "path": "bin/suites/fake/fake_test", "tags": ["gpu"]}]}, f)
        old = dict(os.environ)
        os.environ.update(self.env("A.a,A.b=fail,A.c=hang,A.d,B.e"))
        done_check.FAILED.clear()
        try:
            with contextlib.redirect_stdout(io.StringIO()) as buf:
                done_check.sigkill_check(argparse.Namespace(
                    bundle=b, out=os.path.join(self.tmp, "dc"),
                    target="//suites/fake:fake_test", kill_at=3))
        finally:
            os.environ.clear()
            os.environ.update(old)
        self.assertEqual(done_check.FAILED, [], buf.getvalue())
        self.assertIn("PASS 1. the running case A.c is CRASH by SIGKILL", buf.getvalue())


class Inputs(Base):
    def main(self, *argv):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = runner.main(list(argv))
        return rc, buf.getvalue()

    def test_rerun_into_the_same_out_never_reads_the_previous_run(self):
        self.write_manifest(labels=("//selftest:hostile", "//other:hostile"), timeout_s=2)
        r, cases = self.run_runner("A.passes,A.hangs")
        self.assertEqual(r.status, "CLEAN")
        r, cases = self.run_runner("A.passes,A.hangs=hang", target_regex="^//selftest:")
        self.assertEqual(cases["A.hangs"].status, "TIMEOUT")
        self.assertFalse(os.path.exists(os.path.join(self.out, "other")))
        self.assertEqual([t.label for t in r.targets], ["//selftest:hostile"])
        self.assertEqual(r.status, "FAILURES")

    def test_out_that_the_runner_did_not_write_is_refused_and_kept(self):
        out = os.path.join(self.tmp, "mine")
        os.makedirs(out)
        with open(os.path.join(out, "thesis.tex"), "w") as f:
            f.write("precious")
        rc, text = self.main("--bundle", self.bundle, "--out", out, "--tags", "")
        self.assertEqual(rc, 2)
        self.assertIn("not written by the runner", text)
        self.assertEqual(os.listdir(out), ["thesis.tex"])

    def test_missing_binary_is_a_broken_bundle_exit_two_and_no_run_folder(self):
        self.binary = os.path.join(self.bundle, "bin", "gone")
        self.write_manifest()
        out = os.path.join(self.tmp, "never")
        rc, text = self.main("--bundle", self.bundle, "--out", out, "--tags", "")
        self.assertEqual(rc, 2)
        self.assertIn("binary", text)
        self.assertIn("is missing", text)
        self.assertFalse(os.path.exists(out))

    def test_a_binary_that_cannot_start_is_an_infra_error_and_the_others_run(self):
        broken = os.path.join(self.bundle, "broken")
        with open(broken, "w") as f:
            f.write("#!/no/such/interpreter\n")
        os.chmod(broken, 0o755)
        manifest = {"targets": [
            {"label": "//a:broken", "path": broken, "timeout_s": 5},
            {"label": "//b:fine", "path": self.binary, "timeout_s": 20}]}
        self.write_manifest(text=json.dumps(manifest))
        r, cases = self.run_runner("A.passes")
        self.assertEqual(cases["(binary).setup"].status, "INFRA_ERROR")
        self.assertIn("cannot start", cases["(binary).setup"].message)
        self.assertEqual(cases["A.passes"].status, "PASS")
        self.assertEqual((r.status, r.exit_code), ("FAILURES", 3))

    def test_bad_manifests_exit_two_with_the_reason(self):
        bad = {
            "[]": "must be a JSON object",
            '{"targets": [1]}': "must be an object",
            '{"targets": [{"label": "//../../etc:x", "path": "p", "timeout_s": 1}]}': "bad label",
            '{"targets": [{"label": "//a:b", "path": "p", "timeout_s": "soon"}]}': "timeout_s",
            '{"targets": [{"label": "//a:b", "path": "p", "timeout_s": 1, "tags": "gpu"}]}': "tags",
            "\xff\xfe": "manifest.json",
        }
        for text, why in bad.items():
            with open(os.path.join(self.bundle, "manifest.json"), "w", encoding="latin-1") as f:
                f.write(text)
            rc, out = self.main("--bundle", self.bundle, "--out", os.path.join(self.tmp, "x"))
            self.assertEqual(rc, 2, text)
            self.assertIn(why, out, text)
            self.assertNotIn("Traceback", out)

    def test_bad_arguments_exit_two_without_traceback(self):
        for argv in (["--out"], ["--out", "x", "--seed", "abc"], ["--out", "x", "--targets", "("],
                     ["--out", "x", "--time-scale", "0"], ["--out", "x", "--jobs", "0"]):
            rc, text = self.main("--bundle", self.bundle, *argv)
            self.assertEqual(rc, 2, argv)
            self.assertNotIn("Traceback", text)

    def test_empty_selection_exits_four(self):
        rc, text = self.main("--bundle", self.bundle, "--out", os.path.join(self.tmp, "y"),
                             "--tags", "no_such_tag")
        self.assertEqual(rc, 4)
        self.assertIn("no target matches", text)

    def test_out_that_cannot_be_created_exits_one(self):
        blocker = os.path.join(self.tmp, "file")
        with open(blocker, "w") as f:
            f.write("x")
        rc, text = self.main("--bundle", self.bundle, "--out", os.path.join(blocker, "out"),
                             "--tags", "")
        self.assertEqual(rc, 1)  # OUTPUT_ERROR, an infrastructure error as in qualify
        self.assertIn("cannot create", text)

    def test_full_disk_ends_with_exit_three_and_what_was_written_intact(self):
        self.check_full_disk(jobs=1)

    def test_full_disk_with_parallel_targets_ends_the_same_way(self):
        self.check_full_disk(jobs=2)

    def check_full_disk(self, jobs):
        mnt = os.path.join(self.tmp, "small")
        os.makedirs(mnt)
        try:
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mnt], check=True,
                           capture_output=True)
        except (OSError, subprocess.CalledProcessError) as e:
            self.skipTest(f"cannot mount a small tmpfs here ({e}): the full-disk case needs root "
                          "and mount rights")
        try:
            # With jobs > 1, //a:first is exclusive, so it runs (and is written) before the others.
            labels = ("//a:first", "//b:floods") + (("//c:floods_too",) if jobs > 1 else ())
            self.write_manifest(text=json.dumps({"targets": [
                {"label": label, "path": self.binary, "timeout_s": 20,
                 "tags": ["exclusive"] if label == "//a:first" and jobs > 1 else []}
                for label in labels]}))
            out = os.path.join(mnt, "out")
            config = runner.RunConfig(bundle=self.bundle, out=out, quiet=True, jobs=jobs,
                                      env=self.env("A.passes,A.floods=out:8,B.passes"),
                                      log_head_bytes=1 << 20, log_tail_bytes=1 << 20)
            # Fill the disk after the first target: its results must stay readable.
            filler = os.path.join(mnt, "filler")
            orig = target_run.run_target

            def fill_then_run(bundle_, target, *a):
                if target["label"] == "//b:floods":
                    with open(filler, "wb") as f:
                        try:
                            f.write(b"\0" * (3 << 20))
                        except OSError:
                            pass
                return orig(bundle_, target, *a)

            target_run.run_target = fill_then_run
            try:
                r = runner.run(config)
            finally:
                target_run.run_target = orig
            self.assertEqual(r.status, "OUTPUT_ERROR")
            self.assertEqual(r.exit_code, 1)
            self.assertIn("No space left", r.message)
            first = testlogs.read_gtest_xml(os.path.join(out, "a", "first", "test.xml"))
            self.assertIsNotNone(first[0])
            self.assertEqual(sorted(first[0]), ["A.floods", "A.passes", "B.passes"])
            self.assertEqual(processes_with(self.mark), [])
        finally:
            subprocess.run(["umount", "-l", mnt], capture_output=True)


class HostileTrees(unittest.TestCase):
    """The testlogs reader on trees that Bazel, the runner or a person could leave behind."""

    def setUp(self):
        self.root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def write(self, rel, data):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        return path

    XML = ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="AllTests" tests="1">'
           '<testsuite name="S"><testcase name="ok" classname="S" status="run" '
           'result="completed" time="0.1"/></testsuite></testsuites>\n')

    def test_folders_it_means_to_skip_are_not_read(self):
        self.write("suites/a/a_test/test.xml", self.XML)
        self.write("suites/a/a_test/test.log", "ok\n")
        for skip in ("test.outputs/tmp", "test_attempts/attempt_1", "retries/attempt_1/x/y"):
            self.write(f"suites/a/a_test/{skip}/test.log", "stray\n")
        run = testlogs.load_testlogs(self.root)
        self.assertEqual([(c.target, c.status) for c in run.cases],
                         [("//suites/a:a_test", "PASS")])

    def test_links_out_of_the_tree_are_not_followed(self):
        outside = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        with open(os.path.join(outside, "test.xml"), "w") as f:
            f.write(self.XML)
        os.makedirs(os.path.join(self.root, "suites", "b"))
        os.symlink(outside, os.path.join(self.root, "suites", "b", "linked_dir"))
        os.makedirs(os.path.join(self.root, "suites", "c", "c_test"))
        os.symlink(os.path.join(outside, "test.xml"),
                   os.path.join(self.root, "suites", "c", "c_test", "test.xml"))
        run = testlogs.load_testlogs(self.root)
        self.assertEqual(run.cases, [])
        self.assertTrue(any("link out of the tree" in p for p in run.problems))

    def test_bazel_failed_status_with_an_all_pass_xml_is_a_failure(self):
        self.write("suites/a/a_test/test.xml", self.XML)
        # TestResultData: test_passed=false (field 2), status=FAILED (field 3 = 4).
        self.write("suites/a/a_test/test.cache_status", bytes([0x10, 0x00, 0x18, 0x04]))
        cases = testlogs.load_testlogs(self.root).cases
        self.assertEqual([(c.suite, c.status) for c in cases], [("S", "PASS"), ("(binary)", "FAIL")])
        self.assertIn("Bazel reports the test FAILED", cases[1].message)

    def test_bazel_passed_status_adds_nothing(self):
        self.write("suites/a/a_test/test.xml", self.XML)
        self.write("suites/a/a_test/test.cache_status", bytes([0x10, 0x01, 0x18, 0x01]))
        self.assertEqual([c.status for c in testlogs.load_testlogs(self.root).cases], ["PASS"])

    def test_build_event_file_failed_with_an_all_pass_xml_is_a_failure(self):
        xml = self.write("t/test.xml", self.XML)
        bep = self.write("bep.json", json.dumps({
            "id": {"testResult": {"label": "//t:t", "attempt": 1}},
            "testResult": {"status": "FAILED", "testActionOutput": [
                {"name": "test.xml", "uri": "file://" + xml}]}}) + "\n[]\n7\n{\"id\": 3}\n")
        cases = testlogs.load_bep(bep).cases
        self.assertEqual([c.status for c in cases], ["PASS", "FAIL"])

    def test_hostile_journal_lines_are_skipped_and_unknown_statuses_are_errors(self):
        lines = ["[]", "7", "null", '{"event": "end"}', '{"event":"end","case":5}',
                 '{"event":"start","case":"S.a"}',
                 '{"event":"end","case":"S.a","status":"PASS","seconds":"x","properties":[]}',
                 '{"event":"end","case":"S.b","status":"GREAT"}',
                 '{"event":"start","case":"S.c"}', '{"event":"end","case":"S.c","status":"PA']
        finished, running = testlogs.read_journal(lines)
        self.assertEqual(sorted(finished), ["S.a", "S.b"])
        self.assertEqual(testlogs.case_from_element("//t:t", finished["S.a"]).status, "PASS")
        b = testlogs.case_from_element("//t:t", finished["S.b"])
        self.assertEqual(b.status, "INFRA_ERROR")
        self.assertIn("GREAT", b.message)
        self.assertEqual(running, "S.c")

    def test_overlong_journal_line_is_skipped_not_held(self):
        path = self.write("j.jsonl", '{"event":"start","case":"S.a"}\n' + "x" * (3 << 20) +
                          '\n{"event":"end","case":"S.a","status":"PASS"}\n')
        finished, running = testlogs.read_journal(path)
        self.assertEqual(list(finished), ["S.a"])
        self.assertIsNone(running)

    def test_unknown_pagelock_status_in_xml_is_an_infrastructure_error(self):
        self.write("t/t/test.xml", self.XML.replace(
            'time="0.1"/>', 'time="0.1"><properties><property name="pagelock.status" '
            'value="SUPERB"/></properties></testcase>'))
        c = testlogs.load_testlogs(self.root).cases[0]
        self.assertEqual(c.status, "INFRA_ERROR")
        self.assertIn("SUPERB", c.message)

    def test_bazel_run_stopped_by_a_poisoned_case_says_so(self):
        self.write("t/t/test.xml", '<?xml version="1.0"?><testsuites><testsuite name="t/t" '
                   'tests="1"><testcase name="t/t" status="run" time="1"><error '
                   'message="exited with error code 75"/></testcase></testsuite></testsuites>')
        self.write(f"t/t/test.outputs/{model.JOURNAL_NAME}",
                   '{"event":"start","case":"S.a"}\n{"event":"end","case":"S.a","status":"FAIL",'
                   '"message":"illegal address","properties":{"pagelock.health":"sticky_error"}}\n')
        cases = {f"{c.suite}.{c.name}": c for c in testlogs.load_testlogs(self.root).cases}
        self.assertEqual(cases["S.a"].status, "FAIL")
        self.assertEqual(cases["(binary).t"].status, "FAIL")
        self.assertIn("poisoned context", cases["(binary).t"].message)

    def test_runner_attempt_journals_are_found_under_the_one_name(self):
        self.write("t/t/test.log", "started\n")
        self.write(f"t/t/test.outputs/attempt_1/{model.JOURNAL_NAME}",
                   '{"event":"start","case":"S.a"}\n{"event":"end","case":"S.a","status":"PASS"}\n'
                   '{"event":"start","case":"S.b"}\n')
        self.write(f"t/t/test.outputs/attempt_2/{model.JOURNAL_NAME}",
                   '{"event":"start","case":"S.c"}\n')
        cases = {c.name: c.status for c in testlogs.load_testlogs(self.root).cases}
        self.assertEqual(cases, {"a": "PASS", "c": "CRASH"})


class Bundle(unittest.TestCase):
    """tools/bundle.py replaces only a folder that holds a bundle."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def run_bundle(self, out):
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf), contextlib.redirect_stdout(buf):
            rc = bundle.main([out])
        return rc, buf.getvalue()

    def test_a_folder_that_is_not_a_bundle_is_refused_and_kept(self):
        out = os.path.join(self.tmp, "runs")
        os.makedirs(out)
        with open(os.path.join(out, "history.sqlite"), "w") as f:
            f.write("precious")
        rc, text = self.run_bundle(out)
        self.assertEqual(rc, 2)
        self.assertIn("not a pagelock bundle", text)
        self.assertEqual(os.listdir(out), ["history.sqlite"])

    def test_a_file_is_refused(self):
        out = os.path.join(self.tmp, "file")
        with open(out, "w") as f:
            f.write("x")
        self.assertEqual(self.run_bundle(out)[0], 2)

    def test_an_earlier_bundle_or_an_empty_folder_may_be_replaced(self):
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        self.assertIsNone(bundle.check_out(empty))
        old = os.path.join(self.tmp, "old")
        os.makedirs(old)
        with open(os.path.join(old, bundle.MARKER), "w") as f:
            f.write("pagelock bundle\n")
        self.assertIsNone(bundle.check_out(old))
        self.assertIsNone(bundle.check_out(os.path.join(self.tmp, "new")))


if __name__ == "__main__":
    unittest.main()
