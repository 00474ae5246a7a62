"""Why a case did not run, in groups a reviewer can act on.

A NOT_SUPPORTED case names its reason (the attribute and its value, the host setting, the GPU
count). Reviewing a first night, or a baseline before adopting it, means telling apart what the
lab can fix (host setup: a hugetlb pool, swap, KSM, a cgroup, an operator variable) from what
the machine is (hardware: GPU count, NUMA nodes; capability: the device or driver lacks it;
runtime: the CUDA toolkit the bundle was built with). Each group carries the fix where there is
one.

  group = classify("mmap(hugetlb) failed: Cannot allocate memory ...")
  group.category   # "host setup"
  group.fix        # "tools/labhost prepare --hugetlb-2m 1024"
  summary(run.cases)  # [{category, reason, cases, fix, example}], host setup first

A reason that names its own fix ('...; tools/labhost prepare --swap 8G') keeps it.
"""

import re
from dataclasses import dataclass

CATEGORIES = ("host setup", "operator setting", "hardware", "runtime", "capability", "other")
# (category, reason pattern, fix[, the host facts it depends on]). First match wins; a fix
# named in the reason itself wins. The facts are those of fixtures/host_setup.h.
RULES = (
    ("host setup", r"hugetlb|HugePages", "tools/labhost prepare --hugetlb-2m 1024", ("hugetlb-2m-pool", "hugetlb-1g-pool")),
    ("host setup", r"\bswap\b|MADV_PAGEOUT", "tools/labhost prepare --swap-file /var/tmp/pagelock-lab.swap --swap-size 4G",
     ("swap",)),
    ("host setup", r"\bKSM\b|/sys/kernel/mm/ksm", "tools/labhost prepare --ksm", ("ksm",)),
    ("host setup", r"numa_balancing", "tools/labhost prepare --numa-balancing", ("numa-balancing",)),
    ("host setup", r"transparent_hugepage|\bTHP\b|khugepaged", "tools/labhost prepare --thp madvise", ("thp",)),
    ("host setup", r"cgroup|memory\.max", "run where a cgroup-v2 child cgroup with the memory controller can be created",
     ("memory-cgroup",)),
    ("host setup", r"RLIMIT_MEMLOCK|memlock", "ulimit -l unlimited"),
    ("host setup", r"iommu|IOMMU|DMAR", "", ("iommu-translated", "iommu-passthrough")),
    ("host setup", r"io_uring|O_DIRECT|tmpfs|/dev/dma_heap|stat_refresh|dmesg|/dev/kmsg|not root|CAP_", ""),
    ("operator setting", r"\bPAGELOCK_[A-Z0-9_]+ (?:unset|is not set)", ""),
    ("hardware", r"cudaGetDeviceCount=\d+ \(need \d+\)|numa nodes with (?:normal )?memory=\d+ \(need \d+\)|need(?:s)? \d+ GPUs", ""),
    ("runtime", r"needs CUDA runtime|CUDART_VERSION", "build the bundle with a newer CUDA toolkit"),
    ("capability", r"cudaDevAttr|CU_DEVICE_ATTRIBUTE|host atomics not native|not supported by (?:the|this) (?:device|driver)", ""),
)
_RULES = [(r[0], re.compile(r[1]), r[2], r[3] if len(r) > 3 else ()) for r in RULES]
_OWN_FIX = re.compile(r"(tools/labhost prepare[^;)\n]*)")
_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")


@dataclass(frozen=True)
class Group:
    category: str
    fix: str = ""
    facts: tuple = ()  # the host facts (fixtures/host_setup.h) the reason depends on, if known


def classify(reason):
    """The group of one NOT_SUPPORTED (or SKIP) reason."""
    own = _OWN_FIX.search(reason or "")
    for category, rx, fix, facts in _RULES:
        if rx.search(reason or ""):
            return Group(category, own.group(1).strip() if own else fix, facts)
    return Group("other", own.group(1).strip() if own else "")


def _shape(reason):
    """A reason with its numbers replaced, so that 'need 2' cases of every size fold together."""
    return _NUMBERS.sub("N", (reason or "").strip())[:200]


def summary(cases):
    """The not-run cases grouped by reason: [{category, reason, cases, fix, example}], host setup
    (what the lab can fix) first, then by count."""
    groups = {}
    for c in cases:
        if str(c.status) not in ("NOT_SUPPORTED", "SKIP"):
            continue
        reason = c.reason or c.message or "(no reason given)"
        key = _shape(reason)
        g = groups.get(key)
        if g is None:
            group = classify(reason)
            g = groups[key] = {"category": group.category, "reason": reason.strip()[:300], "cases": 0,
                               "fix": group.fix, "example": str(c.id)}
        g["cases"] += 1
    order = {c: i for i, c in enumerate(CATEGORIES)}
    return sorted(groups.values(), key=lambda g: (order[g["category"]], -g["cases"], g["reason"]))
