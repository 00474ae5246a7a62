"""Runs a test script under Debian's interpreter when the one it was started with lacks a Debian
Python package (python3-jinja2, python3-psycopg2): `python3` on PATH may be a separate install
that does not see them (shared notes, platform.md), and Bazel picks whichever it finds."""

import os
import sys

DEBIAN_PYTHON = "/usr/bin/python3"


def reexec_if_missing(module, script, root):
    """Re-executes `script` (with this process's arguments) under /usr/bin/python3 when `module`
    cannot be imported here, once (PAGELOCK_NO_REEXEC stops a loop), with `root` first on the
    path. Returns when the module imports, or when there is nothing better to run under: the
    test then reports the missing module itself."""
    try:
        __import__(module)
        return
    except ImportError:
        pass
    if not os.path.exists(DEBIAN_PYTHON) or os.environ.get("PAGELOCK_NO_REEXEC") \
            or os.path.realpath(sys.executable) == os.path.realpath(DEBIAN_PYTHON):
        return
    os.environ["PAGELOCK_NO_REEXEC"] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join([root] + sys.path[1:])
    os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, os.path.abspath(script)] + sys.argv[1:])
