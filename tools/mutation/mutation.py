#!/usr/bin/env python3
"""pagelock mutation score: runs a bundle under the fault shim (tools/faults) once per injected
driver fault and says which faults the suite catches.

  mutation.py BUNDLE --out DIR [--faults NAME,...] [--jobs N] [--budget S] [--target-timeout S]
              [--select rules|all] [--sentinels N] [--control-runs 1|2] [--reference TESTLOGS]
              [--catalogue faults|conforming|both|PATH]

--catalogue faults (the default) runs the injected driver faults (catalogue.tsv) and scores
them; conforming runs the conforming variations (conforming.tsv: driver behaviours the CUDA
documentation allows but r580 does not show) and reports false alarms; both runs both in one
pass (one control). A variation runs only the binaries it reaches that name one of its rules or
sit in its family folder (phase 1; bandwidth targets never), all of them, never stopping early;
--select all runs it against every binary it reaches, bandwidth targets included. A variation's
row may scope it (conforming.tsv, tools/faults/README.md): targets (a regex: the only targets it
may run, whatever --select says), excluded ('Suite.Case: why; ...': cases its runs do not judge,
the ones the shim cannot make conform on the real device, listed under excluded_cases) and env
('NAME=value ...': its runs' environment, e.g. PAGELOCK_DEVIATIONS=none; such a run counts as
changed).

Every run is one test binary under the shim (libcuda.so.1 first in LD_LIBRARY_PATH), --jobs at
a time:
  control, control_b  each binary twice (--control-runs 2, the default; once with
               --control-runs 1 or --reference), in census mode (every entry wrapped, nothing
               changed, the entries each binary calls logged, the rules its cases name read).
               Cases that fail in a control, or differ between the controls (or from the
               --reference run of the same bundle, e.g. qualify's own), are unstable and never
               count as a catch; binaries whose control hangs, crashes or gives nothing are left
               out (listed in mutation.json).
  per fault    only binaries whose census shows a call to an entry the fault changes (a binary
               that never calls them cannot behave differently), in phases: 1. those with a case
               naming the fault's rule or in its family folder (suites/<family>); 2. the
               sentinels (a few cheap binaries that call the most catalogue entries per second);
               3. every other binary it reaches (the sweep). Cheapest first; once a run catches
               the fault (KILLED or HANDLED) its remaining runs are dropped, so a survivor is one
               that every binary it reaches let through, unless the budget ran out (then the
               note says which were not run). mutation.json lists for each fault every target,
               its phase, why it was chosen and whether it ran. --select all: every reached
               binary in phase 1. The time limit of a run is 3x the binary's control time + 10 s
               (at most --target-timeout): a case that runs past it counts as caught.
Targets: the runner's tags --tags (default: no stress, selftest, exclusive, manual or bandwidth
targets); the bandwidth targets and those tagged exclusive (timing-sensitive, or reading
host-wide counters) run alone, after the pool, for the faults that reach them.
Verdicts:
  KILLED    some case that did not fail in the control fails, crashes, times out or goes missing
  HANDLED   a capability fault (an attribute reported wrongly) turned cases NotSupported, with a
            reason, and broke none in the runs made; or a performance fault turned passing cases
            into WARN (the documented outcome of a performance deficit, P03)
  SURVIVED  nothing changed for the worse (NotSupported instead of a pass counts as survival for
            faults that are not capability faults: the suite masked the bug)
  ERROR     the shim did not load or did not know the fault; not counted in the score
  NOT_RUN   the --budget ran out first (no run started, or its run was stopped before anything
            was caught); not counted in the score
score = (KILLED + HANDLED) / (KILLED + HANDLED + SURVIVED).
Conforming variations (never in the score):
  FALSE_ALARM    a case that did not fail in the control fails, crashes, times out or goes
                 missing in a run where the variation changed an answer (the shim's "changed"
                 lines): a defect of the suite, not of the driver; every such case is listed
                 under false_alarms in mutation.json, with its status and message
  CONFORMS       it changed answers and nothing broke (NotSupported cases are listed)
  NOT_EXERCISED  it never changed an answer in the binaries it ran: it proves nothing
  ERROR, NOT_RUN as for faults; NOT_RUN also when a timing variation (its runs get twice the
                 usual time limit, or --target-timeout if larger) still ran past the tool's
                 limit (past_the_time_limit)

Writes DIR/mutation.json, DIR/mutation.html (a self-contained HTML section) and DIR/runs/<run>/
(runner.out, the shim's log; testlogs too with --keep-testlogs). The shim: --shim DIR, else BUNDLE/faults/, else built with g++ from
tools/faults next to this file. A named catalogue: BUNDLE/faults/<file>, else tools/faults/<file>
next to this tool. Survivor explanations: tools/faults/survivors.tsv (or the
bundle's copy).

Exit codes: 0 done (whatever the score) and no false alarm; 3 done, mutation.json and
mutation.html written, but some conforming variation raised a false alarm (a suite defect; a
false alarm is not a driver fault, so the score is unaffected); 1 the control run failed to run
under the shim (or the shim found no real driver);
2 bad usage (no bundle, unknown fault name, missing shim or catalogue);
7 interrupted by SIGINT, SIGTERM or SIGHUP: no run starts after the signal, every running
  runner gets SIGTERM (it stops its test binaries, which run in sessions of their own, and
  exits), and whatever is still alive after STOP_S (a runner, a binary under the shim) is
  killed; nothing is left running and no mutation.json is written (a second signal repeats the
  SIGTERM, which makes the runners SIGKILL their binaries).
"""

import argparse
import os
import re
import signal
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.mutation.mutation"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import cliargs
from tools.mutation import catalogue as cat
from tools.mutation import controls as control_runs
from tools.mutation import outputs, runs, schedule, selection, stopping
from tools.mutation.catalogue import UsageError, is_variation
from tools.mutation.false_alarms import variation_result
from tools.mutation.scoring import fault_result

DEFAULT_TAGS = "-stress,-selftest,-exclusive,-family_bandwidth,-manual"
BANDWIDTH_TAGS = "family_bandwidth,-stress,-selftest"
# Run alone after the pool: left out of it by DEFAULT_TAGS, yet full-tier cases with catches of
# their own (a score that never ran them would understate the suite).
ALONE_TAGS = "family_bandwidth,exclusive,-stress,-selftest,-manual"
GRACE_S = 20  # how long after --budget running runs may go on before they are stopped


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bundle", help="bundle folder (tools/bundle.py)")
    p.add_argument("--out", required=True, help="folder for mutation.json, mutation.html, runs/")
    p.add_argument("--faults", default="all", help="comma-separated fault names (default all)")
    p.add_argument("--jobs", type=int, default=10, help="runs at once (default 10)")
    p.add_argument("--tags", default=DEFAULT_TAGS, help=f"runner tags (default {DEFAULT_TAGS})")
    p.add_argument("--exclude", default="", help="regex: leave out targets whose label matches")
    p.add_argument("--no-bandwidth", action="store_true",
                   help="do not run bandwidth targets (alone, after the pool) at all; the "
                        "exclusive ones still run alone")
    p.add_argument("--target-timeout", type=float, default=45,
                   help="seconds one test binary may take in the control (default 45); under a "
                        "fault the limit is 3x its control time + 10 s, at most this")
    p.add_argument("--budget", type=float, default=300,
                   help="seconds after which no run starts; running ones are stopped "
                        f"{GRACE_S} s later and their faults are NOT_RUN unless caught (default 300)")
    p.add_argument("--select", choices=("rules", "all"), default="rules",
                   help="rules (default): each fault runs first the targets with a case naming "
                        "its rule or in its family, then the sentinels, then (while not caught "
                        "and within the budget) every other target it reaches; all: every "
                        "target it reaches at once")
    p.add_argument("--sentinels", type=int, default=3,
                   help="cheap, broad targets every fault also runs (default 3)")
    p.add_argument("--control-runs", type=int, choices=(1, 2), default=2,
                   help="control runs under the shim (default 2: the second finds unstable cases)")
    p.add_argument("--reference", metavar="TESTLOGS",
                   help="an earlier run of the same bundle (a testlogs folder, e.g. qualify's): "
                        "its cases stand in for the second control (implies --control-runs 1)")
    p.add_argument("--shim", help="folder holding the shim's libcuda.so.1")
    p.add_argument("--catalogue", default="faults",
                   help="faults (default: catalogue.tsv, the mutation score), conforming "
                        "(conforming.tsv, the false alarms), both, or a TSV file; named ones "
                        "come from BUNDLE/faults/, else tools/faults/")
    p.add_argument("--keep-testlogs", action="store_true",
                   help="keep every run's testlogs (default: only runner.out and fault.log stay)")
    return p.parse_args(argv)


def main(argv=None):
    """Runs the mutation score; SIGINT, SIGTERM and SIGHUP stop it (exit 7, nothing left)."""
    cliargs.utf8_streams()
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        handlers = {s: signal.signal(s, stopping.on_signal) for s in stopping.SIGNALS}
    stopping.STOPPING.clear()
    try:
        return _main(argv)
    except stopping.Interrupted as e:
        return stopping.stop_everything(str(e))
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)


def check_inputs(args):
    """Inputs of the run, every argument checked in the order of their messages; raises
    UsageError, OSError, ValueError or KeyError (exit 2)."""
    bundle = cat.check_bundle(args.bundle)
    if args.jobs < 1 or args.target_timeout <= 0 or args.budget <= 0:
        raise UsageError("--jobs, --target-timeout and --budget must be positive")
    manifest = cat.read_manifest(bundle)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    rows, catalogue_path = cat.load_catalogue(bundle, args.catalogue)
    rows = cat.pick_faults(rows, args.faults, bundle, args.catalogue, catalogue_path)
    if args.sentinels < 0:
        raise UsageError("--sentinels must be 0 or more")
    if args.reference and not os.path.isdir(args.reference):
        raise UsageError(f"--reference {args.reference}: no such folder")
    shim = cat.find_shim(bundle, args.shim, out)
    return cat.Inputs(bundle, manifest, out, rows, catalogue_path, shim)


def choose_targets(inputs, args):
    """The pool's targets (--tags) and those run alone (bandwidth and exclusive), less --exclude."""
    keep = (lambda t: not re.search(args.exclude, t["label"])) if args.exclude else (lambda t: True)
    inputs.pool_targets = [t for t in cat.select_targets(inputs.manifest, args.tags) if keep(t)]
    inputs.serial_targets = [
        t for t in cat.select_targets(inputs.manifest, ALONE_TAGS)
        if t not in inputs.pool_targets and keep(t)
        and not (args.no_bandwidth and "family_bandwidth" in t.get("tags", []))]


def _main(argv=None):
    args = parse_args(argv)
    t0 = time.monotonic()
    try:
        inputs = check_inputs(args)
    except (UsageError, OSError, ValueError, KeyError) as e:
        print(f"mutation: {e}", file=sys.stderr)
        return 2
    inputs.notes = cat.load_survivor_notes(inputs.bundle)
    if args.reference:
        args.control_runs = 1
        inputs.reference = runs.read_reference(args.reference)
    choose_targets(inputs, args)
    if not inputs.pool_targets:
        print(f"mutation: no target matches --tags={args.tags}", file=sys.stderr)
        return 2
    deadline = t0 + args.budget  # no run starts after this (less its expected length)
    # every run is stopped GRACE_S after it
    fault_runs = runs.Runs(inputs.bundle, inputs.shim, os.path.join(inputs.out, "runs"), deadline,
                           deadline + GRACE_S)
    all_targets = inputs.pool_targets + inputs.serial_targets
    print(f"mutation: {len(inputs.catalogue)} faults, {len(inputs.pool_targets)} targets "
          f"(+{len(inputs.serial_targets)} run alone), shim {inputs.shim}, jobs {args.jobs}, "
          f"select {args.select}", flush=True)
    try:
        controls = control_runs.run(fault_runs, inputs.pool_targets, inputs.serial_targets, args,
                                    inputs.reference, t0)
    except control_runs.ControlFailed as e:
        print(f"mutation: {e}", file=sys.stderr)
        return 1
    usable = [t["label"] for t in all_targets if t["label"] not in controls.unusable]
    plans, sentinels = selection.plans_for(inputs.catalogue, usable, controls, args.sentinels, args.select)
    by_fault = {f["name"]: f for f in inputs.catalogue}
    sched = schedule.Schedule(fault_runs, by_fault, {t["label"]: t for t in all_targets}, controls,
                              args.target_timeout)
    run_faults(sched, plans, {t["label"] for t in inputs.serial_targets},
               {t["label"] for t in inputs.serial_targets if "family_bandwidth" in t.get("tags", [])}, args)
    results, variations = [], []
    for f in inputs.catalogue:
        plan = plans[f["name"]]
        found = sched.runs_of(f["name"], [l for l, _, _ in plan])
        if is_variation(f):
            variations.append(variation_result(f, plan, found, sched))
        else:
            results.append(fault_result(f, plan, found, sched, inputs.notes))
    if not args.keep_testlogs:
        runs.drop_testlogs(fault_runs.runs_dir)
    doc = outputs.make_doc(args, inputs, controls, sched, sentinels, results, variations, t0)
    outputs.write(inputs.out, doc)
    return outputs.print_summary(doc, inputs.out)


def run_faults(sched, plans, serial, bandwidth, args):
    """The pool's runs, --jobs at a time, then the runs alone (bandwidth and exclusive targets),
    one at a time. Bandwidth targets judge speed and run alone: a variation meets them only
    with --select all, which keeps the conforming check quick; it meets the exclusive ones."""
    pool_items = [(name, l, ph) for name, plan in plans.items() for l, ph, _ in plan if l not in serial]
    sched.run(pool_items, args.jobs)
    serial_items = [(name, l, ph) for name, plan in plans.items() for l, ph, _ in plan if l in serial
                    and (l not in bandwidth or args.select == "all"
                         or not is_variation(sched.by_fault[name]))]
    sched.run(serial_items, 1)


if __name__ == "__main__":
    from reports import interpreter
    interpreter.reexec_if_missing("jinja2", __file__, REPO)  # mutation.html needs it
    sys.exit(main())
