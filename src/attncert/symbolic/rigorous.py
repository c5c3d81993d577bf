"""Rigorous evaluation of sympy expressions: exact rationals, else arb balls (python-flint).

Trusted core of the symbolic checker. A relation between two real expressions is
*decided* here and nowhere else:

- if both sides evaluate to rationals exactly (no exp/log/irrational powers), compare exactly;
- otherwise evaluate the difference as an arb ball (guaranteed enclosure) at increasing
  precision until its sign is certain; if it never is, the answer is ``None`` (undecided).

No float is ever compared. :func:`decide` returns ``True``/``False``/``None``.

>>> import sympy as sp
>>> k = sp.Symbol("k", positive=True)
>>> decide(sp.exp(-1) < sp.Rational(3, 8), {})
True
>>> decide(k**2 >= 10, {"k": 3})
False
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

import sympy as sp
from flint import arb, ctx, fmpq

__all__ = ["PRECISIONS", "Undecided", "decide", "exact_value", "sign", "to_arb"]

PRECISIONS = (64, 128, 256, 512, 1024, 4096)


class Undecided(Exception):
    """An expression could not be evaluated (e.g. log of a ball containing 0)."""


_EXACT_BITS = 1 << 16


def exact_value(expr: sp.Expr, env: Mapping[str, object]) -> Fraction | None:
    """``expr`` at ``env`` as an exact Fraction, or None if not (cheaply) rational.

    Only +, ×, integer powers of rationals are evaluated exactly (results above 65536 bits are
    left to arb); exp, log and non-integer powers give None.
    """
    if expr.is_Rational:
        return Fraction(int(expr.p), int(expr.q))
    if expr.is_Symbol:
        if expr.name not in env:
            raise Undecided(f"unbound symbol {expr.name}")
        return Fraction(env[expr.name])  # type: ignore[arg-type]
    if isinstance(expr, (sp.Add, sp.Mul)):
        vals = [exact_value(a, env) for a in expr.args]
        if any(v is None for v in vals):
            return None
        acc = Fraction(0) if isinstance(expr, sp.Add) else Fraction(1)
        for v in vals:
            acc = acc + v if isinstance(expr, sp.Add) else acc * v  # type: ignore[operator]
        return acc
    if isinstance(expr, sp.Abs):
        v = exact_value(expr.args[0], env)
        return None if v is None else abs(v)
    if isinstance(expr, (sp.ceiling, sp.floor)):
        v = exact_value(expr.args[0], env)
        if v is None:
            return None
        return Fraction(math.ceil(v) if isinstance(expr, sp.ceiling) else math.floor(v))
    if isinstance(expr, sp.Pow):
        b = exact_value(expr.args[0], env)
        e = exact_value(expr.args[1], env)
        if b is None or e is None or e.denominator != 1:
            return None
        size = max(b.numerator.bit_length(), b.denominator.bit_length(), 1)
        if abs(int(e)) * size > _EXACT_BITS:
            return None
        if b == 0 and e < 0:
            raise Undecided("division by zero")
        return b ** int(e)
    return None


def _arb_of(value: object) -> arb:
    f = Fraction(value)  # type: ignore[arg-type]
    return arb(fmpq(f.numerator, f.denominator))


def to_arb(expr: sp.Expr, env: Mapping[str, object]) -> arb:
    """An arb ball enclosing ``expr`` at ``env`` (at the current ``flint.ctx.prec``)."""
    if expr.is_Integer:
        return arb(int(expr))
    if expr.is_Rational:
        return arb(fmpq(int(expr.p), int(expr.q)))
    if expr.is_Symbol:
        if expr.name not in env:
            raise Undecided(f"unbound symbol {expr.name}")
        return _arb_of(env[expr.name])
    if expr is sp.E:
        return arb(1).exp()
    if expr is sp.pi:
        return arb.pi()
    if isinstance(expr, sp.Add):
        acc = arb(0)
        for a in expr.args:
            acc += to_arb(a, env)
        return acc
    if isinstance(expr, sp.Mul):
        acc = arb(1)
        for a in expr.args:
            acc *= to_arb(a, env)
        return acc
    if isinstance(expr, sp.Pow):
        base, ex = expr.args
        ex_val = exact_value(ex, env)
        b = to_arb(base, env)
        if ex_val is not None and ex_val.denominator == 1:
            e = int(ex_val)
            if e < 0:
                if b.contains(0):
                    raise Undecided("negative power of a ball containing 0")
                return (1 / b) ** (-e)
            return b**e
        if not b > 0:
            raise Undecided(f"non-integer power of a base not certainly positive: {base}")
        e = to_arb(ex, env)
        return (e * b.log()).exp()
    if isinstance(expr, sp.exp):
        return to_arb(expr.args[0], env).exp()
    if isinstance(expr, sp.Abs):
        return abs(to_arb(expr.args[0], env))
    if isinstance(expr, sp.log):
        x = to_arb(expr.args[0], env)
        if not x > 0:
            raise Undecided("log of a ball not certainly positive")
        return x.log()
    raise Undecided(f"cannot evaluate {type(expr).__name__}: {expr}")


def sign(expr: sp.Expr, env: Mapping[str, object]) -> int | None:
    """The sign (−1, 0, 1) of ``expr`` at ``env``, decided rigorously, or None."""
    ev = exact_value(expr, env)
    if ev is not None:
        return (ev > 0) - (ev < 0)
    old = ctx.prec
    try:
        for prec in PRECISIONS:
            ctx.prec = prec
            try:
                x = to_arb(expr, env)
            except Undecided:
                continue
            if x > 0:
                return 1
            if x < 0:
                return -1
        return None
    finally:
        ctx.prec = old


def decide(rel: sp.Basic, env: Mapping[str, object]) -> bool | None:
    """Decide a sympy relation (``<, <=, >, >=, Eq, Ne``, And/Or) at ``env``, or None."""
    if rel is sp.true or rel is True:
        return True
    if rel is sp.false or rel is False:
        return False
    if isinstance(rel, sp.And):
        vals = [decide(a, env) for a in rel.args]
        if any(v is False for v in vals):
            return False
        return None if any(v is None for v in vals) else True
    if isinstance(rel, sp.Or):
        vals = [decide(a, env) for a in rel.args]
        if any(v is True for v in vals):
            return True
        return None if any(v is None for v in vals) else False
    if not isinstance(rel, sp.core.relational.Relational):
        raise Undecided(f"not a relation: {rel}")
    s = sign(rel.lhs - rel.rhs, env)
    if s is None:
        return None
    if isinstance(rel, sp.Eq):
        return s == 0
    if isinstance(rel, sp.Ne):
        return s != 0
    if isinstance(rel, sp.StrictLessThan):
        return s < 0
    if isinstance(rel, sp.LessThan):
        return s <= 0
    if isinstance(rel, sp.StrictGreaterThan):
        return s > 0
    if isinstance(rel, sp.GreaterThan):
        return s >= 0
    raise Undecided(f"unknown relation {type(rel).__name__}")
