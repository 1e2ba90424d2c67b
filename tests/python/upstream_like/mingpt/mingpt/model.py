"""A model file with minGPT's interface, written for tinyformer's tests (no
upstream code). It sits in a package and imports a sibling module by the
package's name (`from mingpt.utils import CfgNode`), as minGPT's
mingpt/model.py does, so the check's --module must import it as mingpt.model.

What it presents, as minGPT's model does:
  GPT.get_default_config(): a CfgNode with model_type "gpt", n_layer, n_head, n_embd,
      vocab_size and block_size None, and the three dropout rates; GPT(config) with
      model_type None and the sizes set (or a model_type naming them);
  GPT.forward(idx, targets=None) -> (logits at every position, loss or None);
  each attention's softmaxed weights go through attn_dropout; the [1, 1, T, T] mask
      buffer attn.bias; the MLP an nn.ModuleDict (c_fc, c_proj, act, dropout) with the
      tanh GELU (families/gpt.py's); nn.LayerNorm; an untied head without bias.
"""

import math
import sys
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from mingpt.utils import CfgNode

sys.path.insert(0, str(Path(__file__).resolve().parents[5] / "tools" / "python"))
from families.gpt import gelu  # noqa: E402  (the project's tanh GELU)


class NewGELU(nn.Module):
    def forward(self, x):
        return gelu(x, "tanh")


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
        lower = torch.tril(torch.ones(config.block_size, config.block_size))
        self.register_buffer("bias", lower.view(1, 1, config.block_size, config.block_size))
        self.n_head = config.n_head

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (m.view(b, t, self.n_head, d // self.n_head).transpose(1, 2) for m in self.c_attn(x).split(d, 2))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
        scores = scores.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        weights = self.attn_dropout(F.softmax(scores, dim=-1))
        return self.resid_dropout(self.c_proj((weights @ v).transpose(1, 2).contiguous().view(b, t, d)))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(config.n_embd, 4 * config.n_embd),
                                      c_proj=nn.Linear(4 * config.n_embd, config.n_embd),
                                      act=NewGELU(), dropout=nn.Dropout(config.resid_pdrop)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        m = self.mlp
        return x + m.dropout(m.c_proj(m.act(m.c_fc(self.ln_2(x)))))


class GPT(nn.Module):
    SIZES = {"gpt-nano": dict(n_layer=3, n_head=3, n_embd=48), "gpt-micro": dict(n_layer=4, n_head=4, n_embd=128)}

    @staticmethod
    def get_default_config():
        return CfgNode(model_type="gpt", n_layer=None, n_head=None, n_embd=None, vocab_size=None, block_size=None,
                       embd_pdrop=0.1, resid_pdrop=0.1, attn_pdrop=0.1)

    def __init__(self, config):
        super().__init__()
        sizes_given = None not in (config.n_layer, config.n_head, config.n_embd)
        assert (config.model_type is not None) != sizes_given, "give model_type or the sizes, not both"
        if config.model_type is not None:
            config.merge_from_dict(self.SIZES[config.model_type])
        self.block_size = config.block_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.embd_pdrop),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd)))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t).unsqueeze(0)))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1), ignore_index=-1)
        return logits, loss
