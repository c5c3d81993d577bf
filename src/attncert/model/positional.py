"""Positional encodings as named functions of (i, n).

Positions are 1-based (as in both papers): i ∈ {1, …, n}, where n counts every
token the model sees (including BOS/EOS if the model uses them).

Each :class:`PosFeature` is one coordinate of the positional feature vector
φ(i, n); a model maps φ(i, n) into its residual stream with a weight matrix,
so features compose freely as coordinates. Every feature has an *exact*
value: rational features (i/n, i², 1/i, (−1)^i, …) are exact rationals;
transcendental ones (sin(ωi), cos(ωi)) are *defined* as the float64 nearest to
the real value, computed with mpmath at 113 bits — deterministic and
platform-independent, so exact and float evaluation see the same number.

``bounded`` records whether |φ(i, n)| stays bounded as n → ∞ (an assumption of
Hahn's Lemma 5; Yang et al. distinguish bounded from unbounded encodings).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

import mpmath
import numpy as np

from attncert.errors import SpecError

ExactFn = Callable[[int, int, float | None], Fraction]


def _transcendental(fn: Callable[[mpmath.mpf], mpmath.mpf]) -> ExactFn:
    def exact(i: int, n: int, param: float | None) -> Fraction:
        with mpmath.workprec(113):
            return Fraction(float(fn(mpmath.mpf(param) * i)))

    return exact


def _is_square(k: int) -> bool:
    if k < 0:
        return False
    r = math.isqrt(k)
    return r * r == k


@dataclass(frozen=True)
class _Kind:
    exact: ExactFn
    bounded: bool
    needs_param: bool = False
    doc: str = ""


_KINDS: dict[str, _Kind] = {
    "1": _Kind(lambda i, n, p: Fraction(1), True, doc="constant 1"),
    "i": _Kind(lambda i, n, p: Fraction(i), False, doc="position i (unbounded)"),
    "n": _Kind(lambda i, n, p: Fraction(n), False, doc="length n (unbounded)"),
    "i/n": _Kind(lambda i, n, p: Fraction(i, n), True, doc="relative position"),
    "(i/n)^2": _Kind(lambda i, n, p: Fraction(i * i, n * n), True, doc="squared relative position"),
    "1/n": _Kind(lambda i, n, p: Fraction(1, n), True, doc="inverse length"),
    "i^2": _Kind(lambda i, n, p: Fraction(i * i), False, doc="squared position (unbounded)"),
    "1/i": _Kind(lambda i, n, p: Fraction(1, i), True, doc="inverse position"),
    "1/i^2": _Kind(lambda i, n, p: Fraction(1, i * i), True, doc="inverse squared position"),
    "(-1)^i": _Kind(lambda i, n, p: Fraction((-1) ** i), True, doc="alternating sign"),
    "cos(pi*i)": _Kind(lambda i, n, p: Fraction((-1) ** i), True, doc="cos(πi) = (−1)^i"),
    "(-1)^n": _Kind(lambda i, n, p: Fraction((-1) ** n), True, doc="parity of the length"),
    "[i=1]": _Kind(lambda i, n, p: Fraction(int(i == 1)), True, doc="first position"),
    "[i=n]": _Kind(lambda i, n, p: Fraction(int(i == n)), True, doc="last position"),
    "[i>n/2]": _Kind(lambda i, n, p: Fraction(int(2 * i > n)), True, doc="second half"),
    # Numerical-predicate columns and scaled keys used by attncert.compile (Yang et al.
    # Theorems 20-23: "PEs including all numerical predicates"; unbounded lookup keys).
    "[i square]": _Kind(lambda i, n, p: Fraction(int(_is_square(i))), True, doc="i is a square"),
    "[i-1 square]": _Kind(
        lambda i, n, p: Fraction(int(_is_square(i - 1))), True, doc="i−1 is a square"
    ),
    "[2i=n]": _Kind(lambda i, n, p: Fraction(int(2 * i == n)), True, doc="i = n/2"),
    "[2i-2=n]": _Kind(lambda i, n, p: Fraction(int(2 * i - 2 == n)), True, doc="i−1 = n/2"),
    "[i-1>n/2]": _Kind(lambda i, n, p: Fraction(int(2 * i - 2 > n)), True, doc="i−1 > n/2"),
    "n*i": _Kind(lambda i, n, p: Fraction(n * i), False, doc="n·i (unbounded)"),
    "n*i^2": _Kind(lambda i, n, p: Fraction(n * i * i), False, doc="n·i² (unbounded)"),
    "sin": _Kind(_transcendental(mpmath.sin), True, True, "sin(ω·i), ω = param"),
    "cos": _Kind(_transcendental(mpmath.cos), True, True, "cos(ω·i), ω = param"),
}

FEATURE_NAMES: tuple[str, ...] = tuple(_KINDS)


@dataclass(frozen=True)
class PosFeature:
    """One positional coordinate φ(i, n), named as in :data:`FEATURE_NAMES`."""

    name: str
    param: float | None = None

    def __post_init__(self) -> None:
        kind = _KINDS.get(self.name)
        if kind is None:
            raise SpecError(
                f"unknown positional feature {self.name!r}",
                expected="one of " + ", ".join(FEATURE_NAMES),
            )
        if kind.needs_param and (self.param is None or not np.isfinite(self.param)):
            raise SpecError(f"feature {self.name!r} needs a finite 'param' (its frequency ω)")
        if not kind.needs_param and self.param is not None:
            raise SpecError(f"feature {self.name!r} takes no 'param'")

    @property
    def bounded(self) -> bool:
        return _KINDS[self.name].bounded

    @property
    def label(self) -> str:
        return f"{self.name}({self.param!r}*i)" if self.param is not None else self.name

    def exact(self, i: int, n: int) -> Fraction:
        """The exact value at 1-based position ``i`` of a length-``n`` sequence."""
        return _KINDS[self.name].exact(i, n, self.param)

    def to_dict(self) -> dict:
        return (
            {"name": self.name} if self.param is None else {"name": self.name, "param": self.param}
        )


@cache
def feature_matrix_exact(
    features: tuple[PosFeature, ...], n: int
) -> tuple[tuple[Fraction, ...], ...]:
    """Exact φ(i, n) for i = 1..n, as an n × F tuple of Fractions."""
    return tuple(tuple(f.exact(i, n) for f in features) for i in range(1, n + 1))


@cache
def _feature_matrix(features: tuple[PosFeature, ...], n: int) -> np.ndarray:
    m = np.array(
        [[float(v) for v in row] for row in feature_matrix_exact(features, n)], dtype=np.float64
    ).reshape(n, len(features))
    m.setflags(write=False)
    return m


def feature_matrix(features: tuple[PosFeature, ...], n: int) -> np.ndarray:
    """φ(i, n) for i = 1..n as a read-only float64 n × F array (each entry the
    float nearest the exact value)."""
    return _feature_matrix(tuple(features), n)
