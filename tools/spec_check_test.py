"""The spec table and the suites agree (tools/spec_check.py), and the checker catches drift."""

import contextlib
import io
import os
import shutil
import tempfile
import unittest

from tools import spec_check


def workspace_root():
    base = os.environ.get("TEST_SRCDIR")
    if base and os.path.exists(os.path.join(base, "pagelock", "suites", "rules.tsv")):
        return os.path.join(base, "pagelock")
    return spec_check.ROOT


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

    def test_a_kind_other_than_rule_or_observation_exits_two(self):
        tmp = self.copy()
        with open(os.path.join(tmp, "suites", "rules.tsv"), "a") as f:
            f.write("R996\tobserved\tx\tsome rule\tall\t\tuntested: why\n")
        rc, out = self.run_check(tmp)
        self.assertEqual(rc, 2)
        self.assertRegex(out, r"rules.tsv:\d+: kind 'observed' is not one of rule, observation")

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
        self.assertEqual(set(kinds.values()), {"rule", "observation"})
        self.assertEqual(kinds["R32"], "observation")  # recorded only: undocumented
        self.assertEqual(kinds["R66"], "rule")  # a documented set, asserted


if __name__ == "__main__":
    unittest.main()
