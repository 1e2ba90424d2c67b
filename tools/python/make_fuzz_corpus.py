#!/usr/bin/python3
"""Writes the fuzzers' seed corpus, tests/fuzz/corpus/{safetensors,config,forward,text}/.

    /usr/bin/python3 tools/python/make_fuzz_corpus.py        (from the repository root)

Standard library only. Seeds are small (libFuzzer runs with -max_len=4096):
valid files and the bad-input catalogue's kinds of bad file (tests/test_bad_inputs.cpp),
so that the fuzzers start from every branch the catalogue knows. The configs
are the four toy models' own (read from data/models/) and broken copies of them.
The files are committed; rerunning this rewrites them identically. Inputs
the fuzzers found are copied in by hand as bad-found-* (after the fix, so
that `make test` replays them) and are left alone here.
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safe_write  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
SIZES = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "U8": 1, "BOOL": 1}
PACK = {"F32": "f", "F16": "e", "I64": "q", "I32": "i", "U8": "B", "BOOL": "B"}


def frame(header_text, data=b"", length=None):
    """[u64 LE header length][header][data]; `length` may lie about the header."""
    header = header_text.encode() if isinstance(header_text, str) else header_text
    return struct.pack("<Q", len(header) if length is None else length) + header + data


def safetensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape, values)] -> file bytes, offsets in the given order."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, values in tensors:
        if dtype == "BF16":  # top 16 bits of the float32
            raw = b"".join(struct.pack("<f", v)[2:] for v in values)
        else:
            raw = struct.pack("<%d%s" % (len(values), PACK[dtype]), *values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return frame(json.dumps(header), data)


def read_config(model):
    with open(os.path.join(ROOT, "data", "models", model + ".safetensors"), "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        return json.loads(json.loads(f.read(length))["__metadata__"]["config"])


def write_all(folder, seeds):
    path = os.path.join(CORPUS, folder)
    os.makedirs(path, exist_ok=True)
    for old in os.listdir(path):  # fuzzer findings ("bad-found-*", copied in by hand) stay
        if not old.startswith("bad-found-"):
            os.remove(os.path.join(path, old))
    for name, content in sorted(seeds.items()):
        if isinstance(content, str):
            content = content.encode()
        assert len(content) <= 4096, name
        safe_write.write_bytes(os.path.join(path, name), content)
    print("%s: %d seeds" % (os.path.relpath(path, ROOT), len(seeds)))


def safetensors_seeds():
    w = [0.5, -1.25, 2.0, 0.0, 3.5, -0.75]
    seeds = {
        "valid-f32": safetensors([("w", "F32", [2, 3], w)], {"note": "x"}),
        "valid-f16": safetensors([("w", "F16", [3, 2], w)]),
        "valid-bf16": safetensors([("w", "BF16", [6], w)]),
        "valid-ints": safetensors([("a", "I64", [2, 2], [1, -2, 3, 4]), ("b", "I32", [3], [7, 8, -9])]),
        "valid-bools": safetensors([("m", "BOOL", [2, 2], [0, 1, 1, 0]), ("u", "U8", [1, 3], [1, 0, 1])]),
        "valid-empty-tensor": safetensors([("e", "F32", [0, 4], []), ("w", "F32", [1], [1.0])]),
        "valid-scalar-shape": safetensors([("s", "F32", [], [4.0])]),
        "valid-rank5": safetensors([("r", "F32", [1, 1, 1, 1, 2], [1.0, 2.0])]),
        "valid-nothing": frame("{}"),
        "valid-metadata-only": frame('{"__metadata__": {"config": "{}", "vocab": "[\\"a\\"]"}}'),
        # the catalogue's bad frames and tables
        "bad-empty": b"",
        "bad-short": b"\x05\x00\x00",
        "bad-header-past-end": frame("{}", length=1000),
        "bad-header-near-2^64": frame("{}", length=2**64 - 8),
        "bad-not-json": frame('{"a": [1,'),
        "bad-array": frame("[1,2,3]"),
        "bad-deep": frame('{"w":{"dtype":"F32","shape":' + "[" * 50 + "]" * 50 + ',"data_offsets":[0,0]}}'),
        "bad-metadata-array": frame('{"__metadata__": ["config"]}'),
        "bad-metadata-value": frame('{"__metadata__": {"config": {"d_model": 16}}}'),
        "bad-no-offsets": frame('{"w": {"dtype": "F32", "shape": [2]}}'),
        "bad-dtype": frame('{"w": {"dtype": "F31", "shape": [1], "data_offsets": [0, 4]}}', b"\0" * 4),
        "bad-negative-shape": frame('{"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}', b"\0" * 4),
        "bad-overflow-shape": frame('{"w": {"dtype": "F32", "shape": [4294967296, 4294967296], '
                                    '"data_offsets": [0, 4]}}', b"\0" * 4),
        "bad-reversed": frame('{"w": {"dtype": "U8", "shape": [2], "data_offsets": [2, 0]}}', b"\0" * 2),
        "bad-outside": frame('{"w": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}', b"\0" * 2),
        "bad-overlap": frame('{"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}, '
                             '"b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}', b"\0" * 3),
        "bad-hole": frame('{"a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}', b"\0" * 2),
        "bad-span": frame('{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}', b"\0" * 4),
        "valid-frame-bool-7": safetensors([("m", "U8", [2], [0, 7])]),
        "valid-frame-nan": safetensors([("w", "F32", [2], [float("nan"), 1.0])]),
        "bad-truncated-data": safetensors([("w", "F32", [2, 3], w)])[:-5],
    }
    return seeds


def config_seeds():
    seeds = {}
    for model in ["reverse", "sort", "reverse-prefixlm", "reverse-causal"]:
        config = read_config(model)
        seeds["valid-" + model] = json.dumps(config)
    base = read_config("reverse")
    single = read_config("reverse-prefixlm")
    encoder_only = dict(single, arch="encoder_only", attention="bidirectional")
    seeds["valid-encoder-only"] = json.dumps(encoder_only)
    broken = {
        "unknown-arch": dict(base, arch="rnn"),
        "unknown-activation": dict(base, activation="swish"),
        "unknown-pos-encoding": dict(base, pos_encoding="rotary"),
        "unknown-attention": dict(single, attention="sliding"),
        "d-mod-h": dict(base, d_model=66),
        "zero-nhead": dict(base, nhead=0),
        "negative-ff": dict(base, dim_feedforward=-4),
        "max-len-0": dict(base, max_len=0),
        "huge-size": dict(base, d_model=2**40),
        "above-int64": dict(base, src_vocab_size=2**64 - 1),
        "float-size": dict(base, d_model=64.5),
        "string-size": dict(base, nhead="4"),
        "bool-as-int": dict(base, norm_first=1),
        "eps-range": dict(base, layer_norm_eps=2.0),
        "eps-float32-zero": dict(base, layer_norm_eps=1e-85),  # found by fuzz_config: 0 as float32
        "special-id": dict(base, eos_id=999),
        "unknown-key": dict(base, dropout=0.1),
        "wrong-arch-key": dict(base, num_layers=2),
        "format": dict(base, format="tinyformer/2"),
    }
    for name, config in broken.items():
        seeds["bad-" + name] = json.dumps(config)
    seeds["bad-missing-key"] = json.dumps({k: v for k, v in base.items() if k != "nhead"})
    seeds["bad-not-json"] = '{"format": "tinyformer/1",'
    seeds["bad-array"] = '["tinyformer/1"]'
    seeds["bad-nested"] = '{"format": "tinyformer/1", "d_model": [[16]]}'
    seeds["bad-empty"] = ""
    return seeds


def forward_seeds():
    # reverse: encoder_decoder, vocabulary 30, max_len 32;
    # reverse-prefixlm: decoder_only prefix_lm, vocabulary 31, max_len 40. Ids 0 pad, 1 bos, 2 eos.
    src = [5, 9, 12, 7, 2, 0]
    tgt = [1, 7, 12, 9, 5, 2]
    pad = [0, 0, 0, 0, 0, 1]
    ids = [10, 11, 12, 3, 12, 11, 10, 2]
    seeds = {
        "ed-valid": safetensors([("src_ids", "I64", [1, 6], src), ("tgt_ids", "I64", [1, 6], tgt)]),
        "ed-valid-masks": safetensors([("src_ids", "I64", [2, 6], src + src[::-1]),
                                       ("tgt_ids", "I32", [2, 6], tgt + tgt),
                                       ("src_key_padding_mask", "BOOL", [2, 6], pad + pad[::-1]),
                                       ("tgt_key_padding_mask", "U8", [2, 6], pad + [0] * 6)]),
        "plm-valid": safetensors([("ids", "I64", [1, 8], ids), ("prefix_len", "I64", [1], [4])]),
        "plm-valid-padding": safetensors([("ids", "I32", [2, 8], ids + [0, 0] + ids[:6]),
                                          ("key_padding_mask", "BOOL", [2, 8], [0] * 8 + [1, 1] + [0] * 6),
                                          ("prefix_len", "I32", [2], [4, 5])]),
        "bad-negative-id": safetensors([("src_ids", "I64", [1, 6], [5, -1, 12, 7, 2, 0]),
                                        ("tgt_ids", "I64", [1, 6], tgt)]),
        "bad-id-vocab": safetensors([("ids", "I64", [1, 8], ids[:7] + [31]), ("prefix_len", "I64", [1], [4])]),
        "bad-rank": safetensors([("src_ids", "I64", [6], src), ("tgt_ids", "I64", [1, 6], tgt)]),
        "bad-batch": safetensors([("src_ids", "I64", [1, 6], src), ("tgt_ids", "I64", [2, 3], tgt),
                                  ("src_key_padding_mask", "BOOL", [2, 3], pad)]),
        "bad-too-long": safetensors([("ids", "I64", [1, 41], [5] * 41), ("prefix_len", "I64", [1], [4])]),
        "bad-zero-length": safetensors([("src_ids", "I64", [1, 0], []), ("tgt_ids", "I64", [1, 6], tgt)]),
        "bad-prefix-negative": safetensors([("ids", "I64", [1, 8], ids), ("prefix_len", "I64", [1], [-1])]),
        "bad-prefix-long": safetensors([("ids", "I64", [1, 8], ids), ("prefix_len", "I64", [1], [9])]),
        "bad-padding-row": safetensors([("src_ids", "I64", [1, 6], src), ("tgt_ids", "I64", [1, 6], tgt),
                                        ("src_key_padding_mask", "BOOL", [1, 6], [1] * 6)]),
        "bad-mask-dtype": safetensors([("src_ids", "I64", [1, 6], src), ("tgt_ids", "I64", [1, 6], tgt),
                                       ("src_key_padding_mask", "F32", [1, 6], [0.0] * 6)]),
        "bad-unknown-input": safetensors([("ids", "I64", [1, 8], ids), ("prefix_len", "I64", [1], [4]),
                                          ("position_ids", "I64", [1, 8], list(range(8)))]),
        "bad-float-ids": safetensors([("src_ids", "F32", [1, 6], [float(i) for i in src]),
                                      ("tgt_ids", "I64", [1, 6], tgt)]),
    }
    return seeds


def text_seeds():
    # tests/fuzz/fuzz_text.cpp: [flags: 1 whitespace, 2 map unknown, 4 gpt2_bpe][vocab entries, '\n'-separated]
    # 0x00 [text]; with flag 4 the entries are merges "left right" over the 256 one-byte tokens.
    letters = "\n".join(["<pad>", "<bos>", "<eos>", "<unk>"] + list("abcdefghijklmnopqrstuvwxyz"))
    words = "\n".join(["<pad>", "<unk>", "the", "cat", "sat", "on", "mat", "<3"])
    unicode = "\n".join(["<unk>", "5", "\u20ac", "z", "\u00e9", "r", "o", "\u4e2d", "\U0001F600", "\u202e", "\u2066",
                          "\u200f", "\u200d", "\u0301"])

    def seed(flags, vocab, text):
        vocab = vocab.encode() if isinstance(vocab, str) else vocab
        text = text.encode() if isinstance(text, str) else text
        return bytes([flags]) + vocab + b"\0" + text

    return {
        "valid-chars": seed(0, letters, "hello"),
        "valid-chars-unk": seed(2, letters, "h\u00e9llo \x1b[2J"),
        "valid-unicode": seed(0, unicode, "5\u20acz\u00e9ro\u4e2d\U0001F600\u202e\u2066\u200f\u200dz\u0301"),
        "valid-words": seed(1, words, "the  cat\tsat\non the mat"),
        "valid-words-unk": seed(1, words, "the zebra <3 \x1b]0;TITLE\x07 \xff\xfe"),
        "valid-words-lt": seed(1, words, "<3 the"),
        "bad-unknown-char": seed(0, letters, "hello World"),
        "bad-escape-in-text": seed(0, letters, "ab\x1b[31mc"),
        "bad-nul-in-text": seed(0, letters, b"ab\0cd"),
        "bad-c1-in-text": seed(0, letters, "a\u0085b\u009b"),
        "bad-invalid-bytes": seed(0, letters, b"a\xff\xc0\xaf\xed\xa0\x80\xe2\x82"),
        "bad-unknown-word": seed(1, "\n".join(["<pad>", "the", "cat"]), "the dog"),
        "bad-duplicate": seed(0, "a\nb\na", "ab"),
        "bad-empty-entry": seed(0, "a\n\nb", "ab"),
        "bad-empty-vocabulary": b"\x00",
        "bad-special-typed": seed(0, letters, "<eos>"),
        "any-control-token": seed(0, "a\n\x1b\n\x7f\n\u0085", "a\x1b\x7f\u0085"),
        "any-invalid-token": seed(0, b"a\n\xff\n\xed\xa0\x80", b"a\xff"),
        "any-multi-char-token": seed(2, "<unk>\nab\nc", "abc"),
        "any-space-word": seed(1, "<unk>\nthe cat\ndog", "the cat dog"),
        # gpt2_bpe: merges "\u0120 t", "h e", "\u0120t he" (\u0120 = a space), then a malformed and an unknown one.
        "valid-gpt2-bpe": seed(4, "\u0120 t\nh e\n\u0120t he\nab\nx y z\nq \u0144",
                               " the  cat\u2019s caf\u00e9 \U0001F600\t\n\x1b[2J\u202e"),
        "bad-gpt2-bpe-invalid-utf8": seed(4, "h e", b"the \xff\xc3"),
    }


if __name__ == "__main__":
    write_all("safetensors", safetensors_seeds())
    write_all("config", config_seeds())
    write_all("forward", forward_seeds())
    write_all("text", text_seeds())
