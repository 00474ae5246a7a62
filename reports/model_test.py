"""The typed model: statuses and their rules, case ids and gtest filters, reading what the
binaries record, results.json, and agreement with the C++ constants in fixtures/outcome.h."""

import json
import math
import os
import re
import tempfile
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.model_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import model
from reports.model import Case, CaseId, Status


def outcome_h():
    for base in (os.path.join(os.environ.get("TEST_SRCDIR", ""), "pagelock"),
                 os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")):
        path = os.path.join(base, "fixtures", "outcome.h")
        if os.path.exists(path):
            return path
    raise AssertionError("fixtures/outcome.h not found")


def cpp_constants(text):
    """{'prop::kStatus': 'pagelock.status', 'kExitPoisoned': 75, ...} from outcome.h."""
    out, ns = {}, []
    for line in text.splitlines():
        m = re.match(r"\s*namespace (\w+) \{", line)
        if m:
            ns.append(m.group(1))
            continue
        if re.match(r"\}\s*//\s*namespace", line.strip()):
            ns.pop()
            continue
        m = re.match(r'\s*inline constexpr char (k\w+)\[\] = "([^"]*)";', line)
        if m:
            out["::".join(ns[1:] + [m.group(1)])] = m.group(2)
        m = re.match(r"\s*inline constexpr int (k\w+) = (\d+);", line)
        if m:
            out["::".join(ns[1:] + [m.group(1)])] = int(m.group(2))
    return out


# C++ constant -> the Python value that must equal it.
PYTHON = {
    "prop::kStatus": model.PROP_STATUS, "prop::kReason": model.PROP_REASON,
    "prop::kSeed": model.PROP_SEED, "prop::kRunSeed": model.PROP_RUN_SEED,
    "prop::kRules": model.PROP_RULES, "prop::kMetricPrefix": model.PROP_METRIC_PREFIX,
    "prop::kObservedPrefix": model.PROP_OBSERVED_PREFIX,
    "prop::kBudgetPrefix": model.PROP_BUDGET_PREFIX, "prop::kChild": model.PROP_CHILD,
    "prop::kChildLog": model.PROP_CHILD_LOG, "prop::kHealth": model.PROP_HEALTH,
    "prop::kProfile": model.PROP_PROFILE,
    "kNotSupportedPrefix": model.NOT_SUPPORTED_PREFIX, "kJournalName": model.JOURNAL_NAME,
    "kExitPoisoned": model.EXIT_POISONED,
}


class ConstantsAgreeTest(unittest.TestCase):
    def test_every_cpp_constant_has_its_python_twin(self):
        with open(outcome_h()) as f:
            consts = cpp_constants(f.read())
        self.assertIn("prop::kStatus", consts, "the parser found nothing: outcome.h changed shape")
        for name, value in consts.items():
            if name.startswith("status::"):
                self.assertIn(value, model.DECLARED_STATUSES, name)
                self.assertIsNotNone(Status.parse(value), f"{name}={value} is no model Status")
            elif name.startswith("health::"):
                self.assertIn(value, model.HEALTH_VALUES, name)
            else:
                self.assertIn(name, PYTHON, f"{name} = {value!r} has no counterpart in reports/model.py")
                self.assertEqual(PYTHON[name], value, name)
        self.assertEqual(sorted(v for k, v in consts.items() if k.startswith("status::")),
                         sorted(model.DECLARED_STATUSES))
        self.assertEqual(sorted(v for k, v in consts.items() if k.startswith("health::")),
                         sorted(model.HEALTH_VALUES))

    def test_the_checker_notices_drift(self):
        with open(outcome_h()) as f:
            text = f.read().replace('"pagelock.seed"', '"pagelock.case_seed"')
        consts = cpp_constants(text)
        self.assertNotEqual(consts["prop::kSeed"], model.PROP_SEED)


def python_sources():
    """Every non-test Python file of reports/ and tools/ in this tree (under Bazel: the libraries
    model_test has as data), as {relative path: text}."""
    base = os.path.dirname(os.path.dirname(outcome_h()))
    out = {}
    for top in ("reports", "tools"):
        for root, dirs, files in os.walk(os.path.join(base, top)):
            dirs[:] = [d for d in dirs if d != "testdata"]
            for name in files:
                if name.endswith(".py") and not name.endswith("_test.py"):
                    path = os.path.join(root, name)
                    with open(path, encoding="utf-8") as f:
                        out[os.path.relpath(path, base)] = f.read()
    return out


# The model's names whose values other modules might copy.
_CONSTANT_NAMES = [n for n in dir(model) if n.isupper() and isinstance(
    getattr(model, n), (str, int, tuple, list, frozenset, set)) and not isinstance(getattr(model, n), bool)]
_STATUS_WORDS = {s.value for s in Status} | {c.value for c in model.Change}


def literal_copies(text):
    """(name, value) of each module-level NAME = <literal> assignment that copies the model: a
    name the model also defines, a text equal to one of its text constants, or a collection of
    status words."""
    import ast
    texts = {getattr(model, n) for n in _CONSTANT_NAMES if isinstance(getattr(model, n), str)}
    out = []
    for node in ast.parse(text).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        try:
            value = ast.literal_eval(node.value)
        except ValueError:
            continue  # built from something (model.Status, another module): not a copy
        name = node.targets[0].id
        words = isinstance(value, (tuple, list, set, frozenset)) and value and all(
            isinstance(v, str) for v in value) and set(value) & _STATUS_WORDS
        if name in _CONSTANT_NAMES or words or isinstance(value, str) and value in texts:
            out.append((name, value))
    return out


# Copies under a name of their own: (file, name) -> what the model says the value is, or None for a
# collection that need only name model statuses or changes. A copy found and not listed here (or
# named as in the model) fails the test below: list it, or better, import it from the model.
KNOWN_COPIES = {
    ("tools/bandwidth/nvbandwidth_compare.py", "METRIC_PREFIX"): model.PROP_METRIC_PREFIX,
    ("tools/qualification/verdict.py", "UNEXPECTED"): {c.value for c in model.Change if c.blocks},
    ("tools/fleet/report.py", "KNOWN_COMPARISONS"): None,
}


class NoDriftingCopyTest(unittest.TestCase):
    """Every copy of a model constant left anywhere in the Python (a literal, not an import)
    agrees with the model: the same name has the same value, a copy under another name is in
    KNOWN_COPIES with the model's value, and a collection of statuses names only statuses the
    model knows."""

    def test_every_python_copy_agrees_with_the_model(self):
        sources = python_sources()
        self.assertIn(os.path.join("reports", "model.py"), sources)
        for path, text in sorted(sources.items()):
            if path == os.path.join("reports", "model.py"):
                continue
            key = path.replace(os.sep, "/")
            for name, value in literal_copies(text):
                where = f"{key}: {name} = {value!r}"
                if isinstance(value, (tuple, list, set, frozenset)):
                    self.assertLessEqual(set(value), _STATUS_WORDS, where)
                if name in _CONSTANT_NAMES:
                    want = getattr(model, name)
                    self.assertEqual(set(value) if isinstance(value, (tuple, list, set, frozenset)) else value,
                                     set(want) if isinstance(want, (tuple, list, set, frozenset)) else want, where)
                    continue
                self.assertIn((key, name), KNOWN_COPIES, f"{where} copies the model: import it, or list it")
                want = KNOWN_COPIES[(key, name)]
                if want is not None:
                    self.assertEqual(set(value) if isinstance(value, (tuple, list, set, frozenset)) else value,
                                     want, where)

    def test_the_scan_finds_a_copy(self):
        text = 'FAILING = {"FAIL", "CRASH"}\nX = "pagelock.status"\nY = model.FAILING\nJOURNAL_NAME = "j"\n'
        found = dict(literal_copies(text))
        self.assertEqual(found["FAILING"], {"FAIL", "CRASH"})  # named as in the model, not equal: fails
        self.assertEqual(found["X"], model.PROP_STATUS)  # another name: must be in KNOWN_COPIES
        self.assertNotIn("Y", found)
        self.assertEqual(found["JOURNAL_NAME"], "j")


class StatusTest(unittest.TestCase):
    def test_predicates_and_severity(self):
        self.assertTrue(Status.WARN.is_pass and not Status.WARN.is_fail)
        self.assertTrue(all(Status(s).is_fail for s in ("FAIL", "TIMEOUT", "CRASH", "INFRA_ERROR", "MISSING")))
        self.assertTrue(Status.NOT_SUPPORTED.is_coverage_gap and Status.MISSING.is_coverage_gap)
        self.assertFalse(Status.PASS.is_coverage_gap)
        self.assertLess(Status.FAIL.severity, Status.CRASH.severity)

    def test_an_unknown_status_is_an_infrastructure_error_never_clean(self):
        c = Case.from_raw("//a:b", "S", "N", "PASS", properties={model.PROP_STATUS: "BOGUS"})
        self.assertEqual(c.status, Status.INFRA_ERROR)
        self.assertIn("BOGUS", c.message)
        self.assertEqual(Case.from_raw("//a:b", "S", "N", "GREAT").status, Status.INFRA_ERROR)
        self.assertFalse(model.is_clean({"GREAT": 1}))
        self.assertIn("1 failed", model.format_counts({"GREAT": 1}))

    def test_decide_status_is_the_one_reading_of_a_status(self):
        d = model.decide_status
        self.assertEqual(d("SKIP", None, "x.cc:3: NotSupported: attr=0"), (Status.NOT_SUPPORTED, "attr=0", ""))
        self.assertEqual(d("SKIP", None, "no GPU"), (Status.SKIP, "no GPU", ""))
        self.assertEqual(d("SKIP", "NOT_SUPPORTED", "NotSupported: attr=0")[:2], (Status.NOT_SUPPORTED, "attr=0"))
        self.assertEqual(d("PASS", "WARN")[0], Status.WARN)
        self.assertEqual(d("FAIL", "WARN")[0], Status.FAIL)
        self.assertEqual(d("FAIL", "NOT_SUPPORTED")[0], Status.FAIL)
        self.assertEqual(d("FAIL", "CRASH")[0], Status.CRASH)
        self.assertEqual(d("FAIL", "PASS")[0], Status.FAIL)  # a declared status never hides a failure
        self.assertEqual(d("CRASH")[0], Status.CRASH)
        status, _, note = d("PASS", "BOGUS")
        self.assertEqual(status, Status.INFRA_ERROR)
        self.assertIn("BOGUS", note)
        self.assertIn("GREAT", d("GREAT")[2])

    def test_declared_status_refines_but_never_hides_a_failure(self):
        p = {model.PROP_STATUS: "NOT_SUPPORTED", model.PROP_REASON: "cudaDevAttrX=0"}
        self.assertEqual(Case.from_raw("//a:b", "S", "N", "SKIP", properties=p).status, Status.NOT_SUPPORTED)
        self.assertEqual(Case.from_raw("//a:b", "S", "N", "FAIL", properties=p).status, Status.FAIL)
        w = Case.from_raw("//a:b", "S", "N", "PASS", properties={model.PROP_STATUS: "WARN",
                                                                  model.PROP_REASON: "slow"})
        self.assertEqual((w.status, w.reason), (Status.WARN, "slow"))


class CaseIdTest(unittest.TestCase):
    def test_ids_round_trip_with_deep_packages_and_parameters(self):
        cid = CaseId("//suites/stress:pinned_stress_test", "Flags/PinnedStressTest", "Pins/portable")
        self.assertEqual(str(cid), "suites/stress:pinned_stress_test/Flags/PinnedStressTest.Pins/portable")
        self.assertEqual(CaseId.parse(str(cid)), cid)
        self.assertEqual(cid.param, "portable")
        self.assertEqual(cid.package, "suites/stress")

    def test_filters_are_per_target_and_keep_the_whole_gtest_name(self):
        ids = [CaseId("//suites/stress:pinned_stress_test", "PinnedStressTest", "A"),
               CaseId("//suites/stress:pinned_stress_test", "PinnedStressTest", "B"),
               CaseId("//suites/hostalloc:hostalloc_test", "Flags/H", "C/mapped")]
        hit = model.matching(["suites/stress:pinned_stress_test/PinnedStressTest.*"], ids)
        self.assertEqual(model.gtest_filters(hit, negative=True),
                         {"//suites/stress:pinned_stress_test": "-PinnedStressTest.A:PinnedStressTest.B"})
        self.assertEqual(model.gtest_filters(ids[2:]), {"//suites/hostalloc:hostalloc_test": "Flags/H.C/mapped"})


class CaseTest(unittest.TestCase):
    def test_outcome_properties_become_typed_fields(self):
        props = {model.PROP_SEED: "123", model.PROP_RULES: "R14,R51",
                 model.PROP_METRIC_PREFIX + "h2d_pinned_GBps": "55.1 GB/s",
                 model.PROP_METRIC_PREFIX + "bad_GBps": "nan GB/s",
                 model.PROP_BUDGET_PREFIX + "pinned_bytes": "34359738368 B",
                 model.PROP_OBSERVED_PREFIX + "flags": "3", model.PROP_CHILD: "Sc: completed",
                 model.PROP_HEALTH: "pinned_leak", "other": "x"}
        c = Case.from_raw("//suites/a:a_test", "S", "N", "PASS", properties=props, run_seed="9")
        self.assertEqual((c.seed, c.run_seed, c.rules), (123, 9, ["R14", "R51"]))
        self.assertEqual((c.metrics["h2d_pinned_GBps"].value, c.metrics["h2d_pinned_GBps"].unit), (55.1, "GB/s"))
        self.assertTrue(math.isnan(c.metrics["bad_GBps"].value))
        self.assertEqual(str(c.metrics["bad_GBps"]), "nan GB/s")
        self.assertEqual(c.budgets["pinned_bytes"].value, 34359738368)
        self.assertEqual((c.observed, c.child, c.health, c.extra),
                         ({"flags": "3"}, "Sc: completed", "pinned_leak", {"other": "x"}))
        self.assertNotIn("bad_GBps", c.properties)  # the flat view carries finite metrics only

    def test_attempts_are_their_own_field_not_a_shared_dict(self):
        c = Case.from_raw("//a:b", "S", "N", "PASS", properties={"attempts": "FAIL PASS"})
        self.assertEqual(c.attempts, [Status.FAIL, Status.PASS])
        self.assertTrue(c.flaky)
        self.assertNotIn("attempts", c.extra)

    def test_replay_commands_carry_the_run_seed_and_stress_config(self):
        c = Case.from_raw("//suites/stress:pinned_stress_test", "PinnedStressTest", "Pins", "FAIL", run_seed=42)
        self.assertEqual(c.replay_command("/b").splitlines(), [
            "bazel test //suites/stress:pinned_stress_test --config=stress "
            "--test_filter='PinnedStressTest.Pins' --test_env=PAGELOCK_SEED=42",
            "PAGELOCK_SEED=42 /b/bin/suites/stress/pinned_stress_test --gtest_filter='PinnedStressTest.Pins'"])
        c = Case.from_raw("//suites/a:a_test", "S", "Bad", "FAIL", run_seed=7)
        self.assertNotIn("--config", c.replay_command())

    def test_the_bundle_line_without_a_bundle_asks_for_one_when_pasted(self):
        # The page and JUnit do not know where the bundle is unpacked: pasted with BUNDLE unset,
        # the line stops with a message instead of running a literal 'BUNDLE/bin/...'.
        import subprocess
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        binary = os.path.join(tmp, "b dir", "bin", "suites", "a", "a_test")
        os.makedirs(os.path.dirname(binary))
        with open(binary, "w") as f:
            f.write('#!/bin/sh\necho "ran seed=$PAGELOCK_SEED $*"\n')
        os.chmod(binary, 0o755)
        line = Case.from_raw("//suites/a:a_test", "S", "Bad", "FAIL", run_seed=7).replay_command().splitlines()[1]
        env = {k: v for k, v in os.environ.items() if k != "BUNDLE"}
        p = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True, timeout=20)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("BUNDLE: set BUNDLE to the bundle folder", p.stderr)
        self.assertNotIn("ran", p.stdout)
        p = subprocess.run(["bash", "-c", line], env=dict(env, BUNDLE=os.path.join(tmp, "b dir")),
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(p.stdout, "ran seed=7 --gtest_filter=S.Bad\n", p.stderr)

class SeedTest(unittest.TestCase):
    def test_case_seeds_derive_as_in_cpp(self):
        # Values printed by the same arithmetic compiled from fixtures/outcome.cc.
        self.assertEqual(model.derive_case_seed(4321, "Flags/HostAllocTest.MapsMemory/portable"), 992980925556)
        self.assertEqual(model.derive_case_seed(2 ** 64 - 1, "S.N"), 212614197552)

    def test_a_replay_with_the_wrong_run_seed_says_so(self):
        good = Case.from_raw("//a:b", "S", "N", "FAIL", run_seed=2 ** 64 - 1,
                             properties={model.PROP_SEED: "212614197552"})
        self.assertTrue(good.seed_replays)
        self.assertIn(f"PAGELOCK_SEED={2 ** 64 - 1}", good.replay_command())
        bad = Case.from_raw("//a:b", "S", "N", "FAIL", run_seed=5, properties={model.PROP_SEED: "212614197552"})
        self.assertFalse(bad.seed_replays)
        self.assertTrue(bad.replay_command().startswith("# the run seed of this case's binary is unknown"))
        self.assertNotIn("PAGELOCK_SEED=5", bad.replay_command())


class ResultsJsonTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def test_round_trip_keeps_every_field_and_non_finite_numbers(self):
        c = Case.from_raw("//suites/a:a_test", "S", "N", "PASS", 0.5, properties={
            model.PROP_SEED: "18446744073709551615", model.PROP_METRIC_PREFIX + "x_GBps": "inf GB/s",
            "attempts": "CRASH PASS"}, run_seed=3)
        c.first_failure = "boom"
        path = os.path.join(self.dir, "results.json")
        model.write_results(path, model.Run({"seed": "3"}, [c]), {"verdict": "QUALIFIED"})
        with open(path) as f:
            self.assertEqual(json.load(f)["format_version"], model.FORMAT_VERSION)  # strict JSON
        run, info, _ = model.read_results(path)
        d = run.cases[0]
        self.assertEqual((d.id, d.status, d.attempts, d.seed, d.run_seed, d.first_failure),
                         (c.id, Status.PASS, [Status.CRASH, Status.PASS], 2 ** 64 - 1, 3, "boom"))
        self.assertEqual(d.metrics["x_GBps"].value, math.inf)
        self.assertEqual(info["verdict"], "QUALIFIED")

    def test_format_zero_files_read_through_the_same_rules(self):
        path = os.path.join(self.dir, "old.json")
        with open(path, "w") as f:
            json.dump({"run": {"fingerprint": {}, "cases": [
                {"target": "//a:b", "suite": "S", "name": "N", "status": "PASS",
                 "properties": {"rules": "R1", "h2d_pinned_GBps": "50.5", "attempts": "FAIL PASS"}}]}}, f)
        c = model.read_results(path)[0].cases[0]
        self.assertEqual((c.rules, c.metrics["h2d_pinned_GBps"].value, c.flaky), (["R1"], 50.5, True))

    def test_bad_files_are_errors_with_the_file_name(self):
        for name, text in [("list.json", "[1, 2]"), ("bad.json", "{nope"), ("cases.json", '{"cases": 3}'),
                           ("future.json", '{"format_version": 99, "cases": []}')]:
            path = os.path.join(self.dir, name)
            with open(path, "w") as f:
                f.write(text)
            with self.assertRaises(model.ResultsError) as ctx:
                model.read_results(path)
            self.assertIn(name, str(ctx.exception))
        with self.assertRaises(model.ResultsError):
            model.read_results(os.path.join(self.dir, "absent.json"))


if __name__ == "__main__":
    unittest.main()
