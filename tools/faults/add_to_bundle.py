#!/usr/bin/env python3
"""Adds the fault layer and the mutation tool to a bundle made by tools/bundle.py:

  tools/faults/add_to_bundle.py BUNDLE [--shim PATH]

BUNDLE/faults/libcuda.so.1       the shim (default: built with `bazel build --config=bundle`)
BUNDLE/faults/catalogue.tsv      the fault catalogue; survivors.tsv, the survivor explanations
BUNDLE/tools/faults/...          probe.sh, probe_summary.py, build_shim.sh and the shim's sources
BUNDLE/tools/mutation/mutation.py

Then, on the GPU machine: python3 BUNDLE/tools/mutation/mutation.py BUNDLE --out DIR.
Exit codes: 0 added; 1 the shim build failed; 2 bad usage (not a bundle, missing file).
"""
import argparse
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = ["tools/faults/catalogue.tsv", "tools/faults/survivors.tsv", "tools/faults/probe.sh",
         "tools/faults/probe_summary.py", "tools/faults/build_shim.sh", "tools/faults/shim.cc",
         "tools/faults/shim.h", "tools/faults/faults.cc", "tools/faults/exports.S",
         "tools/faults/symbols.inc", "tools/mutation/mutation.py"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bundle")
    p.add_argument("--shim", help="a built libcuda.so.1 (default: bazel build --config=bundle)")
    args = p.parse_args(argv)
    if not os.path.isfile(os.path.join(args.bundle, "manifest.json")):
        print(f"add_to_bundle: {args.bundle} is not a bundle (no manifest.json)", file=sys.stderr)
        return 2
    shim = args.shim
    if not shim:
        label = "//tools/faults:shim/libcuda.so.1"
        try:
            subprocess.run(["bazel", "build", "--config=bundle", label], cwd=ROOT, check=True)
            bin_dir = subprocess.run(["bazel", "info", "--config=bundle", "bazel-bin"], cwd=ROOT,
                                     check=True, text=True, capture_output=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"add_to_bundle: building the shim failed: {e}", file=sys.stderr)
            return 1
        shim = os.path.join(bin_dir, "tools", "faults", "shim", "libcuda.so.1")
    if not os.path.isfile(shim):
        print(f"add_to_bundle: no shim at {shim}", file=sys.stderr)
        return 2
    os.makedirs(os.path.join(args.bundle, "faults"), exist_ok=True)
    dst = os.path.join(args.bundle, "faults", "libcuda.so.1")
    if os.path.exists(dst):
        os.chmod(dst, 0o755)
    shutil.copyfile(shim, dst)
    os.chmod(dst, 0o755)
    for rel in FILES:
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):
            print(f"add_to_bundle: missing {rel}", file=sys.stderr)
            return 2
        for out_rel in [rel] + ([os.path.join("faults", os.path.basename(rel))]
                                if rel.endswith(".tsv") else []):
            out = os.path.join(args.bundle, out_rel)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            shutil.copy2(src, out)
    print(f"add_to_bundle: shim and mutation tool added to {args.bundle}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
