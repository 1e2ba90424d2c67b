#!/usr/bin/python3
"""Bring your own model: PyTorch's translation-tutorial Seq2SeqTransformer in tinyformer.

The model is the one of PyTorch's "Language Translation with nn.Transformer
and torchtext" tutorial - TokenEmbedding (nn.Embedding scaled by sqrt(D)),
the sinusoidal PositionalEncoding with dropout, nn.Transformer and a linear
generator - written batch-first (nn.Transformer(batch_first=True)), with
random weights and a small word-level vocabulary. The script

1. checks that the tutorial's positional table is FORMAT.md's
   (P[pos, 2i] = sin(pos / 10000^(2i/D)), P[pos, 2i+1] = cos(same)): the same
   layout, differing only by the tutorial's float32 arithmetic;
2. exports it with tools/python/tinyformer_export.py's export_encoder_decoder
   (tokenizer "whitespace", the tutorial's special ids <unk> 0, <pad> 1,
   <bos> 2, <eos> 3, separate source and target vocabularies);
3. runs check(): build/tinyformer against PyTorch on random padded batches,
   logits and every per-head attention weight;
4. runs the tutorial module's own forward (its own positional table, its
   own masks, eval mode: dropout off) on two sentences and compares its logits
   with `build/tinyformer forward` on the exported file;
5. prints the commands to look at the model with tinyformer.

Run from the repository root after `make` (Debian's python3-torch):

    /usr/bin/python3 tools/python/examples/export_seq2seq.py [OUT.safetensors]

OUT defaults to build/examples/seq2seq.safetensors; OUT.inputs.safetensors
(the two sentences as `forward` inputs) is written beside it.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools" / "python"))
import safetensors_io as st  # noqa: E402
from tinyformer_export import check, export_encoder_decoder, tinyformer_binary  # noqa: E402
from numpy_reference import sinusoidal_table  # noqa: E402

# ---------------------------------------------------------------------------
# The tutorial's modules (batch_first)
# ---------------------------------------------------------------------------

UNK_IDX, PAD_IDX, BOS_IDX, EOS_IDX = 0, 1, 2, 3
SPECIALS = ["<unk>", "<pad>", "<bos>", "<eos>"]


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size: int, dropout: float, maxlen: int = 5000):
        super().__init__()
        den = torch.exp(- torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.unsqueeze(0)          # [1, maxlen, E]: batch first
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pos_embedding)

    def forward(self, token_embedding: Tensor):
        return self.dropout(token_embedding + self.pos_embedding[:, :token_embedding.size(1), :])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, emb_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens: Tensor):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class Seq2SeqTransformer(nn.Module):
    def __init__(self, num_encoder_layers, num_decoder_layers, emb_size, nhead, src_vocab_size, tgt_vocab_size,
                 dim_feedforward=512, dropout=0.1):
        super().__init__()
        self.transformer = nn.Transformer(d_model=emb_size, nhead=nhead, num_encoder_layers=num_encoder_layers,
                                          num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward,
                                          dropout=dropout, batch_first=True)
        self.generator = nn.Linear(emb_size, tgt_vocab_size)
        self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
        self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
        self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
        outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask, tgt_padding_mask,
                                memory_key_padding_mask)
        return self.generator(outs)


def create_mask(src, tgt):
    """The tutorial's masks, batch first."""
    src_len, tgt_len = src.shape[1], tgt.shape[1]
    tgt_mask = torch.triu(torch.full((tgt_len, tgt_len), float("-inf")), diagonal=1)
    src_mask = torch.zeros((src_len, src_len)).type(torch.bool)
    return src_mask, tgt_mask, src == PAD_IDX, tgt == PAD_IDX


# ---------------------------------------------------------------------------

SRC_WORDS = "eine ein der die das katze hund haus maus sieht jagt klein gross rot schnell".split()
TGT_WORDS = "a the cat dog house mouse sees chases small big red fast".split()
MAX_LEN = 64
ATOL = RTOL = 1e-4


def encode(words, vocab):
    return [vocab.index(w) if w in vocab else UNK_IDX for w in words.split()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See the module docstring (pydoc3 tools/python/examples/export_seq2seq.py) "
                                        "for what each step shows.")
    ap.add_argument("out", nargs="?", type=Path, default=REPO / "build" / "examples" / "seq2seq.safetensors",
                    help="the checkpoint to write (default build/examples/seq2seq.safetensors); "
                         "OUT.inputs.safetensors is written beside it")
    out = ap.parse_args().out
    if out.suffix != ".safetensors":
        ap.error(f"the output should end in .safetensors, got {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    src_vocab, tgt_vocab = SPECIALS + SRC_WORDS, SPECIALS + TGT_WORDS
    model = Seq2SeqTransformer(2, 2, emb_size=32, nhead=4, src_vocab_size=len(src_vocab),
                               tgt_vocab_size=len(tgt_vocab), dim_feedforward=64, dropout=0.1)
    model.eval()                                     # the tutorial's dropout is off at inference

    # 1. the positional table
    tutorial = model.positional_encoding.pos_embedding[0, :MAX_LEN].double().numpy()
    table_diff = float(np.abs(tutorial - sinusoidal_table(MAX_LEN, 32)).max())
    print(f"1. tutorial PositionalEncoding vs FORMAT's sinusoidal table, positions 0..{MAX_LEN - 1}: "
          f"max |difference| {table_diff:.2g} (float32 arithmetic; same sin/cos layout)")
    if table_diff > 1e-5:
        sys.exit("export_seq2seq.py: the tutorial's positional table is not FORMAT's")

    # 2. export
    config = export_encoder_decoder(
        out, transformer=model.transformer, src_embed=model.src_tok_emb.embedding,
        tgt_embed=model.tgt_tok_emb.embedding, generator=model.generator, pos_encoding="sinusoidal",
        embed_scale=True, max_len=MAX_LEN, pad_id=PAD_IDX, bos_id=BOS_IDX, eos_id=EOS_IDX, vocab=tgt_vocab,
        src_vocab=src_vocab, tokenizer="whitespace")
    print(f"2. wrote {out} ({out.stat().st_size} bytes): {config['arch']}, D={config['d_model']}, "
          f"H={config['nhead']}, {config['num_encoder_layers']}+{config['num_decoder_layers']} layers, "
          f"norm_first={config['norm_first']}, activation={config['activation']} (read from the modules)")

    # 3. check
    worst = check(out)
    print(f"3. check: build/tinyformer vs PyTorch on 3 random padded batches, logits and every head: "
          f"worst |a-b| / (1e-4 + 1e-4|b|) = {worst:.3g} (<= 1 passes)")

    # 4. the tutorial's own forward on two sentences vs tinyformer forward
    sources = ["die katze sieht den hund", "ein kleiner hund"]          # 'den', 'kleiner' are <unk>
    targets = ["<bos> the cat sees the dog", "<bos> a small dog"]
    src_rows = [encode(s, src_vocab) for s in sources]
    tgt_rows = [[BOS_IDX] + encode(t.replace("<bos> ", ""), tgt_vocab) for t in targets]

    def pad(rows):
        width = max(len(r) for r in rows)
        return torch.tensor([r + [PAD_IDX] * (width - len(r)) for r in rows], dtype=torch.int64)

    src, tgt = pad(src_rows), pad(tgt_rows)
    src_mask, tgt_mask, src_pad, tgt_pad = create_mask(src, tgt)
    with torch.no_grad():
        theirs = model(src, tgt, src_mask, tgt_mask, src_pad, tgt_pad, src_pad).numpy()
    inputs_path = out.with_name(out.name.replace(".safetensors", ".inputs.safetensors"))
    st.write(str(inputs_path), {"src_ids": src.numpy(), "tgt_ids": tgt.numpy(),
                                "src_key_padding_mask": src_pad.numpy(), "tgt_key_padding_mask": tgt_pad.numpy()})
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "out.safetensors")
        run = subprocess.run([tinyformer_binary(), "forward", str(out), "--inputs", str(inputs_path), "--output",
                              result], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"export_seq2seq.py: tinyformer forward failed: {run.stderr.strip()}")
        ours = st.read(result)[0]["logits"]
    keep = ~tgt_pad.numpy()
    ratio = np.abs(ours - theirs) / (ATOL + RTOL * np.abs(theirs))
    tutorial_worst = float(ratio[keep].max())
    print(f"4. the tutorial's Seq2SeqTransformer.forward (its own positional table and masks) vs "
          f"tinyformer forward on {len(sources)} sentences: worst |a-b| / tol = {tutorial_worst:.3g}")
    if tutorial_worst > 1.0:
        sys.exit("export_seq2seq.py: tinyformer and the tutorial's module disagree")

    # 5. what to run next
    def shown(path):
        relative = os.path.relpath(path)
        return relative if not relative.startswith("..") else str(path)

    demo_dir = shown(out.parent / "seq2seq-attention")
    out, inputs_path = shown(out), shown(inputs_path)
    print(f"""5. look at it with tinyformer:
    build/tinyformer info {out}
    build/tinyformer forward {out} --inputs {inputs_path} --output /tmp/seq2seq-out.safetensors --attention
  with the whitespace tokenizer (vocabularies in the file's metadata; random weights, so noise as output):
    build/tinyformer run {out} "die katze sieht den hund"
    build/tinyformer attention {out} "die katze sieht den hund" --out {demo_dir}""")
    return 0


if __name__ == "__main__":
    sys.exit(main())
