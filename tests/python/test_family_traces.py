#!/usr/bin/python3
"""The PyTorch twin of every layout the engine loads (run by `make parity`; needs
PyTorch and build/tinyformer): tools/python/torch_modules.py's modules rebuilt
from a file (twin_state, TwinAttention), as torch_trace.py and `--check FILE`
without --against use them.

- Every committed model (data/families: nanogpt-char, mingpt-sort,
  annotated-copy, gpt2-tiny, llama2c-tiny: bias-free, separate q/k/v,
  gelu_tanh, layer_norm_std, mask_value, RMSNorm, SwiGLU, rotary, grouped-query,
  tied heads; data/models: learned, sinusoidal, rotary, ALiBi, prefix-LM,
  encoder-decoder): `tinyformer trace` and torch_trace agree name by name, on
  one example (the CLI's framing, torch_trace --like) and on a padded batch
  (--inputs). The worst normalised difference of each file is printed.
- One weight of a family file perturbed (the C++ side reads the changed file,
  PyTorch the committed one): compare_trace names the first activation that
  reads it: a k_proj row of a grouped-query rotary model -> k_unrotated, linear3
  (SwiGLU) -> ffn.hidden, a layer_norm_std bias -> the ffn.hidden after it, a
  v_proj of a cross-attention -> cross_attn.v, the row of a token never read in
  a tied embedding -> logits only, ...
- `--check FILE` without --against passes on every committed file; a file whose
  config names a layout its tensors do not have gets one line naming the
  tensor and what to pass, from --check and from torch_trace.
- The GPT-2 folder check compares per-head attention weights: an attention
  weight perturbed in layer 1 is named (layers.1.self_attn.weights), not only the logits.

    /usr/bin/python3 tests/python/test_family_traces.py          # from the repository root
    /usr/bin/python3 tests/python/test_family_traces.py -v -k Perturbed
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from types import SimpleNamespace

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools" / "python"
sys.path.insert(0, str(TOOLS))
import compare_trace as ct  # noqa: E402
import safetensors_io as st  # noqa: E402
import tinyformer_export as te  # noqa: E402
import torch_trace as tt  # noqa: E402

PY = "/usr/bin/python3"
FAMILIES = REPO / "data" / "families"
MODELS = REPO / "data" / "models"
# file -> the example `tinyformer trace` reads (TEXT or --ids, and the target when
# the model has no eos_id to end a greedy output with)
EXAMPLES = {
    FAMILIES / "nanogpt-char.safetensors": ["forty one, forty two, ", "--target", "forty three"],
    FAMILIES / "mingpt-sort.safetensors": ["210201", "--target", "00112"],
    FAMILIES / "annotated-copy.safetensors": ["1 5 9 7 2 8 8 1 1 10", "--target", "5 9 7 2 8 8 1 1 10"],
    FAMILIES / "gpt2-tiny.safetensors": ["forty one is 41, forty two is"],
    FAMILIES / "llama2c-tiny" / "llama2c-tiny.safetensors": ["forty one, forty two,"],
}
for _path in sorted(MODELS.glob("*.safetensors")):
    EXAMPLES[_path] = ["--ids", "3,4,5,6"]
WORST = {}          # file -> (worst |a-b| / tol, name, padded batch worst, name)


def run(args, **kw):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    return subprocess.run(args, capture_output=True, text=True, env=env, **kw)


def config(path):
    return json.loads(st.read_header(str(path))[1]["config"])


def short(path):
    return str(Path(path).relative_to(REPO))


class Temp:
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="test-family-traces-")
        self.dir = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return str(self.dir / name)

    def ours(self, model, args, name="ours.safetensors"):
        out = self.path(name)
        r = run([te.tinyformer_binary(), "trace", str(model), *args, "--output", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        return out

    def theirs_like(self, model, ours, name="torch.safetensors"):
        """torch_trace.py MODEL --like OURS, as a user runs it."""
        out = self.path(name)
        r = run([PY, str(TOOLS / "torch_trace.py"), str(model), "--like", ours, "--output", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        return out

    def compare(self, a, b):
        """(exit status, stdout) of compare_trace.py, as a user runs it."""
        r = run([PY, str(TOOLS / "compare_trace.py"), a, b])
        return r.returncode, r.stdout + r.stderr

    def worst(self, a_path, b_path):
        """(worst ratio, its name) over the compared numbers, after checking they agree."""
        a, am = st.read(a_path)
        b, bm = st.read(b_path)
        self.assertEqual(json.loads(am["names"]), json.loads(bm["names"]))
        result = ct.compare_traces(a, am, b, bm)
        self.assertIsNone(result.first)
        self.assertGreater(result.values, 0)
        rows = [r for r in result.rows if a[r[0]].dtype != np.uint8]
        ratio, name = max((r[2], r[0]) for r in rows)
        self.assertGreater(ratio, 0.0, "two implementations computed these numbers, not one")
        return ratio, name

    def perturbed_copy(self, model, tensor, index, delta=0.5):
        tensors, meta = st.read(str(model))
        self.assertIn(tensor, tensors)
        t = tensors[tensor].copy()
        t[index] += delta
        tensors[tensor] = t
        out = self.path("perturbed.safetensors")
        st.write(out, tensors, meta)
        return out


class EveryCommittedModel(Temp, unittest.TestCase):
    def test_trace_of_one_example_and_of_a_padded_batch(self):
        for model, example in EXAMPLES.items():
            with self.subTest(model=short(model)):
                ours = self.ours(model, example)
                theirs = self.theirs_like(model, ours)
                status, out = self.compare(ours, theirs)
                self.assertEqual(status, 0, out)
                self.assertIn("activations agree", out)
                one = self.worst(ours, theirs)
                inputs = te._batch(np.random.default_rng(11), config(model), 0)
                in_path = self.path("inputs.safetensors")
                st.write(in_path, inputs)
                ours_b = self.ours(model, ["--inputs", in_path], name="ours-batch.safetensors")
                names, tensors, meta = tt.trace_file(str(model), inputs=in_path)
                theirs_b = self.path("torch-batch.safetensors")
                st.write(theirs_b, tensors, meta)
                status, out = self.compare(ours_b, theirs_b)
                self.assertEqual(status, 0, out)
                WORST[short(model)] = one + self.worst(ours_b, theirs_b)

    def test_check_without_against_rebuilds_the_twin(self):
        for model in EXAMPLES:
            with self.subTest(model=short(model)):
                worst = te.check(str(model), n_batches=2)
                self.assertLessEqual(worst, 1.0)
                self.assertGreater(worst, 0.0)
                self.assertEqual(te.check.last_source, "stock modules rebuilt from the file")


class Perturbed(Temp, unittest.TestCase):
    """(file, tensor, index, the example, the first activation that reads the tensor)."""
    CASES = [
        ("nanogpt-char.safetensors", "transformer.layers.2.linear1.weight", (5, 7), None, "layers.2.ffn.hidden"),
        ("mingpt-sort.safetensors", "transformer.layers.1.self_attn.in_proj_weight", (48 + 3, 4), None,
         "layers.1.self_attn.k"),
        ("annotated-copy.safetensors", "transformer.decoder.layers.0.multihead_attn.v_proj.weight", (1, 2), None,
         "decoder.0.cross_attn.v"),
        ("annotated-copy.safetensors", "transformer.encoder.layers.1.norm2.bias", (2,), None, "encoder.1.ffn.hidden"),
        ("llama2c-tiny/llama2c-tiny.safetensors", "transformer.layers.0.self_attn.k_proj.weight", (20, 3), None,
         "layers.0.self_attn.k_unrotated"),
        ("llama2c-tiny/llama2c-tiny.safetensors", "transformer.layers.1.linear3.weight", (2, 3), None,
         "layers.1.ffn.hidden"),
        # the tied head reads the embedding in place: a row no input token reads changes the logits only
        ("gpt2-tiny.safetensors", "embed.weight", (500, 3), ["--ids", "3,4,5", "--target-ids", "6,7"], "logits"),
        ("gpt2-tiny.safetensors", "transformer.layers.1.self_attn.in_proj_weight", (2 * 64 + 5, 1), None,
         "layers.1.self_attn.v"),
    ]

    def test_one_weight_of_a_family_file_is_named_where_it_is_first_read(self):
        for file, tensor, index, example, expected in self.CASES:
            model = FAMILIES / file
            with self.subTest(file=file, tensor=tensor):
                bad = self.perturbed_copy(model, tensor, index)
                ours = self.ours(bad, example or EXAMPLES[model])
                theirs = self.theirs_like(model, ours)
                status, out = self.compare(ours, theirs)
                self.assertEqual(status, 1, out)
                last = out.strip().splitlines()[-1]
                self.assertTrue(last.startswith(f"first divergence: {expected} (max "), out)
                good = self.ours(model, example or EXAMPLES[model], name="good.safetensors")
                self.assertEqual(self.compare(good, theirs)[0], 0)


class NoTwin(Temp, unittest.TestCase):
    def claiming(self, **changes):
        """nanogpt-char's tensors under a config that says otherwise."""
        tensors, meta = st.read(str(FAMILIES / "nanogpt-char.safetensors"))
        cfg = json.loads(meta["config"])
        cfg.update(changes)
        meta["config"] = json.dumps(cfg)
        out = self.path("claiming.safetensors")
        st.write(out, tensors, meta)
        return out

    def test_a_layout_its_tensors_do_not_have_is_one_line_naming_what_to_pass(self):
        for changes, piece in [
                ({"bias": True}, "no tensor 'transformer.layers.0.self_attn.in_proj_bias' (and 15 more)"),
                ({"qkv": "separate"}, "its config says qkv \"separate\" but it holds 4 fused"),
                ({"tie_embeddings": False}, "no tensor 'lm_head.weight'"),
                ({"nhead": 3}, "its config builds no PyTorch modules: embed_dim must be divisible by num_heads")]:
            with self.subTest(changes=changes):
                path = self.claiming(**changes)
                r = run([PY, str(TOOLS / "tinyformer_export.py"), "--check", path])
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                lines = (r.stdout + r.stderr).strip().splitlines()
                self.assertEqual(len(lines), 1, lines)
                self.assertIn(piece, lines[0])
                self.assertIn("--against FAMILY FILE", lines[0])
                r = run([PY, str(TOOLS / "torch_trace.py"), path, "--ids", "3,4",
                         "--output", self.path("t.safetensors")])
                self.assertEqual(r.returncode, 1)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn(piece, r.stderr)
                self.assertTrue(r.stderr.startswith(f"torch_trace: error: {path}: "), r.stderr)


    def test_torch_trace_holds_the_config_to_the_tensors_before_building(self):
        """As --check: a config claiming more layers than the file holds is refused
        in one line before any module is built (BAD_INPUT.md)."""
        tensors, meta = st.read(str(MODELS / "reverse-causal.safetensors"))
        cfg = json.loads(meta["config"])
        cfg["num_layers"] += 1
        meta["config"] = json.dumps(cfg)
        path = self.path("more-layers.safetensors")
        st.write(path, tensors, meta)
        r = run([PY, str(TOOLS / "torch_trace.py"), path, "--ids", "3,4", "--output", self.path("t.safetensors")])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn(f"its config says num_layers = {cfg['num_layers']} but it holds the tensors of "
                      f"{cfg['num_layers'] - 1}", r.stderr)


class TransformersStyle(torch.nn.Module):
    """families/hf_gpt2.py's GPT2LMHead behind transformers' interface: blocks whose
    attn keeps no .weights, forward(input_ids, output_attentions=False) -> an object
    with .logits and .attentions (one [B, H, T, T] per layer)."""

    def __init__(self, model):
        super().__init__()
        self.config, self.transformer, self.lm_head = model.config, model.transformer, model.lm_head
        self.inner = model
        self.asked = 0
        self._forget()

    def _forget(self):
        for block in self.transformer.h:
            block.attn.__dict__.pop("weights", None)

    def forward(self, input_ids, output_attentions=False):
        logits = self.inner(input_ids)
        attentions = tuple(block.attn.weights for block in self.transformer.h) if output_attentions else None
        self.asked += bool(output_attentions)
        self._forget()
        return SimpleNamespace(logits=logits, attentions=attentions)


class GPT2Folder(Temp, unittest.TestCase):
    def test_the_first_attention_that_differs_is_named(self):
        folder = FAMILIES / "gpt2-tiny"
        model = FAMILIES / "gpt2-tiny.safetensors"
        bad = self.perturbed_copy(model, "transformer.layers.1.self_attn.in_proj_weight", (3, 5))
        from families import hf_gpt2
        reference = hf_gpt2.convert_hf_gpt2(str(folder)).reference
        self.assertLessEqual(te.check(str(model), reference), 1.0)
        with self.assertRaises(te.CheckFailed) as caught:
            te.check(bad, reference)
        self.assertEqual(caught.exception.name, "layers.1.self_attn.weights")
        # transformers' GPT2LMHeadModel keeps no weights: it returns them with output_attentions=True
        hf_style = TransformersStyle(reference)
        self.assertLessEqual(te.check(str(model), hf_style), 1.0)
        self.assertEqual(hf_style.asked, 3)              # every batch asked for the attentions
        with self.assertRaises(te.CheckFailed) as caught:
            te.check(bad, hf_style)
        self.assertEqual(caught.exception.name, "layers.1.self_attn.weights")
        r = run([PY, str(TOOLS / "tinyformer_export.py"), "--check", bad, "--against", "hf-gpt2", str(folder)])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("layers.0.self_attn.weights ", r.stdout)               # compared, and within tolerance
        self.assertIn(f"FAIL {bad}: layers.1.self_attn.weights diverges first", r.stdout)


def summary():
    if WORST:
        print("\nworst |a-b| / (1e-4 + 1e-4|b|), tinyformer trace vs torch_trace (one example | a padded batch):",
              file=sys.stderr)
        for name, (one, at, batch, at_batch) in sorted(WORST.items()):
            print(f"  {name:48s} {one:8.3g} {at:32s} | {batch:8.3g} {at_batch}", file=sys.stderr)


if __name__ == "__main__":
    torch.set_num_threads(1)
    try:
        program = unittest.main(exit=False)
    finally:
        summary()
    sys.exit(0 if program.result.wasSuccessful() else 1)
