"""Scheduling: which targets run beside which. Up to RunConfig.jobs targets run at once, each in a
worker thread; a target tagged `exclusive` runs alone, and the exclusive ones run first."""

import os
import queue
import re
import threading
import time

from tools.runner import target as target_run  # looked up at each start (tests wrap it)
from tools.runner.summary import target_line

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


def is_exclusive(target, gpus=None):
    """Tagged `exclusive`, unless it needs more GPUs than the host has (gpus known): then every
    case reports NotSupported and there is nothing for it to be alone for."""
    if "exclusive" not in target.get("tags", []):
        return False
    return gpus is None or _gpus_required(target) <= gpus


def schedule_order(targets, jobs, durations=None, gpus=None):
    """The order targets start in. Serial: the selection's order. With jobs > 1 the targets
    that run alone (is_exclusive) come first, as one block in their own order, so the pool of
    parallel targets is never drained for them; the others follow longest first by
    `durations` (label -> expected seconds; a target it does not know counts as longest, since
    it may be), else in their order, so the longest target does not start last."""
    if jobs <= 1:
        return list(targets)
    rest = [t for t in targets if not is_exclusive(t, gpus)]
    if durations:
        rest.sort(key=lambda t: -durations.get(t["label"], float("inf")))  # stable: ties keep order
    return [t for t in targets if is_exclusive(t, gpus)] + rest


def run_all(config, targets, out, seed, state, results):
    """Runs the targets, up to config.jobs at once, each in a worker thread (the main thread
    keeps the signal handlers, which stop every running process group). A target tagged
    `exclusive` starts only when nothing else runs, and nothing starts beside it. The
    TargetResults are appended to `results` in the selection's order, also when a target fails:
    an OutputError or UsageError of one target stops new starts, the running targets finish,
    and then the first error is raised (runner.json still records what finished)."""
    pool = _Pool(config, out, seed, state)
    pool.run(schedule_order(targets, max(1, config.jobs), config.durations, config.gpus))
    position = {t["label"]: i for i, t in enumerate(targets)}
    results.extend(sorted(pool.by_label.values(), key=lambda r: position[r.label]))
    if pool.error is not None:
        raise pool.error


class _Pool:
    def __init__(self, config, out, seed, state):
        self.config, self.out, self.seed, self.state = config, out, seed, state
        self.jobs = max(1, config.jobs)
        self.finished = queue.Queue()
        self.running = {}  # label -> exclusive?
        self.by_label = {}
        self.error = None
        self.t0 = time.monotonic()

    def _work(self, t, exclusive):
        start = time.monotonic() - self.t0
        try:
            r = target_run.run_target(self.config.bundle, t, self.out, self.config, self.seed,
                                      self.state)
            r.exclusive, r.start_s, r.end_s = exclusive, round(start, 3), \
                round(time.monotonic() - self.t0, 3)
        except BaseException as e:  # noqa: B902 -- handed to the main thread, raised there
            r = e
        self.finished.put((t, r))

    def _start_what_may(self, waiting):
        state, running = self.state, self.running
        while waiting and self.error is None and not state.signal and len(running) < self.jobs:
            t = waiting[0]
            exclusive = is_exclusive(t, self.config.gpus)
            if running and (exclusive or any(running.values())):
                return
            waiting.pop(0)
            running[t["label"]] = exclusive
            state.progress.target_started(t["label"])
            threading.Thread(target=self._work, args=(t, exclusive), daemon=True,
                             name=f"runner {t['label']}").start()

    def run(self, waiting):
        progress = self.state.progress
        while waiting or self.running:
            self._start_what_may(waiting)
            if not self.running:
                break
            try:
                t, r = self.finished.get(timeout=0.2)
            except queue.Empty:
                continue
            del self.running[t["label"]]
            if isinstance(r, BaseException):
                progress.target_ended(f"{t['label']}: stopped ({r})", t["label"])
                self.error = self.error or r
                continue
            self.by_label[t["label"]] = r
            progress.target_ended(target_line(r), t["label"])
