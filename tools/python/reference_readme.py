"""The writer of data/reference/README.md, from the case table
(tools/python/reference_cases.py) and what tools/python/make_reference.py measured: the
fully masked query rows it zeroed (`infos`) and the float64 model's worst
error / tolerance per case (`summaries`). Called by tools/python/make_reference.py
after a full run; the text is byte for byte the same run after run.
"""

import safe_write
from reference_cases import CASES, FORMAT_TAG


def _pads_text(pads):
    parts = []
    for left, right in pads:
        parts.append("-" if not (left or right) else "+".join(
            ([f"L{left}"] if left else []) + ([f"R{right}"] if right else [])))
    return ",".join(parts)


def case_row(case):
    c = case["config"]
    if c["arch"] == "encoder_decoder":
        arch = "encoder_decoder"
        layers = f"{c['num_encoder_layers']}+{c['num_decoder_layers']}"
        shape = f"B={len(case['src_pad'])} S={case['src_len']} T={case['tgt_len']}"
        pad = f"src {_pads_text(case['src_pad'])}; tgt {_pads_text(case['tgt_pad'])}"
        vocab = f"{c['src_vocab_size']}/{c['tgt_vocab_size']}"
        fnorm = "yes"
    else:
        arch = f"{c['arch']} ({c['attention']})"
        layers = str(c["num_layers"])
        shape = f"B={len(case['pad'])} T={case['length']}"
        pad = _pads_text(case["pad"])
        if case["prefix_len"] is not None:
            pad += f"; prefix_len {case['prefix_len']}"
        vocab = str(c["vocab_size"])
        fnorm = "yes" if c["final_norm"] else "no"
    cells = [f"`{case['name']}`", arch, "pre" if c["norm_first"] else "post", c.get("norm", "layer_norm"),
             c["activation"], c["pos_encoding"],
             "yes" if c["embed_scale"] else "no", fnorm, str(c["d_model"]), str(c["nhead"]),
             str(c["dim_feedforward"]), layers, vocab, f"{c['layer_norm_eps']:g}", shape, pad, case["storage"]]
    return "| " + " | ".join(cells) + " |"


def coverage_lines():
    axes = {
        "arch encoder_decoder": lambda c, k: c["arch"] == "encoder_decoder",
        "arch decoder_only": lambda c, k: c["arch"] == "decoder_only",
        "arch encoder_only": lambda c, k: c["arch"] == "encoder_only",
        "post-LN (norm_first false)": lambda c, k: not c["norm_first"],
        "pre-LN (norm_first true)": lambda c, k: c["norm_first"],
        "relu": lambda c, k: c["activation"] == "relu",
        "gelu": lambda c, k: c["activation"] == "gelu",
        "silu": lambda c, k: c["activation"] == "silu",
        "swiglu (linear3)": lambda c, k: c["activation"] == "swiglu",
        "norm layer_norm": lambda c, k: c.get("norm", "layer_norm") == "layer_norm",
        "norm rms_norm (no norm bias)": lambda c, k: c.get("norm") == "rms_norm",
        "pos sinusoidal": lambda c, k: c["pos_encoding"] == "sinusoidal",
        "pos learned": lambda c, k: c["pos_encoding"] == "learned",
        "pos none": lambda c, k: c["pos_encoding"] == "none",
        "pos alibi": lambda c, k: c["pos_encoding"] == "alibi",
        "attention causal": lambda c, k: c.get("attention") == "causal",
        "attention prefix_lm": lambda c, k: c.get("attention") == "prefix_lm",
        "attention bidirectional": lambda c, k: c.get("attention") == "bidirectional",
        "no padding": lambda c, k: not _has_padding(k),
        "right padding": lambda c, k: any(p[1] for p in _all_pads(k)),
        "left padding (fully masked query rows)": lambda c, k: any(p[0] for p in _all_pads(k)),
        "single head": lambda c, k: c["nhead"] == 1,
        "many heads (>= 4)": lambda c, k: c["nhead"] >= 4,
        "embed_scale true / false": None,
        "final_norm false (single-stack)": lambda c, k: c.get("final_norm") is False,
        "layer_norm_eps != 1e-5": lambda c, k: c["layer_norm_eps"] != 1e-5,
        "d_model 256, T about 100": lambda c, k: c["d_model"] == 256,
        "F16 storage": lambda c, k: k["storage"] == "F16",
        "BF16 storage": lambda c, k: k["storage"] == "BF16",
        "vocab in metadata": lambda c, k: k["vocab"] is not None,
    }
    lines = []
    for axis, pred in axes.items():
        if pred is None:
            on = [k["name"] for k in CASES if k["config"]["embed_scale"]]
            off = [k["name"] for k in CASES if not k["config"]["embed_scale"]]
            lines.append(f"| embed_scale true | {', '.join(f'`{n}`' for n in on)} |")
            lines.append(f"| embed_scale false | {', '.join(f'`{n}`' for n in off)} |")
            continue
        names = [k["name"] for k in CASES if pred(k["config"], k)]
        assert names, f"no case covers {axis}"
        lines.append(f"| {axis} | {', '.join(f'`{n}`' for n in names)} |")
    return lines


def _all_pads(case):
    return case["pad"] if "pad" in case else case["src_pad"] + case["tgt_pad"]


def _has_padding(case):
    return any(l or r for l, r in _all_pads(case))


def write_readme(out_dir, infos, summaries, *, torch_version, spec_max_ratio):
    """Write out_dir/README.md. torch_version: the PyTorch that made the files;
    spec_max_ratio: the float64 model's bound (error / tolerance) in the self-check."""
    rows = [case_row(c) for c in CASES]
    precision = [f"| `{c['name']}` | {summaries[c['name']]['logits_absmax']:.3g} | "
                 f"{summaries[c['name']]['logits_ratio']:.2g} | {summaries[c['name']]['attention_ratio']:.2g} |"
                 for c in CASES]
    masked = []
    for c in CASES:
        info = infos[c["name"]]
        if info["fully_masked"]:
            rows_txt = "; ".join(f"`{k}`: (b, query) {', '.join(str(r) for r in v)}"
                                 for k, v in info["fully_masked"].items())
            masked.append(f"  - `{c['name']}`: {rows_txt}. Stock PyTorch (no zeroing) gives NaN logits at "
                          f"{info['stock_nan_nonpad_positions']} non-padding positions of this batch.")
    text = f"""# PyTorch reference files

Generated by `tools/python/make_reference.py` — do not edit by hand. Regenerate (from
the repository root, with Debian's `python3-torch`, PyTorch {torch_version}) with

    /usr/bin/python3 tools/python/make_reference.py

which rewrites every file here, this README included, byte for byte the same
(runs are deterministic: seeded weights and inputs, one thread). `--list`
lists the cases, `--case NAME` makes one, `--out DIR` writes elsewhere,
`--check` only re-verifies the files in place, `--readme` re-verifies them and
rewrites this README from them. The RMSNorm / SiLU / SwiGLU cases (issue #23)
were added, leaving the older files as they were, with

    /usr/bin/python3 tools/python/make_reference.py --case do_pre_rms_swiglu_pad --case do_post_rms_silu_learned
    /usr/bin/python3 tools/python/make_reference.py --readme

(a full run on another machine may differ from the older files in the last bits
of some expected numbers, far inside the tolerance; the checks above hold either way).

The `*_rotary_*` cases (rotary positions and grouped-query attention, which no
stock PyTorch module has) are not made here but by
`tools/python/make_rotary_reference.py`, from a plain-torch module of its own
written from FORMAT.md's formulas; `/usr/bin/python3 tools/python/make_rotary_reference.py`
rewrites only their files (deterministic too). The `*_relbias_*` and `*_window_*`
cases (T5's relative position bias, sliding-window attention) are made by
`/usr/bin/python3 tools/python/make_position_reference.py`, from this folder's
reference modules (tools/python/torch_modules.py, the bias and the window as
PyTorch's float attn_mask), checked against the float64 NumPy model; it rewrites only
their files, and `relative_buckets.json`, T5's bucket of every distance in 36 settings
by tools/python/position_schemes.py (float32, as PyTorch's T5), which
tests/test_relative_bias.cpp holds the engine's buckets to. tests/test_parity.cpp
compares every case in this folder alike.

## Files (three per case, all safetensors, see docs/FORMAT.md)

- `CASE.model.safetensors` — the checkpoint, exactly FORMAT.md section 1: the
  `state_dict()` of the reference module (stock `nn.Transformer(batch_first=True)`
  or `nn.TransformerEncoder` of `nn.TransformerEncoderLayer(batch_first=True)`;
  with `"norm": "rms_norm"` its norms are `torch_modules.RmsNorm`, float32
  `x * rsqrt(mean(x*x) + eps) * weight`, with `silu` its activation `F.silu`, with
  `swiglu` the layer is `torch_modules.GatedEncoderLayer`, the stock layer whose
  feed-forward step is `linear2(silu(linear1(x)) * linear3(x))`;
  attributes `src_embed`/`tgt_embed`/`pos_embed`/`transformer`/`generator` or
  `embed`/`pos_embed`/`transformer`/`lm_head`), `__metadata__.config` holding every
  config key of the arch (incl. `"format": "{FORMAT_TAG}"`), and for one case a
  `vocab` list. Weights are seeded random values (projection weights with
  variance 1/fan_in, embeddings N(0,1), LayerNorm/RMSNorm weight 1+0.2·N(0,1), every
  bias 0.1·N(0,1); no two layers alike). Stored as F32, except two cases whose
  weights were rounded to F16 / BF16 *before* PyTorch ran, so the file holds
  exactly the values PyTorch used.
- `CASE.inputs.safetensors` — the `forward` inputs, FORMAT.md section 2: ids
  as I64 (`src_ids`, `tgt_ids` or `ids`), masks as BOOL with **true = padding**
  (`src_key_padding_mask`, `tgt_key_padding_mask` or `key_padding_mask`, present
  only when the case has padding), `prefix_len` I64 `[B]` for `prefix_lm`.
  Padded positions hold `pad_id` (0). `__metadata__.case` names the case.
- `CASE.expected.safetensors` — PyTorch's float32 outputs under the names
  `tinyformer forward --attention` writes: `logits` and per-head (never
  averaged) attention weights `encoder.{{i}}.self_attn.weights` `[B,H,S,S]`,
  `decoder.{{i}}.self_attn.weights` `[B,H,T,T]`, `decoder.{{i}}.cross_attn.weights`
  `[B,H,T,S]`, or `layers.{{i}}.self_attn.weights` `[B,H,T,T]`, all F32.

## How to compare (the C++ parity test)

Run `tinyformer forward CASE.model.safetensors --inputs CASE.inputs.safetensors
--output OUT --attention` and compare OUT with `CASE.expected.safetensors`:
same names and shapes, and |a-b| <= 1e-4 + 1e-4·|b| (b = expected) **at
non-padding positions only**: for `logits [B,T,V]` the positions (b,t) that
are not padding in the target/`key_padding_mask`; for attention `[B,H,L,S]` the
query rows (b,·,l,·) whose query l is not padding (the target mask for decoder
self and cross attention, the source mask for encoder attention). At padded
positions tinyformer gives exactly 0 (FORMAT.md), while the expected file holds
whatever finite value PyTorch computed there (its padded queries still attend
to the unpadded keys) — or 0 where PyTorch's value was not finite. Weights of
padded keys are exactly 0 in both.

How the expected numbers were made:
- PyTorch's plain path only: grad enabled, `enable_nested_tensor=False`, and the
  fused kernels (`torch._transformer_encoder_layer_fwd`,
  `torch._native_multi_head_attention`, `torch._nested_tensor_from_mask`) made to
  raise if reached.
- Per-head weights: each `MultiheadAttention.forward` is wrapped to force
  `need_weights=True, average_attn_weights=False` and keep the weights. The
  script checks that the logits with and without the wrapping are bitwise
  identical (NaN = NaN).
- Masks: `encoder_decoder` uses `tgt_mask` = bool causal `[T,T]`,
  `memory_key_padding_mask = src_key_padding_mask`; `decoder_only` causal a
  bool `[T,T]` mask, `prefix_lm` a bool `[B*H,T,T]` mask (row b*H+h: query i
  sees key j iff j < prefix_len[b] or j <= i); key padding on top.
- ALiBi (`pos_encoding: "alibi"`): that mask becomes a float32 `[B*H,T,T]`
  one, `-slope_h * |i - j|` where the key is allowed and `-inf` where it is
  blocked (slopes in float32 from `alibi_slopes` of numpy_reference.py), which
  PyTorch adds to `q k^T / sqrt(dk)`; no position table.
- Embedding: `E[ids] * sqrt(d_model)` (if `embed_scale`) `+ P[0..T-1]`; the
  sinusoidal table is computed in float64 and rounded to float32.
- **Queries with every key masked** (left padding under a causal mask):
  PyTorch's softmax gives NaN for such a row, and from the next layer on
  `weights @ V` spreads it (0·NaN) to every position of the sequence. The
  wrapper therefore sets the attention output row and weight row of such a
  query to 0 — FORMAT.md's definition — after checking the query is padding.
  This changes nothing else (bitwise, checked) and only happens in:
{chr(10).join(masked) if masked else "  - (no case)"}

Self-check (run after every generation, and by `--check`): each file is read
back with `tools/python/safetensors_io.py` and its tensor names, shapes and dtypes,
config keys and types are compared with tables written from FORMAT.md; then
the outputs are recomputed from the three files alone by an independent
float64 numpy model of FORMAT.md's forward semantics, which must agree with
the expected file to within {spec_max_ratio} of the tolerance at every
non-padding position. Worst error / tolerance per case:

| case | max abs logit | logits err/tol | attention err/tol |
|---|---|---|---|
{chr(10).join(precision)}

## Cases

Padding per batch row: `-` none, `R3` three padded positions at the end,
`L3` three at the start. Layers `e+d` = encoder + decoder layers.

| case | arch | LN | norm | act | pos | embed_scale | final norm | d_model | heads | ff | layers | vocab | eps | shape | padding | storage |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

What each case is for:

{chr(10).join(f"- `{c['name']}`: {c['covers']}." for c in CASES)}

## Coverage: which cases cover each value of each axis

| value | cases |
|---|---|
{chr(10).join(coverage_lines())}
"""
    safe_write.write_text(out_dir / "README.md", text)
