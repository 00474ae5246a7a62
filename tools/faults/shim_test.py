#!/usr/bin/env python3
"""CPU tests of the fault shim against a tiny fake driver (testdata/fake_libcuda.c): the shim
loads the driver named by PAGELOCK_REAL_LIBCUDA, forwards every call, applies a fault, logs the
requests, and a fault-free run is unchanged.

Under Bazel the shim, the fake driver and shim_client come from the runfiles; run directly
(python3 tools/faults/shim_test.py) it builds them with g++/gcc into a temporary folder (built.py).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.faults.shim_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from tools.faults import built

ROOT = built.ROOT


SHIM, FAKE, CLIENT = built.layer()
CATALOGUE = os.path.join(HERE, "catalogue.tsv")
CONFORMING = os.path.join(HERE, "conforming.tsv")
SPLIT = os.path.join(HERE, "split.tsv")
RULES = os.path.join(ROOT, "suites/rules.tsv")


def run(mode="run", fault=None, log=None, through_shim=True, real=FAKE, extra=()):
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
    p = subprocess.run([CLIENT, mode, *extra], env=env, capture_output=True, text=True, timeout=60)
    if mode in ("variations", "probe"):  # several key=value pairs a line
        values = dict(tok.split("=", 1) for tok in p.stdout.split() if "=" in tok)
    else:
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

    def test_census_wraps_every_entry_changes_nothing_and_logs_the_calls(self):
        d = tempfile.mkdtemp()
        try:
            log = os.path.join(d, "log")
            _, clean = run()
            _, v = run(fault="census", log=log)
            for key in ("info", "htod_3020_differs"):  # the census hands out wrappers
                clean.pop(key)
                v.pop(key)
            self.assertEqual(v, clean)
            with open(log) as f:
                fired = {l.split("\t")[3].strip() for l in f if "\tfired\tcensus\t" in l}
            self.assertIn("cuMemcpyHtoD", fired)
            self.assertIn("cuCtxSynchronize", fired)
            self.assertNotIn("cuMemsetD8", fired)  # never called by the client
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
    def test_at_least_40_uniquely_named_faults_each_naming_a_known_rule(self):
        with open(CATALOGUE) as f:
            rows = [l.rstrip("\n").split("\t") for l in f][1:]
        with open(RULES) as f:
            rules = {l.split("\t", 1)[0] for l in f if l.strip()}
        self.assertGreaterEqual(len(rows), 40)
        names = [r[0] for r in rows]
        self.assertEqual(len(names), len(set(names)))
        for name, rule, family, kind, entries, text in rows:
            self.assertTrue(entries.startswith("cu"), f"{name}: hooks no entry")
            self.assertIn(rule, rules, f"{name}: rule {rule} is not in suites/rules.tsv")
            self.assertIn(kind, {"error", "data", "sync", "flag", "capability", "resource", "perf"})
            self.assertTrue(text.endswith("."), name)


# What each conforming variation changes in `shim_client variations` (against the fake driver,
# which answers as r580 does); every other answer must stay as in the clean run.
VARIATION_CHANGES = {
    "iomemory_on_ram_not_permitted": {"iomemory_rc": "800"},
    "iomemory_on_ram_not_supported": {"iomemory_rc": "801"},
    "register_pinned_already_registered": {"register_hostalloc_rc": "712"},
    "unregister_pinned_not_registered": {"unregister_hostalloc_rc": "713"},
    "read_only_mapping_not_permitted": {"read_only_mapping_rc": "800"},
    "fault_code_launch_failed": {"fault_code": "719"},
    "hostalloc_unknown_flags_not_supported": {
        "unknown_hostalloc_flag_rc": "801", "large_hostalloc_bad_flags_rc": "801"},
    "register_unknown_flags_not_supported": {"unknown_register_flag_rc": "801"},
    "zero_size_allocates": {"zero_size_pointer": "allocated"},
    "allocation_64k_granular": {"hostalloc_size": "65536", "host_range": "0,0,65536"},
    "no_read_only_register": {"attr113": "0", "read_only_flag_rc": "801"},
    "completion_delayed": {"delays_explicit_stream": "2"},
    "waits_return_late": {"stream_sync_late": "1"},
    "sync_copies_return_late": {"htod_late": "1"},
    "register_overlap_per_page": {"second_on_page_rc": "712"},
    "set_flags_beside_driver_context_708": {"set_flags_beside_context_rc": "708"},
    # Host ranges (allocated and registered) only; the caller's outputs are left untouched.
    "address_range_host_not_found": {
        "host_range": "500", "host_range_base_only": "500,untouched", "registered_range": "500"},
    # Device blocks alone in their windows, from every byte, the windows' own first and last
    # bytes and both ABIs; a block beside a neighbour, one on 2 MiB boundaries, bytes past the
    # window, freed blocks and host memory keep the driver's answers.
    "address_range_rounded_to_2mib": {
        **{k: "0,0,2097152" for k in (
            "dev_range_first", "dev_range_middle_v2", "dev_range_last_3020",
            "dev_range_window_first", "dev_range_window_last", "dev_attr_first", "dev_attr_last",
            "dev_range_after_neighbour_freed")},
        "dev_attrs_middle": "0,0,2097152,type2",
        **{k: "0,4194304,4194304" for k in (
            "dev_range_across", "dev_range_across_window_last", "dev_attr_across")}},
    "pool_trim_keeps_reserved": {"pool_reserved_after_trim": "4194304"},
    # 1 GiB pins refused before they reach the driver; bad flags and smaller pins forwarded.
    "large_pin_refused": {
        "large_hostalloc_rc": "2", "large_allochost_rc": "2", "large_register_rc": "2",
        "large_pins": "2"},
    "advise_on_pinned_succeeds": {k: "0" for k in (
        "advise_pinned_rc", "advise_v2_registered_rc", "advise_8000_pinned_rc",
        "prefetch_pinned_rc", "prefetch_registered_to_host_rc", "prefetch_8000_pinned_rc",
        "hint_preferred_host_rc", "hint_preferred_numa_rc", "hint_8000_preferred_cpu_rc",
        "hint_read_mostly_host_rc", "hint_prefetch_numa_current_rc")},
    # The platform variations (catalogue/conforming_platforms.cc, probes/conforming_platforms.cc).
    # Attributes as a GH200 answers them; nothing else.
    "host_link_c2c_ats": {"platform_attr88": "1", "platform_attr100": "1"},
    # A readable heap byte nobody registered, the same in both calls (the probe's region after its
    # unregistration too); a page mapped without access and a pinned byte keep the driver's.
    "heap_byte_known_with_pageable_access": {
        "platform_attr88": "1",
        "heap_byte": "0:1/0:byte/0:page/0:4096|0:1/byte/page/4096/-2/0",
        "registration_range_after_unregister": "0:0:4096|0:0:4096"},
    # Add, exchange and CAS (operations 0, 8, 9) signed, unsigned, 32 and 64 bits; a count of 0
    # still refused.
    "host_atomics_native_basic_only": {
        "platform_attr86": "1", "platform_attr147": "0",
        "atomic_caps": "27,0,0,0,0,0,0,0,27,27,0,0,0"},
    # A registration's range refused (single) and NULL (batch); an allocation's stays.
    "register_range_attribute_invalid_value": {
        "registration_range_first": "1|0:null:0", "registration_range_middle": "1|0:null:0"},
    # Toward the host (HOST, HOST_NUMA, HOST_NUMA_CURRENT, CU_DEVICE_CPU) on page-locked memory;
    # ACCESSED_BY with a NUMA node (an invalid type for it), READ_MOSTLY (ignores the location),
    # bad flags, pageable memory and device locations keep r580's INVALID_VALUE.
    "advise_invalid_device_for_host_location": {k: "101" for k in (
        "advise_v2_registered_rc", "prefetch_registered_to_host_rc", "prefetch_8000_pinned_rc",
        "hint_preferred_host_rc", "hint_preferred_numa_rc", "hint_8000_preferred_cpu_rc",
        "hint_prefetch_numa_current_rc")},
    # r151 absent: the unknown bytes' HOST_POINTER and range slots NULL (readable or not).
    "unknown_pointer_all_null": {k: "1/1/1/1|0:0/0/0/0/-2/0" for k in ("heap_byte", "no_access_byte")},
    # r58, r56-portable and r151 absent: a registration's flags refused, each allocation's own
    # Portable / WriteCombined bits (0x3, 0x6; the chunk's opener keeps 0x2), NULL slots.
    "driver_without_r580_deviations": {
        "flags_registered": "1", "flags_portable": "0:3", "flags_write_combined": "0:6",
        **{k: "1/1/1/1|0:0/0/0/0/-2/0" for k in ("heap_byte", "no_access_byte")}},
}
# Registration refused: what no_host_register and no_host_register_invalid_value change, with
# the variation's code.
REGISTER_ABSENT = (
    "register_rc", "iomemory_rc", "unknown_register_flag_rc", "read_only_mapping_rc",
    "read_only_flag_rc", "register_hostalloc_rc", "first_on_page_rc", "second_on_page_rc",
    "next_page_rc", "again_after_unregister_rc", "large_register_rc", "below_limit_register_rc")
REGISTER_ABSENT_ALSO = {
    "attr99": "0", "unregister_rc": "713", "unregister_first_rc": "713",
    "registered_range": "unregistered", "large_pins": "3", "flags_registered": "1",
    "registration_range_first": "1|0:null:0", "registration_range_middle": "1|0:null:0"}
VARIATION_CHANGES["no_host_register"] = {
    **{k: "801" for k in REGISTER_ABSENT + ("platform_register_rc",)}, **REGISTER_ABSENT_ALSO}
VARIATION_CHANGES["no_host_register_invalid_value"] = {
    **{k: "1" for k in REGISTER_ABSENT + ("platform_register_rc",)}, **REGISTER_ABSENT_ALSO}


class ConformingVariationTest(unittest.TestCase):
    """Each variation changes exactly the answers the documentation leaves open, and says so in
    the log (a "changed" line); everything else is forwarded unchanged."""

    @classmethod
    def setUpClass(cls):
        p, cls.clean = run(mode="variations")
        assert p.returncode == 0, p.stderr
        cls.tmp = tempfile.mkdtemp(prefix="shim_variations_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_the_clean_run_answers_as_r580(self):
        self.assertEqual(self.clean["iomemory_rc"], "1")
        self.assertEqual(self.clean["register_hostalloc_rc"], "1")
        self.assertEqual(self.clean["zero_size_pointer"], "null")
        self.assertEqual(self.clean["second_on_page_rc"], "0")
        self.assertEqual(self.clean["delays_explicit_stream"], "0")

    def test_each_variation_changes_only_its_answers_and_logs_that_it_did(self):
        for name, changes in VARIATION_CHANGES.items():
            with self.subTest(variation=name):
                log = os.path.join(self.tmp, name + ".log")
                p, got = run(mode="variations", fault=name, log=log)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(got, dict(self.clean, **changes))
                with open(log) as f:
                    changed = [l.split("\t")[2:] for l in f.read().splitlines()
                               if l.split("\t")[1] == "changed"]
                self.assertTrue(changed, f"{name} logged no 'changed' line")
                self.assertEqual({c[0] for c in changed}, {name})

    def test_the_clean_run_answers_the_new_calls_as_r580(self):
        self.assertEqual(self.clean["dev_range_first"], "0,65536,102400")
        self.assertEqual(self.clean["dev_range_window_first"], "500")
        self.assertEqual(self.clean["host_range"], "0,0,8192")
        self.assertEqual(self.clean["pool_reserved_after_trim"], "0")
        self.assertEqual(self.clean["large_pins"], "5")
        self.assertEqual(self.clean["advise_pinned_rc"], "1")
        self.assertEqual(self.clean["prefetch_8000_pinned_rc"], "1")

    def test_the_clean_run_answers_the_platform_calls_as_the_h200_with_r580(self):
        # The fake driver's attributes are 1000 + the attribute; every host atomic mask is 0.
        self.assertEqual(self.clean["platform_attr100"], "1100")
        self.assertEqual(self.clean["atomic_caps"], ",".join(["0"] * 13))
        self.assertEqual(self.clean["atomic_caps_zero_count_rc"], "1")
        # r151: an unknown byte's HOST_POINTER is its address, the range slots unwritten.
        self.assertEqual(self.clean["heap_byte"], "1/1/1/1|0:0/byte/unwritten/unwritten/-2/0")
        self.assertEqual(self.clean["pinned_byte"],
                         "0:1/0:byte/0:start/0:65536|0:1/byte/start/65536/0/byte")
        self.assertEqual(self.clean["registration_range_first"], "0:0:8192|0:0:8192")
        # r58 and r56-portable: a registration's flags succeed, every allocation reports the
        # chunk opener's bits.
        self.assertEqual([self.clean[k] for k in ("flags_opener", "flags_portable",
                                                  "flags_write_combined", "flags_registered")],
                         ["0:2"] * 4)
        self.assertEqual(self.clean["hint_preferred_host_rc"], "1")

    def test_the_census_wraps_the_entries_the_variations_added_and_changes_nothing(self):
        log = os.path.join(self.tmp, "census.log")
        p, got = run(mode="variations", fault="census", log=log)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(got, self.clean)
        with open(log) as f:
            lines = [l.rstrip("\n").split("\t") for l in f]
        fired = {l[3] for l in lines if l[1] == "fired"}
        for entry in ("cuMemPoolTrimTo", "cuMemAdvise", "cuMemPrefetchAsync",
                      "cuMemGetAddressRange", "cuPointerGetAttributes", "cuMemAllocHost",
                      "cuDeviceGetHostAtomicCapabilities", "cuMemHostGetFlags"):
            self.assertIn(entry, fired)
        # Both ABIs of a name are wrapped, each by the version asked for.
        how = {(l[2], l[3]): l[7] for l in lines if l[1] == "gpa"}
        for name in ("cuMemAdvise", "cuMemPrefetchAsync"):
            self.assertEqual(how[(name, "8000")], "wrapped")
            self.assertEqual(how[(name, "13000")], "wrapped")
        self.assertEqual(how[("cuMemAdvise_v2", "13000")], "wrapped")

    def test_the_delays_leave_the_default_stream_alone(self):
        _, got = run(mode="variations", fault="completion_delayed")
        self.assertEqual(got["delays_default_stream"], "0")

    def test_a_variation_that_changes_nothing_logs_no_changed_line(self):
        log = os.path.join(self.tmp, "unexercised.log")
        run(mode="run", fault="iomemory_on_ram_not_permitted", log=log)  # never uses IoMemory
        with open(log) as f:
            self.assertNotIn("\tchanged\t", f.read())


# What each probed fault changes in `shim_client probe` (probes/<area>.cc, against the fake
# driver, which answers as r580 would): the calls inside its trigger. Every other answer, among
# them a call beside each trigger that the fault must leave alone, stays as in the clean run.
# By area, as the catalogue files them.
PROBE_CHANGES = {
    # probes/copies.cc
    # Every entry, at a host offset of 4 GiB + 16 (+ a page): the bytes 4 GiB lower; an offset
    # below 4 GiB is exact.
    "copy_past_4gib_host_offset_wraps": {k: "0,low" for k in (
        "past4g_htod", "past4g_htod_async", "past4g_unified_async", "past4g_dtoh",
        "past4g_dtoh_async")},
    # probes/async_copies.cc
    # 6 and 7 bytes through cuMemcpyAsync: the bytes past the last whole word stay; 8 and 3
    # bytes, and cuMemcpyHtoDAsync, are exact.
    "unified_async_copy_drops_partial_word": {"unified_htod_6": "0,2", "unified_dtoh_7": "0,3"},
    # Pageable sources are copied from the shim's pinned buffer between two host functions (the
    # fake runs them at once, so the bytes are right); pinned sources and a capture are not.
    "pageable_async_htod_reads_source_late": {
        "pageable_htod_async": "0,other,2,0", "pageable_unified_async": "0,other,2,0",
        "pageable_htod_async_again": "0,other,2,0"},
    # probes/copies_2d_3d.cc
    # Two slices of two rows, host slices four rows apart (as source, sync and async, and as
    # destination): the second slice's 16 bytes are wrong; packed host slices, one slice and a
    # padded device side are exact.
    "copy3d_padded_slices_read_packed": {
        "copy3d_host_padded_src": "0,16", "copy3d_host_padded_src_async": "0,16",
        "copy3d_host_padded_dst": "0,16"},
    # probes/memsets.cc
    # Padding narrower than the row (pitch 24, row 16 bytes), sync and async: the padding of the
    # first two rows (8 bytes each) takes the value; wider padding, one row and unpadded rows
    # are exact.
    "memset2d32_narrow_padding_overwritten": {
        "memset2d32_narrow": "0,12,16", "memset2d32_narrow_async": "0,12,16"},
    # Rows of 100 16-bit values, the first crossing a page 50 values in (sync and async): that
    # value stays unwritten, no byte outside the rows is touched; rows inside a page are exact.
    "memset2d16_page_crossing_row_skips_element": {
        "memset2d16_crossing": "0,299,0", "memset2d16_crossing_async": "0,299,0"},
    # probes/streams.cc
    # EQ (with and without FLUSH) reaches the driver as a 32-bit wait on the low word; GEQ and
    # AND stay 64-bit.
    "wait_value64_eq_compares_low_word": {
        "wait64_eq": "0,32,5", "wait64_eq_flush": "0,32,5"},
    # The writes after a wait reach the driver first; batches whose writes all come before
    # their wait, and batches without one, keep their order.
    "batch_memop_writes_hoisted_before_wait": {
        "batch_wait_then_writes": "0,524", "batch_write_wait_write": "0,251"},
    # probes/events.cc
    # Re-records of the pending event never reach the driver; records of a completed event and
    # records into a capture do.
    "event_rerecord_while_pending_dropped": {
        "rerecord_pending": "0,0", "rerecord_pending_with_flags": "0,0"},
    # Events recorded on the non-blocking stream: the host time between the record calls.
    "non_blocking_elapsed_time_from_submission": {
        "elapsed_non_blocking": "0,0.0", "elapsed_mixed": "0,0.0"},
    # 2.75 ms with a BlockingSync event at either end: 2 ms; default events: 2.75.
    "blocking_sync_event_elapsed_whole_ms": {
        "elapsed_blocking_start": "0,2.00", "elapsed_blocking_end": "0,2.00"},
    # probes/graphs.cc
    # Copies on the captured stream lose their last byte (the pageable-source probe's captured
    # copy among them); the eager copy is exact.
    "captured_copy_node_short": {**{k: "0,1" for k in (
        "captured_htod", "captured_dtoh", "captured_unified")},
        "pageable_htod_captured": "0,own,0,1"},
    # The second and third launch of one exec go to the shim's stream; first launches (also of
    # a handle destroyed and made again) and a launch into a capture stay on the caller's.
    "graph_relaunch_skips_stream_order": {"graph_second": "0,other", "graph_third": "0,other"},
    # probes/host_allocation.cc
    # Host pools with a maximum: after the refused allocation the next ones fail before the
    # driver; pools without a maximum and device pools are right.
    "host_pool_poisoned_after_failed_alloc": {
        "host_pool_max": "2,2,2,1", "host_numa_pool_max": "2,2,2,1"},
    # The free of a host (and host-NUMA) pool's allocation never reaches the driver; a device
    # pool's does.
    "host_pool_async_free_leaks": {
        "free_async_host_pool": "0,0", "free_async_host_numa_pool": "0,0"},
    # The synchronisation right after an OUT_OF_MEMORY allocation reports it once; one after a
    # bad-flags failure, and the next one, are right.
    "failed_pin_error_resurfaces_at_next_sync": {
        "sync_after_failed_hostalloc": "2,2", "stream_sync_after_failed_allochost": "2,2"},
    # probes/registration.cc
    # The second registration at an address pins nothing; a first one elsewhere is right.
    "reregistered_range_not_pinned": {
        "reregister": "0,0", "reregistered_type_rc": "1", "reregistered_unregister": "713"},
    # Unregistered from another context: success, still known, and the registering context's
    # unregister succeeds too; an unregister in the registering context is right.
    "unregister_elsewhere_keeps_registration": {"unregister_elsewhere": "0,0,0"},
    # probes/device_pointers.cc
    # Only the Mapped, not Portable block asked about in another context.
    "mapped_unportable_devptr_refused_elsewhere": {"devptr_mapped_other_context": "1"},
    # 2 MiB + 100 bytes into a 3 MiB registration: the alias of offset 100; the first 2 MiB of a
    # registration and an allocated block are right.
    "registered_devptr_offset_wraps_at_2mib": {"devptr_registered_past_2mib": "0,100"},
    # probes/pointer_attributes.cc
    # A byte beside a sub-page registration on its page is described as the registration (its
    # own address as the pointers); cuPointerGetAttribute still does not know it, and bytes
    # inside the registration or on the next page are answered as before.
    "attributes_page_granular_for_subpage_registration": {
        "attrs_beside_subpage": "0,1,1000,1000,100,1"},
    # probes/contexts.cc
    # Contexts holding a live allocation or registration are not destroyed (but popped);
    # contexts whose pins were freed, or that had none, are.
    "ctx_destroy_keeps_context_with_pins": {
        "destroy_with_pins": "0,0,none", "destroy_with_registration": "0,0"},
    # Rejected (INVALID_VALUE) as before, but the valid bits are applied; valid calls are right.
    "rejected_ctx_flags_applied_anyway": {
        "primary_flags_rejected": "1,4", "primary_flags_rejected_after_valid": "1,1",
        "ctx_flags_rejected": "1,128"},
    # probes/capabilities.cc
    # Attribute 147 without native host atomics; with them, the driver's answer.
    "partial_host_atomics_claimed_without_ops": {"atomics_none": "0,1"},
    # probes/vmm_host.cc
    # Right after cuMemMap of host and host-NUMA allocations the device has read-write access
    # while cuMemGetAccess says none; device allocations, and the answer after a cuMemSetAccess,
    # are right.
    "vmm_host_map_grants_hidden_access": {
        "vmm_map_access_host_numa": "0,3", "vmm_map_access_host": "0,3"},
    # Released while mapped, host allocations lose every byte (two granules) and the range
    # retains another handle, with its access kept; device allocations and unmapped handles are
    # right.
    "vmm_host_release_frees_while_mapped": {
        "vmm_release_while_mapped": "0,131072,other,3",
        "vmm_release_host_while_mapped": "0,131072,other,3"},
    # Host-NUMA node 1 becomes node 0; node 0 and CU_MEM_LOCATION_TYPE_HOST are right.
    "vmm_host_numa_id_ignored": {"vmm_numa_node1": "0,3,0"},
    # The imported handle maps other pages: no byte crosses either way (a granule); a second
    # mapping of the exporter's own handle shares its bytes.
    "vmm_host_import_maps_other_pages": {"vmm_import": "0,0,65536,65536"},
    # A map over a mapped host range succeeds and its granule of bytes is gone; a map into a free
    # reservation is right.
    "vmm_host_remap_replaces_mapping": {"vmm_map_over_mapping": "0,65536"},
    # Copies crossing the boundary between two granules stop at it, in both directions and
    # through both the asynchronous and the synchronous entries; a copy inside one granule and a
    # copy into a device-located mapping are exact.
    "vmm_host_copy_stops_at_granule": {
        "vmm_copy_in_async": "0,65536", "vmm_copy_in_sync": "0,4096", "vmm_copy_out": "0,65536"},
    # probes/batch_copies.cc
    # Two attribute entries (through both entry points, the last covering one or two copies):
    # the last copy's 256 bytes stay; one attribute entry is exact.
    "batch_last_copy_dropped_with_several_attrs": {
        "batch_two_attrs": "0,256", "batch_two_attrs_12080": "0,256",
        "batch_last_attr_alone": "0,256"},
    # 1 MiB + 13 bytes: the last byte stays; 1 MiB + 16 and 1001 bytes are exact.
    "batch_large_entry_drops_partial_word": {"batch_1mib_plus_13": "0,1"},
    # DuringApiCall host sources reach the driver as the shim's staging buffer in stream order,
    # between two host functions (the fake runs them at once, so the bytes are right); device
    # sources and the other orders are right.
    "batch_during_api_call_source_read_late": {
        "batch_during_call_host": "0,other,1,2,0", "batch_during_call_host_12080": "0,other,1,2,0"},
    # failIdx of a copy one past the one refused; SIZE_MAX (the legacy stream) is right.
    "batch_fail_idx_off_by_one": {"batch_fail_null_dst": "1,2", "batch_fail_bad_order": "1,3"},
    # probes/graph_updates.cc
    # After the first launch, updates (both entry points) are acknowledged and the exec keeps
    # copying the pair set before it; the update before the launch and the zero-length refusal
    # are right.
    "exec_memcpy_update_ignored_after_launch": {
        "memcpy_update_after_launch": "0,1", "memcpy_node_update_after_launch": "0,1"},
    # A successful whole-graph update (graphs instantiated both ways) keeps the copy of the
    # instantiated graph, updates the memset, and leaves the update's own graph as it was; the
    # refused topology change is right.
    "whole_graph_update_keeps_memcpy_buffers": {
        "whole_update": "0,0,0,34,own", "whole_update_with_params": "0,0,2,34,own"},
    # 4- and 2-byte memsets (both entry points) keep the instantiated value on the new buffer;
    # 1-byte memsets are right.
    "exec_memset_update_keeps_old_value": {
        "memset_update_4": "0,11111111,0", "memset_update_2": "0,1111,0",
        "memset_node_update_4": "0,11111111,0"},
    # probes/streams.cc
    # Beside the kernel still running on another stream (both entry points) the grid is one block
    # short; on the kernel's own stream, into a capture and after it completed, right.
    "launch_beside_running_kernel_loses_last_block": {
        "launch_beside": "0,3", "launch_ex_beside": "0,3"},
    # probes/async_copies.cc
    # Pinned copies beside the running kernel (each entry point) are held back by a host function;
    # on its stream, into pageable memory and after it completed, not.
    "copies_beside_running_kernel_throttled": {
        "beside_kernel_htod": "0,1", "beside_kernel_dtoh": "0,1", "beside_kernel_unified": "0,1"},
    # probes/registration.cc
    # 5 GiB pins 4 GiB (the last 256 MiB unknown to pointer queries); 4 GiB is right.
    "large_registration_pins_first_4gib": {"register_5gib": "0,4096,1,0"},
}
# The batches whose every fault has a probe.
PROBED_BATCHES = ("blind-10", "blind-11", "blind-12")


def batch_faults(batches):
    """The faults of the batches (split.tsv, generated from the built catalogue)."""
    with open(SPLIT) as f:
        rows = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    return {r[0] for r in rows[1:] if r[4] in batches}


class ProbeFaultTest(unittest.TestCase):
    """Each probed fault fires on its trigger, through the real (fake) driver, says so in the log,
    and leaves the calls beside its trigger unchanged; the clean run is the driver's own."""

    # The clean run's answers for the calls the faults change, as r580 gives them.
    CLEAN = {
        "memset2d32_narrow": "0,12,0",
        "unified_htod_6": "0,0",
        "past4g_htod": "0,high",
        "below4g_htod": "0,own",
        "wait64_eq": "0,64,4294967301",
        "captured_htod": "0,0",
        "devptr_mapped_other_context": "0",
        "first_register": "0,0",
        "reregister": "0,1",
        "destroy_with_pins": "0,1,none",
        "rerecord_pending": "0,1",
        "host_pool_max": "2,0,0,3",
        "elapsed_non_blocking": "0,5.0",
        "atomics_none": "0,0",
        "memset2d16_crossing": "0,300,0",
        "devptr_registered_past_2mib": "0,2097252",
        "copy3d_host_padded_src": "0,0",
        "batch_wait_then_writes": "0,452",
        "pageable_htod_async": "0,own,0,0",
        "free_async_host_pool": "0,1",
        "unregister_elsewhere": "0,1,713",
        "primary_flags_rejected": "1,0",
        "graph_second": "0,own",
        "sync_after_failed_hostalloc": "2,0",
        "elapsed_blocking_start": "0,2.75",
        "attrs_beside_subpage": "0,0,null,null,null,1",
        "attrs_inside_subpage": "0,1,150,150,100,0",
        "vmm_map_access_host_numa": "0,0",
        "vmm_release_while_mapped": "0,0,same,3",
        "vmm_numa_node1": "0,3,1",
        "vmm_import": "0,0,0,0",
        "vmm_map_over_mapping": "1,0",
        "vmm_copy_in_async": "0,0",
        "batch_two_attrs": "0,0",
        "batch_1mib_plus_13": "0,0",
        "batch_during_call_host": "0,own,2,0,0",
        "batch_fail_null_dst": "1,1",
        "batch_fail_legacy_stream": "1,max",
        "memcpy_update_after_launch": "0,2",
        "whole_update": "0,0,1,34,own",
        "whole_update_topology_changed": "910,2,0",
        "memset_update_4": "0,22222222,0",
        "launch_beside": "0,4",
        "beside_kernel_htod": "0,0",
        "register_5gib": "0,5120,0,0",
    }

    @classmethod
    def setUpClass(cls):
        p, cls.clean = run(mode="probe")
        assert p.returncode == 0, p.stderr
        cls.tmp = tempfile.mkdtemp(prefix="shim_probe_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_the_clean_run_is_the_drivers_own(self):
        p, direct = run(mode="probe", through_shim=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(direct, self.clean)

    def test_the_clean_run_answers_as_r580(self):
        for key, want in self.CLEAN.items():
            self.assertEqual(self.clean[key], want, key)

    def test_each_fault_changes_only_its_trigger_and_logs_that_it_fired(self):
        for name, changes in PROBE_CHANGES.items():
            with self.subTest(fault=name):
                log = os.path.join(self.tmp, name + ".log")
                p, got = run(mode="probe", fault=name, log=log)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(got, dict(self.clean, **changes))
                with open(log) as f:
                    fired = [l.split("\t")[2:] for l in f.read().splitlines()
                             if l.split("\t")[1] == "fired"]
                self.assertTrue(fired, f"{name} logged no 'fired' line")
                self.assertEqual({x[0] for x in fired}, {name})

    def test_every_fault_of_the_probed_batches_has_a_probe(self):
        self.assertLessEqual(batch_faults(PROBED_BATCHES), set(PROBE_CHANGES))
        with open(CATALOGUE) as f:
            faults = {l.split("\t", 1)[0] for l in f}
        self.assertLessEqual(set(PROBE_CHANGES), faults)

    def test_one_area_runs_alone_and_an_unknown_area_is_refused(self):
        p, got = run(mode="probe", extra=["memsets"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(got, {k: v for k, v in self.clean.items() if k.startswith("memset2d")})
        p, _ = run(mode="probe", extra=["no_such_area"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("no probes for area no_such_area", p.stderr)


class ConformingCatalogueTest(unittest.TestCase):
    def rows(self):
        with open(CONFORMING) as f:
            return [l.rstrip("\n").split("\t") for l in f][1:]

    def test_at_least_15_variations_each_justified_and_tested(self):
        with open(RULES) as f:
            rules = {l.split("\t", 1)[0] for l in f if l.strip()}
        with open(CATALOGUE) as f:
            faults = {l.split("\t", 1)[0] for l in f}
        rows = self.rows()
        self.assertGreaterEqual(len(rows), 15)
        names = [r[0] for r in rows]
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(set(names), set(VARIATION_CHANGES), "a variation without a shim test")
        for name, rule, family, kind, entries, text, why, targets, excluded, env in rows:
            self.assertNotIn(name, faults, f"{name} is also a fault")
            if targets:
                re.compile(targets)
            for entry in filter(None, (e.strip() for e in excluded.split(";"))):
                pattern, _, reason = entry.partition(": ")
                self.assertRegex(pattern, r"^[\w*?/.\[\]-]+$", f"{name}: excluded '{entry}'")
                self.assertTrue(reason, f"{name}: excluded {pattern} without a reason")
            for setting in env.split():
                self.assertRegex(setting, r"^PAGELOCK_[A-Z0-9_]+=\S*$", name)
            self.assertTrue(entries.startswith("cu"), f"{name}: hooks no entry")
            for r in rule.split(","):
                self.assertIn(r, rules, f"{name}: rule {r} is not in suites/rules.tsv")
            self.assertIn(kind, {"code", "layout", "timing", "capability", "flag", "overlap",
                                 "resource"})
            self.assertTrue(text.endswith("."), name)
            self.assertTrue('"' in why or "R" in why, f"{name}: no doc quote or rule id")


if __name__ == "__main__":
    unittest.main()
