"""The fleet report: one night (or one label) of the shared history, across every host.

  the roster: every host the night expected (stored by `fleet submit`); a host of the roster
      without a complete run is MISSING, with Slurm's reason where the caller knows it
  new regressions apart from known (expected) failures, each with its message and a link into
      the host's own report
  product failures apart from infrastructure failures, per SKU; per-host flakiness over the
      last nights and a drain recommendation for a host whose failures are its own
  SKU x driver x host verdicts (the final attempt of each host, and how many attempts)
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
import urllib.parse

from reports import history

MAX_BRACKETS = 40
MAX_LOST_LISTED = 20
MAX_REPLACED_LISTED = 3
MAX_ABSENT_HOSTS = 20
MAX_HEALTH_HOSTS = 100
HEALTH_NIGHTS = 14       # per-host flakiness window
DRAIN_AFTER = 3          # nights with the host's own failures in the window: recommend a drain
KNOWN_COMPARISONS = ("EXPECTED_FAIL", "KNOWN_FLAKE", "KNOWN_COVERAGE_LOSS")
MAX_ROWS_SHOWN = 500


def _marks(n):
    return ",".join("?" * n)


BRACKET_COLS = "r.run_key, r.host, r.nvidia_driver, r.harness_commit, r.started_at, r.night"
BRACKET_KEYS = ("run_key", "host", "driver", "commit", "started_at", "night")
# case_nights says on which nights a case passed (or failed) on some host of a SKU, so the bracket
# is two index lookups and a walk of ONE night's runs, whatever the history's length. (The walk of
# every run of the SKU that this replaced took 9.4 s for a case that never passed, at 1,000 hosts
# x 365 nights, and grew with the nights kept.)
NIGHTS_SQL = ("SELECT night FROM case_nights WHERE sku = ? AND case_ref = ? AND outcome = ? AND night {op} ?"
              " ORDER BY night {order} LIMIT 3")
PASS_IN_NIGHT_SQL = (f"SELECT {BRACKET_COLS} FROM runs r JOIN cases c ON c.run_id = r.id AND c.case_ref = ?"
                     " WHERE r.sku = ? AND r.night = ? AND r.started_at < ?"
                     f" AND c.status IN {history._in(history.PASSING)} ORDER BY r.started_at DESC LIMIT 1")
FAIL_IN_NIGHT_SQL = (f"SELECT {BRACKET_COLS} FROM runs r JOIN cases c ON c.run_id = r.id AND c.case_ref = ?"
                     " WHERE r.sku = ? AND r.night = ? AND r.started_at > ? AND r.started_at <= ?"
                     f" AND c.status IN {history._in(history.FAILING)} ORDER BY r.started_at LIMIT 1")


def _bracket(db, ref, sku, night, first_started):
    """(last pass before first_started, first failure after it): the nights from case_nights,
    the runs from the runs of that night only."""
    good = None
    for (n,) in db.execute(NIGHTS_SQL.format(op="<=", order="DESC"), (sku, ref, "P", night)).fetchall():
        good = db.execute(PASS_IN_NIGHT_SQL, (ref, sku, n, first_started)).fetchone()
        if good:
            break
    after_night, after_t = (good[5], good[4]) if good else ("", "")
    bad = None
    for (n,) in db.execute(NIGHTS_SQL.format(op=">=", order="ASC"), (sku, ref, "F", after_night)).fetchall():
        bad = db.execute(FAIL_IN_NIGHT_SQL, (ref, sku, n, after_t, first_started)).fetchone()
        if bad or n >= night:
            break
    return tuple(dict(zip(BRACKET_KEYS, x)) if x else None for x in (good, bad))


def _brackets(db, groups):
    return [_bracket(db, g["case_ref"], g["sku"], g["night"], g["first_started"]) for g in groups]


def select_runs(db, label=None, night=None):
    """Runs of the label (or the night, 'YYYY-MM-DD'); the latest per host, plus how many older
    runs of the same host it replaced."""
    if label:
        where, arg = "label = ?", label
    else:
        where, arg = "night = ?", night
    # In the order stored: a requeued attempt is stored after the interrupted one it supersedes,
    # whatever the clocks of the hosts say.
    rows = db.execute(
        "SELECT id, run_key, host, sku, nvidia_driver, verdict, exit_code, started_at, report,"
        " run_dir, harness_commit, label, n_cases, night FROM runs WHERE " + where + " ORDER BY id",
        (arg,)).fetchall()
    keys = ("id", "run_key", "host", "sku", "driver", "verdict", "exit_code", "started_at", "report",
            "run_dir", "commit", "label", "n_cases", "night")
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
        r["attempts"] = len(earlier) + 1
        r["replaced_keys"] = earlier[-MAX_REPLACED_LISTED:]  # the latest few, oldest first
    return out


def is_interrupted(verdict):
    return "INTERRUPT" in str(verdict or "").upper()


def is_infra(verdict):
    return "INFRA" in str(verdict or "").upper()


def missing_hosts(roster, runs, reasons=None):
    """Hosts of the roster without a complete final run: [{host, sku, why, reason}]. `reasons`
    {host: Slurm's word} comes from the caller (fleet status/report ask sacct/scontrol)."""
    reasons = reasons or {}
    final = {r["host"]: r for r in runs}
    out = []
    for h in roster:
        host = h["host"]
        r = final.get(host)
        if h["state"] != "expected":
            why = f"{h['state']} at submit" + (f": {h['reason']}" if h.get("reason") else "")
        elif r is None:
            why = "no run stored"
        elif is_interrupted(r["verdict"]):
            why = (f"interrupted after {r['n_cases'] or 0} cases (attempt {r['attempts']}, run {r['run_key']})")
        elif is_infra(r["verdict"]):
            why = f"run ended {r['verdict']} (run {r['run_key']})"
        else:
            continue
        slurm = reasons.get(host)
        out.append({"host": host, "sku": h.get("sku") or (r or {}).get("sku"), "why": why,
                    "slurm": slurm, "reason": why + (f"; Slurm: {slurm}" if slurm else ""),
                    "job_id": h.get("job_id"), "run": r})
    return out


def fleet_data(db, label=None, night=None, slurm_reasons=None, health_nights=HEALTH_NIGHTS):
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
    roster = history.roster(db, label=label, night=night) if _has_rosters(db) else []
    t = lap("roster", t)
    data = {"label": label, "night": night, "generated_at":
            datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "hosts": len(runs), "runs": runs, "matrix": [], "problems": [], "coverage_lost": [],
            "brackets": [], "timings_s": timings, "roster": len(roster),
            "missing": missing_hosts(roster, runs, slurm_reasons), "new": [], "known": [],
            "per_sku": [], "health": []}
    if not ids:
        data["per_sku"] = per_sku(runs, data["missing"], set())
        timings["total"] = round(time.monotonic() - t0, 4)
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
        "SELECT c.run_id, n.name, c.status, c.comparison, c.case_ref, c.message FROM cases c"
        " JOIN case_names n ON n.id = c.case_ref"
        f" WHERE c.run_id IN ({_marks(len(ids))}) AND {history.PROBLEM_SQL.replace('status', 'c.status').replace('comparison', 'c.comparison')}",
        ids).fetchall()
    t = lap("problems", t)
    groups = {}
    for run_id, name, status, comparison, ref, message in rows:
        r = by_id[run_id]
        kind = "known" if comparison in KNOWN_COMPARISONS else "new"
        g = groups.setdefault((name, r["sku"], kind), {
            "case": name, "case_ref": ref, "sku": r["sku"], "kind": kind, "hosts": [], "statuses": {},
            "drivers": set(), "message": message or "", "comparison": comparison, "night": r["night"] or "",
            "links": []})
        g["hosts"].append(r["host"])
        if r["report"] and len(g["links"]) < 30:
            g["links"].append({"host": r["host"], "report": r["report"], "case": name})
        g["statuses"][status] = g["statuses"].get(status, 0) + 1
        g["drivers"].add(r["driver"])
        g.setdefault("first_started", r["started_at"])
        g["first_started"] = min(g["first_started"], r["started_at"])
        g["night"] = max(g["night"], r["night"] or "")
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
    data["new"] = [g for g in data["problems"] if g["kind"] == "new"]
    data["known"] = [g for g in data["problems"] if g["kind"] == "known"]
    regressed = {h for g in data["new"] for h in g["hosts"]}
    regressed |= {r["host"] for r in runs if "REGRESS" in str(r["verdict"] or "").upper()}
    data["regressed_hosts"] = sorted(h or "?" for h in regressed)
    data["per_sku"] = per_sku(runs, data["missing"], regressed)

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
    # Only for new regressions: a known failure has no change to bisect.
    failing = [g for g in data["new"][:MAX_BRACKETS] if any(s in history.FAILING for s in g["statuses"])]
    for g, (good, bad) in zip(failing, _brackets(db, failing)):
        data["brackets"].append({"case": g["case"], "sku": g["sku"], "good": good, "bad": bad})
    t = lap("brackets", t)
    data["health"] = host_health(db, data, health_nights)
    lap("health", t)
    for g in data["problems"]:
        del g["case_ref"]
    timings["total"] = round(time.monotonic() - t0, 4)
    return data


def _has_rosters(db):
    return db.version() >= 3


def per_sku(runs, missing, regressed):
    """Per SKU: hosts expected, reported, qualified; product failures (a host regressed) apart
    from infrastructure failures (missing, interrupted, an infrastructure verdict)."""
    out = {}

    def row(sku):
        return out.setdefault(sku or "?", {"sku": sku or "?", "reported": 0, "qualified": 0, "product": 0,
                                           "known_only": 0, "infra": 0, "missing": 0})
    missing_hosts_ = {m["host"] for m in missing}
    for r in runs:
        x = row(r["sku"])
        x["reported"] += 1
        if r["host"] in missing_hosts_:
            continue
        if r["host"] in regressed:
            x["product"] += 1
        elif str(r["verdict"] or "").upper().startswith("QUALIFIED"):
            x["qualified"] += 1
        else:
            x["known_only"] += 1
    for m in missing:
        x = row(m["sku"])
        x["missing"] += 1
        x["infra"] += 1
    return sorted(out.values(), key=lambda x: x["sku"])


def _repeats(db, pairs, start, tonight):
    """{(host, case_ref): nights in [start, tonight] the host failed that case}: is tonight's
    one-host failure the same board failing night after night, or a flake? One statement."""
    out = {}
    for i in range(0, len(pairs), 400):
        chunk = pairs[i:i + 400]
        values = ", ".join("(?, ?)" for _ in chunk)
        for host, ref, n in db.execute(
                f"WITH v(host, ref) AS (VALUES {values}) SELECT v.host, v.ref, COUNT(DISTINCT r.night) FROM v"
                " JOIN runs r ON r.host = v.host AND r.night >= ? AND r.night <= ?"
                " JOIN cases c ON c.run_id = r.id AND c.case_ref = v.ref"
                f" WHERE c.status IN {history._in(history.FAILING)} GROUP BY v.host, v.ref",
                [x for pair in chunk for x in pair] + [start, tonight]).fetchall():
            out[(host, ref)] = n
    return out


def host_health(db, data, nights):
    """For the hosts with a problem of their own tonight (a new failure on one host of several, or
    on a few, or missing): over the last `nights` nights, the nights it failed a case that another host of
    its SKU passed that night (case_nights), the nights with any failure, the nights it was missing
    (roster without a complete run), and how often tonight's one-host case failed there before.
    The same case failing on the host alone on DRAIN_AFTER nights or more: a drain is recommended
    (a board, not a flake: random flakes rarely repeat the same case on the same host)."""
    tonight = max([r["night"] or "" for r in data["runs"]] + [""])
    if not tonight:
        return []
    start = (datetime.date.fromisoformat(tonight) - datetime.timedelta(days=nights - 1)).isoformat()
    # "Its own" failure: one host of several, or a few (at most 1 % of the SKU: a random flake
    # elsewhere the same night must not hide a board that fails night after night).
    pairs = sorted({(h, g["case_ref"]) for g in data["new"]
                    if g["hosts_of_sku"] > 1 and len(g["hosts"]) <= max(1, g["hosts_of_sku"] // 100)
                    for h in g["hosts"] if h})[:4000]
    names = {g["case_ref"]: g["case"] for g in data["new"]}
    # Night after night: first the pairs that also failed on one of the two nights before (one
    # probe per pair), then the whole window for those only (0.07 s instead of 0.7 s for 1,800
    # pairs at 5,000 hosts).
    t = datetime.date.fromisoformat(tonight)
    before = ((t - datetime.timedelta(days=2)).isoformat(), (t - datetime.timedelta(days=1)).isoformat())
    again = [pair for pair in _repeats(db, pairs, *before)] if pairs else []
    repeats = _repeats(db, sorted(again), start, tonight) if again else {}
    worst = {}
    for (host, ref), n in repeats.items():
        if n > worst.get(host, (0, None))[0]:
            worst[host] = (n, names.get(ref, str(ref)))
    missing = {m["host"] for m in data["missing"]}
    # Hosts whose one-host case came back, and missing hosts, first; at most MAX_HEALTH_HOSTS.
    ranked = sorted({h for h, (n, _) in worst.items() if n >= 2} | missing,
                    key=lambda h: (-worst.get(h, (0, None))[0], h))
    hosts = [h for h in ranked if h][:MAX_HEALTH_HOSTS]
    if not hosts:
        return []
    start = (datetime.date.fromisoformat(tonight) - datetime.timedelta(days=nights - 1)).isoformat()
    # Three statements for all the hosts (round trips are what a busy server makes slow): their
    # runs in the window, those runs' failing cases with "another host of the SKU passed it that
    # night" (case_nights), and their roster entries.
    hm = ",".join("?" * len(hosts))
    final = {}
    for rid, host, night, sku, verdict, label in db.execute(
            f"SELECT id, host, night, sku, verdict, label FROM runs WHERE host IN ({hm}) AND night >= ?"
            " AND night <= ? ORDER BY id", hosts + [start, tonight]).fetchall():
        final[(host, label, night)] = (rid, night, sku, verdict)
    by_run = {v[0]: (h, v[1]) for (h, _, _), v in final.items() if not is_interrupted(v[3])}
    own, product = {}, {}
    ids = sorted(by_run)
    pred = history.PROBLEM_SQL.replace("status", "c.status").replace("comparison", "c.comparison")
    for i in range(0, len(ids), 1000):
        chunk = ids[i:i + 1000]
        for rid, passed_elsewhere in db.execute(
                f"SELECT c.run_id, CASE WHEN EXISTS (SELECT 1 FROM case_nights n WHERE n.sku = r.sku"
                f" AND n.case_ref = c.case_ref AND n.outcome = 'P' AND n.night = r.night) THEN 1 ELSE 0 END"
                f" FROM cases c JOIN runs r ON r.id = c.run_id WHERE c.run_id IN ({','.join('?' * len(chunk))})"
                f" AND {pred} AND c.status IN {history._in(history.FAILING)}", chunk).fetchall():
            host, night = by_run[rid]
            product.setdefault(host, set()).add(night)
            if passed_elsewhere:
                own.setdefault(host, set()).add(night)
    infra = {}
    for host, label, night in db.execute(
            f"SELECT host, label, night FROM rosters WHERE host IN ({hm}) AND night >= ? AND night <= ?",
            hosts + [start, tonight]).fetchall():
        v = final.get((host, label, night))
        if not v or is_interrupted(v[3]) or is_infra(v[3]):
            infra.setdefault(host, set()).add(night)
    for (host, _, night), v in final.items():
        if is_interrupted(v[3]) or is_infra(v[3]):
            infra.setdefault(host, set()).add(night)
    out = []
    for host in hosts:
        n_own, n_infra = len(own.get(host, ())), len(infra.get(host, ()))
        same, case = worst.get(host, (0, None))
        drain = same >= DRAIN_AFTER
        advice = (f"drain: {case} failed on this host alone on {same} of the last {nights} nights "
                  f"(scontrol update nodename={host} state=drain reason=\"pagelock: {case}\")" if drain else
                  f"infrastructure: missing or interrupted on {n_infra} of the last {nights} nights"
                  if n_infra >= DRAIN_AFTER else "watch")
        out.append({"host": host, "nights": nights,
                    "nights_run": len({night for (h, _, night) in final if h == host}),
                    "own_failure_nights": n_own, "product_failure_nights": len(product.get(host, ())),
                    "infra_nights": n_infra, "same_case_nights": same, "case": case,
                    "drain": drain, "advice": advice})
    return sorted(out, key=lambda x: (not x["drain"], -x["same_case_nights"], -x["infra_nights"], x["host"]))


def exit_code(data):
    """3 a host regressed (a new failure, whether or not a host is also missing); 5 a host of the
    roster is missing (no complete run) and none regressed; 0 every expected host qualified or
    failed only as expected."""
    if data.get("regressed_hosts"):
        return 3
    if data.get("missing"):
        return 5
    return 0


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


def _href(report, out_dir):
    href = report
    if out_dir and not report.startswith(("http://", "https://", "file:")):
        href = os.path.relpath(report, out_dir)
    return href


def _link(report, out_dir, case=None, text="report"):
    if not report:
        return ""
    href = _href(report, out_dir) + (f"#case={urllib.parse.quote(case, safe='')}" if case else "")
    return f'<a href="{html.escape(href)}">{html.escape(text)}</a>'


def _more(shown, total):
    return (f"<p class='muted'>{total - shown} more not shown here (all of them are in --json).</p>"
            if total > shown else "")


def _problem_table(groups, out_dir, e):
    p = ["<table><tr><th>case</th><th>SKU</th><th>where</th><th>statuses</th><th>message</th>"
         "<th>hosts (link: the case in the host's report)</th></tr>"]
    for g in groups[:MAX_ROWS_SHOWN]:
        st = ", ".join(f"{e(k)} {v}" for k, v in sorted(g["statuses"].items()))
        links = {x["host"]: x for x in g.get("links", [])}
        hosts = ", ".join((_link(links[h]["report"], out_dir, g["case"], h or "?") if h in links else e(h or "?"))
                          for h in g["hosts"][:30]) + (f" ... (+{len(g['hosts']) - 30})" if len(g["hosts"]) > 30 else "")
        cls = "bad" if g["kind"] == "new" else "warn"
        msg = g.get("message") or ""
        p.append(f"<tr><td><code>{e(g['case'])}</code></td><td>{e(g['sku'] or '?')}</td>"
                 f"<td><span class='v {cls}'>{e(g['scope'])}</span> ({len(g['hosts'])}/{g['hosts_of_sku']})</td>"
                 f"<td>{st}</td><td>{e(msg[:300])}{'&hellip;' if len(msg) > 300 else ''}</td><td>{hosts}</td></tr>")
    p.append("</table>" + _more(min(len(groups), MAX_ROWS_SHOWN), len(groups)))
    return "".join(p)


def render_html(data, out_dir=None):
    e = html.escape
    state = ("REGRESSED" if data.get("regressed_hosts") else "MISSING HOSTS" if data.get("missing")
             else "QUALIFIED" if data["runs"] else "NO RUNS")
    title = f"pagelock fleet report: {data['label'] or data['night']}: {state}"
    p = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)}</title>"
         f"<style>{CSS}</style></head><body><h1>{e(title)}</h1>",
         f"<p>{data['hosts']} hosts reported"
         + (f" of {data['roster']} expected" if data.get("roster") else " (no roster stored for this selection)")
         + f"; {len(data.get('missing', []))} missing; {len(data.get('regressed_hosts', []))} regressed; "
         f"generated {e(data['generated_at'])} in {data['timings_s'].get('total', 0):.2f} s.</p>"]
    if data.get("missing"):
        p.append("<h2>Missing hosts</h2><p>Expected tonight, and not qualified: no complete run in the history."
                 "</p><table><tr><th>host</th><th>SKU</th><th>why</th><th>Slurm</th></tr>")
        for m in data["missing"][:MAX_ROWS_SHOWN]:
            p.append(f"<tr><td>{e(m['host'])}</td><td>{e(m['sku'] or '?')}</td><td>{e(m['why'])}</td>"
                     f"<td>{e(m.get('slurm') or '')}</td></tr>")
        p.append("</table>" + _more(min(len(data["missing"]), MAX_ROWS_SHOWN), len(data["missing"])))
    if data.get("per_sku"):
        p.append("<h2>Per SKU: product and infrastructure failures</h2><table><tr><th>SKU</th><th>reported</th>"
                 "<th>qualified</th><th>product (regressed)</th><th>known failures only</th>"
                 "<th>infrastructure (missing)</th></tr>")
        for x in data["per_sku"]:
            p.append(f"<tr><td>{e(x['sku'])}</td><td>{x['reported']}</td><td>{x['qualified']}</td>"
                     f"<td>{x['product']}</td><td>{x['known_only']}</td><td>{x['infra']}</td></tr>")
        p.append("</table>")
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

    p.append("<h2>New regressions</h2>")
    if not data["new"]:
        p.append("<p>No new regression: no case failed, regressed or lost coverage beyond its expectations.</p>")
    else:
        p.append(_problem_table(data["new"], out_dir, e))
    p.append("<h2>Known failures (expected)</h2>")
    if not data["known"]:
        p.append("<p>No expected failure.</p>")
    else:
        p.append("<p class='muted'>Failures an expectation names (EXPECTED_FAIL): still failing, as expected.</p>")
        p.append(_problem_table(data["known"], out_dir, e))
    if data.get("health"):
        p.append(f"<h2>Host health over the last {data['health'][0]['nights']} nights</h2>"
                 "<table><tr><th>host</th><th>nights run</th><th>tonight's one-host case failed (nights)</th>"
                 "<th>own failures</th><th>product failures</th><th>missing or interrupted</th><th>advice</th></tr>")
        for h in data["health"]:
            p.append(f"<tr><td>{e(h['host'])}</td><td>{h['nights_run']}</td><td>{h['same_case_nights']}</td>"
                     f"<td>{h['own_failure_nights']}</td>"
                     f"<td>{h['product_failure_nights']}</td><td>{h['infra_nights']}</td>"
                     f"<td><span class='v {'bad' if h['drain'] else 'warn'}'>{e(h['advice'])}</span></td></tr>")
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
        for c in data["coverage_lost"][:MAX_ROWS_SHOWN]:
            which = "<br>".join(f"<code>{e(x['case'])}</code> {e(x['status'])}" for x in c["cases"])
            if c["lost"] > len(c["cases"]):
                which += f"<br><span class='muted'>... {c['lost'] - len(c['cases'])} more</span>"
            p.append(f"<tr><td>{e(c['host'] or '?')}</td><td>{e(c['sku'] or '?')}</td>"
                     f"<td>{e(c['driver'] or '?')}</td><td>{c['lost']}</td><td>{which}</td></tr>")
        p.append("</table>" + _more(min(len(data["coverage_lost"]), MAX_ROWS_SHOWN), len(data["coverage_lost"])))

    p.append("<h2>Hosts</h2><table><tr><th>host</th><th>SKU</th><th>driver</th><th>verdict</th>"
             "<th>started</th><th>run</th><th>own report</th></tr>")
    for r in data["runs"]:
        again = (f"<br><span class='muted'>attempt {r['attempts']}; replaces {r['replaced_runs']} earlier: "
                 f"{e(', '.join(r['replaced_keys']))}</span>") if r["replaced_runs"] else ""
        p.append(f"<tr><td>{e(r['host'] or '?')}</td><td>{e(r['sku'] or '?')}</td><td>{e(r['driver'] or '?')}</td>"
                 f"<td><span class='v {_verdict_class(r['verdict'])}'>{e(str(r['verdict']))}</span></td>"
                 f"<td>{e(r['started_at'] or '')}</td><td><code>{e(r['run_key'])}</code>{again}</td>"
                 f"<td>{_link(r['report'], out_dir)}</td></tr>")
    p.append("</table></body></html>")
    return "".join(p)
