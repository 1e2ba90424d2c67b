#!/usr/bin/python3
"""minGPT's sorting demo, in the project's own code, trained and brought into tinyformer.

minGPT's demo teaches a tiny GPT to sort: the input is `length` digits from
0..num_digits-1, and the model reads the digits, then writes them sorted:

    sequence   2 0 1 2 0 1 | 0 0 1 1 2 2
    x          the 11 first tokens (inputs and the answer but its last digit)
    y          the 11 last, with -1 (ignored by the loss) where y is still an input digit

so the loss counts only the answer. Examples are drawn at random; each is
assigned to train or test by a stable hash of its digits (one in four goes
to test), so the test sequences are never trained on.

Model (minGPT's "gpt-nano"): n_layer 3, n_head 3, n_embd 48, block_size 11,
vocabulary 3 ('0', '1', '2'); minGPT's design in families/gpt.py:
GPTConfig(bias=True, gelu="tanh" (minGPT's NewGELU), tie=False: its own
lm_head without bias). Trainer (minGPT's Trainer defaults for the demo):
AdamW, lr 5e-4, betas (0.9, 0.95), weight decay 0.1 on the Linear weights
only (not on LayerNorms, embeddings, biases), gradients clipped to norm 1,
batches of 64, 2000 iterations, seed 3407.

Writes, under data/families/ (--out DIR elsewhere):
    mingpt-sort.pt            the state_dict, torch.save(model.state_dict()) as minGPT
                              users save it (attn.bias mask buffers included)
    mingpt-sort.safetensors   converted by families.gpt.convert_mingpt (n_head 3, tanh GELU)
                              with the vocabulary '0' '1' '2' (tokenizer "char")
    mingpt-sort.greedy.tsv    test inputs TAB PyTorch's greedy answer (GPT.generate with
                              do_sample=False, minGPT's greedy mode), 6 tokens each,
                              which tests/test_family_models.cpp compares with
                              `tinyformer run --max-new-tokens 6`
and prints the test accuracy. Run from the repository root (Debian's python3-torch):

    /usr/bin/python3 tools/python/examples/train_mingpt_sort.py | tee data/families/mingpt-sort.train.log
"""

import argparse
import io
import os
import sys
import time
import zlib
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools" / "python"))
import safe_write  # noqa: E402
from families import write_converted  # noqa: E402
from families.gpt import GPT, GPTConfig, convert_mingpt  # noqa: E402

NAME = "mingpt-sort"
LENGTH, DIGITS = 6, 3
GREEDY_ROWS = 20


def split_of(digits):
    """'test' for one sequence in four, by a hash that is the same in every process."""
    return "test" if zlib.crc32(bytes(digits)) % 4 == 0 else "train"


def example(generator, split):
    """(x, y) of one random sequence of `split`: x [2L-1], y [2L-1] with -1 over the inputs."""
    while True:
        digits = torch.randint(DIGITS, (LENGTH,), generator=generator)
        if split_of(digits.tolist()) == split:
            break
    sequence = torch.cat([digits, torch.sort(digits)[0]])
    x, y = sequence[:-1].clone(), sequence[1:].clone()
    y[:LENGTH - 1] = -1
    return x, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO / "data" / "families"), help="folder (default data/families)")
    parser.add_argument("--max-iters", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(3407)
    generator = torch.Generator().manual_seed(3407)

    config = GPTConfig(block_size=2 * LENGTH - 1, vocab_size=DIGITS, n_layer=3, n_head=3, n_embd=48, bias=True,
                       gelu="tanh", tie=False)
    model = GPT(config)
    decay, no_decay = [], []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            (decay if isinstance(module, torch.nn.Linear) and name == "weight" else no_decay).append(p)
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=5e-4, betas=(0.9, 0.95))
    print(f"{NAME}: GPT n_layer 3 n_head 3 n_embd 48 block_size {config.block_size} (minGPT's gpt-nano, tanh GELU, "
          f"untied head), {sum(p.numel() for p in model.parameters())} parameters, {args.max_iters} iterations of 64")
    started = time.time()
    model.train()
    for it in range(1, args.max_iters + 1):
        batch = [example(generator, "train") for _ in range(64)]
        x, y = torch.stack([b[0] for b in batch]), torch.stack([b[1] for b in batch])
        loss = model.loss(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if it % 200 == 0:
            print(f"  iter {it:5d}  loss {loss.item():.5f}  ({time.time() - started:.0f} s)")
    model.eval()

    # Test accuracy: greedy answers of fresh test sequences, whole answer right.
    test_generator = torch.Generator().manual_seed(2026)
    inputs = torch.stack([example(test_generator, "test")[0][:LENGTH] for _ in range(500)])
    with torch.no_grad():
        answers = model.generate(inputs, LENGTH, do_sample=False)[:, LENGTH:]
    correct = (answers == torch.sort(inputs, dim=1)[0]).all(dim=1).sum().item()
    print(f"{NAME}: test exact match {correct}/{len(inputs)} (greedy)")

    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    pt = out / f"{NAME}.pt"
    safe_write.write_bytes(str(pt), buffer.getvalue())
    converted = convert_mingpt(pt, n_head=3, vocab=[str(d) for d in range(DIGITS)], tokenizer="char")
    target = out / f"{NAME}.safetensors"
    write_converted(str(target), converted)
    print(f"{NAME}: wrote {pt.name} ({len(buffer.getvalue())} bytes) and {target.name} "
          f"({os.path.getsize(target)} bytes, families.gpt.convert_mingpt)")

    lines = [f"# input\tPyTorch greedy answer, {LENGTH} tokens (families.gpt.GPT.generate(do_sample=False), "
             f"tools/python/examples/train_mingpt_sort.py; test split)"]
    for row in range(GREEDY_ROWS):
        prompt = "".join(str(d) for d in inputs[row].tolist())
        lines.append(f"{prompt}\t{''.join(str(d) for d in answers[row].tolist())}")
    safe_write.write_text(str(out / f"{NAME}.greedy.tsv"), "\n".join(lines) + "\n")
    print("\n".join("  greedy: " + line for line in lines[1:6]))


if __name__ == "__main__":
    main()
