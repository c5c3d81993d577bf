"""The float64 enclosures of attncert.arith.enclose and the score bounds of
attncert.arith.filter, checked against exact rational arithmetic on adversarial inputs
(issue 25's mutation analysis: each test here rejects kernels that the older tests let
through).

Soundness: every exact value at a point of the input enclosure (its corners, its centre)
lies in the output enclosure — on inputs mixing magnitudes 1e-20 … 1e20 and cancelling
sums, where float64 rounding errors are as large as the documented bounds allow.
Tightness: an output radius is within a small factor of the module's documented
first-order bound, so an enclosure made wider by orders of magnitude (still sound, but
useless for deciding anything) is rejected as well.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
import warnings
from pathlib import Path

import mpmath
import numpy as np
import pytest
from flint import arb, ctx, fmpq

from attncert.arith import enclose
from attncert.arith.field import Field, Undecided
from attncert.arith.filter import Enclosed, row_bounds, score_block, score_pairs, top_columns
from attncert.arith.positionwise import (
    NormMaps,
    activation_rows,
    finish_layer,
    layer_norm_rows,
    model_maps,
    readout_terms,
)
from attncert.arith.rows import embedding_row_exact
from attncert.model import harden, random_model
from attncert.model.spec import Activation, LayerNorm

sys.path.insert(0, str(Path(__file__).parent))
from test_model_v2 import v2_model

U = 2.0**-53


def _q(x: float) -> fmpq:
    return fmpq(*float(x).as_integer_ratio())


def _inside(box: Enclosed, index: tuple[int, ...], value) -> bool:
    """value (fmpq or arb) lies in [mid − rad, mid + rad], decided exactly."""
    lo = _q(box.mid[index]) - _q(box.rad[index])
    hi = _q(box.mid[index]) + _q(box.rad[index])
    if isinstance(value, fmpq):
        return lo <= value <= hi
    if isinstance(value, mpmath.mpf):  # 400 bits: 2⁻³⁴⁰ relative beside float64 radii
        with mpmath.workprec(400):
            slack = abs(value) * mpmath.mpf(2) ** -340
            return bool(
                mpmath.mpf(int(lo.p)) / int(lo.q) <= value - slack
                and value + slack <= mpmath.mpf(int(hi.p)) / int(hi.q)
            )
    return bool(arb(lo) <= value.lower() and value.upper() <= arb(hi))


def _wild(rng, shape, spread: int = 20) -> np.ndarray:
    """Entries of random sign and magnitude 10^-spread … 10^spread, some exact zeros."""
    x = (
        rng.choice([-1.0, 1.0], size=shape)
        * rng.random(shape)
        * 10.0 ** rng.integers(-spread, spread + 1, size=shape)
    )
    x[rng.random(shape) < 0.1] = 0.0
    return x


def _cancelling(rng, rows: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """x, w whose products cancel: x·w is tiny against Σ|x||w| (the worst case of the γ_k
    rounding bound)."""
    x = rng.standard_normal((rows, k)) * 10.0 ** rng.integers(-3, 4, size=(rows, k))
    w = rng.standard_normal((3, k))
    w[:, -1] = 0.0
    for r in range(3):  # last entry of w cancels row 0's dot product up to rounding
        if x[0, -1] != 0:
            w[r, -1] = -(x[0, :-1] @ w[r, :-1]) / x[0, -1]
    return x, w


def _points(box: Enclosed, rng, count: int = 6):
    """Points of the box as exact rationals: the centre, opposite corners, random corners."""
    mid, rad = box.mid, box.rad
    signs = [np.zeros_like(mid), np.ones_like(mid), -np.ones_like(mid)]
    signs += [rng.choice([-1.0, 1.0], size=mid.shape) for _ in range(count - 3)]
    for s in signs:
        yield [
            [_q(m) + int(sg) * _q(r) for m, r, sg in zip(mr, rr, sr, strict=True)]
            for mr, rr, sr in zip(mid, rad, s, strict=True)
        ]


def _boxes(rng, rows: int, k: int):
    """Point enclosures and thick ones, of wild and of cancelling vectors."""
    x = _wild(rng, (rows, k))
    yield Enclosed(x, np.zeros_like(x))
    yield Enclosed(x, np.abs(_wild(rng, (rows, k), 5)) * (rng.random((rows, k)) < 0.5))
    c, _ = _cancelling(rng, rows, k)
    yield Enclosed(c, np.zeros_like(c))
    yield Enclosed(c, np.abs(c) * 2.0**-40)


# ----------------------------------------------------------------------- arith.enclose
def _matvec(rows, w, b):
    return [
        [
            sum((xi * _q(wi) for xi, wi in zip(row, wr, strict=True)), fmpq(0)) + _q(bi)
            for wr, bi in zip(w, b, strict=True)
        ]
        for row in rows
    ]


@pytest.mark.parametrize("seed", range(4))
def test_affine_encloses_exact_products_and_stays_near_its_documented_bound(seed):
    rng = np.random.default_rng(seed)
    k = 5
    for x in _boxes(rng, 3, k):
        for w, b in (
            (_wild(rng, (4, k), 3), None),
            (_wild(rng, (4, k), 3), _wild(rng, 4, 25)),  # a bias that swamps x·w
            (_cancelling(rng, 3, k)[1], np.zeros(3)),
        ):
            if b is not None and w.shape[0] != b.shape[0]:
                b = b[: w.shape[0]]
            y = enclose.affine(x, w, b)
            bias = np.zeros(w.shape[0]) if b is None else b
            for pt in _points(x, rng):
                exact = _matvec(pt, w, bias)
                for i, j in itertools.product(range(len(exact)), range(len(exact[0]))):
                    assert _inside(y, (i, j), exact[i][j]), (seed, i, j)
            # the documented bound r|W|ᵀ + γ_k|m||W|ᵀ + 2u|ỹ|, within a factor 1.5
            doc = (
                x.rad @ np.abs(w).T
                + 1.01 * k * U * (np.abs(x.mid) @ np.abs(w).T)
                + 2 * U * np.abs(y.mid)
            )
            assert np.all(y.rad <= 1.5 * doc + 1e-290), (y.rad, doc)


def test_a_bias_much_larger_than_the_product_is_rounded_inside_the_enclosure():
    """1 + 1e-20 rounds to 1: the error lives in the bias addition alone."""
    x = enclose.point(np.array([[1e-20, 3e-21]]))
    w = np.array([[1.0, 1.0], [1.0, -1.0]])
    y = enclose.affine(x, w, np.array([1.0, -1.0]))
    assert _inside(y, (0, 0), fmpq(1) + _q(1e-20) + _q(3e-21))
    assert _inside(y, (0, 1), fmpq(-1) + _q(1e-20) - _q(3e-21))
    assert y.rad.max() < 1e-15


def _binary_maps(a: Enclosed, b: Enclosed, g: np.ndarray):
    """(output enclosure, exact value at points p, q, documented bound) of add, mul, scale."""
    y = enclose.add(a, b)
    yield y, lambda p, q, i, j: p[i][j] + q[i][j], a.rad + b.rad + 2 * U * np.abs(y.mid)
    y = enclose.mul(a, b)
    doc = np.abs(a.mid) * b.rad + a.rad * (np.abs(b.mid) + b.rad) + 2 * U * np.abs(y.mid)
    yield y, lambda p, q, i, j: p[i][j] * q[i][j], doc
    y = enclose.scale(a, g)
    yield y, lambda p, q, i, j: p[i][j] * _q(g[j]), a.rad * np.abs(g) + 2 * U * np.abs(y.mid)


@pytest.mark.parametrize("seed", range(3))
def test_add_scale_mul_enclose_exact_values_and_stay_tight(seed):
    rng = np.random.default_rng(seed)
    shape = (3, 4)
    boxes = list(_boxes(rng, *shape))
    g = _wild(rng, shape[1], 10)
    for a, b in itertools.combinations(boxes, 2):
        for y, exact_of, doc in _binary_maps(a, b, g):
            for p, q in zip(_points(a, rng), _points(b, rng), strict=True):
                for i, j in itertools.product(range(shape[0]), range(shape[1])):
                    assert _inside(y, (i, j), exact_of(p, q, i, j)), (seed, i, j)
            assert np.all(y.rad <= 1.5 * doc + 1e-290)


def test_mean_rows_encloses_the_exact_mean_of_each_group():
    rng = np.random.default_rng(7)
    for x in _boxes(rng, 6, 3):
        groups = [np.array([0, 1, 2]), np.array([4]), np.array([5, 3, 1, 0]), np.arange(6)]
        y = enclose.mean_rows(x, groups)
        for pt in _points(x, rng):
            for g, idx in enumerate(groups):
                for j in range(3):
                    exact = sum((pt[i][j] for i in idx.tolist()), fmpq(0)) / len(idx)
                    assert _inside(y, (g, j), exact), (g, j)
        for g, idx in enumerate(groups):
            spread = x.rad[idx].mean(axis=0) + 1.01 * len(idx) * U * np.abs(x.mid[idx]).mean(axis=0)
            assert np.all(y.rad[g] <= 1.5 * (spread + 2 * U * np.abs(y.mid[g])) + 1e-290)


def test_relu_is_the_exact_image_of_the_interval():
    m = np.array([[3.0, -3.0, 0.5, -0.5, 0.0, 1.0, -1.0, 2.0]])
    r = np.array([[1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0]])
    y = enclose.relu(Enclosed(m, r))
    lo, hi = np.maximum(m - r, 0.0), np.maximum(m + r, 0.0)
    # contains the image [relu(m − r), relu(m + r)] …
    assert np.all(y.mid - y.rad <= lo) and np.all(y.mid + y.rad >= hi)
    # … and is that image (up to 4u on the straddling upper end)
    assert np.all(y.mid - y.rad >= lo - 1e-300)
    assert np.all(y.mid + y.rad <= hi * (1 + 8 * U))


def _layer_norm_exact(norm: LayerNorm, rows) -> list[list[mpmath.mpf]]:
    """γ ⊙ (x − μ)/√(σ² + ε) + β at 400 bits (mpmath: independent of the kernel's code)."""
    with mpmath.workprec(400):
        out = []
        for row in rows:
            xs = [mpmath.mpf(int(v.p)) / int(v.q) for v in row]
            mu = mpmath.fsum(xs) / len(xs)
            var = mpmath.fsum((v - mu) ** 2 for v in xs) / len(xs)
            inv = 1 / mpmath.sqrt(var + mpmath.mpf(norm.eps))
            out.append(
                [
                    mpmath.mpf(w) * (v - mu) * inv + mpmath.mpf(b)
                    for v, w, b in zip(xs, norm.weight.tolist(), norm.bias.tolist(), strict=True)
                ]
            )
        return out


@pytest.mark.parametrize("seed", range(3))
def test_layer_norm_encloses_the_arb_value_at_points_of_the_box(seed):
    rng = np.random.default_rng(seed)
    d = 5
    norm = LayerNorm(rng.standard_normal(d), rng.standard_normal(d), 1e-5)
    mid = np.vstack(
        [
            rng.standard_normal((2, d)) * 10.0 ** rng.integers(-2, 3, size=(2, 1)),
            np.full((1, d), 3.0) + np.array([2**-50, 0, 0, 0, -(2**-50)]),  # nearly constant
            np.array([[1e4, -1e4, 1.0, 2.0, 0.0]]),
        ]
    )
    for rad in (np.zeros_like(mid), np.abs(mid) * 1e-6, np.full_like(mid, 1e-3)):
        box = Enclosed(mid, rad)
        y = enclose.layer_norm(norm, box)
        for pt in _points(box, rng, count=5):
            exact = _layer_norm_exact(norm, pt)
            for i, j in itertools.product(range(mid.shape[0]), range(d)):
                assert _inside(y, (i, j), exact[i][j]), (seed, i, j)
        if not rad.any():
            # point rows: the enclosure is a few ulps of the output's scale wide
            scale = np.abs(norm.weight) * (np.abs(y.mid).max() + 1) + np.abs(norm.bias)
            assert np.all(y.rad[[0, 1, 3]] <= 1e-12 * scale)


def test_layer_norm_of_a_constant_row_is_its_bias():
    norm = LayerNorm(np.array([1.0, -2.0, 3.0]), np.array([0.5, 0.0, -1.0]), 1e-5)
    y = enclose.layer_norm(norm, enclose.point(np.full((1, 3), 2.0)))
    for j, b in enumerate(norm.bias.tolist()):
        assert _inside(y, (0, j), _q(b))
    assert y.rad.max() < 1e-11


def test_an_enclosure_beyond_float_range_is_undecided_in_every_map():
    big = enclose.point(np.array([[1e308, 1e308]]))
    for op in (
        lambda: enclose.add(big, big),
        lambda: enclose.scale(big, np.array([10.0, 10.0])),
        lambda: enclose.mul(big, big),
        lambda: enclose.mean_rows(
            Enclosed(np.full((2, 2), 1e308), np.zeros((2, 2))), [np.arange(2)]
        ),
    ):
        with np.errstate(over="ignore"), pytest.raises(Undecided, match="overflow") as err:
            op()
        assert err.value.expected == "a model whose activations stay within float64 range"


def test_an_affine_overflow_is_reported_without_a_float_warning():
    """The affine map's overflow is the Undecided report, not also a numpy RuntimeWarning
    printed on the way (the CLI's stderr is one paragraph)."""
    big = enclose.point(np.array([[1e308, 1e308]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(Undecided, match="overflow"):
            enclose.affine(big, np.array([[1e10, 1e10]]), np.array([1.0]))


# ------------------------------------------------------------------------ arith.filter
def _exact_dot(p, q) -> fmpq:
    return sum((a * b for a, b in zip(p, q, strict=True)), fmpq(0))


@pytest.mark.parametrize("seed", range(4))
def test_score_bounds_contain_the_exact_score_of_every_point_of_the_boxes(seed):
    rng = np.random.default_rng(seed)
    m = 6
    for qb, kb in itertools.product(list(_boxes(rng, 2, m)), repeat=2):
        s, e = score_block(qb, kb)
        assert np.all(e >= 0)
        for p, q in zip(_points(qb, rng), _points(kb, rng), strict=True):
            for i, j in itertools.product(range(2), range(2)):
                exact = _exact_dot(p[i], q[j])
                err = abs(exact - _q(s[i, j]))
                assert err <= _q(e[i, j]), (seed, i, j)
        # no wider than the documented E (module docstring) by more than 1.5×
        aq, ak = np.abs(qb.mid), np.abs(kb.mid)
        doc = (aq + qb.rad) @ kb.rad.T + qb.rad @ ak.T + 1.01 * m * U * (aq @ ak.T)
        assert np.all(e <= 1.5 * doc + 1e-290)
        # one query against the key rows: the same numbers
        s1, e1 = score_pairs(qb.mid[1], qb.rad[1], kb)
        assert np.allclose(s1, s[1], rtol=1e-12, atol=0)
        assert np.allclose(e1, e[1], rtol=1e-12, atol=0)
        # the per-row bound dominates every entrywise bound of its row …
        rb = row_bounds(qb, kb)
        assert np.all(rb >= e.max(axis=1)), (rb, e)


def test_row_bounds_are_tight_for_parallel_rows():
    """Cauchy–Schwarz is an equality for parallel vectors: there the row bound equals the
    entrywise one up to the 2⁻³⁰ inflation."""
    v = np.array([1.0, 2.0, 3.0, 0.5])
    qb = Enclosed(np.vstack([v, 2 * v]), np.vstack([v, v]) * 1e-3)
    kb = Enclosed(np.vstack([v * 0.5, v]), np.vstack([v, v]) * 1e-4)
    _, e = score_block(qb, kb)
    rb = row_bounds(qb, kb)
    assert np.all(rb >= e.max(axis=1))
    assert np.all(rb <= e.max(axis=1) * (1 + 1e-6))
    # point rows of very different sizes: each row's bound is its own
    qp = enclose.point(np.vstack([v, 1e6 * v]))
    _, e = score_block(qp, enclose.point(np.vstack([v, v / 2])))
    rb = row_bounds(qp, enclose.point(np.vstack([v, v / 2])))
    assert np.all(rb >= e.max(axis=1)) and np.all(rb <= e.max(axis=1) * (1 + 1e-6))
    # long parallel rows: the norms' own rounding is covered
    for m in (64, 500):
        w = np.random.default_rng(m).random(m) + 0.5
        qb = Enclosed(np.vstack([w, 3 * w]), np.vstack([w, w]) * 2.0**-20)
        kb = Enclosed(np.vstack([w / 3, w]), np.vstack([w, w]) * 2.0**-21)
        _, e = score_block(qb, kb)
        assert np.all(row_bounds(qb, kb) >= e.max(axis=1)), m
    # and a cancelling exact score is still bounded by it
    s, e = score_block(
        enclose.point(np.array([[1.0, 1e-17, -1.0]])), enclose.point(np.ones((1, 3)))
    )
    exact = fmpq(0) + _q(1e-17)
    assert abs(exact - _q(s[0, 0])) <= _q(e[0, 0])


@pytest.mark.parametrize("m", [1, 2, 3])
def test_score_bounds_are_attained_at_corners_of_short_integer_vectors(m):
    """With integer midpoints and radii every product is exact, so at the corner
    q̃ + r_q·sgn, k̃ + r_k·sgn the error |s − s̃| equals the first-order bound exactly:
    E may not be any smaller (for short vectors too, where m + 4 matters)."""
    qb = Enclosed(np.array([[1.0, 3.0, 2.0][:m]]), np.array([[1.0, 2.0, 1.0][:m]]))
    kb = Enclosed(np.array([[1.0, 5.0, 4.0][:m]]), np.array([[1.0, 1.0, 3.0][:m]]))
    s, e = score_block(qb, kb)
    corner_q = qb.mid + qb.rad
    corner_k = kb.mid + kb.rad
    exact = fmpq(int(corner_q[0] @ corner_k[0]))
    assert abs(exact - _q(s[0, 0])) <= _q(e[0, 0])
    assert abs(exact - _q(s[0, 0])) <= _q(row_bounds(qb, kb)[0])


def test_score_bounds_cover_underflow():
    """Products below the smallest normal float round to subnormals (absolute error up to
    2⁻¹⁰⁷⁵ each) where every relative bound underflows to 0."""
    for m in (1, 3):
        q = np.full((1, m), 1e-170 / 3)
        k = np.full((1, m), 1e-170 / 7)
        qb, kb = enclose.point(q), enclose.point(k)
        s, e = score_block(qb, kb)
        exact = _exact_dot([_q(v) for v in q[0]], [_q(v) for v in k[0]])
        assert abs(exact - _q(s[0, 0])) <= _q(e[0, 0])
        assert abs(exact - _q(s[0, 0])) <= _q(row_bounds(qb, kb)[0])


def test_top_columns_in_blocks_equals_a_full_sort():
    rng = np.random.default_rng(3)
    cases = [(50, 3, 4), (67, 2, 4), (200, 5, 8), (33, 1, 2), (9, 9, 4), (9, 12, 4)]
    cases += [(40, 3, 4), (48, 3, 4), (30, 1, 64), (12, 2, 2), (100, 4, 3), (70, 1, 4)]
    # larger k: numpy partitions the first few entries by selection sort, so an off-by-one
    # partition index shows only once k is past that
    cases += [(200, 12, 4), (300, 20, 4), (400, 9, 2), (120, 30, 1)]
    # fewer column blocks than k: only the direct partition can serve these (n ≤ 4·k·width
    # picks it; a blocked path would partition k − 1 out of fewer than k block maxima)
    cases += [(100, 3, 64), (130, 4, 64), (768, 3, 64)]
    for n, k, width in cases:
        a = rng.standard_normal((60, n))
        a[1, :] = 0.0  # all tied
        a[2, -1] = 99.0  # the largest entry in the last, short block
        a[3, :] = -np.inf
        got = top_columns(a, min(k, n), width=width)
        assert got.shape == (60, min(k, n))
        for r in range(60):
            cols = got[r].tolist()
            assert len(set(cols)) == len(cols) and all(0 <= c < n for c in cols)
            want = np.sort(a[r])[::-1][: min(k, n)]
            assert np.array_equal(np.sort(a[r, cols])[::-1], want), (n, k, width, r)


def test_enclosed_blocks():
    box = Enclosed(
        np.array([[3.0, -4.0], [1.0, 0.0], [0.0, 0.0]]),
        np.array([[0.0, 1.0], [2.0, 0.0], [0.0, 0.0]]),
    )
    assert box.max_norms == (2.0, 5.0)
    assert np.array_equal(box.abs_mid, np.abs(box.mid))
    part = box.take(np.array([2, 0]))
    assert np.array_equal(part.mid, box.mid[[2, 0]]) and np.array_equal(part.rad, box.rad[[2, 0]])
    empty = Enclosed(np.zeros((0, 2)), np.zeros((0, 2)))
    assert empty.max_norms == (0.0, 0.0)


def test_mean_rows_covers_the_rounding_of_its_radius_sum():
    """Radii [1, 2⁻⁵³, …]: summed in float64 row by row, every small one is lost, so the
    float sum is short by 99·2⁻⁵³ — the radius must still cover the exact mean's end."""
    k = 100
    rad = np.full((k, 1), 2.0**-53)
    rad[0] = 1.0
    x = Enclosed(np.zeros((k, 1)), rad)
    y = enclose.mean_rows(x, [np.arange(k)])
    exact_end = (fmpq(1) + fmpq(k - 1, 2**53)) / k
    assert _inside(y, (0, 0), exact_end) and _inside(y, (0, 0), -exact_end)


def _embedding_models():
    m = random_model(2, 2, 8, seed=3)
    assert m.embedding.features
    table = np.random.default_rng(1).standard_normal((12, m.d)) / 3
    yield m
    yield dataclasses.replace(m, embedding=dataclasses.replace(m.embedding, table=table))
    yield harden(v2_model(2))  # no positional features


@pytest.mark.parametrize("index", range(3))
def test_embedding_rows_enclose_the_exact_rows(index):
    model = list(_embedding_models())[index]
    n_tok = 9
    vocab = model.embedding.word.shape[0]
    tokens = np.array([t % vocab for t in range(n_tok)])
    positions = np.arange(n_tok)
    box = enclose.embed(model, tokens, positions, n_tok)
    for t in range(n_tok):
        exact = embedding_row_exact(model, int(tokens[t]), t, n_tok)
        for j, v in enumerate(exact):
            assert _inside(box, (t, j), v), (index, t, j)
    assert box.rad.max() < 1e-12 * (1 + np.abs(box.mid).max())


@pytest.mark.parametrize("index", range(3))
def test_readout_terms_enclose_the_exact_and_ball_values(index):
    model = list(_embedding_models())[index]
    rng = np.random.default_rng(index)
    x = rng.standard_normal((5, model.d)) * 2
    box = enclose.readout_terms(model, enclose.point(x))
    assert box.mid.shape == (5, 1)
    fld = Field(300)
    with ctx.workprec(300):
        want = readout_terms(model_maps(model, fld), fld.mat(x))
        for r, v in enumerate(want):
            assert arb(_q(box.mid[r, 0]) - _q(box.rad[r, 0])) <= v.lower()
            assert v.upper() <= arb(_q(box.mid[r, 0]) + _q(box.rad[r, 0]))
    assert box.rad.max() < 1e-12 * (1 + np.abs(box.mid).max())


@pytest.mark.parametrize("kind", [Activation.GELU, Activation.GELU_TANH])
def test_gelu_of_a_thick_interval_is_about_as_wide_as_its_image(kind):
    """On a monotone stretch the exact image of [m − r, m + r] is [f(m − r), f(m + r)];
    the enclosure (Lipschitz bound of the neighbouring cells) is at most 50 % wider.
    (Not for tanh-GELU beyond |x| ≈ 3: its arb derivative bounds there are loose — at
    x = 8 the enclosure is 12× the image — sound, and recorded in docs/mutation.md.)"""
    m = np.array([[-0.3, 0.5, 1.0, 2.5, 4.0, 8.0]])
    if kind is Activation.GELU_TANH:
        m = m[:, :4]
    r = np.full_like(m, 1e-3)
    box = enclose.activation(kind, Enclosed(m, r))
    with ctx.workprec(200):  # the image's ends in arb (an independent evaluator)
        fld = Field(200)
        lo, hi = (
            np.array([float(v.mid()) for v in activation_rows(fld, kind, fld.mat(x)).entries()])
            for x in (m - r, m + r)
        )
    half_image = (hi - lo) / 2
    assert np.all(box.rad >= half_image * (1 - 1e-9))
    assert np.all(box.rad <= 1.5 * half_image + 1e-12)


# ------------------------------------------------------------------ arith.positionwise
def test_ball_relu_and_layer_norm_contain_every_point_of_wide_balls():
    """Balls straddling 0 (as escalation produces at low precision): ReLU's image is
    [0, max], a square's is [0, max²] — also when the ball is wider than 1."""
    with ctx.workprec(64):
        fld = Field(64)
        balls = [arb(0, 0.5), arb(-1, 0.25), arb(2, 0.5), arb(0), arb(0.25, 2), arb(-0.5, 3)]
        out = activation_rows(fld, Activation.RELU, fld.matrix(1, 6, balls)).entries()
        for b, y in zip(balls, out, strict=True):
            for x in (b.lower(), b.upper(), b.mid()):
                assert y.contains(arb(max(float(x.mid()), 0.0)))
            assert float(y.upper()) <= max(float(b.upper()), 0.0) * (1 + 1e-8) + 1e-300
        norm = LayerNorm(np.array([1.0, -2.0, 0.5]), np.array([0.0, 1.0, -1.0]), 1e-3)
        nm = NormMaps([arb(v) for v in norm.weight], [arb(v) for v in norm.bias], arb(norm.eps))
        rows = [[arb(0, 2), arb(1, 0.5), arb(-1, 1.5)], [arb(3, 0.1), arb(3, 0.1), arb(3, 0.1)]]
        y = layer_norm_rows(fld, nm, fld.matrix(2, 3, [v for r in rows for v in r])).entries()
    rng = np.random.default_rng(0)
    for r, row in enumerate(rows):
        for _ in range(40):
            pt = [
                fmpq(*float(b.mid() + (2 * rng.random() - 1) * b.rad()).as_integer_ratio())
                for b in row
            ]
            exact = _layer_norm_exact(norm, [pt])[0]
            for j, v in enumerate(exact):
                ball = y[r * 3 + j]
                with mpmath.workprec(200):
                    lo = mpmath.mpf(float(ball.lower())) - mpmath.mpf(2) ** -40
                    hi = mpmath.mpf(float(ball.upper())) + mpmath.mpf(2) ** -40
                    assert lo <= v <= hi, (r, j)


def test_layer_norm_of_a_row_with_one_wide_ball_contains_every_point():
    """One entry a ball of radius 1.7 among nine exact ones (found by a random search
    against a mutant): its centred value straddles 0 with |x − μ| up to ~3, so the
    square's enclosure must reach max|x − μ|² > 1, or the variance — and the normalised
    row — miss the points where that entry is far from the mean."""
    mids = [4.0727, -0.19105, -1.6273, 2.2475, 3.1797, 2.3094, 5.9985, 3.2422, 3.8505, -1.6196]
    rads = [0.0] * 8 + [1.6889, 0.0]
    norm = LayerNorm(np.ones(10), np.zeros(10), 1e-5)
    nm = NormMaps([arb(1)] * 10, [arb(0)] * 10, arb(norm.eps))
    with ctx.workprec(64):
        fld = Field(64)
        m = fld.matrix(1, 10, [arb(a, r) for a, r in zip(mids, rads, strict=True)])
        y = layer_norm_rows(fld, nm, m).entries()
    for t in np.linspace(-1, 1, 9):  # points a + t·r of the box (arb's radius is ≥ r)
        pt = [
            fmpq(*a.as_integer_ratio()) + fmpq(*(t * r).as_integer_ratio())
            for a, r in zip(mids, rads, strict=True)
        ]
        for j, v in enumerate(_layer_norm_exact(norm, [pt])[0]):
            with mpmath.workprec(200):
                lo = mpmath.mpf(float(y[j].lower())) - mpmath.mpf(2) ** -40
                hi = mpmath.mpf(float(y[j].upper())) + mpmath.mpf(2) ** -40
                assert lo <= v <= hi, (t, j)


def test_irrational_maps_are_refused_in_the_exact_field():
    exact = Field(None)
    m = exact.mat(np.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match=r"^gelu is irrational: evaluate in a ball field$"):
        activation_rows(exact, Activation.GELU, m)
    nm = NormMaps([fmpq(1)] * 2, [fmpq(0)] * 2, fmpq(1, 1000))
    with pytest.raises(ValueError, match=r"^LayerNorm is irrational: evaluate the model in a ball"):
        layer_norm_rows(exact, nm, m)


def _without_ffn_or_residual(model):
    layers = tuple(
        dataclasses.replace(layer, ffn=None if i == 0 else layer.ffn, residual=i == 1)
        for i, layer in enumerate(model.layers)
    )
    return dataclasses.replace(model, layers=layers)


def test_layers_without_ffn_or_residual_agree_between_field_and_enclosures():
    model = _without_ffn_or_residual(random_model(2, 2, 6, seed=4))
    assert model.layers[0].ffn is None and not model.layers[0].residual
    rng = np.random.default_rng(4)
    x, attn = rng.standard_normal((3, model.d)), rng.standard_normal((3, model.d))
    exact = Field(None)
    maps = model_maps(model, exact)
    for li in range(model.num_layers):
        out = finish_layer(maps, li, exact.mat(x), exact.mat(attn))
        box = enclose.finish_layer(model, li, enclose.point(x), enclose.point(attn))
        for t, v in enumerate(out.entries()):
            assert _inside(box, divmod(t, model.d), v), (li, t)
        assert box.rad.max() < 1e-12


def test_top_columns_on_many_random_shapes():
    rng = np.random.default_rng(11)
    for _ in range(600):
        n = int(rng.integers(2, 300))
        k = int(rng.integers(1, min(n, 40) + 1))
        width = int(rng.choice([1, 2, 4, 8]))
        a = rng.standard_normal((3, n))
        got = top_columns(a, k, width=width)
        for r in range(3):
            want = np.sort(a[r])[::-1][:k]
            assert np.array_equal(np.sort(a[r, got[r]])[::-1], want), (n, k, width)
