"""The fleet page (tools/fleet/report.py render_html, reports/templates/fleet.html.j2) from plain
data, without a history: every section, the verdict classes, links relative to the page's folder
and escaping. fleet_test renders it from real histories."""

import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.fleet.report_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

if __name__ == "__main__":
    from reports import interpreter
    interpreter.reexec_if_missing("jinja2", __file__, ROOT)

from tools.fleet import report as fleet_report

CASE = "suites/hostregister:hostregister_test/HostRegisterTest.Overlap"


def run(host, verdict, report="", **kw):
    return dict({"host": host, "sku": "nvidia-h200", "driver": "580.1", "verdict": verdict, "run_key": "k-" + host,
                 "started_at": "2026-11-30T01:00:00", "report": report, "replaced_runs": 0, "attempts": 1,
                 "replaced_keys": []}, **kw)


def data():
    runs = [run("h1", "REGRESSIONS", "/runs/h1/index.html"), run("h2", "QUALIFIED"),
            run("h3", "INTERRUPTED", replaced_runs=1, attempts=2, replaced_keys=["k-old<1>"]), run("h4", None)]
    group = {"case": CASE, "sku": "nvidia-h200", "kind": "new", "scope": "one host", "hosts": ["h1"],
             "hosts_of_sku": 4, "statuses": {"FAIL": 1}, "message": "overlap <accepted> " + "x" * 300,
             "links": [{"host": "h1", "report": "/runs/h1/index.html", "case": CASE}]}
    return {"label": None, "night": "2026-11-30", "generated_at": "2026-11-30T08:00:00+00:00", "hosts": 4,
            "roster": 5, "runs": runs, "timings_s": {"total": 0.25}, "regressed_hosts": ["h1"],
            "missing": [{"host": "h5", "sku": "nvidia-h200", "why": "no run stored", "slurm": "NODE_FAIL"}],
            "per_sku": [{"sku": "nvidia-h200", "reported": 4, "qualified": 1, "product": 1, "known_only": 2,
                         "infra": 1}],
            "matrix": [{"sku": "nvidia-h200", "driver": "580.1", "hosts": runs,
                        "verdicts": {"REGRESSIONS": 1, "QUALIFIED": 1, "INTERRUPTED": 1, None: 1}}],
            "new": [group], "known": [], "problems": [group],
            "health": [{"host": "h1", "nights": 14, "nights_run": 3, "same_case_nights": 3, "own_failure_nights": 3,
                        "product_failure_nights": 3, "infra_nights": 0, "drain": True, "advice": "drain: x"}],
            "brackets": [{"case": CASE, "sku": "nvidia-h200", "good": None,
                          "bad": {"started_at": "t", "driver": "580.1", "commit": "0123456789abcdef", "host": "h1",
                                  "run_key": "k-h1"}}],
            "coverage_lost": [{"host": "h2", "sku": "nvidia-h200", "driver": "580.1", "lost": 3,
                               "cases": [{"case": "a:b/C.D", "status": "SKIP"}]}]}


class FullDocumentTest(unittest.TestCase):
    def test_the_fleet_page_is_a_whole_document_with_a_viewport(self):
        from reports import testsupport
        page = fleet_report.render_html(data(), "/out")
        self.assertEqual(testsupport.full_document_problems(page), [])


class VerdictClassTest(unittest.TestCase):
    def test_qualify_verdicts_are_looked_up_not_matched_by_substring(self):
        self.assertEqual({v: fleet_report.verdict_class(v) for v in (
            "QUALIFIED", "qualified", "REGRESSIONS", "INFRASTRUCTURE ERROR", "INTERRUPTED", "COVERAGE LOST",
            "EXPECTATIONS NEED UPDATING", "NOTHING RAN", "BAD CONFIGURATION", None, "")},
            {"QUALIFIED": "ok", "qualified": "ok", "REGRESSIONS": "bad", "INFRASTRUCTURE ERROR": "bad",
             "INTERRUPTED": "warn", "COVERAGE LOST": "warn", "EXPECTATIONS NEED UPDATING": "warn",
             "NOTHING RAN": "warn", "BAD CONFIGURATION": "warn", None: "warn", "": "warn"})
        self.assertTrue(fleet_report.is_interrupted("INTERRUPTED"))
        self.assertTrue(fleet_report.is_infra("INFRASTRUCTURE ERROR"))
        self.assertFalse(fleet_report.is_infra("QUALIFIED"))


class FleetPageTest(unittest.TestCase):
    def setUp(self):
        self.page = fleet_report.render_html(data(), "/fleet")

    def test_title_and_summary(self):
        self.assertIn("<title>pagelock fleet report: 2026-11-30: REGRESSED</title>", self.page)
        self.assertIn("<p>4 hosts reported of 5 expected; 1 missing; 1 regressed; generated "
                      "2026-11-30T08:00:00+00:00 in 0.25 s.</p>", self.page)

    def test_every_section(self):
        for h2 in ("Missing hosts", "Per SKU: product and infrastructure failures",
                   "Verdicts: SKU &times; driver &times; host", "New regressions", "Known failures (expected)",
                   "Host health over the last 14 nights", "Good/bad bracket per failing case per SKU",
                   "Coverage lost per host", "Hosts"):
            self.assertIn(f"<h2>{h2}</h2>", self.page)
        self.assertIn("<td>h5</td><td>nvidia-h200</td><td>no run stored</td><td>NODE_FAIL</td>", self.page)
        self.assertIn("<p>No expected failure.</p>", self.page)
        self.assertIn("<span class='muted'>none in the history</span>", self.page)
        self.assertIn("commit <code>0123456789ab</code>", self.page)
        self.assertIn("<code>a:b/C.D</code> SKIP<br><span class='muted'>... 2 more</span>", self.page)
        self.assertIn("<span class='v bad'>drain: x</span>", self.page)

    def test_verdicts_carry_their_class(self):
        self.assertIn("<span class='v bad'>REGRESSIONS</span>", self.page)
        self.assertIn("<span class='v ok'>QUALIFIED</span>", self.page)
        self.assertIn("<span class='v warn'>INTERRUPTED</span>", self.page)
        self.assertIn("<span class='v warn'>None</span>", self.page)
        self.assertIn("<span class='v warn'>INTERRUPTED &times; 1</span>", self.page)

    def test_links_are_relative_to_the_page_and_point_at_the_case(self):
        self.assertIn('<a href="../runs/h1/index.html#case=' + CASE.replace("/", "%2F").replace(":", "%3A")
                      + '">h1</a>', self.page)
        self.assertIn('<a href="../runs/h1/index.html">report</a>', self.page)

    def test_strings_are_escaped_and_long_messages_cut(self):
        self.assertIn("overlap &lt;accepted&gt; " + "x" * 281 + "&hellip;</td>", self.page)
        self.assertIn("replaces 1 earlier: k-old&lt;1&gt;", self.page)
        self.assertNotIn("<accepted>", self.page)

    def test_no_runs(self):
        d = dict(data(), runs=[], missing=[], regressed_hosts=[], roster=0, per_sku=[])
        page = fleet_report.render_html(d)
        self.assertIn("NO RUNS", page)
        self.assertIn("(no roster stored for this selection)", page)
        self.assertIn("<p>No run in the history for this selection.</p>", page)
        self.assertNotIn("<h2>Hosts</h2>", page)


class CappedTableTest(unittest.TestCase):
    def test_one_host_groups_keep_rows_of_their_own_under_the_cap(self):
        # 520 SKU-wide groups sort first; the 5 one-host groups (bad boards) must not be the ones cut.
        def group(case, scope, hosts):
            return {"case": case, "sku": "nvidia-h200", "kind": "new", "scope": scope, "hosts": hosts,
                    "hosts_of_sku": 4, "statuses": {"FAIL": len(hosts)}, "message": "", "links": []}
        wide = [group(f"a:b/Wide.Case{i:03d}", "every host of the SKU", ["h1", "h2", "h3", "h4"]) for i in range(520)]
        one = [group(f"a:b/Board.Case{i}", "one host", [f"h{i % 4 + 1}"]) for i in range(5)]
        d = dict(data(), new=wide + one, problems=wide + one)
        page = fleet_report.render_html(d)
        for g in one:
            self.assertTrue(f"<code>{g['case']}</code>" in page, f"{g['case']} is not on the page")
        self.assertEqual(page.count("<code>a:b/Wide.Case"), fleet_report.MAX_ROWS_SHOWN - 5)
        self.assertIn("25 more not shown here", page)
        self.assertEqual(d["new"], wide + one)  # the data (--json) keeps its order


if __name__ == "__main__":
    unittest.main()
