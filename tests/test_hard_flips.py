"""The witness search screens strings that differ from a base string at a few positions
from the base's float activations (attncert.hard.flips): the logit must be the float
forward pass's, whether a layer is updated from the base's choices and runners-up or run
on every row."""

from __future__ import annotations

import numpy as np
import pytest

from attncert.hard.flips import base_pass, changed_logit
from attncert.model import forward, harden, random_model, zoo_model

MODELS = {
    "L2-leftmost": lambda: random_model(2, 2, 8, seed=0),
    "L2-rightmost-future": lambda: random_model(2, 2, 8, seed=3, mask="future", kind="rightmost"),
    "L3-past-strict-bos": lambda: random_model(3, 1, 8, seed=4, mask="past_strict", bos="^"),
    "L1-future-strict-eos": lambda: random_model(1, 2, 8, seed=5, mask="future_strict", eos="$"),
    "trained-majority": lambda: harden(zoo_model("trained_hard_majority")),
}


def _logit(model, s: str) -> float:
    return float(forward(model, [s], keep_attention=False).logits[0])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_changed_logit_is_the_forward_logit(name):
    model = MODELS[name]()
    rng = np.random.default_rng(7)
    n = 160
    s = "".join(rng.choice(list(model.alphabet), n))
    base = base_pass(model, s)
    assert base is not None and base.logit == pytest.approx(_logit(model, s), abs=1e-12)
    assert changed_logit(model, base, s) == base.logit
    for size in (1, 1, 2, 3, n // 4, n):
        for _ in range(8):
            t = list(s)
            for p in rng.choice(n, size, replace=False):
                t[p] = next(c for c in model.alphabet if c != t[p])
            t = "".join(t)
            got = changed_logit(model, base, t)
            assert got == pytest.approx(_logit(model, t), rel=1e-12, abs=1e-12)


def test_the_update_scores_few_rows_when_few_change(monkeypatch):
    """Changing one position of a long string scores O(N) query-key pairs per layer, not
    N²: the queries scored against every key are the changed rows and those whose winner
    and runner-up both changed."""
    import attncert.hard.flips as flips

    model = random_model(2, 2, 8, seed=0)
    n = 512
    s = "".join(np.random.default_rng(1).choice(list(model.alphabet), n))
    base = base_pass(model, s)
    full_rows = []
    orig = flips._choose

    def spy(kind, mask, q, k, rows, runner_up):
        full_rows.append(len(rows))
        return orig(kind, mask, q, k, rows, runner_up)

    monkeypatch.setattr(flips, "_choose", spy)
    p = n // 2
    t = s[:p] + ("1" if s[p] == "0" else "0") + s[p + 1 :]
    assert changed_logit(model, base, t) == pytest.approx(_logit(model, t), rel=1e-12)
    assert sum(full_rows) <= 8


def test_no_screen_for_average_heads_or_another_length():
    avg = random_model(1, 1, 8, seed=1, kind="average")
    assert base_pass(avg, "0101") is None
    model = random_model(2, 2, 8, seed=0)
    base = base_pass(model, "0" * 64)
    assert changed_logit(model, base, "0" * 63) is None
