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

Text syntax: :mod:`attncert.logic.parser` (``parse``) and :func:`to_text` at the end of
this module (also ``str(formula)``; :mod:`attncert.logic.printer` re-exports it). The
printer lives with the tree it prints, so that ``str`` needs no import back into this
module.

Every node knows its nesting depth (:func:`depth`); a tree deeper than
:data:`MAX_FORMULA_DEPTH` is refused when it is built (a
:class:`~attncert.errors.SpecError` stating the limit), because the printer, the
interpreter, the compiler and the hashing of frozen dataclasses recurse over the tree.
The limit is defined here, next to the tree that enforces it, and re-exported by
:mod:`attncert.limits` with the other caps (the all-length certificate reader, which is
trusted, builds formulas; it needs this one limit, not the CLI's).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from attncert.errors import SpecError
from attncert.logic.numpred import predicate

__implements__ = (
    "Yang Definition 10",
    "Yang Definition 14",
    "Yang Definition 19",
)

#: Deepest formula syntax tree (operators nested inside each other, e.g. ``!!!…Q_a`` or a
#: left-nested chain ``Q_a & Q_b & …``). The printer, the interpreter, the compiler and
#: the hashing of frozen dataclasses recurse once or twice per level; Python's default
#: recursion limit (1,000 frames) is safe below this depth. Parentheses around a formula
#: do not add depth.
MAX_FORMULA_DEPTH = 200


class Formula:
    """Base class of formulas; ``str(f)`` is the text syntax (round-trips with ``parse``)."""

    __slots__ = ()

    def __post_init__(self) -> None:
        d = 1 + max((c._depth for c in self.children()), default=-1)
        if d > MAX_FORMULA_DEPTH:
            raise SpecError(
                f"operators nested {d} levels deep, more than the limit {MAX_FORMULA_DEPTH}",
                expected=f"at most {MAX_FORMULA_DEPTH} nested operators (parentheses do not count)",
            )
        object.__setattr__(self, "_depth", d)

    def children(self) -> tuple[Formula, ...]:
        return ()

    def __str__(self) -> str:
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
        super().__post_init__()


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
        super().__post_init__()

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
        predicate(self.pred)
        super().__post_init__()


@dataclass(frozen=True)
class CountPred(Formula):
    """θ(t): a numerical predicate applied to the value of a count term."""

    pred: str
    term: CountTerm

    def __post_init__(self) -> None:
        predicate(self.pred)
        if not isinstance(self.term, CountTerm):
            raise SpecError(f"{self.term!r} is not a count term", expected="#<[...] or #>[...]")
        super().__post_init__()

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
    """Nesting depth of the syntax tree (atoms have depth 0; at most MAX_FORMULA_DEPTH)."""
    return f._depth  # type: ignore[attr-defined]  # set by Formula.__post_init__


# ----------------------------------------------------------------------------- text
# Round trip: ``parse(to_text(f)) == f`` for every formula ``f`` (tested with hypothesis).
# Parentheses are inserted exactly where precedence requires them: ``|`` < ``&`` <
# ``S``/``U`` (non-associative) < unary < atoms; ``&`` and ``|`` are left-associative.

_OR, _AND, _SU, _UNARY, _ATOM = 1, 2, 3, 4, 5


def _level(f: Formula) -> int:
    if isinstance(f, Or):
        return _OR
    if isinstance(f, And):
        return _AND
    if isinstance(f, (Since, Until)):
        return _SU
    if isinstance(f, (Not, Prev, Next)):
        return _UNARY
    return _ATOM


def _wrap(f: Formula, min_level: int) -> str:
    text = to_text(f)
    return f"({text})" if _level(f) < min_level else text


def _count(t: CountTerm) -> str:
    op = "#<" if isinstance(t, CountLeft) else "#>"
    return f"{op}[{to_text(t.arg)}]"


def linear_text(lin: Linear) -> str:
    """The text of an integer linear combination of count terms."""
    parts: list[str] = []
    for k, (c, t) in enumerate(lin.terms):
        mag = abs(c)
        body = _count(t) if mag == 1 else f"{mag}*{_count(t)}"
        if k == 0:
            parts.append(("-" if c < 0 else "") + body)
        else:
            parts.append((" - " if c < 0 else " + ") + body)
    if lin.const != 0 or not lin.terms:
        if not lin.terms:
            parts.append(str(lin.const))
        else:
            parts.append((" - " if lin.const < 0 else " + ") + str(abs(lin.const)))
    return "".join(parts)


def to_text(f: Formula) -> str:
    """The ASCII text of ``f`` (the syntax of :mod:`attncert.logic.parser`)."""
    simple = {Top: "true", Bottom: "false", First: "first", Last: "last"}
    if type(f) in simple:
        return simple[type(f)]
    if isinstance(f, Atom):
        return f"Q_{f.symbol}"
    if isinstance(f, Not):
        return "!" + _wrap(f.arg, _UNARY)
    if isinstance(f, Prev):
        return "prev " + _wrap(f.arg, _UNARY)
    if isinstance(f, Next):
        return "next " + _wrap(f.arg, _UNARY)
    if isinstance(f, And):
        return f"{_wrap(f.left, _AND)} & {_wrap(f.right, _AND + 1)}"
    if isinstance(f, Or):
        return f"{_wrap(f.left, _OR)} | {_wrap(f.right, _OR + 1)}"
    if isinstance(f, Since):
        return f"{_wrap(f.left, _UNARY)} S {_wrap(f.right, _UNARY)}"
    if isinstance(f, Until):
        return f"{_wrap(f.left, _UNARY)} U {_wrap(f.right, _UNARY)}"
    if isinstance(f, Compare):
        return f"{linear_text(f.left)} {f.op.value} {linear_text(f.right)}"
    if isinstance(f, PosPred):
        return f"{f.pred}(i)"
    if isinstance(f, CountPred):
        return f"{f.pred}({_count(f.term)})"
    raise TypeError(f"not a formula: {f!r}")
