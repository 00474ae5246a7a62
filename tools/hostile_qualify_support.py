"""What the two hostile qualify tests share (tools/hostile_qualify_moments_test.py,
tools/hostile_qualify_inputs_test.py): bundles of tools/testdata/fakegt.py (a scriptable fake
GoogleTest binary, no GPU needed), the processes a run left (by their FAKE_MARK), a TestCase
base that runs qualify in-process and reads its run folders, and a signal sent at one exact
moment of qualify.

Not a test module itself, so HostileNamesInEveryLocale's check reads it as it reads the tools:
its text files are opened with encoding="utf-8"."""

import contextlib
import glob
import io
import json
import os
import shutil
import signal
import sqlite3
import tempfile
import time
import unittest
import uuid
from unittest import mock

from tools import qualify


def repo_root():
    srcdir = os.environ.get("TEST_SRCDIR")
    if srcdir:
        return os.path.join(srcdir, os.environ.get("TEST_WORKSPACE", "pagelock"))
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


ROOT = repo_root()
FAKEGT = os.path.join(ROOT, "tools", "testdata", "fakegt.py")
FAKE_SUITE = os.path.join(ROOT, "tools", "testdata", "fake_suite.py")
SLEEP_UNDER_FAULT = {"cases": ["S.A", {"id": "S.B", "act": ["sleepif:PAGELOCK_FAULT:60"]}]}


def marked(mark):
    """Live processes whose environment holds FAKE_MARK=mark."""
    needle = f"FAKE_MARK={mark}".encode()
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{p}/stat", encoding="utf-8") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in env and state != "Z":
            found.append((int(p), cmd))
    return found


def make_bundle(dest, targets, timeout_s=20, with_tools=False):
    """A bundle of fakegt.py copies, one per {name: spec}, labels //fake:<name>. with_tools: the
    runner and reports/ inside (as tools/bundle.py ships them), a stand-in shim file and a
    one-fault catalogue, enough for the mutation tool to start its runs."""
    os.makedirs(os.path.join(dest, "bin"))
    entries = []
    for name, spec in targets.items():
        path = os.path.join("bin", name)
        shutil.copy(FAKEGT, os.path.join(dest, path))
        os.chmod(os.path.join(dest, path), 0o755)
        with open(os.path.join(dest, path + ".spec.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f)
        entries.append({"label": f"//fake:{name}", "path": path, "timeout_s": timeout_s,
                        "tags": ["gpu", "tier_bat"]})
    with open(os.path.join(dest, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump({"info": {"commit": "fake"}, "targets": entries}, f)
    if with_tools:
        for pkg in ("tools/runner", "reports"):
            os.makedirs(os.path.join(dest, pkg))
            for n in os.listdir(os.path.join(ROOT, pkg)):
                if (n.endswith(".py") and not n.endswith("_test.py")) or n == "settings.tsv":
                    shutil.copy(os.path.join(ROOT, pkg, n), os.path.join(dest, pkg, n))
        open(os.path.join(dest, "tools", "__init__.py"), "w", encoding="utf-8").close()
        os.makedirs(os.path.join(dest, "faults"))
        # The fakes never load libcuda: any file stands in for the shim.
        with open(os.path.join(dest, "faults", "libcuda.so.1"), "w", encoding="utf-8") as f:
            f.write("not a library\n")
        with open(os.path.join(dest, "faults", "catalogue.tsv"), "w", encoding="utf-8") as f:
            f.write("name\trule\tfamily\tkind\tentries\tdescription\n"
                    "htod_corrupts_last_byte\tR76\thostalloc\tdata\t\ta wrong last byte\n")
    return dest


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.out = os.path.join(self.tmp, "runs")
        self.exp = os.path.join(self.tmp, "expectations")
        os.makedirs(self.exp)
        self.mark = uuid.uuid4().hex
        self.saved_env = dict(os.environ)
        os.environ["FAKE_MARK"] = self.mark

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved_env)
        for pid, _ in marked(self.mark):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def bundle(self, targets=None, name="bundle", **kw):
        return make_bundle(os.path.join(self.tmp, name), targets or {"x": {"cases": ["S.A", "S.B"]}}, **kw)

    def qualify(self, bundle, *extra, out=None):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = qualify.main(["--bundle", bundle, "--out", out or self.out, "--expectations", self.exp,
                               "--tier", "bat", "--retries", "0", *extra])
        self.output = buf.getvalue()
        return rc

    def run_dirs(self, out=None):
        return sorted(d for d in glob.glob(os.path.join(out or self.out, "2*")) if os.path.isdir(d))

    def results(self, run_dir=None):
        run_dir = run_dir or self.run_dirs()[-1]
        with open(os.path.join(run_dir, "results.json"), encoding="utf-8") as f:
            return json.load(f)

    def assert_history_links_only_pages_that_exist(self):
        path = os.path.join(self.out, "history.sqlite")
        if not os.path.exists(path):
            return
        db = sqlite3.connect(path)
        rows = db.execute("SELECT run_key, report FROM runs").fetchall()
        db.close()
        for key, report in rows:
            self.assertTrue(report is None or os.path.exists(report),
                            f"history row {key} links {report}, which does not exist")

    def assert_nothing_left(self):
        deadline = time.monotonic() + 5
        while marked(self.mark) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(marked(self.mark), [], "processes of the run were left behind")


def signal_self_during(target, attribute, sig=signal.SIGTERM, every_call=False):
    """Patches target.attribute so that calling it first sends sig to this process (the handler
    runs inside the call): a signal at exactly that moment of qualify."""
    original = getattr(target, attribute)
    sent = []

    def wrapper(*args, **kwargs):
        if every_call or not sent:
            sent.append(1)
            os.kill(os.getpid(), sig)
        return original(*args, **kwargs)
    return mock.patch.object(target, attribute, wrapper)
