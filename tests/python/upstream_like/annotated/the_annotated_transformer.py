"""A model file with the Annotated Transformer's interface, written for
tinyformer's tests (no upstream code): make_model(src_vocab, tgt_vocab, N=6,
d_model=512, d_ff=2048, h=8, dropout=0.1) with no max_len argument, so the
positional table pe has 5000 rows as the notebook's; forward(src, tgt, src_mask,
tgt_mask) returns the decoder's output and the Generator (log_softmax of a
projection) is applied outside it; every attention keeps its last weights in
.attn. The modules are families/annotated.py's (the project's own twin of the
notebook's tree)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tools" / "python"))
from families import annotated  # noqa: E402


def make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1):
    return annotated.make_model(src_vocab, tgt_vocab, N=N, d_model=d_model, d_ff=d_ff, h=h, dropout=dropout)
