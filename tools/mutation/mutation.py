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
--select all runs it against every binary it reaches, bandwidth targets included.

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
targets); bandwidth targets run alone, after the pool, for the faults that reach them.
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
                 usual time limit) still ran past the tool's limit (past_the_time_limit)

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
import concurrent.futures
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FAILING = {"FAIL", "CRASH", "TIMEOUT", "MISSING", "INFRA_ERROR"}
GOOD = {"PASS", "WARN"}
DEFAULT_TAGS = "-stress,-selftest,-exclusive,-family_bandwidth,-manual"
BANDWIDTH_TAGS = "family_bandwidth,-stress,-selftest"
GRACE_S = 20  # how long after --budget running runs may go on before they are stopped


class UsageError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Signals: runners run in sessions of their own (so a terminal's Ctrl-C never reaches them, and
# a runner can kill its binary's group), so mutation.py must stop them itself.

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
STOP_S = 30  # how long the runners may take to stop their binaries after SIGTERM
TOKEN_ENV = "PAGELOCK_MUTATION_TOKEN"  # every process of this mutation run inherits it
TOKEN = uuid.uuid4().hex
STOPPING = threading.Event()
RUNNERS = {}  # pid -> Popen of every runner running now
# A runner is started and registered under it, never after STOPPING. Reentrant: the signal
# handler takes it in the main thread, which may hold it already (a serial run starting).
RUNNERS_LOCK = threading.RLock()


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived."""


def _signal_runners(sig):
    with RUNNERS_LOCK:
        procs = list(RUNNERS.values())
    for proc in procs:
        try:
            os.killpg(proc.pid, sig)  # the runner's own session: the runner and its helpers
        except OSError:
            pass


def _on_signal(signum, frame):
    first = not STOPPING.is_set()
    STOPPING.set()
    _signal_runners(signal.SIGTERM)  # a second SIGTERM makes a runner SIGKILL its binaries
    if first:
        raise Interrupted(signal.Signals(signum).name)


def kill_token_holders(token=None):
    """SIGKILLs every live process (but this one) whose environment carries this run's token:
    runners and the test binaries under the shim they started. Returns how many."""
    needle = f"{TOKEN_ENV}={token or TOKEN}".encode()
    killed = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            os.kill(int(pid), signal.SIGKILL)
            killed += 1
        except OSError:
            continue
    return killed


def stop_everything(by):
    """After a signal: waits up to STOP_S for the runners (SIGTERMed by the handler) to stop
    their binaries and exit, then kills whatever of this run is still alive. Returns exit 7."""
    STOPPING.set()
    _signal_runners(signal.SIGTERM)
    end = time.monotonic() + STOP_S
    while time.monotonic() < end:
        with RUNNERS_LOCK:
            alive = [p for p in RUNNERS.values() if p.poll() is None]
        if not alive:
            break
        time.sleep(0.05)
    _signal_runners(signal.SIGKILL)
    for _ in range(3):  # a process forking while it is killed: look again
        if not kill_token_holders():
            break
        time.sleep(0.1)
    print(f"mutation: interrupted by {by}; every runner and test binary of the run was stopped; "
          "no mutation.json written", file=sys.stderr, flush=True)
    return 7


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


def shim_unloadable(path):
    """Why the shim at path cannot be loaded (not an ELF object, or dlopen fails in a child
    process), or None. A truncated or corrupt shim would otherwise make every control run look
    like a harness that ignores LD_LIBRARY_PATH."""
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return "not an ELF shared object"
    except OSError as e:
        return e.strerror or str(e)
    probe = "import ctypes, sys; ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)"
    try:
        p = subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True,
                           timeout=30, env={k: v for k, v in os.environ.items() if k != "PAGELOCK_FAULT"})
    except subprocess.TimeoutExpired:
        return "dlopen did not return within 30 s"
    if p.returncode != 0:
        return "dlopen failed: " + (p.stderr.strip().splitlines() or ["?"])[-1][:200]
    return None


def find_shim(bundle, shim_arg, out):
    if shim_arg:
        if not os.path.isfile(os.path.join(shim_arg, "libcuda.so.1")):
            raise UsageError(f"--shim {shim_arg}: no libcuda.so.1 there")
        return os.path.abspath(shim_arg)
    shipped = os.path.join(bundle, "faults", "libcuda.so.1")
    if os.path.isfile(shipped):
        why = shim_unloadable(shipped)
        if not why:
            return os.path.join(bundle, "faults")
        if not os.path.isfile(os.path.join(REPO, "tools", "faults", "build_shim.sh")):
            print(f"mutation: the bundle's shim {shipped} will not load ({why}) and there is no "
                  "tools/faults/build_shim.sh to rebuild it: using it as it is", file=sys.stderr, flush=True)
            return os.path.join(bundle, "faults")
        print(f"mutation: the bundle's shim {shipped} will not load ({why}); rebuilding it with "
              "tools/faults/build_shim.sh", file=sys.stderr, flush=True)
    build = os.path.join(REPO, "tools", "faults", "build_shim.sh")
    if not os.path.isfile(build):
        raise UsageError(f"no shim: {bundle}/faults/libcuda.so.1 is missing and there is no "
                         f"tools/faults/build_shim.sh to build one (pass --shim DIR)")
    dest = os.path.join(out, "shimlib")
    p = subprocess.run([build, dest], capture_output=True, text=True)
    if p.returncode != 0:
        raise UsageError(f"building the shim failed: {p.stderr.strip()[-400:]}")
    return dest


CATALOGUES = {"faults": "catalogue.tsv", "conforming": "conforming.tsv"}


def catalogue_file(bundle, name):
    """The bundle's copy of a named catalogue, else the one next to this tool, else None."""
    return first_existing(os.path.join(bundle, "faults", CATALOGUES[name]),
                          os.path.join(REPO, "tools", "faults", CATALOGUES[name]))


def read_catalogue(path):
    """Rows of one catalogue file, each marked with the catalogue it belongs to: a file with a
    'justification' column holds conforming variations (conforming.tsv), any other faults."""
    rows = read_tsv(path)
    for r in rows:
        for key in ("name", "rule", "family", "kind", "description"):
            if key not in r:
                raise UsageError(f"{path}: no column '{key}'")
        r["catalogue"] = "conforming" if "justification" in r else "faults"
    return rows


def load_catalogue(bundle, catalogue_arg):
    """(rows, paths): --catalogue faults (the default), conforming, both, or a TSV path."""
    arg = catalogue_arg or "faults"
    if arg in ("faults", "conforming", "both"):
        names = ["faults", "conforming"] if arg == "both" else [arg]
        paths = []
        for name in names:
            path = catalogue_file(bundle, name)
            if not path:
                raise UsageError(
                    f"no {CATALOGUES[name]} in {bundle}/faults/ or tools/faults/ (a bundle made "
                    "before it was listed in tools/bundle.py's FAULT_FILES: refresh the layer "
                    "with tools/faults/add_to_bundle.py, or pass --catalogue PATH)")
            paths.append(path)
    elif os.path.isfile(arg):
        paths = [arg]
    else:
        raise UsageError(f"--catalogue {arg}: neither faults, conforming, both nor a file")
    rows = [r for path in paths for r in read_catalogue(path)]
    return rows, ",".join(paths)


def other_catalogue_hint(bundle, chosen, unknown):
    """'; --catalogue conforming or both has X' when names unknown to the chosen catalogue are
    in the other one (a variation asked for under the default), else ''."""
    other = {"faults": "conforming", "conforming": "faults"}.get(chosen)
    path = other and catalogue_file(bundle, other)
    found = [r["name"] for r in read_catalogue(path) if r["name"] in unknown] if path else []
    return f"; --catalogue {other} or both has {', '.join(found)}" if found else ""


def is_variation(row):
    return row.get("catalogue") == "conforming"


def rules_of(row):
    """The rule ids a catalogue row names ('R27,R26' in a variation's rule column)."""
    return {r.strip() for r in row["rule"].split(",") if r.strip()}


def load_survivor_notes(bundle):
    path = first_existing(os.path.join(bundle, "faults", "survivors.tsv"),
                          os.path.join(REPO, "tools", "faults", "survivors.tsv"))
    if not path:
        return {}
    return {r["name"]: r["explanation"] for r in read_tsv(path) if "explanation" in r}


# ---------------------------------------------------------------------------------------------
# Running

def run_bundle(bundle, shim, out_dir, fault, tags, timeout_s, hard_stop=None, runner=None):
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
    cmd = [sys.executable, runner or os.path.join(bundle, "tools", "runner", "runner.py"),
           "--bundle", bundle, "--out", os.path.join(out_dir, "testlogs"), f"--tags={tags}",
           "--max-restarts", "1"]
    env[TOKEN_ENV] = TOKEN  # what finds a binary its runner could not stop (stop_everything)
    start = time.monotonic()
    cut = hard_stop is not None and start + timeout_s > hard_stop
    if cut:
        timeout_s = max(1.0, hard_stop - start)
    with open(os.path.join(out_dir, "runner.out"), "w") as log:
        with RUNNERS_LOCK:
            if STOPPING.is_set():  # a signal came: no new run
                return {"rc": None, "seconds": 0.0, "timed_out": False, "cut_by_budget": True,
                        "interrupted": True}
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            RUNNERS[proc.pid] = proc
        timed_out = False
        try:
            rc = _wait(proc, timeout_s)
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
        finally:
            if proc.poll() is not None:
                with RUNNERS_LOCK:
                    RUNNERS.pop(proc.pid, None)
    return {"rc": rc, "seconds": round(time.monotonic() - start, 1),
            "timed_out": timed_out and not cut, "cut_by_budget": timed_out and cut}


STOPPED_AT = []  # time.monotonic() of the first signal


def _wait(proc, timeout_s):
    """proc's exit status, waiting at most timeout_s (then TimeoutExpired). Once a signal came,
    a runner that has not stopped STOP_S after it is killed with its group."""
    end = time.monotonic() + timeout_s
    while True:
        try:
            return proc.wait(timeout=max(0.01, min(0.25, end - time.monotonic())))
        except subprocess.TimeoutExpired:
            if STOPPING.is_set():
                STOPPED_AT[:] = STOPPED_AT or [time.monotonic()]
                if time.monotonic() > STOPPED_AT[0] + STOP_S:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    return proc.wait()
            if time.monotonic() >= end:
                raise


def read_statuses(out_dir, rules=None):
    """{case id: (status, reason, message)} of a run folder; {} when nothing was written. With
    rules (a dict), also fills {case id: [rule ids]} from the cases' pagelock.rules."""
    from reports import results
    testlogs = os.path.join(out_dir, "testlogs")
    if not os.path.isdir(testlogs):
        return {}
    run = results.load_testlogs(testlogs)
    if rules is not None:
        for c in run.cases:
            value = c.properties.get("pagelock.rules") or ""
            rules[c.id] = [r.strip() for r in str(value).split(",") if r.strip()]
    return {c.id: (c.status, c.reason, c.message) for c in run.cases}


def read_changed(out_dir):
    """What a conforming variation changed in this run: its log's 'changed' lines."""
    path = os.path.join(out_dir, "fault.log")
    out = set()
    if os.path.exists(path):
        with open(path, errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 4 and parts[1] == "changed":
                    out.add(parts[3])
    return sorted(out)


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


def classify_variation(variation, runs, unstable):
    """Verdict of one conforming variation (a behaviour the documentation allows): FALSE_ALARM
    when a case that did not fail in the control fails, crashes, times out or goes missing in a
    run where the variation really changed an answer (a defect of the suite, not of the driver);
    CONFORMS when it changed answers and nothing failed; NOT_EXERCISED when it never changed an
    answer (it proves nothing; failures without a change are listed as unexplained); ERROR when
    the shim did not load it; NOT_RUN when the budget stopped it first. runs as for classify()."""
    name = variation["name"]
    alarms, unexplained, not_supported, too_slow = [], [], [], []
    changed, fired, errors = set(), set(), []
    inits_ok = cut = False
    for meta, statuses, (inits, fired_here, errs), control in runs:
        inits_ok = inits_ok or any(i == f"fault={name}" for i in inits)
        fired.update(fired_here)
        errors += errs
        cut = cut or meta.get("cut_by_budget", False)
        here = meta.get("changed") or []
        changed.update(here)
        for case, (before, _, _) in control.items():
            if case in unstable or (meta.get("cut_by_budget") and case not in statuses):
                continue
            after, reason, message = statuses.get(case, ("MISSING", "", ""))
            if meta["timed_out"] and case not in statuses:
                after = "TIMEOUT"
            if before not in FAILING and after in FAILING:
                entry = {"case": case, "target": meta.get("target", ""), "control": before,
                         "status": after, "message": (message or reason or "")[:300]}
                if after == "TIMEOUT" and meta["timed_out"] and variation["kind"] == "timing":
                    too_slow.append(entry)  # past the tool's limit, not the suite's
                else:
                    (alarms if here else unexplained).append(entry)
            elif before in GOOD and after == "NOT_SUPPORTED":
                not_supported.append({"case": case, "reason": (reason or "")[:200]})
    result = {"name": name, "rule": variation["rule"], "family": variation["family"],
              "kind": variation["kind"], "description": variation["description"],
              "justification": variation.get("justification", ""), "reached": sorted(fired),
              "changed": sorted(changed), "false_alarms": alarms,
              "failed_without_change": unexplained, "not_supported_cases": not_supported,
              "past_the_time_limit": too_slow, "runs": [r[0] for r in runs]}
    if not inits_ok:
        result["verdict"] = "ERROR"
        result["note"] = ("the shim never loaded this variation (" +
                          ("; ".join(sorted(set(errors))) or "no init line in its log") + ")")
    elif alarms:
        result["verdict"] = "FALSE_ALARM"
    elif cut:
        result["verdict"] = "NOT_RUN"
        result["note"] = "the time budget stopped its run before it finished"
    elif too_slow:
        result["verdict"] = "NOT_RUN"
        result["note"] = (f"{len(too_slow)} case(s) did not finish within the tool's time limit "
                          "(twice the usual for a timing variation): raise --target-timeout")
    elif not changed:
        result["verdict"] = "NOT_EXERCISED"
        result["note"] = ("it never changed an answer in the binaries it ran"
                          + (f"; {len(unexplained)} case(s) failed anyway (unstable?)"
                             if unexplained else ""))
    else:
        result["verdict"] = "CONFORMS"
        if not_supported:
            result["note"] = f"{len(not_supported)} case(s) turned NotSupported"
    return result


def false_alarm_summary(variations):
    """The false_alarms section of mutation.json: every case a conforming variation broke."""
    by = {v["name"]: [dict(c, variation=v["name"]) for c in v["false_alarms"]]
          for v in variations if v["false_alarms"]}
    counts = {k: sum(1 for v in variations if v["verdict"] == k)
              for k in ("FALSE_ALARM", "CONFORMS", "NOT_EXERCISED", "ERROR", "NOT_RUN")}
    count = sum(len(c) for c in by.values())
    return {"count": count, "variations_with_false_alarms": len(by), "variations": len(variations),
            "verdicts": counts, "by_variation": by, "line": false_alarm_line(count, len(by), counts,
                                                                            len(variations))}


def false_alarm_line(count, with_alarms, counts, total):
    if not total:
        return "not run"
    line = (f"{count} false alarm(s) from {with_alarms} of {total} conforming variations: "
            f"{counts['CONFORMS']} conform, {counts['NOT_EXERCISED']} not exercised")
    if counts["NOT_RUN"] or counts["ERROR"]:
        line += f", {counts['NOT_RUN']} not run, {counts['ERROR']} not loaded"
    return line


def score(results):
    counts = {v: 0 for v in ("KILLED", "HANDLED", "SURVIVED", "ERROR", "NOT_RUN")}
    for r in results:
        counts[r["verdict"]] += 1
    counted = counts["KILLED"] + counts["HANDLED"] + counts["SURVIVED"]
    pct = round(100.0 * (counts["KILLED"] + counts["HANDLED"]) / counted, 1) if counted else None
    return {**counts, "counted": counted, "total": len(results), "percent": pct,
            "run": len(results) - counts["NOT_RUN"]}


def score_line(s):
    """One line for a verdict page: the score, or why there is none or only part of one."""
    if not s or not s.get("total"):
        return "not run"
    caught = s["KILLED"] + s["HANDLED"]
    pct = "n/a" if s["percent"] is None else f"{s['percent']}%"
    line = (f"caught {caught} of {s['counted']} injected driver faults ({pct}): "
            f"{s['KILLED']} killed, {s['HANDLED']} handled, {s['SURVIVED']} survived")
    if s["NOT_RUN"]:
        line = f"partial: {s['run']} of {s['total']} faults run; " + line
    return line


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
           (f"<p><b>The suite caught {caught} of {s['counted']} injected driver faults ({esc(pct)})"
            f"</b>: {s['KILLED']} killed, {s['HANDLED']} handled as NotSupported, "
            f"{s['SURVIVED']} survived"
            + (f", {s['ERROR']} not loaded" if s["ERROR"] else "")
            + (f", {s['NOT_RUN']} not run (time budget)" if s["NOT_RUN"] else "")
            + (f"; false alarms: {doc['false_alarms']['count']}" if doc.get("variations") else "")
            + ".</p>") if s.get("total") else "<p>No injected faults were run.</p>",
           f"<p>Control under the shim: {esc(doc['control']['summary'])}. "
           f"Unstable cases ignored: {len(doc['control']['unstable'])}.</p>"]
    survivors = [r for r in doc["faults"] if r["verdict"] == "SURVIVED"]
    if survivors:
        out.append("<h3>Survivors</h3><table><tr><th>fault</th><th>rule</th><th>what the driver "
                   "did</th><th>why it was not caught</th><th>test binaries it ran</th></tr>")
        for r in survivors:
            why = r.get("explanation") or r.get("note") or "unexplained"
            ran = r.get("targets_run") or []
            ran_html = (f"<details><summary>{len(ran)}</summary><ul>"
                        + "".join(f"<li>{esc(t)}</li>" for t in ran) + "</ul></details>") if ran else "none"
            out.append(f"<tr class=\"SURVIVED\"><td>{esc(r['name'])}</td><td>{esc(r['rule'])}</td>"
                       f"<td>{esc(r['description'])}</td><td>{esc(why)}</td><td>{ran_html}</td></tr>")
        out.append("</table>")
    if doc["faults"]:
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
    if doc["faults"]:
        out.append("</table>")
    out += false_alarm_html(doc)
    out.append("</section>")
    return "\n".join(out) + "\n"


def false_alarm_html(doc):
    """The conforming variations: the false-alarm count, every false alarm, every variation."""
    variations = doc.get("variations") or []
    if not variations:
        return []
    fa = doc["false_alarms"]
    out = ["<h3>False alarms: conforming variations</h3>",
           f"<p><b>{esc(fa['line'])}</b>. A variation is a driver behaviour the documentation "
           "allows but this driver does not show; a case that fails under one is a defect of "
           "the suite, not of the driver.</p>"]
    if fa["count"]:
        out.append("<table><tr><th>variation</th><th>case</th><th>control &rarr; status</th>"
                   "<th>message</th></tr>")
        for name, cases in fa["by_variation"].items():
            for c in cases:
                out.append(f"<tr class=\"SURVIVED\"><td>{esc(name)}</td><td>{esc(c['case'])}</td>"
                           f"<td>{esc(c['control'])} &rarr; {esc(c['status'])}</td>"
                           f"<td>{esc(c['message'])}</td></tr>")
        out.append("</table>")
    out.append("<table><tr><th>variation</th><th>verdict</th><th>rules</th><th>what the driver "
               "does</th><th>why it conforms</th><th>binaries run</th></tr>")
    for v in variations:
        cls = {"FALSE_ALARM": "SURVIVED", "CONFORMS": "KILLED"}.get(v["verdict"], "NOT_RUN")
        out.append(f"<tr class=\"{cls}\"><td>{esc(v['name'])}</td><td>{esc(v['verdict'])}"
                   + (f"<br>{esc(v['note'])}" if v.get("note") else "") + "</td>"
                   f"<td>{esc(v['rule'])}</td><td>{esc(v['description'])}</td>"
                   f"<td>{esc(v.get('justification', ''))}</td>"
                   f"<td>{len(v.get('targets_run') or [])}</td></tr>")
    out.append("</table>")
    return out


def summary_line(statuses):
    counts = {}
    for status, _, _ in statuses.values():
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "no cases"


# ---------------------------------------------------------------------------------------------

def select_targets(manifest, tags_expr):
    """The runner's tag filter ('gpu,-stress': with gpu, without stress)."""
    want = [t for t in tags_expr.split(",") if t and not t.startswith("-")]
    drop = [t[1:] for t in tags_expr.split(",") if t.startswith("-")]
    out = []
    for t in manifest["targets"]:
        tags = set(t.get("tags", []))
        if want and not any(w in tags for w in want):
            continue
        if any(d in tags for d in drop):
            continue
        out.append(t)
    return out


def make_view(bundle, target, timeout_s, view_dir):
    """A one-target bundle (symlinks to the real one) whose time limit is timeout_s."""
    os.makedirs(view_dir, exist_ok=True)
    for name in os.listdir(bundle):
        if name != "manifest.json" and not os.path.exists(os.path.join(view_dir, name)):
            os.symlink(os.path.join(bundle, name), os.path.join(view_dir, name))
    with open(os.path.join(bundle, "manifest.json")) as f:
        manifest = json.load(f)
    manifest["targets"] = [dict(target, timeout_s=timeout_s)]
    with open(os.path.join(view_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f)


def safe(label):
    return label.strip("/").replace("/", "_").replace(":", "__")


def pick_sentinels(usable, census, dur, entries, count):
    """A cheap, broad set of targets every fault also runs: greedily the target that calls the
    most catalogue entry points not yet covered per second of its control, `count` at most."""
    chosen, covered = [], set()
    for _ in range(count):
        best, best_score = None, 0.0
        for label in sorted(usable):
            if label in chosen:
                continue
            new = (census.get(label, set()) & entries) - covered
            value = len(new) / (dur.get(label, 10.0) + 1.0)
            if new and value > best_score:
                best, best_score = label, value
        if not best:
            break
        chosen.append(best)
        covered |= census.get(best, set())
    return chosen


def family_of(label):
    """'hostalloc' for //suites/hostalloc:hostalloc_test; '' outside suites/."""
    m = re.match(r"//suites/([^:/]+)[:/]", label)
    return m.group(1) if m else ""


def select_for_fault(fault, usable, census, target_rules, dur, sentinels, select="rules"):
    """The targets one fault runs, as [(label, phase, why)] in the order they should run.
    reached: usable targets whose control called an entry point the fault changes (all usable
    ones when the catalogue names none): a binary that never calls them cannot behave otherwise.
    phase 1 'rule'/'family': reached targets with a case naming the fault's rule, or in the
    fault's family folder (suites/<family>), cheapest first; phase 2 'sentinel': the reached
    sentinels; phase 3 'sweep': every other reached target, run only while the fault is not
    caught and the budget lasts. select='all' puts every reached target in phase 1.
    A conforming variation runs phase 1 only (the binaries that test its rules or family: the
    quick check); select='all' runs it against every reached target."""
    entries = set(fault.get("entries", "").split())
    reached = [l for l in usable if not entries or census.get(l, set()) & entries]
    cheap = lambda labels: sorted(labels, key=lambda l: (dur.get(l, 10.0), l))  # noqa: E731
    if select == "all":
        return [(l, 1, "reached") for l in cheap(reached)]
    rules = rules_of(fault)
    plan = [(l, 1, "rule") for l in cheap(l for l in reached
                                          if rules & set(target_rules.get(l, ())))]
    plan += [(l, 1, "family") for l in cheap(l for l in reached
                                             if family_of(l) == fault["family"]
                                             and l not in {p[0] for p in plan})]
    if is_variation(fault):
        return plan
    seen = {p[0] for p in plan}
    plan += [(l, 2, "sentinel") for l in sentinels if l in reached and l not in seen]
    seen = {p[0] for p in plan}
    plan += [(l, 3, "sweep") for l in cheap(l for l in reached if l not in seen)]
    return plan


def main(argv=None):
    """Runs the mutation score; SIGINT, SIGTERM and SIGHUP stop it (exit 7, nothing left)."""
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        handlers = {s: signal.signal(s, _on_signal) for s in SIGNALS}
    STOPPING.clear()
    try:
        return _main(argv)
    except Interrupted as e:
        return stop_everything(str(e))
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)


def _main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bundle", help="bundle folder (tools/bundle.py)")
    p.add_argument("--out", required=True, help="folder for mutation.json, mutation.html, runs/")
    p.add_argument("--faults", default="all", help="comma-separated fault names (default all)")
    p.add_argument("--jobs", type=int, default=10, help="runs at once (default 10)")
    p.add_argument("--tags", default=DEFAULT_TAGS, help=f"runner tags (default {DEFAULT_TAGS})")
    p.add_argument("--exclude", default="", help="regex: leave out targets whose label matches")
    p.add_argument("--no-bandwidth", action="store_true",
                   help="do not run bandwidth targets (alone, after the pool) at all")
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
    args = p.parse_args(argv)
    t0 = time.monotonic()
    try:
        bundle = os.path.abspath(args.bundle)
        if not os.path.isfile(os.path.join(bundle, "manifest.json")):
            raise UsageError(f"{args.bundle}: not a bundle (no manifest.json)")
        if not os.path.isfile(os.path.join(bundle, "tools", "runner", "runner.py")):
            raise UsageError(f"{args.bundle}: no tools/runner/runner.py")
        if args.jobs < 1 or args.target_timeout <= 0 or args.budget <= 0:
            raise UsageError("--jobs, --target-timeout and --budget must be positive")
        with open(os.path.join(bundle, "manifest.json")) as f:
            manifest = json.load(f)
        out = os.path.abspath(args.out)
        os.makedirs(out, exist_ok=True)
        catalogue, catalogue_path = load_catalogue(bundle, args.catalogue)
        if args.faults != "all":
            wanted = [f for f in args.faults.split(",") if f]
            known = {f["name"]: f for f in catalogue}
            unknown = [f for f in wanted if f not in known]
            if unknown:
                hint = other_catalogue_hint(bundle, args.catalogue, unknown)
                raise UsageError(f"unknown fault(s): {', '.join(unknown)} (see {catalogue_path}{hint})")
            catalogue = [known[f] for f in wanted]
        if args.sentinels < 0:
            raise UsageError("--sentinels must be 0 or more")
        if args.reference and not os.path.isdir(args.reference):
            raise UsageError(f"--reference {args.reference}: no such folder")
        shim = find_shim(bundle, args.shim, out)
    except (UsageError, OSError, ValueError, KeyError) as e:
        print(f"mutation: {e}", file=sys.stderr)
        return 2
    sys.path.insert(0, bundle)
    notes = load_survivor_notes(bundle)
    reference = None
    if args.reference:
        args.control_runs = 1
        from reports import results as _results
        reference = {c.id: (c.status, c.reason, c.message)
                     for c in _results.load_testlogs(args.reference).cases}
    runs_dir = os.path.join(out, "runs")
    keep = (lambda t: not re.search(args.exclude, t["label"])) if args.exclude else (lambda t: True)
    pool_targets = [t for t in select_targets(manifest, args.tags) if keep(t)]
    serial_targets = [] if args.no_bandwidth else [
        t for t in select_targets(manifest, BANDWIDTH_TAGS) if t not in pool_targets and keep(t)]
    if not pool_targets:
        print(f"mutation: no target matches --tags={args.tags}", file=sys.stderr)
        return 2
    deadline = t0 + args.budget  # no run starts after this (less its expected length)
    hard_stop = deadline + GRACE_S  # every run is stopped by then

    def job(run_name, fault, target, cap, rules=None):
        d = os.path.join(runs_dir, run_name, safe(target["label"]))
        make_view(bundle, target, cap, os.path.join(d, "view"))
        # The runner restarts a binary after a crash or a timeout at most once here.
        meta = run_bundle(os.path.join(d, "view"), shim, d, fault, "", cap * 2 + 15, hard_stop,
                          runner=os.path.join(bundle, "tools", "runner", "runner.py"))
        meta.update(name=run_name, target=target["label"], cap_s=cap, changed=read_changed(d))
        return meta, read_statuses(d, rules), read_fault_log(d)

    def pool_run(jobs_list, workers):
        """Runs (key, fn, args, expected seconds) jobs, longest first, within the budget."""
        results, skipped = {}, []
        jobs_list = sorted(jobs_list, key=lambda j: -j[3])
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as ex:
            running = {}
            while jobs_list or running:
                while jobs_list and len(running) < workers:
                    key, fn, fargs, expected = jobs_list.pop(0)
                    if time.monotonic() + min(expected, 30) > deadline:
                        skipped.append(key)
                        continue
                    running[ex.submit(fn, *fargs)] = key
                if not running:
                    break
                done, _ = concurrent.futures.wait(list(running), return_when=concurrent.futures.FIRST_COMPLETED)
                for fut in done:
                    results[running.pop(fut)] = fut.result()
        return results, skipped

    by_label = {t["label"]: t for t in pool_targets + serial_targets}
    print(f"mutation: {len(catalogue)} faults, {len(pool_targets)} targets (+{len(serial_targets)} "
          f"run alone), shim {shim}, jobs {args.jobs}, select {args.select}", flush=True)
    # Controls under the shim in census mode (every entry wrapped, nothing changed, each entry a
    # binary calls logged): the census says which binaries a fault can reach. The second control
    # (or --reference, an earlier run of the same bundle) finds the unstable cases.
    names = ["control", "control_b"] if args.control_runs == 2 else ["control"]
    case_rules = {}
    ctl_jobs = [((c, t["label"]), job, (c, "census", t, args.target_timeout,
                                        case_rules if c == "control" else None), 30)
                for c in names for t in pool_targets]
    ctl, _ = pool_run(ctl_jobs, args.jobs)
    for c in names:
        for t in serial_targets:
            ctl[(c, t["label"])] = job(c, "census", t, args.target_timeout,
                                       case_rules if c == "control" else None)
    control, census, dur, unusable = {}, {}, {}, {}
    control_b = {}
    for (c, label), (meta, statuses, (inits, fired, errors)) in ctl.items():
        if errors:
            print(f"mutation: the shim reported: {'; '.join(sorted(set(errors)))}", file=sys.stderr)
            return 1
        if not inits:
            print(f"mutation: {label} never loaded the shim (no init line in its fault.log); "
                  "is LD_LIBRARY_PATH honoured?", file=sys.stderr)
            return 1
        (control if c == "control" else control_b).setdefault(label, {}).update(statuses)
        census.setdefault(label, set()).update(fired)
        dur[label] = max(dur.get(label, 0.0), meta["seconds"])
        bad = sorted({st for st, _, _ in statuses.values()} & {"TIMEOUT", "CRASH", "MISSING", "INFRA_ERROR"})
        if meta["timed_out"] or meta.get("cut_by_budget") or not statuses or bad:
            unusable[label] = ("the control " + ("hung" if meta["timed_out"] else
                               "had " + ",".join(bad) if bad else "produced no results"))
    all_control = {k: v for st in control.values() for k, v in st.items()}
    all_control_b = {k: v for st in control_b.values() for k, v in st.items()}
    if reference is not None:
        # An earlier run of the same binaries (qualify's own run): a case it has that differs
        # from the control is unstable; a case it lacks (another tier) is judged by the control.
        all_control_b = {k: reference.get(k, v) for k, v in all_control.items()}
    unstable = unstable_cases(all_control, all_control_b) if (all_control_b or reference is not None) \
        else unstable_cases(all_control)
    target_rules = {}
    for case, rules in case_rules.items():
        for t in by_label:
            if case.startswith(t[2:] + "/"):
                target_rules.setdefault(t, set()).update(rules)
    control_s = round(time.monotonic() - t0, 1)
    print(f"mutation: control {summary_line(all_control)} in {round(control_s)} s; "
          f"{len(unusable)} target(s) left out: {sorted(unusable)}", flush=True)

    def cap_for(label, name=None):
        # A fault that hangs a binary costs its whole limit: 3x the control's time + 10 s. A
        # timing variation slows the work on purpose, so it gets twice that: the runner's limit
        # is the tool's, not the suite's, and must not be what a slower driver trips over.
        cap = min(args.target_timeout, max(20.0, 3 * dur.get(label, 10) + 10))
        timing = name and is_variation(by_fault[name]) and by_fault[name]["kind"] == "timing"
        return 2 * cap if timing else cap

    usable = [t["label"] for t in pool_targets + serial_targets if t["label"] not in unusable]
    # Sentinels serve the faults only (variations run no phase 2): chosen from the faults'
    # entries, so --catalogue both scores the faults exactly as --catalogue faults does.
    all_entries = set().union(*[set(f.get("entries", "").split()) for f in catalogue
                                if not is_variation(f)])
    sentinels = pick_sentinels(usable, census, dur, all_entries, args.sentinels)
    plans = {f["name"]: select_for_fault(f, usable, census, target_rules, dur, sentinels, args.select)
             for f in catalogue}
    by_fault = {f["name"]: f for f in catalogue}
    serial = {t["label"] for t in serial_targets}
    done, skipped, not_needed = {}, [], {}
    killed = set()

    def caught(name, result):
        meta, statuses, fault_log = result  # noqa: F841 (fault runs only)
        r = classify(by_fault[name], [(meta, statuses, fault_log, control.get(meta["target"], {}))],
                     unstable)
        # HANDLED counts in the score as KILLED does: either ends the fault's search.
        return r["verdict"] in ("KILLED", "HANDLED")

    def schedule(items, workers):
        """items: [(fault, label, phase)]. Runs them within the budget: ready jobs first (a job
        is ready once the fault's earlier phases are done), lowest phase first, then cheapest
        first; a fault's remaining jobs are dropped once a run caught (killed or handled) it;
        sentinel jobs may start early when nothing is ready (never sweep jobs)."""
        todo = list(items)
        left = {}  # (fault, phase) -> jobs not finished
        for name, _, phase in todo:
            left[(name, phase)] = left.get((name, phase), 0) + 1

        def ready(item):
            name, _, phase = item
            return all(left.get((name, ph), 0) == 0 for ph in range(1, phase))

        def finish(item):
            left[(item[0], item[2])] -= 1

        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as ex:
            running = {}
            while todo or running:
                while todo and len(running) < workers:
                    for item in [i for i in todo if i[0] in killed]:
                        todo.remove(item)
                        finish(item)
                        not_needed.setdefault(item[0], []).append(item[1])
                    cands = [i for i in todo if ready(i)] or [i for i in todo if i[2] <= 2]
                    if not cands:
                        break
                    # Cheapest first: a fault caught by a cheap run skips its expensive ones
                    # (on the H200 data this halves the work against longest first).
                    item = min(cands, key=lambda i: (i[2], dur.get(i[1], 10.0), i[0], i[1]))
                    todo.remove(item)
                    if time.monotonic() + min(dur.get(item[1], 10.0), 30) > deadline:
                        skipped.append((item[0], item[1]))
                        finish(item)
                        continue
                    running[ex.submit(job, item[0], item[0], by_label[item[1]],
                                      cap_for(item[1], item[0]))] = item
                if not running:
                    break  # todo is empty too: a fault's lowest waiting phase is always ready
                finished, _ = concurrent.futures.wait(list(running),
                                                      return_when=concurrent.futures.FIRST_COMPLETED)
                for fut in finished:
                    item = running.pop(fut)
                    done[(item[0], item[1])] = fut.result()
                    finish(item)
                    # A variation runs all its targets: every false alarm is listed.
                    if not is_variation(by_fault[item[0]]) and caught(item[0], done[(item[0], item[1])]):
                        killed.add(item[0])

    pool_items = [(name, l, ph) for name, plan in plans.items() for l, ph, _ in plan if l not in serial]
    schedule(pool_items, args.jobs)
    # Bandwidth targets judge speed (WARN, never FAIL) and run alone: a variation meets them
    # only with --select all, which keeps the conforming check quick.
    serial_items = [(name, l, ph) for name, plan in plans.items() for l, ph, _ in plan if l in serial
                    and (args.select == "all" or not is_variation(by_fault[name]))]
    schedule(serial_items, 1)
    results, variations = [], []
    for f in catalogue:
        name = f["name"]
        plan = plans[name]
        labels = [l for l, _, _ in plan]
        runs = [done[(name, l)] + (control.get(l, {}),) for l in labels if (name, l) in done]
        if is_variation(f):
            variations.append(variation_result(f, plan, runs, done, skipped, unstable))
            continue
        missing = [l for l in labels if (name, l) in skipped]
        missing_selected = [l for l, ph, _ in plan if ph < 3 and (name, l) in skipped]
        base = {k: f[k] for k in ("name", "rule", "family", "kind", "description")}
        if not labels:
            r = dict(base, verdict="SURVIVED", caught_by=[], handled_cases=[], reached=[],
                     note="never reached: no test binary called an entry point it changes ("
                          + (f.get("entries") or "none") + ")")
        elif not runs:
            r = dict(base, verdict="NOT_RUN", caught_by=[], handled_cases=[], reached=[],
                     note="the time budget ran out")
        else:
            r = classify(f, runs, unstable)
            if missing_selected and r["verdict"] == "SURVIVED":
                r["verdict"] = "NOT_RUN"
                r["note"] = (f"the time budget ran out before {len(missing_selected)} of its "
                             "selected target(s)")
            elif missing and r["verdict"] == "SURVIVED":
                r["note"] = (r.get("note", "") + "; " if r.get("note") else "") + (
                    f"survived its {len([1 for _, ph, _ in plan if ph < 3])} selected target(s); "
                    f"the budget ran out before {len(missing)} other reached target(s): "
                    + ", ".join(missing))
        # Which targets this fault ran, and why each was chosen: a selection that missed the
        # test that would have caught it shows here, never as a hidden pass.
        r["targets"] = labels
        r["target_plan"] = [{"target": l, "phase": ph, "why": why,
                             "ran": (name, l) in done,
                             "outcome": ("ran" if (name, l) in done else
                                         "not needed (already caught)" if l in not_needed.get(name, [])
                                         else "budget ran out" if (name, l) in skipped else "not run")}
                            for l, ph, why in plan]
        r["targets_run"] = [l for l in labels if (name, l) in done]
        if r["verdict"] == "SURVIVED" and name in notes:
            r["explanation"] = notes[name]
        results.append(r)
    if not args.keep_testlogs:
        # What caught each fault is in mutation.json; hundreds of testlogs trees would be large.
        for dirpath, dirnames, _ in os.walk(runs_dir):
            for dname in list(dirnames):
                if dname in ("testlogs", "view"):
                    shutil.rmtree(os.path.join(dirpath, dname), ignore_errors=True)
                    dirnames.remove(dname)
    doc = {"score": dict(score(results), line=score_line(score(results))),
           "control": {"summary": summary_line(all_control),
                       "second_summary": summary_line(all_control_b),
                       "unstable": sorted(unstable),
                       "left_out_targets": unusable,
                       "census": {k: sorted(v) for k, v in census.items()},
                       "seconds": dur,
                       "runs": names, "reference": args.reference,
                       "wall_s": control_s,
                       "target_rules": {k: sorted(v) for k, v in target_rules.items()}},
           "config": {"bundle": bundle, "shim": shim, "catalogue": catalogue_path,
                      "tags": args.tags, "jobs": args.jobs, "target_timeout_s": args.target_timeout,
                      "budget_s": args.budget, "serial_targets": [t["label"] for t in serial_targets],
                      "select": args.select, "sentinels": sentinels,
                      # Targets the tags leave out (stress, exclusive: those run alone by
                      # contract, and timing or host-counter cases mean nothing next to a dozen
                      # parallel runs), named so that no one reads the score as covering them.
                      "left_out_by_tags": sorted(t["label"] for t in manifest["targets"]
                                                 if t not in pool_targets and t not in serial_targets),
                      "fault_runs": len(done),
                      "seconds": round(time.monotonic() - t0, 1)},
           "faults": results,
           "variations": variations,
           "false_alarms": false_alarm_summary(variations)}
    with open(os.path.join(out, "mutation.json"), "w") as fh:
        json.dump(doc, fh, indent=1)
    with open(os.path.join(out, "mutation.html"), "w") as fh:
        fh.write(html_section(doc))
    s = doc["score"]
    if results:
        print(f"mutation: caught {s['KILLED'] + s['HANDLED']} of {s['counted']} faults "
              f"({s['percent']}%): KILLED={s['KILLED']} HANDLED={s['HANDLED']} "
              f"SURVIVED={s['SURVIVED']} ERROR={s['ERROR']} NOT_RUN={s['NOT_RUN']} "
              f"in {doc['config']['seconds']} s")
    for r in results:
        if r["verdict"] in ("SURVIVED", "ERROR", "NOT_RUN"):
            print(f"  {r['verdict']} {r['name']} ({r['rule']}): "
                  f"{r.get('explanation') or r.get('note') or ''}")
    alarms = doc["false_alarms"]
    if variations:
        print(f"mutation: conforming variations: {alarms['line']} "
              f"(FALSE_ALARM={alarms['verdicts']['FALSE_ALARM']}) in {doc['config']['seconds']} s")
    for v in variations:
        if v["verdict"] != "CONFORMS":
            print(f"  {v['verdict']} {v['name']} ({v['rule']}): {v.get('note') or ''}")
        for c in v["false_alarms"]:
            print(f"    false alarm: {c['case']} {c['control']} -> {c['status']}: {c['message'][:160]}")
    print(f"mutation: wrote {out}/mutation.json and mutation.html")
    # A false alarm is a defect of the suite (it fails a conforming driver), not a driver fault:
    # exit 3 so that a CI step notices, while the mutation.json written above is complete.
    return 3 if alarms["count"] else 0


def variation_result(f, plan, runs, done, skipped, unstable):
    """One conforming variation's entry in mutation.json, with its targets like a fault's."""
    name = f["name"]
    labels = [l for l, _, _ in plan]
    base = {k: f.get(k, "") for k in ("name", "rule", "family", "kind", "description", "justification")}
    empty = dict(base, changed=[], false_alarms=[], failed_without_change=[],
                 not_supported_cases=[], past_the_time_limit=[], reached=[])
    if not labels:
        r = dict(empty, verdict="NOT_EXERCISED",
                 note="no binary it selects calls an entry point it changes ("
                      + (f.get("entries") or "none") + "); --select all tries every binary")
    elif not runs:
        r = dict(empty, verdict="NOT_RUN", note="the time budget ran out")
    else:
        r = classify_variation(f, runs, unstable)
        missing = [l for l in labels if (name, l) in skipped]
        if missing and r["verdict"] in ("CONFORMS", "NOT_EXERCISED"):
            r["verdict"] = "NOT_RUN"
            r["note"] = f"the time budget ran out before {len(missing)} of its {len(labels)} target(s)"
    r["targets"] = labels
    r["target_plan"] = [{"target": l, "phase": ph, "why": why, "ran": (name, l) in done}
                        for l, ph, why in plan]
    r["targets_run"] = [l for l in labels if (name, l) in done]
    return r


if __name__ == "__main__":
    sys.exit(main())
