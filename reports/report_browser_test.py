"""The report in headless Chromium at 1440x900: the first screen of a regression run, 10,000
cases, URL state, the WCAG AA contrast of every status colour (computed from the CSS), and the
screenshot tool. Re-executes itself under /usr/bin/python3 (Debian's, with python3-jinja2) when
this interpreter lacks jinja2, as report_test does."""

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
if __name__ == "__main__":
    from reports import debian_python  # noqa: E402
    debian_python.reexec_if_missing("jinja2", __file__, ROOT)

from reports import compare as cmp  # noqa: E402
from reports import htmlreport  # noqa: E402
from reports import screenshot  # noqa: E402
from reports import testsupport  # noqa: E402


def luminance(hex_colour):
    h = hex_colour.lstrip("#")
    if len(h) == 3:
        h = "".join(ch * 2 for ch in h)
    def lin(c):
        c = int(c, 16) / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(h[i:i + 2]) for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b):
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        raise unittest.SkipTest("chromium not found") if os.environ.get("PAGELOCK_BROWSER_TEST") == "0" \
            else AssertionError("chromium not found: install Debian's chromium (tools/install_deps.sh does)")
    return exe


def open_page(path, hash_="#selftest", size="1440,900", screenshot=None):
    """Loads the page; returns (selftest JSON, console lines, wall seconds)."""
    exe = chromium()
    tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
             "--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp}/profile", f"--window-size={size}"]
    start = time.monotonic()
    dom = subprocess.run([exe, *flags, "--dump-dom", f"file://{path}{hash_}"], capture_output=True, text=True,
                         timeout=180)
    wall = time.monotonic() - start
    if screenshot:
        subprocess.run([exe, *flags, f"--screenshot={screenshot}", f"file://{path}"], capture_output=True,
                       timeout=180)
    console = [l for l in dom.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
    m = re.search(r'<pre id="selftest">(.*?)</pre>', dom.stdout, re.S)
    if m is None:
        raise AssertionError("the report's self-test did not run:\n" + dom.stdout[-2000:] + dom.stderr[-2000:])
    text = m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return json.loads(text), console, wall


class ContrastTest(unittest.TestCase):
    def test_every_status_colour_meets_wcag_aa_against_its_white_text(self):
        css = htmlreport.css()
        self.assertIn(".st{color:#fff;", css)
        rules = dict(re.findall(r"\.st-(\w+)\{background:(#[0-9a-fA-F]{3,6})\}", css))
        self.assertEqual(set(rules) - {"other"}, set(htmlreport.STATUS_COLORS))
        for status, colour in rules.items():
            self.assertGreaterEqual(contrast(colour, "#ffffff"), 4.5, f"{status} {colour}")

    def test_verdict_pills_and_small_text_meet_wcag_aa(self):
        for code, (text, colour, _) in cmp.EXIT_CODES.items():
            self.assertGreaterEqual(contrast(colour, "#ffffff"), 4.5, f"verdict {text} {colour}")
        for colour in re.findall(r"\.small\{color:(#[0-9a-fA-F]{3,6})", htmlreport.css()):
            self.assertGreaterEqual(contrast(colour, "#ffffff"), 4.5)

    def test_the_contrast_function_is_right(self):
        self.assertAlmostEqual(contrast("#000000", "#ffffff"), 21.0, places=3)
        self.assertLess(contrast("#f9a825", "#ffffff"), 2.1)  # the old FLAKE yellow: 1.9:1


class FirstScreenTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.out = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", self.tmp)

    def write(self, page, name="index.html"):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
        return path

    def test_regression_rule_message_and_replay_are_on_the_first_screen(self):
        run, comp, base = testsupport.morning(extra_passes=40)
        self.assertEqual(comp.exit_code, cmp.EXIT_REGRESSION)
        info = {"run_key": "k", "tier": "full", "seed": "7", "command": "tools/qualify"}
        page = self.write(htmlreport.render_qualification(run, info, comp, base, {}))
        seen, console, _ = open_page(page, screenshot=os.path.join(self.out, "first_screen.png"))
        self.assertEqual(console, [])
        first = seen["first_change"]
        self.assertIsNotNone(first, "no change row on the page")
        self.assertIn("R14,R51", first["rule"]["text"])
        self.assertIn("registering a fresh range must succeed", first["msg"]["text"])
        self.assertIn("cudaErrorHostMemoryAlreadyRegistered", first["msg"]["text"])
        self.assertNotIn("Expected equality", first["msg"]["text"])
        self.assertIn("--gtest_filter='HostRegisterTest.RegisteringFreshRangeSucceeds'", first["replay"]["text"])
        for what in ("rule", "msg", "replay"):
            self.assertLessEqual(first[what]["bottom"], 900, f"{what} below the first screen: {first}")
        self.assertLessEqual(seen["scroll_width"], seen["inner_width"], "the page scrolls sideways")
        self.assertTrue(seen["anchor"]["found"] and seen["anchor"]["expanded"], seen["anchor"])
        self.assertTrue(seen["pressed_ok"], "aria-pressed not set on a pressed toggle")
        self.assertEqual(seen["filters"]["REGRESSION"], 1)
        self.assertEqual(seen["filters"]["FLAKE"], 1)
        self.assertEqual(seen["filters"]["EXPECTED_FAIL"], 1)
        self.assertIn("q=", seen["search"]["hash"])  # search state is in the URL

    def test_ten_thousand_cases_load_in_under_a_second_without_sideways_scrolling(self):
        run = testsupport.big(10000)
        start = time.monotonic()
        page = self.write(htmlreport.render(run, title="10k"), "big.html")
        render_s = time.monotonic() - start
        tiny = self.write(htmlreport.render(testsupport.big(10), title="10"), "tiny.html")
        # Budget: 1 s on an idle machine. The CI box is two cores shared by many jobs, where an
        # empty report alone can take 0.8 s; a 10-case page loaded just before measures that, and
        # the budget grows by its slowness over an idle machine's 150 ms. (Issue 8 measured the
        # page this replaced at 6 s for 10,000 cases.)
        tries = []
        for _ in range(3):  # best of three
            base, _, _ = open_page(tiny)
            seen, console, wall = open_page(page)
            budget = 1000.0 * max(1.0, base["ready_ms"] / 150.0)
            tries.append((round(seen["ready_ms"]), round(base["ready_ms"]), round(budget)))
            if seen["ready_ms"] < budget:
                break
        self.assertEqual(console, [])
        self.assertEqual(seen["total"], 10000)
        self.assertEqual(seen["filters"]["FAIL"], 20)
        self.assertLessEqual(seen["rows_in_dom"], htmlreport.PAGE_SIZE)
        self.assertLessEqual(seen["scroll_width"], seen["inner_width"], "the page scrolls sideways")
        self.assertTrue(any(t[0] < t[2] for t in tries),
                        f"10k page not ready within budget: (ready, 10-case page, budget) ms = {tries}")
        self.assertEqual(seen["matrix_cells"], 10000)
        self.assertTrue(seen["anchor"]["found"], "the last case's link does not open it")
        print(f"10k cases: render {render_s:.2f} s, (ready, 10-case page, budget) ms {tries}, "
              f"chromium wall {wall:.1f} s, {os.path.getsize(page) // 1024} KiB")


class ScreenshotToolTest(unittest.TestCase):
    def test_writes_a_1440x900_png_of_the_first_screen_and_refuses_bad_input(self):
        chromium()
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        run, comp, base = testsupport.morning()
        page = os.path.join(tmp, "index.html")
        with open(page, "w", encoding="utf-8") as f:
            f.write(htmlreport.render_qualification(run, {"run_key": "k", "tier": "full"}, comp, base, {}))
        png = os.path.join(tmp, "shots", "first-screen.png")
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(screenshot.main([page, png]), 0)
        with open(png, "rb") as f:
            head = f.read(24)
        self.assertEqual(head[:8], b"\x89PNG\r\n\x1a\n")
        self.assertEqual((int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")), (1440, 900))
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(screenshot.main([os.path.join(tmp, "absent.html"), png]), 2)
            self.assertEqual(screenshot.main([page, png, "--size", "wide"]), 2)
        self.assertIn("no such page", err.getvalue())


if __name__ == "__main__":
    unittest.main()
