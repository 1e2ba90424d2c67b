"""A model file with llama2.c's interface, written for tinyformer's tests (no
upstream code): the check's --module runs it as a llama2.c user's model.py.

What it presents, as llama2.c's model.py does:
  ModelArgs(dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim, multiple_of,
      norm_eps, max_seq_len, dropout): the fields of a checkpoint's model_args, so
      Transformer(ModelArgs(**model_args)) builds it;
  Transformer.forward(tokens, targets=None): WITHOUT targets the logits of the last
      position only, [B, 1, V]; with them every position, and the loss in .last_loss;
  each attention's softmaxed weights go through its attn_dropout module (the manual
      path; no .weights attribute), with the [1, 1, T, T] causal mask buffer
      attention.mask (0 / -inf); grouped-query attention; the head tied.
The numerics (RMSNorm, RoPE, SwiGLU) are families/llama.py's.
"""

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tools" / "python"))
from families.llama import FeedForward, RMSNorm, apply_rope, ffn_hidden_dim, rope_tables  # noqa: E402


@dataclass
class ModelArgs:
    dim: int = 4096
    n_layers: int = 32
    n_heads: int = 32
    n_kv_heads: Optional[int] = None
    vocab_size: int = 32000
    hidden_dim: Optional[int] = None
    multiple_of: int = 256
    norm_eps: float = 1e-5
    max_seq_len: int = 2048
    dropout: float = 0.0


class Attention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.n_heads = args.n_heads
        self.n_kv_heads = args.n_heads if args.n_kv_heads is None else args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        above = torch.triu(torch.full((1, 1, args.max_seq_len, args.max_seq_len), float("-inf")), diagonal=1)
        self.register_buffer("mask", above)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = apply_rope(self.wq(x).view(b, t, self.n_heads, self.head_dim), cos, sin)
        k = apply_rope(self.wk(x).view(b, t, self.n_kv_heads, self.head_dim), cos, sin)
        v = self.wv(x).view(b, t, self.n_kv_heads, self.head_dim)
        group = self.n_heads // self.n_kv_heads
        q, k, v = (m.transpose(1, 2) for m in (q, torch.repeat_interleave(k, group, 2),
                                               torch.repeat_interleave(v, group, 2)))
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim) + self.mask[:, :, :t, :t]
        weights = self.attn_dropout(F.softmax(scores.float(), dim=-1).type_as(q))
        return self.resid_dropout(self.wo((weights @ v).transpose(1, 2).contiguous().view(b, t, -1)))


class TransformerBlock(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.attention = Attention(args)
        self.feed_forward = FeedForward(args.dim, ffn_hidden_dim(args.dim, args.hidden_dim, args.multiple_of),
                                        args.dropout)
        self.attention_norm = RMSNorm(args.dim, args.norm_eps)
        self.ffn_norm = RMSNorm(args.dim, args.norm_eps)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, params):
        super().__init__()
        self.params = params
        self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)
        self.dropout = nn.Dropout(params.dropout)
        self.layers = nn.ModuleList([TransformerBlock(params) for _ in range(params.n_layers)])
        self.norm = RMSNorm(params.dim, params.norm_eps)
        self.output = nn.Linear(params.dim, params.vocab_size, bias=False)
        self.tok_embeddings.weight = self.output.weight
        self.last_loss = None

    def forward(self, tokens, targets=None):
        t = tokens.shape[1]
        cos, sin = rope_tables(self.params.dim // self.params.n_heads, t)
        h = self.dropout(self.tok_embeddings(tokens))
        for layer in self.layers:
            h = layer(h, cos, sin)
        h = self.norm(h)
        if targets is None:
            self.last_loss = None
            return self.output(h[:, [-1], :])          # the last position only
        logits = self.output(h)
        self.last_loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits
