"""Driver-side evidence: the kernel log lines (NVRM, Xid, oom-kill, IOMMU) that appear while a
binary runs, attached to the case that was running."""

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


class KernelLog:
    """New kernel log records from /dev/kmsg (one record per read, 'prio,seq,usec,flags;text'),
    opened at the end, non-blocking. Where it cannot be opened (no permission, dmesg_restrict,
    a container), `status` says so and the report shows it."""

    def __init__(self, path=KMSG):
        self.path = path
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
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
