"""The one reader of every PyTorch file the converters take (ckpt.pt,
state_dict.pt, pytorch_model.bin): torch.save's zip format and its legacy
(before torch 1.6) format, read by the project's own code. torch.load and
torch.jit are never called, so no version of torch's parser is in the trust
path and nothing in a file can run.

How the file's kind is decided (as torch.load decides it, by its first bytes):

    "PK\\x03\\x04"          torch.save's zip format (every torch.save since 1.6)
    the pickled magic     the legacy format: pickles of the magic number, the
    0x1950a86a20f9469cfc6c protocol (1001) and sys_info, then the object, then
                          the list of storage keys, then each storage as an
                          int64 element count and its bytes
    anything else         refused

The zip is read strictly, by its own parser (not Python's zipfile, which looks
for the end record only in the last 65,557 bytes while torch looks further):
the end record must end exactly where the file does (a TorchScript archive
with 69,000 zero bytes after it is refused here), the central directory and
every local header must agree, members may not overlap, and the members are
exactly torch.save's:

    <name>/data.pkl                  the object, read by pickle_reader.py
    <name>/data/<key>                one tensor storage each
    <name>/version, byteorder (little only), .data/version,
    .data/serialization_id, .format_version, .storage_alignment

Anything else is refused by name (code/ and constants.pkl: a TorchScript
archive). A member is stored or deflated; others (bzip2, LZMA, ...) are
refused. The pickle allows only the globals in `_TorchPickle.allowed`:
OrderedDict, the typed storage classes and torch._utils' two tensor
rebuilders, each done here by the reader's own code.

Every cost is bounded by the file's size N (docs/BAD_INPUT.md):
- members unpack to at most UNPACK_MULTIPLE * N bytes in all (checked on the
  declared sizes before anything is inflated; inflating stops at the declared
  size, and a member whose data disagrees with it is refused);
- a storage's bytes are exactly its element count times its element size,
  and they lie inside the file (the legacy format: checked before any bytes
  are taken); storages are views of the file's bytes, never allocated from a
  claimed size;
- the tensors as the object holds them, each appearance taken as a copy of
  its own (a record under 20,000 names counts 20,000 times) and each tensor
  record as at least RECORD_BYTES, add up to at most VIEW_MULTIPLE * N bytes
  (6,000 views of one storage are refused);
- the pickle's own costs: pickle_reader.py (linear in its length), and
  data.pkl is at most MAX_PICKLE_BYTES (Python's objects take up to ~140
  bytes per byte of pickle).

    obj = read("ckpt.pt", "nanoGPT checkpoint")    # tensors are StoredTensor (numpy)
    obj = to_torch(obj)                            # ... or torch tensors
    obj = load_torch_file("ckpt.pt", "nanoGPT checkpoint")         # both at once
    release(tensor)                                # its mapped pages out of the resident memory
    state = load_state_dict_file("state.pt")       # {name: torch tensor}, nothing else

How the bytes are held: read() maps the file (mmap, opened read-only; the
mapping is private, so the file is never written through it) instead of
reading it, so the storages of stored (uncompressed) zip members and of the
legacy format are numpy views of the mapping and take no memory of their own
until they are touched; a deflated member still inflates into memory. After
its CRC is checked, a member's pages are given back (madvise MADV_DONTNEED:
the kernel's page cache keeps them, the process's resident memory does not),
and release(tensor) does the same for a tensor's bytes once a converter has
written them: converting a 475 MiB checkpoint holds about one tensor of it
at a time, not the whole file (docs/PERFORMANCE.md, "Converting"). Writing
into a storage writes a private copy of its page, which a release drops:
the converters only read the tensors they are given. A file changed or
truncated by another program while it is mapped is outside the contract
(the tensors may show the new bytes, or the process may be killed by
SIGBUS): convert a file nothing else is writing. parse(buf) takes bytes held
in memory as well.

Every converter reads PyTorch files through these (tools/python/families/*,
tinyformer_export.py): this module sits below all of them.

Raises ValueError("PATH: ...") in one line. numpy and the standard library;
torch only inside to_torch and the loaders that return torch tensors.
"""

import collections
import math
import mmap
import os
import stat
import struct
import sys
import weakref
import zlib

import numpy as np

import pickle_reader
from pickle_reader import Refused

__all__ = ["read", "parse", "to_torch", "load_torch_file", "load_state_dict_file", "without_parallel_prefix",
           "file_bytes", "file_map", "release", "mapping_of", "StoredTensor", "UNPACK_MULTIPLE", "VIEW_MULTIPLE",
           "MAX_PICKLE_BYTES"]

UNPACK_MULTIPLE = 4        # all members unpacked <= 4 x the file's size
VIEW_MULTIPLE = 4          # all tensors, each copied out, <= 4 x the file's size
MAX_PICKLE_BYTES = 8 << 20   # GPT-2 124M's data.pkl is 20 KB; Python objects cost ~140x a pickle's bytes
LARGEST = 1 << 48          # no offset, size or stride of a real tensor is this large
MAX_DIMS = 32              # numpy's limit
RECORD_BYTES = 64          # what one tensor record counts for at least, however small
CRC_CHUNK = 16 << 20       # a member's CRC is taken 16 MiB at a time (a mapped file's pages then given back)

LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
LEGACY_PROTOCOL = 1001
ZIP_LOCAL = b"PK\x03\x04"

# torch.save's storage classes: numpy dtype of the bytes, and the torch dtype's name.
# bfloat16 has no numpy type: its raw 16-bit patterns are kept as int16.
STORAGE_DTYPES = {
    "FloatStorage": ("<f4", "float32"), "DoubleStorage": ("<f8", "float64"), "HalfStorage": ("<f2", "float16"),
    "BFloat16Storage": ("<i2", "bfloat16"), "LongStorage": ("<i8", "int64"), "IntStorage": ("<i4", "int32"),
    "ShortStorage": ("<i2", "int16"), "CharStorage": ("i1", "int8"), "ByteStorage": ("u1", "uint8"),
    "BoolStorage": ("?", "bool"), "UntypedStorage": ("u1", "uint8"),
}
COMPRESSION = {0: "stored", 8: "deflate", 12: "bzip2", 14: "LZMA", 93: "zstd", 95: "xz", 98: "PPMd"}


class StorageType:
    """What GLOBAL torch.FloatStorage (etc.) gives: only a dtype, for a persistent id."""

    def __init__(self, name):
        self.name = name
        self.numpy, self.dtype = STORAGE_DTYPES[name]
        self.itemsize = np.dtype(self.numpy).itemsize


class Storage:
    """One storage record: `array` (1-D numpy, `numel` elements) once its bytes are read."""

    def __init__(self, kind, key, numel):
        self.kind, self.key, self.numel = kind, key, numel
        self.array = None


class StoredTensor:
    """A tensor as the file describes it: a strided view of a storage.
    `array` is the numpy view (bfloat16 as its int16 bit patterns), `dtype`
    torch's dtype name, `shape` a tuple."""

    def __init__(self, storage, offset, shape, stride, requires_grad):
        self.storage, self.offset, self.shape, self.stride = storage, offset, shape, stride
        self.requires_grad = requires_grad
        self.array = None

    @property
    def dtype(self):
        return self.storage.kind.dtype

    @property
    def nbytes(self):
        return math.prod(self.shape) * self.storage.kind.itemsize

    def __repr__(self):
        return f"StoredTensor({self.dtype}, shape={list(self.shape)})"


def _int(value):
    return type(value) is int


def _ordered_dict(*args):
    if args:
        raise Refused("an OrderedDict built from arguments (torch.save writes it empty, then its items)")
    return collections.OrderedDict()


class _TorchPickle:
    """The allowed globals of a torch.save pickle, and the tensors they made."""

    def __init__(self, persistent_load):
        self.tensors = []
        self.persistent_load = persistent_load
        self.allowed = {("collections", "OrderedDict"): _ordered_dict,
                        ("torch._utils", "_rebuild_tensor_v2"): self.rebuild_tensor,
                        ("torch._utils", "_rebuild_parameter"): self.rebuild_parameter}
        for name in STORAGE_DTYPES:
            self.allowed[("torch", name)] = StorageType(name)

    def load(self, data, start=0):
        """(object, end offset, each appearance of a tensor in the object)"""
        reader = pickle_reader.Unpickler(data, allowed=self.allowed, persistent_load=self.persistent_load,
                                         start=start, leaves=(StoredTensor,))
        return reader.load(), reader.end, reader.leaves

    def rebuild_tensor(self, storage, offset, size, stride, requires_grad=False, hooks=None, metadata=None):
        """torch._utils._rebuild_tensor_v2's arguments, checked; the view is made in _finish."""
        if (not isinstance(storage, Storage) or not _int(offset) or type(size) is not tuple
                or type(stride) is not tuple or len(size) != len(stride) or len(size) > 64
                or not all(_int(v) for v in (*size, *stride)) or type(requires_grad) is not bool):
            raise Refused("a tensor record with a malformed storage, offset, size or stride")
        if hooks not in (None, {}) or metadata not in (None, {}):
            raise Refused("a tensor record with backward hooks or metadata (conjugate or negative bits)")
        tensor = StoredTensor(storage, offset, size, stride, requires_grad)
        self.tensors.append(tensor)
        return tensor

    @staticmethod
    def rebuild_parameter(data, requires_grad=False, hooks=None):
        if not isinstance(data, StoredTensor) or hooks not in (None, {}):
            raise Refused("a Parameter record without a tensor, or with backward hooks")
        return data


def _storage_id(pid, size):
    """(kind, key, numel) of a ("storage", StorageType, key, location, numel, ...) id."""
    if (type(pid) is not tuple or len(pid) != size or pid[0] != "storage" or not isinstance(pid[1], StorageType)
            or type(pid[2]) is not str or type(pid[3]) is not str or not _int(pid[4]) or pid[4] < 0):
        raise Refused(f"a persistent id that is not a tensor storage record ({pickle_reader.shown(pid)})")
    return pid[1], pid[2], pid[4]


def _finish(tensors, appearances, file_size):
    """Check every tensor record against its storage, and the tensors as the
    object holds them (each appearance a copy of its own, each record at least
    RECORD_BYTES) against the file; then make the numpy views."""
    for t in tensors:
        if t.storage.array is None:
            raise Refused(f"storage {t.storage.key[:40]!r} has no data")
        if len(t.shape) > MAX_DIMS or not all(0 <= v < LARGEST for v in (t.offset, *t.shape, *t.stride)):
            raise Refused(f"a tensor record with more than {MAX_DIMS} dimensions, or a negative or impossibly "
                          f"large offset, size or stride")
        if math.prod(n for n in t.shape if n) >= LARGEST:
            raise Refused("a tensor record whose sizes multiply past 2**48 elements")
        if math.prod(t.shape) and t.offset + sum((n - 1) * s for n, s in zip(t.shape, t.stride)) >= t.storage.numel:
            raise Refused(f"a tensor record of shape {list(t.shape)[:8]} outside its storage of "
                          f"{t.storage.numel} elements")
    total = sum(max(t.nbytes, RECORD_BYTES) for t in appearances) + RECORD_BYTES * len(tensors)
    if total > VIEW_MULTIPLE * file_size:
        raise Refused(f"its tensors, each taken as a copy, would take {total} bytes: more than {VIEW_MULTIPLE} "
                      f"times the file's {file_size} (views sharing one storage; save copies instead)")
    for t in tensors:
        base = t.storage.array
        item = base.itemsize
        if math.prod(t.shape) == 0:
            t.array = np.empty(t.shape, dtype=base.dtype)
        else:
            t.array = np.lib.stride_tricks.as_strided(base[t.offset:], shape=t.shape,
                                                      strides=[s * item for s in t.stride])


def _storage_array(raw, kind, numel, key):
    if len(raw) != numel * kind.itemsize:
        raise Refused(f"storage {key[:40]!r} holds {len(raw)} bytes, not {numel} {kind.dtype} elements "
                      f"({numel * kind.itemsize} bytes)")
    array = np.frombuffer(raw, dtype=kind.numpy)
    return array if array.flags.aligned else array.copy()


# --- the zip format -----------------------------------------------------------
class _Member:
    def __init__(self, name, method, flags, crc, packed, size, offset):
        self.name, self.method, self.flags, self.crc = name, method, flags, crc
        self.packed, self.size, self.offset = packed, size, offset
        self.start = None


def _u(buf, fmt, at, what):
    end = at + struct.calcsize(fmt)
    if at < 0 or end > len(buf):
        raise Refused(f"the zip's {what} runs past the end of the file")
    return struct.unpack_from(fmt, buf, at)


def _end_record(buf):
    """Offset of the end-of-central-directory record, which must end exactly
    at the end of the file (after its own comment)."""
    n = len(buf)
    sig = b"PK\x05\x06"
    low = max(0, n - 22 - 0xFFFF)
    at = buf.rfind(sig, low)
    while at >= 0:
        if at + 22 <= n and at + 22 + _u(buf, "<H", at + 20, "end record")[0] == n:
            return at
        at = buf.rfind(sig, low, at + 3)
    anywhere = buf.rfind(sig)
    if anywhere >= 0:
        raise Refused(f"bytes after the zip's end record ({max(n - anywhere - 22, 1)} at least): something was "
                      f"appended to the archive, or it is not one")
    raise Refused("it starts as a zip but has no zip end record")


def _zip_members(buf):
    """{name: _Member} of the archive, every structure checked."""
    end = _end_record(buf)
    disk, cd_disk, entries_here, entries, cd_size, cd_offset = _u(buf, "<4xHHHHII", end, "end record")
    directory_end = end
    if end >= 20 and buf[end - 20:end - 16] == b"PK\x06\x07":           # zip64 locator
        z64 = _u(buf, "<4xIQI", end - 20, "zip64 locator")[1]
        if z64 + 56 > end - 20 or buf[z64:z64 + 4] != b"PK\x06\x06":
            raise Refused("the zip64 end record is not where its locator says")
        disk, cd_disk, entries_here, entries, cd_size, cd_offset = _u(buf, "<12x2x2xIIQQQQ", z64, "zip64 end record")
        directory_end = z64
    if disk or cd_disk or entries_here != entries:
        raise Refused("a multi-disk zip")
    if cd_offset + cd_size != directory_end:
        raise Refused(f"the zip's central directory ({cd_size} bytes at {cd_offset}) does not end at its end record")
    members, at = {}, cd_offset
    for _ in range(entries):
        (sig, flags, method, crc, packed, size, name_len, extra_len, comment_len, offset) = _u(
            buf, "<4s4xHH4xIIIHHH8xI", at, "central directory")
        if sig != b"PK\x01\x02":
            raise Refused(f"a broken central directory entry at offset {at}")
        name_end = at + 46 + name_len
        extra = bytes(buf[name_end:name_end + extra_len])
        try:
            name = bytes(buf[at + 46:name_end]).decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(f"a member name that is not UTF-8 at offset {at}") from None
        size, packed, offset = _zip64_sizes(extra, size, packed, offset, name)
        at = name_end + extra_len + comment_len
        if at > directory_end:
            raise Refused("the central directory runs past its end")
        if name in members:
            raise Refused(f"the member {name[:80]!r} twice")
        members[name] = _Member(name, method, flags, crc, packed, size, offset)
    if at != directory_end:
        raise Refused(f"{directory_end - at} stray bytes in the central directory")
    _place_members(buf, members, cd_offset)
    return members


def _zip64_sizes(extra, size, packed, offset, name):
    """The 0xFFFFFFFF fields of a central entry, from its zip64 extra field (id 1)."""
    wanted = [v == 0xFFFFFFFF for v in (size, packed, offset)]
    at = 0
    while at + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, at)
        if tag == 1:
            fields = list(struct.unpack_from(f"<{length // 8}Q", extra, at + 4))
            values = [size, packed, offset]
            for i in range(3):
                if wanted[i]:
                    if not fields:
                        raise Refused(f"member {name[:80]!r}: a zip64 field is missing")
                    values[i] = fields.pop(0)
            return values
        at += 4 + length
    if any(wanted):
        raise Refused(f"member {name[:80]!r}: a 32-bit size or offset without its zip64 field")
    return size, packed, offset


def _place_members(buf, members, cd_offset):
    """Each local header matches its central entry; the data lie before the
    central directory and no two members overlap."""
    previous_end = 0
    for m in sorted(members.values(), key=lambda m: m.offset):
        if m.offset < previous_end:
            raise Refused(f"member {m.name[:80]!r} overlaps the member before it")
        sig, flags, method, name_len, extra_len = _u(buf, "<4s2xHH16xHH", m.offset, "local header")
        name = bytes(buf[m.offset + 30:m.offset + 30 + name_len])
        if sig != ZIP_LOCAL or name != m.name.encode("utf-8") or method != m.method:
            raise Refused(f"member {m.name[:80]!r}: its local header does not match the central directory")
        if m.flags & 0x41:
            raise Refused(f"member {m.name[:80]!r} is encrypted")
        if m.method not in (0, 8):
            kind = COMPRESSION.get(m.method, "unknown")
            raise Refused(f"member {m.name[:80]!r} is compressed with method {m.method} ({kind}); only stored "
                          f"and deflate are read")
        if m.method == 0 and m.packed != m.size:
            raise Refused(f"member {m.name[:80]!r} is stored but declares {m.packed} bytes packed, {m.size} unpacked")
        m.start = m.offset + 30 + name_len + extra_len
        previous_end = m.start + m.packed
        if previous_end > cd_offset:
            raise Refused(f"member {m.name[:80]!r} runs into the central directory")


def _unpack(buf, m):
    """The member's bytes: a view of the file (stored) or inflated, never past
    its declared size; the CRC must match."""
    packed = memoryview(buf)[m.start:m.start + m.packed]
    if m.method == 0:
        data = packed
    else:
        inflate = zlib.decompressobj(-15)
        try:
            data = inflate.decompress(packed, m.size + 1)
        except zlib.error as e:
            raise Refused(f"member {m.name[:80]!r} does not inflate ({e})") from None
        if len(data) > m.size or not inflate.eof:
            raise Refused(f"member {m.name[:80]!r} inflates to more than the {m.size} bytes it declares")
        if len(data) != m.size:
            raise Refused(f"member {m.name[:80]!r} inflates to {len(data)} bytes, not the {m.size} it declares")
        data = bytearray(data)
    crc, view = 0, memoryview(data)
    for at in range(0, len(data), CRC_CHUNK):     # a mapped member's pages go as soon as the CRC has read them
        crc = zlib.crc32(view[at:at + CRC_CHUNK], crc)
        if m.method == 0:
            _release_range(buf, m.start + at, m.start + min(at + CRC_CHUNK, m.packed))
    if crc != m.crc:
        raise Refused(f"member {m.name[:80]!r} fails its CRC check (the file is damaged)")
    return data


TORCH_SAVE_EXTRAS = ("version", "byteorder", ".data/version", ".data/serialization_id", ".format_version",
                     ".storage_alignment")


def _read_zip(buf):
    members = _zip_members(buf)
    _release_range(buf, 0, len(buf))    # the headers' pages (a fault maps the large folio around each one)
    pkls = [n for n in members if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pkls) != 1:
        raise Refused("not a torch.save archive: no single <name>/data.pkl")
    prefix = pkls[0][:-len("/data.pkl")]
    for name in members:
        rest = name[len(prefix) + 1:] if name.startswith(prefix + "/") else None
        if rest == "constants.pkl" or (rest or "").startswith(("code/", "constants/")):
            raise Refused("a TorchScript archive (torch.jit.save: code/ and constants.pkl), not a torch.save "
                          "file of weights; save the model's state_dict instead")
        ok = rest is not None and (rest == "data.pkl" or rest in TORCH_SAVE_EXTRAS
                                   or (rest.startswith("data/") and len(rest) > 5 and "/" not in rest[5:]))
        if not ok:
            raise Refused(f"an unexpected member {name[:80]!r}: a torch.save archive holds data.pkl, data/<key> "
                          f"and version records only, in one folder")
    unpacked = sum(m.size for m in members.values())
    if unpacked > UNPACK_MULTIPLE * len(buf):
        raise Refused(f"its members unpack to {unpacked} bytes: more than {UNPACK_MULTIPLE} times the file's "
                      f"{len(buf)}")
    if members[pkls[0]].size > MAX_PICKLE_BYTES:
        raise Refused(f"data.pkl is {members[pkls[0]].size} bytes, more than {MAX_PICKLE_BYTES}")
    byteorder = members.get(prefix + "/byteorder")
    if byteorder is not None and bytes(_unpack(buf, byteorder)).strip() != b"little":
        raise Refused("saved big-endian; only little-endian archives are read")

    storages = {}

    def persistent_load(pid):
        kind, key, numel = _storage_id(pid, 5)
        storage = storages.get(key)
        if storage is None:
            member = members.get(f"{prefix}/data/{key}")
            if member is None:
                raise Refused(f"no storage record data/{key[:40]!r}")
            storage = storages[key] = Storage(kind, key, numel)
            storage.array = _storage_array(_unpack(buf, member), kind, numel, key)
        elif storage.kind.numpy != kind.numpy or storage.numel != numel:
            raise Refused(f"storage {key[:40]!r} named with two types or sizes")
        return storage

    reader = _TorchPickle(persistent_load)
    obj, _, appearances = reader.load(bytes(_unpack(buf, members[pkls[0]])))
    _finish(reader.tensors, appearances, len(buf))
    return obj


# --- the legacy format --------------------------------------------------------
def _is_legacy(buf):
    """The file starts with a pickle (any protocol) of the legacy magic number."""
    try:
        return pickle_reader.Unpickler(bytes(buf[:64])).load() == LEGACY_MAGIC
    except Refused:
        return False


def _read_legacy(buf):
    data = bytes(buf[:2 * MAX_PICKLE_BYTES])     # the pickles; storages are then views of buf
    magic, at = _plain(data, 0, "its magic number")
    protocol, at = _plain(data, at, "its protocol version")
    if protocol != LEGACY_PROTOCOL:
        raise Refused(f"legacy protocol version {pickle_reader.shown(protocol)}, not {LEGACY_PROTOCOL}")
    sys_info, at = _plain(data, at, "its sys_info")
    if type(sys_info) is not dict or sys_info.get("little_endian") is not True:
        raise Refused("saved big-endian (sys_info); only little-endian files are read")

    storages = {}

    def persistent_load(pid):
        if type(pid) is tuple and pid and pid[0] == "module":
            raise Refused("a pickled module (its source code is saved with it): save its state_dict instead")
        kind, key, numel = _storage_id(pid, 6)
        if pid[5] is not None:
            raise Refused("a storage view (torch before 1.0): re-save the file with a current torch")
        storage = storages.get(key)
        if storage is None:
            storage = storages[key] = Storage(kind, key, numel)
        elif storage.kind.numpy != kind.numpy or storage.numel != numel:
            raise Refused(f"storage {key[:40]!r} named with two types or sizes")
        return storage

    reader = _TorchPickle(persistent_load)
    if len(data) - at > MAX_PICKLE_BYTES:
        data = data[:at + MAX_PICKLE_BYTES]      # the object's pickle must end within the limit
    obj, at, appearances = reader.load(data, at)
    keys, at = _plain(bytes(buf[at:at + MAX_PICKLE_BYTES]), 0, "its list of storage keys", at)
    if type(keys) is not list or not all(type(k) is str for k in keys) or len(set(keys)) != len(keys):
        raise Refused("its list of storage keys is not a list of distinct strings")
    for key in keys:
        storage = storages.get(key)
        if storage is None:
            raise Refused(f"storage {key[:40]!r} is listed but no tensor names it")
        if at + 8 > len(buf):
            raise Refused(f"the file ends before storage {key[:40]!r}")
        numel = struct.unpack_from("<q", buf, at)[0]
        at += 8
        nbytes = numel * storage.kind.itemsize
        if numel != storage.numel:
            raise Refused(f"storage {key[:40]!r} holds {numel} elements, but the pickle says {storage.numel}")
        if nbytes > len(buf) - at:
            raise Refused(f"storage {key[:40]!r} claims {nbytes} bytes, but only {len(buf) - at} remain in the file")
        storage.array = _storage_array(memoryview(buf)[at:at + nbytes], storage.kind, numel, key)
        at += nbytes
    if at != len(buf):
        raise Refused(f"{len(buf) - at} bytes after the last storage")
    _finish(reader.tensors, appearances, len(buf))
    return obj


def _plain(data, at, what, base=0):
    """A plain-data pickle of `data` at `at`; the end is returned as base + end."""
    try:
        reader = pickle_reader.Unpickler(data, start=at)
        return reader.load(), base + reader.end
    except Refused as e:
        raise Refused(f"{what}: {e}") from None


# --- the mapping ---------------------------------------------------------------
# {address of a mapping's first byte: the mmap}, for release(); an entry goes
# when its mapping does (no tensor of it is left).
_MAPPINGS = weakref.WeakValueDictionary()


def file_map(path):
    """The file's bytes as a private read-only-file mapping (mmap.ACCESS_COPY:
    opened O_RDONLY, so nothing reaches the file; numpy views of it are
    writable, as torch.from_numpy wants), registered for release(). Only a
    regular file (a FIFO would hang, a device never end): Refused otherwise.
    An empty file, or one on a file system that cannot map it, is read
    (file_bytes)."""
    with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK)) as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused("not a regular file")
        try:
            mapping = mmap.mmap(f.fileno(), info.st_size, access=mmap.ACCESS_COPY) if info.st_size else None
        except (OSError, ValueError):
            mapping = None
    if mapping is None:
        return file_bytes(path)
    _MAPPINGS[np.frombuffer(mapping, dtype=np.uint8, count=1).ctypes.data] = mapping
    return mapping


def _release_range(buf, start, end):
    """Drop bytes [start, end) of a mapping from the process's resident memory
    (whole pages: the first one from its start). The page cache keeps them; a
    later read maps them back with the file's bytes. Memory only: a kernel that
    refuses leaves them resident, nothing else changes."""
    if not isinstance(buf, mmap.mmap) or end <= start:
        return
    start -= start % mmap.PAGESIZE
    end = min(end, len(buf))
    try:
        buf.madvise(mmap.MADV_DONTNEED, start, end - start)
    except (OSError, ValueError):
        pass


def mapping_of(tensor):
    """(mapping, first byte, end) of the bytes a torch tensor or numpy array
    spans inside a mapping made by file_map; None when it lies in none (a
    copy, a module's own parameters, a bytearray's view)."""
    if hasattr(tensor, "data_ptr"):                       # torch: strides are never negative
        if tensor.numel() == 0:
            return None
        low = tensor.data_ptr()
        high = low + tensor.element_size() * (1 + sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride())))
    else:
        if tensor.size == 0:
            return None
        low, high = np.byte_bounds(tensor)
    for base, mapping in list(_MAPPINGS.items()):
        if base <= low and high <= base + len(mapping):
            return mapping, low - base, high - base
    return None


def release(tensor, whole=False):
    """Give the pages of a tensor read from a mapped file (read(), to_torch)
    back to the page cache once it has been used (written to the output): the
    process's resident memory then holds about one tensor at a time. whole:
    the whole mapping holding it (once every tensor of the file is used: a
    fault also maps the pages around the one read, up to the next tensor's).
    Nothing happens for a tensor outside every mapping. Its values stay
    readable: a later read brings the file's bytes back."""
    found = mapping_of(tensor)
    if found is not None:
        mapping, start, end = found
        _release_range(mapping, *((0, len(mapping)) if whole else (start, end)))


# --- the entry points ---------------------------------------------------------
def file_bytes(path, limit=None):
    """The file's bytes (a bytearray, so storages can be writable views of it).
    Only a regular file (a FIFO would hang, a device never end), and at most
    `limit` bytes when one is given: Refused otherwise, before reading."""
    with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK)) as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused("not a regular file")
        if limit is not None and info.st_size > limit:
            raise Refused(f"{info.st_size} bytes, more than the limit of {limit}")
        buf = bytearray(info.st_size)
        if f.readinto(buf) != info.st_size or f.read(1):
            raise Refused("the file changed size while it was read")
    return buf


def parse(buf):
    """The object of a torch.save file's bytes (a bytearray or file_map's
    mapping; storages are views of it). Raises Refused,
    or for a malformed file possibly struct.error, OverflowError, IndexError,
    TypeError or MemoryError, which read() turns into its one line."""
    if buf[:4] == ZIP_LOCAL:
        obj = _read_zip(buf)
    elif _is_legacy(buf):
        obj = _read_legacy(buf)
    else:
        raise Refused("not a torch.save file: neither torch's zip format (it starts with PK\\x03\\x04) nor its "
                      "legacy format (the pickled magic number)")
    _release_range(buf, 0, len(buf))    # what reading touched: the tensors are read again when used
    return obj


def read(path, what="checkpoint"):
    """The object a torch.save file holds, tensors as StoredTensor. Raises
    ValueError "PATH: ..." naming what is wrong in one line."""
    shown = str(path)
    try:
        return parse(file_map(path))
    except Refused as e:
        raise ValueError(f"{shown}: refused as a {what}: {e}") from None
    except OSError as e:
        raise ValueError(f"{shown}: cannot read the {what}: {e.strerror or e}") from None
    except MemoryError:
        raise ValueError(f"{shown}: not enough memory to read the {what}") from None
    except (struct.error, OverflowError, IndexError, TypeError, ValueError) as e:
        raise ValueError(f"{shown}: refused as a {what}: malformed ({type(e).__name__}: {str(e)[:200]})") from None


def to_torch(obj):
    """The same object with every StoredTensor as a torch tensor (views of one
    storage stay views of one torch storage, as torch.load makes them)."""
    import torch
    bases = {}

    def tensor(t):
        base = bases.get(id(t.storage))
        if base is None:
            base = torch.from_numpy(t.storage.array)
            if t.dtype == "bfloat16":
                base = base.view(torch.bfloat16)
            bases[id(t.storage)] = base
        if not math.prod(t.shape):
            return torch.empty(t.shape, dtype=base.dtype)
        return torch.as_strided(base, t.shape, t.stride, t.offset)

    def convert(value):
        if isinstance(value, StoredTensor):
            return tensor(value)
        if type(value) is collections.OrderedDict:
            out = collections.OrderedDict((k, convert(v)) for k, v in value.items())
            out.__dict__.update(value.__dict__)           # _metadata: plain data, checked by the reader
            return out
        if type(value) is dict:
            return {k: convert(v) for k, v in value.items()}
        if type(value) is list:
            return [convert(v) for v in value]
        if type(value) is tuple:
            return tuple(convert(v) for v in value)
        return value

    return convert(obj)


def load_torch_file(path, what="checkpoint"):
    """The object a torch.save file holds, with torch tensors: read() then
    to_torch(). torch.load is never called, so nothing in the file can run.
    Raises ValueError "PATH: ..." naming the file and the reason."""
    return to_torch(read(path, what))


_RESAVE = ("re-save the weights alone with torch.save(model.state_dict(), PATH), or, if you trust the file, load "
           "it yourself and call the Python API (export_encoder_decoder, export_decoder_only, export_encoder_only: "
           "pydoc3 tools/python/tinyformer_export.py)")


def load_state_dict_file(path, shown=None):
    """{name: tensor} of a torch.save file (load_torch_file: tensors and plain
    containers only). Raises ValueError saying why and what to do (a pickled
    module, an object of another class, a dict holding more than tensors);
    `shown` names the file in the message (default: path)."""
    shown = shown or str(path)
    try:
        state = load_torch_file(path, "state_dict")
    except ValueError as e:
        why = str(e).removeprefix(str(path) + ": ")
        if "refused" not in why:
            raise ValueError(f"{shown}: {why}") from None
        raise ValueError(f"{shown}: {why}; loading it needs more than tensors, and unpickling that could run "
                         f"code; {_RESAVE}") from None
    return _only_tensors(state, shown)


def _only_tensors(state, shown):
    import torch
    if not isinstance(state, dict):
        raise ValueError(f"{shown}: holds a {type(state).__name__}, not a state_dict (a dict of name -> tensor); "
                         f"{_RESAVE}")
    for name, value in state.items():
        if not isinstance(name, str) or not torch.is_tensor(value):
            raise ValueError(f"{shown}: its entry {pickle_reader.shown(name)} is a {type(value).__name__}, not a tensor: not a "
                             f"state_dict (a dict of name -> tensor); pass the state_dict itself")
    return dict(state)


_PARALLEL_PREFIX = "module."


def without_parallel_prefix(state, shown):
    """nn.DataParallel / DistributedDataParallel save every name under `module.`:
    read them without it (and say so, as the exporter's note)."""
    if state and all(k.startswith(_PARALLEL_PREFIX) for k in state):
        print(f"tinyformer_export: note: {shown}: every name starts with \"module.\" (a state_dict of "
              f"nn.DataParallel / DistributedDataParallel); reading the names without it", file=sys.stderr)
        return {k[len(_PARALLEL_PREFIX):]: v for k, v in state.items()}
    return state
