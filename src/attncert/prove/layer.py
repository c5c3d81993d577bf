"""The decomposed proof at one length n (steps (a)–(d) for every layer and row).

:class:`LengthProver` walks the layers once. At each layer boundary every live
coordinate at every position is a term over position atoms (:mod:`attncert.prove.expr`)
plus an exact error bound (0 for exact coordinates). For each layer:

1. every head's hard output is computed per query row by :mod:`attncert.prove.gaps`
   (decision list / table / sign case) together with its gap staircase — the gap
   certificate over the layer's possible inputs (b); sign heads' |z| ≥ δ is proved by
   one z3 query per (n, head) (:mod:`attncert.prove.layer_attention`);
2. :func:`attncert.prove.intervals.staircase_bound` turns staircase and β(N) into an
   exact error bound ε per row and value coordinate (c);
3. for every claim checked at this layer and every row, one z3 query asserts that some
   claimed coordinate, computed by the layer's FFN from the hard values plus any errors
   |δ| ≤ ε, differs from the formula's value (query text in
   :mod:`attncert.prove.layer_smt`, semantics in :mod:`attncert.prove.semantics`);
   ``unsat`` proves (a) and (d) together;
4. proved claim coordinates are replaced by free Boolean atoms; other live coordinates
   keep their terms and get errors by Lipschitz bounds (ReLU is 1-Lipschitz), or 0 if a
   z3 exactness query shows the FFN rounds their error away.

A ``sat`` answer gives the atom values of a candidate counterexample (the caller turns
it into a string and re-checks it with interval arithmetic); :class:`Unsupported` and
:class:`PossibleTie` stop the structured proof for this length.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flint import fmpq

from attncert.logic import syntax as s
from attncert.logic.numpred import predicate
from attncert.model.positional import PosFeature
from attncert.prove import expr as E
from attncert.prove import gaps as G
from attncert.prove.layer_attention import HeadStats, SignRow, hard_attention
from attncert.prove.layer_smt import LayerSnapshot, head_writes_of
from attncert.prove.semantics import atom_decls, claim_atom, sym_atom
from attncert.prove.smt import QueryRecord, solve
from attncert.prove.structure import Claim, Plan

Unsupported = G.Unsupported
PossibleTie = G.PossibleTie

__all__ = ["Failure", "HeadStats", "LengthProver", "PossibleTie", "Unsupported"]


@dataclass
class Failure:
    """A sat agreement query: the claim, the row and the model's atom values."""

    claim: Claim
    row: int
    model: dict[str, Any]
    robust_only: bool  # the hard computation agrees; only the error bound is too large
    query: QueryRecord


class _Lits:
    """Count-atom literal keys of 0/1 variables at a position (for uniform heads)."""

    def __init__(self, n_symbols: int):
        self.n_symbols = n_symbols

    def __call__(self, v: E.Var, j: int) -> str | None:
        a = v.atom
        if a.kind == "cat" and v.eq is not None and a.name == f"x{j}":
            return f"s{v.eq}"
        if a.kind == "bool" and a.name.endswith(f"_{j}") and a.name.startswith("b"):
            return a.name[: -len(f"_{j}")]
        return None

    def var_at(self, lit: str, i: int) -> E.Var:
        if lit.startswith("s"):
            return E.Var(sym_atom(i, self.n_symbols), int(lit[1:]))
        return E.Var(claim_atom(int(lit[1:]), i))


class LengthProver:
    """Steps (a)–(d) for all layers at one length ``n`` (see module docstring)."""

    def __init__(
        self,
        plan: Plan,
        n: int,
        *,
        last_only: bool = False,
        timeout_ms: int = 60_000,
        smt2_dir: Path | None = None,
        log: Callable[[QueryRecord], None] | None = None,
        strict_ties: bool = False,
        skip_target: bool = False,
    ):
        self.strict_ties = strict_ties
        self.skip_target = skip_target
        self.plan = plan
        self.n = n
        self.last_only = last_only
        self.timeout_ms = timeout_ms
        self.smt2_dir = smt2_dir
        self.records: list[QueryRecord] = []
        self.head_stats: list[HeadStats] = []
        self.failure: Failure | None = None
        self.unknown: str | None = None
        self.leaves: dict[s.Formula, int] = {}
        self.lits = _Lits(len(plan.alphabet))
        self._log = log

    # ----- bookkeeping ---------------------------------------------------------------------
    def _record(self, rec: QueryRecord) -> None:
        self.records.append(rec)
        if self._log:
            self._log(rec)

    def _query(self, kind: str, text: str, layer: int, head: int | None, row: int | None):
        name = f"n{self.n}_{kind}_L{layer}" + (f"_h{head}" if head is not None else "")
        name += f"_r{row}" if row is not None else ""
        rec, model = solve(text, name, kind, self.timeout_ms, self.smt2_dir)
        rec.n, rec.layer, rec.head, rec.row = self.n, layer, head, row
        self._record(rec)
        return rec, model

    # ----- layer 0 -------------------------------------------------------------------------
    def embed(self) -> list[list[E.Term | None]]:
        """vals[c][j−1]: the layer-0 term of coordinate c at position j."""
        p, n = self.plan, self.n
        nsym = len(p.alphabet)
        feats = [PosFeature(f.name, f.param) for f in p.features]
        fvals = [[fmpq(*_ratio(f.exact(j, n))) for f in feats] for j in range(1, n + 1)]
        vals: list[list[E.Term | None]] = []
        for c in range(p.d):
            col = p.word[c]
            row = p.pos[c]
            out: list[E.Term | None] = []
            for j in range(1, n + 1):
                c0 = sum((coef * fvals[j - 1][f] for f, coef in row.items()), fmpq(0))
                if all(w == col[0] for w in col):
                    out.append(E.const(c0 + col[0]))
                else:
                    x = sym_atom(j, nsym)
                    out.append(E.Lin(c0, {E.Var(x, k): w for k, w in enumerate(col) if w != 0}))
            vals.append(out)
        return vals

    def check_level0(self, vals, claims: list[Claim]) -> bool:
        """Level-0 claims are decided exactly: the embedding column vs the formula."""
        p, n = self.plan, self.n
        nsym = len(p.alphabet)
        t0 = time.perf_counter()
        for cl in claims:
            for j in range(1, n + 1):
                term = vals[cl.coord][j - 1]
                for k in range(nsym):
                    got = E.ev(term, {sym_atom(j, nsym): k})
                    want = _local_truth(cl.formula, j, n, p.alphabet[k])
                    if want is None:
                        raise Unsupported(f"claim {cl.text!r} at level 0 is not local")
                    if got != (1 if want else 0):
                        string = p.alphabet[k] * n
                        self.failure = Failure(
                            cl,
                            j,
                            {"string": string},
                            False,
                            QueryRecord("level0", None, "sat", time.perf_counter() - t0),
                        )
                        return False
        self._record(QueryRecord("level0", None, "unsat", time.perf_counter() - t0, n=n, layer=0))
        return True

    # ----- main walk -------------------------------------------------------------------------
    def run(self) -> bool:
        p, n = self.plan, self.n
        vals = self.embed()
        errs: dict[int, list[fmpq]] = {}
        by_level: dict[int, list[Claim]] = {}
        for cl in p.claims:
            if not (cl.target and self.skip_target):
                by_level.setdefault(cl.level, []).append(cl)
        if not self.check_level0(vals, by_level.get(0, [])):
            return False
        target = next(c for c in p.claims if c.target)
        for li in range(len(p.layers)):
            level = li + 1
            outs, eps = self.attention(li, vals, errs)
            if outs is None:
                return False
            ok = self.ffn(li, vals, errs, outs, eps, by_level.get(level, []))
            if not ok:
                return False
            live = p.live_after(level, target.coord)
            for c in range(p.d):
                if c not in live:
                    vals[c] = [None] * n
                    errs.pop(c, None)
        return True

    # ----- attention -------------------------------------------------------------------------
    def attention(self, li: int, vals, errs):
        """Hard outputs per head/row/value row and their error bounds
        (:func:`attncert.prove.layer_attention.hard_attention`)."""
        return hard_attention(
            self.plan,
            li,
            self.n,
            vals,
            errs,
            self.lits,
            strict_ties=self.strict_ties,
            head_stats=self.head_stats,
            check_sign=lambda hi, rows: self.sign_query(li, hi, rows),
        )

    def sign_query(self, li: int, hi: int, rows: list[SignRow]) -> bool:
        """(b) for sign heads: one z3 query proving |z_i| ≥ δ_i for every row i."""
        ats: set[E.Atom] = set()
        parts = []
        for _i, z, delta in rows:
            E.atoms(z, ats)
            zs = E.smt(z)
            parts.append(f"(and (< {E.num(-delta)} {zs}) (< {zs} {E.num(delta)}))")
        text = "\n".join([*atom_decls(ats), f"(assert (or {' '.join(parts)}))", "(check-sat)"])
        rec, _ = self._query("gap-sign", text, li, hi, None)
        if rec.verdict != "unsat":
            self.unknown = f"sign-head gap query {rec.verdict} (layer {li}, head {hi})"
            return False
        return True

    # ----- FFN and claims --------------------------------------------------------------------
    def ffn(self, li: int, vals, errs, outs, eps, claims: list[Claim]) -> bool:
        p, n = self.plan, self.n
        lw = p.layers[li]
        level = li + 1
        claim_coords = {cl.coord for cl in claims}
        target = next(c for c in p.claims if c.target)
        live = p.live_after(level, target.coord)
        # after-attention terms and errors per coordinate/row
        head_writes = head_writes_of(lw)
        snap = LayerSnapshot(lw, n, vals, errs, outs, eps, head_writes)
        after: dict[int, list[E.Term | None]] = {}
        aerr: dict[int, list[fmpq]] = {}
        for c in range(p.d):
            if c in head_writes:
                col = []
                ecol = []
                for i in range(1, n + 1):
                    t = vals[c][i - 1]
                    if t is None:
                        t = E.const(0)
                    e = errs.get(c, [fmpq(0)] * n)[i - 1]
                    for hi, r, w in head_writes[c]:
                        t = E.add(t, outs[hi][i - 1][r], w)
                        e += abs(w) * eps[hi][i - 1][r]
                    col.append(t)
                    ecol.append(e)
                after[c] = col
                aerr[c] = ecol
            else:
                after[c] = vals[c]
                aerr[c] = errs.get(c, [fmpq(0)] * n)
        # claims: one agreement query per row
        if claims:
            rows = range(1, n + 1)
            for i in rows:
                todo = [cl for cl in claims if not (cl.target and self.last_only and i != n)]
                if not todo:
                    continue
                text = self.agreement_text(snap, i, todo)
                rec, model = self._query("agreement", text, li, None, i)
                if rec.verdict == "unsat":
                    continue
                if rec.verdict == "unknown":
                    self.unknown = f"agreement query timed out (layer {li}, row {i})"
                    return False
                # diagnosis: which claim, and does the hard computation (ε = 0) agree?
                culprit = todo[0]
                if len(todo) > 1:
                    for cl in todo:
                        one = self.agreement_text(snap, i, [cl])
                        r1, m1 = self._query("agreement-claim", one, li, None, i)
                        if r1.verdict == "sat":
                            culprit, model = cl, m1
                            break
                hard_text = self.agreement_text(snap, i, [culprit], zero_errors=True)
                rec0, model0 = self._query("agreement-hard", hard_text, li, None, i)
                robust_only = rec0.verdict == "unsat"
                bad = model if robust_only else model0
                self.failure = Failure(culprit, i, bad or {}, robust_only, rec)
                return False
        # new terms for live coordinates written here; claims become atoms
        units_needed: set[int] = set()
        for c in lw.w2_rows:
            if c in live and c not in claim_coords:
                units_needed |= set(lw.w2_rows[c])
        unit_terms: dict[int, list[E.Term]] = {}
        unit_errs: dict[int, list[fmpq]] = {}
        for u in units_needed:
            row, b = lw.w1[u], lw.b1[u]
            tl, el = [], []
            for i in range(1, n + 1):
                pre = E.linear(((w, after[c][i - 1]) for c, w in row.items()), b)
                tl.append(E.relu(pre))
                el.append(sum((abs(w) * aerr[c][i - 1] for c, w in row.items()), fmpq(0)))
            unit_terms[u], unit_errs[u] = tl, el
        new_vals = [list(col) for col in vals]
        new_errs: dict[int, list[fmpq]] = {}
        exact_candidates: list[int] = []
        for c in range(p.d):
            if c in claim_coords:
                continue
            written = c in head_writes or c in lw.w2_rows or c in lw.b2
            if not written:
                if c in errs:
                    new_errs[c] = errs[c]
                continue
            if c not in live:
                new_vals[c] = [None] * n
                continue
            col, ecol = [], []
            for i in range(1, n + 1):
                t = after[c][i - 1]
                e = aerr[c][i - 1]
                for u, w in lw.w2_rows.get(c, {}).items():
                    t = E.add(t, unit_terms[u][i - 1], w)
                    e += abs(w) * unit_errs[u][i - 1]
                t = E.add(t, E.const(lw.b2.get(c, fmpq(0))))
                col.append(t)
                ecol.append(e)
            new_vals[c] = col
            if any(x != 0 for x in ecol):
                new_errs[c] = ecol
                if c in lw.w2_rows and not any(aerr[c]):
                    exact_candidates.append(c)
        for c in exact_candidates:  # can the FFN's rounding remove the input error?
            for i in range(1, n + 1):
                if new_errs[c][i - 1] == 0:
                    continue
                text = snap.exactness_text(i, {c})
                rec, _ = self._query("exactness", text, li, None, i)
                if rec.verdict == "unsat":
                    new_errs[c][i - 1] = fmpq(0)
            if not any(new_errs[c]):
                del new_errs[c]
        for cl in claims:
            if not p.stable_after(cl) or (cl.target and self.last_only) or self.rounded_only(cl):
                new_vals[cl.coord] = [None] * n  # rewritten later: not a usable leaf
                continue
            new_vals[cl.coord] = [self.claim_term(cl, j) for j in range(1, n + 1)]
            self.leaves.setdefault(cl.formula, cl.index)
        vals[:] = new_vals
        errs.clear()
        errs.update(new_errs)
        return True

    def rounded_only(self, cl: Claim) -> bool:
        """The target claim on a coordinate no later layer reads: "rounded output equals the
        formula" (y > ½ ⇔ φ) is all that is asked; intermediate claims must be exact."""
        if not cl.target:
            return False
        later = set()
        for lw in self.plan.layers[cl.level :]:
            later |= lw.reads
        return cl.coord not in later

    def claim_term(self, cl: Claim, j: int) -> E.Term:
        f, n = cl.formula, self.n
        truth = _local_truth(f, j, n, None)
        if truth is not None:
            return E.const(1 if truth else 0)
        if isinstance(f, s.Atom) and f.symbol in self.plan.symbols:
            return E.var(E.Var(sym_atom(j, len(self.plan.alphabet)), self.plan.symbols[f.symbol]))
        return E.var(E.Var(claim_atom(cl.index, j)))

    def agreement_text(
        self, snap: LayerSnapshot, i: int, claims: list[Claim], *, zero_errors: bool = False
    ) -> str:
        """(a)+(d) at row i (:meth:`attncert.prove.layer_smt.LayerSnapshot.agreement_text`)."""
        return snap.agreement_text(
            i,
            claims,
            symbols=self.plan.symbols,
            leaves=self.leaves,
            rounded_only=self.rounded_only,
            zero_errors=zero_errors,
        )


# ----- helpers ---------------------------------------------------------------------------------


def _ratio(x) -> tuple[int, int]:
    return x.numerator, x.denominator


def _local_truth(f: s.Formula, j: int, n: int, symbol: str | None) -> bool | None:
    """The formula's value at j when it depends only on (j, n) and the symbol there."""
    if isinstance(f, s.Top):
        return True
    if isinstance(f, s.Bottom):
        return False
    if isinstance(f, s.First):
        return j == 1
    if isinstance(f, s.Last):
        return j == n
    if isinstance(f, s.PosPred):
        return predicate(f.pred)(j, n)
    if isinstance(f, s.Atom) and symbol is not None:
        return f.symbol == symbol
    return None
