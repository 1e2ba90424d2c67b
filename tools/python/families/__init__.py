"""Model families that come into tinyformer through a converter.

One module per family, each holding the project's own PyTorch reference module
(written from the upstream design, never copied from it) and the functions that
turn the family's saved weights into tinyformer's one layout (docs/FORMAT.md):

    families/annotated.py   the Annotated Transformer (harvardnlp): make_model, convert_annotated
    families/gpt.py         nanoGPT / minGPT: GPT, convert_nanogpt, convert_mingpt
    families/hf_gpt2.py     Hugging Face GPT-2 folders: convert_hf_gpt2
    families/llama.py       llama2.c: Transformer, convert_llama2c_checkpoint, convert_llama2c_bin

Every converter returns a `Converted`:

    config    the tinyformer config keys (docs/FORMAT.md section 1, the config table),
              without "format" (write_converted adds it)
    tensors   {tinyformer tensor name: torch.Tensor}, e.g. "transformer.layers.0.norm1.weight"
    metadata  the __metadata__ keys other than "config", as Python values (not JSON strings):
              "vocab" (list of str), "src_vocab" (list of str, encoder_decoder), "tokenizer"
              ("char" | "whitespace" | "gpt2_bpe" | "sentencepiece_bpe"), "merges" (list of
              "left right" strings, gpt2_bpe), "scores" (list of float, sentencepiece_bpe),
              "prompt_suffix" (str, decoder_only), "train_max_len" (int).
              Absent keys are simply not written.
    reference optional: the family's PyTorch module holding the source weights (in eval
              mode), which check() can compare the written file with. A converter
              reading a file gives it as a builder (converted.build_reference_with(fn)):
              the module is made when `reference` is first read, so a conversion
              that is not checked (--no-check) never holds a second copy of the model
    notes     optional: lines worth telling the user (a choice the converter made and why)
    assumed   optional: {key: value} the converter took from its caller's arguments because
              the file does not record it (minGPT's and the Annotated Transformer's n_head,
              nanoGPT's when model_args lacks it): facts a check against the family's own
              module cannot verify, only one running the user's model code can

and `write_converted(path, converted, dtype=None)` writes it through the
exporter's one writer (tools/python/tinyformer_writer.py: the same vocabulary,
engine-limit and finiteness checks as tinyformer_export's export_*, the same
safe_write), returning the config written.

The families read PyTorch files with tools/python/torch_file.py and write with
tools/python/tinyformer_writer.py, both below them; tinyformer_export.py, which
dispatches to them, is above, and nothing here imports it
(tests/python/test_import_floors.py).
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import torch

import q8_0               # the Q8_0 rule and the names the engine reads as Q8_0
import tinyformer_writer   # tools/python is on sys.path wherever this package is imported from
import torch_file          # release: a tensor's pages of a mapped file

__all__ = ["Converted", "write_converted", "quantize_converted", "REFERENCE_TABLE_BYTES", "check_reference_tables", "layer_count",
           "tensors_by_name", "load_weights"]

# The most memory, in bytes, that the tables a reference module builds from a
# claimed size may take together: its causal-mask buffers (one [T, T] per block,
# T = block_size / n_positions / max_seq_len) and its sinusoidal position table
# ([max_len, d_model]). A file's claimed size needing more is refused before
# anything is allocated: a 646 KB nanoGPT file claiming block_size 40000 would
# otherwise build a 6.4 GB mask (twice, per block). Real models stay far below:
# a GPT-2-sized nanoGPT's 12 blocks of [1024, 1024] float32 masks take 48 MiB,
# llama2.c's stories110M (12 blocks, 1024) 48 MiB, Llama 2 7B's (32, 2048) 512 MiB. The converters' references build no
# mask table at all (each pass makes its own [t, t] triangle), so this limit
# binds only modules built with their mask buffers (llama2.c's and nanoGPT's
# saved layout) and the Annotated Transformer's position table.
REFERENCE_TABLE_BYTES = 1 << 30


@dataclass
class Converted:
    """What a family converter produces: tinyformer's config, tensors and metadata."""
    config: Dict[str, Any]
    tensors: Dict[str, torch.Tensor]
    metadata: Dict[str, Any] = field(default_factory=dict)
    reference: Optional[Any] = field(default=None, repr=False, compare=False)   # a property: see below
    notes: List[str] = field(default_factory=list)
    assumed: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.config, dict):
            raise TypeError(f"Converted.config = {type(self.config).__name__}: expected a dict of config keys")
        if not isinstance(self.tensors, dict):
            raise TypeError(f"Converted.tensors = {type(self.tensors).__name__}: expected a dict name -> tensor")
        for name, t in self.tensors.items():
            if not isinstance(name, str) or not torch.is_tensor(t):
                raise TypeError(f"Converted.tensors[{name!r}] = {type(t).__name__}: expected a torch.Tensor")
        if not isinstance(self.metadata, dict):
            raise TypeError(f"Converted.metadata = {type(self.metadata).__name__}: expected a dict")

    def build_reference_with(self, build: Callable[[], Any]):
        """The reference is build() (a module holding the weights, or None),
        called when `reference` is first read, and kept from then on."""
        self._reference, self._build_reference = None, build

    def _get_reference(self):
        build = getattr(self, "_build_reference", None)
        if build is not None:
            self._build_reference = None
            self._reference = build()
        return getattr(self, "_reference", None)

    def _set_reference(self, module):
        self._reference, self._build_reference = module, None

    @property
    def reference_built(self):
        """False while the reference is a builder not yet called (what --no-check leaves it)."""
        return getattr(self, "_build_reference", None) is None


# `reference` is a dataclass field (Converted(..., reference=module) sets it) read
# through the property: a builder given with build_reference_with runs on first read.
Converted.reference = property(Converted._get_reference, Converted._set_reference)


def check_reference_tables(where, what, count, rows, cols, element_bytes):
    """Refuse, before allocating, `count` tables of [rows, cols] elements of
    `element_bytes` bytes each when together they exceed REFERENCE_TABLE_BYTES.
    ValueError naming `where`, the table, the bytes needed and the limit."""
    need = count * rows * cols * element_bytes
    if need > REFERENCE_TABLE_BYTES:
        tables = f"{count} x " if count != 1 else ""
        raise ValueError(f"{where}: {what}: {tables}[{rows}, {cols}] x {element_bytes} bytes = {need} bytes, more "
                         f"than the reference modules' limit of {REFERENCE_TABLE_BYTES} bytes "
                         f"(families.REFERENCE_TABLE_BYTES)")


def tensors_by_name(state, where):
    """`state` as a dict after checking it is a state_dict: a dict whose keys are
    all strings and whose values are all tensors (a file may hold anything; the
    converters then call str methods on the keys and tensor methods on the
    values). ValueError naming `where` and the first entry at fault."""
    if not isinstance(state, dict):
        raise ValueError(f"{where}: holds a {type(state).__name__}, expected a state_dict (a dict name -> tensor)")
    for key, value in state.items():
        if not isinstance(key, str):
            raise ValueError(f"{where}: a state_dict key of type {type(key).__name__}: expected names (strings)")
        if not torch.is_tensor(value):
            raise ValueError(f"{where}: {key[:120]!r} is a {type(value).__name__}, not a tensor")
    return dict(state)


def layer_count(state, prefix, where):
    """n when the keys starting with `prefix` are `prefix{i}.<rest>` for exactly
    i = 0..n-1 (0 when there are none). One pass over the keys: a file's key
    "layers.99999999999.x" claims 10^11 blocks, and neither a loop up to that
    number nor a set of range(n) is made. ValueError naming `where` and the key."""
    found = set()
    for key in state:
        if isinstance(key, str) and key.startswith(prefix):
            head = key[len(prefix):].split(".", 1)[0]
            if not (head.isascii() and head.isdigit()):
                raise ValueError(f"{where}: {key[:120]!r}: expected {prefix}{{i}}.<name> with i a whole number")
            found.add(int(head))
    n = len(found)
    if found and max(found) != n - 1:
        missing = min(set(range(n + 1)) - found)
        raise ValueError(f"{where}: {prefix}{missing}.* is missing but {prefix}{max(found)}.* is there: the blocks "
                         f"must be numbered 0..n-1")
    return n


def check_state_dict(state, where, required, family):
    """The checks every converter starts with: the keys `required` are there (else
    it is not that family's state_dict), and every value is a floating-point tensor."""
    for key in required:
        if key not in state:
            raise ValueError(f"{where}: no {key}: not a {family} state_dict (keys begin {sorted(state)[:4]})")
    for key, t in state.items():
        if not torch.is_tensor(t):
            raise ValueError(f"{where}: {key} is a {type(t).__name__}, not a tensor")
        if not t.is_floating_point():
            raise ValueError(f"{where}: {key} has dtype {t.dtype}, expected floating point weights")


def load_weights(model, state, strict=True):
    """model.load_state_dict(state, strict), one tensor at a time, each tensor's
    pages of a mapped file given back once it is copied (torch_file.release):
    building a reference from a 475 MiB checkpoint holds the model's own copy,
    not that and the file's pages too. strict: the names must be exactly the
    model's (torch's own error names what differs)."""
    if strict and set(state) != set(model.state_dict()):
        model.load_state_dict(state, strict=True)        # raises, naming the missing and unexpected keys
    for name, t in state.items():
        model.load_state_dict({name: t}, strict=False)   # a wrong shape is still refused, by name
        torch_file.release(t)
    for t in state.values():
        torch_file.release(t, whole=True)                # and the pages a fault mapped around them
    return model


def rename_to_upstream(tensors, top_keys, block_keys, layer_prefix, tied_head=None):
    """tinyformer names -> a family's own names, the inverse of its converter's maps:
    top_keys {upstream: ours} for the tensors outside the blocks, block_keys {upstream
    suffix: ours} inside block i, written as f"{layer_prefix}{i}.{suffix}"; tied_head
    (head, embedding) upstream names: the head is the embedding's tensor (a tied model's
    file has only the embedding)."""
    inverse_top = {v: k for k, v in top_keys.items()}
    inverse_block = {v: k for k, v in block_keys.items()}
    out = {}
    for name, t in tensors.items():
        if name in inverse_top:
            out[inverse_top[name]] = t
            continue
        _, _, i, rest = name.split(".", 3)  # transformer.layers.{i}.{rest}
        out[f"{layer_prefix}{i}.{inverse_block[rest]}"] = t
    if tied_head:
        head, embedding = tied_head
        out[head] = out[embedding]
    return out


def quantize_converted(converted, group_size):
    """Store the weights the engine reads as Q8_0 (q8_0.is_q8_weight: every linear
    layer's weight and the head) as int8 values + float32 scales in groups of
    `group_size` along K, by the engine's rule (tools/python/q8_0.py), in place;
    returns `converted`. The embeddings, norms and biases stay float. A tied head
    (tie_embeddings) becomes its own Q8_0 copy of the token embedding and the
    config says untied: runq.c's classifier is its int8 token table, and the
    head is the largest matrix of a decode step. Every group size is checked
    before any work: one that does not divide a weight's K is refused, naming it."""
    config, tensors = converted.config, dict(converted.tensors)
    if any(t.dtype == torch.int8 for t in tensors.values()):
        raise ValueError("--quantize q8_0: the weights are Q8_0 already (a llama2.c v2 file keeps its own int8 "
                         "values and group size)")
    if config.get("tie_embeddings"):
        head, embed = (("generator.weight", "tgt_embed.weight") if config["arch"] == "encoder_decoder"
                       else ("lm_head.weight", "embed.weight"))
        tensors[head] = tensors[embed]
        config["tie_embeddings"] = False
        converted.notes.append(f"--quantize q8_0: the tied head is stored as its own Q8_0 {head} (a copy of "
                               f"{embed} quantized, which stays float; the config says tie_embeddings false)")
    names = [n for n in tensors if q8_0.is_q8_weight(n)]
    for name in names:                                  # every group size checked before any work
        t = tensors[name]
        if t.dim() != 2:
            raise ValueError(f"{name} has shape {list(t.shape)}: a Q8_0 weight is a matrix [N, K]")
        q8_0.check_group(name, t.shape[1], group_size)
    for name in names:
        original = tensors[name]
        w = original.detach().to("cpu", torch.float32)
        if not bool(torch.isfinite(w).all()):
            raise ValueError(f"{name} holds NaN or inf: tinyformer refuses non-finite weights")
        q, s = q8_0.quantize_rows(w.numpy(), group_size)
        tensors[name], tensors[name + q8_0.SCALE_SUFFIX] = torch.from_numpy(q), torch.from_numpy(s)
        torch_file.release(original)
    converted.tensors = tensors
    converted.notes.append(f"--quantize q8_0: {len(names)} weights stored as int8 + float32 scales in groups of "
                           f"{group_size} along K")
    return converted


def write_converted(path, converted, dtype=None):
    """Write `converted` (a Converted) as a tinyformer checkpoint at `path`
    through the exporter's writer (tinyformer_writer.py); returns the config written. Raises
    ValueError naming the key, tensor or vocabulary entry that tinyformer would
    refuse. dtype: None (the tensors' own), "F32", "F16" or "BF16"."""
    return tinyformer_writer.write_converted(path, converted, dtype=dtype)
