"""The fleet, for real: a one-node Slurm cluster (munge, slurmctld, slurmd with a GPU GRES on
/dev/null) and a PostgreSQL server, both started here in temporary folders and stopped by pid;
`fleet submit` of a bundle of the harness's CPU self-test binary (its GPU cases NotSupported),
`fleet status`, a run whose history upload failed and is imported later, and the fleet report.
The report's grouping (every host of a SKU / one host), coverage loss and brackets are checked on
synthetic runs against both backends, SQLite and PostgreSQL.

The PostgreSQL half needs Debian's python3-psycopg2, which only Debian's /usr/bin/python3 sees:
under another interpreter this file re-executes itself with /usr/bin/python3. A daemon that cannot
start skips its tests with the reason."""

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.fleet.fleet_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

if __name__ == "__main__":
    from reports import interpreter
    interpreter.reexec_if_missing("psycopg2", __file__, ROOT)

from reports import history
from reports import model
from tools.fleet import daemons
from tools.fleet import fleet
from tools.fleet import report as fleet_report

X = "suites/x:x_test/X.DriverBug"
Y = "suites/x:x_test/X.BadBoard"
M = "suites/x:x_test/X.Mapped"
P = "suites/x:x_test/X.Plain"


def run_of(host, driver, statuses, gpu="NVIDIA H200"):
    cases = [model.Case.from_raw("//suites/x:x_test", "X", n, s, 0.1, "boom" if s == "FAIL" else "") for n, s in statuses.items()]
    return model.Run({"host": host, "nvidia_driver": driver, "gpu0_name": gpu}, cases)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def call(fn, argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = fn(argv)
    return rc, out.getvalue(), err.getvalue()


_pg = None


def postgres():
    """One PostgreSQL server for the whole file (started on first use, stopped at exit)."""
    global _pg
    if _pg is None:
        try:
            import psycopg2  # noqa: F401
        except ImportError:
            _pg = f"{sys.executable} cannot import psycopg2 (Debian python3-psycopg2)"
        else:
            try:
                _pg = daemons.PostgresServer().start()
            except daemons.Unavailable as e:
                _pg = f"PostgreSQL cannot start here: {e}"
    if isinstance(_pg, str):
        raise unittest.SkipTest(_pg)
    return _pg


def tearDownModule():
    if _pg is not None and not isinstance(_pg, str):
        _pg.stop()


_dbs = [0]


def new_pg_database():
    pg = postgres()
    _dbs[0] += 1
    name = f"fleet{_dbs[0]}"
    admin = history.connect(pg.url, migrate=False)
    admin.execute(f"CREATE DATABASE {name}")
    admin.close()
    return pg.url.replace("postgresql:///postgres", f"postgresql:///{name}")


class ReportOnBackend:
    """Synthetic nights: 3 H200 hosts and 2 A100 hosts."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.target = self.new_target()
        self.db = history.connect(self.target)
        # Earlier nights: everything passed on driver 575, then 580 arrived on the H200s.
        for night, driver in [("2026-11-27", "575.1"), ("2026-11-28", "575.1"), ("2026-11-29", "580.1")]:
            for h in ("h200-a", "h200-b", "h200-c"):
                st = {X: "PASS", Y: "PASS", M: "PASS", P: "PASS"}
                if driver == "580.1":
                    st[X] = "FAIL"
                self.store(f"{night}_{h}", f"{night}T01:00:00", h, driver, st, "nvidia-h200", "older")
        night = "2026-11-30"
        for i, h in enumerate(("h200-a", "h200-b", "h200-c")):
            st = {X: "FAIL", Y: "FAIL" if h == "h200-b" else "PASS", M: "PASS", P: "PASS"}
            if h == "h200-c":
                st[M] = "NOT_SUPPORTED"  # coverage lost on one host: M passed on the others
                del st[P]                # and P is absent there
            self.store(f"{night}_{h}", f"{night}T01:0{i}:00", h, "580.1", st, "nvidia-h200", "nightly-1130",
                       report=os.path.join(self.tmp, h, "index.html"))
        for h in ("a100-a", "a100-b"):
            self.store(f"{night}_{h}", f"{night}T02:00:00", h, "575.1", {X: "PASS", Y: "PASS", M: "PASS", P: "PASS"},
                       "nvidia-a100", "nightly-1130", gpu="NVIDIA A100")
        # A host that ran twice tonight: only the later run counts.
        self.store(f"{night}_a100-a-rerun", f"{night}T03:00:00", "a100-a", "575.1",
                   {X: "PASS", Y: "PASS", M: "PASS", P: "PASS"}, "nvidia-a100", "nightly-1130", gpu="NVIDIA A100")

    def tearDown(self):
        self.db.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def store(self, key, started, host, driver, statuses, sku, label, report=None, gpu="NVIDIA H200",
              comparison=None):
        verdict = "REGRESSIONS" if "FAIL" in statuses.values() and not comparison else "QUALIFIED"
        history.store(self.db, key, started, run_of(host, driver, {k.split(".")[-1]: v for k, v in statuses.items()}, gpu),
                      {f"suites/x:x_test/X.{k}": v for k, v in (comparison or {}).items()} or None,
                      sku, "commit-" + driver, 3 if verdict != "QUALIFIED" else 0, verdict,
                      label=label, tier="full", report=report)

    def data(self):
        return fleet_report.fleet_data(self.db, label="nightly-1130")

    def test_every_host_of_the_sku_is_told_apart_from_one_host(self):
        d = self.data()
        self.assertEqual(d["hosts"], 5)
        probs = {(g["case"], g["sku"]): g for g in d["problems"]}
        self.assertEqual(set(probs), {(X, "nvidia-h200"), (Y, "nvidia-h200")})
        self.assertEqual(probs[(X, "nvidia-h200")]["scope"], "every host of the SKU")
        self.assertEqual(probs[(X, "nvidia-h200")]["hosts"], ["h200-a", "h200-b", "h200-c"])
        self.assertEqual(probs[(Y, "nvidia-h200")]["scope"], "one host")
        self.assertEqual(probs[(Y, "nvidia-h200")]["hosts"], ["h200-b"])
        self.assertEqual(d["problems"][0]["case"], X)  # SKU-wide first

    def test_verdict_matrix_is_sku_by_driver_with_the_latest_run_per_host(self):
        d = self.data()
        cells = {(c["sku"], c["driver"]): c for c in d["matrix"]}
        self.assertEqual(set(cells), {("nvidia-h200", "580.1"), ("nvidia-a100", "575.1")})
        self.assertEqual(cells[("nvidia-h200", "580.1")]["verdicts"], {"REGRESSIONS": 3})
        self.assertEqual(cells[("nvidia-a100", "575.1")]["verdicts"], {"QUALIFIED": 2})
        a100a = [r for r in d["runs"] if r["host"] == "a100-a"][0]
        self.assertEqual((a100a["run_key"], a100a["replaced_runs"]), ("2026-11-30_a100-a-rerun", 1))

    def test_coverage_lost_names_the_host_and_its_cases(self):
        lost = self.data()["coverage_lost"]
        self.assertEqual([(c["host"], c["lost"]) for c in lost], [("h200-c", 2)])
        self.assertEqual(sorted((x["case"], x["status"]) for x in lost[0]["cases"]),
                         [(M, "NOT_SUPPORTED"), (P, "ABSENT")])

    def test_bracket_is_the_last_pass_and_first_failure_of_the_sku(self):
        b = {(x["case"], x["sku"]): x for x in self.data()["brackets"]}
        x = b[(X, "nvidia-h200")]
        self.assertEqual((x["good"]["started_at"][:10], x["good"]["driver"]), ("2026-11-28", "575.1"))
        self.assertEqual((x["bad"]["started_at"][:10], x["bad"]["driver"]), ("2026-11-29", "580.1"))

    def test_the_bracket_of_a_one_host_problem_is_that_hosts_own(self):
        # Y fails on h200-b alone tonight and passes on h200-a and h200-c: the pair to compare is
        # h200-b's own last pass (the night before), not another host's pass tonight.
        y = {(x["case"], x["sku"]): x for x in self.data()["brackets"]}[(Y, "nvidia-h200")]
        self.assertEqual((y["good"]["host"], y["good"]["started_at"][:10], y["good"]["run_key"]),
                         ("h200-b", "2026-11-29", "2026-11-29_h200-b"))
        self.assertEqual((y["bad"]["host"], y["bad"]["run_key"]), ("h200-b", "2026-11-30_h200-b"))

    def test_html_is_self_contained_and_links_each_host_report(self):
        out = os.path.join(self.tmp, "fleet", "index.html")
        os.makedirs(os.path.dirname(out))
        jpath = os.path.join(self.tmp, "fleet.json")
        rc, o, e = call(fleet.main, ["report", "--history", self.target, "--label", "nightly-1130",
                                     "--html", out, "--json", jpath])
        self.assertEqual(rc, 3, e)  # hosts regressed: a CI job can gate on it
        self.assertIn("5 hosts", o)
        page = read(out)
        for bad in ("<script src", "<link", "http://", "https://", "@import"):
            self.assertNotIn(bad, page)
        self.assertIn('href="../h200-a/index.html"', page)
        self.assertIn("every host of the SKU", page)
        with open(jpath) as f:
            self.assertEqual(json.load(f)["hosts"], 5)

    def test_the_report_creates_the_folders_of_its_outputs(self):
        # docs/fleet.md's command failed with exit 2 where OUT did not exist (ux review finding 10).
        html = os.path.join(self.tmp, "new", "deeper", "index.html")
        jpath = os.path.join(self.tmp, "other", "fleet.json")
        rc, _, e = call(fleet.main, ["report", "--history", self.target, "--label", "nightly-1130",
                                     "--html", html, "--json", jpath])
        self.assertEqual(rc, 3, e)
        self.assertTrue(os.path.isfile(html) and os.path.isfile(jpath))
        self.assertIn("<meta name='viewport' content='width=device-width'>", read(html))
        blocked = os.path.join(self.tmp, "a-file")
        with open(blocked, "w") as f:
            f.write("x")
        rc, _, e = call(fleet.main, ["report", "--history", self.target, "--label", "nightly-1130",
                                     "--html", os.path.join(blocked, "index.html")])
        self.assertEqual(rc, 2, e)
        self.assertIn(f"cannot write {os.path.join(blocked, 'index.html')}", e)

    def test_a_real_h200_run_directory_appears_in_the_report(self):
        src = os.path.join(ROOT, "baselines", "nvidia-h200", "results.json")
        if not os.path.exists(src):
            self.skipTest(f"{src} is not in this tree")
        d = os.path.join(self.tmp, "h200-run")
        os.makedirs(d)
        shutil.copy(src, os.path.join(d, "results.json"))
        with open(src) as f:
            ref = json.load(f)
        info = ref["info"]
        rc, out, err = call(history.main, ["--db", self.target, "import", d])
        self.assertEqual(rc, 0, err)
        # A run qualified without --label (as the H200 baseline of 2025571,
        # 2026-12-02, was) is found by its night.
        if info["label"]:
            data = fleet_report.fleet_data(self.db, label=info["label"])
        else:
            data = fleet_report.fleet_data(self.db, night=history.night_of(info["started_at"]))
        self.assertEqual([(r["run_key"], r["sku"], r["driver"], r["verdict"]) for r in data["runs"]],
                         [(info["run_key"], "nvidia-h200", "580.159.04", info["verdict"])])
        self.assertEqual(data["runs"][0]["n_cases"], len(ref["run"]["cases"]))
        self.assertIn(info["run_key"], fleet_report.render_html(data))

    def test_the_committed_h200_run_folders_import_and_appear_in_the_night_report(self):
        # reports/testdata/runs/h200-{reference,second}: two real qualify runs of one H200 host,
        # the same night. Imported with the CLI, the later one is the host's row and names the
        # earlier one it replaces; its link points at its own report (here a stand-in page: the
        # import only asks whether the folder has one).
        src = os.path.join(ROOT, "reports", "testdata", "runs")
        dirs, infos = [], []
        for name in ("reference", "second"):
            if not os.path.exists(os.path.join(src, f"h200-{name}", "results.json")):
                self.skipTest(f"{src}/h200-{name} is not in this tree")
            d = os.path.join(self.tmp, "runs", name)
            os.makedirs(d)
            shutil.copy(os.path.join(src, f"h200-{name}", "results.json"), d)
            with open(os.path.join(d, "index.html"), "w", encoding="utf-8") as f:
                f.write("<!doctype html><title>stand-in</title>\n")
            with open(os.path.join(d, "results.json")) as f:
                res = json.load(f)
            dirs.append(d)
            infos.append((res["info"], res["run"]["fingerprint"], len(res["run"]["cases"]), d))
        rc, out, err = call(history.main, ["--db", self.target, "import", *dirs])
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count("imported: "), 2, out)
        (old, _, _, _), (new, fp, n_cases, new_dir) = sorted(infos, key=lambda x: x[0]["started_at"])
        data = fleet_report.fleet_data(self.db, night=new["started_at"][:10])
        row = [r for r in data["runs"] if r["host"] == fp["host"]]
        self.assertEqual([(r["run_key"], r["sku"], r["driver"], r["verdict"], r["label"], r["n_cases"],
                           r["replaced_keys"]) for r in row],
                         [(new["run_key"], new["sku"], fp["nvidia_driver"], new["verdict"], new["label"], n_cases,
                           [old["run_key"]])])
        self.assertEqual(row[0]["report"], os.path.join(new_dir, "index.html"))
        fleet_dir = os.path.join(self.tmp, "fleet")
        page = fleet_report.render_html(data, fleet_dir)
        self.assertIn('href="../runs/second/index.html"', page)
        self.assertIn(old["run_key"], page)
        # Its failing cases are grouped under the host's SKU.
        with open(os.path.join(new_dir, "results.json")) as f:
            res = json.load(f)
        want = {c["id"] for c in res["run"]["cases"] if c["status"] in history.FAILING}
        got = {g["case"] for g in data["problems"] if g["sku"] == new["sku"] and fp["host"] in g["hosts"]}
        self.assertTrue(want, "the committed run has failing cases")
        self.assertLessEqual(want, got)

    def test_a_roster_host_without_a_run_is_missing_and_fails_the_report(self):
        history.store_roster(self.db, "nightly-1130", "2026-11-30", [
            {"host": h, "sku": "nvidia-h200", "state": "expected", "job_id": "7"} for h in ("h200-a", "h200-b", "h200-c", "h200-d")]
            + [{"host": "h200-e", "sku": "nvidia-h200", "state": "excluded", "reason": "drained (bad fan)"}])
        d = fleet_report.fleet_data(self.db, label="nightly-1130", slurm_reasons={"h200-d": "NODE_FAIL"})
        self.assertEqual(d["roster"], 5)
        self.assertEqual([(m["host"], m["reason"]) for m in d["missing"]],
                         [("h200-d", "no run stored; Slurm: NODE_FAIL"),
                          ("h200-e", "excluded at submit: drained (bad fan)")])
        sku = {x["sku"]: x for x in d["per_sku"]}["nvidia-h200"]
        self.assertEqual((sku["reported"], sku["product"], sku["infra"]), (3, 3, 2))
        page = fleet_report.render_html(d)
        self.assertIn("Missing hosts", page)
        self.assertIn("NODE_FAIL", page)
        # Every H200 regressed too: 3 wins over 5.
        self.assertEqual(fleet_report.exit_code(d), 3)
        self.assertEqual(fleet_report.exit_code({"regressed_hosts": [], "missing": d["missing"]}), 5)

    def test_a_node_whose_hostname_is_not_its_slurm_name_is_not_missing(self):
        # The task imports with --host <its Slurm node name>; the machine calls itself by its
        # fully qualified name, which the fingerprint keeps.
        history.store_roster(self.db, "fqdn", "2026-11-30", [{"host": "n1", "sku": "nvidia-h200", "state": "expected"}])
        d = os.path.join(self.tmp, "runs", "n1", "fqdn-run")
        os.makedirs(d)
        with open(os.path.join(d, "results.json"), "w") as f:
            json.dump({"info": {"run_key": "fqdn-run", "started_at": "2026-11-30T01:00:00+00:00", "sku": "nvidia-h200",
                                "label": "fqdn", "tier": "bat", "verdict": "QUALIFIED", "exit_code": 0},
                       "run": run_of("n1.lab.example.org", "580.1", {"DriverBug": "PASS"}).to_json()}, f)
        rc, out, err = call(history.main, ["--db", self.target, "import", "--host", "n1", "--night", "2026-11-30", d])
        self.assertEqual(rc, 0, err)
        d = fleet_report.fleet_data(self.db, label="fqdn")
        self.assertEqual(([r["host"] for r in d["runs"]], d["missing"], fleet_report.exit_code(d)), (["n1"], [], 0))

    def test_the_night_merges_the_rosters_of_its_labels_per_host(self):
        # n2 was drained for `nightly`, then resumed and qualified under `nightly-rerun-n2` the same
        # night: the night has 2 hosts, none missing.
        history.store_roster(self.db, "nightly", "2026-12-01", [
            {"host": "n1", "sku": "nvidia-h200", "state": "expected", "job_id": "1"},
            {"host": "n2", "sku": "nvidia-h200", "state": "excluded", "reason": "drained (bad fan)"}])
        history.store_roster(self.db, "nightly-rerun-n2", "2026-12-01", [
            {"host": "n2", "sku": "nvidia-h200", "state": "expected", "job_id": "2"}])
        for host, label in (("n1", "nightly"), ("n2", "nightly-rerun-n2")):
            self.store(f"1201_{host}", "2026-12-01T01:00:00", host, "580.1", {X: "PASS"}, "nvidia-h200", label)
        d = fleet_report.fleet_data(self.db, night="2026-12-01")
        self.assertEqual((d["roster"], d["missing"], fleet_report.exit_code(d)), (2, [], 0))
        # Excluded under both labels of a night, and no run: missing, once.
        for label in ("nightly-2", "nightly-2-rerun"):
            history.store_roster(self.db, label, "2026-12-02", [
                {"host": "n2", "sku": "nvidia-h200", "state": "excluded", "reason": "drained (bad fan)"}])
        self.store("1202_n1", "2026-12-02T01:00:00", "n1", "580.1", {X: "PASS"}, "nvidia-h200", "nightly-2")
        d = fleet_report.fleet_data(self.db, night="2026-12-02")
        self.assertEqual((d["roster"], [m["host"] for m in d["missing"]]), (1, ["n2"]))

    def test_a_requeued_attempt_supersedes_the_interrupted_one_and_the_night_counts_attempts(self):
        history.store_roster(self.db, "requeue", "2026-11-30", [{"host": "n9", "state": "expected"}])
        statuses = {X: "PASS", Y: "PASS"}
        history.store(self.db, "n9-attempt1", "2026-11-30T02:00:00", run_of("n9", "580.1", {"DriverBug": "PASS"}),
                      None, "nvidia-h200", "c", 7, "INTERRUPTED", label="requeue")
        d = fleet_report.fleet_data(self.db, label="requeue")
        self.assertIn("interrupted after 1 cases (attempt 1", d["missing"][0]["reason"])
        # The requeued attempt is stored later, though its host's clock says earlier.
        history.store(self.db, "n9-attempt2", "2026-11-30T01:00:00", run_of("n9", "580.1", statuses),
                      None, "nvidia-h200", "c", 0, "QUALIFIED", label="requeue")
        d = fleet_report.fleet_data(self.db, label="requeue")
        self.assertEqual([(r["host"], r["run_key"], r["attempts"]) for r in d["runs"]], [("n9", "n9-attempt2", 2)])
        self.assertEqual((d["missing"], fleet_report.exit_code(d)), ([], 0))

    def test_known_failures_are_apart_from_new_regressions_with_message_and_link(self):
        self.store("2026-11-30_a100-known", "2026-11-30T04:00:00", "a100-b", "575.1",
                   {X: "PASS", Y: "PASS", M: "PASS", P: "FAIL"}, "nvidia-a100", "nightly-1130", gpu="NVIDIA A100",
                   report=os.path.join(self.tmp, "a100-b", "index.html"), comparison={P.split(".")[-1]: "EXPECTED_FAIL"})
        d = self.data()
        self.assertEqual([(g["case"], g["sku"]) for g in d["known"]], [(P, "nvidia-a100")])
        self.assertEqual(sorted(g["case"] for g in d["new"]), sorted([X, Y]))
        self.assertEqual(d["known"][0]["message"], "boom")
        self.assertNotIn(P, [b["case"] for b in d["brackets"]])  # nothing to bisect for a known failure
        page = fleet_report.render_html(d, self.tmp)
        new_at, known_at = page.index("<h2>New regressions</h2>"), page.index("<h2>Known failures (expected)</h2>")
        self.assertLess(new_at, known_at)
        self.assertIn("a100-b/index.html#case=" + P.replace("/", "%2F").replace(":", "%3A"), page[known_at:])
        self.assertNotIn(P, page[new_at:known_at])

    def test_a_host_failing_on_its_own_night_after_night_is_recommended_for_a_drain(self):
        # h200-b failed Y alone on 11-30; give it the same own failure on two earlier nights.
        for night in ("2026-11-26", "2026-11-29"):  # the night before tonight among them
            for h in ("h200-a", "h200-b", "h200-c"):
                st = {X: "PASS", Y: "FAIL" if h == "h200-b" else "PASS", M: "PASS", P: "PASS"}
                self.store(f"{night}_{h}_own", f"{night}T01:30:00", h, "575.1", st, "nvidia-h200", f"n-{night}")
        health = {h["host"]: h for h in self.data()["health"]}
        self.assertEqual(health["h200-b"]["own_failure_nights"], 3)
        self.assertTrue(health["h200-b"]["drain"])
        self.assertIn("scontrol update nodename=h200-b state=drain", health["h200-b"]["advice"])

    def test_the_bracket_of_a_case_that_never_passed_reads_no_run_walk(self):
        # A case new tonight and failing everywhere: no pass in case_nights, so no walk at all.
        self.store("2026-11-30_new", "2026-11-30T05:00:00", "h200-a", "580.1",
                   {"Brandnew": "FAIL"}, "nvidia-h200", "nightly-1130")
        b = {x["case"]: x for x in self.data()["brackets"]}
        name = "suites/x:x_test/X.Brandnew"
        self.assertIsNone(b[name]["good"])
        self.assertEqual(b[name]["bad"]["run_key"], "2026-11-30_new")

    def test_the_night_selects_like_the_label_and_an_empty_night_exits_four(self):
        self.assertEqual(fleet_report.fleet_data(self.db, night="2026-11-30")["hosts"], 5)
        rc, _, e = call(fleet.main, ["report", "--history", self.target, "--night", "2020-01-01"])
        self.assertEqual(rc, fleet.EXIT_EMPTY)
        self.assertIn("no run for night 2020-01-01", e)
        rc, _, e = call(fleet.main, ["report", "--history", os.path.join(self.tmp, "none.sqlite"), "--night", "2026-11-30"])
        self.assertEqual(rc, fleet.EXIT_USAGE)
        self.assertIn("no such database", e)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "none.sqlite")))
        newer = os.path.join(self.tmp, "newer.sqlite")
        db = history.connect(newer)
        db.execute("PRAGMA user_version = 9")
        db.close()
        rc, _, e = call(fleet.main, ["report", "--history", newer, "--night", "2026-11-30"])
        self.assertEqual(rc, fleet.EXIT_USAGE, e)  # the same code as history.py gives
        self.assertIn("newer than this pagelock", e)
        rc, _, e = call(fleet.main, ["report", "--history", self.target, "--night", "30.11.2026"])
        self.assertEqual(rc, fleet.EXIT_USAGE)
        self.assertIn("expected YYYY-MM-DD", e)


class SqliteReportTest(ReportOnBackend, unittest.TestCase):
    def new_target(self):
        return os.path.join(self.tmp, "history.sqlite")


class PostgresReportTest(ReportOnBackend, unittest.TestCase):
    def new_target(self):
        return new_pg_database()


class InterpreterTest(unittest.TestCase):
    """fleet.py started by a python3 with jinja2 but without psycopg2 (pyenv, a venv) re-executes
    itself, before any work, under one that has both ($PAGELOCK_PYTHON here) when its history is
    a postgresql:// URL: --history, $PAGELOCK_HISTORY, or status's SHARED/<label>/history.url. No
    server is needed: the stand-in psycopg2 cannot connect, and says so."""

    URL = "postgresql:///postgres?host=/nonexistent"

    def setUp(self):
        from reports import testsupport
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.env, self.log = testsupport.python_with_fake_psycopg2(self.tmp)

    def fleet(self, *argv, **env):
        import subprocess
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "fleet", "fleet.py"), *argv],
                           capture_output=True, text=True, env=dict(self.env, **env), timeout=120)
        self.assertNotIn("Traceback", p.stderr)
        return p.returncode, p.stderr

    def starts(self):
        if not os.path.exists(self.log):
            return 0
        with open(self.log) as f:
            return len([line for line in f.read().splitlines() if not line.startswith("-c ")])

    def test_a_postgresql_history_reexecutes_under_the_python_that_has_psycopg2(self):
        shared = os.path.join(self.tmp, "shared")
        os.makedirs(os.path.join(shared, "n1"))
        with open(os.path.join(shared, "n1", "fleet.json"), "w") as f:
            json.dump({"label": "n1"}, f)
        with open(os.path.join(shared, "n1", "history.url"), "w") as f:
            f.write(self.URL + "\n")
        for argv, env in ((["report", "--history", self.URL, "--label", "n1"], {}),
                          (["report", "--label", "n1"], {"PAGELOCK_HISTORY": self.URL}),
                          (["status", "--shared", shared, "--label", "n1"], {})):
            rc, err = self.fleet(*argv, **env)
            self.assertEqual(rc, fleet.EXIT_FAIL, (argv, err))
            self.assertIn("cannot connect: fake psycopg2 of the test", err, argv)
        self.assertEqual(self.starts(), 3)

    def test_a_sqlite_history_looks_for_no_other_python(self):
        target = os.path.join(self.tmp, "h.sqlite")
        history.connect(target).close()
        rc, err = self.fleet("report", "--history", target, "--label", "n1")
        self.assertEqual(rc, fleet.EXIT_EMPTY, err)
        self.assertFalse(os.path.exists(self.log), "a SQLite history probed or started $PAGELOCK_PYTHON")


def fake_binary():
    for cand in [os.environ.get("PAGELOCK_FAKE_GTEST", ""),
                 os.path.join(os.environ.get("TEST_SRCDIR", ""), "pagelock", "tools", "runner", "fake_gtest"),
                 os.path.join(ROOT, "bazel-bin", "tools", "runner", "fake_gtest")]:
        if cand and os.path.exists(cand):
            return cand
    raise unittest.SkipTest("fake_gtest binary not found (run under bazel test, build //tools/runner:fake_gtest, "
                            "or set PAGELOCK_FAKE_GTEST)")


class FakeSinfo:
    def __init__(self, text):
        self.text = text

    def __call__(self, argv, timeout=60, env=None):
        import subprocess
        return subprocess.CompletedProcess(argv, 0, self.text, "")


class Args:
    def __init__(self, **kw):
        self.partition = kw.get("partition")
        self.constraint = kw.get("constraint")
        self.gres = kw.get("gres")


class SelectionTest(unittest.TestCase):
    """The roster's selection, without a cluster: sinfo's lines as Slurm 22.05 prints them."""
    SINFO = ("n1|nvidia-h200|gpu:h200:1(S:0)|gpu*|idle|none\n"
             "n1|nvidia-h200|gpu:h200:1(S:0)|debug|idle|none\n"
             "n2|nvidia-h200|gpu:h200:1|gpu*|drained|bad fan\n"
             "n3|nvidia-a100,ib|gpu:a100:2|gpu*|mixed|none\n"
             "n4|nvidia-h200|gpu:h200:1|gpu*|down*|Not responding\n"
             "n5|nvidia-h200,ib|gpu:h200:4(S:0-1)|gpu*|allocated|none\n")

    def select(self, **kw):
        return fleet.select_nodes(Args(**kw), run=FakeSinfo(self.SINFO))

    def test_drained_and_down_nodes_are_excluded_and_listed_with_the_reason(self):
        targets, excluded = self.select(constraint="nvidia-h200")
        self.assertEqual([n["host"] for n in targets], ["n1", "n5"])  # n1 once, though in two partitions
        self.assertEqual([(n["host"], n["reason"]) for n in excluded],
                         [("n2", "drained (bad fan)"), ("n4", "down* (Not responding)")])

    def test_a_constraint_expression_is_evaluated_over_each_nodes_features(self):
        hosts = lambda c: [n["host"] for n in self.select(constraint=c)[0]]  # noqa: E731
        self.assertEqual(hosts("nvidia-h200&ib"), ["n5"])  # not the A100 node with ib
        self.assertEqual(hosts("nvidia-h200|nvidia-a100"), ["n1", "n3", "n5"])
        self.assertEqual(hosts("ib"), ["n3", "n5"])
        # Slurm evaluates left to right, without precedence: (a100 | h200) & ib.
        self.assertEqual(hosts("nvidia-a100|nvidia-h200&ib"), ["n3", "n5"])
        self.assertEqual(hosts("nvidia-h200&nvidia-a100"), [])
        for bad in ("[nvidia-h200|ib]", "nvidia-h200*2", "(nvidia-h200|ib)&ib", "!ib", "nvidia-h200,ib",
                    "nvidia-h200&&ib", "nvidia-h200&", "|ib", "nvidia h200"):
            with self.assertRaises(fleet.UsageError, msg=bad) as e:
                self.select(constraint=bad)
            self.assertIn("--constraint", str(e.exception))
            self.assertIn("features joined by & (and) or | (or)", str(e.exception))

    def test_a_constraint_this_tool_cannot_evaluate_is_bad_usage_before_anything_is_submitted(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        with open(os.path.join(tmp, "manifest.json"), "w") as f:
            f.write("{}")
        rc, out, err = call(fleet.main, ["submit", "--bundle", tmp, "--shared", tmp, "--label", "x",
                                         "--history", os.path.join(tmp, "h.sqlite"), "--constraint", "[a|b]*2"])
        self.assertEqual(rc, fleet.EXIT_USAGE, err)
        self.assertIn("--constraint '[a|b]*2'", err)
        self.assertEqual(os.listdir(tmp), ["manifest.json"])  # nothing staged, no history

    def test_untyped_gres_and_the_gres_count_are_honoured(self):
        self.assertEqual([n["host"] for n in self.select(gres="gpu:1")[0]], ["n1", "n3", "n5"])
        self.assertEqual([n["host"] for n in self.select(gres="gpu:2")[0]], ["n3", "n5"])
        self.assertEqual([n["host"] for n in self.select(gres="gpu:h200:2")[0]], ["n5"])
        self.assertEqual([n["host"] for n in self.select(gres="gpu:a100")[0]], ["n3"])
        self.assertEqual(fleet.parse_gres("gpu:h200:2"), ("h200", 2))
        self.assertEqual(fleet.parse_gres("gpu:1"), (None, 1))
        with self.assertRaises(fleet.UsageError):
            fleet.parse_gres("h200")

    def test_a_url_with_a_password_and_sqlite_on_nfs_are_refused(self):
        with self.assertRaises(fleet.UsageError) as e:
            fleet.check_history_target("postgresql:///fleet?host=/s&password=S3cretQ")
        self.assertIn("PGPASSFILE", str(e.exception))
        self.assertNotIn("S3cretQ", str(e.exception))
        fleet.check_history_target("postgresql:///fleet?service=lab")
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("server:/export /lab nfs4 rw 0 0\n/dev/sda1 / ext4 rw 0 0\n")
        try:
            with self.assertRaises(fleet.UsageError) as e:
                fleet.check_history_target("/lab/fleet/history.sqlite", mounts=f.name)
            self.assertIn("network file system (nfs4)", str(e.exception))
            fleet.check_history_target("/var/tmp/history.sqlite", mounts=f.name)
        finally:
            os.unlink(f.name)

    def test_the_job_script_runs_under_bash_4_2_rules(self):
        script = fleet.JOB_SCRIPT.format(stage="/s", runs="/r", python="/usr/bin/python3", node="n1",
                                         night="2026-11-30", history_file="/h", bundle="/b", retries=0,
                                         label="l", tier="bat", seed="", allow_no_gpu="", extra="", retry_pause=1)
        import subprocess
        self.assertEqual(subprocess.run(["bash", "-n"], input=script, text=True).returncode, 0)
        code = "\n".join(ln for ln in script.splitlines() if not ln.lstrip().startswith("#"))
        for newer in ("mapfile -d", "${x@", "declare -n", "wait -n"):
            self.assertNotIn(newer, code)
        # Every expansion of the array is behind a count check (set -u fails on an empty one < 4.4).
        body = script.split("dirs=()")[1]
        self.assertIn('if [ ${#dirs[@]} -gt 0 ]', body.split('"${dirs[@]}"')[0])
        self.assertNotIn("$PAGELOCK_HISTORY\"", script.replace('export PAGELOCK_HISTORY', ''))  # never in argv


def wait_for(pred, timeout, step=0.5):
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


class SlurmFleetTest(unittest.TestCase):
    """A real three-node Slurm cluster on this machine (n1, n2: H200; n3: A100; one slurmd each,
    in its own UTS namespace), PostgreSQL, and a bundle whose test binary passes, fails or hangs as
    a per-node file asks. The four ways a host gets lost (its node dies mid-run, it is drained,
    two nights at once, its task is cancelled) each give a non-zero status and a MISSING host
    with Slurm's reason in the report."""
    NODES = [("n1", "h200", "nvidia-h200"), ("n2", "h200", "nvidia-h200"), ("n3", "a100", "nvidia-a100")]

    @classmethod
    def setUpClass(cls):
        cls.binary = fake_binary()
        cls.url = new_pg_database()
        try:
            cls.slurm = daemons.SlurmCluster(nodes=cls.NODES).start()
        except daemons.Unavailable as e:
            raise unittest.SkipTest(f"Slurm cannot start here: {e}")
        cls.saved = {k: os.environ.get(k) for k in ("SLURM_CONF", "PATH")}
        os.environ["SLURM_CONF"] = cls.slurm.env["SLURM_CONF"]
        os.environ["PATH"] = cls.slurm.env["PATH"]

    @classmethod
    def tearDownClass(cls):
        cls.slurm.stop()
        for k, v in cls.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def setUp(self):
        # Under /tmp, not TEST_TMPDIR: slurmd's job steps write here.
        self.tmp = tempfile.mkdtemp(prefix="pagelock-fleet-", dir="/tmp")
        self.bundle = os.path.join(self.tmp, "bundle")
        self.modes = os.path.join(self.tmp, "modes")
        os.makedirs(self.bundle)
        os.makedirs(self.modes)
        shutil.copy(self.binary, os.path.join(self.bundle, "fake_gtest"))
        wrapper = os.path.join(self.bundle, "fake.sh")
        with open(wrapper, "w") as f:  # the node's mode: pass (empty), fail or hang
            f.write(f"#!/bin/sh\nPAGELOCK_FAKE_MODE=\"$(cat {self.modes}/$(hostname -s) 2>/dev/null)\"\n"
                    f"export PAGELOCK_FAKE_MODE\nexec {self.bundle}/fake_gtest \"$@\"\n")
        os.chmod(wrapper, 0o755)
        with open(os.path.join(self.bundle, "manifest.json"), "w") as f:
            json.dump({"info": {"commit": "fleet-test"}, "targets": [{
                "label": "//selftest:fake_gtest", "path": "fake.sh", "timeout_s": 300,
                "tags": ["gpu", "tier_bat"]}]}, f)
        self.exp = os.path.join(self.tmp, "expectations")
        os.makedirs(self.exp)
        self.shared = os.path.join(self.tmp, "shared")
        for n, _, _ in self.NODES:
            self.slurm.scontrol("update", f"nodename={n}", "state=resume")
        self.assertTrue(wait_for(lambda: all(self.slurm.node_state(n) == "idle" for n, _, _ in self.NODES), 60),
                        [self.slurm.node_state(n) for n, _, _ in self.NODES])

    def tearDown(self):
        self.slurm._run("scancel", "--full", "-u", "root")
        wait_for(lambda: not self.slurm._run("squeue", "-h").stdout.strip(), 30)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def mode(self, node, mode):
        with open(os.path.join(self.modes, node), "w") as f:
            f.write(mode)

    def submit(self, label, url=None, *extra):
        rc, out, err = call(fleet.main, [
            "submit", "--bundle", self.bundle, "--shared", self.shared, "--history", url or self.url,
            "--label", label, "--night", "2026-11-30", "--tier", "bat", "--seed", "1234", "--retries", "0",
            "--gres", "gpu:1", "--time", "00:05:00", "--allow-no-gpu", "--import-retry-pause", "0",
            *extra, "--", "--expectations", self.exp, "--baseline", "none"])
        self.assertEqual(rc, 0, out + err)
        return [ln for ln in out.splitlines() if ln.strip().isdigit()]

    def jobs(self, label):
        with open(os.path.join(self.shared, label, "fleet.json")) as f:
            return {j["node"]: j["job_id"] for j in json.load(f)["jobs"]}

    def status(self, label, wait=60):
        rc, out, err = call(fleet.main, ["status", "--shared", self.shared, "--label", label, "--wait", str(wait),
                                         "--json"])
        return rc, json.loads(out) if out.strip() else None, err

    def report(self, label):
        jpath = os.path.join(self.tmp, f"{label}.json")
        rc, out, err = call(fleet.main, ["report", "--history", self.url, "--label", label, "--shared", self.shared,
                                         "--json", jpath, "--html", os.path.join(self.tmp, f"{label}.html")])
        with open(jpath) as f:
            return rc, json.load(f), err

    def running(self, job_id, node):
        """The job runs and its qualify has started writing (the run folder exists)."""
        out = self.slurm._run("squeue", "-h", "-j", job_id, "-o", "%T").stdout.strip()
        return out == "RUNNING" and os.path.isdir(os.path.join(self.shared, self.label, "runs", node))

    def logs(self, label):
        d = os.path.join(self.shared, label, "logs")
        return "".join(f"--- {n}\n" + read(os.path.join(d, n)) for n in sorted(os.listdir(d))) if os.path.isdir(d) else ""

    def by_host(self, st):
        return {h["host"]: h for h in st["hosts"]}

    def test_a_night_qualifies_every_node_once_and_keeps_no_secret_in_files(self):
        self.label = "ci-night"
        for n, _, _ in self.NODES:
            self.mode(n, "")
        ids = self.submit("ci-night")
        self.assertEqual(len(ids), 3)
        rc, st, err = self.status("ci-night")
        self.assertEqual(rc, 0, f"{st}\n{err}\n{self.logs('ci-night')}")
        self.assertEqual({h: x["state"] for h, x in self.by_host(st).items()}, {"n1": "DONE", "n2": "DONE", "n3": "DONE"})
        base = os.path.join(self.shared, "ci-night")
        self.assertEqual(os.stat(os.path.join(base, "fleet.json")).st_mode & 0o777, 0o600)
        self.assertEqual(os.stat(os.path.join(base, "history.url")).st_mode & 0o777, 0o600)
        for name in os.listdir(base):
            if name.startswith("job-"):
                self.assertNotIn(self.url, read(os.path.join(base, name)))  # the URL is never in argv
        rc, data, err = self.report("ci-night")
        self.assertEqual(rc, 0, err)
        self.assertEqual((data["hosts"], data["roster"], data["missing"]), (3, 3, []))
        self.assertEqual(sorted(r["host"] for r in data["runs"]), ["n1", "n2", "n3"])
        self.assertIn("--open-mode=append", read(os.path.join(base, "fleet.json")))

    def test_a_drained_node_is_missing_with_its_reason(self):
        self.label = "drained"
        for n, _, _ in self.NODES:
            self.mode(n, "")
        self.slurm.scontrol("update", "nodename=n2", "state=drain", "reason=pagelock-test-bad-fan")
        ids = self.submit("drained")
        self.assertEqual(len(ids), 2)
        rc, st, err = self.status("drained")
        self.assertEqual(rc, fleet.EXIT_FAIL, st)
        hosts = self.by_host(st)
        print(f"\n  drained: status exit {rc}; n2 {hosts['n2']['state']}: {hosts['n2']['detail']}", file=sys.stderr)
        self.assertEqual((hosts["n1"]["state"], hosts["n3"]["state"], hosts["n2"]["state"]), ("DONE", "DONE", "MISSING"))
        self.assertIn("pagelock-test-bad-fan", hosts["n2"]["detail"])
        rc, data, err = self.report("drained")
        self.assertEqual(rc, 5, err)
        self.assertEqual([m["host"] for m in data["missing"]], ["n2"])
        self.assertIn("drain", data["missing"][0]["reason"])
        self.assertIn("MISSING n2", err)

    def test_a_cancelled_task_stores_its_partial_run_and_the_host_is_missing(self):
        self.label = "cancel"
        self.mode("n1", "")
        self.mode("n2", "")
        self.mode("n3", "hang")
        self.submit("cancel")
        job = self.jobs("cancel")["n3"]
        self.assertTrue(wait_for(lambda: self.running(job, "n3"), 60), self.logs("cancel"))
        import time
        time.sleep(3)  # a few cases finish before the hang
        self.slurm._run("scancel", job)
        rc, st, err = self.status("cancel")
        self.assertEqual(rc, fleet.EXIT_FAIL, f"{st}\n{self.logs('cancel')}")
        n3 = self.by_host(st)["n3"]
        print(f"\n  cancelled: status exit {rc}; n3 {n3['state']}: {n3['detail']}", file=sys.stderr)
        self.assertEqual(n3["state"], "MISSING", n3)
        self.assertIn("INTERRUPTED", n3["detail"])
        self.assertIn("CANCELLED", n3["detail"])
        rc, data, err = self.report("cancel")
        self.assertIn(rc, (3, 5), err)
        m = {x["host"]: x for x in data["missing"]}
        self.assertEqual(list(m), ["n3"])
        self.assertIn("interrupted", m["n3"]["reason"])
        self.assertIn("CANCELLED", m["n3"]["reason"])
        # The partial run is stored with the node's name, so the night has 3 hosts, not a host 'None'.
        self.assertEqual(sorted(r["host"] for r in data["runs"]), ["n1", "n2", "n3"])

    def test_two_nights_at_once_never_run_two_tasks_on_a_node(self):
        self.label = "night-a"
        for n, _, _ in self.NODES:
            self.mode(n, "")
        self.mode("n2", "hang")
        self.submit("night-a")
        job_a = self.jobs("night-a")["n2"]
        self.assertTrue(wait_for(lambda: self.running(job_a, "n2"), 60), self.logs("night-a"))
        self.submit("night-b")  # n2 still hangs in night-a
        def others_done():
            self.rc_b, self.st_b, _ = self.status("night-b", wait=0)
            hosts = self.by_host(self.st_b)
            return hosts["n1"]["state"] == hosts["n3"]["state"] == "DONE"
        wait_for(others_done, 40, step=1)
        rc, st = self.rc_b, self.st_b
        hosts = self.by_host(st)
        self.assertNotEqual(rc, 0, st)
        self.assertEqual((hosts["n1"]["state"], hosts["n3"]["state"]), ("DONE", "DONE"), f"{st}\n{self.logs('night-b')}")
        print(f"\n  two nights: status exit {rc}; n2 {hosts['n2']['state']}: {hosts['n2']['detail']}", file=sys.stderr)
        self.assertEqual(hosts["n2"]["state"], "PENDING", hosts["n2"])
        self.assertIn("Dependency", hosts["n2"]["detail"])
        rc, data, err = self.report("night-b")
        self.assertEqual(rc, 5, err)
        self.assertEqual([m["host"] for m in data["missing"]], ["n2"])
        self.assertIn("Dependency", data["missing"][0]["reason"])
        self.assertEqual(sorted(r["host"] for r in data["runs"]), ["n1", "n3"])  # n1 did not run twice

    def test_a_node_that_dies_mid_run_is_missing_with_slurms_reason(self):
        self.label = "node-dies"
        for n, _, _ in self.NODES:
            self.mode(n, "")
        self.mode("n2", "hang")
        self.submit("node-dies")
        job = self.jobs("node-dies")["n2"]
        self.assertTrue(wait_for(lambda: self.running(job, "n2"), 60), self.logs("node-dies"))
        self.slurm.kill_node("n2")
        try:
            rc, st, err = self.status("node-dies", wait=75)
            self.assertEqual(rc, fleet.EXIT_FAIL, f"{st}\n{self.logs('node-dies')}")
            n2 = self.by_host(st)["n2"]
            print(f"\n  node dies: status exit {rc}; n2 {n2['state']}: {n2['detail']}", file=sys.stderr)
            self.assertEqual(n2["state"], "MISSING", n2)
            self.assertIn("no run stored", n2["detail"])
            self.assertRegex(n2["detail"], r"node (down|idle\*|.*not_responding)|NODE_FAIL|requeued")
            rc, data, err = self.report("node-dies")
            self.assertEqual(rc, 5, err)
            self.assertEqual([m["host"] for m in data["missing"]], ["n2"])
            self.assertIn("Slurm:", data["missing"][0]["reason"])
            self.assertEqual(sorted(r["host"] for r in data["runs"]), ["n1", "n3"])  # not n1 twice
        finally:
            self.slurm.start_node("n2")

    def test_a_task_that_cannot_reach_the_history_keeps_its_run_for_a_later_import(self):
        self.label = "lost-link"
        for n, _, _ in self.NODES:
            self.mode(n, "")
        # The roster is stored in the real history; the tasks are given an unreachable one.
        self.submit("lost-link", self.url, "--constraint", "nvidia-a100", "--sbatch-arg=--hold")
        dead = "postgresql:///postgres?host=/nonexistent-pagelock&user=pagelock&connect_timeout=2"
        with open(os.path.join(self.shared, "lost-link", "history.url"), "w") as f:
            f.write(dead)
        self.slurm._run("scontrol", "release", self.jobs("lost-link")["n3"])
        rc, out, err = call(fleet.main, ["status", "--shared", self.shared, "--label", "lost-link", "--wait", "60",
                                         "--history", self.url, "--json"])
        st = json.loads(out)
        self.assertEqual(rc, fleet.EXIT_FAIL, st)
        n3 = self.by_host(st)["n3"]
        self.assertEqual(n3["state"], "MISSING")
        self.assertIn("run folders not in the history", n3["detail"])
        folder = n3["detail"].split("(import them): ")[1].split(",")[0].strip()
        rc, out, err = call(history.main, ["--db", self.url, "import", "--host", "n3", folder])
        self.assertEqual(rc, 0, err)
        rc, out, err = call(fleet.main, ["status", "--shared", self.shared, "--label", "lost-link",
                                         "--history", self.url])
        self.assertEqual(rc, 0, out + err)

    def test_bad_selection_is_a_usage_error(self):
        self.label = "x"
        for argv, words in [(["--bundle", self.tmp], "no manifest.json"),
                            (["--gres", "h200"], "expected gpu, gpu:<n>"),
                            (["--constraint", "nvidia-b200"], "no usable node matches"),
                            (["--tasks", "2"], "--tasks is gone"),
                            (["--history", "postgresql://u:S3cret@/x"], "holds a password")]:
            base = ["submit", "--bundle", self.bundle, "--shared", self.shared, "--history", self.url, "--label", "x"]
            rc, out, err = call(fleet.main, base + argv)
            self.assertEqual(rc, fleet.EXIT_USAGE, argv)
            self.assertIn(words, err)
            self.assertNotIn("S3cret", out + err)
        rc, out, err = call(fleet.main, ["status", "--shared", self.shared, "--label", "never"])
        self.assertEqual(rc, fleet.EXIT_USAGE)
        self.assertNotIn("Traceback", err)

    def test_dry_run_pins_one_job_per_node_that_slurm_cannot_double_up(self):
        self.label = "pn"
        rc, out, err = call(fleet.main, ["submit", "--bundle", self.bundle, "--shared", self.shared,
                                         "--history", self.url, "--label", "pn", "--constraint", "nvidia-h200",
                                         "--dry-run"])
        self.assertEqual(rc, 0, err)
        lines = out.strip().splitlines()
        self.assertEqual(len(lines), 2)
        for node, line in zip(("n1", "n2"), lines):
            for word in (f"--nodelist={node}", f"--job-name=pagelock-node-{node}", "--dependency=singleton",
                         "--open-mode=append", "--constraint=nvidia-h200"):
                self.assertIn(word, line)


if __name__ == "__main__":
    unittest.main()
