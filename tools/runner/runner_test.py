"""The bundle runner against a real GoogleTest binary that passes, fails, crashes and hangs."""

import contextlib
import io
import json
import os
import tempfile
import threading
import time
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.runner.runner_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import model, testlogs
from tools.runner import journals, runner, schedule


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
        run = testlogs.load_testlogs(out)
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
        # Each launch's CPU time, reaped with its exit: where a driver's serialised work shows.
        with open(os.path.join(out, "runner.json")) as f:
            launch = json.load(f)["targets"][0]["launches"][0]
        self.assertGreaterEqual(launch["user_s"], 0)
        self.assertGreaterEqual(launch["sys_s"], 0)

    def test_crash_is_blamed_on_the_running_case_and_no_other_case_is_lost(self):
        rc, cases, _ = self.run_runner("crash")
        self.assertEqual(rc, 3)
        self.assertEqual(len(cases), 8)
        crashed = cases["FakeTest.CrashesWhenAsked"]
        self.assertEqual(crashed.status, "CRASH")
        self.assertIn("SIGSEGV", crashed.message)
        self.assertEqual(cases["FakeTest.Passes"].status, "PASS")
        self.assertEqual(cases["FakeTest.HangsWhenAsked"].status, "PASS")
        self.assertEqual(cases["FakeTest.PassesAfterTheOthers"].status, "PASS")

    def test_kernel_lines_during_a_hang_go_to_the_hanging_case_with_a_half_limit_notice(self):
        self.write_manifest(timeout_s=4)
        kmsg = os.path.join(self.tmp, "kmsg")
        with open(kmsg, "w") as f:
            f.write("4,1,1000000,-;NVRM: from before the run\n")

        def driver_complains():
            time.sleep(2.5)
            with open(kmsg, "a") as f:
                f.write("4,2,2000000,-;NVRM: Xid (PCI:0000:3b:00): 109, Ctx Timeout\n")
        t = threading.Thread(target=driver_complains)
        t.start()
        rc, cases, out = self.run_runner("hang", "--kernel-log", kmsg)
        t.join()
        self.assertEqual(rc, 3, self.output)
        hung = cases["FakeTest.HangsWhenAsked"]
        self.assertEqual(hung.status, "TIMEOUT")
        self.assertEqual(hung.logs.get("kernel_log"),
                         "[2.000000] NVRM: Xid (PCI:0000:3b:00): 109, Ctx Timeout  [Xid: fails the case]")
        # The kernel's word (kmsg.py) against the binary's: the worse, TIMEOUT, stands, named.
        self.assertIn("(the binary TIMEOUT, the kernel Xid); TIMEOUT stands", hung.conflicts[0])
        self.assertNotIn("kernel_log", cases["FakeTest.Passes"].logs)
        self.assertRegex(self.output, r"notice: //selftest:fake_gtest passed half its time limit \(\d+ of 4 s\); "
                                      r"case FakeTest.HangsWhenAsked has run \d+ s")
        self.assertIn("[1/1] 0:00:0", self.output)
        run = testlogs.load_testlogs(out)
        self.assertEqual(run.fingerprint["pagelock_kernel_log"], f"read from {kmsg}")

    def test_json_summary_alone_on_stdout_progress_on_stderr(self):
        os.environ["PAGELOCK_FAKE_MODE"] = "fail"
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = runner.main(["--bundle", self.bundle, "--out", os.path.join(self.tmp, "j"), "--tags", "",
                              "--json"])
        self.assertEqual(rc, 3)
        doc = json.loads(out.getvalue())
        self.assertEqual((doc["status"], doc["exit_code"], doc["counts"]["FAIL"]), ("FAILURES", 3, 1))
        self.assertIn("runner: [1/1]", err.getvalue())

    def test_hang_is_killed_at_the_limit_and_reported_as_timeout(self):
        self.write_manifest(timeout_s=3)
        start = time.monotonic()
        rc, cases, _ = self.run_runner("hang")
        self.assertLess(time.monotonic() - start, 60)
        self.assertEqual(rc, 3)
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
        self.assertEqual(rc, 3)
        c = cases["FakeTest.ChildScenarioCompletes"]
        self.assertEqual(c.status, "CRASH")
        self.assertIn("SIGABRT", c.message)
        self.assertEqual(cases["FakeTest.PassesAfterTheOthers"].status, "PASS")

    def test_failure_message_is_kept(self):
        rc, cases, _ = self.run_runner("fail")
        self.assertEqual(rc, 3)
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


class ProgressTest(unittest.TestCase):
    """[k/N] progress, the running case from the journal, and the half-limit notice."""

    def setUp(self):
        self.now = 100.0
        self.out = io.StringIO()
        self.journal = os.path.join(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")), "j.jsonl")

    def progress(self, tty):
        return runner.Progress(2, stream=self.out, tty=tty, clock=lambda: self.now)

    def event(self, **ev):
        with open(self.journal, "a") as f:
            f.write(json.dumps(ev) + "\n")

    def test_plain_lines_per_target_when_not_a_terminal(self):
        p = self.progress(tty=False)
        p.target_started("//a:a_test")
        self.now += 75
        p.target_ended("//a:a_test: PASS=3")
        p.target_started("//b:b_test")
        self.assertEqual(self.out.getvalue().splitlines(), [
            "runner: [1/2] 0:00:00 //a:a_test ...", "runner: [1/2] 0:01:15 //a:a_test: PASS=3",
            "runner: [2/2] 0:01:15 //b:b_test ..."])
        self.assertNotIn("\r", self.out.getvalue())

    def test_a_case_past_half_the_limit_is_named_once(self):
        p = self.progress(tty=False)
        p.target_started("//a:a_test")
        p.launch(self.journal, 300.0)
        self.event(event="start", case="S.Quick")
        self.event(event="end", case="S.Quick", status="PASS")
        self.event(event="start", case="S.Hangs")
        self.now += 10
        p.tick()
        self.assertNotIn("notice", self.out.getvalue())
        self.now += 141
        p.tick()
        self.now += 5
        p.tick()
        notices = [l for l in self.out.getvalue().splitlines() if "notice" in l]
        self.assertEqual(notices, ["runner: notice: //a:a_test passed half its time limit (151 of 300 s); "
                                   "case S.Hangs has run 141 s"])

    def test_a_terminal_gets_one_redrawn_line_with_the_running_case(self):
        p = self.progress(tty=True)
        p.target_started("//a:a_test")
        p.launch(self.journal, 300.0)
        self.event(event="start", case="S.Slow")
        self.now += 2
        p.tick()
        self.now += 0.5
        p.tick()  # within a second of the last draw: nothing
        text = self.out.getvalue()
        self.assertTrue(text.endswith("\r\x1b[K[1/2] 0:00:02 //a:a_test: S.Slow (0 s)"), repr(text))
        self.assertEqual(text.count("S.Slow"), 1)
        p.target_ended("//a:a_test: PASS=1")
        self.assertTrue(self.out.getvalue().endswith("\r\x1b[Krunner: [1/2] 0:00:02 //a:a_test: PASS=1\n"))

    def test_parallel_targets_count_finished_and_the_terminal_names_three_running_and_more(self):
        p = runner.Progress(5, stream=self.out, tty=True, clock=lambda: self.now, jobs=4)
        journals = {}
        for name in ("a", "b", "c", "d"):
            p.target_started(f"//{name}:{name}_test")
            journals[name] = self.journal + name
            p.launch(journals[name], 300.0, f"//{name}:{name}_test")
        with open(journals["b"], "w") as f:
            f.write(json.dumps({"event": "start", "case": "S.Slow"}) + "\n")
        self.now += 3
        p.tick()
        self.assertTrue(self.out.getvalue().endswith(
            "\r\x1b[K[0/5] 0:00:03 //a:a_test, //b:b_test: S.Slow (0 s), //c:c_test +1"),
            repr(self.out.getvalue()[-120:]))
        p.target_ended("//a:a_test: PASS=1", "//a:a_test")
        self.assertIn("runner: [1/5] 0:00:03 //a:a_test: PASS=1\n", self.out.getvalue())
        self.assertTrue(self.out.getvalue().endswith(
            "[1/5] 0:00:03 //b:b_test: S.Slow (0 s), //c:c_test, //d:d_test"),
            repr(self.out.getvalue()[-120:]))

    def test_parallel_targets_without_a_terminal_print_a_line_per_start_and_end(self):
        p = runner.Progress(2, stream=self.out, tty=False, clock=lambda: self.now, jobs=2)
        p.target_started("//a:a_test")
        p.target_started("//b:b_test")
        self.now += 5
        p.target_ended("//b:b_test: PASS=2", "//b:b_test")
        p.target_ended("//a:a_test: FAIL=1", "//a:a_test")
        self.assertEqual(self.out.getvalue().splitlines(), [
            "runner: [0/2] 0:00:00 //a:a_test ...", "runner: [0/2] 0:00:00 //b:b_test ...",
            "runner: [1/2] 0:00:05 //b:b_test: PASS=2", "runner: [2/2] 0:00:05 //a:a_test: FAIL=1"])

    def test_each_running_target_gets_its_own_half_limit_notice(self):
        p = runner.Progress(2, stream=self.out, tty=False, clock=lambda: self.now, jobs=2)
        p.target_started("//a:a_test")
        p.launch(self.journal + "a", 10.0, "//a:a_test")
        self.now += 4
        p.target_started("//b:b_test")
        p.launch(self.journal + "b", 100.0, "//b:b_test")
        self.now += 2
        p.tick()
        notices = [l for l in self.out.getvalue().splitlines() if "notice" in l]
        self.assertEqual(notices, ["runner: notice: //a:a_test passed half its time limit (6 of 10 s); "
                                   "no case is running"])


class ScheduleOrderTest(unittest.TestCase):
    T = [{"label": "a", "tags": []}, {"label": "x", "tags": ["exclusive"]},
         {"label": "b", "tags": []}, {"label": "c", "tags": []}]

    def labels(self, *args):
        return [t["label"] for t in runner.schedule_order(self.T, *args)]

    def test_serial_keeps_the_selection_order_whatever_the_durations(self):
        self.assertEqual(self.labels(1, {"a": 1, "b": 5}), ["a", "x", "b", "c"])

    def test_parallel_runs_exclusive_first_then_longest_first_unknown_counting_as_longest(self):
        self.assertEqual(self.labels(4, {"a": 1, "b": 5}), ["x", "c", "b", "a"])
        self.assertEqual(self.labels(4, {}), ["x", "a", "b", "c"])

    def test_a_multi_gpu_target_runs_with_the_others_only_where_the_host_lacks_its_gpus(self):
        T = self.T + [{"label": "m", "tags": ["multi_gpu", "requires-gpu:2", "exclusive"]}]
        order = lambda gpus: [t["label"] for t in runner.schedule_order(T, 4, {}, gpus)]
        self.assertEqual(order(2), ["x", "m", "a", "b", "c"])
        self.assertEqual(order(None), ["x", "m", "a", "b", "c"])  # unknown: stays alone
        self.assertEqual(order(1), ["x", "a", "b", "c", "m"])  # it can only report NotSupported
        self.assertTrue(schedule.is_exclusive(T[1], 1))  # a one-GPU exclusive target stays alone


class HostGpuCountTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        for bus in ("0000:19:00.0", "0000:3b:00.0"):
            os.mkdir(os.path.join(self.dir, bus))

    def test_the_driver_list_narrowed_by_cuda_visible_devices(self):
        self.assertEqual(runner.host_gpu_count({}, self.dir), 2)
        self.assertEqual(runner.host_gpu_count({"CUDA_VISIBLE_DEVICES": "1"}, self.dir), 1)
        self.assertEqual(runner.host_gpu_count({"CUDA_VISIBLE_DEVICES": ""}, self.dir), 0)
        self.assertEqual(runner.host_gpu_count({"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, self.dir), 2)

    def test_unknown_without_the_driver_list(self):
        self.assertIsNone(runner.host_gpu_count({}, os.path.join(self.dir, "absent")))


class KernelLogTest(unittest.TestCase):
    """Kernel log lines (NVRM, Xid, oom-kill, IOMMU) go to the case that was running."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.kmsg = os.path.join(self.dir, "kmsg")
        with open(self.kmsg, "w") as f:
            f.write("6,1,1000000,-;NVRM: old line from before the run\n")
        self.journal = os.path.join(self.dir, "j.jsonl")

    def append(self, path, text):
        with open(path, "a") as f:
            f.write(text)

    def test_only_new_driver_lines_are_read(self):
        k = runner.KernelLog(self.kmsg)
        self.assertTrue(k.readable)
        self.append(self.kmsg, "4,2,2500000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
                               "6,3,2600000,-;usb 1-1: new high-speed USB device\n"
                               " SUBSYSTEM=pci\n"
                               "3,4,2700000,-;Out of memory: Killed process 1234 (hostalloc_test)\n"
                               "3,5,2800000,-;DMAR: [DMA Read] Request device [3b:00.0] fault addr 0x1000\n")
        self.assertEqual(k.read_new(), [
            "[2.500000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
            "[2.700000] Out of memory: Killed process 1234 (hostalloc_test)",
            "[2.800000] DMAR: [DMA Read] Request device [3b:00.0] fault addr 0x1000"])
        self.assertEqual(k.read_new(), [])
        k.close()

    def test_an_unreadable_kernel_log_says_why(self):
        k = runner.KernelLog(os.path.join(self.dir, "absent"))
        self.assertFalse(k.readable)
        self.assertRegex(k.status, r"^not readable \(.*absent: No such file or directory\)$")
        self.assertEqual(k.read_new(), [])

    def test_lines_go_to_the_case_running_when_they_were_read(self):
        now = [0.0]
        p = runner.Progress(1, stream=io.StringIO(), tty=False, clock=lambda: now[0])
        p.kernel = runner.KernelLog(self.kmsg)
        p.target_started("//a:a_test")
        p.launch(self.journal, 300.0)
        self.append(self.journal, json.dumps({"event": "start", "case": "S.Boom"}) + "\n")
        now[0] += 2
        p.tick()
        self.append(self.kmsg, "4,9,9000000,-;NVRM: Xid (PCI:0000:3b:00): 31, MMU Fault\n")
        lines = p.end_launch()
        self.assertEqual(lines, {"S.Boom": ["[9.000000] NVRM: Xid (PCI:0000:3b:00): 31, MMU Fault"]})

    def test_with_parallel_targets_a_line_goes_to_every_running_case_and_says_so(self):
        now = [0.0]
        p = runner.Progress(2, stream=io.StringIO(), tty=False, clock=lambda: now[0], jobs=2)
        p.kernel = runner.KernelLog(self.kmsg)
        for name, case in (("a", "S.Boom"), ("b", "T.Busy")):
            p.target_started(f"//{name}:{name}_test")
            p.launch(self.journal + name, 300.0, f"//{name}:{name}_test")
            self.append(self.journal + name, json.dumps({"event": "start", "case": case}) + "\n")
        now[0] += 2
        p.tick()
        self.append(self.kmsg, "4,9,9000000,-;NVRM: Xid (PCI:0000:3b:00): 31, MMU Fault\n")
        line = ("[9.000000] NVRM: Xid (PCI:0000:3b:00): 31, MMU Fault (pagelock runner: 2 targets "
                "were running: //a:a_test, //b:b_test)")
        self.assertEqual(p.end_launch("//a:a_test"), {"S.Boom": [line]})
        p.target_ended("//a:a_test: CRASH=1", "//a:a_test")
        self.append(self.kmsg, "4,10,9500000,-;NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception\n")
        self.assertEqual(p.end_launch("//b:b_test"), {"T.Busy": [
            line, "[9.500000] NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception"]})

    def test_a_property_is_added_to_a_case_element(self):
        el = testlogs.synthesize_case("S.Boom", "CRASH", "killed")
        journals.add_property(el, "kernel_log", "[1.0] NVRM: Xid 79")
        journals.add_property(el, "kernel_log", "[2.0] NVRM: Xid 31")
        # Read from the element itself: one kernel_log property, extended, in one <properties>.
        values = [p.get("value") for p in el.iter("property") if p.get("name") == "kernel_log"]
        self.assertEqual(values, ["[1.0] NVRM: Xid 79\n[2.0] NVRM: Xid 31"])
        self.assertEqual(len(el.findall("properties")), 1)


if __name__ == "__main__":
    unittest.main()
