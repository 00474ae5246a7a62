"""False alarms: a conforming variation (a driver behaviour the CUDA documentation allows but
r580 does not show, conforming.tsv) that fails a case is a defect of the suite, never counted in
the score: its verdict (FALSE_ALARM, CONFORMS, NOT_EXERCISED, ERROR, NOT_RUN), its entry in
mutation.json and the false_alarms section."""

from tools.mutation.catalogue import excluded_by, excluded_cases, run_env, target_scope
from tools.mutation.scoring import FAILING, GOOD, stopped_by_budget


def classify_variation(variation, runs, unstable):
    """Verdict of one conforming variation (a behaviour the documentation allows): FALSE_ALARM
    when a case that did not fail in the control fails, crashes, times out or goes missing in a
    run where the variation really changed an answer (a defect of the suite, not of the driver);
    CONFORMS when it changed answers and nothing failed; NOT_EXERCISED when it never changed an
    answer (it proves nothing; failures without a change are listed as unexplained); ERROR when
    the shim did not load it; NOT_RUN when the budget stopped it first. runs as for classify().
    The cases the variation excludes (its excluded column: what the shim cannot make conform on
    this device) are listed under excluded_cases, never judged. A variation whose runs get an
    environment of their own (its env column) changed every run it made: the environment counts
    as a changed answer."""
    name = variation["name"]
    alarms, unexplained, not_supported, too_slow, excluded = [], [], [], [], []
    patterns = excluded_cases(variation)
    env = run_env(variation)
    changed, fired, errors = set(), set(), []
    inits_ok = cut = False
    for meta, statuses, (inits, fired_here, errs), control in runs:
        loaded = any(i == f"fault={name}" for i in inits)
        inits_ok = inits_ok or loaded
        fired.update(fired_here)
        errors += errs
        cut = cut or meta.get("cut_by_budget", False)
        here = list(meta.get("changed") or [])
        if env and loaded:
            here.append("its runs' environment: " + " ".join(f"{k}={v}" for k, v in sorted(env.items())))
        changed.update(here)
        for case, (before, _, _) in control.items():
            if case in unstable or (meta.get("cut_by_budget") and case not in statuses):
                continue
            after, reason, message = statuses.get(case, ("MISSING", "", ""))
            why_not = excluded_by(case, patterns)
            if why_not:
                excluded.append({"case": case, "target": meta.get("target", ""), "control": before,
                                 "status": after, "excluded_by": why_not[0], "why": why_not[1]})
                continue
            if stopped_by_budget(meta, after):
                continue
            if meta["timed_out"] and case not in statuses:
                after = "TIMEOUT"
            if before not in FAILING and after in FAILING:
                entry = {"case": case, "target": meta.get("target", ""), "control": before,
                         "status": after, "message": (message or reason or "")[:300]}
                # A timing variation slows every wait by design: a case killed at the tool's
                # time limit (the run's, or the runner's per-binary one) is past the tool's
                # limit, not the suite's; so are the cases it left unrun.
                if variation["kind"] == "timing" and (after == "TIMEOUT" or (after == "MISSING" and meta["timed_out"])
                                                      or "its limit of" in (message or "")
                                                      or (message or "").startswith(("INTERRUPTED", "never ran"))):
                    too_slow.append(entry)  # past the tool's limit, not the suite's
                else:
                    (alarms if here else unexplained).append(entry)
            elif before in GOOD and after == "NOT_SUPPORTED":
                not_supported.append({"case": case, "reason": (reason or "")[:200]})
    result = {"name": name, "rule": variation["rule"], "family": variation["family"],
              "kind": variation["kind"], "description": variation["description"],
              "justification": variation.get("justification", ""), "reached": sorted(fired),
              "changed": sorted(changed), "false_alarms": alarms,
              "failed_without_change": unexplained, "not_supported_cases": not_supported,
              "past_the_time_limit": too_slow, "excluded_cases": excluded, "runs": [r[0] for r in runs]}
    if not inits_ok:
        result["verdict"] = "ERROR"
        result["note"] = ("the shim never loaded this variation (" +
                          ("; ".join(sorted(set(errors))) or "no init line in its log") + ")")
    elif alarms:
        result["verdict"] = "FALSE_ALARM"
    elif cut:
        result["verdict"] = "NOT_RUN"
        result["note"] = "the time budget stopped its run before it finished"
    elif too_slow:
        result["verdict"] = "NOT_RUN"
        result["note"] = (f"{len(too_slow)} case(s) did not finish within the tool's time limit "
                          "(twice the usual for a timing variation): raise --target-timeout")
    elif not changed:
        result["verdict"] = "NOT_EXERCISED"
        result["note"] = ("it never changed an answer in the binaries it ran"
                          + (f"; {len(unexplained)} case(s) failed anyway (unstable?)"
                             if unexplained else ""))
    else:
        result["verdict"] = "CONFORMS"
        if not_supported:
            result["note"] = f"{len(not_supported)} case(s) turned NotSupported"
    if excluded:
        result["note"] = "; ".join(filter(None, [result.get("note"), f"{len(excluded)} excluded case(s) not judged"]))
    return result


def variation_result(f, plan, runs, sched):
    """One conforming variation's entry in mutation.json, with its targets like a fault's."""
    name = f["name"]
    labels = [l for l, _, _ in plan]
    base = {k: f.get(k, "") for k in ("name", "rule", "family", "kind", "description", "justification")}
    scope = target_scope(f)
    base.update(target_scope=scope.pattern if scope else "", environment=run_env(f),
                excluded=[{"pattern": p, "why": w} for p, w in excluded_cases(f)])
    empty = dict(base, changed=[], false_alarms=[], failed_without_change=[],
                 not_supported_cases=[], past_the_time_limit=[], excluded_cases=[], reached=[])
    if not labels:
        r = dict(empty, verdict="NOT_EXERCISED",
                 note="no binary it selects calls an entry point it changes ("
                      + (f.get("entries") or "none") + "); "
                      + (f"it runs only targets matching {scope.pattern}" if scope
                         else "--select all tries every binary"))
    elif not runs:
        r = dict(empty, verdict="NOT_RUN", note="the time budget ran out")
    else:
        r = dict(base, **classify_variation(f, runs, sched.unstable))
        missing = [l for l in labels if (name, l) in sched.skipped]
        if missing and r["verdict"] in ("CONFORMS", "NOT_EXERCISED"):
            r["verdict"] = "NOT_RUN"
            r["note"] = f"the time budget ran out before {len(missing)} of its {len(labels)} target(s)"
    r["targets"] = labels
    r["target_plan"] = [{"target": l, "phase": ph, "why": why, "ran": (name, l) in sched.done}
                        for l, ph, why in plan]
    r["targets_run"] = [l for l in labels if (name, l) in sched.done]
    return r


def false_alarm_summary(variations):
    """The false_alarms section of mutation.json: every case a conforming variation broke."""
    by = {v["name"]: [dict(c, variation=v["name"]) for c in v["false_alarms"]]
          for v in variations if v["false_alarms"]}
    counts = {k: sum(1 for v in variations if v["verdict"] == k)
              for k in ("FALSE_ALARM", "CONFORMS", "NOT_EXERCISED", "ERROR", "NOT_RUN")}
    count = sum(len(c) for c in by.values())
    return {"count": count, "variations_with_false_alarms": len(by), "variations": len(variations),
            "verdicts": counts, "by_variation": by, "line": false_alarm_line(count, len(by), counts,
                                                                            len(variations))}


def false_alarm_line(count, with_alarms, counts, total):
    if not total:
        return "not run"
    line = (f"{count} false alarm(s) from {with_alarms} of {total} conforming variations: "
            f"{counts['CONFORMS']} conform, {counts['NOT_EXERCISED']} not exercised")
    if counts["NOT_RUN"] or counts["ERROR"]:
        line += f", {counts['NOT_RUN']} not run, {counts['ERROR']} not loaded"
    return line
