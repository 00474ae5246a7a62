"""tools/lint/size_check.py: the checkout passes, and each rule catches what it is for (in a
small tree of its own), the C++ scanner past comments, literals, namespaces and initializers."""

import contextlib
import io
import os
import shutil
import subprocess
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.lint.size_check_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from tools.lint import source_tree, size_check


def checkout():
    """The checkout itself. Under Bazel each runfile links to its source file, so the real path
    of the lint's own source leads back to the checkout, where every source is, listed or not."""
    base = os.environ.get("TEST_SRCDIR")
    lint = os.path.join(base, "pagelock", "tools", "lint", "size_check.py") if base else size_check.__file__
    if not os.path.exists(lint):
        lint = size_check.__file__
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(lint))))


def lines(n, first="x = 0\n", each="x += 1\n"):
    return first + each * (n - 1)


def py_function(name, n):
    """A Python function of exactly n lines."""
    return f"def {name}():\n" + "    x = 1\n" * (n - 2) + "    return x\n"


def cpp_function(signature, n, body="  x++;\n"):
    """A C++ function of exactly n lines: signature line, n - 2 body lines, closing brace."""
    return signature + " {\n" + body * (n - 2) + "}\n"


class CheckoutTest(unittest.TestCase):
    def test_the_checkout_has_no_file_or_function_over_its_limit(self):
        self.assertEqual(size_check.check(checkout(), size_check.KNOWN), [])

    def test_the_checkout_is_read(self):
        files = size_check.tracked_files(checkout())
        for rel in ("tools/lint/settings_check.py", "fixtures/page_state.cc", "suites/atomics/atomic_matrix_check.cc"):
            self.assertIn(rel, files)
        self.assertFalse([f for f in files if f.startswith(("examples/", "third_party/")) or "/testdata/" in f])


class RulesTest(source_tree.SourceTreeCase):
    def problems(self):
        return size_check.check(self.root)

    def test_a_file_over_the_limit_fails_tests_included(self):
        self.write("tools/ok.py", lines(1200))
        self.write("tools/big.py", lines(1201))
        self.write("suites/a/big_test.cc", lines(1300, "int x = 0;\n", "// more\n"))
        self.write("fixtures/big.h", lines(1250, "#pragma once\n", "\n"))
        self.assertEqual(self.problems(), [
            "fixtures/big.h:1: file is 1250 lines (limit 1200)",
            "suites/a/big_test.cc:1: file is 1300 lines (limit 1200)",
            "tools/big.py:1: file is 1201 lines (limit 1200)"])

    def test_other_kinds_and_the_exempt_folders_are_not_read(self):
        for rel in ("examples/big.py", "third_party/gtest/big.h", "tools/testdata/big.py",
                    "tools/runner/testdata/big.cc", "docs/big.md", "tools/big.sh"):
            self.write(rel, lines(1500))
        self.assertEqual(self.problems(), [])

    def test_a_python_function_over_the_limit_fails_outside_tests(self):
        self.write("tools/x.py", "import os\n\n" + py_function("short", 120) + "\n\nclass C:\n"
                   + "".join("    " + line + "\n" for line in py_function("long", 121).splitlines()))
        self.write("tools/x_test.py", py_function("test_long", 300))
        self.assertEqual(self.problems(), ["tools/x.py:126: function C.long is 121 lines (limit 120)"])

    def test_a_python_function_that_does_not_parse_is_named(self):
        self.write("tools/x.py", "def f(:\n")
        self.assertEqual(self.problems(), ["tools/x.py:1: does not parse: invalid syntax"])

    def test_a_cpp_function_over_the_limit_fails_outside_tests(self):
        self.write("fixtures/x.cc", "#include <x>\n" + cpp_function("int Short()", 120)
                   + cpp_function("int Long()", 121))
        self.write("suites/a/a_test.cc", cpp_function("TEST(A, B)", 200))
        self.write("kernels/k.cu", cpp_function("__global__ void K(int* p)", 130))
        self.write("fixtures/x.h", "namespace a {\nclass X {\n public:\n" + cpp_function("  void M() const", 125)
                   + "};\n}  // namespace a\n")
        self.assertEqual(self.problems(), [
            "fixtures/x.cc:122: function Long is 121 lines (limit 120)",
            "fixtures/x.h:4: function M is 125 lines (limit 120)",
            "kernels/k.cu:1: function K is 130 lines (limit 120)"])

    def test_the_scanner_counts_whole_bodies_and_skips_comments_literals_and_namespaces(self):
        text = ("#define OPEN {\n"
                "#define CLOSE(x) \\\n  }\n"
                "namespace pagelock {\nnamespace {\n"
                "const int kTable[] = {1, 2,\n  3};\n"
                "struct S {\n  int x_{0};\n  S(int a) : x_{a}, y_(a) {\n    x_++;\n  }\n  int y_;\n};\n"
                "template <template <typename> class F, typename... A>\n"
                "auto Dispatch(A&&... a) -> int {\n  switch (0) {\n    default: return 1;\n  }\n}\n"
                "}  // namespace\n"
                "void Tricky() {\n"
                "  const char* a = \"}{{\";  // }\n"
                "  /* { */ char b = '{';\n"
                "  auto raw = R\"x(}}})x\";\n"
                "  int n = 1'000'000;\n"
                "  auto f = [&](int v) { return v + n; };\n"
                "  if (n) {\n    n--;\n  }\n"
                "}\n"
                "inline const bool kOnce = [] {\n  return true;\n}();\n"
                "}  // namespace pagelock\n")
        self.assertEqual(size_check.cpp_functions(text), [
            ("S", 10, 3), ("Dispatch", 15, 6), ("Tricky", 22, 10), ("kOnce (lambda)", 32, 3)])

    def test_a_macro_test_is_named_with_its_arguments(self):
        self.assertEqual(size_check.cpp_functions("TEST_F(Suite, Case) {\n  int x;\n}\n"),
                         [("TEST_F(Suite, Case)", 1, 3)])

    @unittest.skipUnless(shutil.which("git"), "no git on this machine")
    def test_in_a_git_checkout_only_tracked_files_are_read(self):
        self.write("tools/tracked.py", lines(1201))
        self.write("tools/untracked.py", lines(1201))
        env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=self.root)
        for cmd in (["init", "-q"], ["add", "tools/tracked.py"]):
            subprocess.run(["git", "-C", self.root, *cmd], check=True, env=env, capture_output=True)
        self.assertEqual(self.problems(), ["tools/tracked.py:1: file is 1201 lines (limit 1200)"])

    def test_known_offenders_are_left_out(self):
        self.write("tools/big.py", lines(1201))
        self.write("fixtures/x.cc", cpp_function("int Long()", 121))
        self.assertEqual(size_check.check(self.root, {("tools/big.py", None), ("fixtures/x.cc", "Long")}), [])

    def test_exit_codes_and_output(self):
        self.write("tools/x.py", py_function("long", 130))
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            self.assertEqual(size_check.main([self.root]), 1)
            self.assertEqual(size_check.main([os.path.join(self.root, "nowhere")]), 2)
            self.assertEqual(size_check.main(["--no-such-flag"]), 2)
        self.assertIn("tools/x.py:1: function long is 130 lines (limit 120)", out.getvalue())
        self.write("tools/x.py", py_function("short", 12))
        self.assertEqual(size_check.main([self.root]), 0)


if __name__ == "__main__":
    unittest.main()
