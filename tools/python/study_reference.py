#!/usr/bin/python3
"""Activation patching and the logit lens in plain PyTorch: the reference that
`tinyformer patch` and `tinyformer lens` are held against
(tests/python/test_parity_study.py, run by `make parity`). It is written to be
read beside models/study/patching.h and models/study/lens.h, which define the
numbers; here each one is computed again with forward hooks on the project's
PyTorch reference modules, never with the engine.

The models. A StudyModel presents a reference module to the study: how to run
one teacher-forced pass, where each activation can be read (a "point"), and
the head that turns the last stream into logits. Two kinds:

  TwinStudy   any tinyformer file, as the stock nn.Transformer /
              nn.TransformerEncoder modules rebuilt from it
              (tools/python/torch_modules.py via torch_trace.load_modules)
  GptStudy    the GPT family module of tools/python/families/gpt.py holding a
              nanoGPT checkpoint or a minGPT state_dict (the weights before the
              converter), framed as its converted tinyformer file is

The points, named as layers/hooks.h names them:

  src_embed.output / tgt_embed.output / embed.output   the stream a stack starts with
                                        (the input of its first layer)
  {stack}.{i}.output                    the stream after layer i
  {stack}.{i}.self_attn.output          an attention's output, before it is added
  decoder.{i}.cross_attn.output         (the stock layers' attention modules)
  {stack}.{i}.ffn.output                the feed-forward block's output (linear2's)
  {call}.z                              z = Concat(heads) before W_O: head h is its
                                        columns h*Dh .. (h+1)*Dh - 1 (TwinAttention.heads,
                                        or the GPT attention's c_proj input)

The stock nn.MultiheadAttention computes z inside one function and shows it to
no hook, so a TwinStudy built with heads=True first puts each of them into a
torch_modules.TwinAttention holding the same weights (the same formula, with z
passing through its `heads` identity).

A pass (StudyModel.run) takes a Hooks object: it records every point's value
(a copy, batch row 0) and, for a patch, replaces ONE position of ONE point
(or of one head's columns of z) by the value recorded in another run, then lets
the pass go on from there, as patching.h's PatchHooks does in the engine.

Activation patching (activation_patching): the clean and the corrupted input,
teacher-forced on the same target (the given one; else an encoder-decoder's
clean greedy output, a decoder-only model's none). The answer row is the first
row, from the one predicting the first target token (decoder-only: the last
input position), where the two runs' argmax differ. There
    LD     = logit(clean answer) - logit(corrupted answer)
    effect = (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted).

The logit lens (logit_lens): the stream after the embedding and after each
layer of the stack that feeds the head, through the model's own final norm and
unembedding; per layer and position the top-K probabilities, the answer's rank
(1 + how many logits are larger) and probability (the answer: the argmax of the
real logits there), and ||x||_2. With `attribute`, direct logit attribution at
the answer position (pre-LN models): the final norm frozen at the actual last
stream, each part's centre(p) / s * w . W_U[t] (lens.h's formula), in float64.

    /usr/bin/python3 tools/python/study_reference.py data/models/reverse.safetensors patch hello hallo
    /usr/bin/python3 tools/python/study_reference.py data/models/reverse.safetensors lens hello --attribute o

prints the numbers (a table; no file is written). Needs torch.
"""

import argparse
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import safetensors_io as st  # noqa: E402
import torch_modules as tm  # noqa: E402
import torch_trace  # noqa: E402

__all__ = ["TwinStudy", "GptStudy", "Hooks", "activation_patching", "patch_rows", "logit_lens"]


# ----------------------------------------------------------------------------
# Reading and replacing activations with forward hooks
# ----------------------------------------------------------------------------


class Point:
    """Where a named activation lives: the first argument a module is called with
    (where="input", read with a forward pre-hook) or what it returns (where="output",
    a forward hook; of a tuple, its first item, as nn.MultiheadAttention returns
    (output, weights)). Every tensor is batch-first [B, L, D]."""

    def __init__(self, module, where):
        assert where in ("input", "output")
        self.module, self.where = module, where


class Hooks:
    """One pass's hooks: `record` (a dict, or None) gets every point's value (batch row
    0, a detached copy, after any patch: what flows on); `source` and `site` patch:
    site = (point name, position, columns) with columns a slice of the last axis (all
    of it, or one head's Dh columns of z); the value at [0, position, columns] becomes
    source[point name][position, columns]. Use as a context manager around a pass."""

    def __init__(self, points, record=None, source=None, site=None):
        self.points, self.record, self.source, self.site = points, record, source, site
        self.handles = []

    def _seen(self, name, value):
        """The value to go on with: patched when this is the site's point."""
        if self.site is not None and self.site[0] == name:
            _, position, columns = self.site
            if name not in self.source:
                raise KeyError(f"the source run recorded no {name}")
            value = value.clone()                                  # never write into the module's own tensor
            value[0, position, columns] = self.source[name][position, columns]
        if self.record is not None:
            if name in self.record:
                raise RuntimeError(f"{name} seen twice in one pass (a module called twice?)")
            self.record[name] = value[0].detach().clone()
        return value

    def __enter__(self):
        for name, point in self.points.items():
            if point.where == "input":
                def pre(module, args, name=name):
                    return (self._seen(name, args[0]),) + tuple(args[1:])
                self.handles.append(point.module.register_forward_pre_hook(pre))
            else:
                def post(module, args, out, name=name):
                    if isinstance(out, tuple):
                        return (self._seen(name, out[0]),) + tuple(out[1:])
                    return self._seen(name, out)
                self.handles.append(point.module.register_forward_hook(post))
        return self

    def __exit__(self, *exc):
        for handle in self.handles:
            handle.remove()
        self.handles = []


# ----------------------------------------------------------------------------
# The models
# ----------------------------------------------------------------------------


def _argmax(row):
    """The first largest entry's index (ties: the lower id, as std::max_element)."""
    return int(torch.argmax(row))


class StudyModel:
    """What the study needs of a model. Set by the subclasses:
    cfg, metadata        the tinyformer file's config and metadata (framing, vocabulary)
    encoder_decoder      True for an encoder-decoder model
    stack, embedding     the stack feeding the head ("decoder" / "layers") and its
                         embedding point ("tgt_embed.output" / "embed.output")
    points               {name: Point} (the module docstring's names)
    calls                [(call name, its stack, attention module with out_proj weight
                         [D, D] and bias)] in the order they run
    final_norm           the norm module before the head, or None; norm_kind its kind,
                         norm_eps its epsilon
    unembedding, head_bias   W_U [V, D] and b_U [V] (or None)"""

    def run(self, input_ids, target, hooks=None):
        """The teacher-forced logits [n, V] (float32) of one pass."""
        raise NotImplementedError

    def head(self, x):
        """The model's own final norm and unembedding on a stream [1, n, D]."""
        raise NotImplementedError

    # -- framing, as models/text.h and teacher_forcing.h frame an example --

    def frame(self, tokens):
        """The model's input: a decoder-only model's gets the prompt suffix (when declared
        and missing) and <bos> in front (when the config has bos_id)."""
        return torch_trace.model_input(self.cfg, self.metadata, tokens)

    def tokens(self, text):
        """A character model's tokens of `text` (one per character)."""
        if self.metadata.get("tokenizer", "char") != "char":
            raise ValueError("tokens(): only character models here; give ids")
        vocab = st.metadata_json(self.metadata, "src_vocab" if "src_vocab" in self.metadata else "vocab")
        missing = [ch for ch in text if ch not in vocab]
        if missing:
            raise ValueError(f"{missing[0]!r} is not in the model's vocabulary")
        return [vocab.index(ch) for ch in text]

    def output_label(self, token):
        return st.metadata_json(self.metadata, "vocab")[token]

    def greedy(self, input_ids):
        """The greedy output without <bos>/<eos>: argmax at the last row until <eos>
        or until the decoder's tokens fill max_len; [] when the model cannot generate
        (no eos_id, or not an encoder-decoder needing a target: patch reads a decoder-
        only model's input alone)."""
        eos = self.cfg.get("eos_id")
        if eos is None:
            return []
        out = []
        start = 1 if self.encoder_decoder else len(input_ids)
        with torch.no_grad():
            while start + len(out) < self.cfg["max_len"]:
                token = _argmax(self.run(input_ids, out)[-1])
                if token == eos:
                    break
                out.append(token)
        return out

    def decoder_tokens(self, input_ids, target):
        """The tokens the stack feeding the head reads: [<bos>] + target, or input + target."""
        if self.encoder_decoder:
            return [self.cfg["bos_id"]] + list(target)
        return list(input_ids) + list(target)


class TwinStudy(StudyModel):
    """A tinyformer file as its stock PyTorch twin (torch_trace.load_modules), run on
    PyTorch's plain path with FORMAT.md's forward (torch_modules' *_forward).
    heads=True: every nn.MultiheadAttention put into a TwinAttention first (its z
    has a hook point; needed for --what head and the attribution)."""

    def __init__(self, path, heads=False):
        self.cfg, self.metadata, self.parts = torch_trace.load_modules(path)
        self.encoder_decoder = self.cfg["arch"] == "encoder_decoder"
        if self.encoder_decoder:
            t = self.parts["transformer"]
            stacks = [("encoder", "src_embed", t.encoder, ["self_attn"]),
                      ("decoder", "tgt_embed", t.decoder, ["self_attn", "multihead_attn"])]
            self.final_norm, self.head_linear = t.decoder.norm, self.parts["generator"]
        else:
            stacks = [("layers", "embed", self.parts["layers"], ["self_attn"])]
            self.final_norm, self.head_linear = self.parts["layers"].norm, self.parts["head"]
        self.stack, self.embedding = stacks[-1][0], f"{stacks[-1][1]}.output"
        self.norm_kind = None if self.final_norm is None else self.cfg.get("norm", "layer_norm")
        self.norm_eps = self.cfg["layer_norm_eps"]
        self.unembedding, self.head_bias = self.head_linear.weight, self.head_linear.bias
        self.points, self.calls = {}, []
        for stack, embed, module, attentions in stacks:
            self.points[f"{embed}.output"] = Point(module, "input")          # what the stack is called with
            for i, layer in enumerate(module.layers):
                for attr in attentions:
                    if heads and not isinstance(getattr(layer, attr), tm.TwinAttention):
                        setattr(layer, attr, as_twin_attention(getattr(layer, attr)))
                    call = f"{stack}.{i}.{'cross_attn' if attr == 'multihead_attn' else 'self_attn'}"
                    attention = getattr(layer, attr)
                    self.points[f"{call}.output"] = Point(attention, "output")
                    if isinstance(attention, tm.TwinAttention):
                        self.points[f"{call}.z"] = Point(attention.heads, "output")
                    self.calls.append((call, stack, attention))
                self.points[f"{stack}.{i}.ffn.output"] = Point(layer.linear2, "output")
                self.points[f"{stack}.{i}.output"] = Point(layer, "output")

    def run(self, input_ids, target, hooks=None):
        # Grad enabled and the fused paths refused (torch_modules.NoFastPath): PyTorch's
        # plain path, whose every step the hooks see.
        inputs, _ = torch_trace.frame_example(self.cfg, input_ids, target)
        t = {name: torch.from_numpy(value) for name, value in inputs.items()}
        p = self.parts
        with tm.NoFastPath(), torch.enable_grad(), (hooks if hooks is not None else _Nothing()):
            if self.encoder_decoder:
                logits = tm.encoder_decoder_forward(self.cfg, p["transformer"], p["src_embed"], p["tgt_embed"],
                                                    p["generator"], t["src_ids"], t["tgt_ids"],
                                                    pos_embed=p.get("pos_embed"))
            else:
                logits = tm.single_stack_forward(self.cfg, p["layers"], p["embed"], p["head"], t["ids"],
                                                 prefix_len=t.get("prefix_len"), pos_embed=p.get("pos_embed"))
        return logits[0].detach()

    def head(self, x):
        with torch.no_grad():
            return self.head_linear(x if self.final_norm is None else self.final_norm(x))


def as_twin_attention(mha):
    """A torch_modules.TwinAttention computing what nn.MultiheadAttention `mha` computes
    (batch-first, no rotary, as many K/V heads as heads), holding its weights."""
    bias = mha.in_proj_bias is not None
    twin = tm.TwinAttention(mha.embed_dim, mha.num_heads, mha.num_heads, bias)
    with torch.no_grad():
        twin.in_proj_weight.copy_(mha.in_proj_weight)
        twin.out_proj.weight.copy_(mha.out_proj.weight)
        if bias:
            twin.in_proj_bias.copy_(mha.in_proj_bias)
            twin.out_proj.bias.copy_(mha.out_proj.bias)
    return twin


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class GptStudy(StudyModel):
    """families/gpt.py's GPT holding the family's own weights, under tinyformer's
    names (layers.{i}...), framed as the converted file `model_path` is (its config
    and vocabulary; none of its tensors is read)."""

    def __init__(self, module, model_path):
        self.module = module.eval()
        header = st.read_header(model_path)[1]
        self.metadata = header
        self.cfg = st.metadata_json(header, "config")
        self.encoder_decoder = False
        self.stack, self.embedding = "layers", "embed.output"
        blocks = module.transformer.h
        self.points = {"embed.output": Point(blocks[0], "input")}   # wte[idx] + wpe, dropout off
        self.calls = []
        for i, block in enumerate(blocks):
            call = f"layers.{i}.self_attn"
            self.points[f"{call}.z"] = Point(block.attn.c_proj, "input")
            self.points[f"{call}.output"] = Point(block.attn, "output")
            self.points[f"layers.{i}.ffn.output"] = Point(block.mlp, "output")
            self.points[f"layers.{i}.output"] = Point(block, "output")
            self.calls.append((call, "layers", _OutProj(block.attn.c_proj, block.attn.n_head)))
        self.final_norm, self.norm_kind = module.transformer.ln_f, "layer_norm"
        self.norm_eps = 1e-5                              # families/gpt.py's LayerNorm: F.layer_norm(..., 1e-5)
        self.unembedding, self.head_bias = module.lm_head.weight, module.lm_head.bias

    def run(self, input_ids, target, hooks=None):
        ids = torch.tensor([list(input_ids) + list(target)])
        with torch.no_grad(), (hooks if hooks is not None else _Nothing()):
            return self.module(ids)[0]

    def head(self, x):
        with torch.no_grad():
            return self.module.lm_head(self.module.transformer.ln_f(x))


class _OutProj:
    """A GPT attention's W_O (c_proj) as TwinAttention shows it: .out_proj, .num_heads."""

    def __init__(self, c_proj, n_head):
        self.out_proj, self.num_heads = c_proj, n_head


# ----------------------------------------------------------------------------
# Activation patching
# ----------------------------------------------------------------------------


def patch_rows(model, what):
    """[(row name, point, columns or None for all, its stack)] of `what`, in the order
    the data flows (patching.h): resid, attn_out, mlp_out or head."""
    rows = []
    if what == "head":
        for call, stack, attention in model.calls:
            heads = attention.num_heads
            dh = model.cfg["d_model"] // heads
            for h in range(heads):
                rows.append((f"{call}.h{h}", f"{call}.z", slice(h * dh, (h + 1) * dh), stack))
        return rows
    stacks = [("encoder", "src_embed"), ("decoder", "tgt_embed")] if model.encoder_decoder else [("layers", "embed")]
    for stack, embed in stacks:
        if what == "resid":
            rows.append((f"{embed}.output", f"{embed}.output", None, stack))
        layers = model.cfg[{"encoder": "num_encoder_layers", "decoder": "num_decoder_layers"}.get(stack, "num_layers")]
        for i in range(layers):
            names = {"resid": [f"{stack}.{i}.output"],
                     "attn_out": [f"{stack}.{i}.self_attn.output"] + ([f"{stack}.{i}.cross_attn.output"]
                                                                        if stack == "decoder" else []),
                     "mlp_out": [f"{stack}.{i}.ffn.output"]}[what]
            rows.extend((name, name, None, stack) for name in names)
    return rows


def activation_patching(model, clean_tokens, corrupted_tokens, what="resid", target=None):
    """The experiment of patching.h on `model` (a StudyModel). Returns a dict: input
    ids, target, answer_row, answers, LDs, rows (names), and effect [rows][positions]
    with each row's positions those of its stack (encoder rows: the source's)."""
    if len(clean_tokens) != len(corrupted_tokens):
        raise ValueError("patching needs inputs of the same length")
    clean_input, corrupted_input = model.frame(clean_tokens), model.frame(corrupted_tokens)
    if len(clean_input) != len(corrupted_input):  # the prompt suffix added to one only ("abcd", "abc=")
        raise ValueError("patching needs inputs of the same length as the model reads them")
    if target is None:
        target = model.greedy(clean_input) if model.encoder_decoder else []

    clean_run = {}
    with torch.no_grad():
        clean_logits = model.run(clean_input, target, Hooks(model.points, record=clean_run))
        corrupted_logits = model.run(corrupted_input, target)
    # The answer row: the first predicted row where the two runs' argmax differ.
    row = 0 if model.encoder_decoder else len(clean_input) - 1
    while row < clean_logits.shape[0] and _argmax(clean_logits[row]) == _argmax(corrupted_logits[row]):
        row += 1
    if row == clean_logits.shape[0]:
        raise ValueError("the clean and the corrupted input give the same answer everywhere")
    clean_answer, corrupted_answer = _argmax(clean_logits[row]), _argmax(corrupted_logits[row])

    def logit_diff(logits):
        return float(logits[row, clean_answer]) - float(logits[row, corrupted_answer])

    ld_clean, ld_corrupted = logit_diff(clean_logits), logit_diff(corrupted_logits)
    n_stream = len(model.decoder_tokens(clean_input, target))
    names, effect, patched_logits = [], [], []
    for name, point, columns, stack in patch_rows(model, what):
        positions = len(clean_input) if stack == "encoder" else n_stream
        effects, logits_of_row = [], []
        for p in range(positions):
            site = (point, p, slice(None) if columns is None else columns)
            with torch.no_grad():
                logits = model.run(corrupted_input, target, Hooks(model.points, source=clean_run, site=site))
            effects.append((logit_diff(logits) - ld_corrupted) / (ld_clean - ld_corrupted))
            logits_of_row.append((float(logits[row, clean_answer]), float(logits[row, corrupted_answer])))
        names.append(name)
        effect.append(effects)
        patched_logits.append(logits_of_row)
    return {"clean_input": clean_input, "corrupted_input": corrupted_input, "target": list(target),
            "answer_row": row, "clean_answer": clean_answer, "corrupted_answer": corrupted_answer,
            "ld_clean": ld_clean, "ld_corrupted": ld_corrupted,
            "answer_logits": {"clean": (float(clean_logits[row, clean_answer]),
                                        float(clean_logits[row, corrupted_answer])),
                              "corrupted": (float(corrupted_logits[row, clean_answer]),
                                            float(corrupted_logits[row, corrupted_answer]))},
            "layers": names, "effect": effect, "patched_logits": patched_logits}


# ----------------------------------------------------------------------------
# The logit lens and direct logit attribution
# ----------------------------------------------------------------------------


def logit_lens(model, tokens, top=5, target=None, attribute=None):
    """lens.h's report on `model`: tokens are the user's (framed here); target None:
    the greedy output (a model without eos_id: none). Returns a dict: layers,
    tokens, answers, answer_position, per layer [positions] of {top: [(id, p)],
    answer_rank, answer_p}, norms [layer][position], logits, layer_logits and,
    with `attribute` (a token id), the attribution {parts: {name: logit}, sum,
    logit, scale, norm, bounds: {name: (max |part_d|, sum_d |dir_d|)}}."""
    if top < 1:
        raise ValueError(f"top must be >= 1, got {top}")
    input_ids = model.frame(tokens)
    if target is None:
        target = model.greedy(input_ids)
    stream = {}
    with torch.no_grad():
        logits = model.run(input_ids, target, Hooks(model.points, record=stream))
    n, vocabulary = logits.shape
    answers = [_argmax(logits[p]) for p in range(n)]
    layers = model.cfg["num_decoder_layers" if model.encoder_decoder else "num_layers"]
    report = {"tokens": model.decoder_tokens(input_ids, target), "target": list(target), "answers": answers,
              "answer_position": 0 if model.encoder_decoder else len(input_ids) - 1,
              "layers": ["embed"] + [f"{model.stack}.{i}" for i in range(layers)], "cells": [], "norms": [],
              "layer_logits": [], "logits": logits}
    for point in [model.embedding] + [f"{model.stack}.{i}.output" for i in range(layers)]:
        x = stream[point]                                                  # [n, D]
        lens = model.head(x[None])[0]                                      # [n, V]
        report["layer_logits"].append(lens)
        cells = []
        for p in range(n):
            row = lens[p].double()
            probabilities = torch.softmax(row, dim=0)
            order = sorted(range(vocabulary), key=lambda v: (-float(row[v]), v))[:min(top, vocabulary)]
            cells.append({"top": [(v, float(probabilities[v])) for v in order],
                          "answer_rank": 1 + int((row > row[answers[p]]).sum()),
                          "answer_p": float(probabilities[answers[p]])})
        report["cells"].append(cells)
        report["norms"].append([float(x[p].double().norm()) for p in range(n)])
    if attribute is not None:
        report["attribution"] = direct_logit_attribution(model, stream, report["answer_position"], attribute,
                                                         float(logits[report["answer_position"], attribute]))
    return report


def frozen_norm(model, x):
    """(centred, scale s, weight w or None, bias b or None) of the final norm frozen at
    the stream x [D] (float64): lens.h's table of the three norms, or none."""
    if model.final_norm is None:
        return False, 1.0, None, None
    x = x.double()
    eps = float(model.norm_eps)
    weight = model.final_norm.weight.detach().double()
    bias = getattr(model.final_norm, "bias", None)
    bias = None if bias is None else bias.detach().double()
    if model.norm_kind == "layer_norm":
        return True, math.sqrt(float(((x - x.mean()) ** 2).mean()) + eps), weight, bias
    if model.norm_kind == "layer_norm_std":
        return True, math.sqrt(float(((x - x.mean()) ** 2).sum()) / (x.numel() - 1)) + eps, weight, bias
    if model.norm_kind == "rms_norm":
        return False, math.sqrt(float((x * x).mean()) + eps), weight, None
    raise ValueError(f"no frozen form of the norm {model.norm_kind!r}")


def direct_logit_attribution(model, stream, position, token, logit):
    """Each part's direct contribution to `token`'s logit at `position` (pre-LN):
    the last stream is embed + sum over layers of each attention call's heads
    (z_h W_O,h^T), its out_proj bias, and the FFN's output; the final norm frozen at
    that stream is linear, so logit = sum over parts of centre(part) / s * w . u
    + b . u + b_U[t], u = W_U[t]. In float64, from the recorded float32 values."""
    if not model.cfg["norm_first"]:
        raise ValueError("direct logit attribution needs a pre-LN model")
    layers = model.cfg["num_decoder_layers" if model.encoder_decoder else "num_layers"]
    last = stream[f"{model.stack}.{layers - 1}.output"][position]
    centred, scale, weight, bias = frozen_norm(model, last)
    u = model.unembedding[token].detach().double()
    direction = u / scale if weight is None else weight * u / scale

    bounds = {}     # name -> (max |part_d|, sum_d |direction_d|): what a part's error scales with

    def direct(name, part):
        part = part.double()
        bounds[name] = (float(part.abs().max()), float(direction.abs().sum()))
        return float(((part - part.mean()) if centred else part) @ direction)

    parts = {"embed": direct("embed", stream[model.embedding][position])}
    for i in range(layers):
        for call, stack, attention in model.calls:
            if stack != model.stack or not call.startswith(f"{stack}.{i}."):
                continue
            z = stream[f"{call}.z"][position].double()                            # [D]
            w_out = attention.out_proj.weight.detach().double()                   # [D, D]
            dh = z.numel() // attention.num_heads
            for h in range(attention.num_heads):
                columns = slice(h * dh, (h + 1) * dh)
                parts[f"{call}.head{h}"] = direct(f"{call}.head{h}", w_out[:, columns] @ z[columns])
            if attention.out_proj.bias is not None:
                parts[f"{call}.bias"] = direct(f"{call}.bias", attention.out_proj.bias.detach())
        name = f"{model.stack}.{i}.ffn"
        parts[name] = direct(name, stream[f"{name}.output"][position])
    constant = 0.0 if model.head_bias is None else float(model.head_bias[token])
    if bias is not None:
        constant += float(bias @ u)
    parts["bias"] = constant
    bounds["bias"] = (0.0 if bias is None else float(bias.abs().max()), float(u.abs().sum()))
    return {"token": token, "parts": parts, "sum": sum(parts.values()), "logit": logit, "scale": scale,
            "norm": model.norm_kind or "none", "bounds": bounds}


# ----------------------------------------------------------------------------
# The command line: the numbers as a table
# ----------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(prog="study_reference.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("model", metavar="MODEL.safetensors")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("patch", help="activation patching of a character model's CLEAN and CORRUPTED")
    p.add_argument("clean")
    p.add_argument("corrupted")
    p.add_argument("--what", default="resid", choices=["resid", "attn_out", "mlp_out", "head"])
    q = sub.add_parser("lens", help="the logit lens of a character model's TEXT")
    q.add_argument("text")
    q.add_argument("--top", type=int, default=3)
    q.add_argument("--attribute", metavar="TOKEN", help="a token of the output vocabulary")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    try:
        return _print(args)
    except (torch_trace.TraceError, OSError, ValueError, KeyError) as e:
        # One line, and no control character of a path or a token reaches the terminal.
        message = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(e))
        print(f"study_reference: error: {message}", file=sys.stderr)
        return 1


def _print(args):
    model = TwinStudy(args.model, heads=args.command == "lens" or args.what == "head")
    if args.command == "patch":
        r = activation_patching(model, model.tokens(args.clean), model.tokens(args.corrupted), args.what)
        print(f"answer row {r['answer_row']}: {model.output_label(r['clean_answer'])!r} vs "
              f"{model.output_label(r['corrupted_answer'])!r}; LD_clean {r['ld_clean']:.4f}, "
              f"LD_corrupted {r['ld_corrupted']:.4f}")
        for name, effects in zip(r["layers"], r["effect"]):
            print(f"{name:28s} " + " ".join(f"{e:7.3f}" for e in effects))
        return 0
    vocab = st.metadata_json(model.metadata, "vocab")
    if args.attribute is not None and args.attribute not in vocab:
        raise ValueError(f"--attribute {args.attribute!r} is not a token of the output vocabulary")
    r = logit_lens(model, model.tokens(args.text), top=args.top,
                   attribute=None if args.attribute is None else vocab.index(args.attribute))
    for layer, cells, norms in zip(r["layers"], r["cells"], r["norms"]):
        print(layer)
        for p, (cell, norm) in enumerate(zip(cells, norms)):
            top = " ".join(f"{vocab[v]!r} {prob:.3f}" for v, prob in cell["top"])
            print(f"  {p:3d}  rank {cell['answer_rank']:3d}  p {cell['answer_p']:.4f}  |x| {norm:8.3f}  {top}")
    if "attribution" in r:
        for name, value in r["attribution"]["parts"].items():
            print(f"  {name:32s} {value:9.4f}")
        print(f"  {'sum':32s} {r['attribution']['sum']:9.4f}  logit {r['attribution']['logit']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
