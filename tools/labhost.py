#!/usr/bin/env python3
"""Prepares a lab host for pagelock's page-state cases (suites/pagestates), and undoes it.

  tools/labhost status [--json]      every host setting the page-state cases depend on, measured
  tools/labhost prepare OPTIONS      changes what OPTIONS ask (root); saves what it changed
  tools/labhost undo                 restores exactly what prepare changed, from the saved state

No case changes the host by itself, and this tool never runs implicitly: a lab runs `prepare`
before a GPU run and `undo` after it (docs/lab.md, "Preparing a lab host for the page-state
cases").

prepare options (each only raises or turns on; a setting already as asked is left alone):
  --all                     the page-state set: --hugetlb-2m 1024, a 1 GiB pool of 1 if the
                            kernel can (best effort), --swap-file /var/tmp/pagelock-lab.swap
                            --swap-size 4G, --ksm, --numa-balancing, --thp madvise (only where
                            THP is off), --khugepaged-scan-ms 100, --io-uring
  --hugetlb-2m N            at least N free-able 2 MiB pages in the hugetlb pool
  --hugetlb-1g N            at least N 1 GiB pages (gigantic pages need contiguous memory: the
                            pool may come out smaller; the shortfall is reported)
  --swap-file PATH --swap-size SIZE
                            creates a swap file (SIZE: 512M, 4G...) and turns it on
  --ksm                     /sys/kernel/mm/ksm/run=1
  --numa-balancing          kernel.numa_balancing=1
  --thp MODE                transparent_hugepage/enabled=MODE (always, madvise) and the huge zero
                            page on (use_zero_page=1)
  --khugepaged-scan-ms MS   khugepaged/scan_sleep_millisecs=MS (it scans sooner)
  --io-uring                kernel.io_uring_disabled=0

--state FILE (default /var/tmp/pagelock-labhost.json) holds what prepare changed; prepare refuses
to run while one exists, undo removes it once everything is restored. --root DIR (or
PAGELOCK_LABHOST_ROOT) reads and writes /proc, /sys, /dev and the state file under DIR instead of
/ (the host tests use a fake tree).

Exit codes:
  0  done (status printed; prepare changed everything asked, pools possibly short: reported;
     undo restored everything)
  1  a change could not be made or undone (the state file keeps what is still to undo)
  2  bad usage: arguments, a state file that exists (prepare) or is missing or unreadable (undo),
     a swap file path that exists
  3  not root: prepare and undo change the host's configuration
"""

import argparse
import ctypes
import datetime
import glob
import json
import os
import re
import resource
import socket
import struct
import sys
import uuid

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.labhost"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import settings

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOT_ROOT = 0, 1, 2, 3
DEFAULT_STATE = "/var/tmp/pagelock-labhost.json"
STATE_VERSION = 1
HUGE_2M = "/sys/kernel/mm/hugepages/hugepages-2048kB"
HUGE_1G = "/sys/kernel/mm/hugepages/hugepages-1048576kB"
THP = "/sys/kernel/mm/transparent_hugepage"
KSM = "/sys/kernel/mm/ksm"
ALL_SWAP_FILE = "/var/tmp/pagelock-lab.swap"
ALL_SWAP_SIZE = "4G"


class UsageError(Exception):
    pass


def geteuid():
    return os.geteuid()


class Host:
    """Paths of /proc, /sys and /dev under a root (/ on a real host, a fake tree in tests)."""

    def __init__(self, root):
        self.root = root or "/"

    def path(self, p):
        return p if self.root == "/" else os.path.join(self.root, p.lstrip("/"))

    def read(self, p):
        """The file's text, stripped; None when it cannot be read."""
        try:
            with open(self.path(p), encoding="utf-8", errors="replace") as f:
                return f.read().strip()
        except OSError:
            return None

    def exists(self, p):
        return os.path.exists(self.path(p))

    def write(self, p, value):
        with open(self.path(p), "w", encoding="utf-8") as f:
            f.write(value)

    def glob(self, pattern):
        base = self.path("/")
        out = []
        for m in sorted(glob.glob(self.path(pattern))):
            out.append("/" + os.path.relpath(m, base) if self.root != "/" else m)
        return out


def selected(text):
    """The bracketed word of "always [madvise] never", or the text itself."""
    if text is None:
        return None
    m = re.search(r"\[([^\]]*)\]", text)
    return m.group(1) if m else text


def as_int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def meminfo(host):
    out = {}
    for line in (host.read("/proc/meminfo") or "").splitlines():
        m = re.match(r"(\w+):\s+(\d+)", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def zones(host):
    """{node: {zone: managed pages}} from /proc/zoneinfo."""
    out, node, zone = {}, None, None
    for line in (host.read("/proc/zoneinfo") or "").splitlines():
        m = re.match(r"Node (\d+), zone\s+(\S+)", line)
        if m:
            node, zone = int(m.group(1)), m.group(2)
            out.setdefault(node, {})[zone] = 0
            continue
        m = re.match(r"\s+managed\s+(\d+)", line)
        if m and node is not None:
            out[node][zone] = int(m.group(1))
    return out


def iommu(host):
    """The IOMMU mode the kernel shows: off, passthrough, translated (strict or lazy)."""
    units = [os.path.basename(p) for p in host.glob("/sys/class/iommu/*")]
    types = {}
    for g in host.glob("/sys/kernel/iommu_groups/*/type"):
        t = host.read(g)
        if t:
            types[t] = types.get(t, 0) + 1
    cmdline = host.read("/proc/cmdline") or ""
    params = [w for w in cmdline.split() if re.match(r"(iommu|intel_iommu|amd_iommu|iommu\.\w+)=", w)]
    if not units and not types:
        mode = "off"
    elif types and set(types) <= {"identity"}:
        mode = "passthrough"
    elif "DMA-FQ" in types:
        mode = "translated (lazy)"
    elif "DMA" in types:
        mode = "translated (strict)"
    elif types:
        mode = "translated (" + ", ".join(sorted(types)) + ")"
    else:
        mode = "present, no groups"
    return {"mode": mode, "units": units, "default_domain_types": types, "cmdline": params}


def cgroup(host):
    """This process's memory cgroup limits (v2, else v1)."""
    rel = None
    for line in (host.read("/proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[0] == "0":
            rel = parts[2]
    out = {"path": rel}
    if rel is not None:
        d = "/sys/fs/cgroup" + (rel if rel != "/" else "")
        for key in ("memory.max", "memory.high", "memory.swap.max"):
            out[key] = host.read(f"{d}/{key}")
    v1 = host.read("/sys/fs/cgroup/memory/memory.limit_in_bytes")
    if v1 is not None:
        out["memory.limit_in_bytes"] = v1
    return out


def swaps(host):
    out = []
    for line in (host.read("/proc/swaps") or "").splitlines()[1:]:
        f = line.split()
        if len(f) >= 4:
            out.append({"file": f[0], "type": f[1], "size_kib": as_int(f[2]), "used_kib": as_int(f[3])})
    return out


def hugetlb_pool(host, d):
    if not host.exists(d):
        return None
    return {"nr_hugepages": as_int(host.read(d + "/nr_hugepages")),
            "free_hugepages": as_int(host.read(d + "/free_hugepages"))}


def status(host):
    """Every setting the page-state cases depend on, measured."""
    mem = meminfo(host)
    z = zones(host)
    has_memory = host.read("/sys/devices/system/node/has_memory")
    nodes = {str(n): {"normal_managed_pages": zs.get("Normal", 0) + zs.get("DMA32", 0) + zs.get("DMA", 0),
                      "movable_managed_pages": zs.get("Movable", 0)} for n, zs in sorted(z.items())}
    ksm = None
    if host.exists(KSM + "/run"):
        ksm = {k: host.read(f"{KSM}/{k}") for k in ("run", "pages_to_scan", "sleep_millisecs", "full_scans",
                                                  "pages_sharing", "use_zero_pages")}
    thp = None
    if host.exists(THP + "/enabled"):
        thp = {"enabled": selected(host.read(THP + "/enabled")), "defrag": selected(host.read(THP + "/defrag")),
               "use_zero_page": host.read(THP + "/use_zero_page"),
               "khugepaged": {k: host.read(f"{THP}/khugepaged/{k}") for k in
                              ("defrag", "pages_to_scan", "scan_sleep_millisecs", "full_scans")}}
    heaps = [os.path.basename(p) for p in host.glob("/dev/dma_heap/*")]
    s = {
        "kernel": host.read("/proc/sys/kernel/osrelease"),
        "hugetlb_2m": hugetlb_pool(host, HUGE_2M),
        "hugetlb_1g": hugetlb_pool(host, HUGE_1G),
        "swap": {"devices": swaps(host), "total_kib": mem.get("SwapTotal"), "free_kib": mem.get("SwapFree")},
        "ksm": ksm,
        "thp": thp,
        "numa_balancing": host.read("/proc/sys/kernel/numa_balancing"),
        "numa": {"has_memory": has_memory, "has_normal_memory": host.read("/sys/devices/system/node/has_normal_memory"),
                 "nodes": nodes},
        "cma_kib": {"total": mem.get("CmaTotal"), "free": mem.get("CmaFree")},
        "iommu": iommu(host),
        "io_uring_disabled": host.read("/proc/sys/kernel/io_uring_disabled"),
        "dma_heap": {"system": "system" in heaps, "heaps": heaps},
        "memory_cgroup": cgroup(host),
        "memlock_limit": limit_text(resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]),
    }
    s["cases"] = readiness(s)
    return s


def limit_text(v):
    return "unlimited" if v == resource.RLIM_INFINITY else str(v)


def node_count(text):
    """Nodes in a sysfs node list ("0-1,3")."""
    n = 0
    for part in (text or "").split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            if a.isdigit() and b.isdigit():
                n += int(b) - int(a) + 1
        elif part.strip().isdigit():
            n += 1
    return n


def readiness(s):
    """Per page-state case family: what it needs, whether this host has it, what provides it."""
    thp = s["thp"] or {}
    swap_free = s["swap"]["free_kib"] or 0
    cg_swap = s["memory_cgroup"].get("memory.swap.max")
    movable = sum(n["movable_managed_pages"] for n in s["numa"]["nodes"].values())
    p2 = s["hugetlb_2m"] or {}
    p1 = s["hugetlb_1g"] or {}
    rows = [
        ("zero page, PTE-mapped and partial THPs, collapse", "transparent huge pages on (enabled always or madvise)",
         thp.get("enabled") in ("always", "madvise"), "--thp madvise"),
        ("huge zero page", "THP on and use_zero_page=1; root (kpageflags)",
         thp.get("enabled") in ("always", "madvise") and thp.get("use_zero_page") == "1", "--thp madvise"),
        ("swapped-out and swap-cache pages", "free swap, and the cgroup's memory.swap.max not 0",
         swap_free > 65536 and cg_swap != "0", "--swap-file PATH --swap-size 4G"),
        ("KSM-merged pages", "ksm/run=1", (s["ksm"] or {}).get("run") == "1", "--ksm"),
        ("khugepaged", "THP on; khugepaged scanning soon (scan_sleep_millisecs small)",
         thp.get("enabled") in ("always", "madvise") and
         (as_int((thp.get("khugepaged") or {}).get("scan_sleep_millisecs")) or 10 ** 9) <= 1000,
         "--khugepaged-scan-ms 100"),
        ("NUMA balancing", "kernel.numa_balancing=1 (two nodes to migrate)", s["numa_balancing"] not in (None, "0"),
         "--numa-balancing"),
        ("move_pages and mbind migration", "two NUMA nodes with memory", node_count(s["numa"]["has_memory"]) >= 2,
         "a host with two nodes (no setting)"),
        ("ZONE_MOVABLE pins", "a populated Movable zone", movable > 0,
         "boot with movablecore= or kernelcore= (no runtime setting)"),
        ("io_uring fixed buffers", "io_uring allowed", s["io_uring_disabled"] in (None, "0"), "--io-uring"),
        ("O_DIRECT second pins", "a test folder on ext4/xfs/btrfs (TMPDIR)", None, "TMPDIR on a disk filesystem"),
        ("PFNMAP RAM (dma-heap)", "/dev/dma_heap/system", s["dma_heap"]["system"],
         "CONFIG_DMABUF_HEAPS_SYSTEM (no runtime setting)"),
        ("hugetlbfs files shared by two processes", "free 2 MiB hugetlb pages",
         (p2.get("free_hugepages") or 0) >= 2, "--hugetlb-2m 1024"),
        ("1 GiB pages", "a free 1 GiB hugetlb page", (p1.get("free_hugepages") or 0) >= 1, "--hugetlb-1g 1"),
    ]
    return [{"cases": c, "needs": n, "met": m, "how": h} for c, n, m, h in rows]


def print_status(s, out):
    def show(label, value):
        print(f"{label:<28} {value}", file=out)
    show("kernel", s["kernel"])
    for key, label in (("hugetlb_2m", "hugetlb 2 MiB pool"), ("hugetlb_1g", "hugetlb 1 GiB pool")):
        p = s[key]
        show(label, "absent" if p is None else f"{p['nr_hugepages']} pages, {p['free_hugepages']} free")
    sw = s["swap"]
    show("swap", ", ".join(f"{d['file']} ({d['size_kib']} kB)" for d in sw["devices"]) or "none")
    show("swap free", f"{sw['free_kib']} kB")
    k = s["ksm"]
    show("ksm", "absent (CONFIG_KSM off)" if k is None else
         f"run={k['run']} pages_to_scan={k['pages_to_scan']} sleep_millisecs={k['sleep_millisecs']}")
    t = s["thp"]
    if t is None:
        show("thp", "absent")
    else:
        show("thp", f"enabled={t['enabled']} defrag={t['defrag']} use_zero_page={t['use_zero_page']}")
        kh = t["khugepaged"]
        show("khugepaged", f"defrag={kh['defrag']} pages_to_scan={kh['pages_to_scan']} "
                           f"scan_sleep_millisecs={kh['scan_sleep_millisecs']}")
    show("numa_balancing", s["numa_balancing"] if s["numa_balancing"] is not None else "absent")
    n = s["numa"]
    # The sysfs list "0" is node 0, one node: print the count, then the list.
    show("numa nodes with memory", f"{node_count(n['has_memory'])} (sysfs list {n['has_memory'] or 'empty'})")
    for node, v in n["nodes"].items():
        show(f"  node {node}", f"normal {v['normal_managed_pages']} pages, movable {v['movable_managed_pages']} pages")
    show("cma", f"{s['cma_kib']['total']} kB total, {s['cma_kib']['free']} kB free")
    io = s["iommu"]
    show("iommu", io["mode"] + (f" ({' '.join(io['cmdline'])})" if io["cmdline"] else ""))
    show("io_uring_disabled", s["io_uring_disabled"] if s["io_uring_disabled"] is not None else "absent (allowed)")
    show("dma_heap/system", "present" if s["dma_heap"]["system"] else "absent")
    cg = s["memory_cgroup"]
    show("memory cgroup", f"{cg.get('path')} max={cg.get('memory.max')} swap.max={cg.get('memory.swap.max')}")
    show("memlock limit", s["memlock_limit"])
    print("", file=out)
    print("page-state cases:", file=out)
    for r in s["cases"]:
        mark = "?" if r["met"] is None else ("yes" if r["met"] else "NO ")
        print(f"  [{mark}] {r['cases']}: needs {r['needs']}" + ("" if r["met"] else f"  -> {r['how']}"), file=out)


# ---- prepare / undo ----------------------------------------------------------------------------

def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMGT]?)i?B?", text.strip(), re.I)
    if not m:
        raise UsageError(f"--swap-size {text!r}: give a size like 512M or 4G")
    mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2).upper()]
    size = int(m.group(1)) * mult
    if size < (1 << 20):
        raise UsageError(f"--swap-size {text!r}: at least 1M")
    return size


def write_swap_header(f, size):
    """What mkswap writes: the version-1 header in the first page, "SWAPSPACE2" at its end."""
    page = os.sysconf("SC_PAGE_SIZE")
    pages = size // page
    header = struct.pack("<III", 1, pages - 1, 0) + uuid.uuid4().bytes + b"pagelock-lab".ljust(16, b"\0")
    f.seek(1024)
    f.write(header)
    f.seek(page - 10)
    f.write(b"SWAPSPACE2")


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def swapon(path):
    """swapon(2); raises OSError."""
    if _libc().swapon(os.fsencode(path), 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)


def swapoff(path):
    """swapoff(2); raises OSError."""
    if _libc().swapoff(os.fsencode(path)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)


class State:
    """The state file: what prepare changed, in order, written after every change."""

    def __init__(self, path, data=None):
        self.path = path
        self.data = data or {"version": STATE_VERSION, "tool": "pagelock labhost",
                             "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                             "host": socket.gethostname(), "changes": []}

    @classmethod
    def load(cls, path):
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            raise UsageError(f"no state file at {path}: nothing to undo (prepare writes it)")
        except (OSError, ValueError) as e:
            raise UsageError(f"{path}: not a readable labhost state file: {e}")
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION or \
                not isinstance(data.get("changes"), list):
            raise UsageError(f"{path}: not a labhost state file of version {STATE_VERSION}")
        return cls(path, data)

    def add(self, change):
        self.data["changes"].append(change)
        self.save()

    def save(self):
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.data, f, indent=1)
            f.write("\n")
        os.replace(tmp, self.path)


class Preparer:
    def __init__(self, host, state, out, err):
        self.host, self.state, self.out, self.err = host, state, out, err
        self.failed = False

    def fail(self, text):
        print(f"labhost: {text}", file=self.err)
        self.failed = True

    def set_value(self, path, new, what, keep_if=None):
        """Writes `new` to `path` (recorded with the old value). keep_if(old) true: left alone."""
        old_text = self.host.read(path)
        if old_text is None:
            self.fail(f"{what}: {path} cannot be read (the kernel lacks the setting)")
            return None
        old = selected(old_text)
        if old == new or (keep_if and keep_if(old)):
            print(f"{what}: {path} is already {old}", file=self.out)
            return old
        try:
            self.host.write(path, new)
        except OSError as e:
            self.fail(f"{what}: writing {new} to {path}: {e.strerror or e}")
            return None
        self.state.add({"kind": "setting", "path": path, "old": old, "new": new, "what": what})
        now = selected(self.host.read(path))
        print(f"{what}: {path} {old} -> {now}", file=self.out)
        return now

    def pool(self, d, want, what, best_effort=False):
        if not self.host.exists(d):
            text = f"{what}: the kernel has no such page size ({d} absent)"
            if best_effort:
                print(f"labhost: {text}; skipped", file=self.err)
            else:
                self.fail(text)
            return
        path = d + "/nr_hugepages"
        old = as_int(self.host.read(path))
        if old is not None and old >= want:
            print(f"{what}: {path} is already {old}", file=self.out)
            return
        try:
            self.host.write(path, str(want))
        except OSError as e:
            if best_effort:
                print(f"labhost: {what}: {e.strerror or e}; skipped", file=self.err)
            else:
                self.fail(f"{what}: writing {want} to {path}: {e.strerror or e}")
            return
        self.state.add({"kind": "setting", "path": path, "old": str(old), "new": str(want), "what": what})
        got = as_int(self.host.read(path))
        print(f"{what}: {path} {old} -> {got}", file=self.out)
        if got is None or got < want:
            print(f"labhost: {what}: asked for {want}, the kernel allocated {got} (memory too fragmented for "
                  f"more); the cases that need more report NotSupported with the pool they found", file=self.err)

    def swap(self, path, size):
        real = self.host.path(path)
        try:
            fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as e:
            self.fail(f"swap file {path}: {e.strerror or e}")
            return
        try:
            with os.fdopen(fd, "wb") as f:
                chunk = b"\0" * (8 << 20)
                left = size
                while left:  # written, not fallocated: swapon refuses files with holes
                    n = min(left, len(chunk))
                    f.write(chunk[:n])
                    left -= n
                write_swap_header(f, size)
                f.flush()
                os.fsync(f.fileno())
            swapon(real)
        except OSError as e:
            try:
                os.unlink(real)
            except OSError:
                pass
            self.fail(f"swap file {path}: {e.strerror or e} (the filesystem must support swap files: "
                      f"ext4 or xfs, not tmpfs or overlayfs)")
            return
        self.state.add({"kind": "swap", "path": path, "size": size, "what": "swap file"})
        print(f"swap file: {path} ({size >> 20} MiB) on", file=self.out)


def prepare(host, args, out, err):
    if args.swap_file and not args.swap_size or args.swap_size and not args.swap_file:
        raise UsageError("--swap-file and --swap-size go together")
    swap_size = parse_size(args.swap_size) if args.swap_size else None
    asked = any([args.all, args.hugetlb_2m is not None, args.hugetlb_1g is not None, args.swap_file, args.ksm,
                 args.numa_balancing, args.thp, args.khugepaged_scan_ms is not None, args.io_uring])
    if not asked:
        raise UsageError("prepare: nothing asked (see --help; --all prepares every page-state setting)")
    for name in ("hugetlb_2m", "hugetlb_1g", "khugepaged_scan_ms"):
        v = getattr(args, name)
        if v is not None and v < 0:
            raise UsageError(f"--{name.replace('_', '-')} {v}: must be 0 or more")
    swap_file = args.swap_file or (ALL_SWAP_FILE if args.all else None)
    if swap_file and os.path.lexists(host.path(swap_file)):
        raise UsageError(f"--swap-file {swap_file} exists: give a new path (labhost never overwrites a file)")
    state_path = host.path(args.state)
    if os.path.exists(state_path):
        raise UsageError(f"{args.state} exists: a previous prepare was not undone (run `tools/labhost undo` first)")
    if geteuid() != 0:
        return EXIT_NOT_ROOT
    state = State(state_path)
    state.save()
    p = Preparer(host, state, out, err)
    if args.hugetlb_2m is not None or args.all:
        p.pool(HUGE_2M, args.hugetlb_2m if args.hugetlb_2m is not None else 1024, "hugetlb 2 MiB pool")
    if args.hugetlb_1g is not None or args.all:
        p.pool(HUGE_1G, args.hugetlb_1g if args.hugetlb_1g is not None else 1, "hugetlb 1 GiB pool",
               best_effort=args.hugetlb_1g is None)
    if swap_file:
        p.swap(swap_file, swap_size or parse_size(ALL_SWAP_SIZE))
    if args.ksm or args.all:
        p.set_value(KSM + "/run", "1", "ksm")
    if args.numa_balancing or args.all:
        p.set_value("/proc/sys/kernel/numa_balancing", "1", "numa balancing", keep_if=lambda v: v not in ("0",))
    if args.thp or args.all:
        mode = args.thp or "madvise"
        keep = None if args.thp else (lambda v: v in ("always", "madvise"))
        p.set_value(THP + "/enabled", mode, "thp", keep_if=keep)
        p.set_value(THP + "/use_zero_page", "1", "huge zero page")
    if args.khugepaged_scan_ms is not None or args.all:
        ms = args.khugepaged_scan_ms if args.khugepaged_scan_ms is not None else 100
        p.set_value(THP + "/khugepaged/scan_sleep_millisecs", str(ms), "khugepaged scan interval")
    if args.io_uring or args.all:
        if host.read("/proc/sys/kernel/io_uring_disabled") is None:
            print("io_uring: no kernel.io_uring_disabled on this kernel (io_uring is allowed)", file=out)
        else:
            p.set_value("/proc/sys/kernel/io_uring_disabled", "0", "io_uring")
    if not state.data["changes"]:
        os.unlink(state_path)
        print("labhost: nothing needed changing; no state file written", file=out)
    else:
        print(f"labhost: {len(state.data['changes'])} change(s) saved in {args.state}; "
              f"`tools/labhost undo` restores them", file=out)
    return EXIT_FAILED if p.failed else EXIT_OK


def undo(host, args, out, err):
    state_path = host.path(args.state)
    state = State.load(state_path)
    if geteuid() != 0:
        return EXIT_NOT_ROOT
    left = []
    for c in reversed(state.data["changes"]):
        try:
            if c.get("kind") == "swap":
                real = host.path(c["path"])
                swapoff(real)
                os.unlink(real)
                print(f"swap file: {c['path']} off and removed", file=out)
            elif c.get("kind") == "setting":
                path, old = c["path"], c["old"]
                if path == KSM + "/run" and old == "0":
                    host.write(path, "2")  # stop ksmd and unmerge what it merged, then as it was
                host.write(path, old)
                print(f"{c.get('what', path)}: {path} -> {selected(host.read(path))}", file=out)
            else:
                raise OSError(0, f"unknown change {c!r}")
        except OSError as e:
            print(f"labhost: undoing {c.get('what')} ({c.get('path')}): {e.strerror or e}", file=err)
            left.insert(0, c)
    if left:
        state.data["changes"] = left
        state.save()
        print(f"labhost: {len(left)} change(s) could not be undone; they stay in {args.state}", file=err)
        return EXIT_FAILED
    os.unlink(state_path)
    print("labhost: every change undone", file=out)
    return EXIT_OK


def parser():
    p = argparse.ArgumentParser(prog="tools/labhost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=settings.value("PAGELOCK_LABHOST_ROOT"),
                   help="read and write /proc, /sys, /dev and the state file under this folder (tests)")
    p.add_argument("--state", default=DEFAULT_STATE, help=f"the state file (default {DEFAULT_STATE})")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("status", help="print the settings the page-state cases depend on")
    s.add_argument("--json", action="store_true", help="one JSON object on stdout")
    pr = sub.add_parser("prepare", help="change the settings asked (root)")
    pr.add_argument("--all", action="store_true", help="every page-state setting (see the top of --help)")
    pr.add_argument("--hugetlb-2m", type=int, metavar="N")
    pr.add_argument("--hugetlb-1g", type=int, metavar="N")
    pr.add_argument("--swap-file", metavar="PATH")
    pr.add_argument("--swap-size", metavar="SIZE")
    pr.add_argument("--ksm", action="store_true")
    pr.add_argument("--numa-balancing", action="store_true")
    pr.add_argument("--thp", choices=("always", "madvise"))
    pr.add_argument("--khugepaged-scan-ms", type=int, metavar="MS")
    pr.add_argument("--io-uring", action="store_true")
    sub.add_parser("undo", help="restore what prepare changed (root)")
    return p


def main(argv=None, out=None, err=None):
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:
        return EXIT_OK if e.code == 0 else EXIT_USAGE
    host = Host(args.root)
    try:
        if args.command == "status":
            s = status(host)
            if args.json:
                json.dump(s, out, indent=1)
                out.write("\n")
            else:
                print_status(s, out)
            return EXIT_OK
        rc = prepare(host, args, out, err) if args.command == "prepare" else undo(host, args, out, err)
        if rc == EXIT_NOT_ROOT:
            print(f"labhost: {args.command} changes the host's configuration: run it as root "
                  f"(sudo tools/labhost {args.command} ...)", file=err)
        return rc
    except UsageError as e:
        print(f"labhost: {e}", file=err)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
