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
sys.path.insert(0, ROOT)
if __name__ == "__main__":
    from reports import debian_python  # noqa: E402
    debian_python.reexec_if_missing("psycopg2", __file__, ROOT)

from reports import history  # noqa: E402
from reports import results as model  # noqa: E402
from tools.fleet import daemons  # noqa: E402
from tools.fleet import fleet  # noqa: E402
from tools.fleet import report as fleet_report  # noqa: E402

X = "suites/x:x_test/X.DriverBug"
Y = "suites/x:x_test/X.BadBoard"
M = "suites/x:x_test/X.Mapped"
P = "suites/x:x_test/X.Plain"


def run_of(host, driver, statuses, gpu="NVIDIA H200"):
    cases = [model.Case("//suites/x:x_test", "X", n, s, 0.1, "boom" if s == "FAIL" else "") for n, s in statuses.items()]
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

    def store(self, key, started, host, driver, statuses, sku, label, report=None, gpu="NVIDIA H200"):
        verdict = "REGRESSIONS" if "FAIL" in statuses.values() else "QUALIFIED"
        history.store(self.db, key, started, run_of(host, driver, {k.split(".")[-1]: v for k, v in statuses.items()}, gpu),
                      None, sku, "commit-" + driver, 3 if verdict != "QUALIFIED" else 0, verdict,
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
        y = b[(Y, "nvidia-h200")]
        self.assertEqual(y["good"]["started_at"][:10], "2026-11-30")  # passed on other hosts tonight
        self.assertEqual(y["bad"]["host"], "h200-b")

    def test_html_is_self_contained_and_links_each_host_report(self):
        out = os.path.join(self.tmp, "fleet", "index.html")
        os.makedirs(os.path.dirname(out))
        jpath = os.path.join(self.tmp, "fleet.json")
        rc, o, e = call(fleet.main, ["report", "--history", self.target, "--label", "nightly-1130",
                                     "--html", out, "--json", jpath])
        self.assertEqual(rc, 0, e)
        self.assertIn("5 hosts", o)
        page = read(out)
        for bad in ("<script src", "<link", "http://", "https://", "@import"):
            self.assertNotIn(bad, page)
        self.assertIn('href="../h200-a/index.html"', page)
        self.assertIn("every host of the SKU", page)
        with open(jpath) as f:
            self.assertEqual(json.load(f)["hosts"], 5)

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
        data = fleet_report.fleet_data(self.db, label=info["label"])
        self.assertEqual([(r["run_key"], r["sku"], r["driver"], r["verdict"]) for r in data["runs"]],
                         [(info["run_key"], "nvidia-h200", "580.159.04", info["verdict"])])
        self.assertEqual(data["runs"][0]["n_cases"], len(ref["run"]["cases"]))
        self.assertIn(info["run_key"], fleet_report.render_html(data))

    def test_the_committed_h200_run_folders_import_and_appear_in_the_night_report(self):
        # examples/h200-qualification/{reference,second}: two real qualify runs of one H200 host,
        # the same night. Imported with the CLI, the later one is the host's row and names the
        # earlier one it replaces; its link points at its own committed report.
        src = os.path.join(ROOT, "examples", "h200-qualification")
        dirs, infos = [], []
        for name in ("reference", "second"):
            if not os.path.exists(os.path.join(src, name, "results.json")):
                self.skipTest(f"{src}/{name} is not in this tree")
            d = os.path.join(self.tmp, "runs", name)
            os.makedirs(d)
            for f in ("results.json", "index.html"):
                shutil.copy(os.path.join(src, name, f), d)
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

    def test_the_night_selects_like_the_label_and_an_empty_night_exits_four(self):
        self.assertEqual(fleet_report.fleet_data(self.db, night="2026-11-30")["hosts"], 5)
        rc, _, e = call(fleet.main, ["report", "--history", self.target, "--night", "2020-01-01"])
        self.assertEqual(rc, fleet.EXIT_EMPTY)
        self.assertIn("no run for night 2020-01-01", e)
        rc, _, e = call(fleet.main, ["report", "--history", os.path.join(self.tmp, "none.sqlite"), "--night", "2026-11-30"])
        self.assertEqual(rc, fleet.EXIT_USAGE)
        self.assertIn("no such database", e)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "none.sqlite")))
        rc, _, e = call(fleet.main, ["report", "--history", self.target, "--night", "30.11.2026"])
        self.assertEqual(rc, fleet.EXIT_USAGE)
        self.assertIn("expected YYYY-MM-DD", e)


class SqliteReportTest(ReportOnBackend, unittest.TestCase):
    def new_target(self):
        return os.path.join(self.tmp, "history.sqlite")


class PostgresReportTest(ReportOnBackend, unittest.TestCase):
    def new_target(self):
        return new_pg_database()


def fake_binary():
    for cand in [os.path.join(os.environ.get("TEST_SRCDIR", ""), "pagelock", "tools", "runner", "fake_gtest"),
                 os.path.join(ROOT, "bazel-bin", "tools", "runner", "fake_gtest")]:
        if os.path.exists(cand):
            return cand
    raise unittest.SkipTest("fake_gtest binary not found (run under bazel test, or build //tools/runner:fake_gtest)")


class SlurmFleetTest(unittest.TestCase):
    """submit -> Slurm array on a real one-node cluster -> qualify per task -> PostgreSQL -> report."""

    @classmethod
    def setUpClass(cls):
        cls.binary = fake_binary()
        cls.url = new_pg_database()
        try:
            cls.slurm = daemons.SlurmCluster().start()
        except daemons.Unavailable as e:
            raise unittest.SkipTest(f"Slurm cannot start here: {e}")
        cls.saved_conf = os.environ.get("SLURM_CONF")
        os.environ["SLURM_CONF"] = cls.slurm.env["SLURM_CONF"]
        os.environ["PATH"] = cls.slurm.env["PATH"]

    @classmethod
    def tearDownClass(cls):
        cls.slurm.stop()
        if cls.saved_conf is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = cls.saved_conf

    def setUp(self):
        # Under /tmp, not TEST_TMPDIR: slurmd's job steps write here.
        self.tmp = tempfile.mkdtemp(prefix="pagelock-fleet-", dir="/tmp")
        self.bundle = os.path.join(self.tmp, "bundle")
        os.makedirs(self.bundle)
        shutil.copy(self.binary, os.path.join(self.bundle, "fake_gtest"))
        with open(os.path.join(self.bundle, "manifest.json"), "w") as f:
            json.dump({"info": {"commit": "fleet-test"}, "targets": [{
                "label": "//selftest:fake_gtest", "path": "fake_gtest", "timeout_s": 30,
                "tags": ["gpu", "tier_bat"]}]}, f)
        self.exp = os.path.join(self.tmp, "expectations")
        os.makedirs(self.exp)
        self.shared = os.path.join(self.tmp, "shared")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def submit(self, label, url, *extra):
        rc, out, err = call(fleet.main, [
            "submit", "--bundle", self.bundle, "--shared", self.shared, "--history", url, "--label", label,
            "--tier", "bat", "--seed", "1234", "--retries", "0", "--gres", "gpu:h200:1",
            "--constraint", "nvidia-h200", "--time", "00:05:00", "--allow-no-gpu", "--import-retry-pause", "0",
            *extra, "--", "--expectations", self.exp, "--baseline", "none"])
        self.assertEqual(rc, 0, out + err)
        return out.strip().splitlines()[-1]

    def status(self, label):
        rc, out, err = call(fleet.main, ["status", "--shared", self.shared, "--label", label, "--wait", "90", "--json"])
        return rc, json.loads(out) if out.strip() else None, err

    def test_submit_runs_an_array_stores_every_task_and_the_report_shows_the_node(self):
        job = self.submit("ci-night", self.url, "--tasks", "2")
        self.assertRegex(job, r"^\d+$")
        rc, st, err = self.status("ci-night")
        logs = "".join(read(os.path.join(self.shared, "ci-night", "logs", n))
                       for n in sorted(os.listdir(os.path.join(self.shared, "ci-night", "logs"))))
        self.assertEqual(rc, 0, f"{st}\n{err}\n{logs}")
        self.assertEqual([t["task"] for t in st["tasks"]], [f"{job}_0", f"{job}_1"])
        self.assertEqual({t["node"] for t in st["tasks"]}, {self.slurm.host})
        self.assertEqual({t["imported"] for t in st["tasks"]}, {"ok"})
        self.assertEqual({t["gpus"] for t in st["tasks"]}, {"0"})  # Slurm allocated the GRES gpu:h200

        db = history.connect(self.url)
        try:
            rows = db.execute("SELECT label, tier, host, run_dir, verdict FROM runs WHERE label = ?", ("ci-night",)).fetchall()
        finally:
            db.close()
        self.assertEqual(len(rows), 2)
        run_dir = rows[0][3]
        with open(os.path.join(run_dir, "results.json")) as f:
            res = json.load(f)
        self.assertEqual(res["info"]["label"], "ci-night")
        statuses = {c["name"]: c["status"] for c in res["run"]["cases"]}
        self.assertEqual(statuses["Passes"], "PASS")
        self.assertEqual(statuses["SkipsAsNotSupported"], "NOT_SUPPORTED")
        self.assertEqual(res["run"]["fingerprint"].get("seed"), "1234")

        html_path = os.path.join(self.tmp, "fleet.html")
        json_path = os.path.join(self.tmp, "fleet.json")
        rc, out, err = call(fleet.main, ["report", "--history", self.url, "--label", "ci-night",
                                         "--html", html_path, "--json", json_path])
        self.assertEqual(rc, 0, err)
        with open(json_path) as f:
            data = json.load(f)
        self.assertEqual(data["hosts"], 1)  # two tasks, one node: the later run counts
        self.assertEqual(data["runs"][0]["replaced_runs"], 1)
        self.assertEqual(data["runs"][0]["verdict"], rows[0][4])
        self.assertEqual(data["runs"][0]["host"], res["run"]["fingerprint"]["host"])
        page = read(html_path)
        self.assertIn(os.path.relpath(data["runs"][0]["report"], self.tmp), page)
        self.assertTrue(os.path.exists(data["runs"][0]["report"]))

    def test_a_task_that_cannot_reach_the_history_keeps_its_run_for_a_later_import(self):
        dead = "postgresql:///postgres?host=/nonexistent-pagelock&user=pagelock&connect_timeout=2"
        self.submit("lost-link", dead)
        rc, st, err = self.status("lost-link")
        self.assertEqual(rc, fleet.EXIT_FAIL, st)
        task = st["tasks"][0]
        self.assertEqual((task["state"], task["imported"]), ("NOT_STORED", "failed"))
        self.assertTrue(os.path.exists(os.path.join(task["run_dirs"][0], "results.json")))
        rc, out, err = call(history.main, ["--db", self.url, "import", *task["run_dirs"]])
        self.assertEqual(rc, 0, err)
        rc, out, err = call(history.main, ["--db", self.url, "import", *task["run_dirs"]])
        self.assertIn("already stored", out)
        db = history.connect(self.url)
        data = fleet_report.fleet_data(db, label="lost-link")
        db.close()
        self.assertEqual(data["hosts"], 1)

    def test_bad_selection_is_a_usage_error(self):
        rc, out, err = call(fleet.main, ["submit", "--bundle", self.tmp, "--shared", self.shared,
                                         "--history", self.url, "--label", "x"])
        self.assertEqual(rc, fleet.EXIT_USAGE)
        self.assertIn("no manifest.json", err)
        rc, out, err = call(fleet.main, ["submit", "--bundle", self.bundle, "--shared", self.shared,
                                         "--history", self.url, "--label", "x", "--gres", "h200"])
        self.assertEqual(rc, fleet.EXIT_USAGE)
        self.assertIn("expected gpu:<type>:<n>", err)
        rc, out, err = call(fleet.main, ["submit", "--bundle", self.bundle, "--shared", self.shared,
                                         "--history", self.url, "--label", "x", "--per-node",
                                         "--constraint", "nvidia-b200"])
        self.assertEqual(rc, fleet.EXIT_USAGE)
        self.assertIn("no node matches", err)
        rc, out, err = call(fleet.main, ["status", "--shared", self.shared, "--label", "never"])
        self.assertEqual(rc, fleet.EXIT_USAGE)
        self.assertNotIn("Traceback", err)

    def test_per_node_sizes_the_array_to_the_matching_nodes(self):
        rc, out, err = call(fleet.main, ["submit", "--bundle", self.bundle, "--shared", self.shared,
                                         "--history", self.url, "--label", "pn", "--per-node",
                                         "--constraint", "nvidia-h200", "--gres", "gpu:h200:1", "--dry-run"])
        self.assertEqual(rc, 0, err)
        self.assertIn("--array=0-0", out)
        self.assertIn("--exclusive", out)
        self.assertIn("--constraint=nvidia-h200", out)
        self.assertIn("--requeue", out)

    def test_per_sku_submits_one_array_per_gpu_type(self):
        self.assertEqual(fleet.gpu_types("gpu:h200:4(S:0-1),gpu:a100:2,gpu:1"), ["h200", "a100"])
        rc, out, err = call(fleet.main, ["submit", "--bundle", self.bundle, "--shared", self.shared,
                                         "--history", self.url, "--label", "ps", "--per-sku", "--per-node", "--dry-run"])
        self.assertEqual(rc, 0, err)
        lines = out.strip().splitlines()
        self.assertEqual(len(lines), 1, out)  # this cluster has one GPU type
        self.assertIn("--gres=gpu:h200:1", lines[0])
        self.assertIn("--array=0-0", lines[0])


if __name__ == "__main__":
    unittest.main()
