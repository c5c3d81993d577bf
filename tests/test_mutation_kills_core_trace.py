"""The rigorous forward pass (:mod:`attncert.kernel.core.trace`) refuses an input with no
token at all, saying what it expects (issue 34: mutation score)."""

from __future__ import annotations

import dataclasses

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
