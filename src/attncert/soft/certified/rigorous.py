"""Outward-rounded float64 interval arithmetic in numpy, with documented error bounds.

Every function returns an enclosure of the *exact real* result for the exact real
inputs (float64 numbers are exact dyadic rationals); nothing here trusts a float to
be right, only to be correctly rounded:

* ``+ − × ÷`` and ``sqrt`` of two floats are correctly rounded (IEEE 754, round to
  nearest), so the exact result lies within half an ulp of the computed one and one
  :func:`np.nextafter` step outward (:func:`down`, :func:`up`) encloses it;
* a dot product of length k computed in any order (BLAS blocking, FMA) satisfies
  |fl(a·b) − a·b| ≤ γ_k |a|·|b| with γ_k = k·u/(1 − k·u), u = 2⁻⁵³ (Higham,
  *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §3.1 and eq. (3.5));
  and fl(|a|·|b|) ≥ (1 − γ_k)|a|·|b|, so |a|·|b| ≤ fl(|a|·|b|)(1 + 2γ_k).  Underflow
  adds at most k·2⁻¹⁰⁷⁵ per entry, covered by the absolute term :data:`ETA` = 2⁻¹⁰⁰⁰;
* sums of k non-negative floats likewise: Σ ≤ fl(Σ)(1 + 2γ_k) and Σ ≥ fl(Σ)(1 − 2γ_k);
* exp, erf and tanh are *never* taken from the C library: they come from tables of
  arb enclosures (python-flint, computed once) and monotonicity
  (:func:`exp_le0_bounds`, :func:`erf_bounds`); the relative loss is ≤ 2⁻¹⁵.

An overflow (a non-finite bound) raises :class:`Overflow`; callers report the
computation as undecided rather than guess.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from flint import arb, ctx

U = 2.0**-53
ETA = 2.0**-1000
INF = np.inf


class Overflow(ArithmeticError):
    """A bound is not finite: the computation cannot be decided in float64."""


def down(x):
    """The next float below ``x`` (a lower bound of any real that rounds to ``x``)."""
    return np.nextafter(x, -INF)


def up(x):
    """The next float above ``x`` (an upper bound of any real that rounds to ``x``)."""
    return np.nextafter(x, INF)


def gamma(k: int) -> float:
    """An upper bound on 2γ_k = 2k·u/(1 − k·u), plus a little for the rounding of the
    bound's own evaluation (k + 4 instead of k)."""
    k = k + 4
    return float(up(2.0 * k * U / (1.0 - k * U)))


def finite(*arrays: np.ndarray, what: str = "bound") -> None:
    """Raise :class:`Overflow` unless every entry of every array is finite."""
    for a in arrays:
        if not np.all(np.isfinite(a)):
            raise Overflow(f"a {what} overflowed float64")


def sum_up(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Upper bound of the exact sum of non-negative floats along ``axis``."""
    k = x.shape[axis]
    return up(np.sum(x, axis=axis) * (1.0 + gamma(k)) + ETA)


def sum_down(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Lower bound of the exact sum of non-negative floats along ``axis``."""
    k = x.shape[axis]
    return np.maximum(down(np.sum(x, axis=axis) * (1.0 - gamma(k))), 0.0)


def sum_upper(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Upper bound of the exact sum of floats of any sign along ``axis``."""
    return up(sum_up(np.maximum(x, 0.0), axis) - sum_down(np.maximum(-x, 0.0), axis))


def sum_lower(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Lower bound of the exact sum of floats of any sign along ``axis``."""
    return down(sum_down(np.maximum(x, 0.0), axis) - sum_up(np.maximum(-x, 0.0), axis))


def nonneg_matmul_up(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Upper bound of the exact product a @ b of non-negative float arrays."""
    k = a.shape[-1]
    return up((a @ b) * (1.0 + gamma(k)) + ETA)


def mid_rad(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A centre c (float) and radius r with [lo, hi] ⊆ [c − r, c + r] exactly."""
    c = 0.5 * lo + 0.5 * hi  # no overflow for finite lo, hi
    r = np.maximum(up(hi - c), up(c - lo))
    return c, np.maximum(r, 0.0)


def affine(
    lo: np.ndarray,
    hi: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    w_rad: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Enclosure of {W x + b : x ∈ [lo, hi]} (rows of ``lo``/``hi`` are boxes, W (out, in)).

    With ``w_rad`` the matrix itself is the interval [W − w_rad, W + w_rad]. Centre–radius
    form: W x = W c + W (x − c), |W (x − c)| ≤ |W| r; the float products carry the γ_k
    bounds of the module docstring."""
    c, r = mid_rad(lo, hi)
    k = w.shape[1]
    g = gamma(k)
    wa = np.abs(w)
    y = c @ w.T
    rad = (np.abs(c) @ wa.T) * g + (r @ wa.T) * (1.0 + g)
    if w_rad is not None:
        rad = rad + ((np.abs(c) + r) @ w_rad.T) * (1.0 + g)
    rad = up(rad * (1.0 + 4 * U) + ETA)
    if b is not None:
        lo_y, hi_y = down(y + b), up(y + b)
    else:
        lo_y, hi_y = y, y
    out_lo, out_hi = down(lo_y - rad), up(hi_y + rad)
    finite(out_lo, out_hi)
    return out_lo, out_hi


def matmul_interval(w1: np.ndarray, w2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centre and radius of the exact product W₁ W₂ of two float matrices."""
    p = w1 @ w2
    rad = up((np.abs(w1) @ np.abs(w2)) * gamma(w1.shape[1]) + ETA)
    return p, rad


def matmul_interval_right(
    center: np.ndarray, rad: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Centre and radius of [C ± R] W for a float matrix W."""
    p = center @ w
    wa = np.abs(w)
    r = (np.abs(center) @ wa) * gamma(w.shape[0]) + (rad @ wa) * (1.0 + gamma(w.shape[0]))
    return p, up(r * (1.0 + 4 * U) + ETA)


def add(alo, ahi, blo, bhi):
    """[a] + [b]."""
    return down(alo + blo), up(ahi + bhi)


def mul(alo, ahi, blo, bhi):
    """[a] × [b] (elementwise)."""
    cands_lo = [down(alo * blo), down(alo * bhi), down(ahi * blo), down(ahi * bhi)]
    cands_hi = [up(alo * blo), up(alo * bhi), up(ahi * blo), up(ahi * bhi)]
    return np.minimum.reduce(cands_lo), np.maximum.reduce(cands_hi)


def scale(alo, ahi, s_lo: float, s_hi: float):
    """[a] × [s_lo, s_hi] for a scalar interval."""
    return mul(alo, ahi, np.float64(s_lo), np.float64(s_hi))


def dot_boxes(
    qlo: np.ndarray, qhi: np.ndarray, klo: np.ndarray, khi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Enclosure of every q_j · k_w (q_j ∈ box j, k_w ∈ box w): an (Nq, Nk) pair of arrays.

    |q·k − q_c·k_c| ≤ |q_c|·k_r + q_r·|k_c| + q_r·k_r, plus γ_k|q_c|·|k_c| for the float
    product."""
    qc, qr = mid_rad(qlo, qhi)
    kc, kr = mid_rad(klo, khi)
    k = qc.shape[-1]
    g = gamma(k)
    y = qc @ kc.T
    aq, ak = np.abs(qc), np.abs(kc)
    rad = (aq @ ak.T) * g + (aq @ kr.T + qr @ ak.T + qr @ kr.T) * (1.0 + g)
    rad = up(rad * (1.0 + 4 * U) + ETA)
    lo, hi = down(y - rad), up(y + rad)
    finite(lo, hi, what="attention score")
    return lo, hi


def abs_max(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max |x| over [lo, hi] (exact)."""
    return np.maximum(np.abs(lo), np.abs(hi))


# ----------------------------------------------------------------------------- scalars via arb


def arb_lower(x: arb) -> float:
    """A float ≤ every point of the ball ``x``."""
    return float(down(float(x.lower())))


def arb_upper(x: arb) -> float:
    """A float ≥ every point of the ball ``x``."""
    return float(up(float(x.upper())))


def arb_of(x: float) -> arb:
    """The exact float ``x`` as an arb (a float is a dyadic rational)."""
    return arb(float(x))


def enclose(x: arb) -> tuple[float, float]:
    return arb_lower(x), arb_upper(x)


# ----------------------------------------------------------------------------- exp tables

_FINE_BITS = 16  # grid 2^-16
_COARSE_BITS = 6  # coarse step 2^-6
_EXP_RANGE = 64.0  # e^x for x ≤ −64 is enclosed in [0, e^−64]
_FINE_N = 1 << (_FINE_BITS - _COARSE_BITS)  # fine entries per coarse step


@cache
def _exp_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Enclosures of e^{−a·2⁻⁶} (a = 0…64·64) and e^{−b·2⁻¹⁶} (b = 0…1023), by arb."""
    old = ctx.prec
    ctx.prec = 80
    try:
        coarse = [arb(-a) / (1 << _COARSE_BITS) for a in range(int(_EXP_RANGE) * 64 + 2)]
        fine = [arb(-b) / (1 << _FINE_BITS) for b in range(_FINE_N)]
        c_lo = np.array([arb_lower(x.exp()) for x in coarse])
        c_hi = np.array([arb_upper(x.exp()) for x in coarse])
        f_lo = np.array([arb_lower(x.exp()) for x in fine])
        f_hi = np.array([arb_upper(x.exp()) for x in fine])
    finally:
        ctx.prec = old
    for t in (c_lo, c_hi, f_lo, f_hi):
        t.setflags(write=False)
    return c_lo, c_hi, f_lo, f_hi


def _exp_grid(k: np.ndarray, upper: bool) -> np.ndarray:
    """Enclosure endpoint of e^{−k·2⁻¹⁶} for integer-valued float arrays k ≥ 0."""
    c_lo, c_hi, f_lo, f_hi = _exp_tables()
    ki = k.astype(np.int64)
    a, b = ki >> (_FINE_BITS - _COARSE_BITS), ki & (_FINE_N - 1)
    if upper:
        return up(c_hi[a] * f_hi[b])
    return down(c_lo[a] * f_lo[b])


def exp_le0_bounds(x_lo: np.ndarray, x_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Enclosure [e^{x_lo}, e^{x_hi}] of e^x for x ∈ [x_lo, x_hi] ⊆ (−∞, 0].

    With g = 2⁻¹⁶ and k = ⌊−x·2¹⁶⌋ (exact in float64), x ∈ [−(k+1)g, −kg], so by
    monotonicity e^{−(k+1)g} ≤ e^x ≤ e^{−kg}; the grid values are products of two
    arb-enclosed table entries (e^{−a·2⁻⁶}·e^{−b·2⁻¹⁶}), rounded outward. Arguments
    below −64 get the enclosure [0, e^{−64}]."""
    if np.any(x_hi > 0):
        raise ValueError("exp_le0_bounds needs non-positive arguments")
    limit = _EXP_RANGE * (1 << _FINE_BITS)
    with np.errstate(over="ignore"):  # a huge argument becomes inf, then the table's end
        k_hi = np.minimum(np.floor(-x_hi * (1 << _FINE_BITS)), limit)  # for the upper bound
        k_lo = np.floor(-x_lo * (1 << _FINE_BITS)) + 1.0  # for the lower bound
    e_hi = _exp_grid(k_hi, upper=True)
    far = k_lo > limit
    e_lo = _exp_grid(np.minimum(k_lo, limit), upper=False)
    e_lo = np.where(far, 0.0, np.maximum(e_lo, 0.0))
    return e_lo, np.minimum(e_hi, 1.0)


# ----------------------------------------------------------------------------- erf table

_ERF_BITS = 12  # grid 2^-12
_ERF_MAX = 6.0  # 1 − erf(6) < 2.2e-17


@cache
def _erf_table() -> tuple[np.ndarray, np.ndarray]:
    """Enclosures of erf(k·2⁻¹²), k = 0 … 6·2¹² (arb)."""
    old = ctx.prec
    ctx.prec = 80
    try:
        pts = [arb(k) / (1 << _ERF_BITS) for k in range(int(_ERF_MAX * (1 << _ERF_BITS)) + 2)]
        lo = np.array([arb_lower(p.erf()) for p in pts])
        hi = np.array([arb_upper(p.erf()) for p in pts])
    finally:
        ctx.prec = old
    return lo, hi


def erf_bounds(x_lo: np.ndarray, x_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Enclosure of erf over [x_lo, x_hi] (erf is increasing and odd): grid points around
    the endpoints (step 2⁻¹²); |x| ≥ 6 gives [1 − 2⁻⁵², 1] (1 − erf(6) < 2.2·10⁻¹⁷)."""
    t_lo, t_hi = _erf_table()
    top = float(_ERF_MAX * (1 << _ERF_BITS))
    tail = float(down(1.0 - 2.0**-52))

    def lower(x):  # erf(x) ≥ this
        s = x * (1 << _ERF_BITS)
        pos = x >= 0
        k_pos = np.clip(np.floor(s), 0, top)  # erf(x) ≥ erf(k g) for x ≥ k g ≥ 0
        k_neg = np.clip(np.ceil(-s), 0, top + 1)  # x ≥ −k g ⇒ erf(x) ≥ −erf(k g)
        v_pos = np.where(s >= top, tail, t_lo[k_pos.astype(np.int64)])
        v_neg = np.where(-s > top, -1.0, -t_hi[k_neg.astype(np.int64)])
        return np.where(pos, v_pos, v_neg)

    def upper(x):  # erf(x) ≤ this
        return -lower(-x)

    return np.clip(lower(x_lo), -1.0, 1.0), np.clip(upper(x_hi), -1.0, 1.0)  # |erf| ≤ 1


def sqrt_bounds(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Enclosure of √x over [lo, hi] ⊆ [0, ∞) (IEEE sqrt is correctly rounded)."""
    return np.maximum(down(np.sqrt(np.maximum(lo, 0.0))), 0.0), up(np.sqrt(hi))


def log1p_exp_neg_half_lower(b: float) -> float:
    """A float ≤ log(1 + e^{−b/2}) (the cross-entropy floor of Theorem 6 for bound b)."""
    old = ctx.prec
    ctx.prec = 200
    try:
        return max(arb_lower((1 + (-arb_of(b) / 2).exp()).log()), 0.0)
    finally:
        ctx.prec = old


LOG2_UPPER = float(up(math.log(2.0)))


def rotation_table(rot, n_tok: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(cos_lo, cos_hi, sin_lo, sin_hi), each (n_tok, dim/2): enclosures of cos and sin of
    RoPE's angles (t/scale)·base^(−2k/dim), t < n_tok, computed in arb at 128 bits (the
    base, scale and dim are exact floats / integers)."""
    return _rotation_table(float(rot.base), int(rot.dim), float(rot.scale), int(n_tok))


@cache
def _rotation_table(base: float, dim: int, scale: float, n_tok: int):
    h = dim // 2
    out = np.empty((4, n_tok, h))
    with ctx.workprec(128):
        omega = [arb(base) ** (arb(-2 * k) / dim) / arb(scale) for k in range(h)]
        for t in range(n_tok):
            for k in range(h):
                theta = omega[k] * t
                c, s = theta.cos(), theta.sin()
                out[0, t, k], out[1, t, k] = enclose(c)
                out[2, t, k], out[3, t, k] = enclose(s)
    out[0], out[2] = np.maximum(out[0], -1.0), np.maximum(out[2], -1.0)  # |cos|, |sin| ≤ 1
    out[1], out[3] = np.minimum(out[1], 1.0), np.minimum(out[3], 1.0)
    out.setflags(write=False)
    return out[0], out[1], out[2], out[3]
