"""The reference modules of shared FORMAT.md, built from stock PyTorch modules.

EncoderDecoderRef: attributes src_embed, tgt_embed, pos_embed (learned only),
transformer (nn.Transformer(batch_first=True)), generator.
SingleStackRef: embed, pos_embed (learned only), transformer
(nn.TransformerEncoder of nn.TransformerEncoderLayer(batch_first=True), with
norm iff final_norm), lm_head. Their state_dict() names are the checkpoint's
tensor names. Shared by tools/make_reference.py and tools/train_toy.py.
"""

import math

import numpy as np
import torch
from torch import nn


def sinusoidal_table(length, d, dtype=np.float64):
    """P[pos, 2i] = sin(pos / 10000^(2i/d)), P[pos, 2i+1] = cos(same); computed
    in float64, then rounded to `dtype`."""
    pos = np.arange(length, dtype=np.float64)[:, None]
    two_i = np.arange(0, d, 2, dtype=np.float64)[None, :]
    angle = pos / np.power(10000.0, two_i / d)
    table = np.zeros((length, d), dtype=np.float64)
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle[:, : d // 2])
    return table.astype(dtype)


class _Embedding(nn.Module):
    """Shared token + position embedding (no parameters of its own)."""

    def add_positions(self, x):
        cfg = self.cfg
        t = x.shape[1]
        if cfg["pos_encoding"] == "learned":
            x = x + self.pos_embed(torch.arange(t))
        elif cfg["pos_encoding"] == "sinusoidal":
            x = x + torch.from_numpy(sinusoidal_table(t, cfg["d_model"], np.float32))
        return x

    def embed_tokens(self, table, ids):
        x = table(ids)
        if self.cfg["embed_scale"]:
            x = x * math.sqrt(self.cfg["d_model"])
        return self.add_positions(x)


class EncoderDecoderRef(_Embedding):
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
        t = tgt_ids.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)  # True = blocked (PyTorch bool mask)
        memory = self.transformer.encoder(self.embed_tokens(self.src_embed, src_ids),
                                          src_key_padding_mask=src_key_padding_mask)
        h = self.transformer.decoder(self.embed_tokens(self.tgt_embed, tgt_ids), memory, tgt_mask=causal,
                                     tgt_key_padding_mask=tgt_key_padding_mask,
                                     memory_key_padding_mask=src_key_padding_mask)
        return self.generator(h)


class SingleStackRef(_Embedding):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = dict(cfg)
        d = cfg["d_model"]
        self.embed = nn.Embedding(cfg["vocab_size"], d)
        if cfg["pos_encoding"] == "learned":
            self.pos_embed = nn.Embedding(cfg["max_len"], d)
        layer = nn.TransformerEncoderLayer(
            d_model=d, nhead=cfg["nhead"], dim_feedforward=cfg["dim_feedforward"], dropout=0.0,
            activation=cfg["activation"], layer_norm_eps=cfg["layer_norm_eps"], batch_first=True,
            norm_first=cfg["norm_first"])
        norm = nn.LayerNorm(d, eps=cfg["layer_norm_eps"]) if cfg["final_norm"] else None
        self.transformer = nn.TransformerEncoder(layer, cfg["num_layers"], norm=norm, enable_nested_tensor=False)
        self.lm_head = nn.Linear(d, cfg["vocab_size"])

    def forward(self, ids, key_padding_mask=None, prefix_len=None):
        b, t = ids.shape
        i = torch.arange(t)[:, None]
        j = torch.arange(t)[None, :]
        kind = self.cfg["attention"]
        if kind == "causal":
            mask = j > i                                   # [T, T], True = blocked
        elif kind == "prefix_lm":
            sees = (j[None] < prefix_len[:, None, None]) | (j <= i)[None]    # [B, T, T]
            mask = (~sees).repeat_interleave(self.cfg["nhead"], dim=0)       # [B*H, T, T], row b*H+h
        else:
            mask = None
        h = self.transformer(self.embed_tokens(self.embed, ids), mask=mask, src_key_padding_mask=key_padding_mask)
        return self.lm_head(h)


def build_module(cfg):
    return EncoderDecoderRef(cfg) if cfg["arch"] == "encoder_decoder" else SingleStackRef(cfg)
