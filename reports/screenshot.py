#!/usr/bin/env python3
"""A PNG of the first screen of a report page, taken by headless Chromium (Debian's chromium),
for the committed screenshots beside the example runs.

  python3 reports/screenshot.py RUN_DIR/index.html OUT.png [--size 1440x900] [--hash '#case=ID']

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe, stdlib only):
the page is loaded with its fragment, the page's script has handled it (a '#case=' link opens
and scrolls to its case), two animation frames have passed, and only then is the viewport
captured. (Chromium's own --screenshot flag shoots before a fragment's scroll: its '#case='
pictures were blank.)

Exit codes: 0 written; 2 bad input (no such page, bad --size, chromium not installed);
1 chromium ran but wrote no PNG (what went wrong is printed).
"""

import argparse
import base64
import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from urllib.parse import quote


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def flags(profile, size):
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
            f"--user-data-dir={profile}", f"--window-size={size}"]


class DevTools:
    """The DevTools protocol over Chromium's pipe: NUL-terminated JSON messages, fd 3 to the
    browser and fd 4 from it."""

    def __init__(self, exe, args, timeout):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # 5..9: above 4, so that the shell's redirections to 3 and 4 never overwrite one of them,
        # and one digit, which is all that sh's redirections take.
        to_chrome_r, from_chrome_w = (self._above_four(fd) for fd in (to_chrome_r, from_chrome_w))
        shell = f'exec "$0" "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} {to_chrome_r}<&- {from_chrome_w}>&-'
        self.proc = subprocess.Popen(["/bin/sh", "-c", shell, exe, *args, "--remote-debugging-pipe"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, pass_fds=(to_chrome_r, from_chrome_w))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.deadline = time.monotonic() + timeout
        self.buf, self.next_id, self.events = b"", 0, []

    @staticmethod
    def _above_four(fd):
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 5)
        os.close(fd)
        if high > 9:
            os.close(high)
            raise OSError("no free file descriptor between 5 and 9 for chromium's DevTools pipe")
        return high

    def send(self, method, session=None, **params):
        """Sends a command and returns its result (raises RuntimeError on a protocol error)."""
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error'].get('message', reply['error'])}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method):
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read())

    def _read(self):
        while b"\0" not in self.buf:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if ready:
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self.buf += chunk
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def close(self):
        try:
            self.send("Browser.close")
        except (OSError, RuntimeError, TimeoutError, ValueError):
            pass
        for fd in (self.to_chrome, self.from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
        if self.proc.stderr:
            self.proc.stderr.close()
        return err


def page_url(page, hash_=""):
    return "file://" + quote(os.path.abspath(page)) + hash_


def screenshot(page, png, size="1440,900", hash_="", exe=None, timeout=180):
    """Writes png; returns (returncode, what went wrong or chromium's output)."""
    exe = exe or chromium()
    width, height = (int(x) for x in size.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        tools = DevTools(exe, flags(os.path.join(tmp, "profile"), size) + ["about:blank"], timeout)
        try:
            target = tools.send("Target.createTarget", url="about:blank")["targetId"]
            session = tools.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            tools.send("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                       deviceScaleFactor=1, mobile=False)
            tools.send("Page.enable", session)
            tools.send("Page.navigate", session, url=page_url(page, hash_))
            tools.wait_event("Page.loadEventFired")
            # The page's script handles the fragment at load; two frames later it is painted.
            tools.send("Runtime.evaluate", session, awaitPromise=True, expression=(
                "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(1))))"))
            state = tools.send("Runtime.evaluate", session, returnByValue=True, expression=(
                "({scrollY: window.scrollY, highlighted: document.querySelectorAll('.hl').length})"))
            data = tools.send("Page.captureScreenshot", session, format="png")["data"]
        except (OSError, RuntimeError, TimeoutError, ValueError, KeyError) as e:
            err = tools.close()
            return 1, f"{e}\n{err}"
        err = tools.close()
    with open(png, "wb") as f:
        f.write(base64.b64decode(data))
    LAST_STATE.clear()
    LAST_STATE.update(state.get("result", {}).get("value") or {})
    return 0, err


LAST_STATE = {}  # what the page showed when it was captured: scrollY, highlighted (rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("page", help="the report's index.html")
    ap.add_argument("png", help="where the PNG goes")
    ap.add_argument("--size", default="1440x900", help="viewport WIDTHxHEIGHT (default 1440x900)")
    ap.add_argument("--hash", default="", help="URL fragment, e.g. '#case=ID' or '#s=FAIL'")
    args = ap.parse_args(argv)
    m = re.fullmatch(r"(\d+)[x,](\d+)", args.size)
    if not m:
        print(f"screenshot: --size {args.size!r}: want WIDTHxHEIGHT, e.g. 1440x900", file=sys.stderr)
        return 2
    if not os.path.isfile(args.page):
        print(f"screenshot: no such page: {args.page}", file=sys.stderr)
        return 2
    exe = chromium()
    if not exe:
        print("screenshot: chromium not found: install Debian's chromium (tools/install_deps.sh does)",
              file=sys.stderr)
        return 2
    png = os.path.abspath(args.png)
    if os.path.dirname(png):
        os.makedirs(os.path.dirname(png), exist_ok=True)
    if os.path.exists(png):
        os.remove(png)
    try:
        rc, out = screenshot(args.page, png, f"{m.group(1)},{m.group(2)}", args.hash, exe)
    except (OSError, subprocess.TimeoutExpired) as e:
        rc, out = -1, str(e)
    if not os.path.isfile(png) or os.path.getsize(png) == 0:
        print(f"screenshot: chromium (exit {rc}) wrote no PNG:\n" + "\n".join(out.splitlines()[-10:]),
              file=sys.stderr)
        return 1
    where = f", scrolled to y={LAST_STATE.get('scrollY', 0):.0f}" if args.hash else ""
    print(f"screenshot: wrote {png} ({m.group(1)}x{m.group(2)}{where})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
