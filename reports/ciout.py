"""CI-native outputs of one run: a JUnit XML with the final verdict per case, and deqp-runner
style results.csv and failures.csv.

JUnit (`junit.xml`, one file per run, written by qualify into the run folder and by
`report.py --junit`). It validates against the Jenkins xUnit plugin's JUnit schema
(reports/testdata/junit-10.xsd; junit_schema_test.py checks every file it can find). Jenkins'
`junit`, GitLab's `artifacts:reports:junit` and most CI count `<failure>` and `<error>`; this
file carries the *final* verdict, so:
  REGRESSION (raw FAIL)                  <failure>, message = the one-line reason; every further
                                         failed attempt a <rerunFailure> (Maven Surefire)
  REGRESSION (CRASH, TIMEOUT, INFRA_ERROR, MISSING)  <error> (+ <rerunError> per further attempt)
  COVERAGE_LOST, DROPPED                 <failure> (the verdict blocks on them)
  FLAKE, KNOWN_FLAKE                     passes, with one <flakyFailure> (<flakyError> for a
                                         crash or timeout) per failed attempt: Surefire's
                                         convention, which the Flaky Test Handler and
                                         action-junit-report count as flaky
  EXPECTED_FAIL, KNOWN_COVERAGE_LOSS,   <skipped> with the expectation and its bug link (or, for
  PLATFORM_DIFFERS                      PLATFORM_DIFFERS, the platform difference that explains it)
  UNEXPECTED_PASS                        passes; system-out says the expectation is stale
  NOT_SUPPORTED, SKIP                    <skipped> with the reason
Without a comparison (report.py on bazel-testlogs) the raw status decides: FAIL is <failure>,
CRASH/TIMEOUT/INFRA_ERROR/MISSING are <error>, a case that passed on a retry is a flaky pass.
Every <testsuite> (one per Bazel target) has `time` (the sum of its cases), `hostname`,
`timestamp` when the run's start is known, and <properties>: GPU, driver, CUDA runtime and
driver API versions, run seed, and SKU, label and harness commit when qualify knows them.
The schema has no `skipped` on <testsuites>: only each <testsuite> counts its skipped cases.

results.csv: `case,status,duration` for every case (deqp-runner's columns and status names:
Pass, Fail, Crash, Timeout, Skip, Flake, KnownFlake, ExpectedFail, UnexpectedImprovement(Pass),
Missing, Warn; NOT_SUPPORTED is Skip, INFRA_ERROR is Crash; results.json keeps our statuses).
failures.csv: `case,status`, no header, the *unexpected* results only, as deqp-runner writes it:
regressions (Fail, Crash, Timeout, Missing), unexpected passes (UnexpectedImprovement(Pass)),
and lost coverage (Missing: exercised in the baseline, no result now). Expected failures and
flakes are not in it, so a QUALIFIED run's failures.csv is empty. Without a comparison every
failing case is unexpected. (expectations-update.txt proposes the entries to add.) Both have one
line per case: a line break in a name is written as `\\n` (`\\r`, else `\\uXXXX`).
"""

import csv
import io
import os
import re
import xml.etree.ElementTree as ET

from reports import model
from reports.compare import FINGERPRINT_PREFIX
from reports.htmlreport import headline, reason_line
from reports.model import Change, Status

JUNIT_NAME = "junit.xml"
RESULTS_CSV = "results.csv"
FAILURES_CSV = "failures.csv"

DEQP = {Status.PASS: "Pass", Status.WARN: "Warn", Status.NOT_SUPPORTED: "Skip", Status.SKIP: "Skip",
        Status.FAIL: "Fail", Status.TIMEOUT: "Timeout", Status.CRASH: "Crash", Status.INFRA_ERROR: "Crash",
        Status.MISSING: "Missing"}
DEQP_CHANGE = {Change.FLAKE: "Flake", Change.KNOWN_FLAKE: "KnownFlake", Change.EXPECTED_FAIL: "ExpectedFail",
               Change.UNEXPECTED_PASS: "UnexpectedImprovement(Pass)"}

# Fingerprint keys carried as <property> on every <testsuite>: (property name, fingerprint key).
SUITE_PROPERTIES = (("gpu", "gpu0_name"), ("gpu_count", "gpu_count"), ("driver", "nvidia_driver"),
                    ("cuda_driver_version", "cuda_driver_version"),
                    ("cuda_runtime_version", "cuda_runtime_version"), ("host", "host"))
INFO_PROPERTIES = (("sku", "sku"), ("label", "label"), ("tier", "tier"), ("run_key", "run_key"))


def _csv_lines(rows):
    """CSV text by the csv module (quoting ids with commas or quotes), '\\n' line ends, one
    line per row. A row with nothing to quote or escape (nearly all) is joined as it is."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    plain, special = [], _CSV_SPECIAL.search
    for row in rows:
        fields = [str(field) for field in row]
        if special("\0".join(fields)):  # one look at the whole row ('\0' quotes nothing)
            if plain:
                buf.write("".join(plain))
                plain = []
            w.writerow([_one_line(f) for f in fields])
        else:
            plain.append(",".join(fields) + "\n")
    buf.write("".join(plain))
    return buf.getvalue()


_CSV_SPECIAL = re.compile('[,"\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]')


# What str.splitlines() splits on. RFC quoting would keep a name with a line break in one field
# but on two lines, and deqp-runner's readers (and grep, wc -l) are line-based.
_LINE_BREAK = re.compile("[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def _one_line(text):
    """text with every line break written as an escape: '\\n', '\\r', else '\\uXXXX'."""
    named = {"\r": "\\r", "\n": "\\n"}
    return _LINE_BREAK.sub(lambda m: named.get(m.group(), f"\\u{ord(m.group()):04x}"), text)


def deqp_status(case, change=None):
    if change is not None and Change(str(change)) in DEQP_CHANGE:
        return DEQP_CHANGE[Change(str(change))]
    if change is None and case.flaky:
        return "Flake"
    return DEQP[case.status]


def results_csv(run, comp=None):
    status = comp.status if comp is not None else {}
    return _csv_lines((cid, deqp_status(c, status.get(cid)), f"{c.seconds:.3f}") for cid, c in _by_id(run))


def _by_id(run):
    """[(id, case)] sorted by id, each id computed once."""
    return sorted(((c.id, c) for c in run.cases), key=lambda ic: ic[0])


def unexpected_status(case, change):
    """deqp-runner's failures.csv status of a case, or None when the result was expected."""
    if change is None:
        return DEQP[case.status] if case.status.is_fail else None
    change = Change(str(change))
    if change == Change.REGRESSION:
        return DEQP[case.status]
    if change == Change.UNEXPECTED_PASS:
        return "UnexpectedImprovement(Pass)"
    if change == Change.COVERAGE_LOST:
        return "Missing"
    return None


def failures_csv(run, comp=None):
    """The unexpected results, `case,status`, no header (deqp-runner's failures.csv)."""
    status = comp.status if comp is not None else {}
    rows = []
    for cid, c in _by_id(run):
        st = unexpected_status(c, status.get(cid) if comp is not None else None)
        if st:
            rows.append((cid, st))
    if comp is not None:
        covered = set(comp.dropped_covered)
        rows += [(cid, "Missing") for cid in sorted(comp.dropped) if cid not in covered]
    return _csv_lines(rows)


def expectations_update(run, comp):
    """The failing cases as expectation entries (expectations-update.txt): a drop-in starting
    point. A `fail` entry carries message= (the one-line reason, as a glob), so the same case
    failing for another reason later is a REGRESSION, as the README recommends."""
    lines = ["# failures of this run, in expectations syntax: replace each bug=TODO with the bug report",
             "# (the loader refuses TODO), and key each entry by its cause (driver=, runtime=, host=;",
             "# reports/expectations.py). tools/qualify --draft-expectations RUN_DIR drafts a new SKU's files."]
    branch = str(run.fingerprint.get("nvidia_driver", "") or "").split(".", 1)[0]
    cond = f" driver={branch}" if branch else ""
    for c in run.cases:
        st = comp.status.get(c.id)
        if c.status.is_fail and st != Change.KNOWN_FLAKE:
            why = one_line(c)
            glob = message_glob(c.message)
            msg = f" message={glob}" if glob else ""
            lines.append(f"fail {c.id} status={c.status}{cond}{msg} bug=TODO  # {why[:100]}")
        if st == Change.FLAKE:
            lines.append(f"flake {c.id} bug=TODO  # attempts: {' '.join(map(str, c.attempts))}")
        if st == Change.COVERAGE_LOST:
            lines.append(f"coverage {c.id} bug=TODO  # {comp.notes.get(c.id, '')}")
    covered = set(comp.dropped_covered)
    for i in comp.dropped:
        if i not in covered:
            lines.append(f"coverage {i} bug=TODO  # dropped: in the baseline, not in this run")
    for key, st, why in comp.machine:
        if st == Change.COVERAGE_LOST and key != FINGERPRINT_PREFIX + "device_status":
            lines.append(f"coverage {key} bug=TODO  # {why}")
    return "\n".join(lines) + "\n"


def message_glob(message):
    """A message= glob for an expectation: the first words of the raw message's first meaningful
    line (expectations match message= against the raw message, not the headline), with digits
    and glob characters wildcarded so the same failure with other values still matches, and
    no spaces (an entry is split on them)."""
    said = _verbatim_reason(message)
    if not said:
        return ""
    words = re.sub(r"[0-9*?\[\]]+", "*", said).split()[:6]
    glob = re.sub(r"\*+", "*", "*".join(words))
    return f"*{glob}*".replace("**", "*") if glob else ""


_GTEST_WORDS = ("Expected equality of these values:", "Value of:", "Expected:", "Which is:", "Actual:")


def _verbatim_reason(message):
    """The reason as the raw message has it: the test's own streamed explanation (headline's
    lead), else the first line that is not gtest's wording."""
    from reports.htmlreport import meaningful_lines
    lead = headline(message).split(" — ", 1)[0].strip()
    if lead and lead in message and not lead.startswith(_GTEST_WORDS):
        return lead
    for line in meaningful_lines(message):
        if not line.strip().startswith(_GTEST_WORDS) and not line.startswith("  "):
            return line.strip()
    return ""


def one_line(case):
    """The case's one-line reason (the model's reason, else the message's meaningful line)."""
    return reason_line(case)


def _without_status(text, status):
    """'CRASH: killed by SIGSEGV' -> 'killed by SIGSEGV' when the status is CRASH: the message
    attribute names the status once."""
    for prefix in (f"{status}: ", f"{status} "):
        if text.upper().startswith(prefix):
            return text[len(prefix):]
    return text


def _clean(text):
    """XML 1.0 cannot carry most control characters: a test's raw output is shown (as the
    escapes of model.visible_text), never lost and never raw."""
    return model.visible_text(str(text))


def _out(case, extra=""):
    parts = [note for note in case.conflicts]  # reports/model.py: why the worse status stands
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


ALWAYS = ("gpu", "driver", "cuda_runtime_version")  # 'unknown' when the run did not record them


def _suite_properties(run, info):
    """GPU, driver, CUDA runtime and seed always ('unknown' when not recorded: a run from
    bazel-testlogs without a fingerprint), then what else is known."""
    fp = run.fingerprint
    props = [(name, fp.get(key) or "unknown") for name, key in SUITE_PROPERTIES
             if fp.get(key) or name in ALWAYS]
    seed = model.run_seed_of(fp)
    props.append(("seed", str(seed) if seed else "unknown"))
    commit = ((info or {}).get("bundle") or {}).get("commit")
    if commit:
        props.append(("harness_commit", commit))
    props += [(name, str(info[key])) for name, key in INFO_PROPERTIES if (info or {}).get(key)]
    return props


_ATTR_SPECIAL = re.compile('[&<>"\r\n\t]')


def _attr(value):
    """An attribute value as ElementTree escapes it."""
    value = str(value)
    if not _ATTR_SPECIAL.search(value):
        return value
    return (value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("\r", "&#13;").replace("\n", "&#10;").replace("\t", "&#09;"))


def _start_tag(tag, attrs):
    return f"<{tag}" + "".join(f' {k}="{_attr(v)}"' for k, v in attrs) + ">"


def _leaf(tag, attrs, text):
    """An element without children, as ElementTree writes it: its text escaped (& < >), or
    closed in place when it has none."""
    head = f"<{tag}" + "".join(f' {k}="{_attr(v)}"' for k, v in attrs)
    if not text:
        return head + " />"
    return head + ">" + text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") + f"</{tag}>"


_DROPPED = _leaf("failure", [("message", "[DROPPED] in the baseline, not in this run")], "")
_COVERED = _leaf("skipped", [("message", "KNOWN_COVERAGE_LOSS: in the baseline, not in this run; an "
                              "expectation names it")], "")


class _Doc:
    """The <testsuites> document being gathered: per suite its rows and the counts the schema
    wants on it. Rows are small (a case's fields, or only the id of a dropped case) and each
    <testcase> element is built only when written, one at a time (write): a baseline of 10^6
    dropped cases is about 160 bytes of junit.xml each, never a tree of 10^6 elements."""

    def __init__(self, name, run, info):
        self.name = name
        self.rows, self.counts = {}, {}
        self.properties = _suite_properties(run, info)
        self.host = run.fingerprint.get("host", "")
        self.timestamp = (info or {}).get("started_at", "")
        self.covered = set()  # dropped ids that an expectation names

    def suite(self, target):
        if target not in self.rows:
            self.rows[target] = []
            self.counts[target] = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
        return self.rows[target]

    def case(self, target, classname, casename, seconds, kind=None, message="", body="", out="",
             reruns=()):
        """One <testcase>; reruns: [(element, type, message, text)] (rerunFailure, flakyFailure...)."""
        self.suite(target).append((classname, casename, seconds, kind, message, body, out, reruns))
        self._count(target, kind, seconds)

    def dropped(self, target, cid, covered):
        """A case of the baseline not in this run: only its id is kept until it is written."""
        rows = self.rows.get(target)
        if rows is None:
            rows = self.suite(target)
        rows.append(cid)
        n = self.counts[target]
        n["tests"] += 1
        if covered:
            self.covered.add(cid)
            n["skipped"] += 1
        else:
            n["failures"] += 1

    def _count(self, target, kind, seconds):
        n = self.counts[target]
        if kind:
            n[{"failure": "failures", "error": "errors", "skipped": "skipped"}[kind]] += 1
        n["tests"] += 1
        n["time"] += seconds

    def _element(self, row):
        """One <testcase>, laid out as ElementTree.indent lays it at its depth (written as text:
        building an element per case took about 40 s for 10^6 cases)."""
        if isinstance(row, str):  # a dropped case: one line of text, its id split as CaseId.parse does
            colon = row.find(":")
            slash = row.find("/", colon + 1)
            suite, _, case = row[slash + 1:].partition(".")
            classname = f"{row[:slash]}.{suite}".replace("/", ".").replace(":", ".")
            return (f'<testcase classname="{_attr(_clean(classname))}" name="{_attr(_clean(case))}" '
                    f'time="0.000">\n      {_COVERED if row in self.covered else _DROPPED}\n    </testcase>')
        classname, casename, seconds, kind, message, body, out, reruns = row
        children = []
        if kind:
            children.append(_leaf(kind, [("message", _clean(message[:500]))], _clean(body) if body else ""))
        for tag, type_, msg, text in reruns:
            attrs = [("type", type_), ("message", _clean(msg[:500]))]
            if text:
                children.append(_start_tag(tag, attrs) + "\n        " + _leaf("stackTrace", [], _clean(text))
                                + f"\n      </{tag}>")
            else:
                children.append(_leaf(tag, attrs, ""))
        if out:
            children.append(_leaf("system-out", [], _clean(out)))
        attrs = [("classname", _clean(classname)), ("name", _clean(casename)), ("time", f"{seconds:.3f}")]
        if not children:
            return _leaf("testcase", attrs, "")
        return _start_tag("testcase", attrs) + "".join("\n      " + c for c in children) + "\n    </testcase>"

    def write(self, f):
        """The document, as ElementTree.indent would lay it out, written a case at a time."""
        totals = {"tests": 0, "failures": 0, "errors": 0, "time": 0.0}
        for n in self.counts.values():
            for k in totals:
                totals[k] += n[k]
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        root = [("name", self.name)] + [(k, f"{v:.3f}" if k == "time" else str(v)) for k, v in totals.items()]
        if not self.rows:
            f.write("<testsuites" + "".join(f' {k}="{_attr(v)}"' for k, v in root) + " />\n")
            return
        f.write(_start_tag("testsuites", root))
        for target, rows in self.rows.items():
            attrs = [("name", target[2:] if target.startswith("//") else target)]
            attrs += [(k, f"{v:.3f}" if k == "time" else str(v)) for k, v in self.counts[target].items()]
            if self.host:
                attrs.append(("hostname", self.host))
            if self.timestamp:
                attrs.append(("timestamp", self.timestamp))
            f.write("\n  " + _start_tag("testsuite", attrs))
            if self.properties:  # always: GPU, driver, runtime and seed at least
                f.write("\n    <properties>")
                for k, v in self.properties:
                    f.write(f'\n      <property name="{_attr(k)}" value="{_attr(_clean(v))}" />')
                f.write("\n    </properties>")
            for row in rows:
                f.write("\n    " + self._element(row))
            f.write("\n  </testsuite>")
        f.write("\n</testsuites>\n")

    def text(self):
        buf = io.StringIO()
        self.write(buf)
        return buf.getvalue()


def _attempt_elements(case, final_failed):
    """Surefire's elements for the attempts other than the one the verdict reports: a failing
    case's further failed attempts are rerunFailure/rerunError; a case that passed in the end
    gets one flakyFailure/flakyError per failed attempt."""
    failed = [a for a in case.attempts if a.is_fail]
    if final_failed:
        failed = failed[1:]
        tag = ("rerunFailure", "rerunError")
        msg, text = one_line(case), case.message
    else:
        tag = ("flakyFailure", "flakyError")
        text = case.first_failure
        msg = headline(text) if text else "failed, then passed on retry"
    return [(tag[0] if a == Status.FAIL else tag[1], str(a), _without_status(msg, a), text) for a in failed]


def junit_xml(run, comp=None, name="pagelock", info=None):
    """The JUnit document (text) of the run's final verdicts. info: qualify's run info (seed,
    SKU, label, commit, start time) for the suites' properties."""
    return _junit_doc(run, comp, name, info).text()


def _junit_doc(run, comp=None, name="pagelock", info=None):
    status = comp.status if comp is not None else {}
    notes = comp.notes if comp is not None else {}
    doc = _Doc(name, run, info)
    for cid, c in _by_id(run):
        ch = status.get(cid)
        ch = Change(str(ch)) if ch is not None else None
        classname = f"{c.target[2:]}.{c.suite}".replace("/", ".").replace(":", ".")
        msg = _without_status(one_line(c), c.status) if c.message or c.reason or c.first_failure else ""
        prefix = f"[{ch}] " if ch else ""
        if ch in (Change.EXPECTED_FAIL, Change.KNOWN_COVERAGE_LOSS, Change.PLATFORM_DIFFERS):
            doc.case(c.target, classname, c.name, c.seconds, "skipped",
                     f"{ch}: {c.status} as expected ({notes.get(cid, 'no bug link')})"
                     + (f": {msg}" if msg else ""), c.message, _out(c))
        elif ch == Change.COVERAGE_LOST:
            doc.case(c.target, classname, c.name, c.seconds, "failure",
                     f"{prefix}{c.status} now, exercised in the baseline: {msg}",
                     notes.get(cid, ""), _out(c))
        elif c.status.is_fail and ch not in (Change.KNOWN_FLAKE,):
            kind = "failure" if c.status == Status.FAIL else "error"
            doc.case(c.target, classname, c.name, c.seconds, kind, f"{prefix}{c.status}: {msg}", c.message,
                     _out(c), _attempt_elements(c, True))
        elif c.status in (Status.NOT_SUPPORTED, Status.SKIP):
            doc.case(c.target, classname, c.name, c.seconds, "skipped", f"{c.status}: {msg}")
        else:
            extra = ""
            if ch == Change.UNEXPECTED_PASS:
                extra = f"UNEXPECTED_PASS: a fail expectation says it fails ({notes.get(cid, '')}); update it"
            elif ch in (Change.FLAKE, Change.KNOWN_FLAKE) or (len(c.attempts) > 1 and c.flaky):
                extra = f"{ch or 'FLAKE'}: failed, then passed on retry"
            flaky = len(c.attempts) > 1 and c.flaky
            doc.case(c.target, classname, c.name, c.seconds, out=_out(c, extra) if (extra or c.logs) else "",
                     reruns=_attempt_elements(c, False) if flaky else ())
    if comp is not None:
        _dropped_and_machine(doc, comp)
    return doc


def _dropped_and_machine(doc, comp):
    covered = set(comp.dropped_covered)
    for cid in comp.dropped:  # the target as CaseId.parse finds it: '//' and the id to its '/'
        colon = cid.find(":")
        slash = cid.find("/", colon + 1)
        if colon < 0 or slash < 0:
            continue
        doc.dropped("//" + cid[:slash], cid, cid in covered)
    for key, ch, why in comp.machine:
        if str(ch) in (str(Change.COVERAGE_LOST), str(Change.REGRESSION)):  # REGRESSION: the kernel's word
            doc.case("//(machine)", "(machine)", key, 0.0, "failure", f"[{ch}] {why}")


def write(run_dir, run, comp=None, info=None):
    """Writes junit.xml, results.csv and failures.csv into run_dir; returns their paths."""
    paths = {}
    for name, writer in ((JUNIT_NAME, _junit_doc(run, comp, info=info).write),
                         (RESULTS_CSV, lambda f: f.write(results_csv(run, comp))),
                         (FAILURES_CSV, lambda f: f.write(failures_csv(run, comp)))):
        path = os.path.join(run_dir, name)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            writer(f)
        os.replace(tmp, path)
        paths[name] = path
    return paths
