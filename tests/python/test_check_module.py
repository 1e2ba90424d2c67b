#!/usr/bin/python3
"""The check that runs the user's own model code (issue #32): `--check MODEL
--against FAMILY FILE --module model.py` and `check(path, module)`, against the
files in tests/python/upstream_like/, which are this project's own code presenting
upstream's interfaces (no upstream code is in the repository):

    upstream_like/nanogpt/model.py          nanoGPT's: GPT(GPTConfig(**model_args)), the last
                                            position's logits without targets, attn_dropout
    upstream_like/mingpt/mingpt/model.py    minGPT's, in a package importing mingpt.utils:
                                            GPT.get_default_config(), NewGELU (tanh)
    upstream_like/annotated/...py           the Annotated make_model (5000-row pe), the
                                            generator outside forward, .attn
    upstream_like/llama2c/model.py          llama2.c's: Transformer(ModelArgs(**model_args)),
                                            the last position without targets, attn_dropout

with the committed checkpoints of data/families (data/families/README.md).
What is tested: a right export passes with --module (every attention compared); a
wrong --gelu (nanoGPT) or --n-head (minGPT, Annotated) export passes the check
built from the flags, which then lists what it did not verify, and FAILS with
--module, naming the first attention that differs; check(path, model) with the
nanoGPT-style GPT passes the right export and fails the wrong one.
Run by `make parity` (PyTorch and build/tinyformer):

    /usr/bin/python3 tests/python/test_check_module.py -v
"""

import contextlib
import io
import json
import re
import sys
import tempfile
import unittest
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "python"))
import tinyformer_export as te  # noqa: E402

DATA = REPO / "data" / "families"
LIKE = Path(__file__).resolve().parent / "upstream_like"
SOURCE = {"nanogpt": DATA / "nanogpt-char" / "ckpt.pt", "mingpt": DATA / "mingpt-sort.pt",
          "annotated": DATA / "annotated-copy.pt", "llama2c": DATA / "llama2c-tiny" / "ckpt.pt"}
COMMITTED = {"nanogpt": DATA / "nanogpt-char.safetensors", "mingpt": DATA / "mingpt-sort.safetensors",
             "annotated": DATA / "annotated-copy.safetensors",
             "llama2c": DATA / "llama2c-tiny" / "llama2c-tiny.safetensors"}
MODULE = {"nanogpt": LIKE / "nanogpt" / "model.py", "mingpt": LIKE / "mingpt" / "mingpt" / "model.py",
          "annotated": LIKE / "annotated" / "the_annotated_transformer.py", "llama2c": LIKE / "llama2c" / "model.py"}
TRUE_CONFIG = {"mingpt": '{"n_head": 3}', "annotated": '{"h": 4}'}      # what the training used
ATTENTIONS = {"nanogpt": 4, "mingpt": 3, "annotated": 6, "llama2c": 4}  # attention calls per forward


def run(argv):
    """(exit code, stdout, stderr) of tinyformer_export.py's main in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = te.main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


def user_model(*args):
    """te.user_model, the user's prints (to stderr) kept out of the test's output."""
    with contextlib.redirect_stderr(io.StringIO()):
        return te.user_model(*args)


def module_flags(family, config=True):
    flags = ["--module", MODULE[family]]
    if config and family in TRUE_CONFIG:
        flags += ["--module-config", TRUE_CONFIG[family]]
    return flags


def verdict(stdout):
    """The one OK / FAIL line (there must be exactly one)."""
    lines = [line for line in stdout.splitlines() if line.startswith(("OK ", "FAIL "))]
    assert len(lines) == 1, stdout
    return lines[0]


class CheckWithModule(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = Path(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def export(self, family, name, *flags):
        path = self.dir / name
        rc, out, err = run(["--from", family, SOURCE[family], *flags, "--out", path, "--no-check"])
        self.assertEqual(rc, 0, out + err)
        return path

    def test_right_exports_pass_against_the_users_module(self):
        for family in MODULE:
            with self.subTest(family):
                rc, out, err = run(["--check", COMMITTED[family], "--against", family, SOURCE[family],
                                    *module_flags(family)])
                self.assertEqual(rc, 0, out + err)
                configured = family in TRUE_CONFIG
                self.assertEqual(verdict(out), f"OK {COMMITTED[family]}: tinyformer matches your module "
                                               f"{MODULE[family]}: " + re.search(r": (\w+) holding", out).group(1)
                                 + f" holding {SOURCE[family]}'s weights"
                                 + (" (built with your --module-config)" if configured else ""))
                # --module-config's settings are the user's word, as --n-head is: listed, never claimed
                unverified = re.findall(r"^not verified: .*$", out, re.M)
                if configured:
                    facts = ", ".join(f"{k}={v}" for k, v in json.loads(TRUE_CONFIG[family]).items())
                    self.assertEqual(unverified, [f"not verified: {facts} (your --module-config): your model was "
                                                  f"built with them, as your training config should have it"])
                else:
                    self.assertEqual(unverified, [])
                self.assertNotIn("not compared", out)      # every attention's weights were seen
                compared = re.findall(r"^  \S+\.weights +worst", out, re.M)
                self.assertEqual(len(compared), ATTENTIONS[family], out)

    def test_upstream_conventions_are_handled(self):
        """The modules really present upstream's conventions, which check() handles."""
        ids = torch.zeros(2, 5, dtype=torch.long)
        nanogpt, _ = user_model("nanogpt", SOURCE["nanogpt"], MODULE["nanogpt"])
        self.assertEqual(list(nanogpt(ids)[0].shape), [2, 1, 21])          # the last position only
        llama, _ = user_model("llama2c", SOURCE["llama2c"], MODULE["llama2c"])
        self.assertEqual(list(llama(ids).shape), [2, 1, 384])
        for family in ("nanogpt", "llama2c"):
            model = nanogpt if family == "nanogpt" else llama
            self.assertFalse(any(hasattr(m, "weights") for m in model.modules()))  # weights only via attn_dropout
        annotated, notes = user_model("annotated", SOURCE["annotated"], MODULE["annotated"], {"h": 4})
        self.assertEqual(list(annotated.src_embed[1].pe.shape), [1, 5000, 32])     # make_model's own table
        self.assertTrue(any(n.startswith("src_embed.1.pe: ") and "[1, 64, 32]" in n for n in notes), notes)

    def test_python_check_with_the_nanogpt_module(self):
        """check(path, model) with a GPT whose forward gives the last position only (it raised
        "tinyformer's shape [4, 11, V] differs from PyTorch's [4, 1, V]" before)."""
        model, _ = user_model("nanogpt", SOURCE["nanogpt"], MODULE["nanogpt"])
        self.assertLessEqual(te.check(COMMITTED["nanogpt"], model), 1.0)
        wrong = self.export("nanogpt", "python-tanh.safetensors", "--gelu", "tanh")
        with self.assertRaises(te.CheckFailed) as failed:
            te.check(wrong, model)
        self.assertRegex(failed.exception.name, r"^layers\.\d\.self_attn\.weights$")

    def test_wrong_gelu_nanogpt(self):
        wrong = self.export("nanogpt", "tanh.safetensors", "--gelu", "tanh")   # the model has exact GELU
        rc, out, err = run(["--check", wrong, "--against", "nanogpt", SOURCE["nanogpt"], "--gelu", "tanh"])
        self.assertEqual(rc, 0, out + err)
        self.assertIn("not verified: gelu=tanh (your flag): pass --module model.py to check them\nOK ", out)
        self.assertRegex(verdict(out), r"^OK \S+: matches the reference built from your flags \(this project's "
                                       r"nanogpt module holding .*; your own model code was not run: --module "
                                       r"model.py runs it\)$")
        rc, out, err = run(["--check", wrong, "--against", "nanogpt", SOURCE["nanogpt"], *module_flags("nanogpt")])
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(verdict(out), rf"^FAIL {re.escape(str(wrong))}: layers\.\d\.self_attn\.weights diverges first: "
                                       r"\|a-b\| / \(1e-4 \+ 1e-4\|b\|\) = ")
        self.assertNotIn("not verified", out)
        self.assertIn("model.py: a line printed by the user's code", err)     # the user's prints: not stdout
        self.assertNotIn("a line printed", out)

    def test_wrong_n_head(self):
        for family, given, true in [("mingpt", 4, 3), ("mingpt", 6, 3), ("annotated", 8, 4)]:
            with self.subTest(family=family, n_head=given):
                extra = ["--max-len", "16"] if family == "annotated" else []
                wrong = self.export(family, f"{family}-{given}.safetensors", "--n-head", given, *extra)
                rc, out, err = run(["--check", wrong, "--against", family, SOURCE[family], "--n-head", given])
                self.assertEqual(rc, 0, out + err)
                facts = f"n_head={given} (your flag)" + (", gelu=tanh (minGPT's NewGELU, assumed)"
                                                         if family == "mingpt" else "")
                self.assertIn(f"not verified: {facts}: pass --module model.py to check them\nOK ", out)
                self.assertIn("matches the reference built from your flags", verdict(out))
                rc, out, err = run(["--check", wrong, "--against", family, SOURCE[family], *module_flags(family)])
                self.assertEqual(rc, 1, out + err)
                first = "layers.0.self_attn.weights" if family == "mingpt" else "encoder.0.self_attn.weights"
                self.assertRegex(verdict(out), rf"^FAIL {re.escape(str(wrong))}: {re.escape(first)} diverges first: "
                                               rf"tinyformer's shape \[4, {given}, \d+, \d+\] differs from PyTorch's "
                                               rf"\[4, {true}, \d+, \d+\]: tinyformer computes {given} heads, the "
                                               rf"reference {true} ")

    def test_from_with_module(self):
        path = self.dir / "from.safetensors"
        rc, out, err = run(["--from", "mingpt", SOURCE["mingpt"], "--n-head", "3", "--out", path,
                            *module_flags("mingpt")])
        self.assertEqual(rc, 0, out + err)
        self.assertTrue(verdict(out).startswith(f"OK {path}: tinyformer matches your module {MODULE['mingpt']}"))
        rc, out, err = run(["--from", "mingpt", SOURCE["mingpt"], "--n-head", "6", "--out", path,
                            *module_flags("mingpt")])
        self.assertEqual(rc, 1, out + err)
        self.assertTrue(verdict(out).startswith(f"FAIL {path}: layers.0.self_attn.weights diverges first"), out)

    def test_llama2c_without_module_says_the_code_was_not_run(self):
        rc, out, err = run(["--check", COMMITTED["llama2c"], "--against", "llama2c", SOURCE["llama2c"]])
        self.assertEqual(rc, 0, out + err)
        self.assertIn("not verified: your model code (the reference is this project's llama2c module): pass "
                      "--module model.py to check it\nOK ", out)
        self.assertIn("matches the reference built from your flags", verdict(out))

    def test_not_verified_names_where_each_fact_came_from(self):
        """nanoGPT's GELU comes from the flag (None: the converter's default, exact); minGPT's
        and the Annotated n_head from the converter's Converted.assumed."""
        from argparse import Namespace
        from families import Converted
        plain = Converted(config={}, tensors={})
        self.assertEqual(te._unverified("nanogpt", Namespace(gelu=None), plain),
                         "not verified: gelu=exact (default): pass --module model.py to check them")
        self.assertEqual(te._unverified("nanogpt", Namespace(gelu="tanh"), plain),
                         "not verified: gelu=tanh (your flag): pass --module model.py to check them")
        from families import gpt
        with contextlib.redirect_stderr(io.StringIO()):
            converted = gpt.convert_mingpt(SOURCE["mingpt"], n_head=6)
        self.assertEqual(te._unverified("mingpt", Namespace(gelu=None), converted),
                         "not verified: n_head=6 (your flag), gelu=tanh (minGPT's NewGELU, assumed): pass --module "
                         "model.py to check them")
        with contextlib.redirect_stderr(io.StringIO()):
            converted = gpt.convert_nanogpt(SOURCE["nanogpt"], gelu="exact", n_head=4)
        self.assertEqual(converted.assumed, {})          # model_args records n_head: verified from the file

    def test_only_the_model_file_runs_and_inputs_are_read_safely(self):
        # A families.py beside the user's model.py must not replace the project's
        # own (the model's folder goes last on sys.path), and a --module-config
        # that is a FIFO is refused without blocking.
        import os
        folder = (self.dir / "beside").resolve()
        folder.mkdir(exist_ok=True)
        (folder / "lone_model_for_the_test.py").write_text("MARK = 7\n")
        (folder / "families.py").write_text("raise SystemExit(3)\n")
        code = te.import_model_file(folder / "lone_model_for_the_test.py")
        self.assertEqual(code.MARK, 7)
        tools = str(Path(te.__file__).resolve().parent)
        self.assertIn(str(folder), sys.path)
        self.assertGreater(sys.path.index(str(folder)), sys.path.index(tools))   # the project's modules first
        fifo = self.dir / "config.fifo"
        os.mkfifo(fifo)
        rc, out, err = run(["--check", COMMITTED["mingpt"], "--against", "mingpt", SOURCE["mingpt"],
                            "--module", MODULE["mingpt"], "--module-config", fifo])
        self.assertEqual(rc, 1, out + err)
        self.assertIn(f"--module-config {fifo}: not a regular file", err)

    def test_refusals_are_one_line(self):
        committed, source = COMMITTED["mingpt"], SOURCE["mingpt"]
        bad = self.dir / "raises.py"
        bad.write_text("raise RuntimeError('not today')\n")
        cases = [
            (["--check", committed, "--against", "mingpt", source, "--module", MODULE["mingpt"]],
             "--module with mingpt needs your model's n_head"),
            (["--check", committed, "--against", "mingpt", source, "--module", self.dir / "none.py"],
             "no such file"),
            (["--check", committed, "--against", "mingpt", source, "--module", bad, "--module-config", "{}"],
             "importing it failed: RuntimeError: not today"),
            (["--check", committed, "--against", "mingpt", source, *module_flags("mingpt"), "--n-head", "3"],
             "--n-head does not apply to --check with --module"),
            (["--check", committed, "--against", "mingpt", source, "--module", MODULE["mingpt"],
              "--module-config", '{"n_head": 3'], "--module-config: not JSON"),
            (["--check", committed, "--against", "mingpt", source, "--module", MODULE["mingpt"],
              "--module-config", '{"n_head": 5}'], "failed on a batch of shape"),
            (["--check", COMMITTED["annotated"], "--against", "annotated", SOURCE["annotated"], "--module",
              MODULE["llama2c"], "--module-config", '{"h": 4}'], "defines no make_model"),
            (["--check", COMMITTED["nanogpt"], "--against", "nanogpt", SOURCE["nanogpt"], *module_flags("nanogpt"),
              "--module-config", '{"n_head": 2}'], "--module-config n_head = 2 but"),
        ]
        for argv, wanted in cases:
            with self.subTest(wanted):
                rc, out, err = run(argv)
                self.assertEqual(rc, 1, out + err)
                self.assertNotIn("Traceback", err)
                last = err.strip().splitlines()[-1]
                self.assertTrue(last.startswith("tinyformer_export: error: "), err)
                self.assertIn(wanted, last)
        # A family without --module is a usage error, before --from writes anything.
        out_file = self.dir / "hf.safetensors"
        for argv in (["--check", DATA / "gpt2-tiny.safetensors", "--against", "hf-gpt2", DATA / "gpt2-tiny",
                      *module_flags("nanogpt")],
                     ["--from", "hf-gpt2", DATA / "gpt2-tiny", "--out", out_file, *module_flags("nanogpt")]):
            with self.subTest(argv[0]), self.assertRaises(SystemExit) as usage, \
                    contextlib.redirect_stderr(io.StringIO()) as err:
                te.main([str(a) for a in argv])
            self.assertEqual(usage.exception.code, 2)
            self.assertIn("--module does not apply to hf-gpt2", err.getvalue())
            self.assertFalse(out_file.exists())
        with self.assertRaises(SystemExit) as usage, contextlib.redirect_stderr(io.StringIO()) as err:
            te.main(["--check", str(committed), "--module", str(MODULE["mingpt"])])
        self.assertEqual(usage.exception.code, 2)
        self.assertIn("--module goes with --check MODEL --against FAMILY FILE or --from FAMILY FILE", err.getvalue())


if __name__ == "__main__":
    unittest.main()
