#!/usr/bin/python3
"""Write data/export/: a tiny seq2seq model exported by tools/python/tinyformer_export.py,
a batch of inputs and PyTorch's outputs on it, for tests/test_export.cpp
(which runs in `make test`, without PyTorch).

The model: stock nn.Transformer(batch_first=False) (the layout of PyTorch's
translation tutorial), D=16, H=4, F=32, 2 encoder + 2 decoder layers, pre-LN,
GELU, sinusoidal positions, embeddings scaled by sqrt(D), word-level source and
target vocabularies of different sizes (tokenizer "whitespace", ids as in the
tutorial: <unk> 0, <pad> 1, <bos> 2, <eos> 3), the generator's weight tied to
the target embedding. Seeded random weights.

Files:
    seq2seq.safetensors           the checkpoint (export_encoder_decoder)
    seq2seq.inputs.safetensors    src_ids [3,7], tgt_ids [3,6] (I64), src/tgt_key_padding_mask
                                  (BOOL, true = padding): row 0 none, row 1 right, row 2 left padding
    seq2seq.expected.safetensors  PyTorch's float32 outputs from the modules themselves (not
                                  from the file), named as `tinyformer forward --attention` names
                                  them: logits, encoder.{i}.self_attn.weights, decoder.{i}.{self,cross}_attn.weights

Before writing, the expected outputs are recomputed from the files alone by
tools/python/numpy_reference.py's independent float64 numpy model of FORMAT.md, which must
agree within 5% of the tolerance at every non-padding position.

Run from the repository root (Debian's python3-torch); the output is deterministic:
    /usr/bin/python3 tools/python/make_export_fixture.py [--out data/export]
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import safetensors_io as st  # noqa: E402
import tinyformer_export as te  # noqa: E402
import torch_modules as tm  # noqa: E402
from make_reference import randomize_  # noqa: E402
from numpy_reference import spec_forward  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SRC_VOCAB = ["<unk>", "<pad>", "<bos>", "<eos>", "ein", "eine", "der", "die", "das", "hund", "katze", "haus",
             "sieht", "klein", "gross", "rot"]
TGT_VOCAB = ["<unk>", "<pad>", "<bos>", "<eos>", "a", "the", "dog", "cat", "house", "sees", "small", "big", "red"]
UNK, PAD, BOS, EOS = 0, 1, 2, 3
D, H, FF, MAX_LEN = 16, 4, 32, 12
SEED = 2024


def build():
    torch.manual_seed(SEED)
    transformer = nn.Transformer(d_model=D, nhead=H, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=FF,
                                 dropout=0.1, activation="gelu", norm_first=True)      # batch_first=False
    src_embed, tgt_embed = nn.Embedding(len(SRC_VOCAB), D), nn.Embedding(len(TGT_VOCAB), D)
    generator = nn.Linear(D, len(TGT_VOCAB))
    holder = nn.Module()
    holder.transformer, holder.src_embed, holder.tgt_embed, holder.generator = (transformer, src_embed, tgt_embed,
                                                                                generator)
    randomize_(holder, SEED)                     # non-trivial LayerNorms and biases
    generator.weight = tgt_embed.weight          # tied: written as two copies
    for m in (transformer, src_embed, tgt_embed, generator):
        m.eval()
    return dict(transformer=transformer, src_embed=src_embed, tgt_embed=tgt_embed, generator=generator)


def inputs():
    src_words = [["die", "katze", "sieht", "das", "rot", "haus", "<eos>"],
                 ["ein", "klein", "hund", "<eos>"],
                 ["der", "hund", "<eos>"]]
    tgt_words = [["<bos>", "the", "cat", "sees", "the", "red"],
                 ["<bos>", "a", "small", "dog"],
                 ["<bos>", "the", "dog"]]
    src_ids = [[SRC_VOCAB.index(w) for w in row] for row in src_words]
    tgt_ids = [[TGT_VOCAB.index(w) for w in row] for row in tgt_words]

    def pad(rows, left_row):
        width = max(len(r) for r in rows)
        ids = np.full((len(rows), width), PAD, dtype=np.int64)
        mask = np.ones((len(rows), width), dtype=bool)
        for b, r in enumerate(rows):
            start = width - len(r) if b == left_row else 0
            ids[b, start:start + len(r)] = r
            mask[b, start:start + len(r)] = False
        return ids, mask

    src, src_mask = pad(src_ids, left_row=2)
    tgt, tgt_mask = pad(tgt_ids, left_row=2)
    return {"src_ids": src, "tgt_ids": tgt, "src_key_padding_mask": src_mask, "tgt_key_padding_mask": tgt_mask}


def pytorch_outputs(parts, batch):
    t = {k: torch.from_numpy(v) for k, v in batch.items()}
    cfg = {"d_model": D, "embed_scale": True, "pos_encoding": "sinusoidal"}
    cap = tm.Capture(tm.stack_attention_names("encoder_decoder", parts["transformer"]), sanitize=True)
    try:
        with tm.NoFastPath(), torch.enable_grad():
            logits = tm.encoder_decoder_forward(cfg, parts["transformer"], parts["src_embed"], parts["tgt_embed"],
                                                parts["generator"], t["src_ids"], t["tgt_ids"],
                                                t["src_key_padding_mask"], t["tgt_key_padding_mask"])
    finally:
        cap.remove()
    out = {"logits": logits.detach()}
    out.update(cap.weights)
    tgt_pad, src_pad = batch["tgt_key_padding_mask"], batch["src_key_padding_mask"]
    expected = {}
    for name, value in out.items():
        value = value.float().numpy().copy()
        qpad = src_pad if name.startswith("encoder.") else tgt_pad
        rows = np.broadcast_to(qpad[:, :, None] if name == "logits" else qpad[:, None, :, None], value.shape)
        if not np.isfinite(value[~rows]).all():
            raise RuntimeError(f"{name}: PyTorch is not finite at a non-padding position")
        value[~np.isfinite(value)] = 0.0          # only at padded rows (left padding, causal)
        expected[name] = value
    return expected


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "data" / "export", help="output folder (default data/export)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    args.out.mkdir(parents=True, exist_ok=True)
    parts = build()
    model = args.out / "seq2seq.safetensors"
    te.export_encoder_decoder(model, **parts, max_len=MAX_LEN, pad_id=PAD, bos_id=BOS, eos_id=EOS,
                              vocab=TGT_VOCAB, src_vocab=SRC_VOCAB, tokenizer="whitespace", train_max_len=10)
    batch = inputs()
    expected = pytorch_outputs(parts, batch)
    st.write(str(args.out / "seq2seq.inputs.safetensors"), batch)
    st.write(str(args.out / "seq2seq.expected.safetensors"), expected,
             {"generator": "tools/python/make_export_fixture.py", "torch": torch.__version__})

    # the numbers again, from the three files alone, by an independent float64 model
    weights, meta = st.read(str(model))
    cfg = json.loads(meta["config"])
    files_in, _ = st.read(str(args.out / "seq2seq.inputs.safetensors"))
    files_out, _ = st.read(str(args.out / "seq2seq.expected.safetensors"))
    spec, qpads = spec_forward(cfg, weights, files_in)
    worst = 0.0
    for name, ref in spec.items():
        qpad = qpads[name]
        keep = np.broadcast_to(~qpad[:, :, None] if name == "logits" else ~qpad[:, None, :, None], ref.shape)
        ratio = np.abs(files_out[name] - ref) / (te.ATOL + te.RTOL * np.abs(ref))
        worst = max(worst, float(ratio[keep].max()))
    if worst > 0.05:
        raise RuntimeError(f"expected vs float64 spec model: error/tolerance {worst:.3g}")
    total = sum(p.stat().st_size for p in args.out.glob("seq2seq*.safetensors"))
    print(f"wrote {args.out}/seq2seq{{,.inputs,.expected}}.safetensors ({total} bytes); "
          f"PyTorch vs float64 spec model: worst error/tolerance {worst:.2g}")


if __name__ == "__main__":
    main()
