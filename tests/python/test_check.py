#!/usr/bin/python3
"""check(path, reference): the file against the user's own model (run by `make parity`;
needs PyTorch and build/tinyformer).

The three false passes of issue #22 must now fail, each against the model the
user really has (written here, not rebuilt from the file):

(a) a seq2seq model whose forward scales embeddings by sqrt(d), exported with
    embed_scale=False: check(path) (stock modules rebuilt from the file's settings)
    is consistent, check(path, model) raises CheckFailed; the right export passes.
(b) a stock nn.TransformerEncoder model whose final LayerNorm is its own
    attribute (model.ln_f): export(model, path) refuses it by name,
    export(..., final_norm=model.ln_f) includes it and passes check(path, model),
    and a file written without it fails check(path, model).
(c) a decoder-only stack with tanh GELU exported through --from-state-dict as
    exact GELU: the command line says "consistent ... does not show it matches",
    never "matches"; check(path, model) raises CheckFailed; --check M --against
    fails too.

Also: a callable reference, CheckFailed is a CheckError, the first differing
output is named.

    /usr/bin/python3 tests/python/test_check.py -v
"""

import contextlib
import io
import math
import sys
import tempfile
import unittest
from pathlib import Path

import torch
from torch import nn

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import tinyformer_export as te  # noqa: E402

D, H, FF, V = 16, 4, 32, 13
WORST = {}


def randomize_(module, seed):
    """LayerNorm weights away from 1/0 and non-zero biases, so a left-out norm shows."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name or "ln_" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.3 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))


def sinusoidal(t, d):
    pos = torch.arange(t, dtype=torch.float64)[:, None]
    angle = pos / torch.pow(10000.0, torch.arange(0, d, 2, dtype=torch.float64) / d)
    table = torch.zeros(t, d, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return table.float()


class Seq2Seq(nn.Module):
    """A user's translation model: stock nn.Transformer, embeddings scaled by sqrt(d) in forward."""

    def __init__(self):
        super().__init__()
        self.src_tok = nn.Embedding(V, D)
        self.tgt_tok = nn.Embedding(V, D)
        self.transformer = nn.Transformer(D, H, 2, 2, FF, dropout=0.0, batch_first=True)
        self.generator = nn.Linear(D, V)

    def forward(self, src, tgt, src_key_padding_mask=None, tgt_key_padding_mask=None):
        scale = math.sqrt(D)
        x = self.src_tok(src) * scale + sinusoidal(src.shape[1], D)
        y = self.tgt_tok(tgt) * scale + sinusoidal(tgt.shape[1], D)
        causal = torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool).triu(1)
        h = self.transformer(x, y, tgt_mask=causal, src_key_padding_mask=src_key_padding_mask,
                             tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=src_key_padding_mask)
        return self.generator(h)


class LMWithFinalNorm(nn.Module):
    """A user's decoder-only model: stock pre-LN stack, its final LayerNorm a separate attribute."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, D)
        layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.ln_f = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, V)

    def forward(self, ids, key_padding_mask=None):
        x = self.embed(ids) * math.sqrt(D) + sinusoidal(ids.shape[1], D)
        t = ids.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        return self.lm_head(self.ln_f(self.encoder(x, mask=causal, src_key_padding_mask=key_padding_mask)))


class TanhGELULM(nn.Module):
    """A nanoGPT-style user model written with stock layers, tanh GELU, learned positions;
    attribute names are FORMAT's, so its state_dict goes through --from-state-dict."""

    def __init__(self, max_len=16):
        super().__init__()
        self.embed = nn.Embedding(V, D)
        self.pos_embed = nn.Embedding(max_len, D)
        layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, norm_first=True,
                                           activation=nn.GELU(approximate="tanh"))
        self.transformer = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(D), enable_nested_tensor=False)
        self.lm_head = nn.Linear(D, V)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.embed(ids) + self.pos_embed(torch.arange(t))
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        return self.lm_head(self.transformer(x, mask=causal))


def build(cls, seed):
    torch.manual_seed(seed)
    model = cls()
    randomize_(model, seed)
    return model.eval()


class CheckAgainstTheUsersModel(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="test-check-")
        self.dir = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return str(self.dir / name)

    def assert_fails(self, path, model, first=None):
        with self.assertRaises(te.CheckFailed) as caught:
            te.check(path, model)
        self.assertIsInstance(caught.exception, te.CheckError)   # the old name still catches it
        self.assertGreater(caught.exception.worst, 1.0)
        if first is not None:
            self.assertTrue(str(caught.exception).startswith(f"{first} diverges first"), str(caught.exception))
        return caught.exception

    def test_a_embed_scale_false_for_a_scaling_model_fails(self):
        model = build(Seq2Seq, 1)
        wrong, right = self.path("wrong.safetensors"), self.path("right.safetensors")
        parts = dict(transformer=model.transformer, src_embed=model.src_tok, tgt_embed=model.tgt_tok,
                     generator=model.generator, max_len=32)
        te.export_encoder_decoder(wrong, embed_scale=False, **parts)
        # The old check compares with stock modules built from the same wrong settings: it passes.
        self.assertLessEqual(te.check(wrong), 1.0)
        failure = self.assert_fails(wrong, model, first="encoder.0.self_attn.weights")
        WORST["(a) embed_scale=False vs the scaling model"] = failure.worst
        te.export_encoder_decoder(right, embed_scale=True, **parts)
        WORST["(a) embed_scale=True vs the scaling model"] = worst = te.check(right, model)
        self.assertLessEqual(worst, 1.0)
        # export(model) finds the parts by type and name (src_/tgt_) and checks out too.
        whole = self.path("whole.safetensors")
        with self.assertRaises(ValueError) as caught:        # stock modules do not say whether forward scales
            te.export(model, whole, max_len=32)
        self.assertIn("pass embed_scale=True if your forward multiplies the token embeddings by sqrt(d_model)",
                      str(caught.exception))
        self.assertFalse(Path(whole).exists())
        te.export(model, whole, max_len=32, embed_scale=True)
        self.assertLessEqual(te.check(whole, model), 1.0)

    def test_b_final_norm_as_a_separate_attribute(self):
        model = build(LMWithFinalNorm, 2)
        with self.assertRaises(ValueError) as caught:
            te.export(model, self.path("refused.safetensors"), max_len=32, embed_scale=True)
        message = str(caught.exception)
        self.assertIn("LMWithFinalNorm.ln_f", message)
        self.assertIn("final_norm=model.ln_f", message)
        right = self.path("right.safetensors")
        config = te.export(model, right, max_len=32, final_norm=model.ln_f, embed_scale=True)
        self.assertTrue(config["final_norm"])
        WORST["(b) final_norm included vs the model"] = worst = te.check(right, model)
        self.assertLessEqual(worst, 1.0)
        # The piecewise API cannot see ln_f: the file it writes without it is caught against the model.
        wrong = self.path("wrong.safetensors")
        te.export_decoder_only(wrong, layers=model.encoder, embed=model.embed, lm_head=model.lm_head, max_len=32)
        self.assertLessEqual(te.check(wrong), 1.0)        # consistent with its own settings...
        failure = self.assert_fails(wrong, model, first="logits")   # ...but not the model
        WORST["(b) final norm left out vs the model"] = failure.worst

    def test_c_tanh_gelu_exported_as_exact_gelu(self):
        model = build(TanhGELULM, 3)
        with torch.no_grad():          # hidden pre-activations of a trained size (|h| ~ 1..3, where the two
            for layer in model.transformer.layers:      # GELUs differ by up to 4.7e-4)
                layer.linear1.weight.mul_(4.0)
                layer.linear2.weight.mul_(2.0)
            model.lm_head.weight.mul_(3.0)
        state = self.path("state.pt")
        torch.save(model.state_dict(), state)
        wrong = self.path("wrong.safetensors")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = te.main(["--from-state-dict", state, "--arch", "decoder_only", "--nhead", str(H), "--activation",
                          "gelu", "--norm-first", "true", "--max-len", "16", "--pos-encoding", "learned",
                          "--no-embed-scale", "--out", wrong])
        text = out.getvalue()
        self.assertEqual(rc, 0, text)
        self.assertIn("consistent with the exported settings (no reference module given: this does not show it "
                      "matches your model)", text)
        self.assertNotIn("tinyformer matches", text)
        failure = self.assert_fails(wrong, model, first="logits")
        WORST["(c) exact GELU file vs the tanh-GELU model"] = failure.worst

    def test_c_nanogpt_module_with_tanh_gelu_exported_as_exact(self):
        """The same with families/gpt.py's GPT (nanoGPT's layout and names): its state_dict converted
        with --gelu exact fails against the module; with tanh it matches."""
        from families import gpt
        torch.manual_seed(5)
        model = gpt.GPT(gpt.GPTConfig(block_size=16, vocab_size=V, n_layer=2, n_head=H, n_embd=D, bias=True,
                                      gelu="tanh", tie=True)).eval()
        with torch.no_grad():
            for block in model.transformer.h:
                block.mlp.c_fc.weight.mul_(40.0)          # trained-size pre-activations (init std is 0.02)
            model.lm_head.weight.mul_(10.0)
        state = self.path("ckpt.pt")
        torch.save(model.state_dict(), state)
        for gelu in ("exact", "tanh"):
            path = self.path(f"{gelu}.safetensors")
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                rc = te.main(["--from", "nanogpt", state, "--gelu", gelu, "--n-head", str(H), "--out", path,
                              "--no-check"])
            self.assertEqual(rc, 0, out.getvalue())
            if gelu == "exact":
                WORST["(c) nanoGPT GPT, exact-GELU file vs tanh module"] = self.assert_fails(path, model).worst
            else:
                WORST["(c) nanoGPT GPT, tanh-GELU file vs tanh module"] = worst = te.check(path, model)
                self.assertLessEqual(worst, 1.0)

    def test_callable_reference(self):
        model = build(LMWithFinalNorm, 4)
        right = self.path("right.safetensors")
        te.export(model, right, max_len=32, final_norm=model.ln_f, embed_scale=True)
        # A plain function: no padding keyword, so unpadded batches; log-probs are detected.
        worst = te.check(right, lambda ids: torch.log_softmax(model(ids), dim=-1))
        self.assertLessEqual(worst, 1.0)
        with torch.no_grad():
            model.lm_head.bias[3] += 0.05
        self.assert_fails(right, lambda ids: model(ids), first="logits")

    def test_nothing_compared_is_never_a_pass(self):
        model = build(LMWithFinalNorm, 4)
        right = self.path("nothing.safetensors")
        te.export(model, right, max_len=32, final_norm=model.ln_f, embed_scale=True)
        with self.assertRaises(ValueError):
            te.check(right, model, n_batches=0)            # 0 batches: no comparison at all
        # a batch of nothing but padding compares nothing: no ratio to count as a pass
        import numpy as np
        ratio, found = te._compare("logits", np.zeros((1, 2, 3), np.float32), np.ones((1, 2, 3), np.float32),
                                   np.ones((1, 2), bool), 0)
        self.assertIsNone(found)

    def test_cli_check_against_without_family_is_a_usage_error(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as caught:
            te.main(["--check", self.path("m.safetensors"), "--against", "nosuch", self.path("x.pt")])
        self.assertEqual(caught.exception.code, 2)
        self.assertIn("nosuch", err.getvalue())


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    for case, worst in WORST.items():
        print(f"  {case:48s} worst |a-b|/tol {worst:.4g}")
    sys.exit(0 if result.wasSuccessful() else 1)
