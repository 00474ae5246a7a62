"""The command line: flags checked and turned into a RunConfig, the run, its summary printed
(or one JSON object on stdout with --json), and the exit code."""

import argparse
import os
import sys

from reports import cliargs
from tools.runner import session, summary
from tools.runner.cases import max_cases_per_binary
from tools.runner.config import (EXIT_BAD_INPUT, EXIT_INTERRUPTED, KILL_GRACE_S, KMSG,
                                 MAX_CASES_ENV, MAX_CASES_PER_BINARY, MAX_JOBS, TIME_SCALE_MAX,
                                 TIME_SCALE_MIN, RunConfig, UsageError, check_time_scale)

# The bundle this runner is part of: <bundle>/tools/runner/.
DEFAULT_BUNDLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def parser(description, json_errors=False):
    # json_errors: --json was asked for, so a usage error is one JSON object on stdout too.
    p = cliargs.Parser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter,
                       tool="runner", json_errors=json_errors)
    p.add_argument("--bundle", default=DEFAULT_BUNDLE,
                   help="bundle folder (default: the bundle this runner is part of)")
    p.add_argument("--out", required=True, help="testlogs folder to write (new, empty, or an "
                   "earlier output of the runner, whose results are replaced)")
    p.add_argument("--tags", default="-stress,-selftest",
                   help="Bazel-style tag filter, e.g. 'gpu,-stress' (default: -stress,-selftest)")
    p.add_argument("--targets", default="", help="regex on target labels")
    p.add_argument("--gtest_filter", default="",
                   help="selects the cases of every binary (GoogleTest's syntax; the "
                   "environment's GTEST_FILTER is never used)")
    p.add_argument("--time-scale", type=float, default=1.0,
                   help="multiplies every time limit (also exported as PAGELOCK_TIME_SCALE); "
                   f"from {TIME_SCALE_MIN:g} to {TIME_SCALE_MAX:g}")
    p.add_argument("--max-restarts", type=int, default=5,
                   help="restarts of one binary after crashes or timeouts (default 5)")
    p.add_argument("--seed", type=int, default=None,
                   help="PAGELOCK_SEED for every binary (default: one drawn for the run)")
    p.add_argument("--shuffle", action="store_true", help="run cases in random order (gtest)")
    p.add_argument("--kernel-log", default=KMSG,
                   help="kernel log to follow for driver lines (NVRM, Xid, oom-kill, IOMMU) while "
                   f"each case runs (default {KMSG}; '' turns it off)")
    p.add_argument("--json", action="store_true",
                   help="print a JSON summary on stdout (status, exit_code, seed, out, counts, "
                   "targets); progress and messages go to stderr")
    p.add_argument("--jobs", type=int, default=1,
                   help="targets run at once (default 1); a target tagged `exclusive` runs alone, "
                   "and the exclusive ones run first")
    p.add_argument("--max-cases", type=int, default=None,
                   help="cases one binary may list; one that lists more is an INFRA_ERROR naming "
                   f"the count, and is not run (default ${MAX_CASES_ENV}, else "
                   f"{MAX_CASES_PER_BINARY})")
    p.add_argument("--kill-grace-s", type=float, default=KILL_GRACE_S,
                   help=f"seconds between SIGTERM and SIGKILL when a test is stopped "
                   f"(default {KILL_GRACE_S:.0f})")
    return p


def config_from_args(args):
    """The RunConfig the flags ask for. Raises UsageError for a value out of range."""
    why = check_time_scale(args.time_scale)
    if why or args.max_restarts < 0:
        raise UsageError(why or "--max-restarts must be >= 0")
    max_cases = max_cases_per_binary(args.max_cases)
    if not 1 <= args.jobs <= MAX_JOBS:
        raise UsageError(f"--jobs must be from 1 to {MAX_JOBS}")
    return RunConfig(bundle=args.bundle, out=args.out, tags=args.tags, target_regex=args.targets,
                     filters={"*": args.gtest_filter} if args.gtest_filter else {},
                     seed=args.seed, shuffle=args.shuffle, time_scale=args.time_scale,
                     max_restarts=args.max_restarts, kill_grace_s=max(0.0, args.kill_grace_s),
                     progress_stderr=args.json, kernel_log=args.kernel_log, jobs=args.jobs,
                     max_cases=max_cases)


def main(argv=None, description=None):
    cliargs.utf8_streams()
    try:
        args = parser(description, cliargs.wants_json(argv)).parse_args(argv)
    except SystemExit as e:
        return EXIT_BAD_INPUT if e.code else 0
    try:
        cfg = config_from_args(args)
    except UsageError as e:
        if args.json:
            print(cliargs.json_error("runner", str(e)))
        print(f"runner: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        r = session.run(cfg)
    except KeyboardInterrupt:  # a second Ctrl-C before the handlers were installed
        print("runner: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if r.status.says_why:
        print(f"runner: {r.message}", file=sys.stderr)
    if args.json:
        for text in summary.failure_lines(r.targets) + summary.kernel_lines(r):
            print(text, file=sys.stderr)  # stdout is the one JSON object
        print(summary.json_summary(r))
    elif r.targets:
        for text in summary.human_summary(r):
            print(text)
    return r.exit_code
