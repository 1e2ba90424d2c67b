#!/usr/bin/python3
"""Train five tiny language models on a Markov chain, one per position scheme, for
docs/EXTRAPOLATION.md's second experiment (loss per position past the training length).

The language: a fixed second-order Markov chain over the eight letters a..h. The
next letter depends only on the two before it: P(x[t+1] | x[t-1], x[t]) is a row
of a table drawn once from seed 37 (each of the 64 rows a Dirichlet(0.3) sample,
so a few letters are likely and the rest rare). Every sequence starts after 64
burn-in steps from a uniform pair, so its letters follow the chain's stationary
distribution at every position: the best possible loss is the same everywhere
past position 1 (the chain's entropy rate, printed by the script).

The models: train_extrapolation.py's Model (the project's own pre-LN decoder-only
module with the engine's tensor names, so the state dict is the checkpoint),
identical but for positions (tools/python/position_schemes.py, plus "none"):

    learned      lm-learned      a trained [max_len, D] table
    sinusoidal   lm-sinusoidal   the fixed sin/cos table
    rotary       lm-rotary       q, k rotated per head (rope_theta 10000, rope_pairs adjacent)
    alibi        lm-alibi        -slope_h * |i - j| added to the scores
    none         lm-none         no position signal at all (the causal mask alone)

D=64, H=4, F=256, 2 layers, max_len 128, the same seed (1234) and the same
batches (3000 steps of 32 windows of 33 letters: inputs at positions 0..31, each
predicting the letter after it). So training sees positions 0..31 ONLY; a learned
table's rows 32..127 get no gradient and keep their random initial values.

The held-out data: data/models/lm-heldout.txt, 200 sequences of 129 letters (one
a line) drawn from the same chain with another seed: inputs at positions 0..127,
each predicting the next letter. The NLL at position p is -log softmax(logits[p])[x[p+1]],
in nats; a range A-B is the mean over positions A..B of every sequence.

Each run writes, under data/models/:

    lm-SCHEME.safetensors   the checkpoint (config, vocabulary a..h, train_max_len 32)
    lm-SCHEME.loss.tsv      PyTorch's mean NLL per position range on lm-heldout.txt
                            (the ranges below), which tests/test_lm_eval.cpp compares
                            with `tinyformer eval --task lm`
    (stdout)                the training log; the committed lm-SCHEME.train.log is it

Run from the repository root with Debian's PyTorch, one thread (each run about
one to two CPU minutes):

    /usr/bin/python3 tools/python/train_lm_extrapolation.py --heldout
    /usr/bin/python3 tools/python/train_lm_extrapolation.py learned | tee data/models/lm-learned.train.log
    /usr/bin/python3 tools/python/train_lm_extrapolation.py sinusoidal | tee data/models/lm-sinusoidal.train.log
    /usr/bin/python3 tools/python/train_lm_extrapolation.py rotary | tee data/models/lm-rotary.train.log
    /usr/bin/python3 tools/python/train_lm_extrapolation.py alibi | tee data/models/lm-alibi.train.log
    /usr/bin/python3 tools/python/train_lm_extrapolation.py none | tee data/models/lm-none.train.log
    /usr/bin/python3 tools/python/train_lm_extrapolation.py --loss data/models/lm-rotary.safetensors

--heldout writes data/models/lm-heldout.txt; --loss recomputes a checkpoint's .loss.tsv.
"""

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import safe_write  # noqa: E402
import safetensors_io as st  # noqa: E402
import train_extrapolation as te  # noqa: E402  (the model: the same module as the reverse experiment)

REPO = Path(__file__).resolve().parents[2]
ALPHABET = "abcdefgh"
CHAIN_SEED, CONCENTRATION, BURN_IN = 37, 0.3, 64
TRAIN_POSITIONS, MAX_LEN = 32, 128
STEPS, BATCH, LR, SEED = 3000, 32, 3e-3, 1234
HELDOUT_SEED, HELDOUT_COUNT = 38, 200
RANGES = ((2, 31), (32, 47), (48, 63), (64, 95), (96, 127))
SCHEMES = ("learned", "sinusoidal", "rotary", "alibi", "none")
HELDOUT = REPO / "data" / "models" / "lm-heldout.txt"


def chain():
    """table [V*V, V] float64: row a*V + b is P(next | previous two letters a, b)."""
    rng = random.Random(CHAIN_SEED)
    v = len(ALPHABET)
    rows = []
    for _ in range(v * v):
        draws = [rng.gammavariate(CONCENTRATION, 1.0) + 1e-3 for _ in range(v)]  # + 1e-3: no letter impossible
        total = sum(draws)
        rows.append([d / total for d in draws])
    return torch.tensor(rows, dtype=torch.float64)


def entropy_rate(table):
    """The chain's entropy rate in nats: sum over pairs of pi(pair) * H(row), pi the stationary
    distribution of the pair chain (power iteration)."""
    v = len(ALPHABET)
    pi = torch.full((v * v,), 1.0 / (v * v), dtype=torch.float64)
    for _ in range(2000):
        nxt = torch.zeros_like(pi)
        for pair in range(v * v):
            b = pair % v
            nxt[b * v: b * v + v] += pi[pair] * table[pair]
        pi = nxt
    row_entropy = -(table * table.log()).sum(-1)
    return float((pi * row_entropy).sum())


def sample(table, count, length, generator):
    """ids [count, length] int64: `count` sequences of the chain, each after BURN_IN steps."""
    v = len(ALPHABET)
    a = torch.randint(v, (count,), generator=generator)
    b = torch.randint(v, (count,), generator=generator)
    out = []
    for step in range(BURN_IN + length):
        c = torch.multinomial(table[a * v + b], 1, generator=generator)[:, 0]
        a, b = b, c
        if step >= BURN_IN:
            out.append(c)
    return torch.stack(out, dim=1)


def lm_config(scheme):
    """The checkpoint's config (docs/FORMAT.md §1): reverse's module, 2 layers, no special tokens."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    config = dict(format="tinyformer/1", arch="decoder_only", attention="causal", d_model=64, nhead=4,
                  dim_feedforward=256, num_layers=2, activation="relu", layer_norm_eps=1e-5, embed_scale=True,
                  norm_first=True, final_norm=True, max_len=MAX_LEN, pos_encoding=scheme,
                  vocab_size=len(ALPHABET))
    if scheme == "rotary":
        config.update(rope_theta=te.ROPE_THETA, rope_pairs=te.ROPE_PAIRS)
    return config


def save(model, path):
    tensors = {name: value.detach().contiguous().numpy() for name, value in model.state_dict().items()}
    metadata = {"config": json.dumps(model.config, sort_keys=True, separators=(",", ":")),
                "tokenizer": "char", "vocab": json.dumps(list(ALPHABET)), "train_max_len": str(TRAIN_POSITIONS)}
    safe_write.write_bytes(str(path), st.encode(tensors, metadata))


def read_heldout(path=HELDOUT):
    """ids [N, 129]: the held-out sequences ('#' lines are comments)."""
    rows = [line.strip() for line in Path(path).read_text().splitlines() if line.strip() and not line.startswith("#")]
    return torch.tensor([[ALPHABET.index(c) for c in row] for row in rows], dtype=torch.int64)


@torch.no_grad()
def position_nll(model, ids):
    """nll [N, T-1] float64: -log softmax(logits[p])[ids[p+1]] at every input position p."""
    logits = model(ids[:, :-1]).double()
    return -torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None])[..., 0]


def write_loss(model, path):
    nll = position_nll(model, read_heldout())
    lines = ["# range\tmean NLL (nats, PyTorch, float32 model, float64 log-softmax) over lm-heldout.txt"
             f" ({nll.shape[0]} sequences); position p predicts letter p+1\n"]
    for low, high in RANGES:
        lines.append(f"{low}-{high}\t{float(nll[:, low:high + 1].mean()):.9f}\n")
    safe_write.write_text(path, "".join(lines))
    return lines[1:]


def write_heldout():
    generator = torch.Generator().manual_seed(HELDOUT_SEED)
    ids = sample(chain(), HELDOUT_COUNT, MAX_LEN + 1, generator)
    text = "".join("".join(ALPHABET[i] for i in row) + "\n" for row in ids.tolist())
    safe_write.write_text(HELDOUT, f"# {HELDOUT_COUNT} held-out sequences of {MAX_LEN + 1} letters of the "
                          f"second-order Markov chain of tools/python/train_lm_extrapolation.py (seed {HELDOUT_SEED})\n"
                          + text)
    print(f"wrote {shown(HELDOUT)}: {HELDOUT_COUNT} sequences of {MAX_LEN + 1} letters")


def train(scheme, out_dir, steps=STEPS):
    torch.manual_seed(SEED)
    generator = torch.Generator().manual_seed(SEED)
    table = chain()
    model = te.Model(lm_config(scheme))
    optimizer = torch.optim.Adam(model.parameters(), lr=LR, betas=(0.9, 0.98))
    warmup = steps // 20
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    name = f"lm-{scheme}"
    config = model.config
    print(f"{name}: decoder_only D={config['d_model']} H={config['nhead']} F={config['dim_feedforward']} "
          f"layers={config['num_layers']} pos={scheme} max_len={MAX_LEN}, "
          f"{sum(p.numel() for p in model.parameters())} parameters, {steps} steps of {BATCH} windows of "
          f"{TRAIN_POSITIONS + 1} letters (positions 0..{TRAIN_POSITIONS - 1}), lr {LR}, seed {SEED}; "
          f"chain entropy rate {entropy_rate(table):.4f} nats", flush=True)
    start = time.process_time()
    model.train()
    for step in range(1, steps + 1):
        ids = sample(table, BATCH, TRAIN_POSITIONS + 1, generator)
        logits = model(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % 100 == 0 or step == steps:
            print(f"  step {step:5d}  loss {loss.item():.4f}  ({time.process_time() - start:.0f} CPU s)", flush=True)
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    save(model, out_dir / f"{name}.safetensors")
    for line in write_loss(model, out_dir / f"{name}.loss.tsv"):
        print(f"{name}: held-out mean NLL at positions {line.strip()}", flush=True)
    print(f"{name}: wrote {shown(out_dir / (name + '.safetensors'))} ({time.process_time() - start:.0f} CPU s)",
          flush=True)


def shown(path):
    """A path as the log shows it: relative to the repository when inside it."""
    path = Path(path).resolve()
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def load(path):
    tensors, metadata = st.read(str(path))
    model = te.Model(json.loads(metadata["config"]))
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=True)
    return model.eval()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("schemes", nargs="*", help="position schemes to train: " + ", ".join(SCHEMES))
    parser.add_argument("--out", type=Path, default=REPO / "data" / "models")
    parser.add_argument("--steps", type=int, default=STEPS, help="for a quick try; the models use the default")
    parser.add_argument("--heldout", action="store_true", help="write data/models/lm-heldout.txt")
    parser.add_argument("--loss", action="store_true", help="the arguments are checkpoints: rewrite their .loss.tsv")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.heldout:
        write_heldout()
        return
    if args.loss:
        for path in args.schemes:
            path = Path(path)
            write_loss(load(path), path.with_name(path.name.replace(".safetensors", ".loss.tsv")))
        return
    if not args.schemes:
        parser.error("name a scheme: " + ", ".join(SCHEMES))
    for scheme in args.schemes:
        if scheme not in SCHEMES:
            parser.error(f"unknown scheme {scheme!r}; the schemes are " + ", ".join(SCHEMES))
    for scheme in args.schemes:
        train(scheme, args.out, args.steps)


if __name__ == "__main__":
    main()
