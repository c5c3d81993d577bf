"""Decisions of attncert.arith.field (issue 25's mutation analysis): the float copies of
exact and ball values enclose them, a ball comparison is decided only when it separates,
precision escalates until it does (and is refused at the cap), and identity keys are
equal exactly for equal values."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from flint import arb, arb_mat, ctx, fmpq, fmpq_mat

from attncert.arith.field import (
    Field,
    Interner,
    NeedPrecision,
    Undecided,
    escalate,
    field_for,
    rows_of,
    to_floats,
)


def _q(x: float) -> fmpq:
    return fmpq(*float(x).as_integer_ratio())


RATIONALS = [
    fmpq(1, 3),
    fmpq(-2, 7),
    fmpq(10**40, 3),
    fmpq(1, 10**310),  # below the smallest normal float: a subnormal copy
    fmpq(-1, 10**330),  # below every float: rounds to −0
    fmpq(0),
    fmpq(5, 1),
    fmpq(2**60 + 1, 2**7),  # more bits than a float holds
]


def test_to_floats_of_rationals_encloses_each_entry_and_is_tight():
    m = fmpq_mat(2, 4, RATIONALS)
    mid, rad = to_floats(m)
    assert mid.shape == rad.shape == (2, 4)
    for x, mi, r in zip(RATIONALS, mid.ravel().tolist(), rad.ravel().tolist(), strict=True):
        assert abs(x - _q(mi)) <= _q(r), (x, mi, r)
        # the copy is correctly rounded (|x − mid| ≤ u|mid| + subnormal spacing) and the
        # radius is at most 2⁻⁵¹|mid| + 2⁻¹⁰⁶⁹ wide
        assert abs(x - _q(mi)) <= _q(abs(mi)) / 2**53 + fmpq(1, 2**1075)
        assert r <= abs(mi) * 2.0**-51 + 2.0**-1069


def test_to_floats_of_balls_encloses_every_point_of_each_ball():
    with ctx.workprec(200):
        third = arb(1) / 3
        balls = [
            third,
            arb(2).sqrt() * 10**30,
            arb(1, 0.25),  # [0.75, 1.25]
            arb(-3, 1e-300),
            arb(fmpq(1, 10**310)),
            arb(0),
            (arb(1) / 7) * arb(10) ** -320,  # a subnormal midpoint
            arb(5, 2.0**-60),
            # radii much larger than the midpoint's rounding: the radius's own rounding
            # and the midpoint's must both be covered
            third + arb(0, 1),
            -third + arb(0, 2),
            arb(1, 1),
            arb(0, 1e-300),
        ]
        mid, rad = to_floats(arb_mat(3, 4, balls))
        for b, mi, r in zip(balls, mid.ravel().tolist(), rad.ravel().tolist(), strict=True):
            lo, hi = arb(mi) - arb(r), arb(mi) + arb(r)
            assert lo <= b.lower() and b.upper() <= hi, (b, mi, r)
            # no wider than the ball's radius plus a few ulps of the midpoint
            assert r <= float(b.rad()) * (1 + 2.0**-40) + abs(mi) * 2.0**-50 + 2.0**-1060


def test_to_floats_of_a_ball_beyond_float_range_asks_for_precision():
    with ctx.workprec(64):
        with pytest.raises(NeedPrecision):
            to_floats(arb_mat(1, 1, [arb(10) ** 400]))
        with pytest.raises(NeedPrecision):
            to_floats(arb_mat(1, 2, [arb(1), arb(0, 1) * arb(10) ** 400]))


def test_numbers_are_the_exact_values_of_their_inputs():
    exact, ball = Field(None), Field(128)
    assert exact.exact and not ball.exact
    for x, want in (
        (0.1, _q(0.1)),
        (Fraction(-3, 7), fmpq(-3, 7)),
        (fmpq(2, 9), fmpq(2, 9)),
        (12, fmpq(12)),
        (np.int64(-4), fmpq(-4)),
        (np.float64(2.5), fmpq(5, 2)),
    ):
        assert exact.num(x) == want
        with ctx.workprec(128):
            b = ball.num(x)
            assert b.contains(arb(want))
            if not isinstance(x, (Fraction, fmpq)) or want.q == 1:  # dyadic: exact ball
                assert b.is_exact() and b == arb(want)
    a = np.array([[0.1, -2.0], [1e-300, 3.0]])
    assert exact.mat(a).entries() == [_q(v) for v in a.ravel().tolist()]
    with ctx.workprec(128):
        bm = ball.mat(a)
        assert all(e.is_exact() for e in bm.entries())
        assert [e.mid() for e in bm.entries()] == [arb(v).mid() for v in a.ravel()]
        assert ball.lift(fmpq_mat(1, 2, [fmpq(1, 3), 2])).entries()[0].contains(fmpq(1, 3))
        assert isinstance(ball.lift(fmpq_mat(1, 1, [1])), arb_mat)
        assert ball.zero() == 0 and ball.zero().is_exact()
        assert ball.matrix(1, 2, [arb(1), arb(2)]).entries() == [1, 2]
    assert exact.row(np.array([1.0, 0.5])).entries() == [1, fmpq(1, 2)]
    assert exact.row(np.array([1.0, 0.5])).nrows() == 1
    assert exact.lift(exact.mat(a)) == exact.mat(a)
    assert exact.zero() == 0 and isinstance(exact.zero(), fmpq)
    assert exact.matrix(2, 1, [fmpq(1), fmpq(2)]).entries() == [1, 2]
    assert rows_of(fmpq_mat(2, 3, list(range(6)))) == [[0, 1, 2], [3, 4, 5]]
    assert field_for(True) == Field(None)
    assert field_for(False) == Field(53) and field_for(False, 300) == Field(300)


def test_signs_are_decided_only_when_the_ball_separates_from_zero():
    exact = Field(None)
    assert [exact.sign(fmpq(v)) for v in (-3, 0, 5)] == [-1, 0, 1]
    assert exact.sign(fmpq(-1, 10**50)) == -1
    assert exact.compare(fmpq(1, 3), fmpq(1, 3)) == 0
    assert exact.compare(fmpq(1, 3), fmpq(1, 4)) == 1
    assert exact.compare(fmpq(1, 4), fmpq(1, 3)) == -1
    assert exact.compare(fmpq(1), fmpq(2), same=True) == 0  # structurally identical
    ball = Field(64)
    with ctx.workprec(64):
        assert ball.sign(arb(2, 1)) == 1
        assert ball.sign(arb(-2, 1)) == -1
        assert ball.sign(arb(0)) == 0  # the exact zero
        with pytest.raises(NeedPrecision, match="the tie"):
            ball.sign(arb(0, 1e-30), "the tie")
        with pytest.raises(NeedPrecision):
            ball.sign(arb(1, 1))  # [0, 2] touches 0
        third = arb(1) / 3
        with pytest.raises(NeedPrecision, match="a comparison"):
            ball.compare(third, third)  # equal values that balls cannot see as equal
        assert ball.compare(third, third, same=True) == 0
        assert ball.compare(arb(1), arb(2)) == -1 and ball.compare(arb(3), arb(2)) == 1


def _gap(fld: Field) -> int:
    """sign((1 + 2⁻¹⁵⁰)² − 1 − 2⁻¹⁴⁹): positive (the square's 2⁻³⁰⁰ term), seen only by
    a ball narrower than that — ≥ 300 bits."""
    x = fld.num(1) + fld.num(fmpq(1, 2**150))
    return fld.sign(x * x - 1 - fld.num(fmpq(1, 2**149)), "the gap")


def test_escalation_stops_at_the_first_precision_that_decides():
    seen = []

    def compute(fld: Field) -> int:
        seen.append(fld.prec)
        return _gap(fld)

    assert escalate(compute, rational=False) == 1
    assert seen == [53, 128, 256, 512]
    seen.clear()
    assert escalate(compute, rational=True) == 1
    assert seen == [None]


def test_escalation_refuses_at_the_cap_and_names_the_open_comparison():
    with pytest.raises(Undecided, match=r"the gap is still undecided at 256 bits"):
        escalate(_gap, rational=False, precisions=(53, 128, 256))
    with pytest.raises(Undecided) as err:
        escalate(_gap, rational=False, precisions=(64,))
    assert err.value.message.endswith(
        "(the values may be exactly equal without being structurally identical)"
    )
    assert err.value.expected == "a model whose decisions are separated, or structurally tied"
    with pytest.raises(Undecided, match=r"^a sign is still undecided at 53 bits"):
        escalate(lambda f: f.sign(arb(0, 1)), rational=False, precisions=(53,))
    # a ball beyond float range at every precision: refused, and said why
    with pytest.raises(Undecided, match=r"^a ball is not finite in float64 is still undecided"):
        escalate(
            lambda f: to_floats(arb_mat(1, 1, [f.num(10) ** 400])),
            rational=False,
            precisions=(53, 128),
        )
    with pytest.raises(Undecided, match=r"^my test is still undecided at 53 bits"):
        escalate(lambda f: f.sign(arb(0, 1), "my test"), rational=False, precisions=(53,))


def test_interner_keys_are_equal_exactly_for_equal_values():
    it = Interner()
    assert len(it) == 0
    a = it.key(("layer", 1, (2, 3)))
    assert it.key(("layer", 1, (2, 3))) == a
    b = it.key(("layer", 1, (3, 2)))
    assert b != a and len(it) == 2
    v = (fmpq(1, 3), fmpq(2))
    k = it.key_exact(v)
    assert it.key_exact((fmpq(2, 6), fmpq(4, 2))) == k  # the same values
    # the same float64 copies (a shared bucket), different exact values: different keys
    w = (fmpq(1, 3) + fmpq(1, 10**40), fmpq(2))
    assert np.array_equal([float(x.p) / float(x.q) for x in v], [int(x.p) / int(x.q) for x in w])
    k2 = it.key_exact(w)
    assert k2 != k and it.key_exact(w) == k2 and it.key_exact(v) == k
    k3 = it.key_exact((fmpq(1, 3),))
    assert len({a, b, k, k2, k3}) == 5 and len(it) == 5
