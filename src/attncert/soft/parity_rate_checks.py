# ruff: noqa: SIM300  (sympy relations between upper-case symbols are not Yoda conditions)
"""Every inequality of the PARITY-rate argument (``docs/parity-rate.md``), checked
mechanically — and the one that fails.

- identities and implications (inequality (†), Lemmas R1–R2, the one-layer theorem, Lemma
  A3, Lemma A4's second-difference identity) are :class:`~attncert.symbolic.claim_types.Claim`
  objects decided by the symbolic checker (:func:`attncert.symbolic.runner.decide_claim`:
  sympy proof, or a verified counterexample);
- the combinatorial lemmas on sequences ((†) itself, R3, the discrete Rolle step of R2,
  A1, A2) are decided exhaustively in exact integer arithmetic on every sequence of length
  ≤ L with entries in [−r, r] (:data:`EXHAUSTIVE`);
- Lemma A4 (averages with flips) is **refuted as stated**:
  :func:`lemma_a4_counterexample` builds branch sequences satisfying (H1) and (H2) with
  constants independent of N whose flip sum has second-difference mass ≈ √N, so the average
  G = S/N has M(G) ≈ N^{−1/2}, not O(1/N). Hence the several-layer theorem is a conjecture;
  the one-layer theorem (R1–R3) stands.

:func:`check_parity_rate` runs all of it and returns a :class:`ParityRateCheck`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from attncert.soft.parity_rate_a4 import A4Family, a4_identity_holds, lemma_a4_counterexample
from attncert.symbolic.claim_types import NONNEG, Claim, Domain, Slack, Source, Var
from attncert.symbolic.runner import Verdict, decide_claim

__all__ = [
    "CLAIMS",
    "EXHAUSTIVE",
    "A4Family",
    "ParityRateCheck",
    "check_parity_rate",
    "lemma_a4_counterexample",
]


DOC = "docs/parity-rate.md"
S = sp.Symbol
_p = dict(positive=True)
g, M, N, K, W, V = (
    S("g", **_p),
    S("M", **_p),
    S("N", **_p),
    S("K", **_p),
    S("W", **_p),
    S("V", **_p),
)
O0, O1, O2 = S("O0", **_p), S("O1"), S("O2", **_p)
rho, h, P, Q, X = S("rho", **_p), S("h", **_p), S("P", **_p), S("Q", **_p), S("X", **_p)
Lp, Lz, sig, D1 = S("Lp", **_p), S("Lz", **_p), S("sigma", **_p), S("D1", **_p)
aP, r, z, Z0, Z1, Z2, F0 = (S(x, **_p) for x in ("aP", "r", "z", "Z0", "Z1", "Z2", "F0"))
E0, E1, f0, f1, t = (S(x, **_p) for x in ("E0", "E1", "f0", "f1", "t"))
Num, gP, gZ, gP0, gP1, gZ0, gZ1, R0, R1 = sp.symbols("Num gP gZ gP0 gP1 gZ0 gZ1 R0 R1", real=True)
tau, d = sp.symbols("tau d", real=True)
u0, u1, u2, p0, p1, p2, d1 = sp.symbols("u0 u1 u2 phi0 phi1 phi2 dphi1", real=True)
Ml, Mz, Sc, Dz, mu, bdeg, Ql, Qn, Pn, Cc = (
    S(x, **_p) for x in ("Ml", "Mz", "S", "Dz", "mu", "b", "Ql", "Qn", "Pn", "C")
)
L1, L2, a, b = S("L1", **_p), S("L2", **_p), S("a", **_p), S("b", **_p)


def _src(locus: str) -> tuple[Source, ...]:
    return (Source(DOC, locus),)


_ONE_THREE = (sp.Integer(1), sp.Integer(3))


def _pos(sym, samples=_ONE_THREE) -> Var:
    return Var(sym, Domain(Fraction(0)), tuple(samples))


def _real(sym, samples=_ONE_THREE) -> Var:
    return Var(sym, Domain(), tuple(samples))


_RHO = Var(rho, Domain(Fraction(1), lo_open=False), (sp.Integer(1), sp.Integer(3)))

CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="dagger.second-difference",
        source=_src("(†)"),
        statement="O(k) ≥ g, O(k+1) ≤ −g, O(k+2) ≥ g ⇒ Δ²O(k) ≥ 4g (k even; odd k symmetric)",
        hypotheses=(O0 >= g, O1 <= -g, O2 >= g),
        conclusion=O2 - 2 * O1 + O0 >= 4 * g,
        parameters=(_pos(g), _pos(O0, (g,)), _real(O1, (-g,)), _pos(O2, (g,))),
        slacks=(Slack("O0", "ge", g), Slack("O1", "le", -g), Slack("O2", "ge", g)),
    ),
    Claim(
        id="dagger.sum",
        source=_src("(†)"),
        statement="Σ_k |Δ²O(k)| = M ≥ 4g(K − 1), K ≥ 2 ⇒ g ≤ M/(4(K − 1))",
        hypotheses=(M >= 4 * g * (K - 1), K >= 2),
        conclusion=g <= M / (4 * (K - 1)),
        parameters=(
            _pos(g),
            Var(K, Domain(Fraction(2), lo_open=False), (sp.Integer(2), sp.Integer(5))),
            _pos(M, (4 * g * (K - 1),)),
        ),
        slacks=(Slack("M", "ge", 4 * g * (K - 1)), Slack("K", "ge", sp.Integer(2))),
    ),
    Claim(
        id="R1.first-difference",
        source=_src("Lemma R1"),
        statement="(Num + g_P)/(Z + g_Z) − Num/Z = (g_P − (Num/Z) g_Z)/(Z + g_Z), i.e. ΔR = F/Z(k+1)",
        hypotheses=(),
        conclusion=sp.Eq(
            (Num + gP) / (Z0 + gZ) - Num / Z0, (gP - Num / Z0 * gZ) / (Z0 + gZ), evaluate=False
        ),
        parameters=(),
    ),
    Claim(
        id="R1.second-difference",
        source=_src("Lemma R1"),
        statement="F₁/Z(k+2) − F₀/Z(k+1) = (F₁ − F₀)/Z(k+2) − F₀ g_Z/(Z(k+1) Z(k+2)), Z(k+2) = Z(k+1) + g_Z",
        hypotheses=(),
        conclusion=sp.Eq(
            R1 / (Z1 + gZ) - R0 / Z1,
            (R1 - R0) / (Z1 + gZ) - R0 * gZ / (Z1 * (Z1 + gZ)),
            evaluate=False,
        ),
        parameters=(),
    ),
    Claim(
        id="R1.F-difference",
        source=_src("Lemma R1"),
        statement="F_{k+1} − F_k = [g_P(t₁) − g_P(t₀)] − R(k+1)[g_Z(t₁) − g_Z(t₀)] − g_Z(t₀)ΔR(k)",
        hypotheses=(),
        conclusion=sp.Eq(
            (gP1 - R1 * gZ1) - (gP0 - R0 * gZ0),
            (gP1 - gP0) - R1 * (gZ1 - gZ0) - gZ0 * (R1 - R0),
            evaluate=False,
        ),
        parameters=(),
    ),
    Claim(
        id="R1.gP-bound",
        source=_src("Lemma R1"),
        statement="E₀, E₁ ≤ ρ, |f₀|, |f₁| ≤ V = W/2 ⇒ |g_P| ≤ E₁|f₁| + E₀|f₀| ≤ ρW",
        hypotheses=(E0 <= rho, E1 <= rho, f0 <= W / 2, f1 <= W / 2),
        conclusion=E1 * f1 + E0 * f0 <= rho * W,
        parameters=(
            _RHO,
            _pos(W),
            _pos(E0, (rho,)),
            _pos(E1, (rho,)),
            _pos(f0, (W / 2,)),
            _pos(f1, (W / 2,)),
        ),
        slacks=(
            Slack("E0", "ratio_le", rho),
            Slack("E1", "ratio_le", rho),
            Slack("f0", "ratio_le", W / 2),
            Slack("f1", "ratio_le", W / 2),
        ),
    ),
    Claim(
        id="R1.F-bound",
        source=_src("Lemma R1"),
        statement="|g_P| ≤ ρW, |R| ≤ W/2, |g_Z| ≤ ρ − 1 ⇒ |F| ≤ |g_P| + |R||g_Z| ≤ 2ρW",
        hypotheses=(aP <= rho * W, r <= W / 2, z <= rho - 1),
        conclusion=aP + r * z <= 2 * rho * W,
        parameters=(
            _RHO,
            _pos(W),
            _pos(aP, (rho * W,)),
            _pos(r, (W / 2,)),
            Var(z, NONNEG, (rho - 1,)),
        ),
        slacks=(
            Slack("aP", "ratio_le", rho * W),
            Slack("r", "ratio_le", W / 2),
            Slack("z", "le", rho - 1),
        ),
    ),
    Claim(
        id="R1.step",
        source=_src("Lemma R1"),
        statement="|F| ≤ P = 2ρW, Z(k+1) ≥ N ⇒ |ΔR(k)| = |F|/Z ≤ P/N",
        hypotheses=(aP <= P, Z1 >= N),
        conclusion=aP / Z1 <= P / N,
        parameters=(_pos(P), _pos(N), _pos(aP, (P,)), _pos(Z1, (N,))),
        slacks=(Slack("aP", "ratio_le", P), Slack("Z1", "ratio_ge", N)),
    ),
    Claim(
        id="R1.derivatives",
        source=_src("Lemma R1"),
        statement="E ≤ ρ, |s′| ≤ σ′, |f| ≤ V, |f′| ≤ D₁ ⇒ |g_Z′| ≤ 2ρσ′ and |g_P′| ≤ 2ρ(σ′V + D₁)",
        hypotheses=(E0 <= rho, E1 <= rho, f0 <= V, f1 <= V),
        conclusion=sp.And(
            E1 * sig + E0 * sig <= 2 * rho * sig,
            E1 * (sig * f1 + D1) + E0 * (sig * f0 + D1) <= 2 * rho * (sig * V + D1),
        ),
        parameters=(
            _RHO,
            _pos(sig),
            _pos(V),
            _pos(D1),
            _pos(E0, (rho,)),
            _pos(E1, (rho,)),
            _pos(f0, (V,)),
            _pos(f1, (V,)),
        ),
        slacks=(
            Slack("E0", "ratio_le", rho),
            Slack("E1", "ratio_le", rho),
            Slack("f0", "ratio_le", V),
            Slack("f1", "ratio_le", V),
        ),
    ),
    Claim(
        id="R1.F-change",
        source=_src("Lemma R1"),
        statement="|Δg_P| ≤ (h/N)L_p, |R| ≤ V, |Δg_Z| ≤ (h/N)L_z, |g_Z| ≤ ρ − 1, |ΔR| ≤ P/N ⇒ "
        "|F_{k+1} − F_k| ≤ (h(L_p + V L_z) + (ρ − 1)P)/N",
        hypotheses=(gP0 <= h * Lp / N, r <= V, gZ0 <= h * Lz / N, z <= rho - 1, X <= P / N),
        conclusion=gP0 + r * gZ0 + z * X <= (h * (Lp + V * Lz) + (rho - 1) * P) / N,
        parameters=(
            _RHO,
            _pos(h),
            _pos(Lp),
            _pos(Lz),
            _pos(V),
            _pos(P),
            _pos(N),
            Var(gP0, NONNEG, (h * Lp / N,)),
            _pos(r, (V,)),
            Var(gZ0, NONNEG, (h * Lz / N,)),
            Var(z, NONNEG, (rho - 1,)),
            _pos(X, (P / N,)),
        ),
        slacks=(
            Slack("gP0", "le", h * Lp / N),
            Slack("r", "ratio_le", V),
            Slack("gZ0", "le", h * Lz / N),
            Slack("z", "le", rho - 1),
            Slack("X", "ratio_le", P / N),
        ),
    ),
    Claim(
        id="R1.second-bound",
        source=_src("Lemma R1"),
        statement="|F₁ − F₀| ≤ (h(L_p+V L_z) + (ρ−1)P)/N, Z ≥ N, |F₀| ≤ 2ρW, |g_Z| ≤ ρ − 1 ⇒ "
        "|Δ²R| ≤ Q/N², Q = h(L_p + V L_z) + P(ρ − 1) + 2ρW(ρ − 1)",
        hypotheses=(
            X <= (h * (Lp + V * Lz) + (rho - 1) * P) / N,
            Z1 >= N,
            Z2 >= N,
            F0 <= 2 * rho * W,
            z <= rho - 1,
        ),
        conclusion=X / Z2 + F0 * z / (Z1 * Z2)
        <= (h * (Lp + V * Lz) + P * (rho - 1) + 2 * rho * W * (rho - 1)) / N**2,
        parameters=(
            _RHO,
            _pos(h),
            _pos(Lp),
            _pos(Lz),
            _pos(V),
            _pos(P),
            _pos(W),
            _pos(N),
            _pos(X, ((h * (Lp + V * Lz) + (rho - 1) * P) / N,)),
            _pos(Z1, (N,)),
            _pos(Z2, (N,)),
            _pos(F0, (2 * rho * W,)),
            Var(z, NONNEG, (rho - 1,)),
        ),
        slacks=(
            Slack("X", "ratio_le", (h * (Lp + V * Lz) + (rho - 1) * P) / N),
            Slack("Z1", "ratio_ge", N),
            Slack("Z2", "ratio_ge", N),
            Slack("F0", "ratio_le", 2 * rho * W),
            Slack("z", "le", rho - 1),
        ),
    ),
    Claim(
        id="R1.sum",
        source=_src("Lemma R1"),
        statement="K − 1 ≤ N/2 indices, each |Δ²R| ≤ Q/N² ⇒ Σ_k |Δ²R(k)| ≤ Q/(2N)",
        hypotheses=(K <= N / 2,),
        conclusion=K * Q / N**2 <= Q / (2 * N),
        parameters=(_pos(Q), _pos(N), _pos(K, (N / 2,))),
        slacks=(Slack("K", "ratio_le", N / 2),),
    ),
    Claim(
        id="R2.factor",
        source=_src("Lemma R2"),
        statement="E₁ = E₀e^{s₁−s₀} ⇒ E₁(f₁+τ) − E₀(f₀+τ) = E₀[e^{s₁−s₀}(f₁+τ) − (f₀+τ)]",
        hypotheses=(),
        conclusion=sp.Eq(
            E0 * sp.exp(d) * (f1 + tau) - E0 * (f0 + tau),
            E0 * (sp.exp(d) * (f1 + tau) - (f0 + tau)),
            evaluate=False,
        ),
        parameters=(),
    ),
    Claim(
        id="one-layer.combine",
        source=_src("Theorem (one layer)"),
        statement="M(λ·c) ≤ Q_λ/(2N), M(z) ≤ Q_ν/(2N), S ≤ b + 1, max|Δz| ≤ P_ν/N (R1, R2) ⇒ "
        "M(λ·c) + |μ|(M(z) + 4S max|Δz|) ≤ (Q_λ/2 + |μ|(Q_ν/2 + 4(b+1)P_ν))/N (R3)",
        hypotheses=(Ml <= Ql / (2 * N), Mz <= Qn / (2 * N), Sc <= bdeg + 1, Dz <= Pn / N),
        conclusion=Ml + mu * (Mz + 4 * Sc * Dz)
        <= (Ql / 2 + mu * (Qn / 2 + 4 * (bdeg + 1) * Pn)) / N,
        parameters=(
            _pos(N),
            _pos(Ql),
            _pos(Qn),
            _pos(Pn),
            _pos(mu),
            _pos(bdeg),
            _pos(Ml, (Ql / (2 * N),)),
            _pos(Mz, (Qn / (2 * N),)),
            _pos(Sc, (bdeg + 1,)),
            _pos(Dz, (Pn / N,)),
        ),
        slacks=(
            Slack("Ml", "ratio_le", Ql / (2 * N)),
            Slack("Mz", "ratio_le", Qn / (2 * N)),
            Slack("S", "ratio_le", bdeg + 1),
            Slack("Dz", "ratio_le", Pn / N),
        ),
    ),
    Claim(
        id="one-layer.margin",
        source=_src("Theorem (one layer)"),
        statement="M ≤ C/N and (†) g ≤ M/(4(K−1)) ⇒ g ≤ C/(4N(K−1))",
        hypotheses=(M <= Cc / N, g <= M / (4 * (K - 1)), K >= 2),
        conclusion=g <= Cc / (4 * N * (K - 1)),
        parameters=(
            _pos(Cc),
            _pos(N),
            Var(K, Domain(Fraction(2), lo_open=False), (sp.Integer(3),)),
            _pos(M, (Cc / N,)),
            _pos(g, (M / (4 * (K - 1)),)),
        ),
        slacks=(
            Slack("g", "ratio_le", M / (4 * (K - 1))),
            Slack("M", "ratio_le", Cc / N),
            Slack("K", "ge", sp.Integer(2)),
        ),
    ),
    Claim(
        id="A3.identity",
        source=_src("Lemma A3"),
        statement="φ(u₂) − 2φ(u₁) + φ(u₀) = φ′(u₁)Δ²u + [φ(u₂) − φ(u₁) − φ′(u₁)(u₂−u₁)] + [φ(u₀) − φ(u₁) − φ′(u₁)(u₀−u₁)]",
        hypotheses=(),
        conclusion=sp.Eq(
            p2 - 2 * p1 + p0,
            d1 * (u2 - 2 * u1 + u0) + (p2 - p1 - d1 * (u2 - u1)) + (p0 - p1 - d1 * (u0 - u1)),
            evaluate=False,
        ),
        parameters=(),
    ),
    Claim(
        id="A3.sum",
        source=_src("Lemma A3"),
        statement="M(φ∘u) ≤ L₁M(u) + L₂KV(u)², V ≤ a/N, M ≤ b/N, K ≤ N/2 ⇒ M(φ∘u) ≤ (L₁b + L₂a²/2)/N",
        hypotheses=(M <= b / N, V <= a / N, K <= N / 2),
        conclusion=L1 * M + L2 * K * V**2 <= (L1 * b + L2 * a**2 / 2) / N,
        parameters=(
            _pos(L1),
            _pos(L2),
            _pos(a),
            _pos(b),
            _pos(N),
            _pos(M, (b / N,)),
            _pos(V, (a / N,)),
            _pos(K, (N / 2,)),
        ),
        slacks=(
            Slack("M", "ratio_le", b / N),
            Slack("V", "ratio_le", a / N),
            Slack("K", "ratio_le", N / 2),
        ),
    ),
)


# ----------------------------------------------------------------------------- exhaustive


def _d2(s):
    return [s[i + 2] - 2 * s[i + 1] + s[i] for i in range(len(s) - 2)]


def _mass(s) -> int:
    return sum(abs(x) for x in _d2(s))


def _vmax(s) -> int:
    return max((abs(s[i + 1] - s[i]) for i in range(len(s) - 1)), default=0)


def _sign_changes(s) -> int:
    signs = [x > 0 for x in s if x != 0]
    return sum(1 for i in range(len(signs) - 1) if signs[i] != signs[i + 1])


def _relu(s):
    return [max(x, 0) for x in s]


def _dagger(s) -> bool:
    g_ = min(abs(x) for x in s)
    sign_ok = g_ > 0 and all((x > 0) == (i % 2 == 0) for i, x in enumerate(s))
    return (not sign_ok) or len(s) < 3 or 4 * g_ * (len(s) - 2) <= _mass(s)


def _r3(s) -> bool:
    return _mass(_relu(s)) <= _mass(s) + 4 * _sign_changes(s) * _vmax(s)


def _rolle(s) -> bool:
    diff = [s[i + 1] - s[i] for i in range(len(s) - 1)]
    return _sign_changes(s) <= _sign_changes(diff) + 1


def _a1(s) -> bool:
    cross = sum(abs(s[i + 1] - s[i]) for i in range(len(s) - 1) if (s[i] > 0) != (s[i + 1] > 0))
    return cross <= _mass(s) + _vmax(s)


def _a2(s) -> bool:
    return _mass(_relu(s)) <= 6 * _mass(s) + 4 * _vmax(s) and _vmax(_relu(s)) <= _vmax(s)


#: name → (doc locus, statement, predicate on an integer sequence, max length, max |entry|)
EXHAUSTIVE = {
    "dagger.exhaustive": ("(†)", "sign-correct O ⇒ g ≤ M/(4(K−1))", _dagger, 6, 2),
    "R3.exhaustive": ("Lemma R3", "Σ|Δ²ReLU(z)| ≤ Σ|Δ²z| + 4S·max|Δz|", _r3, 6, 2),
    "R2.rolle-exhaustive": ("Lemma R2", "S(G) ≤ S(ΔG) + 1 (discrete Rolle)", _rolle, 6, 2),
    "A1.exhaustive": ("Lemma A1", "crossing mass ≤ M(h) + V(h)", _a1, 6, 2),
    "A2.exhaustive": ("Lemma A2", "M(ReLU∘h) ≤ 6M(h) + 4V(h), V(ReLU∘h) ≤ V(h)", _a2, 6, 2),
}


def _exhaustive(pred, length: int, bound: int) -> tuple[int, tuple[int, ...] | None]:
    count = 0
    for n in range(1, length + 1):
        for s in itertools.product(range(-bound, bound + 1), repeat=n):
            count += 1
            if not pred(s):
                return count, s
    return count, None


# ----------------------------------------------------------------------------- report


@dataclass(frozen=True)
class CheckResult:
    id: str
    locus: str
    statement: str
    verdict: str  # proved | holds | refuted | unknown
    evidence: str

    def as_dict(self) -> dict[str, str]:
        return dict(vars(self))


@dataclass(frozen=True)
class ParityRateCheck:
    results: tuple[CheckResult, ...]
    a4: tuple[A4Family, ...]

    def counts(self) -> dict[str, int]:
        vs = [r.verdict for r in self.results]
        return {x: vs.count(x) for x in ("proved", "holds", "refuted", "unknown")} | {
            "checks": len(vs)
        }

    def as_dict(self) -> dict[str, object]:
        return {
            "counts": self.counts(),
            "results": [r.as_dict() for r in self.results],
            "lemma_a4_family": [{k: str(v) for k, v in vars(f).items()} for f in self.a4],
        }


def check_parity_rate(
    a4_widths: tuple[int, ...] = (4, 8, 12, 16), exhaustive: tuple[int, int] | None = None
) -> ParityRateCheck:
    """Decide every inequality of the argument (see the module docstring). ``exhaustive`` =
    (max length, max |entry|) overrides :data:`EXHAUSTIVE`'s sizes (e.g. (7, 3): 960,799
    sequences per lemma, ~30 s)."""
    out: list[CheckResult] = []
    for cl in CLAIMS:
        v, ev, _ = decide_claim(cl)
        verdict = {
            Verdict.PROVED: "proved",
            Verdict.HOLDS: "holds",
            Verdict.REFUTED: "refuted",
        }.get(v, "unknown")
        out.append(CheckResult(cl.id, cl.source[0].locus, cl.statement, verdict, ev[:200]))
    for name, (locus, statement, pred, length, bound) in EXHAUSTIVE.items():
        if exhaustive is not None:
            length, bound = exhaustive
        count, bad = _exhaustive(pred, length, bound)
        out.append(
            CheckResult(
                name,
                locus,
                statement,
                "holds" if bad is None else "refuted",
                f"all {count} integer sequences of length ≤ {length} with entries in "
                f"[−{bound}, {bound}]" + ("" if bad is None else f"; fails at {bad}"),
            )
        )
    ok = a4_identity_holds()
    out.append(
        CheckResult(
            "A4.identity",
            "Lemma A4",
            "Δ²S(k) = [D_{k+1}(k+2) − D_k(k+2)] + [D_k(k+2) − D_k(k+1)] + ΔD_k(k+1) + Σ_{m<k} Δ²D_m(k)",
            "proved" if ok else "refuted",
            "sympy: expanded difference is 0 on symbolic arrays for every k ≤ 6",
        )
    )
    fams = tuple(lemma_a4_counterexample(w) for w in a4_widths)
    grows = all(b.NM_G > a.NM_G for a, b in itertools.pairwise(fams))
    bounded = (
        max(f.NV for f in fams) < 2 and max(f.NM for f in fams) < 7 and max(f.B for f in fams) < 3
    )
    table = "; ".join(f"N={f.N}: N·M(G)={float(f.NM_G):.2f}" for f in fams)
    out.append(
        CheckResult(
            "A4.conclusion",
            "Lemma A4",
            "(H1), (H2) with constants independent of N ⇒ G = S/N regular (N·M(G) bounded)",
            "refuted" if grows and bounded else "unknown",
            f"family y_(p_m)(k) = (−1)^m ψ((m−k)/√N)/√N: N·V ≤ {float(max(f.NV for f in fams)):.3f}, "
            f"N·M ≤ {float(max(f.NM for f in fams)):.3f}, B ≤ {float(max(f.B for f in fams)):.3f} "
            f"at every N tested, but {table} (≈ √N): the diagonal-sum step fails",
        )
    )
    return ParityRateCheck(tuple(out), fams)
