"""What the runner prints of a run's results: the end-of-run list of failures, the counts by
status, and --json's one object. Names and messages are shown with control characters escaped."""

import json
import re

from reports import model
from tools.runner.config import FAILURES_LISTED_PER_TARGET, FAILURES_PRINTED


def printable(text):
    """Text for one terminal line: a newline, carriage return, escape or other control
    character in a case name or message is shown as an escape, never acted on."""
    return "".join(c if c >= " " and c != "\x7f" else repr(c)[1:-1] for c in str(text))


def one_line_reason(message, width=160):
    """The first line of a failure message that says something ('file:line' lines do not),
    with control characters shown as escapes."""
    lines = [x.strip() for x in (message or "").splitlines() if x.strip()]
    said = [x for x in lines if not re.match(r"^\S+:\d+:?$", x)] or lines or ["(no message)"]
    text = printable(said[0])
    return text if len(text) <= width else text[:width - 1] + "\u2026"


def failure_lines(targets, limit=FAILURES_PRINTED):
    """The end-of-run list of failures, as Bazel and deqp-runner print one: per failing case its
    status, target, case, one-line reason and test.log, one line each (names and reasons shown
    with control characters escaped)."""
    rows = [(t.label, f) for t in targets for f in t.failures]
    if not rows:
        return []
    total = len(rows) + sum(t.failures_not_listed for t in targets)
    out = [f"runner: {total} failing case(s):"]
    for label, f in rows[:limit]:
        out.append(f"  {f['status']:<13} {label} {printable(f['case'])}: {f['reason']}"
                   f"  [log: {f['log']}]")
    if total > limit:
        out.append(f"  ... and {total - limit} more (runner.json lists up to "
                   f"{FAILURES_LISTED_PER_TARGET} per target, test.xml all)")
    return out


def target_line(r):
    """A finished target in the progress output: its counts, restarts and blamed cases."""
    return (f"{r.label}: " + ", ".join(f"{k}={v}" for k, v in sorted(r.counts.items()))
            + (f"; restarts {r.restarts}" if r.restarts else "")
            + "".join(f"; blamed {a['blamed']}" for a in r.launches if "blamed" in a))


def json_summary(r):
    """--json's object: status, exit_code, message, seed, out, counts, and per target its label,
    counts, restarts and problems."""
    return json.dumps({"tool": "runner", "status": r.status, "exit_code": r.exit_code,
                       "message": r.message, "seed": r.seed, "out": r.out, "counts": r.counts,
                       "kernel_log_outside_cases": r.kernel_outside,
                       "targets": [{"label": t.label, "counts": t.counts, "restarts": t.restarts,
                                    "problems": t.problems} for t in r.targets]})


def kernel_lines(r):
    """The kernel log lines that fail the run's health: logged while no case ran, of a counted
    kind (an Xid, an NVRM error, an IOMMU fault, a PCIe AER line), excused by no entry."""
    bad = [k for k in r.kernel_outside if k["kind"] and not k["excused"]]
    if not bad:
        return []
    out = [f"runner: {len(bad)} kernel log line(s) reporting a fault while no case ran:"]
    for k in bad[:FAILURES_PRINTED]:
        out.append(f"  {k['kind']:<13} {k['target'] or '(between targets)'}: {printable(k['line'])[:300]}")
    return out


def human_summary(r):
    """The lines that end a run on a terminal: the failures, the kernel's word outside any case,
    the seed and folder, the counts (every status of reports.model, in its order, then any
    other)."""
    lines = failure_lines(r.targets) + kernel_lines(r)
    lines.append(f"runner: seed {r.seed}; results in {r.out}")
    counts = {s: r.counts.get(s, 0) for s in model.STATUSES}
    counts.update(r.counts)
    lines.append(model.format_counts(counts))
    return lines
