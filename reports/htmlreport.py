"""Self-contained HTML report of one run: no network resources, every test-provided string
escaped, and a first screen that answers "what changed and why".

The page is rendered by Jinja2 (Debian's python3-jinja2, autoescape on) from
reports/templates/*.html.j2; this module prepares plain data for them (report.css and report.js
are included verbatim). Rendering is deterministic: the same run gives the same bytes (the
golden-file test in report_test.py holds it to reports/testdata/golden/*.html).

Page order (the morning review): the first line says what is under test (the
--label, GPU, driver, CUDA runtime; the browser tab: verdict, date, host, SKU); the verdict (and
the mutation score when the run folder has one); one line of raw counts and, labelled apart, the
counts against expectations and baseline; what changed, one cause a line: the cases that changed
for one reason (the same message once numbers, addresses, bytes, sizes and the case's parameter
words are left out) are one group with its count, every rule its cases cite with the rules'
sentences (suites/rules.tsv) on hover, the message cut at a word (the whole text one click away), the cases
folded and the first one's replay command -- 10 causes fit a 1440x900 screen; then, folded, the
run and the machine; the mutation section; the matrix grouped per suite; all cases, paged by
JavaScript from one JSON block (10,000 cases load in well under a second; above EAGER_CASES the
first page is apart and every case is parsed when a filter, search, page or link needs it);
the rules the cases cite; metrics.

URL state: `#case=<id>` opens one case; `#s=FAIL,REGRESSION&q=text&p=2` keeps the filters,
search and page. `#selftest` makes the page exercise itself and write what it saw into
`<pre id="selftest">` (the browser tests read it).

Rendering needs jinja2 in this interpreter (reports/pages.py): without it render() raises
pages.MissingDependency (an OSError: the callers write results.json, JUnit and the CSVs first and
report it as an infrastructure error, exit 1). The commands choose their interpreter at entry
(reports/interpreter.py).
"""

import json
import os
import re
import shlex

from reports import model, pages
from reports.compare import elsewhere_json
# Re-exported: the callers catch htmlreport.MissingDependency; the tests read the colours.
from reports.pages import STATUS_COLORS, MissingDependency, css  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))

# Short cell labels for the matrix (the cell's title and the legend have the full name).
SHORT = {"PASS": "ok", "WARN": "warn", "NOT_SUPPORTED": "n/s", "SKIP": "skip", "FAIL": "FAIL",
         "TIMEOUT": "T/O", "CRASH": "CRASH", "INFRA_ERROR": "INFRA", "MISSING": "miss"}

PAGE_SIZE = 100  # case rows per page
# Above this many cases the page embeds its first page of cases apart from all of them, which the
# browser parses only when a filter, search, page or case link needs them: measured in headless
# Chromium (2 shared cores), 100,000 cases are ready in 0.9 s when parsed at load, 1,000,000 in
# 8.2 s; lazily, the million-case page is ready in 0.9 s and its first filter takes 6-12 s.
EAGER_CASES = 200000
# A family's matrix table (report.js buildMatrix) shows at most this many tests (rows) and
# parameters (columns); a note under it says what is left out and searches the case list for the
# family. A fuzzing family or a huge matrix of a million cases otherwise never renders.
MATRIX_ROWS = 500
MATRIX_COLUMNS = 200
MUTATION_CASES_SHOWN = 30  # cases listed per fault in the mutation section (all are in mutation.json)
MUTATION_JSON = os.path.join("mutation", "mutation.json")  # in the run folder


# ---------------------------------------------------------------------------------------------
# Failure messages

_BOILER = re.compile(r"^(Failure|Google Test trace:|Stack trace:|\[\s*FAILED\s*\].*)$")
_LOC = re.compile(r"^\S+:\d+(:\s*(Failure)?)?$")
MESSAGE_SHOWN = 200  # characters of a one-line reason shown before it is cut (at a word, with '…')


def first_line(message):
    """The first line of a failure message that is not just a 'file:line' location."""
    for line in message.splitlines():
        if line.strip() and not re.fullmatch(r"\S+:\d+", line.strip()):
            return line.strip()
    return message.strip()


def meaningful_lines(message):
    """The message's lines without gtest's locations ('file:line: Failure') and boilerplate."""
    lines = [l.rstrip() for l in message.splitlines()]
    return [l for l in lines if l.strip() and not _LOC.match(l.strip()) and not _BOILER.match(l.strip())]


# A CUDA call check's own line (fixtures/cuda_check.cc): 'EXPR returned ACTUAL, expected WANTED'
# or 'KEY returned GOT, not one of the documented {...}'.
_CALL_CHECK = re.compile(r"^\S.* returned .+, (expected|not one of) ")


def headline(message):
    """The one meaningful line of a failure message: the assertion's own text, with gtest's
    boilerplate ('Expected equality of these values:', 'Value of:', file:line) folded into one
    sentence, and the test's own streamed explanation kept when there is one. Whole: the page
    cuts it for display (cut_at_word) and keeps the whole text one click away."""
    lines = meaningful_lines(message)
    if not lines:
        return message.strip()
    first = lines[0].strip()
    rest = lines[1:]
    said = ""
    if first.startswith("Expected equality of these values:"):
        exprs, i = [], 0
        while i < len(rest) and rest[i].startswith("  ") and len(exprs) < 2:
            expr, val = rest[i].strip(), None
            i += 1
            if i < len(rest) and rest[i].strip().startswith("Which is:"):
                val = rest[i].strip()[len("Which is:"):].strip()
                i += 1
            exprs.append(f"{expr} (= {val})" if val else expr)
        said = " != ".join(exprs) if exprs else first
        tail = [l.strip() for l in rest[i:] if l.strip()]
    elif first.startswith("Value of:"):
        expr = first[len("Value of:"):].strip()
        vals = {}
        j = 0
        while j < len(rest) and re.match(r"^\s*(Actual|Expected|Which is):", rest[j]):
            k, _, v = rest[j].strip().partition(":")
            vals[k] = v.strip()
            j += 1
        said = f"{expr}: actual {vals.get('Actual', '?')}, expected {vals.get('Expected', '?')}"
        tail = [l.strip() for l in rest[j:] if l.strip()]
    elif re.match(r"^Expected: \(.*\) (==|!=|<|<=|>|>=) \(.*\), actual: ", first):
        said, tail = first[len("Expected: "):], [l.strip() for l in rest if l.strip()]
    elif _CALL_CHECK.match(first):
        # fixtures/cuda_check.cc: 'e returned X, expected Y' names the variable, not the call;
        # the line streamed after it says which call it was.
        said, tail = first, [l.strip() for l in rest if l.strip()]
    else:
        return first
    # A message streamed with << follows the values: it says why, so it leads.
    tail = [t for t in tail if not t.startswith("Which is:")]
    return f"{tail[0]} — {said}" if tail else said


def cut_at_word(text, limit=MESSAGE_SHOWN):
    """text when it fits, else its longest prefix ending at a word boundary within limit,
    followed by an ellipsis (never a word cut in two, as '— o' was)."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[:limit + 1]
    space = cut.rfind(" ")
    cut = cut[:space] if space > limit // 2 else text[:limit]
    return cut.rstrip(" ,;:—-") + "…"


# A cause is a message with its values left out: two cases failing for one reason
# differ only in numbers, addresses, bytes and sizes.
_NORMALISE = [(re.compile(p), r) for p, r in (
    (r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4,12}){2,}\b", "<uuid>"),  # GPU UUIDs
    (r"\b0x[0-9a-fA-F]+\b", "<hex>"),  # addresses, bit masks
    (r"\\x[0-9a-fA-F]{2}", "<byte>"),  # gtest's '\xEE' for a byte
    (r"\b\d+(?:\.\d+)?\s*(?:[KMGT]i?B|bytes?)\b", "<size>"),
    (r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", "<n>"),
    (r"'[^']{1,2}'", "<char>"),  # a printable byte gtest quotes
)]


def _without_param_words(text, cid):
    """The message with the case's parameter words left out: 'Pinned MemcpyAsync D2H ...' of
    '.../Pinned_MemcpyAsync' and 'Pageable MemcpyAsync D2H ...' of '.../Pageable_MemcpyAsync'
    are one cause."""
    name = cid.rsplit(".", 1)[-1]
    if "/" not in name:
        return text
    for word in re.split(r"[_\W]+", name.rsplit("/", 1)[1]):
        if len(word) >= 3:
            text = re.sub(r"\b" + re.escape(word) + r"\b", "<param>", text, flags=re.IGNORECASE)
    return text


def normalise_message(text):
    """The message a cause is keyed on: numbers, addresses, hex, bytes and sizes left out."""
    for rx, repl in _NORMALISE:
        text = rx.sub(repl, text)
    return " ".join(text.split())


# ---------------------------------------------------------------------------------------------
# Rules (suites/rules.tsv): every rule id the page shows carries its sentence.

RULES_TSV = os.path.join(os.path.dirname(HERE), "suites", "rules.tsv")
_RULES = {}


def rules_table(path=None):
    """{rule id: (family, sentence)} from suites/rules.tsv; {} when it cannot be read (the ids
    are then shown bare)."""
    path = path or RULES_TSV
    if path not in _RULES:
        table = {}
        try:
            with open(path, encoding="utf-8") as f:
                header = f.readline().rstrip("\n").split("\t")
                for line in f:
                    row = dict(zip(header, line.rstrip("\n").split("\t")))
                    if row.get("id"):
                        table[row["id"]] = (row.get("family", ""), row.get("rule", ""))
        except OSError:
            pass
        _RULES[path] = table
    return _RULES[path]


NO_RULES = "rule text unavailable: suites/rules.tsv was not found beside the report tool"


def rule_text(rule_id, rules):
    """The rule's sentence; what is missing when the table lacks it (or there is no table)."""
    if rule_id in rules:
        return rules[rule_id][1]
    return "not in suites/rules.tsv" if rules else NO_RULES


def rule_refs(ids, rules):
    """[(id, sentence)] for the page."""
    return [(i, rule_text(i, rules)) for i in ids]


def repro_command(case_id, info):
    """The command that writes a case's reproducer for a driver team (tools/qualify --repro,
    tools/qualification/repro.py), from the checkout the run was made from; None for a page of
    no qualify run."""
    if not (info or {}).get("run_key"):
        return None
    out = ""
    words = str(info.get("command", "")).split(" ")
    for i, w in enumerate(words):
        value = w.split("=", 1)[1] if w.startswith("--out=") else (words[i + 1] if w == "--out" and
                                                                  i + 1 < len(words) else None)
        if value and value.rstrip("/") != "runs":
            out = f" --out {shlex.quote(value)}"
    return f"tools/qualify --repro {model.single_quoted(case_id)} --run {shlex.quote(info['run_key'])}{out}"


def _case_json(c, comp, prefixes, run_seed, repro=None):
    """The compact record the page's JavaScript decodes: [prefix index, rest of the id, raw
    status, seconds, rules, case seed, {other fields, empty ones left out} or 0]. 10,000 cases
    are about 0.5 MB; the browser test measures the load."""
    prefix, rest = f"{c.target[2:]}/{c.suite}.", c.name  # c.id == prefix + rest
    pi = prefixes.setdefault(prefix, len(prefixes))
    d = {}
    if comp:
        d["c"] = str(comp)
    if c.message:
        d["m"] = c.message
        d["h"] = c.reason or headline(c.message)
    if c.reason:
        d["rs"] = c.reason
    if c.status in _FAILING or c.status == model.Status.WARN or len(c.attempts) > 1 or \
            (comp and str(comp) not in ("NEW", "FIXED")):
        d["rp"] = c.replay_command()
        if repro is not None and (c.status.is_fail or c.flaky):
            d["rx"] = repro(c.id)
    if c.first_failure:
        d["ff"] = c.first_failure
    if c.conflicts:  # the conflict rule's note leads: why the worse status stands
        d["h"] = c.conflicts[0]
    x = [["conflicting evidence", note] for note in c.conflicts]
    if len(c.attempts) > 1:
        x.append(["attempts", " ".join(map(str, c.attempts))])
    if c.run_seed is not None and str(c.run_seed) != str(run_seed):
        x.append(["run seed", str(c.run_seed)])
    for title, dd in (("metric", c.metrics), ("budget", c.budgets), ("observed", c.observed)):
        for k, v in dd.items():
            x.append([f"{title} {k}", str(v)])
    if c.child:
        x.append(["child", c.child])
    if c.health:
        x.append(["health", c.health])
    for k, v in c.extra.items():
        x.append([k, str(v)])
    if x:
        d["x"] = x
    if c.logs:
        d["lg"] = {k: str(v) for k, v in c.logs.items()}
    return [pi, rest, str(c.status), round(c.seconds, 3), ",".join(c.rules),
            str(c.seed) if c.seed is not None else 0, d or 0]


def _sort_key(c, comp_status):
    ch = comp_status.get(c.id)
    blocking = bool(ch and model.Change(str(ch)).blocks) if ch else False
    return (0 if blocking else 1, -c.status.severity if c.status.is_fail else 0, c.id)



def _json_text(obj):
    """JSON for <script type=application/json>: '<', '>' and '&' escaped so that no test output
    can end the element (the template inserts it as is)."""
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False, default=str)
    return pages.markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


# ---------------------------------------------------------------------------------------------
# The first screen: what changed and why (changes.html.j2)

def reason_line(case):
    """A case's one-line reason: its conflicting evidence when there was some (the first
    conflict: why the worse status stands), else the model's reason when it has one, else the
    meaningful line of its failure message, else (a retry passed) its failed attempt's."""
    if case.conflicts:
        return case.conflicts[0]
    if case.reason:
        return case.reason
    if case.message:
        return headline(case.message)
    if case.first_failure:
        return "failed attempt: " + headline(case.first_failure)
    return ""


def _change_row(kind, now, cid, case, note="", baseline_status=None):
    """One affected case of a cause. kind: comparison status (or raw status without one)."""
    msg = (reason_line(case) if case is not None else "") or note
    r = {"kind": kind, "now": now, "cid": cid, "linked": case is not None, "msg": msg, "note": note,
         "baseline_status": baseline_status, "rules": list(case.rules) if case else [],
         "attempts": " ".join(map(str, case.attempts)) if case and len(case.attempts) > 1 else "",
         "klog": "", "klog_more": "", "replay": "",
         "fails": case is not None and (case.status.is_fail or case.flaky)}
    klog = "\n".join(v for k, v in sorted(case.logs.items()) if k.startswith("kernel_log")) \
        if case is not None else ""
    if klog:  # driver-side evidence beside the failure (runner: kernel log while the case ran)
        lines = klog.splitlines()
        r["klog"] = "\n".join(lines[:3])
        r["klog_more"] = f" (+{len(lines) - 3} more in details)" if len(lines) > 3 else ""
    if case is not None and (case.status.is_fail or case.flaky or kind in ("FLAKE", "UNEXPECTED_PASS",
                                                                           "COVERAGE_LOST")):
        r["replay"] = case.replay_command()
    return r


GROUPS_SHOWN = 20  # causes on the first screen before the rest fold (10 fit at 1440x900)
# Cases listed under one cause (in its folded list); the rest are counted, and the case list's
# filters find them. 10^6 dropped cases of a big baseline are one cause, not 10^6 list items:
# the page stays the same size whatever the baseline holds.
ROWS_SHOWN = 200


def cause_groups(rows, rules):
    """Rows of one change kind grouped by cause: the message with its values left out. The rule
    ids are not part of the key (one missing GPU loses cases of a hundred rules for one reason);
    a group lists every rule its cases cite. Most cases first; each group keeps its rows in
    order, the first one leading."""
    groups = {}
    for r in rows:
        key = (r["kind"], normalise_message(_without_param_words(r["msg"], r["cid"])))
        groups.setdefault(key, []).append(r)
    out = []
    for (kind, _), members in groups.items():
        first = members[0]
        text = " ".join(first["msg"].split())
        ids = sorted({i for m in members for i in m["rules"]})
        count = sum(1 + m.get("more", 0) for m in members)  # "more": cases counted, not listed
        out.append({"kind": kind, "count": count, "rules": rule_refs(ids, rules), "msg": text,
                    "msg_cut": cut_at_word(text), "first": first, "rows": members[:ROWS_SHOWN],
                    "rows_more": count - min(len(members), ROWS_SHOWN),
                    "replay": next((m["replay"] for m in members if m["replay"]), ""),
                    "replay_cid": next((m["cid"] for m in members if m["replay"] and m["fails"]), ""),
                    "repro": ""})
    out.sort(key=lambda g: -g["count"])  # stable: ties keep the order of their first case
    return out


def _fold(groups):
    return {"shown": groups[:GROUPS_SHOWN], "folded": groups[GROUPS_SHOWN:],
            "folded_cases": sum(g["count"] for g in groups[GROUPS_SHOWN:])}


def changes_context(run, comp=None, baseline=None, rules=None, repro=None):
    """Causes of the regressions, coverage lost, dropped, crashes, timeouts, new flakes and
    unexpected passes, most serious kind first; the rest of the differences (expected failures,
    known flakes, fixed, new) folded, grouped the same way. repro: case id -> the command that
    writes its reproducer (repro_command), beside each cause's replay command."""
    rules = rules_table() if rules is None else rules
    by_id = run.by_id()
    kinds, other = [], []
    listed = set()
    if comp is not None:
        machine = [_change_row(str(s), None, key, None, why) for key, s, why in comp.machine]
        if machine:
            kinds.append(machine)
        base = baseline.by_id() if baseline else {}
        by_change = {}
        for cid, s in sorted(comp.status.items()):
            if cid in by_id:
                by_change.setdefault(str(s), []).append(cid)
        for st in model.Change:  # most serious first
            group = []
            for cid in by_change.get(str(st), ()):
                c = by_id[cid]
                r = _change_row(str(st), str(c.status), cid, c, comp.notes.get(cid, ""),
                                str(base[cid].status) if cid in base and st in (
                                    model.Change.COVERAGE_LOST, model.Change.FIXED) else None)
                listed.add(cid)
                (group if st.blocks else other).append(r)
            if st == model.Change.DROPPED:
                covered_ids = set(comp.dropped_covered)
                listed_rows = {True: [], False: []}
                for cid in comp.dropped:  # a row for the first ROWS_SHOWN of each kind, a count after
                    covered = cid in covered_ids
                    rows_of = listed_rows[covered]
                    if len(rows_of) >= ROWS_SHOWN:
                        rows_of[-1]["more"] = rows_of[-1].get("more", 0) + 1
                        continue
                    prev = base.get(cid)
                    r = _change_row("KNOWN_COVERAGE_LOSS" if covered else "DROPPED", None, cid, None,
                                    "in the baseline, not in this run" +
                                    (" (an expectation names it)" if covered else ""),
                                    str(prev.status) if prev else None)
                    rows_of.append(r)
                    (other if covered else group).append(r)
            if group:
                kinds.append(group)
    # Crashes and timeouts always show, even when an expectation covers them; with a comparison,
    # plain failures are regressions or expected.
    shown = [model.Status.CRASH, model.Status.TIMEOUT, model.Status.INFRA_ERROR, model.Status.MISSING]
    if comp is None:
        shown.append(model.Status.FAIL)
    failing = sorted(((c.id, c) for c in run.cases if c.status in shown), key=lambda ic: ic[0])
    for kind in shown:
        group = [_change_row(str(comp.status.get(cid, kind)) if comp else str(kind), str(c.status), cid, c,
                             comp.notes.get(cid, "") if comp else "")
                 for cid, c in failing if c.status == kind and cid not in listed]
        if group:
            kinds.append(group)
    causes = [g for rows in kinds for g in cause_groups(rows, rules)]
    others = cause_groups(other, rules)
    for g in causes + others if repro else ():
        g["repro"] = repro(g["replay_cid"]) if g["replay_cid"] else ""
    return {"compared": comp is not None, "causes": _fold(causes), "n_causes": len(causes),
            "n_changed": sum(g["count"] for g in causes), "other_causes": others,
            "n_other": sum(g["count"] for g in others), "kernel_log_note": kernel_log_note(run)}


def kernel_log_note(run):
    """Whether driver-side evidence could be collected: the runner records how it read the kernel
    log (pagelock_kernel_log); Bazel runs have none."""
    how = run.fingerprint.get("pagelock_kernel_log", "")
    lines = sum(1 for c in run.cases if any(k.startswith("kernel_log") for k in c.logs))
    if how.startswith("read from"):
        outside = run.kernel_log
        bad = run.kernel_faults()
        run_level = (f" {len(outside)} line(s) were logged while no case ran (the run level"
                     + (f"; {len(bad)} report a fault and fail the run's health, the first: "
                        f"{bad[0]['line']}" if bad else "") + ").") if outside else ""
        return (f"Kernel log {how}: driver lines (NVRM, Xid, oom-kill, IOMMU) while a case ran are "
                f"shown with it; {lines} case(s) have some.{run_level}")
    if how:
        return f"Kernel log {how}: no driver-side evidence (NVRM, Xid, oom-kill, IOMMU) in this report."
    return ("Kernel log not captured (only the bundle runner and qualify capture it): no driver-side "
            "evidence in this report.")


def machine_context(run):
    fp = run.fingerprint
    attr = re.compile(r"gpu\d+_cudaDevAttr")
    return {"machine_summary": ", ".join(x for x in (
                fp.get("gpu0_name"), fp.get("nvidia_driver") and "driver " + fp["nvidia_driver"],
                fp.get("host")) if x) or "no fingerprint",
            "machine_rows": [(k, fp[k]) for k in fp if not attr.match(k)],
            "device_attrs": [(k, fp[k]) for k in sorted(k for k in fp if attr.match(k))]}


_FAILING = frozenset(s for s in model.Status if s.is_fail)


def matrix_context(cases):
    """Test x parameter (flag combination) matrix of worst status, one folded table per suite
    family with only the columns that family uses (the page's JavaScript fills it when opened,
    MATRIX_ROWS x MATRIX_COLUMNS at most; the summary says when the table is cut)."""
    fams = {}
    for c in cases:
        cid = c.cid
        test, slash, p = cid.case.rpartition("/")
        if not slash:
            continue
        family = cid.target[2:].split(":", 1)[0].rsplit("/", 1)[-1]  # Case.family, without the views
        f = fams.get(family)
        if f is None:
            f = fams[family] = {"rows": set(), "params": set(), "bad": 0}
        f["rows"].add(f"{cid.suite.rsplit('/', 1)[-1]}.{test}")
        f["params"].add(p)
        f["bad"] += c.status in _FAILING
    return {"families": [{"name": fam, "rows": len(fams[fam]["rows"]), "params": len(fams[fam]["params"]),
                          "bad": fams[fam]["bad"]} for fam in sorted(fams)],
            "short_labels": list(SHORT.items()), "matrix_rows": MATRIX_ROWS, "matrix_columns": MATRIX_COLUMNS}


# ---------------------------------------------------------------------------------------------
# The mutation score (tools/mutation/mutation.py writes mutation.json)

def load_mutation(run_dir):
    """The run folder's mutation/mutation.json as a dict; None when there is none; {"error": ...}
    when it cannot be read (the page says so rather than hiding it)."""
    path = os.path.join(run_dir, MUTATION_JSON)
    if not os.path.isfile(path):
        return None
    return read_mutation(path)


def read_mutation(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or not isinstance(doc.get("score"), dict) \
                or not isinstance(doc.get("faults"), list):
            raise ValueError("no score or faults")
        return doc
    except (OSError, ValueError) as e:
        return {"error": f"{path} could not be read ({e}): no mutation score for this run."}


def mutation_line(doc):
    """The first screen's line: what the mutation score means, in one sentence."""
    s = doc["score"]
    caught = s.get("KILLED", 0) + s.get("HANDLED", 0)
    pct = "n/a" if s.get("percent") is None else f"{s['percent']}%"
    line = (f"the suite caught {caught} of {s.get('counted', 0)} injected driver faults on this machine "
            f"(score {pct})")
    skipped = [f"{s[k]} {what}" for k, what in (("NOT_RUN", "not run (time budget)"),
                                                ("ERROR", "not loaded")) if s.get(k)]
    held = (doc.get("score_by_half") or {}).get("heldout")
    if held and held.get("counted"):
        line += (f"; on the held-out half, faults its tests were not written for, "
                 f"{held['KILLED'] + held['HANDLED']} of {held['counted']} ({held['percent']}%)")
    for batch, bs in (doc.get("score_by_batch") or {}).items():
        if bs.get("blind") and bs.get("counted"):
            line += (f"; on blind batch {batch}, faults written without sight of the tests, "
                     f"{bs['KILLED'] + bs['HANDLED']} of {bs['counted']} ({bs['percent']}%)")
    return line + ("; " + ", ".join(skipped) if skipped else "")


def mutation_context(doc, case_ids=()):
    if not doc:
        return None
    if "error" in doc:
        return {"error": doc["error"]}
    ids = set(case_ids)
    faults = []
    for r in doc["faults"]:
        why = r.get("explanation") or r.get("note") or ""
        cases = []
        for c in (r.get("caught_by") or []) + (r.get("handled_cases") or []):
            cases.append({"case": c.get("case", ""), "control": c.get("control", ""), "fault": c.get("fault", ""),
                          "linked": c.get("case") in ids,
                          "why": cut_at_word(headline(c["message"])) if c.get("message") else c.get("reason", "")})
        faults.append({"name": r.get("name", ""), "verdict": r.get("verdict", ""), "rule": r.get("rule", ""),
                       "description": r.get("description", ""), "cases": cases,
                       "why": why or ("unexplained" if r.get("verdict") == "SURVIVED" else "")})
    control = doc.get("control", {})
    line = mutation_line(doc)
    return {"error": None, "line": line[0].upper() + line[1:], "score": doc["score"],
            "faults": faults, "survivors": [f for f in faults if f["verdict"] == "SURVIVED"],
            "control_summary": control.get("summary", "?"), "unstable": len(control.get("unstable", [])),
            "by_half": doc.get("score_by_half") or {}, "by_shape": doc.get("score_by_shape") or {},
            "by_batch": doc.get("score_by_batch") or {},
            "cases_shown": MUTATION_CASES_SHOWN}


# ---------------------------------------------------------------------------------------------
# The page

def rules_cited(cases, rules):
    """The Rules section: every rule a case of the run cites, with how many of its cases failed."""
    failing, cited = {}, set()
    for c in cases:
        cited.update(c.rules)
        if c.status.is_fail:
            for r in c.rules:
                failing[r] = failing.get(r, 0) + 1
    def order(r):  # R01 < R10 < S01: family letter, then number
        m = re.match(r"([A-Za-z]+)(\d+)$", r)
        return (m.group(1), int(m.group(2)), r) if m else (r, 0, r)
    return [{"id": r, "family": rules.get(r, ("", ""))[0],
             "text": rule_text(r, rules), "failing": failing.get(r, 0)}
            for r in sorted(cited, key=order)]


def render(run, title="pagelock report", verdict=None, extra_sections=(), comp=None,
           baseline=None, folded_sections=(), mutation=None, page_title=None, rules=None, first_night=None,
           repro=None):
    """run: model.Run. verdict: (text, color) or None. comp: a reports.compare.Comparison
    against expectations and baseline (its statuses are shown beside the raw statuses).
    folded_sections go right after the changes (HTML from run_info_section), extra_sections
    after the cases (HTML from metrics_section). mutation: a mutation.json dict (load_mutation).
    title is the page's first line; page_title the browser tab's (default: title). rules:
    {id: (family, sentence)} (default: suites/rules.tsv). first_night: reports/first_night.py's
    context (results.json info.first_night), shown right after the first screen. repro: case id ->
    the command writing its reproducer (repro_command), for the failed cases."""
    rules = rules_table() if rules is None else rules
    comp_status = comp.status if comp is not None else {}
    comp_counts = {k: n for k, n in (comp.summary if comp is not None else {}).items() if n}
    fp = run.fingerprint
    seed = model.run_seed_of(fp)
    counts = run.counts()
    cited = rules_cited(run.cases, rules)
    ctx = {
        "title": title, "page_title": page_title or title, "css": pages.markup(css()), "verdict": verdict,
        "summary": model.format_counts(counts).splitlines()[-1], "n_cases": len(run.cases), "seed": seed,
        "mutation_line": mutation_line(mutation) if mutation and "error" not in mutation else "",
        "raw_counts": [(s, counts[s]) for s in model.STATUSES if counts.get(s)],
        "comp_counts": sorted(comp_counts.items()),
        "stale": comp.stale if comp is not None else [], "problems": run.problems,
        "folded_sections": [pages.markup(s) for s in folded_sections],
        "extra_sections": [pages.markup(s) for s in extra_sections],
        "mutation": mutation_context(mutation, (c.id for c in run.cases)),
        "filter_statuses": [s for s in model.STATUSES if counts.get(s)],
        "filter_changes": sorted({str(v) for v in comp_status.values()}),
        "n_lazy": len(run.cases) if len(run.cases) > EAGER_CASES else 0,
        "rules_cited": cited,
        "first_night": first_night,
        "host_line": host_line(fp),
        "elsewhere": [elsewhere_json(e, why, n) for e, why, n in (comp.elsewhere if comp is not None else [])],
    }
    data = case_data(run, comp_status, seed, {r["id"]: r["text"] for r in cited}, repro)
    if ctx["n_lazy"]:  # the first page now, every case when the reader asks (report.js ensureAll)
        every = data["cases"]
        data.update(cases=every[:PAGE_SIZE], lazy=True, total=len(every))
        ctx["case_data_all"] = _json_text(every)
    ctx["case_data"] = _json_text(data)
    ctx.update(changes_context(run, comp, baseline, rules, repro))
    ctx.update(machine_context(run))
    ctx.update(matrix_context(run.cases))
    return pages.render("page.html.j2", **ctx)


def case_data(run, comp_status, seed, rule_text, repro=None):
    """What the page's JavaScript pages through: every case, most serious first."""
    ordered = sorted(run.cases, key=lambda c: _sort_key(c, comp_status))
    prefixes = {}
    rows = [_case_json(c, comp_status.get(c.id), prefixes, seed, repro) for c in ordered]
    return {"pageSize": PAGE_SIZE, "matrixRows": MATRIX_ROWS, "matrixColumns": MATRIX_COLUMNS,
            "known": list(STATUS_COLORS), "runSeed": str(seed or ""),
            "short": SHORT, "severity": {st.value: st.severity for st in model.Status},
            "prefixes": list(prefixes), "rules": rule_text, "cases": rows}


# ---------------------------------------------------------------------------------------------
# Qualification report: verdict, run info, changes against expectations and baseline, metrics.

def bar_chart(items, unit):
    """Inline SVG horizontal bars (metrics.html.j2): items = [(label, value)]."""
    width, bar_h, label_w = 760, 18, 330
    top = max(v for _, v in items) or 1.0
    bars = []
    for i, (label, v) in enumerate(items):
        y = 5 + i * (bar_h + 6)
        w = max(1, (width - label_w - 90) * v / top)
        bars.append({"label": label, "label_x": label_w - 6, "y": y, "text_y": y + 13, "w": f"{w:.1f}",
                     "value_x": f"{label_w + w + 4:.1f}", "value": f"{v:.2f}"})
    return {"width": width, "height": len(items) * (bar_h + 6) + 10, "bar_h": bar_h, "label_w": label_w,
            "unit": unit, "bars": bars}


def sparkline(values, width=160, height=28):
    if len(values) < 2:
        return {"one": True, "points": ""}
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    pts = " ".join(f"{i * (width - 4) / (len(values) - 1) + 2:.1f},{height - 3 - (v - lo) * (height - 6) / span:.1f}"
                   for i, v in enumerate(values))
    return {"points": pts, "last": pts.split(" ")[-1].split(","), "width": width, "height": height}


def metrics_section(run, trends):
    """HTML of the metrics section ('' without metrics); render() takes it in extra_sections."""
    rows, groups = [], {}
    for c in run.cases:
        for name, m in sorted(c.metrics.items()):
            if m.finite:  # nan/inf are shown as such in the table, never drawn
                groups.setdefault(m.unit, []).append((name, m.value))
            t = trends.get(name, [])
            rows.append({"name": name, "value": f"{m.value:.3f}" if m.finite else repr(m.value), "unit": m.unit,
                         "cid": c.id, "spark": sparkline([x[2] for x in t]) if t else {"one": False, "points": ""},
                         "last": " ".join(f"{x[2]:.1f}" for x in t[-6:])})
    if not rows:
        return ""
    # Counts of different things share no scale; the table has them.
    charts = [bar_chart(items, unit) for unit, items in sorted(groups.items()) if unit not in ("count", "")]
    return pages.render("metrics.html.j2", rows=rows, charts=charts)


def run_info_section(run, info):
    fp = run.fingerprint
    rows = [("run", info.get("run_key", ""), False), ("tier", info.get("tier", ""), False),
            ("harness commit", info.get("bundle", {}).get("commit", ""), False),
            ("rule profile applied", fp.get("rule_profile", ""), False),
            ("baseline", info.get("baseline", ""), False),
            ("expectations", ", ".join(f"{k} ({v[:12]})" for k, v in info.get("expectations", {}).items())
             or "none", False),
            ("retries of failed cases", info.get("retries", ""), False),
            ("command", info.get("command", ""), True)]
    rows += [(k, v, True) for k, v in sorted(info.get("outputs", {}).items())]
    # Why the verdict is what it is when a step after the comparison changed it (the history
    # could not take the run), and under which key the history holds the run.
    rows += [(title, str(info[key]), False) for title, key in (
        ("verdict reason", "verdict_reason"), ("verdict reached before", "verdict_reached"),
        ("history", "history"), ("history key", "history_key")) if info.get(key)]
    if info.get("label"):
        rows.insert(0, ("change under test", info["label"], False))
    return pages.render("run_info.html.j2", run_key=info.get("run_key", ""), tier=info.get("tier", ""),
                     label=info.get("label", ""), rows=rows)


def render_qualification(run, info, comp, baseline, trends, mutation=None):
    """The qualification page. mutation: the run folder's mutation.json (load_mutation)."""
    title, page_title = qualification_titles(run, info, comp)
    return render(run, title=title, verdict=comp.verdict, comp=comp, baseline=baseline,
                  folded_sections=[run_info_section(run, info)],
                  extra_sections=[metrics_section(run, trends)], mutation=mutation, page_title=page_title,
                  first_night=info.get("first_night"),
                  repro=(lambda cid: repro_command(cid, info)) if info.get("run_key") else None)


def host_line(fp):
    """The host setup the cases depend on, in one line for the first screen ('' for a run that
    did not record it): IOMMU mode, hugetlb pool, swap, KSM, memory cgroup."""
    if "host_iommu" not in fp:
        return ""
    pool = fp.get("host_hugetlb_2m_pages", "?")
    parts = [f"IOMMU {fp['host_iommu']}",
             f"hugetlb 2 MiB pool {pool if pool not in ('0', '-1') else 'none'}",
             f"swap {fp.get('host_swap_MiB', '?')} MiB" if fp.get("host_swap_MiB") not in ("0", None) else "swap none",
             f"KSM {'on' if fp.get('host_ksm_run') == '1' else 'off'}",
             f"THP {fp.get('host_thp', '?')}",
             "memory cgroup " + ("yes" if "memory-cgroup" in fp.get("host_facts", "") else "no")]
    return " · ".join(parts)


def _cuda_version(v):
    """'13000' (CUDA's integer) -> '13.0'; anything else as it is."""
    try:
        n = int(v)
    except (TypeError, ValueError):
        return str(v)
    return f"{n // 1000}.{n % 1000 // 10}"


def qualification_titles(run, info, comp):
    """(first line, browser tab title). The first line says what is under test: the change
    (--label), GPU, driver, CUDA runtime. The tab says verdict, date, host and SKU, so a
    morning's tabs and bookmarks tell the nights apart."""
    fp = run.fingerprint
    what = [fp.get("gpu0_name") or "no GPU", "driver " + fp.get("nvidia_driver", "?")]
    if fp.get("cuda_runtime_version"):
        what.append("CUDA runtime " + _cuda_version(fp["cuda_runtime_version"]))
    label = info.get("label", "")
    title = "pagelock qualification: " + (f"{label} — " if label else "") + ", ".join(what)
    date = str(info.get("started_at", ""))[:10] or str(info.get("run_key", ""))[:8]
    tab = [comp.verdict[0], date, fp.get("host", ""), info.get("sku", "") or fp.get("gpu0_name", ""), label]
    return title, " · ".join(x for x in tab if x) + " — pagelock qualification"
