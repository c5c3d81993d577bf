"""The outward-rounded arithmetic of attncert.soft.certified.rigorous / .pointwise and of
the checker's attncert.kernel.core.bounds, against arb: every enclosure contains the
exact value, and the constants the activations rely on are re-proved here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from flint import arb, ctx

from attncert.kernel.core import bounds as KB
from attncert.model.spec import Activation, LayerNorm
from attncert.soft.certified import pointwise as P
from attncert.soft.certified import rigorous as R
from attncert.soft.certified.layernorm import ln_box, ln_change

RNG = np.random.default_rng(7)


def _within(lo: float, x: arb, hi: float) -> bool:
    """Every point of the ball x lies in [lo, hi] (arb comparisons are certain)."""
    return bool(x >= float(lo)) and bool(x <= float(hi))


def _exact_dot(a: np.ndarray, b: np.ndarray) -> arb:
    ctx.prec = 300
    try:
        return sum((arb(float(x)) * arb(float(y)) for x, y in zip(a, b, strict=True)), arb(0))
    finally:
        ctx.prec = 53


@pytest.mark.parametrize("exp_fn", [R.exp_le0_bounds, KB.exp_le0], ids=["certifier", "kernel"])
def test_exp_enclosures_contain_arb(exp_fn):
    x = -np.concatenate(
        [
            np.abs(RNG.standard_normal(400)) * np.exp(RNG.uniform(-30, 4.2, 400)),
            [0.0, 64.0, 63.99999, 700.0],
        ]
    )
    lo, hi = exp_fn(x, x)
    ctx.prec = 200
    try:
        for xi, l_, h in zip(x, lo, hi, strict=True):
            assert _within(l_, arb(float(xi)).exp(), h), xi
    finally:
        ctx.prec = 53
    inside = x > -60
    assert np.all((hi[inside] - lo[inside]) / hi[inside] < 2e-4)  # the table's resolution
    with pytest.raises(ValueError):
        R.exp_le0_bounds(np.array([0.5]), np.array([0.5]))


def test_erf_enclosures_contain_arb():
    x = np.concatenate([RNG.standard_normal(300) * 3, [0.0, 6.0, -6.0, 7.5, -30.0]])
    for lower, upper in (
        (lambda v: R.erf_bounds(v, v)[0], lambda v: R.erf_bounds(v, v)[1]),
        (KB.erf_lower, KB.erf_upper),
    ):
        lo, hi = lower(x), upper(x)
        ctx.prec = 200
        try:
            for xi, l_, h in zip(x, lo, hi, strict=True):
                if abs(xi) >= 6:  # |erf| ∈ (1 − 2.2·10⁻¹⁷, 1): arb cannot separate it from ±1
                    assert (l_ >= -1 and h >= 1 - 2.2e-17) if xi > 0 else (l_ <= -1 + 2.2e-17)
                    assert -1 <= l_ <= h <= 1
                    continue
                assert _within(l_, arb(float(xi)).erf(), h), xi
        finally:
            ctx.prec = 53


@pytest.mark.parametrize("lin", [R.affine, KB.lin], ids=["certifier", "kernel"])
def test_affine_and_dot_enclose_exact_products(lin):
    w = RNG.standard_normal((5, 7)) * 10.0 ** RNG.integers(-3, 4, (5, 7))
    b = RNG.standard_normal(5)
    lo = RNG.standard_normal((6, 7))
    hi = lo + np.abs(RNG.standard_normal((6, 7))) * (RNG.random((6, 7)) < 0.5)
    out_lo, out_hi = lin(lo, hi, w, b)
    for _ in range(20):  # random points of the boxes, and the corners' exact values
        x = lo + (hi - lo) * RNG.random(lo.shape)
        for i in range(6):
            for j in range(5):
                v = _exact_dot(w[j], x[i]) + float(b[j])
                assert _within(out_lo[i, j], v, out_hi[i, j])
    dots = R.dot_boxes if lin is R.affine else KB.dots
    s_lo, s_hi = dots(lo, hi, lo[:3], hi[:3])
    x = lo + (hi - lo) * RNG.random(lo.shape)
    for i in range(6):
        for j in range(3):
            v = _exact_dot(x[i], x[j]) if j != i else None
            if v is not None:
                assert _within(s_lo[i, j], v, s_hi[i, j])


def test_sums_are_outward():
    x = RNG.standard_normal(1000) * 1e8
    ctx.prec = 300
    try:
        exact = sum((arb(float(v)) for v in x), arb(0))
        assert _within(R.sum_lower(x), exact, R.sum_upper(x))
        pos = np.abs(x)
        exact = sum((arb(float(v)) for v in pos), arb(0))
        assert _within(R.sum_down(pos), exact, R.sum_up(pos))
    finally:
        ctx.prec = 53


def _act(kind: Activation, x: arb) -> arb:
    if kind is Activation.GELU:
        return x * (1 + (x / arb(2).sqrt()).erf()) / 2
    u = (2 / arb.pi()).sqrt() * (x + arb(44715) / 1000000 * x**3)
    return x * (1 + u.tanh()) / 2


def _dact(kind: Activation, x: arb) -> arb:
    if kind is Activation.GELU:
        phi = (-(x * x) / 2).exp() / (2 * arb.pi()).sqrt()
        return (1 + (x / arb(2).sqrt()).erf()) / 2 + x * phi
    k, c = (2 / arb.pi()).sqrt(), arb(44715) / 1000000
    t = (k * (x + c * x**3)).tanh()
    return (1 + t) / 2 + x * (1 - t * t) * k * (1 + 3 * c * x * x) / 2


@pytest.mark.parametrize("kind", [Activation.GELU, Activation.GELU_TANH])
def test_the_activation_constants(kind):
    """The facts pointwise.py rests on, re-proved with arb ball arithmetic: the minimiser
    lies in (−0.76, −0.74) (act′ changes sign there), the minimum is ≥ −0.171, and act′
    lies in [−0.13, 1.13]: on [−12, 12] by evaluating act′ on balls covering cells of
    width 10⁻³ (an arb enclosure of the whole cell), beyond by the tails: act′ − 1 (right)
    and act′ (left) are below 10⁻²⁰ there and shrink with |x|."""
    assert _dact(kind, arb(P.X_STAR_LO)) < 0 < _dact(kind, arb(P.X_STAR_HI))
    width = 1e-4
    for x in np.arange(P.X_STAR_LO, P.X_STAR_HI, width):
        assert _act(kind, arb(float(x) + width / 2, width / 2 + 1e-12)) > P.ACT_MIN
    step = 1e-3
    for x in np.arange(-12, 12, step):
        ball = arb(float(x) + step / 2, step / 2 + 1e-12)  # covers the cell [x, x + step]
        assert _dact(kind, ball) > P.SLOPE_MIN and _dact(kind, ball) < P.SLOPE_MAX, x
    ctx.prec = 200
    try:
        assert abs(_dact(kind, arb(-12))) < 1e-20 and abs(_dact(kind, arb(12)) - 1) < 1e-20
    finally:
        ctx.prec = 53


@pytest.mark.parametrize("impl", ["certifier", "kernel"])
@pytest.mark.parametrize("kind", [Activation.RELU, Activation.GELU, Activation.GELU_TANH])
def test_activation_ranges_and_slopes_are_sound(kind, impl):
    a = RNG.standard_normal(300) * 3
    b = a + np.abs(RNG.standard_normal(300)) * (RNG.random(300) < 0.9)
    if impl == "certifier":
        lo, hi = P.act_range(kind, a, b)
        s = P.act_slope(kind, a, b)
    else:
        lo, hi = KB.act_box(kind.value, a, b)
        s = KB.absmax(*KB.act_slopes(kind.value, a, b))
    ctx.prec = 120
    try:
        for i in range(0, 300, 3):
            xs = np.linspace(a[i], b[i], 9)
            vals = [
                _act(kind, arb(float(x)))
                if kind is not Activation.RELU
                else arb(max(float(x), 0.0))
                for x in xs
            ]
            assert all(_within(lo[i], v, hi[i]) for v in vals)
            for u, v, xu, xv in zip(vals, vals[1:], xs, xs[1:], strict=False):
                if xv > xu:  # secant slopes (exact steps xv − xu) are ≤ the slope bound
                    assert bool(abs(v - u) <= float(s[i]) * (arb(float(xv)) - float(xu)))
    finally:
        ctx.prec = 53


def test_layernorm_box_variance_and_lipschitz():
    """Random boxes: every point's LN is in the box, its variance is ≥ the certified lower
    bound, and pairs of points move by at most the change bound."""
    d = 6
    norm = LayerNorm(1 + 0.3 * RNG.standard_normal(d), 0.1 * RNG.standard_normal(d), 1e-5)
    lo = RNG.standard_normal((40, d)) * 2
    hi = lo + np.abs(RNG.standard_normal((40, d))) * 0.5
    o_lo, o_hi, s_max, n_abs, var_lo = ln_box(norm, lo, hi)
    k = KB.layernorm(norm, lo, hi)
    assert np.allclose(k[0], o_lo) and np.allclose(k[2], s_max)
    from attncert.model.forward import layer_norm

    for _ in range(50):
        x = lo + (hi - lo) * RNG.random(lo.shape)
        y = lo + (hi - lo) * RNG.random(lo.shape)
        lx, ly = layer_norm(norm, x), layer_norm(norm, y)
        assert np.all(lx >= o_lo - 1e-12) and np.all(lx <= o_hi + 1e-12)
        assert np.all(x.var(axis=1) >= var_lo * (1 - 1e-12))
        bound = ln_change(norm, np.abs(x - y), s_max, n_abs)
        assert np.all(np.abs(lx - ly) <= bound + 1e-12)
    # a box containing a constant vector: only ε bounds the constant
    z = np.zeros((1, d))
    _, _, s0, _, v0 = ln_box(norm, z - 1, z + 1)
    assert v0[0] == 0 and s0[0] >= 1 / math.sqrt(norm.eps)


def test_parity_floor_is_log1p_exp():
    for b in (0.0, 0.3, 2.0, 40.0):
        f = R.log1p_exp_neg_half_lower(b)
        assert f <= math.log1p(math.exp(-b / 2)) and f > math.log1p(math.exp(-b / 2)) - 1e-15
    assert R.log1p_exp_neg_half_lower(0.0) < math.log(2)


def test_layernorm_sphere_cap_holds_for_every_input():
    """w·LN(y) + b stays within √d·‖w⊙γ − mean‖ of w·β + b for any y — also for inputs
    far outside any box — and the kernel computes the same interval."""
    from attncert.model.forward import layer_norm
    from attncert.soft.certified.layernorm import sphere_range

    d = 7
    norm = LayerNorm(1 + 0.5 * RNG.standard_normal(d), RNG.standard_normal(d), 1e-5)
    w = RNG.standard_normal(d)
    lo, hi = sphere_range(norm, w, 0.3)
    k_lo, k_hi = KB.sphere(norm, w, 0.3)
    assert lo == pytest.approx(k_lo, rel=1e-12) and hi == pytest.approx(k_hi, rel=1e-12)
    y = RNG.standard_normal((5000, d)) * 10.0 ** RNG.integers(-3, 6, (5000, 1))
    z = layer_norm(norm, y) @ w + 0.3
    assert np.all(z >= lo) and np.all(z <= hi)
    # attained up to ε: y along the centred direction of w⊙γ
    a = w * norm.weight
    z_top = layer_norm(norm, (a - a.mean())[None] * 1e3) @ w + 0.3
    assert z_top[0] > hi - 1e-6 * (hi - lo)
