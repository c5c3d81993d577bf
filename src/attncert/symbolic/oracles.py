"""Finite exact computations that decide claims no sympy formula captures.

- :func:`chernoff_holds`: the exact binomial tail P(Bin(m, q) > t) (a rational) against a
  closed-form bound (decided with :func:`attncert.symbolic.rigorous.decide`).
- :func:`min_independence_number`: the least independence number of a graph on k vertices
  with maximum degree ≤ d, by exhaustive enumeration (k ≤ 5).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from fractions import Fraction
from functools import cache

import sympy as sp

from attncert.symbolic.rigorous import decide

__all__ = ["binomial_tail", "binomial_tail_exceeds", "min_independence_number"]

MAX_GRAPH_VERTICES = 5


def binomial_tail(m: int, q: Fraction, t: Fraction) -> Fraction:
    """P(X > t) for X ~ Bin(m, q), exactly."""
    total = Fraction(0)
    for x in range(m + 1):
        if x > t:
            total += math.comb(m, x) * q**x * (1 - q) ** (m - x)
    return total


def binomial_tail_exceeds(
    m: int, q: Fraction, t: Fraction, bound: sp.Expr, env: Mapping[str, object]
) -> bool | None:
    """Decide P(Bin(m, q) > t) ≤ ``bound`` (evaluated at ``env``); None if undecided."""
    if m > 2000:
        return None
    P = binomial_tail(m, q, t)
    return decide(sp.Rational(P.numerator, P.denominator) <= bound, env)


@cache
def _graphs(k: int) -> tuple[tuple[int, int], ...]:
    """(max degree, independence number) of every graph on k labelled vertices."""
    pairs = list(itertools.combinations(range(k), 2))
    out = []
    for mask in range(1 << len(pairs)):
        adj = [0] * k
        for b, (u, v) in enumerate(pairs):
            if mask >> b & 1:
                adj[u] |= 1 << v
                adj[v] |= 1 << u
        maxdeg = max(bin(a).count("1") for a in adj)
        alpha = 0
        for sub in range(1 << k):
            if all(not (adj[v] & sub) for v in range(k) if sub >> v & 1):
                alpha = max(alpha, bin(sub).count("1"))
        out.append((maxdeg, alpha))
    return tuple(out)


def min_independence_number(k: int, d: int) -> int | None:
    """min α(G) over graphs G on k vertices with Δ(G) ≤ d (exhaustive; None if k > 5)."""
    if k < 1 or k > MAX_GRAPH_VERTICES or d < 0:
        return None
    return min(alpha for maxdeg, alpha in _graphs(k) if maxdeg <= d)
