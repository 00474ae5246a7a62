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
                                 status the harness does not know, a disk that filled up, a
                                 history server out of reach, a history that could not take
                                 the run (results.json keeps it and the verdict it would have had)
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
  8  FIRST NIGHT                 no baseline for this SKU yet (no earlier run, no baselines/<sku>/):
                                 nothing failed that a known deviation does not explain, coverage
                                 is not yet judged; the page says what was inherited, what is new,
                                 what did not run for host setup; adopt the run with
                                 tools/qualify --draft-expectations RUN_DIR

  tools/qualify [--bundle DIR] [--tier bat|full|stress] [--baseline auto|none|PATH] ...
  tools/qualify --bundle DIR --seed 4321 --write-baseline   # regenerate baselines/<sku>/results.json
  tools/qualify --draft-expectations RUN_DIR  # bring up a new SKU from its first night
  tools/qualify --repro CASE [--run RUN] [--bundle DIR] [--archive FILE]
      # a .tar.gz that reproduces one case of a run on any machine with an NVIDIA driver
  tools/qualify --bundle DIR --mutation [--mutation-budget 300] [--mutation-jobs 12]
      # then the mutation score of the same bundle into <run dir>/mutation/ (never changes the verdict)
"""

import argparse
import datetime
import json
import os
import signal
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# This file is the command; its steps live in tools/qualification/, one module each.

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.qualify"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import ciout
from reports import cliargs
from reports import compare as cmp
from reports import first_night as first_night_mod
from reports import history
from reports import model
from tools.qualification import common, draft, mutation_hook, preflight, publish, repro, running, signals
from tools.qualification import plan as plan_mod
from tools.qualification import verdict as verdict_mod
from tools.qualification.common import Interrupted, Stop, say
from tools.qualification.plan import TIERS
from tools.runner import leftovers


def build_parser(json_errors=False):
    # prog: the command the README runs (tools/qualify runs this file), not "qualify.py".
    # json_errors: --json was asked for, so a usage error is one JSON object on stdout too.
    p = cliargs.Parser(prog="tools/qualify", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter, tool="qualify",
                       json_errors=json_errors, extra={"verdict": cmp.VERDICTS[cmp.EXIT_CONFIG][0]})
    p.add_argument("--bundle", help="prebuilt bundle (default: build one into build/bundle)")
    p.add_argument("--archs", help="--//tools:cuda_archs for the build, e.g. sm_90")
    p.add_argument("--tier", default="full", choices=sorted(TIERS))
    p.add_argument("--out", default=os.path.join(common.ROOT, "runs"),
                   help="where run directories go (default: runs/ of the checkout)")
    p.add_argument("--expectations", default=os.path.join(common.ROOT, "expectations"))
    p.add_argument("--baseline", default="auto",
                   help="auto (the run of this SKU stored last in --out, by when it was stored, "
                        "never by its clock; INTERRUPTED runs passed over; else baselines/<sku>), "
                        "none, or a run dir/results.json (every field's type checked first)")
    p.add_argument("--history", help="SQLite file or postgresql:// URL (default OUT/history.sqlite)")
    p.add_argument("--no-history", action="store_true")
    p.add_argument("--retries", type=int, default=2, help="re-runs of failed cases (default 2)")
    p.add_argument("--time-scale", type=float, default=1.0)
    p.add_argument("--jobs", type=int, default=4,
                   help="test binaries run at once (default 4: on one H200 the full tier's runner "
                   "took 37.8-39.3 s at 4 and 40.2-40.9 s at 3 (2026-12-03); the driver's context "
                   "creation and pinning serialise across processes, so more gain little); "
                   "targets tagged exclusive run alone")
    p.add_argument("--seed", type=int, default=None,
                   help="run seed for every binary (PAGELOCK_SEED; default: a fresh one, recorded)")
    p.add_argument("--shuffle", action="store_true")
    p.add_argument("--label", default="", help="free text shown in the report (e.g. the change under test)")
    p.add_argument("--allow-no-gpu", action="store_true",
                   help="run the GPU suites even without a usable GPU (every case NotSupported: NOTHING RAN, exit 4; "
                        "never qualifies). The harness's own tests need no GPU: tools/test.sh")
    p.add_argument("--write-baseline", action="store_true",
                   help="also write the results as baselines/<sku>/results.json (regenerating the baseline)")
    p.add_argument("--mutation", action="store_true",
                   help="after the verdict, run the mutation score of the same bundle "
                        "(tools/mutation) into <run dir>/mutation/; never changes the verdict")
    p.add_argument("--mutation-budget", type=float, default=300,
                   help="seconds for --mutation (default 300; the faults not reached are NOT_RUN)")
    p.add_argument("--mutation-jobs", type=int, default=12,
                   help="test binaries at once under --mutation (default 12)")
    p.add_argument("--draft-expectations", metavar="RUN_DIR",
                   help="bring up a SKU from its first night's run folder: draft expectations/<sku>.txt, "
                        "baselines/<sku>/ and docs/platforms/<sku>.md (no GPU needed; existing files are "
                        "kept unless --force); docs/platforms/new-platform.md")
    p.add_argument("--repro", metavar="CASE",
                   help="write a reproducer a driver team can run of one case of a run (the id the page "
                        "shows): a .tar.gz with the case's binary, run.sh (its filter, run seed, repeat, "
                        "environment), the fingerprint, its kernel-log lines and a README; no GPU needed")
    p.add_argument("--run", metavar="RUN",
                   help="with --repro: the run folder, its results.json or a run key under --out "
                        "(default: the run stored last in --out that has the case)")
    p.add_argument("--archive", metavar="FILE",
                   help="with --repro: where the .tar.gz goes (default RUN/repro/<case>.tar.gz)")
    p.add_argument("--force", action="store_true",
                   help="with --draft-expectations: replace existing files; with --repro: take a bundle "
                        "of another build than the run's")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object on stdout (exit_code, verdict, run_dir, report, outputs, "
                   "counts); the progress and the human lines go to stderr")
    # tools/qualify's first step: check the arguments (and the GPU, when it would build), then
    # exit; it installs and builds only after this says 0.
    p.add_argument("--preflight", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv=None, restore_signals=True):
    """qualify; returns the exit code. restore_signals=False (the command line): once qualify is
    done the signals are ignored until the process exits, so a second signal arriving after the
    run folder was marked cannot kill the process with 128+N instead of 7."""
    cliargs.utf8_streams()
    args = build_parser(cliargs.wants_json(argv)).parse_args(argv)
    common.HUMAN.update(stream=sys.stderr if args.json else None, json=args.json)
    common.SUMMARY.clear()
    common.INTERRUPT["by"] = None
    old = {s: signal.signal(s, signals.on_signal) for s in signals.SIGNALS}
    try:
        if args.draft_expectations:
            code = draft.run_draft(args)
        elif args.repro:
            code = repro.run_repro(args)
        else:
            code = preflight.preflight_only(args) if args.preflight else _qualify(args, argv)
    except Stop as e:
        say(str(e))
        code = e.code
        common.SUMMARY["message"] = common.SUMMARY["error"] = str(e)  # --json: the reason, not only the code
    except Interrupted as e:
        signals.kill_children()
        common.SUMMARY["error"] = f"interrupted by {e}"
        say(f"interrupted by {e}; verdict: INTERRUPTED (exit {cmp.EXIT_INTERRUPTED})")
        code = cmp.EXIT_INTERRUPTED
    finally:
        if restore_signals:
            for s, h in old.items():
                signal.signal(s, h)
        else:
            # Python's own exit restores the default actions: ignore the signals outright.
            for s in signals.SIGNALS:
                signal.signal(s, signal.SIG_IGN)
    if args.json and not (args.preflight and code == 0):  # the real run prints the object
        print(json.dumps(dict({"tool": "qualify", "exit_code": code, "verdict": cmp.VERDICTS[code][0]},
                              **common.SUMMARY)))
    common.HUMAN.update(stream=None, json=False)
    return code


def _qualify(args, argv):
    t0 = time.monotonic()
    plan = plan_mod.make_plan(args)
    # What a qualify killed (SIGKILL) on this --out left running is ended now; this run keeps
    # the record the next one reads (tools/runner/leftovers.py).
    for pid, cmd in leftovers.end_leftovers(args.out):
        say(f"ended process {pid} that a killed run left in {args.out}: {cmd}")
    live = leftovers.LiveRecord(args.out)
    try:
        return _qualify_planned(args, argv, plan, t0)
    finally:
        live.close()


def _qualify_planned(args, argv, plan, t0):
    started = datetime.datetime.now(datetime.timezone.utc)
    run_key = plan_mod.new_run_dir(args.out, plan.fingerprint, plan.sku, plan.driver, started,
                                   stored=lambda key: plan.db is not None
                                   and history.stored_id(plan.db, key) is not None)
    plan.run_dir = os.path.join(args.out, run_key)
    info = {"run_key": run_key, "started_at": started.isoformat(timespec="seconds"), "sku": plan.sku,
            "tier": args.tier, "bundle": plan.manifest.get("info", {}), "baseline": plan.baseline_name,
            "expectations": plan.expectations.files, "retries": args.retries, "label": args.label,
            "skipped_by_expectations": plan.skipped,
            "command": common.command_line(argv if argv is not None else sys.argv[1:]),
            # Where the wall time went (seconds, rounded): the bound on the full tier is a
            # bound on all of it, and a slow phase should be visible without a profiler.
            "seconds": {"preparing": round(time.monotonic() - t0, 2)}}
    state = {"phase": "creating the run folder"}
    try:
        try:
            os.makedirs(plan.run_dir)
        except OSError as e:
            raise Stop(cmp.EXIT_CONFIG, f"cannot create the run folder {plan.run_dir}: {e.strerror}")
        common.SUMMARY.update(run_dir=plan.run_dir)
        return _run_and_publish(plan, info, args, state)
    except Interrupted:
        if not os.path.isdir(plan.run_dir):
            raise
        return signals.finish_interrupted(plan, info, state)


def _run_and_publish(plan, info, args, state):
    say(f"{plan.fingerprint.get('gpu0_name', 'no GPU')} ({plan.sku}), driver {plan.driver or 'none'}, "
        f"tier {args.tier}, seed {plan.seed}, run {info['run_key']}")
    testlogs = os.path.join(plan.run_dir, "testlogs")
    seconds = info["seconds"]
    try:
        state["phase"] = "running the tests"
        t = time.monotonic()
        running.run_bundle(plan, testlogs, plan.targets, plan.filters, args.shuffle, args.time_scale, args.jobs)
        seconds["running"] = round(time.monotonic() - t, 2)
        state["phase"] = "retrying failed cases"
        t = time.monotonic()
        run = running.load_run(plan, testlogs)
        state["run"] = run
        running.retry_failures(plan, run, args)
        seconds["retrying"] = round(time.monotonic() - t, 2)
    except OSError as e:
        raise Stop(cmp.EXIT_INFRA, f"infrastructure error while running: {common.os_error_words(e, plan.run_dir)}")
    t = time.monotonic()

    state["phase"] = "comparing"
    comp = cmp.compare(run, plan.expectations, plan.baseline, skipped=plan.skipped,
                       known_targets=[t["label"] for t in plan.manifest.get("targets", [])])
    verdict_mod.kernel_health(run, comp)  # the kernel's word outside any case
    why_not = verdict_mod.nothing_passed(run, comp)
    night = verdict_mod.first_night(plan, run, comp, info)
    state["comp"] = comp
    verdict, _ = comp.verdict
    info.update(verdict=verdict, exit_code=comp.exit_code)
    if why_not:
        info["verdict_reason"] = why_not
    seconds["comparing"] = round(time.monotonic() - t, 2)
    try:
        page = publish.publish(plan, run, comp, info, args, state)
    except (OSError, ValueError) as e:
        raise Stop(cmp.EXIT_INFRA, f"infrastructure error: cannot write the run folder {plan.run_dir} "
                                   f"({common.os_error_words(e, plan.run_dir)}); the verdict would have "
                                   f"been {verdict}")
    verdict = comp.verdict[0]  # the history may not have taken the run (publish.not_stored)
    seconds["writing"] = round(time.monotonic() - t - seconds["comparing"], 2)
    print(model.format_counts(run.counts()), file=common.HUMAN["stream"] or sys.stdout)
    common.SUMMARY.update(run_dir=plan.run_dir, report=page, counts={k: v for k, v in run.counts().items() if v},
                   comparison={k: v for k, v in comp.summary.items() if v}, seconds=seconds,
                   outputs={n: os.path.join(plan.run_dir, n) for n in
                            (ciout.JUNIT_NAME, ciout.RESULTS_CSV, ciout.FAILURES_CSV, publish.EXPECTATIONS_UPDATE,
                             "results.json")})
    if any(comp.summary.values()):
        say("against expectations and baseline: " +
            ", ".join(f"{k}={v}" for k, v in sorted(comp.summary.items()) if v))
    for key, st, why in comp.machine:
        say(f"{st} {key}: {why}")
    for e in comp.stale:
        say(f"stale expectation {e.source}: {e.kind} {e.pattern}")
    if night:
        for line in first_night_mod.terminal_lines(night):
            say(line)
    else:
        for e, why, _ in comp.elsewhere:
            say(cmp.elsewhere_line(e, why))
    if why_not:
        say(why_not)
    for line in verdict_mod.unexpected_lines(run, comp, plan.run_dir):
        say(line)
    if args.mutation:
        mutation_hook.run_mutation(plan, run, comp, info, args, state)
    say("time: " + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()))
    say(f"report: {page}")
    say(f"verdict: {verdict} (exit {comp.exit_code})")
    return comp.exit_code


if __name__ == "__main__":
    from reports import interpreter
    # Before any work, one interpreter: jinja2 for the report, psycopg2 too for a postgresql://
    # --history (a SQLite one needs nothing more).
    _args = interpreter.quietly(lambda: build_parser().parse_args())
    interpreter.reexec_if_missing(
        ["jinja2"] + interpreter.history_modules(_args and not _args.no_history and _args.history), __file__, ROOT)
    sys.exit(main(restore_signals=False))
