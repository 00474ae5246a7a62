"""The lints' tests over a small source tree of their own: `self.root`, removed afterwards, and
`write(rel, text)` to add a file to it."""

import os
import shutil
import tempfile
import unittest


class SourceTreeCase(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, self.root)

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
