"""What a model file is, and the converter command that takes it.

tinyformer_export.py asks here when `--from FAMILY FILE` fails: a file of
another family is then named as what it is, with the `--from` that reads it
(a llama2.c ckpt.pt given as nanogpt, a Hugging Face folder given as nanogpt,
a .bin given as llama2c, ...). The engine names the same files the same way
when they are given to `tinyformer run` (engine/io/foreign_files.h):

    a folder with config.json         Hugging Face (model_type "gpt2": --from hf-gpt2 FOLDER)
    "24ka" + version 1 / 2            llama2.c export.py's model.bin (v1 float32; v2 int8 Q8_0)
    7 int32 adding up to the file     llama2.c's legacy (v0) model.bin           --from llama2c-bin
    a torch.save file (zip / legacy)  by what its object holds, read by torch_file.py (nothing
                                      runs): model_args with n_embd (nanoGPT's ckpt.pt), with
                                      n_kv_heads / multiple_of (llama2.c's), a state_dict with the
                                      Annotated Transformer's, GPT's or Hugging Face GPT-2's names,
                                      or FORMAT's (--from-state-dict); nanoGPT's meta.pkl
    safetensors                       tinyformer's (a "config" in __metadata__) or Hugging Face's
    int32 + (score, length, bytes)    llama2.c's tokenizer.bin (a vocabulary: --tokenizer)
    PNG, an empty file

identify(path) -> Kind(families, what, way_out) or None when nothing is
recognised. Every read is bounded by the file's size; a length the file
claims is believed only when it adds up to exactly the file's size.
Standard library and numpy (through torch_file); no torch.
"""

import os
import shlex
import struct
from dataclasses import dataclass
from typing import Tuple

import safetensors_io
import torch_file

__all__ = ["Kind", "identify", "CONVERTER"]

CONVERTER = "/usr/bin/python3 tools/python/tinyformer_export.py"
LLAMA2C_MAGIC = b"24ka"          # 0x616B3432 as little-endian bytes: llama2.c export.py's v1 / v2
LARGEST = 1 << 24                # the engine's limit on every size (models/config.cpp)
SNIFF_BYTES = 256
MAX_CONFIG_BYTES = 1 << 20       # a config.json larger than this is not read here


@dataclass
class Kind:
    families: Tuple[str, ...]    # the --from families that read the file (none: no --from does)
    what: str                    # "llama2.c's train.py checkpoint (a torch.save file with model_args)"
    way_out: str                 # "convert it with: /usr/bin/python3 tools/python/tinyformer_export.py ..."


def _out(source):
    """--out NAME.safetensors in the current folder: the file's (or folder's) own
    name, "." resolved to the folder it is (inside a Hugging Face folder,
    model.safetensors is the user's own weights), and "-tinyformer" (and a
    number) added when that name exists, so the suggestion never replaces a
    file; a name starting with '-' as ./-name (not an option)."""
    stem = os.path.splitext(os.path.basename(os.path.abspath(source)))[0]
    if stem in ("", ".", ".."):
        stem = "model"
    name = stem + ".safetensors"
    for n in range(1, 100):
        if not os.path.lexists(name):
            break
        name = f"{stem}-tinyformer{'' if n == 1 else '-' + str(n)}.safetensors"
    return shlex.quote("./" + name if name.startswith("-") else name)


def _convert(family, source, flags=""):
    return (f"convert it with: {CONVERTER} --from {family} {shlex.quote(str(source))}"
            + (f" {flags}" if flags else "") + f" --out {_out(source)}")


def _tokenizer_flag(path):
    beside = os.path.join(os.path.dirname(str(path)), "tokenizer.bin")
    return f"--tokenizer {shlex.quote(beside) if os.path.isfile(beside) else 'tokenizer.bin'}"


def _folder(path):
    config = os.path.join(str(path), "config.json")
    if not os.path.isfile(config):
        return None
    try:
        with open(config, "rb") as f:
            text = f.read(MAX_CONFIG_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    import json
    try:
        model_type = json.loads(text).get("model_type")
    except (ValueError, AttributeError, RecursionError):
        model_type = None
    if model_type == "gpt2":
        return Kind(("hf-gpt2",), "a Hugging Face GPT-2 model folder (config.json and its weights)",
                    _convert("hf-gpt2", path))
    shown = f" (model_type {model_type!r})" if isinstance(model_type, str) else ""
    return Kind((), f"a Hugging Face model folder{shown}",
                "the converter reads Hugging Face GPT-2 folders (--from hf-gpt2 FOLDER); another layout is exported "
                "from its PyTorch modules (docs/YOUR_MODEL.md)")


def _llama2c_bin(path, size, start):
    convert = _convert("llama2c-bin", path, _tokenizer_flag(path))
    if start[:4] == LLAMA2C_MAGIC and size >= 256:
        version = struct.unpack_from("<i", start, 4)[0]
        if version == 1:
            return Kind(("llama2c-bin",), "a llama2.c model.bin (export.py version 1, float32)", convert)
        if version == 2:
            return Kind(("llama2c-bin",), "a llama2.c model.bin (export.py version 2, int8 Q8_0)", convert)
    if len(start) < 28:
        return None
    d, hd, n, h, kv, v, t = struct.unpack_from("<7i", start, 0)
    shared, v = v > 0, abs(v)
    if not all(1 <= x <= LARGEST for x in (d, hd, n, h, kv, v, t)) or d % h or (d // h) % 2 or h % kv:
        return None
    floats = (n * (2 * d + 2 * d * d + 2 * kv * (d // h) * d + 3 * hd * d) + v * d + d + 2 * t * ((d // h) // 2)
              + (0 if shared else v * d))          # Python's ints do not overflow
    if 28 + 4 * floats != size:
        return None
    return Kind(("llama2c-bin",), "a llama2.c model.bin (export.py's legacy version 0)", convert)


def _llama2c_tokenizer(path, size, start):
    """llama2.c's tokenizer.bin: int32 max_token_length, then (float32 score,
    int32 length, bytes) pieces; at least 3, ending exactly at the file's end
    (or running on past the first MiB of a longer file)."""
    if len(start) < 4:
        return None
    longest = struct.unpack_from("<i", start, 0)[0]
    if not 1 <= longest <= 1 << 16:
        return None
    with open(path, "rb") as f:
        data = f.read(min(size, 1 << 20))
    at, pieces = 4, 0
    while at + 8 <= len(data):
        length = struct.unpack_from("<i", data, at + 4)[0]
        if not 0 <= length <= longest:
            return None
        if at + 8 + length > len(data):
            break
        at, pieces = at + 8 + length, pieces + 1
    if pieces < 3 or (len(data) == size and at != size):
        return None
    return Kind((), "a llama2.c tokenizer.bin (a vocabulary, not a model)",
                f"give it to the converter with the model: {CONVERTER} --from llama2c-bin model.bin --tokenizer "
                f"{shlex.quote(str(path))} --out model.safetensors")


def _state_dict_kind(state, path, wrapped):
    names = {n[len("module."):] if n.startswith("module.") else n for n in state if isinstance(n, str)}
    if "src_embed.0.lut.weight" in names:
        return Kind(("annotated",), f"an Annotated Transformer state_dict ({wrapped})",
                    _convert("annotated", path, "--n-head H") + " (H: your model's number of heads)")
    if "transformer.wte.weight" in names:
        return Kind(("mingpt", "nanogpt"), f"a GPT state_dict ({wrapped}, minGPT's or nanoGPT's names)",
                    _convert("mingpt", path, "--n-head H") + " (H: your model's number of heads)")
    if names & {"h.0.attn.c_attn.weight", "transformer.h.0.attn.c_attn.weight"}:
        folder = os.path.dirname(str(path)) or "."
        return Kind((), f"a Hugging Face GPT-2 pytorch_model.bin ({wrapped})",
                    f"convert its folder (with config.json) with: {CONVERTER} --from hf-gpt2 {shlex.quote(folder)} "
                    f"--out {_out(os.path.abspath(folder))}")
    if names & {"embed.weight", "src_embed.weight"}:
        return Kind((), f"a state_dict with FORMAT's names ({wrapped})",
                    f"convert it with: {CONVERTER} --from-state-dict {shlex.quote(str(path))} --arch ... "
                    f"(see --help)")
    return None


def _torch_kind(path):
    try:
        obj = torch_file.read(path, "file")
    except ValueError:
        return None
    wrapped = "a torch.save file"
    if isinstance(obj, dict):
        args = obj.get("model_args")
        if isinstance(args, dict) and ("n_kv_heads" in args or "multiple_of" in args):
            return Kind(("llama2c",), f"llama2.c's train.py checkpoint ({wrapped} with model_args)",
                        _convert("llama2c", path, _tokenizer_flag(path)))
        if isinstance(args, dict) and "n_embd" in args:
            return Kind(("nanogpt",), f"nanoGPT's train.py checkpoint ({wrapped} with model_args)",
                        _convert("nanogpt", path, "--meta meta.pkl"))
        if "stoi" in obj and "itos" in obj:
            return Kind((), "nanoGPT's meta.pkl (a character vocabulary, not a model)",
                        f"give it with the checkpoint: {CONVERTER} --from nanogpt ckpt.pt --meta "
                        f"{shlex.quote(str(path))} --out ckpt.safetensors")
        if isinstance(obj.get("model"), dict):
            return _state_dict_kind(obj["model"], path, wrapped)
        return _state_dict_kind(obj, path, wrapped)
    return None


def _pickle_kind(path, size):
    """nanoGPT's meta.pkl, a plain pickle (torch_file reads torch.save's formats only)."""
    import pickle_reader
    try:
        with open(path, "rb") as f:
            data = f.read(min(size, 1 << 20))
        obj = pickle_reader.Unpickler(data).load()
    except Exception:       # noqa: BLE001  (not a pickle this reader takes: nothing recognised)
        return None
    if isinstance(obj, dict) and "stoi" in obj and "itos" in obj:
        return Kind((), "nanoGPT's meta.pkl (a character vocabulary, not a model)",
                    f"give it with the checkpoint: {CONVERTER} --from nanogpt ckpt.pt --meta "
                    f"{shlex.quote(str(path))} --out ckpt.safetensors")
    return None


def _safetensors_kind(path):
    try:
        tensors, metadata, _ = safetensors_io.read_header(path)
    except (OSError, ValueError, RecursionError):
        return None
    if "config" in metadata:
        return Kind((), "a tinyformer checkpoint already",
                    f"run it with: build/tinyformer run {shlex.quote(str(path))} TEXT")
    names = set(tensors)
    if names & {"h.0.attn.c_attn.weight", "transformer.h.0.attn.c_attn.weight"}:
        folder = os.path.dirname(str(path)) or "."
        return Kind((), "a Hugging Face GPT-2 model.safetensors (no tinyformer \"config\" in its __metadata__)",
                    f"convert its folder (with config.json) with: {CONVERTER} --from hf-gpt2 {shlex.quote(folder)} "
                    f"--out {_out(os.path.abspath(folder))}")
    return None


def identify(path):
    """The Kind of the file or folder `path`, or None when nothing is recognised."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return _folder(path)
    if not os.path.isfile(path):
        return None
    size = os.path.getsize(path)
    if size == 0:
        return Kind((), "an empty file (0 bytes)", "give the file your training code wrote")
    try:
        with open(path, "rb") as f:
            start = f.read(SNIFF_BYTES)
    except OSError:
        return None
    if start.startswith(b"\x89PNG\r\n\x1a\n"):
        return Kind((), "a PNG picture", "give the file your training code wrote")
    if len(start) >= 9:
        header = struct.unpack_from("<Q", start, 0)[0]
        if 1 <= header <= size - 8 and start[8:9] in (b"{", b" ", b"\t", b"\n", b"\r"):
            return _safetensors_kind(path)
    found = _llama2c_bin(path, size, start)
    if found is not None:
        return found
    if start.startswith(b"PK\x03\x04") or (len(start) >= 3 and start[0] == 0x80 and 2 <= start[1] <= 5):
        return _torch_kind(path) or _pickle_kind(path, size)
    return _llama2c_tokenizer(path, size, start)
