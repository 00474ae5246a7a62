#!/usr/bin/env python3
"""Every copy or memset a test performs is followed by a check of its bytes.

A heuristic over C++ sources: each call of cudaMemcpy*, cudaMemset*, cuMemcpy* or cuMemset* must
be followed, on its own line or within --lines lines after it, by one of
  - a byte-check helper (CountPattern..., CountByte..., HostCountPatternMismatches, memcmp, ...);
  - an EXPECT_/ASSERT_/RC_ASSERT or a report.Set that names the call's destination (its first
    argument, without & or casts), e.g. cudaMemcpy(&device_bad, ...) then EXPECT_EQ(device_bad, 0u);
  - an explicit escape, on the call's line or the line before: `// copy-check: <why>` (the reason
    is required).

  tools/lint/copy_lint.py [--lines N] [--exclude DIR ...] [PATH ...]   (default PATH: suites/)

Exit codes: 0 every copy is checked; 1 unchecked copies (listed as file:line: ...); 2 bad usage or
an unreadable path.
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CALL_RE = re.compile(r"\b(cudaMemcpy\w*|cudaMemset\w*|cuMemcpy\w*|cuMemset\w*)\s*\(")
# Names that match CALL_RE's prefix but are not copies (enum values are never followed by "(").
NOT_CALLS = {"cudaMemcpyKind"}
CHECK_RE = re.compile(
    r"\b(\w*Count\w*Mismatch\w*|CountPattern\w*|CountByte\w*|HostCountPattern\w*|HostCountByte\w*|"
    r"DeviceCount|memcmp|std::equal|Verify\w*|ExpectBytes\w*|CheckBytes\w*)\s*\(")
# Assertions on values; the CUDA status macros (ASSERT_CUDA_OK, EXPECT_CU_ERROR, ...) check return codes,
# not bytes, so they do not count.
ASSERT_RE = re.compile(r"\b(?!(?:EXPECT|ASSERT)_CU(?:DA)?_)(EXPECT_\w+|ASSERT_\w+|RC_ASSERT\w*|report\.Set)\s*\(")
ESCAPE_RE = re.compile(r"//\s*copy-check:\s*(\S.*)?$")
DEFAULT_LINES = 15


def strip_comment(line):
    """The code part of a line (a // inside a string literal is rare enough to ignore)."""
    i = line.find("//")
    return line if i < 0 else line[:i]


def first_argument(text):
    """The destination of a call: its first argument's last identifier, without & or casts."""
    depth, arg = 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            break
        arg.append(ch)
    names = re.findall(r"[A-Za-z_]\w*", "".join(arg))
    skip = {"static_cast", "reinterpret_cast", "const_cast", "void", "char", "unsigned", "data", "get",
            "host", "dev", "ptr", "alias"}
    names = [n for n in names if n not in skip]
    return names[0] if names else None


def find_unchecked(path, lines_after=DEFAULT_LINES):
    """[(line_number, call_name, why)] for the unchecked copies in one file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    problems = []
    for i, raw in enumerate(lines):
        code = strip_comment(raw)
        for m in CALL_RE.finditer(code):
            name = m.group(1)
            if name in NOT_CALLS:
                continue
            escape = ESCAPE_RE.search(raw) or (i > 0 and ESCAPE_RE.search(lines[i - 1]))
            if escape:
                if not escape.group(1):
                    problems.append((i + 1, name, "copy-check escape without a reason"))
                continue
            dest = first_argument(code[m.end():])
            window = [strip_comment(l) for l in lines[i:i + 1 + lines_after]]
            checked = False
            for j, w in enumerate(window):
                # The call's own line counts for helpers after the call, not for the call itself.
                text = w[m.end():] if j == 0 else w
                if CHECK_RE.search(text):
                    checked = True
                    break
                if j > 0 and dest and ASSERT_RE.search(text) and re.search(r"\b%s\b" % re.escape(dest), text):
                    checked = True
                    break
            if not checked:
                problems.append((i + 1, name, "not followed within %d lines by a check of its bytes%s" %
                                 (lines_after, " (destination '%s')" % dest if dest else "")))
    return problems


def iter_sources(paths, excludes):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for dirpath, dirnames, files in os.walk(p):
            dirnames[:] = sorted(d for d in dirnames
                                 if os.path.normpath(os.path.join(dirpath, d)) not in excludes)
            for name in sorted(files):
                if name.endswith((".cc", ".cpp", ".h", ".cu")):
                    yield os.path.join(dirpath, name)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", help="files or folders (default: suites/ of the repository)")
    p.add_argument("--lines", type=int, default=DEFAULT_LINES, help="how far a check may follow (default 15)")
    p.add_argument("--exclude", action="append", default=[], help="a folder to skip (repeatable)")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    if args.lines < 0:
        print("copy_lint: --lines must be >= 0", file=sys.stderr)
        return 2
    paths = args.paths or [os.path.join(ROOT, "suites")]
    for path in paths:
        if not os.path.exists(path):
            print(f"copy_lint: {path}: no such file or folder", file=sys.stderr)
            return 2
    excludes = {os.path.normpath(e) for e in args.exclude}
    count, problems = 0, 0
    for src in iter_sources(paths, excludes):
        count += 1
        try:
            found = find_unchecked(src, args.lines)
        except OSError as e:
            print(f"copy_lint: {src}: {e.strerror}", file=sys.stderr)
            return 2
        for line, name, why in found:
            problems += 1
            print(f"{src}:{line}: {name} {why}")
    print(f"copy_lint: {count} files, {problems} unchecked copies", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
