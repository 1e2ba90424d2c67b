"""Errors that name the way out, on the converter's side (needs torch: make parity):

- a file given to the wrong `--from FAMILY` is named as what it is, with the
  `--from` that reads it (tools/python/model_files.py), for every family's
  committed file in data/families/ given to every other family;
- export() has no silent embed_scale: stock modules without it are refused
  with what True and False mean; a family's own is kept, a contradiction refused;
- the Annotated Transformer converter takes <s> / </s> from the target
  vocabulary, and the README's Annotated one-liner writes a file that
  `tinyformer run` runs (the command is taken from README.md itself).

    /usr/bin/python3 tests/python/test_wrong_from.py
"""

import contextlib
import io
import math
import os
import shlex
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import torch
from torch import nn

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import tinyformer_export as te  # noqa: E402

FAMILIES = REPO / "data" / "families"
BINARY = os.environ.get("TINYFORMER_BIN", str(REPO / "build" / "tinyformer"))

# Each committed file, the flags its own family needs, and the families that read it.
FILES = {
    "nanogpt-char/ckpt.pt": ("nanogpt", ["--gelu", "exact"]),
    "mingpt-sort.pt": ("mingpt", ["--n-head", "4"]),
    "annotated-copy.pt": ("annotated", ["--n-head", "4"]),
    "gpt2-tiny": ("hf-gpt2", []),
    "llama2c-tiny/ckpt.pt": ("llama2c", []),
    "llama2c-tiny/model.bin": ("llama2c-bin", []),
}
READ_BY = {"mingpt-sort.pt": {"mingpt", "nanogpt"}}       # a bare GPT state_dict: both converters take it


def run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = te.main(argv)
    return rc, out.getvalue(), err.getvalue()


class WrongFrom(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="test-wrong-from-")
        self.dir = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def test_every_family_file_given_to_another_family_names_its_own(self):
        for name, (own, _) in FILES.items():
            for family, (_, flags) in {f: FILES[n] for n, (f, _) in FILES.items()}.items():
                if family in READ_BY.get(name, {own}):
                    continue
                with self.subTest(file=name, given_as=family):
                    out = self.dir / "out.safetensors"
                    rc, stdout, stderr = run_main(["--from", family, str(FAMILIES / name), *flags, "--out", str(out),
                                                   "--no-check"])
                    self.assertEqual(rc, 1, stdout + stderr)
                    self.assertEqual(stderr.count("\n"), 1, stderr)
                    self.assertIn(f"--from {family} {FAMILIES / name}: this is ", stderr)
                    self.assertIn(f"not what --from {family} reads; convert it with: /usr/bin/python3 "
                                  f"tools/python/tinyformer_export.py --from {own} {FAMILIES / name}", stderr)
                    self.assertFalse(out.exists())

    def test_a_file_of_the_named_family_keeps_the_converters_own_message(self):
        rc, _, stderr = run_main(["--from", "mingpt", str(FAMILIES / "mingpt-sort.pt"), "--n-head", "5",
                                  "--out", str(self.dir / "o.safetensors"), "--no-check"])
        self.assertEqual(rc, 1)
        self.assertNotIn("this is", stderr)
        self.assertIn("n_head", stderr)

    def test_files_no_converter_takes(self):
        png = self.dir / "attention.png"
        png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
        rc, _, stderr = run_main(["--from", "nanogpt", str(png), "--gelu", "exact", "--out",
                                  str(self.dir / "o.safetensors")])
        self.assertEqual(rc, 1)
        self.assertIn(f"--from nanogpt {png}: this is a PNG picture, not what --from nanogpt reads", stderr)
        rc, _, stderr = run_main(["--from", "hf-gpt2", str(FAMILIES / "gpt2-tiny" / "model.safetensors"), "--out",
                                  str(self.dir / "o.safetensors")])
        self.assertEqual(rc, 1)
        self.assertIn("this is a Hugging Face GPT-2 model.safetensors", stderr)
        self.assertIn(f"--from hf-gpt2 {FAMILIES / 'gpt2-tiny'} --out gpt2-tiny.safetensors", stderr)


class Stock(nn.Module):
    """Stock modules whose forward scales the embeddings (nothing in the modules says so)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(7, 8)
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=True)
        self.transformer = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.lm_head = nn.Linear(8, 7)

    def forward(self, ids):
        t = ids.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        return self.lm_head(self.transformer(self.embed(ids) * math.sqrt(8), mask=causal))


class EmbedScale(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="test-embed-scale-")
        self.dir = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def test_stock_modules_need_it_given(self):
        torch.manual_seed(0)
        model = Stock().eval()
        path = self.dir / "m.safetensors"
        with self.assertRaises(ValueError) as caught:
            te.export(model, path, max_len=8, pos_encoding="none")
        message = str(caught.exception)
        self.assertIn("export: embed_scale is not given and Stock does not record it: pass embed_scale=True", message)
        self.assertIn("embed_scale=False if it uses them as they are", message)
        self.assertNotIn("\n", message)
        self.assertFalse(path.exists())
        self.assertTrue(te.export(model, path, max_len=8, pos_encoding="none", embed_scale=True)["embed_scale"])
        self.assertLessEqual(te.check(path, model), 1.0)
        model.embed_scale = True                      # a model that records it needs no argument
        self.assertTrue(te.export(model, self.dir / "recorded.safetensors", max_len=8,
                                  pos_encoding="none")["embed_scale"])

    def test_a_family_knows_its_own_and_a_contradiction_is_refused(self):
        from families import gpt
        torch.manual_seed(0)
        model = gpt.GPT(gpt.GPTConfig(block_size=8, vocab_size=7, n_layer=1, n_head=2, n_embd=8, bias=True,
                                      gelu="exact", tie=True)).eval()
        self.assertFalse(te.export(model, self.dir / "gpt.safetensors")["embed_scale"])
        with self.assertRaises(ValueError) as caught:
            te.export(model, self.dir / "wrong.safetensors", embed_scale=True)
        self.assertIn("does not scale its embeddings", str(caught.exception))


class AnnotatedStart(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="test-annotated-start-")
        self.dir = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def test_bos_and_eos_from_the_target_vocabulary(self):
        from families import annotated
        vocab = ["<s>", "</s>", "<blank>", "<unk>"] + [str(i) for i in range(1, 8)]   # upstream's specials first
        converted = annotated.convert_annotated(str(FAMILIES / "annotated-copy.pt"), n_head=4, tgt_vocab=vocab,
                                                tokenizer="whitespace")
        self.assertEqual((converted.config["bos_id"], converted.config["eos_id"]), (0, 1))
        self.assertIn("bos_id 0: the target vocabulary's <s>", converted.notes)
        given = annotated.convert_annotated(str(FAMILIES / "annotated-copy.pt"), n_head=4, tgt_vocab=vocab,
                                            tokenizer="whitespace", bos_id=3)
        self.assertEqual(given.config["bos_id"], 3)        # a given id wins
        bare = annotated.convert_annotated(str(FAMILIES / "annotated-copy.pt"), n_head=4)
        self.assertNotIn("bos_id", bare.config)
        self.assertTrue(any(n.startswith("no bos_id: `tinyformer run` cannot start the decoder") for n in bare.notes))

    def test_the_readme_one_liner_writes_a_file_run_runs(self):
        lines = [line for line in (REPO / "README.md").read_text().splitlines()
                 if "tinyformer_export.py --from annotated" in line]
        self.assertEqual(len(lines), 1, lines)
        words = shlex.split(lines[0])
        # The README's placeholders: model.pt -> the committed copy model (4 heads), m.safetensors -> here.
        out = self.dir / "m.safetensors"
        words = [str(FAMILIES / "annotated-copy.pt") if w == "model.pt" else str(out) if w == "m.safetensors" else w
                 for w in words]
        words[words.index("--n-head") + 1] = "4"
        converted = subprocess.run(words, cwd=REPO, capture_output=True, text=True)
        self.assertEqual(converted.returncode, 0, converted.stdout + converted.stderr)
        run = subprocess.run([BINARY, "run", str(out), "--ids", "1,5,9,7,2,8,8,1,1,10", "--max-new-tokens", "9"],
                             capture_output=True, text=True, stdin=subprocess.DEVNULL)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(len(run.stdout.strip().split(",")), 9, run.stdout)


if __name__ == "__main__":
    unittest.main()
