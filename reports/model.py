"""The typed outcome model: what one case did, what one run is, and the pass/fail/coverage rules.

Everything that decides whether a status passes, fails or loses coverage lives here; the other
modules ask `Status` and `Change`. The test binaries write outcomes through fixtures/outcome.h;
the property names below mirror its constants (model_test.py checks that they agree).
`decide_status` is the only place that reads a case's status (GoogleTest's, the declared one,
the NotSupported prefix), `Case.from_raw` the only one that interprets its recorded properties,
and `write_results` / `read_results` the only code that writes and reads results.json. The
readers of test binaries' files are in reports/testlogs.py (which imports this module, never
the other way round); the shape check of results.json is reports/validate.py.
"""

import enum
import fnmatch
import json
import math
import os
import re
import shlex
from dataclasses import dataclass, field

from reports import validate

FORMAT_VERSION = 2  # results.json; 0/absent = before the typed model (properties in one dict)

# --- Names shared with fixtures/outcome.h (checked by model_test.py) -----------------------
PROP_STATUS = "pagelock.status"  # NOT_SUPPORTED | WARN | CRASH | TIMEOUT
PROP_REASON = "pagelock.reason"
PROP_SEED = "pagelock.seed"  # the case's seed, decimal
PROP_RUN_SEED = "pagelock.run_seed"  # the binary's seed (top level): what replays a case
PROP_RULES = "pagelock.rules"
PROP_METRIC_PREFIX = "pagelock.metric."  # value "<number> <unit>"
PROP_OBSERVED_PREFIX = "pagelock.observed."
PROP_BUDGET_PREFIX = "pagelock.budget."  # value "<number> <unit>"
PROP_CHILD = "pagelock.child"
PROP_CHILD_LOG = "pagelock.child_log"
PROP_HEALTH = "pagelock.health"  # sticky_error | unchecked_error | pinned_leak
PROP_PROFILE = "pagelock.profile"  # the rule profile a case applied
NOT_SUPPORTED_PREFIX = "NotSupported: "  # human-readable prefix of a NotSupported skip message
HEALTH_VALUES = ("sticky_error", "unchecked_error", "pinned_leak")
DECLARED_STATUSES = ("NOT_SUPPORTED", "WARN", "CRASH", "TIMEOUT")  # what pagelock.status may say
JOURNAL_NAME = "pagelock_journal.jsonl"
JOURNAL_ENV = "PAGELOCK_JOURNAL"
SEED_ENV = "PAGELOCK_SEED"
# The bundle folder of a replay command whose writer does not know where the bundle is unpacked
# (the page, JUnit): the shell reads $BUNDLE, and stops with this message when it is unset.
BUNDLE_UNSET = '"${BUNDLE:?set BUNDLE to the bundle folder}"'
EXIT_POISONED = 75  # kExitPoisoned: a case left a sticky CUDA error; restart on the rest

# Names written before fixtures/outcome.h (old results.json files, the harness's own records).
_LEGACY_STATUS = "pagelock_status"
_LEGACY_METRIC = re.compile(r".*_(GBps|MBps|us|ms|s|MiB|GiB|count|ratio)$")
_HARNESS_KEYS = {"attempts", "first_failure", "log_tail", "child_log"}


class Status(str, enum.Enum):
    """What happened to a case, in order of severity (piglit/KCIDB order)."""
    PASS = "PASS"
    WARN = "WARN"
    NOT_SUPPORTED = "NOT_SUPPORTED"
    SKIP = "SKIP"
    FAIL = "FAIL"
    TIMEOUT = "TIMEOUT"
    CRASH = "CRASH"
    INFRA_ERROR = "INFRA_ERROR"
    MISSING = "MISSING"

    def __str__(self):
        return self.value

    @property
    def severity(self):
        return _ORDER.index(self)

    @property
    def is_pass(self):
        return self in (Status.PASS, Status.WARN)

    @property
    def is_fail(self):
        """Makes a run unclean."""
        return self in (Status.FAIL, Status.TIMEOUT, Status.CRASH, Status.INFRA_ERROR, Status.MISSING)

    @property
    def is_coverage_gap(self):
        """The behaviour was not exercised: PASS -> this is COVERAGE_LOST."""
        return self in (Status.NOT_SUPPORTED, Status.SKIP, Status.MISSING)

    @property
    def is_retryable(self):
        return self in (Status.FAIL, Status.CRASH, Status.TIMEOUT)

    @staticmethod
    def parse(text):
        """The Status named by text; None when the model does not know it."""
        try:
            return Status(str(text).strip().upper())
        except ValueError:
            return None


_ORDER = list(Status)
STATUSES = [s.value for s in Status]
FAILING = [s.value for s in Status if s.is_fail]


class Change(str, enum.Enum):
    """A case's status against its expectations and the baseline run."""
    REGRESSION = "REGRESSION"  # failed, nothing expects it
    COVERAGE_LOST = "COVERAGE_LOST"  # exercised in the baseline, not now; or lost with the machine
    DROPPED = "DROPPED"  # in the baseline, not in this run
    FLAKE = "FLAKE"  # failed, then passed on retry, no expectation covers it
    UNEXPECTED_PASS = "UNEXPECTED_PASS"  # passes although a `fail` expectation says it fails
    EXPECTED_FAIL = "EXPECTED_FAIL"
    KNOWN_FLAKE = "KNOWN_FLAKE"  # failed, then passed, a `flake` expectation covers it
    KNOWN_COVERAGE_LOSS = "KNOWN_COVERAGE_LOSS"  # a coverage loss an expectation names
    # Ran in a baseline of another SKU or host (or other host facts), not here, for a reason that
    # platform difference explains (a host setting, a capability of the other SKU): shown as such,
    # never as lost coverage.
    PLATFORM_DIFFERS = "PLATFORM_DIFFERS"
    FIXED = "FIXED"  # passes now, failed in the baseline
    NEW = "NEW"  # not in the baseline

    def __str__(self):
        return self.value

    @property
    def blocks(self):
        """Which verdict this change forces, or None."""
        return {Change.REGRESSION: "regression", Change.COVERAGE_LOST: "coverage",
                Change.DROPPED: "coverage", Change.FLAKE: "update",
                Change.UNEXPECTED_PASS: "update"}.get(self)


# --- Conflicting evidence about one case ---------------------------------------------------
# The one rule, for every reader of a binary's results (the runner's merge of journal, XML and
# listing, the testlogs reader, the history): where the evidence about one case disagrees, the
# worse status wins (Status order: a FAIL beats a PASS, a CRASH beats a FAIL) and the conflict is
# named on the case (Case.conflicts, property CONFLICTS_PROP), so that results.json, the page,
# JUnit and the terminal say it. A case with conflicting evidence is not retried: a rerun cannot
# settle what the binary said, and a pass on the rerun would hide the worse word. The kinds:
CONFLICT_TWICE = "reported more than once in one launch"  # two results for one case
CONFLICT_EARLY = "a result was recorded before the case started"  # journal end before its start
CONFLICT_UNLISTED = "the binary's listing did not name this case"  # a result for a phantom case
CONFLICT_CHANNELS = "the case journal and the XML disagree"  # the two records of one launch
# The kernel's word (tools/runner/kmsg.py): an Xid, NVRM error, IOMMU fault or PCIe AER line
# logged while the case ran is a FAIL against whatever the binary said.
CONFLICT_KERNEL = "the kernel log reports a fault while the case ran"
# At the binary's level, its "(binary)" case: an exit status that says it finished (0 or 1) while
# cases of its listing that it was given never started. CRASH stands.
CONFLICT_UNRUN = "the binary's exit left listed cases unrun"
CONFLICTS_PROP = "conflicts"  # harness property: one conflict a line


def worse_status(a, b):
    """The status that wins when two pieces of evidence about one case disagree: the worse one
    by the Status order; `a` on a tie (so the caller's preferred record is kept)."""
    a, b = Status(str(a)), Status(str(b))
    return b if b.severity > a.severity else a


def conflict_note(kind, said, won, detail=""):
    """One conflict as the case shows it: its kind, what each piece of evidence said (in the order
    it came, e.g. "FAIL, then PASS"), and the status that stands."""
    return f"conflicting evidence: {kind} ({said}{'; ' + detail if detail else ''}); {won} stands"


# --- Text as it is written: visible, never raw ---------------------------------------------
# A case name or message may hold any character a binary printed: NUL, ESC, a lone surrogate
# (JSON "\udcff"), U+2028. None of them can be written raw into XML 1.0, a PostgreSQL TEXT, a
# terminal or a one-line CSV field, and a reader of one file spells them differently from a reader
# of another (the XML reader must replace what XML cannot hold). So every reader spells them one
# way, here: such a character becomes its escape (\n, \t, \r, else \xNN or \uNNNN), visible
# wherever it is shown.
# A name keeps nothing raw (a tab or line break in a name is escaped too); a message keeps its
# tabs and line breaks.
_UNSAFE_IN_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")
_UNSAFE_IN_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
ESCAPED_CHAR = re.compile(r"\\x[0-9a-f]{2}|\\u[0-9a-f]{4}|\\[ntr]")  # what the functions below write
_NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def escape_char(m):
    """The escape of one character: \\t, \\n, \\r by name (as the CSVs always wrote a line
    break), else \\xNN below U+0100 and \\uNNNN above."""
    ch = m.group()
    if ch in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[ch]
    c = ord(ch)
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible_name(text):
    """A case, suite or target name as every reader spells it: control characters, line and
    paragraph separators, lone surrogates and non-characters written as \\xNN or \\uNNNN."""
    text = str(text)
    return _UNSAFE_IN_NAME.sub(escape_char, text) if _UNSAFE_IN_NAME.search(text) else text


def visible_text(text):
    """A message or log as every writer can hold it: the same escapes as visible_name, but tabs
    and line breaks stay."""
    if not text:
        return text
    text = str(text)
    return _UNSAFE_IN_TEXT.sub(escape_char, text) if _UNSAFE_IN_TEXT.search(text) else text


def count_statuses(statuses):
    counts = {s: 0 for s in STATUSES}
    for s in statuses:
        counts[str(s)] = counts.get(str(s), 0) + 1
    return counts


def format_counts(counts):
    """Counts by status, then the closing line 'N passed, N failed, N skipped'."""
    parts = [f"{s}={n}" for s, n in counts.items() if n]
    passed = sum(n for s, n in counts.items() if _known(s) and _known(s).is_pass)
    failed = sum(n for s, n in counts.items() if not _known(s) or _known(s).is_fail)
    skipped = sum(n for s, n in counts.items() if _known(s) in (Status.SKIP, Status.NOT_SUPPORTED))
    return ("by status: " + (", ".join(parts) if parts else "no cases") + "\n"
            f"{passed} passed, {failed} failed, {skipped} skipped")


def _known(s):
    return Status.parse(s)


def is_clean(counts):
    """No case failed (an unknown status counts as failed)."""
    return not any(n for s, n in counts.items() if not _known(s) or _known(s).is_fail)


# --- Case ids and gtest filters ----------------------------------------------------------

@dataclass(frozen=True)
class CaseId:
    """target '//suites/stress:pinned_stress_test', suite 'Flags/HostAllocTest', case
    'MapsMemory/portable' (gtest name, parameter included); param 'portable' or ''."""
    target: str
    suite: str
    case: str

    @property
    def param(self):
        return self.case.rsplit("/", 1)[1] if "/" in self.case else ""

    @property
    def package(self):
        return self.target[2:].split(":", 1)[0]

    @property
    def target_name(self):
        return self.target.rsplit(":", 1)[-1]

    @property
    def gtest_name(self):
        return f"{self.suite}.{self.case}"

    def __str__(self):
        """Stable id: '<package>:<target>/<suite>.<name>' (the package may have any depth)."""
        return f"{self.target[2:]}/{self.gtest_name}"

    @staticmethod
    def parse(text):
        """The inverse of str(): splits at the ':' of the label and the first '/' after it."""
        colon = text.find(":")
        slash = text.find("/", colon + 1)
        if colon < 0 or slash < 0:
            raise ValueError(f"not a case id: {text!r} (expected package:target/Suite.Name)")
        suite, dot, case = text[slash + 1:].partition(".")
        # Parameterized suites have '/' but never '.'; the gtest name starts after the first '.'.
        return CaseId("//" + text[:slash], suite, case)


def gtest_filters(case_ids, negative=False):
    """{target: gtest filter} naming exactly these cases, per target ('-' first when negative)."""
    by_target = {}
    for cid in case_ids:
        by_target.setdefault(cid.target, []).append(cid.gtest_name)
    return {t: ("-" if negative else "") + ":".join(sorted(names)) for t, names in by_target.items()}


def matching(patterns, case_ids):
    """The case ids that any fnmatch pattern ('suites/a:a_test/S.*') matches. The compiled set
    of the last patterns is kept: qualify asks once per target with the same skip patterns."""
    key = tuple(patterns)
    if _LAST_SET[0] != key:
        _LAST_SET[:] = [key, PatternSet(key)]
    globs = _LAST_SET[1]
    return [c for c in case_ids if globs.any_match(str(c))]


_LAST_SET = [None, None]


_GLOB_PART = re.compile(r"\*|\?|\[!?\]?[^\]]*\]")  # fnmatch's wildcards ('[' without ']' is literal)
_BLOCK = 256  # patterns per combined regex: one C-level scan rules out a whole block
_FEW_PIECES = 48  # up to this many filing pieces, each is looked for in a text, not the reverse


class PatternSet:
    """fnmatch globs compiled once, so that a lookup costs about the same for 10 patterns or
    100,000 (fnmatch's own cache holds 32,768 patterns; above it every lookup recompiled all).

    A pattern without a wildcard is one dict lookup. Every other pattern is filed under the
    rarest three-character piece of its literal text: a text is tried only against the patterns
    filed under a piece it contains, each compiled when first tried. Patterns with no literal
    piece of three characters ('*', '*a*') are tried a block at a time through one regex."""

    def __init__(self, patterns):
        self.exact = {}  # pattern -> [index]
        same = {}  # a wildcard pattern -> [index of every copy of it]
        for i, p in enumerate(patterns):
            wild = "*" in p or "?" in p or "[" in p
            (same if wild else self.exact).setdefault(p, []).append(i)
        # Below, i is the number of a distinct wildcard pattern; self.copies[i] its indices.
        self.patterns = list(same)
        self.copies = list(same.values())
        self.by_piece = {}  # three characters -> [i]
        self.rest = []  # the patterns with no literal piece
        self.compiled = {}  # i -> regex, filled as patterns are tried
        # What a text must hold for pattern i to match it, checked before any regex is built:
        # its literal head and tail, and every literal piece between its wildcards.
        self.must = []
        pieces_of = []
        counts = {}
        split = _GLOB_PART.split
        for i, p in enumerate(self.patterns):
            literals = split(p)
            if len(literals) == 1:  # a '[' without its ']' is a literal: an exact name after all
                self.exact.setdefault(p, []).extend(self.copies[i])
                pieces_of.append(None)
                self.must.append(None)
                continue
            self.must.append((literals[0], literals[-1], [lit for lit in literals[1:-1] if lit]))
            pieces = {lit[k:k + 3] for lit in literals for k in range(len(lit) - 2)}
            pieces_of.append(pieces)
            for piece in pieces:
                counts[piece] = counts.get(piece, 0) + 1
        for lst in self.exact.values():
            lst.sort()
        rarity = counts.__getitem__
        for i, pieces in enumerate(pieces_of):
            if pieces:
                self.by_piece.setdefault(min(pieces, key=rarity), []).append(i)
            elif pieces is not None:
                self.rest.append(i)
        self.rest_blocks = None

    def _regex(self, i):
        rx = self.compiled.get(i)
        if rx is None:
            rx = self.compiled[i] = re.compile(fnmatch.translate(self.patterns[i]))
        return rx

    def _candidates(self, text):
        """The patterns filed under a piece of text that could match it, by their literals."""
        if not self.by_piece:  # no wildcard pattern with a literal piece: nothing to look up
            return
        if len(self.by_piece) <= _FEW_PIECES:  # a few pieces: look each up in the text (C speed)
            for piece, filed in self.by_piece.items():
                if piece in text:
                    for i in filed:
                        head, tail, middle = self.must[i]
                        if text.startswith(head) and text.endswith(tail) and \
                                len(head) + len(tail) <= len(text) and all(m in text for m in middle):
                            yield i
            return
        seen = set()
        for k in range(len(text) - 2):
            piece = text[k:k + 3]
            if piece in seen:
                continue
            seen.add(piece)
            for i in self.by_piece.get(piece, ()):
                head, tail, middle = self.must[i]
                if text.startswith(head) and text.endswith(tail) and \
                        len(head) + len(tail) <= len(text) and all(m in text for m in middle):
                    yield i

    def _rest_hits(self, text, first_only=False):
        if not self.rest:
            return
        if self.rest_blocks is None:
            self.rest_blocks = []
            for start in range(0, len(self.rest), _BLOCK):
                chunk = self.rest[start:start + _BLOCK]
                expr = "|".join(f"(?:{fnmatch.translate(self.patterns[i])})" for i in chunk)
                self.rest_blocks.append((re.compile(expr), chunk))
        for combined, chunk in self.rest_blocks:
            if combined.match(text):
                for i in chunk:
                    if self._regex(i).match(text):
                        yield i
                        if first_only:
                            return

    def matches(self, text):
        """The indices of every pattern that matches text, in pattern order."""
        if not self.exact and not self.patterns:  # no entry at all (a million lookups of a
            return []                              # dropped baseline cost nothing then)
        hits = list(self.exact.get(text, ()))
        for i in self._candidates(text):
            if self._regex(i).match(text):
                hits += self.copies[i]
        for i in self._rest_hits(text):
            hits += self.copies[i]
        if len(hits) > 1:
            hits.sort()
        return hits

    def any_match(self, text):
        if text in self.exact:
            return True
        if any(self._regex(i).match(text) for i in self._candidates(text)):
            return True
        return next(self._rest_hits(text, first_only=True), None) is not None


# --- Failure messages ----------------------------------------------------------------------

_LOCATION = re.compile(r"^\S+:\d+:?$")


def gtest_message(text):
    """A failure message without GoogleTest's bare 'Failed' label. FAIL() << msg,
    ADD_FAILURE() << msg and every child-process scenario (ASSERT_CHILD_COMPLETED) record
    'file:line\nFailed\nmsg': the label says nothing, and left in it becomes the one-line reason
    of every such failure. A 'Failed' with no text after it (a bare FAIL()) stays: it is all the
    assertion said. Every reader (XML, journal, results.json) passes messages through here, so
    the page, JUnit, the CSVs and the terminal all show the assertion's own text."""
    if not text or "Failed" not in text:
        return text
    lines = text.split("\n")
    kept = []
    for i, line in enumerate(lines):
        if line.strip() == "Failed":
            after = next((l.strip() for l in lines[i + 1:] if l.strip()), "")
            if after and not _LOCATION.match(after):
                continue  # the explanation follows: it is the message
        kept.append(line)
    return "\n".join(kept)


# --- Metrics ------------------------------------------------------------------------------

@dataclass
class Metric:
    value: float  # may be nan or inf: stored and shown as such
    unit: str = ""

    @staticmethod
    def parse(text):
        """'55.1 GB/s' -> Metric(55.1, 'GB/s'); None when the number is not a number at all."""
        num, _, unit = str(text).strip().partition(" ")
        try:
            return Metric(float(num), unit.strip())
        except ValueError:
            return None

    @property
    def finite(self):
        return math.isfinite(self.value)

    def __str__(self):
        v = f"{self.value:.6g}" if self.finite else repr(self.value)
        return f"{v} {self.unit}".strip()

    def to_json(self):
        return {"value": self.value if self.finite else repr(self.value), "unit": self.unit}

    @staticmethod
    def from_json(d):
        return Metric(float(d.get("value", "nan")), d.get("unit", ""))


_M64 = 2 ** 64 - 1


def derive_case_seed(run_seed, gtest_name):
    """pagelock::CaseSeed() (fixtures/outcome.cc): SplitMix(run seed ^ FNV-1a(name)) % 10^12, so
    a report can check that a replay command's run seed really gives the case its seed."""
    h = 1469598103934665603
    for b in gtest_name.encode():
        h = ((h ^ b) * 1099511628211) & _M64
    x = ((int(run_seed) ^ h) + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return (x ^ (x >> 31)) % 1000000000000


def _is_stress(target):
    name = target.rsplit(":", 1)[-1]
    return name.endswith("_stress_test") or target.startswith("//suites/stress:")


def decide_status(status, declared=None, skip_text=None):
    """The one reading of a case's status. status: what GoogleTest, the journal or the runner
    says (or a results.json record's status); declared: the test's pagelock.status; skip_text:
    the XML's skip message when GoogleTest skipped the case. Returns (Status, the reason a skip
    gives or None, a note to put before the message when a status is unknown)."""
    st = Status.parse(status)
    if st is None:
        return Status.INFRA_ERROR, None, f"unknown status {status!r} (the harness and the model disagree)"
    if declared:
        dst = Status.parse(declared)
        if dst is None:
            return Status.INFRA_ERROR, None, f"unknown {PROP_STATUS} {str(declared)[:40]!r}"
        reason = _skip_reason(skip_text) if dst == Status.NOT_SUPPORTED else None
        # NOT_SUPPORTED refines a skip, WARN a pass; a failure wins over both.
        if st in (Status.PASS, Status.SKIP) or dst.is_fail and dst.severity > st.severity:
            return dst, reason, ""
        return st, reason, ""
    if st == Status.SKIP and skip_text is not None:
        reason = _skip_reason(skip_text)
        return (Status.NOT_SUPPORTED if NOT_SUPPORTED_PREFIX in skip_text else Status.SKIP), reason, ""
    return st, None, ""


def _skip_reason(skip_text):
    """A NotSupported skip's reason follows the prefix; any other skip's is its whole text."""
    if skip_text is None:
        return None
    idx = skip_text.find(NOT_SUPPORTED_PREFIX)
    return skip_text[idx + len(NOT_SUPPORTED_PREFIX):].strip() if idx >= 0 else skip_text


# --- Case and Run -------------------------------------------------------------------------

@dataclass
class Case:
    cid: CaseId
    status: Status
    seconds: float = 0.0
    message: str = ""  # failure text, or crash description
    reason: str = ""  # why NOT_SUPPORTED or SKIP
    attempts: list = field(default_factory=list)  # [Status] of every attempt; last = status
    first_failure: str = ""  # message of the first failed attempt when a retry passed
    seed: int = None  # the case's seed (pagelock.seed)
    run_seed: int = None  # PAGELOCK_SEED the binary ran with: what replays the case
    rules: list = field(default_factory=list)
    metrics: dict = field(default_factory=dict)  # name -> Metric
    budgets: dict = field(default_factory=dict)  # name -> Metric
    observed: dict = field(default_factory=dict)  # key -> str
    logs: dict = field(default_factory=dict)  # 'log_tail', 'child_log' -> text
    child: str = ""  # child process outcome
    health: str = ""  # sticky_error | unchecked_error | pinned_leak
    stress: bool = None  # a stress target (Bazel needs --config=stress); None: guess from name
    extra: dict = field(default_factory=dict)  # other properties the test recorded
    conflicts: list = field(default_factory=list)  # conflicting evidence, one sentence each

    def __post_init__(self):
        if not self.attempts:
            self.attempts = [self.status]

    # Convenience views
    @property
    def id(self):
        """The stable id as text: 'suites/a:a_test/Suite.Name'."""
        return str(self.cid)

    @property
    def target(self):
        return self.cid.target

    @property
    def suite(self):
        return self.cid.suite

    @property
    def name(self):
        return self.cid.case

    @property
    def gtest_name(self):
        return self.cid.gtest_name

    @property
    def family(self):
        return self.cid.package.split("/")[-1]

    @property
    def flaky(self):
        """Passed in the end after a failed attempt."""
        return self.status.is_pass and any(a.is_fail for a in self.attempts)

    @property
    def properties(self):
        """Read-only flat view of what a test recorded: attempts, rules, finite metrics by name,
        observations and other properties (not logs, health, seeds: their fields hold them).
        New code reads the typed fields."""
        view = dict(self.extra)
        view.update({k: str(v) for k, v in self.observed.items()})
        view.update({k: m.value for k, m in self.metrics.items() if m.finite})
        if self.rules:
            view["rules"] = ",".join(self.rules)
        view["attempts"] = " ".join(str(a) for a in self.attempts)
        return view

    @property
    def seed_replays(self):
        """True when run_seed gives this case its recorded seed, False when it does not (the
        run seed is not this binary's), None when either is unknown."""
        if self.seed is None or self.run_seed is None:
            return None
        return derive_case_seed(self.run_seed, self.gtest_name) == self.seed

    def replay_command(self, bundle=None):
        """How to run exactly this case again, with its seed: with Bazel, and from a bundle.
        Without a bundle folder the second line reads it from $BUNDLE and, pasted with BUNDLE
        unset, stops with BUNDLE_UNSET instead of running a literal 'BUNDLE/bin/...'."""
        seed = self.run_seed
        if self.seed_replays is False:
            return (f"# the run seed of this case's binary is unknown (run seed {seed} does not give "
                    f"its case seed {self.seed}); rerun with one seed for every binary, e.g. "
                    f"--test_env={SEED_ENV}=N or tools/qualify --seed N\n"
                    + Case(self.cid, self.status, stress=self.stress).replay_command(bundle))
        stress = self.stress if self.stress is not None else _is_stress(self.target)
        # Every name is quoted for the shell: a case name from a foreign test.xml or
        # results.json may hold quotes and semicolons, and the command is pasted into a shell.
        seed_text = shlex.quote(str(seed)) if seed is not None else ""
        env = f" --test_env={SEED_ENV}={seed_text}" if seed is not None else ""
        config = " --config=stress" if stress else ""
        bundle_env = f"{SEED_ENV}={seed_text} " if seed is not None else ""
        binary = shlex.quote(f"/bin/{self.cid.package}/{self.cid.target_name}")
        binary = (BUNDLE_UNSET if bundle is None else shlex.quote(bundle)) + binary
        name = single_quoted(self.gtest_name)
        return (f"bazel test {shlex.quote(self.target)}{config} --test_filter={name}{env}\n"
                f"{bundle_env}{binary} --gtest_filter={name}")

    @staticmethod
    def from_raw(target, suite, name, status, seconds=0.0, message="", reason="", properties=None,
                 run_seed=None, skip_text=None):
        """A typed case from a record: what the XML/journal reader found (status PASS, FAIL or
        SKIP as GoogleTest says, or what the runner synthesized; skip_text: the XML's skip
        message when GoogleTest skipped the case) or an older results.json record, and the
        properties the test recorded."""
        props = dict(properties or {})
        run_seed = props.pop(PROP_RUN_SEED, run_seed)
        if not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
            seconds = 0.0
        c = Case(CaseId(visible_name(target), visible_name(suite), visible_name(name)), Status.PASS,
                 seconds or 0.0, visible_text(gtest_message(message or "")), visible_text(reason or ""))
        conflicts = props.pop(CONFLICTS_PROP, None)
        c.conflicts = [visible_text(x) for x in str(conflicts).split("\n") if x] if conflicts else []
        # The legacy name is read only for old results.json files and test.xml of old binaries.
        declared = props.pop(PROP_STATUS, None) or props.pop(_LEGACY_STATUS, None)
        props.pop(_LEGACY_STATUS, None)
        c.status, skip_reason, note = decide_status(status, declared, skip_text)
        if note:
            c.message = f"{note}\n{c.message}".strip()
        if c.status == Status.PASS and props.get("status_detail") == "QualityWarning":
            props.pop("status_detail")  # the legacy WARN of old results.json files
            c.status = Status.WARN
        given = props.pop(PROP_REASON, None)
        if given or (given is not None and not declared):  # an empty one says "no reason"
            c.reason = visible_text(given)
        elif skip_reason is not None:
            c.reason = visible_text(skip_reason)
        if c.status == Status.NOT_SUPPORTED and not c.reason and NOT_SUPPORTED_PREFIX in c.message:
            c.reason = c.message.split(NOT_SUPPORTED_PREFIX, 1)[1].strip()
        seed = props.pop(PROP_SEED, None)
        c.seed = _int_or_none(seed)
        c.run_seed = _int_or_none(run_seed)
        rules = props.pop(PROP_RULES, None) or props.pop("rules", None)
        c.rules = [r.strip() for r in str(rules).split(",") if r.strip()] if rules else []
        if PROP_CHILD in props:
            c.child = props.pop(PROP_CHILD)
        elif "child_outcome" in props:
            c.child = props.pop("child_outcome")
        if PROP_HEALTH in props:
            c.health = props.pop(PROP_HEALTH)
        for key in (PROP_CHILD_LOG, "child_log", "log_tail", "kernel_log"):
            if key in props:
                c.logs[key.rsplit(".", 1)[-1]] = visible_text(props.pop(key))
        attempts = props.pop("attempts", None)
        if attempts:
            c.attempts = [Status.parse(a) or Status.INFRA_ERROR for a in str(attempts).split()]
            c.attempts[-1] = c.status
        else:
            c.attempts = [c.status]
        c.first_failure = visible_text(gtest_message(props.pop("first_failure", "")))
        for k in list(props):
            v = props[k]
            if k.startswith(PROP_METRIC_PREFIX) or k.startswith(PROP_BUDGET_PREFIX):
                m = Metric.parse(v)
                into = c.metrics if k.startswith(PROP_METRIC_PREFIX) else c.budgets
                short = k.split(".", 2)[2]
                if m is None:
                    c.observed[short] = str(v)
                else:
                    into[short] = m
            elif k.startswith(PROP_OBSERVED_PREFIX):
                c.observed[visible_name(k[len(PROP_OBSERVED_PREFIX):])] = visible_text(v)
            elif _LEGACY_METRIC.match(k) and Metric.parse(v) is not None and not k.endswith("samples_ms"):
                c.metrics[k] = Metric(Metric.parse(v).value, k.rsplit("_", 1)[1])
            else:
                c.extra[visible_name(k)] = visible_text(v) if isinstance(v, str) else v
        return c

    def to_json(self):
        return {"id": self.id, "target": self.target, "suite": self.suite, "name": self.name,
                "status": str(self.status), "seconds": self.seconds, "message": self.message,
                "reason": self.reason, "attempts": [str(a) for a in self.attempts],
                "first_failure": self.first_failure, "seed": _seed_json(self.seed),
                "run_seed": _seed_json(self.run_seed), "rules": self.rules,
                "metrics": {k: m.to_json() for k, m in self.metrics.items()},
                "budgets": {k: m.to_json() for k, m in self.budgets.items()},
                "observed": self.observed, "logs": self.logs, "child": self.child,
                "health": self.health, "stress": self.stress, "properties": self.extra,
                **({"conflicts": self.conflicts} if self.conflicts else {})}

    @staticmethod
    def from_json(d, version=FORMAT_VERSION):
        if version < 2:  # one properties dict for everything: interpret it as the reader would
            return Case.from_raw(d["target"], d["suite"], d["name"], d.get("status", ""),
                                 d.get("seconds", 0.0), d.get("message", ""), d.get("reason", ""),
                                 d.get("properties", {}))
        c = Case.from_raw(d["target"], d["suite"], d["name"], d.get("status", ""),
                          d.get("seconds", 0.0), d.get("message", ""), d.get("reason", ""),
                          d.get("properties", {}), d.get("run_seed"))
        c.attempts = [Status.parse(a) or Status.INFRA_ERROR for a in d.get("attempts", [])] or [c.status]
        c.first_failure = gtest_message(d.get("first_failure", ""))
        c.seed = _int_or_none(d.get("seed"))
        c.rules = list(d.get("rules", []))
        c.metrics = {k: Metric.from_json(m) for k, m in d.get("metrics", {}).items()}
        c.budgets = {k: Metric.from_json(m) for k, m in d.get("budgets", {}).items()}
        c.observed = dict(d.get("observed", {}))
        c.logs = dict(d.get("logs", {}))
        c.child, c.health, c.stress = d.get("child", ""), d.get("health", ""), d.get("stress")
        c.conflicts = [visible_text(x) for x in d.get("conflicts", [])]
        return c


class BaselineCase:
    """What a comparison needs of a baseline's case: compare (its status), the page (its
    status beside a change), the runner's start order (its target and seconds). Read by
    reports/results_stream.py, 10^6 of them in about 200 MB where as many Cases took 3 GB."""
    __slots__ = ("id", "target", "status", "seconds", "metrics")

    def __init__(self, cid, target, status, seconds, metrics=None):
        # metrics: only its rates (GB/s, GiB/s), which compare.rate_drops judges; None if none.
        self.id, self.target, self.status, self.seconds = cid, target, status, seconds
        self.metrics = metrics

    @staticmethod
    def from_record(d, version=FORMAT_VERSION):
        """From one results.json case record (type-checked already)."""
        if version < 2:  # its status lies in its properties: read as the full reader would
            c = Case.from_json(d, version)
            return BaselineCase(c.id, c.target, c.status, c.seconds, _rates(c.metrics))
        target, suite, name = d["target"], d["suite"], d["name"]
        if _UNSAFE_IN_NAME.search(target + suite + name):  # one search for the three
            target, suite, name = visible_name(target), visible_name(suite), visible_name(name)
        seconds = d.get("seconds", 0.0)
        status = _STATUS_OF.get(d.get("status")) or Status.parse(d.get("status", "")) or Status.INFRA_ERROR
        metrics = d.get("metrics")
        return BaselineCase(f"{target[2:]}/{suite}.{name}", target, status,
                            seconds if type(seconds) in (int, float) and math.isfinite(seconds) else 0.0,
                            _rates_of_record(metrics) if metrics else None)


def _rates_of_record(metrics):
    """The rates of a case record's metrics (JSON), as Metrics; None when it has none."""
    out = {}
    for k, v in metrics.items():
        if k.endswith(("_GBps", "_GiBps")) and isinstance(v, dict):
            try:
                out[k] = Metric.from_json(v)
            except (TypeError, ValueError):
                continue
    return out or None


def _rates(metrics):
    """The rate metrics of a case (names ending in _GBps or _GiBps), or None when it has none."""
    rates = {k: m for k, m in (metrics or {}).items() if k.endswith(("_GBps", "_GiBps"))}
    return rates or None


_STATUS_OF = {s.value: s for s in Status}


def single_quoted(text):
    """text as one shell word, always in single quotes (as the commands have always shown it);
    a quote inside ends the quoting, is escaped, and starts it again."""
    return "'" + str(text).replace("'", "'\"'\"'") + "'"


def _int_or_none(v):
    try:
        return int(str(v).strip()) if v is not None and str(v).strip() != "" else None
    except ValueError:
        return None


def _seed_json(v):
    return None if v is None else str(v)  # seeds are 64-bit: strings survive every JSON reader


@dataclass
class Run:
    fingerprint: dict = field(default_factory=dict)
    cases: list = field(default_factory=list)
    problems: list = field(default_factory=list)  # how the tree was read (unreadable files, ...)
    # Kernel log lines read while no case ran (the runner's runner.json): [{"line", "target",
    # "kind", "excused"}]; a counted kind not excused fails the run's health (kernel_faults()).
    kernel_log: list = field(default_factory=list)

    def kernel_faults(self):
        """The run-level kernel lines that fail the run's health (tools/runner/kmsg.py)."""
        return [k for k in self.kernel_log if k.get("kind") and not k.get("excused")]

    def counts(self):
        return count_statuses(c.status for c in self.cases)

    def by_id(self):
        return {c.id: c for c in self.cases}

    def one_record_per_case(self):
        """Keeps one record per case id (one_per_id). Returns how many records were merged."""
        before = len(self.cases)
        self.cases = one_per_id(self.cases)
        return before - len(self.cases)

    def default_run_seed(self):
        """Gives each case that recorded no run seed of its own the fingerprint's: the top-level
        pagelock.run_seed of the test.xml files (what every binary of a run was given)."""
        seed = _int_or_none(self.fingerprint.get(PROP_RUN_SEED))
        for c in self.cases:
            if c.run_seed is None:
                c.run_seed = seed

    def to_json(self):
        return {"format_version": FORMAT_VERSION, "fingerprint": self.fingerprint,
                "problems": self.problems, "cases": [c.to_json() for c in self.cases],
                **({"kernel_log": self.kernel_log} if self.kernel_log else {})}

    @staticmethod
    def from_json(d, validated=False):
        if not isinstance(d, dict) or not isinstance(d.get("cases", []), list):
            raise ResultsError("not a pagelock run (expected an object with a 'cases' list)")
        problem = None if validated else validate.results_problem(d)
        if problem:
            raise ResultsError(problem)
        version = d.get("format_version", 0)
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise ResultsError(f"results format {version!r} is newer than this tool ({FORMAT_VERSION})")
        try:
            return Run(dict(d.get("fingerprint", {})),
                       [Case.from_json(c, version) for c in d.get("cases", [])],
                       list(d.get("problems", [])),
                       [k for k in d.get("kernel_log", []) if isinstance(k, dict)])
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise ResultsError(f"malformed case record ({type(e).__name__}: {e})")


class BaselineRun(Run):
    """A run read for a comparison (reports/results_stream.py): its cases are BaselineCases and
    never change, so by_id is built once (the comparison and the page both ask)."""

    def by_id(self):
        if getattr(self, "_by_id", None) is None or len(self._by_id) != len(self.cases):
            self._by_id = {c.id: c for c in self.cases}
        return self._by_id


def one_per_id(cases):
    """The cases with one record per id, by the conflict rule: where an id comes twice (a file
    that holds a case twice, two spellings that the readers now write one way), the worse status
    stands and the conflict is named on it. Order kept; the list is new, its records shared."""
    kept, merged = {}, False
    for c in cases:
        first = kept.get(c.id)
        if first is None:
            kept[c.id] = c
            continue
        merged = True
        won = worse_status(first.status, c.status)
        winner, loser = (first, c) if won == first.status else (c, first)
        winner.conflicts = list(dict.fromkeys(
            winner.conflicts + loser.conflicts + [conflict_note(
                CONFLICT_TWICE, f"{first.status}, then {c.status}", won)]))
        kept[c.id] = winner
    return list(kept.values()) if merged else cases


def run_seed_of(fingerprint):
    """The run seed: the one reader of its one name, PROP_RUN_SEED (the binaries' top-level
    test.xml property; qualify fills it in where a binary recorded none). 'seed' is read only
    for results.json files written before 2026-12-08, whose fingerprint has qualify's copy under
    that name (and whose info.seed is never read)."""
    return fingerprint.get(PROP_RUN_SEED) or fingerprint.get("seed")


class ResultsError(Exception):
    """A results.json (or baseline) that cannot be read as a run."""


# --- results.json: the one writer and reader ----------------------------------------------

def write_results(path, run, info=None, comparison=None):
    """Writes results.json atomically (temp file, then rename): a full disk or a kill leaves the
    previous file or none, never half a file."""
    data = {"format_version": FORMAT_VERSION, "info": info or {}, "run": run.to_json()}
    if comparison is not None:
        data.update(comparison.to_json())
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, allow_nan=False)
    os.replace(tmp, path)


# The limits of a results.json any tool reads (a baseline, an earlier run, a folder to import or
# re-render): 10^6 cases, 1 GiB. A 10^6-case baseline is about 0.4 GB and is compared in about
# 20 s and 0.6 GB (docs/qualification.md, "Limits"); a file beyond either limit is refused with
# a message naming it.
RESULTS_MAX_BYTES = 1 << 30
RESULTS_MAX_CASES = 1000000


def read_results(path):
    """(Run, info dict, whole document) from a results.json, a run directory or a bare run.
    Raises ResultsError with a message naming the file (and the field) on anything unreadable:
    not a regular file (/dev/zero, a FIFO), not JSON, or a field of the wrong type."""
    if os.path.isdir(path):
        path = os.path.join(path, "results.json")
    try:
        text = validate.read_regular_file(path, RESULTS_MAX_BYTES)
        data = json.loads(text)
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file")
    except validate.NotRegularFile as e:
        raise ResultsError(f"{path}: {e}")
    except OSError as e:
        raise ResultsError(f"{path}: unreadable: {e.strerror or e}")
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise ResultsError(f"{path}: not JSON: {e}")
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: expected a JSON object, found a {type(data).__name__}")
    run_json = data.get("run", data)
    n = len(run_json.get("cases", [])) if isinstance(run_json, dict) and \
        isinstance(run_json.get("cases"), list) else 0
    if n > RESULTS_MAX_CASES:
        raise ResultsError(f"{path}: {n:,} cases, more than the {RESULTS_MAX_CASES:,} a baseline or results "
                           "file may hold (docs/qualification.md, Limits); not read")
    problem = validate.results_problem(data)
    if problem:
        raise ResultsError(f"{path}: {problem}")
    if isinstance(run_json, dict) and "format_version" not in run_json and "format_version" in data:
        run_json = dict(run_json, format_version=data["format_version"])
    try:
        run = Run.from_json(run_json, validated=True)
    except ResultsError as e:
        raise ResultsError(f"{path}: {e}")
    info = data.get("info", {})
    return run, info if isinstance(info, dict) else {}, data
