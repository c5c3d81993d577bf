"""The affine forms of the soft kernel (attncert.kernel.soft.affine.forms) against brute force: for
every choice of the free positions, corners of the private error symbols and signs of the
remainders, the exact image (mpmath, 200 bits) of the value a form stands for lies in the
form the kernel computes — at the same choices and private symbols, the new symbols and
the new remainder at their worst (issue 25's mutation analysis: LayerNorm weights ≠ 1,
forms without private symbols)."""

from __future__ import annotations

import itertools

import mpmath
import numpy as np
import pytest

from attncert.kernel.soft.affine import forms as A
from attncert.model.spec import LayerNorm

PREC = 200


def _form(rng, rows: int, k: int, m: int, a: int, e: int, scale: float) -> A.Form:
    return A.Form(
        rng.standard_normal((rows, k)) * scale,
        rng.standard_normal((rows, k, m, a)) * scale * 0.4,
        rng.standard_normal((rows, k, e)) * scale * 0.3,
        np.abs(rng.standard_normal((rows, k))) * scale * 0.05,
    )


def _mp(x) -> mpmath.mpf:
    return mpmath.mpf(float(x))


def _points(f: A.Form, rng):
    """(x − x̄ (m, A), ε (e,), signs (R, k)) over every choice and ε corner."""
    _, _, m, a = f.G.shape
    e = f.E.shape[2]
    xbar = mpmath.mpf(1) / (a + 1)
    for choice in itertools.product(range(a + 1), repeat=m):
        x = [[(1 if choice[t] == o + 1 else 0) - xbar for o in range(a)] for t in range(m)]
        for eps in itertools.product((-1, 1), repeat=e):
            yield x, eps, rng.choice((-1.0, 0.0, 1.0), size=f.c.shape)


def _value(f: A.Form, row: int, j: int, x, eps, extra: int = 0) -> mpmath.mpf:
    """c + G·(x − x̄) + E[:e]·ε at row, coordinate j (extra: E's trailing new symbols
    left out)."""
    _, _, m, a = f.G.shape
    v = _mp(f.c[row, j])
    v += mpmath.fsum(_mp(f.G[row, j, t, o]) * x[t][o] for t in range(m) for o in range(a))
    e = f.E.shape[2] - extra
    v += mpmath.fsum(_mp(f.E[row, j, s]) * eps[s] for s in range(e))
    return v


def _check(f: A.Form, out: A.Form, exact, rng) -> None:
    """exact(row values) → images; each within out's form at the same x, ε."""
    e_in = f.E.shape[2]
    new = out.E.shape[2] - e_in
    assert new >= 0
    rows, k = f.c.shape
    with mpmath.workprec(PREC):
        for x, eps, signs in _points(f, rng):
            for row in range(rows):
                v = [
                    _value(f, row, j, x, eps) + _mp(signs[row, j]) * _mp(f.r[row, j])
                    for j in range(k)
                ]
                for j, y in enumerate(exact(v)):
                    centre = _value(out, row, j, x, eps, extra=new)
                    slack = _mp(out.r[row, j]) + mpmath.fsum(
                        abs(_mp(out.E[row, j, s])) for s in range(e_in, e_in + new)
                    )
                    assert abs(y - centre) <= slack, (row, j, float(y - centre), float(slack))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("private", [2, 1, 0])
def test_an_affine_map_contains_every_image(seed, private):
    rng = np.random.default_rng(seed)
    f = _form(rng, 2, 4, 2, 2, private, scale=10.0 ** rng.integers(-2, 3))
    w = rng.standard_normal((3, 4)) * 3
    b = rng.standard_normal(3)
    out = A.affine_map(f, w, b)
    _check(
        f,
        out,
        lambda v: [
            mpmath.fsum(_mp(w[i, j]) * v[j] for j in range(4)) + _mp(b[i]) for i in range(3)
        ],
        rng,
    )


@pytest.mark.parametrize("seed", range(4))
def test_layer_norm_with_weights_other_than_1_contains_every_image(seed):
    rng = np.random.default_rng(10 + seed)
    d = 4
    f = _form(rng, 2, d, 2, 2, 2, scale=1.0)
    f = A.Form(f.c + rng.standard_normal((2, d)) * 3, f.G, f.E, f.r)  # a spread-out centre
    gamma = rng.uniform(0.3, 3.0, d) * rng.choice((-1.0, 1.0), d)
    beta = rng.standard_normal(d)
    norm = LayerNorm(gamma, beta, 1e-5)
    out = A.layer_norm(f, norm)

    def exact(v):
        mu = mpmath.fsum(v) / d
        var = mpmath.fsum((t - mu) ** 2 for t in v) / d
        s = 1 / mpmath.sqrt(var + _mp(1e-5))
        return [_mp(gamma[j]) * (v[j] - mu) * s + _mp(beta[j]) for j in range(d)]

    _check(f, out, exact, rng)


def _gelu(x):
    return x / 2 * (1 + mpmath.erf(x / mpmath.sqrt(2)))


def _gelu_tanh(x):
    return (
        x / 2 * (1 + mpmath.tanh(mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf("0.044715") * x**3)))
    )


@pytest.mark.parametrize(
    ("kind", "g"), [("relu", lambda x: max(x, 0)), ("gelu", _gelu), ("gelu_tanh", _gelu_tanh)]
)
def test_an_activation_contains_every_image(kind, g):
    rng = np.random.default_rng(3)
    f = _form(rng, 2, 3, 2, 1, 2, scale=1.5)
    out = A.activation(f, kind)
    _check(f, out, lambda v: [g(t) for t in v], rng)


@pytest.mark.parametrize(("k", "a", "e"), [(1, 2, 1), (3, 1, 1), (3, 2, 0), (1, 1, 2)])
def test_bounds_contain_every_value_of_the_form(k, a, e):
    """bounds(f): every value c + G·(x − x̄) + E·ε ± r, over every choice and corner, lies
    in [lo, hi] — one row per coordinate, one or two alternatives, one private symbol."""
    rng = np.random.default_rng(k * 10 + a + e)
    f = _form(rng, 2, k, 3, a, e, scale=2.0)
    lo, hi = A.bounds(f)
    with mpmath.workprec(PREC):
        for x, eps, signs in _points(f, rng):
            for row, j in itertools.product(range(2), range(k)):
                v = _value(f, row, j, x, eps) + _mp(signs[row, j]) * _mp(f.r[row, j])
                assert _mp(lo[row, j]) <= v <= _mp(hi[row, j]), (row, j)
    # and they are attained to within the remainder's and the rounding's width
    assert np.all(hi - lo <= 2 * (A.dev(f) + 1e-12))


@pytest.mark.parametrize(("a", "seed"), [(1, 0), (2, 1), (1, 2)])
def test_mixing_key_rows_is_the_sum_over_every_completion(a, seed):
    """affine_rows.mix: the form of Σ over key positions of the row each completion puts
    there (the base row at a fixed position; at a free one the row of its chosen symbol),
    against that sum computed for every choice of the free positions (no private symbols
    here; each row's form does not depend on its own position's choice)."""
    from attncert.kernel.soft.affine.rows import mix

    rng = np.random.default_rng(seed)
    n, k, free = 4, 2, [1, 3]  # positions 1 and 3 free, m = 2
    m = len(free)
    rows = n + m * a  # the base rows 0..3, then the alternatives' rows
    c = rng.standard_normal((rows, k)) * 2
    g = rng.standard_normal((rows, k, m, a))
    alt = np.array([[n + p * a + o for o in range(a)] for p in range(m)])
    for p, pos in enumerate(free):
        g[[pos, *alt[p]], :, p, :] = 0.0  # a row never depends on its own position's choice
    e = np.zeros((rows, k, 0))
    rem = np.abs(rng.standard_normal((rows, k))) * 0.01
    kr = np.arange(n)
    cs, gs, es, rs = mix(c, g, e, rem, kr, np.arange(m), np.array(free), alt)
    assert es.shape[-1] == 0
    xbar = mpmath.mpf(1) / (a + 1)
    with mpmath.workprec(PREC):
        for choice in itertools.product(range(a + 1), repeat=m):
            x = [[(1 if choice[p] == o + 1 else 0) - xbar for o in range(a)] for p in range(m)]
            picked = list(range(n))
            for p, pos in enumerate(free):
                if choice[p]:
                    picked[pos] = alt[p, choice[p] - 1]
            for j in range(k):
                total = mpmath.fsum(
                    _mp(c[r, j])
                    + mpmath.fsum(_mp(g[r, j, t, o]) * x[t][o] for t in range(m) for o in range(a))
                    for r in picked
                )
                width = mpmath.fsum(_mp(rem[r, j]) for r in picked)
                form = _mp(cs[j]) + mpmath.fsum(
                    _mp(gs[j, t, o]) * x[t][o] for t in range(m) for o in range(a)
                )
                assert abs(total - form) + width <= _mp(rs[j]), (choice, j)


def test_a_base_string_that_is_not_a_completion_is_refused_with_its_position():
    """The soft certificate's restriction.base must complete ρ: the refusal (the reason
    the checker gives for that tampered field) names the position and both symbols."""
    from attncert.errors import InputError
    from attncert.kernel.soft.affine.rows import make_rows
    from attncert.model.zoo import zoo_model

    model = zoo_model("soft_parity_lm")
    rho = "01*1*0"
    for base, message, expected in (
        ("011111", "base symbol '1' at position 6 differs from ρ's '0'", "a completion of ρ"),
        ("0101", "the base string has length 4, the restriction 6", "a completion of ρ"),
        ("010120", "base symbol '2' at position 5", "symbols of Σ"),
    ):
        with pytest.raises(InputError) as err:
            make_rows(model, rho, base)
        assert (err.value.message, err.value.expected) == (message, expected)


@pytest.mark.parametrize("seed", range(4))
def test_a_ratio_form_contains_every_quotient(seed):
    """affine_rows.ratio: the form of y = N/D (N, D forms of a softmax numerator and a
    denominator that moves by up to ~half its centre) contains N/D for every choice of the
    free positions and every corner of N's and D's remainders (200-bit quotients), with a
    valid but loose hull so that the form, not the hull, is used."""
    from attncert.kernel.soft.affine.rows import ratio

    rng = np.random.default_rng(seed)
    k, m, a = 2, 2, 1
    nc = rng.standard_normal((1, k))
    ng = rng.standard_normal((1, k, m, a)) * rng.uniform(0.1, 2)
    nr = np.abs(rng.standard_normal((1, k))) * 0.01
    dc = np.array([rng.uniform(1, 3)])
    dg = rng.standard_normal((1, m, a)) * rng.uniform(0.1, 1.2) * dc[0] / 2
    dr = np.array([0.01])
    xbar = mpmath.mpf(1) / (a + 1)
    quotients = []
    with mpmath.workprec(PREC):
        for choice in itertools.product(range(a + 1), repeat=m):
            x = [[(1 if choice[t] == o + 1 else 0) - xbar for o in range(a)] for t in range(m)]
            d0 = _mp(dc[0]) + mpmath.fsum(_mp(dg[0, t, 0]) * x[t][0] for t in range(m))
            for sd, sn, j in itertools.product((-1, 1), (-1, 1), range(k)):
                den = d0 + sd * _mp(dr[0])
                assert den > 0
                num = _mp(nc[0, j]) + mpmath.fsum(_mp(ng[0, j, t, 0]) * x[t][0] for t in range(m))
                quotients.append((x, j, (num + sn * _mp(nr[0, j])) / den))
        lo = min(float(q) for _, _, q in quotients)
        hi = max(float(q) for _, _, q in quotients)
        pad = 5 * (hi - lo) + 1
        y0, gl, el, rl, err, boxed = ratio(
            (nc, ng, np.zeros((1, k, 0)), nr),
            (dc, dg, np.zeros((1, 0)), dr),
            np.full((1, k), lo - pad),
            np.full((1, k), hi + pad),
        )
        assert boxed == 0 and el.shape[-1] == 0
        for x, j, q in quotients:
            form = _mp(y0[0, j]) + mpmath.fsum(_mp(gl[0, j, t, 0]) * x[t][0] for t in range(m))
            assert abs(q - form) <= _mp(rl[0, j]) + _mp(err[0, j]), (x, j)
