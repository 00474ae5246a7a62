"""reports/validate.py: wrong-typed fields are named; devices, FIFOs and links to them are refused
without being read."""

import json
import os
import tempfile
import threading
import unittest

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.validate_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import validate


def case(**kw):
    return dict({"target": "//a:b", "suite": "S", "name": "A", "status": "PASS"}, **kw)


class ResultsProblemTest(unittest.TestCase):
    def test_a_good_document_has_no_problem(self):
        doc = {"format_version": 2, "info": {"bundle": {"commit": "x"}, "exit_code": 0},
               "run": {"fingerprint": {"nvidia_driver": "580.1"}, "cases": [
                   case(attempts=["FAIL", "PASS"], metrics={"bw": {"value": 1.5, "unit": "GB/s"}},
                        seconds=0.5, run_seed="12", stress=False)]}}
        self.assertIsNone(validate.results_problem(doc))

    def test_every_committed_results_file_is_valid(self):
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        path = os.path.join(root, "baselines", "nvidia-h200", "results.json")
        if not os.path.exists(path):
            self.skipTest("no committed baseline in this tree")
        self.assertIsNone(validate.results_problem(validate.read_json_file(path)))

    def test_wrong_types_are_named_by_their_path(self):
        for doc, needle in [
                ({"run": {"cases": [case(target=5)]}}, "run.cases[0].target: expected text, found a number (5)"),
                ({"run": {"fingerprint": {"nvidia_driver": 580}, "cases": []}},
                 "run.fingerprint.nvidia_driver: expected text, found a number (580)"),
                ({"info": {"bundle": "x"}, "run": {"cases": []}}, "info.bundle: expected an object, found text"),
                ({"run": {"cases": [case(seconds="slow")]}}, "run.cases[0].seconds"),
                ({"run": {"cases": [case(seconds=True)]}}, "run.cases[0].seconds"),
                ({"run": {"cases": [case(attempts=["PASS", 3])]}}, "run.cases[0].attempts[1]"),
                ({"run": {"cases": [case(metrics={"m": 5})]}}, "run.cases[0].metrics.m"),
                ({"run": {"cases": "abc"}}, "run.cases: expected a list"),
                ({"run": {"cases": [{"suite": "S", "name": "A"}]}}, "run.cases[0]: no 'target'"),
                ({"info": {"exit_code": "3"}, "run": {"cases": []}}, "info.exit_code"),
                ({"comparison": {"x": 1}, "run": {"cases": []}}, "comparison.x"),
                ([1], "expected a JSON object")]:
            self.assertIn(needle, validate.results_problem(doc) or "", doc)

    def test_what_the_model_refused_is_refused_here_too(self):
        # The one shape check: model.read_results and qualify's baseline both read through it.
        for doc, needle in [
                ({"run": {"cases": [case(target="suites/a:b")]}}, "run.cases[0].target: expected a label"),
                ({"run": {"cases": [case(metrics={"m": {"value": "fast"}})]}}, "run.cases[0].metrics.m.value"),
                ({"run": {"cases": [case(properties={"p": [1]})]}}, "run.cases[0].properties.p"),
                ({"info": {"retries": "2"}, "run": {"cases": []}}, "info.retries"),
                ({"info": {"verdict": None}, "run": {"cases": []}}, "info.verdict"),
                ({"info": {"bundle": {"commit": 5}}, "run": {"cases": []}}, "info.bundle.commit"),
                ({"cases": [case(target=5)]}, "(top level).cases[0].target")]:
            self.assertIn(needle, validate.results_problem(doc) or "", doc)
        self.assertIsNone(validate.results_problem({"run": {"cases": [case(metrics={"m": {"value": "nan"}})]}}))


class SpecialFilesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def test_dev_zero_a_link_to_it_and_a_fifo_are_refused_unread(self):
        link = os.path.join(self.tmp, "zero.json")
        os.symlink("/dev/zero", link)
        fifo = os.path.join(self.tmp, "fifo.json")
        os.mkfifo(fifo)
        for path, kind in (("/dev/zero", "character device"), (link, "character device"),
                           (fifo, "FIFO"), (self.tmp, "folder")):
            done = []
            # A reader that opened the FIFO would block forever: run it where a hang is seen.
            t = threading.Thread(target=lambda: done.append(self._refusal(path)), daemon=True)
            t.start()
            t.join(10)
            self.assertTrue(done, f"{path}: the reader blocked")
            self.assertIn(path, done[0])
            self.assertIn(kind, done[0])

    def _refusal(self, path):
        try:
            validate.read_json_file(path)
        except validate.InputError as e:
            return str(e)
        return "not refused"

    def test_a_regular_file_is_read_and_bad_json_named(self):
        good = os.path.join(self.tmp, "good.json")
        with open(good, "w") as f:
            json.dump({"a": 1}, f)
        self.assertEqual(validate.read_json_file(good), {"a": 1})
        bad = os.path.join(self.tmp, "bad.json")
        with open(bad, "w") as f:
            f.write("{nope")
        with self.assertRaisesRegex(validate.InputError, "bad.json: not JSON"):
            validate.read_json_file(bad)
        with self.assertRaisesRegex(validate.InputError, "larger than"):
            validate.read_json_file(good, max_bytes=2)


if __name__ == "__main__":
    unittest.main()
