"""The converters' reader (tools/python/torch_file.py) against torch itself:
every kind of file torch.save writes, in both formats and several pickle
protocols, reads as torch.load reads it (torch.load is the oracle here, in
the test only; the converters never call it).

Every converter entry point on a stranger's file that would run code: a
TorchScript archive whose __setstate__ writes a marker file, with 69,000 zero
bytes after it (issue 31's high finding: Python's zipfile then sees no zip,
torch's reader still does, and torch.load(weights_only=True) hands the file to
torch.jit.load, which runs it; test_the_payload_is_real shows that it does).
Each entry point must exit 1 with one line naming the file, and the payload's
marker file must never appear. The hostile files of the
reader itself (no torch needed) are in tests/python/test_torch_file.py.

    /usr/bin/python3 tests/python/test_torch_archive.py      (make parity)
"""

import json
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
EXPORT = REPO / "tools" / "python" / "tinyformer_export.py"
sys.path.insert(0, str(REPO / "tools" / "python"))
from families import gpt  # noqa: E402


# A TorchScript module whose __setstate__ (run by torch.jit.load, and so by torch.load, even with
# weights_only=True) creates MARKER and writes 16 bytes into it: torch.from_file(..., shared=True)
# maps the file for writing. Scripting needs the class in a source file.
TORCHSCRIPT_WRITER = """
import torch
from typing import Tuple


class Writer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.x = 1

    def forward(self, x):
        return x

    @torch.jit.export
    def __getstate__(self) -> Tuple[int, bool]:
        return (self.x, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[int, bool]) -> None:
        self.x = state[0]
        self.training = state[1]
        t = torch.from_file(MARKER, True, 16, dtype=torch.uint8)
        t.fill_(88)
        self.x = int(t.sum())
"""


def same(a, b):
    if torch.is_tensor(b):
        if not (torch.is_tensor(a) and a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()):
            return False
        b = b.detach()       # NaN equals NaN here: the same bits read back
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0))
    if isinstance(b, dict):
        return type(a) is type(b) and list(a) == list(b) and all(same(a[k], b[k]) for k in b)
    if isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)


class AsTorchLoadsThem(unittest.TestCase):
    def test_what_torch_save_writes_reads_as_torch_load_reads_it(self):
        base = torch.arange(40, dtype=torch.float32).view(5, 8)
        model = torch.nn.Linear(3, 2)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        model(torch.ones(1, 3)).sum().backward()
        optimizer.step()
        kinds = {
            "dtypes": {str(d): torch.arange(6).to(d) for d in (torch.float32, torch.float64, torch.float16,
                                                              torch.bfloat16, torch.int64, torch.int32, torch.int16,
                                                              torch.int8, torch.uint8, torch.bool)},
            "views": {"base": base, "rows": base[1:4], "cols": base[:, 2:7], "t": base.t(), "step": base[::2, ::3],
                      "channels_last": torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)},
            "shapes": {"scalar": torch.tensor(2.5), "empty": torch.empty(0, 3), "nan": torch.tensor([float("nan"),
                                                                                                       float("inf")])},
            "state_dict": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "nanogpt-like": {"model": model.state_dict(), "model_args": {"n_layer": 1, "dropout": 0.0},
                             "iter_num": 5, "best_val_loss": torch.tensor(1.25), "config": {"lr": 6e-4, "name": "x"}},
            "plain": {"big": 2 ** 100, "bytes": b"\x00\xff", "none": None, "nested": [(1, [2, {"a": 3}])], 7: "int key"},
        }
        folder = Path(tempfile.mkdtemp())
        try:
            for kind, obj in kinds.items():
                for legacy in (False, True):
                    for protocol in (2, 4):
                        with self.subTest(kind=kind, legacy=legacy, protocol=protocol):
                            path = folder / f"{kind}.pt"
                            torch.save(obj, str(path), pickle_protocol=protocol,
                                       _use_new_zipfile_serialization=not legacy)
                            self.assertTrue(same(gpt.load_torch_file(path), torch.load(str(path))))
        finally:
            shutil.rmtree(folder)


class EntryPoints(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        self.marker = self.dir / "MARKER"

    def tearDown(self):
        shutil.rmtree(self.dir)

    def hostile(self, name):
        """torch.jit.save of TORCHSCRIPT_WRITER, then 69,000 zero bytes."""
        source = self.dir / "ts_writer.py"
        source.write_text(TORCHSCRIPT_WRITER.replace("MARKER", repr(str(self.marker))))
        path = self.dir / name
        script = (f"import sys, torch; sys.path.insert(0, {str(self.dir)!r}); import ts_writer; "
                  f"torch.jit.save(torch.jit.script(ts_writer.Writer()), {str(path)!r})")
        subprocess.run([sys.executable, "-c", script], check=True, timeout=300)
        self.assertFalse(self.marker.exists())
        with open(path, "ab") as f:
            f.write(bytes(69_000))
        return path

    def test_the_payload_is_real(self):
        # torch.load(weights_only=True), in a process of its own, runs the archive's code
        path = self.hostile("ts.pt")
        self.assertFalse(zipfile.is_zipfile(path))
        subprocess.run([sys.executable, "-c", f"import torch; torch.load({str(path)!r}, weights_only=True)"],
                       capture_output=True, timeout=300)
        self.assertTrue(self.marker.exists())

    def test_no_entry_point_runs_it(self):
        ckpt = self.hostile("ckpt.pt")
        self.assertFalse(zipfile.is_zipfile(ckpt))
        hf = self.dir / "hf"
        hf.mkdir()
        shutil.copy(ckpt, hf / "pytorch_model.bin")
        (hf / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 1, "n_head": 1, "n_embd": 4,
                                                    "n_positions": 8, "vocab_size": 4}))
        model = REPO / "data" / "families" / "mingpt-sort.safetensors"
        vocab = self.dir / "vocab.json"
        vocab.write_text(json.dumps(["<pad>", "a", "b"]))
        runs = {
            "--from nanogpt": ["--from", "nanogpt", str(ckpt), "--gelu", "exact", "--out", "o.safetensors"],
            "--from mingpt": ["--from", "mingpt", str(ckpt), "--n-head", "2", "--out", "o.safetensors"],
            "--from llama2c": ["--from", "llama2c", str(ckpt), "--out", "o.safetensors"],
            "--from annotated": ["--from", "annotated", str(ckpt), "--n-head", "2", "--out", "o.safetensors"],
            "--from hf-gpt2": ["--from", "hf-gpt2", str(hf), "--out", "o.safetensors"],
            "--from-state-dict": ["--from-state-dict", str(ckpt), "--arch", "encoder_only", "--nhead", "2",
                                  "--activation", "relu", "--norm-first", "false", "--max-len", "8",
                                  "--vocab", str(vocab), "--out", "o.safetensors"],
            "--check --against": ["--check", str(model), "--against", "mingpt", str(ckpt), "--n-head", "2"],
        }
        for name, args in runs.items():
            with self.subTest(name):
                run = subprocess.run([sys.executable, str(EXPORT), *args], cwd=self.dir, capture_output=True,
                                     text=True, timeout=300)
                self.assertEqual(run.returncode, 1, run.stderr)
                self.assertEqual(run.stderr.count("\n"), 1, run.stderr)
                self.assertTrue(run.stderr.startswith("tinyformer_export: error: "), run.stderr)
                self.assertIn("ckpt.pt" if "hf" not in name else "pytorch_model.bin", run.stderr)
                self.assertIn("bytes after the zip's end record", run.stderr)
                self.assertFalse(self.marker.exists(), f"{name}: the file's code ran")
                self.assertFalse((self.dir / "o.safetensors").exists())

    def test_a_torchscript_archive_is_refused_by_its_members(self):
        path = self.dir / "ts.pt"
        torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), str(path))
        with self.assertRaisesRegex(ValueError, r"ts\.pt: refused as a checkpoint: a TorchScript archive"):
            gpt.load_torch_file(path)

    def test_big_endian_legacy_files_are_refused(self):
        path = self.dir / "be.pt"
        torch.save({"w": torch.ones(2)}, str(path), _use_new_zipfile_serialization=False)
        data = bytearray(path.read_bytes())
        at = data.find(b"\x88", data.find(b"little_endian"))   # the key's value, NEWTRUE (after its BINPUT)
        self.assertLess(at - data.find(b"little_endian"), 16)
        data[at] = 0x89                                          # NEWFALSE
        path.write_bytes(bytes(data))
        with self.assertRaisesRegex(ValueError, r"saved big-endian"):
            gpt.load_torch_file(path)


if __name__ == "__main__":
    unittest.main()
