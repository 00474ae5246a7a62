"""The mutation tool's inputs: the bundle (its manifest and the targets a tag filter selects),
the fault catalogues (catalogue.tsv: faults; conforming.tsv: conforming variations), the
survivor notes and the fault shim."""

import fnmatch
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CATALOGUES = {"faults": "catalogue.tsv", "conforming": "conforming.tsv"}


class UsageError(Exception):
    pass


@dataclass
class Inputs:
    """What a mutation run works from, every part checked."""
    bundle: str  # absolute
    manifest: dict
    out: str  # absolute
    catalogue: list  # the rows to run (faults and variations)
    catalogue_path: str  # the catalogue files, comma-separated
    shim: str  # the folder holding the shim's libcuda.so.1
    notes: dict = field(default_factory=dict)  # survivor explanations by fault name
    reference: dict = None  # --reference's statuses by case id
    pool_targets: list = field(default_factory=list)
    serial_targets: list = field(default_factory=list)  # bandwidth targets: run alone


def read_tsv(path):
    """Rows of a TSV file with a header line, as dicts."""
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    if not lines:
        raise UsageError(f"{path}: empty")
    head = lines[0].split("\t")
    rows = []
    for n, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(head):
            raise UsageError(f"{path}:{n}: {len(cells)} columns, expected {len(head)}")
        rows.append(dict(zip(head, cells)))
    return rows


def first_existing(*paths):
    for p in paths:
        if p and os.path.exists(p):
            return p
    return None


# ---------------------------------------------------------------------------------------------
# The bundle

def check_bundle(bundle_arg):
    """The bundle's absolute path; raises UsageError when it is not a bundle."""
    bundle = os.path.abspath(bundle_arg)
    if not os.path.isfile(os.path.join(bundle, "manifest.json")):
        raise UsageError(f"{bundle_arg}: not a bundle (no manifest.json)")
    if not os.path.isfile(os.path.join(bundle, "tools", "runner", "runner.py")):
        raise UsageError(f"{bundle_arg}: no tools/runner/runner.py")
    return bundle


def read_manifest(bundle):
    with open(os.path.join(bundle, "manifest.json"), encoding="utf-8") as f:
        return json.load(f)


def select_targets(manifest, tags_expr):
    """The runner's tag filter ('gpu,-stress': with gpu, without stress)."""
    want = [t for t in tags_expr.split(",") if t and not t.startswith("-")]
    drop = [t[1:] for t in tags_expr.split(",") if t.startswith("-")]
    out = []
    for t in manifest["targets"]:
        tags = set(t.get("tags", []))
        if want and not any(w in tags for w in want):
            continue
        if any(d in tags for d in drop):
            continue
        out.append(t)
    return out


# ---------------------------------------------------------------------------------------------
# The shim

def shim_unloadable(path):
    """Why the shim at path cannot be loaded (not an ELF object, or dlopen fails in a child
    process), or None. A truncated or corrupt shim would otherwise make every control run look
    like a harness that ignores LD_LIBRARY_PATH."""
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return "not an ELF shared object"
    except OSError as e:
        return e.strerror or str(e)
    probe = "import ctypes, sys; ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)"
    try:
        p = subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True,
                           encoding="utf-8", errors="replace",
                           timeout=30, env={k: v for k, v in os.environ.items() if k != "PAGELOCK_FAULT"})
    except subprocess.TimeoutExpired:
        return "dlopen did not return within 30 s"
    if p.returncode != 0:
        return "dlopen failed: " + (p.stderr.strip().splitlines() or ["?"])[-1][:200]
    return None


def find_shim(bundle, shim_arg, out):
    if shim_arg:
        if not os.path.isfile(os.path.join(shim_arg, "libcuda.so.1")):
            raise UsageError(f"--shim {shim_arg}: no libcuda.so.1 there")
        return os.path.abspath(shim_arg)
    shipped = os.path.join(bundle, "faults", "libcuda.so.1")
    if os.path.isfile(shipped):
        why = shim_unloadable(shipped)
        if not why:
            return os.path.join(bundle, "faults")
        if not os.path.isfile(os.path.join(REPO, "tools", "faults", "build_shim.sh")):
            print(f"mutation: the bundle's shim {shipped} will not load ({why}) and there is no "
                  "tools/faults/build_shim.sh to rebuild it: using it as it is", file=sys.stderr, flush=True)
            return os.path.join(bundle, "faults")
        print(f"mutation: the bundle's shim {shipped} will not load ({why}); rebuilding it with "
              "tools/faults/build_shim.sh", file=sys.stderr, flush=True)
    build = os.path.join(REPO, "tools", "faults", "build_shim.sh")
    if not os.path.isfile(build):
        raise UsageError(f"no shim: {bundle}/faults/libcuda.so.1 is missing and there is no "
                         f"tools/faults/build_shim.sh to build one (pass --shim DIR)")
    dest = os.path.join(out, "shimlib")
    p = subprocess.run([build, dest], capture_output=True, text=True, encoding="utf-8", errors="replace")
    if p.returncode != 0:
        # A full disk: the compiler says so somewhere above its last words ("g++ failed").
        full = next((l.strip() for l in p.stderr.splitlines() if "No space left on device" in l), "")
        raise UsageError(f"building the shim failed: no space left on {dest} ({full[-300:]})" if full else
                         f"building the shim failed: {p.stderr.strip()[-400:]}")
    return dest


# ---------------------------------------------------------------------------------------------
# The catalogues

def catalogue_file(bundle, name):
    """The bundle's copy of a named catalogue, else the one next to this tool, else None."""
    return first_existing(os.path.join(bundle, "faults", CATALOGUES[name]),
                          os.path.join(REPO, "tools", "faults", CATALOGUES[name]))


def read_catalogue(path):
    """Rows of one catalogue file, each marked with the catalogue it belongs to: a file with a
    'justification' column holds conforming variations (conforming.tsv), any other faults. A
    variation's scope (targets, excluded, env) is checked here: a malformed one is bad usage."""
    rows = read_tsv(path)
    for r in rows:
        for key in ("name", "rule", "family", "kind", "description"):
            if key not in r:
                raise UsageError(f"{path}: no column '{key}'")
        r["catalogue"] = "conforming" if "justification" in r else "faults"
        if r["catalogue"] == "conforming":
            try:
                target_scope(r), excluded_cases(r), run_env(r)
            except ValueError as e:
                raise UsageError(f"{path}: {r['name']}: {e}") from None
    return rows


def load_catalogue(bundle, catalogue_arg):
    """(rows, paths): --catalogue faults (the default), conforming, both, or a TSV path."""
    arg = catalogue_arg or "faults"
    if arg in ("faults", "conforming", "both"):
        names = ["faults", "conforming"] if arg == "both" else [arg]
        paths = []
        for name in names:
            path = catalogue_file(bundle, name)
            if not path:
                raise UsageError(
                    f"no {CATALOGUES[name]} in {bundle}/faults/ or tools/faults/ (a bundle made "
                    "before it was listed in tools/bundle.py's FAULT_FILES: refresh the layer "
                    "with tools/faults/add_to_bundle.py, or pass --catalogue PATH)")
            paths.append(path)
    elif os.path.isfile(arg):
        paths = [arg]
    else:
        raise UsageError(f"--catalogue {arg}: neither faults, conforming, both nor a file")
    rows = [r for path in paths for r in read_catalogue(path)]
    return rows, ",".join(paths)


def pick_faults(catalogue, faults_arg, bundle, catalogue_arg, catalogue_path):
    """The rows --faults names (all of them for 'all'), in its order; raises UsageError on a
    name the catalogue does not know."""
    if faults_arg == "all":
        return catalogue
    wanted = [f for f in faults_arg.split(",") if f]
    known = {f["name"]: f for f in catalogue}
    unknown = [f for f in wanted if f not in known]
    if unknown:
        hint = other_catalogue_hint(bundle, catalogue_arg, unknown)
        raise UsageError(f"unknown fault(s): {', '.join(unknown)} (see {catalogue_path}{hint})")
    return [known[f] for f in wanted]


def other_catalogue_hint(bundle, chosen, unknown):
    """'; --catalogue conforming or both has X' when names unknown to the chosen catalogue are
    in the other one (a variation asked for under the default), else ''."""
    other = {"faults": "conforming", "conforming": "faults"}.get(chosen)
    path = other and catalogue_file(bundle, other)
    found = [r["name"] for r in read_catalogue(path) if r["name"] in unknown] if path else []
    return f"; --catalogue {other} or both has {', '.join(found)}" if found else ""


def is_variation(row):
    return row.get("catalogue") == "conforming"


# A variation's scope (conforming.tsv's targets, excluded and env columns; older files lack them,
# which reads as no scope). The shim changes answers, not hardware: where a variation's answer
# would make a case act on it against the real device (a kernel reading malloc memory because
# attribute 88 now says it can), that case is excluded, not judged; where it would send a whole
# suite's work over a link that cannot carry it, the variation names the targets it may run.

def target_scope(row):
    """The compiled regex of the target labels a variation may run against, or None (every
    target it reaches). ValueError for a bad regex."""
    text = (row.get("targets") or "").strip()
    if not text:
        return None
    try:
        return re.compile(text)
    except re.error as e:
        raise ValueError(f"targets '{text}': {e}") from None


def excluded_cases(row):
    """[(pattern, why)] of a variation's excluded column: 'Pattern: why; Pattern: why', each
    pattern a glob over 'Suite.Case' (any target, any instantiation prefix) or over the whole case
    id. ValueError for an entry without a reason."""
    out = []
    for entry in (row.get("excluded") or "").split(";"):
        if not entry.strip():
            continue
        pattern, sep, why = entry.strip().partition(": ")
        if not sep or not pattern.strip() or not why.strip() or " " in pattern.strip():
            raise ValueError(f"excluded '{entry.strip()}': not 'Suite.Case: why'")
        out.append((pattern.strip(), why.strip()))
    return out


def excluded_by(case_id, patterns):
    """The (pattern, why) of `patterns` that excludes a case id ('suites/a:a_test/Suite.Case',
    'suites/a:a_test/Kind/Suite.Case/Param'), or None."""
    for pattern, why in patterns:
        if fnmatch.fnmatchcase(case_id, pattern) or fnmatch.fnmatchcase(case_id, "*/" + pattern) \
                or fnmatch.fnmatchcase(case_id, "*/" + pattern + "/*"):
            return pattern, why
    return None


def run_env(row):
    """{name: value} a variation's runs get on top of the tool's environment (its env column,
    'NAME=value NAME=value'). ValueError for a setting that is not NAME=value."""
    env = {}
    for setting in (row.get("env") or "").split():
        name, sep, value = setting.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"env '{setting}': not NAME=value")
        env[name] = value
    return env


def rules_of(row):
    """The rule ids a catalogue row names ('R27,R26' in a variation's rule column)."""
    return {r.strip() for r in row["rule"].split(",") if r.strip()}


def load_split(bundle):
    """{fault name: {"half": "tuning"|"heldout", "shape": ..., "batch": ..., "blind": bool}} from
    faults/split.tsv (the fixed split of the catalogue by a hash of each name, and the batch each
    fault came in; generated by tools/faults/tables.py); {} when there is none. An older
    split.tsv without the batch columns gives an empty batch."""
    path = first_existing(os.path.join(bundle, "faults", "split.tsv"),
                          os.path.join(REPO, "tools", "faults", "split.tsv"))
    if not path:
        return {}
    return {r["name"]: {"half": r.get("half", ""), "shape": r.get("shape", ""),
                        "batch": r.get("batch", ""), "blind": r.get("blind") == "yes"}
            for r in read_tsv(path)}


def load_survivor_notes(bundle):
    path = first_existing(os.path.join(bundle, "faults", "survivors.tsv"),
                          os.path.join(REPO, "tools", "faults", "survivors.tsv"))
    if not path:
        return {}
    return {r["name"]: r["explanation"] for r in read_tsv(path) if "explanation" in r}
