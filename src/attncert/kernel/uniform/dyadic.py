"""Positive numbers beyond float64's range, as exact dyadic rationals (trusted).

Length-uniform constants are products of factors like e^Δ and LayerNorm Lipschitz
constants; they can exceed 1.8·10³⁰⁸. They are held as :class:`fractions.Fraction` and
written in the text form ``0x1.<13 hex digits>p<exponent>`` — a float64 mantissa in [1, 2)
with an integer exponent of any size — which :func:`parse` reads exactly (the certificate's
reader, :func:`attncert.certificates.uniform.dyadic`, re-exported here).

    >>> from fractions import Fraction
    >>> text(up(Fraction(10) ** 400))
    '0x1.b4ec7f9197400p+1328'
    >>> parse(text(Fraction(3, 4)))
    Fraction(3, 4)
"""

from __future__ import annotations

import math
from fractions import Fraction

from flint import arb

from attncert.certificates.uniform import dyadic as parse

__all__ = ["approx", "from_arb_upper", "parse", "text", "to_arb", "up"]


def up(q: Fraction) -> Fraction:
    """The least m·2^e ≥ q with a 53-bit integer m (q ≥ 0)."""
    if q <= 0:
        return Fraction(0)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    sh = e - 52  # q ∈ [2^e, 2^{e+1}): m = ⌈q / 2^{e−52}⌉ ∈ [2^52, 2^53]
    scaled = q / Fraction(2) ** sh
    m = -((-scaled.numerator) // scaled.denominator)
    return Fraction(m) * Fraction(2) ** sh


def text(q: Fraction) -> str:
    """``0x1.…p<e>`` for a q with a 53-bit mantissa (e.g. from :func:`up`); ``0x0p+0``
    for 0."""
    if q == 0:
        return "0x0p+0"
    if q < 0:
        return "-" + text(-q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    mant = q / Fraction(2) ** e
    f = float(mant)
    if Fraction(f) != mant:
        raise ValueError("more than 53 significant bits")
    return f.hex().split("p")[0] + f"p{e:+d}"


def from_arb_upper(x: arb) -> Fraction:
    """The exact upper endpoint of an arb ball."""
    m, e = x.upper().man_exp()
    return Fraction(int(m)) * Fraction(2) ** int(e)


def to_arb(q: Fraction) -> arb:
    """A ball containing q."""
    return arb(q.numerator) / q.denominator


def approx(q: Fraction, digits: int = 4) -> str:
    """A short decimal form, e.g. ``1.292e+272`` (for messages; never decides anything)."""
    if q == 0:
        return "0"
    if q.numerator.bit_length() - q.denominator.bit_length() < 1000:
        return f"{float(q):.{digits}g}"
    lg = (to_arb(q).log() / arb(10).log()).mid()
    e10 = math.floor(float(lg))
    mant = 10 ** (float(lg) - e10)
    return f"{mant:.{digits - 1}f}e+{e10}"
