#!/usr/bin/env python3
"""pagelock mutation score: runs a bundle under the fault shim (tools/faults) once per injected
driver fault and says which faults the suite catches.

  mutation.py BUNDLE --out DIR [--faults NAME,...] [--jobs N] [--budget S] [--run-timeout S]

Runs, all under the shim (libcuda.so.1 first in LD_LIBRARY_PATH):
  control      no fault, alone first;
  control_par  no fault again, inside the parallel pool (cases whose status differs between the
               two controls, or that fail in either, are unstable and never count as a catch);
  one run per fault, --jobs at a time, each bounded by --run-timeout seconds (a run that hangs
  is killed and counts as caught: the suite would report TIMEOUT).
Targets: the runner's tags --tags (default: no stress, selftest, exclusive or bandwidth targets);
faults of the bandwidth family also run the bandwidth targets, alone, after the pool, beside a
bandwidth control (their timing must not share the GPU).

Verdicts:
  KILLED    some case that did not fail in the control fails, crashes, times out or goes missing
  HANDLED   a capability fault (an attribute reported wrongly) turned cases NotSupported, with a
            reason, and broke none; or a performance fault turned passing cases into WARN (the
            documented outcome of a performance deficit, P03)
  SURVIVED  nothing changed for the worse (NotSupported instead of a pass counts as survival for
            faults that are not capability faults: the suite masked the bug)
  ERROR     the shim did not load or did not know the fault; not counted in the score
  NOT_RUN   the --budget ran out first (no run started, or its run was stopped before anything
            was caught); not counted in the score
score = (KILLED + HANDLED) / (KILLED + HANDLED + SURVIVED).

Writes DIR/mutation.json, DIR/mutation.html (a self-contained HTML section) and DIR/runs/<run>/
(runner.out, the shim's log; testlogs too with --keep-testlogs). The shim: --shim DIR, else BUNDLE/faults/, else built with g++ from
tools/faults next to this file. The catalogue: --catalogue, else BUNDLE/faults/catalogue.tsv,
else tools/faults/catalogue.tsv. Survivor explanations: tools/faults/survivors.tsv (or the
bundle's copy).

Exit codes: 0 done (whatever the score); 1 the control run failed to run under the shim (or
the shim found no real driver);
2 bad usage (no bundle, unknown fault name, missing shim or catalogue).
"""

import argparse
import concurrent.futures
import html
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FAILING = {"FAIL", "CRASH", "TIMEOUT", "MISSING", "INFRA_ERROR"}
GOOD = {"PASS", "WARN"}
DEFAULT_TAGS = "-stress,-selftest,-exclusive,-family_bandwidth"
BANDWIDTH_TAGS = "family_bandwidth,-stress,-selftest"
GRACE_S = 20  # how long after --budget running runs may go on before they are stopped


class UsageError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Inputs

def read_tsv(path):
    """Rows of a TSV file with a header line, as dicts."""
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    if not lines:
        raise UsageError(f"{path}: empty")
    head = lines[0].split("\t")
    rows = []
    for n, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(head):
            raise UsageError(f"{path}:{n}: {len(cells)} columns, expected {len(head)}")
        rows.append(dict(zip(head, cells)))
    return rows


def first_existing(*paths):
    for p in paths:
        if p and os.path.exists(p):
            return p
    return None


def find_shim(bundle, shim_arg, out):
    if shim_arg:
        if not os.path.isfile(os.path.join(shim_arg, "libcuda.so.1")):
            raise UsageError(f"--shim {shim_arg}: no libcuda.so.1 there")
        return os.path.abspath(shim_arg)
    if os.path.isfile(os.path.join(bundle, "faults", "libcuda.so.1")):
        return os.path.join(bundle, "faults")
    build = os.path.join(REPO, "tools", "faults", "build_shim.sh")
    if not os.path.isfile(build):
        raise UsageError(f"no shim: {bundle}/faults/libcuda.so.1 is missing and there is no "
                         f"tools/faults/build_shim.sh to build one (pass --shim DIR)")
    dest = os.path.join(out, "shimlib")
    p = subprocess.run([build, dest], capture_output=True, text=True)
    if p.returncode != 0:
        raise UsageError(f"building the shim failed: {p.stderr.strip()[-400:]}")
    return dest


def load_catalogue(bundle, catalogue_arg):
    path = first_existing(catalogue_arg, os.path.join(bundle, "faults", "catalogue.tsv"),
                          os.path.join(REPO, "tools", "faults", "catalogue.tsv"))
    if not path:
        raise UsageError("no fault catalogue (catalogue.tsv) found; pass --catalogue")
    rows = read_tsv(path)
    for r in rows:
        for key in ("name", "rule", "family", "kind", "description"):
            if key not in r:
                raise UsageError(f"{path}: no column '{key}'")
    return rows, path


def load_survivor_notes(bundle):
    path = first_existing(os.path.join(bundle, "faults", "survivors.tsv"),
                          os.path.join(REPO, "tools", "faults", "survivors.tsv"))
    if not path:
        return {}
    return {r["name"]: r["explanation"] for r in read_tsv(path) if "explanation" in r}


# ---------------------------------------------------------------------------------------------
# Running

def run_bundle(bundle, shim, out_dir, fault, tags, timeout_s, hard_stop=None):
    """One runner invocation under the shim. Returns a dict with rc, seconds, timed_out and
    cut_by_budget (stopped at hard_stop, a time.monotonic() value, rather than by its own
    limit: that says nothing about the fault)."""
    os.makedirs(out_dir, exist_ok=True)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = shim + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["PAGELOCK_FAULT_LOG"] = os.path.join(out_dir, "fault.log")
    env["PAGELOCK_FAULT_LOG_REQUESTS"] = "0"  # init, fired and error lines are enough here
    if fault:
        env["PAGELOCK_FAULT"] = fault
    else:
        env.pop("PAGELOCK_FAULT", None)
    cmd = [sys.executable, os.path.join(bundle, "tools", "runner", "runner.py"), "--bundle", bundle,
           "--out", os.path.join(out_dir, "testlogs"), f"--tags={tags}"]
    start = time.monotonic()
    cut = hard_stop is not None and start + timeout_s > hard_stop
    if cut:
        timeout_s = max(1.0, hard_stop - start)
    with open(os.path.join(out_dir, "runner.out"), "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        timed_out = False
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            # The runner starts each test binary in a session of its own, so killing the
            # runner's group would orphan the binary (seen on the H200: a hung binary outlived
            # the mutation run). SIGTERM lets the runner kill its test and write what finished;
            # SIGKILL of the group follows only if it does not exit in time.
            try:
                proc.send_signal(signal.SIGTERM)
                rc = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                rc = proc.wait()
    return {"rc": rc, "seconds": round(time.monotonic() - start, 1),
            "timed_out": timed_out and not cut, "cut_by_budget": timed_out and cut}


def read_statuses(out_dir):
    """{case id: (status, reason, message)} of a run folder; {} when nothing was written."""
    from reports import results
    testlogs = os.path.join(out_dir, "testlogs")
    if not os.path.isdir(testlogs):
        return {}
    run = results.load_testlogs(testlogs)
    return {c.id: (c.status, c.reason, c.message) for c in run.cases}


def read_fault_log(out_dir):
    """(processes that loaded the shim with this fault, entry points where it fired, errors)."""
    inits, fired, errors = [], set(), []
    path = os.path.join(out_dir, "fault.log")
    if os.path.exists(path):
        with open(path, errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 3:
                    continue
                if parts[1] == "init":
                    inits.append(parts[3] if len(parts) > 3 else "")
                    if parts[2] == "real=none":
                        errors.append("the shim found no real libcuda.so.1 (set PAGELOCK_REAL_LIBCUDA)")
                elif parts[1] == "fired":
                    fired.add(parts[3] if len(parts) > 3 else parts[2])
                elif parts[1] == "error":
                    errors.append(parts[2])
    return inits, sorted(fired), errors


# ---------------------------------------------------------------------------------------------
# Classifying

def unstable_cases(*controls):
    """Cases that fail in some control or whose status differs between controls."""
    ids = set().union(*[set(c) for c in controls])
    out = set()
    for i in ids:
        seen = {c.get(i, ("ABSENT",))[0] for c in controls if c}
        if len(seen) > 1 or seen & FAILING:
            out.add(i)
    return out


def classify(fault, runs, unstable):
    """Verdict of one fault. runs: [(meta, statuses, (inits, fired, errors), control statuses of
    the same target selection)], statuses as {case: (status, reason, message)}."""
    name, kind = fault["name"], fault["kind"]
    caught, handled, masked = [], [], []
    timed_out = cut = False
    inits_ok = False
    fired, errors = set(), []
    for meta, statuses, (inits, fired_here, errs), control in runs:
        timed_out = timed_out or meta["timed_out"]
        cut = cut or meta.get("cut_by_budget", False)
        inits_ok = inits_ok or any(i == f"fault={name}" for i in inits)
        fired.update(fired_here)
        errors += errs
        for case, (before, _, _) in control.items():
            if case in unstable:
                continue
            if meta.get("cut_by_budget") and case not in statuses:
                continue  # never ran: the budget stopped the run, not the fault
            after, reason, message = statuses.get(case, ("MISSING", "", ""))
            if meta["timed_out"] and case not in statuses:
                after = "TIMEOUT"
            if before not in FAILING and after in FAILING:
                caught.append({"case": case, "control": before, "fault": after,
                               "message": (message or "")[:300]})
            elif before in GOOD and after == "NOT_SUPPORTED":
                (handled if kind == "capability" else masked).append(
                    {"case": case, "control": before, "fault": after, "reason": reason[:200]})
            elif kind == "perf" and before == "PASS" and after == "WARN":
                # A performance deficit's documented outcome is a WARN (P03), not a failure.
                handled.append({"case": case, "control": before, "fault": after,
                                "reason": reason[:200]})
    result = {"name": name, "rule": fault["rule"], "family": fault["family"], "kind": kind,
              "description": fault["description"], "reached": sorted(fired),
              "caught_by": caught, "handled_cases": handled, "masked_cases": masked,
              "runs": [r[0] for r in runs]}
    if not inits_ok:
        result["verdict"] = "ERROR"
        result["note"] = ("the shim never loaded this fault (" +
                          ("; ".join(sorted(set(errors))) or "no init line in its log") + ")")
    elif caught:
        result["verdict"] = "KILLED"
        if timed_out:
            result["note"] = "the run hung and was stopped (the suite would report TIMEOUT)"
    elif handled:
        result["verdict"] = "HANDLED"
    elif cut:
        result["verdict"] = "NOT_RUN"
        result["note"] = "the time budget stopped its run before anything was caught"
    else:
        result["verdict"] = "SURVIVED"
        if not fired:
            result["note"] = "never reached: no test binary called an entry point it changes"
        elif masked:
            result["note"] = f"masked: {len(masked)} passing case(s) turned NotSupported"
    return result


def score(results):
    counts = {v: 0 for v in ("KILLED", "HANDLED", "SURVIVED", "ERROR", "NOT_RUN")}
    for r in results:
        counts[r["verdict"]] += 1
    counted = counts["KILLED"] + counts["HANDLED"] + counts["SURVIVED"]
    pct = round(100.0 * (counts["KILLED"] + counts["HANDLED"]) / counted, 1) if counted else None
    return {**counts, "counted": counted, "total": len(results), "percent": pct}


# ---------------------------------------------------------------------------------------------
# Reporting

def esc(s):
    return html.escape(str(s), quote=True)


def html_section(doc):
    """A self-contained HTML section (inline style, no scripts, everything escaped)."""
    s = doc["score"]
    pct = "n/a" if s["percent"] is None else f"{s['percent']}%"
    caught = s["KILLED"] + s["HANDLED"]
    out = ['<section class="pl-mutation" id="mutation">',
           "<style>.pl-mutation table{border-collapse:collapse;font:13px sans-serif}"
           ".pl-mutation td,.pl-mutation th{border:1px solid #ccc;padding:3px 6px;text-align:left;"
           "vertical-align:top}.pl-mutation .KILLED{background:#dfd}.pl-mutation .HANDLED"
           "{background:#def}.pl-mutation .SURVIVED{background:#fdd}.pl-mutation .ERROR,"
           ".pl-mutation .NOT_RUN{background:#eee}.pl-mutation details{margin:0}</style>",
           "<h2>Mutation score: injected driver faults</h2>",
           f"<p><b>The suite caught {caught} of {s['counted']} injected driver faults ({esc(pct)})"
           f"</b>: {s['KILLED']} killed, {s['HANDLED']} handled as NotSupported, "
           f"{s['SURVIVED']} survived"
           + (f", {s['ERROR']} not loaded" if s["ERROR"] else "")
           + (f", {s['NOT_RUN']} not run (time budget)" if s["NOT_RUN"] else "") + ".</p>",
           f"<p>Control under the shim: {esc(doc['control']['summary'])}. "
           f"Unstable cases ignored: {len(doc['control']['unstable'])}.</p>"]
    survivors = [r for r in doc["faults"] if r["verdict"] == "SURVIVED"]
    if survivors:
        out.append("<h3>Survivors</h3><table><tr><th>fault</th><th>rule</th><th>what the driver "
                   "did</th><th>why it was not caught</th></tr>")
        for r in survivors:
            why = r.get("explanation") or r.get("note") or "unexplained"
            out.append(f"<tr class=\"SURVIVED\"><td>{esc(r['name'])}</td><td>{esc(r['rule'])}</td>"
                       f"<td>{esc(r['description'])}</td><td>{esc(why)}</td></tr>")
        out.append("</table>")
    out.append("<h3>Every fault</h3><table><tr><th>fault</th><th>verdict</th><th>rule</th>"
               "<th>family</th><th>what the driver did</th><th>caught by</th></tr>")
    for r in doc["faults"]:
        cases = r.get("caught_by") or r.get("handled_cases") or []
        if cases:
            items = "".join(f"<li>{esc(c['case'])}: {esc(c['control'])} &rarr; {esc(c['fault'])}"
                            "</li>" for c in cases[:30])
            more = f"<li>... {len(cases) - 30} more</li>" if len(cases) > 30 else ""
            by = f"<details><summary>{len(cases)} case(s)</summary><ul>{items}{more}</ul></details>"
        else:
            by = esc(r.get("explanation") or r.get("note") or "")
        out.append(f"<tr class=\"{esc(r['verdict'])}\"><td>{esc(r['name'])}</td>"
                   f"<td>{esc(r['verdict'])}</td><td>{esc(r['rule'])}</td><td>{esc(r['family'])}</td>"
                   f"<td>{esc(r['description'])}</td><td>{by}</td></tr>")
    out.append("</table></section>")
    return "\n".join(out) + "\n"


def summary_line(statuses):
    counts = {}
    for status, _, _ in statuses.values():
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "no cases"


# ---------------------------------------------------------------------------------------------

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bundle", help="bundle folder (tools/bundle.py)")
    p.add_argument("--out", required=True, help="folder for mutation.json, mutation.html, runs/")
    p.add_argument("--faults", default="all", help="comma-separated fault names (default all)")
    p.add_argument("--jobs", type=int, default=10, help="fault runs at once (default 10)")
    p.add_argument("--tags", default=DEFAULT_TAGS, help=f"runner tags (default {DEFAULT_TAGS})")
    p.add_argument("--no-bandwidth", action="store_true",
                   help="do not run bandwidth targets for bandwidth-family faults")
    p.add_argument("--run-timeout", type=float, default=120,
                   help="seconds one run may take before it is stopped (default 120)")
    p.add_argument("--budget", type=float, default=330,
                   help="seconds after which no run starts; running ones are stopped "
                        f"{GRACE_S} s later and their faults are NOT_RUN unless caught (default 330)")
    p.add_argument("--shim", help="folder holding the shim's libcuda.so.1")
    p.add_argument("--catalogue", help="catalogue.tsv (default: the bundle's or the repo's)")
    p.add_argument("--keep-testlogs", action="store_true",
                   help="keep every run's testlogs (default: only runner.out and fault.log stay)")
    args = p.parse_args(argv)
    t0 = time.monotonic()
    try:
        bundle = os.path.abspath(args.bundle)
        if not os.path.isfile(os.path.join(bundle, "manifest.json")):
            raise UsageError(f"{args.bundle}: not a bundle (no manifest.json)")
        if not os.path.isfile(os.path.join(bundle, "tools", "runner", "runner.py")):
            raise UsageError(f"{args.bundle}: no tools/runner/runner.py")
        if args.jobs < 1 or args.run_timeout <= 0 or args.budget <= 0:
            raise UsageError("--jobs, --run-timeout and --budget must be positive")
        out = os.path.abspath(args.out)
        os.makedirs(out, exist_ok=True)
        catalogue, catalogue_path = load_catalogue(bundle, args.catalogue)
        if args.faults != "all":
            wanted = [f for f in args.faults.split(",") if f]
            known = {f["name"]: f for f in catalogue}
            unknown = [f for f in wanted if f not in known]
            if unknown:
                raise UsageError(f"unknown fault(s): {', '.join(unknown)} (see {catalogue_path})")
            catalogue = [known[f] for f in wanted]
        shim = find_shim(bundle, args.shim, out)
    except (UsageError, OSError) as e:
        print(f"mutation: {e}", file=sys.stderr)
        return 2
    sys.path.insert(0, bundle)
    notes = load_survivor_notes(bundle)
    runs_dir = os.path.join(out, "runs")
    bandwidth = not args.no_bandwidth

    def one(name, fault, tags):
        d = os.path.join(runs_dir, name)
        meta = run_bundle(bundle, shim, d, fault, tags, args.run_timeout, hard_stop)
        meta["name"] = name
        return meta, read_statuses(d), read_fault_log(d)

    print(f"mutation: {len(catalogue)} faults, shim {shim}, jobs {args.jobs}", flush=True)
    deadline = t0 + args.budget  # no run starts after this (less its expected length)
    hard_stop = deadline + GRACE_S  # every run is stopped by then
    control = one("control", None, args.tags)
    if not control[2][0]:
        print("mutation: the control run never loaded the shim (no init line in "
              f"{runs_dir}/control/fault.log); is LD_LIBRARY_PATH honoured?", file=sys.stderr)
        return 1
    if control[2][2]:
        print(f"mutation: the shim reported: {'; '.join(sorted(set(control[2][2])))}",
              file=sys.stderr)
        return 1
    if not control[1]:
        print(f"mutation: the control run produced no results; see {runs_dir}/control/runner.out",
              file=sys.stderr)
        return 1
    print(f"mutation: control {summary_line(control[1])} in {control[0]['seconds']} s", flush=True)
    expected_s = max(5.0, control[0]["seconds"])
    fault_runs = {f["name"]: [] for f in catalogue}
    not_run = set()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(one, "control_par", None, args.tags): None}
        pending = list(catalogue)
        # Submit as slots free up, so that the budget stops new runs, not running ones.
        while pending or futures:
            while pending and len(futures) < args.jobs:
                f = pending.pop(0)
                # A run that cannot finish before the deadline is not started.
                if time.monotonic() + expected_s > deadline:
                    not_run.add(f["name"])
                    continue
                futures[pool.submit(one, f["name"], f["name"], args.tags)] = f["name"]
            done, _ = concurrent.futures.wait(list(futures), return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in done:
                name = futures.pop(fut)
                res = fut.result()
                if name is None:
                    control_par = res
                else:
                    fault_runs[name].append(res)
                    print(f"mutation: {name} done in {res[0]['seconds']} s", flush=True)
    for name in fault_runs:
        fault_runs[name] = [r + (control[1],) for r in fault_runs[name]]
    bw_faults = [f for f in catalogue if f["family"] == "bandwidth" and f["name"] not in not_run]
    bw_control = None
    if bandwidth and bw_faults:
        bw_control = one("control_bandwidth", None, BANDWIDTH_TAGS)
        for f in bw_faults:
            if time.monotonic() + expected_s > deadline:
                break  # the pool run of this fault still counts
            fault_runs[f["name"]].append(
                one(f["name"] + "_bandwidth", f["name"], BANDWIDTH_TAGS) + (bw_control[1],))
    unstable = unstable_cases(control[1], control_par[1])
    results = []
    for f in catalogue:
        if f["name"] in not_run and not fault_runs[f["name"]]:
            results.append({**{k: f[k] for k in ("name", "rule", "family", "kind", "description")},
                            "verdict": "NOT_RUN", "note": "the time budget ran out",
                            "caught_by": [], "handled_cases": [], "reached": []})
            continue
        r = classify(f, fault_runs[f["name"]], unstable)
        if r["verdict"] == "SURVIVED" and f["name"] in notes:
            r["explanation"] = notes[f["name"]]
        results.append(r)
    doc = {"score": score(results),
           "control": {"summary": summary_line(control[1]),
                       "parallel_summary": summary_line(control_par[1]),
                       "bandwidth_summary": summary_line(bw_control[1]) if bw_control else None,
                       "unstable": sorted(unstable)},
           "config": {"bundle": bundle, "shim": shim, "catalogue": catalogue_path,
                      "tags": args.tags, "jobs": args.jobs, "run_timeout_s": args.run_timeout,
                      "budget_s": args.budget, "bandwidth_runs": bandwidth,
                      "seconds": round(time.monotonic() - t0, 1)},
           "faults": results}
    if not args.keep_testlogs:
        # What caught each fault is in mutation.json; 70+ testlogs trees would be large.
        for name in os.listdir(runs_dir):
            shutil.rmtree(os.path.join(runs_dir, name, "testlogs"), ignore_errors=True)
    with open(os.path.join(out, "mutation.json"), "w") as fh:
        json.dump(doc, fh, indent=1)
    with open(os.path.join(out, "mutation.html"), "w") as fh:
        fh.write(html_section(doc))
    s = doc["score"]
    print(f"mutation: caught {s['KILLED'] + s['HANDLED']} of {s['counted']} faults "
          f"({s['percent']}%): KILLED={s['KILLED']} HANDLED={s['HANDLED']} "
          f"SURVIVED={s['SURVIVED']} ERROR={s['ERROR']} NOT_RUN={s['NOT_RUN']} "
          f"in {doc['config']['seconds']} s")
    for r in results:
        if r["verdict"] in ("SURVIVED", "ERROR"):
            print(f"  {r['verdict']} {r['name']} ({r['rule']}): "
                  f"{r.get('explanation') or r.get('note') or ''}")
    print(f"mutation: wrote {out}/mutation.json and mutation.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
