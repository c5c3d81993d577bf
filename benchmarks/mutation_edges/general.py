"""General (mutmut-like) mutants of a module's function bodies, for ``--sample N``.

Operators: an arithmetic operator swapped (``+``↔``-``, ``*``↔``/``, ``//``→``/``, ``%``→``/``,
``**``→``*``, ``<<``↔``>>``, ``&``↔``|``, ``^``→``&``, and the augmented forms), a numeric
constant moved (an integer ±1, a float ×2 and ÷2), a term dropped (``a + b`` → ``a`` and →
``b``, ``a - b`` → ``a``), ``and``↔``or``, ``min``↔``max`` (also ``np.minimum``↔``np.maximum``,
``.min()``↔``.max()``), a condition negated (``if``, ``while``, ``assert``, a conditional
expression, a comprehension's ``if``), a returned value replaced (``return x`` → ``return
None``; ``True``↔``False``); plus every comparison mutant of :mod:`.mutants`. The sample
of a module is the N mutants with the smallest CRC-32 of a key that does not hold the line
number (module, function, the stripped source line, the column, the change), so it stays
put while the code around it moves.
"""

from __future__ import annotations

import ast
import itertools
import zlib

from .mutants import Mutant, comparison_mutants, make
from .source import Source

ARITH = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "/"),
    ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "/"),
    ast.Mod: ("%", "/"),
    ast.Pow: ("**", "*"),
    ast.LShift: ("<<", ">>"),
    ast.RShift: (">>", "<<"),
    ast.BitAnd: ("&", "|"),
    ast.BitOr: ("|", "&"),
    ast.BitXor: ("^", "&"),
}
MINMAX = {"min": "max", "max": "min", "minimum": "maximum", "maximum": "minimum"}


def general_mutants(src: Source) -> list[Mutant]:
    """Every general mutant of the module's function bodies (module docstring)."""
    out: dict[str, Mutant] = {m.id: m for m in comparison_mutants(src)}
    for node in ast.walk(src.tree):
        fn = src.innermost(node) if isinstance(node, ast.stmt | ast.expr) else None
        if isinstance(node, ast.comprehension):
            fn = src.innermost(node.iter)
        if fn is None:
            continue
        for kind, change, a, b, new, site in _edits(src, node):
            m = make(src, fn, kind, change, site, a, b, new)
            out.setdefault(m.id, m)
    return sorted(out.values(), key=lambda m: (m.start, m.id))


def _edits(src: Source, node: ast.AST):
    """(kind, change, start, end, new text, site node) of every general mutant at ``node``."""
    if isinstance(node, ast.BinOp) and type(node.op) in ARITH:
        sym, new = ARITH[type(node.op)]
        a, b, _ = src.token_between(src.end(node.left), src.start(node.right), {sym})
        yield "arithmetic", f"{sym}→{new}", a, b, new, node
        s, e = src.start(node), src.end(node)
        if isinstance(node.op, ast.Add | ast.Sub):
            old = src.segment(node)
            yield "drop term", "drop right", s, e, _paren(src.segment(node.left), old), node
        if isinstance(node.op, ast.Add):
            yield "drop term", "drop left", s, e, _paren(src.segment(node.right), old), node
    elif isinstance(node, ast.AugAssign) and type(node.op) in ARITH:
        sym, new = ARITH[type(node.op)]
        a, b, _ = src.token_between(src.end(node.target), src.start(node.value), {sym + "="})
        yield "arithmetic", f"{sym}=→{new}=", a, b, new + "=", node
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        if not isinstance(getattr(node, "parent", None), ast.JoinedStr | ast.FormattedValue):
            s, e, v = src.start(node), src.end(node), node.value
            if type(v) is int:
                yield "constant", "+1", s, e, repr(v + 1), node
                yield "constant", "-1", s, e, f"({v - 1})" if v < 1 else repr(v - 1), node
            else:
                yield "constant", "×2", s, e, repr(v * 2), node
                yield "constant", "÷2", s, e, repr(v / 2), node
    elif isinstance(node, ast.BoolOp):
        sym, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        for left, right in itertools.pairwise(node.values):
            a, b, _ = src.token_between(src.end(left), src.start(right), {sym})
            yield "boolean", f"{sym}→{new}", a, b, new, node
    elif isinstance(node, ast.Call):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name in MINMAX and (isinstance(f, ast.Attribute) or name in ("min", "max")):
            end = src.end(f)
            yield "min/max", f"{name}→{MINMAX[name]}", end - len(name), end, MINMAX[name], node
    elif isinstance(node, ast.If | ast.While | ast.Assert | ast.IfExp):
        yield _negate(src, node.test)
    elif isinstance(node, ast.comprehension):
        for cond in node.ifs:
            yield _negate(src, cond)
    elif isinstance(node, ast.Return) and node.value is not None:
        v = node.value
        s, e = src.start(v), src.end(v)
        if isinstance(v, ast.Constant) and isinstance(v.value, bool):
            yield "return", f"{v.value}→{not v.value}", s, e, repr(not v.value), node
        elif not (isinstance(v, ast.Constant) and v.value is None):
            yield "return", "→None", s, e, _paren("None", src.segment(v)), node


def _paren(new: str, old: str) -> str:
    """``(new)``, padded with line breaks inside the parentheses to as many lines as
    ``old`` (every later line keeps its number)."""
    return "(" + new + "\n" * max(0, old.count("\n") - new.count("\n")) + ")"


def _negate(src: Source, test: ast.expr):
    s, e = src.start(test), src.end(test)
    return "negate", "not", s, e, f"not ({src.segment(test)})", test


def sample(mutants: list[Mutant], size: int) -> list[Mutant]:
    """The ``size`` mutants with the smallest CRC-32 of their position-free key."""
    if size <= 0 or len(mutants) <= size:
        return list(mutants)

    def key(m: Mutant) -> tuple[int, str]:
        k = f"{m.module}:{m.function}:{m.original}:{m.col}:{m.kind}:{m.change}"
        return zlib.crc32(k.encode()), m.id

    chosen = sorted(mutants, key=key)[:size]
    return sorted(chosen, key=lambda m: (m.line, m.col, m.id))
