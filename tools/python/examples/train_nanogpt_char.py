#!/usr/bin/python3
"""A nanoGPT-style character model, trained the way nanoGPT trains one, into tinyformer.

nanoGPT's character recipe has three parts; this script does each in the
project's own code (families/gpt.py holds the model):

1. Data preparation (nanoGPT's data/*_char/prepare.py does this for a text
   file): a text -> its sorted set of characters (the vocabulary) -> stoi/itos
   -> the first 90% of the ids as train.bin, the last 10% as val.bin (uint16,
   the raw array) and meta.pkl ({'vocab_size', 'itos', 'stoi'}). The text is
   generated here, seeded, so it needs no download and has a structure a small
   model learns in a CPU minute: runs of 6 consecutive numbers in English words
   from a random start, "forty one, forty two, ... forty six. " (numbers 1 to
   999), on one line (a newline would be a token of its own, docs/FORMAT.md;
   the committed model, trained so, is kept as it is).
2. Training (nanoGPT's train.py loop): random block_size windows of train.bin
   as a batch (targets shifted by one), AdamW (weight decay on the 2-d weights
   only, betas 0.9/0.99 as its char config), the learning rate warmed up
   linearly, then a cosine decay to a tenth, gradients clipped to norm 1,
   train and val loss estimated every eval_interval steps on eval_iters
   batches, and a checkpoint written whenever val improves.
3. The checkpoint (what train.py saves): ckpt.pt = {'model': state_dict
   (nanoGPT's key names, the attn.bias mask buffers included as torch < 2.0
   saves them), 'model_args', 'iter_num', 'best_val_loss', 'config'}. The
   optimizer state is left out: it would triple the file (over the 2 MB this
   repository keeps a file under); nanoGPT's converter does not read it.

Model: GPTConfig(n_layer=4, n_head=4, n_embd=64, block_size=64, bias=False,
gelu="exact", tie=True, dropout=0): nanoGPT's defaults but small.

Then it exports the checkpoint with the nanoGPT converter
(families.gpt.convert_nanogpt with meta.pkl, gelu "exact": nanoGPT's nn.GELU)
to data/families/nanogpt-char.safetensors, and writes PyTorch's greedy
continuations of a few prompts (GPT.generate(do_sample=False): nanoGPT's
loop with the argmax) to data/families/nanogpt-char.greedy.tsv
(prompt TAB continuation), which tests/test_family_models.cpp compares with
`tinyformer run --max-new-tokens`. Run from the repository root
(Debian's python3-torch):

    /usr/bin/python3 tools/python/examples/train_nanogpt_char.py | tee data/families/nanogpt-char.train.log

--out DIR writes everything under DIR instead of data/families (a quick try:
--out /tmp/nc --max-iters 200).
"""

import argparse
import io
import math
import os
import pickle
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools" / "python"))
import safe_write  # noqa: E402
from families import write_converted  # noqa: E402
from families.gpt import GPT, GPTConfig, convert_nanogpt, read_meta  # noqa: E402
from torch_file import load_torch_file  # noqa: E402

NAME = "nanogpt-char"
ONES = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
PROMPTS = ["forty one, forty two, ", "one hundred and six, ", "seventy seven, seventy eight, seventy nine, ",
           "three hundred and twelve, three hundred and thirteen, ", "nine, ten, "]
# Characters generated after each prompt (the model has no end token): 48, or fewer
# so that prompt + continuation fit in block_size, the positions tinyformer decodes
# into (nanoGPT's generate would crop the context and go on).
NEW_TOKENS = 48


def in_words(n):
    """1..999 in English words: 'three hundred and twelve', 'forty one'."""
    words = []
    if n >= 100:
        words += [ONES[n // 100], "hundred"]
        n %= 100
        if n:
            words.append("and")
    if n >= 20:
        words.append(TENS[n // 10])
        n %= 10
    if n:
        words.append(ONES[n])
    return " ".join(words)


def make_text(runs, seed):
    """`runs` runs of 6 consecutive numbers from a random start, each ended by '. '."""
    rng = random.Random(seed)
    parts = []
    for _ in range(runs):
        start = rng.randint(1, 994)
        parts.append(", ".join(in_words(n) for n in range(start, start + 6)) + ". ")
    return "".join(parts)


def prepare(text, folder):
    """nanoGPT's char preparation: (train ids, val ids, vocabulary); writes train.bin, val.bin, meta.pkl."""
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}
    ids = np.array([stoi[ch] for ch in text], dtype=np.uint16)
    split = int(0.9 * len(ids))
    train, val = ids[:split], ids[split:]
    safe_write.write_bytes(str(folder / "train.bin"), train.tobytes())
    safe_write.write_bytes(str(folder / "val.bin"), val.tobytes())
    safe_write.write_bytes(str(folder / "meta.pkl"),
                           pickle.dumps({"vocab_size": len(chars), "itos": itos, "stoi": stoi}))
    return train, val, chars


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO / "data" / "families"), help="folder (default data/families)")
    parser.add_argument("--max-iters", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--greedy-only", action="store_true",
                        help="no training: rewrite NAME.greedy.tsv from the committed ckpt.pt and meta.pkl")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    folder = out / NAME
    folder.mkdir(parents=True, exist_ok=True)
    if args.greedy_only:
        ckpt = load_torch_file(folder / "ckpt.pt")
        a = ckpt["model_args"]
        model = GPT(GPTConfig(block_size=a["block_size"], vocab_size=a["vocab_size"], n_layer=a["n_layer"],
                              n_head=a["n_head"], n_embd=a["n_embd"], bias=a["bias"], gelu="exact", tie=True))
        model.load_state_dict(ckpt["model"])
        write_greedy(model.eval(), read_meta(folder / "meta.pkl"), out)
        return

    # The training settings, as nanoGPT's config/train_shakespeare_char.py names them.
    config = dict(batch_size=16, block_size=64, n_layer=4, n_head=4, n_embd=64, dropout=0.0, bias=False,
                  learning_rate=1e-3, max_iters=args.max_iters, weight_decay=0.1, beta1=0.9, beta2=0.99,
                  grad_clip=1.0, warmup_iters=min(100, args.max_iters // 10), lr_decay_iters=args.max_iters, min_lr=1e-4,
                  eval_interval=250, eval_iters=10, seed=1337, runs=400)
    torch.manual_seed(config["seed"])
    text = make_text(config["runs"], config["seed"])
    train, val, chars = prepare(text, folder)
    print(f"{NAME}: text of {len(text)} characters, vocabulary {len(chars)}: {''.join(chars)!r}; "
          f"train {len(train)} ids, val {len(val)} ids")

    block, batch = config["block_size"], config["batch_size"]
    data = {"train": torch.from_numpy(train.astype(np.int64)), "val": torch.from_numpy(val.astype(np.int64))}

    def get_batch(split):
        ids = data[split]
        starts = torch.randint(len(ids) - block, (batch,))
        x = torch.stack([ids[i:i + block] for i in starts])
        y = torch.stack([ids[i + 1:i + 1 + block] for i in starts])
        return x, y

    model_args = dict(n_layer=config["n_layer"], n_head=config["n_head"], n_embd=config["n_embd"],
                      block_size=block, bias=config["bias"], vocab_size=len(chars), dropout=config["dropout"])
    model = GPT(GPTConfig(block_size=block, vocab_size=len(chars), n_layer=config["n_layer"],
                          n_head=config["n_head"], n_embd=config["n_embd"], bias=config["bias"], gelu="exact",
                          tie=True, dropout=config["dropout"]))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config["weight_decay"]},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=config["learning_rate"], betas=(config["beta1"], config["beta2"]))
    print(f"{NAME}: GPT n_layer {config['n_layer']} n_head {config['n_head']} n_embd {config['n_embd']} "
          f"block_size {block} bias False, {sum(p.numel() for p in model.parameters())} parameters, "
          f"{config['max_iters']} iterations of {batch} x {block}")

    def lr_at(it):  # linear warmup, then cosine decay to min_lr
        if it < config["warmup_iters"]:
            return config["learning_rate"] * (it + 1) / (config["warmup_iters"] + 1)
        if it >= config["lr_decay_iters"]:
            return config["min_lr"]
        ratio = (it - config["warmup_iters"]) / (config["lr_decay_iters"] - config["warmup_iters"])
        return config["min_lr"] + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (config["learning_rate"] - config["min_lr"])

    @torch.no_grad()
    def estimate_loss():
        model.eval()
        losses = {}
        for split in ("train", "val"):
            losses[split] = torch.stack([model.loss(*get_batch(split)) for _ in range(config["eval_iters"])]).mean()
        model.train()
        return losses

    best_val_loss, started = 1e9, time.time()
    saved = None
    for it in range(config["max_iters"] + 1):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(it)
        if it % config["eval_interval"] == 0 or it == config["max_iters"]:
            losses = estimate_loss()
            print(f"  step {it:5d}  train loss {losses['train']:.4f}  val loss {losses['val']:.4f}  "
                  f"lr {lr_at(it):.2e}  ({time.time() - started:.0f} s)")
            if losses["val"] < best_val_loss:
                best_val_loss = losses["val"]
                saved = {"model": {k: v.clone() for k, v in model.state_dict().items()}, "model_args": model_args,
                         "iter_num": it, "best_val_loss": best_val_loss, "config": config}
        if it == config["max_iters"]:
            break
        x, y = get_batch("train")
        loss = model.loss(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config["grad_clip"])
        optimizer.step()

    buffer = io.BytesIO()
    torch.save(saved, buffer)
    ckpt = folder / "ckpt.pt"
    safe_write.write_bytes(str(ckpt), buffer.getvalue())
    print(f"{NAME}: wrote {ckpt.relative_to(out.parent) if out.parent in ckpt.parents else ckpt} "
          f"({len(buffer.getvalue())} bytes; iter_num {saved['iter_num']}, best_val_loss {float(best_val_loss):.4f})")
    reread = load_torch_file(ckpt)            # the converters' own reader (tools/python/torch_file.py)
    print(f"{NAME}: the project's reader reads ckpt.pt back: {len(reread['model'])} tensors, "
          f"iter_num {reread['iter_num']}")

    # The model the checkpoint holds (the best val loss), in eval mode.
    model.load_state_dict(saved["model"])
    model.eval()
    converted = convert_nanogpt(ckpt, meta_path=folder / "meta.pkl", gelu="exact")
    target = out / f"{NAME}.safetensors"
    write_converted(str(target), converted)
    print(f"{NAME}: exported {target.name} with the nanoGPT converter ({os.path.getsize(target)} bytes)")

    write_greedy(model, chars, out)


def write_greedy(model, chars, out):
    """NAME.greedy.tsv: prompt TAB PyTorch's greedy continuation TAB its length."""
    stoi = {ch: i for i, ch in enumerate(chars)}
    lines = [f"# prompt\tPyTorch greedy continuation\tcharacters: {NEW_TOKENS}, or as many as fit in block_size "
             f"(families.gpt.GPT.generate(do_sample=False), tools/python/examples/train_nanogpt_char.py)"]
    for prompt in PROMPTS:
        idx = torch.tensor([[stoi[ch] for ch in prompt]])
        count = min(NEW_TOKENS, model.config.block_size - len(prompt))
        ids = model.generate(idx, count, do_sample=False)[0, idx.shape[1]:].tolist()
        continuation = "".join(chars[i] for i in ids)
        lines.append(f"{prompt}\t{continuation}\t{count}")
        print(f"  greedy: {prompt!r} -> {continuation!r}")
    safe_write.write_text(str(out / f"{NAME}.greedy.tsv"), "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
