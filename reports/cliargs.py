"""argparse for the commands whose --json promises one JSON object on stdout (report.py,
compare_runs.py, history.py, tools/qualify, the runner): a usage error (an unknown option, a missing or wrong argument)
also prints one, {"tool": NAME, "exit_code": 2, "error": argparse's message}, before argparse's
usage and message on stderr and exit 2. Plain argparse leaves a --json reader with an empty
stdout to parse.
"""

import argparse
import json
import sys

EXIT_USAGE = 2  # argparse's own exit code, the shared 'bad input' of every command


def utf8_streams():
    """stdout and stderr write UTF-8 whatever the locale (under a Latin-1 locale, or C with
    Python's UTF-8 mode off, the first CJK character or U+FFFD of a case name or message would
    raise), a character they cannot encode shown as an escape, never raised. Every command calls
    it at its entry; files are opened with encoding="utf-8" everywhere (hostile_qualify_inputs_test
    checks every open() of tools/ and reports/)."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", "") or "").lower().replace("-", "").replace("_", "")
        if encoding != "utf8" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(encoding="utf-8", errors="backslashreplace")
            except (ValueError, OSError):
                pass


def wants_json(argv, value=None):
    """Whether the command line asks for JSON on stdout, read before argparse (which may be
    what fails): the flag '--json', or with value, '--json VALUE' / '--json=VALUE' (report.py's
    '--json -'). argv None: this process's arguments."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if value is None:
        return "--json" in argv
    return f"--json={value}" in argv or any(a == "--json" and b == value for a, b in zip(argv, argv[1:]))


def json_error(tool, message, **extra):
    """The one JSON object a --json reader gets for a usage error."""
    return json.dumps(dict({"tool": tool, "exit_code": EXIT_USAGE, "error": message}, **extra))


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors also reach a --json reader as one JSON object on stdout.
    tool: the "tool" of the object; json_errors: whether this command line asked for JSON
    (wants_json); extra: more fields of the object (qualify's verdict)."""

    def __init__(self, *args, tool="", json_errors=False, extra=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.tool, self.json_errors, self.extra = tool, json_errors, dict(extra or {})

    def error(self, message):
        if self.json_errors:
            print(json_error(self.tool, message, **self.extra), flush=True)
        super().error(message)
