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
semantics (`spec_forward`, tools/python/numpy_reference.py), which must agree with
PyTorch far inside the parity tolerance at every non-padding position.

The cases are in tools/python/reference_cases.py; data/reference/README.md is written
by tools/python/reference_readme.py after a full run. This file is the runner: the
command line, building and running the PyTorch modules (tools/python/torch_modules.py),
writing the files, and the self-check against FORMAT.md's tables below.

Run with Debian's PyTorch (python3-torch), from the repository root:
    /usr/bin/python3 tools/python/make_reference.py            # all cases + README
    /usr/bin/python3 tools/python/make_reference.py --list
    /usr/bin/python3 tools/python/make_reference.py --case NAME [--case NAME2]
    /usr/bin/python3 tools/python/make_reference.py --check    # only verify the files
    /usr/bin/python3 tools/python/make_reference.py --readme   # verify the files, rewrite README.md
    /usr/bin/python3 tools/python/make_reference.py --out DIR  # instead of data/reference
The output is deterministic: running it twice gives byte-identical files.
"""

import argparse
import json
import math
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import safetensors_io as st  # noqa: E402
from numpy_reference import spec_forward  # noqa: E402
from reference_cases import BOS_ID, CASE_BY_NAME, CASES, FORMAT_TAG, PAD_ID  # noqa: E402
from reference_readme import write_readme  # noqa: E402
from torch_modules import Capture, NoFastPath, RmsNorm, build_module  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "data" / "reference"
FIRST_WORD_ID = 3           # ids of ordinary tokens are drawn from [3, vocab)
ATOL = RTOL = 1e-4          # FORMAT.md: |a-b| <= 1e-4 + 1e-4*|b|
SPEC_MAX_RATIO = 0.05       # the float64 spec model must agree far inside the tolerance

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
# Keys a case may add to its arch's (FORMAT.md's optional keys the reference modules build).
CONFIG_KEYS_OPTIONAL = {"norm": str}


def format_tensor_shapes(cfg):
    """{tensor name: shape} of a checkpoint, from FORMAT.md's table."""
    d, ff = cfg["d_model"], cfg["dim_feedforward"]
    rms = cfg.get("norm", "layer_norm") == "rms_norm"   # RMSNorm: a weight, no bias
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
        if cfg["activation"] == "swiglu":
            out[p + ".linear3.weight"] = [ff, d]
            out[p + ".linear3.bias"] = [ff]
        for n in norms:
            out[f"{p}.{n}.weight"] = [d]
            if not rms:
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
            if not rms:
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
            out[f"encoder.{i}.self_attn.weights"] = [b, h, s, s]
        for i in range(cfg["num_decoder_layers"]):
            out[f"decoder.{i}.self_attn.weights"] = [b, h, t, t]
            out[f"decoder.{i}.cross_attn.weights"] = [b, h, t, s]
        return out
    b, t = len(case["pad"]), case["length"]
    out = {"logits": [b, t, cfg["vocab_size"]]}
    for i in range(cfg["num_layers"]):
        out[f"layers.{i}.self_attn.weights"] = [b, h, t, t]
    return out


def randomize_(module, seed):
    """Seeded random weights for every parameter, so that no two layers share
    weights (nn.TransformerEncoder deep-copies one layer) and LayerNorm scales
    and all biases are non-trivial. Projection weights have variance 1/fan_in.
    RmsNorm weights as LayerNorm's (it has no bias)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, mod in sorted(module.named_modules(), key=lambda kv: kv[0]):
            if isinstance(mod, nn.Embedding):
                mod.weight.copy_(torch.randn(mod.weight.shape, generator=gen))
            elif isinstance(mod, RmsNorm):
                mod.weight.copy_(1 + 0.2 * torch.randn(mod.weight.shape, generator=gen))
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
            out[f"encoder.{i}.self_attn.weights"] = src
        for i in range(cfg["num_decoder_layers"]):
            out[f"decoder.{i}.self_attn.weights"] = tgt
            out[f"decoder.{i}.cross_attn.weights"] = tgt
    else:
        pad = inputs.get("key_padding_mask", torch.zeros_like(inputs["ids"], dtype=torch.bool))
        out["logits"] = pad
        for i in range(cfg["num_layers"]):
            out[f"layers.{i}.self_attn.weights"] = pad
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
             {"case": case["name"], "generator": "tools/python/make_reference.py", "torch": torch.__version__})
    return info


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
    given = set(file_cfg) - set(CONFIG_KEYS_OPTIONAL)
    assert given == set(wanted), f"{path}: config keys {sorted(given ^ set(wanted))} differ"
    for k, typ in {**wanted, **{k: t for k, t in CONFIG_KEYS_OPTIONAL.items() if k in file_cfg}}.items():
        v = file_cfg[k]
        ok = isinstance(v, typ) and not (typ is int and isinstance(v, bool))
        assert ok, f"{path}: config {k} = {v!r} is not {typ.__name__}"
    assert file_cfg == cfg
    assert file_cfg["format"] == FORMAT_TAG
    assert file_cfg["activation"] in ("relu", "gelu", "silu", "swiglu")
    assert file_cfg.get("norm", "layer_norm") in ("layer_norm", "rms_norm")
    assert file_cfg["pos_encoding"] in ("sinusoidal", "learned", "none", "alibi")
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default data/reference)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--case", action="append", metavar="NAME", help="make only this case (repeatable)")
    ap.add_argument("--check", action="store_true", help="only check the existing files")
    ap.add_argument("--readme", action="store_true",
                    help="check the existing files and rewrite README.md from them, leaving them as they are "
                         "(after --case NAME added a case)")
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
    if args.readme and (args.case or args.check):
        print("make_reference: --readme takes every case and makes no files; not with --case or --check",
              file=sys.stderr)
        return 2
    infos, summaries = {}, {}
    scratch = tempfile.TemporaryDirectory() if args.readme else None
    for n in names:
        case = CASE_BY_NAME[n]
        if args.readme:   # PyTorch's run only for what it zeroed (the README's NaN note); its files are dropped
            infos[n] = make_case(case, Path(scratch.name))
        elif not args.check:
            infos[n] = make_case(case, args.out)
        summaries[n] = check_case(case, args.out)
        s = summaries[n]
        print(f"{n:34s} ok  logits err/tol {s['logits_ratio']:.2g}  attention err/tol {s['attention_ratio']:.2g}")
    if scratch:
        scratch.cleanup()
    if not args.check and not args.case:
        write_readme(args.out, infos, summaries, torch_version=torch.__version__,
                     spec_max_ratio=SPEC_MAX_RATIO)
        total = sum(p.stat().st_size for p in args.out.iterdir() if p.is_file())
        made = "README.md" if args.readme else f"{len(CASES) * 3} files + README.md"
        print(f"wrote {made} to {args.out} ({total} bytes in the folder)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
