"""A reproducer a driver team can run: `tools/qualify --repro CASE [--run RUN] [--bundle DIR]
[--archive FILE]` writes, for one case of a qualify run, one small .tar.gz that needs a Linux
machine with an NVIDIA driver and /bin/sh, and nothing of pagelock:

  pagelock-repro-<case>/
    README.md            what was seen (status, message, kernel-log lines, the machine: GPU,
                         driver, runtime) and what to run
    run.sh               the exact command: the case's binary with --gtest_filter of the case,
                         its run seed (PAGELOCK_SEED), --gtest_repeat (./run.sh N), the environment
                         the runner gave it (runner.json); says whether the recorded status came again
    bin/<binary>         the test binary of the case's target, only that one
    faults/libcuda.so.1  the fault layer's shim, only when the run injected a fault through it
    case.json            the case's record in results.json
    fingerprint.json     the run's machine fingerprint
    kernel-log.txt       the kernel-log lines the case had, when it had any
    <deviation>.cu       the standalone program of a known deviation the case's rule has
                         (docs/platforms/repro/), when the checkout has one

CASE is the case id the page shows (suites/x:y_test/Suite.Name) or an end of one that names a
single case (Suite.Name). RUN is a run folder, its results.json or a run key under --out; by
default the run stored last in --out that has the case. The archive goes to
RUN/repro/<case>.tar.gz unless --archive names another file. No GPU is needed to write it.
Exit codes: 0 written; 2 bad input (no such run or case, a bundle without the case's binary or
of another build than the run's: --force takes it anyway).
"""

import glob
import io
import json
import math
import os
import re
import shlex
import subprocess
import tarfile
import time

from reports import compare as cmp
from reports import htmlreport
from reports import model
from tools.qualification import common
from tools.qualification.common import Stop, say
from tools.runner import cases as runner_cases
from tools.runner import config as runner_config

REPRO_DIR = "repro"  # inside the run folder
SHIM = "libcuda.so.1"
# A libcuda.so.1 that reads this variable is pagelock's fault shim, not a driver.
SHIM_MARK = b"PAGELOCK_FAULT"
# Paths of the machine that ran the case: they mean nothing on another one.
MACHINE_PATHS = ("PAGELOCK_REAL_LIBCUDA",)
KERNEL_LOG = "kernel_log"


def run_repro(args):
    """`--repro CASE`: writes the archive; returns the exit code (raises Stop)."""
    run_dir, results = find_run(args.repro, args.run, args.out)
    try:
        run, info, doc = model.read_results(results)
    except model.ResultsError as e:
        raise Stop(cmp.EXIT_CONFIG, f"--repro: {e}")
    case = find_case(run, args.repro, results)
    bundle = bundle_dir(args.bundle, info)
    target, binary = case_binary(bundle, case, info, args.force)
    record = runner_record(run_dir)
    archive = args.archive or os.path.join(run_dir, REPRO_DIR, slug(case.id) + ".tar.gz")
    parts = Parts(run, info, doc, case, target, binary, record)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(archive)), exist_ok=True)
        size = write_archive(archive, parts)
    except OSError as e:
        raise Stop(cmp.EXIT_CONFIG, f"--repro: cannot write {archive}: {common.os_error_words(e, archive)}")
    top = slug(case.id)
    say(f"reproducer of {case.id} ({parts.status_line()}): {archive} ({size // 1024} KiB)")
    for note in parts.notes:
        say(f"note: {note}")
    say(f"on a machine with an NVIDIA driver: tar xzf {shlex.quote(os.path.basename(archive))} && "
        f"./{top}/run.sh [REPEAT]")
    common.SUMMARY.update(archive=archive, case=case.id, run_dir=run_dir)
    return 0


# ---------------------------------------------------------------------------------------------
# What goes in


def find_run(case_arg, run_arg, out):
    """(run folder, its results.json). run_arg: a folder, a results.json or a run key under out;
    None: the run stored last in out (by its results.json's time) that has the case."""
    if run_arg:
        for path in (run_arg, os.path.join(out, run_arg)):
            if os.path.isfile(path) and os.path.basename(path) == "results.json":
                return os.path.dirname(os.path.abspath(path)), path
            if os.path.isfile(os.path.join(path, "results.json")):
                return os.path.abspath(path), os.path.join(path, "results.json")
        raise Stop(cmp.EXIT_CONFIG, f"--run {run_arg}: no qualify run there (no results.json; nor in {out})")
    found = sorted(glob.glob(os.path.join(out, "*", "results.json")), key=os.path.getmtime, reverse=True)
    for path in found:
        try:
            run, _, _ = model.read_results(path)
        except model.ResultsError:
            continue
        if matching_cases(run, case_arg):
            return os.path.dirname(os.path.abspath(path)), path
    raise Stop(cmp.EXIT_CONFIG, f"--repro {case_arg}: no run in {out} has that case "
                                f"({len(found)} run(s) looked at; --run names one)")


def matching_cases(run, case_arg):
    """The case whose id is case_arg, else those whose id ends in '/' + case_arg or whose
    GoogleTest name is case_arg."""
    exact = [c for c in run.cases if c.id == case_arg]
    if exact:
        return exact
    return [c for c in run.cases if c.id.endswith("/" + case_arg) or c.gtest_name == case_arg]


def find_case(run, case_arg, results):
    found = matching_cases(run, case_arg)
    if len(found) == 1:
        return found[0]
    if not found:
        near = sorted(c.id for c in run.cases if case_arg.split("/")[-1].split(".")[-1] in c.id)[:5]
        raise Stop(cmp.EXIT_CONFIG, f"--repro {case_arg}: no such case in {results}"
                                    + (f"; did you mean {', '.join(near)}?" if near else ""))
    raise Stop(cmp.EXIT_CONFIG, f"--repro {case_arg}: {len(found)} cases match; give the whole id, e.g. "
                                + ", ".join(c.id for c in found[:3]))


def bundle_dir(bundle_arg, info):
    """--bundle, else the --bundle the run was made with (its command line records a path inside
    the checkout relative to it, any other as given: tried from here, then from the checkout),
    else the bundle qualify builds (build/bundle of the checkout)."""
    if bundle_arg:
        return bundle_arg
    try:
        words = shlex.split(info.get("command") or "")
    except ValueError:
        words = []
    for i, w in enumerate(words):
        value = w.split("=", 1)[1] if w.startswith("--bundle=") else (words[i + 1] if w == "--bundle"
                                                                     and i + 1 < len(words) else None)
        if value:
            tries = [value] if os.path.isabs(value) else [os.path.abspath(value), os.path.join(common.ROOT, value)]
            return next((t for t in tries if os.path.isfile(os.path.join(t, "manifest.json"))), tries[-1])
    return os.path.join(common.ROOT, "build", "bundle")


def case_binary(bundle, case, info, force):
    """(the manifest's target entry, the binary's path) of the case; refuses a bundle of another
    build than the run's, unless force."""
    try:
        with open(os.path.join(bundle, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        raise Stop(cmp.EXIT_CONFIG, f"--repro: {bundle}/manifest.json: {e} (--bundle names the run's bundle)")
    target = next((t for t in manifest.get("targets", []) if t.get("label") == case.target), None)
    if target is None:
        raise Stop(cmp.EXIT_CONFIG, f"--repro: the bundle {bundle} has no target {case.target}")
    binary = os.path.join(bundle, target["path"])
    if not os.path.isfile(binary):
        raise Stop(cmp.EXIT_CONFIG, f"--repro: {binary} is missing from the bundle")
    built = (manifest.get("info") or {}).get("commit")
    ran = (info.get("bundle") or {}).get("commit")
    if built and ran and built != ran and not force:
        raise Stop(cmp.EXIT_CONFIG, f"--repro: the bundle {bundle} is commit {built}, the run's was {ran}: "
                                    "its binary may not be the one that ran (--bundle the run's, or --force)")
    return target, binary


def runner_record(run_dir):
    """The runner's runner.json of the run (the environment, the time scale), {} without one."""
    try:
        with open(os.path.join(run_dir, "testlogs", runner_config.RUNNER_JSON), encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def slug(case_id):
    """A file name for a case id: suites/a:b_test/S.N -> b_test-S.N."""
    tail = case_id.split(":", 1)[-1]
    return ("pagelock-repro-" + re.sub(r"[^A-Za-z0-9._-]+", "-", tail).strip("-"))[:120]


class Parts:
    """What the archive says and runs, from the run's records."""

    def __init__(self, run, info, doc, case, target, binary, record):
        self.run, self.info, self.doc, self.case, self.target, self.binary = run, info, doc, case, target, binary
        self.fp = run.fingerprint
        self.notes = []
        self.change = (doc.get("comparison") or {}).get(case.id, "")
        self.run_seed = case.run_seed if case.run_seed is not None else model.run_seed_of(self.fp)
        if self.run_seed is None:
            self.notes.append("the run recorded no run seed: run.sh runs the binary with a fresh one")
        elif case.seed_replays is False:
            self.notes.append(f"the run seed {self.run_seed} does not give the case its recorded seed {case.seed}")
        config = record.get("config") or {}
        self.time_scale = config.get("time_scale") or 1.0
        env = dict(record.get("environment") or {})
        if not record:
            self.notes.append("the run folder has no testlogs/runner.json: the environment of the run is unknown "
                              "(run.sh sets the seed and the time scale only)")
        env.update({k: str(v) for k, v in (config.get("env") or {}).items()})
        self.shim = None
        lib_path = env.pop("LD_LIBRARY_PATH", "")
        for d in filter(None, lib_path.split(":")):
            candidate = os.path.join(d, SHIM)
            if _is_shim(candidate):
                self.shim = candidate
                break
        if lib_path and not self.shim:
            self.notes.append(f"LD_LIBRARY_PATH was {lib_path} (not set again: a path of that machine)")
        if self.shim is None and env.get("PAGELOCK_FAULT") and lib_path:
            self.notes.append(f"PAGELOCK_FAULT={env['PAGELOCK_FAULT']} was set but no fault shim is left in "
                              f"{lib_path}: the fault is not injected again")
        for k in MACHINE_PATHS:
            if k in env:
                self.notes.append(f"{k}={env.pop(k)} not set again (a path of that machine)")
        env.pop("LD_PRELOAD", None)
        self.env = env
        self.timeout_s = max(1, math.ceil(float(self.target.get("timeout_s", 300)) * float(self.time_scale)))

    def status_line(self):
        return f"{self.case.status}" + (f", {self.change}" if self.change else "")

    def filter(self):
        return runner_cases.exact_pattern(self.case.gtest_name)

    def command(self):
        """The command run.sh runs, as one line a reader can paste (in the archive's folder)."""
        env = [f"{k}={model.single_quoted(v)}" for k, v in sorted(self.env.items())]
        if self.run_seed is not None:
            env.append(f"{model.SEED_ENV}={self.run_seed}")
        env.append(f"PAGELOCK_TIME_SCALE={self.time_scale}")
        if self.shim:
            env.append("LD_LIBRARY_PATH=./faults")
        return " ".join(env + [f"./bin/{os.path.basename(self.binary)}",
                               f"--gtest_filter={model.single_quoted(self.filter())}", "--gtest_repeat=1"])

    def kernel_lines(self):
        return "\n".join(f"[{k}]\n{v.rstrip()}" for k, v in sorted(self.case.logs.items())
                         if k.startswith(KERNEL_LOG) and v.strip())

    def deviation_programs(self):
        """The standalone programs of docs/platforms/repro/ for the case's rules (r58.cu, ...)."""
        folder = os.path.join(common.ROOT, "docs", "platforms", "repro")
        out = []
        for rule in self.case.rules:
            out += sorted(glob.glob(os.path.join(folder, rule.lower() + ".cu"))
                          + glob.glob(os.path.join(folder, rule.lower() + "-*.cu")))
        return out

    def libraries(self):
        """The shared libraries the binary needs (ldd), or '' where ldd cannot tell."""
        try:
            p = subprocess.run(["ldd", self.binary], capture_output=True, text=True, encoding="utf-8",
                               errors="replace", timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        if p.returncode != 0:
            return ""
        return ", ".join(sorted({line.split()[0] for line in p.stdout.splitlines() if line.split()
                                 and not line.split()[0].startswith("/")}))


def _is_shim(path):
    try:
        with open(path, "rb") as f:
            return SHIM_MARK in f.read(64 << 20)
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# What comes out


def script(p):
    """run.sh: POSIX sh, no pagelock. Runs the case REPEAT times (its first argument, default 1)
    with the run's environment, into out/ beside it, and says whether the recorded status came
    again; exits with the binary's status."""
    c = p.case
    name = os.path.basename(p.binary)
    q = model.single_quoted
    lines = [
        "#!/bin/sh",
        f"# pagelock reproducer of {c.id}",
        f"# (run {p.info.get('run_key', '?')}: {p.status_line()}). See README.md.",
        "# Usage: ./run.sh [REPEAT]   REPEAT: --gtest_repeat (default 1; e.g. 20 for an intermittent failure)",
        "set -u",
        'here="$(cd "$(dirname "$0")" && pwd)"',
        'repeat="${1:-1}"',
        'out="$here/out"',
        'rm -rf "$out" && mkdir -p "$out/tmp" || exit 2',
        "# Nothing of this shell changes which cases run (as pagelock's runner clears them):",
        "for v in $(env | sed -n -e 's/^\\(GTEST_[A-Za-z0-9_]*\\)=.*/\\1/p' -e 's/^\\(TESTBRIDGE_[A-Za-z0-9_]*\\)=.*/\\1/p'); "
        "do unset \"$v\"; done",
        "unset " + " ".join(runner_config.CLEARED_ENV_NAMES),
        "# The environment the runner gave the binary:",
    ]
    lines += [f"export {k}={q(v)}" for k, v in sorted(p.env.items())]
    if p.run_seed is not None:
        lines.append(f"export {model.SEED_ENV}={q(p.run_seed)}  # the run seed: the case draws the same inputs")
    else:
        lines.append(f"unset {model.SEED_ENV}  # the run recorded none")
    lines += [f"export PAGELOCK_TIME_SCALE={q(p.time_scale)}",
              'export TEST_TMPDIR="$out/tmp"',
              f"unset {model.JOURNAL_ENV}"]
    if p.shim:
        lines.append('export LD_LIBRARY_PATH="$here/faults${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"'
                     "  # the fault layer's shim, as in the run")
    lines += [
        f"limit=$(( {p.timeout_s} * repeat ))  # the target's time limit, once per repetition",
        'if command -v timeout >/dev/null 2>&1; then run="timeout -k 5 $limit"; else run=""; fi',
        f'{{ $run "$here/bin/{name}" --gtest_filter={q(p.filter())} --gtest_repeat="$repeat" '
        '--gtest_output="xml:$out/result.xml"; echo $? > "$out/exit_status"; } 2>&1 | tee "$out/output.txt"',
        'rc=$(cat "$out/exit_status")',
        'if [ -n "$run" ] && [ "$rc" -eq 124 ]; then seen=TIMEOUT',
        # as the runner judges an end: a signal, or an exit other than GoogleTest's 0 and 1
        'elif [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then seen=CRASH',
        f'elif grep -q -e \'name="{model.PROP_STATUS}" value="NOT_SUPPORTED"\' -e \'message="{model.NOT_SUPPORTED_PREFIX}\' '
        '"$out/result.xml" 2>/dev/null; '
        'then seen=NOT_SUPPORTED',
        f'elif [ "$rc" -eq 0 ] && grep -q \'name="{model.PROP_STATUS}" value="WARN"\' "$out/result.xml" 2>/dev/null; '
        'then seen=WARN',
        'elif [ "$rc" -eq 0 ] && grep -q \'result="skipped"\' "$out/result.xml" 2>/dev/null; then seen=SKIP',
        'elif [ "$rc" -eq 0 ]; then seen=PASS',
        "else seen=FAIL",
        "fi",
        f"recorded={q(c.status)}",
        'echo "pagelock reproducer: recorded $recorded, this run $seen (exit status $rc, $repeat repetition(s))"',
        'if [ "$seen" = "$recorded" ]; then echo "pagelock reproducer: REPRODUCED"; '
        'else echo "pagelock reproducer: NOT REPRODUCED"; fi',
        'exit "$rc"',
    ]
    return "\n".join(lines) + "\n"


def _version(v):
    """'13000' (CUDA's integer) -> '13.0'."""
    try:
        n = int(v)
        return f"{n // 1000}.{n % 1000 // 10}"
    except (TypeError, ValueError):
        return v or "?"


def readme(p, programs, libraries):
    c, fp, info = p.case, p.fp, p.info
    rules = htmlreport.rules_table()
    name = os.path.basename(p.binary)
    top = slug(c.id)
    klog = p.kernel_lines()
    out = [
        f"# pagelock reproducer: `{c.gtest_name}`",
        "",
        f"Case `{c.id}` of pagelock run `{info.get('run_key', '?')}` ({info.get('started_at', '?')}, "
        f"tier {info.get('tier', '?')}, harness commit `{(info.get('bundle') or {}).get('commit', '?')}`"
        + (f", label \"{info['label']}\"" if info.get("label") else "") + ").",
        "",
        "## What was seen",
        "",
        f"- status: **{c.status}**" + (f", against the expectations and the baseline **{p.change}**" if p.change else "")
        + (f"; attempts {' '.join(map(str, c.attempts))} (each with the same seed)" if len(c.attempts) > 1 else ""),
    ]
    for r in c.rules:
        out.append(f"- rule {r}: {rules.get(r, ('', 'not in suites/rules.tsv'))[1]}")
    out += ["", "Message:", "", "```", (c.message or c.reason or "(none)").rstrip(), "```", ""]
    if c.first_failure:
        out += ["The first failed attempt said:", "", "```", c.first_failure.rstrip(), "```", ""]
    out += ["Kernel log lines while the case ran" + (" (also in `kernel-log.txt`):" if klog else ": none recorded."), ""]
    if klog:
        out += ["```", klog, "```", ""]
    out += [
        "## The machine",
        "",
        f"- GPU: {fp.get('gpu0_name', '?')} (x{fp.get('gpu_count', '?')}), PCI {fp.get('gpu0_pci_bus_id', '?')}, "
        f"PCIe {fp.get('gpu0_pcie_link', '?')}, VBIOS {fp.get('gpu0_vbios', '?')}",
        f"- driver: {fp.get('nvidia_driver', '?')} (CUDA driver API {_version(fp.get('cuda_driver_version'))})",
        f"- CUDA runtime the binary was built with: {_version(fp.get('cuda_runtime_version'))}"
        + (f"; rule profile {fp['rule_profile']}" if fp.get("rule_profile") else ""),
        f"- host: {fp.get('kernel', '?')}; host facts: {fp.get('host_facts', '(not recorded)') or 'none'}",
        "",
        "`fingerprint.json` has every fact recorded; `case.json` the case's whole record.",
        "",
        "## Run it",
        "",
        "Needs Linux x86_64 with an NVIDIA driver (libcuda.so.1) and /bin/sh; nothing of pagelock"
        + (f". The binary links {libraries}." if libraries else "."),
        "",
        "```sh",
        f"tar xzf {top}.tar.gz && ./{top}/run.sh        # once",
        f"./{top}/run.sh 20                              # 20 repetitions, for an intermittent failure",
        "```",
        "",
        "`run.sh` runs exactly this case, with the run seed the case drew its inputs from and the",
        "environment pagelock's runner gave the binary; its output goes to the terminal and `out/`",
        "(output.txt, result.xml), and its last lines say whether the recorded status came again",
        "(REPRODUCED or NOT REPRODUCED). It exits with the binary's status. The command, as one line:",
        "",
        "```sh",
        p.command(),
        "```",
    ]
    if p.shim:
        out += ["", f"The run injected a fault through pagelock's shim (`PAGELOCK_FAULT={p.env.get('PAGELOCK_FAULT', '')}`):"
                " `faults/libcuda.so.1` goes first on the library path and forwards every other call to the"
                " driver. Without it the case runs against the driver alone."]
    if programs:
        out += ["", "The standalone program of this known deviation (only the CUDA toolkit needed):", ""]
        out += [f"- `{os.path.basename(x)}`: `nvcc {os.path.basename(x)} -o {os.path.basename(x)[:-3]} && "
                f"./{os.path.basename(x)[:-3]}` (exit 0 as documented, 1 the deviation, 2 could not test)"
                for x in programs]
    if p.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in p.notes]
    out += ["", "With a pagelock checkout or bundle, the same case:", "", "```sh", c.replay_command(), "```", ""]
    return "\n".join(out)


def write_archive(path, p):
    """Writes the .tar.gz; returns its size in bytes."""
    top = slug(p.case.id)
    programs = p.deviation_programs()
    texts = {
        "README.md": readme(p, programs, p.libraries()),
        "run.sh": script(p),
        "case.json": json.dumps(p.case.to_json(), indent=1, ensure_ascii=False) + "\n",
        "fingerprint.json": json.dumps(p.fp, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
    }
    if p.kernel_lines():
        texts["kernel-log.txt"] = p.kernel_lines() + "\n"
    tmp = path + ".tmp"
    with tarfile.open(tmp, "w:gz", dereference=True) as tar:
        for name, text in texts.items():
            data = text.encode("utf-8")
            member = tarfile.TarInfo(f"{top}/{name}")
            member.size, member.mode = len(data), 0o755 if name.endswith(".sh") else 0o644
            member.mtime = time.time()
            tar.addfile(member, io.BytesIO(data))
        tar.add(p.binary, f"{top}/bin/{os.path.basename(p.binary)}", filter=_executable)
        if p.shim:
            tar.add(p.shim, f"{top}/faults/{SHIM}", filter=_executable)
        for x in programs:
            tar.add(x, f"{top}/{os.path.basename(x)}", filter=_readable)
    os.replace(tmp, path)
    return os.path.getsize(path)


def _executable(member):
    member.mode, member.uid, member.gid, member.uname, member.gname = 0o755, 0, 0, "", ""
    return member


def _readable(member):
    member.mode, member.uid, member.gid, member.uname, member.gname = 0o644, 0, 0, "", ""
    return member
