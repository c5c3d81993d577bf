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

Stage 3 (Lemmas 21–23, Corollary 24) is in :mod:`attncert.hard.s1_stage3`, the data types
in :mod:`attncert.hard.s1_types`. Untrusted and informative: the rankings are float (:mod:`attncert.hard.search.ranking`),
like Stages 1–2 themselves. The certificate's correctness rests on the independent checker,
not on these claims; a claim that *fails* here is a finding about the proof or the search,
reported, never hidden. Values are exact (``str`` of a Fraction or an int).

With |Σ| free symbols the paper's 2^c (values of c bits) reads |Σ|^c, and Definition 19 fixes
each free bit to each symbol with probability q/|Σ|.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from attncert.hard.restriction import Restriction
from attncert.hard.s1_stage3 import stage3_claims
from attncert.hard.s1_types import LayerStages, S1Claim, fr, measured
from attncert.hard.search.ranking import TupleRanking, rank_tuples
from attncert.hard.stages import _k_depends, _max_neighbours, _unsatisfied, dependency_c
from attncert.hard.tables import Table, restrict_table

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


def _restrict(tables: Sequence[Table], rho: Restriction) -> tuple[Table, ...]:
    return tuple(restrict_table(t, rho) for t in tables)


def _key(tr: TupleRanking, tabs: Sequence[Table]) -> tuple:
    return (tr.head, tr.position, tabs[tr.position].keys[tr.value])


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
        bound=fr(C * n),
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
            **measured(heavy, "<=", eta * C * n),
        )
        fan = max(feeds.values(), default=0)
        add(
            "Lemma 6",
            "6.1",
            "each ρ₁-free input feeds ≤ (1/η)c/C layer-0 activations",
            **measured(fan, "<=", Fraction(c) / (eta * C)),
        )
        add(
            "Lemma 6",
            "6.2 (5)",
            "#free(ρ₁) ≥ (1−η)Cn",
            **measured(st.rho1.num_free, ">=", (1 - eta) * C * n),
        )
    else:
        add("Lemma 6", "", "Stage 1 (Lemma 6)", status="not run", note="paper_stages = False")
    tabs1 = _restrict(st.tables, st.rho1)
    vmax = max(len(t.values) for t in tabs1)
    add(
        "eq. (6)",
        "(6)",
        "a layer-0 activation of ≤ c bits takes ≤ |Σ|^c values",
        **measured(vmax, "<=", vals_c),
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
        **measured(max((len(h) for h in heads_of), default=0), "<=", k),
    )
    mb = max((len(b) for b in bits_of), default=0)
    add(
        "Lemma 13",
        "",
        "an unsatisfied tuple (k,ρ₂)-depends on ≤ ck inputs",
        **measured(mb, "<=", c * k),
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
                **measured(per_head, "<=", c),
                note=f"{len(rounds)} round(s), {U} head(s) fixed",
            )
            add(
                "Lemma 15",
                "(11)",
                "each fix satisfies ≥ kH more tuples (pigeonhole on |Σ|^c values)",
                **measured(min(gains), ">=", k * H),
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
            **measured(U, "<=", Fraction(vals_c * n_tok, k)),
        )
        add(
            "Lemma 17",
            "17.1 (12)",
            "#free(ρ₂) ≥ (1−2η)Cn",
            **measured(st.rho2.num_free, ">=", (1 - 2 * eta) * C * n),
            in_range=Fraction(vals_c * c, k) <= eta * C,
            note=f"the lemma needs k ≥ |Σ|^c c/(ηC) = {fr(Fraction(vals_c * c) / (eta * C))}",
        )
        per_l0 = Counter(m for hs in heads_of for m in hs)
        worst = max(per_l0.values(), default=0)
        add(
            "Lemma 17",
            "17.2",
            "no layer-0 head has > |Σ|^c kH (k,ρ₂)-depending unsatisfied tuples",
            **measured(worst, "<=", vals_c * k * H),
        )
    else:
        for s in ("Lemma 15", "Definition 16", "Lemma 17"):
            add(s, "", "Stage 2", status="not run", note="paper_stages = False")
    f_supp = Fraction(vals_c * c * c * k * k * H) / (eta * C)
    add(
        "Corollary 18",
        "18.2",
        "an unsatisfied tuple has ≤ f = (|Σ|^c/η)c²k²H/C unsatisfied neighbours",
        **measured(nb, "<=", f_supp),
    )
    # ------------------------------------------------------------------ Stage 3
    m = st.rho2.num_free
    add(
        "Definition 19",
        "",
        "each ρ₂-free input is fixed to each symbol w.p. q/|Σ|, left free w.p. 1 − q",
        value=f"{m} free inputs, {fr(q * m)} fixed on average",
        bound=f"X₀: more than (1+δ)q·{m} = {fr((1 + delta) * q * m)} fixed",
    )
    nev = len(uns2)
    add(
        "Definition 20",
        "(16)–(17)",
        "one event X per unsatisfied tuple: none of its k layer-0 "
        "heads is fixed to a value maximizing its attention; ≤ |Σ|^c Hn events",
        **measured(nev, "<=", vals_c * H * n_tok),
    )
    stage3_claims(
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
        **measured(width, "<=", wb),
    )
    return out


def statements(traces: Sequence[dict]) -> list[str]:
    """The distinct S1 statements named in the certify trace's layers (sorted)."""
    return sorted({c["statement"] for tr in traces for c in tr.get("s1", [])})
