#!/usr/bin/env python3
"""Tables pagelock's bandwidth figures beside NVIDIA nvbandwidth's, measured on the same GPU in the
same session, with the ratio pagelock / nvbandwidth for each host<->device case.

  tools/bandwidth/nvbandwidth_compare.py --pagelock PAGELOCK [--pagelock PAGELOCK ...]
                                         [--nvbandwidth BIN | --nvbandwidth-output FILE]
                                         [--device N] [--tolerance 0.02] [--rounds N] [--check] [--json OUT]

PAGELOCK is the bandwidth test binary (bin/suites/bandwidth/bandwidth_test in a bundle; it is run
with --gtest_filter=BandwidthTest.*), or the gtest XML it wrote, or a folder holding that XML
(a runner --out folder). Give --pagelock again for the bidirectional SM copies
(bin/suites/bandwidth/sm_traffic_stress_test: nvbandwidth's sizes and counts; run with
--gtest_filter=SmTrafficTest.Bidirectional*) and, with two or more GPUs, for the all-GPU binary
(bin/suites/multigpu/all_gpus_bidirectional_stress_test; run with --gtest_filter=AllGpusCopyTest.*):
the figures of every source are merged. BIN is an nvbandwidth
binary, run once per case (-t NAME); FILE is saved nvbandwidth output. Without either, only
pagelock's figures are tabled.

The single-device cases compare nvbandwidth's cell of --device. The all-GPU cases (host_to_all,
all_to_host and their bidirectional forms) compare each GPU's cell with pagelock's figure for that
GPU (host_to_all_bidir_h2d_gpu1_GBps, ...) and the SUM line with pagelock's sum; with one GPU,
where pagelock's all-GPU cases are NotSupported, with the single-device figure of the same method.

--rounds N (both given as binaries) runs the two tools N times, alternating, and compares the
medians; the table adds each tool's min-max over the rounds. One run of a noisy figure (the
bidirectional H2D one moved from 43.8 to 51.1 GB/s between two nvbandwidth runs on one H200) can
land outside the tolerance while both tools agree.

Prints a Markdown table. Exit codes: 0 table printed; 2 bad input (a missing or unreadable file, a
binary that did not run, output with none of the figures); 3 with --check, some case is missing or
its ratio is outside 1 +- tolerance.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

# nvbandwidth case -> (pagelock metric names, first found wins; unit).
CASES = [
    ("host_to_device_memcpy_ce", ["h2d_pinned_ce_GBps", "h2d_allocated_ce_GBps"], "GB/s"),
    ("device_to_host_memcpy_ce", ["d2h_pinned_ce_GBps", "d2h_allocated_ce_GBps"], "GB/s"),
    ("host_to_device_bidirectional_memcpy_ce", ["h2d_bidir_ce_GBps"], "GB/s"),
    ("device_to_host_bidirectional_memcpy_ce", ["d2h_bidir_ce_GBps"], "GB/s"),
    ("host_to_device_memcpy_sm", ["h2d_sm_GBps"], "GB/s"),
    ("device_to_host_memcpy_sm", ["d2h_sm_GBps"], "GB/s"),
    # Bidirectional SM copies through mapped memory, from suites/bandwidth/sm_traffic_test.cc's
    # stress build (nvbandwidth's sizes and counts).
    ("host_to_device_bidirectional_memcpy_sm", ["h2d_bidir_sm_GBps"], "GB/s"),
    ("device_to_host_bidirectional_memcpy_sm", ["d2h_bidir_sm_GBps"], "GB/s"),
    ("host_device_latency_sm", ["host_device_latency_ns"], "ns"),
    # Every GPU at once (two or more GPUs): nvbandwidth's SUM line against pagelock's sum, from
    # suites/multigpu/all_gpus_bidirectional_test.cc (its stress build: nvbandwidth's method)
    # first, else the bandwidth suite's all-devices case.
    ("host_to_all_memcpy_ce:sum", ["host_to_all_h2d_sum_GBps", "host_to_all_ce_sum_GBps"], "GB/s"),
    ("all_to_host_memcpy_ce:sum", ["all_to_host_d2h_sum_GBps", "all_to_host_ce_sum_GBps"], "GB/s"),
    ("host_to_all_bidirectional_memcpy_ce:sum", ["host_to_all_bidir_h2d_sum_GBps"], "GB/s"),
    ("all_to_host_bidirectional_memcpy_ce:sum", ["all_to_host_bidir_d2h_sum_GBps"], "GB/s"),
]
# The multi-GPU cases compared per GPU too: nvbandwidth's matrix cell of GPU i (measured while
# every other GPU interferes) against pagelock's metric for GPU i. (case, metric pattern).
PER_GPU = [
    ("host_to_all_memcpy_ce", "host_to_all_h2d_gpu{}_GBps"),
    ("all_to_host_memcpy_ce", "all_to_host_d2h_gpu{}_GBps"),
    ("host_to_all_bidirectional_memcpy_ce", "host_to_all_bidir_h2d_gpu{}_GBps"),
    ("all_to_host_bidirectional_memcpy_ce", "all_to_host_bidir_d2h_gpu{}_GBps"),
]
# Cases only tabled when one of the tools has a figure (they need two or more GPUs in pagelock).
OPTIONAL = {"host_to_all_memcpy_ce:sum", "all_to_host_memcpy_ce:sum",
            "host_to_all_bidirectional_memcpy_ce:sum", "all_to_host_bidirectional_memcpy_ce:sum"}
# With one GPU nvbandwidth still runs the all-GPU cases (its SUM and its one cell are that GPU's
# figure, with no other GPU interfering), while pagelock's all-GPU cases need two GPUs: compare
# with the single-device figure of the same method.
_ONE_GPU = {
    "host_to_all_memcpy_ce": ["h2d_pinned_ce_GBps", "h2d_allocated_ce_GBps"],
    "all_to_host_memcpy_ce": ["d2h_pinned_ce_GBps", "d2h_allocated_ce_GBps"],
    "host_to_all_bidirectional_memcpy_ce": ["h2d_bidir_ce_GBps"],
    "all_to_host_bidirectional_memcpy_ce": ["d2h_bidir_ce_GBps"],
}
SINGLE_GPU_FALLBACK = {f"{case}:{cell}": names for case, names in _ONE_GPU.items() for cell in ("sum", "gpu0")}
# The gtest filter each pagelock binary is run with, by file name (others: every case).
BINARY_FILTERS = {
    "bandwidth_test": "BandwidthTest.*",
    "all_gpus_bidirectional_test": "AllGpusCopyTest.*",
    "all_gpus_bidirectional_stress_test": "AllGpusCopyTest.*",
    "sm_traffic_test": "SmTrafficTest.Bidirectional*",
    "sm_traffic_stress_test": "SmTrafficTest.Bidirectional*",
}
METRIC_PREFIX = "pagelock.metric."
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class InputError(Exception):
    """Bad input: reported as one line, exit code 2."""


def metrics_from_xml(path):
    """{metric name: value} from a gtest XML file (property elements or testcase attributes)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise InputError(f"{path}: not a readable gtest XML file ({e})")
    found = {}
    for case in root.iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        props.update({k: v for k, v in case.attrib.items() if k.startswith(METRIC_PREFIX)})
        for key, value in props.items():
            if key and key.startswith(METRIC_PREFIX) and value:
                m = NUMBER.search(value)
                if m:
                    found.setdefault(key[len(METRIC_PREFIX):], float(m.group(0)))
    return found


def pagelock_metrics(source, timeout_s=900):
    if os.path.isdir(source):
        found = {}
        for dirpath, _, files in os.walk(source):
            for name in sorted(files):
                if name.endswith(".xml"):
                    try:
                        found.update(metrics_from_xml(os.path.join(dirpath, name)))
                    except InputError:
                        continue  # other XML in a results folder
        return found
    if not os.path.isfile(source):
        raise InputError(f"{source}: no such file or folder")
    if source.endswith(".xml") or not os.access(source, os.X_OK):
        return metrics_from_xml(source)
    with tempfile.TemporaryDirectory() as tmp:
        xml = os.path.join(tmp, "bandwidth.xml")
        # nvbandwidth's loop of 16 copies per sample (the full tier times 8).
        env = dict(os.environ, PAGELOCK_JOURNAL=os.path.join(tmp, "journal.jsonl"), PAGELOCK_NVBW_LOOPS="16")
        gtest_filter = BINARY_FILTERS.get(os.path.basename(source), "*")
        try:
            proc = subprocess.run([source, f"--gtest_filter={gtest_filter}", f"--gtest_output=xml:{xml}"],
                                  env=env, capture_output=True, text=True,
                                  encoding="utf-8", errors="replace", timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise InputError(f"{source}: could not run ({e})")
        if not os.path.exists(xml):
            raise InputError(f"{source}: exited {proc.returncode} without writing its XML; "
                             f"last output: {proc.stdout[-300:] + proc.stderr[-300:]}")
        if proc.returncode != 0:
            print(f"nvbandwidth_compare: {source} exited {proc.returncode} (a case failed); "
                  "its figures are tabled anyway", file=sys.stderr)
        return metrics_from_xml(xml)


def parse_nvbandwidth(text, device=0):
    """{case: value} from nvbandwidth output: the CPU row's cell for `device` in each case's matrix,
    else the case's SUM line."""
    found = {}
    current, rows_seen = None, False
    for line in text.splitlines():
        m = re.match(r"\s*Running (\w+)\.?\s*$", line)
        if m:
            current, rows_seen = m.group(1), False
            continue
        m = re.match(r"\s*SUM (\w+)\s+(" + NUMBER.pattern + r")\s*$", line)
        if m:
            found.setdefault(m.group(1), float(m.group(2)))
            found[m.group(1) + ":sum"] = float(m.group(2))
            current = None
            continue
        if current and not rows_seen:
            cells = line.split()
            if cells and cells == [str(i) for i in range(len(cells))]:
                continue  # the column header: 0 1 2 ...
            # A matrix row: its index, then one cell per column ("N/A" where not measured).
            if len(cells) >= 2 and cells[0].isdigit() and all(NUMBER.fullmatch(c) or c == "N/A" for c in cells[1:]):
                rows_seen = True
                found[current + ":gpus"] = len(cells) - 1
                for i, cell in enumerate(cells[1:]):
                    if cell != "N/A":
                        found[f"{current}:gpu{i}"] = float(cell)
                if device + 1 < len(cells) and cells[device + 1] != "N/A":
                    found[current] = float(cells[device + 1])
    return found


def nvbandwidth_figures(binary, output, device, timeout_s=600):
    if output:
        try:
            with open(output, encoding="utf-8", errors="replace") as f:
                return parse_nvbandwidth(f.read(), device)
        except OSError as e:
            raise InputError(f"{output}: {e.strerror}")
    if not binary:
        return {}
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        raise InputError(f"{binary}: not an executable file")
    text = []
    for case in dict.fromkeys(c.split(":")[0] for c, _, _ in CASES):
        try:
            proc = subprocess.run([binary, "-t", case], capture_output=True, text=True,
                                  encoding="utf-8", errors="replace", timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise InputError(f"{binary} -t {case}: could not run ({e})")
        if proc.returncode != 0:
            print(f"nvbandwidth_compare: {binary} -t {case} exited {proc.returncode}: "
                  f"{(proc.stderr or proc.stdout)[-200:].strip()}", file=sys.stderr)
        text.append(proc.stdout)
    return parse_nvbandwidth("\n".join(text), device)


def per_gpu_cases(pagelock, nvbw):
    """(case, [metric], unit) rows of PER_GPU, for every GPU either tool has a figure of."""
    rows = []
    for case, pattern in PER_GPU:
        gpus = nvbw.get(case + ":gpus", 0)
        while pattern.format(gpus) in pagelock:
            gpus += 1
        rows += [(f"{case}:gpu{i}", [pattern.format(i)], "GB/s") for i in range(int(gpus))]
    return rows


def compare(pagelock, nvbw, tolerance):
    rows = []
    for case, names, unit in CASES + per_gpu_cases(pagelock, nvbw):
        name = next((n for n in names if n in pagelock), names[0])
        if name not in pagelock and nvbw.get(case.split(":")[0] + ":gpus") == 1:
            name = next((n for n in SINGLE_GPU_FALLBACK.get(case, []) if n in pagelock), name)
        mine, theirs = pagelock.get(name), nvbw.get(case)
        if (case in OPTIONAL or ":gpu" in case) and mine is None and theirs is None:
            continue
        ratio = mine / theirs if mine is not None and theirs else None
        rows.append({"case": case, "metric": name, "unit": unit, "nvbandwidth": theirs, "pagelock": mine,
                     "ratio": ratio, "within": ratio is not None and abs(ratio - 1) <= tolerance})
    return rows


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def combine(rounds):
    """The median of each figure over the rounds (a list of {name: value}), and its (min, max)."""
    keys = dict.fromkeys(k for r in rounds for k in r)
    values = {k: [r[k] for r in rounds if k in r and isinstance(r[k], float)] for k in keys}
    med = {k: (median(v) if v else next(r[k] for r in reversed(rounds) if k in r)) for k, v in values.items()}
    spread = {k: (min(v), max(v)) for k, v in values.items() if v}
    return med, spread


def add_spread(rows, nvbw_spread, mine_spread, rounds):
    for r in rows:
        r["rounds"] = rounds
        r["nvbandwidth_range"] = nvbw_spread.get(r["case"])
        r["pagelock_range"] = mine_spread.get(r["metric"])
    return rows


def markdown(rows, tolerance, have_nvbw):
    fmt = lambda v: "—" if v is None else f"{v:.2f}"  # noqa: E731
    rng = lambda v: "—" if not v else f"{v[0]:.2f}–{v[1]:.2f}"  # noqa: E731
    rounds = max((r.get("rounds", 1) for r in rows), default=1)
    if rounds > 1:
        out = [f"Medians of {rounds} alternating runs of each tool.", "",
               f"| nvbandwidth case | pagelock metric | unit | nvbandwidth | pagelock | pagelock / nvbandwidth | within ±{tolerance:.0%} | nvbandwidth min–max | pagelock min–max |",
               "|---|---|---|---:|---:|---:|---|---:|---:|"]
    else:
        out = [f"| nvbandwidth case | pagelock metric | unit | nvbandwidth | pagelock | pagelock / nvbandwidth | within ±{tolerance:.0%} |",
               "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        within = ("yes" if r["within"] else "no") if r["ratio"] is not None else ("—" if not have_nvbw else "missing")
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.3f}"
        line = f"| {r['case']} | {r['metric']} | {r['unit']} | {fmt(r['nvbandwidth'])} | {fmt(r['pagelock'])} | {ratio} | {within} |"
        if rounds > 1:
            line += f" {rng(r.get('nvbandwidth_range'))} | {rng(r.get('pagelock_range'))} |"
        out.append(line)
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pagelock", required=True, action="append",
                   help="bandwidth_test (or all_gpus_bidirectional_stress_test) binary, its gtest XML, or a "
                        "results folder; repeat it to merge several (their metric names are distinct)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--nvbandwidth", help="nvbandwidth binary to run")
    g.add_argument("--nvbandwidth-output", help="saved nvbandwidth output")
    p.add_argument("--device", type=int, default=0, help="GPU column of nvbandwidth's matrices (default 0)")
    p.add_argument("--tolerance", type=float, default=0.02, help="accepted |ratio - 1| (default 0.02)")
    p.add_argument("--rounds", type=int, default=1,
                   help="alternating runs of both binaries; the medians are compared (default 1)")
    p.add_argument("--check", action="store_true", help="exit 3 when a case is missing or outside the tolerance")
    p.add_argument("--json", help="also write the rows as JSON here")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    if args.device < 0 or args.tolerance < 0:
        print("nvbandwidth_compare: --device and --tolerance must be >= 0", file=sys.stderr)
        return 2
    binaries = all(os.path.isfile(s) and os.access(s, os.X_OK) and not s.endswith(".xml") for s in args.pagelock)
    if args.rounds < 1 or (args.rounds > 1 and not (args.nvbandwidth and binaries)):
        print("nvbandwidth_compare: --rounds must be >= 1, and above 1 both --pagelock and "
              "--nvbandwidth must be binaries to run", file=sys.stderr)
        return 2
    try:
        nvbw_rounds, mine_rounds = [], []
        for _ in range(args.rounds):
            nvbw_rounds.append(nvbandwidth_figures(args.nvbandwidth, args.nvbandwidth_output, args.device))
            mine = {}
            for source in args.pagelock:
                mine.update(pagelock_metrics(source))
            mine_rounds.append(mine)
    except InputError as e:
        print(f"nvbandwidth_compare: {e}", file=sys.stderr)
        return 2
    nvbw, nvbw_spread = combine(nvbw_rounds)
    mine, mine_spread = combine(mine_rounds)
    have_nvbw = bool(args.nvbandwidth or args.nvbandwidth_output)
    if not mine:
        print(f"nvbandwidth_compare: {', '.join(args.pagelock)}: no pagelock bandwidth metrics found "
              "(NotSupported here? no GPU?)", file=sys.stderr)
        return 2
    if have_nvbw and not nvbw:
        print("nvbandwidth_compare: no figures found in nvbandwidth's output", file=sys.stderr)
        return 2
    rows = add_spread(compare(mine, nvbw, args.tolerance), nvbw_spread, mine_spread, args.rounds)
    print(markdown(rows, args.tolerance, have_nvbw))
    if args.json:
        try:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(rows, f, indent=1)
        except OSError as e:
            print(f"nvbandwidth_compare: {args.json}: {e.strerror}", file=sys.stderr)
            return 2
    if args.check and (not have_nvbw or not all(r["within"] for r in rows)):
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
