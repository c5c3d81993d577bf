"""SMT-LIB encoding of a formula's semantics at a position (Yang et al. Defs. 10, 14, 19).

:class:`SemEncoder` turns "φ holds at position j of a length-n string" into SMT-LIB
definitions over the atoms of :mod:`attncert.prove.expr`:

* the input symbol x_j (Int in [0, |Σ|−1]) for atoms Q_a;
* *leaves*: subformulas whose coordinate was already proved to equal them; they are
  free Booleans ``b{k}_{j}`` (claim k at j) — the abstraction that keeps queries
  small (every string gives some assignment, so proofs over all assignments are sound);
* count atoms ``cL_{lit}_{j}`` / ``cR_{lit}_{j}`` = |{j' < j : lit}| / |{j' > j : lit}|,
  shared with the uniform heads that average the same literal.

Since/until use the recurrences S(j) = ψ(j−1) ∨ (φ(j−1) ∧ S(j−1)) with one
``define-fun`` per position (linear size). Numerical predicates on counts are finite
disjunctions (ODD(c) ⇔ c = 1 ∨ c = 3 ∨ …), never mod/XOR chains, which make z3 blow up.
"""

from __future__ import annotations

from collections.abc import Mapping

from attncert.errors import UnsupportedError
from attncert.logic import syntax as s
from attncert.logic.numpred import predicate
from attncert.prove.expr import Atom, Var


def sym_atom(j: int, n_symbols: int) -> Atom:
    return Atom(f"x{j}", "cat", 0, n_symbols - 1)


def claim_atom(k: int, j: int) -> Atom:
    return Atom(f"b{k}_{j}", "bool")


def count_atom(lit: str, side: str, j: int, n: int) -> Atom:
    """|{j' < j : lit}| (side "L") or |{j' > j : lit}| (side "R")."""
    hi = j - 1 if side == "L" else n - j
    return Atom(f"c{side}_{lit}_{j}", "int", 0, hi)


class SemEncoder:
    """Definitions of subformula values at positions, for one query at length ``n``.

    ``leaves`` maps a proved subformula to its claim index; ``symbols`` maps an alphabet
    symbol to its index. ``bool(f, j)`` returns an SMT Boolean expression (a name or a
    literal) and records the definitions and atoms it needs."""

    def __init__(self, n: int, symbols: Mapping[str, int], leaves: Mapping[s.Formula, int]):
        self.n = n
        self.symbols = symbols
        self.leaves = leaves
        self.defs: list[str] = []
        self.atoms: set[Atom] = set()
        self.memo: dict[tuple[int, int], str] = {}
        self.ids: dict[s.Formula, int] = {}

    # ----- helpers ---------------------------------------------------------------------
    def _id(self, f: s.Formula) -> int:
        k = self.ids.get(f)
        if k is None:
            k = self.ids[f] = len(self.ids)
        return k

    def literal(self, f: s.Formula, j: int) -> tuple[str, str] | None:
        """(count-atom key, SMT Boolean) when ``f`` is an input atom or a proved leaf."""
        if isinstance(f, s.Atom):
            if f.symbol not in self.symbols:
                return None
            idx = self.symbols[f.symbol]
            a = sym_atom(j, len(self.symbols))
            self.atoms.add(a)
            return f"s{idx}", a.lit(idx)
        k = self.leaves.get(f)
        if k is not None:
            a = claim_atom(k, j)
            self.atoms.add(a)
            return f"b{k}", a.name
        return None

    def _define(self, f: s.Formula, j: int, body: str, sort: str = "Bool") -> str:
        name = f"f{self._id(f)}_{j}"
        self.defs.append(f"(define-fun {name} () {sort} {body})")
        return name

    # ----- Boolean formulas ----------------------------------------------------------------
    def bool(self, f: s.Formula, j: int) -> str:
        key = (self._id(f), j)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        lit = self.literal(f, j) if f in self.leaves else None
        if lit is not None:
            out = lit[1]
        elif isinstance(f, (s.Since, s.Until)):
            out = self._temporal(f, j)
        else:
            out = self._bool(f, j)
        self.memo[key] = out
        return out

    def _bool(self, f: s.Formula, j: int) -> str:
        n = self.n
        if isinstance(f, s.Top):
            return "true"
        if isinstance(f, s.Bottom):
            return "false"
        if isinstance(f, s.First):
            return "true" if j == 1 else "false"
        if isinstance(f, s.Last):
            return "true" if j == n else "false"
        if isinstance(f, s.PosPred):
            return "true" if predicate(f.pred)(j, n) else "false"
        lit = self.literal(f, j)
        if lit is not None:
            return lit[1]
        if isinstance(f, s.Atom):
            return "false"  # a symbol outside the alphabet never occurs
        if isinstance(f, s.Not):
            return f"(not {self.bool(f.arg, j)})"
        if isinstance(f, (s.And, s.Or)):
            a, b = self.bool(f.left, j), self.bool(f.right, j)
            return self._define(f, j, f"({'and' if isinstance(f, s.And) else 'or'} {a} {b})")
        if isinstance(f, s.Prev):
            return self.bool(f.arg, j - 1) if j > 1 else "false"
        if isinstance(f, s.Next):
            return self.bool(f.arg, j + 1) if j < n else "false"
        if isinstance(f, s.Compare):
            left, op, right = self._linear(f.left, j), f.op.value, self._linear(f.right, j)
            body = {
                "<": f"(< {left} {right})",
                "<=": f"(<= {left} {right})",
                "=": f"(= {left} {right})",
                "!=": f"(not (= {left} {right}))",
                ">=": f"(>= {left} {right})",
                ">": f"(> {left} {right})",
            }[op]
            return self._define(f, j, body)
        if isinstance(f, s.CountPred):
            theta = predicate(f.pred)
            c = self.count(f.term, j)
            hi = j if isinstance(f.term, s.CountLeft) else n - j + 1
            vals = [v for v in range(hi + 1) if theta(v, n)]
            if not vals:
                return "false"
            if len(vals) == hi + 1:
                return "true"
            body = "(or " + " ".join(f"(= {c} {v})" for v in vals) + ")"
            return self._define(f, j, body if len(vals) > 1 else f"(= {c} {vals[0]})")
        raise UnsupportedError(f"no SMT semantics for {f!r}", where="formula")

    def _temporal(self, f: s.Since | s.Until, j: int) -> str:
        """Iterative recurrence, memoised per position (linear size, no deep recursion)."""
        since = isinstance(f, s.Since)
        step = -1 if since else 1
        start = 1 if since else self.n
        fid = self._id(f)
        # walk from the boundary to j, defining each position once
        pos = start
        prev = "false"
        while True:
            key = (fid, pos)
            hit = self.memo.get(key)
            if hit is None:
                if pos == start:
                    hit = "false"
                else:
                    q = pos + step
                    psi, phi = self.bool(f.right, q), self.bool(f.left, q)
                    hit = self._define(f, pos, f"(or {psi} (and {phi} {prev}))")
                self.memo[key] = hit
            prev = hit
            if pos == j:
                return hit
            pos -= step

    # ----- counts ----------------------------------------------------------------------
    def count(self, t: s.CountTerm, j: int) -> str:
        """SMT Int value of a count term at j."""
        left = isinstance(t, s.CountLeft)
        lit = self.literal(t.arg, j)
        if lit is not None:
            key, here = lit
            a = count_atom(key, "L" if left else "R", j, self.n)
            self.atoms.add(a)
            return f"(+ {a.name} (ite {here} 1 0))"
        rng = range(1, j + 1) if left else range(j, self.n + 1)
        parts = [f"(ite {self.bool(t.arg, q)} 1 0)" for q in rng]
        return parts[0] if len(parts) == 1 else "(+ " + " ".join(parts) + ")"

    def _linear(self, lin: s.Linear, j: int) -> str:
        parts = [str(lin.const)] if lin.const >= 0 else [f"(- {-lin.const})"]
        for c, t in lin.terms:
            v = self.count(t, j)
            parts.append(v if c == 1 else f"(* {c if c >= 0 else f'(- {-c})'} {v})")
        return parts[0] if len(parts) == 1 else "(+ " + " ".join(parts) + ")"


def atom_decls(atoms: set[Atom]) -> list[str]:
    out = []
    for a in sorted(atoms, key=lambda a: a.name):
        out.append(a.decl())
        c = a.constraint()
        if c:
            out.append(f"(assert {c})")
    return out


__all__ = ["SemEncoder", "Var", "atom_decls", "claim_atom", "count_atom", "sym_atom"]
