"""Running the tier: the one call into the runner (runner.run(RunConfig) returns a typed
RunnerResult), the typed run it wrote, and the retries of failed cases with the same seed."""

import os

from reports import expectations as expect
from reports import compare as cmp
from reports import model
from reports import testlogs as testlogs_reader
from tools.qualification import common
from tools.qualification.common import Stop, interrupted, say
from tools.runner import runner
from tools.runner.config import KMSG

MAX_RESTARTS = 5


def expected_durations(plan):
    """Seconds per target in the baseline run: the runner starts the longest first."""
    out = {}
    for c in (plan.baseline.cases if plan.baseline is not None else []):
        out[c.target] = out.get(c.target, 0.0) + (c.seconds or 0.0)
    return out


KERNEL_LOG_ENV = "PAGELOCK_KERNEL_LOG"


def kernel_log_path():
    """The kernel log the runner follows: $PAGELOCK_KERNEL_LOG ('' none; a file or FIFO for a
    test), else /dev/kmsg."""
    return os.environ.get(KERNEL_LOG_ENV, KMSG)


def run_bundle(plan, out, targets, filters, shuffle, time_scale, jobs=1):
    """Runs `targets` (manifest entries) of the bundle with per-target gtest filters and the plan's
    seed, writing a testlogs tree under out. Raises Interrupted on SIGTERM/SIGINT and Stop when
    the bundle or the output folder fails."""
    if not targets:
        return runner.RunnerResult(status="NOTHING_SELECTED", targets=[], out=out)
    res = runner.run(runner.RunConfig(
        bundle=plan.bundle, out=out, labels=[t["label"] for t in targets],
        filters=dict(filters, **{"*": ""}), seed=plan.seed, shuffle=shuffle,
        time_scale=time_scale, max_restarts=MAX_RESTARTS, progress_stderr=common.HUMAN["json"], jobs=jobs,
        durations=expected_durations(plan), kernel_log=kernel_log_path(),
        # Known benign kernel log lines (`kernel` entries): shown, failing nothing.
        kernel_excused=plan.expectations.kernel_excuses(expect.Platform.from_fingerprint(plan.fingerprint, plan.sku)) if plan.expectations else []))
    if res.status == "INTERRUPTED":
        raise interrupted(res.message)
    if res.status in ("BAD_BUNDLE", "OUTPUT_ERROR"):
        raise Stop(cmp.EXIT_INFRA, f"infrastructure error: the runner says {res.status}: {res.message}")
    return res


def load_run(plan, testlogs):
    """The typed run of a testlogs tree, every case knowing its run seed and stress tag. The run
    seed has one name, the binaries' own pagelock.run_seed (model.run_seed_of): what a binary
    recorded stands; a binary that recorded none ran with the plan's, which every binary is
    given (PAGELOCK_SEED)."""
    run = testlogs_reader.load_testlogs(testlogs)
    run.fingerprint.setdefault(model.PROP_RUN_SEED, str(plan.seed))
    run.default_run_seed()
    stress = {t["label"]: "stress" in t.get("tags", []) for t in plan.targets}
    for c in run.cases:
        c.stress = stress.get(c.target)
    return run


def _expected_failure(plan, c):
    """A `fail` entry excuses this failure and no `flake` entry asks for its retries."""
    platform = expect.Platform.from_fingerprint(plan.fingerprint, plan.sku)
    entries = plan.expectations.matching_entries(c.id, platform) if plan.expectations else []
    if any(e.kind == "flake" for e in entries):
        return False
    return any(e.kind == "fail" and e.excuses(c.status, c.message) for e in entries)


def retry_failures(plan, run, args):
    """Re-runs failed cases up to args.retries times with the same seed, each case alone in its
    target's filter; every attempt stays in case.attempts and the final status is the last
    attempt's. A case leaves the retries when it passes (a flake) or when a re-run fails with
    the status and message of the attempt before it, word for word: the failure reproduces, and
    more runs of the same seed would only cost time (a flake that fails the same way twice in a
    row is then reported as the failure, never hidden). A failure a `fail` expectation already
    excuses (its status and message) is not retried, as deqp-runner retries only unexpected
    results: it is the known failure, and on the stress tier one such attempt can take a minute.
    Nor is a case whose evidence conflicted (reports/model.py's rule)."""
    by_target = {t["label"]: t for t in plan.targets}
    consistent = {c.id for c in run.cases if c.status.is_retryable and _expected_failure(plan, c)}
    for attempt in range(1, args.retries + 1):
        # A case with conflicting evidence is not retried (reports/model.py: the worse word of
        # the binary stands, and a pass on a rerun would hide it).
        failing = [c for c in run.cases if c.status.is_retryable and c.target in by_target
                   and c.suite != "(binary)" and c.id not in consistent and not c.conflicts]
        if not failing:
            return
        say(f"retry {attempt}: {len(failing)} failed case(s), seed {plan.seed}")
        out = os.path.join(plan.run_dir, "retries", f"attempt_{attempt}")
        filters = model.gtest_filters(c.cid for c in failing)
        run_bundle(plan, out, [by_target[t] for t in sorted(filters)], filters, False, args.time_scale,
                   args.jobs)
        retried_run = load_run(plan, out)
        run.kernel_log += retried_run.kernel_log  # the kernel's word outside a case, retries too
        retried = retried_run.by_id()
        for c in failing:
            r = retried.get(c.id)
            new = r.status if r else model.Status.MISSING
            c.attempts.append(new)
            # Every attempt's logs stay (the log tail and kernel lines of the last failure are the
            # ones a reviewer needs), named by attempt.
            for key, text in (r.logs.items() if r else ()):
                c.logs[f"{key} (attempt {len(c.attempts)})"] = text
            if new.is_pass:
                c.first_failure = c.first_failure or c.message
                c.status, c.message = new, ""
            else:
                if r and new == c.status and r.message == c.message:
                    consistent.add(c.id)
                c.status = new
                if r:
                    c.message = r.message
