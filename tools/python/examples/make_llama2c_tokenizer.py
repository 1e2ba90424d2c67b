#!/usr/bin/python3
"""A small SentencePiece-style vocabulary with scores, written as llama2.c's tokenizer.bin.

llama2.c trains a SentencePiece BPE model (tinystories.py train_vocab) and
tokenizer.py exports it as tokenizer.bin (uint32 max_token_length, then per
piece: float32 score, uint32 length, the UTF-8 bytes). This script builds a
vocabulary of the same shape in the project's own code, from the number-words
text shipped in data/families/nanogpt-char (train.bin + meta.pkl):

    id 0 "<unk>", 1 "<s>", 2 "</s>"                       score 0
    ids 3..258 the byte-fallback pieces "<0x00>".."<0xFF>"  score 0
    then the learned merges, first learned first          score -rank (0, -1, -2, ...)
    then the text's single characters                    score below every merge

Merges are learned as BPE learns them: the text is split before every space
(so a piece holds a space only as its first character, SentencePiece's word
boundary), and the most frequent adjacent pair (ties: the smaller pair in
string order) is merged, until the vocabulary has --vocab-size pieces.
Encoding with it is run.c's rule (families.llama.encode): the adjacent pair
whose concatenation has the highest score merges first.

    /usr/bin/python3 tools/python/examples/make_llama2c_tokenizer.py   # writes data/families/llama2c-tiny/tokenizer.bin
"""

import argparse
import collections
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools" / "python"))
import safe_write  # noqa: E402
from families.gpt import read_meta  # noqa: E402
from families.llama import tokenizer_bin_bytes  # noqa: E402

SOURCE = REPO / "data" / "families" / "nanogpt-char"


def source_text(split="train"):
    """The text of nanogpt-char's train.bin / val.bin (uint16 ids of meta.pkl's characters)."""
    chars = read_meta(SOURCE / "meta.pkl")
    ids = np.fromfile(SOURCE / f"{split}.bin", dtype="<u2")
    return "".join(chars[i] for i in ids)


def words_of(text):
    """The chunks BPE learns on: the text (with the dummy prefix " ") split before every space."""
    text = " " + text
    chunks, start = [], 0
    for i in range(1, len(text)):
        if text[i] == " ":
            chunks.append(text[start:i])
            start = i
    chunks.append(text[start:])
    return collections.Counter(chunks)


def learn(text, vocab_size):
    """(pieces, scores) of the vocabulary described in the module docstring."""
    specials = ["<unk>", "<s>", "</s>"]
    byte_pieces = [f"<0x{b:02X}>" for b in range(256)]
    chars = sorted(set(text) | {" "})
    base = len(specials) + len(byte_pieces) + len(chars)
    if vocab_size <= base:
        raise SystemExit(f"--vocab-size {vocab_size}: needs more than the {base} base pieces")
    words = {tuple(w): n for w, n in words_of(text).items()}
    merges = []
    while base + len(merges) < vocab_size:
        pairs = collections.Counter()
        for w, n in words.items():
            for a, b in zip(w, w[1:]):
                pairs[a, b] += n
        if not pairs:
            break
        (a, b), _ = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        merged = a + b
        merges.append(merged)
        new_words = {}
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(merged)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
        words = new_words
    pieces = specials + byte_pieces + merges + chars
    scores = [0.0] * (len(specials) + len(byte_pieces)) + [-float(r) for r in range(len(merges))] + \
             [-float(len(merges) + j) for j in range(len(chars))]
    return pieces, scores


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab-size", type=int, default=384)
    ap.add_argument("--out", default=str(REPO / "data" / "families" / "llama2c-tiny" / "tokenizer.bin"))
    args = ap.parse_args()
    pieces, scores = learn(source_text("train"), args.vocab_size)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    safe_write.write_bytes(args.out, tokenizer_bin_bytes(pieces, scores))
    print(f"wrote {args.out}: {len(pieces)} pieces ({len(pieces) - 259 - len(set(source_text()) | {' '})} merges), "
          f"longest {max(len(p.encode()) for p in pieces)} bytes")


if __name__ == "__main__":
    main()
