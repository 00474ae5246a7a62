#!/usr/bin/env python3
"""Keeps suites/rules.tsv and the suites consistent: every test names at least one rule
(PAGELOCK_RULE("R14,R51")), every named rule is in the table, every rule in the table has a
test, and the table's `tests` column lists them.

  tools/spec_check.py            check (exit 0 consistent, 1 inconsistent, 2 unreadable table)
  tools/spec_check.py --write    rewrite the tests column from the sources
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# RapidCheck's RC_GTEST_FIXTURE_PROP(F, Name, ...) registers the test as F_RapidCheck.Name.
TEST_RE = re.compile(r"^\s*(TEST|TEST_F|TEST_P|RC_GTEST_PROP|RC_GTEST_FIXTURE_PROP)\(\s*(\w+)\s*,\s*(\w+)\s*[,)]", re.M)
RULE_RE = re.compile(r'PAGELOCK_RULE\("([^"]*)"\)')
COLUMNS = ["id", "family", "rule", "versions", "capability", "tests"]


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
        rows.append(dict(zip(COLUMNS, cells)))
    return rows


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
            problems.append(f"{r['id']}: no test checks this rule")
        want = " ".join(sorted(by_rule[r["id"]]))
        if r["tests"] != want:
            if args.write:
                r["tests"] = want
            else:
                problems.append(f"{r['id']}: tests column is stale (run tools/spec_check.py --write)")
    if args.write:
        with open(path, "w", encoding="utf-8") as f:
            f.write("\t".join(COLUMNS) + "\n")
            for r in rows:
                f.write("\t".join(r[c] for c in COLUMNS) + "\n")
        problems = [p for p in problems if "stale" not in p]
    for prob in problems:
        print(f"spec_check: {prob}", file=sys.stderr)
    print(f"spec_check: {len(rows)} rules, {len(tests)} tests, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
