"""Run history in an embedded SQLite database (default runs/history.sqlite).

Every qualification run is stored with its fingerprint, driver, harness commit, per-case status,
duration and attempts, metrics and seed. A run is written in one transaction, so a run killed
half-way leaves no trace, and WAL mode with a busy timeout lets several writers share the file.

Queries:
  bracket(case_id, sku)  last passing and first failing run of a case on one configuration: the
                         bracket for bisecting a driver regression
  trend(metric, sku)     a metric's values over the last runs
"""

import json
import os
import re
import sqlite3

SCHEMA = """
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

METRIC_RE = re.compile(r".*_(GBps|MBps|us|ms|s|MiB|GiB|count|ratio)$")


def metrics_of(case):
    """Numeric case properties whose names end in a unit: {'h2d_pinned_GBps': 54.1}."""
    out = {}
    for k, v in case.properties.items():
        if METRIC_RE.match(k):
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def connect(path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA busy_timeout=30000")
    db.execute("PRAGMA foreign_keys=ON")
    db.executescript(SCHEMA)
    return db


def store(db, run_key, started_at, run, comparison, sku, commit, exit_code, verdict):
    """Stores one run atomically; returns its id."""
    fp = run.fingerprint
    db.execute("BEGIN IMMEDIATE")
    try:
        cur = db.execute(
            "INSERT INTO runs (run_key, started_at, host, sku, gpu_name, gpu_uuid, nvidia_driver,"
            " cuda_driver, cuda_runtime, harness_commit, seed, verdict, exit_code, fingerprint_json)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_key, started_at, fp.get("host"), sku, fp.get("gpu0_name"), fp.get("gpu0_uuid"),
             fp.get("nvidia_driver"), fp.get("cuda_driver_version"), fp.get("cuda_runtime_version"),
             commit, fp.get("seed"), verdict, exit_code, json.dumps(fp, sort_keys=True)))
        run_id = cur.lastrowid
        db.executemany(
            "INSERT OR REPLACE INTO cases VALUES (?,?,?,?,?,?,?)",
            [(run_id, c.id, c.status, comparison.status.get(c.id) if comparison else None,
              c.seconds, c.properties.get("attempts", c.status), c.message[:4000]) for c in run.cases])
        db.executemany("INSERT INTO metrics VALUES (?,?,?,?)",
                       [(run_id, c.id, k, v) for c in run.cases for k, v in metrics_of(c).items()])
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return run_id


def runs(db, sku=None, limit=50):
    q = "SELECT id, run_key, started_at, sku, nvidia_driver, harness_commit, verdict FROM runs"
    args = ()
    if sku:
        q += " WHERE sku = ?"
        args = (sku,)
    return db.execute(q + " ORDER BY id DESC LIMIT ?", args + (limit,)).fetchall()


def latest_run_key(db, sku, exclude_key=None):
    row = db.execute("SELECT run_key FROM runs WHERE sku = ? AND run_key != ? ORDER BY id DESC LIMIT 1",
                     (sku, exclude_key or "")).fetchone()
    return row[0] if row else None


def bracket(db, case_id, sku):
    """(last passing run, first failing run after it) for the case's most recent failure on
    `sku`; each a dict or None. Failing = FAIL, CRASH, TIMEOUT, MISSING, INFRA_ERROR."""
    rows = db.execute(
        "SELECT r.id, r.run_key, r.started_at, r.nvidia_driver, r.harness_commit, c.status"
        " FROM cases c JOIN runs r ON r.id = c.run_id WHERE c.case_id = ? AND r.sku = ?"
        " ORDER BY r.id", (case_id, sku)).fetchall()
    failing = {"FAIL", "CRASH", "TIMEOUT", "MISSING", "INFRA_ERROR"}
    keys = ("id", "run_key", "started_at", "nvidia_driver", "harness_commit", "status")
    last_pass = first_fail = None
    for row in rows:
        d = dict(zip(keys, row))
        if d["status"] in ("PASS", "WARN"):
            last_pass, first_fail = d, None
        elif d["status"] in failing and first_fail is None:
            first_fail = d
    return last_pass, first_fail


def trend(db, metric, sku, limit=20):
    """[(run_key, nvidia_driver, value)] oldest first, for the last `limit` runs having it."""
    rows = db.execute(
        "SELECT r.run_key, r.nvidia_driver, AVG(m.value) FROM metrics m JOIN runs r ON r.id = m.run_id"
        " WHERE m.name = ? AND r.sku = ? GROUP BY r.id ORDER BY r.id DESC LIMIT ?",
        (metric, sku, limit)).fetchall()
    return list(reversed(rows))


def metric_names(db, sku):
    return [r[0] for r in db.execute(
        "SELECT DISTINCT m.name FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.sku = ? ORDER BY 1",
        (sku,))]


def main(argv=None):
    """CLI: history.py [--db FILE] [--sku SKU] runs | bracket CASE_ID | trend METRIC"""
    import argparse
    import sys
    p = argparse.ArgumentParser(prog="reports/history.py", description=main.__doc__)
    p.add_argument("--db", default="runs/history.sqlite")
    p.add_argument("--sku", default="nvidia-h200")
    p.add_argument("query", choices=["runs", "bracket", "trend", "metrics"])
    p.add_argument("arg", nargs="?")
    args = p.parse_args(argv)
    if not os.path.exists(args.db):
        print(f"history: {args.db}: no such database", file=sys.stderr)
        return 2
    db = connect(args.db)
    if args.query == "runs":
        for row in runs(db, args.sku):
            print("\t".join(str(x) for x in row))
    elif args.query == "metrics":
        print("\n".join(metric_names(db, args.sku)))
    elif not args.arg:
        print(f"history: {args.query} needs an argument", file=sys.stderr)
        return 2
    elif args.query == "bracket":
        last_pass, first_fail = bracket(db, args.arg, args.sku)
        print(f"last pass:  {last_pass}\nfirst fail: {first_fail}")
    else:
        for key, driver, value in trend(db, args.arg, args.sku):
            print(f"{key}\t{driver}\t{value:.3f}")
    return 0


if __name__ == "__main__":
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
