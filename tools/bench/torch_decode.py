#!/usr/bin/python3
"""PyTorch side of the `decode` benchmark suite (tools/bench/bench_decode.cpp).

The greedy loop users actually write with nn.Transformer: encode the source
once, then at every step re-run the decoder on the whole growing target and
take the argmax of the last position (no KV cache):

    memory = model.encoder(src_embed(src))
    for step in range(64):
        h = model.decoder(tgt_embed(tgt), memory, tgt_mask=causal(len(tgt)))
        tgt = cat(tgt, argmax(generator(h[:, -1])))

Base-size model: nn.Transformer(d_model=512, nhead=8, 6+6 layers,
dim_feedforward=2048, dropout=0, batch_first=True), vocabulary 32000, random
weights, source 64 tokens, 64 decoded tokens, B=1, eval() and
torch.inference_mode(). One warm-up run, then `reps` timed runs; the median.
Run with Debian's interpreter (python3-torch), one process per thread count:
    /usr/bin/python3 tools/bench/torch_decode.py --threads 1
--protocol prints "result tokens median_s min_s" for tinyformer-bench.
"""

import argparse
import os
import statistics
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--protocol", action="store_true", help="machine-readable result line")
    args = parser.parse_args()
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(args.threads)
    import torch
    from torch import nn

    torch.set_num_threads(args.threads)
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

    with torch.inference_mode():
        greedy()  # warm-up
        times = []
        for _ in range(args.reps):
            start = time.perf_counter()
            tokens = greedy()
            times.append(time.perf_counter() - start)
    if args.protocol:
        print(f"result {tokens} {statistics.median(times):.6f} {min(times):.6f}")
    else:
        print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s): {tokens} tokens, "
              f"median {statistics.median(times):.3f} s, {tokens / statistics.median(times):.1f} tokens/s")


if __name__ == "__main__":
    main()
