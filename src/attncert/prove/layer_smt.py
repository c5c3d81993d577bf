"""The SMT-LIB text of one layer at one row: steps (a)+(d) and the exactness query.

A :class:`LayerSnapshot` freezes what one layer's queries read — the terms and error
bounds of every coordinate before the layer, the hard attention outputs and their error
bounds, and which head writes where — and writes, for a row i,

* :meth:`LayerSnapshot.agreement_text`: "some claimed coordinate, computed by the layer's
  FFN from the hard values plus any errors |δ| ≤ ε, differs from its formula's value";
  ``unsat`` proves (a) and (d) together;
* :meth:`LayerSnapshot.exactness_text`: "the FFN output of these coordinates with input
  errors differs from the one without"; ``unsat`` shows the FFN rounds the error away.

Every query is self-contained text (z3 or any SMT solver can re-run it alone).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flint import fmpq

from attncert.logic import syntax as s
from attncert.prove import expr as E
from attncert.prove.semantics import SemEncoder, atom_decls
from attncert.prove.structure import Claim, LayerW

# coordinate -> [(head, value row, coefficient)]: what the attention sublayer adds to it
HeadWrites = dict[int, list[tuple[int, int, fmpq]]]


def head_writes_of(lw: LayerW) -> HeadWrites:
    """Which heads' value rows are added to which coordinates (with their coefficients)."""
    out: HeadWrites = {}
    for hi, hw in enumerate(lw.heads):
        for r, col in enumerate(hw.wo_cols):
            for c, w in col.items():
                out.setdefault(c, []).append((hi, r, w))
    return out


@dataclass(frozen=True)
class LayerSnapshot:
    """One layer at one length, as its queries see it (see the module docstring)."""

    lw: LayerW
    n: int
    vals: Any  # vals[c][j−1]: term of coordinate c at position j before the layer
    errs: Any  # errs[c][j−1]: its exact error bound (absent: 0)
    outs: Any  # outs[head][j−1][r]: hard attention output term
    eps: Any  # eps[head][j−1][r]: its error bound
    head_writes: HeadWrites

    def defs(self, i: int, coords, zero: bool, sfx: str, ats: set[E.Atom]) -> list[str]:
        """SMT definitions of the layer at row i up to the outputs O{c}{sfx} of ``coords``
        (``zero``: every error bound taken as 0, i.e. the hard computation)."""
        lw, n, hw_of = self.lw, self.n, self.head_writes
        units = sorted({u for c in coords for u in lw.w2_rows.get(c, {})})
        need = set(coords) | {c for u in units for c in lw.w1[u]}
        heads_needed = sorted({(hi, r) for c in need for hi, r, _ in hw_of.get(c, [])})
        body: list[str] = []
        for hi, r in heads_needed:
            t = self.outs[hi][i - 1][r]
            E.atoms(t, ats)
            body.append(f"(define-fun H{hi}_{r}{sfx} () Real {E.smt(t)})")
            e = fmpq(0) if zero else self.eps[hi][i - 1][r]
            if e > 0:
                body.append(f"(declare-fun dH{hi}_{r}{sfx} () Real)")
                body.append(f"(assert (<= {E.num(-e)} dH{hi}_{r}{sfx} {E.num(e)}))")
        for c in sorted(need):
            t = self.vals[c][i - 1]
            t = E.const(0) if t is None else t
            E.atoms(t, ats)
            parts = [E.smt(t)]
            e = fmpq(0) if zero else self.errs.get(c, [fmpq(0)] * n)[i - 1]
            if e > 0:
                body.append(f"(declare-fun dY{c}{sfx} () Real)")
                body.append(f"(assert (<= {E.num(-e)} dY{c}{sfx} {E.num(e)}))")
                parts.append(f"dY{c}{sfx}")
            for hi, r, w in hw_of.get(c, []):
                he = fmpq(0) if zero else self.eps[hi][i - 1][r]
                h = f"(+ H{hi}_{r}{sfx} dH{hi}_{r}{sfx})" if he > 0 else f"H{hi}_{r}{sfx}"
                parts.append(h if w == 1 else f"(* {E.num(w)} {h})")
            body.append(f"(define-fun Y{c}{sfx} () Real {_sum(parts)})")
        for u in units:
            terms = [
                f"(* {E.num(w)} Y{c}{sfx})" if w != 1 else f"Y{c}{sfx}" for c, w in lw.w1[u].items()
            ]
            pre = _sum([*terms, E.num(lw.b1[u])])
            body.append(f"(define-fun U{u}{sfx} () Real (let ((p {pre})) (ite (> p 0.0) p 0.0)))")
        for c in sorted(coords):
            parts = [f"Y{c}{sfx}"]
            parts += [f"(* {E.num(w)} U{u}{sfx})" for u, w in lw.w2_rows.get(c, {}).items()]
            if c in lw.b2:
                parts.append(E.num(lw.b2[c]))
            body.append(f"(define-fun O{c}{sfx} () Real {_sum(parts)})")
        return body

    def agreement_text(
        self,
        i: int,
        claims: list[Claim],
        *,
        symbols: Mapping[str, int],
        leaves: Mapping[s.Formula, int],
        rounded_only: Callable[[Claim], bool],
        zero_errors: bool = False,
    ) -> str:
        """(a)+(d): some claimed coordinate ≠ its formula's value at row i (negated goal).

        A claim for which ``rounded_only`` holds (the final output) need only agree after
        rounding at ½; every other claim is read by later layers as an exact Boolean."""
        ats: set[E.Atom] = set()
        coords = {cl.coord for cl in claims}
        body = self.defs(i, coords, zero_errors, "", ats)
        enc = SemEncoder(self.n, symbols, leaves)
        conj = []
        for cl in claims:
            sem = enc.bool(cl.formula, i)
            if rounded_only(cl):
                conj.append(f"(= (> O{cl.coord} (/ 1.0 2.0)) {sem})")
            else:
                conj.append(f"(= O{cl.coord} (ite {sem} 1.0 0.0))")
        ats |= enc.atoms
        goal = f"(and {' '.join(conj)})" if len(conj) > 1 else conj[0]
        return "\n".join(
            [*atom_decls(ats), *body, *enc.defs, f"(assert (not {goal}))", "(check-sat)"]
        )

    def exactness_text(self, i: int, coords) -> str:
        """The FFN output of ``coords`` with input errors equals the one without (negated)."""
        ats: set[E.Atom] = set()
        body = self.defs(i, coords, False, "e", ats)
        body += self.defs(i, coords, True, "h", ats)
        conj = [f"(= O{c}e O{c}h)" for c in sorted(coords)]
        goal = f"(and {' '.join(conj)})" if len(conj) > 1 else conj[0]
        return "\n".join([*atom_decls(ats), *body, f"(assert (not {goal}))", "(check-sat)"])


def _sum(parts: list[str]) -> str:
    parts = [x for x in parts if x not in ("0.0",)] or ["0.0"]
    return parts[0] if len(parts) == 1 else f"(+ {' '.join(parts)})"
