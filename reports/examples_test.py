"""The committed examples are what `reports/rerender.py --examples` makes, byte for byte, and
nothing else; examples/ stays under 5 MB; no committed example or baseline carries an absolute
path of the machine that wrote it (/tmp/, /root, /work/, /home/, /var/tmp/: reports/rerender.py
ABSOLUTE_PATH).

  /usr/bin/python3 reports/examples_test.py      # or: bazel test //reports:examples_test

The pages are rendered by Jinja2: under an interpreter without it this file re-executes itself
under one that has it (reports/interpreter.py).
"""

import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.examples_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

if __name__ == "__main__":
    from reports import interpreter
    interpreter.reexec_if_missing("jinja2", __file__, ROOT)

from reports import rerender

EXAMPLES = os.path.join(ROOT, "examples")
BASELINES = os.path.join(ROOT, "baselines")
MAX_BYTES = 5_000_000
# Made by other commands: the screenshot (by --examples, where Chromium is) and the fleet report
# (docs/fleet.md's two commands; tools/fleet:example_test proves them).
NOT_RENDERED = {rerender.SCREENSHOT, "fleet/index.html", "fleet/fleet.json"}
REGENERATE = "python3 reports/rerender.py --examples, then commit examples/"


def committed():
    """{path under examples/: absolute path} of every committed example file."""
    return {os.path.relpath(os.path.join(d, f), EXAMPLES): os.path.join(d, f)
            for d, _, files in os.walk(EXAMPLES) for f in files}


class ExamplesTest(unittest.TestCase):
    def setUp(self):
        if not os.path.isdir(EXAMPLES):
            self.skipTest("no examples/ beside this file (a Bazel sandbox without them)")

    def test_re_rendering_the_examples_changes_nothing(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        written, _ = rerender.examples(tmp, ROOT, screenshot=False)
        self.assertTrue(written)
        have = committed()
        for path in sorted(written):
            rel = os.path.relpath(path, tmp)
            self.assertIn(rel, have, f"examples/{rel} is not committed: {REGENERATE}")
            with open(path, "rb") as f, open(have[rel], "rb") as g:
                same = f.read() == g.read()
            self.assertTrue(same, f"examples/{rel} is not what today's code makes: {REGENERATE}")

    def test_the_examples_hold_nothing_but_what_is_made(self):
        made = set(rerender.example_files(ROOT)) | NOT_RENDERED
        self.assertEqual(sorted(set(committed()) - made), [],
                         "files under examples/ that no command makes (evidence belongs in docs/, cited by commit)")
        self.assertIn(rerender.SCREENSHOT, committed(), "the README's picture")

    def test_the_examples_stay_small(self):
        size = sum(os.path.getsize(p) for p in committed().values())
        self.assertLessEqual(size, MAX_BYTES, f"examples/ holds {size:,} bytes")

    def test_no_committed_example_carries_an_absolute_path(self):
        found = rerender.absolute_paths(EXAMPLES)
        self.assertEqual(found, [], "absolute paths in committed examples (reports/rerender.py --examples "
                                    "rewrites them):\n" + "\n".join(f"{p}:{i}: {l}" for p, i, l in found[:20]))

    def test_no_committed_baseline_carries_an_absolute_path(self):
        # A baseline is read on other machines: a path of the one that wrote it means nothing there.
        if not os.path.isdir(BASELINES):
            self.skipTest("no baselines/ beside this file (a Bazel sandbox without them)")
        found = rerender.absolute_paths(BASELINES)
        self.assertEqual(found, [], "absolute paths in committed baselines (rewrite them with "
                                    "reports.rerender.relative):\n" + "\n".join(f"{p}:{i}: {l}" for p, i, l in found[:20]))


class PathsTest(unittest.TestCase):
    def test_the_search_finds_what_it_must_and_spares_device_paths(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        with open(os.path.join(tmp, "a.json"), "w") as f:
            f.write('{"baseline": "/tmp/w7/ref/results.json", "log": "read from /dev/kmsg",\n'
                    ' "home": "/root/out/self", "sys": "/sys/bus/pci/devices", "e": "/work/main/x.txt"}\n')
        found = rerender.absolute_paths(tmp)
        self.assertEqual([i for _, i, _ in found], [1, 2])
        rerender.rewrite_paths(tmp)
        self.assertEqual(rerender.absolute_paths(tmp), [])
        with open(os.path.join(tmp, "a.json")) as f:
            text = f.read()
        self.assertIn('"runs/ref/results.json"', text)
        self.assertIn('"x.txt"', text)
        self.assertIn("/dev/kmsg", text)


class FirstNightExampleTest(unittest.TestCase):
    def test_the_first_night_is_the_baseline_run_re_judged_and_says_so(self):
        ex = next(e for e in rerender.EXAMPLES if e.as_first_night)
        run, info, data = rerender.model.read_results(os.path.join(ROOT, ex.source))
        night, comp = rerender.as_first_night(run, info, data, ROOT)
        self.assertEqual(comp.verdict[0], "FIRST NIGHT")
        self.assertEqual((night["baseline"], list(night["expectations"])), ("none", ["expectations/common.txt"]))
        self.assertIn("re-judged", night["label"])
        self.assertEqual(night["run_key"], info["run_key"])  # the real run, not a made-up one
        self.assertTrue(night["first_night"]["may_become_baseline"])

    def test_a_kernel_fault_between_cases_still_fails_the_re_judged_night(self):
        ex = next(e for e in rerender.EXAMPLES if e.as_first_night)
        run, info, data = rerender.model.read_results(os.path.join(ROOT, ex.source))
        data = dict(data, machine_coverage=[{"id": "kernel_log:outside_cases", "status": "REGRESSION",
                                             "why": "1 kernel log line(s) reporting a fault while no case ran"}])
        _, comp = rerender.as_first_night(run, info, data, ROOT)
        self.assertEqual(comp.verdict[0], "REGRESSIONS")


if __name__ == "__main__":
    unittest.main()
