"""The results model: one run = a fingerprint plus one record per test case.

Reads GoogleTest XML as found in a testlogs tree (Bazel's bazel-testlogs or the bundle runner's
output, same layout), the case journals that pagelock binaries write, and the runner's markers.
A missing, truncated or malformed test.xml is a result (CRASH, TIMEOUT or MISSING with the
reason), never an exception.

These are raw records (the status as gtest, the journal or the runner says it, the properties
as recorded); reports/model.py turns them into typed cases and owns every pass/fail rule.
"""

import io
import json
import os
import re
import zipfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from reports import model
from reports.model import FAILING, STATUSES, count_statuses, format_counts, is_clean  # noqa: F401

from reports.model import NOT_SUPPORTED_PREFIX  # noqa: E402,F401

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



@dataclass
class Run:
    fingerprint: dict = field(default_factory=dict)
    cases: list = field(default_factory=list)
    problems: list = field(default_factory=list)  # how the tree was read (unreadable files, ...)

    def counts(self):
        return count_statuses(c.status for c in self.cases)

    # results.json belongs to reports/model.py; these two keep older callers working.
    def to_json(self):
        return model.Run.from_raw(self).to_json()

    @staticmethod
    def from_json(d):
        """A typed reports.model.Run (same attributes, typed statuses)."""
        return model.Run.from_json(d)





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
