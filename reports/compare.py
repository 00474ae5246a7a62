"""Compares a run with its expectations and a baseline run, and decides the verdict.

Comparison statuses (beside each case's raw status):
  EXPECTED_FAIL    failed as a `fail` expectation says
  KNOWN_FLAKE      failed, then passed on retry, and a `flake` expectation covers it
  FLAKE            failed, then passed on retry, no expectation covers it
  UNEXPECTED_PASS  passed although a `fail` expectation says it fails (the entry is stale)
  REGRESSION       failed with no expectation covering it
  FIXED            passes now, failed in the baseline
  NEW              not in the baseline
  DROPPED          in the baseline, not in this run

Exit codes (qualify):
  0 qualified  1 infrastructure error  2 bad configuration  3 regressions
  4 nothing ran  5 expectations need updating (unexpected passes, new flakes, stale entries)
"""

from dataclasses import dataclass, field

from reports import results as model
from reports.expectations import driver_in_range

EXIT_QUALIFIED, EXIT_INFRA, EXIT_CONFIG, EXIT_REGRESSION, EXIT_NOTHING_RAN, EXIT_UPDATE = 0, 1, 2, 3, 4, 5
VERDICTS = {
    EXIT_QUALIFIED: ("QUALIFIED", "#2e7d32"),
    EXIT_INFRA: ("INFRASTRUCTURE ERROR", "#37474f"),
    EXIT_CONFIG: ("BAD CONFIGURATION", "#37474f"),
    EXIT_REGRESSION: ("REGRESSIONS", "#c62828"),
    EXIT_NOTHING_RAN: ("NOTHING RAN", "#ef6c00"),
    EXIT_UPDATE: ("EXPECTATIONS NEED UPDATING", "#f9a825"),
}
PASSING = {"PASS", "WARN"}


@dataclass
class Comparison:
    status: dict = field(default_factory=dict)  # case id -> comparison status
    notes: dict = field(default_factory=dict)  # case id -> why (expectation source, baseline)
    dropped: list = field(default_factory=list)  # case ids
    stale: list = field(default_factory=list)  # expectation entries that matched no failure
    exit_code: int = EXIT_QUALIFIED
    summary: dict = field(default_factory=dict)

    @property
    def verdict(self):
        return VERDICTS[self.exit_code]


def compare(run, expectations=None, baseline=None):
    """run, baseline: results.Run (baseline may be None). Cases may carry an 'attempts'
    property ('FAIL PASS') from qualify's retries."""
    comp = Comparison()
    driver = run.fingerprint.get("nvidia_driver", "")
    base = {c.id: c for c in baseline.cases} if baseline else {}
    used_fail_entries = set()
    for c in run.cases:
        exp = expectations.lookup(c.id, driver) if expectations else {}
        attempts = c.properties.get("attempts", c.status).split()
        flaky = c.status in PASSING and any(a in model.FAILING for a in attempts)
        prev = base.get(c.id)
        st = None
        if flaky:
            st = "KNOWN_FLAKE" if "flake" in exp else "FLAKE"
            if "flake" in exp:
                comp.notes[c.id] = exp["flake"].source
        elif c.status in model.FAILING:
            e = exp.get("fail")
            if e and c.status in e.statuses:
                st = "EXPECTED_FAIL"
                used_fail_entries.add(id(e))
                comp.notes[c.id] = f"{e.source} {e.bug}".strip()
            elif "flake" in exp:
                st = "KNOWN_FLAKE"
                comp.notes[c.id] = exp["flake"].source
            else:
                st = "REGRESSION"
                comp.notes[c.id] = ("baseline: " + prev.status) if prev else "not in the baseline"
        elif c.status in PASSING and "fail" in exp:
            st = "UNEXPECTED_PASS"
            comp.notes[c.id] = f"stale expectation {exp['fail'].source}"
        elif baseline is not None and prev is None:
            st = "NEW"
        elif prev is not None and prev.status in model.FAILING and c.status in PASSING:
            st = "FIXED"
            comp.notes[c.id] = "baseline: " + prev.status
        if st:
            comp.status[c.id] = st
    if baseline is not None:
        ids = {c.id for c in run.cases}
        comp.dropped = sorted(i for i in base if i not in ids)
    if expectations:
        for e in expectations.entries:
            if e.kind == "fail" and id(e) not in used_fail_entries and driver_in_range(driver, e.driver):
                comp.stale.append(e)
    counts = {}
    for s in comp.status.values():
        counts[s] = counts.get(s, 0) + 1
    counts["DROPPED"] = len(comp.dropped)
    comp.summary = counts
    raw = run.counts()
    if not run.cases or all(c.status in ("SKIP",) for c in run.cases):
        comp.exit_code = EXIT_NOTHING_RAN
    elif raw.get("INFRA_ERROR"):
        comp.exit_code = EXIT_INFRA
    elif counts.get("REGRESSION"):
        comp.exit_code = EXIT_REGRESSION
    elif counts.get("UNEXPECTED_PASS") or counts.get("FLAKE") or comp.stale:
        comp.exit_code = EXIT_UPDATE
    return comp


def failures_csv(run, comp):
    """The failing cases in `fail` expectation syntax: a drop-in starting point for updating."""
    lines = ["# failures of this run, in expectations syntax (add bug= links before committing)"]
    for c in run.cases:
        if c.status in model.FAILING and comp.status.get(c.id) != "KNOWN_FLAKE":
            lines.append(f"fail {c.id} status={c.status} bug=TODO  # {c.message.splitlines()[0][:100] if c.message else ''}")
        if comp.status.get(c.id) == "FLAKE":
            lines.append(f"flake {c.id} bug=TODO  # attempts: {c.properties.get('attempts', '')}")
    return "\n".join(lines) + "\n"
