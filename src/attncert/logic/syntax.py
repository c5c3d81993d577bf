"""Abstract syntax of the temporal logics of Yang, Strobl, Chiang, Angluin (§4).

Immutable trees (frozen dataclasses, hashable, so equal subformulas are shared
by the compiler):

* Boolean: :class:`Top`, :class:`Bottom`, :class:`Atom` (Q_a), :class:`Not`,
  :class:`And`, :class:`Or`; position markers :class:`First`, :class:`Last`;
* TL[◁, ▷] (Def. 10): :class:`Prev` (◁φ: i > 1 and φ at i−1), :class:`Next`;
* TL[S, U] (Def. 14, strict): :class:`Since` (φ S ψ: some j < i has ψ and φ holds
  at every k with j < k < i), :class:`Until` (mirror image);
* counting (Def. 19): terms :class:`CountLeft` (#←[φ] = |{j ≤ i : φ}|) and
  :class:`CountRight` (#→[φ] = |{j ≥ i : φ}|); :class:`Compare` of two integer
  linear combinations :class:`Linear`; numerical predicates on the position
  (:class:`PosPred`, θ(i)) and on a count (:class:`CountPred`, θ(#[φ]));
* K_t[#] (§4.5) is all of the above together.

Text syntax: :mod:`attncert.logic.parser` (``parse``) and
:mod:`attncert.logic.printer` (``to_text``, also ``str(formula)``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from attncert.errors import SpecError

__implements__ = (
    "Yang Definition 10",
    "Yang Definition 14",
    "Yang Definition 19",
)


class Formula:
    """Base class of formulas; ``str(f)`` is the text syntax (round-trips with ``parse``)."""

    __slots__ = ()

    def children(self) -> tuple[Formula, ...]:
        return ()

    def __str__(self) -> str:
        from attncert.logic.printer import to_text

        return to_text(self)

    def subformulas(self) -> Iterator[Formula]:
        """All subformulas (including count-term bodies), children before parents."""
        for c in self.children():
            yield from c.subformulas()
        yield self

    def atoms(self) -> set[str]:
        return {f.symbol for f in self.subformulas() if isinstance(f, Atom)}


@dataclass(frozen=True)
class Top(Formula):
    pass


@dataclass(frozen=True)
class Bottom(Formula):
    pass


@dataclass(frozen=True)
class First(Formula):
    """True exactly at position 1."""


@dataclass(frozen=True)
class Last(Formula):
    """True exactly at position n."""


@dataclass(frozen=True)
class Atom(Formula):
    """Q_a: the symbol at the current position is ``symbol``."""

    symbol: str

    def __post_init__(self) -> None:
        if not isinstance(self.symbol, str) or len(self.symbol) != 1 or self.symbol.isspace():
            raise SpecError(f"atom symbol {self.symbol!r}", expected="one non-space character")


@dataclass(frozen=True)
class Not(Formula):
    arg: Formula

    def children(self) -> tuple[Formula, ...]:
        return (self.arg,)


@dataclass(frozen=True)
class And(Formula):
    left: Formula
    right: Formula

    def children(self) -> tuple[Formula, ...]:
        return (self.left, self.right)


@dataclass(frozen=True)
class Or(Formula):
    left: Formula
    right: Formula

    def children(self) -> tuple[Formula, ...]:
        return (self.left, self.right)


@dataclass(frozen=True)
class Prev(Formula):
    """◁φ: i > 1 and φ holds at i − 1."""

    arg: Formula

    def children(self) -> tuple[Formula, ...]:
        return (self.arg,)


@dataclass(frozen=True)
class Next(Formula):
    """▷φ: i < n and φ holds at i + 1."""

    arg: Formula

    def children(self) -> tuple[Formula, ...]:
        return (self.arg,)


@dataclass(frozen=True)
class Since(Formula):
    """φ S ψ (strict): some j < i has ψ, and φ holds at every k with j < k < i."""

    left: Formula
    right: Formula

    def children(self) -> tuple[Formula, ...]:
        return (self.left, self.right)


@dataclass(frozen=True)
class Until(Formula):
    """φ U ψ (strict): some j > i has ψ, and φ holds at every k with i < k < j."""

    left: Formula
    right: Formula

    def children(self) -> tuple[Formula, ...]:
        return (self.left, self.right)


@dataclass(frozen=True)
class CountTerm:
    """A counting term; its value at i is an integer in [0, n]."""

    arg: Formula

    def subformulas(self) -> Iterator[Formula]:
        yield from self.arg.subformulas()


@dataclass(frozen=True)
class CountLeft(CountTerm):
    """#←[φ]: the number of j ≤ i where φ holds."""


@dataclass(frozen=True)
class CountRight(CountTerm):
    """#→[φ]: the number of j ≥ i where φ holds."""


@dataclass(frozen=True)
class Linear:
    """Σ_k c_k · t_k + const with nonzero integer coefficients c_k (terms kept in order)."""

    terms: tuple[tuple[int, CountTerm], ...] = ()
    const: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "terms", tuple((int(c), t) for c, t in self.terms))
        for c, t in self.terms:
            if c == 0:
                raise SpecError("zero coefficient in a linear count expression")
            if not isinstance(t, CountTerm):
                raise SpecError(f"{t!r} is not a count term", expected="#<[...] or #>[...]")
        if isinstance(self.const, bool) or not isinstance(self.const, int):
            raise SpecError(f"constant {self.const!r}", expected="an integer")


class CmpOp(str, Enum):
    LT = "<"
    LE = "<="
    EQ = "="
    NE = "!="
    GE = ">="
    GT = ">"

    def holds(self, a: int, b: int) -> bool:
        return {
            CmpOp.LT: a < b,
            CmpOp.LE: a <= b,
            CmpOp.EQ: a == b,
            CmpOp.NE: a != b,
            CmpOp.GE: a >= b,
            CmpOp.GT: a > b,
        }[self]


@dataclass(frozen=True)
class Compare(Formula):
    """left op right, both integer linear combinations of count terms."""

    left: Linear
    op: CmpOp
    right: Linear

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", CmpOp(self.op))

    def count_terms(self) -> tuple[CountTerm, ...]:
        return tuple(t for _, t in self.left.terms) + tuple(t for _, t in self.right.terms)

    def children(self) -> tuple[Formula, ...]:
        return tuple(t.arg for t in self.count_terms())

    def normalized(self) -> tuple[tuple[tuple[int, CountTerm], ...], int]:
        """(Σ a_k t_k, b) with ``left − right = Σ a_k t_k − b``, like terms merged, zeros
        dropped, in first-appearance order."""
        coef: dict[CountTerm, int] = {}
        for c, t in self.left.terms:
            coef[t] = coef.get(t, 0) + c
        for c, t in self.right.terms:
            coef[t] = coef.get(t, 0) - c
        terms = tuple((c, t) for t, c in coef.items() if c != 0)
        return terms, self.right.const - self.left.const


@dataclass(frozen=True)
class PosPred(Formula):
    """θ(i): a numerical predicate applied to the current position."""

    pred: str

    def __post_init__(self) -> None:
        from attncert.logic.numpred import predicate

        predicate(self.pred)


@dataclass(frozen=True)
class CountPred(Formula):
    """θ(t): a numerical predicate applied to the value of a count term."""

    pred: str
    term: CountTerm

    def __post_init__(self) -> None:
        from attncert.logic.numpred import predicate

        predicate(self.pred)
        if not isinstance(self.term, CountTerm):
            raise SpecError(f"{self.term!r} is not a count term", expected="#<[...] or #>[...]")

    def children(self) -> tuple[Formula, ...]:
        return (self.term.arg,)


def conj(*fs: Formula) -> Formula:
    """Left-nested conjunction (⊤ when empty)."""
    if not fs:
        return Top()
    out = fs[0]
    for f in fs[1:]:
        out = And(out, f)
    return out


def disj(*fs: Formula) -> Formula:
    """Left-nested disjunction (⊥ when empty)."""
    if not fs:
        return Bottom()
    out = fs[0]
    for f in fs[1:]:
        out = Or(out, f)
    return out


def implies(a: Formula, b: Formula) -> Formula:
    return Or(Not(a), b)


def depth(f: Formula) -> int:
    """Nesting depth of the syntax tree (atoms have depth 0)."""
    cs = f.children()
    return 0 if not cs else 1 + max(depth(c) for c in cs)
