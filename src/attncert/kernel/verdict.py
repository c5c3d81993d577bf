"""Every verdict word attncert prints, decided in one place from checked facts (trusted;
issue 41).

The words and their exit codes are :class:`attncert.verdicts.Verdict`. This module is the
only place that *chooses* one: the CLI, the report page, ``report.json`` and ``attncert
check`` print what these functions return, and each function reads only what a kernel
checker re-derived (its report), the model's weights and the certificate's checked
fields — never a search trace.

Rules every function keeps:

* **nothing checked is never CERTIFIED** — a check over an empty set (no certificate, a
  report whose cells all failed, a tree with no artifact) is UNDECIDED with the reason;
* **a search that finds nothing is UNDECIDED** with the reason
  (:func:`not_found`); REFUTED only when the kernel rejects a claim, or a claim about the
  model is proved false (a misclassified string decided in arb, a measured change above a
  certified bound);
* an arithmetic comparison still undecided at the precision cap is UNDECIDED, never
  guessed (a checker failure of claim ``"arithmetic"``);
* a section of rows (one analysis across lengths) gets :func:`section`'s rule, which is
  stated in words next to the verdict wherever it is shown.

=========================  ===============================================================
function                   decides
=========================  ===============================================================
:func:`hard`               a restriction certificate (Hahn Theorem 1 / Corollary 2)
:func:`soft`               a soft certificate: B(n) (Lemma 5), a soft restriction and pair
:func:`uniform`            B(n) ≤ K/n for every n ≥ N₀ (Lemma 5 uniformly, Theorem 6)
:func:`verify`             certified accuracy at one length: CERTIFIED only when proved
                           correct on every string
:func:`all_lengths`        a compiled formula at every length (kernel for n ≥ N₀, z3 below)
:func:`horizon`            certified accuracy over an interval of lengths
:func:`bounded_proof`      z3's bounded proof (``prove``, up to a length)
:func:`tieless`            Theorem 26 at every length
:func:`not_found`          a search that produced no certificate
:func:`rejected`,          a claim refused, arithmetic that could not decide, a model
:func:`undecided`,         outside a theorem's hypotheses before any search
:func:`outside`
:func:`section`            one analysis across lengths, from its rows
:func:`combine`            several independent checks (a report directory, a proofs tree)
=========================  ===============================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from attncert.kernel.core.hypotheses import lemma5
from attncert.model.kinds import AttentionKind
from attncert.model.spec import Model
from attncert.verdicts import Assessment, Verdict

__all__ = [
    "NOT_CHECKED",
    "SECTION_RULE",
    "WORST_FIRST",
    "all_lengths",
    "combine",
    "hard",
    "horizon",
    "lemma5_outside",
    "not_found",
    "section",
    "soft",
    "uniform",
    "verify",
    "worst",
]

#: verdicts from worst to best: how rows combine (:func:`section`, :func:`combine`)
WORST_FIRST = (
    Verdict.REFUTED,
    Verdict.UNDECIDED,
    Verdict.OUTSIDE_THEOREM,
    Verdict.CERTIFIED_TRIVIAL,
    Verdict.CERTIFIED,
)
NOT_CHECKED = "nothing was checked: no certificate was re-derived"
SECTION_RULE = (
    "the section's verdict is its worst row verdict (REFUTED < UNDECIDED < OUTSIDE-THEOREM "
    "< CERTIFIED-TRIVIAL < CERTIFIED); rows that do not apply are not counted, and a section "
    "with no checked row is UNDECIDED"
)


def _failed(failures: Sequence) -> Assessment:
    """A rejection: UNDECIDED when only arithmetic ran out, REFUTED otherwise."""
    reasons = tuple(str(f) for f in failures) or ("the checker rejected the certificate",)
    if failures and all(getattr(f, "claim", "") == "arithmetic" for f in failures):
        return Assessment(Verdict.UNDECIDED, reasons)
    return Assessment(Verdict.REFUTED, reasons)


def worst(verdicts: Iterable[Verdict]) -> Verdict | None:
    """The worst of ``verdicts`` in :data:`WORST_FIRST` order (None for none)."""
    found = list(verdicts)
    return min(found, key=WORST_FIRST.index) if found else None


# ----- Hahn Theorem 1 / Corollary 2 ------------------------------------------------------------


@dataclass(frozen=True)
class ProofParameters:
    """The Depth Reduction Lemma's stated parameters (inputs of the lemma, not search
    results): 0 < η < 1/2, 0 < q < 1, δ ≥ 0."""

    eta: Fraction
    q: Fraction
    delta: Fraction

    @property
    def factor(self) -> Fraction:
        """(1 − 2η)(1 − (1 + δ)q): the least fraction of free inputs one application of the
        lemma keeps (Lemma 4 / S1 Corollary 24)."""
        return (1 - 2 * self.eta) * (1 - (1 + self.delta) * self.q)


def free_fraction_shortfalls(
    free: Sequence[int], params: ProofParameters | None
) -> tuple[str, ...]:
    """Layers where free(ρ_ℓ) < (1 − 2η)(1 − (1 + δ)q)·free(ρ_{ℓ−1}), from the checked
    restrictions' free counts ``free`` (ρ₀, ρ₁, …)."""
    if params is None:
        return ()
    out = []
    for ell in range(1, len(free)):
        need = params.factor * free[ell - 1]
        if free[ell] < need:
            out.append(
                f"layer {ell}: {free[ell]} free positions, fewer than the Depth Reduction "
                f"Lemma's (1−2η)(1−(1+δ)q)·{free[ell - 1]} = {float(need):.4g} with η = "
                f"{params.eta}, q = {params.q}, δ = {params.delta} (Lemma 4 / S1 Corollary 24)"
            )
    return tuple(out)


def hard(
    report,
    model: Model,
    *,
    free: Sequence[int],
    params: ProofParameters | None,
    language: str | None,
    misclassified: bool,
    witness: bool,
    n: int | None = None,
) -> Assessment:
    """A restriction certificate's verdict from the hard checker's ``report``
    (:class:`attncert.kernel.hard.checker.CheckReport`), the model and the certificate's
    checked fields: the free counts of ρ₀ … ρ_L, the stated proof parameters, the
    language, whether it has a misclassified pair and a non-constancy witness.

    * REFUTED / UNDECIDED — the kernel rejected a claim / ran out of precision;
    * OUTSIDE-THEOREM — the claims hold, but Theorem 1 does not cover the instance:
      average-hard heads (the theorem is about unique hard attention), or a layer keeps
      fewer free inputs than the Depth Reduction Lemma guarantees for the stated η, q, δ;
    * CERTIFIED-TRIVIAL — vacuous: no free position; no checked non-constancy witness (the
      model may be constant at n, and a constant function satisfies every restriction);
      or a language but no misclassified pair;
    * CERTIFIED — otherwise.
    """
    if not report.accepted:
        return _failed(report.failures)
    outside = []
    if any(h.kind is AttentionKind.AVERAGE for layer in model.layers for h in layer.heads):
        outside.append(
            "the model has average-hard heads; Hahn's Theorem 1 is stated for unique hard "
            "attention (ties broken to one position)"
        )
    outside += free_fraction_shortfalls(free, params)
    trivial = []
    if not free or free[-1] == 0:
        trivial.append("no free position: the restriction fixes the whole input")
    if not report.nonconstant:
        trivial.append(
            "no non-constancy witness was checked"
            + (
                ""
                if witness
                else " (the certificate carries none: one of format version ≤ 2, or a search "
                "that found no two strings with different decisions)"
            )
            + f": the model may be constant at {'this n' if n is None else f'n = {n}'}, and a "
            "restriction then shows nothing a constant function would not satisfy"
        )
    if language is not None and not misclassified:
        trivial.append(
            f"no two ρ_L-compatible strings that agree on the dependency set differ in "
            f"membership in {language}: nothing is misclassified"
        )
    if outside:
        return Assessment(Verdict.OUTSIDE_THEOREM, tuple(outside + trivial))
    if trivial:
        return Assessment(Verdict.CERTIFIED_TRIVIAL, tuple(trivial))
    return Assessment(Verdict.CERTIFIED, ())


# ----- Lemma 5 / Theorem 6 -------------------------------------------------------------------


def lemma5_outside(model: Model, *, every_length: bool = False) -> tuple[str, ...]:
    """Lemma 5's hypotheses that ``model`` violates (:mod:`attncert.kernel.core.hypotheses`)."""
    return lemma5(model, every_length=every_length)


def soft(
    report,
    model: Model,
    *,
    widths: Sequence[tuple[float, float]],
    restriction: bool,
    free: int,
    pair: bool,
    exceeded: str | None = None,
) -> Assessment:
    """A soft certificate's verdict from the soft checker's ``report`` and its checked
    fields: per sensitivity claim (re-derived logit range width, re-derived one-position
    change) in ``widths``; whether it has a restriction, how many free positions the
    restriction keeps and whether it has a pair. ``exceeded``: a rigorously decided change
    larger than the certified bound (a refutation of the bound), in words.

    * REFUTED — rejected, or a change above the certified bound (``exceeded``);
    * CERTIFIED-TRIVIAL — a restriction with no free position or no pair;
    * OUTSIDE-THEOREM — the certified numbers hold at this n, but a hypothesis of Lemma 5
      fails for the model (:func:`lemma5_outside`);
    * CERTIFIED-TRIVIAL — without a restriction: every B(n) is only the logit's range (the
      change bound is not below it — a cap, not a bound on one symbol's effect);
    * UNDECIDED — nothing was claimed at all (no sensitivity claim, no restriction);
    * CERTIFIED — otherwise.
    """
    if not report.accepted:
        return _failed(report.failures)
    if exceeded:
        return Assessment(Verdict.REFUTED, (exceeded,))
    if restriction and (free == 0 or not pair):
        why = (
            "the restriction has no free position"
            if free == 0
            else "no pair of completions of different membership is certified"
        )
        return Assessment(Verdict.CERTIFIED_TRIVIAL, (why,))
    outside = lemma5_outside(model)
    if outside:
        return Assessment(Verdict.OUTSIDE_THEOREM, outside)
    if not restriction and not widths:
        return Assessment(Verdict.UNDECIDED, (NOT_CHECKED,))
    if not restriction and all(change >= width for width, change in widths):
        return Assessment(
            Verdict.CERTIFIED_TRIVIAL,
            (
                "B(n) is only the logit's range (a cap): the certified change is not below "
                "it, so nothing is said about one symbol's effect",
            ),
        )
    return Assessment(Verdict.CERTIFIED, ())


def uniform(report, model: Model, *, cap: Fraction | None) -> Assessment:
    """A length-uniform certificate's verdict (B(n) ≤ K/n for every n ≥ N₀): REFUTED /
    UNDECIDED when rejected; OUTSIDE-THEOREM when Lemma 5's hypotheses fail for a statement
    about every length (the checker refuses such a certificate, so this is for a model
    without one); CERTIFIED-TRIVIAL when the logit is constant over every length (Z = 0);
    CERTIFIED otherwise."""
    outside = lemma5_outside(model, every_length=True)
    if report is None:
        if outside:
            return Assessment(Verdict.OUTSIDE_THEOREM, outside)
        return Assessment(Verdict.UNDECIDED, (NOT_CHECKED,))
    if not report.accepted:
        return _failed(report.failures)
    if cap is not None and cap <= 0:
        return Assessment(
            Verdict.CERTIFIED_TRIVIAL,
            ("the logit is the same on every string of every length n ≥ N₀ (Z = 0)",),
        )
    return Assessment(Verdict.CERTIFIED, ())


# ----- certified accuracy --------------------------------------------------------------------


def verify(report) -> Assessment:
    """A verification tree's verdict from :func:`attncert.kernel.verify.checker.check`'s
    report: CERTIFIED only when proved correct on every string (right = |Σ|ⁿ); REFUTED when
    the model is proved wrong (a leaf with a witness decided in arb) or the tree is
    rejected; UNDECIDED when strings are left undecided and none is proved wrong."""
    if not report.accepted:
        return _failed(report.failures)
    if report.total <= 0:
        return Assessment(Verdict.UNDECIDED, (NOT_CHECKED,))
    if report.wrong > 0:
        return Assessment(
            Verdict.REFUTED,
            (f"the model is wrong on {report.wrong} of {report.total} strings (witness in arb)",),
        )
    if report.right == report.total:
        return Assessment(Verdict.CERTIFIED, ())
    return Assessment(
        Verdict.UNDECIDED,
        (f"{report.undecided} of {report.total} strings are undecided; none is proved wrong",),
    )


def horizon(report) -> Assessment:
    """A length-horizon certificate's verdict (issue 40): CERTIFIED when every length of
    its interval is proved; REFUTED when some length has a wrong string decided in arb (or
    the certificate is rejected); UNDECIDED otherwise."""
    if not report.accepted:
        return _failed(report.failures)
    if report.first_refuted is not None:
        return Assessment(
            Verdict.REFUTED,
            (f"the model is wrong at n = {report.first_refuted} (witness decided in arb)",),
        )
    if not report.proved:
        return Assessment(Verdict.UNDECIDED, (NOT_CHECKED,))
    if report.undecided:
        return Assessment(
            Verdict.UNDECIDED,
            (f"{len(report.undecided)} interval(s) of lengths are undecided",),
        )
    return Assessment(Verdict.CERTIFIED, ())


# ----- all lengths (Yang et al.) -------------------------------------------------------------


def all_lengths(report, bounded: str | None) -> Assessment:
    """A compiled formula at every length: CERTIFIED needs the kernel's all-length check
    (n ≥ N₀) accepted *and* the bounded part (n < N₀) proved by the z3 prover
    (``bounded == "proved"``; z3 is trusted for it, as ``docs/trust.md`` says); a kernel
    failure that is only precision is UNDECIDED; a counterexample below N₀ REFUTED."""
    if not report.accepted:
        if getattr(report, "undecided", False):
            return Assessment(Verdict.UNDECIDED, tuple(f.line() for f in report.failures))
        return Assessment(Verdict.REFUTED, tuple(f.line() for f in report.failures))
    if bounded == "proved":
        return Assessment(Verdict.CERTIFIED, ())
    if bounded == "counterexample":
        return Assessment(Verdict.REFUTED, ("the bounded part (n < N₀) has a counterexample",))
    return Assessment(
        Verdict.UNDECIDED,
        (f"the bounded part (n < N₀) is not proved ({bounded or 'not run'})",),
    )


# ----- no certificate, and many checks -------------------------------------------------------


def rejected(reason: str) -> Assessment:
    """A claim refused before or besides a checker's run (a certificate for another model,
    a file that differs from what its certificates say): REFUTED with the reason."""
    return Assessment(Verdict.REFUTED, (reason,))


def undecided(reason: str) -> Assessment:
    """Arithmetic that could not decide (a bound that overflowed float64, a comparison
    undecided at the precision cap): UNDECIDED with the reason, never guessed."""
    return Assessment(Verdict.UNDECIDED, (reason,))


def outside(reasons: Sequence[str]) -> Assessment:
    """A model outside a theorem's hypotheses, decided from its weights before any search
    (e.g. an unbounded score term and Lemma 5): OUTSIDE-THEOREM with the reasons."""
    return Assessment(Verdict.OUTSIDE_THEOREM, tuple(reasons))


def bounded_proof(outcome: str) -> Assessment:
    """The z3 prover's answer on every string up to a length (``prove``; Yang et al.):
    ``proved`` is CERTIFIED — z3 is trusted for this bounded statement, as
    ``docs/trust.md`` says, and its counterexamples are re-run on the model —
    ``counterexample`` / ``rejected`` REFUTED, anything else (``unknown``, ``partial``, a
    time-out) UNDECIDED."""
    if outcome == "proved":
        return Assessment(Verdict.CERTIFIED, ())
    if outcome in ("counterexample", "rejected"):
        return Assessment(Verdict.REFUTED, (f"the prover's outcome: {outcome}",))
    return Assessment(Verdict.UNDECIDED, (f"the prover's outcome: {outcome}",))


def tieless(report, *, short_failures: bool, counterexample: bool) -> Assessment:
    """Theorem 26 at every length: CERTIFIED when the kernel's all-length check
    (:mod:`attncert.kernel.tieless.checker`) accepts and the short inputs agree;
    REFUTED when a short input or the diagnosis exhibits a counterexample; else
    UNDECIDED."""
    if counterexample:
        return Assessment(Verdict.REFUTED, ("a counterexample on a short input",))
    if report is not None and report.accepted and not short_failures:
        return Assessment(Verdict.CERTIFIED, ())
    return Assessment(Verdict.UNDECIDED, ("no all-length statement was checked",))


def not_found(reason: str) -> Assessment:
    """A search (SAT/MaxSAT, branch and bound, sampling) that produced no certificate:
    UNDECIDED with the reason — the search finding nothing refutes nothing."""
    return Assessment(Verdict.UNDECIDED, (f"no certificate: {reason}",))


def section(rows: Iterable[Verdict | None]) -> tuple[Verdict, str]:
    """One analysis across lengths, from its rows' verdicts (None: the row does not apply
    or carries no verdict): the rule :data:`SECTION_RULE`, returned with the verdict."""
    got = [v for v in rows if v is not None]
    return (worst(got) or Verdict.UNDECIDED), SECTION_RULE


def combine(verdicts: Iterable[Verdict]) -> Assessment:
    """Several independent checks (a report directory's certificates, a proofs tree's
    artifacts): the worst of them; none at all is UNDECIDED — nothing checked is never
    CERTIFIED."""
    got = list(verdicts)
    if not got:
        return Assessment(Verdict.UNDECIDED, (NOT_CHECKED,))
    return Assessment(worst(got) or Verdict.UNDECIDED, ())


# ----- from a certificate and its check ------------------------------------------------------


def hard_certificate(cert, model: Model, report) -> Assessment:
    """:func:`hard` with the facts read from a checked restriction certificate
    (:class:`attncert.certificates.hard.Certificate`): the restrictions' free counts (the
    chain the kernel checked), the stated proof parameters, the language, the
    misclassified pair and the non-constancy witness (both re-decided by the kernel when
    the report accepts)."""
    params = cert.proof_parameters
    return hard(
        report,
        model,
        free=[r.num_free for r in cert.restrictions],
        params=None if params is None else ProofParameters(*params),
        language=cert.language,
        misclassified=cert.misclassified is not None,
        witness=cert.witness is not None,
        n=cert.n,
    )
