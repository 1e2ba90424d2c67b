#!/usr/bin/python3
"""The committed Annotated Transformer copy model (data/families/annotated-copy.*) against
the committed PyTorch weights, through the project's own families/annotated.py module
(run by `make parity`; needs PyTorch and build/tinyformer).

- check(committed .safetensors, make_model holding the committed .pt): logits (as
  log-probabilities: the Generator returns log_softmax) and every per-head weight, on
  padded random batches through the Annotated masks; worst error printed.
- the committed greedy outputs are what greedy_decode makes with the committed .pt now,
  at every step today's log-probabilities decide (greedy_margin.py: the committed run
  was PyTorch on another CPU), with enough steps decided.
- --from annotated on the command line writes the same tensors and passes its check.
- each Annotated difference matters: the file rewritten with nn.LayerNorm's norm, or
  without the embedding scale, fails check against the module (the error is printed:
  docs/FAMILIES.md, "The Annotated Transformer" quotes these numbers).

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

sys.path.insert(0, str(REPO / "tests" / "python"))
import greedy_margin as gm  # noqa: E402

DATA = REPO / "data" / "families"
PT, MODEL, GREEDY = DATA / "annotated-copy.pt", DATA / "annotated-copy.safetensors", DATA / "annotated-copy.greedy.tsv"
NUMBERS = {}
DECIDED = {}
# The share of greedy steps today's log-probabilities must decide (measured: every
# step of the 200 rows; a near tie would leave the rest of its row undecided).
ENOUGH_DECIDED = 0.9


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
        tally = gm.Tally()
        with torch.no_grad():
            for src_text, want in rows:
                src = torch.tensor([[vocab.index(t) for t in src_text.split()]])
                # The generator's log-probabilities at each step (its forward, as greedy_decode calls it).
                with gm.recording_last_rows(model.generator) as steps:
                    out = A.greedy_decode(model, src, torch.ones(1, 1, src.shape[1], dtype=torch.bool), src.shape[1], 1)
                decided = gm.decided_steps(steps)
                tally.add(decided, len(steps))
                gm.check_tokens(self, [vocab[i] for i in out[0, 1:].tolist()], want.split(" "), decided, len(steps),
                                src_text)
        DECIDED["greedy against the committed"] = str(tally)
        self.assertGreaterEqual(tally.fraction(), ENOUGH_DECIDED, f"only {tally}")

    def test_command_line_from_annotated(self):
        with tempfile.TemporaryDirectory() as tmp:
            out_path = str(Path(tmp) / "m.safetensors")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = te.main(["--from", "annotated", str(PT), "--n-head", "4", "--max-len", "16", "--out", out_path])
            text = out.getvalue()
            self.assertEqual(rc, 0, text)
            self.assertIn("not verified: n_head=4 (your flag): pass --module model.py to check them\nOK ", text)
            self.assertIn("matches the reference built from your flags (this project's annotated module holding", text)
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


class AnnotatedConverter(unittest.TestCase):
    """convert_annotated's own rules (no engine needed)."""

    def small(self):
        torch.manual_seed(0)
        return A.make_model(7, 9, N=1, d_model=8, d_ff=16, h=2, dropout=0.0).eval()

    def test_names_are_renamed_not_changed(self):
        model = self.small()
        converted = A.from_module(model, max_len=12)
        state = model.state_dict()
        self.assertIs(converted.reference, model)
        self.assertEqual(converted.config["nhead"], 2)
        self.assertEqual(converted.config["pos_encoding"], "sinusoidal")
        pairs = {"transformer.encoder.layers.0.self_attn.q_proj.weight": "encoder.layers.0.self_attn.linears.0.weight",
                 "transformer.decoder.layers.0.multihead_attn.out_proj.bias": "decoder.layers.0.src_attn.linears.3.bias",
                 "transformer.decoder.layers.0.norm3.weight": "decoder.layers.0.sublayer.2.norm.a_2",
                 "transformer.encoder.norm.bias": "encoder.norm.b_2", "generator.weight": "generator.proj.weight",
                 "tgt_embed.weight": "tgt_embed.0.lut.weight",
                 "transformer.encoder.layers.0.linear2.weight": "encoder.layers.0.feed_forward.w_2.weight"}
        for ours, theirs in pairs.items():
            self.assertTrue(torch.equal(converted.tensors[ours], state[theirs]), ours)
        self.assertEqual(len(converted.tensors), len([k for k in state if not k.endswith(".pe")]))

    def test_the_full_buffer_is_stored_as_learned_positions(self):
        converted = A.from_module(self.small())
        self.assertEqual(converted.config["pos_encoding"], "learned")
        self.assertEqual(converted.config["max_len"], 5000)
        self.assertEqual(list(converted.tensors["pos_embed.weight"].shape), [5000, 8])
        self.assertIn("differs from FORMAT's sinusoidal table by up to", converted.notes[0])

    def test_refusals_name_what_is_wrong(self):
        state = self.small().state_dict()
        cases = [({}, {"n_head": None}, "needs n_head"),
                 ({}, {"n_head": 3}, "n_head = 3"),
                 ({"extra.weight": torch.zeros(2)}, {"n_head": 2}, "extra.weight"),
                 ({"tgt_embed.1.pe": state["tgt_embed.1.pe"] + 1}, {"n_head": 2}, "differ"),
                 ({}, {"n_head": 2, "max_len": 6000}, "max_len = 6000")]
        for change, kwargs, piece in cases:
            with self.subTest(piece=piece), self.assertRaises(ValueError) as caught:
                A.convert_annotated(dict(state, **change), **kwargs)
            self.assertIn(piece, str(caught.exception))
        broken = {k: v for k, v in state.items() if k != "decoder.layers.0.src_attn.linears.2.bias"}
        with self.assertRaises(ValueError) as caught:
            A.convert_annotated(broken, n_head=2)
        self.assertIn("decoder.layers.0.src_attn.linears.2.bias", str(caught.exception))

    def test_write_converted_refuses_what_the_engine_would(self):
        converted = A.from_module(self.small(), max_len=12)
        with tempfile.TemporaryDirectory() as tmp:
            path = str(Path(tmp) / "m.safetensors")
            for metadata, piece in [({"vocab": list("abcdefghi"), "nonsense": 1}, "unknown keys"),
                                    ({"vocab": list("abc")}, "len(vocab) = 3"),
                                    ({"vocab": list("abcdefghi"), "src_vocab": list("abcdefg"), "merges": ["a b"]},
                                     "only the \"gpt2_bpe\" tokenizer has merges"),
                                    ({"vocab": list("abcdefghi")}, "serves the source too")]:
                with self.subTest(piece=piece), self.assertRaises(ValueError) as caught:
                    write_converted(path, Converted(converted.config, converted.tensors, metadata))
                self.assertIn(piece, str(caught.exception))
            with self.assertRaises(ValueError) as caught:
                write_converted(path, Converted(dict(converted.config, mask_value=1.0), converted.tensors, {}))
            self.assertIn("mask_value", str(caught.exception))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    for case, worst in NUMBERS.items():
        print(f"  {case:60s} worst |a-b|/tol {worst:.4g}")
    for case, tally in DECIDED.items():
        print(f"  {case}: {tally}")
    sys.exit(0 if result.wasSuccessful() else 1)
