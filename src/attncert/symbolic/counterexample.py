"""Search for parameter values where a claim's hypotheses hold and its conclusion fails.

The search is a plain enumeration of each variable's ``samples`` (which may depend on the
variables listed before it); every candidate is decided rigorously by
:func:`attncert.symbolic.rigorous.decide` (exact rationals or arb balls) or by the claim's
exact ``oracle``. A returned :class:`Counterexample` is therefore verified, not guessed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from attncert.symbolic.claim_types import Claim, Kind
from attncert.symbolic.rigorous import Undecided, decide, exact_value

__all__ = ["Counterexample", "SearchResult", "evaluate_point", "find_counterexample"]


@dataclass(frozen=True)
class Counterexample:
    values: dict[str, Fraction] = field(hash=False)

    def __str__(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.values.items())


@dataclass(frozen=True)
class SearchResult:
    counterexample: Counterexample | None
    points_checked: int  # points where the hypotheses held and the conclusion was decided true
    undecided: int


def evaluate_point(claim: Claim, env: Mapping[str, Fraction]) -> bool | None:
    """Hypotheses ⇒ conclusion at one point: True (holds or vacuous), False, None (undecided).

    Vacuous points (some hypothesis false) return True.
    """
    for v in claim.parameters:
        if v.name in env and not v.domain.contains(Fraction(env[v.name])):
            return True
    try:
        for h in claim.hypotheses:
            d = decide(h, env)
            if d is False:
                return True
            if d is None:
                return None
        if claim.kind is Kind.ORACLE:
            assert claim.oracle is not None
            return claim.oracle(env)
        return decide(claim.conclusion, env)
    except Undecided:
        return None


def _points(claim: Claim, fixed: Mapping[str, Fraction]) -> Iterator[dict[str, Fraction]]:
    free = [v for v in claim.parameters if v.name not in fixed]

    def rec(i: int, env: dict[str, Fraction]) -> Iterator[dict[str, Fraction]]:
        if i == len(free):
            yield dict(env)
            return
        v = free[i]
        seen = set()
        for smp in v.samples:
            try:
                val = exact_value(smp, env)
            except Undecided:
                continue
            if val is None or val in seen or not v.domain.contains(val):
                continue
            seen.add(val)
            env[v.name] = val
            yield from rec(i + 1, env)
            del env[v.name]

    yield from rec(0, dict(fixed))


def find_counterexample(
    claim: Claim, fixed: Mapping[str, Fraction] | None = None, max_points: int = 5000
) -> SearchResult:
    """Enumerate sample points (with ``fixed`` values held) and return the first verified
    counterexample, with counts of checked and undecided points."""
    fixed = {k: Fraction(v) for k, v in (fixed or {}).items()}
    if claim.kind is Kind.LIMIT:
        return SearchResult(None, 0, 0)
    checked = undecided = 0
    for env in itertools.islice(_points(claim, fixed), max_points):
        r = evaluate_point(claim, env)
        if r is False:
            names = [v.name for v in claim.parameters]
            vals = {k: env[k] for k in names if k in env}
            return SearchResult(Counterexample(vals), checked, undecided)
        if r is None:
            undecided += 1
        else:
            checked += 1
    return SearchResult(None, checked, undecided)
