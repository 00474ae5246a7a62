#!/usr/bin/env python3
"""The settings lint: every PAGELOCK_* environment variable is declared once, in
reports/settings.tsv, and read through it (fixtures/settings.h in C++, reports/settings.py in
Python). It also writes docs/settings.md from the table.

  tools/lint/settings_check.py [ROOT]           check the checkout at ROOT (default: this one)
  tools/lint/settings_check.py --write [ROOT]   (re)write docs/settings.md, then check

Exit codes: 0 clean; 1 problems, one per line (path:line: why); 2 bad usage or a table that does
not parse.

It fails on:
  1. a read that bypasses the registry: in C++ a getenv (std::getenv, secure_getenv) of a
     "PAGELOCK_..." literal or of a constant holding one; in Python os.environ.get, os.getenv,
     os.environ[...] or `in os.environ` (or any mapping named environ) with a PAGELOCK_ key, a
     literal or a module constant holding one; and a helper that reads its own argument so
     (EnvKnob(name) { getenv(name) }) wherever it is called with a "PAGELOCK_..." literal.
     Setting, popping and copying the environment (tests do) are not reads.
  2. a PAGELOCK_ name used anywhere (sources, scripts, BUILD files, tables, Markdown) that the
     table does not declare. Macros and include guards (names after #define, #ifdef, #ifndef,
     defined(...), or -D in a BUILD file) are not variables; NAME_ followed by *, {, < or a quote
     is a prefix of declared names. A retired name may appear in Markdown only (history).
  3. an accessor that contradicts the table: settings::PositiveNumber("X") or
     settings::DefaultNumber("X") (Python: settings.default_number("X")) where X's default is not
     a number; settings::PositiveNumber("X", fallback) where X's default is a plain value (the
     code would keep a second copy of it: use the one-argument form).
  4. a shell default ${PAGELOCK_<NAME>:-value} other than the declared value.
  5. docs/settings.md differing from what --write writes.

Exempt from rule 1, each for its reason (EXEMPT):
  reports/settings.py, fixtures/settings.cc   the registry's readers themselves;
  tools/faults/shim.cc, tools/faults/shim_client.cc   the fault shim is built by g++ alone on a
      GPU machine without Bazel (tools/faults/build_shim.sh) and loads before anything else:
      the registry library would be a dependency there; its variables are declared all the same;
  tools/testdata/, tools/runner/testdata/, tools/mutation/testdata/   stand-ins for the suite
      binaries, copied alone into fake bundles, where no registry is importable;
  shell scripts   sh has no registry reader; rule 4 checks their defaults instead.
Exempt from rules 2 and 3: the registry's own tests, which use names it must refuse
(EXEMPT_TESTS), and any line that says `settings_check: undeclared on purpose` (a test of what
the tools do with a misspelt variable).
"""

import argparse
import ast
import os
import re
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.lint.settings_check"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import settings

PAGE = os.path.join("docs", "settings.md")
WRITE_COMMAND = "tools/lint/settings_check.py --write"
EXEMPT = {
    "reports/settings.py": "the registry's Python reader",
    "fixtures/settings.cc": "the registry's C++ reader",
    "tools/faults/shim.cc": "built by g++ alone on a GPU machine (build_shim.sh): no registry library there",
    "tools/faults/shim_client.cc": "built with the shim's sources alone, as the shim is",
}
EXEMPT_TESTS = ("fixtures/settings_test.cc", "reports/settings_test.py", "tools/lint/settings_check_test.py")
ON_PURPOSE = "settings_check: undeclared on purpose"
EXEMPT_FOLDERS = ("tools/testdata/", "tools/runner/testdata/", "tools/mutation/testdata/")
SKIP_DIRS = {".git", "examples", "baselines", "third_party", "__pycache__", "runs", "build", "node_modules"}
CPP = (".cc", ".h", ".cu", ".cuh", ".cpp", ".hpp")
SCANNED = CPP + (".py", ".sh", ".bzl", ".bazel", ".md", ".tsv", ".j2")
NAME_RE = re.compile(r"PAGELOCK_[A-Z0-9_]*")
MACRO_RES = (re.compile(r"#\s*(?:define|ifdef|ifndef|undef)\s+(PAGELOCK_\w+)"),
             re.compile(r"\bdefined\s*\(?\s*(PAGELOCK_\w+)"))
BUILD_MACRO_RE = re.compile(r"-D(PAGELOCK_\w+)")
CPP_CONST_RE = re.compile(r"\bchar\s+(\w+)\s*\[\s*\]\s*=\s*\"(PAGELOCK_[A-Z0-9_]*)\"")
CPP_DEFINE_CONST_RE = re.compile(r"#\s*define\s+(\w+)\s+\"(PAGELOCK_[A-Z0-9_]*)\"")
CPP_GETENV_RE = re.compile(r"\b(?:std::)?(?:secure_)?getenv\s*\(\s*(\"[^\"]*\"|[A-Za-z_][\w:]*)\s*\)")
CPP_ACCESSOR_RE = re.compile(r"\bsettings::(PositiveNumber|DefaultNumber)\s*\(\s*\"(PAGELOCK_\w+)\"\s*([,)])")
PY_DEFAULT_NUMBER_RE = re.compile(r"\bsettings\.default_number\(\s*\"(PAGELOCK_\w+)\"")
SHELL_DEFAULT_RE = re.compile(r"\$\{(PAGELOCK_\w+):?-([^}]*)\}")


def source_files(root):
    """(relative path, text) of every file the lint reads, sorted."""
    out = []
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("bazel-")
                         and not os.path.islink(os.path.join(d, x)))
        for n in sorted(names):
            path = os.path.join(d, n)
            rel = os.path.relpath(path, root)
            if rel.startswith("reports/testdata/") or os.path.islink(path):
                continue
            if not (n.endswith(SCANNED) or n in ("BUILD", "WORKSPACE") or _is_script(path)):
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    out.append((rel, f.read()))
            except (OSError, UnicodeDecodeError):
                continue
    return out


def _is_script(path):
    """An extensionless executable script (tools/qualify, .ci/run)."""
    if "." in os.path.basename(path):
        return False
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def _line(text, pos):
    return text.count("\n", 0, pos) + 1


def _kind(rel):
    if rel.endswith(CPP):
        return "cpp"
    if rel.endswith(".py"):
        return "py"
    if rel.endswith(".md"):
        return "md"
    if rel.endswith((".bzl", ".bazel")) or os.path.basename(rel) in ("BUILD", "WORKSPACE"):
        return "build"
    return "other"  # shell, tables, templates


def _exempt(rel):
    return rel in EXEMPT or rel.startswith(EXEMPT_FOLDERS)


# ---- what the sources define ---------------------------------------------------------------------

def macros(files):
    """PAGELOCK_ names that are C preprocessor macros (defined, tested or passed with -D)."""
    out = set()
    for rel, text in files:
        kind = _kind(rel)
        if kind == "cpp":
            for r in MACRO_RES:
                out.update(r.findall(text))
        elif kind == "build":
            out.update(BUILD_MACRO_RE.findall(text))
    return out


def cpp_constants(files):
    """{identifier: PAGELOCK_ name} of C++ constants holding a variable's name (kDeviationsEnv)."""
    out = {}
    for rel, text in files:
        if _kind(rel) == "cpp":
            for r in (CPP_CONST_RE, CPP_DEFINE_CONST_RE):
                out.update(dict(r.findall(text)))
    return out


def py_constants(trees):
    """{identifier: PAGELOCK_ name} of module-level Python constants holding a variable's name
    (MAX_CASES_ENV, NO_REEXEC)."""
    out = {}
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str) and node.value.value.startswith(settings.PREFIX):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        out[t.id] = node.value.value
    return out


# ---- rule 1: reads that bypass the registry -----------------------------------------------------

def cpp_reads(rel, text, constants):
    for m in CPP_GETENV_RE.finditer(text):
        arg = m.group(1)
        name = arg[1:-1] if arg.startswith('"') else constants.get(arg.split("::")[-1])
        if name and name.startswith(settings.PREFIX):
            yield _line(text, m.start()), f"getenv of {name}: read it through fixtures/settings.h (settings::Text ...)"


CPP_FUNCTION_RE = re.compile(r"\b(\w+)\s*\(([^()]*)\)\s*(?:const\s*)?\{")
CPP_KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof"}


def _body(text, brace):
    """The text from an opening brace to its match (the whole rest when unbalanced)."""
    depth = 0
    for i in range(brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[brace:i + 1]
    return text[brace:]


def cpp_helpers(files):
    """{function name: (path, line)} of C++ functions that getenv one of their own parameters."""
    out = {}
    for rel, text in files:
        if _kind(rel) != "cpp" or _exempt(rel):
            continue
        for m in CPP_FUNCTION_RE.finditer(text):
            if m.group(1) in CPP_KEYWORDS:
                continue
            params = {re.findall(r"\w+", p)[-1] for p in m.group(2).split(",") if re.findall(r"\w+", p)}
            body = _body(text, m.end() - 1)
            for g in CPP_GETENV_RE.finditer(body):
                if g.group(1) in params:
                    out[m.group(1)] = (rel, _line(text, m.end() - 1 + g.start()))
    return out


def cpp_helper_calls(files, helpers):
    """'path:line: why' for each helper called with a PAGELOCK_ literal, named at the helper."""
    out = set()
    for rel, text in files:
        if _kind(rel) != "cpp" or not helpers:
            continue
        for m in re.finditer(r"\b(" + "|".join(map(re.escape, helpers)) + r")\s*\(\s*\"(PAGELOCK_\w+)\"", text):
            where, line = helpers[m.group(1)]
            out.add(f"{where}:{line}: {m.group(1)}() reads its argument with getenv and is called with "
                    f"{m.group(2)} ({rel}:{_line(text, m.start())}): read it through fixtures/settings.h")
    return out


def py_helper_reads(tree, constants):
    """(line, why) for each function that reads one of its parameters from the environment and
    is called in the same module with a PAGELOCK_ name."""
    called = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            name = _resolve(node.args[0], constants)
            if name:
                called.setdefault(node.func.id, name)
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name not in called:
            continue
        params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
        for line, key in _environ_keys(fn):
            if isinstance(key, ast.Name) and key.id in params:
                yield line, (f"{fn.name}() reads its argument from os.environ and is called with "
                             f"{called[fn.name]}: read it through reports/settings.py")


def _is_environ(node):
    """os.environ, or any mapping named environ (a function's environ=... argument)."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or \
        (isinstance(node, ast.Name) and node.id == "environ")


def _resolve(node, constants):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if node.value.startswith(settings.PREFIX) else None
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.Attribute):
        return constants.get(node.attr)
    return None


def _environ_keys(tree):
    """(line, key node) of every read of an environment mapping under tree."""
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "get" and _is_environ(f.value):
                key = node.args[0]
            elif (isinstance(f, ast.Attribute) and f.attr == "getenv") or (isinstance(f, ast.Name) and f.id == "getenv"):
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
            key = node.slice.value if isinstance(node.slice, ast.Index) else node.slice  # Python < 3.9
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
                and _is_environ(node.comparators[0]):
            key = node.left
        if key is not None:
            yield node.lineno, key


def py_reads(tree, constants):
    for line, key in _environ_keys(tree):
        name = _resolve(key, constants)
        if name:
            yield line, f"os.environ read of {name}: read it through reports/settings.py (settings.raw, settings.value)"


# ---- rule 2: names the table does not declare ---------------------------------------------------

def undeclared_names(rel, text, known_macros):
    kind = _kind(rel)
    for m in NAME_RE.finditer(text):
        name = m.group(0)
        if name in known_macros:
            continue
        start, end = text.rfind("\n", 0, m.start()) + 1, text.find("\n", m.end())
        if ON_PURPOSE in text[start:end if end >= 0 else len(text)]:
            continue
        after = text[m.end():m.end() + 1]
        if name.endswith("_"):
            # A prefix: PAGELOCK_PCIE_*_FAIL, PAGELOCK_LIVE_<random>, "PAGELOCK_LIVE_".
            if not any(d.name.startswith(name) for d in settings.declarations()):
                yield _line(text, m.start()), f"{name}{after}: no declared variable has this prefix"
            continue
        d = settings.find(name)
        if d is None:
            yield _line(text, m.start()), f"{name} is not declared in {settings.TABLE_NAME}"
        elif d.kind == "retired" and kind != "md" and rel != settings.TABLE_NAME:
            yield _line(text, m.start()), f"{name} is retired ({d.readers}): only a page of history may name it"


# ---- rule 3 and 4: accessors and shell defaults against the table ------------------------------

def accessor_problems(rel, text):
    kind = _kind(rel)
    if kind == "cpp":
        for m in CPP_ACCESSOR_RE.finditer(text):
            fn, name, end = m.groups()
            d = settings.find(name)
            if d is None:
                continue  # rule 2 names it
            numeric = d.has_value_default and settings._number(d.default) is not None
            if (fn == "DefaultNumber" or end == ")") and not numeric:
                yield _line(text, m.start()), (f"settings::{fn}(\"{name}\") needs a number as the declared default "
                                               f"(it is {d.default!r}): pass the default, or declare it")
            elif fn == "PositiveNumber" and end == "," and d.has_value_default:
                yield _line(text, m.start()), (f"settings::PositiveNumber(\"{name}\", ...) repeats the declared default "
                                               f"{d.default}: use settings::PositiveNumber(\"{name}\")")
    elif kind == "py":
        for m in PY_DEFAULT_NUMBER_RE.finditer(text):
            d = settings.find(m.group(1))
            if d is not None and not (d.has_value_default and settings._number(d.default) is not None):
                yield _line(text, m.start()), f"settings.default_number(\"{m.group(1)}\"): its default is {d.default!r}"
    else:
        for m in SHELL_DEFAULT_RE.finditer(text):
            name, value = m.groups()
            d = settings.find(name)
            if d is not None and d.has_value_default and value and value != d.default:
                yield _line(text, m.start()), f"${{{name}:-{value}}}: the declared default is {d.default}"


# ---- rule 5: the page -------------------------------------------------------------------------

def _cell(text):
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;") \
        .replace("*", "\\*")


def _row(d):
    default = f"`{d.default}`" if d.has_value_default else _cell(d.default)
    unit = "" if d.unit == "-" else d.unit
    return f"| `{d.name}` | {d.type} | {default} | {unit} | {d.tier.replace(',', ', ')} | {_cell(d.readers)} | {_cell(d.what)} |"


HEAD = "| name | type | default | unit | tier | read by | what it changes |\n|---|---|---|---|---|---|---|"


def render_page(rows):
    """docs/settings.md, from the table's rows."""
    knobs = [d for d in rows if d.kind == "knob"]
    plumbing = [d for d in rows if d.kind == "plumbing"]
    retired = [d for d in rows if d.kind == "retired"]
    binaries = [d for d in knobs if set(d.tiers) & {"bat", "full", "stress", "all"}]
    tools = [d for d in knobs if "tools" in d.tiers and d not in binaries]
    tests = [d for d in knobs if d not in binaries and d not in tools]
    def prose(text, bullet=False):
        return textwrap.fill(text, 100, initial_indent="- " if bullet else "",
                             subsequent_indent="  " if bullet else "", break_on_hyphens=False,
                             break_long_words=False)

    out = [
        "# Settings",
        "",
        f"<!-- Generated from {settings.TABLE_NAME} by {WRITE_COMMAND}: edit the table, then run",
        "     that command. tools/lint:settings_check_test fails when this page differs. -->",
        "",
        prose(f"Every `PAGELOCK_*` environment variable pagelock reads: {len(rows)} in all, {len(knobs)} knobs, "
        f"{len(plumbing)} plumbing and {len(retired)} retired, declared once in "
        f"[`{settings.TABLE_NAME}`](../{settings.TABLE_NAME}). The test binaries read them through "
        "`fixtures/settings.h` (the table is compiled in), the Python tools through `reports/settings.py`; "
        "`tools/lint/settings_check.py` fails on any other read and on a name the table does not declare."),
        "",
        prose("A **knob** is what an operator or a developer sets. Under Bazel give it with "
        "`--test_env=NAME=VALUE`; for `tools/qualify`, a bundle's `run` or a tool, put it in the "
        "environment. `tools/qualify --settings` prints every setting with the value in effect, and "
        "each run records the knobs (and any variable set) in `results.json` under `info.settings`.", True),
        prose("**Plumbing** is how one harness process hands something to another (the runner to a binary, a "
        "case to its child process, qualify to the fault shim). It is declared so that nothing reads an "
        "undeclared name; set it by hand only to replay or debug.", True),
        prose("A default in parentheses depends on the tier, the case or the machine. A numeric knob whose "
        "text is not a positive number reads as its default, except where the row says the case fails: "
        "a gate must not pass on a misconfigured value.", True),
        prose("tier: where it takes effect (`bat`, `full`, `stress` are the test tiers; `all` every tier; "
        "`tools` the Python and shell tools; `tests` the harness's own tests). Budgets a case records "
        "are in its `pagelock.budget.*` properties ([suites.md](suites.md)).", True),
        "",
        "## Knobs of the test binaries", "", HEAD, *map(_row, binaries), "",
        "## Knobs of the tools", "", HEAD, *map(_row, tools), "",
        "## Knobs of the harness's own tests", "", HEAD, *map(_row, tests), "",
        "## Plumbing", "", HEAD, *map(_row, plumbing), "",
        "## Retired", "",
        "Read by nothing; kept because earlier records and pages name them.", "",
        HEAD, *map(_row, retired), "",
    ]
    return "\n".join(out)


# ---- the check ----------------------------------------------------------------------------------

def check(root):
    """Every problem, as 'path:line: why', sorted."""
    files = source_files(root)
    known_macros = macros(files)
    cpp_consts = cpp_constants(files)
    trees = {}
    problems = []
    for rel, text in files:
        if rel.endswith(".py"):
            try:
                trees[rel] = ast.parse(text, rel)
            except SyntaxError as e:
                problems.append(f"{rel}:{e.lineno}: does not parse: {e.msg}")
    py_consts = py_constants(trees)
    problems += cpp_helper_calls(files, cpp_helpers(files))
    for rel, text in files:
        found = []
        if not _exempt(rel):
            if _kind(rel) == "cpp":
                found += cpp_reads(rel, text, cpp_consts)
            elif rel in trees:
                found += py_reads(trees[rel], py_consts)
                found += py_helper_reads(trees[rel], py_consts)
        if rel not in EXEMPT_TESTS:
            found += undeclared_names(rel, text, known_macros)
            found += accessor_problems(rel, text)
        problems += [f"{rel}:{line}: {why}" for line, why in found]
    page = os.path.join(root, PAGE)
    try:
        with open(page, encoding="utf-8") as f:
            current = f.read()
    except OSError:
        current = None
    if current != render_page(settings.declarations()):
        problems.append(f"{PAGE}:1: {'missing' if current is None else 'stale'}: run {WRITE_COMMAND}")
    return sorted(set(problems), key=lambda p: (p.split(":")[0], int(p.split(":")[1]), p))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", nargs="?", default=ROOT, help="the checkout to check (default: this one)")
    p.add_argument("--write", action="store_true", help=f"(re)write {PAGE} from the table first")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    if not os.path.isdir(args.root):
        print(f"settings_check: {args.root} is not a folder", file=sys.stderr)
        return 2
    try:
        rows = settings.declarations()
    except settings.SettingsError as e:
        print(f"settings_check: {e}", file=sys.stderr)
        return 2
    if args.write:
        with open(os.path.join(args.root, PAGE), "w", encoding="utf-8") as f:
            f.write(render_page(rows))
        print(f"settings_check: wrote {PAGE} ({len(rows)} settings)")
    problems = check(args.root)
    for line in problems:
        print(line)
    if problems:
        print(f"settings_check: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
