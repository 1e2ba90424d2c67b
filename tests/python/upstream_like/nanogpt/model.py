"""A model file with nanoGPT's interface, written for tinyformer's tests (no
upstream code): the check's --module runs it as a nanoGPT user's model.py.

What it presents, as nanoGPT's model.py does:
  GPTConfig(block_size, vocab_size, n_layer, n_head, n_embd, dropout, bias): the
      fields of a checkpoint's model_args, so GPT(GPTConfig(**model_args)) builds it;
  GPT.forward(idx, targets=None) -> (logits, loss): with targets, the logits of every
      position and the cross-entropy; WITHOUT them only the last position's logits,
      [B, 1, V] (an inference shortcut) and loss None;
  each attention's softmaxed weights go through its attn_dropout module (the manual
      path; no .weights attribute), with the [1, 1, T, T] causal mask buffer attn.bias;
  the MLP's activation is nn.GELU() (exact), the head tied to wte, LayerNorm with an
      optional bias (families/gpt.py's).
"""

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tools" / "python"))
from families.gpt import LayerNorm  # noqa: E402  (the numerics of the project's own GPT)


@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50304
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        lower = torch.tril(torch.ones(config.block_size, config.block_size))
        self.register_buffer("bias", lower.view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        b, t, d = x.shape

        def heads(m):                                   # [B, T, D] -> [B, H, T, D / H]
            return m.view(b, t, self.n_head, d // self.n_head).transpose(1, 2)
        q, k, v = (heads(m) for m in self.c_attn(x).split(d, dim=2))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.n_head))
        scores = scores.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        weights = self.attn_dropout(F.softmax(scores, dim=-1))
        return self.resid_dropout(self.c_proj((weights @ v).transpose(1, 2).contiguous().view(b, t, d)))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


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
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, config.bias)))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        print("model.py: a line printed by the user's code, as nanoGPT's prints its parameter count")

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t)))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is None:
            return self.lm_head(x[:, [-1], :]), None   # the last position only
        logits = self.lm_head(x)
        return logits, F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1), ignore_index=-1)
