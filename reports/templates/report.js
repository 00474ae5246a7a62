(function(){
  var T0 = performance.now();
  var D = JSON.parse(document.getElementById('case-data').textContent);
  // Decoding stays light (a million cases): the id, rules and extra lines of a case are built
  // when a row, a search or a link first needs them.
  var index = null;
  function decode(list){
    index = null;
    return list.map(function(a){
      var c = a[6] || {};
      c.p = a[0]; c.n = a[1]; c.r = a[2]; c.s = a[3]; c.rw = a[4]; c.sd = a[5];
      return c;
    });
  }
  function idOf(c){ return c.i || (c.i = D.prefixes[c.p] + c.n); }
  function rulesOf(c){ return c.rw ? c.rw.split(',') : []; }
  function extrasOf(c){
    var x = c.sd ? [['seed', 'case ' + c.sd + ', run ' + (D.runSeed || '?')]] : [];
    return x.concat(c.x || []);
  }
  function find(id){
    if (!index) { index = {}; cases.forEach(function(c){ index[idOf(c)] = c; }); }
    return index[id];
  }
  // A very large run (D.lazy) embeds its first page here and every case in #case-data-all,
  // parsed only when a filter, a search, another page or a case link needs it: the first
  // screen does not wait for a million cases.
  var cases = decode(D.cases), all = !D.lazy;
  function ensureAll(){
    if (all) return;
    var note = document.getElementById('lazy-note');
    if (note) note.textContent = 'loading all ' + D.total + ' cases…';
    var t = performance.now();
    cases = decode(JSON.parse(document.getElementById('case-data-all').textContent));
    all = true; shown = cases;
    if (note) note.textContent = 'all ' + cases.length + ' cases loaded in ' + Math.round(performance.now() - t) + ' ms';
  }
  var T1 = performance.now();
  var active = {}, page = 0, focus = null, shown = cases;
  var tbody = document.getElementById('case-rows');
  var search = document.getElementById('search');
  function el(tag, cls, text){ var e = document.createElement(tag); if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text; return e; }
  function badge(s){ var b = el('span', 'st st-' + (D.known.indexOf(s) >= 0 ? s : 'other'), s); return b; }
  // The whole text is under 'details'; the row shows it up to a word, then an ellipsis.
  function cutAtWord(t, n){ t = t.replace(/\s+/g, ' ').trim(); if (t.length <= n) return t;
    var c = t.slice(0, n + 1), sp = c.lastIndexOf(' ');
    return (sp > n / 2 ? c.slice(0, sp) : t.slice(0, n)).replace(/[ ,;:\u2014-]+$/, '') + '\u2026'; }
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
    if (c.rx) add('reproducer for a driver team (a .tar.gz: the binary, run.sh, README)', c.rx, true);
    if (c.ff) add('first failure', c.ff, true);
    extrasOf(c).forEach(function(kv){ td.appendChild(el('div', 'mono', kv[0] + ' = ' + kv[1])); });
    Object.keys(c.lg || {}).forEach(function(k){ add(k, c.lg[k], true); });
    var tr = el('tr', 'detail'); tr.appendChild(td); return tr;
  }
  function row(c, open){
    var id = idOf(c), tr = el('tr', 'case'); tr.id = 'case=' + id;
    var st = el('td'); st.appendChild(badge(c.r));
    if (c.c && c.c !== c.r) st.appendChild(badge(c.c));
    var idc = el('td', 'mono'); var a = el('a', '', id); a.href = '#case=' + encodeURIComponent(id); idc.appendChild(a);
    var tools = el('div');
    var cl = el('button', '', 'copy link'); cl.dataset.copyLink = id; tools.appendChild(cl);
    if (c.rp) { var cr = el('button', '', 'copy replay command'); cr.dataset.copy = c.rp; tools.appendChild(cr); }
    if (c.rx) { var rx = el('button', '', 'copy reproducer command'); rx.dataset.copy = c.rx; rx.title = c.rx; tools.appendChild(rx); }
    var more = el('button', '', 'details'); more.setAttribute('aria-expanded', open ? 'true' : 'false');
    tools.appendChild(more); idc.appendChild(tools);
    var txt = el('td', '', cutAtWord(c.h || c.rs || '', 300));
    var ru = rulesOf(c);
    if (ru.length) {
      var rl = el('div', 'small', 'rules ');
      ru.forEach(function(r){ var a = el('a', 'rule mono', r); a.href = '#rule-' + r;
        a.title = r + ': ' + ((D.rules || {})[r] || 'not in suites/rules.tsv'); rl.appendChild(a); });
      txt.appendChild(rl);
    }
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
    if (q || any || page > 0) ensureAll();
    shown = cases.filter(function(c){
      if (q && c.t === undefined)  // built on the first search: the page loads faster
        c.t = [idOf(c), c.r, c.c || '', c.h || '', c.m || '', c.rs || '', c.rw || ''].join(' ').toLowerCase();
      return (!any || active[c.r] || (c.c && active[c.c])) && (!q || c.t.indexOf(q) >= 0);
    });
  }
  function draw(){
    var total = all ? shown.length : D.total;
    var pages = Math.max(1, Math.ceil(total / D.pageSize));
    page = Math.min(Math.max(0, page), pages - 1);
    tbody.textContent = '';
    var frag = document.createDocumentFragment();
    shown.slice(page * D.pageSize, (page + 1) * D.pageSize).forEach(function(c){ frag.appendChild(row(c, c === focus)); });
    tbody.appendChild(frag);
    document.getElementById('shown').textContent = total;
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
    if (!find(id)) ensureAll();
    var c = find(id);
    if (!c) return false;
    active = {}; search.value = ''; setButtons(); filter();
    page = Math.floor(shown.indexOf(c) / D.pageSize); focus = c; draw();
    var tr = document.getElementById('case=' + id);
    tr.classList.add('hl'); tr.scrollIntoView({block: 'start'});
    return true;
  }
  function readHash(){
    var h = location.hash.slice(1), p = new URLSearchParams(h);
    if (h.indexOf('rule-') === 0) return;  // an anchor in the Rules section: the browser scrolls to it
    if (p.has('case')) { if (showCase(p.get('case'))) return; }
    active = {}; (p.get('s') || '').split(',').forEach(function(s){ if (s) active[s] = true; });
    search.value = p.get('q') || ''; setButtons();
    if ((parseInt(p.get('p'), 10) || 1) > 1) ensureAll();
    filter();
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
  document.getElementById('next').addEventListener('click', function(){ ensureAll(); page++; update(true); });
  var SHORT = D.short, SEV = D.severity;
  function family(c){ var pkg = idOf(c).split(':')[0]; return pkg.slice(pkg.lastIndexOf('/') + 1); }
  // A family's table shows its first D.matrixRows tests (rows, in the order of their most serious
  // case) and D.matrixColumns parameters (htmlreport.MATRIX_ROWS, MATRIX_COLUMNS): a fuzzing
  // family of a million cases would never render. The note under it says what is left out and
  // searches the case list for the family's cases.
  var MATRIX_ROWS = D.matrixRows, MATRIX_COLUMNS = D.matrixColumns;
  function grouped(n){ return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ','); }
  function plural(n, what){ return grouped(n) + ' ' + what + (n === 1 ? '' : 's'); }
  function searchCases(q){
    active = {}; setButtons(); search.value = q; update();
    document.getElementById('cases').scrollIntoView({block: 'start'});
  }
  function buildMatrix(det){
    var box = det.querySelector('.scroll'); if (box.firstChild) return;
    ensureAll();
    var fam = det.dataset.family, rows = [], params = [], nRows = 0, nParams = 0, left = 0, pkgs = [];
    var cells = Object.create(null), col = Object.create(null), cut = Object.create(null);  // any test or parameter name
    cases.forEach(function(c){
      if (family(c) !== fam) return;
      var ci = idOf(c), gname = ci.slice(ci.indexOf('/', ci.indexOf(':')) + 1);
      var di = gname.indexOf('.'), suite = gname.slice(0, di), name = gname.slice(di + 1);
      var ps = name.lastIndexOf('/'); if (ps < 0) return;
      var r = suite.slice(suite.lastIndexOf('/') + 1) + '.' + name.slice(0, ps), p = name.slice(ps + 1);
      if (!(p in col)) { col[p] = nParams++ < MATRIX_COLUMNS; if (col[p]) params.push(p); }
      if (!(r in cells) && !(r in cut)) {
        if (nRows++ < MATRIX_ROWS) { cells[r] = Object.create(null); rows.push(r); } else cut[r] = true;
      }
      if (!col[p] || cut[r]) {  // left out: the note links the case list's search for its package
        left++; var pkg = ci.slice(0, ci.indexOf(':') + 1); if (pkgs.indexOf(pkg) < 0) pkgs.push(pkg);
        return;
      }
      var prev = cells[r][p];
      if (!prev || SEV[c.r] > SEV[prev.r]) cells[r][p] = c;
    });
    var t = el('table', 'matrix'), head = el('tr'); head.appendChild(el('th', '', 'test'));
    params.forEach(function(p){ head.appendChild(el('th', '', p)); }); t.appendChild(head);
    rows.forEach(function(r){
      var tr = el('tr'); tr.appendChild(el('td', 't mono', r));
      params.forEach(function(p){
        var td = el('td'), c = cells[r][p];
        if (c) { var a = el('a'); a.href = '#case=' + encodeURIComponent(idOf(c)); a.title = c.r + ' ' + idOf(c);
          var b = badge(c.r); b.textContent = SHORT[c.r] || c.r; a.appendChild(b); td.appendChild(a); }
        tr.appendChild(td);
      });
      t.appendChild(tr);
    });
    box.appendChild(t);
    if (!left) return;
    var shows = [];
    if (nRows > MATRIX_ROWS) shows.push(grouped(MATRIX_ROWS) + ' of ' + plural(nRows, 'test'));
    if (nParams > MATRIX_COLUMNS) shows.push(grouped(MATRIX_COLUMNS) + ' of ' + plural(nParams, 'parameter'));
    var note = el('p', 'small mx-more', 'This table shows ' + shows.join(' and ') + '; ' + plural(left, 'case') +
                  (left === 1 ? ' is' : ' are') + ' left out' +
                  (nRows > MATRIX_ROWS ? ' (the rows are in the order of their most serious case)' : '') +
                  '. The case list below has every case: search it for ');
    pkgs.forEach(function(q, i){
      var a = el('a', 'mono', q); a.href = '#' + new URLSearchParams({q: q}).toString();
      a.addEventListener('click', function(e){ e.preventDefault(); searchCases(q); });
      if (i) note.appendChild(document.createTextNode(i === pkgs.length - 1 ? ' or ' : ', '));
      note.appendChild(a);
    });
    box.after(note);
  }
  document.querySelectorAll('details.mx').forEach(function(d){
    d.addEventListener('toggle', function(){ if (d.open) buildMatrix(d); });
  });
  window.addEventListener('hashchange', readHash);
  readHash();
  var ready = performance.now();
  window.pagelockReady = {ready_ms: ready, script_start_ms: T0, parsed_ms: T1, cases: cases.length};
  if (location.hash === '#selftest') {
    var out = {total: all ? cases.length : D.total, lazy: !all, ready_ms: ready, script_start_ms: T0, indexed_ms: T1, filters: {}};
    document.querySelectorAll('#filters button[data-status]').forEach(function(b){
      b.click(); out.filters[b.dataset.status] = +document.getElementById('shown').textContent;
      out.pressed_ok = (out.pressed_ok !== false) && b.getAttribute('aria-pressed') === 'true';
      b.click();
    });
    var q = cases.length ? idOf(cases[0]) : '';
    search.value = q; search.dispatchEvent(new Event('input'));
    out.search = {query: q, shown: +document.getElementById('shown').textContent, hash: location.hash};
    document.getElementById('clear').click();
    out.after_clear = +document.getElementById('shown').textContent;
    out.rows_in_dom = document.querySelectorAll('tr.case').length;
    window.scrollTo(0, 0);
    var chg = document.querySelector('#changes tr.grp');
    function where(sel){ var e = chg && chg.querySelector(sel);
      return e ? {text: e.textContent, bottom: e.getBoundingClientRect().bottom + window.scrollY} : null; }
    out.first_change = chg ? {rule: where('.rule'), msg: where('.msg'), replay: where('.replay'),
                              link: where('.first')} : null;
    out.groups = [].map.call(document.querySelectorAll('#changes > tbody > tr.grp, #changes > tr.grp'), function(g){
      var r = g.getBoundingClientRect(), m = g.querySelector('.msg'), n = g.querySelector('.count');
      return {kind: g.querySelector('td.k').textContent, count: n ? +n.textContent : 0,
              rules: [].map.call(g.querySelectorAll('a.rule'), function(a){ return a.title; }),
              msg: m ? m.textContent : '', top: r.top + window.scrollY, bottom: r.bottom + window.scrollY};
    });
    out.overlaps = [];  // a badge wider than its cell would cover its neighbour
    document.querySelectorAll('td .st').forEach(function(b){
      var td = b.closest('td'), br = b.getBoundingClientRect(), tr = td.getBoundingClientRect();
      if (br.width && (br.right > tr.right + 0.5 || b.scrollWidth > b.clientWidth + 0.5)) out.overlaps.push(b.textContent + ' ' + Math.round(b.scrollWidth) + '>' + Math.round(b.clientWidth) + ' in ' + Math.round(tr.width));
    });
    document.querySelectorAll('details.mx').forEach(function(d){ d.open = true; buildMatrix(d); });
    out.matrix_cells = document.querySelectorAll('table.matrix a').length;
    out.matrix = [].map.call(document.querySelectorAll('details.mx'), function(d){
      var t = d.querySelector('table.matrix'), n = d.querySelector('.mx-more'), r1 = t.querySelector('tr + tr td');
      return {family: d.dataset.family, rows: t.rows.length - 1, columns: t.rows[0].cells.length - 1,
              cells: t.querySelectorAll('a').length, first_row: r1 ? r1.textContent : null,
              note: n ? n.textContent : null,
              links: n ? [].map.call(n.querySelectorAll('a'), function(a){ return a.getAttribute('href'); }) : []};
    });
    var more = document.querySelector('.mx-more a');
    if (more) { more.click(); out.matrix_more = {query: search.value, shown: +document.getElementById('shown').textContent};
                document.getElementById('clear').click(); }
    out.scroll_width = document.documentElement.scrollWidth;
    out.inner_width = window.innerWidth;
    out.inner_height = window.innerHeight;
    var last = cases[cases.length - 1];
    if (last) {
      var ok = showCase(idOf(last)), tr = document.getElementById('case=' + idOf(last));
      out.anchor = {id: idOf(last), found: ok && !!tr, expanded: !!(tr && tr.nextSibling && tr.nextSibling.className === 'detail')};
    }
    var pre = el('pre', '', JSON.stringify(out)); pre.id = 'selftest';
    document.body.appendChild(pre);
  }
})();
