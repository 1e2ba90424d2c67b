"""The Python twin of the libFuzzer harnesses: random mutations of pickles and
torch.save files through the converters' reader (tools/python/pickle_reader.py,
tools/python/torch_file.py). Bounded by --seconds and --runs; run by
`make fuzz` after the C++ harnesses.

A finding is an input on which
  - anything other than a one-line refusal (ValueError) escapes the reader, or
  - the unpickler does more than 2 steps per byte (its linear-cost claim), or
  - one input takes longer than --slow seconds (a hang the step count missed).
Findings are written to build/fuzz/findings-python/ and the exit status is 1.

Seeds: pickles of plain data in every protocol, the committed checkpoints in
data/families/ (zip format: mutated as bytes, or re-zipped around a mutated
data.pkl so the mutations reach the tensor records), and one legacy-format
file built here.

    /usr/bin/python3 tests/fuzz/fuzz_pickle.py --seconds 60
"""

import argparse
import io
import os
import pickle
import random
import struct
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import pickle_reader  # noqa: E402
import torch_file  # noqa: E402


def seeds():
    plain = [{"vocab_size": 3, "itos": {0: "a", 1: "b", 2: "é"}, "stoi": {"a": 0, "b": 1, "é": 2}},
             [1, -2, 3.5, None, True, b"\x00\xff", (1, (2, [3]))], {"n": 10 ** 30, "s": "x" * 300}]
    pickles = [pickle.dumps(v, protocol=p) for v in plain for p in range(pickle.HIGHEST_PROTOCOL + 1)]
    files = [bytearray((REPO / "data/families" / name).read_bytes())
             for name in ("mingpt-sort.pt", "nanogpt-char/ckpt.pt")]
    # the legacy format: magic, protocol, sys_info, {"w": tensor over storage "k"}, ["k"], storage
    g = lambda m, n: b"\x8c" + bytes([len(m)]) + m + b"\x8c" + bytes([len(n)]) + n + b"\x93"   # noqa: E731
    pid = b"(" + b"\x8c\x07storage" + g(b"torch", b"FloatStorage") + b"\x8c\x01k\x8c\x03cpuK\x02Nt" + b"Q"
    main = (b"\x80\x02}\x8c\x01w" + g(b"torch._utils", b"_rebuild_tensor_v2") + b"(" + pid + b"K\x00K\x02\x85K\x01\x85"
            + b"\x89}tRs.")
    legacy = (pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2) + pickle.dumps(1001, protocol=2)
              + pickle.dumps({"protocol_version": 1001, "little_endian": True}, protocol=2) + main
              + pickle.dumps(["k"], protocol=2) + struct.pack("<q2f", 2, 1.0, 2.0))
    return pickles, files + [bytearray(legacy)]


def mutate(data, rng, pool):
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        kind = rng.randrange(6)
        at = rng.randrange(len(data) + 1)
        if kind == 0 and data:                                   # flip a byte
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif kind == 1:                                          # insert bytes
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif kind == 2:                                          # delete a run
            del data[at:at + rng.randint(1, 16)]
        elif kind == 3 and data:                                 # an interesting integer
            value = rng.choice([0, 1, 0x7F, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 2 ** 61 - 1])
            size = rng.choice([1, 2, 4, 8])
            data[at:at + size] = (value & ((1 << 8 * size) - 1)).to_bytes(size, "little")
        elif kind == 4:                                          # splice another seed
            other = rng.choice(pool)
            start = rng.randrange(len(other))
            data[at:at] = other[start:start + rng.randint(1, 64)]
        elif kind == 5 and data:                                 # repeat a run
            run = data[at:at + rng.randint(1, 16)]
            data[at:at] = run * rng.randint(1, 64)
    return data


def rezip(seed, rng, pool):
    """A well-framed archive whose data.pkl is mutated, so mutations reach the
    pickle and the tensor records and not only the zip's frame."""
    with zipfile.ZipFile(io.BytesIO(bytes(seed))) as z:
        members = {name: z.read(name) for name in z.namelist()}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members.items():
            z.writestr(name, mutate(data, rng, pool) if name.endswith("data.pkl") else data)
    return bytearray(out.getvalue())


def one(data, is_file):
    """Run one input; None, or what was wrong."""
    try:
        if is_file:
            torch_file.parse(bytearray(data))
        else:
            reader = pickle_reader.Unpickler(bytes(data))
            try:
                reader.load()
            finally:
                if reader.steps > 2 * len(data) + 2:
                    return f"{reader.steps} steps for {len(data)} bytes"
    except ValueError:
        return None
    except (struct.error, OverflowError, IndexError, TypeError, MemoryError) as e:
        if is_file:
            return None            # read() turns these into its one line
        return f"{type(e).__name__}: {e}"
    except Exception as e:         # noqa: BLE001 - anything else escaping is the finding
        return f"{type(e).__name__}: {e}"
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="how long to run (default 60)")
    ap.add_argument("--runs", type=int, default=10 ** 9, help="at most this many inputs")
    ap.add_argument("--seed", type=int, default=31, help="random seed (default 31)")
    ap.add_argument("--slow", type=float, default=5.0, help="seconds that make one input a finding (default 5)")
    ap.add_argument("--findings", default=str(REPO / "build/fuzz/findings-python"), help="where findings go")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    pickles, files = seeds()
    pool = pickles + files
    counts = {"pickles": 0, "files": 0, "findings": 0}
    end = time.monotonic() + args.seconds
    n = 0
    while time.monotonic() < end and n < args.runs:
        n += 1
        is_file = rng.random() < 0.3
        if is_file and rng.random() < 0.5:
            data = rezip(rng.choice(files[:-1]), rng, pickles)
        else:
            data = mutate(rng.choice(files if is_file else pickles), rng, pool)
        start = time.monotonic()
        problem = one(data, is_file)
        if problem is None and time.monotonic() - start > args.slow:
            problem = f"took {time.monotonic() - start:.1f} s"
        counts["files" if is_file else "pickles"] += 1
        if problem:
            counts["findings"] += 1
            os.makedirs(args.findings, exist_ok=True)
            name = os.path.join(args.findings, f"{'file' if is_file else 'pickle'}-{n}")
            with open(name, "wb") as f:
                f.write(data)
            print(f"fuzz_pickle: finding {name}: {problem}", flush=True)
    print(f"fuzz_pickle: {counts['pickles']} pickles and {counts['files']} torch.save files in "
          f"{args.seconds:.0f} s, {counts['findings']} findings")
    return 1 if counts["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
