"""Rows of a restriction and sums over key positions, for the affine-form propagation
(trusted; see :mod:`attncert.kernel.soft.affine.bound`).

A row is a token position with the token it carries (one per fixed position, one per
symbol of a free one). :func:`mix` sums one term per key position — the base row, plus
each alternative's indicator times the difference of the centres — and :func:`ratio`
turns the forms of a softmax numerator and denominator into the form of their ratio by
the exact identity y = y₀ + (N − y₀D)/D₀ − (y − y₀)(D − D₀)/D₀.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncert.errors import InputError
from attncert.kernel.core import bounds as B
from attncert.kernel.soft.affine import forms as A
from attncert.model.spec import Model

__implements__ = ("Hahn Theorem 6",)

BUDGET = 4_000_000_000  # query rows · key rows · (columns + symbols) · d for one layer
_U = 2.0**-53
_TINY = 2.0**-1000


class Unsupported(ValueError):
    """The affine method does not apply to this model (or would take too long)."""


@dataclass(frozen=True, eq=False)
class Rows:
    """The rows of one restriction: token position and token of each row, the row that
    carries the base token at each position, and per free position (in column-group
    order) the rows of its alternatives."""

    n_tok: int
    pos: np.ndarray  # (R,)
    tok: np.ndarray  # (R,)
    base: np.ndarray  # (N,) row of the base token at each position
    free: np.ndarray  # (m,) free token positions
    alt: np.ndarray  # (m, A) rows of the alternatives of each free position
    group: np.ndarray  # (N,) column group of each position, −1 if fixed

    @property
    def m(self) -> int:
        return len(self.free)

    @property
    def a(self) -> int:
        return self.alt.shape[1]


def make_rows(model: Model, rho: str, base: str) -> Rows:
    """Rows of ``rho`` against the completion ``base`` (validated)."""
    if len(base) != len(rho):
        raise InputError(
            f"the base string has length {len(base)}, the restriction {len(rho)}",
            expected="a completion of ρ",
        )
    for p, (c, b) in enumerate(zip(rho, base, strict=True)):
        if c != "*" and c != b:
            raise InputError(
                f"base symbol {b!r} at position {p + 1} differs from ρ's {c!r}",
                expected="a completion of ρ",
            )
        if b not in model.token_index or b not in model.alphabet:
            raise InputError(f"base symbol {b!r} at position {p + 1}", expected="symbols of Σ")
    x0 = model.encode(base)
    off = model.input_offset()
    n_tok = len(x0)
    sym = [model.token_index[s] for s in model.alphabet]
    pos, tok, base_row, free, alt = [], [], [], [], []
    group = np.full(n_tok, -1, dtype=np.int64)
    for t in range(n_tok):
        is_free = off <= t < off + len(rho) and rho[t - off] == "*"
        base_row.append(len(pos))
        pos.append(t)
        tok.append(x0[t])
        if is_free:
            group[t] = len(free)
            free.append(t)
            others = []
            for o in sym:
                if o != x0[t]:
                    others.append(len(pos))
                    pos.append(t)
                    tok.append(o)
            alt.append(others)
    a = len(sym) - 1
    return Rows(
        n_tok,
        np.array(pos, dtype=np.int64),
        np.array(tok, dtype=np.int64),
        np.array(base_row, dtype=np.int64),
        np.array(free, dtype=np.int64),
        np.array(alt, dtype=np.int64).reshape(len(free), a),
        group,
    )


def keys(rows: Rows, vis: np.ndarray, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For query row ``i``: the base rows of its visible positions (its own row at its own
    position), the column groups of the visible free positions other than its own, and
    their alternatives' rows."""
    j = rows.pos[i]
    kr = rows.base.copy()
    kr[j] = i
    kr = kr[vis]
    gvis = vis[rows.free] & (rows.free != j) if rows.m else np.zeros(0, dtype=bool)
    groups = np.flatnonzero(gvis)
    return kr, groups, rows.alt[groups]


def ratio(n_f, d_f, hull_lo, hull_hi):
    """Forms of y = N/D for a batch of queries (module docstring, the ratio).

    ``n_f`` = (c (Q, k), G (Q, k, m, A), E (Q, k, e), r (Q, k)) bounds N, ``d_f`` = (c (Q,),
    G (Q, m, A), E (Q, e), r (Q,)) bounds D; the values lie in [hull_lo, hull_hi] (Q, k).
    Returns (c, G, E, r, err, boxed): E on the query rows' symbols, err (Q, k) the new
    private remainder, boxed the number of entries kept as hull boxes."""
    nc, ng, ne, nr = n_f
    dc, dg, de, dr = d_f
    if not np.all(dc > 0):
        raise B.Undecided("a softmax denominator is not certified positive")
    y0 = nc / dc[:, None]
    gl = (ng - y0[..., None, None] * dg[:, None]) / dc[:, None, None, None]
    el = (ne - y0[..., None] * de[:, None]) / dc[:, None, None]
    d_lo = B.dn(dc)[:, None]
    # rounding of y0 (one division) and of the coefficients (a product, a difference and
    # a division each), summed over the columns
    mass = B.up(
        B.up(A._gsum(ng) + A.edev(ne)) + B.up(np.abs(y0) * B.up(A._gsum(dg) + A.edev(de))[:, None])
    )
    rl = B.up(B.up(nr + B.up(np.abs(y0) * dr[:, None])) / d_lo)
    rl = B.up(B.up(rl + B.up(B.up(8 * _U * mass) / d_lo)) + B.up(2 * _U * np.abs(y0)))
    rl = B.up(rl + _TINY)
    dmax = B.up(B.up(B.up(A.gdev(dg) + A.edev(de)) + dr) / d_lo[:, 0])  # ≥ |D − D0|/D0
    lmax = B.up(B.up(A.gdev(gl) + A.edev(el)) + rl)
    hull = np.maximum(np.maximum(B.up(hull_hi - y0), B.up(y0 - hull_lo)), 0.0)
    y_dev = hull.copy()
    ok = dmax < 1.0
    if ok.any():
        bound = B.up(lmax / B.dn(1.0 - np.where(ok, dmax, 0.0))[:, None])
        y_dev = np.where(ok[:, None], np.minimum(y_dev, bound), y_dev)
    err = B.up(dmax[:, None] * y_dev)
    boxed = B.up(lmax + err) >= hull
    if boxed.any():
        gl = np.where(boxed[..., None, None], 0.0, gl)
        el = np.where(boxed[..., None], 0.0, el)
        rl = np.where(boxed, hull, rl)
        err = np.where(boxed, 0.0, err)
    B.finite(rl, err)
    return y0, gl, el, rl, err, int(boxed.sum())


def flat_sum(x: np.ndarray, keep: int) -> np.ndarray:
    """Σ of non-negative ``x`` over its axes beyond the first ``keep`` (upper)."""
    if x.ndim == keep:
        return x
    flat = x.reshape(*x.shape[:keep], -1)
    if flat.shape[-1] == 0:
        return np.zeros(x.shape[:keep])
    return B.psum_up(flat, axis=-1)


def sum_rows(c, g, e, rad):
    """Σ over the first axis of forms (c, G, E) with remainders ``rad``, the rounding of
    the float sums included (upper)."""
    k = c.shape[0]
    keep = c.ndim - 1
    cs, gs, es = c.sum(axis=0), g.sum(axis=0), e.sum(axis=0)
    mass = B.psum_up(np.abs(c), axis=0)
    if g.size:
        mass = B.up(mass + flat_sum(B.psum_up(np.abs(g), axis=0), keep))
    if e.size:
        mass = B.up(mass + flat_sum(B.psum_up(np.abs(e), axis=0), keep))
    r = B.up(B.psum_up(rad, axis=0) + B.up(B.g2(k) * mass))
    return cs, gs, es, r


def mix(c, g, e, rem, kr, cols, brow, alt):
    """Σ over key positions of one term each (module docstring): the rows ``kr`` (the
    base rows, the query's own row at its position) with forms (c, g, e) and remainders
    ``rem``; for each visible free position other than the query's — column group
    ``cols[p]``, base row ``brow[p]``, alternatives' rows ``alt[p]`` — the indicator of
    each alternative times the difference of the centres goes into its column, and the
    rest of the difference (the coefficients' difference and the alternative's
    remainder, beyond the base row's remainder already counted) into the remainder."""
    cs, gs, es, rs = sum_rows(c[kr], g[kr], e[kr], rem[kr])
    if len(cols) == 0:
        return cs, gs, es, rs
    worst = None
    xbar = 1.0 / (alt.shape[1] + 1)  # exact for |Σ| a power of two; else in the rounding
    shift = 0.0
    for o in range(alt.shape[1]):
        a = alt[:, o]
        diff = c[a] - c[brow]
        # [x_t = o]·diff = (x_{t,o} − x̄)·diff + x̄·diff: a column and a share of the centre
        gs[..., cols, o] += np.moveaxis(diff, 0, -1)
        shift = shift + diff.sum(axis=0) * xbar
        spread = B.up(A.gdev(g[a] - g[brow]) + A.edev(e[a] - e[brow]))
        here = B.up(B.up(spread + rem[a]) + B.up(2 * _U * np.abs(diff)))
        worst = here if worst is None else np.maximum(worst, here)
    extra = np.maximum(B.up(worst - rem[brow]), 0.0)
    # rounding of the centre's share x̄·Σ diff: ≤ g2(m·A + 2)·Σ|diff|
    gaps = np.abs(c[alt] - c[brow][:, None])
    gaps = gaps.reshape(-1, *gaps.shape[2:])
    rnd = B.up(B.g2(gaps.shape[0] + 2) * B.psum_up(gaps, axis=0))
    return cs + shift, gs, es, B.up(B.up(rs + B.psum_up(extra, axis=0)) + rnd)
