"""GPT-2 as Hugging Face transformers stores it: the project's own module with
HF's key names, a reader/writer for an HF model folder, and the converter.

The computation is the GPT of families/gpt.py (pre-LN, learned positions,
causal attention, tied head without bias), with HF's conventions:

    Conv1D(nx -> nf): y = x @ weight + bias, weight [nx, nf] = [in, out]
                      (the transpose of nn.Linear's [out, in])
    ln_1, ln_2, ln_f: nn.LayerNorm(n_embd, eps=layer_norm_epsilon)
    attention:        q, k, v = split(c_attn(x), n_embd); per head
                      softmax(where(j <= i, q k^T / sqrt(head_dim), finfo.min)) v
                      (finfo.min instead of -inf: the same weights once softmaxed)
    mlp:              c_proj(act(c_fc(x))), c_fc n_embd -> n_inner (default 4 n_embd)
    act:              "gelu_new" / "gelu_pytorch_tanh": 0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3)))
                      "gelu": exact erf GELU; "relu"
    lm_head:          nn.Linear(n_embd, vocab_size, bias=False), weight = wte.weight
                      unless tie_word_embeddings is false

State_dict keys (GPT2LMHeadModel):

    transformer.wte.weight [V, D]        transformer.wpe.weight [n_positions, D]
    transformer.h.{i}.ln_1.weight/.bias  [D]
    transformer.h.{i}.attn.c_attn.weight [D, 3D]   .bias [3D]
    transformer.h.{i}.attn.c_proj.weight [D, D]    .bias [D]
    transformer.h.{i}.attn.bias          [1, 1, P, P] bool causal mask, and
    transformer.h.{i}.attn.masked_bias   [] -1e4      (buffers older transformers saved)
    transformer.h.{i}.ln_2.*, .mlp.c_fc.weight [D, F], .mlp.c_proj.weight [F, D] (+ biases)
    transformer.ln_f.weight/.bias        lm_head.weight (tied: not in saved files)

Folders written by GPT2Model (the hub's original "gpt2") have the same keys
without "transformer."; both are read.

An HF folder: config.json (HF's field names), model.safetensors or
pytorch_model.bin, and for the tokenizer vocab.json ({token: id}) and
merges.txt ("#version" line, then one "left right" merge per line, by rank).
"""

import io
import json
import math
import os
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from . import check_reference_tables, load_weights, tensors_by_name
from . import gpt as _gpt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tools/python: safe_write, safetensors_io, torch_file
import safe_write  # noqa: E402
import safetensors_io  # noqa: E402
from tinyformer_writer import GPT2_BYTE_CHARACTERS  # noqa: E402
import torch_file  # noqa: E402
from torch_file import load_torch_file  # noqa: E402

# HF activation_function -> tinyformer activation
ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
EOS_TOKEN = "<|endoftext|>"


@dataclass
class GPT2Config:
    """The GPT2Config fields this module uses, with HF's names and defaults."""
    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: Optional[int] = None
    activation_function: str = "gelu_new"
    layer_norm_epsilon: float = 1e-5
    tie_word_embeddings: bool = True
    mask_buffers: bool = True      # attn.bias / attn.masked_bias in the state_dict (older transformers)

    def __post_init__(self):
        if self.n_embd % self.n_head:
            raise ValueError(f"GPT2Config: n_embd ({self.n_embd}) must be a multiple of n_head ({self.n_head})")
        if self.activation_function not in ACTIVATIONS:
            raise ValueError(f"GPT2Config.activation_function: {self.activation_function!r}, expected one of "
                             f"{sorted(ACTIVATIONS)}")

    @property
    def inner(self):
        return self.n_inner if self.n_inner is not None else 4 * self.n_embd


class Conv1D(nn.Module):
    """y = x @ weight + bias; weight [nx, nf] (in, out), bias [nf]."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf).normal_(std=0.02))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], self.nf)


def activation(h, name):
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
    if name == "gelu":
        return F.gelu(h)
    return F.relu(h)


class GPT2Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        d, p = config.n_embd, config.n_positions
        self.n_head = config.n_head
        self.c_attn = Conv1D(3 * d, d)
        self.c_proj = Conv1D(d, d)
        if config.mask_buffers:   # saved, as older transformers did (GPT2LMHead checked their size)
            self.register_buffer("bias", torch.tril(torch.ones(p, p, dtype=torch.bool)).view(1, 1, p, p))
            self.register_buffer("masked_bias", torch.tensor(-1e4))
        else:                     # no [n_positions, n_positions] table (a claimed size): each pass makes its [t, t]
            self.bias = None
        self.weights = None

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.n_head
        q, k, v = (z.view(b, t, self.n_head, hd).permute(0, 2, 1, 3) for z in self.c_attn(x).split(d, dim=2))
        scores = (q @ k.transpose(-1, -2)) / (hd ** 0.5)
        causal = (self.bias[:, :, :t, :t] if self.bias is not None
                  else torch.tril(torch.ones(t, t, dtype=torch.bool)).view(1, 1, t, t))
        scores = torch.where(causal, scores, torch.tensor(torch.finfo(scores.dtype).min))
        att = F.softmax(scores, dim=-1)
        self.weights = att.detach()
        y = (att @ v).permute(0, 2, 1, 3).reshape(b, t, d)
        return self.c_proj(y)


class GPT2MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.act_name = config.activation_function
        self.c_fc = Conv1D(config.inner, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, config.inner)

    def forward(self, x):
        return self.c_proj(activation(self.c_fc(x), self.act_name))


class GPT2Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2LMHead(nn.Module):
    """GPT2LMHeadModel's structure and keys; forward(input_ids [B, T]) -> logits [B, T, V]."""

    def __init__(self, config):
        super().__init__()
        if config.mask_buffers:   # one [n_positions, n_positions] bool mask per block
            check_reference_tables("GPT2LMHead", f"the causal-mask buffers (attn.bias, n_positions "
                                   f"{config.n_positions}, n_layer {config.n_layer})", config.n_layer,
                                   config.n_positions, config.n_positions, 1)
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.n_positions, config.n_embd),
            h=nn.ModuleList([GPT2Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        nn.init.normal_(self.transformer.wte.weight, std=0.02)
        nn.init.normal_(self.transformer.wpe.weight, std=0.01)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.transformer.wte.weight
        else:
            nn.init.normal_(self.lm_head.weight, std=0.02)

    def forward(self, input_ids):
        t = input_ids.shape[1]
        if t > self.config.n_positions:
            raise ValueError(f"GPT2LMHead.forward: {t} tokens, n_positions is {self.config.n_positions}")
        x = self.transformer.wte(input_ids) + self.transformer.wpe(torch.arange(t))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    @torch.no_grad()
    def generate_greedy(self, input_ids, max_new_tokens):
        for _ in range(max_new_tokens):
            ctx = input_ids[:, -self.config.n_positions:]
            input_ids = torch.cat((input_ids, self.forward(ctx)[:, -1].argmax(-1, keepdim=True)), dim=1)
        return input_ids


# ----------------------------------------------------------------------------
# The folder: writing (for tests and demos) and reading
# ----------------------------------------------------------------------------

def hf_config_dict(config):
    """config.json's content for `config`, with HF's field names."""
    d = {f.name: getattr(config, f.name) for f in fields(config) if f.name != "mask_buffers"}
    d.update({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_ctx": config.n_positions,
              "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
              "reorder_and_upcast_attn": False, "add_cross_attention": False,
              "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1, "bos_token_id": 50256,
              "eos_token_id": 50256})
    return d


def save_folder(model, folder, *, weights="safetensors", vocab=None, merges=None, prefix=True, extra_config=None):
    """Write `model` (a GPT2LMHead) as an HF folder: config.json, model.safetensors
    (weights="safetensors") or pytorch_model.bin ("bin"), and vocab.json +
    merges.txt when vocab (list, index = id) and merges (list of "a b") are given.
    prefix=False writes GPT2Model's keys (no "transformer."), as the hub's gpt2
    (an untied lm_head.weight keeps its name).
    The tied lm_head.weight is not written (HF does not either)."""
    os.makedirs(folder, exist_ok=True)
    cfg = hf_config_dict(model.config)
    cfg.update(extra_config or {})
    safe_write.write_text(os.path.join(folder, "config.json"), json.dumps(cfg, indent=2) + "\n")
    state = {}
    for k, v in model.state_dict().items():
        if k == "lm_head.weight" and model.config.tie_word_embeddings:
            continue
        if not prefix and k.startswith("transformer."):
            k = k[len("transformer."):]
        state[k] = v.detach().clone()
    if weights == "safetensors":
        arrays = {k: v.numpy() for k, v in state.items()}
        safetensors_io.write(os.path.join(folder, "model.safetensors"), arrays, {"format": "pt"})
    elif weights == "bin":
        buf = io.BytesIO()
        torch.save(state, buf)
        safe_write.write_bytes(os.path.join(folder, "pytorch_model.bin"), buf.getvalue())
    else:
        raise ValueError(f"save_folder: weights = {weights!r}, expected \"safetensors\" or \"bin\"")
    if vocab is not None:
        safe_write.write_text(os.path.join(folder, "vocab.json"),
                              json.dumps({t: i for i, t in enumerate(vocab)}, ensure_ascii=False))
        safe_write.write_text(os.path.join(folder, "merges.txt"), "#version: 0.2\n" + "".join(m + "\n" for m in merges or []))


# The largest files of an HF folder read here, in bytes: each is refused by its
# size before it is read (GPT-2's own: config.json 665 bytes, vocab.json 1.0 MB,
# merges.txt 456 KB; the weights are bounded by their readers).
MAX_CONFIG_BYTES = 1 << 20
MAX_TOKENIZER_FILE_BYTES = 64 << 20


def _read_text(path, limit, what):
    """The UTF-8 text of `path`, refused by its size (before reading) above `limit`
    bytes. ValueError naming the file."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise ValueError(f"{path}: {size} bytes, more than the limit of {limit} for {what}")
            raw = f.read(limit + 1)      # a FIFO or a growing file reports a smaller size: read at most the limit
    except OSError as e:
        raise ValueError(f"{path}: cannot read {what}: {e.strerror or e}") from None
    if len(raw) > limit:
        raise ValueError(f"{path}: more than the limit of {limit} bytes for {what}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: {what} is not UTF-8 (byte 0x{raw[e.start]:02X} at offset {e.start})") from None


def _read_json(path, limit, what):
    """The JSON value of `path` (at most `limit` bytes). ValueError naming the file,
    also for nesting too deep for Python's JSON reader (a RecursionError)."""
    text = _read_text(path, limit, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: {what} is not JSON: {e}") from None
    except RecursionError:
        raise ValueError(f"{path}: {what} nests arrays or objects deeper than Python's JSON reader follows "
                         f"(about {sys.getrecursionlimit()} levels)") from None


def read_bpe(vocab_json, merges_txt):
    """(vocab list index = id, merges list in rank order) from GPT-2's vocab.json
    (or encoder.json) and merges.txt (or vocab.bpe), each at most
    MAX_TOKENIZER_FILE_BYTES. Every token must be written in GPT-2's byte
    characters, and every merge must be one the engine's gpt2_bpe accepts
    (docs/FORMAT.md, vocabulary rules; models/tokenizers/gpt2_bpe.h): "left right" with
    both sides and their concatenation tokens of vocab.json, no pair twice.
    Raises ValueError naming the file, the line or entry, and the rule."""
    table = _read_json(vocab_json, MAX_TOKENIZER_FILE_BYTES, "a JSON vocabulary")
    if not isinstance(table, dict) or not table:
        raise ValueError(f"{vocab_json}: expected a JSON object {{token: id}}")
    n = len(table)
    vocab = [None] * n
    for token, i in table.items():
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n or vocab[i] is not None:
            raise ValueError(f"{vocab_json}: the id of {_gpt._shown(token)} is {_gpt._shown(i)}: the ids must be "
                             f"exactly 0..{n - 1}, each once")
        bad = next((c for c in token if c not in GPT2_BYTE_CHARACTERS), None)
        if bad is not None or not token:
            why = "is empty" if bad is None else f"holds {bad!r} (U+{ord(bad):04X}), which stands for no byte"
            raise ValueError(f"{vocab_json}: token {_gpt._shown(token)} (id {i}) {why}: a GPT-2 token is written "
                             f"one character per byte (printable Latin-1 as itself, the other bytes as "
                             f"U+0100..U+0143)")
        vocab[i] = token
    ids = {token: i for i, token in enumerate(vocab)}
    text = _read_text(merges_txt, MAX_TOKENIZER_FILE_BYTES, "merges")
    lines = text.split("\n")
    first = 1
    if lines and lines[0].startswith("#version"):
        lines, first = lines[1:], 2
    merges, pairs = [], {}
    for number, line in enumerate(lines, start=first):
        if line.endswith("\r"):
            line = line[:-1]             # a merges.txt saved with CRLF line ends
        if not line.strip():
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"{merges_txt}: line {number} is {_gpt._shown(line)}, expected \"left right\": two "
                             f"tokens separated by exactly one space")
        left, right = parts
        for side, token in (("left side", left), ("right side", right), ("merged token", left + right)):
            if token not in ids:
                raise ValueError(f"{merges_txt}: line {number} {_gpt._shown(line)}: its {side} "
                                 f"{_gpt._shown(token)} is not a token of {vocab_json} (the engine refuses such a "
                                 f"merge: docs/FORMAT.md, vocabulary rules)")
        if line in pairs:
            raise ValueError(f"{merges_txt}: line {number} {_gpt._shown(line)} is the same pair as line "
                             f"{pairs[line]}; no pair may be merged twice (the engine refuses it)")
        pairs[line] = number
        merges.append(line)
    return vocab, merges


# config.json options and the values the engine can represent; anything else is refused by name.
SUPPORTED_OPTIONS = {
    "scale_attn_weights": (True,),
    "scale_attn_by_inverse_layer_idx": (False,),
    "add_cross_attention": (False,),
}
# Options that change nothing in an F32 forward pass: accepted.
IGNORED_OPTIONS = ("reorder_and_upcast_attn",)   # baddbmm in float32 with the same 1/sqrt(head_dim): same numbers


def read_folder(folder):
    """(config.json as a dict, state_dict with "transformer." keys, still in HF's
    Conv1D layout, {tokenizer file name: path} of those present). Weights from
    model.safetensors (safetensors_io, mapped; widened to float32) or pytorch_model.bin
    (torch_file.load_torch_file, the project's own reader: nothing in it runs)."""
    folder = str(folder)
    if not os.path.isdir(folder):
        raise ValueError(f"{folder}: not a folder (an HF GPT-2 model is a folder with config.json)")
    path = os.path.join(folder, "config.json")
    cfg = _read_json(path, MAX_CONFIG_BYTES, "config.json")
    if not isinstance(cfg, dict):
        raise ValueError(f"{path}: expected a JSON object")
    _check_config_types(cfg, path)
    st_path, bin_path = os.path.join(folder, "model.safetensors"), os.path.join(folder, "pytorch_model.bin")
    if os.path.exists(st_path):
        try:       # mapped (torch_file.file_map): float32 tensors are views of the file, read as they are used
            arrays, _ = safetensors_io.views(torch_file.file_map(st_path))
        except OSError as e:
            raise ValueError(f"{st_path}: cannot read: {e.strerror or e}") from None
        except ValueError as e:           # safetensors_io names the rule, not the file
            raise ValueError(f"{st_path}: {e}") from None
        state = {k: torch.from_numpy(v if v.dtype in (np.float32, np.bool_) else np.array(v, dtype=np.float32))
                 for k, v in arrays.items()}
    elif os.path.exists(bin_path):
        state = tensors_by_name(load_torch_file(bin_path, "pytorch_model.bin"), bin_path)
    else:
        shards = [n for n in ("model.safetensors.index.json", "pytorch_model.bin.index.json")
                  if os.path.exists(os.path.join(folder, n))]
        raise ValueError(f"{folder}: no model.safetensors or pytorch_model.bin"
                         + (f" (sharded weights, {shards[0]}, are not read: merge the shards into one file)"
                            if shards else ""))
    if any(k.startswith(("h.", "wte.", "wpe.", "ln_f.")) for k in state):
        state = {(k if k.startswith(("transformer.", "lm_head.")) else "transformer." + k): v for k, v in state.items()}
    tok = {}
    for name in ("vocab.json", "merges.txt"):
        if os.path.exists(os.path.join(folder, name)):
            tok[name] = os.path.join(folder, name)
    return cfg, state, tok


# config.json fields this converter reads, and the JSON type each must have
# (checked before any is used, so a list where a number belongs is refused by
# name instead of failing deep inside).
_CONFIG_INTS = ("vocab_size", "n_positions", "n_ctx", "n_embd", "n_layer", "n_head", "n_inner")


def _check_config_types(cfg, path):
    for key in _CONFIG_INTS:
        value = cfg.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{path}: {key} = {_gpt._shown(value)}: expected a positive whole number")
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
        raise ValueError(f"{path}: layer_norm_epsilon = {_gpt._shown(eps)}: expected a number in (0, 1)")
    for key in ("activation_function", "model_type"):
        if key in cfg and not isinstance(cfg[key], str):
            raise ValueError(f"{path}: {key} = {_gpt._shown(cfg[key])}: expected a string")
    if not isinstance(cfg.get("tie_word_embeddings", True), bool):
        raise ValueError(f"{path}: tie_word_embeddings = {_gpt._shown(cfg['tie_word_embeddings'])}: expected true "
                         f"or false")


def _to_linear_layout(state, where):
    """Conv1D weights [in, out] -> nn.Linear's [out, in], for the shared assemble()."""
    out = {}
    for k, v in state.items():
        if k.endswith(("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")):
            if v.dim() != 2:
                raise ValueError(f"{where}: {k} has shape {list(v.shape)}, expected a 2-d Conv1D weight [in, out]")
            v = v.t()
        out[k] = v
    return out


def _refuse_options(cfg, where):
    bad = []
    for key, allowed in SUPPORTED_OPTIONS.items():
        if key in cfg and cfg[key] not in allowed:
            value = cfg[key]
            shown = json.dumps(value)[:80] if isinstance(value, (str, int, float, bool)) else _gpt._shown(value)
            bad.append(f"{key} = {shown} (tinyformer computes only {json.dumps(allowed[0])})")
    act = cfg.get("activation_function", "gelu_new")
    if act not in ACTIVATIONS:
        bad.append(f"activation_function = {json.dumps(act)} (tinyformer has {', '.join(sorted(ACTIVATIONS))})")
    if "model_type" in cfg and cfg["model_type"] != "gpt2":
        bad.append(f"model_type = {json.dumps(cfg['model_type'])} (this converter reads GPT-2 only)")
    if bad:
        raise ValueError(f"{where}: cannot represent " + "; ".join(bad))


def convert_hf_gpt2(folder, vocab_json=None, merges_txt=None, eos=True):
    """A Hugging Face GPT-2 folder -> Converted.

    Reads config.json (n_embd, n_layer, n_head, n_positions, vocab_size, n_inner,
    layer_norm_epsilon, activation_function, tie_word_embeddings), the weights
    (Conv1D transposed to nn.Linear's layout, mask buffers dropped), and
    vocab.json + merges.txt when present (or given): tokenizer "gpt2_bpe", and
    eos_id = the id of <|endoftext|> when eos and the vocabulary has it.
    Options the engine cannot compute are refused by name."""
    where = str(folder)
    cfg, state, tok = read_folder(folder)
    cfg_path = os.path.join(where, "config.json")
    _refuse_options(cfg, cfg_path)
    needed = [k for k in ("n_embd", "n_layer", "n_head") if k not in cfg]
    if needed:
        raise ValueError(f"{cfg_path}: missing {', '.join(needed)}")
    state, notes = _gpt._cleaned(state, where)
    if cfg.get("tie_word_embeddings", True) is False and "lm_head.weight" not in state:
        raise ValueError(f"{where}: tie_word_embeddings is false but the weights have no lm_head.weight")
    if cfg.get("tie_word_embeddings", True) is not False:
        state.pop("lm_head.weight", None)   # tied: the same numbers as wte (HF ties on load)
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    converted = _gpt.assemble(_to_linear_layout(state, where), n_head=cfg["n_head"], gelu=None, where=where,
                              layer_norm_eps=float(eps), activation=ACTIVATIONS[cfg.get("activation_function", "gelu_new")],
                              max_len_name="n_positions")
    converted.notes.extend(notes)
    c = converted.config
    for key, ours in (("n_embd", c["d_model"]), ("n_layer", c["num_layers"]), ("vocab_size", c["vocab_size"]),
                      ("n_positions", c["max_len"]), ("n_inner", c["dim_feedforward"])):
        if cfg.get(key) is not None and cfg[key] != ours:
            raise ValueError(f"{cfg_path}: {key} = {cfg[key]} but the weights say {ours}")
    vocab_json = vocab_json or tok.get("vocab.json")
    merges_txt = merges_txt or tok.get("merges.txt")
    if (vocab_json is None) != (merges_txt is None):
        raise ValueError(f"{where}: {'vocab.json' if vocab_json else 'merges.txt'} without "
                         f"{'merges.txt' if vocab_json else 'vocab.json'}: GPT-2's tokenizer needs both")
    if vocab_json is not None:
        vocab, merges = read_bpe(vocab_json, merges_txt)
        if len(vocab) != c["vocab_size"]:
            raise ValueError(f"{vocab_json}: {len(vocab)} tokens but vocab_size is {c['vocab_size']}")
        converted.metadata.update({"tokenizer": "gpt2_bpe", "vocab": vocab, "merges": merges})
        if eos and EOS_TOKEN in vocab:
            c["eos_id"] = vocab.index(EOS_TOKEN)
    converted.build_reference_with(lambda: _reference(converted, cfg))
    return converted


def _reference(converted, cfg):
    c = converted.config
    config = GPT2Config(vocab_size=c["vocab_size"], n_positions=c["max_len"], n_embd=c["d_model"],
                        n_layer=c["num_layers"], n_head=c["nhead"], n_inner=c["dim_feedforward"],
                        activation_function=cfg.get("activation_function", "gelu_new"),
                        layer_norm_epsilon=c["layer_norm_eps"], tie_word_embeddings=c["tie_embeddings"],
                        mask_buffers=False)
    if not (c["bias"] and c["norm_bias"]):
        return None
    model = GPT2LMHead(config)
    up = _gpt.to_upstream(converted.tensors, c["num_layers"], c["tie_embeddings"])
    # Transposed views, not copies: load_state_dict copies them into the model's own parameters.
    up = {k: (v.t() if k.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight")) else v) for k, v in up.items()}
    load_weights(model, up, strict=True)
    return model.eval()


def attention_modules(model):
    """[(attention module, check()'s output name)] in forward order: each block's attn."""
    return [(block.attn, f"layers.{i}.self_attn.weights") for i, block in enumerate(model.transformer.h)]


def recognise(module):
    """True for a GPT-2 with HF's structure (ours or transformers' GPT2LMHeadModel):
    transformer.wte/wpe/h/ln_f, lm_head, blocks whose c_attn is a Conv1D (a
    weight [in, out] and an nf attribute). Told by structure, not class."""
    if not isinstance(module, nn.Module) or not hasattr(module, "transformer") or not hasattr(module, "lm_head"):
        return False
    tr = module.transformer
    if not all(hasattr(tr, n) for n in ("wte", "wpe", "h", "ln_f")) or len(tr.h) == 0:
        return False
    b = tr.h[0]
    return (hasattr(b, "attn") and hasattr(b.attn, "c_attn") and type(b.attn.c_attn).__name__ == "Conv1D"
            and hasattr(b.attn.c_attn, "nf") and hasattr(b, "mlp") and hasattr(b.mlp, "c_fc"))


def from_module(module, vocab=None, merges=None, eos_id=None, train_max_len=None):
    """Converted from a live HF-style GPT-2 module; reference = module. The config
    (ours: GPT2Config; transformers': GPT2Config) gives n_head, eps, activation.
    vocab (list, index = id) + merges (list of "left right") give tokenizer
    gpt2_bpe; eos_id defaults to <|endoftext|>'s id when the vocab has it."""
    if not recognise(module):
        raise ValueError(f"from_module: {type(module).__name__} is not an HF-style GPT-2")
    cfg = module.config
    cfg = {k: getattr(cfg, k) for k in ("n_head", "activation_function", "layer_norm_epsilon", "tie_word_embeddings",
                                        "scale_attn_weights", "scale_attn_by_inverse_layer_idx",
                                        "add_cross_attention", "model_type") if hasattr(cfg, k)}
    where = type(module).__name__
    _refuse_options(cfg, where)
    state, notes = _gpt._cleaned(dict(module.state_dict()), where)
    if cfg.get("tie_word_embeddings", True) is not False:
        state.pop("lm_head.weight", None)
    converted = _gpt.assemble(_to_linear_layout(state, where), n_head=cfg["n_head"], gelu=None, where=where,
                              layer_norm_eps=float(cfg.get("layer_norm_epsilon", 1e-5)),
                              activation=ACTIVATIONS[cfg.get("activation_function", "gelu_new")],
                              max_len_name="n_positions")
    converted.notes.extend(notes)
    if (vocab is None) != (merges is None):
        raise ValueError("from_module: GPT-2's tokenizer needs both vocab and merges")
    if vocab is not None:
        vocab = list(vocab)
        if len(vocab) != converted.config["vocab_size"]:
            raise ValueError(f"from_module: {len(vocab)} tokens but vocab_size is {converted.config['vocab_size']}")
        converted.metadata.update({"tokenizer": "gpt2_bpe", "vocab": vocab, "merges": list(merges)})
        if eos_id is None and EOS_TOKEN in vocab:
            eos_id = vocab.index(EOS_TOKEN)
    _gpt._extras(converted, eos_id, train_max_len)
    converted.reference = module
    return converted
