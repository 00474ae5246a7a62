#!/usr/bin/env python3
"""pagelock fleet: nightly qualification of a GPU lab through Slurm and a shared history.

  tools/fleet/fleet submit --bundle DIR --shared DIR --history URL --label TEXT
        [--tier bat|full|stress] [--seed N] [--partition P] [--constraint C]
        [--gres gpu:<type>:<n>] [--tasks N] [--per-node] [--per-sku] [--time HH:MM:SS] [--allow-no-gpu]
        [--sbatch-arg ARG]... [--dry-run] [-- QUALIFY_ARGS...]
  tools/fleet/fleet status --shared DIR --label TEXT [--wait SECONDS]
  tools/fleet/fleet report --history URL (--label TEXT | --night YYYY-MM-DD) [--html F] [--json F]

submit copies the bundle's qualification tools (tools/qualify.py, the runner, reports/,
expectations/, baselines/) next to a job script under SHARED/<label>/ and submits one Slurm job
array: each task runs `qualify --bundle` on its node, writes its run directory under
SHARED/<label>/runs/, then stores it in the shared history (`history.py import`, retried; when
the database stays unreachable the run directory is kept and the task's record says so, for a
later `reports/history.py --db URL import RUN_DIR`). Slurm does the placement, requeues tasks of
failed nodes (--requeue) and keeps the accounting; pagelock only reads it. --per-node sizes the
array to the nodes that match the selection (sinfo) and asks for whole nodes (--exclusive);
--per-sku submits one array per GPU type found in the selection's GRES, each with
--gres=gpu:<type>:1 (and, with --per-node, as many tasks as nodes of that type).

Exit codes:
  submit  0 submitted (prints the job id); 1 sbatch failed; 2 bad usage
  status  0 every task finished and its run is in the history; 1 a task failed, was lost, or its
          run is not stored; 2 bad usage; 6 tasks still pending or running
  report  0 written; 1 database error; 2 bad usage; 4 no run for that label or night
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
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from reports import history  # noqa: E402
from tools.fleet import report as fleet_report  # noqa: E402

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_EMPTY, EXIT_RUNNING = 0, 1, 2, 4, 6
# What a task needs from the repository besides the bundle.
STAGED = ["tools/__init__.py", "tools/qualify.py", "tools/runner/__init__.py", "tools/runner/runner.py",
          "reports", "expectations", "baselines"]


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


def run_cmd(argv, timeout=60):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: not found (is slurm-client installed?)")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, "", f"{argv[0]}: no answer in {timeout} s")


def matching_nodes(args):
    """Nodes of the selection, from sinfo: [(name, features, gres)]."""
    cmd = ["sinfo", "-h", "-N", "-o", "%N|%f|%G|%P"]
    if args.partition:
        cmd += ["-p", args.partition]
    r = run_cmd(cmd)
    if r.returncode != 0:
        raise UsageError(f"sinfo failed: {r.stderr.strip()}")
    nodes = {}
    want_feature = args.constraint
    want_gres = args.gres.split(":")[1] if args.gres and args.gres.count(":") >= 1 else None
    for line in r.stdout.splitlines():
        name, feats, gres, _ = (line.split("|") + ["", "", ""])[:4]
        if want_feature and not re.fullmatch(r"[A-Za-z0-9_.-]+", want_feature):
            pass  # an expression (a|b, a&b): leave it to Slurm
        elif want_feature and want_feature not in feats.split(","):
            continue
        if want_gres and f"gpu:{want_gres}" not in gres:
            continue
        nodes[name] = (name, feats, gres)
    return sorted(nodes.values())


def gpu_types(gres):
    """GPU types in an sinfo GRES field: 'gpu:h200:4(S:0-1),gpu:a100:2' -> ['h200', 'a100']."""
    out = []
    for part in gres.split(","):
        fields = part.split("(")[0].split(":")
        if fields[0] == "gpu" and len(fields) >= 3:
            out.append(fields[1])
    return out


JOB_SCRIPT = r"""#!/bin/bash
# pagelock fleet task, written by tools/fleet/fleet submit. One Slurm array task = one
# qualification of this node; its run directory goes under RUNS, then into the shared history.
set -u
STAGE={stage}
RUNS={runs}
TASKS={tasks}
PY={python}
HISTORY={history}
task="${{SLURM_ARRAY_JOB_ID:-${{SLURM_JOB_ID:-0}}}}_${{SLURM_ARRAY_TASK_ID:-0}}"
host="$(hostname -s)"
out="$RUNS/$task-$host"
mkdir -p "$out" "$TASKS"
echo "pagelock fleet: task $task on $host -> $out"
"$PY" "$STAGE/tools/qualify.py" --bundle {bundle} --out "$out" --no-history --retries {retries} \
  --label {label} --tier {tier} {seed} {allow_no_gpu} {extra}
rc=$?
imported=none
dirs=()
for d in "$out"/*/; do
  [ -f "$d/results.json" ] || continue
  dirs+=("${{d%/}}")
done
if [ ${{#dirs[@]}} -gt 0 ]; then
  imported=failed
  for attempt in 1 2 3; do
    if "$PY" "$STAGE/reports/history.py" --db "$HISTORY" import "${{dirs[@]}}"; then
      imported=ok; break
    fi
    sleep {retry_pause}
  done
fi
"$PY" - "$TASKS/$task.json" "$task" "$host" "$rc" "$imported" "${{dirs[@]}}" <<'EOF'
import json, os, sys, datetime
path, task, host, rc, imported = sys.argv[1:6]
json.dump({{"task": task, "host": host, "qualify_exit": int(rc), "imported": imported,
           "run_dirs": sys.argv[6:], "partition": os.environ.get("SLURM_JOB_PARTITION"),
           "gpus": os.environ.get("SLURM_JOB_GPUS") or os.environ.get("CUDA_VISIBLE_DEVICES"),
           "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}},
          open(path + ".tmp", "w"))
import os; os.replace(path + ".tmp", path)
EOF
if [ "$imported" = failed ]; then
  echo "pagelock fleet: the history is unreachable; run later: $PY $STAGE/reports/history.py --db URL import ${{dirs[*]}}" >&2
fi
exit $rc
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


def cmd_submit(args):
    if not os.path.isfile(os.path.join(args.bundle, "manifest.json")):
        raise UsageError(f"--bundle {args.bundle}: no manifest.json (build one with tools/bundle.py)")
    if args.gres and not re.fullmatch(r"gpu(:[A-Za-z0-9_.-]+)?:\d+", args.gres):
        raise UsageError(f"--gres {args.gres!r}: expected gpu:<type>:<n> or gpu:<n>")
    if args.tasks is not None and args.tasks < 1:
        raise UsageError("--tasks must be >= 1")
    py = args.python or python_for(args.history)
    shared = os.path.abspath(args.shared)
    base = os.path.join(shared, slug(args.label))
    stage, runs, tasks = (os.path.join(base, x) for x in ("pagelock", "runs", "tasks"))
    os.makedirs(runs, exist_ok=True)
    os.makedirs(tasks, exist_ok=True)
    os.makedirs(os.path.join(base, "logs"), exist_ok=True)

    n = args.tasks or 1
    submissions = [(args.gres, n)]
    if args.per_node or args.per_sku:
        nodes = matching_nodes(args)
        if not nodes:
            raise UsageError("no node matches the selection (sinfo: partition/constraint/gres)")
        submissions = [(args.gres, len(nodes) if args.per_node else n)]
        if args.per_sku:  # one array per GPU type found in the nodes' GRES
            types = sorted({t for _, _, gres in nodes for t in gpu_types(gres)})
            if not types:
                raise UsageError("--per-sku: no node of the selection has a typed GPU GRES (gpu:<type>:<n>)")
            submissions = [(f"gpu:{t}:1", len([x for x in nodes if t in gpu_types(x[2])]) if args.per_node else n)
                           for t in types]
    stage_tools(stage)
    bundle = os.path.abspath(args.bundle)
    q = shlex.quote
    script = JOB_SCRIPT.format(
        stage=q(stage), runs=q(runs), tasks=q(tasks), python=q(py), history=q(args.history),
        bundle=q(bundle), retries=int(args.retries), label=q(args.label), tier=q(args.tier),
        seed=f"--seed {int(args.seed)}" if args.seed is not None else "",
        allow_no_gpu="--allow-no-gpu" if args.allow_no_gpu else "",
        extra=" ".join(q(a) for a in args.qualify_args), retry_pause=int(args.import_retry_pause))
    job = os.path.join(base, "job.sh")
    with open(job, "w") as f:
        f.write(script)
    os.chmod(job, 0o700)  # the history URL may hold a password

    state_path = os.path.join(base, "fleet.json")
    state = {}
    if os.path.exists(state_path):
        with open(state_path) as f:
            state = json.load(f)
    for gres, n in submissions:
        sb = ["sbatch", "--parsable", f"--job-name=pagelock-{slug(args.label)}"[:60], f"--array=0-{n - 1}",
              "--requeue", f"--output={os.path.join(base, 'logs', '%A_%a.out')}", f"--time={args.time}",
              "--ntasks=1"]
        if args.partition:
            sb.append(f"--partition={args.partition}")
        if args.constraint:
            sb.append(f"--constraint={args.constraint}")
        if gres:
            sb.append(f"--gres={gres}")
        if args.per_node:
            sb.append("--exclusive")  # whole nodes: tasks of one array spread over the nodes
        sb += args.sbatch_arg + [job]
        if args.dry_run:
            print(" ".join(q(a) for a in sb))
            continue
        r = run_cmd(sb, timeout=120)
        if r.returncode != 0:
            say(f"sbatch failed (exit {r.returncode}): {r.stderr.strip()}", err=True)
            return EXIT_FAIL
        job_id = r.stdout.strip().split(";")[0]
        state.setdefault("jobs", []).append({
            "job_id": job_id, "tasks": n, "gres": gres, "submitted_at":
            datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "sbatch": sb, "history": history.redact(args.history)})
        state.update(label=args.label, shared=base)
        with open(state_path + ".tmp", "w") as f:
            json.dump(state, f, indent=1)
        os.replace(state_path + ".tmp", state_path)
        say(f"submitted job array {job_id} ({n} task{'s' if n > 1 else ''}{', ' + gres if gres else ''}) "
            f"for label {args.label!r}")
        print(job_id)
    return EXIT_OK


def live_tasks(job_id):
    """{task id 'JOB_IDX': (state, node, reason)} from squeue (pending and running tasks)."""
    r = run_cmd(["squeue", "-h", "-r", "-j", job_id, "-o", "%i|%T|%N|%r"])
    out = {}
    if r.returncode != 0:
        return out, r.stderr.strip()
    for line in r.stdout.splitlines():
        tid, st, node, reason = (line.split("|") + ["", "", ""])[:4]
        out[tid] = (st, node, reason)
    return out, None


def accounting(job_id):
    """{task id: (state, exit code, node)} from sacct, when the cluster keeps accounting."""
    r = run_cmd(["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State,ExitCode,NodeList"])
    out = {}
    if r.returncode == 0:
        for line in r.stdout.splitlines():
            parts = line.split("|")
            if len(parts) >= 4:
                out[parts[0]] = (parts[1], parts[2], parts[3])
    return out


def task_status(base):
    with open(os.path.join(base, "fleet.json")) as f:
        state = json.load(f)
    done = {}
    tdir = os.path.join(base, "tasks")
    for name in os.listdir(tdir) if os.path.isdir(tdir) else []:
        if name.endswith(".json"):
            try:
                with open(os.path.join(tdir, name)) as f:
                    rec = json.load(f)
                done[rec["task"]] = rec
            except (OSError, ValueError, KeyError):
                pass
    rows = []
    for job in state.get("jobs", []):
        live, err = live_tasks(job["job_id"])
        acct = accounting(job["job_id"])
        for i in range(job["tasks"]):
            tid = f"{job['job_id']}_{i}"
            rec = done.get(tid)
            if tid in live and live[tid][0] not in ("COMPLETED",):
                st, node, reason = live[tid]
                rows.append({"task": tid, "state": st, "node": node, "detail": reason})
            elif rec:
                ok = rec["imported"] == "ok"
                rows.append({"task": tid, "state": "DONE" if ok else "NOT_STORED", "node": rec["host"],
                             "gpus": rec.get("gpus"), "partition": rec.get("partition"),
                             "qualify_exit": rec["qualify_exit"], "imported": rec["imported"],
                             "run_dirs": rec["run_dirs"],
                             "detail": f"qualify exit {rec['qualify_exit']}, history import {rec['imported']}"})
            elif tid in acct:
                st, code, node = acct[tid]
                rows.append({"task": tid, "state": st, "node": node, "detail": f"sacct exit {code}, no task record"})
            elif any(k.startswith(job["job_id"]) and "[" in k for k in live):
                rows.append({"task": tid, "state": "PENDING", "node": "", "detail": "array not yet expanded"})
            else:
                rows.append({"task": tid, "state": "LOST", "node": "",
                             "detail": "not in the queue and no task record (see logs/)" + (f"; squeue: {err}" if err else "")})
    return state, rows


def cmd_status(args):
    base = os.path.join(os.path.abspath(args.shared), slug(args.label))
    if not os.path.exists(os.path.join(base, "fleet.json")):
        raise UsageError(f"no submission for label {args.label!r} under {args.shared} (no fleet.json)")
    deadline = time.monotonic() + (args.wait or 0)
    while True:
        state, rows = task_status(base)
        running = [r for r in rows if r["state"] in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING",
                                                      "REQUEUED", "RESIZING", "SUSPENDED")]
        if not running or time.monotonic() >= deadline:
            break
        time.sleep(2)
    if args.json:
        print(json.dumps({"label": state.get("label"), "tasks": rows}, indent=1))
    else:
        for r in rows:
            print(f"{r['task']:>14}  {r['state']:<11} {r['node'] or '-':<16} {r['detail']}")
        counts = {}
        for r in rows:
            counts[r["state"]] = counts.get(r["state"], 0) + 1
        print("tasks: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    if running:
        return EXIT_RUNNING
    return EXIT_OK if all(r["state"] == "DONE" for r in rows) else EXIT_FAIL


def cmd_report(args):
    if not args.label and not args.night:
        raise UsageError("report needs --label TEXT or --night YYYY-MM-DD")
    if args.night and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", args.night):
        raise UsageError(f"--night {args.night!r}: expected YYYY-MM-DD")
    if not history.is_url(args.history) and not os.path.exists(args.history):
        raise UsageError(f"--history {args.history}: no such database")
    try:
        db = history.connect(args.history)
    except history.HistoryError as e:
        say(str(e), err=True)
        return EXIT_FAIL
    try:
        data = fleet_report.fleet_data(db, label=args.label, night=None if args.label else args.night)
    except Exception as e:  # noqa: BLE001 -- a database error is a message, not a traceback
        say(f"{history.redact(args.history)}: {type(e).__name__}: {str(e).strip()}", err=True)
        return EXIT_FAIL
    finally:
        db.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1, default=str)
    if args.html:
        with open(args.html, "w", encoding="utf-8") as f:
            f.write(fleet_report.render_html(data, os.path.dirname(os.path.abspath(args.html))))
    verdicts = {}
    for r in data["runs"]:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    say(f"{data['hosts']} hosts: " + (", ".join(f"{k}={v}" for k, v in sorted(verdicts.items(), key=str)) or "none")
        + f"; {len(data['problems'])} problem case groups; {len(data['coverage_lost'])} hosts lost coverage"
        + f" ({data['timings_s'].get('total', 0):.2f} s)")
    if not data["runs"]:
        say(f"no run for {'label ' + repr(args.label) if args.label else 'night ' + args.night}", err=True)
        return EXIT_EMPTY
    return EXIT_OK


def parser():
    p = argparse.ArgumentParser(prog="tools/fleet/fleet", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("submit", help="submit a Slurm job array that qualifies the lab's GPU nodes")
    s.add_argument("--bundle", required=True, help="a bundle (tools/bundle.py) on a path every node sees")
    s.add_argument("--shared", required=True, help="shared folder for run directories, logs and tasks")
    s.add_argument("--history", default=history.default_target(),
                   help="postgresql:// URL (or a SQLite file on shared storage); default $PAGELOCK_HISTORY")
    s.add_argument("--label", required=True, help="names the night/change; the fleet report selects by it")
    s.add_argument("--tier", default="full", choices=["bat", "full", "stress"])
    s.add_argument("--seed", type=int)
    s.add_argument("--retries", type=int, default=2)
    s.add_argument("--partition")
    s.add_argument("--constraint", help="Slurm node features, e.g. nvidia-h200")
    s.add_argument("--gres", help="gpu:<type>:<n>, e.g. gpu:h200:1")
    s.add_argument("--tasks", type=int, help="array size (default 1)")
    s.add_argument("--per-node", action="store_true", help="one task per node of the selection (sinfo)")
    s.add_argument("--per-sku", action="store_true",
                   help="one array per GPU type in the selection's GRES (--gres=gpu:<type>:1 each)")
    s.add_argument("--time", default="04:00:00", help="time limit per task (default 04:00:00)")
    s.add_argument("--allow-no-gpu", action="store_true", help="passed to qualify (CI, self-tests)")
    s.add_argument("--python", help="interpreter on the nodes (default: one here that can open the history)")
    s.add_argument("--import-retry-pause", type=int, default=20, help=argparse.SUPPRESS)
    s.add_argument("--sbatch-arg", action="append", default=[], help="extra sbatch argument (repeatable)")
    s.add_argument("--dry-run", action="store_true", help="stage and print the sbatch command only")
    s.add_argument("qualify_args", nargs="*", help="after --: more qualify arguments")
    st = sub.add_parser("status", help="follow the job array")
    st.add_argument("--shared", required=True)
    st.add_argument("--label", required=True)
    st.add_argument("--wait", type=float, default=0, help="poll until every task ended, at most this many seconds")
    st.add_argument("--json", action="store_true")
    r = sub.add_parser("report", help="the fleet report from the shared history")
    r.add_argument("--history", default=history.default_target())
    r.add_argument("--label")
    r.add_argument("--night", help="YYYY-MM-DD (UTC date the runs started)")
    r.add_argument("--html")
    r.add_argument("--json")
    return p


def main(argv=None):
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


if __name__ == "__main__":
    sys.exit(main())
