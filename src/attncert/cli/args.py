"""Argument types of the CLI: numbers checked against their range and against the size
limits of :mod:`attncert.limits`, rejected with a one-line reason (exit status 2).

Each factory returns a function for argparse's ``type=``; it raises
:class:`argparse.ArgumentTypeError`, which the parser reports as
``attncert CMD: error: argument --x: <reason>``.

    >>> integer(minimum=1, maximum=8, reason="demo")("9")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 9 is beyond the limit 8 (demo)
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from fractions import Fraction

from attncert.limits import MAX_RATIONAL_DIGITS, MAX_RATIONAL_EXPONENT

_RATIONAL = re.compile(
    r"""\s*(?P<sign>[-+]?)
    (?:(?P<num>\d+)\s*/\s*(?P<den>\d+)
      |(?P<int>\d*)(?:\.(?P<frac>\d*))?(?:[eE](?P<exp>[-+]?\d+))?)\s*\Z""",
    re.VERBOSE | re.ASCII,
)


def quote(text: str, width: int = 40) -> str:
    """``text`` quoted, abbreviated to about ``width`` characters (long values are not
    repeated in full in an error message)."""
    if len(text) <= width:
        return repr(text)
    return repr(text[: width // 2]) + f"…({len(text)} characters)…" + repr(text[-8:])


def integer(
    *, minimum: int | None = None, maximum: int | None = None, reason: str = ""
) -> Callable[[str], int]:
    """An integer in [minimum, maximum]; ``reason`` explains the maximum."""

    def parse(text: str) -> int:
        t = text.strip()
        if not re.fullmatch(r"[-+]?[0-9]+", t):  # ASCII digits only
            raise argparse.ArgumentTypeError(f"{quote(text)} is not an integer")
        if len(t.lstrip("+-")) > 30:  # never convert a 10,000-digit string
            if t.startswith("-"):
                raise argparse.ArgumentTypeError(f"{quote(text)} is below the minimum {minimum}")
            raise argparse.ArgumentTypeError(
                f"{quote(text)} is beyond the limit {maximum}" + (f" ({reason})" if reason else "")
            )
        value = int(t)
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below the minimum {minimum}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(
                f"{value} is beyond the limit {maximum}" + (f" ({reason})" if reason else "")
            )
        return value

    parse.__name__ = "integer"
    return parse


def seconds(text: str) -> float:
    """A finite, positive number of seconds (a time limit of 0 or less cannot be met)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{quote(text)} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"{quote(text)} seconds: a time limit must be a finite number > 0"
        )
    return value


def rational(text: str) -> Fraction:
    """An exact rational written ``p/q``, ``0.9``, ``3`` or ``1e-3``; at most
    :data:`~attncert.limits.MAX_RATIONAL_DIGITS` digits and a decimal exponent of at most
    :data:`~attncert.limits.MAX_RATIONAL_EXPONENT` (``1e9999999999`` would build a
    10-billion-digit integer)."""
    m = _RATIONAL.match(text)
    if m is None or not (m["num"] or m["int"] or m["frac"]):
        raise argparse.ArgumentTypeError(
            f"{quote(text)} is not a rational number (write e.g. 1/10, 0.1 or 1e-1)"
        )
    digits = sum(len(m[g] or "") for g in ("num", "den", "int", "frac"))
    if digits > MAX_RATIONAL_DIGITS:
        raise argparse.ArgumentTypeError(
            f"{quote(text)} has {digits} digits, more than the limit {MAX_RATIONAL_DIGITS}"
        )
    exp = m["exp"]
    if exp is not None and (len(exp.lstrip("+-")) > 6 or abs(int(exp)) > MAX_RATIONAL_EXPONENT):
        raise argparse.ArgumentTypeError(
            f"{quote(text)}: the exponent is beyond the limit ±{MAX_RATIONAL_EXPONENT}"
        )
    if m["den"] is not None and int(m["den"]) == 0:
        raise argparse.ArgumentTypeError(f"{quote(text)} divides by zero")
    return Fraction(text.strip().replace(" ", ""))


def rational_text(text: str) -> str:
    """:func:`rational`, but passed on as the original text (for the symbolic commands,
    which read their parameters themselves)."""
    rational(text)
    return text
