#!/usr/bin/env python3
"""Benchmark of the shared history: loads a year of synthetic nights for a lab into PostgreSQL
(schema and migrations of reports/history.py), then times the fleet report and a host's upload.

  /usr/bin/python3 tools/fleet/bench.py [--hosts 1000] [--nights 365] [--cases 238]
                                        [--history URL] [--json OUT] [--repeats 5] [--keep]
  /usr/bin/python3 tools/fleet/bench.py --history URL --report-only [--repeats N]   (a kept database)

Without --history it starts its own PostgreSQL server in a temporary folder (tools/fleet/daemons.py)
and stops it at the end. The lab: 400 H200, 300 H100, 200 A100 and 100 L40S hosts; every SKU gets a
new driver every 60 nights; the L40S lacks one capability (1 case in 8 NotSupported); a driver bug
fails one case on every H100 for 30 nights; one H200 host has a bad board (one case fails from
night 300); one host loses the mapped-memory family (20 cases NotSupported from night 350); on the
last night a new H200 driver fails one case on every H200; 1 case in 2,000 fails at random. Rows are
generated inside the server (INSERT ... SELECT), one night per transaction, as many hosts' uploads
would leave them.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from reports import history  # noqa: E402
from reports import results as model  # noqa: E402
from tools.fleet import daemons  # noqa: E402
from tools.fleet import report as fleet_report  # noqa: E402

SKUS = "CASE WHEN h < {a} THEN 'nvidia-h200' WHEN h < {b} THEN 'nvidia-h100' WHEN h < {c} THEN 'nvidia-a100' ELSE 'nvidia-l40s' END"


def night_date(n, nights):
    import datetime
    return (datetime.date(2026, 11, 30) - datetime.timedelta(days=nights - 1 - n)).isoformat()


def fingerprint_template():
    with open(os.path.join(ROOT, "baselines", "nvidia-h200", "results.json")) as f:
        fp = json.load(f)["run"]["fingerprint"]
    fp["host"] = "@HOST@"
    return json.dumps(fp, sort_keys=True)


def load(db, hosts, nights, ncases, log):
    cur = db.conn.cursor()
    names = [f"suites/fam{k % 10}:fam{k % 10}_test/Family{k % 10}Test.Case{k:03d}ReadsAndWritesEveryByte"
             for k in range(ncases)]
    history.case_refs(db, names)
    first_ref = db.execute("SELECT MIN(id) FROM case_names").fetchone()[0]
    try:
        fp = fingerprint_template()
    except (OSError, KeyError, ValueError):
        fp = json.dumps({"host": "@HOST@", "pad": "x" * 1200})
    sku = SKUS.format(a=hosts * 4 // 10, b=hosts * 7 // 10, c=hosts * 9 // 10)
    # Indexes are built after the load (faster than maintaining them row by row); the partial
    # indexes and the primary key are the ones migration 2 creates.
    for ix in ("cases_by_case", "cases_problems", "cases_problems_by_case", "cases_not_run"):
        db.execute(f"DROP INDEX IF EXISTS {ix}")
    db.execute("ALTER TABLE cases DROP CONSTRAINT IF EXISTS cases2_pkey")
    db.execute("ALTER TABLE cases DROP CONSTRAINT IF EXISTS cases_pkey")
    # Foreign-key checks are triggers, one per row: off for the bulk load (superuser only), on for
    # the timed upload below. The generated rows refer only to runs and case names just inserted.
    db.execute("SET session_replication_role = replica")
    t0 = time.monotonic()
    for n in range(nights):
        d = night_date(n, nights)
        driver = f"'5' || (70 + {n // 60} + (h %% 4)) || '.{n // 60}'"
        if n == nights - 1:
            driver = f"CASE WHEN h < {hosts * 4 // 10} THEN '590.1' ELSE {driver} END"
        # Host 123 lost its last 10 cases (a binary that did not run) from night 360.
        absent = f"CASE WHEN h = 123 AND {int(n >= 360)} = 1 THEN {ncases - 10} ELSE {ncases} END"
        base = n * hosts
        db.begin()
        cur.execute(
            "INSERT INTO runs (id, run_key, started_at, host, sku, gpu_name, gpu_uuid, nvidia_driver, cuda_driver,"
            " cuda_runtime, harness_commit, seed, verdict, exit_code, fingerprint_json, label, tier, night,"
            " run_dir, report, stored_at, n_cases)"
            f" SELECT {base} + h + 1, %(d)s || '_gpu-' || lpad(h::text, 4, '0'),"
            " %(d)s || 'T0' || (1 + h %% 4) || ':' || lpad((h %% 60)::text, 2, '0') || ':00+00:00',"
            f" 'gpu-' || lpad(h::text, 4, '0'), {sku}, 'NVIDIA GPU', 'GPU-' || h, {driver}, '13000', '13000',"
            " 'c' || %(n)s, (h * 7919 + %(n)s)::text, 'QUALIFIED', 0,"
            " replace(%(fp)s, '@HOST@', 'gpu-' || lpad(h::text, 4, '0')), 'nightly-' || %(d)s, 'full', %(d)s,"
            " '/lab/runs/' || %(d)s || '/gpu-' || lpad(h::text, 4, '0'),"
            f" '/lab/runs/' || %(d)s || '/gpu-' || lpad(h::text, 4, '0') || '/index.html', %(d)s, {absent}"
            f" FROM generate_series(0, {hosts - 1}) h",
            {"d": d, "n": n, "fp": fp})
        k = f"(c.id - {first_ref})"
        hnum = f"(r.id - 1 - {base})"
        fail = (f"((r.sku = 'nvidia-h100' AND {k} = 57 AND {int(200 <= n < 230)} = 1)"
                f" OR ({hnum} = 17 AND {k} = 42 AND {int(n >= 300)} = 1)"
                f" OR (r.sku = 'nvidia-h200' AND {k} = 12 AND {int(n == nights - 1)} = 1)"
                " OR random() < 0.0005)")
        ns = (f"((r.sku = 'nvidia-l40s' AND {k} %% 8 = 0)"
              f" OR ({hnum} = 99 AND {k} BETWEEN 100 AND 119 AND {int(n >= 350)} = 1))")
        cur.execute(
            "INSERT INTO cases (run_id, case_ref, status, comparison, seconds, attempts, message)"
            " SELECT run_id, case_ref, status, CASE WHEN status = 'FAIL' THEN 'REGRESSION' END, seconds, NULL,"
            " CASE WHEN status = 'FAIL' THEN 'synthetic failure: expected 0x5a at offset 4096, read 0x00' END"
            f" FROM (SELECT r.id AS run_id, c.id AS case_ref, CASE WHEN {ns} THEN 'NOT_SUPPORTED'"
            f" WHEN {fail} THEN 'FAIL' ELSE 'PASS' END AS status, round((random() * 2)::numeric, 3)::float8 AS seconds"
            f" FROM runs r CROSS JOIN case_names c WHERE r.night = %(d)s AND c.id < {first_ref} + r.n_cases) s",
            {"d": d})
        cur.execute("INSERT INTO metrics (run_id, case_ref, name, value)"
                    f" SELECT r.id, {first_ref} + 200 + m, 'bandwidth_' || m || '_GBps', 50 + random() * 5"
                    " FROM runs r CROSS JOIN generate_series(0, 7) m WHERE r.night = %(d)s", {"d": d})
        db.commit()
        if n % 30 == 29 or n == nights - 1:
            el = time.monotonic() - t0
            log(f"night {n + 1}/{nights} ({d}) loaded, {el:.0f} s, {el / (n + 1):.2f} s/night")
    db.execute("SET session_replication_role = DEFAULT")
    t1 = time.monotonic()
    db.execute("SET maintenance_work_mem = '2GB'")
    db.execute("ALTER TABLE cases ADD PRIMARY KEY (run_id, case_ref)")
    log(f"primary key built in {time.monotonic() - t1:.0f} s")
    db.execute("CREATE INDEX cases_by_case ON cases(case_ref, run_id)")
    db.execute(f"CREATE INDEX cases_problems ON cases(run_id) WHERE {history.PROBLEM_SQL}")
    db.execute(f"CREATE INDEX cases_problems_by_case ON cases(case_ref, run_id) WHERE {history.PROBLEM_SQL}")
    db.execute(f"CREATE INDEX cases_not_run ON cases(run_id, case_ref) WHERE {history.NOT_RUN_SQL}")
    log(f"all indexes built in {time.monotonic() - t1:.0f} s")
    t2 = time.monotonic()
    db.execute("UPDATE runs SET verdict = 'REGRESSIONS', exit_code = 3 WHERE id IN"
               f" (SELECT run_id FROM cases WHERE {history.PROBLEM_SQL})")
    log(f"verdicts set in {time.monotonic() - t2:.0f} s")
    db.execute(f"SELECT setval(pg_get_serial_sequence('runs', 'id'), {nights * hosts})")
    db.execute("ANALYZE")
    return time.monotonic() - t0


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
                           capture_output=True, text=True)
        walls.append(time.monotonic() - t)
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if stats is not None:
            stats.setdefault("cpu_s", []).append(round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 3))
            stats.setdefault("load_avg_1min", []).append(round(load, 2))
        if r.returncode != 0:
            raise RuntimeError(f"fleet report failed: {r.stderr}")
    with open(html_out + ".json") as f:
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
    """One host's upload of a 238-case run (history.store), median of 10."""
    times = []
    for i in range(10):
        cases = [model.Case("//suites/fam0:fam0_test", "Family0Test", f"Case{k:03d}ReadsAndWritesEveryByte",
                            "PASS", 0.1) for k in range(ncases)]
        run = model.Run({"host": f"upload-{i}", "nvidia_driver": "590.1", "gpu0_name": "NVIDIA H200"}, cases)
        t = time.monotonic()
        history.store(db, f"bench-upload-{i}-{time.time()}", "2026-12-01T01:00:00+00:00", run, None,
                      "nvidia-h200", "c", 0, "QUALIFIED", label="bench-upload")
        times.append(time.monotonic() - t)
    return statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hosts", type=int, default=1000)
    p.add_argument("--nights", type=int, default=365)
    p.add_argument("--cases", type=int, default=238)
    p.add_argument("--history", help="an empty PostgreSQL database (default: start a server here)")
    p.add_argument("--json", help="write the numbers here")
    p.add_argument("--html", default="/tmp/pagelock-fleet-bench.html")
    p.add_argument("--repeats", type=int, default=5, help="report runs per night timed (default 5)")
    p.add_argument("--report-only", action="store_true",
                   help="with --history of a database loaded earlier: time the report only")
    p.add_argument("--keep", action="store_true",
                   help="leave the server it started running (prints its folder and pid; stop it by that pid)")
    args = p.parse_args(argv)

    def log(msg):
        print(f"bench: {msg}", flush=True)

    if args.report_only:
        if not args.history:
            p.error("--report-only needs --history URL of a loaded database")
        result = report_only(args.history, args.nights, args.repeats, args.html, log)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        return 0
    server = None
    url = args.history
    if not url:
        server = daemons.PostgresServer().start()
        url = server.url
        log(f"PostgreSQL in {server.dir}")
    try:
        db = history.connect(url)
        load_s = load(db, args.hosts, args.nights, args.cases, log)
        size = sizes(db)
        log(f"loaded in {load_s:.0f} s: " + json.dumps(size))
        last = night_date(args.nights - 1, args.nights)
        walls, data = time_report(url, f"nightly-{last}", args.html, args.repeats)
        log(f"fleet report of {last}: wall {min(walls):.2f}-{max(walls):.2f} s (median "
            f"{statistics.median(walls):.2f}); queries {data['timings_s']}")
        mid = night_date(args.nights // 2, args.nights)
        walls_mid, data_mid = time_report(url, f"nightly-{mid}", args.html + ".mid.html", args.repeats)
        upload = time_upload(db, args.cases)
        log(f"one host's upload ({args.cases} cases): median {upload * 1000:.0f} ms")
        explain = {}
        for name, sql, params in [
                ("runs of a label", "SELECT id FROM runs WHERE label = %s", (f"nightly-{last}",)),
                ("cases of a run", "SELECT * FROM cases WHERE run_id = %s", (args.nights * args.hosts,)),
                ("case history on a SKU", "SELECT r.started_at FROM runs r JOIN cases c ON c.run_id = r.id"
                 " AND c.case_ref = (SELECT MIN(id) FROM case_names) WHERE r.sku = 'nvidia-h200'"
                 " AND r.started_at < %s AND c.status IN ('PASS','WARN') ORDER BY r.started_at DESC LIMIT 1",
                 (last,))]:
            cur = db.conn.cursor()
            cur.execute("EXPLAIN " + sql, params)
            explain[name] = [r[0] for r in cur.fetchall()]
        db.close()
        result = {"hosts": args.hosts, "nights": args.nights, "cases_per_run": args.cases,
                  "load_s": round(load_s, 1), "sizes": size,
                  "report_last_night_wall_s": [round(w, 3) for w in walls],
                  "report_last_night_queries_s": data["timings_s"],
                  "report_mid_year_wall_s": [round(w, 3) for w in walls_mid],
                  "report_last_night_summary": {"hosts": data["hosts"], "problem_groups": len(data["problems"]),
                                                "hosts_with_coverage_lost": len(data["coverage_lost"]),
                                                "brackets": len(data["brackets"]),
                                                "top_problems": [(g["case"], g["sku"], g["scope"]) for g in data["problems"][:3]]},
                  "upload_one_run_median_s": round(upload, 4), "plans": explain}
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        print(json.dumps(result, indent=1))
    finally:
        if server and args.keep:
            log(f"server kept: {server.url} (postgres pid {server.proc.pid}; remove {server.dir} after)")
        elif server:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
