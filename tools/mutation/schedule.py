"""The fault runs, within the budget: ready jobs first (a job is ready once the fault's earlier
phases are done), lowest phase first, then cheapest first; a fault's remaining jobs are dropped
once a run caught (killed or handled) it; a conforming variation runs all of its targets."""

import concurrent.futures
import time

from tools.mutation import scoring
from tools.mutation.catalogue import is_variation, run_env


class Schedule:
    def __init__(self, runs, by_fault, by_label, controls, target_timeout):
        self.runs, self.by_fault, self.by_label = runs, by_fault, by_label
        self.control, self.unstable, self.dur = controls.control, controls.unstable, controls.dur
        self.target_timeout = target_timeout
        self.done = {}  # (fault, target) -> (meta, statuses, fault log)
        self.skipped = []  # (fault, target) the budget left out
        self.not_needed = {}  # fault -> targets dropped once it was caught
        self.killed = set()  # faults caught

    def cap_for(self, label, name=None):
        """A fault that hangs a binary costs its whole limit: 3x the control's time + 10 s, at most
        --target-timeout. A variation gets 3x + 10 s whatever --target-timeout says, and a timing
        variation, which slows the work on purpose, twice that or --target-timeout, the larger: the
        runner's limit is the tool's, not the suite's, and must not be what a slower driver trips
        over (a binary of 20,000 waits under a 5 ms late return needs 100 s more, and the note of
        such a NOT_RUN says to raise --target-timeout)."""
        own = max(20.0, 3 * self.dur.get(label, 10) + 10)
        variation = bool(name) and is_variation(self.by_fault[name])
        # --target-timeout bounds what a hanging fault costs; a conforming variation is never cut
        # below 3x its binary's control time, else the tool's limit, not the suite, would raise
        # the false alarm (on the H200 a 23 s binary under 12 parallel jobs met the 45 s cap).
        cap = own if variation else min(self.target_timeout, own)
        timing = variation and self.by_fault[name]["kind"] == "timing"
        return max(2 * cap, self.target_timeout) if timing else cap

    def caught(self, name, result):
        meta, statuses, fault_log = result  # noqa: F841 (fault runs only)
        r = scoring.classify(self.by_fault[name],
                             [(meta, statuses, fault_log, self.control.get(meta["target"], {}))],
                             self.unstable)
        # HANDLED counts in the score as KILLED does: either ends the fault's search.
        return r["verdict"] in ("KILLED", "HANDLED")

    def outcome(self, name, label):
        """What became of one planned run, for mutation.json's target_plan."""
        if (name, label) in self.done:
            return "ran"
        if label in self.not_needed.get(name, []):
            return "not needed (already caught)"
        return "budget ran out" if (name, label) in self.skipped else "not run"

    def runs_of(self, name, labels):
        """The finished runs of a fault, each with its target's control statuses."""
        return [self.done[(name, l)] + (self.control.get(l, {}),) for l in labels if (name, l) in self.done]

    def run(self, items, workers):
        """items: [(fault, label, phase)], run `workers` at a time; sentinel jobs may start
        early when nothing is ready (never sweep jobs)."""
        todo = list(items)
        left = {}  # (fault, phase) -> jobs not finished
        for name, _, phase in todo:
            left[(name, phase)] = left.get((name, phase), 0) + 1

        def ready(item):
            name, _, phase = item
            return all(left.get((name, ph), 0) == 0 for ph in range(1, phase))

        def finish(item):
            left[(item[0], item[2])] -= 1

        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as ex:
            running = {}
            while todo or running:
                self._start(ex, todo, running, workers, ready, finish)
                if not running:
                    break  # todo is empty too: a fault's lowest waiting phase is always ready
                finished, _ = concurrent.futures.wait(list(running),
                                                      return_when=concurrent.futures.FIRST_COMPLETED)
                for fut in finished:
                    item = running.pop(fut)
                    self.done[(item[0], item[1])] = fut.result()
                    finish(item)
                    # A variation runs all its targets: every false alarm is listed.
                    if not is_variation(self.by_fault[item[0]]) and self.caught(item[0], self.done[(item[0], item[1])]):
                        self.killed.add(item[0])

    def _start(self, ex, todo, running, workers, ready, finish):
        """Starts jobs of todo until `workers` run, dropping those of caught faults and those
        the budget has no time left for."""
        while todo and len(running) < workers:
            for item in [i for i in todo if i[0] in self.killed]:
                todo.remove(item)
                finish(item)
                self.not_needed.setdefault(item[0], []).append(item[1])
            cands = [i for i in todo if ready(i)] or [i for i in todo if i[2] <= 2]
            if not cands:
                break
            # Cheapest first: a fault caught by a cheap run skips its expensive ones (on the
            # H200 data this halves the work against longest first).
            item = min(cands, key=lambda i: (i[2], self.dur.get(i[1], 10.0), i[0], i[1]))
            todo.remove(item)
            if time.monotonic() + min(self.dur.get(item[1], 10.0), 30) > self.runs.deadline:
                self.skipped.append((item[0], item[1]))
                finish(item)
                continue
            running[ex.submit(self.runs.job, item[0], item[0], self.by_label[item[1]],
                              self.cap_for(item[1], item[0]), None,
                              run_env(self.by_fault[item[0]]))] = item
