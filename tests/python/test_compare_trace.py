#!/usr/bin/python3
"""tools/python/compare_trace.py on the names of the attention layouts
(run by `make test-tools`; standard library and numpy only, no PyTorch, no build).

An ALiBi model's trace holds `{stack}.{i}.self_attn.bias` [B,H,L,S] (docs/FORMAT.md
section 3): what is added to the scores, 0 at blocked cells. Like the scores and
weights it is compared at real queries and real keys only: a value at a padded
key or a padded query is not a divergence (tinyformer writes 0 there, a PyTorch
float mask holds the slope's number), a value at a real cell is, by name and
index.

    /usr/bin/python3 tests/python/test_compare_trace.py -v
"""

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools" / "python"
sys.path.insert(0, str(TOOLS))
import safetensors_io as st  # noqa: E402

PY = "/usr/bin/python3"
NAMES = ["embed.output", "layers.0.input", "layers.0.self_attn.scores", "layers.0.self_attn.mask",
         "layers.0.self_attn.bias", "layers.0.self_attn.weights", "logits"]


def alibi_trace(padding, heads=2, d=4, v=3):
    """(tensors, metadata) of a causal ALiBi single-stack trace with key padding
    (padding [B, T], True = padding), bias -slope_h |i - j| at allowed cells, 0 at
    blocked ones, as tinyformer writes it."""
    rng = np.random.default_rng(0)
    b, t = padding.shape
    i, j = np.arange(t)[:, None], np.arange(t)[None, :]
    allowed = (j <= i)[None] & ~padding[:, None, :]                          # [B, L, S]
    slopes = 2.0 ** (-8.0 * (np.arange(heads) + 1) / heads)
    bias = -slopes[None, :, None, None] * np.abs(i - j)[None, None]          # [1, H, L, S]
    bias = np.where(allowed[:, None], bias, 0.0).astype(np.float32)
    x = rng.standard_normal((b, t, d)).astype(np.float32)
    tensors = {"embed.output": x, "layers.0.input": x.copy(),
               "layers.0.self_attn.scores": rng.standard_normal((b, heads, t, t)).astype(np.float32),
               "layers.0.self_attn.mask": allowed.astype(np.uint8),
               "layers.0.self_attn.bias": bias,
               "layers.0.self_attn.weights": rng.random((b, heads, t, t)).astype(np.float32),
               "logits": rng.standard_normal((b, t, v)).astype(np.float32)}
    return tensors, {"names": json.dumps(NAMES)}


class AlibiBias(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="test-compare-trace-")
        self.dir = Path(self._tmp.name)
        # row 0 unpadded, row 1 left-padded by two: keys 0 and 1 of row 1 are padding
        self.padding = np.array([[False] * 5, [True, True, False, False, False]])

    def tearDown(self):
        self._tmp.cleanup()

    def compare(self, a_tensors, b_tensors):
        paths = []
        for name, tensors in (("a", a_tensors), ("b", b_tensors)):
            path = str(self.dir / f"{name}.safetensors")
            st.write(path, tensors, {"names": json.dumps(NAMES)})
            paths.append(path)
        run = subprocess.run([PY, str(TOOLS / "compare_trace.py"), *paths], capture_output=True, text=True)
        return run.returncode, run.stdout + run.stderr

    def test_bias_is_compared_at_real_cells_only(self):
        ours, _ = alibi_trace(self.padding)
        theirs, _ = alibi_trace(self.padding)
        # PyTorch's float mask: the slope's number at padded keys (row 1, keys 0, 1) and
        # at the padded queries' rows, where tinyformer writes 0
        slopes = 2.0 ** (-8.0 * (np.arange(2) + 1) / 2)
        i, j = np.arange(5)[:, None], np.arange(5)[None, :]
        full = (-slopes[:, None, None] * np.abs(i - j)[None]).astype(np.float32)      # [H, L, S]
        theirs["layers.0.self_attn.bias"][1, :, :, :2] = full[:, :, :2]
        theirs["layers.0.self_attn.bias"][1, :, :2, :] = full[:, :2, :]
        status, out = self.compare(ours, theirs)
        self.assertEqual(status, 0, out)
        self.assertIn("all 7 activations agree", out)
        # and a real cell still is compared
        theirs["layers.0.self_attn.bias"][1, 1, 4, 2] += 0.25            # query 4 sees key 2
        status, out = self.compare(ours, theirs)
        self.assertEqual(status, 1, out)
        self.assertEqual(out.strip().splitlines()[-1],
                         "first divergence: layers.0.self_attn.bias (max 2.5e-1 at [1,1,4,2])")


if __name__ == "__main__":
    unittest.main(verbosity=1)
