#!/usr/bin/env python3
"""Benchmark: qualify against a baseline of N cases (default 10^6), as docs/qualification.md
("Limits") reports it. Not a test: it measures this machine.

  /usr/bin/python3 tools/large_baseline_bench.py [--cases 1000000] [--work DIR] [--keep]

It builds a bundle of one fake binary (tools/testdata/fakegt.py, two passing cases), qualifies
it once to get a real results.json, makes a baseline of N cases from it (the two, then N-2
passing cases over 1,000 targets, each a copy of a real record: about 370 bytes a case, as the
reliability review's 368 MB file), then runs `tools/qualify --bundle B --baseline FILE` in a
child process and prints its exit code (6, COVERAGE LOST: N-2 cases dropped), wall time, peak RSS
(the child's, from getrusage), qualify's own phases (results.json info.seconds) and the size of
every file the run folder holds.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKEGT = os.path.join(ROOT, "tools", "testdata", "fakegt.py")
QUALIFY = os.path.join(ROOT, "tools", "qualify.py")


def make_bundle(dest):
    os.makedirs(os.path.join(dest, "bin"))
    shutil.copy(FAKEGT, os.path.join(dest, "bin", "x"))
    with open(os.path.join(dest, "bin", "x.spec.json"), "w", encoding="utf-8") as f:
        json.dump({"cases": ["S.A", "S.B"]}, f)
    with open(os.path.join(dest, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump({"info": {"commit": "bench"}, "targets": [
            {"label": "//fake:x", "path": "bin/x", "timeout_s": 60, "tags": ["gpu", "tier_bat"]}]}, f)


def qualify(bundle, out, exp, baseline):
    cmd = [sys.executable, QUALIFY, "--bundle", bundle, "--out", out, "--expectations", exp,
           "--tier", "bat", "--baseline", baseline, "--retries", "0"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace",
                       env=dict(os.environ, PAGELOCK_NO_REEXEC="1", PAGELOCK_KERNEL_LOG=""))
    return p, time.monotonic() - t0


def make_baseline(results, dest, n):
    with open(results, encoding="utf-8") as f:
        doc = json.load(f)
    keep = doc["run"]["cases"]
    template = dict(keep[0])
    with open(dest, "w", encoding="utf-8") as f:
        head = dict(doc, run=dict(doc["run"], cases=[]))
        text = json.dumps(head)
        cut = text.index('"cases": []') + len('"cases": [')
        f.write(text[:cut])
        for i, c in enumerate(keep):
            f.write(("" if i == 0 else ", ") + json.dumps(c))
        for i in range(n - len(keep)):
            c = dict(template, target=f"//fake:t{i % 1000}", suite="Big", name=f"case_{i:07d}",
                     status="PASS", attempts=["PASS"])
            f.write(", " + json.dumps(c))
        f.write(text[cut:])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=1000000)
    p.add_argument("--work", help="folder to work in (default: a new temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    args = p.parse_args(argv)
    work = args.work or tempfile.mkdtemp(prefix="pagelock-bench-")
    os.makedirs(work, exist_ok=True)
    try:
        bundle, exp = os.path.join(work, "bundle"), os.path.join(work, "expectations")
        os.makedirs(exp, exist_ok=True)
        if not os.path.isdir(bundle):
            make_bundle(bundle)
        first, _ = qualify(bundle, os.path.join(work, "first"), exp, "none")
        if first.returncode != 0:
            sys.exit(f"the first run failed (exit {first.returncode}): {first.stderr[-2000:]}")
        run_dir = next(os.path.join(work, "first", d) for d in sorted(os.listdir(os.path.join(work, "first")))
                       if d[:1].isdigit())
        baseline = os.path.join(work, "baseline.json")
        t0 = time.monotonic()
        make_baseline(os.path.join(run_dir, "results.json"), baseline, args.cases)
        print(f"baseline: {args.cases:,} cases, {os.path.getsize(baseline) / 1e6:.0f} MB "
              f"(made in {time.monotonic() - t0:.0f} s)")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        run, wall = qualify(bundle, os.path.join(work, "big"), exp, baseline)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        peak = after.ru_maxrss
        print(f"qualify: exit {run.returncode}, {wall:.1f} s wall, {cpu:.1f} s CPU (user + system), peak RSS "
              f"{peak / 1024:.0f} MB{' (at least: an earlier child peaked higher)' if before.ru_maxrss >= peak else ''}")
        print(f"load average (1 min) after: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        big = os.path.join(work, "big")
        big_dir = next(os.path.join(big, d) for d in sorted(os.listdir(big)) if d[:1].isdigit())
        said = [line for line in (run.stdout + run.stderr).splitlines() if "qualify: time:" in line
                or "qualify: verdict:" in line]
        for line in said:
            print(line.replace("qualify: ", ""))
        for name in sorted(os.listdir(big_dir)):
            path = os.path.join(big_dir, name)
            if os.path.isfile(path):
                print(f"  {os.path.getsize(path):>12,} bytes  {name}")
        return 0 if run.returncode == 6 else 1
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
