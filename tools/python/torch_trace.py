#!/usr/bin/python3
"""Every named activation of one forward pass of a checkpoint's PyTorch twin,
under the names `tinyformer trace` writes (docs/FORMAT.md section 3), so that
tools/python/compare_trace.py can name the first place where tinyformer and PyTorch
part. Every layout the engine loads has a twin: bias-free, separate q/k/v,
gelu_tanh, layer_norm_std, RMSNorm, SwiGLU, rotary, ALiBi, grouped-query,
mask_value, tied heads (every file of data/families and data/models).

    /usr/bin/python3 tools/python/torch_trace.py MODEL.safetensors --inputs IN.safetensors --output TRACE.safetensors
    /usr/bin/python3 tools/python/torch_trace.py MODEL.safetensors --ids 5,17,3 [--target-ids 4,9] --output TRACE.safetensors
    /usr/bin/python3 tools/python/torch_trace.py MODEL.safetensors --like OURS.safetensors --output TRACE.safetensors

The twin is stock nn.Transformer / nn.TransformerEncoder modules rebuilt from
the checkpoint (tools/python/torch_modules.py: build_module shaped by every
optional config key, twin_state for the file's names; via tinyformer_export's
loader, which first holds the config's sizes to the tensors), with
torch_modules.TwinAttention where nn.MultiheadAttention cannot compute the
attention (rotary, n_kv_heads < nhead, mask_value), run on PyTorch's plain
path (grad enabled, fused fast paths refused: torch_modules.NoFastPath) with
the forward of docs/FORMAT.md (torch_modules.encoder_decoder_forward /
single_stack_forward). A file whose tensors are not those its config names is
refused in one line naming the first such tensor. What is recorded, and how:

  src_embed.output, tgt_embed.output / embed.output   the input the encoder /
                                    decoder / stack is called with (a
                                    forward pre-hook): E[ids] x scale + P
  STACK.i.input, STACK.i.output     each TransformerEncoderLayer /
                                    TransformerDecoderLayer's input and output
  STACK.i.ATTN.q .k .v              F.linear of the attention's inputs with the
                                    q, k, v slices of in_proj_weight / in_proj_bias
                                    (a TwinAttention's own: k, v n_kv_heads wide)
  STACK.i.ATTN.q_unrotated .k_unrotated   rotary only: q, k before they are
                                    turned (q, k are after)
  STACK.i.ATTN.scores               per head q_h k_h^T / sqrt(Dk) [B,H,L,S]
  STACK.i.ATTN.mask                 U8 [B,L,S], 1 = may attend: the attn_mask and
                                    key_padding_mask PyTorch was given (the same
                                    for every head, checked)
  STACK.i.ATTN.bias                 ALiBi only: the float attn_mask's finite part
                                    [B,H,L,S], 0 at blocked cells
  STACK.i.ATTN.weights              the attention's own per-head weights
                                    (need_weights=True, average_attn_weights=False)
  STACK.i.ATTN.z                    weights @ v_h, heads concatenated [B,L,D]
                                    (query head h reads K/V head h // (H / Hkv))
  STACK.i.ATTN.output               the attention's own output (after
                                    out_proj); out_proj(z) agrees with it
  STACK.i.ffn.hidden                the input of linear2 (= activation(linear1(x));
                                    dropout is the identity in eval mode)
  encoder.norm.output, decoder.norm.output, layers.norm.output, logits

A query whose every key is masked (a padded query of a left-padded causal
batch) gets NaN from PyTorch's softmax; as in torch_modules.Capture(sanitize=True)
its weight row and attention output row are written as 0, FORMAT's
definition, so that no NaN spreads. Other padded positions hold what PyTorch
computes there (FORMAT defines more of them as 0, tinyformer writes those
zeros); tools/python/compare_trace.py never compares padded positions.

--ids frames the example as `tinyformer trace --ids` does (models/text.h,
models/study/teacher_forcing.h): decoder_only gets <bos> in front (when the config
has bos_id) and the prompt suffix at the end (when declared and missing), and
reads input + target; encoder_decoder's decoder reads [<bos>] + target. Without
--target-ids the target is PyTorch's greedy output (argmax, first on ties, up
to <eos> or max_len), as tinyformer takes its own greedy output; when the two
could differ on a near tie, give --target-ids, or --like OURS, which takes
input_ids and decoder_ids from the metadata of a `tinyformer trace` file.

Python:
    names, tensors = trace_modules(cfg, parts, inputs)   # parts as tinyformer_export's loader returns
    names, tensors, metadata = trace_file(MODEL, inputs=...) or trace_file(MODEL, ids=[...], target_ids=[...])
Standard library, torch and numpy only.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import safe_write  # noqa: E402
import safetensors_io as st  # noqa: E402
import tinyformer_export as te  # noqa: E402
import torch_modules as tm  # noqa: E402

__all__ = ["trace_modules", "trace_file", "load_modules", "frame_example", "greedy_target", "TraceError"]


class TraceError(RuntimeError):
    """Something the trace cannot be made of (bad ids, inconsistent masks, ...)."""


class _Record:
    """Names in the order recorded, and their values (numpy F32, masks U8)."""

    def __init__(self):
        self.names = []
        self.tensors = {}

    def __call__(self, name, value):
        if name in self.tensors:
            raise TraceError(f"{name} recorded twice (a module called twice?)")
        if torch.is_tensor(value):
            value = value.detach()
            value = value.numpy() if value.dtype == torch.uint8 else value.float().numpy()
        self.names.append(name)
        self.tensors[name] = np.ascontiguousarray(value)


def _batch_major(x, batch_first):
    return x if batch_first else x.transpose(0, 1)


def _stacks(cfg, parts):
    """[(stack name, nn.TransformerEncoder/Decoder, attention names)] in forward order."""
    if cfg["arch"] == "encoder_decoder":
        t = parts["transformer"]
        return [("encoder", t.encoder, [("self_attn", "self_attn")]),
                ("decoder", t.decoder, [("self_attn", "self_attn"), ("multihead_attn", "cross_attn")])]
    return [("layers", parts["layers"], [("self_attn", "self_attn")])]


def _parts_of_call(mha, qx, kx, vx, attn_mask, blocked):
    """The names of one attention call before the softmax: {q, k, v, scores, [bias]}
    (and q_unrotated, k_unrotated with rotary positions), batch-major. A
    TwinAttention keeps them from its own pass (.last); for nn.MultiheadAttention
    they are F.linear of the inputs with the q, k, v slices of in_proj_weight /
    in_proj_bias and per-head q_h k_h^T / sqrt(Dk), and the bias is a float
    attn_mask's finite part (ALiBi)."""
    if isinstance(mha, tm.TwinAttention):
        return {k: v for k, v in mha.last.items() if k not in ("weights", "z", "output")}
    d, h = mha.embed_dim, mha.num_heads
    weight, bias = mha.in_proj_weight, mha.in_proj_bias
    slices = [(0, d), (d, 2 * d), (2 * d, 3 * d)]
    q, k, v = (F.linear(x, weight[lo:hi], None if bias is None else bias[lo:hi])
               for x, (lo, hi) in zip((qx, kx, vx), slices))
    parts = {"q": q, "k": k, "v": v, "scores": tm.head_scores(q, k, h, h)}
    added = tm.additive_part(attn_mask, blocked)
    if added is not None:
        parts["bias"] = added
    return parts


ORDER = ("q_unrotated", "k_unrotated", "q", "k", "v", "scores", "mask", "bias", "weights", "z", "output")


def _watch_attention(mha, prefix, record, batch_first):
    """Wrap mha.forward (already wrapped by torch_modules.Capture, which asks for
    per-head weights and zeroes fully masked padded rows) to record every name of
    the call under `prefix`, in FORMAT.md's order (ORDER): _parts_of_call's, the
    mask, the weights as the call returns them, z = weights @ v_h (query head h
    reading K/V head h // (H / Hkv)) and the output."""
    inner = mha.forward

    def forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True):
        out, w = inner(query, key, value, key_padding_mask=key_padding_mask, need_weights=True,
                       attn_mask=attn_mask, average_attn_weights=False)
        with torch.no_grad():
            qx, kx, vx = (_batch_major(x, batch_first) for x in (query, key, value))
            b, h, l, s = w.shape
            blocked = tm.blocked_cells((b, h, l, s), attn_mask, key_padding_mask)
            if not bool((blocked == blocked[:, :1]).all()):
                raise TraceError(f"{prefix}: the mask differs between heads; the trace has one mask per batch row")
            found = _parts_of_call(mha, qx, kx, vx, attn_mask, blocked)
            found["mask"] = (~blocked[:, 0]).to(torch.uint8)                  # [B, L, S]
            hkv = found["v"].shape[-1] // (mha.embed_dim // h)
            found["weights"] = w
            found["z"] = (w.detach() @ tm.heads_of(found["v"], hkv, h)).transpose(1, 2).reshape(b, l, mha.embed_dim)
            found["output"] = _batch_major(out, batch_first)
        for name in ORDER:
            if name in found:
                record(f"{prefix}.{name}", found[name])
        if need_weights:
            return out, (w.mean(dim=1) if average_attn_weights else w)
        return out, None

    mha.forward = forward


def trace_modules(cfg, parts, inputs):
    """Run the modules once on `inputs` (numpy, FORMAT.md section 2's names) and
    return (names in forward order, {name: numpy array}). `parts`: {"transformer",
    "src_embed", "tgt_embed", "generator", "pos_embed"} (encoder_decoder) or
    {"layers", "embed", "head", "pos_embed"}, as tinyformer_export's loader gives
    them; either batch_first. The modules are left as they were."""
    record = _Record()
    stacks = _stacks(cfg, parts)
    names = {}
    for stack_name, stack, attns in stacks:
        for i, layer in enumerate(stack.layers):
            for attr, attn_name in attns:
                names[getattr(layer, attr)] = f"{stack_name}.{i}.{attn_name}"
    capture = tm.Capture(names, sanitize=True, query_padding=_cross_query_padding(cfg, parts, inputs))
    handles = []
    try:
        for mha, prefix in names.items():
            _watch_attention(mha, prefix, record, mha.batch_first)
        for stack_name, stack, _ in stacks:
            bf = stack.layers[0].self_attn.batch_first
            embed = {"encoder": "src_embed", "decoder": "tgt_embed", "layers": "embed"}[stack_name]
            handles.append(stack.register_forward_pre_hook(
                lambda m, args, name=f"{embed}.output", bf=bf: record(name, _batch_major(args[0], bf))))
            for i, layer in enumerate(stack.layers):
                p = f"{stack_name}.{i}"
                handles.append(layer.register_forward_pre_hook(
                    lambda m, args, name=f"{p}.input", bf=bf: record(name, _batch_major(args[0], bf))))
                handles.append(layer.linear2.register_forward_pre_hook(
                    lambda m, args, name=f"{p}.ffn.hidden", bf=bf: record(name, _batch_major(args[0], bf))))
                handles.append(layer.register_forward_hook(
                    lambda m, args, out, name=f"{p}.output", bf=bf: record(name, _batch_major(out, bf))))
            if stack.norm is not None:
                handles.append(stack.norm.register_forward_hook(
                    lambda m, args, out, name=f"{stack_name}.norm.output", bf=bf: record(name, _batch_major(out, bf))))
        logits = _forward(cfg, parts, inputs)
    finally:
        for handle in handles:
            handle.remove()
        capture.remove()
    record("logits", logits)
    return record.names, record.tensors


def _cross_query_padding(cfg, parts, inputs):
    """{cross-attention: the target's padding [B, T]}: a cross-attention query
    is padding where the target is (FORMAT.md section 1), so a batch row whose
    source and target are both all padding is a valid batch."""
    target = inputs.get("tgt_key_padding_mask")
    if cfg["arch"] != "encoder_decoder" or target is None:
        return {}
    padded = torch.from_numpy(np.asarray(target)).bool()
    return {layer.multihead_attn: padded for layer in parts["transformer"].decoder.layers}


def _forward(cfg, parts, inputs):
    """FORMAT.md's forward on PyTorch's plain path: logits [B, T, V]."""
    t = {k: torch.from_numpy(np.asarray(v)) for k, v in inputs.items()}
    for k in list(t):
        if k.endswith("key_padding_mask"):
            t[k] = t[k].bool()
        elif t[k].dtype != torch.bool:
            t[k] = t[k].long()
    with tm.NoFastPath(), torch.enable_grad():
        if cfg["arch"] == "encoder_decoder":
            logits = tm.encoder_decoder_forward(
                cfg, parts["transformer"], parts["src_embed"], parts["tgt_embed"], parts["generator"], t["src_ids"],
                t["tgt_ids"], t.get("src_key_padding_mask"), t.get("tgt_key_padding_mask"), parts.get("pos_embed"))
        else:
            logits = tm.single_stack_forward(cfg, parts["layers"], parts["embed"], parts["head"], t["ids"],
                                             t.get("key_padding_mask"), t.get("prefix_len"), parts.get("pos_embed"))
    return logits.detach().float()


def load_modules(model_path):
    """(config, metadata, stock modules holding the file's values in float32)."""
    named = te.not_a_checkpoint(str(model_path))
    if named is not None:
        raise TraceError(named)
    tensors, metadata = st.read(model_path)
    if "config" not in metadata:
        raise TraceError(f"{model_path}: no config in __metadata__; not a tinyformer checkpoint")
    try:
        cfg = st.metadata_json(metadata, "config")
    except ValueError as e:
        raise TraceError(f"{model_path}: {e}") from None
    try:
        te._sizes_held(model_path, tensors, cfg)    # before building what the config claims
        parts = te._modules_from_file(tensors, cfg)  # the exporter's own loader: the twin, strict state_dict
    except ValueError as e:
        message = str(e)
        if not message.startswith(f"{model_path}:"):
            message = f"{model_path}: no PyTorch twin can be built from its config and tensors ({message})"
        raise TraceError(message) from None
    for module in parts.values():
        if module is not None:
            for p in module.parameters():
                p.requires_grad_(True)              # grad enabled keeps PyTorch on its plain path
    return cfg, metadata, parts


# ----------------------------------------------------------------------------
# One example, framed as tinyformer frames it (models/text.h, models/study/teacher_forcing.h)
# ----------------------------------------------------------------------------


def _input_size(cfg):
    return cfg["src_vocab_size"] if cfg["arch"] == "encoder_decoder" else cfg["vocab_size"]


def _output_size(cfg):
    return cfg["tgt_vocab_size"] if cfg["arch"] == "encoder_decoder" else cfg["vocab_size"]


def _check_ids(ids, size, what):
    for i, t in enumerate(ids):
        if not 0 <= t < size:
            raise TraceError(f"{what} id {t} (item {i}) is outside the vocabulary 0..{size - 1}")


def _suffix_ids(metadata):
    """The prompt suffix as token ids (models/text.h), or []."""
    suffix = metadata.get("prompt_suffix")
    if not suffix:
        return []
    if "vocab" not in metadata:
        raise TraceError("the model declares a prompt_suffix but has no vocabulary to read it with")
    vocab = st.metadata_json(metadata, "vocab")
    pieces = list(suffix) if metadata.get("tokenizer", "char") == "char" else suffix.split()
    index = {token: i for i, token in enumerate(vocab)}
    missing = [p for p in pieces if p not in index]
    if missing:
        raise TraceError(f"prompt_suffix {suffix!r}: {missing[0]!r} is not in the vocabulary")
    return [index[p] for p in pieces]


def model_input(cfg, metadata, tokens):
    """models/text.h model_input: decoder_only gets the prompt suffix (when
    declared and missing) and <bos> in front (when the config has bos_id)."""
    tokens = list(tokens)
    _check_ids(tokens, _input_size(cfg), "input")
    if cfg["arch"] == "decoder_only":
        suffix = _suffix_ids(metadata)
        if suffix and tokens[len(tokens) - len(suffix):] != suffix:
            tokens += suffix
        if cfg.get("bos_id") is not None:
            tokens.insert(0, cfg["bos_id"])
    if not tokens:
        raise TraceError("the input is empty")
    return tokens


def frame_example(cfg, input_ids, target):
    """(forward inputs, decoder ids) of the teacher-forced pass: input_ids is the
    model's input as model_input frames it; target the target tokens."""
    _check_ids(target, _output_size(cfg), "target")
    if cfg["arch"] == "encoder_decoder":
        decoder = ([cfg["bos_id"]] if cfg.get("bos_id") is not None else []) + list(target)
        if not decoder:
            raise TraceError("the target is empty and the config has no bos_id to start the decoder with")
        return {"src_ids": np.array([input_ids], np.int64), "tgt_ids": np.array([decoder], np.int64)}, decoder
    if cfg["arch"] == "encoder_only" and target:
        raise TraceError("an encoder_only model has no target; it reads the input tokens only")
    decoder = list(input_ids) + list(target)
    inputs = {"ids": np.array([decoder], np.int64)}
    if cfg["attention"] == "prefix_lm":
        inputs["prefix_len"] = np.array([len(input_ids)], np.int64)
    return inputs, decoder


def greedy_target(cfg, parts, input_ids, max_new_tokens=1024):
    """PyTorch's greedy output (without <bos>/<eos>) for the teacher-forced pass
    when no target is given, as tinyformer's target_or_greedy: argmax (first on
    ties) until <eos> or the sequence fills max_len. [] for a model that cannot
    generate (encoder_only, or no eos_id); encoder_decoder needs bos_id and eos_id."""
    eos, bos = cfg.get("eos_id"), cfg.get("bos_id")
    if cfg["arch"] == "encoder_decoder":
        if bos is None or eos is None:
            raise TraceError(f"the model's config has no {'bos_id' if bos is None else 'eos_id'}, so it cannot "
                             f"generate a target; give --target-ids")
    elif cfg["arch"] == "encoder_only" or eos is None:
        return []
    out = []
    prompt = len(input_ids) if cfg["arch"] == "decoder_only" else 1
    while len(out) < max_new_tokens and prompt + len(out) < cfg["max_len"]:
        inputs, _ = frame_example(cfg, input_ids, out)
        token = int(torch.argmax(_forward(cfg, parts, inputs)[0, -1]))
        if token == eos:
            break
        out.append(token)
    return out


def trace_file(model_path, inputs=None, ids=None, target_ids=None, framed=None):
    """(names, tensors, metadata) of one pass of the stock modules rebuilt from
    `model_path`: on `inputs` (numpy dict or a path to an inputs .safetensors),
    or on one example: `ids` (the user's tokens, framed as tinyformer frames
    them) and `target_ids` (None: the greedy output), or `framed` = (input_ids,
    decoder_ids) as a tinyformer trace's metadata holds them."""
    cfg, model_meta, parts = load_modules(model_path)
    metadata = {"producer": f"tools/python/torch_trace.py (PyTorch {torch.__version__}, plain path)"}
    if inputs is not None:
        if isinstance(inputs, (str, Path)):
            metadata["inputs"] = str(inputs)
            inputs = st.read(inputs)[0]
    else:
        if framed is not None:
            input_ids, decoder = (list(map(int, x)) for x in framed)
            if cfg["arch"] == "encoder_decoder":
                skip = 1 if cfg.get("bos_id") is not None else 0
                target = decoder[skip:]
            else:
                if decoder[:len(input_ids)] != input_ids:
                    raise TraceError(f"decoder_ids {decoder} do not start with input_ids {input_ids}")
                target = decoder[len(input_ids):]
        else:
            input_ids = model_input(cfg, model_meta, ids)
            target = greedy_target(cfg, parts, input_ids) if target_ids is None else list(target_ids)
        inputs, decoder = frame_example(cfg, input_ids, target)
        if framed is not None and decoder != list(framed[1]):
            raise TraceError(f"decoder_ids {list(framed[1])} are not [<bos>] + a target for this model")
        metadata["input_ids"] = json.dumps(input_ids, separators=(",", ":"))
        metadata["decoder_ids"] = json.dumps(decoder, separators=(",", ":"))
    names, tensors = trace_modules(cfg, parts, inputs)
    metadata["names"] = json.dumps(names, separators=(",", ":"))
    return names, tensors, metadata


def _ids(text, flag):
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{flag}: expected whole numbers separated by commas, got {text!r}")
    return values


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="torch_trace.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Record every named activation of one forward pass of a tinyformer checkpoint's PyTorch "
                    "twin (stock PyTorch modules rebuilt from it, for every layout the engine loads: bias-free, "
                    "separate q/k/v, gelu_tanh, layer_norm_std, RMSNorm, SwiGLU, rotary, ALiBi, grouped-query, "
                    "tied heads), under the names `tinyformer trace` writes (docs/FORMAT.md section 3). Compare "
                    "with tools/python/compare_trace.py.",
        epilog="""examples:
  build/tinyformer trace M.safetensors --inputs IN.safetensors --output ours.safetensors
  /usr/bin/python3 tools/python/torch_trace.py M.safetensors --inputs IN.safetensors --output torch.safetensors
  /usr/bin/python3 tools/python/compare_trace.py ours.safetensors torch.safetensors

  build/tinyformer trace M.safetensors --ids 5,17,3 --target-ids 4,9 --output ours.safetensors
  /usr/bin/python3 tools/python/torch_trace.py M.safetensors --ids 5,17,3 --target-ids 4,9 --output torch.safetensors

Without --target-ids the target is PyTorch's greedy output; --like ours.safetensors takes
the framed input and decoder ids from a tinyformer trace instead. More: pydoc3 tools/python/torch_trace.py""")
    ap.add_argument("model", metavar="MODEL.safetensors")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--inputs", metavar="IN.safetensors", help="a `forward` inputs file (docs/FORMAT.md section 2)")
    src.add_argument("--ids", type=lambda t: _ids(t, "--ids"), metavar="5,17,3",
                     help="one example's tokens, framed as `tinyformer trace --ids` frames them")
    src.add_argument("--like", metavar="TRACE.safetensors",
                     help="the example of a `tinyformer trace` file (its input_ids and decoder_ids metadata)")
    ap.add_argument("--target-ids", type=lambda t: _ids(t, "--target-ids"), metavar="4,9",
                    help="with --ids: the target (default: PyTorch's greedy output)")
    ap.add_argument("--output", required=True, metavar="TRACE.safetensors")
    args = ap.parse_args(argv)
    if args.target_ids is not None and args.ids is None:
        ap.error("--target-ids goes with --ids")
    torch.set_num_threads(1)
    inputs = [(flag, path) for flag, path in [("MODEL", args.model), ("--inputs", args.inputs), ("--like", args.like)]
              if path is not None]
    try:
        safe_write.check_outputs([("--output", args.output)], inputs)      # before any work
        framed = None
        if args.like:
            meta = st.read_header(args.like)[1]
            if "input_ids" not in meta or "decoder_ids" not in meta:
                raise TraceError(f"{args.like}: no input_ids / decoder_ids metadata (a `tinyformer trace` of "
                                 f"TEXT or --ids writes them; for --inputs traces use --inputs)")
            framed = (json.loads(meta["input_ids"]), json.loads(meta["decoder_ids"]))
        names, tensors, metadata = trace_file(args.model, inputs=args.inputs, ids=args.ids,
                                              target_ids=args.target_ids, framed=framed)
    except (TraceError, OSError, ValueError, KeyError, RuntimeError) as e:
        print(f"torch_trace: error: {e}", file=sys.stderr)
        return 1
    try:
        st.write(("--output", args.output), tensors, metadata)
    except ValueError as e:
        print(f"torch_trace: error: {e}", file=sys.stderr)
        return 1
    print(f"torch_trace: wrote {len(names)} activations to {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
