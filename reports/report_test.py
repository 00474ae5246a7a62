"""Reading testlogs trees (including broken ones) and rendering the HTML report: escaping, the
golden page, the mutation section, and what happens without jinja2.

The page is rendered by Jinja2, which only Debian's /usr/bin/python3 may see on the build machine:
under an interpreter without it this file re-executes itself under one that has it
(reports/interpreter.py, as the commands do), so the templates are rendered in this process.

  /usr/bin/python3 reports/report_test.py                            # or: bazel test //reports:report_test
  UPDATE_GOLDEN=1 /usr/bin/python3 reports/report_test.py GoldenTest  # rewrite reports/testdata/golden/
"""

import contextlib
import difflib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import zipfile
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.report_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

if __name__ == "__main__":
    from reports import interpreter
    interpreter.reexec_if_missing("jinja2", __file__, ROOT)

from reports import compare_runs
from reports import htmlreport
from reports import pages
from reports import report
from reports import model
from reports import testlogs
from reports import testsupport

TESTDATA = os.path.join(ROOT, "reports", "testdata")
MUTATION_FIXTURE = os.path.join(TESTDATA, "mutation", "mutation.json")
from reports import report
from reports import model

GTEST_XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" name="AllTests" pagelock.run_seed="42" gpu0_name="NVIDIA H200" device_status="usable">
  <testsuite name="S" tests="3">
    <testcase name="Ok" status="run" result="completed" time="0.5" classname="S" rules="R01"/>
    <testcase name="Bad" status="run" result="completed" time="0.1" classname="S">
      <failure message="x.cc:1&#x0A;boom" type=""><![CDATA[x.cc:1
boom]]></failure>
    </testcase>
    <testcase name="Ns" status="run" result="skipped" time="0" classname="S">
      <skipped message="f.cc:8&#x0A;NotSupported: cudaDevAttrX=0 (need 1)"><![CDATA[f.cc:8
NotSupported: cudaDevAttrX=0 (need 1)]]></skipped>
    </testcase>
  </testsuite>
</testsuites>
"""

BAZEL_CRASH_XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="suites/a/a_test" tests="1" failures="0" errors="1">
<testcase name="suites/a/a_test" status="run" duration="1" time="1"><error message="exited with error code 139"></error></testcase>
</testsuite></testsuites>
"""

JOURNAL = [
    {"event": "start", "case": "S.First"},
    {"event": "end", "case": "S.First", "status": "PASS", "seconds": 0.2, "message": "", "properties": {"rules": "R04"}},
    {"event": "start", "case": "S.Second"},
]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class LoadTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def test_gtest_xml_statuses_reasons_and_fingerprint(self):
        write(os.path.join(self.root, "suites/a/a_test/test.xml"), GTEST_XML)
        run = testlogs.load_testlogs(self.root)
        by = {c.name: c for c in run.cases}
        self.assertEqual(by["Ok"].status, "PASS")
        self.assertEqual(by["Ok"].properties["rules"], "R01")
        self.assertEqual(by["Bad"].status, "FAIL")
        self.assertIn("boom", by["Bad"].message)
        self.assertEqual(by["Ns"].status, "NOT_SUPPORTED")
        self.assertEqual(by["Ns"].reason, "cudaDevAttrX=0 (need 1)")
        self.assertEqual(by["Ok"].id, "suites/a:a_test/S.Ok")
        self.assertEqual(by["Bad"].run_seed, 42)  # the binary's seed replays its cases
        self.assertEqual(by["Bad"].replay_command().splitlines(), [
            "bazel test //suites/a:a_test --test_filter='S.Bad' --test_env=PAGELOCK_SEED=42",
            "PAGELOCK_SEED=42 \"${BUNDLE:?set BUNDLE to the bundle folder}\"/bin/suites/a/a_test "
            "--gtest_filter='S.Bad'"])
        self.assertEqual(run.fingerprint["gpu0_name"], "NVIDIA H200")
        self.assertEqual(run.fingerprint["pagelock.run_seed"], "42")

    def test_a_results_json_from_before_the_seed_had_one_name_still_shows_its_seed(self):
        # Its fingerprint holds qualify's copy as "seed" (and info.seed, never read).
        from reports import ciout, history
        run, comp, base = testsupport.morning()
        del run.fingerprint[model.PROP_RUN_SEED]
        run.fingerprint["seed"] = "5"
        path = os.path.join(self.root, "results.json")
        model.write_results(path, run, {"seed": "5", "run_key": "old"}, comp)
        old, info, _ = model.read_results(path)
        self.assertEqual(model.run_seed_of(old.fingerprint), "5")
        page = htmlreport.render_qualification(old, info, comp, base, {})
        self.assertIn("seed <span class='mono'>5</span>", page)
        self.assertIn('<property name="seed" value="5"', ciout.junit_xml(old, comp, info=info))
        db = history.connect(os.path.join(self.root, "h.sqlite"))
        history.store(db, "old", "2026-12-01T00:00:00+00:00", old, comp, "nvidia-h200", "c", 3, "REGRESSIONS")
        self.assertEqual(db.execute("SELECT seed FROM runs").fetchall(), [("5",)])

    def test_bazel_written_xml_and_zipped_journal_blame_the_running_case(self):
        tdir = os.path.join(self.root, "suites/a/a_test")
        write(os.path.join(tdir, "test.xml"), BAZEL_CRASH_XML)
        write(os.path.join(tdir, "test.log"), "Segmentation fault\n")
        os.makedirs(os.path.join(tdir, "test.outputs"))
        with zipfile.ZipFile(os.path.join(tdir, "test.outputs", "outputs.zip"), "w") as z:
            z.writestr("pagelock_journal.jsonl", "\n".join(json.dumps(e) for e in JOURNAL) + "\n")
        run = testlogs.load_testlogs(self.root)
        by = {c.gtest_name: c for c in run.cases}
        self.assertEqual(by["S.First"].status, "PASS")
        self.assertEqual(by["S.Second"].status, "CRASH")
        self.assertIn("exited with error code 139", by["S.Second"].message)

    def test_failing_non_gtest_target_is_a_failure_not_a_crash(self):
        write(os.path.join(self.root, "tools/t/test.xml"), BAZEL_CRASH_XML.replace("139", "1"))
        self.assertEqual([c.status for c in testlogs.load_testlogs(self.root).cases], ["FAIL"])

    def test_truncated_xml_without_journal_is_a_crash_of_the_binary(self):
        tdir = os.path.join(self.root, "suites/b/b_test")
        write(os.path.join(tdir, "test.xml"), GTEST_XML[: len(GTEST_XML) // 2])
        run = testlogs.load_testlogs(self.root)
        self.assertEqual(len(run.cases), 1)
        self.assertEqual(run.cases[0].status, "CRASH")
        self.assertIn("truncated or malformed", run.cases[0].message)
        self.assertTrue(run.problems)

    def test_bazel_timeout_log_makes_a_timeout(self):
        tdir = os.path.join(self.root, "suites/c/c_test")
        write(os.path.join(tdir, "test.xml"), BAZEL_CRASH_XML.replace("exited with error code 139", "timed out"))
        write(os.path.join(tdir, "test.log"), "-- Test timed out at 2026-11-30 --\n")
        write(os.path.join(tdir, "test.outputs", "pagelock_journal.jsonl"),
              "\n".join(json.dumps(e) for e in JOURNAL) + "\n")
        by = {c.gtest_name: c for c in testlogs.load_testlogs(self.root).cases}
        self.assertEqual(by["S.Second"].status, "TIMEOUT")

    def test_log_without_xml_is_not_lost(self):
        write(os.path.join(self.root, "suites/d/d_test/test.log"), "killed\n")
        run = testlogs.load_testlogs(self.root)
        self.assertEqual([c.status for c in run.cases], ["CRASH"])

    def test_very_large_xml_loads_quickly(self):
        n = 20000
        cases = "".join(f'<testcase name="C{i}" status="run" result="completed" time="0" classname="Big"/>'
                        for i in range(n))
        write(os.path.join(self.root, "suites/e/e_test/test.xml"),
              f'<testsuites name="AllTests"><testsuite name="Big">{cases}</testsuite></testsuites>')
        start = time.monotonic()
        run = testlogs.load_testlogs(self.root)
        self.assertEqual(len(run.cases), n)
        self.assertLess(time.monotonic() - start, 20)

    def test_build_event_json_with_flaky_attempts(self):
        d1 = os.path.join(self.root, "logs/suites/a/a_test/test_attempts")
        d2 = os.path.join(self.root, "logs/suites/a/a_test")
        write(os.path.join(d1, "attempt_1.xml"), GTEST_XML)
        write(os.path.join(d2, "test.xml"), GTEST_XML.replace('<failure message="x.cc:1&#x0A;boom" type=""><![CDATA[x.cc:1\nboom]]></failure>', ""))
        bep = os.path.join(self.root, "bep.json")
        events = [{"id": {"started": {}}},
                  {"id": {"testResult": {"label": "//suites/a:a_test", "attempt": 1}},
                   "testResult": {"status": "FAILED", "testActionOutput": [
                       {"name": "test.xml", "uri": "file://" + os.path.join(d1, "attempt_1.xml")}]}},
                  {"id": {"testResult": {"label": "//suites/a:a_test", "attempt": 2}},
                   "testResult": {"status": "PASSED", "testActionOutput": [
                       {"name": "test.xml", "uri": "file://" + os.path.join(d2, "test.xml")}]}},
                  {"id": {"testResult": {"label": "//suites/b:b_test", "attempt": 1}},
                   "testResult": {"status": "TIMEOUT"}}]
        write(bep, "\n".join(json.dumps(e) for e in events) + "\n{truncated")
        run = testlogs.load_bep(bep)
        by = {c.id: c for c in run.cases}
        self.assertEqual(by["suites/a:a_test/S.Bad"].status, "PASS")
        self.assertEqual(by["suites/a:a_test/S.Bad"].attempts, [model.Status.FAIL, model.Status.PASS])
        self.assertEqual(by["suites/b:b_test/(binary).b_test"].status, "TIMEOUT")
        self.assertTrue(any("not JSON" in p for p in run.problems))

    def test_counts_end_with_the_plain_closing_line(self):
        text = model.format_counts({"PASS": 3, "CRASH": 1, "NOT_SUPPORTED": 2, "FAIL": 1})
        self.assertEqual(text.splitlines()[-1], "3 passed, 2 failed, 2 skipped")


class HtmlTest(unittest.TestCase):
    def test_hostile_names_and_messages_are_escaped(self):
        evil = "<script>alert('x')</script>"
        run = model.Run({"gpu0_name": evil}, [
            model.Case.from_raw("//s/a:a_test", "S" + evil, "N" + evil, "FAIL", 0.1, "msg " + evil, "",
                                {"rules": evil, "child_log": evil, model.PROP_OBSERVED_PREFIX + evil: evil,
                                 model.PROP_METRIC_PREFIX + evil: "1 " + evil, evil: evil}),
            model.Case.from_raw("//s/a:a_test", "S", "ns", "NOT_SUPPORTED", 0, "", "reason " + evil)])
        page = htmlreport.render(run, title="t" + evil)
        self.assertNotIn(evil, page)
        self.assertIn("&lt;script&gt;", page)
        self.assertEqual(page.count("<script>"), 1)  # only the report's own
        self.assertNotIn("http://", page)
        self.assertNotIn("https://", page)

    def test_non_finite_metrics_are_shown_as_what_they_are(self):
        c = model.Case.from_raw("//suites/b:b_test", "S", "M", "FAIL", 0.1, "metric not finite", "",
                                {model.PROP_METRIC_PREFIX + "h2d_pinned_GBps": "nan GB/s",
                                 model.PROP_METRIC_PREFIX + "d2h_pinned_GBps": "-inf GB/s",
                                 model.PROP_METRIC_PREFIX + "ok_GBps": "12.5 GB/s"})
        page = htmlreport.render(model.Run({}, [c]), extra_sections=[htmlreport.metrics_section(model.Run({}, [c]), {})])
        self.assertIn("nan GB/s", page)
        self.assertIn("-inf", page)
        self.assertIn("12.500", page)

    def test_matrix_counts_are_plural_only_when_not_one(self):
        one = [testsupport.case("Every/Pinned", "FAIL", "x.cc:1\nboom"), testsupport.case("Every/Pageable", "PASS")]
        page = pages.render("matrix.html.j2", **htmlreport.matrix_context(one))
        self.assertIn("hostregister: 1 test &times; 2 parameters, 1 failing case<", page)
        two = one + [testsupport.case("Other/Pinned", "FAIL", "x.cc:1\nboom")]
        page = pages.render("matrix.html.j2", **htmlreport.matrix_context(two))
        self.assertIn("hostregister: 2 tests &times; 2 parameters, 2 failing cases<", page)
        page = pages.render("matrix.html.j2", **htmlreport.matrix_context(one[1:]))
        self.assertIn("hostregister: 1 test &times; 1 parameter<", page)

    def test_a_matrix_above_its_caps_says_so_and_the_page_script_gets_the_caps(self):
        # The table itself is built by report.js (report_browser_test.MatrixCapTest opens it); the
        # summary and the data the script reads come from here.
        cases = [testsupport.case(f"T{i}/p{j}", "PASS") for i in range(4) for j in range(3)]
        with mock.patch.object(htmlreport, "MATRIX_ROWS", 3), mock.patch.object(htmlreport, "MATRIX_COLUMNS", 2):
            page = pages.render("matrix.html.j2", **htmlreport.matrix_context(cases))
            self.assertIn("hostregister: 4 tests &times; 3 parameters; the table shows the first 3 tests and "
                          "2 parameters<", page)
            page = pages.render("matrix.html.j2", **htmlreport.matrix_context(cases[:9]))
            self.assertIn("hostregister: 3 tests &times; 3 parameters; the table shows the first 2 parameters<", page)
            page = pages.render("matrix.html.j2", **htmlreport.matrix_context(cases[:6:3] + cases[1:6:3]))
            self.assertIn("hostregister: 2 tests &times; 2 parameters<", page)
            data = htmlreport.case_data(model.Run({}, cases), {}, 7, {})
            self.assertEqual((data["matrixRows"], data["matrixColumns"]), (3, 2))
        self.assertEqual((htmlreport.MATRIX_ROWS, htmlreport.MATRIX_COLUMNS), (500, 200))
        with open(os.path.join(ROOT, "reports/templates/report.js"), encoding="utf-8") as f:
            self.assertIn("var MATRIX_ROWS = D.matrixRows, MATRIX_COLUMNS = D.matrixColumns;", f.read())

    def test_case_links_are_url_encoded_and_read_back_as_the_page_reads_them(self):
        # Case ids hold '/', and may hold ' ', '#', '&', '+': every '#case=' link of the page's
        # sections (what changed, metrics, mutation) must give the id back through
        # URLSearchParams, which report.js reads the fragment with (parse_qsl decodes alike).
        import html
        import re
        from urllib.parse import parse_qsl
        name = "Odd name #2 & 50%+more"
        bad = testsupport.case(name, "FAIL", "x.cc:1\nboom")
        metric = model.Case.from_raw(testsupport.T, "HostRegisterTest", name + " bw", "PASS", 1.0, "", "",
                                     {model.PROP_METRIC_PREFIX + "h2d_GBps": "5 GB/s"}, 7)
        run = model.Run(dict(testsupport.FP), [bad, metric])
        with open(MUTATION_FIXTURE) as f:
            doc = json.load(f)
        doc["faults"][0]["caught_by"][0]["case"] = bad.id
        page = htmlreport.render(run, extra_sections=[htmlreport.metrics_section(run, {})], mutation=doc)
        links = [html.unescape(h) for h in re.findall(r"href='(#case=[^']*)'", page)]
        sections = {"what-changed": 0, "metrics": 0, "mutation": 0}
        for section in sections:
            part = page.split(f"id='{section}'")[1].split("<h2 ")[0]
            sections[section] = len(re.findall(r"href='#case=", part))
        self.assertTrue(all(sections.values()), sections)
        for link in links:
            self.assertNotRegex(link[1:], r"[ #&+]", link)
            self.assertIn(dict(parse_qsl(link[1:]))["case"], (bad.id, metric.id), link)

    def test_report_cli_bad_outputs_exit_two(self):
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        write(os.path.join(root, "suites/a/a_test/test.xml"), GTEST_XML)
        blocker = os.path.join(root, "file")
        write(blocker, "x")
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(report.main([root, "--json", os.path.join(blocker, "r.json")]), 2)
            self.assertEqual(report.main([root, "--html", os.path.join(blocker, "r.html")]), 2)
        self.assertIn("cannot write the report", err.getvalue())

    def test_report_cli_exit_codes(self):
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(report.main([os.path.join(root, "absent")]), 2)
            self.assertEqual(report.main([root]), 4)
        self.assertIn("no test results", err.getvalue())
        write(os.path.join(root, "suites/a/a_test/test.xml"), GTEST_XML)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(report.main([root, "--html", os.path.join(root, "r/index.html")]), 3)
            self.assertEqual(report.main([root, "--strict"]), 3)
            self.assertEqual(report.main([root, "--exit-zero"]), 0)
        self.assertIn("1 passed, 1 failed, 1 skipped", out.getvalue())
        with open(os.path.join(root, "r/index.html")) as f:
            self.assertIn("cudaDevAttrX=0 (need 1)", f.read())

    def test_report_json_to_stdout_is_one_object(self):
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        write(os.path.join(root, "suites/a/a_test/test.xml"), GTEST_XML)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            self.assertEqual(report.main([root, "--json", "-"]), 3)
        doc = json.loads(out.getvalue())
        self.assertEqual((doc["tool"], doc["exit_code"], doc["counts"]["FAIL"]), ("report", 3, 1))
        self.assertIn("1 passed, 1 failed, 1 skipped", err.getvalue())

    def test_report_json_errors_carry_the_reason(self):
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        for argv, code, said in (([os.path.join(root, "absent"), "--json", "-"], 2, "absent"),
                                 ([root, "--json", "-"], 4, "no test results"),
                                 ([root, "--json", "-", "--mutation", os.path.join(root, "m.json")], 2,
                                  "m.json")):
            if code == 2 and "m.json" in said:
                write(os.path.join(root, "suites/a/a_test/test.xml"), GTEST_XML)
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(report.main(argv), code)
            doc = json.loads(out.getvalue())
            self.assertEqual((doc["tool"], doc["exit_code"]), ("report", code))
            self.assertIn(said, doc["error"])
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            with self.assertRaises(SystemExit) as e:
                report.main([root, "--json", "-", "--bogus"])
        self.assertEqual(e.exception.code, 2)
        self.assertIn("--bogus", json.loads(out.getvalue())["error"])

    def test_kernel_log_lines_show_beside_the_failure_and_unreadable_logs_are_named(self):
        c = model.Case.from_raw("//suites/a:a_test", "S", "Boom", "CRASH", 1.0, "killed by SIGKILL", "",
                                {"kernel_log": "[9.0] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus"})
        self.assertIn("Xid", c.logs["kernel_log"])
        page = htmlreport.render(model.Run({"pagelock_kernel_log": "read from /dev/kmsg"}, [c]))
        first_screen = page.split("id='cases'")[0]
        self.assertIn("79, GPU has fallen off the bus", first_screen)
        page = htmlreport.render(model.Run({"pagelock_kernel_log": "not readable (/dev/kmsg: Permission denied)"},
                                           [model.Case.from_raw("//suites/a:a_test", "S", "F", "FAIL", 1.0, "x")]))
        self.assertIn("Kernel log not readable (/dev/kmsg: Permission denied): no driver-side evidence", page)

    def test_report_cli_writes_junit_and_deqp_csvs(self):
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        write(os.path.join(root, "suites/a/a_test/test.xml"), GTEST_XML)
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(report.main([root, "--junit", os.path.join(root, "out/junit.xml"),
                                          "--csv-dir", os.path.join(root, "out")]), 3)
        with open(os.path.join(root, "out/junit.xml")) as f:
            junit = f.read()
        self.assertIn('failures="1"', junit)
        self.assertIn('skipped="1"', junit)
        with open(os.path.join(root, "out/failures.csv")) as f:
            self.assertEqual(f.read(), "suites/a:a_test/S.Bad,Fail\n")
        with open(os.path.join(root, "out/results.csv")) as f:
            self.assertEqual(len(f.read().splitlines()), 3)


def write_big_testlogs(root, targets=250, per_target=400, fail_every=200):
    """A bazel-testlogs tree of targets x per_target parameterised cases, some failing (as the
    scale review's generator writes them)."""
    for t in range(targets):
        rows = []
        for i in range(per_target):
            name = f"Case{i // 8:06d}/param{i % 8}"
            fail = ('<failure message="value was 42, expected 0" type="">x.cc:1\nvalue was 42, expected 0'
                    '</failure>') if i % fail_every == fail_every - 1 else ""
            rows.append(f'<testcase name="{name}" status="run" result="completed" time="0.001" '
                        f'classname="Flags/Gen">{fail}</testcase>')
        write(os.path.join(root, f"suites/gen/p{t}/t{t}_test/test.xml"),
              f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="{per_target}" name="AllTests" '
              f'gpu0_name="NVIDIA H200" nvidia_driver="580.159.04">\n<testsuite name="Flags/Gen">\n'
              + "\n".join(rows) + "\n</testsuite>\n</testsuites>\n")


class CauseTest(unittest.TestCase):
    """What makes two failures one cause."""

    def test_numbers_addresses_hex_bytes_and_sizes_are_left_out(self):
        norm = htmlreport.normalise_message
        self.assertEqual(norm("bad (= 1) != 0u (= 0) at 0x7f00a000 of 4096 bytes"),
                         norm("bad (= 17) != 0u (= 0) at 0x7f00b000 of 8192 bytes"))
        self.assertEqual(norm("pinned 23.75 GiB then OOM"), norm("pinned 22 GiB then OOM"))
        self.assertEqual(norm("dst[9] (= '\\xEE' (238))"), norm("dst[9] (= '\\x11' (17))"))
        self.assertNotEqual(norm("copy lost bytes"), norm("copy kept bytes"))

    def test_one_fault_over_parameters_is_one_cause_and_another_message_is_not(self):
        rows = [htmlreport._change_row("REGRESSION", "FAIL", f"s:t/Kinds/CopyTest.Every/{p}_MemcpyAsync",
                                       testsupport.case(f"Every/{p}_MemcpyAsync", "FAIL",
                                                        f"x.cc:1\n{p} MemcpyAsync D2H offset 0 length {n}: bytes differ",
                                                        rules="R75,R76"))
                for n, p in enumerate(("Pinned", "Pageable", "WriteCombined"), 1)]
        rows.append(htmlreport._change_row("REGRESSION", "FAIL", "s:t/S.Other",
                                           testsupport.case("Other", "FAIL", "x.cc:1\nbytes differ", rules="R04")))
        groups = htmlreport.cause_groups(rows, {"R75": ("streams", "seventy-five"), "R76": ("streams", "76")})
        self.assertEqual([g["count"] for g in groups], [3, 1])
        self.assertEqual(groups[0]["rules"], [("R75", "seventy-five"), ("R76", "76")])
        self.assertEqual(groups[1]["rules"], [("R04", "not in suites/rules.tsv")])
        self.assertTrue(groups[0]["replay"].startswith("bazel test "))

    def test_one_reason_under_many_rules_is_one_cause_listing_every_rule(self):
        # UX-3: a no-GPU run against the H200 baseline was 546 COVERAGE_LOST cases in 113 "causes"
        # that differed only in their rule ids.
        why = "no usable GPU on this machine (cudaGetDeviceCount=cudaErrorInsufficientDriver)"
        rows = [htmlreport._change_row("COVERAGE_LOST", "NOT_SUPPORTED", f"s:t/S.C{i}",
                                       testsupport.case(f"C{i}", "NOT_SUPPORTED", rules=rules), why)
                for i, rules in enumerate(("R76", "R14,R51", "R75,R76", "R04", "R14"))]
        groups = htmlreport.cause_groups(rows, {"R14": ("hostregister", "fourteen")})
        self.assertEqual([g["count"] for g in groups], [5])
        self.assertEqual([i for i, _ in groups[0]["rules"]], ["R04", "R14", "R51", "R75", "R76"])
        self.assertEqual(groups[0]["rules"][1], ("R14", "fourteen"))
        self.assertEqual(groups[0]["msg"], why)

    def test_without_rules_tsv_the_page_says_so_rather_than_blaming_the_rule(self):
        self.assertEqual(htmlreport.rules_table(os.path.join(TESTDATA, "absent.tsv")), {})
        self.assertEqual(htmlreport.rule_refs(["R14"], {}), [("R14", htmlreport.NO_RULES)])

    def test_cut_at_a_word_with_an_ellipsis(self):
        text = "problems: worker 1: 1 bytes wrong after a round trip " * 6
        cut = htmlreport.cut_at_word(text, 100)
        self.assertTrue(cut.endswith("…"))
        self.assertLessEqual(len(cut), 101)
        self.assertTrue(" ".join(text.split()).startswith(cut[:-1]))
        self.assertIn(" ".join(text.split())[len(cut) - 1], " ", "cut inside a word")
        self.assertEqual(htmlreport.cut_at_word("short"), "short")

    def test_a_call_check_leads_with_the_streamed_line_that_names_the_call(self):
        # EXPECT_CUDA_ERROR(cudaErrorInvalidValue, e) << "cudaHostGetFlags on ...": the check's
        # own line names only the variable 'e'; the streamed line names the call.
        msg = ("suites/hostregister/hostregister_test.cc:339\ne returned cudaSuccess (no error), expected "
               "cudaErrorInvalidValue (invalid argument) [cudaErrorInvalidValue]\n"
               "cudaHostGetFlags on memory from cudaHostRegister")
        self.assertEqual(htmlreport.headline(msg),
                         "cudaHostGetFlags on memory from cudaHostRegister — e returned cudaSuccess (no error), "
                         "expected cudaErrorInvalidValue (invalid argument) [cudaErrorInvalidValue]")
        alone = "x.cc:1\ncudaFree(p) returned cudaErrorInvalidValue (invalid argument), expected cudaSuccess"
        self.assertEqual(htmlreport.headline(alone), alone.split("\n")[1])

    def test_rule_ids_carry_the_sentence_of_suites_rules_tsv(self):
        rules = htmlreport.rules_table()
        self.assertIn("pageable", rules["R76"][1])
        run, comp, base, info, trends = golden_runs()
        page = htmlreport.render_qualification(run, info, comp, base, trends)
        self.assertIn(f"title='R14: {html_escape(rules['R14'][1])}'", page)
        self.assertIn("<tr id='rule-R14'>", page)


def html_escape(text):
    import html
    return html.escape(text, quote=True).replace("&#x27;", "&#39;")


class ScaleTest(unittest.TestCase):
    def test_all_outputs_for_100000_cases_in_seconds(self):
        """report.py writes every output for 100,000 cases in <= 10 s on the
        two-core build machine (about 6 s of CPU measured); the bound here is generous (CPU
        seconds of this process, so that a loaded machine does not make it flaky)."""
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        write_big_testlogs(os.path.join(root, "logs"))
        out = os.path.join(root, "out")
        start = time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):
            code = report.main([os.path.join(root, "logs"), "--html", os.path.join(out, "index.html"),
                                "--json", os.path.join(out, "results.json"), "--junit",
                                os.path.join(out, "junit.xml"), "--csv-dir", out])
        cpu = time.process_time() - start
        self.assertEqual(code, 3)
        self.assertEqual(sorted(os.listdir(out)), ["failures.csv", "index.html", "junit.xml", "results.csv",
                                                   "results.json"])
        with open(os.path.join(out, "failures.csv")) as f:
            self.assertEqual(len(f.read().splitlines()), 500)
        print(f"100,000 cases, all outputs: {cpu:.1f} s of CPU")
        self.assertLess(cpu, 25.0)


def golden_runs():
    """A fixed small run for the golden pages: testsupport's morning (one regression, one new
    flake, one expected failure), a crash with kernel-log lines, a parameterized test for the
    matrix, metrics with a trend, device attributes, and the mutation fixture."""
    run, comp, base = testsupport.morning(extra_passes=3)
    run.fingerprint.update({"gpu0_cudaDevAttrCanMapHostMemory": "1", "gpu0_cudaDevAttrHostRegisterSupported": "1",
                            "pagelock_kernel_log": "read from /dev/kmsg"})
    extra = [testsupport.case(f"MapsEveryFlag/{flags}", st, msg, rules="R20", suite="Flags/MappedTest")
             for flags, st, msg in (("portable", "PASS", ""), ("mapped", "PASS", ""),
                                    ("portable_mapped", "FAIL", "m.cc:9\nValue of: ok\n  Actual: false\n"
                                                                "Expected: true\nthe mapped pointer reads stale bytes"))]
    extra.append(model.Case.from_raw(testsupport.T, "HostRegisterTest", "PinsUntilOom", "CRASH", 3.5,
                                     "killed by SIGKILL", "",
                                     {"kernel_log": "[9.0] NVRM: failed to allocate page table!\n"
                                                    "[9.1] oom-kill: task=hostregister_test\n[9.2] a\n[9.3] b",
                                      model.PROP_RULES: "R31"}, 7))
    extra.append(model.Case.from_raw(testsupport.T, "HostRegisterTest", "Bandwidth", "PASS", 1.0, "", "",
                                     {model.PROP_RULES: "P01", model.PROP_METRIC_PREFIX + "h2d_pinned_GBps": "55.1 GB/s",
                                      model.PROP_METRIC_PREFIX + "d2h_pinned_GBps": "54.9 GB/s",
                                      model.PROP_METRIC_PREFIX + "registered_ranges": "3 count"}, 7))
    run.cases += extra
    from reports import compare as cmp
    from reports import expectations as expect
    comp = cmp.compare(run, expect.Expectations(expect.parse(testsupport.EXPECTATIONS, "nvidia-h200.txt")), base)
    info = {"run_key": "20261130T060000Z-nvidia-h200-580.159.04", "tier": "full",
            "started_at": "2026-11-30T06:00:00+00:00", "sku": "nvidia-h200",
            "bundle": {"commit": "f4e9a0c"}, "baseline": "baselines/nvidia-h200/results.json",
            "expectations": {"nvidia-h200.txt": "0123456789abcdef"}, "retries": 2, "label": "nightly",
            "command": "tools/qualify --bundle build/bundle --mutation",
            "outputs": {"JUnit (final verdict per case)": "junit.xml"}}
    trends = {"h2d_pinned_GBps": [("r1", "t1", 55.4), ("r2", "t2", 55.0), ("r3", "t3", 55.1)],
              "d2h_pinned_GBps": [("r3", "t3", 54.9)]}
    return run, comp, base, info, trends


RULES_FIXTURE = os.path.join(TESTDATA, "rules.tsv")  # the goldens' rule sentences (P01 is absent)


def golden_qualification_page(mutation=None):
    run, comp, base, info, trends = golden_runs()
    with mock.patch.object(htmlreport, "RULES_TSV", RULES_FIXTURE):
        return htmlreport.render_qualification(run, info, comp, base, trends, mutation=mutation)


class GoldenTest(unittest.TestCase):
    """The rendered pages, byte for byte. A mismatch prints a unified diff; UPDATE_GOLDEN=1
    rewrites the golden files (review the diff, then commit them)."""

    def check(self, name, page):
        path = os.path.join(TESTDATA, "golden", name)
        if os.environ.get("UPDATE_GOLDEN"):
            dest = os.path.join(os.environ.get("BUILD_WORKSPACE_DIRECTORY", ROOT), "reports", "testdata", "golden", name)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "w", encoding="utf-8") as f:
                f.write(page)
            print(f"UPDATE_GOLDEN: wrote {dest}", file=sys.stderr)
            return
        with open(path, encoding="utf-8") as f:
            want = f.read()
        if page != want:
            diff = "".join(difflib.unified_diff(want.splitlines(True), page.splitlines(True),
                                                f"golden/{name}", "rendered now", n=2))
            self.fail(f"the page differs from reports/testdata/golden/{name} (UPDATE_GOLDEN=1 rewrites it "
                      f"after review):\n{diff[:20000]}")

    def test_qualification_page_matches_the_golden_file(self):
        with open(MUTATION_FIXTURE) as f:
            mutation = json.load(f)
        self.check("qualification.html", golden_qualification_page(mutation))

    def test_plain_report_matches_the_golden_file(self):
        run, _, _, _, _ = golden_runs()
        with mock.patch.object(htmlreport, "RULES_TSV", RULES_FIXTURE):
            self.check("report.html", htmlreport.render(run, title="pagelock report"))

    def test_mutation_page_matches_the_golden_file(self):
        # golden/mutation.html is what tools/mutation/mutation.py's own writer made of the fixture.
        with open(MUTATION_FIXTURE) as f:
            self.check("mutation.html", pages.render_mutation_page(json.load(f)))

    def test_rendering_is_deterministic_across_processes(self):
        # Set and dict ordering must not leak into the page: another process, another hash seed.
        code = "import sys; from reports import report_test as t; sys.stdout.write(t.golden_qualification_page())"
        rendered = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                   env=testsupport.package_env(PYTHONHASHSEED=seed)).stdout for seed in ("1", "2")]
        self.assertGreater(len(rendered[0]), 1000)
        self.assertEqual(rendered[0], rendered[1])
        self.assertEqual(rendered[0], golden_qualification_page())


class MutationSectionTest(unittest.TestCase):
    def setUp(self):
        with open(MUTATION_FIXTURE) as f:
            self.doc = json.load(f)
        self.run, self.comp, self.base, self.info, _ = golden_runs()

    def page(self, mutation):
        return htmlreport.render_qualification(self.run, self.info, self.comp, self.base, {}, mutation=mutation)

    def test_the_score_line_is_on_the_first_screen_beside_the_verdict(self):
        page = self.page(self.doc)
        first = page.split("id='what-changed'")[0]
        line = "the suite caught 2 of 3 injected driver faults on this machine (score 66.7%)"
        self.assertIn(line + "; 1 not run (time budget)", first)
        self.assertLess(first.index("class='verdict'"), first.index(line))

    def test_a_blind_batch_score_is_on_the_first_screen_and_in_the_section(self):
        one = {"KILLED": 1, "HANDLED": 0, "SURVIVED": 1, "counted": 2, "percent": 50.0,
               "line": "caught 1 of 2 injected driver faults (50.0%)"}
        doc = dict(self.doc, score_by_batch={"blind-9": dict(one, blind=True), "old": dict(one, blind=False)})
        page = self.page(doc)
        first = page.split("id='what-changed'")[0]
        self.assertIn("on blind batch blind-9, faults written without sight of the tests, 1 of 2 (50.0%)", first)
        self.assertNotIn("blind batch old", first)
        section = page.split("<h2 id='mutation'>")[1].split("<h2 ")[0]
        self.assertIn("Blind batch blind-9", section)

    def test_every_fault_is_listed_with_the_cases_that_caught_it(self):
        page = self.page(self.doc)
        section = page.split("<h2 id='mutation'>")[1].split("<h2 ")[0]
        for name in ("register_returns_already_registered", "can_map_host_memory_zero", "d2h_slow_by_half",
                     "event_elapsed_zero"):
            self.assertIn(name, section)
        # A catching case in this run links to it; one that is not is named without a link.
        self.assertIn("<a href='#case=suites%2Fhostregister%3Ahostregister_test%2FHostRegisterTest.Passes0'>", section)
        self.assertIn("suites/other:other_test/Other.NotInThisRun</span>: PASS &rarr; CRASH", section)
        self.assertNotIn("#case=suites%2Fother%3Aother_test", section)
        self.assertIn("registering a fresh range must succeed", section)  # the headline, not gtest boilerplate
        self.assertIn("killed by SIGSEGV &lt;b&gt;", section)
        self.assertIn("cudaDevAttrCanMapHostMemory=0", section)

    def test_survivors_show_the_rule_they_break_and_why(self):
        page = self.page(self.doc)
        survivors = page.split("<h3>Survivors</h3>")[1].split("</table>")[0]
        self.assertIn("d2h_slow_by_half", survivors)
        self.assertIn("<td class='mono'>P03</td>", survivors)
        self.assertIn("the bandwidth suite is a stress target, left out of the full tier", survivors)
        self.assertNotIn("register_returns_already_registered", survivors)

    def test_no_mutation_json_no_section_and_a_broken_one_is_named(self):
        self.assertNotIn("injected driver faults", self.page(None))
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.assertIsNone(htmlreport.load_mutation(root))
        write(os.path.join(root, "mutation", "mutation.json"), "{truncated")
        doc = htmlreport.load_mutation(root)
        page = self.page(doc)
        self.assertIn("mutation.json could not be read", page)
        self.assertNotIn("the suite caught", page)

    def test_report_cli_finds_mutation_json_in_the_run_folder(self):
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        write(os.path.join(root, "testlogs/suites/a/a_test/test.xml"), GTEST_XML)
        os.makedirs(os.path.join(root, "mutation"))
        shutil.copy(MUTATION_FIXTURE, os.path.join(root, "mutation", "mutation.json"))
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(report.main([os.path.join(root, "testlogs"), "--html", os.path.join(root, "index.html")]), 3)
        with open(os.path.join(root, "index.html")) as f:
            self.assertIn("the suite caught 2 of 3 injected driver faults", f.read())
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(report.main([os.path.join(root, "testlogs"), "--mutation", os.path.join(root, "nope.json"),
                                          "--html", os.path.join(root, "index.html")]), 2)
        self.assertIn("no such file", err.getvalue())


class MutationPageTest(unittest.TestCase):
    """mutation.html (pages.render_mutation_page) from a plain dict of mutation.json's shape: the
    score, the false alarms, a row per fault and per variation, every string escaped."""

    DOC = {
        "score": {"KILLED": 1, "HANDLED": 1, "SURVIVED": 1, "ERROR": 1, "NOT_RUN": 0, "counted": 3,
                  "total": 4, "percent": 66.7, "run": 4},
        "control": {"summary": "PASS=40, FAIL=1", "unstable": ["s:t/A.Flaky", "s:t/A.Slow"]},
        "faults": [
            {"name": "htod_corrupts_last_byte", "verdict": "KILLED", "rule": "R76", "family": "hostalloc",
             "description": "A copy delivers a wrong last byte.",
             "caught_by": [{"case": f"s:t/Copy.Every/{i}", "control": "PASS", "fault": "FAIL"} for i in range(32)]},
            {"name": "no_host_register", "verdict": "HANDLED", "rule": "R14", "family": "hostregister",
             "description": "cudaHostRegister is not supported.",
             "handled_cases": [{"case": "s:t/Reg.Pins", "control": "PASS", "fault": "NOT_SUPPORTED"}]},
            {"name": "ctx_sync_returns_early", "verdict": "SURVIVED", "rule": "R30", "family": "streams",
             "description": "<script>alert('sync')</script>", "explanation": "the suite never checks data",
             "targets_run": ["//suites/streams:streams_test"]},
            {"name": "shim_broken", "verdict": "ERROR", "rule": "R1", "family": "x", "description": "d",
             "note": "not loaded"},
        ],
        "variations": [
            {"name": "iomemory_on_ram_not_permitted", "verdict": "FALSE_ALARM", "rule": "R55",
             "description": "IoMemory on RAM is refused.", "justification": "documented as allowed",
             "targets_run": ["//fake:a", "//fake:b"]},
            {"name": "completion_delayed", "verdict": "NOT_EXERCISED", "rule": "R31", "description": "late",
             "note": "never reached"},
        ],
        "false_alarms": {"count": 1, "line": "1 false alarm(s) from 1 of 2 conforming variations: 0 conform, 1 not exercised",
                         "by_variation": {"iomemory_on_ram_not_permitted": [
                             {"case": "s:t/Io.Pins", "control": "PASS", "status": "FAIL",
                              "message": "IoMemory on RAM returned 800, expected 1"}]}},
    }

    def setUp(self):
        self.page = pages.render_mutation_page(self.DOC)

    def test_the_score_line_counts_every_verdict_and_the_false_alarms(self):
        self.assertIn("<b>The suite caught 2 of 3 injected driver faults (66.7%)</b>: 1 killed, "
                      "1 handled as NotSupported, 1 survived, 1 not loaded; false alarms: 1.", self.page)
        self.assertIn("Control under the shim: PASS=40, FAIL=1. Unstable cases ignored: 2.", self.page)

    def test_each_fault_has_its_row_with_the_cases_that_caught_it(self):
        for f in self.DOC["faults"]:
            self.assertIn(f"<tr class=\"{f['verdict']}\"><td>{f['name']}</td><td>{f['verdict']}</td>"
                          f"<td>{f['rule']}</td><td>{f['family']}</td>", self.page)
        self.assertIn("<summary>32 case(s)</summary>", self.page)
        self.assertIn("<li>s:t/Copy.Every/29: PASS &rarr; FAIL</li><li>... 2 more</li>", self.page)
        self.assertNotIn("s:t/Copy.Every/30", self.page)
        self.assertIn("<li>s:t/Reg.Pins: PASS &rarr; NOT_SUPPORTED</li>", self.page)
        self.assertIn("<td>not loaded</td></tr>", self.page)

    def test_survivors_say_why_and_what_ran(self):
        survivors = self.page.split("<h3>Survivors</h3>")[1].split("<h3>")[0]
        self.assertIn("<td>ctx_sync_returns_early</td><td>R30</td>", survivors)
        self.assertIn("<td>the suite never checks data</td>", survivors)
        self.assertIn("<li>//suites/streams:streams_test</li>", survivors)
        self.assertNotIn("htod_corrupts_last_byte", survivors)

    def test_false_alarms_and_variations_are_listed(self):
        alarms = self.page.split("<h3>False alarms: conforming variations</h3>")[1]
        self.assertIn("<b>1 false alarm(s) from 1 of 2 conforming variations: 0 conform, 1 not exercised</b>", alarms)
        self.assertIn("<tr class=\"SURVIVED\"><td>iomemory_on_ram_not_permitted</td><td>s:t/Io.Pins</td>"
                      "<td>PASS &rarr; FAIL</td><td>IoMemory on RAM returned 800, expected 1</td></tr>", alarms)
        self.assertIn("<td>FALSE_ALARM</td><td>R55</td><td>IoMemory on RAM is refused.</td>"
                      "<td>documented as allowed</td><td>2</td></tr>", alarms)
        self.assertIn("<tr class=\"NOT_RUN\"><td>completion_delayed</td><td>NOT_EXERCISED<br>never reached</td>", alarms)

    def test_strings_are_escaped_and_the_page_is_self_contained(self):
        self.assertNotIn("<script", self.page)
        self.assertIn("&lt;script&gt;alert(&#39;sync&#39;)&lt;/script&gt;", self.page)
        self.assertIn('<body>\n<section class="pl-mutation" id="mutation">\n<style>', self.page)
        self.assertTrue(self.page.endswith("</section>\n</body></html>\n"))
        self.assertEqual(testsupport.full_document_problems(self.page), [])

    def test_no_faults_run(self):
        doc = dict(self.DOC, score=dict(self.DOC["score"], total=0), faults=[], variations=[])
        page = pages.render_mutation_page(doc)
        self.assertIn("<p>No injected faults were run.</p>", page)
        self.assertNotIn("Every fault", page)
        self.assertNotIn("False alarms", page)


class FullDocumentTest(unittest.TestCase):
    """Every page pagelock writes is a whole document (ux review finding 10: mutation.html was a
    fragment, without charset or title, and rendered as windows-1252; the fleet page had no
    viewport). The fleet page: tools/fleet/report_test.py."""

    def test_every_page_is_a_whole_document(self):
        run, comp, base, info, trends = golden_runs()
        with open(MUTATION_FIXTURE) as f:
            mutation = json.load(f)
        pages_written = {
            "report": htmlreport.render(run, title="pagelock report"),
            "qualification": htmlreport.render_qualification(run, info, comp, base, trends),
            "compare": compare_runs.render([("a", run, {}), ("b", base, {})])[0],
            "mutation": pages.render_mutation_page(mutation),
        }
        for name, page in pages_written.items():
            self.assertEqual(testsupport.full_document_problems(page), [], name)
        self.assertIn("<title>mutation score: 2 of 3 injected driver faults caught — pagelock</title>",
                      pages_written["mutation"])

    def test_the_check_sees_a_fragment(self):
        self.assertEqual(testsupport.full_document_problems("<section>x</section>"),
                         ["no doctype first", "no <html lang>", "no charset first in the head", "no viewport",
                          "no title", "no closing </html>"])


class CompareRunsPageTest(unittest.TestCase):
    """compare_runs' page (templates/compare.html.j2): a column per run, a row per case, the
    cases that differ apart from the same ones, a case one run lacks as "not run"."""

    def setUp(self):
        fp = dict(testsupport.FP, gpu0_name="<GPU & co>")
        a = model.Run(fp, [testsupport.case("Same", "PASS"), testsupport.case("Changed", "PASS"),
                           testsupport.case("OnlyA", "FAIL")])
        b = model.Run(dict(testsupport.FP, nvidia_driver="590.1"),
                      [testsupport.case("Same", "PASS"), testsupport.case("Changed", "CRASH")])
        self.runs = [("night-a", a, {"verdict": "REGRESSIONS", "bundle": {"commit": "0123456789abcdef"}}),
                     ("night-b", b, {})]

    def test_columns_rows_and_what_differs(self):
        page, differing = compare_runs.render(self.runs)
        prefix = "suites/hostregister:hostregister_test/HostRegisterTest."
        self.assertEqual(differing, [prefix + "Changed", prefix + "OnlyA"])
        self.assertIn("<h1>pagelock: 2 runs side by side</h1>", page)
        self.assertIn("<p>3 cases, <b>2</b> with different statuses.", page)
        self.assertIn("<th>night-a<br>&lt;GPU &amp; co&gt;<br>driver 580.159.04<br>harness 0123456789ab<br>"
                      "REGRESSIONS<br>", page)
        self.assertIn("<th>night-b<br>NVIDIA H200<br>driver 590.1<br>harness <br>1 passed, 1 failed, 0 skipped</th>", page)
        self.assertIn(f"<tr class='diff'><td class='mono'>{prefix}Changed</td><td><span class=\"st st-PASS\" "
                      f"title=\"PASS\">PASS</span></td><td><span class=\"st st-CRASH\" title=\"CRASH\">CRASH</span>"
                      "</td></tr>", page)
        self.assertIn(f"<tr class='diff'><td class='mono'>{prefix}OnlyA</td><td><span class=\"st st-FAIL\" "
                      "title=\"FAIL\">FAIL</span></td><td class='small'>not run</td></tr>", page)
        self.assertIn(f"<tr class='same'><td class='mono'>{prefix}Same</td>", page)
        self.assertIn("<body class=''>", page)
        self.assertIn("<input type='checkbox' id='only' >", page)

    def test_changes_only_hides_the_same_cases_from_the_start(self):
        page, _ = compare_runs.render(self.runs, changes_only=True)
        self.assertIn("<body class='changes'>", page)
        self.assertIn("<input type='checkbox' id='only' checked>", page)
        self.assertIn("body.changes tr.same{display:none}", page)

    def test_a_usage_error_with_json_is_one_json_object_on_stdout(self):
        # UX-9: argparse's error said nothing on stdout, where a --json reader looks.
        for argv in (["a", "b", "--html", "c.html", "--bogus", "--json"], ["--json"]):
            p = subprocess.run([sys.executable, os.path.join(ROOT, "reports", "compare_runs.py"), *argv],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            doc = json.loads(p.stdout)
            self.assertEqual((doc["tool"], doc["exit_code"]), ("compare_runs", 2))
            self.assertIn(doc["error"], p.stderr)  # the same words as argparse's line
        p = subprocess.run([sys.executable, os.path.join(ROOT, "reports", "compare_runs.py"), "--bogus"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout), (2, ""))  # without --json, stdout stays empty

    def written(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        paths = []
        for name, run, _ in self.runs:
            paths.append(os.path.join(tmp, name + ".json"))
            model.write_results(paths[-1], run)
        return tmp, paths

    def main(self, argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = compare_runs.main(argv)
        return code, out.getvalue(), err.getvalue()

    def test_the_terminal_names_each_case_that_differs(self):
        # It printed a count only (ux review finding 10).
        tmp, paths = self.written()
        code, out, _ = self.main(paths + ["--html", os.path.join(tmp, "new", "c.html")])
        self.assertEqual(code, 3)
        prefix = "suites/hostregister:hostregister_test/HostRegisterTest."
        self.assertIn(f"  {prefix}Changed: PASS | CRASH\n", out)
        self.assertIn(f"  {prefix}OnlyA: FAIL | -\n", out)
        self.assertNotIn("Same", out)
        self.assertIn("2 case(s) differ; wrote", out)
        self.assertTrue(os.path.isfile(os.path.join(tmp, "new", "c.html")))  # its folder created
        many = [(f"r{i}", model.Run({}, [testsupport.case(f"C{j}", "PASS" if i else "FAIL") for j in range(60)]), {})
                for i in range(2)]
        lines = compare_runs.difference_lines(many, compare_runs.differing_ids(many))
        self.assertEqual(len(lines), 51)
        self.assertEqual(lines[-1], "  ... and 10 more (--html and --json list every one)")

    def test_json_alone_needs_no_page(self):
        # --json needed --html (ux review finding 10).
        tmp, paths = self.written()
        code, out, err = self.main(paths + ["--json"])
        self.assertEqual(code, 3)
        doc = json.loads(out)
        self.assertEqual((doc["exit_code"], doc["cases"], len(doc["differing"])), (3, 3, 2))
        self.assertIn("2 case(s) differ\n", err)
        self.assertEqual(sorted(os.listdir(tmp)), ["night-a.json", "night-b.json"])

    def test_runs_without_results_are_nothing_to_compare(self):
        # Two dead nights said "0 case(s) differ" and exit 0 (ux review finding 6); report.py
        # says exit 4 for the same input.
        tmp, paths = self.written()
        empty = [os.path.join(tmp, "dead1"), os.path.join(tmp, "dead2")]
        for d in empty:
            os.makedirs(d)
        html = os.path.join(tmp, "c.html")
        for runs in (empty, [paths[0], empty[1]]):
            code, out, err = self.main(runs + ["--html", html])
            self.assertEqual(code, 4, err)
            self.assertIn(f"no test results in {', '.join(r for r in runs if r in empty)}:", err)
            self.assertFalse(os.path.exists(html))
        code, out, _ = self.main(empty + ["--json"])
        doc = json.loads(out)
        self.assertEqual((doc["tool"], doc["exit_code"]), ("compare_runs", 4))
        self.assertIn("nothing to compare", doc["error"])

    def test_without_jinja2_it_exits_one(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        paths = []
        for name, run, _ in self.runs:
            paths.append(os.path.join(tmp, name + ".json"))
            model.write_results(paths[-1], run)
        err = io.StringIO()
        with mock.patch.dict(sys.modules, {"jinja2": None}), mock.patch.object(pages, "_ENV", []), \
                contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(compare_runs.main(paths + ["--html", os.path.join(tmp, "c.html")]), 1)
        self.assertIn("no Python here imports jinja2", err.getvalue())
        self.assertFalse(os.path.exists(os.path.join(tmp, "c.html")))


class WithoutJinjaTest(unittest.TestCase):
    """An interpreter without jinja2: the command re-executes itself under one that has it
    (reports/interpreter.py); with none, the other outputs are written and the report exits 1
    with a clear message."""

    def test_no_jinja2_writes_the_rest_and_exits_one(self):
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        write(os.path.join(root, "suites/a/a_test/test.xml"), GTEST_XML)
        err = io.StringIO()
        with mock.patch.dict(sys.modules, {"jinja2": None}), mock.patch.object(pages, "_ENV", []), \
                contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = report.main([root, "--html", os.path.join(root, "out/index.html"), "--json",
                              os.path.join(root, "out/results.json"), "--junit", os.path.join(root, "out/junit.xml"),
                              "--csv-dir", os.path.join(root, "out")])
        self.assertEqual(rc, 1)
        self.assertIn("no Python here imports jinja2", err.getvalue())
        self.assertIn("python3-jinja2", err.getvalue())
        self.assertNotIn("Traceback", err.getvalue())
        for name in ("results.json", "junit.xml", "results.csv", "failures.csv"):
            self.assertTrue(os.path.isfile(os.path.join(root, "out", name)), name)
        self.assertFalse(os.path.exists(os.path.join(root, "out/index.html")))

    def test_templates_autoescape(self):
        env = pages.environment()
        self.assertTrue(env.autoescape)
        self.assertEqual(env.from_string("{{ x }}").render(x="<b>&'"), "&lt;b&gt;&amp;&#39;")


class InterpreterTest(unittest.TestCase):
    """A command picks its interpreter once, at its entry: a module missing here and present in
    $PAGELOCK_PYTHON (here a wrapper that adds a folder to the path) re-executes the command
    there with its arguments, once."""

    SCRIPT = (
        "import os, sys\n"
        "from reports import interpreter\n"
        "if __name__ == '__main__':\n"
        "    interpreter.reexec_if_missing(sys.argv[2].split(','), __file__, sys.argv[1])\n"
        "    try:\n"
        "        import pagelock_probe\n"
        "        print('found', pagelock_probe.WHERE, sys.argv[3:], os.environ.get(interpreter.NO_REEXEC))\n"
        "    except ImportError:\n"
        "        print('ran here', sys.argv[3:])\n")

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        hidden = os.path.join(self.tmp, "hidden")
        write(os.path.join(hidden, "pagelock_probe.py"), "WHERE = 'elsewhere'\n")
        self.wrapper = os.path.join(self.tmp, "python-with-probe")
        write(self.wrapper, f"#!/bin/sh\nPYTHONPATH={hidden}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} \"$@\"\n")
        os.chmod(self.wrapper, 0o755)
        self.script = os.path.join(self.tmp, "cmd.py")
        write(self.script, self.SCRIPT)

    def run_script(self, module, **env):
        e = {k: v for k, v in testsupport.package_env().items() if k not in ("PAGELOCK_PYTHON", "PAGELOCK_NO_REEXEC")}
        e.update(env)
        p = subprocess.run([sys.executable, self.script, ROOT, module, "a b", "--x"], capture_output=True,
                           text=True, env=e, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.strip()

    def test_a_missing_module_reexecutes_under_the_python_that_has_it(self):
        self.assertEqual(self.run_script("pagelock_probe", PAGELOCK_PYTHON=self.wrapper),
                         "found elsewhere ['a b', '--x'] 1")

    def test_without_a_python_that_has_it_the_command_runs_on_here(self):
        self.assertEqual(self.run_script("pagelock_probe"), "ran here ['a b', '--x']")

    def test_a_reexecuted_command_never_reexecutes_again(self):
        self.assertEqual(self.run_script("pagelock_probe", PAGELOCK_PYTHON=self.wrapper, PAGELOCK_NO_REEXEC="1"),
                         "ran here ['a b', '--x']")

    def test_a_module_present_here_runs_here(self):
        self.assertEqual(self.run_script("json", PAGELOCK_PYTHON=self.wrapper), "ran here ['a b', '--x']")

    def test_several_modules_reexecute_only_under_a_python_that_has_them_all(self):
        # qualify and fleet.py ask for jinja2 and, for a postgresql:// history, psycopg2 at once.
        self.assertEqual(self.run_script("json,pagelock_probe", PAGELOCK_PYTHON=self.wrapper),
                         "found elsewhere ['a b', '--x'] 1")
        self.assertEqual(self.run_script("pagelock_probe,pagelock_nowhere", PAGELOCK_PYTHON=self.wrapper),
                         "ran here ['a b', '--x']")
        self.assertEqual(self.run_script("", PAGELOCK_PYTHON=self.wrapper), "ran here ['a b', '--x']")  # SQLite

    def test_only_a_postgresql_history_needs_psycopg2(self):
        from reports import interpreter
        self.assertEqual(interpreter.history_modules("postgresql://h/db"), ["psycopg2"])
        self.assertEqual(interpreter.history_modules("postgres:///db?service=lab"), ["psycopg2"])
        for target in ("runs/history.sqlite", "/tmp/postgresql:/h.sqlite", "", None):
            self.assertEqual(interpreter.history_modules(target), [], target)


if __name__ == "__main__":
    unittest.main()
