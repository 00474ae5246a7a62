"""The runner's vocabulary: exit codes, limits, errors, the run's status and the typed records
(RunConfig in, TargetResult and RunnerResult out) that tools/qualify.py uses."""

import enum
import errno
import math
from dataclasses import dataclass, field

EXIT_CLEAN = 0
EXIT_OUTPUT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_FAILURES = 3
EXIT_NOTHING_SELECTED = 4
EXIT_INTERRUPTED = 7

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
# What a reproducer of a case needs of the environment its binary ran in (qualify --repro, in
# runner.json's "environment"): pagelock's and CUDA's variables and the library path (the fault
# layer's shim is found through it), never the harness's own (its history URL, interpreter,
# kernel log, the live run's marker of tools/runner/leftovers.py), what the runner sets per launch
# (seed, time scale, journal), the toolkit's folder, or what looks secret.
RECORDED_ENV_PREFIXES = ("PAGELOCK_", "CUDA_", "NVIDIA_")
RECORDED_ENV_NAMES = ("LD_LIBRARY_PATH", "LD_PRELOAD")
UNRECORDED_ENV_NAMES = ("PAGELOCK_HISTORY", "PAGELOCK_PYTHON", "PAGELOCK_NO_REEXEC", "PAGELOCK_KERNEL_LOG",
                        "PAGELOCK_SEED", "PAGELOCK_TIME_SCALE", "PAGELOCK_JOURNAL", "CUDA_HOME", "CUDA_PATH")
UNRECORDED_ENV_PREFIXES = ("PAGELOCK_LIVE_",)
LIST_TIMEOUT_S = 60
KILL_GRACE_S = 5.0  # between SIGTERM and SIGKILL
KMSG = "/dev/kmsg"  # the kernel log the runner follows (RunConfig.kernel_log)
MAX_JOBS = 256  # RunConfig.jobs: targets run at once
FAILURES_LISTED_PER_TARGET = 200
FAILURES_PRINTED = 50  # at the end of a run


def cannot_write(path, e, verb="write"):
    """What an OSError while writing `path` is called everywhere: a full disk is 'no space left
    on <path>' (with the system's words), anything else 'cannot write <path>: <why>'."""
    why = getattr(e, "strerror", None) or e
    if getattr(e, "errno", None) == errno.ENOSPC:
        return f"no space left on {path} (cannot {verb} it: {why})"
    return f"cannot {verb} {path}: {why}"


class UsageError(Exception):
    """Bad usage or a broken bundle: exit 2."""


class OutputError(Exception):
    """The results cannot be written (full disk, read-only folder): exit 1."""


class RunStatus(str, enum.Enum):
    """What became of a whole run (runner.json's status, RunnerResult.status). Not a case's
    status (reports.model.Status): a run is CLEAN or has FAILURES, or never got to its cases."""
    RUNNING = "RUNNING"  # runner.json only, while the run is under way
    CLEAN = "CLEAN"
    FAILURES = "FAILURES"
    BAD_BUNDLE = "BAD_BUNDLE"
    NOTHING_SELECTED = "NOTHING_SELECTED"
    INTERRUPTED = "INTERRUPTED"
    OUTPUT_ERROR = "OUTPUT_ERROR"

    def __str__(self):
        return self.value

    @property
    def exit_code(self):
        return _EXIT_CODES[self]

    @property
    def says_why(self):
        """The run ended early: its message is printed."""
        return self in (RunStatus.BAD_BUNDLE, RunStatus.NOTHING_SELECTED,
                        RunStatus.OUTPUT_ERROR, RunStatus.INTERRUPTED)


_EXIT_CODES = {RunStatus.CLEAN: EXIT_CLEAN, RunStatus.FAILURES: EXIT_FAILURES,
               RunStatus.BAD_BUNDLE: EXIT_BAD_INPUT, RunStatus.OUTPUT_ERROR: EXIT_OUTPUT_ERROR,
               RunStatus.NOTHING_SELECTED: EXIT_NOTHING_SELECTED,
               RunStatus.INTERRUPTED: EXIT_INTERRUPTED}


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
    # Known benign kernel log lines (qualify passes its `kernel` expectation entries):
    # [{"case": case-id glob or "(run)", "line": glob over the line, "why": "file:line bug"}].
    kernel_excused: list = field(default_factory=list)


@dataclass
class TargetResult:
    label: str
    exit_code: int  # of the last launch; negative: killed by that signal
    testlogs_dir: str
    restarts: int
    problems: list = field(default_factory=list)  # what went wrong, one sentence each
    launches: list = field(default_factory=list)  # per launch: filter size, exit, blamed case
    counts: dict = field(default_factory=dict)  # case status name -> number of cases
    exclusive: bool = False  # tagged `exclusive`: nothing else ran beside it
    start_s: float = 0.0  # when it started and ended, seconds after the run's first start
    end_s: float = 0.0
    # failing cases, for the end-of-run list: {case, status, reason (one line), log}
    failures: list = field(default_factory=list)
    failures_not_listed: int = 0  # beyond FAILURES_LISTED_PER_TARGET


@dataclass
class RunnerResult:
    status: RunStatus  # a RunStatus name given as a string is turned into one
    targets: list
    out: str
    seed: "int | None" = None
    message: str = ""  # for BAD_BUNDLE, NOTHING_SELECTED, OUTPUT_ERROR, INTERRUPTED
    signal: int = 0  # the signal that interrupted the run
    counts: dict = field(default_factory=dict)
    # Kernel log lines read while no case ran: [{"line", "target" (or None), "kind" (a counted
    # kind, or None), "excused" (why, or None)}]; a counted one not excused fails the run's health.
    kernel_outside: list = field(default_factory=list)

    def __post_init__(self):
        self.status = RunStatus(self.status)

    @property
    def exit_code(self):
        return self.status.exit_code


def check_time_scale(scale):
    """None, or why --time-scale is refused: inf or nan removes every limit, and a scale near 0
    makes every limit 0 s."""
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) \
            or not TIME_SCALE_MIN <= scale <= TIME_SCALE_MAX:
        return (f"--time-scale must be a number from {TIME_SCALE_MIN:g} to {TIME_SCALE_MAX:g} "
                f"(got {scale!r})")
    return None
