"""Which targets each fault runs, in phases: 1. those with a case naming its rule or in its
family folder, 2. the sentinels (a few cheap binaries that call the most catalogue entries per
second), 3. every other binary it reaches (the sweep)."""

import re

from tools.mutation.catalogue import is_variation, rules_of, target_scope


def pick_sentinels(usable, census, dur, entries, count):
    """A cheap, broad set of targets every fault also runs: greedily the target that calls the
    most catalogue entry points not yet covered per second of its control, `count` at most."""
    chosen, covered = [], set()
    for _ in range(count):
        best, best_score = None, 0.0
        for label in sorted(usable):
            if label in chosen:
                continue
            new = (census.get(label, set()) & entries) - covered
            value = len(new) / (dur.get(label, 10.0) + 1.0)
            if new and value > best_score:
                best, best_score = label, value
        if not best:
            break
        chosen.append(best)
        covered |= census.get(best, set())
    return chosen


def family_of(label):
    """'hostalloc' for //suites/hostalloc:hostalloc_test; '' outside suites/."""
    m = re.match(r"//suites/([^:/]+)[:/]", label)
    return m.group(1) if m else ""


def select_for_fault(fault, usable, census, target_rules, dur, sentinels, select="rules"):
    """The targets one fault runs, as [(label, phase, why)] in the order they should run.
    reached: usable targets whose control called an entry point the fault changes (all usable
    ones when the catalogue names none): a binary that never calls them cannot behave otherwise.
    phase 1 'rule'/'family': reached targets with a case naming the fault's rule, or in the
    fault's family folder (suites/<family>), cheapest first; phase 2 'sentinel': the reached
    sentinels; phase 3 'sweep': every other reached target, run only while the fault is not
    caught and the budget lasts. select='all' puts every reached target in phase 1.
    A conforming variation runs phase 1 only (the binaries that test its rules or family: the
    quick check); select='all' runs it against every reached target. A variation that names its
    targets (conforming.tsv's targets, a regex) reaches no other, whatever select says."""
    entries = set(fault.get("entries", "").split())
    reached = [l for l in usable if not entries or census.get(l, set()) & entries]
    scope = target_scope(fault) if is_variation(fault) else None
    if scope:
        reached = [l for l in reached if scope.search(l)]
    cheap = lambda labels: sorted(labels, key=lambda l: (dur.get(l, 10.0), l))  # noqa: E731
    if select == "all":
        return [(l, 1, "reached") for l in cheap(reached)]
    rules = rules_of(fault)
    plan = [(l, 1, "rule") for l in cheap(l for l in reached
                                          if rules & set(target_rules.get(l, ())))]
    plan += [(l, 1, "family") for l in cheap(l for l in reached
                                             if family_of(l) == fault["family"]
                                             and l not in {p[0] for p in plan})]
    if is_variation(fault):
        return plan
    seen = {p[0] for p in plan}
    plan += [(l, 2, "sentinel") for l in sentinels if l in reached and l not in seen]
    seen = {p[0] for p in plan}
    plan += [(l, 3, "sweep") for l in cheap(l for l in reached if l not in seen)]
    return plan


def plans_for(catalogue, usable, controls, count, select):
    """{fault name: [(label, phase, why)]} of every catalogue row, and the sentinels. Sentinels
    serve the faults only (variations run no phase 2): chosen from the faults' entries, so
    --catalogue both scores the faults exactly as --catalogue faults does."""
    all_entries = set().union(*[set(f.get("entries", "").split()) for f in catalogue
                                if not is_variation(f)])
    sentinels = pick_sentinels(usable, controls.census, controls.dur, all_entries, count)
    plans = {f["name"]: select_for_fault(f, usable, controls.census, controls.target_rules, controls.dur,
                                         sentinels, select)
             for f in catalogue}
    return plans, sentinels
