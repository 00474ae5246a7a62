#!/usr/bin/env python3
"""pagelock bundle runner: runs prebuilt GoogleTest binaries on a machine without Bazel.

  run --out DIR [--tags gpu,-stress] [--targets REGEX] [--gtest_filter F] [--seed N] [--shuffle]
      [--jobs N]

Each test binary runs in its own process group with a time limit. Results land in the layout of
bazel-testlogs (<out>/<package>/<target>/test.xml and test.log), so the same report tool reads
Bazel's runs and the bundle's. Nothing a binary finished is lost, however it ends:
- every launch gets a fresh case journal (fixtures/journal.h) at a path of its own, passed in
  PAGELOCK_JOURNAL, under <target>/test.outputs/attempt_N/pagelock_journal.jsonl;
- a crash, abort, hang, kill, exit without XML or unreadable XML (even one with raw bytes that
  are not UTF-8): every case that ended keeps its own result from the journal, the case that was
  running is CRASH or TIMEOUT, and the binary is restarted on the cases it has not run yet;
- a crash or non-zero exit while no case was running (between cases, at exit) is a failure of the
  target's own, case "(binary)", even when every case passed (as Bazel counts the exit status);
- a binary that exits 75 (kExitPoisoned: a case left a sticky CUDA error and its end event is in
  the journal) is restarted on the remaining cases without using up the restart budget, so the
  poisoned case alone is the failure;
- every launch gets the same PAGELOCK_SEED (--seed, else one drawn for the run and recorded in
  runner.json), so restarts keep the seed;
- the case list of a restart goes to the binary in chunks that fit in one argument;
- test.log is capped (the head and the tail are kept, the cut is stated); listings are streamed;
- when the binary ends, whatever it left behind in its process group, or any process that
  inherited the runner's token in its environment, is killed; the runner is a child subreaper
  (prctl), so a daemon that left the group and dropped its environment re-parents to it and is
  killed and reaped too;
- nothing in the caller's environment changes which cases run: GTEST_* and TESTBRIDGE_* (and
  Bazel's shard variables) are cleared for the binaries and recorded in runner.json
  (environment_cleared);
- the cases come from one unfiltered --gtest_list_tests; a filter (--gtest_filter, qualify's
  retries and skips) is applied in Python and the cases go to the binary as exact names in
  chunks, so no filter is ever too long for one argument, and a name holding '-' or ':' runs
  (as a '?' pattern, keeping only the results asked for). A listing that names no case, fails
  or times out is an INFRA_ERROR "(binary).setup" of the target, never a target silently not
  run; one that names more than PAGELOCK_MAX_CASES_PER_BINARY (--max-cases, default 250000)
  cases is an INFRA_ERROR naming the count, and is not run;
- a failure message of any size is kept with its head and tail and the cut stated (in the
  XML, or a journal line over 1 MiB), never turned into a CRASH;
- an earlier --out is replaced without following a link out of it; manifest.json and an
  earlier runner.json must be regular files (a FIFO or /dev/zero is exit 2); runner.json is
  written atomically, and on a full disk the last record is written in place (never left
  RUNNING); --time-scale must be from 0.001 to 10000 (inf, nan, 0 or 1e-300 are exit 2).
SIGTERM, SIGINT or SIGHUP to the runner stops the running tests' process groups (SIGTERM, then
SIGKILL after a grace period), writes what has finished (test.xml of each target, with the
running case named, and runner.json with status INTERRUPTED) and exits 7.

--jobs N runs up to N targets at once, each with all of the above. A target tagged `exclusive`
(timing- or host-counter-sensitive, multi-GPU, stress) runs alone: the exclusive targets run
first, one at a time, then the others start in the selection's order. A target tagged
`requires-gpu:N` on a host with fewer than N GPUs (/proc/driver/nvidia/gpus, narrowed by
CUDA_VISIBLE_DEVICES) can only report NotSupported, so it runs with the others. runner.json
records jobs, the GPU count used for that, and, per target, start_s/end_s (seconds after the
start) and exclusive.

Progress: `[k/N] elapsed target: running case` redrawn in place on a terminal (cut to the
terminal's width, so it never wraps), one plain line per target otherwise; a notice when a
binary passes half its time limit. At the end, each failing case is listed on one line: status,
target, case, a one-line reason and its test.log. With --jobs > 1, k counts finished
targets and the terminal line names the running ones (up to 3, then "+n"). Driver-side evidence:
new kernel log lines (NVRM, Xid, oom-kill, IOMMU; --kernel-log, default /dev/kmsg) are attached
to the case that was running (property kernel_log); test.xml's pagelock_kernel_log says whether
it was read. With several targets running, a line goes to the case running in each of them and
says how many targets were running.

Exit codes (the meanings qualify, report.py and compare_runs.py share, reports/compare.py):
  0    CLEAN: every case passed, was not supported or was skipped
  1    OUTPUT_ERROR (infrastructure): cannot write the results (full disk, read-only --out);
       what was written is intact
  2    bad usage or a broken bundle (bad manifest, missing binary, --out not the runner's)
  3    FAILURES: some case failed, crashed, timed out or went missing, or a binary's exit said so
  4    NOTHING_SELECTED: no target matches the selection
  7    INTERRUPTED by SIGINT, SIGTERM or SIGHUP

Python API (tools/qualify.py uses it): run(RunConfig(...)) -> RunnerResult.
"""

import argparse
import ctypes
import dataclasses
import json
import math
import os
import queue
import random
import re
import select as _select
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from reports import results as model  # noqa: E402
from reports import testlogs  # noqa: E402

EXIT_CLEAN = 0
EXIT_OUTPUT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_FAILURES = 3
EXIT_NOTHING_SELECTED = 4
EXIT_INTERRUPTED = 7
EXIT_POISONED = testlogs.EXIT_POISONED  # a case left a sticky error; restart on the rest
EXIT_CODES = {"CLEAN": EXIT_CLEAN, "FAILURES": EXIT_FAILURES, "BAD_BUNDLE": EXIT_BAD_INPUT,
              "OUTPUT_ERROR": EXIT_OUTPUT_ERROR, "NOTHING_SELECTED": EXIT_NOTHING_SELECTED}

JOURNAL_NAME = testlogs.JOURNAL_NAME
RUNNER_JSON = "runner.json"
TOKEN_ENV = "PAGELOCK_RUNNER_TOKEN"
# One --gtest_filter argument stays far below Linux's 128 KiB limit on a single argument.
FILTER_MAX_CHARS = 60000
LOG_HEAD_BYTES = 4 << 20  # test.log keeps this much of the start of the output ...
LOG_TAIL_BYTES = 4 << 20  # ... and this much of its end
# Cases one binary may list (PAGELOCK_MAX_CASES_PER_BINARY, --max-cases, RunConfig.max_cases):
# a binary that lists more is an INFRA_ERROR naming the count, and is not run. The listing is
# counted past the cap, never held.
MAX_CASES_PER_BINARY = 250000
MAX_CASES_ENV = "PAGELOCK_MAX_CASES_PER_BINARY"
LIST_MAX_LINE = 65536
# --time-scale outside this range removes every limit (inf) or makes every limit 0 s (1e-300).
TIME_SCALE_MIN, TIME_SCALE_MAX = 1e-3, 1e4
# Files the runner reads (manifest.json, an earlier runner.json) must be regular files of at most
# this size: a FIFO would hang, /dev/zero would eat all memory.
INPUT_MAX_BYTES = 64 << 20
# A failure message longer than this (in the XML, or a journal line over JOURNAL_MAX_LINE) keeps
# its head and its tail and says how many bytes were cut.
MESSAGE_KEEP_BYTES = 16 << 10
# What the caller's environment may not carry into a binary: it would change which cases run
# (GoogleTest's GTEST_FILTER, GTEST_SHARD_INDEX, GTEST_REPEAT, GTEST_ALSO_RUN_DISABLED_TESTS, ...,
# Bazel's test filter and shards, which GoogleTest honours too). Cleared, and recorded in
# runner.json (environment_cleared).
CLEARED_ENV_PREFIXES = ("GTEST_", "TESTBRIDGE_")
CLEARED_ENV_NAMES = ("TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS", "TEST_SHARD_STATUS_FILE",
                     "TEST_PREMATURE_EXIT_FILE", "XML_OUTPUT_FILE")
LIST_TIMEOUT_S = 60
KILL_GRACE_S = 5.0  # between SIGTERM and SIGKILL
KMSG = "/dev/kmsg"  # the kernel log the runner follows (RunConfig.kernel_log)
MAX_JOBS = 256  # RunConfig.jobs: targets run at once
_FAILING = set(model.FAILING)  # the one list, in reports/model.py
_LABEL_RE = re.compile(r"^//([A-Za-z0-9_.+=,@~-]+(/[A-Za-z0-9_.+=,@~-]+)*)?:[A-Za-z0-9_.+=,@~-]+$")


FAILURES_LISTED_PER_TARGET = 200
FAILURES_PRINTED = 50  # at the end of a run


class UsageError(Exception):
    """Bad usage or a broken bundle: exit 2."""


class OutputError(Exception):
    """The results cannot be written (full disk, read-only folder): exit 3."""


@dataclass
class RunConfig:
    bundle: str
    out: str
    tags: str = ""  # Bazel-style tag filter, "gpu,-stress"
    target_regex: str = ""
    # label -> gtest filter ("A.*:B.c-D.*"); the key "*" applies to targets not named
    filters: dict = field(default_factory=dict)
    seed: "int | None" = None  # PAGELOCK_SEED for every binary; None draws one for the run
    shuffle: bool = False
    env: dict = field(default_factory=dict)  # extra environment for the binaries
    time_scale: float = 1.0
    max_restarts: int = 5  # restarts of one binary after crashes or timeouts (exit 75 is free)
    log_head_bytes: int = LOG_HEAD_BYTES
    log_tail_bytes: int = LOG_TAIL_BYTES
    kill_grace_s: float = KILL_GRACE_S
    quiet: bool = False  # no progress lines
    progress_stderr: bool = False  # progress on stderr (stdout is for --json)
    kernel_log: str = KMSG  # kernel log to follow ('' : none); lines go to the running case
    labels: "list | None" = None  # only these targets (after tags and target_regex), e.g. retries
    # Targets run at once. A target tagged `exclusive` runs alone (the exclusive ones first, as
    # one block); the others keep the selection's order, or longest first where `durations`
    # (label -> expected seconds, e.g. from a baseline run) knows them.
    jobs: int = 1
    durations: dict = field(default_factory=dict)
    # GPUs the binaries can see; None: counted from the host (host_gpu_count), and where that
    # is unknown every `exclusive` target stays exclusive.
    gpus: "int | None" = None
    # Cases one binary may list; None: $PAGELOCK_MAX_CASES_PER_BINARY, else MAX_CASES_PER_BINARY.
    max_cases: "int | None" = None


@dataclass
class TargetResult:
    label: str
    exit_code: int  # of the last launch; negative: killed by that signal
    testlogs_dir: str
    restarts: int
    problems: list = field(default_factory=list)  # what went wrong, one sentence each
    launches: list = field(default_factory=list)  # per launch: filter size, exit, blamed case
    counts: dict = field(default_factory=dict)  # raw status -> number of cases
    exclusive: bool = False  # tagged `exclusive`: nothing else ran beside it
    start_s: float = 0.0  # when it started and ended, seconds after the run's first start
    end_s: float = 0.0
    # failing cases, for the end-of-run list: {case, status, reason (one line), log}
    failures: list = field(default_factory=list)
    failures_not_listed: int = 0  # beyond FAILURES_LISTED_PER_TARGET


@dataclass
class RunnerResult:
    status: str  # CLEAN FAILURES BAD_BUNDLE NOTHING_SELECTED INTERRUPTED OUTPUT_ERROR
    targets: list
    out: str
    seed: "int | None" = None
    message: str = ""  # for BAD_BUNDLE, NOTHING_SELECTED, OUTPUT_ERROR, INTERRUPTED
    signal: int = 0  # the signal that interrupted the run
    counts: dict = field(default_factory=dict)

    @property
    def exit_code(self):
        if self.status == "INTERRUPTED":
            return EXIT_INTERRUPTED
        return EXIT_CODES[self.status]


# ---------------------------------------------------------------------------------------------
# The bundle

def read_regular_file(path, limit=INPUT_MAX_BYTES):
    """The bytes of a regular file of at most `limit` bytes. Anything else (a FIFO, which would
    hang; /dev/zero, which would eat all memory; a folder) raises ValueError saying what it is;
    a missing file raises FileNotFoundError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"not a regular file ({_file_kind(st.st_mode)})")
        if st.st_size > limit:
            raise ValueError(f"larger than {limit >> 20} MiB")
        chunks, size = [], 0
        while True:
            data = os.read(fd, 1 << 20)
            if not data:
                return b"".join(chunks)
            size += len(data)
            if size > limit:
                raise ValueError(f"larger than {limit >> 20} MiB")
            chunks.append(data)
    finally:
        os.close(fd)


def _file_kind(mode):
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"


def load_manifest(bundle):
    path = os.path.join(bundle, "manifest.json")
    try:
        manifest = json.loads(read_regular_file(path).decode("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (is {bundle} a pagelock bundle?)")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: unreadable: {e}")
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}:{e.lineno}: malformed JSON: {e.msg}")
    except ValueError as e:
        raise UsageError(f"{path}: refused: {e}")
    except RecursionError:
        raise UsageError(f"{path}: nested too deeply")
    if not isinstance(manifest, dict):
        raise UsageError(f"{path}: must be a JSON object with 'targets'")
    targets = manifest.get("targets")
    if not isinstance(targets, list):
        raise UsageError(f"{path}: 'targets' must be a list")
    seen = set()
    for i, t in enumerate(targets):
        if not isinstance(t, dict):
            raise UsageError(f"{path}: target #{i} must be an object")
        for key in ("label", "path", "timeout_s"):
            if key not in t:
                raise UsageError(f"{path}: target #{i} lacks '{key}'")
        label = t["label"]
        if not isinstance(label, str) or not _LABEL_RE.match(label) or \
                ".." in re.split(r"[/:]", label[2:]):
            raise UsageError(f"{path}: target #{i}: bad label {label!r} (want //package:name)")
        if label in seen:
            raise UsageError(f"{path}: target {label} is listed twice")
        seen.add(label)
        if not isinstance(t["path"], str) or not t["path"]:
            raise UsageError(f"{path}: {label}: 'path' must be a file name")
        timeout = t["timeout_s"]
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
                not 0 < timeout < 1e6:
            raise UsageError(f"{path}: {label}: 'timeout_s' must be a positive number of seconds")
        tags = t.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(x, str) for x in tags):
            raise UsageError(f"{path}: {label}: 'tags' must be a list of strings")
    if "info" in manifest and not isinstance(manifest["info"], dict):
        raise UsageError(f"{path}: 'info' must be an object")
    return manifest


def select_targets(targets, tags_expr, target_regex, labels=None):
    """Bazel-like tag filter: 'gpu,-stress' keeps targets with gpu and without stress."""
    want = [t for t in tags_expr.split(",") if t and not t.startswith("-")] if tags_expr else []
    drop = [t[1:] for t in tags_expr.split(",") if t.startswith("-")] if tags_expr else []
    try:
        rx = re.compile(target_regex) if target_regex else None
    except re.error as e:
        raise UsageError(f"bad --targets regex {target_regex!r}: {e}")
    only = set(labels) if labels is not None else None
    out = []
    for t in targets:
        tags = set(t.get("tags", []))
        if want and not any(w in tags for w in want):
            continue
        if any(d in tags for d in drop):
            continue
        if rx and not rx.search(t["label"]):
            continue
        if only is not None and t["label"] not in only:
            continue
        out.append(t)
    return out




select = select_targets  # the name tools/qualify.py uses


def binary_path(bundle, target):
    return os.path.join(bundle, target["path"])


def check_binaries(bundle, targets):
    for t in targets:
        b = binary_path(bundle, t)
        if not os.path.isfile(b):
            raise UsageError(f"bundle {bundle}: {t['label']}: binary {t['path']} is missing "
                             "(rebuild the bundle with tools/bundle.py)")
        if not os.access(b, os.X_OK):
            raise UsageError(f"bundle {bundle}: {t['label']}: {t['path']} is not executable")


# ---------------------------------------------------------------------------------------------
# Files written atomically, so a full disk or a kill never leaves half a file behind

def write_atomic(path, write):
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise OutputError(f"cannot write {path}: {e.strerror or e}") from e


def _json_bytes(data, indent=1):
    return json.dumps(data, indent=indent, default=str).encode()


def write_json(path, data):
    write_atomic(path, lambda f: f.write(_json_bytes(data)))


def overwrite_in_place(path, info):
    """The last runner.json where a new file cannot be written (a full disk): the one already
    there is overwritten in its own blocks, the whole record if it fits, else a short one
    (status, message, per target its label, counts and problems). Never raises."""
    try:
        with open(path, "r+b") as f:
            room = os.fstat(f.fileno()).st_size
            data = _json_bytes(info, None)
            if len(data) > room:
                short = {k: info.get(k) for k in ("format", "status", "message", "seed",
                                                   "started_at", "environment_cleared")}
                short["targets"] = [{"label": t["label"], "counts": t["counts"],
                                     "problems": t["problems"][:3]} for t in info["targets"]]
                short["not_run"] = info.get("not_run", [])
                short["shortened"] = "the disk was full: this is a short record, in place"
                data = _json_bytes(short, None)
                if len(data) > room:
                    short["targets"], short["not_run"] = [], []
                    data = _json_bytes(short, None)
            f.write(data[:room])
            f.truncate(min(len(data), room))
            f.flush()
            os.fsync(f.fileno())
    except OSError:
        pass


def write_xml(path, label, root_attrs, elements):
    def w(f):
        root = testlogs.merged_xml_root(label, root_attrs, elements)
        ET.ElementTree(root).write(f, encoding="UTF-8", xml_declaration=True)
    write_atomic(path, w)


# ---------------------------------------------------------------------------------------------
# Capped log

class CappedLog:
    """test.log: the first head bytes as they come, the last tail bytes at close, and one line
    that says how much was cut between them. Write errors (a full disk) are remembered, never
    raised in the middle of a test: the output is drained either way."""

    def __init__(self, path, head, tail):
        self.path, self.head, self.tail_cap = path, head, tail
        self.written = 0
        self.cut = 0
        self.tail = bytearray()
        self.recent = bytearray()  # the last few KiB, for a blamed case's log_tail
        self.error = None
        self.lock = threading.Lock()
        try:
            self.f = open(path, "wb")
        except OSError as e:
            raise OutputError(f"cannot write {path}: {e.strerror or e}") from e

    def write(self, data):
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        with self.lock:
            self.recent += data[-8192:]
            del self.recent[:-8192]
            room = self.head - self.written
            if room > 0:
                self._raw(data[:room])
                self.written += min(room, len(data))
                data = data[room:]
            if data:
                self.tail += data
                if len(self.tail) > self.tail_cap:
                    drop = len(self.tail) - self.tail_cap
                    self.cut += drop
                    del self.tail[:drop]

    def recent_text(self, n=3000):
        with self.lock:
            return bytes(self.recent[-n:]).decode("utf-8", "replace")

    def _raw(self, data):
        if self.error or not data:
            return
        try:
            self.f.write(data)
            self.f.flush()
        except OSError as e:
            self.error = e

    def close(self):
        with self.lock:
            if self.cut:
                self._raw(f"\n[pagelock runner: {self.cut} bytes of output cut here; test.log keeps "
                          f"the first {self.head} and the last {self.tail_cap} bytes]\n".encode())
            self._raw(bytes(self.tail))
            self.tail = bytearray()
            try:
                self.f.close()
            except OSError as e:
                self.error = self.error or e


def _pump(fd, sink, stop):
    """Copies a pipe into sink until EOF, or until stop is set and nothing more is ready."""
    while True:
        try:
            ready, _, _ = _select.select([fd], [], [], 0.2)
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


# ---------------------------------------------------------------------------------------------
# Driver-side evidence: kernel log lines while a binary runs

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

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


# ---------------------------------------------------------------------------------------------
# Progress: [k/N], elapsed time and the running case

def _clock(seconds):
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class _Slot:
    """One running target as Progress follows it: its journal, running case and launch."""

    def __init__(self, label):
        self.label = label
        self.case, self.case_since = None, None
        self.journal, self.journal_pos, self.journal_buf = None, 0, b""
        self.journal_long = None  # the head of a journal line too long to hold, until its end
        self.launch_start, self.limit, self.noticed = None, None, False
        self.kernel_lines = {}  # case running when the lines were read ('' for none) -> [line]

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
        self.slots = {}  # label -> _Slot, in the order the targets started
        self.last_draw = 0.0
        self.drawn = False
        self.kernel = None  # KernelLog, polled with the journals
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
            self.slots[label] = _Slot(label)
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
            slot = self.slots[label] = _Slot(label)
        return slot

    def launch(self, journal, limit_s, label=None):
        with self.lock:
            s = self._slot(label)
            s.journal, s.journal_pos, s.journal_buf, s.journal_long = journal, 0, b"", None
            s.launch_start, s.limit, s.noticed = self.clock(), limit_s, False
            s.case = None
            s.kernel_lines = {}

    def _poll_kernel(self):
        """New kernel lines go to the case running in every started target. With several
        targets running, each line says so (the driver line cannot say whose it was)."""
        if self.kernel is None:
            return
        lines = self.kernel.read_new()
        if not lines:
            return
        slots = list(self.slots.values())
        if len(slots) > 1:
            names = ", ".join(s.label for s in slots[:self.SHOWN_RUNNING]) + \
                (f" +{len(slots) - self.SHOWN_RUNNING}" if len(slots) > self.SHOWN_RUNNING else "")
            note = f" (pagelock runner: {len(slots)} targets were running: {names})"
            lines = [line + note for line in lines]
        for s in slots:
            for line in lines:
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

    def tick(self, force=False):
        """Called by the launch loops: reads the journals, prints the half-limit notices, and on
        a terminal redraws the status line (at most once a second)."""
        with self.lock:
            now = self.clock()
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


class _Quiet(Progress):
    """RunConfig(quiet=True): follows the journals and the kernel log, prints nothing."""

    def __init__(self, jobs=1):
        super().__init__(0, stream=sys.stderr, tty=False, jobs=jobs)

    def _write(self, text):
        pass


# ---------------------------------------------------------------------------------------------
# Processes

class _State:
    """What the signal handlers share with the run."""

    def __init__(self):
        self.signal = 0
        self.pgids = set()  # process groups of the running launches (one per running target)
        self.count = 0
        self.progress = None  # Progress, or None (run_target's old entry point)
        self.kernel = None  # KernelLog of the run
        self.subreaper = False  # orphans of the binaries re-parent to this process
        self.lock = threading.Lock()  # a launch's start and the sweep for orphans
        self.children = set()  # pids of the launches started and not yet waited for


PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


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


def _killpg(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_token_holders(token):
    """Kills every process whose environment carries this launch's token: descendants that left
    the process group (setsid) but are still ours."""
    return kill_env_holders(TOKEN_ENV, token)


def kill_env_holders(name, value):
    """SIGKILLs every live process but this one whose environment holds name=value; returns how
    many. (qualify finds what is left of its mutation run the same way.)"""
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


def _launch(args, env, state, timeout_s, grace_s, sink, tick=None):
    """Runs one command in a new session, its output pumped into sink. Returns
    (returncode, timed_out, seconds, leftovers_killed)."""
    token = f"{os.getpid()}-{time.monotonic_ns()}-{random.getrandbits(32):08x}"
    env = dict(env)
    env[TOKEN_ENV] = token
    rfd, wfd = os.pipe()
    start = time.monotonic()
    try:
        with state.lock:  # never while kill_orphans looks: the new child is a launch's
            proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=wfd,
                                    stderr=wfd, start_new_session=True, close_fds=True)
            state.children.add(proc.pid)
    except OSError as e:
        os.close(rfd)
        os.close(wfd)
        raise UsageError(f"cannot start {args[0]}: {e.strerror or e}")
    os.close(wfd)
    stop = threading.Event()
    pump = threading.Thread(target=_pump, args=(rfd, sink, stop), daemon=True)
    pump.start()
    state.pgids.add(proc.pid)
    timed_out = False
    term_at = None
    # Woken the moment the binary exits (a pidfd), not at the next 50 ms tick: the tick alone
    # cost about 25 ms per launch, two launches per target.
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            if proc.poll() is not None:
                break
            now = time.monotonic()
            if term_at is None and (state.signal or now - start > timeout_s):
                timed_out = not state.signal
                _killpg(proc.pid, signal.SIGTERM)
                term_at = now
            elif term_at is not None and (now - term_at > grace_s or state.count > 1):
                _killpg(proc.pid, signal.SIGKILL)
            if tick is not None:
                tick()
            if pidfd is None:
                time.sleep(0.05)
            else:
                try:
                    _select.select([pidfd], [], [], 0.05)
                except InterruptedError:
                    pass
    finally:
        if pidfd is not None:
            os.close(pidfd)
        state.pgids.discard(proc.pid)
        # Whatever the binary left in its group, or that escaped it carrying our token, goes too.
        _killpg(proc.pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        with state.lock:
            state.children.discard(proc.pid)
        leftovers = _kill_token_holders(token) + kill_orphans(state)
        stop.set()
        pump.join(timeout=10)
        os.close(rfd)
    return proc.returncode, timed_out, time.monotonic() - start, leftovers


def describe_exit(returncode, timed_out, timeout_s, interrupted=0):
    if interrupted:
        return f"INTERRUPTED: the runner received {_signame(interrupted)} and stopped the binary"
    if timed_out:
        return f"TIMEOUT: the binary was killed after its limit of {timeout_s:.0f} s"
    if returncode < 0:
        return f"CRASH: the binary was killed by {_signame(-returncode)}"
    return f"CRASH: the binary exited with status {returncode} before finishing"


def _signame(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


# ---------------------------------------------------------------------------------------------
# Case lists and filters

def first_chunk(cases, limit=FILTER_MAX_CHARS):
    """The first of the groups of exact case names whose filter fits in one argument, without
    walking the rest of a long list."""
    out, size = [], 0
    for c in cases:
        if out and size + len(c) + 1 > limit:
            break
        out.append(c)
        size += len(c) + 1
    return out


_SUITE_LINE = re.compile(r"^(\S+)\.\s*(#.*)?$")
_CASE_LINE = re.compile(r"^  (\S+)\s*(#.*)?$")
_DISABLED = re.compile(r"^(.*/)?DISABLED_")  # GoogleTest's kDisableTestFilter, on suite or name


def _disabled(name):
    suite, _, case = name.partition(".")
    return bool(_DISABLED.match(suite) or _DISABLED.match(case))


def binary_env(extra=None, environ=None):
    """The environment of every binary: the runner's, less what would change which cases run
    (CLEARED_ENV_*), plus `extra`. Returns (env, {name: value cleared})."""
    env = dict(os.environ if environ is None else environ)
    env.update({k: str(v) for k, v in (extra or {}).items()})
    cleared = {k: env.pop(k) for k in sorted(env)
               if k.startswith(CLEARED_ENV_PREFIXES) or k in CLEARED_ENV_NAMES}
    return env, cleared


def max_cases_per_binary(configured=None, environ=None):
    """RunConfig.max_cases, else $PAGELOCK_MAX_CASES_PER_BINARY, else MAX_CASES_PER_BINARY.
    Raises UsageError for a value that is not a whole number >= 1."""
    environ = os.environ if environ is None else environ
    value = configured if configured is not None else environ.get(MAX_CASES_ENV)
    if value is None or value == "":
        return MAX_CASES_PER_BINARY
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if isinstance(value, bool) or n < 1:
        raise UsageError(f"the cap on cases per binary ({MAX_CASES_ENV} or --max-cases) must be a "
                         f"whole number >= 1 (got {value!r})")
    return n


@dataclass
class Listing:
    cases: list  # 'Suite.Name' in listing order, DISABLED_ ones left out (they never run)
    problem: str = ""  # why the binary cannot be run at all: an INFRA_ERROR, nothing runs
    warning: str = ""  # the listing ended badly but named cases: an INFRA_ERROR, they still run
    disabled: int = 0


def list_binary(binary, env, state=None, timeout_s=LIST_TIMEOUT_S, max_cases=None):
    """Every case of a binary, from one streamed --gtest_list_tests with no filter (a filter goes
    into Python, never into an argument that could be too long). Memory stays bounded: past
    max_cases the names are only counted. The signal flag stops the parse."""
    state = state or _State()
    cap = max_cases or MAX_CASES_PER_BINARY
    env, _ = binary_env(environ=env)
    cases, seen = [], set()
    counted = [0, 0]  # distinct names listed (past the cap: every name line), DISABLED_ ones
    buf = bytearray()
    other = []  # lines that are not part of the listing, for the error message
    suite = [None]
    skipping = [False]  # inside a line longer than LIST_MAX_LINE: not part of the listing

    def line(raw):
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        m = _CASE_LINE.match(text)
        if m and suite[0] is not None:
            name = suite[0] + "." + m.group(1)
            if counted[0] >= cap:
                counted[0] += 1  # past the cap: counted, not kept (a repeat counts again)
            elif name not in seen:
                seen.add(name)
                counted[0] += 1
                if _disabled(name):
                    counted[1] += 1
                else:
                    cases.append(name)
            return
        m = _SUITE_LINE.match(text)
        if m and not text.startswith("pagelock:"):
            suite[0] = m.group(1)
            return
        if text.strip():
            other.append(text[:500])
            del other[:-10]

    def sink(data):
        if state.signal:
            return  # the run is stopping: nothing more is parsed
        buf.extend(data)
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                if len(buf) > LIST_MAX_LINE:
                    skipping[0] = True
                    del buf[:]
                return
            if not skipping[0]:
                line(bytes(buf[:nl]))
            skipping[0] = False
            del buf[:nl + 1]

    try:
        rc, timed_out, _, _ = _launch([binary, "--gtest_list_tests"], env, state, timeout_s, 1.0,
                                      sink)
    except UsageError as e:
        return Listing([], problem=str(e))
    if buf and not skipping[0] and not state.signal:
        line(bytes(buf))
    said = (": " + " | ".join(other[-3:])) if other else ""
    if state.signal:
        return Listing([], problem=f"interrupted by {_signame(state.signal)}")
    if timed_out:
        return Listing([], problem=f"--gtest_list_tests did not finish within {timeout_s:.0f} s")
    if counted[0] > cap:
        return Listing([], problem=f"--gtest_list_tests named {counted[0]} cases, more than the "
                       f"cap of {cap} per binary ({MAX_CASES_ENV} or --max-cases); not run")
    if rc != 0 and not cases:
        return Listing([], problem=f"--gtest_list_tests {_ended(rc)}{said}")
    if not counted[0]:
        return Listing([], problem="--gtest_list_tests listed no case (it printed nothing, or "
                       f"closed its output early){said}")
    listing = Listing(cases, disabled=counted[1])
    if rc != 0:
        # The list may be short. What it names still runs, and the first launch runs the
        # binary's own selection, so a short list loses no case unless that launch crashes.
        listing.warning = (f"--gtest_list_tests {_ended(rc)} after listing "
                           f"{len(cases)} case(s): the list may be short{said}")
    return listing


def _ended(rc):
    return f"was killed by {_signame(-rc)}" if rc < 0 else f"exited with status {rc}"


def list_cases(binary, gtest_filter, env, state=None, timeout_s=LIST_TIMEOUT_S, max_cases=None):
    """Case names ('Suite.Name') the binary would run under gtest_filter. Returns (cases, None)
    or (None, why). An empty listing is a problem; a filter that selects nothing is not."""
    listing = list_binary(binary, env, state, timeout_s, max_cases)
    if listing.problem:
        return None, listing.problem
    return CaseFilter(gtest_filter, listing.cases).select(listing.cases), None


def _glob_regex(patterns):
    """One regex for GoogleTest glob patterns ('*' any text, '?' one character)."""
    if not patterns:
        return None
    parts = [re.escape(p).replace(r"\*", ".*").replace(r"\?", ".") for p in patterns]
    return re.compile("(?:" + "|".join(parts) + r")\Z", re.DOTALL)


class CaseFilter:
    """A gtest filter ('A.*:B.c-D.*:E.f') read as GoogleTest reads it, with one exception: a
    piece (or pieces joined by ':') that is exactly a listed case name is that name, even when
    it holds a '-' or ':' (a fake or foreign binary's name, e.g. qualify's retry filter
    'S.a-b:S.zz'; GoogleTest's own names never hold them). Exact names are a set and the globs
    one regex, so matching is linear in the cases."""

    def __init__(self, text, names):
        self.text = text or ""
        # An exact name held a character the binary would read as filter syntax: the cases
        # then go in exact chunks, and only their results are kept.
        self.literal = False
        pos_exact, pos_glob, neg_exact, neg_glob = set(), [], set(), []
        listed = set(names)
        joins = 1 + max((n.count(":") for n in listed if ":" in n), default=0)
        pieces = self.text.split(":") if self.text else []
        negative, i = False, 0
        while i < len(pieces):
            hit = None
            for j in range(min(len(pieces), i + joins), i, -1):
                candidate = ":".join(pieces[i:j])
                if candidate in listed:
                    hit = (candidate, j)
                    break
            if hit is not None:
                name, i = hit
                self.literal = self.literal or any(ch in name for ch in "-:*?")
                (neg_exact if negative else pos_exact).add(name)
                continue
            piece = pieces[i]
            if not negative and "-" in piece:
                left, piece = piece.split("-", 1)
                if left and ("*" in left or "?" in left):
                    pos_glob.append(left)
                elif left:
                    pos_exact.add(left)
                negative = True
                pieces[i] = piece
                continue
            if piece:
                if "*" in piece or "?" in piece:
                    (neg_glob if negative else pos_glob).append(piece)
                else:
                    (neg_exact if negative else pos_exact).add(piece)
            i += 1
        self.everything = not pos_exact and not pos_glob
        self.pos_exact, self.neg_exact = pos_exact, neg_exact
        self.pos_rx, self.neg_rx = _glob_regex(pos_glob), _glob_regex(neg_glob)

    def selects(self, name):
        if not self.everything and name not in self.pos_exact and \
                not (self.pos_rx and self.pos_rx.match(name)):
            return False
        return name not in self.neg_exact and not (self.neg_rx and self.neg_rx.match(name))

    def select(self, names):
        return [n for n in names if self.selects(n)]


_FILTER_SYNTAX = str.maketrans({"-": "?", ":": "?"})


def exact_pattern(name):
    """A gtest filter pattern for one case name: '-' and ':', which a filter reads as its own
    syntax, become '?'. It may match a few more names; the runner keeps only the results of the
    cases it asked for."""
    return name.translate(_FILTER_SYNTAX)


# ---------------------------------------------------------------------------------------------
# Case journals and failure messages of any size

_JSON_STRING = r'"((?:[^"\\]|\\.)*)"'
_PROPS_AFTER_MESSAGE = re.compile(r'"\s*,\s*"properties"\s*:')
_PARTIAL_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{0,3})?$')


def _cut_note(n):
    return f"\n[... {n} bytes cut by the pagelock runner ...]\n"


def _json_text(body):
    """Decodes the inside of a JSON string (possibly cut at either end) leniently."""
    for k in range(0, 7):  # a tail may start inside an escape: drop up to 6 characters
        try:
            return json.loads('"' + body[k:] + '"')
        except ValueError:
            continue
    return body


def shorten_event(head, tail, cut):
    """One journal line too long to keep (its head, its tail, `cut` bytes between them) as a
    short event: event, case, status, seconds and properties as written, and the message's head
    and tail with the cut stated. '' when the head names no event."""
    h = head.decode("utf-8", "replace")
    t = tail.decode("utf-8", "replace")
    ev = {}
    for key in ("event", "case", "status"):
        m = re.search(r'"%s"\s*:\s*%s' % (key, _JSON_STRING), h)
        if m:
            ev[key] = _json_text(m.group(1))
    if "event" not in ev or "case" not in ev:
        return ""
    m = re.search(r'"seconds"\s*:\s*(-?[0-9][0-9.eE+-]*)', h)
    if m:
        ev["seconds"] = m.group(1)
    m = re.search(r'"message"\s*:\s*"', h)
    message = ""
    if m:
        whole = re.match(_JSON_STRING, h[m.end() - 1:])
        if whole:  # the message ended in the head: something else was long
            message = _json_text(whole.group(1))
        else:
            message = _json_text(_PARTIAL_ESCAPE.sub("", h[m.end():]))
            ends = list(_PROPS_AFTER_MESSAGE.finditer(t))
            message += _cut_note(cut) + _json_text(t[:ends[-1].start()] if ends else t)
    ends = list(re.finditer(r'"properties"\s*:', t))
    if ends:
        props = t[ends[-1].end():].strip()
        try:
            ev["properties"] = json.loads(props[:-1]) if props.endswith("}") else {}
        except ValueError:
            pass
    ev["message"] = message if m else _cut_note(cut).strip()
    return json.dumps(ev)


def journal_lines(path, keep=MESSAGE_KEEP_BYTES, max_line=testlogs.JOURNAL_MAX_LINE,
                  max_kept=testlogs.JOURNAL_MAX_BYTES):
    """The lines of a case journal for testlogs.read_journal. A line over max_line bytes (a
    failure message of 200 MB) is read to its end but only its head and tail are kept, as a
    short event that states the cut: the case keeps its status and message, never becoming a
    CRASH for a lost end event. At most max_kept bytes are kept in all."""
    out, kept = [], 0
    try:
        with open(path, "rb") as f:
            while kept < max_kept:
                line = f.readline(max_line + 1)
                if not line:
                    break
                if len(line) <= max_line:
                    kept += len(line)
                    out.append(line.decode("utf-8", "replace"))
                    continue
                head, tail, size = line[:keep], bytearray(line[-keep:]), len(line)
                while not line.endswith(b"\n"):
                    line = f.readline(1 << 20)
                    if not line:
                        break
                    size += len(line)
                    tail += line
                    del tail[:-keep]
                short = shorten_event(head, bytes(tail), size - len(head) - len(tail))
                if short:
                    kept += len(short)
                    out.append(short)
    except OSError:
        pass
    return out


def _cap_text(text, keep=MESSAGE_KEEP_BYTES):
    if text is None or len(text) <= 2 * keep:
        return text
    return text[:keep] + _cut_note(len(text) - 2 * keep) + text[-keep:]


def _cap_messages(el):
    """A <testcase> from the binary's XML with every failure message capped (head, tail and the
    cut stated), so test.xml and the reports stay small however long the message was."""
    for child in el:
        if child.tag in ("failure", "error", "skipped"):
            if child.get("message") is not None:
                child.set("message", _cap_text(child.get("message")))
            child.text = _cap_text(child.text)
    return el


# ---------------------------------------------------------------------------------------------
# One target

def _failed(el):
    return testlogs.case_from_element("", el).status in _FAILING


def _run_target(bundle, target, out_root, cfg, seed, state):
    label = target["label"]
    name = label.split(":")[1]
    tdir = fresh_target_dir(out_root, label)
    result = TargetResult(label, 0, tdir, 0)
    binary = binary_path(bundle, target)
    timeout_s = float(target["timeout_s"]) * cfg.time_scale
    env, _ = binary_env(cfg.env)
    env.pop("TEST_UNDECLARED_OUTPUTS_DIR", None)  # the journal goes where PAGELOCK_JOURNAL says
    env["PAGELOCK_TIME_SCALE"] = str(cfg.time_scale)
    env["PAGELOCK_SEED"] = str(seed)
    user_filter = cfg.filters.get(label, cfg.filters.get("*", ""))

    tlog = CappedLog(os.path.join(tdir, "test.log"), cfg.log_head_bytes, cfg.log_tail_bytes)
    done = {}  # case -> <testcase> element
    root_attrs = {}
    binary_problems = []  # (status, sentence) for ends that no case can be blamed for
    kernel_between = []  # kernel log lines read while no case was running
    expected = []
    try:
        tlog.write(f"=== pagelock runner: {label}, PAGELOCK_SEED={seed}\n")
        listing = list_binary(binary, env, state, LIST_TIMEOUT_S * cfg.time_scale,
                              max_cases_per_binary(cfg.max_cases))
        setup_problem = listing.problem or listing.warning
        if setup_problem:
            tlog.write(f"pagelock runner: the cases of {binary}: {setup_problem}\n")
            result.problems.append(f"listing the cases: {setup_problem}")
            status = "MISSING" if state.signal else "INFRA_ERROR"
            done["(binary).setup"] = testlogs.synthesize_case(
                "(binary).setup", status, f"listing the cases of {target['path']}: {setup_problem}")
        selection = CaseFilter(user_filter, listing.cases)
        expected = selection.select(listing.cases)
        if user_filter and listing.cases and not expected:
            result.problems.append(f"the filter {user_filter[:200]!r} selects none of its "
                                   f"{len(listing.cases)} case(s)")
        _run_launches(binary, label, tdir, expected, selection, user_filter, env, timeout_s, cfg,
                      seed, state, tlog, done, result, binary_problems, kernel_between,
                      root_attrs)
        listed = set(expected)
        unlisted = [c for c in done if c not in listed and not c.startswith("(binary)")]
        if unlisted:  # the listing was short or changed: said, the results are kept
            result.problems.append(f"{len(unlisted)} case(s) ran that the listing did not name "
                                   f"(was it cut short?), e.g. {printable(unlisted[0])[:200]}")
        if binary_problems:
            worst = max((s for s, _ in binary_problems),
                        key=["FAIL", "TIMEOUT", "CRASH"].index)
            text = "\n".join(f"{s}: {m}" for s, m in binary_problems)
            done[f"(binary).{name}"] = testlogs.synthesize_case(
                f"(binary).{name}", worst, text, log_tail=tlog.recent_text(),
                properties={"kernel_log": "\n".join(kernel_between[-KERNEL_LOG_MAX_LINES:])}
                if kernel_between else None)
            result.problems += [m for _, m in binary_problems]
        elif kernel_between:
            result.problems.append(f"{len(kernel_between)} kernel log line(s) while no case was "
                                   "running (in test.log)")
    finally:
        tlog.close()
    if tlog.error is not None:
        raise OutputError(f"cannot write {tlog.path}: {tlog.error.strerror or tlog.error}")
    expected_set = set(expected)  # a set: `c not in expected` over a list was quadratic
    ordered = [done[c] for c in expected if c in done] + \
        [el for c, el in done.items() if c not in expected_set]
    root_attrs = dict(root_attrs.get("attrs", {}))
    root_attrs["pagelock_seed"] = str(seed)
    if state.kernel is not None:
        root_attrs["pagelock_kernel_log"] = state.kernel.status
    write_xml(os.path.join(tdir, "test.xml"), label, root_attrs, ordered)
    log = os.path.join(tdir, "test.log")
    for el in ordered:
        case = testlogs.case_from_element(label, el)
        result.counts[case.status] = result.counts.get(case.status, 0) + 1
        if case.status in _FAILING:
            if len(result.failures) < FAILURES_LISTED_PER_TARGET:
                result.failures.append({"case": f"{case.suite}.{case.name}", "status": case.status,
                                        "reason": one_line_reason(case.message), "log": log})
            else:
                result.failures_not_listed += 1
    return result


def one_line_reason(message, width=160):
    """The first line of a failure message that says something ('file:line' lines do not),
    with control characters shown as escapes."""
    lines = [x.strip() for x in (message or "").splitlines() if x.strip()]
    said = [x for x in lines if not re.match(r"^\S+:\d+:?$", x)] or lines or ["(no message)"]
    text = printable(said[0])
    return text if len(text) <= width else text[:width - 1] + "\u2026"


def printable(text):
    """Text for one terminal line: a newline, carriage return, escape or other control
    character in a case name or message is shown as an escape, never acted on."""
    return "".join(c if c >= " " and c != "\x7f" else repr(c)[1:-1] for c in str(text))


def _run_launches(binary, label, tdir, expected, selection, user_filter, env, timeout_s, cfg,
                  seed, state, tlog, done, result, binary_problems, kernel_between, root_attrs):
    """Launches the binary until every expected case has a result, the restart budget is spent
    or the run is stopped. Fills `done` (case -> <testcase>), result.launches and the problems.
    Every step is linear in the cases of the launch, and the signal flag is checked between
    launches."""
    expected_set = set(expected)
    remaining = list(expected)
    launch = 0
    # The first launch runs the user's own filter (or everything), so a case the listing missed
    # still runs; where the filter is too long for one argument, or names a case the binary
    # would misread, the cases go in exact chunks.
    own_selection = len(user_filter) <= FILTER_MAX_CHARS and not selection.literal
    while remaining and not state.signal:
        if launch == 0 and own_selection:
            batch, gfilter, exact = remaining, user_filter, False
        else:
            batch = first_chunk(remaining)
            gfilter, exact = ":".join(exact_pattern(c) for c in batch), True
        launch += 1
        adir = os.path.join(tdir, "test.outputs", f"attempt_{launch}")
        try:
            os.makedirs(os.path.join(adir, "tmp"))
        except OSError as e:
            raise OutputError(f"cannot write {adir}: {e.strerror or e}") from e
        journal = os.path.join(adir, JOURNAL_NAME)
        xml_path = os.path.join(adir, "gtest.xml")
        env["PAGELOCK_JOURNAL"] = journal
        env["TEST_TMPDIR"] = os.path.join(adir, "tmp")
        gargs = [f"--gtest_output=xml:{xml_path}"]
        if gfilter:
            gargs.append("--gtest_filter=" + gfilter)
        if cfg.shuffle:
            gargs += ["--gtest_shuffle", f"--gtest_random_seed={seed % 99999 + 1}"]
        shown = " ".join(gargs) if len(gfilter) < 300 else \
            f"--gtest_filter=<{len(batch)} cases>"
        tlog.write(f"=== pagelock runner: attempt {launch} of {label}: {shown}\n")
        prog = state.progress
        if prog is not None:
            prog.launch(journal, timeout_s, label)
        rc, timed_out, secs, leftovers = _launch([binary] + gargs, env, state, timeout_s,
                                                 cfg.kill_grace_s, tlog.write,
                                                 prog.tick if prog is not None else None)
        result.exit_code = rc
        klines = prog.end_launch(label) if prog is not None else {}
        entry = {"attempt": launch, "cases": len(batch), "returncode": rc,
                 "timed_out": timed_out, "seconds": round(secs, 3)}
        if leftovers:
            entry["killed_leftovers"] = leftovers
            tlog.write(f"pagelock runner: killed {leftovers} process(es) the binary left "
                       "behind\n")
        xml_cases, attrs, xml_problem = testlogs.read_gtest_xml(xml_path)
        if attrs:
            root_attrs["attrs"] = attrs
        finished, running = testlogs.read_journal(journal_lines(journal))
        before = len(done)
        new = dict(finished)
        if xml_cases:
            new.update(xml_cases)  # the binary's own XML has the full detail
        added = []  # the cases this launch reported, listed or not
        for case_id, el in new.items():
            # An exact chunk keeps only the cases it asked for: a '?' pattern may match others.
            if case_id not in done and (not exact or case_id in expected_set):
                done[case_id] = _cap_messages(el)
                added.append(case_id)
        if running and (running in done or (exact and running not in expected_set)):
            running = None
        normal = rc in (0, 1) and not timed_out and not state.signal and xml_cases is not None
        reason = describe_exit(rc, timed_out, timeout_s, state.signal)
        if running and not normal:
            if state.signal:
                status = "MISSING"
                msg = f"{reason} while this case was running"
            else:
                status = "TIMEOUT" if timed_out else "CRASH"
                msg = f"{reason} while running this case"
            done[running] = testlogs.synthesize_case(
                running, status, msg, log_tail=tlog.recent_text())
            entry["blamed"] = running
        for kcase, lines in klines.items():
            lines = lines[-KERNEL_LOG_MAX_LINES:]
            tlog.write(f"=== pagelock runner: kernel log during attempt {launch}"
                       f"{' while ' + kcase + ' ran' if kcase else ''}:\n" + "\n".join(lines) + "\n")
            target_el = done.get(kcase) if kcase else None
            if target_el is None:
                kernel_between.extend(lines)
            else:
                _add_property(target_el, "kernel_log", "\n".join(lines))
            entry["kernel_log_lines"] = entry.get("kernel_log_lines", 0) + len(lines)
        progress = len(done) > before
        def ran_failed():  # only asked where the exit status needs it: one parse per case
            return any(_failed(done[c]) for c in added)

        if rc == EXIT_POISONED and not timed_out and not state.signal:
            entry["poisoned"] = True
            if not ran_failed():
                binary_problems.append(("FAIL", "the binary exited 75 (poisoned context) but "
                                        "no case of that launch failed"))
        elif not running and not state.signal:
            if timed_out:
                binary_problems.append(("TIMEOUT", reason + " while no case was running"))
            elif rc < 0:
                when = "after its last case" if all(c in done for c in batch) else \
                    "between cases"
                binary_problems.append(("CRASH", f"{reason} {when} (no case was running)"))
            elif rc not in (0, 1) or (rc == 1 and not ran_failed()):
                binary_problems.append(("FAIL", f"the binary exited with status {rc} although "
                                        "no case of that launch failed (Bazel counts it as a "
                                        "failure too)"))
            if xml_cases is None:
                entry["xml"] = xml_problem
                tlog.write(f"pagelock runner: no usable XML ({xml_problem}); results come from "
                           "the case journal\n")
        result.launches.append(entry)
        left = [c for c in batch if c not in done]
        remaining = [c for c in remaining if c not in done]
        if state.signal or not left:
            continue
        if not progress:
            why = f"{reason}; the binary made no progress" if not normal else \
                "the binary ended without reporting it"
            result.problems.append(f"attempt {launch}: {why}")
            for c in left:
                done[c] = testlogs.synthesize_case(c, "MISSING", f"never ran: {why}")
            remaining = [c for c in remaining if c not in done]
            continue
        if rc != EXIT_POISONED or timed_out:
            result.restarts += 1
            if result.restarts > cfg.max_restarts:
                why = f"restart budget of {cfg.max_restarts} spent (last end: {reason})"
                result.problems.append(why)
                for c in remaining:
                    done[c] = testlogs.synthesize_case(c, "MISSING", f"never ran: {why}")
                remaining = []
    if state.signal:
        for c in remaining:
            done[c] = testlogs.synthesize_case(
                c, "MISSING", f"never ran: the run was interrupted by {_signame(state.signal)}")
        result.problems.append(f"interrupted by {_signame(state.signal)}")


def _add_property(el, name, value):
    """Adds (or extends) a <property> of a <testcase> element."""
    props = el.find("properties")
    if props is None:
        props = ET.SubElement(el, "properties")
    for pe in props.findall("property"):
        if pe.get("name") == name:
            pe.set("value", pe.get("value", "") + "\n" + value)
            return
    ET.SubElement(props, "property", {"name": name, "value": value})


def run_target(bundle, target, out_root, args):
    """The old entry point (an argparse namespace with time_scale, seed, gtest_filter,
    max_restarts, shuffle): runs one target into out_root. Returns a summary dict."""
    cfg = RunConfig(bundle=bundle, out=out_root,
                    filters={"*": getattr(args, "gtest_filter", "") or ""},
                    shuffle=getattr(args, "shuffle", False),
                    time_scale=getattr(args, "time_scale", 1.0),
                    max_restarts=getattr(args, "max_restarts", 5), quiet=True)
    seed = args.seed if getattr(args, "seed", None) is not None else _draw_seed()
    r = _run_target(bundle, target, out_root, cfg, seed, _State())
    return {"label": r.label, "attempts": r.launches, "cases": sum(r.counts.values())}


def _draw_seed():
    return random.SystemRandom().randrange(1, 10 ** 12)


# ---------------------------------------------------------------------------------------------
# The run

def _target_dir(out, label):
    package, name = label[2:].split(":")
    return os.path.join(out, package, name)


def _prepare_out(out):
    """--out is new, empty, or a previous runner output (whose targets are replaced). Nothing
    outside --out is ever removed: a link on the way to a target folder is removed itself, never
    followed."""
    if not os.path.lexists(out):
        return
    if os.path.islink(out) or not os.path.isdir(out):
        raise UsageError(f"--out {out}: exists and is not a folder")
    try:
        entries = os.listdir(out)
    except OSError as e:
        raise OutputError(f"cannot read {out}: {e.strerror or e}")
    if not entries:
        return
    prev = os.path.join(out, RUNNER_JSON)
    if not os.path.isfile(prev) or os.path.islink(prev):
        raise UsageError(f"--out {out}: not empty and not written by the runner (no {RUNNER_JSON});"
                         " give a new or empty folder")
    try:
        old = json.loads(read_regular_file(prev).decode("utf-8"))
        labels = [t["label"] for t in old.get("targets", []) + old.get("not_run", [])]
        if not all(isinstance(x, str) and _LABEL_RE.match(x) and
                   ".." not in re.split(r"[/:]", x[2:]) for x in labels):
            raise ValueError("a target label is not //package:name")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        raise UsageError(f"--out {out}: {RUNNER_JSON} of the previous run is unreadable ({e}); "
                         "give a new or empty folder")
    try:
        for label in labels:
            _remove_target_dir(out, label)
        os.unlink(prev)
    except OSError as e:
        raise OutputError(f"cannot clear the previous run in {out}: {e.strerror or e}")


def _target_parts(label):
    package, name = label[2:].split(":")
    return [p for p in package.split("/") if p] + [name]


def _remove(path):
    """Removes a path inside --out: a link or file is unlinked (never followed), a folder
    removed with everything in it (shutil.rmtree never follows the links inside)."""
    st = _lstat(path)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _lstat(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _remove_target_dir(out, label):
    """Removes an earlier run's target folder, walking down from --out with lstat: a link on the
    way is removed itself, and what it points to (outside --out, maybe) is never touched. Then
    the package folders it leaves empty."""
    parts = _target_parts(label)
    path, walked = out, []
    for i, part in enumerate(parts):
        path = os.path.join(path, part)
        st = _lstat(path)
        if st is None:
            break
        if i == len(parts) - 1 or not stat.S_ISDIR(st.st_mode):
            _remove(path)  # the target folder, or a link or file in the way
            break
        walked.append(path)
    for d in reversed(walked):
        if os.listdir(d):
            break
        os.rmdir(d)


def fresh_target_dir(out, label):
    """An empty <out>/<package>/<name> with test.outputs/ in it, made by walking down from --out
    with lstat: a link on the way is removed and replaced by a folder, never written through."""
    path = out
    try:
        os.makedirs(out, exist_ok=True)  # --out itself may be new (run_target's entry point)
        parts = _target_parts(label)
        for i, part in enumerate(parts):
            path = os.path.join(path, part)
            st = _lstat(path)
            leaf = i == len(parts) - 1
            if st is not None and (leaf or not stat.S_ISDIR(st.st_mode)):
                _remove(path)
                st = None
            if st is None:
                try:
                    os.mkdir(path)
                except FileExistsError:  # a parallel target of the same package made it
                    if leaf or not stat.S_ISDIR(os.lstat(path).st_mode):
                        raise
        os.mkdir(os.path.join(path, "test.outputs"))
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror or e}") from e
    return path


def run(config: RunConfig) -> RunnerResult:
    """Runs the selected targets of a bundle into config.out. Never raises for bad input, a
    broken bundle, a full disk or a signal: the status says what happened."""
    out = os.path.abspath(config.out)
    say = (lambda *a: None) if config.quiet else (lambda m: print(f"runner: {m}", flush=True))
    state = _State()
    old_handlers = {}

    def on_signal(signum, frame):
        state.count += 1
        state.signal = state.signal or signum
        for pgid in list(state.pgids):  # every running target's process group
            _killpg(pgid, signal.SIGTERM if state.count == 1 else signal.SIGKILL)

    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            old_handlers[s] = signal.signal(s, on_signal)
    state.subreaper = set_child_subreaper(True)
    try:
        return _run(config, out, say, state)
    finally:
        kill_orphans(state)  # whatever escaped every launch and outlived it
        if state.subreaper:
            set_child_subreaper(False)
        if state.progress is not None:
            state.progress.done()
        if state.kernel is not None:
            state.kernel.close()
        for s, h in old_handlers.items():
            signal.signal(s, h)


def check_time_scale(scale):
    """None, or why --time-scale is refused: inf or nan removes every limit, and a scale near 0
    makes every limit 0 s."""
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) \
            or not TIME_SCALE_MIN <= scale <= TIME_SCALE_MAX:
        return (f"--time-scale must be a number from {TIME_SCALE_MIN:g} to {TIME_SCALE_MAX:g} "
                f"(got {scale!r})")
    return None


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
    return f"--kernel-log {path}: refused: {_file_kind(st.st_mode)} that is not /dev/kmsg"


def _run(config, out, say, state):
    try:
        why = check_time_scale(config.time_scale) or \
            (check_kernel_log(config.kernel_log) if config.kernel_log else None)
        if why:
            raise UsageError(why)
        config = dataclasses.replace(config, max_cases=max_cases_per_binary(config.max_cases))
        manifest = load_manifest(config.bundle)
        targets = select_targets(manifest["targets"], config.tags, config.target_regex,
                                 config.labels)
        if not targets:
            return RunnerResult("NOTHING_SELECTED", [], out, config.seed,
                                "no target matches the selection")
        check_binaries(config.bundle, targets)
        _prepare_out(out)
    except UsageError as e:
        return RunnerResult("BAD_BUNDLE", [], out, config.seed, str(e))
    except OutputError as e:
        return RunnerResult("OUTPUT_ERROR", [], out, config.seed, str(e))
    seed = config.seed if config.seed is not None else _draw_seed()
    jobs = config.jobs
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= MAX_JOBS:
        return RunnerResult("BAD_BUNDLE", [], out, config.seed,
                            f"jobs must be a whole number from 1 to {MAX_JOBS} (got {jobs!r})")
    state.progress = _Quiet(jobs) if config.quiet else Progress(
        len(targets), stream=sys.stderr if config.progress_stderr else sys.stdout, jobs=jobs)
    state.kernel = KernelLog(config.kernel_log) if config.kernel_log else None
    state.progress.kernel = state.kernel
    if state.kernel is not None and not state.kernel.readable:
        state.progress.line(f"kernel log {state.kernel.status}: the report will say so")
    results = []
    if config.gpus is None:
        config = dataclasses.replace(config, gpus=host_gpu_count())
    info = {"format": 1, "bundle": manifest.get("info", {}), "seed": seed, "jobs": jobs,
            "gpus": config.gpus,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "config": dataclasses.asdict(config), "status": "RUNNING", "targets": [],
            "not_run": [], "environment_cleared": binary_env(config.env)[1]}
    path = os.path.join(out, RUNNER_JSON)

    def record(final):
        info["status"] = final
        info["message"] = message
        info["targets"] = [dataclasses.asdict(r) for r in results]
        ran = {r.label for r in results}
        info["not_run"] = [{"label": t["label"], "testlogs_dir": _target_dir(out, t["label"])}
                           for t in targets if t["label"] not in ran]
        if final == "RUNNING":
            # Room for the last record even on a full disk: padded (JSON allows trailing
            # spaces), so it can be overwritten in place without a new block.
            pad = 4096 + 512 * len(targets)
            write_atomic(path, lambda f: f.write(_json_bytes(info).ljust(pad)))
            return
        try:
            write_json(path, info)
        except OutputError:
            info["status"] = "OUTPUT_ERROR"
            info["message"] = message or f"cannot write {path}"
            overwrite_in_place(path, info)
            raise

    message = ""
    try:
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            raise OutputError(f"cannot create {out}: {e.strerror or e}")
        record("RUNNING")
        _schedule(config, targets, out, seed, state, results)
        if state.signal:
            status = "INTERRUPTED"
            message = (f"interrupted by {_signame(state.signal)}: results of {len(results)} of "
                       f"{len(targets)} target(s) written to {out}")
        else:
            status = "FAILURES" if any(r.counts.get(s) for r in results for s in _FAILING) \
                else "CLEAN"
        record(status)
    except OutputError as e:
        status, message = "OUTPUT_ERROR", str(e)
        try:
            record(status)
        except OutputError:
            pass  # record() left what fits: runner.json never says RUNNING after the run
    except UsageError as e:  # a binary that cannot be started
        status, message = "BAD_BUNDLE", str(e)
        try:
            record(status)
        except OutputError:
            pass
    counts = {}
    for r in results:
        for k, v in r.counts.items():
            counts[k] = counts.get(k, 0) + v
    return RunnerResult(status, results, out, seed, message, state.signal, counts)


_REQUIRES_GPU = re.compile(r"requires-gpu:(\d+)$")


def host_gpu_count(environ=None, gpu_dir="/proc/driver/nvidia/gpus"):
    """At most how many GPUs the binaries can see: the driver's GPU list, narrowed by
    CUDA_VISIBLE_DEVICES (its entries are an upper bound: CUDA stops at an invalid one).
    None when the driver's list cannot be read (no driver, or a container without it)."""
    environ = os.environ if environ is None else environ
    try:
        n = len([e for e in os.listdir(gpu_dir) if not e.startswith(".")])
    except OSError:
        return None
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        n = min(n, len([e for e in visible.split(",") if e.strip()]))
    return n


def _gpus_required(target):
    for tag in target.get("tags", []):
        m = _REQUIRES_GPU.match(tag)
        if m:
            return int(m.group(1))
    return 1


def _exclusive(target, gpus=None):
    """Tagged `exclusive`, unless it needs more GPUs than the host has (gpus known): then every
    case reports NotSupported and there is nothing for it to be alone for."""
    if "exclusive" not in target.get("tags", []):
        return False
    return gpus is None or _gpus_required(target) <= gpus


def schedule_order(targets, jobs, durations=None, gpus=None):
    """The order targets start in. Serial: the selection's order. With jobs > 1 the targets
    that run alone (_exclusive) come first, as one block in their own order, so the pool of
    parallel targets is never drained for them; the others follow longest first by
    `durations` (label -> expected seconds; a target it does not know counts as longest, since
    it may be), else in their order, so the longest target does not start last."""
    if jobs <= 1:
        return list(targets)
    rest = [t for t in targets if not _exclusive(t, gpus)]
    if durations:
        rest.sort(key=lambda t: -durations.get(t["label"], float("inf")))  # stable: ties keep order
    return [t for t in targets if _exclusive(t, gpus)] + rest


def _schedule(config, targets, out, seed, state, results):
    """Runs the targets, up to config.jobs at once, each in a worker thread (the main thread
    keeps the signal handlers, which stop every running process group). A target tagged
    `exclusive` starts only when nothing else runs, and nothing starts beside it. Results are
    appended to `results` in the selection's order. An OutputError or UsageError of one target
    stops new starts; the running targets finish, then the first error is raised."""
    jobs = max(1, config.jobs)
    gpus = config.gpus
    queue_ = schedule_order(targets, jobs, config.durations, gpus)
    position = {t["label"]: i for i, t in enumerate(targets)}
    finished = queue.Queue()
    running = {}  # label -> exclusive?
    by_label = {}
    error = None
    t0 = time.monotonic()

    def work(t, exclusive):
        start = time.monotonic() - t0
        try:
            r = _run_target(config.bundle, t, out, config, seed, state)
            r.exclusive, r.start_s, r.end_s = exclusive, round(start, 3), \
                round(time.monotonic() - t0, 3)
        except BaseException as e:  # noqa: B902 -- handed to the main thread, raised there
            r = e
        finished.put((t, r))

    while queue_ or running:
        while queue_ and error is None and not state.signal and len(running) < jobs:
            t = queue_[0]
            exclusive = _exclusive(t, gpus)
            if running and (exclusive or any(running.values())):
                break
            queue_.pop(0)
            running[t["label"]] = exclusive
            state.progress.target_started(t["label"])
            threading.Thread(target=work, args=(t, exclusive), daemon=True,
                             name=f"runner {t['label']}").start()
        if not running:
            break
        try:
            t, r = finished.get(timeout=0.2)
        except queue.Empty:
            continue
        del running[t["label"]]
        if isinstance(r, BaseException):
            state.progress.target_ended(f"{t['label']}: stopped ({r})", t["label"])
            error = error or r
            continue
        by_label[t["label"]] = r
        state.progress.target_ended(
            f"{t['label']}: " + ", ".join(f"{k}={v}" for k, v in sorted(r.counts.items()))
            + (f"; restarts {r.restarts}" if r.restarts else "")
            + "".join(f"; blamed {a['blamed']}" for a in r.launches if "blamed" in a),
            t["label"])
    results.extend(sorted(by_label.values(), key=lambda r: position[r.label]))
    if error is not None:
        raise error


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundle", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."),
                   help="bundle folder (default: the bundle this runner is part of)")
    p.add_argument("--out", required=True, help="testlogs folder to write (new, empty, or an "
                   "earlier output of the runner, whose results are replaced)")
    p.add_argument("--tags", default="-stress,-selftest",
                   help="Bazel-style tag filter, e.g. 'gpu,-stress' (default: -stress,-selftest)")
    p.add_argument("--targets", default="", help="regex on target labels")
    p.add_argument("--gtest_filter", default="",
                   help="selects the cases of every binary (GoogleTest's syntax; the "
                   "environment's GTEST_FILTER is never used)")
    p.add_argument("--time-scale", type=float, default=1.0,
                   help="multiplies every time limit (also exported as PAGELOCK_TIME_SCALE); "
                   f"from {TIME_SCALE_MIN:g} to {TIME_SCALE_MAX:g}")
    p.add_argument("--max-restarts", type=int, default=5,
                   help="restarts of one binary after crashes or timeouts (default 5)")
    p.add_argument("--seed", type=int, default=None,
                   help="PAGELOCK_SEED for every binary (default: one drawn for the run)")
    p.add_argument("--shuffle", action="store_true", help="run cases in random order (gtest)")
    p.add_argument("--kernel-log", default=KMSG,
                   help="kernel log to follow for driver lines (NVRM, Xid, oom-kill, IOMMU) while "
                   f"each case runs (default {KMSG}; '' turns it off)")
    p.add_argument("--json", action="store_true",
                   help="print a JSON summary on stdout (status, exit_code, seed, out, counts, "
                   "targets); progress and messages go to stderr")
    p.add_argument("--jobs", type=int, default=1,
                   help="targets run at once (default 1); a target tagged `exclusive` runs alone, "
                   "and the exclusive ones run first")
    p.add_argument("--max-cases", type=int, default=None,
                   help="cases one binary may list; one that lists more is an INFRA_ERROR naming "
                   f"the count, and is not run (default ${MAX_CASES_ENV}, else "
                   f"{MAX_CASES_PER_BINARY})")
    p.add_argument("--kill-grace-s", type=float, default=KILL_GRACE_S,
                   help=f"seconds between SIGTERM and SIGKILL when a test is stopped "
                   f"(default {KILL_GRACE_S:.0f})")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return EXIT_BAD_INPUT if e.code else 0
    why = check_time_scale(args.time_scale)
    if why or args.max_restarts < 0:
        print(f"runner: {why or '--max-restarts must be >= 0'}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        max_cases = max_cases_per_binary(args.max_cases)
    except UsageError as e:
        print(f"runner: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not 1 <= args.jobs <= MAX_JOBS:
        print(f"runner: --jobs must be from 1 to {MAX_JOBS}", file=sys.stderr)
        return EXIT_BAD_INPUT
    cfg = RunConfig(bundle=args.bundle, out=args.out, tags=args.tags, target_regex=args.targets,
                    filters={"*": args.gtest_filter} if args.gtest_filter else {},
                    seed=args.seed, shuffle=args.shuffle, time_scale=args.time_scale,
                    max_restarts=args.max_restarts, kill_grace_s=max(0.0, args.kill_grace_s),
                    progress_stderr=args.json, kernel_log=args.kernel_log, jobs=args.jobs,
                    max_cases=max_cases)
    try:
        r = run(cfg)
    except KeyboardInterrupt:  # a second Ctrl-C before the handlers were installed
        print("runner: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if r.status in ("BAD_BUNDLE", "NOTHING_SELECTED", "OUTPUT_ERROR", "INTERRUPTED"):
        print(f"runner: {r.message}", file=sys.stderr)
    if args.json:
        for text in failure_lines(r.targets):
            print(text, file=sys.stderr)  # stdout is the one JSON object
        print(json.dumps({"tool": "runner", "status": r.status, "exit_code": r.exit_code,
                          "message": r.message, "seed": r.seed, "out": r.out, "counts": r.counts,
                          "targets": [{"label": t.label, "counts": t.counts, "restarts": t.restarts,
                                       "problems": t.problems} for t in r.targets]}))
        return r.exit_code
    if r.targets:
        for text in failure_lines(r.targets):
            print(text)
        print(f"runner: seed {r.seed}; results in {r.out}")
        order = list(getattr(model, "STATUSES", testlogs.RAW_STATUSES))
        counts = {s: r.counts.get(s, 0) for s in order}
        counts.update(r.counts)
        print(model.format_counts(counts))
    return r.exit_code


def failure_lines(targets, limit=FAILURES_PRINTED):
    """The end-of-run list of failures, as Bazel and deqp-runner print one: per failing case its
    status, target, case, one-line reason and test.log, one line each (names and reasons shown
    with control characters escaped)."""
    rows = [(t.label, f) for t in targets for f in t.failures]
    if not rows:
        return []
    total = len(rows) + sum(t.failures_not_listed for t in targets)
    out = [f"runner: {total} failing case(s):"]
    for label, f in rows[:limit]:
        out.append(f"  {f['status']:<13} {label} {printable(f['case'])}: {f['reason']}"
                   f"  [log: {f['log']}]")
    if total > limit:
        out.append(f"  ... and {total - limit} more (runner.json lists up to "
                   f"{FAILURES_LISTED_PER_TARGET} per target, test.xml all)")
    return out


if __name__ == "__main__":
    sys.exit(main())
