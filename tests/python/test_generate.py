#!/usr/bin/python3
"""Tests of tinyformer_export.generate() (run by `make parity`; needs build/tinyformer,
and PyTorch only because tinyformer_export imports it).

generate() runs `build/tinyformer run`: the expected outputs here are the
toy models' known answers (the reverse model reverses: "hello" -> "olleh",
whose ids are written out from its vocabulary), and the properties of
sampling that hold whatever the draws are: a seed repeats, another seed
differs, top_k=1 is greedy, a model without an end token gives exactly
max_new_tokens tokens.

    /usr/bin/python3 tests/python/test_generate.py          # from the repository root
"""

import json
import sys
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import safetensors_io as st  # noqa: E402
import tinyformer_export as te  # noqa: E402

REVERSE = REPO / "data" / "models" / "reverse.safetensors"
REVERSE_CAUSAL = REPO / "data" / "models" / "reverse-causal.safetensors"
# The reverse model's vocabulary: <pad> <bos> <eos> <unk> a..z, so a = 4, e = 8, h = 11, l = 15, o = 18.
HELLO, OLLEH = [11, 8, 15, 15, 18], [18, 15, 15, 8, 11]


class Generate(unittest.TestCase):
    def test_greedy_text_and_ids(self):
        self.assertEqual(te.generate(REVERSE, "hello"), "olleh")
        self.assertEqual(te.generate(REVERSE, HELLO, ids=True), OLLEH)
        self.assertEqual(te.generate(REVERSE, "hello", max_new_tokens=2), "ol")
        self.assertEqual(te.generate(REVERSE_CAUSAL, "abc"), "cba")

    def test_sampling_is_seeded(self):
        # T = 10 flattens the trained model's near-certain outputs, so the seed shows.
        a = te.generate(REVERSE, HELLO, temperature=10, seed=3, ids=True)
        self.assertEqual(te.generate(REVERSE, HELLO, temperature=10, seed=3, ids=True), a)
        others = {tuple(te.generate(REVERSE, HELLO, temperature=10, seed=s, ids=True)) for s in (4, 5, 6)}
        self.assertTrue(others - {tuple(a)}, "three other seeds all gave the same tokens")
        self.assertTrue(all(0 <= i < 30 for i in a))
        self.assertEqual(te.generate(REVERSE, "hello", temperature=10, top_k=1, seed=9), "olleh")
        self.assertEqual(te.generate(REVERSE, "hello", top_p=1e-6), "olleh")  # one token kept: the argmax

    def test_model_without_eos_generates_max_new_tokens(self):
        tensors, metadata = st.read(str(REVERSE_CAUSAL))[:2]
        config = json.loads(metadata["config"])
        del config["eos_id"]
        metadata["config"] = json.dumps(config)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "noeos.safetensors"
            st.write(str(path), tensors, metadata)
            prompt = [4, 5, 6]  # a b c; run adds <bos> and the prompt suffix '='
            for n in (1, 5, 12):
                self.assertEqual(len(te.generate(path, prompt, max_new_tokens=n, ids=True)), n)
                self.assertEqual(len(te.generate(path, prompt, max_new_tokens=n, temperature=1.5, seed=1, ids=True)), n)
            # The default (64) is past max_len 40: <bos> a b c = leaves 35 positions.
            self.assertEqual(len(te.generate(path, prompt, ids=True)), 35)

    def test_refusals_name_the_setting(self):
        for kwargs, message in [({"temperature": 0}, "--temperature must be > 0"),
                                ({"temperature": float("nan")}, "--temperature"),
                                ({"top_p": 1.5}, "--top-p must be in (0, 1]"),
                                ({"top_k": 0}, "top_k must be an int >= 1"),
                                ({"top_k": 2.5}, "top_k must be an int"),
                                ({"max_new_tokens": 0}, "max_new_tokens must be an int >= 1"),
                                ({"seed": 3}, "seeds sampling, which is off"),
                                ({"seed": -1, "top_k": 2}, "seed must be an int >= 0"),
                                ({"temperature": "hot"}, "temperature must be a number")]:
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(ValueError) as caught:
                    te.generate(REVERSE, "hello", **kwargs)
                self.assertIn(message, str(caught.exception))
        with self.assertRaises(ValueError):
            te.generate(REVERSE, "hello", ids=True)  # text where ids are expected
        with self.assertRaises(RuntimeError) as caught:
            te.generate(REVERSE, "HELLO")  # outside the vocabulary: run's exit 1
        self.assertIn("not in the model's vocabulary", str(caught.exception))
        # A prompt that starts with "--" is text, not a flag.
        with self.assertRaises(RuntimeError) as caught:
            te.generate(REVERSE, "--beam")
        self.assertIn("character '-'", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
