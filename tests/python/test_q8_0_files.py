#!/usr/bin/python3
"""Q8_0 (int8) files from the converter: llama2.c's v2 model.bin and --quantize q8_0.

- The rule (tools/python/q8_0.py) on the hand-worked groups of tests/test_q8_0.cpp,
  which the engine's quantize_q8_0_row gives: halves away from zero (-50.5 -> -51,
  2.5 -> 3, where torch.round gives -50 and 2), 0.49999997 -> 0, zeros -> s = 0.
- v2 files (written by families.llama.llama2c_bin_bytes(c, 2), and by upstream's
  export.py --version 2 when LLAMA2C_DIR names a llama2.c checkout): the int8
  values and scales are copied exactly, the head is the int8 table (shared) or
  classifier, the token table is q * s; the engine's logits equal numpy's model of
  runq.c's arithmetic (numpy_reference.product) within the bounds below; with upstream's
  runq binary (LLAMA2C_RUNQ, or LLAMA2C_DIR/runq) the greedy text is runq's.
- Bad v2 files: truncated, longer, group size 0, one not dividing dim or
  hidden_dim, a NaN scale, a -128 value: one line each, on the command line too.
- --quantize q8_0 on every family's committed model: the engine loads the file,
  its I8 tensors are q8_0.quantize_rows of the float weights, its logits equal
  numpy's Q8_0 model within the bounds below and float32's within the bound derived in
  float_bound(); refusals (a group size not dividing K names the weight).

Bounds (the engine against numpy's model of the same Q8_0 arithmetic, per row of
logits, relative to max|numpy logit|). Both quantize each product's input by the
same rule, so what differs is float32 rounding (measured 1.1e-7 .. 3.4e-7) and,
rarely, an input that lands within rounding of a half step, which the two round
to neighbours: one q moves by 1, its product by one quantization step, and the
rows that read it after (measured: 13 of 72 rows, up to 2.9e-3, on llama2c-tiny
in groups of 16; no other case). So: at least 3/4 of the rows within ROW_EXACT =
1e-5, and every row within ROW_FLIP = 1e-2. A layer computed in float32 instead
(a SwiGLU that read its Q8_0 weights dequantized with float inputs) moves every
row by 3.3e-3 .. 8.2e-3 and fails the first.

    /usr/bin/python3 tests/python/test_q8_0_files.py       # from the repository root
    LLAMA2C_DIR=/path/to/llama2.c  (export.py, model.py; runq built there, or LLAMA2C_RUNQ=PATH)
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import numpy_reference as nr  # noqa: E402
import q8_0  # noqa: E402
import safetensors_io as st  # noqa: E402
from families import llama  # noqa: E402
from test_families_llama import small  # noqa: E402  (tests/python, this file's folder)
from test_torch_file import Case  # noqa: E402  (a test in a temporary folder: self.dir, self.p(name))

EXPORT = ["/usr/bin/python3", str(REPO / "tools" / "python" / "tinyformer_export.py")]
ENGINE = os.environ.get("TINYFORMER_BIN") or str(REPO / "build" / "tinyformer")
FAMILIES = REPO / "data" / "families"
ROW_EXACT, ROW_FLIP, ROWS_EXACT = 1e-5, 1e-2, 0.75
H = 0.5 + 2.0 ** -16          # |v - q s| <= s H (tests/test_q8_0.cpp: the float32 division's rounding included)
UPSTREAM = os.environ.get("LLAMA2C_DIR")
RUNQ = os.environ.get("LLAMA2C_RUNQ") or (os.path.join(UPSTREAM, "runq") if UPSTREAM else None)


def engine_logits(model, inputs, tmp):
    """`tinyformer forward` logits of inputs (FORMAT section 2) with `model`."""
    src, out = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
    st.write(src, inputs)
    run = subprocess.run([ENGINE, "forward", str(model), "--inputs", src, "--output", out], capture_output=True,
                         text=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    if run.returncode != 0:
        raise AssertionError(f"forward failed on {model}: {run.stderr.strip()}")
    return st.read(out)[0]["logits"].astype(np.float64)


def random_inputs(cfg, seed=0):
    rng = np.random.default_rng(seed)
    if cfg["arch"] == "encoder_decoder":
        return {"src_ids": rng.integers(0, cfg["src_vocab_size"], (3, 10)).astype(np.int64),
                "tgt_ids": rng.integers(0, cfg["tgt_vocab_size"], (3, 9)).astype(np.int64)}
    return {"ids": rng.integers(0, cfg["vocab_size"], (3, min(cfg["max_len"], 24))).astype(np.int64)}


def assert_runq_arithmetic(test, ours, ref, what):
    """The module docstring's bounds: most rows exact to float32 rounding, all within a flip's reach."""
    rows = np.abs(ours - ref).max(-1) / np.abs(ref).max()
    exact = float((rows <= ROW_EXACT).mean())
    print(f"{what}: engine vs numpy's Q8_0 model: {exact:.0%} of rows within {ROW_EXACT:g} of max|logit|, "
          f"worst {rows.max():.2e}")
    test.assertGreaterEqual(exact, ROWS_EXACT)
    test.assertLessEqual(rows.max(), ROW_FLIP)


def read_model(path):
    tensors, metadata = st.read(str(path))
    return json.loads(metadata["config"]), tensors


def export(*args):
    return subprocess.run(EXPORT + [str(a) for a in args], capture_output=True, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))


def need_engine(test):
    if not os.path.isfile(ENGINE):
        test.skipTest(f"{ENGINE} is not built (make build/tinyformer)")


class Rule(unittest.TestCase):
    def test_the_hand_worked_row_of_the_engine_s_test(self):
        # tests/test_q8_0.cpp "a row quantized by hand": groups of 4.
        # [127, -3.4, 0.6, -50.5]: s = 1, q = [127, -3, 1, -51] (-50.5: a half, away from zero)
        # [-254, 127, 0, 0.9]:    s = 2, x / s = [-127, 63.5, 0, 0.45] -> [-127, 64, 0, 0]
        # zeros:                  s = 0, q = 0
        x = np.array([[127, -3.4, 0.6, -50.5, -254, 127, 0, 0.9, 0, 0, 0, 0]], dtype=np.float32)
        q, s = q8_0.quantize_rows(x, 4)
        self.assertEqual(s.tolist(), [[1.0, 2.0, 0.0]])
        self.assertEqual(q.tolist(), [[127, -3, 1, -51, -127, 64, 0, 0, 0, 0, 0, 0]])
        self.assertEqual(q.dtype, np.int8)
        self.assertEqual(q8_0.dequantize_rows(q, s).tolist(),
                         [[127, -3, 1, -51, -254, 128, 0, 0, 0, 0, 0, 0]])

    def test_halves_go_away_from_zero_not_to_even(self):
        # s = 127 / 127 = 1: x / s = x. torch.round (and numpy.round) give 2, -2, 0, -50: the even neighbour.
        x = np.array([[2.5, -2.5, 0.5, -50.5, 127, 1.5, -0.5, 0.49999997]], dtype=np.float32)
        q, s = q8_0.quantize_rows(x, 8)
        self.assertEqual(s.tolist(), [[1.0]])
        self.assertEqual(q.tolist(), [[3, -3, 1, -51, 127, 2, -1, 0]])
        self.assertEqual(torch.round(torch.from_numpy(x[:, :4])).tolist(), [[2.0, -2.0, 0.0, -50.0]])

    def test_the_scale_is_a_float32_division(self):
        # max |x| = 1: s = float32(1 / 127); 1 / s rounds to 127 exactly, -0.3 / s = -38.1 -> -38
        x = np.array([[1.0, -0.3]], dtype=np.float32)
        q, s = q8_0.quantize_rows(x, 2)
        self.assertEqual(s[0, 0], np.float32(1) / np.float32(127))
        self.assertEqual(q.tolist(), [[127, -38]])

    def test_a_group_size_that_does_not_divide_k_names_the_weight(self):
        with self.assertRaisesRegex(ValueError, r"--group-size 5 does not divide w1's input axis K = 12"):
            q8_0.check_group("w1", 12, 5)
        self.assertTrue(q8_0.is_q8_weight("transformer.layers.3.self_attn.in_proj_weight"))
        self.assertTrue(q8_0.is_q8_weight("lm_head.weight"))
        self.assertFalse(q8_0.is_q8_weight("embed.weight"))
        self.assertFalse(q8_0.is_q8_weight("transformer.layers.0.linear1.bias"))


def small_llama(seed=0, tie=True, hidden_dim=None):
    """test_families_llama's small model (weights larger than the 0.02 init), 32 positions."""
    return small(tie=tie, seed=seed, max_seq_len=32, hidden_dim=hidden_dim)


class V2Files(Case):
    def v2(self, tie=True, group=16, name="model.bin", hidden_dim=None):
        model, _ = small_llama(tie=tie, hidden_dim=hidden_dim)
        converted = llama.from_module(model)
        path = Path(self.p(name))
        path.write_bytes(llama.llama2c_bin_bytes(converted, 2, group_size=group))
        return path, converted

    def test_values_and_scales_are_copied_exactly(self):
        for tie in (True, False):
            with self.subTest(tie=tie):
                path, source = self.v2(tie=tie)
                c = llama.convert_llama2c_bin(path)
                self.assertFalse(c.config["tie_embeddings"])        # the head is the int8 matrix
                for name, t in source.tensors.items():
                    if name == "embed.weight":
                        q, s = q8_0.quantize_rows(t.numpy(), 16)
                        self.assertTrue(np.array_equal(c.tensors[name].numpy(), q8_0.dequantize_rows(q, s)))
                        if tie:                                      # runq.c's classifier: q_tokens
                            self.assertTrue(np.array_equal(c.tensors["lm_head.weight"].numpy(), q))
                            self.assertTrue(np.array_equal(c.tensors["lm_head.weight.scale"].numpy(), s))
                    elif q8_0.is_q8_weight(name):
                        q, s = q8_0.quantize_rows(t.numpy(), 16)
                        self.assertEqual(c.tensors[name].dtype, torch.int8, name)
                        self.assertTrue(np.array_equal(c.tensors[name].numpy(), q), name)
                        self.assertTrue(np.array_equal(c.tensors[name + ".scale"].numpy(), s), name)
                    else:
                        self.assertTrue(torch.equal(c.tensors[name], t), name)

    def test_the_engine_computes_runq_s_arithmetic(self):
        need_engine(self)
        for tie in (True, False):
            with self.subTest(tie=tie):
                path, _ = self.v2(tie=tie)
                out = Path(self.p("m.safetensors"))
                run = export("--from", "llama2c-bin", path, "--out", out)
                self.assertEqual(run.returncode, 0, run.stderr)
                self.assertIn("not checked", run.stdout)
                cfg, w = read_model(out)
                self.assertEqual(w["lm_head.weight"].dtype, np.int8)
                inputs = random_inputs(cfg)
                ours = engine_logits(out, inputs, self.dir.name)
                ref = nr.spec_forward(cfg, w, inputs)[0]["logits"]
                assert_runq_arithmetic(self, ours, ref, f"v2 tie={tie}")

    def refused(self, data, *words):
        path = Path(self.p("bad.bin"))
        path.write_bytes(bytes(data))
        with self.assertRaises(ValueError) as caught:
            llama.convert_llama2c_bin(path)
        message = str(caught.exception)
        self.assertNotIn("\n", message)
        for w in words:
            self.assertIn(w, message)
        return message

    def test_bad_v2_files(self):
        path, _ = self.v2()
        data = bytearray(path.read_bytes())
        self.refused(data[:-1], "truncated", "group_size 16")
        self.refused(data + b"\0" * 3, "3 bytes longer than its header says")
        for group, words in [(0, ["header group_size = 0: expected 1.."]), (-8, ["group_size = -8"]),
                             (3, ["header group_size = 3 does not divide dim = 32"])]:
            bad = bytearray(data)
            struct.pack_into("<i", bad, 37, group)
            self.refused(bad, *words)
        path, _ = self.v2(group=8, hidden_dim=40, name="h40.bin")      # 16 divides dim 32, not hidden_dim 40
        bad = bytearray(path.read_bytes())
        struct.pack_into("<i", bad, 37, 16)
        self.refused(bad, "header group_size = 16 does not divide hidden_dim = 40")

    def test_bad_values_on_the_command_line_in_one_line(self):
        path, _ = self.v2()
        data = bytearray(path.read_bytes())
        f = dict(zip(llama.HEADER_FIELDS, struct.unpack_from("<7i", data, 8)), group_size=16)
        norms = 4 * llama._float_count(2, f, True)
        at = 256 + norms + 40 * 32                        # tok_embeddings' first scale
        nan, low = bytearray(data), bytearray(data)
        struct.pack_into("<f", nan, at, float("nan"))
        low[256 + norms] = 0x80                           # the first int8 value -128
        cases = [(data[:-5], "truncated"), (nan, "a Q8_0 scale is a finite number >= 0"),
                 (low, "Q8_0 values lie in -127..127")]
        for bad, words in cases:
            with self.subTest(words=words):
                path.write_bytes(bytes(bad))
                run = export("--from", "llama2c-bin", path, "--out", Path(self.p("o.safetensors")))
                self.assertEqual(run.returncode, 1, run.stderr)
                lines = run.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, run.stderr)
                self.assertTrue(lines[0].startswith("tinyformer_export: error: "), lines[0])
                self.assertIn(words, lines[0])
                self.assertFalse((Path(self.p("o.safetensors"))).exists())


class Upstream(Case):
    """A v2 file written by llama2.c's own export.py, run by its own runq."""

    def setUp(self):
        if not UPSTREAM or not os.path.isfile(os.path.join(UPSTREAM, "export.py")):
            self.skipTest("LLAMA2C_DIR (a llama2.c checkout with export.py and model.py) is not given")
        need_engine(self)
        super().setUp()
        model, args = small_llama(seed=3)
        torch.save({"model": model.state_dict(), "model_args": dict(
            dim=args.dim, n_layers=args.n_layers, n_heads=args.n_heads, n_kv_heads=args.n_kv_heads,
            vocab_size=args.vocab_size, multiple_of=args.multiple_of, max_seq_len=args.max_seq_len, dropout=0.0)},
            Path(self.p("ckpt.pt")))
        run = subprocess.run(["/usr/bin/python3", os.path.join(UPSTREAM, "export.py"), "--version", "2",
                              "--checkpoint", "ckpt.pt", "model.bin"], cwd=self.dir.name, capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        # A vocabulary in which "x" is one token after <s> (" " + "x" merge into " x"), every piece printable.
        self.pieces = ["<unk>", "\n<s>\n", "\n</s>\n", " ", "x", " x"] + [f" a{i}" for i in range(6, 40)]
        scores = [0.0] * 5 + [10.0] + [-float(i) for i in range(6, 40)]
        (Path(self.p("tokenizer.bin"))).write_bytes(llama.tokenizer_bin_bytes(self.pieces, scores))
        out = Path(self.p("m.safetensors"))
        run = export("--from", "llama2c-bin", Path(self.p("model.bin")), "--tokenizer", Path(self.p("tokenizer.bin")),
                     "--out", out)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.model = out

    def test_logits_equal_numpy_s_model_of_runq(self):
        cfg, w = read_model(self.model)
        inputs = random_inputs(cfg, seed=5)
        ours = engine_logits(self.model, inputs, self.dir.name)
        ref = nr.spec_forward(cfg, w, inputs)[0]["logits"]
        assert_runq_arithmetic(self, ours, ref, "upstream v2")

    def test_greedy_text_equals_runq_s(self):
        if not RUNQ or not os.access(RUNQ, os.X_OK):
            self.skipTest("no runq binary (LLAMA2C_RUNQ=PATH, or runq built in LLAMA2C_DIR)")
        steps = 30
        runq = subprocess.run([RUNQ, str(Path(self.p("model.bin"))), "-z", str(Path(self.p("tokenizer.bin"))), "-t", "0",
                               "-n", str(steps), "-i", "x"], capture_output=True, text=True,
                              env=dict(os.environ, OMP_NUM_THREADS="1"))
        self.assertEqual(runq.returncode, 0, runq.stderr)
        theirs = runq.stdout.rstrip("\n")
        run = subprocess.run([ENGINE, "run", str(self.model), "--ids", "5", "--print-ids", "--max-new-tokens",
                              str(steps - 1)], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        ids = [int(i) for i in run.stdout.split(",")] if run.stdout.strip() else []
        ours = llama.decode([1, 5] + ids, self.pieces)
        print(f"runq: {theirs!r}\nours: {ours!r}")
        if len(ids) == steps - 1:
            self.assertEqual(ours, theirs)
        else:                                  # the engine stopped at </s>; runq stops only at <s>
            self.assertTrue(theirs.startswith(ours), (ours, theirs))
        self.assertGreater(len(ids), 5)


def float_bound(cfg, w, logits):
    """The bound on |Q8_0 logits - float32 logits| used here, first order:
    each Q8_0 product y = W x moves by at most H (sw |x| + sx |w|) per term
    (tests/test_q8_0.cpp), which is at most 2H/127 of the product of the two
    groups' largest magnitudes, summed: a relative error of 2H/127 = 0.79% of
    the product's scale. Along the longest path to a logit there are P products
    (per layer: q/k/v, out_proj, linear1 (with linear3), linear2, and in a
    decoder cross-attention's two; then the head); to first order their errors
    add, so |d| <= P 2H/127 max|logit|, assuming the norms and residual sums do
    not amplify them (they rescale, and the test measures 4x to 7x below it)."""
    if cfg["arch"] == "encoder_decoder":
        products = 4 * cfg["num_encoder_layers"] + 6 * cfg["num_decoder_layers"] + 1
    else:
        products = 4 * cfg["num_layers"] + 1
    return products * 2 * H / 127 * np.abs(logits).max()


COMMITTED = [
    ("llama2c", FAMILIES / "llama2c-tiny" / "llama2c-tiny.safetensors",
     ["--from", "llama2c", FAMILIES / "llama2c-tiny" / "ckpt.pt", "--tokenizer",
      FAMILIES / "llama2c-tiny" / "tokenizer.bin"]),
    ("nanogpt", FAMILIES / "nanogpt-char.safetensors",
     ["--from", "nanogpt", FAMILIES / "nanogpt-char" / "ckpt.pt", "--meta", FAMILIES / "nanogpt-char" / "meta.pkl"]),
    ("mingpt", FAMILIES / "mingpt-sort.safetensors", ["--from", "mingpt", FAMILIES / "mingpt-sort.pt", "--n-head", "3"]),
    ("hf-gpt2", FAMILIES / "gpt2-tiny.safetensors", ["--from", "hf-gpt2", FAMILIES / "gpt2-tiny"]),
    ("annotated", FAMILIES / "annotated-copy.safetensors",
     ["--from", "annotated", FAMILIES / "annotated-copy.pt", "--n-head", "4", "--max-len", "16"]),
]


class Quantize(unittest.TestCase):
    def test_every_family_s_committed_model(self):
        need_engine(self)
        with tempfile.TemporaryDirectory() as tmp:
            for family, committed, flags in COMMITTED:
                with self.subTest(family=family):
                    out = os.path.join(tmp, f"{family}-q8.safetensors")
                    run = export(*flags, "--quantize", "q8_0", "--group-size", "16", "--out", out)
                    self.assertEqual(run.returncode, 0, run.stderr)
                    self.assertIn("not checked", run.stdout)
                    cfg, w = read_model(out)
                    float_cfg, float_w = read_model(committed)
                    self.assertFalse(cfg["tie_embeddings"] if "tie_embeddings" in cfg else False)
                    quantized = [n for n in w if w[n].dtype == np.int8]
                    self.assertTrue(quantized)
                    for name in quantized:
                        source = float_w.get(name)
                        if source is None:                       # a tied head: the embedding's copy
                            source = float_w["tgt_embed.weight" if name == "generator.weight" else "embed.weight"]
                        q, s = q8_0.quantize_rows(source, 16)
                        self.assertTrue(np.array_equal(w[name], q), name)
                        self.assertTrue(np.array_equal(w[name + ".scale"], s), name)
                    self.assertEqual({n for n in w if not n.endswith(".scale")} - set(float_w),
                                     {n for n in ("lm_head.weight", "generator.weight") if n in w and n not in float_w})
                    inputs = random_inputs(cfg)
                    ours = engine_logits(out, inputs, tmp)
                    ref = nr.spec_forward(cfg, w, inputs)[0]["logits"]
                    assert_runq_arithmetic(self, ours, ref, family)
                    floats = engine_logits(committed, inputs, tmp)
                    bound = float_bound(cfg, w, floats)
                    diff = np.abs(ours - floats).max()
                    print(f"{family}: vs float32 max|d| "
                          f"{diff:.4f}, bound {bound:.4f} ({diff / bound:.2f} of it)")
                    self.assertLessEqual(diff, bound)

    def test_refusals(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "o.safetensors")
            run = export("--from", "mingpt", FAMILIES / "mingpt-sort.pt", "--n-head", "3", "--quantize", "q8_0",
                         "--out", out)                           # the default 64 does not divide d_model 48
            self.assertEqual(run.returncode, 1)
            self.assertIn("--group-size 64 does not divide transformer.layers.0.self_attn.in_proj_weight's input "
                          "axis K = 48", run.stderr)
            self.assertEqual(run.stderr.count("\n"), 1)
            self.assertFalse(os.path.exists(out))
            run = export("--from", "mingpt", FAMILIES / "mingpt-sort.pt", "--n-head", "3", "--group-size", "16",
                         "--out", out)
            self.assertEqual(run.returncode, 2)
            self.assertIn("--group-size goes with --quantize q8_0", run.stderr)
            run = export("--check", FAMILIES / "mingpt-sort.safetensors", "--quantize", "q8_0")
            self.assertEqual(run.returncode, 2)
            self.assertIn("--quantize goes with --from FAMILY FILE", run.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
