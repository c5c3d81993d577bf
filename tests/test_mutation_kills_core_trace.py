"""The rigorous forward pass (:mod:`attncert.kernel.core.trace`) refuses an input with no
token at all, saying what it expects (issue 34: mutation score)."""

from __future__ import annotations

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
