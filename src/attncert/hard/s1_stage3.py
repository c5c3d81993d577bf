"""Stage 3 of Hahn's supplement S1 on one instance: Definitions 19–20's events evaluated, the
probability bounds of Lemmas 21–22, the LLL conditions (31)–(32) of Lemma 23 at this
instance's c, H, k, n — with "outside the lemma's range" said plainly when k < K or n < N —
what a random restriction of Definition 19 achieves here, and Corollary 24.

Called by :func:`attncert.hard.s1_claims.layer_claims`; untrusted and informative (see there).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from attncert.hard.s1_types import LayerStages, measured
from attncert.hard.search.ranking import TupleRanking
from attncert.hard.stages import _k_depends
from attncert.hard.tables import Table
from attncert.symbolic.oracles import binomial_tail

__all__ = ["argmax_rows", "event_probability", "stage3_claims"]

SAMPLES = 200  # Definition 19 draws when the search was not the random back-end
MAX_EXACT_BITS = 10  # union of bits for the exact P(X) of one event
MAX_EXACT_TAIL = 4000  # free bits for the exact binomial tail of Lemma 21


def argmax_rows(tr: TupleRanking, m: int) -> tuple[int, ...]:
    key = next(key for key in tr.keys if key.position == m)
    best = max(key.row_scores)
    return tuple(r for r, s in enumerate(key.row_scores) if s == best)


def event_probability(
    tr: TupleRanking, tabs: Sequence[Table], k: int, q: Fraction, base: int
) -> Fraction | None:
    """P(X) under Definition 19: none of the tuple's k layer-0 heads has all its bits fixed to
    an assignment achieving the maximum attention value. Exact; None if too many bits."""
    heads = _k_depends(tr, k)
    bits = sorted({u for m in heads for u in tabs[m].deps})
    if len(bits) > MAX_EXACT_BITS:
        return None
    targets = [(tabs[m].deps, set(argmax_rows(tr, m))) for m in heads]
    p_sym, p_free = q / base, 1 - q
    total = Fraction(0)
    for combo in itertools.product(range(-1, base), repeat=len(bits)):
        val = dict(zip(bits, combo, strict=True))
        hit = False
        for deps, rows in targets:
            if all(val[u] >= 0 for u in deps):
                r = 0
                for u in deps:
                    r = r * base + val[u]
                if r in rows:
                    hit = True
                    break
        if not hit:
            total += math.prod((p_free if v < 0 else p_sym) for v in combo)
    return total


def _exp_le(value: Fraction, exponent: Fraction) -> bool | None:
    """value ≤ exp(exponent), decided with arb balls (None if undecided)."""
    import sympy as sp

    from attncert.symbolic.rigorous import decide

    return decide(
        sp.Rational(value.numerator, value.denominator)
        <= sp.exp(sp.Rational(exponent.numerator, exponent.denominator)),
        {},
    )


def _power(base: Fraction, exponent: Fraction) -> float:
    return float(base) ** float(exponent) if base > 0 else 0.0


def _sample_def19(events, tabs, free, base, q, delta, rng, draws) -> tuple[int, int, int]:
    """Definition 19 drawn ``draws`` times: (X₀ avoided, every X avoided, both)."""
    free = np.array(free, dtype=np.int64)
    bound = (1 + delta) * q * len(free)
    ok0 = okx = both = 0
    for _ in range(draws):
        fixed = rng.random(len(free)) < float(q)
        syms = rng.integers(0, base, size=len(free))
        at = np.flatnonzero(fixed)
        val = dict(zip(free[at].tolist(), syms[at].tolist(), strict=True))
        a0 = int(fixed.sum()) <= bound
        ax = True
        for heads in events:
            hit = False
            for deps, rows in heads:
                if all(u in val for u in deps):
                    r = 0
                    for u in deps:
                        r = r * base + val[u]
                    if r in rows:
                        hit = True
                        break
            if not hit:
                ax = False
                break
        ok0 += a0
        okx += ax
        both += a0 and ax
    return ok0, okx, both


def stage3_claims(
    st: LayerStages, add, *, c, C, Cp, H, base, uns2, tabs2, heads_of, nev, nb, f_supp, n_tok
) -> None:
    from attncert.symbolic.constants import lemma_constants
    from attncert.symbolic.params import lll_params

    k, eta, q, delta, n = st.k, st.eta, st.q, st.delta, st.rho0.n
    m = st.rho2.num_free
    try:
        lc = lemma_constants(lll_params(c, H, C, Cp, eta, q, delta), "supplement")
        K, N = lc.k, lc.N_eq11
    except Exception:  # pragma: no cover - parameters outside Lemma 4 (e.g. C′ ≥ C)
        K = N = None
    rng_note = "" if K is None else f"the lemma applies for k ≥ K = {K}, n ≥ N = {N}"
    in_range = None if K is None else (k >= K and n >= N)
    if in_range is False:
        why = []
        if k < K:
            why.append(f"k = {k} < K = {K}")
        if n < N:
            why.append(f"n < N (n = {n}, N = {N})")
        rng_note = "outside the lemma's range (" + ", ".join(why) + ")"
    # Lemma 21: Chernoff
    expo = -(delta**2) * q * (1 - 2 * eta) * C * n / 3
    bound21 = math.exp(float(expo))
    thr = (1 + delta) * q * m
    if m <= MAX_EXACT_TAIL:
        tail = binomial_tail(m, q, thr)
        ok = _exp_le(tail, expo)
        status = "undecided" if ok is None else ("holds" if ok else "fails")
        val = f"{float(tail):.3e} (exact)"
    else:
        status, val = "undecided", "not computed (too many free inputs)"
    add(
        "Lemma 21",
        "(18)",
        "P(X₀) ≤ exp(−δ²q(1−2η)Cn/3)",
        value=val,
        bound=f"{bound21:.3e}",
        relation="<=",
        status=status,
        in_range=delta <= 1 and m >= (1 - 2 * eta) * C * n,
        note="Chernoff (Mitzenmacher–Upfal Thm 4.4) needs δ ≤ 1 and ≥ (1−2η)Cn free inputs",
    )
    # Lemma 22
    exponent22 = Fraction(k) * eta * C / (c * c)
    bound22 = _power(1 - (q / base) ** c, exponent22)
    probs = [event_probability(tr, tabs2, k, q, base) for tr in uns2]
    known = [p for p in probs if p is not None]
    if not uns2:
        add(
            "Lemma 22",
            "(19)",
            "P(X) ≤ (1 − (q/|Σ|)^c)^{kηC/c²}",
            bound=f"{bound22:.4f}",
            relation="<=",
            status="holds",
            note="vacuous: no event (every tuple satisfied after Stage 2)",
        )
    else:
        worst = max(known) if known else None
        add(
            "Lemma 22",
            "(19)",
            "P(X) ≤ (1 − (q/|Σ|)^c)^{kηC/c²} for every event",
            value="" if worst is None else f"{float(worst):.4f} (max exact P(X))",
            bound=f"{bound22:.4f}",
            relation="<=",
            status="undecided"
            if worst is None
            else ("holds" if float(worst) <= bound22 else "fails"),
            note=f"{len(probs) - len(known)} events too large for the exact computation"
            if len(known) < len(probs)
            else "",
        )
    # Lemma 23: the LLL conditions with A = 1/k², B = 1/2
    A = Fraction(1, k * k)
    rhs31 = float(A) * 0.5 * _power(1 - A, f_supp)
    rhs32 = 0.5 * _power(1 - A, Fraction(base**c * H * n_tok))
    add(
        "Lemma 23",
        "(31)",
        "P(X) ≤ A(1−B)(1−A)^f with A = 1/k², B = ½ (Lemma 22's bound as P(X))",
        value=f"{bound22:.3e}",
        bound=f"{rhs31:.3e}",
        relation="<=",
        status="holds" if bound22 <= rhs31 else "fails",
        in_range=in_range,
        note=rng_note,
    )
    add(
        "Lemma 23",
        "(32)",
        "P(X₀) ≤ B(1−A)^{|Σ|^c Hn} (Lemma 21's bound as P(X₀))",
        value=f"{bound21:.3e}",
        bound=f"{rhs32:.3e}",
        relation="<=",
        status="holds" if bound21 <= rhs32 else "fails",
        in_range=in_range,
        note=rng_note,
    )
    # what a random restriction (Definition 19) achieves on this instance
    s3 = st.stage3
    if s3.get("method") == "random":
        achieved = (
            f"random back-end: {s3.get('successes')} of {s3.get('tries')} draws captured every head"
        )
    elif nev == 0:
        achieved = "no event to avoid: Stage 3 had nothing to do"
    else:
        events = [
            [(tabs2[mm].deps, set(argmax_rows(tr, mm))) for mm in hs]
            for tr, hs in zip(uns2, heads_of, strict=True)
        ]
        rng = np.random.default_rng(st.seed + st.ell)
        a0, ax, both = _sample_def19(
            events, tabs2, st.rho2.free_positions, base, q, delta, rng, SAMPLES
        )
        achieved = (
            f"Definition 19 drawn {SAMPLES}×: X₀ avoided {a0}, every X avoided {ax}, both {both} "
            f"(the search used {s3.get('method', '?')})"
        )
    add(
        "Lemma 23",
        "",
        "with positive probability a ρ₃ avoids X₀ and every X",
        value=achieved,
        in_range=in_range,
        note=rng_note or "the LLL guarantees existence, not a rate",
    )
    target = (1 - 2 * eta) * (1 - (1 + delta) * q) * C * n
    add(
        "Corollary 24",
        "",
        "#free(ρ₃) ≥ (1−2η)(1−(1+δ)q)Cn = C′n",
        **measured(st.rho3.num_free, ">=", target),
        in_range=in_range,
        note=f"found by {s3.get('method', 'no search (no open tuple)')}"
        + (f"; {rng_note}" if rng_note else ""),
    )
