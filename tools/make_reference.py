#!/usr/bin/python3
"""Make the PyTorch reference files that tinyformer's parity tests compare with.

For every case this builds the reference module of docs/FORMAT.md from stock
PyTorch modules (nn.Transformer(batch_first=True), or nn.TransformerEncoder of
nn.TransformerEncoderLayer(batch_first=True)), gives it seeded random weights,
runs it in float32 and writes three safetensors files:

    CASE.model.safetensors     the checkpoint (FORMAT.md section 1)
    CASE.inputs.safetensors    the inputs of `tinyformer forward` (section 2)
    CASE.expected.safetensors  PyTorch's outputs, named as `forward` names them

Then it reads every file back and checks it (names, shapes, dtypes, config keys,
byte layout) against FORMAT.md, and recomputes the outputs from the files alone
with an independent float64 numpy implementation of FORMAT.md's forward
semantics (`spec_forward`), which must agree with PyTorch within the parity
tolerance at every non-padding position.

Run with Debian's PyTorch (python3-torch), from the repository root:
    /usr/bin/python3 tools/make_reference.py            # all cases + README
    /usr/bin/python3 tools/make_reference.py --list
    /usr/bin/python3 tools/make_reference.py --case NAME [--case NAME2]
    /usr/bin/python3 tools/make_reference.py --check    # only verify the files
    /usr/bin/python3 tools/make_reference.py --out DIR  # instead of data/reference
The output is deterministic: running it twice gives byte-identical files.
"""

import argparse
import json
import math
import os
import sys
import zlib
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import safetensors_io as st  # noqa: E402
from torch_modules import Capture, NoFastPath, build_module, sinusoidal_table  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "data" / "reference"
FORMAT_TAG = "tinyformer/1"
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2
FIRST_WORD_ID = 3           # ids of ordinary tokens are drawn from [3, vocab)
ATOL = RTOL = 1e-4          # FORMAT.md: |a-b| <= 1e-4 + 1e-4*|b|
SPEC_MAX_RATIO = 0.05       # the float64 spec model must agree far inside the tolerance

# ----------------------------------------------------------------------------
# The cases. Padding of a row is (left, right): that many padded positions at
# the start / end. "covers" lists what the case is there for (README table).
# ----------------------------------------------------------------------------


def _ed(name, covers, *, d, h, ff, enc, dec, src_vocab, tgt_vocab, max_len, norm_first, act, pos,
        embed_scale, eps=1e-5, src_pad, tgt_pad, src_len, tgt_len, storage="F32"):
    cfg = {
        "format": FORMAT_TAG, "arch": "encoder_decoder",
        "d_model": d, "nhead": h, "dim_feedforward": ff,
        "num_encoder_layers": enc, "num_decoder_layers": dec,
        "activation": act, "norm_first": norm_first, "layer_norm_eps": eps,
        "src_vocab_size": src_vocab, "tgt_vocab_size": tgt_vocab, "max_len": max_len,
        "pos_encoding": pos, "embed_scale": embed_scale,
        "pad_id": PAD_ID, "bos_id": BOS_ID, "eos_id": EOS_ID,
    }
    return {"name": name, "covers": covers, "config": cfg, "storage": storage, "vocab": None,
            "src_len": src_len, "tgt_len": tgt_len, "src_pad": src_pad, "tgt_pad": tgt_pad}


def _single(name, covers, *, arch, attention, d, h, ff, layers, vocab_size, max_len, norm_first, act,
            pos, embed_scale, final_norm, eps=1e-5, length, pad, prefix_len=None, storage="F32",
            vocab=None):
    cfg = {
        "format": FORMAT_TAG, "arch": arch,
        "d_model": d, "nhead": h, "dim_feedforward": ff, "num_layers": layers,
        "activation": act, "norm_first": norm_first, "layer_norm_eps": eps, "final_norm": final_norm,
        "vocab_size": vocab_size, "max_len": max_len, "pos_encoding": pos, "embed_scale": embed_scale,
        "attention": attention, "pad_id": PAD_ID, "bos_id": BOS_ID, "eos_id": EOS_ID,
    }
    return {"name": name, "covers": covers, "config": cfg, "storage": storage, "vocab": vocab,
            "length": length, "pad": pad, "prefix_len": prefix_len}


def _toy_vocab(n):
    words = ["<pad>", "<bos>", "<eos>"]
    words += [chr(ord("a") + i) if i < 26 else f"w{i}" for i in range(n - 3)]
    return words


CASES = [
    _ed("ed_post_relu_sin",
        "encoder_decoder, post-LN, ReLU, sinusoidal, embed_scale, no padding, S != T",
        d=16, h=4, ff=32, enc=2, dec=2, src_vocab=13, tgt_vocab=11, max_len=16,
        norm_first=False, act="relu", pos="sinusoidal", embed_scale=True,
        src_len=7, tgt_len=5, src_pad=[(0, 0)] * 2, tgt_pad=[(0, 0)] * 2),
    _ed("ed_pre_gelu_learned_pad",
        "encoder_decoder, pre-LN, GELU, learned positions (max_len > S, T), 6 heads, "
        "source and target padding, 2 encoder / 1 decoder layers",
        d=24, h=6, ff=40, enc=2, dec=1, src_vocab=15, tgt_vocab=12, max_len=12,
        norm_first=True, act="gelu", pos="learned", embed_scale=False,
        src_len=9, tgt_len=6, src_pad=[(0, 0), (0, 3), (0, 5)], tgt_pad=[(0, 0), (0, 2), (0, 1)]),
    _ed("ed_post_gelu_none_h1_srcpad",
        "encoder_decoder, post-LN, GELU, no positional encoding, single head, layer_norm_eps 1e-6, "
        "source padding only (no tgt_key_padding_mask input), 1 encoder / 2 decoder layers, T > S",
        d=8, h=1, ff=16, enc=1, dec=2, src_vocab=10, tgt_vocab=10, max_len=8,
        norm_first=False, act="gelu", pos="none", embed_scale=True, eps=1e-6,
        src_len=5, tgt_len=8, src_pad=[(0, 2), (0, 0)], tgt_pad=[(0, 0), (0, 0)]),
    _single("do_post_relu_sin_h1",
            "decoder_only causal, post-LN, ReLU, sinusoidal, single head, no final norm, "
            "embed_scale, no padding, config with a vocab list",
            arch="decoder_only", attention="causal", d=16, h=1, ff=32, layers=2, vocab_size=20,
            max_len=8, norm_first=False, act="relu", pos="sinusoidal", embed_scale=True,
            final_norm=False, length=8, pad=[(0, 0)] * 2, vocab=_toy_vocab(20)),
    _single("do_pre_gelu_learned_pad",
            "decoder_only causal, pre-LN, GELU, learned positions, 8 heads (head dim 4), "
            "final norm, right padding",
            arch="decoder_only", attention="causal", d=32, h=8, ff=64, layers=2, vocab_size=17,
            max_len=16, norm_first=True, act="gelu", pos="learned", embed_scale=False,
            final_norm=True, length=10, pad=[(0, 0), (0, 4), (0, 1)]),
    _single("do_pre_relu_none_leftpad",
            "decoder_only causal, pre-LN, ReLU, no positional encoding, LEFT padding "
            "(queries with every key masked; see the NaN note), right padding, 2 layers",
            arch="decoder_only", attention="causal", d=16, h=4, ff=24, layers=2, vocab_size=12,
            max_len=8, norm_first=True, act="relu", pos="none", embed_scale=True,
            final_norm=True, length=7, pad=[(3, 0), (0, 2), (0, 0)]),
    _single("do_prefix_pre_gelu_sin",
            "decoder_only prefix_lm, prefix lengths 0, 3 and T (= all) in one batch, pre-LN, "
            "GELU, sinusoidal, no padding",
            arch="decoder_only", attention="prefix_lm", d=16, h=4, ff=32, layers=2, vocab_size=14,
            max_len=8, norm_first=True, act="gelu", pos="sinusoidal", embed_scale=False,
            final_norm=True, length=6, pad=[(0, 0)] * 3, prefix_len=[0, 3, 6]),
    _single("do_prefix_post_relu_learned_pad",
            "decoder_only prefix_lm with right padding, prefix lengths 2, 5, 1, post-LN, ReLU, "
            "learned positions, 3 heads, 1 layer, no final norm",
            arch="decoder_only", attention="prefix_lm", d=12, h=3, ff=20, layers=1, vocab_size=16,
            max_len=10, norm_first=False, act="relu", pos="learned", embed_scale=True,
            final_norm=False, length=9, pad=[(0, 0), (0, 3), (0, 2)], prefix_len=[2, 5, 1]),
    _single("eo_post_relu_learned_h1",
            "encoder_only bidirectional, post-LN, ReLU, learned positions, single head, "
            "no final norm, no padding",
            arch="encoder_only", attention="bidirectional", d=8, h=1, ff=16, layers=2, vocab_size=9,
            max_len=8, norm_first=False, act="relu", pos="learned", embed_scale=True,
            final_norm=False, length=5, pad=[(0, 0)] * 2),
    _single("eo_pre_gelu_sin_pad",
            "encoder_only bidirectional, pre-LN, GELU, sinusoidal, 8 heads, final norm, "
            "layer_norm_eps 1e-6, right padding",
            arch="encoder_only", attention="bidirectional", d=32, h=8, ff=48, layers=2, vocab_size=14,
            max_len=12, norm_first=True, act="gelu", pos="sinusoidal", embed_scale=False,
            final_norm=True, eps=1e-6, length=11, pad=[(0, 0), (0, 5), (0, 2)]),
    _single("eo_post_gelu_none_pad",
            "encoder_only bidirectional, post-LN, GELU, no positional encoding, 2 heads, "
            "final norm, 1 layer, right padding",
            arch="encoder_only", attention="bidirectional", d=16, h=2, ff=32, layers=1, vocab_size=10,
            max_len=4, norm_first=False, act="gelu", pos="none", embed_scale=True,
            final_norm=True, length=4, pad=[(0, 1), (0, 0)]),
    _single("do_post_gelu_learned_bf16",
            "BF16 storage (weights rounded to BF16 before PyTorch runs), decoder_only causal, "
            "post-LN, GELU, learned positions, final norm, right padding",
            arch="decoder_only", attention="causal", d=16, h=4, ff=32, layers=1, vocab_size=11,
            max_len=6, norm_first=False, act="gelu", pos="learned", embed_scale=True,
            final_norm=True, length=6, pad=[(0, 0), (0, 2)], storage="BF16"),
    _single("do_d256_f16",
            "d_model 256, sequences of 100 and 93 (+7 padding), F16 storage (weights rounded to F16 "
            "before PyTorch runs), decoder_only causal, pre-LN, GELU, sinusoidal, 4 heads, final norm",
            arch="decoder_only", attention="causal", d=256, h=4, ff=512, layers=2, vocab_size=64,
            max_len=128, norm_first=True, act="gelu", pos="sinusoidal", embed_scale=True,
            final_norm=True, length=100, pad=[(0, 0), (0, 7)], storage="F16"),
]
CASE_BY_NAME = {c["name"]: c for c in CASES}

# ----------------------------------------------------------------------------
# What FORMAT.md requires, written down independently of the modules below.
# ----------------------------------------------------------------------------

CONFIG_KEYS_COMMON = {
    "format": str, "arch": str, "d_model": int, "nhead": int, "dim_feedforward": int,
    "activation": str, "norm_first": bool, "layer_norm_eps": float, "max_len": int,
    "pos_encoding": str, "embed_scale": bool, "pad_id": int, "bos_id": int, "eos_id": int,
}
CONFIG_KEYS = {
    "encoder_decoder": {**CONFIG_KEYS_COMMON, "num_encoder_layers": int, "num_decoder_layers": int,
                        "src_vocab_size": int, "tgt_vocab_size": int},
    "decoder_only": {**CONFIG_KEYS_COMMON, "num_layers": int, "final_norm": bool, "vocab_size": int,
                     "attention": str},
}
CONFIG_KEYS["encoder_only"] = CONFIG_KEYS["decoder_only"]


def format_tensor_shapes(cfg):
    """{tensor name: shape} of a checkpoint, from FORMAT.md's table."""
    d, ff = cfg["d_model"], cfg["dim_feedforward"]
    out = {}

    def attn(p):
        out[p + ".in_proj_weight"] = [3 * d, d]
        out[p + ".in_proj_bias"] = [3 * d]
        out[p + ".out_proj.weight"] = [d, d]
        out[p + ".out_proj.bias"] = [d]

    def ffn_norms(p, norms):
        out[p + ".linear1.weight"] = [ff, d]
        out[p + ".linear1.bias"] = [ff]
        out[p + ".linear2.weight"] = [d, ff]
        out[p + ".linear2.bias"] = [d]
        for n in norms:
            out[f"{p}.{n}.weight"] = [d]
            out[f"{p}.{n}.bias"] = [d]

    if cfg["pos_encoding"] == "learned":
        out["pos_embed.weight"] = [cfg["max_len"], d]
    if cfg["arch"] == "encoder_decoder":
        out["src_embed.weight"] = [cfg["src_vocab_size"], d]
        out["tgt_embed.weight"] = [cfg["tgt_vocab_size"], d]
        for i in range(cfg["num_encoder_layers"]):
            attn(f"transformer.encoder.layers.{i}.self_attn")
            ffn_norms(f"transformer.encoder.layers.{i}", ["norm1", "norm2"])
        for i in range(cfg["num_decoder_layers"]):
            attn(f"transformer.decoder.layers.{i}.self_attn")
            attn(f"transformer.decoder.layers.{i}.multihead_attn")
            ffn_norms(f"transformer.decoder.layers.{i}", ["norm1", "norm2", "norm3"])
        for p in ["transformer.encoder.norm", "transformer.decoder.norm"]:
            out[p + ".weight"] = [d]
            out[p + ".bias"] = [d]
        out["generator.weight"] = [cfg["tgt_vocab_size"], d]
        out["generator.bias"] = [cfg["tgt_vocab_size"]]
    else:
        out["embed.weight"] = [cfg["vocab_size"], d]
        for i in range(cfg["num_layers"]):
            attn(f"transformer.layers.{i}.self_attn")
            ffn_norms(f"transformer.layers.{i}", ["norm1", "norm2"])
        if cfg["final_norm"]:
            out["transformer.norm.weight"] = [d]
            out["transformer.norm.bias"] = [d]
        out["lm_head.weight"] = [cfg["vocab_size"], d]
        out["lm_head.bias"] = [cfg["vocab_size"]]
    return out


def format_input_specs(case):
    """{input name: (dtype, shape)} this case's inputs file must hold."""
    cfg = case["config"]
    if cfg["arch"] == "encoder_decoder":
        b, s, t = len(case["src_pad"]), case["src_len"], case["tgt_len"]
        out = {"src_ids": ("I64", [b, s]), "tgt_ids": ("I64", [b, t])}
        if any(l or r for l, r in case["src_pad"]):
            out["src_key_padding_mask"] = ("BOOL", [b, s])
        if any(l or r for l, r in case["tgt_pad"]):
            out["tgt_key_padding_mask"] = ("BOOL", [b, t])
        return out
    b, t = len(case["pad"]), case["length"]
    out = {"ids": ("I64", [b, t])}
    if any(l or r for l, r in case["pad"]):
        out["key_padding_mask"] = ("BOOL", [b, t])
    if cfg["attention"] == "prefix_lm":
        out["prefix_len"] = ("I64", [b])
    return out


def format_output_shapes(case):
    """{output name: shape} of `forward --attention` (all F32)."""
    cfg = case["config"]
    h = cfg["nhead"]
    if cfg["arch"] == "encoder_decoder":
        b, s, t = len(case["src_pad"]), case["src_len"], case["tgt_len"]
        out = {"logits": [b, t, cfg["tgt_vocab_size"]]}
        for i in range(cfg["num_encoder_layers"]):
            out[f"attention.encoder.{i}"] = [b, h, s, s]
        for i in range(cfg["num_decoder_layers"]):
            out[f"attention.decoder.{i}.self"] = [b, h, t, t]
            out[f"attention.decoder.{i}.cross"] = [b, h, t, s]
        return out
    b, t = len(case["pad"]), case["length"]
    out = {"logits": [b, t, cfg["vocab_size"]]}
    for i in range(cfg["num_layers"]):
        out[f"attention.layers.{i}"] = [b, h, t, t]
    return out


def randomize_(module, seed):
    """Seeded random weights for every parameter, so that no two layers share
    weights (nn.TransformerEncoder deep-copies one layer) and LayerNorm scales
    and all biases are non-trivial. Projection weights have variance 1/fan_in."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, mod in sorted(module.named_modules(), key=lambda kv: kv[0]):
            if isinstance(mod, nn.Embedding):
                mod.weight.copy_(torch.randn(mod.weight.shape, generator=gen))
            elif isinstance(mod, nn.LayerNorm):
                mod.weight.copy_(1 + 0.2 * torch.randn(mod.weight.shape, generator=gen))
                mod.bias.copy_(0.1 * torch.randn(mod.bias.shape, generator=gen))
            elif isinstance(mod, nn.Linear):
                bound = math.sqrt(3.0 / mod.in_features)
                mod.weight.copy_((torch.rand(mod.weight.shape, generator=gen) * 2 - 1) * bound)
                mod.bias.copy_(0.1 * torch.randn(mod.bias.shape, generator=gen))
            elif isinstance(mod, nn.MultiheadAttention):  # out_proj is an nn.Linear, done above
                bound = math.sqrt(3.0 / mod.embed_dim)
                mod.in_proj_weight.copy_((torch.rand(mod.in_proj_weight.shape, generator=gen) * 2 - 1) * bound)
                mod.in_proj_bias.copy_(0.1 * torch.randn(mod.in_proj_bias.shape, generator=gen))


def round_to_storage_(module, storage):
    """Round every parameter to the storage dtype's precision (kept as float32),
    so PyTorch computes with exactly the values the file holds."""
    dtype = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[storage]
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(p.to(dtype).to(torch.float32))


# ----------------------------------------------------------------------------
# Making one case
# ----------------------------------------------------------------------------


def case_seed(name):
    return zlib.crc32(name.encode())


def padding_mask(pads, length):
    mask = torch.zeros(len(pads), length, dtype=torch.bool)
    for b, (left, right) in enumerate(pads):
        assert left + right < length, "every row keeps at least one token"
        mask[b, :left] = True
        mask[b, length - right:] = True
    return mask


def token_ids(gen, mask, vocab_size, bos):
    b, t = mask.shape
    ids = torch.randint(FIRST_WORD_ID, vocab_size, (b, t), generator=gen)
    if bos:
        for row in range(b):
            first = int((~mask[row]).nonzero()[0])
            ids[row, first] = BOS_ID
    return ids.masked_fill(mask, PAD_ID)


def make_inputs(case):
    """Model inputs as torch tensors, in the names of FORMAT.md section 2."""
    cfg = case["config"]
    gen = torch.Generator().manual_seed(case_seed(case["name"]) + 1)
    specs = format_input_specs(case)
    inputs = {}
    if cfg["arch"] == "encoder_decoder":
        src_mask = padding_mask(case["src_pad"], case["src_len"])
        tgt_mask = padding_mask(case["tgt_pad"], case["tgt_len"])
        inputs["src_ids"] = token_ids(gen, src_mask, cfg["src_vocab_size"], bos=False)
        inputs["tgt_ids"] = token_ids(gen, tgt_mask, cfg["tgt_vocab_size"], bos=True)
        if "src_key_padding_mask" in specs:
            inputs["src_key_padding_mask"] = src_mask
        if "tgt_key_padding_mask" in specs:
            inputs["tgt_key_padding_mask"] = tgt_mask
    else:
        mask = padding_mask(case["pad"], case["length"])
        inputs["ids"] = token_ids(gen, mask, cfg["vocab_size"], bos=cfg["arch"] == "decoder_only")
        if "key_padding_mask" in specs:
            inputs["key_padding_mask"] = mask
        if cfg["attention"] == "prefix_lm":
            inputs["prefix_len"] = torch.tensor(case["prefix_len"], dtype=torch.int64)
    return inputs


def query_padding(case, inputs):
    """{output name: [B, L] bool, True = padded query} for logits and attention."""
    cfg = case["config"]
    out = {}
    if cfg["arch"] == "encoder_decoder":
        src = inputs.get("src_key_padding_mask", torch.zeros_like(inputs["src_ids"], dtype=torch.bool))
        tgt = inputs.get("tgt_key_padding_mask", torch.zeros_like(inputs["tgt_ids"], dtype=torch.bool))
        out["logits"] = tgt
        for i in range(cfg["num_encoder_layers"]):
            out[f"attention.encoder.{i}"] = src
        for i in range(cfg["num_decoder_layers"]):
            out[f"attention.decoder.{i}.self"] = tgt
            out[f"attention.decoder.{i}.cross"] = tgt
    else:
        pad = inputs.get("key_padding_mask", torch.zeros_like(inputs["ids"], dtype=torch.bool))
        out["logits"] = pad
        for i in range(cfg["num_layers"]):
            out[f"attention.layers.{i}"] = pad
    return out


def run_reference(module, cfg, inputs, capture=None, sanitize=False):
    """logits (and captured attention) with PyTorch's plain (non-fused) path,
    grad enabled (another guard against the fast path)."""
    cap = Capture(module, cfg, sanitize) if capture else None
    try:
        with NoFastPath(), torch.enable_grad():
            logits = module(**inputs)
    finally:
        if cap:
            cap.remove()
    return logits.detach(), cap


def same_bits(a, b):
    """Bitwise equality, NaN equal to NaN."""
    return a.shape == b.shape and bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())


def make_case(case, out_dir):
    cfg = case["config"]
    torch.manual_seed(case_seed(case["name"]))   # only PyTorch's own init, overwritten below
    module = build_module(cfg)
    randomize_(module, case_seed(case["name"]))
    round_to_storage_(module, case["storage"])
    module.eval()
    for p in module.parameters():
        assert p.requires_grad

    names = set(module.state_dict())
    spec = format_tensor_shapes(cfg)
    if names != set(spec):
        raise RuntimeError(f"{case['name']}: state_dict names differ from FORMAT.md: "
                           f"extra {sorted(names - set(spec))}, missing {sorted(set(spec) - names)}")

    inputs = make_inputs(case)
    plain, _ = run_reference(module, cfg, inputs)
    passthrough, _ = run_reference(module, cfg, inputs, capture=True, sanitize=False)
    if not same_bits(plain, passthrough):
        raise RuntimeError(f"{case['name']}: capturing the attention weights changed the logits")
    logits, cap = run_reference(module, cfg, inputs, capture=True, sanitize=True)
    finite = torch.isfinite(plain)
    if not cap.fully_masked and not same_bits(plain, logits):
        raise RuntimeError(f"{case['name']}: sanitizing changed logits although no row was fully masked")
    if not torch.equal(plain[finite], logits[finite]):
        raise RuntimeError(f"{case['name']}: sanitizing changed finite logits")

    qpad = query_padding(case, inputs)
    outputs = {"logits": logits, **cap.weights}
    expected = {}
    for name, value in outputs.items():
        value = value.to(torch.float32).clone()
        bad = ~torch.isfinite(value)
        pad = qpad[name]
        pad_full = pad[:, :, None] if name == "logits" else pad[:, None, :, None]
        if (bad & ~pad_full).any():
            raise RuntimeError(f"{case['name']}: {name} is not finite at a non-padding position")
        expected[name] = value.masked_fill(bad, 0.0)

    stock_nan_nonpad = int((~finite & ~qpad["logits"][:, :, None]).any(-1).sum())
    info = {"fully_masked": {k: v for k, v in sorted(cap.fully_masked.items())},
            "stock_nan_nonpad_positions": stock_nan_nonpad}

    # the checkpoint
    state = module.state_dict()
    storage_dtype = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[case["storage"]]
    tensors = {}
    for name, t in state.items():
        stored = t.detach().to(storage_dtype)
        assert torch.equal(stored.to(torch.float32), t), f"{name} is not exactly representable"
        tensors[name] = stored
    metadata = {"config": json.dumps(cfg, sort_keys=True, separators=(",", ":"))}
    if case["vocab"] is not None:
        metadata["vocab"] = json.dumps(case["vocab"], separators=(",", ":"))
    stem = out_dir / case["name"]
    st.write(f"{stem}.model.safetensors", tensors, metadata)
    st.write(f"{stem}.inputs.safetensors", inputs, {"case": case["name"]})
    st.write(f"{stem}.expected.safetensors", expected,
             {"case": case["name"], "generator": "tools/make_reference.py", "torch": torch.__version__})
    return info


# ----------------------------------------------------------------------------
# Independent float64 model of FORMAT.md's forward semantics (numpy only)
# ----------------------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def spec_forward(cfg, w, inputs):
    """Outputs of `forward --attention` as FORMAT.md defines them, in float64,
    from the checkpoint tensors `w` and input arrays. Padded queries get
    exactly 0 (attention rows and logits), as tinyformer gives them.
    Returns (outputs, {output name: [B, L] True = padded query})."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    d, h, eps = cfg["d_model"], cfg["nhead"], cfg["layer_norm_eps"]
    dh = d // h

    def linear(x, p):
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    def layer_norm(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w[p + ".weight"] + w[p + ".bias"]

    def act(x):
        return np.maximum(x, 0) if cfg["activation"] == "relu" else 0.5 * x * (1 + _erf(x / math.sqrt(2)))

    def embed(table, ids):
        t = ids.shape[1]
        x = w[table][ids] * (math.sqrt(d) if cfg["embed_scale"] else 1.0)
        if cfg["pos_encoding"] == "learned":
            x = x + w["pos_embed.weight"][:t]
        elif cfg["pos_encoding"] == "sinusoidal":
            x = x + sinusoidal_table(t, d)
        return x

    def mha(p, xq, xkv, allowed, qpad):
        """allowed [B, L, S] True = query may see key; qpad [B, L] True = padded query."""
        wi, bi = w[p + ".in_proj_weight"], w[p + ".in_proj_bias"]
        q = xq @ wi[:d].T + bi[:d]
        k = xkv @ wi[d:2 * d].T + bi[d:2 * d]
        v = xkv @ wi[2 * d:].T + bi[2 * d:]
        b, l, s = q.shape[0], q.shape[1], k.shape[1]
        q = q.reshape(b, l, h, dh).transpose(0, 2, 1, 3)
        k = k.reshape(b, s, h, dh).transpose(0, 2, 1, 3)
        v = v.reshape(b, s, h, dh).transpose(0, 2, 1, 3)
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh)
        ok = np.broadcast_to(allowed[:, None], scores.shape)
        empty = ~allowed.any(-1)
        if (empty & ~qpad).any():
            raise RuntimeError(f"{p}: a non-padded query sees no key")
        scores = np.where(ok, scores, -np.inf)
        row_max = np.where(empty[:, None, :, None], 0.0, scores.max(-1, keepdims=True))
        e = np.where(ok, np.exp(scores - row_max), 0.0)
        total = e.sum(-1, keepdims=True)
        weights = np.where(empty[:, None, :, None], 0.0, e / np.where(total == 0, 1, total))
        weights = np.where(qpad[:, None, :, None], 0.0, weights)
        o = (weights @ v).transpose(0, 2, 1, 3).reshape(b, l, d)
        return linear(o, p + ".out_proj"), weights

    def ffn(x, p):
        return linear(act(linear(x, p + ".linear1")), p + ".linear2")

    def encoder_layer(x, p, allowed, pad):
        if cfg["norm_first"]:
            a, wt = mha(p + ".self_attn", layer_norm(x, p + ".norm1"), layer_norm(x, p + ".norm1"), allowed, pad)
            x = x + a
            x = x + ffn(layer_norm(x, p + ".norm2"), p)
        else:
            a, wt = mha(p + ".self_attn", x, x, allowed, pad)
            x = layer_norm(x + a, p + ".norm1")
            x = layer_norm(x + ffn(x, p), p + ".norm2")
        return x, wt

    def decoder_layer(x, mem, p, self_allowed, cross_allowed, pad):
        if cfg["norm_first"]:
            y = layer_norm(x, p + ".norm1")
            a, ws = mha(p + ".self_attn", y, y, self_allowed, pad)
            x = x + a
            a, wc = mha(p + ".multihead_attn", layer_norm(x, p + ".norm2"), mem, cross_allowed, pad)
            x = x + a
            x = x + ffn(layer_norm(x, p + ".norm3"), p)
        else:
            a, ws = mha(p + ".self_attn", x, x, self_allowed, pad)
            x = layer_norm(x + a, p + ".norm1")
            a, wc = mha(p + ".multihead_attn", x, mem, cross_allowed, pad)
            x = layer_norm(x + a, p + ".norm2")
            x = layer_norm(x + ffn(x, p), p + ".norm3")
        return x, ws, wc

    out = {}
    if cfg["arch"] == "encoder_decoder":
        src, tgt = inputs["src_ids"].astype(np.int64), inputs["tgt_ids"].astype(np.int64)
        b, s, t = src.shape[0], src.shape[1], tgt.shape[1]
        spad = inputs.get("src_key_padding_mask", np.zeros((b, s), bool)).astype(bool)
        tpad = inputs.get("tgt_key_padding_mask", np.zeros((b, t), bool)).astype(bool)
        enc_allowed = np.broadcast_to(~spad[:, None, :], (b, s, s))
        causal = np.tril(np.ones((t, t), bool))
        dec_allowed = causal[None] & ~tpad[:, None, :]
        cross_allowed = np.broadcast_to(~spad[:, None, :], (b, t, s))
        x = embed("src_embed.weight", src)
        for i in range(cfg["num_encoder_layers"]):
            x, out[f"attention.encoder.{i}"] = encoder_layer(x, f"transformer.encoder.layers.{i}", enc_allowed, spad)
        mem = layer_norm(x, "transformer.encoder.norm")
        y = embed("tgt_embed.weight", tgt)
        for i in range(cfg["num_decoder_layers"]):
            y, out[f"attention.decoder.{i}.self"], out[f"attention.decoder.{i}.cross"] = decoder_layer(
                y, mem, f"transformer.decoder.layers.{i}", dec_allowed, cross_allowed, tpad)
        y = layer_norm(y, "transformer.decoder.norm")
        logits = linear(y, "generator")
        qpad = tpad
        qpads = {k: (spad if k.startswith("attention.encoder.") else tpad) for k in out}
    else:
        ids = inputs["ids"].astype(np.int64)
        b, t = ids.shape
        pad = inputs.get("key_padding_mask", np.zeros((b, t), bool)).astype(bool)
        i, j = np.arange(t)[:, None], np.arange(t)[None, :]
        if cfg["attention"] == "causal":
            allowed = np.broadcast_to((j <= i)[None], (b, t, t))
        elif cfg["attention"] == "prefix_lm":
            prefix = inputs["prefix_len"].astype(np.int64)
            allowed = (j[None] < prefix[:, None, None]) | (j <= i)[None]
        else:
            allowed = np.ones((b, t, t), bool)
        allowed = allowed & ~pad[:, None, :]
        x = embed("embed.weight", ids)
        for n in range(cfg["num_layers"]):
            x, out[f"attention.layers.{n}"] = encoder_layer(x, f"transformer.layers.{n}", allowed, pad)
        if cfg["final_norm"]:
            x = layer_norm(x, "transformer.norm")
        logits = linear(x, "lm_head")
        qpad = pad
        qpads = {k: pad for k in out}
    out["logits"] = np.where(qpad[:, :, None], 0.0, logits)
    qpads["logits"] = qpad
    return out, qpads


# ----------------------------------------------------------------------------
# Self-check: read the files back and hold them against FORMAT.md
# ----------------------------------------------------------------------------


def _check_layout(path):
    """The writer's promises: sorted header, 8-aligned data start, aligned tensors."""
    with open(path, "rb") as f:
        buf = f.read()
    entries, _, start = st.parse_header(buf)
    raw = json.loads(buf[8:start].decode())
    keys = [k for k in raw if k != "__metadata__"]
    assert keys == sorted(keys), f"{path}: header not sorted by name"
    assert start % 8 == 0, f"{path}: data does not start at a multiple of 8"
    for name, e in entries.items():
        assert e["data_offsets"][0] % st.DTYPES[e["dtype"]].itemsize == 0, f"{path}: {name} misaligned"
    return entries


def check_case(case, out_dir):
    """Raises on any mismatch with FORMAT.md; returns a summary dict."""
    name, cfg = case["name"], case["config"]
    stem = out_dir / name
    # checkpoint
    path = f"{stem}.model.safetensors"
    entries = _check_layout(path)
    w, meta = st.read(path)
    assert set(meta) <= {"config", "vocab"} and "config" in meta, f"{path}: metadata keys {sorted(meta)}"
    file_cfg = json.loads(meta["config"])
    wanted = CONFIG_KEYS[file_cfg.get("arch")]
    assert set(file_cfg) == set(wanted), f"{path}: config keys {sorted(set(file_cfg) ^ set(wanted))} differ"
    for k, typ in wanted.items():
        v = file_cfg[k]
        ok = isinstance(v, typ) and not (typ is int and isinstance(v, bool))
        assert ok, f"{path}: config {k} = {v!r} is not {typ.__name__}"
    assert file_cfg == cfg
    assert file_cfg["format"] == FORMAT_TAG
    assert file_cfg["activation"] in ("relu", "gelu")
    assert file_cfg["pos_encoding"] in ("sinusoidal", "learned", "none")
    assert file_cfg["d_model"] % file_cfg["nhead"] == 0
    if file_cfg["arch"] == "decoder_only":
        assert file_cfg["attention"] in ("causal", "prefix_lm")
    elif file_cfg["arch"] == "encoder_only":
        assert file_cfg["attention"] == "bidirectional"
    if "vocab" in meta:
        vocab = json.loads(meta["vocab"])
        assert isinstance(vocab, list) and all(isinstance(s, str) for s in vocab)
        assert len(vocab) == file_cfg["vocab_size"], f"{path}: vocab has {len(vocab)} entries"
    shapes = format_tensor_shapes(file_cfg)
    assert set(entries) == set(shapes), f"{path}: tensors {sorted(set(entries) ^ set(shapes))} differ"
    for t, e in entries.items():
        assert e["shape"] == shapes[t], f"{path}: {t} shape {e['shape']} != {shapes[t]}"
        assert e["dtype"] == case["storage"], f"{path}: {t} dtype {e['dtype']}"
        assert np.isfinite(w[t]).all(), f"{path}: {t} not finite"
    # inputs
    path = f"{stem}.inputs.safetensors"
    entries = _check_layout(path)
    inputs, _ = st.read(path)
    specs = format_input_specs(case)
    assert set(entries) == set(specs), f"{path}: inputs {sorted(set(entries) ^ set(specs))} differ"
    for t, (dtype, shape) in specs.items():
        assert entries[t]["dtype"] == dtype and entries[t]["shape"] == shape, f"{path}: {t} is {entries[t]}"
    for ids_name, vocab_key in [("src_ids", "src_vocab_size"), ("tgt_ids", "tgt_vocab_size"), ("ids", "vocab_size")]:
        if ids_name in inputs:
            assert 0 <= inputs[ids_name].min() and inputs[ids_name].max() < file_cfg[vocab_key]
            t = inputs[ids_name].shape[1]
            assert t <= file_cfg["max_len"], f"{path}: length {t} > max_len"
    if "prefix_len" in inputs:
        assert ((0 <= inputs["prefix_len"]) & (inputs["prefix_len"] <= inputs["ids"].shape[1])).all()
    # expected outputs
    path = f"{stem}.expected.safetensors"
    entries = _check_layout(path)
    expected, _ = st.read(path)
    shapes = format_output_shapes(case)
    assert set(entries) == set(shapes), f"{path}: outputs {sorted(set(entries) ^ set(shapes))} differ"
    for t, shape in shapes.items():
        assert entries[t]["dtype"] == "F32" and entries[t]["shape"] == shape, f"{path}: {t} is {entries[t]}"
        assert np.isfinite(expected[t]).all(), f"{path}: {t} not finite"
    # the numbers, recomputed from the files alone in float64
    spec, qpads = spec_forward(file_cfg, w, inputs)
    ratios = {}
    for t, ref in spec.items():
        got = expected[t].astype(np.float64)
        qpad = qpads[t]
        keep = ~qpad[:, :, None] if t == "logits" else ~qpad[:, None, :, None]
        keep = np.broadcast_to(keep, ref.shape)
        err = np.abs(got - ref) / (ATOL + RTOL * np.abs(ref))
        ratios[t] = float(err[keep].max())
        if t != "logits":
            row_sums = got.sum(-1)[np.broadcast_to(~qpad[:, None, :], got.shape[:3])]
            assert np.allclose(row_sums, 1, atol=1e-5), f"{path}: {t} rows do not sum to 1"
    worst = max(ratios.values())
    if worst > SPEC_MAX_RATIO:
        raise RuntimeError(f"{name}: expected vs float64 spec model: error/tolerance {worst:.3g} "
                           f"({max(ratios, key=ratios.get)})")
    return {"logits_ratio": ratios["logits"],
            "attention_ratio": max(v for k, v in ratios.items() if k != "logits"),
            "logits_absmax": float(np.abs(expected["logits"]).max())}


# ----------------------------------------------------------------------------
# README
# ----------------------------------------------------------------------------


def _pads_text(pads):
    parts = []
    for left, right in pads:
        parts.append("-" if not (left or right) else "+".join(
            ([f"L{left}"] if left else []) + ([f"R{right}"] if right else [])))
    return ",".join(parts)


def case_row(case):
    c = case["config"]
    if c["arch"] == "encoder_decoder":
        arch = "encoder_decoder"
        layers = f"{c['num_encoder_layers']}+{c['num_decoder_layers']}"
        shape = f"B={len(case['src_pad'])} S={case['src_len']} T={case['tgt_len']}"
        pad = f"src {_pads_text(case['src_pad'])}; tgt {_pads_text(case['tgt_pad'])}"
        vocab = f"{c['src_vocab_size']}/{c['tgt_vocab_size']}"
        fnorm = "yes"
    else:
        arch = f"{c['arch']} ({c['attention']})"
        layers = str(c["num_layers"])
        shape = f"B={len(case['pad'])} T={case['length']}"
        pad = _pads_text(case["pad"])
        if case["prefix_len"] is not None:
            pad += f"; prefix_len {case['prefix_len']}"
        vocab = str(c["vocab_size"])
        fnorm = "yes" if c["final_norm"] else "no"
    cells = [f"`{case['name']}`", arch, "pre" if c["norm_first"] else "post", c["activation"], c["pos_encoding"],
             "yes" if c["embed_scale"] else "no", fnorm, str(c["d_model"]), str(c["nhead"]),
             str(c["dim_feedforward"]), layers, vocab, f"{c['layer_norm_eps']:g}", shape, pad, case["storage"]]
    return "| " + " | ".join(cells) + " |"


def coverage_lines():
    axes = {
        "arch encoder_decoder": lambda c, k: c["arch"] == "encoder_decoder",
        "arch decoder_only": lambda c, k: c["arch"] == "decoder_only",
        "arch encoder_only": lambda c, k: c["arch"] == "encoder_only",
        "post-LN (norm_first false)": lambda c, k: not c["norm_first"],
        "pre-LN (norm_first true)": lambda c, k: c["norm_first"],
        "relu": lambda c, k: c["activation"] == "relu",
        "gelu": lambda c, k: c["activation"] == "gelu",
        "pos sinusoidal": lambda c, k: c["pos_encoding"] == "sinusoidal",
        "pos learned": lambda c, k: c["pos_encoding"] == "learned",
        "pos none": lambda c, k: c["pos_encoding"] == "none",
        "attention causal": lambda c, k: c.get("attention") == "causal",
        "attention prefix_lm": lambda c, k: c.get("attention") == "prefix_lm",
        "attention bidirectional": lambda c, k: c.get("attention") == "bidirectional",
        "no padding": lambda c, k: not _has_padding(k),
        "right padding": lambda c, k: any(p[1] for p in _all_pads(k)),
        "left padding (fully masked query rows)": lambda c, k: any(p[0] for p in _all_pads(k)),
        "single head": lambda c, k: c["nhead"] == 1,
        "many heads (>= 4)": lambda c, k: c["nhead"] >= 4,
        "embed_scale true / false": None,
        "final_norm false (single-stack)": lambda c, k: c.get("final_norm") is False,
        "layer_norm_eps != 1e-5": lambda c, k: c["layer_norm_eps"] != 1e-5,
        "d_model 256, T about 100": lambda c, k: c["d_model"] == 256,
        "F16 storage": lambda c, k: k["storage"] == "F16",
        "BF16 storage": lambda c, k: k["storage"] == "BF16",
        "vocab in metadata": lambda c, k: k["vocab"] is not None,
    }
    lines = []
    for axis, pred in axes.items():
        if pred is None:
            on = [k["name"] for k in CASES if k["config"]["embed_scale"]]
            off = [k["name"] for k in CASES if not k["config"]["embed_scale"]]
            lines.append(f"| embed_scale true | {', '.join(f'`{n}`' for n in on)} |")
            lines.append(f"| embed_scale false | {', '.join(f'`{n}`' for n in off)} |")
            continue
        names = [k["name"] for k in CASES if pred(k["config"], k)]
        assert names, f"no case covers {axis}"
        lines.append(f"| {axis} | {', '.join(f'`{n}`' for n in names)} |")
    return lines


def _all_pads(case):
    return case["pad"] if "pad" in case else case["src_pad"] + case["tgt_pad"]


def _has_padding(case):
    return any(l or r for l, r in _all_pads(case))


def write_readme(out_dir, infos, summaries):
    rows = [case_row(c) for c in CASES]
    precision = [f"| `{c['name']}` | {summaries[c['name']]['logits_absmax']:.3g} | "
                 f"{summaries[c['name']]['logits_ratio']:.2g} | {summaries[c['name']]['attention_ratio']:.2g} |"
                 for c in CASES]
    masked = []
    for c in CASES:
        info = infos[c["name"]]
        if info["fully_masked"]:
            rows_txt = "; ".join(f"`{k}`: (b, query) {', '.join(str(r) for r in v)}"
                                 for k, v in info["fully_masked"].items())
            masked.append(f"  - `{c['name']}`: {rows_txt}. Stock PyTorch (no zeroing) gives NaN logits at "
                          f"{info['stock_nan_nonpad_positions']} non-padding positions of this batch.")
    text = f"""# PyTorch reference files

Generated by `tools/make_reference.py` — do not edit by hand. Regenerate (from
the repository root, with Debian's `python3-torch`, PyTorch {torch.__version__}) with

    /usr/bin/python3 tools/make_reference.py

which rewrites every file here, this README included, byte for byte the same
(runs are deterministic: seeded weights and inputs, one thread). `--list`
lists the cases, `--case NAME` makes one, `--out DIR` writes elsewhere,
`--check` only re-verifies the files in place.

## Files (three per case, all safetensors, see docs/FORMAT.md)

- `CASE.model.safetensors` — the checkpoint, exactly FORMAT.md section 1: the
  `state_dict()` of the reference module (stock `nn.Transformer(batch_first=True)`
  or `nn.TransformerEncoder` of `nn.TransformerEncoderLayer(batch_first=True)`,
  attributes `src_embed`/`tgt_embed`/`pos_embed`/`transformer`/`generator` or
  `embed`/`pos_embed`/`transformer`/`lm_head`), `__metadata__.config` holding every
  config key of the arch (incl. `"format": "{FORMAT_TAG}"`), and for one case a
  `vocab` list. Weights are seeded random values (projection weights with
  variance 1/fan_in, embeddings N(0,1), LayerNorm weight 1+0.2·N(0,1), every
  bias 0.1·N(0,1); no two layers alike). Stored as F32, except two cases whose
  weights were rounded to F16 / BF16 *before* PyTorch ran, so the file holds
  exactly the values PyTorch used.
- `CASE.inputs.safetensors` — the `forward` inputs, FORMAT.md section 2: ids
  as I64 (`src_ids`, `tgt_ids` or `ids`), masks as BOOL with **true = padding**
  (`src_key_padding_mask`, `tgt_key_padding_mask` or `key_padding_mask`, present
  only when the case has padding), `prefix_len` I64 `[B]` for `prefix_lm`.
  Padded positions hold `pad_id` (0). `__metadata__.case` names the case.
- `CASE.expected.safetensors` — PyTorch's float32 outputs under the names
  `tinyformer forward --attention` writes: `logits` and per-head (never
  averaged) attention weights `attention.encoder.{{i}}` `[B,H,S,S]`,
  `attention.decoder.{{i}}.self` `[B,H,T,T]`, `attention.decoder.{{i}}.cross`
  `[B,H,T,S]`, or `attention.layers.{{i}}` `[B,H,T,T]`, all F32.

## How to compare (the C++ parity test)

Run `tinyformer forward CASE.model.safetensors --inputs CASE.inputs.safetensors
--output OUT --attention` and compare OUT with `CASE.expected.safetensors`:
same names and shapes, and |a-b| <= 1e-4 + 1e-4·|b| (b = expected) **at
non-padding positions only**: for `logits [B,T,V]` the positions (b,t) that
are not padding in the target/`key_padding_mask`; for attention `[B,H,L,S]` the
query rows (b,·,l,·) whose query l is not padding (the target mask for decoder
self and cross attention, the source mask for encoder attention). At padded
positions tinyformer gives exactly 0 (FORMAT.md), while the expected file holds
whatever finite value PyTorch computed there (its padded queries still attend
to the unpadded keys) — or 0 where PyTorch's value was not finite. Weights of
padded keys are exactly 0 in both.

How the expected numbers were made:
- PyTorch's plain path only: grad enabled, `enable_nested_tensor=False`, and the
  fused kernels (`torch._transformer_encoder_layer_fwd`,
  `torch._native_multi_head_attention`, `torch._nested_tensor_from_mask`) made to
  raise if reached.
- Per-head weights: each `MultiheadAttention.forward` is wrapped to force
  `need_weights=True, average_attn_weights=False` and keep the weights. The
  script checks that the logits with and without the wrapping are bitwise
  identical (NaN = NaN).
- Masks: `encoder_decoder` uses `tgt_mask` = bool causal `[T,T]`,
  `memory_key_padding_mask = src_key_padding_mask`; `decoder_only` causal a
  bool `[T,T]` mask, `prefix_lm` a bool `[B*H,T,T]` mask (row b*H+h: query i
  sees key j iff j < prefix_len[b] or j <= i); key padding on top.
- Embedding: `E[ids] * sqrt(d_model)` (if `embed_scale`) `+ P[0..T-1]`; the
  sinusoidal table is computed in float64 and rounded to float32.
- **Queries with every key masked** (left padding under a causal mask):
  PyTorch's softmax gives NaN for such a row, and from the next layer on
  `weights @ V` spreads it (0·NaN) to every position of the sequence. The
  wrapper therefore sets the attention output row and weight row of such a
  query to 0 — FORMAT.md's definition — after checking the query is padding.
  This changes nothing else (bitwise, checked) and only happens in:
{chr(10).join(masked) if masked else "  - (no case)"}

Self-check (run after every generation, and by `--check`): each file is read
back with `tools/safetensors_io.py` and its tensor names, shapes and dtypes,
config keys and types are compared with tables written from FORMAT.md; then
the outputs are recomputed from the three files alone by an independent
float64 numpy model of FORMAT.md's forward semantics, which must agree with
the expected file to within {SPEC_MAX_RATIO} of the tolerance at every
non-padding position. Worst error / tolerance per case:

| case | max abs logit | logits err/tol | attention err/tol |
|---|---|---|---|
{chr(10).join(precision)}

## Cases

Padding per batch row: `-` none, `R3` three padded positions at the end,
`L3` three at the start. Layers `e+d` = encoder + decoder layers.

| case | arch | LN | act | pos | embed_scale | final norm | d_model | heads | ff | layers | vocab | eps | shape | padding | storage |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

What each case is for:

{chr(10).join(f"- `{c['name']}`: {c['covers']}." for c in CASES)}

## Coverage: which cases cover each value of each axis

| value | cases |
|---|---|
{chr(10).join(coverage_lines())}
"""
    (out_dir / "README.md").write_text(text)


# ----------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default data/reference)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--case", action="append", metavar="NAME", help="make only this case (repeatable)")
    ap.add_argument("--check", action="store_true", help="only check the existing files")
    args = ap.parse_args()

    if args.list:
        for c in CASES:
            print(f"{c['name']:34s} {c['covers']}")
        return 0
    names = args.case or [c["name"] for c in CASES]
    for n in names:
        if n not in CASE_BY_NAME:
            print(f"make_reference: unknown case {n!r} (see --list)", file=sys.stderr)
            return 2

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    args.out.mkdir(parents=True, exist_ok=True)
    infos, summaries = {}, {}
    for n in names:
        case = CASE_BY_NAME[n]
        if not args.check:
            infos[n] = make_case(case, args.out)
        summaries[n] = check_case(case, args.out)
        s = summaries[n]
        print(f"{n:34s} ok  logits err/tol {s['logits_ratio']:.2g}  attention err/tol {s['attention_ratio']:.2g}")
    if not args.check and not args.case:
        write_readme(args.out, infos, summaries)
        total = sum(p.stat().st_size for p in args.out.iterdir() if p.is_file())
        print(f"wrote {len(CASES) * 3} files + README.md to {args.out} ({total} bytes in the folder)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
