#!/usr/bin/env python3
"""mkbundle.py OUT [--timeout S] [--tags gpu,tier_bat] [--pkg fake] NAME=SPEC_JSON ...

A bundle of fake binaries (symlinks to tools/testdata/fakegt.py), one target per NAME, each
with its own spec (fakegt.py's docstring). The bundle's tools/ and reports/ come from --src
(a pagelock checkout or bundle), so `OUT/run` works like a real bundle's."""
import argparse, json, os, shutil, sys
here = os.path.dirname(os.path.abspath(__file__))
p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--timeout", type=float, default=10)
p.add_argument("--tags", default="gpu,tier_bat")
p.add_argument("--pkg", default="fake")
p.add_argument("--src", default="")
p.add_argument("targets", nargs="+")
a = p.parse_args()
if os.path.exists(a.out):
    shutil.rmtree(a.out)
os.makedirs(os.path.join(a.out, "bin"))
targets = []
for t in a.targets:
    name, _, sp = t.partition("=")
    path = os.path.join("bin", name)
    os.symlink(os.path.join(os.path.dirname(here), "fakegt.py"), os.path.join(a.out, path))
    with open(os.path.join(a.out, path + ".spec.json"), "w", encoding="utf-8") as f:
        f.write(sp or "{}")
    targets.append({"label": f"//{a.pkg}:{name}", "path": path, "timeout_s": a.timeout,
                    "tags": [x for x in a.tags.split(",") if x]})
with open(os.path.join(a.out, "manifest.json"), "w", encoding="utf-8") as f:
    json.dump({"info": {"commit": "fake"}, "targets": targets}, f, indent=1)
if a.src:
    os.makedirs(os.path.join(a.out, "tools"), exist_ok=True)
    shutil.copy2(os.path.join(a.src, "tools", "__init__.py"), os.path.join(a.out, "tools", "__init__.py"))
    shutil.copytree(os.path.join(a.src, "tools", "runner"), os.path.join(a.out, "tools", "runner"),
                    ignore=shutil.ignore_patterns("*_test.py", "testdata", "__pycache__"))
    shutil.copytree(os.path.join(a.src, "reports"), os.path.join(a.out, "reports"),
                    ignore=shutil.ignore_patterns("*_test.py", "testdata", "__pycache__"))
    with open(os.path.join(a.out, "run"), "w", encoding="utf-8") as f:
        f.write('#!/bin/sh\nexec python3 "$(dirname "$0")/tools/runner/runner.py" --bundle "$(dirname "$0")" "$@"\n')
    os.chmod(os.path.join(a.out, "run"), 0o755)
print(a.out)
