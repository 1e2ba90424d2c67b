#!/usr/bin/python3
"""PyTorch side of the `decode` benchmark suite (tools/bench/bench_decode.cpp).

Three loops, chosen by --mode, each timed as a user would run it:

--mode transformer (the default): the greedy loop users write with
nn.Transformer: encode the source once, then at every step re-run the
decoder on the whole growing target and take the argmax of the last
position (no KV cache):

    memory = model.encoder(src_embed(src))
    for step in range(64):
        h = model.decoder(tgt_embed(tgt), memory, tgt_mask=causal(len(tgt)))
        tgt = cat(tgt, argmax(generator(h[:, -1])))

  Base-size model: nn.Transformer(d_model=512, nhead=8, 6+6 layers,
  dim_feedforward=2048, dropout=0, batch_first=True), vocabulary 32000,
  random weights, source 64 tokens, 64 decoded tokens, B=1.

--mode nanogpt-rerun / --mode nanogpt-cached: a GPT written here the way
nanoGPT's model.py builds it (pre-LN blocks ln_1 -> attn -> ln_2 -> mlp with
a fused c_attn, exact GELU, learned positions, final ln_f, causal attention
written out with masked_fill and softmax as nanoGPT does on torch < 2.0),
loading the weights tinyformer-bench wrote (--model, tinyformer tensor
names, docs/FORMAT.md), so both programs run the same numbers. Greedy from
--prompt (ids) for --new-tokens tokens:
    rerun:  nanoGPT's `generate`: every step crops the sequence to the last
            block_size tokens and runs the whole model on it again, then
            takes the last position's logits (argmax here: greedy)
    cached: the same math with a KV cache written here: per layer a k and a
            v tensor [1, H, t, Dh], the prompt run once, then each step runs
            the one new token and appends its k and v (torch.cat)
  The last line "tokens a,b,..." lists the generated ids, so the bench can
  say whether PyTorch and tinyformer chose the same tokens.

All: eval() and torch.inference_mode(); one warm-up run, then `reps` timed
runs; the median. Run with Debian's interpreter (python3-torch), one process
per configuration:
    /usr/bin/python3 tools/bench/torch_decode.py --threads 1
--protocol prints "result tokens median_s min_s" for tinyformer-bench.
"""

import argparse
import math
import os
import statistics
import sys
import time


def transformer_loop(torch, nn, reps):
    """The base-size nn.Transformer re-run loop: (tokens, times)."""
    torch.manual_seed(0)
    d_model, vocab, source_length, steps = 512, 32000, 64, 64
    model = nn.Transformer(d_model=d_model, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                           dim_feedforward=2048, dropout=0.0, batch_first=True).eval()
    src_embed, tgt_embed = nn.Embedding(vocab, d_model).eval(), nn.Embedding(vocab, d_model).eval()
    generator = nn.Linear(d_model, vocab).eval()
    src = torch.randint(3, vocab, (1, source_length))

    def greedy():
        memory = model.encoder(src_embed(src))
        tgt = torch.tensor([[1]])
        for _ in range(steps):
            causal = model.generate_square_subsequent_mask(tgt.shape[1])
            h = model.decoder(tgt_embed(tgt), memory, tgt_mask=causal)
            token = generator(h[:, -1]).argmax(-1, keepdim=True)
            tgt = torch.cat([tgt, token], dim=1)
        return tgt.shape[1] - 1

    greedy()  # warm-up
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        tokens = greedy()
        times.append(time.perf_counter() - start)
    return tokens, times, None


def gpt_modules(torch, nn, F):
    """The nanoGPT-shaped module classes (the project's own code)."""

    class SelfAttention(nn.Module):
        def __init__(self, d, heads, block):
            super().__init__()
            self.heads = heads
            self.c_attn = nn.Linear(d, 3 * d)  # q, k, v stacked along the output
            self.c_proj = nn.Linear(d, d)
            self.register_buffer("causal", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

        def split(self, x):  # [B, T, D] -> q, k, v [B, H, T, Dh]
            b, t, d = x.shape
            q, k, v = self.c_attn(x).split(d, dim=2)
            return [y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v)]

        def attend(self, q, k, v, first):
            # Queries are positions first .. first+Tq-1 of keys 0 .. Tk-1.
            tq, tk = q.shape[2], k.shape[2]
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
            scores = scores.masked_fill(self.causal[:, :, first:first + tq, :tk] == 0, float("-inf"))
            y = F.softmax(scores, dim=-1) @ v  # [B, H, Tq, Dh]
            b, h, t, dh = y.shape
            return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, h * dh))

        def forward(self, x, cache=None):
            q, k, v = self.split(x)
            first = 0
            if cache is not None:
                if cache:  # earlier positions' keys and values
                    first = cache[0].shape[2]
                    k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
                cache[:] = [k, v]
            return self.attend(q, k, v, first)

    class Block(nn.Module):
        def __init__(self, d, heads, ff, block):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(d), SelfAttention(d, heads, block), nn.LayerNorm(d)
            self.mlp = nn.ModuleDict({"c_fc": nn.Linear(d, ff), "gelu": nn.GELU(), "c_proj": nn.Linear(ff, d)})

        def forward(self, x, cache=None):
            x = x + self.attn(self.ln_1(x), cache)
            return x + self.mlp.c_proj(self.mlp.gelu(self.mlp.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self, vocab, block, d, heads, ff, layers):
            super().__init__()
            self.block_size = block
            self.transformer = nn.ModuleDict({
                "wte": nn.Embedding(vocab, d), "wpe": nn.Embedding(block, d),
                "h": nn.ModuleList([Block(d, heads, ff, block) for _ in range(layers)]), "ln_f": nn.LayerNorm(d)})
            self.lm_head = nn.Linear(d, vocab)

        def forward(self, idx, caches=None):
            # The last position's logits [B, 1, V], as nanoGPT's forward without targets.
            first = caches[0][0].shape[2] if caches and caches[0] else 0
            positions = torch.arange(first, first + idx.shape[1])
            x = self.transformer.wte(idx) + self.transformer.wpe(positions)
            for i, block in enumerate(self.transformer.h):
                x = block(x, None if caches is None else caches[i])
            return self.lm_head(self.transformer.ln_f(x[:, [-1], :]))

    return GPT


def load_gpt(torch, nn, F, path):
    """The GPT of tinyformer's file at `path` (decoder_only, pre-LN, learned positions)."""
    import json

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import safetensors_io

    tensors, metadata = safetensors_io.read(path)
    cfg = json.loads(metadata["config"])
    gpt = gpt_modules(torch, nn, F)(cfg["vocab_size"], cfg["max_len"], cfg["d_model"], cfg["nhead"],
                                    cfg["dim_feedforward"], cfg["num_layers"]).eval()
    names = {"embed.weight": "transformer.wte.weight", "pos_embed.weight": "transformer.wpe.weight",
             "transformer.norm.weight": "transformer.ln_f.weight", "transformer.norm.bias": "transformer.ln_f.bias",
             "lm_head.weight": "lm_head.weight", "lm_head.bias": "lm_head.bias"}
    parts = {"self_attn.in_proj_weight": "attn.c_attn.weight", "self_attn.in_proj_bias": "attn.c_attn.bias",
             "self_attn.out_proj.weight": "attn.c_proj.weight", "self_attn.out_proj.bias": "attn.c_proj.bias",
             "linear1.weight": "mlp.c_fc.weight", "linear1.bias": "mlp.c_fc.bias",
             "linear2.weight": "mlp.c_proj.weight", "linear2.bias": "mlp.c_proj.bias",
             "norm1.weight": "ln_1.weight", "norm1.bias": "ln_1.bias",
             "norm2.weight": "ln_2.weight", "norm2.bias": "ln_2.bias"}
    for i in range(cfg["num_layers"]):
        for ours, theirs in parts.items():
            names[f"transformer.layers.{i}.{ours}"] = f"transformer.h.{i}.{theirs}"
    state = {names[name]: torch.from_numpy(value) for name, value in tensors.items()}
    missing, unexpected = gpt.load_state_dict(state, strict=False)
    missing = [name for name in missing if not name.endswith(".causal")]  # buffers, not weights
    if missing or unexpected:
        raise SystemExit(f"torch_decode.py: {path}: missing {missing}, unexpected {unexpected}")
    return gpt


def gpt_loop(torch, gpt, prompt, new_tokens, cached, reps):
    """Greedy decoding of `new_tokens` tokens after `prompt`: (tokens, times, ids)."""
    start_ids = torch.tensor([prompt])

    def rerun(count):  # nanoGPT's generate, greedy
        idx = start_ids
        for _ in range(count):
            idx_cond = idx if idx.shape[1] <= gpt.block_size else idx[:, -gpt.block_size:]
            logits = gpt(idx_cond)[:, -1, :]
            idx = torch.cat([idx, logits.argmax(-1, keepdim=True)], dim=1)
        return idx[0, len(prompt):].tolist()

    def with_cache(count):
        caches = [[] for _ in gpt.transformer.h]
        logits = gpt(start_ids, caches)[:, -1, :]  # the prompt, once
        generated = []
        for step in range(count):
            token = logits.argmax(-1, keepdim=True)
            generated.append(int(token))
            if step + 1 < count:
                logits = gpt(token, caches)[:, -1, :]
        return generated

    loop = with_cache if cached else rerun
    loop(8)  # warm-up (short: the re-run loop takes seconds)
    times, ids = [], []
    for _ in range(reps):
        start = time.perf_counter()
        ids = loop(new_tokens)
        times.append(time.perf_counter() - start)
    return len(ids), times, ids


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--protocol", action="store_true", help="machine-readable result line")
    parser.add_argument("--mode", choices=("transformer", "nanogpt-rerun", "nanogpt-cached"), default="transformer")
    parser.add_argument("--model", help="nanogpt modes: the tinyformer file whose weights to run")
    parser.add_argument("--prompt", help="nanogpt modes: prompt ids, comma-separated")
    parser.add_argument("--new-tokens", type=int, default=240, help="nanogpt modes: tokens to generate")
    args = parser.parse_args()
    if args.mode != "transformer" and (not args.model or not args.prompt):
        parser.error(f"--mode {args.mode} needs --model and --prompt")
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(args.threads)
    import torch
    from torch import nn
    from torch.nn import functional as F

    torch.set_num_threads(args.threads)
    with torch.inference_mode():
        if args.mode == "transformer":
            tokens, times, ids = transformer_loop(torch, nn, args.reps)
        else:
            gpt = load_gpt(torch, nn, F, args.model)
            prompt = [int(t) for t in args.prompt.split(",")]
            tokens, times, ids = gpt_loop(torch, gpt, prompt, args.new_tokens, args.mode == "nanogpt-cached",
                                          args.reps)
    if args.protocol:
        print(f"result {tokens} {statistics.median(times):.6f} {min(times):.6f}")
    else:
        print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {args.mode}: {tokens} tokens, "
              f"median {statistics.median(times):.3f} s, {tokens / statistics.median(times):.1f} tokens/s")
    if ids is not None:
        print("tokens " + ",".join(str(i) for i in ids))


if __name__ == "__main__":
    main()
