"""Unary numerical predicates θ = (θ_n)_n, θ_n : {0, …, n} → {0, 1} (Yang et al. Def. 19).

A predicate applies to the current position (``ODD(i)``) or to the value of a
count term (``ODD(#<[Q_1])``). Each registered predicate says how a compiled
transformer reads it from its positional encoding: ``columns[s]`` is a linear
combination of :class:`~attncert.model.positional.PosFeature` names whose value
at position j is θ_n(j − s) (s = 0 for positions and for the count lookup's
``j``, s = 1 for its ``j − 1``; see :mod:`attncert.compile.counting`).
``n_free`` predicates do not depend on n, so a future-masked (decoder) model can
use them. ``at_zero`` is θ_n(0) (checked to be independent of n ≥ 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from attncert.errors import SpecError


@dataclass(frozen=True)
class NumPred:
    """A registered unary numerical predicate."""

    name: str
    fn: Callable[[int, int], bool]  # (k, n) -> θ_n(k)
    n_free: bool
    columns: Mapping[int, Mapping[str, float]]  # shift s -> {feature name: coefficient}
    doc: str

    def __call__(self, k: int, n: int) -> bool:
        return bool(self.fn(k, n))

    @property
    def at_zero(self) -> bool:
        return self(0, 1)


def _sq(k: int) -> bool:
    return k >= 0 and math.isqrt(k) ** 2 == k


def _cols(d: dict[int, dict[str, float]]) -> Mapping[int, Mapping[str, float]]:
    return MappingProxyType({s: MappingProxyType(c) for s, c in d.items()})


PREDICATES: Mapping[str, NumPred] = MappingProxyType(
    {
        p.name: p
        for p in (
            NumPred(
                "ODD",
                lambda k, n: k % 2 == 1,
                True,
                _cols({0: {"1": 0.5, "(-1)^i": -0.5}, 1: {"1": 0.5, "(-1)^i": 0.5}}),
                "k is odd",
            ),
            NumPred(
                "EVEN",
                lambda k, n: k % 2 == 0,
                True,
                _cols({0: {"1": 0.5, "(-1)^i": 0.5}, 1: {"1": 0.5, "(-1)^i": -0.5}}),
                "k is even",
            ),
            NumPred(
                "SQUARE",
                lambda k, n: _sq(k),
                True,
                _cols({0: {"[i square]": 1.0}, 1: {"[i-1 square]": 1.0}}),
                "k is a perfect square (0, 1, 4, 9, …)",
            ),
            NumPred(
                "HALF",
                lambda k, n: 2 * k == n,
                False,
                _cols({0: {"[2i=n]": 1.0}, 1: {"[2i-2=n]": 1.0}}),
                "k = n/2",
            ),
            NumPred(
                "GTHALF",
                lambda k, n: 2 * k > n,
                False,
                _cols({0: {"[i>n/2]": 1.0}, 1: {"[i-1>n/2]": 1.0}}),
                "k > n/2",
            ),
            NumPred(
                "LEHALF",
                lambda k, n: 2 * k <= n,
                False,
                _cols({0: {"1": 1.0, "[i>n/2]": -1.0}, 1: {"1": 1.0, "[i-1>n/2]": -1.0}}),
                "k ≤ n/2",
            ),
        )
    }
)

PREDICATE_NAMES: tuple[str, ...] = tuple(PREDICATES)


def predicate(name: str, *, where: str | None = None) -> NumPred:
    """The registered predicate ``name`` (SpecError naming the known ones otherwise)."""
    try:
        return PREDICATES[name]
    except KeyError:
        raise SpecError(
            f"unknown numerical predicate {name!r}",
            where=where,
            expected="one of " + ", ".join(PREDICATE_NAMES),
        ) from None
