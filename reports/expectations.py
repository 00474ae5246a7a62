"""Expectations: what a qualification run may show without it being a regression, keyed by what
causes it. Committed in expectations/common.txt (deviations of a driver branch, a CUDA runtime or a
host property: every SKU inherits them) and expectations/<sku>.txt (what only that GPU does).

One entry a line; ' #' starts a comment (the rest of the line is the entry's reason; a '#' inside
a word, as in a URL fragment, does not):

  fail   <case-glob> status=FAIL|CRASH|TIMEOUT[,...] [conditions] [message=<glob>] bug=<url>  # reason
  flake  <case-glob> [conditions] bug=<url>                                          # reason
  skip   <case-glob> [conditions] bug=<url>                                          # reason
  coverage <case-glob or fingerprint:<key>> [conditions] bug=<url>                   # reason

Conditions say on which platforms the entry applies; every one given must hold:
  driver=580           NVIDIA driver versions: a version alone is that branch or release (580:
                       any 580.x), or comma-separated bounds (driver=>=580,<590)
  runtime=13.0         CUDA runtime versions the binaries were built with (the fingerprint's
                       cuda_runtime_version, 13000 -> 13.0), alike: runtime=>=11.8,<13.1
  host=memory-cgroup   host facts the run's fingerprint lists (host_facts), comma-separated, '!'
                       for a fact that must be absent: HOST_FACTS below
  sku=nvidia-h100-*    a glob over the GPU SKU; only for what the GPU itself causes (entries of
                       <sku>.txt apply to that SKU alone without it)
A platform the run does not record (no driver, an older results.json without host_facts) admits
no entry that names a condition on it.
  kernel <case-glob or (run)> pattern=<glob over the kernel log line> [conditions] bug=<url>  # reason

<case-glob> matches case ids ('suites/hostalloc:hostalloc_test/Suite.Name', fnmatch syntax).
`fail` is a known failure (EXPECTED_FAIL; if the case now passes, the entry is stale),
`flake` a known flaky case (KNOWN_FLAKE), `skip` a case never run on this SKU (it hangs or harms
the machine; its coverage loss against the baseline is expected too), `coverage` a coverage loss
that is known: a case that passed in the baseline and is NOT_SUPPORTED, SKIP or DROPPED now, or a
machine loss 'fingerprint:gpu_count', 'fingerprint:gpu0_name', 'fingerprint:gpu0_cudaDevAttrX'
(see reports/compare.py; a run without a usable GPU is never excused).
message= (fail only) is an fnmatch glob over the case's failure message, '_' standing for a space:
the known failure is excused only when it fails for the known reason (e.g. message=*OOM-killed*);
the same case failing for another reason is a REGRESSION.
`kernel` excuses a known benign kernel log line (docs/qualification.md, "The kernel's word"): a
line that would fail the case running when it was logged (an Xid, an NVRM error, an IOMMU fault,
a PCIe AER line), or the run's health when no case ran ('(run)'), is shown but fails nothing when
it matches pattern= (an fnmatch glob; '_' matches a space or an underscore).
bug= is required (skip: optional) and must be a link: a placeholder (TODO, TBD, FIXME, XXX, '?')
is refused, so no unexplained excuse can be committed.
A malformed line is an ExpectationError naming file and line (qualify exits 2); so is a range
that admits no version (driver=>=590,<580), a runtime= range that admits no CUDA runtime pagelock
builds against (11.x to 13.x), an unknown host fact, and a file that is not a regular file (a link
to /dev/zero, a FIFO). A UTF-8 byte-order mark and CRLF line ends are accepted.
`python3 -m reports.expectations --check FILE...` checks files alone (exit 0 sound, 2 not).

The same files are compiled into every test binary, whose in-test excusals
(fixtures/deviations.h DeviationApplies) select entries by the same conditions:
fixtures/deviations_agreement_test.py runs both selections over a matrix of platforms.

An entry that did nothing in a run is stale (reports/compare.py, exit 5 when nothing worse): a
`fail` whose cases ran and did not fail so; a `skip`, `flake` or `coverage` entry that names a
target of the run but matches none of its cases (nor a case the skip kept out, a dropped case or
a machine key); and any entry that names no target of the bundle. An entry whose conditions
exclude this platform is not stale: it is reported as known elsewhere and judged as the rule here
('r58 known on driver 580; this driver 550.54: judged as the rule').

Patterns are compiled once (reports/model.py PatternSet): 100,000 entries cost about what 10 do.
"""

import fnmatch
import hashlib
import os
import re
import sys
from dataclasses import dataclass, field

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.expectations"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports.model import FAILING, PatternSet, Status
from reports.validate import NotRegularFile, read_regular_file

KINDS = ("fail", "flake", "skip", "coverage", "kernel")
FAIL_STATUSES = set(FAILING)
# The host facts a run's fingerprint may list (host_facts; fixtures/host_setup.cc measures them,
# and the C++ twin of this parser accepts the same names).
HOST_FACTS = ("memory-cgroup", "hugetlb-2m-pool", "hugetlb-1g-pool", "swap", "ksm", "thp",
              "numa-balancing", "numa-multi", "iommu-translated", "iommu-passthrough")
# The CUDA runtimes pagelock builds against: a runtime= range must admit one of them.
RUNTIME_FAMILIES = ((11, 0), (14, 0))  # [11.0, 14.0)
PLACEHOLDER_BUGS = ("todo", "tbd", "fixme", "xxx", "?", "none", "n/a")


class ExpectationError(Exception):
    pass


@dataclass(frozen=True)
class Platform:
    """What an entry's conditions are judged against: the NVIDIA driver ('580.159.04'), the CUDA
    runtime ('13.0'), the SKU ('nvidia-h200') and the host facts. '' or None: not recorded."""
    driver: str = ""
    runtime: str = ""
    sku: str = ""
    host_facts: frozenset = None

    @classmethod
    def from_fingerprint(cls, fp, sku=None):
        fp = fp or {}
        facts = fp.get("host_facts")
        return cls(str(fp.get("nvidia_driver", "") or ""), runtime_text(fp.get("cuda_runtime_version")),
                   sku if sku is not None else sku_of(fp.get("gpu0_name", "none")),
                   None if facts is None else frozenset(f for f in str(facts).split(",") if f))

    @classmethod
    def of(cls, value):
        """A Platform from a Platform, or from a bare driver version (older callers)."""
        return value if isinstance(value, Platform) else cls(driver=str(value or ""))

    def describe(self):
        return ", ".join(x for x in (f"driver {self.driver or 'unknown'}", f"runtime {self.runtime or 'unknown'}",
                                     self.sku and f"SKU {self.sku}") if x)


def runtime_text(value):
    """The fingerprint's cuda_runtime_version ('13000') as '13.0'; '' when absent or not a number."""
    try:
        n = int(str(value).strip())
    except (TypeError, ValueError):
        return ""
    return f"{n // 1000}.{n % 1000 // 10}" if n > 0 else ""


@dataclass
class Entry:
    kind: str
    pattern: str
    statuses: set = field(default_factory=set)
    driver: list = field(default_factory=list)  # [(op, version tuple)]
    runtime: list = field(default_factory=list)  # [(op, version tuple)]
    host: list = field(default_factory=list)  # [(fact, wanted)]
    sku: str = ""  # glob over the SKU ('' : any)
    bug: str = ""
    message: str = ""  # fnmatch glob over the failure message ('' : any)
    line: str = ""  # kernel entries: fnmatch glob over the kernel log line ('_': a space or '_')
    reason: str = ""
    source: str = ""  # "file:line"
    texts: dict = field(default_factory=dict)  # condition -> its text as written ('driver': '580')

    def excuses(self, status, message):
        """A fail entry excuses a failure of one of its statuses, for its reason (message=)."""
        if str(status) not in self.statuses:
            return False
        if not self.message:
            return True
        if self._message_rx is None:  # compiled once: fnmatch's cache is shared and bounded
            self._message_rx = re.compile(fnmatch.translate(self.message))
        return self._message_rx.match(message or "") is not None

    def matches(self, case_id, platform):
        if self._pattern_rx is None:
            self._pattern_rx = re.compile(fnmatch.translate(self.pattern))
        if not self._pattern_rx.match(case_id):
            return False
        return self.applies(platform)

    def applies(self, platform):
        """Do the entry's conditions hold on this platform (a Platform, or a driver version)?"""
        return not self.why_not(platform)

    def why_not(self, platform):
        """'' when every condition holds, else what excludes the platform ('this driver 550.54')."""
        p = Platform.of(platform)
        if not driver_in_range(p.driver, self.driver):
            return f"this driver {p.driver or 'is unknown'}"
        if not driver_in_range(p.runtime, self.runtime):
            return f"this runtime {p.runtime or 'is unknown'}"
        if self.sku and not fnmatch.fnmatchcase(p.sku or "", self.sku):
            return f"this SKU {p.sku or 'is unknown'}"
        for fact, wanted in self.host:
            if p.host_facts is None:
                return "this run records no host facts"
            if (fact in p.host_facts) != wanted:
                return f"this host {'lacks' if wanted else 'has'} {fact}"
        return ""

    def known_on(self):
        """Where the entry applies, as written: 'driver 580, runtime 13.0' ('' : everywhere)."""
        names = {"driver": "driver", "runtime": "runtime", "host": "host", "sku": "SKU"}
        return ", ".join(f"{names[k]} {v}" for k, v in self.texts.items())

    @property
    def anchor(self):
        return self.bug.partition("#")[2]

    _message_rx = None
    _pattern_rx = None


def _version(text):
    return tuple(int(p) for p in re.findall(r"\d+", text))


def driver_in_range(driver, bounds):
    """Does a version ('580.159.04', '13.0') satisfy every bound? A version that is not recorded
    satisfies no bound; no bound is satisfied by everything."""
    if not bounds:
        return True
    if not driver:
        return False
    v = _version(driver)
    ops = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b,
           "<": lambda a, b: a < b, "==": lambda a, b: a[:len(b)] == b}
    return all(ops[op](v, bound) for op, bound in bounds)


def parse_driver(text, where, key="driver"):
    """driver=/runtime= values: comma-separated bounds; a version alone means '==' (580: any 580.x)."""
    bounds = []
    example = "driver=580 or driver=>=580,<590" if key == "driver" else "runtime=13.0 or runtime=>=11.8,<13.1"
    for part in text.split(","):
        m = re.fullmatch(r"(>=|<=|==|>|<)?(\d+(?:\.\d+)*)", part.strip())
        if not m:
            raise ExpectationError(f"{where}: bad {key} bound '{part}' (use e.g. {example})")
        bounds.append((m.group(1) or "==", _version(m.group(2))))
    if range_is_empty(bounds):
        raise ExpectationError(f"{where}: {key}={text} admits no {key} version (reversed or "
                               f"empty range; e.g. {example})")
    return bounds


def parse_runtime(text, where):
    bounds = parse_driver(text, where, "runtime")
    lo, hi = RUNTIME_FAMILIES
    if range_is_empty(bounds + [(">=", lo), ("<", hi)]):
        raise ExpectationError(f"{where}: runtime={text} admits no CUDA runtime pagelock builds "
                               "against (11.x to 13.x; the fingerprint's 13000 is runtime 13.0)")
    return bounds


def parse_host(text, where):
    facts = []
    for part in text.split(","):
        name = part.strip()
        wanted = not name.startswith("!")
        name = name.lstrip("!")
        if name not in HOST_FACTS:
            raise ExpectationError(f"{where}: unknown host fact '{name}' (known: {', '.join(HOST_FACTS)}; "
                                   "'!' before a fact for its absence)")
        facts.append((name, wanted))
    return facts


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


def _field(e, key, value, kind, where):
    """One key=value of an entry into e; raises ExpectationError naming the line."""
    if key == "status":
        e.statuses = set(value.split(","))
        if "" in e.statuses:  # a stray comma: said as such, not as status '' unknown
            raise ExpectationError(f"{where}: status= is empty in 'status={value}'")
        bad = e.statuses - FAIL_STATUSES
        if bad:
            raise ExpectationError(f"{where}: status {','.join(sorted(bad))} is not a failing status")
    elif key in ("driver", "runtime", "host", "sku"):
        if key in e.texts:
            raise ExpectationError(f"{where}: {key}= given twice")
        e.texts[key] = value
        if key == "driver":
            e.driver = parse_driver(value, where)
        elif key == "runtime":
            e.runtime = parse_runtime(value, where)
        elif key == "host":
            e.host = parse_host(value, where)
        else:
            e.sku = value
    elif key == "bug":
        if value.strip().lower() in PLACEHOLDER_BUGS:
            raise ExpectationError(f"{where}: bug={value} is a placeholder: link the bug report or the "
                                   "docs/platforms/ section that explains this entry")
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


def parse(text, name, sku=None):
    """The entries of one expectations file. sku: the file is that SKU's own (<sku>.txt), so its
    entries apply to that SKU alone. A UTF-8 byte-order mark and CRLF line ends (a file saved on
    Windows) are accepted."""
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
            _field(e, key, value, kind, where)
        if kind == "fail" and not e.statuses:
            e.statuses = {Status.FAIL.value}
        if kind != "skip" and not e.bug:
            raise ExpectationError(f"{where}: every {kind} entry needs bug=<tracker link>")
        if kind == "kernel" and not e.line:
            raise ExpectationError(f"{where}: every kernel entry needs pattern=<glob over the kernel log line>")
        if sku is not None:
            if e.sku and not fnmatch.fnmatchcase(sku, e.sku):
                raise ExpectationError(f"{where}: sku={e.sku} in the file of {sku} never applies")
            e.sku = e.sku or sku
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

    def entries_for(self, case_id):
        """Every entry (in file order) whose pattern matches case_id, whatever the platform."""
        return [self.entries[i] for i in self._index().matches(case_id)]

    def matching_entries(self, case_id, platform):
        """Every entry (in file order) whose pattern and conditions apply to case_id here
        (platform: a Platform, or a bare NVIDIA driver version)."""
        p = Platform.of(platform)
        return [e for e in self.entries_for(case_id) if e.applies(p)]

    def lookup(self, case_id, platform):
        """Entries of each kind that apply to a case: {'fail': Entry, ...}."""
        out = {}
        for e in self.matching_entries(case_id, platform):
            out.setdefault(e.kind, e)
        return out

    def kernel_excuses(self, platform):
        """The `kernel` entries for this platform, as the runner takes them (RunConfig.kernel_excused)."""
        p = Platform.of(platform)
        return [{"case": e.pattern, "line": e.line, "why": f"{e.source} {e.bug}".strip()}
                for e in self.entries if e.kind == "kernel" and e.applies(p)]

    def skip_patterns(self, platform):
        p = Platform.of(platform)
        return [e for e in self.entries if e.kind == "skip" and e.applies(p)]

    def deviation_applies(self, anchor, platform):
        """(applies, why) for a deviation anchor, as fixtures/deviations.cc Decide answers it: the
        first entry carrying bug=...#anchor whose conditions hold here."""
        p = Platform.of(platform)
        outside = []
        for e in self.entries:
            if e.anchor != anchor:
                continue
            why = e.why_not(p)
            if not why:
                return True, e.source
            outside.append(f"{e.source} ({e.known_on() or 'everywhere'}: {why})")
        return False, "; ".join(outside) or f"no entry with bug=...#{anchor}"


def sku_of(gpu_name):
    """'NVIDIA H200' -> 'nvidia-h200'."""
    return re.sub(r"[^a-z0-9]+", "-", (gpu_name or "unknown").lower()).strip("-") or "unknown"


FILE_MAX_BYTES = 64 << 20  # a 100,000-entry file is about 10 MiB


def read_file(path, sku=None):
    """The entries of one file and its digest; ExpectationError for anything unreadable."""
    try:
        text = read_regular_file(path, FILE_MAX_BYTES)
    except FileNotFoundError:
        raise ExpectationError(f"{path}: unreadable: a link to a file that does not exist")
    except NotRegularFile as e:
        raise ExpectationError(f"{path}: {e}")
    except (OSError, UnicodeDecodeError) as e:
        raise ExpectationError(f"{path}: unreadable: {e}")
    return parse(text, path, sku), hashlib.sha256(text.encode()).hexdigest()


def load(directory, sku):
    """Reads common.txt and <sku>.txt under directory (either may be absent; the directory
    itself must exist: a mistyped path is an error, not a run without expectations). A file
    that is not a regular file (a link to /dev/zero, a FIFO) is refused, never read."""
    if not os.path.isdir(directory):
        raise ExpectationError(f"{directory}: no such expectations directory")
    exp = Expectations()
    for name, own in (("common.txt", None), (f"{sku}.txt", sku)):
        path = os.path.join(directory, name)
        if not os.path.lexists(path):
            continue
        entries, digest = read_file(path, own)
        exp.entries += entries
        exp.files[path] = digest
    return exp


def check(paths):
    """`--check FILE...`: parse each file as qualify would (a <sku>.txt as that SKU's own); returns
    the exit code, 0 when all are sound, 2 with file:line when one is not."""
    code = 0
    for path in paths:
        base = os.path.basename(path)
        sku = None if base == "common.txt" or not base.endswith(".txt") else base[:-4]
        try:
            entries, _ = read_file(path, sku)
        except ExpectationError as e:
            print(f"expectations: {e}", file=sys.stderr)
            code = 2
            continue
        print(f"{path}: {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}, sound")
    return code


def main(argv=None):
    import argparse
    p = argparse.ArgumentParser(prog="python3 -m reports.expectations",
                                description="Checks expectations files (exit 0 sound, 2 not, naming file:line).")
    p.add_argument("--check", nargs="+", metavar="FILE", required=True)
    return check(p.parse_args(argv).check)


if __name__ == "__main__":
    sys.exit(main())
