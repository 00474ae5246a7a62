"""The report in headless Chromium at 1440x900: the first screen of a regression run, 10,000
cases, URL state, the WCAG AA contrast of every status colour (computed from the CSS), and the
screenshot tool. Re-executes itself under a Python that has jinja2 when this interpreter lacks it
(reports/interpreter.py), as report_test does."""

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

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "reports.report_browser_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

if __name__ == "__main__":
    from reports import interpreter
    interpreter.reexec_if_missing("jinja2", __file__, ROOT)

from reports import compare as cmp
from reports import htmlreport
from reports import screenshot
from reports import testsupport


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
        self.assertEqual(first["rule"]["text"], "R14")  # the first rule id; its sentence is the title
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
        # the budget grows by its slowness over an idle machine's 150 ms. (The page this replaced
        # took 6 s for 10,000 cases.)
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


def one_fault_run(regressions=31, causes=1, passes=40, lost_coverage=False):
    """A qualification run against an all-PASS baseline: `regressions` failing cases spread over
    suites, from `causes` different faults (rule and message); within one cause the messages
    differ only in their numbers, addresses and sizes, as one injected fault's do."""
    from reports import model
    cases = [testsupport.case(f"Passes{i}", "PASS") for i in range(passes)]
    for i in range(regressions):
        k = i % causes
        rule = "R76" if k == 0 else f"R{10 + k}"
        msg = (f"suites/streams/copies_test.cc:{100 + i}\nExpected equality of these values:\n  bad\n"
               f"    Which is: {i + 1}\n  0u\n    Which is: 0\npageable: the timed D2H copies did not deliver "
               f"every byte of {4096 * (i + 1)} bytes at 0x7f{i:04x}a000" if k == 0 else
               f"x.cc:{i}\ncause number {'ABCDEFGHIJKLMNOP'[k]} broke in its own way")
        cases.append(testsupport.case(f"Copy{i}/Flags{i % 4}", "FAIL", msg, rules=rule, attempts="FAIL FAIL",
                                      suite=f"Suite{i % 5}", target=f"//suites/s{i % 3}:s{i % 3}_test"))
    if lost_coverage:  # COVERAGE_LOST over NOT_SUPPORTED: the widest badges
        cases.append(testsupport.case("LongBadge", "NOT_SUPPORTED", rules="R04"))
    run = model.Run(dict(testsupport.FP, cuda_runtime_version="13000"), cases)
    base = model.Run(dict(testsupport.FP), [testsupport.case(c.name, "PASS", suite=c.suite, target=c.target)
                                            for c in cases])
    return run, cmp.compare(run, None, base), base


class CausesTest(unittest.TestCase):
    """One cause a line."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.out = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", self.tmp)

    def page(self, run, comp, base, name, label="injected fault dtoh_async_corrupts"):
        info = {"run_key": "20261130-143955_vm_nvidia-h200_580.159.04", "tier": "full", "seed": "7",
                "label": label, "started_at": "2026-11-30T14:39:55+00:00", "sku": "nvidia-h200"}
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(htmlreport.render_qualification(run, info, comp, base, {}))
        return path

    def test_thirty_one_regressions_from_one_fault_are_one_line_on_the_first_screen(self):
        run, comp, base = one_fault_run(31, causes=1)
        self.assertEqual(comp.summary.get("REGRESSION"), 31)
        page = self.page(run, comp, base, "one-fault.html")
        seen, console, _ = open_page(page, screenshot=os.path.join(self.out, "one-fault.png"))
        self.assertEqual(console, [])
        groups = seen["groups"]
        self.assertEqual(len(groups), 1, groups)
        g = groups[0]
        self.assertEqual((g["kind"], g["count"]), ("REGRESSION", 31))
        rules = htmlreport.rules_table()
        self.assertEqual(g["rules"], [f"R76: {rules['R76'][1]}"])  # the rule's sentence on hover
        self.assertIn("pageable: the timed D2H copies did not deliver every byte", g["msg"])
        self.assertIn("bad (= 1) != 0u (= 0)", g["msg"])  # the assertion, with the first case's values
        self.assertLessEqual(g["bottom"], 900, f"the cause is below the first screen: {g}")
        self.assertEqual(seen["overlaps"], [])
        with open(page, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("id='rule-R76'", text)  # the Rules section the id links to
        title = re.search(r"<title>(.*?)</title>", text).group(1)
        for part in ("REGRESSIONS", "2026-11-30", "lab1", "nvidia-h200"):
            self.assertIn(part, title)
        h1 = re.search(r"<h1>(.*?)</h1>", text).group(1)
        for part in ("injected fault dtoh_async_corrupts", "NVIDIA H200", "580.159.04", "CUDA runtime 13.0"):
            self.assertIn(part, h1)

    def test_ten_causes_fit_on_a_1440x900_screen_and_badges_stay_in_their_cells(self):
        run, comp, base = one_fault_run(36, causes=12, lost_coverage=True)
        page = self.page(run, comp, base, "twelve-causes.html")
        seen, console, _ = open_page(page, screenshot=os.path.join(self.out, "twelve-causes.png"))
        self.assertEqual(console, [])
        self.assertEqual(len(seen["groups"]), 13)  # 12 regressions' causes and the coverage loss
        visible = [g for g in seen["groups"] if g["bottom"] <= 900]
        self.assertGreaterEqual(len(visible), 10, [round(g["bottom"]) for g in seen["groups"]])
        self.assertEqual(seen["overlaps"], [])
        self.assertLessEqual(seen["scroll_width"], seen["inner_width"], "the page scrolls sideways")

    def test_the_widest_badges_fit_their_cells_at_1280x720(self):
        from reports import model
        run, comp, base = one_fault_run(6, causes=3, lost_coverage=True)
        failing = [c.id for c in run.cases if c.status.is_fail]
        comp.status[failing[0]] = model.Change.UNEXPECTED_PASS
        comp.status[failing[1]] = model.Change.KNOWN_COVERAGE_LOSS
        page = self.page(run, comp, base, "wide-badges.html")
        seen, console, _ = open_page(page, size="1280,720")
        self.assertEqual(console, [])
        self.assertEqual(seen["overlaps"], [], "a badge is wider than its cell (clipped or covering its neighbour)")

    def test_a_long_message_is_cut_at_a_word_and_the_whole_text_is_one_click_away(self):
        run, comp, base = one_fault_run(1, causes=1)
        reg = next(c for c in run.cases if c.status.is_fail)
        reg.message = "x.cc:1\n" + " ".join(["problems: worker 1: 1 bytes wrong after a round trip"] * 12)
        html = htmlreport.render_qualification(run, {"run_key": "k"}, comp, base, {})
        cut = re.search(r"<details class='whole'><summary><span class='msg'>(.*?)</span></summary>"
                        r"<div class='msgfull'>(.*?)</div>", html)
        self.assertIsNotNone(cut, "no folded whole message")
        shown, whole = cut.group(1), cut.group(2)
        self.assertTrue(shown.endswith("…"), shown)
        self.assertTrue(whole.startswith(shown[:-1].rstrip()), (shown, whole))
        self.assertIn(whole[len(shown) - 1:len(shown)], (" ", ""), "cut inside a word")
        self.assertIn("round trip problems: worker 1: 1 bytes wrong after a round trip", whole)


# The boxes a reader needs, measured in the page: the first screen (the verdict, the first cause
# and its message), the first night's table of cases not run, the case list's first row.
MEASURE = """(() => {
  const box = e => { if (!e) return null; const r = e.getBoundingClientRect();
    return {w: Math.round(r.width), left: Math.round(r.left), top: Math.round(r.top + scrollY),
            bottom: Math.round(r.bottom + scrollY)}; };
  const q = s => document.querySelector(s);
  const widths = s => [].map.call(document.querySelectorAll(s), e => Math.round(e.getBoundingClientRect().width))
                        .filter(w => w > 0);
  return {inner_width: innerWidth, inner_height: innerHeight,
          scroll_width: document.documentElement.scrollWidth, scroll_height: document.documentElement.scrollHeight,
          verdict: box(q('.verdict')), cause: box(q('#changes tr.grp td.cause')), msg: box(q('#changes tr.grp .msg')),
          causes: widths('#changes tr.grp td.cause'), first_night: box(q('#first-night')),
          not_run_reasons: widths('#first-night .notrun td:last-child'),
          case_ids: widths('tr.case td.mono'), case_texts: widths('tr.case td:last-child')};
})()"""


def layout(page, width, height, mobile):
    """MEASURE of the page loaded at width x height (a phone: mobile emulation, as Chromium's
    device mode), its script run and two frames painted; and a PNG of the first screen."""
    exe = chromium()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as tmp:
        tools = screenshot.DevTools(exe, screenshot.flags(os.path.join(tmp, "profile"), f"{width},{height}")
                                    + ["about:blank"], 180)
        try:
            target = tools.send("Target.createTarget", url="about:blank")["targetId"]
            session = tools.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            tools.send("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                       deviceScaleFactor=1, mobile=mobile)
            tools.send("Page.enable", session)
            tools.send("Page.navigate", session, url=screenshot.page_url(page))
            tools.wait_event("Page.loadEventFired")
            tools.send("Runtime.evaluate", session, awaitPromise=True, expression=(
                "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(1))))"))
            seen = tools.send("Runtime.evaluate", session, returnByValue=True, expression=MEASURE)
            png = tools.send("Page.captureScreenshot", session, format="png")["data"]
        finally:
            tools.close()
    import base64
    return seen["result"]["value"], base64.b64decode(png)


class NarrowScreenTest(unittest.TestCase):
    """The regression page and a first night read on a phone (390x844, mobile emulation) and on a
    desktop (1440x900): the ux review found the cause column 48 px wide at 390 (one or two
    letters a line) behind a fixed 17em change column, and a 462,553 px tall page."""

    SIZES = {"phone": (390, 844, True), "desktop": (1440, 900, False)}

    @classmethod
    def setUpClass(cls):
        from reports import first_night
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.out = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", cls.tmp)
        run, comp, base = one_fault_run(31, causes=12)
        info = {"run_key": "20261130-143955_vm_nvidia-h200_580.159.04", "tier": "full",
                "label": "injected fault dtoh_async_corrupts", "started_at": "2026-11-30T14:39:55+00:00",
                "sku": "nvidia-h200"}
        pages_ = {"regression": htmlreport.render_qualification(run, info, comp, base, {})}
        for i, reason in enumerate(["mmap(hugetlb) failed: Cannot allocate memory (/proc/meminfo HugePages_Free=0?)",
                                    "cudaGetDeviceCount=1 (need 2)",
                                    "CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES=0 (need 1) on device 0"] * 3):
            c = testsupport.case(f"NotRun{i}", "NOT_SUPPORTED")
            c.reason = reason
            run.cases.append(c)
        comp = cmp.compare(run, None, None)  # no baseline
        night = dict(info, sku="nvidia-h100-80gb-hbm3", label="first night",
                     first_night=first_night.context(run, comp, "nvidia-h100-80gb-hbm3", "", "runs/x"))
        pages_["first-night"] = htmlreport.render_qualification(run, night, comp, None, {})
        cls.seen = {}
        for page, html in pages_.items():
            path = os.path.join(cls.tmp, page + ".html")
            with open(path, "w", encoding="utf-8") as f:
                f.write(html)
            for size, (w, h, mobile) in cls.SIZES.items():
                cls.seen[page, size], png = layout(path, w, h, mobile)
                with open(os.path.join(cls.out, f"{page}-{w}x{h}.png"), "wb") as f:
                    f.write(png)

    def test_nothing_scrolls_sideways(self):
        for key, seen in self.seen.items():
            self.assertLessEqual(seen["scroll_width"], seen["inner_width"], key)

    def test_the_first_screen_has_the_verdict_and_the_first_cause(self):
        for key, seen in self.seen.items():
            self.assertLessEqual(seen["verdict"]["bottom"], seen["inner_height"], key)
        for size in self.SIZES:  # a first night puts its own section first
            seen = self.seen["regression", size]
            self.assertLessEqual(seen["msg"]["bottom"], seen["inner_height"], (size, seen["msg"]))
            night = self.seen["first-night", size]
            self.assertLessEqual(night["first_night"]["top"] + 60, night["inner_height"], (size, night["first_night"]))

    def test_causes_read_across_the_screen(self):
        phone, desktop = self.seen["regression", "phone"], self.seen["regression", "desktop"]
        # On a phone each cause takes the width of the screen (less the page's margins)...
        self.assertGreaterEqual(min(phone["causes"]), 0.85 * phone["inner_width"], phone["causes"])
        self.assertGreaterEqual(phone["msg"]["w"], 0.8 * phone["inner_width"], phone["msg"])
        # ...and on a desktop it keeps its table: badge, count and cause side by side.
        self.assertGreaterEqual(min(desktop["causes"]), 900, desktop["causes"])
        self.assertGreater(desktop["cause"]["left"], 300)
        self.assertLess(phone["scroll_height"], 25 * phone["inner_height"], "the phone page is far too tall")

    def test_the_first_night_and_the_cases_read_at_both_widths(self):
        for size in self.SIZES:
            for page in ("regression", "first-night"):
                seen = self.seen[page, size]
                least = 0.8 * seen["inner_width"] if size == "phone" else 500
                self.assertTrue(seen["case_ids"] and seen["case_texts"], (page, size))
                self.assertGreaterEqual(min(seen["case_texts"]), least, (page, size, seen["case_texts"]))
                self.assertGreaterEqual(min(seen["case_ids"]), least if size == "phone" else 400,
                                        (page, size, seen["case_ids"]))
            seen = self.seen["first-night", size]
            self.assertLessEqual(seen["first_night"]["w"], seen["inner_width"], size)
            self.assertTrue(seen["not_run_reasons"], size)
            least = 0.8 * seen["inner_width"] if size == "phone" else 500
            self.assertGreaterEqual(min(seen["not_run_reasons"]), least, (size, seen["not_run_reasons"]))


def distinct_bytes(png):
    """How many different byte values the PNG's pixel data has (a blank page has very few)."""
    import zlib
    with open(png, "rb") as f:
        data = f.read()
    i, idat = 8, b""
    while i < len(data):
        n = int.from_bytes(data[i:i + 4], "big")
        if data[i + 4:i + 8] == b"IDAT":
            idat += data[i + 8:i + 8 + n]
        i += 12 + n
    return len(set(zlib.decompress(idat)))


class LazyCasesTest(unittest.TestCase):
    """Above htmlreport.EAGER_CASES the page embeds its first page apart from every case and
    parses them all only when asked (a million cases: ready in about 1 s instead of 8)."""

    def test_a_lazy_page_shows_its_first_page_and_filters_searches_and_links_over_every_case(self):
        from unittest import mock
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        run = testsupport.big(1000)
        with mock.patch.object(htmlreport, "EAGER_CASES", 500):
            page = os.path.join(tmp, "lazy.html")
            with open(page, "w", encoding="utf-8") as f:
                f.write(htmlreport.render(run, title="lazy"))
        with open(page, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("id='case-data-all'", text)
        self.assertIn("1,000 cases: the first page is shown at once", text)
        seen, console, _ = open_page(page)
        self.assertEqual(console, [])
        self.assertTrue(seen["lazy"])
        self.assertEqual(seen["total"], 1000)
        self.assertEqual(seen["filters"]["FAIL"], 2)  # every case, not the first page's
        self.assertEqual(seen["search"]["shown"], 1)
        self.assertEqual(seen["after_clear"], 1000)
        self.assertTrue(seen["anchor"]["found"] and seen["anchor"]["expanded"], seen["anchor"])
        self.assertEqual(seen["matrix_cells"], 1000)


class MatrixCapTest(unittest.TestCase):
    """A family's matrix shows at most htmlreport.MATRIX_ROWS tests and MATRIX_COLUMNS parameters
    (a fuzzing family of a million cases never rendered and hung the page); the note under the
    table says how many tests, parameters and cases are left out, and its link searches the case
    list for the family."""

    def test_a_family_above_the_caps_shows_the_caps_and_says_what_is_left_out(self):
        rows, cols = 500, 200  # htmlreport.MATRIX_ROWS, MATRIX_COLUMNS
        from reports import model
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        n_tests = rows + 700  # 1,200 tests x 2 parameters; the last test fails: its row comes first
        cases = [testsupport.case(f"T{i:04d}/p{j}", "FAIL" if (i, j) == (n_tests - 1, 1) else "PASS",
                                  "x.cc:1\nboom" if (i, j) == (n_tests - 1, 1) else "", suite="BigTest",
                                  target="//suites/big:big_test") for i in range(n_tests) for j in range(2)]
        cases += [testsupport.case(f"Run/{k}", "PASS", suite="Seed/FuzzTest", target="//suites/fuzz:fuzz_test")
                  for k in range(cols + 100)]  # one test x 300 parameters
        cases += [testsupport.case(f"Small/p{j}", "PASS") for j in range(3)]  # under the caps: whole
        page = os.path.join(tmp, "capped.html")
        with open(page, "w", encoding="utf-8") as f:
            f.write(htmlreport.render(model.Run(dict(testsupport.FP), cases), title="capped"))
        seen, console, _ = open_page(page)
        self.assertEqual(console, [])
        self.assertEqual(seen["matrix_cells"], rows * 2 + cols + 3)  # the cells shown
        mx = {m["family"]: m for m in seen["matrix"]}
        big, fuzz, small = mx["big"], mx["fuzz"], mx["hostregister"]
        self.assertEqual((big["rows"], big["columns"], big["cells"]), (rows, 2, rows * 2))
        self.assertEqual(big["first_row"], "BigTest.T1199")  # the failing test's row is kept
        self.assertEqual(big["note"], "This table shows 500 of 1,200 tests; 1,400 cases are left out "
                                      "(the rows are in the order of their most serious case). The case list "
                                      "below has every case: search it for suites/big:")
        self.assertEqual(big["links"], ["#q=suites%2Fbig%3A"])
        self.assertEqual((fuzz["rows"], fuzz["columns"], fuzz["cells"]), (1, cols, cols))
        self.assertEqual(fuzz["note"], "This table shows 200 of 300 parameters; 100 cases are left out. The case "
                                       "list below has every case: search it for suites/fuzz:")
        self.assertEqual((small["rows"], small["columns"], small["cells"], small["note"]), (1, 3, 3, None))
        # The note's link fills the case list's search: the family's every case, and no other.
        self.assertEqual(seen["matrix_more"], {"query": "suites/big:", "shown": n_tests * 2})
        with open(page, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("big: 1200 tests &times; 2 parameters, 1 failing case; the table shows the first 500 tests<",
                      text)


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
        # A '#case=' link: the page scrolls to the case and highlights it before the capture.
        run_cases = sorted(run.cases, key=lambda c: c.id)
        last = [c for c in run_cases if c.status.is_pass][-1].id
        case_png = os.path.join(tmp, "shots", "case.png")
        with contextlib.redirect_stdout(io.StringIO()) as said:
            self.assertEqual(screenshot.main([page, case_png, "--hash", "#case=" + last, "--size", "1280x400"]), 0)
        self.assertIn("scrolled to y=", said.getvalue())
        self.assertGreater(screenshot.LAST_STATE["scrollY"], 0, screenshot.LAST_STATE)
        self.assertEqual(screenshot.LAST_STATE["highlighted"], 1)
        self.assertGreater(distinct_bytes(case_png), 8, "the '#case=' screenshot is blank")
        with open(case_png, "rb") as f:
            self.assertNotEqual(f.read(), open(png, "rb").read())
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(screenshot.main([os.path.join(tmp, "absent.html"), png]), 2)
            self.assertEqual(screenshot.main([page, png, "--size", "wide"]), 2)
        self.assertIn("no such page", err.getvalue())


if __name__ == "__main__":
    unittest.main()
