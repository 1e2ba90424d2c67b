#!/usr/bin/python3
"""Tests of tools/python/tinyformer_export.py (run by `make parity`; needs PyTorch and build/tinyformer).

- Round trips: stock modules of every arch (post-/pre-LN, relu/gelu,
  sinusoidal/learned/none positions, with and without final norms, F32, F16
  and BF16 storage, prefix_lm, batch_first=False, tied weights) are exported
  and `check` compares build/tinyformer with PyTorch on them. The config and
  tensor names written are compared with tables written here from
  docs/FORMAT.md, not with the exporter's own.
- The check can fail: an exporter made wrong on purpose (norm_first flipped,
  activation swapped, one tensor perturbed, norm1/norm2 swapped) must make
  check raise, naming the first attention that diverges.
- Refusals: one test per thing FORMAT cannot represent; each message must name
  the module attribute and its value.
- The command line: --help, --check, --from-state-dict (and its errors).

    /usr/bin/python3 tests/python/test_export.py          # from the repository root
    /usr/bin/python3 tests/python/test_export.py -v -k refuse
"""

import contextlib
import hashlib
import io
import json
import os
import pickle
import stat
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools" / "python"
sys.path.insert(0, str(TOOLS))
import safetensors_io as st  # noqa: E402
import tinyformer_export as te  # noqa: E402
import tinyformer_writer  # noqa: E402
from make_reference import CONFIG_KEYS, format_tensor_shapes  # noqa: E402  (FORMAT's tables)

D, H, FF = 16, 4, 32


def randomize_(*modules, seed=0):
    """Non-trivial LayerNorm weights and biases (PyTorch starts them at 1 and 0,
    which would hide a swapped norm) and biases; same for every parameter kind."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in modules:
            for name, p in m.named_parameters():
                if "norm" in name:
                    p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.2 * torch.randn(p.shape, generator=gen))
                elif name.endswith("bias"):
                    p.copy_(0.1 * torch.randn(p.shape, generator=gen))


def transformer(norm_first=False, activation="relu", batch_first=True, enc=2, dec=2, d=D, h=H, ff=FF, eps=1e-5):
    return nn.Transformer(d_model=d, nhead=h, num_encoder_layers=enc, num_decoder_layers=dec, dim_feedforward=ff,
                          dropout=0.1, activation=activation, layer_norm_eps=eps, batch_first=batch_first,
                          norm_first=norm_first)


def stack(norm_first=False, activation="relu", batch_first=True, n=2, final_norm=True, d=D, h=H, ff=FF, eps=1e-5):
    layer = nn.TransformerEncoderLayer(d, h, ff, dropout=0.1, activation=activation, layer_norm_eps=eps,
                                       batch_first=batch_first, norm_first=norm_first)
    return nn.TransformerEncoder(layer, n, norm=nn.LayerNorm(d, eps=eps) if final_norm else None)


def ed_parts(src_v=11, tgt_v=13, seed=0, **kw):
    torch.manual_seed(seed)
    parts = dict(transformer=transformer(**kw), src_embed=nn.Embedding(src_v, D), tgt_embed=nn.Embedding(tgt_v, D),
                 generator=nn.Linear(D, tgt_v))
    randomize_(*parts.values(), seed=seed)
    return parts


def single_parts(v=17, seed=0, head="lm_head", **kw):
    torch.manual_seed(seed)
    parts = {"layers": stack(**kw), "embed": nn.Embedding(v, D), head: nn.Linear(D, v)}
    randomize_(*parts.values(), seed=seed)
    return parts


class Temp:
    """A temporary folder for the test's files."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="test-export-")
        self.dir = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name="model.safetensors"):
        return str(self.dir / name)


# ----------------------------------------------------------------------------
# Round trips
# ----------------------------------------------------------------------------

WORST = {}   # case -> worst error, printed at the end


class RoundTrip(Temp, unittest.TestCase):
    def export_and_check(self, case, export, expected_config, expected_meta=None, storage="F32", **kwargs):
        path = self.path()
        written = export(path, **kwargs)
        tensors, meta = st.read(path, widen_bf16=False)
        header = st.read_header(path)[0]
        config = json.loads(meta["config"])
        # the config: every key of FORMAT's table for the arch, values as expected
        wanted = set(CONFIG_KEYS[config["arch"]]) - {"pad_id", "bos_id", "eos_id"}
        self.assertLessEqual(wanted, set(config), "config misses FORMAT keys")
        for key, value in expected_config.items():
            self.assertEqual(config[key], value, key)
            self.assertIs(type(config[key]), type(value), key)
        self.assertEqual(written, config)
        # tensor names and shapes: FORMAT's table; dtype as stored
        shapes = format_tensor_shapes(config)
        self.assertEqual(set(header), set(shapes))
        for name, entry in header.items():
            self.assertEqual(entry["shape"], shapes[name], name)
            self.assertEqual(entry["dtype"], storage, name)
        # metadata: strings only
        self.assertTrue(all(isinstance(v, str) for v in meta.values()))
        for key, value in (expected_meta or {}).items():
            self.assertEqual(meta[key], value, key)
        worst = te.check(path, n_batches=3, seed=1)
        self.assertLessEqual(worst, 1.0)
        self.assertGreater(worst, 0.0)   # the comparison really compared numbers
        WORST[case] = worst
        return path, tensors, meta

    def test_encoder_decoder_post_relu_sinusoidal(self):
        p = ed_parts()
        self.export_and_check("ed post-LN relu sinusoidal", te.export_encoder_decoder, dict(
            arch="encoder_decoder", d_model=D, nhead=H, dim_feedforward=FF, num_encoder_layers=2,
            num_decoder_layers=2, activation="relu", norm_first=False, layer_norm_eps=1e-5, src_vocab_size=11,
            tgt_vocab_size=13, max_len=16, pos_encoding="sinusoidal", embed_scale=True, pad_id=0, bos_id=1,
            eos_id=2, format="tinyformer/1"),
            {"tokenizer": "char", "train_max_len": "14"},
            **p, max_len=16, pad_id=0, bos_id=1, eos_id=2, train_max_len=14)

    def test_encoder_decoder_pre_gelu_learned_batch_first_false_vocab(self):
        p = ed_parts(norm_first=True, activation="gelu", batch_first=False, enc=1, dec=3, eps=1e-6)
        pos = nn.Embedding(12, D)
        src_vocab = ["<pad>", "<bos>", "<eos>"] + list("abcdefgh")
        vocab = ["<pad>", "<bos>", "<eos>"] + list("ABCDEFGHIJ")
        _, _, meta = self.export_and_check("ed pre-LN gelu learned batch_first=False", te.export_encoder_decoder, dict(
            norm_first=True, activation="gelu", num_encoder_layers=1, num_decoder_layers=3, layer_norm_eps=1e-6,
            pos_encoding="learned", max_len=12, embed_scale=False),
            {}, **p, pos_encoding="learned", pos_embed=pos, max_len=12, embed_scale=False, vocab=vocab,
            src_vocab=src_vocab)
        self.assertEqual(json.loads(meta["vocab"]), vocab)
        self.assertEqual(json.loads(meta["src_vocab"]), src_vocab)

    def test_encoder_decoder_tied_and_shared_weights_none_positions(self):
        p = ed_parts(src_v=13, tgt_v=13)
        p["src_embed"] = p["tgt_embed"]                       # one embedding for both sides
        p["generator"].weight = p["tgt_embed"].weight         # tied output projection
        path, tensors, _ = self.export_and_check("ed tied weights, no positions", te.export_encoder_decoder,
                                                 dict(pos_encoding="none"), {}, **p, pos_encoding="none", max_len=10)
        self.assertTrue(np.array_equal(tensors["src_embed.weight"], tensors["tgt_embed.weight"]))
        self.assertTrue(np.array_equal(tensors["generator.weight"], tensors["tgt_embed.weight"]))

    def test_encoder_decoder_f16(self):
        p = {k: v.half() for k, v in ed_parts(norm_first=True).items()}
        self.export_and_check("ed F16 (.half())", te.export_encoder_decoder, dict(norm_first=True), {},
                              storage="F16", **p, max_len=16)

    def test_decoder_only_causal_pre_gelu_sinusoidal_final_norm(self):
        p = single_parts(norm_first=True, activation="gelu")
        vocab = ["<pad>", "<bos>", "<eos>", "="] + list("abcdefghijklm")
        self.export_and_check("do causal pre-LN gelu sinusoidal final norm", te.export_decoder_only, dict(
            arch="decoder_only", num_layers=2, final_norm=True, attention="causal", vocab_size=17,
            activation="gelu", norm_first=True),
            {"prompt_suffix": "=", "tokenizer": "char"}, **p, max_len=16, vocab=vocab, prompt_suffix="=",
            pad_id=0, bos_id=1, eos_id=2)

    def test_decoder_only_prefix_lm_post_relu_learned_no_final_norm(self):
        p = single_parts(final_norm=False, n=3)
        self.export_and_check("do prefix_lm post-LN relu learned no final norm", te.export_decoder_only, dict(
            attention="prefix_lm", final_norm=False, num_layers=3, pos_encoding="learned"),
            {}, **p, attention="prefix_lm", pos_encoding="learned", pos_embed=nn.Embedding(12, D), max_len=12)

    def test_decoder_only_causal_none_no_scale_batch_first_false_tied(self):
        p = single_parts(batch_first=False, norm_first=True)
        p["lm_head"].weight = p["embed"].weight
        self.export_and_check("do causal no positions batch_first=False tied lm_head", te.export_decoder_only,
                              dict(pos_encoding="none", embed_scale=False), {}, **p, pos_encoding="none",
                              embed_scale=False, max_len=10)

    def test_decoder_only_bf16(self):
        p = {k: v.to(torch.bfloat16) for k, v in single_parts(activation="gelu").items()}
        self.export_and_check("do BF16", te.export_decoder_only, dict(activation="gelu"), {}, storage="BF16",
                              **p, max_len=16)

    def test_forced_f16_storage_from_f32_modules(self):
        p = single_parts()
        self.export_and_check("do F32 modules stored as F16 (dtype=)", te.export_decoder_only, {}, {},
                              storage="F16", **p, max_len=16, dtype="F16")

    def test_encoder_only_post_gelu_sinusoidal_final_norm(self):
        p = single_parts(head="head", activation="gelu")
        self.export_and_check("eo post-LN gelu sinusoidal final norm", te.export_encoder_only, dict(
            arch="encoder_only", attention="bidirectional", final_norm=True), {}, **p, max_len=16, pad_id=0)

    def test_encoder_only_pre_relu_learned_no_final_norm_whitespace(self):
        p = single_parts(v=6, head="head", norm_first=True, final_norm=False)
        vocab = ["<pad>", "<unk>", "the", "cat", "sat", "mat"]
        self.export_and_check("eo pre-LN relu learned no final norm", te.export_encoder_only, dict(
            final_norm=False, norm_first=True, pos_encoding="learned"), {"tokenizer": "whitespace"},
            **p, pos_encoding="learned", pos_embed=nn.Embedding(9, D), max_len=9, vocab=vocab,
            tokenizer="whitespace")

    def test_check_on_modules_rebuilt_from_the_file(self):
        p = ed_parts(norm_first=True)
        path = self.path()
        te.export_encoder_decoder(path, **p, max_len=16)
        te._REGISTRY.clear()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            worst = te.check(path, verbose=True)
        self.assertLessEqual(worst, 1.0)
        self.assertIn("rebuilt from the file", out.getvalue())

    def test_exporting_leaves_the_modules_alone(self):
        p = ed_parts()
        for m in p.values():
            m.train()
        before = {k: {n: t.clone() for n, t in m.state_dict().items()} for k, m in p.items()}
        path = self.path()
        te.export_encoder_decoder(path, **p, max_len=16)
        te.check(path)
        for k, m in p.items():
            self.assertTrue(m.training, k)
            for n, t in m.state_dict().items():
                self.assertTrue(torch.equal(t, before[k][n]), f"{k}.{n}")


# ----------------------------------------------------------------------------
# The check fails when the exporter is wrong
# ----------------------------------------------------------------------------


class CheckCatchesWrongExports(Temp, unittest.TestCase):
    """An exporter made wrong on purpose (in this test only) writes a file that
    disagrees with the modules; check must fail and name where."""

    def broken_export(self, patch_config=None, patch_tensors=None, parts=None):
        parts = parts or ed_parts(norm_first=False, activation="relu")
        original_base, original_stored = te._base_config, tinyformer_writer._stored_tensors

        def base_config(*args, **kwargs):
            cfg = original_base(*args, **kwargs)
            if patch_config:
                patch_config(cfg)
            return cfg

        def stored_tensors(named, storage):       # the tensors the writer stores (made as it writes them)
            named = {k: v.detach().clone() for k, v in named.items()}
            if patch_tensors:
                patch_tensors(named)
            return original_stored(named, storage)

        te._base_config, tinyformer_writer._stored_tensors = base_config, stored_tensors
        try:
            path = self.path()
            te.export_encoder_decoder(path, **parts, max_len=16)
        finally:
            te._base_config, tinyformer_writer._stored_tensors = original_base, original_stored
        with self.assertRaises(te.CheckError) as caught:
            te.check(path)
        return str(caught.exception)

    def test_flipped_norm_first_fails_at_the_first_encoder_attention(self):
        message = self.broken_export(patch_config=lambda c: c.update(norm_first=not c["norm_first"]))
        self.assertTrue(message.startswith("encoder.0.self_attn.weights diverges first"), message)

    def test_swapped_activation_fails_at_the_second_encoder_layer(self):
        message = self.broken_export(patch_config=lambda c: c.update(activation="gelu"))
        self.assertTrue(message.startswith("encoder.1.self_attn.weights diverges first"), message)

    def test_perturbed_cross_attention_weight_is_named(self):
        def perturb(t):
            t["transformer.decoder.layers.1.multihead_attn.in_proj_weight"][:D] *= 1.01   # W_Q of layer 1 cross
        message = self.broken_export(patch_tensors=perturb)
        self.assertTrue(message.startswith("decoder.1.cross_attn.weights diverges first"), message)

    def test_swapped_norms_are_caught(self):
        def swap(t):
            a, b = "transformer.decoder.layers.0.norm1.weight", "transformer.decoder.layers.0.norm2.weight"
            t[a], t[b] = t[b], t[a]
        message = self.broken_export(patch_tensors=swap)
        self.assertTrue(message.startswith("decoder.0.cross_attn.weights diverges first"), message)

    def test_a_file_changed_after_export_is_compared_with_the_modules(self):
        path = self.path()
        te.export_encoder_decoder(path, **ed_parts(), max_len=16)
        tensors, meta = st.read(path)
        cfg = json.loads(meta["config"])
        cfg["norm_first"] = True                       # the modules are post-LN
        st.write(path, tensors, dict(meta, config=json.dumps(cfg)))
        with self.assertRaises(te.CheckError) as caught:
            te.check(path)
        self.assertTrue(str(caught.exception).startswith("encoder.0.self_attn.weights diverges first"), caught.exception)
        self.assertIn("changed since it was exported", str(caught.exception))

    def test_missing_binary_is_a_clear_error(self):
        path = self.path()
        te.export_decoder_only(path, **single_parts(), max_len=8)
        old = os.environ.get("TINYFORMER_BIN")
        os.environ["TINYFORMER_BIN"] = str(self.dir / "no-such-tinyformer")
        try:
            with self.assertRaises(FileNotFoundError) as caught:
                te.check(path)
        finally:
            if old is None:
                del os.environ["TINYFORMER_BIN"]
            else:
                os.environ["TINYFORMER_BIN"] = old
        self.assertIn("build it with make", str(caught.exception))


# ----------------------------------------------------------------------------
# Refusals
# ----------------------------------------------------------------------------


class RefusedBeforeWriting:
    """refused(export, *pieces, **kwargs): export(path, **kwargs) raises one
    ValueError line holding every piece, and writes nothing."""
    refused_defaults = {}

    def refused(self, export, *pieces, **kwargs):
        for key, value in self.refused_defaults.items():
            kwargs.setdefault(key, value)
        path = self.path()
        with self.assertRaises(ValueError) as caught:
            export(path, **kwargs)
        message = str(caught.exception)
        for piece in pieces:
            self.assertIn(piece, message)
        self.assertNotIn("\n", message)
        self.assertFalse(os.path.exists(path), "nothing may be written when refusing")
        return message


class Refusals(RefusedBeforeWriting, Temp, unittest.TestCase):
    refused_defaults = {"max_len": 16}

    def test_refuse_custom_activation(self):
        p = single_parts()
        p["layers"].layers[0].activation = lambda x: x * torch.sigmoid(x)
        p["layers"].layers[1].activation = p["layers"].layers[0].activation
        self.refused(te.export_decoder_only, "layers.layers.0.activation = <", "lambda", **p)

    def test_refuse_tanh_gelu(self):
        p = ed_parts(activation=nn.GELU(approximate="tanh"))
        self.refused(te.export_encoder_decoder, "transformer.encoder.layers.0.activation", "approximate='tanh'", **p)

    def test_accept_activation_modules_and_functions(self):
        for act, name in [(nn.ReLU(), "relu"), (nn.GELU(), "gelu"), (F.relu, "relu"), (F.gelu, "gelu")]:
            cfg = te.export_decoder_only(self.path(), **single_parts(activation=act), max_len=8)
            self.assertEqual(cfg["activation"], name)

    def test_refuse_transformer_built_with_an_activation_module(self):
        # PyTorch 1.13: nn.Transformer(activation=nn.GELU()) gives decoder layers that compute ReLU
        p = ed_parts(activation=nn.GELU())
        if p["transformer"].decoder.layers[0].activation is not F.relu:     # a PyTorch without the quirk
            self.assertEqual(te.export_encoder_decoder(self.path(), **p, max_len=8)["activation"], "gelu")
            return
        self.refused(te.export_encoder_decoder, "transformer.decoder.layers.0.activation = 'relu'",
                     "transformer.encoder.layers.0.activation = 'gelu'", 'activation="gelu"', **p)

    def test_refuse_linear_without_bias(self):
        p = single_parts()
        p["layers"].layers[1].linear2.bias = None
        self.refused(te.export_decoder_only, "layers.layers.1.linear2.bias = None", **p)

    def test_refuse_head_without_bias(self):
        p = single_parts(head="head")
        p["head"] = nn.Linear(D, 17, bias=False)
        self.refused(te.export_encoder_only, "head.bias = None", **p)

    def test_refuse_attention_without_bias(self):
        p = ed_parts()
        p["transformer"].decoder.layers[0].multihead_attn = nn.MultiheadAttention(D, H, bias=False, batch_first=True)
        self.refused(te.export_encoder_decoder, "transformer.decoder.layers.0.multihead_attn.in_proj_bias = None", **p)

    def test_refuse_add_bias_kv(self):
        p = single_parts()
        p["layers"].layers[0].self_attn = nn.MultiheadAttention(D, H, add_bias_kv=True, batch_first=True)
        self.refused(te.export_decoder_only, "layers.layers.0.self_attn.add_bias_kv = True", **p)

    def test_refuse_add_zero_attn(self):
        p = single_parts()
        p["layers"].layers[1].self_attn = nn.MultiheadAttention(D, H, add_zero_attn=True, batch_first=True)
        self.refused(te.export_decoder_only, "layers.layers.1.self_attn.add_zero_attn = True", **p)

    def test_refuse_kdim_vdim(self):
        p = ed_parts()
        p["transformer"].decoder.layers[1].multihead_attn = nn.MultiheadAttention(D, H, kdim=8, vdim=8,
                                                                                   batch_first=True)
        self.refused(te.export_encoder_decoder, "transformer.decoder.layers.1.multihead_attn.kdim = 8", **p)

    def test_refuse_different_eps_per_layer(self):
        p = single_parts()
        for n in ("norm1", "norm2"):
            getattr(p["layers"].layers[1], n).eps = 1e-6
        self.refused(te.export_decoder_only, "layers.layers.1.norm1.eps = 1e-06", "layers.layers.0.norm1.eps", **p)

    def test_refuse_different_eps_inside_a_layer(self):
        p = ed_parts()
        p["transformer"].decoder.layers[0].norm3.eps = 1e-6
        self.refused(te.export_encoder_decoder, "transformer.decoder.layers.0.norm3.eps = 1e-06", **p)

    def test_refuse_different_activation_per_layer(self):
        p = single_parts()
        p["layers"].layers[1].activation = F.gelu
        self.refused(te.export_decoder_only, "layers.layers.1.activation = 'gelu'", "layers.layers.0.activation",
                     **p)

    def test_refuse_different_norm_first_per_layer(self):
        p = single_parts(head="head")
        p["layers"].layers[1].norm_first = True
        self.refused(te.export_encoder_only, "layers.layers.1.norm_first = True", **p)

    def test_refuse_encoder_and_decoder_that_differ(self):
        p = ed_parts()
        for layer in p["transformer"].decoder.layers:
            layer.norm_first = True
        self.refused(te.export_encoder_decoder, "transformer.decoder.layers.0.norm_first = True",
                     "transformer.encoder.layers.0.norm_first", **p)

    def test_refuse_layer_norm_without_affine_parameters(self):
        p = single_parts()
        p["layers"].norm = nn.LayerNorm(D, elementwise_affine=False)
        self.refused(te.export_decoder_only, "layers.norm.elementwise_affine = False", **p)
        p = ed_parts()
        p["transformer"].encoder.layers[1].norm2.bias = None
        self.refused(te.export_encoder_decoder, "transformer.encoder.layers.1.norm2.bias = None", **p)

    def test_refuse_final_norm_with_another_eps(self):
        p = single_parts()
        p["layers"].norm.eps = 1e-6
        self.refused(te.export_decoder_only, "layers.norm.eps = 1e-06", **p)

    def test_refuse_encoder_decoder_without_encoder_norm(self):
        p = ed_parts()
        p["transformer"].encoder.norm = None
        self.refused(te.export_encoder_decoder, "transformer.encoder.norm = None", **p)

    def test_refuse_encoder_decoder_without_decoder_norm(self):
        p = ed_parts()
        p["transformer"].decoder.norm = None
        self.refused(te.export_encoder_decoder, "transformer.decoder.norm = None", **p)

    def test_refuse_vocab_of_the_wrong_length(self):
        self.refused(te.export_decoder_only, "len(vocab) = 3", "embed.num_embeddings = 17", **single_parts(),
                     vocab=["<pad>", "a", "b"])

    def test_refuse_src_vocab_of_the_wrong_length(self):
        vocab = ["<pad>", "<bos>", "<eos>"] + list("abcdefghij")
        self.refused(te.export_encoder_decoder, "len(src_vocab) = 13", "src_embed.num_embeddings = 11",
                     **ed_parts(), vocab=vocab, src_vocab=vocab)

    def test_refuse_one_vocab_for_different_source_size(self):
        vocab = ["<pad>", "<bos>", "<eos>"] + list("abcdefghij")
        self.refused(te.export_encoder_decoder, "len(vocab) = 13", "src_embed.num_embeddings = 11", **ed_parts(),
                     vocab=vocab)

    def test_refuse_multi_character_token_for_char_tokenizer(self):
        vocab = ["<pad>", "the", "c"] + [chr(ord("d") + i) for i in range(14)]
        self.refused(te.export_decoder_only, "vocab[1] = 'the'", **single_parts(), vocab=vocab)

    def test_refuse_unknown_tokenizer(self):
        self.refused(te.export_decoder_only, "tokenizer = 'bpe'", **single_parts(), tokenizer="bpe")

    def test_refuse_learned_positions_of_another_length(self):
        self.refused(te.export_decoder_only, "pos_embed.num_embeddings = 10", "max_len = 16", **single_parts(),
                     pos_encoding="learned", pos_embed=nn.Embedding(10, D))

    def test_refuse_learned_without_pos_embed(self):
        self.refused(te.export_decoder_only, "pos_embed = None", **single_parts(), pos_encoding="learned")

    def test_refuse_pos_embed_with_sinusoidal(self):
        self.refused(te.export_encoder_decoder, "pos_embed = Embedding(16, 16)", "sinusoidal", **ed_parts(),
                     pos_embed=nn.Embedding(16, D))

    def test_refuse_ids_outside_the_vocabulary(self):
        self.refused(te.export_decoder_only, "eos_id = 17", "0..16", **single_parts(), eos_id=17)
        self.refused(te.export_encoder_decoder, "pad_id = 12", "source vocabulary 0..10", **ed_parts(), pad_id=12)
        self.refused(te.export_encoder_decoder, "bos_id = -1", **ed_parts(), bos_id=-1)

    def test_refuse_d_model_mismatches(self):
        p = ed_parts()
        p["src_embed"] = nn.Embedding(11, 8)
        self.refused(te.export_encoder_decoder, "src_embed.embedding_dim = 8", "d_model = 16", **p)
        p = single_parts()
        p["lm_head"] = nn.Linear(8, 17)
        self.refused(te.export_decoder_only, "lm_head.in_features = 8", **p)
        self.refused(te.export_decoder_only, "pos_embed.embedding_dim = 8", **single_parts(),
                     pos_encoding="learned", pos_embed=nn.Embedding(16, 8))

    def test_refuse_head_of_another_vocabulary_size(self):
        p = ed_parts()
        p["generator"] = nn.Linear(D, 7)
        self.refused(te.export_encoder_decoder, "generator.out_features = 7", "tgt_embed.num_embeddings = 13", **p)

    def test_refuse_mixed_dtypes(self):
        p = single_parts()
        p["lm_head"] = p["lm_head"].half()
        self.refused(te.export_decoder_only, "lm_head.weight.dtype = torch.float16", "dtype=", **p)

    def test_refuse_non_stock_layer(self):
        class MyLayer(nn.TransformerEncoderLayer):
            def forward(self, src, src_mask=None, src_key_padding_mask=None):
                return src
        p = single_parts()
        p["layers"].layers[0] = MyLayer(D, H, FF, batch_first=True)
        self.refused(te.export_decoder_only, "layers.layers.0 = MyLayer", **p)

    def test_refuse_bad_decoder_attention(self):
        self.refused(te.export_decoder_only, "attention = 'bidirectional'", **single_parts(),
                     attention="bidirectional")


class EngineRulesBeforeWriting(RefusedBeforeWriting, Temp, unittest.TestCase):
    """The exporter refuses, before writing, what tinyformer's loader would refuse:
    the vocabulary rules (one function, te.check_vocabulary, the twin of
    models/tokenizers/tokenizer.h's), the prompt suffix rule and the config's size limits."""

    def meta_parts(self, v):
        """A decoder-only model on the meta device (no memory for its weights): the
        limits are checked from the modules' sizes, before any value is read."""
        layer = nn.TransformerEncoderLayer(2, 1, 2, dropout=0.0, batch_first=True, device="meta")
        return {"layers": nn.TransformerEncoder(layer, 1), "embed": nn.Embedding(v, 2, device="meta"),
                "lm_head": nn.Linear(2, v, device="meta")}

    def test_max_len_above_the_engine_limit(self):
        self.refused(te.export_decoder_only, "max_len = 33554432", "limit of 2^24 = 16777216", **single_parts(),
                     pos_encoding="none", max_len=1 << 25)

    def test_a_vocabulary_of_2_24_plus_1_entries(self):
        self.refused(te.export_decoder_only, "embed.num_embeddings = 16777217", "limit of 2^24 = 16777216",
                     **self.meta_parts((1 << 24) + 1), pos_encoding="none", max_len=8)

    def test_train_max_len_above_the_engine_limit(self):
        self.refused(te.export_decoder_only, "train_max_len = 16777217", **single_parts(), max_len=8,
                     train_max_len=(1 << 24) + 1)

    def test_a_lone_surrogate_token(self):
        vocab = ["<pad>", "\ud800"] + list("abcdefghijklmno")
        self.refused(te.export_decoder_only, "vocab[1] = '\\ud800'", "lone surrogate U+D800", **single_parts(),
                     max_len=8, vocab=vocab)

    def test_prompt_suffix_that_is_a_special_token(self):
        vocab = ["<pad>", "<bos>", "<eos>", "<sep>"] + list("abcdefghijklm")
        self.refused(te.export_decoder_only, "prompt_suffix = '<sep>'", "special token", **single_parts(),
                     max_len=8, vocab=vocab, tokenizer="whitespace", prompt_suffix="<sep>")
        self.refused(te.export_decoder_only, "prompt_suffix = '='", "needs a vocab", **single_parts(), max_len=8,
                     prompt_suffix="=")

    def test_typeable_words_starting_with_a_bracket(self):
        path = self.path()
        vocab = ["<pad>", "<bos>", "<eos>", "<3", "<=", "=>"] + list("abcdefghijk")
        te.export_decoder_only(path, **single_parts(), max_len=8, vocab=vocab, tokenizer="whitespace",
                               prompt_suffix="<=")
        self.assertEqual(st.read_header(path)[1]["prompt_suffix"], "<=")

    def test_the_exporter_and_the_engine_refuse_the_same_vocabularies(self):
        """For each vocabulary: te.check_vocabulary accepts it iff `tinyformer info`
        accepts a file holding it (written around the exporter, by safetensors_io)."""
        base = self.path("base.safetensors")
        te.export_decoder_only(base, **single_parts(), max_len=8)     # vocab_size 17, no vocabulary
        tensors, meta = st.read(base)
        letters = list("abcdefghijklmn")
        cases = [
            ("char", ["<pad>", "<eos>", "<unk>"] + letters, True),
            ("char", ["<pad>", "<eos>", "<"] + letters, True),
            ("char", ["<pad>", "\u00a0", "\U0001F600"] + letters, True),
            ("whitespace", ["<pad>", "<3", "<="] + letters, True),
            ("whitespace", ["<pad>", "a\u2003b", "caf\u00e9"] + letters, True),  # U+2003 is not what it splits on
            ("char", ["<pad>", "a", "<eos>"] + letters, False),          # "a" twice
            ("char", ["<pad>", "", "<eos>"] + letters, False),
            ("char", ["<pad>", "ab", "<eos>"] + letters, False),
            ("char", ["<pad>", "<Eos>", "<x>"] + letters, False),        # not special: 5 characters
            ("char", ["<pad>", "e\u0301", "<x>"] + letters, False),     # two code points
            ("whitespace", ["<pad>", "a b", "<x>"] + letters, False),
            ("whitespace", ["<pad>", "\x1b[2J", "<x>"] + letters, False),
            ("char", ["<pad>", "\x85", "<x>"] + letters, False),        # C1
            ("char", ["<pad>", "\x7f", "<x>"] + letters, False),        # DEL
            ("char", ["<pad>", "\n", "\t"] + letters, True),            # a text's newline and tab: tokens
            ("char", ["<pad>", "\r", "<x>"] + letters, False),          # no other C0 control
            ("char", ["<pad>", "a\n", "<x>"] + letters, False),         # nor inside a longer token
            ("whitespace", ["<pad>", "\n", "<x>"] + letters, False),    # only a char vocabulary's
            ("char", ["<pad>", "\udc00", "<x>"] + letters, False),      # lone surrogate
        ]
        for tokenizer, vocab, valid in cases:
            with self.subTest(tokenizer=tokenizer, vocab=vocab[:3]):
                self.assertEqual(len(vocab), 17)
                try:
                    te.check_vocabulary("vocab", vocab, tokenizer)
                    exporter_accepts = True
                except ValueError:
                    exporter_accepts = False
                path = self.path("case.safetensors")
                st.write(path, tensors, dict(meta, vocab=json.dumps(vocab, ensure_ascii=False), tokenizer=tokenizer))
                run = subprocess.run([te.tinyformer_binary(), "info", path], capture_output=True, text=True,
                                     errors="replace")
                self.assertEqual(exporter_accepts, valid)
                self.assertEqual(run.returncode, 0 if valid else 1, run.stderr)
                if not valid:     # the lone surrogate, escaped in the header's JSON, is refused with the header
                    self.assertRegex(run.stderr, r'__metadata__ "vocab" entry [13] |the header is not valid JSON')


# ----------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------


def run_cli(*args):
    return subprocess.run([sys.executable, str(TOOLS / "tinyformer_export.py"), *args], capture_output=True,
                          text=True, cwd=REPO)


class CommandLine(Temp, unittest.TestCase):
    def test_help(self):
        run = run_cli("--help")
        self.assertEqual(run.returncode, 0)
        for flag in ["--check", "--from-state-dict", "--arch", "--out", "--no-check", "--d-model", "--nhead",
                     "--num-encoder-layers", "--num-decoder-layers", "--num-layers", "--dim-feedforward",
                     "--activation", "--norm-first", "--layer-norm-eps", "--pos-encoding", "--max-len",
                     "--no-embed-scale", "--attention", "--vocab", "--pad-id", "--bos-id", "--eos-id",
                     "--tokenizer", "--prompt-suffix", "--train-max-len", "--src-vocab", "--dtype"]:
            self.assertIn(flag, run.stdout)

    def test_check_command(self):
        path = self.path()
        te.export_decoder_only(path, **single_parts(), attention="causal", max_len=12)
        run = run_cli("--check", path)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("rebuilt from the file", run.stdout)
        self.assertIn(f"OK {path}", run.stdout)

    def test_check_command_fails_when_tinyformer_refuses_the_file(self):
        path = self.path()
        te.export_decoder_only(path, **single_parts(), max_len=12)
        tensors, meta = st.read(path)
        tensors["lm_head.bias"][3] = np.nan
        st.write(path, tensors, meta)
        run = run_cli("--check", path)
        self.assertEqual(run.returncode, 1)
        self.assertIn(f"FAIL {path}", run.stdout)
        self.assertIn("lm_head.bias", run.stdout)

    def test_from_state_dict_round_trip(self):
        from torch_modules import build_module
        cfg = {"format": "tinyformer/1", "arch": "decoder_only", "d_model": D, "nhead": H, "dim_feedforward": FF,
               "num_layers": 2, "activation": "gelu", "norm_first": True, "layer_norm_eps": 1e-5,
               "final_norm": False, "vocab_size": 9, "max_len": 12, "pos_encoding": "learned",
               "embed_scale": False, "attention": "prefix_lm"}
        torch.manual_seed(3)
        module = build_module(cfg)
        randomize_(module)
        state = str(self.dir / "state.pt")
        torch.save(module.state_dict(), state)
        vocab = str(self.dir / "vocab.json")
        Path(vocab).write_text(json.dumps(["<pad>", "<bos>", "<eos>", "a", "b", "c", "d", "e", "="]))
        out = self.path()
        run = run_cli("--from-state-dict", state, "--arch", "decoder_only", "--nhead", str(H), "--activation",
                      "gelu", "--norm-first", "true", "--pos-encoding", "learned", "--max-len", "12",
                      "--no-embed-scale", "--attention", "prefix_lm", "--vocab", vocab, "--pad-id", "0",
                      "--bos-id", "1", "--eos-id", "2", "--prompt-suffix", "=", "--train-max-len", "8",
                      "--out", out)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("OK", run.stdout)
        tensors, meta = st.read(out)
        written = json.loads(meta["config"])
        self.assertEqual(written, dict(cfg, pad_id=0, bos_id=1, eos_id=2))
        self.assertEqual(meta["prompt_suffix"], "=")
        self.assertEqual(meta["train_max_len"], "8")
        for name, value in module.state_dict().items():
            self.assertTrue(np.array_equal(tensors[name], value.numpy()), name)

    def test_from_state_dict_errors(self):
        module = te.tm.build_module({"arch": "encoder_only", "d_model": D, "nhead": H, "dim_feedforward": FF,
                                     "num_layers": 1, "activation": "relu", "norm_first": False,
                                     "layer_norm_eps": 1e-5, "final_norm": True, "vocab_size": 5, "max_len": 8,
                                     "pos_encoding": "none", "embed_scale": True, "attention": "bidirectional"})
        state = module.state_dict()
        state["extra.weight"] = torch.zeros(2)
        path = str(self.dir / "state.pt")
        torch.save(state, path)
        base = ["--from-state-dict", path, "--arch", "encoder_only", "--nhead", str(H), "--activation", "relu",
                "--norm-first", "false", "--max-len", "8", "--pos-encoding", "none", "--out", self.path()]
        run = run_cli(*base)
        self.assertEqual(run.returncode, 1)
        self.assertIn("extra.weight", run.stderr)
        self.assertIn("Unexpected key", run.stderr)
        del state["extra.weight"]
        del state["transformer.layers.0.linear2.bias"]
        torch.save(state, path)
        run = run_cli(*base)
        self.assertEqual(run.returncode, 1)
        self.assertIn("transformer.layers.0.linear2.bias", run.stderr)
        run = run_cli("--from-state-dict", path, "--arch", "encoder_only", "--out", self.path())
        self.assertEqual(run.returncode, 2)
        self.assertIn("--nhead", run.stderr)
        self.assertIn("--norm-first", run.stderr)


# ----------------------------------------------------------------------------
# Safety (issue #20): loading never runs code, bad flags are one line, --out
# never replaces an input, shared layers, importable from anywhere
# ----------------------------------------------------------------------------


def folder_state(folder):
    """{name: sha256} of the files in a folder (symlinks: their target; folders: their listing)."""
    def state(path):
        if path.is_symlink():
            return ("link", os.readlink(path))
        if path.is_dir():
            return ("folder", sorted(os.listdir(path)))
        return hashlib.sha256(path.read_bytes()).hexdigest()
    return {name: state(folder / name) for name in sorted(os.listdir(folder))}


class Evil:
    """Unpickling this makes the folder MARKER: code that ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


ENCODER_ONLY = {"format": "tinyformer/1", "arch": "encoder_only", "d_model": D, "nhead": H, "dim_feedforward": FF,
                "num_layers": 1, "activation": "relu", "norm_first": False, "layer_norm_eps": 1e-5,
                "final_norm": True, "vocab_size": 5, "max_len": 8, "pos_encoding": "none", "embed_scale": True,
                "attention": "bidirectional"}
FLAGS = ["--arch", "encoder_only", "--nhead", str(H), "--activation", "relu", "--norm-first", "false",
         "--max-len", "8", "--pos-encoding", "none"]


class Safety(Temp, unittest.TestCase):
    def state_dict_file(self, name="state.pt", prefix=""):
        torch.manual_seed(5)
        module = te.tm.build_module(ENCODER_ONLY)
        randomize_(module)
        path = str(self.dir / name)
        torch.save({prefix + k: v for k, v in module.state_dict().items()}, path)
        return path, module

    def refused(self, args, status, *expected, subprocess_run=False):
        """The exporter refuses: exit `status`, one line on stderr holding `expected`,
        nothing on stdout, the folder as it was. Run in the test's folder: by
        main() in this process (an exception would fail the test), or as its own
        process (subprocess_run=True)."""
        before = folder_state(self.dir)
        if subprocess_run:
            run = subprocess.run([sys.executable, str(TOOLS / "tinyformer_export.py"), *args], capture_output=True,
                                 text=True, cwd=self.dir)
            status_got, out, err = run.returncode, run.stdout, run.stderr
        else:
            out, err, cwd = io.StringIO(), io.StringIO(), os.getcwd()
            os.chdir(self.dir)
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    try:
                        status_got = te.main(args)
                    except SystemExit as e:
                        status_got = e.code
            finally:
                os.chdir(cwd)
            out, err = out.getvalue(), err.getvalue()
        self.assertEqual(status_got, status, out + err)
        self.assertEqual(out, "")
        self.assertTrue(err.endswith("\n") and err.count("\n") == 1, repr(err))
        self.assertTrue(err.startswith("tinyformer_export: error: "), err)
        for text in expected:
            self.assertIn(text, err)
        self.assertEqual(folder_state(self.dir), before)
        return err

    def test_pickle_code_never_runs(self):
        marker = str(self.dir / "MARKER")
        tensor = torch.zeros(2)
        cases = {"torch.save with an object": lambda p: torch.save({"w": tensor, "x": Evil(marker)}, p),
                 "torch.save of the object alone": lambda p: torch.save(Evil(marker), p),
                 "a plain pickle": lambda p: Path(p).write_bytes(pickle.dumps({"x": Evil(marker)}, protocol=2))}
        for case, save in cases.items():
            with self.subTest(case=case):
                path = str(self.dir / "evil.pt")
                save(path)
                self.assertFalse(os.path.exists(marker))
                self.refused(["--from-state-dict", "evil.pt", *FLAGS, "--out", "out.safetensors"], 1,
                             "--from-state-dict evil.pt: refused", "could run code",
                             "torch.save(model.state_dict(), PATH)", "Python API", subprocess_run=True)
                self.assertFalse(os.path.exists(marker), f"{case}: the pickle ran code")
                with self.assertRaises(ValueError):
                    te.load_state_dict_file(path)
                self.assertFalse(os.path.exists(marker), f"{case}: the pickle ran code (Python API)")
                os.remove(path)

    def test_a_pickled_module_is_refused_with_what_to_do(self):
        torch.save(te.tm.build_module(ENCODER_ONLY), str(self.dir / "module.pt"))
        self.refused(["--from-state-dict", "module.pt", *FLAGS, "--out", "out.safetensors"], 1,
                     "SingleStackRef", "torch.save(model.state_dict(), PATH)")

    def test_a_checkpoint_dict_is_refused_naming_the_entry(self):
        state, _ = self.state_dict_file()
        torch.save({"model": torch.load(state, weights_only=True), "step": torch.tensor(3)}, state)
        self.refused(["--from-state-dict", "state.pt", *FLAGS, "--out", "out.safetensors"], 1,
                     "entry 'model'", "not a tensor")

    def test_nhead_zero_is_a_usage_error_naming_the_flag(self):
        self.state_dict_file()
        for value in ("0", "-4", "four"):
            with self.subTest(value=value):
                flags = [f if f != str(H) else value for f in FLAGS]
                self.refused(["--from-state-dict", "state.pt", *flags, "--out", "out.safetensors"], 2,
                             "--nhead", repr(value))

    def test_other_bad_numbers_name_their_flag(self):
        self.state_dict_file()
        base = ["--from-state-dict", "state.pt", *FLAGS, "--out", "out.safetensors"]
        self.refused(base + ["--layer-norm-eps", "-1"], 2, "--layer-norm-eps")
        self.refused(base + ["--pad-id", "-1"], 2, "--pad-id")
        self.refused(base + ["--pad-id", "5"], 1, "--pad-id: pad_id = 5", "0..4")
        self.refused(base + ["--nhead", "3"], 1, "--nhead 3 does not divide d_model 16")
        self.refused(["--check", "m.safetensors", "--batches", "0"], 2, "--batches")

    def test_out_in_a_missing_folder(self):
        self.state_dict_file()
        self.refused(["--from-state-dict", "state.pt", *FLAGS, "--out", "no/such/out.safetensors"], 1,
                     "--out no/such/out.safetensors", "the folder no/such does not exist")

    def test_out_equal_to_an_input_is_refused_before_any_work(self):
        self.state_dict_file()
        os.symlink("state.pt", self.dir / "link.pt")
        os.link(self.dir / "state.pt", self.dir / "hard.pt")
        for out in ["state.pt", "./state.pt", str(self.dir / "state.pt"), "link.pt", "hard.pt"]:
            with self.subTest(out=out):
                self.refused(["--from-state-dict", "state.pt", *FLAGS, "--out", out], 1,
                             f"--out {out}: is the same file as the input --from-state-dict state.pt")
        Path(self.dir / "vocab.json").write_text(json.dumps(["<pad>", "a", "b", "c", "d"]))
        self.refused(["--from-state-dict", "state.pt", *FLAGS, "--vocab", "vocab.json", "--out", "./vocab.json"], 1,
                     "--out ./vocab.json: is the same file as the input --vocab vocab.json")
        os.mkdir(self.dir / "out-dir")
        self.refused(["--from-state-dict", "state.pt", *FLAGS, "--out", "out-dir"], 1, "--out out-dir: is a directory")

    def test_out_on_stdout_gets_only_the_file(self):
        _, module = self.state_dict_file()
        out = self.dir / "stdout.safetensors"            # the child's stdout, never the real /dev/stdout
        with open(out, "wb") as stdout:
            run = subprocess.run([sys.executable, str(TOOLS / "tinyformer_export.py"), "--from-state-dict",
                                  "state.pt", *FLAGS, "--out", "/proc/self/fd/1"], stdout=stdout,
                                 stderr=subprocess.PIPE, text=True, cwd=self.dir)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stderr.count("\n"), 2, run.stderr)
        self.assertIn("wrote /proc/self/fd/1: encoder_only", run.stderr)
        self.assertIn("not checked: /proc/self/fd/1 is a stream", run.stderr)
        tensors, metadata = st.read(str(out))             # nothing but the safetensors file on stdout
        self.assertEqual(json.loads(metadata["config"])["arch"], "encoder_only")
        for name, value in module.state_dict().items():
            self.assertTrue(np.array_equal(tensors[name], value.numpy()), name)
        self.assertEqual(sorted(os.listdir(self.dir)), ["state.pt", "stdout.safetensors"])

    def test_train_toy_reexport_writes_through_safe_write(self):
        import train_toy
        committed = REPO / "data" / "models" / "reverse.safetensors"
        models = self.dir / "models"
        models.mkdir()
        (models / "reverse.safetensors").write_bytes(committed.read_bytes())
        during_export = []
        real_export = train_toy.export

        def export(*args, **kwargs):                      # what the models folder holds while it exports
            real_export(*args, **kwargs)
            during_export.append(sorted(os.listdir(models)))

        out = io.StringIO()
        with contextlib.redirect_stdout(out), mock.patch.object(train_toy, "export", export), \
                mock.patch.object(train_toy.safe_write, "write_bytes", wraps=train_toy.safe_write.write_bytes) as w:
            train_toy.reexport("reverse", models, run_check=False)
        self.assertIn("bit-identical after re-export", out.getvalue())
        self.assertEqual(during_export, [["reverse.safetensors"]], "staged outside the models folder")
        self.assertEqual([c.args[0] for c in w.call_args_list][-1], str(models / "reverse.safetensors"),
                         "the committed file is written by safe_write")
        self.assertEqual((models / "reverse.safetensors").read_bytes(), committed.read_bytes())
        self.assertEqual(os.listdir(models), ["reverse.safetensors"], "nothing else left in the folder")
        mask = os.umask(0)
        os.umask(mask)
        self.assertEqual(stat.S_IMODE(os.stat(models / "reverse.safetensors").st_mode), 0o666 & ~mask)

    def test_data_parallel_prefix_is_read_without_it(self):
        _, module = self.state_dict_file(prefix="module.")
        run = subprocess.run([sys.executable, str(TOOLS / "tinyformer_export.py"), "--from-state-dict", "state.pt",
                              *FLAGS, "--out", "out.safetensors"], capture_output=True, text=True, cwd=self.dir)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("OK out.safetensors", run.stdout)
        self.assertEqual(run.stderr.count("\n"), 1)
        self.assertIn('every name starts with "module."', run.stderr)
        self.assertIn("DataParallel", run.stderr)
        tensors, _ = st.read(str(self.dir / "out.safetensors"))
        self.assertEqual(set(tensors), set(module.state_dict()))
        for name, value in module.state_dict().items():
            self.assertTrue(np.array_equal(tensors[name], value.numpy()), name)

    def test_other_names_are_named_not_a_missing_d_model(self):
        _, module = self.state_dict_file()
        torch.save({"net." + k: v for k, v in module.state_dict().items()}, str(self.dir / "state.pt"))
        message = self.refused(["--from-state-dict", "state.pt", *FLAGS, "--out", "out.safetensors"], 1,
                               "has no tensor embed.weight", "this file's names start with: net",
                               "embed, pos_embed, transformer, lm_head")
        self.assertNotIn("--d-model", message)

    def test_check_after_exporting_one_layer_object_used_as_several_layers(self):
        torch.manual_seed(2)
        layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True)
        layers = nn.TransformerEncoder(layer, 1)
        layers.layers = nn.ModuleList([layer, layer, layer])         # one object, three layers
        randomize_(layers)
        path = self.path()
        te.export_decoder_only(path, layers=layers, embed=nn.Embedding(9, D), lm_head=nn.Linear(D, 9), max_len=8)
        worst = te.check(path)
        self.assertLessEqual(worst, 1.0)
        self.assertGreater(worst, 0.0)
        p = ed_parts()
        shared = p["transformer"].decoder.layers[0]
        p["transformer"].decoder.layers = nn.ModuleList([shared, shared])
        te.export_encoder_decoder(path, **p, max_len=8)
        self.assertLessEqual(te.check(path), 1.0)

    def test_torch_trace_output_never_replaces_an_input(self):
        te.export_encoder_only(self.path(), **single_parts(v=5, head="head"), max_len=8)
        st.write(str(self.dir / "in.safetensors"), {"ids": np.array([[1, 2, 3]], np.int64)})
        os.link(self.dir / "model.safetensors", self.dir / "hard.safetensors")
        os.mkdir(self.dir / "out-dir")
        cases = [(["--inputs", "in.safetensors", "--output", "./model.safetensors"],
                  "--output ./model.safetensors: is the same file as the input MODEL model.safetensors"),
                 (["--inputs", "in.safetensors", "--output", "hard.safetensors"], "the input MODEL"),
                 (["--inputs", "in.safetensors", "--output", "in.safetensors"],
                  "the input --inputs in.safetensors"),
                 (["--ids", "1,2", "--output", "out-dir"], "--output out-dir: is a directory"),
                 (["--ids", "1,2", "--output", "no/out.safetensors"], "the folder no does not exist")]
        for args, expected in cases:
            with self.subTest(args=args):
                before = folder_state(self.dir)
                run = subprocess.run([sys.executable, str(TOOLS / "torch_trace.py"), "model.safetensors", *args],
                                     capture_output=True, text=True, cwd=self.dir)
                self.assertEqual(run.returncode, 1, run.stderr)
                self.assertEqual(run.stdout, "")
                self.assertEqual(run.stderr.count("\n"), 1, run.stderr)
                self.assertIn(expected, run.stderr)
                self.assertEqual(folder_state(self.dir), before)

    def test_importable_and_runnable_from_any_folder(self):
        elsewhere = tempfile.mkdtemp(prefix="elsewhere-", dir=self.dir)
        script = (f"import sys; sys.path.insert(0, {str(TOOLS)!r})\n"
                  "import torch; from torch import nn; import tinyformer_export as te\n"
                  "layers = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), 1)\n"
                  "te.export_encoder_only('m.safetensors', layers=layers, embed=nn.Embedding(5, 16), "
                  "head=nn.Linear(16, 5), max_len=8)\n"
                  "print(te.check('m.safetensors') <= 1.0)\n")
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=elsewhere)
        self.assertEqual((run.returncode, run.stdout), (0, "True\n"), run.stderr)
        run = subprocess.run([sys.executable, str(TOOLS / "tinyformer_export.py"), "--check", "m.safetensors"],
                             capture_output=True, text=True, cwd=elsewhere)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("OK m.safetensors", run.stdout)


if __name__ == "__main__":
    torch.set_num_threads(1)
    program = unittest.main(exit=False, verbosity=1)
    if WORST:
        print("worst |a-b| / (1e-4 + 1e-4|b|) per round trip (<= 1 passes):")
        for case, worst in WORST.items():
            print(f"  {worst:8.3g}  {case}")
    sys.exit(0 if program.result.wasSuccessful() else 1)
