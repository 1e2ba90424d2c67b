"""tools/python/position_schemes.py against hand-computed values.

Run from the repository root:  /usr/bin/python3 -m unittest tests/python/test_position_schemes.py
"""

import math
import sys
import unittest
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "python"))
import position_schemes as ps  # noqa: E402


class Sinusoidal(unittest.TestCase):
    def test_hand_values(self):
        # D = 4: columns (sin, cos) of pos / 10000^0 = pos and of pos / 10000^(2/4) = pos / 100.
        table = ps.sinusoidal_table(3, 4)
        self.assertEqual(table.dtype, torch.float32)
        self.assertEqual(table[0].tolist(), [0.0, 1.0, 0.0, 1.0])             # sin 0, cos 0, sin 0, cos 0
        expected = [math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)]  # pos 2
        for got, want in zip(table[2].tolist(), expected):
            self.assertAlmostEqual(got, want, places=6)

    def test_odd_width_refused(self):
        with self.assertRaisesRegex(ValueError, "d_model must be even, got 3"):
            ps.sinusoidal_table(2, 3)


class Rotary(unittest.TestCase):
    def test_one_pair(self):
        # Dh = 2: one pair, angle = pos * theta^0 = pos. (1, 0) at pos 1 -> (cos 1, sin 1).
        x = torch.tensor([[[[1.0, 0.0]]]])  # [B=1, H=1, T=1, Dh=2]
        for pairs in ps.ROPE_PAIRS:        # with Dh = 2 both pairings are the pair (0, 1)
            out = ps.apply_rotary(x, torch.tensor([1]), 10000.0, pairs)
            self.assertAlmostEqual(out[0, 0, 0, 0].item(), math.cos(1.0), places=6)
            self.assertAlmostEqual(out[0, 0, 0, 1].item(), math.sin(1.0), places=6)
        # (0, 1) at pos 2 -> (-sin 2, cos 2); at pos 0 nothing moves.
        out = ps.apply_rotary(torch.tensor([[0.0, 1.0], [3.0, 4.0]]), torch.tensor([2, 0]), 10000.0)
        self.assertAlmostEqual(out[0, 0].item(), -math.sin(2.0), places=6)
        self.assertAlmostEqual(out[0, 1].item(), math.cos(2.0), places=6)
        self.assertEqual(out[1].tolist(), [3.0, 4.0])

    def test_angles(self):
        # Dh = 4, theta 100: frequencies 100^0 = 1 and 100^(-2/4) = 0.1; pos 3 -> angles 3, 0.3.
        angles = ps.rope_angles(torch.tensor([3]), 4, 100.0)
        self.assertEqual(angles.dtype, torch.float32)
        self.assertAlmostEqual(angles[0, 0].item(), 3.0, places=6)
        self.assertAlmostEqual(angles[0, 1].item(), 0.3, places=6)

    def test_adjacent_and_half_pairings(self):
        # Dh = 4, theta 100, pos 3: angles a0 = 3 (pair 0), a1 = 0.3 (pair 1).
        x = torch.tensor([1.0, 2.0, 3.0, 4.0])[None]
        c0, s0, c1, s1 = math.cos(3), math.sin(3), math.cos(0.3), math.sin(0.3)
        # adjacent: pairs (x0, x1) by a0, (x2, x3) by a1
        adjacent = [1 * c0 - 2 * s0, 1 * s0 + 2 * c0, 3 * c1 - 4 * s1, 3 * s1 + 4 * c1]
        # half: pairs (x0, x2) by a0, (x1, x3) by a1; out = [rot a, rot a', rot b, rot b']
        half = [1 * c0 - 3 * s0, 2 * c1 - 4 * s1, 1 * s0 + 3 * c0, 2 * s1 + 4 * c1]
        for pairs, want in (("adjacent", adjacent), ("half", half)):
            out = ps.apply_rotary(x, torch.tensor([3]), 100.0, pairs)[0].tolist()
            for got, w in zip(out, want):
                self.assertAlmostEqual(got, w, places=5, msg=pairs)

    def test_scores_depend_on_distance_only(self):
        # q at pos m, k at pos n: q'.k' depends on m - n only (the point of rotary).
        torch.manual_seed(0)
        q, k = torch.randn(1, 8), torch.randn(1, 8)
        for pairs in ps.ROPE_PAIRS:
            def score(m, n):
                return (ps.apply_rotary(q, torch.tensor([m]), 10000.0, pairs)
                        * ps.apply_rotary(k, torch.tensor([n]), 10000.0, pairs)).sum().item()
            self.assertAlmostEqual(score(5, 2), score(13, 10), places=4)

    def test_refusals(self):
        with self.assertRaisesRegex(ValueError, "head_dim must be even"):
            ps.rope_angles(torch.tensor([0]), 3, 10000.0)
        with self.assertRaisesRegex(ValueError, "theta must be > 0"):
            ps.rope_angles(torch.tensor([0]), 2, 0.0)
        with self.assertRaisesRegex(ValueError, "pairs must be one of"):
            ps.apply_rotary(torch.zeros(1, 2), torch.tensor([0]), 10000.0, "middle")


class Alibi(unittest.TestCase):
    def test_slopes_power_of_two(self):
        # H = 8: 2^(-8(h+1)/8) = 2^-(h+1): 1/2, 1/4, ..., 1/256.
        self.assertEqual(ps.alibi_slopes(8), [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625])
        # H = 4: 2^(-2(h+1)): 1/4, 1/16, 1/64, 1/256.  H = 1: 2^-8.
        self.assertEqual(ps.alibi_slopes(4), [0.25, 0.0625, 0.015625, 0.00390625])
        self.assertEqual(ps.alibi_slopes(1), [0.00390625])

    def test_slopes_not_power_of_two(self):
        # H = 6: n = 4 -> 1/4, 1/16, 1/64, 1/256; then H - n = 2 of the 2n = 8 slopes
        # (1/2, 1/4, 1/8, ...) at even indices 0, 2: 1/2, 1/8.
        self.assertEqual(ps.alibi_slopes(6), [0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125])
        # H = 3: n = 2 -> 2^-4, 2^-8; then 1 of the 4 slopes (2^-2, 2^-4, ...) at index 0: 2^-2.
        self.assertEqual(ps.alibi_slopes(3), [0.0625, 0.00390625, 0.25])

    def test_bias(self):
        # H = 2 (slopes 1/16, 1/256), positions 0..2: bias = -slope * |i - j|.
        bias = ps.alibi_bias(2, torch.arange(3), torch.arange(3))
        self.assertEqual(tuple(bias.shape), (2, 3, 3))
        self.assertEqual(bias[0].tolist(), [[0.0, -0.0625, -0.125], [-0.0625, 0.0, -0.0625], [-0.125, -0.0625, 0.0]])
        self.assertEqual(bias[1, 2, 0].item(), -2 / 256)
        # a query at position 5 against keys 3, 5: distances 2, 0
        self.assertEqual(ps.alibi_bias(2, torch.tensor([5]), torch.tensor([3, 5]))[0].tolist(), [[-0.125, 0.0]])

    def test_refusals(self):
        for bad in (0, -1, 2.0):
            with self.assertRaisesRegex(ValueError, "n_heads must be a positive int"):
                ps.alibi_slopes(bad)



class RelativeBias(unittest.TestCase):
    def test_buckets_by_hand(self):
        # Causal, 8 buckets, max_distance 16: n = 8, exact = 4; r = key - query.
        r = torch.tensor([0, -3, 2, -4, -7, -8, -15, -16, -1000])
        self.assertEqual(ps.relative_position_bucket(r, False, 8, 16).tolist(), [0, 3, 0, 4, 5, 6, 7, 7, 7])
        # Bidirectional, 8 buckets, max_distance 8: n = 4 per sign, exact = 2; r > 0 adds 4.
        r = torch.tensor([0, -1, 1, -3, -4, 5, -9])
        self.assertEqual(ps.relative_position_bucket(r, True, 8, 8).tolist(), [0, 1, 5, 2, 3, 7, 3])

    def test_the_float64_page_agrees(self):
        # numpy_reference.relative_bucket (float64) and this float32 one, on T5's and small settings.
        import numpy_reference as nr
        r = torch.arange(-400, 401)
        for buckets, max_distance in ((32, 128), (8, 16), (8, 8), (12, 100), (5, 9), (64, 256)):
            for bidirectional in (False, True):
                ours = ps.relative_position_bucket(r, bidirectional, buckets, max_distance)
                page = nr.relative_bucket(r.numpy(), bidirectional, buckets, max_distance)
                self.assertEqual(ours.tolist(), page.tolist(), (buckets, max_distance, bidirectional))

    def test_bias_and_window(self):
        table = torch.arange(8.0).reshape(4, 2)              # bucket k, head h: 2k + h
        bias = ps.relative_bias(table, torch.arange(3), torch.arange(3), False, 8)
        self.assertEqual(bias.shape, (2, 3, 3))
        self.assertEqual(bias[1, 2].tolist(), [5.0, 3.0, 1.0])    # distances 2, 1, 0 -> buckets 2, 1, 0
        allowed = ps.sliding_window_allowed(2, torch.arange(4), torch.arange(4))
        self.assertEqual(allowed.int().tolist(), [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]])

    def test_refusals(self):
        with self.assertRaisesRegex(ValueError, "need an exact bucket"):
            ps.relative_position_bucket(torch.tensor([0]), True, 2, 8)

if __name__ == "__main__":
    unittest.main()
