"""Launching and killing: each binary in a session (process group) of its own with a time limit,
its output pumped to a sink; after it ends, whatever it left behind goes too: its process group,
any process carrying its environment token, and (the runner being a child subreaper) any
orphan that re-parented to the runner."""

import ctypes
import os
import random
import select
import signal
import subprocess
import threading
import time

from tools.runner import leftovers as live_records
from tools.runner.config import TOKEN_ENV, UsageError


class RunState:
    """What the signal handlers and the worker threads share with the run."""

    def __init__(self):
        self.signal = 0
        self.pgids = set()  # process groups of the running launches (one per running target)
        self.count = 0
        self.progress = None  # Progress of the run (None while listing outside a run)
        self.kernel = None  # KernelLog of the run
        self.subreaper = False  # orphans of the binaries re-parent to this process
        self.lock = threading.Lock()  # a launch's start and the sweep for orphans
        self.children = set()  # pids of the launches started and not yet waited for
        self.ended_leftovers = []  # [(pid, command)] a killed run on this --out left, ended
        self.kernel_outside = []  # RunnerResult.kernel_outside, as the run goes

    def kernel_at_run_level(self, label, lines, excuses):
        """Kernel lines read while no case ran (label: the target whose launch was running, or
        None): kept for runner.json and the run's health (kmsg.py)."""
        from tools.runner.kmsg import BETWEEN_CASES, RUN_LEVEL, counted_kind
        with self.lock:
            for line in lines:
                kind = counted_kind(line)
                why = None
                if kind:  # '(run)', or '<package:target>/(between cases)' when a target ran
                    why = excuses.why(RUN_LEVEL, line) or \
                        (excuses.why(f"{label[2:]}/{BETWEEN_CASES}", line) if label else None)
                self.kernel_outside.append({"line": line, "target": label, "kind": kind, "excused": why})

    def on_signal(self, signum, frame=None):
        """SIGTERM, SIGINT, SIGHUP: every running process group gets SIGTERM, or SIGKILL from
        the second signal on."""
        self.count += 1
        self.signal = self.signal or signum
        for pgid in list(self.pgids):
            killpg(pgid, signal.SIGTERM if self.count == 1 else signal.SIGKILL)


PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
PR_SET_PDEATHSIG = 1


def _libc_prctl():
    try:
        fn = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    return fn


_PRCTL = _libc_prctl()  # looked up once, before any fork: the child only calls it


def die_with_parent():
    """A preexec_fn for every process the runner (or qualify) starts: the child gets SIGKILL
    when the thread that started it ends (PR_SET_PDEATHSIG), so a runner killed with SIGKILL
    takes its test binaries with it (tools/runner/leftovers.py ends what they forked). Where
    the kernel refuses, the child raises before exec and Popen raises in the parent: the launch
    fails loudly, never runs without it. A parent that died before the call is caught too."""
    parent = os.getpid()
    prctl = _PRCTL

    def preexec():
        if prctl is None or prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:
            os._exit(128 + signal.SIGKILL)
    return preexec


def set_child_subreaper(on):
    """Makes this process a child subreaper (prctl), so a descendant whose parent dies
    re-parents to the runner instead of init: a daemon that did setsid and dropped the token
    from its environment is still found, killed and reaped. False where Linux refuses."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children_of(pid):
    """(pid, session id) of the processes whose parent is `pid`, from /proc."""
    out = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for p in entries:
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 3 and int(fields[1]) == pid:
            out.append((int(p), int(fields[3])))
    return out


def kill_orphans(state):
    """Kills and reaps the processes that re-parented to the runner (see set_child_subreaper):
    children in another session than the runner's that no running launch owns. Only when no
    launch is running, so nothing a running binary still uses is touched. Returns how many."""
    if not state.subreaper:
        return 0
    me, killed = os.getpid(), 0
    with state.lock:
        if state.children:
            return 0
        mine = os.getsid(0)
        dying = []
        for pid, sid in _children_of(me):
            if sid == mine:
                continue  # the caller's own children (qualify's), never the binaries'
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
                dying.append(pid)
            except OSError:
                continue
        _reap(dying)
    return killed


def _reap(pids, wait_s=2.0):
    """Reaps killed orphans, waiting at most wait_s: one stuck in the kernel (a driver call) is
    left as it is, and reaped by a later sweep."""
    deadline = time.monotonic() + wait_s
    while pids:
        for pid in list(pids):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                pids.remove(pid)
        if not pids or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def killpg(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_env_holders(name, value):
    """SIGKILLs every live process but this one whose environment holds name=value; returns how
    many. (A launch's leftovers carry its TOKEN_ENV; qualify finds what is left of its mutation
    run the same way.)"""
    needle = f"{name}={value}".encode()
    me = os.getpid()
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0
    killed = 0
    for pid in pids:
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    return killed


def _pump(fd, sink, stop):
    """Copies a pipe into sink until EOF, or until stop is set and nothing more is ready."""
    while True:
        try:
            ready, _, _ = select.select([fd], [], [], 0.2)
        except (OSError, ValueError):
            return
        if not ready:
            if stop.is_set():
                return
            continue
        try:
            data = os.read(fd, 1 << 16)
        except OSError:
            return
        if not data:
            return
        sink(data)


def launch(args, env, state, timeout_s, grace_s, sink, tick=None, cpu_out=None, on_start=None):
    """Runs one command in a new session, its output pumped into sink. Returns
    (returncode, timed_out, seconds, leftovers_killed); cpu_out (a dict), when given, receives
    the command's CPU time with its waited-for children: user_s and sys_s. on_start(pid), when
    given, learns the new session's id (the command's pid) as it starts."""
    token = f"{os.getpid()}-{time.monotonic_ns()}-{random.getrandbits(32):08x}"
    env = dict(env)
    env[TOKEN_ENV] = token
    rfd, wfd = os.pipe()
    start = time.monotonic()
    try:
        with state.lock:  # never while kill_orphans looks: the new child is a launch's
            proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=wfd,
                                    stderr=wfd, start_new_session=True, close_fds=True,
                                    preexec_fn=die_with_parent())
            state.children.add(proc.pid)
            live_records.note_started(proc.pid)
    except (OSError, subprocess.SubprocessError) as e:
        os.close(rfd)
        os.close(wfd)
        raise UsageError(f"cannot start {args[0]}: {getattr(e, 'strerror', None) or e}")
    os.close(wfd)
    if on_start is not None:
        on_start(proc.pid)
    stop = threading.Event()
    pump = threading.Thread(target=_pump, args=(rfd, sink, stop), daemon=True)
    pump.start()
    state.pgids.add(proc.pid)
    try:
        timed_out = _wait(proc, state, start, timeout_s, grace_s, tick, cpu_out)
    finally:
        state.pgids.discard(proc.pid)
        # Whatever the binary left in its group, or that escaped it carrying our token, goes too.
        killpg(proc.pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        with state.lock:
            state.children.discard(proc.pid)
        leftovers = kill_env_holders(TOKEN_ENV, token) + kill_orphans(state)
        stop.set()
        pump.join(timeout=10)
        os.close(rfd)
    return proc.returncode, timed_out, time.monotonic() - start, leftovers


def _poll_with_cpu(proc, cpu_out):
    """proc.poll(), reaping with wait4 so that the exit brings the process's CPU time: system
    time is where a driver spends context creation and pinning, which serialise across
    processes (docs/qualification.md)."""
    if proc.returncode is not None or cpu_out is None:
        return proc.poll()
    try:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    except ChildProcessError:
        return proc.poll()
    if pid == 0:
        return None
    proc.returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    cpu_out.update(user_s=round(usage.ru_utime, 3), sys_s=round(usage.ru_stime, 3))
    return proc.returncode


def _wait(proc, state, start, timeout_s, grace_s, tick, cpu_out=None):
    """Waits for proc; past its limit, or on a signal, SIGTERM to its group and SIGKILL after
    grace_s (or at a second signal). Returns whether it timed out."""
    timed_out = False
    term_at = None
    # Woken the moment the binary exits (a pidfd), not at the next 50 ms tick: the tick alone
    # cost about 25 ms per launch, two launches per target.
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while _poll_with_cpu(proc, cpu_out) is None:
            now = time.monotonic()
            if term_at is None and (state.signal or now - start > timeout_s):
                timed_out = not state.signal
                killpg(proc.pid, signal.SIGTERM)
                term_at = now
            elif term_at is not None and (now - term_at > grace_s or state.count > 1):
                killpg(proc.pid, signal.SIGKILL)
            if tick is not None:
                tick()
            if pidfd is None:
                time.sleep(0.05)
            else:
                try:
                    select.select([pidfd], [], [], 0.05)
                except InterruptedError:
                    pass
    finally:
        if pidfd is not None:
            os.close(pidfd)
    return timed_out


def describe_exit(returncode, timed_out, timeout_s, interrupted=0):
    if interrupted:
        return f"INTERRUPTED: the runner received {signame(interrupted)} and stopped the binary"
    if timed_out:
        return f"TIMEOUT: the binary was killed after its limit of {timeout_s:.0f} s"
    if returncode < 0:
        return f"CRASH: the binary was killed by {signame(-returncode)}"
    return f"CRASH: the binary exited with status {returncode} before finishing"


def signame(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"
