"""Print formulas in the text syntax of :mod:`attncert.logic.parser`.

Round trip: ``parse(to_text(f)) == f`` for every formula ``f`` (tested with
hypothesis). Parentheses are inserted exactly where precedence requires them:
``|`` < ``&`` < ``S``/``U`` (non-associative) < unary < atoms; ``&`` and ``|`` are
left-associative.
"""

from __future__ import annotations

from attncert.logic import syntax as s

_OR, _AND, _SU, _UNARY, _ATOM = 1, 2, 3, 4, 5


def _level(f: s.Formula) -> int:
    if isinstance(f, s.Or):
        return _OR
    if isinstance(f, s.And):
        return _AND
    if isinstance(f, (s.Since, s.Until)):
        return _SU
    if isinstance(f, (s.Not, s.Prev, s.Next)):
        return _UNARY
    return _ATOM


def _wrap(f: s.Formula, min_level: int) -> str:
    text = to_text(f)
    return f"({text})" if _level(f) < min_level else text


def _count(t: s.CountTerm) -> str:
    op = "#<" if isinstance(t, s.CountLeft) else "#>"
    return f"{op}[{to_text(t.arg)}]"


def linear_text(lin: s.Linear) -> str:
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


def to_text(f: s.Formula) -> str:
    """The ASCII text of ``f``."""
    if isinstance(f, s.Top):
        return "true"
    if isinstance(f, s.Bottom):
        return "false"
    if isinstance(f, s.First):
        return "first"
    if isinstance(f, s.Last):
        return "last"
    if isinstance(f, s.Atom):
        return f"Q_{f.symbol}"
    if isinstance(f, s.Not):
        return "!" + _wrap(f.arg, _UNARY)
    if isinstance(f, s.Prev):
        return "prev " + _wrap(f.arg, _UNARY)
    if isinstance(f, s.Next):
        return "next " + _wrap(f.arg, _UNARY)
    if isinstance(f, s.And):
        return f"{_wrap(f.left, _AND)} & {_wrap(f.right, _AND + 1)}"
    if isinstance(f, s.Or):
        return f"{_wrap(f.left, _OR)} | {_wrap(f.right, _OR + 1)}"
    if isinstance(f, s.Since):
        return f"{_wrap(f.left, _UNARY)} S {_wrap(f.right, _UNARY)}"
    if isinstance(f, s.Until):
        return f"{_wrap(f.left, _UNARY)} U {_wrap(f.right, _UNARY)}"
    if isinstance(f, s.Compare):
        return f"{linear_text(f.left)} {f.op.value} {linear_text(f.right)}"
    if isinstance(f, s.PosPred):
        return f"{f.pred}(i)"
    if isinstance(f, s.CountPred):
        return f"{f.pred}({_count(f.term)})"
    raise TypeError(f"not a formula: {f!r}")
