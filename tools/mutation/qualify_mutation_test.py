#!/usr/bin/env python3
"""qualify --mutation on CPU: a bundle of testdata/fake_suite.py (which reaches libcuda.so.1
through ctypes), the fake driver of tools/faults/testdata installed as libcuda.so.1 for the
qualification proper, and the fault shim in front of it for the mutation run. Checks that the
score lands in <run dir>/mutation/, results.json and the --json summary, and that a mutation run
that cannot work is a note that leaves the verdict alone.

Run directly (python3 tools/mutation/qualify_mutation_test.py) it builds the shim and the fake
driver with g++/gcc; under Bazel they come from the runfiles.
"""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.mutation.qualify_mutation_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import compare as cmp
from tools import qualify
from tools.mutation import mutation_test  # shim_and_fake, make_bundle


class QualifyMutationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="qualify_mutation_", dir=os.environ.get("TEST_TMPDIR"))
        shim, fake = mutation_test.shim_and_fake(cls.tmp)
        cls.fake = fake
        cls.bundle = mutation_test.make_bundle(cls.tmp, shim)
        # Only the faults the fake suite reaches, so the run stays short.
        with open(os.path.join(mutation_test.ROOT, "tools/faults/catalogue.tsv")) as f:
            rows = f.read().splitlines()
        keep = ("htod_corrupts_last_byte", "cap_cannot_map_host", "ctx_sync_returns_early")
        with open(os.path.join(cls.bundle, "faults", "catalogue.tsv"), "w") as f:
            f.write("\n".join([rows[0]] + [r for r in rows[1:] if r.split("\t")[0] in keep]) + "\n")
        cls.driver = os.path.join(cls.tmp, "driver")
        os.makedirs(cls.driver)
        shutil.copy(fake, os.path.join(cls.driver, "libcuda.so.1"))
        cls.saved = {k: os.environ.get(k) for k in ("LD_LIBRARY_PATH", "PAGELOCK_REAL_LIBCUDA")}
        os.environ["LD_LIBRARY_PATH"] = cls.driver  # the qualification proper: the fake driver
        os.environ["PAGELOCK_REAL_LIBCUDA"] = fake  # the shim forwards to it

    @classmethod
    def tearDownClass(cls):
        for k, v in cls.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(cls.tmp)

    def qualify(self, out, *extra):
        exp = os.path.join(self.tmp, "expectations")
        os.makedirs(exp, exist_ok=True)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = qualify.main(["--bundle", self.bundle, "--out", out, "--expectations", exp,
                               "--baseline", "none", "--no-history", "--json", *extra])
        lines = [l for l in buf.getvalue().splitlines() if l.startswith("{")]
        self.output = buf.getvalue()
        return rc, json.loads(lines[-1])

    def test_mutation_score_goes_into_the_run_folder_results_and_summary(self):
        rc, summary = self.qualify(os.path.join(self.tmp, "runs"), "--mutation",
                                   "--mutation-budget", "120", "--mutation-jobs", "2")
        self.assertEqual(rc, cmp.EXIT_QUALIFIED, self.output)
        run_dir = summary["run_dir"]
        with open(os.path.join(run_dir, "mutation", "mutation.json")) as f:
            doc = json.load(f)
        self.assertEqual({r["name"]: r["verdict"] for r in doc["faults"]},
                         {"htod_corrupts_last_byte": "KILLED", "cap_cannot_map_host": "HANDLED",
                          "ctx_sync_returns_early": "SURVIVED"})
        # qualify's own run stood in for the second control.
        self.assertEqual(doc["control"]["runs"], ["control"])
        self.assertEqual(doc["control"]["reference"], os.path.join(run_dir, "testlogs"))
        want = {"status": "done", "faults": 3, "faults_run": 3, "killed": 1, "handled": 1,
                "survived": 1, "not_run": 0, "score_percent": 66.7,
                "survivors": ["ctx_sync_returns_early"]}
        self.assertEqual({k: summary["mutation"][k] for k in want}, want)
        self.assertTrue(summary["mutation"]["line"].startswith("caught 2 of 3 injected driver faults"))
        with open(os.path.join(run_dir, "results.json")) as f:
            results = json.load(f)
        self.assertEqual(json.dumps(results).count('"score_percent": 66.7'), 1)
        self.assertTrue(os.path.exists(os.path.join(run_dir, "index.html")))

    def test_a_mutation_run_that_cannot_work_is_a_note_and_keeps_the_verdict(self):
        # The shim finds no real driver: the mutation tool exits 1 before any fault ran.
        os.environ["PAGELOCK_REAL_LIBCUDA"] = os.path.join(self.tmp, "no_such_libcuda.so.1")
        try:
            rc, summary = self.qualify(os.path.join(self.tmp, "runs_bad"), "--mutation",
                                       "--mutation-budget", "60")
        finally:
            os.environ["PAGELOCK_REAL_LIBCUDA"] = self.fake
        self.assertEqual(rc, cmp.EXIT_QUALIFIED, self.output)
        self.assertEqual(summary["verdict"], cmp.VERDICTS[cmp.EXIT_QUALIFIED][0])
        self.assertEqual(summary["mutation"]["status"], "not run")
        self.assertEqual(summary["mutation"]["line"], "not run")
        self.assertIn("exited 1", summary["mutation"]["note"])
        with open(os.path.join(summary["run_dir"], "results.json")) as f:
            self.assertIn("not run", f.read())

    def test_a_bad_mutation_budget_is_bad_configuration(self):
        rc, _ = self.qualify(os.path.join(self.tmp, "runs_cfg"), "--mutation", "--mutation-budget", "0")
        self.assertEqual(rc, cmp.EXIT_CONFIG)


if __name__ == "__main__":
    unittest.main()
