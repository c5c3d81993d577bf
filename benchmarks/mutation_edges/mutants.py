"""The exhaustive neighbour mutants of a module's accept/reject comparisons (issue 41 item 5).

A *comparison* is an ``ast.Compare`` inside a function body whose operator is one of
``< <= > >= == !=`` and whose operands are not a string, ``None``, a ``type(…)`` call or a
display of strings (those are format checks, not edges). Each operator of it gets:

* **operator** — the operator replaced by each of the other five (``> 0`` → ``>= 0``,
  ``== 0`` → ``<= 0`` / ``>= 0`` are among them);
* **bound** — an operand that is an integer literal, ``len(…)``, ``….shape[…]``, ``….size``,
  ``….ndim`` or ``….degree()`` moved by ±1 (a range bound off by one);
* **slack** — when the comparison names a tolerance (an identifier ``tol``, ``tolerance``,
  ``…_tol``, ``tol_…``) or its function has one in scope (a parameter, an assignment
  before it in an enclosing block, or ``param.tolerance``), and the operator is an
  ordering: each operand moved by the tolerance's fidelity slack ``tol·max(1, |x|)`` —
  the form the checkers use for their own fidelity checks — up and down (two of the four
  make the comparison true more often, two less often). The slack is computed by
  :func:`slack` (through :func:`shift`, injected into the module's globals as ``_mutation_edges_slack``), which
  keeps the operand's number type: ``Fraction`` / ``fmpq`` stay exact, ``arb`` balls and
  numpy arrays work entrywise.

A mutant is one text edit of the module source; its id is
``module:function:line:col:change`` (line and column 1-based, of the edited text).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from fractions import Fraction

from .source import Function, Source

OPS: dict[type, str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
}
ORDERING = {"<", "<=", ">", ">="}
SLACK_NAME = "_mutation_edges_slack"
_TOL = re.compile(r"(^|_)(tol|tolerance|tolerances)(_|$)")


@dataclass(frozen=True)
class Mutant:
    """One mutant: the text ``source[start:end]`` replaced by ``new``."""

    id: str
    module: str
    function: str  # the innermost def, without <locals> (Cls.meth, outer.inner)
    qualname: str  # of the innermost def, as Python names it
    unit: str  # the qualname of the outermost def: its code object is swapped
    kind: str  # operator, bound, slack; or a general kind (see general.py)
    change: str  # ">=→>", "+1", "slack right+", …
    site: str  # module:function:line:col of the comparison (or node) it belongs to
    line: int
    col: int
    lines: tuple[int, ...]  # the lines a test must execute to meet the mutant
    start: int
    end: int
    new: str
    original: str  # the source line(s) of the site, stripped
    mutated: str  # the same line(s) after the edit

    def apply(self, text: str) -> str:
        return text[: self.start] + self.new + text[self.end :]

    def to_json(self) -> dict:
        keys = ("id", "module", "function", "kind", "change", "site", "line", "col")
        out = {k: getattr(self, k) for k in keys}
        out.update(original=self.original, mutated=self.mutated)
        return out


def is_tol(name: str) -> bool:
    return bool(_TOL.search(name))


def shift(tol, x, sign):
    """x moved by the fidelity slack: ``x + sign·tol·max(1, |x|)`` (the value of a slack
    mutant's edited operand; ``x`` is evaluated once, so an edit keeps the line count)."""
    return x + slack(tol, x) if sign > 0 else x - slack(tol, x)


def slack(tol, x):
    """tol·max(1, |x|) in the number type of ``x`` (the fidelity slack of the checkers:
    ``tol * max(1.0, abs(z))``, ``Fraction(tol) * max(Fraction(1), abs(z))``)."""
    try:
        import numpy as np

        if isinstance(x, np.ndarray | np.generic):
            return float(tol) * np.maximum(1.0, np.abs(x))
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    if isinstance(x, float):
        return float(tol) * max(1.0, abs(x))
    if isinstance(x, Fraction | int):
        return Fraction(tol) * max(Fraction(1), abs(Fraction(x)))
    kind = type(x).__name__
    if kind in ("fmpq", "fmpz"):
        from flint import fmpq

        t = Fraction(tol)
        return fmpq(t.numerator, t.denominator) * max(fmpq(1), abs(fmpq(x)))
    if kind == "arb":
        from flint import arb

        return arb(float(tol)) * (1 + abs(x))  # ≥ tol·max(1, |x|), within a factor 2
    return tol * max(1, abs(x))


# ----- which comparisons ------------------------------------------------------------------


def _is_format_operand(node: ast.AST) -> bool:
    """A string, bytes, None, an f-string, ``type(x)`` or a display of strings."""
    if isinstance(node, ast.Constant):
        return node.value is None or isinstance(node.value, str | bytes)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id == "type"
    if isinstance(node, ast.Tuple | ast.List | ast.Set) and node.elts:
        return all(_is_format_operand(e) for e in node.elts)
    return False


def _is_bound(node: ast.AST) -> bool:
    """An operand worth moving by ±1: an integer, len(…), .shape[…], .size, .ndim, .degree()."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Name) and f.id == "len":
            return True
        return isinstance(f, ast.Attribute) and f.attr == "degree" and not node.args
    if isinstance(node, ast.Subscript):
        v = node.value
        return isinstance(v, ast.Attribute) and v.attr == "shape"
    return isinstance(node, ast.Attribute) and node.attr in ("size", "ndim")


def _int_value(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_value(node.operand)
        return None if inner is None else -inner
    return None


def comparisons(src: Source) -> list[tuple[ast.Compare, Function]]:
    """Every comparison of the module that has at least one mutable operator."""
    out = []
    for node in ast.walk(src.tree):
        if not isinstance(node, ast.Compare):
            continue
        fn = src.innermost(node)
        if fn is None:
            continue
        if any(_mutable_op(node, i) for i in range(len(node.ops))):
            out.append((node, fn))
    out.sort(key=lambda p: (p[0].lineno, p[0].col_offset))
    return out


def _mutable_op(node: ast.Compare, i: int) -> bool:
    if type(node.ops[i]) not in OPS:
        return False
    left = node.left if i == 0 else node.comparators[i - 1]
    right = node.comparators[i]
    return not (_is_format_operand(left) or _is_format_operand(right))


# ----- the tolerance in scope ------------------------------------------------------------


def tolerance_expr(src: Source, node: ast.Compare, fn: Function) -> str | None:
    """The tolerance expression a slack mutant uses, or None (module docstring)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and is_tol(sub.id):
            return sub.id
        if isinstance(sub, ast.Attribute) and is_tol(sub.attr):
            return src.segment(sub)
    # a parameter of this def or of an enclosing one (closures see it)
    defs = []
    cur: ast.AST = node
    while hasattr(cur, "parent"):
        cur = cur.parent  # type: ignore[attr-defined]
        if isinstance(cur, ast.FunctionDef | ast.AsyncFunctionDef):
            defs.append(cur)
    for d in defs:
        a = d.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
            if is_tol(arg.arg):
                return arg.arg
    # an assignment before the comparison in one of the blocks that enclose it
    cur = node
    while hasattr(cur, "parent"):
        parent = cur.parent  # type: ignore[attr-defined]
        for block in ("body", "orelse", "finalbody", "handlers"):
            stmts = getattr(parent, block, None)
            if not isinstance(stmts, list) or not any(s is cur for s in stmts):
                continue
            for s in stmts[: [id(x) for x in stmts].index(id(cur))]:
                targets = (
                    s.targets
                    if isinstance(s, ast.Assign)
                    else [s.target]
                    if isinstance(s, ast.AnnAssign | ast.AugAssign)
                    else []
                )
                for t in targets:
                    if isinstance(t, ast.Name) and is_tol(t.id):
                        return t.id
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
            break
        cur = parent
    # param.tolerance used anywhere in the def
    params = {a.arg for d in defs[:1] for a in [*d.args.args, *d.args.kwonlyargs]}
    for sub in ast.walk(fn.node):
        if (
            isinstance(sub, ast.Attribute)
            and is_tol(sub.attr)
            and isinstance(sub.value, ast.Name)
            and sub.value.id in params
        ):
            return src.segment(sub)
    return None


# ----- building mutants -----------------------------------------------------------------


def make(
    src: Source, fn: Function, kind: str, change: str, site_node: ast.AST, a: int, b: int, new: str
) -> Mutant:
    """The mutant replacing ``src.text[a:b]`` by ``new`` (``site_node``: the comparison)."""
    line, col = src.position(a)
    sline, scol = src.position(src.start(site_node))
    stmt = src.statement(site_node)
    first, last = site_node.lineno, site_node.end_lineno
    lines = tuple(sorted({stmt.lineno, *range(first, last + 1)}))
    lo = src.offset(first, 0)
    hi = src.offset(last + 1, 0) if last < len(src.lines) else len(src.text)
    original = src.text[lo:hi]
    mutated = original[: a - lo] + new + original[b - lo :]
    return Mutant(
        id=f"{src.name}:{fn.name}:{line}:{col}:{change}",
        module=src.name,
        function=fn.name,
        qualname=fn.qualname,
        unit=fn.unit,
        kind=kind,
        change=change,
        site=f"{src.name}:{fn.name}:{sline}:{scol}",
        line=line,
        col=col,
        lines=lines,
        start=a,
        end=b,
        new=new,
        original=" ".join(x.strip() for x in original.splitlines()),
        mutated=" ".join(x.strip() for x in mutated.splitlines()),
    )


def comparison_mutants(src: Source) -> list[Mutant]:
    """Every neighbour mutant of every comparison of the module (module docstring)."""
    out: list[Mutant] = []
    for node, fn in comparisons(src):
        tol = tolerance_expr(src, node, fn)
        for i, op in enumerate(node.ops):
            if not _mutable_op(node, i):
                continue
            left = node.left if i == 0 else node.comparators[i - 1]
            right = node.comparators[i]
            sym = OPS[type(op)]
            a, b, _ = src.token_between(src.end(left), src.start(right), set(OPS.values()))
            for other in OPS.values():
                if other != sym:
                    out.append(make(src, fn, "operator", f"{sym}→{other}", node, a, b, other))
            for operand in (left, right):
                if not _is_bound(operand):
                    continue
                text, val = src.segment(operand), _int_value(operand)
                s, e = src.start(operand), src.end(operand)
                for d in (1, -1):
                    sign = "+" if d > 0 else "-"
                    new = str(val + d) if val is not None else f"({text} {sign} 1)"
                    out.append(make(src, fn, "bound", f"{sign}1", node, s, e, new))
            if tol is None or sym not in ORDERING or len(node.ops) > 1:
                continue
            less = sym in ("<", "<=")
            for side, operand in (("left", left), ("right", right)):
                text = src.segment(operand)
                s, e = src.start(operand), src.end(operand)
                for sign in "+-":
                    # true more often: the right side up (or the left down) of a < / <=
                    looser = (
                        (side == "right") == (sign == "+")
                        if less
                        else (side == "left") == (sign == "+")
                    )
                    change = f"slack {side}{sign} ({'looser' if looser else 'tighter'})"
                    new = f"{SLACK_NAME}({tol}, {text}, {sign}1)"
                    out.append(make(src, fn, "slack", change, node, s, e, new))
    return out
