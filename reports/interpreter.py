"""The interpreter a command runs under, chosen once at its entry.

A Debian Python package (python3-jinja2 for the HTML pages, python3-psycopg2 for a PostgreSQL
history) is seen by Debian's /usr/bin/python3; a `python3` installed apart (pyenv, a venv, the
one Bazel picks) may not see it. A command's `if __name__ == "__main__":` calls
reexec_if_missing() first, before any work: the command then runs whole under one interpreter.
psycopg2 is asked for only when the command's history is a postgresql:// URL (history_modules;
a SQLite history needs nothing beyond the standard library). Library code never picks an
interpreter; without the module it raises (htmlreport and pages: pages.MissingDependency, an
OSError; history_schema: HistoryError).
"""

import contextlib
import io
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


def _names(modules):
    return [modules] if isinstance(modules, str) else [m for m in modules if m]


def imports(python, modules):
    """Whether `python` imports `modules` (a name or a list of names; a child process, a minute
    at most)."""
    return _probe(python, modules) is not None


def _probe(python, modules):
    """None when `python` cannot import `modules`, else the options that keep the current folder
    off its path when it runs a module (-P, Python 3.11 and later)."""
    code = "import sys; " + "".join(f"import {m}; " for m in _names(modules)) + "print(sys.version_info >= (3, 11))"
    try:
        p = subprocess.run([python, "-c", code], capture_output=True, text=True, encoding="utf-8",
                           errors="replace", timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    return ["-P"] if p.stdout.strip() == "True" else []


def history_modules(target):
    """The modules a history needs: ["psycopg2"] for a postgresql:// URL, [] for a SQLite file or
    no history (None)."""
    from reports.history_schema import is_url
    return ["psycopg2"] if target and is_url(target) else []


def quietly(parse):
    """parse()'s result with its output swallowed, None when it exits: a command reads its own
    command line to know what to re-execute for; its real parse, after, reports any error."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            return parse()
        except SystemExit:
            return None


def reexec_if_missing(modules, script, root):
    """When one of `modules` (a name or a list of names) does not import here, re-executes the
    command with this process's arguments under the first of candidates() that imports them
    all, once, with `root` and this process's path first on PYTHONPATH: as its module
    (`python3 -m reports.report`, docs/python.md) when it runs as one, else `script`. Returns
    when they all import here, or when no interpreter has them all: the command then reports a
    missing module where it needs it."""
    names = _names(modules)
    missing = []
    for module in names:
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if not missing or os.environ.get(NO_REEXEC):
        return
    python, options = next(((py, o) for py in candidates() for o in [_probe(py, names)] if o is not None),
                           (None, None))
    if python is None:
        return
    os.environ[NO_REEXEC] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join([root] + [p for p in sys.path[1:] if p])
    sys.stdout.flush()
    sys.stderr.flush()
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    command = [*options, "-m", spec.name] if spec is not None and spec.name else [os.path.abspath(script)]
    os.execv(python, [python, *command] + sys.argv[1:])
