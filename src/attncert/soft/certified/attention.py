"""One softmax head over boxes: score intervals, per-key weight bounds, the range of the
head's output over all strings (or completions), and the one-position-change bound.

Queries are *rows* — a position together with one of its allowed tokens (its box is then
conditioned on that token) — and keys are positions, each the union of its rows. A
query row's position decides its visible keys.

Notation for a head at query j with visible keys V_j: scores s_jw = β (q_j·k_w), weights
a_jw = softmax_w(s_j·), values ṽ_w = W_O W_V u_w, output o_j = Σ_w a_jw ṽ_w + W_O b_V + b_O
(b_O alone when no key is visible). Boxes are per position (over all inputs considered).

* **One key's weight** (guide, "Sound bounds for softmax attention"): shifting by
  m_j = max_w hi_jw, with L_jw ≤ e^{lo_jw − m_j} and U_jw ≥ e^{hi_jw − m_j},
  a_jw ≤ u_jw = U_jw / (U_jw + Σ_{v≠w} L_jv) and a_jw ≥ l_jw = L_jw / (L_jw + Σ_{v≠w} U_jv):
  the weight is largest when the key scores highest and every other key lowest.
  With scores in [s_min, s_max] this is e^Δ/(e^Δ + n − 1), Δ = s_max − s_min.
* **Range of o_j** (:func:`output_range`): the hull of the visible values, intersected
  with the weight-box linear program max Σ a_w h_w s.t. l ≤ a ≤ u, Σ a = 1, bounded by
  weak duality: for every t, Σ a_w h_w ≤ t + Σ_w u_w (h_w − t)⁺ − Σ_w l_w (t − h_w)⁺
  (t ranges over a few candidates per coordinate; any t is sound).
* **One changed position i** (:func:`change_bound`), j ≠ i: let z be the hybrid with the
  query and all keys but i from x′ and key i from x. Then
  o_j(x) − o_j(z) moves the other keys' values by ≤ max_w Δṽ_w and their scores by
  ≤ ε_j = |β|(Δq_j·max_w|k_w| + max|q_j|·max_w Δk_w), so it is at most
  max_w Δṽ_w + min(1, 2ε_j)·width_j (total variation of softmax under score moves ≤ ε:
  1 − e^{−2ε} ≤ 2ε); and o_j(z) − o_j(x′) = α(ṽ_i − m) − α′(ṽ′_i − m) with the same
  average m of the others, α, α′ ≤ α_max,j = max_i u_ji, which is at most
  α_max,j · max(VI_hi − M_lo, M_hi − VI_lo) (VI: hull of the changeable keys' values,
  M: of all visible values; the expression is multilinear, so its extremes are at
  vertices). For j = i the output may move anywhere in its range: width of o_j's box.
* **Rotary heads** (RoPE, :class:`~attncert.model.spec.Rotary`): q and k of a row are
  rotated by the angles of the row's position; the boxes are rotated pairwise with arb
  enclosures of cos and sin (:func:`rotate_box`: each rotated coordinate is linear in the
  pair, so interval arithmetic gives its exact range up to rounding), and a change bound
  δ on the pair (x_k, x_{k+h}) becomes |c|δ_k + |s|δ_{k+h}, at most √(δ_k² + δ_{k+h}²)
  since a rotation preserves the pair's norm (:func:`rotate_change`). Everything after
  (scores, weights, changes) reads the rotated boxes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncert.model.spec import Head, Mask
from attncert.soft.certified import rigorous as R

_CANDIDATES = 16  # dual candidates per coordinate and kind (rank and value quantiles)


@dataclass(frozen=True, eq=False)
class HeadBoxes:
    """Queries, keys and values of one head over all positions, as boxes."""

    q: tuple[np.ndarray, np.ndarray]  # (N, d_k)
    k: tuple[np.ndarray, np.ndarray]  # (N, d_k)
    v: tuple[np.ndarray, np.ndarray]  # (N, d): ṽ = W_O W_V u
    bias: tuple[np.ndarray, np.ndarray]  # (d,): W_O b_V + b_O
    b_o: np.ndarray  # (d,): output when no key is visible
    m_abs: np.ndarray  # (d, d): |W_O W_V| rounded up (for value changes)
    wq_abs: np.ndarray  # |W_Q|
    wk_abs: np.ndarray  # |W_K|
    beta: tuple[float, float]
    rotary: object = None  # the head's Rotary (q, k are then rotated per row position)


def rotate_box(rot, lo: np.ndarray, hi: np.ndarray, pos: np.ndarray):
    """Rows [lo, hi] (R, d_k) rotated by RoPE at their 0-based positions ``pos`` (module
    docstring), outward-rounded."""
    pos = np.asarray(pos, dtype=np.int64)
    c_lo, c_hi, s_lo, s_hi = R.rotation_table(rot, int(pos.max()) + 1 if len(pos) else 1)
    c = c_lo[pos], c_hi[pos]
    s = s_lo[pos], s_hi[pos]
    h = rot.dim // 2
    x1, x2 = (lo[:, :h], hi[:, :h]), (lo[:, h : rot.dim], hi[:, h : rot.dim])
    a = R.mul(*x2, *s)
    first = R.add(*R.mul(*x1, *c), -a[1], -a[0])
    second = R.add(*R.mul(*x2, *c), *R.mul(*x1, *s))
    return (
        np.concatenate([first[0], second[0], lo[:, rot.dim :]], axis=1),
        np.concatenate([first[1], second[1], hi[:, rot.dim :]], axis=1),
    )


def rotate_change(rot, delta: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """A bound on |Δ(R_t x)| from |Δx| ≤ delta (rows at positions ``pos``, module
    docstring)."""
    if rot is None:
        return delta
    pos = np.asarray(pos, dtype=np.int64)
    c_lo, c_hi, s_lo, s_hi = R.rotation_table(rot, int(pos.max()) + 1 if len(pos) else 1)
    c, s = R.abs_max(c_lo, c_hi)[pos], R.abs_max(s_lo, s_hi)[pos]
    h = rot.dim // 2
    d1, d2 = delta[:, :h], delta[:, h : rot.dim]
    norm = R.sqrt_bounds(*[R.up(R.up(d1 * d1) + R.up(d2 * d2))] * 2)[1]
    first = np.minimum(R.up(R.up(c * d1) + R.up(s * d2)), norm)
    second = np.minimum(R.up(R.up(c * d2) + R.up(s * d1)), norm)
    return np.concatenate([first, second, delta[:, rot.dim :]], axis=1)


def head_boxes(head: Head, u_lo: np.ndarray, u_hi: np.ndarray, beta: tuple[float, float], pos=None):
    """q, k, ṽ boxes of ``head`` for inputs u ∈ [u_lo, u_hi] (rows at token positions
    ``pos``, needed for a rotary head: q and k are rotated there)."""
    q = R.affine(u_lo, u_hi, head.w_q, head.bias("b_q"))
    k = R.affine(u_lo, u_hi, head.w_k, head.bias("b_k"))
    if head.rotary is not None:
        if pos is None:
            raise ValueError("a rotary head's boxes need the rows' positions")
        q, k = rotate_box(head.rotary, *q, pos), rotate_box(head.rotary, *k, pos)
    m, m_rad = R.matmul_interval(head.w_o, head.w_v)
    v = R.affine(u_lo, u_hi, m, None, m_rad)
    bv = head.bias("b_v")
    bias = R.affine(bv[None], bv[None], head.w_o, head.bias("b_o"))
    m_abs = R.up(np.abs(m) + m_rad)
    return HeadBoxes(
        q,
        k,
        v,
        (bias[0][0], bias[1][0]),
        head.bias("b_o"),
        m_abs,
        np.abs(head.w_q),
        np.abs(head.w_k),
        beta,
        head.rotary,
    )


@dataclass(frozen=True, eq=False)
class Rows:
    """Rows (position, allowed token): ``pos`` (R,) the position of each row, ``valid``
    (N, K) which tokens each position may carry (rows are position-major, K per position)."""

    valid: np.ndarray

    @property
    def k(self) -> int:
        return self.valid.shape[1]

    @property
    def pos(self) -> np.ndarray:
        return np.repeat(np.arange(self.valid.shape[0]), self.k)

    def hull(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per position, the box of its rows (R, ·) → (N, ·)."""
        n, kk = self.valid.shape
        v = self.valid[..., None]
        return (
            np.where(v, lo.reshape(n, kk, -1), np.inf).min(axis=1),
            np.where(v, hi.reshape(n, kk, -1), -np.inf).max(axis=1),
        )

    def per_position_max(self, x: np.ndarray) -> np.ndarray:
        n, kk = self.valid.shape
        return np.where(self.valid[..., None], x.reshape(n, kk, -1), -np.inf).max(axis=1)


def scores(hb: HeadBoxes, rows: Rows) -> tuple[np.ndarray, np.ndarray]:
    """Enclosures (R, N) of s_jw = β q_j·k_w for every query row and key position: the
    union over the key's allowed tokens (its own token only, for the query's own key)."""
    # β(q·k) = (βq)·k: scale the (small) query boxes, not the (large) score matrix
    bq = R.mul(*hb.q, np.float64(hb.beta[0]), np.float64(hb.beta[1]))
    lo, hi = R.dot_boxes(*bq, *hb.k)
    n, kk = rows.valid.shape
    ok = np.broadcast_to(rows.valid[None], (n * kk, n, kk)).copy()
    own = np.arange(n * kk)
    ok[own, rows.pos, :] = False
    ok[own, rows.pos, own % kk] = rows.valid.ravel()
    lo = np.where(ok, lo.reshape(n * kk, n, kk), np.inf).min(axis=2)
    hi = np.where(ok, hi.reshape(n * kk, n, kk), -np.inf).max(axis=2)
    return lo, hi


def weight_bounds(s_lo: np.ndarray, s_hi: np.ndarray, vis: np.ndarray):
    """(l, u): l_jw ≤ a_jw ≤ u_jw for every visible pair, zero where w is not visible."""
    hi_m = np.where(vis, s_hi, -np.inf)
    m = hi_m.max(axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    lo_sh = np.where(vis, R.down(s_lo - m), 0.0)
    hi_sh = np.where(vis, np.minimum(R.up(s_hi - m), 0.0), 0.0)
    lo_sh = np.minimum(lo_sh, 0.0)
    e_lo, _ = R.exp_le0_bounds(lo_sh, lo_sh)
    _, e_hi = R.exp_le0_bounds(hi_sh, hi_sh)
    e_lo, e_hi = np.where(vis, e_lo, 0.0), np.where(vis, e_hi, 0.0)
    s_low, s_high = R.sum_down(e_lo), R.sum_up(e_hi)
    others_lo = np.maximum(R.down(s_low[:, None] - e_lo), 0.0)  # ≤ Σ_{v≠w} L_jv
    others_hi = R.up(s_high[:, None] - e_hi)  # ≥ Σ_{v≠w} U_jv
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(e_hi > 0, R.up(e_hi / R.down(e_hi + others_lo)), 0.0)
        l_ = R.down(e_lo / R.up(e_lo + others_hi))
    u = np.where(vis, np.minimum(u, 1.0), 0.0)
    l_ = np.where(vis & (e_lo > 0), np.maximum(l_, 0.0), 0.0)
    return l_, u


def visible_reduce(x: np.ndarray, mask: Mask, op: str) -> np.ndarray:
    """For every query j, min or max (``op``) of rows x_w over the keys j sees; rows that
    see no key get +inf (min) / −inf (max). ``x`` is (N, d)."""
    fill = np.inf if op == "min" else -np.inf
    acc = np.minimum if op == "min" else np.maximum
    n = x.shape[0]
    if mask is Mask.NONE:
        red = x.min(axis=0) if op == "min" else x.max(axis=0)
        return np.broadcast_to(red, x.shape).copy()
    if mask in (Mask.FUTURE, Mask.FUTURE_STRICT):
        pre = acc.accumulate(x, axis=0)
        if mask is Mask.FUTURE:
            return pre
        out = np.full_like(x, fill)
        out[1:] = pre[:-1]
        return out
    suf = acc.accumulate(x[::-1], axis=0)[::-1]
    if mask is Mask.PAST:
        return suf
    out = np.full_like(x, fill)
    out[: n - 1] = suf[1:]
    return out


def _dual_bound(l_: np.ndarray, u: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Upper bounds (N, d) of max Σ_w a_jw h_w[c] over l ≤ a ≤ u, Σ a = 1, by weak duality
    at a few candidate t per coordinate (every t gives a sound bound)."""
    n, d = h.shape
    rows = u.shape[0]
    srt = np.sort(h, axis=0)
    ranks = np.unique(np.linspace(0, n - 1, _CANDIDATES).round().astype(int))
    vals = np.linspace(0.0, 1.0, _CANDIDATES)[:, None]
    cand = np.concatenate([srt[ranks], srt[0] + vals * (srt[-1] - srt[0])], axis=0)  # (T, d)
    t = cand.shape[0]
    # P[w, (c, t)] = (h_w[c] − t)⁺ rounded up; Q = (t − h_w[c])⁺ rounded down
    p = np.maximum(R.up(h[:, :, None] - cand.T[None]), 0.0).reshape(n, d * t)
    q = np.maximum(R.down(cand.T[None] - h[:, :, None]), 0.0).reshape(n, d * t)
    up_part = R.nonneg_matmul_up(u, p)
    low_part = np.maximum(R.down((l_ @ q) * (1.0 - R.gamma(n))), 0.0)
    total = R.up(R.up(cand.T.reshape(1, d * t) + up_part) - low_part)
    return total.reshape(rows, d, t).min(axis=2)


def average_range(l_, u, v_lo, v_hi, mask: Mask, lp: bool = True, rows=None):
    """Box of Σ_w a_jw v_w over the weight box l ≤ a ≤ u (Σ a = 1) and v_w ∈ [v_lo, v_hi]:
    hull over the visible keys ∩ the dual LP bound; ``rows`` restricts to some queries
    (then ``l_``, ``u`` hold only those rows)."""
    h_lo = visible_reduce(v_lo, mask, "min")
    h_hi = visible_reduce(v_hi, mask, "max")
    if rows is not None:
        h_lo, h_hi = h_lo[rows], h_hi[rows]
    if lp:
        h_lo, h_hi = _lp_refine(l_, u, v_lo, v_hi, h_lo, h_hi)
    return h_lo, h_hi


def _lp_refine(l_, u, v_lo, v_hi, h_lo, h_hi):
    """Intersect the hull with the dual LP bound on the query rows where the weights are
    constrained (max_w u_jw < 1 − 2⁻¹⁰; elsewhere the LP cannot beat the hull)."""
    rows = np.nonzero(u.max(axis=1) < 1.0 - 2.0**-10)[0]
    if len(rows) == 0:
        return h_lo, h_hi
    h_lo, h_hi = h_lo.copy(), h_hi.copy()
    h_hi[rows] = np.minimum(h_hi[rows], _dual_bound(l_[rows], u[rows], v_hi))
    h_lo[rows] = np.maximum(h_lo[rows], -_dual_bound(l_[rows], u[rows], -v_lo))
    return h_lo, h_hi


def output_range(hb: HeadBoxes, l_, u, mask: Mask, vis: np.ndarray, rows: Rows, lp=True):
    """Box (R, d) of the head output o_j over all inputs, per query row (module
    docstring); keys' values are the union over their allowed tokens."""
    v_lo, v_hi = rows.hull(*hb.v)
    pos = rows.pos
    h_lo = visible_reduce(v_lo, mask, "min")[pos]
    h_hi = visible_reduce(v_hi, mask, "max")[pos]
    if lp:
        h_lo, h_hi = _lp_refine(l_, u, v_lo, v_hi, h_lo, h_hi)
    none = ~vis.any(axis=1)[pos]
    lo, hi = R.add(np.where(none[:, None], 0.0, h_lo), np.where(none[:, None], 0.0, h_hi), *hb.bias)
    lo = np.where(none[:, None], hb.b_o, lo)
    hi = np.where(none[:, None], hb.b_o, hi)
    return lo, hi


def _one_key(u_ch, v_lo, v_hi, m_lo, m_hi, chunk: int = 1 << 21) -> np.ndarray:
    """max_i u_ji · max(v_hi,i − M_lo,j, M_hi,j − v_lo,i) per query j and coordinate: the
    one-key term key by key (a key that can take much weight may have a value near the
    others'); u_ch is zero for keys that cannot change or are not visible."""
    n, d = m_lo.shape
    keys = v_lo.shape[0]
    out = np.zeros((n, d))
    live = np.nonzero(u_ch.max(axis=1) > 0)[0]
    step = max(1, chunk // max(1, keys * d))
    for s in range(0, len(live), step):
        rows = live[s : s + step]
        spread = np.maximum(v_hi[None] - m_lo[rows][:, None], m_hi[rows][:, None] - v_lo[None])
        out[rows] = (u_ch[rows][:, :, None] * np.maximum(spread, 0.0)).max(axis=1)
    # two correctly rounded operations on non-negative results: exact ≤ fl·(1 + 2u)²
    return R.up(out * (1.0 + 8 * R.U) + R.ETA)


@dataclass(frozen=True, eq=False)
class HeadChange:
    """Change bounds of one head's output and what they were made of."""

    other: np.ndarray  # (R, d) |Δo_j| for j ≠ i, per query row
    self_: np.ndarray  # (N, d) |Δo_j| for j = i, per position
    alpha_max: np.ndarray  # (R,) α_max per query row
    one_key: np.ndarray  # (R, d) the one-key term
    small: np.ndarray  # (R, d) the others' drift term


def change_bound(
    hb: HeadBoxes,
    u_weights: np.ndarray,
    mask: Mask,
    vis: np.ndarray,
    out_box: tuple[np.ndarray, np.ndarray],
    changeable: np.ndarray,
    du_other: np.ndarray,
    rows: Rows,
) -> HeadChange:
    """One-position-change bound of the head output per query row (module docstring).
    ``changeable`` (N,) marks the positions that may change; ``du_other`` (R, d) bounds
    |Δu| of a row for a change at another position; ``self_`` is per position."""
    pos = rows.pos
    vis_r = vis[pos]
    u_ch = np.where(changeable[None, :] & vis_r, u_weights, 0.0)
    alpha = u_ch.max(axis=1) if len(pos) else np.zeros(0)
    v_lo, v_hi = rows.hull(*hb.v)
    m_lo = visible_reduce(v_lo, mask, "min")[pos]
    m_hi = visible_reduce(v_hi, mask, "max")[pos]
    one_key = _one_key(u_ch, v_lo, v_hi, m_lo, m_hi)
    width = np.where(np.isfinite(m_lo), R.up(m_hi - m_lo), 0.0)
    # the others' drift: value moves and score moves of size ≤ ε_j
    du_key = rows.per_position_max(du_other)  # a key position's rows: the worst
    dv = R.nonneg_matmul_up(du_key, hb.m_abs.T)  # (N, d) |Δṽ_w|
    dk = R.nonneg_matmul_up(du_key, hb.wk_abs.T)
    dq = R.nonneg_matmul_up(du_other, hb.wq_abs.T)  # per query row
    dk = rotate_change(hb.rotary, dk, np.arange(dk.shape[0]))  # keys at their positions
    dq = rotate_change(hb.rotary, dq, pos)
    k_abs = visible_reduce(R.abs_max(*rows.hull(*hb.k)), mask, "max")[pos]
    q_abs = R.abs_max(*hb.q)
    dk_max = visible_reduce(dk, mask, "max")[pos]
    dv_max = visible_reduce(dv, mask, "max")[pos]
    k_abs, dk_max, dv_max = (np.where(np.isfinite(a), a, 0.0) for a in (k_abs, dk_max, dv_max))
    beta = max(abs(hb.beta[0]), abs(hb.beta[1]))
    eps = R.sum_up(R.up(dq * k_abs)) + R.sum_up(R.up(q_abs * dk_max))
    eps = R.up(R.up(eps) * beta)
    tv = np.minimum(R.up(2.0 * eps), 1.0)
    small = R.up(dv_max + R.up(tv[:, None] * width))
    other = R.up(one_key + small)
    none = ~vis.any(axis=1)
    other = np.where(none[pos][:, None], 0.0, other)
    o_lo, o_hi = rows.hull(*out_box)  # the changed position's own output: anywhere in its range
    self_ = np.where(none[:, None], 0.0, R.up(np.where(none[:, None], 0.0, o_hi - o_lo)))
    R.finite(other, self_, what="attention change bound")
    return HeadChange(other, self_, alpha, one_key, small)
