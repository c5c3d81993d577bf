"""The exact field of the kernel's arithmetic (arith/field), pinned where a mutation
survived (issue 34): a float64 enters the rational field as the exact rational it denotes,
and a ball field as an exact ball."""

from __future__ import annotations

from flint import arb, fmpq

from attncert.arith.field import Field


def test_a_float_is_its_exact_rational_in_the_rational_field():
    x = Field(None).num(0.1)
    assert isinstance(x, fmpq) and x == fmpq(3602879701896397, 36028797018963968)
    assert Field(None).num(-2.5) == fmpq(-5, 2)


def test_a_float_is_an_exact_ball_in_a_ball_field():
    x = Field(64).num(0.1)
    assert isinstance(x, arb) and x.rad() == 0
    assert x.mid() == arb(fmpq(3602879701896397, 36028797018963968)).mid()
