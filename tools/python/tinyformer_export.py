#!/usr/bin/python3
"""Export stock PyTorch Transformer modules as a tinyformer checkpoint
(docs/FORMAT.md) and check the file against PyTorch.

Three functions, one per architecture, take the modules themselves:

    export_encoder_decoder(path, transformer=..., src_embed=..., tgt_embed=..., generator=...,
                           max_len=..., [pos_encoding, pos_embed, embed_scale, pad_id, bos_id,
                           eos_id, vocab, src_vocab, tokenizer, train_max_len, dtype])
    export_decoder_only(path, layers=..., embed=..., lm_head=..., max_len=..., [attention, ...,
                        prompt_suffix])
    export_encoder_only(path, layers=..., embed=..., head=..., max_len=..., [...])
    export(model, path, ...)      the whole model: a family (tools/python/families: the Annotated
                                  Transformer, nanoGPT/minGPT, GPT-2) recognised from the module,
                                  or stock modules found by type; every parameter must find its place
    write_converted(path, converted)   a families.Converted (a family converter's output)
    check(path, reference=None, n_batches=3, seed=0) -> worst normalised error (<= 1 passes);
                                  raises CheckFailed (a CheckError) naming the first output that differs.
                                  reference = YOUR model (a family module, any module or callable
                                  ids -> logits / (src, tgt) -> logits); without it the result only
                                  says the file is consistent with the settings it was exported with
    user_model(family, FILE, "model.py", module_config) -> (model, notes)
                                  your model file's model (nanoGPT, minGPT, Annotated, llama2.c
                                  conventions) holding FILE's weights, for check(path, model)

`transformer` is a stock nn.Transformer, `layers` a stock nn.TransformerEncoder
(decoder-only models run it with a causal or prefix-LM mask), embeddings are
nn.Embedding, heads nn.Linear, `pos_embed` an nn.Embedding(max_len, d_model)
when pos_encoding="learned". Everything the modules know is read from them:
d_model, nhead, dim_feedforward, layer counts, activation, norm_first,
layer_norm_eps, whether final norms exist, vocabulary sizes. What the modules
do not know is asked: the positional encoding, embed_scale, max_len, special
ids, vocabularies and tokenizer. What FORMAT cannot represent is refused with
a ValueError naming the module attribute and its value (a custom activation,
tanh-GELU, missing biases, add_bias_kv, add_zero_attn, kdim/vdim != d_model,
per-layer differences, a final norm with another eps, an nn.Transformer
without encoder/decoder norms, ...).

Tied or shared weights (generator.weight is tgt_embed.weight, src_embed is
tgt_embed, ...): FORMAT has no aliases, so each name gets its own copy of the
values; the file is larger, the numbers are the same.

Storage: float32 modules are written as F32, .half() modules as F16, bfloat16
modules as BF16; dtype="F32"|"F16"|"BF16" forces one (values are rounded).

check(path) loads the file, makes `n_batches` random batches with right and
left padding (and different prefix lengths for prefix_lm), runs
`build/tinyformer forward MODEL --inputs IN --output OUT --attention` (the
binary is $TINYFORMER_BIN, default <repo>/build/tinyformer) and PyTorch's plain
(non-fused) path on the modules the file was exported from (a float32 copy
taken at export time, in this process: a file changed since is compared with
them, not with itself) or, when the file was not exported in this process, on
stock modules rebuilt from the file (tools/python/torch_modules.py).
It compares the logits and every per-head attention weight at non-padding
positions with FORMAT's tolerance |a-b| <= 1e-4 + 1e-4|b| (b = PyTorch), and
requires tinyformer's padded rows to be exactly 0. It returns the worst
|a-b| / (1e-4 + 1e-4|b|) and raises CheckError naming the first attention
(in forward order) whose weights diverge, e.g.
"decoder.1.cross_attn.weights diverges first: ...".

Importable from anywhere: sys.path.insert(0, "/path/to/checkout/tools/python"), then
import tinyformer_export (its own modules and build/tinyformer are found next
to this file, never through the working directory).

Command line (from any folder; Debian's python3-torch):

    /usr/bin/python3 tools/python/tinyformer_export.py --from annotated STATE.pt --n-head 8 --out M.safetensors
    /usr/bin/python3 tools/python/tinyformer_export.py --from nanogpt ckpt.pt --meta meta.pkl --out M.safetensors
    /usr/bin/python3 tools/python/tinyformer_export.py --check M.safetensors --against annotated STATE.pt --n-head 8
    /usr/bin/python3 tools/python/tinyformer_export.py --check M.safetensors --against annotated STATE.pt \
        --module my_model.py --module-config '{"h": 8}'      # YOUR make_model holding STATE.pt
    /usr/bin/python3 tools/python/tinyformer_export.py --check MODEL.safetensors
    /usr/bin/python3 tools/python/tinyformer_export.py --from-state-dict STATE.pt --arch encoder_decoder \\
        --nhead 8 --activation relu --norm-first false --max-len 128 --vocab vocab.json \\
        --pad-id 1 --bos-id 2 --eos-id 3 --out model.safetensors

--from-state-dict converts a saved state_dict of a module with FORMAT's
attribute names (src_embed, tgt_embed, pos_embed, transformer, generator /
embed, pos_embed, transformer, lm_head): it builds stock modules, loads the
state_dict strictly, exports them and checks the file (unless --no-check).
The file is read by the project's own reader (tools/python/torch_file.py,
load_state_dict_file; torch.load is never called): nothing in it can
run; a file that needs more than tensors is refused. Every file written
goes through tools/python/safe_write.py.
Standard library, torch and numpy only.
"""

import argparse
import copy
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pickle_reader  # noqa: E402  (message text for values read from a file)
import safe_write  # noqa: E402
import safetensors_io as st  # noqa: E402
import torch_file  # noqa: E402
import torch_modules as tm  # noqa: E402

# The file's rules and its writer (tools/python/tinyformer_writer.py, below the
# families and this module, which both write through it); check_vocabulary,
# check_merges and GPT2_BYTE_CHARACTERS stay part of this module's API.
from tinyformer_writer import (FLOAT32_MIN_NORMAL, FORMAT_TAG, GPT2_BYTE_CHARACTERS, STORAGE,  # noqa: E402,F401
                               TOKENIZERS, _REGISTRY, _check_engine_limits, _check_ids, _check_prompt_suffix,
                               _check_vocab, _common_metadata, _Desc, _refuse, _write, check_merges,
                               check_vocabulary, write_converted)

REPO = Path(__file__).resolve().parents[2]
ATOL = RTOL = 1e-4              # FORMAT.md: |a-b| <= 1e-4 + 1e-4*|b|
POS_ENCODINGS = ("sinusoidal", "learned", "none")
MAX_SINUSOIDAL_NUMBERS = 1 << 27  # tinyformer's limit on max_len * d_model

__all__ = ["export_encoder_decoder", "export_decoder_only", "export_encoder_only", "check", "CheckError",
           "load_state_dict_file", "write_converted", "CheckFailed", "export"]


class CheckError(RuntimeError):
    """check(): tinyformer and PyTorch disagree, or tinyformer refused the file."""


# ----------------------------------------------------------------------------
# Reading the modules
# ----------------------------------------------------------------------------


def _describe(obj):
    """A short, readable description of a module or callable for messages."""
    if isinstance(obj, nn.Module):
        return f"{type(obj).__name__}({obj.extra_repr()})"
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return f"<{name}>" if name else repr(obj)


def _require_module(obj, cls, path, check_forward=True):
    """obj must be an instance of the stock class cls, whose forward it does not
    replace (check_forward=False: nn.Transformer, whose own forward is not used)."""
    if not isinstance(obj, cls):
        _refuse(path, _Desc(_describe(obj) if obj is not None else "None"),
                f"expected a stock nn.{cls.__name__}")
    if check_forward and type(obj).forward is not cls.forward:
        _refuse(path, _Desc(type(obj).__name__),
                f"a subclass of nn.{cls.__name__} with its own forward cannot be represented "
                f"(FORMAT describes what the stock nn.{cls.__name__} computes)")


def _activation(act, path):
    """'relu' or 'gelu' for what a stock layer stores as its activation."""
    if act is F.relu or act is torch.relu or (isinstance(act, nn.ReLU) and type(act).forward is nn.ReLU.forward):
        return "relu"
    if act is F.gelu:
        return "gelu"
    if isinstance(act, nn.GELU) and type(act).forward is nn.GELU.forward:
        if act.approximate != "none":
            _refuse(path, _Desc(_describe(act)),
                    'FORMAT\'s "gelu" is the exact erf GELU; approximate="tanh" cannot be represented')
        return "gelu"
    _refuse(path, _Desc(_describe(act)),
            'a custom activation cannot be represented; FORMAT allows "relu" or "gelu" '
            '(F.relu, F.gelu, nn.ReLU(), nn.GELU(), or the strings "relu"/"gelu" given to the constructor)')


def _linear(lin, path, in_features, out_features=None):
    _require_module(lin, nn.Linear, path)
    if lin.bias is None:
        _refuse(f"{path}.bias", None, "FORMAT needs every bias (bias=False cannot be represented)")
    if lin.in_features != in_features:
        _refuse(f"{path}.in_features", lin.in_features, f"expected d_model = {in_features}")
    if out_features is not None and lin.out_features != out_features:
        _refuse(f"{path}.out_features", lin.out_features, f"expected {out_features}")
    return lin.out_features


def _layer_norm(norm, path, d_model):
    _require_module(norm, nn.LayerNorm, path)
    if not norm.elementwise_affine:
        _refuse(f"{path}.elementwise_affine", False, "FORMAT's LayerNorms have a weight and a bias")
    if norm.weight is None:
        _refuse(f"{path}.weight", None, "FORMAT's LayerNorms have a weight and a bias")
    if norm.bias is None:
        _refuse(f"{path}.bias", None, "FORMAT's LayerNorms have a weight and a bias")
    if tuple(norm.normalized_shape) != (d_model,):
        _refuse(f"{path}.normalized_shape", tuple(norm.normalized_shape), f"expected ({d_model},)")
    return float(norm.eps)


def _embedding(emb, path, d_model=None):
    _require_module(emb, nn.Embedding, path)
    if emb.max_norm is not None:
        _refuse(f"{path}.max_norm", emb.max_norm, "max_norm rescales rows during forward; FORMAT's lookup does not")
    if d_model is not None and emb.embedding_dim != d_model:
        _refuse(f"{path}.embedding_dim", emb.embedding_dim, f"expected d_model = {d_model}")
    return emb.num_embeddings


def _attention(mha, path, d_model):
    _require_module(mha, nn.MultiheadAttention, path)
    if mha.embed_dim != d_model:
        _refuse(f"{path}.embed_dim", mha.embed_dim, f"expected d_model = {d_model}")
    if mha.kdim != d_model:
        _refuse(f"{path}.kdim", mha.kdim, f"kdim must equal d_model = {d_model}")
    if mha.vdim != d_model:
        _refuse(f"{path}.vdim", mha.vdim, f"vdim must equal d_model = {d_model}")
    if not mha._qkv_same_embed_dim or mha.in_proj_weight is None:
        _refuse(f"{path}.in_proj_weight", None, "FORMAT stores q, k, v stacked in in_proj_weight")
    if mha.in_proj_bias is None:
        _refuse(f"{path}.in_proj_bias", None, "FORMAT needs the projection biases (bias=False cannot be represented)")
    if mha.out_proj.bias is None:
        _refuse(f"{path}.out_proj.bias", None, "FORMAT needs the projection biases (bias=False cannot be represented)")
    if mha.bias_k is not None or mha.bias_v is not None:
        _refuse(f"{path}.add_bias_kv", True, "extra key/value biases cannot be represented")
    if mha.add_zero_attn:
        _refuse(f"{path}.add_zero_attn", True, "an extra zero key/value cannot be represented")
    _linear(mha.out_proj, f"{path}.out_proj", d_model, d_model)
    return mha.num_heads


def _layer(layer, path, decoder):
    """The settings of one TransformerEncoderLayer / TransformerDecoderLayer, each with
    the attribute it was read from: {key: (value, attribute path)}."""
    _require_module(layer, nn.TransformerDecoderLayer if decoder else nn.TransformerEncoderLayer, path)
    d = layer.self_attn.embed_dim
    s = {"d_model": (d, f"{path}.self_attn.embed_dim")}
    s["nhead"] = (_attention(layer.self_attn, f"{path}.self_attn", d), f"{path}.self_attn.num_heads")
    s["batch_first"] = (bool(layer.self_attn.batch_first), f"{path}.self_attn.batch_first")
    if decoder:
        cross = _attention(layer.multihead_attn, f"{path}.multihead_attn", d)
        if cross != s["nhead"][0]:
            _refuse(f"{path}.multihead_attn.num_heads", cross,
                    f"differs from {path}.self_attn.num_heads = {s['nhead'][0]}; FORMAT has one nhead")
        if layer.multihead_attn.batch_first != layer.self_attn.batch_first:
            _refuse(f"{path}.multihead_attn.batch_first", layer.multihead_attn.batch_first,
                    f"differs from {path}.self_attn.batch_first")
    ff = _linear(layer.linear1, f"{path}.linear1", d)
    _linear(layer.linear2, f"{path}.linear2", ff, d)
    s["dim_feedforward"] = (ff, f"{path}.linear1.out_features")
    s["activation"] = (_activation(layer.activation, f"{path}.activation"), f"{path}.activation")
    s["norm_first"] = (bool(layer.norm_first), f"{path}.norm_first")
    norms = ["norm1", "norm2", "norm3"] if decoder else ["norm1", "norm2"]
    eps = [_layer_norm(getattr(layer, n), f"{path}.{n}", d) for n in norms]
    for n, e in zip(norms[1:], eps[1:]):
        if e != eps[0]:
            _refuse(f"{path}.{n}.eps", e, f"differs from {path}.norm1.eps = {eps[0]}; FORMAT has one layer_norm_eps")
    s["layer_norm_eps"] = (eps[0], f"{path}.norm1.eps")
    return s


def _same(settings, against):
    """Refuse the first setting of `settings` that differs from `against`."""
    for key, (value, path) in settings.items():
        want, want_path = against[key]
        if value != want:
            _refuse(path, value, f"differs from {want_path} = {want!r}; FORMAT has one {key} per model "
                                 f"(per-layer differences cannot be represented)")


def _stack(stack, path, decoder, need_norm):
    """(settings of the layers, number of layers, final norm eps or None) of a
    TransformerEncoder / TransformerDecoder."""
    _require_module(stack, nn.TransformerDecoder if decoder else nn.TransformerEncoder, path)
    if len(stack.layers) == 0:
        _refuse(f"{path}.layers", _Desc("ModuleList()"), "a stack needs at least one layer")
    settings = None
    for i, layer in enumerate(stack.layers):
        s = _layer(layer, f"{path}.layers.{i}", decoder)
        if settings is None:
            settings = s
        else:
            _same(s, settings)
    norm_eps = None
    if stack.norm is None:
        if need_norm:
            _refuse(f"{path}.norm", None, "FORMAT's encoder_decoder has transformer.encoder.norm and "
                                          "transformer.decoder.norm (nn.Transformer always makes them)")
    else:
        norm_eps = _layer_norm(stack.norm, f"{path}.norm", settings["d_model"][0])
        if norm_eps != settings["layer_norm_eps"][0]:
            _refuse(f"{path}.norm.eps", norm_eps, f"differs from {settings['layer_norm_eps'][1]} = "
                                                  f"{settings['layer_norm_eps'][0]}; FORMAT has one layer_norm_eps")
    return settings, len(stack.layers), norm_eps


def _check_positions(pos_encoding, pos_embed, max_len, d_model):
    if pos_encoding not in POS_ENCODINGS:
        _refuse("pos_encoding", pos_encoding, "expected one of " + ", ".join(POS_ENCODINGS))
    if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 1:
        _refuse("max_len", max_len, "expected a positive int")
    if pos_encoding == "learned":
        if pos_embed is None:
            _refuse("pos_embed", None, 'pos_encoding="learned" needs pos_embed, an nn.Embedding(max_len, d_model)')
        n = _embedding(pos_embed, "pos_embed", d_model)
        if n != max_len:
            _refuse("pos_embed.num_embeddings", n, f"must equal max_len = {max_len} (FORMAT: pos_embed.weight "
                                                    f"[max_len, d_model])")
    elif pos_embed is not None:
        _refuse("pos_embed", _Desc(_describe(pos_embed)),
                f'given with pos_encoding="{pos_encoding}"; only "learned" positions have a table')
    if pos_encoding == "sinusoidal" and max_len * d_model > MAX_SINUSOIDAL_NUMBERS:
        _refuse("max_len", max_len, f"a sinusoidal table of max_len x d_model = {max_len} x {d_model} is above "
                                    f"tinyformer's limit of 2^27 numbers")


def _layer_tensors(prefix, layer, decoder):
    out = {}
    attns = [("self_attn", layer.self_attn)] + ([("multihead_attn", layer.multihead_attn)] if decoder else [])
    for name, mha in attns:
        out[f"{prefix}.{name}.in_proj_weight"] = mha.in_proj_weight
        out[f"{prefix}.{name}.in_proj_bias"] = mha.in_proj_bias
        out[f"{prefix}.{name}.out_proj.weight"] = mha.out_proj.weight
        out[f"{prefix}.{name}.out_proj.bias"] = mha.out_proj.bias
    for name in ["linear1", "linear2"] + (["norm1", "norm2", "norm3"] if decoder else ["norm1", "norm2"]):
        out[f"{prefix}.{name}.weight"] = getattr(layer, name).weight
        out[f"{prefix}.{name}.bias"] = getattr(layer, name).bias
    return out


def _stack_tensors(prefix, stack, decoder):
    out = {}
    for i, layer in enumerate(stack.layers):
        out.update(_layer_tensors(f"{prefix}.layers.{i}", layer, decoder))
    if stack.norm is not None:
        out[f"{prefix}.norm.weight"] = stack.norm.weight
        out[f"{prefix}.norm.bias"] = stack.norm.bias
    return out


def _base_config(arch, settings, max_len, pos_encoding, embed_scale):
    if not isinstance(embed_scale, bool):
        _refuse("embed_scale", embed_scale, "expected True or False")
    eps = settings["layer_norm_eps"][0]
    if not FLOAT32_MIN_NORMAL <= eps < 1:
        _refuse(settings["layer_norm_eps"][1], eps, "tinyformer needs a positive normal float32 below 1")
    return {"format": FORMAT_TAG, "arch": arch, "d_model": settings["d_model"][0], "nhead": settings["nhead"][0],
            "dim_feedforward": settings["dim_feedforward"][0], "activation": settings["activation"][0],
            "norm_first": settings["norm_first"][0], "layer_norm_eps": eps, "max_len": max_len,
            "pos_encoding": pos_encoding, "embed_scale": embed_scale}


def export_encoder_decoder(path, *, transformer, src_embed, tgt_embed, generator,
                           pos_encoding="sinusoidal", pos_embed=None, embed_scale=True, max_len,
                           pad_id=None, bos_id=None, eos_id=None, vocab=None, src_vocab=None,
                           tokenizer="char", train_max_len=None, dtype=None):
    """Write an encoder_decoder checkpoint from a stock nn.Transformer, the source
    and target nn.Embedding, the generator nn.Linear (and pos_embed for learned
    positions). `vocab` is the target vocabulary (and the source one unless
    `src_vocab` is given). Returns the config written. Tied weights are written
    as copies, one per name. Raises ValueError naming the attribute that FORMAT
    cannot represent."""
    _require_module(transformer, nn.Transformer, "transformer", check_forward=False)
    enc, n_enc, _ = _stack(transformer.encoder, "transformer.encoder", decoder=False, need_norm=True)
    dec, n_dec, _ = _stack(transformer.decoder, "transformer.decoder", decoder=True, need_norm=True)
    try:
        _same(dec, enc)
    except ValueError as e:
        layer = transformer.decoder.layers[0]
        if "activation" in str(e) and isinstance(layer._modules.get("activation"), nn.Module):
            raise ValueError(f"{e}. Note: in this PyTorch, nn.Transformer(activation=<an nn.Module>) leaves its "
                             f"decoder layers computing {_activation(layer.activation, 'activation')!r} "
                             f"(copying a layer loses the module), so the model really mixes two activations; "
                             f'build it with activation="gelu" (a string) or F.gelu') from None
        raise
    d = enc["d_model"][0]
    if getattr(transformer, "d_model", d) != d:
        _refuse("transformer.d_model", transformer.d_model, f"differs from its layers' d_model = {d}")
    src_size = _embedding(src_embed, "src_embed", d)
    tgt_size = _embedding(tgt_embed, "tgt_embed", d)
    _linear(generator, "generator", d)
    if generator.out_features != tgt_size:
        _refuse("generator.out_features", generator.out_features,
                f"must equal tgt_embed.num_embeddings = {tgt_size} (FORMAT: one tgt_vocab_size)")
    _check_positions(pos_encoding, pos_embed, max_len, d)
    config = _base_config("encoder_decoder", enc, max_len, pos_encoding, embed_scale)
    config.update(num_encoder_layers=n_enc, num_decoder_layers=n_dec, src_vocab_size=src_size,
                  tgt_vocab_size=tgt_size)
    config.update(_check_ids({"pad_id": pad_id, "bos_id": bos_id, "eos_id": eos_id},
                             {"pad_id": [(src_size, "source vocabulary"), (tgt_size, "target vocabulary")],
                              "bos_id": [(tgt_size, "target vocabulary")],
                              "eos_id": [(tgt_size, "target vocabulary")]}))
    meta = _common_metadata(tokenizer, train_max_len)
    vocab = _check_vocab("vocab", vocab, tgt_size, "tgt_embed.num_embeddings", tokenizer)
    if src_vocab is not None and vocab is None:
        _refuse("vocab", None, "src_vocab is given, so vocab (the target vocabulary) is needed too")
    src_vocab = _check_vocab("src_vocab", src_vocab, src_size, "src_embed.num_embeddings", tokenizer)
    if vocab is not None and src_vocab is None and src_size != tgt_size:
        _refuse("len(vocab)", len(vocab), f"serves the source too (no src_vocab given) but "
                                          f"src_embed.num_embeddings = {src_size}; pass src_vocab")
    if vocab is not None:
        meta["vocab"] = json.dumps(vocab, ensure_ascii=False)
    if src_vocab is not None:
        meta["src_vocab"] = json.dumps(src_vocab, ensure_ascii=False)
    _check_engine_limits(config, meta, {"src_vocab_size": "src_embed.num_embeddings",
                                         "tgt_vocab_size": "tgt_embed.num_embeddings", "d_model": enc["d_model"][1],
                                         "nhead": enc["nhead"][1], "dim_feedforward": enc["dim_feedforward"][1],
                                         "num_encoder_layers": "len(transformer.encoder.layers)",
                                         "num_decoder_layers": "len(transformer.decoder.layers)"})
    named = {"src_embed.weight": src_embed.weight, "tgt_embed.weight": tgt_embed.weight}
    if pos_encoding == "learned":
        named["pos_embed.weight"] = pos_embed.weight
    named.update(_stack_tensors("transformer.encoder", transformer.encoder, decoder=False))
    named.update(_stack_tensors("transformer.decoder", transformer.decoder, decoder=True))
    named["generator.weight"] = generator.weight
    named["generator.bias"] = generator.bias
    parts = {"transformer": transformer, "src_embed": src_embed, "tgt_embed": tgt_embed, "generator": generator,
             "pos_embed": pos_embed}
    return _write(path, "encoder_decoder", config, named, parts, meta, dtype)


def _with_final_norm(layers, final_norm):
    """layers with `final_norm` (an nn.LayerNorm the model applies after the stack,
    kept as a separate attribute) as its .norm: a copy, the caller's modules are
    left as they are."""
    if final_norm is None:
        return layers
    _require_module(layers, nn.TransformerEncoder, "layers")
    if layers.norm is not None:
        _refuse("final_norm", _Desc(_describe(final_norm)), "given, but layers.norm exists already: a model has one "
                                                             "final norm")
    _require_module(final_norm, nn.LayerNorm, "final_norm")
    stack = copy.deepcopy(layers)
    stack.norm = final_norm
    return stack


def _export_single(path, arch, attention, layers, embed, head, head_name, pos_encoding, pos_embed, embed_scale,
                   max_len, ids, vocab, tokenizer, train_max_len, dtype, prompt_suffix=None, final_norm=None):
    layers = _with_final_norm(layers, final_norm)
    settings, n, norm_eps = _stack(layers, "layers", decoder=False, need_norm=False)
    d = settings["d_model"][0]
    size = _embedding(embed, "embed", d)
    _linear(head, head_name, d)
    if head.out_features != size:
        _refuse(f"{head_name}.out_features", head.out_features,
                f"must equal embed.num_embeddings = {size} (FORMAT: lm_head [vocab_size, d_model])")
    _check_positions(pos_encoding, pos_embed, max_len, d)
    config = _base_config(arch, settings, max_len, pos_encoding, embed_scale)
    config.update(num_layers=n, final_norm=norm_eps is not None, vocab_size=size, attention=attention)
    config.update(_check_ids(ids, {k: [(size, "vocabulary")] for k in ids}))
    meta = _common_metadata(tokenizer, train_max_len)
    vocab = _check_vocab("vocab", vocab, size, "embed.num_embeddings", tokenizer)
    if vocab is not None:
        meta["vocab"] = json.dumps(vocab, ensure_ascii=False)
    if prompt_suffix is not None:
        if not isinstance(prompt_suffix, str) or not prompt_suffix:
            _refuse("prompt_suffix", prompt_suffix, "expected a non-empty string")
        _check_prompt_suffix(prompt_suffix, vocab, tokenizer)
        meta["prompt_suffix"] = prompt_suffix
    _check_engine_limits(config, meta, {"vocab_size": "embed.num_embeddings", "d_model": settings["d_model"][1],
                                        "nhead": settings["nhead"][1],
                                        "dim_feedforward": settings["dim_feedforward"][1],
                                        "num_layers": "len(layers.layers)"})
    named = {"embed.weight": embed.weight}
    if pos_encoding == "learned":
        named["pos_embed.weight"] = pos_embed.weight
    named.update(_stack_tensors("transformer", layers, decoder=False))
    named["lm_head.weight"] = head.weight
    named["lm_head.bias"] = head.bias
    parts = {"layers": layers, "embed": embed, "head": head, "pos_embed": pos_embed}
    return _write(path, arch, config, named, parts, meta, dtype)


def export_decoder_only(path, *, layers, embed, lm_head, attention="causal",
                        pos_encoding="sinusoidal", pos_embed=None, embed_scale=True, max_len,
                        pad_id=None, bos_id=None, eos_id=None, vocab=None, tokenizer="char",
                        prompt_suffix=None, train_max_len=None, dtype=None, final_norm=None):
    """Write a decoder_only checkpoint: a stock nn.TransformerEncoder run with a
    causal or prefix-LM mask (attention="causal" | "prefix_lm"), the token
    nn.Embedding and the lm_head nn.Linear. transformer.norm.* is written iff
    layers.norm exists or final_norm (an nn.LayerNorm your model applies after
    the stack, kept as its own attribute) is given. A model with such a norm
    exported without it gives other numbers: export(model, path) refuses it by
    name, and check(path, model) catches the file. Returns the config written; tied weights (lm_head.weight
    is embed.weight) are written as copies. Raises ValueError naming the
    attribute that FORMAT cannot represent."""
    if attention not in ("causal", "prefix_lm"):
        _refuse("attention", attention, 'decoder_only attention is "causal" or "prefix_lm"')
    return _export_single(path, "decoder_only", attention, layers, embed, lm_head, "lm_head", pos_encoding, pos_embed,
                          embed_scale, max_len, {"pad_id": pad_id, "bos_id": bos_id, "eos_id": eos_id}, vocab,
                          tokenizer, train_max_len, dtype, prompt_suffix, final_norm)


def export_encoder_only(path, *, layers, embed, head, pos_encoding="sinusoidal", pos_embed=None,
                        embed_scale=True, max_len, pad_id=None, vocab=None, tokenizer="char",
                        train_max_len=None, dtype=None, final_norm=None):
    """Write an encoder_only (bidirectional) checkpoint: a stock
    nn.TransformerEncoder, the token nn.Embedding and `head`, an
    nn.Linear(d_model, vocab_size) written as lm_head (final_norm as in
    export_decoder_only). Returns the config written. Raises ValueError naming
    the attribute that FORMAT cannot represent."""
    return _export_single(path, "encoder_only", "bidirectional", layers, embed, head, "head", pos_encoding, pos_embed,
                          embed_scale, max_len, {"pad_id": pad_id}, vocab, tokenizer, train_max_len, dtype,
                          final_norm=final_norm)


# ----------------------------------------------------------------------------
# export(module): the whole model, recognised from its modules
# ----------------------------------------------------------------------------


def _family_of(module):
    """(family name, families module) whose recognise(module) is True, or (None, None)."""
    import importlib
    for name, modname in [("annotated", "families.annotated"), ("gpt", "families.gpt"),
                          ("hf-gpt2", "families.hf_gpt2"), ("llama2c", "families.llama")]:
        try:
            family = importlib.import_module(modname)
        except ImportError:
            continue
        recognise = getattr(family, "recognise", None)
        if recognise is not None and recognise(module):
            return name, family
    return None, None


def _outside(module, inside):
    """[(name, submodule)] of `module`'s submodules holding parameters of their own
    that are not in (or under) one of `inside`."""
    covered = set()
    for part in inside:
        if part is not None:
            covered.update(id(p) for p in part.parameters())
    out = []
    for name, sub in module.named_modules():
        own = [p for p in sub.parameters(recurse=False) if id(p) not in covered]
        if own:
            out.append((name or type(module).__name__, sub))
    return out


def _one(found, what, shown):
    if len(found) != 1:
        names = ", ".join(n for n, _ in found) or "none"
        raise ValueError(f"{shown}: expected exactly one {what} outside the stack, found {len(found)} ({names}); "
                         f"call export_encoder_decoder / export_decoder_only / export_encoder_only with the parts")
    return found[0]


def _embed_scale_of(module, kwargs, shown):
    """export()'s embed_scale: given, or recorded by the module; else ValueError."""
    if "embed_scale" in kwargs:
        return kwargs["embed_scale"]           # _base_config refuses what is not a bool
    recorded = getattr(module, "embed_scale", None)
    if isinstance(recorded, bool):
        return recorded
    cfg = getattr(module, "cfg", None)
    if isinstance(cfg, dict) and isinstance(cfg.get("embed_scale"), bool):
        return cfg["embed_scale"]
    raise ValueError(f"export: embed_scale is not given and {shown} does not record it: pass embed_scale=True if "
                     f"your forward multiplies the token embeddings by sqrt(d_model) before adding the positions "
                     f"(the Annotated Transformer, PyTorch's nn.Transformer tutorial), embed_scale=False if it uses "
                     f"them as they are (GPT-style models)")


def export(module, path, **kwargs):
    """Export a whole model, recognised from its modules:
      - a family module (families/annotated.py's tree, families/gpt.py's GPT, ...):
        its converter (kwargs: max_len, vocab, src_vocab, pad_id, bos_id, eos_id,
        tokenizer, train_max_len, dtype, ...);
      - a model of stock modules: exactly one nn.Transformer (encoder_decoder) or
        nn.TransformerEncoder (kwargs attention="causal" | "prefix_lm" |
        "bidirectional", default causal), nn.Embedding(s) and one nn.Linear head
        outside it, found by type (two embeddings of an nn.Transformer model are
        told apart by "src" / "tgt" in their names, a positional table by "pos").
        Every module holding parameters must be accounted for: one that is not
        (e.g. a final nn.LayerNorm kept as its own attribute) is refused by name
        — FORMAT cannot tell where it runs; pass final_norm=model.ln_f if it runs
        after the stack. kwargs are those of export_encoder_decoder /
        export_decoder_only / export_encoder_only (pos_encoding, embed_scale,
        max_len, ids, vocab, ...).
    embed_scale has no default here: stock modules do not say whether the
    model's forward multiplies the embeddings by sqrt(d_model), and the wrong
    guess gives other numbers. It is taken from embed_scale=, else from the
    module when it records it (a bool attribute `embed_scale`, or a `cfg`
    dict holding one, as torch_modules.py's modules do); a family knows its
    own (the Annotated Transformer scales, GPT-style models do not), and an
    embed_scale= that contradicts it is refused. Missing: ValueError saying
    what True and False mean.
    Returns the config written. Follow it with check(path, module)."""
    if not isinstance(module, nn.Module):
        _refuse("module", _Desc(_describe(module)), "expected an nn.Module (the whole model)")
    kwargs = dict(kwargs)
    name, family = _family_of(module)
    if family is not None:
        dtype = kwargs.pop("dtype", None)
        given = kwargs.pop("embed_scale", None)
        converted = family.from_module(module, **kwargs)
        if given is not None and given != converted.config["embed_scale"]:
            _refuse("embed_scale", given, f"a {name} model's forward "
                    f"{'scales' if converted.config['embed_scale'] else 'does not scale'} its embeddings by "
                    f"sqrt(d_model); leave embed_scale out for a family module")
        return write_converted(path, converted, dtype=dtype)
    shown = type(module).__name__
    kwargs["embed_scale"] = _embed_scale_of(module, kwargs, shown)
    eds = [m for m in module.modules() if isinstance(m, nn.Transformer)]
    encs = [m for m in module.modules() if isinstance(m, nn.TransformerEncoder)
            and not any(m is e.encoder for e in eds)]
    if eds:
        transformer = _one([(str(i), e) for i, e in enumerate(eds)], "nn.Transformer", shown)[1]
        rest = _outside(module, [transformer])
        embeds = [(n, m) for n, m in rest if isinstance(m, nn.Embedding)]
        pos = [(n, m) for n, m in embeds if "pos" in n.lower()]
        tokens = [(n, m) for n, m in embeds if "pos" not in n.lower()]
        src = [(n, m) for n, m in tokens if "src" in n.lower() or "source" in n.lower()]
        tgt = [(n, m) for n, m in tokens if "tgt" in n.lower() or "target" in n.lower()]
        if len(tokens) == 1:
            src = tgt = tokens              # one table serving both
        heads = [(n, m) for n, m in rest if isinstance(m, nn.Linear)]
        parts = dict(src_embed=_one(src, "source nn.Embedding (a name with src)", shown)[1],
                     tgt_embed=_one(tgt, "target nn.Embedding (a name with tgt)", shown)[1],
                     generator=_one(heads, "nn.Linear head", shown)[1])
        if pos:
            kwargs.setdefault("pos_embed", _one(pos, "positional nn.Embedding", shown)[1])
            kwargs.setdefault("pos_encoding", "learned")
        used = [transformer, *parts.values(), kwargs.get("pos_embed")]
        left = [(n, m) for n, m in _outside(module, used)]
        if left:
            n, m = left[0]
            _refuse(f"{shown}.{n}", _Desc(_describe(m)), "holds parameters outside the nn.Transformer, embeddings "
                                                        "and head; FORMAT cannot tell where it runs")
        return export_encoder_decoder(path, transformer=transformer, **parts, **kwargs)
    if not encs:
        _refuse("module", _Desc(shown), "no family recognises it and it holds no stock nn.Transformer or "
                                        "nn.TransformerEncoder")
    layers = encs[0] if len(encs) == 1 else _one([(str(i), e) for i, e in enumerate(encs)],
                                                 "nn.TransformerEncoder", shown)[1]
    rest = _outside(module, [layers])
    embeds = [(n, m) for n, m in rest if isinstance(m, nn.Embedding)]
    pos = [(n, m) for n, m in embeds if "pos" in n.lower()]
    tokens = [(n, m) for n, m in embeds if "pos" not in n.lower()]
    heads = [(n, m) for n, m in rest if isinstance(m, nn.Linear)]
    embed = _one(tokens, "token nn.Embedding", shown)[1]
    head = _one(heads, "nn.Linear head", shown)[1]
    if pos:
        kwargs.setdefault("pos_embed", _one(pos, "positional nn.Embedding", shown)[1])
        kwargs.setdefault("pos_encoding", "learned")
    used = [layers, embed, head, kwargs.get("pos_embed"), kwargs.get("final_norm")]
    left = _outside(module, used)
    if left:
        n, m = left[0]
        hint = ""
        if isinstance(m, nn.LayerNorm) and layers.norm is None:
            hint = (f"; if it runs after the stack (a final norm kept as its own attribute), pass "
                    f"final_norm=model.{n}")
        _refuse(f"{shown}.{n}", _Desc(_describe(m)), "holds parameters outside the nn.TransformerEncoder, embedding "
                                                    "and head; FORMAT cannot tell where it runs, and leaving it out "
                                                    "would give other numbers" + hint)
    attention = kwargs.pop("attention", "causal")
    if attention == "bidirectional":
        return export_encoder_only(path, layers=layers, embed=embed, head=head, **kwargs)
    return export_decoder_only(path, layers=layers, embed=embed, lm_head=head, attention=attention, **kwargs)


# ----------------------------------------------------------------------------
# Checking a file against PyTorch
# ----------------------------------------------------------------------------


def _sizes_held(path, tensors, cfg):
    """Refuse (ValueError naming the file) a config whose sizes are not the
    tensors' before stock modules are built from it: the config is a claim of
    the file, and building it costs what it claims (a 792-byte file with
    num_layers 200,000 made --check build 200,000 layers: over 150 s and 2.2 GB
    before load_state_dict could refuse them). The layer counts come from the
    tensor names, d_model, dim_feedforward and the vocabulary sizes from the
    embeddings and the first linear1; with those equal, the modules hold no more
    numbers than the file (learned positions are a tensor of the file too)."""
    from families import layer_count
    if cfg.get("arch") == "encoder_decoder":
        embeds = [("src_embed.weight", "src_vocab_size"), ("tgt_embed.weight", "tgt_vocab_size")]
        stacks = [("transformer.encoder.layers.", "num_encoder_layers"),
                  ("transformer.decoder.layers.", "num_decoder_layers")]
    else:
        embeds, stacks = [("embed.weight", "vocab_size")], [("transformer.layers.", "num_layers")]
    d = cfg.get("d_model")
    for name, key in embeds:
        if name not in tensors:
            raise ValueError(f"{path}: has no {name}, which its config's arch {_shown_value(cfg.get('arch'))} needs")
        if list(tensors[name].shape) != [cfg.get(key), d]:
            raise ValueError(f"{path}: {name} has shape {list(tensors[name].shape)} but its config says "
                             f"[{key}, d_model] = [{_shown_value(cfg.get(key))}, {_shown_value(d)}]")
    for prefix, key in stacks:
        held = layer_count(tensors, prefix, path)
        if held != cfg.get(key):
            raise ValueError(f"{path}: its config says {key} = {_shown_value(cfg.get(key))} but it holds the "
                             f"tensors of {held}" + (f" ({prefix}0..{held - 1})" if held else f" (no {prefix}*)"))
        first = f"{prefix}0.linear1.weight"
        if held and first in tensors and list(tensors[first].shape) != [cfg.get("dim_feedforward"), d]:
            raise ValueError(f"{path}: {first} has shape {list(tensors[first].shape)} but its config says "
                             f"[dim_feedforward, d_model] = [{_shown_value(cfg.get('dim_feedforward'))}, "
                             f"{_shown_value(d)}]")


def _shown_value(value):
    """A config value for a message: atomic values as JSON-like repr, cut at 40 characters."""
    text = repr(value) if isinstance(value, (str, int, float, bool, type(None))) else f"a {type(value).__name__}"
    return text if len(text) <= 40 else text[:37] + "..."


def _modules_from_file(tensors, cfg):
    """The file's twin: stock modules (tools/python/torch_modules.py; TwinAttention
    where nn.MultiheadAttention cannot compute the config's attention) holding the
    file's values in float32, every name of the file loaded (strict)."""
    torch.manual_seed(0)      # only PyTorch's own init, overwritten by the file
    try:
        module = tm.build_module(cfg)
        state = tm.twin_state(tensors, cfg)
    except KeyError as e:
        raise ValueError(f"its config has no {e}") from None
    except (AssertionError, TypeError) as e:         # PyTorch's own refusals (nhead not dividing d_model, ...)
        raise ValueError(f"its config builds no PyTorch modules: {_one_line(e)}") from None
    problem = _state_problem(module.state_dict(), state)
    if problem:
        raise ValueError(problem)
    module.load_state_dict(state, strict=True)
    module.eval()
    if cfg["arch"] == "encoder_decoder":
        return {"transformer": module.transformer, "src_embed": module.src_embed, "tgt_embed": module.tgt_embed,
                "generator": module.generator, "pos_embed": getattr(module, "pos_embed", None)}
    return {"layers": module.transformer, "embed": module.embed, "head": module.lm_head,
            "pos_embed": getattr(module, "pos_embed", None)}


def _state_problem(expected, state):
    """"" when `state` has exactly the names and shapes of `expected` (a module's
    state_dict), else one line: the first name missing, unexpected or of another
    shape, and how many more of each."""
    def first(label, names):
        more = f" (and {len(names) - 1} more)" if len(names) > 1 else ""
        return f"{label} {pickle_reader.shown(names[0])}{more}"
    found = []
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    reshaped = [k for k in expected if k in state and tuple(state[k].shape) != tuple(expected[k].shape)]
    if missing:
        found.append(first("no tensor", missing))
    if unexpected:
        found.append(first("a tensor its config does not have:", unexpected))
    if reshaped:
        k = reshaped[0]
        found.append(f"{pickle_reader.shown(k)} has shape {list(state[k].shape)}, its config says "
                     f"{list(expected[k].shape)}" + (f" (and {len(reshaped) - 1} more)" if len(reshaped) > 1 else ""))
    return "; ".join(found)


def _padding(rng, b, length):
    """[B, length] bool, True = padding: row 0 none, then right, left, both sides."""
    mask = np.zeros((b, length), dtype=bool)
    if length < 2:
        return mask
    for row in range(1, b):
        kind = (row - 1) % 3
        keep = int(rng.integers(1, length))          # tokens kept, 1..length-1
        if kind == 0:
            mask[row, keep:] = True
        elif kind == 1:
            mask[row, : length - keep] = True
        else:
            left = int(rng.integers(0, length - keep + 1))
            mask[row, :left] = True
            mask[row, left + keep:] = True
    return mask


def _batch(rng, cfg, k):
    """One random batch of `forward` inputs (numpy), FORMAT.md section 2."""
    cap = max(1, min(cfg["max_len"], 12))
    b = 4
    if cfg["arch"] == "encoder_decoder":
        s, t = (int(rng.integers(min(2, cap), cap + 1)) for _ in range(2))
        src_pad, tgt_pad = _padding(rng, b, s), _padding(rng, b, t)
        src = rng.integers(0, cfg["src_vocab_size"], (b, s)).astype(np.int64)
        tgt = rng.integers(0, cfg["tgt_vocab_size"], (b, t)).astype(np.int64)
        if "pad_id" in cfg:
            src[src_pad] = cfg["pad_id"]
            tgt[tgt_pad] = cfg["pad_id"]
        return {"src_ids": src, "tgt_ids": tgt, "src_key_padding_mask": src_pad, "tgt_key_padding_mask": tgt_pad}
    t = int(rng.integers(min(2, cap), cap + 1))
    pad = _padding(rng, b, t)
    ids = rng.integers(0, cfg["vocab_size"], (b, t)).astype(np.int64)
    if "pad_id" in cfg:
        ids[pad] = cfg["pad_id"]
    out = {"ids": ids, "key_padding_mask": pad}
    if cfg["attention"] == "prefix_lm":
        prefix = rng.integers(0, t + 1, b).astype(np.int64)
        if k == 0:
            prefix[0], prefix[-1] = 0, t
        out["prefix_len"] = prefix
    return out


def _query_padding(cfg, inputs, name):
    """[B, L] True = padded query, for an output name."""
    if cfg["arch"] != "encoder_decoder":
        return inputs["key_padding_mask"]
    if name.startswith("encoder."):
        return inputs["src_key_padding_mask"]
    return inputs["tgt_key_padding_mask"]


def _output_order(cfg):
    """Output names in forward order (attention calls as they run, logits last)."""
    if cfg["arch"] == "encoder_decoder":
        names = [f"encoder.{i}.self_attn.weights" for i in range(cfg["num_encoder_layers"])]
        for i in range(cfg["num_decoder_layers"]):
            names += [f"decoder.{i}.self_attn.weights", f"decoder.{i}.cross_attn.weights"]
    else:
        names = [f"layers.{i}.self_attn.weights" for i in range(cfg["num_layers"])]
    return names + ["logits"]


def _run_pytorch(cfg, parts, inputs):
    """{output name: numpy float32} from PyTorch's plain path on the modules."""
    t = {k: torch.from_numpy(v) for k, v in inputs.items()}
    stack = parts["transformer"] if cfg["arch"] == "encoder_decoder" else parts["layers"]
    cap = tm.Capture(tm.stack_attention_names(cfg["arch"], stack), sanitize=True)
    try:
        with tm.NoFastPath(), torch.enable_grad():
            if cfg["arch"] == "encoder_decoder":
                logits = tm.encoder_decoder_forward(
                    cfg, parts["transformer"], parts["src_embed"], parts["tgt_embed"], parts["generator"],
                    t["src_ids"], t["tgt_ids"], t["src_key_padding_mask"], t["tgt_key_padding_mask"],
                    parts.get("pos_embed"))
            else:
                logits = tm.single_stack_forward(cfg, parts["layers"], parts["embed"], parts["head"], t["ids"],
                                                 t["key_padding_mask"], t.get("prefix_len"), parts.get("pos_embed"))
    finally:
        cap.remove()
    out = {"logits": logits.detach().float().numpy()}
    out.update({k: v.float().numpy() for k, v in cap.weights.items()})
    return out


def tinyformer_binary():
    binary = os.environ.get("TINYFORMER_BIN") or str(REPO / "build" / "tinyformer")
    if not os.path.isfile(binary):
        raise FileNotFoundError(f"the tinyformer program {binary} does not exist: build it with make "
                                f"(from the repository root), or set TINYFORMER_BIN")
    return binary


def _run_tinyformer(binary, model, inputs, workdir, k):
    in_path = os.path.join(workdir, f"inputs{k}.safetensors")
    out_path = os.path.join(workdir, f"outputs{k}.safetensors")
    st.write(in_path, inputs)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    run = subprocess.run([binary, "forward", str(model), "--inputs", in_path, "--output", out_path, "--attention"],
                         capture_output=True, text=True, env=env)
    if run.returncode != 0:
        raise CheckError(f"{binary} forward failed on {model} (exit {run.returncode}): {run.stderr.strip()}")
    return st.read(out_path)[0]


def _compare(name, ours, theirs, qpad, k):
    """(worst ratio, where) at non-padding positions; raises on a padding row
    that is not exactly 0 or on non-finite numbers."""
    if ours.shape != theirs.shape:
        raise CheckError(f"{name}: tinyformer's shape {list(ours.shape)} differs from PyTorch's {list(theirs.shape)}")
    if not np.isfinite(ours).all():
        raise CheckError(f"{name}: tinyformer's output is not finite (batch {k})")
    rows = qpad[:, :, None] if ours.ndim == 3 else qpad[:, None, :, None]
    rows = np.broadcast_to(rows, ours.shape)
    if (ours[rows] != 0).any():
        raise CheckError(f"{name}: tinyformer's rows at padded positions are not exactly 0 (batch {k})")
    b = theirs.astype(np.float64)
    if not np.isfinite(b[~rows]).all():
        raise CheckError(f"{name}: PyTorch's output is not finite at a non-padding position (batch {k})")
    if rows.all():
        return 0.0, None          # nothing but padding: nothing compared (check() refuses to pass on that)
    ratio = np.abs(ours.astype(np.float64) - b) / (ATOL + RTOL * np.abs(b))
    ratio[rows] = 0
    at = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    return float(ratio[at]), (k, at, float(ours[at]), float(b[at]))


class _ShapesDiffer:
    """An output whose shapes differ between tinyformer and the reference: for an
    attention, a head count on one side that is not the other's (a wrong
    --n-head), so that attention differs; shown in check()'s FAIL line."""

    def __init__(self, name, ours, theirs):
        self.name, self.ours, self.theirs = name, list(ours), list(theirs)

    def __str__(self):
        text = f"tinyformer's shape {self.ours} differs from PyTorch's {self.theirs}"
        if self.name.endswith(".weights") and len(self.ours) == len(self.theirs) == 4 \
                and self.ours[1] != self.theirs[1]:
            text += (f": tinyformer computes {self.ours[1]} heads, the reference {self.theirs[1]} (the file's "
                     f"nhead is not the model's)")
        return text


def _where(name, found):
    k, at, a, b = found
    if name == "logits":
        place = f"b={at[0]}, position {at[1]}, token {at[2]}"
    else:
        place = f"b={at[0]}, head {at[1]}, query {at[2]}, key {at[3]}"
    return f"batch {k} ({place}): tinyformer {a:.7g}, PyTorch {b:.7g}"


CONSISTENT = ("consistent with the exported settings (no reference module given: this does not show it matches "
              "your model)")


class CheckFailed(CheckError):
    """check(): tinyformer's numbers differ from the reference beyond FORMAT's
    tolerance. .name: the first output (forward order) that differs; .worst:
    its worst |a-b| / (1e-4 + 1e-4|b|)."""

    def __init__(self, message, name=None, worst=None):
        super().__init__(message)
        self.name = name
        self.worst = worst


def _tensor_output(out, shown):
    """The logits of a reference's return value: a tensor, the first tensor of a
    tuple/list, or .logits (Hugging Face style)."""
    if isinstance(out, (tuple, list)) and out:
        out = out[0]
    if not torch.is_tensor(out) and hasattr(out, "logits"):
        out = out.logits
    if not torch.is_tensor(out):
        raise ValueError(f"reference {shown} returned a {type(out).__name__}, not a tensor of logits")
    return out


def _accepts(fn, name):
    import inspect
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


# The dropout module upstream's attentions pass their softmaxed weights through
# (nanoGPT, llama2.c and minGPT: attn_dropout; older minGPT: attn_drop), on their
# manual path, the one torch < 2.0 takes (no scaled_dot_product_attention).
ATTENTION_DROPOUTS = ("attn_dropout", "attn_drop")


class _Hooks:
    """Per-head weights from attention modules, named in forward order: from the
    attribute where the module keeps its last weights (the Annotated
    MultiHeadedAttention's .attn, this project's GPT and llama modules'
    .weights), copied by a forward hook after each call; or, when it keeps none
    (upstream nanoGPT, minGPT, llama2.c), from the input of its attention
    dropout (ATTENTION_DROPOUTS), seen by a forward pre-hook: the weights
    themselves, before dropout (identity in eval())."""

    def __init__(self, named, attribute):
        self.weights, self._handles = {}, []
        for module, name in named:
            dropout = next((getattr(module, d) for d in ATTENTION_DROPOUTS
                            if isinstance(getattr(module, d, None), nn.Module)), None)
            if attribute not in vars(module) and dropout is not None:
                self._handles.append(dropout.register_forward_pre_hook(self._pre_hook(name)))
            else:
                self._handles.append(module.register_forward_hook(self._hook(name, attribute)))

    def _hook(self, name, attribute):
        def hook(module, _inputs, _output):
            w = getattr(module, attribute, None)
            if torch.is_tensor(w):
                self.weights[name] = w.detach().float().clone()
        return hook

    def _pre_hook(self, name):
        def hook(_module, inputs):
            if inputs and torch.is_tensor(inputs[0]):
                self.weights[name] = inputs[0].detach().float().clone()
        return hook

    def remove(self):
        for h in self._handles:
            h.remove()


class _Reference:
    """What check() compares tinyformer with. run(cfg, inputs) -> {output name:
    numpy float32} holding "logits" and the attention weights it can see.
    padding: whether batches may hold padding; log_probs: the outputs are
    log-probabilities (compare log_softmax of both)."""
    padding = True
    log_probs = False
    description = ""
    user = True           # the user's own model (False: rebuilt from the file's settings)

    def run(self, cfg, inputs):
        raise NotImplementedError


class _StockParts(_Reference):
    """Stock nn.Transformer* modules: the ones a file was exported from, or rebuilt from the file."""
    user = False

    def __init__(self, parts, description):
        self.parts, self.description = parts, description

    def run(self, cfg, inputs):
        return _run_pytorch(cfg, self.parts, inputs)


class _AnnotatedReference(_Reference):
    log_probs = True

    def __init__(self, module):
        from families import annotated
        self.family, self.module = annotated, module
        self.description = f"your Annotated Transformer module ({type(module).__name__})"

    def run(self, cfg, inputs):
        t = {k: torch.from_numpy(v) for k, v in inputs.items()}
        return _outputs_with_weights(
            _Hooks(self.family.attention_modules(self.module), "attn"),
            lambda: self.family.annotated_log_probs(self.module, t["src_ids"], t["tgt_ids"],
                                                    t["src_key_padding_mask"], t["tgt_key_padding_mask"]),
            self.description, [list(t["src_ids"].shape), list(t["tgt_ids"].shape)])


def _outputs_with_weights(hooks, forward, shown=None, shape=None):
    """{"logits": forward()} plus the per-head weights the hooks caught during it.
    An exception of the module's own code (a user's model.py: a shape it cannot
    view, an assert) is a ValueError naming the module (`shown`) and the batch's
    `shape`, one line."""
    try:
        with torch.no_grad():
            out = forward()
    except (Exception, SystemExit) as e:
        if shown is None or isinstance(e, ValueError) and str(e).startswith("reference "):
            raise
        raise ValueError(f"{shown} failed on a batch of shape {shape}: {type(e).__name__}: {_one_line(e)[:300]}") \
            from None
    finally:
        hooks.remove()
    result = {"logits": out.float().numpy()}
    result.update({k: v.numpy() for k, v in hooks.weights.items()})
    return result


def _gpt_family(module):
    """The families.gpt module when `module` is its GPT (or has its tree), else None."""
    try:
        from families import gpt
    except ImportError:
        return None
    recognise = getattr(gpt, "recognise", None)
    if recognise is not None:
        return gpt if recognise(module) else None
    return gpt if isinstance(module, getattr(gpt, "GPT", ())) else None


class _GPTReference(_Reference):
    """A nanoGPT/minGPT-style GPT (families/gpt.py's, or upstream model.py's):
    unpadded batches, logits at every position (_every_position: nanoGPT's
    forward gives only the last one without targets), the weights of each
    attention (_Hooks: ours keeps .weights, upstream's pass attn_dropout)."""
    padding = False

    def __init__(self, module):
        self.module = module
        self.description = f"your GPT module ({type(module).__name__})"

    def run(self, cfg, inputs):
        return _outputs_with_weights(
            _Hooks([(block.attn, f"layers.{i}.self_attn.weights") for i, block in enumerate(self.module.transformer.h)],
                   "weights"),
            lambda: _every_position(self.module, torch.from_numpy(inputs["ids"]), self.description),
            self.description, list(inputs["ids"].shape))


def _every_position(module, ids, shown):
    """module(ids)'s logits at every position. nanoGPT's and llama2.c's forward
    return only the last position without targets (an inference shortcut) and
    every position with them: then it is called again with dummy targets (the
    loss it computes is ignored)."""
    out = _tensor_output(module(ids), shown)
    if out.dim() == 3 and out.shape[1] != ids.shape[1] and _accepts(module.forward, "targets"):
        out = _tensor_output(module(ids, targets=torch.zeros_like(ids)), shown)
    return out


class _LlamaReference(_Reference):
    """A llama2.c-style Transformer (families/llama.py's, or upstream model.py's):
    unpadded batches, logits at every position (_every_position: upstream's
    forward gives only the last one without targets), and the weights of each
    attention (_Hooks: ours keeps .weights, upstream's pass attn_dropout)."""
    padding = False

    def __init__(self, module):
        self.module = module
        self.description = f"your llama2.c Transformer ({type(module).__name__})"

    def run(self, cfg, inputs):
        from families import llama
        ids = torch.from_numpy(inputs["ids"])
        return _outputs_with_weights(_Hooks(llama.attention_modules(self.module), "weights"),
                                     lambda: _every_position(self.module, ids, self.description),
                                     self.description, list(ids.shape))


class _HFGPT2Reference(_Reference):
    """A GPT-2 with Hugging Face's structure (families/hf_gpt2.py's GPT2LMHead, or
    transformers' GPT2LMHeadModel): unpadded batches, the logits, and the per-head
    weights of every attention, so that a failure names the first attention that
    differs: from each attention's .weights (ours keeps them; a forward hook copies
    them) or, for a model whose forward takes output_attentions=, from the
    attentions it returns (transformers')."""
    padding = False

    def __init__(self, module):
        self.module = module
        self.description = f"your GPT-2 module ({type(module).__name__})"

    def run(self, cfg, inputs):
        from families import hf_gpt2
        ids = torch.from_numpy(inputs["ids"])
        named = hf_gpt2.attention_modules(self.module)
        if any(not hasattr(attn, "weights") for attn, _ in named) and _accepts(self.module.forward,
                                                                               "output_attentions"):
            with torch.no_grad():
                out = self.module(ids, output_attentions=True)
            result = {"logits": _tensor_output(out, self.description).float().numpy()}
            for (_, name), w in zip(named, getattr(out, "attentions", None) or ()):
                result[name] = w.detach().float().numpy()
            return result
        return _outputs_with_weights(_Hooks(named, "weights"),   # a block without .weights: logits only
                                     lambda: _tensor_output(self.module(ids), self.description))


class _CallableReference(_Reference):
    """Any module or callable: ids -> logits (single-stack) or (src, tgt) ->
    logits (encoder_decoder). Padding is used only when it takes the padding
    masks by keyword (key_padding_mask / src_key_padding_mask and
    tgt_key_padding_mask, True = padding); prefix_lm needs prefix_len=. Stock
    nn.MultiheadAttention inside an nn.Transformer / nn.TransformerEncoder
    submodule give per-head weights."""

    def __init__(self, fn, arch):
        self.fn = fn
        self.description = f"your {'module' if isinstance(fn, nn.Module) else 'callable'} {_describe(fn)}"
        keys = ["src_key_padding_mask", "tgt_key_padding_mask"] if arch == "encoder_decoder" else ["key_padding_mask"]
        target = fn.forward if isinstance(fn, nn.Module) else fn
        self.padding = all(_accepts(target, k) for k in keys)
        self.prefix = _accepts(target, "prefix_len")
        self.stack = None
        if isinstance(fn, nn.Module):
            kind = nn.Transformer if arch == "encoder_decoder" else nn.TransformerEncoder
            stacks = [m for m in fn.modules() if isinstance(m, kind)]
            if len(stacks) == 1:
                self.stack = stacks[0]

    def run(self, cfg, inputs):
        t = {k: torch.from_numpy(v) for k, v in inputs.items()}
        cap = None
        if self.stack is not None:
            cap = tm.Capture(tm.stack_attention_names(cfg["arch"], self.stack), sanitize=True)
        try:
            with tm.NoFastPath(), torch.enable_grad():
                if cfg["arch"] == "encoder_decoder":
                    kw = ({"src_key_padding_mask": t["src_key_padding_mask"],
                           "tgt_key_padding_mask": t["tgt_key_padding_mask"]} if self.padding else {})
                    out = self.fn(t["src_ids"], t["tgt_ids"], **kw)
                else:
                    kw = {"key_padding_mask": t["key_padding_mask"]} if self.padding else {}
                    if "prefix_len" in t:
                        if not self.prefix:
                            raise ValueError(f"{self.description}: a prefix_lm model's reference must take "
                                             f"prefix_len= (a [B] tensor of prefix lengths)")
                        kw["prefix_len"] = t["prefix_len"]
                    out = self.fn(t["ids"], **kw)
                out = _tensor_output(out, self.description)
        except RuntimeError as e:
            if "fast path" in str(e):
                raise
            raise ValueError(f"{self.description} failed on a batch of shape "
                             f"{list((t.get('ids') if 'ids' in t else t['tgt_ids']).shape)}: {e}") from None
        finally:
            if cap is not None:
                cap.remove()
        result = {"logits": out.detach().float().numpy()}
        if cap is not None:
            result.update({k: v.float().numpy() for k, v in cap.weights.items()})
        return result


def _reference_for(reference, cfg):
    """A _Reference for what the user gave: a family module, any module or callable."""
    if isinstance(reference, _Reference):
        return reference
    if isinstance(reference, nn.Module):
        reference.eval()
        from families import annotated
        if annotated.recognise(reference):
            if cfg["arch"] != "encoder_decoder":
                raise ValueError(f"the reference is an Annotated Transformer (encoder_decoder) but the file is "
                                 f"{cfg['arch']}")
            return _AnnotatedReference(reference)
        if _gpt_family(reference) is not None:
            if cfg["arch"] != "decoder_only":
                raise ValueError(f"the reference is a GPT module (decoder_only) but the file is {cfg['arch']}")
            return _GPTReference(reference)
        from families import llama
        if llama.recognise(reference):
            if cfg["arch"] != "decoder_only":
                raise ValueError(f"the reference is a llama2.c Transformer (decoder_only) but the file is "
                                 f"{cfg['arch']}")
            return _LlamaReference(reference)
        from families import hf_gpt2
        if hf_gpt2.recognise(reference):
            if cfg["arch"] != "decoder_only":
                raise ValueError(f"the reference is a GPT-2 (decoder_only) but the file is {cfg['arch']}")
            return _HFGPT2Reference(reference)
    if callable(reference):
        return _CallableReference(reference, cfg["arch"])
    raise ValueError(f"reference = {_describe(reference)}: expected a module or a callable "
                     f"(ids -> logits, or (src, tgt) -> logits)")


def _log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def _looks_like_log_probs(logits, qpad):
    """Every non-padding row's logsumexp is 0 (within float32 rounding)."""
    x = logits.astype(np.float64)
    m = x.max(axis=-1)
    lse = m + np.log(np.exp(x - m[..., None]).sum(axis=-1))
    return bool(np.all(np.abs(lse[~qpad]) < 1e-4))


def not_a_checkpoint(path):
    """The one-line message for a file that is something else (a llama2.c
    model.bin, a Hugging Face folder, a torch.save file, a PNG, ...: named with
    the command that converts it, model_files.identify), or None."""
    import model_files
    try:
        kind = model_files.identify(path)
    except INPUT_ERRORS:
        return None
    if kind is None or kind.what.startswith("a tinyformer checkpoint"):
        return None
    return f"{path}: this is {kind.what}, not a tinyformer checkpoint; {kind.way_out}"


def check(path, reference=None, *, n_batches=3, seed=0, verbose=False):
    """Compare tinyformer's `forward --attention` on the file with PyTorch on
    `n_batches` random batches. Returns the worst |a-b| / (1e-4 + 1e-4|b|) over
    logits and every per-head weight compared, at non-padding positions
    (<= 1 passes). Raises CheckFailed (a CheckError) naming the first output, in
    forward order, that differs, and by how much.

    reference: YOUR model, which the file should reproduce:
      - an Annotated Transformer module (families/annotated.py's tree, yours or
        upstream's): padded batches through its masks, log-probs compared, the
        weights of every attention (its .attn);
      - a GPT module (families/gpt.py's, nanoGPT's or minGPT's own) or a llama2.c
        Transformer (families/llama.py's or upstream's): unpadded batches of
        several lengths, logits at every position (a forward that gives only the
        last one without targets, as nanoGPT's and llama2.c's, is called with
        dummy targets), the weights of each attention (kept in .weights, or seen
        at the attn_dropout they pass through);
      - any other module or callable: ids -> logits (single-stack) or
        (src, tgt) -> logits (encoder_decoder); padded batches only when it takes
        key_padding_mask= (src_key_padding_mask=, tgt_key_padding_mask=) by
        keyword, prefix_len= for prefix_lm; log-probs are detected (every row's
        logsumexp 0) and compared as log-probs; per-head weights from its stock
        nn.Transformer / nn.TransformerEncoder when it has exactly one.
    reference=None: stock modules (the copies taken when the file was exported in
    this process, or rebuilt from the file). That shows only that the file is
    consistent with the settings it was exported with, NOT that it matches your
    model (a wrong embed_scale, a LayerNorm left out, tanh vs exact GELU would
    all pass); check.last_source says which side was used."""
    path = str(path)
    named = not_a_checkpoint(path)
    if named is not None:
        raise ValueError(named)
    with open(path, "rb") as f:
        raw = st.file_view(f)            # mapped: the tensors are read only when stock modules are built from them
    try:
        _, metadata, _ = st.parse_header(raw)
    except ValueError as e:              # safetensors_io names the rule, not the file
        raise ValueError(f"{path}: not a safetensors file ({e})") from None
    if "config" not in metadata:
        raise CheckError(f"{path}: no config in __metadata__; not a tinyformer checkpoint")
    try:
        cfg = st.metadata_json(metadata, "config")
    except ValueError as e:
        raise CheckError(f"{path}: {e}") from None
    if not isinstance(n_batches, int) or n_batches < 1:
        raise ValueError(f"n_batches = {n_batches!r}: expected a positive int")
    if reference is not None:
        ref = _reference_for(reference, cfg)
    else:
        entry = _REGISTRY.get(os.path.realpath(path))
        if entry is not None:
            source = "the exported modules"
            if entry["sha256"] != hashlib.sha256(raw).hexdigest():
                source += " (the file has changed since it was exported from them)"
            if entry["arch"] != cfg.get("arch"):
                raise CheckError(f"{path}: its config says arch {cfg.get('arch')!r} but it was exported from "
                                 f"{entry['arch']} modules; the file has changed since")
            ref = _StockParts(entry["parts"], source)
        else:
            tensors, _ = st.decode(raw)
            _sizes_held(path, tensors, cfg)
            try:
                ref = _StockParts(_modules_from_file(tensors, cfg), "stock modules rebuilt from the file")
            except ValueError as e:
                raise CheckError(f"{path}: no PyTorch twin can be built from its config and tensors ({e}); give "
                                 f"the model it came from: --against FAMILY FILE ({', '.join(FAMILIES)}), or in "
                                 f"Python check(path, reference=your_model)") from None
    if isinstance(n_batches, bool) or not isinstance(n_batches, int) or n_batches < 1:
        raise ValueError(f"check: n_batches = {n_batches!r}: expected a positive int (0 batches compare nothing)")
    check.last_source = ref.description
    binary = tinyformer_binary()
    rng = np.random.default_rng(seed)
    order = _output_order(cfg)
    worst = {}
    log_probs = ref.log_probs
    with tempfile.TemporaryDirectory(prefix="tinyformer-check-") as workdir:
        for k in range(n_batches):
            inputs = _batch(rng, cfg, k)
            if not ref.padding:
                for key in ("key_padding_mask", "src_key_padding_mask", "tgt_key_padding_mask"):
                    if key in inputs:
                        inputs[key][:] = False
            ours = _run_tinyformer(binary, path, inputs, workdir, k)
            theirs = ref.run(cfg, inputs)
            if set(ours) != set(order):
                raise CheckError(f"{path}: tinyformer's outputs {sorted(ours)} are not the expected {order}")
            unknown = sorted(set(theirs) - set(order))
            if unknown:
                raise CheckError(f"{path}: the reference gave outputs {unknown} that the file has no twin of")
            for name in order:
                if name not in theirs:
                    continue
                qpad = _query_padding(cfg, inputs, name)
                a, b = ours[name], theirs[name]
                if name == "logits":
                    if k == 0 and not ref.log_probs and isinstance(ref, _CallableReference):
                        log_probs = _looks_like_log_probs(b, qpad)
                    if log_probs and a.shape == b.shape:
                        a, b = _log_softmax(a).astype(np.float32), _log_softmax(b).astype(np.float32)
                        a[np.broadcast_to(qpad[:, :, None], a.shape)] = 0
                if a.shape != b.shape:       # e.g. another head count: that output differs (no crash)
                    worst.setdefault(name, (float("inf"), _ShapesDiffer(name, a.shape, b.shape)))
                    continue
                ratio, found = _compare(name, a, b, qpad, k)
                if found is not None and (name not in worst or ratio > worst[name][0]):
                    worst[name] = (ratio, found)
    compared = [name for name in order if name in worst]
    if "logits" not in worst:
        raise CheckError(f"{path}: no logits were compared (the reference gave none, or every position was "
                         f"padding): nothing shows the file matches")
    overall = max(worst[n][0] for n in compared)
    if verbose:
        print(f"check {path}: PyTorch side: {ref.description}; {n_batches} batches"
              + ("" if ref.padding else " (no padding: the reference takes none)")
              + ("; log-probabilities compared" if log_probs else ""))
        for name in compared:
            found = worst[name][1]
            print(f"  {name:32s} " + (f"shapes differ: {found}" if isinstance(found, _ShapesDiffer) else
                                      f"worst |a-b|/tol {worst[name][0]:.3g}"))
        skipped = [n for n in order if n not in worst]
        if skipped:
            print(f"  not compared (the reference does not expose them): {', '.join(skipped)}")
    bad = [name for name in compared if worst[name][0] > 1.0]
    if bad:
        first = bad[0]
        others = ", ".join(f"{n} ({'shapes differ' if isinstance(worst[n][1], _ShapesDiffer) else f'{worst[n][0]:.3g}'})"
                           for n in bad[1:])
        what = "log-probabilities" if first == "logits" and log_probs else first
        found = worst[first][1]
        how = (f"{found}" if isinstance(found, _ShapesDiffer) else
               f"|a-b| / (1e-4 + 1e-4|b|) = {worst[first][0]:.4g} ({what}) at {_where(first, found)}")
        raise CheckFailed(f"{first} diverges first: {how}"
                          + (f"; also diverging: {others}" if others else "") + f" (PyTorch side: {ref.description})",
                          name=first, worst=worst[first][0])
    return overall


check.last_source = None


# ----------------------------------------------------------------------------
# Your own model code: --module model.py (the check that runs it)
# ----------------------------------------------------------------------------

# What each family's model file must define, and how the model is built from it
# (the family's own convention: what its train.py / notebook does).
MODULE_FAMILIES = {
    "nanogpt": "GPT and GPTConfig: GPT(GPTConfig(**model_args)), model_args from the checkpoint",
    "mingpt": "GPT with get_default_config(): model_type None, n_layer, n_embd, vocab_size and block_size from "
              "the file, n_head from --module-config",
    "annotated": "make_model(src_vocab, tgt_vocab, N, d_model, d_ff, h, dropout): the sizes from the file, h "
                 "from --module-config",
    "llama2c": "Transformer and ModelArgs: Transformer(ModelArgs(**model_args)), model_args from the checkpoint",
}
MAX_MODULE_CONFIG_BYTES = 1 << 20


def _module_config(text):
    """--module-config: a JSON object given inline ('{"n_head": 3}') or the path of
    a JSON file holding one. {} when not given."""
    if text is None:
        return {}
    if text.lstrip().startswith("{"):
        source = "--module-config"
    else:
        source = f"--module-config {text}"
        try:
            text = bytes(torch_file.file_bytes(text, MAX_MODULE_CONFIG_BYTES)).decode("utf-8")
        except torch_file.Refused as e:       # a FIFO, a device, more than the limit: refused before reading
            raise ValueError(f"{source}: {e} (give a JSON object, e.g. '{{\"n_head\": 3}}', or a JSON file "
                             f"holding one)") from None
        except OSError as e:
            raise ValueError(f"{source}: cannot read: {e.strerror or e} (give a JSON object, e.g. "
                             f"'{{\"n_head\": 3}}', or a JSON file holding one)") from None
        except UnicodeDecodeError as e:
            raise ValueError(f"{source}: not UTF-8 text ({e.reason})") from None
    try:
        config = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{source}: not JSON ({e if isinstance(e, json.JSONDecodeError) else 'nested too deep'})") \
            from None
    if not isinstance(config, dict):
        raise ValueError(f"{source}: expected a JSON object of your model's settings, e.g. {{\"n_head\": 3}}")
    return config


def import_model_file(path):
    """Import the user's model file as their own code (it runs, as it does when
    they train with it) and return the Python module. A file inside a package
    (its folder holds __init__.py, as minGPT's mingpt/model.py, which imports
    mingpt.utils) is imported by its dotted name with the package's root on
    sys.path; a lone file with its own folder on sys.path. What the file prints
    goes to stderr (stdout keeps the check's own lines). ValueError naming the
    file for a file that is not there, not .py, or fails to import."""
    import contextlib
    import importlib
    import importlib.util
    shown = f"--module {path}"
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"{shown}: no such file")
    if file.suffix != ".py":
        raise ValueError(f"{shown}: expected a Python file (model.py) defining your model's classes")
    file = file.resolve()
    root, parts = file.parent, [file.stem]
    while (root / "__init__.py").is_file() and root.parent != root:
        parts.insert(0, root.name)
        root = root.parent
    name = ".".join(parts)
    if not all(p.isidentifier() for p in parts):
        raise ValueError(f"{shown}: {name!r} is not an importable module name")
    top = sys.modules.get(parts[0]) if len(parts) > 1 else None
    if top is not None:
        where = getattr(top, "__file__", None) or next(iter(getattr(top, "__path__", [])), None)
        if where is None or not Path(where).resolve().is_relative_to(root):
            raise ValueError(f"{shown}: another module named {parts[0]} is already imported (from {where}); run the "
                             f"check in a fresh process")
    # The project's own modules first, and the model's folder last on sys.path:
    # a file beside model.py (a families.py, a torch.py) can then neither run
    # in their place nor replace them; only the file given, and what it imports
    # itself, runs.
    import families, model_files, position_schemes, torch_file  # noqa: F401,E401
    if str(root) not in sys.path:
        sys.path.append(str(root))
    try:
        with contextlib.redirect_stdout(sys.stderr):
            if len(parts) > 1:
                module = importlib.import_module(name)
                where = getattr(module, "__file__", None)
                if where is None or Path(where).resolve() != file:
                    raise ImportError(f"{name} was found at {where}, not at the file given")
                return module
            spec = importlib.util.spec_from_file_location(name, file)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            return module
    except (Exception, SystemExit) as e:
        sys.modules.pop(name, None)
        raise ValueError(f"{shown}: importing it failed: {type(e).__name__}: {_one_line(e)} (the file is run as your "
                         f"code, with the Python packages it imports)") from None


def _stripped(state, prefix, shown):
    """state without `prefix` in front of the names (nanoGPT's sample.py strips
    torch.compile's _orig_mod. the same way)."""
    out = {}
    for key, value in state.items():
        k = key[len(prefix):] if key.startswith(prefix) else key
        if k in out:
            raise ValueError(f"{shown}: {key!r} and another name both read as {k!r} without {prefix}")
        out[k] = value
    return out


def _checkpoint_parts(source, what, family):
    """(state_dict, model_args) of a nanoGPT / llama2.c train.py checkpoint, read by
    the project's reader (nothing in it runs); a bare state_dict gives model_args {}."""
    from families import tensors_by_name
    ckpt = torch_file.load_torch_file(source, what)
    if isinstance(ckpt, dict) and isinstance(ckpt.get("model"), dict):
        args = ckpt.get("model_args")
        if args is not None and not isinstance(args, dict):
            raise ValueError(f"{source}: model_args is a {type(args).__name__}, expected a dict")
        return tensors_by_name(ckpt["model"], source), dict(args or {})
    if family == "nanogpt" and isinstance(ckpt, dict):
        return tensors_by_name(ckpt, source), {}
    raise ValueError(f"{source}: expected {family}'s checkpoint, a dict with 'model' (the state_dict) and "
                     f"'model_args'")


def _with_config(args, config, source, recorded):
    """args updated with --module-config; a key the file records (`recorded`) may not be contradicted."""
    out = dict(args)
    for key, value in config.items():
        if key in recorded and recorded[key] is not None and recorded[key] != value:
            raise ValueError(f"--module-config {key} = {pickle_reader.shown(value)} but {source} records "
                             f"{key} = {pickle_reader.shown(recorded[key])}")
        out[key] = value
    return out


def _need(config, key, family, why):
    if key not in config:
        raise ValueError(f"--module with {family} needs your model's {key}: {why}; give it as your training did, "
                         f"e.g. --module-config '{{\"{key}\": 4}}' (not the export's --n-head: that is what this "
                         f"check verifies)")


def _fit(model, state, source, shown):
    """Load `state` into the user's model, strictly. A buffer the model computes
    itself at construction (the Annotated PositionalEncoding's pe, a causal-mask
    buffer) may differ from the file's in length only: the file's rows must then
    equal the model's own first rows, and the model keeps its own table; one the
    file lacks is the model's own. Returns notes saying so. ValueError naming the
    file and the model for anything else (torch's message: the names and shapes)."""
    notes = []
    saved = set(model.state_dict())          # parameters and persistent buffers
    state = dict(state)
    for name, buffer in model.named_buffers():
        if name not in saved:
            continue
        if name not in state:
            state[name] = buffer
            notes.append(f"{source} has no {name}: your model's own buffer kept")
            continue
        theirs = state[name]
        if theirs.shape == buffer.shape or theirs.dim() != buffer.dim():
            continue
        axes = [i for i in range(buffer.dim()) if theirs.shape[i] != buffer.shape[i]]
        if len(axes) != 1:
            continue
        rows = min(theirs.shape[axes[0]], buffer.shape[axes[0]])
        a, b = theirs.narrow(axes[0], 0, rows).float(), buffer.narrow(axes[0], 0, rows).float()
        if not torch.equal(a, b):
            diff = float((a - b).abs().max()) if torch.isfinite(a).all() and torch.isfinite(b).all() else float("nan")
            raise ValueError(f"{source}: {name} {list(theirs.shape)} differs from your model's own "
                             f"{list(buffer.shape)} on their first {rows} rows (by up to {diff:.3g})")
        state[name] = buffer
        notes.append(f"{name}: {source}'s {list(theirs.shape)} equals the first rows of your model's own "
                     f"{list(buffer.shape)}, which it keeps")
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        raise ValueError(f"{source} does not fit {shown}: {_one_line(e)[:600]}") from None
    return notes


def user_model(family, source, module_file, module_config=None):
    """Your model, as your own code builds it, holding FILE's weights: the model
    file is imported (import_model_file: it runs), its class built by the
    family's convention (MODULE_FAMILIES), the file's state_dict (read by the
    project's own reader: nothing in the checkpoint runs) loaded into it
    strictly, eval(). module_config: {name: value} of your model's settings
    the file does not record (minGPT's n_head, the Annotated make_model's h, ...),
    or a JSON text / file path (the command line's --module-config).
    Returns (model, notes). ValueError naming what does not fit."""
    import contextlib
    if family not in MODULE_FAMILIES:
        raise ValueError(f"--module does not apply to {family} (it builds the model of "
                         f"{', '.join(MODULE_FAMILIES)} from your model.py)")
    config = module_config if isinstance(module_config, dict) else _module_config(module_config)
    code = import_model_file(module_file)
    shown = f"your {Path(module_file).name}"

    def needs(*names):
        missing = [n for n in names if not hasattr(code, n)]
        if missing:
            raise ValueError(f"--module {module_file}: defines no {' and no '.join(missing)} ({family}'s model.py "
                             f"defines {MODULE_FAMILIES[family]})")
        return [getattr(code, n) for n in names]

    from families import layer_count
    if family in ("nanogpt", "llama2c"):
        state, recorded = _checkpoint_parts(source, f"{family} checkpoint", family)
        state = _stripped(state, "_orig_mod.", source)
        if family == "nanogpt":
            GPT, GPTConfig = needs("GPT", "GPTConfig")
            if not recorded:        # a bare state_dict: the sizes its tensors show
                recorded = {"n_layer": layer_count(state, "transformer.h.", source),
                            "vocab_size": int(state["transformer.wte.weight"].shape[0]),
                            "n_embd": int(state["transformer.wte.weight"].shape[1]),
                            "block_size": int(state["transformer.wpe.weight"].shape[0]),
                            "bias": "transformer.ln_f.bias" in state} if "transformer.wte.weight" in state else {}
                if "n_head" not in config:
                    _need(config, "n_head", family, f"{source} is a bare state_dict, without model_args")
            args = _with_config(recorded, config, source, recorded)
            build = lambda: GPT(GPTConfig(**args))   # noqa: E731
        else:
            Transformer, ModelArgs = needs("Transformer", "ModelArgs")
            args = _with_config(recorded, config, source, recorded)
            build = lambda: Transformer(ModelArgs(**args))   # noqa: E731
    elif family == "mingpt":
        (GPT,) = needs("GPT")
        state = load_state_dict_file(source)
        _need(config, "n_head", family, "a minGPT state_dict does not record it")
        if "transformer.wte.weight" not in state or "transformer.wpe.weight" not in state:
            raise ValueError(f"{source}: has no transformer.wte.weight / transformer.wpe.weight: not a minGPT "
                             f"state_dict")
        sizes = {"n_layer": layer_count(state, "transformer.h.", source),
                 "vocab_size": int(state["transformer.wte.weight"].shape[0]),
                 "n_embd": int(state["transformer.wte.weight"].shape[1]),
                 "block_size": int(state["transformer.wpe.weight"].shape[0])}

        def build():
            c = GPT.get_default_config()
            c.model_type = None
            for key, value in _with_config(sizes, config, source, sizes).items():
                setattr(c, key, value)
            return GPT(c)
    else:
        (make_model,) = needs("make_model")
        state = _without_parallel_prefix(load_state_dict_file(source), source)
        _need(config, "h", family, "a state_dict does not record the number of heads")
        for name in ("src_embed.0.lut.weight", "tgt_embed.0.lut.weight", "encoder.layers.0.feed_forward.w_1.weight"):
            if name not in state or state[name].dim() != 2:
                raise ValueError(f"{source}: has no 2-d {name}: not an Annotated Transformer state_dict")
        sizes = {"src_vocab": int(state["src_embed.0.lut.weight"].shape[0]),
                 "tgt_vocab": int(state["tgt_embed.0.lut.weight"].shape[0]),
                 "N": layer_count(state, "encoder.layers.", source),
                 "d_model": int(state["src_embed.0.lut.weight"].shape[1]),
                 "d_ff": int(state["encoder.layers.0.feed_forward.w_1.weight"].shape[0]), "dropout": 0.0}
        kwargs = _with_config(sizes, config, source, {k: v for k, v in sizes.items() if k != "dropout"})
        build = lambda: make_model(**kwargs)   # noqa: E731
    try:
        torch.manual_seed(0)             # only your code's own init, overwritten by the file
        with contextlib.redirect_stdout(sys.stderr):
            model = build()
    except (Exception, SystemExit) as e:
        raise ValueError(f"{shown} could not build the model ({MODULE_FAMILIES[family]}): "
                         f"{type(e).__name__}: {_one_line(e)[:400]}") from None
    if not isinstance(model, nn.Module):
        raise ValueError(f"{shown} built a {type(model).__name__}, not a torch nn.Module")
    notes = _fit(model, state, source, shown)
    return model.eval(), notes


__all__ += ["user_model", "import_model_file"]


# ----------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (exit 2), without the usage block."""

    def error(self, message):
        self.exit(2, f"tinyformer_export: error: {_one_line(message)} (see --help)\n")


def _one_line(text):
    """A message as one line: every run of whitespace (newlines, tabs) becomes one space."""
    return " ".join(str(text).split())


# What a stranger's file can still make Python raise past the readers' own
# checks: a size it claims and does not hold (MemoryError), nesting deeper than
# a recursive reader follows (RecursionError), a number too large for a C type
# (OverflowError), or torch refusing an allocation or a shape (RuntimeError).
# Each entry point reports them as one line naming the file, like any refusal;
# and any other exception too (Exception: a TypeError, a KeyError), as a bug
# of the converter met on that file: still one line, never a traceback.
INPUT_ERRORS = (MemoryError, RecursionError, OverflowError, RuntimeError, Exception)


def _input_error(path, e):
    """The one-line message of an INPUT_ERRORS exception met while working on
    `path` (the command's input file): `PATH: what happened (Type: detail)`."""
    text = _one_line(str(e))
    if len(text) > 300:
        text = text[:297] + "..."
    if isinstance(e, RuntimeError) and not isinstance(e, RecursionError) and str(path) in text:
        return text                      # torch's or our message that already names the file
    why = ("ran out of memory: a size it claims needs more than this machine has" if isinstance(e, MemoryError) else
           "nests deeper than Python's readers follow" if isinstance(e, RecursionError) else
           "holds a number too large for its type" if isinstance(e, OverflowError) else
           "could not be converted" if isinstance(e, RuntimeError) else
           "could not be converted: an error the converter does not expect (a bug: please report it with the file)")
    return f"{path}: {why} ({type(e).__name__}{': ' + text if text else ''})"


def _bool(text):
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _whole(least):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < least:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {least}, got {text!r}")
        return value
    return parse


def _eps(text):
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not FLOAT32_MIN_NORMAL <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive normal float32 below 1 (e.g. 1e-5), got {text!r}")
    return value


# The flag behind each keyword of the Python API, for the API's ValueErrors
# ("pad_id = 40: outside ...") on the command line.
_FLAG_OF = {"pad_id": "--pad-id", "bos_id": "--bos-id", "eos_id": "--eos-id", "max_len": "--max-len",
            "train_max_len": "--train-max-len", "prompt_suffix": "--prompt-suffix", "vocab": "--vocab",
            "src_vocab": "--src-vocab", "tokenizer": "--tokenizer", "dtype": "--dtype",
            "pos_embed.num_embeddings": "--max-len", "n_head": "--n-head"}


def _with_flag(message):
    """`--pad-id: pad_id = 40: ...` when the message is about a flag's value."""
    name = message.split(" = ")[0]
    name = name[4:-1] if name.startswith("len(") and name.endswith(")") else name.split("[")[0]
    flag = _FLAG_OF.get(name)
    return f"{flag}: {message}" if flag else message


# The readers of a state_dict file live with the reader of every PyTorch file
# (tools/python/torch_file.py), below the families that use them too.
load_state_dict_file = torch_file.load_state_dict_file
_without_parallel_prefix = torch_file.without_parallel_prefix


def _read_vocab(path, flag):
    try:
        with open(path, encoding="utf-8") as f:
            vocab = json.load(f)
    except OSError as e:
        raise ValueError(f"{flag} {path}: cannot read: {e.strerror or e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{flag} {path}: not JSON: {e}") from None
    if not isinstance(vocab, list):
        raise ValueError(f"{flag} {path}: expected a JSON array of token strings")
    return vocab


def _layer_count(state, prefix, shown):
    """n of the names `prefix.{i}.` for i = 0..n-1 (0 if none): families.layer_count,
    which refuses a gap or a name whose i is not a number, naming the file."""
    from families import layer_count
    return layer_count(state, prefix + ".", shown)


def _infer(args, key, value, flag, shown):
    """A size from the state_dict; a flag given must agree with it."""
    given = getattr(args, key)
    if given is not None and value is not None and given != value:
        raise ValueError(f"{flag} {given} but {shown} has {value}")
    if given is None and value is None:
        raise ValueError(f"{flag} is needed ({shown} does not tell)")
    return given if given is not None else value


def from_state_dict(args):
    shown = f"--from-state-dict {args.from_state_dict}"
    state = _without_parallel_prefix(load_state_dict_file(args.from_state_dict, shown), shown)

    def shape(name, dim):
        return int(state[name].shape[dim]) if name in state else None

    arch = args.arch
    embed_name = "src_embed.weight" if arch == "encoder_decoder" else "embed.weight"
    if embed_name not in state:
        attributes = ("src_embed, tgt_embed, pos_embed, transformer, generator" if arch == "encoder_decoder"
                      else "embed, pos_embed, transformer, lm_head")
        found = sorted({k.split(".")[0] for k in state})
        raise ValueError(f"{shown}: has no tensor {embed_name}, which an {arch} state_dict holds (FORMAT's "
                         f"attribute names: {attributes}; this file's names start with: "
                         f"{', '.join(found[:8]) or 'nothing, it is empty'}{', ...' if len(found) > 8 else ''})")
    layer0 = "transformer.encoder.layers.0" if arch == "encoder_decoder" else "transformer.layers.0"
    cfg = {"format": FORMAT_TAG, "arch": arch,
           "d_model": _infer(args, "d_model", shape(embed_name, 1), "--d-model", shown),
           "nhead": args.nhead,
           "dim_feedforward": _infer(args, "dim_feedforward", shape(layer0 + ".linear1.weight", 0),
                                     "--dim-feedforward", shown),
           "activation": args.activation, "norm_first": args.norm_first, "layer_norm_eps": args.layer_norm_eps,
           "max_len": args.max_len, "pos_encoding": args.pos_encoding, "embed_scale": not args.no_embed_scale}
    if arch == "encoder_decoder":
        cfg["num_encoder_layers"] = _infer(args, "num_encoder_layers",
                                           _layer_count(state, "transformer.encoder.layers", shown) or None,
                                           "--num-encoder-layers", shown)
        cfg["num_decoder_layers"] = _infer(args, "num_decoder_layers",
                                           _layer_count(state, "transformer.decoder.layers", shown) or None,
                                           "--num-decoder-layers", shown)
        cfg["src_vocab_size"] = shape("src_embed.weight", 0)
        cfg["tgt_vocab_size"] = shape("tgt_embed.weight", 0)
    else:
        cfg["num_layers"] = _infer(args, "num_layers", _layer_count(state, "transformer.layers", shown) or None,
                                   "--num-layers", shown)
        cfg["vocab_size"] = shape("embed.weight", 0)
        cfg["final_norm"] = "transformer.norm.weight" in state
        cfg["attention"] = "bidirectional" if arch == "encoder_only" else args.attention
    for key in ("src_vocab_size", "tgt_vocab_size", "vocab_size"):
        if key in cfg and cfg[key] is None:
            raise ValueError(f"{shown}: has no "
                             f"{'embed' if key == 'vocab_size' else key[:3] + '_embed'}.weight")
    if cfg["d_model"] % cfg["nhead"]:
        raise ValueError(f"--nhead {cfg['nhead']} does not divide d_model {cfg['d_model']}")
    if args.pos_encoding == "learned" and "pos_embed.weight" in state and args.max_len != shape("pos_embed.weight", 0):
        raise ValueError(f"--max-len {args.max_len} but {shown}'s pos_embed.weight has "
                         f"{shape('pos_embed.weight', 0)} rows")
    module = tm.build_module(cfg)
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as e:
        raise ValueError(f"{shown}: does not fit the modules built from the flags ({arch}): {e}") from None
    module.eval()
    vocab = _read_vocab(args.vocab, "--vocab") if args.vocab else None
    common = dict(pos_encoding=args.pos_encoding, pos_embed=getattr(module, "pos_embed", None),
                  embed_scale=not args.no_embed_scale, max_len=args.max_len, pad_id=args.pad_id, vocab=vocab,
                  tokenizer=args.tokenizer, train_max_len=args.train_max_len, dtype=args.dtype)
    if arch == "encoder_decoder":
        return export_encoder_decoder(args.out, transformer=module.transformer, src_embed=module.src_embed,
                                      tgt_embed=module.tgt_embed, generator=module.generator, bos_id=args.bos_id,
                                      eos_id=args.eos_id,
                                      src_vocab=_read_vocab(args.src_vocab, "--src-vocab") if args.src_vocab else None, **common)
    if arch == "decoder_only":
        return export_decoder_only(args.out, layers=module.transformer, embed=module.embed, lm_head=module.lm_head,
                                   attention=args.attention, bos_id=args.bos_id, eos_id=args.eos_id,
                                   prompt_suffix=args.prompt_suffix, **common)
    return export_encoder_only(args.out, layers=module.transformer, embed=module.embed, head=module.lm_head,
                               **common)


def main(argv=None):
    ap = _Parser(
        prog="tinyformer_export.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Export PyTorch Transformer weights as a tinyformer checkpoint (docs/FORMAT.md), "
                    "and check a checkpoint against PyTorch.",
        epilog="""modes:
  --from FAMILY FILE             convert a family's saved model, then check the file against
                                 the family's module holding FILE's weights (unless --no-check):
      nanogpt CKPT.pt [--meta meta.pkl] [--gelu tanh]         nanoGPT train.py's ckpt.pt (exact GELU
                                                              unless --gelu tanh: see --gelu)
      mingpt STATE.pt --n-head H                              minGPT state_dict
      annotated STATE.pt --n-head H [--src-vocab S.json] [--tgt-vocab T.json]
                                                              the Annotated Transformer's make_model
      hf-gpt2 FOLDER                                          Hugging Face GPT-2 (config.json +
                                                              model.safetensors / pytorch_model.bin)
      llama2c CKPT.pt [--tokenizer tokenizer.bin]             llama2.c train.py's ckpt.pt
      llama2c-bin MODEL.bin [--tokenizer tokenizer.bin]       llama2.c export.py's model.bin (v0, v1, or
                                                              v2: its int8 Q8_0 values and scales kept
                                                              as they are, not checked)
                                 annotated: without --bos-id, the target vocabulary's <s> (and
                                 </s> for --eos-id) when it has one; a FILE that another --from
                                 reads is named, with the command that converts it
  --from FAMILY FILE --quantize q8_0 [--group-size G]
                                 the same, with every linear layer's weight and the head stored
                                 as Q8_0: int8 values + a float32 scale per group of G (default
                                 64, llama2.c's) along the input axis K (docs/FORMAT.md); a G
                                 that does not divide a weight's K is refused, naming it. A tied
                                 head becomes its own Q8_0 copy (tie_embeddings false). Not
                                 checked: the engine quantizes each product's input as runq.c
                                 does, which differs from float32 by more than check's tolerance
  --check MODEL [--against FAMILY FILE [--module model.py [--module-config JSON]]]
                                 run check(): tinyformer forward vs PyTorch on random batches;
                                 prints the worst error and one OK or FAIL line (FAIL: exit 1).
                                 With --against (the flags as for --from) it compares with this
                                 project's module of that family holding FILE's weights, built
                                 from your flags: it prints "not verified: ..." (what it took on
                                 your word) and "OK MODEL: matches the reference built from your
                                 flags (...)". With --module too, it runs YOUR model file holding
                                 FILE's weights instead ("OK MODEL: tinyformer matches your module
                                 model.py: ..."), so a wrong --gelu / --n-head fails, naming the
                                 first attention that differs. Without --against, with stock
                                 modules rebuilt from MODEL's own settings (any layout the engine
                                 loads), which shows only that MODEL is consistent with them, not
                                 that it matches your model. A failure names the first attention
                                 (or the logits) that differs; tools/python/torch_trace.py finds
                                 the first activation inside the layer
  --module model.py              (nanogpt, mingpt, annotated, llama2c; also after --from) your
                                 model file, imported as your code (a file in a package, e.g.
                                 minGPT's mingpt/model.py, by its dotted name); the model built as
                                 the family builds it: nanogpt GPT(GPTConfig(**model_args)),
                                 llama2c Transformer(ModelArgs(**model_args)) (model_args from the
                                 checkpoint), mingpt GPT(GPT.get_default_config() with the file's
                                 sizes and --module-config's n_head), annotated make_model(the
                                 file's sizes, --module-config's h); FILE's weights (read without
                                 running anything) loaded strictly
  --from-state-dict STATE.pt     convert a saved state_dict whose names are FORMAT's (attributes
                                 src_embed, tgt_embed, pos_embed, transformer, generator /
                                 embed, pos_embed, transformer, lm_head); needs --arch and --out

What a state_dict cannot tell must be given: --nhead, --activation, --norm-first,
--max-len (and --attention for decoder_only). Sizes (d_model, dim_feedforward, layer
counts, vocabulary sizes, final norm) are read from the tensors' shapes; a flag that
disagrees with them is an error.

--from-state-dict reads the file with the project's own reader (tools/python/torch_file.py,
never torch.load): tensors only, nothing in it runs; a file that needs more (a pickled
module, other objects) is refused.
Names saved by nn.DataParallel (module. in front of each) are read without the prefix.
--out is written to a temporary file in its folder and renamed into place (a FIFO, a
device or /dev/stdout is written as a stream, and then the "wrote" line goes to stderr);
it may not be one of the inputs (also under another name or a link).

examples (from any folder; paths are taken as given):
  /usr/bin/python3 tools/python/tinyformer_export.py --check data/models/reverse.safetensors
  /usr/bin/python3 tools/python/tinyformer_export.py --check m.safetensors --against mingpt sort.pt \
      --module minGPT/mingpt/model.py --module-config '{"n_head": 3}'
  /usr/bin/python3 tools/python/tinyformer_export.py --from-state-dict model.pt --arch decoder_only \\
      --nhead 4 --activation gelu --norm-first true --max-len 64 --attention causal \\
      --vocab vocab.json --pad-id 0 --bos-id 1 --eos-id 2 --out model.safetensors

The Python API (export_encoder_decoder, export_decoder_only, export_encoder_only,
check) is described in the module's docstring: pydoc3 tools/python/tinyformer_export.py""")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", metavar="MODEL", help="check MODEL.safetensors against PyTorch")
    mode.add_argument("--from-state-dict", metavar="STATE.pt", help="convert a saved state_dict (torch.save)")
    mode.add_argument("--from", dest="from_family", nargs=2, metavar=("FAMILY", "FILE"),
                      help="convert a family's model: " + ", ".join(FAMILIES))
    ap.add_argument("--against", nargs=2, metavar=("FAMILY", "FILE"),
                    help="--check: compare with this model (the family's flags as for --from)")
    fam = ap.add_argument_group("--from / --against families")
    fam.add_argument("--n-head", type=_whole(1), help="mingpt, annotated (and nanogpt from a bare state_dict): "
                                                      "attention heads (a state_dict does not record them)")
    fam.add_argument("--meta", metavar="meta.pkl", help="nanogpt: the character vocabulary nanoGPT's prepare.py "
                                                       "wrote (read as plain data by the project's own unpickler: no code runs)")
    fam.add_argument("--gelu", choices=["exact", "tanh"], help="nanogpt: which GELU the checkpoint was trained with "
                                                              "(the ckpt does not record it). Default exact, nanoGPT's "
                                                              "nn.GELU since June 2023, printed as a note; tanh for "
                                                              "nanoGPT before mid-2023 (new_gelu)")
    fam.add_argument("--visible-controls", action="store_true",
                     help="nanogpt: store every control character of meta.pkl's vocabulary as its Control Picture "
                          "(\\n -> U+240A, \\t -> U+2409, \\r -> U+240D), as files converted before \\n and \\t "
                          "were tokens hold them: run then prints U+240A where the text had a newline. Without "
                          "it \\n and \\t are tokens of their own and another control character is refused")
    fam.add_argument("--tgt-vocab", metavar="FILE.json", help="annotated: target vocabulary (JSON array); "
                                                             "serves the source too unless --src-vocab")
    ap.add_argument("--module", metavar="model.py",
                    help="with --against / --from (nanogpt, mingpt, annotated, llama2c): check against YOUR model "
                         "code: this file is imported (it runs, as when you train with it), your model class built "
                         "by the family's convention and FILE's weights loaded into it")
    ap.add_argument("--module-config", metavar="JSON|FILE.json",
                    help="with --module: your model's settings the file does not record, as your training gave "
                         "them (a JSON object or a file holding one): mingpt '{\"n_head\": 3}', annotated "
                         "'{\"h\": 4}'; not the export's --n-head, which the check verifies")
    ap.add_argument("--batches", type=_whole(1), default=3, help="check: random batches (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="check: seed of the random batches (default 0)")
    g = ap.add_argument_group("--from-state-dict (and for --from: --out, --no-check, --max-len, --vocab, --src-vocab, "
                              "--tokenizer, --pad-id, --bos-id, --eos-id, --train-max-len, --dtype)")
    g.add_argument("--arch", choices=["encoder_decoder", "decoder_only", "encoder_only"])
    g.add_argument("--out", metavar="OUT.safetensors", help="the checkpoint to write")
    g.add_argument("--no-check", action="store_true", help="do not run check on the written file")
    g.add_argument("--d-model", type=_whole(1), help="d_model (default: from embedding shapes)")
    g.add_argument("--nhead", type=_whole(1), help="attention heads (required)")
    g.add_argument("--num-encoder-layers", type=_whole(1), help="encoder_decoder (default: counted)")
    g.add_argument("--num-decoder-layers", type=_whole(1), help="encoder_decoder (default: counted)")
    g.add_argument("--num-layers", type=_whole(1), help="decoder_only / encoder_only (default: counted)")
    g.add_argument("--dim-feedforward", type=_whole(1), help="default: from linear1's shape")
    g.add_argument("--activation", choices=["relu", "gelu"], help="required")
    g.add_argument("--norm-first", type=_bool, metavar="true|false", help="required: true = pre-LN, false = post-LN")
    g.add_argument("--layer-norm-eps", type=_eps, default=1e-5, help="default 1e-5")
    g.add_argument("--pos-encoding", choices=list(POS_ENCODINGS), default="sinusoidal", help="default sinusoidal")
    g.add_argument("--max-len", type=_whole(1), help="longest sequence the positions serve (required)")
    g.add_argument("--no-embed-scale", action="store_true", help="do not multiply embeddings by sqrt(d_model)")
    g.add_argument("--attention", choices=["causal", "prefix_lm"], default="causal",
                   help="decoder_only mask (default causal)")
    g.add_argument("--vocab", metavar="FILE.json", help="JSON array of token strings (target vocabulary)")
    g.add_argument("--src-vocab", metavar="FILE.json", help="encoder_decoder: source vocabulary, when it differs")
    g.add_argument("--tokenizer", metavar="NAME|tokenizer.bin",
                   help="char (default) or whitespace; for --from llama2c / llama2c-bin: llama2.c's tokenizer.bin "
                        "(its pieces and scores become the model's sentencepiece_bpe vocabulary; without it the "
                        "model takes ids)")
    g.add_argument("--prompt-suffix", help="decoder_only: text every prompt ends with")
    g.add_argument("--train-max-len", type=_whole(1), help="longest training input, in tokens")
    g.add_argument("--pad-id", type=_whole(0))
    g.add_argument("--bos-id", type=_whole(0))
    g.add_argument("--eos-id", type=_whole(0))
    g.add_argument("--dtype", choices=list(STORAGE), help="storage dtype (default: the tensors' own)")
    q = ap.add_argument_group("--from FAMILY FILE: int8 weights")
    q.add_argument("--quantize", choices=["q8_0"], help="store every linear layer's weight and the head as Q8_0 "
                                                       "(int8 + a float32 scale per group along K)")
    q.add_argument("--group-size", type=_whole(1), metavar="G", help="--quantize: numbers per group (default 64)")
    args = ap.parse_args(argv)

    torch.set_num_threads(1)
    if args.against and not args.check:
        ap.error("--against goes with --check MODEL")
    if args.module is not None and not (args.against or args.from_family):
        ap.error("--module goes with --check MODEL --against FAMILY FILE or --from FAMILY FILE")
    if args.module_config is not None and args.module is None:
        ap.error("--module-config goes with --module model.py")
    if args.module is not None and args.no_check:
        ap.error("--module is the check's; --no-check skips it")
    if args.quantize and not args.from_family:
        ap.error("--quantize goes with --from FAMILY FILE")
    if args.group_size is not None and not args.quantize:
        ap.error("--group-size goes with --quantize q8_0")
    if args.quantize and args.module is not None:
        ap.error("--module is the check's; a file written with --quantize is not checked (see --help)")
    family = None
    if args.from_family or args.against:
        family = (args.from_family or args.against)[0]
        if family not in FAMILIES:
            ap.error(f"{'--from' if args.from_family else '--against'} {family}: unknown family; expected one of "
                     f"{', '.join(FAMILIES)}")
    if args.module is not None and family not in MODULE_FAMILIES:
        ap.error(f"--module does not apply to {family} (it builds the model of {', '.join(MODULE_FAMILIES)} from "
                 f"your model.py)")
    if family not in LLAMA_FAMILIES:
        if args.tokenizer is None:
            args.tokenizer = "char"
        elif args.tokenizer not in TOKENIZERS:
            ap.error(f"--tokenizer {args.tokenizer}: expected one of {', '.join(TOKENIZERS)} (a tokenizer.bin goes "
                     f"with --from llama2c / llama2c-bin)")
    if args.from_family:
        return _main_from(ap, args)
    if args.against:
        return _main_check(args.check, args, args.against)
    path = args.check
    if args.from_state_dict:
        missing = [flag for flag, value in [("--arch", args.arch), ("--out", args.out), ("--nhead", args.nhead),
                                            ("--activation", args.activation), ("--norm-first", args.norm_first),
                                            ("--max-len", args.max_len)] if value is None]
        if missing:
            ap.error("--from-state-dict needs " + ", ".join(missing))
        inputs = [(flag, value) for flag, value in [("--from-state-dict", args.from_state_dict),
                                                    ("--vocab", args.vocab), ("--src-vocab", args.src_vocab)]
                  if value is not None]
        try:
            safe_write.check_outputs([("--out", args.out)], inputs)      # before any work
            stream = safe_write.is_stream(args.out)
            config = from_state_dict(args)
        except (ValueError, OSError) as e:
            print(f"tinyformer_export: error: {_one_line(_with_flag(str(e)))}", file=sys.stderr)
            return 1
        except INPUT_ERRORS as e:
            print(f"tinyformer_export: error: {_input_error(f'--from-state-dict {args.from_state_dict}', e)}",
                  file=sys.stderr)
            return 1
        status = sys.stderr if stream else sys.stdout      # a stream may be our own stdout: keep it the file's
        print(f"wrote {args.out}: {config['arch']}, d_model {config['d_model']}, nhead {config['nhead']}",
              file=status)
        if args.no_check:
            return 0
        if stream:
            print(f"not checked: {args.out} is a stream (a FIFO, a device or a file descriptor), it cannot be "
                  f"read back", file=status)
            return 0
        path = args.out
    return _main_check(path, args, None)


def _main_check(path, args, against, reference=None, reference_text=None, converted=None, family=None,
                unverified=None):
    """--check MODEL [--against FAMILY FILE [--module model.py]]; after --from, with
    the converter's reference (converted) or your module (--module).

    The verdict says what was compared: with --module, `OK MODEL: tinyformer
    matches your module model.py ...`; with the family's own module rebuilt from
    your flags, first the facts taken on your word (`not verified: ...`), then
    `OK MODEL: matches the reference built from your flags (...)`; without a
    reference, CONSISTENT. A failure is one line, `FAIL MODEL: ...`. With
    --module, --module-config's settings are listed as not verified."""
    try:
        if against is not None:
            family, source = against
            if args.module is not None:
                for flag, value in [("--n-head", args.n_head), ("--nhead", args.nhead), ("--gelu", args.gelu)]:
                    if value is not None:
                        raise ValueError(f"{flag} does not apply to --check with --module: your model code decides "
                                         f"it (the settings your training gave that the file does not record go "
                                         f"in --module-config)")
                reference, reference_text, unverified = _user_reference(family, source, args)
            else:
                converted = _convert_family(family, source, args, "--against")
                reference = converted.reference
                if reference is None:
                    raise ValueError(f"--against {family}: the converter gave no module to compare with")
                reference_text = f"this project's {family} module holding {source}'s weights"
        if converted is not None and args.module is None:
            unverified = _unverified(family, args, converted)
        ref = None
        if reference is not None:
            if not os.path.isfile(path):
                raise OSError(f"--check {path}: no such file")
            try:
                cfg = st.metadata_json(st.read_header(path)[1], "config")
            except (KeyError, ValueError) as e:
                raise ValueError(f"{path}: not a tinyformer checkpoint ({e})") from None
            ref = _reference_for(reference, cfg)
            if reference_text:
                ref.description = reference_text
        worst = check(path, ref, n_batches=args.batches, seed=args.seed, verbose=True)
    except CheckError as e:
        if unverified is not None:
            print(unverified)
        print(f"FAIL {path}: {e}")
        return 1
    except (OSError, ValueError) as e:
        print(f"tinyformer_export: error: {_one_line(_with_flag(str(e)))}", file=sys.stderr)
        return 1
    except INPUT_ERRORS as e:
        print(f"tinyformer_export: error: {_input_error(against[1] if against is not None else path, e)}",
              file=sys.stderr)
        return 1
    print(f"worst |a-b| / (1e-4 + 1e-4|b|) = {worst:.3g}")
    if unverified is not None:
        print(unverified)
    if worst > 1.0:
        print(f"FAIL {path}")
        return 1
    if ref is None:
        print(f"OK {path}: {CONSISTENT}")
    elif args.module is not None:
        print(f"OK {path}: tinyformer matches {ref.description}"
              + (" (built with your --module-config)" if unverified else ""))
    else:
        print(f"OK {path}: matches the reference built from your flags ({ref.description}; your own model code was "
              f"not run" + (": --module model.py runs it)" if family in MODULE_FAMILIES else ")"))
    return 0


# Where a fact the converter took on the caller's word came from, by (family, key).
_ASSUMED_FROM = {("mingpt", "gelu"): "minGPT's NewGELU, assumed"}


def _unverified(family, args, converted):
    """The `not verified: ...` line: each fact of the file that the converter took
    from the flags (or a default, or the family's usual code) because the file
    does not record it, which the check against the family's own module, built
    from the same facts, cannot catch. Only --module (your code) verifies them."""
    facts = []
    if family == "nanogpt":            # the flag's value: None (the converter's default, exact), "exact", "tanh"
        facts.append(f"gelu={args.gelu or 'exact'} ({'your flag' if args.gelu else 'default'})")
    for key, value in getattr(converted, "assumed", {}).items():
        facts.append(f"{key}={value} ({_ASSUMED_FROM.get((family, key), 'your flag')})")
    if family not in MODULE_FAMILIES:
        return (f"not verified: your model code (the reference is this project's {family} module; --module does "
                f"not apply to {family})")
    if not facts:
        return (f"not verified: your model code (the reference is this project's {family} module): pass --module "
                f"model.py to check it")
    return f"not verified: {', '.join(facts)}: pass --module model.py to check them"


def _user_reference(family, source, args):
    """(your model holding FILE's weights, its description, the `not verified`
    line or None) for --module; the loader's notes printed. The settings given
    in --module-config are your word as much as --n-head is: your code was
    built with them, so the check cannot catch a wrong one; they are listed."""
    config = _module_config(args.module_config)
    try:
        model, notes = user_model(family, source, args.module, config)
    except INPUT_ERRORS as e:
        raise _foreign(family, source, "--against" if args.against else "--from") or e
    for note in notes:
        print(f"note: {note}")
    unverified = None
    if config:
        facts = ", ".join(f"{k}={_shown_value(v)}" for k, v in config.items())
        unverified = (f"not verified: {facts} (your --module-config): your model was built with them, as your "
                      f"training config should have it")
    return model, f"your module {args.module}: {type(model).__name__} holding {source}'s weights", unverified


FAMILIES = ("nanogpt", "mingpt", "annotated", "hf-gpt2", "llama2c", "llama2c-bin")
LLAMA_FAMILIES = ("llama2c", "llama2c-bin")
_FAMILY_NEEDS = {"mingpt": [("--n-head", "n_head")], "annotated": [("--n-head", "n_head")]}
_FAMILY_FLAGS = {"nanogpt": {"meta", "gelu", "n_head"}, "mingpt": {"n_head"}, "annotated": {"n_head", "tgt_vocab"},
                 "hf-gpt2": set(), "llama2c": set(), "llama2c-bin": set()}


def _convert_family(family, source, args, mode):
    """The family's converter on FILE with the flags given (families/*.py).
    When it fails on a file that another --from reads (or that no --from
    reads: a PNG, a meta.pkl, a tinyformer checkpoint), the error names what
    the file is and the command that takes it (model_files.identify); a
    failure on a file of the family named keeps the converter's own message."""
    try:
        return _convert_family_as_given(family, source, args, mode)
    except INPUT_ERRORS as e:
        raise _foreign(family, source, mode) or e


def _foreign(family, source, mode):
    """A ValueError naming what `source` is and the command that takes it, when
    it is a file of another family (or of none: a PNG, a meta.pkl, a tinyformer
    checkpoint); None when it looks like `family`'s own, whose reader's message
    then stands (model_files.identify)."""
    import model_files
    try:
        kind = model_files.identify(source)
    except INPUT_ERRORS:
        return None
    if kind is None or family in kind.families:
        return None
    return ValueError(f"{mode} {family} {source}: this is {kind.what}, not what --from {family} reads; "
                      f"{kind.way_out}")


def _convert_family_as_given(family, source, args, mode):
    """_convert_family without the naming of a file of another kind."""
    for flag, key in [("--n-head", "n_head"), ("--meta", "meta"), ("--gelu", "gelu"), ("--tgt-vocab", "tgt_vocab")]:
        if getattr(args, key) is not None and key not in _FAMILY_FLAGS[family]:
            raise ValueError(f"{flag} does not apply to {mode} {family}")
    if args.visible_controls and family != "nanogpt":
        raise ValueError(f"--visible-controls does not apply to {mode} {family} (only nanogpt reads meta.pkl)")
    if args.n_head is None and args.nhead is not None and "n_head" in _FAMILY_FLAGS[family]:
        args.n_head = args.nhead           # --nhead, the --from-state-dict spelling, means the same
    missing = [flag for flag, key in _FAMILY_NEEDS.get(family, []) if getattr(args, key) is None]
    if missing:
        raise ValueError(f"{mode} {family} needs {', '.join(missing)}")
    shown = f"{mode} {family} {source}"
    if family in LLAMA_FAMILIES:
        return _convert_llama2c(family, source, args, mode)
    if family == "annotated":
        from families import annotated
        tgt = _read_vocab(args.tgt_vocab, "--tgt-vocab") if args.tgt_vocab else (
            _read_vocab(args.vocab, "--vocab") if args.vocab else None)
        src = _read_vocab(args.src_vocab, "--src-vocab") if args.src_vocab else None
        return annotated.convert_annotated(source, n_head=args.n_head, src_vocab=src, tgt_vocab=tgt,
                                           max_len=args.max_len, pad_id=args.pad_id, bos_id=args.bos_id,
                                           eos_id=args.eos_id, tokenizer=args.tokenizer,
                                           train_max_len=args.train_max_len, shown=shown)
    import importlib
    module_name, function = {"nanogpt": ("families.gpt", "convert_nanogpt"), "mingpt": ("families.gpt", "convert_mingpt"),
                             "hf-gpt2": ("families.hf_gpt2", "convert_hf_gpt2")}[family]
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"{mode} {family}: tools/python/{module_name.replace('.', '/')}.py cannot be imported "
                         f"({e})") from None
    convert = getattr(module, function, None)
    if convert is None:
        raise ValueError(f"{mode} {family}: tools/python/{module_name.replace('.', '/')}.py has no {function} yet")
    extras = {k: v for k, v in [("eos_id", args.eos_id), ("train_max_len", args.train_max_len),
                                ("prompt_suffix", args.prompt_suffix)] if v is not None}
    if args.vocab and family != "hf-gpt2":
        extras.update(vocab=_read_vocab(args.vocab, "--vocab"), tokenizer=args.tokenizer)
    if family == "nanogpt":
        return convert(source, meta=args.meta, gelu=args.gelu, n_head=args.n_head,
                       visible_controls=args.visible_controls, **extras)
    if family == "mingpt":
        return convert(source, n_head=args.n_head, **extras)
    return convert(source)


def _convert_llama2c(family, source, args, mode):
    """--from llama2c CKPT.pt / llama2c-bin MODEL.bin [--tokenizer tokenizer.bin] (families/llama.py)."""
    for flag, value in [("--vocab", args.vocab), ("--src-vocab", args.src_vocab), ("--prompt-suffix", args.prompt_suffix),
                        ("--bos-id", args.bos_id), ("--pad-id", args.pad_id), ("--max-len", args.max_len)]:
        if value is not None:
            raise ValueError(f"{flag} does not apply to {mode} {family} (the model's vocabulary is its tokenizer.bin: "
                             f"--tokenizer; bos 1 and eos 2 are llama2.c's, max_len is its max_seq_len)")
    from families import llama
    convert = llama.convert_llama2c_checkpoint if family == "llama2c" else llama.convert_llama2c_bin
    converted = convert(source, tokenizer=args.tokenizer)
    if args.eos_id is not None:
        converted.config["eos_id"] = args.eos_id
    if args.train_max_len is not None:
        converted.metadata["train_max_len"] = args.train_max_len
    return converted


def _main_from(ap, args):
    family, source = args.from_family
    if args.out is None:
        missing = ["--out"] + [flag for flag, key in _FAMILY_NEEDS.get(family, [])
                               if getattr(args, key) is None and args.nhead is None]
        ap.error(f"--from {family} needs {', '.join(missing)}")
    inputs = [(flag, value) for flag, value in [("--from", source), ("--meta", args.meta), ("--vocab", args.vocab),
                                                ("--src-vocab", args.src_vocab), ("--tgt-vocab", args.tgt_vocab),
                                                ("--tokenizer", args.tokenizer if family in LLAMA_FAMILIES else None)]
              if value is not None]
    if family == "hf-gpt2" and os.path.isdir(source):   # the folder's own files are inputs too
        inputs += [("--from", os.path.join(source, name)) for name in ("model.safetensors", "pytorch_model.bin",
                                                                       "config.json", "vocab.json", "merges.txt")
                   if os.path.exists(os.path.join(source, name))]
    try:
        safe_write.check_outputs([("--out", args.out)], inputs)
        stream = safe_write.is_stream(args.out)
        converted = _convert_family(family, source, args, "--from")
        if args.quantize:
            from families import quantize_converted
            quantize_converted(converted, 64 if args.group_size is None else args.group_size)
        config = write_converted(args.out, converted, dtype=args.dtype)
    except (ValueError, OSError) as e:
        print(f"tinyformer_export: error: {_one_line(_with_flag(str(e)))}", file=sys.stderr)
        return 1
    except INPUT_ERRORS as e:
        print(f"tinyformer_export: error: {_input_error(source, e)}", file=sys.stderr)
        return 1
    status = sys.stderr if stream else sys.stdout
    print(f"wrote {args.out}: {family} -> {config['arch']}, d_model {config['d_model']}, nhead {config['nhead']}",
          file=status)
    for note in getattr(converted, "notes", []):
        print(f"note: {note}", file=status)
    if args.no_check:
        return 0
    if stream:
        print(f"not checked: {args.out} is a stream (a FIFO, a device or a file descriptor), it cannot be read back",
              file=status)
        return 0
    if any(t.dtype == torch.int8 for t in converted.tensors.values()):
        print(f"not checked: {args.out} holds Q8_0 weights, and the engine quantizes each product's input as runq.c "
              f"does, so its logits differ from float32 by more than check's tolerance by design "
              f"(tests/python/test_q8_0_files.py holds them to a numpy model of that arithmetic)", file=status)
        return 0
    if args.module is not None:
        try:
            reference, text, unverified = _user_reference(family, source, args)
        except (ValueError, OSError) as e:
            print(f"tinyformer_export: error: {_one_line(_with_flag(str(e)))}", file=sys.stderr)
            return 1
        except INPUT_ERRORS as e:
            print(f"tinyformer_export: error: {_input_error(source, e)}", file=sys.stderr)
            return 1
        return _main_check(args.out, args, None, reference, text, unverified=unverified)
    try:
        reference = converted.reference     # built here, only for the check: --no-check never holds it
    except (ValueError, OSError) as e:
        print(f"tinyformer_export: error: {_one_line(_with_flag(str(e)))}", file=sys.stderr)
        return 1
    if reference is None:
        print(f"not checked: the {family} converter gave no module to compare with", file=status)
        return 0
    return _main_check(args.out, args, None, reference,
                       f"this project's {family} module holding {source}'s weights", converted, family)


# ----------------------------------------------------------------------------
# generate(): the model's continuation, by `tinyformer run` (helper C's part)
# ----------------------------------------------------------------------------

def generate(path, prompt, *, max_new_tokens=None, temperature=None, top_k=None, top_p=None, seed=0, ids=False):
    """The continuation tinyformer generates for `prompt` with the model file
    `path`: it runs `build/tinyformer run` ($TINYFORMER_BIN, as check runs
    `forward`), so the tokens are exactly the command line's.

    prompt: text (ids=False; through the model's tokenizer, framed as `run`
        frames it: <bos>, the prompt suffix) -> returns the output text as
        `run` prints it (a newline or a tab as itself, any other control
        character shown escaped); or a list of
        token ids (ids=True; `run --ids`) -> returns the output's token ids
        (`run --print-ids`), without <bos>/<eos>.
    max_new_tokens: at most this many new tokens, never past the model's
        max_len (None: run's default, 1024 for a model with an eos_id, 64 for
        one without, which never stops by itself).
    temperature (> 0), top_k (>= 1), top_p (0 < p <= 1): any of them given
        turns sampling on (models/decoding.h: softmax(logits / T), top-k,
        then top-p, renormalised, drawn with the engine's SplitMix64);
        None of them: greedy decoding.
    seed: the draws' seed (an int >= 0): the same seed makes the same draws
        on every machine (the same tokens unless a draw falls within float
        rounding of the edge between two tokens); only with sampling (a seed
        other than 0 without it is refused, as `run --seed` is).
    Raises ValueError for settings `run` refuses as usage errors (exit 2,
    its message naming the flag), RuntimeError when `run` fails otherwise
    (exit 1: the file, the prompt), FileNotFoundError without the binary."""
    def whole(name, value, least):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"generate: {name} must be an int >= {least}, got {value!r}")
        return str(value)

    def number(name, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"generate: {name} must be a number, got {value!r}")
        return repr(float(value))  # run refuses nan, inf and the values out of range

    command = [tinyformer_binary(), "run", os.fspath(path)]
    if max_new_tokens is not None:
        command += ["--max-new-tokens", whole("max_new_tokens", max_new_tokens, 1)]
    sampling = [name for name, value in (("temperature", temperature), ("top_k", top_k), ("top_p", top_p))
                if value is not None]
    if temperature is not None:
        command += ["--temperature", number("temperature", temperature)]
    if top_k is not None:
        command += ["--top-k", whole("top_k", top_k, 1)]
    if top_p is not None:
        command += ["--top-p", number("top_p", top_p)]
    whole("seed", seed, 0)
    if sampling:
        command += ["--seed", str(seed)]
    elif seed != 0:
        raise ValueError(f"generate: seed={seed} seeds sampling, which is off; give temperature, top_k or top_p")
    if ids:
        if isinstance(prompt, (str, bytes)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in prompt):
            raise ValueError(f"generate: with ids=True the prompt is a list of token ids, got {prompt!r}")
        command += ["--print-ids", "--ids", ",".join(str(i) for i in prompt)]
    else:
        if not isinstance(prompt, str):
            raise ValueError(f"generate: the prompt is text (or token ids with ids=True), got {prompt!r}")
        command += ["--", prompt]  # a prompt that starts with "--" is text, not a flag
    run = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if run.returncode == 2:
        raise ValueError(run.stderr.strip())
    if run.returncode != 0:
        raise RuntimeError(f"tinyformer run failed (exit {run.returncode}): {run.stderr.strip()}")
    line = run.stdout[:-1] if run.stdout.endswith("\n") else run.stdout
    if ids:
        return [int(i) for i in line.split(",")] if line else []
    return line


__all__.append("generate")


if __name__ == "__main__":
    sys.exit(main())
