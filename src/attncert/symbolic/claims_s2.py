"""Hahn (2020) supplement S2 — the missing term in Lemma 5's proof — as claims, as printed.

S2 corrects the published step (34) ‖b − b′‖ ≤ Σ_w â_w‖y_w − y′_w‖ to (35) with the extra
term Σ_w |â_w − â′_w|·‖y′_w‖, and then shows Σ_u |â_u − â′_u| = O(1/n) by a calculation whose
displays are numbered (1)–(6) on its second page ("S2 calc"). Each step is a
:class:`~attncert.symbolic.claim_types.Claim` decided by :func:`attncert.symbolic.runner.decide_claim`
(two keys y ∈ {1, 2} stand for the sums; u = 2 is the key whose term is bounded):

- (34) as published is refuted (weights move, values do not);
- (35) holds: b − b′ = Σ â(y − y′) + Σ(â − â′)y′ (identity) and the triangle inequality;
- calc (4) holds as an identity;
- calc (5)'s first inequality replaces Σc·(Σc + Σd) by (Σc)², which needs Σd ≥ 0: refuted
  (c = (1, 1), d = (−9/10, 0)). The conclusion survives: the denominator is
  Σc·Σexp(a′) ≥ Σc·n·e^{−A}, which gives the same O(1/n²) with the constant e^{2A}.
"""

from __future__ import annotations

import sympy as sp

from attncert.symbolic.claim_types import POS, Claim, Domain, Source, Var, Version
from attncert.symbolic.runner import decide_claim

__all__ = ["S2_CLAIMS", "check_s2"]

__implements__ = ("Hahn S2 eq. (34)", "Hahn S2 eq. (35)")

SUPP = "Hahn 2020 supplement S2"
R_ = sp.Rational
c1, c2 = sp.Symbol("c1", positive=True), sp.Symbol("c2", positive=True)
d1, d2 = sp.Symbol("d1", real=True), sp.Symbol("d2", real=True)
a1, a2, b1, b2 = (sp.Symbol(x, nonnegative=True) for x in ("a1", "a2", "b1", "b2"))
y1, y2, z1, z2 = sp.symbols("y1 y2 z1 z2", real=True)
_SC, _SD = c1 + c2, d1 + d2
_U = Var(c1, POS, (sp.Integer(1), R_(1, 2)))
_V = Var(c2, POS, (sp.Integer(1), sp.Integer(2)))
_D1 = Var(d1, Domain(), (R_(-9, 10), R_(1, 2), sp.Integer(0)))
_D2 = Var(d2, Domain(), (sp.Integer(0), R_(-1, 4), R_(1, 3)))

S2_CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="s2.eq34[published]",
        source=(Source(SUPP, "(34)"),),
        version=Version.PAPER,
        statement="|b − b′| ≤ Σ_w â_w|y_w − y′_w| for attention weights â, â′ (each summing to 1)",
        printed="|b − b′| ≤ Σ_w â_w ‖y_w − y′_w‖",
        hypotheses=(sp.Eq(a1 + a2, 1), sp.Eq(b1 + b2, 1)),
        conclusion=sp.Abs(a1 * y1 + a2 * y2 - (b1 * z1 + b2 * z2))
        <= a1 * sp.Abs(y1 - z1) + a2 * sp.Abs(y2 - z2),
        parameters=(
            Var(a1, Domain(), (R_(1, 2),)),
            Var(a2, Domain(), (R_(1, 2),)),
            Var(b1, Domain(), (sp.Integer(1),)),
            Var(b2, Domain(), (sp.Integer(0),)),
            Var(y1, Domain(), (sp.Integer(1),)),
            Var(y2, Domain(), (sp.Integer(0),)),
            Var(z1, Domain(), (y1,)),
            Var(z2, Domain(), (y2,)),
        ),
        note="b′ uses the changed weights â′ = b; the published step drops Σ|â − â′|‖y′‖",
    ),
    Claim(
        id="s2.eq35-identity",
        source=(Source(SUPP, "(35)"),),
        statement="b − b′ = Σ_w â_w(y_w − y′_w) + Σ_w (â_w − â′_w)y′_w, so the triangle "
        "inequality gives (35)",
        printed="|b − b′| ≤ Σ_w â_w ‖y_w − y′_w‖ + Σ_w |â_w − â′_w| ‖y′_w‖",
        hypotheses=(),
        conclusion=sp.Eq(
            a1 * y1 + a2 * y2 - (b1 * z1 + b2 * z2),
            a1 * (y1 - z1) + a2 * (y2 - z2) + (a1 - b1) * z1 + (a2 - b2) * z2,
            evaluate=False,
        ),
        parameters=(),
    ),
    Claim(
        id="s2.calc4",
        source=(Source(SUPP, "calculation (4)"),),
        statement="c_u/Σc − (c_u + d_u)/(Σc + Σd) = (c_u Σd − d_u Σc)/(Σc(Σc + Σd))",
        printed="â_u − â′_u = (c_u Σ_y d_y − d_u Σ_y c_y)/(Σ_y c_y (Σ_y c_y + d_y))",
        hypotheses=(),
        conclusion=sp.Eq(
            c2 / _SC - (c2 + d2) / (_SC + _SD),
            (c2 * _SD - d2 * _SC) / (_SC * (_SC + _SD)),
            evaluate=False,
        ),
        parameters=(),
    ),
    Claim(
        id="s2.calc5[printed]",
        source=(Source(SUPP, "calculation (5), first inequality"),),
        version=Version.PAPER,
        statement="|c_u Σd − d_u Σc|/(Σc(Σc + Σd)) ≤ (c_u Σ|d| + |d_u| Σc)/(Σc)² for positive "
        "c and exp(a′) = c + d > 0",
        printed="(c_u Σ_y d_y − d_u Σ_y c_y)/(Σ_y c_y(Σ_y c_y + d_y)) ≤ (c_u Σ_y |d_y| + |d_u| Σ_y c_y)/(Σ_y c_y)²",
        hypotheses=(c1 + d1 > 0, c2 + d2 > 0),
        conclusion=sp.Abs(c2 * _SD - d2 * _SC) / (_SC * (_SC + _SD))
        <= (c2 * (sp.Abs(d1) + sp.Abs(d2)) + sp.Abs(d2) * _SC) / _SC**2,
        parameters=(_U, _V, _D1, _D2),
        note="needs Σd ≥ 0 (the new normaliser at least the old one)",
    ),
)


def check_s2() -> dict[str, tuple[str, str]]:
    """Claim id → (verdict, evidence) for :data:`S2_CLAIMS`."""
    out = {}
    for cl in S2_CLAIMS:
        v, ev, _ = decide_claim(cl)
        out[cl.id] = (v.value, ev)
    return out
