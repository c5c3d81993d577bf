"""The hard checker's rigorous decision (attncert.kernel.hard.decide) when the float facts
of a head overflow: a masked key is never a candidate (issue 34: found from a mutant of
the same filter in attncert.kernel.core.trace)."""

from __future__ import annotations

import dataclasses

import pytest

from attncert.kernel.core.trace import forward_rigorous
from attncert.kernel.hard.decide import decide
from attncert.model import random_model


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the overflow is the case
@pytest.mark.parametrize("k_scale", [2.0**-330, 2.0**-665], ids=["E infinite", "E NaN"])
@pytest.mark.parametrize("mask", ["past", "future"])
def test_overflowing_float_facts_give_the_unscaled_decision(mask, k_scale):
    """W_Q scaled by 2^530, W_K by ``k_scale``: every exact score is the original times a
    power of two, so the decision is the unscaled model's; but ‖q‖² overflows, and the
    per-query bound E is infinite (every key, the masked ones too, passed the filter
    s ≥ top − 2E, and the field comparison could pick a masked key: seed 1, "0101" under
    the anticausal mask was decided False, the model says True) or NaN (no candidate: an
    IndexError)."""
    model = random_model(1, 1, 4, seed=1, mask=mask)
    layer = model.layers[0]
    heads = tuple(
        dataclasses.replace(h, w_q=h.w_q * 2.0**530, w_k=h.w_k * k_scale) for h in layer.heads
    )
    big = dataclasses.replace(model, layers=(dataclasses.replace(layer, heads=heads),))
    for s in ("0101", "1100", "0011"):
        assert decide(big, s) == forward_rigorous(model, s).accept, s
