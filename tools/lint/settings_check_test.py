"""tools/lint/settings_check.py: the checkout passes, docs/settings.md is what the table writes
and lists every setting, and each rule catches what it is for (in a small tree of its own)."""

import contextlib
import io
import os
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.lint.settings_check_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import settings
from tools.lint import source_tree, settings_check
from tools.runner import config as runner_config


def checkout():
    """The checkout itself. Under Bazel each runfile links to its source file, so the real path
    of the table leads back to the checkout, where every source is, listed or not."""
    base = os.environ.get("TEST_SRCDIR")
    table = os.path.join(base, "pagelock", "reports", "settings.tsv") if base else settings.TABLE
    if not os.path.exists(table):
        table = settings.TABLE
    return os.path.dirname(os.path.dirname(os.path.realpath(table)))


class CheckoutTest(unittest.TestCase):
    def test_the_checkout_reads_every_variable_through_the_registry(self):
        self.assertEqual(settings_check.check(checkout()), [])

    def test_the_committed_page_lists_every_setting(self):
        with open(os.path.join(checkout(), settings_check.PAGE), encoding="utf-8") as f:
            page = f.read()
        self.assertEqual(page, settings_check.render_page(settings.declarations()),
                         f"docs/settings.md is stale: run {settings_check.WRITE_COMMAND}")
        for d in settings.declarations():
            self.assertIn(f"| `{d.name}` |", page)

    def test_the_tools_constants_are_the_tables_defaults(self):
        # The runner keeps these as named constants (its RunConfig defaults); the table says the same.
        self.assertEqual(runner_config.KMSG, settings.value("PAGELOCK_KERNEL_LOG", {}))
        self.assertEqual(runner_config.MAX_CASES_PER_BINARY, settings.default_number(runner_config.MAX_CASES_ENV))


class RulesTest(source_tree.SourceTreeCase):
    def problems(self):
        return [p for p in settings_check.check(self.root) if not p.startswith(settings_check.PAGE)]

    def assertFlags(self, needles):
        got = "\n".join(self.problems())
        for needle in needles:
            self.assertIn(needle, got)

    def test_a_clean_tree_passes(self):
        self.write("fixtures/x.cc", 'double s = settings::PositiveNumber("PAGELOCK_TIME_SCALE");\n'
                                    'const char* tmp = std::getenv("TEST_TMPDIR");\n')
        self.write("tools/x.py", 'import os\nenv = dict(os.environ, PAGELOCK_SEED="7")\nos.environ["PAGELOCK_FAULT"] = "x"\n'
                                 'os.environ.pop("PAGELOCK_FAULT", None)\nv = settings.raw("PAGELOCK_KERNEL_LOG")\n')
        self.write("docs/x.md", "`PAGELOCK_BANDWIDTH_FLOOR=0.6`, `PAGELOCK_PCIE_*_FAIL`, `PAGELOCK_LIVE_<random>`\n")
        self.assertEqual(self.problems(), [])

    def test_a_cpp_getenv_of_a_variable_is_refused(self):
        self.write("suites/a/a_test.cc", 'constexpr char kEnv[] = "PAGELOCK_SEED";\n'
                                         'const char* a = std::getenv("PAGELOCK_TIME_SCALE");\n'
                                         'const char* b = getenv(kEnv);\n')
        self.assertFlags(["suites/a/a_test.cc:2: getenv of PAGELOCK_TIME_SCALE",
                          "suites/a/a_test.cc:3: getenv of PAGELOCK_SEED"])

    def test_a_helper_that_reads_its_argument_is_refused_where_it_is_called_with_a_variable(self):
        self.write("fixtures/knob.cc", "double Knob(const char* name, double d) {\n"
                                       "  const char* v = std::getenv(name);\n  return v ? atof(v) : d;\n}\n")
        self.write("suites/a/a_test.cc", 'double n = Knob("PAGELOCK_STRESS_SECONDS", 10);\n')
        self.assertFlags(["fixtures/knob.cc:2: Knob() reads its argument with getenv and is called with "
                          "PAGELOCK_STRESS_SECONDS (suites/a/a_test.cc:1)"])

    def test_a_python_environ_read_of_a_variable_is_refused(self):
        self.write("tools/x.py", 'import os\nNAME = "PAGELOCK_HISTORY"\n'
                                 'a = os.environ.get("PAGELOCK_NIGHT_TZ")\n'
                                 'b = os.environ[NAME]\n'
                                 'c = "PAGELOCK_SEED" in os.environ\n'
                                 'd = os.getenv("PAGELOCK_PYTHON")\n'
                                 'def f(environ):\n    return environ.get(NAME)\n'
                                 'def num(name):\n    return os.environ.get(name, "")\n'
                                 'e = num("PAGELOCK_HISTORY_LOCK_TIMEOUT")\n')
        self.assertFlags(["tools/x.py:3: os.environ read of PAGELOCK_NIGHT_TZ",
                          "tools/x.py:4: os.environ read of PAGELOCK_HISTORY",
                          "tools/x.py:5: os.environ read of PAGELOCK_SEED",
                          "tools/x.py:6: os.environ read of PAGELOCK_PYTHON",
                          "tools/x.py:8: os.environ read of PAGELOCK_HISTORY",
                          "tools/x.py:10: num() reads its argument from os.environ and is called with "
                          "PAGELOCK_HISTORY_LOCK_TIMEOUT"])

    def test_the_exempt_files_may_read_directly(self):
        for rel in ("tools/faults/shim.cc", "tools/runner/testdata/fake.cc"):
            self.write(rel, 'const char* f = getenv("PAGELOCK_FAULT");\n')
        self.write("tools/testdata/fake.py", 'import os\nj = os.environ.get("PAGELOCK_JOURNAL")\n')
        self.assertEqual(self.problems(), [])

    def test_an_undeclared_name_is_refused_anywhere_but_macros_are_not_variables(self):
        self.write("fixtures/guard.h", "#ifndef PAGELOCK_FIXTURES_GUARD_H_\n#define PAGELOCK_FIXTURES_GUARD_H_\n"
                                       "#define PAGELOCK_CHECK(x) x\n#endif\n")
        self.write("suites/a/BUILD.bazel", 'copts = ["-DPAGELOCK_STRESS_TIER=1"]\n')
        self.write("suites/a/a_test.cc", "#ifdef PAGELOCK_STRESS_TIER\n#endif\nPAGELOCK_CHECK(1);\n")
        self.write("docs/x.md", "Set `PAGELOCK_BANDWITH_FLOOR=0.6`; `PAGELOCK_NOPE_*` too.\n")
        self.write("tools/run.sh", 'echo "$PAGELOCK_MYSTERY"\n')
        self.write("tools/x_test.py", 'env = {"PAGELOCK_BANDWITH_FLOOR": "1"}  # settings_check: undeclared on purpose\n')
        self.assertEqual(sorted(self.problems()), [
            "docs/x.md:1: PAGELOCK_BANDWITH_FLOOR is not declared in reports/settings.tsv",
            "docs/x.md:1: PAGELOCK_NOPE_*: no declared variable has this prefix",
            "tools/run.sh:1: PAGELOCK_MYSTERY is not declared in reports/settings.tsv"])

    def test_a_retired_name_belongs_to_pages_of_history_only(self):
        self.write("docs/history.md", "The allowance (`PAGELOCK_ACCOUNTING_NOISE_PAGES`) went.\n")
        self.write("suites/a/a_test.cc", 'settings::Text("PAGELOCK_ACCOUNTING_NOISE_PAGES");\n')
        self.assertEqual(self.problems(), ["suites/a/a_test.cc:1: PAGELOCK_ACCOUNTING_NOISE_PAGES is retired "
                                           "((none: removed in 4336ab3)): only a page of history may name it"])

    def test_an_accessor_that_contradicts_the_table_is_refused(self):
        self.write("suites/a/a_test.cc", 'auto a = settings::PositiveNumber("PAGELOCK_STORM_THREADS");\n'
                                         'auto b = settings::PositiveNumber("PAGELOCK_STRESS_SECONDS", 10);\n'
                                         'auto c = settings::DefaultNumber("PAGELOCK_PCIE_EXPECT");\n'
                                         'auto d = settings::PositiveNumber("PAGELOCK_STORM_THREADS", kThreads);\n')
        self.write("tools/x.py", 'n = settings.default_number("PAGELOCK_PYTHON")\n')
        self.assertEqual(self.problems(), [
            "suites/a/a_test.cc:1: settings::PositiveNumber(\"PAGELOCK_STORM_THREADS\") needs a number as the declared "
            "default (it is '(8 full, 16 stress)'): pass the default, or declare it",
            "suites/a/a_test.cc:2: settings::PositiveNumber(\"PAGELOCK_STRESS_SECONDS\", ...) repeats the declared "
            "default 10: use settings::PositiveNumber(\"PAGELOCK_STRESS_SECONDS\")",
            "suites/a/a_test.cc:3: settings::DefaultNumber(\"PAGELOCK_PCIE_EXPECT\") needs a number as the declared "
            "default (it is \"(the slot's maximum)\"): pass the default, or declare it",
            "tools/x.py:1: settings.default_number(\"PAGELOCK_PYTHON\"): its default is "
            "'(/usr/bin/python3, then python3 on PATH)'"])

    def test_a_shell_default_other_than_the_declared_one_is_refused(self):
        self.write("tools/install.sh", 'p="${PAGELOCK_CUDA11_PREFIX:-/opt/cuda-11.8}"\nq="${PAGELOCK_FLEET_TEST:-0}"\n'
                                       'r="${PAGELOCK_SHIM_DIR:-}"\n')
        self.assertEqual(self.problems(), ["tools/install.sh:1: ${PAGELOCK_CUDA11_PREFIX:-/opt/cuda-11.8}: the "
                                           "declared default is /opt/pagelock/cuda-11.8"])

    def test_a_missing_or_stale_page_is_named_and_write_makes_it(self):
        self.assertIn("docs/settings.md:1: missing: run tools/lint/settings_check.py --write",
                      settings_check.check(self.root))
        self.write("docs/settings.md", "# Settings\n")
        self.assertIn("docs/settings.md:1: stale: run tools/lint/settings_check.py --write",
                      settings_check.check(self.root))
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            self.assertEqual(settings_check.main(["--write", self.root]), 0)
        self.assertEqual(settings_check.check(self.root), [])
        self.assertIn(f"wrote docs/settings.md ({len(settings.declarations())} settings)", out.getvalue())

    def test_exit_codes(self):
        self.write("tools/x.py", 'import os\na = os.environ.get("PAGELOCK_NIGHT_TZ")\n')
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            self.assertEqual(settings_check.main([self.root]), 1)
            self.assertEqual(settings_check.main([os.path.join(self.root, "nowhere")]), 2)
            self.assertEqual(settings_check.main(["--no-such-flag"]), 2)
        self.assertIn("tools/x.py:2: os.environ read of PAGELOCK_NIGHT_TZ", out.getvalue())


if __name__ == "__main__":
    unittest.main()
