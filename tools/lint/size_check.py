#!/usr/bin/env python3
"""The size lint: no harness source file over 1,200 lines, no function over 120 lines
in C++ or Python outside tests.

  tools/lint/size_check.py [ROOT]   check the checkout at ROOT (default: this one)

Exit codes: 0 clean; 1 problems, one per line (path:line: why, with the length); 2 bad usage.

What it reads: the checkout's tracked source files (.cc .h .cu .py; `git ls-files` where ROOT is
a git checkout, else every such file under ROOT), except examples/, third_party/ and any testdata/
folder (stand-ins and copies, not the harness).
  1. A file over MAX_FILE_LINES lines fails, tests included.
  2. A function over MAX_FUNCTION_LINES lines fails, outside tests (*_test.cc, *_test.cu,
     *_test.py): the length runs from the line its signature starts on (Python: the `def` line,
     decorators not counted) to the line of its closing brace or its last statement, both
     counted. Python functions are found with ast (methods and nested functions each count on
     their own). C++ functions are found by the brace scanner below.
KNOWN names offenders that are printed on stderr, not failed: a way to bring a limit in before
the code that breaks it is split (the three offenders found when the lint came were each split in
a commit of its own). Empty now; keep it so.

The C++ scanner's limits (enough for this tree; a false reading shows as a wrong name or length,
never a crash): it blanks comments, string and character literals (raw strings included) and
preprocessor lines (with their continuations), then matches braces. A brace opens a function
body when it is met outside any function and the text before it (since the last `;` or the
last body opened or closed) ends like a signature: `)` followed only by const, noexcept,
override, final, mutable, `&`, `&&` or a `-> type`, or a constructor's `) : x_(a), y_{b}` list, or
`= [captures]` (a lambda that initializes a variable outside any function). Namespace and
`extern "C"` braces and class, struct, union and enum bodies are not functions: the functions
inside them are found on their own. Everything inside a function body, lambdas and local classes
included, belongs to that function. Braces of an initializer outside any function
(`int a[] = {1, 2}`, `x_{0}`) are skipped. A lambda inside a macro's arguments outside any
function (INSTANTIATE_TEST_SUITE_P's name generator) counts as a function named after the
macro. Not handled: a macro that opens or closes a brace for its caller, a macro call without a
`;` just before a class or struct, code that only parses after the preprocessor joins its
pieces, and a function-try-block (`f() try { } catch`), whose handlers are read as separate
blocks: each may give a wrong name or length, or miss a function.
"""

import argparse
import ast
import os
import re
import subprocess
import sys

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.lint.size_check"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MAX_FILE_LINES = 1200
MAX_FUNCTION_LINES = 120
CPP = (".cc", ".h", ".cu")
CHECKED = CPP + (".py",)
TESTS = ("_test.cc", "_test.cu", "_test.py")
SKIP_TOP = ("examples", "third_party")
SKIP_ANY = ("testdata",)
# Folders a walk (no git) never enters: build outputs and caches, not sources.
WALK_SKIP = {".git", "__pycache__", "node_modules", "runs", "build"}
# (path, function or None for the file's length) printed, not failed; see the docstring.
KNOWN = set()


def _skipped(rel):
    parts = rel.replace(os.sep, "/").split("/")
    return parts[0] in SKIP_TOP or any(p in SKIP_ANY for p in parts[:-1])


def tracked_files(root):
    """The relative paths of the sources the lint reads, sorted: git's list where root is a git
    checkout (tracked files only), else a walk of root."""
    try:
        p = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, timeout=60)
        listed = p.stdout.decode("utf-8", "replace").split("\0") if p.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        listed = None
    if listed is None:
        listed = []
        for d, dirs, names in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x not in WALK_SKIP and not x.startswith("bazel-")
                             and not os.path.islink(os.path.join(d, x)))
            listed += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(rel for rel in listed
                  if rel.endswith(CHECKED) and not _skipped(rel) and os.path.isfile(os.path.join(root, rel)))


def line_count(text):
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


# ---- Python ---------------------------------------------------------------------------------------

def python_functions(text, rel="<source>"):
    """(name, first line, length) of every function and method, nested ones included."""
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                out.append((name, child.lineno, child.end_lineno - child.lineno + 1))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(text, rel), "")
    return out


# ---- C++ ------------------------------------------------------------------------------------------

RAW_STRING_RE = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')


def blank_cpp(text):
    """text with comments, literals and preprocessor lines replaced by spaces (newlines kept, so
    offsets and line numbers stay). String quotes are kept (extern "C" stays recognisable)."""
    out = list(text)
    n = len(text)
    i = 0
    line_start = True  # only spaces since the last newline

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if line_start and c == "#":
            j = i
            while j < n:  # the directive and its continuation lines
                e = text.find("\n", j)
                e = n if e < 0 else e
                if e > 0 and text[e - 1] == "\\" and e < n:
                    j = e + 1
                    continue
                j = e
                break
            blank(i, j)
            i = j
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            e = text.find("\n", i)
            e = n if e < 0 else e
            blank(i, e)
            i = e
        elif text.startswith("/*", i):
            e = text.find("*/", i + 2)
            e = n if e < 0 else e + 2
            blank(i, e)
            i = e
        elif c == '"' or (c in "RuUL" and not (i and (text[i - 1].isalnum() or text[i - 1] == "_"))
                          and RAW_STRING_RE.match(text, i)):
            m = RAW_STRING_RE.match(text, i)
            if m:
                close = ")" + m.group(1) + '"'
                e = text.find(close, m.end())
                e = n if e < 0 else e + len(close)
                blank(m.end() - 1, e - 1)
            else:
                e = i + 1
                while e < n and text[e] not in '"\n':
                    e += 2 if text[e] == "\\" else 1
                e = min(e + 1, n)
                blank(i + 1, e - 1)
            i = e
        elif c == "'":
            k = i - 1
            while k >= 0 and (text[k].isalnum() or text[k] in "_."):
                k -= 1
            if i and text[i - 1].isalnum() and text[k + 1].isdigit():
                i += 1  # a digit separator: 1'000'000
                continue
            e = i + 1
            while e < n and text[e] not in "'\n":
                e += 2 if text[e] == "\\" else 1
            e = min(e + 1, n)
            blank(i + 1, e - 1)
            i = e
        else:
            i += 1
    return "".join(out)


SIGNATURE_END_RE = re.compile(r"\)\s*(?:(?:const|noexcept|override|final|mutable|volatile|&&|&)\s*)*"
                              r"(?:->[^;{}]*)?$")
CTOR_INIT_RE = re.compile(r"\)\s*(?:noexcept\s*)?:(?!:)")
NAMESPACE_RE = re.compile(r"\bnamespace(?:\s+[\w:]+)?\s*$|^extern\s*\"[^\"]*\"\s*$")
ACCESS = ("public", "private", "protected")
LAMBDA_RE = re.compile(r"=\s*\[[^\]]*\]\s*(?:mutable\s*)?$")
TYPE_RE = re.compile(r"^(?:typedef\s+)?(?:class|struct|union|enum)\b(?![^=]*=)")
NAME_RE = re.compile(r"((?:~|operator\s*\S+?|[A-Za-z_]\w*)(?:\s*::\s*(?:~?[A-Za-z_]\w*|operator\s*\S+?))*)\s*$")


def _signature_name(header):
    """The function's name from its signature: the qualified name before the first `(`, or a
    macro's call with its arguments (TEST_F(Suite, Case)), or a lambda's variable (x (lambda))."""
    lam = re.search(r"([A-Za-z_]\w*)\s*=\s*\[[^\]]*\]", header)
    if lam and "(" not in header[:lam.start()]:
        return lam.group(1) + " (lambda)"
    depth, cut = 0, None
    for k, ch in enumerate(header):
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = k
            break
    if cut is None:
        return " ".join(header.split())[:60]
    m = NAME_RE.search(header[:cut])
    name = re.sub(r"\s+", "", m.group(1)) if m else " ".join(header[:cut].split())[-60:] or "(lambda)"
    if re.fullmatch(r"[A-Z][A-Z0-9_]+", name):
        close = header.find(")", cut)
        name += " ".join(header[cut:close + 1].split()) if close > 0 else ""
    return name


def _without_template(header):
    """header without its leading `template <...>` lists (angle brackets matched)."""
    h = header.strip()
    while re.match(r"template\s*<", h):
        depth, k = 0, h.index("<")
        for k in range(k, len(h)):
            depth += {"<": 1, ">": -1}.get(h[k], 0)
            if depth == 0:
                break
        h = h[k + 1:].lstrip()
    return h


def _is_type(header):
    return bool(TYPE_RE.match(_without_template(header)))


def _is_signature(header):
    h = header.strip()
    if not h or _is_type(h) or NAMESPACE_RE.search(h):
        return False
    return bool(SIGNATURE_END_RE.search(h) or (CTOR_INIT_RE.search(h) and h.endswith("}"))
                or LAMBDA_RE.search(h))


def cpp_functions(text):
    """(name, first line, length) of every function body found by the brace scanner."""
    code = blank_cpp(text)
    out = []
    stack = []  # per open brace: "ns" (namespace/extern), "type", "init", or ("fn", name, line)
    header_start = 0
    in_function = 0
    for i, ch in enumerate(code):
        if ch == ";" and not in_function:
            header_start = i + 1
        elif ch == ":" and not in_function and code[header_start:i].strip() in ACCESS:
            header_start = i + 1  # public: and the like end a header as `;` does
        elif ch == "{":
            if in_function:
                stack.append("block")
                continue
            header = code[header_start:i]
            h = header.strip()
            if NAMESPACE_RE.search(h):
                stack.append("ns")
                header_start = i + 1
            elif _is_signature(header):
                first = header_start + (len(header) - len(header.lstrip()))
                stack.append(("fn", _signature_name(h), code.count("\n", 0, first) + 1))
                in_function += 1
            elif _is_type(h):
                stack.append("type")
                header_start = i + 1
            else:
                stack.append("init")  # an initializer: the header goes on after it
        elif ch == "}":
            if not stack:
                continue
            kind = stack.pop()
            if isinstance(kind, tuple):
                in_function -= 1
                _, name, first = kind
                last = code.count("\n", 0, i) + 1
                out.append((name, first, last - first + 1))
                header_start = i + 1
            elif kind in ("ns", "type"):
                header_start = i + 1
    return out


# ---- the check ------------------------------------------------------------------------------------

def is_test(rel):
    return rel.endswith(TESTS)


def check_file(rel, text, known=()):
    """'path:line: why' for one file; what `known` names is left out."""
    problems = []
    n = line_count(text)
    if n > MAX_FILE_LINES and (rel, None) not in known:
        problems.append(f"{rel}:1: file is {n} lines (limit {MAX_FILE_LINES})")
    if is_test(rel):
        return problems
    if rel.endswith(".py"):
        try:
            functions = python_functions(text, rel)
        except SyntaxError as e:
            return problems + [f"{rel}:{e.lineno}: does not parse: {e.msg}"]
    else:
        functions = cpp_functions(text)
    for name, line, length in functions:
        if length > MAX_FUNCTION_LINES and (rel, name) not in known:
            problems.append(f"{rel}:{line}: function {name} is {length} lines (limit {MAX_FUNCTION_LINES})")
    return problems


def check(root, known=()):
    """Every problem, as 'path:line: why', sorted by path and line; what `known` names is left
    out (main passes KNOWN)."""
    problems = []
    for rel in tracked_files(root):
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            problems.append(f"{rel}:1: cannot read: {e}")
            continue
        problems += check_file(rel, text, known)
    return sorted(problems, key=lambda p: (p.split(":")[0], int(p.split(":")[1]), p))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", nargs="?", default=ROOT, help="the checkout to check (default: this one)")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    if not os.path.isdir(args.root):
        print(f"size_check: {args.root} is not a folder", file=sys.stderr)
        return 2
    problems = check(args.root, KNOWN)
    waived = sorted(set(check(args.root)) - set(problems))
    for line in waived:
        print(f"size_check: known, to be split: {line}", file=sys.stderr)
    for line in problems:
        print(line)
    if problems:
        print(f"size_check: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
