"""Vectorized float enclosures (attncert.arith.enclose) contain the arb / exact values of
the same maps (attncert.arith.positionwise), stay tight, and the lazy field rows of a
RowGraph equal a whole-matrix evaluation."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from flint import arb, ctx, fmpq

from attncert.arith import enclose
from attncert.arith.field import Field
from attncert.arith.filter import Enclosed
from attncert.arith.positionwise import (
    activation_rows,
    attention_inputs,
    finish_layer,
    model_maps,
    projections,
)
from attncert.model import harden, random_model
from attncert.model.spec import Activation, LayerNorm

sys.path.insert(0, str(Path(__file__).parent))
from test_model_v2 import v2_model


def _contains(box: Enclosed, values, what: str) -> None:
    """Every field value lies in [mid − rad, mid + rad] — decided exactly (arb balls
    must lie inside; rationals compared as rationals)."""
    mid, rad = box.mid.ravel().tolist(), box.rad.ravel().tolist()
    assert len(values) == len(mid)
    for t, (v, m, r) in enumerate(zip(values, mid, rad, strict=True)):
        lo, hi = (
            fmpq(*m.as_integer_ratio()) - fmpq(*r.as_integer_ratio()),
            fmpq(*m.as_integer_ratio()) + fmpq(*r.as_integer_ratio()),
        )
        if isinstance(v, fmpq):
            assert lo <= v <= hi, (what, t, v, m, r)
        else:
            assert arb(lo) <= v.lower() and v.upper() <= arb(hi), (what, t, v, m, r)


def _models():
    yield random_model(2, 2, 8, seed=3)
    for variant in (
        {},
        {"norm_position": "post"},
        {"activation": "gelu_tanh"},
        {"activation": "relu"},
    ):
        yield harden(v2_model(2, **variant))


@pytest.mark.parametrize("index", range(5))
def test_layer_maps_enclose_the_field_values(index):
    model = list(_models())[index]
    rng = np.random.default_rng(index)
    x = rng.standard_normal((7, model.d)) * 3
    attn = rng.standard_normal((7, model.d))
    fld = Field(256)
    with ctx.workprec(256):
        maps = model_maps(model, fld)
        for li in range(model.num_layers):
            xm, am = fld.mat(x), fld.mat(attn)
            u = attention_inputs(maps, li, xm)
            ue = enclose.attention_inputs(model, li, enclose.point(x))
            _contains(ue, u.entries(), "attention inputs")
            for hi in range(len(model.layers[li].heads)):
                for got, want in zip(
                    enclose.projections(model, li, hi, ue),
                    projections(maps, li, hi, u),
                    strict=True,
                ):
                    _contains(got, want.entries(), "projection")
                    assert got.rad.max() < 1e-12
            out = finish_layer(maps, li, xm, am)
            oe = enclose.finish_layer(model, li, enclose.point(x), enclose.point(attn))
            _contains(oe, out.entries(), "finish_layer")
            assert oe.rad.max() < 1e-11


@pytest.mark.parametrize("kind", [Activation.GELU, Activation.GELU_TANH])
def test_gelu_tables_enclose_arb_everywhere(kind):
    pts = np.concatenate(
        [
            np.linspace(-12, 12, 2001),
            np.arange(-10, 10.01, 1 / 16) + 1e-17,  # cell boundaries
            [-1e300, -50, -10.0, -9.999999, 0.0, 5e-324, 1e-300, 9.999999, 10.0, 37.5, 1e300],
        ]
    ).reshape(-1, 1)
    rad = np.abs(pts) * 1e-9
    for r in (np.zeros_like(pts), rad):
        box = enclose.activation(kind, Enclosed(pts, r))
        with ctx.workprec(200):
            fld = Field(200)
            ball = fld.mat(pts)
            if r.any():  # the exact function on the interval ends must lie inside
                for sign in (-1, 1):
                    want = activation_rows(fld, kind, fld.mat(pts + sign * r * (1 - 2**-40)))
                    _contains(box, want.entries(), "gelu ends")
            else:
                _contains(box, activation_rows(fld, kind, ball).entries(), "gelu")
    xs = np.linspace(-6, 6, 101).reshape(-1, 1)
    tight = enclose.activation(kind, enclose.point(xs))
    assert np.all(tight.rad <= 1e-14 * (1 + np.abs(xs)))


def test_layer_norm_of_nearly_constant_rows_is_enclosed():
    d = 6
    norm = LayerNorm(np.linspace(0.5, 2, d), np.linspace(-1, 1, d), 1e-5)
    x = np.array(
        [[1.0] * d, [1.0 + 2**-52, 1.0, 1.0, 1.0, 1.0, 1.0 - 2**-52], [1e3, -1e3, 0, 0, 1, 2]]
    )
    box = enclose.layer_norm(norm, enclose.point(x))
    from attncert.arith.positionwise import NormMaps, layer_norm_rows

    with ctx.workprec(256):
        fld = Field(256)
        nm = NormMaps(
            [fld.num(v) for v in norm.weight.tolist()],
            [fld.num(v) for v in norm.bias.tolist()],
            fld.num(norm.eps),
        )
        _contains(box, layer_norm_rows(fld, nm, fld.mat(x)).entries(), "layer norm")
    assert box.rad.max() < 1e-10


def test_relu_interval_cases():
    x = Enclosed(np.array([[2.0, -2.0, 0.5, -0.5, 0.0]]), np.array([[1.0, 1.0, 1.0, 1.0, 0.0]]))
    y = enclose.relu(x)
    lo, hi = y.mid - y.rad, y.mid + y.rad
    assert np.all(lo <= np.maximum(x.mid - x.rad, 0)) and np.all(hi >= np.maximum(x.mid + x.rad, 0))
    assert y.rad[0, 1] == 0 and y.mid[0, 1] == 0 and y.rad[0, 0] == 1.0


def test_overflow_is_undecided_not_guessed():
    from attncert.arith.field import Undecided

    with pytest.raises(Undecided, match="overflow"):
        enclose.affine(enclose.point(np.array([[1e308, 1e308]])), np.array([[1e10, 1e10]]))


def test_gelu_in_row_blocks_equals_one_block():
    x = np.random.default_rng(0).standard_normal((9000, 256)) * 3
    box = Enclosed(x, np.abs(x) * 1e-15)
    table = enclose._taylor(Activation.GELU)
    a, b = table(box), table._eval(box)
    assert np.array_equal(a.mid, b.mid) and np.array_equal(a.rad, b.rad)
