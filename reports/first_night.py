"""A first night: the first qualification of a SKU with no baseline to compare with (no earlier run
in --out, no baselines/<sku>/, or only a baseline of another CUDA runtime). Its verdict is its own
(FIRST NIGHT, exit 8) when nothing failed that a known deviation does not explain; a real failure
is still REGRESSIONS. Its first screen says what a reviewer needs before adopting the run as the
SKU's baseline:

- inherited: the known deviations (expectations/common.txt, keyed by driver, runtime and host)
  that excused failures here, and the entries known only on other platforms, judged as the rule;
- new: the failures nothing explains;
- not run: the NOT_SUPPORTED reasons grouped, host setup first, each with its fix
  (reports/coverage_reasons.py);
- whether the run may become the baseline, and the one command that drafts the SKU's files
  (tools/qualify --draft-expectations RUN_DIR; docs/platforms/new-platform.md).

  ctx = context(run, comp, sku, sku_file, run_dir, baseline_note)   # results.json info.first_night
"""

from reports import compare as cmp
from reports import coverage_reasons
from reports.model import Change

SHOWN = 20  # new failures listed by name on the first screen; the cases table has every one
FIXABLE = ("host setup", "operator setting")  # not-run reasons the lab can fix


def context(run, comp, sku, sku_file, run_dir, baseline_note=""):
    """The first night's facts as plain data. sku_file: the SKU's expectations file if it
    exists ('' if not); baseline_note: why no baseline was found (qualify's "none (...)"
    description: a SKU known on another CUDA runtime has a baseline that is not this run's)."""
    new = sorted(cid for cid, st in comp.status.items() if st == Change.REGRESSION)
    not_run = coverage_reasons.summary(run.cases)
    host_setup = [g for g in not_run if g["category"] in FIXABLE]
    blocking = comp.exit_code not in (cmp.EXIT_QUALIFIED, cmp.EXIT_FIRST_NIGHT)
    if not blocking:
        adopt = ("yes: nothing failed that a known deviation does not explain"
                 + (f"; first consider the {sum(g['cases'] for g in host_setup)} case(s) not run "
                    "for host setup below" if host_setup else ""))
    elif new:
        adopt = (f"not yet: {len(new)} failure(s) nothing explains: each is a bug to report, or an "
                 "expectation with its bug= link once it is understood")
    else:
        adopt = f"not yet: the verdict is {comp.verdict[0]}"
    return {
        "sku": sku,
        "sku_file": sku_file or "",
        "inherited": inherited(comp.applied),
        "elsewhere": [cmp.elsewhere_json(e, why, n) for e, why, n in comp.elsewhere],
        "new": new[:SHOWN],
        "new_count": len(new),
        "not_run": not_run,
        "not_run_fixable": [g for g in not_run if g["category"] in FIXABLE],
        "not_run_other": [g for g in not_run if g["category"] not in FIXABLE],
        "not_run_count": sum(g["cases"] for g in not_run),
        "may_become_baseline": not blocking,
        "adopt": adopt,
        "baseline_note": _inside_none(baseline_note),
        "draft_command": f"tools/qualify --draft-expectations {run_dir}",
    }


def _inside_none(note):
    """'none (why)' -> 'why'; '' stays ''."""
    note = (note or "").strip()
    if note.startswith("none (") and note.endswith(")"):
        return note[len("none ("):-1]
    return "" if note == "none" else note


def inherited(applied):
    """The entries that excused failures, one row per deviation (its anchor, else its entry):
    [{anchor, entry (every file:line), bug, known_on, cases}] in file order."""
    rows = {}
    for e, n in applied:
        r = rows.setdefault(e.anchor or e.source, {"anchor": e.anchor, "entry": [], "bug": e.bug,
                                                    "known_on": e.known_on(), "cases": 0})
        r["entry"].append(e.source)
        r["cases"] += n
    for r in rows.values():
        r["entry"] = ", ".join(r["entry"])
    return list(rows.values())


def terminal_lines(ctx):
    """The first night in a few lines for the terminal."""
    why = f" ({ctx['baseline_note']})" if ctx.get("baseline_note") else ""
    lines = [f"first night of {ctx['sku']}: no baseline{why}; "
             + (f"its expectations: {ctx['sku_file']}" if ctx["sku_file"] else f"no expectations/{ctx['sku']}.txt")]
    if ctx["inherited"]:
        lines.append("inherited known deviations: " + ", ".join(
            f"{i['anchor'] or i['entry']} ({i['known_on'] or 'everywhere'}; {i['cases']} case(s))"
            for i in ctx["inherited"]))
    for e in ctx["elsewhere"]:
        lines.append(e["line"])
    lines.append(f"new failures: {ctx['new_count']}; not run: {ctx['not_run_count']} case(s) in "
                 f"{len(ctx['not_run'])} reason(s)")
    for g in ctx["not_run"]:
        if g["category"] in FIXABLE:
            lines.append(f"  {g['category']}: {g['cases']} case(s): {g['reason'][:120]}"
                         + (f" -> {g['fix']}" if g["fix"] else ""))
    lines.append(f"may become the baseline: {ctx['adopt']}")
    if ctx["may_become_baseline"]:
        what = "write this runtime's baseline" if ctx["sku_file"] else "draft the SKU's files"
        lines.append(f"{what}: {ctx['draft_command']} (docs/platforms/new-platform.md)")
    return lines
