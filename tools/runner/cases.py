"""Case lists and filters: the cases a binary names (one unfiltered --gtest_list_tests, streamed),
a gtest filter applied to them in Python, and the exact names sent back in chunks that fit in
one argument. Also the environment every binary gets."""

import os
import re
from dataclasses import dataclass

from reports.model import ESCAPED_CHAR, visible_name
from tools.runner.config import (CLEARED_ENV_NAMES, CLEARED_ENV_PREFIXES, FILTER_MAX_CHARS,
                                 RECORDED_ENV_NAMES, RECORDED_ENV_PREFIXES, UNRECORDED_ENV_NAMES,
                                 UNRECORDED_ENV_PREFIXES,
                                 LIST_MAX_LINE, LIST_TIMEOUT_S, MAX_CASES_ENV,
                                 MAX_CASES_PER_BINARY, UsageError)
from tools.runner.procs import RunState, launch, signame


def binary_env(extra=None, environ=None):
    """The environment of every binary: the runner's, less what would change which cases run
    (CLEARED_ENV_*), plus `extra`. Returns (env, {name: value cleared})."""
    env = dict(os.environ if environ is None else environ)
    env.update({k: str(v) for k, v in (extra or {}).items()})
    cleared = {k: env.pop(k) for k in sorted(env)
               if k.startswith(CLEARED_ENV_PREFIXES) or k in CLEARED_ENV_NAMES}
    return env, cleared


def recorded_environment(env):
    """The variables of a binary's environment a reproducer sets again (RECORDED_ENV_*)."""
    return {k: v for k, v in sorted(env.items())
            if (k.startswith(RECORDED_ENV_PREFIXES) or k in RECORDED_ENV_NAMES)
            and k not in UNRECORDED_ENV_NAMES and not k.startswith(UNRECORDED_ENV_PREFIXES)
            and not re.search(r"PASS|SECRET|TOKEN|CREDENTIAL", k)}


def max_cases_per_binary(configured=None, environ=None):
    """RunConfig.max_cases, else $PAGELOCK_MAX_CASES_PER_BINARY, else MAX_CASES_PER_BINARY.
    Raises UsageError for a value that is not a whole number >= 1."""
    environ = os.environ if environ is None else environ
    value = configured if configured is not None else environ.get(MAX_CASES_ENV)
    if value is None or value == "":
        return MAX_CASES_PER_BINARY
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if isinstance(value, bool) or n < 1:
        raise UsageError(f"the cap on cases per binary ({MAX_CASES_ENV} or --max-cases) must be a "
                         f"whole number >= 1 (got {value!r})")
    return n


# ---------------------------------------------------------------------------------------------
# The listing

_SUITE_LINE = re.compile(r"^(\S+)\.\s*(#.*)?$")
_CASE_LINE = re.compile(r"^  (\S+)\s*(#.*)?$")
_DISABLED = re.compile(r"^(.*/)?DISABLED_")  # GoogleTest's kDisableTestFilter, on suite or name


def _disabled(name):
    suite, _, case = name.partition(".")
    return bool(_DISABLED.match(suite) or _DISABLED.match(case))


@dataclass
class Listing:
    cases: list  # 'Suite.Name' in listing order, DISABLED_ ones left out (they never run)
    problem: str = ""  # why the binary cannot be run at all: an INFRA_ERROR, nothing runs
    warning: str = ""  # the listing ended badly but named cases: an INFRA_ERROR, they still run
    disabled: int = 0


class _ListParser:
    """--gtest_list_tests output, fed in pieces. Memory stays bounded: past `cap` the names are
    only counted, and a line longer than LIST_MAX_LINE is not part of the listing."""

    def __init__(self, cap, state):
        self.cap, self.state = cap, state
        self.cases, self.seen = [], set()
        self.listed = 0  # distinct names listed (past the cap: every name line)
        self.disabled = 0
        self.buf = bytearray()
        self.other = []  # lines that are not part of the listing, for the error message
        self.suite = None
        self.skipping = False  # inside a line longer than LIST_MAX_LINE

    def line(self, raw):
        # Names spelled as every reader spells them (model.visible_name): a control character
        # or U+2028 in a name is its escape, so the listing, the journal and the XML agree.
        text = visible_name(raw.decode("utf-8", "replace").rstrip("\r\n"))
        m = _CASE_LINE.match(text)
        if m and self.suite is not None:
            name = self.suite + "." + m.group(1)
            if self.listed >= self.cap:
                self.listed += 1  # past the cap: counted, not kept (a repeat counts again)
            elif name not in self.seen:
                self.seen.add(name)
                self.listed += 1
                if _disabled(name):
                    self.disabled += 1
                else:
                    self.cases.append(name)
            return
        m = _SUITE_LINE.match(text)
        if m and not text.startswith("pagelock:"):
            self.suite = m.group(1)
            return
        if text.strip():
            self.other.append(text[:500])
            del self.other[:-10]

    def feed(self, data):
        if self.state.signal:
            return  # the run is stopping: nothing more is parsed
        buf = self.buf
        buf.extend(data)
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                if len(buf) > LIST_MAX_LINE:
                    self.skipping = True
                    del buf[:]
                return
            if not self.skipping and nl <= LIST_MAX_LINE:  # however the pipe cut it
                self.line(bytes(buf[:nl]))
            self.skipping = False
            del buf[:nl + 1]

    def finish(self):
        if self.buf and not self.skipping and not self.state.signal:
            self.line(bytes(self.buf))


def list_binary(binary, env, state=None, timeout_s=LIST_TIMEOUT_S, max_cases=None):
    """Every case of a binary, from one streamed --gtest_list_tests with no filter (a filter goes
    into Python, never into an argument that could be too long). Memory stays bounded: past
    max_cases the names are only counted. The signal flag stops the parse."""
    state = state or RunState()
    cap = max_cases or MAX_CASES_PER_BINARY
    env, _ = binary_env(environ=env)
    parser = _ListParser(cap, state)
    try:
        rc, timed_out, _, _ = launch([binary, "--gtest_list_tests"], env, state, timeout_s, 1.0,
                                     parser.feed)
    except UsageError as e:
        return Listing([], problem=str(e))
    parser.finish()
    return _listing(parser, rc, timed_out, timeout_s, state)


def _listing(parser, rc, timed_out, timeout_s, state):
    cases, cap = parser.cases, parser.cap
    said = (": " + " | ".join(parser.other[-3:])) if parser.other else ""
    if state.signal:
        return Listing([], problem=f"interrupted by {signame(state.signal)}")
    if timed_out:
        return Listing([], problem=f"--gtest_list_tests did not finish within {timeout_s:.0f} s")
    if parser.listed > cap:
        return Listing([], problem=f"--gtest_list_tests named {parser.listed} cases, more than "
                       f"the cap of {cap} per binary ({MAX_CASES_ENV} or --max-cases); not run")
    if rc != 0 and not cases:
        return Listing([], problem=f"--gtest_list_tests {_ended(rc)}{said}")
    if not parser.listed:
        return Listing([], problem="--gtest_list_tests listed no case (it printed nothing, or "
                       f"closed its output early){said}")
    listing = Listing(cases, disabled=parser.disabled)
    if rc != 0:
        # The list may be short. What it names still runs, and the first launch runs the
        # binary's own selection, so a short list loses no case unless that launch crashes.
        listing.warning = (f"--gtest_list_tests {_ended(rc)} after listing "
                           f"{len(cases)} case(s): the list may be short{said}")
    return listing


def _ended(rc):
    return f"was killed by {signame(-rc)}" if rc < 0 else f"exited with status {rc}"


def list_cases(binary, gtest_filter, env, state=None, timeout_s=LIST_TIMEOUT_S, max_cases=None):
    """Case names ('Suite.Name') the binary would run under gtest_filter. Returns (cases, None)
    or (None, why). An empty listing is a problem; a filter that selects nothing is not."""
    listing = list_binary(binary, env, state, timeout_s, max_cases)
    if listing.problem:
        return None, listing.problem
    return CaseFilter(gtest_filter, listing.cases).select(listing.cases), None


# ---------------------------------------------------------------------------------------------
# Filters

def _glob_regex(patterns):
    """One regex for GoogleTest glob patterns ('*' any text, '?' one character)."""
    if not patterns:
        return None
    parts = [re.escape(p).replace(r"\*", ".*").replace(r"\?", ".") for p in patterns]
    return re.compile("(?:" + "|".join(parts) + r")\Z", re.DOTALL)


class CaseFilter:
    """A gtest filter ('A.*:B.c-D.*:E.f') read as GoogleTest reads it, with one exception: a
    piece (or pieces joined by ':') that is exactly a listed case name is that name, even when
    it holds a '-' or ':' (a fake or foreign binary's name, e.g. qualify's retry filter
    'S.a-b:S.zz'; GoogleTest's own names never hold them). Exact names are a set and the globs
    one regex, so matching is linear in the cases."""

    def __init__(self, text, names):
        self.text = text or ""
        # An exact name held a character the binary would read as filter syntax: the cases
        # then go in exact chunks, and only their results are kept.
        self.literal = False
        pos_exact, pos_glob, neg_exact, neg_glob = set(), [], set(), []
        listed = set(names)
        joins = 1 + max((n.count(":") for n in listed if ":" in n), default=0)
        pieces = self.text.split(":") if self.text else []
        negative, i = False, 0
        while i < len(pieces):
            hit = None
            for j in range(min(len(pieces), i + joins), i, -1):
                candidate = ":".join(pieces[i:j])
                if candidate in listed:
                    hit = (candidate, j)
                    break
            if hit is not None:
                name, i = hit
                self.literal = self.literal or any(ch in name for ch in "-:*?\\")
                (neg_exact if negative else pos_exact).add(name)
                continue
            piece = pieces[i]
            if not negative and "-" in piece:
                left, piece = piece.split("-", 1)
                if left and ("*" in left or "?" in left):
                    pos_glob.append(left)
                elif left:
                    pos_exact.add(left)
                negative = True
                pieces[i] = piece
                continue
            if piece:
                if "*" in piece or "?" in piece:
                    (neg_glob if negative else pos_glob).append(piece)
                else:
                    (neg_exact if negative else pos_exact).add(piece)
            i += 1
        self.everything = not pos_exact and not pos_glob
        self.pos_exact, self.neg_exact = pos_exact, neg_exact
        self.pos_rx, self.neg_rx = _glob_regex(pos_glob), _glob_regex(neg_glob)

    def selects(self, name):
        if not self.everything and name not in self.pos_exact and \
                not (self.pos_rx and self.pos_rx.match(name)):
            return False
        return name not in self.neg_exact and not (self.neg_rx and self.neg_rx.match(name))

    def select(self, names):
        return [n for n in names if self.selects(n)]


def first_chunk(cases, limit=FILTER_MAX_CHARS):
    """The first of the groups of exact case names whose filter fits in one argument, without
    walking the rest of a long list."""
    out, size = [], 0
    for c in cases:
        if out and size + len(c) + 1 > limit:
            break
        out.append(c)
        size += len(c) + 1
    return out


_FILTER_SYNTAX = str.maketrans({"-": "?", ":": "?"})


def exact_pattern(name):
    """A gtest filter pattern for one case name: '-' and ':', which a filter reads as its own
    syntax, and each character the name spells as an escape (a NUL, which no argument can hold,
    an ESC), become '?'. It may match a few more names; the runner keeps only the results of the
    cases it asked for."""
    return ESCAPED_CHAR.sub("?", name).translate(_FILTER_SYNTAX)
