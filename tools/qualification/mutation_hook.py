"""--mutation: the mutation score of the same bundle (tools/mutation), after the verdict is out;
it never changes the verdict."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid

from reports import model
from tools.qualification import common, publish
from tools.qualification.common import say
from tools.runner import leftovers, procs, runner

MUTATION_TOOL = os.path.join(common.ROOT, "tools", "mutation", "mutation.py")
# Every process of the mutation run inherits this variable (mutation.py, its runners, their test
# binaries under the fault shim, which run in sessions of their own): what is still alive with
# it after mutation.py stopped is killed.
KILL_TOKEN_ENV = "PAGELOCK_QUALIFY_TOKEN"
MUTATION_STOP_S = 45  # how long mutation.py may take to stop its runners after SIGTERM
MUTATION_FALSE_ALARMS = 3  # mutation.py: done, and a conforming variation failed a case


def kill_token_holders(token):
    """SIGKILLs every live process whose environment carries KILL_TOKEN_ENV=token; returns how
    many."""
    return runner.kill_env_holders(KILL_TOKEN_ENV, token)


def stop_mutation(proc, token):
    """Stops mutation.py the way it stops on a signal (SIGTERM: it stops its runners, which stop
    their binaries), then kills whatever of the run is left."""
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=MUTATION_STOP_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except OSError:
        pass
    for _ in range(3):  # a process forking while it is killed: look again
        if not kill_token_holders(token):
            break
        time.sleep(0.1)


def run_mutation(plan, run, comp, info, args, state):
    """Runs tools/mutation over the bundle into <run dir>/mutation/, then adds its score to
    results.json, the --json summary and the report. Whatever goes wrong here is a note: the
    verdict, already written, never changes. A signal stops the mutation run (nothing of it is
    left running) and is raised on: qualify exits 7."""
    out = os.path.join(plan.run_dir, "mutation")
    doc_path = os.path.join(out, "mutation.json")
    say(f"mutation: the fault catalogue over this bundle, under the fault shim (budget "
        f"{args.mutation_budget:g} s, {args.mutation_jobs} jobs) into {out}")
    state["phase"] = "running the mutation score"
    note = run_tool(plan, args, out, state)
    mut = {"status": "not run", "line": "not run", "json": os.path.relpath(doc_path, plan.run_dir)}
    try:
        if not note or os.path.exists(doc_path):
            with open(doc_path, encoding="utf-8") as f:
                add_score(mut, json.load(f))
    except (OSError, ValueError, KeyError, TypeError) as e:
        note = note or f"no usable mutation.json ({e})"
    if note:
        mut["note"] = note
    info["mutation"] = mut
    common.SUMMARY["mutation"] = mut
    say(f"mutation score: {mut['line']}" + (f" (note: {note})" if note else ""))
    state["phase"] = "writing the mutation score"
    try:
        model.write_results(os.path.join(plan.run_dir, "results.json"), run, info, comp)
        publish.write_report(plan, run, comp, info)
    except (OSError, ValueError) as e:
        say(f"warning: the mutation score is in {out} but the report was not updated ({e})")


def run_tool(plan, args, out, state):
    """Runs mutation.py into out (its output in out/mutation.out) and makes sure nothing of it
    is left running; returns a note on what went wrong, or ''."""
    cmd = [sys.executable, MUTATION_TOOL, plan.bundle, "--out", out,
           "--budget", str(args.mutation_budget), "--jobs", str(args.mutation_jobs),
           "--reference", os.path.join(plan.run_dir, "testlogs"),
           # the fault catalogue (the score) and, where the bundle carries them, the conforming
           # variations (false alarms); a bundle made before them still gets its score
           "--catalogue", "both" if os.path.isfile(os.path.join(plan.bundle, "faults", "conforming.tsv"))
           else "faults"]
    note, rc = "", None
    token = uuid.uuid4().hex
    env = dict(os.environ, **{KILL_TOKEN_ENV: token})
    try:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "mutation.out"), "w", encoding="utf-8") as log:
            # SIGKILL to qualify takes mutation.py with it (and it its runners, they their binaries).
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    preexec_fn=procs.die_with_parent())
            leftovers.note_started(proc.pid)
            state["mutation"] = (proc, token)
            try:
                # mutation.py stops its own runs 20 s after its budget; this is a backstop.
                rc = proc.wait(timeout=args.mutation_budget + 300)
            except subprocess.TimeoutExpired:
                stop_mutation(proc, token)
                note = "the mutation tool ran past its budget and was stopped"
            state.pop("mutation", None)
            kill_token_holders(token)  # a runner mutation.py lost track of
        if rc not in (None, 0, MUTATION_FALSE_ALARMS):
            with open(os.path.join(out, "mutation.out"), errors="replace", encoding="utf-8") as f:
                lines = [l.strip() for l in f if l.strip()]
            tail = lines[-1:] or [""]
            note = f"the mutation tool exited {rc}: {tail[0][:300]}"
            if any("No space left on device" in l for l in lines) or common.full_file_system([out]):
                note = f"no space left on {out}: {note}"  # the compiler or the tool said only "failed"
    except OSError as e:
        note = f"the mutation tool could not run: {common.os_error_words(e, out)}"
    return note


def add_score(mut, doc):
    """Fills results.json's mutation entry from a mutation.json document."""
    s = doc["score"]
    mut.update(status="partial" if s["NOT_RUN"] else "done",
               score_percent=s["percent"], faults=s["total"], faults_run=s["run"],
               killed=s["KILLED"], handled=s["HANDLED"], survived=s["SURVIVED"],
               errors=s["ERROR"], not_run=s["NOT_RUN"],
               seconds=doc.get("config", {}).get("seconds"),
               survivors=[f["name"] for f in doc.get("faults", []) if f["verdict"] == "SURVIVED"])
    mut["line"] = s["line"]  # "caught K of N ..." or "partial: K of N faults run; ..."
    # A conforming variation that fails a case is a defect of the suite: shown beside the
    # score, never mixed into it.
    fa = doc.get("false_alarms") or {}
    if fa.get("variations"):
        mut.update(false_alarms=fa.get("count"), false_alarm_line=fa.get("line"))
        mut["line"] += f"; {fa['line']}"
