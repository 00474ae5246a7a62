"""Driver-side evidence: the kernel log lines (NVRM, Xid, oom-kill, IOMMU, AER) that appear while
a binary runs, attached to the case that was running; and the kernel's word on the verdict.

The kernel's word fails the case (DCGM's rule: a plugin fails on an Xid raised while it ran). A
line of one of the COUNTED kinds logged while a case runs FAILs that case, by the conflict rule
of reports/model.py (the binary's PASS and the kernel's FAIL: the worse stands, named); one logged
while no case runs goes to the run level and fails the run's health (docs/qualification.md).
Every other matching line (an oom-kill, which the stress tier provokes and its cases judge;
an informational NVRM line; an IOMMU or PCIe message that reports no fault) only attaches. A
known benign line is excused by a `kernel` expectation entry (pattern=, bug=): still shown,
with the entry, failing nothing (RunConfig.kernel_excused)."""

import fnmatch
import os
import re
import stat

from tools.runner.config import KMSG
from tools.runner.manifest import file_kind

# What a GPU driver qualification engineer looks for (DCGM's Xid categories, oom-kill, IOMMU).
KERNEL_PATTERN = re.compile(
    r"NVRM|Xid|nvidia|oom[-_ ]kill|out of memory|killed process|oom_reaper|iommu|DMAR|AMD-Vi|"
    r"page allocation failure|BUG:|general protection|soft lockup|hung_task|PCIe Bus Error|AER:",
    re.IGNORECASE)
KERNEL_LOG_MAX_LINES = 200  # per case

# The kinds of line that fail (the first that matches names it). An NVRM line counts when it
# reports a fault; an IOMMU line when it reports a fault or an event (DMAR, AMD-Vi, SMMU); every
# PCIe AER line counts (corrected errors too: a benign one is excused by an entry).
COUNTED = (
    ("Xid", re.compile(r"\bXid\b")),
    ("NVRM error", re.compile(r"NVRM:.*\b(error|errors|fail|failed|failure|fault|fallen off the bus|"
                              r"lost|timeout|timed out|crash|hung|hang|not responding|abort|"
                              r"unable|invalid|BUG)\b", re.IGNORECASE)),
    ("IOMMU fault", re.compile(r"(DMAR:.*\b(fault|faults|DRHD)\b|AMD-Vi:.*\b(Event logged|IO_PAGE_FAULT|"
                               r"ILLEGAL_DEV_TABLE_ENTRY|INVALID_DEVICE_REQUEST|COMMAND_HARDWARE_ERROR)\b|"
                               r"\biommu\b.*\bfault\b|arm-smmu.*\bfault\b|Unhandled context fault)",
                               re.IGNORECASE)),
    ("PCIe AER", re.compile(r"\bAER:|PCIe Bus Error", re.IGNORECASE)),
)
# The case ids a `kernel` entry's glob is matched against for a line logged while no case ran:
# '<package:target>/(between cases)' while that target's binary ran (so an entry for a target's
# cases, 'suites/a:a_test/*', covers its lines between cases too), and '(run)' in any case.
RUN_LEVEL = "(run)"
BETWEEN_CASES = "(between cases)"


def counted_kind(line):
    """The kind of fault a kernel log line reports (COUNTED), or None: it only attaches."""
    for kind, rx in COUNTED:
        if rx.search(line):
            return kind
    return None


class Excuses:
    """The `kernel` expectation entries (RunConfig.kernel_excused: [{"case", "line", "why"}]):
    why a line logged while `case_id` ran (RUN_LEVEL: no case) is excused, or None."""

    def __init__(self, entries):
        self.entries = []
        for e in entries or ():
            line = fnmatch.translate(e.get("line", "")).replace("_", "[_ ]")
            self.entries.append((re.compile(fnmatch.translate(e.get("case", "*"))),
                                 re.compile(line), e.get("why", "a kernel expectation")))

    def why(self, case_id, line):
        text = line.split("] ", 1)[1] if line.startswith("[") and "] " in line else line
        for case_rx, line_rx, why in self.entries:
            if case_rx.match(case_id) and (line_rx.match(text) or line_rx.match(line)):
                return why
        return None


class KernelLog:
    """New kernel log records from /dev/kmsg (one record per read, 'prio,seq,usec,flags;text'),
    opened at the end, non-blocking. Where it cannot be opened (no permission, dmesg_restrict,
    a container), `status` says so and the report shows it."""

    def __init__(self, path=KMSG):
        self.path = path
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            if not stat.S_ISFIFO(os.fstat(self.fd).st_mode):  # a FIFO has no end to seek to
                os.lseek(self.fd, 0, os.SEEK_END)
            self.status = f"read from {path}"
        except OSError as e:
            self.fd = None
            self.status = f"not readable ({path}: {e.strerror or e})"

    @property
    def readable(self):
        return self.fd is not None

    def read_new(self):
        """The new records that match KERNEL_PATTERN, as '[seconds] text' lines."""
        if self.fd is None:
            return []
        out = []
        for _ in range(10000):
            try:
                data = os.read(self.fd, 8192)
            except BlockingIOError:
                break
            except OSError as e:
                if e.errno == 32:  # EPIPE: records were overwritten before we read them
                    out.append("[?] (pagelock runner: kernel log records were lost: the ring "
                               "buffer wrapped)")
                    continue
                break
            if not data:
                break
            out += _matching_records(data)
        return out

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _matching_records(data):
    out = []
    for rec in data.decode("utf-8", "replace").splitlines():
        head, sep, text = rec.partition(";")
        if not sep or rec.startswith(" "):
            continue  # continuation lines ('KEY=value') carry no message
        fields = head.split(",")
        try:
            ts = f"{int(fields[2]) / 1e6:.6f}"
        except (IndexError, ValueError):
            ts = "?"
        if KERNEL_PATTERN.search(text):
            out.append(f"[{ts}] {text}")
    return out


def check_kernel_log(path):
    """None, or why the kernel log cannot be followed: it must be the kernel's log device,
    /dev/null, a regular file or a FIFO (read without blocking). /dev/zero or another device
    would be read without end. A path that cannot be opened is not refused: the report says
    it was not readable."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return None
    if stat.S_ISCHR(st.st_mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) in ((1, 11), (1, 3)):
        return None  # /dev/kmsg, /dev/null
    return f"--kernel-log {path}: refused: {file_kind(st.st_mode)} that is not /dev/kmsg"
