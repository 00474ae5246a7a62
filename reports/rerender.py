#!/usr/bin/env python3
"""Re-renders run folders from their results.json with the current templates and writers, and
makes the committed examples again.

  python3 reports/rerender.py RUN_DIR [RUN_DIR ...]   # re-render these run folders
  python3 reports/rerender.py --examples [DIR]         # make examples/ (or DIR) again

A run folder's index.html, junit.xml, results.csv, failures.csv and expectations-update.txt
are rewritten when the folder already has them (nothing new is added). A results.json with a
comparison (qualify's) gives the qualification page; one without it (the bundle runner's) the
plain report. A page's metric trends came from the writing machine's history database and are
not re-created.

--examples writes one page of each verdict the qualification report shows (EXAMPLES below: the
run each is made from and how) and examples/README.md, which says so; with Chromium installed it
also takes the QUALIFIED page's first screen (qualified/first-screen.png) when that page changed.
Before that, it rewrites each absolute path of a writing machine in the examples' own inputs
(ABSOLUTE_PATHS below) into the relative form qualify would have written from a checkout
(`expectations/...`, `runs/...`, `BUNDLE/...`). examples_test.py fails when the command would
change a byte of the committed examples, and on any absolute path left in them.

Started under a python3 without jinja2, it re-executes itself once under one that has it
(reports/interpreter.py).

Exit codes: 0 done; 1 no Python here imports jinja2 (the pages cannot be rendered); 2 bad input
(no such folder, a results.json that cannot be read).
"""

import argparse
import os
import re
import sys
from dataclasses import dataclass
from types import SimpleNamespace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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
from reports import expectations as expect
from reports import first_night
from reports import htmlreport
from reports import interpreter
from reports import model
from reports import pages

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
    """The baseline run when it is one of the runs at hand (found by its run key)."""
    for key, path in runs_by_key.items():
        if key and key in str(info.get("baseline", "")):
            return model.read_results(path)[0]
    return None


def page(run, info, data, mutation=None, runs_by_key=None):
    """The HTML of a run's page: the qualification page when results.json has a comparison
    (qualify's), else the plain report. mutation: a mutation.json dict (htmlreport.read_mutation)."""
    comp = comparison_from(data)
    if comp is None:
        return htmlreport.render(run, mutation=mutation)
    return htmlreport.render_qualification(run, info, comp, _baseline(info, runs_by_key or {}), {},
                                           mutation=mutation)


def rerender(results):
    """Re-renders the outputs beside `results` (a results.json) that exist already. Returns the
    paths written."""
    run, info, data = model.read_results(results)
    folder = os.path.dirname(results)
    comp = comparison_from(data)
    written = []
    index = os.path.join(folder, "index.html")
    if os.path.isfile(index):
        _write(index, page(run, info, data, htmlreport.load_mutation(folder)))
        written.append(index)
    texts = {ciout.JUNIT_NAME: lambda: ciout.junit_xml(run, comp, info=info),
             ciout.RESULTS_CSV: lambda: ciout.results_csv(run, comp),
             ciout.FAILURES_CSV: lambda: ciout.failures_csv(run, comp),
             "expectations-update.txt": lambda: ciout.expectations_update(run, comp) if comp else None}
    for name, make in texts.items():
        path = os.path.join(folder, name)
        text = make() if os.path.isfile(path) else None
        if text is not None:
            _write(path, text)
            written.append(path)
    return written


# ---------------------------------------------------------------------------------------------
# The committed examples: one page of each verdict, made from real runs.

@dataclass
class Example:
    folder: str  # under examples/
    verdict: str  # what the page shows, as the README names it
    source: str  # the run's results.json, relative to the checkout
    what: str  # the README's sentence
    mutation: str = ""  # its mutation.json, relative to the checkout
    as_first_night: bool = False  # re-judged with no baseline and expectations/common.txt only


RUNS = "reports/testdata/runs"
EXAMPLES = [
    Example("qualified", "QUALIFIED", "baselines/nvidia-h200/results.json",
            "the H200's reference run as qualify judged it against the reference before it (56 "
            "cases new since). The README's picture is its first screen (`first-screen.png`)"),
    Example("regressions", "REGRESSIONS", f"{RUNS}/h200-fault-regression/results.json",
            "a qualification under the fault shim with `PAGELOCK_FAULT=dtoh_async_corrupts` (an "
            "asynchronous device-to-host copy delivers a wrong last byte), against the run of "
            f"`{RUNS}/h200-reference/`: 31 regressions, each with its rule, message and replay command"),
    Example("first-night", "FIRST NIGHT", "baselines/nvidia-h200/results.json",
            "**not a real first night** (none is committed yet): the H200's reference run "
            "re-judged as a SKU's first run would be: no baseline, and "
            "`expectations/common.txt` only (as if `expectations/nvidia-h200.txt` did not exist). "
            "What the page says it inherited is what a new GPU on this driver and runtime inherits",
            as_first_night=True),
    Example("mutation", "EXPECTATIONS NEED UPDATING, with a mutation score", f"{RUNS}/h200-reference/results.json",
            "`tools/qualify --mutation`: the whole fault catalogue of the day (72 faults) over the "
            "run's own bundle, one survivor (`mutation/mutation.html` is the mutation run's own page). "
            "The verdict is the run's: 7 cases fixed since the baseline, one flake",
            mutation=f"{RUNS}/h200-reference/mutation/mutation.json"),
]
SCREENSHOT = os.path.join("qualified", "first-screen.png")
README_HEAD = """# Examples

One page of each verdict the qualification report shows, rendered by today's templates from
real runs on one NVIDIA H200 (driver 580.159.04, CUDA 13.0), and a fleet report. Open a
folder's `index.html` in a browser.

    python3 reports/rerender.py --examples

makes the pages and this file again (with Chromium installed, also the QUALIFIED page's
screenshot when that page changed); `bazel test //reports:examples_test` fails when it would
change a byte. `fleet/` is made by the two commands of `docs/fleet.md` (`//tools/fleet:example_test`).

| folder | verdict | cases | the run: date, bundle commit | what it is |
|---|---|---|---|---|
"""
README_TAIL = """| [`fleet/`](fleet/index.html) | the fleet report: a host regressed | | 2026-11-30, d3db170 | the night of `h200-reference` and `h200-second` in `reports/testdata/runs/` (the later regressed): one host, one new regression group, three known failures; the runs' own pages are not committed, so it links to none |

Other evidence (every H200 run behind the figures in `README.md` and `docs/`) is cited there by
the commit that recorded it: `git show COMMIT --stat` lists its files.
"""


def _relative_sources(entries, name):
    """Entries read from a file, cited as `name:line` (as qualify cites them from a checkout)."""
    for e in entries:
        _, sep, line = e.source.rpartition(":")
        if sep:
            e.source = f"{name}:{line}"
    return entries


def as_first_night(run, info, data, root):
    """(info, Comparison) of a run (model.read_results' three) re-judged as the first night of its
    SKU: no baseline, the expectations every SKU inherits (expectations/common.txt) and no SKU
    file, its verdict FIRST NIGHT where it would otherwise qualify (as
    tools/qualification/verdict.first_night decides it)."""
    name = "expectations/common.txt"
    path = os.path.join(root, name)
    try:
        entries, digest = expect.read_file(path)
    except expect.ExpectationError as e:
        raise model.ResultsError(str(e))
    exps = expect.Expectations(_relative_sources(entries, name), {name: digest})
    comp = cmp.compare(run, exps, None)
    # The kernel's word outside any case, as qualify judged it on the run (verdict.kernel_health).
    for key, st, why in (comparison_from(data) or cmp.Comparison()).machine:
        if key.startswith("kernel_log:"):
            comp.machine.append((key, st, why))
            comp.summary[str(st)] = comp.summary.get(str(st), 0) + 1
            if comp.exit_code in (cmp.EXIT_QUALIFIED, cmp.EXIT_UPDATE, cmp.EXIT_COVERAGE_LOST):
                comp.exit_code = cmp.EXIT_REGRESSION
    if comp.exit_code == cmp.EXIT_QUALIFIED:
        comp.exit_code = cmp.EXIT_FIRST_NIGHT
    sku = info.get("sku") or expect.sku_of(run.fingerprint.get("gpu0_name"))
    info = dict(info, baseline="none", expectations=exps.files, verdict=comp.verdict[0], exit_code=comp.exit_code,
                label=f"re-judged as the first night of {sku}: no baseline, {name} only",
                command="python3 reports/rerender.py --examples",
                first_night=first_night.context(run, comp, sku, "", "runs/" + info.get("run_key", "RUN")))
    info.pop("history", None)
    info.pop("history_key", None)
    return info, comp


def _known_runs(root):
    """{run_key: results.json} of the runs an example may name as its baseline."""
    runs = {}
    top = os.path.join(root, RUNS)
    for d in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        path = os.path.join(top, d, "results.json")
        if os.path.isfile(path):
            runs[model.read_results(path)[1].get("run_key", "")] = path
    return runs


def example_files(root=ROOT):
    """{path under examples/: text} of every example page, the mutation run's page and README.md."""
    known = _known_runs(root)
    out, rows = {}, []
    for ex in EXAMPLES:
        run, info, data = model.read_results(os.path.join(root, ex.source))
        mutation = htmlreport.read_mutation(os.path.join(root, ex.mutation)) if ex.mutation else None
        if ex.as_first_night:
            info, comp = as_first_night(run, info, data, root)
            html = htmlreport.render_qualification(run, info, comp, None, {})
        else:
            html = page(run, info, data, mutation, known)
        out[f"{ex.folder}/index.html"] = html
        if mutation is not None:
            out[f"{ex.folder}/mutation/mutation.html"] = pages.render_mutation_page(mutation)
        commit = str((info.get("bundle") or {}).get("commit", ""))
        commit = commit[:7] + ("-dirty" if commit.endswith("-dirty") else "")
        rows.append(f"| [`{ex.folder}/`]({ex.folder}/index.html) | {ex.verdict} | {len(run.cases):,} | "
                    f"{str(info.get('started_at', ''))[:10]}, {commit} | {ex.what}; from `{ex.source}` |")
    out["README.md"] = README_HEAD + "\n".join(rows) + "\n" + README_TAIL
    return out


def examples(out_dir, root=ROOT, screenshot=True):
    """Writes example_files() under out_dir; takes the QUALIFIED page's screenshot when that page
    changed or has none (and Chromium is here). Returns (paths written, what the screenshot step
    said)."""
    written, said = [], ""
    for rel, text in example_files(root).items():
        path = os.path.join(out_dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            with open(path, encoding="utf-8") as f:
                if f.read() == text:
                    continue
        except FileNotFoundError:
            pass
        _write(path, text)
        written.append(path)
    png = os.path.join(out_dir, SCREENSHOT)
    qualified = os.path.join(out_dir, os.path.dirname(SCREENSHOT), "index.html")
    if screenshot and (qualified in written or not os.path.isfile(png)):
        from reports import screenshot as shot
        if not shot.chromium():
            said = f"{png} not taken: chromium not found (tools/install_deps.sh --with-browser installs it)"
        else:
            rc, err = shot.screenshot(qualified, png)
            said = f"wrote {png}" if rc == 0 else f"{png} not taken: {err.strip()[-300:]}"
    return written, said


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
    ap.add_argument("--examples", nargs="?", const=os.path.join(ROOT, "examples"), metavar="DIR",
                    help="make the committed examples again (default: examples/ of this checkout)")
    args = ap.parse_args(argv)
    if not args.run_dirs and not args.examples:
        ap.error("give run folders or --examples")
    try:
        if args.examples:
            if not os.path.isdir(args.examples):
                print(f"rerender: no such folder: {args.examples}", file=sys.stderr)
                return 2
            changed = rewrite_paths(args.examples)
            written, said = examples(args.examples)
            print(f"rerender: relative paths in {len(changed)} files; {len(written)} example files changed"
                  + "".join(f"\nrerender: wrote {p}" for p in written))
            if said:
                print(f"rerender: {said}")
            for path, i, line in absolute_paths(args.examples):
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
