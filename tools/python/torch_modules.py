"""The reference modules of docs/FORMAT.md, built from stock PyTorch modules,
and the PyTorch side of every comparison with tinyformer.

EncoderDecoderRef: attributes src_embed, tgt_embed, pos_embed (learned only),
transformer (nn.Transformer(batch_first=True)), generator.
SingleStackRef: embed, pos_embed (learned only), transformer
(nn.TransformerEncoder of nn.TransformerEncoderLayer(batch_first=True), with
norm iff final_norm; with pos_encoding "relative_bias" its first layer's
attention holds T5's table, relative_attention_bias), lm_head. Their state_dict() names are the checkpoint's
tensor names. Every optional key of FORMAT.md section 1 is built (the twin
of any file the engine loads): "norm": "rms_norm" -> RmsNorm (below),
"layer_norm_std" -> LayerNormStd (below), "layer_norm" without "norm_bias" ->
nn.LayerNorm without bias; "activation": "gelu_tanh" -> F.gelu(approximate=
"tanh"), "silu" -> F.silu, "swiglu" -> a GatedEncoderLayer (below), which adds
linear3; "bias" / "head_bias" false -> those Linear layers and in_proj have no
bias; rotary positions, n_kv_heads < nhead or a mask_value -> every attention
is a TwinAttention (below) instead of nn.MultiheadAttention. What the file
holds in another layout (qkv "separate", a tied head) is put into the
modules' layout by twin_state(tensors, cfg), the one place that reads a
file's names into the modules.

encoder_decoder_forward / single_stack_forward: FORMAT.md's forward semantics
on stock modules (either batch_first), used by the Ref modules and by
tools/python/tinyformer_export.py's check on the modules a file was exported from.
Capture / NoFastPath: per-head attention weights from PyTorch's plain
(non-fused) path, with FORMAT.md's zero rows for fully masked padded queries.

Shared by tools/python/make_reference.py, tools/python/train_toy.py,
tools/python/tinyformer_export.py (check's twin of a file) and
tools/python/torch_trace.py.
"""

import functools
import math
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from numpy_reference import alibi_slopes, sinusoidal_table  # noqa: E402  (the one table, float64)
from pickle_reader import shown  # noqa: E402  (a name from a stranger's file, for a message)


def embed_tokens(cfg, table, ids, pos_embed=None):
    """E[ids] * (sqrt(d_model) if embed_scale) + P[0..T-1], [B, T, D]."""
    x = table(ids)
    if cfg["embed_scale"]:
        x = x * math.sqrt(cfg["d_model"])
    t = x.shape[1]
    if cfg["pos_encoding"] == "learned":
        x = x + pos_embed(torch.arange(t))
    elif cfg["pos_encoding"] == "sinusoidal":
        x = x + torch.from_numpy(sinusoidal_table(t, cfg["d_model"], np.float32))
    return x


def _batch_first(stack):
    """batch_first of a TransformerEncoder / TransformerDecoder (its first layer's attention)."""
    return stack.layers[0].self_attn.batch_first


def encoder_decoder_forward(cfg, transformer, src_embed, tgt_embed, generator, src_ids, tgt_ids,
                            src_key_padding_mask=None, tgt_key_padding_mask=None, pos_embed=None):
    """FORMAT.md: memory = encoder(x_src, src padding); h = decoder(x_tgt, memory,
    causal tgt_mask, tgt padding, memory padding = src padding); logits = generator(h).
    Inputs and logits are batch-first whatever the modules' batch_first."""
    t = tgt_ids.shape[1]
    causal = torch.ones(t, t, dtype=torch.bool).triu(1)  # True = blocked (PyTorch bool mask)
    src = embed_tokens(cfg, src_embed, src_ids, pos_embed)
    tgt = embed_tokens(cfg, tgt_embed, tgt_ids, pos_embed)
    batch_first = _batch_first(transformer.encoder)
    if not batch_first:
        src, tgt = src.transpose(0, 1), tgt.transpose(0, 1)
    memory = transformer.encoder(src, src_key_padding_mask=src_key_padding_mask)
    h = transformer.decoder(tgt, memory, tgt_mask=causal, tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=src_key_padding_mask)
    if not batch_first:
        h = h.transpose(0, 1)
    return generator(h)


def single_stack_forward(cfg, stack, embed, head, ids, key_padding_mask=None, prefix_len=None, pos_embed=None):
    """FORMAT.md: one nn.TransformerEncoder with the causal, prefix-LM (query i sees
    key j iff j < prefix_len[b] or j <= i) or no mask; key padding on top, a
    sliding_window's i - W < j, and ALiBi's or T5's bias on the scores."""
    b, t = ids.shape
    i = torch.arange(t)[:, None]
    j = torch.arange(t)[None, :]
    kind = cfg["attention"]
    if kind == "causal":
        mask = j > i                                   # [T, T], True = blocked
    elif kind == "prefix_lm":
        sees = (j[None] < prefix_len[:, None, None]) | (j <= i)[None]    # [B, T, T]
        mask = (~sees).repeat_interleave(cfg["nhead"], dim=0)            # [B*H, T, T], row b*H+h
    else:
        mask = None
    window = cfg.get("sliding_window")
    if window is not None:
        # Mistral's sliding window (causal models only): query i also loses the keys j <= i - W.
        mask = mask | (j <= i - window)
    bias = None
    if cfg["pos_encoding"] == "alibi":
        # ALiBi (Press et al.): -slope_h * |i - j| on head h's scores.
        slopes = torch.tensor(alibi_slopes(cfg["nhead"]), dtype=torch.float32)   # [H]
        distance = (i - j).abs().to(torch.float32)                               # [T, T]
        bias = -slopes[:, None, None] * distance[None]                           # [H, T, T]
    elif cfg["pos_encoding"] == "relative_bias":
        # T5: the stack's one table, held by its first layer's attention, indexed by bucket(j - i).
        from position_schemes import relative_bias
        table = stack.layers[0].self_attn.relative_attention_bias.weight         # [buckets, H]
        positions = torch.arange(t)
        bias = relative_bias(table, positions, positions, kind != "causal", cfg.get("relative_max_distance", 128))
    if bias is not None:
        # The float attn_mask PyTorch adds to q k^T / sqrt(dk), per head: the bias where the key
        # is allowed, -inf where it is blocked. [B*H, T, T], row b*H+h.
        h = cfg["nhead"]
        blocked = torch.zeros(b, t, t, dtype=torch.bool) if mask is None else mask.reshape(-1, t, t)
        blocked = blocked.expand(b, t, t) if blocked.shape[0] == 1 else blocked[::h]   # [B, T, T]
        mask = bias[None].expand(b, h, t, t).masked_fill(blocked[:, None], float("-inf")).reshape(b * h, t, t)
    x = embed_tokens(cfg, embed, ids, pos_embed)
    batch_first = _batch_first(stack)
    if not batch_first:
        x = x.transpose(0, 1)
    h = stack(x, mask=mask, src_key_padding_mask=key_padding_mask)
    if not batch_first:
        h = h.transpose(0, 1)
    return head(h)


class RmsNorm(nn.Module):
    """RMSNorm over the last axis in float32: y = x * rsqrt(mean(x^2) + eps) * weight.
    No mean is subtracted and there is no bias (Zhang & Sennrich 2019; the norm of
    llama2.c and Llama). State: `weight` [d] only."""

    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        mean_square = (x * x).mean(dim=-1, keepdim=True)
        return x * torch.rsqrt(mean_square + self.eps) * self.weight


class GatedEncoderLayer(nn.TransformerEncoderLayer):
    """nn.TransformerEncoderLayer with the SwiGLU feed-forward block (Shazeer 2020):
    FFN(x) = linear2(silu(linear1(x)) * linear3(x)), linear1 and linear3 [F, D],
    linear2 [D, F]. Everything else (attention, norms, residuals, pre/post-LN) is
    the stock layer's; only its feed-forward step is replaced."""

    def __init__(self, d_model, dim_feedforward, **kwargs):
        super().__init__(d_model, dim_feedforward=dim_feedforward, activation=F.silu, **kwargs)
        self.linear3 = nn.Linear(d_model, dim_feedforward)

    def _ff_block(self, x):
        gated = F.silu(self.linear1(x)) * self.linear3(x)
        return self.dropout2(self.linear2(self.dropout(gated)))


class LayerNormStd(nn.Module):
    """The Annotated Transformer's norm (`norm: "layer_norm_std"`): weight * (x - mean)
    / (unbiased std + eps) + bias; the formula is families/annotated.py's
    layer_norm_std. State: `weight`, and `bias` unless the config's norm_bias is false."""

    def __init__(self, d, eps, bias=True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d)) if bias else None

    def forward(self, x):
        from families.annotated import layer_norm_std
        return layer_norm_std(x, self.weight, self.bias, self.eps)


def _norm_module(cfg, d):
    """The config's norm: nn.LayerNorm(d) (layer_norm; without bias when norm_bias
    is false), LayerNormStd (layer_norm_std) or RmsNorm (rms_norm)."""
    kind, eps, bias = cfg.get("norm", "layer_norm"), cfg["layer_norm_eps"], cfg.get("norm_bias", True)
    if kind == "rms_norm":
        return RmsNorm(d, eps)
    if kind == "layer_norm_std":
        return LayerNormStd(d, eps, bias)
    if kind != "layer_norm":
        raise ValueError(f"config norm {kind!r}: the reference modules build layer_norm, layer_norm_std or rms_norm")
    norm = nn.LayerNorm(d, eps=eps)
    if not bias:
        norm.bias = None                      # F.layer_norm without + b
    return norm


def _activation(cfg):
    """The config's activation as nn.Transformer* layers take it."""
    act = cfg["activation"]
    if act in ("relu", "gelu"):
        return act
    if act == "gelu_tanh":
        return functools.partial(F.gelu, approximate="tanh")   # nn.GELU(approximate="tanh")
    if act in ("silu", "swiglu"):
        return F.silu
    raise ValueError(f"config activation {act!r}: expected relu, gelu, gelu_tanh, silu or swiglu")


def needs_twin_attention(cfg):
    """True when nn.MultiheadAttention cannot compute the config's attention:
    rotary positions, fewer K/V heads than heads, or a mask_value."""
    return (cfg.get("pos_encoding") == "rotary" or cfg.get("n_kv_heads", cfg["nhead"]) != cfg["nhead"]
            or cfg.get("mask_value") is not None)


def _shape_layer(layer, cfg, d, attentions):
    """Make a stock layer the config's: its norms, its attentions (TwinAttention
    where needed), no Linear biases when bias is false, and never PyTorch's fused
    path (activation_relu_or_gelu is only read to choose that path)."""
    layer.activation_relu_or_gelu = 0
    for name in ("norm1", "norm2", "norm3"):
        if hasattr(layer, name):
            setattr(layer, name, _norm_module(cfg, d))
    bias = cfg.get("bias", True)
    for name in attentions:
        if needs_twin_attention(cfg):
            rotary = ((cfg.get("rope_theta", 10000.0), cfg.get("rope_pairs", "adjacent"))
                      if cfg.get("pos_encoding") == "rotary" and name == "self_attn" else None)
            setattr(layer, name, TwinAttention(d, cfg["nhead"], cfg.get("n_kv_heads", cfg["nhead"]), bias,
                                               rotary=rotary, mask_value=cfg.get("mask_value")))
        elif not bias:
            attn = getattr(layer, name)
            attn.in_proj_bias = None
            attn.out_proj.bias = None
    if not bias:
        for name in ("linear1", "linear2", "linear3"):
            if hasattr(layer, name):
                getattr(layer, name).bias = None
    return layer


def _encoder_layer(cfg, d):
    """One single-stack layer of the config: stock, or gated (swiglu), then shaped."""
    kwargs = dict(nhead=cfg["nhead"], dropout=0.0, layer_norm_eps=cfg["layer_norm_eps"], batch_first=True,
                  norm_first=cfg["norm_first"])
    if cfg["activation"] == "swiglu":
        layer = GatedEncoderLayer(d, cfg["dim_feedforward"], **kwargs)
    else:
        layer = nn.TransformerEncoderLayer(d, dim_feedforward=cfg["dim_feedforward"], activation=_activation(cfg),
                                           **kwargs)
    return _shape_layer(layer, cfg, d, ["self_attn"])


class EncoderDecoderRef(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = dict(cfg)
        d = cfg["d_model"]
        self.src_embed = nn.Embedding(cfg["src_vocab_size"], d)
        self.tgt_embed = nn.Embedding(cfg["tgt_vocab_size"], d)
        if cfg["pos_encoding"] == "learned":
            self.pos_embed = nn.Embedding(cfg["max_len"], d)
        self.transformer = nn.Transformer(
            d_model=d, nhead=cfg["nhead"], num_encoder_layers=cfg["num_encoder_layers"],
            num_decoder_layers=cfg["num_decoder_layers"], dim_feedforward=cfg["dim_feedforward"],
            dropout=0.0, activation=_activation(cfg), layer_norm_eps=cfg["layer_norm_eps"],
            batch_first=True, norm_first=cfg["norm_first"])
        self.transformer.encoder.enable_nested_tensor = False  # never the nested-tensor fast path
        for layer in self.transformer.encoder.layers:
            _shape_layer(layer, cfg, d, ["self_attn"])
        for layer in self.transformer.decoder.layers:
            _shape_layer(layer, cfg, d, ["self_attn", "multihead_attn"])
        self.transformer.encoder.norm = _norm_module(cfg, d)
        self.transformer.decoder.norm = _norm_module(cfg, d)
        self.generator = nn.Linear(d, cfg["tgt_vocab_size"], bias=cfg.get("head_bias", True))

    def forward(self, src_ids, tgt_ids, src_key_padding_mask=None, tgt_key_padding_mask=None):
        return encoder_decoder_forward(self.cfg, self.transformer, self.src_embed, self.tgt_embed, self.generator,
                                       src_ids, tgt_ids, src_key_padding_mask, tgt_key_padding_mask,
                                       getattr(self, "pos_embed", None))


class SingleStackRef(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = dict(cfg)
        d = cfg["d_model"]
        self.embed = nn.Embedding(cfg["vocab_size"], d)
        if cfg["pos_encoding"] == "learned":
            self.pos_embed = nn.Embedding(cfg["max_len"], d)
        layer = _encoder_layer(cfg, d)
        norm = _norm_module(cfg, d) if cfg["final_norm"] else None
        self.transformer = nn.TransformerEncoder(layer, cfg["num_layers"], norm=norm, enable_nested_tensor=False)
        if cfg["pos_encoding"] == "relative_bias":
            # T5's layout: one [buckets, H] table for the stack, in its first layer's attention
            # (transformer.layers.0.self_attn.relative_attention_bias.weight).
            self.transformer.layers[0].self_attn.relative_attention_bias = nn.Embedding(
                cfg.get("relative_buckets", 32), cfg["nhead"])
        self.lm_head = nn.Linear(d, cfg["vocab_size"], bias=cfg.get("head_bias", True))

    def forward(self, ids, key_padding_mask=None, prefix_len=None):
        return single_stack_forward(self.cfg, self.transformer, self.embed, self.lm_head, ids, key_padding_mask,
                                    prefix_len, getattr(self, "pos_embed", None))


def build_module(cfg):
    if cfg["arch"] == "encoder_decoder" and cfg.get("pos_encoding") in ("rotary", "alibi", "relative_bias"):
        raise ValueError(f"pos_encoding {cfg['pos_encoding']!r} is for decoder_only and encoder_only models "
                         f"(docs/FORMAT.md), not encoder_decoder")
    return EncoderDecoderRef(cfg) if cfg["arch"] == "encoder_decoder" else SingleStackRef(cfg)


def twin_state(tensors, cfg):
    """A file's tensors ({name: numpy or torch}) as the state_dict of build_module(cfg),
    in float32: with qkv "separate", each attention's q_proj, k_proj, v_proj (weight,
    and bias when there is one) stacked into in_proj_weight / in_proj_bias, rows
    [W_Q; W_K; W_V] (FORMAT.md); with tie_embeddings, the head's weight is the token
    embedding (embed.weight, or tgt_embed.weight for encoder_decoder). Every other
    name is kept, so a strict load_state_dict refuses what the config does not say."""
    state = {k: torch.from_numpy(np.asarray(v, dtype=np.float32)) if not torch.is_tensor(v) else v.float()
             for k, v in tensors.items()}
    if cfg.get("qkv", "fused") == "separate":
        fused = [n for n in state if n.endswith((".in_proj_weight", ".in_proj_bias"))]
        if fused:
            raise ValueError(f"its config says qkv \"separate\" but it holds {len(fused)} fused in_proj tensors "
                             f"(the first: {shown(fused[0])})")
        for name in [n for n in state if n.endswith(".q_proj.weight")]:
            prefix = name[: -len("q_proj.weight")]
            for part in ("weight", "bias"):
                parts = [f"{prefix}{x}_proj.{part}" for x in "qkv"]
                if all(p in state for p in parts):
                    state[f"{prefix}in_proj_{part}"] = torch.cat([state.pop(p) for p in parts])
    if cfg.get("tie_embeddings", False):
        head, table = ("generator", "tgt_embed") if cfg["arch"] == "encoder_decoder" else ("lm_head", "embed")
        if f"{head}.weight" in state:
            raise ValueError(f"its config ties the head to {table}.weight (tie_embeddings) but it also holds "
                             f"{head}.weight")
        if f"{table}.weight" in state:
            state[f"{head}.weight"] = state[f"{table}.weight"]
    return state


# ----------------------------------------------------------------------------
# Attention that nn.MultiheadAttention cannot compute
# ----------------------------------------------------------------------------


def additive_part(attn_mask, blocked):
    """[B, H, L, S] what a float attn_mask adds to the scores of the cells a query may
    attend (ALiBi's -slope_h |i - j|), 0 at blocked cells (`blocked`, blocked_cells'
    [B, H, L, S]: the -inf of the mask and key padding), as FORMAT.md's trace name
    `bias`; None for no mask or a Boolean one. attn_mask as MultiheadAttention takes
    it: [L, S] or [B*H, L, S]."""
    if attn_mask is None or attn_mask.dtype == torch.bool:
        return None
    b, h, l, s = blocked.shape
    added = attn_mask.expand(b, h, l, s) if attn_mask.dim() == 2 else attn_mask.view(b, h, l, s)
    return added.masked_fill(blocked, 0.0)


def heads_of(x, n_heads, n_query_heads=None):
    """[B, n, n_heads*Dh] -> [B, n_heads, n, Dh]; with n_query_heads, each of the
    n_heads K/V heads repeated for the n_query_heads / n_heads query heads that
    read it (query head h reads K/V head h // group: grouped-query attention)."""
    b, n, width = x.shape
    per_head = x.reshape(b, n, n_heads, width // n_heads).transpose(1, 2)
    if n_query_heads is None or n_query_heads == n_heads:
        return per_head
    return per_head.repeat_interleave(n_query_heads // n_heads, dim=1)


def head_scores(q, k, n_heads, n_kv_heads):
    """Q K^T / sqrt(Dh) per head, [B, H, L, S], from q [B, L, H*Dh] and k [B, S, Hkv*Dh]."""
    qh = heads_of(q, n_heads)
    return qh @ heads_of(k, n_kv_heads, n_heads).transpose(-1, -2) / math.sqrt(qh.shape[-1])


class TwinAttention(nn.Module):
    """Multi-head attention as docs/FORMAT.md defines it, for what nn.MultiheadAttention
    cannot compute: rotary positions (q and k of each head turned by their token's
    position 0..n-1 after the projection, tools/python/position_schemes.apply_rotary),
    n_kv_heads < num_heads K/V heads (query head h reads K/V head h // (H / Hkv)), and a
    mask_value that REPLACES masked scores (masked_fill; without it masked scores
    are -inf). Called as nn.MultiheadAttention is (batch_first), so the stock
    layers call it unchanged. State: in_proj_weight [D + 2 Hkv Dh, D] (rows Q, K, V),
    in_proj_bias (when bias), out_proj. `heads` is an nn.Identity that z = Concat(heads)
    passes through before out_proj: the hook point of one head's output. After each
    call, .last holds the trace's names of the call ([B, ...], FORMAT.md section 3): q_unrotated, k_unrotated
    (rotary), q, k, v ([B, S, Hkv Dh]), scores, bias (a float attn_mask's part), and
    weights, z, output as computed (a query with no key to see has NaN rows there,
    as PyTorch's softmax gives; Capture(sanitize=True) writes FORMAT's zeros)."""

    def __init__(self, d, nhead, n_kv_heads, bias, rotary=None, mask_value=None):
        super().__init__()
        if d % nhead or nhead % n_kv_heads:
            raise ValueError(f"TwinAttention: d_model {d}, nhead {nhead}, n_kv_heads {n_kv_heads}: nhead must "
                             f"divide d_model and n_kv_heads divide nhead")
        self.embed_dim, self.num_heads, self.n_kv_heads = d, nhead, n_kv_heads
        self.head_dim = d // nhead
        self.batch_first = True
        self._qkv_same_embed_dim = True       # read by the stock layers' fast-path test only
        width = d + 2 * n_kv_heads * self.head_dim
        self.in_proj_weight = nn.Parameter(torch.empty(width, d))
        self.in_proj_bias = nn.Parameter(torch.zeros(width)) if bias else None
        self.out_proj = nn.Linear(d, d, bias=bias)
        nn.init.xavier_uniform_(self.in_proj_weight)
        self.rotary = rotary                  # (theta, pairs) or None
        self.mask_value = mask_value
        # z = Concat(heads) before W_O, as a named point a forward hook can read or
        # replace (tools/python/study_reference.py patches one head's columns of it);
        # an identity: no parameter, no state_dict entry, the same numbers.
        self.heads = nn.Identity()
        self.last = {}

    def _project(self, x, lo, hi):
        b = None if self.in_proj_bias is None else self.in_proj_bias[lo:hi]
        return F.linear(x, self.in_proj_weight[lo:hi], b)

    def _turn(self, x, heads):
        """[B, n, heads*Dh] with each head turned by positions 0..n-1."""
        from position_schemes import apply_rotary
        b, n, _ = x.shape
        theta, pairs = self.rotary
        turned = apply_rotary(heads_of(x, heads), torch.arange(n), theta, pairs)   # [B, heads, n, Dh]
        return turned.transpose(1, 2).reshape(b, n, heads * self.head_dim)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True):
        d, h, hkv, dh = self.embed_dim, self.num_heads, self.n_kv_heads, self.head_dim
        kv = hkv * dh
        b, l, s = query.shape[0], query.shape[1], key.shape[1]
        q = self._project(query, 0, d)
        k = self._project(key, d, d + kv)
        v = self._project(value, d + kv, d + 2 * kv)
        last = {}
        if self.rotary is not None:
            last.update(q_unrotated=q, k_unrotated=k)
            q, k = self._turn(q, h), self._turn(k, hkv)
        scores = head_scores(q, k, h, hkv)                                          # [B, H, L, S]
        blocked = blocked_cells((b, h, l, s), attn_mask, key_padding_mask)
        added = additive_part(attn_mask, blocked)
        x = scores if added is None else scores + added
        fill = float("-inf") if self.mask_value is None else float(self.mask_value)
        weights = F.softmax(x.masked_fill(blocked, fill), dim=-1)
        z = self.heads((weights @ heads_of(v, hkv, h)).transpose(1, 2).reshape(b, l, d))
        out = self.out_proj(z)
        last.update(q=q, k=k, v=v, scores=scores)
        if added is not None:
            last["bias"] = added
        last.update(weights=weights, z=z, output=out)
        self.last = {name: t.detach() for name, t in last.items()}
        if not need_weights:
            return out, None
        return out, (weights.mean(dim=1) if average_attn_weights else weights)


# ----------------------------------------------------------------------------
# Capturing per-head attention weights from PyTorch's plain path
# ----------------------------------------------------------------------------


def stack_attention_names(arch, transformer):
    """[(MultiheadAttention module, the name of its weights in `forward --attention`
    and in a trace, "decoder.1.cross_attn.weights")] of an
    nn.Transformer (encoder_decoder) or an nn.TransformerEncoder (single-stack),
    in forward order. A list, not a dict: one module instance used as several
    layers appears once per layer."""
    names = []
    if arch == "encoder_decoder":
        for i, layer in enumerate(transformer.encoder.layers):
            names.append((layer.self_attn, f"encoder.{i}.self_attn.weights"))
        for i, layer in enumerate(transformer.decoder.layers):
            names.append((layer.self_attn, f"decoder.{i}.self_attn.weights"))
            names.append((layer.multihead_attn, f"decoder.{i}.cross_attn.weights"))
    else:
        for i, layer in enumerate(transformer.layers):
            names.append((layer.self_attn, f"layers.{i}.self_attn.weights"))
    return names


def attention_names(module, cfg):
    """[(MultiheadAttention module, output name)] of a Ref module."""
    return stack_attention_names(cfg["arch"], module.transformer)


def blocked_cells(shape, attn_mask, key_padding_mask):
    """[B, H, L, S] True where a query may not see a key, from the bool masks
    given to MultiheadAttention (attn_mask [L, S] or [B*H, L, S],
    key_padding_mask [B, S]; True = blocked)."""
    b, h, l, s = shape
    blocked = torch.zeros(b, h, l, s, dtype=torch.bool)
    if attn_mask is not None:
        if attn_mask.dtype != torch.bool:      # a float mask (ALiBi): -inf = blocked, finite = a bias
            attn_mask = torch.isneginf(attn_mask)
        blocked = blocked | (attn_mask if attn_mask.dim() == 2 else attn_mask.view(b, h, l, s))
    if key_padding_mask is not None:
        assert key_padding_mask.dtype == torch.bool
        blocked = blocked | key_padding_mask[:, None, None, :]
    return blocked


def _fully_masked_queries(shape, attn_mask, key_padding_mask):
    """[B, L] True where a query may see no key (blocked_cells)."""
    return blocked_cells(shape, attn_mask, key_padding_mask).all(dim=-1).any(dim=1)


class Capture:
    """Wraps each MultiheadAttention.forward to force need_weights=True and
    average_attn_weights=False and stash the per-head weights [B, H, L, S]
    (batch-major whatever batch_first). In PyTorch 1.13 the (non-fast-path)
    computation is the same whether or not weights are asked for, which
    tools/python/make_reference.py checks.

    `names`: [(MultiheadAttention, output name)] in forward order
    (stack_attention_names) or {MultiheadAttention: output name}, or a Ref
    module and its cfg: Capture(module, cfg, sanitize). A module listed under
    several names (one layer instance shared by several layers) takes them in
    turn, one per call, in the order listed.

    sanitize=True: a query whose every key is masked gets NaN from PyTorch's
    softmax (all -inf). Such a query must be padding (checked); its attention
    output row and weight row are set to 0, which is FORMAT.md's definition.
    Without this, the NaN rows of one layer poison every position of the row
    in the next layer (0 * NaN = NaN in weights @ V).

    A self-attention's queries are padding where its key_padding_mask says so;
    a cross-attention's queries are the target's, whose padding it is never
    given: query_padding = {MultiheadAttention: [B, L] bool, True = padding}
    supplies it (without it, a cross-attention query that sees no key, e.g.
    a batch row whose source is all padding, is refused)."""

    def __init__(self, names, cfg=None, sanitize=False, query_padding=None):
        if cfg is not None:
            names = attention_names(names, cfg)
        self.query_padding = dict(query_padding or {})
        self.weights = {}
        self.fully_masked = {}     # name -> [(b, l), ...] queries with no visible key
        self.sanitize = sanitize
        self._originals = []
        by_module = {}         # id(module) -> (module, [its names in forward order])
        for mha, name in (names.items() if isinstance(names, dict) else names):
            by_module.setdefault(id(mha), (mha, []))[1].append(name)
        for mha, module_names in by_module.values():
            self._wrap(mha, module_names)

    def _wrap(self, mha, module_names):
        original = mha.forward
        calls = [0]

        def forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                    average_attn_weights=True):
            name = module_names[calls[0] % len(module_names)]
            calls[0] += 1
            out, w = original(query, key, value, key_padding_mask=key_padding_mask, need_weights=True,
                              attn_mask=attn_mask, average_attn_weights=False)
            if need_weights and average_attn_weights:
                raise RuntimeError("reference modules never ask for head-averaged weights")
            empty = _fully_masked_queries(w.shape, attn_mask, key_padding_mask)   # [B, L]
            if empty.any():
                rows = [tuple(int(v) for v in r) for r in empty.nonzero()]
                self.fully_masked[name] = rows
                padded = key_padding_mask if query is key else self.query_padding.get(mha)   # [B, L] or None
                for b, l in rows:
                    if not (padded is not None and bool(padded[b, l])):
                        raise RuntimeError(f"{name}: query ({b}, {l}) sees no key but is not padding")
                if self.sanitize:
                    rows_mask = empty[:, :, None] if mha.batch_first else empty.t()[:, :, None]
                    out = out.masked_fill(rows_mask, 0.0)
                    w = w.masked_fill(empty[:, None, :, None], 0.0)
            self.weights[name] = w.detach().clone()
            return out, (w if need_weights else None)

        mha.forward = forward
        self._originals.append(mha)

    def remove(self):
        for mha in self._originals:
            del mha.forward   # back to the class's forward


class NoFastPath:
    """Makes PyTorch's fused fast paths raise if they are ever reached."""
    NAMES = ["_transformer_encoder_layer_fwd", "_native_multi_head_attention", "_nested_tensor_from_mask"]

    def __enter__(self):
        self.saved = {n: getattr(torch, n) for n in self.NAMES}

        def refuse(*_, **__):
            raise RuntimeError("PyTorch fast path reached; the reference must use the plain path")

        for n in self.NAMES:
            setattr(torch, n, refuse)
        return self

    def __exit__(self, *exc):
        for n, f in self.saved.items():
            setattr(torch, n, f)
