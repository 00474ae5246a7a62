#!/usr/bin/env python3
"""A PNG of the first screen of a report page, taken by headless Chromium (Debian's chromium),
for the committed screenshots beside the example runs.

  python3 reports/screenshot.py RUN_DIR/index.html OUT.png [--size 1440x900] [--hash '#case=ID']

Exit codes: 0 written; 2 bad input (no such page, bad --size, chromium not installed);
1 chromium ran but wrote no PNG (its last output lines are printed).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def flags(profile, size):
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
            f"--user-data-dir={profile}", f"--window-size={size}"]


def screenshot(page, png, size="1440,900", hash_="", exe=None, timeout=180):
    """Writes png; returns (returncode, chromium's output)."""
    exe = exe or chromium()
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([exe, *flags(os.path.join(tmp, "profile"), size), f"--screenshot={png}",
                            "file://" + os.path.abspath(page) + hash_], capture_output=True, text=True,
                           timeout=timeout)
    return p.returncode, p.stdout + p.stderr


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
    print(f"screenshot: wrote {png} ({m.group(1)}x{m.group(2)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
