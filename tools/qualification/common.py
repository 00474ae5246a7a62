"""What every part of qualify shares: the checkout, the human lines (stderr under --json) and
the --json summary, and the two ways qualify ends early (Stop, Interrupted)."""

import errno
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# --json: the human lines (and the runner's progress) go to stderr, stdout carries one JSON object.
HUMAN = {"stream": None, "json": False}
SUMMARY = {}  # what --json prints: filled in as the run goes
# The first signal's name once one arrived: qualify is then finishing (killing what runs, marking
# the run folder INTERRUPTED), and a second signal must not cut that short.
INTERRUPT = {"by": None}


def say(msg):
    print(f"qualify: {msg}", file=HUMAN["stream"] or sys.stdout, flush=True)


class Stop(Exception):
    """Ends qualify early with an exit code and a message (no traceback)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Interrupted(BaseException):
    """SIGTERM, SIGINT or SIGHUP arrived."""


def interrupted(by):
    """The Interrupted to raise for a signal named by; later signals are only recorded."""
    # The runner's message ("interrupted by SIGTERM: results of ...") names the signal first.
    name = re.search(r"\bSIG[A-Z]+\b", str(by or ""))
    by = name.group(0) if name else "a signal"
    INTERRUPT["by"] = INTERRUPT["by"] or by
    return Interrupted(INTERRUPT["by"])


def in_checkout(path):
    """path relative to the checkout when it lies inside it, else None: what qualify writes into
    results.json (and a committed baseline) names no absolute path of this machine's checkout."""
    roots = {ROOT, os.path.realpath(ROOT)}
    for full in (os.path.abspath(path), os.path.realpath(path)):
        for root in roots:
            if full == root or full.startswith(root + os.sep):
                return os.path.relpath(full, root)
    return None


def command_line(argv):
    """The command as results.json records it: tools/qualify and its arguments, an absolute
    path inside the checkout (a whole argument, or an option's value after '=') made relative."""
    def rel(arg):
        opt, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        if os.path.isabs(value):
            value = in_checkout(value) or value
        return opt + eq + value
    return " ".join(["tools/qualify"] + [rel(a) for a in argv])


FULL_BYTES = 16 << 20  # a file system with less than this free is called full


def os_error_words(e, path):
    """An OSError of writing `path` (or a file in it) as qualify says it: a full disk is
    "no space left on <the file, else path>", whatever wrote it; anything else as it is."""
    full = getattr(e, "errno", None) == errno.ENOSPC or any(
        w in str(e) for w in ("No space left on device", "database or disk is full"))
    if full:
        return f"no space left on {getattr(e, 'filename', None) or path} ({e})"
    return str(e)


def full_file_system(paths):
    """"no space left on <path> (N bytes free)" for the first existing path whose file system
    is (nearly) full, else '': why a build or a tool that only says "failed" failed."""
    for p in paths:
        while p and not os.path.exists(p):
            p = os.path.dirname(p)
        try:
            free = shutil.disk_usage(p).free
        except (OSError, TypeError):
            continue
        if free < FULL_BYTES:
            return f"no space left on {p} ({free} bytes free)"
    return ""
