"""Bringing up a SKU: `tools/qualify --draft-expectations RUN_DIR` drafts, from a first night's run
folder, the files a new SKU needs (docs/platforms/new-platform.md is the checklist):

  expectations/<sku>.txt          the failures nothing explained, as `fail` entries keyed by the
                                  driver branch, each with bug=TODO: the loader refuses TODO
                                  (file:line), so nothing unexplained can be committed by mistake;
                                  each says how the case ended in the other SKUs' committed
                                  baselines (a case none of them has never ran anywhere before:
                                  suspect the test before the GPU)
  baselines/<sku>[/cuda-X.Y]/<tier file>   the run as the SKU's baseline
  baselines/<sku>/README.md       where the baseline came from (run, commit, machine, host setup)
  docs/platforms/<sku>.md         the SKU's page: the machine, what it inherited, what did not run

An existing file is never overwritten without --force. A SKU already known (its expectations file
exists) run on a CUDA runtime or tier it has no baseline for gets only that baseline
(baselines/<sku>/cuda-X.Y/): its reviewed files are kept. No GPU is needed: it reads results.json.
Exit codes: 0 drafted; 2 bad input (no such run folder, not a qualify results.json, a file that
exists without --force).
"""

import datetime
import glob
import os

from reports import ciout
from reports import compare as cmp
from reports import coverage_reasons
from reports import expectations as expect
from reports import model
from tools.qualification import baselines, common
from tools.qualification.common import Stop, in_checkout, say


def draft(run_dir, expectations_dir, force=False):
    """Writes the drafts; returns the list of paths written. Raises Stop(EXIT_CONFIG)."""
    path = os.path.join(run_dir, "results.json") if os.path.isdir(run_dir) else run_dir
    if not os.path.isfile(path):
        raise Stop(cmp.EXIT_CONFIG, f"--draft-expectations {run_dir}: no results.json there (a qualify run folder)")
    try:
        run, info, doc = model.read_results(path)
    except model.ResultsError as e:
        raise Stop(cmp.EXIT_CONFIG, f"--draft-expectations: {e}")
    if not info.get("run_key"):
        raise Stop(cmp.EXIT_CONFIG, f"--draft-expectations {path}: not a qualify run (no info.run_key)")
    sku = info.get("sku") or expect.sku_of(run.fingerprint.get("gpu0_name", "none"))
    comparison = doc.get("comparison", {})
    runtime = baselines.runtime_of(run.fingerprint)
    dest = baselines.baseline_dest(sku, runtime)
    baseline_file = os.path.join(dest, baselines.tier_file(info.get("tier")))
    sku_txt = os.path.join(expectations_dir, f"{sku}.txt")
    if not force and os.path.lexists(sku_txt) and not os.path.lexists(baseline_file):
        # A known SKU on a CUDA runtime (or tier) it has no baseline for: only that baseline is
        # new; the SKU's expectations, README and page stay as reviewed.
        unexplained = sorted(cid for cid, st in comparison.items() if st == model.Change.REGRESSION)
        if unexplained:
            raise Stop(cmp.EXIT_CONFIG, f"--draft-expectations: {sku} is known ({in_checkout(sku_txt) or sku_txt}) "
                                        f"and {len(unexplained)} failure(s) of this run nothing explains "
                                        f"(first: {unexplained[0]}): add their entries there by hand, "
                                        "or --force to redraft every file")
        files = {baseline_file: None}
    else:
        files = {
            sku_txt: expectations_text(run, info, comparison, sku),
            baseline_file: None,  # the run itself
            os.path.join(common.ROOT, "baselines", sku, "README.md"): baseline_readme(run, info, sku, dest),
            os.path.join(common.ROOT, "docs", "platforms", f"{sku}.md"): platform_page(run, info, doc, sku),
        }
    existing = [p for p in files if os.path.lexists(p)]
    if existing and not force:
        raise Stop(cmp.EXIT_CONFIG, "--draft-expectations: these exist already (review them, or --force to "
                                    "replace them): " + ", ".join(in_checkout(p) or p for p in existing))
    written = []
    for p, text in files.items():
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if text is None:
            # The run folder's parent is the run's --out (runs/ in the committed command).
            out = os.path.dirname(os.path.dirname(os.path.abspath(path)))
            model.write_results(p, run, baselines.portable_info(info, out), _Comparison(doc))
        else:
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
        written.append(p)
    return written


class _Comparison:
    """The run's own comparison, as results.json holds it, for model.write_results."""

    def __init__(self, doc):
        self.doc = doc

    def to_json(self):
        keys = ("comparison", "comparison_notes", "dropped", "dropped_covered", "machine_coverage",
                "summary", "stale_expectations", "expectations_elsewhere", "expectations_applied")
        return {k: self.doc[k] for k in keys if k in self.doc}


def _branch(driver):
    return driver.split(".", 1)[0] if driver else ""


def elsewhere(sku):
    """How each case ended in the committed baselines of the other SKUs (every tier and runtime):
    {case id: [(path in the checkout, status, driver)]}. An unreadable baseline is skipped (the
    loader that compares with it says why)."""
    found = {}
    pattern = os.path.join(common.ROOT, "baselines", "*", "**", "*.json")
    for path in sorted(glob.glob(pattern, recursive=True)):
        rel = os.path.relpath(path, common.ROOT)
        if rel.split(os.sep)[1] == sku:
            continue
        try:
            run, _info, _doc = model.read_results(path)
        except model.ResultsError:
            continue
        driver = run.fingerprint.get("nvidia_driver", "?")
        for c in run.cases:
            found.setdefault(str(c.id), []).append((rel.replace(os.sep, "/"), str(c.status), driver))
    return found


def where_else(case_id, seen):
    """One line on how a failing case ended elsewhere, for the reviewer of a drafted entry."""
    where = seen.get(case_id)
    if not where:
        return "new: no other SKU's committed baseline has this case (suspect the test first)"
    passed = [f"{p} (driver {d})" for p, status, d in where if status == "PASS"]
    if passed:
        return "passes in " + ", ".join(passed[:2]) + " (look at this GPU, host or driver)"
    return "also " + "/".join(sorted({status for _, status, _ in where})) + " in " + where[0][0]


def expectations_text(run, info, comparison, sku):
    """The SKU's expectations file: a header, then one `fail` entry per failure nothing
    explained (REGRESSION), keyed by the driver branch, bug=TODO until someone explains it."""
    fp = run.fingerprint
    branch = _branch(fp.get("nvidia_driver", ""))
    lines = [f"# pagelock expectations that only the {fp.get('gpu0_name', sku)} (sku {sku}) causes. Format:",
             "# reports/expectations.py. Drafted by tools/qualify --draft-expectations from run",
             f"# {info.get('run_key')} ({info.get('started_at', '')[:10]}, harness commit "
             f"{info.get('bundle', {}).get('commit', '?')}). Evidence: docs/platforms/{sku}.md.",
             "#",
             "# Every deviation expectations/common.txt keys by driver branch, runtime or host was",
             "# inherited. Below: each failure nothing explained. For each, find the cause: if it is",
             "# the driver branch, the runtime or the host, move the entry to common.txt with driver=,",
             "# runtime= or host=; keep it here only if this GPU causes it. Replace bug=TODO with the",
             "# bug report or the docs/platforms/ section: the loader refuses TODO (file:line).", ""]
    failures = [c for c in run.cases if comparison.get(str(c.id)) == str(model.Change.REGRESSION)
                and c.status.is_fail]
    seen = elsewhere(sku) if failures else {}
    new = sum(1 for c in failures if str(c.id) not in seen)
    if new:
        lines += [f"# {new} of these {len(failures)} are cases no other SKU's committed baseline has: they",
                  "# never ran on another platform, so suspect the test before this GPU.", ""]
    for c in failures:
        pattern = ciout.message_glob(c.message)
        cond = f" driver={branch}" if branch else ""
        lines.append(f"# {where_else(str(c.id), seen)}")
        lines.append(f"fail {c.id} status={c.status}{cond}" + (f" message={pattern}" if pattern else "")
                     + f" bug=TODO  # {ciout.one_line(c)[:100]}")
    if not failures:
        lines.append("# No failure of the first night needed an entry of this SKU's own.")
    return "\n".join(lines) + "\n"


def baseline_readme(run, info, sku, dest):
    fp = run.fingerprint
    rel = in_checkout(dest) or dest
    counts = ", ".join(f"{k} {v}" for k, v in sorted(run.counts().items()) if v)
    facts = fp.get("host_facts", "(not recorded)") or "none"
    return (f"# Reference runs of {fp.get('gpu0_name', sku)} (sku `{sku}`)\n\n"
            f"`{rel}/{baselines.tier_file(info.get('tier'))}` is run `{info.get('run_key')}` "
            f"({info.get('started_at', '')}), the {info.get('tier', 'full')} tier of harness commit "
            f"`{info.get('bundle', {}).get('commit', '?')}`, drafted by `tools/qualify --draft-expectations` "
            f"from its first night (verdict {info.get('verdict', '?')}).\n\n"
            f"- GPU: {fp.get('gpu0_name', '?')} x{fp.get('gpu_count', '?')}, PCIe {fp.get('gpu0_pcie_link', '?')}\n"
            f"- driver {fp.get('nvidia_driver', '?')}, CUDA runtime {expect.runtime_text(fp.get('cuda_runtime_version')) or '?'}\n"
            f"- host: {fp.get('kernel', '?')}; memory {fp.get('host_memory_MiB', '?')} MiB; host facts: {facts}; "
            f"IOMMU {fp.get('host_iommu', '?')}\n"
            f"- cases: {counts}\n\n"
            "A later night on this SKU compares with the run of this tier stored last in its `--out`, "
            "else with this file (`--baseline auto`). Regenerate it with `tools/qualify --seed N "
            "--write-baseline` once a run qualifies.\n")


def platform_page(run, info, doc, sku):
    fp = run.fingerprint
    night = info.get("first_night") or {}
    inherited = night.get("inherited") or doc.get("expectations_applied") or []
    groups = coverage_reasons.summary(run.cases)
    out = [f"# {fp.get('gpu0_name', sku)}: what this SKU showed", "",
           f"Sku `{sku}`, first qualified {info.get('started_at', '')[:10]} (run `{info.get('run_key')}`, "
           f"harness commit `{info.get('bundle', {}).get('commit', '?')}`). Expectations: "
           f"`expectations/{sku}.txt` (what only this GPU causes); reference runs: `baselines/{sku}/`.", "",
           "## The machine", "", "| key | value |", "|---|---|"]
    for k in ("gpu0_name", "gpu_count", "nvidia_driver", "cuda_runtime_version", "gpu0_pcie_link", "gpu0_memory_MiB",
              "gpu0_vbios", "kernel", "host_memory_MiB", "host_facts", "host_iommu", "host_hugetlb_2m_pages"):
        if k in fp:
            out.append(f"| {k} | {fp[k]} |")
    out += ["", "## Deviations it inherited", ""]
    out += [f"- `{i.get('entry')}` ({i.get('known_on') or 'everywhere'}): {i.get('cases')} case(s), "
            f"[{i.get('bug')}](../../{i.get('bug', '').split('#')[0]})" for i in inherited] or ["- none"]
    out += ["", "## Not run here, by reason", "", "| kind | cases | reason | how to enable |", "|---|---|---|---|"]
    out += [f"| {g['category']} | {g['cases']} | {g['reason'][:160].replace('|', '/')} | {g['fix'] or ''} |"
            for g in groups]
    out += ["", "## Deviations only this GPU causes", "",
            f"None known yet (drafted {datetime.date.today().isoformat()}): explain each entry of "
            f"`expectations/{sku}.txt` here, with the evidence, or move it to the cause's page.", ""]
    return "\n".join(out)


def run_draft(args):
    """The command: prints what it wrote and what to do next; returns the exit code."""
    written = draft(args.draft_expectations, args.expectations, args.force)
    for p in written:
        say(f"drafted {in_checkout(p) or p}")
    if len(written) == 1:  # a known SKU's baseline for another runtime or tier
        say("next: review the baseline's not-run reasons, commit it (docs/platforms/new-platform.md)")
    else:
        say("next: replace each bug=TODO (python3 -m reports.expectations --check FILE says where), "
            "review the baseline's not-run reasons, commit (docs/platforms/new-platform.md)")
    return 0
