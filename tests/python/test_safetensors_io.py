#!/usr/bin/python3
"""Tests of tools/python/safetensors_io.py's reader: it reads or refuses every header
of tests/safetensors_headers.json exactly as the table says, the same table
engine/io/safetensors.cpp is tested on (tests/test_safetensors.cpp), so the two
readers follow one rule (docs/FORMAT.md section 1, "The header"); and its
writer's Streamed tensors (made piece by piece as they are written) give the
bytes of the eager write. Standard library and numpy only (no torch):

    /usr/bin/python3 tests/python/test_safetensors_io.py      # from anywhere
"""

import json
import struct
import sys
import unittest
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools" / "python"
sys.path.insert(0, str(TOOLS))
import safetensors_io as st  # noqa: E402

TABLE = REPO / "tests" / "safetensors_headers.json"


def case_bytes(case):
    """The case's file: the header's length (u64 little-endian), its bytes, data_bytes zeros."""
    header = bytes.fromhex(case["header_hex"])
    return struct.pack("<Q", len(header)) + header + bytes(case["data_bytes"])


class SharedHeaderTable(unittest.TestCase):
    def test_every_case_is_read_or_refused_as_the_table_says(self):
        cases = json.loads(TABLE.read_text(encoding="utf-8"))
        self.assertGreaterEqual(len(cases), 15)
        self.assertEqual(len({c["name"] for c in cases}), len(cases), "case names are unique")
        counts = {True: 0, False: 0}
        for case in cases:
            with self.subTest(case["name"]):
                self.assertTrue(case["why"])
                buf = case_bytes(case)
                try:
                    st.parse_header(buf)
                    error = None
                except ValueError as e:          # any other exception type is a bug in the reader
                    error = str(e)
                if case["valid"]:
                    self.assertIsNone(error, case["why"])
                else:
                    self.assertIsNotNone(error, f"accepted, but: {case['why']}")
                counts[case["valid"]] += 1
        self.assertGreaterEqual(counts[True], 3)
        self.assertGreaterEqual(counts[False], 10)

    def test_a_valid_case_reads_back_its_metadata_and_tensor(self):
        # The reader does not merely accept: it returns what the header says.
        cases = {c["name"]: c for c in json.loads(TABLE.read_text(encoding="utf-8"))}
        entries, metadata, start = st.parse_header(case_bytes(cases["one tensor"]))
        self.assertEqual(entries, {"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})
        self.assertEqual(metadata, {})
        self.assertEqual(start, 8 + len(bytes.fromhex(cases["one tensor"]["header_hex"])))
        _, metadata, _ = st.parse_header(case_bytes(cases["escaped surrogate pair"]))
        self.assertEqual(metadata, {"a": "\U0001F600"})

    def test_refusals_name_the_rule(self):
        def error(header, data=b""):
            with self.assertRaises(ValueError) as caught:
                st.parse_header(struct.pack("<Q", len(header)) + header + data)
            return str(caught.exception)

        self.assertIn("byte order mark", error(b"\xef\xbb\xbf{}"))
        self.assertIn("NUL byte at offset 2", error(b"{}\x00 "))
        self.assertIn("only spaces may pad a header", error(b"{}\n"))
        self.assertIn("'a' twice", error(b'{"__metadata__":{"a":"b","a":"c"}}'))
        self.assertIn("'w' twice", error(b'{"w":{},"w":{}}'))
        self.assertIn("not valid UTF-8 (byte 0xFF at offset 22)", error(b'{"__metadata__":{"a":"\xff"}}'))
        self.assertIn("lone surrogate", error(b'{"__metadata__":{"a":"\\udc00"}}'))
        self.assertIn("too many elements", error(b'{"w":{"dtype":"U8","shape":[4294967296,4294967296,0],'
                                                 b'"data_offsets":[0,0]}}'))


class NestingTooDeep(unittest.TestCase):
    """JSON nested deeper than Python's recursive reader follows is a ValueError
    naming the rule (before: a RecursionError traceback out of the converters)."""

    def test_a_header_nested_100000_deep_is_refused_by_name(self):
        header = b'{"__metadata__":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        with self.assertRaises(ValueError) as caught:
            st.parse_header(struct.pack("<Q", len(header)) + header)
        self.assertIn("nests arrays or objects deeper", str(caught.exception))

    def test_a_metadata_entry_nested_100000_deep_is_refused_by_name(self):
        with self.assertRaises(ValueError) as caught:
            st.metadata_json({"config": "[" * 100_000 + "]" * 100_000}, "config")
        self.assertIn("'config'", str(caught.exception))
        self.assertIn("nests arrays or objects deeper", str(caught.exception))


class MetadataJson(unittest.TestCase):
    """A metadata entry's JSON (the config) by the header's rules, as the engine reads it."""

    def test_a_key_twice_in_the_config_is_refused_naming_it(self):
        with self.assertRaises(ValueError) as caught:
            st.metadata_json({"config": '{"activation": "relu", "activation": "gelu"}'}, "config")
        self.assertIn("'config'", str(caught.exception))
        self.assertIn("'activation' twice", str(caught.exception))

    def test_nan_and_a_lone_surrogate_are_refused(self):
        for text in ('{"layer_norm_eps": NaN}', '{"prompt_suffix": "\\ud800"}'):
            with self.assertRaises(ValueError):
                st.metadata_json({"vocab": text}, "vocab")

    def test_a_good_config_reads_as_json(self):
        self.assertEqual(st.metadata_json({"config": '{"d_model": 16, "nested": {"a": [1, 2]}}'}, "config"),
                         {"d_model": 16, "nested": {"a": [1, 2]}})


class StreamedTensors(unittest.TestCase):
    """A Streamed tensor is made piece by piece while the file is written, and
    the file is byte for byte the one written from the whole array."""

    def setUp(self):
        self.source = np.arange(6 * 10, dtype=np.float32).reshape(6, 10) * 0.5 - 7
        self.t = self.source.T                    # [10, 6], not contiguous: made row block by row block
        self.other = np.arange(5, dtype=np.float64)
        self.events = []

    def streamed(self, rows=3, dtype="F32", shape=None):
        def blocks():
            for start in range(0, self.t.shape[0], rows):
                self.events.append(("piece", start))
                yield self.t[start:start + rows]
        return st.Streamed(dtype, shape or self.t.shape, blocks, done=lambda: self.events.append(("done",)))

    def test_the_streamed_file_is_the_eager_one(self):
        eager = st.encode({"t": np.ascontiguousarray(self.t), "x": self.other}, {"k": "v"})
        for rows in (1, 3, 4, 10):
            with self.subTest(rows=rows):
                self.events.clear()
                self.assertEqual(st.encode({"t": self.streamed(rows), "x": self.other}, {"k": "v"}), eager)
                pieces = [e for e in self.events if e[0] == "piece"]
                self.assertEqual(len(pieces), -(-10 // rows))
                self.assertEqual(self.events[-1], ("done",), "done() runs after the last piece")
        tensors, metadata = st.decode(eager)
        self.assertTrue(np.array_equal(tensors["t"], self.t))

    def test_pieces_are_made_only_when_written(self):
        parts = st.encode_parts({"t": self.streamed()}, None)
        self.assertEqual(self.events, [], "nothing is made before the writer asks")
        header = [next(parts), next(parts)]
        self.assertEqual(self.events, [], "the header needs no piece")
        self.assertIn(b'"shape":[10,6]', header[1])
        next(parts)
        self.assertEqual(self.events, [("piece", 0)], "one piece at a time")
        list(parts)
        self.assertEqual(self.events[-1], ("done",))

    def test_pieces_that_do_not_make_the_declared_bytes_are_refused(self):
        with self.assertRaisesRegex(ValueError, r"tensor 't': its pieces hold 240 bytes, its shape \[10, 7\] 280"):
            st.encode({"t": self.streamed(shape=[10, 7])})
        with self.assertRaisesRegex(ValueError, r"tensor 't': a piece of dtype F32, declared F16"):
            st.encode({"t": self.streamed(dtype="F16")})
        with self.assertRaisesRegex(ValueError, "Streamed: dtype 'F33'"):
            st.Streamed("F33", [1], list)


class Views(unittest.TestCase):
    def test_views_are_the_bytes_themselves_and_decode_copies(self):
        buf = bytearray(st.encode({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(3, np.float64)}))
        whole = np.frombuffer(buf, dtype=np.uint8)
        views, _ = st.views(buf)
        copies, _ = st.decode(buf)
        for name in ("a", "b"):
            self.assertTrue(np.array_equal(views[name], copies[name]))
            self.assertTrue(np.shares_memory(views[name], whole), f"{name} is a view of the bytes")
            self.assertFalse(np.shares_memory(copies[name], whole), f"decode copies {name}")


if __name__ == "__main__":
    unittest.main()
