"""CI-native outputs of one run: a JUnit XML with the final verdict per case, and deqp-runner
style results.csv and failures.csv.

JUnit (`junit.xml`, one file per run, written by qualify into the run folder and by
`report.py --junit`). Jenkins' `junit`, GitLab's `artifacts:reports:junit` and most CI count
`<failure>` and `<error>`; this file carries the *final* verdict, so:
  REGRESSION (raw FAIL)                  <failure>, message = the meaningful line
  REGRESSION (CRASH, TIMEOUT, INFRA_ERROR, MISSING)  <error>
  COVERAGE_LOST, DROPPED                 <failure> (the verdict blocks on them)
  FLAKE, KNOWN_FLAKE                     passes; every attempt and the first failure in system-out
  EXPECTED_FAIL, KNOWN_COVERAGE_LOSS     <skipped> with the expectation and its bug link
  UNEXPECTED_PASS                        passes; system-out says the expectation is stale
  NOT_SUPPORTED, SKIP                    <skipped> with the reason
Without a comparison (report.py on bazel-testlogs) the raw status decides: FAIL is <failure>,
CRASH/TIMEOUT/INFRA_ERROR/MISSING are <error>, a case that passed on a retry passes.

results.csv: `case,status,duration` for every case (deqp-runner's columns and status names:
Pass, Fail, Crash, Timeout, Skip, Flake, KnownFlake, ExpectedFail, UnexpectedImprovement(Pass),
Missing, Warn; NOT_SUPPORTED is Skip, INFRA_ERROR is Crash; results.json keeps our statuses).
failures.csv: `case,status` for every case whose final status is a failure (expected ones
included), deqp-runner's format that can be checked in as the next fails list.
"""

import xml.etree.ElementTree as ET

from reports import model
from reports.htmlreport import headline
from reports.model import Change, Status

JUNIT_NAME = "junit.xml"
RESULTS_CSV = "results.csv"
FAILURES_CSV = "failures.csv"

DEQP = {Status.PASS: "Pass", Status.WARN: "Warn", Status.NOT_SUPPORTED: "Skip", Status.SKIP: "Skip",
        Status.FAIL: "Fail", Status.TIMEOUT: "Timeout", Status.CRASH: "Crash", Status.INFRA_ERROR: "Crash",
        Status.MISSING: "Missing"}
DEQP_CHANGE = {Change.FLAKE: "Flake", Change.KNOWN_FLAKE: "KnownFlake", Change.EXPECTED_FAIL: "ExpectedFail",
               Change.UNEXPECTED_PASS: "UnexpectedImprovement(Pass)"}


def _csv_field(text):
    text = str(text)
    if any(ch in text for ch in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def deqp_status(case, change=None):
    if change is not None and Change(str(change)) in DEQP_CHANGE:
        return DEQP_CHANGE[Change(str(change))]
    if change is None and case.flaky:
        return "Flake"
    return DEQP[case.status]


def results_csv(run, comp=None):
    status = comp.status if comp is not None else {}
    lines = [f"{_csv_field(c.id)},{deqp_status(c, status.get(c.id))},{c.seconds:.3f}"
             for c in sorted(run.cases, key=lambda c: c.id)]
    return "\n".join(lines) + ("\n" if lines else "")


def failures_csv(run, comp=None):
    status = comp.status if comp is not None else {}
    lines = [f"{_csv_field(c.id)},{DEQP[c.status]}" for c in sorted(run.cases, key=lambda c: c.id)
             if c.status.is_fail and status.get(c.id) != Change.KNOWN_FLAKE]
    return "\n".join(lines) + ("\n" if lines else "")


def _clean(text):
    """XML 1.0 cannot carry most control characters: a test's raw output is shown, not lost."""
    return "".join(ch if ch in "\t\n\r" or ord(ch) >= 0x20 else f"\\x{ord(ch):02x}" for ch in str(text))


def _out(case, extra=""):
    parts = []
    if len(case.attempts) > 1:
        parts.append("attempts: " + " ".join(map(str, case.attempts)))
    if case.first_failure:
        parts.append("first failed attempt:\n" + case.first_failure)
    if extra:
        parts.append(extra)
    parts.append("replay:\n" + case.replay_command())
    for name, text in case.logs.items():
        parts.append(f"{name}:\n{text}")
    return "\n".join(parts)


def junit_xml(run, comp=None, name="pagelock"):
    """The JUnit document (text) of the run's final verdicts."""
    status = comp.status if comp is not None else {}
    notes = comp.notes if comp is not None else {}
    root = ET.Element("testsuites", name=name)
    suites, counts = {}, {}
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}

    def suite_of(target):
        if target not in suites:
            suites[target] = ET.SubElement(root, "testsuite", name=target[2:] if target.startswith("//") else target)
            counts[target] = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        return suites[target]

    def add(target, classname, casename, seconds, kind=None, message="", body="", out=""):
        s, n = suite_of(target), counts.setdefault(target, {})
        tc = ET.SubElement(s, "testcase", classname=_clean(classname), name=_clean(casename),
                           time=f"{seconds:.3f}")
        if kind:
            el = ET.SubElement(tc, kind, message=_clean(message[:500]))
            if body:
                el.text = _clean(body)
            key = {"failure": "failures", "error": "errors", "skipped": "skipped"}[kind]
            n[key] += 1
            totals[key] += 1
        if out:
            ET.SubElement(tc, "system-out").text = _clean(out)
        n["tests"] += 1
        totals["tests"] += 1

    for c in sorted(run.cases, key=lambda c: c.id):
        ch = status.get(c.id)
        ch = Change(str(ch)) if ch is not None else None
        classname = f"{c.target[2:]}.{c.suite}".replace("/", ".").replace(":", ".")
        msg = headline(c.message) if c.message else ""
        prefix = f"[{ch}] " if ch else ""
        if ch in (Change.EXPECTED_FAIL, Change.KNOWN_COVERAGE_LOSS):
            add(c.target, classname, c.name, c.seconds, "skipped",
                f"{ch}: {c.status} as expected ({notes.get(c.id, 'no bug link')})", c.message, _out(c))
        elif ch == Change.COVERAGE_LOST:
            add(c.target, classname, c.name, c.seconds, "failure",
                f"{prefix}{c.status} now, exercised in the baseline: {c.reason or msg}",
                notes.get(c.id, ""), _out(c))
        elif c.status.is_fail and ch not in (Change.KNOWN_FLAKE,):
            kind = "failure" if c.status == Status.FAIL else "error"
            add(c.target, classname, c.name, c.seconds, kind, f"{prefix}{c.status}: {msg}", c.message, _out(c))
        elif c.status in (Status.NOT_SUPPORTED, Status.SKIP):
            add(c.target, classname, c.name, c.seconds, "skipped", f"{c.status}: {c.reason or msg}")
        else:
            extra = ""
            if ch == Change.UNEXPECTED_PASS:
                extra = f"UNEXPECTED_PASS: a fail expectation says it fails ({notes.get(c.id, '')}); update it"
            elif ch in (Change.FLAKE, Change.KNOWN_FLAKE) or c.flaky:
                extra = f"{ch or 'FLAKE'}: failed, then passed on retry"
            add(c.target, classname, c.name, c.seconds, out=_out(c, extra) if (extra or c.logs) else "")
    if comp is not None:
        covered = set(comp.dropped_covered)
        for cid in comp.dropped:
            try:
                parsed = model.CaseId.parse(cid)
            except ValueError:
                continue
            classname = f"{parsed.target[2:]}.{parsed.suite}".replace("/", ".").replace(":", ".")
            if cid in covered:
                add(parsed.target, classname, parsed.case, 0.0, "skipped",
                    "KNOWN_COVERAGE_LOSS: in the baseline, not in this run; an expectation names it")
            else:
                add(parsed.target, classname, parsed.case, 0.0, "failure",
                    "[DROPPED] in the baseline, not in this run")
        for key, ch, why in comp.machine:
            if str(ch) == str(Change.COVERAGE_LOST):
                add("//(machine)", "(machine)", key, 0.0, "failure", f"[COVERAGE_LOST] {why}")
    for target, s in suites.items():
        for k, v in counts[target].items():
            s.set(k, str(v))
    for k, v in totals.items():
        root.set(k, str(v))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write(run_dir, run, comp=None):
    """Writes junit.xml, results.csv and failures.csv into run_dir; returns their paths."""
    import os
    paths = {}
    for name, text in ((JUNIT_NAME, junit_xml(run, comp)), (RESULTS_CSV, results_csv(run, comp)),
                       (FAILURES_CSV, failures_csv(run, comp))):
        path = os.path.join(run_dir, name)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        paths[name] = path
    return paths
