"""Self-contained HTML report of one run: no network resources, every test-provided string
escaped, filters and search in a few lines of inline JavaScript."""

import html
import re

from reports import model

STATUS_COLORS = {
    "PASS": "#2e7d32", "WARN": "#b7791f", "NOT_SUPPORTED": "#546e7a", "SKIP": "#78909c",
    "FAIL": "#c62828", "TIMEOUT": "#6a1b9a", "CRASH": "#b71c1c", "INFRA_ERROR": "#37474f",
    "MISSING": "#ef6c00", "EXPECTED_FAIL": "#8d6e63", "KNOWN_FLAKE": "#8d6e63",
    "FLAKE": "#f9a825", "UNEXPECTED_PASS": "#0277bd", "REGRESSION": "#d50000",
    "FIXED": "#00897b", "NEW": "#5c6bc0", "DROPPED": "#ff7043", "COVERAGE_LOST": "#ad1457",
    "KNOWN_COVERAGE_LOSS": "#8d6e63",
}

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em;color:#222}
h1{margin:0 0 .2em 0} h2{margin-top:1.6em;border-bottom:1px solid #ddd}
.verdict{font-size:1.4em;font-weight:bold;padding:.4em .8em;border-radius:6px;display:inline-block;color:#fff}
.counts span{display:inline-block;margin:.2em .4em .2em 0;padding:.2em .6em;border-radius:4px;color:#fff;font-weight:600}
table{border-collapse:collapse;font-size:.9em} td,th{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4} .st{color:#fff;font-weight:600;border-radius:3px;padding:0 .4em;white-space:nowrap}
.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85em;word-break:break-all}
td{max-width:60em}
pre{white-space:pre-wrap;background:#f7f7f7;padding:.5em;max-height:24em;overflow:auto;margin:.3em 0}
.filters button{margin:.1em;border:1px solid #aaa;background:#fff;border-radius:4px;padding:.2em .6em;cursor:pointer}
.filters button.on{background:#333;color:#fff}
#search{padding:.3em;width:24em} .hidden{display:none} .small{color:#666;font-size:.85em}
.matrix td{text-align:center;min-width:2.5em}
"""

JS = """
(function(){
  var active = {};
  function apply(){
    var q = document.getElementById('search').value.toLowerCase();
    var any = Object.keys(active).length > 0;
    var rows = document.querySelectorAll('tr.case');
    var shown = 0;
    rows.forEach(function(r){
      var st = r.dataset.statuses.split(' ');
      var ok = (!any || st.some(function(s){ return active[s]; })) && (!q || r.dataset.text.indexOf(q) >= 0);
      r.classList.toggle('hidden', !ok);
      if (ok) shown++;
    });
    document.getElementById('shown').textContent = shown;
  }
  document.querySelectorAll('.filters button[data-status]').forEach(function(b){
    b.addEventListener('click', function(){
      var s = b.dataset.status;
      if (active[s]) { delete active[s]; b.classList.remove('on'); }
      else { active[s] = true; b.classList.add('on'); }
      apply();
    });
  });
  document.getElementById('clear').addEventListener('click', function(){
    active = {}; document.querySelectorAll('.filters button').forEach(function(b){b.classList.remove('on');});
    document.getElementById('search').value = ''; apply();
  });
  document.getElementById('search').addEventListener('input', apply);
  apply();
  // #selftest: exercises the filters and writes what it saw into #selftest (browser test).
  if (location.hash === '#selftest') {
    var out = {total: document.querySelectorAll('tr.case').length, filters: {}};
    document.querySelectorAll('.filters button[data-status]').forEach(function(b){
      b.click();
      out.filters[b.dataset.status] = +document.getElementById('shown').textContent;
      b.click();
    });
    var first = document.querySelector('tr.case');
    var q = first ? first.dataset.text.split(' ')[0] : '';
    document.getElementById('search').value = q;
    document.getElementById('search').dispatchEvent(new Event('input'));
    out.search = {query: q, shown: +document.getElementById('shown').textContent};
    document.getElementById('clear').click();
    out.after_clear = +document.getElementById('shown').textContent;
    var pre = document.createElement('pre');
    pre.id = 'selftest';
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
})();
"""


def esc(s):
    return html.escape(str(s), quote=True)


def first_line(message):
    """The first line of a failure message that is not just a 'file:line' location."""
    for line in message.splitlines():
        if line.strip() and not re.fullmatch(r"\S+:\d+", line.strip()):
            return line.strip()
    return message.strip()


def badge(status):
    return f'<span class="st" style="background:{STATUS_COLORS.get(status, "#555")}">{esc(status)}</span>'


def _param_of(case):
    """The flag-combination part of a parameterized case name ('.../portable_mapped')."""
    if "/" in case.name:
        return case.name.rsplit("/", 1)[1]
    return None


def matrix_section(cases):
    """API family x parameter (flag combination) matrix of worst status."""
    cells, params, families = {}, [], []
    for c in cases:
        p = _param_of(c)
        if p is None:
            continue
        row = f"{c.family}: {c.suite.split('/')[-1]}.{c.name.rsplit('/', 1)[0]}"
        if p not in params:
            params.append(p)
        if row not in families:
            families.append(row)
        prev = cells.get((row, p))
        if prev is None or c.status.severity > prev.severity:
            cells[(row, p)] = c.status
    if not cells:
        return ""
    out = ['<h2>Matrix: test &times; parameter</h2><table class="matrix"><tr><th>test</th>']
    out += [f"<th>{esc(p)}</th>" for p in params]
    out.append("</tr>")
    for r in families:
        out.append(f"<tr><td style='text-align:left'>{esc(r)}</td>")
        for p in params:
            s = cells.get((r, p))
            out.append(f"<td>{badge(s) if s else ''}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def case_details(c):
    """The typed fields of one case, each escaped: rules, seed and replay, attempts, metrics,
    budgets, observations, child outcome, logs, other properties."""
    more = []
    if c.rules:
        more.append(f"<b>rules</b> <span class='mono'>{esc(','.join(c.rules))}</span><br>")
    if c.seed is not None or c.run_seed is not None:
        more.append(f"<b>seed</b> <span class='mono'>case {esc(c.seed if c.seed is not None else '?')}"
                    f", run {esc(c.run_seed if c.run_seed is not None else '?')}</span><br>")
    if c.status.is_fail or c.status == model.Status.WARN or c.flaky:
        more.append(f"<b>replay</b> <pre>{esc(c.replay_command())}</pre>")
    if len(c.attempts) > 1:
        more.append(f"<b>attempts</b> <span class='mono'>{esc(' '.join(map(str, c.attempts)))}</span><br>")
    if c.first_failure:
        more.append(f"<b>first failure</b><pre>{esc(c.first_failure)}</pre>")
    for title, d in (("metric", c.metrics), ("budget", c.budgets), ("observed", c.observed)):
        for k, v in d.items():
            more.append(f"<span class='mono'>{title} {esc(k)} = {esc(v)}</span><br>")
    if c.child:
        more.append(f"<span class='mono'>child = {esc(c.child)}</span><br>")
    if c.health:
        more.append(f"<span class='mono'>health = {esc(c.health)}</span><br>")
    for k, v in c.extra.items():
        more.append(f"<span class='mono'>{esc(k)} = {esc(v)}</span><br>")
    for k, v in c.logs.items():
        more.append(f"<b>{esc(k)}</b><pre>{esc(v)}</pre>")
    return more


def render(run, title="pagelock report", verdict=None, extra_sections=(), comparison_status=None,
           seed=None, comparison_counts=None):
    """run: model.Run. verdict: (text, color) or None. comparison_status: {case id: status}
    from a comparison against expectations and baseline (shown next to the raw status)."""
    counts = run.counts()
    statuses = [s for s in model.STATUSES if counts.get(s)]
    comp_counts = {}
    for s in (comparison_status or {}).values():
        comp_counts[str(s)] = comp_counts.get(str(s), 0) + 1
    if comparison_counts:  # also DROPPED and machine coverage, which no case row carries
        comp_counts = {k: n for k, n in comparison_counts.items() if n}
    fp = run.fingerprint
    seed = seed or fp.get(model.PROP_RUN_SEED) or fp.get("seed")
    h = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{esc(title)}</title>",
         f"<style>{CSS}</style></head><body>", f"<h1>{esc(title)}</h1>"]
    if verdict:
        h.append(f"<div class='verdict' style='background:{verdict[1]}'>{esc(verdict[0])}</div>")
    h.append("<div class='counts'>")
    for s in statuses:
        h.append(f"<span style='background:{STATUS_COLORS[s]}'>{esc(s)} {counts[s]}</span>")
    for s, n in sorted(comp_counts.items()):
        h.append(f"<span style='background:{STATUS_COLORS.get(s, '#555')}'>{esc(s)} {n}</span>")
    h.append("</div>")
    summary = model.format_counts(counts).splitlines()[-1]
    h.append(f"<p class='small'>{esc(summary)} &middot; {len(run.cases)} cases")
    if seed:
        h.append(f" &middot; seed <span class='mono'>{esc(seed)}</span>")
    h.append("</p>")

    h.append("<h2>Machine</h2><table>")
    keys = [k for k in fp if not re.match(r"gpu\d+_cudaDevAttr", k)]
    for k in keys:
        h.append(f"<tr><th>{esc(k)}</th><td class='mono'>{esc(fp[k])}</td></tr>")
    h.append("</table>")
    attrs = sorted(k for k in fp if re.match(r"gpu\d+_cudaDevAttr", k))
    if attrs:
        h.append("<details><summary>Device attributes</summary><table>")
        for k in attrs:
            h.append(f"<tr><th>{esc(k)}</th><td class='mono'>{esc(fp[k])}</td></tr>")
        h.append("</table></details>")
    if run.problems:
        h.append("<h2>Problems reading results</h2><ul>")
        h += [f"<li>{esc(p)}</li>" for p in run.problems]
        h.append("</ul>")
    for sec in extra_sections:
        h.append(sec)
    h.append(matrix_section(run.cases))

    h.append("<h2>Cases</h2><div class='filters'>")
    for s in statuses + sorted({str(v) for v in (comparison_status or {}).values()}):
        h.append(f"<button data-status='{esc(s)}'>{esc(s)}</button>")
    h.append("<button id='clear'>all</button> <input id='search' type='search' "
             "placeholder='search id, message, reason'> <span class='small'><span id='shown'></span> shown</span></div>")
    h.append("<table id='cases'><tr><th>status</th><th>case</th><th>s</th><th>reason / message</th></tr>")
    for i, c in enumerate(sorted(run.cases, key=lambda c: (-c.status.severity if c.status.is_fail else 0, c.id))):
        comp = (comparison_status or {}).get(c.id)
        comp = str(comp) if comp else None
        status_key = c.status + (" " + comp if comp else "")
        text = " ".join([c.id, str(c.status), comp or "", c.message, c.reason,
                         ",".join(c.rules)]).lower()
        detail = c.reason or first_line(c.message)
        h.append(f"<tr class='case' data-idx='{i}' data-statuses='{esc(status_key)}' data-text='{esc(text)}'>"
                 f"<td>{badge(c.status)}{(' ' + badge(comp)) if comp and comp != c.status else ''}</td>"
                 f"<td class='mono'>{esc(c.id)}</td><td>{c.seconds:.3f}</td>"
                 f"<td>{esc(detail[:300])}")
        more = []
        if c.message:
            more.append(f"<b>message</b><pre>{esc(c.message)}</pre>")
        more += case_details(c)
        if more:
            h.append(f"<details><summary>details</summary>{''.join(more)}</details>")
        h.append("</td></tr>")
    h.append("</table>")
    h.append(f"<script>{JS}</script></body></html>")
    return "".join(h)


# ---------------------------------------------------------------------------------------------
# Qualification report: verdict, run info, changes against expectations and baseline, metrics.

def _table(headers, rows):
    out = ["<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>")
    out.append("</table>")
    return "".join(out)


def bar_chart(items, unit):
    """Inline SVG horizontal bars: items = [(label, value)]."""
    if not items:
        return ""
    width, bar_h, label_w = 760, 18, 330
    top = max(v for _, v in items) or 1.0
    h = len(items) * (bar_h + 6) + 10
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{h}' role='img'>"]
    for i, (label, v) in enumerate(items):
        y = 5 + i * (bar_h + 6)
        w = max(1, (width - label_w - 90) * v / top)
        parts.append(f"<text x='{label_w - 6}' y='{y + 13}' text-anchor='end' font-size='12'>{esc(label)}</text>"
                     f"<rect x='{label_w}' y='{y}' width='{w:.1f}' height='{bar_h}' fill='#1565c0'/>"
                     f"<text x='{label_w + w + 4:.1f}' y='{y + 13}' font-size='12'>{v:.2f} {esc(unit)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def sparkline(values, width=160, height=28):
    if len(values) < 2:
        return "<span class='small'>(one run)</span>"
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    pts = " ".join(f"{i * (width - 4) / (len(values) - 1) + 2:.1f},{height - 3 - (v - lo) * (height - 6) / span:.1f}"
                   for i, v in enumerate(values))
    last = pts.split(" ")[-1].split(",")
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'>"
            f"<polyline fill='none' stroke='#1565c0' stroke-width='1.5' points='{pts}'/>"
            f"<circle cx='{last[0]}' cy='{last[1]}' r='2.5' fill='#c62828'/></svg>")


def metrics_section(run, trends):
    rows, groups = [], {}
    for c in run.cases:
        for name, m in sorted(c.metrics.items()):
            unit = m.unit
            if m.finite:  # nan/inf are shown as such in the table, never drawn
                groups.setdefault(unit, []).append((name, m.value))
            t = trends.get(name, [])
            spark = sparkline([x[2] for x in t]) if t else ""
            value = f"{m.value:.3f}" if m.finite else repr(m.value)
            rows.append([f"<span class='mono'>{esc(name)}</span>", esc(value), esc(unit), esc(c.id), spark,
                         esc(" ".join(f"{x[2]:.1f}" for x in t[-6:]))])
    if not rows:
        return ""
    out = ["<h2>Metrics</h2><p class='small'>Medians of event-timed repetitions after warm-up; "
           "trend over the last runs of this SKU from the history database.</p>"]
    for unit, items in sorted(groups.items()):
        if unit not in ("count", ""):  # counts of different things share no scale; the table has them
            out.append(bar_chart(items, unit))
    out.append(_table(["metric", "value", "unit", "case", "trend", "last values"], rows))
    return "".join(out)


def render_qualification(run, info, comp, baseline, trends):
    fp = run.fingerprint
    sections = []
    info_rows = [["run", esc(info.get("run_key", ""))], ["tier", esc(info.get("tier", ""))],
                 ["harness commit", esc(info.get("bundle", {}).get("commit", ""))],
                 ["rule profile applied", esc(fp.get("rule_profile", ""))],
                 ["baseline", esc(info.get("baseline", ""))],
                 ["expectations", esc(", ".join(f"{k} ({v[:12]})" for k, v in info.get("expectations", {}).items()) or "none")],
                 ["retries of failed cases", esc(info.get("retries", ""))],
                 ["command", f"<span class='mono'>{esc(info.get('command', ''))}</span>"]]
    if info.get("label"):
        info_rows.insert(0, ["change under test", esc(info["label"])])
    sections.append("<h2>Run</h2>" + _table(["", ""], info_rows))

    by_id = {c.id: c for c in run.cases}
    change_rows = []
    for key, s, why in comp.machine:
        change_rows.append([badge(str(s)), "", f"<span class='mono'>{esc(key)}</span>", "", esc(why)])
    for st in model.Change:  # most serious first
        for cid, s in sorted(comp.status.items()):
            if s == st:
                c = by_id[cid]
                change_rows.append([badge(str(s)), badge(str(c.status)), f"<span class='mono'>{esc(cid)}</span>",
                                    esc(" ".join(map(str, c.attempts)) if len(c.attempts) > 1 else ""),
                                    esc(comp.notes.get(cid, ""))])
    base = baseline.by_id() if baseline else {}
    for cid in comp.dropped:
        prev = base.get(cid)
        covered = cid in comp.dropped_covered
        change_rows.append([badge("KNOWN_COVERAGE_LOSS" if covered else "DROPPED"),
                            badge(str(prev.status)) if prev else "",
                            f"<span class='mono'>{esc(cid)}</span>", "",
                            "in the baseline, not in this run" + (" (expected or not exercised there)" if covered else "")])
    sections.append("<h2>Against expectations and baseline</h2>" +
                    (_table(["comparison", "now", "case", "attempts", "why"], change_rows)
                     if change_rows else "<p>No differences: every case matches its expectation and the baseline.</p>"))
    if comp.stale:
        sections.append("<h2>Stale expectations</h2><ul>" + "".join(
            f"<li class='mono'>{esc(e.source)}: {esc(e.kind)} {esc(e.pattern)} {esc(e.bug)}</li>" for e in comp.stale) + "</ul>")
    sections.append(metrics_section(run, trends))
    title = f"pagelock qualification: {fp.get('gpu0_name', 'no GPU')} / driver {fp.get('nvidia_driver', '?')}"
    return render(run, title=title, verdict=comp.verdict, extra_sections=sections, seed=info.get("seed"),
                  comparison_status=comp.status, comparison_counts=comp.summary)
