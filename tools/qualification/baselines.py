"""Baselines: reading a results.json (every field's type checked), the run stored last for a SKU
and CUDA runtime (--baseline auto), the reference baselines/<sku>[/cuda-X.Y], and where
--write-baseline writes."""

import os
import re

from reports import compare as cmp
from reports import model
from reports import validate
from tools.qualification import common
from tools.qualification.common import Stop, in_checkout, say

MAX_RESULTS_BYTES = 4 << 30
# Run folders' names: <UTC date-time>_<host>_<sku>_<driver>[-N].
RUN_KEY_RE = re.compile(r"^\d{8}-\d{6}_[^_/]*_([^_/]+)_[^/]*$")


def read_results_file(path, what):
    """(Run, info, document) of a results.json, every field's type checked first, so that a
    wrong-typed field is exit 2 naming it before any test runs. Raises Stop(EXIT_CONFIG)."""
    try:
        doc = validate.read_json_file(path, MAX_RESULTS_BYTES)
    except validate.InputError as e:
        raise Stop(cmp.EXIT_CONFIG, f"bad {what}: {e}")
    problem = validate.results_problem(doc)
    if problem:
        raise Stop(cmp.EXIT_CONFIG, f"bad {what}: {path}: {problem}")
    run_json = doc.get("run", doc)
    if "format_version" not in run_json and "format_version" in doc:
        run_json = dict(run_json, format_version=doc["format_version"])
    try:
        run = model.Run.from_json(run_json)
    except model.ResultsError as e:
        raise Stop(cmp.EXIT_CONFIG, f"bad {what}: {path}: {e}")
    return run, doc.get("info", {}), doc


def stored_runs(out, sku):
    """Run folders under out for this SKU that hold a results.json, the one stored last first.
    Stored last is the results.json's modification time (set by this machine's kernel when the
    run was written), never the run's own started_at: a host whose clock is a day behind would
    otherwise make an older run the latest."""
    found = []
    try:
        names = os.listdir(out)
    except OSError:
        return []
    for name in names:
        m = RUN_KEY_RE.match(name)
        path = os.path.join(out, name, "results.json")
        if not m or m.group(1) != sku:
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        found.append((st.st_mtime_ns, name, path))
    return [path for _, _, path in sorted(found, reverse=True)]


def runtime_of(fingerprint):
    """CUDART_VERSION the run's binaries were built with (an int), or None when unrecorded."""
    try:
        return int(str((fingerprint or {}).get("cuda_runtime_version", "")).strip())
    except ValueError:
        return None


def runtime_name(version):
    return f"{version // 1000}.{version % 1000 // 10}" if version else "unknown"


def same_runtime(run, runtime):
    """A baseline compares like with like: the documented rule profile and the APIs a suite can
    reach follow the CUDA runtime, so a run of another runtime is never the baseline."""
    theirs = runtime_of(run.fingerprint)
    return runtime is None or theirs is None or theirs == runtime


def reference_baseline(sku, runtime):
    """baselines/<sku>/cuda-X.Y/results.json for a runtime that has its own, else
    baselines/<sku>/results.json (the default toolkit's)."""
    own = os.path.join(common.ROOT, "baselines", sku, f"cuda-{runtime_name(runtime)}", "results.json")
    if runtime and os.path.lexists(own):
        return own
    return os.path.join(common.ROOT, "baselines", sku, "results.json")


def latest_baseline(out, sku, runtime=None):
    """(path, Run) of the run stored last for sku under the same CUDA runtime whose verdict was
    reached (an INTERRUPTED or unreadable folder is passed over, with a note), or (None, None)."""
    for path in stored_runs(out, sku):
        try:
            run, info, _ = read_results_file(path, "earlier run")
        except Stop as e:
            say(f"note: --baseline auto passes over {path}: {e}")
            continue
        if info.get("sku") not in (None, sku):
            continue
        if info.get("exit_code") == cmp.EXIT_INTERRUPTED or info.get("verdict") == "INTERRUPTED":
            continue
        if not same_runtime(run, runtime):
            continue
        return path, run
    return None, None


def baseline_name(path):
    """How results.json names its baseline: relative to the checkout when it lies in it."""
    return in_checkout(path) or os.path.abspath(path)


def load_baseline(spec, out, sku, runtime=None):
    """Returns (Run or None, description). Raises Stop(EXIT_CONFIG) on a bad baseline.
    auto: the run of this SKU and CUDA runtime stored last in --out (by when it was stored, not
    by its clock), else baselines/<sku>[/cuda-X.Y]; deleting the newest run folder falls back
    to the one before it. A reference baseline of another runtime is no baseline."""
    if spec == "none":
        return None, "none"
    if spec == "auto":
        path, run = latest_baseline(out, sku, runtime)
        if run is not None:
            return run, baseline_name(path)
        path = reference_baseline(sku, runtime)
        rel = os.path.relpath(path, common.ROOT)
        if not os.path.lexists(path):
            return None, f"none (no earlier run for {sku} in {in_checkout(out) or out} and no {rel})"
        run, _, _ = read_results_file(path, "baseline")
        if not same_runtime(run, runtime):
            return None, (f"none ({rel} is for CUDA runtime {runtime_name(runtime_of(run.fingerprint))}, "
                          f"this run's is {runtime_name(runtime)}; --write-baseline writes "
                          f"baselines/{sku}/cuda-{runtime_name(runtime)}/)")
        return run, baseline_name(path)
    path = spec
    if os.path.isdir(path):
        path = os.path.join(path, "results.json")
    if not os.path.lexists(path):
        raise Stop(cmp.EXIT_CONFIG, f"bad baseline {spec}: no results.json at {path}")
    run, _, _ = read_results_file(path, "baseline")
    return run, baseline_name(path)


def baseline_dest(sku, runtime):
    """baselines/<sku> when it is empty or holds this runtime's baseline, else a folder of the
    runtime's own (baselines/<sku>/cuda-X.Y): one reference per runtime, never overwritten by
    another runtime's run."""
    default = os.path.join(common.ROOT, "baselines", sku)
    path = os.path.join(default, "results.json")
    if not os.path.lexists(path) or runtime is None:
        return default
    try:
        run, _, _ = read_results_file(path, "baseline")
    except Stop:
        return default
    if same_runtime(run, runtime):
        return default
    return os.path.join(default, f"cuda-{runtime_name(runtime)}")
