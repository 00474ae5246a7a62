"""Every junit.xml pagelock writes validates against the Jenkins xUnit plugin's JUnit schema
(reports/testdata/junit-10.xsd, a verbatim copy), checked by xmllint (Debian's libxml2-utils,
which tools/install_deps.sh installs): the runs the tests build (regression, flake, expected
failure, crash, timeout, not supported, dropped, machine coverage, hostile characters) and the
real H200 runs (baselines/nvidia-h200/results.json, reports/testdata/runs/) when the checkout has them.

  python3 reports/junit_schema_test.py      # or: bazel test //reports:junit_schema_test

Without xmllint the test fails and says what to install (PAGELOCK_SCHEMA_TEST=0 skips it)."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.junit_schema_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import ciout
from reports import compare as cmp
from reports import model
from reports import rerender
from reports import testsupport

XSD = os.path.join(ROOT, "reports", "testdata", "junit-10.xsd")
REAL_RUNS = [os.path.join(ROOT, "baselines", "nvidia-h200", "results.json")] + sorted(
    os.path.join(d, "results.json") for d, _, files in os.walk(os.path.join(ROOT, "reports", "testdata", "runs"))
    if "results.json" in files)


def xmllint():
    exe = shutil.which("xmllint")
    if not exe:
        if os.environ.get("PAGELOCK_SCHEMA_TEST") == "0":
            raise unittest.SkipTest("xmllint not found and PAGELOCK_SCHEMA_TEST=0")
        raise AssertionError("xmllint not found: install Debian's libxml2-utils (tools/install_deps.sh does)")
    return exe


def validate(paths):
    """(ok, xmllint's output) for these files against junit-10.xsd."""
    p = subprocess.run([xmllint(), "--noout", "--schema", XSD, *paths], capture_output=True, text=True,
                       timeout=120)
    return p.returncode == 0, p.stderr


class SchemaTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def assertValid(self, *paths):
        ok, out = validate(paths)
        self.assertTrue(ok, out[-3000:])

    def test_the_vendored_schema_is_the_xunit_one(self):
        with open(XSD, encoding="utf-8") as f:
            text = f.read()
        for element in ("flakyFailure", "rerunFailure", "properties", "testsuites"):
            self.assertIn(f'name="{element}"', text)

    def test_a_document_the_schema_rejects_is_rejected(self):
        # The old writer's root: skipped= on <testsuites> is not allowed by the xUnit schema.
        bad = self.write("bad.xml", '<?xml version="1.0"?>\n<testsuites tests="0" skipped="0"/>\n')
        ok, out = validate([bad])
        self.assertFalse(ok)
        self.assertIn("skipped", out)

    def test_morning_run_with_flake_expected_failure_and_regression_validates(self):
        run, comp, _ = testsupport.morning(extra_passes=3)
        info = {"seed": "7", "sku": "nvidia-h200", "label": "a <label> & more",
                "started_at": "2026-11-30T14:39:55+00:00", "bundle": {"commit": "abc"}}
        self.assertValid(self.write("morning.xml", ciout.junit_xml(run, comp, info=info)),
                         self.write("plain.xml", ciout.junit_xml(run)))

    def test_crash_timeout_unsupported_dropped_machine_and_control_characters_validate(self):
        run = model.Run(dict(testsupport.FP), [
            testsupport.case("Crashes", "CRASH", "CRASH: killed by SIGSEGV", attempts="CRASH CRASH"),
            testsupport.case("Hangs", "TIMEOUT", "timed out", attempts="TIMEOUT PASS"),
            testsupport.case("Unsupported", "NOT_SUPPORTED"),
            testsupport.case("Noisy", "FAIL", "x.cc:1\nbell\x07 nul\x00 <tag> & ]]>")])
        comp = cmp.compare(run, None, None)
        comp.dropped.append("suites/hostregister:hostregister_test/HostRegisterTest.Gone")
        comp.machine.append(("fingerprint:gpu_count", model.Change.COVERAGE_LOST, "1 GPU, the baseline had 2"))
        self.assertValid(self.write("mixed.xml", ciout.junit_xml(run, comp)))

    def test_the_junit_of_every_real_run_validates(self):
        # As qualify writes it: with the run's comparison and info (regressions, flakes,
        # expected failures, fixed cases and every message of real H200 runs).
        paths = []
        for results in REAL_RUNS:
            if not os.path.isfile(results):
                continue
            run, info, data = model.read_results(results)
            name = os.path.basename(os.path.dirname(results)) + ".xml"
            paths.append(self.write(name, ciout.junit_xml(run, rerender.comparison_from(data), info=info)))
        if not paths:
            self.skipTest("no real run beside this file (a Bazel sandbox without them)")
        self.assertValid(*paths)


if __name__ == "__main__":
    unittest.main()
