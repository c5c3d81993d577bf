"""Every comparison of the verdict module (``kernel/verdict.py``, issue 41 item 2) pinned
from both sides: an input exactly at the edge and one just across it.

The neighbour-operator mutation run (``benchmarks/mutation_edges``) found that the
module-level tests decided each rule on inputs far from its edge, so ``<`` → ``<=`` in
the Depth Reduction Lemma's free-fraction rule, ``== 0`` → ``<= 0`` in the "no free
position" rules, ``>=`` → ``>`` in the range-cap rule and the like survived. Each test
here names the comparison it pins. The checkers' reports are stand-ins with the fields
the verdict functions read (``accepted``, ``failures``, ``nonconstant``, …): the verdict
module decides from checked facts only, so its rules are functions of those fields.
"""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest

from attncert.kernel import verdict as V
from attncert.kernel.verdict import ProofParameters, free_fraction_shortfalls
from attncert.model import zoo_model
from attncert.verdicts import Verdict

C, T, O, U, R = (
    Verdict.CERTIFIED,
    Verdict.CERTIFIED_TRIVIAL,
    Verdict.OUTSIDE_THEOREM,
    Verdict.UNDECIDED,
    Verdict.REFUTED,
)


def ok(**fields):
    return SimpleNamespace(accepted=True, failures=(), **fields)


@pytest.fixture(scope="module")
def models():
    return {
        "hard": zoo_model("ones_star"),  # leftmost-hard heads only
        "average": zoo_model("dyck2_program"),  # average-hard heads
        "soft": zoo_model("soft_parity"),  # softmax, inside Lemma 5
        "masked": zoo_model("trained_rope_first_last"),  # causal: outside Lemma 5
    }


# ----- the Depth Reduction Lemma's free fraction (Lemma 4 / S1 Corollary 24) -----------------

P = ProofParameters(Fraction(1, 10), Fraction(1, 5), Fraction(0))  # factor 0.8·0.8 = 16/25


def test_the_factor_is_the_lemmas():
    assert P.factor == Fraction(16, 25)
    assert ProofParameters(Fraction(1, 4), Fraction(1, 2), Fraction(1)).factor == 0


def test_free_exactly_at_the_lemmas_fraction_is_no_shortfall():
    """free(ρ₁) = 16 = (16/25)·25 exactly: the lemma's bound holds with equality."""
    assert free_fraction_shortfalls([25, 16], P) == ()


def test_free_one_below_the_lemmas_fraction_is_a_shortfall():
    (why,) = free_fraction_shortfalls([25, 15], P)
    assert why.startswith("layer 1: 15 free positions, fewer than")
    assert "= 16 with η = 1/10, q = 1/5, δ = 0" in why


def test_free_one_above_is_no_shortfall_and_every_layer_is_compared():
    assert free_fraction_shortfalls([25, 17], P) == ()
    # layer 2 compares with layer 1's count, not ρ₀'s: (16/25)·17 = 10.88 ≤ 11, but > 10
    assert free_fraction_shortfalls([25, 17, 11], P) == ()
    (why,) = free_fraction_shortfalls([25, 17, 10], P)
    assert why.startswith("layer 2: 10 free positions")


def test_no_parameters_or_one_restriction_is_no_comparison():
    assert free_fraction_shortfalls([25, 0], None) == ()
    assert free_fraction_shortfalls([25], P) == ()
    assert free_fraction_shortfalls([], P) == ()


# ----- Theorem 1: the restriction certificate's verdict -------------------------------------


def hard_verdict(model, free, *, nonconstant=True, language=None, misclassified=False):
    return V.hard(
        ok(nonconstant=nonconstant),
        model,
        free=free,
        params=P,
        language=language,
        misclassified=misclassified,
        witness=nonconstant,
        n=25,
    )


def test_hard_one_free_position_left_is_certified(models):
    assert hard_verdict(models["hard"], [25, 16, 1]).verdict is O  # 1 < 16·16/25
    a = V.hard(ok(nonconstant=True), models["hard"], free=[2, 1], params=None,
               language=None, misclassified=False, witness=True, n=2)  # fmt: skip
    assert a.verdict is C and a.reasons == ()


def test_hard_no_free_position_left_is_trivial(models):
    a = V.hard(ok(nonconstant=True), models["hard"], free=[2, 0], params=None,
               language=None, misclassified=False, witness=True, n=2)  # fmt: skip
    assert a.verdict is T
    assert a.reasons == ("no free position: the restriction fixes the whole input",)
    b = V.hard(ok(nonconstant=True), models["hard"], free=[], params=None,
               language=None, misclassified=False, witness=True, n=2)  # fmt: skip
    assert b.verdict is T


def test_hard_average_heads_are_outside_and_unique_hard_heads_are_not(models):
    assert hard_verdict(models["hard"], [25, 16]).verdict is C
    a = hard_verdict(models["average"], [25, 16])
    assert a.verdict is O and "average-hard heads" in a.reasons[0]


def test_hard_without_a_non_constancy_witness_is_trivial(models):
    a = hard_verdict(models["hard"], [25, 16], nonconstant=False)
    assert a.verdict is T and "no non-constancy witness was checked" in a.reasons[0]
    assert "n = 25" in a.reasons[0]


def test_hard_with_a_language_needs_a_misclassified_pair(models):
    assert hard_verdict(models["hard"], [25, 16], language="parity").verdict is T
    got = hard_verdict(models["hard"], [25, 16], language="parity", misclassified=True)
    assert got.verdict is C


def test_hard_outside_keeps_the_trivial_reasons_too(models):
    a = hard_verdict(models["average"], [25, 0], nonconstant=False)
    assert a.verdict is O
    assert any("no free position" in r for r in a.reasons)


# ----- Lemma 5 / Theorem 6: the soft certificate's verdict ----------------------------------


def soft_verdict(model, *, widths=(), restriction=False, free=0, pair=False, exceeded=None):
    return V.soft(
        ok(),
        model,
        widths=widths,
        restriction=restriction,
        free=free,
        pair=pair,
        exceeded=exceeded,
    )


def test_soft_restriction_with_one_free_position_and_a_pair_is_certified(models):
    assert soft_verdict(models["soft"], restriction=True, free=1, pair=True).verdict is C


def test_soft_restriction_with_no_free_position_is_trivial(models):
    a = soft_verdict(models["soft"], restriction=True, free=0, pair=True)
    assert a == V.Assessment(T, ("the restriction has no free position",))
    b = soft_verdict(models["soft"], restriction=True, free=3, pair=False)
    assert b.reasons == ("no pair of completions of different membership is certified",)


def test_soft_change_exactly_at_the_width_is_a_cap_and_just_below_is_a_bound(models):
    """B(n) = min(width, change): a change equal to the logit's range width bounds
    nothing (CERTIFIED-TRIVIAL); one ulp below, it is a bound (CERTIFIED)."""
    w = 13.9068
    assert soft_verdict(models["soft"], widths=[(w, w)]).verdict is T
    below = float(Fraction(w) - Fraction(w) * Fraction(1, 2**52))
    assert below < w
    assert soft_verdict(models["soft"], widths=[(w, below)]).verdict is C
    assert soft_verdict(models["soft"], widths=[(w, w * 2)]).verdict is T
    # every claim must be a cap for the verdict to be trivial
    assert soft_verdict(models["soft"], widths=[(w, w), (w, below)]).verdict is C


def test_soft_nothing_claimed_is_undecided_and_a_masked_model_is_outside(models):
    assert soft_verdict(models["soft"]).verdict is U
    a = soft_verdict(models["masked"], widths=[(1.0, 0.5)])
    assert a.verdict is O and "masked" in a.reasons[0]


def test_soft_exceeded_bound_is_refuted_first(models):
    a = soft_verdict(models["soft"], widths=[(1.0, 0.5)], exceeded="change 0.6 > B = 0.5")
    assert a == V.Assessment(R, ("change 0.6 > B = 0.5",))


# ----- the length-uniform verdict: Z = 0 is constant ----------------------------------------


def test_uniform_cap_exactly_zero_is_trivial_and_any_positive_cap_is_certified(models):
    m = models["soft"]
    assert V.uniform(ok(), m, cap=Fraction(0)).verdict is T
    assert V.uniform(ok(), m, cap=Fraction(1, 2**60)).verdict is C
    assert V.uniform(ok(), m, cap=None).verdict is C
    assert V.uniform(None, m, cap=None).verdict is U
    assert V.uniform(None, models["masked"], cap=None).verdict is O


# ----- verify: CERTIFIED only when right = |Σ|ⁿ ----------------------------------------------


def verify_report(right, wrong, undecided):
    return ok(right=right, wrong=wrong, undecided=undecided, total=right + wrong + undecided)


def test_verify_right_on_every_string_is_certified_and_one_short_is_not():
    assert V.verify(verify_report(256, 0, 0)).verdict is C
    a = V.verify(verify_report(255, 0, 1))
    assert a.verdict is U and a.reasons == ("1 of 256 strings are undecided; none is proved wrong",)


def test_verify_one_wrong_string_is_refuted():
    a = V.verify(verify_report(255, 1, 0))
    assert a.verdict is R and a.reasons[0].startswith("the model is wrong on 1 of 256")


def test_verify_an_empty_tree_is_undecided():
    assert V.verify(verify_report(0, 0, 0)) == V.Assessment(U, (V.NOT_CHECKED,))


# ----- rejections: arithmetic alone is UNDECIDED, anything else REFUTED ---------------------


def test_a_rejection_by_arithmetic_only_is_undecided_and_any_other_claim_refutes():
    arith = SimpleNamespace(claim="arithmetic")
    other = SimpleNamespace(claim="range")
    assert V._failed([arith, arith]).verdict is U
    assert V._failed([arith, other]).verdict is R
    assert V._failed([]).verdict is R  # rejected with no stated failure: never accepted


# ----- horizon, all lengths, bounded proofs, Theorem 26 --------------------------------------


def test_horizon_rules():
    assert V.horizon(ok(first_refuted=1, proved=[], undecided=[])).verdict is R
    assert V.horizon(ok(first_refuted=None, proved=[], undecided=[])).verdict is U
    a = V.horizon(ok(first_refuted=None, proved=[(1, 9)], undecided=[(10, 10)]))
    assert a.verdict is U and a.reasons == ("1 interval(s) of lengths are undecided",)
    assert V.horizon(ok(first_refuted=None, proved=[(1, 10)], undecided=[])).verdict is C


def test_all_lengths_and_bounded_proof_rules():
    rejected = SimpleNamespace(accepted=False, failures=(), undecided=True)
    assert V.all_lengths(rejected, "proved").verdict is U
    rejected.undecided = False
    assert V.all_lengths(rejected, "proved").verdict is R
    assert V.all_lengths(ok(), "proved").verdict is C
    assert V.all_lengths(ok(), "counterexample").verdict is R
    assert V.all_lengths(ok(), None).reasons == (
        "the bounded part (n < N₀) is not proved (not run)",
    )
    assert [
        V.bounded_proof(o).verdict for o in ("proved", "counterexample", "rejected", "unknown")
    ] == [C, R, R, U]


def test_tieless_rules():
    assert V.tieless(ok(), short_failures=False, counterexample=False).verdict is C
    assert V.tieless(ok(), short_failures=True, counterexample=False).verdict is U
    assert V.tieless(None, short_failures=False, counterexample=False).verdict is U
    assert V.tieless(ok(), short_failures=False, counterexample=True).verdict is R


# ----- sections and sets of checks ----------------------------------------------------------


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([C, T, O, U, R], R),
        ([C, T, O, U], U),
        ([C, T, O], O),
        ([C, T], T),
        ([C, C], C),
        ([C, None], C),
        ([None], U),
        ([], U),
    ],
)
def test_a_section_is_its_worst_row(rows, expected):
    got, rule = V.section(rows)
    assert got is expected and rule == V.SECTION_RULE
    if any(r is not None for r in rows):
        assert V.combine([r for r in rows if r is not None]).verdict is expected


def test_nothing_combined_is_never_certified():
    assert V.combine([]) == V.Assessment(U, (V.NOT_CHECKED,))
    assert V.worst([]) is None


# ----- the hard decision at a logit of exactly 0 (kernel/hard/decide.py) ---------------------


def test_a_logit_exactly_zero_is_reject_and_the_least_positive_bias_is_accept():
    """Accept iff the logit is > 0: with a zero readout weight the logit is the bias
    exactly, so bias 0 rejects every string and the least positive float accepts every
    one (found by the neighbour-operator run: ``sign(z) > 0`` → ``>= 0`` survived)."""
    import dataclasses

    from attncert.kernel.hard.decide import decide

    m = zoo_model("ones_star")
    zero = np.zeros_like(np.asarray(m.readout.weight, dtype=float))
    for bias, want in ((0.0, False), (5e-324, True), (-5e-324, False)):
        readout = dataclasses.replace(m.readout, weight=zero, bias=bias)
        model = dataclasses.replace(m, readout=readout)
        assert [decide(model, s) for s in ("1111", "1011", "0")] == [want] * 3, bias
