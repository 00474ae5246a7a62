"""Running a test binary of the bundle under the fault shim: a one-target view of the bundle,
the bundle's runner in a session of its own, and what the run left behind (the cases' statuses,
the shim's log)."""

import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from reports import model
from reports import testlogs as reader
from tools.mutation import stopping
from tools.runner import procs


def run_bundle(bundle, shim, out_dir, fault, tags, timeout_s, hard_stop=None, runner=None, extra_env=None):
    """One runner invocation under the shim. Returns a dict with rc, seconds, timed_out and
    cut_by_budget (stopped at hard_stop, a time.monotonic() value, rather than by its own
    limit: that says nothing about the fault). extra_env: a variation's own environment."""
    os.makedirs(out_dir, exist_ok=True)
    env = shim_env(shim, out_dir, fault, extra_env)
    cmd = [sys.executable, runner or os.path.join(bundle, "tools", "runner", "runner.py"),
           "--bundle", bundle, "--out", os.path.join(out_dir, "testlogs"), f"--tags={tags}",
           "--max-restarts", "1"]
    start = time.monotonic()
    cut = hard_stop is not None and start + timeout_s > hard_stop
    if cut:
        timeout_s = max(1.0, hard_stop - start)
    with open(os.path.join(out_dir, "runner.out"), "w", encoding="utf-8") as log:
        with stopping.RUNNERS_LOCK:
            if stopping.STOPPING.is_set():  # a signal came: no new run
                return {"rc": None, "seconds": 0.0, "timed_out": False, "cut_by_budget": True,
                        "interrupted": True}
            # A mutation.py killed with SIGKILL takes its runners with it (they their binaries).
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=procs.die_with_parent())
            stopping.RUNNERS[proc.pid] = proc
        timed_out = False
        try:
            rc = stopping.wait(proc, timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            rc = _stop_runner(proc)
        finally:
            if proc.poll() is not None:
                with stopping.RUNNERS_LOCK:
                    stopping.RUNNERS.pop(proc.pid, None)
    return {"rc": rc, "seconds": round(time.monotonic() - start, 1),
            "timed_out": timed_out and not cut, "cut_by_budget": timed_out and cut}


def shim_env(shim, out_dir, fault, extra_env=None):
    """The environment of a run under the shim (libcuda.so.1 first in LD_LIBRARY_PATH), with a
    conforming variation's own settings (conforming.tsv's env column) on top."""
    env = dict(os.environ)
    env.update(extra_env or {})
    env["LD_LIBRARY_PATH"] = shim + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["PAGELOCK_FAULT_LOG"] = os.path.join(out_dir, "fault.log")
    env["PAGELOCK_FAULT_LOG_REQUESTS"] = "0"  # init, fired and error lines are enough here
    if fault:
        env["PAGELOCK_FAULT"] = fault
    else:
        env.pop("PAGELOCK_FAULT", None)
    env[stopping.TOKEN_ENV] = stopping.TOKEN  # what finds a binary its runner could not stop
    return env


def _stop_runner(proc):
    """A runner past its limit. It starts each test binary in a session of its own, so killing
    the runner's group would orphan the binary (seen on the H200: a hung binary outlived the
    mutation run). SIGTERM lets the runner kill its test and write what finished; SIGKILL of
    the group follows only if it does not exit in time. Returns its exit status."""
    try:
        proc.send_signal(signal.SIGTERM)
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return proc.wait()


def statuses_of(run):
    """{case id: (status, reason, message)} of a model.Run, statuses as plain strings."""
    return {c.id: (str(c.status), c.reason, c.message) for c in run.cases}


def read_statuses(out_dir, rules=None):
    """{case id: (status, reason, message)} of a run folder; {} when nothing was written. With
    rules (a dict), also fills {case id: [rule ids]} from the cases' pagelock.rules."""
    testlogs = os.path.join(out_dir, "testlogs")
    if not os.path.isdir(testlogs):
        return {}
    run = reader.load_testlogs(testlogs)
    if rules is not None:
        for c in run.cases:
            rules[c.id] = list(c.rules)
    return statuses_of(run)


def read_reference(testlogs):
    """The statuses of an earlier run of the same bundle (--reference, e.g. qualify's)."""
    return statuses_of(reader.load_testlogs(testlogs))


def read_changed(out_dir):
    """What a conforming variation changed in this run: its log's 'changed' lines."""
    path = os.path.join(out_dir, "fault.log")
    out = set()
    if os.path.exists(path):
        with open(path, errors="replace", encoding="utf-8") as f:
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
        with open(path, errors="replace", encoding="utf-8") as f:
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


def make_view(bundle, target, timeout_s, view_dir):
    """A one-target bundle (symlinks to the real one) whose time limit is timeout_s."""
    os.makedirs(view_dir, exist_ok=True)
    for name in os.listdir(bundle):
        if name != "manifest.json" and not os.path.exists(os.path.join(view_dir, name)):
            os.symlink(os.path.join(bundle, name), os.path.join(view_dir, name))
    with open(os.path.join(bundle, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    manifest["targets"] = [dict(target, timeout_s=timeout_s)]
    with open(os.path.join(view_dir, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f)


def safe(label):
    return label.strip("/").replace("/", "_").replace(":", "__")


def drop_testlogs(runs_dir):
    """What caught each fault is in mutation.json; hundreds of testlogs trees would be large."""
    for dirpath, dirnames, _ in os.walk(runs_dir):
        for dname in list(dirnames):
            if dname in ("testlogs", "view"):
                shutil.rmtree(os.path.join(dirpath, dname), ignore_errors=True)
                dirnames.remove(dname)


class Runs:
    """The runs of one mutation run: each a target of the bundle under the shim, in
    runs_dir/<run name>/<target>/, none started after deadline, every one stopped by hard_stop."""

    def __init__(self, bundle, shim, runs_dir, deadline, hard_stop):
        self.bundle, self.shim, self.runs_dir = bundle, shim, runs_dir
        self.deadline, self.hard_stop = deadline, hard_stop

    def job(self, run_name, fault, target, cap, rules=None, extra_env=None):
        """(meta, statuses, fault log) of target run under fault with time limit cap (and a
        variation's environment, extra_env)."""
        d = os.path.join(self.runs_dir, run_name, safe(target["label"]))
        make_view(self.bundle, target, cap, os.path.join(d, "view"))
        # The runner restarts a binary after a crash or a timeout at most once here.
        meta = run_bundle(os.path.join(d, "view"), self.shim, d, fault, "", cap * 2 + 15, self.hard_stop,
                          runner=os.path.join(self.bundle, "tools", "runner", "runner.py"), extra_env=extra_env)
        meta.update(name=run_name, target=target["label"], cap_s=cap, changed=read_changed(d))
        return meta, read_statuses(d, rules), read_fault_log(d)

    def pool(self, jobs_list, workers):
        """Runs (key, fn, args, expected seconds) jobs, longest first, within the budget."""
        results, skipped = {}, []
        jobs_list = sorted(jobs_list, key=lambda j: -j[3])
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as ex:
            running = {}
            while jobs_list or running:
                while jobs_list and len(running) < workers:
                    key, fn, fargs, expected = jobs_list.pop(0)
                    if time.monotonic() + min(expected, 30) > self.deadline:
                        skipped.append(key)
                        continue
                    running[ex.submit(fn, *fargs)] = key
                if not running:
                    break
                done, _ = concurrent.futures.wait(list(running), return_when=concurrent.futures.FIRST_COMPLETED)
                for fut in done:
                    results[running.pop(fut)] = fut.result()
        return results, skipped
