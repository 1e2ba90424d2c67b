#!/usr/bin/python3
"""The committed Annotated Transformer copy model (data/families/annotated-copy.*) against
the committed PyTorch weights, through the project's own families/annotated.py module
(run by `make parity`; needs PyTorch and build/tinyformer).

- check(committed .safetensors, make_model holding the committed .pt): logits (as
  log-probabilities: the Generator returns log_softmax) and every per-head weight, on
  padded random batches through the Annotated masks; worst error printed.
- the committed greedy outputs are what greedy_decode makes with the committed .pt now.
- --from annotated on the command line writes the same tensors and passes its check.
- each Annotated difference matters: the file rewritten with nn.LayerNorm's norm, or
  without the embedding scale, fails check against the module (the error is printed:
  docs/FAMILIES-annotated.part.md quotes these numbers).

    /usr/bin/python3 tests/python/test_parity_annotated.py -v
"""

import contextlib
import io
import sys
import tempfile
import unittest
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import safetensors_io as st  # noqa: E402
import tinyformer_export as te  # noqa: E402
from families import Converted, write_converted  # noqa: E402
from families import annotated as A  # noqa: E402

DATA = REPO / "data" / "families"
PT, MODEL, GREEDY = DATA / "annotated-copy.pt", DATA / "annotated-copy.safetensors", DATA / "annotated-copy.greedy.tsv"
NUMBERS = {}


def committed():
    state = te.load_state_dict_file(str(PT))
    return A.convert_annotated(state, n_head=4, max_len=16)


class AnnotatedParity(unittest.TestCase):
    def test_committed_file_matches_the_committed_weights(self):
        reference = committed().reference
        NUMBERS["committed file vs make_model(committed .pt)"] = worst = te.check(str(MODEL), reference, n_batches=4,
                                                                                   verbose=True)
        self.assertLessEqual(worst, 1.0)

    def test_committed_greedy_outputs_are_greedy_decode_now(self):
        model = committed().reference
        rows = [line.rstrip("\n").split("\t") for line in GREEDY.read_text().splitlines() if not line.startswith("#")]
        self.assertEqual(len(rows), 200)
        vocab = ["<pad>"] + [str(i) for i in range(1, 11)]
        same = 0
        with torch.no_grad():
            for src_text, want in rows:
                src = torch.tensor([[vocab.index(t) for t in src_text.split()]])
                out = A.greedy_decode(model, src, torch.ones(1, 1, src.shape[1], dtype=torch.bool), src.shape[1], 1)
                same += " ".join(vocab[i] for i in out[0, 1:].tolist()) == want
        self.assertEqual(same, 200)

    def test_command_line_from_annotated(self):
        with tempfile.TemporaryDirectory() as tmp:
            out_path = str(Path(tmp) / "m.safetensors")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = te.main(["--from", "annotated", str(PT), "--n-head", "4", "--max-len", "16", "--out", out_path])
            text = out.getvalue()
            self.assertEqual(rc, 0, text)
            self.assertIn("tinyformer matches the annotated module holding", text)
            self.assertIn('pos_encoding "sinusoidal"', text)
            ours, _ = st.read(out_path)
            theirs, _ = st.read(str(MODEL))
            self.assertEqual(sorted(ours), sorted(theirs))
            for name in ours:
                self.assertTrue((ours[name] == theirs[name]).all(), name)
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = te.main(["--from", "annotated", str(PT), "--out", out_path])
            self.assertEqual(rc, 1)
            self.assertIn("--n-head", err.getvalue())

    def test_each_difference_is_caught(self):
        converted = committed()
        with tempfile.TemporaryDirectory() as tmp:
            for what, change in [("norm: layer_norm (nn.LayerNorm) instead of layer_norm_std", {"norm": "layer_norm"}),
                                 ("embed_scale: false", {"embed_scale": False}),
                                 ("layer_norm_eps 1e-5 instead of 1e-6", {"layer_norm_eps": 1e-5})]:
                path = str(Path(tmp) / "wrong.safetensors")
                write_converted(path, Converted(dict(converted.config, **change), converted.tensors,
                                                converted.metadata))
                try:
                    worst = te.check(path, converted.reference)
                except te.CheckFailed as e:
                    worst = e.worst
                NUMBERS[f"file with {what}"] = worst
                if what.startswith("layer_norm_eps"):
                    continue          # a small effect: recorded, not required to fail
                self.assertGreater(worst, 1.0, what)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    for case, worst in NUMBERS.items():
        print(f"  {case:60s} worst |a-b|/tol {worst:.4g}")
    sys.exit(0 if result.wasSuccessful() else 1)
