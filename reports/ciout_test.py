"""JUnit, results.csv and failures.csv carry the final verdict per case."""

import os
import tempfile
import unittest
import xml.etree.ElementTree as ET

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.ciout_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import ciout
from reports import model
from reports import testsupport


def jenkins_count(xml_text):
    """How Jenkins' junit step counts: every <testcase> with a <failure> or <error> child is one
    failed test; <skipped> ones are skipped; the rest pass."""
    failed, skipped, total, _ = jenkins_flaky_count(xml_text)
    return failed, skipped, total


def jenkins_flaky_count(xml_text):
    """(failed, skipped, total, flaky), counting elements as Jenkins (with the Flaky Test
    Handler) and action-junit-report do: a passing <testcase> with <flakyFailure> or
    <flakyError> children is one flaky test."""
    root = ET.fromstring(xml_text)
    failed, skipped, total, flaky = 0, 0, 0, 0
    for tc in root.iter("testcase"):
        total += 1
        kinds = {child.tag for child in tc}
        if kinds & {"failure", "error"}:
            failed += 1
        elif "skipped" in kinds:
            skipped += 1
        elif kinds & {"flakyFailure", "flakyError"}:
            flaky += 1
    return failed, skipped, total, flaky


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

    def test_jenkins_counts_one_failure_and_one_flaky_test(self):
        run, comp, _ = testsupport.morning(extra_passes=3)
        failed, skipped, total, flaky = jenkins_flaky_count(ciout.junit_xml(run, comp))
        self.assertEqual((failed, flaky, skipped, total), (1, 1, 1, 6))

    def test_a_flake_passes_with_a_flaky_failure_and_a_regression_keeps_its_reruns(self):
        run, comp, _ = testsupport.morning(extra_passes=1)
        root = ET.fromstring(ciout.junit_xml(run, comp))
        by = {tc.get("name"): tc for tc in root.iter("testcase")}
        flaky = by["SometimesSlow"].findall("flakyFailure")
        self.assertEqual(len(flaky), 1)
        self.assertEqual(flaky[0].get("type"), "FAIL")
        self.assertIn("flaky boom", flaky[0].find("stackTrace").text)
        reg = by["RegisteringFreshRangeSucceeds"]
        self.assertEqual(len(reg.findall("failure")), 1)
        self.assertEqual(len(reg.findall("rerunFailure")), 2)  # attempts FAIL FAIL FAIL

    def test_an_expected_failure_is_skipped_with_its_bug(self):
        run, comp, _ = testsupport.morning(extra_passes=1)
        root = ET.fromstring(ciout.junit_xml(run, comp))
        known = next(tc for tc in root.iter("testcase") if tc.get("name") == "KnownBad")
        self.assertEqual({ch.tag for ch in known} - {"system-out"}, {"skipped"})
        self.assertIn("https://tracker/123", known.find("skipped").get("message"))
        self.assertIn("known boom", known.find("skipped").get("message"))

    def test_no_status_named_twice_in_a_message(self):
        run = model.Run({}, [testsupport.case("Crashes", "CRASH", "CRASH: the binary was killed by SIGSEGV"),
                             testsupport.case("Hangs", "TIMEOUT", "TIMEOUT: no progress for 300 s")])
        comp = cmp_compare(run)
        root = ET.fromstring(ciout.junit_xml(run, comp))
        for el in root.iter("error"):
            msg = el.get("message")
            status = "CRASH" if "SIGSEGV" in msg else "TIMEOUT"
            self.assertEqual(msg.count(status), 1, msg)
            self.assertTrue(msg.startswith(f"[REGRESSION] {status}: "), msg)

    def test_every_suite_has_time_and_the_machine_as_properties(self):
        run, comp, _ = testsupport.morning(extra_passes=2)
        run.fingerprint[model.PROP_RUN_SEED] = "4321"
        info = {"sku": "nvidia-h200", "label": "injected fault x",
                "started_at": "2026-11-30T14:39:55+00:00", "bundle": {"commit": "abc"}}
        root = ET.fromstring(ciout.junit_xml(run, comp, info=info))
        self.assertTrue(root.get("time"))
        for suite in root.iter("testsuite"):
            self.assertAlmostEqual(float(suite.get("time")), 0.25 * int(suite.get("tests")), places=3)
            self.assertEqual(suite.get("hostname"), "lab1")
            self.assertEqual(suite.get("timestamp"), "2026-11-30T14:39:55+00:00")
            props = {p.get("name"): p.get("value") for p in suite.find("properties")}
            self.assertEqual(props["gpu"], "NVIDIA H200")
            self.assertEqual(props["driver"], "580.159.04")
            self.assertEqual(props["seed"], "4321")
            self.assertEqual(props["label"], "injected fault x")
        run.fingerprint["cuda_runtime_version"] = "13000"
        props = {p.get("name"): p.get("value") for p in ET.fromstring(ciout.junit_xml(run)).iter("property")}
        self.assertEqual(props["cuda_runtime_version"], "13000")
        self.assertEqual(props["seed"], "4321")
        # A results.json written before the seed had one name: its fingerprint's "seed" (and
        # never info.seed, which qualify wrote with it).
        del run.fingerprint[model.PROP_RUN_SEED]
        run.fingerprint["seed"] = "7"
        props = {p.get("name"): p.get("value")
                 for p in ET.fromstring(ciout.junit_xml(run, info={"seed": "9"})).iter("property")}
        self.assertEqual(props["seed"], "7")
        bare = ET.fromstring(ciout.junit_xml(model.Run({}, [testsupport.case("A", "PASS")])))
        props = {p.get("name"): p.get("value") for p in bare.find("testsuite").find("properties")}
        self.assertEqual(props, {"gpu": "unknown", "driver": "unknown", "cuda_runtime_version": "unknown",
                                 "seed": "unknown"})

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
        self.assertEqual((root.get("errors"), root.get("failures")), ("2", "1"))
        self.assertIsNone(root.get("skipped"), "the xUnit schema has no skipped on <testsuites>")
        self.assertEqual(root.find("testsuite").get("skipped"), "1")

    def test_control_characters_in_output_do_not_break_the_xml(self):
        run = model.Run({}, [testsupport.case("Noisy", "FAIL", "x.cc:1\nbell\x07 and nul\x00 <tag> & ]]>")])
        root = ET.fromstring(ciout.junit_xml(run))
        self.assertIn("\\x07", root.find(".//failure").text)

    def test_dropped_and_lost_coverage_fail_as_the_verdict_does(self):
        run, comp, _ = testsupport.morning(extra_passes=2)
        comp.dropped.append("suites/hostregister:hostregister_test/HostRegisterTest.Gone")
        failed, _, _ = jenkins_count(ciout.junit_xml(run, comp))
        self.assertEqual(failed, 2)


def cmp_compare(run):
    from reports import compare as cmp
    return cmp.compare(run, None, None)


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

    def test_failures_csv_lists_the_unexpected_results_only_as_deqp_runner_does(self):
        run, comp, _ = testsupport.morning(extra_passes=2)
        lines = ciout.failures_csv(run, comp).splitlines()
        # the expected failure (KnownBad) and the flake are expected-or-passing: not listed
        self.assertEqual([l.rsplit(".", 1)[1] for l in lines], ["RegisteringFreshRangeSucceeds,Fail"])

    def test_unexpected_pass_and_lost_coverage_are_in_failures_csv(self):
        run, comp, _ = testsupport.morning(extra_passes=2)
        known = next(c for c in run.cases if c.name == "KnownBad")
        comp.status[known.id] = model.Change.UNEXPECTED_PASS
        comp.dropped.append("suites/hostregister:hostregister_test/HostRegisterTest.Gone")
        lines = ciout.failures_csv(run, comp).splitlines()
        self.assertIn(known.id + ",UnexpectedImprovement(Pass)", lines)
        self.assertIn("suites/hostregister:hostregister_test/HostRegisterTest.Gone,Missing", lines)

    def test_a_qualified_run_has_an_empty_failures_csv(self):
        run, comp, _ = testsupport.morning(extra_passes=2)
        reg = next(c for c in run.cases if c.name == "RegisteringFreshRangeSucceeds")
        flake = next(c for c in run.cases if c.name == "SometimesSlow")
        comp.status[reg.id] = model.Change.EXPECTED_FAIL
        comp.status[flake.id] = model.Change.KNOWN_FLAKE
        self.assertEqual(ciout.failures_csv(run, comp), "")

    def test_failures_csv_without_comparison_lists_every_failure_no_header(self):
        run = model.Run({}, [testsupport.case("A,b", "FAIL", "x"), testsupport.case("Ok", "PASS"),
                             testsupport.case("Flaky", "PASS", attempts="FAIL PASS")])
        self.assertEqual(ciout.failures_csv(run), '"suites/hostregister:hostregister_test/HostRegisterTest.A,b",Fail\n')

    def test_a_line_break_in_a_name_keeps_one_line_per_case(self):
        # RFC quoting kept such a row on two lines: deqp-runner's readers are line-based.
        run = model.Run({}, [testsupport.case("line1\nline2", "FAIL", "x"), testsupport.case("a\r\nb", "CRASH", "x"),
                             testsupport.case("u\u2028v", "FAIL", "x"),
                             testsupport.case("Ok", "PASS")])
        for text, n in ((ciout.results_csv(run), 4), (ciout.failures_csv(run), 3)):
            lines = text.split("\n")[:-1]
            self.assertEqual(len(lines), n, text)
            self.assertEqual(len(text.splitlines()), n, text)
            self.assertNotIn("\r", text)
        failures = ciout.failures_csv(run)
        self.assertIn("HostRegisterTest.line1\\nline2,Fail\n", failures)
        self.assertIn("HostRegisterTest.a\\r\\nb,Crash\n", failures)
        self.assertIn("HostRegisterTest.u\\u2028v,Fail\n", failures)

    def test_expectations_update_entry_excuses_the_same_failure_and_no_other(self):
        from reports import expectations as expect
        run, comp, _ = testsupport.morning(extra_passes=1)
        text = ciout.expectations_update(run, comp).replace("bug=TODO", "bug=http://x")
        entry = next(e for e in expect.parse(text, "update.txt") if e.pattern.endswith("RegisteringFreshRangeSucceeds"))
        self.assertTrue(entry.message, "no message= in the proposed fail entry")
        reg = next(c for c in run.cases if c.name == "RegisteringFreshRangeSucceeds")
        self.assertTrue(entry.excuses("FAIL", reg.message))
        self.assertTrue(entry.excuses("FAIL", reg.message.replace("88", "91")))  # another line number
        self.assertFalse(entry.excuses("FAIL", "x.cc:1\nsomething else broke"))

    def test_write_puts_the_three_files_in_the_run_folder(self):
        d = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        run, comp, _ = testsupport.morning(extra_passes=1)
        paths = ciout.write(d, run, comp)
        self.assertEqual(sorted(os.listdir(d)), ["failures.csv", "junit.xml", "results.csv"])
        self.assertEqual(set(paths), {"junit.xml", "results.csv", "failures.csv"})


if __name__ == "__main__":
    unittest.main()
