"""The results model: one run = a fingerprint plus one record per test case.

Reads GoogleTest XML as found in a testlogs tree (Bazel's bazel-testlogs or the bundle runner's
output, same layout), the case journals that pagelock binaries write, and the runner's markers.
A missing, truncated or malformed test.xml is a result (CRASH, TIMEOUT or MISSING with the
reason), never an exception.

These are raw records (the status as gtest, the journal or the runner says it, the properties
as recorded); reports/model.py turns them into typed cases and owns every pass/fail rule.
"""

import io
import json
import os
import re
import zipfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from reports import model
from reports.model import FAILING, STATUSES, count_statuses, format_counts  # noqa: F401

from reports.model import NOT_SUPPORTED_PREFIX  # noqa: E402,F401

_CASE_ATTRS = {"name", "file", "line", "status", "result", "time", "timestamp", "classname",
               "value_param", "type_param"}
_ROOT_ATTRS = {"tests", "failures", "disabled", "errors", "time", "timestamp", "name", "skipped"}


@dataclass
class Case:
    target: str  # Bazel label, "//suites/hostalloc:hostalloc_test"
    suite: str  # GoogleTest suite, "AllFlagCombinations/HostAllocFlagsTest"
    name: str  # GoogleTest name, "KernelReadsAndWrites.../mapped"
    status: str
    seconds: float = 0.0
    message: str = ""  # failure text, or crash description
    reason: str = ""  # why NOT_SUPPORTED or SKIP
    properties: dict = field(default_factory=dict)

    @property
    def gtest_name(self):
        return f"{self.suite}.{self.name}"

    @property
    def id(self):
        """Stable id: '<package>:<target>/<suite>.<name>'."""
        return f"{self.target[2:]}/{self.gtest_name}"



@dataclass
class Run:
    fingerprint: dict = field(default_factory=dict)
    cases: list = field(default_factory=list)
    problems: list = field(default_factory=list)  # how the tree was read (unreadable files, ...)

    def counts(self):
        return count_statuses(c.status for c in self.cases)

    # results.json belongs to reports/model.py; these two keep older callers working.
    def to_json(self):
        return model.Run.from_raw(self).to_json()

    @staticmethod
    def from_json(d):
        """A typed reports.model.Run (same attributes, typed statuses)."""
        return model.Run.from_json(d)


def is_clean(counts):
    return not any(counts.get(s, 0) for s in FAILING)


def tail(path, max_bytes):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read().decode("utf-8", "replace")
        return ("..." if size > max_bytes else "") + data
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------
# GoogleTest XML and journals (also used by the bundle runner to merge attempts)

def _case_id(el):
    return f"{el.get('classname', '')}.{el.get('name', '')}"


def read_gtest_xml_cases(path):
    """Returns ({'Suite.Name': <testcase> element}, root attributes), or (None, {}) when the file
    is missing, truncated or not GoogleTest XML."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None, {}
    if root.tag != "testsuites" or root.get("name") != "AllTests":
        return None, {}
    cases = {}
    for el in root.iter("testcase"):
        cases[_case_id(el)] = el
    return cases, dict(root.attrib)


def synthesize_case(case_id, status, message, log_tail="", seconds=0.0, properties=None,
                    skip_message=None):
    """A GoogleTest-shaped <testcase> for a result the binary could not write itself."""
    suite, _, name = case_id.rpartition(".")
    el = ET.Element("testcase", {"name": name, "classname": suite, "status": "run",
                                 "result": "completed", "time": f"{seconds:.3f}"})
    props = dict(properties or {})
    if status not in ("PASS", "FAIL", "SKIP"):
        props["pagelock.status"] = status
    if log_tail:
        props["log_tail"] = log_tail
    if props:
        pe = ET.SubElement(el, "properties")
        for k, v in props.items():
            ET.SubElement(pe, "property", {"name": k, "value": str(v)})
    if status == "SKIP":
        ET.SubElement(el, "skipped", {"message": skip_message or message}).text = skip_message or message
    elif status != "PASS":
        ET.SubElement(el, "failure", {"message": message, "type": ""}).text = message
    return el


def read_journal(path_or_lines):
    """Reads a case journal. Returns ({case: <testcase>} for cases that ended, the case that
    started and never ended or None)."""
    if isinstance(path_or_lines, str):
        try:
            with open(path_or_lines, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return {}, None
    else:
        lines = path_or_lines
    finished, running = {}, None
    for line in lines:
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by the crash
        if ev.get("event") == "start":
            running = ev.get("case")
        elif ev.get("event") == "end":
            case = ev.get("case")
            status = ev.get("status", "FAIL")
            msg = ev.get("message", "")
            finished[case] = synthesize_case(case, status, msg, seconds=float(ev.get("seconds", 0)),
                                             properties=ev.get("properties"),
                                             skip_message=msg if status == "SKIP" else None)
            if running == case:
                running = None
    return finished, running


def write_merged_xml(path, label, root_attrs, elements):
    root = ET.Element("testsuites", {k: v for k, v in root_attrs.items() if k not in _ROOT_ATTRS})
    root.set("name", "AllTests")
    suites = {}
    for el in elements:
        suite = el.get("classname", "")
        if suite not in suites:
            suites[suite] = ET.SubElement(root, "testsuite", {"name": suite})
        suites[suite].append(el)
    for s in suites.values():
        s.set("tests", str(len(s)))
    root.set("tests", str(len(elements)))
    root.set("pagelock_target", label)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    ET.ElementTree(root).write(path, encoding="UTF-8", xml_declaration=True)


def write_infra_error_xml(path, label, message):
    write_merged_xml(path, label, {}, [synthesize_case("(binary).setup", "INFRA_ERROR", message)])


# ---------------------------------------------------------------------------------------------
# Reading a testlogs tree

def _properties(el, standard):
    props = {k: v for k, v in el.attrib.items() if k not in standard}
    for pe in el.findall("properties/property"):
        props[pe.get("name", "")] = pe.get("value", "")
    return props


def case_from_element(target, el):
    props = _properties(el, _CASE_ATTRS)
    failures = el.findall("failure") + el.findall("error")
    skipped = el.find("skipped")
    message = "\n\n".join((f.text or f.get("message", "")).strip() for f in failures)
    reason = ""
    status = props.pop("pagelock_status", None)
    declared = props.get("pagelock.status")  # fixtures/outcome.h
    if status is None and declared in ("CRASH", "TIMEOUT", "MISSING", "INFRA_ERROR"):
        status = declared
    if status is None and declared in ("NOT_SUPPORTED", "WARN") and not failures:
        status, reason = declared, props.get("pagelock.reason", "")
    if status is None:
        if failures:
            status = "FAIL"
        elif skipped is not None or el.get("result") == "skipped":
            text = (skipped.text or skipped.get("message", "")) if skipped is not None else ""
            idx = text.find(NOT_SUPPORTED_PREFIX)
            if idx >= 0:
                status, reason = "NOT_SUPPORTED", text[idx + len(NOT_SUPPORTED_PREFIX):].strip()
            else:
                status, reason = "SKIP", text.strip()
        elif el.get("status") == "notrun" or el.get("result") == "suppressed":
            status, reason = "SKIP", "disabled"
        elif props.get("status_detail") == "QualityWarning":
            status = "WARN"
        else:
            status = "PASS"
    try:
        seconds = float(el.get("time", "0") or 0)
    except ValueError:
        seconds = 0.0
    return Case(target, el.get("classname", ""), el.get("name", ""), status, seconds, message,
                reason, props)


def _journal_lines_from_outputs(tdir):
    """The case journal Bazel kept for a test: test.outputs/ or test.outputs/outputs.zip."""
    plain = os.path.join(tdir, "test.outputs", "pagelock_journal.jsonl")
    if os.path.exists(plain):
        with open(plain, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    zpath = os.path.join(tdir, "test.outputs", "outputs.zip")
    if os.path.exists(zpath):
        try:
            with zipfile.ZipFile(zpath) as z:
                for n in z.namelist():
                    if n.endswith("pagelock_journal.jsonl"):
                        return io.TextIOWrapper(z.open(n), encoding="utf-8",
                                                errors="replace").read().splitlines()
        except zipfile.BadZipFile:
            return None
    return None


def _cases_without_gtest_xml(target, tdir, why):
    """A target whose binary did not finish writing its XML: recover from its journal."""
    log = os.path.join(tdir, "test.log")
    log_text = tail(log, 4000)
    timed_out = "timed out" in log_text.lower() or "TIMEOUT" in why
    status = "TIMEOUT" if timed_out else "CRASH"
    lines = _journal_lines_from_outputs(tdir)
    cases = []
    if lines is not None:
        finished, running = read_journal(lines)
        cases = [case_from_element(target, el) for el in finished.values()]
        if running:
            cases.append(case_from_element(target, synthesize_case(
                running, status, f"{status}: {why} while running this case", log_tail=log_text)))
            return cases
    m = re.search(r"exited with error code (\d+)", why)
    if status == "CRASH" and m and 0 < int(m.group(1)) < 128:
        status = "FAIL"  # a plain failing exit of a test with no case journal (e.g. a py_test)
    cases.append(Case(target, "(binary)", target.split(":")[-1], status, 0.0,
                      f"{status}: {why}; no case could be blamed", "",
                      {"log_tail": log_text}))
    return cases


def _label_for(root, tdir):
    rel = os.path.relpath(tdir, root)
    parts = [p for p in rel.split(os.sep) if not p.startswith("shard_")]
    return "//" + "/".join(parts[:-1]) + ":" + parts[-1]


def _load_target(run, label, dirpath, xml_path):
    """Adds the cases of one target, whose files are in dirpath (test.xml may be missing)."""
    if not os.path.exists(xml_path):
        run.problems.append(f"{label}: test.log without test.xml")
        run.cases += _cases_without_gtest_xml(label, dirpath, "no test.xml was written")
        return
    try:
        xroot = ET.parse(xml_path).getroot()
    except ET.ParseError as e:
        run.problems.append(f"{label}: test.xml unreadable ({e})")
        run.cases += _cases_without_gtest_xml(label, dirpath, f"test.xml is truncated or malformed ({e})")
        return
    if xroot.tag != "testsuites" or xroot.get("name") != "AllTests":
        # Bazel wrote this test.xml itself: the test is not a GoogleTest binary (a py_test), or
        # the binary died before writing its own XML.
        err = xroot.find(".//error")
        if err is None:
            err = xroot.find(".//failure")
        if err is None and xroot.find(".//testcase") is not None:
            run.cases.append(Case(label, "(binary)", label.split(":")[-1], "PASS",
                                  float(xroot.find(".//testcase").get("time", "0") or 0)))
            return
        why = err.get("message", "the binary did not write its XML") if err is not None else \
            "the binary did not write its XML"
        run.cases += _cases_without_gtest_xml(label, dirpath, why)
        return
    for k, v in xroot.attrib.items():
        if k not in _ROOT_ATTRS and k != "pagelock_target" and v and k not in run.fingerprint:
            run.fingerprint[k] = v
    for el in xroot.iter("testcase"):
        run.cases.append(case_from_element(label, el))


def load_testlogs(root):
    """Reads every target under a testlogs tree into one Run."""
    run = Run()
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root}: not a directory")
    for dirpath, dirnames, filenames in sorted(os.walk(root, followlinks=True)):
        dirnames[:] = sorted(d for d in dirnames if d not in ("test.outputs", "test_attempts", "retries"))
        if "test.xml" not in filenames and "test.log" not in filenames:
            continue
        _load_target(run, _label_for(root, dirpath), dirpath, os.path.join(dirpath, "test.xml"))
    return run


def load_bep(path):
    """Reads the test results named in a Bazel build event JSON file (--build_event_json_file).
    Earlier attempts of a flaky test (--flaky_test_attempts) become each case's 'attempts'."""
    run = Run()
    attempts = {}  # (label, shard) -> {attempt: (xml path, bazel status)}
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise FileNotFoundError(f"{path}: {e}")
    with f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                run.problems.append(f"{path}:{n}: not JSON (truncated event stream?)")
                continue
            tid = ev.get("id", {}).get("testResult")
            if not tid:
                continue
            res = ev.get("testResult", {})
            xml = next((o.get("uri", "") for o in res.get("testActionOutput", []) if o.get("name") == "test.xml"), "")
            xml = xml[len("file://"):] if xml.startswith("file://") else xml
            key = (tid.get("label", ""), tid.get("shard", 0))
            attempts.setdefault(key, {})[tid.get("attempt", 1)] = (xml, res.get("status", ""))
    for (label, _), by_attempt in sorted(attempts.items()):
        final = max(by_attempt)
        xml, status = by_attempt[final]
        tdir = os.path.dirname(xml) if xml else ""
        before = len(run.cases)
        if xml:
            _load_target(run, label, tdir, xml)
        else:
            run.cases.append(Case(label, "(binary)", label.split(":")[-1],
                                  "TIMEOUT" if status == "TIMEOUT" else "CRASH", 0.0,
                                  f"Bazel reported {status} and no test.xml"))
        if len(by_attempt) > 1:
            earlier = Run()
            for a in sorted(by_attempt)[:-1]:
                if by_attempt[a][0]:
                    _load_target(earlier, label, os.path.dirname(by_attempt[a][0]), by_attempt[a][0])
            history = {}
            for c in earlier.cases:
                history.setdefault(c.id, []).append(c.status)
            for c in run.cases[before:]:
                c.properties["attempts"] = " ".join(history.get(c.id, []) + [c.status])
    return run
