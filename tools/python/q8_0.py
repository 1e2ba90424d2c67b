"""Q8_0 weights on the Python side: the engine's rule (engine/quant/q8_0.cpp)
in numpy, and which of a tinyformer file's tensors the engine reads as Q8_0.

A weight W [N, K] is cut along K into groups of G numbers (G divides K). For a
group x_0..x_{G-1}, all in float32:

    s   = max_i |x_i| / 127                      (a float32 division)
    q_i = x_i / s, rounded to the nearest whole number, a half away from zero
          (C++ std::round: 2.5 -> 3, -50.5 -> -51), clamped to -127..127
    a group of zeros has s = 0 and every q_i = 0 (no division by zero)

and is stored as `NAME` I8 [N, K] (the q) beside `NAME.scale` F32 [N, K / G]
(docs/FORMAT.md). torch.round and numpy.round round a half to the even
neighbour (-50.5 -> -50); the engine does not, so neither does quantize_rows.
The values are bit for bit the engine's quantize_q8_0_row on the same float32
numbers (tests/python/test_q8_0_files.py holds it to the hand-worked groups of
tests/test_q8_0.cpp).

    quantize_rows(w, group) -> (q int8 [N, K], s float32 [N, K / G])
    dequantize_rows(q, s) -> float32 [N, K]: q * s, one float32 product each
    is_q8_weight(name)     True for the tensors the engine reads through
                           Checkpoint::take_weight (models/transformer.cpp)
    check_group(name, k, group)   ValueError naming the weight when G does not divide K

Standard library and numpy.
"""

import numpy as np

__all__ = ["Q_MAX", "HEADS", "is_q8_weight", "check_group", "quantize_rows", "dequantize_rows", "SCALE_SUFFIX"]

Q_MAX = 127
SCALE_SUFFIX = ".scale"
HEADS = ("lm_head.weight", "generator.weight")
# The linear layers whose weight models/transformer.cpp takes with take_weight: the
# feed-forward's linear1/2/3, the attention's in_proj (or q/k/v_proj) and out_proj.
_LAYER_WEIGHTS = (".linear1.weight", ".linear2.weight", ".linear3.weight", ".in_proj_weight", ".q_proj.weight",
                  ".k_proj.weight", ".v_proj.weight", ".out_proj.weight")


def is_q8_weight(name):
    """True for a tensor name the engine may read as Q8_0 (the embeddings, norms,
    biases and position tables stay float)."""
    return name in HEADS or name.endswith(_LAYER_WEIGHTS)


def check_group(name, k, group):
    """G must be a whole number >= 1 dividing the weight's input axis K."""
    if isinstance(group, bool) or not isinstance(group, int) or group < 1:
        raise ValueError(f"--group-size {group!r}: expected a whole number >= 1")
    if k % group:
        raise ValueError(f"--group-size {group} does not divide {name}'s input axis K = {k} (its shape is [N, K]; "
                         f"Q8_0 groups run along K)")


def _round_half_away(r):
    """float32 ratios -> the nearest whole numbers, halves away from zero. In
    float64, where |r| + 0.5 is exact for any float32 |r| below 2^28 (0.49999997
    + 0.5 would round up to 1 in float32)."""
    r = r.astype(np.float64)
    return np.copysign(np.floor(np.abs(r) + 0.5), r)


def quantize_rows(w, group):
    """w [N, K] (cast to float32; finite) -> (q int8 [N, K], s float32 [N, K / group])."""
    w = np.asarray(w, dtype=np.float32)
    if w.ndim != 2:
        raise ValueError(f"quantize_rows: expected a matrix [N, K], got shape {list(w.shape)}")
    n, k = w.shape
    check_group("the weight", k, group)
    groups = w.reshape(n, k // group, group)
    largest = np.abs(groups).max(axis=2)                                # [N, K / G], float32
    scales = (largest / np.float32(Q_MAX)).astype(np.float32)
    safe = np.where(scales == 0, np.float32(1), scales)[:, :, None]      # a zero group's q is 0 either way
    ratios = np.where(scales[:, :, None] == 0, np.float32(0), groups / safe).astype(np.float32)
    q = np.clip(_round_half_away(ratios), -Q_MAX, Q_MAX).astype(np.int8)
    return q.reshape(n, k), scales


def dequantize_rows(q, s):
    """q int8 [N, K], s float32 [N, K / G] -> float32 [N, K] = q * s (the engine's
    dequantize_q8_0, and runq.c's dequantize of its token table)."""
    q = np.asarray(q, dtype=np.int8)
    s = np.asarray(s, dtype=np.float32)
    n, k = q.shape
    if s.ndim != 2 or s.shape[0] != n or s.shape[1] < 1 or k % s.shape[1]:
        raise ValueError(f"dequantize_rows: scales of shape {list(s.shape)} do not fit values [{n}, {k}]")
    group = k // s.shape[1]
    return (q.reshape(n, -1, group).astype(np.float32) * s[:, :, None]).reshape(n, k)
