"""The table of PyTorch reference cases that tools/python/make_reference.py makes.

Each case is a dict: "name", "covers" (what the case is there for, shown in
data/reference/README.md), "config" (the checkpoint's config, every key of
docs/FORMAT.md's table for its arch), "storage" (F32, F16 or BF16), "vocab"
(a list of token strings for the metadata, or None), and the shape of the
inputs: encoder_decoder cases "src_len", "tgt_len", "src_pad", "tgt_pad";
single-stack cases "length", "pad", "prefix_len" (prefix_lm only, else None).
Single-stack cases may set "norm" ("rms_norm"; absent = layer_norm).
Padding of a row is (left, right): that many padded positions at the start /
end; the number of rows is the batch size.

To add a case, append it to CASES and run tools/python/make_reference.py; its README
coverage table shows which values of each axis the cases cover.
"""

FORMAT_TAG = "tinyformer/1"
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2


def _ed(name, covers, *, d, h, ff, enc, dec, src_vocab, tgt_vocab, max_len, norm_first, act, pos,
        embed_scale, eps=1e-5, src_pad, tgt_pad, src_len, tgt_len, storage="F32"):
    cfg = {
        "format": FORMAT_TAG, "arch": "encoder_decoder",
        "d_model": d, "nhead": h, "dim_feedforward": ff,
        "num_encoder_layers": enc, "num_decoder_layers": dec,
        "activation": act, "norm_first": norm_first, "layer_norm_eps": eps,
        "src_vocab_size": src_vocab, "tgt_vocab_size": tgt_vocab, "max_len": max_len,
        "pos_encoding": pos, "embed_scale": embed_scale,
        "pad_id": PAD_ID, "bos_id": BOS_ID, "eos_id": EOS_ID,
    }
    return {"name": name, "covers": covers, "config": cfg, "storage": storage, "vocab": None,
            "src_len": src_len, "tgt_len": tgt_len, "src_pad": src_pad, "tgt_pad": tgt_pad}


def _single(name, covers, *, arch, attention, d, h, ff, layers, vocab_size, max_len, norm_first, act,
            pos, embed_scale, final_norm, eps=1e-5, length, pad, prefix_len=None, storage="F32",
            vocab=None, norm=None):
    cfg = {
        "format": FORMAT_TAG, "arch": arch,
        "d_model": d, "nhead": h, "dim_feedforward": ff, "num_layers": layers,
        "activation": act, "norm_first": norm_first, "layer_norm_eps": eps, "final_norm": final_norm,
        "vocab_size": vocab_size, "max_len": max_len, "pos_encoding": pos, "embed_scale": embed_scale,
        "attention": attention, "pad_id": PAD_ID, "bos_id": BOS_ID, "eos_id": EOS_ID,
    }
    if norm is not None:   # the optional "norm" key (absent: layer_norm)
        cfg["norm"] = norm
    return {"name": name, "covers": covers, "config": cfg, "storage": storage, "vocab": vocab,
            "length": length, "pad": pad, "prefix_len": prefix_len}


def _toy_vocab(n):
    words = ["<pad>", "<bos>", "<eos>"]
    words += [chr(ord("a") + i) if i < 26 else f"w{i}" for i in range(n - 3)]
    return words


CASES = [
    _ed("ed_post_relu_sin",
        "encoder_decoder, post-LN, ReLU, sinusoidal, embed_scale, no padding, S != T",
        d=16, h=4, ff=32, enc=2, dec=2, src_vocab=13, tgt_vocab=11, max_len=16,
        norm_first=False, act="relu", pos="sinusoidal", embed_scale=True,
        src_len=7, tgt_len=5, src_pad=[(0, 0)] * 2, tgt_pad=[(0, 0)] * 2),
    _ed("ed_pre_gelu_learned_pad",
        "encoder_decoder, pre-LN, GELU, learned positions (max_len > S, T), 6 heads, "
        "source and target padding, 2 encoder / 1 decoder layers",
        d=24, h=6, ff=40, enc=2, dec=1, src_vocab=15, tgt_vocab=12, max_len=12,
        norm_first=True, act="gelu", pos="learned", embed_scale=False,
        src_len=9, tgt_len=6, src_pad=[(0, 0), (0, 3), (0, 5)], tgt_pad=[(0, 0), (0, 2), (0, 1)]),
    _ed("ed_post_gelu_none_h1_srcpad",
        "encoder_decoder, post-LN, GELU, no positional encoding, single head, layer_norm_eps 1e-6, "
        "source padding only (no tgt_key_padding_mask input), 1 encoder / 2 decoder layers, T > S",
        d=8, h=1, ff=16, enc=1, dec=2, src_vocab=10, tgt_vocab=10, max_len=8,
        norm_first=False, act="gelu", pos="none", embed_scale=True, eps=1e-6,
        src_len=5, tgt_len=8, src_pad=[(0, 2), (0, 0)], tgt_pad=[(0, 0), (0, 0)]),
    _single("do_post_relu_sin_h1",
            "decoder_only causal, post-LN, ReLU, sinusoidal, single head, no final norm, "
            "embed_scale, no padding, config with a vocab list",
            arch="decoder_only", attention="causal", d=16, h=1, ff=32, layers=2, vocab_size=20,
            max_len=8, norm_first=False, act="relu", pos="sinusoidal", embed_scale=True,
            final_norm=False, length=8, pad=[(0, 0)] * 2, vocab=_toy_vocab(20)),
    _single("do_pre_gelu_learned_pad",
            "decoder_only causal, pre-LN, GELU, learned positions, 8 heads (head dim 4), "
            "final norm, right padding",
            arch="decoder_only", attention="causal", d=32, h=8, ff=64, layers=2, vocab_size=17,
            max_len=16, norm_first=True, act="gelu", pos="learned", embed_scale=False,
            final_norm=True, length=10, pad=[(0, 0), (0, 4), (0, 1)]),
    _single("do_pre_relu_none_leftpad",
            "decoder_only causal, pre-LN, ReLU, no positional encoding, LEFT padding "
            "(queries with every key masked; see the NaN note), right padding, 2 layers",
            arch="decoder_only", attention="causal", d=16, h=4, ff=24, layers=2, vocab_size=12,
            max_len=8, norm_first=True, act="relu", pos="none", embed_scale=True,
            final_norm=True, length=7, pad=[(3, 0), (0, 2), (0, 0)]),
    _single("do_prefix_pre_gelu_sin",
            "decoder_only prefix_lm, prefix lengths 0, 3 and T (= all) in one batch, pre-LN, "
            "GELU, sinusoidal, no padding",
            arch="decoder_only", attention="prefix_lm", d=16, h=4, ff=32, layers=2, vocab_size=14,
            max_len=8, norm_first=True, act="gelu", pos="sinusoidal", embed_scale=False,
            final_norm=True, length=6, pad=[(0, 0)] * 3, prefix_len=[0, 3, 6]),
    _single("do_prefix_post_relu_learned_pad",
            "decoder_only prefix_lm with right padding, prefix lengths 2, 5, 1, post-LN, ReLU, "
            "learned positions, 3 heads, 1 layer, no final norm",
            arch="decoder_only", attention="prefix_lm", d=12, h=3, ff=20, layers=1, vocab_size=16,
            max_len=10, norm_first=False, act="relu", pos="learned", embed_scale=True,
            final_norm=False, length=9, pad=[(0, 0), (0, 3), (0, 2)], prefix_len=[2, 5, 1]),
    _single("eo_post_relu_learned_h1",
            "encoder_only bidirectional, post-LN, ReLU, learned positions, single head, "
            "no final norm, no padding",
            arch="encoder_only", attention="bidirectional", d=8, h=1, ff=16, layers=2, vocab_size=9,
            max_len=8, norm_first=False, act="relu", pos="learned", embed_scale=True,
            final_norm=False, length=5, pad=[(0, 0)] * 2),
    _single("eo_pre_gelu_sin_pad",
            "encoder_only bidirectional, pre-LN, GELU, sinusoidal, 8 heads, final norm, "
            "layer_norm_eps 1e-6, right padding",
            arch="encoder_only", attention="bidirectional", d=32, h=8, ff=48, layers=2, vocab_size=14,
            max_len=12, norm_first=True, act="gelu", pos="sinusoidal", embed_scale=False,
            final_norm=True, eps=1e-6, length=11, pad=[(0, 0), (0, 5), (0, 2)]),
    _single("eo_post_gelu_none_pad",
            "encoder_only bidirectional, post-LN, GELU, no positional encoding, 2 heads, "
            "final norm, 1 layer, right padding",
            arch="encoder_only", attention="bidirectional", d=16, h=2, ff=32, layers=1, vocab_size=10,
            max_len=4, norm_first=False, act="gelu", pos="none", embed_scale=True,
            final_norm=True, length=4, pad=[(0, 1), (0, 0)]),
    _single("do_post_gelu_learned_bf16",
            "BF16 storage (weights rounded to BF16 before PyTorch runs), decoder_only causal, "
            "post-LN, GELU, learned positions, final norm, right padding",
            arch="decoder_only", attention="causal", d=16, h=4, ff=32, layers=1, vocab_size=11,
            max_len=6, norm_first=False, act="gelu", pos="learned", embed_scale=True,
            final_norm=True, length=6, pad=[(0, 0), (0, 2)], storage="BF16"),
    _single("do_d256_f16",
            "d_model 256, sequences of 100 and 93 (+7 padding), F16 storage (weights rounded to F16 "
            "before PyTorch runs), decoder_only causal, pre-LN, GELU, sinusoidal, 4 heads, final norm",
            arch="decoder_only", attention="causal", d=256, h=4, ff=512, layers=2, vocab_size=64,
            max_len=128, norm_first=True, act="gelu", pos="sinusoidal", embed_scale=True,
            final_norm=True, length=100, pad=[(0, 0), (0, 7)], storage="F16"),
    _single("do_pre_rms_swiglu_pad",
            "decoder_only causal, pre-LN with RMSNorm (llama2.c's norm), SwiGLU feed-forward "
            "(linear3), no positional encoding, 4 heads, ff 40 (not a multiple of d), final RMSNorm, "
            "right padding, 2 layers",
            arch="decoder_only", attention="causal", d=24, h=4, ff=40, layers=2, vocab_size=19,
            max_len=12, norm_first=True, act="swiglu", pos="none", embed_scale=False,
            final_norm=True, length=9, pad=[(0, 0), (0, 3)], norm="rms_norm"),
    _single("do_post_rms_silu_learned",
            "decoder_only causal, post-LN with RMSNorm, SiLU activation, learned positions, "
            "2 heads, no final norm, layer_norm_eps 1e-6, right padding",
            arch="decoder_only", attention="causal", d=16, h=2, ff=36, layers=2, vocab_size=13,
            max_len=10, norm_first=False, act="silu", pos="learned", embed_scale=True,
            final_norm=False, eps=1e-6, length=7, pad=[(0, 0), (0, 1), (0, 2)], norm="rms_norm"),
]
CASE_BY_NAME = {c["name"]: c for c in CASES}
