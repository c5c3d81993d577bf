"""Parse the text syntax of formulas (grammar: ``grammar.lark``, LALR via lark).

    >>> from attncert.logic import parse
    >>> str(parse("ODD(#<[Q_1])"))
    'ODD(#<[Q_1])'
    >>> str(parse("#<[prev Q_1] = #>[Q_1]"))
    '#<[prev Q_1] = #>[Q_1]'

Syntax (ASCII; Unicode ¬ ∧ ∨ ◁ ▷ ⊤ ⊥ #← #→ ≤ ≥ ≠ also accepted):
``Q_a`` (symbol a here), ``true``, ``false``, ``first``, ``last``, ``!φ``, ``φ & ψ``,
``φ | ψ``, ``prev φ`` (◁), ``next φ`` (▷), ``φ S ψ`` (since), ``φ U ψ`` (until),
counts ``#<[φ]`` / ``#>[φ]`` in integer linear comparisons (``2*#<[Q_a] - #>[Q_b] >= 3``),
numerical predicates ``ODD(i)``, ``SQUARE(#<[Q_a])`` (see
:mod:`attncert.logic.numpred`). ``S``/``U`` do not associate: write ``(a S b) S c``.

Malformed text raises :class:`FormulaSyntaxError` (a :class:`~attncert.errors.SpecError`)
naming line, column and the tokens that would have been accepted. The syntax tree is
built while the LALR parser reduces (no recursive pass over a parse tree), so nesting
costs no Python stack: parentheses may nest arbitrarily, and operators up to
:data:`~attncert.logic.syntax.MAX_FORMULA_DEPTH` (deeper trees are refused with that limit).
Texts longer than :data:`~attncert.limits.MAX_FORMULA_CHARS` characters are refused.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from attncert.errors import SpecError
from attncert.limits import MAX_FORMULA_CHARS
from attncert.logic import syntax as s

_GRAMMAR = Path(__file__).with_name("grammar.lark")

_FRIENDLY = {
    "QATOM": "an atom Q_a",
    "PRED": "a predicate name (ODD, EVEN, SQUARE, …)",
    "INT": "an integer",
    "$END": "end of formula",
    "CMP": "a comparison (<, <=, =, !=, >=, >)",
    "POSVAR": "'i'",
    "AND": "'&'",
    "OR": "'|'",
    "NOT": "'!'",
    "PREV": "'prev'",
    "NEXT": "'next'",
    "SINCE": "'S'",
    "UNTIL": "'U'",
    "TRUE": "'true'",
    "FALSE": "'false'",
    "COUNTL": "'#<'",
    "COUNTR": "'#>'",
    "STAR": "'*'",
}


class FormulaSyntaxError(SpecError):
    """A formula's text could not be parsed; ``line``/``column`` are 1-based."""

    def __init__(self, message: str, *, line: int, column: int, expected: str | None, text: str):
        self.line = line
        self.column = column
        self.text = text
        super().__init__(message, where=f"formula:{line}:{column}", expected=expected)

    def context(self) -> str:
        """The offending line with a caret under the column."""
        lines = self.text.splitlines() or [""]
        src = lines[min(self.line, len(lines)) - 1]
        return src + "\n" + " " * (self.column - 1) + "^"


@cache
def _parser() -> Lark:
    """The LALR parser of the grammar, with :class:`_ToAst` applied at each reduction."""
    return Lark(
        _GRAMMAR.read_text(encoding="utf-8"), parser="lalr", start="start", transformer=_ToAst()
    )


def _describe(names: set[str] | frozenset[str]) -> str:
    p = _parser()
    out = set()
    for name in names:
        if name in _FRIENDLY:
            out.add(_FRIENDLY[name])
            continue
        try:
            pat = p.get_terminal(name).pattern
            out.add(repr(pat.value) if pat.type == "str" else name)
        except KeyError:
            out.add(name)
    return ", ".join(sorted(out))


@v_args(inline=True)
class _ToAst(Transformer):
    def top_f(self, _t):
        return s.Top()

    def bottom_f(self, _t):
        return s.Bottom()

    def first_f(self, _t):
        return s.First()

    def last_f(self, _t):
        return s.Last()

    def atom_f(self, tok):
        return s.Atom(str(tok)[2:])

    def not_f(self, _op, a):
        return s.Not(a)

    def prev_f(self, _op, a):
        return s.Prev(a)

    def next_f(self, _op, a):
        return s.Next(a)

    def and_f(self, a, _op, b):
        return s.And(a, b)

    def or_f(self, a, _op, b):
        return s.Or(a, b)

    def since_f(self, a, _op, b):
        return s.Since(a, b)

    def until_f(self, a, _op, b):
        return s.Until(a, b)

    def atom(self, *children):  # "(" formula ")"
        return children[1]

    def count_left(self, _op, _lb, f, _rb):
        return s.CountLeft(f)

    def count_right(self, _op, _lb, f, _rb):
        return s.CountRight(f)

    def mono_scaled(self, k, _star, t):
        return (int(k), t)

    def mono_unit(self, t):
        return (1, t)

    def mono_const(self, k):
        return (int(k), None)

    def addop(self, tok):
        return str(tok)

    def linear(self, *items):
        items = list(items)
        sign = 1
        if isinstance(items[0], Token) and items[0].type == "MINUS":
            sign = -1
            items = items[1:]
        monos = [(sign, items[0])]
        for op, mono in zip(items[1::2], items[2::2], strict=True):
            monos.append((1 if op == "+" else -1, mono))
        terms, const = [], 0
        for sg, (k, t) in monos:
            if t is None:
                const += sg * k
            else:
                terms.append((sg * k, t))
        return s.Linear(tuple(terms), const)

    def compare_f(self, left, op, right):
        op = {"==": "=", "≤": "<=", "≥": ">=", "≠": "!="}.get(str(op), str(op))
        return s.Compare(left, s.CmpOp(op), right)

    def pospred_f(self, name, _lp, _i, _rp):
        return self._pred(name, None)

    def countpred_f(self, name, _lp, term, _rp):
        return self._pred(name, term)

    def _pred(self, name: Token, term):
        from attncert.logic.numpred import PREDICATE_NAMES

        if str(name) not in PREDICATE_NAMES:
            raise FormulaSyntaxError(
                f"unknown numerical predicate {str(name)!r}",
                line=name.line,
                column=name.column,
                expected="one of " + ", ".join(PREDICATE_NAMES),
                text="",
            )
        return s.PosPred(str(name)) if term is None else s.CountPred(str(name), term)


def parse(text: str) -> s.Formula:
    """Parse a formula; raises :class:`FormulaSyntaxError` with line/column/expected."""
    if not isinstance(text, str):
        raise SpecError(f"formula must be a string, got {type(text).__name__}")
    if not text.strip():
        raise FormulaSyntaxError("empty formula", line=1, column=1, expected="a formula", text=text)
    if len(text) > MAX_FORMULA_CHARS:
        raise SpecError(
            f"formula of {len(text)} characters is longer than the limit {MAX_FORMULA_CHARS}",
            where="formula",
        )
    try:
        return _parser().parse(text)
    except UnexpectedCharacters as err:
        raise FormulaSyntaxError(
            f"unexpected character {text[err.pos_in_stream]!r}",
            line=err.line,
            column=err.column,
            expected=_describe(err.allowed or set()),
            text=text,
        ) from None
    except UnexpectedEOF as err:
        line, col = _end(text)
        raise FormulaSyntaxError(
            "unexpected end of formula",
            line=line,
            column=col,
            expected=_describe(set(err.expected)),
            text=text,
        ) from None
    except UnexpectedToken as err:
        if err.token.type == "$END":
            line, col = _end(text)
            msg = "unexpected end of formula"
        else:
            line, col = err.line, err.column
            msg = f"unexpected {str(err.token)!r}"
        raise FormulaSyntaxError(
            msg, line=line, column=col, expected=_describe(err.expected), text=text
        ) from None
    except UnexpectedInput as err:  # pragma: no cover - other lark input errors
        raise FormulaSyntaxError(
            str(err),
            line=getattr(err, "line", 1),
            column=getattr(err, "column", 1),
            expected=None,
            text=text,
        ) from None
    except VisitError as err:  # a callback's error, wrapped by some lark versions
        _reraise(err.orig_exc, text)
        raise
    except FormulaSyntaxError as err:
        err.text = text
        raise
    except SpecError as err:  # e.g. a tree deeper than MAX_FORMULA_DEPTH
        raise SpecError(err.message, where="formula", expected=err.expected) from None


def _reraise(inner: BaseException, text: str) -> None:
    if isinstance(inner, FormulaSyntaxError):
        inner.text = text
        raise inner from None
    if isinstance(inner, SpecError):
        raise SpecError(inner.message, where="formula", expected=inner.expected) from None


def _end(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1
