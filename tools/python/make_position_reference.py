#!/usr/bin/python3
"""Make the PyTorch reference files of T5's relative position bias and of
sliding-window attention (lesson 10.4; docs/FORMAT.md, section 1).

The reference module is the project's own (tools/python/torch_modules.py's
SingleStackRef: stock nn.TransformerEncoder layers, T5's table
`transformer.layers.0.self_attn.relative_attention_bias` [buckets, H], the
bias and the window given to PyTorch as its float attn_mask; the bucket and
window formulas are tools/python/position_schemes.py's). Per case it writes
the three files of data/reference/README.md (CASE.model / CASE.inputs /
CASE.expected .safetensors) into data/reference, which tests/test_parity.cpp
compares with `tinyformer forward --attention` like every other case, and
checks PyTorch's numbers against the float64 NumPy model
(tools/python/numpy_reference.py, a third implementation of both schemes).
Only these cases' files are written.

Run from the repository root with Debian's PyTorch:
    /usr/bin/python3 tools/python/make_position_reference.py            # every case here
    /usr/bin/python3 tools/python/make_position_reference.py --list
    /usr/bin/python3 tools/python/make_position_reference.py --out DIR  # instead of data/reference
Deterministic: seeded weights and inputs, one thread.
"""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import safe_write  # noqa: E402
import safetensors_io as st  # noqa: E402
from make_reference import (ATOL, RTOL, SPEC_MAX_RATIO, case_seed, padding_mask, randomize_,  # noqa: E402
                            run_reference, token_ids)
from numpy_reference import spec_forward  # noqa: E402
from reference_cases import BOS_ID, EOS_ID, FORMAT_TAG, PAD_ID  # noqa: E402
from torch_modules import TwinAttention, build_module  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "data" / "reference"


def _case(name, covers, *, arch, attention, d, h, ff, layers, vocab_size, max_len, norm_first, act, pos,
          final_norm, length, pad, buckets=None, max_distance=None, window=None):
    cfg = {
        "format": FORMAT_TAG, "arch": arch, "d_model": d, "nhead": h, "dim_feedforward": ff, "num_layers": layers,
        "activation": act, "norm_first": norm_first, "layer_norm_eps": 1e-5, "final_norm": final_norm,
        "vocab_size": vocab_size, "max_len": max_len, "pos_encoding": pos, "embed_scale": False,
        "attention": attention, "pad_id": PAD_ID, "bos_id": BOS_ID, "eos_id": EOS_ID,
    }
    for key, value in (("relative_buckets", buckets), ("relative_max_distance", max_distance),
                       ("sliding_window", window)):
        if value is not None:
            cfg[key] = value
    return {"name": name, "covers": covers, "config": cfg, "length": length, "pad": pad}


CASES = [
    _case("do_relbias_pre_gelu_h4_pad",
          "decoder_only causal, T5 relative bias (8 causal buckets: distances 0-3 exact, 4-11 log-spaced "
          "up to max_distance 16), 4 heads, pre-LN, GELU, final norm, right padding, 2 layers",
          arch="decoder_only", attention="causal", d=16, h=4, ff=32, layers=2, vocab_size=17, max_len=32,
          norm_first=True, act="gelu", pos="relative_bias", final_norm=True, length=12,
          pad=[(0, 0), (0, 5), (0, 2)], buckets=8, max_distance=16),
    _case("eo_relbias_post_relu_h2",
          "encoder_only bidirectional, T5 relative bias (8 buckets: 4 per direction, distances >= "
          "max_distance 8 share the last), 2 heads, post-LN, ReLU, final norm, right padding",
          arch="encoder_only", attention="bidirectional", d=12, h=2, ff=24, layers=2, vocab_size=11, max_len=16,
          norm_first=False, act="relu", pos="relative_bias", final_norm=True, length=11,
          pad=[(0, 0), (0, 4)], buckets=8, max_distance=8),
    _case("do_window_rotary_pre_gelu_pad",
          "decoder_only causal, sliding window 3 over 10 positions, rotary positions, 2 heads, pre-LN, GELU, "
          "final norm, right padding",
          arch="decoder_only", attention="causal", d=16, h=2, ff=32, layers=2, vocab_size=15, max_len=32,
          norm_first=True, act="gelu", pos="rotary", final_norm=True, length=10,
          pad=[(0, 0), (0, 3)], window=3),
    _case("do_window_relbias_post_relu",
          "decoder_only causal, sliding window 4 with T5 relative bias (T5's 32 buckets, max_distance 128), "
          "4 heads, post-LN, ReLU, no final norm, no padding, 1 layer",
          arch="decoder_only", attention="causal", d=16, h=4, ff=24, layers=1, vocab_size=13, max_len=32,
          norm_first=False, act="relu", pos="relative_bias", final_norm=False, length=11,
          pad=[(0, 0), (0, 0)], window=4),
]
CASE_BY_NAME = {c["name"]: c for c in CASES}


def randomize_twins_(module, seed):
    """make_reference.randomize_'s recipe for what it does not know: a TwinAttention's
    in_proj (uniform, variance 1/fan_in) and in_proj_bias (0.1 N(0,1))."""
    gen = torch.Generator().manual_seed(seed + 2)
    with torch.no_grad():
        for _, mod in sorted(module.named_modules(), key=lambda kv: kv[0]):
            if isinstance(mod, TwinAttention):
                bound = math.sqrt(3.0 / mod.embed_dim)
                mod.in_proj_weight.copy_((torch.rand(mod.in_proj_weight.shape, generator=gen) * 2 - 1) * bound)
                mod.in_proj_bias.copy_(0.1 * torch.randn(mod.in_proj_bias.shape, generator=gen))


def make_case(case, out_dir):
    cfg = case["config"]
    seed = case_seed(case["name"])
    torch.manual_seed(seed)                  # PyTorch's own init, overwritten below
    module = build_module(cfg)
    randomize_(module, seed)                 # embeddings (T5's table too), norms, Linear layers, stock attention
    randomize_twins_(module, seed)
    module.eval()
    gen = torch.Generator().manual_seed(seed + 1)
    mask = padding_mask(case["pad"], case["length"])
    ids = token_ids(gen, mask, cfg["vocab_size"], bos=cfg["arch"] == "decoder_only")
    inputs = {"ids": ids}
    if any(left or right for left, right in case["pad"]):
        inputs["key_padding_mask"] = mask
    logits, capture = run_reference(module, cfg, inputs, capture=True, sanitize=True)
    expected = {"logits": logits, **capture.weights}
    for name in list(expected):
        value = expected[name].float().contiguous()
        if not torch.isfinite(value).all():
            raise RuntimeError(f"{case['name']}: {name} is not finite")
        expected[name] = value
    tensors = {name: t.detach().float().contiguous() for name, t in module.state_dict().items()}

    # PyTorch against the float64 NumPy model, at the positions tinyformer computes (not padding)
    spec, qpads = spec_forward(cfg, {k: v.numpy() for k, v in tensors.items()}, {k: v.numpy() for k, v in inputs.items()})
    worst = 0.0
    for name, ref in spec.items():
        keep = ~qpads[name][:, :, None] if name == "logits" else ~qpads[name][:, None, :, None]
        err = np.abs(expected[name].numpy().astype(np.float64) - ref) / (ATOL + RTOL * np.abs(ref))
        worst = max(worst, float(err[np.broadcast_to(keep, ref.shape)].max()))
    if worst > SPEC_MAX_RATIO:
        raise RuntimeError(f"{case['name']}: PyTorch vs the float64 NumPy model: error/tolerance {worst:.3g}")

    stem = out_dir / case["name"]
    st.write(f"{stem}.model.safetensors", tensors, {"config": json.dumps(cfg, sort_keys=True, separators=(",", ":"))})
    st.write(f"{stem}.inputs.safetensors", inputs, {"case": case["name"]})
    st.write(f"{stem}.expected.safetensors", expected,
             {"case": case["name"], "generator": "tools/python/make_position_reference.py", "torch": torch.__version__})
    return float(logits.abs().max()), worst


# Bucket settings for data/reference/relative_buckets.json: T5's own (32, 128), the
# cases' (8, 16), small ones, and settings where the exact value of the log formula is
# a whole number at some distance (9/128 at d = 8, 36/50 at d = 30, 18/128, 10/160,
# 17/27, 19/128, 58/282), where float32 and double truncate to different buckets.
BUCKET_SETTINGS = ([(32, 128), (8, 16), (9, 128), (18, 128), (10, 160), (17, 27), (19, 128), (36, 50), (58, 282)]
                   + [(b, 20) for b in range(4, 13)])


def write_buckets(out):
    """Every bucket of r = -(max_distance + 8) .. max_distance + 8 for each setting, both
    directions where the setting allows, by position_schemes.relative_position_bucket
    (float32, as PyTorch's T5)."""
    from position_schemes import relative_position_bucket
    settings = []
    for buckets, max_distance in BUCKET_SETTINGS:
        for bidirectional in (False, True):
            half = buckets // 2 if bidirectional else buckets
            if half // 2 < 1 or max_distance <= half // 2:
                continue
            first = -(max_distance + 8)
            r = torch.arange(first, max_distance + 9)
            b = relative_position_bucket(r, bidirectional, buckets, max_distance)
            settings.append({"buckets": buckets, "max_distance": max_distance, "bidirectional": bidirectional,
                             "first_r": first, "bucket": [int(x) for x in b]})
    text = json.dumps({"what": "T5 relative-position buckets by tools/python/position_schemes.py "
                               "(float32, as PyTorch's T5); bucket[i] is r = first_r + i",
                       "settings": settings}, separators=(",", ":")) + "\n"
    path = out / "relative_buckets.json"
    safe_write.write_text(path, text)
    return path, len(settings)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default data/reference)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    args = ap.parse_args()
    if args.list:
        for c in CASES:
            print(f"{c['name']:34s} {c['covers']}")
        return 0
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    args.out.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        biggest, worst = make_case(case, args.out)
        print(f"{case['name']:34s} written, max |logit| {biggest:.3g}, vs NumPy float64 err/tol {worst:.2g}")
    path, count = write_buckets(args.out)
    print(f"{path.name:34s} written, {count} bucket settings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
