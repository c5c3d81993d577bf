"""The rigorous forward pass (:mod:`attncert.kernel.core.trace`) refuses an input with no
token at all, saying what it expects; a hard head whose float facts overflow never attends
a masked key; an exact tie whose float scores differ is settled by the tie rule (issue 34:
mutation score)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attncert.errors import InputError
from attncert.kernel.core.trace import forward_rigorous
from attncert.model import random_model


def test_no_tokens_at_all_is_refused_with_what_is_expected():
    model = random_model(1, 1, 4, kind="softmax", seed=0)  # no BOS, no EOS
    with pytest.raises(InputError) as e:
        forward_rigorous(model, "")
    assert str(e.value) == (
        "the model sees no tokens (empty input and no BOS/EOS) (expected a non-empty string)"
    )


def _overflowing(model, k_scale: float):
    """``model`` with every head's W_Q scaled by 2^530 and W_K by ``k_scale`` (a power of
    two): every exact score is the original times a power of two, so every head attends
    where it did; but ‖q‖² overflows float64, and the float error bound E of the scores is
    infinite (keys of norm ≈ 2^-330) or NaN (≈ 2^-665: ‖k‖² underflows, ∞ · 0)."""
    layer = model.layers[0]
    heads = tuple(
        dataclasses.replace(h, w_q=h.w_q * 2.0**530, w_k=h.w_k * k_scale) for h in layer.heads
    )
    return dataclasses.replace(model, layers=(dataclasses.replace(layer, heads=heads),))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the overflow is the case
@pytest.mark.parametrize("k_scale", [2.0**-330, 2.0**-665], ids=["E infinite", "E NaN"])
@pytest.mark.parametrize("mask", ["past", "future"])
def test_overflowing_float_facts_never_attend_a_masked_key(mask, k_scale):
    """Found from ``x__hard_choices__mutmut_53`` (≥ → > against top − 2E): with E infinite
    the candidates were every key with s ≥ −∞ — the masked ones too (their float score is
    −∞) — and the exact comparison could pick a key the mask hides; with E NaN there was
    no candidate at all (an IndexError). The choices and the decision must be the
    unscaled model's."""
    model = random_model(1, 1, 4, seed=1, mask=mask)
    big = _overflowing(model, k_scale)
    visible = model.layers[0].heads[0].mask.matrix(4)
    for s in ("0101", "1100", "0011"):
        want, got = forward_rigorous(model, s), forward_rigorous(big, s)
        (chosen,) = got.layers[0].chosen
        assert all(visible[i, j] for i, pick in enumerate(chosen) for j in pick), (s, chosen)
        assert got.layers[0].chosen == want.layers[0].chosen, s
        assert got.accept == want.accept, s


def test_an_exact_tie_whose_float_scores_differ_goes_to_the_tie_rule():
    """Token 0's key is (2⁵³, 1, 1), token 1's (2⁵³ + 2, 0, 0), every query (1, 1, 1): both
    scores are exactly 2⁵³ + 2, but the float dot product of token 0's rounds to 2⁵³. The
    float bound E (≈ 7 at this magnitude) keeps both keys near the top, and the exact
    comparison ties them: the leftmost head attends position 0 from every query. Kills
    ``x__hard_choices__mutmut_53`` (top − 2/E instead of top − 2E: with E > 1 the filter
    drops token 0's key, and the head attends the first token 1)."""
    base = random_model(1, 1, 4, seed=0, features=())
    head = base.layers[0].heads[0]
    w_q, w_k = np.zeros((4, 4)), np.zeros((4, 4))
    w_q[:3, 3] = 1.0  # q = (1, 1, 1, 0) from the constant last coordinate
    w_k[0, 0] = w_k[1, 1] = w_k[2, 2] = 1.0  # k = the first three coordinates
    word = base.embedding.word.copy()
    word[base.token_index["0"]] = [2.0**53, 1.0, 1.0, 1.0]
    word[base.token_index["1"]] = [2.0**53 + 2, 0.0, 0.0, 1.0]
    model = dataclasses.replace(
        base,
        embedding=dataclasses.replace(base.embedding, word=word),
        layers=(
            dataclasses.replace(
                base.layers[0], heads=(dataclasses.replace(head, w_q=w_q, w_k=w_k),)
            ),
        ),
    )
    floats = np.array([1.0, 1.0, 1.0]) @ np.array([[2.0**53, 1, 1], [2.0**53 + 2, 0, 0]]).T
    if floats[0] == floats[1]:
        pytest.skip("this BLAS sums the float dot product in another order")
    for s in ("01", "0011"):
        (chosen,) = forward_rigorous(model, s).layers[0].chosen
        assert chosen == ((0,),) * len(s), (s, chosen)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the overflow is the case
@pytest.mark.parametrize("k_scale", [2.0**-330, 2.0**-665], ids=["E infinite", "E NaN"])
@pytest.mark.parametrize("mask", ["past", "future"])
def test_the_exact_evaluator_never_attends_a_masked_key_either(mask, k_scale):
    """The same filter in :func:`attncert.model.exact.forward_exact` (not kernel code, but
    an evaluator the tests compare with): the scaled model's choices and decision are the
    unscaled one's."""
    from attncert.model.exact import forward_exact

    model = random_model(1, 1, 4, seed=1, mask=mask)
    big = _overflowing(model, k_scale)
    for s in ("0101", "1100", "0011"):
        want, got = forward_exact(model, s), forward_exact(big, s)
        assert got.layers[0].chosen == want.layers[0].chosen, s
        assert got.accept == want.accept, s
