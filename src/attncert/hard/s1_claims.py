"""Hahn (2020) supplement S1 stated on one instance: what each definition and lemma of the
formal proof of the Depth Reduction Lemma asserts for *this* model, layer and restriction.

For the collapse of layer ℓ (the tables of layer ℓ−1 are the "layer-0 activations" of a
c-transformer) the pipeline hands over the restrictions after each stage — ρ₀ (before),
ρ₁ (Stage 1, Lemma 6), ρ₂ (Stage 2, Definition 16), ρ₃ (Stage 3) — with Stage 2's sequence
and Stage 3's trace, and :func:`layer_claims` returns one :class:`S1Claim` per statement
part: its number, what it asserts here, the instance's value, the bound the statement
gives, and whether the value meets it. Lemmas 21–23 and Corollary 24 are evaluated at this
instance's c, H, k, n (exact rationals, arb where exp enters) beside what the search
found, and said plainly to be outside the lemma's range when k < K or n < N
(:func:`attncert.symbolic.lemma_constants`).

Untrusted and informative: the rankings are float (:mod:`attncert.hard.search.ranking`),
like Stages 1–2 themselves. The certificate's correctness rests on the independent checker,
not on these claims; a claim that *fails* here is a finding about the proof or the search,
reported, never hidden. Values are exact (``str`` of a Fraction or an int).

With |Σ| free symbols the paper's 2^c (values of c bits) reads |Σ|^c, and Definition 19 fixes
each free bit to each symbol with probability q/|Σ|.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from attncert.hard.restriction import Restriction
from attncert.hard.search.ranking import TupleRanking, rank_tuples
from attncert.hard.stages import _k_depends, _max_neighbours, _unsatisfied, dependency_c
from attncert.hard.tables import Table, restrict_table
from attncert.model.spec import Model

__all__ = ["LayerStages", "S1Claim", "layer_claims", "statements"]

__implements__ = (
    "Hahn S1 Definition 2",
    "Hahn S1 Definition 3",
    "Hahn S1 Lemma 4",
    "Hahn S1 Definition 5",
    "Hahn S1 Lemma 6",
    "Hahn S1 Definition 7",
    "Hahn S1 Definition 8",
    "Hahn S1 Lemma 9",
    "Hahn S1 Lemma 10",
    "Hahn S1 Definition 11",
    "Hahn S1 Definition 12",
    "Hahn S1 Lemma 13",
    "Hahn S1 Definition 14",
    "Hahn S1 Lemma 15",
    "Hahn S1 Definition 16",
    "Hahn S1 Lemma 17",
    "Hahn S1 Corollary 18",
    "Hahn S1 Definition 19",
    "Hahn S1 Definition 20",
    "Hahn S1 Lemma 21",
    "Hahn S1 Lemma 22",
    "Hahn S1 Lemma 23",
    "Hahn S1 Corollary 24",
    "Hahn S1 eq. (5)",
    "Hahn S1 eq. (6)",
    "Hahn S1 eq. (12)",
    "Hahn S1 eq. (13)",
    "Hahn S1 eq. (18)",
    "Hahn S1 eq. (19)",
    "Hahn S1 eq. (31)",
    "Hahn S1 eq. (32)",
)

SAMPLES = 200  # Definition 19 draws when the search was not the random back-end
MAX_EXACT_BITS = 10  # union of bits for the exact P(X) of one event
MAX_EXACT_TAIL = 4000  # free bits for the exact binomial tail of Lemma 21


@dataclass(frozen=True)
class S1Claim:
    """One S1 statement (part) on the instance. ``status``: ``holds`` / ``fails`` (value
    against bound), ``instance`` (a definition instantiated: nothing to compare), ``not run``
    (the stage was skipped), ``undecided`` (not computable here, ``note`` says why).
    ``in_range`` is ``False`` when the statement's own hypotheses (k ≥ K, n ≥ N, δ ≤ 1) fail
    on this instance — the bound is still evaluated and shown."""

    statement: str  # "Lemma 6", "Definition 7", "eq. (6)"
    part: str  # "6.1", "(5)", "" …
    layer: int
    asserts: str
    value: str = ""
    bound: str = ""
    relation: str = ""  # "<=", ">=", "" (nothing to compare)
    status: str = "instance"
    in_range: bool | None = None
    note: str = ""

    @property
    def holds(self) -> bool | None:
        return {"holds": True, "fails": False}.get(self.status)

    def to_dict(self) -> dict[str, Any]:
        return {
            "statement": f"S1 {self.statement}",
            "part": self.part,
            "layer": self.layer,
            "asserts": self.asserts,
            "value": self.value,
            "bound": self.bound,
            "relation": self.relation,
            "status": self.status,
            "holds": self.holds,
            "in_range": self.in_range,
            "note": self.note,
        }


@dataclass(frozen=True, eq=False)
class LayerStages:
    """What the pipeline knows after reducing layer ``ell`` (see the module docstring)."""

    model: Model
    ell: int
    tables: tuple[Table, ...]  # layer ℓ−1 tables (before ρ₀ is applied)
    rho0: Restriction
    rho1: Restriction
    rho2: Restriction
    rho3: Restriction
    new_tables: tuple[Table, ...]  # layer ℓ tables under ρ₃
    k: int
    eta: Fraction
    q: Fraction
    delta: Fraction
    paper_stages: bool = True
    top: int = 8
    stage2: dict = field(default_factory=dict)
    stage3: dict = field(default_factory=dict)
    seed: int = 0


def _fr(x: Fraction | int) -> str:
    return str(Fraction(x))


def _cmp(value: Fraction | int, bound: Fraction | int, rel: str) -> str:
    ok = value <= bound if rel == "<=" else value >= bound
    return "holds" if ok else "fails"


def _restrict(tables: Sequence[Table], rho: Restriction) -> tuple[Table, ...]:
    return tuple(restrict_table(t, rho) for t in tables)


def _key(tr: TupleRanking, tabs: Sequence[Table]) -> tuple:
    return (tr.head, tr.position, tabs[tr.position].values[tr.value])


def _unsat(model, ell, tabs, c, k, top) -> tuple[list[TupleRanking], set]:
    rk = rank_tuples(model, ell, tabs, top=top)
    uns = [tr for tr in rk if _unsatisfied(tr, tabs, c, k)]
    return uns, {_key(tr, tabs) for tr in uns}


def _sequence_length(tr: TupleRanking, tabs: Sequence[Table]) -> int:
    """Length of S1's sequence (9) within the ranked window: keys bringing a new free input."""
    seen: set[int] = set(tabs[tr.position].deps)
    length = 0
    for key in tr.keys:
        new = set(tabs[key.position].deps) - seen
        if new:
            length += 1
        seen |= set(tabs[key.position].deps)
    return length


def _argmax_rows(tr: TupleRanking, m: int) -> tuple[int, ...]:
    key = next(key for key in tr.keys if key.position == m)
    best = max(key.row_scores)
    return tuple(r for r, s in enumerate(key.row_scores) if s == best)


def _prob_x(
    tr: TupleRanking, tabs: Sequence[Table], k: int, q: Fraction, base: int
) -> Fraction | None:
    """P(X) under Definition 19: none of the tuple's k layer-0 heads has all its bits fixed to
    an assignment achieving the maximum attention value. Exact; None if too many bits."""
    heads = _k_depends(tr, k)
    bits = sorted({u for m in heads for u in tabs[m].deps})
    if len(bits) > MAX_EXACT_BITS:
        return None
    targets = [(tabs[m].deps, set(_argmax_rows(tr, m))) for m in heads]
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


def _binomial_tail(m: int, q: Fraction, t: Fraction) -> Fraction:
    return sum(
        (math.comb(m, x) * q**x * (1 - q) ** (m - x) for x in range(m + 1) if x > t),
        Fraction(0),
    )


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
        val = {int(u): int(s) for u, s, f in zip(free, syms, fixed, strict=True) if f}
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


def layer_claims(st: LayerStages) -> list[S1Claim]:
    """The S1 statements on the collapse of layer ``st.ell`` (see the module docstring)."""
    ell, k, eta, q, delta = st.ell, st.k, st.eta, st.q, st.delta
    model = st.model
    out: list[S1Claim] = []

    def add(statement: str, part: str, asserts: str, **kw: Any) -> None:
        out.append(S1Claim(statement, part, ell, asserts, **kw))

    tabs0 = _restrict(st.tables, st.rho0)
    n = st.rho0.n
    n_tok = len(tabs0)
    c = dependency_c(tabs0)
    free0 = st.rho0.num_free
    base = len(st.rho0.symbols)
    H = max(1, len(model.layers[ell - 1].heads))
    if free0 == 0:
        add("Lemma 4", "", "nothing left to restrict: no free input", status="not run")
        return out
    C = Fraction(free0, n)
    vals_c = base**c  # the paper's 2^c
    Cp = (1 - 2 * eta) * (1 - (1 + delta) * q) * C
    add(
        "Definition 2",
        "(1)",
        f"layer {ell - 1} is a c-transformer: every activation depends on ≤ c free inputs",
        value=str(max(len(t.deps) for t in tabs0)),
        bound=str(c),
        relation="<=",
        status="holds",
        note=f"c = {c} (at least 1); {n_tok} positions, |Σ| = {base} free symbols",
    )
    add(
        "Lemma 4",
        "(2)",
        "hypothesis: ≥ Cn inputs free before this layer",
        value=str(free0),
        bound=_fr(C * n),
        relation=">=",
        status="holds",
        note=f"C = {C}",
    )
    add(
        "Definition 5",
        "(4)",
        "η ∈ (0, ½), q ∈ (0, 1), δ > 0, (1+δ)q < 1 and C′ = (1−2η)(1−(1+δ)q)C",
        value=f"η = {eta}, q = {q}, δ = {delta}",
        bound=f"C′ = {Cp}",
        status="holds"
        if 0 < eta < Fraction(1, 2) and 0 < q < 1 and delta > 0 and (1 + delta) * q < 1
        else "fails",
    )
    chain = [
        (st.rho1, st.rho0, "ρ₁ ≽ ρ₀"),
        (st.rho2, st.rho1, "ρ₂ ≽ ρ₁"),
        (st.rho3, st.rho2, "ρ₃ ≽ ρ₂"),
    ]
    add(
        "Definition 3",
        "",
        "each stage only restricts more inputs (refinement)",
        value=", ".join(lab for a, b, lab in chain if a.refines(b)),
        status="holds" if all(a.refines(b) for a, b, _ in chain) else "fails",
    )
    # ------------------------------------------------------------------ Stage 1: Lemma 6
    if st.paper_stages:
        heavy = free0 - st.rho1.num_free
        feeds = Counter(u for t in tabs0 for u in t.deps if st.rho1.is_free(u))
        add(
            "Lemma 6",
            "proof",
            "inputs fixed by Stage 1 (those feeding > c/(ηC) activations) ≤ ηCn",
            value=str(heavy),
            bound=_fr(eta * C * n),
            relation="<=",
            status=_cmp(heavy, eta * C * n, "<="),
        )
        fan = max(feeds.values(), default=0)
        add(
            "Lemma 6",
            "6.1",
            "each ρ₁-free input feeds ≤ (1/η)c/C layer-0 activations",
            value=str(fan),
            bound=_fr(Fraction(c) / (eta * C)),
            relation="<=",
            status=_cmp(fan, Fraction(c) / (eta * C), "<="),
        )
        add(
            "Lemma 6",
            "6.2 (5)",
            "#free(ρ₁) ≥ (1−η)Cn",
            value=str(st.rho1.num_free),
            bound=_fr((1 - eta) * C * n),
            relation=">=",
            status=_cmp(st.rho1.num_free, (1 - eta) * C * n, ">="),
        )
    else:
        add("Lemma 6", "", "Stage 1 (Lemma 6)", status="not run", note="paper_stages = False")
    tabs1 = _restrict(st.tables, st.rho1)
    vmax = max(len(t.values) for t in tabs1)
    add(
        "eq. (6)",
        "(6)",
        "a layer-0 activation of ≤ c bits takes ≤ |Σ|^c values",
        value=str(vmax),
        bound=str(vals_c),
        relation="<=",
        status=_cmp(vmax, vals_c, "<="),
    )
    # ------------------------------------------------------------------ Definitions 7-8, Lemma 9
    total1 = H * sum(len(t.values) for t in tabs1)
    rk1 = rank_tuples(model, ell, tabs1, top=st.top)
    uns1 = [tr for tr in rk1 if _unsatisfied(tr, tabs1, c, k)]
    keys1 = {_key(tr, tabs1) for tr in uns1}
    blocked = sum(1 for tr in rk1 if tr.blocker is not None)
    add(
        "Definition 7",
        "(7)–(9)",
        "tuples ((h,i),z) ranked by the maximum attention value; open = some key may outrank the "
        "best constant (blocker)",
        value=f"{total1} tuples, {len(rk1)} open ({blocked} of them with a blocker)",
        note="float rankings (untrusted), ties by the head's rule",
    )
    add(
        "Definition 8",
        "",
        "(k,ρ₁)-satisfied: the tuple's value depends on ≤ ck inputs",
        value=f"{total1 - len(uns1)} satisfied, {len(uns1)} unsatisfied",
        bound=f"ck = {c * k}",
    )
    if uns1:
        lengths = [(_sequence_length(tr, tabs1), tr.cutoff != float("-inf")) for tr in uns1]
        short = [ln for ln, truncated in lengths if ln < k and not truncated]
        shortest = min(ln for ln, _ in lengths)
        status = "fails" if short else ("holds" if shortest >= k else "undecided")
        add(
            "Lemma 9",
            "(10)",
            "an unsatisfied tuple's sequence (9) has length ≥ k",
            value=str(shortest),
            bound=str(k),
            relation=">=",
            status=status,
            note="" if status != "undecided" else "ranked window too short to see k new inputs",
        )
    else:
        add(
            "Lemma 9",
            "(10)",
            "an unsatisfied tuple's sequence (9) has length ≥ k",
            status="holds",
            note="vacuous: no unsatisfied tuple",
        )
    # ------------------------------------------------------------------ Stage 2
    tabs2 = _restrict(st.tables, st.rho2)
    uns2, keys2 = _unsat(model, ell, tabs2, c, k, st.top)
    tabs3 = _restrict(st.tables, st.rho3)
    _, keys3 = _unsat(model, ell, tabs3, c, k, st.top)
    viol = len(keys2 - keys1) + len(keys3 - keys2)
    add(
        "Lemma 10",
        "",
        "a satisfied tuple stays satisfied under every refinement (ρ₁ → ρ₂ → ρ₃)",
        value=f"{viol} tuples became unsatisfied",
        bound="0",
        relation="<=",
        status="holds" if viol == 0 else "fails",
        note=f"unsatisfied: {len(keys1)} at ρ₁, {len(keys2)} at ρ₂, {len(keys3)} at ρ₃",
    )
    heads_of = [_k_depends(tr, k) for tr in uns2]
    bits_of = [{u for m in hs for u in tabs2[m].deps} for hs in heads_of]
    add(
        "Definition 11",
        "",
        "an unsatisfied tuple (k,ρ₂)-depends on the free inputs of its first k sequence positions",
        value=f"{len(uns2)} unsatisfied tuples at ρ₂",
    )
    add(
        "Definition 12",
        "",
        "… and on those ≤ k layer-0 heads",
        value=str(max((len(h) for h in heads_of), default=0)),
        bound=str(k),
        relation="<=",
        status=_cmp(max((len(h) for h in heads_of), default=0), k, "<="),
    )
    mb = max((len(b) for b in bits_of), default=0)
    add(
        "Lemma 13",
        "",
        "an unsatisfied tuple (k,ρ₂)-depends on ≤ ck inputs",
        value=str(mb),
        bound=str(c * k),
        relation="<=",
        status=_cmp(mb, c * k, "<="),
    )
    nb = _max_neighbours(uns2, tabs2, k)
    add(
        "Definition 14",
        "",
        "(k,ρ₂)-neighbours: unsatisfied tuples sharing a k-depended input",
        value=f"max {nb} neighbours",
    )
    seq = st.stage2.get("sequence", [])
    if st.paper_stages:
        rounds = [r for r in seq if r.get("heads_fixed")]
        U = sum(len(r["heads_fixed"]) for r in rounds)
        per_head = max(
            (Fraction(r["bits_fixed"], len(r["heads_fixed"])) for r in rounds), default=Fraction(0)
        )
        gains = [
            seq[i]["unsatisfied"] - seq[i + 1]["unsatisfied"]
            for i in range(len(seq) - 1)
            if seq[i].get("heads_fixed")
        ]
        if rounds:
            add(
                "Lemma 15",
                "bits",
                "fixing an overloaded layer-0 head restricts ≤ c more inputs",
                value=_fr(per_head),
                bound=str(c),
                relation="<=",
                status=_cmp(per_head, c, "<="),
                note=f"{len(rounds)} round(s), {U} head(s) fixed",
            )
            add(
                "Lemma 15",
                "(11)",
                "each fix satisfies ≥ kH more tuples (pigeonhole on |Σ|^c values)",
                value=str(min(gains)),
                bound=str(k * H),
                relation=">=",
                status=_cmp(min(gains), k * H, ">="),
                note="fewest tuples newly satisfied in a round",
            )
        else:
            add(
                "Lemma 15",
                "",
                "no layer-0 head had > |Σ|^c kH depending unsatisfied tuples",
                value=f"{seq[0]['overloaded'] if seq else 0} overloaded",
                status="holds",
            )
        add(
            "Definition 16",
            "",
            "σ₁ = ρ₁ ≼ σ₂ ≼ …: one head fixed per step (the search batches "
            "heads with disjoint inputs into rounds)",
            value=f"U = {U} steps in {len(rounds)} rounds",
        )
        add(
            "Lemma 17",
            "(13)",
            "the sequence has U ≤ |Σ|^c n/k steps",
            value=str(U),
            bound=_fr(Fraction(vals_c * n_tok, k)),
            relation="<=",
            status=_cmp(U, Fraction(vals_c * n_tok, k), "<="),
        )
        add(
            "Lemma 17",
            "17.1 (12)",
            "#free(ρ₂) ≥ (1−2η)Cn",
            value=str(st.rho2.num_free),
            bound=_fr((1 - 2 * eta) * C * n),
            relation=">=",
            status=_cmp(st.rho2.num_free, (1 - 2 * eta) * C * n, ">="),
            in_range=Fraction(vals_c * c, k) <= eta * C,
            note=f"the lemma needs k ≥ |Σ|^c c/(ηC) = {_fr(Fraction(vals_c * c) / (eta * C))}",
        )
        per_l0 = Counter(m for hs in heads_of for m in hs)
        worst = max(per_l0.values(), default=0)
        add(
            "Lemma 17",
            "17.2",
            "no layer-0 head has > |Σ|^c kH (k,ρ₂)-depending unsatisfied tuples",
            value=str(worst),
            bound=str(vals_c * k * H),
            relation="<=",
            status=_cmp(worst, vals_c * k * H, "<="),
        )
    else:
        for s in ("Lemma 15", "Definition 16", "Lemma 17"):
            add(s, "", "Stage 2", status="not run", note="paper_stages = False")
    f_supp = Fraction(vals_c * c * c * k * k * H) / (eta * C)
    add(
        "Corollary 18",
        "18.2",
        "an unsatisfied tuple has ≤ f = (|Σ|^c/η)c²k²H/C unsatisfied neighbours",
        value=str(nb),
        bound=_fr(f_supp),
        relation="<=",
        status=_cmp(nb, f_supp, "<="),
    )
    # ------------------------------------------------------------------ Stage 3
    m = st.rho2.num_free
    add(
        "Definition 19",
        "",
        "each ρ₂-free input is fixed to each symbol w.p. q/|Σ|, left free w.p. 1 − q",
        value=f"{m} free inputs, {_fr(q * m)} fixed on average",
        bound=f"X₀: more than (1+δ)q·{m} = {_fr((1 + delta) * q * m)} fixed",
    )
    nev = len(uns2)
    add(
        "Definition 20",
        "(16)–(17)",
        "one event X per unsatisfied tuple: none of its k layer-0 "
        "heads is fixed to a value maximizing its attention; ≤ |Σ|^c Hn events",
        value=str(nev),
        bound=str(vals_c * H * n_tok),
        relation="<=",
        status=_cmp(nev, vals_c * H * n_tok, "<="),
    )
    _stage3_claims(
        st,
        add,
        c=c,
        C=C,
        Cp=Cp,
        H=H,
        base=base,
        uns2=uns2,
        tabs2=tabs2,
        heads_of=heads_of,
        nev=nev,
        nb=nb,
        f_supp=f_supp,
        n_tok=n_tok,
    )
    width = max((len(t.deps) for t in st.new_tables), default=0)
    wb = c * (vals_c * k * H + 1)
    add(
        "Lemma 4",
        "conclusion",
        "layer-ℓ activations depend on ≤ c(|Σ|^c kH + 1) inputs",
        value=str(width),
        bound=str(wb),
        relation="<=",
        status=_cmp(width, wb, "<="),
    )
    return out


def _stage3_claims(
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
        tail = _binomial_tail(m, q, thr)
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
    probs = [_prob_x(tr, tabs2, k, q, base) for tr in uns2]
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
            [(tabs2[mm].deps, set(_argmax_rows(tr, mm))) for mm in hs]
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
        value=str(st.rho3.num_free),
        bound=_fr(target),
        relation=">=",
        status=_cmp(st.rho3.num_free, target, ">="),
        in_range=in_range,
        note=f"found by {s3.get('method', '?')}" + (f"; {rng_note}" if rng_note else ""),
    )


def statements(traces: Sequence[dict]) -> list[str]:
    """The distinct S1 statements named in the certify trace's layers (sorted)."""
    return sorted({c["statement"] for tr in traces for c in tr.get("s1", [])})
