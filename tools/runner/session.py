"""One run: the signal handlers and the subreaper around it, the configuration and the bundle
checked before anything starts, runner.json kept from RUNNING to the final status, and the
run's status (a RunStatus) and counts."""

import dataclasses
import os
import random
import signal
import sys
import threading
import time

from reports import model
from tools.runner import leftovers, outdir
from tools.runner.cases import binary_env, max_cases_per_binary, recorded_environment
from tools.runner.config import (MAX_JOBS, RUNNER_JSON, OutputError, RunConfig, RunnerResult,
                                 RunStatus, UsageError, cannot_write, check_time_scale)
from tools.runner.kmsg import Excuses, KernelLog, check_kernel_log
from tools.runner.manifest import check_binaries, load_manifest, select_targets
from tools.runner.procs import RunState, kill_orphans, set_child_subreaper, signame
from tools.runner.progress import Progress, Quiet
from tools.runner.schedule import host_gpu_count, run_all

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def run(config: RunConfig) -> RunnerResult:
    """Runs the selected targets of a bundle into config.out. Never raises for bad input, a
    broken bundle, a full disk or a signal: the status says what happened."""
    out = os.path.abspath(config.out)
    state = RunState()
    old_handlers = {}
    if threading.current_thread() is threading.main_thread():
        for s in _STOP_SIGNALS:
            old_handlers[s] = signal.signal(s, state.on_signal)
    state.subreaper = set_child_subreaper(True)
    try:
        return _run(config, out, state)
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


def _checked(config, out, state):
    """The configuration with its cap on cases resolved, the manifest and the selected targets.
    Where none is selected, the binaries and --out are not looked at. Raises UsageError or
    OutputError."""
    why = check_time_scale(config.time_scale) or \
        (check_kernel_log(config.kernel_log) if config.kernel_log else None)
    if why:
        raise UsageError(why)
    config = dataclasses.replace(config, max_cases=max_cases_per_binary(config.max_cases))
    manifest = load_manifest(config.bundle)
    targets = select_targets(manifest["targets"], config.tags, config.target_regex,
                             config.labels)
    if targets:
        check_binaries(config.bundle, targets)
        # A runner killed on this --out (SIGKILL) left them: ended, said, and in runner.json.
        state.ended_leftovers = leftovers.end_leftovers(out) if os.path.isdir(out) else []
        outdir.prepare_out(out)
    return config, manifest, targets


def _run(config, out, state):
    try:
        config, manifest, targets = _checked(config, out, state)
    except UsageError as e:
        return RunnerResult(RunStatus.BAD_BUNDLE, [], out, config.seed, str(e))
    except OutputError as e:
        return RunnerResult(RunStatus.OUTPUT_ERROR, [], out, config.seed, str(e))
    if not targets:
        return RunnerResult(RunStatus.NOTHING_SELECTED, [], out, config.seed,
                            "no target matches the selection")
    seed = config.seed if config.seed is not None else _draw_seed()
    jobs = config.jobs
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= MAX_JOBS:
        return RunnerResult(RunStatus.BAD_BUNDLE, [], out, config.seed,
                            f"jobs must be a whole number from 1 to {MAX_JOBS} (got {jobs!r})")
    _watch(config, state, len(targets))
    if config.gpus is None:
        config = dataclasses.replace(config, gpus=host_gpu_count())
    ended = state.ended_leftovers
    for pid, cmd in ended:
        state.progress.line(f"ended process {pid} that a killed run left in {out}: {cmd}")
    record = _Record(out, targets, {
        "ended_leftovers": [{"pid": pid, "command": cmd} for pid, cmd in ended],
        "format": 1, "bundle": manifest.get("info", {}), "seed": seed, "jobs": jobs,
        "gpus": config.gpus, "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": dataclasses.asdict(config), "status": RunStatus.RUNNING, "targets": [],
        "not_run": [], "environment_cleared": binary_env(config.env)[1],
        # what a reproducer of a case sets again (tools/qualification/repro.py)
        "environment": recorded_environment(binary_env(config.env)[0])})
    return _run_targets(config, targets, out, seed, state, record)


def _draw_seed():
    return random.SystemRandom().randrange(1, 10 ** 12)


def _watch(config, state, total):
    """The progress output and the kernel log, which the launches report to."""
    jobs = config.jobs
    state.progress = Quiet(jobs) if config.quiet else Progress(
        total, stream=sys.stderr if config.progress_stderr else sys.stdout, jobs=jobs)
    state.kernel = KernelLog(config.kernel_log) if config.kernel_log else None
    state.progress.kernel = state.kernel
    if state.kernel is not None and not state.kernel.readable:
        state.progress.line(f"kernel log {state.kernel.status}: the report will say so")


def _run_targets(config, targets, out, seed, state, record):
    results = []
    message = ""
    live = None
    try:
        try:
            os.makedirs(out, exist_ok=True)
            live = leftovers.LiveRecord(out)  # what the next run ends if this one is killed
        except OSError as e:
            raise OutputError(cannot_write(out, e, "create"))
        record.write(RunStatus.RUNNING, results, message)
        run_all(config, targets, out, seed, state, results)
        _kernel_after_the_last_target(config, state)
        record.info["kernel_log_outside_cases"] = state.kernel_outside
        if state.signal:
            status = RunStatus.INTERRUPTED
            message = (f"interrupted by {signame(state.signal)}: results of {len(results)} of "
                       f"{len(targets)} target(s) written to {out}")
        else:
            unhealthy = any(k["kind"] and not k["excused"] for k in state.kernel_outside)
            status = RunStatus.FAILURES if unhealthy or any(
                r.counts.get(s) for r in results for s in model.FAILING) else RunStatus.CLEAN
        record.write(status, results, message)
    except OutputError as e:
        status, message = RunStatus.OUTPUT_ERROR, str(e)
        record.write_last(status, results, message)
    except UsageError as e:  # a binary that cannot be started
        status, message = RunStatus.BAD_BUNDLE, str(e)
        record.write_last(status, results, message)
    finally:
        if live is not None:
            live.close()
    counts = {}
    for r in results:
        for k, v in r.counts.items():
            counts[k] = counts.get(k, 0) + v
    return RunnerResult(status, results, out, seed, message, state.signal, counts,
                        list(state.kernel_outside))


def _kernel_after_the_last_target(config, state):
    """The kernel lines read while no target ran (between targets, after the last one): to the
    run level, with those the targets read while none of their cases ran."""
    if state.kernel is None or state.progress is None:
        return
    state.progress.poll()
    lines, state.progress.kernel_outside = state.progress.kernel_outside, []
    if lines:
        state.kernel_at_run_level(None, lines, Excuses(config.kernel_excused))


class _Record:
    """runner.json, rewritten at the start (RUNNING) and at the end of the run. It never says
    RUNNING after the run: where the final record cannot be written (a full disk), the RUNNING
    one, padded for it, is overwritten in place."""

    def __init__(self, out, targets, info):
        self.out, self.targets, self.info = out, targets, info
        self.path = os.path.join(out, RUNNER_JSON)

    def write(self, status, results, message):
        info = self.info
        info["status"] = status
        info["message"] = message
        info["targets"] = [dataclasses.asdict(r) for r in results]
        ran = {r.label for r in results}
        info["not_run"] = [{"label": t["label"],
                            "testlogs_dir": outdir.target_dir(self.out, t["label"])}
                           for t in self.targets if t["label"] not in ran]
        if status is RunStatus.RUNNING:
            outdir.write_padded_json(self.path, info, 4096 + 512 * len(self.targets))
            return
        try:
            outdir.write_json(self.path, info)
        except OutputError:
            info["status"] = RunStatus.OUTPUT_ERROR
            info["message"] = message or f"cannot write {self.path}"
            outdir.overwrite_in_place(self.path, info)
            raise

    def write_last(self, status, results, message):
        """The record after an error: what fits is left (write), never an exception."""
        try:
            self.write(status, results, message)
        except OutputError:
            pass
