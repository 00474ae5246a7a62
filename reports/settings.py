"""The one registry of PAGELOCK_* environment variables, for the Python tools.

Every variable is declared once in reports/settings.tsv (name, kind, type, default, unit, tier,
readers, what); the C++ kit compiles the same file in (fixtures/settings.h). A tool reads its
variables here, never through os.environ directly (tools/lint/settings_check.py fails on a read
that bypasses this module, and writes docs/settings.md from the table):

  settings.raw("PAGELOCK_KERNEL_LOG")        the text as set ('' included), None when unset
  settings.value("PAGELOCK_NIGHT_TZ")        the text when set and not empty, else the declared
                                             default (None where that is none or words)
  settings.default_number("PAGELOCK_HISTORY_LOCK_TIMEOUT")   the declared default, a number
  settings.in_effect(os.environ)             what a run records in results.json (info.settings)

Each takes `environ` (default os.environ) for a reader of another process's environment. A name
the table does not declare, or declares retired, raises UndeclaredSetting: a programming error.
The table sits beside this module, so that every copy of reports/ (a bundle, fleet's staged
tools, a test's fake bundle) carries it.
"""

import os
import re
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "reports", "settings.tsv")
TABLE_NAME = "reports/settings.tsv"
COLUMNS = ("name", "kind", "type", "default", "unit", "tier", "readers", "what")
KINDS = ("knob", "plumbing", "retired")
TYPES = ("int", "float", "bool", "text", "path", "list")
UNITS = ("s", "ms", "us", "h", "GiB", "MiB", "KiB", "bytes", "count", "fraction", "per_s", "factor", "-")
TIERS = ("bat", "full", "stress", "all", "tools", "tests")
PREFIX = "PAGELOCK_"


class SettingsError(Exception):
    """A settings table that cannot be read, or a malformed line of it (file:line: why)."""


class UndeclaredSetting(KeyError):
    """A read of a name the table does not declare, or declares retired."""

    def __str__(self):
        return str(self.args[0])


@dataclass(frozen=True)
class Declaration:
    name: str
    kind: str
    type: str
    default: str  # a value, "none", or "(words)"
    unit: str
    tier: str
    readers: str
    what: str
    line: int = 0

    @property
    def has_value_default(self):
        """The default is a value (not none, not words in parentheses)."""
        return self.default != "none" and not self.default.startswith("(")

    @property
    def family(self):
        """A row that declares every name with its prefix: PAGELOCK_LIVE_*."""
        return self.name.endswith("*")

    @property
    def tiers(self):
        return tuple(t.strip() for t in self.tier.split(","))

    @property
    def summary(self):
        """The first sentence of `what`: what the variable changes."""
        m = re.match(r"(.+?\.)(\s|$)", self.what)
        return m.group(1) if m else self.what


def _number(text):
    try:
        return float(text)
    except ValueError:
        return None


def _line_problem(d):
    """Why a row is malformed, or None."""
    name = d.name[:-1] if d.family else d.name
    if not re.fullmatch(r"PAGELOCK_[A-Z0-9_]+", name) or (d.family and not name.endswith("_")):
        return f"'{d.name}' is not a PAGELOCK_ name (capitals, digits, _; a family ends in _*)"
    if d.kind not in KINDS:
        return f"{d.name}: kind '{d.kind}' is not one of {', '.join(KINDS)}"
    if d.type not in TYPES:
        return f"{d.name}: type '{d.type}' is not one of {', '.join(TYPES)}"
    if not d.default:
        return f"{d.name}: an empty default (write none)"
    if d.default.startswith("(") and not d.default.endswith(")"):
        return f"{d.name}: a default in words is wrapped in parentheses"
    if d.has_value_default and d.type in ("int", "float") and _number(d.default) is None:
        return f"{d.name}: the default '{d.default}' is not a number ({d.type})"
    if d.has_value_default and d.type == "int" and not float(d.default).is_integer():
        return f"{d.name}: the default '{d.default}' is not a whole number (int)"
    if d.has_value_default and d.type == "bool" and d.default not in ("0", "1"):
        return f"{d.name}: the default '{d.default}' is not 0 or 1 (bool)"
    if d.unit not in UNITS:
        return f"{d.name}: unit '{d.unit}' is not one of {', '.join(UNITS)}"
    bad = [t for t in d.tiers if t not in TIERS]
    if bad or not d.tier:
        return f"{d.name}: tier '{d.tier}' is not a comma list of {', '.join(TIERS)}"
    if not d.readers or not d.what:
        return f"{d.name}: readers and what may not be empty"
    return None


def parse(text, source=TABLE_NAME):
    """The rows of a settings table's text. Raises SettingsError naming the line of the first
    malformed one (not 8 fields, an unknown kind, type, unit or tier, a default that is not of its
    type, a name twice)."""
    rows, seen, header = [], {}, False
    for n, line in enumerate(text.split("\n"), 1):
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t")
        if not header:
            if tuple(fields) != COLUMNS:
                raise SettingsError(f"{source}:{n}: expected the header {chr(9).join(COLUMNS)!r}")
            header = True
            continue
        if len(fields) != len(COLUMNS):
            raise SettingsError(f"{source}:{n}: {len(fields)} fields, expected {len(COLUMNS)}")
        d = Declaration(*fields, line=n)
        problem = _line_problem(d)
        if problem is None and d.name in seen:
            problem = f"{d.name} is declared twice (first on line {seen[d.name]})"
        if problem:
            raise SettingsError(f"{source}:{n}: {problem}")
        seen[d.name] = n
        rows.append(d)
    if not header:
        raise SettingsError(f"{source}: no header line")
    return rows


_LOADED = {}


def declarations(path=None):
    """Every row of the table (settings.tsv beside this module, in a checkout or a bundle), in order."""
    path = path or TABLE
    if path not in _LOADED:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise SettingsError(f"cannot read the settings table {path}: {e.strerror or e}") from None
        _LOADED[path] = parse(text, TABLE_NAME if path == TABLE else path)
    return _LOADED[path]


def find(name):
    """The row declaring `name` (a family's row for PAGELOCK_<NAME>_<anything>), or None."""
    rows = declarations()
    for d in rows:
        if d.name == name:
            return d
    for d in rows:
        if d.family and name.startswith(d.name[:-1]) and len(name) > len(d.name) - 1:
            return d
    return None


def declaration(name):
    """The row of a variable a tool may read; raises UndeclaredSetting."""
    d = find(name)
    if d is None:
        raise UndeclaredSetting(f"{name} is read but not declared in {TABLE_NAME}")
    if d.kind == "retired":
        raise UndeclaredSetting(f"{name} is read but declared retired in {TABLE_NAME}")
    return d


def raw(name, environ=None):
    """The environment's text for a declared variable ('' when set empty), None when unset."""
    declaration(name)
    return (os.environ if environ is None else environ).get(name)


def value(name, environ=None):
    """The text when it is set and not empty, else the declared default; None where the default
    is none or words (the reader then says what unset means)."""
    d = declaration(name)
    text = (os.environ if environ is None else environ).get(name)
    if text:
        return text
    return d.default if d.has_value_default else None


def default_number(name):
    """The declared default as a number; raises UndeclaredSetting where it is not one."""
    d = declaration(name)
    n = _number(d.default) if d.has_value_default else None
    if n is None:
        raise UndeclaredSetting(f"{name}'s default in {TABLE_NAME} is not a number: {d.default!r}")
    return int(n) if d.type == "int" else n


_PASSWORD = re.compile(r"(://[^/:@\s]*:)[^@/\s]+@")


def redact(text):
    """A value with any URL password replaced by ***."""
    return _PASSWORD.sub(r"\1***@", text)


def unknown(environ=None):
    """PAGELOCK_ names set in the environment that the table does not declare: nothing reads them
    (a misspelt knob)."""
    environ = os.environ if environ is None else environ
    return sorted(k for k in environ if k.startswith(PREFIX) and find(k) is None)


def in_effect(environ=None, overrides=None):
    """{name: {"value", "source", "default"}} of the settings a run ran with: every knob (its
    value, or its default: value null where the default is none or words), every plumbing
    variable that is set, and every set PAGELOCK_ name the table does not declare (default null).
    overrides: {name: (value, source)} for what the caller sets itself (--time-scale)."""
    environ = os.environ if environ is None else environ
    overrides = overrides or {}
    out = {}
    for d in declarations():
        if d.kind == "retired" or d.family:
            continue
        if d.name in overrides:
            v, source = overrides[d.name]
            out[d.name] = {"value": None if v is None else str(v), "source": source, "default": d.default}
        elif d.name in environ:
            out[d.name] = {"value": redact(environ[d.name]), "source": "environment", "default": d.default}
        elif d.kind == "knob" and "tests" not in d.tiers:
            out[d.name] = {"value": d.default if d.has_value_default else None, "source": "default",
                           "default": d.default}
    for name in unknown(environ):
        out[name] = {"value": redact(environ[name]), "source": "environment, not declared in " + TABLE_NAME,
                     "default": None}
    return out


def table_lines(environ=None, overrides=None):
    """The settings as `tools/qualify --settings` prints them: name, value in effect and default
    on one line, what it changes indented under it; knobs first, then plumbing."""
    environ = os.environ if environ is None else environ
    overrides = overrides or {}
    rows = [d for d in declarations() if d.kind != "retired"]
    width = max(len(d.name) for d in rows)

    def effect(d):
        if d.name in overrides:
            v, source = overrides[d.name]
            return f"{v} ({source})" if v is not None else f"({source})"
        if not d.family and d.name in environ:
            return f"{redact(environ[d.name])} (set)"
        return d.default if d.has_value_default else "-"

    lines = [f"pagelock settings ({TABLE_NAME}; every one described in docs/settings.md)"]
    for kind, title in (("knob", "knobs (an operator or developer sets them)"),
                        ("plumbing", "plumbing (one harness process hands it to another)")):
        lines += ["", title, f"  {'name':<{width}}  {'in effect':<24}  default", "      what it changes"]
        for d in rows:
            if d.kind == kind:
                lines += [f"  {d.name:<{width}}  {effect(d):<24}  {d.default}", f"      {d.summary}"]
    names = unknown(environ)
    if names:
        lines += ["", "set but declared nowhere (nothing reads them): " + ", ".join(names)]
    return lines
