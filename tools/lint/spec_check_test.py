"""The spec table and the suites agree (tools/lint/spec_check.py), and the checker catches drift."""

import contextlib
import io
import os
import shutil
import tempfile
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.lint.spec_check_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from tools.lint import spec_check


def workspace_root():
    base = os.environ.get("TEST_SRCDIR")
    if base and os.path.exists(os.path.join(base, "pagelock", "suites", "rules.tsv")):
        return os.path.join(base, "pagelock")
    return spec_check.ROOT


def source_tree():
    """The checkout itself. Under Bazel each runfile links to its source file, so the real path of
    the table leads back to the checkout, where every suite source is, listed or not."""
    table = os.path.realpath(os.path.join(workspace_root(), "suites", "rules.tsv"))
    return os.path.dirname(os.path.dirname(table))


class SpecCheckTest(unittest.TestCase):
    def run_check(self, root):
        out = io.StringIO()
        with contextlib.redirect_stderr(out), contextlib.redirect_stdout(out):
            rc = spec_check.main(["--root", root])
        return rc, out.getvalue()

    def test_repository_is_consistent(self):
        rc, out = self.run_check(workspace_root())
        self.assertEqual(rc, 0, out)

    def copy(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        shutil.copytree(os.path.join(workspace_root(), "suites"), os.path.join(tmp, "suites"))
        return tmp

    def test_spec_sources_lists_every_suite_source(self):
        # A test source missing from //suites:spec_sources is invisible to this test and to
        # copy_lint_test under Bazel: neither would see its rules or its copies.
        tree, have = source_tree(), workspace_root()
        missing = []
        for dirpath, _, files in os.walk(os.path.join(tree, "suites")):
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                if not name.endswith(".cc"):
                    continue
                with open(path, encoding="utf-8") as f:
                    if not spec_check.TEST_RE.search(f.read()):
                        continue
                rel = os.path.relpath(path, tree)
                if not os.path.exists(os.path.join(have, rel)):
                    missing.append(rel)
        self.assertEqual(missing, [], "add each one's '<test>.srcs' to spec_sources in suites/BUILD.bazel")

    def test_test_without_rule_and_rule_without_test_are_reported(self):
        tmp = self.copy()
        with open(os.path.join(tmp, "suites", "extra_test.cc"), "w") as f:
            f.write("TEST(ExtraTest, NamesNothing) {}\nTEST(ExtraTest, Unknown) {\n  PAGELOCK_RULE(\"R999\");\n}\n")
        with open(os.path.join(tmp, "suites", "rules.tsv"), "a") as f:
            f.write("R998\trule\tx\tuntested rule\tall\t\t\n")
        rc, out = self.run_check(tmp)
        self.assertEqual(rc, 1)
        self.assertIn("ExtraTest.NamesNothing: names no rule", out)
        self.assertIn("names rule R999", out)
        self.assertIn("R998: no test checks this rule", out)

    def test_malformed_table_exits_two_with_file_and_line(self):
        tmp = self.copy()
        with open(os.path.join(tmp, "suites", "rules.tsv"), "a") as f:
            f.write("R997\tonly three\tcolumns\n")
        rc, out = self.run_check(tmp)
        self.assertEqual(rc, 2)
        self.assertRegex(out, r"rules.tsv:\d+: 3 columns, expected 7")

    def test_a_duplicate_id_exits_two_naming_both_lines(self):
        tmp = self.copy()
        with open(os.path.join(tmp, "suites", "rules.tsv"), "a") as f:
            f.write("R01\trule\thostalloc\ta second rule under a taken id\tall\t\tuntested: why\n")
        rc, out = self.run_check(tmp)
        self.assertEqual(rc, 2)
        self.assertRegex(out, r"rules.tsv:\d+: R01: duplicate id \(first at line 2\)")

    def test_a_kind_other_than_rule_observation_or_policy_exits_two(self):
        tmp = self.copy()
        with open(os.path.join(tmp, "suites", "rules.tsv"), "a") as f:
            f.write("R996\tobserved\tx\tsome rule\tall\t\tuntested: why\n")
        rc, out = self.run_check(tmp)
        self.assertEqual(rc, 2)
        self.assertRegex(out, r"rules.tsv:\d+: kind 'observed' is not one of rule, observation, policy")

    def test_a_policy_row_is_accepted_and_counted(self):
        tmp = self.copy()
        with open(os.path.join(tmp, "suites", "rules.tsv"), "a") as f:
            f.write("P996\tpolicy\tx\tan operator's floor\tall\t\tuntested: needs a lab\n")
        rc, out = self.run_check(tmp)
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r"\d+ policies")

    def test_a_row_without_test_passes_only_with_a_reason_and_write_keeps_it(self):
        tmp = self.copy()
        path = os.path.join(tmp, "suites", "rules.tsv")
        with open(path, "a") as f:
            f.write("R995\tobservation\tx\tleft open\tall\t\tuntested: needs 512 GiB\n")
            f.write("R994\tobservation\tx\tleft open\tall\t\tuntested: \n")
        rc, out = self.run_check(tmp)
        self.assertEqual(rc, 1)
        self.assertNotIn("R995", out)
        self.assertIn("R994: no test checks this rule", out)
        out = io.StringIO()
        with contextlib.redirect_stderr(out), contextlib.redirect_stdout(out):
            spec_check.main(["--root", tmp, "--write"])
        with open(path) as f:
            self.assertIn("R995\tobservation\tx\tleft open\tall\t\tuntested: needs 512 GiB\n", f.read())

    def test_every_row_of_the_repository_has_a_kind(self):
        rows = spec_check.read_table(os.path.join(workspace_root(), "suites", "rules.tsv"))
        kinds = {r["id"]: r["kind"] for r in rows}
        self.assertEqual(set(kinds.values()), {"rule", "observation", "policy"})
        self.assertEqual(kinds["R32"], "observation")  # recorded only: undocumented
        self.assertEqual(kinds["R66"], "rule")  # a documented set, asserted
        # The operators' floors and ceilings: no CUDA figure behind them.
        for floor in ("P04", "P07", "P08", "P13", "P14"):
            self.assertEqual(kinds[floor], "policy", floor)


if __name__ == "__main__":
    unittest.main()
