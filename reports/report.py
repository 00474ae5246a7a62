#!/usr/bin/env python3
"""Summarises a testlogs tree (Bazel's bazel-testlogs or a bundle run) and writes a
self-contained HTML report and the results as JSON.

  reports/report.py TESTLOGS [--html FILE] [--json FILE] [--title TEXT]

Prints counts by status and ends with the line 'N passed, N failed, N skipped'.
Exit codes: 0 report written and every case clean (PASS, WARN, NOT_SUPPORTED, SKIP);
3 report written and some case FAIL/CRASH/TIMEOUT/INFRA_ERROR/MISSING or a status the model
does not know (only with --strict); 2 bad input (no such folder, no results in it, an output
file that cannot be written); nothing is written before the input has been read.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from reports import htmlreport as html_report  # noqa: E402
from reports import model  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("testlogs", help="testlogs tree, or a Bazel build event JSON file (--build_event_json_file)")
    p.add_argument("--html", help="write the HTML report here")
    p.add_argument("--json", help="write results.json here")
    p.add_argument("--title", default="pagelock report")
    p.add_argument("--strict", action="store_true", help="exit 3 when some case did not pass")
    args = p.parse_args(argv)
    try:
        run = (model.load_testlogs(args.testlogs) if os.path.isdir(args.testlogs)
               else model.load_bep(args.testlogs))
    except (OSError, ValueError) as e:
        print(f"report: {e}", file=sys.stderr)
        return 2
    if not run.cases:
        print(f"report: no test results under {args.testlogs}", file=sys.stderr)
        return 2
    for problem in run.problems:
        print(f"report: warning: {problem}", file=sys.stderr)
    try:
        if args.json:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            model.write_results(args.json, run)
        if args.html:
            os.makedirs(os.path.dirname(os.path.abspath(args.html)), exist_ok=True)
            with open(args.html, "w", encoding="utf-8") as f:
                f.write(html_report.render(run, title=args.title))
            print(f"report: wrote {args.html}")
    except OSError as e:
        print(f"report: cannot write the report: {e}", file=sys.stderr)
        return 2
    counts = run.counts()
    print(model.format_counts(counts))
    if args.strict and not model.is_clean(counts):
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
