"""JUnit, results.csv and failures.csv carry the final verdict per case."""

import os
import tempfile
import unittest
import xml.etree.ElementTree as ET

from reports import ciout
from reports import model
from reports import testsupport


def jenkins_count(xml_text):
    """How Jenkins' junit step counts: every <testcase> with a <failure> or <error> child is one
    failed test; <skipped> ones are skipped; the rest pass."""
    root = ET.fromstring(xml_text)
    failed, skipped, total = 0, 0, 0
    for tc in root.iter("testcase"):
        total += 1
        kinds = {child.tag for child in tc}
        if kinds & {"failure", "error"}:
            failed += 1
        elif "skipped" in kinds:
            skipped += 1
    return failed, skipped, total


class JunitTest(unittest.TestCase):
    def test_one_flake_one_expected_failure_one_regression_is_exactly_one_failure(self):
        run, comp, _ = testsupport.morning(extra_passes=3)
        text = ciout.junit_xml(run, comp)
        failed, skipped, total = jenkins_count(text)
        self.assertEqual((failed, skipped, total), (1, 1, 6))
        root = ET.fromstring(text)
        self.assertEqual(root.get("failures"), "1")
        self.assertEqual(root.get("errors"), "0")
        by = {tc.get("name"): tc for tc in root.iter("testcase")}
        reg = by["RegisteringFreshRangeSucceeds"].find("failure")
        self.assertIn("cudaErrorHostMemoryAlreadyRegistered", reg.get("message"))
        self.assertIn("[REGRESSION]", reg.get("message"))
        flake = by["SometimesSlow"]
        self.assertIsNone(flake.find("failure"))
        self.assertIn("attempts: FAIL PASS", flake.find("system-out").text)
        self.assertIn("https://tracker/123", by["KnownBad"].find("skipped").get("message"))

    def test_crash_and_timeout_are_errors_not_failures(self):
        run = model.Run({}, [testsupport.case("Crashes", "CRASH", "killed by SIGSEGV"),
                             testsupport.case("Hangs", "TIMEOUT", "timed out after 300 s"),
                             testsupport.case("Fails", "FAIL", "x.cc:1\nboom"),
                             testsupport.case("Unsupported", "NOT_SUPPORTED")])
        root = ET.fromstring(ciout.junit_xml(run))
        by = {tc.get("name"): {ch.tag for ch in tc} for tc in root.iter("testcase")}
        self.assertEqual(by["Crashes"], {"error", "system-out"})
        self.assertEqual(by["Hangs"], {"error", "system-out"})
        self.assertEqual(by["Fails"], {"failure", "system-out"})
        self.assertEqual(by["Unsupported"], {"skipped"})
        self.assertEqual((root.get("errors"), root.get("failures"), root.get("skipped")), ("2", "1", "1"))

    def test_control_characters_in_output_do_not_break_the_xml(self):
        run = model.Run({}, [testsupport.case("Noisy", "FAIL", "x.cc:1\nbell\x07 and nul\x00 <tag> & ]]>")])
        root = ET.fromstring(ciout.junit_xml(run))
        self.assertIn("\\x07", root.find(".//failure").text)

    def test_dropped_and_lost_coverage_fail_as_the_verdict_does(self):
        run, comp, _ = testsupport.morning(extra_passes=2)
        comp.dropped.append("suites/hostregister:hostregister_test/HostRegisterTest.Gone")
        failed, _, _ = jenkins_count(ciout.junit_xml(run, comp))
        self.assertEqual(failed, 2)


class CsvTest(unittest.TestCase):
    def test_results_csv_has_every_case_with_deqp_statuses(self):
        run, comp, _ = testsupport.morning(extra_passes=2)
        rows = [l.split(",") for l in ciout.results_csv(run, comp).splitlines()]
        self.assertEqual(len(rows), len(run.cases))
        by = {r[0].rsplit(".", 1)[1]: r[1] for r in rows}
        self.assertEqual(by["RegisteringFreshRangeSucceeds"], "Fail")
        self.assertEqual(by["SometimesSlow"], "Flake")
        self.assertEqual(by["KnownBad"], "ExpectedFail")
        self.assertEqual(by["Passes0"], "Pass")
        self.assertTrue(all(float(r[2]) >= 0 for r in rows))

    def test_failures_csv_lists_failing_cases_expected_ones_included(self):
        run, comp, _ = testsupport.morning(extra_passes=2)
        lines = ciout.failures_csv(run, comp).splitlines()
        self.assertEqual(sorted(l.rsplit(".", 1)[1] for l in lines),
                         ["KnownBad,Fail", "RegisteringFreshRangeSucceeds,Fail"])

    def test_write_puts_the_three_files_in_the_run_folder(self):
        d = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        run, comp, _ = testsupport.morning(extra_passes=1)
        paths = ciout.write(d, run, comp)
        self.assertEqual(sorted(os.listdir(d)), ["failures.csv", "junit.xml", "results.csv"])
        self.assertEqual(set(paths), {"junit.xml", "results.csv", "failures.csv"})


if __name__ == "__main__":
    unittest.main()
