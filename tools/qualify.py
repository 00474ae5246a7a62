#!/usr/bin/env python3
"""pagelock qualify: the nightly driver qualification of the local GPUs.

Checks that a GPU is usable (without --bundle first of all, before building: the driver's
libcuda.so.1, cuInit and cuDeviceGetCount, in a second), builds the bundle (or takes one), runs
the selected tier with one run seed for every binary, retries failed cases with the same seed
and filter, compares the results with the expectations for this GPU SKU and driver and with a
baseline run (coverage included), writes a run directory (results.json, index.html, junit.xml,
results.csv, failures.csv, expectations-update.txt, testlogs/), stores the run in the history
database, prints a verdict and exits with its code.

  plan (every input checked, nothing written) -> run -> retry -> compare -> publish

Exit codes (the one table; README's is a copy, qualify_test checks it against reports/compare.py):
  0  QUALIFIED                   every case passed or matched its expectation; no coverage lost
  1  INFRASTRUCTURE ERROR        no usable GPU, a build or bundle binary that could not run, a
                                 status the harness does not know, a disk that filled up
  2  BAD CONFIGURATION           bad arguments, bundle, expectations, baseline, history or --out
                                 (nothing was run, no run folder was created)
  3  REGRESSIONS                 some case failed that no expectation covers
  4  NOTHING RAN                 no test binary matches the tier, every case was skipped, or
                                 no case passed (e.g. all NOT_SUPPORTED with --allow-no-gpu):
                                 a run that exercised nothing never qualifies, baseline or not
  5  EXPECTATIONS NEED UPDATING  unexpected passes, new flakes or stale entries; nothing failed
  6  COVERAGE LOST               cases exercised in the baseline did not run (NOT_SUPPORTED,
                                 SKIP, MISSING, DROPPED) or the machine lost GPUs, SKU or a
                                 capability against the baseline, and no expectation names it
  7  INTERRUPTED                 SIGINT/SIGTERM/SIGHUP (at any moment, --mutation included): the
                                 running tests were stopped, no process is left; once the run
                                 folder exists its results.json says INTERRUPTED and keeps the
                                 finished cases (a second signal while it finishes is ignored)

  tools/qualify [--bundle DIR] [--tier bat|full|stress] [--baseline auto|none|PATH] ...
  tools/qualify --bundle DIR --seed 4321 --write-baseline   # regenerate baselines/<sku>/results.json
  tools/qualify --bundle DIR --mutation [--mutation-budget 300] [--mutation-jobs 12]
      # then the mutation score of the same bundle into <run dir>/mutation/ (never changes the verdict)
"""

import argparse
import datetime
import json
import math
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from reports import ciout  # noqa: E402
from reports import compare as cmp  # noqa: E402
from reports import expectations as expect  # noqa: E402
from reports import history  # noqa: E402
from reports import htmlreport  # noqa: E402
from reports import model  # noqa: E402
from reports import validate  # noqa: E402
from tools.runner import runner  # noqa: E402

TIERS = {"bat": "tier_bat,-stress,-selftest,-host",
         "full": "tier_bat,tier_full,-stress,-selftest,-host",
         "stress": "tier_bat,tier_full,tier_stress,-selftest,-host"}
MAX_RESTARTS = 5
# This run's failures as `fail`/`flake`/`coverage` entries: a starting point for expectations.
EXPECTATIONS_UPDATE = "expectations-update.txt"


# --json: the human lines (and the runner's progress) go to stderr, stdout carries one JSON object.
HUMAN = {"stream": None, "json": False}
SUMMARY = {}  # what --json prints: filled in as the run goes


def say(msg):
    print(f"qualify: {msg}", file=HUMAN["stream"] or sys.stdout, flush=True)


class Stop(Exception):
    """Ends qualify early with an exit code and a message (no traceback)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Interrupted(BaseException):
    """SIGTERM, SIGINT or SIGHUP arrived."""


# The signals qualify stops on, as the runner does (README's exit 7).
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# The first signal's name once one arrived: qualify is then finishing (killing what runs, marking
# the run folder INTERRUPTED), and a second signal must not cut that short.
INTERRUPT = {"by": None}
# Input files are read whole: a file larger than this is refused, not read into memory.
MAX_EXPECTATIONS_BYTES = 64 << 20
MAX_RESULTS_BYTES = 4 << 30
# Run folders' names: <UTC date-time>_<host>_<sku>_<driver>[-N].
RUN_KEY_RE = re.compile(r"^\d{8}-\d{6}_[^_/]*_([^_/]+)_[^/]*$")


def interrupted(by):
    """The Interrupted to raise for a signal named by; later signals are only recorded."""
    # The runner's message ("interrupted by SIGTERM: results of ...") names the signal first.
    name = re.search(r"\bSIG[A-Z]+\b", str(by or ""))
    by = name.group(0) if name else "a signal"
    INTERRUPT["by"] = INTERRUPT["by"] or by
    return Interrupted(INTERRUPT["by"])


@dataclass
class Plan:
    bundle: str
    manifest: dict
    targets: list  # manifest entries selected by the tier
    fingerprint: dict
    sku: str
    driver: str
    expectations: object
    baseline: object  # model.Run or None
    baseline_name: str
    seed: int
    tags: str
    filters: dict = field(default_factory=dict)  # label -> gtest filter
    skipped: list = field(default_factory=list)  # case ids that `skip` expectations keep out
    run_dir: str = ""
    db: object = None
    trends: dict = None  # metric name -> [(run_key, driver, value)], this run last


# ---------------------------------------------------------------------------------------------
# The one call into the runner: runner.run(RunConfig) returns a typed RunnerResult.

def _expected_durations(plan):
    """Seconds per target in the baseline run: the runner starts the longest first."""
    out = {}
    for c in (plan.baseline.cases if plan.baseline is not None else []):
        out[c.target] = out.get(c.target, 0.0) + (c.seconds or 0.0)
    return out


def _run_bundle(plan, out, targets, filters, shuffle, time_scale, jobs=1):
    """Runs `targets` (manifest entries) of the bundle with per-target gtest filters and the plan's
    seed, writing a testlogs tree under out. Raises Interrupted on SIGTERM/SIGINT and Stop when
    the bundle or the output folder fails."""
    if not targets:
        return runner.RunnerResult(status="NOTHING_SELECTED", targets=[], out=out)
    res = runner.run(runner.RunConfig(
        bundle=plan.bundle, out=out, labels=[t["label"] for t in targets],
        filters=dict(filters, **{"*": ""}), seed=plan.seed, shuffle=shuffle,
        time_scale=time_scale, max_restarts=MAX_RESTARTS, progress_stderr=HUMAN["json"], jobs=jobs,
        durations=_expected_durations(plan)))
    if res.status == "INTERRUPTED":
        raise interrupted(res.message)
    if res.status in ("BAD_BUNDLE", "OUTPUT_ERROR"):
        raise Stop(cmp.EXIT_INFRA, f"infrastructure error: the runner says {res.status}: {res.message}")
    return res


# ---------------------------------------------------------------------------------------------
# plan

def preflight(bundle, manifest):
    """The fingerprint, from the first GPU binary's --pagelock_fingerprint."""
    for t in manifest["targets"]:
        if "gpu" in t.get("tags", []):
            binary = os.path.join(bundle, t["path"])
            try:
                out = subprocess.run([binary, "--pagelock_fingerprint"], capture_output=True,
                                     text=True, timeout=120)
                fp = json.loads(out.stdout)
                if not isinstance(fp, dict):
                    raise ValueError("not a JSON object")
                return {k: str(v) for k, v in fp.items()}, None
            except (OSError, subprocess.TimeoutExpired, ValueError) as e:
                return None, f"{binary} --pagelock_fingerprint failed: {e}"
    return None, "the bundle has no GPU test binary"


def skip_filters(bundle, targets, exps, driver):
    """{label: negative gtest filter} from `skip` expectations, and the skipped case ids. The
    patterns match whole case ids (any package depth); the binaries' own case lists say which
    cases they name, so each target gets exactly its own cases."""
    patterns = [e.pattern for e in exps.skip_patterns(driver)]
    if not patterns:
        return {}, []
    filters, skipped = {}, []
    for t in targets:
        names, _ = runner.list_cases(os.path.join(bundle, t["path"]), "", dict(os.environ))
        ids = []
        for n in names or []:
            suite, _, case = n.partition(".")
            ids.append(model.CaseId(t["label"], suite, case))
        hit = model.matching(patterns, ids)
        if hit:
            filters.update(model.gtest_filters(hit, negative=True))
            skipped += [str(c) for c in hit]
    return filters, skipped


def read_results_file(path, what):
    """(Run, info, document) of a results.json, every field's type checked first, so that a
    wrong-typed field is exit 2 naming it before any test runs. Raises Stop(EXIT_CONFIG)."""
    try:
        doc = validate.read_json_file(path, MAX_RESULTS_BYTES)
    except validate.InputError as e:
        raise Stop(cmp.EXIT_CONFIG, f"bad {what}: {e}")
    problem = validate.results_problem(doc)
    if problem:
        raise Stop(cmp.EXIT_CONFIG, f"bad {what}: {path}: {problem}")
    run_json = doc.get("run", doc)
    if "format_version" not in run_json and "format_version" in doc:
        run_json = dict(run_json, format_version=doc["format_version"])
    try:
        run = model.Run.from_json(run_json)
    except model.ResultsError as e:
        raise Stop(cmp.EXIT_CONFIG, f"bad {what}: {path}: {e}")
    return run, doc.get("info", {}), doc


def stored_runs(out, sku):
    """Run folders under out for this SKU that hold a results.json, the one stored last first.
    Stored last is the results.json's modification time (set by this machine's kernel when the
    run was written), never the run's own started_at: a host whose clock is a day behind would
    otherwise make an older run the latest."""
    found = []
    try:
        names = os.listdir(out)
    except OSError:
        return []
    for name in names:
        m = RUN_KEY_RE.match(name)
        path = os.path.join(out, name, "results.json")
        if not m or m.group(1) != sku:
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        found.append((st.st_mtime_ns, name, path))
    return [path for _, _, path in sorted(found, reverse=True)]


def runtime_of(fingerprint):
    """CUDART_VERSION the run's binaries were built with (an int), or None when unrecorded."""
    try:
        return int(str((fingerprint or {}).get("cuda_runtime_version", "")).strip())
    except ValueError:
        return None


def runtime_name(version):
    return f"{version // 1000}.{version % 1000 // 10}" if version else "unknown"


def same_runtime(run, runtime):
    """A baseline compares like with like: the documented rule profile and the APIs a suite can
    reach follow the CUDA runtime, so a run of another runtime is never the baseline."""
    theirs = runtime_of(run.fingerprint)
    return runtime is None or theirs is None or theirs == runtime


def reference_baseline(sku, runtime):
    """baselines/<sku>/cuda-X.Y/results.json for a runtime that has its own, else
    baselines/<sku>/results.json (the default toolkit's)."""
    own = os.path.join(ROOT, "baselines", sku, f"cuda-{runtime_name(runtime)}", "results.json")
    if runtime and os.path.lexists(own):
        return own
    return os.path.join(ROOT, "baselines", sku, "results.json")


def latest_baseline(out, sku, runtime=None):
    """(path, Run) of the run stored last for sku under the same CUDA runtime whose verdict was
    reached (an INTERRUPTED or unreadable folder is passed over, with a note), or (None, None)."""
    for path in stored_runs(out, sku):
        try:
            run, info, _ = read_results_file(path, "earlier run")
        except Stop as e:
            say(f"note: --baseline auto passes over {path}: {e}")
            continue
        if info.get("sku") not in (None, sku):
            continue
        if info.get("exit_code") == cmp.EXIT_INTERRUPTED or info.get("verdict") == "INTERRUPTED":
            continue
        if not same_runtime(run, runtime):
            continue
        return path, run
    return None, None


def load_baseline(spec, out, sku, runtime=None):
    """Returns (Run or None, description). Raises Stop(EXIT_CONFIG) on a bad baseline.
    auto: the run of this SKU and CUDA runtime stored last in --out (by when it was stored, not
    by its clock), else baselines/<sku>[/cuda-X.Y]; deleting the newest run folder falls back
    to the one before it. A reference baseline of another runtime is no baseline."""
    if spec == "none":
        return None, "none"
    if spec == "auto":
        path, run = latest_baseline(out, sku, runtime)
        if run is not None:
            return run, os.path.abspath(path)
        path = reference_baseline(sku, runtime)
        rel = os.path.relpath(path, ROOT)
        if not os.path.lexists(path):
            return None, f"none (no earlier run for {sku} in {out} and no {rel})"
        run, _, _ = read_results_file(path, "baseline")
        if not same_runtime(run, runtime):
            return None, (f"none ({rel} is for CUDA runtime {runtime_name(runtime_of(run.fingerprint))}, "
                          f"this run's is {runtime_name(runtime)}; --write-baseline writes "
                          f"baselines/{sku}/cuda-{runtime_name(runtime)}/)")
        return run, os.path.abspath(path)
    path = spec
    if os.path.isdir(path):
        path = os.path.join(path, "results.json")
    if not os.path.lexists(path):
        raise Stop(cmp.EXIT_CONFIG, f"bad baseline {spec}: no results.json at {path}")
    run, _, _ = read_results_file(path, "baseline")
    return run, os.path.abspath(path)


def check_input_files(args, bundle, sku=None):
    """Every file qualify will read must be a regular file: /dev/zero, a link to it or a FIFO
    as the manifest, an expectations file or the history would fill the memory or hang.
    Raises Stop(EXIT_CONFIG) naming the path."""
    paths = [("bundle manifest", os.path.join(bundle, "manifest.json"))]
    if sku is not None:
        paths += [("expectations", os.path.join(args.expectations, n)) for n in ("common.txt", f"{sku}.txt")]
        if not args.no_history and not history.is_url(args.history or ""):
            paths.append(("history", args.history or os.path.join(args.out, "history.sqlite")))
    for what, path in paths:
        if not os.path.lexists(path):
            continue  # absent is its reader's business (an optional file, or a clear message)
        problem = validate.regular_file_problem(path)
        if problem is None and what == "expectations" and os.path.getsize(path) > MAX_EXPECTATIONS_BYTES:
            problem = f"larger than {MAX_EXPECTATIONS_BYTES >> 20} MiB, not read"
        if problem:
            raise Stop(cmp.EXIT_CONFIG, f"bad {what}: {path} {problem}")


def open_history(args):
    if args.no_history:
        return None
    path = args.history or os.path.join(args.out, "history.sqlite")
    try:
        return history.connect(path)
    except (sqlite3.Error, OSError) as e:
        raise Stop(cmp.EXIT_CONFIG, f"history {path} is unusable ({e}); repair or move it, or "
                                    "run with --history OTHER.sqlite or --no-history")


def path_part(text, default):
    """text as one safe component of a folder name: letters, digits, '.', '-' only (no '/',
    no '_', the run key's separator), at most 64 characters; fingerprint values come from a
    binary's output and must never steer where qualify writes."""
    part = re.sub(r"[^A-Za-z0-9.-]", "-", str(text or ""))[:64].strip(".") or default
    return part


def new_run_dir(out, fp, sku, driver, started):
    run_key = (f"{started:%Y%m%d-%H%M%S}_{path_part(fp.get('host'), 'host')}_"
               f"{path_part(sku, 'unknown')}_{path_part(driver, 'nodriver')}")
    base_key, n = run_key, 1
    while os.path.lexists(os.path.join(out, run_key)):  # two runs in one second
        n += 1
        run_key = f"{base_key}-{n}"
    # The key is one component by construction; refuse anything that would still land outside.
    real_out = os.path.realpath(out)
    if os.path.dirname(os.path.realpath(os.path.join(out, run_key))) != real_out:
        raise Stop(cmp.EXIT_CONFIG, f"run folder {run_key!r} would not be inside --out {out}")
    return run_key


# A usable GPU, asked of the driver itself (no Bazel, no bundle, no CUDA toolkit): a machine
# without one learns it in a second instead of after a build. A child process, so that a driver
# that hangs in cuInit cannot hang qualify.
_GPU_PROBE = r"""
import ctypes, sys
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError as e:
    print(f"no NVIDIA driver: {e}"); sys.exit(1)
def name(rc):
    text = ctypes.c_char_p()
    try:
        cuda.cuGetErrorName(rc, ctypes.byref(text))
    except AttributeError:
        pass
    return f"{rc} ({text.value.decode()})" if text.value else str(rc)
rc = cuda.cuInit(0)
if rc:
    print(f"cuInit={name(rc)}"); sys.exit(1)
n = ctypes.c_int(0)
rc = cuda.cuDeviceGetCount(ctypes.byref(n))
if rc or n.value < 1:
    print(f"cuDeviceGetCount={name(rc)}, {n.value} device(s)"); sys.exit(1)
print(f"{n.value} GPU(s)")
"""
GPU_PROBE_TIMEOUT_S = 20


def probe_gpu():
    """(True, 'N GPU(s)') or (False, why not): libcuda.so.1, cuInit, cuDeviceGetCount."""
    try:
        p = subprocess.run([sys.executable, "-c", _GPU_PROBE], capture_output=True, text=True,
                           timeout=GPU_PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False, f"cuInit did not return within {GPU_PROBE_TIMEOUT_S} s"
    except OSError as e:
        return False, f"the GPU probe could not run ({e})"
    line = (p.stdout.strip().splitlines() or [p.stderr.strip()[-200:] or "no answer"])[-1]
    return p.returncode == 0, line


def require_gpu_before_building(args):
    """Without --bundle qualify builds first (minutes): check the GPU before that, unless
    --allow-no-gpu. Raises Stop(EXIT_INFRA) with the reason."""
    if args.bundle or args.allow_no_gpu:
        return
    ok, why = probe_gpu()
    if not ok:
        raise Stop(cmp.EXIT_INFRA, f"infrastructure error: no usable GPU on this machine ({why}); "
                                   "nothing was installed, built or run (--allow-no-gpu runs the "
                                   "harness self-tests without one)")


def check_arguments(args):
    """Every argument that can be checked without the bundle; raises Stop(EXIT_CONFIG)."""
    if args.retries < 0 or not math.isfinite(args.time_scale) or args.time_scale <= 0:
        raise Stop(cmp.EXIT_CONFIG, "--retries must be >= 0 and --time-scale a number > 0")
    if args.mutation and (not args.mutation_budget > 0 or args.mutation_jobs < 1):
        raise Stop(cmp.EXIT_CONFIG, "--mutation-budget and --mutation-jobs must be positive")
    if not 1 <= args.jobs <= runner.MAX_JOBS:
        raise Stop(cmp.EXIT_CONFIG, f"--jobs must be from 1 to {runner.MAX_JOBS}")
    if args.seed is not None and not 0 <= args.seed < 2 ** 64:
        raise Stop(cmp.EXIT_CONFIG, "--seed must be between 0 and 2^64-1")
    if args.baseline not in ("auto", "none") and not os.path.lexists(args.baseline):
        raise Stop(cmp.EXIT_CONFIG, f"bad baseline {args.baseline}: no such file or folder")


def preflight_only(args):
    """tools/qualify's first step, before it installs or builds anything: the arguments, then
    (when it would build) the GPU. Exit 0 when both are fine."""
    check_arguments(args)
    require_gpu_before_building(args)
    return 0


def make_plan(args):
    check_arguments(args)
    if not args.bundle:
        require_gpu_before_building(args)
    # A baseline named on the command line is read (every field's type checked) before the
    # build and before any test runs: a bad one costs nothing.
    named_baseline = None
    if args.baseline not in ("auto", "none"):
        named_baseline = load_baseline(args.baseline, args.out, None)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        raise Stop(cmp.EXIT_CONFIG, f"--out {args.out}: cannot create it: {e.strerror}")
    if not os.access(args.out, os.W_OK | os.X_OK):
        raise Stop(cmp.EXIT_CONFIG, f"--out {args.out}: not writable")

    bundle = args.bundle
    if not bundle:
        bundle = os.path.join(ROOT, "build", "bundle")
        say(f"building the bundle into {bundle}")
        rc = subprocess.call([sys.executable, os.path.join(ROOT, "tools", "bundle.py"), bundle]
                             + (["--archs", args.archs] if args.archs else []))
        if rc != 0:
            raise Stop(cmp.EXIT_INFRA, f"the build failed (tools/bundle.py exit {rc})")
    check_input_files(args, bundle)
    try:
        manifest = runner.load_manifest(bundle)
    except runner.UsageError as e:
        raise Stop(cmp.EXIT_CONFIG, str(e))
    except (OSError, AttributeError, TypeError) as e:
        raise Stop(cmp.EXIT_CONFIG, f"{bundle}: not a usable bundle ({e})")

    fp, err = preflight(bundle, manifest)
    if fp is None:
        raise Stop(cmp.EXIT_INFRA, f"infrastructure error: {err}")
    if fp.get("device_status") != "usable" and not args.allow_no_gpu:
        raise Stop(cmp.EXIT_INFRA, f"infrastructure error: no usable GPU on this machine "
                                   f"({fp.get('device_status')}); nothing was run (--allow-no-gpu "
                                   "runs the harness self-tests without one)")
    sku = expect.sku_of(fp.get("gpu0_name", "none"))
    driver = fp.get("nvidia_driver", "")
    check_input_files(args, bundle, sku)
    try:
        exps = expect.load(args.expectations, sku)
    except expect.ExpectationError as e:
        raise Stop(cmp.EXIT_CONFIG, f"bad expectations: {e}")
    baseline, baseline_name = named_baseline or load_baseline(args.baseline, args.out, sku,
                                                              runtime_of(fp))
    db = open_history(args)
    targets = runner.select(manifest["targets"], TIERS[args.tier], "")
    if not targets:
        raise Stop(cmp.EXIT_NOTHING_RAN, f"nothing ran: no test binary matches the tier {args.tier}")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10 ** 12)
    plan = Plan(bundle, manifest, targets, fp, sku, driver, exps, baseline, baseline_name, seed,
                TIERS[args.tier], db=db)
    plan.filters, plan.skipped = skip_filters(bundle, targets, exps, driver)
    return plan


# ---------------------------------------------------------------------------------------------
# run and retry

def load_run(plan, testlogs):
    """The typed run of a testlogs tree, every case knowing its run seed and stress tag."""
    run = model.load_testlogs(testlogs)
    run.fingerprint["seed"] = str(plan.seed)  # every binary ran with it (history's runs.seed)
    stress = {t["label"]: "stress" in t.get("tags", []) for t in plan.targets}
    for c in run.cases:
        c.run_seed = plan.seed
        c.stress = stress.get(c.target)
    return run


def retry_failures(plan, run, args):
    """Re-runs failed cases up to args.retries times with the same seed, each case alone in its
    target's filter; every attempt stays in case.attempts and the final status is the last
    attempt's. A case leaves the retries when it passes (a flake) or when a re-run fails with
    the status and message of the attempt before it, word for word: the failure reproduces, and
    more runs of the same seed would only cost time (a flake that fails the same way twice in a
    row is then reported as the failure, never hidden)."""
    by_target = {t["label"]: t for t in plan.targets}
    consistent = set()  # ids of cases whose failure reproduced exactly
    for attempt in range(1, args.retries + 1):
        failing = [c for c in run.cases if c.status.is_retryable and c.target in by_target
                   and c.suite != "(binary)" and c.id not in consistent]
        if not failing:
            return
        say(f"retry {attempt}: {len(failing)} failed case(s), seed {plan.seed}")
        out = os.path.join(plan.run_dir, "retries", f"attempt_{attempt}")
        filters = model.gtest_filters(c.cid for c in failing)
        _run_bundle(plan, out, [by_target[t] for t in sorted(filters)], filters, False, args.time_scale,
                    args.jobs)
        retried = load_run(plan, out).by_id()
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


# ---------------------------------------------------------------------------------------------
# publish

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
    with open(os.path.join(run_dir, EXPECTATIONS_UPDATE), "w") as f:
        f.write(cmp.failures_csv(run, comp))
    state["phase"] = "rendering"
    plan.trends = trends_with_this_run(plan, run, info)
    page = write_report(plan, run, comp, info)
    if plan.db:
        state["phase"] = "storing the history"
        try:
            # Everything the fleet report shows (label, tier, run folder, its report), as an import
            # of this run folder would store it.
            history.store(plan.db, info["run_key"], info["started_at"], run, comp, plan.sku,
                          info["bundle"].get("commit", ""), comp.exit_code, info["verdict"],
                          label=info.get("label") or None, tier=info.get("tier"),
                          run_dir=os.path.abspath(run_dir),
                          report=os.path.abspath(page))
        except (sqlite3.Error, ValueError, TypeError) as e:
            say(f"warning: the history was not updated ({e}); results.json has the run")
    state["phase"] = "printing the summary"
    if args.write_baseline and comp.exit_code != cmp.EXIT_QUALIFIED:
        say(f"baseline NOT written: the verdict is {info['verdict']}, a baseline must qualify")
    elif args.write_baseline:
        dest = baseline_dest(plan.sku, runtime_of(run.fingerprint))
        os.makedirs(dest, exist_ok=True)
        model.write_results(os.path.join(dest, "results.json"), run, info, comp)
        say(f"baseline written: {os.path.join(dest, 'results.json')} (commit it)")
    return page


def baseline_dest(sku, runtime):
    """baselines/<sku> when it is empty or holds this runtime's baseline, else a folder of the
    runtime's own (baselines/<sku>/cuda-X.Y): one reference per runtime, never overwritten by
    another runtime's run."""
    default = os.path.join(ROOT, "baselines", sku)
    path = os.path.join(default, "results.json")
    if not os.path.lexists(path) or runtime is None:
        return default
    try:
        run, _, _ = read_results_file(path, "baseline")
    except Stop:
        return default
    if same_runtime(run, runtime):
        return default
    return os.path.join(default, f"cuda-{runtime_name(runtime)}")


UNEXPECTED = ("REGRESSION", "COVERAGE_LOST", "DROPPED", "FLAKE", "UNEXPECTED_PASS")
UNEXPECTED_PRINTED = 50


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
        reason = runner.printable(ciout.one_line(c))[:160] if c is not None else ""
        target = cid.split("/", 1)[0]
        log = os.path.join(run_dir, "testlogs", *target.split(":"), "test.log")
        out.append(f"  {str(st):<15} {runner.printable(cid)}: {reason or comp.notes.get(cid, '')}  [log: {log}]")
    if len(rows) > limit:
        out.append(f"  ... and {len(rows) - limit} more (index.html and failures.csv have all)")
    return out


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


# ---------------------------------------------------------------------------------------------
# --mutation: the mutation score of the same bundle (tools/mutation), after the verdict is out.

MUTATION_TOOL = os.path.join(ROOT, "tools", "mutation", "mutation.py")
# Every process of the mutation run inherits this variable (mutation.py, its runners, their test
# binaries under the fault shim, which run in sessions of their own): what is still alive with
# it after mutation.py stopped is killed.
KILL_TOKEN_ENV = "PAGELOCK_QUALIFY_TOKEN"
MUTATION_STOP_S = 45  # how long mutation.py may take to stop its runners after SIGTERM


def kill_token_holders(token):
    """SIGKILLs every live process whose environment carries KILL_TOKEN_ENV=token; returns how
    many."""
    return runner.kill_env_holders(KILL_TOKEN_ENV, token)


def stop_mutation(proc, token):
    """Stops mutation.py the way it stops on a signal (SIGTERM: it stops its runners, which stop
    their binaries), then kills whatever of the run is left."""
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=MUTATION_STOP_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except OSError:
        pass
    for _ in range(3):  # a process forking while it is killed: look again
        if not kill_token_holders(token):
            break
        time.sleep(0.1)


MUTATION_FALSE_ALARMS = 3  # mutation.py: done, and a conforming variation failed a case


def run_mutation(plan, run, comp, info, args, state):
    """Runs tools/mutation over the bundle into <run dir>/mutation/, then adds its score to
    results.json, the --json summary and the report. Whatever goes wrong here is a note: the
    verdict, already written, never changes. A signal stops the mutation run (nothing of it is
    left running) and is raised on: qualify exits 7."""
    out = os.path.join(plan.run_dir, "mutation")
    doc_path = os.path.join(out, "mutation.json")
    cmd = [sys.executable, MUTATION_TOOL, plan.bundle, "--out", out,
           "--budget", str(args.mutation_budget), "--jobs", str(args.mutation_jobs),
           "--reference", os.path.join(plan.run_dir, "testlogs"),
           # the fault catalogue (the score) and, where the bundle carries them, the conforming
           # variations (false alarms); a bundle made before them still gets its score
           "--catalogue", "both" if os.path.isfile(os.path.join(plan.bundle, "faults", "conforming.tsv"))
           else "faults"]
    say(f"mutation: the fault catalogue over this bundle, under the fault shim (budget "
        f"{args.mutation_budget:g} s, {args.mutation_jobs} jobs) into {out}")
    state["phase"] = "running the mutation score"
    note, rc = "", None
    token = uuid.uuid4().hex
    env = dict(os.environ, **{KILL_TOKEN_ENV: token})
    try:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "mutation.out"), "w") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
            state["mutation"] = (proc, token)
            try:
                # mutation.py stops its own runs 20 s after its budget; this is a backstop.
                rc = proc.wait(timeout=args.mutation_budget + 300)
            except subprocess.TimeoutExpired:
                stop_mutation(proc, token)
                note = "the mutation tool ran past its budget and was stopped"
            state.pop("mutation", None)
            kill_token_holders(token)  # a runner mutation.py lost track of
        if rc not in (None, 0, MUTATION_FALSE_ALARMS):
            with open(os.path.join(out, "mutation.out"), errors="replace") as f:
                tail = [l.strip() for l in f if l.strip()][-1:] or [""]
            note = f"the mutation tool exited {rc}: {tail[0][:300]}"
    except OSError as e:
        note = f"the mutation tool could not run: {e}"
    mut = {"status": "not run", "line": "not run", "json": os.path.relpath(doc_path, plan.run_dir)}
    try:
        if not note or os.path.exists(doc_path):
            with open(doc_path) as f:
                doc = json.load(f)
            s = doc["score"]
            mut.update(status="partial" if s["NOT_RUN"] else "done",
                       score_percent=s["percent"], faults=s["total"], faults_run=s["run"],
                       killed=s["KILLED"], handled=s["HANDLED"], survived=s["SURVIVED"],
                       errors=s["ERROR"], not_run=s["NOT_RUN"],
                       seconds=doc.get("config", {}).get("seconds"),
                       survivors=[f["name"] for f in doc.get("faults", []) if f["verdict"] == "SURVIVED"])
            mut["line"] = s["line"]  # "caught K of N ..." or "partial: K of 72 faults run; ..."
            # A conforming variation that fails a case is a defect of the suite: shown beside
            # the score, never mixed into it.
            fa = doc.get("false_alarms") or {}
            if fa.get("variations"):
                mut.update(false_alarms=fa.get("count"), false_alarm_line=fa.get("line"))
                mut["line"] += f"; {fa['line']}"
    except (OSError, ValueError, KeyError, TypeError) as e:
        note = note or f"no usable mutation.json ({e})"
    if note:
        mut["note"] = note
    info["mutation"] = mut
    SUMMARY["mutation"] = mut
    say(f"mutation score: {mut['line']}" + (f" (note: {note})" if note else ""))
    state["phase"] = "writing the mutation score"
    try:
        model.write_results(os.path.join(plan.run_dir, "results.json"), run, info, comp)
        write_report(plan, run, comp, info)
    except (OSError, ValueError) as e:
        say(f"warning: the mutation score is in {out} but the report was not updated ({e})")


def _kill_children():
    """Kills the process groups of our own child processes (the runner starts each test binary
    in a session of its own, so a terminal's Ctrl-C does not reach it)."""
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == me:
                os.killpg(int(pid), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass


def _on_signal(signum, frame):
    if INTERRUPT["by"]:
        return  # finishing after the first signal: this one changes nothing
    raise interrupted(signal.Signals(signum).name)


def finish_interrupted(plan, info, state):
    """After a signal at any moment once the run folder exists: stops whatever runs, then writes
    results.json with verdict INTERRUPTED (the finished cases, and the verdict reached if there
    was one) before anything else, and brings index.html in line when there is one. Further
    signals are ignored meanwhile (_on_signal). Returns exit 7."""
    by, phase = INTERRUPT["by"] or "a signal", state.get("phase", "run")
    if "mutation" in state:
        stop_mutation(*state.pop("mutation"))
    _kill_children()
    run, comp = state.get("run"), state.get("comp")
    testlogs = os.path.join(plan.run_dir, "testlogs")
    if run is None:
        try:
            run = load_run(plan, testlogs) if os.path.isdir(testlogs) else model.Run(plan.fingerprint)
        except Exception as e:  # noqa: BLE001 -- whatever the tree holds, the folder is marked
            say(f"the finished cases could not be read ({type(e).__name__}: {e})")
            run = model.Run(plan.fingerprint)
    if comp is not None and "verdict" in info and info["verdict"] != "INTERRUPTED":
        info["verdict_reached"] = info["verdict"]
    info.update(verdict=cmp.VERDICTS[cmp.EXIT_INTERRUPTED][0], exit_code=cmp.EXIT_INTERRUPTED,
                interrupted_by=by, interrupted_during=phase)
    try:
        model.write_results(os.path.join(plan.run_dir, "results.json"), run, info, comp)
        say(f"interrupted by {by} while {phase}: {len(run.cases)} finished case(s) kept in "
            f"{plan.run_dir} (results.json says INTERRUPTED)")
        if comp is not None and os.path.exists(os.path.join(plan.run_dir, "index.html")):
            comp.exit_code = cmp.EXIT_INTERRUPTED
            write_report(plan, run, comp, info)
    except (OSError, ValueError) as w:
        say(f"interrupted by {by}; could not write the partial results: {w}")
    say(f"verdict: INTERRUPTED (exit {cmp.EXIT_INTERRUPTED})")
    return cmp.EXIT_INTERRUPTED


def main(argv=None, restore_signals=True):
    """qualify; returns the exit code. restore_signals=False (the command line): once qualify is
    done the signals are ignored until the process exits, so a second signal arriving after the
    run folder was marked cannot kill the process with 128+N instead of 7."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundle", help="prebuilt bundle (default: build one into build/bundle)")
    p.add_argument("--archs", help="--//tools:cuda_archs for the build, e.g. sm_90")
    p.add_argument("--tier", default="full", choices=sorted(TIERS))
    p.add_argument("--out", default=os.path.join(ROOT, "runs"),
                   help="where run directories go (default: runs/ of the checkout)")
    p.add_argument("--expectations", default=os.path.join(ROOT, "expectations"))
    p.add_argument("--baseline", default="auto",
                   help="auto (the run of this SKU stored last in --out, by when it was stored, "
                        "never by its clock; INTERRUPTED runs passed over; else baselines/<sku>), "
                        "none, or a run dir/results.json (every field's type checked first)")
    p.add_argument("--history", help="SQLite file or postgresql:// URL (default OUT/history.sqlite)")
    p.add_argument("--no-history", action="store_true")
    p.add_argument("--retries", type=int, default=2, help="re-runs of failed cases (default 2)")
    p.add_argument("--time-scale", type=float, default=1.0)
    p.add_argument("--jobs", type=int, default=3,
                   help="test binaries run at once (default 3: on one H200 the full tier took "
                   "28-31 s at 3, about 1 s more at 4 and 6, since the driver creates one "
                   "context at a time); targets tagged exclusive run alone")
    p.add_argument("--seed", type=int, default=None,
                   help="run seed for every binary (PAGELOCK_SEED; default: a fresh one, recorded)")
    p.add_argument("--shuffle", action="store_true")
    p.add_argument("--label", default="", help="free text shown in the report (e.g. the change under test)")
    p.add_argument("--allow-no-gpu", action="store_true",
                   help="run even without a usable GPU (harness self-tests; never qualifies against a GPU baseline)")
    p.add_argument("--write-baseline", action="store_true",
                   help="also write the results as baselines/<sku>/results.json (regenerating the baseline)")
    p.add_argument("--mutation", action="store_true",
                   help="after the verdict, run the mutation score of the same bundle "
                        "(tools/mutation) into <run dir>/mutation/; never changes the verdict")
    p.add_argument("--mutation-budget", type=float, default=300,
                   help="seconds for --mutation (default 300; the faults not reached are NOT_RUN)")
    p.add_argument("--mutation-jobs", type=int, default=12,
                   help="test binaries at once under --mutation (default 12)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object on stdout (exit_code, verdict, run_dir, report, outputs, "
                   "counts); the progress and the human lines go to stderr")
    # tools/qualify's first step: check the arguments (and the GPU, when it would build), then
    # exit; it installs and builds only after this says 0.
    p.add_argument("--preflight", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    HUMAN.update(stream=sys.stderr if args.json else None, json=args.json)
    SUMMARY.clear()
    INTERRUPT["by"] = None
    old = {s: signal.signal(s, _on_signal) for s in SIGNALS}
    try:
        code = preflight_only(args) if args.preflight else _qualify(args, argv)
    except Stop as e:
        say(str(e))
        code = e.code
        SUMMARY["message"] = SUMMARY["error"] = str(e)  # --json: the reason, not only the code
    except Interrupted as e:
        _kill_children()
        SUMMARY["error"] = f"interrupted by {e}"
        say(f"interrupted by {e}; verdict: INTERRUPTED (exit {cmp.EXIT_INTERRUPTED})")
        code = cmp.EXIT_INTERRUPTED
    finally:
        if restore_signals:
            for s, h in old.items():
                signal.signal(s, h)
        else:
            # Python's own exit restores the default actions: ignore the signals outright.
            for s in SIGNALS:
                signal.signal(s, signal.SIG_IGN)
    if args.json and not (args.preflight and code == 0):  # the real run prints the object
        print(json.dumps(dict({"tool": "qualify", "exit_code": code, "verdict": cmp.VERDICTS[code][0]},
                              **SUMMARY)))
    HUMAN.update(stream=None, json=False)
    return code


def _qualify(args, argv):
    plan = make_plan(args)
    started = datetime.datetime.now(datetime.timezone.utc)
    run_key = new_run_dir(args.out, plan.fingerprint, plan.sku, plan.driver, started)
    plan.run_dir = os.path.join(args.out, run_key)
    info = {"run_key": run_key, "started_at": started.isoformat(timespec="seconds"), "sku": plan.sku,
            "tier": args.tier, "bundle": plan.manifest.get("info", {}), "baseline": plan.baseline_name,
            "expectations": plan.expectations.files, "retries": args.retries, "label": args.label,
            "seed": str(plan.seed), "skipped_by_expectations": plan.skipped,
            "command": " ".join(["tools/qualify"] + (argv if argv is not None else sys.argv[1:]))}
    state = {"phase": "creating the run folder"}
    try:
        try:
            os.makedirs(plan.run_dir)
        except OSError as e:
            raise Stop(cmp.EXIT_CONFIG, f"cannot create the run folder {plan.run_dir}: {e.strerror}")
        SUMMARY.update(run_dir=plan.run_dir)
        return _run_and_publish(plan, info, args, state)
    except Interrupted:
        if not os.path.isdir(plan.run_dir):
            raise
        return finish_interrupted(plan, info, state)


def _run_and_publish(plan, info, args, state):
    say(f"{plan.fingerprint.get('gpu0_name', 'no GPU')} ({plan.sku}), driver {plan.driver or 'none'}, "
        f"tier {args.tier}, seed {plan.seed}, run {info['run_key']}")
    testlogs = os.path.join(plan.run_dir, "testlogs")
    try:
        state["phase"] = "running the tests"
        _run_bundle(plan, testlogs, plan.targets, plan.filters, args.shuffle, args.time_scale, args.jobs)
        state["phase"] = "retrying failed cases"
        run = load_run(plan, testlogs)
        state["run"] = run
        retry_failures(plan, run, args)
    except OSError as e:
        raise Stop(cmp.EXIT_INFRA, f"infrastructure error while running: {e}")

    state["phase"] = "comparing"
    comp = cmp.compare(run, plan.expectations, plan.baseline, skipped=plan.skipped,
                       known_targets=[t["label"] for t in plan.manifest.get("targets", [])])
    why_not = nothing_passed(run, comp)
    state["comp"] = comp
    verdict, _ = comp.verdict
    info.update(verdict=verdict, exit_code=comp.exit_code)
    if why_not:
        info["verdict_reason"] = why_not
    try:
        page = publish(plan, run, comp, info, args, state)
    except (OSError, ValueError) as e:
        raise Stop(cmp.EXIT_INFRA, f"infrastructure error: cannot write the run folder {plan.run_dir} "
                                   f"({e}); the verdict would have been {verdict}")
    print(model.format_counts(run.counts()), file=HUMAN["stream"] or sys.stdout)
    SUMMARY.update(run_dir=plan.run_dir, report=page, counts={k: v for k, v in run.counts().items() if v},
                   comparison={k: v for k, v in comp.summary.items() if v},
                   outputs={n: os.path.join(plan.run_dir, n) for n in
                            (ciout.JUNIT_NAME, ciout.RESULTS_CSV, ciout.FAILURES_CSV, EXPECTATIONS_UPDATE,
                             "results.json")})
    if any(comp.summary.values()):
        say("against expectations and baseline: " +
            ", ".join(f"{k}={v}" for k, v in sorted(comp.summary.items()) if v))
    for key, st, why in comp.machine:
        say(f"{st} {key}: {why}")
    for e in comp.stale:
        say(f"stale expectation {e.source}: {e.kind} {e.pattern}")
    if why_not:
        say(why_not)
    for line in unexpected_lines(run, comp, plan.run_dir):
        say(line)
    if args.mutation:
        run_mutation(plan, run, comp, info, args, state)
    say(f"report: {page}")
    say(f"verdict: {verdict} (exit {comp.exit_code})")
    return comp.exit_code


if __name__ == "__main__":
    sys.exit(main(restore_signals=False))
