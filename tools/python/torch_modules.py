"""The reference modules of docs/FORMAT.md, built from stock PyTorch modules,
and the PyTorch side of every comparison with tinyformer.

EncoderDecoderRef: attributes src_embed, tgt_embed, pos_embed (learned only),
transformer (nn.Transformer(batch_first=True)), generator.
SingleStackRef: embed, pos_embed (learned only), transformer
(nn.TransformerEncoder of nn.TransformerEncoderLayer(batch_first=True), with
norm iff final_norm), lm_head. Their state_dict() names are the checkpoint's
tensor names. With the config's "norm": "rms_norm" its norms are RmsNorm
(below) instead of nn.LayerNorm; with "activation": "silu" the layer's
activation is F.silu; with "swiglu" the layer is a GatedEncoderLayer (below),
which adds linear3.

encoder_decoder_forward / single_stack_forward: FORMAT.md's forward semantics
on stock modules (either batch_first), used by the Ref modules and by
tools/python/tinyformer_export.py's check on the modules a file was exported from.
Capture / NoFastPath: per-head attention weights from PyTorch's plain
(non-fused) path, with FORMAT.md's zero rows for fully masked padded queries.

Shared by tools/python/make_reference.py, tools/python/train_toy.py and
tools/python/tinyformer_export.py.
"""

import math
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from numpy_reference import sinusoidal_table  # noqa: E402  (the one table, float64)


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
    key j iff j < prefix_len[b] or j <= i) or no mask; key padding on top."""
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


def _norm_module(cfg, d):
    """The config's norm: nn.LayerNorm(d) (layer_norm) or RmsNorm (rms_norm)."""
    if cfg.get("norm", "layer_norm") == "rms_norm":
        return RmsNorm(d, cfg["layer_norm_eps"])
    assert cfg.get("norm", "layer_norm") == "layer_norm", "the reference modules build layer_norm or rms_norm"
    return nn.LayerNorm(d, eps=cfg["layer_norm_eps"])


def _encoder_layer(cfg, d):
    """One single-stack layer of the config: stock, with F.silu, or gated (swiglu)."""
    kwargs = dict(nhead=cfg["nhead"], dropout=0.0, layer_norm_eps=cfg["layer_norm_eps"], batch_first=True,
                  norm_first=cfg["norm_first"])
    act = cfg["activation"]
    if act == "swiglu":
        layer = GatedEncoderLayer(d, cfg["dim_feedforward"], **kwargs)
    else:
        layer = nn.TransformerEncoderLayer(d, dim_feedforward=cfg["dim_feedforward"],
                                           activation=F.silu if act == "silu" else act, **kwargs)
    if cfg.get("norm", "layer_norm") == "rms_norm":
        layer.norm1, layer.norm2 = _norm_module(cfg, d), _norm_module(cfg, d)
    return layer


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
            dropout=0.0, activation=cfg["activation"], layer_norm_eps=cfg["layer_norm_eps"],
            batch_first=True, norm_first=cfg["norm_first"])
        self.transformer.encoder.enable_nested_tensor = False  # never the nested-tensor fast path
        self.generator = nn.Linear(d, cfg["tgt_vocab_size"])

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
        self.lm_head = nn.Linear(d, cfg["vocab_size"])

    def forward(self, ids, key_padding_mask=None, prefix_len=None):
        return single_stack_forward(self.cfg, self.transformer, self.embed, self.lm_head, ids, key_padding_mask,
                                    prefix_len, getattr(self, "pos_embed", None))


def build_module(cfg):
    return EncoderDecoderRef(cfg) if cfg["arch"] == "encoder_decoder" else SingleStackRef(cfg)


# ----------------------------------------------------------------------------
# Capturing per-head attention weights from PyTorch's plain path
# ----------------------------------------------------------------------------


def stack_attention_names(arch, transformer):
    """[(MultiheadAttention module, `forward --attention` output name)] of an
    nn.Transformer (encoder_decoder) or an nn.TransformerEncoder (single-stack),
    in forward order. A list, not a dict: one module instance used as several
    layers appears once per layer."""
    names = []
    if arch == "encoder_decoder":
        for i, layer in enumerate(transformer.encoder.layers):
            names.append((layer.self_attn, f"attention.encoder.{i}"))
        for i, layer in enumerate(transformer.decoder.layers):
            names.append((layer.self_attn, f"attention.decoder.{i}.self"))
            names.append((layer.multihead_attn, f"attention.decoder.{i}.cross"))
    else:
        for i, layer in enumerate(transformer.layers):
            names.append((layer.self_attn, f"attention.layers.{i}"))
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
        assert attn_mask.dtype == torch.bool
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
