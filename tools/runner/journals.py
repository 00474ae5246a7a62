"""Case journals and failure messages of any size, and what one launch adds to a target's
results: the journal's events merged with the binary's own XML, every message capped."""

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from reports import model, testlogs
from tools.runner.config import MESSAGE_KEEP_BYTES

_JSON_STRING = r'"((?:[^"\\]|\\.)*)"'
_PROPS_AFTER_MESSAGE = re.compile(r'"\s*,\s*"properties"\s*:')
_PARTIAL_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{0,3})?$')


def _cut_note(n):
    return f"\n[... {n} bytes cut by the pagelock runner ...]\n"


def _json_text(body):
    """Decodes the inside of a JSON string (possibly cut at either end) leniently."""
    for k in range(0, 7):  # a tail may start inside an escape: drop up to 6 characters
        try:
            return json.loads('"' + body[k:] + '"')
        except ValueError:
            continue
    return body


def shorten_event(head, tail, cut):
    """One journal line too long to keep (its head, its tail, `cut` bytes between them) as a
    short event: event, case, status, seconds and properties as written, and the message's head
    and tail with the cut stated. '' when the head names no event."""
    h = head.decode("utf-8", "replace")
    t = tail.decode("utf-8", "replace")
    ev = {}
    for key in ("event", "case", "status"):
        m = re.search(r'"%s"\s*:\s*%s' % (key, _JSON_STRING), h)
        if m:
            ev[key] = _json_text(m.group(1))
    if "event" not in ev or "case" not in ev:
        return ""
    m = re.search(r'"seconds"\s*:\s*(-?[0-9][0-9.eE+-]*)', h)
    if m:
        ev["seconds"] = m.group(1)
    m = re.search(r'"message"\s*:\s*"', h)
    message = ""
    if m:
        whole = re.match(_JSON_STRING, h[m.end() - 1:])
        if whole:  # the message ended in the head: something else was long
            message = _json_text(whole.group(1))
        else:
            message = _json_text(_PARTIAL_ESCAPE.sub("", h[m.end():]))
            ends = list(_PROPS_AFTER_MESSAGE.finditer(t))
            message += _cut_note(cut) + _json_text(t[:ends[-1].start()] if ends else t)
    ends = list(re.finditer(r'"properties"\s*:', t))
    if ends:
        props = t[ends[-1].end():].strip()
        try:
            ev["properties"] = json.loads(props[:-1]) if props.endswith("}") else {}
        except ValueError:
            pass
    ev["message"] = message if m else _cut_note(cut).strip()
    return json.dumps(ev)


def journal_lines(path, keep=MESSAGE_KEEP_BYTES, max_line=testlogs.JOURNAL_MAX_LINE,
                  max_kept=testlogs.JOURNAL_MAX_BYTES):
    """The lines of a case journal for testlogs.read_journal. A line over max_line bytes (a
    failure message of 200 MB) is read to its end but only its head and tail are kept, as a
    short event that states the cut: the case keeps its status and message, never becoming a
    CRASH for a lost end event. At most max_kept bytes are kept in all."""
    out, kept = [], 0
    try:
        with open(path, "rb") as f:
            while kept < max_kept:
                line = f.readline(max_line + 1)
                if not line:
                    break
                if len(line) <= max_line:
                    kept += len(line)
                    out.append(line.decode("utf-8", "replace"))
                    continue
                short = _shorten_long_line(f, line, keep)
                if short:
                    kept += len(short)
                    out.append(short)
    except OSError:
        pass
    return out


def _shorten_long_line(f, line, keep):
    """Reads the rest of a long journal line from f; returns it as shorten_event's event."""
    head, tail, size = line[:keep], bytearray(line[-keep:]), len(line)
    while not line.endswith(b"\n"):
        line = f.readline(1 << 20)
        if not line:
            break
        size += len(line)
        tail += line
        del tail[:-keep]
    return shorten_event(head, bytes(tail), size - len(head) - len(tail))


def cap_text(text, keep=MESSAGE_KEEP_BYTES):
    if text is None or len(text) <= 2 * keep:
        return text
    return text[:keep] + _cut_note(len(text) - 2 * keep) + text[-keep:]


def cap_messages(el):
    """A <testcase> from the binary's XML with every failure message capped (head, tail and the
    cut stated), so test.xml and the reports stay small however long the message was."""
    for child in el:
        if child.tag in ("failure", "error", "skipped"):
            if child.get("message") is not None:
                child.set("message", cap_text(child.get("message")))
            child.text = cap_text(child.text)
    return el


def add_property(el, name, value):
    """Adds (or extends) a <property> of a <testcase> element."""
    props = el.find("properties")
    if props is None:
        props = ET.SubElement(el, "properties")
    for pe in props.findall("property"):
        if pe.get("name") == name:
            pe.set("value", pe.get("value", "") + "\n" + value)
            return
    ET.SubElement(props, "property", {"name": name, "value": value})


@dataclass
class LaunchReport:
    """What one launch left: its XML (None when unusable, and why), the cases it added to the
    target's results, the case that was running when it ended (None: none, or one that has a
    result already, or one an exact chunk did not ask for) and, when that case had a result
    recorded before its start, that result (`early`: the conflict rule weighs it against
    whatever the end of the launch says of the case)."""
    xml_cases: "dict | None"
    xml_attrs: dict
    xml_problem: str
    added: list = field(default_factory=list)
    running: "str | None" = None
    early: "object | None" = None


def collect_launch(xml_path, journal, done, exact, expected):
    """Adds a launch's results to `done` (case -> <testcase>): the journal's events and the
    binary's own XML, settled by the conflict rule of reports/model.py where they disagree (the
    worse status stands and the conflict is named; on a tie the XML's record, which has the
    full detail). A case that has a result already keeps it; an exact chunk keeps only the cases
    it asked for (`expected`, a set), since its '?' patterns may match others."""
    xml_cases, attrs, xml_problem = testlogs.read_gtest_xml(xml_path)
    events = testlogs.read_journal_events(journal_lines(journal))
    running = events.running
    report = LaunchReport(xml_cases, attrs, xml_problem)
    new = dict(events.finished)
    for case_id, el in (xml_cases or {}).items():
        journal_el = new.get(case_id)
        if journal_el is None and case_id == running and running in events.early:
            journal_el = events.early[running]  # the XML has the case the journal left running
        if journal_el is None:
            new[case_id] = el
            continue
        a, b = testlogs.record_status(journal_el), testlogs.record_status(el)
        if a == b:  # the two records agree: the XML's, with what the journal's says of conflicts
            both = list(dict.fromkeys(testlogs.conflicts_of(el) + testlogs.conflicts_of(journal_el)))
            if both:
                testlogs.set_property(el, model.CONFLICTS_PROP, "\n".join(both))
            new[case_id] = el
        else:
            new[case_id] = testlogs.merge_records(journal_el, el, model.CONFLICT_CHANNELS,
                                                  said=f"the journal {a}, the XML {b}",
                                                  prefer_second=True)
    for case_id, el in new.items():
        if case_id not in done and (not exact or case_id in expected):
            done[case_id] = cap_messages(el)
            report.added.append(case_id)
    if running and (running in done or (exact and running not in expected)):
        running = None
    report.running = running
    report.early = events.early.get(running) if running else None
    return report
