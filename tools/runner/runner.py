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
  (environment_cleared); pagelock's and CUDA's variables and the library path the binaries
  had are recorded too (environment: what qualify --repro sets again);
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
new kernel log lines (NVRM, Xid, oom-kill, IOMMU, AER; --kernel-log, default /dev/kmsg, a file or
FIFO too) are attached to the case that was running (property kernel_log); test.xml's
pagelock_kernel_log says whether it was read. With several targets running, a line goes to the
case running in each of them and says how many targets were running. The kernel's word fails
the case (kmsg.py): an Xid, NVRM error, IOMMU fault or PCIe AER line FAILs the case it was logged
in, and one logged while no case ran is recorded in runner.json (kernel_log_outside_cases) and
fails the run (exit 3).
Conflicting evidence about a case (two results, a result before its start, a result for a case
the listing never named, the journal against the XML, an exit 0 or 1 that left listed cases
unrun): the worse status stands and the conflict is named (reports/model.py).
SIGKILL: every process the runner starts dies with it (PR_SET_PDEATHSIG), and the next runner on
the same --out ends what they forked (leftovers.py).

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

# This file is the entry point and the API; the work is done by its modules, one job each:
#   config    exit codes, limits, RunConfig, TargetResult, RunnerResult, RunStatus
#   manifest  manifest.json and the selection of targets
#   cases     the listing of a binary's cases, gtest filters, the binaries' environment
#   procs     launching and killing: sessions, the subreaper, leftovers found by a token
#   journals  case journals, messages of any size, what one launch adds to the results
#   target    one target: its launches, restarts, blamed cases, test.xml
#   schedule  which targets run beside which (--jobs, `exclusive`)
#   kmsg      the kernel log, and its word on the verdict
#   leftovers what a killed run leaves, ended by the next run on the same --out
#   progress  the progress line
#   outdir    files under --out (atomic writes, test.log, folders never followed out of --out)
#   summary   what is printed at the end; --json's object
#   session   one run: signals, checks before it starts, runner.json, the run's status
#   cli       the command line

import os
import sys

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.runner.runner"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

# What callers use (tools/qualify.py, the tests), under the names they always had.
from reports.model import EXIT_POISONED, JOURNAL_NAME
from tools.runner import cli
from tools.runner.cases import (
    CaseFilter, Listing, binary_env, exact_pattern, first_chunk, list_binary, list_cases,
    max_cases_per_binary)
from tools.runner.config import (
    EXIT_BAD_INPUT, EXIT_CLEAN, EXIT_FAILURES, EXIT_INTERRUPTED, EXIT_NOTHING_SELECTED,
    EXIT_OUTPUT_ERROR, MAX_JOBS, RUNNER_JSON, OutputError, RunConfig, RunnerResult, RunStatus,
    TargetResult, UsageError, check_time_scale)
from tools.runner.journals import journal_lines, shorten_event
from tools.runner.kmsg import KernelLog, check_kernel_log
from tools.runner.manifest import (
    binary_path, check_binaries, load_manifest, read_regular_file, select_targets)
from tools.runner.procs import kill_env_holders, kill_orphans, set_child_subreaper
from tools.runner.progress import Progress
from tools.runner.schedule import host_gpu_count, schedule_order
from tools.runner.session import run
from tools.runner.summary import failure_lines, one_line_reason, printable

select = select_targets  # the name tools/qualify.py uses

__all__ = [
    "EXIT_POISONED", "JOURNAL_NAME", "CaseFilter", "Listing", "binary_env", "exact_pattern",
    "first_chunk", "list_binary", "list_cases", "max_cases_per_binary", "EXIT_BAD_INPUT",
    "EXIT_CLEAN", "EXIT_FAILURES", "EXIT_INTERRUPTED", "EXIT_NOTHING_SELECTED",
    "EXIT_OUTPUT_ERROR", "MAX_JOBS", "RUNNER_JSON", "OutputError", "RunConfig", "RunnerResult",
    "RunStatus", "TargetResult", "UsageError", "check_time_scale", "journal_lines",
    "shorten_event", "KernelLog", "check_kernel_log", "binary_path", "check_binaries",
    "load_manifest", "read_regular_file", "select_targets", "select",
    "kill_env_holders", "kill_orphans", "set_child_subreaper", "Progress", "host_gpu_count",
    "schedule_order", "run", "failure_lines", "one_line_reason", "printable", "main"]


def main(argv=None):
    return cli.main(argv, description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
