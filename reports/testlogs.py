"""Raw test records from what test binaries leave behind: GoogleTest XML, pagelock case journals,
testlogs trees (Bazel's bazel-testlogs or the bundle runner's output, same layout) and Bazel build
event files.

This module only reads and writes files; it knows nothing of baselines or verdicts. Each case
becomes a typed model.Case in one step (model.Case.from_raw reads its status and properties);
the names and statuses are the model's, spelled once in reports/model.py. A missing,
truncated or malformed file is a result (CRASH, TIMEOUT or MISSING with the reason), never an
exception. The bundle runner uses the same functions to merge the attempts of one binary.
A test.xml over XML_MAX_BYTES is read incrementally (every case kept); a failure message of any
size is kept as its head and tail, with how much was cut (MESSAGE_MAX_CHARS), in the XML and in
a journal line longer than JOURNAL_MAX_LINE.
"""

import codecs
import json
import os
import re
import zipfile
import xml.etree.ElementTree as ET

from reports import model
from reports.model import Status

# What GoogleTest itself says of a case (a journal's end event, a synthesized <testcase>); the
# rest is the test's declared pagelock.status.
_GTEST_STATUSES = (Status.PASS, Status.FAIL, Status.SKIP)
# Bounds on what one file may cost to read. A test.xml over XML_MAX_BYTES is read
# incrementally (each case parsed, kept as a record and dropped), up to XML_STREAM_MAX_BYTES.
XML_MAX_BYTES = 64 << 20
XML_STREAM_MAX_BYTES = 8 << 30
XML_STREAM_CHUNK = 1 << 20
XML_MAX_DEPTH = 256
JOURNAL_MAX_LINE = 1 << 20
JOURNAL_MAX_BYTES = 256 << 20
MESSAGE_MAX_CHARS = 64 << 10
# Folders of a testlogs tree that hold no target of their own.
SKIP_DIRS = ("test.outputs", "test_attempts", "retries")
# Bazel's BlazeTestStatus (test.cache_status, field 3) values that mean the test failed.
_BAZEL_FAILED = {3: "TIMEOUT", 4: "FAILED", 5: "INCOMPLETE", 6: "REMOTE_FAILURE"}

_CASE_ATTRS = {"name", "file", "line", "status", "result", "time", "timestamp", "classname",
               "value_param", "type_param"}
_ROOT_ATTRS = {"tests", "failures", "disabled", "errors", "time", "timestamp", "name", "skipped"}


def _binary_case(target, status, message, properties=None):
    """A result of the binary as a whole: it crashed, timed out or failed outside every case."""
    return model.Case.from_raw(target, "(binary)", target.split(":")[-1], status, 0.0, message,
                               "", properties)


def tail(path, max_bytes):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read(max_bytes).decode("utf-8", "replace")
        return ("..." if size > max_bytes else "") + data
    except OSError:
        return ""


def _cap(text, limit=MESSAGE_MAX_CHARS):
    if len(text) <= limit:
        return text
    half = limit // 2
    return (text[:half] + f"\n[... {len(text) - limit} characters cut by pagelock ...]\n"
            + text[-half:])


# ---------------------------------------------------------------------------------------------
# GoogleTest XML and journals (also used by the bundle runner to merge attempts)

# What XML 1.0 cannot hold. A binary's XML that holds them anyway is read with each one made
# visible (model.visible_name's escape), so the reader spells a name as the journal's reader does.
_BAD_XML_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_DTD = re.compile(rb"<!(DOCTYPE|ENTITY)", re.IGNORECASE)


def parse_xml_file(path):
    """Parses a test.xml as GoogleTest and Bazel write it. Returns (root element, None) or
    (None, why). Raw bytes that are not UTF-8 (the system GoogleTest writes them as they come)
    become U+FFFD; a DOCTYPE or entity declaration (never written by GoogleTest or Bazel: entity
    bombs, external entities) is refused; files over XML_MAX_BYTES are not read."""
    try:
        with open(path, "rb") as f:
            data = f.read(XML_MAX_BYTES + 1)
    except OSError as e:
        return None, f"unreadable ({e.strerror or e})"
    if len(data) > XML_MAX_BYTES:
        return None, f"larger than {XML_MAX_BYTES >> 20} MiB, not read"
    if _DTD.search(data):
        return None, "has a DOCTYPE or ENTITY declaration, not read"
    text = _XML_DECL.sub("", data.decode("utf-8", "replace"), count=1)
    text = _BAD_XML_CHARS.sub(model.escape_char, text)
    try:
        return ET.fromstring(text), None
    except ET.ParseError as e:
        return None, f"truncated or malformed ({e})"
    except RecursionError:
        return None, "nested too deeply"


def _xml_said(what, why):
    """'test.xml is truncated ...', 'test.xml has a DOCTYPE ...': every why reads after 'is'
    but the DOCTYPE one, which says what the file has."""
    return f"{what} {why}" if why.startswith("has ") else f"{what} is {why}"


def _is_large(path):
    try:
        return os.path.getsize(path) > XML_MAX_BYTES
    except OSError:
        return False


def _cap_element(el):
    """Cuts the texts of one <testcase> to MESSAGE_MAX_CHARS, saying how much was cut: a
    failure message of 200 MB is kept, as its head and tail."""
    for child in el.iter():
        if child.text and len(child.text) > MESSAGE_MAX_CHARS:
            child.text = _cap(child.text)
        for k, v in child.attrib.items():
            if len(v) > MESSAGE_MAX_CHARS:
                child.set(k, _cap(v))


def stream_gtest_xml(path, on_case):
    """Reads a GoogleTest XML of any size incrementally: on_case(<testcase> element) for each
    case in file order, each element's texts capped (_cap_element) and detached from the tree
    after the call, so memory holds one case at a time (plus what on_case keeps). The
    same refusals as parse_xml_file: a DOCTYPE or ENTITY declaration, malformed or truncated
    XML, a root that is not GoogleTest's. Returns (root attributes, None) or ({}, why)."""
    try:
        size = os.path.getsize(path)
        f = open(path, "rb")
    except OSError as e:
        return {}, f"unreadable ({e.strerror or e})"
    if size > XML_STREAM_MAX_BYTES:
        f.close()
        return {}, f"larger than {XML_STREAM_MAX_BYTES >> 30} GiB, not read"
    parser = ET.XMLPullParser(events=("start", "end"))
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    stack, attrs, first, carry = [], None, True, b""
    try:
        with f:
            while True:
                chunk = f.read(XML_STREAM_CHUNK)
                if _DTD.search(carry + chunk):  # carry: a declaration cut by the chunk border
                    return {}, "has a DOCTYPE or ENTITY declaration, not read"
                carry = chunk[-16:]
                text = decoder.decode(chunk, final=not chunk)
                if first:
                    text, first = _XML_DECL.sub("", text, count=1), False
                parser.feed(_BAD_XML_CHARS.sub(model.escape_char, text))
                for event, el in parser.read_events():
                    if event == "start":
                        stack.append(el)
                        if len(stack) > XML_MAX_DEPTH:
                            return {}, "nested too deeply"
                        if len(stack) == 1:
                            if el.tag != "testsuites" or el.get("name") != "AllTests":
                                return {}, "not GoogleTest's"
                            attrs = dict(el.attrib)
                        continue
                    stack.pop()
                    if el.tag == "testcase":
                        _cap_element(el)
                        on_case(el)
                        if stack:
                            stack[-1].remove(el)  # the finished case is the last child
                if not chunk:
                    break
            parser.close()
    except ET.ParseError as e:
        return {}, f"truncated or malformed ({e})"
    except OSError as e:
        return {}, f"unreadable ({e.strerror or e})"
    if attrs is None:
        return {}, "empty"
    return attrs, None


def _case_id(el):
    """'Suite.Name' of a <testcase>, its names set to their one spelling (model.visible_name)."""
    suite, name = model.visible_name(el.get("classname", "")), model.visible_name(el.get("name", ""))
    if suite != el.get("classname", "") or name != el.get("name", ""):
        el.set("classname", suite)
        el.set("name", name)
    return f"{suite}.{name}"


def record_status(el):
    """The status a <testcase> record says, as case_from_element types it (the conflict rule
    compares records by it)."""
    return case_from_element("//conflict:rule", el).status


def conflicts_of(el):
    for pe in el.findall("properties/property"):
        if pe.get("name") == model.CONFLICTS_PROP:
            return [x for x in pe.get("value", "").split("\n") if x]
    return []


def merge_records(first, second, kind, said=None, prefer_second=False, detail=""):
    """Two records of one case that the conflict rule (reports/model.py) settles: the one with
    the worse status is kept, with both records' conflicts and this one named (property
    model.CONFLICTS_PROP). On a tie the first is kept (the second with prefer_second: the XML,
    which has the full detail, over the journal). said: what the two records said, as the note
    shows it (default "FIRST, then SECOND"). Returns the kept element."""
    a, b = record_status(first), record_status(second)
    won = model.worse_status(b, a) if prefer_second else model.worse_status(a, b)
    keep_second = (won == b) if prefer_second else (won == b and b != a)
    kept, other = (second, first) if keep_second else (first, second)
    note = model.conflict_note(kind, said or f"{a}, then {b}", won, detail)
    notes = list(dict.fromkeys(conflicts_of(kept) + conflicts_of(other) + [note]))
    set_property(kept, model.CONFLICTS_PROP, "\n".join(notes))
    return kept


def set_property(el, name, value):
    """Sets (or replaces) one <property> of a <testcase> element."""
    props = el.find("properties")
    if props is None:
        props = ET.SubElement(el, "properties")
    for pe in props.findall("property"):
        if pe.get("name") == name:
            pe.set("value", value)
            return
    ET.SubElement(props, "property", {"name": name, "value": value})


def _add_record(cases, el):
    """cases[id] = el; a second record of the same case in one file is settled by the rule."""
    cid = _case_id(el)
    first = cases.get(cid)
    cases[cid] = el if first is None else merge_records(first, el, model.CONFLICT_TWICE)


def read_gtest_xml(path):
    """Returns ({'Suite.Name': <testcase> element}, root attributes, None), or
    (None, {}, why) when the file is missing, truncated, not GoogleTest XML or refused.
    A file over XML_MAX_BYTES is read incrementally, its messages capped."""
    if not os.path.exists(path):
        return None, {}, "no XML was written"
    if _is_large(path):
        cases = {}
        attrs, why = stream_gtest_xml(path, lambda el: _add_record(cases, el))
        if why:
            return None, {}, _xml_said("the XML", why)
        return cases, attrs, None
    root, why = parse_xml_file(path)
    if root is None:
        return None, {}, _xml_said("the XML", why)
    if root.tag != "testsuites" or root.get("name") != "AllTests":
        return None, {}, "the XML is not GoogleTest's"
    cases = {}
    for el in root.iter("testcase"):
        _add_record(cases, el)
    return cases, dict(root.attrib), None


def read_gtest_xml_cases(path):
    """Returns ({'Suite.Name': <testcase> element}, root attributes), or (None, {})."""
    cases, attrs, _ = read_gtest_xml(path)
    return cases, attrs


def synthesize_case(case_id, status, message, log_tail="", seconds=0.0, properties=None,
                    skip_message=None):
    """A GoogleTest-shaped <testcase> for a result the binary could not write itself."""
    suite, _, name = case_id.rpartition(".")
    status = str(status)
    message = _cap(message)
    el = ET.Element("testcase", {"name": name, "classname": suite, "status": "run",
                                 "result": "completed", "time": f"{seconds:.3f}"})
    props = {str(k): v for k, v in (properties or {}).items()}
    if status not in _GTEST_STATUSES:
        props[model.PROP_STATUS] = status
    if log_tail:
        props["log_tail"] = log_tail
    if props:
        pe = ET.SubElement(el, "properties")
        for k, v in props.items():
            ET.SubElement(pe, "property", {"name": k, "value": _cap(str(v))})
    if status == Status.SKIP:
        ET.SubElement(el, "skipped", {"message": skip_message or message}).text = skip_message or message
    elif status != Status.PASS:
        ET.SubElement(el, "failure", {"message": message, "type": ""}).text = message
    return el


def _bounded_lines(f):
    """Lines of a binary file, each at most JOURNAL_MAX_LINE bytes and JOURNAL_MAX_BYTES in all.
    A longer line (an end event with a huge failure message) is read through, keeping its head
    and tail, and comes back as the same event with its message cut (_salvage_long_event);
    one that is not such an event is skipped."""
    total = 0
    while total < JOURNAL_MAX_BYTES:
        line = f.readline(JOURNAL_MAX_LINE + 1)
        if not line:
            return
        total += len(line)
        if len(line) > JOURNAL_MAX_LINE:
            head, tail, size = line, line[-_SALVAGE_TAIL:], len(line)
            while line and not line.endswith(b"\n") and total < JOURNAL_MAX_BYTES:
                line = f.readline(JOURNAL_MAX_LINE)
                total += len(line)
                size += len(line)
                tail = (tail + line)[-_SALVAGE_TAIL:]
            event = _salvage_long_event(head, tail, size)
            if event is not None:
                yield event
            continue
        yield line.decode("utf-8", "replace")


_SALVAGE_TAIL = 256 << 10
_LONG_END_HEAD = re.compile(
    rb'^\{"event":"end","case":("(?:[^"\\]|\\.)*"),"status":("[A-Z_]*"),"seconds":([-0-9.eE+]+),'
    rb'"message":"')
_LONG_END_TAIL = re.compile(rb'","properties":(\{.*\})\}\s*$', re.S)


def _json_fragment(raw):
    """The text of a piece of a JSON string's body (cut anywhere, even inside an escape)."""
    text = raw.decode("utf-8", "replace")
    for start in range(0, 7):  # drop half an escape (\ or \uXX) at either cut
        for cut in range(0, 7):
            try:
                return json.loads('"' + text[start:len(text) - cut] + '"')
            except ValueError:
                continue
    return text.replace("\\n", "\n")


def _salvage_long_event(head, tail, size):
    """An end event written on one line longer than JOURNAL_MAX_LINE (fixtures/journal.cc writes
    event, case, status, seconds, message, properties in that order): the same event as one
    JSON line, its message the head and tail of the real one with how much was cut between."""
    m = _LONG_END_HEAD.match(head)
    if not m:
        return None
    try:
        case, status, seconds = json.loads(m.group(1)), json.loads(m.group(2)), float(m.group(3))
    except ValueError:
        return None
    body = head[m.end():]
    t = _LONG_END_TAIL.search(tail)
    props, ending = {}, b""
    if t:
        try:
            props = json.loads(t.group(1))
        except ValueError:
            props = {}
        ending = tail[:t.start()]
        start = max(0, len(ending) - (MESSAGE_MAX_CHARS // 2))
        ending = ending[start:]
    first = _json_fragment(body[:MESSAGE_MAX_CHARS // 2])
    last = _json_fragment(ending) if ending else ""
    message = (f"{first}\n[... the journal line was {size} bytes; its message is cut here by "
               f"pagelock ...]\n{last}")
    return json.dumps({"event": "end", "case": case, "status": status, "seconds": seconds,
                       "message": message, "properties": props if isinstance(props, dict) else {}})


def _journal_lines(path):
    try:
        with open(path, "rb") as f:
            return list(_bounded_lines(f))
    except OSError:
        return None


class JournalEvents:
    """What one case journal says: the cases that ended ({case: <testcase>}), the case that
    started and never ended (or None), and `early`: that case's result when one was recorded
    before its start (the conflict rule keeps the worse of it and whatever ends the case)."""

    def __init__(self, finished, running, early):
        self.finished, self.running, self.early = finished, running, early


def read_journal_events(path_or_lines):
    """Reads a case journal (lines that are not events, cut short by a crash or garbage, are
    skipped); names are spelled as model.visible_name spells them. Evidence that conflicts is
    settled by the rule of reports/model.py: a case that ends twice keeps the worse result; an end
    with no start before it is a result recorded early, and a start after it makes the case
    running again, so that a case that then never ends is blamed, never kept as that result."""
    if isinstance(path_or_lines, str):
        lines = _journal_lines(path_or_lines) or []
    else:
        lines = path_or_lines
    finished, running = {}, None
    early_ids = set()  # cases whose result in `finished` came before any start of theirs
    early = {}  # case -> its early result, while the case runs again
    for line in lines:
        try:
            ev = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a line cut short by the crash
        if not isinstance(ev, dict) or not isinstance(ev.get("case"), str) or \
                "." not in ev["case"]:
            continue
        case = model.visible_name(ev["case"])
        if ev.get("event") == "start":
            if running is not None and running in early:  # it never ended: the early word stays
                finished[running] = _never_ended(early.pop(running), running)
            if case in early_ids and case in finished:
                early[case] = finished.pop(case)
                early_ids.discard(case)
            running = case
        elif ev.get("event") == "end":
            el = _end_record(case, ev)
            if running == case:
                running = None
                if case in early:
                    el = merge_records(early.pop(case), el, model.CONFLICT_EARLY)
            else:
                early_ids.add(case)
            if case in finished:
                el = merge_records(finished[case], el, model.CONFLICT_TWICE)
            finished[case] = el
    for case in [c for c in early if c != running]:
        finished[case] = _never_ended(early.pop(case), case)
    return JournalEvents(finished, running, early)


def _end_record(case, ev):
    status = ev.get("status")
    msg = ev.get("message", "")
    msg = msg if isinstance(msg, str) else json.dumps(msg)
    if status not in _GTEST_STATUSES:
        msg = f"the journal recorded an unknown status {str(status)[:40]!r}\n{msg}"
        status = Status.INFRA_ERROR
    try:
        seconds = float(ev.get("seconds", 0))
    except (TypeError, ValueError):
        seconds = 0.0
    props = ev.get("properties")
    props = props if isinstance(props, dict) else {}
    return synthesize_case(case, status, msg, seconds=seconds, properties=props,
                           skip_message=msg if status == Status.SKIP else None)


def _never_ended(early_el, case):
    """A case with a result recorded before its start that started and never ended (another
    case started after it): the rule keeps the worse of that result and MISSING."""
    missing = synthesize_case(case, Status.MISSING, "MISSING: the case started and never ended "
                              "(another case started after it)")
    return merge_records(early_el, missing, model.CONFLICT_EARLY)


def read_journal(path_or_lines):
    """Reads a case journal. Returns ({case: <testcase>} for cases that ended, the case that
    started and never ended or None); read_journal_events has the rest of what it says."""
    ev = read_journal_events(path_or_lines)
    return ev.finished, ev.running


def _xml_safe(el):
    """Every text and attribute value of a record as XML 1.0 can hold it (model.visible_text):
    a control character a binary put in a message or property is written as its escape, so the
    runner's test.xml is always well-formed, whatever the binary wrote."""
    for e in el.iter():
        if e.text:
            e.text = model.visible_text(e.text)
        if e.tail:
            e.tail = model.visible_text(e.tail)
        for k, v in e.attrib.items():
            safe = model.visible_text(v)
            if safe is not v and safe != v:
                e.set(k, safe)
    return el


def merged_xml_root(label, root_attrs, elements):
    root = ET.Element("testsuites", {k: model.visible_text(v) for k, v in root_attrs.items()
                                     if k not in _ROOT_ATTRS})
    root.set("name", "AllTests")
    suites = {}
    for el in elements:
        suite = el.get("classname", "")
        if suite not in suites:
            suites[suite] = ET.SubElement(root, "testsuite", {"name": model.visible_name(suite)})
        suites[suite].append(_xml_safe(el))
    for s in suites.values():
        s.set("tests", str(len(s)))
    root.set("tests", str(len(elements)))
    root.set("pagelock_target", label)
    return root


def write_merged_xml(path, label, root_attrs, elements):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    ET.ElementTree(merged_xml_root(label, root_attrs, elements)).write(
        path, encoding="UTF-8", xml_declaration=True)


def write_infra_error_xml(path, label, message):
    write_merged_xml(path, label, {}, [synthesize_case("(binary).setup", Status.INFRA_ERROR, message)])


# ---------------------------------------------------------------------------------------------
# Reading a testlogs tree

def _properties(el, standard):
    props = {k: v for k, v in el.attrib.items() if k not in standard}
    for pe in el.findall("properties/property"):
        props[pe.get("name", "")] = pe.get("value", "")
    return props


def case_from_element(target, el):
    """The typed case of one <testcase>: what GoogleTest says of it (a failure, a skip and its
    message, disabled) and its properties; model.Case.from_raw reads the rest (the declared
    status, the NotSupported prefix, the legacy names)."""
    props = _properties(el, _CASE_ATTRS)
    failures = el.findall("failure") + el.findall("error")
    skipped = el.find("skipped")
    message = _cap(model.gtest_message("\n\n".join((f.text or f.get("message", "")).strip()
                                                    for f in failures)))
    skip_text = (skipped.text or skipped.get("message", "")).strip() if skipped is not None else None
    if failures:
        status = Status.FAIL
    elif skipped is not None or el.get("result") == "skipped":
        status, skip_text = Status.SKIP, skip_text or ""
    elif el.get("status") == "notrun" or el.get("result") == "suppressed":
        status, skip_text = Status.SKIP, "disabled"
    else:
        status = Status.PASS
    try:
        seconds = float(el.get("time", "0") or 0)
    except ValueError:
        seconds = 0.0
    return model.Case.from_raw(target, el.get("classname", ""), el.get("name", ""), status, seconds,
                               message, "", props, skip_text=skip_text)


def _attempt_key(name):
    m = re.search(r"(\d+)$", name)
    return (int(m.group(1)) if m else -1, name)


def _journal_sources(tdir):
    """The case journals of one target, oldest first: the bundle runner's
    test.outputs/attempt_N/, Bazel's test.outputs/ or its outputs.zip. Each is a list of lines."""
    outputs = os.path.join(tdir, "test.outputs")
    sources = []
    try:
        attempts = sorted((d for d in os.listdir(outputs) if d.startswith("attempt_")),
                          key=_attempt_key)
    except OSError:
        attempts = []
    for d in attempts:
        p = os.path.join(outputs, d, model.JOURNAL_NAME)
        if os.path.isfile(p) and not os.path.islink(p):
            lines = _journal_lines(p)
            if lines is not None:
                sources.append(lines)
    plain = os.path.join(outputs, model.JOURNAL_NAME)
    if os.path.isfile(plain) and not os.path.islink(plain):
        lines = _journal_lines(plain)
        if lines is not None:
            sources.append(lines)
    zpath = os.path.join(outputs, "outputs.zip")
    if not sources and os.path.isfile(zpath):
        try:
            with zipfile.ZipFile(zpath) as z:
                for n in z.namelist():
                    if n.endswith(model.JOURNAL_NAME):
                        with z.open(n) as f:
                            sources.append(list(_bounded_lines(f)))
                        break
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, EOFError):
            pass
    return sources


def _cases_without_gtest_xml(target, tdir, why):
    """A target whose binary did not finish writing its XML: recover from its journals."""
    log = os.path.join(tdir, "test.log")
    log_text = tail(log, 4000)
    timed_out = "timed out" in log_text.lower() or "TIMEOUT" in why
    status = Status.TIMEOUT if timed_out else Status.CRASH
    sources = _journal_sources(tdir)
    cases = []
    if sources:
        finished, running, early = {}, None, {}
        for lines in sources:
            ev = read_journal_events(lines)
            finished.update(ev.finished)
            running, early = ev.running, ev.early
        if running in finished:
            running = None
        cases = [case_from_element(target, el) for el in finished.values()]
        if running:
            blamed = synthesize_case(running, status, f"{status}: {why} while running this case",
                                     log_tail=log_text)
            if running in early:  # a result recorded before its start: the worse word stands
                blamed = merge_records(early[running], blamed, model.CONFLICT_EARLY)
            cases.append(case_from_element(target, blamed))
            return cases
    m = re.search(r"exited with error code (\d+)", why)
    if status == Status.CRASH and m and 0 < int(m.group(1)) < 128:
        status = Status.FAIL  # a plain failing exit of a test with no case journal (e.g. a py_test)
    message = f"{status}: {why}; no case could be blamed"
    if m and int(m.group(1)) == model.EXIT_POISONED and cases:
        message = (f"FAIL: the binary stopped with exit {model.EXIT_POISONED} after a case left a "
                   "sticky CUDA error (poisoned context); the cases after it did not run here "
                   "(the bundle runner restarts the binary on them)")
    cases.append(_binary_case(target, status, message, {"log_tail": log_text}))
    return cases


def _label_for(root, tdir):
    rel = os.path.relpath(tdir, root)
    parts = [p for p in rel.split(os.sep) if not p.startswith("shard_")]
    return "//" + "/".join(parts[:-1]) + ":" + parts[-1]


def bazel_cache_status(tdir):
    """The BlazeTestStatus in Bazel's test.cache_status (a TestResultData proto, field 3), or
    None when there is none or it cannot be read."""
    try:
        with open(os.path.join(tdir, "test.cache_status"), "rb") as f:
            data = f.read(1 << 20)
    except OSError:
        return None
    i = 0

    def varint():
        nonlocal i
        shift = value = 0
        while i < len(data) and shift < 64:
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
        raise ValueError("truncated varint")

    try:
        while i < len(data):
            key = varint()
            field_no, wire = key >> 3, key & 7
            if wire == 0:
                v = varint()
                if field_no == 3:
                    return v
            elif wire == 2:
                i += varint()
            elif wire == 1:
                i += 8
            elif wire == 5:
                i += 4
            else:
                return None
    except ValueError:
        return None
    return None


def _exit_status_case(label, xml_cases, bazel_status):
    """A failure of the target's own when Bazel says the test failed (its exit status) but
    every case in its XML passed: the exit status counts, as in Bazel."""
    if not bazel_status or any(c.status.is_fail for c in xml_cases):
        return []
    status = Status.TIMEOUT if bazel_status == "TIMEOUT" else Status.FAIL  # Bazel's word, then ours
    return [_binary_case(label, status,
                         f"{status}: Bazel reports the test {bazel_status} (its exit status) although "
                    "no case in its XML failed")]


def _load_target(run, label, dirpath, xml_path, bazel_status=None, has_xml=None):
    """Adds the cases of one target, whose files are in dirpath (test.xml may be missing).
    bazel_status: 'FAILED', 'TIMEOUT', ... when Bazel says the test did not pass."""
    if bazel_status is None:
        bazel_status = _BAZEL_FAILED.get(bazel_cache_status(dirpath))
    if not (os.path.exists(xml_path) if has_xml is None else has_xml):
        run.problems.append(f"{label}: test.log without test.xml")
        run.cases += _cases_without_gtest_xml(label, dirpath, "no test.xml was written")
        return
    if _is_large(xml_path):
        _load_large_target(run, label, dirpath, xml_path, bazel_status)
        return
    xroot, why = parse_xml_file(xml_path)
    if xroot is None:
        run.problems.append(f"{label}: {_xml_said('test.xml', why)}")
        run.cases += _cases_without_gtest_xml(label, dirpath, _xml_said("test.xml", why))
        return
    if xroot.tag != "testsuites" or xroot.get("name") != "AllTests":
        # Bazel wrote this test.xml itself: the test is not a GoogleTest binary (a py_test), or
        # the binary died before writing its own XML.
        err = xroot.find(".//error")
        if err is None:
            err = xroot.find(".//failure")
        if err is None and xroot.find(".//testcase") is not None:
            try:
                secs = float(xroot.find(".//testcase").get("time", "0") or 0)
            except ValueError:
                secs = 0.0
            run.cases += _exit_status_case(label, [], bazel_status) or [
                model.Case.from_raw(label, "(binary)", label.split(":")[-1], Status.PASS, secs)]
            return
        why = err.get("message", "the binary did not write its XML") if err is not None else \
            "the binary did not write its XML"
        run.cases += _cases_without_gtest_xml(label, dirpath, why)
        return
    for k, v in xroot.attrib.items():
        if k not in _ROOT_ATTRS and k != "pagelock_target" and v and k not in run.fingerprint:
            run.fingerprint[k] = v
    cases = [case_from_element(label, el) for el in xroot.iter("testcase")]
    run.cases += cases + _exit_status_case(label, cases, bazel_status)


def _load_large_target(run, label, dirpath, xml_path, bazel_status):
    """A test.xml over XML_MAX_BYTES (10^6 cases in one binary, or one huge failure message):
    read incrementally, every case kept. One that is not GoogleTest's, or is cut short, is
    recovered from the journals as a small one would be."""
    cases = []
    attrs, why = stream_gtest_xml(xml_path, lambda el: cases.append(case_from_element(label, el)))
    if why:
        run.problems.append(f"{label}: {_xml_said('test.xml', why)}")
        run.cases += _cases_without_gtest_xml(label, dirpath, _xml_said("test.xml", why))
        return
    for k, v in attrs.items():
        if k not in _ROOT_ATTRS and k != "pagelock_target" and v and k not in run.fingerprint:
            run.fingerprint[k] = v
    run.cases += cases + _exit_status_case(label, cases, bazel_status)


def _inside(path, real_root):
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root + os.sep)


def load_testlogs(root):
    """Reads every target under a testlogs tree into one run. Folders that hold no target of
    their own (test.outputs, test_attempts, retries) are not read, and no link is followed out
    of the tree (nor any link to a folder)."""
    run = model.Run()
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root}: not a directory")
    real_root = os.path.realpath(root)
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            run.problems.append(f"{d}: unreadable ({e.strerror or e})")
            continue
        names = set()
        subdirs = []
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if e.name not in SKIP_DIRS:
                        subdirs.append(e.path)
                elif e.name in ("test.xml", "test.log"):
                    if e.is_symlink() and not _inside(e.path, real_root):
                        run.problems.append(f"{e.path}: a link out of the tree, not read")
                        continue
                    if e.is_file():
                        names.add(e.name)
            except OSError:
                continue
        stack.extend(reversed(subdirs))
        if d != root and names:
            _load_target(run, _label_for(root, d), d, os.path.join(d, "test.xml"),
                         has_xml="test.xml" in names)
    run.kernel_log = _kernel_outside_cases(root)
    run.one_record_per_case()  # one id twice (two trees' spellings): the conflict rule settles it
    run.default_run_seed()
    return run


def _kernel_outside_cases(root):
    """The bundle runner's kernel lines read while no case ran (runner.json at the tree's root;
    Bazel's trees have none): [{"line", "target", "kind", "excused"}]."""
    path = os.path.join(root, "runner.json")
    try:
        if os.path.islink(path) or os.path.getsize(path) > XML_MAX_BYTES:
            return []
        with open(path, encoding="utf-8", errors="replace") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError):
        return []
    lines = data.get("kernel_log_outside_cases") if isinstance(data, dict) else None
    return [{"line": model.visible_text(str(k.get("line", ""))), "target": k.get("target"),
             "kind": k.get("kind"), "excused": k.get("excused")}
            for k in (lines if isinstance(lines, list) else []) if isinstance(k, dict)]


def load_target(label, tdir):
    """The run of one target's folder (test.xml, test.log, test.outputs/)."""
    run = model.Run()
    _load_target(run, label, tdir, os.path.join(tdir, "test.xml"))
    run.default_run_seed()
    return run


def load_bep(path):
    """Reads the test results named in a Bazel build event JSON file (--build_event_json_file).
    Earlier attempts of a flaky test (--flaky_test_attempts) become each case's 'attempts'.
    A test that Bazel reports FAILED while every case in its XML passed gets a failure of its own
    (the exit status counts)."""
    run = model.Run()
    attempts = {}  # (label, shard) -> {attempt: (xml path, bazel status)}
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        raise FileNotFoundError(f"{path}: {e}")
    with f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                ev = json.loads(line)
            except (ValueError, RecursionError):
                run.problems.append(f"{path}:{n}: not JSON (truncated event stream?)")
                continue
            if not isinstance(ev, dict) or not isinstance(ev.get("id"), dict):
                continue
            tid = ev["id"].get("testResult")
            if not isinstance(tid, dict):
                continue
            res = ev.get("testResult")
            res = res if isinstance(res, dict) else {}
            outputs = res.get("testActionOutput")
            outputs = outputs if isinstance(outputs, list) else []
            xml = next((o.get("uri", "") for o in outputs
                        if isinstance(o, dict) and o.get("name") == "test.xml"), "")
            xml = xml if isinstance(xml, str) else ""
            xml = xml[len("file://"):] if xml.startswith("file://") else xml
            label = tid.get("label", "")
            if not isinstance(label, str) or not label.startswith("//") or ":" not in label:
                run.problems.append(f"{path}:{n}: test result without a label")
                continue
            key = (label, str(tid.get("shard", 0)))
            attempt = tid.get("attempt", 1)
            attempt = attempt if isinstance(attempt, int) else 1
            attempts.setdefault(key, {})[attempt] = (xml, str(res.get("status", "")))
    for (label, _), by_attempt in sorted(attempts.items()):
        final = max(by_attempt)
        xml, status = by_attempt[final]
        tdir = os.path.dirname(xml) if xml else ""
        before = len(run.cases)
        bazel_failed = status if status in ("FAILED", "TIMEOUT", "INCOMPLETE",
                                            "REMOTE_FAILURE") else ""
        if xml:
            _load_target(run, label, tdir, xml, bazel_failed)
        else:
            run.cases.append(_binary_case(label, Status.TIMEOUT if status == "TIMEOUT" else Status.CRASH,
                                          f"Bazel reported {status} and no test.xml"))
        if len(by_attempt) > 1:
            earlier = model.Run()
            for a in sorted(by_attempt)[:-1]:
                if by_attempt[a][0]:
                    _load_target(earlier, label, os.path.dirname(by_attempt[a][0]),
                                 by_attempt[a][0], "")
            history = {}
            for c in earlier.cases:
                history.setdefault((c.suite, c.name), []).append(c.status)
            for c in run.cases[before:]:
                c.attempts = history.get((c.suite, c.name), []) + [c.status]
    run.default_run_seed()
    return run
