"""Float rankings of key positions per tuple ((h, i), z) — the order (8) of the
supplement (positions ranked by the maximum attention value (7), ties broken as
the head breaks them). Untrusted: used only to propose restrictions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncert.hard.collapse import row_index
from attncert.hard.tables import Table
from attncert.model.forward import layer_norm
from attncert.model.spec import AttentionKind, Model

__implements__ = (
    "Hahn eq. (7)",
    "Hahn S1 Definition 7",
    "Hahn S1 eq. (7)",
    "Hahn S1 eq. (8)",
)

_CHUNK = 256


@dataclass(frozen=True)
class RankedKey:
    """A non-constant key position m with the float score of each of its table rows."""

    position: int
    best: float  # M(i, h, z, m)
    row_scores: tuple[float, ...]  # per table row (assignment) of m


@dataclass(frozen=True)
class TupleRanking:
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


def rank_tuples(
    model: Model, layer_index: int, tables: tuple[Table, ...], top: int = 8
) -> list[TupleRanking]:
    """Rankings for every tuple not already captured (in float) by a constant blocker."""
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
    for h, head in enumerate(layer.heads):
        qf = u @ head.w_q.T + head.bias("b_q")
        kf = u @ head.w_k.T + head.bias("b_k")
        nc_index = row_index(tables, nc_pos, starts)
        rmax = nc_index.shape[1]
        nc_rows = nc_index.ravel()
        const_rows = starts[const_pos]
        vis_all = head.mask.matrix(n_tok)
        masked = head.mask.value != "none"
        R = len(owner)
        for c0 in range(0, R, _CHUNK):
            rows = np.arange(c0, min(R, c0 + _CHUNK))
            qpos = owner[rows]
            sc_n = qf[rows] @ kf[nc_rows].T
            if masked:
                sc_n = np.where(vis_all[np.ix_(qpos, owner[nc_rows])], sc_n, -np.inf)
            m_nc = _group_max(sc_n, rmax)
            if len(const_pos):
                cs = qf[rows] @ kf[const_rows].T
                if masked:
                    cs = np.where(vis_all[np.ix_(qpos, const_pos)], cs, -np.inf)
                if head.kind is AttentionKind.RIGHTMOST:
                    cb = len(const_pos) - 1 - np.argmax(cs[:, ::-1], axis=1)
                else:
                    cb = np.argmax(cs, axis=1)
                cbest = cs[np.arange(len(rows)), cb]
            else:
                cb = np.zeros(len(rows), dtype=np.int64)
                cbest = np.full(len(rows), -np.inf)
            # keys that beat the blocker, ties decided by the head's rule
            bpos = np.where(np.isfinite(cbest), const_pos[cb] if len(const_pos) else -1, -1)
            wins = m_nc > cbest[:, None]
            tie = m_nc == cbest[:, None]
            if head.kind is AttentionKind.LEFTMOST:
                tie &= nc_pos[None, :] < bpos[:, None]
            elif head.kind is AttentionKind.RIGHTMOST:
                tie &= nc_pos[None, :] > bpos[:, None]
            beat = (wins | tie) & np.isfinite(m_nc)
            open_rows = np.nonzero(beat.any(axis=1))[0]
            if not len(open_rows):
                continue
            mo = np.where(beat[open_rows], m_nc[open_rows], -np.inf)
            kk = min(top + 1, mo.shape[1])
            part = np.argpartition(-mo, kk - 1, axis=1)[:, :kk]
            for t, k in enumerate(open_rows.tolist()):
                qrow = int(rows[k])
                i = int(owner[qrow])
                b = int(const_pos[cb[k]]) if np.isfinite(cbest[k]) else None
                bs = float(cbest[k])
                cand = [int(p) for p in part[t] if np.isfinite(mo[t, p])]
                cand.sort(key=lambda p, t=t: (-mo[t, p], _tie_key(head.kind, int(nc_pos[p]))))
                cutoff = -np.inf
                if len(cand) > top:
                    cutoff = float(mo[t, cand[top]])
                    cand = cand[:top]
                elif kk < mo.shape[1]:
                    rest = mo[t].copy()
                    rest[part[t]] = -np.inf
                    cutoff = float(rest.max())
                keys = []
                for p in cand:
                    m = int(nc_pos[p])
                    tm = tables[m]
                    vals = sc_n[k, p * rmax : p * rmax + len(tm.values)]
                    keys.append(
                        RankedKey(
                            m, float(mo[t, p]), tuple(float(vals[v]) for v in tm.value_of_row)
                        )
                    )
                out.append(TupleRanking(h, i, qrow - int(starts[i]), tuple(keys), b, bs, cutoff))
    return out


def _tie_key(kind: AttentionKind, m: int) -> int:
    return -m if kind is AttentionKind.RIGHTMOST else m


def _group_max(sc: np.ndarray, rmax: int) -> np.ndarray:
    """Max over consecutive groups of ``rmax`` columns (strided maxima; fast for small rmax)."""
    out = sc[:, 0::rmax].copy()
    for r in range(1, rmax):
        np.maximum(out, sc[:, r::rmax], out=out)
    return out
