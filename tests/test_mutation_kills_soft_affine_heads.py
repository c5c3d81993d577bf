"""Survivors of kernel/soft/affine/heads (issue 34): every head's linearization errors in
layer 1 are private symbols of its own, appended — never identified with another head's."""

from __future__ import annotations

import dataclasses

import numpy as np

from attncert.kernel.soft.affine.heads import first_layer
from attncert.kernel.soft.affine.rows import make_rows
from attncert.model.decoders import random_decoder


def test_each_layer_1_head_appends_its_own_error_symbols():
    model = random_decoder(1, 2, 8, positions="rope", seed=2)
    layer = model.layers[0]
    single = dataclasses.replace(model, layers=(dataclasses.replace(layer, heads=layer.heads[:1]),))
    rows = make_rows(model, "0*1*01", "001101")
    every = np.arange(len(rows.pos))
    both, _ = first_layer(model, rows, every)
    one, _ = first_layer(single, rows, every)
    d = model.d
    assert one.E.shape[-1] == d and both.E.shape[-1] == 2 * d
    # head 1's symbols come first, exactly as without head 2 (which only appends its own)
    np.testing.assert_array_equal(both.E[..., :d], one.E)
