"""The llama2.c family (karpathy/llama2.c): the project's own reference module
with llama2.c's state_dict names and numerics, the converters from its files
to a tinyformer file, and readers/writers of its .bin formats.

The module (written here from the published design, not copied):

    x = tok_embeddings[tokens]                                   [B, T, D]
    for each of the n_layers blocks (pre-norm):
        x = x + wo(attention(rope(wq(n)), rope(wk(n)), wv(n)))   n = attention_norm(x)
        x = x + w2(silu(w1(m)) * w3(m))                          m = ffn_norm(x)
    logits = output(norm(x))                                     [B, T, V], at every position

    RMSNorm:   y = x * rsqrt(mean(x^2) + eps) * weight, computed on x in float32
               (eps = norm_eps, 1e-5); no bias
    RoPE:      per head (Dh = D / n_heads), the ADJACENT pairs (2i, 2i+1) rotate by
               angle pos * f_i, f_i = 1 / theta^(2i / Dh), theta 10000, i = 0..Dh/2-1:
                   y[2i]   = x[2i] cos - x[2i+1] sin
                   y[2i+1] = x[2i] sin + x[2i+1] cos
               cos/sin tables [max_seq_len, Dh/2] in float32, computed as llama2.c does
               (f from an int arange turned float, divided by Dh; angles = outer(pos, f))
    attention: q [B, H, T, Dh]; k, v [B, Hkv, T, Dh] repeated to H heads (query head h
               uses K/V head h // (H / Hkv): grouped-query attention, MQA when Hkv = 1);
               softmax(q k^T / sqrt(Dh) + causal mask (-inf above the diagonal)) v
    SwiGLU:    hidden F = hidden_dim if given, else multiple_of * ceil(int(2 * 4D / 3) / multiple_of)
    output:    tied to tok_embeddings (llama2.c ties them); an untied head is read too

state_dict keys (llama2.c's):

    tok_embeddings.weight [V, D]                  output.weight [V, D] (the same tensor when tied)
    layers.{i}.attention_norm.weight [D]          layers.{i}.ffn_norm.weight [D]
    layers.{i}.attention.wq.weight [D, D]         layers.{i}.attention.wk.weight [Hkv*Dh, D]
    layers.{i}.attention.wv.weight [Hkv*Dh, D]    layers.{i}.attention.wo.weight [D, D]
    layers.{i}.feed_forward.w1.weight [F, D]      layers.{i}.feed_forward.w3.weight [F, D]
    layers.{i}.feed_forward.w2.weight [D, F]      norm.weight [D]
    layers.{i}.attention.mask [1, 1, T, T]        the causal-mask BUFFER (0 on and below the
                                                  diagonal, -inf above) llama2.c registers on a
                                                  torch without scaled_dot_product_attention
                                                  (torch < 2.0, as here); mask_buffer=True keeps it

Converters (each returns a families.Converted; config as docs/FAMILIES.md's llama2.c table):

    convert_llama2c_checkpoint(path, tokenizer=None)   train.py's ckpt.pt {"model", "model_args", ...}
    convert_llama2c_bin(path, tokenizer=None)          export.py's v0 (legacy) or v1 model.bin
    read_tokenizer_bin(path, vocab_size=None)          tokenizer.bin -> (pieces, scores, max_token_length)
    llama2c_bin_bytes(converted, version)              the v0 / v1 bytes of a Converted (tests, run.c)
"""

import math
import os
import struct
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from . import (Converted, check_reference_tables, check_state_dict, layer_count, load_weights,
               rename_to_upstream, tensors_by_name)
import q8_0  # noqa: E402  (v2's int8 matrices: the engine's Q8_0 names and rule)
import torch_file  # noqa: E402  (file_map: model.bin mapped)
from torch_file import load_torch_file   # the one reader of PyTorch files (tools/python, on the path as for families)

ROPE_THETA = 10000.0
MAGIC = 0x616B3432              # "ak42" read as a little-endian uint32: export.py's v1/v2 header
V1_HEADER_BYTES = 256
MAX_SIZE = 1 << 24              # tinyformer's limit on every size (models/config.cpp)
MAX_TOKEN_BYTES = 1 << 16       # a tokenizer.bin piece longer than this is not a piece
MAX_TOKENIZER_BYTES = 1 << 30   # a tokenizer.bin larger than this is not one (llama2.c's 32000 pieces: 424 KB)


@dataclass
class ModelArgs:
    """llama2.c's ModelArgs fields (the model_args dict of train.py's ckpt.pt)."""
    dim: int = 288
    n_layers: int = 6
    n_heads: int = 6
    n_kv_heads: Optional[int] = None
    vocab_size: int = 32000
    hidden_dim: Optional[int] = None
    multiple_of: int = 32
    norm_eps: float = 1e-5
    max_seq_len: int = 256
    dropout: float = 0.0

    def __post_init__(self):
        for name in ("dim", "n_layers", "n_heads", "vocab_size", "multiple_of", "max_seq_len"):
            _positive_int(f"ModelArgs.{name}", getattr(self, name))
        for name in ("n_kv_heads", "hidden_dim"):
            if getattr(self, name) is not None:
                _positive_int(f"ModelArgs.{name}", getattr(self, name))
        if self.dim % self.n_heads:
            raise ValueError(f"ModelArgs: dim ({self.dim}) must be a multiple of n_heads ({self.n_heads})")
        if self.n_heads % self.kv_heads:
            raise ValueError(f"ModelArgs: n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.kv_heads})")
        if (self.dim // self.n_heads) % 2:
            raise ValueError(f"ModelArgs: the head size dim / n_heads = {self.dim // self.n_heads} must be even "
                             f"(RoPE rotates pairs)")

    @property
    def kv_heads(self):
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: expected a positive int, got {value!r}")


def ffn_hidden_dim(dim, hidden_dim=None, multiple_of=32):
    """llama2.c's FFN width: hidden_dim when given; else 2/3 of 4*dim (truncated to
    an int), rounded UP to a multiple of multiple_of. dim 64, multiple_of 32:
    int(2 * 256 / 3) = 170 -> 192."""
    if hidden_dim is not None:
        return hidden_dim
    h = int(2 * (4 * dim) / 3)
    return multiple_of * ((h + multiple_of - 1) // multiple_of)


def rope_tables(head_dim, max_seq_len, theta=ROPE_THETA):
    """(cos, sin), each [max_seq_len, head_dim // 2] float32: angle[p, i] = p * f_i,
    f_i = 1 / theta^(2i / head_dim). Computed in llama2.c's order of float32
    operations (the exponents 2i from an integer arange made float, then / head_dim),
    so the tables are the same bits as its precomputed ones."""
    exponents = torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim
    freqs = 1.0 / (theta ** exponents)                      # [Dh/2]
    positions = torch.arange(max_seq_len)
    angles = torch.outer(positions, freqs).float()          # [T, Dh/2]
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin):
    """x [B, T, heads, Dh] -> the same shape, pairs (2i, 2i+1) of each head rotated
    by (cos, sin)[t, i] ([T, Dh/2]); computed in float32, returned in x's dtype."""
    pairs = x.float().reshape(*x.shape[:-1], -1, 2)         # [B, T, heads, Dh/2, 2]
    even, odd = pairs[..., 0], pairs[..., 1]
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]
    rotated_even = even * c - odd * s
    rotated_odd = even * s + odd * c
    return torch.stack([rotated_even, rotated_odd], dim=-1).flatten(3).type_as(x)


class RMSNorm(nn.Module):
    """y = x * rsqrt(mean(x^2) + eps) * weight over the last dim [D]; the
    normalisation runs on x.float() and is cast back before the weight."""

    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


class Attention(nn.Module):
    """[B, T, D] -> [B, T, D]: causal grouped-query self-attention with RoPE on q, k."""

    def __init__(self, args, mask_buffer):
        super().__init__()
        self.n_heads, self.n_kv_heads = args.n_heads, args.kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        # llama2.c keeps a [1, 1, max_seq_len, max_seq_len] mask buffer (saved by torch < 2.0);
        # without it (the converters' reference: max_seq_len may be 2^24) the same
        # triangle is made for each pass's T.
        if mask_buffer:
            mask = torch.triu(torch.full((1, 1, args.max_seq_len, args.max_seq_len), float("-inf")), diagonal=1)
            self.register_buffer("mask", mask, persistent=True)
        else:
            self.mask = None
        self.weights = None    # the last [B, n_heads, T, T] attention weights (for checks)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.n_heads, self.head_dim)
        k = self.wk(x).view(b, t, self.n_kv_heads, self.head_dim)
        v = self.wv(x).view(b, t, self.n_kv_heads, self.head_dim)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        group = self.n_heads // self.n_kv_heads
        k = torch.repeat_interleave(k, group, dim=2)        # [B, T, H, Dh]: head h reads kv head h // group
        v = torch.repeat_interleave(v, group, dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)   # [B, H, T, Dh]
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = self.mask if self.mask is not None else torch.triu(torch.full((1, 1, t, t), float("-inf")), diagonal=1)
        scores = scores + mask[:, :, :t, :t]
        att = F.softmax(scores.float(), dim=-1).type_as(q)
        self.weights = att.detach()
        y = torch.matmul(self.attn_dropout(att), v)         # [B, H, T, Dh]
        y = y.transpose(1, 2).contiguous().view(b, t, -1)
        return self.resid_dropout(self.wo(y))


class FeedForward(nn.Module):
    """SwiGLU: w2(silu(w1 x) * w3 x); x [.., D], hidden [.., F]."""

    def __init__(self, dim, hidden, dropout):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)))


class TransformerBlock(nn.Module):
    def __init__(self, args, mask_buffer):
        super().__init__()
        self.attention = Attention(args, mask_buffer)
        self.feed_forward = FeedForward(args.dim, ffn_hidden_dim(args.dim, args.hidden_dim, args.multiple_of),
                                        args.dropout)
        self.attention_norm = RMSNorm(args.dim, args.norm_eps)
        self.ffn_norm = RMSNorm(args.dim, args.norm_eps)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    """The llama2.c model of the module docstring. forward(tokens [B, T] int64)
    -> logits [B, T, V] at every position (T <= max_seq_len).
    mask_buffer: keep the causal mask in the state_dict, as llama2.c does on
    torch < 2.0 (so our state_dict loads strictly into its Transformer here).
    tie: output.weight is tok_embeddings.weight (llama2.c always ties)."""

    def __init__(self, args, mask_buffer=True, tie=True):
        super().__init__()
        if not isinstance(args, ModelArgs):
            raise TypeError(f"Transformer(args): expected a ModelArgs, got {type(args).__name__}")
        if mask_buffer:           # one [max_seq_len, max_seq_len] float32 mask per block
            check_reference_tables("Transformer", f"the causal-mask buffers (attention.mask, max_seq_len "
                                   f"{args.max_seq_len}, n_layers {args.n_layers})", args.n_layers,
                                   args.max_seq_len, args.max_seq_len, 4)
        self.params = args
        self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
        self.dropout = nn.Dropout(args.dropout)
        self.layers = nn.ModuleList([TransformerBlock(args, mask_buffer) for _ in range(args.n_layers)])
        self.norm = RMSNorm(args.dim, args.norm_eps)
        self.output = nn.Linear(args.dim, args.vocab_size, bias=False)
        if tie:
            self.tok_embeddings.weight = self.output.weight
        self.head_dim = args.dim // args.n_heads  # the cos/sin tables are made for each pass's T (rope_tables)
        # GPT-2's initialisation, as llama2.c: N(0, 0.02), residual projections
        # (w3, wo in llama2.c) scaled by 1/sqrt(2 n_layers)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
        for name, p in self.named_parameters():
            if name.endswith("w3.weight") or name.endswith("wo.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * args.n_layers))

    def forward(self, tokens):
        if tokens.dim() != 2:
            raise ValueError(f"Transformer.forward: tokens must be [B, T], got shape {list(tokens.shape)}")
        t = tokens.shape[1]
        if t > self.params.max_seq_len:
            raise ValueError(f"Transformer.forward: {t} tokens exceed max_seq_len {self.params.max_seq_len}")
        h = self.dropout(self.tok_embeddings(tokens))
        cos, sin = rope_tables(self.head_dim, t)  # rows 0..t-1 of llama2.c's [max_seq_len, Dh/2] tables
        for layer in self.layers:
            h = layer(h, cos, sin)
        return self.output(self.norm(h))

    def loss(self, tokens, targets):
        """Mean cross-entropy of forward(tokens) against targets [B, T] (-1 ignored)."""
        logits = self.forward(tokens)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-1)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        """llama2.c's model.generate: crop to the last max_seq_len tokens, run the whole
        model (no cache), take the last position; temperature 0.0 takes the argmax
        (greedy), else logits / temperature, keep the top_k largest (others -inf),
        softmax, torch.multinomial. idx [B, T] -> [B, T + max_new_tokens]."""
        for _ in range(max_new_tokens):
            context = idx if idx.shape[1] <= self.params.max_seq_len else idx[:, -self.params.max_seq_len:]
            logits = self.forward(context)[:, -1, :]
            if temperature == 0.0:
                nxt = torch.topk(logits, k=1, dim=-1).indices
            else:
                logits = logits / temperature
                if top_k is not None:
                    kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, [-1]]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                nxt = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=generator)
            idx = torch.cat((idx, nxt), dim=1)
        return idx


def attention_modules(model):
    """[(attention module, check()'s output name)] in forward order."""
    return [(layer.attention, f"layers.{i}.self_attn.weights") for i, layer in enumerate(model.layers)]


def recognise(module):
    """True for a llama2.c-style Transformer (ours or upstream's), told by structure:
    tok_embeddings, layers[i].attention.wq/wk/wv/wo, feed_forward.w1/w2/w3,
    attention_norm, ffn_norm, norm, output."""
    if not isinstance(module, nn.Module):
        return False
    if not all(isinstance(getattr(module, n, None), nn.Module) for n in ("tok_embeddings", "norm", "output")):
        return False
    layers = getattr(module, "layers", None)
    if not isinstance(layers, nn.ModuleList) or len(layers) == 0:
        return False
    for layer in layers:
        att, ff = getattr(layer, "attention", None), getattr(layer, "feed_forward", None)
        if att is None or ff is None or not all(isinstance(getattr(att, n, None), nn.Linear)
                                                for n in ("wq", "wk", "wv", "wo")):
            return False
        if not all(isinstance(getattr(ff, n, None), nn.Linear) for n in ("w1", "w2", "w3")):
            return False
        if not all(hasattr(layer, n) for n in ("attention_norm", "ffn_norm")):
            return False
    return True


# ----------------------------------------------------------------------------
# Converting: llama2.c names -> tinyformer's decoder_only layout
# ----------------------------------------------------------------------------

# One block, llama2.c suffix -> tinyformer suffix (layers.{i}.X -> transformer.layers.{i}.Y).
BLOCK_KEYS = {
    "attention_norm.weight": "norm1.weight",
    "attention.wq.weight": "self_attn.q_proj.weight",
    "attention.wk.weight": "self_attn.k_proj.weight",
    "attention.wv.weight": "self_attn.v_proj.weight",
    "attention.wo.weight": "self_attn.out_proj.weight",
    "ffn_norm.weight": "norm2.weight",
    "feed_forward.w1.weight": "linear1.weight",
    "feed_forward.w3.weight": "linear3.weight",
    "feed_forward.w2.weight": "linear2.weight",
}
TOP_KEYS = {"tok_embeddings.weight": "embed.weight", "norm.weight": "transformer.norm.weight",
            "output.weight": "lm_head.weight"}
PREFIXES = ("_orig_mod.", "module.")   # torch.compile, DistributedDataParallel


def config_for(dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, max_seq_len, norm_eps, tie):
    """tinyformer's config keys of a llama2.c model (COMMON contract, docs/FAMILIES.md)."""
    config = {
        "arch": "decoder_only", "d_model": dim, "nhead": n_heads, "n_kv_heads": n_kv_heads,
        "num_layers": n_layers, "dim_feedforward": hidden_dim, "activation": "swiglu", "norm": "rms_norm",
        "norm_first": True, "final_norm": True, "layer_norm_eps": float(norm_eps), "vocab_size": vocab_size,
        "max_len": max_seq_len, "pos_encoding": "rotary", "rope_theta": ROPE_THETA, "rope_pairs": "adjacent",
        "embed_scale": False, "attention": "causal", "bias": False, "norm_bias": False, "head_bias": False,
        "qkv": "separate", "tie_embeddings": bool(tie),
    }
    if vocab_size > 2:
        config["bos_id"], config["eos_id"] = 1, 2          # llama2.c's <s> and </s>
    return config


def _shape_error(where, key, t, expected):
    raise ValueError(f"{where}: {key} has shape {list(t.shape)}, expected {expected}")


def _is_mask_buffer(t):
    """llama2.c's [1, 1, T, T] causal mask: 0 on and below the diagonal, -inf above."""
    if not torch.is_tensor(t) or t.dim() != 4 or t.shape[:2] != (1, 1) or t.shape[2] != t.shape[3]:
        return False
    n = t.shape[2]
    expected = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
    return bool(torch.equal(t.reshape(n, n).float(), expected))


def _cleaned(state, where):
    """(state without prefixes, mask buffers and RoPE tables, notes)."""
    out, notes, masks = {}, [], 0
    for key, value in tensors_by_name(state, where).items():
        k = key
        while k.startswith(PREFIXES):
            k = k[len(next(p for p in PREFIXES if k.startswith(p))):]
        if k in out:
            raise ValueError(f"{where}: {key!r} and another key both read as {k!r} without the prefix")
        if k != key and not notes:
            notes.append("key prefix _orig_mod. (torch.compile) / module. (DDP) removed")
        if k.endswith(".attention.mask"):
            if not _is_mask_buffer(value):
                shape = list(value.shape) if torch.is_tensor(value) else type(value).__name__
                raise ValueError(f"{where}: {key} (shape {shape}) is named like llama2.c's causal-mask buffer but "
                                 f"is not one (expected [1, 1, T, T]: 0 on and below the diagonal, -inf above)")
            masks += 1
            continue
        if k in ("freqs_cos", "freqs_sin"):
            out[k] = value         # checked against theta 10000 once the head size is known
            continue
        out[k] = value
    if masks:
        notes.append(f"{masks} causal-mask buffer{'s' if masks != 1 else ''} (attention.mask) dropped: "
                     f"tinyformer's causal attention is that mask")
    return out, notes


def _check_rope_tables(where, cos, sin, head_dim, max_seq_len):
    """The file's own cos/sin tables must be theta 10000's (tinyformer computes them).
    Their shapes are checked first: the tables computed to compare with are then
    no larger than the file's own (max_seq_len is a claim of model_args)."""
    expected = [max_seq_len, head_dim // 2]
    for name, got in (("freqs_cos", cos), ("freqs_sin", sin)):
        if list(got.shape) != expected:
            raise ValueError(f"{where}: {name} has shape {list(got.shape)}, expected {expected} "
                             f"([max_seq_len, head_size / 2])")
    want_cos, want_sin = rope_tables(head_dim, max_seq_len)
    for name, got, want in (("freqs_cos", cos, want_cos), ("freqs_sin", sin, want_sin)):
        got = torch.as_tensor(got).float()
        diff = float((got - want).abs().max()) if got.numel() else 0.0
        if not diff <= 1e-5:
            raise ValueError(f"{where}: {name} differs from RoPE with theta 10000 by up to {diff:.3g}: a model "
                             f"with another rotation cannot be converted as llama2.c's")


def assemble(state, *, n_heads, max_seq_len, norm_eps=1e-5, where, model_args=None):
    """Converted from a llama2.c state_dict (prefixes stripped, masks dropped).
    Sizes, n_kv_heads, hidden_dim and tying are read from the tensors; n_heads and
    max_seq_len come from model_args (a state_dict does not tell them). Every key
    is used exactly once; one left over is refused by name."""
    state = dict(state)
    check_state_dict(state, where, ("tok_embeddings.weight", "norm.weight", "layers.0.attention.wq.weight"), "llama2.c")
    emb = state["tok_embeddings.weight"]
    if emb.dim() != 2:
        _shape_error(where, "tok_embeddings.weight", emb, "[vocab_size, dim]")
    vocab_size, dim = emb.shape
    _positive_int(f"{where}: n_heads", n_heads)
    _positive_int(f"{where}: max_seq_len", max_seq_len)
    if max_seq_len > MAX_SIZE:
        raise ValueError(f"{where}: max_seq_len = {max_seq_len} is above tinyformer's limit of {MAX_SIZE} positions")
    if dim % n_heads or (dim // n_heads) % 2:
        raise ValueError(f"{where}: n_heads = {n_heads}: must divide dim = {dim} into an even head size")
    head = dim // n_heads
    layers = layer_count(state, "layers.", where)
    wk = state["layers.0.attention.wk.weight"] if "layers.0.attention.wk.weight" in state else None
    if wk is None or wk.dim() != 2 or wk.shape[1] != dim or wk.shape[0] % head:
        raise ValueError(f"{where}: layers.0.attention.wk.weight must be [n_kv_heads * {head}, {dim}], got "
                         f"{list(wk.shape) if wk is not None else 'nothing'}")
    n_kv = wk.shape[0] // head
    if n_kv < 1 or n_heads % n_kv:
        raise ValueError(f"{where}: layers.0.attention.wk.weight gives n_kv_heads = {n_kv}, which does not divide "
                         f"n_heads = {n_heads}")
    w1 = state.get("layers.0.feed_forward.w1.weight")
    if w1 is None or w1.dim() != 2:
        raise ValueError(f"{where}: no 2-d layers.0.feed_forward.w1.weight")
    hidden = w1.shape[0]
    kv = n_kv * head
    expected = {"attention_norm.weight": [dim], "attention.wq.weight": [dim, dim], "attention.wk.weight": [kv, dim],
                "attention.wv.weight": [kv, dim], "attention.wo.weight": [dim, dim], "ffn_norm.weight": [dim],
                "feed_forward.w1.weight": [hidden, dim], "feed_forward.w3.weight": [hidden, dim],
                "feed_forward.w2.weight": [dim, hidden]}
    tensors = {}
    for i in range(layers):
        for suffix, target in BLOCK_KEYS.items():
            key = f"layers.{i}.{suffix}"
            if key not in state:
                raise ValueError(f"{where}: {key} is missing")
            t = state.pop(key)
            if list(t.shape) != expected[suffix]:
                _shape_error(where, key, t, expected[suffix])
            tensors[f"transformer.layers.{i}.{target}"] = t
    tensors["embed.weight"] = state.pop("tok_embeddings.weight")
    norm = state.pop("norm.weight")
    if list(norm.shape) != [dim]:
        _shape_error(where, "norm.weight", norm, [dim])
    tensors["transformer.norm.weight"] = norm
    out = state.pop("output.weight", None)
    if out is not None and list(out.shape) != [vocab_size, dim]:
        _shape_error(where, "output.weight", out, [vocab_size, dim])
    tie = out is None or torch.equal(out, emb)
    if not tie:
        tensors["lm_head.weight"] = out
    cos, sin = state.pop("freqs_cos", None), state.pop("freqs_sin", None)
    if cos is not None or sin is not None:
        if cos is None or sin is None:
            raise ValueError(f"{where}: freqs_cos and freqs_sin come together; only one is here")
        _check_rope_tables(where, cos, sin, head, max_seq_len)
    if state:
        raise ValueError(f"{where}: tensors tinyformer cannot place: {', '.join(sorted(state)[:8])}"
                         + (f" and {len(state) - 8} more" if len(state) > 8 else ""))
    if model_args:
        _check_model_args(where, model_args, dim=dim, n_layers=layers, vocab_size=vocab_size, n_kv=n_kv,
                          hidden=hidden)
    config = config_for(dim, hidden, layers, n_heads, n_kv, vocab_size, max_seq_len, norm_eps, tie)
    tensors = {k: v.detach().to(torch.float32).contiguous() for k, v in tensors.items()}
    return Converted(config=config, tensors=tensors, metadata={})


def _check_model_args(where, args, *, dim, n_layers, vocab_size, n_kv, hidden):
    """model_args must agree with the tensors (ModelArgs' own defaults fill the gaps)."""
    found = {"dim": dim, "n_layers": n_layers, "vocab_size": vocab_size}
    for key, value in found.items():
        if args.get(key) is not None and args[key] != value:
            raise ValueError(f"{where}: model_args[{key!r}] = {_shown(args[key])} but the tensors say {value}")
    if args.get("n_kv_heads") is not None and args["n_kv_heads"] != n_kv:
        raise ValueError(f"{where}: model_args['n_kv_heads'] = {_shown(args['n_kv_heads'])} but "
                         f"layers.0.attention.wk.weight says {n_kv}")
    multiple_of = args.get("multiple_of", 32)
    if isinstance(multiple_of, bool) or not isinstance(multiple_of, int) or multiple_of < 1:
        raise ValueError(f"{where}: model_args['multiple_of'] = {_shown(multiple_of)}: expected a positive whole "
                         f"number (llama2.c's FFN width rule rounds up to it)")
    rule = ffn_hidden_dim(dim, args.get("hidden_dim"), multiple_of)
    if isinstance(rule, int) and rule != hidden:
        raise ValueError(f"{where}: model_args give an FFN width of {rule} (hidden_dim "
                         f"{_shown(args.get('hidden_dim'))}, multiple_of {_shown(args.get('multiple_of', 32))}) but "
                         f"layers.0.feed_forward.w1.weight has {hidden} rows")


def _shown(value):
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        text = repr(value)
        return text if len(text) <= 80 else text[:77] + "..."
    return f"a {type(value).__name__}"


def _reference(converted, norm_eps=None):
    """Our Transformer holding the converted weights, in eval mode (for check())."""
    c = converted.config
    args = ModelArgs(dim=c["d_model"], n_layers=c["num_layers"], n_heads=c["nhead"], n_kv_heads=c["n_kv_heads"],
                     vocab_size=c["vocab_size"], hidden_dim=c["dim_feedforward"], multiple_of=1,
                     norm_eps=c["layer_norm_eps"] if norm_eps is None else norm_eps, max_seq_len=c["max_len"])
    model = Transformer(args, mask_buffer=False, tie=c["tie_embeddings"])
    load_weights(model, to_upstream(converted.tensors, c["num_layers"], c["tie_embeddings"]), strict=True)
    return model.eval()


def to_upstream(tensors, n_layers, tie):
    """tinyformer names -> llama2.c names (the inverse of BLOCK_KEYS / TOP_KEYS)."""
    return rename_to_upstream(tensors, TOP_KEYS, BLOCK_KEYS, "layers.", ("output.weight", "tok_embeddings.weight") if tie else None)


def _with_tokenizer(converted, tokenizer):
    if tokenizer is None:
        return converted
    pieces, scores, _ = read_tokenizer_bin(tokenizer, converted.config["vocab_size"])
    vocab, notes = vocabulary_of(pieces, str(tokenizer))
    converted.metadata.update({"tokenizer": "sentencepiece_bpe", "vocab": vocab, "scores": scores})
    converted.notes.extend(notes)
    return converted


def convert_llama2c_checkpoint(path, tokenizer=None):
    """llama2.c's train.py checkpoint -> Converted.

    path: ckpt.pt as train.py writes it ({"model": state_dict, "model_args":
    {dim, n_layers, n_heads, n_kv_heads, vocab_size, multiple_of, max_seq_len,
    dropout, ...}, "iter_num", "best_val_loss", "optimizer", "config"}), read by
    the project's own reader (torch_file.load_torch_file: nothing in it runs).
    tokenizer: the tokenizer.bin to store as the model's vocabulary (else the
    file takes ids). The reference is our Transformer holding the weights."""
    where = str(path)
    ckpt = load_torch_file(path, "llama2.c checkpoint")
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("model"), dict):
        raise ValueError(f"{where}: expected llama2.c's checkpoint dict with 'model' (the state_dict) and "
                         f"'model_args', got {type(ckpt).__name__}"
                         + (f" with keys {sorted(map(str, ckpt))[:8]}" if isinstance(ckpt, dict) else ""))
    args = ckpt.get("model_args")
    if not isinstance(args, dict):
        raise ValueError(f"{where}: model_args is {_shown(args)}, expected a dict (train.py's model_args): "
                         f"n_heads and max_seq_len are not in the tensors")
    defaults = ModelArgs()
    needed = [k for k in ("n_heads", "max_seq_len") if args.get(k) is None]
    if needed:
        raise ValueError(f"{where}: model_args has no {' and no '.join(needed)} (the tensors do not tell them)")
    eps = args.get("norm_eps", defaults.norm_eps)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
        raise ValueError(f"{where}: model_args['norm_eps'] = {_shown(eps)}: expected a number in (0, 1)")
    state, notes = _cleaned(ckpt["model"], where)
    converted = assemble(state, n_heads=args["n_heads"], max_seq_len=args["max_seq_len"], norm_eps=float(eps),
                         where=where, model_args=args)
    converted.notes.extend(notes)
    converted.build_reference_with(lambda: _reference(converted))
    return _with_tokenizer(converted, tokenizer)


def from_module(module, tokenizer=None, **_unused):
    """Converted from a live llama2.c-style Transformer (ours or upstream's);
    reference = the module."""
    if not recognise(module):
        raise ValueError(f"from_module: {type(module).__name__} is not a llama2.c-style Transformer")
    params = getattr(module, "params", None)
    if params is None:
        raise ValueError("from_module: the module has no .params (ModelArgs): n_heads and max_seq_len are unknown")
    state, notes = _cleaned(module.state_dict(), type(module).__name__)
    converted = assemble(state, n_heads=params.n_heads, max_seq_len=params.max_seq_len,
                         norm_eps=float(params.norm_eps), where=type(module).__name__)
    converted.notes.extend(notes)
    converted.reference = module.eval()
    return _with_tokenizer(converted, tokenizer)


# ----------------------------------------------------------------------------
# export.py's .bin files: v0 (legacy) and v1; v2 (int8) is refused by name
# ----------------------------------------------------------------------------

HEADER_FIELDS = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "max_seq_len")


def _read_header(where, data):
    """(version, {field: value}, shared, offset of the weights) from a .bin's bytes."""
    if len(data) < 4:
        raise ValueError(f"{where}: {len(data)} bytes: too short for a llama2.c model.bin header")
    first = struct.unpack_from("<I", data, 0)[0]
    if first == MAGIC:
        if len(data) < 8:
            raise ValueError(f"{where}: {len(data)} bytes: the v1 header (magic 'ak42') is cut before its version")
        version = struct.unpack_from("<i", data, 4)[0]
        if version not in (1, 2):
            raise ValueError(f"{where}: header version = {version}: expected 1 (float32) or 2 (int8 Q8_0); v0 has "
                             f"no magic")
        if len(data) < V1_HEADER_BYTES:
            raise ValueError(f"{where}: {len(data)} bytes: shorter than the v{version} header of {V1_HEADER_BYTES} "
                             f"bytes")
        values = struct.unpack_from("<7i", data, 8)
        shared_byte = data[36]
        if shared_byte not in (0, 1):
            raise ValueError(f"{where}: header shared_classifier = {shared_byte}: expected 0 or 1")
        fields = dict(zip(HEADER_FIELDS, values))
        if version == 2:        # the Q8_0 group size, an int32 right after the shared-classifier byte
            fields["group_size"] = struct.unpack_from("<i", data, 37)[0]
        return version, fields, bool(shared_byte), V1_HEADER_BYTES
    if len(data) < 28:
        raise ValueError(f"{where}: {len(data)} bytes: too short for a legacy (v0) header of 7 int32")
    fields = dict(zip(HEADER_FIELDS, struct.unpack_from("<7i", data, 0)))
    shared = fields["vocab_size"] > 0          # v0: a negative vocab_size means an unshared classifier
    fields["vocab_size"] = abs(fields["vocab_size"])
    return 0, fields, shared, 28


def _float_count(version, f, shared):
    """How many float32 values _layout(version, f, shared) lists, by arithmetic on
    the header's fields: known before any list or array is made (n_layers may
    claim 2^24 blocks; the list of their names alone would take gigabytes)."""
    d, hd, n, h, kv, v, t = (f[k] for k in HEADER_FIELDS)
    if version == 2:
        return n * 2 * d + d                       # the norms; the int8 matrices: _q8_count
    kvd = kv * (d // h)
    per_layer = 2 * d + 2 * d * d + 2 * kvd * d + 3 * hd * d
    count = n * per_layer + v * d + d + (0 if shared else v * d)
    if version == 0:
        count += 2 * t * ((d // h) // 2)
    return count


def _q8_layout(f, shared):
    """v2: [(name, shape)] of the Q8_0 matrices after the norms, in file order;
    each is stored as its int8 values (rows * K, row-major) then its float32
    scales (rows * K / group_size), and the classifier only when not shared."""
    d, hd, n, h, kv, v, _ = (f[k] for k in HEADER_FIELDS)
    kvd = kv * (d // h)
    per = lambda what, shape: [(f"layers.{i}.{what}", shape) for i in range(n)]  # noqa: E731
    return ([("tok_embeddings.weight", (v, d))] + per("attention.wq.weight", (d, d))
            + per("attention.wk.weight", (kvd, d)) + per("attention.wv.weight", (kvd, d))
            + per("attention.wo.weight", (d, d)) + per("feed_forward.w1.weight", (hd, d))
            + per("feed_forward.w2.weight", (d, hd)) + per("feed_forward.w3.weight", (hd, d))
            + ([] if shared else [("output.weight", (v, d))]))


def _q8_count(f, shared):
    """v2: how many int8 values _q8_layout(f, shared) lists, by arithmetic (as _float_count)."""
    d, hd, n, h, kv, v, _ = (f[k] for k in HEADER_FIELDS)
    kvd = kv * (d // h)
    return n * (2 * d * d + 2 * kvd * d + 3 * hd * d) + v * d + (0 if shared else v * d)


def _layout(version, f, shared):
    """[(name, shape)] of the float32 arrays after the header, in file order
    (v2: the norms, which come before its Q8_0 matrices: _q8_layout)."""
    d, hd, n, h, kv, v, t = (f[k] for k in HEADER_FIELDS)
    head = d // h
    kvd = kv * head
    per = lambda what, shape: [(f"layers.{i}.{what}", shape) for i in range(n)]  # noqa: E731
    att_norm, ffn_norm = per("attention_norm.weight", (d,)), per("ffn_norm.weight", (d,))
    wq, wk = per("attention.wq.weight", (d, d)), per("attention.wk.weight", (kvd, d))
    wv, wo = per("attention.wv.weight", (kvd, d)), per("attention.wo.weight", (d, d))
    w1, w2 = per("feed_forward.w1.weight", (hd, d)), per("feed_forward.w2.weight", (d, hd))
    w3 = per("feed_forward.w3.weight", (hd, d))
    emb, final = [("tok_embeddings.weight", (v, d))], [("norm.weight", (d,))]
    cls = [] if shared else [("output.weight", (v, d))]
    if version == 2:
        return att_norm + ffn_norm + final
    if version == 0:
        rope = [("freqs_cos", (t, head // 2)), ("freqs_sin", (t, head // 2))]
        return emb + att_norm + wq + wk + wv + wo + ffn_norm + w1 + w2 + w3 + final + rope + cls
    return att_norm + ffn_norm + final + emb + wq + wk + wv + wo + w1 + w2 + w3 + cls


def read_llama2c_bin(path):
    """(version, header fields, shared classifier, {llama2.c name: float32 tensor})
    of an export.py model.bin. The header's own fields give every size; each is
    checked (1..2^24, dim a multiple of n_heads with an even head size, n_kv_heads
    dividing n_heads) and the file length must be exactly what they add up to,
    before anything is allocated. Raises ValueError naming the field."""
    where = str(path)
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(V1_HEADER_BYTES)
    except OSError as e:
        raise ValueError(f"{where}: cannot read the model.bin: {e.strerror or e}") from None
    version, f, shared, offset = _read_header(where, head if size >= V1_HEADER_BYTES else head[:size])
    label = "legacy v0" if version == 0 else f"v{version}"
    for name in HEADER_FIELDS:
        value = f[name]
        if not 1 <= value <= MAX_SIZE:
            raise ValueError(f"{where}: header {name} = {value if name != 'vocab_size' or version else value}: "
                             f"expected 1..{MAX_SIZE} ({label} header)")
    if f["dim"] % f["n_heads"]:
        raise ValueError(f"{where}: header n_heads = {f['n_heads']} does not divide dim = {f['dim']}")
    if (f["dim"] // f["n_heads"]) % 2:
        raise ValueError(f"{where}: header dim / n_heads = {f['dim'] // f['n_heads']}: RoPE needs an even head size")
    if f["n_kv_heads"] > f["n_heads"] or f["n_heads"] % f["n_kv_heads"]:
        raise ValueError(f"{where}: header n_kv_heads = {f['n_kv_heads']} does not divide n_heads = {f['n_heads']}")
    group = f.get("group_size")
    if version == 2:
        _check_group_size(where, f)
    floats = _float_count(version, f, shared)      # the length check comes before any list or array
    int8s = _q8_count(f, shared) if version == 2 else 0
    expected = offset + 4 * floats + (int8s + 4 * (int8s // group) if version == 2 else 0)
    if size != expected:
        what = "truncated" if size < expected else f"{size - expected} bytes longer than its header says"
        raise ValueError(f"{where}: {size} bytes, but the {label} header (dim {f['dim']}, hidden_dim "
                         f"{f['hidden_dim']}, n_layers {f['n_layers']}, n_heads {f['n_heads']}, n_kv_heads "
                         f"{f['n_kv_heads']}, vocab_size {f['vocab_size']}, max_seq_len {f['max_seq_len']}, "
                         f"{'shared' if shared else 'own'} classifier"
                         + (f", group_size {group}" if version == 2 else "") + f") needs {expected}: {what}")
    layout = _layout(version, f, shared)         # now at most size / 4 entries (each holds >= 1 float)
    buf = torch_file.file_map(path)              # mapped: the tensors are views of the file, read as used
    if len(buf) != expected:
        raise ValueError(f"{where}: the file changed while it was read")
    data = np.frombuffer(buf, dtype="<f4", offset=offset, count=floats)
    tensors, at = {}, 0
    for name, shape in layout:
        n = math.prod(shape)
        tensors[name] = torch.from_numpy(data[at:at + n].astype(np.float32, copy=False).reshape(shape))
        at += n
    if version == 2:
        tensors.update(_read_q8(buf, offset + 4 * floats, f, shared))
    return version, f, shared, tensors


def _check_group_size(where, f):
    """v2's group size must be >= 1 and divide every matrix's input axis K: dim
    (wq, wk, wv, wo, w1, w3, the embedding and classifier) and hidden_dim (w2);
    runq.c's product runs over whole groups of each row."""
    group = f["group_size"]
    if not 1 <= group <= MAX_SIZE:
        raise ValueError(f"{where}: header group_size = {group}: expected 1..{MAX_SIZE} (v2 header)")
    for name in ("dim", "hidden_dim"):
        if f[name] % group:
            raise ValueError(f"{where}: header group_size = {group} does not divide {name} = {f[name]} (Q8_0 groups "
                             f"run along each row; v2 header)")


def _read_q8(buf, at, f, shared):
    """v2's Q8_0 matrices from byte `at` of the mapped file: {name: int8 [rows, K]
    (a view of the file), name + ".scale": float32 [rows, K / group_size]}."""
    group, out = f["group_size"], {}
    for name, (rows, k) in _q8_layout(f, shared):
        values = np.frombuffer(buf, dtype=np.int8, offset=at, count=rows * k)
        at += rows * k
        scales = np.frombuffer(buf, dtype="<f4", offset=at, count=rows * k // group)
        at += 4 * (rows * k // group)
        out[name] = torch.from_numpy(values.reshape(rows, k))
        out[name + q8_0.SCALE_SUFFIX] = torch.from_numpy(scales.astype(np.float32).reshape(rows, k // group))
    return out


def convert_llama2c_bin(path, tokenizer=None, norm_eps=1e-5):
    """An export.py model.bin (v0 legacy or v1) -> Converted. The header gives
    every size; norm_eps is not in the file (llama2.c's 1e-5, run.c's too). v0's
    RoPE tables must be theta 10000's and are then skipped (tinyformer computes
    them). tokenizer: a tokenizer.bin for the vocabulary (else ids)."""
    where = str(path)
    version, f, shared, tensors = read_llama2c_bin(path)
    if version == 2:
        return _with_tokenizer(_convert_v2(where, f, shared, tensors, norm_eps), tokenizer)
    converted = assemble(tensors, n_heads=f["n_heads"], max_seq_len=f["max_seq_len"], norm_eps=norm_eps,
                         where=where)
    if converted.config["dim_feedforward"] != f["hidden_dim"]:    # the layout guarantees it; kept as a guard
        raise ValueError(f"{where}: header hidden_dim = {f['hidden_dim']} disagrees with the weights")
    converted.notes.append(f"read a llama2.c {'v1' if version == 1 else 'legacy v0'} model.bin"
                           + ("; its RoPE tables are theta 10000's and were skipped" if version == 0 else ""))
    converted.build_reference_with(lambda: _reference(converted))
    return _with_tokenizer(converted, tokenizer)


def _convert_v2(where, f, shared, tensors, norm_eps):
    """Converted of a v2 file's tensors (read_llama2c_bin): its int8 values and
    scales kept exactly, as `NAME` I8 + `NAME.scale` F32 (docs/FORMAT.md), so
    the engine computes as runq.c. The engine's embeddings are float: the token
    table is written dequantized (q * s, runq.c's own token table). runq.c's
    classifier is the int8 table (q_tokens) when shared, so the file is untied
    (tie_embeddings false) with lm_head.weight those same int8 values and scales."""
    state, quantized = {}, {}
    for name, t in tensors.items():
        if t.dtype == torch.int8:                   # assemble sees its shape only (a meta tensor: no memory)
            quantized[name] = t
            state[name] = torch.empty(t.shape, device="meta")
        elif not name.endswith(q8_0.SCALE_SUFFIX):
            state[name] = t
    table = tensors["tok_embeddings.weight"], tensors["tok_embeddings.weight" + q8_0.SCALE_SUFFIX]
    state["tok_embeddings.weight"] = torch.from_numpy(q8_0.dequantize_rows(table[0].numpy(), table[1].numpy()))
    state.pop("output.weight", None)
    converted = assemble(state, n_heads=f["n_heads"], max_seq_len=f["max_seq_len"], norm_eps=norm_eps, where=where)
    if converted.config["dim_feedforward"] != f["hidden_dim"]:
        raise ValueError(f"{where}: header hidden_dim = {f['hidden_dim']} disagrees with the weights")
    ours = to_upstream({k: k for k in converted.tensors}, f["n_layers"], False)     # llama2.c name -> ours
    for name, t in quantized.items():
        if name == "tok_embeddings.weight" and not shared:
            continue                                # its own classifier is the head; the table is embed.weight
        target = "lm_head.weight" if name in ("tok_embeddings.weight", "output.weight") else ours[name]
        converted.tensors[target] = t
        converted.tensors[target + q8_0.SCALE_SUFFIX] = tensors[name + q8_0.SCALE_SUFFIX]
    if any(t.is_meta for t in converted.tensors.values()):       # every shape-only stand-in was replaced
        raise ValueError(f"{where}: a Q8_0 matrix found no place (internal)")
    converted.config["tie_embeddings"] = False
    converted.notes.append(f"read a llama2.c v2 model.bin (int8 Q8_0, group size {f['group_size']}): its int8 "
                           f"values and scales are kept as they are; the token embedding is stored dequantized "
                           f"(float32, as runq.c's table) and the head is the int8 "
                           f"{'token table (shared classifier, as runq.c)' if shared else 'classifier'}")
    converted.build_reference_with(lambda: None)
    return converted


def llama2c_bin_bytes(converted, version, group_size=64):
    """The bytes export.py writes for this model (version 0, 1 or 2): written
    here, from a Converted's float tensors (tinyformer names), for tests and for
    run.c / runq.c. Version 2 quantizes with the engine's rule (q8_0.py: halves
    away from zero, where export.py's torch.round takes the even neighbour, so a
    tie may differ by one) in groups of group_size, which must divide dim and
    hidden_dim (export.py would halve it until it divides dim)."""
    if version not in (0, 1, 2):
        raise ValueError(f"llama2c_bin_bytes: version = {version!r}: expected 0, 1 or 2")
    c = converted.config
    state = to_upstream(converted.tensors, c["num_layers"], c["tie_embeddings"])
    shared = c["tie_embeddings"]
    f = {"dim": c["d_model"], "hidden_dim": c["dim_feedforward"], "n_layers": c["num_layers"],
         "n_heads": c["nhead"], "n_kv_heads": c.get("n_kv_heads", c["nhead"]), "vocab_size": c["vocab_size"],
         "max_seq_len": c["max_len"]}
    cos, sin = rope_tables(c["d_model"] // c["nhead"], c["max_len"])
    state["freqs_cos"], state["freqs_sin"] = cos, sin
    values = [f[k] for k in HEADER_FIELDS]
    if version == 0:
        if not shared:
            values[5] = -values[5]
        header = struct.pack("<7i", *values)
    else:
        header = struct.pack("<Ii7iB", MAGIC, version, *values, int(shared))
        if version == 2:
            f["group_size"] = group_size
            _check_group_size("llama2c_bin_bytes", f)
            header += struct.pack("<i", group_size)
        header += b"\0" * (V1_HEADER_BYTES - len(header))
    parts = [header]

    def matrix(name, shape):
        t = state[name].detach().to(torch.float32).contiguous()
        if tuple(t.shape) != tuple(shape):
            raise ValueError(f"llama2c_bin_bytes: {name} has shape {list(t.shape)}, expected {list(shape)}")
        return t.numpy()
    for name, shape in _layout(version, f, shared):
        parts.append(matrix(name, shape).astype("<f4").tobytes())
    if version == 2:
        for name, shape in _q8_layout(f, shared):
            q, s = q8_0.quantize_rows(matrix(name, shape), group_size)
            parts += [q.tobytes(), s.astype("<f4").tobytes()]
    return b"".join(parts)


# ----------------------------------------------------------------------------
# tokenizer.bin (tokenizer.py's export): the SentencePiece vocabulary with scores
# ----------------------------------------------------------------------------

def read_tokenizer_bin(path, vocab_size=None):
    """tokenizer.bin -> (pieces [str], scores [float], max_token_length).
    Layout (little-endian): uint32 max_token_length, then per piece: float32
    score, uint32 length, that many bytes (UTF-8). The file does not store the
    piece count: it is read to its end (and must hold exactly vocab_size pieces
    when given). Every length is checked against the bytes left and against
    max_token_length before it is read. Raises ValueError naming the piece."""
    where = str(path)
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_TOKENIZER_BYTES:       # refused before reading (a FIFO reports 0 and is read up to the limit)
                raise ValueError(f"{where}: {size} bytes, more than a tokenizer.bin's limit of {MAX_TOKENIZER_BYTES}")
            data = fh.read(MAX_TOKENIZER_BYTES + 1)
    except OSError as e:
        raise ValueError(f"{where}: cannot read the tokenizer.bin: {e.strerror or e}") from None
    if len(data) > MAX_TOKENIZER_BYTES:
        raise ValueError(f"{where}: more than {MAX_TOKENIZER_BYTES} bytes: more than a tokenizer.bin's limit")
    if len(data) < 4:
        raise ValueError(f"{where}: {len(data)} bytes: too short for tokenizer.bin's max_token_length")
    max_len = struct.unpack_from("<I", data, 0)[0]
    if not 1 <= max_len <= MAX_TOKEN_BYTES:
        raise ValueError(f"{where}: max_token_length = {max_len}: expected 1..{MAX_TOKEN_BYTES}")
    pieces, scores, at = [], [], 4
    while at < len(data):
        i = len(pieces)
        if vocab_size is not None and i >= vocab_size:
            raise ValueError(f"{where}: {len(data) - at} bytes after piece {i - 1}: more than the model's "
                             f"vocab_size = {vocab_size} pieces")
        if len(data) - at < 8:
            raise ValueError(f"{where}: piece {i}: truncated ({len(data) - at} bytes left, its score and length "
                             f"take 8)")
        score, n = struct.unpack_from("<fI", data, at)
        at += 8
        if n > max_len:
            raise ValueError(f"{where}: piece {i}: length {n} exceeds max_token_length = {max_len}")
        if n > len(data) - at:
            raise ValueError(f"{where}: piece {i}: length {n} but only {len(data) - at} bytes are left (truncated)")
        if not math.isfinite(score):
            raise ValueError(f"{where}: piece {i}: score {score} is not finite")
        raw = data[at:at + n]
        at += n
        try:
            pieces.append(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise ValueError(f"{where}: piece {i}: its {n} bytes are not UTF-8 ({e.reason} at byte {e.start})") \
                from None
        scores.append(float(score))
    if not pieces:
        raise ValueError(f"{where}: no pieces after max_token_length")
    if vocab_size is not None and len(pieces) != vocab_size:
        raise ValueError(f"{where}: {len(pieces)} pieces, but the model's vocab_size is {vocab_size}: not this "
                         f"model's tokenizer.bin")
    return pieces, scores, max_len


def tokenizer_bin_bytes(pieces, scores):
    """The tokenizer.bin bytes of pieces (str) and scores (tokenizer.py's layout)."""
    if len(pieces) != len(scores) or not pieces:
        raise ValueError(f"tokenizer_bin_bytes: {len(pieces)} pieces and {len(scores)} scores: expected the same "
                         f"non-zero number")
    encoded = [p.encode("utf-8") for p in pieces]
    out = [struct.pack("<I", max(len(b) for b in encoded))]
    for b, s in zip(encoded, scores):
        out.append(struct.pack("<fI", s, len(b)) + b)
    return b"".join(out)


# tokenizer.py writes <s> and </s> framed by newlines; tinyformer's tokens hold no control character
FRAMED_SPECIALS = {"\n<s>\n": "<s>", "\n</s>\n": "</s>"}


def vocabulary_of(pieces, where):
    """(vocab for tinyformer's metadata, notes): the pieces as they are, control
    characters included (llama2.c's own tokenizer.bin has 24 pieces ending in "\\r"
    and 12 single C1 characters; the engine shows them escaped), except
    tokenizer.py's "\\n<s>\\n" / "\\n</s>\\n" stored as "<s>" / "</s>"."""
    vocab, notes = [], []
    for i, p in enumerate(pieces):
        if p in FRAMED_SPECIALS:
            notes.append(f"tokenizer piece {i} {p!r} stored as {FRAMED_SPECIALS[p]!r} (tokenizer.py frames it with "
                         f"newlines; the engine's BOS/EOS ids write nothing)")
            p = FRAMED_SPECIALS[p]
        vocab.append(p)
    return vocab, notes


# ----------------------------------------------------------------------------
# run.c's encoding with such a vocabulary (the reference for tokenizer "sentencepiece_bpe")
# ----------------------------------------------------------------------------

def encode(text, vocab, scores, dummy_prefix=True):
    """Token ids of `text` the way llama2.c's run.c encodes (without BOS/EOS):
    a leading " " when the text is non-empty (SentencePiece's dummy prefix), each
    UTF-8 character looked up as a piece, else its bytes as the pieces "<0xXX>";
    then repeatedly merge the adjacent pair whose concatenation is a piece with
    the HIGHEST score (the leftmost of equal scores), until no pair is a piece.
    This plain loop is O(n^2) in the text's length: keep texts short, or split
    them where no piece crosses (encode_words)."""
    index = {p: i for i, p in enumerate(vocab)}
    if dummy_prefix and text:
        text = " " + text
    ids = []
    for ch in text:
        if ch in index:
            ids.append(index[ch])
            continue
        for b in ch.encode("utf-8"):
            piece = f"<0x{b:02X}>"
            if piece not in index:
                raise ValueError(f"encode: {ch!r} is not a piece and the byte piece {piece} is not either")
            ids.append(index[piece])
    while True:
        best, at = None, -1
        for i in range(len(ids) - 1):
            j = index.get(vocab[ids[i]] + vocab[ids[i + 1]])
            if j is not None and (best is None or scores[j] > scores[best]):
                best, at = j, i
        if best is None:
            return ids
        ids[at:at + 2] = [best]


def encode_words(text, vocab, scores):
    """encode() of a long text, chunk by chunk: split before every space. The same
    ids as encode(text) when no piece holds a space after its first character (so
    no merge can cross a chunk's start), which encode_words checks."""
    if any(" " in p[1:] for p in vocab):
        raise ValueError("encode_words: a piece holds a space after its first character; use encode()")
    cache, ids = {}, []
    chunks = [" " + text] if text else []
    if chunks:
        chunks = [c for c in _split_before_spaces(chunks[0])]
    for chunk in chunks:
        if chunk not in cache:
            cache[chunk] = encode(chunk, vocab, scores, dummy_prefix=False)
        ids.extend(cache[chunk])
    return ids


def _split_before_spaces(text):
    start = 0
    for i in range(1, len(text)):
        if text[i] == " ":
            yield text[start:i]
            start = i
    yield text[start:]


def decode(ids, vocab):
    """Text of ids as run.c prints them: a piece right after BOS (id 1) drops its
    leading space; "<0xXX>" pieces are raw bytes; <s> / </s> / <unk> print nothing
    here (run.c stops at them or never samples them)."""
    out, previous = bytearray(), None
    for i in ids:
        piece = vocab[i]
        if i in (0, 1, 2):
            previous = i
            continue
        if previous == 1 and piece.startswith(" "):
            piece = piece[1:]
        if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
            out.append(int(piece[3:5], 16))
        else:
            out.extend(piece.encode("utf-8"))
        previous = i
    return out.decode("utf-8", errors="replace")
