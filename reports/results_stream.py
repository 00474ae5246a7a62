"""A results.json of any size read for what a comparison needs, in bounded memory.

A baseline (or the earlier run `--baseline auto` takes) is read case by case: the file is parsed
in chunks (json's own decoder, one value at a time), every case record is type-checked as
reports/validate.py checks it (the same messages, naming the field) and kept only as a
model.BaselineCase (its id, target, status and seconds), never as a whole record. The values
around the cases (info, the fingerprint) are kept; the others (the comparison, the dropped list)
are read and dropped. So 10^6 cases cost about 200 MB and 10-15 s, not a 3 GB tree of records
(docs/qualification.md, "Limits": the figures and the benchmark that measures them).

A file over model.RESULTS_MAX_BYTES, or with more than model.RESULTS_MAX_CASES cases, is refused
with a message naming the limit (model.ResultsError).
"""

import json
import os
import re

from reports import model, validate

CHUNK = 8 << 20
_WS = re.compile(r"[ \t\n\r]*")
_SEP = re.compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*")


class _Reader:
    """JSON text read from a file a chunk at a time, one value at a time."""

    def __init__(self, f):
        self.f, self.buf, self.pos, self.eof = f, "", 0, False
        self.decoder = json.JSONDecoder()
        self.want = CHUNK

    def _more(self):
        """Reads the next chunk (doubling while one value needs more than a chunk); False at
        the end of the file."""
        if self.eof:
            return False
        data = self.f.read(self.want)
        if not data:
            self.eof = True
            return False
        self.buf = self.buf[self.pos:] + data
        self.pos = 0
        return True

    def peek(self):
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def expect(self, ch):
        got = self.peek()
        if got != ch:
            raise ValueError(f"expected {ch!r}, found {got[:20]!r}")
        self.pos += 1

    def value(self):
        """The next JSON value. A value cut by the chunk's end (a string, a number, a whole
        object) is read again with more of the file behind it."""
        self.peek()
        self.want = CHUNK
        while True:
            try:
                v, end = self.decoder.raw_decode(self.buf, self.pos)
                if end < len(self.buf) or self.eof or not self._more_keeping():
                    self.pos = end
                    return v
            except json.JSONDecodeError:
                if not self._more_keeping():
                    raise

    def _more_keeping(self):
        more = self._more()
        self.want = min(self.want * 2, 1 << 30)
        return more

    def members(self):
        """The keys of the object that starts here; the caller reads each key's value."""
        self.expect("{")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            key = self.value()
            if not isinstance(key, str):
                raise ValueError("an object key that is not text")
            self.expect(":")
            yield key
            sep = self.peek()
            self.pos += 1
            if sep == "}":
                return
            if sep != ",":
                raise ValueError(f"expected ',' or '}}', found {sep[:20]!r}")

    def elements(self):
        """The values of the array that starts here, one at a time. A value and the separator
        after it are read straight from the buffer where they lie whole in it (nearly always);
        value() and peek() read on where the chunk cuts them."""
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
            return
        decode, sep_at = self.decoder.raw_decode, _SEP.match
        while True:
            try:
                v, end = decode(self.buf, self.pos)
                whole = end < len(self.buf) or self.eof
            except json.JSONDecodeError:
                whole = False
            if not whole:
                v = self.value()
                end = self.pos
            m = sep_at(self.buf, end)
            if m is not None and m.end() < len(self.buf):
                sep, self.pos = m.group(1), m.end()
            else:
                self.pos = end
                sep = self.peek()
                self.pos += 1
            yield v
            if sep == "]":
                return
            if sep != ",":
                raise ValueError(f"expected ',' or ']', found {sep[:20]!r}")


KEPT = ("format_version", "info", "fingerprint", "problems", "kernel_log")


def read_slim(path):
    """(Run whose cases are model.BaselineCase, info) of a results.json (or a bare run), each
    case checked as validate.py checks it. Raises model.ResultsError naming the file, the field
    or the limit; a device or a FIFO is refused before it is opened."""
    problem = validate.regular_file_problem(path)
    if problem:
        raise model.ResultsError(f"{path}: {problem}")
    size = os.path.getsize(path)
    if size > model.RESULTS_MAX_BYTES:
        raise model.ResultsError(f"{path}: {size >> 20} MiB, larger than the {model.RESULTS_MAX_BYTES >> 20} MiB "
                                 "a baseline or results file may be (docs/qualification.md, Limits); not read")
    doc, run_doc, cases = {}, {}, []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, encoding="utf-8") as f:
            r = _Reader(f)
            if r.peek() != "{":
                raise model.ResultsError(f"{path}: expected a JSON object")
            for key in r.members():
                if key == "run":
                    for rkey in r.members():
                        if rkey == "cases":
                            _cases(r, path, "run.cases", run_doc.get("format_version", doc.get("format_version")),
                                   cases)
                        else:
                            run_doc[rkey] = r.value()
                elif key == "cases":  # a bare run (an old baseline)
                    _cases(r, path, "cases", doc.get("format_version"), cases)
                else:
                    v = r.value()
                    if key in KEPT:
                        doc[key] = v
            if r.peek():
                raise ValueError("text after the document")
    except model.ResultsError:
        raise
    except OSError as e:
        raise model.ResultsError(f"{path}: unreadable: {e.strerror or e}")
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise model.ResultsError(f"{path}: not JSON: {e}")
    run_doc = run_doc if run_doc else {k: v for k, v in doc.items() if k in ("fingerprint", "problems",
                                                                              "format_version", "kernel_log")}
    check = dict(doc, run=dict(run_doc, cases=[]))
    problem = validate.results_problem(check)
    if problem:
        raise model.ResultsError(f"{path}: {problem}")
    version = run_doc.get("format_version", doc.get("format_version", 0))
    if not isinstance(version, int) or version > model.FORMAT_VERSION:
        raise model.ResultsError(f"{path}: results format {version!r} is newer than this tool ({model.FORMAT_VERSION})")
    run = model.BaselineRun(dict(run_doc.get("fingerprint", {})), cases, list(run_doc.get("problems", [])),
                            [k for k in run_doc.get("kernel_log", []) if isinstance(k, dict)])
    info = doc.get("info", {})
    return run, info if isinstance(info, dict) else {}


def _cases(r, path, where, version, out):
    version = version if isinstance(version, int) else model.FORMAT_VERSION
    for i, d in enumerate(r.elements()):
        if i >= model.RESULTS_MAX_CASES:
            raise model.ResultsError(
                f"{path}: more than {model.RESULTS_MAX_CASES:,} cases, the most a baseline or results file may "
                "hold (docs/qualification.md, Limits); not read")
        problem = validate.case_problem(f"{where}[{i}]", d)
        if problem:
            raise model.ResultsError(f"{path}: {problem}")
        out.append(model.BaselineCase.from_record(d, version))
