"""Supplement S1 on one certified instance: what each statement of Hahn's formal proof
asserts for *this* model and restriction, re-derived from the certificate and the kernel's
own layer check (:func:`attncert.kernel.hard.layers._check_layer`), not from the search's
trace.

Untrusted, and outside the trusted base (issue 41): it runs *after* the verdict — ``attncert
check`` prints these statements for a certificate the kernel accepted (``--no-s1`` skips
them) — and no verdict is computed from them. What it reports is re-derived with the
kernel's code, so each statement is as exact as the check; a wrong statement here is a
wrong explanation, not a wrong CERTIFIED. (Before issue 41 this was ``kernel.hard.s1``.)

For each layer ℓ, with C = #free(ρ_{ℓ−1})/n, c = the largest claimed dependency set of
layer ℓ−1 (1 at layer 1), k, η, q, δ the proof parameters of the certificate's trace
(the only values taken from it; they are parameters, not claims), H the heads, and the
certificate's stage restrictions σ₁ (after Stage 1) and σ₂ (after Stage 2):

=================  ===========================================================
S1 Definition 2    layer ℓ−1 is a c-transformer (every activation depends on ≤ c inputs)
S1 eq. (6)         an activation of ≤ c free inputs takes ≤ |Σ|^c values
S1 Definition 3    ρ_{ℓ−1} ≼ σ₁ ≼ σ₂ ≼ ρ_ℓ (each stage only fixes more inputs)
S1 Definition 5    η ∈ (0, ½), q ∈ (0, 1), δ > 0, (1+δ)q < 1
S1 Lemma 6         every σ₁-free input feeds ≤ (1/η)c/C activations; #free(σ₁) ≥ (1−η)Cn
S1 Definition 16   Stage 2's sequence runs from σ₁ to σ₂ (σ₁ ≼ σ₂)
S1 Lemma 17        #free(σ₂) ≥ (1−2η)Cn  (17.1, eq. (12))
S1 Definition 19   Stage 3 fixes each σ₂-free input w.p. q: q·#free(σ₂) expected
S1 Definition 20   X₀ (more than (1+δ)q·#free(σ₂) fixed) is avoided by this ρ_ℓ
S1 Lemma 21        P(X₀) ≤ exp(−δ²q(1−2η)Cn/3), evaluated for this instance
S1 Lemma 22        P(X) ≤ (1 − (q/|Σ|)^c)^{kηC/c²}, evaluated for this instance
S1 Definition 7    how many attended keys are blockers (constant positions)
S1 Definition 8    every tuple ((h, i), z) is satisfied under ρ_ℓ: for every assignment of
                   the claimed set the attended key is determined by it (the kernel's
                   layer check)
S1 Lemma 10        satisfaction survives refinement: layer ℓ re-verified under ρ_L
S1 Lemma 4         layer-ℓ activations depend on ≤ c(|Σ|^c kH + 1) inputs
S1 Corollary 24    #free(ρ_ℓ) ≥ (1−2η)(1−(1+δ)q)Cn
S1 Theorem 1       the decision depends only on the certified output set
=================  ===========================================================

Lemmas 21 and 22 are *evaluated* (what the lemma predicts here), not verdicts about the
certificate; a statement whose hypothesis fails on the instance says so. Without stage
restrictions in the certificate (a version-1 certificate, or a search without the
paper's stages) the Stage 1–3 statements are reported as not re-derivable.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from flint import arb

from attncert.arith.field import Field, escalate
from attncert.arith.rows import RowGraph
from attncert.certificates.hard import Certificate
from attncert.kernel.hard.checker import _check_layer, _layer0, _Reject, _restrict
from attncert.kernel.hard.decide import is_rational
from attncert.model.spec import Model

__implements__ = (
    "Hahn S1 Definition 2",
    "Hahn S1 Definition 3",
    "Hahn S1 Definition 5",
    "Hahn S1 Lemma 6",
    "Hahn S1 Definition 7",
    "Hahn S1 Definition 8",
    "Hahn S1 Lemma 10",
    "Hahn S1 Definition 16",
    "Hahn S1 Lemma 17",
    "Hahn S1 Definition 19",
    "Hahn S1 Definition 20",
    "Hahn S1 Lemma 21",
    "Hahn S1 Lemma 22",
    "Hahn S1 Corollary 24",
)


@dataclass(frozen=True)
class S1Statement:
    """One S1 statement on the instance, as the kernel re-derived it."""

    statement: str  # "S1 Lemma 6"
    layer: int
    asserts: str
    value: str
    bound: str = ""
    status: str = "holds"  # holds | fails | evaluated | not re-derivable

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def line(self) -> str:
        mark = {"holds": "✓", "fails": "✗", "evaluated": "·"}.get(self.status, "–")
        bound = f" (bound {self.bound})" if self.bound else ""
        where = f"layer {self.layer}: " if self.layer else ""
        return f"{mark} {self.statement}: {where}{self.asserts} — {self.value}{bound}"


def _params(cert: Certificate) -> tuple[int, Fraction, Fraction, Fraction] | None:
    t = cert.trace
    try:
        return (
            int(t["k"]),
            Fraction(str(t["eta"])),
            Fraction(str(t["q"])),
            Fraction(str(t["delta"])),
        )
    except (KeyError, ValueError, ZeroDivisionError, TypeError):
        return None


def _holds(ok: bool) -> str:
    return "holds" if ok else "fails"


def s1_statements(cert: Certificate, model: Model) -> tuple[S1Statement, ...]:
    """Every S1 statement the kernel can re-derive on ``cert`` (module docstring). The
    certificate is assumed to have passed :func:`attncert.kernel.hard.checker.check`."""
    return escalate(lambda fld: _derive(cert, model, fld), rational=is_rational(model))


def _derive(cert: Certificate, model: Model, fld: Field) -> tuple[S1Statement, ...]:
    out: list[S1Statement] = []
    n = cert.n
    sigma = len(cert.restrictions[0].symbols)
    params = _params(cert)
    stage_params = params
    unusable = "the certificate records no proof parameters (k, η, q, δ)"
    if params is not None:
        k, eta, q, delta = params
        ok = 0 < eta < Fraction(1, 2) and 0 < q < 1 and delta > 0 and (1 + delta) * q < 1
        out.append(
            S1Statement(
                "S1 Definition 5",
                0,
                "η ∈ (0, ½), q ∈ (0, 1), δ > 0, (1+δ)q < 1",
                f"η = {eta}, q = {q}, δ = {delta}, k = {k}",
                status=_holds(ok),
            )
        )
        if not ok:  # the stage statements assume Definition 5 (η = 0 would divide by 0)
            stage_params = None
            unusable = "the certificate's proof parameters are outside Definition 5"
    graph = RowGraph(model, model.n_tokens(cert.n), fld)
    tables, vals = _layer0(model, cert.restrictions[0], graph)
    final = cert.final_restriction
    for ell in range(1, model.num_layers + 1):
        before, rho = cert.restrictions[ell - 1], cert.restrictions[ell]
        inputs = [_restrict(t, before) for t in tables]
        c = max(1, max((len(t.deps) for t in inputs), default=0))
        values = max((len(set(t.vid)) for t in inputs), default=1)
        out.append(
            S1Statement(
                "S1 Definition 2",
                ell,
                f"layer {ell - 1} is a c-transformer under ρ_{ell - 1}: every activation "
                "depends on ≤ c free inputs (the tables the kernel computed)",
                f"c = {c}",
            )
        )
        out.append(
            S1Statement(
                "S1 eq. (6)",
                ell,
                "an activation of ≤ c inputs takes ≤ |Σ|^c values",
                f"{values} values",
                f"|Σ|^c = {sigma**c}",
                _holds(values <= sigma**c),
            )
        )
        C = Fraction(before.num_free, n) if n else Fraction(1)
        stages = cert.stages[ell - 1] if len(cert.stages) == model.num_layers else None
        if stages is not None and stage_params is not None:
            out += _stage_statements(ell, before, rho, stages, inputs, c, C, n, sigma, params)
        else:
            out.append(
                S1Statement(
                    "S1 Lemma 6",
                    ell,
                    "Stages 1–3 on the instance",
                    unusable
                    if stages is not None
                    else "the certificate records no stage restrictions",
                    status="not re-derivable",
                )
            )
        H = len(model.layers[ell - 1].heads)
        stats: dict[str, int] = {}
        claimed = cert.dependency_sets[ell - 1]
        tables, vals_next = _check_layer(
            model, ell, [_restrict(t, rho) for t in tables], vals, claimed, rho, stats
        )
        out.append(
            S1Statement(
                "S1 Definition 7",
                ell,
                "attended keys that are blockers (constant positions)",
                f"{stats.get('blocked', 0)} of {stats.get('cases', 0)} (head, position, "
                "assignment) cases",
                status="evaluated",
            )
        )
        out.append(
            S1Statement(
                "S1 Definition 8",
                ell,
                "every tuple ((h, i), z) is satisfied under ρ_ℓ: for each assignment of the "
                "claimed set the attended key is determined by it",
                f"verified for {stats.get('cases', 0)} cases",
            )
        )
        bound = c * (sigma**c * (params[0] if params else 1) * H + 1)
        got = max((len(s) for s in claimed), default=0)
        out.append(
            S1Statement(
                "S1 Lemma 4",
                ell,
                "layer-ℓ activations depend on ≤ c(|Σ|^c kH + 1) inputs",
                f"{got}",
                f"{bound}",
                _holds(got <= bound),
            )
        )
        vals = vals_next
    out += _lemma10(cert, model, fld)
    dep = cert.output_dependency
    out.append(
        S1Statement(
            "S1 Theorem 1",
            0,
            f"with {final.num_free}/{n} inputs free, the decision depends on ≤ c inputs",
            f"{len(dep)} input(s)",
            status="holds",
        )
    )
    return tuple(out)


def _stage_statements(ell, before, rho, stages, inputs, c, C, n, sigma, params):
    k, eta, q, delta = params
    s1, s2 = stages
    out = []
    chain = (
        before.n == s1.n == s2.n == rho.n
        and s1.refines(before)
        and s2.refines(s1)
        and rho.refines(s2)
    )
    out.append(
        S1Statement(
            "S1 Definition 3",
            ell,
            "ρ_{ℓ−1} ≼ σ₁ ≼ σ₂ ≼ ρ_ℓ (each stage only fixes more inputs)",
            f"free: {before.num_free} → {s1.num_free} → {s2.num_free} → {rho.num_free}",
            status=_holds(chain),
        )
    )
    fan: dict[int, int] = {}
    for t in (_restrict(t, s1) for t in inputs):
        for u in t.deps:
            fan[u] = fan.get(u, 0) + 1
    worst = max(fan.values(), default=0)
    limit = c / (eta * C) if C else Fraction(0)
    out.append(
        S1Statement(
            "S1 Lemma 6",
            ell,
            "every σ₁-free input feeds ≤ (1/η)c/C activations",
            f"{worst}",
            f"{limit}",
            _holds(worst <= limit),
        )
    )
    out.append(
        S1Statement(
            "S1 Lemma 6",
            ell,
            "#free(σ₁) ≥ (1−η)Cn  (eq. (5))",
            f"{s1.num_free}",
            f"{(1 - eta) * C * n}",
            _holds(s1.num_free >= (1 - eta) * C * n),
        )
    )
    out.append(
        S1Statement(
            "S1 Definition 16",
            ell,
            "Stage 2's sequence runs from σ₁ to σ₂",
            f"{s1.num_free - s2.num_free} inputs fixed by Stage 2",
            status=_holds(s2.refines(s1)),
        )
    )
    need = sigma**c * c / (eta * C) if C else Fraction(0)
    note = (
        ""
        if k >= need
        else f"; outside the lemma's range (k = {k} < |Σ|^c c/(ηC) = {float(need):.4g})"
    )
    out.append(
        S1Statement(
            "S1 Lemma 17",
            ell,
            "#free(σ₂) ≥ (1−2η)Cn  (17.1, eq. (12))" + note,
            f"{s2.num_free}",
            f"{(1 - 2 * eta) * C * n}",
            _holds(s2.num_free >= (1 - 2 * eta) * C * n),
        )
    )
    fixed3 = s2.num_free - rho.num_free
    out.append(
        S1Statement(
            "S1 Definition 19",
            ell,
            "Stage 3 fixes each σ₂-free input w.p. q",
            f"{float(q * s2.num_free):.4g} expected",
            status="evaluated",
        )
    )
    x0 = (1 + delta) * q * s2.num_free
    out.append(
        S1Statement(
            "S1 Definition 20",
            ell,
            "X₀ (more than (1+δ)q·#free(σ₂) fixed by Stage 3) is avoided",
            f"{fixed3} fixed",
            f"{float(x0):.4g}",
            _holds(fixed3 <= x0),
        )
    )
    chern = (
        -((arb(delta.numerator) / delta.denominator) ** 2) * _a(q) * _a(1 - 2 * eta) * _a(C) * n / 3
    ).exp()
    out.append(
        S1Statement(
            "S1 Lemma 21",
            ell,
            "P(X₀) ≤ exp(−δ²q(1−2η)Cn/3) (Chernoff; δ ≤ 1 assumed there)",
            f"{float(chern.upper()):.4g}",
            status="evaluated",
        )
    )
    if c:
        base = 1 - (_a(q) / sigma) ** c
        lem22 = base ** (_a(k * eta * C) / (c * c))
        out.append(
            S1Statement(
                "S1 Lemma 22",
                ell,
                "P(X) ≤ (1 − (q/|Σ|)^c)^{kηC/c²} for every event X",
                f"{float(lem22.upper()):.4g}",
                status="evaluated",
            )
        )
    target = (1 - 2 * eta) * (1 - (1 + delta) * q) * C * n
    out.append(
        S1Statement(
            "S1 Corollary 24",
            ell,
            "#free(ρ_ℓ) ≥ (1−2η)(1−(1+δ)q)Cn",
            f"{rho.num_free}",
            f"{float(target):.4g}",
            _holds(rho.num_free >= target),
        )
    )
    return out


def _a(x: Fraction) -> arb:
    return arb(x.numerator) / x.denominator


def _lemma10(cert: Certificate, model: Model, fld: Field) -> list[S1Statement]:
    """Re-verify every layer's claims under the final restriction ρ_L (which refines ρ_ℓ):
    satisfaction survives refinement (S1 Lemma 10) on this instance."""
    final = cert.final_restriction
    graph = RowGraph(model, model.n_tokens(cert.n), fld)
    tables, vals = _layer0(model, final, graph)
    out = []
    for ell in range(1, model.num_layers + 1):
        claimed = [tuple(u for u in s if final.is_free(u)) for s in cert.dependency_sets[ell - 1]]
        try:
            tables, vals = _check_layer(
                model,
                ell,
                [_restrict(t, final) for t in tables],
                vals,
                claimed,
                final,
            )
        except _Reject as rej:
            out.append(
                S1Statement(
                    "S1 Lemma 10",
                    ell,
                    "satisfaction survives refinement to ρ_L",
                    str(rej.failure),
                    status="fails",
                )
            )
            break
        out.append(
            S1Statement(
                "S1 Lemma 10",
                ell,
                "satisfaction survives refinement: layer ℓ's claims re-verified under ρ_L",
                f"{final.num_free}/{cert.n} free under ρ_L",
            )
        )
    return out
