"""The GPT family as nanoGPT and minGPT write it: the project's own reference
module, and the converters from their checkpoints to a tinyformer file.

The module (written here from the published design, not copied):

    x = wte[idx] + wpe[0..T-1]                               [B, T, D]
    for each of the n_layer blocks (pre-LN):
        x = x + c_proj(attention(c_attn(ln_1(x))))           causal, n_head heads
        x = x + mlp.c_proj(gelu(mlp.c_fc(ln_2(x))))          D -> 4D -> D
    logits = lm_head(ln_f(x))                                [B, T, V]

    attention: q, k, v = split(c_attn(x), D) (in that order), per head
               softmax(q k^T / sqrt(D / n_head) with j > i masked to -inf) v
    gelu:      "exact": 0.5 h (1 + erf(h / sqrt 2))            (nn.GELU(), nanoGPT today)
               "tanh":  0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3)))
                        (minGPT's NewGELU, nanoGPT before mid-2023, GPT-2's gelu_new)
    LayerNorm: eps 1e-5; without bias when bias=False
    lm_head:   no bias; tie=True shares its weight with wte (nanoGPT), tie=False
               is its own [V, D] matrix (minGPT)

state_dict keys are nanoGPT's and minGPT's (they agree):

    transformer.wte.weight [V, D]            transformer.wpe.weight [block_size, D]
    transformer.h.{i}.ln_1.weight / .bias    [D]          (.bias only when bias)
    transformer.h.{i}.attn.c_attn.weight     [3D, D]      .bias [3D]   (bias only)
    transformer.h.{i}.attn.c_proj.weight     [D, D]       .bias [D]
    transformer.h.{i}.attn.bias              [1, 1, block_size, block_size]
                                             the causal-mask BUFFER (lower triangle of
                                             ones), present when mask_buffer (as nanoGPT
                                             on torch < 2.0 and minGPT always write it)
    transformer.h.{i}.ln_2.*, .mlp.c_fc.* [4D, D], .mlp.c_proj.* [D, 4D]
    transformer.ln_f.weight / .bias
    lm_head.weight [V, D]                    (tied: the same tensor as wte)

nanoGPT: GPTConfig(bias=True or False, gelu="exact", tie=True).
minGPT:  GPTConfig(bias=True, gelu="tanh", tie=False).

The converters (convert_nanogpt, convert_mingpt, from_module) rename these keys
into tinyformer's decoder_only layout (docs/FORMAT.md section 1; the table is
in docs/FAMILIES.md) and return a families.Converted.
"""

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from . import (Converted, check_reference_tables, check_state_dict, layer_count, load_weights,
               rename_to_upstream, tensors_by_name)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tools/python: the readers
import pickle_reader  # noqa: E402
import torch_file  # noqa: E402
from torch_file import load_torch_file  # noqa: E402,F401  (the one reader of PyTorch files; tests patch it here)


@dataclass
class GPTConfig:
    block_size: int = 256
    vocab_size: int = 65
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    bias: bool = True          # Linear AND LayerNorm biases (nanoGPT's bias flag)
    gelu: str = "exact"        # "exact" (erf) or "tanh"
    tie: bool = True           # lm_head.weight is wte.weight
    dropout: float = 0.0       # training only; 0 at inference (eval() turns it off anyway)
    mask_buffer: bool = True   # register attn.bias, the [1,1,T,T] causal mask, in the state_dict

    def __post_init__(self):
        for name in ("block_size", "vocab_size", "n_layer", "n_head", "n_embd"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"GPTConfig.{name}: expected a positive int, got {value!r}")
        if self.n_embd % self.n_head != 0:
            raise ValueError(f"GPTConfig: n_embd ({self.n_embd}) must be a multiple of "
                             f"n_head ({self.n_head})")
        if self.gelu not in ("exact", "tanh"):
            raise ValueError(f"GPTConfig.gelu: expected \"exact\" or \"tanh\", got {self.gelu!r}")


class LayerNorm(nn.Module):
    """nn.LayerNorm's formula (eps 1e-5) with an optional bias:
    y = (x - mean) / sqrt(var + eps) * weight (+ bias), over the last dim [D]."""

    def __init__(self, n, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


def gelu(h, kind):
    """The two GELUs of the module docstring; kind "exact" or "tanh"."""
    if kind == "tanh":
        return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h.pow(3))))
    return F.gelu(h)


class CausalSelfAttention(nn.Module):
    """[B, T, D] -> [B, T, D]; the plain (non-flash) path: scores masked with -inf
    where the mask is 0, softmax over keys."""

    def __init__(self, config):
        super().__init__()
        d = config.n_embd
        self.n_head = config.n_head
        self.c_attn = nn.Linear(d, 3 * d, bias=config.bias)
        self.c_proj = nn.Linear(d, d, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        if config.mask_buffer:                                       # lands in the state_dict
            causal = torch.tril(torch.ones(config.block_size, config.block_size))
            self.register_buffer("bias", causal.view(1, 1, config.block_size, config.block_size))
        else:
            # as torch >= 2.0's nanoGPT: nothing saved, and no [block_size, block_size]
            # table either (block_size is what a file claims): each pass makes its [t, t]
            self.bias = None
        self.weights = None   # the last [B, n_head, T, T] attention weights (for tests and checks)

    def forward(self, x):
        b, t, d = x.shape
        hs = d // self.n_head
        q, k, v = self.c_attn(x).split(d, dim=2)
        q = q.view(b, t, self.n_head, hs).transpose(1, 2)            # [B, H, T, hs]
        k = k.view(b, t, self.n_head, hs).transpose(1, 2)
        v = v.view(b, t, self.n_head, hs).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))   # [B, H, T, T]
        causal = self.bias[:, :, :t, :t] if self.bias is not None else torch.tril(torch.ones(t, t)).view(1, 1, t, t)
        scores = scores.masked_fill(causal == 0, float("-inf"))
        att = F.softmax(scores, dim=-1)
        self.weights = att.detach()
        y = self.attn_dropout(att) @ v                                # [B, H, T, hs]
        y = y.transpose(1, 2).contiguous().view(b, t, d)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.kind = config.gelu
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(gelu(self.c_fc(x), self.kind)))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """The decoder-only GPT of the module docstring. forward(idx [B, T] int64)
    -> logits [B, T, V] at every position (T <= block_size)."""

    def __init__(self, config):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"GPT(config): expected a GPTConfig, got {type(config).__name__}")
        if config.mask_buffer:     # one [block_size, block_size] float32 mask per block
            check_reference_tables("GPT", "the causal-mask buffers (attn.bias, block_size "
                                   f"{config.block_size}, n_layer {config.n_layer})", config.n_layer,
                                   config.block_size, config.block_size, 4)
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie:
            self.transformer.wte.weight = self.lm_head.weight
        # GPT-2's initialisation: N(0, 0.02) weights, zero biases, and the residual
        # projections (c_proj) scaled down by sqrt(2 n_layer).
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if isinstance(module, nn.Linear) and module.bias is not None:
                    nn.init.zeros_(module.bias)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def forward(self, idx):
        if idx.dim() != 2:
            raise ValueError(f"GPT.forward: idx must be [B, T], got shape {list(idx.shape)}")
        t = idx.shape[1]
        if t > self.config.block_size:
            raise ValueError(f"GPT.forward: sequence length {t} exceeds block_size "
                             f"{self.config.block_size}")
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t, device=idx.device))
        x = self.transformer.drop(x)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    def loss(self, idx, targets):
        """Mean cross-entropy of forward(idx) against targets [B, T] (-1 = ignored)."""
        logits = self.forward(idx)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                               ignore_index=-1)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, do_sample=True,
                 generator=None):
        """nanoGPT's loop: crop the context to the last block_size tokens, re-run the
        whole model (no cache), take the last position's logits / temperature, keep
        the top_k largest (others -inf), softmax, sample (torch.multinomial) or, with
        do_sample=False, take the argmax (minGPT's greedy option); append; repeat.
        idx [B, T] -> [B, T + max_new_tokens]."""
        for _ in range(max_new_tokens):
            context = idx if idx.shape[1] <= self.config.block_size else idx[:, -self.config.block_size:]
            logits = self.forward(context)[:, -1, :]
            if not do_sample:
                nxt = logits.argmax(dim=-1, keepdim=True)
            else:
                logits = logits / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.shape[-1]))
                    logits = logits.masked_fill(logits < v[:, [-1]], float("-inf"))
                nxt = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=generator)
            idx = torch.cat((idx, nxt), dim=1)
        return idx


# ----------------------------------------------------------------------------
# Reading nanoGPT's meta.pkl safely (torch.save archives: torch_file.load_torch_file)
# ----------------------------------------------------------------------------

MAX_META_BYTES = 64 << 20


_shown = pickle_reader.shown   # a value from a stranger's file, for a message (atoms cut short, else its type)


def read_meta(path):
    """nanoGPT's meta.pkl (data/*/prepare.py: {'vocab_size': n, 'itos': {id: ch},
    'stoi': {ch: id}}), read by pickle_reader as plain data (no global, no
    persistent id: nothing in it can run). Returns the vocabulary as a list
    (index = id). Raises ValueError naming the file and what is wrong."""
    path = str(path)
    try:
        meta = pickle_reader.load(torch_file.file_bytes(path, MAX_META_BYTES))
    except OSError as e:
        raise ValueError(f"{path}: cannot read meta.pkl: {e.strerror or e}") from None
    except pickle_reader.Refused as e:
        raise ValueError(f"{path}: refused as meta.pkl: {e}") from None
    if not isinstance(meta, dict) or "itos" not in meta:
        raise ValueError(f"{path}: expected nanoGPT's meta.pkl, a dict with 'itos' (id -> character), got "
                         f"{type(meta).__name__}" + (f" with keys {', '.join(sorted(_shown(k) for k in list(meta)[:10]))}"
                         + (" ..." if len(meta) > 10 else "") if isinstance(meta, dict) else ""))
    itos = meta["itos"]
    if not isinstance(itos, dict) or not itos:
        raise ValueError(f"{path}: 'itos' must be a non-empty dict id -> character, got {type(itos).__name__}")
    n = len(itos)
    if sorted(k for k in itos if isinstance(k, int) and not isinstance(k, bool)) != list(range(n)):
        raise ValueError(f"{path}: the ids of 'itos' must be exactly 0..{n - 1}")
    vocab = [itos[i] for i in range(n)]
    for i, ch in enumerate(vocab):
        if not isinstance(ch, str):
            raise ValueError(f"{path}: itos[{i}] is a {type(ch).__name__}, expected a str")
    if "vocab_size" in meta and meta["vocab_size"] != n:
        raise ValueError(f"{path}: vocab_size = {_shown(meta['vocab_size'])} but 'itos' has {n} entries")
    stoi = meta.get("stoi")
    if stoi is not None and (not isinstance(stoi, dict) or any(stoi.get(ch) != i for i, ch in enumerate(vocab))):
        raise ValueError(f"{path}: 'stoi' is not the inverse of 'itos'")
    return vocab


# ----------------------------------------------------------------------------
# Converting: upstream keys -> tinyformer's decoder_only layout
# ----------------------------------------------------------------------------

# One block, upstream suffix -> tinyformer suffix (transformer.h.{i}.X -> transformer.layers.{i}.Y).
BLOCK_KEYS = {
    "ln_1.weight": "norm1.weight",
    "ln_1.bias": "norm1.bias",
    "attn.c_attn.weight": "self_attn.in_proj_weight",     # [3D, D]: q, k, v stacked, as in_proj
    "attn.c_attn.bias": "self_attn.in_proj_bias",
    "attn.c_proj.weight": "self_attn.out_proj.weight",
    "attn.c_proj.bias": "self_attn.out_proj.bias",
    "ln_2.weight": "norm2.weight",
    "ln_2.bias": "norm2.bias",
    "mlp.c_fc.weight": "linear1.weight",
    "mlp.c_fc.bias": "linear1.bias",
    "mlp.c_proj.weight": "linear2.weight",
    "mlp.c_proj.bias": "linear2.bias",
}
TOP_KEYS = {
    "transformer.wte.weight": "embed.weight",
    "transformer.wpe.weight": "pos_embed.weight",
    "transformer.ln_f.weight": "transformer.norm.weight",
    "transformer.ln_f.bias": "transformer.norm.bias",
    "lm_head.weight": "lm_head.weight",
}
GELU_ACTIVATION = {"exact": "gelu", "tanh": "gelu_tanh"}
PREFIXES = ("_orig_mod.", "module.")   # torch.compile, DistributedDataParallel


def strip_prefixes(state, where="state_dict"):
    """Keys without torch.compile's `_orig_mod.` (and DDP's `module.`) in front;
    where: the file, for the error of two keys that become one."""
    out = {}
    for key, value in state.items():
        k = key
        while k.startswith(PREFIXES):
            k = k[len(next(p for p in PREFIXES if k.startswith(p))):]
        if k in out:
            raise ValueError(f"{where}: {key!r} and another key both read as {k!r} without the prefix")
        out[k] = value
    return out


def is_causal_mask_buffer(t):
    """The [1, 1, T, T] lower-triangular buffer nanoGPT (torch < 2.0), minGPT and
    GPT-2 register as attn.bias: ones (or True) on and below the diagonal, 0 above."""
    if not torch.is_tensor(t) or t.dim() != 4 or t.shape[0] != 1 or t.shape[1] != 1 or t.shape[2] != t.shape[3]:
        return False
    n = t.shape[2]
    return bool(torch.equal(t.to(torch.float32), torch.tril(torch.ones(n, n)).view(1, 1, n, n)))


def is_masked_bias_buffer(t):
    """GPT-2's attn.masked_bias: a scalar -1e4 (or the dtype's minimum), unused by the math.
    Shape [] or [1] (tools/python/safetensors_io.py stores a 0-d array as [1])."""
    return torch.is_tensor(t) and t.dim() <= 1 and t.numel() == 1 and float(t.reshape(())) <= -1e4


def drop_mask_buffers(state, where):
    """(state without the mask buffers, how many were dropped). A key named like a
    buffer whose value is not one is refused: it would be a real tensor."""
    out, dropped = {}, 0
    for key, value in state.items():
        if key.endswith(".attn.bias") or key.endswith(".attn.masked_bias"):
            ok = is_causal_mask_buffer(value) if key.endswith(".bias") else is_masked_bias_buffer(value)
            if not ok:
                shape = list(value.shape) if torch.is_tensor(value) else type(value).__name__
                raise ValueError(f"{where}: {key} (shape {shape}) is named like the causal-mask buffer but is not "
                                 f"one (expected [1, 1, T, T] lower-triangular ones"
                                 f"{' or a scalar <= -1e4' if key.endswith('masked_bias') else ''}); "
                                 f"tinyformer cannot represent a different mask")
            dropped += 1
            continue
        out[key] = value
    return out, dropped


def _shape_error(where, key, t, expected):
    raise ValueError(f"{where}: {key} has shape {list(t.shape)}, expected {expected}")


def assemble(state, *, n_head, gelu, where, layer_norm_eps=1e-5, activation=None, max_len_name="block_size"):
    """Converted from a state_dict in nanoGPT/minGPT key names and nn.Linear layout
    ([out, in]), mask buffers already dropped, prefixes stripped. Biases, tying
    and sizes are read from the tensors; n_head and the GELU come from the caller.
    activation (a tinyformer activation name) overrides gelu when given.
    Every key is used exactly once; one left over is refused by name."""
    state = dict(state)
    check_state_dict(state, where, ("transformer.wte.weight", "transformer.wpe.weight", "transformer.ln_f.weight"), "GPT")
    wte, wpe = state["transformer.wte.weight"], state["transformer.wpe.weight"]
    if wte.dim() != 2:
        _shape_error(where, "transformer.wte.weight", wte, "[vocab_size, n_embd]")
    vocab_size, d = wte.shape
    if wpe.dim() != 2 or wpe.shape[1] != d:
        _shape_error(where, "transformer.wpe.weight", wpe, f"[{max_len_name}, {d}]")
    max_len = wpe.shape[0]
    layers = layer_count(state, "transformer.h.", where)
    if layers == 0:
        raise ValueError(f"{where}: no transformer.h.0.* keys: a GPT has at least one block")
    if isinstance(n_head, bool) or not isinstance(n_head, int) or n_head < 1 or d % n_head:
        raise ValueError(f"{where}: n_head = {_shown(n_head)}: expected a positive int dividing n_embd = {d}")
    c_fc = state.get("transformer.h.0.mlp.c_fc.weight")
    if c_fc is None or c_fc.dim() != 2:
        raise ValueError(f"{where}: no 2-d transformer.h.0.mlp.c_fc.weight")
    d_ff = c_fc.shape[0]
    bias = "transformer.h.0.attn.c_attn.bias" in state
    norm_bias = "transformer.ln_f.bias" in state
    expected = {"ln_1.weight": [d], "ln_1.bias": [d], "attn.c_attn.weight": [3 * d, d], "attn.c_attn.bias": [3 * d],
                "attn.c_proj.weight": [d, d], "attn.c_proj.bias": [d], "ln_2.weight": [d], "ln_2.bias": [d],
                "mlp.c_fc.weight": [d_ff, d], "mlp.c_fc.bias": [d_ff], "mlp.c_proj.weight": [d, d_ff],
                "mlp.c_proj.bias": [d]}
    tensors = {}
    for i in range(layers):
        for suffix, target in BLOCK_KEYS.items():
            key = f"transformer.h.{i}.{suffix}"
            is_norm = suffix.startswith("ln_")
            wanted = not suffix.endswith(".bias") or (norm_bias if is_norm else bias)
            if not wanted:
                if key in state:
                    what = "the LayerNorms" if is_norm else "the Linear layers"
                    other = "transformer.ln_f.bias" if is_norm else "transformer.h.0.attn.c_attn.bias"
                    raise ValueError(f"{where}: {key} exists but {other} does not: the biases of {what} must be "
                                     f"all present or all absent")
                continue
            if key not in state:
                raise ValueError(f"{where}: {key} is missing")
            t = state.pop(key)
            if list(t.shape) != expected[suffix]:
                _shape_error(where, key, t, expected[suffix])
            tensors[f"transformer.layers.{i}.{target}"] = t
    head_bias = "lm_head.bias" in state
    if head_bias:
        raise ValueError(f"{where}: lm_head.bias: the GPT output head has no bias in nanoGPT, minGPT and GPT-2; "
                         f"this state_dict is of another model")
    for key in ("transformer.wte.weight", "transformer.wpe.weight", "transformer.ln_f.weight", "transformer.ln_f.bias"):
        if key in state:
            t = state.pop(key)
            if key.startswith("transformer.ln_f") and list(t.shape) != [d]:
                _shape_error(where, key, t, [d])
            tensors[TOP_KEYS[key]] = t
    head = state.pop("lm_head.weight", None)
    tie = head is None or (list(head.shape) == [vocab_size, d] and torch.equal(head, wte))
    if head is not None and list(head.shape) != [vocab_size, d]:
        _shape_error(where, "lm_head.weight", head, [vocab_size, d])
    if not tie:
        tensors["lm_head.weight"] = head
    if state:
        raise ValueError(f"{where}: tensors tinyformer cannot place: {', '.join(sorted(state)[:8])}"
                         + (f" and {len(state) - 8} more" if len(state) > 8 else ""))
    if activation is None:
        if gelu not in GELU_ACTIVATION:
            raise ValueError(f"{where}: gelu = {gelu!r}: expected \"exact\" or \"tanh\"")
        activation = GELU_ACTIVATION[gelu]
    config = {
        "arch": "decoder_only", "d_model": d, "nhead": n_head, "num_layers": layers, "dim_feedforward": d_ff,
        "activation": activation, "norm_first": True, "layer_norm_eps": float(layer_norm_eps), "final_norm": True,
        "vocab_size": vocab_size, "max_len": max_len, "pos_encoding": "learned", "embed_scale": False,
        "attention": "causal", "bias": bias, "norm_bias": norm_bias, "head_bias": False, "tie_embeddings": tie,
    }
    # Views where they can be (a transposed Conv1D weight stays a view of the file's
    # bytes): the writer makes each tensor contiguous block by block as it writes it.
    tensors = {k: v.detach().to(torch.float32) for k, v in tensors.items()}
    return Converted(config=config, tensors=tensors, metadata={})


def _reference(converted, gelu):
    """Our GPT module holding the converted weights (for check()), when GPTConfig
    can express the file (one bias flag for Linear and LayerNorm, eps 1e-5,
    4*D feed-forward); else None."""
    c = converted.config
    if (c["bias"] != c["norm_bias"] or c["layer_norm_eps"] != 1e-5 or c["dim_feedforward"] != 4 * c["d_model"]
            or gelu not in GELU_ACTIVATION):
        return None
    model = GPT(GPTConfig(block_size=c["max_len"], vocab_size=c["vocab_size"], n_layer=c["num_layers"],
                          n_head=c["nhead"], n_embd=c["d_model"], bias=c["bias"], gelu=gelu,
                          tie=c["tie_embeddings"], mask_buffer=False))
    load_weights(model, to_upstream(converted.tensors, c["num_layers"], c["tie_embeddings"]), strict=False)
    return model.eval()


def to_upstream(tensors, n_layers, tie):
    """tinyformer names -> nanoGPT/minGPT names (the inverse of BLOCK_KEYS/TOP_KEYS)."""
    return rename_to_upstream(tensors, TOP_KEYS, BLOCK_KEYS, "transformer.h.", ("lm_head.weight", "transformer.wte.weight") if tie else None)


def _missing(function, needed):
    """One error naming every missing argument: needed is [(name, why)]."""
    if needed:
        raise ValueError(f"{function}: missing " + "; ".join(f"{n} ({why})" for n, why in needed))


def _check_model_args(where, model_args, config):
    """nanoGPT's model_args must agree with the tensors."""
    pairs = {"n_layer": config["num_layers"], "n_embd": config["d_model"], "vocab_size": config["vocab_size"],
             "block_size": config["max_len"], "bias": config["bias"]}
    for key, found in pairs.items():
        if key in model_args and model_args[key] is not None and model_args[key] != found:
            raise ValueError(f"{where}: model_args[{key!r}] = {_shown(model_args[key])} but the tensors say {found!r}")


def convert_nanogpt(ckpt_path, meta_path=None, gelu=None, n_head=None, vocab=None, tokenizer=None, merges=None,
                    eos_id=None, train_max_len=None, prompt_suffix=None, meta=None, visible_controls=False):
    """A nanoGPT checkpoint -> Converted.

    ckpt_path: the ckpt.pt nanoGPT's train.py writes ({'model', 'model_args',
    'iter_num', 'best_val_loss', 'config', 'optimizer'}), or a bare state_dict.
    meta_path: the dataset's meta.pkl (a character vocabulary; read with a
    data-only unpickler). gelu: "exact" (nn.GELU, nanoGPT since June 2023) or
    "tanh" (nanoGPT before, whose MLP called new_gelu): the checkpoint does not
    record it; None (not given) means "exact", today's nanoGPT, and says so in
    a note (the check against the user's own model.py verifies it). n_head:
    only when model_args lacks it.
    vocab / tokenizer / merges: a vocabulary given directly instead of meta.pkl
    (e.g. GPT-2's, with tokenizer="gpt2_bpe" and merges, for a model trained on
    GPT-2 ids: see hf_gpt2.read_bpe); without any, the file has ids only.
    eos_id, train_max_len, prompt_suffix: written as given (nanoGPT has none).
    meta: another name for meta_path (the command line's --meta).
    visible_controls: a character vocabulary usually holds "\n" (and may hold
    "\t"): they are written as they are, tokens of their own (docs/FORMAT.md's
    vocabulary rules), and `run` prints them as a newline and a tab. No other
    control character may be a token: False (the default) refuses one ("\r",
    DEL, ...), naming the entries; True writes every control character, "\n"
    and "\t" included, as its visible Unicode picture (U+2400 + code: "\n" ->
    "␊", DEL -> "␡"), as this converter did before "\n" was allowed: the
    file then prints "␊" where the text had a newline (and reads a typed
    newline as that token).
    """
    if meta is not None:
        if meta_path is not None:
            raise ValueError("convert_nanogpt: give meta_path or meta, not both")
        meta_path = meta
    where = str(ckpt_path)
    ckpt = load_torch_file(ckpt_path, "nanoGPT checkpoint")
    if not isinstance(ckpt, dict):
        raise ValueError(f"{where}: holds a {type(ckpt).__name__}, expected nanoGPT's checkpoint dict")
    if "model" in ckpt and isinstance(ckpt["model"], dict):
        state, model_args = ckpt["model"], ckpt.get("model_args") or {}
        if not isinstance(model_args, dict):
            raise ValueError(f"{where}: model_args is a {type(model_args).__name__}, expected a dict")
    elif all(torch.is_tensor(v) for v in ckpt.values()):
        state, model_args = ckpt, {}
    else:
        raise ValueError(f"{where}: neither nanoGPT's checkpoint (a dict with 'model') nor a state_dict; "
                         f"keys: {sorted(map(str, ckpt))[:8]}")
    heads = n_head if n_head is not None else model_args.get("n_head")
    needed, assumed = [], []
    if gelu is None:
        gelu = "exact"
        assumed.append("gelu not given: assumed exact (nn.GELU, nanoGPT's model.py since June 2023; the checkpoint "
                       "does not record it); for nanoGPT code before mid-2023 (new_gelu) pass --gelu tanh "
                       "(gelu=\"tanh\")")
    elif gelu not in GELU_ACTIVATION:
        raise ValueError(f"convert_nanogpt: gelu = {gelu!r}: expected \"exact\" or \"tanh\"")
    if heads is None:
        needed.append(("n_head", "model_args has no n_head (a bare state_dict does not tell the head count)"))
    _missing("convert_nanogpt", needed)
    state, notes = _cleaned(state, where)
    converted = assemble(state, n_head=heads, gelu=gelu, where=where)
    converted.notes.extend(assumed + notes)
    _check_model_args(where, model_args, converted.config)
    if model_args.get("n_head") is not None and n_head is not None and model_args["n_head"] != n_head:
        raise ValueError(f"convert_nanogpt: n_head = {n_head} but model_args['n_head'] = {_shown(model_args['n_head'])}")
    if model_args.get("n_head") is None:
        converted.assumed["n_head"] = heads             # a bare state_dict: the caller's word
    converted.metadata.update(_vocabulary("convert_nanogpt", meta_path, vocab, tokenizer, merges,
                                          converted.config["vocab_size"]))
    _visible_controls(converted, visible_controls, meta_path)
    _extras(converted, eos_id, train_max_len, prompt_suffix)
    converted.build_reference_with(lambda: _reference(converted, gelu))
    return converted


def _cleaned(state, where):
    """strip_prefixes + drop_mask_buffers, with notes saying what was done."""
    notes = []
    state = tensors_by_name(state, where)
    stripped = strip_prefixes(state, where)
    if any(k.startswith(PREFIXES) for k in state):
        notes.append("key prefix _orig_mod. (torch.compile) / module. (DDP) removed")
    state, dropped = drop_mask_buffers(stripped, where)
    if dropped:
        notes.append(f"{dropped} causal-mask buffer{'s' if dropped != 1 else ''} (attn.bias [1,1,T,T] / "
                     f"attn.masked_bias) dropped: "
                     f"tinyformer's causal attention is that mask")
    return state, notes


def control_picture(ch):
    """The visible stand-in of a C0 control character or DEL (Unicode's Control
    Pictures block: U+2400 + code, DEL -> U+2421); other characters unchanged."""
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)
    return "\u2421" if code == 0x7F else ch


# The control characters a "char" vocabulary may hold as tokens of their own
# (docs/FORMAT.md's vocabulary rules): a text's newline and tab.
TEXT_CONTROLS = ("\n", "\t")


def _visible_controls(converted, pictured, where):
    """A char vocabulary's control characters: "\n" and "\t" stay tokens unless
    `pictured`; any other is refused, or with `pictured` every one (those two
    included) is stored as its picture."""
    vocab = converted.metadata.get("vocab")
    if vocab is None or converted.metadata.get("tokenizer") != "char":
        return
    controls = [i for i, t in enumerate(vocab) if any(control_picture(c) != c for c in t)]
    if not pictured:
        bad = [i for i in controls if vocab[i] not in TEXT_CONTROLS]
        if bad:
            shown = ", ".join(f"vocab[{i}] = {vocab[i]!r}" for i in bad[:4])
            raise ValueError(f"{where}: {shown}: a tinyformer token cannot hold a control character other than a "
                             f"newline or a tab (docs/FORMAT.md); pass visible_controls=True (--visible-controls) "
                             f"to store each as its visible picture (\\r -> {control_picture(chr(13))}), or convert "
                             f"without the vocabulary (ids only)")
        return
    if not controls:
        return
    pictures = [control_picture(c) for c in vocab]
    clash = sorted(set(pictures[i] for i in controls) & set(vocab))
    if clash:
        raise ValueError(f"{where}: the vocabulary already holds {clash[0]!r}, the picture a control character "
                         f"would be stored as")
    converted.metadata["vocab"] = pictures
    converted.notes.append("control characters stored as their pictures: " + ", ".join(
        f"{vocab[i]!r} -> {pictures[i]}" for i in controls))


def _extras(converted, eos_id=None, train_max_len=None, prompt_suffix=None):
    """Keys no GPT file records, written when the caller gives them."""
    if eos_id is not None:
        converted.config["eos_id"] = eos_id
    if train_max_len is not None:
        converted.metadata["train_max_len"] = train_max_len
    if prompt_suffix is not None:
        converted.metadata["prompt_suffix"] = prompt_suffix


def _vocabulary(function, meta_path, vocab, tokenizer, merges, vocab_size):
    if meta_path is not None and vocab is not None:
        raise ValueError(f"{function}: give meta_path or vocab, not both")
    if meta_path is not None:
        vocab, tokenizer = read_meta(meta_path), "char"
        if len(vocab) != vocab_size:
            raise ValueError(f"{meta_path}: {len(vocab)} characters but the model's vocab_size is {vocab_size}: "
                             f"not this model's meta.pkl")
    if vocab is None:
        if merges is not None:
            raise ValueError(f"{function}: merges given without a vocabulary")
        return {}
    vocab = list(vocab)
    md = {"vocab": vocab, "tokenizer": tokenizer or "char"}
    if merges is not None:
        md["merges"] = list(merges)
    return md


def convert_mingpt(state_dict_path, n_head=None, vocab=None, tokenizer=None, gelu="tanh", eos_id=None,
                   train_max_len=None, prompt_suffix=None):
    """A minGPT state_dict (torch.save(model.state_dict(), path)) -> Converted.
    minGPT: tanh GELU (NewGELU), nn.LayerNorm with bias, Linear biases, untied
    lm_head without bias, attn.bias mask buffers (dropped). n_head is required:
    a state_dict does not tell it."""
    where = str(state_dict_path)
    _missing("convert_mingpt", [("n_head", "a state_dict does not tell the head count (minGPT's model_type "
                                           "table: gpt-nano 3, gpt-micro 4, gpt-mini 6, gpt2 12)")]
             if n_head is None else [])
    state = load_torch_file(state_dict_path, "minGPT state_dict")
    if not isinstance(state, dict) or not all(torch.is_tensor(v) for v in state.values()):
        raise ValueError(f"{where}: expected a state_dict (a dict name -> tensor), got {type(state).__name__}")
    state, notes = _cleaned(state, where)
    converted = assemble(state, n_head=n_head, gelu=gelu, where=where)
    converted.notes.extend(notes)
    converted.assumed.update(n_head=n_head, gelu=gelu)     # a state_dict records neither
    converted.metadata.update(_vocabulary("convert_mingpt", None, vocab, tokenizer, None,
                                          converted.config["vocab_size"]))
    _extras(converted, eos_id, train_max_len, prompt_suffix)
    converted.build_reference_with(lambda: _reference(converted, gelu))
    return converted


# ----------------------------------------------------------------------------
# From a module instance (export(module, path) in tinyformer_export)
# ----------------------------------------------------------------------------

def _has(obj, dotted):
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def recognise(module):
    """True for a GPT of this module, nanoGPT's or minGPT's, told by structure
    (transformer.wte/wpe/h/ln_f, lm_head, blocks with ln_1, attn.c_attn, attn.c_proj,
    ln_2, mlp.c_fc, mlp.c_proj, all nn.Linear): not by class."""
    if not isinstance(module, nn.Module) or not all(_has(module, p) for p in
                                                     ("transformer.wte", "transformer.wpe", "transformer.h",
                                                      "transformer.ln_f", "lm_head")):
        return False
    blocks = module.transformer.h
    if not isinstance(blocks, nn.ModuleList) or len(blocks) == 0:
        return False
    return all(all(_has(b, p) for p in ("ln_1", "ln_2", "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"))
               and all(isinstance(x, nn.Linear) for x in (b.attn.c_attn, b.attn.c_proj, b.mlp.c_fc, b.mlp.c_proj))
               for b in blocks)


def _module_gelu(module):
    """"exact" / "tanh" from a block's MLP: ours (.kind), nanoGPT's (nn.GELU at
    .gelu, approximate "none"/"tanh"), minGPT's (NewGELU at .act); None when unknown."""
    mlp = module.transformer.h[0].mlp
    if isinstance(getattr(mlp, "kind", None), str):
        return mlp.kind
    act = getattr(mlp, "gelu", None) or (mlp["act"] if isinstance(mlp, nn.ModuleDict) and "act" in mlp else None)
    if isinstance(act, nn.GELU):
        return "tanh" if getattr(act, "approximate", "none") == "tanh" else "exact"
    if act is not None and type(act).__name__ == "NewGELU":
        return "tanh"
    return None


def _module_eps(ln):
    eps = getattr(ln, "eps", None)
    return 1e-5 if eps is None else float(eps)   # nanoGPT's LayerNorm has no eps attribute: it uses 1e-5


def from_module(module, gelu=None, n_head=None, vocab=None, tokenizer=None, merges=None, eos_id=None,
                train_max_len=None, prompt_suffix=None):
    """Converted from a live GPT module (ours, nanoGPT's, minGPT's); reference = module.
    gelu and n_head are read from the module when it tells them (ours, nanoGPT's
    nn.GELU, minGPT's NewGELU; attn.n_head); vocab/tokenizer/merges/eos_id/
    train_max_len/prompt_suffix are written as given."""
    if not recognise(module):
        raise ValueError(f"from_module: {type(module).__name__} is not a nanoGPT/minGPT-style GPT")
    found_gelu = _module_gelu(module)
    gelu = gelu or found_gelu
    if n_head is None:
        n_head = getattr(module.transformer.h[0].attn, "n_head", None)
        if n_head is None and hasattr(module, "config"):
            n_head = getattr(module.config, "n_head", None)
    needed = []
    if gelu is None:
        act = getattr(module.transformer.h[0].mlp, "gelu", None)
        what = (f"the MLP's activation {type(act).__name__} is not one recognised" if act is not None else
                "the MLP holds no GELU module (nanoGPT before mid-2023 called the tanh function new_gelu)")
        needed.append(("gelu", f"{what}: give \"exact\" or \"tanh\""))
    if n_head is None:
        needed.append(("n_head", "the attention module has no n_head attribute"))
    _missing("from_module", needed)
    if found_gelu is not None and gelu != found_gelu:
        raise ValueError(f"from_module: gelu = {gelu!r} but the module's MLP uses {found_gelu!r}")
    eps = _module_eps(module.transformer.ln_f)
    where = type(module).__name__
    state = {k: v for k, v in module.state_dict().items()}
    state, notes = _cleaned(state, where)
    converted = assemble(state, n_head=n_head, gelu=gelu, where=where, layer_norm_eps=eps)
    converted.notes.extend(notes)
    converted.metadata.update(_vocabulary("from_module", None, vocab, tokenizer, merges,
                                          converted.config["vocab_size"]))
    _extras(converted, eos_id, train_max_len, prompt_suffix)
    converted.reference = module
    return converted
