"""Float rankings of key positions per tuple ((h, i), z) — the order (8) of the
supplement (positions ranked by the maximum attention value (7), ties broken as
the head breaks them). Untrusted: used only to propose restrictions."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from attncert.arith.filter import top_columns
from attncert.hard.collapse import row_index
from attncert.hard.tables import Table
from attncert.hard.threads import map_heads
from attncert.model.forward import layer_norm, position_transform
from attncert.model.spec import AttentionKind, Model

__implements__ = (
    "Hahn eq. (7)",
    "Hahn S1 Definition 7",
    "Hahn S1 eq. (7)",
    "Hahn S1 eq. (8)",
)

_ENTRIES = 1 << 17  # float scores per block of query rows (1 MiB: stays in cache; 8 MiB
# blocks ran 1.7× slower at n = 16384 on a loaded 2-core machine)
_PARALLEL_SCALE = 1  # tests raise it to force threads on small layers


class RankedKey(NamedTuple):
    """A non-constant key position m with the float score of each of its table rows (a
    named tuple: hundreds of thousands are built per ranking at large n)."""

    position: int
    best: float  # M(i, h, z, m)
    row_scores: tuple[float, ...]  # per table row (assignment) of m


class TupleRanking(NamedTuple):
    """The top of the ranking for one tuple ((h, i), z) that is not captured yet."""

    head: int
    position: int  # query token position i
    value: int  # value id z of y_i
    keys: tuple[RankedKey, ...]  # top non-constant positions, best first
    blocker: int | None  # best constant position
    blocker_score: float  # -inf if none
    cutoff: float  # best M among non-constant keys left out of ``keys`` (-inf if none)


def _before(kind: AttentionKind, m: int, other: int) -> bool:
    """Whether m outranks ``other`` at equal score."""
    if kind is AttentionKind.RIGHTMOST:
        return m > other
    return m < other


def beats(kind: AttentionKind, s: float, m: int, s_ref: float, ref: int) -> bool:
    """Whether (score s at m) wins against (s_ref at ref) — ties by the head's rule."""
    if s != s_ref:
        return s > s_ref
    return kind is AttentionKind.AVERAGE or _before(kind, m, ref)


_MEMO: OrderedDict[bytes, list[TupleRanking]] = OrderedDict()
_MEMO_SIZE = 4


def rank_tuples(
    model: Model, layer_index: int, tables: tuple[Table, ...], top: int = 8
) -> list[TupleRanking]:
    """Rankings for every tuple not already captured (in float) by a constant blocker.

    Memoized on the model, the layer, the window and the tables' contents (their
    dependency sets, row maps and float values): Stage 2's last ranking is the one Stage 3
    starts from, and the S1 statements of the trace re-rank the same tables."""
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{model.digest}|{layer_index}|{top}|".encode())
    h.update(repr([(t.deps, t.value_of_row) for t in tables]).encode())
    h.update(np.concatenate([t.floats.ravel() for t in tables]).tobytes())
    key = h.digest()
    got = _MEMO.get(key)
    if got is None:
        last = (model.digest, layer_index)
        prev = _LAST.get(last)
        heads = len(model.layers[layer_index - 1].heads)
        bound = None if prev is None else _bounds_from(tables, *prev, heads)
        got = _MEMO[key] = _rank(model, layer_index, tables, top, bound)
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
        _LAST.pop(last, None)
        _LAST[last] = (tables, {_open_key(tr, tables): _window(tr) for tr in got})
        while len(_LAST) > _MEMO_SIZE:
            _LAST.pop(next(iter(_LAST)))
    else:
        _MEMO.move_to_end(key)
    return list(got)


# the last ranking of a layer: its tables and, per open tuple (head, position, value
# row), the ranked window (positions, best scores), the cutoff and the blocker's score
Window = tuple[tuple[int, ...], tuple[float, ...], float, float]
_LAST: dict[tuple[str, int], tuple[tuple[Table, ...], dict[tuple[int, int, int], Window]]] = {}


def _open_key(tr: TupleRanking, tables: tuple[Table, ...]) -> tuple[int, int, int]:
    return (tr.head, tr.position, tables[tr.position].values[tr.value])


def _window(tr: TupleRanking) -> Window:
    return (
        tuple(k.position for k in tr.keys),
        tuple(k.best for k in tr.keys),
        tr.cutoff,
        tr.blocker_score,
    )


def _bounds_from(
    tables: tuple[Table, ...],
    old: tuple[Table, ...],
    windows: dict[tuple[int, int, int], Window],
    heads: int,
) -> np.ndarray | None:
    """Per head and query row, an upper bound on the float score of every key that is
    non-constant in ``tables`` (−inf: the tuple is certainly closed; it is not scored),
    from the layer's previous ranking on ``old`` tables — or None (rank every row) unless
    each new table keeps a subset of its old values with the same float rows.

    Under that refinement, exactly in floats (S1 Lemma 10's monotonicity): a query row is
    the same float vector; a constant key stays constant with the same float row, so the
    blocker's score can only rise (and a blocker at equal score is at least as far on the
    head's side); a non-constant key keeps a subset of its float rows, so its best score M
    can only fall. Hence a tuple closed before stays closed, and an open one's non-constant
    keys score at most: the first key of its old window that is still non-constant, or
    else the old cutoff (every key left out of the window), or the old blocker's score
    (every key that did not beat it). A row is scored in full unless its bound is below
    the new blocker (:func:`_rank`).

    ("Exactly" up to the last bit: a row's float product may round differently where the
    row sits elsewhere in the matrix, so a float tie with the blocker can come out either
    way, as it can between any two float passes. The ranking is a proposal — the collapse
    decides every comparison exactly and the kernel re-checks it — and the rankings along
    the pipeline's refinement chains equal the full ones in the tests.)"""
    if len(tables) != len(old):
        return None
    const = [t.is_constant for t in tables]
    ub: list[float] = []
    for j, (t, o) in enumerate(zip(tables, old, strict=True)):
        if t is not o:
            slot = {v: z for z, v in enumerate(o.values)}
            where = [slot.get(v, -1) for v in t.values]
            if -1 in where or not np.array_equal(t.floats, o.floats[where]):
                return None
        for h in range(heads):
            for v in t.values:
                w = windows.get((h, j, v))
                if w is None:
                    ub.append(-np.inf)
                    continue
                pos, best, cutoff, blocker = w
                b = next((s for m, s in zip(pos, best, strict=True) if not const[m]), cutoff)
                ub.append(max(b, cutoff, blocker))
    # ub is position-major (position, head, value): reorder to (head, row)
    out = np.empty((heads, sum(len(t.values) for t in tables)))
    r = i = 0
    for t in tables:
        nv = len(t.values)
        for h in range(heads):
            out[h, r : r + nv] = ub[i : i + nv]
            i += nv
        r += nv
    return out


def _rank(
    model: Model,
    layer_index: int,
    tables: tuple[Table, ...],
    top: int,
    bound: np.ndarray | None = None,
) -> list[TupleRanking]:
    """The rankings of :func:`rank_tuples`; ``bound`` (heads × rows), when given, bounds
    each query row's float score against every non-constant key (:func:`_bounds_from`):
    a row whose bound is below its blocker's score is closed and not scored in full."""
    layer = model.layers[layer_index - 1]
    n_tok = len(tables)
    owner = np.concatenate(
        [np.full(len(t.values), j, dtype=np.int64) for j, t in enumerate(tables)]
    )
    floats = np.concatenate([t.floats for t in tables], axis=0)
    u = layer_norm(layer.norm1, floats) if layer.pre_norm and layer.norm1 is not None else floats
    starts = np.searchsorted(owner, np.arange(n_tok))
    const = np.array([t.is_constant for t in tables])
    const_pos = np.nonzero(const)[0]
    nc_pos = np.nonzero(~const)[0]
    out: list[TupleRanking] = []
    if not len(nc_pos):
        return out
    vor = [t.value_of_row for t in tables]
    ident = [v == tuple(range(len(v))) for v in vor]
    n_vals = [len(v) for v in vor]
    NEG = -np.inf

    def one_head(h: int, head) -> list[TupleRanking]:
        out_h: list[TupleRanking] = []
        qf = u @ head.w_q.T + head.bias("b_q")
        kf = u @ head.w_k.T + head.bias("b_k")
        if head.positional:  # RoPE / ALiBi: each row at its own position (owner)
            qf, kf = position_transform(head, qf, kf, owner)
        nc_index = row_index(tables, nc_pos, starts)
        rmax = nc_index.shape[1]
        nc_rows = nc_index.ravel()
        const_rows = starts[const_pos]
        # one key block per value slot t: column m is the t-th value of position m
        # (repeated when it has fewer), so per-position maxima are elementwise maxima
        k_slots = [kf[nc_index[:, t]].T.copy() for t in range(rmax)]
        k_c = kf[const_rows].T.copy()
        del nc_rows
        cand = np.arange(len(owner)) if bound is None else np.nonzero(bound[h] > -np.inf)[0]
        chunk = max(8, _ENTRIES // max(1, len(nc_pos)))
        for c0 in range(0, len(cand), chunk):
            rows = cand[c0 : c0 + chunk]
            qpos = owner[rows]
            qr = qf[rows]
            vis = head.mask.rows(qpos, n_tok)  # None: every key visible
            if len(const_pos):
                cs = qr @ k_c
                if vis is not None:
                    cs = np.where(vis[:, const_pos], cs, -np.inf)
                if head.kind is AttentionKind.RIGHTMOST:
                    cb = len(const_pos) - 1 - np.argmax(cs[:, ::-1], axis=1)
                else:
                    cb = np.argmax(cs, axis=1)
                cbest = cs[np.arange(len(rows)), cb]
                if bound is not None:  # rows whose every key scores below the blocker
                    keep = ~(bound[h, rows] < cbest)
                    if not keep.all():
                        rows, qpos, qr = rows[keep], qpos[keep], qr[keep]
                        cb, cbest = cb[keep], cbest[keep]
                        vis = None if vis is None else vis[keep]
                        if not len(rows):
                            continue
            else:
                cb = np.zeros(len(rows), dtype=np.int64)
                cbest = np.full(len(rows), -np.inf)
            sc = [qr @ kt for kt in k_slots]  # rmax × (rows, n_nc)
            if vis is not None:
                sc = [np.where(vis[:, nc_pos], x, -np.inf) for x in sc]
            m_nc = sc[0] if rmax == 1 else np.maximum(sc[0], sc[1])
            for x in sc[2:]:
                np.maximum(m_nc, x, out=m_nc)
            # keys that beat the blocker, ties decided by the head's rule: first every key
            # scoring ≥ the blocker (masked keys are −inf and stay out), then the exact
            # ties that lose by position, in the open rows only
            blocked = np.isfinite(cbest)
            # (no constant key visible: every visible key beats)
            ge = np.where(m_nc >= cbest[:, None], m_nc, -np.inf) if blocked.any() else m_nc
            # every row is open when no key is masked and no row has a blocker
            everyone = vis is None and ge is m_nc and len(nc_pos) > 0
            open_mask = None if everyone else ge.max(axis=1) > -np.inf
            if open_mask is None or open_mask.all():
                open_rows, mo = np.arange(len(rows)), ge
            else:
                open_rows = np.nonzero(open_mask)[0]
                if not len(open_rows):
                    continue
                mo = ge[open_rows]
            tied_rows = np.nonzero(blocked[open_rows])[0]
            if head.kind is not AttentionKind.AVERAGE and len(tied_rows):
                # exact ties with the blocker lose when the key is on the wrong side of it
                cb_t = cbest[open_rows[tied_rows]]
                bpos = const_pos[cb[open_rows[tied_rows]]]
                sub = mo[tied_rows]
                lose = sub == cb_t[:, None]
                if lose.any():
                    if head.kind is AttentionKind.LEFTMOST:
                        lose &= nc_pos[None, :] > bpos[:, None]
                    else:
                        lose &= nc_pos[None, :] < bpos[:, None]
                    sub[lose] = -np.inf
                    if mo is ge and ge is m_nc:
                        mo = mo.copy()
                    mo[tied_rows] = sub
                    still = mo.max(axis=1) > -np.inf
                    open_rows, mo = open_rows[still], mo[still]
                    if not len(open_rows):
                        continue
            kk = min(top + 1, mo.shape[1])
            part = top_columns(mo, kk)
            r = np.arange(len(open_rows))[:, None]
            # order the window by score, ties by the head's rule (stable sorts: tie key
            # first, then score)
            tie = nc_pos[part] if head.kind is not AttentionKind.RIGHTMOST else -nc_pos[part]
            part = part[r, np.argsort(tie, axis=1, kind="stable")]
            part = part[r, np.argsort(-mo[r, part], axis=1, kind="stable")]
            vals = mo[r, part]  # (open, kk), -inf = not beating the blocker
            # the best score left out of the window (−inf: every beating key is ranked)
            cutoff = vals[:, top] if kk > top else np.full(len(open_rows), -np.inf)
            # every ranked key's per-assignment scores, gathered at once
            ranked_pos = nc_pos[part[:, :top]]
            qrows = rows[open_rows]
            row_sc = np.stack(
                [x[open_rows[:, None], part[:, :top]] for x in sc], axis=2
            )  # (open, ranked, rmax)
            # objects for the consumers (Stages 2–3), from plain lists
            # (flat lists: nested ones cost more than the objects built from them)
            w, kw = ranked_pos.shape[1], vals.shape[1]
            vals_l, pos_l = vals.ravel().tolist(), ranked_pos.ravel().tolist()
            sc_l = row_sc.ravel().tolist()
            q_l = qrows.tolist()
            own_l = owner[qrows].tolist()
            first_l = starts[owner[qrows]].tolist()
            cb_l = cbest[open_rows].tolist()
            blk_l = np.where(
                blocked[open_rows], const_pos[cb[open_rows]] if len(const_pos) else -1, -1
            ).tolist()
            cut_l = cutoff.tolist()
            for t in range(len(open_rows)):
                keys = []
                for j in range(w):
                    v = vals_l[t * kw + j]
                    if v == NEG:
                        break
                    m = pos_l[t * w + j]
                    b = (t * w + j) * rmax
                    row_scores = (
                        tuple(sc_l[b : b + n_vals[m]])
                        if ident[m]
                        else tuple(sc_l[b + x] for x in vor[m])
                    )
                    keys.append(RankedKey(m, v, row_scores))
                out_h.append(
                    TupleRanking(
                        h,
                        own_l[t],
                        q_l[t] - first_l[t],
                        tuple(keys),
                        blk_l[t] if blk_l[t] >= 0 else None,
                        cb_l[t],
                        cut_l[t],
                    )
                )
        return out_h

    # heads are independent: on a large layer they are ranked in threads, concatenated in
    # head order (the result is the same as one after the other)
    for part in map_heads(one_head, layer.heads, len(owner) * len(nc_pos) * _PARALLEL_SCALE):
        out.extend(part)
    return out


def _tie_key(kind: AttentionKind, m: int) -> int:
    return -m if kind is AttentionKind.RIGHTMOST else m
