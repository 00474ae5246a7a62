"""The Python of the repository is one package tree (docs/python.md): no file edits the import
path, every file that runs by its path re-runs itself as its module with the same launch block,
and no two modules import each other, directly or around a circle.

Checked over every .py file of the checkout (under Bazel: the python_sources filegroups of each
package), and by running the documented commands by their paths from a folder whose own
`reports` and `tools` packages would shadow the checkout's under `python3 -m` without -P.
"""

import ast
import os
import re
import subprocess
import sys
import tempfile
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.lint.python_package_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])


def repo_root():
    srcdir = os.environ.get("TEST_SRCDIR")
    if srcdir:
        return os.path.join(srcdir, os.environ.get("TEST_WORKSPACE", "pagelock"))
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


ROOT = repo_root()
SKIPPED_DIRS = {".git", "__pycache__", "third_party", "external"}
# The launch block, word for word, with the file's own dotted name: the one way a file that runs
# by its path (python3 reports/report.py, a bundle's run, Bazel's py_test) becomes its module.
LAUNCH = '''if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "{module}"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])
'''
# Spelled in pieces, so that this file does not match itself.
PATH_EDITS = re.compile(r"\bsys\.path\s*(\.\s*(insert|append|extend)\s*\(|\[[^\]]*\]\s*=[^=]|\s*[+]?=[^=])"
                        r"|\bsite\.addsitedir\b")
E402 = "noqa: " + "E402"
PACKAGES = ("reports", "tools")
# The commands the documentation runs by their paths.
COMMANDS = ("reports/report.py", "reports/compare_runs.py", "reports/history.py", "reports/rerender.py",
            "reports/expectations.py", "tools/qualify.py", "tools/runner/runner.py",
            "tools/mutation/mutation.py", "tools/fleet/fleet.py", "tools/labhost.py",
            "tools/lint/settings_check.py", "tools/lint/size_check.py")


def python_files():
    """(relative path, text) of every .py file under ROOT."""
    out = []
    for d, dirs, names in os.walk(ROOT):
        dirs[:] = sorted(x for x in dirs if x not in SKIPPED_DIRS and not x.startswith("bazel-"))
        for n in sorted(names):
            if n.endswith(".py"):
                path = os.path.join(d, n)
                with open(path, encoding="utf-8") as f:
                    out.append((os.path.relpath(path, ROOT), f.read()))
    return out


def module_name(rel):
    return rel[:-3].replace(os.sep, ".")


def package_imports(tree, module_level_only=False):
    """(line, dotted name) of each import of a module of the repository's packages."""
    nodes = tree.body if module_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in PACKAGES:
                    yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] in PACKAGES:
            yield node.lineno, node.module
            for a in node.names:
                yield node.lineno, f"{node.module}.{a.name}"


def has_main(tree):
    return any(isinstance(n, ast.If) and "__main__" in ast.dump(n.test) for n in tree.body)


class PythonPackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.files = python_files()
        cls.trees = {rel: ast.parse(text, rel) for rel, text in cls.files}

    def test_the_tree_is_read(self):
        found = {rel for rel, _ in self.files}
        for rel in COMMANDS + ("tools/lint/python_package_test.py",):
            self.assertIn(rel, found)

    def test_no_file_edits_the_import_path(self):
        bad = [f"{rel}:{n}: {line.strip()}" for rel, text in self.files
               for n, line in enumerate(text.splitlines(), 1) if PATH_EDITS.search(line) or E402 in line]
        self.assertEqual(bad, [], "the import path is the package tree's (docs/python.md): run as a module, "
                                  "or give a child process testsupport.package_env()")

    def test_a_file_that_runs_by_its_path_runs_as_its_module(self):
        problems = []
        for rel, text in self.files:
            tree = self.trees[rel]
            if not has_main(tree) or not any(True for _ in package_imports(tree)):
                continue
            block = LAUNCH.format(module=module_name(rel))
            at = text.find(block)
            if at < 0:
                problems.append(f"{rel}: no launch block for {module_name(rel)} (docs/python.md)")
                continue
            first = min((n for n, _ in package_imports(tree, module_level_only=True)), default=None)
            if first is not None and text[:at].count("\n") + 1 > first:
                problems.append(f"{rel}: the launch block comes after the import on line {first}")
        self.assertEqual(problems, [])

    def test_no_launch_block_names_another_module(self):
        bad = [f"{rel}: {m}" for rel, text in self.files
               for m in re.findall(r'^    _module = "([^"{]*)"$', text, re.M) if m != module_name(rel)]
        self.assertEqual(bad, [])

    def test_no_import_circle(self):
        modules = {module_name(rel) for rel, _ in self.files}
        graph = {module_name(rel): sorted({name for _, name in package_imports(tree)
                                           if name in modules and name != module_name(rel)})
                 for rel, tree in self.trees.items()}
        self.assertEqual(circles(graph), [])

    def test_the_commands_run_by_their_paths_from_any_folder(self):
        with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as cwd:
            for pkg in PACKAGES:  # what `python3 -m` would import first without -P
                os.makedirs(os.path.join(cwd, pkg))
                with open(os.path.join(cwd, pkg, "__init__.py"), "w") as f:
                    f.write("raise ImportError('the current folder shadowed the package')\n")
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            for rel in COMMANDS:
                p = subprocess.run([sys.executable, os.path.join(ROOT, rel), "--help"], cwd=cwd, env=env,
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 0, f"{rel}: {p.stderr[-2000:]}")
                self.assertIn("usage:", p.stdout, rel)


def circles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    unittest.main()
