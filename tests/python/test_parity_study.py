#!/usr/bin/python3
"""`tinyformer patch` and `tinyformer lens` against the plain PyTorch reference of
tools/python/study_reference.py (run by `make parity`; needs PyTorch and
build/tinyformer): the same experiment on the committed models, the engine's
JSON against numbers computed with forward hooks on the reference modules.

The tolerance. Every number here comes from logits or activations, and the
engine's logits agree with PyTorch's within docs/FORMAT.md section 2's bound
eps(z) = 1e-4 + 1e-4 |z| (z the reference's value). From it:
- an LD (the difference of two logits a, b) within eps(a) + eps(b);
- an effect e = (P - C) / (K - C) (LD patched, corrupted, clean) within
  (eps_P + eps_C + |e| (eps_K + eps_C)) / |K - C|: a ratio, so its bound is the
  LDs' bound over the gap LD_clean - LD_corrupted (first order);
- a probability p_i = softmax(z)_i within 2 eps(max |z|) (dp_i = p_i (dz_i -
  sum_j p_j dz_j)); a top-1 token or an answer rank is compared only where no
  other logit lies within 2 eps of it (a near tie may go either way);
- the stream's norm ||x|| within sqrt(D) 1e-4 + 1e-4 ||x|| (each element within
  eps of the reference's);
- an attribution part (a linear function sum_d centre(part)_d dir_d of
  activations) within 2 eps(max |part_d|) sum_d |dir_d| + 1e-4 |part|; the
  parts sum to the logit within lens.h's kAttributionTolerance on both sides;
  the model's logit there within eps(logit) (a logit, as above), and the frozen
  scale s within 1e-4 s (a norm of elements each within eps: relative 1e-4 as
  the stream's norm, whose sqrt(D) 1e-4 floor s never comes near);
- a top-K list as long as the reference's, with the reference's token at each
  place where that token's logit is clear of every other by 2 eps.
The worst |difference| / bound per model and quantity is printed (<= 1 passes).
The reference itself holds patching.h's three identities exactly, and its lens
after the last layer is its logits bit for bit.

The models: reverse, dates and sort (encoder-decoder, sort post-LN: no
attribution), reverse-causal (decoder-only, a given --target), nanogpt-char
and mingpt-sort (families/gpt.py's GPT holding the nanoGPT checkpoint / the
minGPT state_dict: the weights before the converter), llama2c-tiny (rms_norm,
rotary, grouped-query: the twin's TwinAttention), gpt2-tiny and annotated-copy
(layer_norm_std, mask_value, a given target), and the decoder-only reverse
models of every position scheme and mask (learned, sinusoidal, rotary, ALiBi,
prefix-LM, peeking), with --what resid, attn_out, mlp_out and head.

    /usr/bin/python3 tests/python/test_parity_study.py -v
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import study_reference as sr  # noqa: E402
import tinyformer_export as te  # noqa: E402
from families import gpt as G  # noqa: E402

MODELS, FAMILIES = REPO / "data" / "models", REPO / "data" / "families"
ATTRIBUTION_TOLERANCE = 1e-5   # models/study/lens.h kAttributionTolerance
WORST = {}                     # (model, quantity) -> [worst |difference| / bound, worst |difference|]


def eps(z):
    """docs/FORMAT.md section 2: |a - b| <= 1e-4 + 1e-4 |b|."""
    return 1e-4 + 1e-4 * abs(z)


def within(test, model, quantity, ours, theirs, bound, where):
    """Assert |ours - theirs| <= bound, keeping the worst per model and quantity."""
    difference = abs(ours - theirs)
    worst = WORST.setdefault((model, quantity), [0.0, 0.0])
    worst[0], worst[1] = max(worst[0], difference / bound), max(worst[1], difference)
    test.assertLessEqual(difference, bound, f"{model}: {quantity}: {where}: ours {ours}, reference {theirs}")


def nanogpt_char(heads=True):
    folder = FAMILIES / "nanogpt-char"
    ckpt = G.load_torch_file(folder / "ckpt.pt")
    a = ckpt["model_args"]
    module = G.GPT(G.GPTConfig(block_size=a["block_size"], vocab_size=a["vocab_size"], n_layer=a["n_layer"],
                               n_head=a["n_head"], n_embd=a["n_embd"], bias=a["bias"], gelu="exact", tie=True))
    module.load_state_dict(ckpt["model"])
    return sr.GptStudy(module, FAMILIES / "nanogpt-char.safetensors")


def mingpt_sort(heads=True):
    module = G.GPT(G.GPTConfig(block_size=11, vocab_size=3, n_layer=3, n_head=3, n_embd=48, bias=True, gelu="tanh",
                               tie=False))
    module.load_state_dict(G.load_torch_file(FAMILIES / "mingpt-sort.pt"))
    return sr.GptStudy(module, FAMILIES / "mingpt-sort.safetensors")


def twin(path):
    """The file's stock twin; heads=True (--what head, the attribution): its attentions as
    TwinAttention, whose z has a hook point. The GPT module's has one anyway."""
    return lambda heads: sr.TwinStudy(path, heads=heads)


# name: (the tinyformer file, the reference, clean, corrupted, --target or None). Strings are a
# character model's text; lists are token ids (given with --ids / --corrupted-ids / --target-ids):
# llama2c-tiny " forty one, forty two, forty" vs "... six, ...", gpt2-tiny "forty one is 41,
# forty two is" vs "... six is", annotated-copy (no eos_id: a given target) copying a source.
PATCH_CASES = {
    "reverse": (MODELS / "reverse.safetensors", twin(MODELS / "reverse.safetensors"), "hello", "hallo", None),
    "dates": (MODELS / "dates.safetensors", twin(MODELS / "dates.safetensors"), "3 may 1979", "3 may 1985", None),
    "nanogpt-char": (FAMILIES / "nanogpt-char.safetensors", nanogpt_char, "forty one, forty two, forty ",
                     "forty one, forty six, forty ", None),
    "reverse-causal": (MODELS / "reverse-causal.safetensors", twin(MODELS / "reverse-causal.safetensors"), "hello",
                       "hallo", "olleh"),
    "mingpt-sort": (FAMILIES / "mingpt-sort.safetensors", mingpt_sort, "1201210", "1201010", None),
    "llama2c-tiny": (FAMILIES / "llama2c-tiny" / "llama2c-tiny.safetensors",
                     twin(FAMILIES / "llama2c-tiny" / "llama2c-tiny.safetensors"),
                     [303, 317, 303, 314, 303], [303, 317, 303, 318, 303], None),
    "gpt2-tiny": (FAMILIES / "gpt2-tiny.safetensors", twin(FAMILIES / "gpt2-tiny.safetensors"),
                  [69, 78, 294, 298, 259, 404, 11, 313, 296, 259], [69, 78, 294, 298, 259, 404, 11, 313, 283, 259], None),
    "annotated-copy": (FAMILIES / "annotated-copy.safetensors", twin(FAMILIES / "annotated-copy.safetensors"),
                       [1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 9, 5, 6, 7], [2, 3, 4, 5, 6, 7]),
}
# The decoder-only reverse models, one per position scheme and mask (prefix_lm, ALiBi,
# rotary, ...): "hello" vs "hallo", teacher-forced on "olleh" (read alone, both inputs' next
# token is the same 'o').
REVERSE_VARIANTS = ["reverse-learned", "reverse-sinusoidal", "reverse-rotary", "reverse-alibi", "reverse-prefixlm",
                    "reverse-peeking"]
for _name in REVERSE_VARIANTS:
    PATCH_CASES[_name] = (MODELS / f"{_name}.safetensors", twin(MODELS / f"{_name}.safetensors"), "hello", "hallo",
                          "olleh")
WHATS = ["resid", "attn_out", "mlp_out", "head"]

# name: (file, reference, text, --target or None (the greedy output), token to attribute or
# None: post-LN). The token is the model's answer at the answer position: a character, or
# (--attribute's text, its id): SentencePiece reads "three." as the piece " three." (id 329;
# its dummy prefix), GPT-2's BPE " 42" as one token.
LENS_CASES = {
    "reverse": (MODELS / "reverse.safetensors", twin(MODELS / "reverse.safetensors"), "hello", None, "o"),
    "dates": (MODELS / "dates.safetensors", twin(MODELS / "dates.safetensors"), "3 may 1979", None, "1"),
    "sort": (MODELS / "sort.safetensors", twin(MODELS / "sort.safetensors"), "31415", None, None),
    "nanogpt-char": (FAMILIES / "nanogpt-char.safetensors", nanogpt_char, "forty one, forty two, forty ", None,
                     "t"),
    "reverse-causal": (MODELS / "reverse-causal.safetensors", twin(MODELS / "reverse-causal.safetensors"), "hello",
                       None, "o"),
    "mingpt-sort": (FAMILIES / "mingpt-sort.safetensors", mingpt_sort, "120121", None, "0"),
    "llama2c-tiny": (FAMILIES / "llama2c-tiny" / "llama2c-tiny.safetensors",
                     twin(FAMILIES / "llama2c-tiny" / "llama2c-tiny.safetensors"), [303, 317, 303, 314, 303], None,
                     ("three.", 329)),
    "gpt2-tiny": (FAMILIES / "gpt2-tiny.safetensors", twin(FAMILIES / "gpt2-tiny.safetensors"),
                  [69, 78, 294, 298, 259, 404, 11, 313, 296, 259], None, (" 42", 384)),
    "annotated-copy": (FAMILIES / "annotated-copy.safetensors", twin(FAMILIES / "annotated-copy.safetensors"),
                       [1, 2, 3, 4, 5, 6, 7], [2, 3, 4, 5, 6, 7], ("2", 2)),
}
for _name in REVERSE_VARIANTS:
    LENS_CASES[_name] = (MODELS / f"{_name}.safetensors", twin(MODELS / f"{_name}.safetensors"), "hello", None, "o")


def tinyformer(*args):
    """Run build/tinyformer; its JSON --output read back."""
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "out.json")
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        done = subprocess.run([te.tinyformer_binary(), *map(str, args), "--output", out], capture_output=True,
                              text=True, env=env)
        if done.returncode != 0:
            raise AssertionError(f"tinyformer {' '.join(map(str, args))}: {done.stderr.strip()}")
        return json.loads(Path(out).read_text(encoding="utf-8"))


def text_args(flag, value):
    """[TEXT] or [--ids 5,17,3] (flag: "--ids", "--corrupted-ids", "--target-ids")."""
    return [flag, ",".join(map(str, value))] if isinstance(value, list) else [value]


def tokens_of(model, value):
    return value if isinstance(value, list) else model.tokens(value)


def labels(model, ids):
    return "".join(model.output_label(t) for t in ids)


def clear_of(logits, index, margin):
    """True when no other logit of the row lies within `margin` of logits[index]."""
    others = torch.cat([logits[:index], logits[index + 1:]])
    return bool((others - logits[index]).abs().min() > margin) if others.numel() else True


class StudyParity(unittest.TestCase):
    def test_patch_agrees_with_the_reference(self):
        for name, (path, load, clean, corrupted, target) in PATCH_CASES.items():
            stock, with_heads = load(heads=False), load(heads=True)
            for what in WHATS:
                with self.subTest(model=name, what=what):
                    model = with_heads if what == "head" else stock
                    args = ["patch", path]
                    if isinstance(clean, list):
                        args += text_args("--ids", clean) + text_args("--corrupted-ids", corrupted)
                    else:
                        args += [clean, corrupted]
                    if target is not None:
                        args += text_args("--target-ids", target) if isinstance(target, list) else ["--target", target]
                    ours = tinyformer(*args, "--what", what)
                    given = None if target is None else tokens_of(model, target)
                    ref = sr.activation_patching(model, tokens_of(model, clean), tokens_of(model, corrupted), what,
                                                 given)
                    self.check_patch(name, model, ours, ref)

    def check_patch(self, name, model, ours, ref):
        # The experiment: the same inputs, target, answer row, answers and rows.
        self.assertEqual(ours["clean"]["input_ids"], ref["clean_input"])
        self.assertEqual(ours["corrupted"]["input_ids"], ref["corrupted_input"])
        if model.metadata.get("tokenizer", "char") == "char":
            self.assertEqual(ours["target"], labels(model, ref["target"]))
        self.assertEqual(ours["answer_row"], ref["answer_row"])
        self.assertEqual(ours["clean"]["answer_id"], ref["clean_answer"])
        self.assertEqual(ours["corrupted"]["answer_id"], ref["corrupted_answer"])
        self.assertEqual(ours["layers"], ref["layers"])
        self.assertEqual([len(row) for row in ours["effect"]], [len(row) for row in ref["effect"]])
        # The two LDs, each the difference of two logits.
        bound = {}
        for side, key in (("clean", "ld_clean"), ("corrupted", "ld_corrupted")):
            a, b = ref["answer_logits"][side]
            bound[side] = eps(a) + eps(b)
            within(self, name, "LD clean/corrupted", ours[side]["logit_diff"], ref[key], bound[side], side)
        gap = ref["ld_clean"] - ref["ld_corrupted"]
        ours_gap = ours["clean"]["logit_diff"] - ours["corrupted"]["logit_diff"]
        for layer, ours_row, ref_row, logits_row in zip(ref["layers"], ours["effect"], ref["effect"],
                                                        ref["patched_logits"]):
            for p, (e_ours, e_ref, (a, b)) in enumerate(zip(ours_row, ref_row, logits_row)):
                where = f"{layer} position {p}"
                bound_patched = eps(a) + eps(b)
                # LD_patched, recovered from each side's effect and LDs.
                ld_ours = ours["corrupted"]["logit_diff"] + e_ours * ours_gap
                ld_ref = ref["ld_corrupted"] + e_ref * gap
                within(self, name, "LD patched", ld_ours, ld_ref, bound_patched, where)
                effect_bound = (bound_patched + bound["corrupted"] + abs(e_ref) * (bound["clean"] + bound["corrupted"]))
                within(self, name, f"effect ({ours['what']})", e_ours, e_ref, effect_bound / abs(gap), where)

    def test_the_reference_holds_the_three_patching_identities(self):
        # patching.h's identities on the reference: the last stream's answer row patched alone
        # gives 1; a position hidden from the answer row gives 0; the clean run patched into
        # itself is unchanged. Exact here too: PyTorch's steps work row by row but attention,
        # where a hidden key's weight is exp(-inf) = 0.
        for name, path, clean, corrupted, target in (
                ("reverse", MODELS / "reverse.safetensors", "hello", "hallo", None),
                ("reverse-causal", MODELS / "reverse-causal.safetensors", "hello", "hallo", "olleh")):
            with self.subTest(model=name):
                model = sr.TwinStudy(path)
                given = None if target is None else model.tokens(target)
                ref = sr.activation_patching(model, model.tokens(clean), model.tokens(corrupted), "resid", given)
                row = ref["answer_row"]
                last = ref["effect"][-1]              # the stream after the last layer
                self.assertEqual(last[row], 1.0)      # the answer row's logits read it alone
                self.assertEqual(last[row + 1:], [0.0] * len(last[row + 1:]))   # hidden from the answer row
                for effects in ref["effect"]:
                    if len(effects) == len(last):     # a stream row (not the encoder's)
                        self.assertEqual(effects[row + 1:], [0.0] * len(effects[row + 1:]))
                # The clean run patched into itself: the clean logits, bit for bit.
                clean_input = model.frame(model.tokens(clean))
                recorded = {}
                logits = model.run(clean_input, ref["target"], sr.Hooks(model.points, record=recorded))
                for point in model.points:
                    site = (point, 0, slice(None))
                    again = model.run(clean_input, ref["target"], sr.Hooks(model.points, source=recorded, site=site))
                    self.assertTrue(torch.equal(again, logits), point)

    def test_lens_agrees_with_the_reference(self):
        for name, (path, load, text, target, attribute) in LENS_CASES.items():
            with self.subTest(model=name):
                model = load(heads=attribute is not None)
                args = ["lens", path] + text_args("--ids", text) + ["--top", "5"]
                if target is not None:
                    args += text_args("--target-ids", target)
                token = None
                if attribute is not None:
                    shown, token = attribute if isinstance(attribute, tuple) else (attribute, model.tokens(attribute)[0])
                    args += ["--attribute", shown]
                ours = tinyformer(*args)
                ref = sr.logit_lens(model, tokens_of(model, text), top=5, attribute=token, target=target)
                self.check_lens(name, model, ours, ref)

    def check_lens(self, name, model, ours, ref):
        # The reference's own identity: its lens after the last layer is its logits, bit for bit
        # (the same modules on the very tensor the pass gave them).
        self.assertTrue(torch.equal(ref["layer_logits"][-1], ref["logits"]), f"{name}: the last layer's lens")
        self.assertEqual(ours["tokens"], ref["tokens"])
        self.assertEqual(ours["answer_position"], ref["answer_position"])
        self.assertEqual([layer["layer"] for layer in ours["layers"]], ref["layers"])
        logits = ref["logits"]
        for p, answer in enumerate(ref["answers"]):
            if clear_of(logits[p], answer, 2 * eps(float(logits[p].abs().max()))):
                self.assertEqual(ours["answers"][p], answer, f"the model's answer at position {p}")
        d = model.cfg["d_model"]
        compared_top1 = 0
        for layer, ref_lens, ref_cells, ref_norms in zip(ours["layers"], ref["layer_logits"], ref["cells"],
                                                         ref["norms"]):
            for p, (cell, ref_cell) in enumerate(zip(layer["positions"], ref_cells)):
                where = f"{layer['layer']} position {p}"
                row = ref_lens[p]
                e = eps(float(row.abs().max()))
                probabilities = torch.softmax(row.double(), dim=0)
                top1 = ref_cell["top"][0][0]
                if clear_of(row, top1, 2 * e):
                    self.assertEqual(cell["top"][0]["id"], top1, f"{where}: the lens's top token")
                    compared_top1 += 1
                # The list itself: as long as the reference's, and at each place the reference's token
                # wherever that token's logit is clear of every other (a near tie may swap two places).
                self.assertEqual(len(cell["top"]), len(ref_cell["top"]), f"{where}: the top-K list's length")
                for place, (ref_id, _) in enumerate(ref_cell["top"]):
                    if clear_of(row, ref_id, 2 * e):
                        self.assertEqual(cell["top"][place]["id"], ref_id, f"{where}: the top-K list's place {place}")
                for listed in cell["top"]:      # each listed token's probability, wherever it ranks here
                    within(self, name, "lens top-K p", listed["p"], float(probabilities[listed["id"]]), 2 * e,
                           f"{where}, token {listed['id']}")
                within(self, name, "lens answer p", cell["answer_p"], ref_cell["answer_p"], 2 * e, where)
                answer = ref["answers"][p]
                if clear_of(row, answer, 2 * e):
                    self.assertEqual(cell["answer_rank"], ref_cell["answer_rank"], f"{where}: the answer's rank")
                within(self, name, "stream norm", layer["norms"][p], ref_norms[p],
                       math.sqrt(d) * 1e-4 + 1e-4 * ref_norms[p], where)
        self.assertGreater(compared_top1, 0, "no lens cell was clear of a near tie")
        if "attribution" in ref:
            self.check_attribution(name, ours["attribution"], ref["attribution"])

    def check_attribution(self, name, ours, ref):
        self.assertEqual(ours["id"], ref["token"])
        ours_parts = {part["part"]: part["logit"] for part in ours["parts"]}
        self.assertEqual(list(ours_parts), list(ref["parts"]))
        self.assertEqual(ours["norm"], ref["norm"])
        within(self, name, "attribution logit", ours["logit"], ref["logit"], eps(ref["logit"]), "the model's")
        within(self, name, "attribution scale", ours["scale"], ref["scale"], 1e-4 * ref["scale"], "frozen norm")
        for part, value in ref["parts"].items():
            largest, weight = ref["bounds"][part]
            within(self, name, "attribution part", ours_parts[part], value,
                   2 * eps(largest) * weight + 1e-4 * abs(value), part)
        for side, parts, total, logit in (("ours", ours_parts.values(), ours["sum"], ours["logit"]),
                                          ("reference", ref["parts"].values(), ref["sum"], ref["logit"])):
            # The decomposition on each side: the parts sum to that side's own logit.
            within(self, name, f"sum of parts - logit ({side})", total, logit,
                   ATTRIBUTION_TOLERANCE * (1 + sum(abs(v) for v in parts)), "the parts' sum")


if __name__ == "__main__":
    torch.set_num_threads(1)
    result = unittest.main(exit=False, verbosity=2).result
    for (model, quantity), (ratio, difference) in sorted(WORST.items()):
        print(f"  {model:18s} {quantity:32s} worst |difference| {difference:9.3g}, / bound {ratio:.3g}")
    sys.exit(0 if result.wasSuccessful() else 1)
