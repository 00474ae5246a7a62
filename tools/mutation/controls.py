"""The controls: every target under the shim in census mode (every entry wrapped, nothing
changed, each entry a binary calls logged), the first time with its cases' rules read. The
census says which binaries a fault can reach; the second control (or --reference, an earlier
run of the same bundle) finds the unstable cases; a binary whose control hangs, crashes or
gives nothing is left out."""

import time
from dataclasses import dataclass

from tools.mutation import scoring

# A control with one of these is no control: the target is left out.
BROKEN = set(scoring.FAILING) - {"FAIL"}


class ControlFailed(Exception):
    """The shim did not work in a control run (mutation.py exits 1)."""


@dataclass
class Controls:
    names: list  # the control runs: control[, control_b]
    control: dict  # target -> {case: (status, reason, message)} of the first control
    census: dict  # target -> entry points its controls called
    dur: dict  # target -> seconds of its longest control
    unusable: dict  # target -> why it is left out
    all_control: dict  # case -> (status, reason, message), first control
    all_control_b: dict  # the same of the second control (or the reference)
    unstable: set  # cases that never count as a catch
    target_rules: dict  # target -> rules its cases name
    seconds: float  # wall time from the tool's start to the controls' end


def run(runs, pool_targets, serial_targets, args, reference, t0):
    """Runs the controls (the pool's --jobs at a time, then the serial targets one by one) and
    reads them. Raises ControlFailed when the shim did not load or reported an error."""
    names = ["control", "control_b"] if args.control_runs == 2 else ["control"]
    case_rules = {}
    ctl_jobs = [((c, t["label"]), runs.job, (c, "census", t, args.target_timeout,
                                             case_rules if c == "control" else None), 30)
                for c in names for t in pool_targets]
    ctl, _ = runs.pool(ctl_jobs, args.jobs)
    for c in names:
        for t in serial_targets:
            ctl[(c, t["label"])] = runs.job(c, "census", t, args.target_timeout,
                                            case_rules if c == "control" else None)
    labels = [t["label"] for t in pool_targets + serial_targets]
    controls = read(names, ctl, case_rules, labels, reference, t0)
    print(f"mutation: control {scoring.summary_line(controls.all_control)} in {round(controls.seconds)} s; "
          f"{len(controls.unusable)} target(s) left out: {sorted(controls.unusable)}", flush=True)
    return controls


def read(names, ctl, case_rules, labels, reference, t0):
    """Controls from the control runs ctl: {(run name, target): (meta, statuses, fault log)}."""
    control, control_b, census, dur, unusable = {}, {}, {}, {}, {}
    for (c, label), (meta, statuses, (inits, fired, errors)) in ctl.items():
        if errors:
            raise ControlFailed(f"the shim reported: {'; '.join(sorted(set(errors)))}")
        if not inits:
            raise ControlFailed(f"{label} never loaded the shim (no init line in its fault.log); "
                                "is LD_LIBRARY_PATH honoured?")
        (control if c == "control" else control_b).setdefault(label, {}).update(statuses)
        census.setdefault(label, set()).update(fired)
        dur[label] = max(dur.get(label, 0.0), meta["seconds"])
        bad = sorted({st for st, _, _ in statuses.values()} & BROKEN)
        if meta["timed_out"] or meta.get("cut_by_budget") or not statuses or bad:
            unusable[label] = ("the control " + ("hung" if meta["timed_out"] else
                               "had " + ",".join(bad) if bad else "produced no results"))
    all_control = {k: v for st in control.values() for k, v in st.items()}
    all_control_b = {k: v for st in control_b.values() for k, v in st.items()}
    if reference is not None:
        # An earlier run of the same binaries (qualify's own run): a case it has that differs
        # from the control is unstable; a case it lacks (another tier) is judged by the control.
        all_control_b = {k: reference.get(k, v) for k, v in all_control.items()}
    unstable = scoring.unstable_cases(all_control, all_control_b) \
        if (all_control_b or reference is not None) else scoring.unstable_cases(all_control)
    target_rules = {}
    for case, rules in case_rules.items():
        for t in labels:
            if case.startswith(t[2:] + "/"):
                target_rules.setdefault(t, set()).update(rules)
    return Controls(names, control, census, dur, unusable, all_control, all_control_b, unstable,
                    target_rules, round(time.monotonic() - t0, 1))

