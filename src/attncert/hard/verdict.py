"""The verdict of a restriction certificate, as printed: the word and its reasons come
from :func:`attncert.kernel.verdict.hard_certificate` (checked facts only); this module adds
the notes a reader needs that decide nothing:

* the paper's per-stage invariants as the search recorded them (Stage 1 degree bound,
  Stage 2 pigeonhole counts, …) where one fails — *from the search's trace, not checked*:
  they describe the path the search took, not the certificate's claims, so they never
  change the verdict (the quantitative invariant that matters for Theorem 1's statement,
  the free fraction after each layer, is re-derived by the kernel from the restrictions);
* that a hardened model is certified, not the soft one.
"""

from __future__ import annotations

from attncert.certificates.hard import Certificate
from attncert.kernel import verdict as V
from attncert.kernel.hard.checker import CheckReport
from attncert.model.spec import Model
from attncert.verdicts import Assessment


def trace_notes(cert: Certificate) -> list[str]:
    """The per-stage invariants that fail in the search's trace (not checked; notes)."""
    out = []
    for layer in cert.trace.get("layers", []):
        if not isinstance(layer, dict):
            continue
        for inv in layer.get("invariants", []):
            if not isinstance(inv, dict) or inv.get("name") == "free after Stage 3":
                continue
            if not inv.get("holds", True):
                out.append(
                    f"layer {layer.get('layer')}: the search's trace records the paper "
                    f"invariant '{inv.get('name')}' failing ({inv.get('value')} vs "
                    f"{inv.get('relation')} {inv.get('bound')}; {inv.get('source')}) — a note "
                    "on the search's path, not checked and not part of the verdict"
                )
    return out


def assess(cert: Certificate, model: Model, report: CheckReport) -> Assessment:
    """The kernel's verdict (:func:`attncert.kernel.verdict.hard_certificate`) with its
    reasons, followed by the notes of the module docstring."""
    a = V.hard_certificate(cert, model, report)
    notes = trace_notes(cert) if report.accepted else []
    hardened = (model.meta or {}).get("hardened")
    if hardened:
        notes.append(
            f"the certified model is the hardened {hardened.get('from')!r} (each softmax head "
            "replaced by argmax attention); it says nothing directly about the soft model"
        )
    return Assessment(a.verdict, a.reasons + tuple(notes))


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
