"""The batched logit bounds (:mod:`attncert.kernel.soft.batch`): a model they do not cover
is refused with the reason and what would be accepted (issue 34: mutation score)."""

from __future__ import annotations

import pytest

from attncert.errors import UnsupportedError
from attncert.kernel.soft.batch import logit_bounds, tokens
from attncert.model import random_model


def test_a_hard_head_is_refused_naming_it():
    model = random_model(1, 1, 8, seed=5)
    with pytest.raises(UnsupportedError) as e:
        logit_bounds(model, tokens(model, ["0101"]))
    assert str(e.value) == (
        "layers[0].heads[0] is a leftmost hard-attention head (the soft verifier bounds "
        "softmax heads) (expected a softmax model)"
    )
