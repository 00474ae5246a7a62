#!/usr/bin/env python3
"""split.tsv is what split.py makes of catalogue.tsv, faults.cc and batches.tsv: every catalogue
row once, its half given by the hash rule, its kind as in the catalogue, its shape from faults.cc
and its batch from batches.tsv."""
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
BATCHES = os.path.join(HERE, "batches.tsv")


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
        for name, _, _, half, _, _ in rows:
            first = hashlib.sha256(name.encode()).digest()[0]
            self.assertEqual(half, "tuning" if first % 2 == 0 else "heldout", name)

    def test_kinds_match_the_catalogue_and_shapes_are_known(self):
        _, rows = committed()
        kinds = {r["name"]: r["kind"] for r in split.read_catalogue(CATALOGUE)}
        shapes = set(split.SHAPES.values()) | {"baseline"}
        for name, kind, shape, _, _, _ in rows:
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

    def test_every_fault_is_in_one_batch_and_blind_is_yes_or_no(self):
        _, rows = committed()
        self.assertTrue({r[5] for r in rows} <= set(split.BLIND))
        by_batch = {}
        for r in rows:
            by_batch.setdefault(r[4], set()).add(r[5])
        for batch, blind in by_batch.items():
            self.assertEqual(len(blind), 1, f"batch {batch} is both blind and not")
        # The first 72 faults were written with the tests beside them: never a blind batch.
        self.assertEqual({r[5] for r in rows[:72]}, {"no"})

    def test_a_bad_batches_file_is_an_error_naming_the_problem(self):
        import tempfile
        head = "batch\twritten\tblind\tfaults\n"
        cases = {
            "not in catalogue": head + "a\tx\tno\t*\nb\tx\tyes\tno_such_fault\n",
            "batches 'a' and 'b'": head + "a\tx\tno\thtod_corrupts_last_byte\n"
                                         "b\tx\tno\thtod_corrupts_last_byte\n",
            "blind must be yes or no": head + "a\tx\tmaybe\t*\n",
            "in no batch": head + "a\tx\tno\thtod_corrupts_last_byte\n",
        }
        for want, text in cases.items():
            with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as f:
                f.write(text)
            try:
                with self.assertRaisesRegex(ValueError, want):
                    split.rows(CATALOGUE, SOURCE, f.name)
                self.assertEqual(split.main(["--batches", f.name]), 2)
            finally:
                os.unlink(f.name)

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
