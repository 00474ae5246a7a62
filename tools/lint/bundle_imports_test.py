"""A bundle (tools/bundle.py) holds every repository module that its Python imports, so that the
runner, the report, the mutation tool and the probe summary run on a machine without a checkout.

The bundle's file lists come from folders (bundle.python_modules); this test writes a bundle and
follows every import of every Python file in it, also the ones inside functions: an import of a
module of the checkout that the bundle lacks is a failure, named with the file that imports it.
"""

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.lint.bundle_imports_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from tools import bundle


def imported_modules(path):
    """(dotted name, level) of every import in a Python file; `from A import B` gives A and A.B."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, 0
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if base:
                yield base, node.level
            for alias in node.names:
                yield (base + "." if base else "") + alias.name, node.level


def module_files(name, level, importer_dir, root):
    """Where a module would be under root: the package path, and for a plain or relative import
    also beside the importing file (tools that put their own folder on sys.path)."""
    parts = name.split(".")
    bases = [importer_dir] if level else [root, importer_dir]
    if level > 1:
        bases = [os.path.normpath(os.path.join(importer_dir, *[".."] * (level - 1)))]
    for base in bases:
        stem = os.path.join(base, *parts)
        yield stem + ".py"
        yield os.path.join(stem, "__init__.py")


def missing_modules(out):
    """'<file> imports <module>' for each module of the checkout that a Python file of the bundle
    at out imports and the bundle lacks."""
    missing = set()
    for d, _, names in os.walk(out):
        for n in names:
            if not n.endswith(".py"):
                continue
            path = os.path.join(d, n)
            rel_dir = os.path.relpath(d, out)
            for name, level in imported_modules(path):
                in_bundle = module_files(name, level, d, out)
                in_checkout = module_files(name, level, os.path.join(ROOT, rel_dir), ROOT)
                if any(map(os.path.isfile, in_checkout)) and not any(map(os.path.isfile, in_bundle)):
                    missing.add(f"{os.path.relpath(path, out)} imports {name}")
    return sorted(missing)


class BundleImportsTest(unittest.TestCase):
    def make_bundle(self):
        tmp = tempfile.mkdtemp(prefix="bundle_imports_", dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, tmp)
        # What a --config=bundle build leaves in bazel-bin: one test binary and the shim (the
        # imports are what is checked here, so both are stand-ins).
        bin_dir = os.path.join(tmp, "bazel-bin")
        for rel in ("fake/fake_test", "tools/faults/shim/libcuda.so.1"):
            os.makedirs(os.path.dirname(os.path.join(bin_dir, rel)), exist_ok=True)
            with open(os.path.join(bin_dir, rel), "w") as f:
                f.write("stand-in\n")
        out = os.path.join(tmp, "bundle")
        targets = [{"label": "//fake:fake_test", "path": "bin/fake/fake_test", "tags": ["gpu"],
                    "timeout_s": 60}]
        bundle.write_bundle(out, targets, bin_dir, "c0ffee", "", argparse.Namespace(archs=None))
        return out

    def test_every_repository_module_a_bundled_file_imports_is_bundled(self):
        out = self.make_bundle()
        self.assertTrue(os.path.isfile(os.path.join(out, "tools", "runner", "runner.py")))
        self.assertEqual(missing_modules(out), [], "modules the bundle lacks (tools/bundle.py tool_files)")

    def test_the_bundle_commands_run_as_modules_of_the_bundle(self):
        # As on a GPU machine: by their paths, the bundle's own packages (docs/python.md), never
        # those of the folder they are started from (here the checkout's).
        out = self.make_bundle()
        with open(os.path.join(out, "reports", "__init__.py"), "a", encoding="utf-8") as f:
            f.write("import sys\nsys.stderr.write('reports of the bundle\\n')\n")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        for cmd in (["sh", os.path.join(out, "run"), "--help"],
                    [sys.executable, os.path.join(out, "reports", "report.py"), "--help"],
                    [sys.executable, os.path.join(out, "tools", "mutation", "mutation.py"), "--help"]):
            p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, f"{cmd}: {p.stderr[-2000:]}")
            self.assertIn("usage:", p.stdout, cmd)
            self.assertIn("reports of the bundle", p.stderr, cmd)

    def test_a_module_left_out_of_the_bundle_is_named_with_its_importer(self):
        out = self.make_bundle()
        os.remove(os.path.join(out, "reports", "testlogs.py"))
        self.assertIn("tools/runner/target.py imports reports.testlogs", missing_modules(out))


if __name__ == "__main__":
    unittest.main()
