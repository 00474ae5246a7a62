"""What a mutation run leaves: mutation.json (the document), mutation.html (page.write_page of
page_data) and the summary on stdout."""

import json
import os
import time

from tools.mutation import page
from tools.mutation.false_alarms import false_alarm_summary
from tools.mutation.scoring import score, score_line, summary_line


def make_doc(args, inputs, controls, sched, sentinels, results, variations, t0):
    """mutation.json's document."""
    s = score(results)
    return {"score": dict(s, line=score_line(s)),
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
    with open(os.path.join(out, "mutation.json"), "w") as fh:
        json.dump(doc, fh, indent=1)
    page.write_page(os.path.join(out, "mutation.html"), page_data(doc))


def page_data(doc):
    """What mutation.html shows, as a plain dict (no markup, nothing escaped)."""
    s = doc["score"]
    faults = []
    for r in doc["faults"]:
        cases = r.get("caught_by") or r.get("handled_cases") or []
        row = {k: r[k] for k in ("verdict", "name", "rule", "family", "description")}
        row.update(cases=[{k: c[k] for k in ("case", "control", "fault")} for c in cases[:30]],
                   case_count=len(cases), more=max(0, len(cases) - 30),
                   note=r.get("explanation") or r.get("note") or "")
        faults.append(row)
    return {"score": {"total": s.get("total"), "caught": s["KILLED"] + s["HANDLED"],
                      "counted": s["counted"],
                      "percent": "n/a" if s["percent"] is None else f"{s['percent']}%",
                      "killed": s["KILLED"], "handled": s["HANDLED"], "survived": s["SURVIVED"],
                      "errors": s["ERROR"], "not_run": s["NOT_RUN"]},
            "false_alarm_count": doc["false_alarms"]["count"] if doc.get("variations") else None,
            "control_summary": doc["control"]["summary"],
            "unstable": len(doc["control"]["unstable"]),
            "survivors": [{"name": r["name"], "rule": r["rule"], "description": r["description"],
                           "why": r.get("explanation") or r.get("note") or "unexplained",
                           "ran": r.get("targets_run") or []}
                          for r in doc["faults"] if r["verdict"] == "SURVIVED"],
            "faults": faults,
            "variations": _variations_data(doc)}


def _variations_data(doc):
    variations = doc.get("variations") or []
    if not variations:
        return None
    fa = doc["false_alarms"]
    return {"line": fa["line"], "count": fa["count"],
            "false_alarms": [{"variation": name, "case": c["case"], "control": c["control"],
                              "status": c["status"], "message": c["message"]}
                             for name, cases in fa["by_variation"].items() for c in cases],
            "rows": [{"name": v["name"], "verdict": v["verdict"], "note": v.get("note") or "",
                      "rule": v["rule"], "description": v["description"],
                      "justification": v.get("justification", ""),
                      "runs": len(v.get("targets_run") or [])} for v in variations]}


def print_summary(doc, out):
    """The run's end on stdout; returns the exit code: 3 when a conforming variation raised a
    false alarm, else 0."""
    s, results, variations = doc["score"], doc["faults"], doc["variations"]
    if results:
        print(f"mutation: caught {s['KILLED'] + s['HANDLED']} of {s['counted']} faults "
              f"({s['percent']}%): KILLED={s['KILLED']} HANDLED={s['HANDLED']} "
              f"SURVIVED={s['SURVIVED']} ERROR={s['ERROR']} NOT_RUN={s['NOT_RUN']} "
              f"in {doc['config']['seconds']} s")
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
