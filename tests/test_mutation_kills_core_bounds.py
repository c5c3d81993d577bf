"""The kernel's outward-rounded arithmetic (:mod:`attncert.kernel.core.bounds`) against arb
and exact rationals, where the broader soundness tests of ``test_soft_certified_arith.py``
leave a rounding direction or a saturation value unobserved (issue 34: mutation score)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import arb, ctx

from attncert.kernel.core import bounds as KB


def test_the_fine_exponential_encloses_arb_to_2_to_the_minus_32():
    rng = np.random.default_rng(3)
    x = -np.concatenate(
        [np.abs(rng.standard_normal(200)) * np.exp(rng.uniform(-20, 4, 200)), [1e-9, 0.5, 63.9]]
    )
    lo, hi = KB.exp_le0_fine(x, x)
    ctx.prec = 200
    try:
        for xi, l_, h in zip(x, lo, hi, strict=True):
            e = arb(float(xi)).exp()
            # e^x is irrational at x ≠ 0: both ends strictly outside it
            assert bool(e > float(l_)) and bool(e < float(h)), xi
    finally:
        ctx.prec = 53
    inside = x > -64
    # the Taylor term δ²/2 ≤ 2⁻³³ dominates the width: far finer than exp_le0's 2⁻¹⁶
    assert np.all((hi - lo)[inside] <= 2.0**-32 * hi[inside])
    lo0, hi0 = KB.exp_le0_fine(np.array([0.0]), np.array([0.0]))
    assert lo0[0] <= 1.0 == hi0[0]
    far_lo, far_hi = KB.exp_le0_fine(np.array([-100.0]), np.array([-100.0]))
    assert far_lo[0] == 0.0 and far_hi[0] > 0.0 and bool(arb(-64).exp() <= float(far_hi[0]))


def test_erf_saturates_at_one_minus_a_few_ulps_beyond_six():
    # 1 − erf(6) < 2.2·10⁻¹⁷: from 6 on the lower bound is the constant dn(1 − 2⁻⁵²), the
    # upper bound of −x its negation; below 6 the table's entries
    top = float(KB.dn(1.0 - 2.0**-52))
    x = np.array([6.0, 6.5, 40.0])
    assert np.all(KB.erf_lower(x) == top)
    assert np.all(KB.erf_upper(-x) == -top)
    below = np.array([5.99])
    ctx.prec = 200
    try:
        assert bool(arb(5.99).erf() >= float(KB.erf_lower(below)[0]))
    finally:
        ctx.prec = 53


def test_a_long_non_negative_product_covers_the_additions_float_loses():
    # 1 + (k − 1)·2⁻⁵⁴: each 2⁻⁵⁴ added to 1 alone is lost, so the float product is low by
    # up to (k − 1)·2⁻⁵⁴; the bound's factor 1 + γ over the inner length k covers it
    k = 100_000
    a = np.ones((1, k))
    b = np.full((k, 1), 2.0**-54)
    b[0, 0] = 1.0
    exact = 1 + Fraction(k - 1, 2**54)
    assert Fraction(float((a @ b)[0, 0])) < exact  # the float product does lose some
    bound = KB.pmat_up(a, b)[0, 0]
    assert exact <= Fraction(float(bound)) <= exact * (1 + Fraction(3 * (k + 4), 2**53))


def test_dots_cover_products_that_underflow_to_zero():
    # every q·k = 3·10⁻⁴⁰⁰ underflows to 0 in float64: the enclosure must still hold it
    q = np.full((2, 3), 1e-200)
    lo, hi = KB.dots(q, q, q, q)
    exact = 3 * Fraction(1e-200) ** 2
    assert np.all(lo < 0.0) and all(Fraction(float(h)) >= exact for h in hi.ravel())
    assert np.all(hi <= 2.0**-990)  # only the underflow cover 2⁻¹⁰⁰⁰, rounded
