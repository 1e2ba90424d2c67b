#!/usr/bin/python3
"""Every cost of a converter bounded by its input, and every refusal one line
naming the file and the limit (issue 31): the hostile files are built here.

- llama2.c model.bin: a 256-byte (v1) or 28-byte (v0) header claiming 2^24
  layers is refused from the file length before any list or array is made
  (before: 7.7 GB and a MemoryError traceback); tokenizer.bin is refused by
  its size before it is read; model_args' max_seq_len cannot make RoPE tables
  larger than the file's own.
- The reference modules: a claimed block size / n_positions / max_seq_len /
  max_len whose tables would need more than families.REFERENCE_TABLE_BYTES is
  refused before allocating; the converters' references build no [T, T] table
  at all (a 646 KB nanoGPT file claiming block_size 40000 made 6.4 GB twice),
  and real sizes (GPT-2's 1024, llama2.c's 2048) still build.
- Block numbers: a key "layers.99999999999.x" claims 10^11 blocks; refused
  by name, with one pass over the keys (before: --from-state-dict hung).
- The Hugging Face folder: config.json, vocab.json and merges.txt refused by
  size before they are read, nested JSON and wrong types refused by name,
  merges the engine would refuse refused at conversion naming the line, a
  broken model.safetensors named.
- The command line: every entry point prints one `tinyformer_export: error:
  PATH: ...` line and exits 1, no traceback, also for MemoryError,
  RecursionError and OverflowError.

Cost is checked in the test's own terms: the work a refusal would need is
never started (the functions that would allocate are not called), or the
command runs in a subprocess under an address-space limit (RLIMIT_AS) far
below what the old code allocated. Never wall time.

    /usr/bin/python3 tests/python/test_converter_bounds.py        # from anywhere (needs torch)
"""

import json
import os
import random
import resource
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import families  # noqa: E402
import tinyformer_export  # noqa: E402
from families import annotated, gpt, hf_gpt2, llama  # noqa: E402

EXPORT = [sys.executable, str(REPO / "tools" / "python" / "tinyformer_export.py")]
# The address space a subprocess may take: Python + torch start at about 0.8 GB of it; the
# hostile files below made the old converters ask for 6.4 to 7.7 GB.
ADDRESS_LIMIT = 2 << 30


def limited(argv, cwd):
    """(exit code, stdout, stderr) of argv run under RLIMIT_AS = ADDRESS_LIMIT."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_LIMIT, ADDRESS_LIMIT))
    run = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, preexec_fn=limit,
                         env=dict(os.environ, OMP_NUM_THREADS="1"))
    return run.returncode, run.stdout, run.stderr


def v1_header(dim, hidden, layers, heads, kv_heads, vocab, seq_len, shared=1):
    h = struct.pack("<Ii7iB", llama.MAGIC, 1, dim, hidden, layers, heads, kv_heads, vocab, seq_len, shared)
    return h + b"\0" * (llama.V1_HEADER_BYTES - len(h))


class OneLine:
    """Checks of a command's refusal: exit 1, one stderr line with the prefix, no traceback."""

    def assertOneLine(self, code, out, err, *words):
        self.assertEqual(code, 1, err)
        self.assertNotIn("Traceback", err)
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertTrue(lines[0].startswith("tinyformer_export: error: "), lines[0])
        for w in words:
            self.assertIn(w, lines[0])
        return lines[0]


# ----------------------------------------------------------------------------
# llama2.c .bin and tokenizer.bin
# ----------------------------------------------------------------------------

class Llama2cHeaders(unittest.TestCase, OneLine):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_v1_header_claiming_2_24_layers_is_refused_before_any_list_or_array(self):
        path = self.dir / "layers.bin"
        path.write_bytes(v1_header(2, 2, 1 << 24, 1, 1, 2, 2))
        with mock.patch.object(llama, "_layout", side_effect=AssertionError("_layout was called")), \
                mock.patch.object(llama.np, "fromfile", side_effect=AssertionError("the weights were read")):
            with self.assertRaises(ValueError) as caught:
                llama.read_llama2c_bin(path)
        message = str(caught.exception)
        self.assertTrue(message.startswith(f"{path}: 256 bytes"), message)
        self.assertIn("n_layers 16777216", message)
        self.assertIn(f"needs {256 + 4 * ((1 << 24) * (2 * 2 + 2 * 4 + 2 * 4 + 3 * 4) + 2 * 2 + 2)}", message)

    def test_a_v0_header_claiming_2_24_layers_is_refused_too(self):
        path = self.dir / "layers-v0.bin"
        path.write_bytes(struct.pack("<7i", 2, 2, 1 << 24, 1, 1, 2, 2))
        with mock.patch.object(llama, "_layout", side_effect=AssertionError("_layout was called")):
            with self.assertRaises(ValueError) as caught:
                llama.read_llama2c_bin(path)
        self.assertIn("legacy v0 header", str(caught.exception))
        self.assertIn("truncated", str(caught.exception))

    def test_the_command_line_refuses_it_in_one_line_within_the_address_limit(self):
        path = self.dir / "layers.bin"
        path.write_bytes(v1_header(2, 2, 1 << 24, 1, 1, 2, 2))
        code, out, err = limited(EXPORT + ["--from", "llama2c-bin", str(path), "--out", str(self.dir / "o.st")],
                                 self.dir)
        self.assertOneLine(code, out, err, f"{path}: 256 bytes", "n_layers 16777216", "truncated")
        self.assertFalse((self.dir / "o.st").exists())

    def test_the_arithmetic_count_is_the_layout_s_count(self):
        # _float_count (what the length check uses) against _layout's shapes, the plain reference
        import math
        for version in (0, 1):
            for shared in (True, False):
                for d, hd, n, h, kv, v, t in [(8, 24, 2, 2, 1, 11, 5), (12, 7, 3, 3, 3, 2, 1), (16, 48, 1, 4, 2, 9, 6)]:
                    f = dict(zip(llama.HEADER_FIELDS, (d, hd, n, h, kv, v, t)))
                    expected = sum(math.prod(shape) for _, shape in llama._layout(version, f, shared))
                    self.assertEqual(llama._float_count(version, f, shared), expected, (version, shared, f))

    def test_a_real_small_file_still_reads(self):
        model, args = _small_llama()
        converted = llama.from_module(model)
        for version in (0, 1):
            path = self.dir / f"model-v{version}.bin"
            path.write_bytes(llama.llama2c_bin_bytes(converted, version))
            got_version, fields, _, tensors = llama.read_llama2c_bin(path)
            self.assertEqual(got_version, version)
            self.assertEqual(fields["n_layers"], args.n_layers)
            self.assertTrue(torch.equal(tensors["layers.1.feed_forward.w2.weight"],
                                        model.layers[1].feed_forward.w2.weight))

    def test_tokenizer_bin_is_refused_by_its_size_before_it_is_read(self):
        path = self.dir / "tokenizer.bin"
        with open(path, "wb") as f:          # sparse: no disk blocks, its size one above the limit
            f.truncate(llama.MAX_TOKENIZER_BYTES + 1)
        real_open = open

        def no_read(p, mode="r", *a, **k):
            fh = real_open(p, mode, *a, **k)
            if str(p) == str(path):
                fh.read = mock.Mock(side_effect=AssertionError("tokenizer.bin was read"))
            return fh
        with mock.patch("builtins.open", no_read):
            with self.assertRaises(ValueError) as caught:
                llama.read_tokenizer_bin(path)
        self.assertEqual(str(caught.exception), f"{path}: {llama.MAX_TOKENIZER_BYTES + 1} bytes, more than a "
                                                f"tokenizer.bin's limit of {llama.MAX_TOKENIZER_BYTES}")

    def test_a_claimed_max_seq_len_makes_no_rope_table_larger_than_the_file_s(self):
        model, args = _small_llama()
        state, _ = llama._cleaned(model.state_dict(), "ckpt.pt")
        head = args.dim // args.n_heads
        state["freqs_cos"], state["freqs_sin"] = llama.rope_tables(head, 16)
        with mock.patch.object(llama, "rope_tables", side_effect=AssertionError("tables computed")):
            with self.assertRaises(ValueError) as caught:
                llama.assemble(state, n_heads=args.n_heads, max_seq_len=1 << 24, where="ckpt.pt")
        self.assertIn(f"ckpt.pt: freqs_cos has shape [16, {head // 2}], expected [16777216, {head // 2}]",
                      str(caught.exception))


def _small_llama(mask_buffer=True):
    torch.manual_seed(0)
    args = llama.ModelArgs(dim=16, n_layers=2, n_heads=2, n_kv_heads=1, vocab_size=11, multiple_of=8,
                           max_seq_len=16)
    return llama.Transformer(args, mask_buffer=mask_buffer).eval(), args


# ----------------------------------------------------------------------------
# The reference modules' tables
# ----------------------------------------------------------------------------

def _nanogpt_state(d, block_size, vocab=8, layers=1):
    g = torch.Generator().manual_seed(1)
    st = {"transformer.wte.weight": torch.randn(vocab, d, generator=g),
          "transformer.wpe.weight": torch.randn(block_size, d, generator=g),
          "transformer.ln_f.weight": torch.ones(d), "transformer.ln_f.bias": torch.zeros(d)}
    for i in range(layers):
        for k, shape in {"ln_1.weight": [d], "ln_1.bias": [d], "attn.c_attn.weight": [3 * d, d],
                         "attn.c_attn.bias": [3 * d], "attn.c_proj.weight": [d, d], "attn.c_proj.bias": [d],
                         "ln_2.weight": [d], "ln_2.bias": [d], "mlp.c_fc.weight": [4 * d, d],
                         "mlp.c_fc.bias": [4 * d], "mlp.c_proj.weight": [d, 4 * d], "mlp.c_proj.bias": [d]}.items():
            st[f"transformer.h.{i}.{k}"] = torch.randn(shape, generator=g)
    return st


class ReferenceTables(unittest.TestCase, OneLine):
    LIMIT = families.REFERENCE_TABLE_BYTES

    def test_the_limit_is_stated_once_and_named_in_every_refusal(self):
        cases = [
            lambda: gpt.GPT(gpt.GPTConfig(block_size=40000, n_layer=1, n_head=1, n_embd=4, mask_buffer=True)),
            lambda: hf_gpt2.GPT2LMHead(hf_gpt2.GPT2Config(vocab_size=8, n_positions=40000, n_embd=4, n_layer=1,
                                                          n_head=1, mask_buffers=True)),
            lambda: llama.Transformer(llama.ModelArgs(dim=4, n_layers=1, n_heads=1, vocab_size=8,
                                                      max_seq_len=40000), mask_buffer=True),
            lambda: annotated.sinusoid_buffer(10 ** 8, 512),
        ]
        with mock.patch.object(torch, "ones", side_effect=AssertionError("a table was allocated")), \
                mock.patch.object(torch, "zeros", side_effect=AssertionError("a table was allocated")), \
                mock.patch.object(torch, "full", side_effect=AssertionError("a table was allocated")):
            for build in cases:
                with self.assertRaises(ValueError) as caught:
                    build()
                self.assertIn(f"more than the reference modules' limit of {self.LIMIT} bytes "
                              f"(families.REFERENCE_TABLE_BYTES)", str(caught.exception))

    def test_real_sizes_still_build(self):
        # GPT-2's 12 blocks of [1024, 1024] masks; llama2.c's 2048 positions (Llama 2 7B's 32 blocks)
        families.check_reference_tables("GPT-2", "masks", 12, 1024, 1024, 4)
        families.check_reference_tables("Llama 2 7B", "masks", 32, 2048, 2048, 4)
        model = gpt.GPT(gpt.GPTConfig(block_size=1024, n_layer=12, n_head=1, n_embd=4, mask_buffer=True))
        self.assertEqual(list(model.transformer.h[11].attn.bias.shape), [1, 1, 1024, 1024])
        model = llama.Transformer(llama.ModelArgs(dim=4, n_layers=2, n_heads=1, vocab_size=8, max_seq_len=2048))
        self.assertEqual(list(model.layers[1].attention.mask.shape), [1, 1, 2048, 2048])

    def test_without_mask_buffers_the_modules_compute_the_same_logits(self):
        # the per-pass [t, t] triangle is the buffer's top-left corner: the same numbers
        torch.manual_seed(3)
        cfg = dict(block_size=12, vocab_size=9, n_layer=2, n_head=2, n_embd=8)
        with_buffer = gpt.GPT(gpt.GPTConfig(**cfg, mask_buffer=True)).eval()
        without = gpt.GPT(gpt.GPTConfig(**cfg, mask_buffer=False)).eval()
        without.load_state_dict(with_buffer.state_dict(), strict=False)
        self.assertIsNone(without.transformer.h[0].attn.bias)
        ids = torch.randint(0, 9, (2, 7))
        self.assertTrue(torch.equal(with_buffer(ids), without(ids)))
        hf_cfg = dict(vocab_size=9, n_positions=12, n_embd=8, n_layer=2, n_head=2)
        hf_with = hf_gpt2.GPT2LMHead(hf_gpt2.GPT2Config(**hf_cfg, mask_buffers=True)).eval()
        hf_without = hf_gpt2.GPT2LMHead(hf_gpt2.GPT2Config(**hf_cfg, mask_buffers=False)).eval()
        hf_without.load_state_dict({k: v for k, v in hf_with.state_dict().items()
                                    if not k.endswith((".attn.bias", ".attn.masked_bias"))}, strict=True)
        self.assertTrue(torch.equal(hf_with(ids), hf_without(ids)))

    def test_a_646_kb_nanogpt_file_claiming_block_size_40000_converts_within_the_limit(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "ckpt.pt"
            torch.save({"model": _nanogpt_state(4, 40000), "model_args": {"n_head": 1, "block_size": 40000}}, path)
            self.assertLess(path.stat().st_size, 700_000)
            code, out, err = limited(EXPORT + ["--from", "nanogpt", str(path), "--gelu", "exact", "--no-check",
                                               "--out", str(Path(tmp) / "o.safetensors")], tmp)
            self.assertEqual(code, 0, err)
            self.assertIn("nanogpt -> decoder_only", out)
            converted = gpt.convert_nanogpt(path, gelu="exact")
        self.assertEqual(converted.config["max_len"], 40000)
        self.assertIsNone(converted.reference.transformer.h[0].attn.bias)      # no [40000, 40000] table

    def test_annotated_without_pe_refuses_a_max_len_whose_tables_exceed_the_limit(self):
        model = annotated.make_model(5, 5, N=1, d_model=8, d_ff=16, h=2, dropout=0.0, max_len=10)
        state = {k: v for k, v in model.state_dict().items() if not k.endswith(".pe")}
        with self.assertRaises(ValueError) as caught:
            annotated.convert_annotated(state, n_head=2, max_len=10 ** 8, shown="state.pt")
        self.assertTrue(str(caught.exception).startswith("state.pt: the position tables pe"), caught.exception)
        self.assertIn("(families.REFERENCE_TABLE_BYTES)", str(caught.exception))


# ----------------------------------------------------------------------------
# Block numbers read from key names
# ----------------------------------------------------------------------------

class CountingDict(dict):
    iterations = 0

    def __iter__(self):
        CountingDict.iterations += 1
        return super().__iter__()


class BlockNumbers(unittest.TestCase, OneLine):
    def test_a_claimed_10_11_blocks_is_refused_by_name_in_one_pass(self):
        state = CountingDict({"layers.0.w": 1, "layers.99999999999.w": 2, "norm.weight": 3})
        CountingDict.iterations = 0
        with self.assertRaises(ValueError) as caught:
            families.layer_count(state, "layers.", "ckpt.pt")
        self.assertEqual(CountingDict.iterations, 1)
        self.assertEqual(str(caught.exception), "ckpt.pt: layers.1.* is missing but layers.99999999999.* is there: "
                                                "the blocks must be numbered 0..n-1")

    def test_counts_and_refusals(self):
        many = CountingDict({f"transformer.h.{i}.{k}": 0 for i in range(300) for k in ("a", "b")})
        CountingDict.iterations = 0
        self.assertEqual(families.layer_count(many, "transformer.h.", "f"), 300)
        self.assertEqual(CountingDict.iterations, 1)      # one pass, not one per block
        self.assertEqual(families.layer_count({"x": 0}, "layers.", "f"), 0)
        for key in ("layers.x.w", "layers.-1.w", "layers.\u0661.w"):     # U+0661: an Arabic-Indic digit
            with self.assertRaises(ValueError) as caught:
                families.layer_count({key: 0}, "layers.", "f")
            self.assertIn("with i a whole number", str(caught.exception))

    def test_from_state_dict_with_block_99999999999_is_one_line_within_the_limit(self):
        # before: tm.build_module looped over 10^11 blocks (no answer within 120 s)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "state.pt"
            torch.save({"embed.weight": torch.zeros(4, 4),
                        "transformer.layers.99999999999.linear1.weight": torch.zeros(8, 4)}, path)
            code, out, err = limited(EXPORT + ["--from-state-dict", str(path), "--arch", "decoder_only", "--nhead",
                                               "1", "--activation", "relu", "--norm-first", "true", "--max-len",
                                               "8", "--dim-feedforward", "8", "--out", str(Path(tmp) / "o.st")],
                                     tmp)
        self.assertOneLine(code, out, err, f"--from-state-dict {path}: transformer.layers.0.* is missing")

    def test_nanogpt_with_a_gap_is_refused_naming_the_file(self):
        state = _nanogpt_state(4, 8, layers=1)
        state.update({k.replace("transformer.h.0.", "transformer.h.5."): v for k, v in state.items()
                      if k.startswith("transformer.h.0.")})
        with self.assertRaises(ValueError) as caught:
            gpt.assemble(state, n_head=1, gelu="exact", where="ckpt.pt")
        self.assertIn("ckpt.pt: transformer.h.1.* is missing", str(caught.exception))


# ----------------------------------------------------------------------------
# Whatever a file's state_dict holds: converted or refused with a ValueError
# ----------------------------------------------------------------------------

def _mutated(state, rng):
    """state with 1..3 random changes: a key dropped, renamed or not a string, a value
    of another shape, dtype or type, non-finite, a matrix transposed."""
    state = dict(state)
    for _ in range(rng.randrange(1, 4)):
        key = rng.choice(list(state))
        op = rng.randrange(8)
        value = state[key]
        if op == 0:
            del state[key]
        elif op == 1:
            state[key] = torch.randn([rng.randrange(0, 5) for _ in range(rng.randrange(0, 4))])
        elif op == 2 and torch.is_tensor(value):
            state[key] = value.to(rng.choice([torch.float16, torch.int64, torch.bool, torch.float64]))
        elif op == 3:
            state[rng.choice([1, ("a",), b"x", None, 2.5])] = state.pop(key)
        elif op == 4:
            state[key] = rng.choice([1, "x", None, [1], {"a": 1}])
        elif op == 5:
            state[str(key).replace("0", "1", 1)] = value
        elif op == 6 and torch.is_tensor(value) and value.numel():
            state[key] = torch.full(value.shape, rng.choice([float("nan"), float("inf"), 1e30]))
        elif op == 7 and torch.is_tensor(value):
            state[key] = value.t() if value.dim() == 2 else value.reshape(-1)
    return state


class MutatedStateDicts(unittest.TestCase):
    """100 mutations of a valid state_dict per family (seeded): each is converted
    (with its reference module) or refused with a ValueError, never another
    exception (before: AttributeError on a key that is not a string, KeyError,
    IndexError on a 1-d embedding, ZeroDivisionError on multiple_of 0, ...)."""

    def check_family(self, base, convert, seed):
        rng = random.Random(seed)
        refused = 0
        for i in range(100):
            state = _mutated(base, rng)
            try:
                convert(state)
            except ValueError:
                refused += 1
            except Exception as e:      # noqa: BLE001 - any other exception is the finding
                self.fail(f"mutation {i}: {type(e).__name__}: {e}")
        self.assertGreater(refused, 50)

    def test_nanogpt(self):
        model = gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=7, n_layer=2, n_head=2, n_embd=8))
        ckpt = lambda state: {"model": state, "model_args": {"n_head": 2}}   # noqa: E731
        with mock.patch.object(gpt, "load_torch_file", side_effect=lambda *a: ckpt(self.state)):
            def convert(state):
                self.state = state
                gpt.convert_nanogpt("ckpt.pt", gelu="exact")
            self.check_family(dict(model.state_dict()), convert, 1)

    def test_llama2c(self):
        model, _ = _small_llama()
        args = {"dim": 16, "n_layers": 2, "n_heads": 2, "n_kv_heads": 1, "multiple_of": 8, "max_seq_len": 16}
        with mock.patch.object(llama, "load_torch_file", side_effect=lambda *a: {"model": self.state,
                                                                                "model_args": args}):
            def convert(state):
                self.state = state
                llama.convert_llama2c_checkpoint("ckpt.pt")
            self.check_family(dict(model.state_dict()), convert, 2)

    def test_annotated(self):
        model = annotated.make_model(5, 6, N=1, d_model=8, d_ff=16, h=2, dropout=0.0, max_len=10)
        self.check_family(dict(model.state_dict()),
                          lambda state: annotated.convert_annotated(state, n_head=2, shown="state.pt"), 3)

    def test_model_args_multiple_of_0_is_refused_by_name(self):
        model, _ = _small_llama()
        ckpt = {"model": dict(model.state_dict()), "model_args": {"n_heads": 2, "max_seq_len": 16,
                                                                   "multiple_of": 0}}
        with mock.patch.object(llama, "load_torch_file", return_value=ckpt):
            with self.assertRaises(ValueError) as caught:
                llama.convert_llama2c_checkpoint("ckpt.pt")
        self.assertIn("ckpt.pt: model_args['multiple_of'] = 0: expected a positive whole number",
                      str(caught.exception))

    def test_a_key_that_is_not_a_string_is_refused_naming_the_file(self):
        model = gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=7, n_layer=1, n_head=2, n_embd=8))
        state = dict(model.state_dict())
        state[1] = state.pop("transformer.ln_f.bias")
        with mock.patch.object(gpt, "load_torch_file", return_value={"model": state, "model_args": {"n_head": 2}}):
            with self.assertRaises(ValueError) as caught:
                gpt.convert_nanogpt("ckpt.pt", gelu="exact")
        self.assertEqual(str(caught.exception), "ckpt.pt: a state_dict key of type int: expected names (strings)")


# ----------------------------------------------------------------------------
# The Hugging Face GPT-2 folder
# ----------------------------------------------------------------------------

BYTE_CHARS = list(tinyformer_export.GPT2_BYTE_CHARACTERS)


def hf_folder(folder, merges, vocab_extra=("ab", "abc"), **config):
    cfg = hf_gpt2.GPT2Config(vocab_size=256 + len(vocab_extra), n_positions=8, n_embd=8, n_layer=1, n_head=2)
    torch.manual_seed(0)
    hf_gpt2.save_folder(hf_gpt2.GPT2LMHead(cfg), folder, vocab=BYTE_CHARS + list(vocab_extra), merges=merges,
                        extra_config=config)
    return Path(folder)


class HfFolder(unittest.TestCase, OneLine):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def refusal(self, folder):
        with self.assertRaises(ValueError) as caught:
            hf_gpt2.convert_hf_gpt2(folder)
        return str(caught.exception)

    def test_merges_the_engine_refuses_are_refused_naming_the_line_and_why(self):
        cases = [
            (["a b", "ab c", "x yz"], "merges.txt: line 4 'x yz': its right side 'yz' is not a token of"),
            (["a b", "b c"], "merges.txt: line 3 'b c': its merged token 'bc' is not a token of"),
            (["a b", "ab c", "a b"], "merges.txt: line 4 'a b' is the same pair as line 2; no pair may be merged "
                                     "twice"),
            (["a  b"], "merges.txt: line 2 is 'a  b', expected \"left right\""),
        ]
        for i, (merges, words) in enumerate(cases):
            folder = hf_folder(self.dir / f"f{i}", merges)
            message = self.refusal(folder)
            self.assertTrue(message.startswith(str(folder / "merges.txt")), message)
            self.assertIn(words, message)

    def test_merges_the_engine_accepts_convert(self):
        converted = hf_gpt2.convert_hf_gpt2(hf_folder(self.dir / "good", ["a b", "ab c"]))
        self.assertEqual(converted.metadata["merges"], ["a b", "ab c"])
        path = self.dir / "good.safetensors"
        families.write_converted(path, converted)
        binary = REPO / "build" / "tinyformer"
        if binary.exists():          # the engine reads the merges: "abc" is one token
            run = subprocess.run([str(binary), "tokenize", str(path), "abc"], capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("257", run.stdout)

    def test_the_writer_refuses_merges_the_engine_would_refuse(self):
        # before: write_converted checked only the "left right" shape, and wrote them
        converted = hf_gpt2.convert_hf_gpt2(hf_folder(self.dir / "good", ["a b"]))
        converted.metadata["merges"] = ["a b", "x yz"]
        with self.assertRaises(ValueError) as caught:
            families.write_converted(self.dir / "bad.safetensors", converted)
        self.assertIn("merges[1] = 'x yz': its right side 'yz' is not in the vocabulary", str(caught.exception))
        self.assertFalse((self.dir / "bad.safetensors").exists())

    def test_files_over_their_limits_are_refused_before_they_are_read(self):
        folder = hf_folder(self.dir / "big", ["a b"])
        real_open = open
        opened = []

        def no_read(p, mode="r", *a, **k):
            fh = real_open(p, mode, *a, **k)
            opened.append(str(p))
            if str(p).endswith(("config.json", "vocab.json", "merges.txt")) and os.path.getsize(p) > 1 << 20:
                fh.read = mock.Mock(side_effect=AssertionError(f"{p} was read"))
            return fh
        for name, limit in (("config.json", hf_gpt2.MAX_CONFIG_BYTES), ("vocab.json", hf_gpt2.MAX_TOKENIZER_FILE_BYTES),
                            ("merges.txt", hf_gpt2.MAX_TOKENIZER_FILE_BYTES)):
            with self.subTest(name):
                saved = (folder / name).read_bytes()
                with open(folder / name, "r+b") as f:     # sparse past the data: no disk blocks
                    f.truncate(limit + 1)
                with mock.patch("builtins.open", no_read):
                    message = self.refusal(folder)
                self.assertEqual(message.split(": ", 1)[0], str(folder / name))
                self.assertIn(f"{limit + 1} bytes, more than the limit of {limit}", message)
                (folder / name).write_bytes(saved)

    def test_nested_json_and_wrong_types_are_refused_naming_the_file_and_field(self):
        folder = hf_folder(self.dir / "f", ["a b"])
        (folder / "vocab.json").write_text("[" * 100_000 + "]" * 100_000)
        self.assertIn(f"{folder / 'vocab.json'}: a JSON vocabulary nests arrays or objects deeper",
                      self.refusal(folder))
        for key, value, words in [("activation_function", ["gelu"], "activation_function = a list: expected a string"),
                                  ("layer_norm_epsilon", "abc", "layer_norm_epsilon = 'abc': expected a number"),
                                  ("n_head", [2], "n_head = a list: expected a positive whole number"),
                                  ("tie_word_embeddings", "yes", "tie_word_embeddings = 'yes': expected true"),
                                  ("n_positions", 1e30, "n_positions = 1e+30: expected a positive whole number")]:
            with self.subTest(key):
                folder = hf_folder(self.dir / key, ["a b"], **{key: value})
                self.assertIn(f"{folder / 'config.json'}: {words}", self.refusal(folder))

    def test_a_token_outside_gpt2_s_byte_characters_is_refused_naming_vocab_json(self):
        folder = hf_folder(self.dir / "f", ["a b"], vocab_extra=("ab", "a b"))
        self.assertIn(f"{folder / 'vocab.json'}: token 'a b' (id 257) holds ' ' (U+0020)", self.refusal(folder))

    def test_a_pytorch_model_bin_key_that_is_not_a_string_is_named(self):
        folder = hf_folder(self.dir / "f", ["a b"])
        (folder / "model.safetensors").unlink()
        state = {1: torch.zeros(2)}
        (folder / "pytorch_model.bin").write_bytes(b"stands for a state_dict with the key 1")
        with mock.patch.object(hf_gpt2, "load_torch_file", return_value=state):
            message = self.refusal(folder)
        self.assertEqual(message, f"{folder / 'pytorch_model.bin'}: a state_dict key of type int: expected names "
                                  f"(strings)")

    def test_a_broken_model_safetensors_is_named(self):
        folder = hf_folder(self.dir / "f", ["a b"])
        data = bytearray((folder / "model.safetensors").read_bytes())
        (folder / "model.safetensors").write_bytes(bytes(data[:-4]))
        message = self.refusal(folder)
        self.assertTrue(message.startswith(f"{folder / 'model.safetensors'}: "), message)


# ----------------------------------------------------------------------------
# The command line: one line naming the file, never a traceback
# ----------------------------------------------------------------------------

class CommandLine(unittest.TestCase, OneLine):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.bin = self.dir / "layers.bin"
        self.bin.write_bytes(v1_header(2, 2, 1 << 24, 1, 1, 2, 2))
        self.deep = self.dir / "deep.safetensors"
        header = b'{"__metadata__":' + b"[" * 50_000 + b"]" * 50_000 + b"}"
        self.deep.write_bytes(struct.pack("<Q", len(header)) + header)

    def tearDown(self):
        self.tmp.cleanup()

    def test_every_entry_point_names_the_bad_file(self):
        folder = hf_folder(self.dir / "hf", ["a b"])
        (folder / "merges.txt").write_text("#version: 0.2\nx yz\n")
        model = self.dir / "model.safetensors"
        families.write_converted(model, hf_gpt2.convert_hf_gpt2(hf_folder(self.dir / "good", ["a b"])))
        runs = [
            (["--from", "llama2c-bin", str(self.bin), "--out", str(self.dir / "o.st")], [str(self.bin)]),
            (["--from", "hf-gpt2", str(folder), "--out", str(self.dir / "o.st")], [str(folder / "merges.txt")]),
            (["--check", str(model), "--against", "llama2c-bin", str(self.bin)], [str(self.bin)]),
            (["--check", str(self.bin)], [f"{self.bin}: this is a llama2.c model.bin", "--from llama2c-bin"]),
            (["--check", str(self.deep), "--against", "hf-gpt2", str(self.dir / "good")],
             [f"{self.deep}: not a tinyformer checkpoint (header nests arrays or objects deeper"]),
        ]
        for argv, words in runs:
            with self.subTest(argv[:2]):
                code, out, err = limited(EXPORT + argv, self.dir)
                self.assertOneLine(code, out, err, *words)

    def test_check_refuses_a_config_its_tensors_do_not_hold_before_building_modules(self):
        # before: a 792-byte file claiming 200,000 layers made --check build them (over 150 s, 2.2 GB)
        import numpy as np
        import safetensors_io
        cfg = {"format": "tinyformer/1", "arch": "decoder_only", "d_model": 8, "nhead": 1, "num_layers": 200000,
               "dim_feedforward": 8, "activation": "relu", "norm_first": True, "layer_norm_eps": 1e-5, "max_len": 8,
               "pos_encoding": "sinusoidal", "embed_scale": False, "vocab_size": 4, "attention": "causal",
               "final_norm": False}
        path = self.dir / "layers.safetensors"
        safetensors_io.write(str(path), {"embed.weight": np.zeros((4, 8), np.float32),
                                         "lm_head.weight": np.zeros((4, 8), np.float32)}, {"config": json.dumps(cfg)})
        with mock.patch.object(tinyformer_export.tm, "build_module", side_effect=AssertionError("modules built")):
            with self.assertRaises(ValueError) as caught:
                tinyformer_export.check(path)
        self.assertEqual(str(caught.exception), f"{path}: its config says num_layers = 200000 but it holds the "
                                                f"tensors of 0 (no transformer.layers.*)")
        cfg.update(num_layers=0, d_model=1 << 20)
        safetensors_io.write(str(path), {"embed.weight": np.zeros((4, 8), np.float32)}, {"config": json.dumps(cfg)})
        with mock.patch.object(tinyformer_export.tm, "build_module", side_effect=AssertionError("modules built")):
            with self.assertRaises(ValueError) as caught:
                tinyformer_export.check(path)
        self.assertIn("embed.weight has shape [4, 8] but its config says [vocab_size, d_model] = [4, 1048576]",
                      str(caught.exception))
        code, out, err = limited(EXPORT + ["--check", str(path)], self.dir)
        self.assertOneLine(code, out, err, f"{path}: embed.weight has shape [4, 8]")

    def test_memory_recursion_overflow_and_other_errors_are_one_line_naming_the_file(self):
        for error, words in [(MemoryError(), "ran out of memory"),
                             (RecursionError("maximum recursion depth exceeded"), "nests deeper"),
                             (OverflowError("cannot fit 'int' into an index-sized integer"), "holds a number too large"),
                             (RuntimeError("DefaultCPUAllocator: can't allocate memory:\n you tried"),
                              "could not be converted"),
                             (TypeError("unsupported operand"), "could not be converted: an error the converter "
                                                                "does not expect (a bug")]:
            with self.subTest(type(error).__name__):
                with mock.patch.object(tinyformer_export, "_convert_family", side_effect=error), \
                        mock.patch("sys.stderr") as stderr:
                    code = tinyformer_export.main(["--from", "nanogpt", "ckpt.pt", "--gelu", "exact",
                                                   "--out", str(self.dir / "o.st")])
                printed = "".join(c.args[0] for c in stderr.write.call_args_list)
                self.assertEqual(code, 1)
                self.assertEqual(printed.count("\n"), 1, printed)
                self.assertTrue(printed.startswith(f"tinyformer_export: error: ckpt.pt: {words}"), printed)
                self.assertIn(type(error).__name__, printed)


if __name__ == "__main__":
    unittest.main()
