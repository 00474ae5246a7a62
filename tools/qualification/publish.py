"""Publishing a run folder: results.json, the CI files (JUnit, deqp-runner CSVs), the suggested
expectation entries, index.html with the metric trends, then the history row and, with
--write-baseline, the baseline."""

import os
import sqlite3

from reports import ciout
from reports import compare as cmp
from reports import history
from reports import htmlreport
from reports import model
from tools.qualification import baselines
from tools.qualification.common import say

# This run's failures as `fail`/`flake`/`coverage` entries: a starting point for expectations.
EXPECTATIONS_UPDATE = "expectations-update.txt"


def publish(plan, run, comp, info, args, state):
    """Writes results.json, the CI files, index.html, then the history row (which links
    index.html, so the page comes first); returns the report path. A write that fails (full
    disk) raises OSError after what was written is complete."""
    run_dir = plan.run_dir
    info["outputs"] = {"JUnit (final verdict per case)": ciout.JUNIT_NAME,
                       "deqp-runner results / failures": f"{ciout.RESULTS_CSV}, {ciout.FAILURES_CSV}",
                       "suggested expectation entries": EXPECTATIONS_UPDATE}
    state["phase"] = "writing results"
    model.write_results(os.path.join(run_dir, "results.json"), run, info, comp)
    ciout.write(run_dir, run, comp, info)
    with open(os.path.join(run_dir, EXPECTATIONS_UPDATE), "w", encoding="utf-8") as f:
        f.write(ciout.expectations_update(run, comp))
    state["phase"] = "rendering"
    plan.trends = trends_with_this_run(plan, run, info)
    page = write_report(plan, run, comp, info)
    if plan.db:
        state["phase"] = "storing the history"
        why = store_history(plan, run, comp, info, page)
        if why:
            page = not_stored(plan, run, comp, info, why)
    state["phase"] = "printing the summary"
    if args.write_baseline:
        write_baseline(plan, run, comp, info)
    return page


# A key another run stored first is stored under <key>-2, -3, ...; at most this many tries.
STORE_TRIES = 20


def store_history(plan, run, comp, info, page):
    """The history row: everything the fleet report shows (label, tier, run folder, its
    report), as an import of this run folder would store it. The store's answer is checked: a
    key another run of the same host stored meanwhile (another folder) is never taken for this
    run, which goes in under <key>-2, -3, ... (info["history_key"] says so). Returns None once
    the run is stored, else why it is not (the caller makes the verdict say so)."""
    run_dir = os.path.abspath(plan.run_dir)
    key = info["run_key"]
    try:
        for n in range(1, STORE_TRIES + 1):
            key = info["run_key"] if n == 1 else f"{info['run_key']}-{n}"
            rid, new = history.store_new(plan.db, key, info["started_at"], run, comp, plan.sku,
                                         info["bundle"].get("commit", ""), comp.exit_code,
                                         info["verdict"], label=info.get("label") or None,
                                         tier=info.get("tier"), run_dir=run_dir,
                                         report=os.path.abspath(page))
            row = plan.db.execute("SELECT run_dir FROM runs WHERE id = ?", (rid,)).fetchone()
            if new or (row and row[0] == run_dir):
                break
        else:
            return f"run keys {info['run_key']} to -{STORE_TRIES} are all taken by other runs"
    except (sqlite3.Error, ValueError, TypeError, OSError) as e:
        return str(e)
    if key != info["run_key"]:
        info["history_key"] = key
        say(f"the history holds this run as {key}: another run had stored {info['run_key']}")
    return None


def not_stored(plan, run, comp, info, why):
    """A run the history could not take is not a clean run (README: exit 1): the verdict says it,
    results.json and the page too, with the verdict it would have had; results.json keeps the
    run, and `reports/history.py import RUN_DIR` stores it later. Returns the page."""
    reached = info["verdict"]
    words = "read-only: run not stored, use --no-history or another --history" \
        if "readonly" in why.replace("-", "").replace(" ", "").lower() else "run not stored"
    where = history.redact(getattr(plan.db, "target", "")) or "the history"
    if any(w in why for w in ("No space left", "database or disk is full")):
        words = f"no space left on {where}: run not stored"
    message = (f"the history {where} could not take this run ({words}: {why}); results.json has "
               f"it (reports/history.py --db ... import {plan.run_dir}); the verdict would have "
               f"been {reached}")
    say(f"infrastructure error: {message}")
    comp.exit_code = cmp.EXIT_INFRA
    info.update(verdict=cmp.VERDICTS[cmp.EXIT_INFRA][0], exit_code=cmp.EXIT_INFRA,
                verdict_reached=reached, verdict_reason=message, history="not stored: " + why)
    model.write_results(os.path.join(plan.run_dir, "results.json"), run, info, comp)
    return write_report(plan, run, comp, info)


def write_baseline(plan, run, comp, info):
    """--write-baseline: baselines/<sku>[/cuda-X.Y]/<the tier's file>, only from a run that qualifies."""
    if comp.exit_code not in (cmp.EXIT_QUALIFIED, cmp.EXIT_FIRST_NIGHT):
        say(f"baseline NOT written: the verdict is {info['verdict']}, a baseline must qualify "
            "(or be a first night nothing failed in)")
        return
    dest = baselines.baseline_dest(plan.sku, baselines.runtime_of(run.fingerprint))
    os.makedirs(dest, exist_ok=True)
    path = os.path.join(dest, baselines.tier_file(info.get("tier")))
    model.write_results(path, run, baselines.portable_info(info, os.path.dirname(plan.run_dir)), comp)
    say(f"baseline written: {path} (commit it)")


def trends_with_this_run(plan, run, info):
    """{metric: [(run_key, driver, value)]} for this run's metrics: the history's points, then
    this run's own (the page is written before the run is stored, so that the history never
    links a report that is not there yet)."""
    trends = {}
    names = sorted({n for c in run.cases for n in c.metrics})
    if plan.db:
        try:
            for name in names:
                trends[name] = list(history.trend(plan.db, name, plan.sku))
        except (sqlite3.Error, ValueError, TypeError) as e:
            say(f"warning: no trends from the history ({e})")
    for name in names:
        values = [c.metrics[name].value for c in run.cases if name in c.metrics and c.metrics[name].finite]
        if values:
            points = [t for t in trends.get(name, []) if t[0] != info["run_key"]]
            points.append((info["run_key"], plan.driver, sum(values) / len(values)))
            trends[name] = points[-20:]
    return trends


def write_report(plan, run, comp, info):
    """(Re)writes index.html from the run, its comparison and the trends, atomically (a signal
    or a full disk leaves the previous page or none, never half a page)."""
    if plan.trends is None:
        plan.trends = trends_with_this_run(plan, run, info)
    html = htmlreport.render_qualification(run, info, comp, plan.baseline, plan.trends,
                                           mutation=htmlreport.load_mutation(plan.run_dir))
    page = os.path.join(plan.run_dir, "index.html")
    tmp = page + ".part"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(html)
        os.replace(tmp, page)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return page
