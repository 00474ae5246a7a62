"""The report and the in-test excusals read one selection: for every anchor of the committed
expectations (and of a file of tricky conditions), on a matrix of platforms (another SKU, another
driver branch, another runtime, host facts present, absent or not recorded), the Python selection
(reports/expectations.py, what qualify reports) and the C++ one compiled into every test binary
(fixtures/deviations.h DeviationApplies, through fixtures:deviations_cli) give the same answer.
Also: the committed files carry no SKU-only key for a driver or runtime deviation."""

import os
import shutil
import subprocess
import tempfile
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.deviations_agreement_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import expectations as expect

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (sku, driver, runtime, facts): None facts = the run recorded none.
PLATFORMS = [
    ("nvidia-h200", "580.159.04", "13.0", {"memory-cgroup", "hugetlb-2m-pool"}),
    ("nvidia-h100-80gb-hbm3", "580.159.04", "13.0", {"memory-cgroup"}),
    ("nvidia-h100-80gb-hbm3", "580.159.04", "11.8", set()),
    ("nvidia-h100-pcie", "550.54.15", "12.4", {"memory-cgroup"}),
    ("nvidia-h200", "590.10", "13.1", {"memory-cgroup"}),
    ("nvidia-gh200-480gb", "580.65", "13.0", None),
    ("nvidia-a100-sxm4-40gb", "", "12.2", set()),
]

TRICKY = {
    "common.txt": (
        "fail s:t/A.* driver=580 bug=d.md#branch\n"
        "fail s:t/B.* driver=>=560,<580.100 runtime=>=12.0 bug=d.md#both\n"
        "fail s:t/C.* host=memory-cgroup,!hugetlb-2m-pool bug=d.md#host\n"
        "fail s:t/D.* sku=nvidia-h100-* bug=d.md#skuglob\n"
        "flake s:t/E.* runtime=11.8 bug=d.md#old\n"
        "fail s:t/F.* driver=550 bug=d.md#twice\n"
        "fail s:t/F.* runtime=13.1 bug=d.md#twice\n"
        "coverage fingerprint:gpu_count bug=d.md#nocondition\n"),
    "nvidia-h200.txt": "fail s:t/G.* driver=>=590 bug=d.md#own\nfail s:t/H.* bug=d.md#skuonly\n",
    "nvidia-h100-80gb-hbm3.txt": "fail s:t/G.* runtime=>=11.8,<13.0 bug=d.md#own\n",
}


def cli():
    base = os.environ.get("TEST_SRCDIR", "")
    for cand in (os.path.join(base, "pagelock", "fixtures", "deviations_cli"),
                 os.path.join(ROOT, "bazel-bin", "fixtures", "deviations_cli")):
        if os.path.exists(cand):
            return cand
    raise unittest.SkipTest("deviations_cli not built (run under bazel test)")


def anchors(directory, skus):
    found = {"absent-anchor"}
    for name in ["common.txt"] + [f"{s}.txt" for s in skus]:
        path = os.path.join(directory, name)
        if os.path.exists(path):
            found |= {e.anchor for e in expect.read_file(path)[0] if e.anchor}
    return sorted(found)


class AgreementTest(unittest.TestCase):
    def check(self, directory):
        binary = cli()
        skus = {p[0] for p in PLATFORMS}
        names = anchors(directory, skus)
        compared = 0
        for sku, driver, runtime, facts in PLATFORMS:
            exps = expect.load(directory, sku)
            platform = expect.Platform(driver, runtime, sku, None if facts is None else frozenset(facts))
            out = subprocess.run([binary, directory, sku, driver or "-", runtime or "-",
                                  "?" if facts is None else (",".join(sorted(facts)) or "-")] + names,
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            cpp = dict(line.split("\t") for line in out.stdout.splitlines())
            for anchor in names:
                py, why = exps.deviation_applies(anchor, platform)
                self.assertEqual(cpp[anchor] == "1", py,
                                 f"{anchor} on {sku}, driver {driver}, runtime {runtime}, facts {facts}: "
                                 f"C++ says {cpp[anchor]}, Python {py} ({why})")
                compared += 1
        return compared

    def test_the_committed_files_select_alike(self):
        self.assertGreater(self.check(os.path.join(ROOT, "expectations")), 0)

    def test_tricky_conditions_select_alike(self):
        d = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, d)
        for name, text in TRICKY.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        self.assertEqual(self.check(d), len(PLATFORMS) * (len(anchors(d, {p[0] for p in PLATFORMS}))))

    def test_a_driver_deviation_is_inherited_by_another_sku_and_not_by_another_branch(self):
        exps = expect.load(os.path.join(ROOT, "expectations"), "nvidia-h100-80gb-hbm3")
        h100 = expect.Platform("580.159.04", "13.0", "nvidia-h100-80gb-hbm3", frozenset())
        r550 = expect.Platform("550.54.15", "12.4", "nvidia-h100-80gb-hbm3", frozenset())
        for anchor in ("r58", "r56-portable", "r151"):
            self.assertTrue(exps.deviation_applies(anchor, h100)[0], anchor)
            applies, why = exps.deviation_applies(anchor, r550)
            self.assertFalse(applies, anchor)
            self.assertIn("this driver 550.54.15", why)

    def test_no_committed_driver_or_runtime_deviation_is_keyed_by_sku(self):
        for name in os.listdir(os.path.join(ROOT, "expectations")):
            if not name.endswith(".txt"):
                continue
            sku = None if name == "common.txt" else name[:-4]
            for e in expect.read_file(os.path.join(ROOT, "expectations", name), sku)[0]:
                bug = e.bug.split("#")[0]
                if "driver-" in bug or "cuda-runtime" in bug:
                    self.assertEqual(name, "common.txt", f"{e.source}: a {bug} deviation belongs in common.txt")
                    self.assertFalse(e.sku, f"{e.source}: keyed by SKU")


if __name__ == "__main__":
    unittest.main()
