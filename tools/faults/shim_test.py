#!/usr/bin/env python3
"""CPU tests of the fault shim against a tiny fake driver (testdata/fake_libcuda.c): the shim
loads the driver named by PAGELOCK_REAL_LIBCUDA, forwards every call, applies a fault, logs the
requests, and a fault-free run is unchanged.

Under Bazel the shim, the fake driver and shim_client come from the runfiles; run directly
(python3 tools/faults/shim_test.py) it builds them with g++/gcc into a temporary folder.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def locate():
    """Returns (shim dir, fake driver path, client path, catalogue.tsv, rules.tsv)."""
    srcdir = os.environ.get("TEST_SRCDIR")
    if srcdir:
        base = os.path.join(srcdir, os.environ.get("TEST_WORKSPACE", "pagelock"))
        return (os.path.join(base, "tools/faults/shim"),
                os.path.join(base, "tools/faults/testdata/libfakecuda.so"),
                os.path.join(base, "tools/faults/shim_client"),
                os.path.join(base, "tools/faults/catalogue.tsv"),
                os.path.join(base, "suites/rules.tsv"))
    out = tempfile.mkdtemp(prefix="shim_test_")
    cuda = os.environ.get("CUDA_PATH", "/usr/local/cuda")
    subprocess.run([os.path.join(HERE, "build_shim.sh"), os.path.join(out, "shim")], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["gcc", "-shared", "-fPIC", os.path.join(HERE, "testdata/fake_libcuda.c"),
                    "-o", os.path.join(out, "libfakecuda.so")], check=True)
    subprocess.run(["g++", "-std=c++17", "-I" + ROOT, "-I" + os.path.join(cuda, "include"),
                    os.path.join(HERE, "shim_client.cc"), "-o", os.path.join(out, "shim_client"),
                    "-ldl"], check=True)
    return (os.path.join(out, "shim"), os.path.join(out, "libfakecuda.so"),
            os.path.join(out, "shim_client"), os.path.join(HERE, "catalogue.tsv"),
            os.path.join(ROOT, "suites/rules.tsv"))


SHIM, FAKE, CLIENT, CATALOGUE, RULES = locate()


def run(mode="run", fault=None, log=None, through_shim=True, real=FAKE):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PAGELOCK_") and k != "LD_LIBRARY_PATH"}
    if through_shim:
        env["LD_LIBRARY_PATH"] = SHIM
        env["PAGELOCK_REAL_LIBCUDA"] = real
    else:
        env["SHIM_CLIENT_LIB"] = FAKE
    if fault:
        env["PAGELOCK_FAULT"] = fault
    if log:
        env["PAGELOCK_FAULT_LOG"] = log
    p = subprocess.run([CLIENT, mode], env=env, capture_output=True, text=True, timeout=60)
    values = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
    return p, values


class ShimTest(unittest.TestCase):
    def test_loads_the_real_driver_named_by_the_environment(self):
        p, v = run()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(v["info"], f"pagelock-fault-shim none {FAKE}")

    def test_a_fault_free_run_is_unchanged(self):
        direct, a = run(through_shim=False)
        shimmed, b = run()
        self.assertEqual(direct.returncode, 0, direct.stderr)
        # Only the shim's own lines differ: its identity and its answer for an absent symbol.
        for only_shim in ("info", "absent_rc"):
            b.pop(only_shim, None)
        self.assertEqual(a, b)
        self.assertEqual(b["htod_mismatches"], "0")
        self.assertEqual(b["sync_calls"], "1")

    def test_direct_exports_forward_and_absent_functions_answer_not_found(self):
        _, v = run()
        self.assertEqual(v["direct_version_rc"], "0 version=13000")
        self.assertEqual(v["absent_rc"], "500")  # CUDA_ERROR_NOT_FOUND

    def test_htod_fault_corrupts_one_byte_through_the_real_driver(self):
        _, v = run(fault="htod_corrupts_last_byte")
        self.assertEqual(v["htod_rc"], "0")
        self.assertEqual(v["htod_mismatches"], "1")
        self.assertEqual(v["dtoh_mismatches"], "0")

    def test_requests_are_wrapped_by_the_abi_of_the_requested_version(self):
        d = tempfile.mkdtemp()
        try:
            log = os.path.join(d, "log")
            _, clean = run()
            _, v = run(fault="htod_corrupts_last_byte", log=log)
            self.assertEqual(clean["htod_3020_differs"], "0")
            self.assertEqual(v["htod_3020_differs"], "1")
            with open(log) as f:
                how = {(l.split("\t")[2], l.split("\t")[3]): l.split("\t")[7]
                       for l in f if "\tgpa\t" in l}
            self.assertEqual(how[("cuMemcpyHtoD", "3020")], "wrapped")
            self.assertEqual(how[("cuMemcpyHtoD", "2000")], "real")  # the 32-bit ABI
        finally:
            shutil.rmtree(d)

    def test_versioned_names_are_wrapped_too(self):
        _, clean = run()
        _, v = run(fault="htod_corrupts_last_byte")
        self.assertEqual(clean["htod_v2_rc"], "0 htod_v2_mismatches=0")
        self.assertEqual(v["htod_v2_rc"], "0 htod_v2_mismatches=1")

    def test_dtoh_truncation_leaves_the_last_byte_stale(self):
        _, v = run(fault="dtoh_truncated")
        self.assertEqual(v["htod_mismatches"], "0")
        self.assertEqual(v["dtoh_mismatches"], "1")

    def test_capability_fault_reports_the_attribute_as_zero(self):
        _, clean = run()
        _, v = run(fault="cap_cannot_map_host")
        self.assertEqual(clean["attr_rc"], "0 attr19=1019")
        self.assertEqual(v["attr_rc"], "0 attr19=0")

    def test_sync_fault_never_reaches_the_driver(self):
        _, v = run(fault="ctx_sync_returns_early")
        self.assertEqual(v["sync_rc"], "0")
        self.assertEqual(v["sync_calls"], "0")

    def test_error_fault_returns_the_wrong_code(self):
        _, v = run(fault="hostalloc_out_of_memory")
        self.assertEqual(v["hostalloc_rc"], "2,2")  # CUDA_ERROR_OUT_OF_MEMORY

    def test_log_records_requests_wrapping_and_firing(self):
        d = tempfile.mkdtemp()
        try:
            log = os.path.join(d, "log")
            run(log=log)
            run(fault="htod_corrupts_last_byte", log=log)
            with open(log) as f:
                lines = [l.split("\t") for l in f.read().splitlines()]
            gpa = [l for l in lines if l[1] == "gpa" and l[2] == "cuMemcpyHtoD" and l[3] == "13000"]
            self.assertEqual([l[7] for l in gpa], ["real", "wrapped"])
            self.assertEqual(gpa[0][3:7], ["13000", "0", "0", "0"])  # version flags result status
            fired = [l[2:] for l in lines if l[1] == "fired"]
            self.assertEqual(fired, [["htod_corrupts_last_byte", "cuMemcpyHtoD"]])
            self.assertEqual(sorted(l[3] for l in lines if l[1] == "init"),
                             ["fault=htod_corrupts_last_byte", "fault=none"])
        finally:
            shutil.rmtree(d)

    def test_unknown_fault_stops_the_process_with_86(self):
        p, _ = run(fault="no_such_fault")
        self.assertEqual(p.returncode, 86)
        self.assertIn("unknown PAGELOCK_FAULT=no_such_fault", p.stderr)

    def test_missing_real_driver_is_reported_and_every_call_fails(self):
        p, v = run(real="/nonexistent/libcuda.so.1")
        self.assertIn("no real libcuda.so.1 found", p.stderr)
        self.assertEqual(v["direct_version_rc"], "500 version=-1")

    def test_never_loads_itself_as_the_real_driver(self):
        p, v = run(real=os.path.join(SHIM, "libcuda.so.1"))
        self.assertIn("no real libcuda.so.1 found", p.stderr)
        self.assertEqual(v["info"], "pagelock-fault-shim none none")


class CatalogueTest(unittest.TestCase):
    def test_catalogue_tsv_matches_the_shim(self):
        p, _ = run(mode="catalogue")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(CATALOGUE) as f:
            self.assertEqual(p.stdout, f.read(),
                             "tools/faults/catalogue.tsv is stale: regenerate it with "
                             "'shim_client catalogue' (see tools/faults/README text)")

    def test_at_least_40_uniquely_named_faults_each_naming_a_known_rule(self):
        with open(CATALOGUE) as f:
            rows = [l.rstrip("\n").split("\t") for l in f][1:]
        with open(RULES) as f:
            rules = {l.split("\t", 1)[0] for l in f if l.strip()}
        self.assertGreaterEqual(len(rows), 40)
        names = [r[0] for r in rows]
        self.assertEqual(len(names), len(set(names)))
        for name, rule, family, kind, text in rows:
            self.assertIn(rule, rules, f"{name}: rule {rule} is not in suites/rules.tsv")
            self.assertIn(kind, {"error", "data", "sync", "flag", "capability", "resource", "perf"})
            self.assertTrue(text.endswith("."), name)


if __name__ == "__main__":
    unittest.main()
