"""Kill detection: a fault's verdict from its runs against the controls (KILLED, HANDLED,
SURVIVED, ERROR, NOT_RUN), its entry in mutation.json, and the score."""

from reports import model

# The statuses of reports.model that make a case fail, and those that pass.
FAILING = frozenset(model.FAILING)
GOOD = frozenset(s.value for s in model.Status if s.is_pass)


def stopped_by_budget(meta, after):
    """A case the budget's stop left MISSING (interrupted or never started) or TIMEOUT (killed as
    the run was stopped) says nothing about the fault or variation: only what finished before
    the stop counts."""
    return bool(meta.get("cut_by_budget")) and after in ("MISSING", "TIMEOUT")


def unstable_cases(*controls):
    """Cases that fail in some control or whose status differs between controls."""
    ids = set().union(*[set(c) for c in controls])
    out = set()
    for i in ids:
        seen = {c.get(i, ("ABSENT",))[0] for c in controls if c}
        if len(seen) > 1 or seen & FAILING:
            out.add(i)
    return out


def classify(fault, runs, unstable):
    """Verdict of one fault. runs: [(meta, statuses, (inits, fired, errors), control statuses of
    the same target selection)], statuses as {case: (status, reason, message)}."""
    name, kind = fault["name"], fault["kind"]
    caught, handled, masked = [], [], []
    timed_out = cut = False
    inits_ok = False
    fired, errors = set(), []
    for meta, statuses, (inits, fired_here, errs), control in runs:
        timed_out = timed_out or meta["timed_out"]
        cut = cut or meta.get("cut_by_budget", False)
        inits_ok = inits_ok or any(i == f"fault={name}" for i in inits)
        fired.update(fired_here)
        errors += errs
        for case, (before, _, _) in control.items():
            if case in unstable:
                continue
            if meta.get("cut_by_budget") and case not in statuses:
                continue  # never ran: the budget stopped the run, not the fault
            after, reason, message = statuses.get(case, ("MISSING", "", ""))
            if stopped_by_budget(meta, after):
                continue  # the runner's report of a run the budget stopped: no evidence
            if meta["timed_out"] and case not in statuses:
                after = "TIMEOUT"
            if before not in FAILING and after in FAILING:
                caught.append({"case": case, "control": before, "fault": after,
                               "message": (message or "")[:300]})
            elif before in GOOD and after == "NOT_SUPPORTED":
                (handled if kind == "capability" else masked).append(
                    {"case": case, "control": before, "fault": after, "reason": reason[:200]})
            elif kind == "perf" and before == "PASS" and after == "WARN":
                # A performance deficit's documented outcome is a WARN (P03), not a failure.
                handled.append({"case": case, "control": before, "fault": after,
                                "reason": reason[:200]})
    result = {"name": name, "rule": fault["rule"], "family": fault["family"], "kind": kind,
              "description": fault["description"], "reached": sorted(fired),
              "caught_by": caught, "handled_cases": handled, "masked_cases": masked,
              "runs": [r[0] for r in runs]}
    if not inits_ok:
        result["verdict"] = "ERROR"
        result["note"] = ("the shim never loaded this fault (" +
                          ("; ".join(sorted(set(errors))) or "no init line in its log") + ")")
    elif caught:
        result["verdict"] = "KILLED"
        if timed_out:
            result["note"] = "the run hung and was stopped (the suite would report TIMEOUT)"
    elif handled:
        result["verdict"] = "HANDLED"
    elif cut:
        result["verdict"] = "NOT_RUN"
        result["note"] = "the time budget stopped its run before anything was caught"
    else:
        result["verdict"] = "SURVIVED"
        if not fired:
            result["note"] = "never reached: no test binary called an entry point it changes"
        elif masked:
            result["note"] = f"masked: {len(masked)} passing case(s) turned NotSupported"
    return result


def fault_result(f, plan, runs, sched, notes):
    """One fault's entry in mutation.json: its verdict (classify) with a note when the budget
    left targets out, and which targets it ran and why each was chosen, so that a selection
    that missed the test that would have caught it shows here, never as a hidden pass."""
    name = f["name"]
    labels = [l for l, _, _ in plan]
    missing = [l for l in labels if (name, l) in sched.skipped]
    missing_selected = [l for l, ph, _ in plan if ph < 3 and (name, l) in sched.skipped]
    base = {k: f[k] for k in ("name", "rule", "family", "kind", "description")}
    if not labels:
        r = dict(base, verdict="SURVIVED", caught_by=[], handled_cases=[], reached=[],
                 note="never reached: no test binary called an entry point it changes ("
                      + (f.get("entries") or "none") + ")")
    elif not runs:
        r = dict(base, verdict="NOT_RUN", caught_by=[], handled_cases=[], reached=[],
                 note="the time budget ran out")
    else:
        r = classify(f, runs, sched.unstable)
        if missing_selected and r["verdict"] == "SURVIVED":
            r["verdict"] = "NOT_RUN"
            r["note"] = (f"the time budget ran out before {len(missing_selected)} of its "
                         "selected target(s)")
        elif missing and r["verdict"] == "SURVIVED":
            r["note"] = (r.get("note", "") + "; " if r.get("note") else "") + (
                f"survived its {len([1 for _, ph, _ in plan if ph < 3])} selected target(s); "
                f"the budget ran out before {len(missing)} other reached target(s): "
                + ", ".join(missing))
    r["targets"] = labels
    r["target_plan"] = [{"target": l, "phase": ph, "why": why, "ran": (name, l) in sched.done,
                         "outcome": sched.outcome(name, l)} for l, ph, why in plan]
    r["targets_run"] = [l for l in labels if (name, l) in sched.done]
    if r["verdict"] == "SURVIVED" and name in notes:
        r["explanation"] = notes[name]
    return r


def score(results):
    counts = {v: 0 for v in ("KILLED", "HANDLED", "SURVIVED", "ERROR", "NOT_RUN")}
    for r in results:
        counts[r["verdict"]] += 1
    counted = counts["KILLED"] + counts["HANDLED"] + counts["SURVIVED"]
    pct = round(100.0 * (counts["KILLED"] + counts["HANDLED"]) / counted, 1) if counted else None
    return {**counts, "counted": counted, "total": len(results), "percent": pct,
            "run": len(results) - counts["NOT_RUN"]}


HALVES = ("tuning", "heldout")


def score_by(results, split, key):
    """{group: score} of the faults grouped by split[name][key] (key "half", "shape" or "batch");
    faults the split does not name are left out. The held-out half is the score that counts: the
    suite's tests were written looking only at the tuning half. A batch's score also says whether
    the batch is blind (written without sight of the tests)."""
    groups = {}
    for r in results:
        g = split.get(r["name"], {}).get(key)
        if g:
            groups.setdefault(g, []).append(r)
    order = list(HALVES) if key == "half" else sorted(groups)
    out = {g: dict(score(groups[g]), line=score_line(score(groups[g]))) for g in order if g in groups}
    if key == "batch":
        for g, s in out.items():
            s["blind"] = all(split[r["name"]].get("blind") for r in groups[g])
    return out


def score_line(s):
    """One line for a verdict page: the score, or why there is none or only part of one."""
    if not s or not s.get("total"):
        return "not run"
    caught = s["KILLED"] + s["HANDLED"]
    pct = "n/a" if s["percent"] is None else f"{s['percent']}%"
    line = (f"caught {caught} of {s['counted']} injected driver faults ({pct}): "
            f"{s['KILLED']} killed, {s['HANDLED']} handled, {s['SURVIVED']} survived")
    if s["NOT_RUN"]:
        line = f"partial: {s['run']} of {s['total']} faults run; " + line
    return line


def summary_line(statuses):
    counts = {}
    for status, _, _ in statuses.values():
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "no cases"
