"""Attention error bounds of the compiled gadgets and the temperatures they need.

Every non-uniform head of a compiled model simulates a hard-attention pattern
with a known *score profile*: the intended position j* beats every other
visible position j by a gap g_j ≥ 0, and the soft attention mass off j* is at
most Σ_{j≠j*} exp(−β g_j) (Yang et al. Lemma 6; with gaps growing along a
distance d the sum is a geometric series, as in Lemma 7 / Lemma 8). Each
function below is such an upper bound as a function of N and β, vectorised
over N (numpy arrays). :func:`fit_coef` picks the smallest coefficient c of a
temperature β(N) = c·N^p·log(N)^q that keeps the bound below its target for
all 2 ≤ N ≤ ``n_check``; beyond that the bounds decrease (checked: every bound
is a sum of terms exp(−c·h(N)) with h increasing for the fitted shapes).

These bounds choose temperatures; they are not the proof. ``attncert prove``
re-derives error bounds with interval arithmetic from the recorded gaps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from attncert.model.spec import Temperature

__implements__ = (
    "Yang Lemma 6",
    "Yang Lemma 7",
    "Yang Lemma 8",
)

Bound = Callable[[np.ndarray, np.ndarray], np.ndarray]

N_CHECK = 4096


def temperature_record(t: Temperature, reason: str) -> dict[str, Any]:
    """The ``temperature`` entry of a head record: β(N) as data, as a sympy-parsable
    string in N, and the reason it was chosen."""
    return {**t.to_dict(), "beta": _beta_text(t), "reason": reason}


def _beta_text(t: Temperature) -> str:
    parts = [repr(t.coef)]
    if t.n_power:
        parts.append(f"N**{t.n_power:g}")
    if t.log_power:
        parts.append(f"log(N)**{t.log_power:g}")
    return "*".join(parts)


def geometric(r: np.ndarray) -> np.ndarray:
    """Σ_{k≥1} r^k = r/(1−r) (∞ when r ≥ 1)."""
    r = np.asarray(r, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(r < 1, r / (1 - r), np.inf)


def gauss_tail(kappa: float, weight_d: bool = False) -> float:
    """Σ_{d≥1} exp(−κ d²) (or Σ d·exp(−κ d²) with ``weight_d``), summed to convergence."""
    total = 0.0
    for d in range(1, 10_000):
        term = (d if weight_d else 1) * math.exp(-kappa * d * d)
        total += term
        if term < 1e-300 or (d > 3 and term < 1e-18 * total):
            break
    return total


def fit_coef(
    bound: Bound,
    target: Callable[[np.ndarray], np.ndarray] | float,
    n_power: float,
    log_power: float,
    *,
    n_check: int = N_CHECK,
    step: float = 0.125,
) -> float:
    """Smallest c (a multiple of ``step``) with bound(N, c·N^p·log(N)^q) ≤ target(N) for
    every 2 ≤ N ≤ n_check."""
    n = np.arange(2, n_check + 1, dtype=float)
    shape = n**n_power * np.log(n) ** log_power
    tgt = target(n) if callable(target) else np.full_like(n, float(target))

    def ok(c: float) -> bool:
        with np.errstate(over="ignore", under="ignore"):
            return bool(np.all(bound(n, c * shape) <= tgt))

    hi = 1.0
    while not ok(hi):
        hi *= 2
        if hi > 1e9:
            raise ValueError("no temperature coefficient satisfies the bound")
    lo = 0.0
    while hi - lo > step:
        mid = (lo + hi) / 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return math.ceil(hi / step) * step


# ----- score profiles of the gadgets (off-target attention mass) -----------------------


def prev_parity_bound(n: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Thm 12a heads: score (−1)^j ± j/N. Same parity at distance 2k: gap 2k/N; other
    parity: gap ≥ 2 − 1/N (≤ N of them)."""
    return geometric(np.exp(-2 * beta / n)) + n * np.exp(-beta * (2 - 1 / n))


def prev_parity_causal_bound(n: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Thm 13c heads: score (−1)^j − 1/j. Same parity at distance 2k: gap ≥ 2k/N²; other
    parity: gap ≥ 1."""
    return geometric(np.exp(-2 * beta / n**2)) + n * np.exp(-beta)


def since_bound(n: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Thm 15a heads: score χ_j ± j/(2N). Other χ-positions at distance d: gap d/(2N);
    non-χ positions: gap ≥ 1/2 (≤ N of them)."""
    return geometric(np.exp(-beta / (2 * n))) + n * np.exp(-beta / 2)


def since_causal_bound(n: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Thm 16a heads: score χ_j − 1/(2j). Other χ-positions at distance d: gap ≥ d/(2N²);
    non-χ positions: gap ≥ 1/2."""
    return geometric(np.exp(-beta / (2 * n**2))) + n * np.exp(-beta / 2)


def lookup_gap(n: np.ndarray) -> np.ndarray:
    """Minimal gap of the bounded table lookup (Lemma 7 style, reconstructed): scores
    (2/j − t/j²)/m' with m' ≤ N−1 visible keys, target t ≤ N: gap (j−t)²/(m' t j²) ≥
    1/((N−1)·N·(N+1)²)."""
    return 1.0 / ((n - 1) * n * (n + 1) ** 2)


def lookup_bound(n: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Bounded lookup: at most N−1 competitors, each with gap ≥ :func:`lookup_gap`."""
    return (n - 1) * np.exp(-beta * lookup_gap(n))


def sign_bound(delta: Callable[[np.ndarray], np.ndarray]) -> Bound:
    """Sign head: score x·(2[j=1]−1) with |x| ≥ δ(N): position 1 vs the rest, gap 2δ."""

    def bound(n: np.ndarray, beta: np.ndarray) -> np.ndarray:
        return (n - 1) * np.exp(-2 * beta * delta(n))

    return bound
