#!/usr/bin/python3
"""Train the Annotated Transformer on its copy task, the way the Annotated
Transformer trains it, then export it for tinyformer and record PyTorch's
greedy outputs (data/families/README.md has the exact command).

The task (as upstream's data_gen): batches of 10 random ids from 1..V-1 with
the first one set to 1, the start symbol; the source and the target are the
same sequence. The decoder reads target[:-1] and learns target[1:], with the
Annotated masks (source: not padding; target: not padding & subsequent_mask),
id 0 = padding. Loss: upstream's LabelSmoothing (KL divergence to a smoothed
one-hot, summed, divided by the number of tokens; smoothing 0.0 by default as
upstream's copy example), Adam(betas 0.9/0.98, eps 1e-9) under upstream's rate
schedule  lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).

Model: families/annotated.py's make_model(11, 11, N=2, d_model=32, d_ff=64, h=4,
dropout=0.1, max_len=64): the project's own code with upstream's tree.

Outputs (in --out-dir, default data/families):
    annotated-copy.pt            the state_dict (torch.save)
    annotated-copy.safetensors   the export: vocabulary "<pad>", "1".."10" (whitespace
                                 tokenizer: tokens are the ids), pad_id 0, bos_id 1
                                 (the start symbol), max_len 16, no eos (greedy makes
                                 9 tokens, as upstream's greedy_decode)
    annotated-copy.greedy.tsv    200 held-out sources and greedy_decode's output
    annotated-copy.train.log     the loss per epoch

    /usr/bin/python3 tools/python/examples/train_annotated_copy.py [--epochs 30] [--out-dir DIR] [--no-check]

Seeded (torch.manual_seed(0), one thread): the same files on every run of this
PyTorch build.
"""

import argparse
import io
import sys
import time
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import safe_write  # noqa: E402
import tinyformer_export as tx  # noqa: E402
from families import annotated as A  # noqa: E402
from families import write_converted  # noqa: E402

REPO = HERE.parents[2]
V = 11              # ids 0..10: 0 = padding, 1 = start symbol, 2..10 the copied symbols (1 may occur too)
LENGTH = 10         # upstream's sequences of 10
START, PAD = 1, 0
VOCAB = ["<pad>"] + [str(i) for i in range(1, V)]
MAX_LEN = 16        # positions the file serves (the pe buffer equals FORMAT's table there)


def data_gen(batch_size, n_batches, gen):
    """Upstream's copy data: random 1..V-1, first column the start symbol; src = tgt."""
    for _ in range(n_batches):
        data = torch.randint(1, V, (batch_size, LENGTH), generator=gen)
        data[:, 0] = START
        yield data.clone(), data.clone()


class LabelSmoothing(nn.Module):
    """KL(smoothed one-hot || model) summed: the target row holds `confidence` at
    the true id, smoothing / (V - 2) elsewhere, 0 at the padding id; rows whose
    target is padding are all 0."""

    def __init__(self, size, padding_idx, smoothing=0.0):
        super().__init__()
        self.criterion = nn.KLDivLoss(reduction="sum")
        self.padding_idx, self.size = padding_idx, size
        self.confidence, self.smoothing = 1.0 - smoothing, smoothing

    def forward(self, log_probs, target):
        true = torch.full_like(log_probs, self.smoothing / (self.size - 2))
        true.scatter_(1, target.unsqueeze(1), self.confidence)
        true[:, self.padding_idx] = 0
        true[target == self.padding_idx] = 0
        return self.criterion(log_probs, true)


def rate(step, model_size, factor, warmup):
    step = max(step, 1)
    return factor * model_size ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def train(args, log):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = A.make_model(V, V, N=2, d_model=32, d_ff=64, h=4, dropout=0.1, max_len=64)
    criterion = LabelSmoothing(V, PAD, args.smoothing)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: rate(step, 32, args.factor, args.warmup))
    start = time.time()
    for epoch in range(args.epochs):
        model.train()
        total, tokens = 0.0, 0
        for src, tgt in data_gen(80, 20, gen):
            src_pad = src == PAD
            dec_in, dec_out = tgt[:, :-1], tgt[:, 1:]
            src_mask, tgt_mask = A.masks_from_padding(src_pad, dec_in == PAD)
            h = model(src, dec_in, src_mask, tgt_mask)
            log_probs = model.generator(h)
            n = int((dec_out != PAD).sum())
            loss = criterion(log_probs.reshape(-1, V), dec_out.reshape(-1)) / n
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
            total += float(loss) * n
            tokens += n
        log.append(f"epoch {epoch:3d}  loss/token {total / tokens:.4f}  lr {optimizer.param_groups[0]['lr']:.2e}  "
                   f"{time.time() - start:.0f}s")
        print(log[-1], flush=True)
    return model.eval()


def greedy_rows(model, n, seed):
    gen = torch.Generator().manual_seed(seed)
    rows, right, total = [], 0, 0
    with torch.no_grad():
        for src, _ in data_gen(1, n, gen):
            out = A.greedy_decode(model, src, torch.ones(1, 1, LENGTH, dtype=torch.bool), LENGTH, START)
            made = out[0, 1:].tolist()                       # the start symbol is not output
            want = src[0, 1:].tolist()
            right += sum(a == b for a, b in zip(made, want))
            total += len(want)
            rows.append((" ".join(VOCAB[i] for i in src[0].tolist()), " ".join(VOCAB[i] for i in made)))
    return rows, right / total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--factor", type=float, default=1.0, help="rate schedule factor (default 1.0)")
    ap.add_argument("--warmup", type=int, default=400, help="rate schedule warmup steps (default 400)")
    ap.add_argument("--smoothing", type=float, default=0.0, help="label smoothing (default 0.0, as upstream)")
    ap.add_argument("--out-dir", default=str(REPO / "data" / "families"))
    ap.add_argument("--no-check", action="store_true", help="do not check the export against the module")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    out = Path(args.out_dir)
    log = []
    model = train(args, log)
    rows, accuracy = greedy_rows(model, 200, seed=2026)
    log.append(f"greedy copy accuracy on 200 held-out sources: {accuracy:.4f} (per output token)")
    print(log[-1])
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    safe_write.write_bytes(str(out / "annotated-copy.pt"), buffer.getvalue())
    state = tx.load_state_dict_file(str(out / "annotated-copy.pt"))
    converted = A.convert_annotated(state, n_head=4, tgt_vocab=VOCAB, max_len=MAX_LEN, pad_id=PAD, bos_id=START,
                                    tokenizer="whitespace", train_max_len=LENGTH)
    for note in converted.notes:
        print("note:", note)
        log.append("note: " + note)
    model_path = str(out / "annotated-copy.safetensors")
    write_converted(model_path, converted)
    safe_write.write_text(str(out / "annotated-copy.greedy.tsv"),
                          "# source\tPyTorch greedy_decode output (tools/python/examples/train_annotated_copy.py, "
                          "200 held-out sources, seed 2026)\n" + "".join(f"{s}\t{g}\n" for s, g in rows))
    safe_write.write_text(str(out / "annotated-copy.train.log"), "\n".join(log) + "\n")
    if not args.no_check:
        worst = tx.check(model_path, model, verbose=True)
        print(f"check against the trained module: worst |a-b|/tol {worst:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
