"""tools/lint/frees_check.py: the checkout passes, and each rule catches its case (in a small
tree of its own)."""

import os
import tempfile
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.lint.frees_check_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from tools.lint import frees_check


def checkout():
    """The checkout itself: under Bazel the runfile of suites/rules.tsv links back to it."""
    base = os.environ.get("TEST_SRCDIR")
    table = os.path.join(base, "pagelock", "suites", "rules.tsv") if base else ""
    if not os.path.exists(table):
        return frees_check.ROOT
    return os.path.dirname(os.path.dirname(os.path.realpath(table)))


class CheckoutTest(unittest.TestCase):
    def test_the_suites_release_through_owners_or_say_why(self):
        self.assertEqual(frees_check.check(checkout()), [])
        self.assertLessEqual(len(frees_check.unchecked_frees(checkout())), frees_check.LIMIT)


class RulesTest(unittest.TestCase):
    def check(self, source):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "suites", "x"))
            with open(os.path.join(root, "suites", "x", "x_test.cc"), "w", encoding="utf-8") as f:
                f.write(source)
            return frees_check.unchecked_frees(root), frees_check.check(root)

    def test_a_checked_release_is_not_counted(self):
        frees, problems = self.check(
            "void f() {\n  EXPECT_CUDA_OK(cudaFreeHost(p));\n  report.Cu(\"f\", d.cuMemFreeHost(p));\n"
            "  e = cudaFree(q);\n  if (munmap(m, n) != 0) bad();\n  // cudaFree(p); in a comment\n}\n")
        self.assertEqual((frees, problems), ([], []))

    def test_an_unchecked_release_needs_its_reason(self):
        frees, problems = self.check(
            "void f() {\n  if (p) (void)cudaFreeHost(p);\n  d.cuMemFree(b);\n"
            "  // frees_check: the cache outlives every test\n  munmap(m, n);\n}\n")
        self.assertEqual([(line, call) for _, line, call, _ in frees],
                         [(2, "cudaFreeHost"), (3, "cuMemFree"), (5, "munmap")])
        self.assertEqual(len(problems), 2)
        self.assertIn("x_test.cc:2: cudaFreeHost unchecked and unexplained", problems[0])

    def test_more_than_the_limit_fails_even_with_reasons(self):
        body = "".join(f"  cudaFree(p{i});  // frees_check: reason {i}\n" for i in range(frees_check.LIMIT + 1))
        _, problems = self.check("void f() {\n" + body + "}\n")
        self.assertEqual(len(problems), 1)
        self.assertIn(f"{frees_check.LIMIT + 1} unchecked releases", problems[0])


if __name__ == "__main__":
    unittest.main()
