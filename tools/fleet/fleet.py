#!/usr/bin/env python3
"""pagelock fleet: nightly qualification of a GPU lab through Slurm and a shared history.

  tools/fleet/fleet submit --bundle DIR --shared DIR --history URL --label TEXT
        [--tier bat|full|stress] [--seed N] [--partition P] [--constraint C] [--gres gpu[:type][:n]]
        [--per-sku] [--time HH:MM:SS] [--night YYYY-MM-DD] [--night-tz ZONE] [--allow-no-gpu]
        [--sbatch-arg ARG]... [--dry-run] [-- QUALIFY_ARGS...]
  tools/fleet/fleet status --shared DIR --label TEXT [--history URL] [--wait SECONDS] [--json]
  tools/fleet/fleet report --history URL (--label TEXT | --night YYYY-MM-DD) [--shared DIR]
        [--html F] [--json F]

submit resolves the nodes the selection targets (sinfo: partition, constraint, GRES type and
count), leaves out drained and down nodes (listed, with Slurm's reason), and stores that roster
in the shared history: the hosts the night expects. It stages the bundle's qualification tools
under SHARED/<label>/ and submits ONE JOB PER NODE, pinned to it (--nodelist), named
pagelock-node-<node> with --dependency=singleton, so Slurm can neither run two of a night's tasks
on one node nor two nights' tasks on a node at once. A task runs `qualify --bundle`, and stores
its run in the history with the node's name and the submission's night, also when it is
stopped (scancel, time limit, requeue: qualify keeps the finished cases, marked INTERRUPTED); a
requeued attempt (same node) supersedes it. The Slurm log (logs/<node>.out) appends across
requeues. A task exits 0 when its run is stored, whatever the verdict (the verdict is in the
history), 1 when nothing could be stored: Slurm's own failure counts are infrastructure only.

status and report key every row by host of the roster: a host without a complete run is
MISSING, with Slurm's reason (sacct --duplicates where accounting exists, else scontrol: NODE_FAIL,
TIMEOUT, CANCELLED, requeued, pending on a dependency, node down or drained).

Credentials: the history URL may not hold a password (it would be in every task's environment,
the job's saved environment and the shared folder): use ~/.pgpass or $PGPASSFILE, or a service
(postgresql:///?service=NAME with $PGSERVICEFILE). The URL goes to the tasks in a mode-600 file,
never in argv; fleet.json (mode 600) holds it redacted. A SQLite history on a network file system
is refused (its WAL mode does not work there).

Exit codes:
  submit  0 submitted (prints one job id per node); 1 sbatch or the history failed; 2 bad usage
          (a --constraint other than features joined by & and | included)
  status  0 every host of the roster has a complete run in the history; 1 a host is MISSING
          (not run, lost, interrupted, not stored, drained/down at submit); 2 bad usage;
          6 tasks still pending or running (none missing for good yet)
  report  0 written, every expected host qualified (or failed only as expected); 1 database
          unreachable or failed; 2 bad usage, a schema newer (or older: migrate) than this tool;
          3 written, a host regressed (a new failure); 4 no run and no
          roster for that label or night; 5 written, a host is missing and none regressed
"""

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.fleet.fleet"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from reports import cliargs
from reports import history
from tools.fleet import report as fleet_report

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_EMPTY, EXIT_RUNNING = 0, 1, 2, 4, 6
# What a task needs from the repository besides the bundle.
STAGED = ["tools/__init__.py", "tools/qualify.py", "tools/qualification", "tools/runner", "reports",
          "expectations", "baselines"]
# Node states a night cannot use: left out of the roster's tasks, listed as excluded.
UNUSABLE = ("drain", "drng", "down", "fail", "maint", "not_responding", "no_respond", "future", "power_down",
            "powered_down", "reboot", "inval", "unknown")
NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "ceph", "cephfs", "beegfs", "9p",
              "glusterfs", "afs", "panfs", "wekafs", "virtiofs")
LIVE = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED",
        "REQUEUE_HOLD", "REQUEUE_FED", "SIGNALING", "STAGE_OUT")


class UsageError(Exception):
    pass


def say(msg, err=False):
    print(f"fleet: {msg}", file=sys.stderr if err else sys.stdout, flush=True)


def slug(label):
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.")
    if not s:
        raise UsageError(f"--label {label!r} has no usable characters for a folder name")
    return s


def python_for(url):
    """An interpreter that can open the history: for postgresql:// one that imports psycopg2
    (Debian's /usr/bin/python3 does; a separately installed python3 may not)."""
    cands = [os.environ.get("PAGELOCK_PYTHON"), sys.executable, "/usr/bin/python3", shutil.which("python3")]
    cands = [c for c in cands if c and os.path.exists(c)]
    if not history.is_url(url):
        return cands[0]
    for c in cands:
        if subprocess.run([c, "-c", "import psycopg2"], capture_output=True).returncode == 0:
            return c
    raise UsageError(f"no Python here imports psycopg2, which a postgresql:// history needs "
                     f"(install Debian's python3-psycopg2; tried {', '.join(cands)})")


def run_cmd(argv, timeout=60, env=None):
    try:
        return subprocess.run(argv, capture_output=True, text=True,
                              encoding="utf-8", errors="replace", timeout=timeout, env=env)
    except FileNotFoundError:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: not found (is slurm-client installed?)")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, "", f"{argv[0]}: no answer in {timeout} s")


GRES_RE = re.compile(r"gpu(?::([A-Za-z][A-Za-z0-9_.-]*))?(?::(\d+))?")


def parse_gres(spec):
    """'gpu:h200:2' -> ('h200', 2); 'gpu:1' -> (None, 1); 'gpu:h200' -> ('h200', 1); 'gpu' -> (None, 1)."""
    m = GRES_RE.fullmatch(spec or "")
    if not m:
        raise UsageError(f"--gres {spec!r}: expected gpu, gpu:<n>, gpu:<type> or gpu:<type>:<n>")
    count = int(m.group(2)) if m.group(2) else 1
    if count < 1:
        raise UsageError(f"--gres {spec!r}: the count must be >= 1")
    return m.group(1), count


def node_gpus(gres):
    """{type or '': count} of an sinfo GRES field: 'gpu:h200:4(S:0-1),gpu:a100:2,gpu:1'."""
    out = {}
    for part in (gres or "").split(","):
        fields = part.split("(")[0].split(":")
        if fields[0] != "gpu":
            continue
        typ, n = "", 1
        if len(fields) == 2:
            if fields[1].isdigit():
                n = int(fields[1])
            else:
                typ = fields[1]
        elif len(fields) >= 3:
            typ, n = fields[1], int(fields[2]) if fields[2].isdigit() else 1
        out[typ] = out.get(typ, 0) + n
    return out


def gpu_types(gres):
    """GPU types in an sinfo GRES field: 'gpu:h200:4(S:0-1),gpu:a100:2' -> ['h200', 'a100']."""
    return [t for t in node_gpus(gres) if t]


def gres_matches(gres_field, want_type, want_count):
    have = node_gpus(gres_field)
    n = have.get(want_type, 0) if want_type else sum(have.values())
    return n >= want_count


FEATURE_RE = re.compile(r"[A-Za-z0-9_.-]+")


def parse_constraint(spec):
    """'a&b|c' -> [('&', 'a'), ('&', 'b'), ('|', 'c')]: Slurm's AND and OR of node features. The
    roster must hold only the nodes Slurm would run the jobs on, so what cannot be evaluated here
    (brackets, counts, parentheses, NOT) is refused rather than passed through unfiltered."""
    terms, op = [], "&"
    for i, tok in enumerate(re.split(r"([&|])", spec or "")):
        if i % 2:
            op = tok
        elif FEATURE_RE.fullmatch(tok):
            terms.append((op, tok))
        else:
            raise UsageError(f"--constraint {spec!r}: this tool evaluates node features joined by & (and) or | "
                             "(or), as Slurm writes them; brackets, counts (*N), parentheses and ! are not "
                             "supported here (select with --partition or --gres, or one feature)")
    return terms


def constraint_matches(terms, features):
    """Slurm's evaluation: left to right, without precedence ('a|b&c' is '(a|b)&c')."""
    have = set((features or "").split(","))
    ok = True
    for op, feature in terms:
        ok = (ok and feature in have) if op == "&" else (ok or feature in have)
    return ok


def sku_of_node(features, gres):
    for f in (features or "").split(","):
        if f.startswith("nvidia-"):
            return f
    types = gpu_types(gres)
    return f"nvidia-{types[0]}" if types else None


def unusable(state):
    st = (state or "").lower()
    return st.endswith("*") or any(w in st for w in UNUSABLE)


def select_nodes(args, run=run_cmd):
    """(targets, excluded): the nodes of the selection from sinfo, each {host, features, gres,
    sku, state, reason}; drained, down and not-responding nodes go to `excluded`."""
    cmd = ["sinfo", "-h", "-N", "-o", "%N|%f|%G|%P|%T|%E"]
    if args.partition:
        cmd += ["-p", args.partition]
    r = run(cmd)
    if r.returncode != 0:
        raise UsageError(f"sinfo failed: {r.stderr.strip()}")
    want_type, want_count = parse_gres(args.gres) if args.gres else (None, 0)
    terms = parse_constraint(args.constraint) if args.constraint else None
    nodes = {}
    for line in r.stdout.splitlines():
        name, feats, gres, _, state, reason = (line.split("|") + [""] * 5)[:6]
        if not name or name in nodes:
            continue  # a node in two partitions is listed twice
        if terms and not constraint_matches(terms, feats):
            continue
        if args.gres and not gres_matches(gres, want_type, want_count):
            continue
        nodes[name] = {"host": name, "features": feats, "gres": gres, "sku": sku_of_node(feats, gres),
                       "state": state, "reason": reason if reason not in ("none", "") else None}
    targets = [n for n in nodes.values() if not unusable(n["state"])]
    excluded = [dict(n, reason=f"{n['state']}" + (f" ({n['reason']})" if n["reason"] else "")) for n in nodes.values()
                if unusable(n["state"])]
    return sorted(targets, key=lambda n: n["host"]), sorted(excluded, key=lambda n: n["host"])


def filesystem_type(path, mounts="/proc/mounts"):
    """The type of the file system holding `path` (the longest mount point above it)."""
    path = os.path.realpath(path)
    best, kind = "", ""
    try:
        with open(mounts, encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                point = parts[1].replace("\\040", " ")
                if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
                    best, kind = point, parts[2]
    except OSError:
        pass
    return kind


def check_history_target(target, mounts="/proc/mounts"):
    """A fleet history must be reachable from every node and safe to share: no password in the
    URL, no SQLite file on a network file system."""
    if history.is_url(target):
        if history.has_password(target):
            raise UsageError(
                f"--history {history.redact(target)}: the URL holds a password, which would reach every task's "
                "environment, Slurm's saved job environment and the shared folder. Put it in ~/.pgpass or a "
                "$PGPASSFILE (mode 600), or use a service: postgresql:///?service=NAME with $PGSERVICEFILE")
        return
    kind = filesystem_type(os.path.dirname(os.path.abspath(target)) or ".", mounts)
    if kind.split(".")[0] in NETWORK_FS or kind.startswith("fuse.") or kind in ("fuse", "nfsd"):
        raise UsageError(
            f"--history {target}: a SQLite file on a network file system ({kind}); SQLite's WAL mode, which the "
            "history uses, does not work there. Use a PostgreSQL history for the fleet (docs/fleet.md)")


def night_in(tz):
    """Today's date in the time zone `tz` (IANA name), the night a submission stands for."""
    now = datetime.datetime.now(datetime.timezone.utc)
    if tz and tz != "UTC":
        try:
            import zoneinfo
            now = now.astimezone(zoneinfo.ZoneInfo(tz))
        except Exception:  # noqa: BLE001
            raise UsageError(f"--night-tz {tz!r}: not a time zone this Python knows (e.g. Europe/Berlin)") from None
    return now.date().isoformat()


JOB_SCRIPT = r"""#!/bin/bash
# pagelock fleet task, written by tools/fleet/fleet submit. One Slurm job = one qualification of
# one node of the roster; its run directory goes under RUNS/<node>/, then into the shared history,
# also when the task is stopped (scancel, time limit, requeue). Plain bash 4.2 (RHEL 7): no empty
# "${{a[@]}}" under set -u, no mapfile -d, no ${{x@Q}}.
set -u
STAGE={stage}
RUNS={runs}
PY={python}
NODE={node}
NIGHT={night}
# The history URL is in a mode-600 file, never in argv (every user can read /proc/*/cmdline).
PAGELOCK_HISTORY="$(cat {history_file})"
export PAGELOCK_HISTORY
host="$(hostname -s)"
job="${{SLURM_JOB_ID:-0}}"
attempt=$(( ${{SLURM_RESTART_COUNT:-0}} + 1 ))
out="$RUNS/$NODE"
mkdir -p "$out"
echo "pagelock fleet: job $job attempt $attempt on $host (roster node $NODE, night $NIGHT) -> $out $(date -u +%FT%TZ)"
stopped=""
trap 'stopped=TERM' TERM
trap 'stopped=INT' INT
# USR1 (sbatch --signal=B:USR1@SECONDS) reaches only this shell: pass it on as a TERM.
trap 'stopped=USR1; kill -TERM "$qpid" 2>/dev/null' USR1
"$PY" "$STAGE/tools/qualify.py" --bundle {bundle} --out "$out" --no-history --retries {retries} \
  --label {label} --tier {tier} {seed} {allow_no_gpu} {extra} &
qpid=$!
rc=0
wait "$qpid" || rc=$?
# A trapped signal ends `wait` early; qualify got the signal too (Slurm signals every process of
# the job) and is writing its partial run: wait for it.
while kill -0 "$qpid" 2>/dev/null; do
  rc=0
  wait "$qpid" || rc=$?
done
imported=none
dirs=()
for d in "$out"/*/; do
  [ -f "$d/results.json" ] || continue
  dirs+=("${{d%/}}")
done
# --host: the run is filed under the roster's node name, whatever the machine calls itself
# (a fully qualified hostname would leave the roster's node MISSING); the fingerprint keeps it.
if [ ${{#dirs[@]}} -gt 0 ]; then
  imported=failed
  for try in 1 2 3; do
    if "$PY" "$STAGE/reports/history.py" import --host "$NODE" --night "$NIGHT" "${{dirs[@]}}"; then
      imported=ok; break
    fi
    [ -n "$stopped" ] && break  # Slurm kills the job KillWait seconds after the signal
    sleep {retry_pause}
  done
fi
echo "pagelock fleet: qualify exit $rc, history import $imported${{stopped:+, stopped by SIG$stopped}} $(date -u +%FT%TZ)"
if [ "$imported" = failed ]; then
  echo "pagelock fleet: the history is unreachable; later, with PAGELOCK_HISTORY set: $PY $STAGE/reports/history.py import --host $NODE --night $NIGHT ${{dirs[*]}}" >&2
fi
# 0: the run is stored (its verdict is in the history); 1: nothing stored (infrastructure).
[ "$imported" = ok ] && exit 0
exit 1
"""


def stage_tools(stage):
    for rel in STAGED:
        src, dst = os.path.join(ROOT, rel), os.path.join(stage, rel)
        if os.path.isdir(src):
            shutil.copytree(src, dst, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*_test.py", "testdata", "BUILD*"))
        elif os.path.exists(src):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy(src, dst)
        elif rel.endswith(".py"):
            raise UsageError(f"{src} is missing: run fleet from a pagelock checkout")


def write_private(path, text):
    """Writes a file only its owner can read (fleet.json, the history URL), atomically."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def task_env():
    """The submitter's environment without secrets: sbatch exports it to every job, and Slurm
    keeps a copy with the job."""
    env = dict(os.environ)
    for k in ("PAGELOCK_HISTORY", "PGPASSWORD"):
        env.pop(k, None)
    return env


def check_submit_args(args):
    if not os.path.isfile(os.path.join(args.bundle, "manifest.json")):
        raise UsageError(f"--bundle {args.bundle}: no manifest.json (build one with tools/bundle.py)")
    if args.gres:
        parse_gres(args.gres)
    if args.constraint:
        parse_constraint(args.constraint)
    if args.tasks is not None:
        raise UsageError("--tasks is gone: a night has one task per node of the selection (the roster); "
                         "select nodes with --partition/--constraint/--gres")
    if args.night and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", args.night):
        raise UsageError(f"--night {args.night!r}: expected YYYY-MM-DD")
    if args.python and not os.access(args.python, os.X_OK):
        raise UsageError(f"--python {args.python}: not an executable here (the nodes need the same path)")
    check_history_target(args.history)


def write_job_script(args, base, stage, runs, py, node, night, history_file):
    q = shlex.quote
    script = JOB_SCRIPT.format(
        stage=q(stage), runs=q(runs), python=q(py), node=q(node), night=q(night),
        history_file=q(history_file), bundle=q(os.path.abspath(args.bundle)), retries=int(args.retries),
        label=q(args.label), tier=q(args.tier), seed=f"--seed {int(args.seed)}" if args.seed is not None else "",
        allow_no_gpu="--allow-no-gpu" if args.allow_no_gpu else "",
        extra=" ".join(q(a) for a in args.qualify_args), retry_pause=int(args.import_retry_pause))
    job = os.path.join(base, f"job-{slug(node)}.sh")
    with open(job, "w", encoding="utf-8") as f:
        f.write(script)
    os.chmod(job, 0o700)
    return job


def sbatch_line(args, base, n, job):
    """One task on one node that Slurm cannot double up (singleton per job name), requeueable,
    its log appended across requeues."""
    gres = args.gres
    if args.per_sku and not gres and gpu_types(n["gres"]):
        gres = f"gpu:{gpu_types(n['gres'])[0]}:1"
    sb = ["sbatch", "--parsable", f"--job-name=pagelock-node-{n['host']}", "--dependency=singleton",
          f"--nodelist={n['host']}", "--nodes=1", "--ntasks=1", "--exclusive", "--requeue",
          "--open-mode=append", f"--output={os.path.join(base, 'logs', slug(n['host']) + '.out')}",
          f"--time={args.time}"]
    if args.partition:
        sb.append(f"--partition={args.partition}")
    if args.constraint:
        sb.append(f"--constraint={args.constraint}")
    if gres:
        sb.append(f"--gres={gres}")
    return sb + args.sbatch_arg + [job]


def submit_and_store(args, jobs, excluded, night, base):
    """sbatch every job and store the roster (expected, excluded, not submitted) in the history
    before any task can report: a host that never reports is then MISSING, not absent."""
    try:
        db = history.connect(args.history)
    except history.HistoryError as e:
        say(f"cannot store the roster: {e}", err=True)
        return EXIT_FAIL, None, None
    state = {"label": args.label, "night": night, "night_tz": args.night_tz or "UTC", "shared": base,
             "history": history.redact(args.history), "jobs": [], "excluded": excluded}
    roster_rows = [dict(n, state="excluded") for n in excluded]
    rc = EXIT_OK
    try:
        for n, sb in jobs:
            r = run_cmd(sb, timeout=120, env=task_env())
            if r.returncode != 0:
                say(f"sbatch for {n['host']} failed (exit {r.returncode}): {r.stderr.strip()}", err=True)
                roster_rows.append(dict(n, state="not submitted", reason=f"sbatch: {r.stderr.strip()[:200]}"))
                rc = EXIT_FAIL
                continue
            job_id = r.stdout.strip().split(";")[0]
            state["jobs"].append({"node": n["host"], "job_id": job_id, "sku": n["sku"], "sbatch": sb,
                                  "submitted_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
                                      timespec="seconds")})
            roster_rows.append(dict(n, state="expected", reason=None, job_id=job_id))
            print(job_id)
        history.store_roster(db, args.label, night, roster_rows)
    except history.HistoryError as e:
        say(f"the jobs are submitted but the roster could not be stored: {e}", err=True)
        rc = EXIT_FAIL
    finally:
        db.close()
        write_private(os.path.join(base, "fleet.json"), json.dumps(state, indent=1))
    return rc, len(state["jobs"]), len(roster_rows)


def cmd_submit(args):
    check_submit_args(args)
    night = args.night or night_in(args.night_tz)
    py = args.python or python_for(args.history)
    targets, excluded = select_nodes(args)
    if not targets:
        raise UsageError("no usable node matches the selection (sinfo: partition/constraint/gres)"
                         + (f"; excluded: {', '.join(n['host'] + ' ' + n['reason'] for n in excluded)}" if excluded else ""))
    base = os.path.join(os.path.abspath(args.shared), slug(args.label))
    stage, runs = os.path.join(base, "pagelock"), os.path.join(base, "runs")
    for d in (runs, os.path.join(base, "logs")):
        os.makedirs(d, exist_ok=True)
    stage_tools(stage)
    history_file = os.path.join(base, "history.url")
    write_private(history_file, os.path.abspath(args.history) if not history.is_url(args.history) else args.history)
    for n in excluded:
        say(f"excluded {n['host']}: {n['reason']} (listed as MISSING in status and report)", err=True)
    jobs = [(n, sbatch_line(args, base, n, write_job_script(args, base, stage, runs, py, n["host"], night,
                                                             history_file)))
            for n in targets]
    if args.dry_run:
        for n, sb in jobs:
            print(" ".join(shlex.quote(a) for a in sb))
        return EXIT_OK
    rc, submitted, roster = submit_and_store(args, jobs, excluded, night, base)
    if submitted is None:
        return rc
    say(f"submitted {submitted} job(s), one per node, for label {args.label!r}, night {night}; "
        f"roster {roster} host(s), {len(excluded)} excluded")
    return rc


def slurm_jobs(job_ids):
    """{job id: {state, reason, node, restarts, exit}} for the jobs, newest attempt; from squeue
    (live), sacct --duplicates (every attempt, where accounting exists) and scontrol (jobs that
    ended less than MinJobAge ago), in that order of trust."""
    out = {}
    if not job_ids:
        return out
    ids = ",".join(job_ids)
    r = run_cmd(["sacct", "-n", "-P", "-X", "--duplicates", "-j", ids, "-o", "JobID,State,ExitCode,NodeList,Reason"])
    if r.returncode == 0:
        for line in r.stdout.splitlines():
            p = (line.split("|") + [""] * 4)[:5]
            jid = p[0].split("_")[0]
            x = out.setdefault(jid, {"attempts": 0})
            x["attempts"] += 1
            x.update(state=p[1].split()[0] if p[1] else "", exit=p[2], node=p[3], reason=p[4], source="sacct")
    for jid in job_ids:
        if jid in out and out[jid].get("state") not in LIVE:
            continue
        r = run_cmd(["scontrol", "-o", "show", "job", jid])
        if r.returncode != 0 or "JobState=" not in r.stdout:
            continue
        f = dict(re.findall(r"(\w+)=(\S*)", r.stdout))
        x = out.setdefault(jid, {})
        x.update(state=f.get("JobState", ""), reason=f.get("Reason", ""), node=f.get("NodeList", ""),
                 exit=f.get("ExitCode", ""), restarts=int(f.get("Restarts", "0") or 0), source="scontrol")
    return out


def node_states(nodes):
    r = run_cmd(["sinfo", "-h", "-N", "-o", "%N|%T|%E"])
    out = {}
    if r.returncode == 0:
        for line in r.stdout.splitlines():
            name, st, reason = (line.split("|") + ["", ""])[:3]
            if name in nodes:
                out[name] = (st, reason if reason != "none" else "")
    return out


def slurm_words(job, node_state):
    """Slurm's account of a job, in a few words: 'NODE_FAIL', 'PENDING (Dependency)', 'requeued 1
    time', 'node n2 down*: Not responding'."""
    words = []
    if job:
        st = job.get("state") or "?"
        reason = job.get("reason") or ""
        words.append(st + (f" ({reason})" if reason and reason not in ("None", "none") else ""))
        if job.get("restarts"):
            words.append(f"requeued {job['restarts']} time(s)")
        if job.get("attempts", 0) > 1:
            words.append(f"{job['attempts']} attempts in accounting")
    else:
        words.append("Slurm no longer knows the job (no accounting; MinJobAge passed)")
    if node_state and unusable(node_state[0]):
        words.append(f"node {node_state[0]}" + (f": {node_state[1]}" if node_state[1] else ""))
    return "; ".join(words)


def night_status(base, target=None):
    """(state, rows): one row per host of the roster, from the history (the final attempt) and
    Slurm (jobs still queued, and why a host has no complete run)."""
    with open(os.path.join(base, "fleet.json"), encoding="utf-8") as f:
        state = json.load(f)
    target = target or _history_of(base)
    db = history.connect(target)
    try:
        roster = history.roster(db, label=state["label"])
        runs = fleet_report.select_runs(db, label=state["label"])
    finally:
        db.close()
    if not roster:  # the roster could not be stored: fall back to fleet.json
        roster = [{"host": j["node"], "sku": j.get("sku"), "state": "expected", "job_id": j["job_id"]}
                  for j in state.get("jobs", [])] + [dict(n, state="excluded") for n in state.get("excluded", [])]
    jobs = slurm_jobs([h["job_id"] for h in roster if h.get("job_id")])
    nodes = node_states({h["host"] for h in roster})
    final = {r["host"]: r for r in runs}
    rows = []
    for h in roster:
        host, r, job = h["host"], final.get(h["host"]), jobs.get(h.get("job_id") or "")
        row = {"host": host, "sku": h.get("sku"), "job_id": h.get("job_id")}
        node_bad = host in nodes and unusable(nodes[host][0])
        if h["state"] != "expected":
            row.update(state="MISSING", detail=f"{h['state']} at submit: {h.get('reason') or ''}".strip())
        elif r and not fleet_report.is_interrupted(r["verdict"]) and not fleet_report.is_infra(r["verdict"]):
            row.update(state="DONE", verdict=r["verdict"], attempts=r["attempts"], run_key=r["run_key"],
                       detail=f"{r['verdict']}, attempt {r['attempts']}")
        elif job and job.get("state") in LIVE and not (node_bad and job.get("state") == "PENDING"):
            row.update(state=job["state"], detail=slurm_words(job, nodes.get(host))
                       + (f"; earlier attempt {r['verdict']}" if r else ""))
        else:
            why = ("no run stored" if not r else
                   f"final attempt {r['verdict']} after {r['n_cases'] or 0} cases (run {r['run_key']})")
            kept = _unstored_runs(os.path.join(base, "runs", host), r)
            row.update(state="MISSING", detail=f"{why}; Slurm: {slurm_words(job, nodes.get(host))}"
                       + (f"; run folders not in the history (import them): {', '.join(kept)}" if kept else ""))
            row["slurm"] = slurm_words(job, nodes.get(host))
        rows.append(row)
    return state, rows


def _unstored_runs(folder, final):
    if not os.path.isdir(folder):
        return []
    out = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        # The final run's own folder is stored, whatever key the import gave it (a key another
        # night already held is stored as <key>-2).
        stored = final and (final["run_key"] == name or
                            (final.get("run_dir") and os.path.realpath(final["run_dir"]) == os.path.realpath(path)))
        if os.path.isfile(os.path.join(path, "results.json")) and not stored:
            out.append(path)
    return out[-3:]


def _history_of(base):
    path = os.path.join(base, "history.url")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        raise UsageError(f"{path}: cannot read the history of this submission; pass --history") from None


def cmd_status(args):
    base = os.path.join(os.path.abspath(args.shared), slug(args.label))
    if not os.path.exists(os.path.join(base, "fleet.json")):
        raise UsageError(f"no submission for label {args.label!r} under {args.shared} (no fleet.json)")
    deadline = time.monotonic() + (args.wait or 0)
    while True:
        try:
            state, rows = night_status(base, args.history)
        except history.HistoryError as e:
            say(str(e), err=True)
            return EXIT_FAIL
        running = [r for r in rows if r["state"] in LIVE]
        if not running or time.monotonic() >= deadline:
            break
        time.sleep(2)
    missing = [r for r in rows if r["state"] == "MISSING"]
    if args.json:
        print(json.dumps({"label": state.get("label"), "night": state.get("night"), "hosts": rows,
                          "missing": len(missing), "running": len(running)}, indent=1))
    else:
        for r in rows:
            print(f"{r['host']:<16} {r['state']:<10} job {r.get('job_id') or '-':<8} {r['detail']}")
        counts = {}
        for r in rows:
            counts[r["state"]] = counts.get(r["state"], 0) + 1
        print("hosts: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    if missing:
        return EXIT_FAIL
    if running:
        return EXIT_RUNNING
    return EXIT_OK


PATH_KEYS = ("report", "run_dir")


def relative_paths(data, out_dir):
    """data with every absolute "report"/"run_dir" value made relative to out_dir."""
    if isinstance(data, dict):
        return {k: (os.path.relpath(v, out_dir) if k in PATH_KEYS and isinstance(v, str)
                    and os.path.isabs(v) else relative_paths(v, out_dir)) for k, v in data.items()}
    if isinstance(data, list):
        return [relative_paths(v, out_dir) for v in data]
    return data


def write_output(path, text):
    """Writes a report file, creating its folder (as compare_runs does); UsageError (exit 2)
    when it cannot be written."""
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


def cmd_report(args):
    if not args.label and not args.night:
        raise UsageError("report needs --label TEXT or --night YYYY-MM-DD")
    if args.night and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", args.night):
        raise UsageError(f"--night {args.night!r}: expected YYYY-MM-DD")
    if not history.is_url(args.history) and not os.path.exists(args.history):
        raise UsageError(f"--history {args.history}: no such database")
    reasons = {}
    if args.shared and args.label:  # Slurm's account of the hosts without a complete run
        base = os.path.join(os.path.abspath(args.shared), slug(args.label))
        if os.path.exists(os.path.join(base, "fleet.json")):
            try:
                _, rows = night_status(base, args.history)
                reasons = {r["host"]: r.get("slurm") or r["detail"] for r in rows if r["state"] != "DONE"}
            except history.HistoryError:
                pass
    try:
        db = history.connect(args.history)
    except history.HistoryError as e:
        say(str(e), err=True)  # as history.py: unreachable 1; a schema newer or older, not a database 2
        return EXIT_FAIL if e.infra else EXIT_USAGE
    try:
        data = fleet_report.fleet_data(db, label=args.label, night=None if args.label else args.night,
                                       slurm_reasons=reasons, health_nights=args.health_nights)
    except Exception as e:  # noqa: BLE001 -- a database error is a message, not a traceback
        say(f"{history.redact(args.history)}: {type(e).__name__}: {history.redact(str(e).strip())}", err=True)
        return EXIT_FAIL
    finally:
        db.close()
    if args.json:
        # Paths relative to the JSON's folder, as the page's links are: the pair can be moved
        # or committed together with the run folders, and carries no machine's absolute path.
        out_dir = os.path.dirname(os.path.abspath(args.json))
        write_output(args.json, json.dumps(relative_paths(data, out_dir), indent=1, default=str))
    if args.html:
        write_output(args.html, fleet_report.render_html(data, os.path.dirname(os.path.abspath(args.html))))
    verdicts = {}
    for r in data["runs"]:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    say(f"{data['hosts']} hosts" + (f" of {data['roster']} expected" if data["roster"] else "") + ": "
        + (", ".join(f"{k}={v}" for k, v in sorted(verdicts.items(), key=str)) or "none")
        + f"; {len(data['missing'])} missing; {len(data['new'])} new regression groups, {len(data['known'])} known"
        + f"; {len(data['coverage_lost'])} hosts lost coverage ({data['timings_s'].get('total', 0):.2f} s)")
    for m in data["missing"]:
        say(f"MISSING {m['host']}: {m['reason']}", err=True)
    for h in data.get("health", []):
        if h["drain"]:
            say(f"DRAIN recommended for {h['host']}: {h['advice']}", err=True)
    if not data["runs"] and not data["roster"]:
        say(f"no run for {'label ' + repr(args.label) if args.label else 'night ' + args.night}", err=True)
        return EXIT_EMPTY
    return fleet_report.exit_code(data)


def parser():
    p = argparse.ArgumentParser(prog="tools/fleet/fleet", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("submit", help="store the night's roster and submit one Slurm job per GPU node of the selection")
    s.add_argument("--bundle", required=True, help="a bundle (tools/bundle.py) on a path every node sees")
    s.add_argument("--shared", required=True, help="shared folder for run directories, logs and tasks")
    s.add_argument("--history", default=history.default_target(),
                   help="postgresql:// URL without a password (~/.pgpass, $PGPASSFILE or ?service=NAME);"
                        " default $PAGELOCK_HISTORY. A SQLite file only on a local file system (one node)")
    s.add_argument("--label", required=True, help="names the night/change; the fleet report selects by it")
    s.add_argument("--tier", default="full", choices=["bat", "full", "stress"])
    s.add_argument("--seed", type=int)
    s.add_argument("--retries", type=int, default=2)
    s.add_argument("--partition")
    s.add_argument("--constraint", help="Slurm node features, e.g. nvidia-h200 or nvidia-h200&ib"
                                        " (& and |, evaluated left to right as Slurm does)")
    s.add_argument("--gres", help="gpu, gpu:<n>, gpu:<type> or gpu:<type>:<n>: nodes with at least that many")
    s.add_argument("--tasks", type=int, help=argparse.SUPPRESS)
    s.add_argument("--per-node", action="store_true", help="(the default now: one job per node of the selection)")
    s.add_argument("--per-sku", action="store_true",
                   help="without --gres: each node's job asks for one GPU of its own type (gpu:<type>:1)")
    s.add_argument("--night", help="the night this submission stands for (default: today in --night-tz)")
    s.add_argument("--night-tz", default=os.environ.get("PAGELOCK_NIGHT_TZ") or "UTC",
                   help="IANA time zone of the night's date (default $PAGELOCK_NIGHT_TZ, else UTC); a run that "
                        "crosses midnight stays in its submission's night")
    s.add_argument("--time", default="04:00:00", help="time limit per task (default 04:00:00)")
    s.add_argument("--allow-no-gpu", action="store_true", help="passed to qualify (CI, self-tests)")
    s.add_argument("--python", help="interpreter on the nodes (default: one here that can open the history)")
    s.add_argument("--import-retry-pause", type=int, default=20, help=argparse.SUPPRESS)
    s.add_argument("--sbatch-arg", action="append", default=[], help="extra sbatch argument (repeatable)")
    s.add_argument("--dry-run", action="store_true", help="stage and print the sbatch command only")
    s.add_argument("qualify_args", nargs="*", help="after --: more qualify arguments")
    st = sub.add_parser("status", help="one row per host of the roster: DONE, PENDING/RUNNING or MISSING with why")
    st.add_argument("--shared", required=True)
    st.add_argument("--label", required=True)
    st.add_argument("--history", help="default: the submission's own (SHARED/<label>/history.url)")
    st.add_argument("--wait", type=float, default=0, help="poll until every task ended, at most this many seconds")
    st.add_argument("--json", action="store_true")
    r = sub.add_parser("report", help="the fleet report from the shared history")
    r.add_argument("--history", default=history.default_target())
    r.add_argument("--label")
    r.add_argument("--night", help="YYYY-MM-DD: the night the runs were submitted for")
    r.add_argument("--shared", help="the submission's shared folder: Slurm's reasons for missing hosts")
    r.add_argument("--health-nights", type=int, default=fleet_report.HEALTH_NIGHTS,
                   help=f"per-host flakiness window in nights (default {fleet_report.HEALTH_NIGHTS})")
    r.add_argument("--html")
    r.add_argument("--json")
    return p


def main(argv=None):
    cliargs.utf8_streams()
    p = parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return EXIT_USAGE if e.code else EXIT_OK
    try:
        return {"submit": cmd_submit, "status": cmd_status, "report": cmd_report}[args.command](args)
    except UsageError as e:
        say(str(e), err=True)
        return EXIT_USAGE
    except OSError as e:
        say(f"{e.filename or ''}: {e.strerror}", err=True)
        return EXIT_USAGE


def history_target(args):
    """The history a parsed command line opens: --history (submit and report: default
    $PAGELOCK_HISTORY), else status's submission's own; None when that cannot be read."""
    if args.history or args.command != "status":
        return args.history
    try:
        return _history_of(os.path.join(os.path.abspath(args.shared), slug(args.label)))
    except UsageError:
        return None


if __name__ == "__main__":
    from reports import interpreter
    # One interpreter, before any work: jinja2 (`fleet report` renders the page), and psycopg2
    # when the history is a postgresql:// URL (a SQLite history needs nothing more).
    _args = interpreter.quietly(lambda: parser().parse_args())
    interpreter.reexec_if_missing(["jinja2"] + interpreter.history_modules(_args and history_target(_args)),
                                  __file__, ROOT)
    sys.exit(main())
