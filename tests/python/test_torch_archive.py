"""families.gpt.load_torch_file on hostile torch.save archives: each file here
is written opcode by opcode (what a stranger's ckpt.pt could hold), and each
must be refused with a ValueError, never built, never grown past the bytes of
the file, never hang.

    /usr/bin/python3 tests/python/test_torch_archive.py
"""

import os
import pickle
import struct
import sys
import tempfile
import unittest
import zipfile
from collections import OrderedDict
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
from families import gpt  # noqa: E402


# --- a tiny pickle writer (protocol 2 opcodes + STACK_GLOBAL) -----------------
def s(text):                      # SHORT_BINUNICODE
    b = text.encode()
    return b"\x8c" + bytes([len(b)]) + b


def g(module, name):              # STACK_GLOBAL
    return s(module) + s(name) + b"\x93"


def i(n):                         # BININT
    return b"J" + struct.pack("<i", n)


def ints(values):                 # MARK ... TUPLE
    return b"(" + b"".join(i(v) for v in values) + b"t"


def storage(key, kind="FloatStorage"):   # ("storage", torch.FloatStorage, key, "cpu", 1) BINPERSID
    return b"(" + s("storage") + g("torch", kind) + s(key) + s("cpu") + i(1) + b"t" + b"Q"


def tensor(key, offset, size, stride):    # _rebuild_tensor_v2(storage, offset, size, stride, False, {})
    return (g("torch._utils", "_rebuild_tensor_v2") + b"(" + storage(key) + i(offset) + ints(size)
            + ints(stride) + b"\x89" + b"}" + b"t" + b"R")


def one_entry(name, value):        # {name: value}
    return b"}" + s(name) + value + b"s"


class HostileArchives(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def archive(self, pkl, records, compress=zipfile.ZIP_STORED):
        path = os.path.join(self.dir.name, "ckpt.pt")
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/data.pkl", b"\x80\x02" + pkl + b".")
            z.writestr("archive/version", b"3\n")
            for key, data in records.items():
                z.writestr(f"archive/data/{key}", data, compress_type=compress)
        return path

    def refused(self, path, words):
        with self.assertRaises(ValueError) as cm:
            gpt.load_torch_file(path)
        self.assertIn(words, str(cm.exception))

    def test_a_plain_tensor_reads(self):
        # the writer above is right: 2 floats 1.5, 2.5 read back as themselves
        path = self.archive(one_entry("w", tensor("0", 0, [2], [1])), {"0": struct.pack("<2f", 1.5, 2.5)})
        self.assertEqual(gpt.load_torch_file(path)["w"].tolist(), [1.5, 2.5])

    def test_build_on_a_tensor_is_refused(self):
        # BUILD with (storage, offset, size, stride) is Tensor.__setstate__ -> set_(...), which
        # resizes an empty storage to 10**6 uninitialised floats (it did, before the fix)
        pkl = b"}" + s("w") + tensor("0", 0, [1], [1]) + b"(" + storage("1") + i(0) + ints([10 ** 6]) \
            + ints([1]) + b"t" + b"b" + b"s"
        self.refused(self.archive(pkl, {"0": struct.pack("<f", 1.5), "1": b""}), "BUILD")

    def test_build_on_an_allowed_function_is_refused(self):
        # (state, slotstate) BUILD would setattr on the rebuild function itself (its __defaults__)
        pkl = g("torch._utils", "_rebuild_tensor_v2") + b"N" + b"}" + s("__defaults__") + b")" + b"s" \
            + b"\x86" + b"b"
        self.refused(self.archive(pkl, {}), "BUILD")

    def test_ordered_dict_metadata_still_reads(self):
        # torch.save(state_dict) sets OrderedDict._metadata by BUILD: still accepted
        state = OrderedDict(w=torch.tensor([1.0, 2.0]))
        state._metadata = OrderedDict({"": {"version": 1}})
        path = os.path.join(self.dir.name, "sd.pt")
        torch.save(state, path)
        got = gpt.load_torch_file(path)
        self.assertEqual(got["w"].tolist(), [1.0, 2.0])
        self.assertEqual(got._metadata, {"": {"version": 1}})

    def test_a_stride_0_view_cannot_grow_four_bytes_into_gigabytes(self):
        # 2 * 10**9 elements of stride 0 over 1 float: inside the storage, but 8 GB once copied
        self.refused(self.archive(one_entry("w", tensor("0", 0, [2 * 10 ** 9], [0])),
                                  {"0": struct.pack("<f", 1.0)}), "elements over a storage of 1")

    def test_a_view_outside_its_storage_is_refused(self):
        self.refused(self.archive(one_entry("w", tensor("0", 1, [2], [1])), {"0": struct.pack("<2f", 1, 2)}),
                     "outside its storage")
        self.refused(self.archive(one_entry("w", tensor("0", 0, [2, 2], [2, 1])), {"0": struct.pack("<2f", 1, 2)}),
                     "elements over a storage")

    def test_one_record_named_many_times_is_read_once(self):
        # 40 tensors over the same 4 MB record share it (torch.load's semantics), no 40 copies
        pkl = b"}" + b"".join(s(f"w{n}") + tensor("0", 0, [10 ** 6], [1]) + b"s" for n in range(40))
        got = gpt.load_torch_file(self.archive(pkl, {"0": bytes(4 * 10 ** 6)}))
        self.assertEqual(len({t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage")
                              else t.storage().data_ptr() for t in got.values()}), 1)

    def test_a_compressed_record_larger_than_the_file_is_refused(self):
        # 64 MB of zeros deflate to ~64 KB: a record may not unpack past the archive's size on disk
        path = self.archive(one_entry("w", tensor("0", 0, [16 << 20], [1])), {"0": bytes(64 << 20)},
                            compress=zipfile.ZIP_DEFLATED)
        self.assertLess(os.path.getsize(path), 1 << 20)
        self.refused(path, "more than the archive holds on disk")

    def test_a_tuple_key_is_refused_before_it_is_hashed(self):
        # t1 = (t0, t0), t2 = (t1, t1), ...: hash(t80) takes 2**80 steps; refused as a key
        pkl = s("x") + b"\x94"                       # MEMOIZE t0 at memo 0
        for depth in range(80):
            pkl += b"h" + bytes([depth]) + b"h" + bytes([depth]) + b"\x86" + b"\x94"   # (m, m) -> memo depth+1
        pkl = b"}" + pkl + i(1) + b"s"
        self.refused(self.archive(pkl, {}), "dict key of type tuple")

    def test_sets_are_refused(self):
        self.refused(self.archive(b"\x8f" + b"(" + i(1) + b"\x90", {}), "refused a set")

    def test_read_meta_refuses_tuple_keys_and_build(self):
        path = os.path.join(self.dir.name, "meta.pkl")
        t = s("x") + b"\x94" + b"".join(b"h" + bytes([d]) + b"h" + bytes([d]) + b"\x86" + b"\x94" for d in range(80))
        with open(path, "wb") as f:
            f.write(b"\x80\x02}" + t + i(1) + b"s.")
        with self.assertRaises(ValueError) as cm:
            gpt.read_meta(path)
        self.assertIn("dict key of type tuple", str(cm.exception))
        with open(path, "wb") as f:
            f.write(b"\x80\x02]" + b"}" + b"b.")     # BUILD on a list
        with self.assertRaises(ValueError) as cm:
            gpt.read_meta(path)
        self.assertIn("BUILD", str(cm.exception))

    def test_a_persistent_id_is_not_printed_whole(self):
        # the refusal names the id's type only: str() of a shared-halves tuple would never end
        t = s("x") + b"\x94" + b"".join(b"h" + bytes([d]) + b"h" + bytes([d]) + b"\x86" + b"\x94" for d in range(80))
        self.refused(self.archive(t + b"Q", {}), "refused a persistent id (tuple)")

    def test_a_shared_halves_value_in_meta_is_not_printed(self):
        # vocab_size = t80 (a tuple, allowed as a value): the mismatch message names its type only
        path = os.path.join(self.dir.name, "meta.pkl")
        t = s("x") + b"\x94" + b"0" + b"".join(b"h" + bytes([d]) + b"h" + bytes([d]) + b"\x86" + b"\x94" + b"0"
                                             for d in range(80)) + b"h" + bytes([80])   # POPs: only t80 stays
        itos = b"}" + i(0) + s("a") + b"s"
        with open(path, "wb") as f:
            f.write(b"\x80\x02}" + s("itos") + itos + b"s" + s("vocab_size") + t + b"s.")
        with self.assertRaises(ValueError) as cm:
            gpt.read_meta(path)
        self.assertIn("vocab_size = a tuple", str(cm.exception))

    def test_a_shared_halves_n_head_in_model_args_is_not_printed(self):
        with self.assertRaises(ValueError) as cm:
            gpt.assemble({"transformer.wte.weight": torch.zeros(4, 4), "transformer.wpe.weight": torch.zeros(2, 4), "transformer.ln_f.weight": torch.ones(4),
                          "transformer.h.0.ln_1.weight": torch.ones(4)},
                         n_head=((1, 1), (1, 1)), gelu="exact", where="x")
        self.assertIn("n_head = a tuple", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
