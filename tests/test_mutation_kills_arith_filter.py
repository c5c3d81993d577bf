"""The enclosed blocks of the cheap filter (arith/filter), pinned where a mutation survived
(issue 34): a column slice keeps midpoints and radii together."""

from __future__ import annotations

import numpy as np

from attncert.arith.filter import Enclosed


def test_take_cols_slices_midpoints_and_radii_alike():
    mid = np.arange(12.0).reshape(3, 4)
    rad = mid / 100
    got = Enclosed(mid, rad).take_cols(np.array([3, 1]))
    assert np.array_equal(got.mid, [[3.0, 1.0], [7.0, 5.0], [11.0, 9.0]])
    assert np.array_equal(got.rad, got.mid / 100)
    part = Enclosed(mid, rad).take_cols(slice(1, 3))
    assert np.array_equal(part.mid, mid[:, 1:3]) and np.array_equal(part.rad, rad[:, 1:3])
