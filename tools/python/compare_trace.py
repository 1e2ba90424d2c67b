#!/usr/bin/python3
"""Compare two activation traces (`tinyformer trace`, tools/python/torch_trace.py;
docs/FORMAT.md section 3) name by name in forward order, and name the first
activation where they part.

    /usr/bin/python3 tools/python/compare_trace.py A.safetensors B.safetensors [--atol 1e-4 --rtol 1e-4] [--all]

Python:
    result = compare_traces(a_tensors, a_metadata, b_tensors, b_metadata, atol=1e-4, rtol=1e-4)
    result.first   # None, or the first Divergence (name, reason, max |a-b|, index)

The rule (the same as tests/trace_compare.h on the C++ side) is in RULE below
and in --help. Standard library and numpy only.
"""

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import safetensors_io as st  # noqa: E402

RULE = """What is compared, name by name in A's forward order (A's "names" metadata):
  - both traces must hold the name, with the same shape (else: divergence);
  - U8 tensors (the attention masks, 1 = may attend) must be equal, cell by cell;
  - other tensors: the normalised difference |a-b| / (atol + rtol*|b|) (b from B,
    so put the reference, e.g. PyTorch, second) must be <= 1 at every compared
    position; a NaN or inf that is not equal in both is a divergence;
  - padded positions are not compared, because tinyformer defines them as 0
    and PyTorch leaves other values there. Padding is read from the traces'
    own masks: a position of a stack (encoder, decoder, layers) is padding
    when no query of STACK.0.self_attn.mask may attend it (in A or in B).
    Per name: dim 1 is the stack's positions for embeddings, block
    input/output, q, z, attention output, ffn.hidden, final norms and logits
    (the decoder's or the single stack's); k and v of cross_attn are the
    encoder's positions; scores, bias and weights [B,H,L,S] skip padded
    queries (dim 2) and padded keys (dim 3, the encoder's for cross_attn). A trace
    without masks (no padding) is compared everywhere.
  - traces of one example (TEXT / --ids) carry input_ids and decoder_ids;
    when both traces have them they must be equal (else exit 2: different inputs).
Each line shows a name, its shape, the worst normalised difference and the
worst |a-b|. The comparison stops at the first name out of tolerance:
  first divergence: decoder.1.cross_attn.scores (max 3.2e-2 at [0,2,5,1])
where max is the largest |a-b| among the compared positions, at its index.
The last line says how many values were compared; when none was (every
position is padding) nothing is said to agree and the exit status is 2.
A name listed twice in a trace's "names" is refused.
Exit status: 0 all agree, 1 a divergence (or a name in one trace only), 2 usage
errors (bad arguments, unreadable files, traces of different inputs, nothing
compared)."""

ATTN = ("self_attn", "cross_attn")
_LAYER = re.compile(r"^(encoder|decoder|layers)\.(\d+)\.(.+)$")


@dataclass
class Divergence:
    name: str
    reason: str                 # "values", "mask", "shape", "missing"
    max_abs: float = 0.0
    index: tuple = ()
    detail: str = ""

    def line(self):
        if self.reason in ("values", "mask"):
            return f"first divergence: {self.name} (max {short_float(self.max_abs)} at [{','.join(map(str, self.index))}])"
        return f"first divergence: {self.name} ({self.detail})"


@dataclass
class Result:
    rows: list = field(default_factory=list)        # (name, shape, worst ratio, max |a-b|, index)
    first: Divergence = None
    divergences: list = field(default_factory=list)
    only_in_b: list = field(default_factory=list)
    compared: int = 0           # names compared
    values: int = 0             # numbers compared (non-U8 tensors, non-padding positions)
    mask_cells: int = 0         # U8 cells compared


def short_float(x):
    """3.2e-2 style: one decimal, exponent without padding."""
    if not np.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    m, e = f"{x:.1e}".split("e")
    return f"{m}e{int(e)}"


def stack_padding(tensors, stack):
    """[B, T] True = padding for a stack, from STACK.0.self_attn.mask (a key no query
    may attend), or None when the trace has no such mask."""
    mask = tensors.get(f"{stack}.0.self_attn.mask")
    if mask is None or mask.ndim != 3:
        return None
    return ~(mask.astype(bool).any(axis=1))


def _union(x, y):
    if x is None:
        return y
    if y is None or x.shape != y.shape:
        return x
    return x | y


def axes_padding(name, shape, padding, single_stack):
    """{axis: [B, n] padding} for a name (padding: {stack: [B, T] or None})."""
    def pad(stack, n):
        p = padding.get(stack)
        return p if p is not None and p.shape[1] == n and p.shape[0] == shape[0] else None

    out = {}
    if name in ("src_embed.output", "encoder.norm.output"):
        stack, axis = "encoder", 1
    elif name in ("tgt_embed.output", "decoder.norm.output"):
        stack, axis = "decoder", 1
    elif name in ("embed.output", "layers.norm.output"):
        stack, axis = "layers", 1
    elif name == "logits":
        stack, axis = ("layers" if single_stack else "decoder"), 1
    else:
        m = _LAYER.match(name)
        if not m:
            return {}
        stack, rest = m.group(1), m.group(3)
        parts = rest.split(".")
        if parts[0] in ATTN and len(parts) == 2:
            keys = "encoder" if parts[0] == "cross_attn" else stack
            what = parts[1]
            if what in ("k", "v"):
                return {1: pad(keys, shape[1])} if len(shape) >= 2 else {}
            if what in ("scores", "bias", "weights") and len(shape) == 4:
                return {2: pad(stack, shape[2]), 3: pad(keys, shape[3])}
            if what == "mask":
                return {}
        axis = 1
    if len(shape) < 2:
        return {}
    return {axis: pad(stack, shape[axis])}


def compared_positions(name, shape, padding, single_stack):
    """Boolean array of `shape`: True where the name is compared."""
    keep = np.ones(shape, dtype=bool)
    for axis, p in axes_padding(name, shape, padding, single_stack).items():
        if p is None:
            continue
        view = [1] * len(shape)
        view[0], view[axis] = shape[0], shape[axis]
        keep &= ~p.reshape(view)
    return keep


def _difference(a, b, keep, atol, rtol):
    """(worst ratio, max |a-b|, index of max |a-b|, index of worst ratio) over `keep`."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a64 - b64)
        diff[a64 == b64] = 0.0          # equal infinities too; a NaN is never equal
        bad = ~np.isfinite(diff)
        diff[bad] = np.inf
        ratio = diff / (atol + rtol * np.abs(np.where(np.isfinite(b64), b64, 0.0)))
    diff[~keep] = 0.0
    ratio[~keep] = 0.0
    if diff.size == 0:
        return 0.0, 0.0, (), ()
    at = np.unravel_index(int(np.argmax(diff)), diff.shape)
    at_ratio = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    return float(ratio[at_ratio]), float(diff[at]), tuple(int(i) for i in at), tuple(int(i) for i in at_ratio)


def trace_names(tensors, metadata):
    """The names in forward order (metadata "names"), or sorted when there is none.
    A name listed twice is refused (it would be compared, and counted, twice)."""
    if "names" in metadata:
        try:
            names = json.loads(metadata["names"])
        except json.JSONDecodeError as e:
            raise ValueError(f'metadata "names" is not JSON: {e}') from None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError('metadata "names" is not a JSON list of strings')
        seen = set()
        for i, name in enumerate(names):
            if name in seen:
                raise ValueError(f'metadata "names" lists "{name}" twice (again at position {i})')
            seen.add(name)
        return names
    return sorted(tensors)


def compare_traces(a, a_meta, b, b_meta, atol=1e-4, rtol=1e-4, keep_going=False):
    """Compare trace A with trace B (B the reference) by RULE; returns a Result."""
    result = Result()
    names_a = trace_names(a, a_meta)
    names_b = trace_names(b, b_meta)
    set_a = set(names_a)
    result.only_in_b = [n for n in names_b if n not in set_a]
    single_stack = any(n.startswith("layers.") for n in names_a + names_b)
    padding = {s: _union(stack_padding(a, s), stack_padding(b, s)) for s in ("encoder", "decoder", "layers")}
    for name in names_a:
        if name not in a:
            raise ValueError(f'A lists "{name}" in its names but holds no such tensor')
        found = None
        if name not in b:
            found = Divergence(name, "missing", detail="only in A: B has no activation of this name")
            result.rows.append((name, a[name].shape, None, None, None))
        elif a[name].shape != b[name].shape:
            found = Divergence(name, "shape", detail=f"shapes differ: A {list(a[name].shape)}, B {list(b[name].shape)}")
            result.rows.append((name, a[name].shape, None, None, None))
        else:
            x, y = a[name], b[name]
            result.compared += 1
            if x.dtype == np.uint8 or y.dtype == np.uint8 or x.dtype == np.bool_:
                diff = np.abs(x.astype(np.int64) - y.astype(np.int64))
                at = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.size else ()
                worst = float(diff.max()) if diff.size else 0.0
                result.rows.append((name, x.shape, worst, worst, at))
                result.mask_cells += int(diff.size)
                if worst != 0 or x.dtype != y.dtype:
                    found = Divergence(name, "mask", worst, tuple(int(i) for i in at))
            else:
                keep = compared_positions(name, x.shape, padding, single_stack)
                ratio, max_abs, at, _ = _difference(x, y, keep, atol, rtol)
                result.values += int(keep.sum())
                result.rows.append((name, x.shape, ratio, max_abs, at))
                if ratio > 1.0:
                    found = Divergence(name, "values", max_abs, at)
        if found is not None:
            result.divergences.append(found)
            if result.first is None:
                result.first = found
            if not keep_going:
                break
    return result


def _same_inputs(a_meta, b_meta):
    for key in ("input_ids", "decoder_ids"):
        if key in a_meta and key in b_meta and json.loads(a_meta[key]) != json.loads(b_meta[key]):
            return f"the traces are of different inputs: {key} {a_meta[key]} in A, {b_meta[key]} in B"
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="compare_trace.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compare two activation traces (`tinyformer trace`, tools/python/torch_trace.py) name by name in "
                    "forward order and report the first activation where they part.",
        epilog=RULE + """

example:
  build/tinyformer trace M.safetensors --inputs IN.safetensors --output ours.safetensors
  /usr/bin/python3 tools/python/torch_trace.py M.safetensors --inputs IN.safetensors --output torch.safetensors
  /usr/bin/python3 tools/python/compare_trace.py ours.safetensors torch.safetensors""")
    ap.add_argument("a", metavar="A.safetensors", help="a trace (e.g. tinyformer's)")
    ap.add_argument("b", metavar="B.safetensors", help="the trace to compare it with (e.g. PyTorch's)")
    ap.add_argument("--atol", type=float, default=1e-4, help="absolute tolerance (default 1e-4, FORMAT's)")
    ap.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance, times |b| (default 1e-4)")
    ap.add_argument("--all", action="store_true", help="go on past the first divergence and list every one")
    args = ap.parse_args(argv)
    if not (args.atol >= 0 and args.rtol >= 0) or args.atol + args.rtol == 0:
        ap.error("--atol and --rtol must be >= 0, and not both 0")
    try:
        a, a_meta = st.read(args.a)
        b, b_meta = st.read(args.b)
    except (OSError, ValueError) as e:
        print(f"compare_trace: error: {e}", file=sys.stderr)
        return 2
    problem = _same_inputs(a_meta, b_meta)
    if problem:
        print(f"compare_trace: error: {problem}", file=sys.stderr)
        return 2
    for path, tensors, meta in ((args.a, a, a_meta), (args.b, b, b_meta)):
        try:
            trace_names(tensors, meta)
        except ValueError as e:
            print(f"compare_trace: error: {path}: {e}", file=sys.stderr)
            return 2
    try:
        result = compare_traces(a, a_meta, b, b_meta, args.atol, args.rtol, keep_going=args.all)
    except ValueError as e:
        print(f"compare_trace: error: {args.a}: {e}", file=sys.stderr)
        return 2
    if result.first is None and not result.only_in_b and result.values == 0:
        print(f"compare_trace: error: no value was compared: every position of the {result.compared} "
              f"activations of {args.a} and {args.b} is padding (or they hold no numbers), so there is nothing "
              f"to agree about; trace an input with at least one real token", file=sys.stderr)
        return 2
    print(f"A = {args.a}, B = {args.b}; worst |a-b| / ({args.atol:g} + {args.rtol:g}|b|) per activation, "
          f"padded positions skipped")
    width = max([len(r[0]) for r in result.rows] + [10])
    for name, shape, ratio, max_abs, _ in result.rows:
        shape_text = "[" + ",".join(map(str, shape)) + "]"
        if ratio is None:
            d = next(d for d in result.divergences if d.name == name)
            print(f"  {name:{width}s} {shape_text:16s} {d.detail}")
        elif name.endswith(".mask") or a[name].dtype == np.uint8:
            print(f"  {name:{width}s} {shape_text:16s} {'equal' if ratio == 0 else 'DIFFERENT'}")
        else:
            mark = "  <-- out of tolerance" if ratio > 1 else ""
            print(f"  {name:{width}s} {shape_text:16s} {ratio:9.3g}  (max |a-b| {max_abs:.3g}){mark}")
    if result.only_in_b:
        print(f"only in B ({len(result.only_in_b)}): " + ", ".join(result.only_in_b))
    if args.all and len(result.divergences) > 1:
        print(f"{len(result.divergences)} activations out of tolerance: "
              + ", ".join(d.name for d in result.divergences))
    if result.first is not None:
        print(result.first.line())
        return 1
    if result.only_in_b:
        print(f"first divergence: {result.only_in_b[0]} (only in B: A has no activation of this name)")
        return 1
    print(f"all {result.compared} activations agree: {result.values} values compared at non-padding positions"
          + (f", {result.mask_cells} mask cells equal" if result.mask_cells else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
