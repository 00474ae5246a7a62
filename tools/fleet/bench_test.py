"""The bench's own checks, without a database: its default size follows today's full tier, and a
--cases too small for its scenarios is refused instead of quietly dropping them."""

import contextlib
import io
import json
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.fleet.bench_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from tools.fleet import bench

BASELINE = os.path.join(ROOT, "baselines", "nvidia-h200", "results.json")


class BenchSizeTest(unittest.TestCase):
    def test_the_default_case_count_is_within_ten_percent_of_the_full_tier(self):
        # docs/fleet.md's load figures are for the bench's default: it must stay the size of a
        # real full-tier run (the review found it at 238 when runs had 751 cases).
        with open(BASELINE) as f:
            data = json.load(f)
        self.assertEqual(data["info"]["tier"], "full")
        real = len(data["run"]["cases"])
        cases = bench._parser().parse_args([]).cases  # --full takes the same default
        self.assertLessEqual(abs(cases - real), real * 0.10, f"bench: {cases} cases, full tier: {real}")

    def test_fewer_cases_than_the_scenarios_use_are_refused(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
            bench.main(["--cases", "500", "--history", "postgresql:///never-opened"])
        self.assertEqual(e.exception.code, 2)
        self.assertIn("--cases 500", err.getvalue())
        self.assertIn("at least 716", err.getvalue())  # the known failures use cases 710-715


class InterpreterTest(unittest.TestCase):
    def test_started_without_psycopg2_it_reexecutes_under_a_python_that_has_it(self):
        # The bench always uses PostgreSQL (its own server without --history); loading the lab
        # opens it in the bench's own process. $PAGELOCK_PYTHON's stand-in psycopg2 cannot connect.
        import shutil
        import subprocess
        import tempfile
        from reports import testsupport
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        env, log = testsupport.python_with_fake_psycopg2(tmp)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "fleet", "bench.py"), "--hosts", "1",
                            "--nights", "1", "--history", "postgresql:///postgres?host=/nonexistent",
                            "--html", os.path.join(tmp, "b.html")],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("cannot connect: fake psycopg2 of the test", p.stderr)


if __name__ == "__main__":
    unittest.main()
