#!/usr/bin/env python3
"""The catalogue's TSV files, generated from the built catalogue (what `shim_client catalogue`,
`conforming` and `batches` print), never written by hand:

  catalogue.tsv   name rule family kind entries description            (the faults)
  split.tsv       name kind shape half batch blind                     (the fixed split)
  conforming.tsv  name rule family kind entries description justification targets excluded env
  batches.tsv     batch faults blind how                               (the batches)

The mutation tool reads them from the bundle. split.tsv gives each fault its half: "tuning" when
the first byte of sha256(name) is even, else "heldout". Suite work may look at the tuning half
only; the held-out half measures whether what was learned there carries over to faults nobody
tuned against. The half follows from the name alone, so adding, removing or reordering faults
never moves another. Shape, batch and blind are fields of the built catalogue (catalogue.cc).

  tables.py            check: exit 1 when a committed file is not what the build prints
  tables.py --write    rewrite the four files
  tables.py --summary  the number of faults of each kind, shape and batch in each half

`bazel run //tools/faults:tables -- --write` uses Bazel's build; run directly from a checkout it
builds the shim and shim_client with g++ first (built.py).

Exit codes: 0 done (the files are up to date, or written); 1 a committed file is stale; 2 the
catalogue could not be built or listed, or its listing is malformed (the message says which).
"""
import argparse
import collections
import hashlib
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.faults.tables"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from tools.faults import built

HALVES = ("tuning", "heldout")
FAULT_LISTING = ("order", "name", "rule", "family", "kind", "shape", "batch", "blind", "entries",
                 "description")
VARIATION_LISTING = ("order", "name", "rule", "family", "kind", "entries", "description",
                     "justification", "targets", "excluded", "env")
BATCH_LISTING = ("batch", "blind", "how")
FILES = {
    "catalogue.tsv": ("name", "rule", "family", "kind", "entries", "description"),
    "split.tsv": ("name", "kind", "shape", "half", "batch", "blind"),
    "conforming.tsv": ("name", "rule", "family", "kind", "entries", "description",
                       "justification", "targets", "excluded", "env"),
    "batches.tsv": ("batch", "faults", "blind", "how"),
}


def half_of(name):
    """The half a fault name falls in: the parity of the first byte of its SHA-256."""
    return HALVES[hashlib.sha256(name.encode("utf-8")).digest()[0] % 2]


def parse_listing(text, header, what):
    """Rows of a shim_client listing as dicts; ValueError naming the line when it is malformed."""
    lines = [l for l in text.split("\n") if l]
    if not lines or tuple(lines[0].split("\t")) != header:
        raise ValueError(f"{what}: the header is not {' '.join(header)}")
    rows = []
    for n, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(header):
            raise ValueError(f"{what}: line {n}: {len(cells)} fields, expected {len(header)}")
        rows.append(dict(zip(header, cells)))
    return rows


def listings(shim_dir, client):
    """(faults, variations, batches): the built catalogue's rows, as shim_client prints them."""
    out = []
    for mode, header in (("catalogue", FAULT_LISTING), ("conforming", VARIATION_LISTING),
                         ("batches", BATCH_LISTING)):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAGELOCK_")}
        env["SHIM_CLIENT_LIB"] = os.path.join(shim_dir, "libcuda.so.1")
        p = subprocess.run([client, mode], env=env, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise ValueError(f"shim_client {mode} exited {p.returncode}: {p.stderr.strip()[-400:]}")
        out.append(parse_listing(p.stdout, header, f"shim_client {mode}"))
    return tuple(out)


def tables(faults, variations, batches):
    """{file name: its text} of the four files."""
    faults = [dict(r, half=half_of(r["name"])) for r in faults]
    counts = collections.Counter(r["batch"] for r in faults)
    batches = [dict(b, faults=str(counts[b["batch"]])) for b in batches]
    texts = {}
    for name, columns in FILES.items():
        rows = {"conforming.tsv": variations, "batches.tsv": batches}.get(name, faults)
        texts[name] = "".join("\t".join(r) + "\n" for r in
                              [columns] + [[row[c] for c in columns] for row in rows])
    return texts


def summary(faults):
    """Lines counting the faults of each kind, shape and batch per half."""
    lines = []
    total = collections.Counter(half_of(r["name"]) for r in faults)
    for column in ("kind", "shape", "batch"):
        counts = collections.Counter((r[column], half_of(r["name"])) for r in faults)
        lines.append(f"{column:<12}{'tuning':>8}{'heldout':>9}")
        for v in sorted({r[column] for r in faults}):
            lines.append(f"{v:<12}{counts[(v, 'tuning')]:>8}{counts[(v, 'heldout')]:>9}")
        lines.append(f"{'total':<12}{total['tuning']:>8}{total['heldout']:>9}")
        lines.append("")
    return "\n".join(lines)


def stale(texts, folder):
    """The files of `folder` that differ from `texts`."""
    out = []
    for name, text in texts.items():
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                if f.read() == text:
                    continue
        except OSError:
            pass
        out.append(name)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true", help="rewrite the four files")
    p.add_argument("--summary", action="store_true", help="counts per kind, shape, batch and half")
    args = p.parse_args(argv)
    # bazel run: write into the checkout, not into the runfiles
    folder = os.path.join(os.environ.get("BUILD_WORKSPACE_DIRECTORY") or built.ROOT, "tools", "faults")
    try:
        shim_dir, _, client = built.layer()
        faults, variations, batches = listings(shim_dir, client)
    except (built.BuildError, OSError, ValueError, subprocess.TimeoutExpired) as e:
        print(f"tables: {e}", file=sys.stderr)
        return 2
    texts = tables(faults, variations, batches)
    if args.summary:
        print(summary(faults))
        return 0
    if args.write:
        for name, text in texts.items():
            with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                f.write(text)
        return 0
    old = stale(texts, folder)
    if old:
        print(f"tables: {', '.join(old)} not what the built catalogue prints: run "
              "tools/faults/tables.py --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
