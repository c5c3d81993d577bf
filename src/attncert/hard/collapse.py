"""Layer collapse under a restriction: how the search builds the tables of Hahn 2020,
Lemma 4 (supplement S1, Definitions 7–8 and Lemma 15). Untrusted: the kernel
(:mod:`attncert.kernel.hard.checker`) re-verifies every claimed dependency set by its own,
different procedure.

Given tables for the activations of layer ℓ−1 under ρ (:mod:`attncert.hard.tables`),
compute tables for layer ℓ:

1. For each head h, query position i and value z of y_i, and every key position m:
   M(i,h,z,m) = max over the values w of m of score(z, w) — the maximum attention
   value (7) (an over-approximation, which is what soundness needs).
2. Blocker: the best *constant* position b (its table has one value), by score with
   the head's tie rule.
3. Candidates Above(i,h,z): non-constant m with M > s_b, or M = s_b and m wins the
   tie against b (m < b for leftmost, m > b for rightmost, any m for average-hard).
   On every ρ-compatible input with y_i = z no other position can be attended to.
4. S'_i = S_i ∪ ⋃_{h,z} ⋃_{m ∈ Above} S_m, and the new table is computed by
   enumerating the assignments of S'_i and evaluating only Above ∪ {b}.

Scores are first compared in float64 with a rigorous error bound
(:mod:`attncert.arith.filter`); overlapping intervals are re-decided in the
evaluation's field — exactly, or in arb balls with structural ties, raising
:class:`~attncert.arith.field.NeedPrecision` when balls do not separate (the caller
escalates the precision).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np
from flint import fmpq

from attncert.arith import enclose
from attncert.arith.field import Number, escalate
from attncert.arith.filter import Enclosed, row_bounds, score_pairs
from attncert.arith.rows import RowGraph
from attncert.errors import AttncertError
from attncert.hard.tables import (
    Evaluation,
    Table,
    initial_tables,
    make_table,
    restrict_table,
    stack_values,
)
from attncert.hard.threads import map_heads
from attncert.model.spec import AttentionKind, Model
from attncert.restriction import Restriction

__implements__ = (
    "Hahn Lemma 4",
    "Hahn eq. (7)",
    "Hahn S1 Definition 7",
    "Hahn S1 eq. (7)",
)

_PARALLEL_SCALE = 1  # tests raise it to force threads on small layers
_ENTRIES = 1 << 20  # float scores per block of query rows (8 MiB: cache-friendly)


class CollapseError(AttncertError):
    """A collapse cannot be completed (e.g. a dependency set exceeds the cap)."""


@dataclass(frozen=True)
class Capture:
    """Where head h at position i may attend when y_i takes a given value."""

    blocker: int | None  # best constant token position, None if no constant is visible
    above: tuple[int, ...]  # non-constant positions that may still win
    tied: tuple[int, ...]  # average-hard: constant positions tied with the blocker (incl. it)
    visible: bool  # False iff the query sees no key at all (head output b_O)

    @property
    def captured(self) -> bool:
        """Attention is fully determined by the blocker (the paper's 'satisfied' at k = 1)."""
        return not self.above


@dataclass(frozen=True, eq=False)
class HeadRows:
    """One head's queries, keys and value rows for every (position, value) row, as
    float enclosures (field values on demand from the evaluation's RowGraph)."""

    q: Enclosed  # float midpoints and radii (R × d_k)
    k: Enclosed
    ov: Enclosed  # (W_V u + b_V) W_Oᵀ per row
    bounds: np.ndarray  # (R,) per query row: |s − s̃| ≤ bound against every key row


@dataclass(frozen=True, eq=False)
class LayerRows:
    """Every (position, value) row of a layer's input tables, projected per head."""

    owner: np.ndarray  # (R,) token position of each row
    starts: np.ndarray  # (N,) first row of each position
    keys: list[int]
    rows: np.ndarray  # (R,) graph row of each value
    x: Enclosed  # the values themselves
    heads: tuple[HeadRows, ...]


def layer_rows(ev: Evaluation, li: int, tables: Sequence[Table]) -> LayerRows:
    """Project every table value through layer ``li``'s (0-based) attention inputs."""
    owner, rows, keys = stack_values(tables)
    n_tok = len(tables)
    x = Enclosed(
        np.concatenate([t.floats for t in tables], axis=0),
        np.concatenate([t.rads for t in tables], axis=0),
    )
    u = enclose.attention_inputs(ev.model, li, x)
    heads = []
    for hi, head in enumerate(ev.model.layers[li].heads):
        # RoPE / ALiBi: at each value's own position (values are position-specific)
        q, k, ov = (
            enclose.projections_at(ev.model, li, hi, u, owner)
            if head.positional
            else enclose.projections(ev.model, li, hi, u)
        )
        heads.append(HeadRows(q, k, ov, row_bounds(q, k)))
    starts = np.searchsorted(owner, np.arange(n_tok))
    return LayerRows(owner, starts, keys, rows, x, tuple(heads))


def _wins_tie(kind: AttentionKind, m: int, b: int) -> bool:
    """Whether position m beats position b at an exactly equal score."""
    if kind is AttentionKind.LEFTMOST:
        return m < b
    if kind is AttentionKind.RIGHTMOST:
        return m > b
    return True  # average-hard: a tie changes the average


def row_index(tables: Sequence[Table], positions: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """(len(positions), r_max) row indices of each position's values, padded by repetition."""
    sizes = np.array([len(tables[m].values) for m in positions], dtype=np.int64)
    rmax = int(sizes.max(initial=1))
    offs = np.minimum(np.arange(rmax)[None, :], np.maximum(sizes - 1, 0)[:, None])
    return starts[positions][:, None] + offs


class _Decider:
    """Exact / ball comparisons of one head's scores, with structural ties."""

    def __init__(self, ev: Evaluation, lr: LayerRows, li: int, hi: int, where: str):
        self.fld = ev.field
        self.graph = ev.graph
        self.keys = lr.keys
        self.rows = lr.rows
        self.hr = lr.heads[hi]
        self.li, self.hi = li, hi
        self.where = where
        self._cache: dict[tuple[int, int], Number] = {}

    def score(self, qrow: int, krow: int) -> Number:
        s = self._cache.get((qrow, krow))
        if s is None:
            s = self._cache[(qrow, krow)] = self.graph.score(
                int(self.rows[qrow]), int(self.rows[krow]), self.li, self.hi
            )
        return s

    def cmp(self, qrow: int, a: int, b: int) -> int:
        """sign(score(q, a) − score(q, b)); equal identity keys tie exactly."""
        return self.fld.compare(
            self.score(qrow, a),
            self.score(qrow, b),
            self.keys[a] == self.keys[b],
            f"a score comparison of {self.where}",
        )

    def maxima(self, qrow: int, krows: Sequence[int]) -> list[int]:
        """The key rows attaining the maximum score (in the given order)."""
        best = [krows[0]]
        for r in krows[1:]:
            c = self.cmp(qrow, r, best[0])
            if c > 0:
                best = [r]
            elif c == 0:
                best.append(r)
        return best


def analyze_head(
    ev: Evaluation, li: int, hi: int, tables: Sequence[Table], lr: LayerRows
) -> tuple[tuple[Capture, ...], ...]:
    """Captures for every (query position, query value) of one head (steps 1–3).

    Float scores with a per-query error bound E decide the common cases: the blocker
    is the unique constant position whose score can reach the constant maximum, and a
    query is *quiet* when every non-constant key's score is below s_b − 2E. Everything
    else is decided per key position in the field, where the intervals overlap."""
    head = ev.model.layers[li].heads[hi]
    hr = lr.heads[hi]
    dec = _Decider(ev, lr, li, hi, f"layers[{li}].heads[{hi}]")
    n_tok = len(tables)
    owner = lr.owner
    kind = head.kind
    const = np.array([t.is_constant for t in tables])
    const_pos = np.nonzero(const)[0]
    const_rows = lr.starts[const_pos]
    nc_pos = np.nonzero(~const)[0]
    nc_index = row_index(tables, nc_pos, lr.starts)
    nc_rows = nc_index.ravel()
    nc_owner = owner[nc_rows]
    sees_any = head.mask.sees_any(n_tok)
    all_visible = np.ones(n_tok, dtype=bool)
    R = len(owner)
    captures: list[list[Capture]] = [[] for _ in range(n_tok)]
    no_view = Capture(None, (), (), False)
    plain: dict[tuple[int, tuple[int, ...]], Capture] = {}
    qm, km = hr.q.mid, hr.k.mid
    k_c, k_nc = km[const_rows].T.copy(), km[nc_rows].T.copy()
    chunk = max(8, _ENTRIES // max(1, len(const_rows) + len(nc_rows)))
    for c0 in range(0, R, chunk):
        rows = np.arange(c0, min(R, c0 + chunk))
        c = len(rows)
        err = hr.bounds[rows]
        qpos = owner[rows]
        blocker = np.full(c, -1, dtype=np.int64)
        s_b = np.full(c, -np.inf)
        n_near = np.zeros(c, dtype=np.int64)
        sc_c = None
        vis = head.mask.rows(qpos, n_tok)  # None: every key visible
        if len(const_pos):
            sc_c = qm[rows] @ k_c
            if vis is not None:
                sc_c = np.where(vis[:, const_pos], sc_c, -np.inf)
            top = sc_c.max(axis=1)
            near_c = sc_c >= (top - 2 * err)[:, None]
            n_near = near_c.sum(axis=1) * np.isfinite(top)
            one = n_near == 1
            blocker[one] = const_pos[np.argmax(sc_c, axis=1)[one]]
            s_b = top
        if len(nc_pos):
            sc_n = qm[rows] @ k_nc
            if vis is not None:
                sc_n = np.where(vis[:, nc_owner], sc_n, -np.inf)
            nc_top = sc_n.max(axis=1)
        else:
            sc_n = np.zeros((c, 0))
            nc_top = np.full(c, -np.inf)
        anyvis = sees_any[qpos]
        quiet = (n_near == 1) & (nc_top < s_b - 2 * err)
        for k, qrow in enumerate(rows.tolist()):
            i = int(owner[qrow])
            if not anyvis[k]:
                captures[i].append(no_view)
                continue
            if quiet[k]:
                b = int(blocker[k])
                tied = (b,) if kind is AttentionKind.AVERAGE else ()
                cap = plain.get((b, tied))
                if cap is None:
                    cap = plain[(b, tied)] = Capture(b, (), tied, True)
                captures[i].append(cap)
                continue
            captures[i].append(
                _busy_capture(
                    dec,
                    qrow,
                    kind,
                    tables,
                    lr,
                    float(err[k]),
                    const_pos,
                    None if sc_c is None else sc_c[k],
                    int(n_near[k]),
                    int(blocker[k]),
                    nc_pos,
                    sc_n[k],
                    all_visible if vis is None else vis[k],
                )
            )
    return tuple(tuple(c) for c in captures)


def _busy_capture(
    dec: _Decider,
    qrow: int,
    kind: AttentionKind,
    tables: Sequence[Table],
    lr: LayerRows,
    err: float,
    const_pos: np.ndarray,
    sc_c: np.ndarray | None,
    n_near: int,
    blocker: int,
    nc_pos: np.ndarray,
    sc_n_row: np.ndarray,
    vis_row: np.ndarray,
) -> Capture:
    """Capture of one query whose blocker or candidates need a closer look."""
    b = blocker
    tied: tuple[int, ...] = ()
    decided_in_field = False
    if sc_c is not None and n_near >= 1:
        top = sc_c.max()
        if n_near > 1:
            cand = [int(p) for p in const_pos[sc_c >= top - 2 * err]]
            at_max_rows = dec.maxima(qrow, [int(lr.starts[p]) for p in cand])
            at_max = sorted(int(lr.owner[r]) for r in at_max_rows)
            b = at_max[-1] if kind is AttentionKind.RIGHTMOST else at_max[0]
            tied = tuple(at_max) if kind is AttentionKind.AVERAGE else ()
            decided_in_field = True
        elif kind is AttentionKind.AVERAGE:
            tied = (b,)
    if b < 0:
        above = tuple(int(m) for m in nc_pos[vis_row[nc_pos]])
        return Capture(None, above, (), True)
    # float window of the blocker's score: its float score is the constant top, or (after a
    # field tie-break among near constants) somewhere in [top − 2E, top]
    s_hi = float(sc_c.max())
    s_lo = s_hi - 2 * err if decided_in_field else s_hi
    npos = len(nc_pos)
    m_best = sc_n_row.reshape(npos, -1).max(axis=1) if npos else sc_n_row
    inside = m_best > s_hi + 2 * err
    unsure = ~inside & (m_best >= s_lo - 2 * err)
    above = {int(m) for m in nc_pos[inside]}
    brow = int(lr.starts[b])
    for m in nc_pos[unsure].tolist():
        start = int(lr.starts[m])
        for r in range(start, start + len(tables[m].values)):
            c = dec.cmp(qrow, r, brow)
            if c > 0 or (c == 0 and _wins_tie(kind, m, b)):
                above.add(m)
                break
    return Capture(b, tuple(sorted(above)), tied, True)


@dataclass(frozen=True, eq=False)
class LayerCollapse:
    """Result of collapsing one layer: new tables and the captures that justify them."""

    layer: int  # 1-based layer index
    restriction: Restriction
    inputs: tuple[Table, ...]  # the layer's input tables under the restriction
    tables: tuple[Table, ...]
    captures: tuple[tuple[tuple[Capture, ...], ...], ...]  # [head][position][value]
    graph: RowGraph | None = None  # the rows the tables' values refer to

    @property
    def dependency_sets(self) -> tuple[tuple[int, ...], ...]:
        return tuple(t.deps for t in self.tables)


def _choose(
    dec: _Decider, kind: AttentionKind, cands: list[tuple[int, int]], qrow: int
) -> list[int]:
    """Argmax among candidate (position, key row) pairs; returns the attended key rows."""
    if len(cands) == 1:
        return [cands[0][1]]
    hr = dec.hr
    krows = np.array([r for _, r in cands])
    s, e = score_pairs(hr.q.mid[qrow], hr.q.rad[qrow], hr.k.take(krows))
    near = np.nonzero((s + e) >= (s - e).max())[0].tolist()
    if len(near) == 1:
        return [int(krows[near[0]])]
    best = dec.maxima(qrow, [int(krows[t]) for t in near])
    pos_of = {int(krows[t]): cands[t][0] for t in near}
    at_max = sorted((pos_of[r], r) for r in best)
    if kind is AttentionKind.AVERAGE:
        # several candidate rows may belong to one position only if they are the same row
        return sorted({r for _, r in at_max})
    return [at_max[0][1]] if kind is AttentionKind.LEFTMOST else [at_max[-1][1]]


def collapse_layer(
    ev: Evaluation,
    layer_index: int,
    tables: Sequence[Table],
    rho: Restriction,
    *,
    max_deps: int = 16,
) -> LayerCollapse:
    """Collapse layer ``layer_index`` (1-based) given tables of the layer below."""
    model = ev.model
    li = layer_index - 1
    tables = tuple(restrict_table(t, rho) for t in tables)
    layer = model.layers[li]
    n_tok = len(tables)
    base = len(rho.symbols)
    lr = layer_rows(ev, li, tables)
    # heads are independent: on a large layer they are analyzed in threads (their float
    # products release the GIL), kept in head order — the same captures either way
    entries = len(lr.owner) ** 2 * _PARALLEL_SCALE
    captures = tuple(
        map_heads(lambda hi, _head: analyze_head(ev, li, hi, tables, lr), layer.heads, entries)
    )
    deciders = [
        _Decider(ev, lr, li, hi, f"layers[{li}].heads[{hi}]") for hi in range(len(layer.heads))
    ]

    new_deps = []
    for i in range(n_tok):
        deps = set(tables[i].deps)
        for h in range(len(layer.heads)):
            for cap in captures[h][i]:
                for m in cap.above:
                    deps.update(tables[m].deps)
        if len(deps) > max_deps:
            raise CollapseError(
                f"layer {layer_index}, token position {i}: the activation would depend on "
                f"{len(deps)} input positions, more than the cap of {max_deps}",
                expected="a restriction under which every head is captured",
            )
        new_deps.append(tuple(sorted(deps)))

    own_rows: list[int] = []  # per output row: the query's own table row (into lr)
    picks: list[list[list[int]]] = []  # per output row, per head: attended table rows
    spans = []
    for i in range(n_tok):
        deps = new_deps[i]
        start = len(own_rows)
        for combo in product(range(base), repeat=len(deps)):
            sym = dict(zip(deps, combo, strict=True))
            vi = tables[i].value_of_row[_row(tables[i], sym)]
            qrow = int(lr.starts[i]) + vi
            row_picks = []
            for h, head in enumerate(layer.heads):
                cap = captures[h][i][vi]
                if not cap.visible:
                    row_picks.append([])
                    continue
                if not cap.above and not cap.tied and cap.blocker is not None:
                    row_picks.append([int(lr.starts[cap.blocker])])
                    continue
                cands = [
                    (m, int(lr.starts[m]) + tables[m].value_of_row[_row(tables[m], sym)])
                    for m in cap.above
                ]
                extra = (
                    cap.tied if cap.tied else ((cap.blocker,) if cap.blocker is not None else ())
                )
                cands += [(b, int(lr.starts[b])) for b in extra]
                row_picks.append(_choose(deciders[h], head.kind, cands, qrow))
            own_rows.append(qrow)
            picks.append(row_picks)
        spans.append((start, len(own_rows)))

    box = _finish(ev, li, lr, own_rows, picks)
    graph = ev.graph
    rows = lr.rows
    new_rows = graph.add_rows(
        layer_index,
        rows[np.array(own_rows, dtype=np.int64)],
        [tuple(tuple(int(rows[r]) for r in h) for h in p) for p in picks],
    )
    keys = [graph.keys[r] for r in new_rows.tolist()]
    new_tables = tuple(
        make_table(new_deps[i], base, new_rows[a:b], box.mid[a:b], box.rad[a:b], keys[a:b])
        for i, (a, b) in enumerate(spans)
    )
    return LayerCollapse(layer_index, rho, tables, new_tables, captures, graph)


def _row(table: Table, sym: dict[int, int]) -> int:
    r = 0
    for u in table.deps:
        r = r * table.base + sym[u]
    return r


def _finish(
    ev: Evaluation, li: int, lr: LayerRows, own_rows: list[int], picks: list[list[list[int]]]
) -> Enclosed:
    """Enclosures of the new rows: own value + Σ_heads (mean of the attended OV rows +
    b_O), then the rest of the layer."""
    d = ev.model.d
    own = np.array(own_rows, dtype=np.int64)
    attn = enclose.point(np.zeros((len(own_rows), d)))
    for h, head in enumerate(ev.model.layers[li].heads):
        ov = lr.heads[h].ov
        single = np.array([p[h][0] if len(p[h]) == 1 else 0 for p in picks], dtype=np.int64)
        out = ov.take(single)
        multi = [t for t, p in enumerate(picks) if len(p[h]) > 1]
        if multi:
            avg = enclose.mean_rows(ov, [np.array(picks[t][h]) for t in multi])
            out.mid[multi], out.rad[multi] = avg.mid, avg.rad
        none = np.array([not p[h] for p in picks], dtype=bool)
        if none.any():
            out.mid[none], out.rad[none] = 0.0, 0.0
        attn = enclose.add(attn, enclose.add(out, enclose.point(head.bias("b_o")[None, :])))
    return enclose.finish_layer(ev.model, li, lr.x.take(own), attn)


def table_decisions(ev: Evaluation, table: Table) -> list[bool]:
    """accept iff the readout logit w·r + b > 0, for each value of a table (r after the
    final norm): read from the float enclosure of the logit when it excludes 0
    (compared exactly), else decided in the field."""
    box = enclose.readout_terms(ev.model, Enclosed(table.floats, table.rads))
    bias = _q(ev.model.readout.bias)
    out = []
    for v, (m, r) in enumerate(zip(box.mid[:, 0].tolist(), box.rad[:, 0].tolist(), strict=True)):
        c, e = _q(m) + bias, _q(r)
        if c - e > 0:
            out.append(True)
        elif c + e < 0:
            out.append(False)
        else:
            logit = ev.graph.readout_term(table.values[v]) + ev.maps.readout_bias
            out.append(ev.field.sign(logit, "the readout's sign") > 0)
    return out


def _q(x: float) -> fmpq:
    return fmpq(*float(x).as_integer_ratio())


def collapse_all(
    model: Model, restrictions: Sequence[Restriction], *, max_deps: int = 16
) -> tuple[tuple[Table, ...], list[LayerCollapse]]:
    """Collapse every layer: layer ℓ under ``restrictions[ℓ]`` (index 0 = layer-0 tables),
    with the precision escalated until every comparison is decided."""
    from attncert.kernel.hard.decide import is_rational

    def run(fld):
        ev = Evaluation(model, fld)
        tables = initial_tables(ev, restrictions[0])
        steps = []
        for ell in range(1, model.num_layers + 1):
            step = collapse_layer(ev, ell, tables, restrictions[ell], max_deps=max_deps)
            steps.append(step)
            tables = step.tables
        final = tuple(restrict_table(t, restrictions[-1]) for t in tables)
        return final, steps

    return escalate(run, rational=is_rational(model))
