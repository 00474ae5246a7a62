#!/usr/bin/env python3
"""pagelock bundle runner: runs prebuilt GoogleTest binaries on a machine without Bazel.

Each test binary runs in its own process group with a time limit. Results land in the layout of
bazel-testlogs (<out>/<package>/<target>/test.xml and test.log), so the same report tool reads
Bazel's runs and the bundle's. When a binary crashes or hangs, the case that was running (from
the case journal the binary writes, fixtures/journal.h) is recorded as CRASH or TIMEOUT, the
cases that had finished keep their results, and the binary is restarted on the cases it has not
run yet, so one bad case never loses the others.

Exit codes: 0 every case passed or was not supported/skipped; 1 some case failed, crashed,
timed out or went missing; 2 bad usage or a broken bundle.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from reports import results as model  # noqa: E402


class UsageError(Exception):
    pass


def load_manifest(bundle):
    path = os.path.join(bundle, "manifest.json")
    try:
        with open(path) as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (is {bundle} a pagelock bundle?)")
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}:{e.lineno}: malformed JSON: {e.msg}")
    targets = manifest.get("targets")
    if not isinstance(targets, list):
        raise UsageError(f"{path}: 'targets' must be a list")
    for i, t in enumerate(targets):
        for key in ("label", "path", "timeout_s"):
            if key not in t:
                raise UsageError(f"{path}: target #{i} lacks '{key}'")
    return manifest


def select(targets, tags_expr, target_regex):
    """Bazel-like tag filter: 'gpu,-stress' keeps targets with gpu and without stress."""
    want = [t for t in tags_expr.split(",") if t and not t.startswith("-")] if tags_expr else []
    drop = [t[1:] for t in tags_expr.split(",") if t.startswith("-")] if tags_expr else []
    out = []
    for t in targets:
        tags = set(t.get("tags", []))
        if want and not any(w in tags for w in want):
            continue
        if any(d in tags for d in drop):
            continue
        if target_regex and not re.search(target_regex, t["label"]):
            continue
        out.append(t)
    return out


def list_cases(binary, gtest_filter, env):
    """Case names ('Suite.Name') the binary would run, from --gtest_list_tests."""
    args = [binary, "--gtest_list_tests"]
    if gtest_filter:
        args.append("--gtest_filter=" + gtest_filter)
    try:
        out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if out.returncode != 0:
        return None, f"--gtest_list_tests exited {out.returncode}: {out.stderr.strip()[-500:]}"
    cases, suite = [], None
    for line in out.stdout.splitlines():
        if not line.strip() or line.startswith("pagelock:"):
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            cases.append(suite + line.split("#")[0].strip())
    return cases, None


def run_once(binary, args, env, timeout_s, log):
    """Runs the binary once in its own process group; returns (returncode, timed_out, seconds)."""
    start = time.monotonic()
    proc = subprocess.Popen([binary] + args, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    return proc.returncode, timed_out, time.monotonic() - start


def describe_exit(returncode, timed_out, timeout_s):
    if timed_out:
        return f"TIMEOUT: the binary was killed after its limit of {timeout_s:.0f} s"
    if returncode < 0:
        sig = -returncode
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"CRASH: the binary was killed by {name}"
    return f"CRASH: the binary exited with status {returncode} before finishing"


def run_target(bundle, target, out_root, args):
    label = target["label"]
    package, name = label[2:].split(":")
    tdir = os.path.join(out_root, package, name)
    outputs = os.path.join(tdir, "test.outputs")
    os.makedirs(outputs, exist_ok=True)
    binary = os.path.join(bundle, target["path"])
    timeout_s = float(target["timeout_s"]) * args.time_scale
    env = dict(os.environ)
    env["TEST_TMPDIR"] = os.path.join(outputs, "tmp")
    os.makedirs(env["TEST_TMPDIR"], exist_ok=True)
    env["PAGELOCK_TIME_SCALE"] = str(args.time_scale)
    if args.seed is not None:
        env["PAGELOCK_SEED"] = str(args.seed)

    log_path = os.path.join(tdir, "test.log")
    summary = {"label": label, "attempts": [], "cases": 0}
    with open(log_path, "w") as log:
        expected, err = list_cases(binary, args.gtest_filter, env)
        if expected is None:
            log.write(f"pagelock runner: cannot list cases of {binary}: {err}\n")
            model.write_infra_error_xml(os.path.join(tdir, "test.xml"), label,
                                        f"cannot list the cases of {target['path']}: {err}")
            summary["infra_error"] = err
            return summary
        done = {}  # case -> ET.Element testcase
        root_attrs = {}
        remaining = list(expected)
        attempt = 0
        while remaining and attempt <= args.max_restarts:
            attempt += 1
            journal = os.path.join(outputs, f"attempt_{attempt}.journal.jsonl")
            xml_path = os.path.join(outputs, f"attempt_{attempt}.xml")
            env["PAGELOCK_JOURNAL"] = journal
            gargs = [f"--gtest_output=xml:{xml_path}"]
            if attempt == 1:
                if args.gtest_filter:
                    gargs.append("--gtest_filter=" + args.gtest_filter)
            else:
                gargs.append("--gtest_filter=" + ":".join(remaining))
            if args.shuffle:
                gargs.append("--gtest_shuffle")
            log.write(f"=== pagelock runner: attempt {attempt} of {label}: {' '.join(gargs)}\n")
            log.flush()
            rc, timed_out, secs = run_once(binary, gargs, env, timeout_s, log)
            log.flush()
            entry = {"attempt": attempt, "returncode": rc, "timed_out": timed_out,
                     "seconds": round(secs, 3)}
            cases, attrs = model.read_gtest_xml_cases(xml_path)
            if attrs:
                root_attrs = attrs
            if cases is not None and not timed_out and rc >= 0:
                for case_id, el in cases.items():
                    done[case_id] = el
            else:
                # The binary died: keep what the journal says finished, blame the running case.
                finished, running = model.read_journal(journal)
                for case_id, el in finished.items():
                    done[case_id] = el
                reason = describe_exit(rc, timed_out, timeout_s)
                if running:
                    status = "TIMEOUT" if timed_out else "CRASH"
                    done[running] = model.synthesize_case(
                        running, status, f"{reason} while running this case",
                        log_tail=model.tail(log_path, 3000))
                    entry["blamed"] = running
                else:
                    entry["unattributed"] = reason
                    log.write(f"pagelock runner: {reason}; no case was running\n")
                    break
            summary["attempts"].append(entry)
            remaining = [c for c in expected if c not in done]
        for case_id in remaining:
            done[case_id] = model.synthesize_case(
                case_id, "MISSING", "the case never reported a result (restart budget spent)")
        summary["cases"] = len(done)
    model.write_merged_xml(os.path.join(tdir, "test.xml"), label, root_attrs,
                           [done[c] for c in expected if c in done] +
                           [el for c, el in done.items() if c not in expected])
    return summary


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundle", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."),
                   help="bundle folder (default: the bundle this runner is part of)")
    p.add_argument("--out", required=True, help="testlogs folder to write")
    p.add_argument("--tags", default="-stress,-selftest",
                   help="Bazel-style tag filter, e.g. 'gpu,-stress' (default: -stress,-selftest)")
    p.add_argument("--targets", default="", help="regex on target labels")
    p.add_argument("--gtest_filter", default="", help="passed to every binary")
    p.add_argument("--time-scale", type=float, default=1.0,
                   help="multiplies every time limit (also exported as PAGELOCK_TIME_SCALE)")
    p.add_argument("--max-restarts", type=int, default=5,
                   help="restarts of one binary after crashes or timeouts (default 5)")
    p.add_argument("--seed", type=int, default=None, help="PAGELOCK_SEED for every binary")
    p.add_argument("--shuffle", action="store_true", help="run cases in random order (gtest)")
    args = p.parse_args(argv)
    try:
        manifest = load_manifest(args.bundle)
        targets = select(manifest["targets"], args.tags, args.targets)
    except UsageError as e:
        print(f"runner: {e}", file=sys.stderr)
        return 2
    if not targets:
        print("runner: no target matches the selection", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    summaries = []
    for t in targets:
        print(f"runner: {t['label']} ...", flush=True)
        s = run_target(args.bundle, t, args.out, args)
        summaries.append(s)
        print(f"runner: {t['label']}: {s['cases']} cases, {len(s['attempts'])} attempt(s)"
              + (f", blamed {[a['blamed'] for a in s['attempts'] if 'blamed' in a]}"
                 if any('blamed' in a for a in s['attempts']) else ""), flush=True)
    with open(os.path.join(args.out, "runner.json"), "w") as f:
        json.dump({"bundle": manifest.get("info", {}), "args": vars(args), "targets": summaries}, f, indent=1)
    run = model.load_testlogs(args.out)
    counts = run.counts()
    print(model.format_counts(counts))
    return 0 if model.is_clean(counts) else 1


if __name__ == "__main__":
    sys.exit(main())
