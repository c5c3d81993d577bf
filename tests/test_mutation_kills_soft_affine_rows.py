"""Rows and ratios of the affine propagation (attncert.kernel.soft.affine.rows), pinned where
a mutation survived (issue 34): a ratio entry kept as its hull box holds every value."""

from __future__ import annotations

import numpy as np

from attncert.kernel.soft.affine.rows import ratio


def test_a_ratio_entry_kept_as_its_hull_box_holds_every_quotient():
    """N = 0.5 + 1·(x − ½) over one binary free position, D = 2: y = N/D is 0 or ½, and the
    hull [0, ½] is exact. The ratio's linear form is no narrower than the hull, so the
    entry is kept as the box ½·(hull) — the centre ¼ with radius ¼ (rounded up), no coefficients — and
    both quotients lie in it. Kills ``x_ratio__mutmut_146`` (the coefficients dropped but
    the remainder not widened to the hull's: ¼ ± a rounding term)."""
    n_f = (
        np.array([[0.5]]),
        np.ones((1, 1, 1, 1)),
        np.zeros((1, 1, 0)),
        np.zeros((1, 1)),
    )
    d_f = (np.array([2.0]), np.zeros((1, 1, 1)), np.zeros((1, 0)), np.zeros(1))
    y0, gl, el, rl, err, boxed = ratio(n_f, d_f, np.array([[0.0]]), np.array([[0.5]]))
    assert boxed == 1
    assert float(y0[0, 0]) == 0.25 and 0.25 <= float(rl[0, 0]) <= 0.25 * (1 + 2**-50)
    assert not gl.any() and el.size == 0 and not err.any()
    for x in (0.0, 1.0):  # the two choices: x − x̄ = ∓½
        n = 0.5 + 1.0 * (x - 0.5)
        y = n / 2.0
        centre = y0[0, 0] + gl[0, 0, 0, 0] * (x - 0.5)
        assert abs(y - centre) <= rl[0, 0] + err[0, 0], (x, y, centre)
