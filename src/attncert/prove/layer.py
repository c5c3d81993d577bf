"""The decomposed proof at one length n (steps (a)–(d) for every layer and row).

:class:`LengthProver` walks the layers once. At each layer boundary every live
coordinate at every position is a term over position atoms (:mod:`attncert.prove.expr`)
plus an exact error bound (0 for exact coordinates). For each layer:

1. every head's hard output is computed per query row by :mod:`attncert.prove.gaps`
   (decision list / table / sign case) together with its gap staircase — the gap
   certificate over the layer's possible inputs (b); sign heads' |z| ≥ δ is proved by
   one z3 query per (n, head);
2. :func:`attncert.prove.intervals.staircase_bound` turns staircase and β(N) into an
   exact error bound ε per row and value coordinate (c);
3. for every claim checked at this layer and every row, one z3 query asserts that some
   claimed coordinate, computed by the layer's FFN from the hard values plus any errors
   |δ| ≤ ε, differs from the formula's value (semantics in
   :mod:`attncert.prove.semantics`); ``unsat`` proves (a) and (d) together;
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flint import fmpq

from attncert.logic import syntax as s
from attncert.logic.numpred import predicate
from attncert.model.positional import PosFeature
from attncert.model.spec import AttentionKind
from attncert.prove import expr as E
from attncert.prove import gaps as G
from attncert.prove.intervals import beta_arb, staircase_bound
from attncert.prove.semantics import SemEncoder, atom_decls, claim_atom, sym_atom
from attncert.prove.smt import QueryRecord, solve
from attncert.prove.structure import Claim, Plan

Unsupported = G.Unsupported
PossibleTie = G.PossibleTie


@dataclass
class HeadStats:
    layer: int
    head: int
    method: str
    min_gap: fmpq | None = None
    max_eps: fmpq = field(default_factory=lambda: fmpq(0))
    rows: int = 0


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
        """Hard outputs per head/row/value row and their error bounds."""
        p, n = self.plan, self.n
        lw = p.layers[li]
        outs: list[list[list[E.Term]]] = []  # [head][row-1][r]
        eps: list[list[list[fmpq]]] = []
        for hi, hw in enumerate(lw.heads):
            stats = HeadStats(li, hi, "uniform" if hw.uniform else "")
            methods: set[str] = set()
            self.head_stats.append(stats)
            beta = beta_arb(hw.temperature, n) if hw.kind is AttentionKind.SOFTMAX else None
            K = {j: [_dot(r, vals, j) for r in hw.wk] for j in range(1, n + 1)}
            V = {j: [_dot(r, vals, j) for r in hw.wv] for j in range(1, n + 1)}
            verr = {j: [_err_dot(r, errs, j) for r in hw.wv] for j in range(1, n + 1)}
            kerr = {j: [_err_dot(r, errs, j) for r in hw.wk] for j in range(1, n + 1)}
            h_out, h_eps = [], []
            cache: dict = {}
            sign_rows: list[tuple[int, E.Term, fmpq]] = []
            for i in range(1, n + 1):
                keys = G.visible(hw.mask, i, n)
                dv = len(hw.wv)
                vpert = [max((verr[j][r] for j in keys), default=fmpq(0)) for r in range(dv)]
                if not keys:
                    h_out.append([E.const(0)] * dv)
                    h_eps.append([fmpq(0)] * dv)
                    continue
                if hw.uniform and hw.kind in (AttentionKind.SOFTMAX, AttentionKind.AVERAGE):
                    h_out.append(G.uniform_row(hw.mask, i, n, {j: V[j] for j in keys}, self.lits))
                    h_eps.append(vpert)
                    continue
                if len(keys) == 1:
                    # one visible key: attention is exact whatever the scores
                    h_out.append(list(V[keys[0]]))
                    h_eps.append(vpert)
                    continue
                Q = [_dot(r, vals, i) for r in hw.wq]
                qerr = [_err_dot(r, errs, i) for r in hw.wq]
                eta = _score_perturbation(Q, qerr, [K[j] for j in keys], [kerr[j] for j in keys])
                q_const = all(E.is_const(t) for t in Q)

                def key_options(qv, i=i, keys=keys, hw=hw, eta=eta, cache=cache, K=K, V=V):
                    """Decision list of this row for one query vector; ties are refused."""
                    o, st, grp = G.key_options_row(
                        i,
                        qv,
                        {j: K[j] for j in keys},
                        {j: V[j] for j in keys},
                        hw.kind,
                        cache,
                    )
                    if self.strict_ties and grp > 1:
                        raise PossibleTie(i, tuple(keys), f"{grp} keys share the maximum")
                    if st is not None and st.group > 1 and eta > 0:
                        raise Unsupported("tied group with perturbed scores")
                    return o, st

                k_const = all(E.is_const(t) for j in keys for t in K[j])
                if q_const:
                    methods.add("key-options")
                    out, st = key_options([t.const for t in Q])
                    stairs = [st] if st is not None else []
                elif k_const:
                    if any(e for j in keys for e in kerr[j]):
                        raise Unsupported("constant keys read approximate coordinates")
                    kvals = {j: [t.const for t in K[j]] for j in keys}
                    line = G.line_params(list(kvals.values()))
                    if line is not None and hw.kind in (
                        AttentionKind.SOFTMAX,
                        AttentionKind.AVERAGE,
                    ):
                        methods.add("sign")
                        zeta_of = _zeta_of(qerr)
                        out, stairs, z, delta, _zeta = G.sign_row(
                            i, Q, kvals, {j: V[j] for j in keys}, zeta_of
                        )
                        sign_rows.append((i, z, delta))
                        if self.strict_ties and any(st.group > 1 for st in stairs):
                            raise PossibleTie(i, tuple(keys), "a group of equal keys is maximal")
                        eta = fmpq(0)  # folded into the staircase gaps
                    else:
                        methods.add("query-options")
                        if not all(E.is_const(t) for j in keys for t in V[j]):
                            raise Unsupported("query-option head with non-constant values")
                        out, st = G.query_options_row(
                            i, Q, kvals, {j: [t.const for t in V[j]] for j in keys}, hw.kind
                        )
                        stairs = [st] if st is not None else []
                else:
                    # both sides depend on the input: enumerate the query's (few) values
                    qats: set[E.Atom] = set()
                    for tq in Q:
                        E.atoms(tq, qats)
                    if any(a.kind == "int" for a in qats) or E.n_assignments(qats) > 16:
                        raise Unsupported("query and keys both depend on the input")
                    methods.add("key-options")
                    cases, stairs = [], []
                    for qasg in E.assignments(qats):
                        o, st = key_options([E.ev(tq, qasg) for tq in Q])
                        cases.append((qasg, o))
                        stairs.append(st)
                    dvv = len(cases[0][1])
                    out = [E.table([(a, o[r]) for a, o in cases]) for r in range(dvv)]
                row_eps = []
                for r in range(len(hw.wv)):
                    e = fmpq(0)
                    for st in stairs:
                        if hw.kind is AttentionKind.SOFTMAX and st is not None:
                            e = max(e, staircase_bound(st, beta, eta))
                    row_eps.append(e + vpert[r])
                for st in stairs:
                    if st is not None and st.min_gap is not None:
                        g = st.min_gap
                        stats.min_gap = (
                            g if stats.min_gap is None or g < stats.min_gap else stats.min_gap
                        )
                stats.max_eps = max([stats.max_eps, *row_eps])
                stats.rows += 1
                h_out.append(out)
                h_eps.append(row_eps)
            if methods:
                stats.method = "+".join(sorted(methods))
            if sign_rows and not self.sign_query(li, hi, sign_rows):
                return None, None
            outs.append(h_out)
            eps.append(h_eps)
        return outs, eps

    def sign_query(self, li: int, hi: int, rows: list[tuple[int, E.Term, fmpq]]) -> bool:
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
        head_writes: dict[int, list[tuple[int, int, fmpq]]] = {}
        for hi, hw in enumerate(lw.heads):
            for r, col in enumerate(hw.wo_cols):
                for c, w in col.items():
                    head_writes.setdefault(c, []).append((hi, r, w))
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
                text = self.agreement_text(li, i, vals, errs, outs, eps, head_writes, todo)
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
                        one = self.agreement_text(li, i, vals, errs, outs, eps, head_writes, [cl])
                        r1, m1 = self._query("agreement-claim", one, li, None, i)
                        if r1.verdict == "sat":
                            culprit, model = cl, m1
                            break
                hard_text = self.agreement_text(
                    li, i, vals, errs, outs, eps, head_writes, [culprit], zero_errors=True
                )
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
                text = self.exactness_text(li, i, vals, errs, outs, eps, head_writes, {c})
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

    def _defs(self, li, i, vals, errs, outs, eps, head_writes, coords, zero, sfx, ats):
        """SMT definitions of the layer at row i up to the outputs O{c}{sfx} of ``coords``."""
        p, n = self.plan, self.n
        lw = p.layers[li]
        units = sorted({u for c in coords for u in lw.w2_rows.get(c, {})})
        need = set(coords) | {c for u in units for c in lw.w1[u]}
        heads_needed = sorted({(hi, r) for c in need for hi, r, _ in head_writes.get(c, [])})
        body: list[str] = []
        for hi, r in heads_needed:
            t = outs[hi][i - 1][r]
            E.atoms(t, ats)
            body.append(f"(define-fun H{hi}_{r}{sfx} () Real {E.smt(t)})")
            e = fmpq(0) if zero else eps[hi][i - 1][r]
            if e > 0:
                body.append(f"(declare-fun dH{hi}_{r}{sfx} () Real)")
                body.append(f"(assert (<= {E.num(-e)} dH{hi}_{r}{sfx} {E.num(e)}))")
        for c in sorted(need):
            t = vals[c][i - 1]
            t = E.const(0) if t is None else t
            E.atoms(t, ats)
            parts = [E.smt(t)]
            e = fmpq(0) if zero else errs.get(c, [fmpq(0)] * n)[i - 1]
            if e > 0:
                body.append(f"(declare-fun dY{c}{sfx} () Real)")
                body.append(f"(assert (<= {E.num(-e)} dY{c}{sfx} {E.num(e)}))")
                parts.append(f"dY{c}{sfx}")
            for hi, r, w in head_writes.get(c, []):
                he = fmpq(0) if zero else eps[hi][i - 1][r]
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
        self, li, i, vals, errs, outs, eps, head_writes, claims, *, zero_errors: bool = False
    ) -> str:
        """(a)+(d): some claimed coordinate ≠ its formula's value at row i (negated goal)."""
        ats: set[E.Atom] = set()
        coords = {cl.coord for cl in claims}
        body = self._defs(li, i, vals, errs, outs, eps, head_writes, coords, zero_errors, "", ats)
        enc = SemEncoder(self.n, self.plan.symbols, self.leaves)
        conj = []
        for cl in claims:
            sem = enc.bool(cl.formula, i)
            if self.rounded_only(cl):  # the final output: only its rounding must agree
                conj.append(f"(= (> O{cl.coord} (/ 1.0 2.0)) {sem})")
            else:  # read by later layers as an exact Boolean: the value must be exact
                conj.append(f"(= O{cl.coord} (ite {sem} 1.0 0.0))")
        ats |= enc.atoms
        goal = f"(and {' '.join(conj)})" if len(conj) > 1 else conj[0]
        return "\n".join(
            [*atom_decls(ats), *body, *enc.defs, f"(assert (not {goal}))", "(check-sat)"]
        )

    def exactness_text(self, li, i, vals, errs, outs, eps, head_writes, coords) -> str:
        """The FFN output of ``coords`` with input errors equals the one without (negated)."""
        ats: set[E.Atom] = set()
        body = self._defs(li, i, vals, errs, outs, eps, head_writes, coords, False, "e", ats)
        body += self._defs(li, i, vals, errs, outs, eps, head_writes, coords, True, "h", ats)
        conj = [f"(= O{c}e O{c}h)" for c in sorted(coords)]
        goal = f"(and {' '.join(conj)})" if len(conj) > 1 else conj[0]
        return "\n".join([*atom_decls(ats), *body, f"(assert (not {goal}))", "(check-sat)"])


# ----- helpers ---------------------------------------------------------------------------------


def _ratio(x) -> tuple[int, int]:
    return x.numerator, x.denominator


def _dot(row: dict[int, fmpq], vals, j: int) -> E.Term:
    terms = []
    for c, w in row.items():
        t = vals[c][j - 1]
        if t is None:
            raise Unsupported(f"coordinate {c} is read after it stopped being tracked")
        terms.append((w, t))
    return E.linear(terms)


def _err_dot(row: dict[int, fmpq], errs, j: int) -> fmpq:
    out = fmpq(0)
    for c, w in row.items():
        col = errs.get(c)
        if col is not None and col[j - 1]:
            out += abs(w) * col[j - 1]
    return out


def _absmax(t: E.Term) -> fmpq:
    lo, hi = E.bounds(t)
    return max(abs(lo), abs(hi))


def _score_perturbation(Q, qerr, Ks, kerrs) -> fmpq:
    """max_j |Δ(q·k_j)| ≤ Σ_r (Δq_r |k_r| + |q_r| Δk_r + Δq_r Δk_r)."""
    if not any(qerr) and not any(e for ke in kerrs for e in ke):
        return fmpq(0)
    qa = [_absmax(t) for t in Q]
    best = fmpq(0)
    for kv, ke in zip(Ks, kerrs, strict=True):
        tot = fmpq(0)
        for r in range(len(Q)):
            ka = _absmax(kv[r])
            tot += qerr[r] * ka + qa[r] * ke[r] + qerr[r] * ke[r]
        best = max(best, tot)
    return best


def _zeta_of(qerr: list[fmpq]):
    def zeta(u: list[fmpq]) -> fmpq:
        return sum((e * abs(x) for e, x in zip(qerr, u, strict=True)), fmpq(0))

    return zeta


def _sum(parts: list[str]) -> str:
    parts = [x for x in parts if x not in ("0.0",)] or ["0.0"]
    return parts[0] if len(parts) == 1 else f"(+ {' '.join(parts)})"


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
