"""Baselines: reading a results.json (every field's type checked), the run stored last for a SKU,
CUDA runtime and tier (--baseline auto), the reference baselines/<sku>[/cuda-X.Y]/<tier's file>,
where --write-baseline writes, and what a committed baseline keeps of a run's info."""

import os
import re

from reports import compare as cmp
from reports import model
from reports import results_stream
from tools.qualification import common
from tools.qualification.common import Stop, in_checkout, say

# Run folders' names: <UTC date-time>[.<ms>-<random>]_<host>_<sku>_<driver>[-N] (plan.new_run_dir;
# runs written before the random part have none).
# The reference file of each tier in baselines/<sku>[/cuda-X.Y]: a run compares only with a run
# of its own tier (a full tier against a stress run would call every stress case dropped).
TIER_FILES = {"full": "results.json", "stress": "stress.json", "bat": "bat.json"}
RUN_KEY_RE = re.compile(r"^\d{8}-\d{6}(?:\.\d{3}-[A-Za-z0-9.-]*)?_[^_/]*_([^_/]+)_[^/]*$")


def read_results_file(path, what):
    """(Run, info) of a results.json for a comparison: every case type-checked, kept as a
    model.BaselineCase (reports/results_stream.py: 10^6 cases in bounded memory), so that a
    wrong-typed field, or a file beyond the limits (model.RESULTS_MAX_CASES, RESULTS_MAX_BYTES),
    is exit 2 naming it before any test runs. Raises Stop(EXIT_CONFIG)."""
    try:
        return results_stream.read_slim(path)
    except model.ResultsError as e:
        raise Stop(cmp.EXIT_CONFIG, f"bad {what}: {e}")


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


def tier_file(tier):
    return TIER_FILES.get(tier or "full", f"{tier}.json")


def reference_baseline(sku, runtime, tier="full"):
    """baselines/<sku>/cuda-X.Y/<tier file> for a runtime that has its own folder, else
    baselines/<sku>/<tier file> (the default toolkit's)."""
    own = os.path.join(common.ROOT, "baselines", sku, f"cuda-{runtime_name(runtime)}")
    if runtime and os.path.isdir(own):
        return os.path.join(own, tier_file(tier))
    return os.path.join(common.ROOT, "baselines", sku, tier_file(tier))


def latest_baseline(out, sku, runtime=None, tier="full"):
    """(path, Run) of the run of this tier stored last for sku under the same CUDA runtime whose
    verdict was reached (an INTERRUPTED or unreadable folder is passed over, with a note), or
    (None, None). A run that recorded no tier is a full one (the default)."""
    for path in stored_runs(out, sku):
        try:
            run, info = read_results_file(path, "earlier run")
        except Stop as e:
            say(f"note: --baseline auto passes over {path}: {e}")
            continue
        if info.get("sku") not in (None, sku):
            continue
        if info.get("exit_code") == cmp.EXIT_INTERRUPTED or info.get("verdict") == "INTERRUPTED":
            continue
        if not same_runtime(run, runtime) or (info.get("tier") or "full") != (tier or "full"):
            continue
        return path, run
    return None, None


def baseline_name(path):
    """How results.json names its baseline: relative to the checkout when it lies in it."""
    return in_checkout(path) or os.path.abspath(path)


def load_baseline(spec, out, sku, runtime=None, tier="full"):
    """Returns (Run or None, description). Raises Stop(EXIT_CONFIG) on a bad baseline.
    auto: the run of this SKU, CUDA runtime and tier stored last in --out (by when it was
    stored, not by its clock), else baselines/<sku>[/cuda-X.Y]/<tier file>; deleting the newest
    run folder falls back to the one before it. A reference baseline of another runtime is no
    baseline. A path is taken as given, whatever its tier."""
    if spec == "none":
        return None, "none"
    if spec == "auto":
        path, run = latest_baseline(out, sku, runtime, tier)
        if run is not None:
            return run, baseline_name(path)
        path = reference_baseline(sku, runtime, tier)
        rel = os.path.relpath(path, common.ROOT)
        if not os.path.lexists(path):
            return None, f"none (no earlier {tier or 'full'} run for {sku} in {in_checkout(out) or out} and no {rel})"
        run, _ = read_results_file(path, "baseline")
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
    run, _ = read_results_file(path, "baseline")
    return run, baseline_name(path)


def baseline_dest(sku, runtime):
    """The folder --write-baseline writes the tier's file into: baselines/<sku> when it holds no
    reference yet or this runtime's, else a folder of the runtime's own (baselines/<sku>/cuda-X.Y):
    one reference per runtime, never overwritten by another runtime's run. The folder's runtime
    is its full-tier reference's, else that of any tier's."""
    default = os.path.join(common.ROOT, "baselines", sku)
    present = [os.path.join(default, f) for f in TIER_FILES.values() if os.path.lexists(os.path.join(default, f))]
    path = os.path.join(default, "results.json") if os.path.lexists(os.path.join(default, "results.json")) \
        else (present[0] if present else None)
    if path is None or runtime is None:
        return default
    try:
        run, _ = read_results_file(path, "baseline")
    except Stop:
        return default
    if same_runtime(run, runtime):
        return default
    return os.path.join(default, f"cuda-{runtime_name(runtime)}")


# An absolute path in a line of text: what follows a '/' that starts a word, up to a separator.
ABSOLUTE_PATH_RE = re.compile(r"(?<![\w.~/-])/[^\s,;:()'\"]+")


def portable_command(command):
    """The command as a committed baseline records it: the bundle as BUNDLE, --out as runs, any
    other absolute path by its last part (no path of the machine that ran it)."""
    words, out = command.split(" "), []
    for i, w in enumerate(words):
        opt, eq, value = w.partition("=") if w.startswith("--") else ("", "", w)
        before = words[i - 1] if i else ""
        if os.path.isabs(value):
            value = ("BUNDLE" if "bundle" in (opt or before) else "runs" if (opt or before) == "--out"
                     else os.path.basename(value.rstrip("/")) or value)
        out.append(opt + eq + value)
    return " ".join(out)


def portable_text(text, out=None):
    """text with no absolute path of the machine that wrote it: --out (`out`) and what lies under
    it as runs/..., the checkout's paths relative to it, any other by its last part."""
    root = os.path.abspath(out).rstrip("/") if out else None

    def one(m):
        path = m.group(0)
        if root and (path == root or path.startswith(root + "/")):
            return "runs" + path[len(root):]
        return in_checkout(path) or os.path.basename(path.rstrip("/")) or path
    return ABSOLUTE_PATH_RE.sub(one, text)


def portable_info(info, out=None):
    """A run's info as a committed baseline keeps it (--draft-expectations, --write-baseline): no
    path of the machine that ran it, in the command or in any other line (the baseline it was
    compared with names the --out it looked in)."""
    result = {k: portable_text(v, out) if isinstance(v, str) else v for k, v in info.items()}
    result["command"] = portable_command(info.get("command", ""))
    if isinstance(info.get("expectations"), dict):
        result["expectations"] = {portable_text(k, out): v for k, v in info["expectations"].items()}
    if isinstance(result.get("first_night"), dict):
        result["first_night"] = {k: portable_text(v, out) if isinstance(v, str) else v
                                 for k, v in result["first_night"].items() if k != "draft_command"}
    return result
