#!/usr/bin/env python3
"""Builds a qualification bundle: optimized, stripped test binaries plus the runner and the report
tool in one folder, for GPU machines that have no Bazel.

  tools/bundle.py OUT_DIR [--archs sm_90] [--targets //suites/...] [--cuda 11.8]

`--cuda 11.8` builds against the second CUDA runtime (tools/install_cuda11.sh; `--config=cuda11`)
in an output base of its own, so the two runtimes' trees never rebuild each other. The
manifest records the runtime (CUDART_VERSION) the binaries were built with.

Then, on the GPU machine:
  OUT_DIR/run --out RESULTS/testlogs          # runs the binaries (see tools/runner/runner.py)
  python3 OUT_DIR/reports/report.py RESULTS/testlogs --html RESULTS/index.html
  python3 OUT_DIR/tools/mutation/mutation.py OUT_DIR --out RESULTS/mutation   # mutation score

Every bundle carries the fault layer: OUT_DIR/faults/libcuda.so.1 (the shim, built
by the same Bazel run), faults/catalogue.tsv and faults/survivors.tsv, the mutation tool and the
shim's sources with tools/faults/build_shim.sh (g++ alone rebuilds it where Bazel is absent).

OUT_DIR must be new, empty, or an earlier bundle (it holds the marker file .pagelock_bundle): an
earlier bundle is replaced; any other folder is refused, never deleted.

Exit codes: 0 built; 1 the build failed; 2 bad usage (OUT_DIR is not a bundle, no test matched);
3 the bundle cannot be written (full disk, read-only folder).
"""

import argparse
import datetime
import errno
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Bazel's timeouts, by the test's timeout attribute or else its size.
TIMEOUTS = {"short": 60, "moderate": 300, "long": 900, "eternal": 3600}
SIZE_TIMEOUTS = {"small": 60, "medium": 300, "large": 900, "enormous": 3600}
MARKER = ".pagelock_bundle"  # a folder holding this file is a bundle that may be replaced
SHIM_LABEL = "//tools/faults:shim/libcuda.so.1"
# The parts of tools/faults that only a checkout uses: the refresher of an older bundle, the
# generator of symbols.inc, the generator of the catalogue's TSV files, the comparison of two
# shims and the shim's CPU-test client. Every other file of the folder travels, and so does every file of its subfolders that
# hold the shim's sources (the areas of the catalogue), so that build_shim.sh can rebuild it.
FAULTS_CHECKOUT_ONLY = {"BUILD.bazel", "add_to_bundle.py", "built.py", "compare_shims.py",
                        "gen_symbols.sh", "shim_client.cc", "tables.py"}
FAULTS_SOURCE_FOLDERS = ("catalogue",)


def python_modules(folder, exclude=()):
    """Every non-test Python file of a folder of the checkout: a module that a split of a tool
    adds is bundled with no list to update."""
    return sorted(f"{folder}/{n}" for n in os.listdir(os.path.join(ROOT, folder))
                  if n.endswith(".py") and not n.endswith("_test.py") and n not in exclude)


def fault_files():
    """The fault layer and the mutation tool: what `mutation.py BUNDLE` needs on a machine without
    Bazel (the shim's sources and build_shim.sh rebuild it with g++ if the binary will not load)."""
    d = os.path.join(ROOT, "tools", "faults")
    own = sorted(f"tools/faults/{n}" for n in os.listdir(d)
                 if os.path.isfile(os.path.join(d, n)) and not n.endswith("_test.py")
                 and n not in FAULTS_CHECKOUT_ONLY)
    for sub in FAULTS_SOURCE_FOLDERS:
        own += sorted(f"tools/faults/{sub}/{n}" for n in os.listdir(os.path.join(d, sub))
                      if os.path.isfile(os.path.join(d, sub, n)))
    return own + python_modules("tools/mutation")


def __getattr__(name):
    # bundle.FAULT_FILES, read when asked: importing this module needs no tools/faults folder.
    if name == "FAULT_FILES":
        return fault_files()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_out(out):
    """None when out may be (re)created as a bundle, else why not."""
    if not os.path.lexists(out):
        return None
    if os.path.islink(out) or not os.path.isdir(out):
        return f"{out} exists and is not a folder"
    try:
        entries = os.listdir(out)
    except OSError as e:
        return f"cannot read {out}: {e.strerror or e}"
    if entries and MARKER not in entries:
        return (f"{out} is not empty and not a pagelock bundle (no {MARKER}); refusing to replace "
                "it: give a new or empty folder")
    return None


# Per runtime: the Bazel config and the output base that keeps its tree apart.
RUNTIMES = {
    "default": ([], []),
    # one output base per checkout and runtime, as Bazel keeps one per workspace
    "11.8": (["--config=cuda11"],
             ["--output_base=" + os.path.expanduser("~/.cache/pagelock-cuda11-")
              + hashlib.md5(ROOT.encode()).hexdigest()[:8]]),
}
STARTUP = []  # set by main() from --cuda


def bazel(*args, capture=True):
    cmd = ["bazel", *STARTUP, *args]
    print("bundle: " + " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, cwd=ROOT, check=True, text=True, encoding="utf-8", errors="replace",
                          stdout=subprocess.PIPE if capture else None)


def expand_pattern(pattern):
    """//... as the real top-level packages: a convenience symlink (bazel-<workspace>) that
    points into another output base (the other CUDA runtime's) is not a package tree, yet a
    server that does not own it would walk it."""
    if pattern != "//...":
        return pattern
    dirs = sorted(d for d in os.listdir(ROOT)
                  if not d.startswith((".", "bazel-")) and os.path.isdir(os.path.join(ROOT, d))
                  and not os.path.islink(os.path.join(ROOT, d)))
    return " + ".join(["//:all"] + [f"//{d}/..." for d in dirs
                                     if any(os.path.exists(os.path.join(ROOT, d, b))
                                            for b in ("BUILD", "BUILD.bazel"))
                                     or any(f in ("BUILD", "BUILD.bazel")
                                            for _, _, fs in os.walk(os.path.join(ROOT, d)) for f in fs)])


def query_tests(pattern):
    xml = bazel("query", "--output=xml", f"kind(cc_test, tests({expand_pattern(pattern)}))").stdout
    targets = []
    for rule in ET.fromstring(xml).iter("rule"):
        attrs = {a.get("name"): a for a in rule}
        tags = [s.get("value") for s in attrs["tags"].iter("string")] if "tags" in attrs else []
        size = attrs["size"].get("value") if "size" in attrs else "medium"
        timeout = attrs["timeout"].get("value") if "timeout" in attrs else None
        label = rule.get("name")
        pkg, name = label[2:].split(":")
        targets.append({"label": label, "path": f"bin/{pkg}/{name}", "tags": tags,
                        "timeout_s": TIMEOUTS.get(timeout) or SIZE_TIMEOUTS.get(size, 300)})
    return sorted(targets, key=lambda t: t["label"])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="bundle folder to (re)create")
    p.add_argument("--archs", help="value for --//tools:cuda_archs, e.g. sm_90")
    p.add_argument("--targets", default="//...", help="target pattern (default //...)")
    p.add_argument("--cuda", choices=sorted(RUNTIMES), default="default",
                   help="CUDA runtime to build with: default (the toolkit at CUDA_PATH or "
                        "/usr/local/cuda) or 11.8 (tools/install_cuda11.sh)")
    args = p.parse_args(argv)
    config, STARTUP[:] = RUNTIMES[args.cuda]
    out = os.path.abspath(args.out)
    if out == ROOT or ROOT.startswith(out + os.sep):
        print(f"bundle: refusing to overwrite {out}", file=sys.stderr)
        return 2
    why = check_out(out)
    if why:
        print(f"bundle: {why}", file=sys.stderr)
        return 2
    try:
        targets = query_tests(args.targets)
        if not targets:
            print(f"bundle: no cc_test under {args.targets}", file=sys.stderr)
            return 2
        build = ["build", "--config=bundle", *config]
        if args.archs:
            build.append(f"--//tools:cuda_archs={args.archs}")
        # The fault shim stands in for the driver, whose ABI does not follow the runtime the
        # suites are built with: it is always built with the default toolkit's headers.
        own_shim = args.cuda == "default"
        bazel(*build, *[t["label"] for t in targets], *([SHIM_LABEL] if own_shim else []),
              capture=False)
        bin_dir = bazel("info", *build[1:], "bazel-bin").stdout.strip()
        output_base = bazel("info", *build[1:], "output_base").stdout.strip()
        args.cudart_version = read_cudart_version(output_base)
        args.shim_bin_dir = bin_dir
        if not own_shim:
            saved, STARTUP[:] = STARTUP[:], []
            try:
                bazel("build", "--config=bundle", SHIM_LABEL, capture=False)
                args.shim_bin_dir = bazel("info", "--config=bundle", "bazel-bin").stdout.strip()
            finally:
                STARTUP[:] = saved
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, text=True, encoding="utf-8", errors="replace",
                                capture_output=True).stdout.strip() or "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               text=True, encoding="utf-8", errors="replace", capture_output=True).stdout.strip()
    except subprocess.CalledProcessError as e:
        print(f"bundle: bazel failed (exit {e.returncode})", file=sys.stderr)
        return 1
    try:
        write_bundle(out, targets, bin_dir, commit, dirty, args)
    except OSError as e:
        print(f"bundle: cannot write {out}: {e.strerror or e}", file=sys.stderr)
        return 3
    size = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(out) for n in ns)
    print(f"bundle: {len(targets)} test binaries in {out} ({size / 2**20:.1f} MiB)")
    return 0


def read_cudart_version(output_base):
    """CUDART_VERSION of the toolkit Bazel built with (third_party/deps.bzl writes it)."""
    try:
        with open(os.path.join(output_base, "external", "cuda", "version.txt"), encoding="utf-8") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def runner_files():
    """The runner's modules (done_check.py is CI's check of a finished run, not the runner's)."""
    return python_modules("tools/runner", exclude=("done_check.py",))


def tool_files():
    """Every file a bundle copies from the checkout, besides the binaries and the shim."""
    reports = python_modules("reports")
    reports += sorted(f"reports/templates/{n}" for n in os.listdir(os.path.join(ROOT, "reports", "templates")))
    # suites/rules.tsv: the report shows each rule's text beside its id.
    return (["tools/__init__.py", "suites/rules.tsv"] + python_modules("tools/bandwidth")
            + runner_files() + reports)


def add_fault_layer(out, shim):
    """Copies the shim (a built libcuda.so.1) to out/faults/, the catalogue and the survivor notes
    next to it, and the fault and mutation tools under out/tools/. Raises OSError."""
    if not os.path.isfile(shim):
        raise OSError(errno.ENOENT, f"no shim at {shim}")
    os.makedirs(os.path.join(out, "faults"), exist_ok=True)
    dst = os.path.join(out, "faults", "libcuda.so.1")
    if os.path.exists(dst):
        os.chmod(dst, 0o755)  # Bazel's outputs are read-only
    shutil.copyfile(shim, dst)
    os.chmod(dst, 0o755)
    for rel in fault_files():
        targets = [rel] + ([os.path.join("faults", os.path.basename(rel))] if rel.endswith(".tsv") else [])
        for out_rel in targets:
            path = os.path.join(out, out_rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, rel), path)


def write_bundle(out, targets, bin_dir, commit, dirty, args):
    why = check_out(out)  # again: the folder may have changed during the build
    if why:
        raise OSError(errno.EEXIST, why)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with open(os.path.join(out, MARKER), "w", encoding="utf-8") as f:
        f.write("pagelock bundle (tools/bundle.py); this folder is replaced by the next build\n")
    for t in targets:
        pkg, name = t["label"][2:].split(":")
        dst = os.path.join(out, t["path"])
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(bin_dir, pkg, name), dst)
    for rel in tool_files():
        os.makedirs(os.path.dirname(os.path.join(out, rel)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), os.path.join(out, rel))
    shim_dir = getattr(args, "shim_bin_dir", None) or bin_dir
    add_fault_layer(out, os.path.join(shim_dir, *SHIM_LABEL[2:].replace(":", "/").split("/")))
    run_sh = os.path.join(out, "run")
    with open(run_sh, "w", encoding="utf-8") as f:
        f.write('#!/bin/sh\nexec python3 "$(dirname "$0")/tools/runner/runner.py" '
                '--bundle "$(dirname "$0")" "$@"\n')
    os.chmod(run_sh, os.stat(run_sh).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    info = {"commit": commit + ("-dirty" if dirty else ""),
            "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cuda_archs": args.archs or "default (see tools/BUILD.bazel)",
            "compilation_mode": "opt, stripped",
            "cuda_runtime": getattr(args, "cudart_version", None)}
    with open(os.path.join(out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump({"info": info, "targets": targets}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
