#!/usr/bin/env python3
"""Killed binaries and signals on a GPU machine, from a bundle (needs the GPU, so not in CI): no
finished case is lost, the right case is blamed, no process is left.

  python3 tools/runner/done_check.py --bundle build/bundle --out /tmp/done_check \\
      [--target //suites/hostalloc:hostalloc_test] [--kill-at 3]

1. Runs one real suite binary through the bundle's runner and kills the binary with SIGKILL when
   its --kill-at'th case has started. Checks: the runner restarted it; the case that was running
   is CRASH "killed by SIGKILL while running this case"; every case that ended in a journal has
   that status in test.xml; every listed case has a result; no process of the run is left.
2. Runs tools/qualify.py on the bundle and sends it SIGTERM once a case of its run is running.
   Checks: qualify exits with its INTERRUPTED code, no traceback; the run's runner.json says
   INTERRUPTED; the case running in each stopped target (qualify runs --jobs 4 by default) is
   named (MISSING, "INTERRUPTED ... while this case was running"); every case that ended is
   kept; no process is left.
3. Runs tools/qualify.py --mutation on the bundle and sends it SIGTERM once the mutation tool's
   runners run test binaries under the fault shim (in sessions of their own). Checks: qualify
   exits 7, no traceback; the run folder's results.json says INTERRUPTED; no process of the run
   is left (qualify, mutation.py, its runners, their binaries). --skip-mutation leaves it out.
Prints one PASS/FAIL line per check and `ps` of anything left; exits 0 when all pass.
On CPU, tools/hostile_qualify_moments_test.py runs check 3 on a bundle of fake binaries.
"""

import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.runner.done_check"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import model, testlogs
from reports.model import Status

FAILED = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILED.append(what)


def journal_events(path):
    out = []
    for line in testlogs._journal_lines(path) or []:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def ended_and_running(journals):
    """{case: journal status} of ended cases, and the case running at the end of the last."""
    ended, running = {}, None
    for j in journals:
        running = None
        for ev in journal_events(j):
            if ev.get("event") == "start":
                running = ev.get("case")
            elif ev.get("event") == "end":
                ended[ev.get("case")] = ev.get("status")
                running = None if running == ev.get("case") else running
    return ended, running


def leftovers(marker):
    """Live processes whose command line or environment mentions marker (the run's folder)."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ")
            with open(f"/proc/{p}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{p}/stat", encoding="utf-8") as f:
                state = f.read().split(")")[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and (marker.encode() in cmd or marker.encode() in env):
            found.append(f"{p} {cmd.decode(errors='replace')[:150]}")
    return found


def wait_for_start(pattern, n, deadline_s=300):
    """Waits until a journal matching pattern has n start events; returns its path."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        for j in glob.glob(pattern, recursive=True):
            if sum(ev.get("event") == "start" for ev in journal_events(j)) >= n:
                return j
        time.sleep(0.002)
    return None


def binary_pid(journal):
    """The test binary (not its child scenarios) that writes this journal."""
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if f"PAGELOCK_JOURNAL={journal}".encode() in env and b"--gtest_output" in cmd:
            return int(p)
    return None


def verify_cases(tdir, label):
    journals = sorted(glob.glob(os.path.join(tdir, "test.outputs", "attempt_*",
                                             model.JOURNAL_NAME)), key=testlogs._attempt_key)
    ended, _ = ended_and_running(journals)
    run = testlogs.load_target(label, tdir)
    got = {f"{c.suite}.{c.name}": c for c in run.cases}
    # A journal says what GoogleTest said: a NotSupported skip was a SKIP there, a WARN a PASS.
    lost = [c for c, s in ended.items() if c not in got or
            (got[c].status != s and not (s == Status.SKIP and got[c].status == Status.NOT_SUPPORTED)
             and not (s == Status.PASS and got[c].status == Status.WARN))]
    return journals, got, lost


def sigkill_check(args):
    out = os.path.join(args.out, "sigkill")
    pkg, name = args.target[2:].split(":")
    tdir = os.path.join(out, pkg, name)
    proc = subprocess.Popen([sys.executable, os.path.join(args.bundle, "tools", "runner", "runner.py"),
                             "--bundle", args.bundle, "--out", out, "--tags", "",
                             "--targets", "^" + args.target + "$"])
    first = os.path.join(tdir, "test.outputs", "attempt_1", model.JOURNAL_NAME)
    j = wait_for_start(first, args.kill_at)
    pid = binary_pid(first) if j else None
    check(pid is not None, f"1. the binary of {args.target} reached case {args.kill_at}")
    if pid:
        os.kill(pid, signal.SIGKILL)
        _, victim = ended_and_running([first])
        print(f"     SIGKILL to pid {pid}; running then: {victim}")
    rc = proc.wait(timeout=3600)
    check(rc == 3, f"1. the runner exits 3 (FAILURES) after the kill (got {rc})")
    journals, got, lost = verify_cases(tdir, args.target)
    _, running = ended_and_running(journals[:1])
    blamed = got.get(running) if running else got.get(f"(binary).{name}")
    check(len(journals) >= 2, f"1. the binary was restarted ({len(journals)} launches)")
    check(blamed is not None and blamed.status == Status.CRASH and "SIGKILL" in blamed.message,
          f"1. the running case {running} is CRASH by SIGKILL: "
          f"{blamed and (str(blamed.status), blamed.message[:100])}")
    check(not lost, f"1. no ended case lost or changed ({len(lost)}: {lost[:5]})")
    missing = [c for c, x in got.items() if x.status == Status.MISSING]
    check(not missing, f"1. every listed case has a result ({len(got)} cases, MISSING {missing[:5]})")
    left = leftovers(out)
    check(not left, f"1. no process left behind: {left}")


def sigterm_qualify_check(args):
    out = os.path.join(args.out, "qualify")
    os.makedirs(out, exist_ok=True)
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tools", "qualify.py"),
                             "--bundle", args.bundle, "--out", out, "--tier", "bat",
                             "--baseline", "none", "--no-history"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    j = wait_for_start(os.path.join(out, "**", "attempt_1", model.JOURNAL_NAME), args.kill_at)
    check(j is not None, "2. qualify started a case")
    proc.send_signal(signal.SIGTERM)
    text = proc.communicate(timeout=600)[0].decode(errors="replace")
    print("     qualify said: " + " | ".join(text.strip().splitlines()[-3:]))
    check(proc.returncode == 7, f"2. qualify exits 7 (INTERRUPTED) on SIGTERM (got {proc.returncode})")
    check("Traceback" not in text, "2. no traceback")
    rj = glob.glob(os.path.join(out, "*", "testlogs", "runner.json"))
    status = json.load(open(rj[0], encoding="utf-8")).get("status") if rj else None
    check(status == "INTERRUPTED", f"2. runner.json says INTERRUPTED (got {status})")
    stopped_targets_check(out)
    left = leftovers(out)
    check(not left, f"2. no process left behind: {left}")


def stopped_targets_check(out):
    """qualify runs targets in parallel (--jobs, default 4): every target of the runs under out
    whose binary was stopped names its running case, and none loses an ended case."""
    named_any = False
    for first in sorted(glob.glob(os.path.join(out, "*", "testlogs", "**", "attempt_1",
                                               model.JOURNAL_NAME), recursive=True)):
        tdir = os.path.dirname(os.path.dirname(os.path.dirname(first)))
        testlogs_root = tdir[:tdir.index(os.sep + "testlogs" + os.sep) + len("/testlogs")]
        label = "//" + os.path.relpath(tdir, testlogs_root).replace(os.sep, "/")
        label = label.rsplit("/", 1)[0] + ":" + label.rsplit("/", 1)[1]
        journals, got, lost = verify_cases(tdir, label)
        _, running = ended_and_running(journals)
        if running:
            named = got.get(running)
            named_any = True
            check(named is not None and "INTERRUPTED" in named.message and
                  "while this case was running" in named.message,
                  f"2. {label}: the running case {running} is named: "
                  f"{named and (str(named.status), named.message[:100])}")
        check(not lost, f"2. {label}: no ended case lost ({lost[:5]})")
    check(named_any, "2. at least one running case was stopped and named")


def marked(marker, also=b""):
    """Live processes (pid, command line) whose environment holds PAGELOCK_DONE_CHECK=marker
    (and the bytes also)."""
    needle = f"PAGELOCK_DONE_CHECK={marker}".encode()
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{p}/stat", encoding="utf-8") as f:
                state = f.read().split(")")[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and needle in env.split(b"\0") and also in env:
            found.append((int(p), cmd))  # whole: a deep run folder pushes the view past any cut
    return found


def mutation_signal_check(args, sig=signal.SIGTERM, extra=()):
    """3. SIGTERM to qualify --mutation while the mutation tool's runners run test binaries under
    the fault shim: exit 7 and nothing of the run left."""
    out = os.path.join(args.out, "mutation_signal")
    os.makedirs(out, exist_ok=True)
    marker = uuid.uuid4().hex
    env = dict(os.environ, PAGELOCK_DONE_CHECK=marker)
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tools", "qualify.py"),
                             "--bundle", args.bundle, "--out", out, "--tier", "bat",
                             "--baseline", "none", "--no-history", "--mutation",
                             "--mutation-budget", "120", "--mutation-jobs", "2", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    # A test binary of a mutation run: it has the fault shim's variables and runs from a view.
    end = time.monotonic() + getattr(args, "mutation_wait_s", 600)
    binaries = []
    while time.monotonic() < end and proc.poll() is None:
        binaries = [(pid, cmd[:150]) for pid, cmd in marked(marker, b"PAGELOCK_FAULT=") if "/view/bin/" in cmd]
        if binaries:
            break
        time.sleep(0.05)
    check(bool(binaries), f"3. the mutation run started test binaries under the shim ({len(binaries)})")
    if not binaries:  # say why: the mutation tool's own words
        for log in glob.glob(os.path.join(out, "*", "mutation", "mutation.out")):
            with open(log, errors="replace", encoding="utf-8") as f:
                print("     mutation.out: " + " | ".join(f.read().strip().splitlines()[-6:]), flush=True)
    proc.send_signal(sig)
    try:
        text = proc.communicate(timeout=120)[0].decode(errors="replace")
    except subprocess.TimeoutExpired:
        proc.kill()
        text = proc.communicate()[0].decode(errors="replace")
    print("     qualify said: " + " | ".join(text.strip().splitlines()[-2:]))
    check(proc.returncode == 7, f"3. qualify --mutation exits 7 on {sig.name} (got {proc.returncode})")
    check("Traceback" not in text, "3. no traceback")
    results = glob.glob(os.path.join(out, "*", "results.json"))
    verdict = None
    if results:
        with open(results[0], encoding="utf-8") as f:
            verdict = json.load(f).get("info", {}).get("verdict")
    check(verdict == "INTERRUPTED", f"3. results.json says INTERRUPTED (got {verdict})")
    time.sleep(0.5)
    left = marked(marker)
    check(not left, f"3. no process of the mutation run left behind: {left}")
    for pid, _ in left:  # never leave them running, even when the check failed
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundle", required=True)
    p.add_argument("--out", required=True, help="a new folder")
    p.add_argument("--target", default="//suites/hostalloc:hostalloc_test")
    p.add_argument("--kill-at", type=int, default=3, help="the case number to kill at (1-based)")
    p.add_argument("--skip-qualify", action="store_true")
    p.add_argument("--skip-mutation", action="store_true",
                   help="leave out check 3 (SIGTERM to qualify --mutation)")
    args = p.parse_args()
    args.bundle = os.path.abspath(args.bundle)
    args.out = os.path.abspath(args.out)
    sigkill_check(args)
    if not args.skip_qualify:
        sigterm_qualify_check(args)
    if not args.skip_mutation:
        mutation_signal_check(args)
    ps = subprocess.run(["ps", "-eo", "pid,pgid,stat,etime,args"], capture_output=True,
                        text=True, encoding="utf-8", errors="replace").stdout.splitlines()
    mine = [line[:200] for line in ps[1:] if (os.path.join(args.bundle, "bin") in line or
                                              args.out in line) and "done_check" not in line]
    print("ps after the checks, processes of the bundle or the run folder:",
          *(mine or ["(none)"]), sep="\n  ")
    check(not mine, "ps shows no process of the bundle or the run folder")
    print(f"{'ALL PASS' if not FAILED else f'{len(FAILED)} FAILED'}")
    return 0 if not FAILED else 1


if __name__ == "__main__":
    sys.exit(main())
