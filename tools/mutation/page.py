"""mutation.html: a self-contained HTML section (inline style, no scripts, everything escaped),
written from the plain dict of outputs.page_data."""

import html

STYLE = ("<style>.pl-mutation table{border-collapse:collapse;font:13px sans-serif}"
         ".pl-mutation td,.pl-mutation th{border:1px solid #ccc;padding:3px 6px;text-align:left;"
         "vertical-align:top}.pl-mutation .KILLED{background:#dfd}.pl-mutation .HANDLED"
         "{background:#def}.pl-mutation .SURVIVED{background:#fdd}.pl-mutation .ERROR,"
         ".pl-mutation .NOT_RUN{background:#eee}.pl-mutation details{margin:0}</style>")
# A variation's row takes the colour of the fault verdict it is like.
VARIATION_CLASS = {"FALSE_ALARM": "SURVIVED", "CONFORMS": "KILLED"}


def esc(s):
    return html.escape(str(s), quote=True)


def write_page(path, data):
    with open(path, "w") as fh:
        fh.write(render(data))


def render(data):
    out = ['<section class="pl-mutation" id="mutation">', STYLE,
           "<h2>Mutation score: injected driver faults</h2>", _score(data),
           f"<p>Control under the shim: {esc(data['control_summary'])}. "
           f"Unstable cases ignored: {data['unstable']}.</p>"]
    out += _survivors(data["survivors"]) + _faults(data["faults"]) + _variations(data["variations"])
    out.append("</section>")
    return "\n".join(out) + "\n"


def _score(data):
    s = data["score"]
    if not s["total"]:
        return "<p>No injected faults were run.</p>"
    return (f"<p><b>The suite caught {s['caught']} of {s['counted']} injected driver faults ({esc(s['percent'])})"
            f"</b>: {s['killed']} killed, {s['handled']} handled as NotSupported, "
            f"{s['survived']} survived"
            + (f", {s['errors']} not loaded" if s["errors"] else "")
            + (f", {s['not_run']} not run (time budget)" if s["not_run"] else "")
            + (f"; false alarms: {data['false_alarm_count']}" if data["false_alarm_count"] is not None else "")
            + ".</p>")


def _survivors(rows):
    if not rows:
        return []
    out = ["<h3>Survivors</h3><table><tr><th>fault</th><th>rule</th><th>what the driver "
           "did</th><th>why it was not caught</th><th>test binaries it ran</th></tr>"]
    for r in rows:
        ran = r["ran"]
        ran_html = (f"<details><summary>{len(ran)}</summary><ul>"
                    + "".join(f"<li>{esc(t)}</li>" for t in ran) + "</ul></details>") if ran else "none"
        out.append(f"<tr class=\"SURVIVED\"><td>{esc(r['name'])}</td><td>{esc(r['rule'])}</td>"
                   f"<td>{esc(r['description'])}</td><td>{esc(r['why'])}</td><td>{ran_html}</td></tr>")
    out.append("</table>")
    return out


def _faults(rows):
    if not rows:
        return []
    out = ["<h3>Every fault</h3><table><tr><th>fault</th><th>verdict</th><th>rule</th>"
           "<th>family</th><th>what the driver did</th><th>caught by</th></tr>"]
    for r in rows:
        if r["cases"]:
            items = "".join(f"<li>{esc(c['case'])}: {esc(c['control'])} &rarr; {esc(c['fault'])}"
                            "</li>" for c in r["cases"])
            more = f"<li>... {r['more']} more</li>" if r["more"] else ""
            by = f"<details><summary>{r['case_count']} case(s)</summary><ul>{items}{more}</ul></details>"
        else:
            by = esc(r["note"])
        out.append(f"<tr class=\"{esc(r['verdict'])}\"><td>{esc(r['name'])}</td>"
                   f"<td>{esc(r['verdict'])}</td><td>{esc(r['rule'])}</td><td>{esc(r['family'])}</td>"
                   f"<td>{esc(r['description'])}</td><td>{by}</td></tr>")
    out.append("</table>")
    return out


def _variations(v):
    """The conforming variations: the false-alarm count, every false alarm, every variation."""
    if not v:
        return []
    out = ["<h3>False alarms: conforming variations</h3>",
           f"<p><b>{esc(v['line'])}</b>. A variation is a driver behaviour the documentation "
           "allows but this driver does not show; a case that fails under one is a defect of "
           "the suite, not of the driver.</p>"]
    if v["count"]:
        out.append("<table><tr><th>variation</th><th>case</th><th>control &rarr; status</th>"
                   "<th>message</th></tr>")
        for c in v["false_alarms"]:
            out.append(f"<tr class=\"SURVIVED\"><td>{esc(c['variation'])}</td><td>{esc(c['case'])}</td>"
                       f"<td>{esc(c['control'])} &rarr; {esc(c['status'])}</td>"
                       f"<td>{esc(c['message'])}</td></tr>")
        out.append("</table>")
    out.append("<table><tr><th>variation</th><th>verdict</th><th>rules</th><th>what the driver "
               "does</th><th>why it conforms</th><th>binaries run</th></tr>")
    for r in v["rows"]:
        cls = VARIATION_CLASS.get(r["verdict"], "NOT_RUN")
        out.append(f"<tr class=\"{cls}\"><td>{esc(r['name'])}</td><td>{esc(r['verdict'])}"
                   + (f"<br>{esc(r['note'])}" if r["note"] else "") + "</td>"
                   f"<td>{esc(r['rule'])}</td><td>{esc(r['description'])}</td>"
                   f"<td>{esc(r['justification'])}</td>"
                   f"<td>{r['runs']}</td></tr>")
    out.append("</table>")
    return out
