"""The interpreter a command runs under, chosen once at its entry.

A Debian Python package (python3-jinja2 for the HTML pages, python3-psycopg2 for a PostgreSQL
history) is seen by Debian's /usr/bin/python3; a `python3` installed apart (pyenv, a venv, the
one Bazel picks) may not see it. A command's `if __name__ == "__main__":` calls
reexec_if_missing() first, before any work: the command then runs whole under one interpreter.
Library code never picks an interpreter; without the module it raises (htmlreport and pages:
pages.MissingDependency, an OSError).
"""

import os
import shutil
import subprocess
import sys

# Set in the re-executed process: it never re-executes again, whatever it finds.
NO_REEXEC = "PAGELOCK_NO_REEXEC"


def candidates():
    """The interpreters tried, in order: $PAGELOCK_PYTHON, Debian's /usr/bin/python3, python3 on
    PATH; those that exist, this one left out."""
    here = os.path.realpath(sys.executable)
    out = []
    for py in (os.environ.get("PAGELOCK_PYTHON"), "/usr/bin/python3", shutil.which("python3")):
        if py and os.path.exists(py) and os.path.realpath(py) != here and py not in out:
            out.append(py)
    return out


def imports(python, module):
    """Whether `python` imports `module` (a child process; a minute at most)."""
    try:
        return subprocess.run([python, "-c", f"import {module}"], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def reexec_if_missing(module, script, root):
    """When `module` does not import here, re-executes `script` with this process's arguments
    under the first of candidates() that imports it, once, with `root` and this process's path
    first on PYTHONPATH. Returns when the module imports here, or when no interpreter has it:
    the command then reports the missing module where it needs it."""
    try:
        __import__(module)
        return
    except ImportError:
        pass
    if os.environ.get(NO_REEXEC):
        return
    python = next((py for py in candidates() if imports(py, module)), None)
    if python is None:
        return
    os.environ[NO_REEXEC] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join([root] + sys.path[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(python, [python, os.path.abspath(script)] + sys.argv[1:])
