#!/usr/bin/env python3
"""Summarises a testlogs tree (Bazel's bazel-testlogs or a bundle run) and writes a
self-contained HTML report and the results as JSON.

  reports/report.py TESTLOGS [--html FILE] [--json FILE] [--junit FILE] [--csv-dir DIR] [--title TEXT]
                    [--mutation FILE]

--junit writes a JUnit XML with one <testcase> per case (a case that passed on a retry passes,
CRASH/TIMEOUT are <error>); --csv-dir writes deqp-runner style results.csv and failures.csv.

The HTML page is rendered by Jinja2 from reports/templates/. Started under a python3 that does
not import jinja2 (one that does not see Debian's python3-jinja2), the command re-executes itself
once, before any work, under the first of $PAGELOCK_PYTHON, /usr/bin/python3, python3 on PATH that
does (reports/interpreter.py); with none, it runs on and exits 1 (below). The mutation section comes from --mutation FILE, else from
mutation/mutation.json in the folder of --html or next to TESTLOGS (qualify --mutation writes it).

Prints counts by status and ends with the line 'N passed, N failed, N skipped'.
Exit codes (the meanings the runner, qualify and compare_runs.py share):
  0  report written, every case clean (PASS, WARN, NOT_SUPPORTED, SKIP)
  1  infrastructure: the HTML page could not be rendered (no Python here imports jinja2); the
     JSON, JUnit and CSV outputs asked for were written first
  2  bad input: no such folder or file, an output file that cannot be written
  3  report written, some case FAIL/CRASH/TIMEOUT/INFRA_ERROR/MISSING or a status the model does
     not know (--exit-zero: 0 instead, for scripts that only want the report)
  4  nothing ran: no test results in the folder
Nothing is written before the input has been read; the HTML page is written last. --json FILE writes results.json ('-' for
stdout: then the human lines go to stderr, and stdout carries one JSON object, also on an error:
{"tool": "report", "exit_code": N, "error": "the reason"}).
"""

import argparse
import json
import os
import sys

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.report"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import ciout
from reports import cliargs
from reports import htmlreport as html_report
from reports import interpreter
from reports import model
from reports import testlogs


def main(argv=None):
    cliargs.utf8_streams()
    return _main(argv)


def _fail(args_json, code, message):
    """Says why on stderr, and to a --json - reader in the JSON object; returns the exit code."""
    print(f"report: {message}", file=sys.stderr)
    if args_json == "-":
        print(json.dumps({"tool": "report", "exit_code": code, "error": message}))
    return code


def _main(argv=None):
    p = cliargs.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                       tool="report", json_errors=cliargs.wants_json(argv, "-"))
    p.add_argument("testlogs", help="testlogs tree, or a Bazel build event JSON file (--build_event_json_file)")
    p.add_argument("--html", help="write the HTML report here")
    p.add_argument("--json", help="write results.json here ('-': a summary and the run on stdout)")
    p.add_argument("--junit", help="write a JUnit XML of the final status per case here")
    p.add_argument("--csv-dir", help="write results.csv and failures.csv (deqp-runner style) here")
    p.add_argument("--title", default="pagelock report")
    p.add_argument("--mutation", help="mutation.json of tools/mutation/mutation.py for the mutation section "
                   "(default: mutation/mutation.json beside --html or TESTLOGS, when there is one)")
    p.add_argument("--strict", action="store_true", help="(the default now; kept for old scripts)")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when some case failed")
    args = p.parse_args(argv)
    try:
        run = (testlogs.load_testlogs(args.testlogs) if os.path.isdir(args.testlogs)
               else testlogs.load_bep(args.testlogs))
    except (OSError, ValueError) as e:
        return _fail(args.json, 2, str(e))
    if not run.cases:
        return _fail(args.json, 4, f"no test results under {args.testlogs}")
    mutation = None
    if args.mutation:
        if not os.path.isfile(args.mutation):
            return _fail(args.json, 2, f"--mutation {args.mutation}: no such file")
        mutation = html_report.read_mutation(args.mutation)
        if "error" in mutation:
            return _fail(args.json, 2, f"--mutation: {mutation['error']}")
    elif args.html:
        for folder in (os.path.dirname(os.path.abspath(args.html)),
                       os.path.dirname(os.path.abspath(args.testlogs.rstrip("/")))):
            mutation = html_report.load_mutation(folder)
            if mutation is not None:
                break
    code = 0 if args.exit_zero or model.is_clean(run.counts()) else 3
    human = sys.stderr if args.json == "-" else sys.stdout
    for problem in run.problems:
        print(f"report: warning: {problem}", file=sys.stderr)
    try:
        if args.json and args.json != "-":
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            model.write_results(args.json, run)
        if args.junit:
            os.makedirs(os.path.dirname(os.path.abspath(args.junit)), exist_ok=True)
            with open(args.junit, "w", encoding="utf-8") as f:
                f.write(ciout.junit_xml(run))
        if args.csv_dir:
            os.makedirs(args.csv_dir, exist_ok=True)
            for name, text in ((ciout.RESULTS_CSV, ciout.results_csv(run)),
                               (ciout.FAILURES_CSV, ciout.failures_csv(run))):
                with open(os.path.join(args.csv_dir, name), "w", encoding="utf-8") as f:
                    f.write(text)
        if args.html:  # last: without jinja2 anywhere, everything else is already written
            page = html_report.render(run, title=args.title, mutation=mutation)
            os.makedirs(os.path.dirname(os.path.abspath(args.html)), exist_ok=True)
            with open(args.html, "w", encoding="utf-8") as f:
                f.write(page)
            print(f"report: wrote {args.html}", file=human)
    except html_report.MissingDependency as e:
        return _fail(args.json, 1, f"{e}; the other outputs were written")
    except OSError as e:
        return _fail(args.json, 2, f"cannot write the report: {e}")
    print(model.format_counts(run.counts()), file=human)
    if args.json == "-":  # stdout carries the JSON alone; the human lines went to stderr
        print(json.dumps({"tool": "report", "exit_code": code,
                          "counts": {k: v for k, v in run.counts().items() if v}, "run": run.to_json()}))
    return code


if __name__ == "__main__":
    interpreter.reexec_if_missing("jinja2", __file__, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
