"""The built fault layer for the tools and tests of this folder: the shim (a folder holding
libcuda.so.1), the fake driver and shim_client. Under Bazel (a test, or `bazel run`) they come
from the runfiles; run directly from a checkout, they are built with g++/gcc into a temporary
folder (build_shim.sh for the shim)."""
import glob
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


class BuildError(Exception):
    pass


def runfiles_root():
    """The workspace folder of the runfiles (a Bazel test or `bazel run`), or None."""
    for var in ("TEST_SRCDIR", "RUNFILES_DIR"):
        base = os.environ.get(var)
        if base:
            return os.path.join(base, os.environ.get("TEST_WORKSPACE", "pagelock"))
    marker = os.path.abspath(__file__).split(".runfiles" + os.sep)
    if len(marker) == 2:  # bazel run without RUNFILES_DIR set
        return os.path.join(marker[0] + ".runfiles", "pagelock")
    return None


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise BuildError(f"{' '.join(cmd[:2])} failed: {(p.stderr or p.stdout).strip()[-600:]}")


def client_sources():
    """shim_client's sources: its main file and the probes of every area."""
    return ([os.path.join(HERE, "shim_client.cc")] +
            sorted(glob.glob(os.path.join(HERE, "probes", "*.cc"))))


def layer():
    """(shim folder, fake driver, shim_client). Raises BuildError when a build fails."""
    base = runfiles_root()
    if base and os.path.isfile(os.path.join(base, "tools/faults/shim_client")):
        return (os.path.join(base, "tools/faults/shim"),
                os.path.join(base, "tools/faults/testdata/libfakecuda.so"),
                os.path.join(base, "tools/faults/shim_client"))
    out = tempfile.mkdtemp(prefix="faults_built_")
    cuda = os.environ.get("CUDA_PATH", "/usr/local/cuda")
    run([os.path.join(HERE, "build_shim.sh"), os.path.join(out, "shim")])
    run(["gcc", "-shared", "-fPIC", os.path.join(HERE, "testdata/fake_libcuda.c"), "-o",
         os.path.join(out, "libfakecuda.so")])
    run(["g++", "-std=c++17", "-I" + ROOT, "-I" + os.path.join(cuda, "include")] +
        client_sources() + ["-o", os.path.join(out, "shim_client"), "-ldl"])
    return os.path.join(out, "shim"), os.path.join(out, "libfakecuda.so"), os.path.join(out, "shim_client")
