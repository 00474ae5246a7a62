#!/usr/bin/env python3
"""pagelock qualify: the nightly driver qualification of the local GPUs.

Builds the bundle (or takes one), checks that a GPU is usable, runs the selected tier, retries
failed cases, compares the results with the expectations for this GPU SKU and driver and with a
baseline run, writes a run directory (results.json, index.html, failures.csv, testlogs/),
stores the run in the history database, prints a verdict and exits with its code:

  0 qualified                       3 regressions
  1 infrastructure error (no GPU)   4 nothing ran
  2 bad configuration               5 expectations need updating

  tools/qualify [--bundle DIR] [--tier bat|full] [--baseline auto|none|PATH] ...
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from reports import compare as cmp  # noqa: E402
from reports import expectations as expect  # noqa: E402
from reports import history  # noqa: E402
from reports import htmlreport  # noqa: E402
from reports import results as model  # noqa: E402
from tools.runner import runner  # noqa: E402

TIERS = {"bat": "tier_bat,-stress,-selftest,-host",
         "full": "tier_bat,tier_full,-stress,-selftest,-host",
         "stress": "tier_bat,tier_full,tier_stress,-selftest,-host"}


def say(msg):
    print(f"qualify: {msg}", flush=True)


def preflight(bundle, manifest):
    """The fingerprint, from the first GPU binary's --pagelock_fingerprint."""
    for t in manifest["targets"]:
        if "gpu" in t.get("tags", []):
            binary = os.path.join(bundle, t["path"])
            try:
                out = subprocess.run([binary, "--pagelock_fingerprint"], capture_output=True,
                                     text=True, timeout=120)
                return json.loads(out.stdout), None
            except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
                return None, f"{binary} --pagelock_fingerprint failed: {e}"
    return None, "the bundle has no GPU test binary"


def skip_filter(exps, driver):
    """gtest negative filter from `skip` expectations ('pkg:target/Suite.Name' globs)."""
    parts = [e.pattern.split("/", 1)[1] if "/" in e.pattern else e.pattern
             for e in exps.skip_patterns(driver)]
    return "-" + ":".join(parts) if parts else ""


def retry_failures(bundle, manifest, run, run_dir, args):
    """Re-runs failed cases up to args.retries times; every attempt stays visible in the
    'attempts' property ('FAIL PASS'), and the final status is the last attempt's."""
    by_target = {t["label"]: t for t in manifest["targets"]}
    for attempt in range(1, args.retries + 1):
        failing = [c for c in run.cases if c.status in ("FAIL", "CRASH", "TIMEOUT")
                   and c.target in by_target and c.suite != "(binary)"]
        if not failing:
            return
        say(f"retry {attempt}: {len(failing)} failed case(s)")
        for label in sorted({c.target for c in failing}):
            names = [c.gtest_name for c in failing if c.target == label]
            rargs = argparse.Namespace(time_scale=args.time_scale, seed=args.seed,
                                       gtest_filter=":".join(names), max_restarts=len(names),
                                       shuffle=False)
            out_root = os.path.join(run_dir, "retries", f"attempt_{attempt}")
            runner.run_target(bundle, by_target[label], out_root, rargs)
        retried = {c.id: c for c in model.load_testlogs(os.path.join(run_dir, "retries", f"attempt_{attempt}")).cases}
        for c in failing:
            r = retried.get(c.id)
            new_status = r.status if r else "MISSING"
            c.properties["attempts"] = c.properties.get("attempts", c.status) + " " + new_status
            if new_status in ("PASS", "WARN"):
                c.properties.setdefault("first_failure", c.message)
                c.status, c.message = new_status, ""
            elif r:
                c.message = r.message


def load_baseline(spec, out, sku, db, run_key):
    """Returns (Run or None, description)."""
    if spec == "none":
        return None, "none"
    path = spec
    if spec == "auto":
        key = history.latest_run_key(db, sku, run_key) if db else None
        path = os.path.join(out, key) if key else os.path.join(ROOT, "baselines", sku)
    if os.path.isdir(path):
        path = os.path.join(path, "results.json")
    if not os.path.exists(path):
        if spec == "auto":
            return None, f"none (no earlier run for {sku} and no {os.path.relpath(path, ROOT)})"
        raise FileNotFoundError(f"baseline {spec}: no results.json at {path}")
    with open(path) as f:
        data = json.load(f)
    return model.Run.from_json(data.get("run", data)), os.path.abspath(path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundle", help="prebuilt bundle (default: build one into build/bundle)")
    p.add_argument("--archs", help="--//tools:cuda_archs for the build, e.g. sm_90")
    p.add_argument("--tier", default="full", choices=sorted(TIERS))
    p.add_argument("--out", default=os.path.join(ROOT, "runs"), help="where run directories go")
    p.add_argument("--expectations", default=os.path.join(ROOT, "expectations"))
    p.add_argument("--baseline", default="auto",
                   help="auto (last run of this SKU, else baselines/<sku>), none, or a run dir/results.json")
    p.add_argument("--history", help="SQLite file (default OUT/history.sqlite)")
    p.add_argument("--no-history", action="store_true")
    p.add_argument("--retries", type=int, default=2, help="re-runs of failed cases (default 2)")
    p.add_argument("--time-scale", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--shuffle", action="store_true")
    p.add_argument("--label", default="", help="free text shown in the report (e.g. the change under test)")
    p.add_argument("--allow-no-gpu", action="store_true",
                   help="run even without a usable GPU (harness self-tests)")
    args = p.parse_args(argv)
    if args.retries < 0 or args.time_scale <= 0:
        say("--retries must be >= 0 and --time-scale > 0")
        return cmp.EXIT_CONFIG

    bundle = args.bundle
    if not bundle:
        bundle = os.path.join(ROOT, "build", "bundle")
        say(f"building the bundle into {bundle}")
        rc = subprocess.call([sys.executable, os.path.join(ROOT, "tools", "bundle.py"), bundle]
                             + (["--archs", args.archs] if args.archs else []))
        if rc != 0:
            say(f"the build failed (tools/bundle.py exit {rc})")
            return cmp.EXIT_INFRA
    try:
        manifest = runner.load_manifest(bundle)
    except runner.UsageError as e:
        say(str(e))
        return cmp.EXIT_CONFIG

    fp, err = preflight(bundle, manifest)
    if fp is None:
        say(f"infrastructure error: {err}")
        return cmp.EXIT_INFRA
    if fp.get("device_status") != "usable" and not args.allow_no_gpu:
        say(f"infrastructure error: no usable GPU on this machine ({fp.get('device_status')}); "
            "nothing was run")
        return cmp.EXIT_INFRA
    sku = expect.sku_of(fp.get("gpu0_name", "none"))
    driver = fp.get("nvidia_driver", "")
    try:
        exps = expect.load(args.expectations, sku)
    except expect.ExpectationError as e:
        say(f"bad expectations: {e}")
        return cmp.EXIT_CONFIG

    started = datetime.datetime.now(datetime.timezone.utc)
    host = re.sub(r"[^A-Za-z0-9.-]", "-", fp.get("host", "host"))
    run_key = f"{started:%Y%m%d-%H%M%S}_{host}_{sku}_{driver or 'nodriver'}"
    base_key, n = run_key, 1
    while os.path.exists(os.path.join(args.out, run_key)):  # two runs in one second
        n += 1
        run_key = f"{base_key}-{n}"
    run_dir = os.path.join(args.out, run_key)
    os.makedirs(run_dir)
    db = None
    if not args.no_history:
        db = history.connect(args.history or os.path.join(args.out, "history.sqlite"))
    try:
        baseline, baseline_name = load_baseline(args.baseline, args.out, sku, db, run_key)
    except (OSError, ValueError, KeyError) as e:
        say(f"bad baseline: {e}")
        return cmp.EXIT_CONFIG

    say(f"{fp.get('gpu0_name', 'no GPU')} ({sku}), driver {driver or 'none'}, tier {args.tier}, run {run_key}")
    rargv = ["--bundle", bundle, "--out", os.path.join(run_dir, "testlogs"), "--tags", TIERS[args.tier],
             "--time-scale", str(args.time_scale)]
    if args.seed is not None:
        rargv += ["--seed", str(args.seed)]
    if args.shuffle:
        rargv.append("--shuffle")
    sf = skip_filter(exps, driver)
    if sf:
        rargv.append("--gtest_filter=" + sf)
    rc = runner.main(rargv)
    if rc in (2, runner.EXIT_NOTHING_SELECTED):
        say("nothing ran: no test binary matches the tier")
        return cmp.EXIT_NOTHING_RAN
    run = model.load_testlogs(os.path.join(run_dir, "testlogs"))
    retry_failures(bundle, manifest, run, run_dir, args)
    comp = cmp.compare(run, exps, baseline)
    verdict, color = comp.verdict

    info = {"run_key": run_key, "started_at": started.isoformat(timespec="seconds"), "sku": sku,
            "tier": args.tier, "bundle": manifest.get("info", {}), "baseline": baseline_name,
            "expectations": exps.files, "retries": args.retries, "label": args.label,
            "verdict": verdict, "exit_code": comp.exit_code,
            "command": " ".join(["tools/qualify"] + (argv if argv is not None else sys.argv[1:]))}
    with open(os.path.join(run_dir, "results.json"), "w") as f:
        json.dump({"info": info, "run": run.to_json(), "comparison": comp.status,
                   "comparison_notes": comp.notes, "dropped": comp.dropped,
                   "stale_expectations": [f"{e.source}: {e.kind} {e.pattern}" for e in comp.stale]},
                  f, indent=1)
    with open(os.path.join(run_dir, "failures.csv"), "w") as f:
        f.write(cmp.failures_csv(run, comp))
    if db:
        history.store(db, run_key, info["started_at"], run, comp, sku,
                      info["bundle"].get("commit", ""), comp.exit_code, verdict)
    trends = {}
    if db:
        for name in history.metric_names(db, sku):
            trends[name] = history.trend(db, name, sku)
    html = htmlreport.render_qualification(run, info, comp, baseline, trends)
    with open(os.path.join(run_dir, "index.html"), "w", encoding="utf-8") as f:
        f.write(html)
    print(model.format_counts(run.counts()))
    if any(comp.summary.values()):
        say("against expectations and baseline: " +
            ", ".join(f"{k}={v}" for k, v in sorted(comp.summary.items()) if v))
    for e in comp.stale:
        say(f"stale expectation {e.source}: {e.kind} {e.pattern}")
    say(f"report: {os.path.join(run_dir, 'index.html')}")
    say(f"verdict: {verdict} (exit {comp.exit_code})")
    return comp.exit_code


if __name__ == "__main__":
    sys.exit(main())
