"""Exact dyadic big numbers of the length-uniform checker (:mod:`attncert.kernel.uniform.dyadic`)
against independent computations: rounding up to 53 bits against float64's own next-up, the
text form against ``float.hex``, the refusals with their messages (issue 34: mutation score)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from flint import arb

from attncert.errors import SpecError
from attncert.kernel.uniform import dyadic as Q


def _float_up(q: Fraction) -> Fraction:
    """The least float64 ≥ q (q in the normal range), by float64 itself."""
    f = float(q)
    if Fraction(f) < q:
        f = math.nextafter(f, math.inf)
    return Fraction(f)


CASES = [
    Fraction(1),
    Fraction(3, 4),
    Fraction(1, 3),
    Fraction(2, 3),
    Fraction(10) ** 20 + 1,
    Fraction(2) ** 60 + 1,
    Fraction(2) ** 60 - 1,
    Fraction(2) ** -30,
    Fraction(2) ** -30 + Fraction(1, 10**40),
    Fraction(2) ** 53 + 1,
    Fraction(7, 2**70),
    Fraction(123456789, 1000),
]


@pytest.mark.parametrize("q", CASES, ids=str)
def test_up_is_float64s_next_up_in_float_range(q):
    u = Q.up(q)
    assert u == _float_up(q)
    assert u >= q
    assert Q.text(u) == float(u).hex() and Q.parse(Q.text(u)) == u


def test_up_beyond_float_range_keeps_53_bits_and_rounds_up():
    q = Fraction(10) ** 400
    u = Q.up(q)
    # 10^400 = 2^1328 · m with m in [1, 2): the mantissa rounded up to 52 fraction bits
    scaled = q / Fraction(2) ** (1328 - 52)
    assert u == Fraction(math.ceil(scaled)) * Fraction(2) ** (1328 - 52)
    assert Q.text(u) == "0x1.b4ec7f9197400p+1328"
    assert Q.up(Fraction(2) ** 2000) == Fraction(2) ** 2000  # exactly a power of two
    assert Q.up(Fraction(2) ** 2000 + 1) == Fraction(2) ** 2000 + Fraction(2) ** (2000 - 52)
    assert Q.up(Fraction(2) ** -2000 * 3) == Fraction(2) ** -2000 * 3


def test_up_of_zero_or_a_negative_is_zero():
    assert Q.up(Fraction(0)) == 0 and Q.up(Fraction(-5, 2)) == 0


def test_text_of_signs_zero_and_exponents():
    assert Q.text(Fraction(0)) == "0x0p+0"
    assert Q.text(Fraction(-3, 4)) == "-0x1.8000000000000p-1"
    assert Q.text(Fraction(1)) == "0x1.0000000000000p+0"
    assert Q.text(Fraction(2) ** 1500 * 3) == "0x1.8000000000000p+1501"
    assert Q.text(Fraction(2) ** -1500) == "0x1.0000000000000p-1500"
    with pytest.raises(ValueError, match="more than 53 significant bits"):
        Q.text(Fraction(1, 3))
    with pytest.raises(ValueError, match="more than 53 significant bits"):
        Q.text(Fraction(2) ** 53 + 1)


def test_parse_reads_numbers_and_refuses_the_rest_naming_where():
    assert Q.parse(3) == 3 and Q.parse(0.375) == Fraction(3, 8)
    assert Q.parse("0x1.8p+2000") == 3 * Fraction(2) ** 1999
    assert Q.parse("-0x1.0p-3") == Fraction(-1, 8)
    with pytest.raises(SpecError) as e:
        Q.parse(math.inf, "K")
    assert str(e.value) == "K: inf is not finite"
    with pytest.raises(SpecError) as e:
        Q.parse(float("nan"))
    assert str(e.value) == "number: nan is not finite"
    with pytest.raises(SpecError) as e:
        Q.parse(True, "cap")
    assert str(e.value) == "cap: True is not a number (expected '0x1.…p<exponent>')"
    with pytest.raises(SpecError) as e:
        Q.parse("12", "K")
    assert str(e.value) == "K: '12' is not a number (expected '0x1.…p<exponent>')"
    with pytest.raises(SpecError) as e:
        Q.parse("0xzzp+3", "K")
    assert str(e.value) == "K: '0xzzp+3' is not a number"
    with pytest.raises(SpecError) as e:
        Q.parse("0x1.0p+x")
    assert str(e.value) == "number: '0x1.0p+x' is not a number"
    assert e.value.__cause__ is None and e.value.__suppress_context__


def test_arb_conversions_are_exact_and_enclosing():
    x = arb(5) / 3
    u = Q.from_arb_upper(x)
    assert u >= Fraction(5, 3) and u - Fraction(5, 3) < Fraction(1, 2**50)
    m, e = x.upper().man_exp()
    assert u == Fraction(int(m)) * Fraction(2) ** int(e)
    assert Q.from_arb_upper(arb(3) * arb(2) ** 3000) == 3 * Fraction(2) ** 3000
    ball = Q.to_arb(Fraction(1, 3))
    assert ball.contains(arb(1) / 3)
    assert Q.to_arb(Fraction(7, 2)) == arb(3.5)


def test_approx_in_and_beyond_float_range():
    assert Q.approx(Fraction(0)) == "0"
    assert Q.approx(Fraction(12345, 1)) == "1.234e+04"
    assert Q.approx(Fraction(12345, 1), 2) == "1.2e+04"
    assert Q.approx(Fraction(10) ** 400 * 3) == "3.000e+400"
    assert Q.approx(Fraction(10) ** 400 * 3, 2) == "3.0e+400"
    assert Q.approx(Fraction(2) ** 999) == f"{2.0**999:.4g}"
    assert Q.approx(Fraction(2) ** 1000) == "1.072e+301"


def test_approx_decides_by_magnitude_not_by_the_size_of_the_fraction():
    # numerator and denominator of a thousand bits each, the value 10²⁰: the float path
    q = Fraction(10**320 + 1, 10**300)
    assert Q.approx(q) == "1e+20"
