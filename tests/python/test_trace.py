#!/usr/bin/python3
"""Tests of tools/python/torch_trace.py and tools/python/compare_trace.py against
`build/tinyformer trace` (run by `make parity`; needs PyTorch and build/tinyformer).

- Agreement: random stock models of every arch (post-/pre-LN, relu/gelu,
  sinusoidal/learned positions, prefix_lm, batch_first=False) are exported
  with tools/python/tinyformer_export.py; `tinyformer trace --inputs` and
  torch_trace on random batches with right, left and two-sided padding, and
  the one-example form (--ids/--target-ids, greedy, --like, the toy models'
  text), agree on every name: compare_trace exit 0, same names in the same
  order, same shapes.
- The PyTorch side means what the table says: logits and per-head weights
  are those of the exporter's check path (torch_modules.Capture), out_proj(z)
  is PyTorch's attention output, masks are the causal / prefix / padding rule.
- Divergences are found where they are made: one weight of the file the C++
  side reads perturbed -> the first activation that reads it; one value of
  a trace changed -> that name and index, in compare_trace's exact line; a
  change at a padded position is not a divergence; a missing name, a mask
  cell, different inputs and usage errors give exit 1 / 2.

    /usr/bin/python3 tests/python/test_trace.py          # from the repository root
    /usr/bin/python3 tests/python/test_trace.py -v -k Diverge
"""

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch
from torch import nn

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools" / "python"
sys.path.insert(0, str(TOOLS))
import compare_trace as ct  # noqa: E402
import safetensors_io as st  # noqa: E402
import tinyformer_export as te  # noqa: E402
import torch_trace as tt  # noqa: E402
from test_export import ed_parts, single_parts, D  # noqa: E402  (random stock modules)

PY = "/usr/bin/python3"
FIRST = re.compile(r"^first divergence: (\S+) \(max (\S+) at \[([0-9,]+)\]\)$", re.M)
WORST = {}          # family -> worst |a-b| / tol over every agreeing comparison


def family(name):
    """decoder.1.cross_attn.scores -> attn.scores; encoder.0.ffn.hidden -> ffn.hidden; ..."""
    parts = name.split(".")
    if name == "logits":
        return "logits"
    if parts[-1] == "output" and (len(parts) == 2 or parts[1] == "norm"):
        return "embed.output" if "embed" in parts[0] else "norm.output"
    if len(parts) >= 4 and parts[2] in ("self_attn", "cross_attn"):
        return "attn." + parts[3]
    return ".".join(parts[2:])


def binary():
    return te.tinyformer_binary()


def run(args, **kw):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    return subprocess.run(args, capture_output=True, text=True, env=env, **kw)


class Temp:
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="test-trace-")
        self.dir = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return str(self.dir / name)

    def ours(self, model, *args, name="ours.safetensors"):
        out = self.path(name)
        r = run([binary(), "trace", str(model), *args, "--output", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        return out

    def ours_inputs(self, model, inputs, name="ours.safetensors"):
        in_path = self.path("inputs.safetensors")
        st.write(in_path, inputs)
        return self.ours(model, "--inputs", in_path, name=name), in_path

    def write_theirs(self, names, tensors, metadata=None, name="torch.safetensors"):
        out = self.path(name)
        meta = dict(metadata or {})
        meta["names"] = json.dumps(names)
        st.write(out, tensors, meta)
        return out

    def compare(self, a, b, *extra):
        """(exit status, stdout) of compare_trace.py's main, in this process."""
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            try:
                status = ct.main([a, b, *extra])
            except SystemExit as e:
                status = e.code
        return status, buf.getvalue()

    def assert_agree(self, ours_path, theirs_path, case):
        status, out = self.compare(ours_path, theirs_path)
        self.assertEqual(status, 0, f"{case}:\n{out}")
        a, am = st.read(ours_path)
        b, bm = st.read(theirs_path)
        self.assertEqual(json.loads(am["names"]), json.loads(bm["names"]), case)
        for n in a:
            self.assertEqual(a[n].shape, b[n].shape, n)
            self.assertEqual(a[n].dtype, b[n].dtype, n)
        result = ct.compare_traces(a, am, b, bm)
        self.assertIsNone(result.first)
        self.assertEqual(result.compared, len(a))
        for name, _, ratio, _, _ in result.rows:
            f = family(name)
            WORST[f] = max(WORST.get(f, 0.0), ratio)
        worst = max(r[2] for r in result.rows if not r[0].endswith(".mask"))
        self.assertGreater(worst, 0.0, "the comparison compared numbers")   # two implementations, not one
        self.assertIn(f"all {len(a)} activations agree", out)
        return a, b


# ----------------------------------------------------------------------------
# Exported random models
# ----------------------------------------------------------------------------


CASES = {
    "ed post-LN relu sinusoidal": dict(arch="ed", kw=dict()),
    "ed pre-LN gelu learned": dict(arch="ed", kw=dict(norm_first=True, activation="gelu"), learned=True),
    "ed pre-LN relu batch_first=False": dict(arch="ed", kw=dict(norm_first=True, batch_first=False)),
    "do causal pre-LN gelu final norm": dict(arch="do", kw=dict(norm_first=True, activation="gelu")),
    "do causal post-LN relu no final norm": dict(arch="do", kw=dict(final_norm=False)),
    "do prefix_lm post-LN relu learned": dict(arch="do", kw=dict(n=3), attention="prefix_lm", learned=True),
    "do prefix_lm pre-LN gelu": dict(arch="do", kw=dict(norm_first=True, activation="gelu"), attention="prefix_lm"),
    "eo post-LN gelu": dict(arch="eo", kw=dict(activation="gelu")),
    "eo pre-LN relu": dict(arch="eo", kw=dict(norm_first=True)),
}


def export_case(path, case, seed=0):
    spec = CASES[case]
    learned = spec.get("learned", False)
    pos = dict(pos_encoding="learned", pos_embed=nn.Embedding(16, D)) if learned else {}
    if spec["arch"] == "ed":
        p = ed_parts(seed=seed, **spec["kw"])
        te.export_encoder_decoder(path, **p, max_len=16, pad_id=0, bos_id=1, eos_id=2, **pos)
    elif spec["arch"] == "do":
        p = single_parts(seed=seed, **spec["kw"])
        vocab = ["<pad>", "<bos>", "<eos>", "="] + list("abcdefghijklm")
        te.export_decoder_only(path, **p, max_len=16, attention=spec.get("attention", "causal"), pad_id=0, bos_id=1,
                               eos_id=2, vocab=vocab, prompt_suffix="=", **pos)
    else:
        p = single_parts(seed=seed, head="head", **spec["kw"])
        te.export_encoder_only(path, **p, max_len=16, pad_id=0, **pos)
    return json.loads(st.read_header(path)[1]["config"])


class Agreement(Temp, unittest.TestCase):
    """tinyformer trace vs torch_trace on exported random models: every name agrees."""

    def check_case(self, case):
        model = self.path("model.safetensors")
        cfg = export_case(model, case, seed=len(case))
        rng = np.random.default_rng(len(case))
        for k in range(2):
            inputs = te._batch(rng, cfg, k)                    # right, left and two-sided padding
            pad = inputs.get("key_padding_mask", inputs.get("tgt_key_padding_mask"))
            self.assertTrue(pad.any(), "the batch has padding")
            ours, in_path = self.ours_inputs(model, inputs)
            # torch_trace's command line on the modules rebuilt from the file ...
            theirs = self.path("torch.safetensors")
            r = run([PY, str(TOOLS / "torch_trace.py"), model, "--inputs", in_path, "--output", theirs]) if k == 0 \
                else None
            if r is not None:
                self.assertEqual(r.returncode, 0, r.stderr)
            else:
                names, tensors, meta = tt.trace_file(model, inputs=in_path)
                st.write(theirs, tensors, meta)
            a, b = self.assert_agree(ours, theirs, f"{case} batch {k}")
            # ... and the modules the file was exported from (batch_first as they were built)
            parts = te._REGISTRY[os.path.realpath(model)]["parts"]
            names, tensors = tt.trace_modules(cfg, parts, inputs)
            self.assert_agree(ours, self.write_theirs(names, tensors, name="torch2.safetensors"), f"{case} modules")
            self.check_pytorch_side(cfg, parts, inputs, names, tensors)

    def check_pytorch_side(self, cfg, parts, inputs, names, tensors):
        """The PyTorch trace means what the table says."""
        ref = te._run_pytorch(cfg, parts, inputs)             # the exporter's check path (Capture)
        np.testing.assert_array_equal(tensors["logits"], ref["logits"])
        stacks = dict((s, m) for s, m, _ in tt._stacks(cfg, parts))
        for name in names:
            if not name.endswith(".weights"):
                continue
            prefix = name[: -len(".weights")]
            stack, i, attn = prefix.split(".")
            np.testing.assert_array_equal(tensors[name], ref[name], name)   # forward's outputs use the trace's names
            layer = stacks[stack].layers[int(i)]
            mha = layer.multihead_attn if attn == "cross_attn" else layer.self_attn
            with torch.no_grad():
                again = mha.out_proj(torch.from_numpy(tensors[prefix + ".z"])).numpy()
            rows = tensors[prefix + ".weights"].sum(axis=(1, 3)) > 0           # queries with a distribution
            np.testing.assert_allclose(again[rows], tensors[prefix + ".output"][rows], rtol=1e-4, atol=1e-5)
            self.check_mask(cfg, inputs, prefix, tensors[prefix + ".mask"])

    def check_mask(self, cfg, inputs, prefix, mask):
        """The mask written out: causal / prefix-LM / none, and key padding, 1 = may attend."""
        if cfg["arch"] == "encoder_decoder":
            keys = inputs["src_key_padding_mask"] if prefix.startswith("encoder.") or "cross" in prefix \
                else inputs["tgt_key_padding_mask"]
        else:
            keys = inputs["key_padding_mask"]
        b, l, s = mask.shape
        i, j = np.arange(l)[:, None], np.arange(s)[None, :]
        sees = np.ones((b, l, s), bool)
        if (prefix.startswith("decoder.") and "self" in prefix) or cfg.get("attention") == "causal":
            sees &= (j <= i)[None]
        if cfg.get("attention") == "prefix_lm":
            sees &= (j[None] < inputs["prefix_len"][:, None, None]) | (j <= i)[None]
        sees &= ~keys[:, None, :]
        np.testing.assert_array_equal(mask, sees.astype(np.uint8), prefix)


for _case in CASES:
    def _test(self, case=_case):
        self.check_case(case)
    setattr(Agreement, "test_" + re.sub(r"\W+", "_", _case), _test)


class AllPaddingRows(Temp, unittest.TestCase):
    """FORMAT.md allows a batch row whose source and target are both all padding
    (every query of it is padding, so seeing no key is defined: zeros)."""

    def test_a_row_whose_source_and_target_are_all_padding(self):
        model = self.path("model.safetensors")
        cfg = export_case(model, "ed post-LN relu sinusoidal", seed=3)
        rng = np.random.default_rng(3)
        inputs = te._batch(rng, cfg, 0)
        inputs["src_key_padding_mask"][1] = True
        inputs["tgt_key_padding_mask"][1] = True
        inputs["src_ids"][1] = cfg["pad_id"]
        inputs["tgt_ids"][1] = cfg["pad_id"]
        ours, in_path = self.ours_inputs(model, inputs)
        theirs = self.path("torch.safetensors")
        r = run([PY, str(TOOLS / "torch_trace.py"), model, "--inputs", in_path, "--output", theirs])
        self.assertEqual(r.returncode, 0, r.stderr)       # was: "query (1, 0) sees no key but is not padding"
        a, b = self.assert_agree(ours, theirs, "all-padding row")
        for name in b:
            self.assertFalse(np.isnan(b[name]).any(), name)
        # The padded row's cross-attention weights and outputs are FORMAT's zeros on both sides.
        for side in (a, b):
            self.assertTrue((side["decoder.0.cross_attn.weights"][1] == 0).all())
            self.assertTrue((side["decoder.0.cross_attn.output"][1] == 0).all())
        # A cross-attention query that sees no key and is not padding is still refused.
        inputs["tgt_key_padding_mask"][1] = False
        with self.assertRaisesRegex(RuntimeError, r"cross_attn: query \(1, 0\) sees no key but is not padding"):
            tt.trace_modules(cfg, tt.load_modules(model)[2], inputs)


class OneExample(Temp, unittest.TestCase):
    """The --ids / TEXT form: the same framing on both sides."""

    def test_ids_and_target_ids_every_arch(self):
        for case in ["ed post-LN relu sinusoidal", "do prefix_lm pre-LN gelu", "do causal pre-LN gelu final norm",
                     "eo post-LN gelu"]:
            model = self.path("model.safetensors")
            cfg = export_case(model, case)
            target = [] if cfg["arch"] == "encoder_only" else ["--target-ids", "4,9,5"]
            ours = self.ours(model, "--ids", "5,7,6,8", *target)
            theirs = self.path("torch.safetensors")
            r = run([PY, str(TOOLS / "torch_trace.py"), model, "--ids", "5,7,6,8", *target, "--output", theirs])
            self.assertEqual(r.returncode, 0, r.stderr)
            a, b = self.assert_agree(ours, theirs, case)
            am, bm = st.read_header(ours)[1], st.read_header(theirs)[1]
            self.assertEqual(json.loads(am["input_ids"]), json.loads(bm["input_ids"]))
            self.assertEqual(json.loads(am["decoder_ids"]), json.loads(bm["decoder_ids"]))
            inp, dec = json.loads(bm["input_ids"]), json.loads(bm["decoder_ids"])
            if cfg["arch"] == "decoder_only":
                self.assertEqual(inp, [1, 5, 7, 6, 8, 3])               # <bos> + ids + the suffix "=" (id 3)
                self.assertEqual(dec, inp + [4, 9, 5])
            elif cfg["arch"] == "encoder_decoder":
                self.assertEqual((inp, dec), ([5, 7, 6, 8], [1, 4, 9, 5]))
            else:
                self.assertEqual((inp, dec), ([5, 7, 6, 8], [5, 7, 6, 8]))

    def test_toy_models_text_greedy_and_like(self):
        for name, text in [("reverse", "hello"), ("sort", "31415926"), ("reverse-prefixlm", "abc"),
                           ("reverse-causal", "abc=")]:
            model = str(REPO / "data" / "models" / f"{name}.safetensors")
            ours = self.ours(model, text)
            theirs = self.path("torch.safetensors")
            r = run([PY, str(TOOLS / "torch_trace.py"), model, "--like", ours, "--output", theirs])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assert_agree(ours, theirs, name)
            # PyTorch's own greedy target is tinyformer's on these models
            meta = st.read_header(ours)[1]
            ids = json.loads(meta["input_ids"])
            if name.startswith("reverse-"):
                ids = ids[1:]      # --ids are the user's tokens: torch_trace frames them (<bos>, suffix)
            _, _, tmeta = tt.trace_file(model, ids=ids)
            self.assertEqual(json.loads(tmeta["decoder_ids"]), json.loads(meta["decoder_ids"]), name)


# ----------------------------------------------------------------------------
# Divergences are found where they are made
# ----------------------------------------------------------------------------


class Diverge(Temp, unittest.TestCase):
    def perturbed_copy(self, model, tensor, index, delta=0.5):
        tensors, meta = st.read(model)
        t = tensors[tensor].copy()
        t[index] += delta
        tensors[tensor] = t
        out = self.path("perturbed.safetensors")
        st.write(out, tensors, meta)
        return out

    def first(self, out):
        m = FIRST.search(out)
        self.assertIsNotNone(m, out)
        return m.group(1), float(m.group(2)), [int(x) for x in m.group(3).split(",")]

    def test_one_weight_of_the_file_perturbed(self):
        """The C++ side reads a file with one weight changed, PyTorch the original:
        compare_trace names the first activation that reads the weight."""
        cases = [
            ("ed post-LN relu sinusoidal", "transformer.decoder.layers.1.multihead_attn.in_proj_weight", (D + 3, 5),
             "decoder.1.cross_attn.k"),
            ("ed pre-LN gelu learned", "transformer.encoder.layers.1.norm1.weight", (2,), "encoder.1.self_attn.q"),
            ("ed post-LN relu sinusoidal", "transformer.encoder.layers.0.norm1.bias", (2,), "encoder.0.ffn.hidden"),
            ("do causal pre-LN gelu final norm", "transformer.layers.0.linear2.weight", (1, 3), "layers.0.output"),
            ("do prefix_lm post-LN relu learned", "transformer.layers.2.self_attn.in_proj_weight", (2 * D + 1, 0),
             "layers.2.self_attn.v"),
            ("eo pre-LN relu", "lm_head.bias", (4,), "logits"),
        ]
        for case, tensor, index, expected in cases:
            with self.subTest(case=case, tensor=tensor):
                model = self.path("model.safetensors")
                cfg = export_case(model, case, seed=3)
                inputs = te._batch(np.random.default_rng(3), cfg, 0)
                bad = self.perturbed_copy(model, tensor, index)
                ours, in_path = self.ours_inputs(bad, inputs)
                names, tensors, meta = tt.trace_file(model, inputs=in_path)
                theirs = self.write_theirs(names, tensors, meta)
                status, out = self.compare(ours, theirs)
                self.assertEqual(status, 1, out)
                name, biggest, at = self.first(out)
                self.assertEqual(name, expected, out)
                self.assertGreater(biggest, 1e-3)
                self.assertEqual(len(at), tensors[name].ndim)
                # and without the change they agree
                good, _ = self.ours_inputs(model, inputs, name="good.safetensors")
                self.assertEqual(self.compare(good, theirs)[0], 0)

    def test_one_value_of_a_trace_changed_exact_line(self):
        model = self.path("model.safetensors")
        cfg = export_case(model, "ed post-LN relu sinusoidal")
        inputs = te._batch(np.random.default_rng(5), cfg, 1)
        ours, in_path = self.ours_inputs(model, inputs)
        names, tensors, meta = tt.trace_file(model, inputs=in_path)
        a, am = st.read(ours)
        # a non-padded cell of decoder.1.cross_attn.scores, and a later name
        spad, tpad = inputs["src_key_padding_mask"], inputs["tgt_key_padding_mask"]
        b = int(np.argmax(tpad.any(axis=1) | spad.any(axis=1)))          # a row with padding
        l = int(np.flatnonzero(~tpad[b])[-1])
        s = int(np.flatnonzero(~spad[b])[0])
        a["decoder.1.cross_attn.scores"][b, 2, l, s] += 0.032
        a["logits"][b, l, 0] += 1.0
        st.write(ours, a, am)
        status, out = self.compare(ours, self.write_theirs(names, tensors, meta))
        self.assertEqual(status, 1, out)
        self.assertIn(f"first divergence: decoder.1.cross_attn.scores (max 3.2e-2 at [{b},2,{l},{s}])", out)
        self.assertNotIn("  logits", out)                                  # it stopped there
        # the command line, as a user runs it: same line, exit 1
        r = run([PY, str(TOOLS / "compare_trace.py"), ours, self.path("torch.safetensors")])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout.strip().splitlines()[-1],
                         f"first divergence: decoder.1.cross_attn.scores (max 3.2e-2 at [{b},2,{l},{s}])")

    def test_padded_positions_are_not_compared_real_ones_are(self):
        model = self.path("model.safetensors")
        cfg = export_case(model, "do causal pre-LN gelu final norm")
        inputs = te._batch(np.random.default_rng(7), cfg, 0)
        pad = inputs["key_padding_mask"]
        ours, in_path = self.ours_inputs(model, inputs)
        names, tensors, meta = tt.trace_file(model, inputs=in_path)
        theirs = self.write_theirs(names, tensors, meta)
        a, am = st.read(ours)
        pb, pt = (int(x) for x in np.argwhere(pad)[0])
        a["logits"][pb, pt] += 100.0                                   # a padded query's logits
        a["layers.1.self_attn.k"][pb, pt] += 100.0                     # a padded key
        a["layers.1.self_attn.scores"][pb, :, :, pt] += 100.0          # scores of a padded key
        st.write(ours, a, am)
        self.assertEqual(self.compare(ours, theirs)[0], 0)
        rb, rt = (int(x) for x in np.argwhere(~pad)[-1])
        a["layers.1.self_attn.k"][rb, rt, 3] += 0.5                    # a real key
        st.write(ours, a, am)
        status, out = self.compare(ours, theirs)
        self.assertEqual(status, 1)
        self.assertEqual(self.first(out)[0], "layers.1.self_attn.k")
        self.assertEqual(self.first(out)[2], [rb, rt, 3])

    def test_mask_missing_name_different_inputs_usage(self):
        model = self.path("model.safetensors")
        export_case(model, "do prefix_lm pre-LN gelu")
        ours = self.ours(model, "--ids", "5,6,7", "--target-ids", "8,9")
        theirs = self.path("torch.safetensors")
        names, tensors, meta = tt.trace_file(model, ids=[5, 6, 7], target_ids=[8, 9])
        st.write(theirs, tensors, meta)
        self.assertEqual(self.compare(ours, theirs)[0], 0)
        # a mask cell: U8 masks must be equal
        m = dict(tensors)
        m["layers.1.self_attn.mask"] = m["layers.1.self_attn.mask"].copy()
        m["layers.1.self_attn.mask"][0, 5, 6] = 1
        changed = self.write_theirs(names, m, meta, name="mask.safetensors")
        status, out = self.compare(ours, changed)
        self.assertEqual(status, 1)
        self.assertEqual(self.first(out)[0], "layers.1.self_attn.mask")
        self.assertEqual(self.first(out)[2], [0, 5, 6])
        # a name only in A
        fewer = {k: v for k, v in tensors.items() if k != "layers.0.ffn.hidden"}
        missing = self.write_theirs([n for n in names if n != "layers.0.ffn.hidden"], fewer, meta, name="few.safetensors")
        status, out = self.compare(ours, missing)
        self.assertEqual(status, 1)
        self.assertIn("first divergence: layers.0.ffn.hidden (only in A", out)
        status, out = self.compare(missing, ours)
        self.assertEqual(status, 1)
        self.assertIn("only in B (1): layers.0.ffn.hidden", out)
        # traces of different inputs: a usage error
        other = self.ours(model, "--ids", "5,6,8", "--target-ids", "8,9", name="other.safetensors")
        r = run([PY, str(TOOLS / "compare_trace.py"), ours, other])
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn("different inputs", r.stderr)
        # usage: no such file, missing argument, bad tolerance
        for args in [[ours, self.path("nothing.safetensors")], [ours], [ours, theirs, "--atol", "0", "--rtol", "0"]]:
            r = run([PY, str(TOOLS / "compare_trace.py"), *args])
            self.assertEqual(r.returncode, 2, args)
        r = run([PY, str(TOOLS / "compare_trace.py"), "--help"])
        self.assertEqual(r.returncode, 0)
        for piece in ["padded positions are not compared", "U8", "first divergence:", "Exit status"]:
            self.assertIn(piece, r.stdout)

    def test_torch_trace_command_line_errors(self):
        model = self.path("model.safetensors")
        export_case(model, "eo post-LN gelu")
        r = run([PY, str(TOOLS / "torch_trace.py"), model, "--ids", "5,6", "--target-ids", "3",
                 "--output", self.path("x.safetensors")])
        self.assertEqual(r.returncode, 1)
        self.assertIn("encoder_only model has no target", r.stderr)
        r = run([PY, str(TOOLS / "torch_trace.py"), model, "--output", self.path("x.safetensors")])
        self.assertEqual(r.returncode, 2)
        r = run([PY, str(TOOLS / "torch_trace.py"), model, "--ids", "5,99", "--output", self.path("x.safetensors")])
        self.assertEqual(r.returncode, 1)
        self.assertIn("outside the vocabulary", r.stderr)


def print_worst():
    if WORST:
        print("\nworst |a-b| / (1e-4 + 1e-4|b|) per name family, tinyformer trace vs torch_trace:", file=sys.stderr)
        for f in sorted(WORST):
            print(f"  {f:22s} {WORST[f]:.3g}", file=sys.stderr)


if __name__ == "__main__":
    torch.set_num_threads(1)
    try:
        program = unittest.main(exit=False)
    finally:
        print_worst()
    sys.exit(0 if program.result.wasSuccessful() else 1)
