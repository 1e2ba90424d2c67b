"""tools/python/model_files.py: what a model file is, and the converter command
that takes it (the converter's wrong --from names it with this). Files built
here byte by byte, and the families' committed files in data/families/. No
torch needed (make test-tools); tests/python/test_wrong_from.py runs the
converter itself.

    /usr/bin/python3 tests/python/test_model_files.py
"""

import json
import os
import pickle
import struct
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import model_files  # noqa: E402
import safetensors_io  # noqa: E402

FAMILIES = REPO / "data" / "families"
CONVERT = "convert it with: /usr/bin/python3 tools/python/tinyformer_export.py --from "


def llama2c_v0(path, vocab, missing=0):
    """llama2.c's legacy model.bin: dim 8, hidden 16, 1 layer, 2 heads, 2 kv heads, seq_len 4; a
    negative vocab means an own classifier. The float count written out term by term (llama2.c's
    export.py order): norms 2x8, wq wo 2x64, wk wv 2x64, w1 w2 w3 3x128, embedding 5x8, final
    norm 8, RoPE tables 2x4x2, classifier 5x8."""
    floats = 16 + 128 + 128 + 384 + 40 + 8 + 16 + (40 if vocab < 0 else 0)
    Path(path).write_bytes(struct.pack("<7i", 8, 16, 1, 2, 2, vocab, 4) + bytes(4 * floats - missing))
    return str(path)


class Identify(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="test-model-files-")
        self.dir = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def kind(self, path):
        found = model_files.identify(path)
        self.assertIsNotNone(found, f"{path}: not recognised")
        return found

    def test_llama2c_legacy_bin_only_when_its_sizes_add_up(self):
        for vocab in (5, -5):
            found = self.kind(llama2c_v0(self.dir / f"v{vocab}.bin", vocab))
            self.assertEqual(found.families, ("llama2c-bin",))
            self.assertIn("legacy version 0", found.what)
            self.assertIn(CONVERT + "llama2c-bin ", found.way_out)
            self.assertIn("--tokenizer tokenizer.bin --out", found.way_out)
        # 4 bytes short, or the header's sizes made to claim more: not believed
        self.assertIsNone(model_files.identify(llama2c_v0(self.dir / "cut.bin", 5, missing=4)))
        big = self.dir / "big.bin"
        big.write_bytes(struct.pack("<7i", 1 << 24, 1 << 24, 1 << 24, 2, 2, 5, 4) + bytes(64))
        self.assertIsNone(model_files.identify(big))

    def test_llama2c_versioned_bins_and_the_tokenizer_beside_them(self):
        (self.dir / "tokenizer.bin").write_bytes(b"pieces")
        v1 = self.dir / "model.bin"
        v1.write_bytes(b"24ka" + struct.pack("<i", 1) + bytes(400))
        found = self.kind(v1)
        self.assertEqual(found.families, ("llama2c-bin",))
        self.assertIn(f"--tokenizer {self.dir / 'tokenizer.bin'} --out model.safetensors", found.way_out)
        v2 = self.dir / "q8.bin"
        v2.write_bytes(b"24ka" + struct.pack("<i", 2) + bytes(400))
        found = self.kind(v2)
        self.assertEqual(found.families, ("llama2c-bin",))
        self.assertIn("version 2, int8 Q8_0", found.what)
        self.assertIn("--from llama2c-bin", found.way_out)

    def test_hugging_face_folder_and_bare_model_safetensors(self):
        folder = self.dir / "gpt2-small"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_embd": 8}))
        found = self.kind(folder)
        self.assertEqual(found.families, ("hf-gpt2",))
        self.assertIn(CONVERT + f"hf-gpt2 {folder} --out gpt2-small.safetensors", found.way_out)
        weights = folder / "model.safetensors"
        weights.write_bytes(safetensors_io.encode({"h.0.attn.c_attn.weight": np.zeros((2, 6), np.float32)}))
        found = self.kind(weights)
        self.assertEqual(found.families, ())         # --from hf-gpt2 takes its folder, not the file
        self.assertIn(f"--from hf-gpt2 {folder} --out gpt2-small.safetensors", found.way_out)
        other = self.dir / "llama"
        other.mkdir()
        (other / "config.json").write_text(json.dumps({"model_type": "llama"}))
        found = self.kind(other)
        self.assertEqual(found.families, ())
        self.assertIn("model_type 'llama'", found.what)

    def test_meta_pkl_png_empty_and_a_tinyformer_checkpoint(self):
        meta = self.dir / "meta.pkl"
        meta.write_bytes(pickle.dumps({"vocab_size": 2, "itos": {0: "a", 1: "b"}, "stoi": {"a": 0, "b": 1}}))
        self.assertIn("nanoGPT's meta.pkl", self.kind(meta).what)
        png = self.dir / "a.png"
        png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
        self.assertEqual(self.kind(png).what, "a PNG picture")
        empty = self.dir / "empty.pt"
        empty.write_bytes(b"")
        self.assertIn("empty", self.kind(empty).what)
        self.assertIn("tinyformer checkpoint already", self.kind(REPO / "data" / "models" / "reverse.safetensors").what)

    def test_llama2c_tokenizer_bin_only_when_its_pieces_end_with_the_file(self):
        pieces = b"".join(struct.pack("<fi", 0.0, len(p)) + p for p in (b"<unk>", b"<s>", b"</s>", b"ab"))
        good = self.dir / "tokenizer.bin"
        good.write_bytes(struct.pack("<i", 5) + pieces)
        found = self.kind(good)
        self.assertIn("llama2.c tokenizer.bin", found.what)
        self.assertIn(f"--tokenizer {good} --out", found.way_out)
        cut = self.dir / "cut.bin"
        cut.write_bytes(struct.pack("<i", 5) + pieces[:-1])          # the last piece runs past the end
        self.assertIsNone(model_files.identify(cut))
        longer = self.dir / "long.bin"
        longer.write_bytes(struct.pack("<i", 4) + pieces)            # "<unk>" is longer than max_token_length
        self.assertIsNone(model_files.identify(longer))

    def test_the_families_committed_files(self):
        cases = {"llama2c-tiny/ckpt.pt": ("llama2c",), "llama2c-tiny/model.bin": ("llama2c-bin",),
                 "nanogpt-char/ckpt.pt": ("nanogpt",), "mingpt-sort.pt": ("mingpt", "nanogpt"),
                 "annotated-copy.pt": ("annotated",), "gpt2-tiny": ("hf-gpt2",), "gpt2-tiny/model.safetensors": (),
                 "nanogpt-char/meta.pkl": (), "llama2c-tiny/tokenizer.bin": ()}
        for name, families in cases.items():
            with self.subTest(name):
                self.assertEqual(self.kind(FAMILIES / name).families, families)

    def test_a_name_the_shell_would_split_is_quoted(self):
        found = self.kind(llama2c_v0(self.dir / "my model's.bin", 5))
        self.assertIn("'\"'\"'", found.way_out)       # shlex.quote's spelling of a quote inside quotes
        self.assertIn("--out 'my model'\"'\"'s.safetensors'", found.way_out)


if __name__ == "__main__":
    unittest.main()
