#!/usr/bin/env python3
"""pagelock qualify: the nightly driver qualification of the local GPUs.

Builds the bundle (or takes one), checks that a GPU is usable, runs the selected tier with one
run seed for every binary, retries failed cases with the same seed and filter, compares the
results with the expectations for this GPU SKU and driver and with a baseline run (coverage
included), writes a run directory (results.json, index.html, junit.xml, results.csv,
failures.csv, expectations-update.txt, testlogs/), stores
the run in the history database, prints a verdict and exits with its code.

  plan (every input checked, nothing written) -> run -> retry -> compare -> publish

Exit codes (the one table; README's is a copy, qualify_test checks it against reports/compare.py):
  0  QUALIFIED                   every case passed or matched its expectation; no coverage lost
  1  INFRASTRUCTURE ERROR        no usable GPU, a build or bundle binary that could not run, a
                                 status the harness does not know, a disk that filled up
  2  BAD CONFIGURATION           bad arguments, bundle, expectations, baseline, history or --out
                                 (nothing was run, no run folder was created)
  3  REGRESSIONS                 some case failed that no expectation covers
  4  NOTHING RAN                 no test binary matches the tier, or every case was skipped
  5  EXPECTATIONS NEED UPDATING  unexpected passes, new flakes or stale entries; nothing failed
  6  COVERAGE LOST               cases exercised in the baseline did not run (NOT_SUPPORTED,
                                 SKIP, MISSING, DROPPED) or the machine lost GPUs, SKU or a
                                 capability against the baseline, and no expectation names it
  7  INTERRUPTED                 SIGINT/SIGTERM: the running test was stopped; finished cases
                                 are kept in a run folder marked INTERRUPTED

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
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from reports import ciout  # noqa: E402
from reports import compare as cmp  # noqa: E402
from reports import expectations as expect  # noqa: E402
from reports import history  # noqa: E402
from reports import htmlreport  # noqa: E402
from reports import model  # noqa: E402
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
    """SIGTERM or SIGINT arrived."""


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
        raise Interrupted(res.message or "a signal")
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


def load_baseline(spec, out, sku, db, run_key):
    """Returns (Run or None, description). Raises Stop(EXIT_CONFIG) on a bad baseline."""
    if spec == "none":
        return None, "none"
    path = spec
    if spec == "auto":
        key = history.latest_run_key(db, sku, run_key) if db else None
        path = os.path.join(out, key) if key else os.path.join(ROOT, "baselines", sku)
    if os.path.isdir(path):
        path = os.path.join(path, "results.json")
    if not os.path.exists(path):
        if spec == "auto":
            return None, f"none (no earlier run for {sku} and no {os.path.relpath(path, ROOT)})"
        raise Stop(cmp.EXIT_CONFIG, f"bad baseline {spec}: no results.json at {path}")
    try:
        run, _, _ = model.read_results(path)
    except model.ResultsError as e:
        raise Stop(cmp.EXIT_CONFIG, f"bad baseline: {e}")
    return run, os.path.abspath(path)


def open_history(args):
    if args.no_history:
        return None
    path = args.history or os.path.join(args.out, "history.sqlite")
    try:
        return history.connect(path)
    except (sqlite3.Error, OSError) as e:
        raise Stop(cmp.EXIT_CONFIG, f"history {path} is unusable ({e}); repair or move it, or "
                                    "run with --history OTHER.sqlite or --no-history")


def new_run_dir(out, fp, sku, driver, started):
    host = re.sub(r"[^A-Za-z0-9.-]", "-", fp.get("host", "host"))
    run_key = f"{started:%Y%m%d-%H%M%S}_{host}_{sku}_{driver or 'nodriver'}"
    base_key, n = run_key, 1
    while os.path.exists(os.path.join(out, run_key)):  # two runs in one second
        n += 1
        run_key = f"{base_key}-{n}"
    return run_key


def make_plan(args):
    if args.retries < 0 or not math.isfinite(args.time_scale) or args.time_scale <= 0:
        raise Stop(cmp.EXIT_CONFIG, "--retries must be >= 0 and --time-scale a number > 0")
    if args.mutation and (not args.mutation_budget > 0 or args.mutation_jobs < 1):
        raise Stop(cmp.EXIT_CONFIG, "--mutation-budget and --mutation-jobs must be positive")
    if not 1 <= args.jobs <= runner.MAX_JOBS:
        raise Stop(cmp.EXIT_CONFIG, f"--jobs must be from 1 to {runner.MAX_JOBS}")
    if args.seed is not None and not 0 <= args.seed < 2 ** 64:
        raise Stop(cmp.EXIT_CONFIG, "--seed must be between 0 and 2^64-1")
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
                                   f"({fp.get('device_status')}); nothing was run")
    sku = expect.sku_of(fp.get("gpu0_name", "none"))
    driver = fp.get("nvidia_driver", "")
    try:
        exps = expect.load(args.expectations, sku)
    except expect.ExpectationError as e:
        raise Stop(cmp.EXIT_CONFIG, f"bad expectations: {e}")
    db = open_history(args)
    baseline, baseline_name = load_baseline(args.baseline, args.out, sku, db, "")
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

def publish(plan, run, comp, info, args):
    """Writes results.json, failures.csv, the history row and index.html; returns the report
    path. A write that fails (full disk) raises OSError after what was written is complete."""
    run_dir = plan.run_dir
    info["outputs"] = {"JUnit (final verdict per case)": ciout.JUNIT_NAME,
                       "deqp-runner results / failures": f"{ciout.RESULTS_CSV}, {ciout.FAILURES_CSV}",
                       "suggested expectation entries": EXPECTATIONS_UPDATE}
    model.write_results(os.path.join(run_dir, "results.json"), run, info, comp)
    ciout.write(run_dir, run, comp)
    with open(os.path.join(run_dir, EXPECTATIONS_UPDATE), "w") as f:
        f.write(cmp.failures_csv(run, comp))
    if plan.db:
        try:
            # Everything the fleet report shows (label, tier, run folder, its report), as an import
            # of this run folder would store it.
            history.store(plan.db, info["run_key"], info["started_at"], run, comp, plan.sku,
                          info["bundle"].get("commit", ""), comp.exit_code, info["verdict"],
                          label=info.get("label") or None, tier=info.get("tier"),
                          run_dir=os.path.abspath(run_dir),
                          report=os.path.abspath(os.path.join(run_dir, "index.html")))
        except (sqlite3.Error, ValueError, TypeError) as e:
            say(f"warning: the history was not updated ({e}); results.json has the run")
    page = write_report(plan, run, comp, info)
    if args.write_baseline and comp.exit_code != cmp.EXIT_QUALIFIED:
        say(f"baseline NOT written: the verdict is {info['verdict']}, a baseline must qualify")
    elif args.write_baseline:
        dest = os.path.join(ROOT, "baselines", plan.sku)
        os.makedirs(dest, exist_ok=True)
        model.write_results(os.path.join(dest, "results.json"), run, info, comp)
        say(f"baseline written: {os.path.join(dest, 'results.json')} (commit it)")
    return page


def write_report(plan, run, comp, info):
    """(Re)writes index.html from the run, its comparison and the history's trends."""
    trends = {}
    if plan.db:
        try:
            for name in history.metric_names(plan.db, plan.sku):
                trends[name] = history.trend(plan.db, name, plan.sku)
        except (sqlite3.Error, ValueError, TypeError) as e:
            say(f"warning: no trends from the history ({e})")
    html = htmlreport.render_qualification(run, info, comp, plan.baseline, trends,
                                           mutation=htmlreport.load_mutation(plan.run_dir))
    page = os.path.join(plan.run_dir, "index.html")
    with open(page, "w", encoding="utf-8") as f:
        f.write(html)
    return page


# ---------------------------------------------------------------------------------------------
# --mutation: the mutation score of the same bundle (tools/mutation), after the verdict is out.

MUTATION_TOOL = os.path.join(ROOT, "tools", "mutation", "mutation.py")


def run_mutation(plan, run, comp, info, args):
    """Runs tools/mutation over the bundle into <run dir>/mutation/, then adds its score to
    results.json, the --json summary and the report. Whatever goes wrong here is a note: the
    verdict, already written, never changes."""
    out = os.path.join(plan.run_dir, "mutation")
    doc_path = os.path.join(out, "mutation.json")
    cmd = [sys.executable, MUTATION_TOOL, plan.bundle, "--out", out,
           "--budget", str(args.mutation_budget), "--jobs", str(args.mutation_jobs),
           "--reference", os.path.join(plan.run_dir, "testlogs")]
    say(f"mutation: the fault catalogue over this bundle, under the fault shim (budget "
        f"{args.mutation_budget:g} s, {args.mutation_jobs} jobs) into {out}")
    note, rc = "", None
    try:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "mutation.out"), "w") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
            try:
                # mutation.py stops its own runs 20 s after its budget; this is a backstop.
                rc = proc.wait(timeout=args.mutation_budget + 300)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                note = "the mutation tool ran past its budget and was stopped"
            except Interrupted:
                proc.terminate()
                proc.wait()
                note = "interrupted while the mutation tool ran"
        if rc not in (None, 0):
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
    except (OSError, ValueError, KeyError, TypeError) as e:
        note = note or f"no usable mutation.json ({e})"
    if note:
        mut["note"] = note
    info["mutation"] = mut
    SUMMARY["mutation"] = mut
    say(f"mutation score: {mut['line']}" + (f" (note: {note})" if note else ""))
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
    raise Interrupted(signal.Signals(signum).name)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundle", help="prebuilt bundle (default: build one into build/bundle)")
    p.add_argument("--archs", help="--//tools:cuda_archs for the build, e.g. sm_90")
    p.add_argument("--tier", default="full", choices=sorted(TIERS))
    p.add_argument("--out", default=os.path.join(ROOT, "runs"), help="where run directories go")
    p.add_argument("--expectations", default=os.path.join(ROOT, "expectations"))
    p.add_argument("--baseline", default="auto",
                   help="auto (last run of this SKU, else baselines/<sku>), none, or a run dir/results.json")
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
    args = p.parse_args(argv)
    HUMAN.update(stream=sys.stderr if args.json else None, json=args.json)
    SUMMARY.clear()
    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        code = _qualify(args, argv)
    except Stop as e:
        say(str(e))
        code = e.code
    except Interrupted as e:
        _kill_children()
        say(f"interrupted by {e}; verdict: INTERRUPTED (exit {cmp.EXIT_INTERRUPTED})")
        code = cmp.EXIT_INTERRUPTED
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if args.json:
        print(json.dumps(dict({"tool": "qualify", "exit_code": code, "verdict": cmp.VERDICTS[code][0]},
                              **SUMMARY)))
    HUMAN.update(stream=None, json=False)
    return code


def _qualify(args, argv):
    plan = make_plan(args)
    started = datetime.datetime.now(datetime.timezone.utc)
    run_key = new_run_dir(args.out, plan.fingerprint, plan.sku, plan.driver, started)
    plan.run_dir = os.path.join(args.out, run_key)
    try:
        os.makedirs(plan.run_dir)
    except OSError as e:
        raise Stop(cmp.EXIT_CONFIG, f"cannot create the run folder {plan.run_dir}: {e.strerror}")
    SUMMARY.update(run_dir=plan.run_dir)
    info = {"run_key": run_key, "started_at": started.isoformat(timespec="seconds"), "sku": plan.sku,
            "tier": args.tier, "bundle": plan.manifest.get("info", {}), "baseline": plan.baseline_name,
            "expectations": plan.expectations.files, "retries": args.retries, "label": args.label,
            "seed": str(plan.seed), "skipped_by_expectations": plan.skipped,
            "command": " ".join(["tools/qualify"] + (argv if argv is not None else sys.argv[1:]))}
    say(f"{plan.fingerprint.get('gpu0_name', 'no GPU')} ({plan.sku}), driver {plan.driver or 'none'}, "
        f"tier {args.tier}, seed {plan.seed}, run {run_key}")
    testlogs = os.path.join(plan.run_dir, "testlogs")
    try:
        _run_bundle(plan, testlogs, plan.targets, plan.filters, args.shuffle, args.time_scale, args.jobs)
        run = load_run(plan, testlogs)
        retry_failures(plan, run, args)
    except Interrupted as e:
        _kill_children()
        info.update(verdict=cmp.VERDICTS[cmp.EXIT_INTERRUPTED][0], exit_code=cmp.EXIT_INTERRUPTED,
                    interrupted_by=str(e))
        try:
            partial = load_run(plan, testlogs) if os.path.isdir(testlogs) else model.Run(plan.fingerprint)
            model.write_results(os.path.join(plan.run_dir, "results.json"), partial, info)
            say(f"interrupted by {e}: {len(partial.cases)} finished case(s) kept in {plan.run_dir}")
        except (OSError, ValueError) as w:
            say(f"interrupted by {e}; could not write the partial results: {w}")
        say(f"verdict: INTERRUPTED (exit {cmp.EXIT_INTERRUPTED})")
        return cmp.EXIT_INTERRUPTED
    except OSError as e:
        raise Stop(cmp.EXIT_INFRA, f"infrastructure error while running: {e}")

    comp = cmp.compare(run, plan.expectations, plan.baseline, skipped=plan.skipped,
                       known_targets=[t["label"] for t in plan.manifest.get("targets", [])])
    verdict, _ = comp.verdict
    info.update(verdict=verdict, exit_code=comp.exit_code)
    try:
        page = publish(plan, run, comp, info, args)
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
    if args.mutation:
        run_mutation(plan, run, comp, info, args)
    say(f"report: {page}")
    say(f"verdict: {verdict} (exit {comp.exit_code})")
    return comp.exit_code


if __name__ == "__main__":
    sys.exit(main())
