"""Survivors of kernel/soft/affine/bound (issue 34): the refusal of the version-3 kinds is
exact, and the restriction range refuses them before any propagation."""

from __future__ import annotations

import pytest

from attncert.kernel.soft.affine.bound import Unsupported, applicable, restriction_range
from attncert.model.decoders import random_decoder


@pytest.mark.parametrize(
    ("kwargs", "kinds"),
    [
        (
            {"positions": "rope", "norm": "rms", "mlp": "swiglu"},
            ("rotary positions", "RMSNorm", "gated MLP", "silu activation"),
        ),
        ({"positions": "alibi", "norm": "layer", "mlp": "gelu"}, ("ALiBi",)),
    ],
)
def test_the_new_kinds_are_refused_naming_them(kwargs, kinds):
    model = random_decoder(1, 1, 8, seed=0, **kwargs)
    why = applicable(model, 8)
    assert why == (
        "the model has " + ", ".join(model.new_kinds) + " (the affine propagation handles "
        "absolute or no positions, LayerNorm and ungated MLPs)"
    )
    assert model.new_kinds == kinds
    with pytest.raises(Unsupported, match="the model has"):
        restriction_range(model, "0*1*0*1*", "00110011")
