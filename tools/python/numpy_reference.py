"""The whole model on one page: docs/FORMAT.md's forward pass in float64 numpy.

An independent implementation of what `tinyformer forward --attention`
computes, written from FORMAT.md and the lesson's formulas only (numpy, no
PyTorch), readable top to bottom. tools/python/make_reference.py runs it on every
reference case to check PyTorch's float32 numbers far inside the parity
tolerance; tools/python/make_export_fixture.py checks an exported model with it;
tests/python/test_numpy_reference.py holds it to the committed PyTorch references
and to the engine on committed rotary, ALiBi and llama2.c (RMSNorm, SwiGLU,
grouped-query) models.

Where each formula of the lesson lives (X is [B, T, D], one row per token):

    sinusoidal_table   P[pos, 2i] = sin(pos / 10000^(2i/D)), P[pos, 2i+1] = cos(same)
    embed              X = E[ids] * sqrt(D) (if embed_scale) + P[0..T-1]
    linear             y = x W^T + b              (PyTorch's weight layout [out, in];
                       no b when the file has none: config bias / head_bias false)
    product            x W^T; for a Q8_0 weight (I8 W with W.scale, FORMAT.md) runq.c's
                       product: x (float32) quantized per group of G by the same rule
                       (q8_0.py), then (qx sx) (qw sw)^T: exact int sums, scaled
    layer_norm         LayerNorm(x) = (x - mean) / sqrt(var + eps) * gamma + beta,
                       or with norm "layer_norm_std" gamma (x - mean) / (std + eps) + beta,
                       std unbiased (divide by D - 1); no beta when norm_bias is false;
                       with norm "rms_norm" x / sqrt(mean(x^2) + eps) * gamma (no mean, no beta)
    activation         ReLU(x) = max(x, 0),  GELU(x) = x/2 * (1 + erf(x / sqrt(2))),
                       gelu_tanh(x) = x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
                       SiLU(x) = x / (1 + exp(-x))
    feed_forward       FFN(x) = W2 act(W1 x + b1) + b2, or with activation "swiglu"
                       FFN(x) = W2 (SiLU(W1 x + b1) * (W3 x + b3)) + b2
    softmax            softmax over the key axis; -inf gets weight 0, a row that is
                       all -inf (a query that may see no key) gets all zeros
    attention          A = softmax(Q K^T / sqrt(dk) + M), O = A V, per head
                       (M = 0 where the query may see the key, -inf where not;
                       with mask_value m, masked scores are replaced by m)
    alibi_bias         ALiBi: -slope_h * |i - j| added to head h's scores
    relative_bucket, relative_bias
                       T5: table[bucket(j - i), h] added to head h's scores; the bucket
                       is d = |j - i| (bidirectional, n = buckets/2 per sign) or
                       max(i - j, 0) (causal, n = buckets), exact below n/2, then
                       n/2 + floor(log(d / (n/2)) / log(max_distance / (n/2)) * n/2), at most n - 1
    rotate             rotary: pair i of each head of q and k at position pos turned
                       by angle = pos * theta^(-2i/Dh): (a, b) -> (a cos - b sin, a sin + b cos)
    multi_head_attention
                       Q = Xq Wq^T + bq, K = Xkv Wk^T + bk, V = Xkv Wv^T + bv
                       (Wq, Wk, Wv: in_proj_weight's blocks, or q/k/v_proj with qkv "separate"),
                       Q split into H heads of dk = D/H, K and V into n_kv_heads heads
                       (query head h reads K/V head h // (H / n_kv_heads)), with rotary
                       positions Q and K turned, attention per head,
                       MHA = Concat(O_1..O_H) Wo^T + bo
    encoder_layer      post-LN: x = LN1(x + MHA(x)); x = LN2(x + FFN(x))
                       pre-LN:  x = x + MHA(LN1(x)); x = x + FFN(LN2(x))
    decoder_layer      the same with cross-attention to the encoder's memory
                       between self-attention and the FFN (three norms)
    allowed_keys, allowed_self
                       the masks, as "query i may see key j" (True) before they
                       become M: causal j <= i, prefix-LM j < prefix or j <= i,
                       bidirectional all, with a sliding_window W also i - W < j,
                       and never a padded key
    spec_forward       the model: embeddings, the layers, the final norm(s), the
                       logits, and the per-head attention weights of every layer

Padded queries get exactly 0 (attention rows and logits), as tinyformer gives
them. Weights are the checkpoint's tensors by their FORMAT.md names
(e.g. "transformer.layers.0.self_attn.in_proj_weight"), converted to float64.
"""

import math

import numpy as np

import q8_0

# ----------------------------------------------------------------------------
# Embeddings and positions
# ----------------------------------------------------------------------------


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


def embed(cfg, w, table, ids):
    """X = E[ids] * sqrt(D) (if embed_scale) + P[0..T-1]; ids [B, T] -> [B, T, D]."""
    d, t = cfg["d_model"], ids.shape[1]
    x = w[table][ids] * (math.sqrt(d) if cfg["embed_scale"] else 1.0)
    if cfg["pos_encoding"] == "learned":
        x = x + w["pos_embed.weight"][:t]
    elif cfg["pos_encoding"] == "sinusoidal":
        x = x + sinusoidal_table(t, d)
    return x


# ----------------------------------------------------------------------------
# The building blocks
# ----------------------------------------------------------------------------


def product(w, name, x, rows=slice(None)):
    """x W^T for W = w[name][rows]. A Q8_0 weight (w holds name.scale; w[name] is
    then the int8 values q, as float64) computes as the engine and runq.c do:
    each row of x, rounded to float32, is quantized by the weights' rule in
    groups of G (the same G) and the product is sum_g sx_g sw_g (sum qx qw),
    here (qx sx) (qw sw)^T in float64."""
    weight = w[name][rows]
    if name + q8_0.SCALE_SUFFIX not in w:
        return x @ weight.T
    scales = w[name + q8_0.SCALE_SUFFIX][rows]
    group = weight.shape[1] // scales.shape[1]
    flat = x.reshape(-1, x.shape[-1]).astype(np.float32)
    qx, sx = q8_0.quantize_rows(flat, group)
    xs = (qx.reshape(len(flat), -1, group) * sx.astype(np.float64)[:, :, None]).reshape(flat.shape)
    ws = (weight.reshape(len(weight), -1, group) * scales[:, :, None]).reshape(weight.shape)
    return (xs @ ws.T).reshape(*x.shape[:-1], len(weight))


def linear(w, p, x):
    """y = x W^T + b, with W = w[p.weight] [out, in] and b = w[p.bias] [out] (none if absent)."""
    y = product(w, p + ".weight", x)
    return y + w[p + ".bias"] if p + ".bias" in w else y


def layer_norm(cfg, w, p, x):
    """Over the last axis, with eps = layer_norm_eps, by the config's norm:
    layer_norm:     (x - mean) / sqrt(var + eps) * gamma + beta (biased variance, divide by D)
    layer_norm_std: gamma * (x - mean) / (std + eps) + beta (unbiased std, divide by D - 1)
    rms_norm:       x / sqrt(mean(x^2) + eps) * gamma (no mean subtracted, never a beta)
    beta is absent (0) when the file has no p.bias (norm_bias false)."""
    eps = cfg.get("layer_norm_eps", 1e-5)
    if cfg.get("norm", "layer_norm") == "rms_norm":
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w[p + ".weight"]
    mu = x.mean(-1, keepdims=True)
    if cfg.get("norm", "layer_norm") == "layer_norm_std":
        std = np.sqrt(((x - mu) ** 2).sum(-1, keepdims=True) / (x.shape[-1] - 1))
        y = w[p + ".weight"] * (x - mu) / (std + eps)
    else:
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        y = (x - mu) / np.sqrt(var + eps) * w[p + ".weight"]
    return y + w[p + ".bias"] if p + ".bias" in w else y


_erf = np.vectorize(math.erf, otypes=[np.float64])


def activation(x, kind):
    """ReLU(x) = max(x, 0); GELU(x) = x/2 * (1 + erf(x / sqrt(2))) (exact);
    gelu_tanh(x) = x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)));
    SiLU(x) = x * sigmoid(x) = x / (1 + exp(-x))."""
    if kind == "relu":
        return np.maximum(x, 0)
    if kind == "silu":
        return x / (1 + np.exp(-x))
    if kind == "gelu_tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def head(cfg, w, p, embedding, x):
    """logits = x W^T + b with W = w[p.weight], or with tie_embeddings the token
    embedding w[embedding] [V, D] (the file has no p.weight)."""
    y = x @ w[embedding].T if cfg.get("tie_embeddings", False) else product(w, p + ".weight", x)
    return y + w[p + ".bias"] if p + ".bias" in w else y


def feed_forward(cfg, w, p, x):
    """FFN(x) = linear2(act(linear1(x))): D -> dim_feedforward -> D; with swiglu
    linear2(SiLU(linear1(x)) * linear3(x)), linear1 and linear3 both D -> dim_feedforward."""
    if cfg["activation"] == "swiglu":
        hidden = activation(linear(w, p + ".linear1", x), "silu") * linear(w, p + ".linear3", x)
    else:
        hidden = activation(linear(w, p + ".linear1", x), cfg["activation"])
    return linear(w, p + ".linear2", hidden)


# ----------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------


def softmax(scores):
    """softmax over the last (key) axis. A -inf score gets weight exactly 0; a
    row that is all -inf (a query that may see no key) gets all zeros, FORMAT.md's
    definition, where the textbook formula would give 0/0."""
    row_max = scores.max(-1, keepdims=True)
    row_max = np.where(np.isneginf(row_max), 0.0, row_max)   # all -inf: exp(-inf - 0) = 0
    e = np.exp(scores - row_max)
    total = e.sum(-1, keepdims=True)
    return e / np.where(total == 0, 1, total)


def alibi_slopes(heads):
    """ALiBi's head slopes (Press et al.), a geometric sequence: for n a power of
    two, start = 2^(-8/n) and slope_h = start^(h+1); for other H, the n =
    2^floor(log2 H) slopes of n followed by every other slope of 2n (from the
    first), H - n of them. Python floats (float64)."""
    def geometric(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (h + 1) for h in range(n)]
    n = 2 ** int(math.floor(math.log2(heads)))
    return geometric(n) + geometric(2 * n)[0::2][:heads - n]


def alibi_bias(heads, length):
    """[H, T, T]: -slope_h * |i - j| for query i, key j at positions 0..T-1."""
    distance = np.abs(np.arange(length)[:, None] - np.arange(length)[None, :]).astype(np.float64)
    return -np.array(alibi_slopes(heads))[:, None, None] * distance[None]


def relative_bucket(relative, bidirectional, buckets, max_distance):
    """T5's bucket of each relative position j - i (an int array), in float64."""
    n = buckets // 2 if bidirectional else buckets
    exact = n // 2
    later = np.where(relative > 0, n, 0) if bidirectional else 0
    d = np.abs(relative) if bidirectional else np.maximum(-relative, 0)
    with np.errstate(divide="ignore", invalid="ignore"):       # d = 0 is exact, never the log's
        far = exact + np.floor(np.log(np.maximum(d, 1) / exact) / math.log(max_distance / exact) * (n - exact))
    return later + np.where(d < exact, d, np.minimum(far, n - 1).astype(np.int64))


def relative_bias(table, length, bidirectional, max_distance):
    """[H, T, T]: table[bucket(j - i), h] for query i, key j at positions 0..T-1."""
    relative = np.arange(length)[None, :] - np.arange(length)[:, None]
    return table[relative_bucket(relative, bidirectional, table.shape[0], max_distance)].transpose(2, 0, 1)


def attention(q, k, v, allowed, qpad, mask_value=None, bias=None):
    """A = softmax(Q K^T / sqrt(dk) + M), O = A V for every batch row and head.
    q [B, H, L, dk], k and v [B, H, S, dk]; allowed [B, L, S] True = the query
    may see the key (M = 0), False = M = -inf; qpad [B, L] True = padded query,
    whose row of A is set to 0. With mask_value m, a masked score is replaced by
    m instead (masked_fill): a query that sees no key gets uniform weights.
    bias: None, or [H, L, S] added to the scores (ALiBi) before the mask.
    Returns (O [B, H, L, dk], A [B, H, L, S])."""
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    if bias is not None:
        scores = scores + bias[None]
    if mask_value is None:
        scores = scores + np.where(allowed[:, None], 0.0, -np.inf)  # [B, 1, L, S], the same for every head
    else:
        scores = np.where(allowed[:, None], scores, float(np.float32(mask_value)))
    a = softmax(scores)
    a = np.where(qpad[:, None, :, None], 0.0, a)
    return a @ v, a


def rotate(x, theta, pairs):
    """Rotary positions: x [B, heads, T, Dh] with each head's pairs turned by
    their token's position pos = 0..T-1. Pair i (dims 2i, 2i+1 for pairs
    "adjacent"; i, i + Dh/2 for "half") at angle = pos * theta^(-2i/Dh)
    becomes (a cos(angle) - b sin(angle), a sin(angle) + b cos(angle))."""
    dh, t = x.shape[-1], x.shape[-2]
    angle = np.arange(t)[:, None] * theta ** (-np.arange(0, dh, 2) / dh)      # [T, Dh/2]
    first, second = (slice(0, None, 2), slice(1, None, 2)) if pairs == "adjacent" else \
        (slice(0, dh // 2), slice(dh // 2, None))
    a, b = x[..., first], x[..., second]
    out = np.empty_like(x)
    out[..., first] = a * np.cos(angle) - b * np.sin(angle)
    out[..., second] = a * np.sin(angle) + b * np.cos(angle)
    return out


def multi_head_attention(cfg, w, p, xq, xkv, allowed, qpad):
    """MHA(Xq, Xkv) = Concat(head_1..head_H) Wo^T + bo, head_h = attention(Q_h, K_h, V_h).
    Wq [D, D], Wk and Wv [Hkv*dk, D] are the row blocks of in_proj_weight (PyTorch's
    layout; [3D, D] when Hkv = H), or q/k/v_proj. Q is split into H heads of dk = D/H,
    K and V into Hkv = n_kv_heads heads (default H); query head h reads K/V head
    h // (H / Hkv) (grouped-query attention). With pos_encoding "rotary", Q and K are
    turned by position after the projection (rotate).
    Returns (output [B, L, D], per-head weights [B, H, L, S])."""
    d, h = cfg["d_model"], cfg["nhead"]
    hkv = cfg.get("n_kv_heads", h)
    dk = d // h
    mask_value = cfg.get("mask_value")
    if mask_value is None and (~allowed.any(-1) & ~qpad).any():
        raise RuntimeError(f"{p}: a non-padded query sees no key")
    if cfg.get("qkv", "fused") == "separate":
        q, k, v = (linear(w, p + part, x) for part, x in ((".q_proj", xq), (".k_proj", xkv), (".v_proj", xkv)))
    else:
        bi = w.get(p + ".in_proj_bias", np.zeros(w[p + ".in_proj_weight"].shape[0]))
        rows = [slice(0, d), slice(d, d + hkv * dk), slice(d + hkv * dk, d + 2 * hkv * dk)]
        q, k, v = (product(w, p + ".in_proj_weight", x, r) + bi[r] for r, x in zip(rows, (xq, xkv, xkv)))
    b, l, s = q.shape[0], q.shape[1], k.shape[1]
    q = q.reshape(b, l, h, dk).transpose(0, 2, 1, 3)            # [B, H, L, dk]
    k = k.reshape(b, s, hkv, dk).transpose(0, 2, 1, 3)          # [B, Hkv, S, dk]
    v = v.reshape(b, s, hkv, dk).transpose(0, 2, 1, 3)
    # Rotary and ALiBi: self-attention of a single stack only (positions 0..T-1 for queries and keys).
    if cfg.get("pos_encoding") == "rotary":
        theta, pairs = cfg.get("rope_theta", 10000.0), cfg.get("rope_pairs", "adjacent")
        q, k = rotate(q, theta, pairs), rotate(k, theta, pairs)
    k, v = np.repeat(k, h // hkv, axis=1), np.repeat(v, h // hkv, axis=1)   # [B, H, S, dk]
    bias = alibi_bias(h, l) if cfg.get("pos_encoding") == "alibi" else None
    if cfg.get("pos_encoding") == "relative_bias":      # the stack's one table, in its first layer
        bias = relative_bias(w["transformer.layers.0.self_attn.relative_attention_bias.weight"], l,
                             cfg["attention"] != "causal", cfg.get("relative_max_distance", 128))
    o, weights = attention(q, k, v, allowed, qpad, mask_value, bias)
    o = o.transpose(0, 2, 1, 3).reshape(b, l, d)                # Concat(heads)
    return linear(w, p + ".out_proj", o), weights


# ----------------------------------------------------------------------------
# Layers: post-LN (norm_first false) and pre-LN (norm_first true)
# ----------------------------------------------------------------------------


def encoder_layer(cfg, w, p, x, allowed, pad):
    """One nn.TransformerEncoderLayer (also each layer of decoder_only and
    encoder_only models, whose mask decides causal / prefix-LM / bidirectional).
    Returns (x, self-attention weights)."""
    if cfg["norm_first"]:
        y = layer_norm(cfg, w, p + ".norm1", x)
        a, wt = multi_head_attention(cfg, w, p + ".self_attn", y, y, allowed, pad)
        x = x + a
        x = x + feed_forward(cfg, w, p, layer_norm(cfg, w, p + ".norm2", x))
    else:
        a, wt = multi_head_attention(cfg, w, p + ".self_attn", x, x, allowed, pad)
        x = layer_norm(cfg, w, p + ".norm1", x + a)
        x = layer_norm(cfg, w, p + ".norm2", x + feed_forward(cfg, w, p, x))
    return x, wt


def decoder_layer(cfg, w, p, x, mem, self_allowed, cross_allowed, pad):
    """One nn.TransformerDecoderLayer: causal self-attention, cross-attention
    (queries from x, keys and values from the encoder's memory), FFN.
    Returns (x, self-attention weights, cross-attention weights)."""
    if cfg["norm_first"]:
        y = layer_norm(cfg, w, p + ".norm1", x)
        a, ws = multi_head_attention(cfg, w, p + ".self_attn", y, y, self_allowed, pad)
        x = x + a
        a, wc = multi_head_attention(cfg, w, p + ".multihead_attn", layer_norm(cfg, w, p + ".norm2", x), mem,
                                     cross_allowed, pad)
        x = x + a
        x = x + feed_forward(cfg, w, p, layer_norm(cfg, w, p + ".norm3", x))
    else:
        a, ws = multi_head_attention(cfg, w, p + ".self_attn", x, x, self_allowed, pad)
        x = layer_norm(cfg, w, p + ".norm1", x + a)
        a, wc = multi_head_attention(cfg, w, p + ".multihead_attn", x, mem, cross_allowed, pad)
        x = layer_norm(cfg, w, p + ".norm2", x + a)
        x = layer_norm(cfg, w, p + ".norm3", x + feed_forward(cfg, w, p, x))
    return x, ws, wc


# ----------------------------------------------------------------------------
# Masks, as [B, L, S] "query may see key" (True = M is 0, False = M is -inf)
# ----------------------------------------------------------------------------


def allowed_keys(kpad, length):
    """Each of `length` queries may see every key that is not padding (kpad [B, S]):
    the encoder's self-attention and the decoder's cross-attention."""
    b, s = kpad.shape
    return np.broadcast_to(~kpad[:, None, :], (b, length, s))


def allowed_self(attention_kind, pad, prefix=None, window=None):
    """Self-attention of query i to key j: causal j <= i (the decoder of
    encoder_decoder, decoder_only), prefix_lm j < prefix_len[b] or j <= i,
    bidirectional (encoder_only) every key; never a padded key (pad [B, T])."""
    b, t = pad.shape
    i, j = np.arange(t)[:, None], np.arange(t)[None, :]
    if attention_kind == "causal":
        allowed = np.broadcast_to((j <= i)[None], (b, t, t))
    elif attention_kind == "prefix_lm":
        allowed = (j[None] < prefix[:, None, None]) | (j <= i)[None]
    else:
        allowed = np.ones((b, t, t), bool)
    if window is not None:                   # sliding_window (causal): also i - W < j
        allowed = allowed & (j > i - window)[None]
    return allowed & ~pad[:, None, :]


# ----------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------


def spec_forward(cfg, w, inputs):
    """Outputs of `forward --attention` as FORMAT.md defines them, in float64,
    from the checkpoint tensors `w` and input arrays (FORMAT.md section 2 names).
    Padded queries get exactly 0 (attention rows and logits), as tinyformer
    gives them. Returns (outputs, {output name: [B, L] True = padded query})."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    out = {}
    if cfg["arch"] == "encoder_decoder":
        if cfg.get("pos_encoding") in ("rotary", "alibi", "relative_bias"):   # as the engine's config check refuses it
            raise ValueError(f'pos_encoding "{cfg["pos_encoding"]}" is for decoder_only and encoder_only models; '
                             'this config is encoder_decoder')
        src, tgt = inputs["src_ids"].astype(np.int64), inputs["tgt_ids"].astype(np.int64)
        b, s, t = src.shape[0], src.shape[1], tgt.shape[1]
        spad = inputs.get("src_key_padding_mask", np.zeros((b, s), bool)).astype(bool)
        tpad = inputs.get("tgt_key_padding_mask", np.zeros((b, t), bool)).astype(bool)
        enc_allowed = allowed_keys(spad, s)
        dec_allowed = allowed_self("causal", tpad)
        cross_allowed = allowed_keys(spad, t)
        # the encoder, then its final norm: the memory
        x = embed(cfg, w, "src_embed.weight", src)
        for i in range(cfg["num_encoder_layers"]):
            x, out[f"encoder.{i}.self_attn.weights"] = encoder_layer(
                cfg, w, f"transformer.encoder.layers.{i}", x, enc_allowed, spad)
        mem = layer_norm(cfg, w, "transformer.encoder.norm", x)
        # A padded source position is a padded query: its memory row is exactly 0, as
        # tinyformer's. Only a mask_value model over an all-padding source row reads it.
        mem = np.where(spad[:, :, None], 0.0, mem)
        # the decoder, its final norm, the generator
        y = embed(cfg, w, "tgt_embed.weight", tgt)
        for i in range(cfg["num_decoder_layers"]):
            y, out[f"decoder.{i}.self_attn.weights"], out[f"decoder.{i}.cross_attn.weights"] = decoder_layer(
                cfg, w, f"transformer.decoder.layers.{i}", y, mem, dec_allowed, cross_allowed, tpad)
        y = layer_norm(cfg, w, "transformer.decoder.norm", y)
        logits = head(cfg, w, "generator", "tgt_embed.weight", y)
        qpad = tpad
        qpads = {k: (spad if k.startswith("encoder.") else tpad) for k in out}
    else:
        ids = inputs["ids"].astype(np.int64)
        b, t = ids.shape
        pad = inputs.get("key_padding_mask", np.zeros((b, t), bool)).astype(bool)
        prefix = inputs["prefix_len"].astype(np.int64) if cfg["attention"] == "prefix_lm" else None
        allowed = allowed_self(cfg["attention"], pad, prefix, cfg.get("sliding_window"))
        x = embed(cfg, w, "embed.weight", ids)
        for n in range(cfg["num_layers"]):
            x, out[f"layers.{n}.self_attn.weights"] = encoder_layer(cfg, w, f"transformer.layers.{n}", x, allowed, pad)
        if cfg["final_norm"]:
            x = layer_norm(cfg, w, "transformer.norm", x)
        logits = head(cfg, w, "lm_head", "embed.weight", x)
        qpad = pad
        qpads = {k: pad for k in out}
    out["logits"] = np.where(qpad[:, :, None], 0.0, logits)
    qpads["logits"] = qpad
    return out, qpads
