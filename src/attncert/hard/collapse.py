"""Layer collapse under a restriction: the checkable core of the Depth Reduction
Lemma (Hahn 2020, Lemma 4; supplement S1, Definitions 7–8 and Lemma 15).

Given exact tables for the activations of layer ℓ−1 under ρ
(:mod:`attncert.hard.tables`), compute exact tables for layer ℓ:

1. For each head h, query position i and value z of y_i, and every key position m:
   M(i,h,z,m) = max over the values w of m of score(z, w) — the maximum attention
   value (7) (an over-approximation, which is what soundness needs).
2. Blocker: the best *constant* position b (its table has one value), by exact
   score with the head's tie rule.
3. Candidates Above(i,h,z): non-constant m with M > s_b, or M = s_b and m wins the
   tie against b (m < b for leftmost, m > b for rightmost, any m for average-hard).
   On every ρ-compatible input with y_i = z no other position can be attended to.
4. S'_i = S_i ∪ ⋃_{h,z} ⋃_{m ∈ Above} S_m, and the new table is computed exactly by
   enumerating the assignments of S'_i and evaluating only Above ∪ {b}.

Every comparison is exact. Scores are first computed in float64 with the
rigorous error bound of :class:`attncert.model.exact.ScoreFilter`; whenever two
intervals overlap, the decision is re-made in exact rational arithmetic.

Part of the trusted kernel (see :mod:`attncert.hard.checker`): imports no solver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np
from flint import fmpq, fmpq_mat

from attncert.errors import AttncertError
from attncert.hard.restriction import Restriction
from attncert.hard.tables import (
    Table,
    Vector,
    exact_matrix,
    initial_tables,
    make_table,
    restrict_table,
    stack_values,
)
from attncert.model.exact import ExactHead, ScoreFilter, exact_weights
from attncert.model.spec import AttentionKind, Head, Model

__implements__ = (
    "Hahn Lemma 4",
    "Hahn eq. (7)",
    "Hahn S1 Definition 7",
    "Hahn S1 eq. (7)",
)

_CHUNK = 256


class CollapseError(AttncertError):
    """A collapse cannot be completed (e.g. a dependency set exceeds the cap)."""


@dataclass(frozen=True)
class Capture:
    """Where head h at position i may attend when y_i takes a given value."""

    blocker: int | None  # best constant token position, None if no constant is visible
    above: tuple[int, ...]  # non-constant positions that may still win
    tied: tuple[int, ...]  # average-hard: constant positions tied with the blocker (incl. it)
    visible: bool  # False iff the query sees no key at all (head output 0)

    @property
    def captured(self) -> bool:
        """Attention is fully determined by the blocker (the paper's 'satisfied' at k = 1)."""
        return not self.above


@dataclass(frozen=True, eq=False)
class HeadScores:
    """Float scores of one head over all (position, value) rows, with error bounds."""

    owner: np.ndarray  # (R,) token position of each row
    starts: np.ndarray  # (N,) first row of each position
    flt: ScoreFilter


def head_scores(head: Head, floats: np.ndarray, owner: np.ndarray, n_tok: int) -> HeadScores:
    starts = np.searchsorted(owner, np.arange(n_tok))
    return HeadScores(owner=owner, starts=starts, flt=ScoreFilter.build(head, floats))


class _Exact:
    """Exact scores score(z, w) = zᵀ (W_Qᵀ W_K) w, with the query side cached."""

    def __init__(self, eh: ExactHead, vectors: Sequence[Vector], d: int):
        self.eh = eh
        self.vectors = vectors
        self.d = d
        self._zq: dict[int, list[fmpq]] = {}

    def score(self, qrow: int, krow: int) -> fmpq:
        zq = self._zq.get(qrow)
        if zq is None:
            z = fmpq_mat(1, self.d, list(self.vectors[qrow]))
            zq = self._zq[qrow] = (z * self.eh.wqk).entries()
        w = self.vectors[krow]
        return sum((a * b for a, b in zip(zq, w, strict=True)), fmpq(0))


def _wins_tie(kind: AttentionKind, m: int, b: int) -> bool:
    """Whether position m beats position b at an exactly equal score."""
    if kind is AttentionKind.LEFTMOST:
        return m < b
    if kind is AttentionKind.RIGHTMOST:
        return m > b
    return True  # average-hard: a tie changes the average


def _position_max(sc: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Per-position maximum of row scores: ``index`` (P × r_max) lists each position's
    rows (padded by repetition)."""
    return sc[:, index].max(axis=2)


def row_index(tables: Sequence[Table], positions: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """(len(positions), r_max) row indices of each position's values, padded by repetition."""
    sizes = np.array([len(tables[m].values) for m in positions], dtype=np.int64)
    rmax = int(sizes.max(initial=1))
    offs = np.minimum(np.arange(rmax)[None, :], np.maximum(sizes - 1, 0)[:, None])
    return starts[positions][:, None] + offs


def analyze_head(
    model: Model,
    head: Head,
    eh: ExactHead,
    tables: Sequence[Table],
) -> tuple[tuple[tuple[Capture, ...], ...], HeadScores, _Exact]:
    """Captures for every (query position, query value) of one head (steps 1–3).

    Float scores with a per-query error bound E decide the common cases: the blocker
    is the unique constant position whose score can reach the constant maximum, and a
    query is *quiet* when every non-constant key's score is below s_b − 2E. Everything
    else is decided per key position, exactly where the intervals overlap."""
    n_tok = len(tables)
    owner, floats, vectors = stack_values(tables)
    hs = head_scores(head, floats, owner, n_tok)
    flt = hs.flt
    ex = _Exact(eh, vectors, model.d)
    kind = head.kind
    const = np.array([t.is_constant for t in tables])
    const_pos = np.nonzero(const)[0]
    const_rows = hs.starts[const_pos]
    nc_pos = np.nonzero(~const)[0]
    nc_index = row_index(tables, nc_pos, hs.starts)
    nc_rows = nc_index.ravel()
    nc_owner = owner[nc_rows]
    vis_all = head.mask.matrix(n_tok)
    masked = head.mask.value != "none"
    R = len(owner)
    captures: list[list[Capture]] = [[] for _ in range(n_tok)]
    no_view = Capture(None, (), (), False)
    plain: dict[tuple[int, tuple[int, ...]], Capture] = {}
    for c0 in range(0, R, _CHUNK):
        rows = np.arange(c0, min(R, c0 + _CHUNK))
        c = len(rows)
        err = flt.bound(rows)
        qpos = owner[rows]
        blocker = np.full(c, -1, dtype=np.int64)
        s_b = np.full(c, -np.inf)
        n_near = np.zeros(c, dtype=np.int64)
        if len(const_pos):
            sc_c = flt.scores(rows, const_rows)
            if masked:
                sc_c = np.where(vis_all[np.ix_(qpos, const_pos)], sc_c, -np.inf)
            top = sc_c.max(axis=1)
            near_c = sc_c >= (top - 2 * err)[:, None]
            n_near = near_c.sum(axis=1) * np.isfinite(top)
            one = n_near == 1
            blocker[one] = const_pos[np.argmax(sc_c, axis=1)[one]]
            s_b = top
        if len(nc_pos):
            sc_n = flt.scores(rows, nc_rows)
            if masked:
                sc_n = np.where(vis_all[np.ix_(qpos, nc_owner)], sc_n, -np.inf)
            nc_top = sc_n.max(axis=1)
        else:
            sc_n = np.zeros((c, 0))
            nc_top = np.full(c, -np.inf)
        anyvis = vis_all[qpos].any(axis=1)
        quiet = (n_near == 1) & (nc_top < s_b - 2 * err)
        for k, qrow in enumerate(rows.tolist()):
            i = int(owner[qrow])
            if not anyvis[k]:
                captures[i].append(no_view)
                continue
            if quiet[k]:
                b = int(blocker[k])
                tied = (b,) if kind is AttentionKind.AVERAGE else ()
                key = (b, tied)
                cap = plain.get(key)
                if cap is None:
                    cap = plain[key] = Capture(b, (), tied, True)
                captures[i].append(cap)
                continue
            captures[i].append(
                _busy_capture(
                    k,
                    qrow,
                    kind,
                    tables,
                    hs,
                    ex,
                    err[k],
                    const_pos,
                    const_rows,
                    sc_c[k] if len(const_pos) else None,
                    n_near[k],
                    int(blocker[k]),
                    nc_pos,
                    nc_index,
                    sc_n[k],
                    vis_all[i],
                )
            )
    return tuple(tuple(c) for c in captures), hs, ex


def _busy_capture(
    k,
    qrow,
    kind,
    tables,
    hs,
    ex,
    err,
    const_pos,
    const_rows,
    sc_c,
    n_near,
    blocker,
    nc_pos,
    nc_index,
    sc_n_row,
    vis_row,
) -> Capture:
    """Capture of one query whose blocker or candidates need a closer look."""
    b = blocker
    tied: tuple[int, ...] = ()
    s_exact = None
    if sc_c is not None and n_near >= 1:
        top = sc_c.max()
        if n_near > 1:
            cand = const_pos[sc_c >= top - 2 * err]
            scores = [ex.score(qrow, int(hs.starts[p])) for p in cand]
            s_exact = max(scores)
            at_max = [int(p) for p, v in zip(cand, scores, strict=True) if v == s_exact]
            b = at_max[-1] if kind is AttentionKind.RIGHTMOST else at_max[0]
            tied = tuple(at_max) if kind is AttentionKind.AVERAGE else ()
        elif kind is AttentionKind.AVERAGE:
            tied = (b,)
    if b < 0:
        above = tuple(int(m) for m in nc_pos[vis_row[nc_pos]])
        return Capture(None, above, (), True)
    # float window of the blocker's score: its float score is the constant top, or (after an
    # exact tie-break among near constants) somewhere in [top − 2E, top]
    s_hi = float(sc_c.max())
    s_lo = s_hi if s_exact is None else s_hi - 2 * err
    npos = len(nc_pos)
    m_best = sc_n_row.reshape(npos, -1).max(axis=1) if npos else sc_n_row
    inside = m_best > s_hi + 2 * err
    unsure = ~inside & (m_best >= s_lo - 2 * err)
    above = set(int(m) for m in nc_pos[inside])
    brow = int(hs.starts[b])
    for m in nc_pos[unsure].tolist():
        if s_exact is None:
            s_exact = ex.score(qrow, brow)
        start = int(hs.starts[m])
        m_exact = max(ex.score(qrow, r) for r in range(start, start + len(tables[m].values)))
        if m_exact > s_exact or (m_exact == s_exact and _wins_tie(kind, m, b)):
            above.add(m)
    return Capture(b, tuple(sorted(above)), tied, True)


@dataclass(frozen=True, eq=False)
class LayerCollapse:
    """Result of collapsing one layer: new tables and the captures that justify them."""

    layer: int  # 1-based layer index
    restriction: Restriction
    tables: tuple[Table, ...]
    captures: tuple[tuple[tuple[Capture, ...], ...], ...]  # [head][position][value]

    @property
    def dependency_sets(self) -> tuple[tuple[int, ...], ...]:
        return tuple(t.deps for t in self.tables)


def _choose(
    kind: AttentionKind,
    cands: list[tuple[int, int]],
    qrow: int,
    hs: HeadScores,
    ex: _Exact,
) -> list[int]:
    """Exact argmax among candidate (position, key row) pairs; returns attended key rows."""
    if len(cands) == 1:
        return [cands[0][1]]
    krows = np.array([r for _, r in cands])
    s, e = hs.flt.pairs(qrow, krows)
    near = (s + e) >= (s - e).max()
    idx = np.nonzero(near)[0].tolist()
    if len(idx) == 1:
        return [int(krows[idx[0]])]
    scored = [(ex.score(qrow, int(krows[t])), cands[t][0], int(krows[t])) for t in idx]
    best = max(sc for sc, _, _ in scored)
    at_max = sorted((p, r) for sc, p, r in scored if sc == best)
    if kind is AttentionKind.AVERAGE:
        # several candidate rows may belong to one position only if they are the same row
        return sorted({r for _, r in at_max})
    return [at_max[0][1]] if kind is AttentionKind.LEFTMOST else [at_max[-1][1]]


def collapse_layer(
    model: Model,
    layer_index: int,
    tables: Sequence[Table],
    rho: Restriction,
    *,
    max_deps: int = 16,
) -> LayerCollapse:
    """Collapse layer ``layer_index`` (1-based) given exact tables of the layer below."""
    tables = tuple(restrict_table(t, rho) for t in tables)
    layer = model.layers[layer_index - 1]
    elayer = exact_weights(model).layers[layer_index - 1]
    d = model.d
    n_tok = len(tables)
    base = len(rho.symbols)
    analyses = [
        analyze_head(model, h, eh, tables) for h, eh in zip(layer.heads, elayer.heads, strict=True)
    ]
    captures = tuple(a[0] for a in analyses)
    owner, _, vectors = stack_values(tables)
    starts = np.searchsorted(owner, np.arange(n_tok))
    ov_rows = [
        (exact_matrix(vectors, d) * eh.wov).entries() if vectors else [] for eh in elayer.heads
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

    after_rows: list[list[fmpq]] = []
    spans = []
    zero = [fmpq(0)] * d
    for i in range(n_tok):
        deps = new_deps[i]
        start = len(after_rows)
        for combo in product(range(base), repeat=len(deps)):
            sym = dict(zip(deps, combo, strict=True))
            vi = tables[i].value_of_row[_row(tables[i], sym)]
            qrow = int(starts[i]) + vi
            acc = list(tables[i].values[vi]) if layer.residual else list(zero)
            for h, head in enumerate(layer.heads):
                cap = captures[h][i][vi]
                if not cap.visible:
                    continue
                cands = [
                    (m, int(starts[m]) + tables[m].value_of_row[_row(tables[m], sym)])
                    for m in cap.above
                ]
                extra = (
                    cap.tied if cap.tied else ((cap.blocker,) if cap.blocker is not None else ())
                )
                cands += [(b, int(starts[b])) for b in extra]
                attended = _choose(head.kind, cands, qrow, analyses[h][1], analyses[h][2])
                inv = fmpq(1, len(attended))
                ov = ov_rows[h]
                for c in range(d):
                    acc[c] += sum((ov[r * d + c] for r in attended), fmpq(0)) * inv
            after_rows.append(acc)
        spans.append((start, len(after_rows)))

    out_rows = _ffn(model, layer_index, after_rows)
    new_tables = tuple(
        make_table(new_deps[i], base, [tuple(r) for r in out_rows[a:b]])
        for i, (a, b) in enumerate(spans)
    )
    return LayerCollapse(layer_index, rho, new_tables, captures)


def _row(table: Table, sym: dict[int, int]) -> int:
    r = 0
    for u in table.deps:
        r = r * table.base + sym[u]
    return r


def _ffn(model: Model, layer_index: int, rows: list[list[fmpq]]) -> list[list[fmpq]]:
    layer = model.layers[layer_index - 1]
    el = exact_weights(model).layers[layer_index - 1]
    if el.w1t is None or not rows:
        return rows
    d = model.d
    a = fmpq_mat(len(rows), d, [x for r in rows for x in r])
    ones = fmpq_mat(len(rows), 1, [1] * len(rows))
    pre = (a * el.w1t + ones * el.b1).entries()
    zero = fmpq(0)
    dff = el.w1t.ncols()
    hidden = fmpq_mat(len(rows), dff, [x if x > zero else zero for x in pre])
    ff = hidden * el.w2t + ones * el.b2
    out = a + ff if layer.residual else ff
    flat = out.entries()
    return [flat[k * d : (k + 1) * d] for k in range(len(rows))]


def readout_table(model: Model, table: Table) -> list[fmpq]:
    """Exact readout logit w·y + b for each value of the decision position's table."""
    ew = exact_weights(model)
    w = ew.readout.entries()
    return [
        sum((a * b for a, b in zip(v, w, strict=True)), fmpq(0)) + ew.bias for v in table.values
    ]


def collapse_all(
    model: Model, restrictions: Sequence[Restriction], *, max_deps: int = 16
) -> tuple[tuple[Table, ...], list[LayerCollapse]]:
    """Collapse every layer: layer ℓ under ``restrictions[ℓ]`` (index 0 = layer-0 tables)."""
    tables = initial_tables(model, restrictions[0])
    steps = []
    for ell in range(1, model.num_layers + 1):
        step = collapse_layer(model, ell, tables, restrictions[ell], max_deps=max_deps)
        steps.append(step)
        tables = step.tables
    final = tuple(restrict_table(t, restrictions[-1]) for t in tables)
    return final, steps
