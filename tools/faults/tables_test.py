#!/usr/bin/env python3
"""catalogue.tsv, split.tsv and conforming.tsv are what tables.py makes of the built catalogue:
every row once, in the catalogue's order, each fault's half given by the hash rule, its shape and
batch the fields of its row."""
import hashlib
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__" and not __package__:  # run by its path: run as its module (docs/python.md)
    import os
    import sys
    _module = "tools.faults.tables_test"
    _root = os.path.abspath(os.path.join(__file__, *[".."] * (_module.count(".") + 1)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_root, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                              "-m", _module, *sys.argv[1:]])

from tools.faults import built
from tools.faults import tables

SHIM, _, CLIENT = built.layer()
FAULTS, VARIATIONS, BATCHES = tables.listings(SHIM, CLIENT)


def committed(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        lines = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    return lines[0], lines[1:]


class TablesTest(unittest.TestCase):
    def test_the_committed_files_are_what_the_built_catalogue_prints(self):
        texts = tables.tables(FAULTS, VARIATIONS, BATCHES)
        self.assertEqual(sorted(texts), ["batches.tsv", "catalogue.tsv", "conforming.tsv", "split.tsv"])
        for name, text in texts.items():
            with open(os.path.join(HERE, name), encoding="utf-8") as f:
                self.assertEqual(f.read(), text, f"tools/faults/{name} is stale: run "
                                 "`bazel run //tools/faults:tables -- --write`")
        self.assertEqual(tables.stale(texts, HERE), [])

    def test_rows_are_listed_by_their_order_and_every_name_once(self):
        for rows in (FAULTS, VARIATIONS):
            self.assertEqual([int(r["order"]) for r in rows], list(range(1, len(rows) + 1)))
            names = [r["name"] for r in rows]
            self.assertEqual(len(names), len(set(names)))
        self.assertFalse({r["name"] for r in FAULTS} & {r["name"] for r in VARIATIONS})

    def test_each_half_follows_the_hash_of_the_name(self):
        header, rows = committed("split.tsv")
        self.assertEqual(tuple(header), tables.FILES["split.tsv"])
        for name, _, _, half, _, _ in rows:
            first = hashlib.sha256(name.encode()).digest()[0]
            self.assertEqual(half, "tuning" if first % 2 == 0 else "heldout", name)
        self.assertEqual({r[3] for r in rows}, set(tables.HALVES))

    def test_the_rule_is_fixed(self):
        # Known answers: a change of hash or parity would move every fault.
        self.assertEqual(tables.half_of("htod_corrupts_last_byte"), "heldout")
        self.assertEqual(hashlib.sha256(b"htod_corrupts_last_byte").digest()[0] % 2, 1)

    def test_the_first_72_faults_are_the_baseline_of_the_first_batch(self):
        _, rows = committed("split.tsv")
        self.assertEqual({(r[2], r[4], r[5]) for r in rows[:72]}, {("baseline", "catalogue-1", "no")})
        self.assertNotIn("baseline", {r[2] for r in rows[72:]})

    def test_every_fault_is_in_a_listed_batch_and_every_batch_holds_faults(self):
        header, rows = committed("batches.tsv")
        self.assertEqual(tuple(header), tables.FILES["batches.tsv"])
        self.assertEqual({r["batch"] for r in FAULTS}, {r[0] for r in rows})
        self.assertEqual(sum(int(r[1]) for r in rows), len(FAULTS))
        blind = {r[0]: r[2] for r in rows}
        for r in FAULTS:
            self.assertEqual(r["blind"], blind[r["batch"]], r["name"])

    def test_a_batch_is_blind_or_not_as_a_whole(self):
        by_batch = {}
        for r in FAULTS:
            self.assertIn(r["blind"], ("yes", "no"), r["name"])
            by_batch.setdefault(r["batch"], set()).add(r["blind"])
        for batch, blind in by_batch.items():
            self.assertEqual(len(blind), 1, f"batch {batch} is both blind and not")

    def test_a_malformed_listing_is_an_error_naming_the_line(self):
        header = "\t".join(tables.FAULT_LISTING)
        with self.assertRaisesRegex(ValueError, "header"):
            tables.parse_listing("name\trule\n", tables.FAULT_LISTING, "x")
        with self.assertRaisesRegex(ValueError, "line 2: 3 fields"):
            tables.parse_listing(header + "\na\tb\tc\n", tables.FAULT_LISTING, "x")

    def test_a_stale_file_is_named(self):
        texts = tables.tables(FAULTS, VARIATIONS, BATCHES)
        texts["split.tsv"] += "extra\n"
        self.assertEqual(tables.stale(texts, HERE), ["split.tsv"])

    def test_the_summary_counts_each_half(self):
        text = tables.summary(FAULTS)
        tuning = sum(1 for r in FAULTS if tables.half_of(r["name"]) == "tuning")
        self.assertIn(f"total{tuning:>15}{len(FAULTS) - tuning:>9}", text)


if __name__ == "__main__":
    unittest.main()
