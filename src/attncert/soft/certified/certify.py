"""One soft certificate, end to end: B(n), Theorem 6's floor, a soft restriction and the
misclassified pair, then the independent checker.

:func:`certify_soft` is the pipeline (untrusted search, trusted check):

1. B(n) for the accept logit (:func:`.sensitivity.certify_sensitivity`) and, on {0,1}ⁿ,
   the PARITY floor log(1 + e^{−B/2}); for a 2-Dyck next-symbol model also B_g for the
   closer preference g = ℓ_) − ℓ_] and the bracket-type floor (:mod:`.floor`);
2. optionally a restriction with many free positions whose decision is certified constant
   (:mod:`.restriction`), and two completions of different membership, their logits
   decided in arb (:func:`attncert.kernel.soft.checker.decide`);
3. :func:`attncert.kernel.soft.checker.check` re-derives everything from the model and the
   certificate.

Python::

    >>> from attncert.model import zoo_model
    >>> from attncert.soft.certified.certify import certify_soft
    >>> out = certify_soft(zoo_model("soft_parity_lm"), 24, restriction=True, time_limit=5)
    >>> out.check.accepted and out.certificate.restriction.rho.count("*") > 0
    True

CLI: ``attncert soft-certify zoo:soft_parity_lm --n 1024 -o cert.json``;
``attncert soft-check cert.json``.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from fractions import Fraction

from attncert.errors import InputError
from attncert.kernel.soft import checker as K
from attncert.languages import language as make_language
from attncert.model.spec import Model
from attncert.soft.certified import floor as FL
from attncert.soft.certified import rigorous as R
from attncert.soft.certified.certificate import (
    PairClaim,
    RestrictionClaim,
    SensitivityClaim,
    SoftCertificate,
    SymbolClaim,
)
from attncert.soft.certified.restriction import (
    SoftRestriction,
    best_restriction,
    misclassified_pair,
)
from attncert.soft.certified.sensitivity import CertifiedSensitivity, certify_sensitivity

DYCK_READOUT = {"lm_difference": [")", "]"]}


@dataclass(frozen=True, eq=False)
class SoftOutcome:
    """What :func:`certify_soft` produced and what the checker said."""

    certificate: SoftCertificate
    sensitivity: CertifiedSensitivity | None
    closer: CertifiedSensitivity | None  # 2-Dyck: the ) versus ] preference
    restriction: SoftRestriction | None
    check: K.SoftCheckReport
    notes: tuple[str, ...] = field(default=())
    certificate_model: Model | None = None

    @property
    def assessment(self):
        """The verdict and its reasons, from the kernel's report
        (:func:`attncert.kernel.verdict.soft`): CERTIFIED (checked; with a restriction: a
        free position and a misclassified pair), CERTIFIED-TRIVIAL (a restriction with no
        free position or no certified pair; or B(n) only the logit's range), OUTSIDE-THEOREM
        (a hypothesis of Lemma 5 fails for this model), REFUTED (the checker refused),
        UNDECIDED (a restriction was asked for and the search found none)."""
        from attncert.kernel import verdict as V

        asked = self.restriction is not None or any("no restriction" in n for n in self.notes)
        if self.check.accepted and asked and self.certificate.restriction is None:
            return V.not_found("no restriction whose decision is certified constant was found")
        return V.soft(
            self.check,
            self.certificate_model,
            widths=getattr(self.check, "widths", ()),
            restriction=asked,
            free=getattr(self.check, "free", 0),
            pair=getattr(self.check, "pair", False),
        )

    @property
    def verdict(self) -> str:
        """One word of :class:`attncert.verdicts.Verdict` (:attr:`assessment`)."""
        return self.assessment.verdict.value

    @property
    def outside(self) -> tuple[str, ...]:
        """Hypotheses of Lemma 5 that fail for this model (in words)."""
        return lemma5_failures(self.certificate_model)


def lemma5_failures(model: Model | None) -> tuple[str, ...]:
    """The hypotheses of Hahn's Lemma 5 that ``model`` violates at one length (the
    kernel's list, :func:`attncert.kernel.verdict.lemma5_outside`). The certified numbers
    hold at their n regardless."""
    from attncert.kernel.verdict import lemma5_outside

    return () if model is None else lemma5_outside(model)


MARGIN = 2.0**-30  # claims are widened by this relative amount (see ``widen``)


def widen(x: float, side: str) -> float:
    """``x`` moved outward by 2⁻³⁰·max(1, |x|): the checker re-derives every bound with its
    own code, which agrees with ours to a few ulps; recording slightly weaker claims keeps
    them on the safe side of its derivation (its tolerance, 10⁻⁶, is far wider)."""
    step = MARGIN * max(1.0, abs(x))
    return float(R.up(x + step)) if side == "up" else float(R.down(x - step))


def _claim(sens: CertifiedSensitivity, readout, floor=None) -> SensitivityClaim:
    per = []
    for s in sens.per_symbol:
        lo, hi, prop = widen(s.z_lo, "down"), widen(s.z_hi, "up"), widen(s.propagated, "up")
        per.append(SymbolClaim(s.symbol, (lo, hi), prop, min(float(R.up(hi - lo)), prop)))
    return SensitivityClaim(readout, tuple(per), max(p.bound for p in per), floor)


def _dyck_p(model: Model) -> Fraction:
    p = (model.meta.get("training") or {}).get("p", "3/10")
    return Fraction(str(p))


def _member(name: str):
    lang = make_language(name)
    return lang.contains


def sensitivity_claims(model: Model, n: int, *, lp: bool = True):
    """(B(n) of the accept logit, B(n) of the 2-Dyck closer preference or None, the claims
    with their floors: PARITY on {0,1}ⁿ, the bracket-type floor for a 2-Dyck
    next-symbol model)."""
    sens = certify_sensitivity(model, n, lp=lp)
    claims = [_claim(sens, "accept")]
    if set(model.alphabet) == {"0", "1"}:
        floor = {"kind": "parity", "nats": FL.parity_floor(claims[0].bound)}
        claims[0] = dataclasses.replace(claims[0], floor=floor)
    closer = None
    r = model.readout
    heads = set() if r.lm_weight is None else set(r.lm_symbols)
    if set(model.alphabet) == set("()[]") and {")", "]"} <= heads:
        closer = certify_sensitivity(model, n, lp=lp, readout=DYCK_READOUT)
        p = _dyck_p(model)
        claim = _claim(closer, DYCK_READOUT)
        pu, nats = FL.dyck_floor(claim.bound, p, n)
        floor_g = {"kind": "dyck2-bracket-type", "p": str(p), "P_U": pu, "nats": nats}
        claims.append(dataclasses.replace(claim, floor=floor_g))
    return sens, closer, claims


def certify_soft(
    model: Model,
    n: int,
    *,
    source: str | None = None,
    restriction: bool = False,
    language: str = "parity",
    time_limit: float = 120.0,
    lp: bool = True,
    seed: int = 0,
    restriction_method: str = "auto",
    progress=None,
) -> SoftOutcome:
    """Build and check a soft certificate for ``model`` at length ``n`` (module docstring).
    ``progress(free, propagations)`` is called after each propagation of the restriction
    search with the most free positions certified so far."""
    t0 = time.perf_counter()
    if restriction:
        lang = make_language(language)
        foreign = sorted(set(model.alphabet) - set(lang.alphabet))
        if foreign:
            raise InputError(
                f"language {language!r} has no symbol {foreign[0]!r} of the model "
                f"{model.name!r} (alphabet {''.join(model.alphabet)}): the pair of completions "
                "could not be judged",
                expected="a language over the model's alphabet (e.g. dyck2 for bracket models)",
            )
    notes: list[str] = []
    sens, closer, claims = sensitivity_claims(model, n, lp=lp)
    rest_claim = pair_claim = None
    found = None
    if restriction:
        left = max(1.0, time_limit - (time.perf_counter() - t0))
        found = best_restriction(
            model, n, time_limit=left, seed=seed, method=restriction_method, progress=progress
        )
        if found is None:
            notes.append("undecided: no restriction whose decision is certified constant was found")
        else:
            z = (widen(found.z_lo, "down"), widen(found.z_hi, "up"))
            base = found.base if found.method == "affine" else None
            rest_claim = RestrictionClaim(found.rho, found.decision, z, found.method, base)
            pair = misclassified_pair(found.rho, lang.contains, model.alphabet, seed=seed)
            if pair is None:
                notes.append(f"no two completions of ρ differ in {language}")
            else:
                pair_claim = _decide_pair(model, pair, language, found.decision, notes)
    cert = SoftCertificate(
        model_sha256=model.digest,
        model_name=model.name,
        model_source=source,
        n=n,
        lp=lp,
        sensitivity=tuple(claims),
        restriction=rest_claim,
        pair=pair_claim,
        trace={
            "seconds": time.perf_counter() - t0,
            "diagnosis": sens.diagnosis(),
            "source": sens.source,
            "restriction_search": None
            if found is None
            else {
                "certifications": found.certifications,
                "seconds": found.seconds,
                "base": found.base,
                "method": found.method,
            },
        },
    )
    report = K.check(cert.to_dict(), model)
    return SoftOutcome(cert, sens, closer, found, report, tuple(notes), model)


def _decide_pair(model, pair, language, decision, notes) -> PairClaim | None:
    precs, texts = [], []
    for s in pair:
        prec, ball = K.decide(model, s)
        if prec is None:
            notes.append(f"undecided: the logit of {s[:24]}… keeps 0 in its enclosure at 4096 bits")
            return None
        if bool(ball > 0) != decision:
            notes.append(
                "the pair's decision disagrees with the certified one (a bug): not recorded"
            )
            return None
        precs.append(prec)
        texts.append(K.ball_text(ball))
    member = _member(language)
    a, b = pair
    return PairClaim(
        (a, b), language, (bool(member(a)), bool(member(b))), decision, tuple(precs), tuple(texts)
    )
