"""Greedy outputs of two computations of one PyTorch model compared where the
logits decide them (the Python twin of tests/greedy_margin.h).

The committed greedy outputs (data/families/*.greedy.tsv) were made by PyTorch
on some machine; today's run on another CPU sums the same products in another
order (other BLAS and oneDNN kernels), so its logits are not the same floats,
only close: the same kind of difference as the engine's against PyTorch, which
docs/FORMAT.md bounds by |a - b| <= 1e-4 + 1e-4 |b| and the parity tests hold
each committed model to (check()'s worst <= 1 in the same files). That is the
bound b used here.

The rule: if the other computation's logits are within b of ours and our
largest logit leads the second largest by more than 2 b, its argmax is ours
(the leader loses at most b, the runner-up gains at most b). Greedy feeds each
choice back, so a step is decided only when every step before it was: the
decided steps are the leading ones whose margin exceeds 2 b. Over them the
tokens must be equal, and the whole output when every step is decided. A
test also asserts that enough steps were decided (decided_fraction), or it
could pass comparing nothing.

Log-probabilities (the Annotated generator's log_softmax) work the same: a
row's log-softmax is its logits less one constant, so the margin is the same,
and the bound is taken of the log-probabilities the check compares.
"""

import contextlib

AGREEMENT_ABSOLUTE, AGREEMENT_RELATIVE = 1e-4, 1e-4


def bound(x):
    """FORMAT's agreement at a logit of size |x|."""
    return AGREEMENT_ABSOLUTE + AGREEMENT_RELATIVE * abs(x)


def step_is_decided(row):
    """True when the largest value of `row` (a 1-D tensor of one step's logits)
    leads the second by more than 2 b (b taken at the larger of the two in size)."""
    if row.numel() < 2:
        return True
    first, second = row.double().topk(2).values.tolist()
    return first - second > 2 * bound(max(abs(first), abs(second)))


def decided_steps(step_rows):
    """How many leading steps of `step_rows` (each step's logits) are decided."""
    count = 0
    for row in step_rows:
        if not step_is_decided(row):
            break
        count += 1
    return count


@contextlib.contextmanager
def recording_last_rows(module):
    """Within the block, every call of module.forward (however the greedy loop
    reaches it) records the last row of its output, [..., V] flattened: the
    logits the loop takes its argmax of (B = 1). Yields the list of rows."""
    original, rows = module.forward, []

    def recorded(*args, **kwargs):
        out = original(*args, **kwargs)
        rows.append(out.detach().reshape(-1, out.shape[-1])[-1].clone())
        return out

    module.forward = recorded
    try:
        yield rows
    finally:
        del module.forward          # the class's forward again


class Tally:
    """Decided and compared steps over a test's rows."""

    def __init__(self):
        self.decided = self.steps = self.rows_in_full = self.rows = 0

    def add(self, decided, steps):
        self.decided += decided
        self.steps += steps
        self.rows += 1
        self.rows_in_full += decided == steps

    def fraction(self):
        return self.decided / self.steps if self.steps else 0.0

    def __str__(self):
        return (f"{self.decided} of {self.steps} steps decided, "
                f"{self.rows_in_full} of {self.rows} rows in full")


def check_tokens(test, ours, theirs, decided, steps, what):
    """ours (today's tokens, one per step) against theirs (the committed): equal
    over the first `decided` steps, and in full when all `steps` are decided."""
    if decided == steps:
        test.assertEqual(ours, theirs, f"{what}: every step decided")
    else:
        test.assertEqual(ours[:decided], theirs[:decided], f"{what}: {decided} of {steps} steps decided")


def check_text(test, ours_prefix_text, ours_text, theirs_text, decided, steps, what):
    """The same for text that cannot be split into tokens (BPE): in full when
    every step is decided, else the decided tokens' text must begin theirs."""
    if decided == steps:
        test.assertEqual(ours_text, theirs_text, f"{what}: every step decided")
    else:
        test.assertTrue(theirs_text.startswith(ours_prefix_text),
                        f"{what}: {decided} of {steps} steps decided, {ours_prefix_text!r} does not begin "
                        f"{theirs_text!r}")
