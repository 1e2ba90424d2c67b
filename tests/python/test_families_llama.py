#!/usr/bin/python3
"""Tests of the llama2.c family (tools/python/families/llama.py) and its
command line (tinyformer_export.py --from llama2c / llama2c-bin, --tokenizer).

- The reference module against hand-worked pieces: RMSNorm of [3, 4], one RoPE
  rotation, llama2.c's FFN width rule on known shapes (stories15M, Llama 7B),
  GQA equal to the same model with its K/V heads written out, causality.
- The converters: names, shapes, GQA's narrower k/v, the mask buffers, the
  torch.compile prefix, an untied head, every refusal named; export.py's v0 and
  v1 layouts read back exactly, and corrupted headers (truncated, oversized,
  absurd sizes, v2, bad RoPE tables) refused with the field named.
- tokenizer.bin: read back, refusals, tokenizer.py's framed <s>/</s>; run.c's
  encoding on a hand-made vocabulary.
- The committed data/families/llama2c-tiny: ckpt.pt converts to the committed
  safetensors and model.bin; its greedy.tsv is what the module generates now.
- Parity with the engine (`build/tinyformer forward` via check()): skipped, with
  the reason, while the engine refuses rotary / rms_norm / swiglu.

    /usr/bin/python3 tests/python/test_families_llama.py        # from the repository root
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

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import safetensors_io  # noqa: E402
import tinyformer_export  # noqa: E402
from families import write_converted  # noqa: E402
from families import llama  # noqa: E402

DATA = REPO / "data" / "families" / "llama2c-tiny"
EXPORT = [sys.executable, str(REPO / "tools" / "python" / "tinyformer_export.py")]


def small(n_kv_heads=2, vocab=40, tie=True, seed=0, max_seq_len=16, hidden_dim=None):
    torch.manual_seed(seed)
    args = llama.ModelArgs(dim=32, n_layers=2, n_heads=4, n_kv_heads=n_kv_heads, vocab_size=vocab,
                           hidden_dim=hidden_dim, multiple_of=16, max_seq_len=max_seq_len)
    model = llama.Transformer(args, tie=tie)
    with torch.no_grad():                       # larger weights than the 0.02 init, so mistakes show
        for name, p in model.named_parameters():
            p.copy_(torch.randn(p.shape) * (0.3 if p.dim() > 1 else 1.0) + (1.0 if p.dim() == 1 else 0.0))
    return model.eval(), args


def model_args_of(args):
    return dict(dim=args.dim, n_layers=args.n_layers, n_heads=args.n_heads, n_kv_heads=args.n_kv_heads,
                vocab_size=args.vocab_size, multiple_of=args.multiple_of, max_seq_len=args.max_seq_len,
                dropout=0.0)


def save_ckpt(path, model, args, state=None, **extra):
    ckpt = {"model": model.state_dict() if state is None else state, "model_args": model_args_of(args),
            "iter_num": 7, "best_val_loss": 1.25, "config": {"learning_rate": 5e-4}}
    ckpt.update(extra)
    torch.save(ckpt, path)


class Reference(unittest.TestCase):
    def test_rms_norm_of_a_vector_by_hand(self):
        # x = [3, 4]: mean(x^2) = (9 + 16) / 2 = 12.5; 1 / sqrt(12.5 + 1e-5) = 0.28284260;
        # y = x * 0.28284260 * [1, 2] = [0.8485278, 2.2627408]
        norm = llama.RMSNorm(2, 1e-5)
        with torch.no_grad():
            norm.weight.copy_(torch.tensor([1.0, 2.0]))
        y = norm(torch.tensor([[3.0, 4.0]]))[0]
        self.assertAlmostEqual(float(y[0]), 0.8485278, places=6)
        self.assertAlmostEqual(float(y[1]), 2.2627408, places=6)

    def test_one_rope_rotation_by_hand(self):
        # head_dim 4: f_0 = 1, f_1 = 1 / 10000^(2/4) = 0.01. At position 1, pair (x0, x1) = (1, 0)
        # turns by 1 rad -> (cos 1, sin 1) = (0.5403023, 0.8414710); pair (x2, x3) = (0, 1) turns by
        # 0.01 rad -> (-sin 0.01, cos 0.01) = (-0.0099998, 0.9999500). Position 0 turns by 0.
        cos, sin = llama.rope_tables(4, 2)
        x = torch.tensor([1.0, 0.0, 0.0, 1.0]).view(1, 1, 1, 4).expand(1, 2, 1, 4)
        y = llama.apply_rope(x, cos, sin)
        self.assertTrue(torch.equal(y[0, 0, 0], torch.tensor([1.0, 0.0, 0.0, 1.0])))
        for got, want in zip(y[0, 1, 0].tolist(), [0.5403023, 0.8414710, -0.0099998, 0.9999500]):
            self.assertAlmostEqual(got, want, places=6)

    def test_ffn_width_rule(self):
        self.assertEqual(llama.ffn_hidden_dim(64, None, 32), 192)      # int(512 / 3) = 170 -> 192
        self.assertEqual(llama.ffn_hidden_dim(288, None, 32), 768)     # stories15M: 768 exactly
        self.assertEqual(llama.ffn_hidden_dim(4096, None, 256), 11008)  # Llama 2 7B
        self.assertEqual(llama.ffn_hidden_dim(64, 100, 32), 100)

    def test_gqa_is_the_expanded_heads_model(self):
        gqa, args = small(n_kv_heads=2)
        full, _ = small(n_kv_heads=4)
        state = gqa.state_dict()
        head = args.dim // args.n_heads
        expanded = dict(state)
        for i in range(args.n_layers):
            for w in ("wk", "wv"):
                key = f"layers.{i}.attention.{w}.weight"
                heads = state[key].view(2, head, args.dim)            # kv head g serves query heads 2g, 2g+1
                expanded[key] = heads.repeat_interleave(2, dim=0).reshape(4 * head, args.dim)
        full.load_state_dict(expanded)
        ids = torch.randint(0, args.vocab_size, (2, 9))
        self.assertTrue(torch.allclose(gqa(ids), full(ids), atol=1e-5))

    def test_causal(self):
        model, args = small()
        ids = torch.randint(0, args.vocab_size, (1, 8))
        other = ids.clone()
        other[0, 5:] = (other[0, 5:] + 1) % args.vocab_size
        self.assertTrue(torch.equal(model(ids)[:, :5], model(other)[:, :5]))
        self.assertFalse(torch.equal(model(ids)[:, 5:], model(other)[:, 5:]))

    def test_generate_greedy_is_the_argmax_loop(self):
        model, args = small()
        ids = torch.tensor([[1, 5, 7]])
        out = model.generate(ids, 4, temperature=0.0)
        want = ids
        for _ in range(4):
            want = torch.cat([want, model(want)[:, -1].argmax(-1, keepdim=True)], dim=1)
        self.assertTrue(torch.equal(out, want))


class Converters(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def ckpt(self, model, args, name="ckpt.pt", **kw):
        path = self.dir / name
        save_ckpt(path, model, args, **kw)
        return path

    def test_names_shapes_gqa_and_config(self):
        model, args = small(n_kv_heads=2)
        c = llama.convert_llama2c_checkpoint(self.ckpt(model, args))
        self.assertEqual(c.tensors["transformer.layers.1.self_attn.q_proj.weight"].shape, (32, 32))
        self.assertEqual(c.tensors["transformer.layers.1.self_attn.k_proj.weight"].shape, (16, 32))   # 2 kv heads x 8
        self.assertEqual(c.tensors["transformer.layers.1.self_attn.v_proj.weight"].shape, (16, 32))
        self.assertEqual(c.tensors["transformer.layers.0.linear3.weight"].shape, (96, 32))    # int(256/3)=85 -> 96
        self.assertEqual(c.tensors["transformer.layers.0.linear2.weight"].shape, (32, 96))
        self.assertTrue(torch.equal(c.tensors["transformer.layers.0.linear1.weight"],
                                    model.layers[0].feed_forward.w1.weight))
        self.assertTrue(torch.equal(c.tensors["transformer.layers.0.linear3.weight"],
                                    model.layers[0].feed_forward.w3.weight))
        self.assertNotIn("lm_head.weight", c.tensors)
        self.assertEqual(len(c.tensors), 2 + 9 * 2)
        want = {"arch": "decoder_only", "d_model": 32, "nhead": 4, "n_kv_heads": 2, "num_layers": 2,
                "dim_feedforward": 96, "activation": "swiglu", "norm": "rms_norm", "norm_first": True,
                "final_norm": True, "layer_norm_eps": 1e-5, "vocab_size": 40, "max_len": 16,
                "pos_encoding": "rotary", "rope_theta": 10000.0, "rope_pairs": "adjacent", "embed_scale": False,
                "attention": "causal", "bias": False, "norm_bias": False, "head_bias": False, "qkv": "separate",
                "tie_embeddings": True, "bos_id": 1, "eos_id": 2}
        self.assertEqual(c.config, want)
        self.assertTrue(any("mask" in n for n in c.notes))
        ids = torch.randint(0, 40, (2, 11))
        self.assertTrue(torch.equal(c.reference(ids), model(ids)))

    def test_untied_head_and_compile_prefix(self):
        model, args = small(tie=False)
        state = {"_orig_mod." + k: v for k, v in model.state_dict().items()}
        c = llama.convert_llama2c_checkpoint(self.ckpt(model, args, state=state))
        self.assertFalse(c.config["tie_embeddings"])
        self.assertTrue(torch.equal(c.tensors["lm_head.weight"], model.output.weight))
        ids = torch.randint(0, 40, (1, 7))
        self.assertTrue(torch.equal(c.reference(ids), model(ids)))

    def test_refusals_name_what(self):
        model, args = small()
        state = model.state_dict()
        cases = []
        bad = dict(state)
        bad["layers.0.attention.mask"] = torch.zeros(1, 1, 16, 16)
        cases.append((dict(state=bad), "attention.mask"))
        extra = dict(state)
        extra["layers.0.attention.bias"] = torch.zeros(4)
        cases.append((dict(state=extra), "layers.0.attention.bias"))
        missing = {k: v for k, v in state.items() if k != "layers.1.ffn_norm.weight"}
        cases.append((dict(state=missing), "layers.1.ffn_norm.weight is missing"))
        for kw, words in cases:
            with self.subTest(words=words), self.assertRaises(ValueError) as e:
                llama.convert_llama2c_checkpoint(self.ckpt(model, args, **kw))
            self.assertIn(words, str(e.exception))
        path = self.dir / "args.pt"
        torch.save({"model": state, "model_args": dict(model_args_of(args), dim=48)}, path)
        with self.assertRaisesRegex(ValueError, r"model_args\['dim'\] = 48"):
            llama.convert_llama2c_checkpoint(path)
        torch.save({"model": state, "model_args": dict(model_args_of(args), multiple_of=64)}, path)
        with self.assertRaisesRegex(ValueError, "FFN width of 128"):
            llama.convert_llama2c_checkpoint(path)
        torch.save({"model": state, "model_args": {"dim": 32}}, path)
        with self.assertRaisesRegex(ValueError, "no n_heads and no max_seq_len"):
            llama.convert_llama2c_checkpoint(path)
        torch.save(state, path)
        with self.assertRaisesRegex(ValueError, "'model'"):
            llama.convert_llama2c_checkpoint(path)

    def test_v0_and_v1_read_back_exactly(self):
        for tie in (True, False):
            model, args = small(tie=tie)
            c = llama.convert_llama2c_checkpoint(self.ckpt(model, args))
            for version in (0, 1):
                with self.subTest(tie=tie, version=version):
                    data = llama.llama2c_bin_bytes(c, version)
                    d, h, kv, v, t = 32, 96, 16, 40, 16
                    floats = v * d + 2 * (2 * d + d * d + 2 * kv * d + d * d + 3 * h * d) + d + (0 if tie else v * d)
                    header = 28 if version == 0 else 256
                    rope = 2 * t * 4 if version == 0 else 0
                    self.assertEqual(len(data), header + 4 * (floats + rope))
                    if version == 0:
                        self.assertEqual(struct.unpack_from("<7i", data), (32, 96, 2, 4, 2, 40 if tie else -40, 16))
                    else:
                        self.assertEqual(struct.unpack_from("<Ii7iB", data), (0x616B3432, 1, 32, 96, 2, 4, 2, 40, 16,
                                                                              int(tie)))
                    path = self.dir / f"m{version}.bin"
                    path.write_bytes(data)
                    back = llama.convert_llama2c_bin(path)
                    self.assertEqual(back.config, c.config)
                    self.assertEqual(set(back.tensors), set(c.tensors))
                    for k in c.tensors:
                        self.assertTrue(torch.equal(back.tensors[k], c.tensors[k]), k)

    def corrupt(self, version, edit):
        model, args = small()
        c = llama.convert_llama2c_checkpoint(self.ckpt(model, args))
        data = bytearray(llama.llama2c_bin_bytes(c, version))
        data = edit(data)
        path = self.dir / "bad.bin"
        path.write_bytes(bytes(data))
        with self.assertRaises(ValueError) as e:
            llama.convert_llama2c_bin(path)
        message = str(e.exception)
        self.assertNotIn("\n", message)
        return message

    def test_corrupted_headers(self):
        def field(version, index, value):
            def edit(data):
                struct.pack_into("<i", data, (0 if version == 0 else 8) + 4 * index, value)
                return data
            return edit
        self.assertIn("truncated", self.corrupt(0, lambda d: d[:-4]))
        self.assertIn("truncated", self.corrupt(1, lambda d: d[:-1]))
        self.assertIn("12 bytes longer", self.corrupt(1, lambda d: d + b"\0" * 12))
        self.assertIn("header dim = 0", self.corrupt(0, field(0, 0, 0)))
        self.assertIn("header dim = 2147483647", self.corrupt(1, field(1, 0, 2**31 - 1)))   # refused before allocating
        self.assertIn("header n_layers = -3", self.corrupt(1, field(1, 2, -3)))
        self.assertIn("n_kv_heads = 3", self.corrupt(1, field(1, 4, 3)))
        self.assertIn("n_heads = 5 does not divide dim", self.corrupt(0, field(0, 3, 5)))
        self.assertIn("needs", self.corrupt(1, field(1, 1, 97)))          # hidden_dim 97: the length disagrees
        # a v1 file called version 2: its header has no group size (0 after the shared byte)
        self.assertIn("header group_size = 0: expected 1..", self.corrupt(1, lambda d: d[:4] + struct.pack("<i", 2) + d[8:]))
        self.assertIn("header version = 9", self.corrupt(1, lambda d: d[:4] + struct.pack("<i", 9) + d[8:]))
        self.assertIn("shared_classifier = 5", self.corrupt(1, lambda d: d[:36] + b"\x05" + d[37:]))
        self.assertIn("shorter than the v1 header", self.corrupt(1, lambda d: d[:20]))
        self.assertIn("too short", self.corrupt(0, lambda d: d[:20]))

        def rope_edit(data):      # v0's freqs_sin table sits just before the end (tied head): change one entry
            struct.pack_into("<f", data, len(data) - 8, 0.5)
            return data
        self.assertIn("freqs_sin differs from RoPE with theta 10000", self.corrupt(0, rope_edit))

    def test_tokenizer_bin(self):
        pieces = ["<unk>", "\n<s>\n", "\n</s>\n", "a", " b", "é"]
        scores = [0.0, 0.0, 0.0, -1.5, -2.0, -3.25]
        path = self.dir / "tok.bin"
        path.write_bytes(llama.tokenizer_bin_bytes(pieces, scores))
        got, got_scores, max_len = llama.read_tokenizer_bin(path, vocab_size=6)
        self.assertEqual((got, got_scores, max_len), (pieces, scores, 6))
        vocab, notes = llama.vocabulary_of(got, "tok.bin")
        self.assertEqual(vocab, ["<unk>", "<s>", "</s>", "a", " b", "é"])
        self.assertEqual(len(notes), 2)
        # llama2.c's own tokenizer.bin holds pieces such as ";\r" and "\x92": kept as they are.
        self.assertEqual(llama.vocabulary_of([";\r", "\x92", "a\tb"], "t"), ([";\r", "\x92", "a\tb"], []))
        good = path.read_bytes()
        cases = [(good[:-1], "piece 5: length 2 but only 1 bytes"),
                 (good[:-3], "piece 5: truncated"),
                 (struct.pack("<I", 0) + good[4:], "max_token_length = 0"),
                 (struct.pack("<I", 1) + good[4:], "piece 0: length 5 exceeds max_token_length = 1"),
                 (good + struct.pack("<fI", 0.0, 1) + b"\xff", "piece 6: "),
                 (good[:4], "no pieces")]
        for data, words in cases:
            with self.subTest(words=words):
                path.write_bytes(data)
                with self.assertRaises(ValueError) as e:
                    llama.read_tokenizer_bin(path, vocab_size=None if words == "piece 6: " else 6)
                self.assertIn(words, str(e.exception))
        path.write_bytes(good)
        with self.assertRaisesRegex(ValueError, "6 pieces, but the model's vocab_size is 7"):
            llama.read_tokenizer_bin(path, vocab_size=7)
        path.write_bytes(good + struct.pack("<fI", 0.0, 1) + b"\xff")
        with self.assertRaisesRegex(ValueError, "piece 6: its 1 bytes are not UTF-8"):
            llama.read_tokenizer_bin(path)

    def test_run_c_encoding_by_hand(self):
        # pieces: specials, the 256 byte pieces, then " ", "a", "b", "ab" (score -1), " ab" (score -2),
        # " a" (score -3). " ab" from the text "ab" (dummy prefix " "): the pairs are (" ", "a") -> " a"
        # score -3 and ("a", "b") -> "ab" score -1: "ab" wins (higher); then (" ", "ab") -> " ab" (-2).
        # "é" is not a piece: its UTF-8 bytes C3 A9 -> <0xC3> (id 3 + 0xC3 = 198), <0xA9> (id 172).
        vocab = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + [" ", "a", "b", "ab", " ab", " a"]
        scores = [0.0] * 259 + [-10.0, -10.0, -10.0, -1.0, -2.0, -3.0]
        self.assertEqual(llama.encode("ab", vocab, scores), [263])
        self.assertEqual(llama.encode("aé", vocab, scores), [264, 198, 172])
        self.assertEqual(llama.encode("", vocab, scores), [])
        self.assertEqual(llama.decode([1, 263, 198, 172], vocab), "abé")


class Committed(unittest.TestCase):
    """data/families/llama2c-tiny: the files agree with each other and with the module."""

    def test_files_agree(self):
        c = llama.convert_llama2c_checkpoint(DATA / "ckpt.pt", tokenizer=DATA / "tokenizer.bin")
        tensors, metadata = safetensors_io.read(str(DATA / "llama2c-tiny.safetensors"))
        config = json.loads(metadata["config"])
        config.pop("format")
        self.assertEqual(config, c.config)
        self.assertEqual(config["n_kv_heads"], 2)
        self.assertEqual(metadata["tokenizer"], "sentencepiece_bpe")
        self.assertEqual(json.loads(metadata["vocab"]), c.metadata["vocab"])
        self.assertEqual(len(json.loads(metadata["scores"])), config["vocab_size"])
        self.assertEqual(set(tensors), set(c.tensors))
        for k, t in c.tensors.items():
            self.assertTrue((torch.from_numpy(tensors[k].copy()) == t).all(), k)
        b = llama.convert_llama2c_bin(DATA / "model.bin")
        for k, t in c.tensors.items():
            self.assertTrue(torch.equal(b.tensors[k], t), k)

    def test_greedy_tsv_is_generate_now(self):
        c = llama.convert_llama2c_checkpoint(DATA / "ckpt.pt")
        pieces, scores, _ = llama.read_tokenizer_bin(DATA / "tokenizer.bin")
        rows = [line.split("\t") for line in (DATA / "llama2c-tiny.greedy.tsv").read_text().splitlines()
                if not line.startswith("#")]
        self.assertGreaterEqual(len(rows), 5)
        for prompt, ids, out, text in rows:
            ids = [int(i) for i in ids.split(",")]
            self.assertEqual(ids, [1] + llama.encode(prompt, pieces, scores))
            want = [int(i) for i in out.split(",")]
            got = c.reference.generate(torch.tensor([ids]), len(want), temperature=0.0)[0, len(ids):].tolist()
            self.assertEqual(got, want, prompt)
            self.assertEqual(llama.decode(want, pieces), text)


class CommandLine(unittest.TestCase):
    def run_export(self, *args):
        return subprocess.run(EXPORT + list(args), capture_output=True, text=True)

    def test_from_llama2c_writes_and_refuses(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m.safetensors")
            run = self.run_export("--from", "llama2c", str(DATA / "ckpt.pt"), "--tokenizer", str(DATA / "tokenizer.bin"),
                                  "--out", out, "--no-check")
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(Path(out).read_bytes(), (DATA / "llama2c-tiny.safetensors").read_bytes())
            run = self.run_export("--from", "llama2c-bin", str(DATA / "model.bin"), "--out", out, "--no-check")
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertNotIn("vocab", safetensors_io.read(out)[1])       # no tokenizer: ids only
            v2 = os.path.join(tmp, "v2.bin")
            Path(v2).write_bytes(struct.pack("<Ii", 0x616B3432, 2) + b"\0" * 300)
            run = self.run_export("--from", "llama2c-bin", v2, "--out", out)
            self.assertEqual(run.returncode, 1)
            self.assertIn("(v2 header)", run.stderr)
            self.assertEqual(run.stderr.count("\n"), 1)
            run = self.run_export("--from", "llama2c", str(DATA / "ckpt.pt"), "--vocab", "v.json", "--out", out)
            self.assertEqual(run.returncode, 1)
            self.assertIn("--vocab does not apply", run.stderr)


def engine_refusal():
    """None when build/tinyformer runs a llama2.c-shaped file; else the reason."""
    binary = REPO / "build" / "tinyformer"
    if not binary.exists():
        return f"{binary} is not built"
    run = subprocess.run([str(binary), "info", str(DATA / "llama2c-tiny.safetensors")], capture_output=True, text=True)
    if run.returncode != 0:
        return f"the engine does not run llama2c-tiny yet: {run.stderr.strip()}"
    return None


class Parity(unittest.TestCase):
    """tinyformer's forward on the exported file vs the module's logits (check())."""

    def setUp(self):
        reason = engine_refusal()
        if reason:
            self.skipTest(reason)

    def test_random_gqa_and_untied_models(self):
        for n_kv, tie in ((2, True), (1, False), (4, True)):
            with self.subTest(n_kv=n_kv, tie=tie), tempfile.TemporaryDirectory() as tmp:
                model, args = small(n_kv_heads=n_kv, tie=tie, max_seq_len=32)
                ckpt = Path(tmp) / "ckpt.pt"
                save_ckpt(ckpt, model, args)
                path = Path(tmp) / "m.safetensors"
                write_converted(path, llama.convert_llama2c_checkpoint(ckpt))
                self.assertLessEqual(tinyformer_export.check(path, model, n_batches=2), 1.0)

    def test_committed_file_against_its_checkpoint(self):
        run = subprocess.run(EXPORT + ["--check", str(DATA / "llama2c-tiny.safetensors"), "--against", "llama2c",
                                       str(DATA / "ckpt.pt")], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("OK", run.stdout)


if __name__ == "__main__":
    torch.set_num_threads(1)
    unittest.main(verbosity=2 if "-v" in sys.argv else 1)
