"""Step 1–2 of the decomposed proof at one layer: hard attention outputs and error bounds.

For every head and query row i, the row's hard output is computed over the layer's
*possible inputs* by :mod:`attncert.prove.gaps` (decision list, query/key option table or
the sign case), with the gap staircase that certifies it (step (b) of the design in
:mod:`attncert.prove`); :func:`attncert.prove.intervals.staircase_bound` turns staircase,
β(n) and the score perturbation η into an exact error bound ε per value row (step (c)).
Sign heads' |z| ≥ δ claims are handed back to the caller (one z3 query per head, asked by
:class:`attncert.prove.layer.LengthProver`).

Ties are refused (:class:`~attncert.prove.gaps.PossibleTie`), shapes outside the
decomposition raise :class:`~attncert.prove.gaps.Unsupported`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from flint import fmpq

from attncert.model.spec import AttentionKind
from attncert.prove import expr as E
from attncert.prove import gaps as G
from attncert.prove.intervals import beta_arb, staircase_bound
from attncert.prove.structure import Plan

Unsupported = G.Unsupported
PossibleTie = G.PossibleTie

# (row i, the sign head's z term, δ): "|z_i| ≥ δ_i" to be proved by z3
SignRow = tuple[int, E.Term, fmpq]


@dataclass
class HeadStats:
    """Gap and error bound of one head over the rows of one length (mutable tally)."""

    layer: int
    head: int
    method: str
    min_gap: fmpq | None = None
    max_eps: fmpq = field(default_factory=lambda: fmpq(0))
    rows: int = 0


def hard_attention(
    plan: Plan,
    li: int,
    n: int,
    vals,
    errs,
    lits,
    *,
    strict_ties: bool,
    head_stats: list[HeadStats],
    check_sign: Callable[[int, list[SignRow]], bool],
):
    """Hard outputs ``outs[head][row−1][r]`` (terms) and error bounds ``eps[head][row−1][r]``
    of layer ``li`` at length ``n``; ``(None, None)`` when ``check_sign`` refuses a sign
    head's gap claim. Appends one :class:`HeadStats` per head to ``head_stats``."""
    lw = plan.layers[li]
    outs: list[list[list[E.Term]]] = []  # [head][row-1][r]
    eps: list[list[list[fmpq]]] = []
    for hi, hw in enumerate(lw.heads):
        stats = HeadStats(li, hi, "uniform" if hw.uniform else "")
        methods: set[str] = set()
        head_stats.append(stats)
        beta = beta_arb(hw.temperature, n) if hw.kind is AttentionKind.SOFTMAX else None
        K = {j: [_dot(r, vals, j) for r in hw.wk] for j in range(1, n + 1)}
        V = {j: [_dot(r, vals, j) for r in hw.wv] for j in range(1, n + 1)}
        verr = {j: [_err_dot(r, errs, j) for r in hw.wv] for j in range(1, n + 1)}
        kerr = {j: [_err_dot(r, errs, j) for r in hw.wk] for j in range(1, n + 1)}
        h_out, h_eps = [], []
        cache: dict = {}
        sign_rows: list[SignRow] = []
        for i in range(1, n + 1):
            keys = G.visible(hw.mask, i, n)
            dv = len(hw.wv)
            vpert = [max((verr[j][r] for j in keys), default=fmpq(0)) for r in range(dv)]
            if not keys:
                h_out.append([E.const(0)] * dv)
                h_eps.append([fmpq(0)] * dv)
                continue
            if hw.uniform and hw.kind in (AttentionKind.SOFTMAX, AttentionKind.AVERAGE):
                h_out.append(G.uniform_row(hw.mask, i, n, {j: V[j] for j in keys}, lits))
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
                if strict_ties and grp > 1:
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
                    if strict_ties and any(st.group > 1 for st in stairs):
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
        if sign_rows and not check_sign(hi, sign_rows):
            return None, None
        outs.append(h_out)
        eps.append(h_eps)
    return outs, eps


# ----- helpers ---------------------------------------------------------------------------------


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
