#!/usr/bin/python3
"""A llama2.c-shaped model, trained the way llama2.c's train.py trains one, into tinyformer.

The parts, each in the project's own code (families/llama.py holds the model):

1. Data: the number-words text shipped in data/families/nanogpt-char (its
   train.bin / val.bin decoded with meta.pkl), encoded with the committed
   SentencePiece-style vocabulary data/families/llama2c-tiny/tokenizer.bin
   (tools/python/examples/make_llama2c_tokenizer.py) by run.c's rule
   (families.llama.encode_words), with BOS (1) in front as llama2.c's
   pretokenizer puts it before each story.
2. Training (train.py's loop): random max_seq_len windows (targets shifted by
   one), AdamW (weight decay 0.1 on the 2-d weights only, betas 0.9/0.95),
   linear warmup then cosine decay to a tenth, gradients clipped to norm 1,
   train/val loss every eval_interval steps, a checkpoint whenever val improves.
3. The checkpoint as train.py saves it: ckpt.pt = {"model": state_dict
   (llama2.c's names, the attention.mask buffers included as llama2.c saves
   them on torch < 2.0), "model_args": train.py's model_args dict,
   "iter_num", "best_val_loss"} (the optimizer state left out: it would triple
   the file; the converter does not read it).

Model: ModelArgs(dim=64, n_layers=4, n_heads=4, n_kv_heads=2 (grouped-query
attention: two query heads per K/V head), vocab_size=384, multiple_of=32
(hidden 192), max_seq_len=64, dropout=0).

Then it writes, into data/families/llama2c-tiny/: model.bin (export.py's v1
layout, families.llama.llama2c_bin_bytes), the tinyformer export
llama2c-tiny.safetensors (convert_llama2c_checkpoint with the tokenizer), and
llama2c-tiny.greedy.tsv: PyTorch's greedy continuations (Transformer.generate
with temperature 0.0, llama2.c's argmax) of a few prompts, as ids and as text.

    /usr/bin/python3 tools/python/examples/train_llama2c_tiny.py | tee data/families/llama2c-tiny/train.log

--out DIR writes under DIR instead (a quick try: --out /tmp/lt --max-iters 100).
"""

import argparse
import math
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools" / "python"))
sys.path.insert(0, str(REPO / "tools" / "python" / "examples"))
import safe_write  # noqa: E402
from families import write_converted  # noqa: E402
from families import llama  # noqa: E402
from torch_file import load_torch_file  # noqa: E402
import make_llama2c_tokenizer as tok  # noqa: E402

NAME = "llama2c-tiny"
PROMPTS = ["forty one, forty two,", "one hundred and six,", "seventy seven, seventy eight,",
           "three hundred and twelve,", "nine, ten,"]
NEW_TOKENS = 24


def greedy_rows(model, pieces, scores):
    """(prompt text, prompt ids with BOS, continuation ids, continuation text) per prompt."""
    rows = []
    for prompt in PROMPTS:
        ids = [1] + llama.encode(prompt, pieces, scores)
        count = min(NEW_TOKENS, model.params.max_seq_len - len(ids))
        out = model.generate(torch.tensor([ids]), count, temperature=0.0)[0, len(ids):].tolist()
        rows.append((prompt, ids, out, llama.decode(out, pieces)))
    return rows


def write_greedy(model, pieces, scores, path):
    lines = ["# prompt\tprompt ids (BOS 1 first, run.c's encoding)\tPyTorch greedy continuation ids\t"
             "its text (families.llama.Transformer.generate(temperature=0.0), "
             "tools/python/examples/train_llama2c_tiny.py)"]
    for prompt, ids, out, text in greedy_rows(model, pieces, scores):
        lines.append(f"{prompt}\t{','.join(map(str, ids))}\t{','.join(map(str, out))}\t{text}")
    safe_write.write_text(str(path), "\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(REPO / "data" / "families" / NAME), help="folder")
    ap.add_argument("--max-iters", type=int, default=800)
    ap.add_argument("--greedy-only", action="store_true", help="rewrite the .greedy.tsv from the committed ckpt.pt")
    args = ap.parse_args()
    torch.set_num_threads(1)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = REPO / "data" / "families" / NAME / "tokenizer.bin"
    pieces, scores, _ = llama.read_tokenizer_bin(tokenizer)
    if args.greedy_only:
        converted = llama.convert_llama2c_checkpoint(folder / "ckpt.pt")
        write_greedy(converted.reference, pieces, scores, folder / f"{NAME}.greedy.tsv")
        return

    config = dict(batch_size=16, max_seq_len=64, dim=64, n_layers=4, n_heads=4, n_kv_heads=2, multiple_of=32,
                  dropout=0.0, learning_rate=2e-3, max_iters=args.max_iters, weight_decay=0.1, beta1=0.9,
                  beta2=0.95, grad_clip=1.0, warmup_iters=min(100, args.max_iters // 10),
                  min_lr=2e-4, eval_interval=250, eval_iters=10, seed=1337)
    torch.manual_seed(config["seed"])
    data = {}
    for split in ("train", "val"):
        data[split] = torch.tensor([1] + llama.encode_words(tok.source_text(split), pieces, scores))
    print(f"{NAME}: vocabulary {len(pieces)} pieces ({tokenizer.relative_to(REPO)}); train {len(data['train'])} "
          f"tokens, val {len(data['val'])} tokens (BOS first)")
    block, batch = config["max_seq_len"], config["batch_size"]

    def get_batch(split):
        ids = data[split]
        starts = torch.randint(len(ids) - block, (batch,))
        return (torch.stack([ids[i:i + block] for i in starts]),
                torch.stack([ids[i + 1:i + 1 + block] for i in starts]))

    model_args = dict(dim=config["dim"], n_layers=config["n_layers"], n_heads=config["n_heads"],
                      n_kv_heads=config["n_kv_heads"], vocab_size=len(pieces), multiple_of=config["multiple_of"],
                      max_seq_len=block, dropout=config["dropout"])
    model = llama.Transformer(llama.ModelArgs(**model_args))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config["weight_decay"]},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=config["learning_rate"], betas=(config["beta1"], config["beta2"]))
    print(f"{NAME}: llama2.c Transformer {model_args}, {sum(p.numel() for p in model.parameters())} parameters, "
          f"{config['max_iters']} iterations of {batch} x {block}")

    def lr_at(it):
        if it < config["warmup_iters"]:
            return config["learning_rate"] * (it + 1) / (config["warmup_iters"] + 1)
        ratio = min(1.0, (it - config["warmup_iters"]) / max(1, config["max_iters"] - config["warmup_iters"]))
        return config["min_lr"] + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (config["learning_rate"] - config["min_lr"])

    @torch.no_grad()
    def estimate_loss():
        model.eval()
        out = {s: torch.stack([model.loss(*get_batch(s)) for _ in range(config["eval_iters"])]).mean()
               for s in ("train", "val")}
        model.train()
        return out

    best_val_loss, started, ckpt = 1e9, time.time(), None
    for it in range(config["max_iters"] + 1):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(it)
        if it % config["eval_interval"] == 0 or it == config["max_iters"]:
            losses = estimate_loss()
            print(f"  step {it:5d}  train loss {losses['train']:.4f}  val loss {losses['val']:.4f}  "
                  f"lr {lr_at(it):.2e}  ({time.time() - started:.0f} s)", flush=True)
            if losses["val"] < best_val_loss and it > 0:
                best_val_loss = float(losses["val"])
                ckpt = {"model": {k: v.clone() for k, v in model.state_dict().items()}, "model_args": model_args,
                        "iter_num": it, "best_val_loss": best_val_loss}
        if it == config["max_iters"]:
            break
        x, y = get_batch("train")
        loss = model.loss(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config["grad_clip"])
        optimizer.step()
    import io
    buffer = io.BytesIO()
    torch.save(ckpt, buffer)
    safe_write.write_bytes(str(folder / "ckpt.pt"), buffer.getvalue())
    print(f"{NAME}: wrote ckpt.pt (iter_num {ckpt['iter_num']}, best_val_loss {ckpt['best_val_loss']:.4f}) "
          f"after {time.time() - started:.0f} s")

    converted = llama.convert_llama2c_checkpoint(folder / "ckpt.pt", tokenizer=tokenizer)
    safe_write.write_bytes(str(folder / "model.bin"), llama.llama2c_bin_bytes(converted, 1))
    write_converted(folder / f"{NAME}.safetensors", converted)
    write_greedy(converted.reference, pieces, scores, folder / f"{NAME}.greedy.tsv")
    for prompt, ids, out, text in greedy_rows(converted.reference, pieces, scores):
        print(f"  greedy {prompt!r} -> {text!r}")
    assert load_torch_file(folder / "ckpt.pt")["iter_num"] == ckpt["iter_num"]


if __name__ == "__main__":
    main()
