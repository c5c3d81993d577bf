"""The verdict of a restriction certificate (:mod:`attncert.verdicts`), from the
kernel's report, the model and the certificate.

* ``REFUTED`` — the kernel rejected a claim; ``UNDECIDED`` — a comparison stayed
  undecided at the precision cap;
* ``OUTSIDE-THEOREM`` — the claims hold, but Hahn's Theorem 1 does not cover the
  instance: average-hard heads (the theorem is for unique hard attention), or a
  quantitative invariant of the Depth Reduction Lemma's proof fails (the free fraction
  after Stage 3 is re-derived here from the restrictions; the stage invariants are
  read from the search's trace and say so);
* ``CERTIFIED-TRIVIAL`` — the certificate is vacuous: no free position; or no
  non-constancy witness (the kernel checked no two strings of length n with different
  decisions: the model may be constant at n, and then a restriction and a "misclassified"
  pair say nothing a constant function would not satisfy — certificates of format
  version ≤ 2 carry none); or a language was named and no two ρ_L-compatible strings
  agreeing on the dependency set differ in membership (nothing is misclassified);
* ``CERTIFIED`` — otherwise: a checked restriction, a model that is not constant at n,
  and (with a language) a checked misclassified pair. The decision may well be constant
  *on the restriction* — that is Theorem 1's conclusion whenever its dependency set is
  empty — and the kernel's report then says which fixed positions of ρ_L it depends on,
  where the search found them (:func:`dependence_text`).
"""

from __future__ import annotations

from fractions import Fraction

from attncert.certificates.hard import Certificate
from attncert.kernel.hard.checker import CheckReport
from attncert.model.spec import AttentionKind, Model
from attncert.verdicts import Assessment, Verdict


def free_fraction_invariants(cert: Certificate) -> list[str]:
    """Layers where free(ρ_ℓ) < (1−2η)(1−(1+δ)q)·free(ρ_{ℓ−1}) (Lemma 4 / S1 Cor. 24),
    re-derived from the restrictions and the proof parameters of the trace."""
    t = cert.trace
    try:
        eta, q, delta = (Fraction(str(t[k])) for k in ("eta", "q", "delta"))
    except (KeyError, ValueError, ZeroDivisionError):
        return []
    factor = (1 - 2 * eta) * (1 - (1 + delta) * q)
    out = []
    for ell in range(1, len(cert.restrictions)):
        before = cert.restrictions[ell - 1].num_free
        after = cert.restrictions[ell].num_free
        if after < factor * before:
            out.append(
                f"layer {ell}: {after} free positions, fewer than the Depth Reduction Lemma's "
                f"(1−2η)(1−(1+δ)q)·{before} = {float(factor * before):.4g} (Lemma 4 / S1 Corollary 24)"
            )
    return out


def assess(cert: Certificate, model: Model, report: CheckReport) -> Assessment:
    """The certificate's verdict and its reasons (module docstring)."""
    if not report.accepted:
        if any(f.claim == "arithmetic" for f in report.failures):
            return Assessment(Verdict.UNDECIDED, tuple(str(f) for f in report.failures))
        return Assessment(Verdict.REFUTED, tuple(str(f) for f in report.failures))
    outside = []
    if any(h.kind is AttentionKind.AVERAGE for layer in model.layers for h in layer.heads):
        outside.append(
            "the model has average-hard heads; Hahn's Theorem 1 is stated for unique hard "
            "attention (ties broken to one position)"
        )
    outside += free_fraction_invariants(cert)
    for layer in cert.trace.get("layers", []):
        for inv in layer.get("invariants", []):
            if not inv.get("holds", True) and inv.get("name") != "free after Stage 3":
                outside.append(
                    f"layer {layer.get('layer')}: paper invariant '{inv.get('name')}' fails "
                    f"({inv.get('value')} vs {inv.get('relation')} {inv.get('bound')}; "
                    f"{inv.get('source')}; from the search's trace)"
                )
    trivial = []
    notes = []
    rho = cert.final_restriction
    if rho.num_free == 0:
        trivial.append("no free position: the restriction fixes the whole input")
    if not report.nonconstant:
        trivial.append(
            "no non-constancy witness: "
            + (
                "the certificate (format version ≤ 2) carries none"
                if cert.witness is None and "witness_search" not in cert.trace
                else "the search found no two strings of length n with different decisions"
            )
            + f" — the model may be constant at n = {cert.n}, and the certificate then shows "
            "nothing a constant function would not satisfy"
        )
    if cert.language is not None and cert.misclassified is None:
        trivial.append(
            f"no two ρ_L-compatible strings that agree on the dependency set differ in "
            f"membership in {cert.language}: nothing is misclassified"
        )
    hardened = model.meta.get("hardened")
    if hardened:
        notes.append(
            f"the certified model is the hardened {hardened.get('from')!r} (each softmax head "
            "replaced by argmax attention); it says nothing directly about the soft model"
        )
    if outside:
        return Assessment(Verdict.OUTSIDE_THEOREM, tuple(outside + trivial + notes))
    if trivial:
        return Assessment(Verdict.CERTIFIED_TRIVIAL, tuple(trivial + notes))
    return Assessment(Verdict.CERTIFIED, tuple(notes))


def dependence_text(cert: Certificate, report: CheckReport) -> str:
    """One line: what the decision depends on, in the kernel's checked terms."""
    dep = cert.output_dependency
    fixed = (
        f"the fixed position(s) {_positions(report.fixed_dependence)} of ρ_L (checked)"
        if report.fixed_dependence
        else ""
    )
    if dep:
        return f"the decision depends only on the free input positions {_positions(dep)}" + (
            f"; the model also depends on {fixed}" if fixed else ""
        )
    if not report.nonconstant:
        return "the decision is constant on the restriction (it depends on no input position)"
    where = (
        fixed
        or "fixed positions of ρ_L (the search found no single one whose change alone changes it)"
    )
    return f"the decision is constant on the restriction; the model is not: it depends on {where}"


def _positions(positions) -> str:
    return "{" + ", ".join(str(u + 1) for u in positions) + "}"
