"""A new GPU, driver or host: known deviations selected by what causes them (driver branch,
runtime, host facts, SKU), entries known only elsewhere judged as the rule and said so, a
baseline of another SKU or host compared on what is comparable, the not-run reasons grouped
with their fixes, and a first night's facts."""

import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.platform_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import compare as cmp
from reports import coverage_reasons
from reports import expectations as expect
from reports import first_night
from reports import model

T = "//suites/a:a_test"
H200 = {"gpu0_name": "NVIDIA H200", "nvidia_driver": "580.159.04", "cuda_runtime_version": "13000",
        "host": "lab-1", "host_facts": "hugetlb-2m-pool,memory-cgroup"}
H100 = dict(H200, gpu0_name="NVIDIA H100 80GB HBM3", host="lab-2", host_facts="memory-cgroup")


def case(name, status, message="", reason=""):
    c = model.Case.from_raw(T, "S", name, status, 0.1, message or ("boom" if status in model.FAILING else ""),
                            "", {})
    c.reason = reason
    return c


def run(*cases, **fp):
    return model.Run(dict({"seed": "7", "device_status": "usable", "gpu_count": "1"}, **fp), list(cases))


def exps(text, sku=None):
    return expect.Expectations(expect.parse(text, "common.txt", sku))


DRIVER_ENTRY = "fail suites/a:a_test/S.Flags driver=580 message=*returned_0x2* bug=docs/platforms/driver-r580.md#r58\n"


class SelectionTest(unittest.TestCase):
    def test_a_driver_deviation_applies_to_every_sku_on_its_branch(self):
        e = exps(DRIVER_ENTRY)
        for fp in (H200, H100):
            c = cmp.compare(run(case("Flags", "FAIL", "cudaHostGetFlags returned 0x2"), **fp), e, None)
            self.assertEqual(c.status["suites/a:a_test/S.Flags"], "EXPECTED_FAIL", fp["gpu0_name"])
            self.assertEqual(c.exit_code, cmp.EXIT_QUALIFIED)
            self.assertEqual([(x.anchor, n) for x, n in c.applied], [("r58", 1)])

    def test_another_branch_judges_the_case_as_the_rule_and_says_so(self):
        c = cmp.compare(run(case("Flags", "FAIL", "cudaHostGetFlags returned 0x2"),
                            **dict(H100, nvidia_driver="550.54.15")), exps(DRIVER_ENTRY), None)
        self.assertEqual(c.status["suites/a:a_test/S.Flags"], "REGRESSION")
        self.assertIn("r58 known on driver 580 (common.txt:1); this driver 550.54.15: judged as the rule",
                      c.notes["suites/a:a_test/S.Flags"])
        self.assertEqual(c.exit_code, cmp.EXIT_REGRESSION)
        doc = c.to_json()["expectations_elsewhere"]
        self.assertEqual([(d["entry"], d["why_not_here"], d["cases"]) for d in doc],
                         [("common.txt:1", "this driver 550.54.15", 1)])

    def test_an_entry_known_elsewhere_is_not_stale_and_a_passing_case_is_no_surprise(self):
        c = cmp.compare(run(case("Flags", "PASS"), **dict(H100, nvidia_driver="590.1")), exps(DRIVER_ENTRY), None)
        self.assertEqual(c.stale, [])
        self.assertEqual(c.exit_code, cmp.EXIT_QUALIFIED)
        self.assertEqual(len(c.elsewhere), 1)

    def test_runtime_host_and_sku_conditions_select(self):
        e = exps("fail suites/a:a_test/S.R runtime=>=11.8,<13.1 bug=d#r90\n"
                 "fail suites/a:a_test/S.C driver=580 host=memory-cgroup bug=d#c06\n"
                 "fail suites/a:a_test/S.G sku=nvidia-h100-* bug=d#gpu\n")
        cases = [case("R", "FAIL"), case("C", "FAIL"), case("G", "FAIL")]
        on = cmp.compare(run(*cases, **H100), e, None)
        self.assertEqual(set(on.status.values()), {model.Change.EXPECTED_FAIL})
        off = cmp.compare(run(*cases, **dict(H200, cuda_runtime_version="13010", host_facts="")), e, None)
        self.assertEqual(set(off.status.values()), {model.Change.REGRESSION})
        why = sorted(w for _, w, _ in off.elsewhere)
        self.assertEqual(why, ["this SKU nvidia-h200", "this host lacks memory-cgroup", "this runtime 13.1"])

    def test_an_older_run_without_host_facts_admits_no_host_condition(self):
        fp = {k: v for k, v in H200.items() if k != "host_facts"}
        c = cmp.compare(run(case("C", "FAIL"), **fp), exps("fail suites/a:a_test/S.C host=memory-cgroup bug=d#c06"), None)
        self.assertEqual(c.status["suites/a:a_test/S.C"], "REGRESSION")
        self.assertIn("records no host facts", c.notes["suites/a:a_test/S.C"])


class ComparableTest(unittest.TestCase):
    HUGE = "mmap(hugetlb) failed: Cannot allocate memory (/proc/meminfo HugePages_Free=0?)"

    def test_a_baseline_of_another_sku_and_host_is_compared_on_what_is_comparable(self):
        base = run(case("Huge", "PASS"), case("Plain", "PASS"), **H200)
        now = run(case("Huge", "NOT_SUPPORTED", reason=self.HUGE), case("Plain", "PASS"), **H100)
        c = cmp.compare(now, exps(""), base)
        self.assertEqual(c.status["suites/a:a_test/S.Huge"], "PLATFORM_DIFFERS")
        self.assertIn("host setup differs", c.notes["suites/a:a_test/S.Huge"])
        self.assertIn("tools/labhost prepare", c.notes["suites/a:a_test/S.Huge"])
        self.assertEqual([(k, str(s)) for k, s, _ in c.machine], [("fingerprint:gpu0_name", "PLATFORM_DIFFERS")])
        self.assertEqual(c.exit_code, cmp.EXIT_QUALIFIED)

    def test_the_same_host_losing_its_setup_is_lost_coverage(self):
        base = run(case("Huge", "PASS"), **H200)
        now = run(case("Huge", "NOT_SUPPORTED", reason=self.HUGE), **H200)
        c = cmp.compare(now, exps(""), base)
        self.assertEqual(c.status["suites/a:a_test/S.Huge"], "COVERAGE_LOST")
        self.assertEqual(c.exit_code, cmp.EXIT_COVERAGE_LOST)

    def test_the_same_host_that_lost_its_pool_overnight_is_lost_coverage_with_the_fix(self):
        base = run(case("Huge", "PASS"), **H200)
        pool_gone = run(case("Huge", "NOT_SUPPORTED", reason=self.HUGE), **dict(H200, host_facts="memory-cgroup"))
        c = cmp.compare(pool_gone, exps(""), base)
        self.assertEqual(c.status["suites/a:a_test/S.Huge"], "COVERAGE_LOST")
        self.assertIn("to enable it: tools/labhost prepare --hugetlb-2m 1024", c.notes["suites/a:a_test/S.Huge"])

    def test_a_capability_or_a_failure_is_never_excused_by_another_host_alone(self):
        base = run(case("Cap", "PASS"), case("Bad", "PASS"), **H200)
        now = run(case("Cap", "NOT_SUPPORTED", reason="cudaDevAttrHostRegisterSupported=0 (need 1)"),
                  case("Bad", "FAIL"), **dict(H200, host="lab-9"))
        c = cmp.compare(now, exps(""), base)
        self.assertEqual(c.status["suites/a:a_test/S.Cap"], "COVERAGE_LOST")  # same SKU: the capability was lost
        self.assertEqual(c.status["suites/a:a_test/S.Bad"], "REGRESSION")


class RateFloorTest(unittest.TestCase):
    def rated(self, value, **fp):
        c = case("Bw", "PASS")
        c.metrics = {"h2d_pinned_ce_GBps": model.Metric(value, "GB/s"), "h2d_bidir_ce_GBps": model.Metric(value, "GB/s")}
        return run(c, **dict(dict(H200, gpu0_pcie_link="gen5 x16 (max gen5 x16)"), **fp))

    def test_a_halved_dma_rate_fails_against_the_baseline_of_the_same_sku_and_link(self):
        c = cmp.compare(self.rated(27.0), exps(""), self.rated(55.5))
        self.assertEqual(c.status["suites/a:a_test/S.Bw"], "REGRESSION")
        self.assertIn("h2d_pinned_ce_GBps 27.00 GB/s is below 80% of the baseline's 55.50 GB/s",
                      c.notes["suites/a:a_test/S.Bw"])
        self.assertNotIn("bidir", c.notes["suites/a:a_test/S.Bw"])  # a noisy figure is only trended
        self.assertEqual(c.exit_code, cmp.EXIT_REGRESSION)

    def test_a_rate_within_the_band_or_on_another_link_is_not_judged(self):
        self.assertEqual(cmp.compare(self.rated(50.0), exps(""), self.rated(55.5)).exit_code, cmp.EXIT_QUALIFIED)
        other = self.rated(55.5, gpu0_pcie_link="gen4 x16 (max gen5 x16)")
        self.assertEqual(cmp.compare(self.rated(27.0), exps(""), other).exit_code, cmp.EXIT_QUALIFIED)


class ReasonsTest(unittest.TestCase):
    def test_reasons_fall_into_groups_a_reviewer_can_act_on(self):
        for reason, category in [(ComparableTest.HUGE, "host setup"),
                                 ("cudaGetDeviceCount=1 (need 2)", "hardware"),
                                 ("CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES=0 (need 1) on device 0", "capability"),
                                 ("PAGELOCK_IOMEMORY_RESOURCE unset (no MMIO range designated)", "operator setting"),
                                 ("cudaMemcpyBatchAsync needs CUDA runtime >= 12.8; built with CUDART_VERSION=11080", "runtime"),
                                 ("something else", "other")]:
            self.assertEqual(coverage_reasons.classify(reason).category, category, reason)

    def test_a_reason_that_names_its_fix_keeps_it(self):
        g = coverage_reasons.classify("no swap (/proc/swaps is empty); tools/labhost prepare --swap 4G")
        self.assertEqual((g.category, g.fix), ("host setup", "tools/labhost prepare --swap 4G"))

    def test_the_summary_folds_numbers_and_puts_host_setup_first(self):
        cases = [case(f"G{i}", "NOT_SUPPORTED", reason=f"cudaGetDeviceCount=1 (need {i})") for i in (2, 3, 4)]
        cases.append(case("H", "NOT_SUPPORTED", reason=ComparableTest.HUGE))
        groups = coverage_reasons.summary(cases)
        self.assertEqual([(g["category"], g["cases"]) for g in groups], [("host setup", 1), ("hardware", 3)])


class FirstNightTest(unittest.TestCase):
    def test_the_first_night_says_what_was_inherited_new_and_not_run(self):
        now = run(case("Flags", "FAIL", "cudaHostGetFlags returned 0x2"), case("New", "FAIL"),
                  case("Huge", "NOT_SUPPORTED", reason=ComparableTest.HUGE), case("Ok", "PASS"), **H100)
        c = cmp.compare(now, exps(DRIVER_ENTRY), None)
        ctx = first_night.context(now, c, "nvidia-h100-80gb-hbm3", "", "runs/x")
        self.assertEqual([(i["anchor"], i["cases"]) for i in ctx["inherited"]], [("r58", 1)])
        self.assertEqual(ctx["new"], ["suites/a:a_test/S.New"])
        self.assertFalse(ctx["may_become_baseline"])
        self.assertIn("1 failure(s) nothing explains", ctx["adopt"])
        self.assertEqual(ctx["not_run"][0]["category"], "host setup")
        lines = "\n".join(first_night.terminal_lines(ctx))
        self.assertIn("no expectations/nvidia-h100-80gb-hbm3.txt", lines)
        self.assertIn("r58 (driver 580; 1 case(s))", lines)

    def test_a_clean_first_night_may_become_the_baseline(self):
        now = run(case("Flags", "FAIL", "cudaHostGetFlags returned 0x2"), case("Ok", "PASS"), **H100)
        c = cmp.compare(now, exps(DRIVER_ENTRY), None)
        ctx = first_night.context(now, c, "nvidia-h100-80gb-hbm3", "", "runs/x")
        self.assertTrue(ctx["may_become_baseline"])
        self.assertIn("tools/qualify --draft-expectations runs/x", "\n".join(first_night.terminal_lines(ctx)))


if __name__ == "__main__":
    unittest.main()
