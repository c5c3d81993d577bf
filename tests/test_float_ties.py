"""The float evaluator breaks *structural* ties by the head's rule, as the real numbers do.

Two keys carrying the same activation (same token, no distinguishing position) tie
exactly; BLAS may still compute their scores a bit apart, depending on where the rows lie
in the matrix (seen on AMD EPYC: the last row of a 5-row product differed by one ulp), and
a float argmax would then pick a key by rounding noise. The float pass groups equal rows
(`attncert.model.forward._Rows`), so its choices must equal the rigorous evaluator's on
strings full of such ties, in both the keep-attention and the blockwise pass."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from attncert.kernel.core.trace import forward_rigorous
from attncert.model import forward, harden, random_model
from attncert.model.forward import _equal_columns, _groups, _Rows

sys.path.insert(0, str(Path(__file__).parent))
from test_model_v2 import v2_model


def _float_choices(model, s, keep):
    """[layer][head][query] → the attended positions of the float pass."""
    tr = forward(model, [s])
    out = []
    for ly in tr.layers:
        w = ly.weights[0]  # (H, N, N)
        out.append(
            [
                [tuple(np.flatnonzero(w[h, i] > 0)) for i in range(w.shape[1])]
                for h in range(w.shape[0])
            ]
        )
    return out, tr


MODELS = [
    ("hardened LayerNorm/GELU, causal", lambda: harden(v2_model(3))),
    ("hardened post-norm, causal", lambda: harden(v2_model(4, norm_position="post"))),
    ("leftmost, no positions", lambda: random_model(2, 2, 8, seed=2, features=())),
    (
        "rightmost, no positions",
        lambda: random_model(2, 1, 8, seed=5, kind="rightmost", features=()),
    ),
    (
        "average-hard, no positions",
        lambda: random_model(2, 2, 8, seed=1, kind="average", features=()),
    ),
]


@pytest.mark.parametrize("name", [m[0] for m in MODELS])
def test_float_choices_equal_the_rigorous_ones_on_tied_keys(name):
    model = dict(MODELS)[name]()
    rng = np.random.default_rng(7)
    for n in (5, 13, 23, 37):
        s = "".join(rng.choice(list(model.alphabet), n))
        got, tr = _float_choices(model, s, True)
        rig = forward_rigorous(model, s)
        for li, layer in enumerate(rig.layers):
            want = [[tuple(c) for c in head] for head in layer.chosen]
            assert got[li] == want, (name, s, li)
        assert bool(tr.accept[0]) == rig.accept
        lean = forward(model, [s], keep_attention=False)
        assert np.array_equal(lean.accept, tr.accept)
        assert np.allclose(lean.logits, tr.logits, rtol=1e-12, atol=1e-12)


def test_equal_rows_are_grouped_bit_for_bit_and_distinct_rows_are_not():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((11, 4))
    x[[3, 7, 10]] = x[0]
    x[5] = x[2]
    x[9] = np.nextafter(x[2], np.inf)  # one ulp away: a different row
    first, inverse = _groups(x)
    assert np.array_equal(x[first[inverse]], x)
    assert len(first) == 11 - 4
    assert inverse[3] == inverse[7] == inverse[10] == inverse[0]
    assert inverse[9] != inverse[2]
    # a map sees each distinct row once and equal rows get equal results
    seen = []
    out = _Rows(x, True).map(lambda z: seen.append(len(z)) or z * 2.0)
    assert seen == [7] and np.array_equal(out, x * 2.0)
    # without grouping the map sees every row, unchanged
    seen.clear()
    _Rows(x, False).map(lambda z: seen.append(len(z)) or z)
    assert seen == [11]


def test_equal_keys_point_to_the_first_equal_key_of_their_own_string():
    k = np.zeros((2, 4, 3))
    k[0, 1] = k[0, 3] = 1.0
    k[1, 0] = k[1, 2] = 2.0
    k[1, 1] = 1.0  # equal to keys of string 0, but another string
    k[1, 3] = 3.0
    cols = _equal_columns(k)
    assert cols.tolist() == [[0, 1, 0, 1], [0, 1, 0, 3]]  # k[0, 0] = k[0, 2] = 0
    assert _equal_columns(np.arange(6.0).reshape(1, 6, 1)) is None
