"""The converters' one reader of PyTorch files (tools/python/torch_file.py) and
its unpickler (tools/python/pickle_reader.py), on files built here byte by
byte: what torch.save writes, and what a stranger's checkpoint could hold
instead. No torch needed (make test-tools); tests/python/test_torch_archive.py
reads files that torch itself wrote.

Each hostile file is one finding of the attack review of issue 31; each test
checks the one-line refusal and, where the finding was a cost, a bound in the
reader's own terms (unpickler steps, bytes allocated), never wall time.

    /usr/bin/python3 tests/python/test_torch_file.py
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

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import pickle_reader  # noqa: E402
import torch_file  # noqa: E402


# --- a tiny pickle writer: the opcodes torch.save's data.pkl uses -------------
def s(text):                      # SHORT_BINUNICODE
    b = text.encode()
    return b"\x8c" + bytes([len(b)]) + b


def g(module, name):              # STACK_GLOBAL
    return s(module) + s(name) + b"\x93"


def i(n):                         # BININT, or LONG1 past 32 bits
    if -(1 << 31) <= n < (1 << 31):
        return b"J" + struct.pack("<i", n)
    return b"\x8a\x08" + n.to_bytes(8, "little", signed=True)


def ints(values):                 # MARK ... TUPLE
    return b"(" + b"".join(i(v) for v in values) + b"t"


def storage(key, numel, kind="FloatStorage", legacy=False):
    """("storage", torch.FloatStorage, key, "cpu", numel[, None]) BINPERSID"""
    return b"(" + s("storage") + g("torch", kind) + s(key) + s("cpu") + i(numel) + (b"N" if legacy else b"") \
        + b"t" + b"Q"


def tensor(key, numel, offset, size, stride, legacy=False):
    """_rebuild_tensor_v2(storage, offset, size, stride, False, {})"""
    return (g("torch._utils", "_rebuild_tensor_v2") + b"(" + storage(key, numel, legacy=legacy) + i(offset)
            + ints(size) + ints(stride) + b"\x89" + b"}" + b"t" + b"R")


def one_entry(name, value):       # {name: value}
    return b"}" + s(name) + value + b"s"


def pkl(body):
    return b"\x80\x02" + body + b"."


def shared_halves(depth):
    """t0 = "x"; t(k+1) = (tk, tk): 2**depth leaves from 5*depth opcodes
    (each tk is memoized and popped; only t(depth) is left on the stack)."""
    return s("x") + b"\x94" + b"0" + b"".join(b"h" + bytes([d]) + b"h" + bytes([d]) + b"\x86" + b"\x94" + b"0"
                                              for d in range(depth)) + b"h" + bytes([depth])


def code_running_pickle(marker):
    """A pickle that runs code when Python's own pickle loads it: exec(...) via
    GLOBAL builtins.exec + REDUCE, writing `marker`."""
    src = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')"
    return pkl(g("builtins", "exec") + b"(" + s(src) + b"t" + b"R" + b"0" + b"}")


class Case(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def p(self, name):
        return os.path.join(self.dir.name, name)

    def archive(self, data_pkl, records, compress=zipfile.ZIP_STORED, extra=(), name="ckpt.pt"):
        path = self.p(name)
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/data.pkl", data_pkl)
            z.writestr("archive/version", b"3\n")
            for key, data in records.items():
                z.writestr(f"archive/data/{key}", data, compress_type=compress)
            for member, data in extra:
                z.writestr(member, data)
        return path

    def legacy(self, main, storages, name="legacy.pt", sys_info=None, protocol=2):
        """torch.save's legacy format: magic, protocol, sys_info, the object,
        the storage keys, then each storage as int64 numel + bytes."""
        sys_info = sys_info or {"protocol_version": 1001, "little_endian": True,
                                "type_sizes": {"short": 2, "int": 4, "long": 8}}
        out = pickle.dumps(0x1950a86a20f9469cfc6c, protocol=protocol) + pickle.dumps(1001, protocol=protocol) \
            + pickle.dumps(sys_info, protocol=protocol) + main \
            + pickle.dumps([k for k, _, _ in storages], protocol=protocol)
        for _, numel, data in storages:
            out += struct.pack("<q", numel) + data
        path = self.p(name)
        with open(path, "wb") as f:
            f.write(out)
        return path

    def refused(self, path, words, what="checkpoint"):
        with self.assertRaises(ValueError) as cm:
            torch_file.read(path, what)
        message = str(cm.exception)
        self.assertIn(words, message)
        self.assertTrue(message.startswith(f"{path}: "), message)
        self.assertNotIn("\n", message)
        return message


class WhatTorchSaveWrites(Case):
    def test_a_zip_archive_reads_its_tensors_views_and_plain_values(self):
        # w = [1.5, 2.5]; v = the second column of a 2x2 view [[1, 2], [3, 4]] of the same storage
        body = b"}" + s("w") + tensor("0", 2, 0, [2], [1]) + b"s" + s("m") + tensor("1", 4, 0, [2, 2], [2, 1]) \
            + b"s" + s("col") + tensor("1", 4, 1, [2], [2]) + b"s" + s("lr") + b"G" + struct.pack(">d", 1e-3) + b"s"
        path = self.archive(pkl(body), {"0": struct.pack("<2f", 1.5, 2.5), "1": struct.pack("<4f", 1, 2, 3, 4)})
        got = torch_file.read(path)
        self.assertEqual(got["w"].array.tolist(), [1.5, 2.5])
        self.assertEqual(got["m"].array.tolist(), [[1, 2], [3, 4]])
        self.assertEqual(got["col"].array.tolist(), [2, 4])
        self.assertEqual(got["col"].dtype, "float32")
        self.assertEqual(got["lr"], 1e-3)

    def test_a_deflated_member_reads(self):
        path = self.archive(pkl(one_entry("w", tensor("0", 3, 0, [3], [1]))), {"0": struct.pack("<3f", 1, 2, 3)},
                            compress=zipfile.ZIP_DEFLATED)
        self.assertEqual(torch_file.read(path)["w"].array.tolist(), [1, 2, 3])

    def test_a_legacy_file_reads(self):
        main = pkl(b"}" + s("w") + tensor("k1", 2, 0, [2], [1], legacy=True) + b"s"
                   + s("b") + tensor("k2", 1, 0, [], [], legacy=True) + b"s")
        for protocol in (1, 2, 3, 4, 5):      # torch.save(..., pickle_protocol=P) writes its header pickles so
            with self.subTest(protocol=protocol):
                path = self.legacy(main, [("k1", 2, struct.pack("<2f", 0.5, -1)), ("k2", 1, struct.pack("<f", 7))],
                                   protocol=protocol)
                got = torch_file.read(path)
                self.assertEqual(got["w"].array.tolist(), [0.5, -1])
                self.assertEqual(got["b"].array.tolist(), 7)

    def test_an_ordered_dict_keeps_its_metadata(self):
        # torch.save(state_dict): OrderedDict() then BUILD {"_metadata": ...} then SETITEMS
        body = g("collections", "OrderedDict") + b")" + b"R" + b"}" + s("_metadata") + b"}" + s("") + b"}" \
            + s("version") + i(1) + b"s" + b"s" + b"s" + b"b" + b"(" + s("w") + tensor("0", 1, 0, [1], [1]) + b"u"
        got = torch_file.read(self.archive(pkl(body), {"0": struct.pack("<f", 3)}))
        self.assertIsInstance(got, OrderedDict)
        self.assertEqual(got._metadata, {"": {"version": 1}})
        self.assertEqual(got["w"].array.tolist(), [3])

    def test_the_committed_checkpoints_read(self):
        # files torch.save wrote (data/families/README.md says how): nanoGPT's ckpt.pt holds
        # model, model_args, iter_num, best_val_loss, config; its model_args say 4 layers of 128
        ckpt = torch_file.read(REPO / "data/families/nanogpt-char/ckpt.pt")
        self.assertEqual(set(ckpt), {"model", "model_args", "iter_num", "best_val_loss", "config"})
        args = ckpt["model_args"]
        wte = ckpt["model"]["transformer.wte.weight"]
        self.assertEqual(wte.shape, (args["vocab_size"], args["n_embd"]))
        layers = {k.split(".")[2] for k in ckpt["model"] if k.startswith("transformer.h.")}
        self.assertEqual(len(layers), args["n_layer"])
        state = torch_file.read(REPO / "data/families/mingpt-sort.pt")
        self.assertIsInstance(state, OrderedDict)
        for name, t in state.items():
            self.assertTrue(np.isfinite(t.array).all() or t.dtype == "bool", name)


def resident_kb(address):
    """The resident size (kB, /proc/self/smaps "Rss") of the mapping holding `address`."""
    with open("/proc/self/smaps") as f:
        inside = False
        for line in f:
            head = line.split()[0]
            if "-" in head and ":" not in head:
                low, high = (int(x, 16) for x in head.split("-"))
                inside = low <= address < high
            elif inside and head == "Rss:":
                return int(line.split()[1])
    raise AssertionError(f"no mapping holds address {address:#x}")


class Mapped(Case):
    """read() maps the file: a stored member's tensors are views of the mapping
    (no copy), its pages leave the resident memory once read (the CRC) and once
    released, and the values stay readable."""

    def aligned_archive(self, name, data, compress=zipfile.ZIP_STORED):
        """{"w": float32 tensor of `data`'s bytes}, its member starting at a multiple
        of 64 in the file (as torch.save aligns it; zipfile does not by itself)."""
        path = self.p(name)
        numel = len(data) // 4
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/data.pkl", pkl(one_entry("w", tensor("0", numel, 0, [numel], [1]))))
            info = zipfile.ZipInfo("archive/data/0")
            info.compress_type = compress
            start = z.fp.tell() + 30 + len(info.filename) + 4     # after the local header and a 4-byte extra head
            pad = -start % 64
            info.extra = struct.pack("<HH", 0x4B50, pad) + bytes(pad)   # an extra field nothing reads: padding
            z.writestr(info, data)
        return path

    def test_a_stored_tensor_is_a_view_of_the_mapped_file(self):
        data = np.arange(1000, dtype="<f4").tobytes()
        path = self.aligned_archive("a.pt", data)
        w = torch_file.read(path)["w"]
        found = torch_file.mapping_of(w.array)
        self.assertIsNotNone(found, "the tensor is a copy, not a view of the mapping")
        mapping, start, end = found
        with open(path, "rb") as f:
            raw = f.read()
        self.assertEqual(raw[start:end], data, "the view is at the member's place in the file")
        self.assertTrue(np.shares_memory(w.array, np.frombuffer(mapping, dtype=np.uint8)))
        self.assertEqual(w.array.tolist(), list(range(1000)))

    def test_a_deflated_tensor_is_in_memory(self):
        path = self.aligned_archive("d.pt", np.arange(1000, dtype="<f4").tobytes(), compress=zipfile.ZIP_DEFLATED)
        w = torch_file.read(path)["w"]
        self.assertIsNone(torch_file.mapping_of(w.array))
        self.assertEqual(w.array.tolist(), list(range(1000)))

    def test_pages_leave_the_resident_memory_after_the_crc_and_after_release(self):
        if not os.path.exists("/proc/self/smaps"):
            self.skipTest("no /proc/self/smaps")
        n = 2 << 20                                          # 8 MiB of float32
        values = np.arange(n, dtype="<f4")
        w = torch_file.read(self.aligned_archive("big.pt", values.tobytes()))["w"]
        address = w.array.ctypes.data
        self.assertLess(resident_kb(address), 1024, "the CRC read every page; they should be given back")
        self.assertEqual(float(w.array.sum(dtype=np.float64)), float(values.sum(dtype=np.float64)))
        self.assertGreater(resident_kb(address), 7 * 1024, "summing the tensor maps its pages in")
        torch_file.release(w.array)
        self.assertLess(resident_kb(address), 1024, "release() gives the tensor's pages back")
        self.assertTrue(np.array_equal(w.array, values), "the values are read again from the file")

    def test_release_leaves_a_tensor_outside_every_mapping_alone(self):
        kept = np.arange(10, dtype=np.float32)
        self.assertIsNone(torch_file.mapping_of(kept))
        torch_file.release(kept)
        self.assertEqual(kept.tolist(), list(range(10)))


class PlainData(unittest.TestCase):
    def test_every_protocol_reads_back_what_pickle_wrote(self):
        # the expected values are the objects themselves, written by Python's pickle
        values = [{"vocab_size": 3, "itos": {0: "a", 1: "b", 2: "é"}, "stoi": {"a": 0, "b": 1, "é": 2}},
                  [1, -2, 3.5, None, True, False, b"\x00\xff", b"", (1, (2, [3])), 2 ** 70, -2 ** 70, "x" * 300,
                   (), [], {}, 1e308, -0.0, 255, 256, 65535, 65536, -1, "a\nb\\ \u20ac \U0001f600"]]
        for value in values:
            for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
                with self.subTest(protocol=protocol):
                    self.assertEqual(pickle_reader.load(pickle.dumps(value, protocol=protocol)), value)

    def test_bytes_globals_build_only_bytes(self):
        with self.assertRaisesRegex(ValueError, r"_codecs\.encode other than \(str, 'latin1'\)"):
            pickle_reader.load(pkl(g("_codecs", "encode") + s("x") + s("utf-8") + b"\x86" + b"R"))


class TheFindings(Case):
    """Issue 31's findings, one test each."""

    def test_a_torchscript_archive_with_zeros_after_it_is_refused_and_runs_nothing(self):
        # High: 69,000 zero bytes after a TorchScript archive: Python's zipfile no longer sees a
        # zip (it looks 65,557 bytes back), torch's reader did, and passed it to torch.jit.load.
        marker = Path(self.p("marker"))
        path = self.archive(code_running_pickle(marker), {}, extra=[("archive/constants.pkl", pkl(b")")),
                                                                    ("archive/code/__torch__.py", b"")])
        with open(path, "ab") as f:
            f.write(bytes(69_000))
        self.assertFalse(zipfile.is_zipfile(path))          # what the old converter's first check saw
        self.refused(path, "bytes after the zip's end record")
        self.assertFalse(marker.exists())
        # the same archive without the zeros: refused by its members
        path = self.archive(code_running_pickle(marker), {}, extra=[("archive/constants.pkl", pkl(b")")),
                                                                    ("archive/code/__torch__.py", b"")], name="ts.pt")
        self.refused(path, "a TorchScript archive")
        self.assertFalse(marker.exists())

    def test_the_payload_is_real_and_the_reader_runs_none_of_it(self):
        marker = Path(self.p("marker"))
        data = code_running_pickle(marker)
        pickle.loads(data)                                   # Python's own unpickler runs it ...
        self.assertTrue(marker.exists())
        marker.unlink()
        self.refused(self.archive(data, {}), "the global builtins.exec is not allowed")   # ... this one does not
        self.assertFalse(marker.exists())
        meta = self.p("meta.pkl")
        with open(meta, "wb") as f:
            f.write(data)
        with self.assertRaisesRegex(ValueError, r"builtins\.exec is not allowed"):
            pickle_reader.load(Path(meta).read_bytes())
        self.assertFalse(marker.exists())

    def test_colliding_integer_keys_are_refused_at_the_first_one(self):
        # Medium: ints that are multiples of 2**61 - 1 all hash to 0; 40,000 of them took 100 s
        # (O(n**2) inserts). Keys here are str or ints in [-2**31, 2**31): refused at the first.
        m = (1 << 61) - 1
        body = b"}" + b"(" + b"".join(b"\x8a\x0a" + (k * m).to_bytes(10, "little", signed=True) + i(0)
                                      for k in range(1, 40_001)) + b"u"
        reader = pickle_reader.Unpickler(pkl(body))
        with self.assertRaisesRegex(ValueError, r"a dict key 2305843009213693951 outside \[-2\*\*31, 2\*\*31\)"):
            reader.load()
        # the opcodes (80,000) and the items gathered for SETITEMS (80,000), then no insert loop
        self.assertLessEqual(reader.steps, 4 * 40_000 + 4)
        # the same count of small-int keys (nanoGPT's optimizer state) loads in linear steps
        body = b"}" + b"(" + b"".join(i(k) + i(k) for k in range(40_000)) + b"u"
        reader = pickle_reader.Unpickler(pkl(body))
        self.assertEqual(len(reader.load()), 40_000)
        self.assertLessEqual(reader.steps, 2 * len(pkl(body)))

    def test_colliding_memo_indices_are_refused(self):
        # PUT takes a decimal index: colliding huge ones would degrade the memo the same way
        with self.assertRaisesRegex(ValueError, r"memo index .* outside \[0, 2\*\*32\)"):
            pickle_reader.load(b"(lp" + str(1 << 61).encode() + b"\n.")

    def test_a_compressed_member_cannot_unpack_past_its_declared_size(self):
        # Medium: a member whose declared size is patched small; zipfile inflated it all
        # (2.3 GB per GiB). Here inflating stops at the declared size + 1.
        path = self.archive(pkl(one_entry("w", tensor("0", 4, 0, [4], [1]))), {"0": bytes(8 << 20)},
                            compress=zipfile.ZIP_DEFLATED)
        data = bytearray(open(path, "rb").read())
        for sig, at_size in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):    # every header of data/0
            start = 0
            while (start := data.find(sig, start)) >= 0:
                name_at = start + (46 if sig == b"PK\x01\x02" else 30)
                if data[name_at:name_at + 14] == b"archive/data/0":
                    struct.pack_into("<I", data, start + at_size, 16)
                start += 4
        with open(path, "wb") as f:
            f.write(data)
        import tracemalloc
        tracemalloc.start()
        self.refused(path, "inflates to more than the 16 bytes it declares")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        self.assertLess(peak, 1 << 20)        # the 8 MiB the member holds were never inflated

    def test_bzip2_and_lzma_members_are_refused_by_name(self):
        for method, name in ((zipfile.ZIP_BZIP2, "bzip2"), (zipfile.ZIP_LZMA, "LZMA")):
            with self.subTest(name):
                path = self.archive(pkl(one_entry("w", tensor("0", 1, 0, [1], [1]))), {"0": bytes(4)},
                                    compress=method, name=f"{name}.pt")
                self.refused(path, f"compressed with method {method} ({name}); only stored and deflate")

    def test_many_views_of_one_storage_are_refused(self):
        # Medium: one 4 KB storage under 6,000 names became 1.58 GB of output from a 1 MB file.
        body = b"}" + b"".join(s(f"w{n}") + tensor("0", 1024, 0, [1024], [1]) + b"s" for n in range(6000))
        path = self.archive(pkl(body), {"0": bytes(4096)})
        self.refused(path, f"more than {torch_file.VIEW_MULTIPLE} times the file's")
        # a stride-0 view: 2e9 elements from one float
        path = self.archive(pkl(one_entry("w", tensor("0", 1, 0, [2 * 10 ** 9], [0]))), {"0": bytes(4)},
                            name="stride0.pt")
        self.refused(path, "would take 8000000064 bytes")     # the view, and the record's 64
        # two names for one storage (nanoGPT's tied wte / lm_head) still read
        body = b"}" + s("wte") + tensor("0", 4, 0, [2, 2], [2, 1]) + b"s" + s("lm_head") \
            + tensor("0", 4, 0, [2, 2], [2, 1]) + b"s"
        got = torch_file.read(self.archive(pkl(body), {"0": struct.pack("<4f", 1, 2, 3, 4)}, name="tied.pt"))
        self.assertIs(got["wte"].storage, got["lm_head"].storage)

    def test_one_record_under_many_names_counts_each_time(self):
        # review of this fix: one memoized tensor record under 20,000 keys (1 MiB each appearance)
        body = tensor("0", 262144, 0, [262144], [1]) + b"\x94" + b"0" + b"}" + b"(" \
            + b"".join(s(f"w{n}") + b"h\x00" for n in range(20000)) + b"u"
        self.refused(self.archive(pkl(body), {"0": bytes(1 << 20)}), "more than 4 times the file's")
        # 20,000 empty tensor records of 5 bytes each (the rebuild function and its arguments
        # memoized, then GET GET REDUCE): each counts 64 bytes, so they are refused
        args = b"(" + storage("0", 1) + i(0) + ints([0]) + ints([1]) + b"\x89" + b"}" + b"t"
        body = b"]" + b"(" + g("torch._utils", "_rebuild_tensor_v2") + b"\x94" + b"0" + args + b"\x94" + b"0" \
            + b"h\x00h\x01R" * 20000 + b"e"
        self.refused(self.archive(pkl(body), {"0": bytes(4)}, name="empty.pt"), "more than 4 times the file's")

    def test_metadata_is_checked_like_the_rest(self):
        # BUILD's _metadata is walked too: shared halves and deep nesting are refused in the reader
        for name, value, words in (("halves", shared_halves(50), "expanded as a tree"),
                                   ("deep", b"]" * 200 + b"a" * 199, "nested more than 100 deep")):
            with self.subTest(name):
                body = g("collections", "OrderedDict") + b")" + b"R" + b"}" + s("_metadata") + value + b"s" + b"b"
                self.refused(self.archive(pkl(body), {}, name=f"{name}.pt"), words)

    def test_built_bytes_and_shared_strings_are_bounded(self):
        # _codecs.encode makes new bytes per call: 2,000 calls on one 20 KB string are refused
        body = b"]" + g("_codecs", "encode") + b"\x94" + b"0" + s("x" * 200) * 0 + b"\x8d" \
            + struct.pack("<Q", 20000) + b"x" * 20000 + s("latin1") + b"\x86\x94" + b"0" + b"h\x00h\x01Ra" * 2000
        with self.assertRaisesRegex(ValueError, r"_codecs\.encode builds more bytes than the pickle holds"):
            pickle_reader.load(pkl(body))
        # one 50 KB string under 2,000 ids: refused by the characters it holds per appearance
        body = b"}" + b"\x8d" + struct.pack("<Q", 50000) + b"y" * 50000 + b"\x94" + b"0" + b"(" \
            + b"".join(i(k) + b"h\x00" for k in range(2000)) + b"u"
        with self.assertRaisesRegex(ValueError, r"strings, counted each time they appear, hold more than"):
            pickle_reader.load(pkl(body))

    def test_odd_numbers_and_shapes_are_refusals_not_tracebacks(self):
        big = b"\x8b" + struct.pack("<i", 5000) + b"\x01" * 5000
        with self.assertRaisesRegex(pickle_reader.Refused, r"APPEND on an int of 39993 bits"):
            pickle_reader.load(pkl(big + big + b"a"))
        with self.assertRaisesRegex(pickle_reader.Refused, r"INT with a number of 2000 characters"):
            pickle_reader.load(b"I" + b"1" * 2000 + b"\n.")
        with self.assertRaisesRegex(pickle_reader.Refused, r"with 0 arguments, not what it takes"):
            pickle_reader.load(pkl(g("_codecs", "encode") + b")" + b"R"))
        with self.assertRaisesRegex(pickle_reader.Refused, r"where plain data belongs"):
            pickle_reader.load(pkl(g("_codecs", "encode")))
        self.refused(self.archive(pkl(one_entry("w", tensor("0", 1, 0, [1] * 33, [1] * 33))), {"0": bytes(4)}),
                     "more than 32 dimensions")
        self.refused(self.archive(pkl(one_entry("w", tensor("0", 1, 0, [0] + [2 ** 47] * 5, [1] * 6))),
                                  {"0": bytes(4)}, name="zero.pt"), "multiply past 2**48")

    def test_a_member_folder_with_control_characters_stays_one_printable_line(self):
        path = self.p("ctl.pt")
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("p\n\x1b[31m" + "A" * 5000 + "/data.pkl", pkl(b"N"))
            z.writestr("p\n\x1b[31m" + "A" * 5000 + "/evil", b"")
        message = self.refused(path, "an unexpected member")
        self.assertTrue(message.isprintable())
        self.assertLess(len(message), 400)

    def test_a_view_outside_its_storage_is_refused(self):
        self.refused(self.archive(pkl(one_entry("w", tensor("0", 2, 1, [2], [1]))), {"0": bytes(8)}),
                     "outside its storage of 2 elements")

    def test_a_storage_record_of_the_wrong_size_is_refused(self):
        self.refused(self.archive(pkl(one_entry("w", tensor("0", 3, 0, [3], [1]))), {"0": bytes(8)}),
                     "holds 8 bytes, not 3 float32 elements")

    def test_a_legacy_size_claim_larger_than_the_file_is_refused_before_allocating(self):
        # Medium: a 54 KB legacy file claimed 5.3 GB (and 512 MB of uninitialised memory was written
        # out as weights). Here storages are views of the file: a claim past its end is refused.
        numel = 1_300_000_000
        main = pkl(one_entry("w", tensor("k", numel, 0, [numel], [1], legacy=True)))
        path = self.legacy(main, [("k", numel, bytes(54_000))])
        self.refused(path, f"claims {numel * 4} bytes, but only 54000 remain")
        # and a count in the data that disagrees with the pickle
        main = pkl(one_entry("w", tensor("k", 2, 0, [2], [1], legacy=True)))
        self.refused(self.legacy(main, [("k", 3, bytes(12))], name="l2.pt"), "holds 3 elements, but the pickle says 2")

    def test_a_huge_data_pkl_compressed_small_is_refused_before_inflating(self):
        # Medium: 256 MB of data.pkl deflated to 260 KB. The declared sizes are checked against
        # 4 x the file first; nothing is inflated.
        path = self.p("big.pt")
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
            with z.open("archive/data.pkl", "w") as f:
                chunk = b"N0" * (1 << 19)
                for _ in range(64):                   # 64 MB of NONE POP: a pickle that only costs time
                    f.write(chunk)
        self.assertLess(os.path.getsize(path), 1 << 20)
        self.refused(path, f"more than {torch_file.UNPACK_MULTIPLE} times the file's")

    def test_shared_halves_and_self_containing_lists_are_refused_by_their_tree_size(self):
        for name, body in (("halves", shared_halves(80)), ("self", b"]\x94h\x00a")):
            with self.subTest(name):
                with self.assertRaisesRegex(ValueError, r"expanded as a tree, has more than"):
                    pickle_reader.load(pkl(body))
        # a key that is a tuple is refused before it is hashed
        with self.assertRaisesRegex(ValueError, r"a dict key of type tuple"):
            pickle_reader.load(pkl(b"}" + shared_halves(80) + i(1) + b"s"))

    def test_a_fifo_is_refused_without_reading(self):
        fifo = self.p("fifo.pt")
        os.mkfifo(fifo)
        self.refused(fifo, "not a regular file")

    def test_members_a_torch_save_archive_never_has_are_refused(self):
        path = self.archive(pkl(b"N"), {}, extra=[("archive/extra/x", b"")])
        self.refused(path, "an unexpected member 'archive/extra/x'")

    def test_what_builds_objects_is_refused(self):
        cases = [(b"\x8f", "a set"), (g("torch", "FloatStorage") + b")" + b"\x81", "NEWOBJ"),
                 (b"]" + b"}" + b"b", "BUILD"), (g("torch.nn.modules.linear", "Linear"), "torch.nn.modules.linear.Linear"),
                 (shared_halves(3) + b"Q", "a persistent id that is not a tensor storage record (a tuple)")]
        for body, words in cases:
            with self.subTest(words):
                self.refused(self.archive(pkl(body), {}), words)


class Bounds(unittest.TestCase):
    """The cost claims of pickle_reader's docstring, on random input."""

    def test_steps_never_exceed_twice_the_length_on_mutated_pickles(self):
        import random
        rng = random.Random(31)
        seeds = [pickle.dumps(v, protocol=p) for p in range(6) for v in
                 ({"itos": {0: "a", 1: "b"}, "x": [1.5, (2, 3)], "b": b"\x00"}, [[], {}, ()], "x" * 300)]
        for n in range(3000):
            data = bytearray(rng.choice(seeds))
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(len(data))
                data[at] = rng.randrange(256)
            reader = pickle_reader.Unpickler(bytes(data))
            try:
                reader.load()
            except pickle_reader.Refused:
                pass
            self.assertLessEqual(reader.steps, 2 * len(data) + 2, bytes(data))


class NoTorchLoad(unittest.TestCase):
    def test_no_converter_calls_a_torch_or_python_unpickler(self):
        # issue 31: no path to torch.load or torch.jit in the converters, and no other unpickler.
        # Read as Python (ast), so comments and strings do not count and aliases do.
        import ast
        loaders = {"load", "loads", "Unpickler", "_Unpickler", "_load"}
        modules = {"torch", "jit", "serialization", "pickle", "_pickle", "cPickle", "dill", "joblib", "np", "numpy"}
        found = []
        for path in sorted((REPO / "tools" / "python").rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"
                if isinstance(node, ast.Attribute) and node.attr in loaders:
                    base = node.value
                    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                    if name in modules:
                        found.append(f"{where}: {name}.{node.attr}")
                elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in modules:
                    found += [f"{where}: from {node.module} import {a.name}" for a in node.names if a.name in loaders]
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    found += [f"{where}: import {a.name} as {a.asname}" for a in node.names if a.asname and a.name in
                              ("torch", "torch.jit", "torch.serialization", "pickle", "_pickle", "dill", "joblib")]
                elif (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr" and len(node.args) > 1
                      and isinstance(node.args[1], ast.Constant) and node.args[1].value in loaders):
                    found.append(f"{where}: getattr(..., {node.args[1].value!r})")
        self.assertEqual(found, [])


if __name__ == "__main__":
    unittest.main()
