"""The witness search screens strings that differ from a base string at a few positions
from the base's float activations (attncert.hard.flips): the logit must be the float
forward pass's, or None (then the full pass runs) — never a different number."""

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


@pytest.mark.parametrize("name", list(MODELS))
def test_changed_logit_is_the_forward_logit(name):
    model = MODELS[name]()
    rng = np.random.default_rng(7)
    n = 160
    s = "".join(rng.choice(list(model.alphabet), n))
    base = base_pass(model, s)
    assert base is not None and base.logit == pytest.approx(_logit(model, s), abs=1e-12)
    assert changed_logit(model, base, s) == base.logit
    screened = 0
    for _ in range(40):
        t = list(s)
        for p in rng.choice(n, int(rng.integers(1, 3)), replace=False):
            t[p] = next(c for c in model.alphabet if c != t[p])
        t = "".join(t)
        got = changed_logit(model, base, t)
        if got is not None:
            screened += 1
            assert got == pytest.approx(_logit(model, t), rel=1e-12, abs=1e-12)
    assert screened >= 10  # the screen is not vacuous


def test_the_screen_gives_up_on_average_heads_and_long_changes():
    avg = random_model(1, 1, 8, seed=1, kind="average")
    assert base_pass(avg, "0101") is None
    model = random_model(2, 2, 8, seed=0)
    base = base_pass(model, "0" * 64)
    assert changed_logit(model, base, "1" * 64) is None  # every row changed
    assert changed_logit(model, base, "0" * 63) is None  # another length
