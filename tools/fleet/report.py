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
      before tonight, and the first failing run after it (the driver/commit pair to bisect); for
      a one-host problem, that host's own last pass and first failure
  links to each host's own report

fleet_data() makes a handful of indexed queries (docs/fleet.md lists them with their indexes);
render_html() makes one self-contained page (inline CSS, no script, no network) from
reports/templates/fleet.html.j2 (reports/pages.py renders every pagelock page).
"""

import datetime
import os
import time
import urllib.parse

from reports import history, pages

MAX_BRACKETS = 40
MAX_LOST_LISTED = 20
MAX_REPLACED_LISTED = 3
MAX_ABSENT_HOSTS = 20
MAX_HEALTH_HOSTS = 100
HEALTH_NIGHTS = 14       # per-host flakiness window
DRAIN_AFTER = 3          # nights with the host's own failures in the window: recommend a drain
KNOWN_COMPARISONS = ("EXPECTED_FAIL", "KNOWN_FLAKE", "KNOWN_COVERAGE_LOSS")
MAX_ROWS_SHOWN = 500
ONE_HOST_ROWS_SHOWN = MAX_ROWS_SHOWN // 2  # of a problem table's rows, kept for one-host groups


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


# A one-host problem (a board) is bracketed on its own host: the SKU's last pass is usually another
# host tonight, which says nothing about this board. Walks the host's runs newest first
# (runs_by_host (host, id), then the primary key of cases): at most the runs the host has kept.
HOST_PASS_SQL = (f"SELECT {BRACKET_COLS}, r.id FROM runs r JOIN cases c ON c.run_id = r.id AND c.case_ref = ?"
                 " WHERE r.host = ? AND r.sku = ? AND r.id < ?"
                 f" AND c.status IN {history._in(history.PASSING)} ORDER BY r.id DESC LIMIT 1")
HOST_FAIL_SQL = (f"SELECT {BRACKET_COLS} FROM runs r JOIN cases c ON c.run_id = r.id AND c.case_ref = ?"
                 " WHERE r.host = ? AND r.sku = ? AND r.id > ? AND r.id <= ?"
                 f" AND c.status IN {history._in(history.FAILING)} ORDER BY r.id LIMIT 1")


def _host_bracket(db, ref, host, sku, run_id):
    """(the host's last pass before its run `run_id`, its first failure after that pass)."""
    good = db.execute(HOST_PASS_SQL, (ref, host, sku, run_id)).fetchone()
    bad = db.execute(HOST_FAIL_SQL, (ref, host, sku, good[-1] if good else 0, run_id)).fetchone()
    return tuple(dict(zip(BRACKET_KEYS, x)) if x else None for x in (good, bad))


def _brackets(db, groups, run_of_host):
    return [_host_bracket(db, g["case_ref"], g["hosts"][0], g["sku"], run_of_host[g["hosts"][0]])
            if g["scope"] == "one host" else _bracket(db, g["case_ref"], g["sku"], g["night"], g["first_started"])
            for g in groups]


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


# qualify's verdicts that the fleet tells apart (the texts of reports/compare.py EXIT_CODES, as the
# history stores them per run).
QUALIFIED, REGRESSIONS, INFRA_ERROR, INTERRUPTED = ("QUALIFIED", "REGRESSIONS", "INFRASTRUCTURE ERROR",
                                                    "INTERRUPTED")


def _verdict(v):
    return str(v or "").upper()


def is_interrupted(verdict):
    return _verdict(verdict) == INTERRUPTED


def is_infra(verdict):
    return _verdict(verdict) == INFRA_ERROR


def merge_roster(rows):
    """One row per host. A night (--night) reads the rosters of all its labels, which may list a
    host twice: excluded (drained) under `nightly`, expected under `nightly-rerun-n2`. "expected"
    wins over "excluded" or "not submitted"; among equals, the later submission."""
    best = {}
    for h in rows:
        rank = (h["state"] == "expected", h.get("submitted_at") or "")
        if h["host"] not in best or rank >= best[h["host"]][0]:
            best[h["host"]] = (rank, h)
    return [best[host][1] for host in sorted(best)]


def missing_hosts(roster, runs, reasons=None):
    """Hosts of the roster without a complete final run: [{host, sku, why, reason}]. `reasons`
    {host: Slurm's word} comes from the caller (fleet status/report ask sacct/scontrol). A
    complete run counts whatever the roster said at submit (another label of the night ran it)."""
    reasons = reasons or {}
    final = {r["host"]: r for r in runs}
    out = []
    for h in merge_roster(roster):
        host = h["host"]
        r = final.get(host)
        if r and not is_interrupted(r["verdict"]) and not is_infra(r["verdict"]):
            continue
        if h["state"] != "expected":
            why = f"{h['state']} at submit" + (f": {h['reason']}" if h.get("reason") else "")
        elif r is None:
            why = "no run stored"
        elif is_interrupted(r["verdict"]):
            why = (f"interrupted after {r['n_cases'] or 0} cases (attempt {r['attempts']}, run {r['run_key']})")
        else:
            why = f"run ended {r['verdict']} (run {r['run_key']})"
        slurm = reasons.get(host)
        out.append({"host": host, "sku": h.get("sku") or (r or {}).get("sku"), "why": why,
                    "slurm": slurm, "reason": why + (f"; Slurm: {slurm}" if slurm else ""),
                    "job_id": h.get("job_id"), "run": r})
    return out


class _Laps:
    """Seconds per step of fleet_data, for timings_s (docs/fleet.md quotes them)."""

    def __init__(self):
        self.t0 = self.t = time.monotonic()
        self.timings = {}

    def lap(self, name):
        now = time.monotonic()
        self.timings[name] = round(now - self.t, 4)
        self.t = time.monotonic()

    def total(self):
        self.timings["total"] = round(time.monotonic() - self.t0, 4)


def fleet_data(db, label=None, night=None, slurm_reasons=None, health_nights=HEALTH_NIGHTS):
    """Everything the fleet report shows, as plain data (the --json output): a handful of indexed
    queries over the history, each timed in timings_s."""
    laps = _Laps()
    runs = select_runs(db, label, night)
    laps.lap("runs")
    by_id = {r["id"]: r for r in runs}
    ids = list(by_id)
    roster = merge_roster(history.roster(db, label=label, night=night)) if _has_rosters(db) else []
    laps.lap("roster")
    data = {"label": label, "night": night, "generated_at":
            datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "hosts": len(runs), "runs": runs, "matrix": [], "problems": [], "coverage_lost": [],
            "brackets": [], "timings_s": laps.timings, "roster": len(roster),
            "missing": missing_hosts(roster, runs, slurm_reasons), "new": [], "known": [],
            "per_sku": [], "health": []}
    if not ids:
        data["per_sku"] = per_sku(runs, data["missing"], set())
        laps.total()
        return data
    data["matrix"] = verdict_matrix(runs)
    hosts_per_sku = {}
    for r in runs:
        hosts_per_sku[r["sku"]] = hosts_per_sku.get(r["sku"], 0) + 1
    data["problems"] = problem_groups(db, by_id, hosts_per_sku)
    laps.lap("problems")
    data["new"] = [g for g in data["problems"] if g["kind"] == "new"]
    data["known"] = [g for g in data["problems"] if g["kind"] == "known"]
    regressed = {h for g in data["new"] for h in g["hosts"]}
    regressed |= {r["host"] for r in runs if _verdict(r["verdict"]) == REGRESSIONS}
    data["regressed_hosts"] = sorted(h or "?" for h in regressed)
    data["per_sku"] = per_sku(runs, data["missing"], regressed)
    data["coverage_lost"] = coverage_lost(db, runs, by_id, hosts_per_sku, laps)
    # Brackets: per failing case per SKU (per host for a one-host problem), the last pass before
    # tonight and the first failure after it. Only for new regressions: a known failure has no
    # change to bisect.
    failing = [g for g in data["new"][:MAX_BRACKETS] if any(s in history.FAILING for s in g["statuses"])]
    for g, (good, bad) in zip(failing, _brackets(db, failing, {r["host"]: r["id"] for r in runs})):
        data["brackets"].append({"case": g["case"], "sku": g["sku"], "good": good, "bad": bad})
    laps.lap("brackets")
    data["health"] = host_health(db, data, health_nights)
    laps.lap("health")
    for g in data["problems"]:
        del g["case_ref"]
    laps.total()
    return data


def verdict_matrix(runs):
    """SKU x driver -> the hosts and how many of each verdict."""
    cells = {}
    for r in runs:
        cell = cells.setdefault((r["sku"], r["driver"]), {"sku": r["sku"], "driver": r["driver"],
                                                          "hosts": [], "verdicts": {}})
        cell["hosts"].append({"host": r["host"], "verdict": r["verdict"], "run_key": r["run_key"],
                              "report": r["report"]})
        cell["verdicts"][r["verdict"]] = cell["verdicts"].get(r["verdict"], 0) + 1
    return list(cells.values())


def _c(sql):
    """A history predicate on the columns of `cases c`."""
    return sql.replace("status", "c.status").replace("comparison", "c.comparison")


def problem_groups(db, by_id, hosts_per_sku):
    """Failing statuses or problem comparisons (partial index cases_problems) grouped by case, SKU
    and kind (new, or known: an expectation names it), with where on the SKU they happened;
    every host of the SKU first, one host last."""
    ids = list(by_id)
    rows = db.execute(
        "SELECT c.run_id, n.name, c.status, c.comparison, c.case_ref, c.message FROM cases c"
        " JOIN case_names n ON n.id = c.case_ref"
        f" WHERE c.run_id IN ({_marks(len(ids))}) AND {_c(history.PROBLEM_SQL)}", ids).fetchall()
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
    return sorted(groups.values(), key=lambda g: (order.get(g["scope"], 2), -len(g["hosts"]),
                                                  g["sku"] or "", g["case"]))


def coverage_lost(db, runs, by_id, hosts_per_sku, laps):
    """Per host: the cases NotSupported, skipped or missing here that ran on another host of the
    same SKU (partial index cases_not_run), and the cases absent here (fewer cases than the SKU's
    fullest run tonight); most lost first, at most MAX_LOST_LISTED cases named per host."""
    ids = list(by_id)
    rows = db.execute(
        f"SELECT c.run_id, c.case_ref, c.status FROM cases c WHERE c.run_id IN ({_marks(len(ids))})"
        f" AND {_c(history.NOT_RUN_SQL)}", ids).fetchall()
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
    laps.lap("coverage_counts")
    refs = {ref for v in lost.values() for ref, _ in v[:MAX_LOST_LISTED]}
    refs |= _absent_cases(db, by_id, fullest, absent, lost)
    names = _case_names(db, sorted(refs))
    counts = {rid: max(len(v), absent.get(rid, 0) + len([x for x in v if x[1] != "ABSENT"]))
              for rid, v in lost.items()}
    for rid, n in absent.items():
        counts.setdefault(rid, n)
    out = [{"host": by_id[rid]["host"], "sku": by_id[rid]["sku"], "driver": by_id[rid]["driver"], "lost": counts[rid],
            "cases": sorted(({"case": names.get(ref, str(ref)), "status": st} for ref, st in lost.get(rid, [])),
                            key=lambda x: x["case"])[:MAX_LOST_LISTED]}
           for rid in sorted(counts, key=lambda rid: (-counts[rid], by_id[rid]["host"] or ""))]
    laps.lap("coverage_cases")
    return out


def _absent_cases(db, by_id, fullest, absent, lost):
    """Adds (ref, "ABSENT") to lost[run] for the cases of its SKU's fullest run that the run lacks,
    for the MAX_ABSENT_HOSTS runs that lack most; returns the refs to name. One query for the case
    lists of those runs and of their SKUs' fullest runs."""
    listed = sorted(absent, key=lambda rid: -absent[rid])[:MAX_ABSENT_HOSTS]
    refs = set()
    if not listed:
        return refs
    want = sorted(set(listed) | {fullest[by_id[rid]["sku"]][1] for rid in listed})
    have = {}
    for rid, ref in db.execute(f"SELECT run_id, case_ref FROM cases WHERE run_id IN ({_marks(len(want))})",
                               want).fetchall():
        have.setdefault(rid, set()).add(ref)
    for rid in listed:
        gone = sorted(have.get(fullest[by_id[rid]["sku"]][1], set()) - have.get(rid, set()))
        lost.setdefault(rid, []).extend((ref, "ABSENT") for ref in gone)
        refs.update(gone[:MAX_LOST_LISTED])
    return refs


def _case_names(db, refs):
    names = {}
    for i in range(0, len(refs), 500):
        chunk = refs[i:i + 500]
        names.update(db.execute(f"SELECT id, name FROM case_names WHERE id IN ({_marks(len(chunk))})", chunk).fetchall())
    return names


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
        elif _verdict(r["verdict"]) == QUALIFIED:
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
    worst = _one_host_repeats(db, data["new"], start, tonight)
    missing = {m["host"] for m in data["missing"]}
    # Hosts whose one-host case came back, and missing hosts, first; at most MAX_HEALTH_HOSTS.
    ranked = sorted({h for h, (n, _) in worst.items() if n >= 2} | missing,
                    key=lambda h: (-worst.get(h, (0, None))[0], h))
    hosts = [h for h in ranked if h][:MAX_HEALTH_HOSTS]
    if not hosts:
        return []
    final = _window_runs(db, hosts, start, tonight)
    own, product = _failure_nights(db, final)
    infra = _infra_nights(db, hosts, start, tonight, final)
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


def _one_host_repeats(db, new, start, tonight):
    """{host: (nights in the window its worst one-host case failed there, that case)}."""
    # "Its own" failure: one host of several, or a few (at most 1 % of the SKU: a random flake
    # elsewhere the same night must not hide a board that fails night after night).
    pairs = sorted({(h, g["case_ref"]) for g in new
                    if g["hosts_of_sku"] > 1 and len(g["hosts"]) <= max(1, g["hosts_of_sku"] // 100)
                    for h in g["hosts"] if h})[:4000]
    names = {g["case_ref"]: g["case"] for g in new}
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
    return worst


# Three statements for all the hosts (round trips are what a busy server makes slow): their runs in
# the window, those runs' failing cases with "another host of the SKU passed it that night"
# (case_nights), and their roster entries.

def _window_runs(db, hosts, start, tonight):
    """{(host, label, night): (run id, night, sku, verdict)}: the final run of each."""
    final = {}
    for rid, host, night, sku, verdict, label in db.execute(
            f"SELECT id, host, night, sku, verdict, label FROM runs WHERE host IN ({_marks(len(hosts))})"
            " AND night >= ? AND night <= ? ORDER BY id", hosts + [start, tonight]).fetchall():
        final[(host, label, night)] = (rid, night, sku, verdict)
    return final


def _failure_nights(db, final):
    """({host: nights it failed a case another host of its SKU passed}, {host: nights with any
    failure}), over the runs that were not interrupted."""
    by_run = {v[0]: (h, v[1]) for (h, _, _), v in final.items() if not is_interrupted(v[3])}
    own, product = {}, {}
    ids = sorted(by_run)
    for i in range(0, len(ids), 1000):
        chunk = ids[i:i + 1000]
        for rid, passed_elsewhere in db.execute(
                f"SELECT c.run_id, CASE WHEN EXISTS (SELECT 1 FROM case_nights n WHERE n.sku = r.sku"
                f" AND n.case_ref = c.case_ref AND n.outcome = 'P' AND n.night = r.night) THEN 1 ELSE 0 END"
                f" FROM cases c JOIN runs r ON r.id = c.run_id WHERE c.run_id IN ({_marks(len(chunk))})"
                f" AND {_c(history.PROBLEM_SQL)} AND c.status IN {history._in(history.FAILING)}", chunk).fetchall():
            host, night = by_run[rid]
            product.setdefault(host, set()).add(night)
            if passed_elsewhere:
                own.setdefault(host, set()).add(night)
    return own, product


def _infra_nights(db, hosts, start, tonight, final):
    """{host: nights of the roster without a complete run, or interrupted, or an infrastructure
    error}."""
    infra = {}
    for host, label, night in db.execute(
            f"SELECT host, label, night FROM rosters WHERE host IN ({_marks(len(hosts))}) AND night >= ?"
            " AND night <= ?", hosts + [start, tonight]).fetchall():
        v = final.get((host, label, night))
        if not v or is_interrupted(v[3]) or is_infra(v[3]):
            infra.setdefault(host, set()).add(night)
    for (host, _, night), v in final.items():
        if is_interrupted(v[3]) or is_infra(v[3]):
            infra.setdefault(host, set()).add(night)
    return infra


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

# The class of a verdict on the page: qualify's verdict texts (reports/compare.py EXIT_CODES, stored
# per run in the history); any other (BAD CONFIGURATION, NOTHING RAN, EXPECTATIONS NEED UPDATING,
# COVERAGE LOST, INTERRUPTED, none) is "warn".
VERDICT_CLASS = {QUALIFIED: "ok", REGRESSIONS: "bad", INFRA_ERROR: "bad"}


def verdict_class(v):
    return VERDICT_CLASS.get(_verdict(v), "warn")


def _href(report, out_dir):
    href = report
    if out_dir and not report.startswith(("http://", "https://", "file:")):
        href = os.path.relpath(report, out_dir)
    return href


def shown_first(groups, cap=MAX_ROWS_SHOWN, own=ONE_HOST_ROWS_SHOWN):
    """The problem groups in the order the page lists them. One-host groups (a bad board) sort
    last, so a table cut at `cap` rows would cut them first: up to `own` of them move up into the
    rows shown, after the SKU-wide groups that fit. The rest follow (the page counts them)."""
    one = [g for g in groups if g["scope"] == "one host"]
    rest = [g for g in groups if g["scope"] != "one host"]
    n_rest = min(len(rest), cap - min(len(one), own))
    return rest[:n_rest] + one + rest[n_rest:]


def render_html(data, out_dir=None):
    """The page (templates/fleet.html.j2): links to the hosts' reports relative to out_dir."""
    data = dict(data, new=shown_first(data.get("new", [])), known=shown_first(data.get("known", [])))
    state = ("REGRESSED" if data.get("regressed_hosts") else "MISSING HOSTS" if data.get("missing")
             else "QUALIFIED" if data["runs"] else "NO RUNS")

    def href(report, case=None):
        return _href(report, out_dir) + (f"#case={urllib.parse.quote(case, safe='')}" if case else "")

    return pages.render("fleet.html.j2", data=data, max_rows=MAX_ROWS_SHOWN, href=href,
                        verdict_class=verdict_class,
                        by_verdict=lambda counts: sorted(counts.items(), key=lambda x: str(x[0])),
                        page_title=f"pagelock fleet report: {data['label'] or data['night']}: {state}")
