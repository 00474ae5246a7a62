"""The plan: every input checked and nothing written but --out, before any test runs. The
bundle (built into build/bundle without --bundle), its fingerprint, the SKU's expectations, the
baseline, the history, the tier's targets, the run seed, and the folder the run will write."""

import errno
import os
import random
import re
import secrets
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field

from reports import compare as cmp
from reports import expectations as expect
from reports import history
from reports import model
from tools.qualification import baselines, common, preflight
from tools.qualification.common import Stop, in_checkout, say
from tools.runner import runner

TIERS = {"bat": "tier_bat,-stress,-selftest,-host",
         "full": "tier_bat,tier_full,-stress,-selftest,-host",
         "stress": "tier_bat,tier_full,tier_stress,-selftest,-host"}


@dataclass
class Plan:
    bundle: str
    manifest: dict
    targets: list  # manifest entries selected by the tier
    fingerprint: dict
    sku: str
    driver: str
    expectations: object
    baseline: object  # model.Run or None
    baseline_name: str
    seed: int
    tags: str
    filters: dict = field(default_factory=dict)  # label -> gtest filter
    skipped: list = field(default_factory=list)  # case ids that `skip` expectations keep out
    run_dir: str = ""
    db: object = None
    trends: dict = None  # metric name -> [(run_key, driver, value)], this run last
    # No baseline for this SKU anywhere (--baseline auto found none): the run is its first night.
    first_night: bool = False
    sku_file: str = ""  # expectations/<sku>.txt when it exists


def make_plan(args):
    preflight.check_arguments(args)
    if not args.bundle:
        preflight.require_gpu_before_building(args)
    # A baseline named on the command line is read (every field's type checked) before the
    # build and before any test runs: a bad one costs nothing.
    named_baseline = None
    if args.baseline not in ("auto", "none"):
        named_baseline = baselines.load_baseline(args.baseline, args.out, None)
    check_out(args.out)
    bundle = args.bundle or build_bundle(args.archs)
    manifest = read_manifest(args, bundle)
    fp, err = preflight.read_fingerprint(bundle, manifest)
    if fp is None:
        raise Stop(cmp.EXIT_INFRA, f"infrastructure error: {err}")
    if fp.get("device_status") != "usable" and not args.allow_no_gpu:
        raise Stop(cmp.EXIT_INFRA, f"infrastructure error: no usable GPU on this machine "
                                   f"({fp.get('device_status')}); nothing was run. {preflight.NO_GPU_HINT}")
    sku = expect.sku_of(fp.get("gpu0_name", "none"))
    driver = fp.get("nvidia_driver", "")
    preflight.check_input_files(args, bundle, sku)
    try:
        exps = expect.load(args.expectations, sku)
    except expect.ExpectationError as e:
        raise Stop(cmp.EXIT_CONFIG, f"bad expectations: {e}")
    name_in_checkout(exps)
    baseline, baseline_name = named_baseline or baselines.load_baseline(
        args.baseline, args.out, sku, baselines.runtime_of(fp), args.tier)
    db = open_history(args)
    targets = runner.select(manifest["targets"], TIERS[args.tier], "")
    if not targets:
        raise Stop(cmp.EXIT_NOTHING_RAN, f"nothing ran: no test binary matches the tier {args.tier}")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10 ** 12)
    plan = Plan(bundle, manifest, targets, fp, sku, driver, exps, baseline, baseline_name, seed,
                TIERS[args.tier], db=db)
    plan.filters, plan.skipped = skip_filters(bundle, targets, exps, expect.Platform.from_fingerprint(fp, sku))
    plan.first_night = args.baseline == "auto" and baseline is None
    sku_file = os.path.join(args.expectations, f"{sku}.txt")
    plan.sku_file = (in_checkout(sku_file) or sku_file) if os.path.lexists(sku_file) else ""
    return plan


def check_out(out):
    """--out exists (it is created) and is writable; raises Stop(EXIT_CONFIG)."""
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise Stop(cmp.EXIT_CONFIG, f"--out {out}: cannot create it: {e.strerror}")
    if not os.access(out, os.W_OK | os.X_OK):
        raise Stop(cmp.EXIT_CONFIG, f"--out {out}: not writable")


def build_bundle(archs):
    """Builds the bundle into build/bundle of the checkout (tools/bundle.py); returns its path."""
    bundle = os.path.join(common.ROOT, "build", "bundle")
    say(f"building the bundle into {bundle}")
    rc = subprocess.call([sys.executable, os.path.join(common.ROOT, "tools", "bundle.py"), bundle]
                         + (["--archs", archs] if archs else []))
    if rc != 0:
        full = common.full_file_system([bundle, os.path.expanduser("~/.cache/bazel"),
                                        os.environ.get("TMPDIR", "/tmp")])
        raise Stop(cmp.EXIT_INFRA, f"the build failed (tools/bundle.py exit {rc})" + (f": {full}" if full else ""))
    return bundle


def read_manifest(args, bundle):
    preflight.check_input_files(args, bundle)
    try:
        return runner.load_manifest(bundle)
    except runner.UsageError as e:
        raise Stop(cmp.EXIT_CONFIG, str(e))
    except (OSError, AttributeError, TypeError) as e:
        raise Stop(cmp.EXIT_CONFIG, f"{bundle}: not a usable bundle ({e})")


def name_in_checkout(exps):
    """The expectation files, and the entries' file:line, named relative to the checkout when
    they lie in it: results.json and the page cite them, and a baseline is committed."""
    exps.files = {(in_checkout(p) or p): digest for p, digest in exps.files.items()}
    for e in exps.entries:
        path, sep, line = e.source.rpartition(":")
        rel = in_checkout(path) if sep and os.path.isabs(path) else None
        if rel:
            e.source = f"{rel}:{line}"


def skip_filters(bundle, targets, exps, platform):
    """{label: negative gtest filter} from `skip` expectations, and the skipped case ids. The
    patterns match whole case ids (any package depth); the binaries' own case lists say which
    cases they name, so each target gets exactly its own cases."""
    patterns = [e.pattern for e in exps.skip_patterns(platform)]
    if not patterns:
        return {}, []
    filters, skipped = {}, []
    for t in targets:
        names, _ = runner.list_cases(os.path.join(bundle, t["path"]), "", dict(os.environ))
        ids = []
        for n in names or []:
            suite, _, case = n.partition(".")
            ids.append(model.CaseId(t["label"], suite, case))
        hit = model.matching(patterns, ids)
        if hit:
            filters.update(model.gtest_filters(hit, negative=True))
            skipped += [str(c) for c in hit]
    return filters, skipped


def open_history(args):
    if args.no_history:
        return None
    path = args.history or os.path.join(args.out, "history.sqlite")
    try:
        db = history.connect(path)
    except (sqlite3.Error, OSError) as e:
        if disk_full(e) or (not history.is_url(path) and common.full_file_system([path])):
            raise Stop(cmp.EXIT_INFRA, f"infrastructure error: no space left on {path}: the history cannot be "
                                       f"written ({e}); free some space, or run with --history OTHER.sqlite "
                                       "or --no-history")
        if isinstance(e, history.HistoryUnavailable):
            # The server or the disk failed, not the configuration: exit 1, as history.py and fleet say.
            raise Stop(cmp.EXIT_INFRA, f"infrastructure error: history {history.redact(path)} is unavailable ({e}); "
                                       "retry when it is back, or run with --history OTHER.sqlite or --no-history")
        raise Stop(cmp.EXIT_CONFIG, f"history {path} is unusable ({e}); repair or move it, or "
                                    "run with --history OTHER.sqlite or --no-history")
    if db.read_only:  # sound, and readable by every history.py query, but this run could not go in
        db.close()
        raise Stop(cmp.EXIT_CONFIG, f"history {path}: read-only ({db.read_only}): run not stored; "
                                    "use --no-history or another --history (nothing was run)")
    return db


def disk_full(e):
    """SQLITE_FULL or ENOSPC: the machine's fault (exit 1, as history.py says), not the history
    file's; connect() re-raises SQLite's error as text, so its message counts too."""
    sqlite_full = getattr(e, "sqlite_errorcode", None) == 13  # SQLITE_FULL (set by Python 3.11+)
    return (sqlite_full or getattr(e, "errno", None) == errno.ENOSPC
            or any(w in str(e) for w in ("database or disk is full", "No space left on device")))


def path_part(text, default):
    """text as one safe component of a folder name: letters, digits, '.', '-' only (no '/',
    no '_', the run key's separator), at most 64 characters; fingerprint values come from a
    binary's output and must never steer where qualify writes."""
    part = re.sub(r"[^A-Za-z0-9.-]", "-", str(text or ""))[:64].strip(".") or default
    return part


def new_run_dir(out, fp, sku, driver, started, stored=lambda key: False, token=None):
    """A run key not yet used in --out nor, by `stored`, in the history. Two runs of one host
    may start in the same second with their own --out and one history (two fleet tasks on one
    node, two VMs both named `vm`): the key carries the start to the millisecond and a random
    part (`token`, 6 hex digits by default), so no two runs share one; and a key another run
    stored meanwhile is still caught by the store (publish.store_history), never dropped.
    <YYYYmmdd-HHMMSS>.<ms>-<token>_<host>_<sku>_<driver>, sortable by the start time."""
    token = token if token is not None else secrets.token_hex(3)
    run_key = (f"{started:%Y%m%d-%H%M%S}.{started.microsecond // 1000:03d}-{path_part(token, 'x')}_"
               f"{path_part(fp.get('host'), 'host')}_{path_part(sku, 'unknown')}_"
               f"{path_part(driver, 'nodriver')}")
    base_key, n = run_key, 1
    while os.path.lexists(os.path.join(out, run_key)) or stored(run_key):  # a key made twice
        n += 1
        run_key = f"{base_key}-{n}"
    # The key is one component by construction; refuse anything that would still land outside.
    real_out = os.path.realpath(out)
    if os.path.dirname(os.path.realpath(os.path.join(out, run_key))) != real_out:
        raise Stop(cmp.EXIT_CONFIG, f"run folder {run_key!r} would not be inside --out {out}")
    return run_key
