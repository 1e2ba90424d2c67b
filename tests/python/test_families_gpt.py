#!/usr/bin/python3
"""Tests of the decoder-only families (tools/python/families/gpt.py, hf_gpt2.py):
nanoGPT, minGPT and Hugging Face GPT-2 files converted to tinyformer's layout.

- Each converter reads a file our own modules wrote (random weights, several
  configs: bias=False, tanh and exact GELU, tied and untied heads, the mask
  buffers, torch.compile's `_orig_mod.` prefix, the optimizer state and floats a
  real ckpt.pt holds, meta.pkl's character vocabulary, HF folders with
  model.safetensors or pytorch_model.bin, with or without "transformer.").
- The numbers: the converted tensors, written with write_converted and run by
  `build/tinyformer forward`, give the logits of the module that wrote the file
  at every position: worst |a-b| / (1e-4 + 1e-4|b|) <= 1 (FORMAT.md's tolerance;
  printed with -v). Independently of the engine, the converted tensors loaded
  into stock nn.TransformerEncoderLayer(norm_first=True) modules (absent biases
  as zeros) give the same logits: the renaming is checked by PyTorch itself.
- nanoGPT's Shakespeare-char layout converted by `--from nanogpt ckpt.pt --meta
  meta.pkl` alone (exact GELU assumed, with a note; "\n" a token), and `run`
  printing the generated lines.
- Refusals: the missing flags named in one error, a wrong-GELU export differs,
  HF options the engine cannot compute, a tensor named like the mask buffer
  that is not one, a meta.pkl that would run code (it must not run).

    /usr/bin/python3 tests/python/test_families_gpt.py          # from the repository root
    /usr/bin/python3 tests/python/test_families_gpt.py -v -k nanogpt
"""

import json
import os
import pickle
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import safetensors_io  # noqa: E402
from families import write_converted  # noqa: E402
from families import gpt  # noqa: E402
from families import hf_gpt2  # noqa: E402

BINARY = REPO / "build" / "tinyformer"
VERBOSE = "-v" in sys.argv


def randomise(module, seed, std=0.3):
    """Every parameter N(0, std) (biases and LayerNorm weights too, so a dropped or
    misplaced bias shows); tied parameters are one parameter and stay tied."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * std)
    return module.eval()


def nanogpt_checkpoint(model, path, *, compiled=False, optimizer=True, model_args=True):
    """A ckpt.pt as nanoGPT's train.py writes it: model, optimizer, model_args,
    iter_num, best_val_loss (a tensor), config (train.py's globals: floats too)."""
    state = model.state_dict()
    if compiled:
        state = {"_orig_mod." + k: v for k, v in state.items()}
    c = model.config
    ckpt = {"model": state, "iter_num": 250, "best_val_loss": torch.tensor(1.4697),
            "config": {"learning_rate": 1e-3, "dropout": 0.2, "dataset": "shakespeare_char", "compile": compiled,
                       "batch_size": 64}}
    if model_args:
        ckpt["model_args"] = dict(n_layer=c.n_layer, n_head=c.n_head, n_embd=c.n_embd, block_size=c.block_size,
                                  bias=c.bias, vocab_size=c.vocab_size, dropout=0.2)
    if optimizer:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
        ckpt["optimizer"] = opt.state_dict()
    torch.save(ckpt, path)


def char_meta(path, chars):
    """meta.pkl as nanoGPT's data/shakespeare_char/prepare.py writes it."""
    with open(path, "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)),
                     "stoi": {ch: i for i, ch in enumerate(chars)}}, f)


def engine_logits(path, ids, workdir):
    inputs = os.path.join(workdir, "in.safetensors")
    out = os.path.join(workdir, "out.safetensors")
    safetensors_io.write(inputs, {"ids": ids.numpy().astype(np.int64)})
    run = subprocess.run([str(BINARY), "forward", str(path), "--inputs", inputs, "--output", out],
                         capture_output=True, text=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    if run.returncode != 0:
        raise AssertionError(f"tinyformer forward failed (exit {run.returncode}): {run.stderr.strip()}")
    return torch.from_numpy(safetensors_io.read(out)[0]["logits"])


def worst_ratio(a, b):
    """max |a-b| / (1e-4 + 1e-4 |b|): FORMAT.md's tolerance is 1."""
    return float(((a - b).abs() / (1e-4 + 1e-4 * b.abs())).max())


def gelu_tanh(h):
    # 0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3))), written out here for the stock layers
    return 0.5 * h * (1.0 + torch.tanh(0.7978845608028654 * (h + 0.044715 * h * h * h)))


def stock_logits(converted, ids):
    """FORMAT.md's decoder_only forward on stock PyTorch layers, from the
    converted tensors alone (names as FORMAT.md lists them; an absent bias is a
    zero bias): embed + pos_embed, TransformerEncoderLayer(norm_first=True) with a
    causal mask, transformer.norm, lm_head (or embed.weight when tied)."""
    c, t = converted.config, converted.tensors
    d, ff = c["d_model"], c["dim_feedforward"]
    act = {"gelu": F.gelu, "gelu_tanh": gelu_tanh, "relu": F.relu}[c["activation"]]
    x = t["embed.weight"][ids] + t["pos_embed.weight"][: ids.shape[1]]
    mask = torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool).triu(1)
    for i in range(c["num_layers"]):
        layer = nn.TransformerEncoderLayer(d, c["nhead"], ff, dropout=0.0, activation=act, batch_first=True,
                                           norm_first=True, layer_norm_eps=c["layer_norm_eps"]).eval()
        sd = layer.state_dict()
        for name in sd:
            key = f"transformer.layers.{i}.{name}"
            sd[name] = t[key] if key in t else torch.zeros_like(sd[name])
            if key not in t:
                assert name.endswith("bias"), name
        layer.load_state_dict(sd)
        with torch.no_grad():
            x = layer(x, src_mask=mask)
    norm_b = t.get("transformer.norm.bias", torch.zeros(d))
    x = F.layer_norm(x, (d,), t["transformer.norm.weight"], norm_b, c["layer_norm_eps"])
    head = t["embed.weight"] if c["tie_embeddings"] else t["lm_head.weight"]
    return x @ head.t()


class FamilyCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="tinyformer-families-")
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def p(self, name):
        return os.path.join(self.dir, name)

    def assert_same_numbers(self, converted, module, vocab_size, block, label, seed=0):
        """converted == module at every position: through stock layers and through the engine."""
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(0, vocab_size, (3, block), generator=g)
        with torch.no_grad():
            theirs = module(ids)
            theirs = theirs[0] if isinstance(theirs, tuple) else theirs
        stock = stock_logits(converted, ids)
        self.assertLessEqual(worst_ratio(stock, theirs), 1.0, f"{label}: stock layers")
        path = self.p("m.safetensors")
        write_converted(path, converted)
        ours = engine_logits(path, ids, self.dir)
        self.assertEqual(list(ours.shape), list(theirs.shape))
        ratio = worst_ratio(ours, theirs)
        if VERBOSE:
            print(f"\n  {label}: worst |a-b|/(1e-4+1e-4|b|) = {ratio:.3g} (max |a-b| "
                  f"{float((ours - theirs).abs().max()):.3g}) over {ids.numel()} positions", end="")
        self.assertLessEqual(ratio, 1.0, label)
        return ratio


class NanoGPT(FamilyCase):
    CONFIGS = [
        dict(bias=False, gelu="exact", compiled=True),           # train.py's defaults: bias=False, compile=True
        dict(bias=True, gelu="exact", compiled=False),
        dict(bias=False, gelu="tanh", compiled=False),            # nanoGPT before mid-2023
        dict(bias=True, gelu="tanh", compiled=True, mask_buffer=False),   # torch >= 2.0: no attn.bias saved
    ]

    def test_nanogpt_checkpoints_convert_to_the_same_logits(self):
        for k, cfg in enumerate(self.CONFIGS):
            with self.subTest(**cfg):
                model = randomise(gpt.GPT(gpt.GPTConfig(block_size=24, vocab_size=37, n_layer=2, n_head=4, n_embd=32,
                                                        bias=cfg["bias"], gelu=cfg["gelu"],
                                                        mask_buffer=cfg.get("mask_buffer", True))), seed=k)
                ckpt = self.p(f"ckpt{k}.pt")
                nanogpt_checkpoint(model, ckpt, compiled=cfg["compiled"])
                converted = gpt.convert_nanogpt(ckpt, gelu=cfg["gelu"])
                c = converted.config
                self.assertEqual((c["bias"], c["norm_bias"], c["head_bias"], c["tie_embeddings"]),
                                 (cfg["bias"], cfg["bias"], False, True))
                self.assertEqual(c["activation"], {"exact": "gelu", "tanh": "gelu_tanh"}[cfg["gelu"]])
                self.assertEqual((c["max_len"], c["vocab_size"], c["num_layers"], c["nhead"], c["dim_feedforward"]),
                                 (24, 37, 2, 4, 128))
                self.assertNotIn("lm_head.weight", converted.tensors)
                self.assertFalse(any(n.startswith("transformer.h.") for n in converted.tensors))
                self.assertEqual(any(n.endswith("bias") for n in converted.tensors), cfg["bias"])
                self.assertIsNotNone(converted.reference)
                self.assert_same_numbers(converted, model, 37, 24, f"nanoGPT {cfg}")

    def test_tensor_names_are_formats(self):
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=5, n_layer=1, n_head=2, n_embd=4,
                                                bias=True)), seed=3)
        ckpt = self.p("ckpt.pt")
        nanogpt_checkpoint(model, ckpt)
        names = sorted(gpt.convert_nanogpt(ckpt, gelu="exact").tensors)
        layer = "transformer.layers.0."
        expected = sorted(["embed.weight", "pos_embed.weight", "transformer.norm.weight", "transformer.norm.bias"]
                          + [layer + n for n in ("self_attn.in_proj_weight", "self_attn.in_proj_bias",
                                                 "self_attn.out_proj.weight", "self_attn.out_proj.bias",
                                                 "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                                                 "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias")])
        self.assertEqual(names, expected)

    def test_meta_pkl_gives_the_char_vocabulary(self):
        chars = list("\n !$&',-.:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")   # shakespeare_char's 65
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=16, vocab_size=len(chars), n_layer=1, n_head=2,
                                                n_embd=16, bias=False)), seed=4)
        ckpt, meta = self.p("ckpt.pt"), self.p("meta.pkl")
        nanogpt_checkpoint(model, ckpt, compiled=True)
        char_meta(meta, chars)
        # "\n" is a token of its own, written as it is (docs/FORMAT.md's vocabulary rules)
        converted = gpt.convert_nanogpt(ckpt, meta_path=meta)
        self.assertEqual(converted.metadata["vocab"], chars)
        self.assertEqual(converted.metadata["tokenizer"], "char")
        path = self.p("m.safetensors")
        write_converted(path, converted)
        self.assertEqual(json.loads(safetensors_io.read(path)[1]["vocab"])[0], "\n")
        # visible_controls=True writes what this converter wrote before "\n" was a token: its picture
        pictured = gpt.convert_nanogpt(ckpt, meta_path=meta, gelu="exact", visible_controls=True)
        self.assertEqual(pictured.metadata["vocab"], ["\u240a"] + chars[1:])
        self.assertIn("'\\n' -> \u240a", " ".join(pictured.notes))
        write_converted(path, pictured)
        self.assertEqual(json.loads(safetensors_io.read(path)[1]["vocab"])[0], "\u240a")

    def test_meta_pkl_with_a_tab_keeps_it_and_refuses_other_controls(self):
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=5, n_layer=1, n_head=1, n_embd=4)), seed=8)
        ckpt, meta = self.p("ckpt.pt"), self.p("meta.pkl")
        nanogpt_checkpoint(model, ckpt)
        char_meta(meta, ["\t", "\n", "a", "b", "c"])
        self.assertEqual(gpt.convert_nanogpt(ckpt, meta_path=meta).metadata["vocab"], ["\t", "\n", "a", "b", "c"])
        # a carriage return (a Windows text's "\r\n") is no token: refused by name, with the way out
        char_meta(meta, ["\r", "\n", "a", "b", "c"])
        with self.assertRaisesRegex(ValueError, r"vocab\[0\] = '\\r': a tinyformer token cannot hold a control "
                                                r"character other than a newline or a tab .*visible_controls=True"):
            gpt.convert_nanogpt(ckpt, meta_path=meta)
        pictured = gpt.convert_nanogpt(ckpt, meta_path=meta, visible_controls=True)
        self.assertEqual(pictured.metadata["vocab"], ["\u240d", "\u240a", "a", "b", "c"])

    def test_meta_pkl_printable_vocabulary_is_written(self):
        chars = list(" abcdefghijklmnopqrstuvwxyz.")
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=16, vocab_size=len(chars), n_layer=1, n_head=2,
                                                n_embd=16)), seed=5)
        ckpt, meta = self.p("ckpt.pt"), self.p("meta.pkl")
        nanogpt_checkpoint(model, ckpt)
        char_meta(meta, chars)
        converted = gpt.convert_nanogpt(ckpt, meta_path=meta, gelu="exact")
        path = self.p("m.safetensors")
        write_converted(path, converted)
        _, md = safetensors_io.read(path)
        self.assertEqual(json.loads(md["vocab"]), chars)
        self.assertEqual(md.get("tokenizer", "char"), "char")

    def test_meta_pkl_of_another_size_is_refused(self):
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=6, n_layer=1, n_head=2, n_embd=4)), 1)
        ckpt, meta = self.p("ckpt.pt"), self.p("meta.pkl")
        nanogpt_checkpoint(model, ckpt)
        char_meta(meta, list("abc"))
        with self.assertRaisesRegex(ValueError, r"3 characters but the model's vocab_size is 6"):
            gpt.convert_nanogpt(ckpt, meta_path=meta, gelu="exact")

    def test_a_real_ckpt_needs_more_than_torch_weights_only_on_this_torch(self):
        """What the fallback is for: the floats in model_args/config/optimizer. The
        ckpt is read anyway, by the allowlist unpickler, and the model is right."""
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=6, n_layer=1, n_head=2, n_embd=4)), 2)
        ckpt = self.p("ckpt.pt")
        nanogpt_checkpoint(model, ckpt)
        try:
            torch.load(ckpt, weights_only=True)
            weights_only_reads_it = True
        except pickle.UnpicklingError:
            weights_only_reads_it = False
        if VERBOSE:
            print(f"\n  torch {torch.__version__} weights_only reads a nanoGPT ckpt.pt: {weights_only_reads_it}", end="")
        loaded = gpt.load_torch_file(ckpt)
        self.assertEqual(loaded["model_args"]["dropout"], 0.2)
        self.assertEqual(loaded["config"]["learning_rate"], 1e-3)
        self.assertTrue(torch.equal(loaded["model"]["transformer.wpe.weight"], model.transformer.wpe.weight))

    def test_gelu_defaults_to_exact_with_a_note_and_a_bare_state_dict_needs_n_head(self):
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=6, n_layer=1, n_head=2, n_embd=4)), 1)
        bare = self.p("bare.pt")
        torch.save(model.state_dict(), bare)
        with self.assertRaisesRegex(ValueError, r"convert_nanogpt: missing n_head"):
            gpt.convert_nanogpt(bare)
        converted = gpt.convert_nanogpt(bare, n_head=2)
        self.assertEqual(converted.config["nhead"], 2)
        self.assertEqual(converted.config["activation"], "gelu")          # exact: nanoGPT's nn.GELU
        note = converted.notes[0]
        self.assertIn("gelu not given: assumed exact", note)
        self.assertIn("--gelu tanh", note)
        given = gpt.convert_nanogpt(bare, gelu="exact", n_head=2)          # said: no note about it
        self.assertFalse(any("gelu" in n for n in given.notes), given.notes)
        self.assertEqual(gpt.convert_nanogpt(bare, gelu="tanh", n_head=2).config["activation"], "gelu_tanh")

    def test_the_wrong_gelu_gives_other_numbers(self):
        """The check this converter exists for: a tanh-GELU model exported as exact differs."""
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=16, vocab_size=11, n_layer=2, n_head=2, n_embd=16,
                                                gelu="tanh")), seed=7)
        ckpt = self.p("ckpt.pt")
        nanogpt_checkpoint(model, ckpt)
        ids = torch.randint(0, 11, (2, 16), generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            theirs = model(ids)
        right = stock_logits(gpt.convert_nanogpt(ckpt, gelu="tanh"), ids)
        wrong = stock_logits(gpt.convert_nanogpt(ckpt, gelu="exact"), ids)
        self.assertLessEqual(worst_ratio(right, theirs), 1.0)
        self.assertGreater(worst_ratio(wrong, theirs), 1.0)

    def test_a_tensor_named_like_the_mask_that_is_not_one_is_refused(self):
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=6, n_layer=1, n_head=2, n_embd=4)), 1)
        state = model.state_dict()
        state["transformer.h.0.attn.bias"] = torch.ones(1, 1, 8, 8)        # not lower-triangular
        bad = self.p("bad.pt")
        torch.save({"model": state, "model_args": {"n_head": 2}}, bad)
        with self.assertRaisesRegex(ValueError, r"transformer\.h\.0\.attn\.bias \(shape \[1, 1, 8, 8\]\) is named "
                                                r"like the causal-mask buffer but is not one"):
            gpt.convert_nanogpt(bad, gelu="exact")
        state["transformer.h.0.attn.bias"] = torch.randn(12)                # a real bias under that name
        torch.save({"model": state, "model_args": {"n_head": 2}}, bad)
        with self.assertRaisesRegex(ValueError, r"attn\.bias \(shape \[12\]\)"):
            gpt.convert_nanogpt(bad, gelu="exact")

    def test_unknown_tensors_and_mixed_biases_are_refused(self):
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=6, n_layer=1, n_head=2, n_embd=4)), 1)
        state = dict(model.state_dict())
        state["transformer.h.0.attn.rotary.inv_freq"] = torch.ones(2)
        path = self.p("x.pt")
        torch.save({"model": state, "model_args": {"n_head": 2}}, path)
        with self.assertRaisesRegex(ValueError, r"cannot place: transformer\.h\.0\.attn\.rotary\.inv_freq"):
            gpt.convert_nanogpt(path, gelu="exact")
        state = dict(model.state_dict())
        del state["transformer.h.0.mlp.c_fc.bias"]
        torch.save({"model": state, "model_args": {"n_head": 2}}, path)
        with self.assertRaisesRegex(ValueError, r"transformer\.h\.0\.mlp\.c_fc\.bias is missing"):
            gpt.convert_nanogpt(path, gelu="exact")
        state = dict(model.state_dict())
        state["transformer.h.0.attn.c_attn.weight"] = torch.zeros(4, 4)
        torch.save({"model": state, "model_args": {"n_head": 2}}, path)
        with self.assertRaisesRegex(ValueError, r"c_attn\.weight has shape \[4, 4\], expected \[12, 4\]"):
            gpt.convert_nanogpt(path, gelu="exact")

    def test_model_args_must_agree_with_the_tensors(self):
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=6, n_layer=1, n_head=2, n_embd=4)), 1)
        path = self.p("x.pt")
        torch.save({"model": model.state_dict(), "model_args": {"n_head": 2, "n_layer": 3}}, path)
        with self.assertRaisesRegex(ValueError, r"model_args\['n_layer'\] = 3 but the tensors say 1"):
            gpt.convert_nanogpt(path, gelu="exact")

    def test_a_checkpoint_that_would_run_code_is_refused(self):
        ran = self.p("ran")
        path = self.p("evil.pt")
        torch.save({"model": {}, "model_args": _Evil(ran)}, path)
        with self.assertRaisesRegex(ValueError, r"refused"):
            gpt.convert_nanogpt(path, gelu="exact")
        self.assertFalse(os.path.exists(ran), "the checkpoint's code ran")


class TorchArchive(FamilyCase):
    """load_torch_file, as families.gpt imports it: the project's own reader (tools/python/torch_file.py) on
    files torch.save wrote, in both of its formats."""

    def test_views_shared_storages_and_dtypes_come_back_equal(self):
        base = torch.arange(40, dtype=torch.float32).view(5, 8)
        obj = {"view": base[1:4, 2:7], "t": base.t(), "same": base, "half": torch.randn(3, 2).half(),
               "bf16": torch.randn(4).bfloat16(), "ids": torch.arange(6), "mask": torch.tril(torch.ones(3, 3)).bool(),
               "param": nn.Parameter(torch.randn(2, 2)), "lr": 1e-3, "betas": (0.9, 0.95), "name": "x", "none": None,
               "empty": torch.empty(0)}
        for legacy in (False, True):
            path = self.p(f"a{legacy}.pt")
            torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
            loaded = gpt.load_torch_file(path)
            for key, value in obj.items():
                with self.subTest(key=key, legacy=legacy):
                    if torch.is_tensor(value):
                        self.assertEqual(loaded[key].dtype, value.dtype)
                        self.assertEqual(loaded[key].shape, value.shape)
                        self.assertTrue(torch.equal(loaded[key], value.detach()))
                    else:
                        self.assertEqual(loaded[key], value)
            # views of one storage stay views of one storage (as torch.load makes them)
            self.assertEqual(loaded["view"].data_ptr(), loaded["same"].data_ptr() + 4 * (8 + 2))

    def test_a_module_pickled_whole_is_refused(self):
        path = self.p("m.pt")
        torch.save({"model": nn.Linear(2, 2), "lr": 0.1}, path)
        with self.assertRaisesRegex(ValueError, r"refused as a checkpoint: the global torch\.nn\.modules\.linear\.Linear is not allowed"):
            gpt.load_torch_file(path)

    def test_torchscript_is_refused(self):
        path = self.p("ts.pt")
        torch.jit.save(torch.jit.script(nn.Linear(2, 2)), path)
        with self.assertRaisesRegex(ValueError, r"a TorchScript archive"):
            gpt.load_torch_file(path)


class _Evil:
    """Unpickling this runs os.system: what a restricted unpickler must refuse."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class MetaPkl(FamilyCase):
    def test_a_meta_pkl_that_would_run_code_does_not(self):
        ran = self.p("ran")
        path = self.p("meta.pkl")
        with open(path, "wb") as f:
            pickle.dump({"vocab_size": 2, "itos": {0: "a", 1: "b"}, "x": _Evil(ran)}, f)
        # the payload is real: a plain pickle.load would run it
        with open(path, "rb") as f:
            pickle.load(f)
        self.assertTrue(os.path.exists(ran))
        os.unlink(ran)
        with self.assertRaisesRegex(ValueError, r"meta\.pkl: refused as meta\.pkl: the global (posix|os)\.system is not allowed"):
            gpt.read_meta(path)
        self.assertFalse(os.path.exists(ran), "meta.pkl's code ran")

    def test_every_protocol_of_a_plain_meta_loads(self):
        meta = {"vocab_size": 3, "itos": {0: "a", 1: "b", 2: "é"}, "stoi": {"a": 0, "b": 1, "é": 2}}
        for protocol in range(0, pickle.HIGHEST_PROTOCOL + 1):
            with self.subTest(protocol=protocol):
                path = self.p(f"meta{protocol}.pkl")
                with open(path, "wb") as f:
                    pickle.dump(meta, f, protocol=protocol)
                self.assertEqual(gpt.read_meta(path), ["a", "b", "é"])

    def test_broken_meta_files_are_named(self):
        cases = [
            ({"vocab_size": 2}, r"expected nanoGPT's meta\.pkl, a dict with 'itos'"),
            ({"itos": {0: "a", 2: "b"}}, r"ids of 'itos' must be exactly 0\.\.1"),
            ({"itos": {0: "a", 1: 7}}, r"itos\[1\] is a int"),
            ({"itos": {0: "a", 1: "b"}, "vocab_size": 3}, r"vocab_size = 3 but 'itos' has 2"),
            ({"itos": {0: "a", 1: "b"}, "stoi": {"a": 1, "b": 0}}, r"'stoi' is not the inverse"),
            ([1, 2], r"got list"),
        ]
        for k, (obj, pattern) in enumerate(cases):
            with self.subTest(pattern=pattern):
                path = self.p(f"m{k}.pkl")
                with open(path, "wb") as f:
                    pickle.dump(obj, f)
                with self.assertRaisesRegex(ValueError, pattern):
                    gpt.read_meta(path)
        path = self.p("trunc.pkl")
        with open(path, "wb") as f:
            f.write(pickle.dumps({"itos": {0: "a"}})[:-3])
        with self.assertRaisesRegex(ValueError, r"trunc\.pkl: refused as meta\.pkl: "):
            gpt.read_meta(path)


class MinGPT(FamilyCase):
    def test_mingpt_state_dict_converts_to_the_same_logits(self):
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=20, vocab_size=10, n_layer=3, n_head=3, n_embd=48,
                                                bias=True, gelu="tanh", tie=False)), seed=11)
        path = self.p("mingpt.pt")
        torch.save(model.state_dict(), path)
        self.assertIn("transformer.h.0.attn.bias", model.state_dict())
        converted = gpt.convert_mingpt(path, n_head=3)
        c = converted.config
        self.assertEqual((c["activation"], c["tie_embeddings"], c["head_bias"], c["bias"], c["norm_bias"]),
                         ("gelu_tanh", False, False, True, True))
        self.assertIn("lm_head.weight", converted.tensors)
        self.assertNotIn("lm_head.bias", converted.tensors)
        self.assert_same_numbers(converted, model, 10, 20, "minGPT gpt-nano-shaped")

    def test_mingpt_needs_n_head(self):
        with self.assertRaisesRegex(ValueError, r"convert_mingpt: missing n_head .*gpt-nano 3"):
            gpt.convert_mingpt(self.p("never-read.pt"))


class FromModule(FamilyCase):
    def test_recognised_by_structure(self):
        ours = gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=6, n_layer=1, n_head=2, n_embd=4))
        hf = hf_gpt2.GPT2LMHead(hf_gpt2.GPT2Config(vocab_size=6, n_positions=8, n_embd=4, n_layer=1, n_head=2))
        self.assertTrue(gpt.recognise(ours))
        self.assertFalse(hf_gpt2.recognise(ours))
        self.assertTrue(hf_gpt2.recognise(hf))
        self.assertFalse(gpt.recognise(hf))
        self.assertFalse(gpt.recognise(nn.Linear(2, 2)))
        self.assertFalse(hf_gpt2.recognise(nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2), 1)))

        class Lookalike(nn.Module):
            """nanoGPT's attribute tree in another class (as upstream's own GPT is)."""

            def __init__(self, inner):
                super().__init__()
                self.transformer, self.lm_head = inner.transformer, inner.lm_head
        self.assertTrue(gpt.recognise(Lookalike(ours)))

    def test_from_module_matches_the_file_converter(self):
        for k, (bias, kind, tie) in enumerate([(False, "exact", True), (True, "tanh", False)]):
            with self.subTest(bias=bias, gelu=kind, tie=tie):
                model = randomise(gpt.GPT(gpt.GPTConfig(block_size=12, vocab_size=9, n_layer=2, n_head=2, n_embd=8,
                                                        bias=bias, gelu=kind, tie=tie)), seed=20 + k)
                a = gpt.from_module(model)
                self.assertIs(a.reference, model)
                path = self.p(f"ck{k}.pt")
                nanogpt_checkpoint(model, path)
                b = gpt.convert_nanogpt(path, gelu=kind)
                self.assertEqual(a.config, b.config)
                self.assertEqual(sorted(a.tensors), sorted(b.tensors))
                for name in a.tensors:
                    self.assertTrue(torch.equal(a.tensors[name], b.tensors[name]), name)
                with self.assertRaisesRegex(ValueError, r"gelu = .* but the module's MLP uses"):
                    gpt.from_module(model, gelu="tanh" if kind == "exact" else "exact")

    def test_upstream_style_activations_are_read(self):
        model = gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=6, n_layer=1, n_head=2, n_embd=4))
        mlp = model.transformer.h[0].mlp
        del mlp.kind
        mlp.gelu = nn.GELU()                               # nanoGPT's MLP today
        self.assertEqual(gpt.from_module(model).config["activation"], "gelu")
        mlp.gelu = nn.GELU(approximate="tanh")
        self.assertEqual(gpt.from_module(model).config["activation"], "gelu_tanh")
        del mlp.gelu
        mlp.gelu = nn.SiLU()
        with self.assertRaisesRegex(ValueError, r"from_module: missing gelu \(the MLP's activation SiLU"):
            gpt.from_module(model)


class HFGPT2(FamilyCase):
    def make(self, seed, **kw):
        cfg = dict(vocab_size=14, n_positions=16, n_embd=16, n_layer=2, n_head=4)
        cfg.update(kw)
        return randomise(hf_gpt2.GPT2LMHead(hf_gpt2.GPT2Config(**cfg)), seed=seed)

    VOCAB = ["a", "b", "c", "Ġ", "Ġa", "ab", "Ġab", "abc", "!", "?", "Ċ", "é", "x", "<|endoftext|>"]
    MERGES = ["Ġ a", "a b", "Ġa b", "ab c"]

    def test_hf_folders_convert_to_the_same_logits(self):
        cases = [dict(weights="safetensors", prefix=True), dict(weights="bin", prefix=False),
                 dict(weights="safetensors", prefix=False, tie_word_embeddings=False, n_inner=24,
                      layer_norm_epsilon=1e-6), dict(weights="bin", prefix=True, activation_function="gelu")]
        for k, case in enumerate(cases):
            with self.subTest(**case):
                kw = {n: v for n, v in case.items() if n not in ("weights", "prefix")}
                model = self.make(30 + k, **kw)
                folder = self.p(f"hf{k}")
                hf_gpt2.save_folder(model, folder, weights=case["weights"], prefix=case["prefix"],
                                    vocab=self.VOCAB, merges=self.MERGES)
                converted = hf_gpt2.convert_hf_gpt2(folder)
                c = converted.config
                self.assertEqual(c["activation"], "gelu" if kw.get("activation_function") == "gelu" else "gelu_tanh")
                self.assertEqual(c["tie_embeddings"], kw.get("tie_word_embeddings", True))
                self.assertEqual(c["dim_feedforward"], kw.get("n_inner", 64))
                self.assertEqual(c["layer_norm_eps"], kw.get("layer_norm_epsilon", 1e-5))
                self.assertEqual(c["eos_id"], 13)
                self.assertEqual(converted.metadata["tokenizer"], "gpt2_bpe")
                self.assertEqual(converted.metadata["vocab"], self.VOCAB)
                self.assertEqual(converted.metadata["merges"], self.MERGES)
                self.assert_same_numbers(converted, model, 14, 16, f"HF GPT-2 {case}")
                ref = converted.reference
                ids = torch.randint(0, 14, (2, 16), generator=torch.Generator().manual_seed(1))
                with torch.no_grad():
                    self.assertTrue(torch.allclose(ref(ids), model(ids), atol=1e-6))

    def test_conv1d_is_transposed(self):
        model = self.make(40)
        folder = self.p("hf")
        hf_gpt2.save_folder(model, folder)
        converted = hf_gpt2.convert_hf_gpt2(folder)
        w = model.transformer.h[0].attn.c_attn.weight                         # [D, 3D] = [in, out]
        self.assertEqual(list(w.shape), [16, 48])
        self.assertTrue(torch.equal(converted.tensors["transformer.layers.0.self_attn.in_proj_weight"], w.t()))
        self.assertNotIn("lm_head.weight", converted.tensors)

    def test_without_tokenizer_files_ids_only(self):
        model = self.make(41)
        folder = self.p("hf")
        hf_gpt2.save_folder(model, folder)
        converted = hf_gpt2.convert_hf_gpt2(folder)
        self.assertEqual(converted.metadata, {})
        self.assertNotIn("eos_id", converted.config)

    def test_options_the_engine_cannot_compute_are_refused_by_name(self):
        model = self.make(42)
        bad = {"scale_attn_by_inverse_layer_idx": True, "add_cross_attention": True, "scale_attn_weights": False,
               "activation_function": "silu", "model_type": "gpt_neo"}
        for key, value in bad.items():
            with self.subTest(key=key):
                folder = self.p(f"hf-{key}")
                hf_gpt2.save_folder(model, folder, extra_config={key: value})
                with self.assertRaisesRegex(ValueError, rf"cannot represent {key} = {json.dumps(value)}"):
                    hf_gpt2.convert_hf_gpt2(folder)
        folder = self.p("hf-all")
        hf_gpt2.save_folder(model, folder, extra_config=bad)
        with self.assertRaises(ValueError) as cm:
            hf_gpt2.convert_hf_gpt2(folder)
        for key in bad:
            self.assertIn(key, str(cm.exception))

    def test_reorder_and_upcast_attn_is_the_same_math_in_float32(self):
        model = self.make(43)
        folder = self.p("hf")
        hf_gpt2.save_folder(model, folder, extra_config={"reorder_and_upcast_attn": True})
        self.assertEqual(hf_gpt2.convert_hf_gpt2(folder).config["activation"], "gelu_tanh")

    def test_broken_folders_are_named(self):
        model = self.make(44)
        folder = self.p("hf")
        hf_gpt2.save_folder(model, folder, vocab=self.VOCAB, merges=self.MERGES)
        os.unlink(os.path.join(folder, "merges.txt"))
        with self.assertRaisesRegex(ValueError, r"vocab\.json without merges\.txt"):
            hf_gpt2.convert_hf_gpt2(folder)
        os.unlink(os.path.join(folder, "model.safetensors"))
        with self.assertRaisesRegex(ValueError, r"no model\.safetensors or pytorch_model\.bin"):
            hf_gpt2.convert_hf_gpt2(folder)
        with self.assertRaisesRegex(ValueError, r"not a folder"):
            hf_gpt2.convert_hf_gpt2(self.p("nothing"))
        folder2 = self.p("hf2")
        hf_gpt2.save_folder(model, folder2, vocab=self.VOCAB[:-1], merges=self.MERGES)
        with self.assertRaisesRegex(ValueError, r"13 tokens but vocab_size is 14"):
            hf_gpt2.convert_hf_gpt2(folder2)
        folder3 = self.p("hf3")
        hf_gpt2.save_folder(model, folder3, extra_config={"n_layer": 5})
        with self.assertRaisesRegex(ValueError, r"n_layer = 5 but the weights say 2"):
            hf_gpt2.convert_hf_gpt2(folder3)

    def test_from_module(self):
        model = self.make(45, tie_word_embeddings=False)
        folder = self.p("hf")
        hf_gpt2.save_folder(model, folder)
        a, b = hf_gpt2.from_module(model), hf_gpt2.convert_hf_gpt2(folder)
        self.assertIs(a.reference, model)
        self.assertEqual(a.config, b.config)
        for name in b.tensors:
            self.assertTrue(torch.equal(a.tensors[name], b.tensors[name]), name)


class CommandLine(FamilyCase):
    """tools/python/tinyformer_export.py --from nanogpt / mingpt / hf-gpt2 (B2's CLI, these converters)."""

    def run_cli(self, *args):
        return subprocess.run([sys.executable, str(REPO / "tools" / "python" / "tinyformer_export.py"), *args],
                              capture_output=True, text=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))

    def test_from_nanogpt_shakespeare_char_needs_no_other_flag_and_run_prints_lines(self):
        """`--from nanogpt ckpt.pt --meta meta.pkl --out M` alone, on a checkpoint laid out as nanoGPT's
        train.py writes it (torch.compile's prefix, the mask buffers, the optimizer) with
        shakespeare_char's 65-character meta.pkl ("\n" first); then `run` prints the text it generates
        with its newlines, as the ids it generated spell it through meta.pkl's itos."""
        chars = list("\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        self.assertEqual(len(chars), 65)
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=64, vocab_size=65, n_layer=2, n_head=4, n_embd=32,
                                                bias=False)), seed=12, std=0.1)
        ckpt, meta, out = self.p("ckpt.pt"), self.p("meta.pkl"), self.p("shakespeare.safetensors")
        nanogpt_checkpoint(model, ckpt, compiled=True)
        char_meta(meta, chars)
        run = self.run_cli("--from", "nanogpt", ckpt, "--meta", meta, "--out", out)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("note: gelu not given: assumed exact", run.stdout)
        self.assertIn("OK ", run.stdout)
        self.assertEqual(json.loads(safetensors_io.read(out)[1]["vocab"]), chars)

        def tinyformer_run(*flags):
            done = subprocess.run([str(BINARY), "run", out, "--max-new-tokens", "60", "--temperature", "2",
                                   "--seed", "7", *flags, "--", "ROMEO:\n"], capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            return done.stdout

        ids = [int(i) for i in tinyformer_run("--print-ids").split(",")]
        text = "".join(chars[i] for i in ids)
        self.assertIn("\n", text)                    # the seed's 60 draws hold newlines, which the test needs
        printed = tinyformer_run()
        self.assertEqual(printed, text + "\n")
        self.assertGreater(len(printed.splitlines()), 1)
        self.assertEqual(tinyformer_run("--escape"), text.replace("\n", "\u240a") + "\n")
        # the prompt's newline is the vocabulary's "\n" token: the same ids as with --ids
        done = subprocess.run([str(BINARY), "run", out, "--max-new-tokens", "60", "--temperature", "2", "--seed", "7",
                               "--print-ids", "--ids", ",".join(str(chars.index(c)) for c in "ROMEO:\n")],
                              capture_output=True, text=True)
        self.assertEqual([int(i) for i in done.stdout.split(",")], ids)

    def test_from_nanogpt_gelu_tanh_is_kept(self):
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=6, n_layer=1, n_head=2, n_embd=4,
                                                gelu="tanh")), 1)
        ckpt = self.p("ckpt.pt")
        nanogpt_checkpoint(model, ckpt)
        run = self.run_cli("--from", "nanogpt", ckpt, "--gelu", "tanh", "--out", self.p("m.safetensors"))
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertNotIn("gelu not given", run.stdout)
        self.assertEqual(json.loads(safetensors_io.read(self.p("m.safetensors"))[1]["config"])["activation"],
                         "gelu_tanh")

    def test_from_each_family_writes_and_checks(self):
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=12, vocab_size=9, n_layer=2, n_head=2, n_embd=8,
                                                bias=False)), 2)
        ckpt = self.p("ckpt.pt")
        nanogpt_checkpoint(model, ckpt, compiled=True)
        mingpt = randomise(gpt.GPT(gpt.GPTConfig(block_size=12, vocab_size=9, n_layer=2, n_head=2, n_embd=8,
                                                 gelu="tanh", tie=False)), 3)
        state = self.p("mingpt.pt")
        torch.save(mingpt.state_dict(), state)
        hf = randomise(hf_gpt2.GPT2LMHead(hf_gpt2.GPT2Config(vocab_size=9, n_positions=12, n_embd=8, n_layer=2,
                                                             n_head=2)), 4)
        folder = self.p("hf")
        hf_gpt2.save_folder(hf, folder)
        for args in (["nanogpt", ckpt, "--gelu", "exact"], ["mingpt", state, "--n-head", "2"], ["hf-gpt2", folder]):
            with self.subTest(family=args[0]):
                out = self.p(f"{args[0]}.safetensors")
                run = self.run_cli("--from", args[0], args[1], *args[2:], "--out", out)
                self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
                self.assertTrue(os.path.exists(out))


class GenerateTheNanoGPTWay(unittest.TestCase):
    def test_context_is_cropped_to_block_size(self):
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=6, vocab_size=7, n_layer=1, n_head=1, n_embd=4)), 50)
        start = torch.tensor([[1, 2, 3]])
        out = model.generate(start, 10, do_sample=False)
        self.assertEqual(list(out.shape), [1, 13])
        # step by step by hand: argmax of the last position over the last 6 tokens
        seq = [1, 2, 3]
        with torch.no_grad():
            for _ in range(10):
                seq.append(int(model(torch.tensor([seq[-6:]]))[0, -1].argmax()))
        self.assertEqual(out[0].tolist(), seq)

    def test_top_k_one_is_greedy(self):
        model = randomise(gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=7, n_layer=1, n_head=1, n_embd=4)), 51)
        start = torch.tensor([[1, 2]])
        g = torch.Generator().manual_seed(0)
        self.assertTrue(torch.equal(model.generate(start, 5, top_k=1, generator=g),
                                    model.generate(start, 5, do_sample=False)))


if __name__ == "__main__":
    if not BINARY.exists():
        sys.exit(f"{BINARY} is missing: run make build/tinyformer first")
    unittest.main()
