"""fixtures/BUILD.bazel's _WRAPPED (the -Wl,--wrap= list) is hand-kept beside the __wrap_
functions of fixtures/pinned_tracker.cc: a name in one and not the other either links a
wrapper nobody calls or leaves an entry point uncounted. This test keeps them in step."""

import os
import re
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def wrapped_in_build(text):
    m = re.search(r"_WRAPPED\s*=\s*\[(.*?)\]", text, re.S)
    return set(re.findall(r'"(\w+)"', m.group(1))) if m else set()


def wrappers_in_source(text):
    return set(re.findall(r"\b__wrap_(\w+)\s*\(", text))


class WrappedListTest(unittest.TestCase):
    def read(self, rel):
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            return f.read()

    def test_the_link_list_and_the_wrappers_name_the_same_entry_points(self):
        build = wrapped_in_build(self.read("fixtures/BUILD.bazel"))
        source = wrappers_in_source(self.read("fixtures/pinned_tracker.cc"))
        self.assertTrue(build, "no _WRAPPED list found in fixtures/BUILD.bazel")
        self.assertEqual(build, source, "fixtures/BUILD.bazel _WRAPPED vs __wrap_ functions of pinned_tracker.cc")

    def test_a_missing_wrapper_is_noticed(self):
        self.assertNotEqual(wrapped_in_build('_WRAPPED = ["a", "b"]'), wrappers_in_source("int __wrap_a(int x);"))


if __name__ == "__main__":
    unittest.main()
