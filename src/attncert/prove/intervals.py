"""Rigorous numerics (python-flint ``arb`` balls: outward rounding, certified exp/log).

Step (c) of the decomposed proof: a *gap staircase* (proved for one attention row) and
the inverse temperature β(N) give an upper bound ε on |soft output − hard output|
(Yang et al. Lemma 6 generalised): with hard winner group G*, every other key j has
softmax weight ≤ exp(−β(g_j − 2η)) / |G*| where g_j is its score gap and η bounds the
score perturbation caused by approximate inputs, so

    |Σ_j w_j v_j − v̄_{G*}| ≤ Σ_{j ∉ G*} exp(−β(g_j − 2η)) · |v_j − v̄_{G*}| / |G*|.

A :class:`Staircase` states: every competitor has gap ≥ γ₁; at most c_l competitors have
gap < γ_{l+1} and their value spread is ≤ D_l; c_L bounds all competitors. Then the
sum is at most Σ_l (c_l − c_{l−1}) · W̃_l with W̃_l = max_{l' ≥ l} min(1, e^{−β(γ_l' − 2η)})·D_l'
(Abel summation). Every number here is exact (fmpq) or an arb ball; the result is
returned as an exact rational upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from flint import arb, fmpq

from attncert.model.spec import Temperature

__implements__ = ("Yang Lemma 6",)

TINY_Q = fmpq(1, 2**120)
TINY = arb(TINY_Q)


def arb_q(x: fmpq | int) -> arb:
    x = fmpq(x)
    return arb(x)


def beta_arb(t: Temperature | None, big_n: int) -> arb | None:
    """β(N) = coef·N^p·log(N)^q as a ball (None for hard attention: β = ∞)."""
    if t is None:
        return None
    b = arb_q(_fq(t.coef))
    if t.n_power:
        p = float(t.n_power)
        b *= arb(big_n) ** int(p) if p.is_integer() else arb(big_n) ** arb_q(_fq(p))
    if t.log_power:
        lg = arb(big_n).log()
        p = float(t.log_power)
        b *= lg ** int(p) if p.is_integer() else lg ** arb_q(_fq(p))
    return b


def _fq(x: float) -> fmpq:
    a, b = float(x).as_integer_ratio()
    return fmpq(a, b)


def upper_q(x: arb, bits: int = 48) -> fmpq:
    """An exact rational ≥ every point of the ball, rounded up to a multiple of
    2^−bits·2^e (short numbers for SMT)."""
    up = x.upper()
    if up < TINY:  # far below anything that matters: a short, valid upper bound
        return TINY_Q
    m, e = up.man_exp()
    v = fmpq(int(m)) * (fmpq(2) ** int(e) if e >= 0 else fmpq(1, 2 ** int(-e)))
    if v == 0:
        return v
    # round up to a dyadic with ≤ bits significant bits
    k = max(int(abs(v).p).bit_length() - int(abs(v).q).bit_length() - bits, -1100)
    scale = fmpq(2) ** k if k >= 0 else fmpq(1, 2**-k)
    q = v / scale
    ceil = (int(q.p) + int(q.q) - 1) // int(q.q) if q > 0 else -((-int(q.p)) // int(q.q))
    return fmpq(ceil) * scale


@dataclass(frozen=True)
class Staircase:
    """Gap profile of one attention row (see module docstring).

    ``gammas[l]`` γ_{l+1} (ascending, γ₁ = the minimal gap), ``counts[l]`` bound on the
    number of competitors with gap < gammas[l+1] (the last: all competitors),
    ``spreads[l]`` value spread bound for those competitors, ``group`` = |G*|."""

    gammas: tuple[fmpq, ...]
    counts: tuple[int, ...]
    spreads: tuple[fmpq, ...]
    group: int = 1

    @property
    def min_gap(self) -> fmpq | None:
        return self.gammas[0] if self.gammas else None


def staircase_bound(st: Staircase, beta: arb | None, eta: fmpq | int = 0) -> fmpq:
    """Exact rational upper bound on the attention error of a row (0 for hard attention)."""
    if not st.gammas or beta is None:
        return fmpq(0)
    eta = fmpq(eta)
    weights: list[arb] = []
    for g, d in zip(st.gammas, st.spreads, strict=True):
        expo = beta * arb_q(g - 2 * eta)
        w = (-expo).exp()
        if not (w < 1):
            w = arb(1)
        weights.append(w * arb_q(d))
    # suffix maxima (upper bounds) make the weights nonincreasing
    sup: list[arb] = [arb(0)] * len(weights)
    run = arb(0)
    for k in range(len(weights) - 1, -1, -1):
        run = _max_upper(run, weights[k])
        sup[k] = run
    total = arb(0)
    prev = 0
    for c, w in zip(st.counts, sup, strict=True):
        c = max(c, prev)
        total += (c - prev) * w
        prev = c
    return upper_q(total / st.group)


def _max_upper(a: arb, b: arb) -> arb:
    """A ball containing [0, max(upper(a), upper(b))] upper endpoint (used as an upper bound)."""
    ua, ub = a.upper(), b.upper()
    return ua if ua >= ub else ub
