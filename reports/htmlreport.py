"""Self-contained HTML report of one run: no network resources, every test-provided string
escaped, and a first screen that answers "what changed and why".

Page order (the morning review, issue 8): verdict; one line of raw counts and, labelled apart,
the counts against expectations and baseline; the changes (regressions, coverage lost, crashes,
timeouts, flakes), each with rule, the meaningful line of the message, attempts, a link to the
case and its replay command; then, folded, the run and the machine; the matrix grouped per
suite; all cases, paged by JavaScript from one JSON block (10,000 cases load in well under a
second); metrics.

URL state: `#case=<id>` opens one case; `#s=FAIL,REGRESSION&q=text&p=2` keeps the filters,
search and page. `#selftest` makes the page exercise itself and write what it saw into
`<pre id="selftest">` (the browser tests read it).
"""

import html
import json
import re

from reports import model

# Every badge is white text on its colour; each pair meets WCAG AA (4.5:1) -- the browser test
# computes it from CSS below. Status is never colour alone: the badge always says its name.
STATUS_COLORS = {
    "PASS": "#2e7d32", "WARN": "#7c5e00", "NOT_SUPPORTED": "#546e7a", "SKIP": "#5f6b73",
    "FAIL": "#c62828", "TIMEOUT": "#6a1b9a", "CRASH": "#b71c1c", "INFRA_ERROR": "#37474f",
    "MISSING": "#a84300", "EXPECTED_FAIL": "#795548", "KNOWN_FLAKE": "#795548",
    "FLAKE": "#8a5300", "UNEXPECTED_PASS": "#0277bd", "REGRESSION": "#c00000",
    "FIXED": "#00796b", "NEW": "#3f51b5", "DROPPED": "#bf360c", "COVERAGE_LOST": "#ad1457",
    "KNOWN_COVERAGE_LOSS": "#795548",
}
OTHER_COLOR = "#555555"

# Short cell labels for the matrix (the cell's title and the legend have the full name).
SHORT = {"PASS": "ok", "WARN": "warn", "NOT_SUPPORTED": "n/s", "SKIP": "skip", "FAIL": "FAIL",
         "TIMEOUT": "T/O", "CRASH": "CRASH", "INFRA_ERROR": "INFRA", "MISSING": "miss"}

PAGE_SIZE = 100  # case rows per page
CHANGES_SHOWN = 12  # rows of one kind on the first screen before the rest folds

CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;padding:.8em 1.2em;color:#222;max-width:100%;overflow-wrap:anywhere}
h1{margin:0 0 .3em 0;font-size:1.25em} h2{margin:1.2em 0 .4em 0;border-bottom:1px solid #ddd;font-size:1.15em}
.verdict{font-size:1.3em;font-weight:bold;padding:.25em .7em;border-radius:6px;display:inline-block;color:#fff;margin-right:.6em}
.counts{margin:.4em 0}.counts .lbl{color:#555;font-size:.85em;margin-right:.3em}
.counts .sep{display:inline-block;width:1.2em}
table{border-collapse:collapse;font-size:.88em;max-width:100%} td,th{border:1px solid #ddd;padding:.2em .45em;text-align:left;vertical-align:top}
th{background:#f4f4f4}
.st{color:#fff;font-weight:600;border-radius:3px;padding:0 .4em;white-space:nowrap;display:inline-block;margin:1px}
.mono,code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85em;word-break:break-all}
pre{white-space:pre-wrap;word-break:break-all;background:#f7f7f7;padding:.4em;max-height:24em;overflow:auto;margin:.2em 0}
.scroll{overflow-x:auto;max-width:100%}
table.wide{width:100%;table-layout:fixed}
#changes td.case{width:26%} #changes th.k,#changes td.k{width:9.5em} #changes th.r,#changes td.r{width:6.5em}
#changes th.a,#changes td.a{width:7em}
code.replay{display:block;white-space:pre-wrap;background:#f7f7f7;padding:.15em .3em;margin-top:.2em;color:#333}
button{font:inherit;font-size:.85em;margin:.1em;border:1px solid #767676;background:#fff;color:#222;border-radius:4px;padding:.1em .5em;cursor:pointer}
button[aria-pressed=true]{background:#222;color:#fff}
#search{padding:.25em;width:22em;max-width:100%} .small{color:#595959;font-size:.85em}
.matrix td{text-align:center} .matrix td.t{text-align:left}
.hl{outline:3px solid #0b57d0}
tr.detail>td{background:#fbfbfb}
details{margin:.4em 0} summary{cursor:pointer}
"""


def css():
    return CSS + "".join(f".st-{s}{{background:{c}}}" for s, c in STATUS_COLORS.items()) + \
        f".st-other{{background:{OTHER_COLOR}}}"


JS = r"""
(function(){
  var T0 = performance.now();
  var D = JSON.parse(document.getElementById('case-data').textContent);
  var byId = {};
  var cases = D.cases.map(function(a){
    var c = a[6] || {};
    c.i = D.prefixes[a[0]] + a[1]; c.r = a[2]; c.s = a[3]; c.ru = a[4] ? a[4].split(',') : [];
    c.x = c.x || [];
    if (a[5]) c.x.unshift(['seed', 'case ' + a[5] + ', run ' + (D.runSeed || '?')]);
    byId[c.i] = c;
    return c;
  });
  var T1 = performance.now();
  var active = {}, page = 0, focus = null, shown = cases;
  var tbody = document.getElementById('case-rows');
  var search = document.getElementById('search');
  function el(tag, cls, text){ var e = document.createElement(tag); if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text; return e; }
  function badge(s){ var b = el('span', 'st st-' + (D.known.indexOf(s) >= 0 ? s : 'other'), s); return b; }
  function caseLink(id){ return location.href.split('#')[0] + '#case=' + encodeURIComponent(id); }
  function copy(text, btn){
    var done = function(){ var o = btn.textContent; btn.textContent = 'copied'; setTimeout(function(){ btn.textContent = o; }, 1200); };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(done, function(){ fallback(text); done(); });
    } else { fallback(text); done(); }
  }
  function fallback(text){ var t = el('textarea'); t.value = text; document.body.appendChild(t); t.select();
    try { document.execCommand('copy'); } catch (e) {} t.remove(); }
  document.addEventListener('click', function(e){
    var b = e.target.closest('button[data-copy-link], button[data-copy]');
    if (!b) return;
    copy(b.dataset.copyLink !== undefined ? caseLink(b.dataset.copyLink) : b.dataset.copy, b);
  });
  function detail(c){
    var td = el('td'); td.colSpan = 4;
    function add(label, text, pre){ if (!text) return; td.appendChild(el('b', '', label));
      td.appendChild(el(pre ? 'pre' : 'div', pre ? '' : 'mono', text)); }
    add('message', c.m, true);
    if (c.rp) add('replay', c.rp, true);
    if (c.ff) add('first failure', c.ff, true);
    c.x.forEach(function(kv){ td.appendChild(el('div', 'mono', kv[0] + ' = ' + kv[1])); });
    Object.keys(c.lg || {}).forEach(function(k){ add(k, c.lg[k], true); });
    var tr = el('tr', 'detail'); tr.appendChild(td); return tr;
  }
  function row(c, open){
    var tr = el('tr', 'case'); tr.id = 'case=' + c.i;
    var st = el('td'); st.appendChild(badge(c.r));
    if (c.c && c.c !== c.r) st.appendChild(badge(c.c));
    var idc = el('td', 'mono'); var a = el('a', '', c.i); a.href = '#case=' + encodeURIComponent(c.i); idc.appendChild(a);
    var tools = el('div');
    var cl = el('button', '', 'copy link'); cl.dataset.copyLink = c.i; tools.appendChild(cl);
    if (c.rp) { var cr = el('button', '', 'copy replay command'); cr.dataset.copy = c.rp; tools.appendChild(cr); }
    var more = el('button', '', 'details'); more.setAttribute('aria-expanded', open ? 'true' : 'false');
    tools.appendChild(more); idc.appendChild(tools);
    var txt = el('td', '', (c.h || c.rs || '').slice(0, 300));
    if (c.ru && c.ru.length) txt.appendChild(el('div', 'small', 'rules ' + c.ru.join(',')));
    tr.appendChild(st); tr.appendChild(idc); tr.appendChild(el('td', '', (+c.s).toFixed(3))); tr.appendChild(txt);
    var frag = document.createDocumentFragment(); frag.appendChild(tr);
    var d = null;
    if (open) { d = detail(c); frag.appendChild(d); }
    more.addEventListener('click', function(){
      if (d) { d.remove(); d = null; more.setAttribute('aria-expanded', 'false'); }
      else { d = detail(c); tr.after(d); more.setAttribute('aria-expanded', 'true'); }
    });
    return frag;
  }
  function filter(){
    var q = search.value.toLowerCase(), any = Object.keys(active).length > 0;
    shown = cases.filter(function(c){
      if (q && c.t === undefined)  // built on the first search: the page loads faster
        c.t = [c.i, c.r, c.c || '', c.h || '', c.m || '', c.rs || '', c.ru.join(',')].join(' ').toLowerCase();
      return (!any || active[c.r] || (c.c && active[c.c])) && (!q || c.t.indexOf(q) >= 0);
    });
  }
  function draw(){
    var pages = Math.max(1, Math.ceil(shown.length / D.pageSize));
    page = Math.min(Math.max(0, page), pages - 1);
    tbody.textContent = '';
    var frag = document.createDocumentFragment();
    shown.slice(page * D.pageSize, (page + 1) * D.pageSize).forEach(function(c){ frag.appendChild(row(c, c === focus)); });
    tbody.appendChild(frag);
    document.getElementById('shown').textContent = shown.length;
    document.getElementById('pageinfo').textContent = 'page ' + (page + 1) + ' of ' + pages;
    document.getElementById('prev').disabled = page === 0;
    document.getElementById('next').disabled = page >= pages - 1;
  }
  function saveState(){
    var p = new URLSearchParams();
    var s = Object.keys(active); if (s.length) p.set('s', s.join(','));
    if (search.value) p.set('q', search.value);
    if (page) p.set('p', page + 1);
    var h = p.toString();
    history.replaceState(null, '', h ? '#' + h : location.pathname + location.search);
  }
  function update(keepPage){ if (!keepPage) page = 0; focus = null; filter(); draw(); saveState(); }
  function setButtons(){
    document.querySelectorAll('#filters button[data-status]').forEach(function(b){
      b.setAttribute('aria-pressed', active[b.dataset.status] ? 'true' : 'false'); });
  }
  function showCase(id){
    var c = byId[id];
    if (!c) return false;
    active = {}; search.value = ''; setButtons(); filter();
    page = Math.floor(shown.indexOf(c) / D.pageSize); focus = c; draw();
    var tr = document.getElementById('case=' + id);
    tr.classList.add('hl'); tr.scrollIntoView({block: 'start'});
    return true;
  }
  function readHash(){
    var h = location.hash.slice(1), p = new URLSearchParams(h);
    if (p.has('case')) { if (showCase(p.get('case'))) return; }
    active = {}; (p.get('s') || '').split(',').forEach(function(s){ if (s) active[s] = true; });
    search.value = p.get('q') || ''; setButtons(); filter();
    page = (parseInt(p.get('p'), 10) || 1) - 1; focus = null; draw();
  }
  document.querySelectorAll('#filters button[data-status]').forEach(function(b){
    b.addEventListener('click', function(){
      var s = b.dataset.status;
      if (active[s]) delete active[s]; else active[s] = true;
      setButtons(); update();
    });
  });
  document.getElementById('clear').addEventListener('click', function(){
    active = {}; search.value = ''; setButtons(); update();
  });
  search.addEventListener('input', function(){ update(); });
  document.getElementById('prev').addEventListener('click', function(){ page--; update(true); });
  document.getElementById('next').addEventListener('click', function(){ page++; update(true); });
  var SHORT = D.short, SEV = D.severity;
  function family(c){ var pkg = c.i.split(':')[0]; return pkg.slice(pkg.lastIndexOf('/') + 1); }
  function buildMatrix(det){
    var box = det.querySelector('.scroll'); if (box.firstChild) return;
    var fam = det.dataset.family, rows = [], params = [], cells = {};
    cases.forEach(function(c){
      if (family(c) !== fam) return;
      var gname = c.i.slice(c.i.indexOf('/', c.i.indexOf(':')) + 1);
      var di = gname.indexOf('.'), suite = gname.slice(0, di), name = gname.slice(di + 1);
      var ps = name.lastIndexOf('/'); if (ps < 0) return;
      var r = suite.slice(suite.lastIndexOf('/') + 1) + '.' + name.slice(0, ps), p = name.slice(ps + 1);
      if (!(r in cells)) { cells[r] = {}; rows.push(r); }
      if (params.indexOf(p) < 0) params.push(p);
      var prev = cells[r][p];
      if (!prev || SEV[c.r] > SEV[prev.r]) cells[r][p] = c;
    });
    var t = el('table', 'matrix'), head = el('tr'); head.appendChild(el('th', '', 'test'));
    params.forEach(function(p){ head.appendChild(el('th', '', p)); }); t.appendChild(head);
    rows.forEach(function(r){
      var tr = el('tr'); tr.appendChild(el('td', 't mono', r));
      params.forEach(function(p){
        var td = el('td'), c = cells[r][p];
        if (c) { var a = el('a'); a.href = '#case=' + encodeURIComponent(c.i); a.title = c.r + ' ' + c.i;
          var b = badge(c.r); b.textContent = SHORT[c.r] || c.r; a.appendChild(b); td.appendChild(a); }
        tr.appendChild(td);
      });
      t.appendChild(tr);
    });
    box.appendChild(t);
  }
  document.querySelectorAll('details.mx').forEach(function(d){
    d.addEventListener('toggle', function(){ if (d.open) buildMatrix(d); });
  });
  window.addEventListener('hashchange', readHash);
  readHash();
  var ready = performance.now();
  if (location.hash === '#selftest') {
    var out = {total: cases.length, ready_ms: ready, script_start_ms: T0, indexed_ms: T1, filters: {}};
    document.querySelectorAll('#filters button[data-status]').forEach(function(b){
      b.click(); out.filters[b.dataset.status] = +document.getElementById('shown').textContent;
      out.pressed_ok = (out.pressed_ok !== false) && b.getAttribute('aria-pressed') === 'true';
      b.click();
    });
    var q = cases.length ? cases[0].i : '';
    search.value = q; search.dispatchEvent(new Event('input'));
    out.search = {query: q, shown: +document.getElementById('shown').textContent, hash: location.hash};
    document.getElementById('clear').click();
    out.after_clear = +document.getElementById('shown').textContent;
    out.rows_in_dom = document.querySelectorAll('tr.case').length;
    window.scrollTo(0, 0);
    var chg = document.querySelector('#changes tr.chg');
    function where(sel){ var e = chg && chg.querySelector(sel);
      return e ? {text: e.textContent, bottom: e.getBoundingClientRect().bottom + window.scrollY} : null; }
    out.first_change = chg ? {rule: where('.rule'), msg: where('.msg'), replay: where('.replay'),
                              link: where('a')} : null;
    document.querySelectorAll('details.mx').forEach(function(d){ d.open = true; buildMatrix(d); });
    out.matrix_cells = document.querySelectorAll('table.matrix a').length;
    out.scroll_width = document.documentElement.scrollWidth;
    out.inner_width = window.innerWidth;
    out.inner_height = window.innerHeight;
    var last = cases[cases.length - 1];
    if (last) {
      var ok = showCase(last.i), tr = document.getElementById('case=' + last.i);
      out.anchor = {id: last.i, found: ok && !!tr, expanded: !!(tr && tr.nextSibling && tr.nextSibling.className === 'detail')};
    }
    var pre = el('pre', '', JSON.stringify(out)); pre.id = 'selftest';
    document.body.appendChild(pre);
  }
})();
"""

_BOILER = re.compile(r"^(Failure|Google Test trace:|Stack trace:|\[\s*FAILED\s*\].*)$")
_LOC = re.compile(r"^\S+:\d+(:\s*(Failure)?)?$")


def esc(s):
    return html.escape(str(s), quote=True)


def first_line(message):
    """The first line of a failure message that is not just a 'file:line' location."""
    for line in message.splitlines():
        if line.strip() and not re.fullmatch(r"\S+:\d+", line.strip()):
            return line.strip()
    return message.strip()


def headline(message):
    """The one meaningful line of a failure message: the assertion's own text, with gtest's
    boilerplate ('Expected equality of these values:', 'Value of:', file:line) folded into one
    sentence, and the test's own streamed explanation kept when there is one."""
    lines = [l.rstrip() for l in message.splitlines()]
    lines = [l for l in lines if l.strip() and not _LOC.match(l.strip()) and not _BOILER.match(l.strip())]
    if not lines:
        return message.strip()[:300]
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
    else:
        return first[:300]
    # A message streamed with << follows the values: it says why, so it leads.
    tail = [t for t in tail if not t.startswith("Which is:")]
    return (f"{tail[0]} — {said}" if tail else said)[:300]


def badge(status, text=None):
    s = str(status)
    cls = s if s in STATUS_COLORS else "other"
    return f'<span class="st st-{cls}">{esc(text if text is not None else s)}</span>'


def _param_of(case):
    """The flag-combination part of a parameterized case name ('.../portable_mapped')."""
    if "/" in case.name:
        return case.name.rsplit("/", 1)[1]
    return None


def _case_href(cid):
    return "#case=" + esc(cid)


def matrix_section(cases):
    """Test x parameter (flag combination) matrix of worst status, one folded table per suite
    family with only the columns that family uses. The page's JavaScript builds a family's table
    from the case data when it is opened (a 10,000-case run stays light); each table scrolls in
    its own box, so the page never scrolls sideways."""
    fams = {}
    for c in cases:
        p = _param_of(c)
        if p is None:
            continue
        f = fams.setdefault(c.family, {"rows": set(), "params": set(), "bad": 0})
        f["rows"].add(f"{c.suite.split('/')[-1]}.{c.name.rsplit('/', 1)[0]}")
        f["params"].add(p)
        f["bad"] += c.status.is_fail
    if not fams:
        return ""
    out = ["<h2 id='matrix'>Matrix: test &times; parameter, per suite</h2><p class='small'>Worst status "
           "per cell: " + ", ".join(f"{esc(v)} = {esc(k)}" for k, v in SHORT.items()) + ".</p>"]
    for fam in sorted(fams):
        f = fams[fam]
        bad = f", {f['bad']} failing cases" if f["bad"] else ""
        out.append(f"<details class='mx' data-family='{esc(fam)}'><summary>{esc(fam)}: {len(f['rows'])} tests "
                   f"&times; {len(f['params'])} parameters{bad}"
                   "</summary><div class='scroll'></div></details>")
    return "".join(out)


def _case_json(c, comp, prefixes, run_seed):
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
        d["h"] = headline(c.message)
    if c.reason:
        d["rs"] = c.reason
    if c.status.is_fail or c.status == model.Status.WARN or c.flaky or (comp and str(comp) not in ("NEW", "FIXED")):
        d["rp"] = c.replay_command()
    if c.first_failure:
        d["ff"] = c.first_failure
    x = []
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


def _json_script(obj, elem_id):
    """JSON inside <script type=application/json>: '<', '>' and '&' escaped so that no test
    output can end the element."""
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False, default=str)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f"<script type='application/json' id='{elem_id}'>{text}</script>"


def _sort_key(c, comp_status):
    ch = comp_status.get(c.id)
    blocking = bool(ch and model.Change(str(ch)).blocks) if ch else False
    return (0 if blocking else 1, -c.status.severity if c.status.is_fail else 0, c.id)


# ---------------------------------------------------------------------------------------------
# The first screen: what changed and why

def _change_row(kind, now, cid, case, note="", baseline_status=None):
    """One row of the changes table. kind: comparison status (or raw status without one)."""
    rule = ",".join(case.rules) if case else ""
    msg = ""
    if case is not None:
        msg = headline(case.message) if case.message else (case.reason or "")
        if not msg and case.first_failure:
            msg = "failed attempt: " + headline(case.first_failure)
    if not msg:
        msg = note
    attempts = " ".join(map(str, case.attempts)) if case and len(case.attempts) > 1 else ""
    cells = [f"<td class='k'>{badge(kind)}</td>",
             f"<td class='r'>{badge(now) if now else '<span class=small>not run</span>'}"
             + (f"<div class='small'>baseline {badge(baseline_status)}</div>" if baseline_status else "") + "</td>"]
    link = f"<a href='{_case_href(cid)}'>{esc(cid)}</a>" if case else esc(cid)
    cells.append(f"<td class='case mono'>{link}</td>")
    body = [f"<div class='msg'>{esc(msg)}</div>"]
    if rule:
        body.append(f"<div class='small'>rule <span class='rule mono'>{esc(rule)}</span></div>")
    if note and note != msg:
        body.append(f"<div class='small'>{esc(note)}</div>")
    klog = "\n".join(v for k, v in sorted(case.logs.items()) if k.startswith("kernel_log")) \
        if case is not None else ""
    if klog:  # driver-side evidence beside the failure (runner: kernel log while the case ran)
        lines = klog.splitlines()
        more = f" (+{len(lines) - 3} more in details)" if len(lines) > 3 else ""
        body.append(f"<div class='kern'><b>kernel log</b><pre>{esc(chr(10).join(lines[:3]))}{esc(more)}</pre></div>")
    if case is not None and (case.status.is_fail or case.flaky or kind in ("FLAKE", "UNEXPECTED_PASS",
                                                                           "COVERAGE_LOST")):
        rp = case.replay_command()
        body.append(f"<code class='replay'>{esc(rp)}</code>"
                    f"<button data-copy='{esc(rp)}'>copy replay command</button>"
                    f"<button data-copy-link='{esc(cid)}'>copy link</button>")
    cells.append("<td>" + "".join(body) + "</td>")
    cells.append(f"<td class='a mono'>{esc(attempts)}</td>")
    return f"<tr class='chg'>{''.join(cells)}</tr>"


_HEAD = ("<table class='wide' id='changes'><tr><th class='k'>change</th><th class='r'>now</th>"
         "<th>case</th><th>rule, message, replay</th><th class='a'>attempts</th></tr>")


def _fold(rows, title):
    """The first CHANGES_SHOWN rows, then the rest folded."""
    if len(rows) <= CHANGES_SHOWN:
        return rows
    rest = len(rows) - CHANGES_SHOWN
    return rows[:CHANGES_SHOWN] + [f"<tr><td colspan='5'><details><summary>{rest} more {esc(title)}"
                                   f"</summary><table class='wide'>{''.join(rows[CHANGES_SHOWN:])}"
                                   "</table></details></td></tr>"]


def changes_section(run, comp=None, baseline=None):
    """Regressions, coverage lost, dropped, crashes, timeouts, new flakes, unexpected passes;
    the rest of the differences (expected failures, known flakes, fixed, new) folded."""
    by_id = run.by_id()
    rows, other = [], []
    listed = set()
    if comp is not None:
        for key, s, why in comp.machine:
            rows.append(_change_row(str(s), None, key, None, why))
        base = baseline.by_id() if baseline else {}
        for st in model.Change:  # most serious first
            group = []
            for cid, s in sorted(comp.status.items()):
                if s == st and cid in by_id:
                    c = by_id[cid]
                    r = _change_row(str(s), str(c.status), cid, c, comp.notes.get(cid, ""),
                                    str(base[cid].status) if cid in base and st in (
                                        model.Change.COVERAGE_LOST, model.Change.FIXED) else None)
                    listed.add(cid)
                    (group if st.blocks else other).append(r)
            if st == model.Change.DROPPED:
                for cid in comp.dropped:
                    prev = base.get(cid)
                    covered = cid in comp.dropped_covered
                    r = _change_row("KNOWN_COVERAGE_LOSS" if covered else "DROPPED", None, cid, None,
                                    "in the baseline, not in this run" +
                                    (" (an expectation names it)" if covered else ""),
                                    str(prev.status) if prev else None)
                    (other if covered else group).append(r)
            rows += _fold(group, str(st))
    # Crashes and timeouts always show, even when an expectation covers them.
    for kind in (model.Status.CRASH, model.Status.TIMEOUT, model.Status.INFRA_ERROR, model.Status.MISSING,
                 model.Status.FAIL):
        if comp is not None and kind == model.Status.FAIL:
            break  # with a comparison, plain failures are regressions or expected
        group = [_change_row(str(comp.status.get(c.id, kind)) if comp else str(kind), str(c.status), c.id, c,
                             comp.notes.get(c.id, "") if comp else "")
                 for c in sorted(run.cases, key=lambda c: c.id) if c.status == kind and c.id not in listed]
        rows += _fold(group, str(kind))
    h = ["<h2 id='what-changed'>What changed</h2>" if comp is not None else "<h2 id='what-changed'>Failures</h2>"]
    h.append(kernel_log_note(run))
    if rows:
        h.append(_HEAD + "".join(rows) + "</table>")
    elif comp is not None:
        h.append("<p>No blocking differences: every case matches its expectation and the baseline.</p>")
    else:
        h.append("<p>No case failed, crashed or timed out.</p>")
    if other:
        h.append(f"<details><summary>{len(other)} other differences (expected failures, known flakes, "
                 f"fixed, new)</summary>{_HEAD}{''.join(other)}</table></details>")
    return "".join(h)


def kernel_log_note(run):
    """Whether driver-side evidence could be collected: the runner records how it read the kernel
    log (pagelock_kernel_log); Bazel runs have none."""
    how = run.fingerprint.get("pagelock_kernel_log", "")
    lines = sum(1 for c in run.cases if any(k.startswith("kernel_log") for k in c.logs))
    if how.startswith("read from"):
        text = (f"Kernel log {how}: driver lines (NVRM, Xid, oom-kill, IOMMU) while a case ran are "
                f"shown with it; {lines} case(s) have some.")
    elif how:
        text = f"Kernel log {how}: no driver-side evidence (NVRM, Xid, oom-kill, IOMMU) in this report."
    else:
        text = ("Kernel log not captured (only the bundle runner and qualify capture it): no driver-side "
                "evidence in this report.")
    return f"<p class='small' id='kernel-log'>{esc(text)}</p>"


def _counts_line(run, comp_counts):
    counts = run.counts()
    h = ["<div class='counts'><span class='lbl'>this run:</span>"]
    h += [badge(s, f"{s} {counts[s]}") for s in model.STATUSES if counts.get(s)]
    if comp_counts:
        h.append("<span class='sep'></span><span class='lbl'>against expectations and baseline:</span>")
        h += [badge(s, f"{s} {n}") for s, n in sorted(comp_counts.items()) if n]
    h.append("</div>")
    return "".join(h)


def _machine_section(run):
    fp = run.fingerprint
    h = ["<details><summary>Machine: " + esc(", ".join(x for x in (
        fp.get("gpu0_name"), fp.get("nvidia_driver") and "driver " + fp["nvidia_driver"],
        fp.get("host")) if x) or "no fingerprint") + "</summary><div class='scroll'><table>"]
    for k in [k for k in fp if not re.match(r"gpu\d+_cudaDevAttr", k)]:
        h.append(f"<tr><th>{esc(k)}</th><td class='mono'>{esc(fp[k])}</td></tr>")
    h.append("</table></div>")
    attrs = sorted(k for k in fp if re.match(r"gpu\d+_cudaDevAttr", k))
    if attrs:
        h.append("<details><summary>Device attributes</summary><div class='scroll'><table>")
        for k in attrs:
            h.append(f"<tr><th>{esc(k)}</th><td class='mono'>{esc(fp[k])}</td></tr>")
        h.append("</table></div></details>")
    h.append("</details>")
    return "".join(h)


def render(run, title="pagelock report", verdict=None, extra_sections=(), seed=None, comp=None,
           baseline=None, folded_sections=()):
    """run: model.Run. verdict: (text, color) or None. comp: a reports.compare.Comparison
    against expectations and baseline (its statuses are shown beside the raw statuses).
    folded_sections go right after the machine details; extra_sections after the cases."""
    comp_status = comp.status if comp is not None else {}
    comp_counts = {k: n for k, n in (comp.summary if comp is not None else {}).items() if n}
    fp = run.fingerprint
    seed = seed or fp.get(model.PROP_RUN_SEED) or fp.get("seed")
    h = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
         f"<meta name='viewport' content='width=device-width'><title>{esc(title)}</title>",
         f"<style>{css()}</style></head><body><h1>{esc(title)}</h1><div>"]
    if verdict:
        h.append(f"<span class='verdict' role='status' style='background:{verdict[1]}'>{esc(verdict[0])}</span>")
    summary = model.format_counts(run.counts()).splitlines()[-1]
    h.append(f"<span class='small'>{esc(summary)} &middot; {len(run.cases)} cases")
    if seed:
        h.append(f" &middot; seed <span class='mono'>{esc(seed)}</span>")
    h.append(" &middot; <a href='#cases'>all cases</a></span></div>")
    h.append(_counts_line(run, comp_counts))
    h.append(changes_section(run, comp, baseline))
    if comp is not None and comp.stale:
        h.append("<h2>Stale expectations</h2><ul>" + "".join(
            f"<li class='mono'>{esc(e.source)}: {esc(e.kind)} {esc(e.pattern)} {esc(e.bug)}</li>"
            for e in comp.stale) + "</ul>")
    if run.problems:
        h.append("<h2>Problems reading results</h2><ul>" + "".join(f"<li>{esc(p)}</li>" for p in run.problems)
                 + "</ul>")
    h += list(folded_sections)
    h.append(_machine_section(run))
    h.append(matrix_section(run.cases))

    statuses = [s for s in model.STATUSES if run.counts().get(s)]
    comp_names = sorted({str(v) for v in comp_status.values()})
    h.append("<h2 id='cases'>Cases</h2><div id='filters' role='toolbar' aria-label='filter cases by status'>"
             "<span class='lbl small'>status:</span>")
    h += [f"<button data-status='{esc(s)}' aria-pressed='false'>{esc(s)}</button>" for s in statuses]
    if comp_names:
        h.append("<span class='lbl small'> against expectations and baseline:</span>")
        h += [f"<button data-status='{esc(s)}' aria-pressed='false'>{esc(s)}</button>" for s in comp_names]
    h.append(" <button id='clear'>all</button> <label for='search' class='small'>search</label> "
             "<input id='search' type='search' placeholder='id, message, reason, rule'> "
             "<span class='small'><span id='shown'></span> shown, <span id='pageinfo'></span></span> "
             "<button id='prev'>previous page</button><button id='next'>next page</button></div>")
    h.append("<table class='wide'><thead><tr><th style='width:11em'>status</th><th style='width:40%'>case</th>"
             "<th style='width:5em'>s</th><th>reason / message</th></tr></thead><tbody id='case-rows'></tbody></table>"
             "<noscript>The case list needs JavaScript; results.json has every case.</noscript>")
    ordered = sorted(run.cases, key=lambda c: _sort_key(c, comp_status))
    prefixes = {}
    rows = [_case_json(c, comp_status.get(c.id), prefixes, seed) for c in ordered]
    data = {"pageSize": PAGE_SIZE, "known": list(STATUS_COLORS), "runSeed": str(seed or ""),
            "short": SHORT, "severity": {st.value: st.severity for st in model.Status},
            "prefixes": list(prefixes), "cases": rows}
    h += list(extra_sections)
    h.append(_json_script(data, "case-data"))
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
    """Inline SVG horizontal bars: items = [(label, value)]; scales down to the page width."""
    if not items:
        return ""
    width, bar_h, label_w = 760, 18, 330
    top = max(v for _, v in items) or 1.0
    h = len(items) * (bar_h + 6) + 10
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {h}' style='max-width:{width}px;width:100%' "
             f"role='img' aria-label='{esc(unit)} bars'>"]
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
            rows.append([f"<span class='mono'>{esc(name)}</span>", esc(value), esc(unit),
                         f"<a class='mono' href='{_case_href(c.id)}'>{esc(c.id)}</a>", spark,
                         esc(" ".join(f"{x[2]:.1f}" for x in t[-6:]))])
    if not rows:
        return ""
    out = ["<h2 id='metrics'>Metrics</h2><p class='small'>Medians of event-timed repetitions after warm-up; "
           "trend over the last runs of this SKU from the history database.</p>"]
    for unit, items in sorted(groups.items()):
        if unit not in ("count", ""):  # counts of different things share no scale; the table has them
            out.append(bar_chart(items, unit))
    out.append("<div class='scroll'>" + _table(["metric", "value", "unit", "case", "trend", "last values"], rows)
               + "</div>")
    return "".join(out)


def run_info_section(run, info):
    fp = run.fingerprint
    info_rows = [["run", esc(info.get("run_key", ""))], ["tier", esc(info.get("tier", ""))],
                 ["harness commit", esc(info.get("bundle", {}).get("commit", ""))],
                 ["rule profile applied", esc(fp.get("rule_profile", ""))],
                 ["baseline", esc(info.get("baseline", ""))],
                 ["expectations", esc(", ".join(f"{k} ({v[:12]})" for k, v in info.get("expectations", {}).items())
                                      or "none")],
                 ["retries of failed cases", esc(info.get("retries", ""))],
                 ["command", f"<span class='mono'>{esc(info.get('command', ''))}</span>"]]
    for k, v in sorted(info.get("outputs", {}).items()):
        info_rows.append([esc(k), f"<span class='mono'>{esc(v)}</span>"])
    if info.get("label"):
        info_rows.insert(0, ["change under test", esc(info["label"])])
    return (f"<details><summary>Run: {esc(info.get('run_key', ''))}, tier {esc(info.get('tier', ''))}"
            f"{', ' + esc(info['label']) if info.get('label') else ''}</summary><div class='scroll'>"
            + _table(["", ""], info_rows) + "</div></details>")


def render_qualification(run, info, comp, baseline, trends):
    fp = run.fingerprint
    title = f"pagelock qualification: {fp.get('gpu0_name', 'no GPU')} / driver {fp.get('nvidia_driver', '?')}"
    return render(run, title=title, verdict=comp.verdict, seed=info.get("seed"), comp=comp, baseline=baseline,
                  folded_sections=[run_info_section(run, info)],
                  extra_sections=[metrics_section(run, trends)])
