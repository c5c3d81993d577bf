"""The soft checker's box propagation (:mod:`attncert.kernel.soft.propagate`) on what the
default sweep of ``test_soft_certified_bounds.py`` does not build: a learned position table
(every completion's logit inside, the same numbers as the certifier's propagation, a table
too short refused) and a hard head refused by name (issue 34: mutation score)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_model_v2 import v2_model
from test_soft_certified_bounds import _check_model

from attncert.errors import SpecError
from attncert.kernel.soft import propagate as KP
from attncert.model import forward, random_model
from attncert.model.decoders import random_decoder


def _table_model():
    # LayerNorm, GELU MLP, learned positions: a classic model (no version-3 kinds)
    model = random_decoder(
        1, 1, 8, positions="learned", norm="layer", mlp="gelu", bos=None, max_length=8, seed=3
    )
    assert model.embedding.table is not None and not model.new_kinds
    return model


def test_a_learned_position_table_enters_every_box():
    model = _table_model()
    # every completion's logit inside each readout symbol's range, the change bound above
    # the true largest one-position change, and the same numbers as the certifier's
    _check_model(model, 3)


def test_a_position_table_too_short_for_the_length_is_refused():
    model = _table_model()
    with pytest.raises(SpecError) as e:
        KP.propagate(model, "*" * 9, True)
    assert str(e.value) == "9 tokens exceed the learned position table"


def test_a_hard_head_is_refused_by_name():
    model = random_model(1, 1, 6, kind="leftmost", seed=1)
    with pytest.raises(SpecError) as e:
        KP.propagate(model, "**", True)
    assert str(e.value) == "the soft certificate checker handles softmax heads only"


def _completions(rho: str) -> list[str]:
    return ["".join(t) for t in itertools.product(*[("0", "1") if c == "*" else (c,) for c in rho])]


def test_nothing_changeable_means_a_change_of_zero_for_a_mean_readout():
    model = v2_model(0)  # a mean readout
    assert model.readout.position == "mean"
    rho = "0**0"
    z_lo, z_hi, change, _, per_row = KP.propagate(model, rho, False)
    z = forward(model, _completions(rho)).logits
    assert np.all(z_lo <= z) and np.all(z <= z_hi)
    assert change == 0.0 and per_row == []


def test_each_readout_token_s_row_has_no_change_when_nothing_may_change():
    model = v2_model(1, norm_position="post", activation="relu", readout="last")
    rho = "0**"  # the readout token (the last) is free: one row per token
    _, _, change, _, per_row = KP.propagate(model, rho, False)
    assert change == 0.0
    assert [row[0] for row in per_row] == [0, 1] and all(row[3] == 0.0 for row in per_row)
    for tok, lo, hi, _, _ in per_row:
        strings = [s for s in _completions(rho) if s[-1] == model.alphabet[tok]]
        z = forward(model, strings).logits
        assert np.all(lo <= z) and np.all(z <= hi)
