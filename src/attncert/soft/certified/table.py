"""Side by side, per n: Lemma 5's bound, the certified B(n), the measured maximum, their
ratios, and Theorem 6's certified floor beside the measured cross-entropy.

:func:`certified_rows` runs the certification for each n of a
:class:`attncert.soft.report.SensitivityReport` (whose measured maxima come from the
adversarial search), has every certificate re-derived by the independent checker
(:func:`attncert.kernel.soft.checker.check`), and samples the cross-entropy;
:func:`format_certified` prints the table that ``attncert sensitivity --certify`` shows.
A bound that is the logit's range over all strings is labelled a *range cap*; the
Lemma-5 column says *cap* where the induction is capped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attncert.kernel.soft import checker as K
from attncert.model.spec import Model
from attncert.soft.certified import floor as FL
from attncert.soft.certified.certificate import SoftCertificate
from attncert.soft.certified.certify import sensitivity_claims
from attncert.soft.certified.rigorous import Overflow
from attncert.soft.certified.sensitivity import CertifiedSensitivity
from attncert.soft.report import SensitivityReport


@dataclass(frozen=True, eq=False)
class CertifiedRow:
    """Everything printed for one n."""

    n: int
    measured: float  # largest |Δ logit| the search found (a real pair)
    lemma5_log10: float  # NaN when Lemma 5 does not apply
    lemma5_cap: bool
    certified: CertifiedSensitivity | None
    certificate: SoftCertificate | None
    check: K.SoftCheckReport | None
    undecided: str | None = None
    floor: float | None = None  # PARITY: log(1 + e^{−B/2})
    ce: FL.MeasuredCE | None = None
    dyck: dict | None = None  # closer preference: B_g, P(U_n), floor

    @property
    def bound(self) -> float:
        return math.nan if self.certified is None else self.certified.bound

    @property
    def ratio(self) -> float:
        return self.bound / self.measured if self.measured > 0 else math.inf

    @property
    def sound(self) -> bool:
        """The measured change does not exceed the certified bound (it never may)."""
        return self.certified is None or self.measured <= self.bound

    def as_dict(self) -> dict:
        c = self.certified
        return {
            "n": self.n,
            "measured_max": self.measured,
            "certified_bound": None if c is None else c.bound,
            "certified_source": None if c is None else c.source,
            "propagated": None if c is None else c.propagated,
            "range_cap": None if c is None else c.cap,
            "ratio": None if c is None else self.ratio,
            "lemma5_log10": self.lemma5_log10,
            "lemma5_is_cap": self.lemma5_cap,
            "checked": None if self.check is None else self.check.accepted,
            "check": None if self.check is None else self.check.summary(),
            "undecided": self.undecided,
            "diagnosis": None if c is None else c.diagnosis(),
            "first_layer": None if c is None else c.worst.prop.first_layer,
            "cross_entropy_floor": self.floor,
            "measured_cross_entropy": None if self.ce is None else self.ce.mean,
            "measured_cross_entropy_half_width": None if self.ce is None else self.ce.half_width,
            "measured_cross_entropy_strings": None if self.ce is None else self.ce.samples,
            "measured_cross_entropy_exact": None if self.ce is None else self.ce.exact,
            # the floor and the measured cross-entropy are PARITY's (Theorem 6), whatever
            # the model was trained for; the labels' parity
            "cross_entropy_language": None if self.ce is None else self.ce.language,
            "log2": math.log(2),
            "dyck_bracket_type": self.dyck,
            "seconds": None if c is None else c.seconds,
        }


def exceeded_text(model: Model, x: str, y: str, bound) -> str | None:
    """In words, a change between ``x`` and ``y`` that certainly exceeds ``bound`` (decided
    in arb by :func:`attncert.kernel.soft.checker.change_exceeds`: a refutation of the
    bound), else None."""
    diff = K.change_exceeds(model, x, y, bound)
    if diff is None:
        return None
    return (
        f"the change between {x[:24]}… and {y[:24]}… is {diff} in arb, above the certified "
        f"bound {float(bound)!r}: the bound is refuted"
    )


def row_assessment(row: CertifiedRow, model: Model, witness=None):
    """One n's verdict (:func:`attncert.kernel.verdict.soft` on the kernel's report of the
    row's certificate): a measured change above the certified bound refutes it only when
    arb confirms it on the search's pair ``witness`` (x, x′); a bound that overflowed is
    UNDECIDED."""
    from attncert.kernel import verdict as V

    if row.certified is None or row.check is None:
        return V.undecided(row.undecided or "no certified bound")
    exceeded = None
    if not row.sound and witness is not None:
        exceeded = exceeded_text(model, witness.x, witness.x_prime, row.bound)
    return V.soft(
        row.check,
        model,
        widths=row.check.widths,
        restriction=False,
        free=0,
        pair=False,
        exceeded=exceeded,
    )


def certified_rows(
    model: Model,
    report: SensitivityReport,
    *,
    source: str | None = None,
    accepts_even: bool = True,
    samples: int = 1000,
    seed: int = 0,
    lp: bool = True,
    exhaustive_max: int = FL.EXHAUSTIVE_MAX,
) -> list[CertifiedRow]:
    """Certify, check and put beside the measurements (module docstring). The PARITY
    cross-entropy is computed over all 2ⁿ strings when 2ⁿ ≤ ``exhaustive_max``, else on
    ``samples`` sampled strings."""
    rows = []
    for k, res in enumerate(report.profile.results):
        n = res.n
        base = {
            "n": n,
            "measured": res.witness.logit,
            "lemma5_log10": report.bound_log10[k],
            "lemma5_cap": bool(report.bound_capped[k]) if report.bound_capped else False,
        }
        try:
            sens, closer, claims = sensitivity_claims(model, n, lp=lp)
        except Overflow as err:
            rows.append(
                CertifiedRow(
                    **base, certified=None, certificate=None, check=None, undecided=str(err)
                )
            )
            continue
        cert = SoftCertificate(
            model.digest,
            model.name,
            source,
            n,
            lp,
            tuple(claims),
            trace={"diagnosis": sens.diagnosis()},
        )
        check = K.check(cert.to_dict(), model)
        floor = ce = dyck = None
        if claims[0].floor is not None:
            floor = claims[0].floor["nats"]
            ce = FL.measured_parity_ce(
                model,
                n,
                samples=samples,
                seed=seed,
                accepts_even=accepts_even,
                exhaustive_max=exhaustive_max,
            )
        if closer is not None:
            f = claims[1].floor
            dyck = {"B_g": claims[1].bound, "P_U": f["P_U"], "p": f["p"], "floor": f["nats"]}
        rows.append(
            CertifiedRow(
                **base,
                certified=sens,
                certificate=cert,
                check=check,
                floor=floor,
                ce=ce,
                dyck=dyck,
            )
        )
    return rows


def _g(x: float) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


def format_certified(rows: list[CertifiedRow]) -> str:
    """The certified table (module docstring)."""
    lines = [
        "certified (outward-rounded bounds over every string of length n; checked independently):",
        f"{'n':>6}  {'measured max':>12}  {'certified B(n)':>14}  {'source':<12} "
        f"{'B/measured':>10}  {'log10 L5':>13}  {'checked':<8}",
    ]
    for r in rows:
        if r.certified is None:
            lines.append(f"{r.n:>6}  {r.measured:>12.4g}  {'UNDECIDED':>14}  {r.undecided}")
            continue
        l5 = "—" if math.isnan(r.lemma5_log10) else f"{r.lemma5_log10:.2f}"
        l5 += " (cap)" if r.lemma5_cap and l5 != "—" else ""
        ok = "yes" if r.check and r.check.accepted else "REJECTED"
        lines.append(
            f"{r.n:>6}  {r.measured:>12.4g}  {r.bound:>14.4g}  {r.certified.source:<12} "
            f"{r.ratio:>10.3g}  {l5:>13}  {ok:<8}"
        )
    for r in rows:
        if r.certified is not None:
            lines.append(f"  n = {r.n}: {r.certified.diagnosis()}")
        if r.check is not None and not r.check.accepted:
            lines.append(f"  n = {r.n}: {r.check.summary()}")
        if not r.sound:
            lines.append(
                f"  n = {r.n}: SOUNDNESS VIOLATION: the measured change {r.measured!r} exceeds "
                f"the certified bound {r.bound!r}"
            )
    if any(r.floor is not None for r in rows):
        langs = sorted({r.ce.language for r in rows if r.ce is not None}) or ["parity"]
        lines.append(
            "Theorem 6 on PARITY — the floor and the measured cross-entropy are PARITY's "
            f"(labels: {', '.join(langs)}), whatever language the model was trained for "
            "(uniform strings of length n, σ(logit) = P(accept); nats):"
        )
        lines.append(f"{'n':>6}  {'PARITY floor':>15}  {'measured on PARITY':>34}  {'log 2':>6}")
        for r in rows:
            if r.floor is None:
                continue
            m = r.ce.text() if r.ce else "—"
            lines.append(f"{r.n:>6}  {r.floor:>15.4g}  {m:>34}  {math.log(2):>6.4f}")
        lines.append(
            "  measured: over all 2^n strings where 2^n ≤ 65536 (floating point, no sampling "
            "error), else sampled with ± 3 standard errors"
        )
    if any(r.dyck for r in rows):
        lines.append(
            "2-Dyck next-symbol (Hahn's PCFG): E[CE] − optimal ≥ (1 − p)·P(U_n)·log(1 + e^{−B_g/2}), "
            "B_g the certified sensitivity of ℓ_) − ℓ_]:"
        )
        for r in rows:
            if r.dyck:
                d = r.dyck
                lines.append(
                    f"{r.n:>6}  B_g = {d['B_g']:.4g}, P(U_n) ≥ {d['P_U']:.4g}, p = {d['p']}: "
                    f"floor {d['floor']:.4g} nats"
                )
    return "\n".join(lines)
