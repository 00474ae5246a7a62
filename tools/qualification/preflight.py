"""Before anything runs: the arguments, a usable GPU (asked of the driver, before a build), the
input files qualify will read, and the fingerprint of the bundle's first GPU binary."""

import json
import os
import subprocess
import sys

from reports import compare as cmp
from reports import history
from reports import validate
from tools.qualification.common import Stop
from tools.runner import runner

# Input files are read whole: a file larger than this is refused, not read into memory.
MAX_EXPECTATIONS_BYTES = 64 << 20


# A usable GPU, asked of the driver itself (no Bazel, no bundle, no CUDA toolkit): a machine
# without one learns it in a second instead of after a build. A child process, so that a driver
# that hangs in cuInit cannot hang qualify.
_GPU_PROBE = r"""
import ctypes, sys
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError as e:
    print(f"no NVIDIA driver: {e}"); sys.exit(1)
def name(rc):
    text = ctypes.c_char_p()
    try:
        cuda.cuGetErrorName(rc, ctypes.byref(text))
    except AttributeError:
        pass
    return f"{rc} ({text.value.decode()})" if text.value else str(rc)
rc = cuda.cuInit(0)
if rc:
    print(f"cuInit={name(rc)}"); sys.exit(1)
n = ctypes.c_int(0)
rc = cuda.cuDeviceGetCount(ctypes.byref(n))
if rc or n.value < 1:
    print(f"cuDeviceGetCount={name(rc)}, {n.value} device(s)"); sys.exit(1)
print(f"{n.value} GPU(s)")
"""
GPU_PROBE_TIMEOUT_S = 20


def probe_gpu():
    """(True, 'N GPU(s)') or (False, why not): libcuda.so.1, cuInit, cuDeviceGetCount."""
    try:
        p = subprocess.run([sys.executable, "-c", _GPU_PROBE], capture_output=True, text=True,
                           encoding="utf-8", errors="replace",
                           timeout=GPU_PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False, f"cuInit did not return within {GPU_PROBE_TIMEOUT_S} s"
    except OSError as e:
        return False, f"the GPU probe could not run ({e})"
    line = (p.stdout.strip().splitlines() or [p.stderr.strip()[-200:] or "no answer"])[-1]
    return p.returncode == 0, line


# What to run on a machine without a GPU: the harness's own tests need none; qualify's
# --allow-no-gpu would install, build and run the GPU suites, every case NotSupported.
NO_GPU_HINT = ("The tests of the harness need no GPU: tools/test.sh (or bazel test --config=host //...). "
               "--allow-no-gpu runs the GPU suites anyway (every case NotSupported: NOTHING RAN, exit 4).")


def require_gpu_before_building(args):
    """Without --bundle qualify builds first (minutes): check the GPU before that, unless
    --allow-no-gpu. Raises Stop(EXIT_INFRA) with the reason."""
    if args.bundle or args.allow_no_gpu:
        return
    ok, why = probe_gpu()
    if not ok:
        raise Stop(cmp.EXIT_INFRA, f"infrastructure error: no usable GPU on this machine ({why}); "
                                   f"nothing was installed, built or run. {NO_GPU_HINT}")


def check_arguments(args):
    """Every argument that can be checked without the bundle; raises Stop(EXIT_CONFIG)."""
    if args.retries < 0:
        raise Stop(cmp.EXIT_CONFIG, "--retries must be >= 0")
    # The runner's own check: one qualify let through (1e-300, 1e308) the runner refused as
    # BAD_BUNDLE, exit 1, after the run folder was made.
    why = runner.check_time_scale(args.time_scale)
    if why:
        raise Stop(cmp.EXIT_CONFIG, why)
    if args.mutation and (not args.mutation_budget > 0 or args.mutation_jobs < 1):
        raise Stop(cmp.EXIT_CONFIG, "--mutation-budget and --mutation-jobs must be positive")
    if not 1 <= args.jobs <= runner.MAX_JOBS:
        raise Stop(cmp.EXIT_CONFIG, f"--jobs must be from 1 to {runner.MAX_JOBS}")
    if args.seed is not None and not 0 <= args.seed < 2 ** 64:
        raise Stop(cmp.EXIT_CONFIG, "--seed must be between 0 and 2^64-1")
    if args.baseline not in ("auto", "none") and not os.path.lexists(args.baseline):
        raise Stop(cmp.EXIT_CONFIG, f"bad baseline {args.baseline}: no such file or folder")


def preflight_only(args):
    """tools/qualify's first step, before it installs or builds anything: the arguments, then
    (when it would build) the GPU. Exit 0 when both are fine."""
    check_arguments(args)
    require_gpu_before_building(args)
    return 0


def check_input_files(args, bundle, sku=None):
    """Every file qualify will read must be a regular file: /dev/zero, a link to it or a FIFO
    as the manifest, an expectations file or the history would fill the memory or hang.
    Raises Stop(EXIT_CONFIG) naming the path."""
    paths = [("bundle manifest", os.path.join(bundle, "manifest.json"))]
    if sku is not None:
        paths += [("expectations", os.path.join(args.expectations, n)) for n in ("common.txt", f"{sku}.txt")]
        if not args.no_history and not history.is_url(args.history or ""):
            paths.append(("history", args.history or os.path.join(args.out, "history.sqlite")))
    for what, path in paths:
        if not os.path.lexists(path):
            continue  # absent is its reader's business (an optional file, or a clear message)
        problem = validate.regular_file_problem(path)
        if problem is None and what == "expectations" and os.path.getsize(path) > MAX_EXPECTATIONS_BYTES:
            problem = f"larger than {MAX_EXPECTATIONS_BYTES >> 20} MiB, not read"
        if problem:
            raise Stop(cmp.EXIT_CONFIG, f"bad {what}: {path} {problem}")


def read_fingerprint(bundle, manifest):
    """The fingerprint, from the first GPU binary's --pagelock_fingerprint."""
    for t in manifest["targets"]:
        if "gpu" in t.get("tags", []):
            binary = os.path.join(bundle, t["path"])
            try:
                out = subprocess.run([binary, "--pagelock_fingerprint"], capture_output=True,
                                     text=True, encoding="utf-8", errors="replace", timeout=120)
                fp = json.loads(out.stdout)
                if not isinstance(fp, dict):
                    raise ValueError("not a JSON object")
                return {k: str(v) for k, v in fp.items()}, None
            except (OSError, subprocess.TimeoutExpired, ValueError) as e:
                return None, f"{binary} --pagelock_fingerprint failed: {e}"
    return None, "the bundle has no GPU test binary"
