"""tools/qualify --repro CASE: the archive of a failing case runs without pagelock, with the
case's filter, its run seed, --gtest_repeat and the environment the runner gave the binary, and
says whether the recorded status came again. Proven on fake binaries (no GPU here):

- tools/testdata/fake_suite.py, whose Pinned.FailsForOneSeed fails only for run seed 4242: the
  seed travels;
- tools/runner:fake_gtest, a GoogleTest binary on pagelock's own fixtures and main, whose
  FailsWhenAsked fails when PAGELOCK_FAKE_MODE says so, run under the fault layer's shim
  (tools/faults): the environment and the shim travel, and --gtest_repeat repeats;
- a suite binary, when one is built (bazel-bin/suites/hostalloc/hostalloc_test): every case is
  NotSupported without a GPU, and the archive gives that status again, with the seed.
"""

import contextlib
import glob
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.repro_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import compare as cmp
from reports import htmlreport
from reports import model
from tools import qualify
from tools.qualification import repro
from tools.runner import runner_test

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FAKE_SUITE = os.path.join(HERE, "testdata", "fake_suite.py")
# Only what a machine without pagelock has: no GTEST_ variable of the shell reaches the binary.
BARE_ENV = {"PATH": "/usr/bin:/bin", "GTEST_FILTER": "Nothing.Else", "GTEST_REPEAT": "7"}


def built(rel):
    """A Bazel output: in the test's runfiles, else in the checkout's bazel-bin; None if absent."""
    for base in (os.path.join(os.environ.get("TEST_SRCDIR", ""), "pagelock"), os.path.join(ROOT, "bazel-bin")):
        path = os.path.join(base, rel)
        if os.path.isfile(path):
            return path
    return None


class ReproCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.bundle = os.path.join(self.tmp, "bundle")
        self.out = os.path.join(self.tmp, "runs")
        self.exp = os.path.join(self.tmp, "expectations")
        os.makedirs(self.exp)
        self.saved_env = dict(os.environ)
        self.addCleanup(self.restore_env)

    def restore_env(self):
        os.environ.clear()
        os.environ.update(self.saved_env)

    def make_bundle(self, label, binary):
        pkg, name = label[2:].split(":")
        path = f"bin/{pkg}/{name}"
        os.makedirs(os.path.dirname(os.path.join(self.bundle, path)), exist_ok=True)
        shutil.copy(binary, os.path.join(self.bundle, path))
        os.chmod(os.path.join(self.bundle, path), 0o755)
        with open(os.path.join(self.bundle, "manifest.json"), "w") as f:
            json.dump({"info": {"commit": "c0ffee"}, "targets": [
                {"label": label, "path": path, "timeout_s": 60, "tags": ["gpu", "tier_bat"]}]}, f)

    def qualify(self, *argv, **env):
        os.environ.update({k: str(v) for k, v in env.items()})
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = qualify.main(list(argv))
        self.output = buf.getvalue()
        return rc

    def run_qualify(self, *extra, **env):
        return self.qualify("--bundle", self.bundle, "--out", self.out, "--expectations", self.exp,
                            "--baseline", "none", "--no-history", "--retries", "1", *extra, **env)

    def make_repro(self, case, *extra):
        self.restore_env()  # the reproducer comes from the records, not from this process
        self.assertEqual(self.qualify("--repro", case, "--out", self.out, *extra), 0, self.output)
        return glob.glob(os.path.join(self.out, "*", "repro", "*.tar.gz"))[-1]

    def unpack(self, archive):
        where = os.path.join(self.tmp, "elsewhere")
        shutil.rmtree(where, ignore_errors=True)
        os.makedirs(where)
        with tarfile.open(archive) as tar:
            names = sorted(tar.getnames())
            tar.extractall(where)
        top = os.path.join(where, names[0].split("/")[0])
        return top, sorted(os.path.relpath(os.path.join(where, n), top) for n in names
                           if os.path.isfile(os.path.join(where, n)))

    def run_script(self, top, *args, env=None):
        """run.sh from another folder, with nothing of pagelock in the environment."""
        p = subprocess.run(["/bin/sh", os.path.join(top, "run.sh"), *args], cwd=self.tmp,
                           env=env or BARE_ENV, capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout + p.stderr


class SeedTest(ReproCase):
    """fake_suite.py: Pinned.FailsForOneSeed fails only for run seed 4242."""

    def setUp(self):
        super().setUp()
        self.make_bundle("//selftest:fake_suite", FAKE_SUITE)
        self.assertEqual(self.run_qualify("--seed", "4242"), cmp.EXIT_REGRESSION, self.output)

    def test_the_archive_of_a_seed_dependent_failure_reproduces_it_without_pagelock(self):
        archive = self.make_repro("Pinned.FailsForOneSeed")  # the end of the id is enough
        self.assertIn("qualify: reproducer of selftest:fake_suite/Pinned.FailsForOneSeed (FAIL, REGRESSION)",
                      self.output)
        self.assertLess(os.path.getsize(archive), os.path.getsize(FAKE_SUITE) + (16 << 10))  # small
        top, files = self.unpack(archive)
        self.assertEqual(os.path.basename(top), "pagelock-repro-fake_suite-Pinned.FailsForOneSeed")
        self.assertEqual(files, ["README.md", "bin/fake_suite", "case.json", "fingerprint.json", "run.sh"])
        rc, out = self.run_script(top)
        self.assertEqual(rc, 1, out)
        self.assertIn("pagelock: seed 4242", out)
        self.assertIn("bytes differ for run seed 4242", out)
        self.assertNotIn("CopyRoundTrips", out)  # exactly the case, whatever GTEST_FILTER says
        self.assertIn("pagelock reproducer: recorded FAIL, this run FAIL (exit status 1, 1 repetition(s))", out)
        self.assertIn("pagelock reproducer: REPRODUCED", out)
        with open(os.path.join(top, "out", "result.xml")) as f:
            self.assertIn('name="FailsForOneSeed"', f.read())

    def test_the_readme_says_what_was_seen_on_which_machine_and_what_to_run(self):
        top, _ = self.unpack(self.make_repro("selftest:fake_suite/Pinned.FailsForOneSeed"))
        with open(os.path.join(top, "README.md")) as f:
            text = f.read()
        for part in ("- status: **FAIL**, against the expectations and the baseline **REGRESSION**",
                     "attempts FAIL FAIL", "bytes differ for run seed 4242", "- GPU: NVIDIA H200 (x1)",
                     "- driver: 580.159.04", "- CUDA runtime the binary was built with: 13.0",
                     "Kernel log lines while the case ran: none recorded.", "./pagelock-repro-fake_suite-"
                     "Pinned.FailsForOneSeed/run.sh 20",
                     "PAGELOCK_SEED=4242 PAGELOCK_TIME_SCALE=1.0 ./bin/fake_suite "
                     "--gtest_filter='Pinned.FailsForOneSeed' --gtest_repeat=1",
                     "- rule R01: "):
            self.assertIn(part, text)
        with open(os.path.join(top, "fingerprint.json")) as f:
            self.assertEqual(json.load(f)["gpu0_name"], "NVIDIA H200")
        with open(os.path.join(top, "case.json")) as f:
            self.assertEqual(json.load(f)["run_seed"], "4242")

    def test_another_seed_does_not_reproduce_it(self):
        top, _ = self.unpack(self.make_repro("Pinned.FailsForOneSeed"))
        with open(os.path.join(top, "run.sh")) as f:
            script = f.read()
        self.assertIn("export PAGELOCK_SEED='4242'", script)
        with open(os.path.join(top, "run.sh"), "w") as f:
            f.write(script.replace("export PAGELOCK_SEED='4242'", "export PAGELOCK_SEED='4243'"))
        rc, out = self.run_script(top)
        self.assertEqual(rc, 0, out)
        self.assertIn("pagelock reproducer: recorded FAIL, this run PASS", out)
        self.assertIn("pagelock reproducer: NOT REPRODUCED", out)

    def test_kernel_log_lines_and_the_known_deviations_program_travel(self):
        # As the run would have them had the case logged an Xid and cited R58, a deviation
        # docs/platforms/repro/ has a standalone program of.
        run_dir = glob.glob(os.path.join(self.out, "2*"))[0]
        path = os.path.join(run_dir, "results.json")
        with open(path) as f:
            doc = json.load(f)
        case = next(c for c in doc["run"]["cases"] if c["name"] == "FailsForOneSeed")
        case["logs"]["kernel_log"] = "NVRM: Xid (PCI:0000:00:06): 31, pid=4242, name=fake_suite, Ch 00000008"
        case["rules"] = ["R58"]
        with open(path, "w") as f:
            json.dump(doc, f)
        top, files = self.unpack(self.make_repro("Pinned.FailsForOneSeed", "--run", os.path.basename(run_dir)))
        self.assertIn("kernel-log.txt", files)
        self.assertIn("r58.cu", files)
        with open(os.path.join(top, "README.md")) as f:
            text = f.read()
        self.assertIn("NVRM: Xid (PCI:0000:00:06): 31", text)
        self.assertIn("`r58.cu`: `nvcc r58.cu -o r58 && ./r58`", text)
        with open(os.path.join(top, "kernel-log.txt")) as f:
            self.assertIn("name=fake_suite", f.read())

    def test_bad_input_is_exit_2_with_the_reason(self):
        self.restore_env()
        for argv, words in ((["--repro", "Pinned.NoSuchCase"], "no run in"),
                            (["--repro", "Pinned.FailsForOneSeed", "--run", "nope"], "--run nope: no qualify run"),
                            (["--repro", "FailsForOneSeed", "--run", glob.glob(os.path.join(self.out, "2*"))[0]],
                             "no such case"),
                            (["--repro", "Pinned.FailsForOneSeed", "--bundle", self.tmp], "manifest.json")):
            self.assertEqual(self.qualify(*argv, "--out", self.out), cmp.EXIT_CONFIG, argv)
            self.assertIn(words, self.output, argv)

    def test_a_bundle_of_another_build_is_refused_unless_forced(self):
        with open(os.path.join(self.bundle, "manifest.json")) as f:
            manifest = json.load(f)
        manifest["info"]["commit"] = "another"
        with open(os.path.join(self.bundle, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        self.restore_env()
        self.assertEqual(self.qualify("--repro", "Pinned.FailsForOneSeed", "--out", self.out), cmp.EXIT_CONFIG)
        self.assertIn("the bundle", self.output)
        self.assertIn("is commit another, the run's was c0ffee", self.output)
        self.assertEqual(self.qualify("--repro", "Pinned.FailsForOneSeed", "--out", self.out, "--force"), 0,
                         self.output)

    def test_the_page_gives_each_failed_case_its_reproducer_command(self):
        run_dir = glob.glob(os.path.join(self.out, "2*"))[0]
        with open(os.path.join(run_dir, "index.html")) as f:
            page = f.read()
        command = (f"tools/qualify --repro 'selftest:fake_suite/Pinned.FailsForOneSeed' --run "
                   f"{os.path.basename(run_dir)} --out {self.out}")
        self.assertIn(f"<button data-copy='{command}'", page.replace("&#39;", "'"))
        self.assertIn('"rx":', page)  # in the case's details too
        self.assertEqual(page.count("copy reproducer command"), 1 + 1)  # the cause, report.js


class EnvironmentAndShimTest(ReproCase):
    """fake_gtest (pagelock's fixtures and main) fails FailsWhenAsked when PAGELOCK_FAKE_MODE says
    so; the run goes through the fault layer's shim, which logs each process it is loaded in."""

    def setUp(self):
        super().setUp()
        self.make_bundle("//selftest:fake_gtest", runner_test.fake_binary())
        shim = built("tools/faults/shim/libcuda.so.1")
        if shim is None:
            self.skipTest("the fault shim is not built (bazel build //tools/faults:shim/libcuda.so.1)")
        self.shim_dir = os.path.join(self.bundle, "faults")
        os.makedirs(self.shim_dir)
        shutil.copy(shim, self.shim_dir)
        self.fault_log = os.path.join(self.tmp, "fault.log")
        rc = self.run_qualify("--allow-no-gpu", PAGELOCK_FAKE_MODE="fail", LD_LIBRARY_PATH=self.shim_dir,
                              PAGELOCK_FAULT="dtoh_truncated", PAGELOCK_FAULT_LOG=self.fault_log,
                              PAGELOCK_KERNEL_LOG="")
        self.assertEqual(rc, cmp.EXIT_REGRESSION, self.output)
        with open(self.fault_log) as f:
            self.assertIn("fault=dtoh_truncated", f.read())  # the run went through the shim
        os.remove(self.fault_log)

    def test_the_environment_and_the_shim_travel_and_the_case_repeats(self):
        top, files = self.unpack(self.make_repro("selftest:fake_gtest/FakeTest.FailsWhenAsked"))
        self.assertEqual(files, ["README.md", "bin/fake_gtest", "case.json", "faults/libcuda.so.1",
                                 "fingerprint.json", "run.sh"])
        with open(os.path.join(top, "run.sh")) as f:
            script = f.read()
        self.assertIn("export PAGELOCK_FAKE_MODE='fail'", script)
        self.assertIn("export PAGELOCK_FAULT='dtoh_truncated'", script)
        self.assertNotIn(self.shim_dir, script)  # the archive's own shim, not the bundle's path
        rc, out = self.run_script(top, "3")
        self.assertEqual(rc, 1, out)
        self.assertIn("Repeating all tests (iteration 3)", out)
        self.assertNotIn("Repeating all tests (iteration 4)", out)  # 3, not GTEST_REPEAT's 7
        self.assertIn("deliberate failure", out)
        self.assertNotIn("FakeTest.Passes", out)
        self.assertIn("pagelock reproducer: REPRODUCED", out)
        with open(self.fault_log) as f:  # the shim of the archive was loaded, with the fault
            self.assertIn("init\treal=none\tfault=dtoh_truncated", f.read())
        with open(os.path.join(top, "README.md")) as f:
            self.assertIn("`PAGELOCK_FAULT=dtoh_truncated`", f.read())

    def test_without_the_recorded_environment_the_case_passes(self):
        top, _ = self.unpack(self.make_repro("FakeTest.FailsWhenAsked"))
        with open(os.path.join(top, "run.sh")) as f:
            script = f.read()
        with open(os.path.join(top, "run.sh"), "w") as f:
            f.write(script.replace("export PAGELOCK_FAKE_MODE='fail'\n", ""))
        rc, out = self.run_script(top)
        self.assertEqual(rc, 0, out)
        self.assertIn("pagelock reproducer: NOT REPRODUCED", out)


class SuiteBinaryTest(ReproCase):
    """A real suite binary: without a GPU each case is NotSupported, and the archive, run under
    the fault shim as the run was, gives NotSupported again with the run's seed."""

    def test_a_not_supported_case_of_a_suite_binary_comes_again(self):
        binary = built("suites/hostalloc/hostalloc_test")
        shim = built("tools/faults/shim/libcuda.so.1")
        if binary is None or shim is None:
            self.skipTest("no built suite binary and shim (bazel build //suites/hostalloc:hostalloc_test "
                          "//tools/faults:shim/libcuda.so.1)")
        self.make_bundle("//suites/hostalloc:hostalloc_test", binary)
        os.makedirs(os.path.join(self.bundle, "faults"))
        shutil.copy(shim, os.path.join(self.bundle, "faults"))
        fp = json.loads(subprocess.run([binary, "--pagelock_fingerprint"], capture_output=True, text=True,
                                       timeout=60).stdout)
        if fp.get("device_status") == "usable":
            self.skipTest("this machine has a GPU")
        log = os.path.join(self.tmp, "fault.log")
        rc = self.run_qualify("--allow-no-gpu", "--seed", "5151", LD_LIBRARY_PATH=os.path.join(self.bundle, "faults"),
                              PAGELOCK_FAULT="dtoh_truncated", PAGELOCK_FAULT_LOG=log, PAGELOCK_KERNEL_LOG="")
        self.assertEqual(rc, cmp.EXIT_NOTHING_RAN, self.output)
        case = "suites/hostalloc:hostalloc_test/HostAllocTest.GetFlagsOfUnpinnedMemoryReturnsInvalidValue"
        top, files = self.unpack(self.make_repro(case))
        self.assertIn("faults/libcuda.so.1", files)
        os.remove(log)
        rc, out = self.run_script(top)
        self.assertEqual(rc, 0, out)
        self.assertIn("pagelock: seed 5151", out)
        self.assertIn("Running 1 test from 1 test suite", out)
        self.assertIn("pagelock reproducer: recorded NOT_SUPPORTED, this run NOT_SUPPORTED", out)
        with open(log) as f:
            self.assertIn("fault=dtoh_truncated", f.read())


class CommandTest(unittest.TestCase):
    def test_the_page_command_names_the_run_and_a_folder_other_than_runs(self):
        info = {"run_key": "20261207-k", "command": "tools/qualify --bundle b --out /lab/nights --seed 1"}
        self.assertEqual(htmlreport.repro_command("suites/a:a_test/S.It's", info),
                         "tools/qualify --repro 'suites/a:a_test/S.It'\"'\"'s' --run 20261207-k --out /lab/nights")
        self.assertEqual(htmlreport.repro_command("x", {"run_key": "k", "command": "tools/qualify --out runs"}),
                         "tools/qualify --repro 'x' --run k")
        self.assertIsNone(htmlreport.repro_command("x", {}))

    def test_a_case_id_becomes_a_folder_name(self):
        self.assertEqual(repro.slug("suites/interior:pointer_queries_test/P/Q.R/0 x"),
                         "pagelock-repro-pointer_queries_test-P-Q.R-0-x")


if __name__ == "__main__":
    unittest.main()
