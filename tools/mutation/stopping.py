"""Signals. Runners run in sessions of their own (so a terminal's Ctrl-C never reaches them, and
a runner can kill its binary's group), so the mutation tool must stop them itself: SIGTERM to
every runner, then, STOP_S later, SIGKILL to whatever of the run is still alive (found by the
token every process of the run inherits)."""

import os
import signal
import subprocess
import sys
import threading
import time
import uuid

from tools.runner import runner

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
STOP_S = 30  # how long the runners may take to stop their binaries after SIGTERM
TOKEN_ENV = "PAGELOCK_MUTATION_TOKEN"  # every process of this mutation run inherits it
TOKEN = uuid.uuid4().hex
STOPPING = threading.Event()
RUNNERS = {}  # pid -> Popen of every runner running now
# A runner is started and registered under it, never after STOPPING. Reentrant: the signal
# handler takes it in the main thread, which may hold it already (a serial run starting).
RUNNERS_LOCK = threading.RLock()
STOPPED_AT = []  # time.monotonic() of the first signal


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived."""


def signal_runners(sig):
    with RUNNERS_LOCK:
        procs = list(RUNNERS.values())
    for proc in procs:
        try:
            os.killpg(proc.pid, sig)  # the runner's own session: the runner and its helpers
        except OSError:
            pass


def on_signal(signum, frame):
    first = not STOPPING.is_set()
    STOPPING.set()
    signal_runners(signal.SIGTERM)  # a second SIGTERM makes a runner SIGKILL its binaries
    if first:
        raise Interrupted(signal.Signals(signum).name)


def kill_token_holders():
    """SIGKILLs every live process (but this one) whose environment carries this run's token:
    runners and the test binaries under the shim they started. Returns how many."""
    return runner.kill_env_holders(TOKEN_ENV, TOKEN)


def stop_everything(by):
    """After a signal: waits up to STOP_S for the runners (SIGTERMed by the handler) to stop
    their binaries and exit, then kills whatever of this run is still alive. Returns exit 7."""
    STOPPING.set()
    signal_runners(signal.SIGTERM)
    end = time.monotonic() + STOP_S
    while time.monotonic() < end:
        with RUNNERS_LOCK:
            alive = [p for p in RUNNERS.values() if p.poll() is None]
        if not alive:
            break
        time.sleep(0.05)
    signal_runners(signal.SIGKILL)
    for _ in range(3):  # a process forking while it is killed: look again
        if not kill_token_holders():
            break
        time.sleep(0.1)
    print(f"mutation: interrupted by {by}; every runner and test binary of the run was stopped; "
          "no mutation.json written", file=sys.stderr, flush=True)
    return 7


def wait(proc, timeout_s):
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
