#!/usr/bin/python3
"""The writer of a tinyformer file (docs/FORMAT.md): the rules the engine's
loader applies to a config, its vocabularies and its tensors, checked here
before anything is written, and the write itself (through safe_write.py, the
one writer of every Python output).

    write_converted(path, converted, dtype=None)   a families.Converted (a family
                                                   converter's output) -> the config written
    check_vocabulary(name, vocab, tokenizer)       FORMAT's vocabulary rules
    check_merges(name, merges, vocab)              gpt2_bpe's merges rules
    GPT2_BYTE_CHARACTERS                           {character: byte} of gpt2_bpe tokens

It sits below both of its users: the families (tools/python/families, whose
write_converted is this one) and tinyformer_export.py (export_* write through
_write, and check() finds the modules they remember in _REGISTRY). It imports
neither. Every refusal is a ValueError "WHAT = VALUE: the rule" in one line.
Standard library, numpy and torch.
"""

import copy
import hashlib
import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import q8_0  # noqa: E402  (the Q8_0 weights' names and scales)
import safe_write  # noqa: E402
import safetensors_io as st  # noqa: E402
import torch_file  # noqa: E402  (release: a written tensor's mapped pages)

__all__ = ["write_converted", "check_vocabulary", "check_merges", "is_special_token", "GPT2_BYTE_CHARACTERS",
           "FORMAT_TAG", "TOKENIZERS", "CONVERTED_TOKENIZERS", "STORAGE", "MAX_SIZE", "SIZE_KEYS"]

FORMAT_TAG = "tinyformer/1"
TOKENIZERS = ("char", "whitespace")
STORAGE = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
FLOAT32_MIN_NORMAL = float(np.finfo(np.float32).tiny)


# ----------------------------------------------------------------------------
# The file's rules, as the engine's loader applies them
# ----------------------------------------------------------------------------

def _refuse(path, value, why):
    raise ValueError(f"{path} = {value!r}: {why}")


class _Desc:
    """Shows as the given text inside a {!r} (for _refuse with modules and callables)."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _check_ids(ids, sizes):
    """ids: {name: value or None}; sizes: {name: [(vocabulary size, what it is)]}."""
    out = {}
    for name, value in ids.items():
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            _refuse(name, value, "expected an int token id")
        for size, what in sizes[name]:
            if not 0 <= value < size:
                _refuse(name, value, f"outside the {what} 0..{size - 1}")
        out[name] = value
    return out


def _check_vocab(name, vocab, size, size_path, tokenizer):
    if vocab is None:
        return None
    if isinstance(vocab, (str, bytes)) or not hasattr(vocab, "__len__"):
        _refuse(name, _Desc(type(vocab).__name__), "expected a list of token strings")
    vocab = list(vocab)
    if len(vocab) != size:
        _refuse(f"len({name})", len(vocab), f"does not match {size_path} = {size}")
    check_vocabulary(name, vocab, tokenizer)
    return vocab


SPECIAL_TOKEN = re.compile(r"<[a-z0-9_]+>")   # FORMAT's special tokens: the whole token, fullmatch
WHITESPACE = " \t\n\r\v\f"                    # what the "whitespace" tokenizer splits on (models/tokenizers/tokenizer.h)
MAX_SIZE = 1 << 24                              # tinyformer's limit on every size of the config (models/config.cpp)
SIZE_KEYS = ("d_model", "nhead", "dim_feedforward", "max_len", "num_encoder_layers", "num_decoder_layers",
             "num_layers", "src_vocab_size", "tgt_vocab_size", "vocab_size")


def is_special_token(token):
    """'<' + one or more of [a-z0-9_] + '>' (docs/FORMAT.md): <pad>, <eos>, <sep>; not <3 or <=."""
    return SPECIAL_TOKEN.fullmatch(token) is not None


def check_vocabulary(name, vocab, tokenizer):
    """docs/FORMAT.md's vocabulary rules, as the engine's loader applies them
    (models/tokenizers/tokenizer.h, check_vocabulary): ValueError naming name[index], the
    entry and the rule it breaks."""
    if len(vocab) == 0:
        _refuse(name, vocab, "a vocabulary holds at least one token")
    seen = {}
    for i, token in enumerate(vocab):
        where = f"{name}[{i}]"
        if not isinstance(token, str):
            _refuse(where, token, "every token must be a string")
        if not token:
            _refuse(where, token, "every token needs at least one character")
        for at, c in enumerate(token):
            if 0xD800 <= ord(c) <= 0xDFFF:
                _refuse(where, token, f"holds a lone surrogate U+{ord(c):04X} at character {at}, which is no "
                                      f"character (tokens are UTF-8 text)")
            # llama2.c's tokenizer.bin has pieces ending in "\r" and single C1 characters: the engine
            # keeps them for sentencepiece_bpe (shown escaped), and refuses them in every other vocabulary,
            # but for a char vocabulary's newline and tab, tokens of their own (a text's characters).
            text_control = tokenizer == "char" and token in ("\n", "\t")
            if (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F) and tokenizer != "sentencepiece_bpe" and not text_control:
                _refuse(where, token, f"holds the control character U+{ord(c):04X} at character {at}; no token may "
                                      f"hold a control character (C0, DEL or C1; a \"char\" vocabulary's \"\\n\" "
                                      f"and \"\\t\" excepted)")
        special = is_special_token(token)
        if tokenizer == "char" and len(token) != 1 and not special:
            _refuse(where, token, f'is {len(token)} characters; tokenizer "char" needs one character per token '
                                  f'(special tokens: "<" + [a-z0-9_]+ + ">"); use tokenizer="whitespace" for words')
        if tokenizer == "whitespace" and any(c in WHITESPACE for c in token):
            _refuse(where, token, 'tokenizer "whitespace" splits on whitespace; a token cannot hold any')
        if tokenizer == "gpt2_bpe":
            _check_gpt2_bpe_token(where, token)
        if token in seen:
            _refuse(where, token, f"appears twice (also {name}[{seen[token]}]); no two entries may be equal")
        seen[token] = i


# --- gpt2_bpe (GPT-2 byte-level BPE, models/tokenizers/gpt2_bpe.h): the vocabulary's and merges' rules ---

def _gpt2_byte_characters():
    """{character: byte}: the characters a gpt2_bpe token is written in. The
    printable Latin-1 bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand for
    themselves; the other 68 bytes, in increasing order, for U+0100, U+0101, ...
    (models/tokenizers/gpt2_bpe.h, rule 2)."""
    table, other = {}, 0x100
    for byte in range(256):
        if 0x21 <= byte <= 0x7E or 0xA1 <= byte <= 0xAC or byte >= 0xAE:
            table[chr(byte)] = byte
        else:
            table[chr(other)] = byte
            other += 1
    return table


GPT2_BYTE_CHARACTERS = _gpt2_byte_characters()


def _check_gpt2_bpe_token(where, token):
    for at, c in enumerate(token):
        if c not in GPT2_BYTE_CHARACTERS:
            _refuse(where, token, f"holds {c!r} (U+{ord(c):04X}) at character {at}, which stands for no byte; a "
                                  f'"gpt2_bpe" token is written one character per byte (printable Latin-1 as itself, '
                                  f"the other bytes as U+0100..U+0143)")


def check_merges(name, merges, vocab):
    """The gpt2_bpe "merges" rules (docs/FORMAT.md; models/tokenizers/gpt2_bpe.h,
    check_merges): each entry "left right" (exactly one space, both sides
    non-empty), both sides and their concatenation in `vocab`, no pair twice.
    ValueError naming name[index], the entry and the rule."""
    tokens = set(vocab)
    seen = {}
    for i, merge in enumerate(merges):
        where = f"{name}[{i}]"
        if not isinstance(merge, str):
            _refuse(where, merge, "every merge must be a string")
        parts = merge.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            _refuse(where, merge, 'is not "left right": two tokens separated by exactly one space')
        left, right = parts
        for side, token in (("left side", left), ("right side", right), ("merged token", left + right)):
            if token not in tokens:
                _refuse(where, merge, f"its {side} {token!r} is not in the vocabulary")
        if merge in seen:
            _refuse(where, merge, f"is the same pair as {name}[{seen[merge]}]; no pair may be merged twice")
        seen[merge] = i


def _check_scores(scores, vocab):
    """sentencepiece_bpe (llama2.c's tokenizer.bin): one finite float32 score per vocab entry."""
    if vocab is None:
        _refuse("vocab", None, 'tokenizer "sentencepiece_bpe" needs its vocabulary (the pieces)')
    if scores is None or isinstance(scores, (str, bytes)) or not hasattr(scores, "__len__"):
        _refuse("scores", _Desc(type(scores).__name__), 'tokenizer "sentencepiece_bpe" needs a list of scores, one '
                                                        'per piece')
    scores = list(scores)
    if len(scores) != len(vocab):
        _refuse("len(scores)", len(scores), f"does not match len(vocab) = {len(vocab)}")
    for i, x in enumerate(scores):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not np.isfinite(np.float32(x)):
            _refuse(f"scores[{i}]", x, "expected a finite float32 number")
    return [float(np.float32(x)) for x in scores]


def _check_prompt_suffix(prompt_suffix, vocab, tokenizer):
    """The suffix must encode with the model's tokenizer into ordinary tokens
    (never a special token, never <unk>), as the engine's loader requires."""
    if vocab is None:
        _refuse("prompt_suffix", prompt_suffix, "needs a vocab to be read with")
    pieces = list(prompt_suffix) if tokenizer == "char" else re.split(f"[{re.escape(WHITESPACE)}]+", prompt_suffix)
    pieces = [p for p in pieces if p]
    if not pieces:
        _refuse("prompt_suffix", prompt_suffix, "holds no token")
    for piece in pieces:
        if piece not in vocab:
            _refuse("prompt_suffix", prompt_suffix, f"its token {piece!r} is not in the vocabulary")
        if is_special_token(piece):
            _refuse("prompt_suffix", prompt_suffix, f"its token {piece!r} is a special token, which text never "
                                                    f"encodes to: the suffix could not be typed")


def _check_engine_limits(config, meta, sources):
    """The limits tinyformer's loader applies to a config (models/config.cpp) and
    its metadata, checked before anything is written. sources: {config key: the
    attribute or argument it was read from}, for the message."""
    for key in SIZE_KEYS:
        if key in config and not 1 <= config[key] <= MAX_SIZE:
            _refuse(sources.get(key, key), config[key], f"above tinyformer's limit of 2^24 = {MAX_SIZE} "
                                                        f"(config '{key}')")
    if "train_max_len" in meta and int(meta["train_max_len"]) > MAX_SIZE:
        _refuse("train_max_len", int(meta["train_max_len"]), f"above tinyformer's limit of 2^24 = {MAX_SIZE}")


def _common_metadata(tokenizer, train_max_len):
    if tokenizer not in TOKENIZERS:
        _refuse("tokenizer", tokenizer, "expected one of " + ", ".join(f'"{t}"' for t in TOKENIZERS))
    meta = {"tokenizer": tokenizer}
    if train_max_len is not None:
        if not isinstance(train_max_len, int) or isinstance(train_max_len, bool) or train_max_len < 1:
            _refuse("train_max_len", train_max_len, "expected a positive int")
        meta["train_max_len"] = str(train_max_len)
    return meta


# ----------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------

# path (resolved) -> {"sha256", "arch", "parts": float32 copies of the modules}
_REGISTRY = {}


def _q8_names(tensors):
    """The names of the Q8_0 weights (int8 tensors) and of their scales
    (docs/FORMAT.md: NAME I8 [N, K] beside NAME.scale F32 [N, K / G]), checked:
    each I8 tensor is a matrix with its scales, finite and >= 0, of a group
    size dividing K; each .scale tensor scales an I8 one. These keep their dtypes
    whatever the storage dtype of the others."""
    names = set()
    for name, t in tensors.items():
        if t.dtype != torch.int8:
            continue
        scale = tensors.get(name + q8_0.SCALE_SUFFIX)
        if t.dim() != 2:
            _refuse(f"{name}.shape", list(t.shape), "a Q8_0 weight (int8) is a matrix [N, K]")
        if scale is None:
            _refuse(name + q8_0.SCALE_SUFFIX, None, f"{name} is int8 (Q8_0) and needs its float32 scales [N, K / G]")
        n, k = t.shape
        if scale.dtype != torch.float32:
            _refuse(f"{name}{q8_0.SCALE_SUFFIX}.dtype", _Desc(str(scale.dtype)), "Q8_0 scales are float32")
        if scale.dim() != 2 or scale.shape[0] != n or scale.shape[1] < 1 or k % scale.shape[1]:
            _refuse(f"{name}{q8_0.SCALE_SUFFIX}.shape", list(scale.shape),
                    f"expected [{n}, groups] with groups dividing K = {k}")
        if not bool(torch.isfinite(scale).all()) or bool((scale < 0).any()):
            _refuse(name + q8_0.SCALE_SUFFIX, _Desc("a scale that is NaN, inf or negative"),
                    "a Q8_0 scale is a finite number >= 0")
        if bool((t == -128).any()):
            _refuse(name, _Desc("a value -128"), "Q8_0 values lie in -127..127")
        names.update((name, name + q8_0.SCALE_SUFFIX))
    for name in tensors:
        if name.endswith(q8_0.SCALE_SUFFIX) and name not in names:
            _refuse(name, _Desc("scales"), f"scale a Q8_0 weight, but {name[:-len(q8_0.SCALE_SUFFIX)]} is not int8")
    return names


def _storage(tensors, dtype):
    """The storage dtype name: forced, or the one dtype the tensors have (the
    Q8_0 weights and their scales aside: _q8_names)."""
    if dtype is not None:
        if dtype not in STORAGE:
            _refuse("dtype", dtype, "expected one of " + ", ".join(f'"{d}"' for d in STORAGE))
        return dtype
    by_dtype = {}
    quantized = _q8_names(tensors)
    for name, t in tensors.items():
        if name in quantized:
            continue
        by_dtype.setdefault(t.dtype, name)
    names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}
    for torch_dtype, name in by_dtype.items():
        if torch_dtype not in names:
            _refuse(f"{name}.dtype", _Desc(str(torch_dtype)),
                    'FORMAT stores F32, F16 or BF16; convert the modules or pass dtype="F32"')
    if len(by_dtype) > 1:
        (d1, n1), (d2, n2) = list(by_dtype.items())[:2]
        _refuse(f"{n2}.dtype", _Desc(str(d2)), f"differs from {n1}.dtype = {d1}; pass dtype=\"F32\", \"F16\" "
                                               f"or \"BF16\" to store them all as one")
    return names[next(iter(by_dtype))] if by_dtype else "F32"


BLOCK_BYTES = 16 << 20     # a tensor is checked and written in row blocks of about this many bytes


def _row_blocks(t):
    """`t` in consecutive blocks of whole rows (along its first dimension), each
    about BLOCK_BYTES: a transposed view becomes contiguous one block at a time,
    never as a whole second copy. A tensor of fewer than 2 dimensions is one block."""
    if t.dim() < 2 or t.shape[0] == 0:
        yield t
        return
    row = max(1, t[0].numel() * t.element_size())
    step = max(1, BLOCK_BYTES // row)
    for start in range(0, t.shape[0], step):
        yield t[start:start + step]


def _stored_tensors(named, storage):
    """{FORMAT name: safetensors_io.Streamed}: each tensor is checked now (finite,
    and finite in the storage dtype), block by block, and made in the storage
    dtype only when it is written (_row_blocks: the tensor itself when it is
    already a contiguous CPU tensor of that dtype, else a converted block at a
    time): the file is written from the inputs with about one block held, not a
    second copy of the model. Once a tensor is checked and once it is written,
    the pages it was read from in a mapped file are given back
    (torch_file.release). Tied weights are written once per name: FORMAT has no
    aliases."""
    out = {}
    dtype = STORAGE[storage]
    quantized = _q8_names(named)
    for p in named.values():       # what the converter read (a tie compared, a table checked) goes first
        torch_file.release(p.detach())
    for name, p in named.items():
        t = p.detach().to("cpu")
        if name in quantized:      # int8 values and their float32 scales, checked by _q8_names, kept as they are
            kept = "I8" if t.dtype == torch.int8 else "F32"
            out[name] = st.Streamed(kept, t.shape, lambda t=t: _pieces(t, t.dtype),
                                    done=lambda t=t: torch_file.release(t))
            continue
        for block in _row_blocks(t):
            if not torch.isfinite(block.float()).all():
                _refuse(name, _Desc("a tensor with NaN or inf"), "tinyformer refuses non-finite weights")
            if block.dtype != dtype and not torch.isfinite(block.to(dtype).float()).all():
                _refuse(name, _Desc(f"max |w| {float(t.float().abs().max()):.4g}"), f"overflows in {storage}")
            _release_block(block)
        torch_file.release(t)
        out[name] = st.Streamed(storage, t.shape, lambda t=t: _pieces(t, dtype), done=lambda t=t: torch_file.release(t))
    return out


def _release_block(block):
    """A contiguous block's mapped pages, given back once it is used (its rows
    are consecutive bytes of the file). A block of a transposed view spans the
    whole source: its pages go when the whole tensor is done."""
    if block.is_contiguous():
        torch_file.release(block)


def _pieces(t, dtype):
    """`t` in the storage dtype, one row block at a time; a block's pages are
    given back when the writer asks for the next one (it has written this one)."""
    for block in _row_blocks(t):
        yield block.to(dtype)
        _release_block(block)


def _snapshot(parts, storage):
    """float32 copies of the modules, holding exactly the stored values, for check()."""
    snap = copy.deepcopy({k: v for k, v in parts.items() if v is not None})   # one call: ties are kept
    seen = set()
    for module in snap.values():
        module.to("cpu")
        for p in module.parameters():
            if id(p) in seen:
                continue
            seen.add(id(p))
            p.data = p.data.to(STORAGE[storage]).to(torch.float32)
            p.requires_grad_(True)       # grad enabled keeps PyTorch on its plain path
        for b in module.buffers():
            if b.is_floating_point():
                b.data = b.data.float()
        module.eval()
    for stack in [snap.get("transformer"), snap.get("layers")]:
        encoder = getattr(stack, "encoder", stack)
        if isinstance(encoder, nn.TransformerEncoder):
            encoder.enable_nested_tensor = False
    return snap


def _write(path, arch, config, named, parts, meta, dtype):
    """Write the file; remember float32 copies of `parts` (the stock modules) for
    check(). parts=None (a family converter's output): nothing is remembered."""
    storage = _storage(named, dtype)
    # The snapshot first: the stored tensors may be the modules' own (no copy),
    # and check() must compare the file with the modules as they were given.
    snapshot = _snapshot(parts, storage) if parts is not None else None
    tensors = _stored_tensors(named, storage)
    metadata = {"config": json.dumps(config, sort_keys=True, separators=(",", ":")), **meta}
    path = str(path)
    digest = hashlib.sha256()

    def hashed(parts):             # the digest check() compares, taken as the parts are written
        for part in parts:
            digest.update(part)
            yield part

    parts = st.encode_parts(tensors, metadata)      # each tensor made as it is written
    safe_write.write_bytes(path, hashed(parts) if snapshot is not None else parts)
    for t in named.values():       # every tensor is written: nothing of a mapped input needs to stay resident
        torch_file.release(t.detach(), whole=True)
    if snapshot is not None:
        _REGISTRY[os.path.realpath(path)] = {"sha256": digest.hexdigest(), "arch": arch, "parts": snapshot}
    else:
        _REGISTRY.pop(os.path.realpath(path), None)
    return config


# ----------------------------------------------------------------------------
# Writing a family converter's output (tools/python/families)
# ----------------------------------------------------------------------------

CONVERTED_TOKENIZERS = TOKENIZERS + ("gpt2_bpe", "sentencepiece_bpe")
_VOCAB_SIZE_KEY = {"encoder_decoder": ("tgt_vocab_size", "src_vocab_size"), "decoder_only": ("vocab_size", None),
                   "encoder_only": ("vocab_size", None)}


def write_converted(path, converted, dtype=None):
    """Write a families.Converted (config, tensors in tinyformer names, metadata as
    Python values) with the same checks as export_*: sizes within tinyformer's
    limits, special ids inside the vocabulary, the vocabulary rules, the prompt
    suffix, finite weights, one storage dtype. Returns the config written
    (with "format" added). Raises ValueError naming what tinyformer would refuse."""
    config = dict(converted.config)
    config.setdefault("format", FORMAT_TAG)
    if config["format"] != FORMAT_TAG:
        _refuse("config.format", config["format"], f'expected "{FORMAT_TAG}"')
    arch = config.get("arch")
    if arch not in _VOCAB_SIZE_KEY:
        _refuse("config.arch", arch, 'expected "encoder_decoder", "decoder_only" or "encoder_only"')
    for key in SIZE_KEYS:
        if key in config and (not isinstance(config[key], int) or isinstance(config[key], bool)):
            _refuse(f"config.{key}", config[key], "expected an int")
    if config.get("d_model", 0) % max(1, config.get("nhead", 1)):
        _refuse("config.nhead", config["nhead"], f"does not divide d_model = {config['d_model']}")
    if "mask_value" in config:
        m = config["mask_value"]
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not np.isfinite(m) or m >= 0:
            _refuse("config.mask_value", m, "expected a finite negative number (e.g. -1e9)")
    eps = config.get("layer_norm_eps", 1e-5)
    if not isinstance(eps, float) or not FLOAT32_MIN_NORMAL <= eps < 1:
        _refuse("config.layer_norm_eps", eps, "tinyformer needs a positive normal float32 below 1")
    md = dict(converted.metadata)
    unknown = sorted(set(md) - {"vocab", "src_vocab", "tokenizer", "merges", "scores", "prompt_suffix",
                                "train_max_len"})
    if unknown:
        _refuse("metadata", unknown, "unknown keys (FORMAT.md section 1 lists vocab, src_vocab, tokenizer, merges, "
                                     "scores, prompt_suffix, train_max_len)")
    tokenizer = md.get("tokenizer", "char")
    if tokenizer not in CONVERTED_TOKENIZERS:
        _refuse("tokenizer", tokenizer, "expected one of " + ", ".join(f'"{t}"' for t in CONVERTED_TOKENIZERS))
    meta = _common_metadata("char", md.get("train_max_len"))
    meta["tokenizer"] = tokenizer
    tgt_key, src_key = _VOCAB_SIZE_KEY[arch]
    tgt_size = config.get(tgt_key)
    src_size = config.get(src_key) if src_key else None
    vocab = _check_vocab("vocab", md.get("vocab"), tgt_size, f"config.{tgt_key}", tokenizer)
    src_vocab = None
    if "src_vocab" in md:
        if arch != "encoder_decoder":
            _refuse("src_vocab", _Desc("a list"), "only an encoder_decoder model has a source vocabulary")
        if vocab is None:
            _refuse("vocab", None, "src_vocab is given, so vocab (the target vocabulary) is needed too")
        src_vocab = _check_vocab("src_vocab", md["src_vocab"], src_size, f"config.{src_key}", tokenizer)
    if vocab is not None and arch == "encoder_decoder" and src_vocab is None and src_size != tgt_size:
        _refuse("len(vocab)", len(vocab), f"serves the source too (no src_vocab given) but config.{src_key} = "
                                          f"{src_size}; give src_vocab")
    if vocab is not None:
        meta["vocab"] = json.dumps(vocab, ensure_ascii=False)
    if src_vocab is not None:
        meta["src_vocab"] = json.dumps(src_vocab, ensure_ascii=False)
    if "merges" in md:
        merges = md["merges"]
        if tokenizer != "gpt2_bpe":
            _refuse("merges", _Desc("a list"), f'only the "gpt2_bpe" tokenizer has merges (tokenizer is "{tokenizer}")')
        if isinstance(merges, (str, bytes)) or not hasattr(merges, "__len__"):
            _refuse("merges", _Desc(type(merges).__name__), 'expected a list of "left right" strings')
        if vocab is None:
            _refuse("merges", _Desc("a list"), 'the "gpt2_bpe" merges need the vocabulary they merge into ("vocab")')
        check_merges("merges", merges, vocab)      # the engine's rules: what it would refuse is refused here
        meta["merges"] = json.dumps(list(merges), ensure_ascii=False)
    if tokenizer == "sentencepiece_bpe":
        meta["scores"] = json.dumps(_check_scores(md.get("scores"), vocab))
    elif "scores" in md:
        _refuse("scores", _Desc("a list"), f'only the "sentencepiece_bpe" tokenizer has scores (tokenizer is '
                                           f'"{tokenizer}")')
    if "prompt_suffix" in md:
        suffix = md["prompt_suffix"]
        if arch != "decoder_only":
            _refuse("prompt_suffix", suffix, "only a decoder_only model has a prompt suffix")
        if not isinstance(suffix, str) or not suffix:
            _refuse("prompt_suffix", suffix, "expected a non-empty string")
        if tokenizer not in ("gpt2_bpe", "sentencepiece_bpe"):
            _check_prompt_suffix(suffix, vocab, tokenizer)
        meta["prompt_suffix"] = suffix
    id_sizes = {"pad_id": [(tgt_size, "target vocabulary" if src_key else "vocabulary")],
                "bos_id": [(tgt_size, "target vocabulary" if src_key else "vocabulary")],
                "eos_id": [(tgt_size, "target vocabulary" if src_key else "vocabulary")]}
    if src_key:
        id_sizes["pad_id"].append((src_size, "source vocabulary"))
    _check_ids({k: config.get(k) for k in id_sizes}, id_sizes)
    _check_engine_limits(config, meta, {k: f"config.{k}" for k in SIZE_KEYS})
    return _write(path, arch, config, dict(converted.tensors), None, meta, dtype)
