"""tools/labhost against a fake /proc and /sys tree (--root): status reads every setting, prepare
changes only what it is asked and saves the old values, undo restores exactly those, and bad
input, a second prepare, a missing state file and a non-root user get their exit codes."""

import io
import json
import os
import shutil
import stat
import tempfile
import unittest
from unittest import mock

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.labhost_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from tools import labhost

ZONEINFO = """Node 0, zone      DMA
  pages free     3840
        managed  3840
Node 0, zone   Normal
        managed  1000000
Node 1, zone   Normal
        managed  500000
Node 1, zone  Movable
        managed  262100
"""

FILES = {
    "proc/sys/kernel/osrelease": "6.18.44-test\n",
    "proc/meminfo": "MemTotal: 131072000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\nCmaTotal: 65536 kB\nCmaFree: 60000 kB\n",
    "proc/swaps": "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
    "proc/zoneinfo": ZONEINFO,
    "proc/cmdline": "console=ttyS0 intel_iommu=on iommu.strict=0 root=/dev/vda\n",
    "proc/self/cgroup": "0::/lab/job1\n",
    "proc/sys/kernel/numa_balancing": "0\n",
    "proc/sys/kernel/io_uring_disabled": "2\n",
    "sys/fs/cgroup/lab/job1/memory.max": "68719476736\n",
    "sys/fs/cgroup/lab/job1/memory.high": "max\n",
    "sys/fs/cgroup/lab/job1/memory.swap.max": "max\n",
    "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages": "0\n",
    "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages": "0\n",
    "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages": "0\n",
    "sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages": "0\n",
    "sys/kernel/mm/ksm/run": "0\n",
    "sys/kernel/mm/ksm/pages_to_scan": "100\n",
    "sys/kernel/mm/ksm/sleep_millisecs": "20\n",
    "sys/kernel/mm/ksm/full_scans": "0\n",
    "sys/kernel/mm/ksm/pages_sharing": "0\n",
    "sys/kernel/mm/ksm/use_zero_pages": "0\n",
    "sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]\n",
    "sys/kernel/mm/transparent_hugepage/defrag": "always defer defer+madvise [madvise] never\n",
    "sys/kernel/mm/transparent_hugepage/use_zero_page": "0\n",
    "sys/kernel/mm/transparent_hugepage/khugepaged/defrag": "1\n",
    "sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan": "4096\n",
    "sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs": "10000\n",
    "sys/kernel/mm/transparent_hugepage/khugepaged/full_scans": "3\n",
    "sys/devices/system/node/has_memory": "0-1\n",
    "sys/devices/system/node/has_normal_memory": "0-1\n",
    "sys/class/iommu/dmar0/devices/.keep": "",
    "sys/kernel/iommu_groups/0/type": "DMA-FQ\n",
    "sys/kernel/iommu_groups/1/type": "DMA-FQ\n",
    "dev/dma_heap/system": "",
    "var/tmp/.keep": "",
}


class LabhostTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="labhost_root_")
        self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
        for rel, text in FILES.items():
            path = os.path.join(self.root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        self.swapped = []
        patches = [mock.patch.object(labhost, "geteuid", lambda: 0),
                   mock.patch.object(labhost, "swapon", lambda p: self.swapped.append(("on", p))),
                   mock.patch.object(labhost, "swapoff", lambda p: self.swapped.append(("off", p)))]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)

    def run_tool(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        rc = labhost.main(["--root", self.root, *argv], out=out, err=err)
        return rc, out.getvalue(), err.getvalue()

    def read(self, rel):
        with open(os.path.join(self.root, rel)) as f:
            return f.read().strip()

    def state_path(self):
        return os.path.join(self.root, labhost.DEFAULT_STATE.lstrip("/"))

    # ---- status

    def test_status_json_measures_every_setting(self):
        rc, out, _ = self.run_tool("status", "--json")
        self.assertEqual(rc, 0)
        s = json.loads(out)
        self.assertEqual(s["kernel"], "6.18.44-test")
        self.assertEqual(s["hugetlb_2m"], {"nr_hugepages": 0, "free_hugepages": 0})
        self.assertEqual(s["hugetlb_1g"], {"nr_hugepages": 0, "free_hugepages": 0})
        self.assertEqual(s["swap"], {"devices": [], "total_kib": 0, "free_kib": 0})
        self.assertEqual(s["ksm"]["run"], "0")
        self.assertEqual(s["thp"]["enabled"], "never")
        self.assertEqual(s["thp"]["defrag"], "madvise")
        self.assertEqual(s["thp"]["khugepaged"]["scan_sleep_millisecs"], "10000")
        self.assertEqual(s["numa_balancing"], "0")
        self.assertEqual(s["numa"]["nodes"]["1"], {"normal_managed_pages": 500000, "movable_managed_pages": 262100})
        self.assertEqual(s["numa"]["nodes"]["0"]["normal_managed_pages"], 1003840)
        self.assertEqual(s["cma_kib"], {"total": 65536, "free": 60000})
        self.assertEqual(s["iommu"]["mode"], "translated (lazy)")
        self.assertEqual(s["iommu"]["cmdline"], ["intel_iommu=on", "iommu.strict=0"])
        self.assertEqual(s["io_uring_disabled"], "2")
        self.assertTrue(s["dma_heap"]["system"])
        self.assertEqual(s["memory_cgroup"]["path"], "/lab/job1")
        self.assertEqual(s["memory_cgroup"]["memory.max"], "68719476736")
        cases = {r["cases"]: r for r in s["cases"]}
        self.assertFalse(cases["swapped-out and swap-cache pages"]["met"])
        self.assertTrue(cases["ZONE_MOVABLE pins"]["met"])
        self.assertTrue(cases["move_pages and mbind migration"]["met"])
        self.assertFalse(cases["io_uring fixed buffers"]["met"])
        self.assertEqual(cases["KSM-merged pages"]["how"], "--ksm")

    def test_status_text_names_what_each_unmet_case_needs(self):
        rc, out, _ = self.run_tool("status")
        self.assertEqual(rc, 0)
        self.assertIn("iommu                        translated (lazy)", out)
        self.assertIn("[NO ] KSM-merged pages: needs ksm/run=1  -> --ksm", out)
        # A node list, not a count: "0-1" is two nodes (an H100 host's "0" read as "no nodes").
        self.assertIn("numa nodes with memory       2 (sysfs list 0-1)", out)

    def test_iommu_modes(self):
        groups = os.path.join(self.root, "sys/kernel/iommu_groups")
        for t, mode in (("identity", "passthrough"), ("DMA", "translated (strict)")):
            for g in ("0", "1"):
                with open(os.path.join(groups, g, "type"), "w") as f:
                    f.write(t + "\n")
            self.assertEqual(labhost.status(labhost.Host(self.root))["iommu"]["mode"], mode)
        shutil.rmtree(groups)
        shutil.rmtree(os.path.join(self.root, "sys/class/iommu"))
        self.assertEqual(labhost.status(labhost.Host(self.root))["iommu"]["mode"], "off")

    def test_status_of_a_kernel_without_ksm_thp_or_1g_pages(self):
        for d in ("sys/kernel/mm/ksm", "sys/kernel/mm/transparent_hugepage", "sys/kernel/mm/hugepages/hugepages-1048576kB"):
            shutil.rmtree(os.path.join(self.root, d))
        rc, out, _ = self.run_tool("status", "--json")
        s = json.loads(out)
        self.assertIsNone(s["ksm"])
        self.assertIsNone(s["thp"])
        self.assertIsNone(s["hugetlb_1g"])
        rc, out, _ = self.run_tool("status")
        self.assertEqual(rc, 0)
        self.assertIn("absent (CONFIG_KSM off)", out)

    # ---- prepare and undo

    def test_prepare_changes_what_is_asked_and_undo_restores_it_exactly(self):
        rc, out, err = self.run_tool("prepare", "--hugetlb-2m", "64", "--ksm", "--numa-balancing", "--thp", "madvise",
                                     "--khugepaged-scan-ms", "100", "--io-uring")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.read("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"), "64")
        self.assertEqual(self.read("sys/kernel/mm/ksm/run"), "1")
        self.assertEqual(self.read("proc/sys/kernel/numa_balancing"), "1")
        self.assertEqual(self.read("sys/kernel/mm/transparent_hugepage/enabled"), "madvise")
        self.assertEqual(self.read("sys/kernel/mm/transparent_hugepage/use_zero_page"), "1")
        self.assertEqual(self.read("sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs"), "100")
        self.assertEqual(self.read("proc/sys/kernel/io_uring_disabled"), "0")
        with open(self.state_path()) as f:
            state = json.load(f)
        self.assertEqual(len(state["changes"]), 7)
        self.assertEqual(state["changes"][0]["old"], "0")
        rc, out, err = self.run_tool("undo")
        self.assertEqual(rc, 0, err)
        for rel, text in FILES.items():
            if rel.startswith(("sys/kernel/mm", "proc/sys")):
                self.assertEqual(labhost.selected(self.read(rel)), labhost.selected(text.strip()), rel)
        self.assertFalse(os.path.exists(self.state_path()))

    def test_ksm_is_stopped_with_unmerge_on_undo(self):
        writes = []
        real_write = labhost.Host.write

        def spy(host, p, v):
            writes.append((p, v))
            real_write(host, p, v)
        self.assertEqual(self.run_tool("prepare", "--ksm")[0], 0)
        with mock.patch.object(labhost.Host, "write", spy):
            self.assertEqual(self.run_tool("undo")[0], 0)
        self.assertEqual(writes, [(labhost.KSM + "/run", "2"), (labhost.KSM + "/run", "0")])

    def test_a_setting_already_as_asked_is_left_alone_and_pools_only_grow(self):
        with open(os.path.join(self.root, "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"), "w") as f:
            f.write("2048\n")
        with open(os.path.join(self.root, "sys/kernel/mm/ksm/run"), "w") as f:
            f.write("1\n")
        rc, out, _ = self.run_tool("prepare", "--hugetlb-2m", "1024", "--ksm")
        self.assertEqual(rc, 0)
        self.assertIn("already 2048", out)
        self.assertIn("nothing needed changing", out)
        self.assertFalse(os.path.exists(self.state_path()))
        self.assertEqual(self.read("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"), "2048")

    def test_all_prepares_the_page_state_set_and_leaves_thp_that_is_on(self):
        with open(os.path.join(self.root, "sys/kernel/mm/transparent_hugepage/enabled"), "w") as f:
            f.write("always [madvise] never\n")
        with mock.patch.object(labhost, "ALL_SWAP_SIZE", "2M"):  # --all's 4G, smaller here
            rc, out, err = self.run_tool("prepare", "--all")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.read("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"), "1024")
        self.assertEqual(self.read("sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"), "1")
        self.assertEqual(self.read("sys/kernel/mm/transparent_hugepage/enabled"), "always [madvise] never")
        swap = os.path.join(self.root, labhost.ALL_SWAP_FILE.lstrip("/"))
        self.assertEqual(self.swapped, [("on", swap)])
        self.assertEqual(os.path.getsize(swap), 2 << 20)
        self.assertEqual(stat.S_IMODE(os.stat(swap).st_mode), 0o600)
        with open(swap, "rb") as f:
            f.seek(os.sysconf("SC_PAGE_SIZE") - 10)
            self.assertEqual(f.read(10), b"SWAPSPACE2")
        self.assertEqual(self.run_tool("undo")[0], 0)
        self.assertEqual(self.swapped, [("on", swap), ("off", swap)])
        self.assertFalse(os.path.exists(swap))
        self.assertEqual(self.read("sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"), "0")

    def test_a_second_prepare_before_undo_is_refused(self):
        self.assertEqual(self.run_tool("prepare", "--ksm")[0], 0)
        rc, _, err = self.run_tool("prepare", "--numa-balancing")
        self.assertEqual(rc, 2)
        self.assertIn("was not undone", err)
        self.assertEqual(self.read("proc/sys/kernel/numa_balancing"), "0")

    def test_a_failed_change_is_exit_1_and_what_was_changed_can_be_undone(self):
        # A setting the kernel refuses: its file is a folder here, so the write fails.
        target = os.path.join(self.root, "proc/sys/kernel/numa_balancing")
        os.unlink(target)
        os.makedirs(target)
        with open(os.path.join(target, "x"), "w"):
            pass
        rc, _, err = self.run_tool("prepare", "--ksm", "--numa-balancing")
        self.assertEqual(rc, 1)
        self.assertIn("numa balancing", err)
        self.assertEqual(self.read("sys/kernel/mm/ksm/run"), "1")
        self.assertEqual(self.run_tool("undo")[0], 0)
        self.assertEqual(self.read("sys/kernel/mm/ksm/run"), "0")

    def test_an_undo_that_fails_keeps_what_is_left_in_the_state_file(self):
        self.assertEqual(self.run_tool("prepare", "--ksm", "--numa-balancing")[0], 0)
        target = os.path.join(self.root, "proc/sys/kernel/numa_balancing")
        os.unlink(target)
        os.makedirs(target)
        rc, _, err = self.run_tool("undo")
        self.assertEqual(rc, 1)
        with open(self.state_path()) as f:
            left = json.load(f)["changes"]
        self.assertEqual([c["what"] for c in left], ["numa balancing"])
        self.assertEqual(self.read("sys/kernel/mm/ksm/run"), "0")

    def test_a_swap_file_that_cannot_be_turned_on_is_removed(self):
        def refuse(p):
            raise OSError(22, "Invalid argument", p)
        with mock.patch.object(labhost, "swapon", refuse):
            rc, _, err = self.run_tool("prepare", "--swap-file", "/var/tmp/s.swap", "--swap-size", "2M")
        self.assertEqual(rc, 1)
        self.assertIn("filesystem must support swap files", err)
        self.assertFalse(os.path.exists(os.path.join(self.root, "var/tmp/s.swap")))

    # ---- refusals

    def test_not_root_is_exit_3_with_a_clear_message(self):
        with mock.patch.object(labhost, "geteuid", lambda: 1000):
            rc, _, err = self.run_tool("prepare", "--ksm")
            self.assertEqual(rc, 3)
            self.assertIn("run it as root", err)
            self.assertEqual(self.read("sys/kernel/mm/ksm/run"), "0")

    def test_bad_usage_is_exit_2(self):
        for argv, text in ((["prepare"], "nothing asked"),
                           (["prepare", "--swap-file", "/var/tmp/x"], "go together"),
                           (["prepare", "--swap-file", "/var/tmp/x", "--swap-size", "12Q"], "size like"),
                           (["prepare", "--hugetlb-2m", "-1"], "0 or more"),
                           (["undo"], "nothing to undo")):
            rc, _, err = self.run_tool(*argv)
            self.assertEqual(rc, 2, argv)
            self.assertIn(text, err, argv)
        self.assertEqual(self.run_tool("frobnicate")[0], 2)
        self.assertEqual(self.run_tool("prepare", "--thp", "sometimes")[0], 2)

    def test_an_existing_swap_path_is_never_overwritten(self):
        path = os.path.join(self.root, "var/tmp/mine")
        with open(path, "w") as f:
            f.write("keep")
        rc, _, err = self.run_tool("prepare", "--swap-file", "/var/tmp/mine", "--swap-size", "1M")
        self.assertEqual(rc, 2)
        with open(path) as f:
            self.assertEqual(f.read(), "keep")

    def test_a_corrupt_state_file_is_exit_2(self):
        os.makedirs(os.path.dirname(self.state_path()), exist_ok=True)
        with open(self.state_path(), "w") as f:
            f.write("{not json")
        rc, _, err = self.run_tool("undo")
        self.assertEqual(rc, 2)
        self.assertIn("not a readable labhost state file", err)

    def test_help_is_exit_0_and_names_the_exit_codes(self):
        out = io.StringIO()
        with mock.patch("sys.stdout", out):
            self.assertEqual(labhost.main(["--help"]), 0)
        self.assertIn("Exit codes", out.getvalue())


if __name__ == "__main__":
    unittest.main()
