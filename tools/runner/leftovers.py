"""What a killed run leaves, found and ended by the next run on the same --out.

A SIGKILL cannot be handled: the runner (or qualify) that gets one stops at once, and its
time limits and process-group kills go with it. Two things keep its processes from outliving it:

- every process the runner starts gets SIGKILL when the thread that started it ends
  (PR_SET_PDEATHSIG, procs.die_with_parent), so the test binaries die with the run;
- every live run keeps a record in <out>/.pagelock-live/ (LiveRecord), an exclusive lock held
  for its life: its pid and start time, the pid and start time of each process it starts, and
  the name of a variable (PAGELOCK_LIVE_<random>=1) that it puts in its own environment, which
  everything it starts inherits. The next run on that --out (end_leftovers) takes the lock of each
  record whose owner died (the kernel drops a dead process's locks), and ends every process that
  carries that run's variable: the binaries and what they forked, in their group or a session of
  their own. A pid the record names is ended only if it carries the variable too (a record
  cannot make the next run kill a process that is not the dead run's), a record whose owner
  lives is never touched, and a link where the record folder should be is never followed.

A descendant that both left the binary's session and dropped its environment (a daemon that
execs with an empty environment) re-parents to the runner while it lives (a child subreaper) and
is killed there; once the runner is dead such a process cannot be told from any other.
"""

import fcntl
import json
import os
import secrets
import signal
import stat

LIVE_DIR = ".pagelock-live"  # under --out
LIVE_ENV_PREFIX = "PAGELOCK_LIVE_"
ACTIVE = []  # the LiveRecords of this process (qualify's and its in-process runner's)


def start_time(pid):
    """A process's start time in clock ticks after boot (/proc/<pid>/stat field 22), or None
    once it is gone: with the pid, what tells a process from a later one that got its pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _alive_same(pid, started):
    st = start_time(pid)
    if st is None or st != started:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


class LiveRecord:
    """This process's record under <out>/.pagelock-live/, locked while it lives. add() notes a
    process it started; close() (a clean end) removes the record."""

    def __init__(self, out):
        self.dir = _own_folder(out)
        me = os.getpid()
        self.var = LIVE_ENV_PREFIX + secrets.token_hex(6)
        self.path = os.path.join(self.dir, f"{me}-{start_time(me)}-{self.var[len(LIVE_ENV_PREFIX):]}.json")
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.environ[self.var] = "1"  # inherited by everything started from now on
        self._write({"owner": me, "start": start_time(me), "var": self.var})
        ACTIVE.append(self)

    def _write(self, entry):
        try:
            os.write(self.fd, (json.dumps(entry) + "\n").encode())
        except OSError:
            pass  # a full disk: the parent-death signal still ends the direct children

    def add(self, pid):
        self._write({"pid": pid, "start": start_time(pid)})

    def close(self):
        if self in ACTIVE:
            ACTIVE.remove(self)
        os.environ.pop(self.var, None)
        try:
            os.unlink(self.path)
        except OSError:
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass
        try:
            os.rmdir(self.dir)  # only when no other record is in it
        except OSError:
            pass


def _own_folder(out):
    """<out>/.pagelock-live as a folder of --out's own: a link or file in its place is removed,
    never followed (a record is never written, nor one read, outside --out)."""
    path = os.path.join(out, LIVE_DIR)
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(path)
    except FileNotFoundError:
        pass
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    return path


def note_started(pid):
    """Adds a process this one started to every live record of this process."""
    for rec in list(ACTIVE):
        rec.add(pid)


def end_leftovers(out):
    """Ends what runs that died left in <out>: for each record whose lock is free (its owner is
    dead), the processes it names that are still the same, and every process carrying its
    variable. Returns [(pid, command)] of the processes ended; removes those records."""
    folder = os.path.join(out, LIVE_DIR)
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return []  # a link or a file where the folder should be: never followed
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    ended = []
    for name in names:
        path = os.path.join(folder, name)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                continue
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its owner lives: a run going on beside this one
            ended += _end_record(fd)
            try:
                os.unlink(path)
            except OSError:
                pass
        finally:
            os.close(fd)
    try:
        os.rmdir(folder)
    except OSError:
        pass
    return ended


def _end_record(fd):
    data = b""
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    pids, var = [], None
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("var"), str) and entry["var"].startswith(LIVE_ENV_PREFIX):
            var = entry["var"]
        if isinstance(entry.get("pid"), int) and isinstance(entry.get("start"), int):
            pids.append((entry["pid"], entry["start"]))
    # Only the dead run's own processes: each carries its variable (everything it started
    # inherited it), whatever pid a record names. Never this process's own family.
    if not var or var in os.environ:
        return []
    ended = []
    me = os.getpid()
    needle = f"{var}=1".encode()
    named = {pid for pid, started in pids if _alive_same(pid, started)}
    for p in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        if p == me:
            continue
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if needle in env:
            ended.append((p, _command(p) + (" (named by the record)" if p in named else "")))
            _kill(p)
    return ended


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _command(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()[:200]
    except OSError:
        return "?"
