"""reports/settings.py: the table parses, each reader keeps its reading, an undeclared name is
refused, and what a run records (info.settings) has the shape reports/validate.py checks."""

import os
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.settings_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import settings
from reports import validate

HEADER = "# comment\n" + "\t".join(settings.COLUMNS) + "\n"
ROW = "PAGELOCK_A\tknob\tint\t1\tcount\tall\tx\tDoes a. More.\n"


class TableTest(unittest.TestCase):
    def test_the_committed_table_parses_and_declares_the_tools_variables(self):
        rows = settings.declarations()
        self.assertGreater(len(rows), 50)
        for name in ("PAGELOCK_TIME_SCALE", "PAGELOCK_HISTORY", "PAGELOCK_KERNEL_LOG", "PAGELOCK_SEED"):
            self.assertIsNotNone(settings.find(name), name)
        self.assertEqual({d.kind for d in rows}, set(settings.KINDS))

    def test_a_family_covers_its_prefix_and_more_only(self):
        self.assertEqual(settings.find("PAGELOCK_LIVE_3f2a").name, "PAGELOCK_LIVE_*")
        self.assertIsNone(settings.find("PAGELOCK_LIVE_"))

    def test_a_malformed_table_is_refused_with_its_line(self):
        self.assertEqual([d.name for d in settings.parse(HEADER + ROW)], ["PAGELOCK_A"])
        self.assertEqual(settings.parse(HEADER + ROW)[0].summary, "Does a.")
        for text, needle in [
                (ROW, ":1: expected the header"),
                (HEADER + "PAGELOCK_A\tknob\tint\t1\n", ":3: 4 fields, expected 8"),
                (HEADER + ROW.replace("PAGELOCK_A", "pagelock_a"), "is not a PAGELOCK_ name"),
                (HEADER + ROW.replace("PAGELOCK_A", "PAGELOCK_A*"), "a family ends in _*"),
                (HEADER + ROW.replace("knob", "dial"), "kind 'dial'"),
                (HEADER + ROW.replace("\tint\t", "\tnumber\t"), "type 'number'"),
                (HEADER + ROW.replace("\t1\t", "\t\t"), "an empty default (write none)"),
                (HEADER + ROW.replace("\t1\t", "\tmany\t"), "the default 'many' is not a number"),
                (HEADER + ROW.replace("\t1\t", "\t1.5\t"), "is not a whole number"),
                (HEADER + ROW.replace("\t1\t", "\t(words\t"), "wrapped in parentheses"),
                (HEADER + ROW.replace("\tcount\t", "\tparsecs\t"), "unit 'parsecs'"),
                (HEADER + ROW.replace("\tall\t", "\tnightly\t"), "tier 'nightly'"),
                (HEADER + ROW + ROW, ":4: PAGELOCK_A is declared twice (first on line 3)"),
                ("# only a comment\n", "no header line")]:
            with self.assertRaises(settings.SettingsError, msg=text) as e:
                settings.parse(text, "t.tsv")
            self.assertIn(needle, str(e.exception))


class ReadTest(unittest.TestCase):
    def test_raw_is_the_text_as_set_or_none(self):
        self.assertEqual(settings.raw("PAGELOCK_KERNEL_LOG", {"PAGELOCK_KERNEL_LOG": ""}), "")
        self.assertIsNone(settings.raw("PAGELOCK_KERNEL_LOG", {}))

    def test_value_falls_back_to_a_value_default_only(self):
        self.assertEqual(settings.value("PAGELOCK_NIGHT_TZ", {"PAGELOCK_NIGHT_TZ": "Europe/Paris"}), "Europe/Paris")
        self.assertEqual(settings.value("PAGELOCK_NIGHT_TZ", {"PAGELOCK_NIGHT_TZ": ""}), "UTC")
        self.assertEqual(settings.value("PAGELOCK_HISTORY", {}), "runs/history.sqlite")
        self.assertIsNone(settings.value("PAGELOCK_PYTHON", {}))  # a default in words
        self.assertIsNone(settings.value("PAGELOCK_IOMEMORY_RESOURCE", {}))  # none

    def test_default_number_is_typed(self):
        self.assertEqual(settings.default_number("PAGELOCK_HISTORY_LOCK_TIMEOUT"), 30.0)
        self.assertIsInstance(settings.default_number("PAGELOCK_MAX_CASES_PER_BINARY"), int)
        with self.assertRaises(settings.UndeclaredSetting):
            settings.default_number("PAGELOCK_STORM_THREADS")  # words

    def test_an_undeclared_or_retired_name_is_refused(self):
        with self.assertRaises(settings.UndeclaredSetting) as e:
            settings.raw("PAGELOCK_NOT_A_SETTING", {})
        self.assertEqual(str(e.exception), "PAGELOCK_NOT_A_SETTING is read but not declared in reports/settings.tsv")
        with self.assertRaises(settings.UndeclaredSetting) as e:
            settings.value("PAGELOCK_ACCOUNTING_NOISE_PAGES", {})
        self.assertIn("declared retired", str(e.exception))

    def test_every_default_of_a_number_reads_as_one(self):
        for d in settings.declarations():
            if d.kind != "retired" and d.has_value_default and d.type in ("int", "float"):
                settings.default_number(d.name)


class InEffectTest(unittest.TestCase):
    ENV = {"PAGELOCK_BANDWIDTH_FLOOR": "0.6", "PAGELOCK_FAULT": "hostalloc_out_of_memory",
           "PAGELOCK_HISTORY": "postgresql://lab:secret@db/pagelock", "PAGELOCK_BANDWITH_FLOOR": "0.3",
           "PAGELOCK_TIME_SCALE": "9", "PATH": "/usr/bin"}

    def test_knobs_set_plumbing_and_undeclared_names_are_recorded(self):
        got = settings.in_effect(self.ENV, {"PAGELOCK_TIME_SCALE": ("2.0", "--time-scale")})
        self.assertEqual(got["PAGELOCK_BANDWIDTH_FLOOR"], {"value": "0.6", "source": "environment", "default": "0.4"})
        self.assertEqual(got["PAGELOCK_PAGEABLE_BANDWIDTH_FLOOR"], {"value": "0.02", "source": "default",
                                                                    "default": "0.02"})
        self.assertEqual(got["PAGELOCK_PCIE_EXPECT"]["value"], None)  # a default in words
        self.assertEqual(got["PAGELOCK_TIME_SCALE"], {"value": "2.0", "source": "--time-scale", "default": "1"})
        self.assertEqual(got["PAGELOCK_FAULT"]["source"], "environment")  # plumbing, only when set
        self.assertNotIn("PAGELOCK_JOURNAL", got)
        self.assertNotIn("PAGELOCK_SLOW_TESTS", got)  # the harness's own tests
        self.assertEqual(got["PAGELOCK_HISTORY"]["value"], "postgresql://lab:***@db/pagelock")
        self.assertEqual(got["PAGELOCK_BANDWITH_FLOOR"]["default"], None)
        self.assertIn("not declared", got["PAGELOCK_BANDWITH_FLOOR"]["source"])
        self.assertNotIn("PATH", got)
        self.assertIsNone(validate.results_problem({"info": {"settings": got}, "run": {"cases": []}}))

    def test_the_printed_table_names_every_setting_and_what_is_not_one(self):
        lines = settings.table_lines(self.ENV)
        text = "\n".join(lines)
        for d in settings.declarations():
            if d.kind != "retired":
                self.assertIn(d.name, text)
        self.assertNotIn("PAGELOCK_ACCOUNTING_NOISE_PAGES", text)
        self.assertIn("0.6 (set)", text)
        self.assertNotIn("secret", text)
        self.assertEqual(lines[-1], "set but declared nowhere (nothing reads them): PAGELOCK_BANDWITH_FLOOR")


if __name__ == "__main__":
    unittest.main()
