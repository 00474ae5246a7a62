#!/usr/bin/env python3
"""split.tsv is what split.py makes of catalogue.tsv and faults.cc: every catalogue row once, its
half given by the hash rule, its kind as in the catalogue and its shape from faults.cc."""
import hashlib
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import split  # noqa: E402

CATALOGUE = os.path.join(HERE, "catalogue.tsv")
SOURCE = os.path.join(HERE, "faults.cc")
SPLIT = os.path.join(HERE, "split.tsv")


def committed():
    with open(SPLIT) as f:
        lines = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    return lines[0], lines[1:]


class SplitTest(unittest.TestCase):
    def test_the_committed_split_is_what_the_script_makes(self):
        with open(SPLIT) as f:
            self.assertEqual(f.read(), split.render(split.rows(CATALOGUE, SOURCE)),
                             "tools/faults/split.tsv is stale: run tools/faults/split.py --write")

    def test_every_catalogue_row_is_split_once(self):
        header, rows = committed()
        self.assertEqual(tuple(header), split.HEADER)
        names = [r[0] for r in rows]
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(names, [r["name"] for r in split.read_catalogue(CATALOGUE)])

    def test_each_half_follows_the_hash_of_the_name(self):
        _, rows = committed()
        for name, _, _, half in rows:
            first = hashlib.sha256(name.encode()).digest()[0]
            self.assertEqual(half, "tuning" if first % 2 == 0 else "heldout", name)

    def test_kinds_match_the_catalogue_and_shapes_are_known(self):
        _, rows = committed()
        kinds = {r["name"]: r["kind"] for r in split.read_catalogue(CATALOGUE)}
        shapes = set(split.SHAPES.values()) | {"baseline"}
        for name, kind, shape, _ in rows:
            self.assertEqual(kind, kinds[name], name)
            self.assertIn(shape, shapes, name)

    def test_the_first_72_faults_are_the_baseline_and_both_halves_hold_faults(self):
        _, rows = committed()
        self.assertEqual({r[2] for r in rows[:72]}, {"baseline"})
        self.assertNotIn("baseline", {r[2] for r in rows[72:]})
        self.assertEqual({r[3] for r in rows}, set(split.HALVES))

    def test_the_rule_is_fixed(self):
        # Known answers: a change of hash or parity would move every fault.
        self.assertEqual(split.half_of("htod_corrupts_last_byte"), "heldout")
        self.assertEqual(hashlib.sha256(b"htod_corrupts_last_byte").digest()[0] % 2, 1)

    def test_a_fault_missing_from_faults_cc_is_an_error(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as f:
            f.write("name\trule\tfamily\tkind\tentries\tdescription\n")
            f.write("no_such_fault\tR76\thostalloc\tdata\tcuMemcpy\tNothing.\n")
        try:
            with self.assertRaises(ValueError):
                split.rows(f.name, SOURCE)
        finally:
            os.unlink(f.name)


if __name__ == "__main__":
    unittest.main()
