"""Compares a run with its expectations and a baseline run, and decides the verdict.

Comparison statuses (beside each case's raw status; reports/model.py `Change`):
  REGRESSION           failed with no expectation covering it (a `flake` entry covers a failure
                       only when some attempt passed)
  COVERAGE_LOST        PASS/WARN in the baseline, NOT_SUPPORTED/SKIP/MISSING now; or the machine
                       lost coverage against the baseline's fingerprint (see below)
  DROPPED              in the baseline, not in this run (blocks when the baseline exercised it)
  KNOWN_COVERAGE_LOSS  a coverage loss or drop that a `coverage` (or `skip`) expectation names
  FLAKE                failed, then passed on retry, no expectation covers it
  KNOWN_FLAKE          failed, then passed on retry, and a `flake` expectation covers it
  UNEXPECTED_PASS      passed although a `fail` expectation says it fails (the entry is stale)
  EXPECTED_FAIL        failed as a `fail` expectation says
  FIXED                passes now, failed in the baseline
  NEW                  not in the baseline

Machine coverage (against the baseline's fingerprint), id 'fingerprint:<key>':
  device_status   the baseline had a usable GPU and this run has none (never excusable: a run
                  without a GPU, --allow-no-gpu, cannot qualify against a GPU baseline)
  gpu_count       fewer GPUs than the baseline
  gpu0_name       another GPU SKU than the baseline
  gpuN_cudaDevAttr*  a capability attribute that went from nonzero (supported) to 0

Stale expectation entries (exit 5 when nothing worse; each with its file:line and why): see
reports/expectations.py. qualify passes the cases `skip` kept out and the bundle's targets.

Exit codes (qualify's, EXIT_CODES below is the one table; the README's comes from it).
"""

import fnmatch
import math
import re
from dataclasses import dataclass, field

from reports import coverage_reasons
from reports.expectations import Platform
from reports.model import CaseId, Change, Status

EXIT_QUALIFIED, EXIT_INFRA, EXIT_CONFIG, EXIT_REGRESSION, EXIT_NOTHING_RAN, EXIT_UPDATE = 0, 1, 2, 3, 4, 5
EXIT_COVERAGE_LOST, EXIT_INTERRUPTED, EXIT_FIRST_NIGHT = 6, 7, 8
# exit code: (verdict text, colour, meaning) -- the table in qualify's docstring and README.
# Colours carry white text: each meets WCAG AA (4.5:1), reports/report_browser_test.py checks.
EXIT_CODES = {
    EXIT_QUALIFIED: ("QUALIFIED", "#2e7d32", "every case passed or matched its expectation; "
                     "no coverage lost against the baseline"),
    EXIT_INFRA: ("INFRASTRUCTURE ERROR", "#37474f", "no usable GPU, a build or bundle binary "
                 "that could not run, a status the harness does not know, a disk that filled up, a history "
                 "server out of reach"),
    EXIT_CONFIG: ("BAD CONFIGURATION", "#37474f", "bad arguments, bundle, expectations, baseline, "
                  "history or --out (nothing was run, no run folder was created)"),
    EXIT_REGRESSION: ("REGRESSIONS", "#c62828", "some case failed that no expectation covers"),
    EXIT_NOTHING_RAN: ("NOTHING RAN", "#a84300", "no test binary matches the tier, or every case "
                       "was skipped"),
    EXIT_UPDATE: ("EXPECTATIONS NEED UPDATING", "#8a5300", "unexpected passes, new flakes or "
                  "stale expectation entries; nothing failed"),
    EXIT_COVERAGE_LOST: ("COVERAGE LOST", "#ad1457", "cases exercised in the baseline did not run "
                         "(NOT_SUPPORTED, SKIP, MISSING, DROPPED) or the machine lost GPUs, SKU or a "
                         "capability against the baseline, and no expectation names the loss"),
    EXIT_INTERRUPTED: ("INTERRUPTED", "#37474f", "SIGINT/SIGTERM: the running test was stopped; "
                       "the finished cases are kept in a run folder marked INTERRUPTED"),
    EXIT_FIRST_NIGHT: ("FIRST NIGHT", "#1f5f8b", "no baseline for this SKU yet: nothing failed that "
                       "a known deviation does not explain, coverage is not yet judged; adopt the "
                       "run with tools/qualify --draft-expectations RUN_DIR"),
}
VERDICTS = {code: (text, color) for code, (text, color, _) in EXIT_CODES.items()}


def exit_code_table():
    """The exit codes as a plain-text table (qualify --help, README)."""
    return "\n".join(f"  {code}  {text:<27} {meaning}" for code, (text, _, meaning) in EXIT_CODES.items())


FINGERPRINT_PREFIX = "fingerprint:"
_ATTR = re.compile(r"gpu\d+_cudaDevAttr\w+$")


@dataclass
class Comparison:
    status: dict = field(default_factory=dict)  # case id -> Change
    notes: dict = field(default_factory=dict)  # case id -> why (expectation source, baseline)
    dropped: list = field(default_factory=list)  # case ids in the baseline, not in this run
    dropped_covered: list = field(default_factory=list)  # of those, named by an expectation
    machine: list = field(default_factory=list)  # [(fingerprint:<key>, Change, why)]
    stale: list = field(default_factory=list)  # expectation entries that did nothing here
    stale_why: list = field(default_factory=list)  # [(Entry, why)], the same entries
    # Entries that name cases of this run but whose conditions exclude this platform: known
    # elsewhere, judged as the rule here. [(Entry, why not here, number of cases)]
    elsewhere: list = field(default_factory=list)
    # The fail entries that excused failures here, in file order: [(Entry, number of cases)]
    applied: list = field(default_factory=list)
    exit_code: int = EXIT_QUALIFIED
    summary: dict = field(default_factory=dict)

    @property
    def verdict(self):
        return VERDICTS[self.exit_code]

    def to_json(self):
        return {"comparison": {k: str(v) for k, v in self.status.items()},
                "comparison_notes": self.notes, "dropped": self.dropped,
                "dropped_covered": self.dropped_covered,
                "machine_coverage": [{"id": i, "status": str(s), "why": w} for i, s, w in self.machine],
                "summary": self.summary,
                "stale_expectations": [f"{e.source}: {e.kind} {e.pattern}" for e in self.stale],
                "expectations_elsewhere": [elsewhere_json(e, why, n) for e, why, n in self.elsewhere],
                "expectations_applied": [{"entry": e.source, "bug": e.bug, "known_on": e.known_on(),
                                          "cases": n} for e, n in self.applied]}


def elsewhere_line(e, why):
    """'r58 known on driver 580 (expectations/common.txt:12); this driver 550.54: judged as the rule'."""
    name = e.anchor or e.pattern
    return f"{name} known on {e.known_on() or 'other platforms'} ({e.source}); {why}: judged as the rule"


def elsewhere_json(e, why, n):
    return {"entry": e.source, "kind": e.kind, "pattern": e.pattern, "bug": e.bug,
            "known_on": e.known_on(), "why_not_here": why, "cases": n, "line": elsewhere_line(e, why)}


def _num(v):
    try:
        x = float(v)
        return x if math.isfinite(x) else None
    except (TypeError, ValueError):
        return None


def machine_losses(fp, base_fp):
    """[(fingerprint:<key>, why, excusable)] where this machine covers less than the baseline's."""
    out = []
    if base_fp.get("device_status") == "usable" and fp.get("device_status") != "usable":
        out.append(("device_status", f"no usable GPU ({fp.get('device_status', 'unknown')}); the "
                    "baseline had one", False))
        return out  # every other loss follows from this one
    n, bn = _num(fp.get("gpu_count")), _num(base_fp.get("gpu_count"))
    if n is not None and bn is not None and n < bn:
        out.append(("gpu_count", f"{n:.0f} GPU(s), the baseline had {bn:.0f}", True))
    if base_fp.get("gpu0_name") and fp.get("gpu0_name") != base_fp.get("gpu0_name"):
        out.append(("gpu0_name", f"{fp.get('gpu0_name', 'no GPU')}, the baseline ran on "
                    f"{base_fp['gpu0_name']}", True))
    for k, bv in sorted(base_fp.items()):
        if _ATTR.match(k) and k in fp and _num(bv) not in (None, 0) and _num(fp[k]) == 0:
            out.append((k, f"{k.split('_', 1)[1]} went from {bv} to {fp[k]}", True))
    return out


def _coverage_entry(expectations, key, platform, matched=None):
    if not expectations:
        return None
    entries = expectations.matching_entries(key, platform)
    if matched is not None:
        matched.update(id(e) for e in entries)
    e = {}
    for x in entries:
        e.setdefault(x.kind, x)
    return e.get("coverage") or e.get("skip")


# The machine keys a `coverage fingerprint:<key>` entry may name besides the fingerprint's own.
MACHINE_KEYS = ("device_status", "gpu_count", "gpu0_name")


def _target_glob(pattern):
    """The part of a case glob that names targets ('suites/a:a_test' of
    'suites/a:a_test/S.*'), as a glob over 'package:target'; None when the pattern does not
    say (no ':' in it, so a '*' may stand for any target)."""
    colon = pattern.find(":")
    if colon < 0:
        return None
    slash = pattern.find("/", colon + 1)
    end = slash if slash >= 0 else len(pattern)
    wild = next((i for i in range(colon + 1, end) if pattern[i] in "*?["), None)
    if wild is not None:
        return pattern[:wild] + "*"
    return pattern[:end] + ("" if slash >= 0 else "*")


class _TargetNamer:
    """Does a pattern name one of these labels ('//pkg:name')? None when it cannot tell (no
    ':' in it): such an entry may be for another tier's cases, and is never called stale for
    its targets. Answers are kept per target glob: 100,000 entries share a few dozen."""

    def __init__(self, targets):
        self.targets = [t[2:] for t in targets]
        self.known = {}

    def __call__(self, pattern):
        glob = _target_glob(pattern)
        if glob is None:
            return None
        if glob not in self.known:
            rx = re.compile(fnmatch.translate(glob))
            self.known[glob] = any(rx.match(t) for t in self.targets)
        return self.known[glob]


def stale_entries(expectations, platform, matched, used_fail, run_targets, known_targets=None,
                  skipped_judged=True, matched_by_run=None, matched_by_ran=None):
    """[(Entry, why)] for entries that did nothing in this run, each with its file:line.
    - fail: a case it names ran (not NOT_SUPPORTED or SKIP) and did not fail as it says;
    - skip, flake, coverage: it names a target of this run and matches no case of the run (nor a
      case the skip kept out, nor a dropped case, nor a machine key) -- a misspelled entry;
    - any kind: it names no target of the bundle at all (known_targets, when given).
    An entry for the cases of another tier or driver says nothing about this run."""
    out = []
    by_run = matched if matched_by_run is None else matched_by_run
    in_run, in_bundle = _TargetNamer(run_targets), _TargetNamer(known_targets or ())
    for e in expectations.entries:
        if not e.applies(platform):
            continue
        if e.pattern.startswith(FINGERPRINT_PREFIX):
            if e.kind in ("coverage", "skip") and id(e) not in matched:
                out.append((e, "names no machine key of this run or its baseline"))
            continue
        if e.kind == "fail":
            ran = by_run if matched_by_ran is None else matched_by_ran
            if id(e) in ran and id(e) not in used_fail:
                out.append((e, "the cases it names ran and did not fail as it says"))
                continue
        elif id(e) not in matched and (e.kind != "skip" or skipped_judged) and \
                in_run(e.pattern) is True:
            out.append((e, "matches no case of the targets this run ran"))
            continue
        if known_targets is not None and id(e) not in matched and in_bundle(e.pattern) is False:
            out.append((e, "names no target of the bundle"))
    return out


# Rates judged against the baseline (J3: a floor that catches a halved DMA rate on any link): the
# large-transfer copy-engine and SM rates, whose run-to-run spread on one machine is about 1 %.
# Bidirectional, pageable, small-size and host-read figures move by 15-45 % between healthy runs
# and are only trended, and so are the registration throughputs: host kernel work whose 64 MiB
# figures moved from 15.6 to 27.3 GiB/s between four healthy runs on one H100 host (2026-12-07).
# A rate below FLOOR of the baseline's, on the same SKU and PCIe link, fails its case.
JUDGED_RATES = re.compile(r"^(?:(?:h2d|d2h)_(?:pinned|registered|allocated|writecombined|link_check)_ce|"
                          r"(?:h2d|d2h)_sm)_(?:GBps|GiBps)$")
BASELINE_RATE_FLOOR = 0.80


def rate_drops(run, baseline, floor=BASELINE_RATE_FLOOR):
    """{case id: note} for the judged rates that fell below floor x the baseline's, when the
    baseline ran on the same SKU and PCIe link (another one is no yardstick for a rate)."""
    fp, bfp = run.fingerprint, baseline.fingerprint
    if fp.get("gpu0_name") != bfp.get("gpu0_name") or fp.get("gpu0_pcie_link") != bfp.get("gpu0_pcie_link"):
        return {}
    base = baseline.by_id()
    out = {}
    for c in run.cases:
        prev = base.get(c.id)
        if prev is None or not c.status.is_pass:
            continue
        for name, m in sorted(c.metrics.items()):
            b = (prev.metrics or {}).get(name)
            if not JUDGED_RATES.match(name) or b is None or not (m.finite and b.finite) or b.value <= 0:
                continue
            if m.value < floor * b.value:
                out.setdefault(str(c.id), []).append(
                    f"{name} {m.value:.2f} {m.unit} is below {floor:.0%} of the baseline's {b.value:.2f} {b.unit} "
                    f"(same SKU and link; {m.value / b.value:.0%} of it)")
    return {k: "; ".join(v) for k, v in out.items()}


def compare(run, expectations=None, baseline=None, skipped=None, known_targets=None):
    """run, baseline: model.Run (baseline may be None). skipped: the case ids that `skip`
    entries kept out of this run (qualify's listing); None when the caller did not say (then a
    skip entry is never called stale for matching nothing). known_targets: every target label
    of the bundle, of any tier; an entry naming none of them is stale (a misspelled target)."""
    comp = Comparison()
    platform = Platform.from_fingerprint(run.fingerprint)
    base = baseline.by_id() if baseline else {}
    differs = platform_differences(run.fingerprint, baseline.fingerprint) if baseline else {}
    used_fail_entries = set()
    matched_by_run = set()  # id() of every entry whose pattern and conditions apply to a case here
    # ... and of every entry that applies to a case which really ran: a NOT_SUPPORTED or SKIP
    # case (a capability, or an API the CUDA runtime lacks) says nothing about a `fail` entry.
    matched_by_ran = set()
    matched = set()  # ... or to a skipped or dropped case or a machine key (filled below)
    elsewhere = {}  # id(entry) -> [entry, why not here, cases]: known on other platforms only
    applied = {}  # id(entry) -> [entry, cases it excused]
    for c in run.cases:
        named = expectations.entries_for(c.id) if expectations else []
        entries = []
        for e in named:
            why = e.why_not(platform)
            if not why:
                entries.append(e)
            elif e.kind in ("fail", "flake"):
                elsewhere.setdefault(id(e), [e, why, 0])[2] += 1
        matched_by_run.update(id(e) for e in entries)
        if not c.status.is_coverage_gap:
            matched_by_ran.update(id(e) for e in entries)
        exp = {}
        for e in entries:
            exp.setdefault(e.kind, e)
        st, note, used = _case_change(c, exp, base.get(c.id), baseline is not None, differs)
        if used is not None:
            used_fail_entries.add(id(used))
            applied.setdefault(id(used), [used, 0])[1] += 1
        if st == Change.REGRESSION:
            known = [elsewhere_line(e, e.why_not(platform)) for e in named
                     if e.kind == "fail" and id(e) in elsewhere]
            note = "; ".join([note] + known) if known else note
        if note is not None:
            comp.notes[c.id] = note
        if st:
            comp.status[c.id] = st
    comp.elsewhere = [tuple(v) for v in elsewhere.values()]
    comp.applied = [tuple(v) for v in applied.values()]
    for cid, note in (rate_drops(run, baseline) if baseline is not None else {}).items():
        comp.status[cid] = Change.REGRESSION
        comp.notes[cid] = note
    matched |= matched_by_run
    if expectations:
        for i in skipped or ():
            matched.update(id(e) for e in expectations.matching_entries(str(i), platform))
    if baseline is not None:
        _compare_with_baseline(comp, run, baseline, base, expectations, platform, matched, differs)
    if expectations:
        keys = set(run.fingerprint) | set(MACHINE_KEYS) | set(baseline.fingerprint if baseline else ())
        for key in keys:
            matched.update(id(e) for e in expectations.matching_entries(FINGERPRINT_PREFIX + key, platform))
        comp.stale_why = stale_entries(expectations, platform, matched, used_fail_entries,
                                       _run_targets(run, skipped), known_targets, skipped is not None,
                                       matched_by_run, matched_by_ran)
        comp.stale = [e for e, _ in comp.stale_why]
    _summarize(comp, run)
    return comp


def _case_change(c, exp, prev, has_baseline, differs=None):
    """(Change or None, note or None, the fail entry that excused it or None) of one case, by its
    expectations ({kind: first entry}) and its baseline case (None: not there). differs: how the
    baseline's platform differs from this one (platform_differences)."""
    if c.flaky:
        if "flake" in exp:
            return Change.KNOWN_FLAKE, exp["flake"].source, None
        return Change.FLAKE, None, None
    if c.status.is_fail:
        e = exp.get("fail")
        if e and e.excuses(c.status, c.message):
            return Change.EXPECTED_FAIL, f"{e.source} {e.bug}".strip(), e
        why = ("baseline: " + str(prev.status)) if prev else "not in the baseline"
        if e:
            why += f"; {e.source} expects it to fail only with a message like '{e.message}'"
        if "flake" in exp:
            why += f"; {exp['flake'].source} lists it as a flake, but every attempt failed"
        return Change.REGRESSION, why, None
    if c.status.is_pass and "fail" in exp:
        return Change.UNEXPECTED_PASS, f"stale expectation {exp['fail'].source}", None
    if c.status.is_coverage_gap and prev is not None and prev.status.is_pass:
        e = exp.get("coverage") or exp.get("skip")
        explained = not e and explained_by_platform(c.reason, differs or {})
        if explained:
            return Change.PLATFORM_DIFFERS, (f"baseline: {prev.status}; now {c.status} ({c.reason}); "
                                             f"{explained}"), None
        fix = "" if e else coverage_reasons.classify(c.reason or "").fix
        return (Change.KNOWN_COVERAGE_LOSS if e else Change.COVERAGE_LOST,
                f"baseline: {prev.status}; now {c.status}" + (f" ({c.reason})" if c.reason else "")
                + (f"; {e.source}" if e else "") + (f"; to enable it: {fix}" if fix else ""), None)
    if has_baseline and prev is None:
        return Change.NEW, None, None
    if prev is not None and prev.status.is_fail and c.status.is_pass:
        return Change.FIXED, "baseline: " + str(prev.status), None
    return None, None, None


def _compare_with_baseline(comp, run, baseline, base, expectations, platform, matched, differs):
    """The dropped cases and the machine's losses against the baseline run. A loss that the
    baseline's other SKU or host explains (differs) is shown as such, never as lost coverage."""
    ids = {c.id for c in run.cases}
    comp.dropped = sorted(i for i in base if i not in ids)
    for i in comp.dropped:
        exercised = base[i].status.is_pass or base[i].status.is_fail
        if _coverage_entry(expectations, i, platform, matched) or not exercised:
            comp.dropped_covered.append(i)
    for key, why, excusable in machine_losses(run.fingerprint, baseline.fingerprint):
        e = _coverage_entry(expectations, FINGERPRINT_PREFIX + key, platform) if excusable else None
        other = excusable and not e and _machine_loss_explained(key, differs)
        status = (Change.KNOWN_COVERAGE_LOSS if e else Change.PLATFORM_DIFFERS if other
                  else Change.COVERAGE_LOST)
        comp.machine.append((FINGERPRINT_PREFIX + key, status,
                             why + (f"; {e.source}" if e else f"; {other}" if other else "")))


def platform_differences(fp, base_fp):
    """How the baseline's platform differs from this run's, for comparing what is comparable:
    {'sku': 'the baseline ran on another SKU (NVIDIA H200)', 'host': ...}. A baseline of the same
    SKU on the same host differs in nothing: every loss against it is lost coverage."""
    out = {}
    if base_fp.get("gpu0_name") and fp.get("gpu0_name") and fp["gpu0_name"] != base_fp["gpu0_name"]:
        out["sku"] = f"the baseline ran on another SKU ({base_fp['gpu0_name']})"
    if base_fp.get("host") and fp.get("host") and fp["host"] != base_fp["host"]:
        out["host"] = f"the baseline ran on another host ({base_fp['host']})"
    return out


def explained_by_platform(reason, differs):
    """Why a case the baseline ran is NOT_SUPPORTED here, when the baseline's other SKU or host
    explains it ('' when it does not): a host setting (coverage_reasons: host setup), or a
    device capability of a baseline of another SKU. The same host (and SKU) losing its hugetlb
    pool is lost coverage, shown with the fix: a lab host that lost its setup overnight must not
    qualify quietly."""
    group = coverage_reasons.classify(reason or "")
    if group.category == "host setup" and ("host" in differs or "sku" in differs):
        return "host setup differs from the baseline's" + (f" ({group.fix})" if group.fix else "")
    if group.category == "capability" and "sku" in differs:
        return differs["sku"] + ": a capability of that SKU"
    return ""


def _machine_loss_explained(key, differs):
    if "sku" in differs and (key == "gpu0_name" or _ATTR.match(key)):
        return differs["sku"]
    return ""


def _run_targets(run, skipped):
    """The targets of the run's cases and of the cases that skip entries kept out of it."""
    targets = {c.target for c in run.cases}
    for i in skipped or ():
        try:
            targets.add(CaseId.parse(str(i)).target)
        except ValueError:
            pass
    return targets


def _summarize(comp, run):
    """comp.summary (counts by change) and comp.exit_code."""
    counts = {}
    for s in comp.status.values():
        counts[str(s)] = counts.get(str(s), 0) + 1
    counts[Change.DROPPED.value] = len(comp.dropped) - len(comp.dropped_covered)
    if comp.dropped_covered:
        known = Change.KNOWN_COVERAGE_LOSS.value
        counts[known] = counts.get(known, 0) + len(comp.dropped_covered)
    for _, s, _ in comp.machine:
        counts[str(s)] = counts.get(str(s), 0) + 1
    comp.summary = counts
    blocking = {Change(k).blocks for k, n in counts.items() if n and Change(k).blocks}
    if not run.cases or all(c.status == Status.SKIP for c in run.cases):
        comp.exit_code = EXIT_NOTHING_RAN
    elif any(c.status == Status.INFRA_ERROR for c in run.cases):
        comp.exit_code = EXIT_INFRA
    elif "regression" in blocking:
        comp.exit_code = EXIT_REGRESSION
    elif "coverage" in blocking:
        comp.exit_code = EXIT_COVERAGE_LOST
    elif "update" in blocking or comp.stale:
        comp.exit_code = EXIT_UPDATE
