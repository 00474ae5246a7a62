#!/usr/bin/env python3
"""Tests of tools/mutation on CPU: the verdict logic on synthetic runs, bad usage, and one whole
mutation run over a fake bundle whose test binary (testdata/fake_suite.py) drives the fault shim
in front of the fake driver of tools/faults/testdata.

Under Bazel the shim and the fake driver come from the runfiles; run directly
(python3 tools/mutation/mutation_test.py) it builds them with g++/gcc.
"""
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.mutation.mutation_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import pages
from tools.mutation import catalogue, false_alarms, mutation, outputs, scoring, selection


def repo_root():
    srcdir = os.environ.get("TEST_SRCDIR")
    if srcdir:
        return os.path.join(srcdir, os.environ.get("TEST_WORKSPACE", "pagelock"))
    return os.path.dirname(os.path.dirname(HERE))


ROOT = repo_root()


def shim_and_fake(tmp):
    if os.environ.get("TEST_SRCDIR"):
        return (os.path.join(ROOT, "tools/faults/shim"),
                os.path.join(ROOT, "tools/faults/testdata/libfakecuda.so"))
    subprocess.run([os.path.join(ROOT, "tools/faults/build_shim.sh"), os.path.join(tmp, "shim")],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["gcc", "-shared", "-fPIC", os.path.join(ROOT, "tools/faults/testdata/fake_libcuda.c"),
                    "-o", os.path.join(tmp, "libfakecuda.so")], check=True)
    return os.path.join(tmp, "shim"), os.path.join(tmp, "libfakecuda.so")


def make_bundle(tmp, shim_dir, name="bundle", second=False, conforming=False):
    """A bundle with //fake:fake_suite (its cases name rules R76, R85, R77) and, with second,
    //fake:fake_norules (the same binary, naming no rule); with conforming,
    //fake:fake_conforming (cases on R44 and R42, one pinning r580's code) and the bundle's
    faults/conforming.tsv."""
    b = os.path.join(tmp, name)
    # What tools/bundle.py ships of the Python side: the runner and every module of reports/.
    rels = ["tools/__init__.py"] + ["tools/runner/" + f for f in os.listdir(os.path.join(ROOT, "tools/runner"))
                                    if f.endswith(".py") and not f.endswith("_test.py")]
    rels += ["reports/" + f for f in os.listdir(os.path.join(ROOT, "reports"))
             if f.endswith(".py") and not f.endswith("_test.py")]
    for rel in rels:
        os.makedirs(os.path.dirname(os.path.join(b, rel)), exist_ok=True)
        shutil.copy(os.path.join(ROOT, rel), os.path.join(b, rel))
    os.makedirs(os.path.join(b, "bin/fake"))
    shutil.copy(os.path.join(ROOT, "tools/mutation/testdata/fake_suite.py"),
                os.path.join(b, "bin/fake/fake_suite"))
    os.chmod(os.path.join(b, "bin/fake/fake_suite"), 0o755)
    targets = [{"label": "//fake:fake_suite", "path": "bin/fake/fake_suite", "tags": ["gpu", "tier_bat"],
                "timeout_s": 60}]
    if second:
        shutil.copy(os.path.join(b, "bin/fake/fake_suite"), os.path.join(b, "bin/fake/fake_norules"))
        targets.append(dict(targets[0], label="//fake:fake_norules", path="bin/fake/fake_norules"))
    os.makedirs(os.path.join(b, "faults"))
    if conforming:
        shutil.copy(os.path.join(b, "bin/fake/fake_suite"), os.path.join(b, "bin/fake/fake_conforming"))
        targets.append(dict(targets[0], label="//fake:fake_conforming", path="bin/fake/fake_conforming"))
        shutil.copy(os.path.join(ROOT, "tools/faults/conforming.tsv"),
                    os.path.join(b, "faults/conforming.tsv"))
    shutil.copy(os.path.join(shim_dir, "libcuda.so.1"), os.path.join(b, "faults/libcuda.so.1"))
    shutil.copy(os.path.join(ROOT, "tools/faults/catalogue.tsv"), os.path.join(b, "faults/catalogue.tsv"))
    with open(os.path.join(b, "faults/survivors.tsv"), "w") as f:
        f.write("name\texplanation\nctx_sync_returns_early\tthe fake suite never checks data after a sync.\n")
    with open(os.path.join(b, "manifest.json"), "w") as f:
        json.dump({"info": {"commit": "test"}, "targets": targets}, f)
    return b


def quiet(fn, *args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = fn(*args)
    return rc, out.getvalue(), err.getvalue()


FAULT = {"name": "f", "rule": "R76", "family": "hostalloc", "kind": "data", "description": "d."}
CAP = dict(FAULT, name="c", kind="capability")
LOADED = (["fault=f", "fault=c", "fault=f"], ["cuMemcpyHtoD"], [])
META = {"timed_out": False, "rc": 1, "seconds": 1.0}


def st(**cases):
    return {k: (v, "why" if v == "NOT_SUPPORTED" else "", "") for k, v in cases.items()}


class VerdictTest(unittest.TestCase):
    def test_a_case_that_passed_and_now_fails_kills_the_fault(self):
        r = scoring.classify(FAULT, [(META, st(a="FAIL", b="PASS"), LOADED, st(a="PASS", b="PASS"))], set())
        self.assertEqual(r["verdict"], "KILLED")
        self.assertEqual([c["case"] for c in r["caught_by"]], ["a"])

    def test_a_not_supported_case_that_now_fails_kills_the_fault(self):
        r = scoring.classify(CAP, [(META, st(a="FAIL"), LOADED, st(a="NOT_SUPPORTED"))], set())
        self.assertEqual(r["verdict"], "KILLED")

    def test_a_capability_fault_turning_cases_not_supported_is_handled(self):
        r = scoring.classify(CAP, [(META, st(a="NOT_SUPPORTED"), LOADED, st(a="PASS"))], set())
        self.assertEqual(r["verdict"], "HANDLED")

    def test_a_performance_fault_turning_passes_into_warnings_is_handled(self):
        perf = dict(FAULT, kind="perf")
        r = scoring.classify(perf, [(META, st(a="WARN"), LOADED, st(a="PASS"))], set())
        self.assertEqual(r["verdict"], "HANDLED")
        r = scoring.classify(FAULT, [(META, st(a="WARN"), LOADED, st(a="PASS"))], set())
        self.assertEqual(r["verdict"], "SURVIVED")

    def test_other_faults_turning_cases_not_supported_survive_as_masked(self):
        r = scoring.classify(FAULT, [(META, st(a="NOT_SUPPORTED"), LOADED, st(a="PASS"))], set())
        self.assertEqual(r["verdict"], "SURVIVED")
        self.assertIn("masked", r["note"])

    def test_unstable_cases_never_count(self):
        r = scoring.classify(FAULT, [(META, st(a="FAIL"), LOADED, st(a="PASS"))], {"a"})
        self.assertEqual(r["verdict"], "SURVIVED")

    def test_a_case_the_control_failed_never_counts(self):
        self.assertEqual(scoring.unstable_cases(st(a="FAIL", b="PASS"), st(a="FAIL", b="PASS")), {"a"})
        self.assertEqual(scoring.unstable_cases(st(a="PASS"), st(a="WARN")), {"a"})

    def test_a_hung_run_kills_the_fault_through_its_unfinished_cases(self):
        meta = dict(META, timed_out=True)
        r = scoring.classify(FAULT, [(meta, st(a="PASS"), LOADED, st(a="PASS", b="PASS"))], set())
        self.assertEqual(r["verdict"], "KILLED")
        self.assertEqual(r["caught_by"][0]["fault"], "TIMEOUT")

    def test_a_run_the_budget_stopped_is_not_run_unless_something_was_already_caught(self):
        meta = dict(META, cut_by_budget=True)
        r = scoring.classify(FAULT, [(meta, st(a="PASS"), LOADED, st(a="PASS", b="PASS"))], set())
        self.assertEqual(r["verdict"], "NOT_RUN")
        r = scoring.classify(FAULT, [(meta, st(a="FAIL"), LOADED, st(a="PASS", b="PASS"))], set())
        self.assertEqual(r["verdict"], "KILLED")

    def test_cases_a_budget_stop_left_missing_or_timed_out_are_no_catch_and_no_false_alarm(self):
        # The runner reports a stopped run's cases as MISSING (interrupted, never ran) or
        # TIMEOUT: that is the budget's doing, not the fault's or the variation's.
        from tools.mutation import false_alarms
        meta = dict(META, cut_by_budget=True, changed=["x"])
        r = scoring.classify(FAULT, [(meta, st(a="PASS", b="MISSING", c="TIMEOUT"), LOADED,
                                      st(a="PASS", b="PASS", c="PASS"))], set())
        self.assertEqual(r["verdict"], "NOT_RUN")
        var = dict(FAULT, name="f", kind="timing")
        v = false_alarms.classify_variation(var, [(meta, st(a="PASS", b="MISSING"), LOADED,
                                                   st(a="PASS", b="PASS"))], set())
        self.assertEqual(v["false_alarms"], [])
        self.assertEqual(v["verdict"], "NOT_RUN")

    def test_a_fault_the_shim_never_loaded_is_an_error(self):
        r = scoring.classify(FAULT, [(META, st(a="FAIL"), ([], [], ["unknown fault f"]), st(a="PASS"))], set())
        self.assertEqual(r["verdict"], "ERROR")

    def test_a_fault_never_reached_says_so(self):
        r = scoring.classify(FAULT, [(META, st(a="PASS"), (["fault=f"], [], []), st(a="PASS"))], set())
        self.assertEqual(r["verdict"], "SURVIVED")
        self.assertIn("never reached", r["note"])

    def test_score_counts_killed_and_handled_over_decided_faults(self):
        s = scoring.score([{"verdict": v} for v in ["KILLED", "HANDLED", "SURVIVED", "ERROR", "NOT_RUN"]])
        self.assertEqual((s["counted"], s["percent"]), (3, 66.7))

    def test_html_escapes_everything(self):
        doc = {"score": scoring.score([{"verdict": "SURVIVED"}]),
               "control": {"summary": "PASS=1", "unstable": []},
               "faults": [dict(FAULT, name="<b>x</b>", verdict="SURVIVED", note="<script>",
                               targets_run=["//a:<i>"])]}
        text = pages.render_mutation_page(doc)
        self.assertNotIn("<b>x</b>", text)
        self.assertNotIn("<script>", text)
        self.assertNotIn("<i>", text)
        self.assertIn("//a:&lt;i&gt;", text)  # the survivor's binaries are listed
        self.assertIn("caught 0 of 1", text)


class AloneTargetsTest(unittest.TestCase):
    def test_exclusive_and_bandwidth_targets_run_alone_and_stress_never(self):
        # The pool leaves exclusive targets out (they must not run beside others); a score that
        # never ran them at all would miss their catches.
        import types
        from tools.mutation import mutation
        def t(label, *tags):
            return {"label": label, "tags": ["gpu", *tags]}
        manifest = {"targets": [t("//a:pool"), t("//a:alone", "exclusive"), t("//b:bw", "family_bandwidth"),
                                t("//c:stress", "stress", "exclusive")]}
        inputs = types.SimpleNamespace(manifest=manifest)
        mutation.choose_targets(inputs, types.SimpleNamespace(exclude="", no_bandwidth=False, tags=mutation.DEFAULT_TAGS))
        self.assertEqual([x["label"] for x in inputs.pool_targets], ["//a:pool"])
        self.assertEqual([x["label"] for x in inputs.serial_targets], ["//a:alone", "//b:bw"])
        mutation.choose_targets(inputs, types.SimpleNamespace(exclude="", no_bandwidth=True, tags=mutation.DEFAULT_TAGS))
        self.assertEqual([x["label"] for x in inputs.serial_targets], ["//a:alone"])


class SelectionTest(unittest.TestCase):
    USABLE = ["//suites/hostalloc:a_test", "//suites/streams:b_test", "//suites/devptr:c_test",
              "//suites/model:d_test", "//suites/model:e_test"]
    CENSUS = {"//suites/hostalloc:a_test": {"cuMemcpyHtoD"},
              "//suites/streams:b_test": {"cuMemcpyHtoD", "cuCtxSynchronize"},
              "//suites/devptr:c_test": {"cuMemcpyHtoD"},
              "//suites/model:d_test": {"cuMemcpyHtoD", "cuMemHostAlloc"},
              "//suites/model:e_test": {"cuMemHostAlloc"}}
    DUR = {"//suites/hostalloc:a_test": 8.0, "//suites/streams:b_test": 3.0,
           "//suites/devptr:c_test": 2.0, "//suites/model:d_test": 1.0, "//suites/model:e_test": 1.0}
    RULES = {"//suites/streams:b_test": {"R76"}, "//suites/devptr:c_test": {"R76", "R51"}}
    F = dict(FAULT, entries="cuMemcpyHtoD")

    def test_rule_targets_come_first_then_family_then_sentinels_then_the_rest(self):
        plan = selection.select_for_fault(self.F, self.USABLE, self.CENSUS, self.RULES, self.DUR,
                                         ["//suites/model:d_test"])
        self.assertEqual(plan, [("//suites/devptr:c_test", 1, "rule"),
                                ("//suites/streams:b_test", 1, "rule"),
                                ("//suites/hostalloc:a_test", 1, "family"),
                                ("//suites/model:d_test", 2, "sentinel")])

    def test_a_target_that_never_calls_the_faulty_entry_is_never_selected(self):
        plan = selection.select_for_fault(self.F, self.USABLE, self.CENSUS, {}, self.DUR, [])
        labels = [p[0] for p in plan]
        self.assertNotIn("//suites/model:e_test", labels)
        self.assertEqual([p[1:] for p in plan if p[0] == "//suites/model:d_test"], [(3, "sweep")])

    def test_select_all_runs_every_reached_target_in_the_first_phase(self):
        plan = selection.select_for_fault(self.F, self.USABLE, self.CENSUS, self.RULES, self.DUR,
                                         [], select="all")
        self.assertEqual({p[1] for p in plan}, {1})
        self.assertEqual(len(plan), 4)

    def test_sentinels_are_the_cheapest_targets_that_cover_the_most_entries(self):
        got = selection.pick_sentinels(self.USABLE, self.CENSUS, self.DUR,
                                      {"cuMemcpyHtoD", "cuCtxSynchronize", "cuMemHostAlloc"}, 3)
        # d (2 entries in 1 s) first, then b (adds cuCtxSynchronize); nothing else adds one.
        self.assertEqual(got, ["//suites/model:d_test", "//suites/streams:b_test"])

    def test_the_score_line_says_partial_or_not_run(self):
        self.assertEqual(scoring.score_line(None), "not run")
        s = scoring.score([{"verdict": v} for v in ["KILLED", "KILLED", "SURVIVED", "NOT_RUN"]])
        self.assertTrue(scoring.score_line(s).startswith("partial: 3 of 4 faults run; caught 2 of 3"))


class SplitScoreTest(unittest.TestCase):
    def test_each_half_is_scored_on_its_own_and_unnamed_faults_are_left_out(self):
        split = {"a": {"half": "tuning", "shape": "size"}, "b": {"half": "heldout", "shape": "size"},
                 "c": {"half": "heldout", "shape": "timing"}}
        results = [{"name": "a", "verdict": "KILLED"}, {"name": "b", "verdict": "SURVIVED"},
                   {"name": "c", "verdict": "HANDLED"}, {"name": "x", "verdict": "KILLED"}]
        halves = scoring.score_by(results, split, "half")
        self.assertEqual(list(halves), ["tuning", "heldout"])
        self.assertEqual((halves["tuning"]["counted"], halves["tuning"]["percent"]), (1, 100.0))
        self.assertEqual((halves["heldout"]["counted"], halves["heldout"]["percent"]), (2, 50.0))
        shapes = scoring.score_by(results, split, "shape")
        self.assertEqual((shapes["size"]["KILLED"], shapes["timing"]["HANDLED"]), (1, 1))

    def test_a_batch_is_scored_on_its_own_and_says_whether_it_is_blind(self):
        split = {"a": {"batch": "old", "blind": False}, "b": {"batch": "new", "blind": True},
                 "c": {"batch": "new", "blind": True}}
        results = [{"name": "a", "verdict": "KILLED"}, {"name": "b", "verdict": "SURVIVED"},
                   {"name": "c", "verdict": "KILLED"}]
        batches = scoring.score_by(results, split, "batch")
        self.assertEqual((batches["new"]["counted"], batches["new"]["percent"], batches["new"]["blind"]),
                         (2, 50.0, True))
        self.assertFalse(batches["old"]["blind"])

    def test_the_committed_split_records_each_batch_and_which_is_blind(self):
        # blind-9, blind-10 and blind-11 have had their first (blind) runs on the H200 and tests
        # were written for their survivors' families since, so none is blind. A new blind batch
        # is blind until its first run: blind-12 (16 faults) has had none.
        split = catalogue.load_split(os.path.join(ROOT, "no-bundle-here"))
        self.assertEqual(split["registered_reported_managed"]["batch"], "blind-9")
        self.assertEqual(split["htod_corrupts_last_byte"]["batch"], "catalogue-1")
        self.assertEqual(split["blocking_sync_event_elapsed_whole_ms"]["batch"], "blind-11")
        blind = {n for n, v in split.items() if v["blind"]}
        self.assertEqual(blind, {n for n, v in split.items() if v["batch"] == "blind-12"})
        self.assertEqual(len(blind), 16)
        self.assertTrue(split["vmm_host_release_frees_while_mapped"]["blind"])
        self.assertFalse(split["registered_reported_managed"]["blind"])
        self.assertFalse(split["captured_copy_node_short"]["blind"])

    def test_the_committed_split_names_every_catalogue_fault(self):
        names = {r["name"] for r in catalogue.read_tsv(os.path.join(ROOT, "tools/faults/catalogue.tsv"))}
        split = catalogue.load_split(os.path.join(ROOT, "no-bundle-here"))
        self.assertEqual(set(split) & names, names)

    def test_the_page_shows_the_held_out_score(self):
        doc = {"score": scoring.score([{"verdict": "KILLED"}]), "control": {"summary": "PASS=1", "unstable": []},
               "faults": [dict(FAULT, verdict="KILLED")],
               "score_by_half": {"heldout": dict(scoring.score([{"verdict": "KILLED"}]), line="caught 1 of 1")}}
        self.assertIn("Held out", pages.render_mutation_page(doc))

    def test_the_page_shows_a_blind_batch_score(self):
        one = dict(scoring.score([{"verdict": "KILLED"}]), line="caught 1 of 1 injected driver faults")
        doc = {"score": scoring.score([{"verdict": "KILLED"}]), "control": {"summary": "PASS=1", "unstable": []},
               "faults": [dict(FAULT, verdict="KILLED")], "score_by_half": {"heldout": one},
               "score_by_batch": {"blind-9": dict(one, blind=True), "old": dict(one, blind=False)}}
        page = pages.render_mutation_page(doc)
        self.assertIn("Blind batch blind-9", page)
        self.assertNotIn("Blind batch old", page)


class CapTest(unittest.TestCase):
    def test_a_variation_is_never_cut_below_three_times_its_control_but_a_fault_is(self):
        from types import SimpleNamespace
        from tools.mutation import schedule
        controls = SimpleNamespace(control={}, unstable=set(), dur={"//a:slow_test": 23.0})
        by_fault = {"f": dict(FAULT, name="f"), "v": dict(FAULT, name="v", catalogue="conforming", kind="code"),
                    "t": dict(FAULT, name="t", catalogue="conforming", kind="timing")}
        sched = schedule.Schedule(None, by_fault, {}, controls, 45)
        self.assertEqual(sched.cap_for("//a:slow_test", "f"), 45)
        self.assertEqual(sched.cap_for("//a:slow_test", "v"), 79.0)
        self.assertEqual(sched.cap_for("//a:slow_test", "t"), 158.0)
        # Raising --target-timeout raises a timing variation's limit, as its NOT_RUN note says.
        self.assertEqual(schedule.Schedule(None, by_fault, {}, controls, 400).cap_for("//a:slow_test", "t"), 400)


class SurvivorNotesTest(unittest.TestCase):
    def test_every_survivor_note_names_a_catalogue_fault_and_explains_it(self):
        names = {r["name"] for r in catalogue.read_tsv(os.path.join(ROOT, "tools/faults/catalogue.tsv"))}
        notes = catalogue.read_tsv(os.path.join(ROOT, "tools/faults/survivors.tsv"))
        for row in notes:
            self.assertIn(row["name"], names)
            self.assertGreater(len(row["explanation"]), 40, row["name"])


class UsageTest(unittest.TestCase):
    def test_a_folder_that_is_not_a_bundle_exits_2(self):
        d = tempfile.mkdtemp()
        try:
            rc, _, err = quiet(mutation.main, [d, "--out", os.path.join(d, "o")])
            self.assertEqual(rc, 2)
            self.assertIn("not a bundle", err)
        finally:
            shutil.rmtree(d)


class CorruptShimTest(unittest.TestCase):
    """A bundle whose shim will not load (truncated, another architecture) gets a rebuilt one
    (reliability review 3, row 19 / B32), never a run where every control looks broken."""

    def test_a_corrupt_shim_in_the_bundle_is_rebuilt(self):
        d = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        os.makedirs(os.path.join(d, "b", "faults"))
        with open(os.path.join(d, "b", "faults", "libcuda.so.1"), "wb") as f:
            f.write(b"\x7fELF" + b"x" * 996)
        self.assertIn("dlopen failed", catalogue.shim_unloadable(os.path.join(d, "b", "faults", "libcuda.so.1")))
        if not os.path.isfile(os.path.join(catalogue.REPO, "tools", "faults", "build_shim.sh")):
            self.skipTest("no tools/faults/build_shim.sh in this tree")
        try:
            got = catalogue.find_shim(os.path.join(d, "b"), None, d)
        except catalogue.UsageError as e:
            self.skipTest(f"the shim cannot be built here: {e}")
        self.assertEqual(got, os.path.join(d, "shimlib"))
        self.assertIsNone(catalogue.shim_unloadable(os.path.join(got, "libcuda.so.1")))


class EndToEndTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mutation_test_")
        shim, fake = shim_and_fake(cls.tmp)
        cls.bundle = make_bundle(cls.tmp, shim)
        os.environ["PAGELOCK_REAL_LIBCUDA"] = fake

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)
        os.environ.pop("PAGELOCK_REAL_LIBCUDA", None)

    def test_unknown_fault_name_exits_2(self):
        rc, _, err = quiet(mutation.main, [self.bundle, "--out", os.path.join(self.tmp, "bad"),
                                           "--faults", "no_such_fault"])
        self.assertEqual(rc, 2)
        self.assertIn("unknown fault(s): no_such_fault", err)

    def test_mutation_run_classifies_each_fault(self):
        out = os.path.join(self.tmp, "out")
        faults = ["htod_corrupts_last_byte", "hostalloc_out_of_memory", "cap_cannot_map_host",
                  "ctx_sync_returns_early", "register_overlap_accepted"]
        rc, stdout, err = quiet(mutation.main, [self.bundle, "--out", out, "--faults", ",".join(faults),
                                                "--jobs", "3", "--target-timeout", "30"])
        self.assertEqual(rc, 0, stdout + err)
        with open(os.path.join(out, "mutation.json")) as f:
            doc = json.load(f)
        verdicts = {r["name"]: r["verdict"] for r in doc["faults"]}
        self.assertEqual(verdicts, {"htod_corrupts_last_byte": "KILLED",
                                    "hostalloc_out_of_memory": "KILLED",
                                    "cap_cannot_map_host": "HANDLED",
                                    "ctx_sync_returns_early": "SURVIVED",
                                    "register_overlap_accepted": "SURVIVED"})
        by = {r["name"]: r for r in doc["faults"]}
        self.assertEqual([c["case"] for c in by["htod_corrupts_last_byte"]["caught_by"]],
                         ["fake:fake_suite/FakeSuite.CopyDeliversEveryByte"])
        self.assertEqual(by["ctx_sync_returns_early"]["reached"], ["cuCtxSynchronize"])
        self.assertIn("never checks data", by["ctx_sync_returns_early"]["explanation"])
        self.assertIn("never reached", by["register_overlap_accepted"]["note"])
        self.assertEqual(doc["score"]["percent"], 60.0)
        self.assertEqual(doc["control"]["summary"], "PASS=3")
        control = os.path.join(out, "runs", "control", "fake__fake_suite")
        self.assertEqual(sorted(os.listdir(control)), ["fault.log", "runner.out"])
        with open(os.path.join(control, "fault.log")) as f:
            self.assertEqual({l.split("\t")[1] for l in f}, {"init", "fired"})  # no requests
        self.assertEqual(doc["control"]["census"]["//fake:fake_suite"],
                         ["cuCtxSynchronize", "cuDeviceGetAttribute", "cuMemHostAlloc", "cuMemcpyHtoD"])
        self.assertEqual(by["register_overlap_accepted"]["targets"], [])
        with open(os.path.join(out, "mutation.html")) as f:
            text = f.read()
        self.assertIn("caught 3 of 5 injected driver faults (60.0%)", text)


class ScheduleTest(unittest.TestCase):
    """Two targets: //fake:fake_suite names the rules, //fake:fake_norules (the same binary)
    names none, so the rule selection runs it last, in the sweep."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mutation_sched_")
        shim, fake = shim_and_fake(cls.tmp)
        cls.bundle = make_bundle(cls.tmp, shim, second=True)
        os.environ["PAGELOCK_REAL_LIBCUDA"] = fake

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)
        os.environ.pop("PAGELOCK_REAL_LIBCUDA", None)

    def run_tool(self, out, *extra):
        rc, stdout, err = quiet(mutation.main, [self.bundle, "--out", out, "--faults",
                                                "htod_corrupts_last_byte,ctx_sync_returns_early",
                                                "--jobs", "1", "--sentinels", "0", *extra])
        self.assertEqual(rc, 0, stdout + err)
        with open(os.path.join(out, "mutation.json")) as f:
            doc = json.load(f)
        return doc, {r["name"]: r for r in doc["faults"]}

    def test_a_caught_fault_skips_its_remaining_targets_and_says_which_it_ran(self):
        doc, by = self.run_tool(os.path.join(self.tmp, "early"), "--control-runs", "1")
        self.assertEqual(doc["control"]["runs"], ["control"])
        self.assertEqual(doc["control"]["target_rules"]["//fake:fake_suite"], ["R76", "R77", "R85"])
        htod = by["htod_corrupts_last_byte"]
        self.assertEqual(htod["verdict"], "KILLED")
        self.assertEqual(htod["targets_run"], ["//fake:fake_suite"])
        self.assertEqual([(p["target"], p["phase"], p["why"], p["outcome"]) for p in htod["target_plan"]],
                         [("//fake:fake_suite", 1, "rule", "ran"),
                          ("//fake:fake_norules", 3, "sweep", "not needed (already caught)")])
        # A survivor ran every target it reaches: the selection hid nothing.
        sync = by["ctx_sync_returns_early"]
        self.assertEqual(sync["verdict"], "SURVIVED")
        self.assertEqual(sorted(sync["targets_run"]), ["//fake:fake_norules", "//fake:fake_suite"])
        self.assertEqual(doc["config"]["fault_runs"], 3)

    def test_select_all_runs_every_reached_target_of_a_caught_fault(self):
        _, by = self.run_tool(os.path.join(self.tmp, "all"), "--control-runs", "1", "--select", "all")
        self.assertEqual(by["htod_corrupts_last_byte"]["target_plan"][1]["phase"], 1)

    def test_a_reference_run_stands_in_for_the_second_control(self):
        # The reference (e.g. qualify's own run) saw the copy case fail: it is unstable, so the
        # copy fault it would catch is not counted as caught through it.
        ref = os.path.join(self.tmp, "ref")
        os.makedirs(os.path.join(ref, "fake", "fake_suite"))
        with open(os.path.join(ref, "fake", "fake_suite", "test.xml"), "w") as f:
            f.write('<?xml version="1.0"?><testsuites name="AllTests" tests="1"><testsuite '
                    'name="FakeSuite" tests="1"><testcase name="CopyDeliversEveryByte" '
                    'classname="FakeSuite" status="run" result="completed" time="0.1">'
                    '<failure message="flaky">flaky</failure></testcase></testsuite></testsuites>')
        doc, by = self.run_tool(os.path.join(self.tmp, "withref"), "--reference", ref)
        self.assertEqual(doc["control"]["runs"], ["control"])
        self.assertEqual(doc["control"]["unstable"], ["fake:fake_suite/FakeSuite.CopyDeliversEveryByte"])
        # Not caught through fake_suite's unstable case: only the sweep target caught it.
        htod = by["htod_corrupts_last_byte"]
        self.assertEqual([c["case"] for c in htod["caught_by"]],
                         ["fake:fake_norules/FakeSuite.CopyDeliversEveryByte"])
        self.assertEqual(htod["targets_run"], ["//fake:fake_suite", "//fake:fake_norules"])

    def test_a_missing_reference_folder_exits_2(self):
        rc, _, err = quiet(mutation.main, [self.bundle, "--out", os.path.join(self.tmp, "x"),
                                           "--reference", os.path.join(self.tmp, "nope")])
        self.assertEqual(rc, 2)
        self.assertIn("--reference", err)


VARIATION = {"name": "v", "rule": "R44", "family": "hostregister", "kind": "code",
             "description": "d.", "justification": "q", "catalogue": "conforming"}
V_LOADED = (["fault=v"], ["cuMemHostRegister"], [])
CHANGED = dict(META, changed=["cuMemHostRegister IOMEMORY on ordinary memory"], target="//a:t")


class VariationVerdictTest(unittest.TestCase):
    def test_a_case_that_fails_under_a_variation_that_changed_an_answer_is_a_false_alarm(self):
        statuses = {"a": ("FAIL", "", "returned 800, expected 1"), "b": ("PASS", "", "")}
        r = false_alarms.classify_variation(VARIATION, [(CHANGED, statuses, V_LOADED, st(a="PASS", b="PASS"))], set())
        self.assertEqual(r["verdict"], "FALSE_ALARM")
        self.assertEqual(r["false_alarms"], [{"case": "a", "target": "//a:t", "control": "PASS",
                                              "status": "FAIL", "message": "returned 800, expected 1"}])

    def test_a_crash_or_a_missing_case_is_a_false_alarm_too(self):
        r = false_alarms.classify_variation(VARIATION, [(CHANGED, st(a="CRASH"), V_LOADED, st(a="PASS", b="WARN"))], set())
        self.assertEqual([(c["case"], c["status"]) for c in r["false_alarms"]], [("a", "CRASH"), ("b", "MISSING")])

    def test_changed_answers_and_nothing_broken_conform(self):
        r = false_alarms.classify_variation(VARIATION, [(CHANGED, st(a="PASS", b="NOT_SUPPORTED"), V_LOADED,
                                                     st(a="PASS", b="PASS"))], set())
        self.assertEqual(r["verdict"], "CONFORMS")
        self.assertEqual(len(r["not_supported_cases"]), 1)

    def test_a_variation_that_changed_nothing_proves_nothing(self):
        r = false_alarms.classify_variation(VARIATION, [(META, st(a="FAIL"), V_LOADED, st(a="PASS"))], set())
        self.assertEqual(r["verdict"], "NOT_EXERCISED")
        self.assertEqual(r["false_alarms"], [])
        self.assertEqual([c["case"] for c in r["failed_without_change"]], ["a"])

    def test_unstable_cases_and_cases_the_control_failed_are_no_false_alarms(self):
        r = false_alarms.classify_variation(VARIATION, [(CHANGED, st(a="FAIL", b="FAIL"), V_LOADED,
                                                     st(a="PASS", b="FAIL"))], {"a"})
        self.assertEqual(r["verdict"], "CONFORMS")

    def test_a_timing_variation_that_runs_past_the_tools_limit_is_not_run_not_a_false_alarm(self):
        timing = dict(VARIATION, kind="timing")
        hung = dict(CHANGED, timed_out=True)
        r = false_alarms.classify_variation(timing, [(hung, st(a="PASS"), V_LOADED, st(a="PASS", b="PASS"))], set())
        self.assertEqual(r["verdict"], "NOT_RUN")
        self.assertEqual([c["case"] for c in r["past_the_time_limit"]], ["b"])
        self.assertIn("--target-timeout", r["note"])
        # Any other variation that hangs a binary: a false alarm (the suite hung).
        r = false_alarms.classify_variation(VARIATION, [(hung, st(a="PASS"), V_LOADED, st(a="PASS", b="PASS"))], set())
        self.assertEqual(r["verdict"], "FALSE_ALARM")

    def test_a_variation_the_shim_never_loaded_is_an_error(self):
        r = false_alarms.classify_variation(VARIATION, [(CHANGED, st(a="FAIL"), ([], [], ["unknown fault v"]),
                                                     st(a="PASS"))], set())
        self.assertEqual(r["verdict"], "ERROR")

    def test_the_summary_counts_false_alarm_cases_and_variations(self):
        vs = [dict(verdict="FALSE_ALARM", name="x", false_alarms=[{"case": "a"}, {"case": "b"}]),
              dict(verdict="CONFORMS", name="y", false_alarms=[]),
              dict(verdict="NOT_EXERCISED", name="z", false_alarms=[])]
        fa = false_alarms.false_alarm_summary(vs)
        self.assertEqual((fa["count"], fa["variations_with_false_alarms"], fa["variations"]), (2, 1, 3))
        self.assertEqual(fa["by_variation"]["x"][1], {"case": "b", "variation": "x"})
        self.assertEqual(fa["line"], "2 false alarm(s) from 1 of 3 conforming variations: "
                                     "1 conform, 1 not exercised")

    def test_a_variation_runs_only_the_binaries_of_its_rules_and_family(self):
        v = dict(VARIATION, rule="R51,R76", family="model", entries="cuMemcpyHtoD")
        plan = selection.select_for_fault(v, SelectionTest.USABLE, SelectionTest.CENSUS,
                                         SelectionTest.RULES, SelectionTest.DUR, ["//suites/hostalloc:a_test"])
        self.assertEqual(plan, [("//suites/devptr:c_test", 1, "rule"), ("//suites/streams:b_test", 1, "rule"),
                                ("//suites/model:d_test", 1, "family")])
        every = selection.select_for_fault(v, SelectionTest.USABLE, SelectionTest.CENSUS,
                                          SelectionTest.RULES, SelectionTest.DUR, [], select="all")
        self.assertEqual(len(every), 4)


class VariationScopeTest(unittest.TestCase):
    """A variation's scope (conforming.tsv's targets, excluded and env columns): the shim changes
    answers, not hardware, so a variation may name the cases it cannot make conform on the real
    device, the targets it may run and its runs' environment."""

    def test_a_variation_that_names_its_targets_reaches_no_other_even_with_select_all(self):
        v = dict(VARIATION, rule="R51,R76", family="model", entries="cuMemcpyHtoD",
                 targets="^//suites/(devptr|model):")
        for select in ("rules", "all"):
            plan = selection.select_for_fault(v, SelectionTest.USABLE, SelectionTest.CENSUS,
                                             SelectionTest.RULES, SelectionTest.DUR, [], select=select)
            self.assertEqual(sorted(l for l, _, _ in plan), ["//suites/devptr:c_test", "//suites/model:d_test"])
        # A fault's row has no such column: the scope is a variation's alone.
        f = dict(FAULT, entries="cuMemcpyHtoD", targets="^//nothing:")
        self.assertEqual(len(selection.select_for_fault(f, SelectionTest.USABLE, SelectionTest.CENSUS,
                                                        SelectionTest.RULES, SelectionTest.DUR, [],
                                                        select="all")), 4)

    def test_an_excluded_case_is_listed_and_never_judged(self):
        v = dict(VARIATION, excluded="KernelTest.ReadsMallocMemory: the GPU cannot; "
                                     "Gate*.Ats*: attribute 86 stays 0")
        statuses = {"suites/p:p_test/KernelTest.ReadsMallocMemory": ("FAIL", "", "illegal address"),
                    "suites/h:h_test/Kinds/GateTest.AtsRegisters/Heap": ("FAIL", "", "86 is 0"),
                    "suites/p:p_test/KernelTest.ReadsMallocMemoryToo": ("FAIL", "", "a real one")}
        control = {k: ("PASS", "", "") for k in statuses}
        r = false_alarms.classify_variation(v, [(CHANGED, statuses, V_LOADED, control)], set())
        self.assertEqual(r["verdict"], "FALSE_ALARM")
        self.assertEqual([c["case"] for c in r["false_alarms"]], ["suites/p:p_test/KernelTest.ReadsMallocMemoryToo"])
        self.assertEqual([(c["case"], c["excluded_by"], c["status"]) for c in r["excluded_cases"]],
                         [("suites/p:p_test/KernelTest.ReadsMallocMemory", "KernelTest.ReadsMallocMemory", "FAIL"),
                          ("suites/h:h_test/Kinds/GateTest.AtsRegisters/Heap", "Gate*.Ats*", "FAIL")])
        del statuses["suites/p:p_test/KernelTest.ReadsMallocMemoryToo"]
        r = false_alarms.classify_variation(v, [(CHANGED, statuses, V_LOADED, {k: control[k] for k in statuses})], set())
        self.assertEqual(r["verdict"], "CONFORMS")
        self.assertIn("2 excluded case(s) not judged", r["note"])

    def test_a_variation_with_an_environment_changed_every_run_it_made(self):
        v = dict(VARIATION, env="PAGELOCK_DEVIATIONS=none")
        r = false_alarms.classify_variation(v, [(META, st(a="FAIL"), V_LOADED, st(a="PASS"))], set())
        self.assertEqual(r["verdict"], "FALSE_ALARM")  # a strict check failed: not "unexplained"
        self.assertIn("its runs' environment: PAGELOCK_DEVIATIONS=none", r["changed"])
        r = false_alarms.classify_variation(v, [(META, st(a="PASS"), V_LOADED, st(a="PASS"))], set())
        self.assertEqual(r["verdict"], "CONFORMS")

    def test_the_environment_reaches_the_run_on_top_of_the_tools(self):
        from tools.mutation import runs
        env = runs.shim_env("/shim", "/out", "v", {"PAGELOCK_DEVIATIONS": "none"})
        self.assertEqual((env["PAGELOCK_DEVIATIONS"], env["PAGELOCK_FAULT"]), ("none", "v"))
        self.assertNotIn("PAGELOCK_DEVIATIONS", runs.shim_env("/shim", "/out", "f"))

    def test_the_schedule_hands_a_variation_its_environment(self):
        from types import SimpleNamespace
        from tools.mutation import schedule
        asked = []
        fake_runs = SimpleNamespace(deadline=float("inf"), job=lambda *a: asked.append(a) or (
            dict(META, target=a[2]["label"]), {}, V_LOADED))
        controls = SimpleNamespace(control={}, unstable=set(), dur={"//a:t": 1.0})
        by_fault = {"v": dict(VARIATION, env="PAGELOCK_DEVIATIONS=none"), "w": dict(VARIATION, name="w")}
        sched = schedule.Schedule(fake_runs, by_fault, {"//a:t": {"label": "//a:t"}}, controls, 45)
        sched.run([("v", "//a:t", 1), ("w", "//a:t", 1)], 1)
        self.assertEqual(sorted((a[0], a[5]) for a in asked), [("v", {"PAGELOCK_DEVIATIONS": "none"}), ("w", {})])

    def test_a_malformed_scope_is_bad_usage_naming_the_variation(self):
        d = tempfile.mkdtemp()
        try:
            head = "name\trule\tfamily\tkind\tentries\tdescription\tjustification\ttargets\texcluded\tenv\n"
            for cells, what in ((("(", "", ""), "targets '('"), (("", "Suite.Case", ""), "excluded 'Suite.Case'"),
                                (("", "", "NOVALUE"), "env 'NOVALUE'")):
                path = os.path.join(d, "c.tsv")
                with open(path, "w") as f:
                    f.write(head + "\t".join(["x", "R44", "f", "code", "cuInit", "d.", "q", *cells]) + "\n")
                with self.assertRaises(catalogue.UsageError) as e:
                    catalogue.read_catalogue(path)
                self.assertIn("x: " + what, str(e.exception))
        finally:
            shutil.rmtree(d)

    def test_the_committed_platform_variations_parse_and_scope_as_documented(self):
        rows = {r["name"]: r for r in catalogue.read_catalogue(os.path.join(ROOT, "tools/faults/conforming.tsv"))}
        self.assertEqual(catalogue.target_scope(rows["host_atomics_native_basic_only"]).pattern,
                         "^//suites/platform:capability_consistency_test$")
        r107 = "suites/platform:capability_consistency_test/CapabilityConsistencyTest." \
               "PageableMemoryAccessAgreesWithAKernelReadingMallocMemory"
        self.assertTrue(catalogue.excluded_by(r107, catalogue.excluded_cases(rows["host_link_c2c_ats"])))
        self.assertTrue(catalogue.target_scope(rows["heap_byte_known_with_pageable_access"]).search(
            "//suites/interior:pointer_queries_test"))
        self.assertEqual(catalogue.run_env(rows["driver_without_r580_deviations"]), {"PAGELOCK_DEVIATIONS": "none"})
        # An older conforming.tsv without the columns reads as no scope.
        self.assertEqual((catalogue.target_scope({}), catalogue.excluded_cases({}), catalogue.run_env({})),
                         (None, [], {}))


class CatalogueChoiceTest(unittest.TestCase):
    def test_named_catalogues_come_from_the_bundle_or_the_tool(self):
        d = tempfile.mkdtemp()
        try:
            rows, path = catalogue.load_catalogue(d, "conforming")  # the repo's copy
            self.assertTrue(path.endswith("tools/faults/conforming.tsv"))
            self.assertGreaterEqual(len(rows), 15)
            self.assertTrue(all(catalogue.is_variation(r) and r["justification"] for r in rows))
            both, _ = catalogue.load_catalogue(d, "both")
            self.assertEqual(len(both), len(rows) + len(catalogue.load_catalogue(d, "faults")[0]))
            self.assertFalse(any(catalogue.is_variation(r) for r in catalogue.load_catalogue(d, None)[0]))
        finally:
            shutil.rmtree(d)

    def test_a_catalogue_that_is_neither_a_name_nor_a_file_is_bad_usage(self):
        d = tempfile.mkdtemp()
        try:
            with self.assertRaises(catalogue.UsageError):
                catalogue.load_catalogue(d, os.path.join(d, "nope.tsv"))
        finally:
            shutil.rmtree(d)

    def test_variation_names_are_distinct_from_fault_names(self):
        d = tempfile.mkdtemp()
        try:
            names = [r["name"] for r in catalogue.load_catalogue(d, "both")[0]]
            self.assertEqual(len(names), len(set(names)))
        finally:
            shutil.rmtree(d)


class FalseAlarmEndToEndTest(unittest.TestCase):
    """The fake bundle with //fake:fake_conforming: one of its cases pins r580's IoMemory code."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mutation_conforming_")
        shim, fake = shim_and_fake(cls.tmp)
        cls.bundle = make_bundle(cls.tmp, shim, conforming=True)
        os.environ["PAGELOCK_REAL_LIBCUDA"] = fake

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)
        os.environ.pop("PAGELOCK_REAL_LIBCUDA", None)

    def run_tool(self, out, catalogue, names):
        rc, stdout, err = quiet(mutation.main, [self.bundle, "--out", out, "--catalogue", catalogue,
                                                "--faults", ",".join(names), "--jobs", "3",
                                                "--control-runs", "1"])
        with open(os.path.join(out, "mutation.json")) as f:
            return rc, stdout + err, json.load(f)

    def test_a_suite_that_pins_the_r580_code_raises_a_false_alarm_and_exits_3(self):
        out = os.path.join(self.tmp, "conforming")
        rc, text, doc = self.run_tool(out, "conforming", [
            "iomemory_on_ram_not_permitted", "no_read_only_register", "completion_delayed"])
        self.assertEqual(rc, 3, text)
        by = {v["name"]: v for v in doc["variations"]}
        self.assertEqual({k: v["verdict"] for k, v in by.items()},
                         {"iomemory_on_ram_not_permitted": "FALSE_ALARM",
                          "no_read_only_register": "CONFORMS",
                          "completion_delayed": "NOT_EXERCISED"})
        alarms = doc["false_alarms"]
        self.assertEqual(alarms["count"], 1)
        self.assertEqual([(c["case"], c["status"], c["message"])
                          for c in alarms["by_variation"]["iomemory_on_ram_not_permitted"]],
                         [("fake:fake_conforming/FakeSuite.IoMemoryPinsTheR580Code", "FAIL",
                           "IoMemory on RAM returned 800, expected 1")])
        self.assertEqual(by["iomemory_on_ram_not_permitted"]["targets_run"], ["//fake:fake_conforming"])
        self.assertIn("capability attribute answered 0", by["no_read_only_register"]["changed"])
        self.assertEqual([c["case"] for c in by["no_read_only_register"]["not_supported_cases"]],
                         ["fake:fake_conforming/FakeSuite.ReadOnlyNeedsItsCapability"])
        self.assertEqual(doc["faults"], [])  # variations never count in the mutation score
        self.assertIn("1 false alarm(s) from 1 of 3 conforming variations", text)
        self.assertIn("false alarm: fake:fake_conforming/FakeSuite.IoMemoryPinsTheR580Code", text)
        with open(os.path.join(out, "mutation.html")) as f:
            html_text = f.read()
        self.assertIn("False alarms: conforming variations", html_text)
        self.assertIn("No injected faults were run", html_text)

    def test_a_variations_excluded_case_and_targets_scope_the_run(self):
        rows = catalogue.read_tsv(os.path.join(ROOT, "tools/faults/conforming.tsv"))
        row = next(r for r in rows if r["name"] == "iomemory_on_ram_not_permitted")
        path = os.path.join(self.tmp, "scoped.tsv")
        with open(path, "w") as f:
            f.write("\t".join(row) + "\n")
            # The false alarm of the test above, excluded with its reason; then the same variation
            # scoped to a target it does not reach.
            f.write("\t".join(dict(row, excluded="FakeSuite.IoMemoryPinsTheR580Code: pins r580's code").values()) + "\n")
        rc, text, doc = self.run_tool(os.path.join(self.tmp, "scoped"), path, ["iomemory_on_ram_not_permitted"])
        self.assertEqual(rc, 0, text)
        v = doc["variations"][0]
        self.assertEqual(v["verdict"], "CONFORMS")
        self.assertEqual([(c["case"], c["status"], c["why"]) for c in v["excluded_cases"]],
                         [("fake:fake_conforming/FakeSuite.IoMemoryPinsTheR580Code", "FAIL", "pins r580's code")])
        self.assertEqual(v["excluded"], [{"pattern": "FakeSuite.IoMemoryPinsTheR580Code", "why": "pins r580's code"}])
        with open(path, "w") as f:
            f.write("\t".join(row) + "\n" + "\t".join(dict(row, targets="^//fake:fake_suite$").values()) + "\n")
        rc, text, doc = self.run_tool(os.path.join(self.tmp, "targeted"), path, ["iomemory_on_ram_not_permitted"])
        v = doc["variations"][0]
        # fake_suite never registers memory: outside its scope, the variation reaches nothing.
        self.assertEqual((rc, v["verdict"], v["targets_run"], v["target_scope"]),
                         (0, "NOT_EXERCISED", [], "^//fake:fake_suite$"), text)
        self.assertIn("it runs only targets matching ^//fake:fake_suite$", v["note"])

    def test_both_catalogues_in_one_run_keep_the_score_and_the_false_alarms_apart(self):
        rc, text, doc = self.run_tool(os.path.join(self.tmp, "both"), "both",
                                      ["htod_corrupts_last_byte", "iomemory_on_ram_not_supported"])
        self.assertEqual(rc, 3, text)
        self.assertEqual([(r["name"], r["verdict"]) for r in doc["faults"]],
                         [("htod_corrupts_last_byte", "KILLED")])
        self.assertEqual(doc["score"]["counted"], 1)
        self.assertEqual(doc["false_alarms"]["verdicts"]["FALSE_ALARM"], 1)

    def test_a_variation_asked_for_in_the_fault_catalogue_is_bad_usage_with_a_hint(self):
        rc, _, err = quiet(mutation.main, [self.bundle, "--out", os.path.join(self.tmp, "hint"),
                                           "--faults", "zero_size_allocates"])
        self.assertEqual(rc, 2)
        self.assertIn("--catalogue conforming or both has zero_size_allocates", err)

    def test_a_bundle_without_conforming_tsv_falls_back_to_the_tools_copy(self):
        os.rename(os.path.join(self.bundle, "faults/conforming.tsv"),
                  os.path.join(self.bundle, "faults/conforming.tsv.away"))
        try:
            rows, path = catalogue.load_catalogue(self.bundle, "conforming")
            self.assertTrue(path.startswith(ROOT))
        finally:
            os.rename(os.path.join(self.bundle, "faults/conforming.tsv.away"),
                      os.path.join(self.bundle, "faults/conforming.tsv"))

if __name__ == "__main__":
    unittest.main()
