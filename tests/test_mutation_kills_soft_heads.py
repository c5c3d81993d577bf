"""The soft checker's softmax-head helpers (:mod:`attncert.kernel.soft.heads`) against
brute force where the models of the sweep do not reach: the per-query min/max over the
visible keys under every mask, strict ones included (issue 34: mutation score)."""

from __future__ import annotations

import numpy as np
import pytest

from attncert.kernel.soft.heads import _reduce
from attncert.model.spec import Mask


@pytest.mark.parametrize("mask", list(Mask), ids=lambda m: m.value)
@pytest.mark.parametrize("op", ["min", "max"])
def test_reduce_is_the_min_or_max_over_the_visible_keys(mask, op):
    rng = np.random.default_rng(4)
    n, d = 5, 3
    x = rng.normal(size=(n, d))
    vis = mask.matrix(n)
    got = _reduce(x, mask, op)
    for j in range(n):
        keys = np.nonzero(vis[j])[0]
        if len(keys) == 0:  # no visible key: the empty min/max
            assert np.all(got[j] == (np.inf if op == "min" else -np.inf))
        else:
            want = x[keys].min(axis=0) if op == "min" else x[keys].max(axis=0)
            assert np.array_equal(got[j], want), (mask, op, j)
