#!/usr/bin/env python3
"""The catalogue's layout stays as tools/faults/README.md draws it: every area file under
catalogue/ is listed in the registry (an area left out would build, and its faults would silently
be missing from the catalogue), every probe file in shim_client.cc, and no source file of the
folder outgrows the sizes the suites keep (1,200 lines a file, 120 lines a function)."""
import ast
import glob
import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_FILE_LINES = 1200
MAX_FUNCTION_LINES = 120


def read(rel):
    with open(os.path.join(HERE, rel), encoding="utf-8") as f:
        return f.read()


def defined(pattern, files):
    """{name: file} of the `extern const <type> <name> =` definitions in files."""
    out = {}
    for path in files:
        for name in re.findall(pattern, read(path)):
            out[name] = os.path.basename(path)
    return out


def listed(text, macro):
    return set(re.findall(r"\b" + macro + r"\((k\w+)\)", text))


def cpp_function_lengths(text):
    """(first line, lines) of every brace block opened at namespace depth by a line holding a
    parenthesis (a function body), by counting braces outside strings and comments."""
    depth, start, out = 0, None, []
    namespaces = 0
    for n, line in enumerate(text.split("\n"), start=1):
        code = re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'', '""', line).split("//")[0]
        if re.match(r"\s*namespace\b.*\{", code):
            namespaces += 1
            continue
        if depth == 0 and code.strip().startswith("}") and namespaces:
            namespaces -= 1
            continue
        opened = code.count("{") - code.count("}")
        if depth == 0 and opened > 0 and "(" in code and "=" not in code.split("(")[0]:
            start = n
        depth += opened
        if depth == 0 and start:
            out.append((start, n - start + 1))
            start = None
    return out


def sources():
    pats = ("*.cc", "*.h", "*.py", "catalogue/*.cc", "probes/*.cc", "probes/*.h", "*.sh")
    return sorted(p for pat in pats for p in glob.glob(os.path.join(HERE, pat)))


class LayoutTest(unittest.TestCase):
    def test_every_area_file_is_in_the_registry_once(self):
        areas = defined(r"extern const Area (k\w+) =", glob.glob(os.path.join(HERE, "catalogue", "*.cc")))
        self.assertIn("kCopiesArea", areas)
        self.assertEqual(set(areas), listed(read("catalogue.cc"), "PL_AREA"),
                         "an area file without its PL_AREA line in catalogue.cc, or the reverse")
        files = glob.glob(os.path.join(HERE, "catalogue", "*.cc"))
        self.assertEqual(len(set(areas.values())), len(files), "a catalogue/ file defines no Area")

    def test_every_probe_file_is_listed_in_shim_client(self):
        probes = defined(r"extern const ProbeArea (k\w+) =", glob.glob(os.path.join(HERE, "probes", "*.cc")))
        self.assertIn("kMemsetsProbes", probes)
        self.assertEqual(set(probes), listed(read("shim_client.cc"), "PL_AREA"))

    def test_probe_files_are_named_after_areas(self):
        areas = {os.path.basename(p) for p in glob.glob(os.path.join(HERE, "catalogue", "*.cc"))}
        for path in glob.glob(os.path.join(HERE, "probes", "*.cc")):
            self.assertIn(os.path.basename(path), areas, path)

    def test_no_source_file_is_over_1200_lines(self):
        for path in sources():
            with self.subTest(path=os.path.relpath(path, HERE)):
                self.assertLessEqual(read(path).count("\n"), MAX_FILE_LINES)

    def test_no_function_is_over_120_lines(self):
        for path in sources():
            rel = os.path.relpath(path, HERE)
            if path.endswith("_test.py") or path.endswith(".sh"):
                continue
            text = read(path)
            if path.endswith(".py"):
                lengths = [(f.lineno, f.end_lineno - f.lineno + 1) for f in ast.walk(ast.parse(text))
                           if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
            else:
                lengths = cpp_function_lengths(text)
            for line, n in lengths:
                self.assertLessEqual(n, MAX_FUNCTION_LINES, f"{rel}:{line}: a function of {n} lines")

    def test_the_function_measure_sees_a_long_function(self):
        body = "int F(int a) {\n" + "  a += 1;\n" * 130 + "  return a;\n}\n"
        self.assertEqual(cpp_function_lengths("namespace x {\n" + body + "}  // namespace x\n"),
                         [(2, 133)])
        self.assertEqual(cpp_function_lengths('const char* s = "{";\nint G() {\n  return 1;\n}\n'),
                         [(2, 3)])


if __name__ == "__main__":
    unittest.main()
