"""What a mutation run leaves: mutation.json (the document), mutation.html (rendered from the
same document by the shared Jinja2 templates, reports/pages.py) and the summary on stdout."""

import json
import os
import time

import sys

from reports import pages
from tools.mutation.false_alarms import false_alarm_summary
from tools.mutation.catalogue import load_split
from tools.mutation.scoring import score, score_by, score_line, summary_line


def make_doc(args, inputs, controls, sched, sentinels, results, variations, t0):
    """mutation.json's document."""
    s = score(results)
    split = load_split(inputs.bundle)
    for r in results:
        if r["name"] in split:
            r.update(split[r["name"]])
    return {"score": dict(s, line=score_line(s)),
            "score_by_half": score_by(results, split, "half"),
            "score_by_shape": score_by(results, split, "shape"),
            "score_by_batch": score_by(results, split, "batch"),
            "control": {"summary": summary_line(controls.all_control),
                        "second_summary": summary_line(controls.all_control_b),
                        "unstable": sorted(controls.unstable),
                        "left_out_targets": controls.unusable,
                        "census": {k: sorted(v) for k, v in controls.census.items()},
                        "seconds": controls.dur,
                        "runs": controls.names, "reference": args.reference,
                        "wall_s": controls.seconds,
                        "target_rules": {k: sorted(v) for k, v in controls.target_rules.items()}},
            "config": {"bundle": inputs.bundle, "shim": inputs.shim, "catalogue": inputs.catalogue_path,
                       "tags": args.tags, "jobs": args.jobs, "target_timeout_s": args.target_timeout,
                       "budget_s": args.budget, "serial_targets": [t["label"] for t in inputs.serial_targets],
                       "select": args.select, "sentinels": sentinels,
                       # Targets the tags leave out (stress, exclusive: those run alone by
                       # contract, and timing or host-counter cases mean nothing next to a dozen
                       # parallel runs), named so that no one reads the score as covering them.
                       "left_out_by_tags": sorted(t["label"] for t in inputs.manifest["targets"]
                                                  if t not in inputs.pool_targets
                                                  and t not in inputs.serial_targets),
                       "fault_runs": len(sched.done),
                       "seconds": round(time.monotonic() - t0, 1)},
            "faults": results,
            "variations": variations,
            "false_alarms": false_alarm_summary(variations)}


def write(out, doc):
    with open(os.path.join(out, "mutation.json"), "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    try:
        text = pages.render_mutation_page(doc)
    except pages.MissingDependency as e:
        # mutation.json is written and is the result; the page is a view of it.
        print(f"mutation: mutation.html not written: {e}", file=sys.stderr)
        return
    with open(os.path.join(out, "mutation.html"), "w", encoding="utf-8") as fh:
        fh.write(text)


def print_summary(doc, out):
    """The run's end on stdout; returns the exit code: 3 when a conforming variation raised a
    false alarm, else 0."""
    s, results, variations = doc["score"], doc["faults"], doc["variations"]
    if results:
        print(f"mutation: caught {s['KILLED'] + s['HANDLED']} of {s['counted']} faults "
              f"({s['percent']}%): KILLED={s['KILLED']} HANDLED={s['HANDLED']} "
              f"SURVIVED={s['SURVIVED']} ERROR={s['ERROR']} NOT_RUN={s['NOT_RUN']} "
              f"in {doc['config']['seconds']} s")
        for half, hs in (doc.get("score_by_half") or {}).items():
            print(f"mutation:   {half} half: {hs['line']}")
        for batch, bs in (doc.get("score_by_batch") or {}).items():
            if bs.get("blind"):
                print(f"mutation:   blind batch {batch} (written without sight of the tests): {bs['line']}")
    for r in results:
        if r["verdict"] in ("SURVIVED", "ERROR", "NOT_RUN"):
            print(f"  {r['verdict']} {r['name']} ({r['rule']}): "
                  f"{r.get('explanation') or r.get('note') or ''}")
    alarms = doc["false_alarms"]
    if variations:
        print(f"mutation: conforming variations: {alarms['line']} "
              f"(FALSE_ALARM={alarms['verdicts']['FALSE_ALARM']}) in {doc['config']['seconds']} s")
    for v in variations:
        if v["verdict"] != "CONFORMS":
            print(f"  {v['verdict']} {v['name']} ({v['rule']}): {v.get('note') or ''}")
        for c in v["false_alarms"]:
            print(f"    false alarm: {c['case']} {c['control']} -> {c['status']}: {c['message'][:160]}")
    print(f"mutation: wrote {out}/mutation.json and mutation.html")
    # A false alarm is a defect of the suite (it fails a conforming driver), not a driver fault:
    # exit 3 so that a CI step notices, while the mutation.json written above is complete.
    return 3 if alarms["count"] else 0
