"""Every HTML page pagelock writes is rendered here: Jinja2 (Debian's python3-jinja2, autoescape
on) from reports/templates/, each page one template on the shared layout (base.html.j2), macros
(macros.html.j2) and stylesheet (report.css with the status colours below).

  the run report and the qualification page   htmlreport.render, render_qualification (page.html.j2)
  runs side by side                            reports/compare_runs.py (compare.html.j2)
  the fleet report                             tools/fleet/report.py render_html (fleet.html.j2)
  the mutation section (mutation.html)         render_mutation_page (mutation_page.html.j2)

Rendering needs jinja2 in this interpreter: the commands re-execute themselves under one that has
it at their entry (reports/interpreter.py); here, without it, MissingDependency is raised.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.path.join(HERE, "templates")

# Every badge is white text on its colour; each pair meets WCAG AA (4.5:1) -- the browser test
# computes it from CSS below. Status is never colour alone: the badge always says its name.
STATUS_COLORS = {
    "PASS": "#2e7d32", "WARN": "#7c5e00", "NOT_SUPPORTED": "#546e7a", "SKIP": "#5f6b73",
    "FAIL": "#c62828", "TIMEOUT": "#6a1b9a", "CRASH": "#b71c1c", "INFRA_ERROR": "#37474f",
    "MISSING": "#a84300", "EXPECTED_FAIL": "#795548", "KNOWN_FLAKE": "#795548",
    "FLAKE": "#8a5300", "UNEXPECTED_PASS": "#0277bd", "REGRESSION": "#c00000",
    "FIXED": "#00796b", "NEW": "#3f51b5", "DROPPED": "#bf360c", "COVERAGE_LOST": "#ad1457",
    "KNOWN_COVERAGE_LOSS": "#795548", "PLATFORM_DIFFERS": "#5d4037",
}
OTHER_COLOR = "#555555"

INSTALL_HINT = ("install Debian's python3-jinja2 (tools/install_deps.sh), or set PAGELOCK_PYTHON to "
                "an interpreter that has it")


class MissingDependency(OSError):
    """jinja2 does not import here: no HTML page can be rendered."""


def css():
    """report.css and a background per status: the stylesheet of every page."""
    with open(os.path.join(TEMPLATES, "report.css"), encoding="utf-8") as f:
        base = f.read()
    return base + "".join(f".st-{s}{{background:{c}}}" for s, c in STATUS_COLORS.items()) + \
        f".st-other{{background:{OTHER_COLOR}}}"


def status_class(status):
    """The badge class of a status: st-<name> for a known one, st-other for any other."""
    s = str(status)
    return s if s in STATUS_COLORS else "other"


def case_link(case_id):
    """The '#case=' link of a case: the id percent-encoded whole, as report.js's
    encodeURIComponent does ('/' included), so that URLSearchParams, which the page reads the
    fragment with, gives it back even when it holds ' ', '#', '&', '+' or '%'."""
    from urllib.parse import quote
    return "#case=" + quote(str(case_id), safe="")


_ENV = []


def environment():
    if not _ENV:
        try:
            import jinja2
        except ImportError:
            raise MissingDependency(f"cannot render the HTML page: no Python here imports jinja2 "
                                    f"({sys.executable} does not); {INSTALL_HINT}") from None
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                 undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                 keep_trailing_newline=False)
        env.filters["status_class"] = status_class
        env.filters["case_link"] = case_link
        _ENV.append(env)
    return _ENV[0]


def markup(text):
    """Our own, already escaped HTML (a section rendered by a template) passed into another."""
    environment()  # markupsafe comes with jinja2: the same error without it
    import markupsafe
    return markupsafe.Markup(text)


def render(name, **context):
    return environment().get_template(name).render(**context)


def render_mutation_page(doc):
    """mutation.html: the page tools/mutation/mutation.py writes beside mutation.json, from the
    same dict (score, control, faults, variations, false_alarms). A whole document on the shared
    layout (the tab says the score), self-contained: no script, everything escaped."""
    s = doc.get("score") or {}
    caught = (f"{s.get('KILLED', 0) + s.get('HANDLED', 0)} of {s['counted']} injected driver faults caught"
              if s.get("total") and "counted" in s else "no injected faults run")
    return render("mutation_page.html.j2", page_title=f"mutation score: {caught} — pagelock",
                  css=markup(css()), doc=doc, variations=doc.get("variations") or [],
                  survivors=[r for r in doc["faults"] if r["verdict"] == "SURVIVED"]) + "\n"
