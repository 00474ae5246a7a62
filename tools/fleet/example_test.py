"""The committed fleet example is what docs/fleet.md's two commands make: importing the two
real H200 runs of reports/testdata/runs/ and running `fleet report` gives examples/fleet/ again,
byte for byte apart from the generation time and the query timings."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNS = ("h200-reference", "h200-second")
RUNS_DIR = os.path.join("reports", "testdata", "runs")
VOLATILE = re.compile(r"generated \S+ in [0-9.]+ s")


def without_timings(doc):
    doc = dict(doc)
    doc.pop("timings_s", None)
    doc.pop("generated_at", None)
    return doc


class CommittedFleetExampleTest(unittest.TestCase):
    def test_the_documented_commands_reproduce_the_committed_example(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        # The same shape as the checkout: examples/fleet and reports/testdata/runs under one
        # root, so the relative paths come out as committed.
        for run in RUNS:
            os.makedirs(os.path.join(tmp, RUNS_DIR, run))
            shutil.copy(os.path.join(ROOT, RUNS_DIR, run, "results.json"), os.path.join(tmp, RUNS_DIR, run))
        os.makedirs(os.path.join(tmp, "examples", "fleet"))
        db = os.path.join(tmp, "fleet-example.sqlite")
        env = dict(os.environ, PYTHONPATH=ROOT)
        subprocess.run([sys.executable, os.path.join(ROOT, "reports", "history.py"), "--db", db, "import",
                        *[os.path.join(RUNS_DIR, r) for r in RUNS]],
                       cwd=tmp, env=env, check=True, capture_output=True)
        rc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "fleet", "fleet.py"), "report",
                             "--history", db, "--night", "2026-11-30",
                             "--html", "examples/fleet/index.html", "--json", "examples/fleet/fleet.json"],
                            cwd=tmp, env=env, capture_output=True, text=True).returncode
        self.assertEqual(rc, 3, "the example's host regressed: fleet report exits 3")
        for name in ("index.html", "fleet.json"):
            with open(os.path.join(ROOT, "examples", "fleet", name)) as f:
                want = f.read()
            with open(os.path.join(tmp, "examples", "fleet", name)) as f:
                got = f.read()
            if name.endswith(".json"):
                self.assertEqual(without_timings(json.loads(got)), without_timings(json.loads(want)))
            else:
                self.assertEqual(VOLATILE.sub("", got), VOLATILE.sub("", want))


if __name__ == "__main__":
    unittest.main()
