#!/usr/bin/python3
"""Train the reverse task four times, once per position scheme, for docs/EXTRAPOLATION.md.

The task, vocabulary and prompt format are train_toy.py's reverse-causal
("<bos>abc=" continues "cba<eos>", a causal decoder_only model), trained on
inputs of length 1..16 only. The model is the project's own small pre-LN
module (below), with the engine's layer layout and tensor names
(transformer.layers.i.self_attn.in_proj_weight, ..., docs/FORMAT.md), so the
state dict is the checkpoint. Only the position scheme differs
(tools/python/position_schemes.py):

    learned      reverse-learned      a trained [max_len, D] table
    sinusoidal   reverse-sinusoidal   the fixed sin/cos table
    rotary       reverse-rotary       q, k rotated per head (rope_theta 10000, rope_pairs adjacent)
    alibi        reverse-alibi        -slope_h * |i - j| added to the scores

max_len is 72 (room for 32-character inputs: <bos>, 32, "=", 32, <eos>... ), so
that `tinyformer eval --lengths 17-32` can ask for inputs twice as long as any
the model was trained on. A learned table's rows 34..71 are never trained
(the longest example, <bos> + 16 + "=" + 16, reads positions 0..33; they stay at
their random initial values); that is part of what is measured.

Each run writes, under data/models/:

    reverse-SCHEME.safetensors   the checkpoint (config, vocabulary, train_max_len 16)
    reverse-SCHEME.greedy.tsv    PyTorch greedy outputs for 200 held-out inputs of
                                 length 1..16 and 100 of length 17..32
    (stdout)                     the training log; the committed .train.log is it

Run from the repository root with Debian's PyTorch, one thread per run:

    /usr/bin/python3 tools/python/train_extrapolation.py learned | tee data/models/reverse-learned.train.log
    /usr/bin/python3 tools/python/train_extrapolation.py --eval-lengths 17-24 data/models/reverse-rotary.safetensors

--eval-lengths measures PyTorch's greedy exact match on fresh random inputs
of the given lengths (the PyTorch side of docs/EXTRAPOLATION.md).
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
import position_schemes as ps  # noqa: E402
import safe_write  # noqa: E402
import safetensors_io as st  # noqa: E402
import train_toy  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TASK = "reverse-causal"          # train_toy.py's task: data, vocabulary, prompt format
TRAIN_MAX_CHARS = train_toy.MAX_CHARS   # 16
EVAL_MAX_CHARS = 32
STEPS, BATCH, LR, SEED = 2000, 64, 2e-3, 1234
ROPE_THETA, ROPE_PAIRS = 10000.0, "adjacent"


def model_config(scheme):
    """The checkpoint's config (docs/FORMAT.md §1) for one position scheme."""
    if scheme not in ps.SCHEMES:
        raise ValueError(f"scheme must be one of {ps.SCHEMES}, got {scheme!r}")
    config = dict(format="tinyformer/1", arch="decoder_only", attention="causal", d_model=64, nhead=4,
                  dim_feedforward=256, num_layers=3, activation="relu", layer_norm_eps=1e-5, embed_scale=True,
                  norm_first=True, final_norm=True, max_len=2 * EVAL_MAX_CHARS + 8, pos_encoding=scheme,
                  vocab_size=len(train_toy.vocabulary(TASK)), pad_id=train_toy.PAD, bos_id=train_toy.BOS,
                  eos_id=train_toy.EOS)
    if scheme == "rotary":
        config.update(rope_theta=ROPE_THETA, rope_pairs=ROPE_PAIRS)
    return config


class SelfAttention(nn.Module):
    """Causal multi-head self-attention with nn.MultiheadAttention's tensor names:
    [q; k; v] = in_proj_weight x + in_proj_bias (rows Q, K, V), per head
    softmax(q k^T / sqrt(Dh) + bias + causal) v, then out_proj. Rotary rotates
    q and k after the projection; ALiBi adds its bias to the scores."""

    def __init__(self, config):
        super().__init__()
        d = config["d_model"]
        self.config = config
        self.heads = config["nhead"]
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d))
        nn.init.xavier_uniform_(self.in_proj_weight)
        self.out_proj = nn.Linear(d, d)
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, x):                                   # x [B, T, D]
        b, t, d = x.shape
        h, dh = self.heads, d // self.heads
        q, k, v = nn.functional.linear(x, self.in_proj_weight, self.in_proj_bias).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, h, dh).transpose(1, 2) for z in (q, k, v))   # [B, H, T, Dh]
        positions = torch.arange(t)
        if self.config["pos_encoding"] == "rotary":
            q = ps.apply_rotary(q, positions, self.config["rope_theta"], self.config["rope_pairs"])
            k = ps.apply_rotary(k, positions, self.config["rope_theta"], self.config["rope_pairs"])
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh)    # [B, H, T, T]
        if self.config["pos_encoding"] == "alibi":
            scores = scores + ps.alibi_bias(h, positions, positions)[None]
        blocked = torch.ones(t, t, dtype=torch.bool).triu(1)   # key j > query i
        scores = scores.masked_fill(blocked, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v             # [B, H, T, Dh]
        return self.out_proj(out.transpose(1, 2).reshape(b, t, d))


class Layer(nn.Module):
    """Pre-LN: x += attn(norm1 x); x += linear2(relu(linear1(norm2 x)))."""

    def __init__(self, config):
        super().__init__()
        d, f, eps = config["d_model"], config["dim_feedforward"], config["layer_norm_eps"]
        self.self_attn = SelfAttention(config)
        self.linear1, self.linear2 = nn.Linear(d, f), nn.Linear(f, d)
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)

    def forward(self, x):
        x = x + self.self_attn(self.norm1(x))
        return x + self.linear2(torch.relu(self.linear1(self.norm2(x))))


class Stack(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList(Layer(config) for _ in range(config["num_layers"]))
        self.norm = nn.LayerNorm(config["d_model"], eps=config["layer_norm_eps"])


class Model(nn.Module):
    """embed (+ pos_embed when learned) -> transformer.layers -> transformer.norm -> lm_head.
    state_dict() names are the checkpoint's tensor names."""

    def __init__(self, config):
        super().__init__()
        self.config = dict(config)
        d = config["d_model"]
        self.embed = nn.Embedding(config["vocab_size"], d)
        if config["pos_encoding"] == "learned":
            self.pos_embed = nn.Embedding(config["max_len"], d)
        self.transformer = Stack(config)
        self.lm_head = nn.Linear(d, config["vocab_size"])

    def forward(self, ids):                                 # ids [B, T] -> logits [B, T, V]
        t = ids.shape[1]
        if t > self.config["max_len"]:
            raise ValueError(f"sequence length {t} exceeds max_len {self.config['max_len']}")
        x = self.embed(ids)
        if self.config["embed_scale"]:
            x = x * math.sqrt(self.config["d_model"])
        if self.config["pos_encoding"] == "learned":
            x = x + self.pos_embed(torch.arange(t))
        elif self.config["pos_encoding"] == "sinusoidal":
            x = x + ps.sinusoidal_table(t, self.config["d_model"])
        for layer in self.transformer.layers:
            x = layer(x)
        return self.lm_head(self.transformer.norm(x))


def random_text(rng, low, high):
    """A lowercase string, length uniform in low..high."""
    return "".join(rng.choice(train_toy.LOWERCASE) for _ in range(rng.randint(low, high)))


@torch.no_grad()
def greedy(model, batches, text):
    """Greedy decoding by full recompute, up to max_len tokens in all."""
    prefix = batches.prefix(text)
    seq = list(prefix)
    while len(seq) < model.config["max_len"]:
        token = int(model(torch.tensor([seq]))[0, -1].argmax())
        if token == train_toy.EOS:
            break
        seq.append(token)
    return batches.decode(seq[len(prefix):])


def save(model, batches, path):
    tensors = {name: value.detach().contiguous().numpy() for name, value in model.state_dict().items()}
    metadata = {"config": json.dumps(model.config, sort_keys=True, separators=(",", ":")),
                "tokenizer": "char", "vocab": json.dumps(batches.vocab, ensure_ascii=False),
                "prompt_suffix": train_toy.SEPARATOR, "train_max_len": str(TRAIN_MAX_CHARS)}
    safe_write.write_bytes(str(path), st.encode(tensors, metadata))


def load(path):
    tensors, metadata = st.read(str(path))
    config = json.loads(metadata["config"])
    model = Model(config)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=True)
    return model.eval()


def held_out_inputs(seed):
    """200 distinct inputs of length 1..16 (train_toy.py's held-out rule) and 100 of 17..32."""
    rng = random.Random(seed + 1)
    short = []
    while len(short) < 200:
        text = train_toy.sample(TASK, rng)
        if text not in short:
            short.append(text)
    rng = random.Random(seed + 2)
    long = [random_text(rng, TRAIN_MAX_CHARS + 1, EVAL_MAX_CHARS) for _ in range(100)]
    return short, long


def train(scheme, steps, out_dir, seed, batch_size, lr):
    torch.manual_seed(seed)
    rng = random.Random(seed)
    config = model_config(scheme)
    batches = train_toy.Batches(TASK)
    model = Model(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98))
    warmup = max(1, steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    name = f"reverse-{scheme}"
    print(f"{name}: decoder_only D={config['d_model']} H={config['nhead']} F={config['dim_feedforward']} "
          f"layers={config['num_layers']} pos={scheme}, {sum(p.numel() for p in model.parameters())} parameters, "
          f"{steps} steps of {batch_size}, lr {lr}, seed {seed}, lengths 1..{TRAIN_MAX_CHARS}", flush=True)
    short, long = held_out_inputs(seed)
    held_out_set = {text for text in short if len(text) > 3}
    criterion = nn.CrossEntropyLoss(ignore_index=train_toy.PAD)
    start = time.time()
    model.train()
    for step in range(1, steps + 1):
        texts = []
        while len(texts) < batch_size:
            text = train_toy.sample(TASK, rng)
            if text not in held_out_set:
                texts.append(text)
        batch = batches.make(texts)
        logits = model(batch["ids"])
        loss = criterion(logits.reshape(-1, logits.shape[-1]), batch["labels"].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % 100 == 0 or step == steps:
            mask = batch["labels"] != train_toy.PAD
            token_acc = float(((logits.argmax(-1) == batch["labels"]) & mask).sum() / mask.sum())
            print(f"  step {step:5d}  loss {loss.item():.4f}  token accuracy {token_acc:.4f}  "
                  f"({time.time() - start:.0f} s)", flush=True)
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    save(model, batches, out_dir / f"{name}.safetensors")
    rows = []
    for group, texts in (("1-16", short), ("17-32", long)):
        outputs = [greedy(model, batches, text) for text in texts]
        exact = sum(out == text[::-1] for text, out in zip(texts, outputs)) / len(texts)
        print(f"{name}: held-out exact match, lengths {group}: {exact:.4f} on {len(texts)} examples", flush=True)
        rows += [f"{text}\t{out}\n" for text, out in zip(texts, outputs)]
    safe_write.write_text(out_dir / f"{name}.greedy.tsv",
                          "# input\tPyTorch greedy output (tools/python/train_extrapolation.py; 200 held-out "
                          "inputs of length 1..16, then 100 of 17..32)\n" + "".join(rows))
    print(f"{name}: wrote {out_dir / (name + '.safetensors')} ({time.time() - start:.0f} s)", flush=True)


def parse_lengths(text):
    low, _, high = text.partition("-")
    low, high = int(low), int(high or low)
    if not 1 <= low <= high:
        raise argparse.ArgumentTypeError(f"lengths: expected A-B with 1 <= A <= B, got {text!r}")
    return low, high


def eval_lengths(path, lengths, n, seed):
    """PyTorch greedy exact match on n fresh inputs with lengths uniform in the range."""
    model = load(path)
    batches = train_toy.Batches(TASK)
    rng = random.Random(seed)
    texts = [random_text(rng, *lengths) for _ in range(n)]
    right = sum(greedy(model, batches, text) == text[::-1] for text in texts)
    print(f"{path}: PyTorch greedy exact match, lengths {lengths[0]}-{lengths[1]}: {right}/{n} = {right / n:.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("schemes", nargs="*", help="position schemes to train: " + ", ".join(ps.SCHEMES))
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--batch-size", type=int, default=BATCH)
    parser.add_argument("--lr", type=float, default=LR)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=REPO / "data" / "models")
    parser.add_argument("--eval-lengths", type=parse_lengths, metavar="A-B",
                        help="do not train: PyTorch greedy exact match of the checkpoints named as arguments")
    parser.add_argument("--examples", type=int, default=1000, help="--eval-lengths: inputs per range")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.eval_lengths:
        for path in args.schemes:
            eval_lengths(Path(path), args.eval_lengths, args.examples, 1)
        return
    if not args.schemes:
        parser.error("name a scheme: " + ", ".join(ps.SCHEMES))
    for scheme in args.schemes:
        if scheme not in ps.SCHEMES:
            parser.error(f"unknown scheme {scheme!r}; the schemes are " + ", ".join(ps.SCHEMES))
    for scheme in args.schemes:
        train(scheme, args.steps, args.out, args.seed, args.batch_size, args.lr)


if __name__ == "__main__":
    main()
