#!/usr/bin/env python3
"""The frees lint: memory a suite pins, maps or allocates is released by an owner of the kit
(fixtures/resources.h, kind_buffer.h, host_memory.h's Mapping), which reports a failed release,
not by a call whose result nobody looks at.

  tools/lint/frees_check.py [ROOT]          check suites/ of the checkout at ROOT (default: this one)
  tools/lint/frees_check.py --list [ROOT]   print every unchecked free, then check

Exit codes: 0 clean; 1 problems, one per line (path:line: why).

A release call is cudaFreeHost, cudaFree, cudaFreeArray, cudaHostUnregister, cuMemFreeHost,
cuMemFree, cuMemHostUnregister or munmap (also through a driver table: d.cuMemFreeHost(...)).
std::free is not counted: heap memory is not pinned, and its registration's release is.
A call is checked when its result is used: an argument (EXPECT_CUDA_OK(cudaFreeHost(p)),
report.Error("free", cudaFreeHost(p))), an assignment, a return or a comparison; those are the
behaviour under test or a result a case records. It is unchecked when it is a statement of its
own (after ; { } else, an if or for head, or a (void) cast).

It fails on:
  1. an unchecked release without a reason: `// frees_check: <why>` on its line or the line above;
  2. more than LIMIT unchecked releases in suites/ (issue 40: ten at most, each with its reason).
"""

import argparse
import os
import re
import sys

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.lint.frees_check"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIMIT = 10
SCANNED = ("suites",)
CPP = (".cc", ".h", ".cu", ".cuh")
MARK = "frees_check:"
CALLS = ("cudaFreeHost", "cudaFree", "cudaFreeArray", "cudaHostUnregister", "cuMemFreeHost", "cuMemFree",
         "cuMemHostUnregister", "munmap")
CALL_RE = re.compile(r"\b(" + "|".join(CALLS) + r")\s*\(")
# What may stand before the call's name and still be the call: a receiver (d. Driver(). p->).
RECEIVER_RE = re.compile(r"(?:[A-Za-z_]\w*(?:\(\))?\s*(?:\.|->)\s*)+$")
CODE_RE = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)


def _blank(text):
    """The text with comments and literals blanked (same length, same lines)."""
    return CODE_RE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _unchecked(code, start):
    """True when the call starting at `start` is a statement of its own (its result unused)."""
    before = code[:start].rstrip()
    if before.endswith(("(void)", "static_cast<void>")):
        return True
    if not before or before[-1] in ";{}":
        return True
    if re.search(r"\b(?:else|do)$", before):
        return True
    if before[-1] == ")":  # an if/for/while head (a cast to void was handled above)
        depth, i = 0, len(before) - 1
        while i >= 0:
            depth += {")": 1, "(": -1}.get(before[i], 0)
            if depth == 0:
                break
            i -= 1
        return re.search(r"\b(?:if|for|while)\s*$", before[:i]) is not None
    if before[-1] == ":" and not before.endswith("::"):  # a label (case X:), not a ternary
        stmt = re.split(r"[;{}]", before)[-1]
        return "?" not in stmt
    return False


def unchecked_frees(root):
    """(path, line, call, reason or None) of every unchecked release in suites/, sorted."""
    out = []
    for top in SCANNED:
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs.sort()
            for n in sorted(names):
                if not n.endswith(CPP):
                    continue
                path = os.path.join(d, n)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                lines = text.split("\n")
                code = _blank(text)
                for m in CALL_RE.finditer(code):
                    start = m.start()
                    r = RECEIVER_RE.search(code[:start])
                    if r:
                        start = r.start()
                    if not _unchecked(code, start):
                        continue
                    line = code.count("\n", 0, m.start()) + 1
                    reason = None
                    for text_line in (lines[line - 1], lines[line - 2] if line > 1 else ""):
                        if MARK in text_line:
                            reason = text_line.split(MARK, 1)[1].strip() or None
                            break
                    out.append((os.path.relpath(path, root), line, m.group(1), reason))
    return out


def check(root):
    """Every problem, as 'path:line: why'."""
    frees = unchecked_frees(root)
    problems = [f"{p}:{line}: {call} unchecked and unexplained: release it through an owner of the kit, "
                f"or say why not with `// {MARK} <why>`" for p, line, call, reason in frees if reason is None]
    if len(frees) > LIMIT:
        problems.append(f"suites:1: {len(frees)} unchecked releases, more than {LIMIT}: move some to the kit's owners")
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", nargs="?", default=ROOT, help="the checkout to check (default: this one)")
    p.add_argument("--list", action="store_true", help="print every unchecked release and its reason")
    args = p.parse_args(argv)
    if args.list:
        for path, line, call, reason in unchecked_frees(args.root):
            print(f"{path}:{line}: {call}: {reason or '(no reason)'}")
    problems = check(args.root)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
