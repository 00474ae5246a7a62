#!/usr/bin/env python3
"""Summarises a tools/faults/probe.sh output folder: which driver entry points the binaries
requested through cuGetProcAddress (symbol, version, flags, how the shim answered), and whether
the run under the shim (no fault) has the same status as the run without it, case by case.

  probe_summary.py [--bundle BUNDLE] OUTDIR     writes OUTDIR/summary.txt and summary.json

Exit codes: 0 the control matches; 1 it differs; 2 bad usage (missing folders).
"""
import argparse
import collections
import json
import os
import sys

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.faults.probe_summary"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])


def read_log(path):
    """Parses a PAGELOCK_FAULT_LOG file into (gpa rows, init rows, fired rows, error rows)."""
    gpa, init, fired, errors = [], [], [], []
    if not os.path.exists(path):
        return gpa, init, fired, errors
    with open(path, errors="replace", encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 2:
                continue
            kind = parts[1]
            if kind == "gpa" and len(parts) >= 9:
                gpa.append({"symbol": parts[2], "version": parts[3], "flags": parts[4],
                            "result": parts[5], "status": parts[6], "how": parts[7], "api": parts[8]})
            elif kind == "init":
                init.append("\t".join(parts[2:]))
            elif kind == "fired":
                fired.append("\t".join(parts[2:]))
            elif kind == "error":
                errors.append("\t".join(parts[2:]))
    return gpa, init, fired, errors


def statuses(testlogs):
    from reports import testlogs as reader
    run = reader.load_testlogs(testlogs)
    return {c.id: str(c.status) for c in run.cases}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # The reader is the one beside this file (run from a bundle: the bundle's own).
    p.add_argument("--bundle", help="bundle folder (accepted for older probe.sh; unused)")
    p.add_argument("out", help="probe.sh output folder")
    args = p.parse_args(argv)
    if not os.path.isdir(args.out):
        print(f"probe_summary: {args.out}: not a folder", file=sys.stderr)
        return 2
    gpa, init, fired, errors = read_log(os.path.join(args.out, "gpa.log"))
    requests = collections.Counter((r["symbol"], r["version"], r["flags"], r["how"], r["api"],
                                    r["result"], r["status"]) for r in gpa)
    _, smoke_init, smoke_fired, smoke_errors = read_log(os.path.join(args.out, "smoke.log"))
    summary = {"log_lines": len(gpa), "processes": len(init), "init": sorted(set(init)),
               "errors": sorted(set(errors)), "smoke_fired": sorted(set(smoke_fired)),
               "smoke_init": sorted(set(smoke_init))[:5],
               "requests": [{"symbol": k[0], "version": k[1], "flags": k[2], "how": k[3],
                             "api": k[4], "result": k[5], "status": k[6], "count": n}
                            for k, n in sorted(requests.items())]}
    compare = {}
    for name in ("noshim", "shim", "smoke"):
        d = os.path.join(args.out, name, "testlogs")
        try:
            compare[name] = statuses(d)
        except (FileNotFoundError, OSError) as e:
            compare[name] = {}
            summary.setdefault("problems", []).append(f"{d}: {e}")
    a, b = compare["noshim"], compare["shim"]
    diffs = [{"case": c, "noshim": a.get(c, "ABSENT"), "shim": b.get(c, "ABSENT")}
             for c in sorted(set(a) | set(b)) if a.get(c) != b.get(c)]
    summary["control"] = {"cases_noshim": len(a), "cases_shim": len(b), "differences": diffs,
                          "identical": not diffs and bool(a)}
    summary["smoke_changed"] = [{"case": c, "shim": b.get(c), "smoke": s}
                                for c, s in sorted(compare["smoke"].items()) if b.get(c) != s]
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    lines = [f"processes under the shim: {len(init)}; cuGetProcAddress requests: {len(gpa)}",
             "init: " + "; ".join(summary["init"][:3]),
             "errors: " + ("; ".join(summary["errors"]) or "none"),
             f"control: {len(a)} cases without the shim, {len(b)} with; "
             f"{len(diffs)} differ -> {'IDENTICAL' if summary['control']['identical'] else 'DIFFERENT'}"]
    lines += [f"  {d['case']}: {d['noshim']} -> {d['shim']}" for d in diffs[:50]]
    lines.append(f"smoke (hostalloc_out_of_memory): fired {summary['smoke_fired']}, "
                 f"{len(summary['smoke_changed'])} cases changed")
    lines += [f"  {d['case']}: {d['shim']} -> {d['smoke']}" for d in summary["smoke_changed"][:20]]
    lines.append("requests (symbol version flags how api result status count):")
    lines += ["  " + " ".join(str(r[k]) for k in ("symbol", "version", "flags", "how", "api",
                                                    "result", "status", "count"))
              for r in summary["requests"]]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "summary.txt"), "w", encoding="utf-8") as f:
        f.write(text)
    print("\n".join(lines[:12 + len(diffs[:50])]))
    return 0 if summary["control"]["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
