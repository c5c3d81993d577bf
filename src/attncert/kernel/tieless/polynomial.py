"""Exact polynomials over atoms, polynomials in N and rational matrices: the algebra
:mod:`attncert.kernel.tieless.program` runs a transformer in (trusted; issue 23).

A polynomial is a dict from monomials (sorted tuples of (atom, exponent)) to nonzero
``fmpq`` coefficients; an atom is a tuple whose first entry names its kind (N, I, B, U, S,
Z, R) and whose last entry is its position path (none for N). Every operation is exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flint import fmpq

Atom = tuple[Any, ...]
Mono = tuple[tuple[Atom, int], ...]
Poly = dict[Mono, fmpq]
NPoly = dict[int, fmpq]  # a polynomial in N with non-negative coefficients
ONE: Mono = ()


# ----- polynomials over atoms ----------------------------------------------------------------


def exact(x: float) -> fmpq:
    a, b = float(x).as_integer_ratio()
    return fmpq(a, b)


def const(c: fmpq | int) -> Poly:
    return {ONE: fmpq(c)} if c != 0 else {}


def atom(a: Atom, e: int = 1) -> Poly:
    return {((a, e),): fmpq(1)}


def add(*ps: Poly) -> Poly:
    out: Poly = {}
    for p in ps:
        for m, c in p.items():
            v = out.get(m, fmpq(0)) + c
            if v == 0:
                out.pop(m, None)
            else:
                out[m] = v
    return out


def scale(p: Poly, c: fmpq | int) -> Poly:
    c = fmpq(c)
    return {m: v * c for m, v in p.items()} if c != 0 else {}


def mono_mul(a: Mono, b: Mono) -> Mono:
    d: dict[Atom, int] = dict(a)
    for x, e in b:
        d[x] = d.get(x, 0) + e
    return tuple(sorted(d.items()))


def mul(p: Poly, q: Poly) -> Poly:
    out: Poly = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            m = mono_mul(m1, m2)
            v = out.get(m, fmpq(0)) + c1 * c2
            if v == 0:
                out.pop(m, None)
            else:
                out[m] = v
    return out


def subst(p: Poly, value: Any) -> Poly:
    """Replace each atom x by ``value(x)`` (a Poly) where that is not None."""
    out: Poly = {}
    for m, c in p.items():
        term = const(c)
        for x, e in m:
            v = value(x)
            factor = atom(x, e) if v is None else power(v, e)
            term = mul(term, factor)
        out = add(out, term)
    return out


def power(p: Poly, e: int) -> Poly:
    out = const(1)
    for _ in range(e):
        out = mul(out, p)
    return out


def path_of(x: Atom) -> tuple[str, ...]:
    return x[-1] if x[0] != "N" else ()


def with_path(x: Atom, p: tuple[str, ...]) -> Atom:
    return (*x[:-1], p)


def rebase(p: Poly, frm: str, to: tuple[str, ...]) -> Poly:
    """Move every atom at a position path starting at ``frm`` to ``to`` + the rest."""

    def value(x: Atom) -> Poly | None:
        pos = path_of(x)
        if pos and pos[0] == frm:
            return atom(with_path(x, (*to, *pos[1:])))
        return None

    return subst(p, value)


def is_integral(p: Poly) -> bool:
    """Integer coefficients and integer-valued atoms only (not U, not a real R)."""
    return all(c.q == 1 for c in p.values()) and all(x[0] not in "UR" for m in p for x, _ in m)


# ----- N-polynomials --------------------------------------------------------------------------


def nadd(a: NPoly, b: NPoly) -> NPoly:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, fmpq(0)) + v
    return out


def nmul(a: NPoly, b: NPoly) -> NPoly:
    out: NPoly = {}
    for k1, v1 in a.items():
        for k2, v2 in b.items():
            out[k1 + k2] = out.get(k1 + k2, fmpq(0)) + v1 * v2
    return out


def nmax(a: NPoly, b: NPoly) -> NPoly:
    return {k: max(a.get(k, fmpq(0)), b.get(k, fmpq(0))) for k in set(a) | set(b)}


# ----- matrices -------------------------------------------------------------------------------


def mat(m: np.ndarray) -> list[list[fmpq]]:
    return [[exact(v) for v in row] for row in np.asarray(m, dtype=np.float64)]


def transpose(a: list[list[fmpq]]) -> list[list[fmpq]]:
    return [list(c) for c in zip(*a, strict=True)] if a else []


def matmul(a: list[list[fmpq]], b: list[list[fmpq]]) -> list[list[fmpq]]:
    cols = transpose(b)
    return [[sum((x * y for x, y in zip(r, c, strict=True)), fmpq(0)) for c in cols] for r in a]
