"""The rigorous forward pass's position-wise part (attncert.arith.positionwise) on a
parallel-residual layer whose MLP reads the residual stream unnormalised (no second norm:
the FFN input is x itself) — issue 34: mutation score."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attncert.kernel.core.trace import forward_rigorous
from attncert.model.decoders import random_decoder
from attncert.model.forward import forward


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_a_parallel_layer_without_a_second_norm_feeds_x_to_the_mlp(norm):
    """GPT-NeoX's parallel layer with ``norm2`` None: y ← y + attn(LN₁(y)) + FFN(y). The
    rigorous logit encloses the float forward pass's, tightly, on strings of three
    lengths. Kills ``x_finish_layer__mutmut_10`` (the missing norm applied anyway: the
    pass fails instead of evaluating the FFN on x)."""
    base = random_decoder(2, 2, 8, positions="rope", norm=norm, mlp="gelu", parallel=True, seed=3)
    model = dataclasses.replace(
        base, layers=tuple(dataclasses.replace(layer, norm2=None) for layer in base.layers)
    )
    assert all(layer.parallel and layer.norm2 is None for layer in model.layers)
    rng = np.random.default_rng(0)
    for n in (1, 6, 23):
        strings = ["".join(rng.choice(["0", "1"], size=n)) for _ in range(2)]
        for s, z in zip(strings, forward(model, strings).logits, strict=True):
            a, b = forward_rigorous(model, s).logit_interval()
            assert float(a) <= z <= float(b) and float(b - a) < 1e-6, (s, a, b, z)
