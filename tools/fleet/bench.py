#!/usr/bin/env python3
"""Benchmark of the shared history at lab scale: loads synthetic nights into PostgreSQL with every
index of the schema in place (as a lab writes, run after run), then times the fleet report of a
night, cold and warm, a host's upload and retention.

  /usr/bin/python3 tools/fleet/bench.py [--hosts 5000] [--nights 90] [--cases 1448] [--load-nights K]
                                        [--history URL] [--json OUT] [--repeats 5] [--keep]
  /usr/bin/python3 tools/fleet/bench.py --full        5,000 x 90 x 1448 (today's full tier), every night
  /usr/bin/python3 tools/fleet/bench.py --history URL --report-only [--repeats N]   (a kept database)

The lab: 40 % H200, 30 % H100, 20 % A100, 10 % L40S hosts; every SKU gets a new driver every 30
nights; the L40S lacks one capability (1 case in 8 NotSupported); nine cases fail on every H200
on every night and never passed (the known-failing cases real H200 runs have; the bracket's worst
case); six expected failures (EXPECTED_FAIL) on every H100; a driver bug fails one case on every
H100 for 10 nights mid-way; one H200 host (gpu-0017) has a bad board (one case fails from 20
nights before the end: its own failure night after night); on the last night a new H200 driver
fails one case on every H200; 1 case in 2,000 fails at random. Each night is written inside the
server (INSERT ... SELECT) in one transaction, with the primary key, every index, the foreign keys
and case_nights maintained as the rows go in.

--load-nights K loads only the last K nights of the --nights lab (night numbers, drivers and
scenarios as in the full lab): on a small machine the biggest size that loads in the time there
is; the report reads one night and indexes whose depth grows with the log of the rows, so the
figures say how far they carry (docs/fleet.md gives both, measured and extrapolated).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.fleet.bench"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import history
from reports import model
from reports.model import Change, Status
from tools.fleet import daemons

SKUS = ("CASE WHEN h < {a} THEN 'nvidia-h200' WHEN h < {b} THEN 'nvidia-h100' WHEN h < {c} THEN 'nvidia-a100'"
        " ELSE 'nvidia-l40s' END")


def night_date(n, nights):
    import datetime
    return (datetime.date(2026, 11, 30) - datetime.timedelta(days=nights - 1 - n)).isoformat()


def fingerprint_template():
    with open(os.path.join(ROOT, "baselines", "nvidia-h200", "results.json"), encoding="utf-8") as f:
        fp = json.load(f)["run"]["fingerprint"]
    fp["host"] = "@HOST@"
    return json.dumps(fp, sort_keys=True)


NEVER_PASSED = range(700, 709)   # fail on every H200, every night
KNOWN_H100 = range(710, 716)     # EXPECTED_FAIL on every H100
# Cases per run: the full tier's (baselines/nvidia-h200/results.json; bench_test keeps the two
# within 10 %). The scenarios name cases up to 715: fewer cases would drop them without a word.
FULL_TIER_CASES = 1448
MIN_CASES = KNOWN_H100[-1] + 1


def load_night(db, n, hosts, nights, ncases, first_ref, fp):
    d = night_date(n, nights)
    cur = db.conn.cursor()
    sku = SKUS.format(a=hosts * 4 // 10, b=hosts * 7 // 10, c=hosts * 9 // 10)
    driver = f"'5' || (70 + {n // 30} + (h %% 4)) || '.{n // 30}'"
    if n == nights - 1:
        driver = f"CASE WHEN h < {hosts * 4 // 10} THEN '590.1' ELSE {driver} END"
    base = db.execute("SELECT COALESCE(MAX(id), 0) FROM runs").fetchone()[0]
    db.begin()
    cur.execute(
        "INSERT INTO runs (id, run_key, started_at, host, sku, gpu_name, gpu_uuid, nvidia_driver, cuda_driver,"
        " cuda_runtime, harness_commit, seed, verdict, exit_code, fingerprint_json, label, tier, night,"
        " run_dir, report, stored_at, n_cases)"
        f" SELECT {base} + h + 1, %(d)s || '_gpu-' || lpad(h::text, 4, '0'),"
        " %(d)s || 'T2' || (1 + h %% 3) || ':' || lpad((h %% 60)::text, 2, '0') || ':00+00:00',"
        f" 'gpu-' || lpad(h::text, 4, '0'), {sku}, 'NVIDIA GPU', 'GPU-' || h, {driver}, '13000', '13000',"
        " 'c' || %(n)s, (h * 7919 + %(n)s)::text, 'QUALIFIED', 0,"
        " replace(%(fp)s, '@HOST@', 'gpu-' || lpad(h::text, 4, '0')), 'nightly-' || %(d)s, 'full', %(d)s,"
        " '/lab/runs/' || %(d)s || '/gpu-' || lpad(h::text, 4, '0'),"
        f" '/lab/runs/' || %(d)s || '/gpu-' || lpad(h::text, 4, '0') || '/index.html', %(d)s, {ncases}"
        f" FROM generate_series(0, {hosts - 1}) h",
        {"d": d, "n": n, "fp": fp})
    k = f"(c.id - {first_ref})"
    hnum = f"(r.id - 1 - {base})"
    known = f"(r.sku = 'nvidia-h100' AND {k} BETWEEN {KNOWN_H100[0]} AND {KNOWN_H100[-1]})"
    fail = (f"((r.sku = 'nvidia-h100' AND {k} = 57 AND {int(nights // 2 <= n < nights // 2 + 10)} = 1)"
            f" OR ({hnum} = 17 AND {k} = 42 AND {int(n >= nights - 20)} = 1)"
            f" OR (r.sku = 'nvidia-h200' AND {k} = 12 AND {int(n == nights - 1)} = 1)"
            f" OR (r.sku = 'nvidia-h200' AND {k} BETWEEN {NEVER_PASSED[0]} AND {NEVER_PASSED[-1]})"
            f" OR {known} OR random() < 0.0005)")
    ns = f"(r.sku = 'nvidia-l40s' AND {k} %% 8 = 0)"
    cur.execute(
        "INSERT INTO cases (run_id, case_ref, status, comparison, seconds, attempts, message)"
        f" SELECT run_id, case_ref, status, CASE WHEN status = '{Status.FAIL}' AND known THEN '{Change.EXPECTED_FAIL}'"
        f" WHEN status = '{Status.FAIL}' THEN '{Change.REGRESSION}' END, seconds, NULL,"
        f" CASE WHEN status = '{Status.FAIL}' THEN 'synthetic failure: expected 0x5a at offset 4096, read 0x00' END"
        f" FROM (SELECT r.id AS run_id, c.id AS case_ref, {known} AS known, CASE WHEN {ns} THEN '{Status.NOT_SUPPORTED}'"
        f" WHEN {fail} THEN '{Status.FAIL}' ELSE '{Status.PASS}' END AS status,"
        " round((random() * 2)::numeric, 3)::float8 AS seconds"
        f" FROM runs r CROSS JOIN case_names c WHERE r.night = %(d)s AND c.id < {first_ref} + {ncases}) s",
        {"d": d})
    cur.execute("INSERT INTO metrics (run_id, case_ref, name, value)"
                f" SELECT r.id, {first_ref} + 200 + m, 'bandwidth_' || m || '_GBps', 50 + random() * 5"
                " FROM runs r CROSS JOIN generate_series(0, 7) m WHERE r.night = %(d)s", {"d": d})
    # What history.store maintains per run, for the night at once.
    cur.execute("INSERT INTO case_nights (sku, case_ref, outcome, night)"
                f" SELECT DISTINCT r.sku, c.case_ref, CASE WHEN c.status = '{Status.PASS}' THEN 'P' ELSE 'F' END, r.night"
                " FROM cases c JOIN runs r ON r.id = c.run_id WHERE r.night = %(d)s"
                f" AND c.status IN ('{Status.PASS}', '{Status.FAIL}')"
                " ON CONFLICT DO NOTHING", {"d": d})
    cur.execute("UPDATE runs SET verdict = 'REGRESSIONS', exit_code = 3 WHERE night = %(d)s AND id IN"
                f" (SELECT run_id FROM cases WHERE {history.PROBLEM_SQL} AND comparison = '{Change.REGRESSION}'"
                f" AND run_id > {base})", {"d": d})
    db.commit()


def load(db, hosts, nights, ncases, log, first_night=0, budget_s=None, checkpoint=None):
    """Loads nights first_night..nights-1 with every index in place; stops early (and says so)
    when budget_s runs out. Returns (seconds, nights loaded, seconds per night)."""
    names = [f"suites/fam{k % 10}:fam{k % 10}_test/Family{k % 10}Test.Case{k:03d}ReadsAndWritesEveryByte"
             for k in range(ncases)]
    history.case_refs(db, names)
    first_ref = db.execute("SELECT MIN(id) FROM case_names").fetchone()[0]
    try:
        fp = fingerprint_template()
    except (OSError, KeyError, ValueError):
        fp = json.dumps({"host": "@HOST@", "pad": "x" * 1200})
    # Foreign-key checks are triggers, one per row: off for the synthetic load (superuser only;
    # the generated rows refer only to runs and case names just inserted). Every index, the
    # primary keys and case_nights are maintained row by row, as a lab's uploads maintain them.
    db.execute("SET session_replication_role = replica")
    t0 = time.monotonic()
    per = []
    loaded = 0
    for n in range(first_night, nights):
        if budget_s and loaded and time.monotonic() - t0 + statistics.mean(per) > budget_s:
            log(f"load budget of {budget_s:.0f} s reached after {loaded} nights")
            break
        t = time.monotonic()
        load_night(db, n, hosts, nights, ncases, first_ref, fp)
        per.append(time.monotonic() - t)
        loaded += 1
        log(f"night {n + 1}/{nights} ({night_date(n, nights)}) loaded in {per[-1]:.1f} s "
            f"(load avg {os.getloadavg()[0]:.1f})")
        if checkpoint:
            checkpoint(loaded, n)
    db.execute("SET session_replication_role = DEFAULT")
    db.execute("SELECT setval(pg_get_serial_sequence('runs', 'id'), (SELECT MAX(id) FROM runs))")
    db.execute("ANALYZE")
    return time.monotonic() - t0, loaded, per


def sizes(db):
    out = {}
    for t in ("runs", "cases", "metrics", "case_names"):
        out[t] = {"rows": db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0],
                  "table_bytes": db.execute("SELECT pg_table_size(%s)", (t,)).fetchone()[0],
                  "index_bytes": db.execute("SELECT pg_indexes_size(%s)", (t,)).fetchone()[0]}
    out["database_bytes"] = db.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    return out


def time_report(url, label, html_out, repeats=5, stats=None):
    """Wall time of the whole CLI (process start, queries, HTML), and fleet_data's own timings.
    `stats` (a dict) gets the CLI's CPU seconds (user + system) and the load average per run."""
    import resource
    walls = []
    for _ in range(repeats):
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        load = os.getloadavg()[0]
        t = time.monotonic()
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "fleet", "fleet.py"), "report",
                            "--history", url, "--label", label, "--html", html_out, "--json", html_out + ".json"],
                           capture_output=True, text=True, encoding="utf-8", errors="replace")
        walls.append(time.monotonic() - t)
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if stats is not None:
            stats.setdefault("cpu_s", []).append(round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 3))
            stats.setdefault("load_avg_1min", []).append(round(load, 2))
        if r.returncode not in (0, 3, 5):  # 3 regressed, 5 missing: written
            raise RuntimeError(f"fleet report failed (exit {r.returncode}): {r.stderr}")
    with open(html_out + ".json", encoding="utf-8") as f:
        data = json.load(f)
    return walls, data


def report_only(url, nights, repeats, html, log):
    """Times the report against a database loaded earlier (--keep), e.g. after a change of the report."""
    out = {}
    for name, n in (("last_night", nights - 1), ("mid_year", nights // 2)):
        stats = {}
        walls, data = time_report(url, f"nightly-{night_date(n, nights)}", f"{html}.{name}.html", repeats, stats)
        out[name] = {"wall_s": [round(w, 3) for w in walls], "median_wall_s": round(statistics.median(walls), 3),
                     "queries_s": data["timings_s"], **stats}
        log(f"{name}: wall {min(walls):.2f}-{max(walls):.2f} s (median {statistics.median(walls):.2f}); "
            f"cpu {stats['cpu_s']}; load {stats['load_avg_1min']}; queries {data['timings_s']}")
    return out


def time_upload(db, ncases):
    """One host's upload of an ncases-case run (history.store), median of 10."""
    times = []
    for i in range(10):
        cases = [model.Case(model.CaseId("//suites/fam0:fam0_test", "Family0Test",
                                         f"Case{k:03d}ReadsAndWritesEveryByte"), Status.PASS, 0.1)
                 for k in range(ncases)]
        run = model.Run({"host": f"upload-{i}", "nvidia_driver": "590.1", "gpu0_name": "NVIDIA H200"}, cases)
        t = time.monotonic()
        history.store(db, f"bench-upload-{i}-{time.time()}", "2026-12-01T01:00:00+00:00", run, None,
                      "nvidia-h200", "c", 0, "QUALIFIED", label="bench-upload")
        times.append(time.monotonic() - t)
    return statistics.median(times)


def explain(db, sql, params):
    cur = db.conn.cursor()
    cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
    return [r[0] if len(r[0]) < 300 else r[0][:300] + "...}" for r in cur.fetchall()]


def time_prune(db, nights):
    """Retention of the oldest night loaded, in a transaction rolled back (the data stays)."""
    oldest = db.execute("SELECT MIN(night) FROM runs WHERE label >= 'nightly-' AND label < 'nightly.'").fetchone()[0]
    n = db.execute("SELECT COUNT(*) FROM runs WHERE night = %s", (oldest,)).fetchone()[0]
    import datetime
    before = (datetime.date.fromisoformat(oldest) + datetime.timedelta(days=1)).isoformat()
    db.begin()
    t = time.monotonic()
    try:
        ids = [r[0] for r in db.execute("SELECT id FROM runs WHERE night < %s", (before,)).fetchall()]
        db.execute("DELETE FROM metrics WHERE run_id = ANY(%s)", (ids,))
        db.execute("DELETE FROM cases WHERE run_id = ANY(%s)", (ids,))
        db.execute("DELETE FROM runs WHERE id = ANY(%s)", (ids,))
        took = time.monotonic() - t
    finally:
        db.rollback()
    return {"night": oldest, "runs": n, "seconds": round(took, 2), "ms_per_run": round(took * 1000 / max(n, 1), 2)}


def restart(server):
    """Stops and starts the server on the same data: the report after it reads nothing from
    PostgreSQL's buffers (the OS page cache is left alone: other work shares this machine)."""
    server.stop_keep()
    server.start_existing()


def _parser():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hosts", type=int, default=5000)
    p.add_argument("--nights", type=int, default=90)
    p.add_argument("--cases", type=int, default=FULL_TIER_CASES,
                   help=f"cases per run (default {FULL_TIER_CASES}, the full tier's; at least {MIN_CASES})")
    p.add_argument("--load-nights", type=int, help="load only the last K nights of the lab (default: all)")
    p.add_argument("--budget", type=float, help="stop loading after this many seconds (the nights loaded are said)")
    p.add_argument("--full", action="store_true",
                   help=f"5,000 hosts x 90 nights x {FULL_TIER_CASES} cases, every night")
    p.add_argument("--checkpoints", help="after loading these many nights (e.g. 4,12,20), time the report (3 runs)")
    p.add_argument("--history", help="an empty PostgreSQL database (default: start a server here)")
    p.add_argument("--json", help="write the numbers here")
    p.add_argument("--html", default="/tmp/pagelock-fleet-bench.html")
    p.add_argument("--repeats", type=int, default=5, help="report runs per night timed (default 5)")
    p.add_argument("--report-only", action="store_true",
                   help="with --history of a database loaded earlier: time the report only")
    p.add_argument("--keep", action="store_true",
                   help="leave the server it started running (prints its folder and pid; stop it by that pid)")
    return p


def main(argv=None):
    p = _parser()
    args = p.parse_args(argv)
    if args.full:
        args.hosts, args.nights, args.cases, args.load_nights = 5000, 90, FULL_TIER_CASES, None
    if args.cases < MIN_CASES:
        p.error(f"--cases {args.cases}: the lab's scenarios use cases up to {MIN_CASES - 1} (never passed "
                f"{NEVER_PASSED[0]}-{NEVER_PASSED[-1]}, expected failures {KNOWN_H100[0]}-{KNOWN_H100[-1]}); "
                f"give at least {MIN_CASES}")

    def log(msg):
        print(f"bench: {msg}", flush=True)

    if args.report_only:
        if not args.history:
            p.error("--report-only needs --history URL of a loaded database")
        result = report_only(args.history, args.nights, args.repeats, args.html, log)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1)
        return 0
    server = None
    url = args.history
    if not url:
        server = daemons.PostgresServer().start()
        url = server.url
        log(f"PostgreSQL in {server.dir} (postmaster pid {server.postmaster_pid()})")
    first = args.nights - args.load_nights if args.load_nights else 0
    result = {"hosts": args.hosts, "nights_of_the_lab": args.nights, "cases_per_run": args.cases,
              "first_night_loaded": first, "load_avg_at_start": os.getloadavg()}
    try:
        loaded = load_lab(url, args, first, log, result)
        time_lab(url, server, args, first, loaded, log, result)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1)
        print(json.dumps(result, indent=1))
    finally:
        if server and args.keep:
            log(f"server kept: {server.url} (postmaster pid {server.postmaster_pid()}; remove {server.dir} after)")
        elif server:
            server.stop()
    return 0


def load_lab(url, args, first, log, result):
    """Loads the lab's nights (timing the report at the --checkpoints); returns the nights loaded."""
    db = history.connect(url)
    marks = {int(x) for x in args.checkpoints.split(",") if x.strip()} if args.checkpoints else set()
    growth = []

    def checkpoint(loaded, n):
        if loaded not in marks:
            return
        db.execute("ANALYZE")
        st = {}
        w, d = time_report(url, f"nightly-{night_date(n, args.nights)}", args.html + ".cp.html", 3, st)
        size = db.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        growth.append({"nights_loaded": loaded, "database_bytes": size, "report_wall_s": [round(x, 3) for x in w],
                       "queries_s": d["timings_s"], "load_avg": st.get("load_avg_1min")})
        log(f"checkpoint at {loaded} nights ({size / 2**30:.2f} GiB): report {[round(x, 2) for x in w]} s")
    load_s, loaded, per = load(db, args.hosts, args.nights, args.cases, log, first, args.budget, checkpoint)
    result["growth"] = growth
    result.update(nights_loaded=loaded, load_s=round(load_s, 1),
                  load_s_per_night={"median": round(statistics.median(per), 1), "min": round(min(per), 1),
                                    "max": round(max(per), 1)},
                  sizes=sizes(db))
    log(f"loaded {loaded} nights in {load_s:.0f} s: " + json.dumps(result["sizes"]))
    db.close()
    return loaded


def time_lab(url, server, args, first, loaded, log, result):
    """Times the fleet report (after a restart, then warm), an upload and retention; the plans."""
    last = night_date(first + loaded - 1, args.nights)
    cold = None
    if server:
        restart(server)
        cold_walls, _ = time_report(url, f"nightly-{last}", args.html + ".cold.html", 1)
        cold = round(cold_walls[0], 3)
        log(f"fleet report of {last} right after a server restart: {cold:.2f} s")
    stats = {}
    walls, data = time_report(url, f"nightly-{last}", args.html, args.repeats, stats)
    log(f"fleet report of {last}: wall {min(walls):.2f}-{max(walls):.2f} s (median "
        f"{statistics.median(walls):.2f}); queries {data['timings_s']}; load {stats.get('load_avg_1min')}")
    mid = night_date(first + loaded // 2, args.nights)
    walls_mid, data_mid = time_report(url, f"nightly-{mid}", args.html + ".mid.html", args.repeats)
    db = history.connect(url)
    upload = time_upload(db, args.cases)
    log(f"one host's upload ({args.cases} cases): median {upload * 1000:.0f} ms")
    prune_t = time_prune(db, args.nights)
    log(f"retention of one night ({prune_t['runs']} runs): {prune_t['seconds']} s")
    plans = query_plans(db, last)
    db.close()
    result.update(
        report_cold_after_restart_s=cold,
        report_last_night_wall_s=[round(w, 3) for w in walls], report_last_night_queries_s=data["timings_s"],
        report_cpu_s=stats.get("cpu_s"), report_load_avg=stats.get("load_avg_1min"),
        report_mid_wall_s=[round(w, 3) for w in walls_mid],
        report_last_night_summary={
            "hosts": data["hosts"], "new_groups": len(data["new"]), "known_groups": len(data["known"]),
            "hosts_with_coverage_lost": len(data["coverage_lost"]), "brackets": len(data["brackets"]),
            "health_rows": len(data["health"]), "drain": [h["host"] for h in data["health"] if h["drain"]],
            "top_new": [(g["case"], g["sku"], g["scope"]) for g in data["new"][:3]]},
        upload_one_run_median_s=round(upload, 4), prune_one_night=prune_t, plans=plans)


def query_plans(db, last):
    """EXPLAIN ANALYZE of the report's index-backed queries on the last night."""
    first_ref = db.execute("SELECT MIN(id) FROM case_names").fetchone()[0]
    run_ids = [x[0] for x in db.execute("SELECT id FROM runs WHERE label = %s", (f"nightly-{last}",)).fetchall()]
    return {
        "runs of a label": explain(db, "SELECT id FROM runs WHERE label = %s", (f"nightly-{last}",)),
        "problem cases of the night": explain(
            db, "SELECT c.run_id, c.case_ref FROM cases c WHERE c.run_id = ANY(%s) AND "
            + history.PROBLEM_SQL.replace("status", "c.status").replace("comparison", "c.comparison"),
            (run_ids,)),
        "bracket, never-passed case: nights with a pass": explain(
            db, "SELECT night FROM case_nights WHERE sku = 'nvidia-h200' AND case_ref = %s AND outcome = 'P'"
            " AND night <= %s ORDER BY night DESC LIMIT 3", (first_ref + NEVER_PASSED[0], last)),
        "bracket, first failing night": explain(
            db, "SELECT night FROM case_nights WHERE sku = 'nvidia-h200' AND case_ref = %s AND outcome = 'F'"
            " AND night >= '' ORDER BY night LIMIT 3", (first_ref + NEVER_PASSED[0],)),
        "retention: metrics of a run": explain(db, "SELECT 1 FROM metrics WHERE run_id = %s", (1,)),
    }


if __name__ == "__main__":
    # Always PostgreSQL: Debian's python3-psycopg2, which a python3 installed apart may not see.
    from reports import interpreter
    interpreter.reexec_if_missing("psycopg2", __file__, ROOT)
    sys.exit(main())
