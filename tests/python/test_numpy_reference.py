#!/usr/bin/python3
"""tools/python/numpy_reference.py, the one-page float64 model, against numbers
it did not compute (run by `make test-tools`; numpy only, no PyTorch):

- every committed PyTorch reference case (data/reference/*: PyTorch's float32
  outputs, written by make_reference.py and make_rotary_reference.py), which
  include rotary positions (both pair layouts), grouped-query and multi-query
  attention, ALiBi, RMSNorm and SwiGLU;
- the C++ engine (`build/tinyformer forward --attention`, or $TINYFORMER_BIN) on
  committed models that use them: data/models/reverse-rotary and reverse-alibi,
  and data/families/llama2c-tiny (RMSNorm, SwiGLU, rotary, 4 query heads reading
  2 K/V heads, separate q/k/v, tied head, no biases). These cases are skipped
  when the program is not built (`make`; CI builds it before `make test-tools`).

Both hold every output (logits and each attention's per-head weights) to
docs/FORMAT.md's tolerance |a - b| <= 1e-4 + 1e-4 |b| at every query that is not
padding (b = PyTorch's or the engine's number).

    /usr/bin/python3 tests/python/test_numpy_reference.py -v
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import numpy_reference as nr  # noqa: E402
import safetensors_io as st  # noqa: E402

ATOL = RTOL = 1e-4
REFERENCE = REPO / "data" / "reference"
ENGINE_MODELS = [REPO / "data" / "models" / "reverse-rotary.safetensors",
                 REPO / "data" / "models" / "reverse-alibi.safetensors",
                 REPO / "data" / "families" / "llama2c-tiny" / "llama2c-tiny.safetensors"]


def worst_ratio(test, ours, theirs, qpads):
    """max |a - b| / (1e-4 + 1e-4 |b|) over every output `theirs` holds, at
    non-padded queries; each output must exist on both sides with one shape."""
    test.assertEqual(sorted(ours), sorted(theirs))
    worst = 0.0
    for name, b in theirs.items():
        a, b = ours[name], b.astype(np.float64)
        test.assertEqual(a.shape, b.shape, name)
        keep = ~qpads[name]                                   # [B, L]
        if a.ndim == 4:                                       # attention [B, H, L, S] -> [B, L, H, S]
            a, b = a.transpose(0, 2, 1, 3), b.transpose(0, 2, 1, 3)
        ratio = np.abs(a[keep] - b[keep]) / (ATOL + RTOL * np.abs(b[keep]))
        worst = max(worst, float(ratio.max()))
    return worst


def read_model(path):
    tensors, metadata = st.read(str(path))
    return json.loads(metadata["config"]), tensors


class AgainstPyTorch(unittest.TestCase):
    def cases(self):
        return sorted(p.name[:-len(".model.safetensors")] for p in REFERENCE.glob("*.model.safetensors"))

    def test_the_cases_hold_what_the_page_must_cover(self):
        seen = set()
        for case in self.cases():
            cfg, _ = read_model(REFERENCE / f"{case}.model.safetensors")
            seen.add(cfg.get("pos_encoding"))
            seen.add(cfg.get("norm"))
            seen.add(cfg["activation"])
            seen.add(cfg.get("rope_pairs"))
            if cfg.get("n_kv_heads", cfg["nhead"]) < cfg["nhead"]:
                seen.add("grouped-query")
        for feature in ("rotary", "alibi", "rms_norm", "swiglu", "grouped-query", "adjacent", "half"):
            self.assertIn(feature, seen)

    def test_every_committed_case_agrees(self):
        for case in self.cases():
            with self.subTest(case=case):
                cfg, w = read_model(REFERENCE / f"{case}.model.safetensors")
                inputs, _ = st.read(str(REFERENCE / f"{case}.inputs.safetensors"))
                expected, _ = st.read(str(REFERENCE / f"{case}.expected.safetensors"))
                ours, qpads = nr.spec_forward(cfg, w, inputs)
                self.assertLessEqual(worst_ratio(self, ours, expected, qpads), 1.0)


def engine():
    binary = os.environ.get("TINYFORMER_BIN") or str(REPO / "build" / "tinyformer")
    return binary if os.path.isfile(binary) else None


@unittest.skipIf(engine() is None, "build/tinyformer is not built (make), and TINYFORMER_BIN is not set")
class Refusals(unittest.TestCase):
    """What the page does not compute it refuses by name, as the engine's config check does."""

    def test_rotary_and_alibi_in_an_encoder_decoder_are_refused(self):
        for scheme in ("rotary", "alibi"):
            with self.subTest(scheme=scheme), self.assertRaisesRegex(ValueError, f'pos_encoding "{scheme}"'):
                nr.spec_forward({"arch": "encoder_decoder", "pos_encoding": scheme}, {}, {})


class AgainstTheEngine(unittest.TestCase):
    def inputs(self, cfg):
        """Three rows of ids: one full, one with its last 4 positions padding, one
        with 7; ids drawn from the vocabulary without the special ones."""
        rng = np.random.default_rng(7)
        b, t = 3, min(12, cfg["max_len"])
        ids = rng.integers(3, cfg["vocab_size"], size=(b, t)).astype(np.int64)
        pad = np.zeros((b, t), bool)
        pad[1, t - 4:], pad[2, t - 7:] = True, True
        ids[pad] = cfg.get("pad_id", 0)          # any id: a padded key is never read
        return {"ids": ids, "key_padding_mask": pad}

    def test_committed_models_with_rotary_alibi_gqa_rmsnorm_swiglu(self):
        covered = set()
        with tempfile.TemporaryDirectory() as tmp:
            for model in ENGINE_MODELS:
                with self.subTest(model=model.name):
                    cfg, w = read_model(model)
                    covered |= {cfg.get("pos_encoding"), cfg.get("norm"), cfg["activation"]}
                    if cfg.get("n_kv_heads", cfg["nhead"]) < cfg["nhead"]:
                        covered.add("grouped-query")
                    inputs = self.inputs(cfg)
                    in_path, out_path = Path(tmp) / "in.safetensors", Path(tmp) / "out.safetensors"
                    st.write(str(in_path), inputs)
                    run = subprocess.run([engine(), "forward", str(model), "--inputs", str(in_path), "--output",
                                          str(out_path), "--attention"], capture_output=True, text=True,
                                         env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
                    self.assertEqual(run.returncode, 0, run.stderr)
                    theirs, _ = st.read(str(out_path))
                    ours, qpads = nr.spec_forward(cfg, w, inputs)
                    self.assertLessEqual(worst_ratio(self, ours, theirs, qpads), 1.0)
        self.assertTrue({"rotary", "alibi", "rms_norm", "swiglu", "grouped-query"} <= covered, covered)


if __name__ == "__main__":
    unittest.main(verbosity=2)
