"""Stage 3 of Hahn's Depth Reduction Lemma as claims, second half: the Lovász Local Lemma
conditions ((10)–(12), S1 (30)–(33), Lemma 23), the limits after (12) and Corollary 24's
free fraction.

Each claim names the displays it checks (``displays``) and the lines it follows from.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from attncert.symbolic import formulas as F
from attncert.symbolic.claim_types import (
    INT,
    POS,
    UNIT_OPEN,
    Claim,
    Domain,
    Kind,
    Slack,
    Source,
    Var,
    Version,
    unit_open,
)
from attncert.symbolic.claim_vars import (
    F3,
    NX,
    PAPER,
    R_,
    SUPP,
    V_A,
    V_B,
    V_C,
    V_H,
    Av,
    Bv,
    C,
    Cp,
    Dv,
    E,
    G,
    H,
    R,
    V_c,
    V_delta,
    V_eta,
    V_n,
    V_q,
    Vz,
    a_,
    bb,
    c,
    delta,
    ee,
    eta,
    fa,
    fv,
    k,
    m,
    n,
    p,
    q,
)

__implements__ = (
    "Hahn eq. (6)",
    "Hahn eq. (10)",
    "Hahn eq. (11)",
    "Hahn eq. (12)",
    "Hahn S1 Lemma 23",
    "Hahn S1 Corollary 24",
    "Hahn S1 eq. (3)",
    "Hahn S1 eq. (31)",
    "Hahn S1 eq. (32)",
    "Hahn S1 eq. (33)",
)

__all__ = ["LLL_CLAIMS"]

S = sp.Symbol

LLL_CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="lll.event-count",
        source=(Source(SUPP, "Lemma 23"),),
        version=Version.SUPPLEMENT,
        statement="≤ 2^c values × H heads × n positions ⇒ ≤ 2^c Hn events X",
        printed="The number of events X_{i,h,k}^(z) is bounded by 2^c Hn",
        displays=("S1 Lemma 23: event count",),
        follows_from=("S1 (6)",),
        hypotheses=(Vz <= 2**c,),
        conclusion=Vz * H * n <= 2**c * H * n,
        parameters=(V_c, V_H, V_n, Var(Vz, POS, (2**c,))),
        slacks=(Slack("Vz", "ratio_le", 2**c),),
    ),
    Claim(
        id="lll.conditions",
        source=(
            Source(PAPER, "(10) via Mitzenmacher & Upfal Thm 6.17"),
            Source(SUPP, "Lemma 23 (31)"),
        ),
        statement="an event with f_actual ≤ f neighbours: A(1−B)(1−A)^{f_actual} ≥ "
        "A(1−B)(1−A)^f, so (10) implies the asymmetric-LLL condition",
        printed="P(X_{i,h}^(z)) ≤ A(1 − B)(1 − A)^f",
        displays=("(10)", "S1 (31)"),
        follows_from=("§5.1 Stage 3: independence", "S1 (30)"),
        hypotheses=(fa <= fv,),
        conclusion=Av * (1 - Bv) * (1 - Av) ** fa >= Av * (1 - Bv) * (1 - Av) ** fv,
        parameters=(V_A, V_B, Var(fv, POS, (sp.Integer(10),)), Var(fa, POS, (fv, fv / 2))),
        slacks=(Slack("f_actual", "le", fv),),
        log_goal=True,
    ),
    Claim(
        id="lll.eq11-count",
        source=(Source(PAPER, "(11)"), Source(SUPP, "Lemma 23 (32)")),
        statement="X₀ depends on all NX ≤ 2^c Hn events X: B(1−A)^{NX} ≥ B(1−A)^{2^c Hn}, so "
        "(11) implies the asymmetric-LLL condition for X₀",
        printed="P(X_0) ≤ B(1 − A)^{2^c Hn}",
        displays=("(11)", "S1 (32)"),
        follows_from=("S1 Lemma 23: event count",),
        hypotheses=(2**c * H * n >= NX,),
        conclusion=Bv * (1 - Av) ** NX >= Bv * (1 - Av) ** (2**c * H * n),
        parameters=(V_A, V_B, V_c, V_H, V_n, Var(NX, POS, (2**c * H * n, sp.Integer(1)))),
        slacks=(Slack("NX", "le", 2**c * H * n),),
        log_goal=True,
    ),
    Claim(
        id="lll.D-range",
        source=(Source(PAPER, "(12)"), Source(SUPP, "(33)")),
        statement="D = b^e with b = 1 − (q/2)^c ∈ (0, 1) (stage3.P(Y)-range) and e = ηC/c² > 0 "
        "lies in (0, 1)",
        printed="D = (1 − (q/2)^c)^{1/((1/η)c²/C)} ∈ (0, 1)",
        displays=("(12)", "S1 (33)"),
        follows_from=("S1 (22)",),
        hypotheses=(),
        conclusion=sp.And(bb**ee > 0, bb**ee < 1),
        parameters=(
            Var(bb, UNIT_OPEN, (R_(1, 2), R_(99, 100)), reparam=1 / (1 + S("v", positive=True))),
            Var(ee, POS, (R_(1, 8), sp.Integer(3))),
        ),
    ),
    Claim(
        id="lll.eq12-implies-eq10",
        source=(Source(PAPER, "(12) 'For (10), we need'"), Source(SUPP, "(33)")),
        statement="D ≤ R ⇒ D^k ≤ R^k, where D^k = (9)'s bound and R^k = A(1−B)(1−A)^f",
        printed="For (10), we need D ≤ A^{1/k}(1 − B)^{1/k}(1 − A)^{f/k}",
        displays=("(12)", "S1 (33)"),
        follows_from=("(9)",),
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
        printed="D ≤ A^{1/k}(1 − B)^{1/k}(1 − A)^{f/k}",
        displays=("(12)", "S1 (33)"),
        hypotheses=(),
        conclusion=sp.And(
            sp.Eq(
                (Av ** (1 / k) * (1 - Bv) ** (1 / k) * (1 - Av) ** (fv / k)) ** k,
                Av * (1 - Bv) * (1 - Av) ** fv,
                evaluate=False,
            ),
            sp.Eq(
                ((1 - p) ** (eta * C / c**2)) ** k, (1 - p) ** (k * eta * C / c**2), evaluate=False
            ),
        ),
        parameters=(
            V_A,
            V_B,
            unit_open(p, (R_(1, 8),), "w"),
            Var(fv, POS, (sp.Integer(10),)),
            V_c,
            V_eta,
            V_C,
            Var(k, INT(1), (sp.Integer(3),)),
        ),
    ),
    Claim(
        id="lll.A-root-identity",
        source=(Source(PAPER, "after (12)"), Source(SUPP, "after (33)")),
        statement="the equality A^{1/k} = exp(−log(k²)/k) as printed (A = 1/k²)",
        printed="A^{1/k} = exp(−log(k²)/k)",
        displays=("§5.1 [lim A]", "S1 [lim A]"),
        hypotheses=(),
        conclusion=sp.Eq((1 / k**2) ** (1 / k), sp.exp(-sp.log(k**2) / k), evaluate=False),
        parameters=(Var(k, INT(1), (sp.Integer(2), sp.Integer(7))),),
    ),
    Claim(
        id="lll.limit-A",
        source=(Source(PAPER, "after (12)"), Source(SUPP, "after (33)")),
        kind=Kind.LIMIT,
        statement="lim_{k→∞} A^{1/k} = lim exp(−log(k²)/k) = 1",
        printed="lim_{k→∞} A^{1/k} = 1",
        displays=("§5.1 [lim A]", "S1 [lim A]"),
        hypotheses=(),
        conclusion=sp.Eq(sp.Limit((1 / k**2) ** (1 / k), k, sp.oo), 1),
        parameters=(),
    ),
    Claim(
        id="lll.limit-1-B",
        source=(Source(PAPER, "(12)"), Source(SUPP, "(33)")),
        kind=Kind.LIMIT,
        statement="lim_{k→∞} (1−B)^{1/k} = 1",
        displays=("(12)", "S1 (33)"),
        hypotheses=(),
        conclusion=sp.Eq(sp.Limit(R_(1, 2) ** (1 / k), k, sp.oo), 1),
        parameters=(),
    ),
    *[
        Claim(
            id=f"lll.f-over-k-identity[{ver.value}]",
            source=(src,),
            version=ver,
            statement="the equality (1−A)^{f/k} = (1 − 1/k²)^{E k} as printed (f = E k²)",
            printed=f"(1 − A)^{{f/k}} equals (1 − 1/k²)^{{{lab}c²kH/C}}",
            displays=(disp,),
            follows_from=("§5.1 Stage 2: f" if ver is Version.PAPER else "S1 (30)",),
            hypotheses=(),
            conclusion=sp.Eq(
                (1 - 1 / k**2) ** (E_ * k**2 / k), (1 - 1 / k**2) ** (E_ * k), evaluate=False
            ),
            parameters=(V_c, V_H, V_eta, V_C, Var(k, INT(2), (sp.Integer(3),))),
        )
        for ver, src, E_, lab, disp in (
            (
                Version.PAPER,
                Source(PAPER, "after (12)"),
                F.E_paper,
                "(2^{2c}/η)",
                "§5.1 [lim (1−A)]",
            ),
            (
                Version.SUPPLEMENT,
                Source(SUPP, "after (33)"),
                F.E_supplement,
                "(2^c/η)",
                "S1 [lim (1−A)]",
            ),
        )
    ],
    Claim(
        id="lll.limit-1-A-f",
        source=(Source(PAPER, "after (12), E := (2^{2c}/η)c²H/C"), Source(SUPP, "after (33)")),
        kind=Kind.LIMIT,
        statement="lim_{k→∞} (1 − 1/k²)^{f/k} = lim (1 − 1/k²)^{E k} = 1 for every E > 0 "
        "(both versions of f = E k²)",
        displays=("§5.1 [lim (1−A)]", "S1 [lim (1−A)]"),
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
        printed="= lim_{k→∞} (1 − E²/k²)^k = 1",
        displays=("§5.1 [lim (1−A)]", "S1 [lim (1−A)]"),
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
        displays=("(12)", "S1 (33)"),
        follows_from=("lll.limit-A", "lll.limit-1-B", "lll.limit-1-A-f", "lll.D-range"),
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
        displays=("(12)", "S1 (33)"),
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
        printed="exp(−δ²q(1 − 2η)C/3) ≤ B^{1/n}(1 − A)^{2^c H}",
        displays=("§5.1 [(11) per n]", "S1 [(32) per n]"),
        follows_from=("(8)", "(11)"),
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
        id="lll.eq11-limit-k",
        source=(
            Source(PAPER, "'which holds for n, k large enough'"),
            Source(SUPP, "end of Lemma 23"),
        ),
        kind=Kind.LIMIT,
        statement="lim_{k→∞} (1 − 1/k²)^G = 1 > exp(−a): some k makes the right side exceed "
        "exp(−a) before n is chosen",
        displays=("§5.1 [(11) per n]", "S1 [(32) per n]"),
        hypotheses=(),
        conclusion=sp.Eq(sp.Limit((1 - 1 / k**2) ** G, k, sp.oo), 1),
        parameters=(Var(G, POS, (sp.Integer(4),)),),
    ),
    Claim(
        id="lll.eq11-limit-n",
        source=(
            Source(PAPER, "'which holds for n, k large enough'"),
            Source(SUPP, "end of Lemma 23"),
        ),
        kind=Kind.LIMIT,
        statement="lim_{n→∞} B^{1/n} = 1: for that k, (11) holds from some N on",
        displays=("§5.1 [(11) per n]", "S1 [(32) per n]"),
        hypotheses=(),
        conclusion=sp.Eq(sp.Limit(R_(1, 2) ** (1 / n), n, sp.oo), 1),
        parameters=(),
    ),
    Claim(
        id="stage3.free-after",
        source=(Source(PAPER, "end of Stage 3"), Source(SUPP, "Corollary 24, proof")),
        statement="m ≥ (1−2η)Cn free after Stage 2, X₀ avoided (≤ (1+δ)qm fixed) ⇒ "
        "≥ (1−2η)(1−(1+δ)q)Cn free",
        printed="|{i ≤ n : ρ^(3)(i) = *}| ≥ (1 − 2η) · (1 − (1 + δ)q)Cn",
        displays=("§5.1 [Stage 3 free]", "S1 Corollary 24 [free]"),
        follows_from=("S1 (12)", "Definition 20 (X₀ avoided)"),
        hypotheses=(
            m >= (1 - 2 * eta) * C * n,
            (1 - (1 + delta) * q) * m <= F3,
            (1 + delta) * q < 1,
        ),
        conclusion=(1 - 2 * eta) * (1 - (1 + delta) * q) * C * n <= F3,
        parameters=(
            V_n,
            V_C,
            V_eta,
            V_delta,
            V_q,
            Var(m, POS, ((1 - 2 * eta) * C * n,)),
            Var(F3, POS, ((1 - (1 + delta) * q) * m,)),
        ),
        slacks=(
            Slack("F3", "ge", (1 - (1 + delta) * q) * m),
            Slack("m", "ge", (1 - 2 * eta) * C * n),
            Slack("q", "ratio_le", 1 / (1 + delta), strict=True),
        ),
    ),
    Claim(
        id="cor24.free-fraction",
        source=(Source(PAPER, "end of Stage 3"), Source(SUPP, "Corollary 24")),
        statement="m ≥ (1−2η)Cn free after Stage 2, X₀ avoided, Definition 5 ⇒ ≥ C′n free",
        printed="|{i ≤ n : ρ′_n(i) = *}| ≥ C′n",
        displays=("(6)", "S1 (3)", "S1 Corollary 24 [free]"),
        follows_from=("§5.1 [Stage 3 free]", "§5.1 Stage 3: choice", "S1 (4)"),
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
