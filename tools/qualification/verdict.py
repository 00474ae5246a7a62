"""The verdict's refinements and its lines: a run in which nothing passed qualifies nothing,
and each unexpected result on one line, as Bazel and deqp-runner print them."""

import os

from reports import ciout
from reports import compare as cmp
from reports import first_night as first_night_mod
from reports import model
from reports.model import Change
from tools.runner import runner

UNEXPECTED = ("REGRESSION", "COVERAGE_LOST", "DROPPED", "FLAKE", "UNEXPECTED_PASS")
UNEXPECTED_PRINTED = 50
REASON_PRINTED = 160


def _cut(text, limit):
    """text cut to limit characters, the cut said with an ellipsis."""
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def nothing_passed(run, comp):
    """A run in which no case passed qualifies nothing, with a baseline or without one (the
    first run of a new SKU, --baseline none, --allow-no-gpu on a machine without a GPU where
    every case is NOT_SUPPORTED): such a verdict becomes NOTHING RAN (exit 4). Returns the
    reason, or '' when some case passed or the verdict already blocks."""
    if comp.exit_code not in (cmp.EXIT_QUALIFIED, cmp.EXIT_UPDATE):
        return ""
    if any(c.status.is_pass for c in run.cases):
        return ""
    counts = ", ".join(f"{k}={v}" for k, v in sorted(run.counts().items()) if v) or "no cases"
    comp.exit_code = cmp.EXIT_NOTHING_RAN
    return f"no case passed ({counts}): nothing was exercised, so nothing qualifies"


def first_night(plan, run, comp, info):
    """A first night (no baseline for this SKU anywhere): its own verdict, FIRST NIGHT (exit 8),
    where the run would otherwise qualify; a real failure stays REGRESSIONS. Its facts go to
    results.json (info.first_night) and the page. Returns them, or None."""
    if not plan.first_night:
        return None
    if comp.exit_code == cmp.EXIT_QUALIFIED:
        comp.exit_code = cmp.EXIT_FIRST_NIGHT
    info["first_night"] = first_night_mod.context(run, comp, plan.sku, plan.sku_file, plan.run_dir,
                                                  plan.baseline_name)
    return info["first_night"]


def _target_path(cid):
    """The parts of a case's target folder under testlogs/ (bazel-testlogs' layout):
    'suites/interior:pointer_queries_test/S.N' -> ['suites', 'interior', 'pointer_queries_test']."""
    try:
        i = model.CaseId.parse(cid)
    except ValueError:
        return [cid.split("/", 1)[0]]
    return i.package.split("/") + [i.target_name]


KERNEL_KEY = "kernel_log:outside_cases"


def kernel_health(run, comp):
    """The kernel's word outside any case (tools/runner/kmsg.py): a counted line (an Xid, an
    NVRM error, an IOMMU fault, a PCIe AER line) logged while no case ran and excused by no
    `kernel` entry fails the run's health. It is a run-level REGRESSION, beside the machine's
    coverage in comp.machine (results.json, the first screen, JUnit): the verdict is
    REGRESSIONS (exit 3) unless something worse already decided it (NOTHING RAN, an
    INFRASTRUCTURE ERROR). Returns the lines that failed it."""
    bad = run.kernel_faults()
    if not bad:
        return []
    first = bad[0]
    where = first.get("target") or "between targets"
    comp.machine.append((KERNEL_KEY, Change.REGRESSION,
                         f"{len(bad)} kernel log line(s) reporting a fault while no case ran, the first "
                         f"a {first['kind']} line ({where}): {first['line']}"))
    comp.summary[str(Change.REGRESSION)] = comp.summary.get(str(Change.REGRESSION), 0) + 1
    if comp.exit_code in (cmp.EXIT_QUALIFIED, cmp.EXIT_UPDATE, cmp.EXIT_COVERAGE_LOST):
        comp.exit_code = cmp.EXIT_REGRESSION
    return bad


def unexpected_lines(run, comp, run_dir, limit=UNEXPECTED_PRINTED):
    """The end of a run, as Bazel and deqp-runner print it: each unexpected result on one line
    (change, case, one-line reason, test.log), regressions first."""
    cases = run.by_id()
    rows = sorted(((st, cid) for cid, st in comp.status.items() if str(st) in UNEXPECTED),
                  key=lambda r: (UNEXPECTED.index(str(r[0])), r[1]))
    if not rows:
        return []
    out = [f"{len(rows)} unexpected result(s):"]
    for st, cid in rows[:limit]:
        c = cases.get(cid)
        reason = _cut(runner.printable(ciout.one_line(c)), REASON_PRINTED) if c is not None else ""
        log = os.path.join(run_dir, "testlogs", *_target_path(cid), "test.log")
        out.append(f"  {str(st):<15} {runner.printable(cid)}: {reason or comp.notes.get(cid, '')}  [log: {log}]")
    if len(rows) > limit:
        out.append(f"  ... and {len(rows) - limit} more (index.html and failures.csv have all)")
    return out
