"""The trusted checker for restriction certificates (Hahn 2020, Theorem 1 and
Corollary 2 on one model and one length n) — part of **the trust boundary**.

``check(certificate, model)`` accepts only if every claim holds:

1. the certificate is for this model (content hash), this alphabet, this n, and the
   model has hard attention only;
2. the restrictions form a chain ρ₀ ≼ ρ₁ ≼ … ≼ ρ_L of length-n restrictions;
3. for each layer ℓ, each token position i and each assignment a of its *claimed*
   dependency set S_i (under ρ_ℓ), the activation y⁽ˡ⁾_i is determined by a: its own
   input y⁽ˡ⁻¹⁾_i is (S⁽ˡ⁻¹⁾_i ⊆ S_i), and for every head the attended position is —
   the best key among the positions whose tables are determined by a beats, by score
   or by the head's tie rule, *every* value of every other visible position. This is
   Lemma 4's conclusion on this instance (layer ℓ is computed by a c-transformer with
   the claimed tables), verified claim by claim — it does not search for dependency
   sets, and shares no code with the search's collapse (:mod:`attncert.hard.collapse`);
4. the decision depends only on the claimed output dependency set under ρ_L
   (Theorem 1 on this instance);
5. the misclassified strings are ρ_L-compatible, agree on that set, get the claimed
   decisions from an independent rigorous forward pass
   (:mod:`attncert.kernel.forward`), and differ in membership (Corollary 2).

Arithmetic: every activation is held as a rigorous float64 enclosure
(:mod:`attncert.arith.enclose`); a comparison is decided in floats only when the
enclosures separate by the documented error bound (per query slot and head: the best
determined key beats every other determined key and every value of every undetermined
position by more than 2E — :class:`_Slots`, :func:`_attend_fast`), and otherwise key by
key (:func:`_attend`) in the field: exact rationals for rational models, arb balls for
models with LayerNorm or GELU, precision escalating 53 → 4096 bits, values computed on
demand (:class:`attncert.arith.rows.RowGraph`), ties decided structurally (equal
identity keys: the same computation on identical exact inputs). A comparison still
undecided at the cap rejects the certificate ("arithmetic" claim), never guesses.

Imports no solver and no search code (an import contract enforces this).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import product

import numpy as np
from flint import fmpq

from attncert.arith import enclose
from attncert.arith.field import Field, Number, Undecided, escalate
from attncert.arith.filter import Enclosed, row_bounds, top_columns
from attncert.arith.rows import RowGraph
from attncert.certificates.hard import Certificate
from attncert.kernel.forward import decide, is_rational
from attncert.model.spec import AttentionKind, Model
from attncert.restriction import Restriction


@dataclass(frozen=True)
class Failure:
    claim: str  # "model", "restrictions", "dependency_sets", "output", "misclassified", ...
    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.claim} ({self.where}): {self.reason}"


@dataclass(frozen=True)
class CheckReport:
    accepted: bool
    failures: tuple[Failure, ...]
    facts: tuple[str, ...] = ()  # what was established, in words
    seconds: float = 0.0
    output_dependency: tuple[int, ...] = field(default=())
    arithmetic: str = ""  # "exact rationals" or "arb, P bits"

    def summary(self) -> str:
        if self.accepted:
            return "CHECKED: " + "; ".join(_short(f) for f in self.facts)
        return "REJECTED: " + "; ".join(_short(str(f)) for f in self.failures)


def _short(text: str, limit: int = 160) -> str:
    """Long quoted strings abbreviated (a 512-symbol input is not one line of a summary)."""
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


_CHUNK = 128  # token positions whose query rows are scored in one float block


class _Reject(Exception):
    def __init__(self, failure: Failure):
        super().__init__(str(failure))
        self.failure = failure


def _fail(claim: str, where: str, reason: str):
    """Reject the certificate: ``claim`` failed at ``where`` because ``reason``."""
    raise _Reject(Failure(claim, where, reason))


def _fmt(positions) -> str:
    return "{" + ", ".join(str(u + 1) for u in sorted(positions)) + "}"


# --------------------------------------------------------------------------- tables
@dataclass(frozen=True)
class _Table:
    """Kernel tables: y_t as a function of ``deps``: ``vid[r]`` is the value id for the
    assignment r (base-|Σ| digits, deps[0] most significant)."""

    deps: tuple[int, ...]
    vid: tuple[int, ...]


class _Values:
    """Every activation value of one layer: its row of the :class:`RowGraph` (identity
    key, field value on demand) and its float enclosure (row v of ``box``)."""

    def __init__(self, graph: RowGraph, rows: np.ndarray, box: Enclosed) -> None:
        self.graph = graph
        self.rows = rows
        self.box = box
        g = graph.keys
        self.keys = [g[r] for r in rows.tolist()]


def _assignments(deps: Sequence[int], base: int):
    return product(range(base), repeat=len(deps))


def _row_of(deps: Sequence[int], sym: dict[int, int], base: int) -> int:
    r = 0
    for u in deps:
        r = r * base + sym[u]
    return r


def _restrict(table: _Table, rho: Restriction) -> _Table:
    """Substitute the positions ρ fixes."""
    if all(rho.is_free(u) for u in table.deps):
        return table
    alpha = {s: k for k, s in enumerate(rho.symbols)}
    base = len(rho.symbols)
    deps = tuple(u for u in table.deps if rho.is_free(u))
    vid = []
    for combo in _assignments(deps, base):
        sym = dict(zip(deps, combo, strict=True))
        full = {u: sym[u] if u in sym else alpha[rho.fixed[u]] for u in table.deps}
        vid.append(table.vid[_row_of(table.deps, full, base)])
    return _Table(deps, tuple(vid))


def _layer0(model: Model, rho: Restriction, graph: RowGraph) -> tuple[list[_Table], _Values]:
    """Layer-0 tables: a free input position depends on itself (one value per free
    symbol), every other token is constant; values are the exact layer-0 rows (float
    enclosures here, exact rows on demand)."""
    off = model.input_offset()
    tokens = model.encode(rho.complete({}))
    toks: list[int] = []
    where: list[int] = []
    tables = []
    for t, tok in enumerate(tokens):
        u = t - off
        free = 0 <= u < rho.n and rho.is_free(u)
        options = [model.token_index[s] for s in rho.symbols] if free else [tok]
        ids = tuple(range(len(toks), len(toks) + len(options)))
        toks.extend(options)
        where.extend([t] * len(options))
        tables.append(_Table((u,) if free else (), ids))
    rows = graph.add_embedding(toks, where)
    box = enclose.embed(model, np.array(toks, dtype=np.int64), np.array(where), len(tokens))
    return tables, _Values(graph, rows, box)


# --------------------------------------------------------------------------- one layer
@dataclass(frozen=True, eq=False)
class _Projected:
    """One head's queries, keys and value rows for every value id, as enclosures."""

    q: Enclosed
    k: Enclosed
    ov: Enclosed


def _project(model: Model, li: int, vals: _Values) -> list[_Projected]:
    u = enclose.attention_inputs(model, li, vals.box)
    return [
        _Projected(*enclose.projections(model, li, hi, u))
        for hi in range(len(model.layers[li].heads))
    ]


class _Slots:
    """Query slots (position i, value v of y_i), in position order, and for each slot
    the float facts the claims need (module docstring, claim 3): per head the best
    constant key (its score, value and how many constants come within 2E of it) and the
    non-constant positions with the highest score upper bounds."""

    TOP = 4

    def __init__(self, model: Model, li: int, tables: list[_Table], pos_vids, proj):
        n_tok = len(tables)
        self.pos = np.array([i for i in range(n_tok) for _ in pos_vids[i]], dtype=np.int64)
        self.vid = np.array([v for i in range(n_tok) for v in pos_vids[i]], dtype=np.int64)
        sizes = np.array([len(v) for v in pos_vids], dtype=np.int64)
        self.start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        const = np.array([not t.deps for t in tables])
        ccols = self.start[const]  # the one slot of each constant position
        cpos = np.nonzero(const)[0]
        nc_pos = np.nonzero(~const)[0]
        # slots of the non-constant positions, padded to r_max columns by repetition, so
        # per-position maxima are maxima over a reshaped block
        rmax = int(sizes[nc_pos].max(initial=1))
        offs = np.minimum(np.arange(rmax)[None, :], (sizes[nc_pos] - 1)[:, None])
        ncols = self.start[nc_pos][:, None] + offs  # (n_nc, r_max) slots, padded
        self.nc_pos = nc_pos
        S = len(self.pos)
        T = min(self.TOP, len(nc_pos))
        self.heads = []
        block = max(1, (1 << 21) // max(len(ccols) + ncols.size, 1))
        for hi, head in enumerate(model.layers[li].heads):
            pr = proj[hi]
            kq = pr.k.take(self.vid)
            kc = kq.mid[ccols].T.copy()
            kn = [kq.mid[ncols[:, t]].T.copy() for t in range(rmax)]  # per value slot
            c_top = np.full(S, -np.inf)
            c_arg = np.full(S, -1, dtype=np.int64)
            c_near = np.zeros(S, dtype=np.int64)
            err = np.zeros(S)
            top_pos = np.full((S, T), -1, dtype=np.int64)
            top_max = np.full((S, T), -np.inf)
            rest = np.full(S, -np.inf)
            for c0 in range(0, S, block):
                sl = np.arange(c0, min(S, c0 + block))
                qb = pr.q.take(self.vid[sl])
                vis = head.mask.rows(self.pos[sl], n_tok)
                e = row_bounds(qb, kq)
                err[sl] = e
                r = np.arange(len(sl))
                if len(ccols):
                    cs = qb.mid @ kc
                    if vis is not None:
                        cs[~vis[:, cpos]] = -np.inf
                    arg = cs.argmax(axis=1)
                    top = cs[r, arg]
                    c_top[sl], c_arg[sl] = top, ccols[arg]
                    c_near[sl] = np.where(
                        np.isfinite(top), (cs >= (top - 2 * e)[:, None]).sum(axis=1), 0
                    )
                if T:
                    pm = qb.mid @ kn[0]  # per-position maxima over the value slots
                    for kt in kn[1:]:
                        np.maximum(pm, qb.mid @ kt, out=pm)
                    if vis is not None:
                        pm[~vis[:, nc_pos]] = -np.inf
                    part = top_columns(pm, T + 1)  # the T + 1 best positions
                    vals = pm[r[:, None], part]
                    order = np.argsort(-vals, axis=1, kind="stable")
                    part, vals = part[r[:, None], order], vals[r[:, None], order]
                    top_pos[sl] = nc_pos[part[:, :T]]
                    top_max[sl] = vals[:, :T]
                    if vals.shape[1] > T:
                        rest[sl] = vals[:, T]  # every other position scores at most this
            self.heads.append((c_top, c_arg, c_near, err, top_pos, top_max, rest))


def _check_layer(
    model: Model,
    ell: int,
    tables: list[_Table],
    vals: _Values,
    claimed: Sequence[Sequence[int]],
    rho: Restriction,
) -> tuple[list[_Table], _Values]:
    """Verify layer ℓ's claimed dependency sets and compute its tables (module docstring,
    claim 3)."""
    graph = vals.graph
    li = ell - 1
    layer = model.layers[li]
    base = len(rho.symbols)
    n_tok = len(tables)
    d = model.d
    proj = _project(model, li, vals)
    for i, s in enumerate(claimed):
        bad = [u for u in s if not rho.is_free(u)]
        if bad:
            _fail(
                "dependency_sets",
                f"layer {ell}, token position {i}",
                f"claims dependence on input {bad[0] + 1}, which ρ_{ell} fixes",
            )
        missing = set(tables[i].deps) - set(s)
        if missing:
            _fail(
                "dependency_sets",
                f"layer {ell}, token position {i}",
                f"the activation's own input depends on input position(s) {_fmt(missing)} "
                f"not in the claimed set {_fmt(s)}",
            )
    # which positions' tables are determined by an assignment of S_i
    by_input: dict[int, list[int]] = {}
    for m, t in enumerate(tables):
        for u in t.deps:
            by_input.setdefault(u, []).append(m)
    constant = np.array([not t.deps for t in tables])
    # every value of every position, grouped per position (for the undetermined maxima)
    pos_vids = [sorted(set(t.vid)) for t in tables]
    grouping = _Grouping(pos_vids)
    slots = _Slots(model, li, tables, pos_vids, proj)
    slot_of = [{v: slots.start[i] + t for t, v in enumerate(pos_vids[i])} for i in range(n_tok)]
    sees_any = [head.mask.sees_any(n_tok) for head in layer.heads]
    own_vids: list[int] = []
    picks: list[list[tuple[int, ...]]] = []  # per output row, per head: attended value ids
    spans = []
    for i in range(n_tok):
        s_i = tuple(claimed[i])
        s_set = set(s_i)
        det_nc: list[int] = []  # non-constant positions whose tables S_i determines
        for u in s_i:
            for m in by_input.get(u, ()):
                if m not in det_nc and set(tables[m].deps) <= s_set:
                    det_nc.append(m)
        det_nc.sort()
        determined = None  # the full mask, built only for the slow path
        start = len(own_vids)
        for combo in _assignments(s_i, base):
            sym = dict(zip(s_i, combo, strict=True))
            own = tables[i].vid[_row_of(tables[i].deps, sym, base)]
            slot = int(slot_of[i][own])
            row_picks = []
            for hi, head in enumerate(layer.heads):
                if not sees_any[hi][i]:
                    row_picks.append(())
                    continue
                pick = _attend_fast(
                    graph,
                    head.kind,
                    proj[hi],
                    slots,
                    hi,
                    slot,
                    own,
                    i,
                    tables,
                    det_nc,
                    sym,
                    base,
                    li,
                )
                if pick is None:  # the float facts do not settle it: every key, one by one
                    if determined is None:
                        determined = constant.copy()
                        determined[det_nc] = True
                    where = (
                        f"layer {ell}, token position {i}, assignment "
                        f"{_show(s_i, combo, rho)}, head {hi}"
                    )
                    visible = head.mask.rows(np.array([i]), n_tok)
                    vis = np.ones(n_tok, dtype=bool) if visible is None else visible[0]
                    pick = _attend(
                        graph,
                        li,
                        hi,
                        head.kind,
                        _ScoreRows(proj[hi], own, grouping),
                        vals,
                        tables,
                        pos_vids,
                        own,
                        sym,
                        base,
                        vis,
                        determined,
                        where,
                    )
                row_picks.append(tuple(pick))
            own_vids.append(own)
            picks.append(row_picks)
        spans.append((start, len(own_vids)))
    # the new values: enclosures for every row at once, field values on demand
    own_arr = np.array(own_vids, dtype=np.int64)
    attn = enclose.point(np.zeros((len(own_vids), d)))
    for hi, head in enumerate(layer.heads):
        ov = proj[hi].ov
        single = np.array([p[hi][0] if len(p[hi]) == 1 else 0 for p in picks], dtype=np.int64)
        out = ov.take(single)
        multi = [t for t, p in enumerate(picks) if len(p[hi]) > 1]
        if multi:
            avg = enclose.mean_rows(ov, [np.array(picks[t][hi]) for t in multi])
            out.mid[multi], out.rad[multi] = avg.mid, avg.rad
        none = np.array([not p[hi] for p in picks], dtype=bool)
        if none.any():
            out.mid[none], out.rad[none] = 0.0, 0.0
        attn = enclose.add(attn, enclose.add(out, enclose.point(head.bias("b_o")[None, :])))
    box = enclose.finish_layer(model, li, vals.box.take(own_arr), attn)
    rows = vals.rows
    new_rows = graph.add_rows(
        ell,
        rows[own_arr],
        [tuple(tuple(int(rows[v]) for v in h) for h in p) for p in picks],
    )
    uniq, first, inverse = np.unique(new_rows, return_index=True, return_inverse=True)
    new_vals = _Values(graph, uniq, box.take(first))
    new_tables = [
        _Table(tuple(claimed[i]), tuple(int(v) for v in inverse[lo:hi]))
        for i, (lo, hi) in enumerate(spans)
    ]
    return new_tables, new_vals


def _show(deps, combo, rho: Restriction) -> str:
    return (
        "{"
        + ", ".join(f"x{u + 1}={rho.symbols[c]}" for u, c in zip(deps, combo, strict=True))
        + "}"
    )


def _attend_fast(
    graph: RowGraph,
    kind: AttentionKind,
    pr: _Projected,
    slots: _Slots,
    hi: int,
    slot: int,
    own: int,
    i: int,
    tables: list[_Table],
    det_nc: list[int],
    sym: dict[int, int],
    base: int,
    li: int,
) -> list[int] | None:
    """The attended value ids when the float facts of the slot settle every claim: the
    best determined key wins by more than 2E over every other determined key, and every
    undetermined position's best score is more than 2E below it. None otherwise (the
    caller then checks key by key, in the field where needed)."""
    c_top, c_arg, c_near, err, top_pos, top_max, rest = slots.heads[hi]
    e = float(err[slot])
    if c_near[slot] > 1:
        return None
    cands: list[tuple[float, int, int]] = []  # (float score, position, value id)
    if c_near[slot] == 1:
        m = int(slots.pos[c_arg[slot]])
        cands.append((float(c_top[slot]), m, int(slots.vid[c_arg[slot]])))
    if det_nc:
        vis = slots_visible(graph, hi, li, i, det_nc)
        dv = [
            (m, tables[m].vid[_row_of(tables[m].deps, sym, base)])
            for m, ok in zip(det_nc, vis, strict=True)
            if ok
        ]
        if dv:
            sc = pr.k.mid[[v for _, v in dv]] @ pr.q.mid[own]
            cands += [(float(x), m, v) for x, (m, v) in zip(sc.tolist(), dv, strict=True)]
    if not cands:
        return None
    cands.sort(key=lambda c: -c[0])
    best = cands[0][0]
    if len(cands) > 1 and cands[1][0] >= best - 2 * e:
        return None
    # every undetermined non-constant position must score below best − 2E
    det = set(det_nc)
    for m, mx in zip(top_pos[slot].tolist(), top_max[slot].tolist(), strict=True):
        if m < 0 or m in det:
            continue
        return [cands[0][2]] if mx < best - 2 * e else None
    return [cands[0][2]] if rest[slot] < best - 2 * e else None


def slots_visible(graph: RowGraph, hi: int, li: int, i: int, positions: list[int]) -> list[bool]:
    """Whether query position i sees each key position (the head's mask)."""
    mask = graph.model.layers[li].heads[hi].mask
    return [mask.allowed(i, m) for m in positions]


class _Grouping:
    """Value ids grouped by token position, for per-position maxima of score bounds."""

    def __init__(self, pos_vids: list[list[int]]):
        self.order = np.array([v for vids in pos_vids for v in vids], dtype=np.int64)
        sizes = np.array([len(v) for v in pos_vids], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


class _ScoreRows:
    """Float scores of one query value against every value, with a rigorous bound
    (:func:`attncert.arith.filter.row_bounds`), and per key position the largest upper
    bound over its values."""

    def __init__(self, pr: _Projected, query_vid: int, grouping: _Grouping):
        q = pr.q.take(np.array([query_vid]))
        s = q.mid @ pr.k.mid.T
        e = row_bounds(q, pr.k)  # one bound, valid against every key
        self.s, self.e = s[0], float(e[0])
        self.up = np.maximum.reduceat(self.s[grouping.order], grouping.starts) + self.e

    def get(self, vid: int) -> tuple[np.ndarray, float, np.ndarray]:
        return self.s, self.e, self.up


def _attend(
    graph: RowGraph,
    li: int,
    hi: int,
    kind: AttentionKind,
    rows: _ScoreRows,
    vals: _Values,
    tables: list[_Table],
    pos_vids: list[list[int]],
    own: int,
    sym: dict[int, int],
    base: int,
    visible: np.ndarray,
    determined: np.ndarray,
    where: str,
) -> list[int]:
    """The value ids a head attends to when the query is value ``own`` and the
    determined positions take their values under ``sym``; rejects if a position whose
    table is not determined could be attended."""
    s, e, up = rows.get(own)
    fld = graph.field
    keys = vals.keys
    det_pos = np.nonzero(visible & determined)[0]
    und_pos = np.nonzero(visible & ~determined)[0]
    if not len(det_pos):
        m = int(und_pos[0])
        _fail(
            "dependency_sets",
            where,
            f"no key position is determined by the claimed set; position {m} "
            f"depends on input(s) {_fmt(tables[m].deps)}",
        )
    det_vid = [tables[m].vid[_row_of(tables[m].deps, sym, base)] for m in det_pos.tolist()]
    sd = s[np.array(det_vid)]
    near = np.nonzero(sd + 2 * e >= sd.max())[0].tolist()
    q_row = int(vals.rows[own])

    def cmp(v: int, w: int) -> int:
        same = keys[v] == keys[w]
        if same:
            return 0
        return fld.compare(
            graph.score(q_row, int(vals.rows[v]), li, hi),
            graph.score(q_row, int(vals.rows[w]), li, hi),
            False,
            f"a score comparison at {where}",
        )

    # the best determined key(s), by the head's rule
    best = [near[0]]
    for t in near[1:]:
        c = cmp(det_vid[t], det_vid[best[0]])
        if c > 0:
            best = [t]
        elif c == 0:
            best.append(t)
    best.sort(key=lambda t: det_pos[t])
    if kind is AttentionKind.LEFTMOST:
        winners = [best[0]]
    elif kind is AttentionKind.RIGHTMOST:
        winners = [best[-1]]
    else:
        winners = best
    b_pos = int(det_pos[winners[0]])
    b_vid = det_vid[winners[0]]
    b_lo = s[b_vid] - e
    # every value of every undetermined position must lose to the winner; the float
    # bounds settle all but the positions whose best upper bound reaches the winner
    for m in und_pos[up[und_pos] >= b_lo].tolist():
        for v in pos_vids[m]:
            if s[v] + e < b_lo:
                continue
            c = cmp(v, b_vid)
            if kind is AttentionKind.AVERAGE:
                loses = c < 0
            elif kind is AttentionKind.LEFTMOST:
                loses = c < 0 or (c == 0 and m > b_pos)
            else:
                loses = c < 0 or (c == 0 and m < b_pos)
            if not loses:
                _fail(
                    "dependency_sets",
                    where,
                    f"token position {m}, whose activation depends on input(s) "
                    f"{_fmt(tables[m].deps)} outside the claimed set, may be attended "
                    f"(it can score {'above' if c > 0 else 'level with'} the best "
                    f"determined key at position {b_pos})",
                )
    return [det_vid[t] for t in winners]


# --------------------------------------------------------------------------- the output
def _decisions(
    model: Model,
    tables: list[_Table],
    vals: _Values,
    pos: int,
    base: int,
    cap: int,
) -> tuple[tuple[int, ...], list[bool]]:
    """(deps, decision per assignment of deps) of the readout. A sign is read from the
    float enclosure of the logit when it excludes 0, else decided in the field."""
    graph = vals.graph
    fld = graph.field
    box = enclose.readout_terms(model, vals.box)
    mid, rad = box.mid[:, 0], box.rad[:, 0]
    bias = model.readout.bias  # a float64: exact
    terms: dict[int, Number] = {}

    def term(v: int) -> Number:
        got = terms.get(v)
        if got is None:
            got = terms[v] = graph.readout_term(int(vals.rows[v]))
        return got

    b = _q(bias)

    def sign(v: int) -> bool:
        # term + bias ∈ [mid + bias − rad, mid + bias + rad], compared exactly
        c, r = _q(mid[v]) + b, _q(rad[v])
        if c - r > 0:
            return True
        if c + r < 0:
            return False
        return fld.sign(term(v) + graph.maps.readout_bias, "the readout's sign") > 0

    if not model.readout.pooled:
        t = tables[pos]
        return t.deps, [sign(v) for v in t.vid]
    n_tok = len(tables)
    # the per-position ranges of the terms, summed exactly from their float enclosures
    lo_sum = hi_sum = fmpq(0)
    for t in tables:
        vs = sorted(set(t.vid))
        lo_sum += min(_q(mid[v]) - _q(rad[v]) for v in vs)
        hi_sum += max(_q(mid[v]) + _q(rad[v]) for v in vs)
    if lo_sum / n_tok + b > 0:
        return (), [True]
    if hi_sum / n_tok + b < 0:
        return (), [False]
    inv = fld.num(1) / n_tok
    field_bias = graph.maps.readout_bias
    lo = fld.zero()
    hi = fld.zero()
    for t in tables:
        ts = [term(v) for v in set(t.vid)]
        lo, hi = lo + _min(fld, ts), hi + _max(fld, ts)
    if lo * inv + field_bias > 0:
        return (), [True]
    if hi * inv + field_bias < 0:
        return (), [False]
    deps = tuple(sorted({u for t in tables for u in t.deps}))
    if len(deps) > cap:
        _fail(
            "output",
            "readout",
            f"the mean readout's sign is not fixed by the per-position ranges and may depend "
            f"on {len(deps)} free inputs (more than {cap} to enumerate)",
        )
    out = []
    for combo in _assignments(deps, base):
        sym = dict(zip(deps, combo, strict=True))
        total = sum((term(t.vid[_row_of(t.deps, sym, base)]) for t in tables), fld.zero())
        out.append(fld.sign(total * inv + field_bias, "the mean readout's sign") > 0)
    return deps, out


def _q(x: float) -> fmpq:
    """The exact value of a float64."""
    return fmpq(*float(x).as_integer_ratio())


def _min(fld: Field, xs):
    if fld.exact:
        return min(xs)
    out = xs[0]
    for x in xs[1:]:
        out = out.min(x)
    return out


def _max(fld: Field, xs):
    if fld.exact:
        return max(xs)
    out = xs[0]
    for x in xs[1:]:
        out = out.max(x)
    return out


def _clash(deps: tuple[int, ...], base: int, decisions: list[bool], claimed: set[int]):
    """None if the decision is a function of the claimed positions; else the positions
    where two assignments with different decisions differ."""
    keep = [t for t, u in enumerate(deps) if u in claimed]
    seen: dict[tuple[int, ...], tuple[int, ...]] = {}
    for combo, dec in zip(_assignments(deps, base), decisions, strict=True):
        key = tuple(combo[t] for t in keep)
        other = seen.setdefault(key, combo)
        if decisions[_index(other, base)] != dec:
            return {u for u, a, b in zip(deps, combo, other, strict=True) if a != b}
    return None


def _index(combo: Sequence[int], base: int) -> int:
    r = 0
    for c in combo:
        r = r * base + c
    return r


# --------------------------------------------------------------------------- the check
def check(cert: Certificate, model: Model) -> CheckReport:
    """Re-derive every claim of ``cert`` from ``model`` (module docstring)."""
    t0 = time.perf_counter()
    facts: list[str] = []
    try:
        _check_identity(cert, model)
        arithmetic, output = escalate(
            lambda fld: _check_claims(cert, model, fld, facts), rational=is_rational(model)
        )
        if cert.misclassified is not None:
            _check_misclassified(cert, model, output, facts)
    except _Reject as rej:
        return CheckReport(False, (rej.failure,), tuple(facts), time.perf_counter() - t0)
    except Undecided as err:
        failure = Failure("arithmetic", "precision", err.message)
        return CheckReport(False, (failure,), tuple(facts), time.perf_counter() - t0)
    return CheckReport(
        True, (), tuple(facts), time.perf_counter() - t0, cert.output_dependency, arithmetic
    )


def _check_identity(cert: Certificate, model: Model) -> None:
    if cert.model_sha256 != model.digest:
        _fail(
            "model",
            "model.sha256",
            f"certificate is for model {cert.model_sha256[:12]}…, this model hashes to "
            f"{model.digest[:12]}… (a different or changed model)",
        )
    if tuple(cert.alphabet) != tuple(model.alphabet):
        _fail("alphabet", "alphabet", f"{cert.alphabet} is not the model's {model.alphabet}")
    if not model.is_hard:
        _fail(
            "model", "layers", "the model has softmax heads; restrictions apply to hard attention"
        )
    L = model.num_layers
    if len(cert.restrictions) != L + 1:
        _fail(
            "restrictions",
            "restrictions",
            f"{len(cert.restrictions)} restrictions, expected L + 1 = {L + 1}",
        )
    for k, rho in enumerate(cert.restrictions):
        if rho.n != cert.n:
            _fail("restrictions", f"restrictions[{k}]", f"has length {rho.n}, but n = {cert.n}")
        if k and not rho.refines(cert.restrictions[k - 1]):
            prev = cert.restrictions[k - 1]
            bad = next(
                i
                for i in range(cert.n)
                if prev.fixed[i] is not None and prev.fixed[i] != rho.fixed[i]
            )
            _fail(
                "restrictions",
                f"restrictions[{k}] position {bad + 1}",
                f"does not refine restrictions[{k - 1}]: {prev.fixed[bad]!r} became "
                f"{rho.fixed[bad] or '*'!r}",
            )
    if len(cert.dependency_sets) != L:
        _fail(
            "dependency_sets",
            "dependency_sets",
            f"{len(cert.dependency_sets)} layers, expected {L}",
        )
    n_tok = model.n_tokens(cert.n)
    for ell, claimed in enumerate(cert.dependency_sets, start=1):
        if len(claimed) != n_tok:
            _fail(
                "dependency_sets",
                f"dependency_sets[{ell - 1}]",
                f"{len(claimed)} positions, expected {n_tok} tokens",
            )
        big = max((len(s) for s in claimed), default=0)
        if big > cert.max_deps:
            _fail(
                "dependency_sets",
                f"dependency_sets[{ell - 1}]",
                f"a claimed set has {big} inputs, more than the certificate's cap {cert.max_deps}",
            )
    pos = model.readout.index(n_tok)
    if cert.output_position != pos:
        _fail(
            "output", "output.position", f"decision position is {pos}, not {cert.output_position}"
        )


def _check_claims(
    cert: Certificate, model: Model, fld: Field, facts: list[str]
) -> tuple[str, tuple[tuple[int, ...], int, list[bool]]]:
    graph = RowGraph(model, model.n_tokens(cert.n), fld)
    base = len(cert.restrictions[0].symbols)
    facts_here: list[str] = []
    tables, vals = _layer0(model, cert.restrictions[0], graph)
    for ell in range(1, model.num_layers + 1):
        rho = cert.restrictions[ell]
        tables = [_restrict(t, rho) for t in tables]
        claimed = cert.dependency_sets[ell - 1]
        tables, vals = _check_layer(model, ell, tables, vals, claimed, rho)
        biggest = max((len(s) for s in claimed), default=0)
        facts_here.append(
            f"layer {ell}: every activation depends on ≤ {biggest} free inputs under ρ_{ell} "
            f"({rho.num_free}/{cert.n} free)"
        )
    final = cert.final_restriction
    tables = [_restrict(t, final) for t in tables]
    deps, decisions = _decisions(model, tables, vals, cert.output_position, base, cert.max_deps)
    clash = _clash(deps, base, decisions, set(cert.output_dependency))
    if clash is not None:
        _fail(
            "output",
            "output.dependency_set",
            f"two inputs that agree on the claimed set {_fmt(cert.output_dependency)} get "
            f"different decisions; they differ only at input position(s) {_fmt(clash)}",
        )
    if cert.output_dependency:
        what = f"depends only on input positions {_fmt(cert.output_dependency)}"
    else:
        what = "is constant (it depends on no input position)"
    facts_here.append(
        f"the decision at n = {cert.n} {what} under ρ_L ({final.num_free}/{cert.n} free)"
    )
    facts.extend(facts_here)
    arithmetic = "exact rationals" if fld.exact else f"arb, {fld.prec} bits"
    return arithmetic, (deps, base, decisions)


def _check_misclassified(
    cert: Certificate,
    model: Model,
    output: tuple[tuple[int, ...], int, list[bool]],
    facts: list[str],
) -> None:
    from attncert.languages.registry import language as get_language

    m = cert.misclassified
    assert m is not None
    if cert.language is None:
        _fail("misclassified", "language", "misclassified strings given but no language named")
    try:
        lang = get_language(cert.language)
    except Exception as err:  # an unknown language name is a rejected claim
        _fail("misclassified", "language", str(err))
    rho = cert.final_restriction
    a, b = m.strings
    for k, s in enumerate(m.strings):
        if len(s) != cert.n:
            _fail("misclassified", f"strings[{k}]", f"has length {len(s)}, not n = {cert.n}")
        if not rho.compatible(s):
            bad = next(
                i for i in range(cert.n) if rho.fixed[i] is not None and rho.fixed[i] != s[i]
            )
            _fail(
                "misclassified",
                f"strings[{k}] position {bad + 1}",
                f"is {s[bad]!r} but the final restriction fixes it to {rho.fixed[bad]!r}",
            )
        if any(c not in rho.symbols for c in s):
            _fail(
                "misclassified",
                f"strings[{k}]",
                f"uses a symbol outside the free symbols {''.join(rho.symbols)}",
            )
    differ = [u for u in cert.output_dependency if a[u] != b[u]]
    if differ:
        _fail(
            "misclassified",
            "strings",
            f"the strings differ at position {differ[0] + 1} of the output dependency set",
        )
    deps, base, decisions = output
    alpha = {c: k for k, c in enumerate(rho.symbols)}
    for k, s in enumerate(m.strings):
        try:
            run = decide(model, s)
        except Undecided as err:
            _fail("misclassified", f"strings[{k}]", err.message)
        table = decisions[_row_of(deps, {u: alpha[s[u]] for u in deps}, base)]
        if run != table:
            _fail(
                "misclassified",
                f"strings[{k}]",
                f"the rigorous forward pass gives {run}, the collapsed tables {table}",
            )
        if run != m.decisions[k]:
            _fail(
                "misclassified", f"decisions[{k}]", f"the model answers {run}, not {m.decisions[k]}"
            )
        member = lang.contains(s)
        if member != m.membership[k]:
            _fail(
                "misclassified",
                f"membership[{k}]",
                f"{_short(s, 40)!r} ∈ {cert.language} is {member}",
            )
    if m.membership[0] == m.membership[1]:
        _fail(
            "misclassified",
            "membership",
            "both strings have the same membership: nothing is misclassified",
        )
    if m.decisions[0] != m.decisions[1]:
        _fail(
            "misclassified",
            "decisions",
            "the model answers the two strings differently: nothing is misclassified",
        )
    wrong = next(
        s for s, mem, dec in zip(m.strings, m.membership, m.decisions, strict=True) if mem != dec
    )
    facts.append(f"the model misclassifies {_short(wrong, 40)!r} for {cert.language}")
    outside = [u for u in rho.free_positions if u not in set(cert.output_dependency)]
    if cert.language in ("parity", "parity-odd") and outside:
        facts.append(
            f"flipping free position {outside[0] + 1} (outside the dependency set) pairs the "
            "ρ_L-compatible strings so that each pair gets one answer but has both parities: "
            "accuracy on them is exactly 1/2"
        )
