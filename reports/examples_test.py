"""The committed examples carry no absolute path of the machine that wrote them (issue 23
item 6): every text file under examples/ is searched for /tmp/, /root, /work/, /home/ and
/var/tmp/ paths (reports/rerender.py ABSOLUTE_PATH); reports/rerender.py --examples DIR rewrites
them into relative ones and re-renders the pages.

  python3 reports/examples_test.py      # or: bazel test //reports:examples_test
"""

import os
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

from reports import rerender

EXAMPLES = os.path.join(ROOT, "examples")
BASELINES = os.path.join(ROOT, "baselines")


class ExamplesTest(unittest.TestCase):
    def test_no_committed_example_carries_an_absolute_path(self):
        if not os.path.isdir(EXAMPLES):
            self.skipTest("no examples/ beside this file (a Bazel sandbox without them)")
        found = []
        for name in sorted(os.listdir(EXAMPLES)):
            found += rerender.absolute_paths(os.path.join(EXAMPLES, name))
        self.assertEqual(found, [], "absolute paths in committed examples (reports/rerender.py --examples "
                                    "DIR rewrites them):\n" + "\n".join(f"{p}:{i}: {l}" for p, i, l in found[:20]))

    def test_no_committed_baseline_carries_an_absolute_path(self):
        # A baseline is read on other machines: a path of the one that wrote it means nothing there.
        if not os.path.isdir(BASELINES):
            self.skipTest("no baselines/ beside this file (a Bazel sandbox without them)")
        found = rerender.absolute_paths(BASELINES)
        self.assertEqual(found, [], "absolute paths in committed baselines (rewrite them with "
                                    "reports.rerender.relative):\n" + "\n".join(f"{p}:{i}: {l}" for p, i, l in found[:20]))

    def test_the_search_finds_what_it_must_and_spares_device_paths(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
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


if __name__ == "__main__":
    unittest.main()
