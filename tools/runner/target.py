"""One target: its cases listed, the binary launched until every case has a result (restarted
on the cases it has not run after a crash or timeout, for free after exit 75), the case that
was running blamed, an end no case can be blamed for made the target's own "(binary)" case,
then test.xml written and the results counted."""

import os
from dataclasses import dataclass

from reports import model, testlogs
from tools.runner.cases import (CaseFilter, binary_env, exact_pattern, first_chunk, list_binary,
                                max_cases_per_binary)
from tools.runner.config import (FAILURES_LISTED_PER_TARGET, FILTER_MAX_CHARS, LIST_TIMEOUT_S,
                                 OutputError, TargetResult, cannot_write)
from tools.runner.journals import add_property, collect_launch
from tools.runner.kmsg import KERNEL_LOG_MAX_LINES, Excuses, counted_kind
from tools.runner.manifest import binary_path
from tools.runner.outdir import CappedLog, fresh_target_dir, make_attempt_dir, write_xml
from tools.runner.procs import describe_exit, launch, signame
from tools.runner.summary import one_line_reason, printable

Status = model.Status
_FAILING = frozenset(model.FAILING)


def run_target(bundle, target, out_root, cfg, seed, state):
    """Runs one manifest target into <out_root>/<package>/<name>. Returns its TargetResult;
    raises OutputError when its files cannot be written, UsageError when the binary cannot be
    started."""
    t = _TargetRun(bundle, target, out_root, cfg, seed, state)
    t.run()
    t.count(t.write_xml())
    return t.result


@dataclass
class _Attempt:
    """One launch of the binary, as the decisions after it need it."""
    number: int
    batch: list  # the cases it was asked to run
    rc: int
    timed_out: bool
    reason: str  # describe_exit's sentence
    normal: bool  # exit 0 or 1 with usable XML, no timeout, no signal
    progressed: bool = False  # some case got a result


class _TargetRun:
    def __init__(self, bundle, target, out_root, cfg, seed, state):
        self.label = target["label"]
        self.target, self.cfg, self.seed, self.state = target, cfg, seed, state
        self.tdir = fresh_target_dir(out_root, self.label)
        self.result = TargetResult(self.label, 0, self.tdir, 0)
        self.binary = binary_path(bundle, target)
        self.timeout_s = float(target["timeout_s"]) * cfg.time_scale
        env, _ = binary_env(cfg.env)
        env.pop("TEST_UNDECLARED_OUTPUTS_DIR", None)  # the journal goes where PAGELOCK_JOURNAL says
        env["PAGELOCK_TIME_SCALE"] = str(cfg.time_scale)
        env[model.SEED_ENV] = str(seed)
        self.env = env
        self.user_filter = cfg.filters.get(self.label, cfg.filters.get("*", ""))
        self.tlog = None
        self.done = {}  # case -> <testcase> element
        self.xml_attrs = {}  # root attributes of the binary's last XML that had any
        self.binary_problems = []  # (Status, sentence) for ends that no case can be blamed for
        self.kernel_between = []  # kernel log lines read while no case was running
        self.expected, self.expected_set = [], set()
        self.cfg_excuses = Excuses(cfg.kernel_excused)  # `kernel` expectation entries
        self.listing_whole = False  # the listing ended cleanly: a case it did not name is a phantom

    def run(self):
        cfg = self.cfg
        self.tlog = CappedLog(os.path.join(self.tdir, "test.log"), cfg.log_head_bytes,
                              cfg.log_tail_bytes)
        try:
            self.tlog.write(f"=== pagelock runner: {self.label}, PAGELOCK_SEED={self.seed}\n")
            self._launches(self._list())
            self._binary_case()
        finally:
            self.tlog.close()
        if self.tlog.error is not None:
            raise OutputError(cannot_write(self.tlog.path, self.tlog.error))

    def _list(self):
        """The cases to run: the listing, under the user's filter. A listing that failed is the
        INFRA_ERROR "(binary).setup" (MISSING when the run is stopping)."""
        listing = list_binary(self.binary, self.env, self.state,
                              LIST_TIMEOUT_S * self.cfg.time_scale,
                              max_cases_per_binary(self.cfg.max_cases))
        setup_problem = listing.problem or listing.warning
        if setup_problem:
            self.tlog.write(f"pagelock runner: the cases of {self.binary}: {setup_problem}\n")
            self.result.problems.append(f"listing the cases: {setup_problem}")
            status = Status.MISSING if self.state.signal else Status.INFRA_ERROR
            self.done["(binary).setup"] = testlogs.synthesize_case(
                "(binary).setup", status,
                f"listing the cases of {self.target['path']}: {setup_problem}")
        self.listing_whole = not setup_problem
        selection = CaseFilter(self.user_filter, listing.cases)
        self.expected = selection.select(listing.cases)
        self.expected_set = set(self.expected)  # a set: `c not in` a list was quadratic
        if self.user_filter and listing.cases and not self.expected:
            self.result.problems.append(f"the filter {self.user_filter[:200]!r} selects none of "
                                        f"its {len(listing.cases)} case(s)")
        return selection

    def _launches(self, selection):
        """Launches the binary until every expected case has a result, the restart budget is
        spent or the run is stopped. Every step is linear in the cases of the launch, and the
        signal flag is checked between launches."""
        remaining = list(self.expected)
        number = 0
        # The first launch runs the user's own filter (or everything), so a case the listing
        # missed still runs; where the filter is too long for one argument, or names a case the
        # binary would misread, the cases go in exact chunks.
        own_selection = len(self.user_filter) <= FILTER_MAX_CHARS and not selection.literal
        while remaining and not self.state.signal:
            if number == 0 and own_selection:
                batch, gfilter, exact = remaining, self.user_filter, False
            else:
                batch = first_chunk(remaining)
                gfilter, exact = ":".join(exact_pattern(c) for c in batch), True
            number += 1
            attempt = self._launch(number, batch, gfilter, exact)
            remaining = self._after(attempt, remaining)
        if self.state.signal:
            why = f"the run was interrupted by {signame(self.state.signal)}"
            for c in remaining:
                self.done[c] = testlogs.synthesize_case(c, Status.MISSING, f"never ran: {why}")
            self.result.problems.append(f"interrupted by {signame(self.state.signal)}")

    def _gtest_args(self, xml_path, gfilter):
        gargs = [f"--gtest_output=xml:{xml_path}"]
        if gfilter:
            gargs.append("--gtest_filter=" + gfilter)
        if self.cfg.shuffle:
            gargs += ["--gtest_shuffle", f"--gtest_random_seed={self.seed % 99999 + 1}"]
        return gargs

    def _launch(self, number, batch, gfilter, exact):
        """One launch on `batch`; its results go into self.done, its record into
        result.launches."""
        state, tlog, prog = self.state, self.tlog, self.state.progress
        adir = make_attempt_dir(self.tdir, number)
        journal = os.path.join(adir, model.JOURNAL_NAME)
        xml_path = os.path.join(adir, "gtest.xml")
        self.env[model.JOURNAL_ENV] = journal
        self.env["TEST_TMPDIR"] = os.path.join(adir, "tmp")
        gargs = self._gtest_args(xml_path, gfilter)
        shown = " ".join(gargs) if len(gfilter) < 300 else f"--gtest_filter=<{len(batch)} cases>"
        tlog.write(f"=== pagelock runner: attempt {number} of {self.label}: {shown}\n")
        prog.launch(journal, self.timeout_s, self.label, self.binary)
        cpu = {}
        rc, timed_out, secs, leftovers = launch([self.binary] + gargs, self.env, state,
                                                self.timeout_s, self.cfg.kill_grace_s,
                                                tlog.write, prog.tick, cpu,
                                                on_start=lambda pid: prog.session(self.label, pid))
        self.result.exit_code = rc
        klines = prog.end_launch(self.label)
        entry = {"attempt": number, "cases": len(batch), "returncode": rc,
                 "timed_out": timed_out, "seconds": round(secs, 3)}
        entry.update(cpu)  # user_s, sys_s: absent where the exit was reaped elsewhere
        if leftovers:
            entry["killed_leftovers"] = leftovers
            tlog.write(f"pagelock runner: killed {leftovers} process(es) the binary left "
                       "behind\n")
        before = len(self.done)
        report = collect_launch(xml_path, journal, self.done, exact, self.expected_set)
        if report.xml_attrs:
            self.xml_attrs = report.xml_attrs
        attempt = _Attempt(number, batch, rc, timed_out,
                           describe_exit(rc, timed_out, self.timeout_s, state.signal),
                           rc in (0, 1) and not timed_out and not state.signal and
                           report.xml_cases is not None)
        # A case that started and never ended is blamed for an end that was not normal, and for
        # any end when a result of it came before its start (the early word never stands alone).
        if report.running and (not attempt.normal or report.early is not None):
            self._blame(report.running, attempt, entry, report.early)
        self._attach_kernel_lines(klines, number, entry)
        attempt.progressed = len(self.done) > before
        self._judge_exit(attempt, report, entry)
        self.result.launches.append(entry)
        return attempt

    def _blame(self, running, attempt, entry, early=None):
        """The case that was running when the binary ended badly gets that end as its result
        (with a result recorded before its start, the conflict rule keeps the worse of both)."""
        if self.state.signal:
            status, msg = Status.MISSING, f"{attempt.reason} while this case was running"
        else:
            status = Status.TIMEOUT if attempt.timed_out else Status.CRASH
            msg = f"{attempt.reason} while running this case"
        blamed = testlogs.synthesize_case(running, status, msg, log_tail=self.tlog.recent_text())
        if early is not None:
            blamed = testlogs.merge_records(early, blamed, model.CONFLICT_EARLY)
        self.done[running] = blamed
        entry["blamed"] = running

    def _attach_kernel_lines(self, klines, number, entry):
        """Kernel lines go to test.log, and to the case that was running when they were read;
        those read while none was running wait for the "(binary)" case and go to the run
        level. The kernel's word (kmsg.py): a counted line no `kernel` entry excuses FAILs the
        case it was logged in, by the conflict rule, and the run's health outside a case."""
        for kcase, lines in klines.items():
            lines = lines[-KERNEL_LOG_MAX_LINES:]
            self.tlog.write(f"=== pagelock runner: kernel log during attempt {number}"
                            f"{' while ' + kcase + ' ran' if kcase else ''}:\n"
                            + "\n".join(lines) + "\n")
            target_el = self.done.get(kcase) if kcase else None
            if target_el is None:
                self.kernel_between.extend(lines)
                self.state.kernel_at_run_level(self.label, lines, self.cfg_excuses)
            else:
                self._kernel_word(kcase, target_el, lines)
            entry["kernel_log_lines"] = entry.get("kernel_log_lines", 0) + len(lines)

    def _kernel_word(self, case, el, lines):
        """Attaches the lines to the case, each counted one marked; the first counted line that
        no entry excuses FAILs the case (reports/model.py's rule names the conflict)."""
        case_id = f"{self.label[2:]}/{case}"
        shown, counted = [], []
        for line in lines:
            kind = counted_kind(line)
            why = self.cfg_excuses.why(case_id, line) if kind else None
            if kind and not why:
                counted.append((kind, line))
            shown.append(line + (f"  [{kind}: excused by {why}]" if why else
                                 f"  [{kind}: fails the case]" if kind else ""))
        if counted:
            kind, line = counted[0]
            fault = testlogs.synthesize_case(
                case, Status.FAIL, f"FAIL: the kernel logged {len(counted)} fault line(s) while "
                f"this case ran, the first a {kind} line: {line}")
            el = self.done[case] = testlogs.merge_records(
                el, fault, model.CONFLICT_KERNEL,
                said=f"the binary {testlogs.record_status(el)}, the kernel {kind}")
        add_property(el, "kernel_log", "\n".join(shown))

    def _failed(self, case_id):
        return testlogs.case_from_element(self.label, self.done[case_id]).status in _FAILING

    def _judge_exit(self, attempt, report, entry):
        """An exit status no case accounts for is a problem of the binary: exit 75 with no
        failed case, a timeout, crash or bad exit while no case was running."""
        rc, signalled, problems = attempt.rc, self.state.signal, self.binary_problems

        def ran_failed():  # only asked where the exit status needs it: one parse per case
            return any(self._failed(c) for c in report.added)

        if rc == model.EXIT_POISONED and not attempt.timed_out and not signalled:
            entry["poisoned"] = True
            if not ran_failed():
                problems.append((Status.FAIL, "the binary exited 75 (poisoned context) but "
                                 "no case of that launch failed"))
        elif not report.running and not signalled:
            unrun = [c for c in attempt.batch if c not in self.done]
            if attempt.timed_out:
                problems.append((Status.TIMEOUT, attempt.reason + " while no case was running"))
            elif rc < 0:
                when = "between cases" if unrun else "after its last case"
                problems.append((Status.CRASH, f"{attempt.reason} {when} (no case was running)"))
            elif unrun:
                # The exit status says the binary finished; the listing says it did not run
                # every case it was given. The conflict rule: the worse word, CRASH, stands.
                problems.append((Status.CRASH, model.conflict_note(
                    model.CONFLICT_UNRUN,
                    f"exit status {rc}, {len(unrun)} of the {len(attempt.batch)} listed case(s) it "
                    f"was given never started, e.g. {printable(unrun[0])[:200]}", Status.CRASH)))
            elif rc not in (0, 1) or (rc == 1 and not ran_failed()):
                problems.append((Status.FAIL, f"the binary exited with status {rc} although "
                                 "no case of that launch failed (Bazel counts it as a "
                                 "failure too)"))
            if report.xml_cases is None:
                entry["xml"] = report.xml_problem
                self.tlog.write(f"pagelock runner: no usable XML ({report.xml_problem}); results "
                                "come from the case journal\n")

    def _after(self, attempt, remaining):
        """The cases still to run after a launch. One that made no progress ends the target
        (the rest are MISSING); a crash or timeout uses up a restart (exit 75 does not)."""
        done = self.done
        left = [c for c in attempt.batch if c not in done]
        remaining = [c for c in remaining if c not in done]
        if self.state.signal or not left:
            return remaining
        if not attempt.progressed:
            why = f"{attempt.reason}; the binary made no progress" if not attempt.normal else \
                "the binary ended without reporting it"
            self.result.problems.append(f"attempt {attempt.number}: {why}")
            self._never_ran(left, why)
            return [c for c in remaining if c not in done]
        if attempt.rc != model.EXIT_POISONED or attempt.timed_out:
            self.result.restarts += 1
            if self.result.restarts > self.cfg.max_restarts:
                why = (f"restart budget of {self.cfg.max_restarts} spent "
                       f"(last end: {attempt.reason})")
                self.result.problems.append(why)
                self._never_ran(remaining, why)
                return []
        return remaining

    def _never_ran(self, cases, why):
        for c in cases:
            self.done[c] = testlogs.synthesize_case(c, Status.MISSING, f"never ran: {why}")

    def _binary_case(self):
        """Cases the listing did not name are said and, where the listing was whole, settled by
        the conflict rule (a result for a case the binary says it does not have is no PASS);
        ends no case accounts for become the target's own case "(binary).<name>", its status
        the worst of them."""
        unlisted = [c for c in self.done
                    if c not in self.expected_set and not c.startswith("(binary)")]
        if unlisted:
            self.result.problems.append(f"{len(unlisted)} case(s) ran that the listing did not "
                                        f"name (was it cut short?), e.g. "
                                        f"{printable(unlisted[0])[:200]}")
            if self.listing_whole:
                for c in unlisted:
                    phantom = testlogs.synthesize_case(
                        c, Status.FAIL, "FAIL: the binary reported a result for a case its "
                        "--gtest_list_tests did not name")
                    self.done[c] = testlogs.merge_records(
                        self.done[c], phantom, model.CONFLICT_UNLISTED,
                        said=f"the binary {testlogs.record_status(self.done[c])}, "
                             "its listing no such case")
        if self.binary_problems:
            worst = max((s for s, _ in self.binary_problems), key=lambda s: s.severity)
            text = "\n".join(f"{s}: {m}" for s, m in self.binary_problems)
            case_id = f"(binary).{self.label.split(':')[1]}"
            kernel = self.kernel_between[-KERNEL_LOG_MAX_LINES:]
            props = {"kernel_log": "\n".join(kernel)} if kernel else {}
            conflicts = [m for _, m in self.binary_problems if m.startswith("conflicting evidence")]
            if conflicts:
                props[model.CONFLICTS_PROP] = "\n".join(conflicts)
            self.done[case_id] = testlogs.synthesize_case(
                case_id, worst, text, log_tail=self.tlog.recent_text(), properties=props or None)
            self.result.problems += [m for _, m in self.binary_problems]
        elif self.kernel_between:
            self.result.problems.append(f"{len(self.kernel_between)} kernel log line(s) while "
                                        "no case was running (in test.log)")

    def write_xml(self):
        """test.xml: the expected cases in listing order, then the others. Returns its cases."""
        ordered = [self.done[c] for c in self.expected if c in self.done] + \
            [el for c, el in self.done.items() if c not in self.expected_set]
        root_attrs = dict(self.xml_attrs)
        if self.state.kernel is not None:
            root_attrs["pagelock_kernel_log"] = self.state.kernel.status
        write_xml(os.path.join(self.tdir, "test.xml"), self.label, root_attrs, ordered)
        return ordered

    def count(self, elements):
        """result.counts by status, and the failing cases for the end-of-run list."""
        result, log = self.result, os.path.join(self.tdir, "test.log")
        for el in elements:
            case = testlogs.case_from_element(self.label, el)
            status = str(case.status)
            result.counts[status] = result.counts.get(status, 0) + 1
            if status not in _FAILING:
                continue
            if len(result.failures) < FAILURES_LISTED_PER_TARGET:
                result.failures.append({"case": f"{case.suite}.{case.name}", "status": status,
                                        "reason": one_line_reason(case.message), "log": log})
            else:
                result.failures_not_listed += 1
