"""The closed-form rules of the all-length checker (kernel/all_lengths/closed_form), pinned
where a mutation survived the end-to-end tests (issue 34): the rule and place each failure
names, the canonical zero function, the text of a polynomial, signs of rational functions
stored as written."""

from __future__ import annotations

import pytest
from flint import fmpq, fmpq_poly

from attncert.errors import SpecError
from attncert.kernel.all_lengths.closed_form import (
    Atom,
    Condition,
    Inequality,
    LogLin,
    ProofFailure,
    RatFn,
    TailProof,
    check_condition,
    check_inequality,
    holds_at,
    q_of,
    ratfn_sign_from,
    tail_conditions,
)


def _decaying() -> Inequality:
    """e^{−n} ≤ 1 for n ≥ 1 (true; one atom, no Ψ)."""
    return Inequality("n", (Atom(RatFn.const(1), LogLin.of(RatFn.poly([0, 1]))),), fmpq(1), 1)


def test_polynomial_text_names_every_power_and_sign():
    assert RatFn.poly([3, -1, fmpq(1, 2)]).text("n") == "1/2*n^2 - n + 3"
    assert RatFn.poly([0, 1]).text() == "x"
    assert RatFn.poly([-5, 0, -2]).text() == "-2*x^2 - 5"
    assert RatFn.const(-7).text() == "-7"


def test_the_zero_function_is_zero_over_one():
    zero = RatFn.of(fmpq_poly([]), fmpq_poly([0, 1]))
    assert zero == RatFn((), (fmpq(1),)) == RatFn.const(0)
    assert zero.to_json() == [[], ["1"]]


def test_a_zero_denominator_is_refused_with_its_reason():
    with pytest.raises(ZeroDivisionError, match="rational function with denominator 0"):
        RatFn.of(fmpq_poly([1]), fmpq_poly([]))


def test_loglin_sum_adds_both_parts():
    x = RatFn.poly([0, 1])
    s = LogLin(x, RatFn.const(2)) + LogLin(RatFn.const(3), x)
    assert s == LogLin(RatFn.poly([3, 1]), RatFn.poly([2, 1]))
    assert s.ball(1).contains(4) and not s.ball(1).contains(5)


def test_sign_of_a_ratfn_stored_with_a_negative_denominator():
    # (−x − 1)/(−1) = x + 1 > 0 on [0, ∞): both signs flipped, as a certificate may write it
    r = RatFn((fmpq(-1), fmpq(-1)), (fmpq(-1),))
    assert ratfn_sign_from(r, fmpq(0)) == 1
    assert ratfn_sign_from(RatFn((fmpq(-1),), (fmpq(1),)), fmpq(0)) == -1


def test_rationals_from_json_name_field_and_form():
    with pytest.raises(SpecError) as err:
        q_of(0.5, "w")
    assert err.value.where == "w" and err.value.expected == "a rational 'p/q' or an integer"
    with pytest.raises(SpecError) as err:
        RatFn.from_json([["1/0"], ["1"]], "P")
    assert err.value.where == "P[0]"
    with pytest.raises(SpecError) as err:
        RatFn.from_json([["1"], ["x"]], "P")
    assert err.value.where == "P[1]"


def test_a_malformed_atom_is_refused_naming_the_fields():
    with pytest.raises(SpecError) as err:
        Atom.from_json({"P": [["1"], ["1"]]}, "atoms[0]")
    assert err.value.message == "not an atom"
    assert err.value.expected == "{P, Phi, k[, Psi]}"
    assert err.value.where == "atoms[0]"


def test_a_negative_plain_condition_fails_rule_r2():
    c = Condition("c", RatFn.poly([-1, 0, 0, 1]).scale(-1), RatFn.const(0))  # 1 − x³
    with pytest.raises(ProofFailure) as err:
        check_condition(c, fmpq(2), fmpq(0))
    assert err.value.rule == "R2" and err.value.where == "c"


def test_a_log_lower_bound_above_log_x1_fails_rule_r3_at_log_lower():
    ineq = _decaying()
    with pytest.raises(ProofFailure) as err:
        check_inequality(ineq, TailProof(2, fmpq(1), tuple(tail_conditions(ineq))))
    assert (err.value.rule, err.value.where) == ("R3", "log_lower")


def test_an_extra_stored_condition_is_named_by_its_index():
    ineq = _decaying()
    want = tail_conditions(ineq)
    extra = Condition("extra", RatFn.const(1), RatFn.const(0))
    check_inequality(ineq, TailProof(2, fmpq(0), tuple(want)))
    with pytest.raises(ProofFailure) as err:
        check_inequality(ineq, TailProof(2, fmpq(0), (*want, extra)))
    assert (err.value.rule, err.value.where) == ("R4", f"condition {len(want)}")


def test_a_vanishing_denominator_fails_rule_r1_at_that_point():
    pole = Atom(RatFn.x_pow(0) / RatFn.poly([-3, 1]), LogLin.of(RatFn.const(0)))  # 1/(n − 3)
    ineq = Inequality("n", (pole,), fmpq(10), 1)
    with pytest.raises(ProofFailure) as err:
        holds_at(ineq, 3)
    assert (err.value.rule, err.value.where, err.value.x) == ("R1", "n = 3", 3)
