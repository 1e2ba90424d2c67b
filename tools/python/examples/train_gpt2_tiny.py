#!/usr/bin/python3
"""A tiny GPT-2, with its own byte-level BPE vocabulary, as a Hugging Face folder, into tinyformer.

GPT-2 reads text as bytes: every byte is first shown as one printable character
(the byte-to-character table below), the text is cut into pieces by GPT-2's
pre-tokenizer pattern, and inside each piece the learned merges join
neighbouring symbols, lowest rank first, until none applies. This script

1. generates a text (seeded): runs of 5 consecutive numbers, each written in
   words and in digits, "forty one is 41, forty two is 42, ... forty five is 45. ";
2. learns a byte-level BPE vocabulary from it, the way GPT-2's was made:
   256 byte symbols, then MERGES times the most frequent adjacent pair inside
   the pre-tokenized pieces (ties: the pair seen first) becomes a new symbol;
   the vocabulary is the 256 byte symbols (in the byte-to-character table's
   order, as GPT-2's encoder.json starts), the merged symbols in rank order,
   and <|endoftext|> last (GPT-2's end token; never in the text);
3. trains families/hf_gpt2.py's GPT2LMHead (Hugging Face's GPT2LMHeadModel
   structure and key names: Conv1D weights [in, out], gelu_new, tied lm_head)
   as GPT-2 language models are trained: the text's ids as one stream, random
   windows of n_positions tokens, next-token cross-entropy, AdamW with a linear
   warmup and a linear decay (Hugging Face Trainer's default schedule),
   gradients clipped to norm 1;
4. writes the folder data/families/gpt2-tiny/ (config.json, model.safetensors,
   vocab.json, merges.txt: what an HF GPT-2 folder holds), converts it with the
   hf-gpt2 converter (families.hf_gpt2.convert_hf_gpt2) to
   data/families/gpt2-tiny.safetensors, and writes PyTorch's greedy
   continuations of a few prompts to data/families/gpt2-tiny.greedy.tsv
   (prompt TAB continuation TAB tokens generated), which
   tests/test_family_models.cpp compares with `tinyformer run --max-new-tokens`.

The pre-tokenizer is GPT-2's pattern written with Python's re (no `regex`
package here): letters as [^\\W\\d_] for \\p{L} and digits as \\d for \\p{N}, which
agree on ASCII text such as this one; the engine's gpt2_bpe tokenizer has the
Unicode-exact classes. Run from the repository root (Debian's python3-torch):

    /usr/bin/python3 tools/python/examples/train_gpt2_tiny.py | tee data/families/gpt2-tiny.train.log
"""

import argparse
import math
import os
import random
import re
import sys
import time
from pathlib import Path

import torch
from torch.nn import functional as F

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools" / "python"))
sys.path.insert(0, str(REPO / "tools" / "python" / "examples"))
import safe_write  # noqa: E402
from families import write_converted  # noqa: E402
from families.hf_gpt2 import EOS_TOKEN, GPT2Config, GPT2LMHead, convert_hf_gpt2, save_folder  # noqa: E402
from train_nanogpt_char import in_words  # noqa: E402

NAME = "gpt2-tiny"
MERGES = 300
PROMPTS = ["forty one is 41, forty two is", "seven hundred and ten is 710,", "ninety nine is",
           "three hundred and three is 303, three hundred and four is 304,", "one is 1, two is 2,"]
NEW_TOKENS = 12

# GPT-2's pre-tokenizer: contractions, an optional space and letters, an optional
# space and digits, an optional space and other symbols, whitespace not before a
# non-space, whitespace.
PIECES = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+")


def byte_characters():
    """[character of byte 0, ..., of byte 255]: the printable, non-space bytes
    '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF stand for themselves; every other
    byte, in byte order, for U+0100, U+0101, ... (so a space is 'Ġ', U+0120)."""
    kept = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table, extra = [], 0
    for b in range(256):
        if b in kept:
            table.append(chr(b))
        else:
            table.append(chr(0x100 + extra))
            extra += 1
    return table


def byte_order():
    """The 256 bytes in GPT-2's encoder.json order: the kept ones first, then the rest."""
    chars = byte_characters()
    return sorted(range(256), key=lambda b: (ord(chars[b]) >= 0x100, ord(chars[b])))


def symbols_of(piece, chars):
    return tuple(chars[b] for b in piece.encode("utf-8"))


def learn_merges(text, count):
    """`count` merges ("left right", rank order) learned from the pieces of `text`."""
    chars = byte_characters()
    words = {}
    for piece in PIECES.findall(text):
        key = symbols_of(piece, chars)
        words[key] = words.get(key, 0) + 1
    merges = []
    for _ in range(count):
        pairs = {}
        for word, n in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] = pairs.get(pair, 0) + n
        if not pairs:
            break
        best = max(pairs, key=lambda p: pairs[p])  # dicts keep insertion order: ties go to the first seen
        merges.append(best)
        joined = {}
        for word, n in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            joined[tuple(out)] = joined.get(tuple(out), 0) + n
        words = joined
    return [f"{a} {b}" for a, b in merges]


def encode(text, merges, stoi):
    """GPT-2's encoding: per piece, merge the lowest-ranked adjacent pair until none is a merge."""
    chars = byte_characters()
    rank = {tuple(m.split(" ")): i for i, m in enumerate(merges)}
    ids = []
    for piece in PIECES.findall(text):
        word = list(symbols_of(piece, chars))
        while len(word) > 1:
            pair = min(zip(word, word[1:]), key=lambda p: rank.get(p, math.inf))
            if pair not in rank:
                break
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            word = out
        ids += [stoi[s] for s in word]
    return ids


def decode(ids, vocab):
    back = {c: b for b, c in enumerate(byte_characters())}
    return bytes(back[c] for i in ids for c in vocab[i]).decode("utf-8", errors="replace")


def make_text(runs, seed):
    rng = random.Random(seed)
    parts = []
    for _ in range(runs):
        start = rng.randint(1, 995)
        parts.append(", ".join(f"{in_words(n)} is {n}" for n in range(start, start + 5)) + ". ")
    return "".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO / "data" / "families"), help="folder (default data/families)")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1234)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    text = make_text(600, 1234)
    started = time.time()
    merges = learn_merges(text, MERGES)
    chars = byte_characters()
    vocab = [chars[b] for b in byte_order()] + [m.replace(" ", "") for m in merges] + [EOS_TOKEN]
    if len(set(vocab)) != len(vocab):
        raise SystemExit(f"{NAME}: two merges made the same symbol")
    stoi = {s: i for i, s in enumerate(vocab)}
    ids = torch.tensor(encode(text, merges, stoi))
    print(f"{NAME}: text of {len(text)} characters; {len(merges)} merges learned ({time.time() - started:.0f} s), "
          f"vocabulary {len(vocab)}; the text is {len(ids)} tokens")
    print(f"  first merges: {merges[:8]}")

    config = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=64, n_layer=2, n_head=4)
    model = GPT2LMHead(config)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=2e-3)
    warmup, block, batch = args.steps // 10, config.n_positions, 16
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: (s + 1) / warmup if s < warmup else max(0.0, (args.steps - s) / (args.steps - warmup)))
    print(f"{NAME}: GPT2LMHead n_layer 2 n_head 4 n_embd 64 n_positions 64, "
          f"{sum(p.numel() for p in model.parameters())} parameters, {args.steps} steps of {batch} x {block}")
    model.train()
    started = time.time()
    for step in range(1, args.steps + 1):
        starts = torch.randint(len(ids) - block - 1, (batch,))
        x = torch.stack([ids[s:s + block] for s in starts])
        y = torch.stack([ids[s + 1:s + 1 + block] for s in starts])
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % 250 == 0:
            print(f"  step {step:5d}  loss {loss.item():.4f}  ({time.time() - started:.0f} s)")
    model.eval()

    folder = out / NAME
    save_folder(model, str(folder), vocab=vocab, merges=merges)
    converted = convert_hf_gpt2(str(folder))
    target = out / f"{NAME}.safetensors"
    write_converted(str(target), converted)
    print(f"{NAME}: wrote {folder.name}/ (config.json, model.safetensors, vocab.json, merges.txt) and {target.name} "
          f"({os.path.getsize(target)} bytes, families.hf_gpt2.convert_hf_gpt2)")

    eos = stoi[EOS_TOKEN]
    lines = [f"# prompt\tPyTorch greedy continuation\ttokens (GPT2LMHead.generate_greedy, "
             f"tools/python/examples/train_gpt2_tiny.py)"]
    for prompt in PROMPTS:
        idx = torch.tensor([encode(prompt, merges, stoi)])
        new = model.generate_greedy(idx, NEW_TOKENS)[0, idx.shape[1]:].tolist()
        if eos in new:  # tinyformer stops at the end token (the converter sets eos_id)
            new = new[:new.index(eos)]
        continuation = decode(new, vocab)
        lines.append(f"{prompt}\t{continuation}\t{len(new)}")
        print(f"  greedy: {prompt!r} -> {continuation!r} ({len(new)} tokens: {[vocab[i] for i in new]})")
    safe_write.write_text(str(out / f"{NAME}.greedy.tsv"), "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
