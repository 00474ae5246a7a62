"""Expectations: what a qualification run may show on a given GPU SKU and driver without it
being a regression. Committed in expectations/<sku>.txt (plus expectations/common.txt).

One entry a line; ' #' starts a comment (the rest of the line is the entry's reason; a '#' inside
a word, as in a URL fragment, does not):

  fail   <case-glob> status=FAIL|CRASH|TIMEOUT[,...] [driver=>=580,<590] [message=<glob>] bug=<url>  # reason
  flake  <case-glob> [driver=...] bug=<url>                                          # reason
  skip   <case-glob> [driver=...] bug=<url>                                          # reason
  coverage <case-glob or fingerprint:<key>> [driver=...] bug=<url>                   # reason
  kernel <case-glob or (run)> pattern=<glob over the kernel log line> [driver=...] bug=<url>  # reason

<case-glob> matches case ids ('suites/hostalloc:hostalloc_test/Suite.Name', fnmatch syntax).
`fail` is a known failure (EXPECTED_FAIL; if the case now passes, the entry is stale),
`flake` a known flaky case (KNOWN_FLAKE), `skip` a case never run on this SKU (it hangs or harms
the machine; its coverage loss against the baseline is expected too), `coverage` a coverage loss
that is known: a case that passed in the baseline and is NOT_SUPPORTED, SKIP or DROPPED now, or a
machine loss 'fingerprint:gpu_count', 'fingerprint:gpu0_name', 'fingerprint:gpu0_cudaDevAttrX'
(see reports/compare.py; a run without a usable GPU is never excused). driver= restricts an entry to NVIDIA driver versions (comma-separated bounds).
message= (fail only) is an fnmatch glob over the case's failure message, '_' standing for a space:
the known failure is excused only when it fails for the known reason (e.g. message=*OOM-killed*);
the same case failing for another reason is a REGRESSION.
`kernel` excuses a known benign kernel log line (docs/qualification.md, "The kernel's word"): a
line that would fail the case running when it was logged (an Xid, an NVRM error, an IOMMU fault,
a PCIe AER line), or the run's health when no case ran ('(run)'), is shown but fails nothing when
it matches pattern= (an fnmatch glob; '_' matches a space or an underscore).
A malformed line is an ExpectationError naming file and line (qualify exits 2); so is a driver=
range that admits no version (driver=>=590,<580), and a file that is not a regular file (a link
to /dev/zero, a FIFO). A UTF-8 byte-order mark and CRLF line ends are accepted.

An entry that did nothing in a run is stale (reports/compare.py, exit 5 when nothing worse): a
`fail` whose cases ran and did not fail so; a `skip`, `flake` or `coverage` entry that names a
target of the run but matches none of its cases (nor a case the skip kept out, a dropped case or
a machine key); and any entry that names no target of the bundle.

Patterns are compiled once (reports/model.py PatternSet): 100,000 entries cost about what 10 do.
"""

import fnmatch
import hashlib
import os
import re
from dataclasses import dataclass, field

from reports.model import FAILING, PatternSet, Status
from reports.validate import NotRegularFile, read_regular_file

KINDS = ("fail", "flake", "skip", "coverage", "kernel")
FAIL_STATUSES = set(FAILING)


class ExpectationError(Exception):
    pass


@dataclass
class Entry:
    kind: str
    pattern: str
    statuses: set = field(default_factory=set)
    driver: list = field(default_factory=list)  # [(op, version tuple)]
    bug: str = ""
    message: str = ""  # fnmatch glob over the failure message ('' : any)
    line: str = ""  # kernel entries: fnmatch glob over the kernel log line ('_': a space or '_')
    reason: str = ""
    source: str = ""  # "file:line"

    def excuses(self, status, message):
        """A fail entry excuses a failure of one of its statuses, for its reason (message=)."""
        if str(status) not in self.statuses:
            return False
        if not self.message:
            return True
        if self._message_rx is None:  # compiled once: fnmatch's cache is shared and bounded
            self._message_rx = re.compile(fnmatch.translate(self.message))
        return self._message_rx.match(message or "") is not None

    def matches(self, case_id, nvidia_driver):
        if self._pattern_rx is None:
            self._pattern_rx = re.compile(fnmatch.translate(self.pattern))
        if not self._pattern_rx.match(case_id):
            return False
        return driver_in_range(nvidia_driver, self.driver)

    _message_rx = None
    _pattern_rx = None


def _version(text):
    return tuple(int(p) for p in re.findall(r"\d+", text))


def driver_in_range(driver, bounds):
    if not bounds:
        return True
    if not driver:
        return False
    v = _version(driver)
    ops = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b,
           "<": lambda a, b: a < b, "==": lambda a, b: a[:len(b)] == b}
    return all(ops[op](v, bound) for op, bound in bounds)


def parse_driver(text, where):
    bounds = []
    for part in text.split(","):
        m = re.fullmatch(r"(>=|<=|==|>|<)(\d+(?:\.\d+)*)", part.strip())
        if not m:
            raise ExpectationError(f"{where}: bad driver bound '{part}' (use e.g. driver=>=580,<590)")
        bounds.append((m.group(1), _version(m.group(2))))
    if range_is_empty(bounds):
        raise ExpectationError(f"{where}: driver={text} admits no driver version (reversed or "
                               "empty range; e.g. driver=>=580,<590)")
    return bounds


def range_is_empty(bounds):
    """True when no version satisfies every bound (>=590,<580; ==580,>=590; >580,<=580).
    Versions compare as tuples; '==580' means any 580.x."""
    low = high = None  # (version, inclusive): the tightest lower and upper bound
    for op, v in bounds:
        if op in (">=", ">"):
            if low is None or v > low[0] or (v == low[0] and op == ">"):
                low = (v, op == ">=")
        elif op in ("<=", "<"):
            if high is None or v < high[0] or (v == high[0] and op == "<"):
                high = (v, op == "<=")
    exact = [v for op, v in bounds if op == "=="]
    for a in exact:  # '==580' is every version starting with 580
        for b in exact:
            if a[:len(b)] != b and b[:len(a)] != a:
                return True
        if low is not None and low[0][:len(a)] > a:
            return True
        if high is not None and (high[0] < a or (high[0] == a and not high[1])):
            return True
    if low is None or high is None:
        return False
    return low[0] > high[0] or (low[0] == high[0] and not (low[1] and high[1]))


def parse(text, name):
    """The entries of one expectations file. A UTF-8 byte-order mark and CRLF line ends (a file
    saved on Windows) are accepted."""
    entries = []
    text = text[1:] if text.startswith("\ufeff") else text
    for n, raw in enumerate(text.splitlines(), start=1):
        where = f"{name}:{n}"
        # A comment starts at a '#' that begins the line or follows whitespace (URLs keep theirs).
        m = re.search(r"(^|\s)#", raw)
        line, comment = (raw[:m.start()], raw[m.end():]) if m else (raw, "")
        fields = line.split()
        if not fields:
            continue
        kind = fields[0]
        if kind not in KINDS:
            raise ExpectationError(f"{where}: unknown kind '{kind}' (expected one of {', '.join(KINDS)})")
        if len(fields) < 2:
            raise ExpectationError(f"{where}: '{kind}' needs a case pattern")
        e = Entry(kind, fields[1], reason=comment.strip(), source=where)
        for f in fields[2:]:
            key, eq, value = f.partition("=")
            if not eq or not value:
                raise ExpectationError(f"{where}: expected key=value, got '{f}'")
            if key == "status":
                e.statuses = set(value.split(","))
                if "" in e.statuses:  # a stray comma: said as such, not as status '' unknown
                    raise ExpectationError(f"{where}: status= is empty in '{f}'")
                bad = e.statuses - FAIL_STATUSES
                if bad:
                    raise ExpectationError(f"{where}: status {','.join(sorted(bad))} is not a failing status")
            elif key == "driver":
                e.driver = parse_driver(value, where)
            elif key == "bug":
                e.bug = value
            elif key == "message":
                if kind != "fail":
                    raise ExpectationError(f"{where}: message= applies to fail entries only")
                e.message = value.replace("_", " ")
            elif key == "pattern":
                if kind != "kernel":
                    raise ExpectationError(f"{where}: pattern= applies to kernel entries only")
                e.line = value
            else:
                raise ExpectationError(f"{where}: unknown key '{key}'")
        if kind == "fail" and not e.statuses:
            e.statuses = {Status.FAIL.value}
        if kind != "skip" and not e.bug:
            raise ExpectationError(f"{where}: every {kind} entry needs bug=<tracker link>")
        if kind == "kernel" and not e.line:
            raise ExpectationError(f"{where}: every kernel entry needs pattern=<glob over the kernel log line>")
        entries.append(e)
    return entries


@dataclass
class Expectations:
    entries: list = field(default_factory=list)
    files: dict = field(default_factory=dict)  # path -> sha256

    def _index(self):
        """The entries' patterns compiled once (model.PatternSet), rebuilt when entries change:
        a lookup stays about as cheap at 100,000 entries as at 10."""
        key = (id(self.entries), len(self.entries))
        if getattr(self, "_index_key", None) != key:
            self._patterns = PatternSet([e.pattern for e in self.entries])
            self._index_key = key
        return self._patterns

    def matching_entries(self, case_id, nvidia_driver):
        """Every entry (in file order) whose pattern and driver range apply to case_id."""
        return [e for e in (self.entries[i] for i in self._index().matches(case_id))
                if driver_in_range(nvidia_driver, e.driver)]

    def lookup(self, case_id, nvidia_driver):
        """Entries of each kind that apply to a case: {'fail': Entry, ...}."""
        out = {}
        for e in self.matching_entries(case_id, nvidia_driver):
            out.setdefault(e.kind, e)
        return out

    def kernel_excuses(self, nvidia_driver):
        """The `kernel` entries for this driver, as the runner takes them (RunConfig.kernel_excused)."""
        return [{"case": e.pattern, "line": e.line, "why": f"{e.source} {e.bug}".strip()}
                for e in self.entries if e.kind == "kernel" and driver_in_range(nvidia_driver, e.driver)]

    def skip_patterns(self, nvidia_driver):
        return [e for e in self.entries if e.kind == "skip" and driver_in_range(nvidia_driver, e.driver)]


def sku_of(gpu_name):
    """'NVIDIA H200' -> 'nvidia-h200'."""
    return re.sub(r"[^a-z0-9]+", "-", (gpu_name or "unknown").lower()).strip("-") or "unknown"


FILE_MAX_BYTES = 64 << 20  # a 100,000-entry file is about 10 MiB


def load(directory, sku):
    """Reads common.txt and <sku>.txt under directory (either may be absent; the directory
    itself must exist: a mistyped path is an error, not a run without expectations). A file
    that is not a regular file (a link to /dev/zero, a FIFO) is refused, never read."""
    if not os.path.isdir(directory):
        raise ExpectationError(f"{directory}: no such expectations directory")
    exp = Expectations()
    for name in ("common.txt", f"{sku}.txt"):
        path = os.path.join(directory, name)
        if not os.path.lexists(path):
            continue
        try:
            text = read_regular_file(path, FILE_MAX_BYTES)
        except FileNotFoundError:
            raise ExpectationError(f"{path}: unreadable: a link to a file that does not exist")
        except NotRegularFile as e:
            raise ExpectationError(f"{path}: {e}")
        except (OSError, UnicodeDecodeError) as e:
            raise ExpectationError(f"{path}: unreadable: {e}")
        exp.entries += parse(text, path)
        exp.files[path] = hashlib.sha256(text.encode()).hexdigest()
    return exp
