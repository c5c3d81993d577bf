"""The quantitative steps of Hahn's Depth Reduction Lemma (Lemma 4) as data.

Each :class:`Claim` is one step, *hypotheses ⇒ conclusion*, with its source (paper = TACL
text, §5.1; extract = the §5 restatement in ``hahn2020-section5-hard-attention.md``;
supplement = the formal write-up S1). Where the versions differ, each is a separate claim
with the same stem (``stage2.choice-of-k[paper]``, ``…[supplement]``); the checker
(:mod:`attncert.symbolic.runner`) decides each one — nothing here says whether a claim holds.

A claim's ``parameters`` are its variables with their domains; ``samples`` feed the
counterexample search. ``slacks`` are *untrusted* proof hints (which hypothesis to solve
for which variable); the prover re-checks that a hint covers the hypothesis before using it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from fractions import Fraction

import sympy as sp

from attncert.symbolic import formulas as F
from attncert.symbolic.oracles import binomial_tail_exceeds, min_independence_number

__all__ = ["CLAIMS", "Claim", "Domain", "Kind", "Slack", "Source", "Var", "Version", "claim"]


class Version(Enum):
    """Which text a claim is taken from."""

    PAPER = "paper"  # Hahn 2020, TACL, §5.1
    EXTRACT = "extract"  # the §5 restatement (hahn2020-section5-hard-attention.md)
    SUPPLEMENT = "supplement"  # supplement S1 (formal write-up)
    ALL = "all"  # the same in all versions
    ATTNCERT = "attncert"  # a repaired/refined statement, not in the papers


class Kind(Enum):
    IMPLICATION = "implication"  # ∀ parameters: hypotheses ⇒ conclusion (a sympy relation)
    LIMIT = "limit"  # conclusion is Eq(Limit(expr, k, oo), value)
    ORACLE = "oracle"  # conclusion decided by a finite exact computation (``oracle``)
    CUSTOM = "custom"  # a dedicated sympy proof in attncert.symbolic.prover (``custom``)


@dataclass(frozen=True)
class Source:
    document: str  # "Hahn 2020 §5.1", "Hahn 2020 supplement S1", ...
    locus: str  # "eq. (12)", "Lemma 17", ...

    def __str__(self) -> str:
        return f"{self.document}, {self.locus}"


@dataclass(frozen=True)
class Domain:
    """An interval of ℝ (or of ℤ if ``integer``); ``None`` bounds are infinite."""

    lo: Fraction | None = None
    hi: Fraction | None = None
    lo_open: bool = True
    hi_open: bool = True
    integer: bool = False

    def contains(self, v: Fraction) -> bool:
        if self.integer and Fraction(v).denominator != 1:
            return False
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            return False
        return not (self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)))

    def describe(self) -> str:
        if self.integer:
            return (
                f"integer ≥ {self.lo}" if self.hi is None else f"integer in [{self.lo}, {self.hi}]"
            )
        lb = "(" if self.lo_open else "["
        rb = ")" if self.hi_open else "]"
        lo = "-∞" if self.lo is None else str(self.lo)
        hi = "∞" if self.hi is None else str(self.hi)
        return f"{lb}{lo}, {hi}{rb}"


POS = Domain(Fraction(0))
NONNEG = Domain(Fraction(0), lo_open=False)
UNIT_OPEN = Domain(Fraction(0), Fraction(1))
UNIT_HALF = Domain(Fraction(0), Fraction(1, 2))
FRACTION_C = Domain(Fraction(0), Fraction(1), hi_open=False)


def INT(lo: int = 1, hi: int | None = None) -> Domain:
    return Domain(Fraction(lo), None if hi is None else Fraction(hi), False, False, True)


@dataclass(frozen=True)
class Var:
    """A variable of a claim: sympy symbol, domain, candidate values for the search."""

    symbol: sp.Symbol
    domain: Domain
    samples: tuple[sp.Expr, ...] = ()
    reparam: sp.Expr | None = None  # custom positive parametrization (fresh symbols)

    @property
    def name(self) -> str:
        return self.symbol.name


@dataclass(frozen=True)
class Slack:
    """Proof hint: a hypothesis equivalent to ``var ⋈ bound``; ``form`` ∈ ge, le, ratio_le,
    ratio_ge, eq. The prover checks that values outside the form violate the hypothesis."""

    var: str
    form: str
    bound: sp.Expr
    strict: bool = False


@dataclass(frozen=True)
class Claim:
    """One proof step: ∀ parameters in their domains, hypotheses ⇒ conclusion."""

    id: str
    source: tuple[Source, ...]
    hypotheses: tuple[sp.Basic, ...]
    conclusion: sp.Basic
    parameters: tuple[Var, ...]
    version: Version = Version.ALL
    statement: str = ""
    kind: Kind = Kind.IMPLICATION
    slacks: tuple[Slack, ...] = ()
    log_goal: bool = False
    oracle: Callable[[Mapping[str, Fraction]], bool | None] | None = field(
        default=None, compare=False
    )
    citation: str = ""  # a textbook theorem the general statement rests on
    custom: str = ""  # name of a dedicated proof procedure (Kind.CUSTOM)
    note: str = ""

    def var(self, name: str) -> Var:
        for v in self.parameters:
            if v.name == name:
                return v
        raise KeyError(name)


# ---------------------------------------------------------------------------------------------
# Symbols local to single claims
S = sp.Symbol
c, H, k, n, C, Cp, eta, q, delta = F.c, F.H, F.k, F.n, F.C, F.Cp, F.eta, F.q, F.delta
m = S("m", positive=True)  # a number of input bits
U = S("U", positive=True)  # number of Stage 2 iterations
T = S("T", positive=True)  # number of tuples
F0, F1, F3 = S("F0", positive=True), S("F1", positive=True), S("F3", positive=True)
Nb = S("Nb", positive=True)  # layer-0 heads fed by one input bit
Th = S("Th", positive=True)  # unsatisfied tuples k-depending on one layer-0 head
Bh = S("Bh", positive=True)  # input bits one head/tuple k-depends on
Tb = S("Tb", positive=True)  # unsatisfied tuples k-depending on one input bit
j = S("j", nonnegative=True, integer=True)
p = S("p", positive=True)
s_ = S("s", positive=True)
x_ = S("x", positive=True)
D1 = S("D1", positive=True)
Dv = S("Dv", positive=True)
R = S("R", positive=True)
a_ = S("a", positive=True)
G = S("G", positive=True)
Av = S("A", positive=True)
Bv = S("B", positive=True)
fv = S("f", positive=True)
fa = S("f_actual", positive=True)
E = S("E", positive=True)
u_ = S("u", positive=True)

R_ = sp.Rational

# common variables with search samples
V_c = Var(c, INT(1), (sp.Integer(1), sp.Integer(2), sp.Integer(3)))
V_H = Var(H, INT(1), (sp.Integer(1), sp.Integer(2)))
V_C = Var(C, FRACTION_C, (sp.Integer(1), R_(9, 10), R_(1, 2)))
V_eta = Var(eta, UNIT_HALF, (R_(1, 4), R_(1, 10), R_(1, 100)))
V_q = Var(q, UNIT_OPEN, (R_(1, 100), R_(1, 10), R_(1, 3)))
V_delta = Var(delta, POS, (R_(1, 2), sp.Integer(1), sp.Integer(50)))
V_n = Var(n, INT(1), (sp.Integer(8), sp.Integer(10), sp.Integer(40)))


def _unit_open(x: sp.Symbol, values: tuple, name: str) -> Var:
    """A variable in (0, 1), reparametrized as t/(1+t) with t > 0 for sympy."""
    t = S(name, positive=True)
    return Var(x, UNIT_OPEN, values, reparam=t / (1 + t))


V_A = _unit_open(Av, (R_(1, 4),), "a")
V_B = _unit_open(Bv, (R_(1, 2),), "b")

PAPER = "Hahn 2020 §5.1"
EXTRACT = "Hahn 2020 §5 (extract)"
SUPP = "Hahn 2020 supplement S1"

_r = Cp / C
_eta_default = (1 - _r) / 4
_s_default = (1 - _r) / (1 + _r)
_q_default = 2 * _s_default / 3
_delta_default = R_(1, 2)
_eta_suggested = (1 - 2 * Cp / C) / 2


def _graph_oracle(degree: Callable[[Mapping[str, Fraction]], Fraction], target: Callable):
    """min α over graphs with k vertices and Δ ≤ ⌊degree⌋ is ≥ target? Exhaustive for k ≤ 5;
    for larger k only the witness ⌊k/(d+1)⌋ disjoint K_{d+1} (plus isolated rest) is tried,
    whose independence number is its number of components."""

    def oracle(env: Mapping[str, Fraction]) -> bool | None:
        kk = int(env["k"])
        dd = int(degree(env) // 1)
        lo = min_independence_number(kk, dd)
        if lo is not None:
            return Fraction(lo) >= target(env)
        components = kk // (dd + 1) + (1 if kk % (dd + 1) else 0)
        return False if Fraction(components) < target(env) else None

    return oracle


def _chernoff_oracle(env: Mapping[str, Fraction]) -> bool | None:
    """P(Bin(m, q) > (1+δ)qm) ≤ exp(−δ²q(1−2η)Cn/3), exactly / with arb."""
    return binomial_tail_exceeds(
        int(env["m"]),
        Fraction(env["q"]),
        (1 + Fraction(env["delta"])) * Fraction(env["q"]) * int(env["m"]),
        F.chernoff8,
        env,
    )


CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="def5.default-choice",
        source=(Source(PAPER, "end of Stage 3"), Source(SUPP, "Definition 5")),
        version=Version.ATTNCERT,
        statement="η=(1−r)/4, q=2s/3, δ=½ with r=C′/C, s=(1−r)/(1+r) satisfy Definition 5 "
        "and δ ∈ (0,1)",
        hypotheses=(Cp < C,),
        conclusion=sp.And(
            _eta_default > 0,
            _eta_default < R_(1, 2),
            _q_default > 0,
            _q_default < 1,
            (1 + _delta_default) * _q_default < 1,
            sp.Eq((1 - 2 * _eta_default) * (1 - (1 + _delta_default) * _q_default), Cp / C),
        ),
        parameters=(V_C, Var(Cp, POS, (C / 4, C / 2, 3 * C / 4, C * R_(99, 100)))),
        slacks=(Slack("Cp", "ratio_le", C, strict=True),),
    ),
    Claim(
        id="def5.suggested-choice",
        source=(Source(SUPP, "Definition 5 ('A possible choice: (1+δ)q = ½, 2η = 1 − 2C′/C')"),),
        version=Version.SUPPLEMENT,
        statement="(1+δ)q = ½, 2η = 1 − 2C′/C gives η ∈ (0,½) and Definition 5's equation",
        hypotheses=(Cp < C,),
        conclusion=sp.And(
            _eta_suggested > 0,
            _eta_suggested < R_(1, 2),
            sp.Eq((1 - 2 * _eta_suggested) * (1 - R_(1, 2)), Cp / C),
        ),
        parameters=(V_C, Var(Cp, POS, (C / 4, C / 2, 3 * C / 4))),
        slacks=(Slack("Cp", "ratio_le", C, strict=True),),
    ),
    Claim(
        id="stage1.heavy-bits",
        source=(Source(PAPER, "Stage 1"), Source(SUPP, "Lemma 6, proof")),
        statement="m bits with > c/(ηC) dependents each, ≤ nc bit–activation pairs ⇒ m ≤ ηCn",
        hypotheses=(m * c / (eta * C) <= n * c,),
        conclusion=m <= eta * C * n,
        parameters=(V_n, V_c, V_eta, V_C, Var(m, NONNEG, (eta * C * n, eta * C * n + 1))),
        slacks=(Slack("m", "ratio_le", eta * C * n),),
    ),
    Claim(
        id="stage1.free-bits",
        source=(Source(PAPER, "Stage 1"), Source(SUPP, "Lemma 6 (5)")),
        statement="≥ Cn free, ≤ ηCn newly fixed ⇒ ≥ (1−η)Cn free",
        hypotheses=(C * n <= F0, m <= eta * C * n),
        conclusion=F0 - m >= (1 - eta) * C * n,
        parameters=(V_n, V_eta, V_C, Var(F0, POS, (C * n,)), Var(m, NONNEG, (eta * C * n,))),
        slacks=(Slack("F0", "ge", C * n), Slack("m", "le", eta * C * n)),
    ),
    Claim(
        id="stage2.pigeonhole",
        source=(Source(PAPER, "Stage 2"), Source(SUPP, "Lemma 15")),
        statement="> 2^c kH tuples over ≤ 2^c values ⇒ some value shared by > kH tuples",
        hypotheses=(2**c * k * H < T,),
        conclusion=T / 2**c > k * H,
        parameters=(
            V_c,
            V_H,
            Var(k, INT(1), (sp.Integer(1), sp.Integer(3))),
            Var(T, POS, (2**c * k * H + 1,)),
        ),
        slacks=(Slack("T", "ge", 2**c * k * H, strict=True),),
    ),
    Claim(
        id="stage2.iterations",
        source=(Source(PAPER, "Stage 2"), Source(SUPP, "Lemma 17 (13)")),
        statement="≤ 2^c Hn tuples, each iteration satisfies ≥ kH of them ⇒ U ≤ 2^c n/k",
        hypotheses=(U * k * H <= 2**c * H * n,),
        conclusion=2**c * n / k >= U,
        parameters=(
            V_c,
            V_H,
            V_n,
            Var(k, INT(1), (sp.Integer(4),)),
            Var(U, NONNEG, (2**c * n / k,)),
        ),
        slacks=(Slack("U", "ratio_le", 2**c * n / k),),
    ),
    *[
        Claim(
            id=f"stage2.free-bits[{ver.value}]",
            source=(src,),
            version=ver,
            statement=f"U ≤ 2^c n/k ⇒ (1−η)Cn − cU ≥ ((1−η)C − {lab})n",
            hypotheses=((1 - eta) * C * n <= F1, 2**c * n / k >= U),
            conclusion=F1 - c * U >= ((1 - eta) * C - bound) * n,
            parameters=(
                V_n,
                V_c,
                Var(k, INT(1), (sp.Integer(8), sp.Integer(16))),
                V_eta,
                V_C,
                Var(F1, POS, ((1 - eta) * C * n,)),
                Var(U, NONNEG, (2**c * n / k,)),
            ),
            slacks=(Slack("F1", "ge", (1 - eta) * C * n), Slack("U", "ratio_le", 2**c * n / k)),
        )
        for ver, src, bound, lab in (
            (Version.PAPER, Source(PAPER, "Stage 2"), 2**c * c / k, "2^c c/k"),
            (Version.EXTRACT, Source(EXTRACT, "Stage 2 [p. 7–8]"), 2**c / k, "2^c/k"),
            (Version.SUPPLEMENT, Source(SUPP, "Lemma 17 (14)"), 2**c * c / k, "2^c c/k"),
        )
    ],
    *[
        Claim(
            id=f"stage2.choice-of-k[{ver.value}]",
            source=(src,),
            version=ver,
            statement=f"k with {lab} ⇒ the Stage 2 bound ((1−η)C − 2^c·{cf}/k)n ≥ (1−2η)Cn",
            hypotheses=(hyp,),
            conclusion=(1 - eta) * C - loss >= (1 - 2 * eta) * C,
            parameters=(
                V_c,
                V_eta,
                V_C,
                Var(k, INT(1), (sp.ceiling(kb), sp.ceiling(kb) + 1, 10 * sp.ceiling(kb))),
            ),
            slacks=(Slack("k", "ratio_ge", kb),),
            note=note,
        )
        for ver, src, hyp, loss, kb, lab, cf, note in (
            (
                Version.PAPER,
                Source(PAPER, "Stage 2 ('choosing k so large that 2^c c/k ≤ η')"),
                2**c * c / k <= eta,
                2**c * c / k,
                2**c * c / eta,
                "2^c c/k ≤ η",
                "c",
                "true iff C = 1; needs 2^c c/k ≤ ηC",
            ),
            (
                Version.EXTRACT,
                Source(EXTRACT, "Stage 2 ('choosing k so large that 2^c/k ≤ η')"),
                2**c / k <= eta,
                2**c / k,
                2**c / eta,
                "2^c/k ≤ η",
                "1",
                "",
            ),
            (
                Version.SUPPLEMENT,
                Source(SUPP, "Lemma 17 ('choosing k so large that 2^c c/k ≤ ηC'; OCR garbled)"),
                2**c * c / k <= eta * C,
                2**c * c / k,
                2**c * c / (eta * C),
                "2^c c/k ≤ ηC",
                "c",
                "",
            ),
        )
    ],
    Claim(
        id="stage2.bits-per-input",
        source=(Source(PAPER, "Stage 2"), Source(SUPP, "Corollary 18, proof")),
        statement="bit feeds ≤ c/(ηC) heads, head has ≤ 2^c kH depending tuples ⇒ "
        "bit has ≤ (2^c/η)kcH/C depending tuples",
        hypotheses=(Nb <= c / (eta * C), Th <= 2**c * k * H),
        conclusion=Nb * Th <= 2**c / eta * k * c * H / C,
        parameters=(
            V_c,
            V_H,
            Var(k, INT(1), (sp.Integer(2),)),
            V_eta,
            V_C,
            Var(Nb, POS, (c / (eta * C),)),
            Var(Th, POS, (2**c * k * H,)),
        ),
        slacks=(Slack("Nb", "ratio_le", c / (eta * C)), Slack("Th", "ratio_le", 2**c * k * H)),
    ),
    *[
        Claim(
            id=f"stage2.f[{ver.value}]",
            source=srcs,
            version=ver,
            statement=f"≤ {lab} bits per {unit} × ≤ (2^c/η)kcH/C tuples per bit ⇒ f ≤ E·k²",
            hypotheses=(Bh <= bits, Tb <= 2**c / eta * k * c * H / C),
            conclusion=Bh * Tb <= E_ * k**2,
            parameters=(
                V_c,
                V_H,
                Var(k, INT(1), (sp.Integer(2),)),
                V_eta,
                V_C,
                Var(Bh, POS, (bits,)),
                Var(Tb, POS, (2**c / eta * k * c * H / C,)),
            ),
            slacks=(
                Slack("Bh", "ratio_le", bits),
                Slack("Tb", "ratio_le", 2**c / eta * k * c * H / C),
            ),
        )
        for ver, srcs, bits, E_, lab, unit in (
            (
                Version.PAPER,
                (Source(PAPER, "end of Stage 2; Stage 3 'f = 2^{2c}/η c²k²H/C'"),),
                2**c * c * k,
                F.E_paper,
                "2^c ck",
                "head",
            ),
            (
                Version.SUPPLEMENT,
                (Source(SUPP, "Corollary 18 (tuple k-depends on ≤ ck bits, Lemma 13)"),),
                c * k,
                F.E_supplement,
                "ck",
                "tuple",
            ),
        )
    ],
    Claim(
        id="lemma4.width",
        source=(Source(PAPER, "end of §5.1"), Source(SUPP, "proof of Lemma 4")),
        statement="c skip bits + H heads × 2^c values × ck bits = c(2^c kH + 1)",
        hypotheses=(),
        conclusion=sp.Eq(c + H * 2**c * c * k, c * (2**c * k * H + 1)),
        parameters=(V_c, V_H, Var(k, INT(1), (sp.Integer(5),))),
    ),
    *[
        Claim(
            id=f"stage3.chernoff[{tag}]",
            source=srcs,
            version=ver,
            kind=Kind.ORACLE,
            statement=f"(8): δ {rng}, m ≥ (1−2η)Cn free bits each fixed w.p. q ⇒ "
            "P(more than (1+δ)qm fixed) ≤ exp(−δ²q(1−2η)Cn/3)",
            hypotheses=(*hyps, (1 + delta) * q < 1, m >= (1 - 2 * eta) * C * n, m <= n),
            conclusion=sp.Symbol("P(X0) ≤ exp(−δ²q(1−2η)Cn/3)"),
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
        )
        for tag, ver, srcs, hyps, rng, cite in (
            (
                "δ∈(0,1]",
                Version.ALL,
                (Source(PAPER, "(8), X₀ with δ ∈ (0,1)"), Source(SUPP, "Lemma 21 (18)")),
                (delta <= 1,),
                "∈ (0,1]",
                "Mitzenmacher & Upfal 2017, Theorem 4.4 (needs 0 < δ ≤ 1)",
            ),
            (
                "Definition 5 range δ>0",
                Version.ALL,
                (
                    Source(PAPER, "(8) with 'δ > 0 (such that (1+δ)q ∈ (0,1))'"),
                    Source(SUPP, "Definition 5 (δ > 0) used in Lemma 21"),
                ),
                (),
                "> 0",
                "",
            ),
        )
    ],
    Claim(
        id="stage3.P(Y)",
        source=(Source(PAPER, "Stage 3"), Source(SUPP, "Lemma 22 (22)")),
        statement="an activation with j ≤ c free bits is fixed to its maximizing value w.p. "
        "(q/2)^j ≥ (q/2)^c, so P(Y) ≤ 1 − (q/2)^c",
        hypotheses=(j <= c,),
        conclusion=(q / 2) ** j >= (q / 2) ** c,
        parameters=(V_c, V_q, Var(j, INT(0), (sp.Integer(0), c))),
        slacks=(Slack("j", "le", c),),
        log_goal=True,
    ),
    Claim(
        id="stage3.independent-events[as written]",
        source=(
            Source(
                PAPER,
                "Stage 3 ('dependent on at most (1/η)c²/C other events. "
                "Therefore … ≥ k/((1/η)c²/C) independent')",
            ),
            Source(SUPP, "(23)–(25)"),
        ),
        version=Version.ALL,
        kind=Kind.ORACLE,
        statement="k events, each dependent on ≤ d = c²/(ηC) others ⇒ ≥ k/d mutually "
        "independent among them (min independence number over all such graphs)",
        hypotheses=(),
        conclusion=sp.Symbol("α(G) ≥ k/d for every graph on k vertices with Δ(G) ≤ d"),
        parameters=(
            V_c,
            V_eta,
            V_C,
            Var(k, INT(2), (*(sp.Integer(i) for i in range(2, 6)), sp.floor(c**2 / (eta * C)) + 1)),
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
        hypotheses=(),
        conclusion=sp.Symbol("α(G) ≥ kηC/c² for every graph on k vertices with Δ(G) ≤ c(c/(ηC)−1)"),
        parameters=(V_c, V_eta, V_C, Var(k, INT(2), tuple(sp.Integer(i) for i in range(2, 6)))),
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
        id="stage3.eq9",
        source=(Source(PAPER, "(9)"), Source(SUPP, "Lemma 22 (19), (27)")),
        statement="s ≥ x independent events of probability ≤ p < 1 ⇒ p^s ≤ p^x "
        "(x = kηC/c², p = 1 − (q/2)^c)",
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
        id="lll.conditions",
        source=(
            Source(PAPER, "(10), (11) via Mitzenmacher & Upfal Thm 6.17"),
            Source(SUPP, "Lemma 23 (31), (32)"),
        ),
        statement="an event with f_actual ≤ f neighbours: A(1−B)(1−A)^{f_actual} ≥ "
        "A(1−B)(1−A)^f, so (10) implies the asymmetric-LLL condition",
        hypotheses=(fa <= fv,),
        conclusion=Av * (1 - Bv) * (1 - Av) ** fa >= Av * (1 - Bv) * (1 - Av) ** fv,
        parameters=(
            V_A,
            V_B,
            Var(fv, POS, (sp.Integer(10),)),
            Var(fa, POS, (fv, fv / 2)),
        ),
        slacks=(Slack("f_actual", "le", fv),),
        log_goal=True,
    ),
    Claim(
        id="lll.eq12-implies-eq10",
        source=(Source(PAPER, "(12) 'For (10), we need'"), Source(SUPP, "(33)")),
        statement="D ≤ R ⇒ D^k ≤ R^k, where D^k = (9)'s bound and R^k = A(1−B)(1−A)^f",
        hypotheses=(Dv <= R,),
        conclusion=Dv**k <= R**k,
        parameters=(
            Var(Dv, UNIT_OPEN, (R_(1, 2),)),
            Var(R, POS, (Dv, 2 * Dv)),
            Var(k, INT(1), (sp.Integer(3),)),
        ),
        slacks=(Slack("Dv", "ratio_le", R),),
        log_goal=True,
    ),
    Claim(
        id="lll.eq12-rhs-power",
        source=(Source(PAPER, "(10) ⇔ (12)"), Source(SUPP, "(31) ⇔ (33)")),
        statement="(A^{1/k}(1−B)^{1/k}(1−A)^{f/k})^k = A(1−B)(1−A)^f and D^k = (9)'s bound",
        hypotheses=(),
        conclusion=sp.And(
            sp.Eq(
                (Av ** (1 / k) * (1 - Bv) ** (1 / k) * (1 - Av) ** (fv / k)) ** k,
                Av * (1 - Bv) * (1 - Av) ** fv,
            ),
            sp.Eq(((1 - p) ** (eta * C / c**2)) ** k, (1 - p) ** (k * eta * C / c**2)),
        ),
        parameters=(
            V_A,
            V_B,
            _unit_open(p, (R_(1, 8),), "w"),
            Var(fv, POS, (sp.Integer(10),)),
            V_c,
            V_eta,
            V_C,
            Var(k, INT(1), (sp.Integer(3),)),
        ),
    ),
    Claim(
        id="lll.limit-A",
        source=(Source(PAPER, "after (12)"), Source(SUPP, "after (33)")),
        kind=Kind.LIMIT,
        statement="lim_{k→∞} A^{1/k} = lim exp(−log(k²)/k) = 1",
        hypotheses=(),
        conclusion=sp.Eq(sp.Limit((1 / k**2) ** (1 / k), k, sp.oo), 1),
        parameters=(),
    ),
    Claim(
        id="lll.limit-1-B",
        source=(Source(PAPER, "(12)"), Source(SUPP, "(33)")),
        kind=Kind.LIMIT,
        statement="lim_{k→∞} (1−B)^{1/k} = 1",
        hypotheses=(),
        conclusion=sp.Eq(sp.Limit(R_(1, 2) ** (1 / k), k, sp.oo), 1),
        parameters=(),
    ),
    Claim(
        id="lll.limit-1-A-f",
        source=(Source(PAPER, "after (12), E := (2^{2c}/η)c²H/C"), Source(SUPP, "after (33)")),
        kind=Kind.LIMIT,
        statement="lim_{k→∞} (1 − 1/k²)^{f/k} = lim (1 − 1/k²)^{E k} = 1 for every E > 0 "
        "(both versions of f = E k²)",
        hypotheses=(),
        conclusion=sp.Eq(sp.Limit((1 - 1 / k**2) ** (E * k), k, sp.oo), 1),
        parameters=(Var(E, POS, (F.E_paper, F.E_supplement)),),
    ),
    Claim(
        id="lll.limit-E2",
        source=(Source(PAPER, "'= lim (1 − E²/k²)^k = 1'"), Source(SUPP, "after (33)")),
        kind=Kind.LIMIT,
        statement="lim_{k→∞} (1 − E²/k²)^k = 1 (the paper's rewritten form; the sequences "
        "differ termwise, only the limits agree)",
        hypotheses=(),
        conclusion=sp.Eq(sp.Limit((1 - E**2 / k**2) ** k, k, sp.oo), 1),
        parameters=(Var(E, POS, (F.E_paper,)),),
    ),
    Claim(
        id="lll.rhs12-limit",
        source=(
            Source(PAPER, "'the RHS of (12) can be made arbitrarily close to 1'"),
            Source(SUPP, "after (33)"),
        ),
        kind=Kind.LIMIT,
        statement="lim_{k→∞} A^{1/k}(1−B)^{1/k}(1−A)^{Ek} = 1, so (12) holds for large k as D < 1",
        hypotheses=(),
        conclusion=sp.Eq(
            sp.Limit(
                (1 / k**2) ** (1 / k) * R_(1, 2) ** (1 / k) * (1 - 1 / k**2) ** (E * k), k, sp.oo
            ),
            1,
        ),
        parameters=(Var(E, POS, (F.E_paper, F.E_supplement)),),
    ),
    Claim(
        id="lll.rhs12-monotone",
        source=(Source(PAPER, "(12) 'if k is chosen large enough'"), Source(SUPP, "(33)")),
        version=Version.ATTNCERT,
        kind=Kind.CUSTOM,
        custom="rhs12_monotone",
        statement="for real k ≥ 2 and every E > 0, log RHS(12) = −(2 log k + log 2)/k + "
        "E k log(1 − 1/k²) increases in k; so the k satisfying (12) form a ray [k_min, ∞)",
        hypotheses=(k >= 2,),
        conclusion=sp.diff(-(2 * sp.log(k) + sp.log(2)) / k + E * k * sp.log(1 - 1 / k**2), k) > 0,
        parameters=(
            Var(
                k,
                Domain(Fraction(2), lo_open=False),
                (sp.Integer(2), sp.Integer(3), sp.Integer(1000)),
            ),
            Var(E, POS, (R_(1, 100), sp.Integer(1), sp.Integer(10**6))),
        ),
    ),
    Claim(
        id="lll.eq11-nth-root",
        source=(
            Source(PAPER, "'In order to also satisfy (11), we need'"),
            Source(SUPP, "end of Lemma 23"),
        ),
        statement="(n-th root of (11) with (8), in logs) −a ≤ log(B)/n + G log(1−A) ⇒ "
        "exp(−an) ≤ B(1−A)^{Gn}; a = δ²q(1−2η)C/3, G = 2^c H",
        hypotheses=(-a_ <= sp.log(Bv) / n + G * sp.log(1 - Av),),
        conclusion=sp.exp(-a_ * n) <= Bv * (1 - Av) ** (G * n),
        parameters=(
            Var(a_, POS, (R_(1, 10),)),
            Var(
                Av,
                UNIT_OPEN,
                (R_(1, 10**6),),
                reparam=S("aa", positive=True) / (1 + S("aa", positive=True)),
            ),
            V_B,
            Var(G, POS, (sp.Integer(4),)),
            Var(n, INT(1), (sp.Integer(100),)),
        ),
        slacks=(Slack("a", "ge", -sp.log(Bv) / n - G * sp.log(1 - Av)),),
        log_goal=True,
    ),
    Claim(
        id="cor24.free-fraction",
        source=(Source(PAPER, "end of Stage 3"), Source(SUPP, "Corollary 24")),
        statement="m ≥ (1−2η)Cn free after Stage 2, X₀ avoided, Definition 5 ⇒ ≥ C′n free",
        hypotheses=(
            m >= (1 - 2 * eta) * C * n,
            (1 - (1 + delta) * q) * m <= F3,
            (1 + delta) * q < 1,
            sp.Eq(Cp, C * (1 - 2 * eta) * (1 - (1 + delta) * q)),
        ),
        conclusion=Cp * n <= F3,
        parameters=(
            V_n,
            V_C,
            V_eta,
            V_delta,
            V_q,
            Var(Cp, POS, (C * (1 - 2 * eta) * (1 - (1 + delta) * q),)),
            Var(m, POS, ((1 - 2 * eta) * C * n,)),
            Var(F3, POS, ((1 - (1 + delta) * q) * m,)),
        ),
        slacks=(
            Slack("Cp", "eq", C * (1 - 2 * eta) * (1 - (1 + delta) * q)),
            Slack("F3", "ge", (1 - (1 + delta) * q) * m),
            Slack("m", "ge", (1 - 2 * eta) * C * n),
            Slack("q", "ratio_le", 1 / (1 + delta), strict=True),
        ),
    ),
)


def claim(claim_id: str) -> Claim:
    """The claim with this id (KeyError if unknown)."""
    for cl in CLAIMS:
        if cl.id == claim_id:
            return cl
    raise KeyError(claim_id)
