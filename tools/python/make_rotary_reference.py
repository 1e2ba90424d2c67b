#!/usr/bin/python3
"""Make the PyTorch reference files of the rotary + grouped-query attention cases.

PyTorch has no stock module with rotary positions (RoPE) or grouped-query
attention, so the reference module is written here, in plain torch, from the
formulas of docs/FORMAT.md (section 1: pos_encoding "rotary", rope_theta,
rope_pairs, n_kv_heads) — not from tinyformer's C++:

    Q = x W_Q^T + b_Q  [B, T, H, Dh]       K, V = x W_K^T + b_K, x W_V^T + b_V  [B, T, Hkv, Dh]
    freq_i = 1 / theta ** (arange(0, Dh, 2).float() / Dh)        float32, i = 0..Dh/2-1
    angle[t, i] = float(t) * freq_i                               float32 (torch.outer)
    pair i of a head: (2i, 2i+1) "adjacent" or (i, i + Dh/2) "half", turned by angle:
        (x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos)            Q and K, never V
    K, V = K.repeat_interleave(H / Hkv, dim=head), V likewise   (query head h reads K/V head h // (H/Hkv))
    A = softmax(Q K^T / sqrt(Dh) masked), out = Concat(A V) W_O^T + b_O

The rest of the model is FORMAT.md's single stack (embed, layers with
norm1/norm2 LayerNorm, linear1/linear2 FFN with ReLU/GELU, pre- or post-LN,
final norm, lm_head) as tools/python/make_reference.py's stock modules compute it.

It writes, per case, the three files of data/reference/README.md
(CASE.model / CASE.inputs / CASE.expected .safetensors) into data/reference,
which tests/test_parity.cpp compares with `tinyformer forward --attention`
like every other case. Only these cases' files are written.

Run from the repository root with Debian's PyTorch:
    /usr/bin/python3 tools/python/make_rotary_reference.py            # every case here
    /usr/bin/python3 tools/python/make_rotary_reference.py --list
    /usr/bin/python3 tools/python/make_rotary_reference.py --out DIR  # instead of data/reference
Deterministic: seeded weights and inputs, one thread.
"""

import argparse
import json
import math
import sys
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import safetensors_io as st  # noqa: E402
from make_reference import case_seed, padding_mask, token_ids  # noqa: E402
from reference_cases import BOS_ID, EOS_ID, FORMAT_TAG, PAD_ID  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "data" / "reference"


def _case(name, covers, *, arch, attention, d, h, kv, pairs, theta, qkv, ff, layers, vocab_size, max_len,
          norm_first, act, final_norm, length, pad):
    cfg = {
        "format": FORMAT_TAG, "arch": arch, "d_model": d, "nhead": h, "n_kv_heads": kv,
        "dim_feedforward": ff, "num_layers": layers, "activation": act, "norm_first": norm_first,
        "layer_norm_eps": 1e-5, "final_norm": final_norm, "vocab_size": vocab_size, "max_len": max_len,
        "pos_encoding": "rotary", "rope_theta": theta, "rope_pairs": pairs, "qkv": qkv,
        "embed_scale": False, "attention": attention, "pad_id": PAD_ID, "bos_id": BOS_ID, "eos_id": EOS_ID,
    }
    return {"name": name, "covers": covers, "config": cfg, "length": length, "pad": pad}


CASES = [
    _case("do_rotary_gqa_pre_gelu_pad",
          "decoder_only causal, rotary (adjacent pairs, theta 10000), 4 heads sharing 2 K/V heads, "
          "separate q/k/v, pre-LN, GELU, final norm, right padding, 2 layers",
          arch="decoder_only", attention="causal", d=32, h=4, kv=2, pairs="adjacent", theta=10000.0,
          qkv="separate", ff=48, layers=2, vocab_size=19, max_len=16, norm_first=True, act="gelu",
          final_norm=True, length=12, pad=[(0, 0), (0, 5), (0, 1)]),
    _case("do_rotary_mqa_half_post_relu",
          "decoder_only causal, rotary ('half' pairs, theta 500), multi-query (1 K/V head of 4), "
          "fused in_proj, post-LN, ReLU, head size 6, no padding, 1 layer",
          arch="decoder_only", attention="causal", d=24, h=4, kv=1, pairs="half", theta=500.0,
          qkv="fused", ff=40, layers=1, vocab_size=13, max_len=12, norm_first=False, act="relu",
          final_norm=False, length=9, pad=[(0, 0), (0, 0)]),
    _case("eo_rotary_h4_pre_gelu_pad",
          "encoder_only bidirectional, rotary (adjacent pairs), 4 heads = 4 K/V heads, separate q/k/v, "
          "pre-LN, GELU, final norm, right padding",
          arch="encoder_only", attention="bidirectional", d=16, h=4, kv=4, pairs="adjacent", theta=10000.0,
          qkv="separate", ff=32, layers=2, vocab_size=11, max_len=10, norm_first=True, act="gelu",
          final_norm=True, length=8, pad=[(0, 0), (0, 3)]),
]
CASE_BY_NAME = {c["name"]: c for c in CASES}


def rope_angles(length, head_dim, theta):
    """[T, Dh/2] float32 angles t * freq_i, as torch-based RoPE code computes them."""
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    return torch.outer(torch.arange(length).float(), freqs).float()


def rope(x, angles, pairs):
    """x [B, T, heads, Dh] turned pair by pair; angles [T, Dh/2]."""
    cos, sin = angles.cos()[None, :, None, :], angles.sin()[None, :, None, :]
    if pairs == "adjacent":
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).flatten(-2)
    half = x.shape[-1] // 2
    x0, x1 = x[..., :half], x[..., half:]
    return torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)


class RotaryGroupedAttention(nn.Module):
    """Self-attention with rotary positions and n_kv_heads K/V heads; state_dict
    names are FORMAT.md's (q_proj/k_proj/v_proj or in_proj_weight/in_proj_bias, out_proj)."""

    def __init__(self, cfg):
        super().__init__()
        d, h, kv = cfg["d_model"], cfg["nhead"], cfg["n_kv_heads"]
        self.h, self.kv, self.dh = h, kv, d // h
        self.pairs, self.theta, self.fused = cfg["rope_pairs"], cfg["rope_theta"], cfg["qkv"] == "fused"
        width = kv * self.dh
        if self.fused:
            self.in_proj_weight = nn.Parameter(torch.empty(d + 2 * width, d))
            self.in_proj_bias = nn.Parameter(torch.empty(d + 2 * width))
        else:
            self.q_proj, self.k_proj, self.v_proj = nn.Linear(d, d), nn.Linear(d, width), nn.Linear(d, width)
        self.out_proj = nn.Linear(d, d)

    def forward(self, x, blocked):
        """x [B, T, D]; blocked [B, 1, T, T] True = may not attend. -> out [B, T, D], weights [B, H, T, T]."""
        b, t, d = x.shape
        width = self.kv * self.dh
        if self.fused:
            qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)
            q, k, v = qkv[..., :d], qkv[..., d:d + width], qkv[..., d + width:]
        else:
            q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        q = q.view(b, t, self.h, self.dh)
        k = k.view(b, t, self.kv, self.dh)
        v = v.view(b, t, self.kv, self.dh)
        angles = rope_angles(t, self.dh, self.theta)
        q, k = rope(q, angles, self.pairs), rope(k, angles, self.pairs)
        group = self.h // self.kv
        k = k.repeat_interleave(group, dim=2)   # [B, T, H, Dh]: query head h reads K/V head h // group
        v = v.repeat_interleave(group, dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)    # [B, H, T, Dh]
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.dh)
        weights = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(b, t, d)
        return self.out_proj(out), weights


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        self.self_attn = RotaryGroupedAttention(cfg)
        self.linear1, self.linear2 = nn.Linear(d, cfg["dim_feedforward"]), nn.Linear(cfg["dim_feedforward"], d)
        self.norm1 = nn.LayerNorm(d, eps=cfg["layer_norm_eps"])
        self.norm2 = nn.LayerNorm(d, eps=cfg["layer_norm_eps"])
        self.act = F.gelu if cfg["activation"] == "gelu" else F.relu
        self.norm_first = cfg["norm_first"]

    def forward(self, x, blocked):
        ffn = lambda y: self.linear2(self.act(self.linear1(y)))  # noqa: E731
        if self.norm_first:
            a, w = self.self_attn(self.norm1(x), blocked)
            x = x + a
            return x + ffn(self.norm2(x)), w
        a, w = self.self_attn(x, blocked)
        x = self.norm1(x + a)
        return self.norm2(x + ffn(x)), w


class Stack(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg["num_layers"]))
        if cfg["final_norm"]:
            self.norm = nn.LayerNorm(cfg["d_model"], eps=cfg["layer_norm_eps"])


class RotaryModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg["vocab_size"], cfg["d_model"])
        self.transformer = Stack(cfg)
        self.lm_head = nn.Linear(cfg["d_model"], cfg["vocab_size"])

    def forward(self, ids, key_padding_mask):
        """logits [B, T, V] and per-layer weights [B, H, T, T]."""
        t = ids.shape[1]
        i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
        blocked = (j > i) if self.cfg["attention"] == "causal" else torch.zeros(t, t, dtype=torch.bool)
        blocked = blocked[None, None] | key_padding_mask[:, None, None, :]   # [B, 1, T, T]
        x = self.embed(ids)
        weights = []
        for layer in self.transformer.layers:
            x, w = layer(x, blocked)
            weights.append(w)
        if self.cfg["final_norm"]:
            x = self.transformer.norm(x)
        return self.lm_head(x), weights


def randomize_(module, seed):
    """make_reference.py's recipe: projections uniform with variance 1/fan_in, embeddings
    N(0,1), LayerNorm weight 1+0.2 N(0,1), every bias 0.1 N(0,1); in name order."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(module.named_parameters()):
            if name.startswith("embed."):
                p.copy_(torch.randn(p.shape, generator=gen))
            elif ".norm" in name or name.startswith("transformer.norm"):
                base = 1.0 if name.endswith("weight") else 0.0
                scale = 0.2 if name.endswith("weight") else 0.1
                p.copy_(base + scale * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:
                bound = math.sqrt(3.0 / p.shape[1])
                p.copy_((torch.rand(p.shape, generator=gen) * 2 - 1) * bound)


def make_case(case, out_dir):
    cfg = case["config"]
    module = RotaryModel(cfg)
    randomize_(module, case_seed(case["name"]))
    module.eval()
    gen = torch.Generator().manual_seed(case_seed(case["name"]) + 1)
    mask = padding_mask(case["pad"], case["length"])
    ids = token_ids(gen, mask, cfg["vocab_size"], bos=cfg["arch"] == "decoder_only")
    with torch.no_grad():
        logits, weights = module(ids, mask)
    expected = {"logits": logits.float().contiguous()}
    for i, w in enumerate(weights):
        expected[f"layers.{i}.self_attn.weights"] = w.float().contiguous()
    for name, value in expected.items():
        if not torch.isfinite(value).all():
            raise RuntimeError(f"{case['name']}: {name} is not finite")
    inputs = {"ids": ids}
    if case["pad"] and any(l or r for l, r in case["pad"]):
        inputs["key_padding_mask"] = mask
    tensors = {name: t.detach().float().contiguous() for name, t in module.state_dict().items()}
    stem = out_dir / case["name"]
    st.write(f"{stem}.model.safetensors", tensors,
             {"config": json.dumps(cfg, sort_keys=True, separators=(",", ":"))})
    st.write(f"{stem}.inputs.safetensors", inputs, {"case": case["name"]})
    st.write(f"{stem}.expected.safetensors", expected,
             {"case": case["name"], "generator": "tools/python/make_rotary_reference.py", "torch": torch.__version__})
    return float(logits.abs().max())


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
        biggest = make_case(case, args.out)
        print(f"{case['name']:34s} written, max |logit| {biggest:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
