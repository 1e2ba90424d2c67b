"""The position schemes of tinyformer's models, in PyTorch: the
project's own reference for tools/python/train_extrapolation.py and its tests
(tests/python/test_position_schemes.py).

    learned     x[t] = E[id_t] * s + P[t], P a trained [max_len, D] table (nn.Embedding)
    sinusoidal  x[t] = E[id_t] * s + P[t], P[pos, 2i] = sin(pos / 10000^(2i/D)),
                P[pos, 2i+1] = cos(same)  (layers/embedding.h; the numbers of
                numpy_reference.sinusoidal_table, computed in float64, rounded to float32)
    rotary      no table; q and k of every head are rotated by their token's position:
                for i = 0..Dh/2-1, angle = pos * theta^(-2i/Dh) (float32, as llama2.c's run.c)
                and the pair (a, b) of head dims becomes
                    (a cos(angle) - b sin(angle),  a sin(angle) + b cos(angle))
                pairs "adjacent": dims (2i, 2i+1) (llama2.c, Meta's llama)
                pairs "half":     dims (i, i + Dh/2) (HF Llama, GPT-NeoX "rotate half")
    alibi       no table; the scores of head h get bias[h, i, j] = -slope_h * |pos_i - pos_j|
                (Press et al.); slope_h = 2^(-8(h+1)/H) for H a power of two, otherwise
                the n = 2^floor(log2 H) slopes of n followed by the slopes of 2n at
                even indices 0, 2, 4, ..., the first H - n of them.
    relative_bias  T5's: no table of positions; head h's scores get table[bucket(j - i), h],
                a learned [buckets, H] table indexed by the bucket of the relative
                position (relative_position_bucket), bidirectional buckets for a model
                whose queries see later keys
    sliding window (a mask, not a position scheme, kept beside them): query i sees
                key j iff i - W < j <= i

Shapes: positions are int64 [T]; q, k [B, H, T, Dh]; an ALiBi or relative bias is [H, Lq, Lk].
"""

import math
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from numpy_reference import sinusoidal_table as _sinusoidal_table_f64  # noqa: E402  (the one table)

SCHEMES = ("learned", "sinusoidal", "rotary", "alibi")
ROPE_PAIRS = ("adjacent", "half")


def sinusoidal_table(length, d_model):
    """P [length, d_model] float32: the engine's sinusoidal table (layers/embedding.h)."""
    if d_model % 2:
        raise ValueError(f"sinusoidal_table: d_model must be even, got {d_model}")
    return torch.from_numpy(_sinusoidal_table_f64(length, d_model, np.float32))


def rope_angles(positions, head_dim, theta):
    """angle [T, Dh/2] float32: positions[t] * theta^(-2i/Dh), i = 0..Dh/2-1.
    Computed as run.c does: freq = 1 / theta^(2i/Dh) in float32, then pos * freq."""
    if head_dim % 2 or head_dim <= 0:
        raise ValueError(f"rope_angles: head_dim must be even and positive, got {head_dim}")
    if not theta > 0:
        raise ValueError(f"rope_angles: theta must be > 0, got {theta}")
    two_i = torch.arange(0, head_dim, 2, dtype=torch.float32)
    freq = 1.0 / torch.pow(torch.tensor(float(theta), dtype=torch.float32), two_i / head_dim)
    return positions.to(torch.float32)[:, None] * freq[None, :]


def apply_rotary(x, positions, theta, pairs="adjacent"):
    """x [..., T, Dh] rotated pairwise by rope_angles(positions) -> same shape."""
    if pairs not in ROPE_PAIRS:
        raise ValueError(f"apply_rotary: pairs must be one of {ROPE_PAIRS}, got {pairs!r}")
    head_dim = x.shape[-1]
    angle = rope_angles(positions, head_dim, theta)          # [T, Dh/2]
    cos, sin = torch.cos(angle), torch.sin(angle)
    if pairs == "adjacent":
        a, b = x[..., 0::2], x[..., 1::2]
    else:
        a, b = x[..., : head_dim // 2], x[..., head_dim // 2:]
    ra = a * cos - b * sin
    rb = a * sin + b * cos
    if pairs == "adjacent":
        return torch.stack((ra, rb), dim=-1).flatten(-2)     # back to (2i, 2i+1) interleaved
    return torch.cat((ra, rb), dim=-1)


def alibi_slopes(n_heads):
    """The H slopes of ALiBi, head 0 first (floats, exact powers of two for H a power of two)."""
    if not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"alibi_slopes: n_heads must be a positive int, got {n_heads!r}")

    def power_of_two(n):
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    n = 2 ** int(math.floor(math.log2(n_heads)))
    if n == n_heads:
        return power_of_two(n)
    return power_of_two(n) + power_of_two(2 * n)[0::2][: n_heads - n]


def alibi_bias(n_heads, query_positions, key_positions):
    """bias [H, Lq, Lk] float32: -slope_h * |query_positions[i] - key_positions[j]|."""
    slopes = torch.tensor(alibi_slopes(n_heads), dtype=torch.float32)
    distance = (query_positions[:, None] - key_positions[None, :]).abs().to(torch.float32)
    return -slopes[:, None, None] * distance[None, :, :]


def relative_position_bucket(relative_position, bidirectional, buckets, max_distance):
    """T5's bucket (int64, same shape) of each relative position r = key position -
    query position (int64 tensor), as engine/mask.h states it:
        bidirectional: n = buckets // 2, r > 0 adds n, d = |r|;  otherwise n = buckets, d = max(-r, 0)
        exact = n // 2: d < exact -> d; else exact + floor(log(d / exact) / log(max_distance / exact)
                        * (n - exact)), at most n - 1
    The log is taken in float32, as PyTorch's T5 takes it; where the exact value is a
    whole number (9 causal buckets / 128 at d = 8) double arithmetic truncates one lower,
    so engine/mask.cpp also computes in float32."""
    half = buckets // 2 if bidirectional else buckets
    exact = half // 2
    if exact < 1 or max_distance <= exact:
        raise ValueError(f"relative_position_bucket: buckets {buckets}, max_distance {max_distance}: need an exact "
                         f"bucket and max_distance above the exact ones")
    if bidirectional:
        offset = torch.where(relative_position > 0, half, 0)
        distance = relative_position.abs()
    else:
        offset = torch.zeros_like(relative_position)
        distance = torch.clamp(-relative_position, min=0)
    ratio = torch.clamp(distance, min=1).to(torch.float32) / exact       # clamp: no log(0) in unused cells
    spread = (torch.log(ratio) / math.log(max_distance / exact) * (half - exact)).to(torch.int64)
    far = torch.clamp(exact + spread, max=half - 1)
    return offset + torch.where(distance < exact, distance, far)


def relative_bias(table, query_positions, key_positions, bidirectional, max_distance):
    """bias [H, Lq, Lk] float32: table[bucket(key_positions[j] - query_positions[i]), h],
    table [buckets, H] (T5's relative_attention_bias.weight)."""
    relative = key_positions[None, :] - query_positions[:, None]          # [Lq, Lk]
    bucket = relative_position_bucket(relative, bidirectional, table.shape[0], max_distance)
    return table[bucket].permute(2, 0, 1)                                 # [Lq, Lk, H] -> [H, Lq, Lk]


def sliding_window_allowed(window, query_positions, key_positions):
    """[Lq, Lk] bool, True = the query may see the key: q - window < k <= q
    (Mistral's window as Hugging Face's modeling_mistral masks it: W keys, its own included)."""
    q, k = query_positions[:, None], key_positions[None, :]
    return (k > q - window) & (k <= q)
