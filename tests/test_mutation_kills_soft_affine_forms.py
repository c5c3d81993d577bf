"""The affine forms of the soft kernel (attncert.kernel.soft.affine.forms), pinned where a
mutation survived the brute-force tests (issue 34): the sum of two forms that both depend
on the choices, the coefficient mass as an upper bound and an overflow at one end of a range."""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from test_kernel_affine_forms import _form, _mp, _points, _value

from attncert.kernel.core.bounds import Undecided
from attncert.kernel.soft.affine import forms as A


def test_the_sum_of_two_forms_holds_every_sum_of_values():
    """add(f₁, f₂) at every choice and corner of the private symbols: f₁'s value plus
    f₂'s (both depending on the free positions, each with its remainder at a worst sign)
    lies in the sum's form. Kills ``x_add__mutmut_44`` (G₁ − G₂ instead of G₁ + G₂)."""
    rng = np.random.default_rng(5)
    f1 = _form(rng, 2, 3, 2, 2, 1, scale=1.0)
    f2 = _form(rng, 2, 3, 2, 2, 1, scale=1.0)
    assert np.abs(f1.G).min() > 0 and np.abs(f2.G).min() > 0
    out = A.add(f1, f2)  # the same rows' private symbols (shared=None: a common prefix)
    rows, k = f1.c.shape
    with mpmath.workprec(200):
        for x, eps, signs in _points(f1, rng):
            for row, j in itertools.product(range(rows), range(k)):
                v = _value(f1, row, j, x, eps) + _value(f2, row, j, x, eps)
                v += _mp(signs[row, j]) * (_mp(f1.r[row, j]) + _mp(f2.r[row, j]))
                assert abs(v - _value(out, row, j, x, eps)) <= _mp(out.r[row, j]), (row, j)


def test_the_coefficient_mass_bounds_every_coefficient_from_above():
    """coeff_mass(f) ≥ |c| + Σ|G| + Σ|E| exactly, entry by entry, and by at most the
    rounding's few ulps. Kills ``x_coeff_mass__mutmut_2`` (Σ|E| subtracted)."""
    rng = np.random.default_rng(7)
    f = _form(rng, 2, 3, 2, 2, 3, scale=1.0)
    got = A.coeff_mass(f)
    for row, j in itertools.product(range(2), range(3)):
        exact = abs(Fraction(f.c[row, j]))
        exact += sum(abs(Fraction(v)) for v in f.G[row, j].ravel())
        exact += sum(abs(Fraction(v)) for v in f.E[row, j])
        assert exact <= Fraction(got[row, j]) <= exact * (1 + Fraction(1, 2**40)), (row, j)


def test_a_range_whose_upper_end_overflows_is_refused():
    """A form near the top of float64 whose lower end is finite: bounds() refuses it
    (the check says UNDECIDED), it does not return +∞ as the upper end. Kills
    ``x_bounds__mutmut_20`` (only the lower end checked)."""
    f = A.Form(
        np.array([[1.5e308]]), np.full((1, 1, 1, 1), 1.0e308), np.zeros((1, 1, 0)), np.zeros((1, 1))
    )
    with np.errstate(over="ignore"), pytest.raises(Undecided) as e:
        A.bounds(f)
    assert str(e.value) == "a bound overflowed float64"


def test_alibi_columns_are_the_slope_and_position_terms_with_non_negative_radii():
    """q′ = [q, m, −m·i] and k′ = [k, j, 1] (q′·k′ = q·k − m(i − j)); −m·i is rounded once,
    and every remainder of a form is ≥ 0 — at position 0 too, where −m·0 is exact."""
    from attncert.kernel.soft.affine.forms import alibi_columns, point

    base = point(np.zeros((3, 2)), np.zeros((3, 2)), 1, 1)
    pos = np.array([0, 3, 7])
    q = alibi_columns(base, 0.375, pos, query=True)
    k = alibi_columns(base, 0.375, pos, query=False)
    np.testing.assert_array_equal(q.c[:, 2:], [[0.375, -0.0], [0.375, -1.125], [0.375, -2.625]])
    np.testing.assert_array_equal(k.c[:, 2:], [[0.0, 1.0], [3.0, 1.0], [7.0, 1.0]])
    assert (q.r >= 0).all() and (k.r >= 0).all()
    assert q.G.shape == (3, 4, 1, 1) and not q.G.any()
