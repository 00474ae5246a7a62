"""Progress: `[k/N] elapsed target: running case` redrawn in place on a terminal, one plain line
per target elsewhere, a notice when a binary passes half its time limit. It follows each running
target's journal (the case that is running) and the kernel log (lines go to that case)."""

import json
import os
import re
import sys
import threading
import time

from tools.runner.config import LIST_MAX_LINE
from tools.runner.journals import shorten_event
from tools.runner.summary import printable


def _clock(seconds):
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Slot:
    """One running target as Progress follows it: its journal, running case and launch."""

    def __init__(self, label):
        self.label = label
        self.case, self.case_since = None, None
        self.journal, self.journal_pos, self.journal_buf = None, 0, b""
        self.journal_long = None  # the head of a journal line too long to hold, until its end
        self.launch_start, self.limit, self.noticed = None, None, False
        self.kernel_lines = {}  # case running when the lines were read ('' for none) -> [line]
        # Whose a kernel line is, where the line says (an Xid's "pid=N, name=COMM"): the session
        # of the running launch, and its binary's command name as the kernel cuts it (15 bytes).
        self.sid, self.comm = None, None

    def owns(self, pid, comm):
        """Whether the process a kernel line names is this target's: in its launch's session,
        or (the process gone by now) of its binary's name."""
        if pid is not None and self.sid is not None:
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    return int(f.read().rsplit(b")", 1)[1].split()[3]) == self.sid
            except (OSError, IndexError, ValueError):
                pass
        return comm is not None and comm == self.comm

    def read_journal(self, now):
        """The case that is running: the last 'start' event without its 'end' (new lines only)."""
        if not self.journal:
            return
        try:
            with open(self.journal, "rb") as f:
                f.seek(self.journal_pos)
                data = f.read(1 << 20)
        except OSError:
            return
        self.journal_pos += len(data)
        lines = []
        if self.journal_long is not None:  # inside a line too long to hold: its head is kept
            nl = data.find(b"\n")
            if nl < 0:
                return
            lines.append(shorten_event(self.journal_long, b"", 0).encode())
            self.journal_long, data = None, data[nl + 1:]
        self.journal_buf += data
        *more, self.journal_buf = self.journal_buf.split(b"\n")
        lines += more
        if len(self.journal_buf) > LIST_MAX_LINE:
            self.journal_long, self.journal_buf = self.journal_buf[:4096], b""
        for raw in lines:
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(ev, dict):
                continue
            if ev.get("event") == "start":
                self.case, self.case_since = str(ev.get("case", "")), now
            elif ev.get("event") == "end" and ev.get("case") == self.case:
                self.case = None


_NAMES_PID = re.compile(r"\bpid=(\d+)")
_NAMES_COMM = re.compile(r"\bname=([^,\s]+)")


def _owners(line, slots):
    """The running targets a kernel line belongs to: the one whose process it names (an Xid
    says "pid=N, name=COMM"), none of them when it names another process, every one when it
    names none (an AER or IOMMU line cannot say whose it was)."""
    pid, comm = _NAMES_PID.search(line), _NAMES_COMM.search(line)
    if pid is None and comm is None:
        return slots
    pid = int(pid.group(1)) if pid else None
    comm = comm.group(1) if comm else None
    return [s for s in slots if s.owns(pid, comm)]


class Progress:
    """What the runner prints while it works. On a terminal one status line is redrawn about
    once a second: `[k/N] 0:12:03 //suites/a:a_test: Suite.Case (41 s)`. Elsewhere (CI logs,
    pipes) one plain line per target, when it starts and when it ends. Both print a notice once
    per launch when a binary passes half its time limit, naming the case that is running.

    Serial (jobs=1), k is the number of the target that runs. With jobs > 1, several targets
    run at once: k counts the finished targets, and the terminal line names the running targets
    (up to 3, then "+n"). Worker threads call launch/tick/end_launch with their label; the
    methods are thread-safe."""

    SHOWN_RUNNING = 3

    def __init__(self, total, stream=None, tty=None, clock=time.monotonic, jobs=1, columns=None):
        self.total = total
        self.columns = columns  # the terminal's width; None: asked at every redraw
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.clock = clock
        self.parallel = jobs > 1
        self.started = clock()
        self.k = 0
        self.label = ""  # the target started last (the default label of the methods below)
        self.slots = {}  # label -> Slot, in the order the targets started
        self.last_draw = 0.0
        self.drawn = False
        self.kernel = None  # KernelLog, polled with the journals
        self.kernel_outside = []  # kernel lines read while no target ran
        self.last_poll = float("-inf")
        self.lock = threading.RLock()

    def _write(self, text):
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def line(self, msg):
        """A line that stays (a target ended, a notice); the status line is redrawn after it."""
        with self.lock:
            if self.tty and self.drawn:
                self._write("\r\033[K")
                self.drawn = False
            self._write(f"runner: {printable(msg)}\n")

    def prefix(self):
        return f"[{self.k}/{self.total}] {_clock(self.clock() - self.started)}"

    def target_started(self, label):
        with self.lock:
            if not self.parallel:
                self.k += 1
                self.slots.clear()
            self.label = label
            self.slots[label] = Slot(label)
            if not self.tty:
                self.line(f"{self.prefix()} {label} ...")
            else:
                self.tick(force=True)

    def target_ended(self, text, label=None):
        with self.lock:
            if self.parallel:
                self.k += 1
                self.slots.pop(label or self.label, None)
            self.line(f"{self.prefix()} {text}")
            if self.parallel and self.tty and self.slots:
                self.tick(force=True)

    def _slot(self, label):
        label = label or self.label
        slot = self.slots.get(label)
        if slot is None:  # launch() without target_started(): follow it all the same
            slot = self.slots[label] = Slot(label)
        return slot

    def launch(self, journal, limit_s, label=None, binary=None):
        with self.lock:
            s = self._slot(label)
            s.journal, s.journal_pos, s.journal_buf, s.journal_long = journal, 0, b"", None
            s.launch_start, s.limit, s.noticed = self.clock(), limit_s, False
            s.case = None
            s.kernel_lines = {}
            s.sid = None
            s.comm = os.path.basename(binary)[:15] if binary else None

    def session(self, label, pid):
        """The launch of `label` started as session `pid`: its kernel lines can be told apart."""
        with self.lock:
            self._slot(label).sid = pid

    def _poll_kernel(self):
        """New kernel lines go to the case running in every started target (a line read while
        no target runs, to kernel_outside). With several targets running, each line says so
        (the driver line cannot say whose it was)."""
        if self.kernel is None:
            return
        lines = self.kernel.read_new()
        if not lines:
            return
        slots = list(self.slots.values())
        if not slots:
            self.kernel_outside.extend(lines)
            return
        for line in lines:
            owners = _owners(line, slots)
            if not owners:  # a process the line names that no running target has: the machine's
                self.kernel_outside.append(line + " (pagelock runner: no running target's process)")
                continue
            if len(owners) > 1:
                names = ", ".join(s.label for s in owners[:self.SHOWN_RUNNING]) + \
                    (f" +{len(owners) - self.SHOWN_RUNNING}" if len(owners) > self.SHOWN_RUNNING else "")
                line += f" (pagelock runner: {len(owners)} targets were running: {names})"
            for s in owners:
                s.kernel_lines.setdefault(s.case or "", []).append(line)

    def end_launch(self, label=None):
        """After the binary ended: the last journal lines and kernel records. Returns
        {case running when read ('' for none): [kernel lines]}; the case that was running when
        the binary died keeps the lines read after it."""
        with self.lock:
            s = self._slot(label)
            s.read_journal(self.clock())
            self._poll_kernel()
            s.launch_start = None
            return s.kernel_lines

    POLL_S = 0.05  # the journals and the kernel log: a line goes to the case running then

    def poll(self):
        """Reads every running target's journal, then the kernel log: a kernel line goes to the
        case that was running when it was read, at most POLL_S after it was logged."""
        with self.lock:
            now = self.clock()
            self.last_poll = now
            for s in list(self.slots.values()):
                s.read_journal(now)
            self._poll_kernel()

    def tick(self, force=False):
        """Called by the launch loops: follows the journals and the kernel log (every POLL_S
        while the kernel log is followed), prints the half-limit notices, and on a terminal
        redraws the status line (at most once a second)."""
        with self.lock:
            now = self.clock()
            if self.kernel is not None and now - self.last_poll >= self.POLL_S:
                self.poll()
            if not force and now - self.last_draw < 1.0:
                return
            self.last_draw = now
            slots = list(self.slots.values())
            for s in slots:
                s.read_journal(now)
            self._poll_kernel()
            for s in slots:
                if s.launch_start is not None and s.limit and not s.noticed and \
                        now - s.launch_start > s.limit / 2:
                    s.noticed = True
                    what = (f"case {s.case} has run {now - s.case_since:.0f} s" if s.case
                            else "no case is running")
                    self.line(f"notice: {s.label} passed half its time limit "
                              f"({now - s.launch_start:.0f} of {s.limit:.0f} s); {what}")
            if self.tty:
                # One column less than the terminal is wide: a line that wraps cannot be
                # redrawn. Too long, the labels lose their package first, then the end is cut.
                width = self.width()
                for short in (False, True):
                    text = self._status_text(slots, now, short)
                    if len(text) <= width - 1:
                        break
                else:
                    text = text[:max(1, width - 2)] + "\u2026"
                self._write("\r\033[K" + text)
                self.drawn = True

    def _status_text(self, slots, now, short_labels):
        def name(label):
            return "\u2026" + label[label.index(":"):] if short_labels and ":" in label else label
        shown = [f"{name(s.label)}: {s.case} ({now - s.case_since:.0f} s)" if s.case
                 else name(s.label) for s in slots[:self.SHOWN_RUNNING]]
        more = len(slots) - len(shown)
        return printable(f"{self.prefix()} {', '.join(shown)}" + (f" +{more}" if more > 0 else ""))

    def width(self):
        """The terminal's width now (it may have been resized), 80 where it cannot be read."""
        if self.columns:
            return self.columns
        try:
            return max(20, os.get_terminal_size(self.stream.fileno()).columns)
        except (OSError, ValueError, AttributeError):
            return 80

    def done(self):
        with self.lock:
            if self.tty and self.drawn:
                self._write("\r\033[K")
                self.drawn = False


class Quiet(Progress):
    """RunConfig(quiet=True): follows the journals and the kernel log, prints nothing."""

    def __init__(self, jobs=1):
        super().__init__(0, stream=sys.stderr, tty=False, jobs=jobs)

    def _write(self, text):
        pass
