"""The Annotated Transformer family (harvardnlp's "The Annotated Transformer",
the encoder-decoder of "Attention Is All You Need"), written for this project
from the upstream design: same module tree, so the same state_dict names, and
the same arithmetic. No upstream code is copied here.

    model = make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1)
    memory = model.encode(src, src_mask)                # src_mask [B, 1, S], True = may attend
    h = model.decode(memory, src_mask, tgt, tgt_mask)   # tgt_mask [B, T, T] (padding & subsequent_mask)
    log_probs = model.generator(h)                      # log_softmax(proj(h)), [B, T, tgt_vocab]
    greedy_decode(model, src, src_mask, max_len, start_symbol) -> [1, max_len] ids

    converted = convert_annotated("model.pt", n_head=8, tgt_vocab=[...])   # a families.Converted
    recognise(module) -> True for a module with this tree; from_module(module, ...) -> Converted

What differs from nn.Transformer, and how the checkpoint says it (docs/FORMAT.md):

    Annotated                                   tinyformer config
    pre-norm residual x + sublayer(norm(x))     norm_first: true
    LayerNorm a_2 (x - mean) / (std + eps) + b_2,
      std unbiased (divides by D - 1), eps 1e-6
      outside the root                          norm: "layer_norm_std", layer_norm_eps: 1e-6
    four nn.Linear per attention (q, k, v, o)   qkv: "separate" (each tensor renamed, not restacked)
    masked_fill(mask == 0, -1e9)                mask_value: -1e9
    Embeddings: lut(x) * sqrt(d_model)          embed_scale: true
    PositionalEncoding buffer pe [1, L, D]      pos_encoding: "sinusoidal" when pe equals the engine's
                                                formula within POSITION_TOLERANCE, else "learned"
                                                with pe[0, :max_len] as pos_embed.weight
    Generator: log_softmax(proj(x))             generator.weight/.bias = proj; the engine's logits are
                                                proj(x), so log_softmax of them equals the module's output

The tensor names (Annotated -> tinyformer), i = layer, {q,k,v,o} = linears.{0,1,2,3}:

    src_embed.0.lut.weight                      src_embed.weight
    tgt_embed.0.lut.weight                      tgt_embed.weight
    src_embed.1.pe, tgt_embed.1.pe (buffers)    pos_embed.weight (learned only) or nothing
    encoder.layers.i.self_attn.linears.0..2     transformer.encoder.layers.i.self_attn.{q,k,v}_proj
    encoder.layers.i.self_attn.linears.3        transformer.encoder.layers.i.self_attn.out_proj
    encoder.layers.i.feed_forward.w_1 / w_2     transformer.encoder.layers.i.linear1 / linear2
    encoder.layers.i.sublayer.0 / 1 .norm.a_2   transformer.encoder.layers.i.norm1 / norm2 .weight
                                   .norm.b_2                                             .bias
    encoder.norm.a_2 / b_2                      transformer.encoder.norm.weight / bias
    decoder.layers.i.self_attn.*                transformer.decoder.layers.i.self_attn.*
    decoder.layers.i.src_attn.*                 transformer.decoder.layers.i.multihead_attn.*
    decoder.layers.i.sublayer.0 / 1 / 2 .norm   transformer.decoder.layers.i.norm1 / norm2 / norm3
    decoder.norm                                transformer.decoder.norm
    generator.proj.weight / bias                generator.weight / bias

Standard library and torch only (and torch_file.py for reading files).
"""

import copy
import math
import os
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from families import Converted, check_reference_tables, layer_count, tensors_by_name  # noqa: E402
import torch_file  # noqa: E402

__all__ = ["make_model", "subsequent_mask", "greedy_decode", "convert_annotated", "recognise", "from_module",
           "annotated_log_probs", "attention_modules", "POSITION_TOLERANCE", "LayerNorm", "MultiHeadedAttention",
           "EncoderDecoder"]

EPS = 1e-6                  # the Annotated LayerNorm's default eps
MASK_VALUE = -1e9           # what its attention writes into masked scores
POSITION_TOLERANCE = 1e-6   # |pe - sinusoidal formula| at or below this: "sinusoidal" (100x below FORMAT's 1e-4)
DEFAULT_MAX_POSITIONS = 5000


# ----------------------------------------------------------------------------
# The modules (the names of attributes are the upstream ones: they are the state_dict)
# ----------------------------------------------------------------------------


class LayerNorm(nn.Module):
    """y = a_2 * (x - mean(x)) / (std(x) + eps) + b_2 over the last dimension D.

    std is the UNBIASED standard deviation, sqrt(sum (x - mean)^2 / (D - 1)), and
    eps is added to std, outside the square root (nn.LayerNorm divides by D and
    adds eps to the variance inside it). x [..., D] -> y [..., D]."""

    def __init__(self, features, eps=EPS):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        return layer_norm_std(x, self.a_2, self.b_2, self.eps)


def layer_norm_std(x, weight, bias, eps):
    """The formula of LayerNorm above, on given tensors (bias may be None: no + b):
    weight * (x - mean) / (unbiased std + eps) + bias over the last dimension.
    Also the norm of tools/python/torch_modules.py's twin of a `layer_norm_std` file."""
    mean = x.mean(dim=-1, keepdim=True)
    std = x.std(dim=-1, keepdim=True, unbiased=True)
    y = weight * (x - mean) / (std + eps)
    return y if bias is None else y + bias


class SublayerConnection(nn.Module):
    """Pre-norm residual: x + dropout(sublayer(norm(x)))."""

    def __init__(self, size, dropout):
        super().__init__()
        self.norm = LayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        return x + self.dropout(sublayer(self.norm(x)))


def _copies(module, n):
    return nn.ModuleList(copy.deepcopy(module) for _ in range(n))


def subsequent_mask(size):
    """[1, size, size] bool, True where query i may see key j (j <= i)."""
    return torch.ones(1, size, size, dtype=torch.bool).tril()


def scaled_dot_product(query, key, value, mask=None, dropout=None):
    """softmax(Q K^T / sqrt(d_k), masked by replacing blocked scores with -1e9) V.

    query [B, H, L, d_k], key/value [B, H, S, d_k], mask broadcastable to
    [B, H, L, S] with True (or 1) = may attend. Returns (out [B, H, L, d_k],
    weights [B, H, L, S]). A row whose every key is blocked gets -1e9 everywhere:
    uniform weights over its keys, never NaN."""
    d_k = query.shape[-1]
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, MASK_VALUE)
    weights = scores.softmax(dim=-1)
    if dropout is not None:
        weights = dropout(weights)
    return weights @ value, weights


class MultiHeadedAttention(nn.Module):
    """h heads of d_k = d_model / h; linears[0..2] project q, k, v, linears[3] the
    concatenated heads. After a call, .attn holds the weights [B, h, L, S]."""

    def __init__(self, h, d_model, dropout=0.1):
        super().__init__()
        if d_model % h:
            raise ValueError(f"h = {h} does not divide d_model = {d_model}")
        self.d_k = d_model // h
        self.h = h
        self.linears = _copies(nn.Linear(d_model, d_model), 4)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)               # the same mask for every head
        b = query.shape[0]
        q, k, v = (lin(x).view(b, -1, self.h, self.d_k).transpose(1, 2)
                   for lin, x in zip(self.linears[:3], (query, key, value)))
        z, self.attn = scaled_dot_product(q, k, v, mask=mask, dropout=self.dropout)
        z = z.transpose(1, 2).contiguous().view(b, -1, self.h * self.d_k)
        return self.linears[3](z)


class PositionwiseFeedForward(nn.Module):
    """w_2(dropout(relu(w_1(x))))."""

    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(torch.relu(self.w_1(x))))


class Embeddings(nn.Module):
    """lut(ids) * sqrt(d_model)."""

    def __init__(self, d_model, vocab):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


def sinusoid_buffer(max_len, d_model):
    """The table as the Annotated Transformer computes it, in float32:
    div = exp(-(2i) ln(10000) / D), pe[p, 2i] = sin(p div), pe[p, 2i+1] = cos(p div).
    Same formula as FORMAT's sinusoidal positions, but the angle p * div is a
    float32 product, so far positions drift from the float64 table (measured in
    docs/FAMILIES.md, "The Annotated Transformer")."""
    check_reference_tables("sinusoid_buffer", f"the position table pe (max_len {max_len}, d_model {d_model})", 1,
                           max_len, d_model, 4)
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(0, max_len).unsqueeze(1)
    div = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div)
    pe[:, 1::2] = torch.cos(position * div)[:, : d_model // 2]
    return pe.unsqueeze(0)


class PositionalEncoding(nn.Module):
    """dropout(x + pe[:, :T]); pe is a buffer [1, max_len, d_model] (saved in the state_dict)."""

    def __init__(self, d_model, dropout, max_len=DEFAULT_MAX_POSITIONS):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("pe", sinusoid_buffer(max_len, d_model))

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.shape[1]].detach())


class EncoderLayer(nn.Module):
    def __init__(self, size, self_attn, feed_forward, dropout):
        super().__init__()
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.sublayer = _copies(SublayerConnection(size, dropout), 2)
        self.size = size

    def forward(self, x, mask):
        x = self.sublayer[0](x, lambda y: self.self_attn(y, y, y, mask))
        return self.sublayer[1](x, self.feed_forward)


class DecoderLayer(nn.Module):
    def __init__(self, size, self_attn, src_attn, feed_forward, dropout):
        super().__init__()
        self.size = size
        self.self_attn = self_attn
        self.src_attn = src_attn
        self.feed_forward = feed_forward
        self.sublayer = _copies(SublayerConnection(size, dropout), 3)

    def forward(self, x, memory, src_mask, tgt_mask):
        x = self.sublayer[0](x, lambda y: self.self_attn(y, y, y, tgt_mask))
        x = self.sublayer[1](x, lambda y: self.src_attn(y, memory, memory, src_mask))
        return self.sublayer[2](x, self.feed_forward)


class Encoder(nn.Module):
    """N layers, then a final LayerNorm."""

    def __init__(self, layer, n):
        super().__init__()
        self.layers = _copies(layer, n)
        self.norm = LayerNorm(layer.size)

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class Decoder(nn.Module):
    """N layers, then a final LayerNorm."""

    def __init__(self, layer, n):
        super().__init__()
        self.layers = _copies(layer, n)
        self.norm = LayerNorm(layer.size)

    def forward(self, x, memory, src_mask, tgt_mask):
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)


class Generator(nn.Module):
    """log_softmax(proj(x)) over the target vocabulary."""

    def __init__(self, d_model, vocab):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, x):
        return torch.log_softmax(self.proj(x), dim=-1)


class EncoderDecoder(nn.Module):
    """forward(src, tgt, src_mask, tgt_mask) -> the decoder's output [B, T, D]
    (the generator is applied separately, as upstream does)."""

    def __init__(self, encoder, decoder, src_embed, tgt_embed, generator):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_embed = src_embed
        self.tgt_embed = tgt_embed
        self.generator = generator

    def forward(self, src, tgt, src_mask, tgt_mask):
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)

    def encode(self, src, src_mask):
        return self.encoder(self.src_embed(src), src_mask)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)


def make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1,
               max_len=DEFAULT_MAX_POSITIONS):
    """The Annotated Transformer: N encoder and N decoder layers, Glorot-uniform
    init of every matrix (as upstream). max_len: rows of the pe buffer."""
    attn = MultiHeadedAttention(h, d_model, dropout)
    ff = PositionwiseFeedForward(d_model, d_ff, dropout)
    position = PositionalEncoding(d_model, dropout, max_len)
    c = copy.deepcopy
    model = EncoderDecoder(
        Encoder(EncoderLayer(d_model, c(attn), c(ff), dropout), N),
        Decoder(DecoderLayer(d_model, c(attn), c(attn), c(ff), dropout), N),
        nn.Sequential(Embeddings(d_model, src_vocab), c(position)),
        nn.Sequential(Embeddings(d_model, tgt_vocab), c(position)),
        Generator(d_model, tgt_vocab))
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    return model


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    """Upstream's greedy loop: start from [start_symbol], append the arg-max of
    the generator at the last position max_len - 1 times (no end token: it
    always makes max_len - 1 tokens). src [1, S]; returns ys [1, max_len]."""
    memory = model.encode(src, src_mask)
    ys = torch.full((1, 1), start_symbol, dtype=src.dtype)
    for _ in range(max_len - 1):
        out = model.decode(memory, src_mask, ys, subsequent_mask(ys.shape[1]))
        log_probs = model.generator(out[:, -1])
        next_word = int(log_probs.argmax(dim=1)[0])
        ys = torch.cat([ys, torch.full((1, 1), next_word, dtype=src.dtype)], dim=1)
    return ys


def masks_from_padding(src_pad, tgt_pad):
    """The Annotated masks (True = may attend) from key-padding masks (True = padding):
    src_mask [B, 1, S] = not padding; tgt_mask [B, T, T] = not padding & subsequent_mask."""
    src_mask = (~src_pad)[:, None, :]
    tgt_mask = (~tgt_pad)[:, None, :] & subsequent_mask(tgt_pad.shape[1])
    return src_mask, tgt_mask


def annotated_log_probs(model, src, tgt, src_pad=None, tgt_pad=None):
    """generator(decode(encode(src), tgt)) with masks built from the padding
    (True = padding; None: no padding). [B, T, tgt_vocab] log-probabilities."""
    if src_pad is None:
        src_pad = torch.zeros(src.shape, dtype=torch.bool)
    if tgt_pad is None:
        tgt_pad = torch.zeros(tgt.shape, dtype=torch.bool)
    src_mask, tgt_mask = masks_from_padding(src_pad, tgt_pad)
    return model.generator(model.decode(model.encode(src, src_mask), src_mask, tgt, tgt_mask))


def attention_modules(model):
    """[(attention module, `forward --attention` output name)] in forward order."""
    names = [(layer.self_attn, f"encoder.{i}.self_attn.weights") for i, layer in enumerate(model.encoder.layers)]
    for i, layer in enumerate(model.decoder.layers):
        names += [(layer.self_attn, f"decoder.{i}.self_attn.weights"), (layer.src_attn, f"decoder.{i}.cross_attn.weights")]
    return names


# ----------------------------------------------------------------------------
# Recognising the family and converting its weights
# ----------------------------------------------------------------------------


def _has(obj, *names):
    return all(hasattr(obj, n) for n in names)


def recognise(module):
    """True when `module` has the Annotated Transformer's tree (an EncoderDecoder
    with encoder/decoder layers of sublayer connections, four-linear attentions,
    Sequential(Embeddings, PositionalEncoding) embeddings and a Generator),
    whoever wrote the classes (upstream's notebook or this file)."""
    try:
        if not isinstance(module, nn.Module) or not _has(module, "encoder", "decoder", "src_embed", "tgt_embed",
                                                         "generator"):
            return False
        if not (_has(module.encoder, "layers", "norm") and _has(module.decoder, "layers", "norm")):
            return False
        if len(module.encoder.layers) == 0 or len(module.decoder.layers) == 0:
            return False
        enc, dec = module.encoder.layers[0], module.decoder.layers[0]
        return (_has(enc, "self_attn", "feed_forward", "sublayer") and _has(dec, "self_attn", "src_attn", "sublayer")
                and hasattr(enc.self_attn, "linears") and len(enc.self_attn.linears) == 4
                and isinstance(module.src_embed, nn.Sequential) and hasattr(module.src_embed[0], "lut")
                and hasattr(module.src_embed[1], "pe") and hasattr(module.generator, "proj"))
    except (AttributeError, IndexError, TypeError):
        return False


def _eps_of(module, shown):
    """The one eps of every Annotated LayerNorm in the module (they must agree)."""
    found = {}
    for name, sub in module.named_modules():
        if _has(sub, "a_2", "b_2"):
            eps = getattr(sub, "eps", None)
            if not isinstance(eps, (int, float)) or isinstance(eps, bool):
                raise ValueError(f"{shown}.{name}.eps = {eps!r}: expected a number")
            found.setdefault(float(eps), name)
    if len(found) > 1:
        (e1, n1), (e2, n2) = list(found.items())[:2]
        raise ValueError(f"{shown}.{n2}.eps = {e2} differs from {shown}.{n1}.eps = {e1}; FORMAT has one "
                         f"layer_norm_eps")
    return next(iter(found), EPS)


def from_module(module, *, max_len=None, vocab=None, src_vocab=None, pad_id=None, bos_id=None, eos_id=None,
                tokenizer="char", train_max_len=None):
    """Converted from an Annotated Transformer module (recognise(module) is True).
    n_head is read from the attention modules (.h), eps from the LayerNorms."""
    if not recognise(module):
        raise ValueError(f"{type(module).__name__}: not an Annotated Transformer module tree (EncoderDecoder "
                         f"with encoder.layers, decoder.layers, src_embed = Sequential(Embeddings, "
                         f"PositionalEncoding), generator.proj)")
    h = getattr(module.encoder.layers[0].self_attn, "h", None)
    if not isinstance(h, int) or isinstance(h, bool) or h < 1:
        raise ValueError(f"encoder.layers.0.self_attn.h = {h!r}: expected the number of heads (an int)")
    state = {k: v.detach() for k, v in module.state_dict().items()}
    return convert_annotated(state, n_head=h, tgt_vocab=vocab, src_vocab=src_vocab, max_len=max_len, pad_id=pad_id,
                             bos_id=bos_id, eos_id=eos_id, tokenizer=tokenizer, layer_norm_eps=_eps_of(module, "model"),
                             train_max_len=train_max_len, reference=module)


def _sinusoidal_reference(max_len, d_model):
    """FORMAT's table as the engine computes it (float64 angle, then float32)."""
    pos = np.arange(max_len, dtype=np.float64)[:, None]
    angle = pos / np.power(10000.0, np.arange(0, d_model, 2, dtype=np.float64) / d_model)
    table = np.zeros((max_len, d_model), dtype=np.float64)
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle)[:, : d_model // 2]
    return table.astype(np.float32)


def position_difference(pe, max_len):
    """max |pe[0, :max_len] - FORMAT's sinusoidal table| (float)."""
    table = pe.reshape(-1, pe.shape[-1])[:max_len].float().numpy()
    return float(np.abs(table - _sinusoidal_reference(max_len, table.shape[1])).max())


def convert_annotated(state_dict, n_head=None, src_vocab=None, tgt_vocab=None, *, max_len=None, pad_id=None,
                      bos_id=None, eos_id=None, tokenizer="char", layer_norm_eps=EPS, train_max_len=None,
                      reference=None, shown=None):
    """Converted from an Annotated Transformer state_dict (a dict, or a path to a
    torch.save file, read with weights_only=True).

    n_head: the number of heads h (a state_dict does not tell). src_vocab /
    tgt_vocab: the token strings (lists), optional; tgt_vocab serves the source
    too when src_vocab is not given and the sizes agree. max_len: positions the
    file serves (default: the pe buffer's rows). The sizes (N, d_model, d_ff,
    vocabulary sizes) are read from the tensor shapes. Raises ValueError naming
    every missing argument at once, or the tensor that does not fit.

    The Converted's reference is a make_model module holding the weights (or
    the module given), for check(). Its notes say which positional encoding was
    chosen and the measured difference."""
    if isinstance(state_dict, (str, os.PathLike)):
        shown = shown or str(state_dict)
        state_dict = torch_file.load_state_dict_file(state_dict, shown)
        state_dict = torch_file.without_parallel_prefix(state_dict, shown)
    shown = shown or "state_dict"
    missing = [name for name, value in [("n_head", n_head)] if value is None]
    if missing:
        raise ValueError(f"convert_annotated needs {', '.join(missing)} (a state_dict does not record it)")
    state = tensors_by_name(state_dict, shown)
    if "src_embed.0.lut.weight" not in state:
        starts = sorted({k.split(".")[0] for k in state})
        raise ValueError(f"{shown}: has no src_embed.0.lut.weight, which an Annotated Transformer state_dict "
                         f"holds (make_model's names); its names start with: {', '.join(starts[:8]) or 'nothing'}")
    for name in ("src_embed.0.lut.weight", "tgt_embed.0.lut.weight", "encoder.layers.0.feed_forward.w_1.weight"):
        if name in state and state[name].dim() != 2:
            raise ValueError(f"{shown}: {name} has shape {list(state[name].shape)}, expected a matrix")
    d = int(state["src_embed.0.lut.weight"].shape[1])
    if not isinstance(n_head, int) or isinstance(n_head, bool) or n_head < 1 or d % n_head:
        raise ValueError(f"n_head = {n_head!r}: expected a whole number dividing d_model = {d}")
    n_enc = layer_count(state, "encoder.layers.", shown)
    n_dec = layer_count(state, "decoder.layers.", shown)
    if n_enc == 0 or n_dec == 0:
        raise ValueError(f"{shown}: no encoder.layers.0.* or decoder.layers.0.*: not an Annotated Transformer")
    used = set()

    def take(name):
        if name not in state:
            raise ValueError(f"{shown}: has no {name}, which make_model(N={n_enc}) has")
        used.add(name)
        return state[name]

    d_ff = int(take("encoder.layers.0.feed_forward.w_1.weight").shape[0])
    src_size = int(state["src_embed.0.lut.weight"].shape[0])
    tgt_size = int(take("tgt_embed.0.lut.weight").shape[0])

    tensors = {"src_embed.weight": take("src_embed.0.lut.weight"), "tgt_embed.weight": take("tgt_embed.0.lut.weight")}

    def attention(src, dst):
        for k, proj in enumerate(["q_proj", "k_proj", "v_proj", "out_proj"]):
            for part in ("weight", "bias"):
                tensors[f"{dst}.{proj}.{part}"] = take(f"{src}.linears.{k}.{part}")

    def norm(src, dst):
        tensors[f"{dst}.weight"] = take(f"{src}.a_2")
        tensors[f"{dst}.bias"] = take(f"{src}.b_2")

    for stack, n, attns in [("encoder", n_enc, [("self_attn", "self_attn")]),
                            ("decoder", n_dec, [("self_attn", "self_attn"), ("src_attn", "multihead_attn")])]:
        for i in range(n):
            src, dst = f"{stack}.layers.{i}", f"transformer.{stack}.layers.{i}"
            for a_src, a_dst in attns:
                attention(f"{src}.{a_src}", f"{dst}.{a_dst}")
            for w_src, w_dst in [("w_1", "linear1"), ("w_2", "linear2")]:
                for part in ("weight", "bias"):
                    tensors[f"{dst}.{w_dst}.{part}"] = take(f"{src}.feed_forward.{w_src}.{part}")
            for k in range(len(attns) + 1):
                norm(f"{src}.sublayer.{k}.norm", f"{dst}.norm{k + 1}")
        norm(f"{stack}.norm", f"transformer.{stack}.norm")
    tensors["generator.weight"] = take("generator.proj.weight")
    tensors["generator.bias"] = take("generator.proj.bias")
    if tensors["generator.weight"].dim() != 2 or int(tensors["generator.weight"].shape[0]) != tgt_size:
        raise ValueError(f"{shown}: generator.proj.weight has shape {list(tensors['generator.weight'].shape)}, "
                         f"expected [{tgt_size}, {d}] (tgt_embed.0.lut.weight has {tgt_size} rows)")

    # Positions: the pe buffers (same in source and target), or nothing if they were not saved.
    notes = []
    pe_src, pe_tgt = state.get("src_embed.1.pe"), state.get("tgt_embed.1.pe")
    used.update(k for k in ("src_embed.1.pe", "tgt_embed.1.pe") if k in state)
    if pe_src is None and pe_tgt is None:
        rows = max_len or DEFAULT_MAX_POSITIONS
        check_reference_tables(shown, f"the position tables pe of src_embed and tgt_embed (max_len {rows}, d_model "
                                      f"{d})", 2, rows, d, 4)
        pe_src = pe_tgt = sinusoid_buffer(rows, d)
        notes.append(f"the state_dict has no pe buffers: using the Annotated formula's own table ({rows} rows)")
    pe_src = pe_src if pe_src is not None else pe_tgt
    pe_tgt = pe_tgt if pe_tgt is not None else pe_src
    if pe_src.shape != pe_tgt.shape or not torch.equal(pe_src, pe_tgt):
        raise ValueError(f"{shown}: src_embed.1.pe and tgt_embed.1.pe differ; FORMAT has one positional table for "
                         f"source and target")
    if pe_src.dim() != 3 or pe_src.shape[0] != 1 or pe_src.shape[2] != d:
        raise ValueError(f"{shown}: src_embed.1.pe has shape {list(pe_src.shape)}, expected [1, max_len, {d}]")
    rows = int(pe_src.shape[1])
    check_reference_tables(shown, f"the reference's position tables pe of src_embed and tgt_embed (max_len {rows}, "
                                  f"d_model {d})", 2, rows, d, 4)
    if max_len is None:
        max_len = rows
    if not isinstance(max_len, int) or isinstance(max_len, bool) or not 1 <= max_len <= rows:
        raise ValueError(f"max_len = {max_len!r}: expected a whole number from 1 to the pe buffer's {rows} rows")
    diff = position_difference(pe_src, max_len)
    if diff <= POSITION_TOLERANCE:
        pos_encoding = "sinusoidal"
        notes.append(f"positions: pe[:{max_len}] equals FORMAT's sinusoidal table within {diff:.3g} "
                     f"(<= {POSITION_TOLERANCE:g}): pos_encoding \"sinusoidal\"")
    else:
        pos_encoding = "learned"
        tensors["pos_embed.weight"] = pe_src[0, :max_len].clone()
        notes.append(f"positions: pe[:{max_len}] differs from FORMAT's sinusoidal table by up to {diff:.3g} "
                     f"(> {POSITION_TOLERANCE:g}): stored as pos_encoding \"learned\" (pos_embed.weight = pe[0, "
                     f":{max_len}]); pass a smaller max_len for the sinusoidal formula")
    extra = sorted(set(state) - used)
    if extra:
        raise ValueError(f"{shown}: {extra[0]}" + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else "")
                         + ": not part of make_model's tree; it cannot be represented")

    config = {"arch": "encoder_decoder", "d_model": d, "nhead": n_head, "dim_feedforward": d_ff,
              "num_encoder_layers": n_enc, "num_decoder_layers": n_dec, "activation": "relu", "norm_first": True,
              "norm": "layer_norm_std", "layer_norm_eps": float(layer_norm_eps), "qkv": "separate",
              "mask_value": MASK_VALUE, "embed_scale": True, "pos_encoding": pos_encoding, "max_len": max_len,
              "src_vocab_size": src_size, "tgt_vocab_size": tgt_size}
    # The start and end tokens of upstream's vocabularies ("<s>", "</s>", built by
    # torchtext with those specials), taken from the target vocabulary when not given:
    # without a bos_id, `tinyformer run` has nothing to start the decoder with.
    for key, token, given in [("bos_id", "<s>", bos_id), ("eos_id", "</s>", eos_id)]:
        if given is None and tgt_vocab is not None and list(tgt_vocab).count(token) == 1:
            found = list(tgt_vocab).index(token)
            if key == "bos_id":
                bos_id = found
            else:
                eos_id = found
            notes.append(f"{key} {found}: the target vocabulary's {token}")
    if bos_id is None:
        notes.append("no bos_id: `tinyformer run` cannot start the decoder without one; give --bos-id (upstream's "
                     "<s> and greedy_decode's start_symbol are 0)")
    for key, value in [("pad_id", pad_id), ("bos_id", bos_id), ("eos_id", eos_id)]:
        if value is not None:
            config[key] = value
    metadata = {"tokenizer": tokenizer}
    if tgt_vocab is not None:
        metadata["vocab"] = list(tgt_vocab)
    if src_vocab is not None:
        metadata["src_vocab"] = list(src_vocab)
    if train_max_len is not None:
        metadata["train_max_len"] = train_max_len
    h_read_from_module = reference is not None     # from_module: h is the module's own
    if reference is None:
        if n_dec != n_enc:
            raise ValueError(f"{shown}: {n_enc} encoder layers but {n_dec} decoder layers; make_model has N of each")
        reference = make_model(src_size, tgt_size, N=n_enc, d_model=d, d_ff=d_ff, h=n_head, dropout=0.0,
                               max_len=rows)
        for module in reference.modules():
            if isinstance(module, LayerNorm):
                module.eps = float(layer_norm_eps)
        full = {k: v.float() for k, v in state.items()}
        full["src_embed.1.pe"], full["tgt_embed.1.pe"] = pe_src.float(), pe_tgt.float()
        try:
            reference.load_state_dict(full, strict=True)
        except RuntimeError as e:         # a tensor of another shape than make_model's: torch names it
            raise ValueError(f"{shown}: does not fit make_model(N={n_enc}, d_model={d}, d_ff={d_ff}, h={n_head}): "
                             f"{' '.join(str(e).split())[:400]}") from None
        reference.eval()
    converted = Converted(config, tensors, metadata, reference, notes)
    if not h_read_from_module:
        converted.assumed["n_head"] = n_head      # a state_dict does not record h: the caller's word
    return converted
