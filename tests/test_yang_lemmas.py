"""Yang, Strobl, Chiang, Angluin Lemmas 6–8 as implemented: the softmax-vs-hardmax error
under a gap (the generalised Lemma 6 of attncert.prove.intervals), the table-lookup gap
(Lemma 7, attncert.compile.bounds.lookup_gap) and the tie-breaking gaps (Lemma 8, the score
profiles of the ◁ heads) — each checked exactly or with arb balls on every small case."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from flint import arb, fmpq

from attncert.compile.bounds import lookup_gap
from attncert.paper import implements
from attncert.prove.intervals import Staircase, staircase_bound


def _q(x: Fraction) -> fmpq:
    return fmpq(x.numerator, x.denominator)


@implements("Yang Lemma 6")
def test_lemma6_softmax_error_is_bounded_by_the_gaps():
    """Random rows: a winner group G* of equal top scores, every other key j with gap g_j and
    value v_j. |Σ softmax(βs)_j v_j − mean_{G*} v| ≤ the staircase bound, decided with arb."""
    from flint import ctx

    rng = random.Random(0)
    old, ctx.prec = ctx.prec, 256  # resolve errors of order e^{−βg} exactly enough
    try:
        _lemma6_rows(rng)
    finally:
        ctx.prec = old


def _lemma6_rows(rng: random.Random) -> None:
    for _ in range(300):
        m = rng.randint(2, 8)
        group = rng.randint(1, m - 1)
        top = Fraction(rng.randint(-3, 3))
        gaps = [Fraction(rng.randint(1, 12), rng.randint(1, 4)) for _ in range(m - group)]
        scores = [top] * group + [top - g for g in gaps]
        values = [Fraction(rng.randint(-8, 8), 4) for _ in range(m)]
        beta = arb(rng.choice([1, 2, 5, 20]))
        e = [(beta * arb(_q(s - top))).exp() for s in scores]
        soft = sum((w * arb(_q(v)) for w, v in zip(e, values, strict=True)), arb(0)) / sum(
            e, arb(0)
        )
        hard = sum(values[:group], Fraction(0)) / group
        err = abs(soft - arb(_q(hard)))
        order = sorted(range(m - group), key=lambda t: gaps[t])
        gammas, counts, spreads = [], [], []
        for t in order:
            gammas.append(_q(gaps[t]))
            counts.append(len(gammas))
            spreads.append(_q(max(abs(values[group + u] - hard) for u in order[len(gammas) - 1 :])))
        bound = staircase_bound(
            Staircase(tuple(gammas), tuple(counts), tuple(spreads), group), beta
        )
        assert err.upper() <= arb(bound), (scores, values)


@pytest.mark.slow
@implements("Yang Lemma 7")
def test_lemma7_lookup_gap_exhaustively():
    """Scores (2/j − t/j²)/m′ of the bounded table lookup peak at j = t with gap
    (j − t)²/(m′ t j²) ≥ 1/((N−1)N(N+1)²), the value lookup_gap(N) returns — every N ≤ 24,
    target t ≤ N, key j ≤ N + 1 and m′ ≤ N − 1 visible keys, in exact rationals."""
    for N in range(2, 25):
        floor = Fraction(1, (N - 1) * N * (N + 1) ** 2)
        assert lookup_gap(np.array([float(N)]))[0] == float(floor)
        for t in range(1, N + 1):
            for mp in range(1, N):
                s = {j: (Fraction(2, j) - Fraction(t, j * j)) / mp for j in range(1, N + 2)}
                assert max(s, key=s.get) == t
                gap = min(s[t] - s[j] for j in s if j != t)
                assert gap >= floor


@implements("Yang Lemma 8")
def test_lemma8_tie_breaking_gaps_exhaustively():
    """◁ heads (Theorems 12a, 13c): scores (−1)^j + j/N and (−1)^j − 1/j over j < i pick the
    rightmost even j < i uniquely; same parity at distance 2k has gap 2k/N (resp. ≥ 2k/N²),
    the other parity ≥ 2 − 1/N (resp. ≥ 1) — the profiles prev_parity_bound and
    prev_parity_causal_bound sum over, checked exactly for every i ≤ N ≤ 30."""
    for N in range(2, 31):
        for i in range(3, N + 1):
            keys = range(1, i)
            star = max(j for j in keys if j % 2 == 0)
            for score, same, other in _profiles(N):
                s = {j: score(j) for j in keys}
                assert max(s, key=s.get) == star and sum(v == s[star] for v in s.values()) == 1
                for j in keys:
                    if j == star:
                        continue
                    gap = s[star] - s[j]
                    if j % 2 == 0:
                        assert gap >= same((star - j) // 2)
                    else:
                        assert gap >= other


def _profiles(N: int):
    return (
        (
            lambda j: (-1) ** j + Fraction(j, N),
            lambda k: Fraction(2 * k, N),
            2 - Fraction(1, N),
        ),
        (
            lambda j: (-1) ** j - Fraction(1, j),
            lambda k: Fraction(2 * k, N * N),
            Fraction(1),
        ),
    )
