"""Lemma A4 of ``docs/parity-rate.md`` (averages with flips): its second-difference identity,
checked with sympy, and an exact family refuting the lemma as stated — every branch
sequence regular and the rows of bounded variation ((H1), (H2), constants independent of
N), yet the average's second-difference mass grows like N^{−1/2} instead of N^{−1}.
Used by :mod:`attncert.soft.parity_rate_checks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

__all__ = ["A4Family", "a4_identity_holds", "lemma_a4_counterexample"]


def _mass(s) -> Fraction:
    return sum((abs(s[i + 2] - 2 * s[i + 1] + s[i]) for i in range(len(s) - 2)), Fraction(0))


def a4_identity_holds(k_max: int = 6) -> bool:
    """Δ²S(k) = [D_{k+1}(k+2) − D_k(k+2)] + [D_k(k+2) − D_k(k+1)] + ΔD_k(k+1) +
    Σ_{m<k} Δ²D_m(k) for S(k) = Σ_{m<k} D_m(k), on symbolic arrays D_m(j) (sympy), every k ≤
    ``k_max``."""
    D = sp.IndexedBase("D")

    def Sk(kk):
        return sum((D[m, kk] for m in range(kk)), sp.Integer(0))

    for kk in range(k_max + 1):
        lhs = Sk(kk + 2) - 2 * Sk(kk + 1) + Sk(kk)
        rhs = (
            (D[kk + 1, kk + 2] - D[kk, kk + 2])
            + (D[kk, kk + 2] - D[kk, kk + 1])
            + (D[kk, kk + 2] - D[kk, kk + 1])  # ΔD_k(k+1), Δu(j) = u(j+1) − u(j)
            + sum((D[m, kk + 2] - 2 * D[m, kk + 1] + D[m, kk] for m in range(kk)), sp.Integer(0))
        )
        if sp.expand(lhs - rhs) != 0:
            return False
    return True


@dataclass(frozen=True)
class A4Family:
    """Lemma A4's hypotheses and conclusion on the family y_{p_m}^{(1)}(k) =
    W^{−1}(−1)^m ψ((m − k)/W), y^{(0)} ≡ 0, ψ(u) = (1 − u²)² on [−1, 1] (0 outside), Φ(q, y) =
    y, N = W², K = N/2 — all exact rationals. (H1): ``NV``, ``NM`` (N·max step and N·mass of
    every branch in k); (H2): ``B`` (largest Σ_m |y_{p_{m+1}}(k) − y_{p_m}(k)| over k);
    conclusion: ``NM_G`` = N·M(S/N) = M(S) must stay bounded, ``diagonal`` is the sum the
    proof bounds by 2·Lip(Φ)·B."""

    W: int
    N: int
    K: int
    NV: Fraction
    NM: Fraction
    B: Fraction
    NM_G: Fraction
    diagonal: Fraction


def _psi(u: Fraction) -> Fraction:
    return (1 - u * u) ** 2 if -1 <= u <= 1 else Fraction(0)


def lemma_a4_counterexample(W: int) -> A4Family:
    """The family of :class:`A4Family` at N = W², exactly."""
    N = W * W
    K = N // 2
    y = [
        [Fraction((-1) ** m, W) * _psi(Fraction(m - k, W)) for k in range(K + 1)] for m in range(K)
    ]
    NV = N * max(abs(y[m][k + 1] - y[m][k]) for m in range(K) for k in range(K))
    NM = N * max(_mass(y[m]) for m in range(K))
    B = max(sum(abs(y[m + 1][k] - y[m][k]) for m in range(K - 1)) for k in range(K + 1))
    S_ = [sum((y[m][k] for m in range(k)), Fraction(0)) for k in range(K + 1)]
    diag = sum(abs(y[k + 1][k + 2] - y[k][k + 2]) for k in range(K - 2))
    return A4Family(W, N, K, NV, NM, B, Fraction(_mass(S_)), diag)
