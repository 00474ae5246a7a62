"""tools/lint/copy_lint.py: the suites pass, and the lint catches an unchecked copy."""

import contextlib
import io
import os
import sys
import tempfile
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.lint.copy_lint_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from tools.lint import copy_lint


def suites_root():
    base = os.environ.get("TEST_SRCDIR")
    if base and os.path.isdir(os.path.join(base, "pagelock", "suites")):
        return os.path.join(base, "pagelock", "suites")
    return os.path.join(copy_lint.ROOT, "suites")


class CopyLintTest(unittest.TestCase):
    def lint(self, *args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            rc = copy_lint.main(list(args))
        return rc, out.getvalue()

    def source(self, text):
        d = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        path = os.path.join(d, "x_test.cc")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_every_copy_in_the_suites_is_checked(self):
        rc, out = self.lint(suites_root())
        self.assertEqual(rc, 0, out)

    def test_unchecked_copy_is_reported_with_its_line(self):
        path = self.source("void f() {\n  ASSERT_CUDA_OK(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));\n"
                           "  EXPECT_CUDA_OK(cudaFree(dst));\n}\n")
        rc, out = self.lint(path)
        self.assertEqual(rc, 1)
        self.assertIn("x_test.cc:2: cudaMemcpy not followed", out)

    def test_check_helper_or_assert_on_the_destination_counts(self):
        helper = self.source("cudaMemsetAsync(p, 1, n, s);\ncudaStreamSynchronize(s);\n"
                             "EXPECT_EQ(HostCountByte(p, n, 1), 0u);\n")
        named = self.source("ASSERT_CUDA_OK(cudaMemcpy(&device_bad, bad, 8, cudaMemcpyDefault));\n"
                            "EXPECT_EQ(device_bad, 0u);\n")
        self.assertEqual(self.lint(helper)[0], 0)
        self.assertEqual(self.lint(named)[0], 0)

    def test_assert_on_another_variable_does_not_count(self):
        path = self.source("ASSERT_CUDA_OK(cudaMemcpy(dst, src, n, cudaMemcpyDefault));\nEXPECT_EQ(other, 0u);\n")
        self.assertEqual(self.lint(path)[0], 1)

    def test_check_beyond_the_window_does_not_count(self):
        path = self.source("cudaMemcpy(dst, src, n, k);\n" + "x();\n" * 5 + "HostCountPattern(dst, n, 0, 1);\n")
        self.assertEqual(self.lint("--lines", "3", path)[0], 1)
        self.assertEqual(self.lint("--lines", "6", path)[0], 0)

    def test_escape_needs_a_reason(self):
        ok = self.source("cudaMemset(bad, 0, 8);  // copy-check: the counter is read by the kernel below\n")
        bare = self.source("cudaMemset(bad, 0, 8);  // copy-check:\n")
        self.assertEqual(self.lint(ok)[0], 0)
        rc, out = self.lint(bare)
        self.assertEqual(rc, 1)
        self.assertIn("without a reason", out)

    def test_enum_values_and_comments_are_not_calls(self):
        path = self.source("cudaMemcpyKind k = cudaMemcpyHostToDevice;\n// cudaMemcpy(a, b, n, k) in a comment\n")
        self.assertEqual(self.lint(path)[0], 0)

    def test_missing_path_is_a_usage_error(self):
        rc, out = self.lint("/no/such/folder")
        self.assertEqual(rc, 2)
        self.assertIn("no such file", out)


if __name__ == "__main__":
    unittest.main()
