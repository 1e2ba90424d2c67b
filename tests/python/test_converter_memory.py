#!/usr/bin/python3
"""The converters stream (issue 35, part 4; docs/PERFORMANCE.md, "Converting"):

- the reference module check() compares with is built only when it is asked
  for: a conversion with --no-check never builds it (no second copy of the model);
- the input file is mapped: the converted tensors are views of it, not copies;
- each output tensor is made (contiguous, in the storage dtype) block by block
  as it is written, and the file is byte for byte the one written from whole
  contiguous copies;
- the pages a tensor was read from in a mapped checkpoint leave the process's
  resident memory once it is written, and once the reference has copied it.

Memory is observed in the test's own terms (the resident kB of the file's
mapping, /proc/self/smaps), never by timing. Needs torch (make parity):

    /usr/bin/python3 tests/python/test_converter_memory.py
"""

import contextlib
import io
import os
import sys
import unittest
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
sys.path.insert(0, str(REPO / "tests" / "python"))
import safetensors_io  # noqa: E402
import tinyformer_export as te  # noqa: E402
import tinyformer_writer  # noqa: E402
import torch_file  # noqa: E402
from families import Converted, gpt, hf_gpt2, llama, write_converted  # noqa: E402
from test_torch_file import Case, resident_kb  # noqa: E402  (Case: a test in a temporary folder)

FAMILIES = REPO / "data" / "families"
LLAMA = FAMILIES / "llama2c-tiny"
TOKENIZER = str(LLAMA / "tokenizer.bin")
NANOGPT, META = str(FAMILIES / "nanogpt-char" / "ckpt.pt"), str(FAMILIES / "nanogpt-char" / "meta.pkl")
# (family, the module whose _reference builds its reference, --from arguments, the converter call)
CONVERSIONS = [
    ("nanogpt", gpt, [NANOGPT, "--meta", META, "--gelu", "exact"],
     lambda: gpt.convert_nanogpt(NANOGPT, META, gelu="exact")),
    ("mingpt", gpt, [str(FAMILIES / "mingpt-sort.pt"), "--n-head", "3"],
     lambda: gpt.convert_mingpt(str(FAMILIES / "mingpt-sort.pt"), n_head=3)),
    ("hf-gpt2", hf_gpt2, [str(FAMILIES / "gpt2-tiny")], lambda: hf_gpt2.convert_hf_gpt2(str(FAMILIES / "gpt2-tiny"))),
    ("llama2c", llama, [str(LLAMA / "ckpt.pt"), "--tokenizer", TOKENIZER],
     lambda: llama.convert_llama2c_checkpoint(str(LLAMA / "ckpt.pt"), tokenizer=TOKENIZER)),
    ("llama2c-bin", llama, [str(LLAMA / "model.bin"), "--tokenizer", TOKENIZER],
     lambda: llama.convert_llama2c_bin(str(LLAMA / "model.bin"), tokenizer=TOKENIZER)),
]


class Counted:
    """Wraps a family's _reference, counting the references it builds."""

    def __init__(self, module):
        self.module, self.calls = module, 0
        self.original = module._reference

    def __enter__(self):
        def counted(*args, **kwargs):
            self.calls += 1
            return self.original(*args, **kwargs)
        self.module._reference = counted
        return self

    def __exit__(self, *exc):
        self.module._reference = self.original


class TheReferenceIsBuiltOnlyForTheCheck(Case):
    def test_no_check_builds_no_reference(self):
        for family, module, args, _ in CONVERSIONS:
            with self.subTest(family), Counted(module) as counted:
                out = self.p(f"{family}.safetensors")
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    rc = te.main(["--from", family, *args, "--out", out, "--no-check"])
                self.assertEqual(rc, 0)
                self.assertTrue(os.path.getsize(out) > 0)
                self.assertEqual(counted.calls, 0, f"--from {family} --no-check built the reference")

    def test_reading_the_reference_builds_it_once(self):
        for family, module, _, convert in CONVERSIONS:
            with self.subTest(family), Counted(module) as counted:
                converted = convert()
                write_converted(self.p(f"{family}.safetensors"), converted)
                self.assertFalse(converted.reference_built)
                self.assertEqual(counted.calls, 0, "converting and writing build no reference")
                reference = converted.reference
                self.assertIsInstance(reference, torch.nn.Module)
                self.assertIs(converted.reference, reference)
                self.assertEqual(counted.calls, 1)
                self.assertTrue(converted.reference_built)

    def test_a_reference_given_is_kept_as_given(self):
        module = torch.nn.Linear(2, 2)
        converted = Converted({}, {}, reference=module)
        self.assertTrue(converted.reference_built)
        self.assertIs(converted.reference, module)
        converted.reference = None
        self.assertIsNone(converted.reference)


class TensorsAreMadeWhenWritten(Case):
    def test_block_by_block_is_byte_for_byte_the_eager_file(self):
        converted = hf_gpt2.convert_hf_gpt2(str(FAMILIES / "gpt2-tiny"))
        views = [name for name, t in converted.tensors.items() if not t.is_contiguous()]
        self.assertGreater(len(views), 4, "the Conv1D weights stay transposed views until written")
        copies = Converted(converted.config, {k: v.contiguous().clone() for k, v in converted.tensors.items()},
                           converted.metadata)
        saved = tinyformer_writer.BLOCK_BYTES
        for dtype in (None, "F16", "BF16"):
            with self.subTest(dtype=dtype):
                tinyformer_writer.BLOCK_BYTES = 100          # rows of 64 or 256 floats: one row per block
                try:
                    write_converted(self.p("blocks.safetensors"), converted, dtype=dtype)
                finally:
                    tinyformer_writer.BLOCK_BYTES = saved
                write_converted(self.p("eager.safetensors"), copies, dtype=dtype)
                with open(self.p("blocks.safetensors"), "rb") as a, open(self.p("eager.safetensors"), "rb") as b:
                    self.assertEqual(a.read(), b.read())
        tensors, _ = safetensors_io.read(self.p("blocks.safetensors"))
        for name in views:
            want = converted.tensors[name].to(torch.bfloat16).float().numpy()
            self.assertTrue((tensors[name] == want).all(), name)


class TheInputIsMapped(Case):
    def test_every_reader_gives_views_of_the_mapped_file(self):
        for what, converted in [("hf-gpt2 model.safetensors", hf_gpt2.convert_hf_gpt2(str(FAMILIES / "gpt2-tiny"))),
                                ("llama2c model.bin", llama.convert_llama2c_bin(str(LLAMA / "model.bin"))),
                                ("llama2c ckpt.pt", llama.convert_llama2c_checkpoint(str(LLAMA / "ckpt.pt"))),
                                ("nanoGPT ckpt.pt", CONVERSIONS[0][3]())]:
            with self.subTest(what):
                mapped = [name for name, t in converted.tensors.items() if torch_file.mapping_of(t) is not None]
                self.assertEqual(sorted(mapped), sorted(converted.tensors), "tensors copied out of the file")


class MappedPagesAreGivenBack(Case):
    def test_writing_and_building_the_reference_leave_the_file_out_of_resident_memory(self):
        if not os.path.exists("/proc/self/smaps"):
            self.skipTest("no /proc/self/smaps")
        torch.manual_seed(0)
        folder = self.p("gpt2")
        config = hf_gpt2.GPT2Config(vocab_size=8000, n_positions=64, n_embd=128, n_layer=2, n_head=4,
                                    mask_buffers=False)
        model = hf_gpt2.GPT2LMHead(config)
        hf_gpt2.save_folder(model, folder, weights="bin")
        size_kb = os.path.getsize(os.path.join(folder, "pytorch_model.bin")) // 1024
        converted = hf_gpt2.convert_hf_gpt2(folder)
        wte = converted.tensors["embed.weight"]
        self.assertIsNotNone(torch_file.mapping_of(wte), "the tensors are views of the mapped file")
        address = wte.data_ptr()
        for t in converted.tensors.values():
            float(t.sum())                                       # every page read: resident
        self.assertGreater(resident_kb(address), size_kb * 3 // 4)
        write_converted(self.p("out.safetensors"), converted)
        self.assertLess(resident_kb(address), size_kb // 8, "the writer gives each written tensor's pages back")
        reference = converted.reference
        self.assertLess(resident_kb(address), size_kb // 8, "building the reference gives the pages back too")
        self.assertTrue(torch.equal(reference.transformer.wte.weight, model.transformer.wte.weight))
        self.assertTrue(torch.equal(reference.transformer.h[1].mlp.c_fc.weight, model.transformer.h[1].mlp.c_fc.weight))


if __name__ == "__main__":
    unittest.main()
