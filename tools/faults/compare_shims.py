#!/usr/bin/env python3
"""Compares the behaviour of two builds of the shim, for a change to the catalogue that must not
change what any fault does (moving faults between area files, sharing a hook body): against the
fake driver, `shim_client run`, `variations` and `probe` run under every fault and variation of
the catalogue (and none) with each shim, and their answers, exit codes and `init`/`fired`/
`changed` log lines must be the same.

  compare_shims.py --base REV            the shim of git revision REV (built with its own
                                         build_shim.sh) against this checkout's
  compare_shims.py --base-shim DIR [--shim DIR]   two built shims (folders with libcuda.so.1)

The client and the fake driver are this checkout's (built.py). Address-space randomisation is
turned off (setarch -R) so that answers holding addresses compare. Prints one line per difference
and a summary.

Exit codes: 0 the same; 1 some run differs; 2 a build failed or bad usage.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.faults.compare_shims"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from tools.faults import built

MODES = ("run", "variations", "probe")


def names():
    """Every fault and variation of the committed catalogue files, and none."""
    out = ["none"]
    for tsv in ("catalogue.tsv", "conforming.tsv"):
        with open(os.path.join(HERE, tsv), encoding="utf-8") as f:
            out += [l.split("\t", 1)[0] for l in f.read().splitlines()[1:] if l]
    return out


def shim_of(rev, tmp):
    """A folder with the shim of git revision rev, built with that revision's build_shim.sh."""
    src = os.path.join(tmp, "src")
    os.makedirs(src)
    archive = subprocess.run(["git", "-C", built.ROOT, "archive", rev, "tools/faults"],
                             capture_output=True)
    if archive.returncode != 0:
        raise built.BuildError(f"git archive {rev}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", src], input=archive.stdout, check=True)
    built.run([os.path.join(src, "tools/faults/build_shim.sh"), os.path.join(tmp, "base")])
    return os.path.join(tmp, "base")


def outcome(shim, client, fake, mode, fault, log):
    """(exit code, stdout, the log's init/fired/changed lines without the process id)."""
    env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": shim, "PAGELOCK_REAL_LIBCUDA": fake,
           "PAGELOCK_FAULT_LOG": log, "PAGELOCK_FAULT_LOG_REQUESTS": "0"}
    if fault != "none":
        env["PAGELOCK_FAULT"] = fault
    cmd = [client, mode]
    if shutil.which("setarch"):
        cmd = ["setarch", os.uname().machine, "-R"] + cmd
    if os.path.exists(log):
        os.remove(log)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    lines = []
    if os.path.exists(log):
        with open(log, encoding="utf-8") as f:
            lines = sorted({l.split("\t", 1)[1] for l in f.read().splitlines() if "\t" in l})
    rc = "crash" if p.returncode < 0 or p.returncode > 128 else p.returncode
    return rc, p.stdout, lines


def compare(base, new, client, fake, tmp):
    """Lines naming each run whose outcome differs."""
    out = []
    log = os.path.join(tmp, "log")
    for mode in MODES:
        for fault in names():
            a = outcome(base, client, fake, mode, fault, log)
            b = outcome(new, client, fake, mode, fault, log)
            if a != b:
                what = [k for k, x, y in zip(("exit code", "answers", "log"), a, b) if x != y]
                out.append(f"{mode} under {fault}: {', '.join(what)} differ")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--base", help="git revision whose shim is the reference")
    g.add_argument("--base-shim", help="folder holding the reference libcuda.so.1")
    p.add_argument("--shim", help="folder holding the shim to check (default: this checkout's)")
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="compare_shims_")
    try:
        new_shim, fake, client = built.layer()
        new_shim = args.shim or new_shim
        base = args.base_shim or shim_of(args.base, tmp)
        diffs = compare(base, new_shim, client, fake, tmp)
    except (built.BuildError, OSError, subprocess.SubprocessError) as e:
        print(f"compare_shims: {e}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for d in diffs:
        print(d)
    print(f"compare_shims: {len(MODES) * len(names())} runs a shim, {len(diffs)} differ")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
