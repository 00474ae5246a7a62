#!/usr/bin/env python3
"""Run history: an embedded SQLite file (default runs/history.sqlite) or a shared PostgreSQL
database (`postgresql://` URL, Debian's python3-psycopg2), with one schema and the same ordered
migrations on both.

Every qualification run is stored with its fingerprint, driver, harness commit, label, tier, run
directory, per-case status, duration and attempts, metrics and seed. A run is written in one
transaction, so a run killed half-way leaves no trace; a run is keyed by its run key, so storing
or importing it again changes nothing. Many hosts may write at once (PostgreSQL; SQLite through
WAL mode and a busy timeout).

Schema versions. SQLite keeps the version in `PRAGMA user_version`, PostgreSQL in the table
`schema_version`. `connect` applies the missing migrations in order, each in its own
transaction, and refuses a database newer than this code knows rather than misread it. A SQLite
file written before versioning existed (user_version 0 with a `runs` table) is version 1.

  1  runs, cases (case_id text), metrics: the schema of the first nightly qualification
  2  fleet: runs get label, tier, night, run_dir, report, stored_at and n_cases; case ids move
     to case_names and cases refer to them by number (a year of a 1,000-GPU lab is ~90 M case
     rows); partial indexes on the failing and the not-run cases, which the fleet report reads
  3  rosters (the hosts a night expected, stored by `fleet submit`); case_nights
     (per SKU, case and night: did it pass / fail anywhere; the fleet report's brackets read it
     instead of walking every run of the SKU); metrics(run_id) index (retention); metric values
     may be NULL with a flag (a NaN is stored, flagged, instead of losing the run);
     runs(host, id) and runs(sku, night, started_at) indexes

Migrations are applied by `history.py migrate` (an operator, once), never implicitly by a client
of a PostgreSQL history: a client finding an older schema stops with exit 2 and says to migrate.
A new, empty database gets the current schema on first use, and a local SQLite file (one
machine, qualify's own history) is still migrated on open.

Every PostgreSQL connection sets statement_timeout and lock_timeout ($PAGELOCK_HISTORY_STATEMENT_TIMEOUT,
$PAGELOCK_HISTORY_LOCK_TIMEOUT in seconds, default 300 and 30; `migrate` lifts the statement
timeout) and TCP keepalives; SQLite waits for a lock at most the lock timeout. Passwords: use
libpq's ~/.pgpass or $PGPASSFILE, or a service (`postgresql:///?service=NAME`, $PGSERVICEFILE),
not a password in the URL; every URL printed is redacted (user:pass@, ?password=, password=).

CLI (tables on stdout, or one JSON object with --json; on a usage error that argparse finds,
{"tool": "history", "exit_code": 2, "error"}):
  history.py [--db FILE|URL] [--sku SKU | --run KEY] [--json] runs | bracket CASE_ID | trend METRIC | metrics
  history.py [--db FILE|URL] import RUN_DIR...   store run directories (idempotent)
  history.py [--db FILE|URL] import [--host H] [--night D] RUN_DIR...
                                                 store each folder it can; lists what it skipped;
                                                 --host files the runs under H (the fleet's node
                                                 name) instead of the fingerprint's host
  history.py [--db FILE|URL] version             schema version of the database
  history.py [--db FILE|URL] migrate             apply the pending schema migrations
  history.py [--db FILE|URL] prune --before YYYY-MM-DD   delete the runs of older nights
--db (a SQLite path or a postgresql:// URL) defaults to $PAGELOCK_HISTORY, else runs/history.sqlite.
Started by a python3 that cannot import psycopg2, a postgresql:// history re-executes the command
once, before any work, under $PAGELOCK_PYTHON, /usr/bin/python3 or python3 on PATH, the first that
can (reports/interpreter.py); a SQLite history runs where it was started.
The SKU comes from the runs (the run named by --run, else the latest run with the case or metric)
unless --sku names it. Exit codes: 0 answered; 1 the database cannot be reached or failed (a
full disk included); 2 bad usage, no such database/run/case/metric, a schema newer (or, on
PostgreSQL, older: run `migrate`) than this code, not a results.json, an import folder skipped;
3 `bracket` found the case failing; 4 the history holds no run.
"""

import datetime
import json
import math
import os
import re
import sqlite3
import sys
import time

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.history"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import cliargs
from reports import model
from reports import settings
# The storage (connections, schema, migrations, status predicates) is history_schema's; these
# names stay reachable as history.X for the fleet tools.
from reports.history_schema import (  # noqa: F401
    CASE_COLUMNS, FAILING, METRIC_COLUMNS, NOT_RUN, NOT_RUN_SQL, PASSING, PROBLEM_SQL, RUN_COLUMNS,
    SCHEMA_VERSION, HistoryError, HistoryUnavailable, SchemaTooOld, _in, _now, connect, has_password,
    is_url, migrate_to, redact, timeouts)


# ---- The one coupling to the model (reports/model.py) -------------------------------------------
# Everything history reads from a run goes through these two functions, so a change of the model
# changes only them.

def load_run_dir(run_dir):
    """(info dict, Run, {case id: comparison status}) from RUN_DIR/results.json."""
    path = os.path.join(run_dir, "results.json")
    try:
        if os.path.getsize(path) > model.RESULTS_MAX_BYTES:
            raise model.ResultsError(f"larger than the {model.RESULTS_MAX_BYTES >> 20} MiB a results file may be "
                                     "(docs/qualification.md, Limits); not read")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        run_json = data.get("run", data)
        if "format_version" in data and isinstance(run_json, dict):
            run_json = dict(run_json, format_version=run_json.get("format_version", data["format_version"]))
        n = len(run_json.get("cases", [])) if isinstance(run_json, dict) else 0
        if n > model.RESULTS_MAX_CASES:
            raise model.ResultsError(f"{n:,} cases, more than the {model.RESULTS_MAX_CASES:,} a results file may "
                                     "hold (docs/qualification.md, Limits); not read")
        run = model.Run.from_json(run_json)
        run.one_record_per_case()  # one id twice: one row, the worse status (reports/model.py's rule)
        return data.get("info", {}), run, data.get("comparison") or {}
    except OSError as e:
        raise HistoryError(f"{path}: cannot read: {e.strerror}") from None
    except Exception as e:  # noqa: BLE001 -- malformed JSON or a model error: name the file
        raise HistoryError(f"{path}: not a pagelock results.json ({type(e).__name__}: {e})") from None


def rows_of_run(run, comparison):
    """(fingerprint, [(case id, status, comparison, seconds, attempts, message)],
    [(case id, metric name, value)]) from a typed Run."""
    status = getattr(comparison, "status", comparison) or {}
    cases, metrics = [], []
    for c in model.one_per_id(run.cases):  # one row per case and run: the rule of reports/model.py
        st = str(c.status)
        attempts = " ".join(str(a) for a in c.attempts)
        comp = status.get(c.id)
        cases.append((c.id, st, str(comp) if comp is not None else None, c.seconds,
                      attempts if attempts and attempts != st else None,
                      (c.message or "")[:4000] or None))
        metrics += [(c.id, k) + _metric_value(float(m.value)) for k, m in c.metrics.items()]
    return run.fingerprint, cases, metrics


def _metric_value(v):
    """(value, flag): a NaN is stored as NULL flagged 'NaN' (neither backend stores a NaN in a
    NOT NULL REAL), so the run reaches the history and the trend skips the point."""
    if isinstance(v, float) and math.isnan(v):
        return None, "NaN"
    return v, None

# -------------------------------------------------------------------------------------------------


def case_refs(db, names):
    """{case id: number}, adding new case ids (in their own short transaction, sorted, so
    concurrent writers take row locks in one order and never deadlock)."""
    names = sorted(set(names))
    out = {}
    for i in range(0, len(names), 500):
        chunk = names[i:i + 500]
        marks = ",".join("?" * len(chunk))
        out.update(db.execute(f"SELECT name, id FROM case_names WHERE name IN ({marks})", chunk).fetchall())
    missing = [n for n in names if n not in out]
    if missing:
        db.begin()
        try:
            for n in missing:
                db.execute("INSERT INTO case_names (name) VALUES (?) ON CONFLICT (name) DO NOTHING", (n,))
            db.commit()
        except BaseException:
            db.rollback()
            raise
        for i in range(0, len(missing), 500):
            chunk = missing[i:i + 500]
            marks = ",".join("?" * len(chunk))
            out.update(db.execute(f"SELECT name, id FROM case_names WHERE name IN ({marks})", chunk).fetchall())
    return out


def store(db, run_key, started_at, run, comparison, sku, commit, exit_code, verdict,
          label=None, tier=None, run_dir=None, report=None, host=None, night=None):
    """Stores one run atomically; returns its id. A run_key already stored is left as it is and
    its id returned (`stored_new` tells which), so storing and importing are idempotent."""
    rid, _ = store_new(db, run_key, started_at, run, comparison, sku, commit, exit_code, verdict,
                       label, tier, run_dir, report, host, night)
    return rid


def night_of(started_at, tz=None):
    """The night a run belongs to: the date of its start in the time zone $PAGELOCK_NIGHT_TZ
    (an IANA name; default UTC) minus $PAGELOCK_NIGHT_CUTOFF_HOURS (default 0): with 12, a run
    started between noon and the next noon is one night, however it crosses midnight."""
    tz = tz or settings.value("PAGELOCK_NIGHT_TZ")
    try:
        cutoff = float(settings.value("PAGELOCK_NIGHT_CUTOFF_HOURS"))
    except ValueError:
        cutoff = 0.0
    text = str(started_at)
    try:
        t = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text[:10]
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    if tz != "UTC" or cutoff:
        try:
            import zoneinfo
            t = t.astimezone(zoneinfo.ZoneInfo(tz))
        except Exception:  # noqa: BLE001 -- an unknown zone: say so where it is configured
            raise HistoryError(f"$PAGELOCK_NIGHT_TZ={tz!r}: not a time zone this Python knows") from None
    else:
        t = t.astimezone(datetime.timezone.utc)
    return (t - datetime.timedelta(hours=cutoff)).date().isoformat()


def stored_id(db, run_key):
    row = db.execute("SELECT id FROM runs WHERE run_key = ?", (run_key,)).fetchone()
    return row[0] if row else None


def store_new(db, run_key, started_at, run, comparison, sku, commit, exit_code, verdict,
              label=None, tier=None, run_dir=None, report=None, host=None, night=None):
    """(run id, True if this call stored it; False if the run key was already there). `host`,
    when given, is the host the run is filed under: a fleet task passes its Slurm node name, which
    the roster knows, while the fingerprint keeps the machine's own hostname (often fully
    qualified, or `vm`); a fingerprint without one (a partial, interrupted run) takes `host`.
    `night` overrides night_of(started_at) (fleet tasks pass their submission's night)."""
    existing = stored_id(db, run_key)
    if existing is not None:
        return existing, False
    fp, cases, metrics = rows_of_run(run, comparison)
    fp = dict(fp)
    if host and not fp.get("host"):
        fp["host"] = host
    night = night or night_of(started_at)
    refs = case_refs(db, [c[0] for c in cases] + [m[0] for m in metrics])
    values = (run_key, started_at, host or fp.get("host"), sku, fp.get("gpu0_name"), fp.get("gpu0_uuid"),
              fp.get("nvidia_driver"), fp.get("cuda_driver_version"), fp.get("cuda_runtime_version"),
              commit, model.run_seed_of(fp), verdict, exit_code, json.dumps(fp, sort_keys=True),
              label, tier, night, run_dir, report, _now(), len(cases))
    # Per SKU, case and night: passed somewhere / failed somewhere. Sorted, so concurrent writers
    # of one night take the keys in one order (no deadlock); most rows exist already (DO NOTHING).
    outcomes = sorted({(sku, refs[c[0]], "P" if c[1] in PASSING else "F", night) for c in cases
                       if c[1] in PASSING or c[1] in FAILING})
    db.begin()
    try:
        row = db.execute(
            f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES ({','.join('?' * len(RUN_COLUMNS))})"
            " ON CONFLICT (run_key) DO NOTHING RETURNING id", values).fetchone()
        if row is None:  # another writer stored the same run key first
            db.rollback()
            return stored_id(db, run_key), False
        rid = row[0]
        db.insert_many("cases", CASE_COLUMNS, [(rid, refs[c[0]]) + c[1:] for c in cases])
        db.insert_many("metrics", METRIC_COLUMNS, [(rid, refs[m[0]], m[1], m[2], m[3]) for m in metrics])
        db.insert_many("case_nights", ("sku", "case_ref", "outcome", "night"), outcomes,
                       " ON CONFLICT DO NOTHING")
        db.commit()
    except BaseException as e:
        db.rollback()
        if isinstance(e, sqlite3.Error) or type(e).__module__.startswith("psycopg2"):
            raise HistoryError(f"{redact(db.target)}: storing run {run_key} failed, nothing was stored: "
                               f"{type(e).__name__}: {str(e).strip()}") from None
        raise
    return rid, True


def import_run_dir(db, run_dir, host=None, night=None):
    """Stores RUN_DIR (results.json written by qualify) unless it is already there. Returns (run
    key, run id, True if stored now). A run folder is one run: importing it again is a no-op. A
    key already stored from another folder is another run of the same host in the same second
    (two fleet nights back to back, each qualify with --no-history, so neither could see the
    other's key): it is stored under the key with -2, -3, ..., as qualify names such a run when it
    can see the history, never dropped as "already stored"."""
    info, run, comparison = load_run_dir(run_dir)
    base = info.get("run_key") or os.path.basename(os.path.normpath(run_dir))
    started = info.get("started_at")
    if not started:
        raise HistoryError(f"{run_dir}/results.json: no info.started_at; not a qualify run directory")
    run_dir = os.path.abspath(run_dir)
    key, n = base, 1
    while True:
        row = db.execute("SELECT id, run_dir FROM runs WHERE run_key = ?", (key,)).fetchone()
        if row is None or not row[1] or row[1] == run_dir:
            break  # free, or this very folder (or a row that never recorded its folder)
        n += 1
        key = f"{base}-{n}"
    report = os.path.join(run_dir, "index.html")
    rid, new = store_new(
        db, key, started, run, comparison, info.get("sku") or "unknown",
        (info.get("bundle") or {}).get("commit", ""), info.get("exit_code"), info.get("verdict"),
        label=info.get("label") or None, tier=info.get("tier"), run_dir=run_dir,
        report=report if os.path.exists(report) else None, host=host, night=night)
    return key, rid, new


def runs(db, sku=None, limit=50):
    q = "SELECT id, run_key, started_at, sku, nvidia_driver, harness_commit, verdict FROM runs"
    args = ()
    if sku:
        q += " WHERE sku = ?"
        args = (sku,)
    return db.execute(q + " ORDER BY started_at DESC, id DESC LIMIT ?", args + (limit,)).fetchall()


def latest_run_key(db, sku, exclude_key=None):
    """The run of `sku` STORED last (highest insertion id), other than exclude_key: qualify's
    `--baseline auto`. Not the latest started_at: a shared history mixes the clocks of many hosts,
    and a host whose clock is a day behind must not hide the run stored just before."""
    row = db.execute("SELECT run_key FROM runs WHERE sku = ? AND run_key != ?"
                     " ORDER BY id DESC LIMIT 1", (sku, exclude_key or "")).fetchone()
    return row[0] if row else None


def prune(db, before, batch=500, log=None):
    """Deletes the runs of nights before `before` (YYYY-MM-DD) with their cases and metrics (the
    cascade uses cases' primary key and metrics_by_run), the rosters and case_nights of those
    nights, `batch` runs per transaction so no lock is held long. Returns (runs deleted, seconds)."""
    t0 = time.monotonic()
    total = 0
    while True:
        ids = [r[0] for r in db.execute("SELECT id FROM runs WHERE night < ? ORDER BY id LIMIT ?",
                                        (before, batch)).fetchall()]
        if not ids:
            break
        marks = ",".join("?" * len(ids))
        db.begin()
        try:
            db.execute(f"DELETE FROM metrics WHERE run_id IN ({marks})", ids)
            db.execute(f"DELETE FROM cases WHERE run_id IN ({marks})", ids)
            db.execute(f"DELETE FROM runs WHERE id IN ({marks})", ids)
            db.commit()
        except BaseException:
            db.rollback()
            raise
        total += len(ids)
        if log:
            log(f"deleted {total} runs ({time.monotonic() - t0:.1f} s)")
    db.begin()
    try:
        db.execute("DELETE FROM case_nights WHERE night < ?", (before,))
        db.execute("DELETE FROM rosters WHERE night < ?", (before,))
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return total, time.monotonic() - t0


def store_roster(db, label, night, hosts, submitted_at=None):
    """The hosts a submission expected: [{host, sku, features, gres, state, reason, job_id}];
    state 'expected' (a task was submitted for it) or 'excluded' (drained/down at submit, with
    Slurm's reason). A resubmission of the label replaces its roster."""
    at = submitted_at or _now()
    db.begin()
    try:
        db.execute("DELETE FROM rosters WHERE label = ?", (label,))
        db.insert_many("rosters", ("label", "host", "night", "sku", "features", "gres", "state", "reason",
                                   "job_id", "submitted_at"),
                       [(label, h["host"], night, h.get("sku"), h.get("features"), h.get("gres"),
                         h.get("state", "expected"), h.get("reason"), h.get("job_id"), at) for h in hosts])
        db.commit()
    except BaseException:
        db.rollback()
        raise


def roster(db, label=None, night=None):
    where, arg = ("label = ?", label) if label else ("night = ?", night)
    keys = ("label", "host", "night", "sku", "features", "gres", "state", "reason", "job_id", "submitted_at")
    return [dict(zip(keys, r)) for r in db.execute(
        f"SELECT {', '.join(keys)} FROM rosters WHERE {where} ORDER BY host", (arg,)).fetchall()]


def bracket(db, case_id, sku):
    """(last passing run, first failing run after it) for the case's most recent failure on
    `sku`; each a dict or None. Failing = FAIL, CRASH, TIMEOUT, MISSING, INFRA_ERROR."""
    rows = db.execute(
        "SELECT r.id, r.run_key, r.started_at, r.nvidia_driver, r.harness_commit, c.status"
        " FROM cases c JOIN runs r ON r.id = c.run_id JOIN case_names n ON n.id = c.case_ref"
        " WHERE n.name = ? AND r.sku = ? ORDER BY r.started_at, r.id", (case_id, sku)).fetchall()
    keys = ("id", "run_key", "started_at", "nvidia_driver", "harness_commit", "status")
    last_pass = first_fail = None
    for row in rows:
        d = dict(zip(keys, row))
        if d["status"] in PASSING:
            last_pass, first_fail = d, None
        elif d["status"] in FAILING and first_fail is None:
            first_fail = d
    return last_pass, first_fail


def trend(db, metric, sku, limit=20):
    """[(run_key, nvidia_driver, value)] oldest first, for the last `limit` runs having it."""
    rows = db.execute(
        "SELECT r.run_key, r.nvidia_driver, AVG(m.value) FROM metrics m JOIN runs r ON r.id = m.run_id"
        " WHERE m.name = ? AND r.sku = ? AND m.value IS NOT NULL GROUP BY r.id, r.run_key, r.nvidia_driver, r.started_at"
        " ORDER BY r.started_at DESC, r.id DESC LIMIT ?",
        (metric, sku, limit)).fetchall()
    return [tuple(r) for r in reversed(rows)]


def metric_names(db, sku):
    return [r[0] for r in db.execute(
        "SELECT DISTINCT m.name FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.sku = ? ORDER BY 1",
        (sku,))]


def default_target():
    return settings.value("PAGELOCK_HISTORY")


# ---- CLI ---------------------------------------------------------------------------------------
# Exit codes, the meanings of the README's table: 0 answered; 1 infrastructure (the database cannot
# be reached or fails mid-query); 2 bad usage or configuration (no such database, a schema newer
# than this code, no such run, case or metric, not a results.json); 3 `bracket` found the case
# failing (the bracket to bisect is printed); 4 the history holds no run (to list, or to take a
# SKU from), as `fleet report` exits 4 for a night without runs.
EXIT_OK, EXIT_INFRA, EXIT_USAGE, EXIT_FAILING, EXIT_EMPTY = 0, 1, 2, 3, 4


class UsageError(Exception):
    pass


class EmptyHistory(Exception):
    pass


def table(headers, rows):
    """Plain aligned columns, one header line: readable in a terminal and by `column`/`awk`."""
    cells = [[("" if v is None else str(v)) for v in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    fmt = lambda r: "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in cells])


def run_row(db, run_key):
    row = db.execute("SELECT run_key, sku FROM runs WHERE run_key = ?", (run_key,)).fetchone()
    if not row:
        near = [r[0] for r in db.execute("SELECT run_key FROM runs ORDER BY started_at DESC, id DESC LIMIT 5")]
        raise UsageError(f"no run {run_key!r} in the history" + (f"; latest runs: {', '.join(near)}" if near else
                                                                 "; it holds no run"))
    return tuple(row)


def _unknown(db, kind, name, candidates):
    import difflib
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    return UsageError(f"no {kind} {name!r} in the history" + (f"; did you mean {', '.join(close)}?" if close else ""))


def resolve_sku(db, args, case=None, metric=None):
    """The SKU a query is about: --sku as given, else the SKU of the run named by --run, else the
    SKU of the latest run that has the case (or metric), else of the latest run."""
    if args.sku:
        if not db.execute("SELECT 1 FROM runs WHERE sku = ? LIMIT 1", (args.sku,)).fetchone():
            skus = [r[0] for r in db.execute("SELECT DISTINCT sku FROM runs WHERE sku IS NOT NULL")]
            raise UsageError(f"no run of SKU {args.sku!r} in the history (SKUs: {', '.join(sorted(skus)) or 'none'})")
        return args.sku
    if args.run:
        return run_row(db, args.run)[1]
    if case is not None:
        row = db.execute("SELECT r.sku FROM cases c JOIN runs r ON r.id = c.run_id JOIN case_names n"
                         " ON n.id = c.case_ref WHERE n.name = ? ORDER BY r.started_at DESC, r.id DESC LIMIT 1",
                         (case,)).fetchone()
        if not row:
            raise _unknown(db, "case", case, [r[0] for r in db.execute("SELECT name FROM case_names")])
        return row[0]
    if metric is not None:
        row = db.execute("SELECT r.sku FROM metrics m JOIN runs r ON r.id = m.run_id WHERE m.name = ?"
                         " ORDER BY r.started_at DESC, r.id DESC LIMIT 1", (metric,)).fetchone()
        if not row:
            raise _unknown(db, "metric", metric, [r[0] for r in db.execute("SELECT DISTINCT name FROM metrics")])
        return row[0]
    row = db.execute("SELECT sku FROM runs ORDER BY started_at DESC, id DESC LIMIT 1").fetchone()
    if not row:
        raise EmptyHistory("the history holds no run")
    return row[0]


def cli_runs(db, args):
    q = ("SELECT run_key, started_at, host, sku, nvidia_driver, harness_commit, label, tier, verdict"
         " FROM runs")
    params = ()
    if args.sku or args.run:
        q += " WHERE sku = ?"
        params = (resolve_sku(db, args),)
    rows = db.execute(q + " ORDER BY started_at DESC, id DESC LIMIT ?", params + (args.limit,)).fetchall()
    keys = ("run_key", "started_at", "host", "sku", "driver", "commit", "label", "tier", "verdict")
    out = [dict(zip(keys, r)) for r in rows]
    text = table(["run", "started", "host", "SKU", "driver", "commit", "label", "tier", "verdict"],
                 [[r["run_key"], r["started_at"], r["host"], r["sku"], r["driver"], (r["commit"] or "")[:12],
                   r["label"], r["tier"], r["verdict"]] for r in out]) if out else "no run in the history"
    return (EXIT_OK if out else EXIT_EMPTY), {"sku": params[0] if params else None, "runs": out}, text


def _same_build(a, b):
    """Whether two runs had the same driver and the same clean harness commit: then there is
    nothing to bisect between them. A '-dirty' or unknown commit may hide a change."""
    commit = a["harness_commit"] or ""
    return a["nvidia_driver"] == b["nvidia_driver"] and commit == b["harness_commit"] and \
        bool(commit) and not commit.endswith("-dirty")


def cli_bracket(db, args):
    case = args.arg[0]
    sku = resolve_sku(db, args, case=case)
    if not db.execute("SELECT 1 FROM cases c JOIN runs r ON r.id = c.run_id JOIN case_names n ON n.id = c.case_ref"
                      " WHERE n.name = ? AND r.sku = ? LIMIT 1", (case, sku)).fetchone():
        raise UsageError(f"case {case!r} never ran on SKU {sku!r}")
    last_pass, first_fail = bracket(db, case, sku)
    rows = []
    for what, r in (("last pass", last_pass), ("first failure", first_fail)):
        rows.append([what] + ([r["run_key"], r["started_at"], r["nvidia_driver"], (r["harness_commit"] or "")[:12],
                               r["status"]] if r else ["none in the history", "", "", "", ""]))
    text = f"case {case} on {sku}\n" + table(["", "run", "started", "driver", "commit", "status"], rows)
    if first_fail and last_pass and _same_build(last_pass, first_fail):
        text += "\nsame driver and commit: not a driver or harness change"
    elif first_fail:
        text += ("\nbisect between the two drivers/commits above" if last_pass else
                 "\nthe case never passed on this SKU before it failed")
    else:
        text += "\nno failure since the last pass"
    return (EXIT_FAILING if first_fail else EXIT_OK), \
        {"case": case, "sku": sku, "last_pass": last_pass, "first_failure": first_fail}, text


def cli_trend(db, args):
    metric = args.arg[0]
    sku = resolve_sku(db, args, metric=metric)
    points = trend(db, metric, sku, args.limit)
    if not points:
        raise UsageError(f"metric {metric!r} was never recorded on SKU {sku!r}")
    out = [{"run_key": k, "driver": d, "value": v} for k, d, v in points]
    text = f"{metric} on {sku}, oldest first\n" + table(["run", "driver", "value"],
                                                        [[k, d, f"{v:.3f}"] for k, d, v in points])
    return EXIT_OK, {"metric": metric, "sku": sku, "points": out}, text


def cli_metrics(db, args):
    sku = resolve_sku(db, args)
    names = metric_names(db, sku)
    return EXIT_OK, {"sku": sku, "metrics": names}, (f"metrics on {sku}:\n" + "\n".join(names) if names
                                                      else f"no metric recorded on {sku}")


def cli_import(db, args):
    """Each folder on its own: what can be stored is stored, and each result is printed as it
    happens (a batch after a node died holds folders without results.json). Exit 0 when every
    folder is stored or was already; 1 when the database failed for one (the rest were tried);
    2 when one was skipped (no results.json, not a results.json)."""
    done, code = [], EXIT_OK
    for d in args.arg:
        entry = {"run_dir": os.path.abspath(d)}
        if not os.path.isfile(os.path.join(d, "results.json")):
            entry.update(result="skipped", reason="not a run directory (no results.json)")
            code = max(code, EXIT_USAGE) if code != EXIT_INFRA else code
        else:
            try:
                key, rid, new = import_run_dir(db, d, host=args.host, night=args.night)
                entry.update(run_key=key, run_id=rid, result="imported" if new else "already stored")
            except HistoryError as e:
                infra = e.infra or "results.json" not in str(e)
                entry.update(result="failed" if infra else "skipped", reason=str(e))
                code = EXIT_INFRA if infra else (code if code == EXIT_INFRA else EXIT_USAGE)
        done.append(entry)
        if not args.json:
            line = (f"{entry['result']}: {entry['run_key']} (run {entry['run_id']})" if "run_key" in entry
                    else f"{entry['result']}: {entry['run_dir']}: {entry['reason']}")
            print(line, file=sys.stdout if "run_key" in entry else sys.stderr, flush=True)
    counts = {}
    for x in done:
        counts[x["result"]] = counts.get(x["result"], 0) + 1
    text = "import: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    return code, {"imports": done}, text


def cli_migrate(db, args):
    before = db.version()
    migrate_to(db, SCHEMA_VERSION)
    after = db.version()
    return EXIT_OK, {"from": before, "to": after}, (f"migrated from schema {before} to {after}" if before != after
                                                    else f"schema {after} is current; nothing to do")


def cli_prune(db, args):
    if not args.before or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", args.before):
        raise UsageError("prune needs --before YYYY-MM-DD")
    n, secs = prune(db, args.before)
    return EXIT_OK, {"deleted_runs": n, "seconds": round(secs, 3), "before": args.before}, \
        f"deleted {n} runs of nights before {args.before} in {secs:.2f} s"


def cli_version(db, args):
    v = db.version()
    return EXIT_OK, {"schema_version": v, "backend": db.backend}, str(v)


def _parser(argv=None):
    import argparse
    p = cliargs.Parser(
        tool="history", json_errors=cliargs.wants_json(argv),
        prog="reports/history.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Query the run history (a SQLite file or a postgresql:// URL) or import run directories.",
        epilog="queries:\n"
               "  runs              latest runs, newest first (all SKUs unless --sku/--run)\n"
               "  bracket CASE_ID   last pass and first failure after it: the pair to bisect\n"
               "  trend METRIC      a metric's values, oldest first\n"
               "  metrics           metric names recorded\n"
               "  import RUN_DIR... store qualify run directories (idempotent); a folder that cannot\n"
               "                    be stored is listed and the others are still stored\n"
               "  version           the database's schema version\n"
               "  migrate           apply pending schema migrations (an operator, once per upgrade)\n"
               "  prune --before D  delete the runs of nights before D (YYYY-MM-DD)\n"
               "The SKU is --sku, else the SKU of the run named by --run, else of the latest run that has\n"
               "the case (bracket) or metric (trend), else of the latest run.\n"
               "exit codes: 0 answered; 1 the database cannot be reached or failed; 2 bad usage, no such\n"
               "database, run, case or metric, a schema newer (PostgreSQL: older, run migrate) than this\n"
               "tool, not a results.json, an import folder skipped;\n"
               "3 bracket: the case is failing (the bracket is printed); 4 the history holds no run")
    p.add_argument("--db", "--history", dest="db", default=None,
                   help="SQLite file or postgresql:// URL (default $PAGELOCK_HISTORY, else runs/history.sqlite)")
    p.add_argument("--sku", help="the SKU to query (default: taken from the runs, see below)")
    p.add_argument("--run", help="a run key: query the SKU of that run")
    p.add_argument("--limit", type=int, default=50, help="rows of runs/trend (default 50)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--host", help="import: the host to file the runs under (a fleet task passes its Slurm node"
                                  " name); default the fingerprint's host. The fingerprint keeps its own")
    p.add_argument("--night", help="import: the night (YYYY-MM-DD) to file the runs under")
    p.add_argument("--before", help="prune: delete runs of nights before this date (YYYY-MM-DD)")
    p.add_argument("--statement-timeout", type=float,
                   help="seconds (default $PAGELOCK_HISTORY_STATEMENT_TIMEOUT, else 300; 0 none)")
    p.add_argument("--lock-timeout", type=float, help="seconds (default $PAGELOCK_HISTORY_LOCK_TIMEOUT, else 30)")
    p.add_argument("query", choices=["runs", "bracket", "trend", "metrics", "import", "version", "migrate",
                                     "prune"])
    p.add_argument("arg", nargs="*")
    return p


def _usage_problem(args, target):
    """What is wrong with the command line before any database is opened, or None."""
    if not is_url(target) and not os.path.exists(target) and args.query != "import":
        return f"{target}: no such database"
    if args.query in ("bracket", "trend", "import") and not args.arg:
        return f"{args.query} needs an argument"
    if args.query in ("bracket", "trend") and len(args.arg) > 1:
        return f"{args.query} takes one argument, got {len(args.arg)}"
    if args.query in ("runs", "metrics", "version", "migrate", "prune") and args.arg:
        return f"{args.query} takes no argument"
    if args.query == "import" and not any(os.path.isfile(os.path.join(d, "results.json")) for d in args.arg):
        # Nothing to store: no database is created or opened for it.
        return f"not a run directory (no results.json): {', '.join(args.arg)}"
    return None


def _fail(code, msg):
    print(f"history: {redact(msg)}", file=sys.stderr)
    return code


def main(argv=None):
    cliargs.utf8_streams()
    try:
        args = _parser(argv).parse_intermixed_args(argv)  # options may follow the query: import --host H DIR
    except SystemExit as e:
        return EXIT_USAGE if e.code else EXIT_OK
    target = args.db or default_target()
    for flag, name in ((args.statement_timeout, "PAGELOCK_HISTORY_STATEMENT_TIMEOUT"),
                       (args.lock_timeout, "PAGELOCK_HISTORY_LOCK_TIMEOUT")):
        if flag is not None:
            os.environ[name] = str(flag)
    fail = _fail
    problem = _usage_problem(args, target)
    if problem:
        return fail(EXIT_USAGE, problem)
    try:
        db = connect(target, migrate=False if args.query == "migrate" else None)
    except HistoryError as e:
        # A server that cannot be reached, or a full disk, is infrastructure; a file that is no
        # database, or a schema newer than this code, is configuration.
        return fail(EXIT_INFRA if e.infra else EXIT_USAGE, e)
    if db.read_only and args.query in ("import", "migrate", "prune"):
        # A sound history on a read-only mount: every query reads it; what writes says why not.
        db.close()
        return fail(EXIT_USAGE, f"{target} is read-only ({db.read_only}): {args.query} writes to "
                                "it; copy the history somewhere writable, or give another --db")
    try:
        code, data, text = {"runs": cli_runs, "bracket": cli_bracket, "trend": cli_trend, "metrics": cli_metrics,
                            "import": cli_import, "version": cli_version, "migrate": cli_migrate,
                            "prune": cli_prune}[args.query](db, args)
    except UsageError as e:
        return fail(EXIT_USAGE, e)
    except EmptyHistory as e:
        return fail(EXIT_EMPTY, e)
    except HistoryError as e:
        return fail(EXIT_INFRA if e.infra or "results.json" not in str(e) else EXIT_USAGE, e)
    except Exception as e:  # noqa: BLE001 -- a database error is reported, never a traceback
        return fail(EXIT_INFRA, f"{redact(target)}: {type(e).__name__}: {str(e).strip()}")
    finally:
        db.close()
    if args.json:
        print(json.dumps(dict(data, query=args.query, exit_code=code), indent=1, default=str))
    else:
        print(text)
    return code


if __name__ == "__main__":
    # A postgresql:// history needs psycopg2 (Debian's python3-psycopg2, which a python3 installed
    # apart may not see): re-execute under one that has it, before any work. SQLite needs nothing.
    from reports import interpreter
    _args = interpreter.quietly(lambda: _parser().parse_intermixed_args())
    interpreter.reexec_if_missing(interpreter.history_modules(_args and (_args.db or default_target())), __file__,
                                  os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
