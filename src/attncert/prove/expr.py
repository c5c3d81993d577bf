"""Position-local symbolic values: the "possible inputs" of a layer.

The decomposed prover (see :mod:`attncert.prove`) never reasons about whole strings.
At every layer boundary the hard (rounded) activation of a coordinate at position j
is a small term over *atoms at position j*:

* ``cat`` atoms — the input symbol x_j (an index into the alphabet);
* ``bool`` atoms — the truth value of a proved formula node at j (its coordinate was
  proved to hold exactly 0/1 = the node's value, so later layers see a free Boolean:
  an over-approximation of the strings, hence sound);
* ``int`` atoms — counts Σ_{j' < j} or Σ_{j' > j} of a 0/1 literal (what a uniform
  head averages), with their ranges [0, j−1] / [0, n−j].

Terms are exact (python-flint ``fmpq`` coefficients): :class:`Lin` (affine forms),
:class:`Ite` (if-then-else on a :class:`Cond`) and :class:`Sum`. They evaluate exactly
under an assignment (:func:`ev`), print as SMT-LIB (:func:`smt`), and give interval
ranges (:func:`bounds`). Nothing here imports a solver.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from flint import fmpq

ZERO = fmpq(0)
ONE = fmpq(1)


@dataclass(frozen=True)
class Atom:
    """A named variable of the abstraction: kind ``bool`` | ``int`` | ``cat`` with range."""

    name: str
    kind: str
    lo: int = 0
    hi: int = 1

    def values(self) -> range:
        return range(self.lo, self.hi + 1)

    def decl(self) -> str:
        if self.kind == "cat":  # one-hot Booleans: far faster in z3 than an Int with (= x v)
            return " ".join(f"(declare-fun {self.lit(v)} () Bool)" for v in self.values())
        sort = "Bool" if self.kind == "bool" else "Int"
        return f"(declare-fun {self.name} () {sort})"

    def lit(self, v: int) -> str:
        """SMT name of [this categorical atom = v]."""
        return f"{self.name}_{v}"

    def constraint(self) -> str | None:
        if self.kind == "bool":
            return None
        if self.kind == "cat":
            ls = [self.lit(v) for v in self.values()]
            if len(ls) == 1:
                return ls[0]
            amo = " ".join(f"(not (and {a} {b}))" for a, b in itertools.combinations(ls, 2))
            return f"(and (or {' '.join(ls)}) {amo})"
        return f"(<= {self.lo} {self.name} {self.hi})"


@dataclass(frozen=True)
class Var:
    """A numeric view of an atom: its value (bool → 0/1, int), or [atom = eq] (cat)."""

    atom: Atom
    eq: int | None = None

    def ev(self, asg: Mapping[Atom, int]) -> int:
        v = asg[self.atom]
        return int(v == self.eq) if self.eq is not None else int(v)

    def smt(self) -> str:
        a = self.atom
        if self.eq is not None:
            return f"(ite {a.lit(self.eq)} 1.0 0.0)"
        if a.kind == "bool":
            return f"(ite {a.name} 1.0 0.0)"
        return f"(to_real {a.name})"

    def smt_bool(self) -> str:
        """This 0/1 variable as a Boolean (bool atoms and indicators only)."""
        if self.eq is not None:
            return self.atom.lit(self.eq)
        if self.atom.kind == "bool":
            return self.atom.name
        raise TypeError("an int atom is not a Boolean")

    def bounds(self) -> tuple[int, int]:
        if self.eq is not None or self.atom.kind == "bool":
            return 0, 1
        return self.atom.lo, self.atom.hi


def num(x: fmpq) -> str:
    """SMT-LIB real literal of an exact rational."""
    x = fmpq(x)
    if x < 0:
        return f"(- {num(-x)})"
    p, q = int(x.p), int(x.q)
    return f"{p}.0" if q == 1 else f"(/ {p}.0 {q}.0)"


# ----- terms ---------------------------------------------------------------------------------


class Term:
    __slots__ = ()


class Lin(Term):
    """const + Σ coef·var (exact)."""

    __slots__ = ("coefs", "const")

    def __init__(self, const: fmpq = ZERO, coefs: Mapping[Var, fmpq] | None = None):
        self.const = fmpq(const)
        self.coefs = {v: fmpq(c) for v, c in (coefs or {}).items() if c != 0}

    def is_const(self) -> bool:
        return not self.coefs

    def __repr__(self) -> str:
        return f"Lin({self.const}, {self.coefs})"


class Ite(Term):
    __slots__ = ("cond", "other", "then")

    def __init__(self, cond: Cond, then: Term, other: Term):
        self.cond, self.then, self.other = cond, then, other


class Sum(Term):
    """Σ coef·term + lin (terms are Ite's; the affine part is kept in ``lin``)."""

    __slots__ = ("lin", "parts")

    def __init__(self, lin: Lin, parts: tuple[tuple[fmpq, Term], ...]):
        self.lin, self.parts = lin, parts


class Cond:
    __slots__ = ()


class CTrue(Cond):
    __slots__ = ("value",)

    def __init__(self, value: bool):
        self.value = value


class CVar(Cond):
    """A 0/1 variable is 1 (``positive``) or 0."""

    __slots__ = ("positive", "var")

    def __init__(self, var: Var, positive: bool = True):
        self.var, self.positive = var, positive


class CCmp(Cond):
    """term op 0, op ∈ {">", ">=", "="}."""

    __slots__ = ("op", "term")

    def __init__(self, term: Term, op: str):
        self.term, self.op = term, op


class CAnd(Cond):
    __slots__ = ("parts",)

    def __init__(self, parts: tuple[Cond, ...]):
        self.parts = parts


def const(x) -> Lin:
    return Lin(fmpq(x))


def var(v: Var, coef: fmpq = ONE) -> Lin:
    return Lin(ZERO, {v: coef})


def _lin_add(a: Lin, b: Lin, cb: fmpq = ONE) -> Lin:
    coefs = dict(a.coefs)
    for v, c in b.coefs.items():
        coefs[v] = coefs.get(v, ZERO) + cb * c
    return Lin(a.const + cb * b.const, coefs)


def scale(t: Term, c: fmpq) -> Term:
    c = fmpq(c)
    if c == 0:
        return Lin()
    if c == 1:
        return t
    if isinstance(t, Lin):
        return Lin(t.const * c, {v: k * c for v, k in t.coefs.items()})
    if isinstance(t, Sum):
        return Sum(scale(t.lin, c), tuple((k * c, p) for k, p in t.parts))  # type: ignore[arg-type]
    return Sum(Lin(), ((c, t),))


def add(a: Term, b: Term, cb: fmpq = ONE) -> Term:
    """a + cb·b."""
    cb = fmpq(cb)
    if cb == 0:
        return a
    la, pa = _split(a)
    lb, pb = _split(b)
    lin = _lin_add(la, lb, cb)
    parts = pa + tuple((k * cb, p) for k, p in pb)
    return lin if not parts else Sum(lin, parts)


def linear(terms: Iterable[tuple[fmpq, Term]], c0: fmpq = ZERO) -> Term:
    out: Term = const(c0)
    for c, t in terms:
        if c != 0:
            out = add(out, t, c)
    return out


def _split(t: Term) -> tuple[Lin, tuple[tuple[fmpq, Term], ...]]:
    if isinstance(t, Lin):
        return t, ()
    if isinstance(t, Sum):
        return t.lin, t.parts
    return Lin(), ((ONE, t),)


def ite(c: Cond, a: Term, b: Term) -> Term:
    if isinstance(c, CTrue):
        return a if c.value else b
    if isinstance(a, Lin) and isinstance(b, Lin) and a.is_const() and b.is_const():
        if a.const == b.const:
            return a
        if isinstance(c, CVar):  # b + (a − b)·[var]  (stays affine)
            hi, lo = (a, b) if c.positive else (b, a)
            return Lin(lo.const, {c.var: hi.const - lo.const})
    return Ite(c, a, b)


def cmp(t: Term, op: str) -> Cond:
    if isinstance(t, Lin) and t.is_const():
        x = t.const
        return CTrue(x > 0 if op == ">" else x >= 0 if op == ">=" else x == 0)
    lo, hi = bounds(t)
    if op == ">":
        if lo > 0:
            return CTrue(True)
        if hi <= 0:
            return CTrue(False)
    elif op == ">=":
        if lo >= 0:
            return CTrue(True)
        if hi < 0:
            return CTrue(False)
    return CCmp(t, op)


def relu(t: Term) -> Term:
    c = cmp(t, ">")
    if isinstance(c, CTrue):
        return t if c.value else Lin()
    if (
        isinstance(t, Lin)
        and len(t.coefs) <= 6
        and all(v.eq is not None or v.atom.kind == "bool" for v in t.coefs)
    ):
        fit = _affine_fit(t, lambda x: x if x > 0 else ZERO)
        if fit is not None:
            return fit
    return Ite(c, t, Lin())


def _affine_fit(t: Lin, fn) -> Lin | None:
    """fn(t) as an affine form in t's 0/1 variables, if it is one (checked on every
    assignment; indicators of one categorical atom are handled jointly)."""
    vs = list(t.coefs)
    base = {v: 0 for v in vs}

    def val(asg: dict) -> fmpq:
        x = t.const
        for v, c in t.coefs.items():
            x += c * asg[v]
        return fn(x)

    f0 = val(base)
    slopes = {}
    for v in vs:
        asg = dict(base)
        asg[v] = 1
        slopes[v] = val(asg) - f0
    for bits in itertools.product((0, 1), repeat=len(vs)):
        asg = dict(zip(vs, bits, strict=True))
        on = [v.atom.name for v, b in asg.items() if b and v.eq is not None]
        if len(on) != len(set(on)):  # indicators of one symbol position are exclusive
            continue
        want = val(asg)
        got = f0 + sum((slopes[v] * b for v, b in asg.items()), ZERO)
        if want != got:
            return None
    return Lin(f0, slopes)


# ----- evaluation, printing, ranges ----------------------------------------------------------


def ev(t: Term, asg: Mapping[Atom, int]) -> fmpq:
    if isinstance(t, Lin):
        out = t.const
        for v, c in t.coefs.items():
            x = v.ev(asg)
            if x:
                out += c * x
        return out
    if isinstance(t, Ite):
        return ev(t.then, asg) if evc(t.cond, asg) else ev(t.other, asg)
    if isinstance(t, Sum):
        out = ev(t.lin, asg)
        for c, p in t.parts:
            out += c * ev(p, asg)
        return out
    raise TypeError(t)


def evc(c: Cond, asg: Mapping[Atom, int]) -> bool:
    if isinstance(c, CTrue):
        return c.value
    if isinstance(c, CVar):
        return bool(c.var.ev(asg)) == c.positive
    if isinstance(c, CCmp):
        x = ev(c.term, asg)
        return x > 0 if c.op == ">" else x >= 0 if c.op == ">=" else x == 0
    if isinstance(c, CAnd):
        return all(evc(p, asg) for p in c.parts)
    raise TypeError(c)


def smt(t: Term) -> str:
    if isinstance(t, Lin):
        items = [num(t.const)] if t.const != 0 or not t.coefs else []
        for v, c in t.coefs.items():
            items.append(v.smt() if c == 1 else f"(* {num(c)} {v.smt()})")
        return items[0] if len(items) == 1 else f"(+ {' '.join(items)})"
    if isinstance(t, Ite):
        return f"(ite {smtc(t.cond)} {smt(t.then)} {smt(t.other)})"
    if isinstance(t, Sum):
        items = [smt(t.lin)] + [smt(p) if c == 1 else f"(* {num(c)} {smt(p)})" for c, p in t.parts]
        return f"(+ {' '.join(items)})"
    raise TypeError(t)


def smtc(c: Cond) -> str:
    if isinstance(c, CTrue):
        return "true" if c.value else "false"
    if isinstance(c, CVar):
        s = c.var.smt_bool()
        return s if c.positive else f"(not {s})"
    if isinstance(c, CCmp):
        op = {">": ">", ">=": ">=", "=": "="}[c.op]
        return f"({op} {smt(c.term)} 0.0)"
    if isinstance(c, CAnd):
        return "(and " + " ".join(smtc(p) for p in c.parts) + ")"
    raise TypeError(c)


def bounds(t: Term) -> tuple[fmpq, fmpq]:
    """Exact interval enclosure of the term over the atoms' ranges."""
    if isinstance(t, Lin):
        lo = hi = t.const
        for v, c in t.coefs.items():
            a, b = v.bounds()
            if c > 0:
                lo, hi = lo + c * a, hi + c * b
            else:
                lo, hi = lo + c * b, hi + c * a
        return lo, hi
    if isinstance(t, Ite):
        a, b = bounds(t.then), bounds(t.other)
        return min(a[0], b[0]), max(a[1], b[1])
    if isinstance(t, Sum):
        lo, hi = bounds(t.lin)
        for c, p in t.parts:
            a, b = bounds(p)
            if c > 0:
                lo, hi = lo + c * a, hi + c * b
            else:
                lo, hi = lo + c * b, hi + c * a
        return lo, hi
    raise TypeError(t)


def atoms(t: Term | Cond, out: set[Atom] | None = None) -> set[Atom]:
    out = set() if out is None else out
    if isinstance(t, Lin):
        out.update(v.atom for v in t.coefs)
    elif isinstance(t, Ite):
        atoms(t.cond, out)
        atoms(t.then, out)
        atoms(t.other, out)
    elif isinstance(t, Sum):
        atoms(t.lin, out)
        for _, p in t.parts:
            atoms(p, out)
    elif isinstance(t, CVar):
        out.add(t.var.atom)
    elif isinstance(t, CCmp):
        atoms(t.term, out)
    elif isinstance(t, CAnd):
        for p in t.parts:
            atoms(p, out)
    return out


def is_const(t: Term) -> bool:
    return isinstance(t, Lin) and t.is_const()


def assignments(ats: Iterable[Atom]) -> Iterator[dict[Atom, int]]:
    """Every assignment of the atoms (product of their ranges)."""
    ats = sorted(ats, key=lambda a: a.name)
    for vals in itertools.product(*(a.values() for a in ats)):
        yield dict(zip(ats, vals, strict=True))


def n_assignments(ats: Iterable[Atom]) -> int:
    out = 1
    for a in ats:
        out *= a.hi - a.lo + 1
    return out


def table(cases: list[tuple[dict[Atom, int], Term]]) -> Term:
    """An if-then-else chain selecting ``term`` when the atoms take ``assignment`` (the last
    case is the default). Single-int-atom tables that are affine collapse to a :class:`Lin`."""
    if len(cases) == 1:
        return cases[0][1]
    ats = set(cases[0][0])
    if len(ats) == 1 and all(is_const(t) for _, t in cases):
        (a,) = ats
        if a.kind != "int":  # Σ_v value_v·[a = v] (bool atoms: value₀ + Δ·a)
            vals = {asg[a]: t.const for asg, t in cases}  # type: ignore[attr-defined]
            if a.kind == "bool":
                return Lin(vals[0], {Var(a): vals[1] - vals[0]})
            return Lin(ZERO, {Var(a, v): x for v, x in vals.items()})
        pts = [(asg[a], t.const) for asg, t in cases]  # type: ignore[attr-defined]
        (x0, y0), (x1, y1) = pts[0], pts[1]
        slope = (y1 - y0) / (x1 - x0)
        if all(y == y0 + slope * (x - x0) for x, y in pts):
            return Lin(y0 - slope * x0, {Var(a): slope})
    out = cases[-1][1]
    for asg, t in reversed(cases[:-1]):
        out = Ite(_asg_cond(asg), t, out)
    return out


def normalize(t: Term, limit: int = 512) -> Term:
    """An equivalent affine form when ``t`` depends on a single atom (checked on every value
    of the atom); otherwise ``t`` unchanged."""
    if isinstance(t, Lin):
        return t
    ats = atoms(t)
    if len(ats) != 1 or n_assignments(ats) > limit:
        return t
    cases = [(asg, const(ev(t, asg))) for asg in assignments(ats)]
    if len(cases) == 1:
        return cases[0][1]
    out = table(cases)
    return out if isinstance(out, Lin) else t


def _asg_cond(asg: Mapping[Atom, int]) -> Cond:
    parts: list[Cond] = []
    for a, v in asg.items():
        if a.kind == "bool":
            parts.append(CVar(Var(a), bool(v)))
        elif a.kind == "cat":
            parts.append(CVar(Var(a, v), True))
        else:
            parts.append(CCmp(Lin(fmpq(-v), {Var(a): ONE}), "="))
    return parts[0] if len(parts) == 1 else CAnd(tuple(parts))


def asg_smt(asg: Mapping[Atom, int]) -> str:
    """SMT condition 'the atoms take these values'."""
    return smtc(_asg_cond(asg)) if asg else "true"
