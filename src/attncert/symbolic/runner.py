"""Check every claim of :mod:`attncert.symbolic.claims`, in general and at given parameters.

For each claim the runner reports

- a **general** verdict (all admissible parameters): ``proved`` (sympy, :mod:`.prover`),
  ``refuted`` (a counterexample verified rigorously by :mod:`.counterexample`), ``cited``
  (a finite check found no counterexample and the statement is a cited textbook theorem),
  ``holds`` (decided at every point of a finite domain), or ``unknown``;
- a **concrete** verdict at the user's (c, H, C, C′, η, q, δ): the same procedures with those
  values fixed (remaining variables such as k, n stay quantified);
- the constants of :mod:`.constants` (smallest k for (12) in both versions of f, N for (11)),
  each re-verified: (12) holds at k and fails at k−1; (11) holds at N and fails at N−1.

>>> from attncert.symbolic import check_claims, lll_params
>>> rep = check_claims(lll_params(c=1, H=2, C=1, C_prime="1/2"))
>>> rep.result("stage2.choice-of-k[supplement]").general.value
'proved'
>>> rep.result("def5.suggested-choice").concrete.value  # η = 0 at C′/C = ½
'refuted'
>>> rep.exit_code
1
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from fractions import Fraction
from functools import cache

from attncert.symbolic.claim_types import Claim, Kind, Version
from attncert.symbolic.claims import CLAIMS
from attncert.symbolic.constants import (
    eq11_holds,
    eq12_holds,
    lemma_constants,
)
from attncert.symbolic.counterexample import Counterexample, find_counterexample
from attncert.symbolic.displays import DISPLAYS
from attncert.symbolic.params import LLLParams
from attncert.symbolic.prover import prove

__all__ = ["ClaimResult", "Report", "Verdict", "check_claim", "check_claims", "decide_claim"]


class Verdict(Enum):
    PROVED = "proved"
    HOLDS = "holds"
    CITED = "cited"
    REFUTED = "refuted"
    UNKNOWN = "unknown"

    @property
    def mark(self) -> str:
        return {"proved": "✓", "holds": "✓", "cited": "✓", "refuted": "✗", "unknown": "?"}[
            self.value
        ]


@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    general: Verdict
    general_evidence: str
    general_counterexample: Counterexample | None
    concrete: Verdict | None
    concrete_evidence: str
    concrete_counterexample: Counterexample | None

    def as_dict(self) -> dict[str, object]:
        cl = self.claim
        return {
            "id": cl.id,
            "version": cl.version.value,
            "source": [str(s) for s in cl.source],
            "statement": cl.statement,
            "printed": cl.printed,
            "displays": list(cl.displays),
            "follows_from": list(cl.follows_from),
            "general": self.general.value,
            "general_evidence": self.general_evidence,
            "general_counterexample": _cex(self.general_counterexample),
            "concrete": None if self.concrete is None else self.concrete.value,
            "concrete_evidence": self.concrete_evidence,
            "concrete_counterexample": _cex(self.concrete_counterexample),
        }


def _cex(c: Counterexample | None) -> dict[str, str] | None:
    return None if c is None else {k: str(v) for k, v in c.values.items()}


def _finite_domain(claim: Claim, fixed: dict[str, Fraction]) -> bool:
    """True if every free variable ranges over a finite integer domain fully sampled."""
    for v in claim.parameters:
        if v.name in fixed:
            continue
        d = v.domain
        if not (d.integer and d.lo is not None and d.hi is not None):
            return False
        if len(v.samples) < int(d.hi - d.lo) + 1:
            return False
    return True


def _verdict(
    claim: Claim, fixed: dict[str, Fraction]
) -> tuple[Verdict, str, Counterexample | None]:
    pr = prove(claim, fixed)
    if pr.proved:
        return Verdict.PROVED, pr.evidence, None
    sr = find_counterexample(claim, fixed)
    if sr.counterexample is not None:
        return (
            Verdict.REFUTED,
            f"counterexample (verified exactly/with arb): {sr.counterexample}",
            sr.counterexample,
        )
    tally = f"no counterexample at {sr.points_checked} points ({sr.undecided} undecided)"
    if claim.kind is Kind.ORACLE and sr.undecided == 0 and _finite_domain(claim, fixed):
        return Verdict.HOLDS, f"decided at every point of a finite domain: {tally}", None
    if claim.citation and sr.undecided == 0:
        return Verdict.CITED, f"{claim.citation}; {tally}", None
    return Verdict.UNKNOWN, f"{pr.evidence}; {tally}", None


def decide_claim(
    claim: Claim, fixed: dict[str, Fraction] | None = None
) -> tuple[Verdict, str, Counterexample | None]:
    """Decide any :class:`Claim` (also one defined outside :data:`CLAIMS`): proved by the
    sympy prover, refuted by a verified counterexample, ``holds`` on a finite domain decided
    at every point, ``cited``, or unknown — with the evidence."""
    return _verdict(claim, dict(fixed or {}))


@cache
def _general(claim_id: str) -> tuple[Verdict, str, Counterexample | None]:
    return _verdict(_claim(claim_id), {})


def _claim(claim_id: str) -> Claim:
    return next(c for c in CLAIMS if c.id == claim_id)


def check_claim(claim: Claim, params: LLLParams | None = None) -> ClaimResult:
    """Check one claim in general and (if ``params``) at those parameter values."""
    g = _general(claim.id)
    if params is None:
        return ClaimResult(claim, *g, None, "", None)
    names = {v.name for v in claim.parameters}
    names |= {s.name for s in claim.conclusion.free_symbols}
    for h in claim.hypotheses:
        names |= {s.name for s in h.free_symbols}
    fixed = {k: Fraction(v) for k, v in params.env().items() if k in names}
    outside = [
        f"{v.name} = {fixed[v.name]} ∉ {v.domain.describe()}"
        for v in claim.parameters
        if v.name in fixed and not v.domain.contains(fixed[v.name])
    ]
    if outside:
        why = (
            "not decided here: the parameters lie outside the claim's domain ("
            + ", ".join(outside)
            + ")"
        )
        return ClaimResult(claim, *g, Verdict.UNKNOWN, why, None)
    if claim.kind in (Kind.LIMIT, Kind.CUSTOM):
        # statements for all E > 0 / all k: the parameters only fix E, which is positive.
        return ClaimResult(claim, *g, g[0], "as in general (holds for every E > 0)", g[2])
    c = _concrete(claim.id, tuple(sorted(fixed.items())))
    return ClaimResult(claim, *g, *c)


@cache
def _concrete(
    claim_id: str, fixed: tuple[tuple[str, Fraction], ...]
) -> tuple[Verdict, str, Counterexample | None]:
    """The verdict at fixed parameter values, a function of the claim and the values: the
    CLI, the artifact checker and the tests ask it again for the same parameters."""
    return _verdict(_claim(claim_id), dict(fixed))


@dataclass(frozen=True)
class Report:
    """Results of :func:`check_claims`."""

    params: LLLParams | None
    results: tuple[ClaimResult, ...]
    constants: dict[str, object]

    def result(self, claim_id: str) -> ClaimResult:
        for r in self.results:
            if r.claim.id == claim_id:
                return r
        raise KeyError(claim_id)

    @property
    def refuted(self) -> tuple[ClaimResult, ...]:
        """Claims refuted at the given parameters (or in general if no parameters)."""
        if self.params is None:
            return tuple(r for r in self.results if r.general is Verdict.REFUTED)
        return tuple(r for r in self.results if r.concrete is Verdict.REFUTED)

    @property
    def exit_code(self) -> int:
        """1 if some claim is refuted at the parameters (or constants fail), else 0."""
        return self.exit_code_ignoring(())

    def exit_code_ignoring(self, ignore: tuple[str, ...]) -> int:
        """As :attr:`exit_code`, not counting refutations of the claims in ``ignore``."""
        bad = [r for r in self.refuted if r.claim.id not in ignore]
        return 1 if bad or not self.constants.get("verified", True) else 0

    def counts(self, which: str = "general") -> dict[str, int]:
        """Claims, proved (sympy or exhaustive), cited (textbook theorem, no counterexample at
        the sample points), refuted (verified counterexample) and undecided — ``general``
        (all admissible parameters) or ``concrete`` (at the report's parameters)."""
        vs = [getattr(r, which) for r in self.results]
        vs = [v for v in vs if v is not None]
        return {
            "claims": len(vs),
            "proved": sum(v in (Verdict.PROVED, Verdict.HOLDS) for v in vs),
            "cited": sum(v is Verdict.CITED for v in vs),
            "refuted": sum(v is Verdict.REFUTED for v in vs),
            "undecided": sum(v is Verdict.UNKNOWN for v in vs),
        }

    def displays(self) -> list[dict[str, object]]:
        """Per displayed equation/quoted step: role, the claims checking it and a verdict for
        the text as printed — ``refuted`` if a claim taken from the papers (not an attncert
        refinement) is refuted in general, ``proved``/``cited`` if all such claims are,
        ``undecided`` otherwise; ``definition``/``hypothesis`` for the others."""
        out = []
        for d in DISPLAYS:
            rs = [r for r in self.results if d.label in r.claim.displays]
            printed = [r for r in rs if r.claim.version is not Version.ATTNCERT] or rs
            if d.role != "claim":
                verdict = d.role
            elif not rs:
                verdict = "unchecked"
            elif any(r.general is Verdict.REFUTED for r in printed):
                verdict = "refuted"
            elif all(r.general in (Verdict.PROVED, Verdict.HOLDS) for r in printed):
                verdict = "proved"
            elif all(r.general in (Verdict.PROVED, Verdict.HOLDS, Verdict.CITED) for r in printed):
                verdict = "cited"
            else:
                verdict = "undecided"
            out.append({**d.to_dict(), "claims": [r.claim.id for r in rs], "verdict": verdict})
        return out

    def as_dict(self) -> dict[str, object]:
        return {
            "params": None if self.params is None else self.params.as_dict(),
            "counts": {
                "general": self.counts("general"),
                **({} if self.params is None else {"concrete": self.counts("concrete")}),
            },
            "displays": self.displays(),
            "claims": [r.as_dict() for r in self.results],
            "constants": self.constants,
            "refuted": [r.claim.id for r in self.refuted],
            "exit_code": self.exit_code,
        }


def _constants_block(p: LLLParams) -> dict[str, object]:
    out: dict[str, object] = {}
    ok = True
    for version in ("paper", "supplement"):
        lc = lemma_constants(p, version)
        checks = {
            "eq12_at_k_eq12": eq12_holds(lc.k_eq12, p, version),
            "eq12_at_k_eq12_minus_1": eq12_holds(lc.k_eq12 - 1, p, version),
            "eq11_at_N": eq11_holds(lc.N_eq11, lc.k, p),
            "eq11_at_N_minus_1": lc.N_eq11 > 1 and eq11_holds(lc.N_eq11 - 1, lc.k, p),
        }
        good = (
            checks["eq12_at_k_eq12"]
            and not checks["eq12_at_k_eq12_minus_1"]
            and checks["eq11_at_N"]
            and not checks["eq11_at_N_minus_1"]
        )
        ok = ok and good
        out[version] = {**lc.as_dict(), "checks": checks, "verified": good}
    out["verified"] = ok
    return out


def check_claims(params: LLLParams | None = None, *, ids: tuple[str, ...] | None = None) -> Report:
    """Check all claims (or those in ``ids``), and compute/verify the constants at ``params``.

    Returns a :class:`Report`; ``report.exit_code`` is the CLI's exit status.
    """
    cls = CLAIMS if ids is None else tuple(c for c in CLAIMS if c.id in ids)
    results = tuple(check_claim(c, params) for c in cls)
    consts = {} if params is None else _constants_block(params)
    return Report(params, results, consts)
