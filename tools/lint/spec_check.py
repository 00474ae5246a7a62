#!/usr/bin/env python3
"""Keeps suites/rules.tsv and the suites consistent: every test names at least one rule
(PAGELOCK_RULE("R14,R51")), every named rule is in the table, every rule in the table has a
test or says why not, and the table's `tests` column lists them.

Columns: id, kind, family, rule, versions, capability, tests.
  kind   `rule`: the documentation promises it, the tests assert it (a violation FAILs);
         `observation`: platform behaviour the documentation leaves open, recorded, never FAIL;
         `policy`: an operator's floor or ceiling the documentation gives no figure for (a
         bandwidth floor, a latency ceiling): it FAILs below the floor, and the message names
         where the floor came from (its default and the measurement behind it, or the variable
         that set it), so a FAIL never reads as a CUDA violation.
  tests  the tests that name the row (written by --write), or, for a row no test names,
         "untested: <reason>" (kept by --write; a row that a test names loses its reason).

  tools/lint/spec_check.py          check (exit 0 consistent, 1 inconsistent, 2 unreadable table)
  tools/lint/spec_check.py --write  rewrite the tests column from the sources
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# RapidCheck's RC_GTEST_FIXTURE_PROP(F, Name, ...) registers the test as F_RapidCheck.Name.
TEST_RE = re.compile(r"^\s*(TEST|TEST_F|TEST_P|RC_GTEST_PROP|RC_GTEST_FIXTURE_PROP)\(\s*(\w+)\s*,\s*(\w+)\s*[,)]", re.M)
RULE_RE = re.compile(r'PAGELOCK_RULE\("([^"]*)"\)')
COLUMNS = ["id", "kind", "family", "rule", "versions", "capability", "tests"]
KINDS = ("rule", "observation", "policy")
UNTESTED = "untested: "


def read_table(path):
    rows = []
    # utf-8-sig: a byte-order mark (a table saved by a spreadsheet) is not part of the header;
    # splitlines() takes CRLF line ends too.
    with open(path, encoding="utf-8-sig") as f:
        lines = f.read().splitlines()
    if not lines or lines[0].split("\t") != COLUMNS:
        raise ValueError(f"{path}:1: header must be {' '.join(COLUMNS)}")
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != len(COLUMNS):
            raise ValueError(f"{path}:{n}: {len(cells)} columns, expected {len(COLUMNS)}")
        row = dict(zip(COLUMNS, cells))
        if row["kind"] not in KINDS:
            raise ValueError(f"{path}:{n}: kind '{row['kind']}' is not one of {', '.join(KINDS)}")
        # A second row with an id would take the first one's tests: two rules, one name.
        first = next((m for m, r in rows if r["id"] == row["id"]), None)
        if first is not None:
            raise ValueError(f"{path}:{n}: {row['id']}: duplicate id (first at line {first})")
        rows.append((n, row))
    return [r for _, r in rows]


def untested_reason(row):
    """The reason a row gives for having no test, or '' (a bare "untested:" is no reason)."""
    tests = row["tests"]
    return tests[len(UNTESTED):].strip() if tests.startswith(UNTESTED) else ""


def scan_tests(suites_dir):
    """{'hostalloc_test.cc:HostAllocTest.Name': ['R04', ...]} for every test in suites/."""
    found = {}
    for dirpath, _, files in os.walk(suites_dir):
        for name in sorted(files):
            if not name.endswith(".cc"):
                continue
            text = open(os.path.join(dirpath, name), encoding="utf-8").read()
            matches = list(TEST_RE.finditer(text))
            for i, m in enumerate(matches):
                body = text[m.end(): matches[i + 1].start() if i + 1 < len(matches) else len(text)]
                rule = RULE_RE.search(body)
                ids = [r.strip() for r in rule.group(1).split(",")] if rule else []
                suite = m.group(2) + ("_RapidCheck" if m.group(1) == "RC_GTEST_FIXTURE_PROP" else "")
                found[f"{suite}.{m.group(3)}"] = ids
    return found


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--write", action="store_true")
    p.add_argument("--root", default=ROOT)
    args = p.parse_args(argv)
    path = os.path.join(args.root, "suites", "rules.tsv")
    try:
        rows = read_table(path)
    except (OSError, ValueError) as e:
        print(f"spec_check: {e}", file=sys.stderr)
        return 2
    tests = scan_tests(os.path.join(args.root, "suites"))
    known = {r["id"] for r in rows}
    problems = []
    by_rule = {r["id"]: [] for r in rows}
    for test, ids in sorted(tests.items()):
        if not ids:
            problems.append(f"{test}: names no rule (add PAGELOCK_RULE)")
        for i in ids:
            if i not in known:
                problems.append(f"{test}: names rule {i}, which suites/rules.tsv lacks")
            else:
                by_rule[i].append(test)
    for r in rows:
        if not by_rule[r["id"]]:
            if not untested_reason(r):
                problems.append(f"{r['id']}: no test checks this rule (add one, or give the reason "
                                f"as '{UNTESTED}<why>' in the tests column)")
            continue
        want = " ".join(sorted(by_rule[r["id"]]))
        if r["tests"] != want:
            if args.write:
                r["tests"] = want
            else:
                problems.append(f"{r['id']}: tests column is stale (run tools/lint/spec_check.py --write)")
    if args.write:
        with open(path, "w", encoding="utf-8") as f:
            f.write("\t".join(COLUMNS) + "\n")
            for r in rows:
                f.write("\t".join(r[c] for c in COLUMNS) + "\n")
        problems = [p for p in problems if "stale" not in p]
    for prob in problems:
        print(f"spec_check: {prob}", file=sys.stderr)
    observations = sum(r["kind"] == "observation" for r in rows)
    policies = sum(r["kind"] == "policy" for r in rows)
    untested = sum(not by_rule[r["id"]] for r in rows)
    print(f"spec_check: {len(rows)} rules ({observations} observations, {policies} policies, {untested} "
          f"untested with a reason), {len(tests)} tests, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
