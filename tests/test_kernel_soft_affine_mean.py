"""The affine-form logit range (attncert.kernel.soft.affine.bound) of a mean readout against
brute force over every completion — sound, and within 4× of the real spread on a trained
model where the linearization holds — and the method's refusals with their exact reasons
(issue 25's mutation analysis: the other affine tests read one position)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from attncert.kernel.soft.affine.bound import Unsupported, applicable, restriction_range
from attncert.model import random_model
from attncert.model.forward import forward
from attncert.model.zoo import zoo_model


def _mean(model):
    return dataclasses.replace(model, readout=dataclasses.replace(model.readout, position="mean"))


@pytest.mark.slow
@pytest.mark.parametrize(("n", "step"), [(40, 5), (64, 8)])
def test_a_mean_readout_range_contains_every_completion_and_is_tight(n, step):
    model = _mean(zoo_model("trained_parity"))
    base = "1" * n
    free = list(range(3, n, step))[:8]
    rho = "".join("*" if i in free else c for i, c in enumerate(base))
    got = restriction_range(model, rho, base)
    strings = []
    for syms in itertools.product("01", repeat=len(free)):
        s = list(base)
        for i, c in zip(free, syms, strict=True):
            s[i] = c
        strings.append("".join(s))
    z = forward(model, strings).logits
    assert got.z_lo - 1e-9 <= z.min() and z.max() <= got.z_hi + 1e-9
    assert got.per_row == ((got.z_lo, got.z_hi),) and got.boxed == 0
    # measured: 1.6–2.3× the spread of the 256 completions' logits
    assert got.z_hi - got.z_lo < 4 * (z.max() - z.min())
    assert got.blame is None  # no per-position diagnosis for a mean readout


def test_refusals_name_their_reason():
    hard = random_model(2, 2, 8, seed=0)
    assert applicable(hard, 16) == (
        "layers[0].heads[0] is a leftmost hard-attention head (affine forms bound softmax heads)"
    )
    one = random_model(1, 1, 4, kind="softmax", seed=0, alphabet="a")
    assert applicable(one, 8) == "a one-symbol alphabet has nothing to choose"
    empty = dataclasses.replace(random_model(1, 1, 4, kind="softmax", seed=0), layers=())
    assert applicable(empty, 8) == "a model without layers"
    with pytest.raises(Unsupported, match=r"^a one-symbol alphabet has nothing to choose$"):
        restriction_range(one, "a*a", "aaa")
    soft = random_model(2, 2, 8, kind="softmax", seed=0)
    assert applicable(soft, 16) is None
    assert np.isfinite(restriction_range(soft, "0*1*", "0011").z_hi)
