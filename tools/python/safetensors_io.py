"""Minimal safetensors reader/writer (numpy only; torch tensors are accepted).

The `safetensors` package is not needed. File layout (see docs/FORMAT.md):

    8 bytes   N, the header length, unsigned little-endian
    N bytes   JSON object: {"__metadata__": {str: str}, name: {"dtype": ...,
              "shape": [...], "data_offsets": [begin, end]}, ...}
    rest      raw little-endian tensor bytes; offsets are relative to the end
              of the header

What `write` produces, byte for byte (so equal inputs give identical files):
- header keys sorted by name ("__metadata__" first when present), compact
  JSON, ASCII only, padded with spaces so the data starts at a multiple of 8;
- data without holes: tensors ordered by element size (largest first), then
  by name, so every tensor starts at a multiple of its element size. For a
  file whose tensors all have one dtype this is plain name order;
- written by tools/python/safe_write.py (a temporary file renamed into place, so no
  half-written file is left; a FIFO or character device written as a stream).

`read` checks the header strictly — docs/FORMAT.md's header rules, the same
as engine/io/safetensors.cpp's and tested on the same table
(tests/safetensors_headers.json): '{' first (no byte order mark), no NUL,
valid UTF-8, one JSON object followed only by spaces, no key twice; then
known dtype, shape, offsets matching the shape, no overlap, no hole, nothing
outside the file — and raises ValueError naming the rule or the tensor at fault.

Usage:
    write("x.safetensors", {"w": np.zeros((2, 3), np.float32)}, {"k": "v"})
    write("x.safetensors", {"w": Streamed("F32", [4, 3], lambda: (a.T[i:i + 2] for i in (0, 2)))})
    tensors, metadata = read("x.safetensors")           # BF16 widened to float32
    tensors, metadata = views(mapped_bytes)             # numpy views of the bytes, no copy
    header, metadata, data_start = read_header("x.safetensors")    # the header alone is read
"""

import json
import mmap
import os
import stat
import struct
import sys

import numpy as np

import safe_write  # tools/, the folder this module is imported from

# safetensors dtype name -> numpy dtype of the stored bytes (little-endian).
# BF16 has no numpy dtype: it is stored/read as raw uint16 bit patterns.
DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"),
    "U32": np.dtype("<u4"),
    "U16": np.dtype("<u2"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
    "F8_E4M3": np.dtype("u1"),   # no numpy dtype: read as raw bytes, as BF16 as raw uint16
    "F8_E5M2": np.dtype("u1"),
}

_NUMPY_TO_NAME = {
    np.dtype("float64"): "F64",
    np.dtype("float32"): "F32",
    np.dtype("float16"): "F16",
    np.dtype("int64"): "I64",
    np.dtype("int32"): "I32",
    np.dtype("int16"): "I16",
    np.dtype("int8"): "I8",
    np.dtype("uint64"): "U64",
    np.dtype("uint32"): "U32",
    np.dtype("uint16"): "U16",
    np.dtype("uint8"): "U8",
    np.dtype("bool"): "BOOL",
}

MAX_HEADER_BYTES = 100_000_000     # as engine/io/safetensors.h's kMaxHeaderBytes (and the reference library)


def bf16_bits_to_f32(bits):
    """uint16 BF16 bit patterns -> float32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(values):
    """float32 -> BF16 bit patterns, round to nearest even (NaN kept NaN)."""
    x = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (x + 0x7FFF + ((x >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    nan = np.isnan(np.asarray(values, dtype=np.float32))
    out[nan] = 0x7FC0
    return out


def _to_stored(name, value):
    """Return (dtype name, contiguous little-endian numpy array of stored bytes)."""
    torch = sys.modules.get("torch")     # torch tensors, without importing torch unless it is already in use
    if torch is not None and isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        if t.dtype == torch.bfloat16:
            return "BF16", np.ascontiguousarray(t.view(torch.int16).numpy().view("<u2"))
        value = t.numpy()
    arr = np.asarray(value)
    if arr.dtype not in _NUMPY_TO_NAME:
        raise ValueError(f"tensor {name!r}: unsupported dtype {arr.dtype}")
    dtype = _NUMPY_TO_NAME[arr.dtype]
    return dtype, np.ascontiguousarray(arr, dtype=DTYPES[dtype])


def encode(tensors, metadata=None):
    """Serialize to bytes. tensors: {name: numpy array or torch tensor};
    metadata: {str: str} or None (then no "__metadata__" entry)."""
    return b"".join(encode_parts(tensors, metadata))


class Streamed:
    """A tensor made when it is written: `dtype` (a DTYPES name), `shape`, and
    `blocks()`, an iterable of the tensor's consecutive pieces (numpy arrays or
    torch tensors of that dtype, e.g. row blocks of a transposed view), each
    made as it is written and let go after; `done()` (optional) runs once the
    last piece is written (tinyformer_writer: give the source's pages back)."""

    def __init__(self, dtype, shape, blocks, done=None):
        if dtype not in DTYPES:
            raise ValueError(f"Streamed: dtype {dtype!r}, expected one of {', '.join(DTYPES)}")
        self.dtype, self.shape, self.blocks, self.done = dtype, [int(n) for n in shape], blocks, done

    @property
    def nbytes(self):
        n = DTYPES[self.dtype].itemsize
        for d in self.shape:
            n *= d
        return n


def _streamed_parts(name, value):
    """The bytes of a Streamed, piece by piece; it must make exactly its declared bytes."""
    written = 0
    for block in value.blocks():
        dtype, arr = _to_stored(name, block)
        if dtype != value.dtype:
            raise ValueError(f"tensor {name!r}: a piece of dtype {dtype}, declared {value.dtype}")
        written += arr.nbytes
        yield memoryview(arr.reshape(-1)).cast("B")
    if written != value.nbytes:
        raise ValueError(f"tensor {name!r}: its pieces hold {written} bytes, its shape {value.shape} "
                         f"{value.nbytes}")
    if value.done is not None:
        value.done()


def encode_parts(tensors, metadata=None):
    """encode's bytes as an iterator of parts: the length and header, then each
    tensor's bytes as a view of its own memory (no copy for a contiguous
    little-endian array or CPU tensor), or a Streamed's pieces, each made when
    it is written. safe_write.write_bytes writes them part by part, so writing a
    file holds no second copy of its tensors. The header (every name, dtype and
    shape) is made before the first part is given; a tensor that cannot be
    stored is refused then, before anything is written."""
    stored = {}
    for name, value in tensors.items():
        if not isinstance(name, str) or not name or name == "__metadata__":
            raise ValueError(f"bad tensor name {name!r}")
        stored[name] = (value.dtype, value) if isinstance(value, Streamed) else _to_stored(name, value)
    layout = sorted(stored, key=lambda n: (-DTYPES[stored[n][0]].itemsize, n))
    header = {}
    if metadata is not None:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValueError(f"metadata must map str to str, got {k!r}: {type(v).__name__}")
        header["__metadata__"] = {k: metadata[k] for k in sorted(metadata)}
    offset = 0
    entries = {}
    for name in layout:
        dtype, arr = stored[name]
        size = arr.nbytes
        entries[name] = {"dtype": dtype, "shape": [int(d) for d in arr.shape],
                         "data_offsets": [offset, offset + size]}
        offset += size
    for name in sorted(entries):
        header[name] = entries[name]
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    text += b" " * ((-(8 + len(text))) % 8)
    return _parts([struct.pack("<Q", len(text)), text], layout, stored)


def _parts(head, layout, stored):
    yield from head
    for name in layout:
        value = stored[name][1]
        if isinstance(value, Streamed):
            yield from _streamed_parts(name, value)
        else:
            yield memoryview(value.reshape(-1)).cast("B")


def write(path, tensors, metadata=None, inputs=()):
    """Write a safetensors file by tools/python/safe_write.py's rule (path: PATH or
    (label, PATH); an input of `inputs` is never overwritten)."""
    safe_write.write_bytes(path, encode_parts(tensors, metadata), inputs)


def _object_pairs(pairs):
    """json object_pairs_hook: a dict, refusing a key held twice and strings
    that are no text (an escaped lone surrogate such as "\\ud800")."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"header has the key {key!r} twice in one object; no JSON object may repeat a key")
        for text in (key, value):
            if isinstance(text, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in text):
                raise ValueError(f"header holds a lone surrogate in {text!r}, which is no character")
        out[key] = value
    return out


def _refuse_constant(name):
    raise ValueError(f"header holds {name}, which is not JSON")


def metadata_json(metadata, key):
    """The JSON value a metadata entry holds (`config`, `vocab`, ...), read
    by the header's JSON rules, as the engine reads it: no key twice in any
    object (the engine refuses a config that names "activation" twice; a
    plain json.loads would take the last), no lone surrogate as an object's
    key or value, no NaN (a vocabulary's entries: check_vocabulary)."""
    try:
        return json.loads(metadata[key], object_pairs_hook=_object_pairs, parse_constant=_refuse_constant)
    except ValueError as e:  # json.JSONDecodeError is one
        raise ValueError(f"__metadata__ {key!r}: {e}") from None
    except RecursionError:
        raise ValueError(f"__metadata__ {key!r}: nests arrays or objects deeper than Python's JSON reader follows "
                         f"(about {sys.getrecursionlimit()} levels)") from None


def _header_object(raw):
    """The header bytes as a JSON object, after docs/FORMAT.md's header rules
    (the same as engine/io/safetensors.cpp; both are tested on
    tests/safetensors_headers.json): at least 2 bytes, no byte order mark,
    '{' first, no NUL, valid UTF-8, one JSON object followed only by spaces,
    no key twice in any object."""
    if len(raw) < 2:
        raise ValueError(f"header is {len(raw)} bytes; the smallest header, {{}}, is 2")
    if raw.startswith(b"\xef\xbb\xbf"):
        raise ValueError("header starts with a UTF-8 byte order mark (EF BB BF); a header starts with '{'")
    if raw[:1] != b"{":
        raise ValueError(f"header starts with byte 0x{raw[0]:02X}, not '{{'; a header is one JSON object")
    nul = raw.find(b"\0")
    if nul >= 0:
        raise ValueError(f"header holds a NUL byte at offset {nul}; only spaces may pad a header")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"header is not valid UTF-8 (byte 0x{raw[e.start]:02X} at offset {e.start})") from None
    decoder = json.JSONDecoder(object_pairs_hook=_object_pairs, parse_constant=_refuse_constant)
    try:
        header, end = decoder.raw_decode(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"header is not valid JSON: {e}") from None
    except RecursionError:    # "[[[[..." deeper than the JSON reader's recursion: refused, not a traceback
        raise ValueError(f"header nests arrays or objects deeper than Python's JSON reader follows (about "
                         f"{sys.getrecursionlimit()} levels); a header is one object of flat entries") from None
    if text[end:].strip(" "):
        raise ValueError(f"header has {len(text) - end} characters after its JSON object; only spaces may pad a header")
    return header


def parse_header(buf):
    """Validate the header of a whole file held in bytes.
    Returns (tensor entries sorted by name, metadata dict, data start)."""
    if len(buf) < 8:
        raise ValueError(f"file too short for a safetensors header ({len(buf)} bytes)")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > MAX_HEADER_BYTES or 8 + n > len(buf):
        raise ValueError(f"header length {n} does not fit in the file ({len(buf)} bytes)")
    header = _header_object(bytes(buf[8:8 + n]))
    if not isinstance(header, dict):
        raise ValueError("header is not a JSON object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ValueError("__metadata__ must be an object of string values")
    data_len = len(buf) - 8 - n
    spans = []
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise ValueError(f"tensor {name!r}: entry must have exactly dtype, shape, data_offsets")
        if not isinstance(e["dtype"], str) or e["dtype"] not in DTYPES:
            raise ValueError(f"tensor {name!r}: unknown dtype {e['dtype']!r}")
        shape = e["shape"]
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                  for d in shape):
            raise ValueError(f"tensor {name!r}: bad shape {shape!r}")
        offs = e["data_offsets"]
        if (not isinstance(offs, list) or len(offs) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) for o in offs)):
            raise ValueError(f"tensor {name!r}: bad data_offsets {offs!r}")
        begin, end = offs
        itemsize = DTYPES[e["dtype"]].itemsize
        count = 1                 # Python ints do not wrap: refused as engine/io/safetensors.cpp refuses,
        for d in shape:           # an axis or a running byte count beyond 64 bits
            if d >= 1 << 63 or (d != 0 and count * d * itemsize >= 1 << 64):
                raise ValueError(f"tensor {name!r}: shape {shape} has too many elements")
            count *= d
        expected = count * itemsize
        if not 0 <= begin <= end <= data_len:
            raise ValueError(f"tensor {name!r}: data_offsets {offs} outside the data ({data_len} bytes)")
        if end - begin != expected:
            raise ValueError(f"tensor {name!r}: data_offsets {offs} hold {end - begin} bytes, "
                             f"shape {shape} {e['dtype']} needs {expected}")
        spans.append((begin, end, name))
    spans.sort()
    pos = 0
    for begin, end, name in spans:
        if begin < pos:
            raise ValueError(f"tensor {name!r}: data overlaps the previous tensor")
        if begin > pos:
            raise ValueError(f"tensor {name!r}: hole in the data before offset {begin}")
        pos = end
    if pos != data_len:
        raise ValueError(f"{data_len - pos} bytes after the last tensor are not indexed")
    return {k: header[k] for k in sorted(header)}, metadata, 8 + n


def file_view(f):
    """The bytes of the open file `f`: a read-only mapping when it is a regular,
    non-empty file (only the pages used are read: parse_header reads the header
    alone, not the tensors), else its bytes read."""
    info = os.fstat(f.fileno())
    if stat.S_ISREG(info.st_mode) and info.st_size > 0:
        try:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            pass                  # a file system that cannot map: read it
    return f.read()


def read_header(path):
    """(tensor entries sorted by name, metadata, data start) of a file, every
    rule of the header checked against the file's length; no tensor is read."""
    with open(path, "rb") as f:
        return parse_header(file_view(f))


def _arrays(buf, widen_bf16):
    """(tensors as numpy views of buf (BF16 widened: a new array), metadata)."""
    entries, metadata, start = parse_header(buf)
    tensors = {}
    for name, e in entries.items():
        begin, end = e["data_offsets"]
        arr = np.frombuffer(buf, dtype=DTYPES[e["dtype"]], count=(end - begin) // DTYPES[e["dtype"]].itemsize,
                            offset=start + begin).reshape(e["shape"])
        if e["dtype"] == "BF16" and widen_bf16:
            arr = bf16_bits_to_f32(arr)
        tensors[name] = arr
    return tensors, metadata


def decode(buf, widen_bf16=True):
    """(tensors, metadata) from bytes; BF16 is widened to float32 unless
    widen_bf16=False (then its raw uint16 bit patterns are returned)."""
    tensors, metadata = _arrays(buf, widen_bf16)
    return {name: arr.copy() for name, arr in tensors.items()}, metadata


def views(buf, widen_bf16=True):
    """decode without the copies: each tensor a numpy view of `buf` (a mapped
    file's tensors then take no memory until read), but a BF16 one widened and
    one not aligned to its element size (a file this module did not write),
    which are copies."""
    tensors, metadata = _arrays(buf, widen_bf16)
    return {name: arr if arr.flags.aligned else arr.copy() for name, arr in tensors.items()}, metadata


def read(path, widen_bf16=True):
    """(tensors: {name: numpy array}, metadata: {str: str}) of a file."""
    with open(path, "rb") as f:
        return decode(f.read(), widen_bf16)
