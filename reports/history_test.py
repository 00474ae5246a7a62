"""The run history on both backends, one test file: SQLite (a temp file) and a real PostgreSQL
server that this test starts in a temporary folder on a Unix socket and stops afterwards.
Schema versions and migrations (a database written by the predecessor schema is migrated, a newer
one refused), idempotent import of run directories, concurrent writers, atomic runs, the CLI.

The PostgreSQL half needs Debian's python3-psycopg2, which only Debian's /usr/bin/python3 sees:
under another interpreter this file re-executes itself with /usr/bin/python3."""

import contextlib
import io
import json
import multiprocessing
import os
import shutil
import sqlite3
import sys
import tempfile
import unittest
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.history_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

if __name__ == "__main__":
    from reports import interpreter
    interpreter.reexec_if_missing("psycopg2", __file__, ROOT)

from reports import history
from reports import model
from reports import testsupport
from tools.fleet import daemons

# The schema and insert statements of the commit before schema versioning (731b4b0), verbatim:
# the predecessor that wrote the databases found on lab machines today.
V1_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_key TEXT UNIQUE NOT NULL,
  started_at TEXT NOT NULL,
  host TEXT, sku TEXT, gpu_name TEXT, gpu_uuid TEXT,
  nvidia_driver TEXT, cuda_driver TEXT, cuda_runtime TEXT,
  harness_commit TEXT, seed TEXT, verdict TEXT, exit_code INTEGER,
  fingerprint_json TEXT
);
CREATE TABLE IF NOT EXISTS cases (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  case_id TEXT NOT NULL,
  status TEXT NOT NULL,
  comparison TEXT,
  seconds REAL,
  attempts TEXT,
  message TEXT,
  PRIMARY KEY (run_id, case_id)
);
CREATE TABLE IF NOT EXISTS metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  case_id TEXT NOT NULL,
  name TEXT NOT NULL,
  value REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS cases_by_id ON cases(case_id, run_id);
CREATE INDEX IF NOT EXISTS metrics_by_name ON metrics(name, run_id);
"""
V1_RUN = ("INSERT INTO runs (run_key, started_at, host, sku, gpu_name, gpu_uuid, nvidia_driver,"
          " cuda_driver, cuda_runtime, harness_commit, seed, verdict, exit_code, fingerprint_json)"
          " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
V1_CASE = "INSERT INTO cases VALUES (?,?,?,?,?,?,?)"
V1_METRIC = "INSERT INTO metrics VALUES (?,?,?,?)"

A = "suites/a:a_test/S.A"
B = "suites/a:a_test/S.B"


def make_run(host="h1", driver="580.1", statuses=None, metric=None):
    statuses = statuses or {"A": "PASS"}
    cases = []
    for name, st in statuses.items():
        props = {"h2d_pinned_GBps": str(metric)} if metric is not None else {}
        if " " in st:  # "FAIL PASS": attempts, final status last
            props["attempts"] = st
            st = st.split()[-1]
        cases.append(model.Case.from_raw("//suites/a:a_test", "S", name, st, 0.5,
                                         "boom" if st == "FAIL" else "", "", props))
    return model.Run({"host": host, "nvidia_driver": driver, "gpu0_name": "NVIDIA H200"}, cases)


def write_run_dir(root, key, run, started="2026-11-30T01:00:00+00:00", label="nightly", comparison=None):
    d = os.path.join(root, key)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "results.json"), "w") as f:
        json.dump({"info": {"run_key": key, "started_at": started, "sku": "nvidia-h200", "tier": "bat",
                            "label": label, "verdict": "QUALIFIED", "exit_code": 0,
                            "bundle": {"commit": "abc"}},
                   "run": run.to_json(), "comparison": comparison or {}}, f)
    with open(os.path.join(d, "index.html"), "w") as f:
        f.write("<html></html>")
    return d


def _concurrent_writer(target, n, root):
    db = history.connect(target)
    for i in range(4):
        history.store(db, f"w{n}-{i}", f"2026-11-30T0{n}:00:0{i}", make_run(host=f"h{n}"), None,
                      "nvidia-h200", "c", 0, "QUALIFIED")
    # Every writer also imports the same run directory: it must land exactly once.
    history.import_run_dir(db, os.path.join(root, "shared-run"))
    db.close()


class Backend:
    """The tests; SqliteHistoryTest and PostgresHistoryTest supply new_target()/old_db()."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.target = self.new_target()
        self.db = history.connect(self.target)

    def tearDown(self):
        self.db.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def count(self, table, db=None):
        return (db or self.db).execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]

    def put(self, key, started, statuses, driver="580.1", metric=None, host="h1"):
        return history.store(self.db, key, started, make_run(host, driver, statuses, metric), None,
                             "nvidia-h200", "abc", 0, "v")

    def test_a_new_database_has_the_current_schema_version(self):
        self.assertEqual(self.db.version(), history.SCHEMA_VERSION)
        self.assertEqual(history.SCHEMA_VERSION, 3)

    def test_a_database_of_the_predecessor_schema_is_migrated_with_its_data(self):
        old = self.old_db()
        self.assertEqual(old.version(), 1)
        old.execute(V1_RUN, ("r1", "2026-11-01T01:00:00", "h1", "nvidia-h200", "NVIDIA H200",
                             "GPU-1", "575.1", "13000", "13000", "c1", "7", "QUALIFIED", 0, "{}"))
        old.execute(V1_RUN, ("r2", "2026-11-02T01:00:00", "h1", "nvidia-h200", "NVIDIA H200",
                             "GPU-1", "580.1", "13000", "13000", "c2", "8", "REGRESSIONS", 3, "{}"))
        ids = dict(old.execute("SELECT run_key, id FROM runs").fetchall())
        for rid, status, attempts, msg in [(ids["r1"], "PASS", "PASS", ""), (ids["r2"], "FAIL", "FAIL FAIL", "boom")]:
            old.execute(V1_CASE, (rid, A, status, "REGRESSION" if status == "FAIL" else None, 1.5, attempts, msg))
            old.execute(V1_CASE, (rid, B, "NOT_SUPPORTED", None, 0.0, "NOT_SUPPORTED", ""))
            old.execute(V1_METRIC, (rid, A, "h2d_pinned_GBps", 50.0 if status == "PASS" else 40.0))
        old.close()

        db = history.connect(self.old_target, migrate=True)
        self.assertEqual(db.version(), history.SCHEMA_VERSION)
        self.assertEqual(self.count("runs", db), 2)
        self.assertEqual(self.count("cases", db), 4)
        last_pass, first_fail = history.bracket(db, A, "nvidia-h200")
        self.assertEqual((last_pass["run_key"], last_pass["nvidia_driver"]), ("r1", "575.1"))
        self.assertEqual((first_fail["run_key"], first_fail["nvidia_driver"]), ("r2", "580.1"))
        self.assertEqual([t[2] for t in history.trend(db, "h2d_pinned_GBps", "nvidia-h200")], [50.0, 40.0])
        row = db.execute("SELECT c.status, c.comparison, c.attempts, c.message, r.night FROM cases c"
                         " JOIN case_names n ON n.id = c.case_ref JOIN runs r ON r.id = c.run_id"
                         " WHERE n.name = ? AND r.run_key = ?", (A, "r2")).fetchone()
        self.assertEqual(tuple(row), ("FAIL", "REGRESSION", "FAIL FAIL", "boom", "2026-11-02"))
        # New runs go in beside the migrated ones.
        history.store(db, "r3", "2026-11-03T01:00:00", make_run(statuses={"A": "PASS"}), None,
                      "nvidia-h200", "c3", 0, "QUALIFIED")
        self.assertEqual(history.bracket(db, A, "nvidia-h200")[0]["run_key"], "r3")
        db.close()

    def test_a_database_newer_than_this_code_is_refused_and_left_alone(self):
        self.put("r1", "2026-11-01", {"A": "PASS"})
        self.db.begin()
        self.db.set_version(7, "from the future")
        self.db.commit()
        with self.assertRaises(history.HistoryError) as e:
            history.connect(self.target)
        self.assertIn("schema version 7 is newer than this pagelock knows (3)", str(e.exception))
        self.assertEqual(self.db.version(), 7)
        self.assertEqual(self.count("runs"), 1)

    def test_importing_a_run_directory_twice_stores_it_once(self):
        d = write_run_dir(self.tmp, "20261130-010000_h1_nvidia-h200_580.1",
                          make_run(statuses={"A": "PASS", "B": "FAIL PASS"}),
                          comparison={B: "FLAKE"})
        key, rid, new = history.import_run_dir(self.db, d)
        self.assertTrue(new)
        key2, rid2, new2 = history.import_run_dir(self.db, d)
        self.assertEqual((key2, rid2, new2), (key, rid, False))
        self.assertEqual(self.count("runs"), 1)
        self.assertEqual(self.count("cases"), 2)
        row = self.db.execute("SELECT label, tier, night, run_dir, report, verdict FROM runs").fetchone()
        self.assertEqual(tuple(row), ("nightly", "bat", "2026-11-30", os.path.abspath(d),
                                      os.path.join(os.path.abspath(d), "index.html"), "QUALIFIED"))
        row = self.db.execute("SELECT c.status, c.attempts, c.comparison FROM cases c JOIN case_names n"
                              " ON n.id = c.case_ref WHERE n.name = ?", (B,)).fetchone()
        self.assertEqual(tuple(row), ("PASS", "FAIL PASS", "FLAKE"))

    def test_two_run_folders_with_one_key_are_two_runs(self):
        # Two fleet nights back to back on one node in one second: each qualify ran with
        # --no-history, so both folders carry the same key. Both are stored; re-importing either
        # stores nothing new. Before, the second was "already stored" and its night lost the node.
        a = write_run_dir(os.path.join(self.tmp, "night-a"), "20261130-010000_n1_nvidia-h200_580.1",
                          make_run(statuses={"A": "PASS"}), label="night-a")
        b = write_run_dir(os.path.join(self.tmp, "night-b"), "20261130-010000_n1_nvidia-h200_580.1",
                          make_run(statuses={"A": "FAIL"}), label="night-b")
        key_a, rid_a, new_a = history.import_run_dir(self.db, a)
        key_b, rid_b, new_b = history.import_run_dir(self.db, b)
        self.assertEqual((key_a, new_a), ("20261130-010000_n1_nvidia-h200_580.1", True))
        self.assertEqual((key_b, new_b), ("20261130-010000_n1_nvidia-h200_580.1-2", True))
        self.assertNotEqual(rid_a, rid_b)
        self.assertEqual(history.import_run_dir(self.db, b), (key_b, rid_b, False))
        self.assertEqual(history.import_run_dir(self.db, a), (key_a, rid_a, False))
        rows = self.db.execute("SELECT run_key, label FROM runs ORDER BY id").fetchall()
        self.assertEqual([tuple(r) for r in rows], [(key_a, "night-a"), (key_b, "night-b")])

    def test_the_h200_reference_run_imports_with_every_case(self):
        src = os.path.join(ROOT, "baselines", "nvidia-h200", "results.json")
        if not os.path.exists(src):
            self.skipTest(f"{src} is not in this tree")
        d = os.path.join(self.tmp, "h200")
        os.makedirs(d)
        shutil.copy(src, os.path.join(d, "results.json"))
        with open(src) as f:
            ref = json.load(f)
        key, rid, new = history.import_run_dir(self.db, d)
        self.assertEqual(key, ref["info"]["run_key"])
        self.assertEqual(self.count("cases"), len(ref["run"]["cases"]))
        got = dict(self.db.execute("SELECT status, COUNT(*) FROM cases GROUP BY status").fetchall())
        want = {}
        for c in ref["run"]["cases"]:
            want[c["status"]] = want.get(c["status"], 0) + 1
        self.assertEqual(got, want)
        self.assertEqual(self.db.execute("SELECT nvidia_driver, sku FROM runs").fetchone()[0], "580.159.04")

    def test_a_run_that_fails_half_way_leaves_nothing(self):
        real = type(self.db).insert_many

        def fails_on_metrics(db, table, *args, **kwargs):  # the runs row and its cases are in
            if table == "metrics":
                raise sqlite3.OperationalError("disk I/O error")
            return real(db, table, *args, **kwargs)
        with mock.patch.object(type(self.db), "insert_many", fails_on_metrics):
            with self.assertRaises(Exception):
                history.store(self.db, "half", "2026-11-30", make_run(), None, "nvidia-h200", "c", 0, "v")
        self.assertEqual(self.count("runs"), 0)
        self.assertEqual(self.count("cases"), 0)
        self.put("after", "2026-11-30", {"A": "PASS"})
        self.assertEqual(self.count("runs"), 1)

    def test_a_case_held_twice_is_one_row_with_the_worse_status(self):
        # Reliability review 4, 9b: one id twice in a run (results.json of an older runner) was
        # a UNIQUE violation that kept the whole run out of the history.
        twice = make_run()
        twice.cases.append(model.Case.from_raw("//suites/a:a_test", "S", "A", "CRASH", message="second"))
        history.store(self.db, "twice", "2026-11-30", twice, None, "nvidia-h200", "c", 0, "v")
        rows = self.db.execute("SELECT n.name, c.status FROM cases c JOIN case_names n ON n.id = c.case_ref"
                               " WHERE n.name = 'suites/a:a_test/S.A'").fetchall()
        self.assertEqual(rows, [("suites/a:a_test/S.A", "CRASH")])

    def test_concurrent_writers_all_land_and_a_shared_run_lands_once(self):
        write_run_dir(self.tmp, "shared-run", make_run(host="shared"))
        ctx = multiprocessing.get_context("fork")
        procs = [ctx.Process(target=_concurrent_writer, args=(self.target, n, self.tmp)) for n in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        self.assertEqual([p.exitcode for p in procs], [0] * 4)
        self.assertEqual(self.count("runs"), 17)
        self.assertEqual(self.count("case_names"), 1)

    def test_bracket_and_trend_follow_start_time_not_insert_order(self):
        self.put("r3", "2026-11-03", {"A": "FAIL"}, "580", 40.0)
        self.put("r1", "2026-11-01", {"A": "PASS"}, "570", 50.0)  # imported late
        self.put("r2", "2026-11-02", {"A": "PASS"}, "575", 51.0)
        self.put("r4", "2026-11-04", {"A": "FAIL"}, "581", 39.0)
        last_pass, first_fail = history.bracket(self.db, A, "nvidia-h200")
        self.assertEqual((last_pass["run_key"], first_fail["run_key"]), ("r2", "r3"))
        self.assertEqual([t[2] for t in history.trend(self.db, "h2d_pinned_GBps", "nvidia-h200")],
                         [50.0, 51.0, 40.0, 39.0])
        self.assertEqual(history.latest_run_key(self.db, "nvidia-h200"), "r4")

    def test_cli_imports_and_reports_errors_without_tracebacks(self):
        d = write_run_dir(self.tmp, "k1", make_run())
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            self.assertEqual(history.main(["--db", self.target, "import", d]), 0)
            self.assertEqual(history.main(["--db", self.target, "import", d]), 0)
            self.assertEqual(history.main(["--db", self.target, "import", self.tmp]), 2)
            self.assertEqual(history.main(["--db", self.target, "version"]), 0)
        self.assertIn("imported: k1", out.getvalue())
        self.assertIn("already stored: k1", out.getvalue())
        self.assertIn("not a run directory (no results.json)", err.getvalue())
        self.assertTrue(out.getvalue().rstrip().endswith(str(history.SCHEMA_VERSION)))
        self.assertNotIn("Traceback", err.getvalue())

    def test_baseline_auto_takes_the_run_stored_last_not_the_latest_clock(self):
        # A host whose clock is a day behind stores its run last; --baseline auto
        # (history.latest_run_key) must compare against it, not against the older run.
        self.put("clock-ok", "2026-11-30T01:00:00+00:00", {"A": "PASS"})
        self.put("clock-behind", "2026-11-29T01:30:00+00:00", {"A": "PASS"})
        self.assertEqual(history.latest_run_key(self.db, "nvidia-h200"), "clock-behind")
        self.assertEqual(history.latest_run_key(self.db, "nvidia-h200", "clock-behind"), "clock-ok")

    def test_a_nan_metric_is_stored_flagged_and_the_import_succeeds(self):
        # The run with a NaN metric reaches the history.
        d = write_run_dir(self.tmp, "nan-run", make_run(statuses={"A": "PASS"}, metric="nan"))
        rc, out, err = self.cli("import", d)
        self.assertEqual(rc, 0, err)
        row = self.db.execute("SELECT value, flag FROM metrics m JOIN runs r ON r.id = m.run_id"
                              " WHERE r.run_key = 'nan-run'").fetchone()
        self.assertEqual(tuple(row), (None, "NaN"))
        self.put("after", "2026-12-01T01:00:00+00:00", {"A": "PASS"}, metric=50.0)
        self.assertEqual([t[2] for t in history.trend(self.db, "h2d_pinned_GBps", "nvidia-h200")], [50.0])

    def test_a_batch_import_stores_what_it_can_and_lists_what_it_skipped(self):
        good = write_run_dir(self.tmp, "good", make_run(host="n1"))
        dead = os.path.join(self.tmp, "dead-node")  # a node died: testlogs only
        os.makedirs(os.path.join(dead, "testlogs"))
        torn = write_run_dir(self.tmp, "torn", make_run(host="n3"))
        with open(os.path.join(torn, "results.json"), "r+") as f:
            f.truncate(40)
        rc, out, err = self.cli("import", dead, good, torn)
        self.assertEqual(rc, 2, err)
        self.assertIn("imported: good", out)
        self.assertIn(f"skipped: {dead}: not a run directory (no results.json)", err)
        self.assertIn("skipped: " + torn, err)
        self.assertEqual(self.count("runs"), 1)

    def test_a_partial_run_without_a_host_takes_the_host_and_night_given(self):
        run = make_run(host="")
        run.fingerprint.pop("host", None)
        d = write_run_dir(self.tmp, "partial", run, started="2026-11-30T23:50:00+00:00")
        rc, out, err = self.cli("import", "--host", "n2", "--night", "2026-11-30", d)
        self.assertEqual(rc, 0, err)
        self.assertEqual(tuple(self.db.execute("SELECT host, night FROM runs").fetchone()), ("n2", "2026-11-30"))

    def test_the_host_given_files_the_run_and_the_fingerprint_keeps_the_machines_name(self):
        # A node whose hostname is not its Slurm node name (a fully qualified name, or `vm`): the
        # fleet files the run under the node name it passes; the fingerprint keeps what it saw.
        d = write_run_dir(self.tmp, "fqdn", make_run(host="n1.lab.example.org"))
        rc, out, err = self.cli("import", "--host", "n1", d)
        self.assertEqual(rc, 0, err)
        host, fp = self.db.execute("SELECT host, fingerprint_json FROM runs").fetchone()
        self.assertEqual((host, json.loads(fp)["host"]), ("n1", "n1.lab.example.org"))
        # Without --host the fingerprint's host is the host, as before.
        d = write_run_dir(self.tmp, "plain", make_run(host="n2.lab.example.org"))
        self.assertEqual(self.cli("import", d)[0], 0)
        self.assertEqual(self.db.execute("SELECT host FROM runs WHERE run_key = 'plain'").fetchone()[0],
                         "n2.lab.example.org")

    def test_the_night_is_taken_in_the_configured_time_zone(self):
        os.environ["PAGELOCK_NIGHT_TZ"] = "Europe/Berlin"
        os.environ["PAGELOCK_NIGHT_CUTOFF_HOURS"] = "12"
        try:
            # 22:00 and 02:00 Berlin time: one night, though the UTC date changes between them.
            self.assertEqual(history.night_of("2026-11-30T21:00:00+00:00"), "2026-11-30")
            self.assertEqual(history.night_of("2026-12-01T01:00:00+00:00"), "2026-11-30")
        finally:
            del os.environ["PAGELOCK_NIGHT_TZ"], os.environ["PAGELOCK_NIGHT_CUTOFF_HOURS"]
        self.assertEqual(history.night_of("2026-12-01T01:00:00+00:00"), "2026-12-01")

    def test_prune_deletes_the_older_nights_with_their_rows(self):
        for night in ("2026-11-01", "2026-11-02", "2026-11-03"):
            self.put(f"r-{night}", f"{night}T01:00:00+00:00", {"A": "PASS", "B": "FAIL"}, metric=50.0)
        history.store_roster(self.db, "old", "2026-11-01", [{"host": "h1"}])
        rc, out, err = self.cli("prune", "--before", "2026-11-03")
        self.assertEqual(rc, 0, err)
        self.assertIn("deleted 2 runs", out)
        self.assertEqual([r[0] for r in self.db.execute("SELECT run_key FROM runs")], ["r-2026-11-03"])
        self.assertEqual(self.count("cases"), 2)
        self.assertEqual(self.count("metrics"), 2)
        self.assertEqual(self.count("rosters"), 0)
        self.assertEqual(self.db.execute("SELECT MIN(night) FROM case_nights").fetchone()[0], "2026-11-03")
        self.assertEqual(self.cli("prune")[0], 2)

    def test_every_password_form_is_redacted(self):
        for url, secret in [("postgresql:///fleet?host=/s&user=u&password=S3cretQ", "S3cretQ"),
                            ("postgresql://u:pa/ss@db/x", "pa/ss"), ("postgresql://u:p@ss@db/x", "ss@"),
                            ("host=db user=u password=kw0rd dbname=x", "kw0rd"),
                            ("postgresql://u:secret@db:5432/x?sslmode=require", "secret")]:
            self.assertNotIn(secret, history.redact(url), url)
            self.assertTrue(history.has_password(url), url)
        self.assertFalse(history.has_password("postgresql:///fleet?service=lab"))
        self.assertEqual(history.redact("postgresql://u@db/x"), "postgresql://u@db/x")


    def cli(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = history.main(["--db", self.target, *argv])
        self.assertNotIn("Traceback", err.getvalue())
        return rc, out.getvalue(), err.getvalue()

    def put_sku(self, key, started, sku, statuses, driver="580.1", metric=None):
        return history.store(self.db, key, started, make_run("h1", driver, statuses, metric), None,
                             sku, "abcdef1234567890", 0, "v", label="nightly")

    def test_cli_prints_tables_and_json_with_the_sku_taken_from_the_runs(self):
        self.put_sku("h200-1", "2026-11-01", "nvidia-h200", {"A": "PASS"}, "575", 50.0)
        self.put_sku("h200-2", "2026-11-02", "nvidia-h200", {"A": "FAIL"}, "580", 40.0)
        self.put_sku("l40s-1", "2026-11-03", "nvidia-l40s", {"A": "PASS"}, "590", 20.0)
        rc, out, _ = self.cli("runs")
        self.assertEqual(rc, 0)
        lines = out.splitlines()
        self.assertEqual(lines[0].split(), ["run", "started", "host", "SKU", "driver", "commit", "label", "tier",
                                            "verdict"])
        self.assertEqual([ln.split()[0] for ln in lines[2:]], ["l40s-1", "h200-2", "h200-1"])
        self.assertNotIn("{", out)  # a table, not Python dicts
        # No --sku: the latest run with the case is an L40S, where A passes.
        rc, out, _ = self.cli("bracket", A)
        self.assertEqual(rc, 0, out)
        self.assertIn(f"case {A} on nvidia-l40s", out)
        # The run named by --run gives the SKU: on the H200 the case fails, which exits 3.
        rc, out, _ = self.cli("--run", "h200-1", "bracket", A)
        self.assertEqual(rc, 3, out)
        rows = {ln.split("  ")[0]: ln.split() for ln in out.splitlines()[3:5]}
        self.assertEqual(rows["last pass"][2:4], ["h200-1", "2026-11-01"])
        self.assertEqual(rows["first failure"][2:4], ["h200-2", "2026-11-02"])
        rc, out, _ = self.cli("--json", "--sku", "nvidia-h200", "bracket", A)
        data = json.loads(out)
        self.assertEqual((rc, data["exit_code"], data["sku"]), (3, 3, "nvidia-h200"))
        self.assertEqual((data["last_pass"]["nvidia_driver"], data["first_failure"]["nvidia_driver"]), ("575", "580"))
        rc, out, _ = self.cli("--json", "trend", "h2d_pinned_GBps")
        data = json.loads(out)
        self.assertEqual((rc, data["sku"], [p["value"] for p in data["points"]]), (0, "nvidia-l40s", [20.0]))
        rc, out, _ = self.cli("--run", "h200-2", "trend", "h2d_pinned_GBps")
        self.assertEqual([ln.split()[-1] for ln in out.splitlines()[3:]], ["50.000", "40.000"])
        rc, out, _ = self.cli("--json", "--sku", "nvidia-h200", "runs")
        self.assertEqual([r["run_key"] for r in json.loads(out)["runs"]], ["h200-2", "h200-1"])

    def test_a_bracket_within_one_driver_and_commit_says_there_is_nothing_to_bisect(self):
        self.put_sku("r1", "2026-11-01", "nvidia-h200", {"A": "PASS"}, "580")
        self.put_sku("r2", "2026-11-02", "nvidia-h200", {"A": "FAIL"}, "580")
        rc, out, _ = self.cli("bracket", A)
        self.assertEqual(rc, 3, out)
        self.assertIn("same driver and commit: not a driver or harness change", out)
        self.assertNotIn("bisect", out)
        self.put_sku("r3", "2026-11-03", "nvidia-h200", {"A": "PASS"}, "580")
        self.put_sku("r4", "2026-11-04", "nvidia-h200", {"A": "FAIL"}, "581")
        rc, out, _ = self.cli("bracket", A)
        self.assertIn("bisect between the two drivers/commits above", out)
        # A dirty or unknown commit may hide a harness change: still a bracket to bisect.
        for commit in ("abc-dirty", None):
            run = {"nvidia_driver": "580", "harness_commit": commit}
            self.assertFalse(history._same_build(run, dict(run)), commit)

    def test_a_usage_error_with_json_is_one_json_object_on_stdout(self):
        # UX-9: argparse's error said nothing on stdout, where a --json reader looks.
        for argv in (["--bogus", "--json", "runs"], ["--json", "bogus-query"], ["--json"]):
            rc, out, err = self.cli(*argv)
            self.assertEqual(rc, 2, argv)
            doc = json.loads(out)
            self.assertEqual((doc["tool"], doc["exit_code"]), ("history", 2))
            self.assertIn(doc["error"], err)

    def test_cli_exits_four_for_an_empty_history(self):
        for argv in (["runs"], ["metrics"], ["--json", "runs"]):
            rc, out, err = self.cli(*argv)
            self.assertEqual(rc, 4, argv)
        self.assertEqual(json.loads(out)["runs"], [])
        rc, out, err = self.cli("metrics")
        self.assertIn("the history holds no run", err)

    def test_cli_exits_two_for_an_unknown_case_run_metric_or_sku(self):
        self.put_sku("h200-1", "2026-11-01", "nvidia-h200", {"A": "PASS"}, "575", 50.0)
        for argv, words in [(["bracket", A + "x"], f"no case '{A}x' in the history; did you mean {A}?"),
                            (["--run", "nope", "bracket", A], "no run 'nope' in the history; latest runs: h200-1"),
                            (["trend", "d2h_GBps"], "no metric 'd2h_GBps'"),
                            (["--sku", "nvidia-b200", "runs"], "no run of SKU 'nvidia-b200' in the history"
                                                               " (SKUs: nvidia-h200)"),
                            (["bracket", A, B], "bracket takes one argument"),
                            (["--bogus", "runs"], "unrecognized arguments")]:
            rc, out, err = self.cli(*argv)
            self.assertEqual(rc, 2, argv)
            self.assertIn(words, err)
            self.assertEqual(out, "")


def call_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = history.main(argv)
    return rc, out.getvalue(), err.getvalue()


class SqliteHistoryTest(Backend, unittest.TestCase):
    def new_target(self):
        return os.path.join(self.tmp, "h.sqlite")

    def old_db(self):
        """A file written by the predecessor schema: no user_version, positional inserts."""
        self.old_target = os.path.join(self.tmp, "old.sqlite")
        conn = sqlite3.connect(self.old_target, isolation_level=None)
        conn.executescript(V1_SCHEMA)
        conn.close()
        return history.connect(self.old_target, migrate=False)

    def test_missing_file_and_unreadable_file_are_clear_errors(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(history.main(["--db", os.path.join(self.tmp, "none.sqlite"), "runs"]), 2)
            junk = os.path.join(self.tmp, "junk.sqlite")
            with open(junk, "w") as f:
                f.write("not a database" * 100)
            self.assertEqual(history.main(["--db", junk, "runs"]), 2)  # not a database: configuration
        self.assertIn("no such database", err.getvalue())
        self.assertIn("junk.sqlite", err.getvalue())
        self.assertNotIn("Traceback", err.getvalue())

    def test_a_full_disk_is_exit_one_and_leaves_no_empty_history(self):
        # Reliability #19: exit 1 (infrastructure), and no 0-byte history.sqlite left behind.
        d = write_run_dir(self.tmp, "k1", make_run())
        mnt = os.path.join(self.tmp, "full")
        os.makedirs(mnt)
        if os.geteuid() != 0 or os.system(f"mount -t tmpfs -o size=64k tmpfs {mnt} 2>/dev/null") != 0:
            self.skipTest("needs root to mount a small tmpfs")
        try:
            with open(os.path.join(mnt, "filler"), "wb") as f:
                try:
                    f.write(b"x" * (1 << 20))
                except OSError:
                    pass
            target = os.path.join(mnt, "history.sqlite")
            rc, out, err = call_main(["--db", target, "import", d])
            self.assertEqual(rc, 1, err)
            self.assertIn("full", err)
            self.assertFalse(os.path.exists(target), os.listdir(mnt))
        finally:
            os.system(f"umount {mnt}")

    def test_damage_in_the_middle_of_the_file_is_detected_before_writing(self):
        # Reliability #19: 20 KB of random bytes at one third of the file.
        for i in range(40):
            self.put(f"r{i}", f"2026-11-{1 + i % 28:02d}T01:00:00", {f"C{k}": "PASS" for k in range(50)})
        self.db.close()
        size = os.path.getsize(self.target)
        with open(self.target, "r+b") as f:
            f.seek(size // 3)
            f.write(os.urandom(20000))
        with self.assertRaises(history.HistoryError) as e:
            history.connect(self.target)
        self.assertIn("malformed", str(e.exception))
        self.db = history.connect(os.path.join(self.tmp, "fresh.sqlite"))


class PostgresHistoryTest(Backend, unittest.TestCase):
    server = None
    n = 0

    @classmethod
    def setUpClass(cls):
        try:
            import psycopg2  # noqa: F401
        except ImportError:
            raise unittest.SkipTest(f"{sys.executable} cannot import psycopg2 (Debian python3-psycopg2)")
        try:
            cls.server = daemons.PostgresServer().start()
        except daemons.Unavailable as e:
            raise unittest.SkipTest(f"PostgreSQL cannot start here: {e}")

    @classmethod
    def tearDownClass(cls):
        if cls.server:
            cls.server.stop()

    def _database(self):
        PostgresHistoryTest.n += 1
        name = f"t{PostgresHistoryTest.n}"
        admin = history.connect(self.server.url, migrate=False)
        admin.execute(f"CREATE DATABASE {name}")
        admin.close()
        return self.server.url.replace("postgresql:///postgres", f"postgresql:///{name}")

    def new_target(self):
        return self._database()

    def old_db(self):
        """PostgreSQL had no predecessor release; a database at version 1 is made by migration 1
        alone, then written with the predecessor's positional inserts."""
        self.old_target = self._database()
        db = history.connect(self.old_target, migrate=False)
        history.migrate_to(db, 1)
        return db

    def test_an_unreachable_server_is_a_clear_error(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = history.main(["--db", "postgresql://u:secret@/postgres?host=/nonexistent", "runs"])
        self.assertEqual(rc, 1)
        self.assertIn("cannot connect", err.getvalue())
        self.assertNotIn("secret", err.getvalue())
        self.assertNotIn("Traceback", err.getvalue())

    def test_an_older_schema_is_refused_until_an_explicit_migrate(self):
        old = self.old_db()
        old.close()
        with self.assertRaises(history.SchemaTooOld) as e:
            history.connect(self.old_target)
        self.assertIn("history.py --db URL migrate", str(e.exception))
        rc, out, err = call_main(["--db", self.old_target, "runs"])
        self.assertEqual(rc, 2)
        self.assertIn("older than this pagelock", err)
        rc, out, err = call_main(["--db", self.old_target, "migrate"])
        self.assertEqual(rc, 0, err)
        self.assertIn(f"migrated from schema 1 to {history.SCHEMA_VERSION}", out)
        rc, out, err = call_main(["--db", self.old_target, "migrate"])
        self.assertIn("nothing to do", out)

    def test_a_lock_held_elsewhere_times_out_instead_of_waiting_forever(self):
        import time
        d = write_run_dir(self.tmp, "k1", make_run())
        holder = history.connect(self.target)
        holder.begin()
        holder.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
        try:
            t = time.monotonic()
            rc, out, err = call_main(["--db", self.target, "--lock-timeout", "1", "import", d])
            took = time.monotonic() - t
        finally:
            holder.rollback()
            holder.close()
            os.environ.pop("PAGELOCK_HISTORY_LOCK_TIMEOUT", None)
        self.assertEqual(rc, 1, err)
        self.assertIn("lock timeout", err)
        self.assertLess(took, 10)


class InterpreterTest(unittest.TestCase):
    """history.py started by a python3 without psycopg2 (pyenv, a venv) re-executes itself, once,
    before any work, under one that has it ($PAGELOCK_PYTHON here), when its history is a
    postgresql:// URL (--db, --db=, --history, $PAGELOCK_HISTORY); a SQLite history looks for no
    other interpreter. No server is needed: the stand-in psycopg2 cannot connect, and says so."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.env, self.log = testsupport.python_with_fake_psycopg2(self.tmp)

    def history(self, *argv, **env):
        import subprocess
        p = subprocess.run([sys.executable, os.path.join(ROOT, "reports", "history.py"), *argv],
                           capture_output=True, text=True, env=dict(self.env, **env), timeout=120)
        self.assertNotIn("Traceback", p.stderr)
        return p.returncode, p.stderr

    def starts(self):
        """The wrapper's starts of history.py (its import probes left out)."""
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [line for line in f.read().splitlines() if not line.startswith("-c ")]

    def test_a_postgresql_history_reexecutes_under_the_python_that_has_psycopg2(self):
        url = "postgresql:///postgres?host=/nonexistent"
        for argv, env in (((["--db", url, "runs"]), {}), ((["--db=" + url, "runs"]), {}),
                          ((["runs", "--history", url]), {}), ((["runs"]), {"PAGELOCK_HISTORY": url})):
            rc, err = self.history(*argv, **env)
            self.assertEqual(rc, 1, (argv, env, err))
            self.assertIn("cannot connect: fake psycopg2 of the test", err, (argv, env))
        self.assertEqual(len(self.starts()), 4, self.starts())

    def test_a_reexecuted_history_never_reexecutes_again(self):
        rc, err = self.history("--db", "postgresql:///postgres?host=/nonexistent", "runs", PAGELOCK_NO_REEXEC="1")
        self.assertEqual(rc, 2, err)
        self.assertIn("needs psycopg2", err)
        self.assertEqual(self.starts(), [])

    def test_a_sqlite_history_looks_for_no_other_python(self):
        target = os.path.join(self.tmp, "h.sqlite")
        history.connect(target).close()
        rc, err = self.history("--db", target, "version")
        self.assertEqual(rc, 0, err)
        rc, err = self.history("version", PAGELOCK_HISTORY=target)
        self.assertEqual(rc, 0, err)
        self.assertFalse(os.path.exists(self.log), "a SQLite history probed or started $PAGELOCK_PYTHON")


if __name__ == "__main__":
    unittest.main()
