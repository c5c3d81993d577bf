"""The zoo's 1* and aⁿbⁿ models are right on every string of every length 1…12,
in both the numpy and the exact evaluator (Hahn 2020 §5: hard attention *can*
recognize these languages)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from attncert.languages import AnBn, OnesStar
from attncert.model import accepts_exact, forward, random_model, zoo_model, zoo_names

CASES = [("ones_star", OnesStar()), ("anbn", AnBn())]


@pytest.mark.parametrize("top", [10, pytest.param(12, marks=pytest.mark.slow)])  # 12: 8 s
@pytest.mark.parametrize(("name", "lang"), CASES)
def test_zoo_model_correct_on_every_string_up_to_12(name, lang, top):
    """All 2¹ + … + 2¹² = 8190 strings (2046 up to 10 in the default run), numpy (batched
    per length) and exact (one by one)."""
    model = zoo_model(name)
    assert model.alphabet == lang.alphabet
    checked = members = 0
    for n in range(1, top + 1):
        strings = ["".join(t) for t in itertools.product(model.alphabet, repeat=n)]
        truth = np.array([lang.contains(s) for s in strings])
        tr = forward(model, strings)
        assert np.array_equal(tr.accept, truth), [
            s for s, a, t in zip(strings, tr.accept, truth, strict=True) if a != t
        ]
        # the float logits are far from 0 (±½), so float decisions are not near-ties
        assert np.all(np.abs(tr.logits) >= 0.25)
        for s, t in zip(strings, truth, strict=True):
            assert accepts_exact(model, s) is bool(t), s
        checked += len(strings)
        members += int(truth.sum())
    assert checked == 2 ** (top + 1) - 2
    assert members == {"ones_star": top, "anbn": top // 2}[name]  # both classes occur


def test_zoo_names_and_unknown():
    names = zoo_names()
    assert {"ones_star", "anbn"} <= set(names)
    from attncert.errors import InputError

    with pytest.raises(InputError, match="no zoo model named 'nope'"):
        zoo_model("nope")


def test_random_model_bos_eos_keeps_plain_models_unchanged():
    plain = random_model(2, 2, 8, seed=3)
    again = random_model(2, 2, 8, seed=3)
    assert plain.digest == again.digest
    framed = random_model(2, 2, 8, seed=3, bos="^", eos="$")
    assert framed.n_tokens(5) == 7 and framed.encode("01")[0] == framed.token_index["^"]
    assert framed.digest != plain.digest
    assert np.array_equal(framed.layers[0].heads[0].w_q, plain.layers[0].heads[0].w_q)
