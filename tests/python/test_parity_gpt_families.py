#!/usr/bin/python3
"""The committed decoder-only family models (data/families/nanogpt-char*, mingpt-sort*,
gpt2-tiny*) against the committed PyTorch weights, through the project's own
families/gpt.py and families/hf_gpt2.py modules (run by `make parity`; needs PyTorch
and build/tinyformer).

For each model:
- check(committed .safetensors, the module holding the committed weights, loaded from
  the nanoGPT ckpt.pt / the minGPT state_dict / the HF folder): logits at every position
  (and every per-head weight the GPT module keeps) on random batches; the worst
  normalised error is printed (<= 1 passes);
- the committed greedy continuations are what the module's own greedy loop
  (GPT.generate(do_sample=False), GPT2LMHead.generate_greedy) makes with the committed
  weights now, at every step today's logits decide (greedy_margin.py: the committed
  run was PyTorch on another CPU), with enough steps decided;
- the converter run again on the committed upstream file writes the same tensors as
  the committed .safetensors.

    /usr/bin/python3 tests/python/test_parity_gpt_families.py -v
"""

import sys
import tempfile
import unittest
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import safetensors_io as st  # noqa: E402
import tinyformer_export as te  # noqa: E402
from families import write_converted  # noqa: E402
from families import gpt as G  # noqa: E402
from families import hf_gpt2 as H  # noqa: E402

sys.path.insert(0, str(REPO / "tools" / "python" / "examples"))
import train_gpt2_tiny  # noqa: E402  (its BPE encoder, for the prompts)

sys.path.insert(0, str(REPO / "tests" / "python"))
import greedy_margin as gm  # noqa: E402

DATA = REPO / "data" / "families"
NUMBERS = {}
DECIDED = {}


def nanogpt():
    """(Converted, GPT module, vocabulary) of the committed nanoGPT char checkpoint."""
    folder = DATA / "nanogpt-char"
    converted = G.convert_nanogpt(folder / "ckpt.pt", meta_path=folder / "meta.pkl", gelu="exact")
    ckpt = G.load_torch_file(folder / "ckpt.pt")
    args = ckpt["model_args"]
    module = G.GPT(G.GPTConfig(block_size=args["block_size"], vocab_size=args["vocab_size"], n_layer=args["n_layer"],
                               n_head=args["n_head"], n_embd=args["n_embd"], bias=args["bias"], gelu="exact",
                               tie=True))
    module.load_state_dict(ckpt["model"])
    return converted, module.eval(), G.read_meta(folder / "meta.pkl")


def mingpt():
    """(Converted, GPT module, vocabulary) of the committed minGPT sort state_dict."""
    vocab = ["0", "1", "2"]
    converted = G.convert_mingpt(DATA / "mingpt-sort.pt", n_head=3, vocab=vocab, tokenizer="char")
    module = G.GPT(G.GPTConfig(block_size=11, vocab_size=3, n_layer=3, n_head=3, n_embd=48, bias=True, gelu="tanh",
                               tie=False))
    module.load_state_dict(G.load_torch_file(DATA / "mingpt-sort.pt"))
    return converted, module.eval(), vocab


class Gpt2Tiny:
    """GPT2LMHead holding the HF folder's weights, with the folder's BPE for text."""

    def __init__(self):
        folder = DATA / "gpt2-tiny"
        cfg, state, _ = H.read_folder(folder)
        self.module = H.GPT2LMHead(H.GPT2Config(vocab_size=cfg["vocab_size"], n_positions=cfg["n_positions"],
                                                n_embd=cfg["n_embd"], n_layer=cfg["n_layer"], n_head=cfg["n_head"]))
        missing, unexpected = self.module.load_state_dict(state, strict=False)
        assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
        self.module.eval()
        self.vocab, self.merges = H.read_bpe(folder / "vocab.json", folder / "merges.txt")
        self.stoi = {t: i for i, t in enumerate(self.vocab)}

    def greedy(self, prompt, count):
        """The new tokens of generate_greedy, and each step's logits."""
        idx = torch.tensor([train_gpt2_tiny.encode(prompt, self.merges, self.stoi)])
        with gm.recording_last_rows(self.module) as steps:
            new = self.module.generate_greedy(idx, count)[0, idx.shape[1]:].tolist()
        return new, steps

    def decode(self, ids):
        return train_gpt2_tiny.decode(ids, self.vocab)


def gpt2_tiny():
    tiny = Gpt2Tiny()
    return H.convert_hf_gpt2(str(DATA / "gpt2-tiny")), tiny.module, tiny


MODELS = {"nanogpt-char": nanogpt, "mingpt-sort": mingpt, "gpt2-tiny": gpt2_tiny}
# The share of greedy steps today's logits must decide, per model (measured: every
# step of every committed row; a near tie would leave the rest of its row undecided).
ENOUGH_DECIDED = 0.9


def greedy_rows(name):
    lines = (DATA / f"{name}.greedy.tsv").read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in lines if line and not line.startswith("#")]


class GptFamilyParity(unittest.TestCase):
    def test_committed_files_match_the_committed_weights(self):
        for name, load in MODELS.items():
            with self.subTest(name):
                _, module, _ = load()
                worst = te.check(str(DATA / f"{name}.safetensors"), module, n_batches=4)
                NUMBERS[f"{name}: committed file vs {type(module).__name__}(committed weights)"] = worst
                self.assertLessEqual(worst, 1.0)

    def test_committed_greedy_continuations_are_generate_now(self):
        for name, load in MODELS.items():
            with self.subTest(name):
                _, module, vocab = load()
                rows = greedy_rows(name)
                self.assertGreaterEqual(len(rows), 5)
                tally = gm.Tally()
                for row in rows:
                    prompt, want = row[0], row[1]
                    if isinstance(vocab, Gpt2Tiny):  # third column: the tokens generated
                        ids, steps = vocab.greedy(prompt, int(row[2]))
                        decided = gm.decided_steps(steps)
                        tally.add(decided, len(steps))
                        gm.check_text(self, vocab.decode(ids[:decided]), vocab.decode(ids), want, decided, len(steps),
                                      prompt)
                        continue
                    stoi = {ch: i for i, ch in enumerate(vocab)}
                    idx = torch.tensor([[stoi[ch] for ch in prompt]])
                    with gm.recording_last_rows(module) as steps:
                        ids = module.generate(idx, len(want), do_sample=False)[0, idx.shape[1]:].tolist()
                    decided = gm.decided_steps(steps)
                    tally.add(decided, len(steps))
                    # A character vocabulary: one token per character of the committed text.
                    gm.check_tokens(self, [vocab[i] for i in ids], list(want), decided, len(steps), prompt)
                DECIDED[name] = str(tally)
                self.assertGreaterEqual(tally.fraction(), ENOUGH_DECIDED, f"{name}: only {tally}")

    def test_converting_again_writes_the_committed_tensors(self):
        for name, load in MODELS.items():
            with self.subTest(name), tempfile.TemporaryDirectory() as tmp:
                converted, _, _ = load()
                path = str(Path(tmp) / "again.safetensors")
                write_converted(path, converted)
                ours, ours_meta = st.read(path)
                theirs, theirs_meta = st.read(str(DATA / f"{name}.safetensors"))
                self.assertEqual(sorted(ours), sorted(theirs))
                for tensor in ours:
                    self.assertTrue((ours[tensor] == theirs[tensor]).all(), tensor)
                self.assertEqual(ours_meta, theirs_meta)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    for case, worst in NUMBERS.items():
        print(f"  {case:60s} worst |a-b|/tol {worst:.4g}")
    for name, tally in DECIDED.items():
        print(f"  {name}: greedy against the committed: {tally}")
    sys.exit(0 if result.wasSuccessful() else 1)
