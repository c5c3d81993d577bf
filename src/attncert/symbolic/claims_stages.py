"""Stages 1 and 2 of Hahn's Depth Reduction Lemma as claims: Definition 5's choices, Stage 1
(main text; supplement Lemma 6), Stage 2 (main text; supplement Lemmas 9, 15, 17 and
Corollary 18) and the width c(2^c kH + 1) of the proof of Lemma 4.

Each claim checks one displayed equation or quoted sentence (``displays``, labels of
:data:`attncert.symbolic.displays.DISPLAYS`) as printed, with the lines it follows from.
Where the main text, the §5 extract and the supplement differ, each version is its own claim
with the same stem (``stage2.choice-of-k[paper]``, ``…[supplement]``).
"""

from __future__ import annotations

import sympy as sp

from attncert.symbolic import formulas as F
from attncert.symbolic import oracles
from attncert.symbolic.claim_types import INT, NONNEG, POS, Claim, Kind, Slack, Source, Var, Version
from attncert.symbolic.claim_vars import (
    EXTRACT,
    F0,
    F1,
    PAPER,
    R_,
    SUPP,
    V_C,
    V_H,
    Bc,
    Bh,
    C,
    Cp,
    H,
    L,
    Nb,
    Pk,
    T,
    Tb,
    Th,
    U,
    V_c,
    V_eta,
    V_n,
    Vz,
    c,
    eta,
    j,
    k,
    m,
    n,
    w,
)

__implements__ = (
    "Hahn Lemma 4",
    "Hahn S1 Definition 5",
    "Hahn S1 Lemma 6",
    "Hahn S1 Lemma 9",
    "Hahn S1 Lemma 15",
    "Hahn S1 Lemma 17",
    "Hahn S1 Corollary 18",
    "Hahn S1 eq. (5)",
    "Hahn S1 eq. (6)",
    "Hahn S1 eq. (10)",
    "Hahn S1 eq. (11)",
    "Hahn S1 eq. (12)",
    "Hahn S1 eq. (13)",
    "Hahn S1 eq. (14)",
    "Hahn S1 eq. (15)",
    "Hahn S1 eq. (16)",
    "Hahn S1 eq. (24)",
    "Hahn S1 eq. (30)",
)

__all__ = ["STAGE_CLAIMS"]

_r = Cp / C
_eta_default = (1 - _r) / 4
_s_default = (1 - _r) / (1 + _r)
_q_default = 2 * _s_default / 3
_delta_default = R_(1, 2)
_eta_suggested = (1 - 2 * Cp / C) / 2
_K = Var(k, INT(1), (sp.Integer(1), sp.Integer(2), sp.Integer(5)))


def _free_bits(ver: Version, src: Source, bound, lab: str, displays: tuple[str, ...]) -> Claim:
    return Claim(
        id=f"stage2.free-bits[{ver.value}]",
        source=(src,),
        version=ver,
        statement=f"U ≤ 2^c n/k ⇒ (1−η)Cn − cU ≥ ((1−η)C − {lab})n",
        printed=f"(1 − η)Cn − cU ≥ ((1 − η)C − {lab})n",
        displays=displays,
        follows_from=("(after Stage 1) ≥ (1−η)Cn free", "U ≤ 2^c n/k"),
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


def _choice_of_k(ver, src, hyp, loss, kb, lab, cf, note, displays) -> Claim:
    return Claim(
        id=f"stage2.choice-of-k[{ver.value}]",
        source=(src,),
        version=ver,
        statement=f"k with {lab} ⇒ the Stage 2 bound ((1−η)C − 2^c·{cf}/k)n ≥ (1−2η)Cn",
        printed=f"By choosing k so large that {lab}, … at least (1 − 2η)Cn",
        displays=displays,
        follows_from=("the Stage 2 bound ((1−η)C − 2^c c/k)n",),
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


def _f_claim(ver, srcs, bits, E_, lab, unit, displays) -> Claim:
    return Claim(
        id=f"stage2.f[{ver.value}]",
        source=srcs,
        version=ver,
        statement=f"≤ {lab} bits per {unit} × ≤ (2^c/η)kcH/C tuples per bit ⇒ f ≤ E·k²",
        printed="f ≤ (2^{2c}/η)c²k²H/C" if ver is Version.PAPER else "≤ (2^c/η)k²c²H/C",
        displays=displays,
        follows_from=("bits per tuple/head", "§5.1 Stage 2: per bit"),
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


STAGE_CLAIMS: tuple[Claim, ...] = (
    # ------------------------------------------------------------------ Definition 5
    Claim(
        id="def5.default-choice",
        source=(Source(PAPER, "end of Stage 3"), Source(SUPP, "Definition 5")),
        version=Version.ATTNCERT,
        statement="η=(1−r)/4, q=2s/3, δ=½ with r=C′/C, s=(1−r)/(1+r) satisfy Definition 5 "
        "and δ ∈ (0,1)",
        printed="choose η ∈ (0, ½), q ∈ (0, 1), δ > 0 … to achieve (1 − 2η)(1 − (1 + δ)q) = C′/C",
        displays=("§5.1 Stage 3: choice",),
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
        note="the text only says such a choice exists; this is an explicit witness",
    ),
    Claim(
        id="def5.suggested-choice",
        source=(Source(SUPP, "Definition 5 ('A possible choice: (1+δ)q = ½, 2η = 1 − 2C′/C')"),),
        version=Version.SUPPLEMENT,
        statement="(1+δ)q = ½, 2η = 1 − 2C′/C gives η ∈ (0,½) and Definition 5's equation",
        printed="A possible choice to satisfy this is (1 + δ)q = ½, 2η = 1 − 2C′/C",
        displays=("S1 Definition 5: choice",),
        follows_from=("S1 (4)",),
        hypotheses=(Cp < C,),
        conclusion=sp.And(
            _eta_suggested > 0,
            _eta_suggested < R_(1, 2),
            sp.Eq((1 - 2 * _eta_suggested) * (1 - R_(1, 2)), Cp / C),
        ),
        parameters=(V_C, Var(Cp, POS, (C / 4, C / 2, 3 * C / 4))),
        slacks=(Slack("Cp", "ratio_le", C, strict=True),),
    ),
    # ------------------------------------------------------------------ Stage 1 / Lemma 6
    Claim(
        id="stage1.pairs-product",
        source=(Source(PAPER, "Stage 1"), Source(SUPP, "Lemma 6, proof")),
        statement="the equality ηCn · (1/η)c/C = nc as printed",
        printed="> ηCn · (1/η)c/C = nc",
        displays=("§5.1 Stage 1", "S1 Lemma 6 proof"),
        hypotheses=(),
        conclusion=sp.Eq(eta * C * n * (1 / eta) * c / C, n * c, evaluate=False),
        parameters=(V_n, V_c, V_eta, V_C),
    ),
    Claim(
        id="stage1.heavy-bits",
        source=(Source(PAPER, "Stage 1"), Source(SUPP, "Lemma 6, proof")),
        statement="m bits with > c/(ηC) dependents each, ≤ nc bit–activation pairs ⇒ m ≤ ηCn "
        "(so after fixing them every free bit feeds ≤ (1/η)c/C layer-0 heads, S1 (24))",
        printed="the number of input bits with > (1/η)c/C depending layer-0 heads is ≤ ηCn",
        displays=("§5.1 Stage 1", "S1 Lemma 6 proof", "S1 (24)"),
        follows_from=("n layer-0 activations, each depending on ≤ c inputs: ≤ nc pairs",),
        hypotheses=(m * c / (eta * C) <= n * c,),
        conclusion=m <= eta * C * n,
        parameters=(V_n, V_c, V_eta, V_C, Var(m, NONNEG, (eta * C * n, eta * C * n + 1))),
        slacks=(Slack("m", "ratio_le", eta * C * n),),
    ),
    Claim(
        id="stage1.free-bits",
        source=(Source(PAPER, "Stage 1"), Source(SUPP, "Lemma 6 (5)")),
        statement="≥ Cn free, ≤ ηCn newly fixed ⇒ ≥ (1−η)Cn free",
        printed="still has at least (1 − η)Cn elements",
        displays=("§5.1 Stage 1", "S1 (5)"),
        follows_from=("(5)", "S1 (2)", "§5.1 Stage 1"),
        hypotheses=(C * n <= F0, m <= eta * C * n),
        conclusion=F0 - m >= (1 - eta) * C * n,
        parameters=(V_n, V_eta, V_C, Var(F0, POS, (C * n,)), Var(m, NONNEG, (eta * C * n,))),
        slacks=(Slack("F0", "ge", C * n), Slack("m", "le", eta * C * n)),
    ),
    # ------------------------------------------------------------------ Stage 2
    Claim(
        id="stage2.values",
        source=(Source(PAPER, "Stage 2"), Source(SUPP, "(6)")),
        statement="an activation of j ≤ c binary input bits takes ≤ 2^j ≤ 2^c values",
        printed="|V_ρ(i)| ≤ 2^c",
        displays=("§5.1 Stage 2: values", "S1 (6)"),
        follows_from=("(4)", "S1 (1)"),
        hypotheses=(j <= c,),
        conclusion=2**j <= 2**c,
        parameters=(V_c, Var(j, INT(0), (sp.Integer(0), c))),
        slacks=(Slack("j", "le", c),),
        log_goal=True,
        note="binary alphabet; for |Σ| symbols the bound is |Σ|^c",
    ),
    Claim(
        id="stage2.subsequence-exists[paper]",
        source=(Source(PAPER, "Stage 2 ('Such a subsequence exists unless n ≤ ck')"),),
        version=Version.PAPER,
        kind=Kind.ORACLE,
        statement="for every c-transformer with n > ck, some k ranked positions each have an "
        "input feeding no other selected one — decided exactly on the dependency structures "
        "S_j = {x_{1+(j−1) mod w}} (|S_j| = 1 ≤ c)",
        printed="Such a subsequence exists unless n ≤ ck",
        displays=("§5.1 Stage 2: subsequence",),
        follows_from=("(4)",),
        hypotheses=(n > c * k, w <= n),
        conclusion=sp.Symbol("a k-subsequence with private inputs exists"),
        parameters=(
            Var(n, INT(1), tuple(sp.Integer(i) for i in range(1, 5))),
            Var(c, INT(1), (sp.Integer(1), sp.Integer(2))),
            Var(k, INT(1), (sp.Integer(1), sp.Integer(2))),
            Var(w, INT(1), (sp.Integer(1), sp.Integer(2), n)),
        ),
        oracle=oracles.private_subsequence_oracle,
        note="fails when the activations share inputs (w < k); S1 replaces it by Definition "
        "7's sequence (9) of positions with a *new* input, whose length Lemma 9 bounds",
    ),
    Claim(
        id="stage2.k-depends-width[paper]",
        source=(Source(PAPER, "Stage 2"),),
        version=Version.PAPER,
        statement="≤ 2^c values z × ≤ k positions j_{i_s} × ≤ c bits each ⇒ ≤ 2^c ck bits",
        printed="a layer-1 head k-depends only on ≤ 2^c ck input variables",
        displays=("§5.1 Stage 2: k-depends",),
        follows_from=("§5.1 Stage 2: values", "(4)"),
        hypotheses=(Vz <= 2**c, Pk <= k, Bc <= c),
        conclusion=Vz * Pk * Bc <= 2**c * c * k,
        parameters=(
            V_c,
            _K,
            Var(Vz, POS, (2**c,)),
            Var(Pk, POS, (k,)),
            Var(Bc, POS, (c,)),
        ),
        slacks=(
            Slack("Vz", "ratio_le", 2**c),
            Slack("Pk", "ratio_le", k),
            Slack("Bc", "ratio_le", c),
        ),
    ),
    Claim(
        id="stage2.satisfied-head-width[paper]",
        source=(Source(PAPER, "Stage 2"),),
        version=Version.PAPER,
        statement="c own bits + 2^c values × ≤ ck bits each ⇒ ≤ c(2^c k + 1) bits",
        printed="a satisfied head can only depend on c · (2^c k + 1) many input bits",
        displays=("§5.1 Stage 2: satisfied head",),
        follows_from=("§5.1 Stage 2: values", "satisfied ⇒ ≤ k positions reachable"),
        hypotheses=(Bc <= c, Bh <= c * k),
        conclusion=Bc + 2**c * Bh <= c * (2**c * k + 1),
        parameters=(V_c, _K, Var(Bc, POS, (c,)), Var(Bh, POS, (c * k,))),
        slacks=(Slack("Bc", "ratio_le", c), Slack("Bh", "ratio_le", c * k)),
    ),
    Claim(
        id="lemma9.length",
        source=(Source(SUPP, "Lemma 9 (10)"), Source(SUPP, "Definition 20 (16)")),
        version=Version.SUPPLEMENT,
        statement="each index of the sequence (9) brings ≤ c new inputs, the others none: an "
        "unsatisfied tuple (> ck inputs) has ≤ cL < … inputs, so L > k",
        printed="If ((h,i),z) is (k,ρ)-unsatisfied, then the sequence … has length L at least ≥ k",
        displays=("S1 (10)", "S1 (16)"),
        follows_from=("S1 (9)", "Definition 8 (satisfied: ≤ ck inputs)"),
        hypotheses=(Bh <= c * L, Bh > c * k),
        conclusion=k <= L,
        parameters=(V_c, _K, Var(L, POS, (k, k + 1)), Var(Bh, POS, (c * k + 1, c * L))),
        slacks=(Slack("L", "ratio_ge", Bh / c), Slack("Bh", "ge", c * k, strict=True)),
    ),
    Claim(
        id="stage2.pigeonhole",
        source=(Source(PAPER, "Stage 2"), Source(SUPP, "Lemma 15 (11)")),
        statement="> 2^c kH tuples over ≤ 2^c values ⇒ some value shared by > kH tuples",
        printed="more than 2^c kH … tuples, but only 2^c possible values q′. So one value must "
        "occur > kH times",
        displays=("§5.1 Stage 2: pigeonhole", "S1 (11)"),
        follows_from=("§5.1 Stage 2: values", "S1 (6)"),
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
        id="lemma15.higher-ranked",
        source=(Source(SUPP, "Lemma 15, proof"),),
        version=Version.SUPPLEMENT,
        statement="j is the s-th (s ≤ k) index of the sequence (9); the s − 1 earlier ones bring "
        "≤ c new inputs each ⇒ the higher-ranked positions depend on ≤ ck inputs",
        printed="The higher-ranked elements of the ranking can only depend on a total of ≤ ck "
        "input bits",
        displays=("S1 Lemma 15 proof",),
        follows_from=("S1 (9)", "Definition 12 (j = j_{i_s}, s ≤ k)"),
        hypotheses=(Bh <= c * (L - 1), k >= L),
        conclusion=Bh <= c * k,
        parameters=(V_c, _K, Var(L, POS, (sp.Integer(1), k)), Var(Bh, NONNEG, (c * (L - 1),))),
        slacks=(Slack("Bh", "le", c * (L - 1)), Slack("L", "le", k)),
    ),
    Claim(
        id="stage2.one-step",
        source=(Source(PAPER, "Stage 2"),),
        version=Version.PAPER,
        statement="≥ (1−η)Cn free, ≤ c more fixed ⇒ ≥ (1−η)Cn − c free",
        printed="still has at least (1 − η)Cn − c elements",
        displays=("§5.1 Stage 2: one step",),
        follows_from=("§5.1 Stage 1", "§5.1 Stage 2: pigeonhole (fixing ≤ c bits)"),
        hypotheses=((1 - eta) * C * n <= F1, m <= c),
        conclusion=F1 - m >= (1 - eta) * C * n - c,
        parameters=(V_n, V_c, V_eta, V_C, Var(F1, POS, ((1 - eta) * C * n,)), Var(m, NONNEG, (c,))),
        slacks=(Slack("F1", "ge", (1 - eta) * C * n), Slack("m", "le", c)),
    ),
    Claim(
        id="stage2.iterations",
        source=(Source(PAPER, "Stage 2"), Source(SUPP, "Lemma 17 (13)")),
        statement="≤ 2^c Hn tuples, each iteration satisfies ≥ kH of them ⇒ U ≤ 2^c n/k; "
        "and the equality 2^c Hn/(kH) = 2^c n/k as printed",
        printed="at most 2^c Hn/(kH) = 2^c n/k times",
        displays=("§5.1 Stage 2: iterations", "S1 (13)"),
        follows_from=("S1 Lemma 10 (satisfied tuples stay satisfied)", "S1 (11)"),
        hypotheses=(U * k * H <= 2**c * H * n,),
        conclusion=sp.And(
            sp.Eq(2**c * H * n / (k * H), 2**c * n / k, evaluate=False), 2**c * n / k >= U
        ),
        parameters=(
            V_c,
            V_H,
            V_n,
            Var(k, INT(1), (sp.Integer(4),)),
            Var(U, NONNEG, (2**c * n / k,)),
        ),
        slacks=(Slack("U", "ratio_le", 2**c * n / k),),
    ),
    _free_bits(
        Version.PAPER,
        Source(PAPER, "Stage 2"),
        2**c * c / k,
        "2^c c/k",
        ("§5.1 Stage 2: free bits",),
    ),
    _free_bits(Version.EXTRACT, Source(EXTRACT, "Stage 2 [p. 7–8]"), 2**c / k, "2^c/k", ()),
    _free_bits(
        Version.SUPPLEMENT, Source(SUPP, "Lemma 17 (14)"), 2**c * c / k, "2^c c/k", ("S1 (14)",)
    ),
    _choice_of_k(
        Version.PAPER,
        Source(PAPER, "Stage 2 ('choosing k so large that 2^c c/k ≤ η')"),
        2**c * c / k <= eta,
        2**c * c / k,
        2**c * c / eta,
        "2^c c/k ≤ η",
        "c",
        "true iff C = 1; needs 2^c c/k ≤ ηC",
        ("§5.1 Stage 2: choice of k",),
    ),
    _choice_of_k(
        Version.EXTRACT,
        Source(EXTRACT, "Stage 2 ('choosing k so large that 2^c/k ≤ η')"),
        2**c / k <= eta,
        2**c / k,
        2**c / eta,
        "2^c/k ≤ η",
        "1",
        "",
        (),
    ),
    _choice_of_k(
        Version.SUPPLEMENT,
        Source(SUPP, "Lemma 17 (15) ('choosing k so large that 2^c c/k ≤ ηC'; OCR garbled)"),
        2**c * c / k <= eta * C,
        2**c * c / k,
        2**c * c / (eta * C),
        "2^c c/k ≤ ηC",
        "c",
        "",
        ("S1 (15)", "S1 (12)"),
    ),
    Claim(
        id="stage2.bits-per-input",
        source=(Source(PAPER, "Stage 2"), Source(SUPP, "Corollary 18, proof")),
        statement="bit feeds ≤ c/(ηC) heads, head has ≤ 2^c kH depending tuples ⇒ "
        "bit has ≤ (2^c/η)kcH/C depending tuples",
        printed="each input bit now has at most ≤ (2^c/η) kcH/C many k-depending unsatisfied "
        "layer-1 heads",
        displays=("§5.1 Stage 2: per bit", "S1 Corollary 18 proof"),
        follows_from=("S1 Lemma 6.1 / (24)", "S1 Lemma 17.2"),
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
    _f_claim(
        Version.PAPER,
        (Source(PAPER, "end of Stage 2; Stage 3 'f = 2^{2c}/η c²k²H/C'"),),
        2**c * c * k,
        F.E_paper,
        "2^c ck",
        "head",
        ("§5.1 Stage 2: f", "§5.1 Stage 3: independence"),
    ),
    _f_claim(
        Version.SUPPLEMENT,
        (Source(SUPP, "Corollary 18 (tuple k-depends on ≤ ck bits, Lemma 13)"),),
        c * k,
        F.E_supplement,
        "ck",
        "tuple",
        ("S1 Corollary 18 proof", "S1 (30)"),
    ),
    Claim(
        id="lemma4.width",
        source=(Source(PAPER, "end of §5.1"), Source(SUPP, "proof of Lemma 4")),
        statement="c skip bits + H heads × 2^c values × ck bits = c(2^c kH + 1)",
        printed="≤ H · c · 2^c · k input bits … plus … c input bits: ≤ c · (2^c kH + 1)",
        displays=("§5.1 Stage 3: width", "S1 proof of Lemma 4"),
        follows_from=("§5.1 Stage 2: k-depends", "S1 Lemma 13"),
        hypotheses=(),
        conclusion=sp.Eq(c + H * 2**c * c * k, c * (2**c * k * H + 1), evaluate=False),
        parameters=(V_c, V_H, Var(k, INT(1), (sp.Integer(5),))),
    ),
)
