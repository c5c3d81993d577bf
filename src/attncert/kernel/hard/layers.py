"""Claim 3 of the trusted checker (:mod:`attncert.kernel.hard.checker`), one layer at a time:
for each token position i and each assignment a of its *claimed* dependency set S_i,
the activation y⁽ˡ⁾_i is determined by a — its own input is, and for every head the
best key among the positions whose tables a determines beats, by score or by the head's
tie rule, every value of every other visible position (Hahn 2020, Lemma 4's conclusion
on this instance, verified claim by claim; no code shared with the search's collapse).

Float facts first (:class:`_Slots`, :func:`_attend_fast`: decided only when the
enclosures separate by more than the rigorous bound 2E), the key-by-key check in the
field otherwise (:func:`_attend`). Part of the trust boundary.

A large layer's heads may be bounded in threads: how many is the caller's choice
(:data:`Workers`, e.g. :func:`attncert.hard.threads.head_workers`, untrusted); the kernel
runs its own per-head function on that many threads and keeps the heads in order, so the
count cannot change a result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import product

import numpy as np

from attncert.arith import enclose
from attncert.arith.filter import Enclosed, row_bounds, top_columns
from attncert.arith.rows import RowGraph
from attncert.kernel.core.failure import _fail, _fmt
from attncert.model.spec import AttentionKind, Model
from attncert.restriction import Restriction

#: How many threads a layer's heads may use, chosen by the caller: (heads, query–key
#: scores per head) → a count (≤ 1: one after the other). It decides only how many threads
#: run the kernel's own per-head function; the heads are kept in order.
Workers = Callable[[int, int], int]


def _map_heads(fn, heads: Sequence, entries: int, workers: Workers | None) -> list:
    """``[fn(h, head) for h, head in enumerate(heads)]``, in head order, on as many threads
    as ``workers`` allows (same results for every count)."""
    items = list(enumerate(heads))
    k = 1 if workers is None else min(len(items), int(workers(len(items), entries)))
    if k <= 1:
        return [fn(h, head) for h, head in items]
    with ThreadPoolExecutor(max_workers=k) as pool:
        return list(pool.map(lambda item: fn(*item), items))


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
    """Every value's q, k and OV per head; with RoPE or ALiBi at the value's own position
    (values are position-specific then: :class:`~attncert.arith.rows.RowGraph`)."""
    u = enclose.attention_inputs(model, li, vals.box)
    heads = model.layers[li].heads
    at = vals.graph.positions(vals.rows) if vals.graph.positional else None
    return [
        _Projected(
            *(
                enclose.projections_at(model, li, hi, u, at)
                if h.positional
                else enclose.projections(model, li, hi, u)
            )
        )
        for hi, h in enumerate(heads)
    ]


class _Slots:
    """Query slots (position i, value v of y_i), in position order, and for each slot
    the float facts the claims need (module docstring, claim 3): per head the best
    constant key (its score, value and how many constants come within 2E of it) and the
    non-constant positions with the highest score upper bounds."""

    TOP = 4

    def __init__(
        self, model: Model, li: int, tables: list[_Table], pos_vids, proj, workers: Workers | None
    ):
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
        block = max(8, (1 << 20) // max(len(ccols) + len(nc_pos), 1))

        def one_head(hi: int, head) -> tuple:
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
            return (c_top, c_arg, c_near, err, top_pos, top_max, rest)

        # the heads are independent: a large layer's are bounded in threads, kept in order
        entries = S * (len(ccols) + len(nc_pos))
        self.heads = _map_heads(one_head, model.layers[li].heads, entries, workers)


def _check_layer(
    model: Model,
    ell: int,
    tables: list[_Table],
    vals: _Values,
    claimed: Sequence[Sequence[int]],
    rho: Restriction,
    stats: dict[str, int] | None = None,
    workers: Workers | None = None,
) -> tuple[list[_Table], _Values]:
    """Verify layer ℓ's claimed dependency sets and compute its tables (module docstring,
    claim 3). ``stats``, if given, counts the (head, position, assignment) cases and those
    whose attended key is a constant position (a blocker, S1 Definition 7); ``workers``:
    how many threads the heads' float facts may use (:data:`Workers`; None: one)."""
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
    const_vids = {t.vid[0] for t in tables if not t.deps}
    grouping = _Grouping(pos_vids)
    slots = _Slots(model, li, tables, pos_vids, proj, workers)
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
                if stats is not None:
                    stats["cases"] = stats.get("cases", 0) + 1
                    stats["blocked"] = stats.get("blocked", 0) + (pick[0] in const_vids)
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
