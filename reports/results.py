"""The results model: one run = a fingerprint plus one record per test case.

Reads GoogleTest XML as found in a testlogs tree (Bazel's bazel-testlogs or the bundle runner's
output, same layout), the case journals that pagelock binaries write, and the runner's markers.
A missing, truncated or malformed test.xml is a result (CRASH, TIMEOUT or MISSING with the
reason), never an exception.

Raw statuses (what happened to a case):
  PASS, FAIL, CRASH, TIMEOUT, NOT_SUPPORTED, SKIP, WARN, INFRA_ERROR, MISSING
"""

import io
import json
import os
import re
import zipfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

STATUSES = ["PASS", "WARN", "NOT_SUPPORTED", "SKIP", "FAIL", "TIMEOUT", "CRASH", "INFRA_ERROR",
            "MISSING"]
# Statuses that make a run unclean, most severe last (piglit/KCIDB order).
FAILING = ["FAIL", "TIMEOUT", "CRASH", "INFRA_ERROR", "MISSING"]
NOT_SUPPORTED_PREFIX = "NotSupported: "

_CASE_ATTRS = {"name", "file", "line", "status", "result", "time", "timestamp", "classname",
               "value_param", "type_param"}
_ROOT_ATTRS = {"tests", "failures", "disabled", "errors", "time", "timestamp", "name", "skipped"}


@dataclass
class Case:
    target: str  # Bazel label, "//suites/hostalloc:hostalloc_test"
    suite: str  # GoogleTest suite, "AllFlagCombinations/HostAllocFlagsTest"
    name: str  # GoogleTest name, "KernelReadsAndWrites.../mapped"
    status: str
    seconds: float = 0.0
    message: str = ""  # failure text, or crash description
    reason: str = ""  # why NOT_SUPPORTED or SKIP
    properties: dict = field(default_factory=dict)

    @property
    def gtest_name(self):
        return f"{self.suite}.{self.name}"

    @property
    def id(self):
        """Stable id: '<package>:<target>/<suite>.<name>'."""
        return f"{self.target[2:]}/{self.gtest_name}"

    @property
    def family(self):
        pkg = self.target[2:].split(":")[0]
        return pkg.split("/")[-1]

    def replay_command(self, seed=None):
        """How to run exactly this case again: with Bazel, and from a bundle."""
        env = f" --test_env=PAGELOCK_SEED={seed}" if seed else ""
        pkg, name = self.target[2:].split(":")
        bundle_env = f"PAGELOCK_SEED={seed} " if seed else ""
        return (f"bazel test {self.target} --test_filter='{self.gtest_name}'{env}\n"
                f"{bundle_env}BUNDLE/bin/{pkg}/{name} --gtest_filter='{self.gtest_name}'")

    def to_json(self):
        return {"id": self.id, "target": self.target, "suite": self.suite, "name": self.name,
                "status": self.status, "seconds": self.seconds, "message": self.message,
                "reason": self.reason, "properties": self.properties}

    @staticmethod
    def from_json(d):
        return Case(d["target"], d["suite"], d["name"], d["status"], d.get("seconds", 0.0),
                    d.get("message", ""), d.get("reason", ""), d.get("properties", {}))


@dataclass
class Run:
    fingerprint: dict = field(default_factory=dict)
    cases: list = field(default_factory=list)
    problems: list = field(default_factory=list)  # how the tree was read (unreadable files, ...)

    def counts(self):
        c = {s: 0 for s in STATUSES}
        for case in self.cases:
            c[case.status] = c.get(case.status, 0) + 1
        return c

    def to_json(self):
        return {"fingerprint": self.fingerprint, "problems": self.problems,
                "cases": [c.to_json() for c in self.cases]}

    @staticmethod
    def from_json(d):
        return Run(d.get("fingerprint", {}), [Case.from_json(c) for c in d.get("cases", [])],
                   d.get("problems", []))


def format_counts(counts):
    """Counts by status, then the closing line 'N passed, N failed, N skipped'."""
    parts = [f"{s}={n}" for s, n in counts.items() if n]
    passed = counts.get("PASS", 0) + counts.get("WARN", 0)
    failed = sum(counts.get(s, 0) for s in FAILING)
    skipped = counts.get("SKIP", 0) + counts.get("NOT_SUPPORTED", 0)
    return ("by status: " + (", ".join(parts) if parts else "no cases") + "\n"
            f"{passed} passed, {failed} failed, {skipped} skipped")


def is_clean(counts):
    return not any(counts.get(s, 0) for s in FAILING)



# ---------------------------------------------------------------------------------------------
# Reading test binaries' files lives in reports/testlogs.py; these turn its raw records into Cases.

from reports.testlogs import (  # noqa: E402,F401
    read_gtest_xml_cases, read_journal, synthesize_case, tail, write_infra_error_xml,
    write_merged_xml)
from reports import testlogs as _testlogs  # noqa: E402


def _from_raw(raw):
    return Run(raw.fingerprint, [Case(c.target, c.suite, c.name, c.status, c.seconds, c.message,
                                      c.reason, c.properties) for c in raw.cases], raw.problems)


def case_from_element(target, el):
    return _from_raw(_testlogs.RawRun(cases=[_testlogs.case_from_element(target, el)])).cases[0]


def load_testlogs(root):
    """Reads every target under a testlogs tree into one Run."""
    return _from_raw(_testlogs.load_testlogs(root))


def load_bep(path):
    """Reads the test results named in a Bazel build event JSON file (--build_event_json_file)."""
    return _from_raw(_testlogs.load_bep(path))
