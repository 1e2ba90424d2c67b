#!/usr/bin/python3
"""Train tinyformer's toy models and export them as checkpoints (FORMAT.md).

Tasks (characters in, characters out; every model has the vocabulary
<pad> <bos> <eos> <unk> followed by the task's characters):

    reverse            encoder-decoder: lowercase strings of length 1..16 -> reversed
    sort               encoder-decoder: digit strings of length 1..16 -> digits sorted
    reverse-prefixlm   decoder-only, prefix-LM mask: "<bos>abc=" continues "cba<eos>"
    reverse-causal     the same task with a plain causal mask
    dates              encoder-decoder: a date 1900-01-01..2099-12-31 written in one of six
                       forms ("3 may 1979", "may 3 1979", "may 3, 1979", "03/05/1979"
                       day/month/year, "1979.05.03", "thursday 3 may 1979") -> "1979-05-03"
    reverse-peeking    reverse-causal's data, architecture and settings, but trained
                       WITHOUT the causal mask (bidirectional self-attention, labels
                       shifted by one as usual), exported as a causal decoder_only
                       model, the way it must be used (lesson 10.3, section 6).
                       Shipped for `tinyformer lesson peeking`: it learned to copy
                       the next token, which it could see (teacher-forced loss on
                       random answers far below log 26), and fails at greedy
                       decoding (5% of PyTorch's held-out outputs right). 5000
                       steps, 39 min on one thread of a loaded 2-core machine

The models are the reference modules of FORMAT.md (tools/python/torch_modules.py:
stock nn.Transformer / nn.TransformerEncoder), trained with Adam on freshly
generated examples, seeded, on the CPU. Each run writes, under data/models/:

    NAME.safetensors   the checkpoint, with the config and the vocabulary
    NAME.greedy.tsv    200 held-out inputs and PyTorch's greedy outputs, which
                       the C++ tests compare with tinyformer's, token for token

and ends by printing the held-out exact-match accuracy. Run from the
repository root with Debian's PyTorch (python3-torch):

    /usr/bin/python3 tools/python/train_toy.py reverse            # one task
    /usr/bin/python3 tools/python/train_toy.py --all              # every task
    /usr/bin/python3 tools/python/train_toy.py reverse-peeking --threads 1 | tee data/models/reverse-peeking.train.log
    /usr/bin/python3 tools/python/train_toy.py reverse --steps 500 --out /tmp/m   # a quick try

Checkpoints are written by tools/python/tinyformer_export.py (the one exporter), with
the metadata of docs/FORMAT.md: the vocabulary, tokenizer "char",
train_max_len 16 (MAX_CHARS; dates: 27, its longest input form) and, for the decoder-only models,
prompt_suffix "=". To rewrite the committed checkpoints through the exporter
without training again (e.g. after the metadata changed):

    /usr/bin/python3 tools/python/train_toy.py --reexport --all

which loads data/models/NAME.safetensors into the stock modules, exports them
again, verifies that every tensor is bit-identical (dtype, shape and bytes)
and the config unchanged, prints that verification, runs
tools/python/tinyformer_export.py's check on the new file (needs build/tinyformer;
--no-check skips it), and only then replaces the committed file. The greedy .tsv files are not touched.
"""

import argparse
import datetime
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import safe_write  # noqa: E402
import safetensors_io as st  # noqa: E402
import tinyformer_export  # noqa: E402
from torch_modules import build_module, single_stack_forward  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
PAD, BOS, EOS, UNK = 0, 1, 2, 3
MAX_CHARS = 16
LOWERCASE = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
SEPARATOR = "="
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]  # date.weekday() order
# The characters of the six date forms: the month and weekday names' letters, digits, " ,./" and "-" (ISO).
DATE_ALPHABET = " ,-./" + DIGITS + "".join(sorted(set("".join(MONTHS + WEEKDAYS))))
FIRST_DAY, LAST_DAY = datetime.date(1900, 1, 1).toordinal(), datetime.date(2099, 12, 31).toordinal()
DATE_MAX_CHARS = len("wednesday 30 september 1999")  # the longest input form: 27


def random_date_text(rng):
    """A date uniform over 1900-01-01..2099-12-31, in one of the six forms (uniform);
    models/study/toy_tasks.cpp draws the same forms for tinyformer eval --task dates."""
    day = datetime.date.fromordinal(rng.randint(FIRST_DAY, LAST_DAY))
    month, d, y = MONTHS[day.month - 1], day.day, day.year
    forms = [f"{d} {month} {y}", f"{month} {d} {y}", f"{month} {d}, {y}", f"{d:02d}/{day.month:02d}/{y}",
             f"{y}.{day.month:02d}.{d:02d}", f"{WEEKDAYS[day.weekday()]} {d} {month} {y}"]
    return forms[rng.randint(0, len(forms) - 1)]


def iso_date(text):
    """The ISO form of any of the six forms."""
    if "/" in text:
        d, m, y = text.split("/")
        return f"{y}-{m}-{d}"
    if "." in text:
        return text.replace(".", "-")
    words = text.replace(",", "").split()
    if words[0] in WEEKDAYS:
        words = words[1:]
    if words[0] in MONTHS:
        words = [words[1], words[0], words[2]]
    d, month, y = words
    return f"{y}-{MONTHS.index(month) + 1:02d}-{int(d):02d}"


# Sizes that train well on 2 CPU cores in a few minutes.
COMMON = dict(format="tinyformer/1", d_model=64, nhead=4, dim_feedforward=256, activation="relu",
              layer_norm_eps=1e-5, embed_scale=True, pad_id=PAD, bos_id=BOS, eos_id=EOS)
TASKS = {
    "reverse": dict(alphabet=LOWERCASE, target=lambda s: s[::-1], steps=8000, lr=1.5e-3,
                    config=dict(arch="encoder_decoder", num_encoder_layers=2, num_decoder_layers=2,
                                norm_first=True, max_len=32, pos_encoding="sinusoidal")),
    "sort": dict(alphabet=DIGITS, target=lambda s: "".join(sorted(s)), steps=4000, lr=1.5e-3,
                 config=dict(arch="encoder_decoder", num_encoder_layers=2, num_decoder_layers=2,
                             norm_first=False, max_len=32, pos_encoding="sinusoidal")),
    "reverse-prefixlm": dict(alphabet=LOWERCASE, target=lambda s: s[::-1], steps=6000, lr=1.5e-3,
                             config=dict(arch="decoder_only", num_layers=4, norm_first=True, final_norm=True,
                                         max_len=40, pos_encoding="learned", attention="prefix_lm")),
    "reverse-causal": dict(alphabet=LOWERCASE, target=lambda s: s[::-1], steps=6000, lr=1.5e-3,
                           config=dict(arch="decoder_only", num_layers=4, norm_first=True, final_norm=True,
                                       max_len=40, pos_encoding="learned", attention="causal")),
    "dates": dict(alphabet=DATE_ALPHABET, target=iso_date, sample=random_date_text, max_chars=DATE_MAX_CHARS,
                  steps=5000, lr=2e-3,
                  config=dict(arch="encoder_decoder", num_encoder_layers=2, num_decoder_layers=2,
                              norm_first=True, max_len=32, pos_encoding="sinusoidal")),
    # train_attention: the self-attention of training when it is not the exported config's.
    "reverse-peeking": dict(alphabet=LOWERCASE, target=lambda s: s[::-1], steps=5000, lr=1.5e-3,
                            train_attention="bidirectional",
                            config=dict(arch="decoder_only", num_layers=4, norm_first=True, final_norm=True,
                                        max_len=40, pos_encoding="learned", attention="causal")),
}


def vocabulary(task):
    chars = TASKS[task]["alphabet"] + (SEPARATOR if TASKS[task]["config"]["arch"] == "decoder_only" else "")
    return SPECIALS + list(chars)


def model_config(task):
    task_def = TASKS[task]
    config = dict(COMMON, **task_def["config"])
    size = len(vocabulary(task))
    if config["arch"] == "encoder_decoder":
        config.update(src_vocab_size=size, tgt_vocab_size=size)
    else:
        config.update(vocab_size=size)
    return config


def random_text(rng, alphabet):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, MAX_CHARS)))


def sample(task, rng):
    """One training or held-out input of the task."""
    if "sample" in TASKS[task]:
        return TASKS[task]["sample"](rng)
    return random_text(rng, TASKS[task]["alphabet"])


class Batches:
    """Examples as padded id tensors, for one task."""

    def __init__(self, task):
        self.task = task
        self.vocab = vocabulary(task)
        self.ids = {token: i for i, token in enumerate(self.vocab)}
        self.target = TASKS[task]["target"]
        self.arch = TASKS[task]["config"]["arch"]

    def encode(self, text):
        return [self.ids.get(c, UNK) for c in text]

    def decode(self, ids):
        """Token strings joined; a special token shows as itself, e.g. <unk>."""
        return "".join(self.vocab[i] for i in ids)

    def prefix(self, text):
        """Decoder-only: <bos> text = (the part the model is given)."""
        return [BOS] + self.encode(text) + [self.ids[SEPARATOR]]

    def make(self, texts):
        if self.arch == "encoder_decoder":
            src = [self.encode(t) for t in texts]
            tgt = [[BOS] + self.encode(self.target(t)) for t in texts]
            out = [self.encode(self.target(t)) + [EOS] for t in texts]
            return dict(src=pad(src), tgt=pad(tgt), out=pad(out))
        seqs, prefix_lens, loss_from = [], [], []
        for t in texts:
            prefix = self.prefix(t)
            seqs.append(prefix + self.encode(self.target(t)) + [EOS])
            prefix_lens.append(len(prefix))
        ids = pad([s[:-1] for s in seqs])
        labels = pad([s[1:] for s in seqs])
        for row, length in enumerate(prefix_lens):  # learn only what follows the '='
            labels[row, : length - 1] = PAD
        return dict(ids=ids, labels=labels, prefix_len=torch.tensor(prefix_lens))


def pad(rows):
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (width - len(r)) for r in rows], dtype=torch.long)


def loss_of(model, batch, config, attention=None):
    """Mean cross-entropy of the labels; `attention` overrides a single-stack
    model's self-attention ("bidirectional": no mask but key padding)."""
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    if config["arch"] == "encoder_decoder":
        logits = model(batch["src"], batch["tgt"], src_key_padding_mask=batch["src"] == PAD,
                       tgt_key_padding_mask=batch["tgt"] == PAD)
        return criterion(logits.reshape(-1, logits.shape[-1]), batch["out"].reshape(-1)), logits, batch["out"]
    prefix = batch["prefix_len"] if config["attention"] == "prefix_lm" else None
    if attention is None or attention == config["attention"]:
        logits = model(batch["ids"], key_padding_mask=batch["ids"] == PAD, prefix_len=prefix)
    else:
        logits = single_stack_forward(dict(config, attention=attention), model.transformer, model.embed,
                                      model.lm_head, batch["ids"], key_padding_mask=batch["ids"] == PAD,
                                      pos_embed=getattr(model, "pos_embed", None))
    return criterion(logits.reshape(-1, logits.shape[-1]), batch["labels"].reshape(-1)), logits, batch["labels"]


@torch.no_grad()
def greedy(model, batches, config, text):
    """PyTorch greedy decoding by full recompute: the reference the C++ decoder must match."""
    max_len = config["max_len"]
    if config["arch"] == "encoder_decoder":
        src = torch.tensor([batches.encode(text)])
        tgt = [BOS]
        while len(tgt) < max_len:
            logits = model(src, torch.tensor([tgt]))
            token = int(logits[0, -1].argmax())
            if token == EOS:
                break
            tgt.append(token)
        return batches.decode(tgt[1:])
    prefix = batches.prefix(text)
    seq = list(prefix)
    prefix_len = torch.tensor([len(prefix)]) if config["attention"] == "prefix_lm" else None
    while len(seq) < max_len:
        logits = model(torch.tensor([seq]), prefix_len=prefix_len)
        token = int(logits[0, -1].argmax())
        if token == EOS:
            break
        seq.append(token)
    return batches.decode(seq[len(prefix):])


def export(model, config, vocab, path, train_max_len):
    """Write the checkpoint with tools/python/tinyformer_export.py; the config it reads
    from the modules must be the one the model was built from."""
    common = dict(pos_encoding=config["pos_encoding"], pos_embed=getattr(model, "pos_embed", None),
                  embed_scale=config["embed_scale"], max_len=config["max_len"], pad_id=config["pad_id"],
                  bos_id=config["bos_id"], eos_id=config["eos_id"], vocab=vocab, tokenizer="char",
                  train_max_len=train_max_len)
    if config["arch"] == "encoder_decoder":
        written = tinyformer_export.export_encoder_decoder(
            str(path), transformer=model.transformer, src_embed=model.src_embed, tgt_embed=model.tgt_embed,
            generator=model.generator, **common)
    else:
        written = tinyformer_export.export_decoder_only(
            str(path), layers=model.transformer, embed=model.embed, lm_head=model.lm_head,
            attention=config["attention"], prompt_suffix=SEPARATOR, **common)
    if written != config:
        raise RuntimeError(f"{path}: the exporter wrote config {written}, the model was built from {config}")


def reexport(task, models_dir, run_check):
    """Load data/models/TASK.safetensors into the stock modules and write it again
    through the exporter; every tensor must come out bit-identical."""
    path = models_dir / f"{task}.safetensors"
    before, before_meta = st.read(str(path), widen_bf16=False)
    config = json.loads(before_meta["config"])
    vocab = json.loads(before_meta["vocab"])
    if config != model_config(task) or vocab != vocabulary(task):
        raise RuntimeError(f"{path}: its config or vocabulary is not {task}'s (train_toy.py's TASKS)")
    model = build_module(config)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in before.items()}, strict=True)
    model.eval()
    with tempfile.TemporaryDirectory(prefix=f"{task}.reexport-") as staging:   # private (0700), removed after
        tmp = Path(staging) / path.name
        export(model, config, vocab, tmp, TASKS[task].get("max_chars", MAX_CHARS))
        after, after_meta = st.read(str(tmp), widen_bf16=False)
        entries_before, entries_after = st.read_header(str(path))[0], st.read_header(str(tmp))[0]
        if set(before) != set(after):
            raise RuntimeError(f"{task}: tensor names differ: {sorted(set(before) ^ set(after))}")
        for name in sorted(before):
            a, b = before[name], after[name]
            same = (entries_before[name]["dtype"] == entries_after[name]["dtype"] and a.shape == b.shape
                    and a.tobytes() == b.tobytes())
            if not same:
                raise RuntimeError(f"{task}: tensor {name} differs after re-export")
        if json.loads(after_meta["config"]) != config or json.loads(after_meta["vocab"]) != vocab:
            raise RuntimeError(f"{task}: config or vocabulary differs after re-export")
        n_bytes = sum(v.nbytes for v in before.values())
        new_keys = sorted(set(after_meta) - set(before_meta))
        print(f"{task}: {len(before)} tensors ({n_bytes} bytes) bit-identical after re-export, config and "
              f"vocabulary unchanged; metadata added: "
              + ", ".join(f"{k}={after_meta[k]!r}" for k in new_keys), flush=True)
        if run_check:   # on the modules just exported, before the file takes the committed name
            worst = tinyformer_export.check(str(tmp), n_batches=3, seed=0)
            print(f"{task}: tinyformer_export.check: worst |a-b| / (1e-4 + 1e-4|b|) = {worst:.3g} (OK)",
                  flush=True)
        safe_write.write_bytes(str(path), tmp.read_bytes())     # the committed file, only now


def train(task, steps, out_dir, seed, batch_size):
    torch.manual_seed(seed)
    rng = random.Random(seed)
    config = model_config(task)
    batches = Batches(task)
    model = build_module(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=TASKS[task]["lr"], betas=(0.9, 0.98))
    warmup = max(1, steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    print(f"{task}: {config['arch']} D={config['d_model']} H={config['nhead']} F={config['dim_feedforward']}, "
          f"{sum(p.numel() for p in model.parameters())} parameters, {steps} steps of {batch_size}", flush=True)
    train_attention = TASKS[task].get("train_attention")
    if train_attention:
        print(f"{task}: trained with {train_attention} self-attention, exported and decoded as "
              f"{config['attention']}", flush=True)
    # 200 fresh held-out examples. Training never sees those longer than 3
    # characters; shorter strings are too few to hold out (26^3 of them at
    # most), and a model that never saw a 1-character input would not know one.
    held_out_rng = random.Random(seed + 1)
    held_out = []
    while len(held_out) < 200:
        text = sample(task, held_out_rng)
        if text not in held_out:
            held_out.append(text)
    held_out_set = {text for text in held_out if len(text) > 3}
    start = time.time()
    model.train()
    for step in range(1, steps + 1):
        texts = []
        while len(texts) < batch_size:
            text = sample(task, rng)
            if text not in held_out_set:
                texts.append(text)
        loss, logits, labels = loss_of(model, batches.make(texts), config, train_attention)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % 100 == 0 or step == steps:
            mask = labels != PAD
            token_acc = float(((logits.argmax(-1) == labels) & mask).sum() / mask.sum())
            print(f"  step {step:5d}  loss {loss.item():.4f}  token accuracy {token_acc:.4f}  "
                  f"({time.time() - start:.0f} s)", flush=True)
    model.eval()
    outputs = [greedy(model, batches, config, text) for text in held_out]
    exact = sum(out == TASKS[task]["target"](text) for text, out in zip(held_out, outputs)) / len(held_out)
    out_dir.mkdir(parents=True, exist_ok=True)
    export(model, config, batches.vocab, out_dir / f"{task}.safetensors", TASKS[task].get("max_chars", MAX_CHARS))
    safe_write.write_text(out_dir / f"{task}.greedy.tsv",
                          "# input\tPyTorch greedy output (tools/python/train_toy.py, held out from training)\n"
                          + "".join(f"{text}\t{out}\n" for text, out in zip(held_out, outputs)))
    print(f"{task}: held-out exact match {exact:.4f} on {len(held_out)} examples; "
          f"wrote {out_dir / (task + '.safetensors')} ({time.time() - start:.0f} s)", flush=True)
    return exact


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="*", help="tasks to train: " + ", ".join(TASKS))
    parser.add_argument("--all", action="store_true", help="train every task")
    parser.add_argument("--steps", type=int, help="training steps (default: per task)")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (two tasks can train side by side)")
    parser.add_argument("--out", type=Path, default=REPO / "data" / "models")
    parser.add_argument("--reexport", action="store_true",
                        help="do not train: rewrite OUT/TASK.safetensors through the exporter, tensors bit-identical")
    parser.add_argument("--no-check", action="store_true", help="--reexport: skip tinyformer_export.check")
    args = parser.parse_args()
    tasks = list(TASKS) if args.all else args.tasks
    if not tasks:
        parser.error("name a task or use --all")
    for task in tasks:
        if task not in TASKS:
            parser.error(f"unknown task {task!r}; the tasks are " + ", ".join(TASKS))
    torch.set_num_threads(args.threads)
    if args.reexport:
        for task in tasks:
            reexport(task, args.out, not args.no_check)
        return
    for task in tasks:
        train(task, args.steps or TASKS[task]["steps"], args.out, args.seed, args.batch_size)


if __name__ == "__main__":
    main()
