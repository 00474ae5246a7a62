"""The fleet report: one night (or one label) of the shared history, across every host.

  SKU x driver x host verdicts (the latest run of each host)
  problems grouped by case across hosts: on every host of a SKU (a driver or SKU bug), on one
      host (a board, BIOS or host problem), or on some hosts
  coverage lost per host: cases NotSupported, skipped or missing here that ran on another host of
      the same SKU that night, and cases absent here that the SKU's fullest run had
  the good/bad bracket per failing case per SKU: the last run of the SKU where the case passed
      before tonight, and the first failing run after it (the driver/commit pair to bisect)
  links to each host's own report

fleet_data() makes a handful of indexed queries (docs/fleet.md lists them with their indexes);
render_html() makes one self-contained page (inline CSS, no script, no network).
"""

import datetime
import html
import os
import time

from reports import history

MAX_BRACKETS = 40
MAX_LOST_LISTED = 20
MAX_REPLACED_LISTED = 3
MAX_ABSENT_HOSTS = 20


def _marks(n):
    return ",".join("?" * n)


BRACKET_COLS = "r.run_key, r.host, r.nvidia_driver, r.harness_commit, r.started_at"
BRACKET_KEYS = ("run_key", "host", "driver", "commit", "started_at")
# The last pass of case v.ref on SKU v.sku before v.t, and the first failure after it up to v.t.
GOOD_SQL = (f"SELECT {BRACKET_COLS} FROM runs r JOIN cases c ON c.run_id = r.id AND c.case_ref = {{ref}}"
            " WHERE r.sku = {sku} AND r.started_at < {t} AND c.status IN ('PASS','WARN')"
            " ORDER BY r.started_at DESC LIMIT 1")
# Written as a walk of the SKU's runs in time order with one index probe per run (EXISTS), because
# the range is short (from the last pass to tonight's first failure). {fence} is PostgreSQL's
# `OFFSET 0`: without it the planner turns the EXISTS into a join that reads every failure of the
# case in the year (7,300 heap pages for 40 cases: 12 ms warm, 150+ ms in a fresh process, against
# 1 ms). SQLite plans it as written and has no bare OFFSET.
BAD_SQL = (f"SELECT {BRACKET_COLS} FROM (SELECT id, run_key, host, nvidia_driver, harness_commit, started_at"
           " FROM runs WHERE sku = {sku} AND started_at > {after} AND started_at <= {t}"
           " ORDER BY started_at {fence}) r WHERE EXISTS (SELECT 1 FROM cases c WHERE c.run_id = r.id"
           f" AND c.case_ref = {{ref}} AND c.status IN {history._in(history.FAILING)} {{fence}})"
           " ORDER BY r.started_at LIMIT 1")


def _brackets(db, groups):
    """[(good dict or None, bad dict or None)] per group. On PostgreSQL one statement for all the
    groups (a LATERAL join over a VALUES list): one round trip instead of two per case (80 for 40
    cases: 0.10 s on the benchmark's year, against 0.012 s now), and round trips are what a busy
    machine makes slow. SQLite runs in-process, so there two small queries per case cost nothing
    extra."""
    if not groups:
        return []
    n = len(BRACKET_KEYS)
    if db.backend == "postgresql":
        values = ", ".join("(?, ?, ?, ?)" for _ in groups)
        params = [p for i, g in enumerate(groups) for p in (i, g["case_ref"], g["sku"], g["first_started"])]
        good = GOOD_SQL.format(ref="v.ref", sku="v.sku", t="v.t")
        bad = BAD_SQL.format(ref="v.ref", sku="v.sku", after="COALESCE(g.started_at, '')", t="v.t",
                             fence="OFFSET 0")
        rows = db.execute(
            f"SELECT v.i, g.*, b.* FROM (VALUES {values}) AS v(i, ref, sku, t)"
            f" LEFT JOIN LATERAL ({good}) g ON true LEFT JOIN LATERAL ({bad}) b ON true", params).fetchall()
        got = {row[0]: (row[1:1 + n], row[1 + n:]) for row in rows}
        pairs = [got.get(i, ((None,) * n, (None,) * n)) for i in range(len(groups))]
    else:
        pairs = []
        for g in groups:
            good = db.execute(GOOD_SQL.format(ref="?", sku="?", t="?"),
                              (g["case_ref"], g["sku"], g["first_started"])).fetchone() or (None,) * n
            bad = db.execute(BAD_SQL.format(ref="?", sku="?", after="?", t="?", fence=""),
                             (g["sku"], good[4] or "", g["first_started"], g["case_ref"])).fetchone() or (None,) * n
            pairs.append((good, bad))
    return [tuple(dict(zip(BRACKET_KEYS, x)) if x[0] is not None else None for x in pair) for pair in pairs]


def select_runs(db, label=None, night=None):
    """Runs of the label (or the night, 'YYYY-MM-DD'); the latest per host, plus how many older
    runs of the same host it replaced."""
    if label:
        where, arg = "label = ?", label
    else:
        where, arg = "night = ?", night
    rows = db.execute(
        "SELECT id, run_key, host, sku, nvidia_driver, verdict, exit_code, started_at, report,"
        " run_dir, harness_commit, label, n_cases FROM runs WHERE " + where + " ORDER BY started_at, id",
        (arg,)).fetchall()
    keys = ("id", "run_key", "host", "sku", "driver", "verdict", "exit_code", "started_at", "report",
            "run_dir", "commit", "label", "n_cases")
    latest, replaced = {}, {}
    for row in rows:
        r = dict(zip(keys, row))
        host = r["host"] or r["run_key"]
        if host in latest:
            replaced.setdefault(host, []).append(latest[host]["run_key"])
        latest[host] = r
    out = sorted(latest.values(), key=lambda r: (r["sku"] or "", r["driver"] or "", r["host"] or ""))
    for r in out:
        earlier = replaced.get(r["host"] or r["run_key"], [])
        r["replaced_runs"] = len(earlier)
        r["replaced_keys"] = earlier[-MAX_REPLACED_LISTED:]  # the latest few, oldest first
    return out


def fleet_data(db, label=None, night=None):
    t0 = time.monotonic()
    timings = {}

    def lap(name, t):
        timings[name] = round(time.monotonic() - t, 4)
        return time.monotonic()

    t = time.monotonic()
    runs = select_runs(db, label, night)
    t = lap("runs", t)
    by_id = {r["id"]: r for r in runs}
    ids = list(by_id)
    data = {"label": label, "night": night, "generated_at":
            datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "hosts": len(runs), "runs": runs, "matrix": [], "problems": [], "coverage_lost": [],
            "brackets": [], "timings_s": timings}
    if not ids:
        return data

    # Verdicts: SKU x driver -> hosts.
    cells = {}
    for r in runs:
        cell = cells.setdefault((r["sku"], r["driver"]), {"sku": r["sku"], "driver": r["driver"],
                                                          "hosts": [], "verdicts": {}})
        cell["hosts"].append({"host": r["host"], "verdict": r["verdict"], "run_key": r["run_key"],
                              "report": r["report"]})
        cell["verdicts"][r["verdict"]] = cell["verdicts"].get(r["verdict"], 0) + 1
    data["matrix"] = list(cells.values())
    hosts_per_sku = {}
    for r in runs:
        hosts_per_sku[r["sku"]] = hosts_per_sku.get(r["sku"], 0) + 1

    # Problems: failing statuses or problem comparisons (partial index cases_problems).
    rows = db.execute(
        "SELECT c.run_id, n.name, c.status, c.comparison, c.case_ref FROM cases c"
        " JOIN case_names n ON n.id = c.case_ref"
        f" WHERE c.run_id IN ({_marks(len(ids))}) AND {history.PROBLEM_SQL.replace('status', 'c.status').replace('comparison', 'c.comparison')}",
        ids).fetchall()
    t = lap("problems", t)
    groups = {}
    for run_id, name, status, comparison, ref in rows:
        r = by_id[run_id]
        g = groups.setdefault((name, r["sku"]), {"case": name, "case_ref": ref, "sku": r["sku"],
                                                 "hosts": [], "statuses": {}, "drivers": set()})
        g["hosts"].append(r["host"])
        g["statuses"][status] = g["statuses"].get(status, 0) + 1
        g["drivers"].add(r["driver"])
        g.setdefault("first_started", r["started_at"])
        g["first_started"] = min(g["first_started"], r["started_at"])
    for g in groups.values():
        n, total = len(g["hosts"]), hosts_per_sku[g["sku"]]
        g["hosts_of_sku"] = total
        g["scope"] = ("the only host of the SKU" if total == 1 else
                      "every host of the SKU" if n == total else
                      "one host" if n == 1 else f"{n} of {total} hosts")
        g["hosts"].sort()
        g["drivers"] = sorted(d or "" for d in g["drivers"])
    order = {"every host of the SKU": 0, "the only host of the SKU": 1, "one host": 3}
    data["problems"] = sorted(groups.values(), key=lambda g: (order.get(g["scope"], 2), -len(g["hosts"]),
                                                             g["sku"] or "", g["case"]))

    # Coverage lost per host: a case NotSupported, skipped or missing here that ran on another host
    # of the same SKU (partial index cases_not_run), and cases absent here (fewer cases than the
    # SKU's fullest run tonight).
    rows = db.execute(
        f"SELECT c.run_id, c.case_ref, c.status FROM cases c WHERE c.run_id IN ({_marks(len(ids))})"
        f" AND {history.NOT_RUN_SQL.replace('status', 'c.status')}", ids).fetchall()
    not_run = {}
    for rid, ref, status in rows:
        not_run.setdefault((by_id[rid]["sku"], ref), []).append((rid, status))
    lost = {}
    for (sku, ref), where in not_run.items():
        if len(where) < hosts_per_sku[sku]:  # another host of the SKU ran it
            for rid, status in where:
                lost.setdefault(rid, []).append((ref, status))
    fullest = {}
    for r in runs:
        if (r["n_cases"] or 0) > fullest.get(r["sku"], (0, None))[0]:
            fullest[r["sku"]] = (r["n_cases"] or 0, r["id"])
    absent = {r["id"]: fullest[r["sku"]][0] - (r["n_cases"] or 0) for r in runs
              if r["n_cases"] is not None and (r["n_cases"] or 0) < fullest[r["sku"]][0]}
    t = lap("coverage_counts", t)
    refs = {ref for v in lost.values() for ref, _ in v[:MAX_LOST_LISTED]}
    listed = sorted(absent, key=lambda rid: -absent[rid])[:MAX_ABSENT_HOSTS]  # names of absent cases
    if listed:
        # One query for the case lists of those hosts and of their SKUs' fullest runs.
        want = sorted(set(listed) | {fullest[by_id[rid]["sku"]][1] for rid in listed})
        have = {}
        for rid, ref in db.execute(f"SELECT run_id, case_ref FROM cases WHERE run_id IN ({_marks(len(want))})",
                                   want).fetchall():
            have.setdefault(rid, set()).add(ref)
        for rid in listed:
            gone = sorted(have.get(fullest[by_id[rid]["sku"]][1], set()) - have.get(rid, set()))
            lost.setdefault(rid, []).extend((ref, "ABSENT") for ref in gone)
            refs.update(gone[:MAX_LOST_LISTED])
    names = {}
    refs = sorted(refs)
    for i in range(0, len(refs), 500):
        chunk = refs[i:i + 500]
        names.update(db.execute(f"SELECT id, name FROM case_names WHERE id IN ({_marks(len(chunk))})", chunk).fetchall())
    counts = {rid: max(len(v), absent.get(rid, 0) + len([x for x in v if x[1] != "ABSENT"]))
              for rid, v in lost.items()}
    for rid, n in absent.items():
        counts.setdefault(rid, n)
    data["coverage_lost"] = [
        {"host": by_id[rid]["host"], "sku": by_id[rid]["sku"], "driver": by_id[rid]["driver"], "lost": counts[rid],
         "cases": sorted(({"case": names.get(ref, str(ref)), "status": st} for ref, st in lost.get(rid, [])),
                         key=lambda x: x["case"])[:MAX_LOST_LISTED]}
        for rid in sorted(counts, key=lambda rid: (-counts[rid], by_id[rid]["host"] or ""))]
    t = lap("coverage_cases", t)

    # Brackets: per failing case per SKU, the last pass before tonight and the first failure after
    # it: two short index walks per case (runs_by_sku, then the primary key of cases).
    failing = [g for g in data["problems"][:MAX_BRACKETS] if any(s in history.FAILING for s in g["statuses"])]
    for g, (good, bad) in zip(failing, _brackets(db, failing)):
        data["brackets"].append({"case": g["case"], "sku": g["sku"], "good": good, "bad": bad})
    lap("brackets", t)
    for g in data["problems"]:
        del g["case_ref"]
    timings["total"] = round(time.monotonic() - t0, 4)
    return data


# ---- HTML ----------------------------------------------------------------------------------

CSS = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 7px;
vertical-align:top;text-align:left}th{background:#f3f3f3}code{font-size:12px;word-break:break-all}
.v{display:inline-block;padding:1px 5px;margin:1px;border-radius:3px;font-size:12px}
.ok{background:#d4f4d4}.bad{background:#f8d0d0}.warn{background:#fbecc0}.muted{color:#777}
"""


def _verdict_class(v):
    v = (v or "").upper()
    if v.startswith("QUALIFIED"):
        return "ok"
    if "REGRESS" in v or "INFRA" in v or "FAIL" in v:
        return "bad"
    return "warn"


def _link(report, out_dir):
    if not report:
        return ""
    href = report
    if out_dir and not report.startswith(("http://", "https://", "file:")):
        href = os.path.relpath(report, out_dir)
    return f'<a href="{html.escape(href)}">report</a>'


def render_html(data, out_dir=None):
    e = html.escape
    title = f"pagelock fleet report: {data['label'] or data['night']}"
    p = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)}</title>"
         f"<style>{CSS}</style></head><body><h1>{e(title)}</h1>",
         f"<p>{data['hosts']} hosts; generated {e(data['generated_at'])} in "
         f"{data['timings_s'].get('total', 0):.2f} s.</p>"]
    if not data["runs"]:
        p.append("<p>No run in the history for this selection.</p></body></html>")
        return "".join(p)

    p.append("<h2>Verdicts: SKU &times; driver &times; host</h2><table><tr><th>SKU</th><th>driver</th>"
             "<th>hosts</th><th>verdicts</th><th>per host</th></tr>")
    for c in data["matrix"]:
        counts = " ".join(f"<span class='v {_verdict_class(v)}'>{e(str(v))} &times; {n}</span>"
                          for v, n in sorted(c["verdicts"].items(), key=lambda x: str(x[0])))
        hosts = " ".join(f"<span class='v {_verdict_class(h['verdict'])}' title='{e(h['run_key'])}'>"
                         f"{e(h['host'] or '?')}</span>" for h in c["hosts"][:200])
        more = f" <span class='muted'>(+{len(c['hosts']) - 200})</span>" if len(c["hosts"]) > 200 else ""
        p.append(f"<tr><td>{e(c['sku'] or '?')}</td><td>{e(c['driver'] or '?')}</td><td>{len(c['hosts'])}</td>"
                 f"<td>{counts}</td><td>{hosts}{more}</td></tr>")
    p.append("</table>")

    p.append("<h2>Problems by case across hosts</h2>")
    if not data["problems"]:
        p.append("<p>No case failed, regressed or lost coverage against its baseline.</p>")
    else:
        p.append("<table><tr><th>case</th><th>SKU</th><th>where</th><th>statuses</th><th>drivers</th>"
                 "<th>hosts</th></tr>")
        for g in data["problems"][:500]:
            st = ", ".join(f"{e(k)} {v}" for k, v in sorted(g["statuses"].items()))
            hosts = ", ".join(e(h or "?") for h in g["hosts"][:30]) + (" ..." if len(g["hosts"]) > 30 else "")
            cls = "bad" if g["scope"].startswith("every") else "warn"
            p.append(f"<tr><td><code>{e(g['case'])}</code></td><td>{e(g['sku'] or '?')}</td>"
                     f"<td><span class='v {cls}'>{e(g['scope'])}</span> ({len(g['hosts'])}/{g['hosts_of_sku']})</td>"
                     f"<td>{st}</td><td>{e(', '.join(g['drivers']))}</td><td>{hosts}</td></tr>")
        p.append("</table>")

    p.append("<h2>Good/bad bracket per failing case per SKU</h2>")
    if not data["brackets"]:
        p.append("<p>No failing case.</p>")
    else:
        p.append("<table><tr><th>case</th><th>SKU</th><th>last pass</th><th>first failure after it</th></tr>")

        def side(x):
            if not x:
                return "<span class='muted'>none in the history</span>"
            return (f"{e(x['started_at'] or '')}<br>driver {e(x['driver'] or '?')}, commit "
                    f"<code>{e((x['commit'] or '?')[:12])}</code><br><span class='muted'>{e(x['host'] or '')} "
                    f"{e(x['run_key'])}</span>")
        for b in data["brackets"]:
            p.append(f"<tr><td><code>{e(b['case'])}</code></td><td>{e(b['sku'] or '?')}</td>"
                     f"<td>{side(b['good'])}</td><td>{side(b['bad'])}</td></tr>")
        p.append("</table>")

    p.append("<h2>Coverage lost per host</h2>")
    if not data["coverage_lost"]:
        p.append("<p>Every host ran every case that passed on another host of its SKU.</p>")
    else:
        p.append("<table><tr><th>host</th><th>SKU</th><th>driver</th><th>cases lost</th><th>which</th></tr>")
        for c in data["coverage_lost"][:300]:
            which = "<br>".join(f"<code>{e(x['case'])}</code> {e(x['status'])}" for x in c["cases"])
            if c["lost"] > len(c["cases"]):
                which += f"<br><span class='muted'>... {c['lost'] - len(c['cases'])} more</span>"
            p.append(f"<tr><td>{e(c['host'] or '?')}</td><td>{e(c['sku'] or '?')}</td>"
                     f"<td>{e(c['driver'] or '?')}</td><td>{c['lost']}</td><td>{which}</td></tr>")
        p.append("</table>")

    p.append("<h2>Hosts</h2><table><tr><th>host</th><th>SKU</th><th>driver</th><th>verdict</th>"
             "<th>started</th><th>run</th><th>own report</th></tr>")
    for r in data["runs"]:
        again = (f"<br><span class='muted'>replaces {r['replaced_runs']} earlier: "
                 f"{e(', '.join(r['replaced_keys']))}</span>") if r["replaced_runs"] else ""
        p.append(f"<tr><td>{e(r['host'] or '?')}</td><td>{e(r['sku'] or '?')}</td><td>{e(r['driver'] or '?')}</td>"
                 f"<td><span class='v {_verdict_class(r['verdict'])}'>{e(str(r['verdict']))}</span></td>"
                 f"<td>{e(r['started_at'] or '')}</td><td><code>{e(r['run_key'])}</code>{again}</td>"
                 f"<td>{_link(r['report'], out_dir)}</td></tr>")
    p.append("</table></body></html>")
    return "".join(p)
