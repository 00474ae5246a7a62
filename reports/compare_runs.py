#!/usr/bin/env python3
"""Puts two or more runs side by side, one column per run (piglit's summary is the model):
for example two drivers on one machine, or one driver on two machines.

  reports/compare_runs.py RUN [RUN ...] [--html compare.html [--changes-only]] [--json]

RUN is a qualify run directory, a results.json, or a testlogs tree; a run directory without
results.json (a killed run) is read from its testlogs/. Prints how many cases differ and each
of them with its status in every run (at most 50 lines; --html and --json have them all).
Exit codes (the meanings the runner, report.py and qualify share):
  0  every case has the same status in every run (the page written, with --html)
  1  infrastructure: the page could not be rendered (no Python here imports jinja2)
  2  bad input: fewer than two runs, an unreadable or malformed run, an --html file that cannot
     be written
  3  some case differs between the runs (the page written, with --html)
  4  nothing to compare: a run holds no test results (an empty folder, a run killed before its
     first case); nothing is written
--json prints {"tool", "exit_code", "runs", "cases", "differing": [{"id", "statuses"}]} on stdout
(the lines go to stderr); on an error {"tool", "exit_code", "error"} (reports/cliargs.py).
The page is rendered by Jinja2 (reports/pages.py); started under a python3 without jinja2, the
command re-executes itself once under one that has it (reports/interpreter.py).
"""

import argparse
import json
import os
import sys

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.compare_runs"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import cliargs
from reports import interpreter
from reports import model
from reports import pages
from reports import testlogs


def load_any(path):
    """Returns (name, Run, info)."""
    if os.path.isdir(path) and os.path.exists(os.path.join(path, "results.json")):
        path = os.path.join(path, "results.json")
    if os.path.isfile(path):
        run, info, _ = model.read_results(path)
        return info.get("run_key") or os.path.basename(os.path.dirname(os.path.abspath(path))), run, info
    if os.path.isdir(path):
        return os.path.basename(os.path.abspath(path)), testlogs.load_testlogs(run_testlogs(path)), {}
    raise FileNotFoundError(f"{path}: not a run directory, results.json or testlogs tree")


def run_testlogs(path):
    """A run folder killed before its results.json holds only testlogs/: that is the tree to
    read (read whole, every id began with testlogs/ and every case differed)."""
    inner = os.path.join(path, "testlogs")
    if os.path.isdir(inner) and not os.path.islink(inner):
        print(f"compare_runs: {path}: no results.json; reading its testlogs/", file=sys.stderr)
        return inner
    return path


def differing_ids(runs):
    """The ids of the cases whose status differs between the runs (or that some run lacks)."""
    ids = sorted({c.id for _, run, _ in runs for c in run.cases})
    maps = [{c.id: c for c in run.cases} for _, run, _ in runs]
    return [i for i in ids if len({str(m[i].status) if i in m else "—" for m in maps}) > 1]


def render(runs, changes_only=False):
    """(the page, the ids of the cases whose status differs between the runs)."""
    ids = sorted({c.id for _, run, _ in runs for c in run.cases})
    maps = [{c.id: c for c in run.cases} for _, run, _ in runs]
    differing = differing_ids(runs)
    columns = []
    for name, run, info in runs:
        fp = run.fingerprint
        lines = [name, fp.get("gpu0_name", "?"), "driver " + fp.get("nvidia_driver", "?"),
                 "harness " + str(info.get("bundle", {}).get("commit", ""))[:12],
                 info.get("verdict", ""), model.format_counts(run.counts()).splitlines()[-1]]
        columns.append([x for x in lines if x])
    wanted = set(differing)
    rows = [{"id": i, "differs": i in wanted, "statuses": [str(m[i].status) if i in m else None for m in maps]}
            for i in ids]
    page = pages.render("compare.html.j2", page_title="pagelock: run comparison", css=pages.markup(pages.css()),
                        changes_only=changes_only, columns=columns, rows=rows, n_differing=len(differing))
    return page, differing


def main(argv=None):
    cliargs.utf8_streams()
    p = cliargs.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                       tool="compare_runs", json_errors=cliargs.wants_json(argv))
    p.add_argument("runs", nargs="+")
    p.add_argument("--html", help="write the page here (its folder is created)")
    p.add_argument("--changes-only", action="store_true", help="the page shows only the cases that differ")
    p.add_argument("--json", action="store_true", help="a machine-readable summary on stdout")
    args = p.parse_args(argv)

    def fail(code, message):
        print(f"compare_runs: {message}", file=sys.stderr)
        if args.json:
            print(json.dumps({"tool": "compare_runs", "exit_code": code, "error": message}))
        return code

    if len(args.runs) < 2:
        return fail(2, "give at least two runs")
    try:
        runs = [load_any(r) for r in args.runs]
    except (OSError, ValueError, model.ResultsError) as e:
        return fail(2, str(e))
    empty = [path for path, (_, run, _) in zip(args.runs, runs) if not run.cases]
    if empty:  # two dead nights are not "identical": report.py's NOTHING RAN
        return fail(4, f"no test results in {', '.join(empty)}: nothing to compare, nothing written")
    page, differing = None, differing_ids(runs)
    if args.html:
        try:
            page, differing = render(runs, args.changes_only)
        except pages.MissingDependency as e:
            return fail(1, str(e))
        try:
            os.makedirs(os.path.dirname(os.path.abspath(args.html)), exist_ok=True)
            with open(args.html, "w", encoding="utf-8") as f:
                f.write(page)
        except OSError as e:
            return fail(2, f"cannot write {args.html}: {e}")
    code = 3 if differing else 0
    human = sys.stderr if args.json else sys.stdout
    for line in difference_lines(runs, differing):
        print(line, file=human)
    print(f"compare_runs: {len(differing)} case(s) differ" + (f"; wrote {args.html}" if args.html else ""),
          file=human)
    if args.json:
        maps = [run.by_id() for _, run, _ in runs]
        print(json.dumps({"tool": "compare_runs", "exit_code": code, "runs": [n for n, _, _ in runs],
                          "cases": len({i for m in maps for i in m}),
                          "differing": [{"id": i, "statuses": [str(m[i].status) if i in m else None
                                                               for m in maps]} for i in differing]}))
    return code


LINES_PRINTED = 50


def difference_lines(runs, differing, limit=LINES_PRINTED):
    """Each case that differs, with its status in every run ('-' where it did not run), at most
    `limit` of them: the terminal's answer to "which ones?"."""
    maps = [run.by_id() for _, run, _ in runs]
    out = [f"  {i}: " + " | ".join(str(m[i].status) if i in m else "-" for m in maps)
           for i in differing[:limit]]
    if len(differing) > limit:
        out.append(f"  ... and {len(differing) - limit} more (--html and --json list every one)")
    return out


if __name__ == "__main__":
    interpreter.reexec_if_missing("jinja2", __file__, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
