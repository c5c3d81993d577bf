"""The soft checker's box propagation (:mod:`attncert.kernel.soft.propagate`) on what the
default sweep of ``test_soft_certified_bounds.py`` does not build: a learned position table
(every completion's logit inside, the same numbers as the certifier's propagation, a table
too short refused) and a hard head refused by name (issue 34: mutation score)."""

from __future__ import annotations

import pytest
from test_soft_certified_bounds import _check_model

from attncert.errors import SpecError
from attncert.kernel.soft import propagate as KP
from attncert.model import random_model
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
