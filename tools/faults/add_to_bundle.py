#!/usr/bin/env python3
"""Adds the fault layer and the mutation tool to a bundle made by tools/bundle.py:

  tools/faults/add_to_bundle.py BUNDLE [--shim PATH]

tools/bundle.py now puts the fault layer into every bundle; this refreshes it in an existing
bundle (an older one, or after a change to the catalogue or the shim) through the same function.

BUNDLE/faults/libcuda.so.1       the shim (default: built with `bazel build --config=bundle`)
BUNDLE/faults/catalogue.tsv      the fault catalogue; survivors.tsv, the survivor explanations
BUNDLE/tools/faults/...          probe.sh, probe_summary.py, build_shim.sh and the shim's sources
BUNDLE/tools/mutation/mutation.py

Then, on the GPU machine: python3 BUNDLE/tools/mutation/mutation.py BUNDLE --out DIR.
Exit codes: 0 added; 1 the shim build failed; 2 bad usage (not a bundle, missing file).
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.faults.add_to_bundle"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from tools import bundle as bundle_tool  # add_fault_layer, FAULT_FILES


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
                                     check=True, text=True,
                                     encoding="utf-8", errors="replace", capture_output=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"add_to_bundle: building the shim failed: {e}", file=sys.stderr)
            return 1
        shim = os.path.join(bin_dir, "tools", "faults", "shim", "libcuda.so.1")
    if not os.path.isfile(shim):
        print(f"add_to_bundle: no shim at {shim}", file=sys.stderr)
        return 2
    missing = [rel for rel in bundle_tool.FAULT_FILES if not os.path.isfile(os.path.join(ROOT, rel))]
    if missing:
        print(f"add_to_bundle: missing {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        bundle_tool.add_fault_layer(args.bundle, shim)
    except OSError as e:
        print(f"add_to_bundle: cannot write {args.bundle}: {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"add_to_bundle: shim and mutation tool added to {args.bundle}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
