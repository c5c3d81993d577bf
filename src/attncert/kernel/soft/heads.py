"""Softmax heads for the soft-certificate checker (trusted; see :mod:`attncert.kernel.soft.checker`):
score intervals per (query row, key position), one key's weight bounds, the output range
(hull ∩ weight-box LP by weak duality), the one-position-change bound, and layer 1's exact
fractional program (Dinkelbach, certified by F⁺(λ⁺) ≤ 0). Rows are (position, allowed
token), position-major.
"""

from __future__ import annotations

import numpy as np
from flint import arb

from attncert.kernel.core import bounds as B
from attncert.model.spec import Mask


def _reduce(x, mask: Mask, op: str):
    """Per query, min/max over the visible keys' rows of x (±inf when none)."""
    acc = np.minimum if op == "min" else np.maximum
    fill = np.inf if op == "min" else -np.inf
    if mask is Mask.NONE:
        return np.broadcast_to(acc.reduce(x, axis=0), x.shape).copy()
    rev = mask in (Mask.PAST, Mask.PAST_STRICT)
    run = acc.accumulate(x[::-1] if rev else x, axis=0)
    run = run[::-1] if rev else run
    if mask in (Mask.FUTURE, Mask.PAST):
        return run
    out = np.full_like(x, fill)
    if rev:
        out[:-1] = run[1:]
    else:
        out[1:] = run[:-1]
    return out


def _beta(head, n_tok: int):
    t = head.temperature
    val = arb(float(t.coef)) * arb(n_tok) ** arb(float(t.n_power))
    if t.log_power:
        val *= arb(n_tok).log() ** arb(float(t.log_power))
    return B.ball(val)


def _head(head, ulo, uhi, beta, pos=None):
    """q, k, ṽ boxes of the rows u ∈ [ulo, uhi]; a rotary head rotates q and k at the rows'
    token positions ``pos``."""
    m, m_rad = B.matprod(head.w_o, head.w_v)
    bv = head.bias("b_v")[None]
    bias = B.lin(bv, bv, head.w_o, head.bias("b_o"))
    q = B.lin(ulo, uhi, head.w_q, head.bias("b_q"))
    k = B.lin(ulo, uhi, head.w_k, head.bias("b_k"))
    if head.rotary is not None:
        if pos is None:
            raise ValueError("a rotary head needs the rows' positions")
        q, k = B.rotate(head.rotary, *q, pos), B.rotate(head.rotary, *k, pos)
    return {
        "q": q,
        "k": k,
        "rot": head.rotary,
        "v": B.lin(ulo, uhi, m, None, m_rad),
        "bias": (bias[0][0], bias[1][0]),
        "b_o": head.bias("b_o"),
        "mabs": B.up(np.abs(m) + m_rad),
        "wq": np.abs(head.w_q),
        "wk": np.abs(head.w_k),
        "beta": beta,
    }


def _weights(s_lo, s_hi, vis):
    m = np.where(vis, s_hi, -np.inf).max(axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    a = np.where(vis, np.minimum(B.dn(s_lo - m), 0.0), 0.0)
    b = np.where(vis, np.minimum(B.up(s_hi - m), 0.0), 0.0)
    e_lo = np.where(vis, B.exp_le0(a, a)[0], 0.0)
    e_hi = np.where(vis, B.exp_le0(b, b)[1], 0.0)
    rest_lo = np.maximum(B.dn(B.psum_dn(e_lo)[:, None] - e_lo), 0.0)
    rest_hi = B.up(B.psum_up(e_hi)[:, None] - e_hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(e_hi > 0, B.up(e_hi / B.dn(e_hi + rest_lo)), 0.0)
        low = B.dn(e_lo / B.up(e_lo + rest_hi))
    u = np.where(vis, np.minimum(u, 1.0), 0.0)
    low = np.where(vis & (e_lo > 0), np.maximum(low, 0.0), 0.0)
    return low, u


def _dual(low, u, h):
    """Upper bound of max Σ a_w h_w over low ≤ a ≤ u, Σ a = 1 (weak duality at 32 t)."""
    n, d = h.shape
    srt = np.sort(h, axis=0)
    ranks = np.unique(np.linspace(0, n - 1, 16).round().astype(int))
    ts = np.concatenate(
        [srt[ranks], srt[0] + np.linspace(0.0, 1.0, 16)[:, None] * (srt[-1] - srt[0])]
    )
    k = ts.shape[0]
    pos = np.maximum(B.up(h[:, :, None] - ts.T[None]), 0.0).reshape(n, d * k)
    neg = np.maximum(B.dn(ts.T[None] - h[:, :, None]), 0.0).reshape(n, d * k)
    part = B.pmat_up(u, pos)
    minus = np.maximum(B.dn((low @ neg) * (1.0 - B.g2(n))), 0.0)
    val = B.up(B.up(ts.T.reshape(1, d * k) + part) - minus)
    return val.reshape(u.shape[0], d, k).min(axis=2)


def _average(low, u, vlo, vhi, mask, lp, rows=None):
    lo, hi = _reduce(vlo, mask, "min"), _reduce(vhi, mask, "max")
    if rows is not None:
        lo, hi = lo[rows], hi[rows]
    if lp:
        sel = np.nonzero(u.max(axis=1) < 1.0 - 2.0**-10)[0]
        if len(sel):
            lo, hi = lo.copy(), hi.copy()
            hi[sel] = np.minimum(hi[sel], _dual(low[sel], u[sel], vhi))
            lo[sel] = np.maximum(lo[sel], -_dual(low[sel], u[sel], -vlo))
    return lo, hi


def _hull(valid, lo, hi):
    """Rows (N·K, ·) → per position (N, ·): the box of the position's allowed tokens."""
    n, kk = valid.shape
    v = valid[..., None]
    return (
        np.where(v, lo.reshape(n, kk, -1), np.inf).min(axis=1),
        np.where(v, hi.reshape(n, kk, -1), -np.inf).max(axis=1),
    )


def _pmax(valid, x):
    n, kk = valid.shape
    return np.where(valid[..., None], x.reshape(n, kk, -1), -np.inf).max(axis=1)


def _scores(hd, valid):
    """(N·K, N) score intervals: query rows × key positions, the union over the key's
    tokens (its own token only for the query's own position)."""
    bq = B.imul(*hd["q"], np.float64(hd["beta"][0]), np.float64(hd["beta"][1]))  # β(q·k) = (βq)·k
    lo, hi = B.dots(*bq, *hd["k"])
    n, kk = valid.shape
    pos = np.repeat(np.arange(n), kk)
    ok = np.broadcast_to(valid[None], (n * kk, n, kk)).copy()
    ok[np.arange(n * kk), pos, :] = False
    ok[np.arange(n * kk), pos, np.arange(n * kk) % kk] = valid.ravel()
    return (
        np.where(ok, lo.reshape(n * kk, n, kk), np.inf).min(axis=2),
        np.where(ok, hi.reshape(n * kk, n, kk), -np.inf).max(axis=2),
    )


def _head_change(hd, u, mask, vis, out, changeable, du, valid):
    """(other per row, self per position, α_max per row) change bounds of one head."""
    n, kk = valid.shape
    pos = np.repeat(np.arange(n), kk)
    u_ch = np.where(changeable[None, :] & vis[pos], u, 0.0)
    vlo, vhi = _hull(valid, *hd["v"])
    mlo, mhi = _reduce(vlo, mask, "min")[pos], _reduce(vhi, mask, "max")[pos]
    d = vlo.shape[1]
    one = np.zeros((n * kk, d))
    live = np.nonzero(u_ch.max(axis=1) > 0)[0]
    step = max(1, (1 << 21) // max(1, n * d))
    for s in range(0, len(live), step):
        r = live[s : s + step]
        spread = np.maximum(vhi[None] - mlo[r][:, None], mhi[r][:, None] - vlo[None])
        one[r] = (u_ch[r][:, :, None] * np.maximum(spread, 0.0)).max(axis=1)
    one = B.up(one * (1.0 + 2.0**-50) + 2.0**-1000)  # 2 roundings of non-negatives: (1 + 2u)²
    width = np.where(np.isfinite(mlo), B.up(mhi - mlo), 0.0)
    du_key = _pmax(valid, du)
    dv = _finite0(_reduce(B.pmat_up(du_key, hd["mabs"].T), mask, "max"))[pos]
    dk = _finite0(_reduce(B.pmat_up(du_key, hd["wk"].T), mask, "max"))[pos]
    dq = B.pmat_up(du, hd["wq"].T)
    if hd.get("rot") is not None:  # a key's change rotated at its position, a query's at its own
        dk = _finite0(
            _reduce(
                B.rotate_change(hd["rot"], B.pmat_up(du_key, hd["wk"].T), np.arange(n)), mask, "max"
            )
        )[pos]
        dq = B.rotate_change(hd["rot"], dq, pos)
    kabs = _finite0(_reduce(B.absmax(*_hull(valid, *hd["k"])), mask, "max"))[pos]
    beta = max(abs(hd["beta"][0]), abs(hd["beta"][1]))
    eps = B.up(B.up(B.psum_up(B.up(dq * kabs)) + B.psum_up(B.up(B.absmax(*hd["q"]) * dk))) * beta)
    tv = np.minimum(B.up(2.0 * eps), 1.0)
    other = B.up(one + B.up(dv + B.up(tv[:, None] * width)))
    none = ~vis.any(axis=1)
    other = np.where(none[pos][:, None], 0.0, other)
    o_lo, o_hi = _hull(valid, *out)
    self_ = np.where(none[:, None], 0.0, B.up(np.where(none[:, None], 0.0, o_hi - o_lo)))
    B.finite(other, self_)
    return other, self_, u_ch.max(axis=1)


def _finite0(x):
    return np.where(np.isfinite(x), x, 0.0)


# ----------------------------------------------------------------------------- layer 1 exactly


def _ratio_max(e_lo, e_hi, v_lo, v_hi, val):
    """Certified max of Σ e_w v_w / Σ e_w over one option per key (Dinkelbach in floats,
    then F⁺(λ⁺) = Σ_w max_τ e·(v − λ⁺) ≤ 0 checked outward; NaN if no margin works)."""
    e, v = 0.5 * (e_lo + e_hi), 0.5 * (v_lo + v_hi)
    w_i, c_i = np.arange(v.shape[0])[:, None], np.arange(v.shape[2])[None, :]
    pick = np.where(val[..., None], v, -np.inf).argmax(axis=1)
    lam = np.full(v.shape[2], -np.inf)
    for _ in range(60):
        es = e[w_i, pick]
        new = (es * v[w_i, pick, c_i]).sum(axis=0) / es.sum(axis=0)
        if np.all(new <= lam):
            break
        lam = np.maximum(lam, new)
        pick = np.where(val[..., None], e[..., None] * (v - lam), -np.inf).argmax(axis=1)

    def f_up(lam_):  # F⁺(λ): Σ_w max_τ of the largest e·(v − λ) over the enclosures
        gap = B.up(v_hi - lam_)
        term = np.where(gap >= 0, B.up(e_hi[..., None] * gap), B.up(e_lo[..., None] * gap))
        return B.sum_up(np.where(val[..., None], term, -np.inf).max(axis=1).T)

    # F⁺ is convex, decreasing with slope ≤ −S (S = Σ_w min_τ e_lo): Newton from λ*
    s_min = B.psum_dn(np.where(val, e_lo, np.inf).min(axis=1))
    f = f_up(lam)
    with np.errstate(divide="ignore", invalid="ignore"):
        base = B.up(lam + np.where(f > 0, B.up(f / s_min), 0.0))
    out = np.full(lam.shape, np.nan)
    for margin in (2.0**-44, 2.0**-36, 2.0**-28, 2.0**-20, 2.0**-10):
        cand = B.up(base + margin * np.maximum(1.0, np.abs(base)))
        ok = np.isfinite(cand) & (f_up(cand) <= 0)
        out = np.where(np.isnan(out) & ok, cand, out)
    lo, hi = np.where(f <= 0, out, lam), out  # bisection to the root of F⁺
    for _ in range(24):
        mid = 0.5 * lo + 0.5 * hi
        ok = f_up(mid) <= 0
        lo, hi = np.where(ok, lo, mid), np.where(ok, mid, hi)
    return hi


def _exact(q, k, v, valid, beta, mask, queries):
    """[min, max] (Q, K, C) of Σ a ṽ over all completions at each query position and
    token (layer 1); ±inf where not certified or the token is not allowed."""
    n, kk = valid.shape
    c = v[0].shape[-1]
    vis = mask.matrix(n)
    lo, hi = np.full((len(queries), kk, c), np.inf), np.full((len(queries), kk, c), -np.inf)
    dk = k[0].shape[-1]
    for row, j in enumerate(queries):
        keys = np.nonzero(vis[j])[0]
        if len(keys) == 0:
            continue
        s = B.dots(q[0][j], q[1][j], k[0][keys].reshape(-1, dk), k[1][keys].reshape(-1, dk))
        s = B.imul(*s, np.float64(beta[0]), np.float64(beta[1]))
        s_lo, s_hi = (x.reshape(kk, len(keys), kk) for x in s)
        own = np.nonzero(keys == j)[0]
        for qi in np.nonzero(valid[j])[0]:
            val = valid[keys].copy()
            if len(own):
                val[own[0]] = np.arange(kk) == qi
            m = np.where(val, s_hi[qi], -np.inf).max()
            a = np.where(val, np.minimum(B.dn(s_lo[qi] - m), 0.0), 0.0)
            b = np.where(val, np.minimum(B.up(s_hi[qi] - m), 0.0), 0.0)
            e_lo, e_hi = B.exp_le0(a, a)[0], B.exp_le0(b, b)[1]
            top = _ratio_max(e_lo, e_hi, v[0][keys], v[1][keys], val)
            bot = -_ratio_max(e_lo, e_hi, -v[1][keys], -v[0][keys], val)
            hi[row, qi] = np.where(np.isnan(top), np.inf, top)
            lo[row, qi] = np.where(np.isnan(bot), -np.inf, bot)
    return lo, hi
