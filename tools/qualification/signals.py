"""Signals: SIGTERM, SIGINT and SIGHUP stop qualify at any moment (exit 7). The runner starts
each test binary in a session of its own, so qualify kills its children's groups itself; once
the run folder exists, its results.json says INTERRUPTED and keeps the finished cases."""

import os
import signal

from reports import compare as cmp
from reports import model
from tools.qualification import common, mutation_hook, publish, running
from tools.qualification.common import interrupted, say

# The signals qualify stops on, as the runner does (README's exit 7).
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def kill_children():
    """Kills the process groups of our own child processes (the runner starts each test binary
    in a session of its own, so a terminal's Ctrl-C does not reach it)."""
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                stat = f.read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == me:
                os.killpg(int(pid), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass


def on_signal(signum, frame):
    if common.INTERRUPT["by"]:
        return  # finishing after the first signal: this one changes nothing
    raise interrupted(signal.Signals(signum).name)


def finish_interrupted(plan, info, state):
    """After a signal at any moment once the run folder exists: stops whatever runs, then writes
    results.json with verdict INTERRUPTED (the finished cases, and the verdict reached if there
    was one) before anything else, and brings index.html in line when there is one. Further
    signals are ignored meanwhile (on_signal). Returns exit 7."""
    by, phase = common.INTERRUPT["by"] or "a signal", state.get("phase", "run")
    if "mutation" in state:
        mutation_hook.stop_mutation(*state.pop("mutation"))
    kill_children()
    run, comp = state.get("run"), state.get("comp")
    testlogs = os.path.join(plan.run_dir, "testlogs")
    if run is None:
        try:
            run = running.load_run(plan, testlogs) if os.path.isdir(testlogs) else model.Run(plan.fingerprint)
        except Exception as e:  # noqa: BLE001 -- whatever the tree holds, the folder is marked
            say(f"the finished cases could not be read ({type(e).__name__}: {e})")
            run = model.Run(plan.fingerprint)
    if comp is not None and "verdict" in info and info["verdict"] != "INTERRUPTED":
        info["verdict_reached"] = info["verdict"]
    info.update(verdict=cmp.VERDICTS[cmp.EXIT_INTERRUPTED][0], exit_code=cmp.EXIT_INTERRUPTED,
                interrupted_by=by, interrupted_during=phase)
    try:
        model.write_results(os.path.join(plan.run_dir, "results.json"), run, info, comp)
        say(f"interrupted by {by} while {phase}: {len(run.cases)} finished case(s) kept in "
            f"{plan.run_dir} (results.json says INTERRUPTED)")
        if comp is not None and os.path.exists(os.path.join(plan.run_dir, "index.html")):
            comp.exit_code = cmp.EXIT_INTERRUPTED
            publish.write_report(plan, run, comp, info)
    except (OSError, ValueError) as w:
        say(f"interrupted by {by}; could not write the partial results: {w}")
    say(f"verdict: INTERRUPTED (exit {cmp.EXIT_INTERRUPTED})")
    return cmp.EXIT_INTERRUPTED
