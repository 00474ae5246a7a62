#!/usr/bin/env python3
"""The fault layer travels in every bundle (tools/bundle.py): the shim, the catalogue, the
survivor notes and the mutation tool, so that `python3 BUNDLE/tools/mutation/mutation.py BUNDLE`
works on a GPU machine from the bundle alone, and rebuilds the shim with g++ from the bundle's
sources when the bundle lacks the binary. tools/faults/add_to_bundle.py refreshes an older bundle
through the same function.

Under Bazel the shim and the fake driver come from the runfiles; run directly
(python3 tools/faults/bundle_layer_test.py) it builds them with g++/gcc.
"""
import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.faults.bundle_layer_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from tools import bundle
from tools.faults import add_to_bundle
from tools.mutation import mutation_test  # shim_and_fake, ROOT

ROOT = mutation_test.ROOT


class FaultLayerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bundle_layer_", dir=os.environ.get("TEST_TMPDIR"))
        cls.shim, cls.fake = mutation_test.shim_and_fake(cls.tmp)
        # What Bazel's --config=bundle build leaves in bazel-bin: one test binary and the shim.
        cls.bin_dir = os.path.join(cls.tmp, "bazel-bin")
        os.makedirs(os.path.join(cls.bin_dir, "fake"))
        shutil.copy(os.path.join(ROOT, "tools/mutation/testdata/fake_suite.py"),
                    os.path.join(cls.bin_dir, "fake", "fake_suite"))
        os.chmod(os.path.join(cls.bin_dir, "fake", "fake_suite"), 0o755)
        os.makedirs(os.path.join(cls.bin_dir, "tools/faults/shim"))
        shutil.copy(os.path.join(cls.shim, "libcuda.so.1"),
                    os.path.join(cls.bin_dir, "tools/faults/shim/libcuda.so.1"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def make_bundle(self, name):
        out = os.path.join(self.tmp, name)
        targets = [{"label": "//fake:fake_suite", "path": "bin/fake/fake_suite",
                    "tags": ["gpu", "tier_bat"], "timeout_s": 60}]
        bundle.write_bundle(out, targets, self.bin_dir, "c0ffee", "", argparse.Namespace(archs=None))
        return out

    def mutation(self, b, out, *extra):
        """The bundle's own mutation tool, run from outside the repository."""
        env = dict(os.environ, PAGELOCK_REAL_LIBCUDA=self.fake)
        env.pop("LD_LIBRARY_PATH", None)
        p = subprocess.run([sys.executable, os.path.join(b, "tools/mutation/mutation.py"), b,
                            "--out", out, "--faults", "htod_corrupts_last_byte,cap_cannot_map_host",
                            "--jobs", "2", *extra], cwd="/", env=env, capture_output=True,
                           text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(out, "mutation.json")) as f:
            return json.load(f)

    def test_every_bundle_carries_the_shim_catalogue_survivor_notes_and_tools(self):
        b = self.make_bundle("b1")
        self.assertTrue(os.access(os.path.join(b, "faults/libcuda.so.1"), os.X_OK))
        for rel in bundle.FAULT_FILES + ["faults/catalogue.tsv", "faults/survivors.tsv"]:
            self.assertTrue(os.path.isfile(os.path.join(b, rel)), rel)
        with open(os.path.join(b, "faults/catalogue.tsv")) as f, \
                open(os.path.join(ROOT, "tools/faults/catalogue.tsv")) as g:
            self.assertEqual(f.read(), g.read())
        # The shim's sources, every area of the catalogue among them (build_shim.sh compiles the
        # folder); the checkout-only tools stay behind.
        areas = sorted(os.listdir(os.path.join(ROOT, "tools/faults/catalogue")))
        self.assertIn("copies.cc", areas)
        self.assertEqual(sorted(os.listdir(os.path.join(b, "tools/faults/catalogue"))), areas)
        for rel in ("fault.h", "hooks.h", "hooks.cc", "catalogue.cc", "shim.cc", "shim.h"):
            self.assertTrue(os.path.isfile(os.path.join(b, "tools/faults", rel)), rel)
        for rel in ("tables.py", "built.py", "compare_shims.py", "shim_client.cc", "BUILD.bazel"):
            self.assertFalse(os.path.exists(os.path.join(b, "tools/faults", rel)), rel)

    def test_the_mutation_tool_runs_from_the_bundle_alone(self):
        b = self.make_bundle("b2")
        doc = self.mutation(b, os.path.join(self.tmp, "m2"))
        self.assertEqual(doc["config"]["shim"], os.path.join(b, "faults"))
        self.assertEqual(doc["config"]["catalogue"], os.path.join(b, "faults/catalogue.tsv"))
        self.assertEqual({r["name"]: r["verdict"] for r in doc["faults"]},
                         {"htod_corrupts_last_byte": "KILLED", "cap_cannot_map_host": "HANDLED"})

    def test_the_conforming_catalogue_travels_and_runs_from_the_bundle(self):
        # Needs "tools/faults/conforming.tsv" in tools/bundle.py's FAULT_FILES (owned by the
        # integrator); without it `mutation.py --catalogue conforming` exits 2 on the GPU machine.
        self.assertIn("tools/faults/conforming.tsv", bundle.FAULT_FILES)
        b = self.make_bundle("b5")
        self.assertTrue(os.path.isfile(os.path.join(b, "faults/conforming.tsv")))
        doc = self.mutation(b, os.path.join(self.tmp, "m5"), "--catalogue", "conforming",
                            "--faults", "iomemory_on_ram_not_permitted")
        self.assertEqual(doc["config"]["catalogue"], os.path.join(b, "faults/conforming.tsv"))
        self.assertEqual([(v["name"], v["verdict"]) for v in doc["variations"]],
                         [("iomemory_on_ram_not_permitted", "NOT_EXERCISED")])
        self.assertEqual(doc["false_alarms"]["count"], 0)

    def test_without_the_shim_binary_the_bundle_rebuilds_it_with_gpp(self):
        # build_shim.sh in the bundle compiles the mechanism and every area of the catalogue.
        b = self.make_bundle("b3")
        os.remove(os.path.join(b, "faults/libcuda.so.1"))
        out = os.path.join(self.tmp, "m3")
        doc = self.mutation(b, out, "--faults", "htod_corrupts_last_byte")
        self.assertEqual(doc["config"]["shim"], os.path.join(out, "shimlib"))
        self.assertEqual(doc["faults"][0]["verdict"], "KILLED")

    def test_add_to_bundle_refreshes_an_older_bundle(self):
        b = self.make_bundle("b4")
        shutil.rmtree(os.path.join(b, "faults"))
        shutil.rmtree(os.path.join(b, "tools/faults"))
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = add_to_bundle.main([b, "--shim", os.path.join(self.shim, "libcuda.so.1")])
        self.assertEqual(rc, 0, buf.getvalue())
        self.assertTrue(os.path.isfile(os.path.join(b, "faults/survivors.tsv")))
        self.assertTrue(os.path.isfile(os.path.join(b, "tools/faults/build_shim.sh")))
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = add_to_bundle.main([self.tmp, "--shim", os.path.join(self.shim, "libcuda.so.1")])
        self.assertEqual(rc, 2)
        self.assertIn("not a bundle", buf.getvalue())


if __name__ == "__main__":
    unittest.main()
