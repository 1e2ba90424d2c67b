"""The project's own unpickler: reads a stranger's pickle as plain data, and
nothing in it can run.

Python's pickle is a small stack machine whose GLOBAL and REDUCE opcodes
import and call any function the file names: that is how a checkpoint runs
code. This reader is written opcode by opcode (no pickle.Unpickler under it),
so the only things it can ever build are the ones listed here:

    plain data   None, bool, int, float, str, bytes, tuple, list, dict (bytes in
                 protocols 0-2 through _codecs.encode(str, "latin1") and bytes(),
                 the only globals always allowed: DATA_GLOBALS)
    callables    only those the caller allows by (module, name) in `allowed`
                 (torch_file.py allows OrderedDict and the tensor rebuilders);
                 anything else named by GLOBAL / STACK_GLOBAL is refused by name
    persistent   PERSID / BINPERSID go to the caller's `persistent_load`
                 (torch_file.py: tensor storage records); without one, refused
    BUILD        only `_metadata` on an OrderedDict (torch.save's state_dict)

Refused outright: INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4 (build or look up
classes), sets (EMPTY_SET, ADDITEMS, FROZENSET), out-of-band buffers.

Every cost is bounded by the pickle's length n (docs/BAD_INPUT.md):
- Each opcode reads its own bytes; a length field is checked against what
  remains before anything is allocated.
- Each item is moved into a container at most once, so the work ("steps":
  opcodes plus items moved, counted in `Unpickler.steps`) is at most 2n.
- Dict keys are str or int in [-2**31, 2**31): their hashes cannot be made
  to collide (a str hash is salted per process; small ints hash to
  themselves), so a dict of n keys costs O(n), not O(n**2).
- Memo indices are in [0, 2**32) for the same reason.
- Text numbers (INT, LONG, FLOAT, PUT, GET) have at most 1,000 characters;
  the bytes that _codecs.encode builds add up to at most n.
- The object is then walked as a tree (shared parts counted each time they
  appear, so a tuple built from two references to one smaller tuple doubles):
  at most `max_items` nodes (default 2n + 64), `max_depth` levels (100), and
  twice that many characters of str and bytes; every leaf is plain data (or
  one of the caller's `leaves` types, tensors).
  A structure of shared halves (2**80 nodes from 160 opcodes) or a list that
  contains itself is refused here, so whatever the caller does with the
  object afterwards (compare, print, convert) is bounded too.

    obj = load(data)                           # plain data only
    reader = Unpickler(data, allowed={...}, persistent_load=f); obj = reader.load()

Raises Refused (a ValueError) with a one-line reason; callers prefix the file.
Standard library only.
"""

import codecs
import collections
import struct

__all__ = ["Refused", "Unpickler", "load", "shown", "KEY_INT_MIN", "KEY_INT_MAX", "MAX_DEPTH"]

KEY_INT_MIN, KEY_INT_MAX = -(1 << 31), (1 << 31) - 1
MEMO_MAX = (1 << 32) - 1
MAX_DEPTH = 100
HIGHEST_PROTOCOL = 5


class Refused(ValueError):
    """The pickle holds something this reader does not build, or is malformed."""


def shown(value):
    """A value from the file for a message: atoms as repr cut at 60 characters,
    anything else by type only (the repr of a shared-halves tuple never ends)."""
    if type(value) is int and value.bit_length() > 64:
        return f"an int of {value.bit_length()} bits"
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        text = repr(value[:60] if isinstance(value, (str, bytes)) else value)
        return text if len(text) <= 60 else text[:57] + "..."
    return f"a {type(value).__name__}"


def _latin1(text, encoding):
    """_codecs.encode(text, "latin1"): how protocols 0-2 write bytes."""
    if type(text) is not str or encoding != "latin1":
        raise Refused("_codecs.encode other than (str, 'latin1'), the way protocols 0-2 write bytes")
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        raise Refused("_codecs.encode of text outside latin-1") from None


def _empty_bytes(*args):
    """bytes(): how protocols 0-2 write b''."""
    if args:
        raise Refused("bytes(...) with arguments; protocols 0-2 write only bytes() so")
    return b""


# Globals that only build plain data, always allowed: protocols 0-2 write bytes with them.
DATA_GLOBALS = {("_codecs", "encode"): _latin1, ("builtins", "bytes"): _empty_bytes,
                ("__builtin__", "bytes"): _empty_bytes}


def _name(text):
    """A name from the file for a message: as it is when printable and short,
    else its repr cut at 100 characters (no control character reaches a terminal)."""
    return text if text.isprintable() and len(text) <= 100 else repr(text[:100])


class _Mark:
    """Where MARK was: the items above it belong to the next TUPLE/LIST/DICT/APPENDS/SETITEMS."""


class Unpickler:
    """One pickle from `data` (bytes) starting at `start`. After load(),
    `end` is the offset just past its STOP opcode and `steps` the work done."""

    def __init__(self, data, *, allowed=None, persistent_load=None, start=0, max_items=None,
                 max_depth=MAX_DEPTH, leaves=()):
        self.data = bytes(data)
        self.start = self.pos = start
        self.allowed = {**DATA_GLOBALS, **(allowed or {})}
        self.callables = {id(v) for v in self.allowed.values() if callable(v)}
        self.persistent = persistent_load
        self.max_items = max_items
        self.max_depth = max_depth
        self.leaf_types = leaves
        self.steps = 0
        self.built = 0            # bytes made by DATA_GLOBALS, at most the pickle's length
        self.end = None
        self.leaves = []          # each appearance of a `leaves` object in the result

    # --- reading bytes ------------------------------------------------------
    def _take(self, n, what):
        if n < 0 or n > len(self.data) - self.pos:
            raise Refused(f"{what} of {n} bytes at offset {self.pos}, but {len(self.data) - self.pos} remain")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def _unpack(self, fmt, what):
        return struct.unpack(fmt, self._take(struct.calcsize(fmt), what))[0]

    def _line(self, what):
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise Refused(f"{what} without its end of line")
        line = self.data[self.pos:end]
        self.pos = end + 1
        return line

    # --- the stack ----------------------------------------------------------
    def _pop(self, what):
        if not self.stack or isinstance(self.stack[-1], _Mark):
            raise Refused(f"{what} on an empty stack")
        return self.stack.pop()

    def _pop_mark(self, what):
        for i in range(len(self.stack) - 1, -1, -1):
            if isinstance(self.stack[i], _Mark):
                items = self.stack[i + 1:]
                del self.stack[i:]
                self.steps += len(items)
                return items
        raise Refused(f"{what} without a MARK")

    def _top(self, kinds, what):
        if not self.stack or isinstance(self.stack[-1], _Mark) or not isinstance(self.stack[-1], kinds):
            got = "nothing" if not self.stack else shown(self.stack[-1])
            raise Refused(f"{what} on {got}")
        return self.stack[-1]

    @staticmethod
    def _key(key):
        if type(key) is str:
            return key
        if type(key) is int and KEY_INT_MIN <= key <= KEY_INT_MAX:
            return key
        if type(key) is int:
            raise Refused(f"a dict key {shown(key)} outside [-2**31, 2**31): keys here are strings and small ints")
        raise Refused(f"a dict key of type {type(key).__name__}: keys here are strings and small ints")

    def _memo_index(self, index):
        if not 0 <= index <= MEMO_MAX:
            raise Refused(f"a memo index {shown(index)} outside [0, 2**32)")
        return index

    # --- the loop -----------------------------------------------------------
    def load(self):
        self.stack, self.memo = [], {}
        while True:
            if self.pos >= len(self.data):
                raise Refused("the pickle ends before its STOP opcode")
            op = self.data[self.pos]
            self.pos += 1
            self.steps += 1
            handler = _OPCODES.get(op)
            if handler is None:
                raise Refused(_REFUSED.get(op, f"unknown opcode 0x{op:02x} at offset {self.pos - 1}"))
            if handler(self) is _STOP:
                break
        if len(self.stack) != 1 or isinstance(self.stack[0], _Mark):
            raise Refused(f"STOP with {len(self.stack)} items on the stack, not 1")
        self.end = self.pos
        obj = self.stack.pop()
        limit = self.max_items if self.max_items is not None else 2 * (self.end - self.start) + 64
        self.leaves = _check_tree(obj, limit, self.max_depth, self.leaf_types)
        return obj


_STOP = object()
_OPCODES = {}


def _op(code):
    def register(function):
        _OPCODES[code[0] if isinstance(code, bytes) else code] = function
        return function
    return register


# Opcodes that exist but build what this reader never builds: a reason each.
_REFUSED = {
    ord("i"): "the opcode INST (it builds an instance of a named class)",
    ord("o"): "the opcode OBJ (it builds an instance of a class)",
    0x81: "the opcode NEWOBJ (it builds an instance of a class)",
    0x92: "the opcode NEWOBJ_EX (it builds an instance of a class)",
    0x82: "the opcode EXT1 (a class from the copyreg registry)",
    0x83: "the opcode EXT2 (a class from the copyreg registry)",
    0x84: "the opcode EXT4 (a class from the copyreg registry)",
    0x8f: "a set (EMPTY_SET): a file of plain data and tensors has none",
    0x90: "a set (ADDITEMS): a file of plain data and tensors has none",
    0x91: "a frozenset: a file of plain data and tensors has none",
    0x97: "an out-of-band buffer (NEXT_BUFFER)",
    0x98: "an out-of-band buffer (READONLY_BUFFER)",
}


@_op(b"\x80")
def _proto(u):
    version = u._take(1, "PROTO")[0]
    if version > HIGHEST_PROTOCOL:
        raise Refused(f"pickle protocol {version}, newer than {HIGHEST_PROTOCOL}")


@_op(b"\x95")
def _frame(u):
    size = u._unpack("<Q", "FRAME")
    if size > len(u.data) - u.pos:
        raise Refused(f"a FRAME of {size} bytes, but {len(u.data) - u.pos} remain")


@_op(b".")
def _stop(u):
    return _STOP


# --- stack manipulation -----------------------------------------------------
@_op(b"(")
def _mark(u):
    u.stack.append(_Mark())


@_op(b"0")
def _pop_op(u):
    if u.stack and isinstance(u.stack[-1], _Mark):
        u.stack.pop()
    else:
        u._pop("POP")


@_op(b"1")
def _pop_mark_op(u):
    u._pop_mark("POP_MARK")


@_op(b"2")
def _dup(u):
    u.stack.append(u._top(object, "DUP"))


# --- atoms ------------------------------------------------------------------
@_op(b"N")
def _none(u):
    u.stack.append(None)


@_op(b"\x88")
def _true(u):
    u.stack.append(True)


@_op(b"\x89")
def _false(u):
    u.stack.append(False)


@_op(b"I")
def _int_text(u):
    line = u._line("INT")
    if line == b"00":
        u.stack.append(False)
    elif line == b"01":
        u.stack.append(True)
    else:
        u.stack.append(_parse(int, line, "INT"))


@_op(b"L")
def _long_text(u):
    line = u._line("LONG")
    u.stack.append(_parse(int, line[:-1] if line.endswith(b"L") else line, "LONG"))


MAX_NUMBER_TEXT = 1000     # characters of a text INT, LONG, FLOAT, PUT or GET (int() is quadratic)


def _parse(kind, text, what):
    if len(text) > MAX_NUMBER_TEXT:
        raise Refused(f"{what} with a number of {len(text)} characters (at most {MAX_NUMBER_TEXT})")
    try:
        return kind(text.decode("ascii"))
    except (ValueError, UnicodeDecodeError):   # int() also refuses more than 4300 digits
        raise Refused(f"{what} with a malformed number {shown(text)}") from None


@_op(b"J")
def _binint(u):
    u.stack.append(u._unpack("<i", "BININT"))


@_op(b"K")
def _binint1(u):
    u.stack.append(u._take(1, "BININT1")[0])


@_op(b"M")
def _binint2(u):
    u.stack.append(u._unpack("<H", "BININT2"))


@_op(b"\x8a")
def _long1(u):
    n = u._take(1, "LONG1")[0]
    u.stack.append(int.from_bytes(u._take(n, "LONG1"), "little", signed=True))


@_op(b"\x8b")
def _long4(u):
    n = u._unpack("<i", "LONG4")
    u.stack.append(int.from_bytes(u._take(n, "LONG4"), "little", signed=True))


@_op(b"F")
def _float_text(u):
    u.stack.append(_parse(float, u._line("FLOAT"), "FLOAT"))


@_op(b"G")
def _binfloat(u):
    u.stack.append(u._unpack(">d", "BINFLOAT"))


def _text(raw, what, codec="utf-8", errors="surrogatepass"):
    try:
        return raw.decode(codec, errors)
    except UnicodeDecodeError as e:
        raise Refused(f"{what} that is not {codec} ({e.reason})") from None


@_op(b"X")
def _binunicode(u):
    u.stack.append(_text(u._take(u._unpack("<I", "BINUNICODE"), "BINUNICODE"), "BINUNICODE"))


@_op(b"\x8c")
def _short_binunicode(u):
    u.stack.append(_text(u._take(u._take(1, "SHORT_BINUNICODE")[0], "SHORT_BINUNICODE"), "SHORT_BINUNICODE"))


@_op(b"\x8d")
def _binunicode8(u):
    u.stack.append(_text(u._take(u._unpack("<Q", "BINUNICODE8"), "BINUNICODE8"), "BINUNICODE8"))


@_op(b"V")
def _unicode_text(u):
    u.stack.append(_text(u._line("UNICODE"), "UNICODE", "raw-unicode-escape", "strict"))


# Python 2's str (STRING, BINSTRING, SHORT_BINSTRING): decoded as ASCII, as pickle does by default.
@_op(b"S")
def _string_text(u):
    line = u._line("STRING")
    if len(line) < 2 or line[0] != line[-1] or line[:1] not in (b"'", b'"'):
        raise Refused("STRING without its quotes")
    try:
        raw = codecs.escape_decode(line[1:-1])[0]
    except ValueError:
        raise Refused("STRING with a malformed escape") from None
    u.stack.append(_text(raw, "STRING", "ascii", "strict"))


@_op(b"T")
def _binstring(u):
    n = u._unpack("<i", "BINSTRING")
    u.stack.append(_text(u._take(n, "BINSTRING"), "BINSTRING", "ascii", "strict"))


@_op(b"U")
def _short_binstring(u):
    n = u._take(1, "SHORT_BINSTRING")[0]
    u.stack.append(_text(u._take(n, "SHORT_BINSTRING"), "SHORT_BINSTRING", "ascii", "strict"))


@_op(b"B")
def _binbytes(u):
    u.stack.append(u._take(u._unpack("<I", "BINBYTES"), "BINBYTES"))


@_op(b"C")
def _short_binbytes(u):
    u.stack.append(u._take(u._take(1, "SHORT_BINBYTES")[0], "SHORT_BINBYTES"))


@_op(b"\x8e")
def _binbytes8(u):
    u.stack.append(u._take(u._unpack("<Q", "BINBYTES8"), "BINBYTES8"))


@_op(b"\x96")
def _bytearray8(u):
    u.stack.append(u._take(u._unpack("<Q", "BYTEARRAY8"), "BYTEARRAY8"))


# --- containers -------------------------------------------------------------
@_op(b")")
def _empty_tuple(u):
    u.stack.append(())


@_op(b"t")
def _tuple(u):
    u.stack.append(tuple(u._pop_mark("TUPLE")))


def _tuple_n(n):
    def build(u):
        if len(u.stack) < n or any(isinstance(x, _Mark) for x in u.stack[-n:]):
            raise Refused(f"TUPLE{n} with fewer than {n} items on the stack")
        items = tuple(u.stack[-n:])
        del u.stack[-n:]
        u.steps += n
        u.stack.append(items)
    return build


_OPCODES[0x85], _OPCODES[0x86], _OPCODES[0x87] = _tuple_n(1), _tuple_n(2), _tuple_n(3)


@_op(b"]")
def _empty_list(u):
    u.stack.append([])


@_op(b"l")
def _list(u):
    u.stack.append(u._pop_mark("LIST"))


@_op(b"a")
def _append(u):
    value = u._pop("APPEND")
    u._top(list, "APPEND").append(value)
    u.steps += 1


@_op(b"e")
def _appends(u):
    items = u._pop_mark("APPENDS")
    u._top(list, "APPENDS").extend(items)


@_op(b"}")
def _empty_dict(u):
    u.stack.append({})


def _set_items(target, items):
    if len(items) % 2:
        raise Refused("an odd number of items for a dict")
    for i in range(0, len(items), 2):
        target[Unpickler._key(items[i])] = items[i + 1]


@_op(b"d")
def _dict(u):
    d = {}
    _set_items(d, u._pop_mark("DICT"))
    u.stack.append(d)


@_op(b"s")
def _setitem(u):
    value = u._pop("SETITEM")
    key = u._pop("SETITEM")
    _set_items(u._top(dict, "SETITEM"), [key, value])
    u.steps += 2


@_op(b"u")
def _setitems(u):
    items = u._pop_mark("SETITEMS")
    _set_items(u._top(dict, "SETITEMS"), items)


# --- the memo ---------------------------------------------------------------
def _put(u, index):
    u.memo[u._memo_index(index)] = u._top(object, "PUT")


def _get(u, index):
    try:
        u.stack.append(u.memo[u._memo_index(index)])
    except KeyError:
        raise Refused(f"GET of memo {index}, which was never PUT") from None


_OPCODES[ord("p")] = lambda u: _put(u, _parse(int, u._line("PUT"), "PUT"))
_OPCODES[ord("q")] = lambda u: _put(u, u._take(1, "BINPUT")[0])
_OPCODES[ord("r")] = lambda u: _put(u, u._unpack("<I", "LONG_BINPUT"))
_OPCODES[0x94] = lambda u: _put(u, len(u.memo))
_OPCODES[ord("g")] = lambda u: _get(u, _parse(int, u._line("GET"), "GET"))
_OPCODES[ord("h")] = lambda u: _get(u, u._take(1, "BINGET")[0])
_OPCODES[ord("j")] = lambda u: _get(u, u._unpack("<I", "LONG_BINGET"))


# --- the only ways to reach a caller's code ---------------------------------
def _global(u, module, name):
    if (module, name) not in u.allowed:
        raise Refused(f"the global {_name(module + '.' + name)} is not allowed: this reader builds plain data, "
                      f"OrderedDict and tensors only (a named global is how a pickle runs code)")
    u.stack.append(u.allowed[(module, name)])


@_op(b"c")
def _global_text(u):
    module = _text(u._line("GLOBAL"), "GLOBAL", "utf-8", "strict")
    name = _text(u._line("GLOBAL"), "GLOBAL", "utf-8", "strict")
    _global(u, module, name)


@_op(b"\x93")
def _stack_global(u):
    name, module = u._pop("STACK_GLOBAL"), u._pop("STACK_GLOBAL")
    if type(module) is not str or type(name) is not str:
        raise Refused("STACK_GLOBAL with a module or name that is not a str")
    _global(u, module, name)


@_op(b"R")
def _reduce(u):
    args = u._pop("REDUCE")
    function = u._pop("REDUCE")
    if id(function) not in u.callables or type(args) is not tuple:
        raise Refused(f"REDUCE of {shown(function)}: only the allowed globals are called")
    u.steps += len(args)
    try:
        result = function(*args)
    except TypeError:
        raise Refused(f"REDUCE of {shown(function)} with {len(args)} arguments, not what it takes") from None
    if isinstance(result, bytes):          # _codecs.encode makes new bytes each call: at most n in all
        u.built += len(result)
        if u.built > len(u.data):
            raise Refused("_codecs.encode builds more bytes than the pickle holds")
    u.stack.append(result)


def _persistent(u, pid):
    if u.persistent is None:
        raise Refused(f"a persistent id ({type(pid).__name__}) in a file that holds only plain data")
    u.stack.append(u.persistent(pid))


_OPCODES[ord("P")] = lambda u: _persistent(u, _text(u._line("PERSID"), "PERSID", "ascii", "strict"))
_OPCODES[ord("Q")] = lambda u: _persistent(u, u._pop("BINPERSID"))


@_op(b"b")
def _build(u):
    state = u._pop("BUILD")
    target = u._top(object, "BUILD")
    # torch.save(state_dict): OrderedDict.__reduce__ hands its attributes, {"_metadata": ...}, to BUILD.
    if (type(target) is not collections.OrderedDict or type(state) is not dict
            or set(state) - {"_metadata"}):
        raise Refused(f"BUILD (setting the state) of {shown(target)}: only an OrderedDict's _metadata is "
                      f"set by a file of plain data and tensors")
    target.__dict__.update(state)


PLAIN = (type(None), bool, int, float)


def _check_tree(obj, limit, max_depth, leaf_types=()):
    """The object expanded as a tree (a shared part counts each time it
    appears): at most `limit` nodes, `max_depth` levels, and 2 * limit
    characters of str and bytes; its leaves are plain data or `leaf_types`
    (an allowed global left as a value is refused). An OrderedDict's
    attributes (torch's _metadata) are walked as its children. Nodes are
    counted when found, so the walk itself holds at most `limit`. Returns the
    `leaf_types` leaves, once per appearance."""
    count, text, found = 1, 0, []
    todo = [(obj, 1)]
    while todo:
        value, depth = todo.pop()
        kind = type(value)
        if kind is dict or kind is collections.OrderedDict:
            children = [x for item in value.items() for x in item] + list(value.__dict__.values()
                                                                         if kind is not dict else ())
        elif kind is list or kind is tuple:
            children = value
        elif kind is str or kind is bytes:
            text += len(value)
            if text > 2 * limit:
                raise Refused(f"the object's strings, counted each time they appear, hold more than {2 * limit} "
                              f"characters (one string shared many times)")
            continue
        elif kind in PLAIN:
            continue
        elif isinstance(value, leaf_types):
            found.append(value)
            continue
        else:
            raise Refused(f"{shown(value)} where plain data belongs (an allowed global used as a value)")
        if not children:
            continue
        if depth >= max_depth:
            raise Refused(f"containers nested more than {max_depth} deep")
        count += len(children)
        if count > limit:
            raise Refused(f"the object, expanded as a tree, has more than {limit} items (a container shared "
                          f"many times, or one that holds itself); the limit is twice the pickle's bytes plus 64")
        todo.extend((v, depth + 1) for v in children)
    return found


def load(data, **options):
    """The object of one pickle that is the whole of `data` (nothing after STOP)."""
    reader = Unpickler(data, **options)
    obj = reader.load()
    if reader.end != len(reader.data):
        raise Refused(f"{len(reader.data) - reader.end} bytes after the pickle's STOP opcode")
    return obj
