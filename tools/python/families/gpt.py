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
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


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
        causal = torch.tril(torch.ones(config.block_size, config.block_size))
        causal = causal.view(1, 1, config.block_size, config.block_size)
        if config.mask_buffer:
            self.register_buffer("bias", causal)                   # lands in the state_dict
        else:
            self.register_buffer("bias", causal, persistent=False)  # as torch >= 2.0's nanoGPT: not saved
        self.weights = None   # the last [B, n_head, T, T] attention weights (for tests and checks)

    def forward(self, x):
        b, t, d = x.shape
        hs = d // self.n_head
        q, k, v = self.c_attn(x).split(d, dim=2)
        q = q.view(b, t, self.n_head, hs).transpose(1, 2)            # [B, H, T, hs]
        k = k.view(b, t, self.n_head, hs).transpose(1, 2)
        v = v.view(b, t, self.n_head, hs).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))   # [B, H, T, T]
        scores = scores.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
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
