"""The data types of the symbolic checker: a proof step as data (Hahn 2020 §5.1, supplement S1).

A :class:`Claim` is one step of a printed proof, *hypotheses ⇒ conclusion*, over declared
parameter domains. ``displays`` names the displayed equation(s) or quoted lines it checks
(labels of :data:`attncert.symbolic.displays.DISPLAYS`), ``printed`` quotes them as printed,
and ``follows_from`` names the lines the text derives it from — the direction of the step.
Nothing here decides a claim: :mod:`attncert.symbolic.runner` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from fractions import Fraction

import sympy as sp

__all__ = [
    "FRACTION_C",
    "INT",
    "NONNEG",
    "POS",
    "UNIT_HALF",
    "UNIT_OPEN",
    "Claim",
    "Domain",
    "Kind",
    "Slack",
    "Source",
    "Var",
    "Version",
    "unit_open",
]


class Version(Enum):
    """Which text a claim is taken from."""

    PAPER = "paper"  # Hahn 2020, TACL, §5.1
    EXTRACT = "extract"  # the §5 restatement (hahn2020-section5-hard-attention.md)
    SUPPLEMENT = "supplement"  # supplement S1 (formal write-up)
    ALL = "all"  # the same in all versions
    ATTNCERT = "attncert"  # a repaired/refined statement, not in the papers


class Kind(Enum):
    IMPLICATION = "implication"  # ∀ parameters: hypotheses ⇒ conclusion (a sympy relation)
    LIMIT = "limit"  # conclusion is Eq(Limit(expr, k, oo), value)
    ORACLE = "oracle"  # conclusion decided by a finite exact computation (``oracle``)
    CUSTOM = "custom"  # a dedicated sympy proof in attncert.symbolic.prover (``custom``)


@dataclass(frozen=True)
class Source:
    document: str  # "Hahn 2020 §5.1", "Hahn 2020 supplement S1", ...
    locus: str  # "eq. (12)", "Lemma 17", ...

    def __str__(self) -> str:
        return f"{self.document}, {self.locus}"


@dataclass(frozen=True)
class Domain:
    """An interval of ℝ (or of ℤ if ``integer``); ``None`` bounds are infinite."""

    lo: Fraction | None = None
    hi: Fraction | None = None
    lo_open: bool = True
    hi_open: bool = True
    integer: bool = False

    def contains(self, v: Fraction) -> bool:
        if self.integer and Fraction(v).denominator != 1:
            return False
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            return False
        return not (self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)))

    def describe(self) -> str:
        if self.integer:
            return (
                f"integer ≥ {self.lo}" if self.hi is None else f"integer in [{self.lo}, {self.hi}]"
            )
        lb = "(" if self.lo_open else "["
        rb = ")" if self.hi_open else "]"
        lo = "-∞" if self.lo is None else str(self.lo)
        hi = "∞" if self.hi is None else str(self.hi)
        return f"{lb}{lo}, {hi}{rb}"


POS = Domain(Fraction(0))
NONNEG = Domain(Fraction(0), lo_open=False)
UNIT_OPEN = Domain(Fraction(0), Fraction(1))
UNIT_HALF = Domain(Fraction(0), Fraction(1, 2))
FRACTION_C = Domain(Fraction(0), Fraction(1), hi_open=False)


def INT(lo: int = 1, hi: int | None = None) -> Domain:
    return Domain(Fraction(lo), None if hi is None else Fraction(hi), False, False, True)


@dataclass(frozen=True)
class Var:
    """A variable of a claim: sympy symbol, domain, candidate values for the search."""

    symbol: sp.Symbol
    domain: Domain
    samples: tuple[sp.Expr, ...] = ()
    reparam: sp.Expr | None = None  # custom positive parametrization (fresh symbols)

    @property
    def name(self) -> str:
        return self.symbol.name


@dataclass(frozen=True)
class Slack:
    """Proof hint: a hypothesis equivalent to ``var ⋈ bound``; ``form`` ∈ ge, le, ratio_le,
    ratio_ge, eq. The prover checks that values outside the form violate the hypothesis."""

    var: str
    form: str
    bound: sp.Expr
    strict: bool = False


@dataclass(frozen=True)
class Claim:
    """One proof step: ∀ parameters in their domains, hypotheses ⇒ conclusion."""

    id: str
    source: tuple[Source, ...]
    hypotheses: tuple[sp.Basic, ...]
    conclusion: sp.Basic
    parameters: tuple[Var, ...]
    version: Version = Version.ALL
    statement: str = ""
    kind: Kind = Kind.IMPLICATION
    slacks: tuple[Slack, ...] = ()
    log_goal: bool = False
    oracle: Callable[[Mapping[str, Fraction]], bool | None] | None = field(
        default=None, compare=False
    )
    citation: str = ""  # a textbook theorem the general statement rests on
    custom: str = ""  # name of a dedicated proof procedure (Kind.CUSTOM)
    note: str = ""
    displays: tuple[str, ...] = ()  # display labels checked (attncert.symbolic.displays)
    printed: str = ""  # the step as printed (transcribed)
    follows_from: tuple[str, ...] = ()  # the lines (display labels) the text derives it from

    def var(self, name: str) -> Var:
        for v in self.parameters:
            if v.name == name:
                return v
        raise KeyError(name)


def unit_open(x: sp.Symbol, values: tuple, name: str) -> Var:
    """A variable in (0, 1), reparametrized as t/(1+t) with t > 0 for sympy."""
    t = sp.Symbol(name, positive=True)
    return Var(x, UNIT_OPEN, values, reparam=t / (1 + t))
