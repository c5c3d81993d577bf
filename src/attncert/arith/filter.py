"""Rigorous float64 filters for attention scores.

Given float64 enclosures of query and key vectors — midpoints q̃, k̃ and radii r_q, r_k
with |q − q̃| ≤ r_q and |k − k̃| ≤ r_k entrywise (:func:`attncert.arith.field.to_floats`)
— the float score s̃ = fl(q̃ · k̃) satisfies |s − s̃| ≤ E with

    E = (|q̃| + r_q)·r_k + r_q·|k̃| + γ_m·|q̃|·|k̃|,   γ_m = m·u/(1 − m·u), u = 2⁻⁵³,

m the vector length: the first two terms bound the propagation of the radii (expand
(q̃ + δq)·(k̃ + δk)), the last the rounding of a length-m dot product in any summation
order, with or without FMA (Higham, Accuracy and Stability, §3.1). E itself is
computed in float64 from non-negative terms and inflated by (1 + 2(m + 4)u) plus an
absolute 2⁻¹⁰⁰⁰·m for underflow, which dominates the rounding of its own evaluation.

A comparison between two scores of the same query is decided in float only when their
intervals [s̃ − E, s̃ + E] are disjoint; otherwise the caller decides it exactly, in
balls, or structurally (:mod:`attncert.arith.field`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

_U = 2.0**-53


@dataclass(frozen=True, eq=False)
class Enclosed:
    """Float64 midpoints and radii of a block of vectors (rows)."""

    mid: np.ndarray  # (R, m)
    rad: np.ndarray  # (R, m)

    @property
    def abs_mid(self) -> np.ndarray:
        return np.abs(self.mid)

    @cached_property
    def max_norms(self) -> tuple[float, float]:
        """(max over rows of ‖rad‖₂, max over rows of ‖mid‖₂), computed once per block
        (a key block is bounded against many query blocks)."""
        return (
            float(np.sqrt((self.rad * self.rad).sum(axis=1)).max(initial=0.0)),
            float(np.sqrt((self.mid * self.mid).sum(axis=1)).max(initial=0.0)),
        )

    def take(self, rows: np.ndarray | slice) -> Enclosed:
        return Enclosed(self.mid[rows], self.rad[rows])

    def take_cols(self, cols: np.ndarray | slice) -> Enclosed:
        return Enclosed(self.mid[:, cols], self.rad[:, cols])


def _gamma(m: int) -> float:
    return 1.01 * m * _U


def score_block(q: Enclosed, k: Enclosed) -> tuple[np.ndarray, np.ndarray]:
    """Float scores (Rq × Rk) of every query row against every key row, and an entrywise
    rigorous error bound E (module docstring)."""
    m = q.mid.shape[1]
    s = q.mid @ k.mid.T
    aq, ak = q.abs_mid, k.abs_mid
    e = (aq + q.rad) @ k.rad.T + q.rad @ ak.T + _gamma(m) * (aq @ ak.T)
    e = e * (1 + 2 * (m + 4) * _U) + 2.0**-1000 * max(m, 1)
    return s, e


def score_pairs(q_mid: np.ndarray, q_rad: np.ndarray, k: Enclosed) -> tuple[np.ndarray, np.ndarray]:
    """Scores of one query vector against key rows, with entrywise bounds."""
    s, e = score_block(Enclosed(q_mid[None, :], q_rad[None, :]), k)
    return s[0], e[0]


def row_bounds(q: Enclosed, k: Enclosed) -> np.ndarray:
    """One bound per query row, E_i ≥ the entrywise bound of :func:`score_block` against
    every key row (Cauchy–Schwarz on each term: ‖a‖·max_j‖b_j‖ ≥ a·b_j for a, b_j ≥ 0),
    inflated by 2⁻³⁰ relative for the rounding of the norms."""
    m = q.mid.shape[1]
    aq = q.abs_mid
    nk_rad, nk_mid = k.max_norms
    a = np.sqrt(((aq + q.rad) ** 2).sum(axis=1))
    b = np.sqrt((q.rad * q.rad).sum(axis=1))
    c = np.sqrt((aq * aq).sum(axis=1))
    e = a * nk_rad + b * nk_mid + _gamma(m) * c * nk_mid
    return e * (1 + 2.0**-30) + 2.0**-1000 * max(m, 1)


def top_columns(a: np.ndarray, k: int, width: int = 64) -> np.ndarray:
    """Column indices (rows × k, unordered) of the k largest entries of each row of a
    (ties broken arbitrarily, as :func:`numpy.argpartition` does).

    The k largest entries of a row lie in the k column blocks (of ``width`` columns)
    with the largest block maxima — a block holding one of them has a maximum at least
    that large, and only k − 1 larger entries exist — so the partition runs on the
    block maxima and then on k·width gathered columns, not on the whole row."""
    rows, n = a.shape
    if k >= n:
        return np.tile(np.arange(n), (rows, 1))
    if n <= 4 * k * width:
        return np.argpartition(-a, k - 1, axis=1)[:, :k]
    nb = n // width
    full = a[:, : nb * width].reshape(rows, nb, width).max(axis=2)
    if nb * width < n:
        full = np.concatenate([full, a[:, nb * width :].max(axis=1, keepdims=True)], axis=1)
    blocks = np.argpartition(-full, k - 1, axis=1)[:, :k]  # (rows, k)
    cols = (blocks[:, :, None] * width + np.arange(width)[None, None, :]).reshape(rows, -1)
    inside = cols < n
    vals = np.take_along_axis(a, np.minimum(cols, n - 1), axis=1)
    vals[~inside] = -np.inf
    pick = np.argpartition(-vals, k - 1, axis=1)[:, :k]
    return np.take_along_axis(cols, pick, axis=1)
