"""Stage 3 of Hahn's Depth Reduction Lemma as claims, first half: the Chernoff bound (8) /
S1 (18) (Lemma 21), the events X and Y and their probabilities ((9), S1 (19)–(27), Lemma 22)
and the independence of non-neighbouring events (S1 (29)).

Each claim names the displays it checks (``displays``) and the lines it follows from.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from attncert.symbolic import formulas as F
from attncert.symbolic import oracles
from attncert.symbolic.claim_types import (
    INT,
    POS,
    UNIT_OPEN,
    Claim,
    Kind,
    Slack,
    Source,
    Var,
    Version,
)
from attncert.symbolic.claim_vars import (
    D1,
    PAPER,
    R_,
    SUPP,
    V_C,
    C,
    Dn,
    H,
    Nb,
    V_c,
    V_delta,
    V_eta,
    V_n,
    V_q,
    Vz,
    c,
    delta,
    eta,
    j,
    k,
    m,
    n,
    p,
    q,
    s_,
    x_,
)

__implements__ = (
    "Hahn eq. (8)",
    "Hahn eq. (9)",
    "Hahn S1 Lemma 21",
    "Hahn S1 Lemma 22",
    "Hahn S1 eq. (18)",
    "Hahn S1 eq. (19)",
    "Hahn S1 eq. (21)",
    "Hahn S1 eq. (22)",
    "Hahn S1 eq. (23)",
    "Hahn S1 eq. (25)",
    "Hahn S1 eq. (26)",
    "Hahn S1 eq. (27)",
    "Hahn S1 eq. (29)",
)

__all__ = ["STAGE3_CLAIMS"]

S = sp.Symbol


def _graph_oracle(degree, target):
    """min α over graphs with k vertices and Δ ≤ ⌊degree⌋ is ≥ target? Exhaustive for k ≤ 5;
    for larger k only the witness ⌊k/(d+1)⌋ disjoint K_{d+1} (plus isolated rest) is tried,
    whose independence number is its number of components."""

    def oracle(env):
        kk = int(env["k"])
        dd = int(degree(env) // 1)
        lo = oracles.min_independence_number(kk, dd)
        if lo is not None:
            return Fraction(lo) >= target(env)
        components = kk // (dd + 1) + (1 if kk % (dd + 1) else 0)
        return False if Fraction(components) < target(env) else None

    return oracle


def _chernoff_oracle(env):
    """P(Bin(m, q) > (1+δ)qm) ≤ exp(−δ²q(1−2η)Cn/3), exactly / with arb."""
    return oracles.binomial_tail_exceeds(
        int(env["m"]),
        Fraction(env["q"]),
        (1 + Fraction(env["delta"])) * Fraction(env["q"]) * int(env["m"]),
        F.chernoff8,
        env,
    )


def _chernoff(tag, hyps, rng, cite) -> Claim:
    return Claim(
        id=f"stage3.chernoff[{tag}]",
        source=(Source(PAPER, "(8)"), Source(SUPP, "Lemma 21 (18)")),
        kind=Kind.ORACLE,
        statement=f"(8): δ {rng}, m ≥ (1−2η)Cn free bits each fixed w.p. q ⇒ "
        "P(more than (1+δ)qm fixed) ≤ exp(−δ²q(1−2η)Cn/3)",
        printed="P(X_0) ≤ exp(−δ²q(1 − 2η)Cn/3)",
        displays=("(8)", "S1 (18)"),
        follows_from=("(after Stage 2) ≥ (1−2η)Cn free", "Mitzenmacher–Upfal Thm 4.4"),
        hypotheses=(*hyps, (1 + delta) * q < 1, m >= (1 - 2 * eta) * C * n, m <= n),
        conclusion=S("P(X0) ≤ exp(−δ²q(1−2η)Cn/3)"),
        parameters=(
            V_n,
            V_C,
            V_eta,
            V_q,
            V_delta,
            Var(m, INT(1), (sp.ceiling((1 - 2 * eta) * C * n), n)),
        ),
        oracle=_chernoff_oracle,
        citation=cite,
        note="the X₀ definitions say δ ∈ (0, 1); Definition 5 and the final choice allow any δ > 0",
    )


_d = c**2 / (eta * C)  # (1/η)c²/C
_K2 = Var(k, INT(2), tuple(sp.Integer(i) for i in range(2, 6)))

STAGE3_CLAIMS: tuple[Claim, ...] = (
    _chernoff(
        "δ∈(0,1]", (delta <= 1,), "∈ (0,1]", "Mitzenmacher & Upfal 2017, Theorem 4.4 (0 < δ ≤ 1)"
    ),
    _chernoff("Definition 5 range δ>0", (), "> 0", ""),
    Claim(
        id="stage3.P(Y)",
        source=(Source(PAPER, "Stage 3"), Source(SUPP, "Lemma 22 (22)")),
        statement="an activation with j ≤ c free bits is fixed to its maximizing value w.p. "
        "(q/2)^j ≥ (q/2)^c, so P(Y) ≤ 1 − (q/2)^c",
        printed="P(Y) ≤ 1 − (q/2)^c",
        displays=("§5.1 Stage 3: P(Y)", "S1 (22)"),
        follows_from=("Definition 19: each free bit fixed to a given value w.p. q/2",),
        hypotheses=(j <= c,),
        conclusion=(q / 2) ** j >= (q / 2) ** c,
        parameters=(V_c, V_q, Var(j, INT(0), (sp.Integer(0), c))),
        slacks=(Slack("j", "le", c),),
        log_goal=True,
    ),
    Claim(
        id="stage3.P(Y)-range",
        source=(Source(PAPER, "Stage 3"), Source(SUPP, "Lemma 22 (22)")),
        statement="1 − (q/2)^c ∈ (0, 1) for q ∈ (0, 1), c ≥ 1",
        printed="1 − (q/2)^c ∈ (0, 1)",
        displays=("§5.1 Stage 3: P(Y)", "S1 (22)"),
        hypotheses=(),
        conclusion=sp.And(1 - (q / 2) ** c > 0, 1 - (q / 2) ** c < 1),
        parameters=(
            V_c,
            Var(q, UNIT_OPEN, (R_(1, 100), R_(1, 2)), reparam=1 / (1 + S("w", positive=True))),
        ),
    ),
    Claim(
        id="stage3.dependency-count",
        source=(Source(PAPER, "Stage 3"), Source(SUPP, "Lemma 22 (23)")),
        statement="Y_t's activation has b ≤ c bits, each feeding ≤ (1/η)c/C heads ⇒ Y_t depends on "
        "≤ (1/η)c²/C events; and the equality c·(1/η)c/C = (1/η)c²/C as printed",
        printed="c · (1/η)c/C = (1/η)c²/C",
        displays=("§5.1 Stage 3: dependencies", "S1 (23)"),
        follows_from=("(4)", "S1 (24)"),
        hypotheses=(Dn <= Vz * Nb, Vz <= c, Nb <= c / (eta * C)),
        conclusion=sp.And(
            sp.Eq(c * (1 / eta) * c / C, (1 / eta) * c**2 / C, evaluate=False), Dn <= _d
        ),
        parameters=(
            V_c,
            V_eta,
            V_C,
            Var(Vz, POS, (c,)),
            Var(Nb, POS, (c / (eta * C),)),
            Var(Dn, POS, (Vz * Nb,)),
        ),
        slacks=(
            Slack("Dn", "ratio_le", Vz * Nb),
            Slack("Vz", "ratio_le", c),
            Slack("Nb", "ratio_le", c / (eta * C)),
        ),
        note="counting the event itself among a bit's dependents gives ≤ c(c/(ηC) − 1) others",
    ),
    Claim(
        id="stage3.independent-events[as written]",
        source=(Source(PAPER, "Stage 3"), Source(SUPP, "(25)")),
        kind=Kind.ORACLE,
        statement="k events, each dependent on ≤ d = c²/(ηC) others ⇒ ≥ k/d mutually "
        "independent among them (min independence number over all such graphs)",
        printed="Therefore, there is a set of ≥ k/((1/η)c²/C) independent events among these",
        displays=("§5.1 Stage 3: independent events", "S1 (25)"),
        follows_from=("§5.1 Stage 3: dependencies", "S1 (23)"),
        hypotheses=(),
        conclusion=S("α(G) ≥ k/d for every graph on k vertices with Δ(G) ≤ d"),
        parameters=(
            V_c,
            V_eta,
            V_C,
            Var(k, INT(2), (*(sp.Integer(i) for i in range(2, 6)), sp.floor(_d) + 1)),
        ),
        oracle=_graph_oracle(
            lambda e: Fraction(e["c"]) ** 2 / (Fraction(e["eta"]) * Fraction(e["C"])),
            lambda e: (
                Fraction(e["k"]) * Fraction(e["eta"]) * Fraction(e["C"]) / Fraction(e["c"]) ** 2
            ),
        ),
    ),
    Claim(
        id="stage3.independent-events[refined]",
        source=(Source(PAPER, "Stage 3"), Source(SUPP, "(23)–(25)")),
        version=Version.ATTNCERT,
        kind=Kind.ORACLE,
        statement="counting the event itself among a bit's ≤ c/(ηC) dependents: degree ≤ "
        "c(c/(ηC) − 1) ⇒ ≥ kηC/c² independent events",
        displays=("§5.1 Stage 3: independent events", "S1 (25)"),
        hypotheses=(),
        conclusion=S("α(G) ≥ kηC/c² for every graph on k vertices with Δ(G) ≤ c(c/(ηC)−1)"),
        parameters=(V_c, V_eta, V_C, _K2),
        oracle=_graph_oracle(
            lambda e: (
                Fraction(e["c"]) * (Fraction(e["c"]) / (Fraction(e["eta"]) * Fraction(e["C"])) - 1)
            ),
            lambda e: (
                Fraction(e["k"]) * Fraction(e["eta"]) * Fraction(e["C"]) / Fraction(e["c"]) ** 2
            ),
        ),
        citation="Caro–Wei / greedy: α(G) ≥ k/(Δ(G)+1); see stage3.independent-count",
    ),
    Claim(
        id="stage3.independent-count",
        source=(Source(PAPER, "Stage 3"), Source(SUPP, "(25)")),
        version=Version.ATTNCERT,
        statement="closed neighbourhoods of size D1 ≤ c(c/(ηC) − 1) + 1 ⇒ k/D1 ≥ kηC/c²",
        displays=("§5.1 Stage 3: independent events", "S1 (25)"),
        hypotheses=(c * (c / (eta * C) - 1) + 1 >= D1,),
        conclusion=k / D1 >= k * eta * C / c**2,
        parameters=(
            V_c,
            V_eta,
            V_C,
            Var(k, INT(1), (sp.Integer(5),)),
            Var(D1, POS, (c * (c / (eta * C) - 1) + 1,)),
        ),
        slacks=(Slack("D1", "ratio_le", c * (c / (eta * C) - 1) + 1),),
    ),
    Claim(
        id="stage3.X-is-intersection",
        source=(Source(PAPER, "Stage 3"), Source(SUPP, "Lemma 22 (21)")),
        kind=Kind.CUSTOM,
        custom="de_morgan",
        statement="'none of the k activations is fixed to its maximizing value' is the "
        "intersection of the k events 'activation t is not fixed to it' (De Morgan)",
        printed="X_{i,h}^(z) = ∩_{t=1}^k Y_{i,h}^t",
        displays=("§5.1 Stage 3: X ⊆ ∩Y", "S1 (21)"),
        follows_from=("Definition 20", "S1 (20)"),
        hypotheses=(),
        conclusion=S("¬(f₁ ∨ … ∨ f_k) ⇔ ¬f₁ ∧ … ∧ ¬f_k"),
        parameters=(),
    ),
    Claim(
        id="stage3.X-subset",
        source=(Source(PAPER, "Stage 3"), Source(SUPP, "Lemma 22 (26)")),
        kind=Kind.CUSTOM,
        custom="conjunction_elimination",
        statement="an intersection of all k events lies in the intersection of any subfamily",
        printed="X_{i,h}^(z) ⊆ ∩_{s} Y_{i,h}^{t_s}",
        displays=("§5.1 Stage 3: X ⊆ ∩Y", "S1 (26)"),
        follows_from=("S1 (21)",),
        hypotheses=(),
        conclusion=S("(y₁ ∧ … ∧ y_k) ⇒ ∧_{t∈T} y_t for every T ⊆ [k]"),
        parameters=(),
    ),
    Claim(
        id="stage3.eq9",
        source=(Source(PAPER, "(9)"), Source(SUPP, "Lemma 22 (19), (27)")),
        statement="s ≥ x independent events of probability ≤ p < 1 ⇒ Π P ≤ p^s ≤ p^x "
        "(x = kηC/c², p = 1 − (q/2)^c)",
        printed="P(X) ≤ Π_{s=1}^{k/((1/η)c²/C)} P(Y^{t_s}) ≤ (1 − (q/2)^c)^{k/((1/η)c²/C)}",
        displays=("(9)", "S1 (19)", "S1 (27)"),
        follows_from=("S1 (26)", "S1 (25) (≥ x independent events)", "S1 (22)"),
        hypotheses=(s_ >= x_,),
        conclusion=p**s_ <= p**x_,
        parameters=(
            Var(p, UNIT_OPEN, (R_(1, 2), R_(99, 100))),
            Var(x_, POS, (R_(5, 2),)),
            Var(s_, POS, (sp.ceiling(x_),)),
        ),
        slacks=(Slack("s", "ge", x_),),
        log_goal=True,
    ),
    Claim(
        id="stage3.neighbour-events[paper]",
        source=(Source(PAPER, "Stage 3 ('The complement of this set has cardinality ≤ f')"),),
        version=Version.PAPER,
        kind=Kind.ORACLE,
        statement="the events X^(z′) of all heads that are k-neighbours of (i, h) number ≤ f = "
        "(2^{2c}/η)c²k²H/C — decided on an explicit instance meeting every Stage 1/2 invariant "
        "(f counts neighbouring heads; each has up to 2^c events)",
        printed="{X_{(j,h′)}^(z′) : heads (j,h′) and (i,h) are not k-neighbors}. The complement "
        "of this set has cardinality ≤ f",
        displays=("§5.1 Stage 3: independence",),
        follows_from=("§5.1 Stage 2: f",),
        hypotheses=(),
        conclusion=S("#events of neighbouring heads ≤ f"),
        parameters=(
            Var(c, INT(1, 1), (sp.Integer(1),)),
            Var(k, INT(1, 1), (sp.Integer(1),)),
            Var(H, INT(1), (sp.Integer(1), sp.Integer(2))),
            Var(eta, V_eta.domain, (R_(1, 4), R_(1, 10))),
            Var(C, V_C.domain, (sp.Integer(1),)),
        ),
        oracle=oracles.neighbour_events_oracle,
        note="S1 counts neighbours per tuple ((h,i),z) (Definition 14, Corollary 18), where the "
        "bound holds (stage2.f[supplement]); per event the paper's f also holds by counting "
        "≤ ck bits per event instead of 2^c ck per head",
    ),
    Claim(
        id="stage3.independence",
        source=(Source(PAPER, "Stage 3"), Source(SUPP, "Lemma 23 (29)")),
        kind=Kind.ORACLE,
        statement="an event X determined by its bits is independent of every combination of "
        "events on disjoint bits (exact check on random toy instances: 5 bits, 4 events)",
        printed="Each event X is statistically independent of the set {X′ : … not k-neighbors}",
        displays=("§5.1 Stage 3: independence", "S1 (29)"),
        follows_from=("Definition 14 (neighbours share a k-depended input bit)",),
        hypotheses=(),
        conclusion=S("P(X ∩ A) = P(X)P(A) for A in the algebra of non-neighbours"),
        parameters=(
            Var(
                S("seed", integer=True, nonnegative=True),
                INT(0),
                tuple(sp.Integer(i) for i in range(4)),
            ),
        ),
        oracle=oracles.toy_independence_oracle,
        citation="mutual independence principle (Alon & Spencer, The Probabilistic Method, §5.2)",
    ),
)
