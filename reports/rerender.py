#!/usr/bin/env python3
"""Re-renders run folders from their results.json with the current templates and writers, and
rewrites the absolute paths of the machine that wrote them into relative ones.

  python3 reports/rerender.py RUN_DIR [RUN_DIR ...]      # re-render these run folders
  python3 reports/rerender.py --examples examples/h200-qualification

A run folder's index.html, junit.xml, results.csv, failures.csv and expectations-update.txt
are rewritten when the folder already has them (nothing new is added). A results.json with a
comparison (qualify's) gives the qualification page; one without it (the bundle runner's) the
plain report. A page's metric trends came from the writing machine's history database and are
not re-created.

--examples DIR first rewrites, in every text file under DIR, each absolute path of the writing
machine (ABSOLUTE_PATHS below: the checkout, scratch folders, bundles, $OUT-style run folders)
into the relative form qualify would have written from a checkout (`expectations/...`,
`runs/...`, `BUNDLE/...`), then re-renders every run folder under DIR (and the stray
`*results.json` + `*report.html` pairs beside them). examples_test.py holds the tree to it.

Started under a python3 without jinja2, it re-executes itself once under one that has it
(reports/interpreter.py).

Exit codes: 0 done; 1 no Python here imports jinja2 (the pages cannot be rendered); 2 bad input
(no such folder, a results.json that cannot be read).
"""

import argparse
import os
import re
import sys
from types import SimpleNamespace

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.rerender"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import ciout
from reports import cliargs
from reports import compare as cmp
from reports import htmlreport
from reports import interpreter
from reports import model

# (pattern, replacement), in order: the checkout first, then scratch folders of the machine.
ABSOLUTE_PATHS = [(re.compile(p), r) for p, r in (
    (r"/work/main/", ""),  # the checkout: paths relative to it
    (r"/work/wt/[\w.-]+/", ""),  # a worktree of it
    (r"/tmp/bundle\d*(?=[/\s'\"]|$)", "BUNDLE"),  # the bundle (the replay commands' placeholder)
    (r"/tmp/pl/b1[13](?=[/\s'\"]|$)", "BUNDLE"),  # build/gpu3.sh's unpacked bundles
    (r"/tmp/pl/w/", "runs/"),  # build/gpu3.sh's run folders
    (r"/tmp/pl/", "runs/"),
    (r"/tmp/w\d+/", "runs/"),  # qualify --out: the run folders
    (r"/root/out/", "runs/"),
    (r"/tmp/tmp[\w.-]*/", "runs/"),  # mktemp -d
    (r"/home/[\w.-]+/", "~/"),
)]
# What examples_test.py refuses in a committed file: any absolute path of a writing machine.
ABSOLUTE_PATH = re.compile(r"(?<![\w./~-])(/tmp/|/root(?=[/\s'\"]|$)|/work/|/home/|/var/tmp/)")
TEXT_SUFFIXES = (".json", ".html", ".xml", ".csv", ".txt", ".out", ".md", ".jsonl", ".log")
OUTPUTS = ("index.html", ciout.JUNIT_NAME, ciout.RESULTS_CSV, ciout.FAILURES_CSV, "expectations-update.txt")


def relative(text):
    for rx, repl in ABSOLUTE_PATHS:
        text = rx.sub(repl, text)
    return text


def rewrite_paths(root):
    """Rewrites the absolute paths in every text file under root; returns the files changed."""
    changed = []
    for d, _, files in os.walk(root):
        for name in sorted(files):
            path = os.path.join(d, name)
            if not name.endswith(TEXT_SUFFIXES):
                continue
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
            new = relative(text)
            if new != text:
                _write(path, new)
                changed.append(path)
    return changed


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    os.replace(tmp, path)


def comparison_from(data):
    """The Comparison a results.json carries (qualify writes it with Comparison.to_json)."""
    if "comparison" not in data:
        return None
    comp = cmp.Comparison()
    comp.status = {k: model.Change(v) for k, v in data["comparison"].items()}
    comp.notes = dict(data.get("comparison_notes", {}))
    comp.dropped = list(data.get("dropped", []))
    comp.dropped_covered = list(data.get("dropped_covered", []))
    comp.machine = [(m["id"], model.Change(m["status"]), m.get("why", "")) for m in data.get("machine_coverage", [])]
    comp.summary = dict(data.get("summary", {}))
    comp.stale = [_stale(s) for s in data.get("stale_expectations", [])]
    comp.exit_code = int(data.get("info", {}).get("exit_code", cmp.EXIT_QUALIFIED))
    return comp


def _stale(text):
    """'source: kind pattern' (as results.json keeps a stale entry) as the page shows it."""
    source, _, rest = text.rpartition(": ")
    kind, _, pattern = rest.partition(" ")
    return SimpleNamespace(source=source, kind=kind, pattern=pattern, bug="")


def _baseline(info, runs_by_key):
    """The baseline run when it is one of the re-rendered folders (found by its run key)."""
    for key, path in runs_by_key.items():
        if key and key in str(info.get("baseline", "")):
            return model.read_results(path)[0]
    return None


def rerender(results, page=None, runs_by_key=None):
    """Re-renders the outputs beside `results` (a results.json) that exist already; page: the
    HTML file to write (default index.html beside it). Returns the paths written."""
    run, info, data = model.read_results(results)
    folder = os.path.dirname(results)
    comp = comparison_from(data)
    written = []
    page = page or os.path.join(folder, "index.html")
    if os.path.isfile(page):
        if comp is not None:
            html = htmlreport.render_qualification(run, info, comp, _baseline(info, runs_by_key or {}), {},
                                                   mutation=htmlreport.load_mutation(folder))
        else:
            html = htmlreport.render(run, mutation=htmlreport.load_mutation(folder))
        _write(page, html)
        written.append(page)
    texts = {ciout.JUNIT_NAME: lambda: ciout.junit_xml(run, comp, info=info),
             ciout.RESULTS_CSV: lambda: ciout.results_csv(run, comp),
             ciout.FAILURES_CSV: lambda: ciout.failures_csv(run, comp),
             "expectations-update.txt": lambda: ciout.expectations_update(run, comp) if comp else None}
    if os.path.basename(results) == "results.json":
        for name, make in texts.items():
            path = os.path.join(folder, name)
            text = make() if os.path.isfile(path) else None
            if text is not None:
                _write(path, text)
                written.append(path)
    return written


def examples(root):
    """Rewrites the paths under root, then re-renders every run folder in it."""
    changed = rewrite_paths(root)
    pairs = []  # (results.json, page)
    for d, _, files in os.walk(root):
        if "results.json" in files:
            pairs.append((os.path.join(d, "results.json"), None))
        for name in files:  # a stray pair such as selftest-results.json + selftest-report.html
            if name.endswith("-results.json") and name.replace("-results.json", "-report.html") in files:
                pairs.append((os.path.join(d, name), os.path.join(d, name.replace("-results.json", "-report.html"))))
    runs_by_key = {}
    for results, _ in pairs:
        info = model.read_results(results)[1]
        if info.get("run_key"):
            runs_by_key[info["run_key"]] = results
    written = []
    for results, page in sorted(pairs):
        written += rerender(results, page, runs_by_key)
    return changed, written


def absolute_paths(root):
    """[(file, line number, the line)] of every absolute path of a writing machine under root."""
    found = []
    for d, _, files in os.walk(root):
        for name in sorted(files):
            path = os.path.join(d, name)
            try:
                with open(path, encoding="utf-8") as f:
                    lines = f.read().splitlines()
            except (UnicodeDecodeError, OSError):
                continue  # PNGs and other binaries
            for i, line in enumerate(lines, 1):
                if ABSOLUTE_PATH.search(line):
                    found.append((path, i, line.strip()[:200]))
    return found


def main(argv=None):
    cliargs.utf8_streams()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dirs", nargs="*", help="run folders (each with a results.json)")
    ap.add_argument("--examples", help="a tree of committed examples: rewrite paths, re-render all")
    args = ap.parse_args(argv)
    if not args.run_dirs and not args.examples:
        ap.error("give run folders or --examples DIR")
    try:
        if args.examples:
            if not os.path.isdir(args.examples):
                print(f"rerender: no such folder: {args.examples}", file=sys.stderr)
                return 2
            changed, written = examples(args.examples)
            print(f"rerender: relative paths in {len(changed)} files, re-rendered {len(written)} files")
            left = absolute_paths(args.examples)
            for path, i, line in left:
                print(f"rerender: still absolute: {path}:{i}: {line}", file=sys.stderr)
        for d in args.run_dirs:
            results = os.path.join(d, "results.json") if os.path.isdir(d) else d
            for path in rerender(results):
                print(f"rerender: wrote {path}")
    except model.ResultsError as e:
        print(f"rerender: {e}", file=sys.stderr)
        return 2
    except htmlreport.MissingDependency as e:
        print(f"rerender: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    interpreter.reexec_if_missing("jinja2", __file__, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
